/* internal: what the files of the store share and nobody else sees. */
#ifndef ECPD_STORE_INTERNAL_H
#define ECPD_STORE_INTERNAL_H

#include <stddef.h>

#include "interface.h"

/* The migrations: store__migration(i) takes user_version i to i + 1. */
size_t store__migration_count(void);
const char *store__migration(size_t index);

#endif
