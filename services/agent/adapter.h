/* adapter: the agent on the wire: the ECA protocol's chat methods on the
 * server's connections, and the Agent Client Protocol on stdio.
 *
 * The entry points of the `chat` namespace (the composition root,
 * server/compose.c, calls it) and of `ecpd --acp` (server/main.c).
 */
#ifndef ECPD_AGENT_ADAPTER_H
#define ECPD_AGENT_ADAPTER_H

#include <stdbool.h>

#include <uv.h>

#include "error.h"
#include "log.h"
#include "rpc.h"

struct agent_service;

/* Registers the `chat` methods in *out; the adapter's context is released by
 * out->destroy. bus is borrowed for chat/contentReceived and the others. */
void agent_adapter_init(ecp_adapter *out, struct agent_service *svc, ecp_bus *bus);

/* Registers the `mcp` methods (start, stop and list MCP servers) in *out,
 * with tool/serverUpdated and $/showMessage as their notifications. */
void agent_mcp_adapter_init(ecp_adapter *out, struct agent_service *svc, ecp_bus *bus);

/* acp: the agent as an Agent Client Protocol (v1) agent on stdio.
 *
 * The client spawned us: stdin and stdout carry newline-delimited JSON-RPC
 * 2.0, one message per line, and nothing else goes to stdout. A session is a
 * chat of the agent service (the session id is the chat id), so a session
 * outlives the process and session/load replays it.
 *
 * What it promises:
 * - initialize answers protocolVersion 1 whatever is asked and advertises
 *   only what is implemented: loadSession, embedded context in prompts, no
 *   authentication.
 * - session/prompt streams session/update (agent_message_chunk, tool_call,
 *   tool_call_update with the diff of writes and edits) and resolves with a
 *   stopReason after the last update of its turn.
 * - Writes, edits and shell commands ask session/request_permission first
 *   (allow_once, allow_always, reject_once, reject_always; the "always"
 *   answers hold for the session) unless the session's mode is "allow".
 * - The client's fs/read_text_file and fs/write_text_file serve the file
 *   tools when it advertises them (so an unsaved buffer is what the model
 *   reads), and its terminals run shell commands when it advertises
 *   `terminal` (the tool call embeds the terminal; the timeout kills it; every
 *   terminal is released); confinement to the workspace applies first either
 *   way.
 * - MCP servers given to session/new or session/load (stdio or http) are started
 *   before the answer, which comes once each runs or has failed.
 * - session/cancel resolves the prompt with stopReason "cancelled" at once; a
 *   permission request still waiting is dropped and its answer ignored.
 * - A line that is not JSON is answered -32700 with id null; an unknown
 *   method -32601; unknown notifications are ignored.
 *
 * Everything runs on the loop thread.
 */
typedef struct acp_frontend acp_frontend;

/* Starts reading stdin. on_eof runs once when the client closes it.
 * version (static) is the agentInfo's. */
acp_frontend *acp_frontend_open(uv_loop_t *loop, struct agent_service *agent, ecp_logger *log, const char *version,
                                void (*on_eof)(void *ctx), void *ctx, ecp_error *err);
/* Stops reading; what is queued for stdout is written first. */
void acp_frontend_close(acp_frontend *self);
/* True once both streams have closed (run the loop until then). */
bool acp_frontend_closed(const acp_frontend *self);
/* Releases it: after acp_frontend_closed, before the agent service goes. */
void acp_frontend_free(acp_frontend *self);


#endif
