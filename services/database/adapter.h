/* adapter: the database service on the wire.
 *
 * The one entry point of the `database` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods.
 * Nothing else includes this header.
 */
#ifndef ECPD_DATABASE_ADAPTER_H
#define ECPD_DATABASE_ADAPTER_H

#include "rpc.h"

struct database_service;

/* Registers the `database` namespace in *out. The service stays the
 * composition root's (no destroy): it must outlive the router. */
void database_adapter_init(ecp_adapter *out, struct database_service *svc);

#endif
