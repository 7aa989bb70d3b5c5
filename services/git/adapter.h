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

/* `document/viewport`'s gitChanges (a document_viewport_part's write, with
 * the service as ctx): the changes of the visible lines [first, last) of the
 * document's text against HEAD, as the service last computed them
 * (gitsvc_document_cached_changes), in git/diffLines' shape: an array of
 * {line (1-based), type: "added"|"modified"|"deleted"}. Never waits. */
void git_adapter_write_viewport_changes(void *svc, const char *document_id, const char *uri, size_t first,
                                        size_t last, ecp_position_encoding enc, json_writer *w);

#endif
