#include "test_client.h"

#include <assert.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "buf.h"
#include "framing.h"
#include "json.h"
#include "json_writer.h"
#include "server.h"

#define DEFAULT_TIMEOUT_MS 30000

typedef struct captured {
    char *method;
    char *params;
} captured;

typedef struct response {
    char *text;     /* the whole response (an object, or a batch's array) */
    int64_t id;     /* INT64_MIN when the id is not an integer */
    bool claimed;
    /* text's "result" member, found when the response was read: a large
     * answer (a whole file's tokens) is not parsed a second time. */
    bool has_result;
    size_t result_at, result_len;
} response;

struct test_client {
    test_server *server;
    connection *conn;
    framing_decoder output;   /* what the server wrote to us, framed */
    captured *notes;
    size_t note_count, note_cap;
    buf log;
    buf events;
    response *responses;
    size_t response_count, response_cap;
    size_t raw_mark;          /* responses before this index are not for request_raw */
    int64_t next_id;
    bool dropped;
    struct test_client *next;
};

struct test_server {
    uv_loop_t loop;
    server *srv;
    char *data_dir;
    bool own_data_dir;
    test_client *clients;
    uv_timer_t tick;
};

static void fail(const char *what)
{
    fprintf(stderr, "test_client: %s\n", what);
    abort();
}

/* ----- the transport: bytes in and out, no process, no socket -------------- */

static void take_output(test_client *c)
{
    for (;;) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&c->output, &msg, &len);
        if (st == FRAME_NEED_MORE)
            return;
        if (st != FRAME_MESSAGE)
            fail("the server wrote a malformed frame");
        json_doc doc;
        if (json_doc_parse(&doc, msg, len, NULL) < 0) {
            fprintf(stderr, "test_client: the server wrote invalid JSON: %s\n", msg);
            abort();
        }
        json_ref root = json_root(&doc);
        json_ref method = json_get(&doc, root, "method");
        if (json_type_of(&doc, method) == JSON_STRING) {
            arena a = ARENA_INIT;
            const char *name;
            json_string(&doc, method, &a, &name, NULL);
            size_t plen;
            const char *params = json_raw(&doc, json_get(&doc, root, "params"), &plen);
            if (c->note_count == c->note_cap) {
                c->note_cap = c->note_cap ? c->note_cap * 2 : 64;
                c->notes = realloc(c->notes, c->note_cap * sizeof *c->notes);
            }
            c->notes[c->note_count].method = strdup(name);
            c->notes[c->note_count].params = params ? strndup(params, plen) : strdup("null");
            c->note_count++;
            if (c->log.len)
                buf_push(&c->log, ',');
            buf_append_str(&c->log, name);
            if (c->events.len)
                buf_push(&c->events, ',');
            buf_append_str(&c->events, name);
            arena_free(&a);
            free(msg);
        } else {
            int64_t id = INT64_MIN;
            json_int64(&doc, json_get(&doc, root, "id"), &id);
            if (c->events.len)
                buf_push(&c->events, ',');
            if (id != INT64_MIN)
                buf_appendf(&c->events, "#%lld", (long long)id);
            else
                buf_append_str(&c->events, "#?");
            if (c->response_count == c->response_cap) {
                c->response_cap = c->response_cap ? c->response_cap * 2 : 64;
                c->responses = realloc(c->responses, c->response_cap * sizeof *c->responses);
            }
            size_t result_len = 0;
            const char *result = json_raw(&doc, json_get(&doc, root, "result"), &result_len);
            c->responses[c->response_count++] =
                (response){msg, id, false, result != NULL, result ? (size_t)(result - msg) : 0, result_len};
        }
        json_doc_free(&doc);
    }
}

static void io_write(void *ctx, const char *data, size_t len)
{
    test_client *c = ctx;
    framing_decoder_feed(&c->output, data, len);
    take_output(c);
}

static size_t io_queued(void *ctx) { return 0; }
static void io_set_reading(void *ctx, bool on) {}
static void io_close(void *ctx)
{
    test_client *c = ctx;
    c->dropped = true; /* released by test_client_disconnect or test_server_free */
}

static const connection_io test_io = {io_write, io_queued, io_set_reading, io_close, NULL, NULL};

/* ----- running the loop ------------------------------------------------------ */

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void tick_cb(uv_timer_t *t) { (void)t; }

/* Runs one loop iteration, waking up after at most ms milliseconds. */
static void run_once(test_server *s, long long ms)
{
    if (ms < 0)
        ms = 0;
    /* the loop's clock stands still between runs: a timer started on a stale
     * clock is already due */
    uv_update_time(&s->loop);
    uint64_t wait = (uint64_t)(ms > 10 ? 10 : ms);
    /* Repeating, so that a tick already due when the loop's clock catches up
     * (it fires before the poll) still ends the poll: otherwise a loop kept
     * alive by a quiet handle (a terminal nobody types into) sleeps for good. */
    uv_timer_start(&s->tick, tick_cb, wait, wait ? wait : 1);
    uv_run(&s->loop, UV_RUN_ONCE);
    uv_timer_stop(&s->tick);
}

bool test_server_exit_requested(test_server *s, int *code) { return server_exit_requested(s->srv, code); }

void test_server_run_for(test_server *s, int ms)
{
    long long end = now_ms() + ms;
    while (now_ms() < end)
        run_once(s, end - now_ms());
}

/* ----- server ---------------------------------------------------------------- */

test_server *test_server_new(const test_server_options *options)
{
    test_server *s = calloc(1, sizeof *s);
    uv_loop_init(&s->loop);
    uv_timer_init(&s->loop, &s->tick);
    if (options && options->data_dir) {
        s->data_dir = strdup(options->data_dir);
    } else {
        char tmpl[] = "/tmp/ecpd-test-XXXXXX";
        if (!mkdtemp(tmpl))
            fail("cannot make a temporary data directory");
        s->data_dir = strdup(tmpl);
        s->own_data_dir = true;
    }
    server_options so = {
        .workspace = options ? options->workspace : NULL,
        .data_dir = s->data_dir,
        .config_path = options ? options->config : NULL,
        .log_out = options ? options->log : NULL,
        .log_level = getenv("ECPD_TEST_LOG") || (options && options->log) ? ECP_LOG_DEBUG : ECP_LOG_ERROR,
    };
    ecp_error err;
    s->srv = server_new(&s->loop, &so, &err);
    if (!s->srv) {
        fprintf(stderr, "test_client: server_new: %s\n", err.message);
        abort();
    }
    return s;
}

uv_loop_t *test_server_loop(test_server *s) { return &s->loop; }

void test_server_register(test_server *s, const struct ecp_adapter *adapter) { server_register_adapter(s->srv, adapter); }

struct ecp_bus *test_server_bus(test_server *s) { return server_bus(s->srv); }

static void client_free(test_client *c)
{
    framing_decoder_free(&c->output);
    for (size_t i = 0; i < c->note_count; i++)
        free(c->notes[i].method), free(c->notes[i].params);
    free(c->notes);
    for (size_t i = 0; i < c->response_count; i++)
        free(c->responses[i].text);
    free(c->responses);
    buf_free(&c->log);
    buf_free(&c->events);
    free(c);
}

static void remove_dir(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    if (system(cmd) != 0)
        fprintf(stderr, "test_client: could not remove %s\n", path);
}

void test_server_free(test_server *s)
{
    while (s->clients)
        test_client_disconnect(s->clients);
    server_free(s->srv);
    uv_close((uv_handle_t *)&s->tick, NULL);
    /* let services' handles finish closing */
    for (int i = 0; i < 1000 && uv_run(&s->loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    if (uv_loop_close(&s->loop) != 0)
        fail("the server left libuv handles open after it was freed");
    if (s->own_data_dir)
        remove_dir(s->data_dir);
    free(s->data_dir);
    free(s);
}

test_client *test_client_connect(test_server *s)
{
    test_client *c = calloc(1, sizeof *c);
    c->server = s;
    c->next_id = 1;
    framing_decoder_init(&c->output, SIZE_MAX / 2);
    c->conn = server_connection_open(s->srv, &test_io, c, "test client");
    c->next = s->clients;
    s->clients = c;
    return c;
}

void test_client_disconnect(test_client *c)
{
    test_server *s = c->server;
    for (test_client **p = &s->clients; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            break;
        }
    connection_close(c->conn);
    client_free(c);
}

/* ----- requests ---------------------------------------------------------------- */

static void send_bytes(test_client *c, const char *data, size_t len)
{
    if (c->dropped)
        return;
    connection_receive(c->conn, data, len);
}

int64_t test_client_send(test_client *c, const char *method, const char *params_json)
{
    int64_t id = c->next_id++;
    buf msg = BUF_INIT;
    buf_appendf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", (long long)id);
    json_writer w;
    jw_init(&w, &msg);
    jw_string(&w, method);
    if (params_json)
        buf_appendf(&msg, ",\"params\":%s", params_json);
    buf_append_str(&msg, "}\n");
    send_bytes(c, msg.data, msg.len);
    buf_free(&msg);
    return id;
}

static response *find_response(test_client *c, int64_t id)
{
    for (size_t i = 0; i < c->response_count; i++)
        if (!c->responses[i].claimed && c->responses[i].id == id)
            return &c->responses[i];
    return NULL;
}

int test_client_wait_response(test_client *c, int64_t id, int timeout_ms, char **out)
{
    long long end = now_ms() + timeout_ms;
    response *r;
    while (!(r = find_response(c, id)) && now_ms() < end)
        run_once(c->server, end - now_ms());
    if (out)
        *out = NULL;
    if (!r)
        return INT32_MIN;
    r->claimed = true;
    int code = 0;
    if (r->has_result) {
        if (out)
            *out = strndup(r->text + r->result_at, r->result_len);
        return 0;
    }
    int64_t c64 = 0;
    test_json_int(r->text, "error.code", &c64);
    code = (int)c64;
    if (out)
        *out = test_json_raw(r->text, "error");
    return code ? code : INT32_MIN;
}

int test_client_request(test_client *c, const char *method, const char *params_json, char **out)
{
    int64_t id = test_client_send(c, method, params_json);
    return test_client_wait_response(c, id, DEFAULT_TIMEOUT_MS, out);
}

int test_client_requestf(test_client *c, const char *method, char **out, const char *params_fmt, ...)
{
    buf params = BUF_INIT;
    va_list ap;
    va_start(ap, params_fmt);
    buf_vappendf(&params, params_fmt, ap);
    va_end(ap);
    int code = test_client_request(c, method, params.data, out);
    buf_free(&params);
    return code;
}

char *test_client_request_raw(test_client *c, const char *message, int timeout_ms)
{
    c->raw_mark = c->response_count;
    size_t len = strlen(message);
    send_bytes(c, message, len);
    /* newline framing needs the newline; Content-Length framing must not get one */
    size_t lead = strspn(message, " \t\r\n");
    if (message[lead] != 'C' && message[lead] != 'c' && len && message[len - 1] != '\n')
        send_bytes(c, "\n", 1);
    long long end = now_ms() + timeout_ms;
    for (;;) {
        for (size_t i = c->raw_mark; i < c->response_count; i++) {
            if (!c->responses[i].claimed) {
                c->responses[i].claimed = true;
                return strdup(c->responses[i].text);
            }
        }
        if (now_ms() >= end)
            return NULL;
        run_once(c->server, end - now_ms());
    }
}

void test_client_notify(test_client *c, const char *method, const char *params_json)
{
    buf msg = BUF_INIT;
    buf_append_str(&msg, "{\"jsonrpc\":\"2.0\",\"method\":");
    json_writer w;
    jw_init(&w, &msg);
    jw_string(&w, method);
    if (params_json)
        buf_appendf(&msg, ",\"params\":%s", params_json);
    buf_append_str(&msg, "}\n");
    send_bytes(c, msg.data, msg.len);
    buf_free(&msg);
}

/* ----- notifications ------------------------------------------------------------ */

static bool filter_matches(const char *filter, const char *method)
{
    if (!filter || strcmp(filter, "*") == 0)
        return true;
    size_t n = strlen(filter);
    if (n && (filter[n - 1] == '/' || filter[n - 1] == '*'))
        return strncmp(filter, method, n - 1) == 0 && (filter[n - 1] == '*' || method[n - 1] == '/');
    return strcmp(filter, method) == 0;
}

size_t test_client_notification_count(test_client *c, const char *filter)
{
    size_t n = 0;
    for (size_t i = 0; i < c->note_count; i++)
        n += filter_matches(filter, c->notes[i].method);
    return n;
}

const char *test_client_notification(test_client *c, const char *filter, size_t index)
{
    for (size_t i = 0; i < c->note_count; i++)
        if (filter_matches(filter, c->notes[i].method) && index-- == 0)
            return c->notes[i].params;
    return NULL;
}

bool test_client_wait_notifications(test_client *c, const char *filter, size_t count, int timeout_ms)
{
    long long end = now_ms() + timeout_ms;
    while (test_client_notification_count(c, filter) < count) {
        if (now_ms() >= end)
            return false;
        run_once(c->server, end - now_ms());
    }
    return true;
}

const char *test_client_notification_log(test_client *c) { return c->log.data ? c->log.data : ""; }

const char *test_client_event_log(test_client *c) { return c->events.data ? c->events.data : ""; }

void test_client_clear_notifications(test_client *c)
{
    for (size_t i = 0; i < c->note_count; i++)
        free(c->notes[i].method), free(c->notes[i].params);
    c->note_count = 0;
    buf_clear(&c->log);
    buf_clear(&c->events);
}

/* ----- JSON by path ---------------------------------------------------------------- */

/* Walks "a.b[2].c" from the root. */
static json_ref walk(const json_doc *doc, const char *path)
{
    json_ref ref = json_root(doc);
    const char *p = path;
    while (*p && ref != JSON_NO_REF) {
        if (*p == '.') {
            p++;
            continue;
        }
        if (*p == '[') {
            char *end;
            long index = strtol(p + 1, &end, 10);
            if (*end != ']' || index < 0)
                return JSON_NO_REF;
            ref = json_array_at(doc, ref, (size_t)index);
            p = end + 1;
            continue;
        }
        /* a key ends at '.' or '['; "\\." is a dot inside a key ("settings.editor\\.fontSize") */
        char key[256];
        size_t n = 0;
        while (*p && *p != '.' && *p != '[') {
            if (*p == '\\' && (p[1] == '.' || p[1] == '['))
                p++;
            if (n + 1 >= sizeof key)
                return JSON_NO_REF;
            key[n++] = *p++;
        }
        key[n] = '\0';
        ref = json_get(doc, ref, key);
    }
    return ref;
}

/* Parses json, walks path, and hands the value to fn. */
#define WITH_VALUE(json, path, body)                                       \
    do {                                                                   \
        json_doc doc_;                                                     \
        if (!(json) || json_doc_parse(&doc_, json, strlen(json), NULL) < 0) \
            break;                                                         \
        json_ref ref_ = walk(&doc_, path);                                 \
        body;                                                              \
        json_doc_free(&doc_);                                              \
    } while (0)

char *test_json_raw(const char *json, const char *path)
{
    char *out = NULL;
    WITH_VALUE(json, path, {
        size_t len;
        const char *raw = json_raw(&doc_, ref_, &len);
        if (raw)
            out = strndup(raw, len);
    });
    return out;
}

char *test_json_string(const char *json, const char *path)
{
    char *out = NULL;
    WITH_VALUE(json, path, {
        arena a = ARENA_INIT;
        const char *s;
        size_t len;
        if (json_string(&doc_, ref_, &a, &s, &len)) {
            out = malloc(len + 1);
            memcpy(out, s, len + 1);
        }
        arena_free(&a);
    });
    return out;
}

bool test_json_int(const char *json, const char *path, int64_t *out)
{
    bool ok = false;
    WITH_VALUE(json, path, ok = json_int64(&doc_, ref_, out));
    return ok;
}

bool test_json_bool(const char *json, const char *path, bool *out)
{
    bool ok = false;
    WITH_VALUE(json, path, ok = json_bool(&doc_, ref_, out));
    return ok;
}

long test_json_length(const char *json, const char *path)
{
    long n = -1;
    WITH_VALUE(json, path, {
        json_type t = json_type_of(&doc_, ref_);
        if (t == JSON_ARRAY || t == JSON_OBJECT)
            n = (long)json_length(&doc_, ref_);
    });
    return n;
}

bool test_json_has(const char *json, const char *path)
{
    bool has = false;
    WITH_VALUE(json, path, has = ref_ != JSON_NO_REF);
    return has;
}

/* ----- method tables ---------------------------------------------------------- */

char *test_methods_mismatch(const char *methods_json, const test_method_signature *want, size_t count)
{
    buf why = BUF_INIT;
    long listed = test_json_length(methods_json, "methods");
    if (listed != (long)count)
        buf_appendf(&why, "ecp/methods lists %ld methods, want %zu; ", listed, count);
    for (size_t i = 0; i < count; i++) {
        bool found = false;
        for (long k = 0; k < listed && !found; k++) {
            char p[64];
            snprintf(p, sizeof p, "methods[%ld].name", k);
            char *name = test_json_string(methods_json, p);
            if (name && !strcmp(name, want[i].name)) {
                found = true;
                snprintf(p, sizeof p, "methods[%ld].params", k);
                char *sig = test_json_string(methods_json, p);
                if (!want[i].params[0] && (!sig || strcmp(sig, "{}")))
                    buf_appendf(&why, "%s: params \"%s\", want \"{}\"; ", want[i].name, sig ? sig : "");
                for (size_t a = 0; a < 8 && want[i].params[a]; a++) {
                    /* "{first: ...", then ", name: ..." (required) or ", name?: ..." (optional) */
                    char part[64];
                    snprintf(part, sizeof part, "%s%s: ", a ? ", " : "{", want[i].params[a]);
                    if (!sig || !strstr(sig, part))
                        buf_appendf(&why, "%s: params \"%s\" lack \"%s\"; ", want[i].name, sig ? sig : "", part);
                }
                free(sig);
            }
            free(name);
        }
        if (!found)
            buf_appendf(&why, "ecp/methods lacks %s; ", want[i].name);
    }
    return why.len ? buf_detach(&why) : NULL;
}
