/* The server itself through the in-process client: lifecycle, introspection,
 * JSON-RPC edge cases, batches, subscriptions, notification order, deferred
 * answers, cancellation and disconnects. A small adapter of the test's own
 * provides methods that are slow, emit notifications, or forget to answer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include <cmocka.h>

#include "buf.h"
#include "error.h"
#include "job.h"
#include "json.h"
#include "rpc.h"
#include "server.h"
#include "test_client.h"

/* ----- the test adapter ------------------------------------------------------ */

typedef struct slow_call {
    uv_timer_t timer;
    ecp_call *call;
    struct probe *probe;
} slow_call;

typedef struct probe {
    ecp_bus *bus;
    uv_loop_t *loop;
    int abandoned;      /* abandon hooks that ran */
    int answered_late;  /* slow calls answered after their timer */
} probe;

static void render_note(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    jw_object_begin(w);
    jw_key_string(w, "from", ctx);
    jw_key_string(w, "encoding", ecp_encoding_name(enc));
    jw_object_end(w);
}

static void timer_closed(uv_handle_t *h) { free(h->data); }

static void slow_fire(uv_timer_t *t)
{
    slow_call *s = t->data;
    s->probe->answered_late++;
    ecp_call_reply_success(s->call, true); /* discarded when abandoned */
    uv_close((uv_handle_t *)t, timer_closed);
}

static void slow_abandoned(void *ctx)
{
    slow_call *s = ctx;
    s->probe->abandoned++;
}

/* test/slow {ms}: answers {success:true} after ms milliseconds. */
static void handle_slow(void *ctx, ecp_call *call)
{
    probe *p = ctx;
    int64_t ms;
    if (!ecp_arg_int(call, ecp_call_params(call), "ms", &ms))
        return;
    slow_call *s = calloc(1, sizeof *s);
    s->call = ecp_call_defer(call);
    s->probe = p;
    uv_timer_init(p->loop, &s->timer);
    s->timer.data = s;
    ecp_call_on_abandon(call, slow_abandoned, s);
    uv_timer_start(&s->timer, slow_fire, (uint64_t)ms, 0);
}

/* test/emit {name}: notifies test/<name>, then answers. */
static void handle_emit(void *ctx, ecp_call *call)
{
    probe *p = ctx;
    ecp_str name;
    if (!ecp_arg_string(call, ecp_call_params(call), "name", &name))
        return;
    char method[64];
    snprintf(method, sizeof method, "test/%s", name.ptr);
    ecp_bus_notify(p->bus, method, render_note, (void *)ecp_call_method(call));
    ecp_call_reply_success(call, true);
}

static void handle_forgetful(void *ctx, ecp_call *call) { (void)ctx, (void)call; }

static const ecp_method test_methods[] = {
    {"test/slow", handle_slow, "1.0", "Answer {success:true} after ms milliseconds", "{ms: integer}"},
    {"test/emit", handle_emit, "1.0", "Notify test/<name>, then answer", "{name: string}"},
    {"test/forgetful", handle_forgetful, "1.0", "Never answer", "{}"},
};

/* ----- fixtures ------------------------------------------------------------------ */

typedef struct fixture {
    test_server *server;
    test_client *a, *b;
    probe probe;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->server = test_server_new(NULL);
    f->a = test_client_connect(f->server);
    f->b = test_client_connect(f->server);
    /* a client's framing is known once it has spoken: until then the server
     * holds its notifications */
    char *out;
    assert_int_equal(test_client_request(f->a, "ecp/ping", NULL, &out), 0);
    free(out);
    assert_int_equal(test_client_request(f->b, "ecp/ping", NULL, &out), 0);
    free(out);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_server_free(f->server);
    free(f);
    return 0;
}

static void register_probe(fixture *f)
{
    f->probe.bus = test_server_bus(f->server);
    f->probe.loop = test_server_loop(f->server);
    ecp_adapter adapter = {.ns = "test", .methods = test_methods, .method_count = 3, .ctx = &f->probe};
    test_server_register(f->server, &adapter);
}

#define REQUEST_OK(client, method, params, out) assert_int_equal(test_client_request(client, method, params, out), 0)

static void check_string(const char *json, const char *path, const char *want)
{
    char *got = test_json_string(json, path);
    if (!got || strcmp(got, want) != 0)
        fail_msg("%s: expected \"%s\", got %s in %s", path, want, got ? got : "(absent)", json);
    free(got);
}


/* True when the array at path holds the string want. */
static bool array_has(const char *json, const char *path, const char *want)
{
    long n = test_json_length(json, path);
    for (long i = 0; i < n; i++) {
        char at[128];
        snprintf(at, sizeof at, "%s[%ld]", path, i);
        char *s = test_json_string(json, at);
        bool eq = s && strcmp(s, want) == 0;
        free(s);
        if (eq)
            return true;
    }
    return false;
}

/* ----- lifecycle ---------------------------------------------------------------- */

static void initialize_reports_the_server(void **state)
{
    fixture *f = *state;
    char *out;
    REQUEST_OK(f->a, "initialize", "{\"processId\":null,\"clientInfo\":{\"name\":\"t\"}}", &out);
    check_string(out, "protocolVersion", "1.0");
    check_string(out, "serverInfo.name", "ecpd");
    assert_true(test_json_has(out, "serverInfo.version"));
    check_string(out, "positionEncoding", "utf-16");
    const char *namespaces[] = {"ecp", "notifications", "document", "file"};
    for (size_t i = 0; i < sizeof namespaces / sizeof *namespaces; i++)
        if (!array_has(out, "capabilities.namespaces", namespaces[i]))
            fail_msg("namespace %s missing from %s", namespaces[i], out);
    assert_false(array_has(out, "capabilities.namespaces", "")); /* the lifecycle methods have none */
    const char *notes[] = {"document/didOpen", "document/didChange", "file/didChange", "file/didDelete"};
    for (size_t i = 0; i < sizeof notes / sizeof *notes; i++)
        if (!array_has(out, "capabilities.notifications", notes[i]))
            fail_msg("notification %s missing from %s", notes[i], out);
    free(out);
}

static void initialize_negotiates_the_encoding(void **state)
{
    fixture *f = *state;
    char *out;
    REQUEST_OK(f->a, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-32\",\"utf-8\"]}}", &out);
    check_string(out, "positionEncoding", "utf-32");
    free(out);
    REQUEST_OK(f->b, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"ebcdic\",\"utf-8\"]}}", &out);
    check_string(out, "positionEncoding", "utf-8");
    free(out);
    test_client *c = test_client_connect(f->server);
    REQUEST_OK(c, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"ebcdic\"]}}", &out);
    check_string(out, "positionEncoding", "utf-16");
    free(out);
    /* notifications are rendered in each connection's encoding */
    register_probe(f);
    REQUEST_OK(f->a, "test/emit", "{\"name\":\"x\"}", &out);
    free(out);
    check_string(test_client_notification(f->a, "test/x", 0), "encoding", "utf-32");
    check_string(test_client_notification(f->b, "test/x", 0), "encoding", "utf-8");
    check_string(test_client_notification(c, "test/x", 0), "encoding", "utf-16");
    test_client_disconnect(c);
}

static void initialize_rejects_mistyped_params(void **state)
{
    fixture *f = *state;
    char *out;
    assert_int_equal(test_client_request(f->a, "initialize", "{\"processId\":\"me\"}", &out), -32602);
    check_string(out, "message", "processId: expected integer, got string");
    free(out);
}

static void shutdown_then_everything_is_refused(void **state)
{
    fixture *f = *state;
    char *out;
    REQUEST_OK(f->a, "shutdown", NULL, &out);
    assert_string_equal(out, "null");
    free(out);
    assert_int_equal(test_client_request(f->b, "ecp/ping", "{}", &out), -32002);
    check_string(out, "message", "Server is shutting down");
    free(out);
    int code = -1;
    assert_false(test_server_exit_requested(f->server, &code));
    test_client_notify(f->a, "exit", NULL);
    assert_true(test_server_exit_requested(f->server, &code));
    assert_int_equal(code, 0);
}

static void exit_without_shutdown_is_code_1(void **state)
{
    fixture *f = *state;
    int code = -1;
    test_client_notify(f->a, "exit", NULL);
    assert_true(test_server_exit_requested(f->server, &code));
    assert_int_equal(code, 1);
}

static void ecp_stop_ends_the_server(void **state)
{
    fixture *f = *state;
    char *out;
    int code = -1;
    REQUEST_OK(f->b, "ecp/stop", NULL, &out);
    assert_string_equal(out, "null");
    free(out);
    assert_true(test_server_exit_requested(f->server, &code));
    assert_int_equal(code, 0);
}

/* ----- introspection ------------------------------------------------------------ */

static void methods_lists_what_is_routed(void **state)
{
    fixture *f = *state;
    char *out;
    REQUEST_OK(f->a, "ecp/methods", "{\"namespace\":\"ecp\"}", &out);
    assert_int_equal(test_json_length(out, "methods"), 4);
    check_string(out, "methods[0].name", "ecp/methods");
    check_string(out, "methods[0].since", "1.0");
    check_string(out, "methods[1].name", "ecp/ping");
    check_string(out, "methods[2].name", "ecp/stop");
    check_string(out, "methods[3].name", "ecp/whoami");
    free(out);
    REQUEST_OK(f->a, "ecp/methods", NULL, &out);
    long all = test_json_length(out, "methods");
    free(out);
    assert_true(all >= 8);
    /* every listed method is routed: calling it never answers -32601 */
    REQUEST_OK(f->a, "ecp/methods", NULL, &out);
    for (long i = 0; i < all; i++) {
        char path[64];
        snprintf(path, sizeof path, "methods[%ld].name", i);
        char *name = test_json_string(out, path);
        if (strcmp(name, "exit") != 0 && strcmp(name, "shutdown") != 0) {
            char *reply = NULL;
            int code = test_client_request(f->b, name, "{}", &reply);
            if (code == -32601)
                fail_msg("%s is listed but not routed: %s", name, reply);
            free(reply);
        }
        free(name);
    }
    free(out);
}

/* The method table is the documentation: every method routed, built in or
 * registered later, has a one-line summary and a params signature. */
static void every_method_has_a_summary_and_params(void **state)
{
    fixture *f = *state;
    register_probe(f);
    char *out;
    REQUEST_OK(f->a, "ecp/methods", NULL, &out);
    long count = test_json_length(out, "methods");
    assert_true(count >= 8);
    bool seen_probe = false;
    for (long i = 0; i < count; i++) {
        char path[64];
        snprintf(path, sizeof path, "methods[%ld].name", i);
        char *name = test_json_string(out, path);
        assert_non_null(name);
        seen_probe |= strcmp(name, "test/slow") == 0;
        const char *fields[] = {"since", "summary", "params"};
        for (size_t k = 0; k < sizeof fields / sizeof *fields; k++) {
            snprintf(path, sizeof path, "methods[%ld].%s", i, fields[k]);
            char *text = test_json_string(out, path);
            if (!text || !text[0])
                fail_msg("%s has no %s in %s", name, fields[k], out);
            free(text);
        }
        free(name);
    }
    assert_true(seen_probe);
    free(out);

    REQUEST_OK(f->a, "ecp/methods", "{\"namespace\":\"notifications\"}", &out);
    assert_int_equal(test_json_length(out, "methods"), 2);
    check_string(out, "methods[0].name", "notifications/subscribe");
    check_string(out, "methods[0].params", "{events: string[]}");
    free(out);
    REQUEST_OK(f->a, "ecp/methods", "{\"namespace\":\"test\"}", &out);
    check_string(out, "methods[1].name", "test/emit");
    check_string(out, "methods[1].summary", "Notify test/<name>, then answer");
    check_string(out, "methods[1].params", "{name: string}");
    free(out);
    REQUEST_OK(f->a, "ecp/methods", "{\"namespace\":\"nope\"}", &out);
    assert_string_equal(out, "{\"methods\":[]}");
    free(out);
}

static void ping_echoes_params(void **state)
{
    fixture *f = *state;
    char *out;
    REQUEST_OK(f->a, "ecp/ping", "{\"n\":1,\"s\":\"\\u00e9\\ud83d\\ude00\",\"a\":[true,null]}", &out);
    /* the echo is the same value, written anew: escapes come back as UTF-8 */
    assert_string_equal(out, "{\"n\":1,\"s\":\"\xc3\xa9\xf0\x9f\x98\x80\",\"a\":[true,null]}");
    free(out);
    REQUEST_OK(f->a, "ecp/ping", "[1,2]", &out);
    assert_string_equal(out, "[1,2]");
    free(out);
    REQUEST_OK(f->a, "ecp/ping", NULL, &out);
    assert_string_equal(out, "null");
    free(out);
}

/* ----- JSON-RPC edge cases -------------------------------------------------------- */

static void raw_exchange(test_client *c, const char *message, const char *want)
{
    char *got = test_client_request_raw(c, message, 5000);
    if (!got || strcmp(got, want) != 0)
        fail_msg("sent %s\nexpected %s\ngot      %s", message, want, got ? got : "(nothing)");
    free(got);
}

static void malformed_messages_get_the_right_errors(void **state)
{
    fixture *f = *state;
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"nope/x\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not found: nope/x\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"ecp/nope\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"error\":{\"code\":-32601,\"message\":\"Method not found: ecp/nope\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"frobnicate\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"error\":{\"code\":-32601,\"message\":\"Method not found: frobnicate\"}}");
    raw_exchange(f->a, "{\"id\":3,\"method\":\"ecp/ping\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":5}",
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: method must be a string\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ecp/ping\",\"params\":7}",
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32602,\"message\":\"params: expected object or array\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ecp/ping\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: id must be a string or a number\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ecp/ping\"",
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: incomplete JSON text\"}}");
    raw_exchange(f->a, "[]", "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: empty batch\"}}");
    raw_exchange(f->a, "\"just a string\"",
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: a message must be a JSON object\"}}");
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"notifications/subscribe\"}",
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"error\":{\"code\":-32602,\"message\":\"events: required array\"}}");
    /* invalid UTF-8 in a string comes back as U+FFFD: output is always valid */
    raw_exchange(f->a, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ecp/ping\",\"params\":{\"s\":\"a\xff\"}}",
                 "{\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{\"s\":\"a\xef\xbf\xbd\"}}");
    /* the connection still works after all of that */
    char *out;
    REQUEST_OK(f->a, "ecp/ping", "{\"still\":true}", &out);
    free(out);
}

static void deep_nesting_is_refused(void **state)
{
    fixture *f = *state;
    size_t depth = 100000;
    char *msg = malloc(depth * 2 + 100);
    char *p = msg + sprintf(msg, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ecp/ping\",\"params\":");
    for (size_t i = 0; i < depth; i++)
        *p++ = '[';
    for (size_t i = 0; i < depth; i++)
        *p++ = ']';
    strcpy(p, "}");
    raw_exchange(f->a, msg,
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: nesting deeper than 512 levels\"}}");
    free(msg);
}

/* Messages of a megabyte and more are parsed off the loop; what the client
 * sees is unchanged: answers in order, errors as usual. */
static void big_messages_keep_their_order(void **state)
{
    fixture *f = *state;
    size_t pad = (size_t)3 << 20;
    buf msg = BUF_INIT;
    buf_append_str(&msg, "{\"jsonrpc\":\"2.0\",\"id\":100,\"method\":\"ecp/ping\",\"params\":{\"pad\":\"");
    for (size_t i = 0; i < pad; i++)
        buf_push(&msg, 'x');
    buf_append_str(&msg, "\"}}\n{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":\"ecp/ping\",\"params\":[101]}");
    char *first = test_client_request_raw(f->a, msg.data, 20000);
    assert_non_null(first);
    int64_t id;
    assert_true(test_json_int(first, "id", &id));
    assert_int_equal(id, 100);
    assert_int_equal(strlen(first), pad + strlen("{\"jsonrpc\":\"2.0\",\"id\":100,\"result\":{\"pad\":\"\"}}"));
    free(first);
    char *out;
    assert_int_equal(test_client_wait_response(f->a, 101, 5000, &out), 0);
    assert_string_equal(out, "[101]");
    free(out);

    /* a big message that does not parse is still a parse error */
    msg.len = msg.len - strlen("\"}}\n{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":\"ecp/ping\",\"params\":[101]}");
    buf_append_str(&msg, "\"}");
    char *err = test_client_request_raw(f->a, msg.data, 20000);
    assert_non_null(err);
    assert_string_equal(err, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: incomplete JSON text\"}}");
    free(err);
    REQUEST_OK(f->a, "ecp/ping", "[8]", &out); /* the connection goes on */
    free(out);
    buf_free(&msg);
}

/* A ping whose params nest `depth` arrays, `units` times over: costly to
 * tokenize (tokens x depth), so its parse takes long enough to watch. */
static char *nested_ping(int64_t id, size_t units, int depth)
{
    buf msg = BUF_INIT;
    buf_appendf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"ecp/ping\",\"params\":[", (long long)id);
    for (size_t u = 0; u < units; u++) {
        if (u)
            buf_push(&msg, ',');
        for (int i = 0; i < depth; i++)
            buf_push(&msg, '[');
        for (int i = 0; i < depth; i++)
            buf_push(&msg, ']');
    }
    buf_append_str(&msg, "]}\n");
    return buf_detach(&msg);
}

typedef struct probe_job {
    uint64_t ran_at; /* uv_hrtime when the work began; 0 until then */
    bool done;
} probe_job;

static void probe_work(ecp_job *job, unsigned item)
{
    (void)item;
    ((probe_job *)ecp_job_data(job))->ran_at = uv_hrtime();
}

static void probe_done(ecp_job *job) { ((probe_job *)ecp_job_data(job))->done = true; }

static void probe_keep(void *data) { (void)data; }

static const ecp_job_type probe_type = {
    .name = "test.probe", .lane = ECP_LANE_SHORT, .work = probe_work, .done = probe_done, .free_data = probe_keep,
};

/* Big messages are parsed in the long lane: however many clients send them
 * at once, a short job (a save, a read) still finds a thread at once. */
static void big_messages_leave_room_for_short_work(void **state)
{
    fixture *f = *state;
    uv_loop_t *loop = test_server_loop(f->server);
    ecp_pool *pool = ecp_pool_new(loop, NULL);
    ecp_job_set *set = ecp_job_set_new(pool);
    unsigned n = ecp_pool_threads(pool);
    /* 8 MB: the reader is linear, so a message must be big to keep a
     * thread busy long enough to measure */
    char *msg = nested_ping(7, 8000, 500);
    /* how long one such message takes when it has the pool to itself */
    uint64_t alone_at = uv_hrtime();
    char *alone = test_client_request_raw(f->a, msg, 60000);
    assert_non_null(alone);
    free(alone);
    double alone_ms = (double)(uv_hrtime() - alone_at) / 1e6;
    test_client **clients = calloc(n, sizeof *clients);
    for (unsigned i = 0; i < n; i++) {
        clients[i] = test_client_connect(f->server);
        test_client_request_raw(clients[i], msg, 0); /* parsing starts now, off the loop */
    }
    test_server_run_for(f->server, 20); /* let every parse take a thread */
    probe_job short_job = {0};
    ecp_job *job = ecp_job_new(set, &probe_type, &short_job);
    uint64_t asked_at = uv_hrtime();
    ecp_job_start(job, 1);
    for (int i = 0; i < 60000 && !short_job.done; i++)
        test_server_run_for(f->server, 1);
    assert_true(short_job.done);
    double waited_ms = (double)(short_job.ran_at - asked_at) / 1e6;
    for (unsigned i = 0; i < n; i++) {
        char *out;
        assert_int_equal(test_client_wait_response(clients[i], 7, 120000, &out), 0);
        free(out);
    }
    fprintf(stderr, "  one big message alone: %.0f ms; with %u of them parsing, a short job waited %.1f ms\n",
            alone_ms, n, waited_ms);
    assert_true(alone_ms > 200); /* else the test proves nothing */
    /* every thread held by a parse, it would wait for one to end */
    assert_true(waited_ms < alone_ms / 4);
    free(msg);
    free(clients);
    ecp_job_set_close(set);
    ecp_pool_free(pool);
}

/* A client that leaves while its big message is being parsed: the message is
 * dropped, nothing leaks, the others go on. */
static void leaving_while_a_big_message_parses(void **state)
{
    fixture *f = *state;
    char *msg = nested_ping(3, 1100, 500);
    test_client *c = test_client_connect(f->server);
    test_client_request_raw(c, msg, 0);
    test_client_disconnect(c);
    char *out;
    REQUEST_OK(f->a, "ecp/ping", "[1]", &out);
    assert_string_equal(out, "[1]");
    free(out);
    test_server_run_for(f->server, 50);
    free(msg);
}

/* The server goes while a big message is being parsed: its teardown waits
 * for the parse and frees the message, without dispatching it. */
static void freeing_the_server_while_a_big_message_parses(void **state)
{
    (void)state;
    test_server *srv = test_server_new(NULL);
    test_client *c = test_client_connect(srv);
    char *msg = nested_ping(3, 1100, 500);
    test_client_request_raw(c, msg, 0);
    test_server_free(srv);
    free(msg);
}

static void batches_answer_every_request(void **state)
{
    fixture *f = *state;
    raw_exchange(f->a,
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ecp/ping\",\"params\":[1]},"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"method\":\"no/such\"},"
                 "{\"foo\":1}]",
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":[1]},"
                 "{\"jsonrpc\":\"2.0\",\"id\":\"two\",\"error\":{\"code\":-32601,\"message\":\"Method not found: no/such\"}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid Request: \\\"jsonrpc\\\" must be \\\"2.0\\\"\"}}]");
    /* a batch of notifications only gets no answer at all */
    char *none = test_client_request_raw(f->a, "[{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}]", 200);
    assert_null(none);
}

static void a_batch_of_ten_thousand(void **state)
{
    fixture *f = *state;
    buf msg = BUF_INIT;
    buf_push(&msg, '[');
    for (int i = 0; i < 10000; i++)
        buf_appendf(&msg, "%s{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ecp/ping\",\"params\":[%d]}", i ? "," : "", i, i);
    buf_push(&msg, ']');
    char *out = test_client_request_raw(f->a, msg.data, 20000);
    buf_free(&msg);
    assert_non_null(out);
    /* every id answered exactly once, with its own params */
    json_doc doc;
    assert_int_equal(json_doc_parse(&doc, out, strlen(out), NULL), 0);
    assert_int_equal(json_length(&doc, json_root(&doc)), 10000);
    char *seen = calloc(10000, 1);
    for (json_ref r = json_first(&doc, json_root(&doc)); r != JSON_NO_REF; r = json_next(&doc, r)) {
        int64_t id, echoed;
        assert_true(json_int64(&doc, json_get(&doc, r, "id"), &id));
        assert_true(json_int64(&doc, json_array_at(&doc, json_get(&doc, r, "result"), 0), &echoed));
        assert_int_equal(id, echoed);
        assert_true(id >= 0 && id < 10000);
        assert_false(seen[id]);
        seen[id] = 1;
    }
    json_doc_free(&doc);
    free(seen);
    free(out);
}

/* ----- notifications --------------------------------------------------------------- */

static void notifications_precede_the_response_everywhere(void **state)
{
    fixture *f = *state;
    register_probe(f);
    char *out;
    test_client_clear_notifications(f->a);
    test_client_clear_notifications(f->b);
    int64_t id = test_client_send(f->a, "test/emit", "{\"name\":\"x\"}");
    assert_int_equal(test_client_wait_response(f->a, id, 5000, &out), 0);
    free(out);
    char want[64];
    snprintf(want, sizeof want, "test/x,#%lld", (long long)id);
    assert_string_equal(test_client_event_log(f->a), want);
    assert_string_equal(test_client_event_log(f->b), "test/x");
    check_string(test_client_notification(f->b, "test/x", 0), "from", "test/emit");

    /* a client that has not spoken yet gets what was held for it, in order,
     * before the answer to its first request */
    test_client *quiet = test_client_connect(f->server);
    REQUEST_OK(f->a, "test/emit", "{\"name\":\"held\"}", &out);
    free(out);
    assert_string_equal(test_client_event_log(quiet), "");
    id = test_client_send(quiet, "ecp/ping", NULL);
    assert_int_equal(test_client_wait_response(quiet, id, 5000, &out), 0);
    free(out);
    snprintf(want, sizeof want, "test/held,#%lld", (long long)id);
    assert_string_equal(test_client_event_log(quiet), want);
    test_client_disconnect(quiet);
}

static void emit_both(fixture *f)
{
    char *out;
    REQUEST_OK(f->a, "test/emit", "{\"name\":\"one\"}", &out);
    free(out);
    REQUEST_OK(f->a, "test/emit", "{\"name\":\"two\"}", &out);
    free(out);
}

static void subscriptions_filter_per_connection(void **state)
{
    fixture *f = *state;
    register_probe(f);
    char *out;
    /* a subscribes to one name; b never subscribes and gets everything */
    REQUEST_OK(f->a, "notifications/subscribe", "{\"events\":[\"test/one\"]}", &out);
    free(out);
    emit_both(f);
    assert_string_equal(test_client_notification_log(f->a), "test/one");
    assert_string_equal(test_client_notification_log(f->b), "test/one,test/two");
    /* b excludes one name; a widens to a pattern */
    REQUEST_OK(f->b, "notifications/unsubscribe", "{\"events\":[\"test/one\"]}", &out);
    free(out);
    REQUEST_OK(f->a, "notifications/subscribe", "{\"events\":[\"test/*\"]}", &out);
    free(out);
    test_client_clear_notifications(f->a);
    test_client_clear_notifications(f->b);
    emit_both(f);
    assert_string_equal(test_client_notification_log(f->a), "test/one,test/two");
    assert_string_equal(test_client_notification_log(f->b), "test/two");
    /* unsubscribing everything a filtered connection named leaves it silent */
    REQUEST_OK(f->a, "notifications/unsubscribe", "{\"events\":[\"test/*\",\"test/one\"]}", &out);
    free(out);
    test_client_clear_notifications(f->a);
    emit_both(f);
    assert_string_equal(test_client_notification_log(f->a), "");

    REQUEST_OK(f->a, "notifications/subscribe", "{\"events\":[\"document/*\",\"file/didChange\"]}", &out);
    assert_string_equal(out, "{\"subscribed\":[\"document/*\",\"file/didChange\"]}");
    free(out);
    REQUEST_OK(f->a, "notifications/unsubscribe", "{\"events\":[\"file/didChange\"]}", &out);
    assert_string_equal(out, "{\"unsubscribed\":[\"file/didChange\"]}");
    free(out);
    assert_int_equal(test_client_request(f->a, "notifications/subscribe", "{\"events\":[\"\"]}", &out), -32602);
    check_string(out, "message", "events[0]: expected a non-empty string");
    free(out);
}

/* ----- deferred answers, cancellation, disconnects ----------------------------------- */

static void slow_adapter(fixture *f) { register_probe(f); }

static void a_slow_request_does_not_hold_up_others(void **state)
{
    fixture *f = *state;
    slow_adapter(f);
    int64_t slow = test_client_send(f->a, "test/slow", "{\"ms\":300}");
    char *out;
    REQUEST_OK(f->a, "ecp/ping", "[1]", &out); /* answered while the slow one waits */
    free(out);
    assert_int_equal(f->probe.answered_late, 0);
    assert_int_equal(test_client_wait_response(f->a, slow, 5000, &out), 0);
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    assert_int_equal(f->probe.answered_late, 1);
}

static void cancel_answers_minus_32800_once(void **state)
{
    fixture *f = *state;
    slow_adapter(f);
    int64_t slow = test_client_send(f->a, "test/slow", "{\"ms\":200}");
    char cancel[96];
    snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)slow);
    test_client_notify(f->a, "$/cancelRequest", cancel);
    char *out;
    assert_int_equal(test_client_wait_response(f->a, slow, 1000, &out), -32800);
    check_string(out, "message", "Request cancelled");
    free(out);
    assert_int_equal(f->probe.abandoned, 1);
    test_server_run_for(f->server, 400); /* the handler answers into the void */
    assert_int_equal(f->probe.answered_late, 1);
    assert_int_equal(test_client_wait_response(f->a, slow, 100, &out), INT32_MIN);
    /* cancelling what is already answered, or never existed, does nothing */
    test_client_notify(f->a, "$/cancelRequest", cancel);
    test_client_notify(f->a, "$/cancelRequest", "{\"id\":\"nope\"}");
    REQUEST_OK(f->a, "ecp/ping", NULL, &out);
    free(out);
}

static void a_client_leaving_mid_request_cancels_it(void **state)
{
    fixture *f = *state;
    slow_adapter(f);
    test_client_send(f->a, "test/slow", "{\"ms\":100}");
    test_client_disconnect(f->a);
    f->a = NULL;
    assert_int_equal(f->probe.abandoned, 1);
    test_server_run_for(f->server, 250);
    assert_int_equal(f->probe.answered_late, 1);
    char *out;
    REQUEST_OK(f->b, "ecp/ping", "{\"alive\":true}", &out);
    free(out);
}

static void a_handler_that_forgets_to_answer_gets_an_internal_error(void **state)
{
    fixture *f = *state;
    slow_adapter(f);
    char *out;
    assert_int_equal(test_client_request(f->a, "test/forgetful", NULL, &out), -32603);
    check_string(out, "message", "Internal error: test/forgetful did not answer");
    free(out);
}

static void missing_params_name_the_field(void **state)
{
    fixture *f = *state;
    slow_adapter(f);
    char *out;
    assert_int_equal(test_client_request(f->a, "test/slow", NULL, &out), -32602);
    check_string(out, "message", "ms: required integer");
    free(out);
    assert_int_equal(test_client_request(f->a, "test/slow", "{\"ms\":\"soon\"}", &out), -32602);
    check_string(out, "message", "ms: expected integer, got string");
    free(out);
}

/* ----- what the router refuses ------------------------------------------------------ */

static void count_destroy(void *ctx) { (*(int *)ctx)++; }

typedef struct router_fixture {
    uv_loop_t loop;
    char data_dir[32];
    char *log;
    size_t log_len;
    FILE *log_out;
    server *srv;
    int destroyed;
} router_fixture;

static void router_fixture_start(router_fixture *r)
{
    memset(r, 0, sizeof *r);
    uv_loop_init(&r->loop);
    strcpy(r->data_dir, "/tmp/ecpd-router-XXXXXX");
    assert_non_null(mkdtemp(r->data_dir));
    r->log_out = open_memstream(&r->log, &r->log_len);
    server_options options = {.data_dir = r->data_dir, .log_out = r->log_out, .log_level = ECP_LOG_ERROR};
    ecp_error err;
    r->srv = server_new(&r->loop, &options, &err);
    assert_non_null(r->srv);
}

static void router_fixture_stop(router_fixture *r)
{
    server_free(r->srv);
    for (int i = 0; i < 1000 && uv_run(&r->loop, UV_RUN_NOWAIT); i++)
        uv_sleep(1);
    assert_int_equal(uv_loop_close(&r->loop), 0);
    fclose(r->log_out);
    free(r->log);
    rmdir(r->data_dir);
}

/* Registers a one-method-table adapter and expects a refusal whose logged
 * reason contains `why`, and its ctx released. */
static void expect_refused(router_fixture *r, const char *ns, const ecp_method *methods, size_t count, const char *why)
{
    ecp_adapter adapter = {.ns = ns, .methods = methods, .method_count = count, .ctx = &r->destroyed,
                           .destroy = count_destroy};
    int before = r->destroyed;
    fflush(r->log_out);
    size_t log_start = r->log_len;
    assert_int_equal(server_register_adapter(r->srv, &adapter), ECP_EINVAL);
    assert_int_equal(r->destroyed, before + 1);
    fflush(r->log_out);
    const char *logged = r->log + log_start;
    if (!strstr(logged, "error: adapter refused: ") || !strstr(logged, why))
        fail_msg("expected a refusal naming \"%s\", the log says: %s", why, logged);
}

static void the_router_refuses_tables_that_would_mislead(void **state)
{
    router_fixture r;
    router_fixture_start(&r);
    const ecp_method twice[] = {
        {"test/a", handle_forgetful, "1.0", "A", "{}"},
        {"test/b", handle_forgetful, "1.0", "B", "{}"},
        {"test/a", handle_forgetful, "1.0", "A again", "{}"},
    };
    expect_refused(&r, "test", twice, 3, "method test/a is listed twice");
    const ecp_method outside[] = {{"other/a", handle_forgetful, "1.0", "A", "{}"}};
    expect_refused(&r, "test", outside, 1, "method other/a is outside its namespace \"test\"");
    const ecp_method prefix_only[] = {{"testing/a", handle_forgetful, "1.0", "A", "{}"}};
    expect_refused(&r, "test", prefix_only, 1, "method testing/a is outside its namespace \"test\"");
    const ecp_method no_action[] = {{"test/", handle_forgetful, "1.0", "A", "{}"}};
    expect_refused(&r, "test", no_action, 1, "method test/ is outside its namespace \"test\"");
    expect_refused(&r, "", outside, 1, "method other/a is outside its namespace \"\"");
    const ecp_method no_summary[] = {{"test/a", handle_forgetful, "1.0", "", "{}"}};
    expect_refused(&r, "test", no_summary, 1, "method test/a has no summary");
    const ecp_method no_params[] = {{"test/a", handle_forgetful, "1.0", "A", NULL}};
    expect_refused(&r, "test", no_params, 1, "method test/a has no params signature");
    const ecp_method no_handler[] = {{"test/a", NULL, "1.0", "A", "{}"}};
    expect_refused(&r, "test", no_handler, 1, "method test/a has no handler");
    /* across adapters: a built-in method, a namespace taken twice */
    const ecp_method builtin[] = {{"document/open", handle_forgetful, "1.0", "Open", "{uri: string}"}};
    expect_refused(&r, "document", builtin, 1, "method document/open is already routed to namespace \"document\"");
    const ecp_method other_document[] = {{"document/frobnicate", handle_forgetful, "1.0", "F", "{}"}};
    expect_refused(&r, "document", other_document, 1, "namespace \"document\" is already registered");
    expect_refused(&r, "", twice, 0, "namespace \"\" is already registered");
    expect_refused(&r, "a/b", twice, 0, "namespace \"a/b\" is not a name without '/'");

    /* a good table goes in, and the same again is refused */
    ecp_adapter good = {.ns = "test", .methods = twice, .method_count = 2, .ctx = &r.destroyed,
                        .destroy = count_destroy};
    assert_int_equal(server_register_adapter(r.srv, &good), 0);
    expect_refused(&r, "test", twice + 1, 1, "method test/b is already routed to namespace \"test\"");
    assert_int_equal(r.destroyed, 13); /* every refused ctx, at once */
    router_fixture_stop(&r);
    assert_int_equal(r.destroyed, 14); /* the accepted one at teardown */
}

/* A params signature is what the router enforces, so one that does not
 * parse keeps its adapter out, as a missing summary does. */
static void the_router_refuses_a_signature_that_does_not_parse(void **state)
{
    router_fixture r;
    router_fixture_start(&r);
    const ecp_method unclosed[] = {{"test/a", handle_forgetful, "1.0", "A", "{uri: string"}};
    expect_refused(&r, "test", unclosed, 1, "method test/a: params signature \"{uri: string\"");
    const ecp_method unknown[] = {{"test/a", handle_forgetful, "1.0", "A", "{uri: str}"}};
    expect_refused(&r, "test", unknown, 1, "unknown type");
    const ecp_method second_bad[] = {
        {"test/a", handle_forgetful, "1.0", "A", "{}"},
        {"test/b", handle_forgetful, "1.0", "B", "{n: integer >= x}"},
    };
    expect_refused(&r, "test", second_bad, 2, "method test/b: params signature");
    assert_int_equal(r.destroyed, 3);
    router_fixture_stop(&r);
}

/* ----- the status-to-wire table ------------------------------------------------------- */

static void a_wire_map_gives_the_first_listed_code_else_the_fallback(void **state)
{
    static const ecp_wire_map map[] = {
        {ECP_ENOTFOUND, ECP_WIRE_FILE_NOT_FOUND},
        {ECP_EACCES, ECP_WIRE_FILE_ACCESS_DENIED},
        {ECP_ENOTFOUND, ECP_WIRE_DOCUMENT_NOT_FOUND},
    };
    assert_int_equal(ecp_wire_code(map, 3, ECP_ENOTFOUND, ECP_WIRE_INTERNAL_ERROR), -32100);
    assert_int_equal(ecp_wire_code(map, 3, ECP_EACCES, ECP_WIRE_INTERNAL_ERROR), -32101);
    assert_int_equal(ecp_wire_code(map, 3, ECP_EIO, ECP_WIRE_INTERNAL_ERROR), -32603);
    assert_int_equal(ecp_wire_code(map, 1, ECP_EACCES, ECP_WIRE_FILE_IO_ERROR), -32109);
    assert_int_equal(ecp_wire_code(NULL, 0, ECP_OK, ECP_WIRE_INTERNAL_ERROR), -32603);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(initialize_reports_the_server, setup, teardown),
        cmocka_unit_test_setup_teardown(initialize_negotiates_the_encoding, setup, teardown),
        cmocka_unit_test_setup_teardown(initialize_rejects_mistyped_params, setup, teardown),
        cmocka_unit_test_setup_teardown(shutdown_then_everything_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(exit_without_shutdown_is_code_1, setup, teardown),
        cmocka_unit_test_setup_teardown(ecp_stop_ends_the_server, setup, teardown),
        cmocka_unit_test_setup_teardown(methods_lists_what_is_routed, setup, teardown),
        cmocka_unit_test_setup_teardown(every_method_has_a_summary_and_params, setup, teardown),
        cmocka_unit_test_setup_teardown(ping_echoes_params, setup, teardown),
        cmocka_unit_test_setup_teardown(malformed_messages_get_the_right_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(deep_nesting_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(big_messages_keep_their_order, setup, teardown),
        cmocka_unit_test_setup_teardown(big_messages_leave_room_for_short_work, setup, teardown),
        cmocka_unit_test_setup_teardown(leaving_while_a_big_message_parses, setup, teardown),
        cmocka_unit_test(freeing_the_server_while_a_big_message_parses),
        cmocka_unit_test_setup_teardown(batches_answer_every_request, setup, teardown),
        cmocka_unit_test_setup_teardown(a_batch_of_ten_thousand, setup, teardown),
        cmocka_unit_test_setup_teardown(notifications_precede_the_response_everywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(subscriptions_filter_per_connection, setup, teardown),
        cmocka_unit_test_setup_teardown(a_slow_request_does_not_hold_up_others, setup, teardown),
        cmocka_unit_test_setup_teardown(cancel_answers_minus_32800_once, setup, teardown),
        cmocka_unit_test_setup_teardown(a_client_leaving_mid_request_cancels_it, setup, teardown),
        cmocka_unit_test_setup_teardown(a_handler_that_forgets_to_answer_gets_an_internal_error, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_params_name_the_field, setup, teardown),
        cmocka_unit_test(the_router_refuses_tables_that_would_mislead),
        cmocka_unit_test(the_router_refuses_a_signature_that_does_not_parse),
        cmocka_unit_test(a_wire_map_gives_the_first_listed_code_else_the_fallback),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
