/* adapter: the agent on the wire, as the ECA protocol's chat methods.
 *
 * The one entry point of the `chat` namespace: the composition root
 * (server/compose.c) calls it. Nothing else includes this header.
 */
#ifndef ECPD_AGENT_ADAPTER_H
#define ECPD_AGENT_ADAPTER_H

#include "rpc.h"

struct agent_service;

/* Registers the `chat` methods in *out; the adapter's context is released by
 * out->destroy. bus is borrowed for chat/contentReceived and the others. */
void agent_adapter_init(ecp_adapter *out, struct agent_service *svc, ecp_bus *bus);

#endif
