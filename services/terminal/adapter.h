/* adapter: the terminal service on the wire.
 *
 * The one entry point of the `terminal` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods.
 * Nothing else includes this header; other services reach terminals through
 * interface.h, which knows nothing of JSON-RPC.
 */
#ifndef ECPD_TERMINAL_ADAPTER_H
#define ECPD_TERMINAL_ADAPTER_H

#include "rpc.h"

struct terminal_service;

/* Registers the service's JSON-RPC methods (the `terminal` namespace) in
 * *out. The adapter's context is owned by whoever holds *out and is released
 * by out->destroy; bus is borrowed for the notifications every terminal
 * sends to every client (terminals belong to no client). */
void terminal_adapter_init(ecp_adapter *out, struct terminal_service *svc, ecp_bus *bus);

#endif
