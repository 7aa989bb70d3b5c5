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

/* What another service adds to document/viewport (syntax tokens, language
 * server diagnostics): when a client's `include` names a part, the result
 * gains a member of that name, whose value write() writes for the visible
 * lines [first, last) of the document, with columns in enc. It runs on the
 * loop while the answer is written, so it answers from what it has and never
 * waits. The document service cannot know these services; the composition
 * root adds their parts here. */
typedef struct document_viewport_part {
    const char *name; /* the include name and the result's member: "tokens"; static */
    void (*write)(void *ctx, const char *document_id, const char *uri, size_t first, size_t last,
                  ecp_position_encoding enc, json_writer *w);
    void *ctx;        /* borrowed: it must outlive the adapter */
} document_viewport_part;

#define DOCUMENT_VIEWPORT_PARTS 8

/* Adds part (copied) to the adapter that document_adapter_init filled, before
 * or after it is registered. Returns false when DOCUMENT_VIEWPORT_PARTS are
 * there already or one has that name. */
bool document_adapter_add_viewport_part(const ecp_adapter *adapter, const document_viewport_part *part);

#endif
