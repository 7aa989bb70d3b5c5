/* adapter: the document service on the wire.
 *
 * The one entry point of the `document` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods.
 * Nothing else includes this header; other services reach documents through
 * interface.h, which knows nothing of JSON-RPC.
 */
#ifndef ECPD_DOCUMENT_ADAPTER_H
#define ECPD_DOCUMENT_ADAPTER_H

#include "rpc.h"

struct document_service;

/* Fills `out` with the document methods (document/open, ...) over svc. The adapter subscribes
 * to svc to turn events into notifications on `bus`; out->ctx is allocated
 * here and released by out->destroy. svc and bus must outlive the adapter. */
void document_adapter_init(ecp_adapter *out, struct document_service *svc, ecp_bus *bus);

#endif
