/* shared: bytes that several readers hold at once, freed by the last one.
 *
 * A big notification quotes a part of the message that caused it (the text
 * of a 100 MB setContent): instead of copying that part into the
 * notification and again into each connection's write queue, the writer
 * splices a reference to it (json_writer.h, jw_raw_shared) and the transport
 * writes it from where it lies, holding a reference until the kernel has
 * taken it.
 *
 * The count is not atomic: references are taken and dropped on the loop
 * thread only.
 */
#ifndef ECPD_SHARED_H
#define ECPD_SHARED_H

#include <stddef.h>

typedef struct ecp_shared ecp_shared;

/* Takes data (malloc'd, may be NULL when len is 0) and returns it with one
 * reference, the caller's. */
ecp_shared *ecp_shared_adopt(char *data, size_t len);
/* Another reference to the same bytes; returns self. */
ecp_shared *ecp_shared_ref(ecp_shared *self);
/* Drops one reference; the last frees the bytes. NULL is ignored. */
void ecp_shared_unref(ecp_shared *self);

const char *ecp_shared_data(const ecp_shared *self);
size_t ecp_shared_len(const ecp_shared *self);

#endif
