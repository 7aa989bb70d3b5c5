/* A connection turns a peer's bytes into calls and the calls' answers back
 * into bytes. Each has its own framing, its own pending requests and its own
 * subscriptions; nothing one peer does can stall another, because every
 * handler either answers at once or defers to work off the loop, and a peer
 * that does not read its output is first paused and then dropped. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "jsonrpc.h"

/* One unanswered request. The call's link points back here. */
typedef struct pending {
    ecp_call *call;
    connection *conn;
    struct batch *batch;   /* NULL unless the request came in a batch */
    struct pending *prev, *next;
} pending;

/* A batch answers with one array once all its requests are answered. */
typedef struct batch {
    connection *conn;
    buf responses;          /* "[" + the responses so far, comma-separated */
    size_t count;           /* responses written */
    size_t outstanding;     /* requests not answered yet */
    bool dispatching;       /* still handing out members: do not complete yet */
    struct batch *prev, *next;
} batch;

/* ----- output --------------------------------------------------------------- */

/* While a connection handles what it read, what it sends (answers, and
 * notifications to it) gathers in conn->framed and goes to the transport in
 * one write when the reading is done: a pipelined burst costs one write per
 * read, not one per message. Output produced at any other time (a deferred
 * answer, another client's edit) is written at once. */
#define CONNECTION_GATHER_BYTES ((size_t)256 << 10)

static void flush_framed(connection *conn)
{
    if (!conn->framed.len)
        return;
    if (!conn->closing)
        conn->io.write(conn->io_ctx, conn->framed.data, conn->framed.len);
    buf_clear(&conn->framed);
    if (conn->framed.cap > ((size_t)1 << 20))
        buf_free(&conn->framed); /* do not keep a huge answer's buffer around */
}

static size_t unsolicited_waiting(const connection *conn) { return conn->unsolicited.len - conn->unsolicited_sent; }

static size_t queued_bytes(const connection *conn)
{
    return conn->io.queued(conn->io_ctx) + conn->framed.len + conn->held_bytes + unsolicited_waiting(conn);
}

/* ----- two lanes -------------------------------------------------------------
 *
 * An answer (with the notifications its request caused, which precede it)
 * never waits behind notifications no request caused: those wait in
 * conn->unsolicited and are handed to the transport, whole messages at a
 * time, only while what the transport has not written yet is under
 * FLOW_HIGH_BYTES, and again once it has drained to FLOW_LOW_BYTES. An
 * answer is written at once, so it waits behind at most that much. Each
 * lane keeps its own order. */
#define FLOW_HIGH_BYTES ((size_t)256 << 10)
#define FLOW_LOW_BYTES ((size_t)64 << 10)

/* The notifications that stream on their own, whose order against answers
 * nothing depends on. Any other notification keeps its place among the
 * answers. */
static bool streams_on_its_own(const char *method)
{
    static const char *const streaming[] = {
        "terminal/output", "terminal/title", "terminal/didChangeScreen", "terminal/exit",
        "chat/contentReceived", "chat/statusChanged", "file/didChange", "file/didCreate", "file/didDelete",
        "lsp/didPublishDiagnostics", "lsp/progress",
    };
    for (size_t i = 0; i < sizeof streaming / sizeof *streaming; i++)
        if (strcmp(method, streaming[i]) == 0)
            return true;
    return false;
}

static void update_backed_up(connection *conn)
{
    if (conn->closing)
        return;
    size_t queued = queued_bytes(conn);
    if (!conn->paused && queued > CONNECTION_PAUSE_BYTES) {
        conn->paused = true;
        conn->paused_since = uv_now(conn->server->loop);
    } else if (conn->paused && queued <= CONNECTION_PAUSE_BYTES / 2) {
        conn->paused = false;
        server__output_drained(conn->server); /* producers held up by it may go on */
    }
}

static void unsolicited_reset(connection *conn)
{
    buf_clear(&conn->unsolicited);
    if (conn->unsolicited.cap > ((size_t)1 << 20))
        buf_free(&conn->unsolicited);
    conn->unsolicited_sent = conn->unsolicited_first = conn->unsolicited_count = 0;
}

/* Hands waiting unsolicited messages to the transport: all of them with
 * everything, else as many as keep it under FLOW_HIGH_BYTES (at least one
 * when it is under). Never part of a message: an answer written between
 * two parts would cut it in two. */
static void pump_unsolicited(connection *conn, bool everything)
{
    while (!conn->closing && conn->unsolicited_first < conn->unsolicited_count) {
        size_t in_flight = conn->io.queued(conn->io_ctx);
        if (!everything && in_flight >= FLOW_HIGH_BYTES)
            break; /* write_cb brings connection_drained, which comes back */
        size_t room = everything ? SIZE_MAX : FLOW_HIGH_BYTES - in_flight;
        size_t i = conn->unsolicited_first, from = conn->unsolicited_sent;
        size_t end = conn->unsolicited_ends[i++];
        while (i < conn->unsolicited_count && conn->unsolicited_ends[i] - from <= room)
            end = conn->unsolicited_ends[i++];
        conn->unsolicited_first = i;
        conn->unsolicited_sent = end;
        conn->io.write(conn->io_ctx, conn->unsolicited.data + from, end - from);
    }
    if (conn->unsolicited_first == conn->unsolicited_count) {
        unsolicited_reset(conn);
    } else if (conn->unsolicited_sent > ((size_t)1 << 20) && conn->unsolicited_sent > conn->unsolicited.len / 2) {
        /* what went out is let go of, the offsets following the bytes */
        size_t gone = conn->unsolicited_sent, left = conn->unsolicited_count - conn->unsolicited_first;
        memmove(conn->unsolicited.data, conn->unsolicited.data + gone, conn->unsolicited.len - gone);
        conn->unsolicited.len -= gone;
        for (size_t k = 0; k < left; k++)
            conn->unsolicited_ends[k] = conn->unsolicited_ends[conn->unsolicited_first + k] - gone;
        conn->unsolicited_first = 0;
        conn->unsolicited_count = left;
        conn->unsolicited_sent = 0;
    }
    update_backed_up(conn);
}

void connection_flush(connection *conn)
{
    flush_framed(conn);
    pump_unsolicited(conn, true); /* the transport is closing: everything, answers first */
}

/* A message waiting, with the others behind it, for bytes of one of its
 * splices that are still being made. */
typedef struct held_message {
    struct held_message *next;
    buf json;
    jw_splices splices; /* references of its own */
} held_message;

/* A piece of a message to the transport: a splice's bytes are written from
 * where they lie when the transport can hold a reference to them, else
 * copied like the rest. */
static void write_piece(void *ctx, const char *data, size_t len, ecp_shared *owner)
{
    connection *conn = ctx;
    if (owner && conn->io.write_shared)
        conn->io.write_shared(conn->io_ctx, owner, data, len);
    else
        conn->io.write(conn->io_ctx, data, len);
}

static void send_now(connection *conn, const char *json, size_t len, const jw_splices *splices);

/* A peer may be slow to read one big answer; beyond that it gets a fixed
 * allowance, whatever piles up for it (others' notifications). A shared
 * server drops a peer past it, as the last resort. The only client of a
 * server that is not shared is waited for however much piles up: dropping
 * it would end the server; the producers that can wait pause for it. */
static bool over_allowance(connection *conn, size_t total)
{
    size_t queued = queued_bytes(conn);
    if (queued == 0)
        conn->big_reply = 0; /* everything went out, the big answer too */
    if (total > conn->big_reply)
        conn->big_reply = total;
    if (queued + total <= conn->big_reply + CONNECTION_DROP_EXTRA || !conn->server->shared)
        return false;
    server__connection_drop(conn, "client is not reading its output");
    return true;
}

static void held_free(held_message *m)
{
    buf_free(&m->json);
    jw_splices_free(&m->splices);
    free(m);
}

static void release_held(void *ctx);

/* Sends the held messages whose bytes are all there, in order, and waits
 * for the first one that still misses some. */
static void send_held(connection *conn)
{
    while (conn->held && !conn->closing) {
        held_message *m = conn->held;
        ecp_shared *waiting = NULL;
        if (!jw_splices_ready(&m->splices, &waiting)) {
            conn->held_on = ecp_shared_ref(waiting);
            ecp_shared_when_ready(waiting, release_held, conn);
            return;
        }
        conn->held = m->next;
        if (!conn->held)
            conn->held_last = NULL;
        conn->held_bytes -= m->json.len;
        send_now(conn, m->json.data, m->json.len, &m->splices);
        held_free(m);
    }
}

static void release_held(void *ctx)
{
    connection *conn = ctx;
    ecp_shared_unref(conn->held_on);
    conn->held_on = NULL;
    send_held(conn);
}

static void drop_held(connection *conn)
{
    if (conn->held_on) {
        ecp_shared_forget(conn->held_on, release_held, conn);
        ecp_shared_unref(conn->held_on);
        conn->held_on = NULL;
    }
    while (conn->held) {
        held_message *m = conn->held;
        conn->held = m->next;
        held_free(m);
    }
    conn->held_last = NULL;
    conn->held_bytes = 0;
}

void server__connection_send_spliced(connection *conn, const char *json, size_t len, const jw_splices *splices)
{
    if (conn->closing)
        return;
    if (!conn->held && jw_splices_ready(splices, NULL)) {
        send_now(conn, json, len, splices);
        return;
    }
    /* behind bytes still being made: it keeps its place until they are */
    held_message *m = xcalloc(1, sizeof *m);
    buf_append(&m->json, json, len);
    for (size_t i = 0; splices && i < splices->count; i++) {
        const jw_splice *s = &splices->items[i];
        jw_splices_add(&m->splices, s->at, s->data, s->len, s->owner);
    }
    if (conn->held_last)
        conn->held_last->next = m;
    else
        conn->held = m;
    conn->held_last = m;
    conn->held_bytes += len;
    if (conn->held_bytes > CONNECTION_DROP_EXTRA) {
        server__connection_drop(conn, "too much output waiting behind a message still being made");
        return;
    }
    if (!conn->held_on)
        send_held(conn);
}

static void send_now(connection *conn, const char *json, size_t len, const jw_splices *splices)
{
    if (conn->closing)
        return;
    size_t total = jw_spliced_len(len, splices);
    if (conn->decoder.mode == FRAMING_UNKNOWN) {
        /* The peer has not spoken yet, so its framing is unknown: hold what we
         * would send (notifications) until it does. */
        if (conn->early.len > CONNECTION_DROP_EXTRA) {
            server__connection_drop(conn, "too much output queued before the client sent anything");
            return;
        }
        jw_splices_append_to(&conn->early, json, len, splices);
        buf_push(&conn->early, '\n'); /* the writer never emits a raw newline inside a message */
        return;
    }
    if (over_allowance(conn, total))
        return;
    if (total > CONNECTION_UNFRAMED_BYTES || (splices && splices->count)) {
        /* A big message goes out as it is, its framing beside it: copying it
         * into the framing buffer first would cost the loop a pass over it. */
        flush_framed(conn); /* what was gathered goes first */
        char head[64];
        int n = 0;
        if (conn->decoder.mode == FRAMING_CONTENT_LENGTH)
            n = snprintf(head, sizeof head, "Content-Length: %zu\r\n\r\n", total);
        if (n > 0)
            conn->io.write(conn->io_ctx, head, (size_t)n);
        jw_splices_walk(json, len, splices, write_piece, conn);
        if (conn->decoder.mode != FRAMING_CONTENT_LENGTH)
            conn->io.write(conn->io_ctx, "\n", 1);
    } else {
        framing_encode(conn->decoder.mode, &conn->framed, json, len);
        if (!conn->receiving || conn->framed.len >= CONNECTION_GATHER_BYTES)
            flush_framed(conn);
    }
    if (!conn->reading_stopped && conn->io.queued(conn->io_ctx) + conn->framed.len > CONNECTION_PAUSE_BYTES) {
        /* the transport must hold what it waits on, or its drain never comes */
        flush_framed(conn);
        if (!conn->closing && conn->io.queued(conn->io_ctx) > CONNECTION_PAUSE_BYTES) {
            conn->reading_stopped = true;
            conn->io.set_reading(conn->io_ctx, false);
        }
    }
    update_backed_up(conn);
}

/* Queues a notification no request caused in the lane behind the answers. */
static void send_unsolicited(connection *conn, const char *json, size_t len, const jw_splices *splices)
{
    size_t total = jw_spliced_len(len, splices);
    if (over_allowance(conn, total))
        return;
    buf whole = BUF_INIT; /* framing wants the message in one piece */
    if (splices && splices->count) {
        jw_splices_append_to(&whole, json, len, splices);
        json = whole.data, len = whole.len;
    }
    framing_encode(conn->decoder.mode, &conn->unsolicited, json, len);
    buf_free(&whole);
    if (conn->unsolicited_count == conn->unsolicited_cap) {
        conn->unsolicited_cap = conn->unsolicited_cap ? conn->unsolicited_cap * 2 : 64;
        conn->unsolicited_ends =
            xrealloc(conn->unsolicited_ends, conn->unsolicited_cap * sizeof *conn->unsolicited_ends);
    }
    conn->unsolicited_ends[conn->unsolicited_count++] = conn->unsolicited.len;
    pump_unsolicited(conn, false);
}

void server__connection_notify(connection *conn, const char *method, const char *json, size_t len,
                               const jw_splices *splices)
{
    if (conn->closing)
        return;
    if (!streams_on_its_own(method) || conn->decoder.mode == FRAMING_UNKNOWN) {
        server__connection_send_spliced(conn, json, len, splices);
        return;
    }
    if (conn->server->handling) {
        /* A request caused it: it precedes that request's answer, and what
         * of its kind came before precedes it. */
        pump_unsolicited(conn, true);
        server__connection_send_spliced(conn, json, len, splices);
        return;
    }
    send_unsolicited(conn, json, len, splices);
}

void server__connection_send(connection *conn, const char *json, size_t len)
{
    server__connection_send_spliced(conn, json, len, NULL);
}

static void flush_early(connection *conn)
{
    if (!conn->early.len)
        return;
    buf early = conn->early;
    buf_init(&conn->early);
    for (size_t at = 0; at < early.len;) {
        char *nl = memchr(early.data + at, '\n', early.len - at);
        size_t n = (size_t)(nl - (early.data + at));
        server__connection_send(conn, early.data + at, n);
        at += n + 1;
    }
    buf_free(&early);
}

void connection_drained(connection *conn)
{
    if (conn->io.queued(conn->io_ctx) <= CONNECTION_PAUSE_BYTES / 2)
        conn->big_reply = 0; /* the big answer, if any, is out */
    if (conn->io.queued(conn->io_ctx) <= FLOW_LOW_BYTES)
        pump_unsolicited(conn, false);
    if (conn->reading_stopped && !conn->closing && conn->io.queued(conn->io_ctx) <= CONNECTION_PAUSE_BYTES / 2) {
        conn->reading_stopped = false;
        conn->io.set_reading(conn->io_ctx, true);
        connection_receive(conn, NULL, 0); /* messages that arrived before the pause */
    }
    update_backed_up(conn);
}

void server__connection_drop(connection *conn, const char *why)
{
    if (conn->closing)
        return;
    ecp_log(&conn->server->log, ECP_LOG_WARN, "closing %s: %s", conn->label, why);
    conn->closing = true;
    buf_clear(&conn->framed); /* dropped, as the transport drops what it holds */
    unsolicited_reset(conn);
    if (conn->paused)
        server__output_drained(conn->server); /* it holds nobody up any more */
    conn->io.close(conn->io_ctx);
}

/* Tells the peer why in one error line and closes its connection; what it
 * had sent and not finished is let go at once. The line goes out now when
 * nothing waits before it, as it does for a peer that only sends; one that
 * also left earlier output unread loses it with the rest: waiting for it to
 * read would keep its place taken. */
static void refuse_input(connection *conn, const char *why)
{
    if (conn->closing)
        return;
    buf out = BUF_INIT;
    ecp_write_error_response(&out, NULL, 0, ECP_WIRE_SERVER_ERROR, why, NULL);
    if (conn->decoder.mode == FRAMING_UNKNOWN) {
        /* it never spoke, so nothing would be sent in its framing: the one
         * line every client understands, as for a connection over the limit */
        buf_push(&out, '\n');
        flush_framed(conn);
        conn->io.write(conn->io_ctx, out.data, out.len);
    } else {
        server__connection_send(conn, out.data, out.len);
        flush_framed(conn);
    }
    buf_free(&out);
    server__connection_drop(conn, why);
    framing_decoder_free(&conn->decoder);
    framing_decoder_init(&conn->decoder, conn->server->max_message);
    conn->server->input_held -= conn->input_held;
    conn->input_held = 0;
}

/* Counts what the connection's decoder holds in the server's total, and
 * refuses the connection that takes the total past the budget, unless it
 * holds too little to matter: one peer's unfinished megabytes are its own
 * problem up to the limit of a message, everyone's beyond the budget. */
static void account_input(connection *conn)
{
    server *srv = conn->server;
    if (conn->closing)
        return;
    size_t held = framing_decoder_buffered(&conn->decoder);
    srv->input_held = srv->input_held - conn->input_held + held;
    conn->input_held = held;
    if (held > CONNECTION_INPUT_FLOOR && srv->input_held > srv->max_input) {
        char why[200];
        snprintf(why, sizeof why,
                 "Too much unfinished input: this server holds at most %zu bytes of it across its connections",
                 srv->max_input);
        refuse_input(conn, why);
    }
}

void server__connections_check_input(server *self)
{
    uint64_t now = uv_now(self->loop);
    for (connection *conn = self->connections; conn; conn = conn->next) {
        if (conn->closing)
            continue;
        if (conn->paused || conn->reading_stopped || conn->parsing || conn->holding) {
            conn->last_input = now; /* the server is the one it waits for */
            continue;
        }
        if ((conn->spoke && !framing_decoder_inside_message(&conn->decoder)) ||
            now - conn->last_input < self->input_timeout_ms)
            continue;
        char why[160];
        snprintf(why, sizeof why, "Timed out: %.6g seconds without input before a message was complete",
                 (double)self->input_timeout_ms / 1000.0);
        refuse_input(conn, why);
    }
}

void server__connection_finish(connection *conn)
{
    if (conn->closing)
        return;
    ecp_log(&conn->server->log, ECP_LOG_DEBUG, "%s ended its session", conn->label);
    connection_flush(conn); /* its last answer is what it waits for */
    conn->closing = true;
    (conn->io.finish ? conn->io.finish : conn->io.close)(conn->io_ctx);
}

static void send_error(connection *conn, const char *id_raw, size_t id_len, int code, const char *message)
{
    buf out = BUF_INIT;
    ecp_write_error_response(&out, id_raw, id_len, code, message, NULL);
    server__connection_send(conn, out.data, out.len);
    buf_free(&out);
}

/* ----- batches -------------------------------------------------------------- */

static void batch_free(batch *b)
{
    connection *conn = b->conn;
    if (b->prev)
        b->prev->next = b->next;
    else
        conn->batches = b->next;
    if (b->next)
        b->next->prev = b->prev;
    buf_free(&b->responses);
    free(b);
}

static void batch_add_response(batch *b, const char *json, size_t len)
{
    buf_push(&b->responses, b->count++ ? ',' : '[');
    buf_append(&b->responses, json, len);
}

static void batch_maybe_complete(batch *b)
{
    if (b->dispatching || b->outstanding > 0)
        return;
    if (b->count > 0) {
        buf_push(&b->responses, ']');
        server__connection_send(b->conn, b->responses.data, b->responses.len);
    }
    batch_free(b);
}

/* ----- pending requests ----------------------------------------------------- */

/* Entries of answered requests are kept for the next ones (a few: a burst
 * of deferred requests is not held on to), so a request makes no malloc
 * for its entry. */
#define SPARE_PENDING_MAX 32

static pending *pending_new(connection *conn)
{
    pending *p = conn->spare_pending;
    if (p) {
        conn->spare_pending = p->next;
        conn->spare_pending_count--;
        memset(p, 0, sizeof *p);
        return p;
    }
    return xcalloc(1, sizeof *p);
}

static void pending_release(connection *conn, pending *p)
{
    if (conn->spare_pending_count >= SPARE_PENDING_MAX) {
        free(p);
        return;
    }
    p->next = conn->spare_pending;
    conn->spare_pending = p;
    conn->spare_pending_count++;
}

static void pending_unlink(pending *p)
{
    connection *conn = p->conn;
    if (p->prev)
        p->prev->next = p->next;
    else
        conn->pending = p->next;
    if (p->next)
        p->next->prev = p->prev;
    ecp_call_set_link(p->call, NULL);
}

/* The code that runs on a request's behalf (its handler, or what answers it
 * later and says so, ecp_call_cause_begin) counts here: what it notifies, it
 * caused. */
static unsigned *cause_counter(void *owner)
{
    pending *p = owner;
    return &p->conn->server->handling;
}

/* Called by the call when it is answered: the response goes to the peer (or
 * into its batch). */
static void deliver(void *owner, ecp_call *call, const char *response, size_t len, const jw_splices *splices)
{
    pending *p = owner;
    connection *conn = p->conn;
    batch *b = p->batch;
    bool held = conn->holding == p;
    if (held)
        conn->holding = NULL;
    pending_unlink(p);
    pending_release(conn, p);
    if (b) {
        buf whole = BUF_INIT; /* a batch's answer is one array: a big member is copied into it */
        if (splices && splices->count) {
            jw_splices_append_to(&whole, response, len, splices);
            response = whole.data, len = whole.len;
        }
        batch_add_response(b, response, len);
        buf_free(&whole);
        b->outstanding--;
        batch_maybe_complete(b);
    } else {
        server__connection_send_spliced(conn, response, len, splices);
    }
    if (held)
        connection_receive(conn, NULL, 0); /* the messages that waited for it */
}

static pending *find_pending(connection *conn, const char *id_raw, size_t id_len)
{
    for (pending *p = conn->pending; p; p = p->next) {
        size_t len;
        const char *raw = ecp_call_id_raw(p->call, &len);
        if (len == id_len && memcmp(raw, id_raw, len) == 0)
            return p;
    }
    return NULL;
}

/* Sends an error either straight to the peer or into the batch. */
static void reply_error(connection *conn, batch *b, const char *id_raw, size_t id_len, int code, const char *message)
{
    if (!b) {
        send_error(conn, id_raw, id_len, code, message);
        return;
    }
    buf out = BUF_INIT;
    ecp_write_error_response(&out, id_raw, id_len, code, message, NULL);
    batch_add_response(b, out.data, out.len);
    buf_free(&out);
}

/* $/cancelRequest: the request answers -32800 now, and its handler is told to
 * stop; whatever it answers later is discarded. */
static void cancel_request(connection *conn, const json_doc *doc, json_ref params)
{
    json_ref id = json_get(doc, params, "id");
    json_type type = json_type_of(doc, id);
    if (type != JSON_STRING && type != JSON_NUMBER)
        return;
    size_t id_len;
    const char *id_raw = json_raw(doc, id, &id_len);
    pending *p = find_pending(conn, id_raw, id_len);
    if (!p)
        return; /* already answered: nothing to cancel */
    ecp_call *call = p->call;
    batch *b = p->batch;
    if (conn->holding == p)
        conn->holding = NULL;
    pending_unlink(p);
    pending_release(conn, p);
    reply_error(conn, b, id_raw, id_len, ECP_WIRE_REQUEST_CANCELLED, "Request cancelled");
    if (b)
        b->outstanding--;
    ecp_call_abandon(call);
    if (b)
        batch_maybe_complete(b);
}

/* ----- dispatch ------------------------------------------------------------- */


/* Dispatches one message object. text/doc are handed over (the call keeps
 * them alive for deferred handlers). */
static void dispatch(connection *conn, batch *b, char *text, size_t len, json_doc *doc, json_ref ref)
{
    server *srv = conn->server;
    arena scratch = ARENA_INIT;
    rpc_message msg;
    rpc_problem problem;
    if (rpc_message_read(doc, ref, &scratch, &msg, &problem) < 0) {
        reply_error(conn, b, msg.id_raw, msg.id_len, problem.code, problem.message);
        goto discard;
    }
    if (msg.kind == RPC_RESPONSE)
        goto discard; /* we send no requests yet, so there is nothing to match */
    if (strcmp(msg.method, "$/cancelRequest") == 0) {
        cancel_request(conn, doc, msg.params);
        if (msg.kind == RPC_REQUEST)
            reply_error(conn, b, msg.id_raw, msg.id_len, ECP_WIRE_INVALID_REQUEST,
                        "Invalid Request: $/cancelRequest is a notification");
        goto discard;
    }
    if (msg.kind == RPC_REQUEST && (srv->shutting_down || conn->shutting_down)) {
        reply_error(conn, b, msg.id_raw, msg.id_len, ECP_WIRE_SERVER_SHUTTING_DOWN, "Server is shutting down");
        goto discard;
    }
    const ecp_adapter *adapter = NULL;
    const ecp_method *method = server__router_find(&srv->router, msg.method, &adapter);
    if (!method) {
        /* "$/" notifications are optional by convention: ignore the unknown ones */
        if (msg.kind == RPC_REQUEST) {
            char message[300];
            snprintf(message, sizeof message, "Method not found: %.256s", msg.method);
            reply_error(conn, b, msg.id_raw, msg.id_len, ECP_WIRE_METHOD_NOT_FOUND, message);
        }
        goto discard;
    }

    pending *p = NULL;
    ecp_call_init init = {
        .text = text, .len = len, .doc = *doc, .message = ref, .method = msg.method,
        .id_raw = msg.id_raw, .id_len = msg.id_len, .params = msg.params,
        .client_id = conn->id, .encoding = conn->encoding, .log = &srv->log,
    };
    if (msg.kind == RPC_REQUEST) {
        p = pending_new(conn);
        p->conn = conn;
        p->batch = b;
        init.deliver = deliver;
        init.owner = p;
        init.cause_counter = cause_counter;
    }
    ecp_call *call = ecp_call_create(&init);
    arena_free(&scratch);
    if (p) {
        p->call = call;
        ecp_call_set_link(call, p);
        p->next = conn->pending;
        if (conn->pending)
            conn->pending->prev = p;
        conn->pending = p;
        if (b)
            b->outstanding++;
    }
    if (server__router_admit(&srv->router, adapter, method, call)) {
        srv->handling++;
        method->handler(adapter->ctx, call);
        srv->handling--;
    }
    if (!ecp_call_answered(call) && !ecp_call_deferred(call)) {
        ecp_log(&srv->log, ECP_LOG_ERROR, "%s returned without answering", ecp_call_method(call));
        ecp_call_error(call, ECP_WIRE_INTERNAL_ERROR, "Internal error: %s did not answer", ecp_call_method(call));
    }
    if (p && !ecp_call_answered(call) && ecp_call_holds_client(call))
        conn->holding = p; /* receive() takes no further message until deliver() */
    ecp_call_unref(call);
    return;

discard:
    arena_free(&scratch);
    json_doc_free(doc);
    free(text);
}

static void handle_batch(connection *conn, const json_doc *doc, json_ref root)
{
    batch *b = xcalloc(1, sizeof *b);
    b->conn = conn;
    b->dispatching = true;
    b->next = conn->batches;
    if (conn->batches)
        conn->batches->prev = b;
    conn->batches = b;
    /* Each member gets its own text and tokens, so a deferred member keeps
     * only itself alive, not the whole batch. */
    for (json_ref e = json_first(doc, root); e != JSON_NO_REF && !conn->closing; e = json_next(doc, e)) {
        size_t len;
        const char *raw = json_raw(doc, e, &len);
        char *text = xstrndup(raw, len);
        json_doc member;
        if (json_doc_parse(&member, text, len, NULL) < 0) { /* cannot happen: it parsed as part of the batch */
            free(text);
            continue;
        }
        dispatch(conn, b, text, len, &member, json_root(&member));
    }
    b->dispatching = false;
    batch_maybe_complete(b);
}

/* Acts on a parsed (or unparseable) message. Takes text and doc. */
static void handle_parsed(connection *conn, char *text, size_t len, json_doc *doc, int status, const ecp_error *err)
{
    if (status < 0) {
        char message[600];
        snprintf(message, sizeof message, "Parse error: %s", err->message);
        send_error(conn, NULL, 0, ECP_WIRE_PARSE_ERROR, message);
        free(text);
        return;
    }
    json_ref root = json_root(doc);
    if (json_type_of(doc, root) == JSON_ARRAY) {
        if (json_length(doc, root) == 0)
            send_error(conn, NULL, 0, ECP_WIRE_INVALID_REQUEST, "Invalid Request: empty batch");
        else
            handle_batch(conn, doc, root);
        json_doc_free(doc);
        free(text);
        return;
    }
    dispatch(conn, NULL, text, len, doc, root);
}

/* Parsing a big message off the loop, as a job in the long lane: the
 * connection handles nothing else until it is dispatched, so its messages
 * keep their order; other connections are not held up by one peer's
 * megabytes (or by a document nested just under the depth limit, which costs
 * the tokenizer tokens x depth); and peers sending many such messages hold
 * at most the long lane's threads, never the ones short work needs. The
 * server's job set owns every such job: a connection that goes cancels its
 * own (done then drops the message), and the server's teardown closes the
 * set. */
typedef struct parse_data {
    connection *conn;   /* NULL once the connection has gone */
    char *text;
    size_t len;
    json_doc doc;
    int status;
    bool parsed;        /* doc holds tokens to free */
    ecp_error err;
} parse_data;

static void parse_work(ecp_job *job, unsigned item)
{
    (void)item;
    parse_data *d = ecp_job_data(job);
    if (ecp_job_cancelled(job))
        return;
    d->status = json_doc_parse(&d->doc, d->text, d->len, &d->err);
    d->parsed = d->status == 0;
}

static void parse_done(ecp_job *job)
{
    parse_data *d = ecp_job_data(job);
    connection *conn = d->conn;
    if (!conn)
        return; /* the peer left meanwhile: free_data drops the message */
    conn->parsing = NULL;
    char *text = d->text;
    d->text = NULL;
    d->parsed = false;
    handle_parsed(conn, text, d->len, &d->doc, d->status, &d->err); /* takes text and doc */
    connection_receive(conn, NULL, 0); /* what arrived meanwhile */
}

static void parse_free(void *data)
{
    parse_data *d = data;
    if (d->parsed)
        json_doc_free(&d->doc);
    free(d->text);
    free(d);
}

static const ecp_job_type parse_job_type = {
    .name = "server.parse",
    .lane = ECP_LANE_LONG,
    .work = parse_work,
    .done = parse_done,
    .free_data = parse_free,
};

static void handle_message(connection *conn, char *text, size_t len)
{
    if (len >= CONNECTION_POOL_PARSE_BYTES) {
        parse_data *d = xcalloc(1, sizeof *d);
        d->conn = conn;
        d->text = text;
        d->len = len;
        ecp_job *job = ecp_job_new(conn->server->parse_jobs, &parse_job_type, d);
        conn->parsing = job;
        ecp_job_start(job, 1);
        return;
    }
    json_doc doc;
    ecp_error err;
    int status = json_doc_parse(&doc, text, len, &err);
    handle_parsed(conn, text, len, &doc, status, &err);
}

static void receive(connection *conn, const char *data, size_t len);

void connection_receive(connection *conn, const char *data, size_t len)
{
    if (conn->closing)
        return;
    if (len)
        conn->last_input = uv_now(conn->server->loop);
    conn->receiving++;
    receive(conn, data, len);
    if (--conn->receiving == 0)
        flush_framed(conn);
    account_input(conn);
}

static void receive(connection *conn, const char *data, size_t len)
{
    framing_decoder_feed(&conn->decoder, data, len);
    bool was_unknown = true;
    /* Paused, the messages already buffered wait too: answering them would
     * queue more for a peer that is not reading. */
    while (!conn->closing && !conn->parsing && !conn->holding && !conn->reading_stopped) {
        char *msg;
        size_t n;
        frame_status st = framing_decoder_next(&conn->decoder, &msg, &n);
        if (was_unknown && conn->decoder.mode != FRAMING_UNKNOWN) {
            was_unknown = false;
            flush_early(conn);
        }
        if (st == FRAME_NEED_MORE)
            break;
        if (st == FRAME_BAD_HEADER) {
            server__connection_drop(conn, "unparseable message header");
            /* the only client spoke garbage: a failure, not a client that left */
            if (!conn->server->shared)
                server_request_exit(conn->server, 1);
            break;
        }
        conn->spoke = true;
        if (st == FRAME_OVERSIZED) {
            char message[160];
            snprintf(message, sizeof message, "Invalid Request: message of %zu bytes exceeds the limit of %zu bytes", n,
                     conn->server->max_message);
            send_error(conn, NULL, 0, ECP_WIRE_INVALID_REQUEST, message);
            continue;
        }
        handle_message(conn, msg, n);
        if (conn->reading_stopped)
            break; /* the rest waits until the peer reads its output */
    }
}

/* ----- lifetime ------------------------------------------------------------- */

connection *server_connection_open(server *self, const connection_io *io, void *io_ctx, const char *label)
{
    connection *conn = xcalloc(1, sizeof *conn);
    conn->server = self;
    conn->id = ++self->next_connection_id;
    snprintf(conn->label, sizeof conn->label, "%s", label);
    conn->io = *io;
    conn->io_ctx = io_ctx;
    conn->encoding = ECP_ENCODING_UTF16;
    framing_decoder_init(&conn->decoder, self->max_message);
    conn->last_input = uv_now(self->loop);
    conn->next = self->connections;
    if (self->connections)
        self->connections->prev = conn;
    self->connections = conn;
    self->connection_count++;
    server__client_encodings_changed(self);
    ecp_log(&self->log, ECP_LOG_DEBUG, "%s connected (client %llu)", label, (unsigned long long)conn->id);
    return conn;
}

static void subscription_list_free(subscription_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    l->items = NULL;
    l->count = 0;
}

void connection_close(connection *conn)
{
    server *srv = conn->server;
    conn->closing = true;
    /* Abandon what is still running; handlers answer later into the void. */
    while (conn->pending) {
        pending *p = conn->pending;
        ecp_call *call = p->call;
        pending_unlink(p);
        free(p);
        ecp_call_abandon(call);
    }
    while (conn->spare_pending) {
        pending *p = conn->spare_pending;
        conn->spare_pending = p->next;
        free(p);
    }
    while (conn->batches)
        batch_free(conn->batches);
    if (conn->parsing) {
        ecp_job *job = conn->parsing;
        ((parse_data *)ecp_job_data(job))->conn = NULL;
        ecp_job_cancel(job);
    }
    if (conn->paused)
        server__output_drained(srv); /* it holds nobody up any more */
    drop_held(conn);
    if (conn->initialized)
        server__announce_client(srv, conn, "client/didDisconnect");
    for (size_t i = 0; i < srv->router.count; i++)
        if (srv->router.adapters[i].client_closed)
            srv->router.adapters[i].client_closed(srv->router.adapters[i].ctx, conn->id);
    if (conn->watching_process)
        server__forget_client_processes(srv, conn->id);
    if (conn->prev)
        conn->prev->next = conn->next;
    else
        srv->connections = conn->next;
    srv->connection_count--;
    if (conn->next)
        conn->next->prev = conn->prev;
    server__client_encodings_changed(srv);
    srv->input_held -= conn->input_held;
    ecp_log(&srv->log, ECP_LOG_DEBUG, "%s disconnected", conn->label);
    framing_decoder_free(&conn->decoder);
    buf_free(&conn->early);
    buf_free(&conn->framed);
    buf_free(&conn->unsolicited);
    free(conn->unsolicited_ends);
    subscription_list_free(&conn->subscribed);
    subscription_list_free(&conn->excluded);
    free(conn->name);
    free(conn);
}

uint64_t connection_id(const connection *conn) { return conn->id; }

/* ----- subscriptions -------------------------------------------------------- */

static bool pattern_matches(const char *pattern, const char *method)
{
    if (strcmp(pattern, "*") == 0)
        return true;
    size_t n = strlen(pattern);
    if (n >= 2 && pattern[n - 1] == '*' && pattern[n - 2] == '/')
        return strncmp(pattern, method, n - 1) == 0;
    return strcmp(pattern, method) == 0;
}

static bool list_matches(const subscription_list *l, const char *method)
{
    for (size_t i = 0; i < l->count; i++)
        if (pattern_matches(l->items[i], method))
            return true;
    return false;
}

bool server__connection_wants(const connection *conn, const char *method)
{
    if (conn->filtered && !list_matches(&conn->subscribed, method))
        return false;
    return !list_matches(&conn->excluded, method);
}
