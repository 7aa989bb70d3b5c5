/* adapter: the file service on the wire.
 *
 * The one entry point of the `file` namespace: the composition root
 * (server/compose.c) calls it to register the service's JSON-RPC methods.
 * Nothing else includes this header; other services reach the file system
 * through interface.h, which knows nothing of JSON-RPC.
 */
#ifndef ECPD_FILE_ADAPTER_H
#define ECPD_FILE_ADAPTER_H

#include "rpc.h"

struct file_service;

/* Registers the service's JSON-RPC methods (the `file` namespace) in *out. The adapter's
 * context is owned by whoever holds *out and is released by out->destroy; bus
 * is borrowed for the notifications of watches. */
void file_adapter_init(ecp_adapter *out, struct file_service *svc, ecp_bus *bus);

#endif
