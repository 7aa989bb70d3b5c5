/* server: the ecpd server object and its connections.
 *
 * One server owns everything: the services, the router, the notification bus
 * and every connection. Transports (stdio, the Unix socket, the in-process test
 * client) only move bytes: they open a connection, feed it what the peer
 * sends, and write what it hands them. Framing detection, JSON-RPC, dispatch,
 * cancellation and flow control all happen here, identically for every
 * transport.
 *
 * Everything runs on the loop's thread.
 */
#ifndef ECPD_SERVER_H
#define ECPD_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "error.h"
#include "log.h"
#include "shared.h"

#define ECPD_VERSION "0.1.0"
#define ECPD_PROTOCOL_VERSION "1.0"

typedef struct server server;
typedef struct connection connection;

typedef struct server_options {
    const char *workspace;         /* may be NULL */
    const char *data_dir;          /* NULL: $XDG_DATA_HOME/ecpd, else ~/.local/share/ecpd */
    const char *config_path;       /* --config FILE (JSONC settings); may be NULL */
    bool trust_workspace;          /* --trust-workspace: the served workspace is trusted for this run */
    size_t max_message_bytes;      /* 0: the default, 256 MiB */
    FILE *log_out;                 /* NULL: stderr; not owned */
    ecp_log_level log_level;
    /* Many clients share the server (the Unix socket): `shutdown`, `exit` and
     * `processId` then concern only the client that sent them, and a client's
     * `workspaceRoot` does not move everyone else's workspace. */
    bool shared;
    unsigned max_connections;      /* 0: the server.maxConnections setting (default ECPD_DEFAULT_MAX_CONNECTIONS) */
    /* A client that has not read its output for this long while a producer
     * waits on it (a terminal held for it) is dropped, unless it is the only
     * client: one stuck or suspended GUI must not freeze every terminal of a
     * shared server, but the only client is waited for (it may be suspended,
     * and on stdio dropping it would end the server). 0: the default. */
    unsigned stall_timeout_ms;
    /* What every connection together may make the server hold of messages
     * it has not finished receiving (or not taken up yet): one that brings
     * the total past it while holding more than CONNECTION_INPUT_FLOOR is
     * answered with an error and closed. 0: twice the message limit, so one
     * client alone can always send the largest message there may be. */
    size_t max_input_bytes;
    /* On a shared server, a connection that sends nothing for this long
     * while it has not completed a message yet, or is in the middle of one,
     * is answered with an error and closed, so connections that never speak
     * cannot hold every slot. 0: the default. */
    unsigned input_timeout_ms;
} server_options;

#define ECPD_DEFAULT_MAX_CONNECTIONS 64u
#define ECPD_DEFAULT_STALL_TIMEOUT_MS 30000u
#define ECPD_DEFAULT_INPUT_TIMEOUT_MS 30000u

/* However full the input budget is, a connection holding no more than this
 * is never refused for it: a small request always gets through. */
#define CONNECTION_INPUT_FLOOR ((size_t)1 << 20)

#define ECPD_DEFAULT_MAX_MESSAGE ((size_t)256 << 20)

/* Creates the server and its services on loop. Returns NULL with err filled
 * when a service or the data directory cannot be set up. */
server *server_new(uv_loop_t *loop, const server_options *options, ecp_error *err);

/* Destroys the services and the server. Every connection must have been
 * closed first by its transport (asserted): a connection has one owner, and
 * it is not the server. As with any libuv handle's owner, run the loop
 * afterwards until it has nothing left: the server's own handles finish
 * closing there (and the server's memory goes with the last of them). */
void server_free(server *self);

uv_loop_t *server_loop(server *self);

/* Adds an adapter beside the services' own (for embedders and tests). The
 * server copies the struct and releases adapter->ctx through its destroy.
 * Returns 0, or ECP_EINVAL when the router refuses the adapter's table (see
 * rpc.h; the reason is logged): its ctx is then released at once. */
struct ecp_adapter;
int server_register_adapter(server *self, const struct ecp_adapter *adapter);

/* The notification bus, for such adapters to emit on. */
struct ecp_bus *server_bus(server *self);
ecp_logger *server_logger(server *self);

/* The process should end: `exit` arrived, stdin closed, the watched parent
 * died, or a signal. The hook (set by main) stops transports and the loop. */
void server_set_exit_hook(server *self, void (*hook)(void *ctx, int code), void *ctx);
void server_request_exit(server *self, int code);
bool server_exit_requested(const server *self, int *code);

/* ----- connections -----------------------------------------------------------
 *
 * A transport opens a connection per peer and owns it: the server keeps it on
 * its list (to deliver notifications) but never frees it. So a transport must
 * close its connections before the server is freed, and at teardown the
 * transports close first (see transport.h and main.c). */

/* What a transport provides. write() queues bytes for the peer and must not
 * block; queued() says how many bytes are still waiting; set_reading() pauses
 * or resumes reading from the peer; close() asks the transport to close the
 * connection, after which the transport calls connection_close() later, from
 * its own callback (never from inside close()). */
typedef struct connection_io {
    void (*write)(void *ctx, const char *data, size_t len);
    size_t (*queued)(void *ctx);
    void (*set_reading)(void *ctx, bool on);
    void (*close)(void *ctx);
    /* Optional: like close(), but only once what is queued has been written,
     * so a last answer reaches the peer. NULL: close() is used. */
    void (*finish)(void *ctx);
    /* Optional: like write(), for bytes that owner keeps alive, so that
     * what the peer does not take at once can be queued without a copy:
     * the transport holds a reference to owner (ecp_shared_ref) until it
     * has written them. NULL: write() copies them. */
    void (*write_shared)(void *ctx, ecp_shared *owner, const char *data, size_t len);
} connection_io;

/* Opens a connection for a transport, which owns it from then on: only the
 * transport ends it, with connection_close(), exactly once, and before
 * server_free(). io_ctx must stay valid until then. label names the peer in
 * logs ("stdio", "socket #3"). */
connection *server_connection_open(server *self, const connection_io *io, void *io_ctx, const char *label);

/* Bytes from the peer. */
void connection_receive(connection *conn, const char *data, size_t len);

/* Hands the output gathered while reading to the transport now. A transport
 * calls it before closing with flush, so that what was answered is written. */
void connection_flush(connection *conn);

/* The transport's queue shrank (a write completed): reading may resume. */
void connection_drained(connection *conn);

/* The peer is gone or the transport has closed: pending requests are
 * cancelled, the services drop what belonged to this client, and conn is
 * freed. The server never calls io again. Only the connection's transport
 * calls this, and not from inside one of its io functions. */
void connection_close(connection *conn);

uint64_t connection_id(const connection *conn);

/* How many connections are open, and how many may be (see max_connections):
 * a transport refuses a peer beyond the limit before opening it. */
size_t server_connection_count(const server *self);
size_t server_connection_limit(const server *self);

/* Output bounds: above the first, the server stops reading from the peer
 * until its queue drains; when what is queued exceeds the largest message
 * being written by the second (a peer that stopped reading while others'
 * notifications pile up), the connection is dropped. */
#define CONNECTION_PAUSE_BYTES ((size_t)8 << 20)
#define CONNECTION_DROP_EXTRA ((size_t)16 << 20)

/* Messages this large are written without being copied into a framing
 * buffer first. */
#define CONNECTION_UNFRAMED_BYTES ((size_t)1 << 20)

/* Messages this large are parsed on the thread pool, off the loop. */
#define CONNECTION_POOL_PARSE_BYTES ((size_t)1 << 20)

#endif
