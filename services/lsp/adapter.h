/* The lsp service's JSON-RPC methods and notifications. */
#ifndef ECPD_LSP_ADAPTER_H
#define ECPD_LSP_ADAPTER_H

#include "rpc.h"

struct lsp_service;

/* svc and bus are borrowed and must outlive the adapter (the router releases
 * the adapter's ctx at teardown, before the services are freed). */
void lsp_adapter_init(ecp_adapter *out, struct lsp_service *svc, ecp_bus *bus);

#endif
