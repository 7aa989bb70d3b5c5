/* Shared between the files of the server: the server and connection structs,
 * the router and the lifecycle adapter. Nothing outside server/ includes it. */
#ifndef ECPD_SERVER_INTERNAL_H
#define ECPD_SERVER_INTERNAL_H

#include <stdio.h>
#include <stdlib.h>

#include "call.h"
#include "compose.h"
#include "rpc_sig.h"
#include "framing.h"
#include "server.h"

/* ----- router --------------------------------------------------------------- */

typedef struct router {
    ecp_adapter *adapters;
    ecp_sig **signatures;      /* per adapter, its methods' compiled params */
    size_t count, cap;
    ecp_logger *log;           /* borrowed: where refused adapters are explained */
    /* method name -> its place (router.c): open addressing, at most half full,
     * written only at registration */
    struct route_slot *routes;
    size_t route_mask, route_count;
} router;

void server__router_init(router *self, ecp_logger *log);
/* Destroys every adapter's ctx. */
void server__router_free(router *self);
/* Copies adapter into the routing table after checking it as rpc.h describes
 * (namespace new, names inside it and unique, every method documented).
 * Returns 0, or ECP_EINVAL with err (may be NULL) saying why, also logged as
 * an error. The router owns adapter->ctx either way: a refused adapter's ctx
 * is released at once through its destroy. */
int server__router_register(void *self, const ecp_adapter *adapter, ecp_error *err);
/* Finds a method; *adapter_out gets its adapter. NULL when unknown. */
const ecp_method *server__router_find(const router *self, const char *method, const ecp_adapter **adapter_out);
/* Checks call's params against the method's signature: true when they fit,
 * else the call is answered with -32602 naming the field. */
bool server__router_admit(const router *self, const ecp_adapter *adapter, const ecp_method *method, ecp_call *call);

/* ----- connections ---------------------------------------------------------- */

struct pending;
struct batch;

typedef struct subscription_list {
    char **items;
    size_t count;
} subscription_list;

struct connection {
    server *server;
    uint64_t id;
    char label[48];
    connection_io io;
    void *io_ctx;
    framing_decoder decoder;
    ecp_position_encoding encoding;
    buf early;                 /* messages queued before the peer's framing is known */
    /* Messages behind one whose bytes are still being made off the loop
     * (a pending splice): they go out in order once it is ready. */
    struct held_message *held, *held_last;
    size_t held_bytes;
    ecp_shared *held_on;       /* the pending bytes the first one waits for */
    buf framed;                /* output framed but not handed to the transport yet */
    unsigned receiving;        /* inside connection_receive: output gathers in framed */
    struct pending *pending;   /* requests not answered yet (doubly linked) */
    struct pending *spare_pending; /* entries kept for reuse (singly linked) */
    size_t spare_pending_count;
    struct batch *batches;     /* batches with unanswered members */
    bool filtered;             /* subscribed explicitly: only `subscribed` is delivered */
    subscription_list subscribed;
    subscription_list excluded;
    /* Notifications no request caused (a terminal's output, a chat's
     * stream, watch events, diagnostics), framed, waiting for the transport
     * to have room: they go out behind the answers, never in front of them
     * (connection.c, "two lanes"). */
    buf unsolicited;
    size_t unsolicited_sent;   /* bytes of it already handed to the transport */
    size_t *unsolicited_ends;  /* where each message not handed over ends, in order */
    size_t unsolicited_first, unsolicited_count, unsolicited_cap;
    bool paused;               /* backed up: output above the pause bound holds the producers */
    uint64_t paused_since;     /* the loop's time when it became backed up */
    bool reading_stopped;      /* answers above the pause bound: its input waits until it reads them */
    size_t big_reply;          /* the largest message queued since the queue last ran low */
    ecp_job *parsing;          /* a big message being parsed off the loop */
    struct pending *holding;   /* a request the later messages wait for (ecp_call_hold_client) */
    bool closing;              /* io->close() was called; waiting for connection_close */
    bool shutting_down;        /* this client sent `shutdown`: its later requests are refused */
    bool watching_process;     /* its `processId` is watched */
    bool spoke;                /* it has completed a message */
    uint64_t last_input;       /* the loop's time when bytes last arrived (or it opened) */
    bool initialized;          /* its initialize was answered: the others were told it came */
    char *name;                /* clientInfo's name [+ " " version], bounded; NULL before initialize */
    size_t input_held;         /* its part of server.input_held */
    struct connection *prev, *next;
};

/* Frames and queues one message to the peer, enforcing the output bounds. */
void server__connection_send(connection *conn, const char *json, size_t len);
/* The same for a notification of the bus: one no request caused, of a
 * method that streams, waits in the lane behind the answers. */
void server__connection_notify(connection *conn, const char *method, const char *json, size_t len,
                               const jw_splices *splices);
/* Tells the services which position encodings the clients now use (after
 * a connection opened, negotiated one or closed). */
void server__client_encodings_changed(server *self);
/* The same for a message with splices (json_writer.h): json's bytes with
 * each splice inserted at its offset. */
void server__connection_send_spliced(connection *conn, const char *json, size_t len, const jw_splices *splices);
/* Asks the transport to close conn (bad framing, too slow a reader). */
void server__connection_drop(connection *conn, const char *why);
/* Closes conn once its queued output has been written (its own `exit`). */
void server__connection_finish(connection *conn);
bool server__connection_wants(const connection *conn, const char *method);

/* ----- the server ----------------------------------------------------------- */

/* A producer waiting for a method's slow clients to drain (rpc.h). */
typedef struct drain_waiter {
    char *method;
    ecp_drained_fn fn;
    void *ctx;
    struct drain_waiter *next;
} drain_waiter;

struct server {
    uv_loop_t *loop;
    ecp_logger log;
    size_t max_message;
    char *workspace;
    char *data_dir;
    char *config_path;
    router router;
    ecp_bus bus;
    ecp_pool *pool;            /* outlives the services, which close their jobs on it */
    ecp_job_set *parse_jobs;   /* big messages being parsed off the loop, for every connection */
    buf rendered[3];           /* a notification, once per position encoding */
    jw_splices spliced[3];     /* what each of those quotes without a copy */
    unsigned notifying;        /* inside bus_notify: rendered is in use */
    unsigned handling;         /* inside a request's handler: what it notifies, it caused */
    drain_waiter *drain_waiters;   /* waiting for their method to drain */
    drain_waiter *drain_firing;    /* drained, being called back now */
    uv_timer_t *drain_timer;       /* looks at the waiters in a later turn; NULL until needed */
    server_services services;
    connection *connections;
    uint64_t next_connection_id;
    bool shutting_down;        /* `shutdown` was answered */
    bool exit_requested;
    int exit_code;
    void (*exit_hook)(void *ctx, int code);
    void *exit_ctx;
    bool shared;               /* many clients: see server_options.shared */
    size_t max_connections;
    uint64_t stall_timeout_ms; /* see server_options.stall_timeout_ms */
    size_t max_input;          /* see server_options.max_input_bytes */
    size_t input_held;         /* held by every connection's framing decoder together */
    uint64_t input_timeout_ms; /* see server_options.input_timeout_ms; 0 on a server that is not shared */
    uv_timer_t *input_timer;   /* looks for connections past the input timeout; NULL if none applies */
    size_t connection_count;
    struct pid_watch *pid_watches; /* processes named by `processId` */
    size_t closing_handles;    /* watches whose handles libuv has not released yet */
    bool freed;                /* server_free ran: the last closing handle releases the memory */
};

/* Closes the connections that have sent nothing for the input timeout
 * while they owe the rest of a message or have never sent one. */
void server__connections_check_input(server *self);

/* Stops watching the processes a connection named (it is closing). */
void server__forget_client_processes(server *self, uint64_t client);
/* Stops every watch: the server is going. */
void server__forget_all_processes(server *self);
/* A watch's handle has closed; frees the server if it was waiting for that. */
void server__handle_released(server *self);

connection *server__connection_by_id(server *self, uint64_t id);

/* client/didConnect or client/didDisconnect about conn, to every other connection. */
void server__announce_client(server *self, const connection *conn, const char *method);

/* A connection stopped being backed up (its queue drained, or it is going):
 * the producers waiting for that are looked at in a later loop turn. */
void server__output_drained(server *self);

/* The adapters for the methods the server itself answers: initialize,
 * initialized, shutdown, exit, and the ecp and notifications namespaces.
 * Fails (err filled) only when the router refuses one of their tables. */
int server__lifecycle_register(server *self, ecp_error *err);

#endif
