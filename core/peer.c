#include "peer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "buf.h"
#include "error.h"
#include "json_writer.h"

#define PEER_DEFAULT_MAX_MESSAGE ((size_t)64 << 20)

typedef struct pending {
    struct pending *next;
    int64_t id;
    char *method;
    uint64_t deadline; /* uv_now at which it times out; 0: never */
    uint64_t timeout_ms;
    ecp_peer_answer_fn done;
    void *ctx;
} pending;

struct ecp_peer_request {
    ecp_peer_request *prev, *next;
    ecp_peer *peer;
    char *id_json;
    char *method;
};

/* A message waiting behind the closed gate. */
typedef struct gated {
    struct gated *next;
    buf msg;
    int64_t request_id;
} gated;

struct ecp_peer {
    uv_loop_t *loop;
    ecp_peer_options options;
    ecp_peer_handlers handlers;
    framing_decoder decoder;
    uv_timer_t timer;
    pending *pending;
    size_t pending_count;
    ecp_peer_request *requests; /* received, not yet answered */
    int64_t next_id;
    bool gate_closed;
    gated *gated, *gated_tail; /* in the order sent */
    bool open;
    int depth;   /* callbacks running: a free waits for them to return */
    bool freed;
};

/* ----- lifetime across callbacks ----------------------------------------------------------------- */

static void hold(ecp_peer *self) { self->depth++; }

static void timer_closed(uv_handle_t *h) { free(h->data); }

static void destroy(ecp_peer *self)
{
    while (self->pending) { /* completed by the close; only a free from inside it leaves any */
        pending *p = self->pending;
        self->pending = p->next;
        free(p->method);
        free(p);
    }
    while (self->requests) {
        ecp_peer_request *r = self->requests;
        self->requests = r->next;
        free(r->id_json);
        free(r->method);
        free(r);
    }
    while (self->gated) {
        gated *g = self->gated;
        self->gated = g->next;
        buf_free(&g->msg);
        free(g);
    }
    framing_decoder_free(&self->decoder);
    uv_close((uv_handle_t *)&self->timer, timer_closed);
}

/* Returns false when the peer was freed meanwhile (and is gone now). */
static bool release(ecp_peer *self)
{
    if (--self->depth == 0 && self->freed) {
        destroy(self);
        return false;
    }
    return !self->freed;
}

/* ----- output ------------------------------------------------------------------------------------ */

static framing_mode send_mode(const ecp_peer *self)
{
    if (self->options.framing != FRAMING_UNKNOWN)
        return self->options.framing;
    return self->decoder.mode == FRAMING_CONTENT_LENGTH ? FRAMING_CONTENT_LENGTH : FRAMING_NEWLINE;
}

/* Writes one message. Returns false when the peer was freed by the write callback. */
static bool emit(ecp_peer *self, const buf *msg, int64_t request_id)
{
    hold(self);
    if (self->options.messages) {
        self->handlers.write(self->handlers.ctx, msg->data, msg->len, request_id);
    } else {
        buf framed = BUF_INIT;
        framing_encode(send_mode(self), &framed, msg->data, msg->len);
        self->handlers.write(self->handlers.ctx, framed.data, framed.len, request_id);
        buf_free(&framed);
    }
    return release(self);
}

/* Writes one message, or keeps it behind the closed gate. Takes msg's bytes
 * when it keeps them. Returns false when the peer was freed. */
static bool emit_gated(ecp_peer *self, buf *msg, int64_t request_id, bool past_gate)
{
    if (!self->gate_closed || past_gate)
        return emit(self, msg, request_id);
    gated *g = xcalloc(1, sizeof *g);
    g->msg = *msg;
    *msg = (buf)BUF_INIT;
    g->request_id = request_id;
    if (self->gated_tail)
        self->gated_tail->next = g;
    else
        self->gated = g;
    self->gated_tail = g;
    return true;
}

void ecp_peer_gate_close(ecp_peer *self) { self->gate_closed = true; }

void ecp_peer_gate_open(ecp_peer *self)
{
    self->gate_closed = false;
    hold(self);
    while (self->gated && self->open && !self->freed) {
        gated *g = self->gated;
        self->gated = g->next;
        if (!self->gated)
            self->gated_tail = NULL;
        emit(self, &g->msg, g->request_id);
        buf_free(&g->msg);
        free(g);
    }
    release(self);
}

static void message_begin(json_writer *w, buf *out)
{
    jw_init(w, out);
    jw_object_begin(w);
    jw_key_string(w, "jsonrpc", "2.0");
}

static void write_error(ecp_peer *self, const char *id_json, int code, const char *message)
{
    buf out = BUF_INIT;
    json_writer w;
    message_begin(&w, &out);
    jw_key(&w, "id");
    if (id_json)
        jw_raw(&w, id_json, strlen(id_json));
    else
        jw_null(&w);
    jw_key(&w, "error");
    jw_object_begin(&w);
    jw_key_int(&w, "code", code);
    jw_key_string(&w, "message", message);
    jw_object_end(&w);
    jw_object_end(&w);
    emit(self, &out, 0);
    buf_free(&out);
}

void ecp_peer_send_error(ecp_peer *self, int code, const char *fmt, ...)
{
    if (!self->open)
        return;
    buf message = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vappendf(&message, fmt, ap);
    va_end(ap);
    write_error(self, NULL, code, message.data ? message.data : "");
    buf_free(&message);
}

/* ----- requests we sent -------------------------------------------------------------------------- */

static void on_timer(uv_timer_t *t);

static void rearm(ecp_peer *self)
{
    uint64_t first = 0;
    for (pending *p = self->pending; p; p = p->next)
        if (p->deadline && (!first || p->deadline < first))
            first = p->deadline;
    if (!first || !self->open) {
        uv_timer_stop(&self->timer);
        return;
    }
    uint64_t now = uv_now(self->loop);
    uv_timer_start(&self->timer, on_timer, first > now ? first - now : 0, 0);
}

static pending *take_pending(ecp_peer *self, int64_t id)
{
    for (pending **p = &self->pending; *p; p = &(*p)->next)
        if ((*p)->id == id) {
            pending *found = *p;
            *p = found->next;
            self->pending_count--;
            return found;
        }
    return NULL;
}

/* Calls p's callback once and frees it. Returns false when the peer is gone. */
static bool complete(ecp_peer *self, pending *p, const ecp_peer_answer *answer)
{
    hold(self);
    p->done(p->ctx, p->id, answer);
    free(p->method);
    free(p);
    return release(self);
}

static bool complete_status(ecp_peer *self, pending *p, int status, const char *message)
{
    ecp_peer_answer answer = {.status = status, .result = JSON_NO_REF, .error = JSON_NO_REF, .message = message};
    return complete(self, p, &answer);
}

static void send_cancel_notice(ecp_peer *self, int64_t id)
{
    if (!self->open || self->freed)
        return;
    if (self->handlers.send_cancel) {
        hold(self);
        self->handlers.send_cancel(self->handlers.ctx, self, id);
        release(self);
        return;
    }
    char params[64];
    snprintf(params, sizeof params, "{\"id\":%" PRId64 "}", id);
    ecp_peer_notify(self, "$/cancelRequest", params);
}

static void on_timer(uv_timer_t *t)
{
    ecp_peer *self = t->data;
    hold(self);
    while (!self->freed) {
        uint64_t now = uv_now(self->loop);
        pending *p = self->pending;
        while (p && (!p->deadline || p->deadline > now))
            p = p->next;
        if (!p)
            break;
        take_pending(self, p->id);
        char why[160];
        snprintf(why, sizeof why, "no answer to %s within %" PRIu64 " ms", p->method, p->timeout_ms);
        /* the other side may stop working on it */
        send_cancel_notice(self, p->id);
        complete_status(self, p, ECP_ETIMEDOUT, why);
    }
    if (!self->freed)
        rearm(self);
    release(self);
}

static int64_t call(ecp_peer *self, const char *method, const char *params_json, uint64_t timeout_ms,
                    ecp_peer_answer_fn done, void *ctx, bool past_gate)
{
    if (!self->open)
        return 0;
    pending *p = calloc(1, sizeof *p);
    if (!p)
        abort();
    p->id = ++self->next_id;
    p->method = xstrdup(method);
    p->done = done;
    p->ctx = ctx;
    p->timeout_ms = timeout_ms;
    p->deadline = timeout_ms ? uv_now(self->loop) + timeout_ms : 0;
    p->next = self->pending;
    self->pending = p;
    self->pending_count++;
    int64_t id = p->id;
    buf out = BUF_INIT;
    json_writer w;
    message_begin(&w, &out);
    jw_key_int(&w, "id", id);
    jw_key_string(&w, "method", method);
    if (params_json) {
        jw_key(&w, "params");
        jw_raw(&w, params_json, strlen(params_json));
    }
    jw_object_end(&w);
    if (timeout_ms)
        rearm(self);
    emit_gated(self, &out, id, past_gate);
    buf_free(&out);
    return id;
}

int64_t ecp_peer_call(ecp_peer *self, const char *method, const char *params_json, uint64_t timeout_ms,
                      ecp_peer_answer_fn done, void *ctx)
{
    return call(self, method, params_json, timeout_ms, done, ctx, false);
}

int64_t ecp_peer_call_past_gate(ecp_peer *self, const char *method, const char *params_json, uint64_t timeout_ms,
                                ecp_peer_answer_fn done, void *ctx)
{
    return call(self, method, params_json, timeout_ms, done, ctx, true);
}

static bool notify(ecp_peer *self, const char *method, const char *params_json, bool past_gate)
{
    if (!self->open)
        return false;
    buf out = BUF_INIT;
    json_writer w;
    message_begin(&w, &out);
    jw_key_string(&w, "method", method);
    if (params_json) {
        jw_key(&w, "params");
        jw_raw(&w, params_json, strlen(params_json));
    }
    jw_object_end(&w);
    emit_gated(self, &out, 0, past_gate);
    buf_free(&out);
    return true;
}

bool ecp_peer_notify(ecp_peer *self, const char *method, const char *params_json)
{
    return notify(self, method, params_json, false);
}

bool ecp_peer_notify_past_gate(ecp_peer *self, const char *method, const char *params_json)
{
    return notify(self, method, params_json, true);
}

bool ecp_peer_cancel(ecp_peer *self, int64_t id)
{
    pending *p = take_pending(self, id);
    if (!p)
        return false;
    hold(self);
    send_cancel_notice(self, id);
    complete_status(self, p, ECP_ECANCELED, "cancelled");
    release(self);
    return true;
}

bool ecp_peer_fail_request(ecp_peer *self, int64_t id, const char *message)
{
    pending *p = take_pending(self, id);
    if (!p)
        return false;
    complete_status(self, p, ECP_EIO, message);
    return true;
}

size_t ecp_peer_pending_count(const ecp_peer *self) { return self->pending_count; }

/* ----- requests we received ---------------------------------------------------------------------- */

const char *ecp_peer_request_method(const ecp_peer_request *request) { return request->method; }
const char *ecp_peer_request_id(const ecp_peer_request *request) { return request->id_json; }

static void request_release(ecp_peer_request *r)
{
    ecp_peer *self = r->peer;
    if (r->prev)
        r->prev->next = r->next;
    else
        self->requests = r->next;
    if (r->next)
        r->next->prev = r->prev;
    free(r->id_json);
    free(r->method);
    free(r);
}

void ecp_peer_respond(ecp_peer_request *request, const char *result_json)
{
    ecp_peer *self = request->peer;
    buf out = BUF_INIT;
    if (self->open) {
        json_writer w;
        message_begin(&w, &out);
        jw_key(&w, "id");
        jw_raw(&w, request->id_json, strlen(request->id_json));
        jw_key(&w, "result");
        if (result_json)
            jw_raw(&w, result_json, strlen(result_json));
        else
            jw_null(&w);
        jw_object_end(&w);
    }
    request_release(request);
    if (out.len)
        emit(self, &out, 0);
    buf_free(&out);
}

void ecp_peer_respond_error(ecp_peer_request *request, int code, const char *fmt, ...)
{
    ecp_peer *self = request->peer;
    buf message = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vappendf(&message, fmt, ap);
    va_end(ap);
    char *id_json = request->id_json;
    request->id_json = NULL;
    request_release(request);
    if (self->open)
        write_error(self, id_json, code, message.data ? message.data : "");
    free(id_json);
    buf_free(&message);
}

/* ----- input ------------------------------------------------------------------------------------- */

static void problem(ecp_peer *self, ecp_peer_problem what, const char *detail)
{
    if (self->handlers.on_problem)
        self->handlers.on_problem(self->handlers.ctx, what, detail);
}

static void invalid(ecp_peer *self, const char *id_json, int code, const char *message)
{
    problem(self, ECP_PEER_MALFORMED, message);
    if (self->options.answer_invalid && !self->freed && self->open)
        write_error(self, id_json, code, message);
}

static void take_answer(ecp_peer *self, const json_doc *d, json_ref root, json_ref id)
{
    int64_t n;
    pending *p = json_int64(d, id, &n) ? take_pending(self, n) : NULL;
    if (!p) {
        problem(self, ECP_PEER_STRAY, "an answer to no pending request");
        return;
    }
    arena a = ARENA_INIT;
    ecp_peer_answer answer = {
        .doc = d, .result = json_get(d, root, "result"), .error = json_get(d, root, "error"), .message = "",
    };
    if (answer.error != JSON_NO_REF) {
        json_ref code = json_get(d, answer.error, "code"), message = json_get(d, answer.error, "message");
        if (code == JSON_NO_REF || !json_int64(d, code, &answer.code))
            answer.code = 0;
        if (message == JSON_NO_REF || !json_string(d, message, &a, &answer.message, NULL))
            answer.message = "an error without a message";
    } else if (answer.result == JSON_NO_REF) {
        answer.error = JSON_NO_REF;
        answer.message = "an answer with neither result nor error";
        answer.code = ECP_WIRE_INVALID_REQUEST;
    }
    complete(self, p, &answer);
    arena_free(&a);
}

static void take_message(ecp_peer *self, const char *text, size_t len)
{
    json_doc d = {0};
    ecp_error err = {0};
    if (json_doc_parse(&d, text, len, &err) < 0) {
        buf message = BUF_INIT;
        buf_appendf(&message, "Parse error: %s", err.message);
        invalid(self, NULL, ECP_WIRE_PARSE_ERROR, message.data);
        buf_free(&message);
        json_doc_free(&d);
        return;
    }
    json_ref root = json_root(&d);
    if (json_type_of(&d, root) != JSON_OBJECT) {
        invalid(self, NULL, ECP_WIRE_INVALID_REQUEST, "Invalid request: a message is a JSON object");
        json_doc_free(&d);
        return;
    }
    json_ref method = json_get(&d, root, "method"), id = json_get(&d, root, "id"), params = json_get(&d, root, "params");
    if (method == JSON_NO_REF) {
        if (id != JSON_NO_REF)
            take_answer(self, &d, root, id);
        else
            invalid(self, NULL, ECP_WIRE_INVALID_REQUEST, "Invalid request: no method");
        json_doc_free(&d);
        return;
    }
    buf id_json = BUF_INIT;
    if (id != JSON_NO_REF) {
        json_type t = json_type_of(&d, id);
        if (t != JSON_STRING && t != JSON_NUMBER && t != JSON_NULL) {
            invalid(self, NULL, ECP_WIRE_INVALID_REQUEST, "Invalid request: id must be a string or a number");
            json_doc_free(&d);
            return;
        }
        json_writer w;
        jw_init(&w, &id_json);
        json_write_value(&w, &d, id);
    }
    arena a = ARENA_INIT;
    const char *name;
    json_type params_type = json_type_of(&d, params);
    if (json_type_of(&d, method) != JSON_STRING || !json_string(&d, method, &a, &name, NULL)) {
        invalid(self, id_json.data, ECP_WIRE_INVALID_REQUEST, "Invalid request: method must be a string");
    } else if (params != JSON_NO_REF && params_type != JSON_OBJECT &&
               (self->options.params_object_only || params_type != JSON_ARRAY)) {
        if (id_json.data)
            invalid(self, id_json.data, ECP_WIRE_INVALID_PARAMS,
                    self->options.params_object_only ? "params must be an object"
                                                     : "params must be an object or an array");
    } else if (!id_json.data) {
        if (self->handlers.on_notification)
            self->handlers.on_notification(self->handlers.ctx, name, &d, params);
    } else {
        ecp_peer_request *r = calloc(1, sizeof *r);
        if (!r)
            abort();
        r->peer = self;
        r->id_json = buf_detach(&id_json);
        r->method = xstrdup(name);
        r->next = self->requests;
        if (self->requests)
            self->requests->prev = r;
        self->requests = r;
        if (self->handlers.on_request)
            self->handlers.on_request(self->handlers.ctx, r, r->method, &d, params);
        else
            ecp_peer_respond_error(r, ECP_WIRE_METHOD_NOT_FOUND, "Method not found: %s", name);
    }
    arena_free(&a);
    buf_free(&id_json);
    json_doc_free(&d);
}

void ecp_peer_feed_message(ecp_peer *self, const char *json, size_t len)
{
    if (!self->open)
        return;
    hold(self);
    if (len > self->options.max_message) {
        char detail[96];
        snprintf(detail, sizeof detail, "a message is longer than %zu bytes", self->options.max_message);
        problem(self, ECP_PEER_OVERSIZED, detail);
        if (self->options.answer_invalid && !self->freed && self->open)
            write_error(self, NULL, ECP_WIRE_INVALID_REQUEST, detail);
    } else {
        take_message(self, json, len);
    }
    release(self);
}

static void drain(ecp_peer *self)
{
    while (self->open && !self->freed) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&self->decoder, &msg, &len);
        if (st == FRAME_NEED_MORE)
            return;
        if (st == FRAME_BAD_HEADER) {
            problem(self, ECP_PEER_BROKEN, "a Content-Length header that cannot be read");
            return;
        }
        if (st == FRAME_OVERSIZED) {
            char detail[96];
            snprintf(detail, sizeof detail, "a message is longer than %zu bytes", self->options.max_message);
            problem(self, ECP_PEER_OVERSIZED, detail);
            if (self->options.answer_invalid && !self->freed && self->open)
                write_error(self, NULL, ECP_WIRE_INVALID_REQUEST, detail);
            continue;
        }
        take_message(self, msg, len);
        free(msg);
    }
}

void ecp_peer_feed(ecp_peer *self, const char *data, size_t len)
{
    if (!self->open || self->decoder.broken)
        return;
    hold(self);
    framing_decoder_feed(&self->decoder, data, len);
    drain(self);
    release(self);
}

void ecp_peer_feed_end(ecp_peer *self)
{
    if (!self->open || self->options.messages || self->decoder.mode == FRAMING_CONTENT_LENGTH)
        return;
    ecp_peer_feed(self, "\n", 1);
}

/* ----- the peer ---------------------------------------------------------------------------------- */

ecp_peer *ecp_peer_new(uv_loop_t *loop, const ecp_peer_options *options, const ecp_peer_handlers *handlers)
{
    ecp_peer *self = calloc(1, sizeof *self);
    if (!self)
        abort();
    self->loop = loop;
    self->options = *options;
    if (!self->options.max_message)
        self->options.max_message = PEER_DEFAULT_MAX_MESSAGE;
    self->handlers = *handlers;
    framing_decoder_init(&self->decoder, self->options.max_message);
    if (!self->options.messages)
        self->decoder.mode = self->options.framing;
    uv_timer_init(loop, &self->timer);
    self->timer.data = self;
    self->open = true;
    return self;
}

bool ecp_peer_is_open(const ecp_peer *self) { return self && self->open; }

void ecp_peer_close(ecp_peer *self, const char *why)
{
    self->open = false;
    uv_timer_stop(&self->timer);
    hold(self);
    while (self->pending && !self->freed) {
        pending *p = self->pending;
        self->pending = p->next;
        self->pending_count--;
        complete_status(self, p, ECP_EIO, why ? why : "the connection closed");
    }
    release(self);
}

void ecp_peer_free(ecp_peer *self)
{
    if (!self || self->freed)
        return;
    hold(self);
    ecp_peer_close(self, NULL);
    self->freed = true;
    release(self);
}
