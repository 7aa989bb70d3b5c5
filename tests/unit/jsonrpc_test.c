/* Unit tests of jsonrpc.h (telling requests, notifications and responses
 * apart, and every complaint with its code and message) and of the call
 * object (call.h, rpc.h): responses and errors exactly as written, deferral,
 * abandonment, reference counting, the typed param readers, and the bus. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "buf.h"
#include "call.h"
#include "error.h"
#include "json.h"
#include "jsonrpc.h"
#include "rpc.h"

/* ---- rpc_message_read ------------------------------------------------------------ */

typedef struct read_result {
    json_doc doc;
    arena a;
    rpc_message msg;
    rpc_problem problem;
    int rc;
} read_result;

static void read_msg(read_result *r, const char *text)
{
    memset(r, 0, sizeof *r);
    ecp_error err;
    if (json_doc_parse(&r->doc, text, strlen(text), &err) != 0)
        fail_msg("'%s' does not parse: %s", text, err.message);
    arena_init(&r->a);
    r->problem.code = 12345;
    strcpy(r->problem.message, "untouched");
    r->rc = rpc_message_read(&r->doc, json_root(&r->doc), &r->a, &r->msg, &r->problem);
}

static void read_done(read_result *r)
{
    json_doc_free(&r->doc);
    arena_free(&r->a);
}

static void check_id(const read_result *r, const char *want)
{
    if (!want) {
        assert_null(r->msg.id_raw);
        assert_int_equal(r->msg.id_len, 0);
        return;
    }
    assert_non_null(r->msg.id_raw);
    if (r->msg.id_len != strlen(want) || memcmp(r->msg.id_raw, want, r->msg.id_len) != 0)
        fail_msg("id is '%.*s', want '%s'", (int)r->msg.id_len, r->msg.id_raw, want);
}

/* The message reads fine as `kind`, with this method (NULL for a response) and id. */
static void check_ok(const char *text, rpc_kind kind, const char *method, const char *id)
{
    read_result r;
    read_msg(&r, text);
    if (r.rc != 0)
        fail_msg("'%s' refused: %d %s", text, r.problem.code, r.problem.message);
    assert_int_equal(r.msg.kind, kind);
    if (method)
        assert_string_equal(r.msg.method, method);
    else
        assert_null(r.msg.method);
    check_id(&r, id);
    /* nothing was reported */
    assert_int_equal(r.problem.code, 12345);
    assert_string_equal(r.problem.message, "untouched");
    read_done(&r);
}

/* The message is refused with this code and message; id is what may still be
 * answered to (NULL when none). */
static void check_refused(const char *text, int code, const char *message, const char *id)
{
    read_result r;
    read_msg(&r, text);
    if (r.rc == 0)
        fail_msg("'%s' accepted, want %d \"%s\"", text, code, message);
    assert_int_equal(r.rc, -1);
    assert_int_equal(r.problem.code, code);
    assert_string_equal(r.problem.message, message);
    check_id(&r, id);
    read_done(&r);
}

static void test_read_kinds(void **state)
{
    (void)state;
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"document/open\",\"params\":{\"uri\":\"x\"}}", RPC_REQUEST,
             "document/open", "1");
    check_ok("{\"method\":\"a/b\",\"id\":\"abc\",\"jsonrpc\":\"2.0\"}", RPC_REQUEST, "a/b", "\"abc\"");
    check_ok("{\"jsonrpc\":\"2.0\",\"method\":\"a/b\"}", RPC_NOTIFICATION, "a/b", NULL);
    check_ok("{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}}", RPC_NOTIFICATION,
             "$/cancelRequest", NULL);
    /* ids are kept exactly as written, to be echoed */
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":1.50,\"method\":\"m\"}", RPC_REQUEST, "m", "1.50");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":-0,\"method\":\"m\"}", RPC_REQUEST, "m", "-0");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":1e3,\"method\":\"m\"}", RPC_REQUEST, "m", "1e3");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":9999999999999999999999,\"method\":\"m\"}", RPC_REQUEST, "m",
             "9999999999999999999999");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":\"a\\\"b\\u00e9\",\"method\":\"m\"}", RPC_REQUEST, "m", "\"a\\\"b\\u00e9\"");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":\"\",\"method\":\"m\"}", RPC_REQUEST, "m", "\"\"");
    /* a null id is still an id: the request is answered, with id null */
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}", RPC_REQUEST, "m", "null");
    /* the method is decoded */
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"doc\\/open\\u0021\"}", RPC_REQUEST, "doc/open!", "2");
    /* and so is "jsonrpc" */
    check_ok("{\"jsonrpc\":\"\\u0032.0\",\"id\":2,\"method\":\"m\"}", RPC_REQUEST, "m", "2");
    /* responses */
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{\"a\":1}}", RPC_RESPONSE, NULL, "5");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":null}", RPC_RESPONSE, NULL, "5");
    check_ok("{\"jsonrpc\":\"2.0\",\"id\":\"r\",\"error\":{\"code\":-1,\"message\":\"x\"}}", RPC_RESPONSE, NULL, "\"r\"");
}

static void test_read_params(void **state)
{
    (void)state;
    read_result r;
    read_msg(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":[1]}}");
    assert_int_equal(r.rc, 0);
    assert_int_equal(json_type_of(&r.doc, r.msg.params), JSON_OBJECT);
    assert_int_equal(r.msg.params, json_get(&r.doc, json_root(&r.doc), "params"));
    read_done(&r);
    read_msg(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[1,2]}");
    assert_int_equal(r.rc, 0);
    assert_int_equal(json_type_of(&r.doc, r.msg.params), JSON_ARRAY);
    read_done(&r);
    read_msg(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.msg.params, JSON_NO_REF);
    read_done(&r);
    read_msg(&r, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":null}");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.msg.params, JSON_NO_REF);
    read_done(&r);

    check_refused("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":5}", -32602, "params: expected object or array",
                  "1");
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"m\",\"params\":\"x\"}", -32602,
                  "params: expected object or array", "\"q\"");
    check_refused("{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"params\":true}", -32602, "params: expected object or array",
                  NULL);
}

static void test_read_refusals(void **state)
{
    (void)state;
    static const char *not_object = "Invalid Request: a message must be a JSON object";
    check_refused("[1]", -32600, not_object, NULL);
    check_refused("\"x\"", -32600, not_object, NULL);
    check_refused("3", -32600, not_object, NULL);
    check_refused("null", -32600, not_object, NULL);
    {
        /* an absent message */
        json_doc doc;
        assert_int_equal(json_doc_parse(&doc, "{}", 2, NULL), 0);
        arena a = ARENA_INIT;
        rpc_message msg;
        rpc_problem problem;
        assert_int_equal(rpc_message_read(&doc, JSON_NO_REF, &a, &msg, &problem), -1);
        assert_int_equal(problem.code, -32600);
        assert_string_equal(problem.message, not_object);
        assert_null(msg.id_raw);
        assert_null(msg.method);
        assert_int_equal(msg.params, JSON_NO_REF);
        json_doc_free(&doc);
    }

    static const char *bad_id = "Invalid Request: id must be a string or a number";
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"m\"}", -32600, bad_id, NULL);
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"m\"}", -32600, bad_id, NULL);
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"m\"}", -32600, bad_id, NULL);
    check_refused("{\"id\":false}", -32600, bad_id, NULL);

    /* the id is read first, so every later complaint carries it */
    static const char *bad_version = "Invalid Request: \"jsonrpc\" must be \"2.0\"";
    check_refused("{\"id\":7,\"method\":\"m\"}", -32600, bad_version, "7");
    check_refused("{\"jsonrpc\":\"1.0\",\"id\":\"s\",\"method\":\"m\"}", -32600, bad_version, "\"s\"");
    check_refused("{\"jsonrpc\":2.0,\"id\":7,\"method\":\"m\"}", -32600, bad_version, "7");
    check_refused("{\"jsonrpc\":\"2.0 \",\"id\":7,\"method\":\"m\"}", -32600, bad_version, "7");
    check_refused("{\"jsonrpc\":null,\"method\":\"m\"}", -32600, bad_version, NULL);
    check_refused("{\"jsonrpc\":\"2.0\\u0000\",\"id\":7,\"method\":\"m\"}", -32600, bad_version, "7");
    check_refused("{\"id\":null,\"method\":\"m\"}", -32600, bad_version, "null");

    check_refused("{\"jsonrpc\":\"2.0\",\"id\":8}", -32600, "Invalid Request: method is required", "8");
    check_refused("{\"jsonrpc\":\"2.0\"}", -32600, "Invalid Request: method is required", NULL);
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":8,\"params\":{}}", -32600, "Invalid Request: method is required", "8");

    static const char *bad_method = "Invalid Request: method must be a string";
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":5}", -32600, bad_method, "9");
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":null}", -32600, bad_method, "9");
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":[\"m\"]}", -32600, bad_method, "9");
    check_refused("{\"jsonrpc\":\"2.0\",\"method\":{}}", -32600, bad_method, NULL);
    check_refused("{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"a\\u0000b\"}", -32600,
                  "Invalid Request: method contains a NUL character", "9");
}

/* ---- calls ------------------------------------------------------------------------ */

typedef struct delivery {
    int count;
    char *last;
    ecp_call *call;
    void *owner;
} delivery;

static delivery delivered;

static void on_deliver(void *owner, ecp_call *call, const char *response, size_t len, const jw_splices *splices)
{
    assert_true(!splices || splices->count == 0);
    delivered.count++;
    free(delivered.last);
    delivered.last = xstrndup(response, len);
    assert_int_equal(strlen(delivered.last), len);
    delivered.call = call;
    delivered.owner = owner;
    /* the response is one valid JSON object */
    json_doc doc;
    ecp_error err;
    if (json_doc_parse(&doc, response, len, &err) != 0)
        fail_msg("delivered invalid JSON (%s): %s", err.message, delivered.last);
    assert_int_equal(json_type_of(&doc, json_root(&doc)), JSON_OBJECT);
    json_doc_free(&doc);
}

static int reset_delivered(void **state)
{
    (void)state;
    free(delivered.last);
    memset(&delivered, 0, sizeof delivered);
    return 0;
}

static int owner_token;

/* Builds a call as the server does: the call takes the text and the doc. */
static ecp_call *make_call(const char *text)
{
    char *copy = xstrdup(text);
    ecp_call_init init;
    memset(&init, 0, sizeof init);
    if (json_doc_parse(&init.doc, copy, strlen(copy), NULL) != 0)
        fail_msg("'%s' does not parse", text);
    arena scratch = ARENA_INIT;
    rpc_message msg;
    rpc_problem problem;
    if (rpc_message_read(&init.doc, json_root(&init.doc), &scratch, &msg, &problem) != 0)
        fail_msg("'%s' refused: %s", text, problem.message);
    init.text = copy;
    init.len = strlen(copy);
    init.message = json_root(&init.doc);
    init.method = msg.method;
    init.id_raw = msg.id_raw;
    init.id_len = msg.id_len;
    init.params = msg.params;
    init.client_id = 42;
    init.encoding = ECP_ENCODING_UTF32;
    init.deliver = on_deliver;
    init.owner = &owner_token;
    ecp_call *call = ecp_call_create(&init);
    arena_free(&scratch); /* the call copied what it keeps */
    return call;
}

static void check_delivered(int count, const char *response)
{
    assert_int_equal(delivered.count, count);
    if (response) {
        assert_non_null(delivered.last);
        assert_string_equal(delivered.last, response);
        assert_ptr_equal(delivered.owner, &owner_token);
    }
}

static void test_call_result(void **state)
{
    (void)state;
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"doc/get\",\"params\":{\"k\":\"v\"}}");
    /* what a handler can read */
    assert_string_equal(ecp_call_method(call), "doc/get");
    assert_int_equal(ecp_call_client(call), 42);
    assert_int_equal(ecp_call_encoding(call), ECP_ENCODING_UTF32);
    assert_false(ecp_call_is_notification(call));
    size_t id_len;
    const char *id = ecp_call_id_raw(call, &id_len);
    assert_int_equal(id_len, 1);
    assert_memory_equal(id, "7", 1);
    const json_doc *doc = ecp_call_doc(call);
    assert_true(json_string_eq(doc, json_get(doc, ecp_call_params(call), "k"), "v"));
    assert_non_null(arena_alloc(ecp_call_arena(call), 100));
    assert_false(ecp_call_answered(call));
    assert_false(ecp_call_deferred(call));
    assert_false(ecp_call_abandoned(call));
    assert_null(ecp_call_link(call));
    int link;
    ecp_call_set_link(call, &link);
    assert_ptr_equal(ecp_call_link(call), &link);

    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_string(w, "text", "a\"b\n");
    jw_key(w, "list");
    jw_array_begin(w);
    jw_int(w, 1);
    jw_null(w);
    jw_array_end(w);
    jw_object_end(w);
    assert_int_equal(delivered.count, 0);
    ecp_call_finish(call);
    check_delivered(1, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"text\":\"a\\\"b\\n\",\"list\":[1,null]}}");
    assert_ptr_equal(delivered.call, call);
    assert_true(ecp_call_answered(call));
    ecp_call_unref(call); /* the dispatcher's reference: frees it */
    check_delivered(1, NULL);
}

static void test_call_shorthands(void **state)
{
    (void)state;
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"method\":\"m\"}");
    ecp_call_reply_null(call);
    check_delivered(1, "{\"jsonrpc\":\"2.0\",\"id\":\"s-1\",\"result\":null}");
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":1.50,\"method\":\"m\"}");
    ecp_call_reply_raw(call, "[1,{\"a\":true}]", 14);
    check_delivered(2, "{\"jsonrpc\":\"2.0\",\"id\":1.50,\"result\":[1,{\"a\":true}]}");
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":-3,\"method\":\"m\"}");
    ecp_call_reply_success(call, true);
    check_delivered(3, "{\"jsonrpc\":\"2.0\",\"id\":-3,\"result\":{\"success\":true}}");
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\",\"method\":\"m\"}");
    ecp_call_reply_success(call, false);
    check_delivered(4, "{\"jsonrpc\":\"2.0\",\"id\":\"\\u00e9\",\"result\":{\"success\":false}}");
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"m\"}");
    assert_false(ecp_call_is_notification(call));
    ecp_call_reply_null(call);
    check_delivered(5, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":null}");
    ecp_call_unref(call);
}

static void test_call_errors(void **state)
{
    (void)state;
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"m\"}");
    ecp_call_error(call, -32001, "Document not found: %s (%d)", "doc-1", 5);
    check_delivered(1, "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32001,\"message\":\"Document not found: doc-1 (5)\"}}");
    assert_true(ecp_call_answered(call));
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"method\":\"m\"}");
    ecp_call_error_data(call, -32602, "{\"field\":\"line\",\"got\":[1,2]}", "line: %s", "bad \"quote\"\nnewline");
    check_delivered(2, "{\"jsonrpc\":\"2.0\",\"id\":\"e\",\"error\":{\"code\":-32602,\"message\":\"line: bad \\\"quote\\\"\\nnewline\","
                       "\"data\":{\"field\":\"line\",\"got\":[1,2]}}}");
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"m\"}");
    ecp_call_error_data(call, -32603, NULL, "no data");
    check_delivered(3, "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32603,\"message\":\"no data\"}}");
    ecp_call_unref(call);

    /* a message longer than the internal buffer is cut, but still valid JSON */
    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"m\"}");
    char long_text[3000];
    memset(long_text, 'L', sizeof long_text - 1);
    long_text[sizeof long_text - 1] = '\0';
    ecp_call_error(call, -32000, "%s", long_text);
    assert_int_equal(delivered.count, 4);
    assert_non_null(strstr(delivered.last, "\"message\":\"LLL"));
    ecp_call_unref(call);

    /* ecp_write_error_response, for errors without a call */
    buf out = BUF_INIT;
    ecp_write_error_response(&out, NULL, 0, -32700, "Parse error: invalid JSON syntax", NULL);
    assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error: invalid JSON syntax\"}}");
    buf_clear(&out);
    ecp_write_error_response(&out, "\"x\"", 3, -32800, "Request cancelled", "{\"why\":\"user\"}");
    assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32800,\"message\":\"Request cancelled\","
                                  "\"data\":{\"why\":\"user\"}}}");
    buf_clear(&out);
    ecp_write_error_response(&out, "12", 1, -32601, "Method not found: a\tb", NULL);
    assert_string_equal(out.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"Method not found: a\\tb\"}}");
    buf_free(&out);
}

static void test_call_notification(void **state)
{
    (void)state;
    /* a notification's answer goes nowhere: deliver is never called */
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}");
    assert_true(ecp_call_is_notification(call));
    size_t len = 99;
    assert_null(ecp_call_id_raw(call, &len));
    assert_int_equal(len, 0);
    ecp_call_reply_null(call);
    assert_true(ecp_call_answered(call));
    check_delivered(0, NULL);
    ecp_call_unref(call);

    call = make_call("{\"jsonrpc\":\"2.0\",\"method\":\"n\"}");
    ecp_call_error(call, -32602, "x: required string");
    check_delivered(0, NULL);
    ecp_call_unref(call);
}

static void test_call_deferred(void **state)
{
    (void)state;
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"slow\"}");
    /* the handler defers and returns; the dispatcher lets go */
    assert_ptr_equal(ecp_call_defer(call), call);
    assert_true(ecp_call_deferred(call));
    assert_false(ecp_call_answered(call));
    ecp_call_unref(call);
    check_delivered(0, NULL);
    /* later, from the loop: delivered once, and the call is freed (ASan) */
    json_writer *w = ecp_call_result(call);
    jw_int(w, 99);
    ecp_call_finish(call);
    check_delivered(1, "{\"jsonrpc\":\"2.0\",\"id\":11,\"result\":99}");

    /* extra references keep the call alive past its answer */
    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"slow\"}");
    ecp_call_ref(call);
    ecp_call_defer(call);
    ecp_call_unref(call);
    ecp_call_error(call, -32000, "failed");
    check_delivered(2, "{\"jsonrpc\":\"2.0\",\"id\":12,\"error\":{\"code\":-32000,\"message\":\"failed\"}}");
    assert_true(ecp_call_answered(call)); /* still readable: one reference left */
    ecp_call_unref(call);
    check_delivered(2, NULL);
}

static int hook_a, hook_b;
static void on_abandon_a(void *ctx)
{
    assert_ptr_equal(ctx, &hook_a);
    hook_a++;
}
static void on_abandon_b(void *ctx)
{
    assert_ptr_equal(ctx, &hook_b);
    hook_b++;
}

static void test_call_abandoned(void **state)
{
    (void)state;
    hook_a = hook_b = 0;
    ecp_call *call = make_call("{\"jsonrpc\":\"2.0\",\"id\":21,\"method\":\"slow\"}");
    ecp_call_on_abandon(call, on_abandon_a, &hook_a);
    ecp_call_on_abandon(call, on_abandon_b, &hook_b); /* replaces the first */
    ecp_call_defer(call);
    ecp_call_unref(call);
    ecp_call_abandon(call);
    assert_true(ecp_call_abandoned(call));
    assert_int_equal(hook_a, 0);
    assert_int_equal(hook_b, 1);
    ecp_call_abandon(call); /* once only */
    assert_int_equal(hook_b, 1);
    /* the late answer is discarded, and releases the call (ASan: no leak) */
    ecp_call_reply_null(call);
    check_delivered(0, NULL);

    /* abandoned while the handler still runs: nothing is delivered either */
    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"m\"}");
    ecp_call_abandon(call);
    ecp_call_error(call, -32800, "Request cancelled");
    ecp_call_unref(call);
    check_delivered(0, NULL);

    /* an answered call cannot be abandoned: its hook does not run */
    call = make_call("{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"m\"}");
    ecp_call_on_abandon(call, on_abandon_a, &hook_a);
    ecp_call_ref(call);
    ecp_call_reply_null(call);
    check_delivered(1, "{\"jsonrpc\":\"2.0\",\"id\":23,\"result\":null}");
    ecp_call_abandon(call);
    assert_int_equal(hook_a, 0);
    assert_false(ecp_call_abandoned(call));
    ecp_call_unref(call);
    ecp_call_unref(call);
}

/* ---- typed param readers --------------------------------------------------------- */

static const char *PARAMS_MSG =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"documentId\":\"d\\u00e91\",\"line\":\"x\",\"startLine\":-1,"
    "\"count\":3,\"whole\":4.0,\"frac\":1.5,\"flag\":true,\"nothing\":null,\"position\":{\"line\":\"?\",\"character\":2},"
    "\"empty\":{},\"list\":[1,2],\"nul\":\"a\\u0000b\"}}";

/* Runs one reader that must fail, and checks the one error it answers with. */
#define CHECK_ARG_FAILS(call_expr, message)                                                        \
    do {                                                                                           \
        ecp_call *call = make_call(PARAMS_MSG);                                                    \
        json_ref params = ecp_call_params(call);                                                   \
        (void)params;                                                                              \
        int before = delivered.count;                                                              \
        assert_false(call_expr);                                                                   \
        assert_true(ecp_call_answered(call));                                                      \
        check_delivered(before + 1, "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32602,\"message\":\"" message "\"}}"); \
        ecp_call_unref(call);                                                                      \
    } while (0)

static void test_arg_readers_ok(void **state)
{
    (void)state;
    ecp_call *call = make_call(PARAMS_MSG);
    json_ref params = ecp_call_params(call);
    ecp_str s = {"x", 9};
    assert_true(ecp_arg_string(call, params, "documentId", &s));
    assert_string_equal(s.ptr, "d\xC3\xA9" "1");
    assert_int_equal(s.len, 4);
    assert_true(ecp_arg_string(call, params, "nul", &s));
    assert_int_equal(s.len, 3);
    assert_memory_equal(s.ptr, "a\0b", 4);
    assert_true(ecp_arg_string_opt(call, params, "absent", &s));
    assert_null(s.ptr);
    assert_int_equal(s.len, 0);
    s.ptr = "x";
    assert_true(ecp_arg_string_opt(call, params, "nothing", &s));
    assert_null(s.ptr);

    int64_t i = 0;
    assert_true(ecp_arg_int(call, params, "count", &i));
    assert_int_equal(i, 3);
    assert_true(ecp_arg_int(call, params, "whole", &i));
    assert_int_equal(i, 4);
    assert_true(ecp_arg_int(call, params, "startLine", &i));
    assert_int_equal(i, -1);
    assert_true(ecp_arg_int_opt(call, params, "absent", 77, &i));
    assert_int_equal(i, 77);
    assert_true(ecp_arg_int_opt(call, params, "nothing", 78, &i));
    assert_int_equal(i, 78);
    assert_true(ecp_arg_int_opt(call, params, "count", 79, &i));
    assert_int_equal(i, 3);

    size_t z = 0;
    assert_true(ecp_arg_index(call, params, "count", &z));
    assert_int_equal(z, 3);
    assert_true(ecp_arg_index_opt(call, params, "absent", 5, &z));
    assert_int_equal(z, 5);
    assert_true(ecp_arg_index_opt(call, params, "count", 5, &z));
    assert_int_equal(z, 3);

    double d = 0;
    assert_true(ecp_arg_double_opt(call, params, "frac", 0.25, &d));
    assert_true(d == 1.5);
    assert_true(ecp_arg_double_opt(call, params, "count", 0.25, &d));
    assert_true(d == 3.0);
    assert_true(ecp_arg_double_opt(call, params, "absent", 0.25, &d));
    assert_true(d == 0.25);

    bool b = false;
    assert_true(ecp_arg_bool_opt(call, params, "flag", false, &b));
    assert_true(b);
    assert_true(ecp_arg_bool_opt(call, params, "absent", true, &b));
    assert_true(b);
    assert_true(ecp_arg_bool_opt(call, params, "nothing", false, &b));
    assert_false(b);

    json_ref r = 123;
    assert_true(ecp_arg_object(call, params, "position", &r));
    assert_int_equal(r, json_get(ecp_call_doc(call), params, "position"));
    /* nested fields are named by their path; the last part is the key */
    assert_true(ecp_arg_int(call, r, "position.character", &i));
    assert_int_equal(i, 2);
    assert_true(ecp_arg_object_opt(call, params, "absent", &r));
    assert_int_equal(r, JSON_NO_REF);
    assert_true(ecp_arg_array(call, params, "list", &r));
    assert_int_equal(json_length(ecp_call_doc(call), r), 2);
    assert_true(ecp_arg_array_opt(call, params, "nothing", &r));
    assert_int_equal(r, JSON_NO_REF);

    /* none of this answered the call */
    assert_false(ecp_call_answered(call));
    check_delivered(0, NULL);
    ecp_call_reply_null(call);
    ecp_call_unref(call);
}

static void test_arg_readers_errors(void **state)
{
    (void)state;
    ecp_str s;
    int64_t i;
    size_t z;
    double d;
    bool b;
    json_ref r;
    CHECK_ARG_FAILS(ecp_arg_string(call, params, "missing", &s), "missing: required string");
    CHECK_ARG_FAILS(ecp_arg_string(call, params, "nothing", &s), "nothing: required string");
    CHECK_ARG_FAILS(ecp_arg_string(call, JSON_NO_REF, "documentId", &s), "documentId: required string");
    CHECK_ARG_FAILS(ecp_arg_string(call, params, "count", &s), "count: expected string, got number");
    CHECK_ARG_FAILS(ecp_arg_string_opt(call, params, "list", &s), "list: expected string, got array");
    CHECK_ARG_FAILS(ecp_arg_int(call, params, "line", &i), "line: expected integer, got string");
    CHECK_ARG_FAILS(ecp_arg_int(call, params, "frac", &i), "frac: expected integer, got number");
    CHECK_ARG_FAILS(ecp_arg_int(call, params, "lineCount", &i), "lineCount: required integer");
    CHECK_ARG_FAILS(ecp_arg_int_opt(call, params, "flag", 0, &i), "flag: expected integer, got boolean");
    CHECK_ARG_FAILS(ecp_arg_index(call, params, "startLine", &z), "startLine: must be >= 0, got -1");
    CHECK_ARG_FAILS(ecp_arg_index_opt(call, params, "startLine", 0, &z), "startLine: must be >= 0, got -1");
    CHECK_ARG_FAILS(ecp_arg_index(call, params, "empty", &z), "empty: expected integer, got object");
    CHECK_ARG_FAILS(ecp_arg_index(call, params, "absent", &z), "absent: required integer");
    CHECK_ARG_FAILS(ecp_arg_double_opt(call, params, "documentId", 0, &d), "documentId: expected number, got string");
    CHECK_ARG_FAILS(ecp_arg_bool_opt(call, params, "count", false, &b), "count: expected boolean, got number");
    CHECK_ARG_FAILS(ecp_arg_object(call, params, "list", &r), "list: expected object, got array");
    CHECK_ARG_FAILS(ecp_arg_object(call, params, "absent", &r), "absent: required object");
    CHECK_ARG_FAILS(ecp_arg_object_opt(call, params, "flag", &r), "flag: expected object, got boolean");
    CHECK_ARG_FAILS(ecp_arg_array(call, params, "nothing", &r), "nothing: required array");
    CHECK_ARG_FAILS(ecp_arg_array_opt(call, params, "empty", &r), "empty: expected array, got object");
    /* nested: the path names the field */
    CHECK_ARG_FAILS((ecp_arg_object(call, params, "position", &r) && ecp_arg_int(call, r, "position.line", &i)),
                    "position.line: expected integer, got string");
    CHECK_ARG_FAILS((ecp_arg_object(call, params, "empty", &r) && ecp_arg_int(call, r, "position.line", &i)),
                    "position.line: required integer");
    CHECK_ARG_FAILS(ecp_arg_int(call, json_get(ecp_call_doc(call), params, "empty"), "range.start.line", &i),
                    "range.start.line: required integer");
}

/* ---- the bus -------------------------------------------------------------------------- */

static int bus_calls;
static uint64_t bus_client;
static char bus_method[64];
static buf bus_out;

static void bus_notify(void *owner, uint64_t client_id, const char *method, ecp_render_fn render, void *ctx)
{
    assert_ptr_equal(owner, &owner_token);
    bus_calls++;
    bus_client = client_id;
    snprintf(bus_method, sizeof bus_method, "%s", method);
    json_writer w;
    buf_clear(&bus_out);
    jw_init(&w, &bus_out);
    render(ctx, ECP_ENCODING_UTF16, &w);
}

static void render_params(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    jw_object_begin(w);
    jw_key_string(w, "v", ctx);
    jw_key_string(w, "enc", ecp_encoding_name(enc));
    jw_object_end(w);
}

static void test_bus(void **state)
{
    (void)state;
    static char one[] = "one", two[] = "two", three[] = "three", four[] = "four";
    ecp_bus bus = {.notify = bus_notify, .owner = &owner_token};
    bus_calls = 0;
    ecp_bus_notify(&bus, "document/didChange", render_params, one);
    assert_int_equal(bus_calls, 1);
    assert_int_equal(bus_client, 0);
    assert_string_equal(bus_method, "document/didChange");
    assert_string_equal(bus_out.data, "{\"v\":\"one\",\"enc\":\"utf-16\"}");
    ecp_bus_notify_client(&bus, 9, "file/didChange", render_params, two);
    assert_int_equal(bus_calls, 2);
    assert_int_equal(bus_client, 9);
    assert_string_equal(bus_method, "file/didChange");
    assert_string_equal(bus_out.data, "{\"v\":\"two\",\"enc\":\"utf-16\"}");
    /* client 0 is the server itself: nobody to send to */
    ecp_bus_notify_client(&bus, 0, "file/didChange", render_params, three);
    assert_int_equal(bus_calls, 2);
    /* no bus, or a bus without a sink: nothing happens */
    ecp_bus_notify(NULL, "x/y", render_params, four);
    ecp_bus_notify_client(NULL, 3, "x/y", render_params, four);
    ecp_bus empty = {0};
    ecp_bus_notify(&empty, "x/y", render_params, four);
    assert_int_equal(bus_calls, 2);
    buf_free(&bus_out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_kinds),
        cmocka_unit_test(test_read_params),
        cmocka_unit_test(test_read_refusals),
        cmocka_unit_test_setup_teardown(test_call_result, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_call_shorthands, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_call_errors, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_call_notification, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_call_deferred, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_call_abandoned, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_arg_readers_ok, reset_delivered, reset_delivered),
        cmocka_unit_test_setup_teardown(test_arg_readers_errors, reset_delivered, reset_delivered),
        cmocka_unit_test(test_bus),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
