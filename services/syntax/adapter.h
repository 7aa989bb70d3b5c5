/* adapter: the syntax service on the wire.
 *
 * The one entry point of the `syntax` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods and
 * its `syntax/didChange` notification.
 */
#ifndef ECPD_SYNTAX_ADAPTER_H
#define ECPD_SYNTAX_ADAPTER_H

#include "rpc.h"

struct syntax_service;

/* Registers the `syntax` namespace in *out and subscribes to the service's
 * token changes (unsubscribed by out->destroy, which releases the adapter's
 * context). bus is borrowed, for syntax/didChange. */
void syntax_adapter_init(ecp_adapter *out, struct syntax_service *svc, ecp_bus *bus);

#endif
