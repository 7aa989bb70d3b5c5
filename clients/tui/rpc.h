/* rpc: the TUI's connection to ecpd, and nothing but the wire.
 *
 * A connection is either a private server spawned on stdio or a running
 * server's Unix socket. Requests never block: rpc_call writes the message and
 * returns; the answer arrives later on the libuv loop and goes to the callback
 * given with the request, with the caller's context and tag (a tag lets the
 * caller tell whether what the request was for still exists). Notifications
 * go to one handler. When the server goes away (it exited, or the socket
 * closed) the closed handler is told once, and the pending callbacks are
 * dropped without being called.
 */
#ifndef ECP_TUI_RPC_H
#define ECP_TUI_RPC_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "json.h"

typedef void (*rpc_reply_fn)(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error);
typedef void (*rpc_notify_fn)(void *ctx, const char *method, const json_doc *doc, json_ref params);
typedef void (*rpc_closed_fn)(void *ctx, const char *why);

typedef struct rpc_client rpc_client;

typedef struct rpc_handlers {
    void *ctx;
    rpc_notify_fn on_notify;
    rpc_closed_fn on_closed;
} rpc_handlers;

/* Spawns `server --stdio --workspace DIR` with its stderr to server_log (or
 * /dev/null). Returns NULL with a reason in why (malloc'd) on failure. */
rpc_client *rpc_spawn(uv_loop_t *loop, const char *server, const char *workspace, const char *server_log,
                      rpc_handlers handlers, char **why);
/* Spawns ssh running `ecpd --stdio --workspace DIR` on the remote host
 * (ssh_remote.h; ssh must outlive the client). ssh's stderr is copied to
 * server_log and kept: when ssh ends, the closed handler hears why (a missing
 * remote ecpd, or the connection lost and ssh's last words). */
struct ecp_ssh;
rpc_client *rpc_spawn_ssh(uv_loop_t *loop, const struct ecp_ssh *ssh, const char *workspace,
                          const char *server_log, rpc_handlers handlers, char **why);
/* Why an ssh connection ended, as the closed handler heard it but with all
 * ssh said by now (malloc'd); NULL for a connection that is not ssh. */
char *rpc_ssh_failure(const rpc_client *self);

/* Connects to a server's socket, refusing one run by another user. */
rpc_client *rpc_connect(uv_loop_t *loop, const char *socket_path, rpc_handlers handlers, char **why);

/* Starts `server --socket SOCKET --workspace DIR` on its own, outliving this
 * program (other clients share it), its stderr to server_log (or /dev/null).
 * Returns false with a reason in why (malloc'd). */
bool rpc_start_socket_server(uv_loop_t *loop, const char *server, const char *socket_path, const char *workspace,
                             const char *server_log, char **why);

/* Sends a request. params is a format for rpc_format (NULL: no params).
 * Returns false when the connection is closed (nothing is sent). */
bool rpc_call(rpc_client *self, const char *method, rpc_reply_fn reply, void *ctx, uint64_t tag,
              const char *params_fmt, ...);
bool rpc_notify(rpc_client *self, const char *method, const char *params_fmt, ...);

bool rpc_is_open(const rpc_client *self);
/* Closes the connection (a spawned server sees end of file and exits) and
 * frees the client once libuv has let go of its handles. */
void rpc_close(rpc_client *self);

/* A printf for JSON: %J a C string written as a JSON string (NULL: null),
 * %N a string and its length (const char *, size_t) as a JSON string,
 * %d an int, %L an int64_t, %b a bool, %s raw JSON text, %% a percent sign. */
struct buf;
void rpc_vformat(struct buf *out, const char *fmt, va_list ap);
void rpc_format(struct buf *out, const char *fmt, ...);

#endif
