#include "call.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

struct ecp_call {
    char *text;
    size_t text_len;
    ecp_shared *shared_text; /* made on demand; then it owns text */
    json_doc doc;
    json_ref params;
    char *method;
    char *id_raw; /* NULL for a notification */
    size_t id_len;
    arena arena;
    uint64_t client_id;
    ecp_position_encoding encoding;

    buf response;
    json_writer writer;
    jw_splices splices; /* of response (ecp_call_reply_shared) */
    int refs;
    bool writing;   /* ecp_call_result was called, ecp_call_finish not yet */
    bool answered;
    bool deferred;
    bool abandoned;
    bool holds_client; /* the client's later messages wait for this answer */
    void (*abandon_fn)(void *ctx);
    void *abandon_ctx;
    ecp_deliver_fn deliver;
    void *owner;
    unsigned *(*cause_counter_of)(void *owner);
    unsigned *cause_counter; /* taken at the outermost ecp_call_cause_begin */
    unsigned cause_depth;
    void *link;
    ecp_logger *log;
    /* A second answer is written here and thrown away, so a handler that
     * answers twice is logged instead of corrupting the first answer. */
    bool discarding;
    buf discard;
    json_writer discard_writer;
    /* method and id_raw live here, in the call's own allocation: a small
     * request costs one malloc for its call, not three */
    char strings[];
};

ecp_call *ecp_call_create(ecp_call_init *init)
{
    size_t method_len = strlen(init->method), id_size = init->id_raw ? init->id_len + 1 : 0;
    /* malloc, not calloc: glibc serves calloc without its per-thread cache */
    ecp_call *c = xmalloc(xsize_add(xsize_add(sizeof *c, method_len + 1), id_size));
    memset(c, 0, sizeof *c);
    c->text = init->text;
    c->text_len = init->len;
    c->doc = init->doc;
    c->params = init->params;
    c->method = memcpy(c->strings, init->method, method_len + 1);
    if (init->id_raw) {
        c->id_raw = c->strings + method_len + 1;
        memcpy(c->id_raw, init->id_raw, init->id_len);
        c->id_raw[init->id_len] = '\0';
        c->id_len = init->id_len;
    }
    arena_init(&c->arena);
    c->client_id = init->client_id;
    c->encoding = init->encoding;
    c->deliver = init->deliver;
    c->owner = init->owner;
    c->cause_counter_of = init->cause_counter;
    c->log = init->log;
    c->refs = 2; /* the dispatcher's and the pending answer's */
    return c;
}

void ecp_call_ref(ecp_call *call) { call->refs++; }

void ecp_call_unref(ecp_call *call)
{
    assert(call->refs > 0);
    if (--call->refs > 0)
        return;
    json_doc_free(&call->doc);
    if (call->shared_text)
        ecp_shared_unref(call->shared_text);
    else
        free(call->text);
    arena_free(&call->arena);
    buf_free(&call->response);
    jw_splices_free(&call->splices);
    buf_free(&call->discard);
    free(call);
}

bool ecp_call_answered(const ecp_call *call) { return call->answered; }
bool ecp_call_deferred(const ecp_call *call) { return call->deferred; }
bool ecp_call_is_notification(const ecp_call *call) { return call->id_raw == NULL; }

const char *ecp_call_id_raw(const ecp_call *call, size_t *len)
{
    *len = call->id_len;
    return call->id_raw;
}

void *ecp_call_link(ecp_call *call) { return call->link; }
void ecp_call_set_link(ecp_call *call, void *link) { call->link = link; }

/* The counter is looked up once, at the outermost begin, while the call's
 * owner is still there: the answer that usually comes before the end
 * releases it. An abandoned or answered call causes nothing any more. */
void ecp_call_cause_begin(ecp_call *call)
{
    if (call->cause_depth++ == 0)
        call->cause_counter = call->cause_counter_of && call->owner && !call->abandoned && !call->answered
                                  ? call->cause_counter_of(call->owner)
                                  : NULL;
    if (call->cause_counter)
        (*call->cause_counter)++;
}

void ecp_call_cause_end(ecp_call *call)
{
    assert(call->cause_depth > 0 && "ecp_call_cause_end without a begin");
    if (!call->cause_depth)
        return;
    if (call->cause_counter)
        (*call->cause_counter)--;
    if (--call->cause_depth == 0)
        call->cause_counter = NULL;
}

void ecp_call_abandon(ecp_call *call)
{
    if (call->abandoned || call->answered)
        return;
    call->abandoned = true;
    call->deliver = NULL;
    void (*fn)(void *) = call->abandon_fn;
    call->abandon_fn = NULL;
    if (fn)
        fn(call->abandon_ctx);
}

json_ref ecp_call_params(const ecp_call *call) { return call->params; }
const json_doc *ecp_call_doc(const ecp_call *call) { return &call->doc; }
arena *ecp_call_arena(ecp_call *call) { return &call->arena; }
const char *ecp_call_method(const ecp_call *call) { return call->method; }
uint64_t ecp_call_client(const ecp_call *call) { return call->client_id; }
ecp_position_encoding ecp_call_encoding(const ecp_call *call) { return call->encoding; }

ecp_shared *ecp_call_text(ecp_call *call)
{
    if (!call->shared_text)
        call->shared_text = ecp_shared_adopt(call->text, call->text_len);
    return call->shared_text;
}

ecp_call *ecp_call_defer(ecp_call *call)
{
    call->deferred = true;
    return call;
}

bool ecp_call_abandoned(const ecp_call *call) { return call->abandoned; }

void ecp_call_hold_client(ecp_call *call) { call->holds_client = true; }
bool ecp_call_holds_client(const ecp_call *call) { return call->holds_client; }

void ecp_call_on_abandon(ecp_call *call, void (*fn)(void *ctx), void *ctx)
{
    call->abandon_fn = fn;
    call->abandon_ctx = ctx;
}

static void write_envelope(ecp_call *call, const char *member)
{
    buf_clear(&call->response);
    buf_reserve(&call->response, 256); /* most answers fit: no regrowth */
    buf_append_str(&call->response, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (call->id_raw)
        buf_append(&call->response, call->id_raw, call->id_len);
    else
        buf_append_str(&call->response, "null");
    buf_append_str(&call->response, ",\"");
    buf_append_str(&call->response, member);
    buf_append_str(&call->response, "\":");
}

/* A call is answered exactly once. This is checked in every build, not only
 * by an assert: a second answer is a bug worth a log line, never a corrupted
 * or repeated response. */
static bool answer_allowed(ecp_call *call)
{
    if (!call->answered && !call->writing)
        return true;
    ecp_log(call->log, ECP_LOG_ERROR, "%s: answered a second time; the second answer is discarded", call->method);
    return false;
}

json_writer *ecp_call_result(ecp_call *call)
{
    if (!answer_allowed(call)) {
        call->discarding = true;
        buf_clear(&call->discard);
        jw_init(&call->discard_writer, &call->discard);
        return &call->discard_writer;
    }
    call->writing = true;
    write_envelope(call, "result");
    jw_init(&call->writer, &call->response);
    return &call->writer;
}

/* Delivers the response and drops the answer's reference. */
static void complete(ecp_call *call)
{
    call->answered = true;
    call->writing = false;
    if (call->deliver && !call->abandoned && call->id_raw) /* a notification's answer goes nowhere */
        call->deliver(call->owner, call, call->response.data, call->response.len, &call->splices);
    ecp_call_unref(call);
}

void ecp_call_finish(ecp_call *call)
{
    if (call->discarding) {
        call->discarding = false;
        buf_clear(&call->discard);
        jw_splices_clear(&call->splices);
        return;
    }
    if (!call->writing) {
        ecp_log(call->log, ECP_LOG_ERROR, "%s: ecp_call_finish without ecp_call_result", call->method);
        return;
    }
    buf_push(&call->response, '}');
    complete(call);
}

/* A small result given whole ("null", "{}", a short object) is written with
 * its envelope on the stack and delivered from there: the common answer
 * costs no buffer of its own, no writer and no malloc. What the writer
 * would have made is what goes out, byte for byte. */
#define SMALL_ANSWER_BYTES 512

static void reply_small(ecp_call *call, const char *json, size_t len)
{
    static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", member[] = ",\"result\":";
    size_t id_len = call->id_raw ? call->id_len : 4;
    char out[SMALL_ANSWER_BYTES];
    size_t n = 0;
    memcpy(out + n, head, sizeof head - 1), n += sizeof head - 1;
    memcpy(out + n, call->id_raw ? call->id_raw : "null", id_len), n += id_len;
    memcpy(out + n, member, sizeof member - 1), n += sizeof member - 1;
    memcpy(out + n, json, len), n += len;
    out[n++] = '}';
    call->answered = true;
    if (call->deliver && !call->abandoned && call->id_raw)
        call->deliver(call->owner, call, out, n, &call->splices);
    ecp_call_unref(call);
}

static bool fits_small(const ecp_call *call, size_t len)
{
    return len <= SMALL_ANSWER_BYTES / 2 && (!call->id_raw || call->id_len <= SMALL_ANSWER_BYTES / 4);
}

void ecp_call_reply_null(ecp_call *call)
{
    ecp_call_reply_raw(call, "null", 4);
}

void ecp_call_reply_raw(ecp_call *call, const char *json, size_t len)
{
    if (fits_small(call, len) && !call->answered && !call->writing) {
        reply_small(call, json, len);
        return;
    }
    jw_raw(ecp_call_result(call), json, len);
    ecp_call_finish(call);
}

void ecp_call_reply_shared(ecp_call *call, ecp_shared *json)
{
    json_writer *w = ecp_call_result(call);
    jw_allow_splices(w, &call->splices);
    jw_raw_shared(w, ecp_shared_data(json), ecp_shared_len(json), json);
    ecp_call_finish(call);
}

void ecp_call_reply_success(ecp_call *call, bool success)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", success);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void write_error_body(buf *out, int code, const char *message, const char *data_json)
{
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_int(&w, "code", code);
    jw_key_string(&w, "message", message);
    if (data_json) {
        jw_key(&w, "data");
        jw_raw(&w, data_json, strlen(data_json));
    }
    jw_object_end(&w);
}

void ecp_write_error_response(buf *out, const char *id_raw, size_t id_len, int code, const char *message,
                              const char *data_json)
{
    buf_append_str(out, "{\"jsonrpc\":\"2.0\",\"id\":");
    if (id_raw)
        buf_append(out, id_raw, id_len);
    else
        buf_append_str(out, "null");
    buf_append_str(out, ",\"error\":");
    write_error_body(out, code, message, data_json);
    buf_push(out, '}');
}

static void answer_error(ecp_call *call, int code, const char *data_json, const char *fmt, va_list ap)
{
    if (!answer_allowed(call))
        return;
    char message[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    write_envelope(call, "error");
    write_error_body(&call->response, code, message, data_json);
    buf_push(&call->response, '}');
    complete(call);
}

void ecp_call_error(ecp_call *call, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    answer_error(call, code, NULL, fmt, ap);
    va_end(ap);
}

void ecp_call_error_data(ecp_call *call, int code, const char *data_json, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    answer_error(call, code, data_json, fmt, ap);
    va_end(ap);
}

void ecp_bus_notify(ecp_bus *bus, const char *method, ecp_render_fn render, void *ctx)
{
    if (bus && bus->notify)
        bus->notify(bus->owner, 0, method, render, ctx);
}

void ecp_bus_notify_client(ecp_bus *bus, uint64_t client_id, const char *method, ecp_render_fn render, void *ctx)
{
    if (bus && bus->notify && client_id != 0)
        bus->notify(bus->owner, client_id, method, render, ctx);
}

const char *ecp_bus_client_name(ecp_bus *bus, uint64_t client_id)
{
    return bus && bus->client_name ? bus->client_name(bus->owner, client_id) : NULL;
}

bool ecp_bus_backed_up(ecp_bus *bus, const char *method)
{
    return bus && bus->backed_up && bus->backed_up(bus->owner, method);
}

void ecp_bus_when_drained(ecp_bus *bus, const char *method, ecp_drained_fn fn, void *ctx)
{
    if (bus && bus->when_drained)
        bus->when_drained(bus->owner, method, fn, ctx);
}

void ecp_bus_cancel_when_drained(ecp_bus *bus, ecp_drained_fn fn, void *ctx)
{
    if (bus && bus->cancel_when_drained)
        bus->cancel_when_drained(bus->owner, fn, ctx);
}
