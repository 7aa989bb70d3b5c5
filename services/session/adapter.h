/* adapter: the session service's JSON-RPC methods.
 *
 * The service answers six namespaces (config, session, keybindings, theme,
 * secret, workspace), so its entry point fills SESSION_ADAPTER_COUNT adapters, which
 * the server registers in order. They share one context, owned and released
 * by the first adapter (the router releases adapters last first).
 */
#ifndef ECPD_SESSION_ADAPTER_H
#define ECPD_SESSION_ADAPTER_H

#include "rpc.h"

struct session_service;
struct document_service;

#define SESSION_ADAPTER_COUNT 6

/* svc, docs and bus are borrowed and must outlive the adapters. */
void session_adapter_init(ecp_adapter out[SESSION_ADAPTER_COUNT], struct session_service *svc,
                          struct document_service *docs, ecp_bus *bus);

#endif
