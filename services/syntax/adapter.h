/* adapter: the syntax service on the wire.
 *
 * The one entry point of the `syntax` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods and
 * its `syntax/didChange` notification, and adds its part of
 * `document/viewport`.
 */
#ifndef ECPD_SYNTAX_ADAPTER_H
#define ECPD_SYNTAX_ADAPTER_H

#include "rpc.h"

struct syntax_service;

/* Registers the `syntax` namespace in *out and subscribes to the service's
 * token changes (unsubscribed by out->destroy, which releases the adapter's
 * context). bus is borrowed, for syntax/didChange. */
void syntax_adapter_init(ecp_adapter *out, struct syntax_service *svc, ecp_bus *bus);

/* `document/viewport`'s tokens (a document_viewport_part's write, with the
 * service as ctx): one array of Token per visible line [first, last), from
 * the document's latest tree, never waiting for a parse; lines without
 * tokens (plain text, a document the service does not follow) are []. */
void syntax_adapter_write_viewport_tokens(void *svc, const char *document_id, const char *uri, size_t first,
                                          size_t last, ecp_position_encoding enc, json_writer *w);

#endif
