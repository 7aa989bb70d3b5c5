/* adapter: the git service on the wire.
 *
 * The one entry point of the `git` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods and
 * its `git/didChange` notification. Nothing else includes this header; other
 * services reach repositories through interface.h, which knows nothing of
 * JSON-RPC.
 */
#ifndef ECPD_GIT_ADAPTER_H
#define ECPD_GIT_ADAPTER_H

#include "rpc.h"

struct gitsvc;

/* Registers the `git` namespace in *out and subscribes to the service's
 * changes (unsubscribed by out->destroy, which releases the adapter's
 * context). bus is borrowed, for git/didChange. */
void git_adapter_init(ecp_adapter *out, struct gitsvc *svc, ecp_bus *bus);

#endif
