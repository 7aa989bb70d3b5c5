/* Unit tests of core/peer.h: framing both ways, ids, answers out of order,
 * timeouts, cancellation, closing with requests pending (each completes once),
 * malformed and huge input answered without harm, a handler that answers
 * later, a peer freed from inside its own callbacks, and the gate that holds
 * what is sent until a handshake is done. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "error.h"
#include "peer.h"

typedef struct answer_log {
    int calls;
    int status;
    int64_t id;
    int64_t code;
    char text[256]; /* the result's JSON, or the message */
} answer_log;

typedef struct fixture {
    uv_loop_t loop;
    ecp_peer *peer;
    buf written;                 /* everything the peer wrote */
    int64_t last_request_id;     /* of the last write */
    int writes;
    ecp_peer_request *held;      /* a request answered later */
    char notified[128];
    int problems;
    ecp_peer_problem last_problem;
    bool free_in_callback;
} fixture;

static void on_write(void *ctx, const char *data, size_t len, int64_t request_id)
{
    fixture *f = ctx;
    buf_append(&f->written, data, len);
    f->last_request_id = request_id;
    f->writes++;
}

static void on_request(void *ctx, ecp_peer_request *r, const char *method, const json_doc *d, json_ref params)
{
    fixture *f = ctx;
    (void)d, (void)params;
    if (strcmp(method, "later") == 0)
        f->held = r;
    else if (strcmp(method, "echo") == 0)
        ecp_peer_respond(r, "{\"ok\":true}");
    else
        ecp_peer_respond_error(r, -32601, "Method not found: %s", method);
}

static void on_notification(void *ctx, const char *method, const json_doc *d, json_ref params)
{
    fixture *f = ctx;
    (void)d, (void)params;
    snprintf(f->notified, sizeof f->notified, "%s", method);
}

static void on_problem(void *ctx, ecp_peer_problem what, const char *detail)
{
    fixture *f = ctx;
    (void)detail;
    f->problems++;
    f->last_problem = what;
}

static void record(void *ctx, int64_t id, const ecp_peer_answer *a)
{
    answer_log *log = ctx;
    log->calls++;
    log->status = a->status;
    log->id = id;
    log->code = a->code;
    if (a->status == 0 && a->result != JSON_NO_REF) {
        size_t n;
        const char *raw = json_raw(a->doc, a->result, &n);
        snprintf(log->text, sizeof log->text, "%.*s", (int)n, raw);
    } else {
        snprintf(log->text, sizeof log->text, "%s", a->message);
    }
}

static fixture *make(ecp_peer_options options)
{
    fixture *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    ecp_peer_handlers h = {.ctx = f, .write = on_write, .on_request = on_request,
                           .on_notification = on_notification, .on_problem = on_problem};
    f->peer = ecp_peer_new(&f->loop, &options, &h);
    return f;
}

static void finish(fixture *f)
{
    ecp_peer_free(f->peer);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    buf_free(&f->written);
    free(f);
}

static void feed(fixture *f, const char *s) { ecp_peer_feed(f->peer, s, strlen(s)); }

static bool wrote(fixture *f, const char *s)
{
    return f->written.data && strstr(f->written.data, s) != NULL;
}

static void test_newline_both_ways(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    answer_log a = {0};
    int64_t id = ecp_peer_call(f->peer, "ping", "{}", 0, record, &a);
    assert_int_equal(id, 1);
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{}}\n");
    assert_int_equal(f->last_request_id, 1);
    /* the answer split across reads, with a CRLF */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,");
    assert_int_equal(a.calls, 0);
    feed(f, "\"result\":[1,2]}\r\n");
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, 0);
    assert_string_equal(a.text, "[1,2]");
    assert_int_equal(ecp_peer_pending_count(f->peer), 0);
    finish(f);
}

static void test_content_length_both_ways(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_CONTENT_LENGTH});
    answer_log a = {0};
    ecp_peer_call(f->peer, "x", NULL, 0, record, &a);
    const char *sent = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"x\"}";
    char expect[128];
    snprintf(expect, sizeof expect, "Content-Length: %zu\r\n\r\n%s", strlen(sent), sent);
    assert_string_equal(f->written.data, expect);
    feed(f, "Content-Length: 35\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":7}");
    assert_int_equal(a.calls, 1);
    assert_string_equal(a.text, "7");
    finish(f);
}

static void test_framing_follows_the_other_side(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_UNKNOWN});
    feed(f, "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\"}");
    assert_non_null(strstr(f->written.data, "Content-Length: "));
    assert_true(wrote(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"ok\":true}}"));
    finish(f);
}

static void test_answers_out_of_order(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    answer_log a1 = {0}, a2 = {0}, a3 = {0};
    int64_t i1 = ecp_peer_call(f->peer, "a", NULL, 0, record, &a1);
    int64_t i2 = ecp_peer_call(f->peer, "b", NULL, 0, record, &a2);
    int64_t i3 = ecp_peer_call(f->peer, "c", NULL, 0, record, &a3);
    assert_true(i1 < i2 && i2 < i3);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":\"three\"}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32000,\"message\":\"no\"}}\n");
    assert_int_equal(a3.calls, 1);
    assert_string_equal(a3.text, "\"three\"");
    assert_int_equal(a1.calls, 1);
    assert_int_equal(a1.code, -32000);
    assert_string_equal(a1.text, "no");
    assert_int_equal(a2.calls, 0);
    /* an answer given twice, or to nothing of ours, is a stray */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":1}\n");
    assert_int_equal(a3.calls, 1);
    assert_int_equal(f->last_problem, ECP_PEER_STRAY);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":null}\n");
    assert_int_equal(a2.calls, 1);
    assert_string_equal(a2.text, "null");
    finish(f);
}

static void test_timeout(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    answer_log slow = {0}, fast = {0}, forever = {0};
    ecp_peer_call(f->peer, "slow", NULL, 30, record, &slow);
    ecp_peer_call(f->peer, "fast", NULL, 10, record, &fast);
    ecp_peer_call(f->peer, "forever", NULL, 0, record, &forever);
    uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(fast.calls, 1);
    assert_int_equal(fast.status, ECP_ETIMEDOUT);
    assert_string_equal(fast.text, "no answer to fast within 10 ms");
    assert_true(wrote(f, "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":2}}"));
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the timer stops once nothing is timed */
    assert_int_equal(slow.calls, 1);
    assert_int_equal(slow.status, ECP_ETIMEDOUT);
    assert_int_equal(forever.calls, 0);
    /* an answer after the timeout is dropped */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n");
    assert_int_equal(slow.calls, 1);
    finish(f);
    assert_int_equal(forever.calls, 1);
}

static int64_t cancelled_id;
static void custom_cancel(void *ctx, ecp_peer *peer, int64_t id)
{
    (void)ctx;
    cancelled_id = id;
    char params[64];
    snprintf(params, sizeof params, "{\"requestId\":%lld}", (long long)id);
    ecp_peer_notify(peer, "notifications/cancelled", params);
}

static void test_cancel(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    answer_log a = {0};
    int64_t id = ecp_peer_call(f->peer, "long", NULL, 0, record, &a);
    assert_true(ecp_peer_cancel(f->peer, id));
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, ECP_ECANCELED);
    assert_true(wrote(f, "\"method\":\"$/cancelRequest\",\"params\":{\"id\":1}"));
    assert_false(ecp_peer_cancel(f->peer, id));
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n");
    assert_int_equal(a.calls, 1);
    finish(f);

    /* a hook of the protocol's own */
    f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    ecp_peer_handlers h = {.ctx = f, .write = on_write, .send_cancel = custom_cancel};
    f->peer = ecp_peer_new(&f->loop, &(ecp_peer_options){.framing = FRAMING_NEWLINE}, &h);
    answer_log b = {0};
    id = ecp_peer_call(f->peer, "tools/call", NULL, 0, record, &b);
    ecp_peer_cancel(f->peer, id);
    assert_int_equal(cancelled_id, id);
    assert_true(wrote(f, "\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":1}"));
    assert_int_equal(b.status, ECP_ECANCELED);
    finish(f);
}

static void test_close_completes_pending_once(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    answer_log a = {0}, b = {0};
    ecp_peer_call(f->peer, "a", NULL, 1000, record, &a);
    ecp_peer_call(f->peer, "b", NULL, 0, record, &b);
    ecp_peer_close(f->peer, "the server exited");
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
    assert_int_equal(a.status, ECP_EIO);
    assert_string_equal(b.text, "the server exited");
    assert_false(ecp_peer_is_open(f->peer));
    assert_int_equal(ecp_peer_call(f->peer, "c", NULL, 0, record, &a), 0);
    assert_false(ecp_peer_notify(f->peer, "n", NULL));
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n");
    finish(f);
    assert_int_equal(a.calls, 1);
    assert_int_equal(b.calls, 1);
}

static void free_peer(void *ctx, int64_t id, const ecp_peer_answer *a)
{
    fixture *f = ctx;
    (void)id, (void)a;
    f->writes = -1000;
    ecp_peer_free(f->peer);
}

static void test_free_from_a_callback(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    ecp_peer_call(f->peer, "a", NULL, 0, free_peer, f);
    ecp_peer_call(f->peer, "b", NULL, 0, free_peer, f);
    /* two answers in one read: the first frees the peer, the second is not read */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":1}\n");
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    buf_free(&f->written);
    free(f);
}

static void test_requests_and_notifications(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE, .answer_invalid = true});
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"echo\",\"params\":{}}\n");
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"ok\":true}}\n");
    buf_clear(&f->written);
    feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":[1]}\n");
    assert_string_equal(f->notified, "note");
    assert_int_equal(f->written.len, 0);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"nope\"}\n");
    assert_string_equal(f->written.data,
                        "{\"jsonrpc\":\"2.0\",\"id\":5,\"error\":{\"code\":-32601,\"message\":\"Method not found: nope\"}}\n");
    finish(f);
}

static void test_handler_answers_later(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"later\"}\n");
    assert_non_null(f->held);
    assert_null(f->written.data);
    assert_string_equal(ecp_peer_request_id(f->held), "7");
    assert_string_equal(ecp_peer_request_method(f->held), "later");
    /* another request is served meanwhile */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"echo\"}\n");
    assert_true(wrote(f, "\"id\":8,\"result\""));
    ecp_peer_respond(f->held, "42");
    assert_true(wrote(f, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":42}\n"));
    /* one never answered is released with the peer */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"later\"}\n");
    finish(f);
}

static void test_malformed_input(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE, .answer_invalid = true,
                                         .params_object_only = true});
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"{\"jsonrpc\":", "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,\"message\":\"Parse error"},
        {"[1,2]", "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"Invalid request: a message is a JSON object\"}}"},
        {"{\"jsonrpc\":\"2.0\"}", "\"code\":-32600,\"message\":\"Invalid request: no method\""},
        {"{\"id\":{},\"method\":\"x\"}", "\"code\":-32600,\"message\":\"Invalid request: id must be a string or a number\""},
        {"{\"id\":3,\"method\":7}", "{\"jsonrpc\":\"2.0\",\"id\":3,\"error\":{\"code\":-32600,\"message\":\"Invalid request: method must be a string\"}}"},
        {"{\"id\":4,\"method\":\"echo\",\"params\":[1]}", "{\"jsonrpc\":\"2.0\",\"id\":4,\"error\":{\"code\":-32602,\"message\":\"params must be an object\"}}"},
        {"\x01\xff garbage", "\"code\":-32700"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        buf_clear(&f->written);
        feed(f, cases[i].in);
        feed(f, "\n");
        assert_non_null(f->written.data);
        assert_non_null(strstr(f->written.data, cases[i].out));
    }
    /* deep nesting is refused, not recursed into */
    buf deep = BUF_INIT;
    for (int i = 0; i < 100000; i++)
        buf_push(&deep, '[');
    buf_push(&deep, '\n');
    buf_clear(&f->written);
    ecp_peer_feed(f->peer, deep.data, deep.len);
    assert_true(wrote(f, "\"code\":-32700"));
    buf_free(&deep);
    /* still serving */
    buf_clear(&f->written);
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"echo\"}\n");
    assert_true(wrote(f, "\"result\":{\"ok\":true}"));
    finish(f);

    /* a client's peer stays quiet about what it cannot read */
    f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    feed(f, "nonsense\n");
    assert_null(f->written.data);
    assert_int_equal(f->last_problem, ECP_PEER_MALFORMED);
    finish(f);
}

static void test_huge_input(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE, .max_message = 1024, .answer_invalid = true});
    char chunk[4096];
    memset(chunk, 'x', sizeof chunk);
    for (int i = 0; i < 1024; i++) /* 4 MiB in one line, fed in pieces */
        ecp_peer_feed(f->peer, chunk, sizeof chunk);
    assert_int_equal(f->last_problem, ECP_PEER_OVERSIZED);
    assert_true(wrote(f, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32600,\"message\":\"a message is longer than 1024 bytes\"}}"));
    feed(f, "\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"echo\"}\n");
    assert_true(wrote(f, "\"id\":2,\"result\""));
    finish(f);

    /* Content-Length announcing more than the limit: skipped, the next message read */
    f = make((ecp_peer_options){.framing = FRAMING_CONTENT_LENGTH, .max_message = 64});
    feed(f, "Content-Length: 100\r\n\r\n");
    memset(chunk, ' ', 100);
    ecp_peer_feed(f->peer, chunk, 100);
    assert_int_equal(f->last_problem, ECP_PEER_OVERSIZED);
    feed(f, "Content-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"echo\"}");
    assert_true(wrote(f, "\"id\":9,\"result\""));
    /* a header that cannot be read stops the decoding */
    feed(f, "Content-Length: nine\r\n\r\n");
    assert_int_equal(f->last_problem, ECP_PEER_BROKEN);
    finish(f);
}

static void test_whole_messages(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.messages = true, .max_message = 256});
    answer_log a = {0};
    int64_t id = ecp_peer_call(f->peer, "initialize", "{}", 0, record, &a);
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}");
    assert_int_equal(f->last_request_id, id);
    const char *answer = "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}";
    ecp_peer_feed_message(f->peer, answer, strlen(answer));
    assert_int_equal(a.calls, 1);
    answer_log b = {0};
    id = ecp_peer_call(f->peer, "tools/list", NULL, 0, record, &b);
    assert_true(ecp_peer_fail_request(f->peer, id, "HTTP 500"));
    assert_int_equal(b.status, ECP_EIO);
    assert_string_equal(b.text, "HTTP 500");
    finish(f);
}

static void test_last_line_without_newline(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    feed(f, "{\"jsonrpc\":\"2.0\",\"method\":\"bye\"}");
    assert_string_equal(f->notified, "");
    ecp_peer_feed_end(f->peer);
    assert_string_equal(f->notified, "bye");
    finish(f);
}

/* Behind the closed gate, requests and notifications wait in order with their
 * timeouts running; the handshake and the answers to the other side pass. */
static void test_gate_holds_all_but_the_handshake_and_answers(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_NEWLINE});
    ecp_peer_gate_close(f->peer);
    answer_log early = {0}, timed = {0}, init = {0};
    int64_t early_id = ecp_peer_call(f->peer, "early", "{}", 0, record, &early);
    assert_int_equal(early_id, 1);
    assert_true(ecp_peer_notify(f->peer, "note", "{\"n\":1}"));
    ecp_peer_call(f->peer, "timed", NULL, 30, record, &timed);
    assert_int_equal(f->writes, 0);
    int64_t init_id = ecp_peer_call_past_gate(f->peer, "initialize", "{}", 0, record, &init);
    assert_int_equal(init_id, 3);
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}\n");
    assert_int_equal(f->last_request_id, 3);
    /* the other side asks something before it answers: the answer passes */
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"method\":\"echo\"}\n");
    assert_true(wrote(f, "{\"jsonrpc\":\"2.0\",\"id\":\"q\",\"result\":{\"ok\":true}}\n"));
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n");
    assert_int_equal(init.calls, 1);
    assert_false(wrote(f, "early"));
    /* a timeout runs behind the gate too, and its cancel notice waits there as well */
    uv_run(&f->loop, UV_RUN_ONCE);
    while (!timed.calls)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(timed.status, ECP_ETIMEDOUT);
    assert_false(wrote(f, "cancelRequest"));
    assert_true(ecp_peer_notify_past_gate(f->peer, "initialized", "{}"));
    buf_clear(&f->written);
    ecp_peer_gate_open(f->peer);
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"early\",\"params\":{}}\n"
                                         "{\"jsonrpc\":\"2.0\",\"method\":\"note\",\"params\":{\"n\":1}}\n"
                                         "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"timed\"}\n"
                                         "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":2}}\n");
    assert_int_equal(f->last_request_id, 0);
    /* open, it holds nothing */
    buf_clear(&f->written);
    ecp_peer_notify(f->peer, "after", NULL);
    assert_string_equal(f->written.data, "{\"jsonrpc\":\"2.0\",\"method\":\"after\"}\n");
    feed(f, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":7}\n");
    assert_int_equal(early.calls, 1);
    assert_string_equal(early.text, "7");
    finish(f);
}

/* What waits behind the gate goes nowhere once the peer closes, and a free with it waiting frees it. */
static void test_gate_closed_at_the_end(void **state)
{
    (void)state;
    fixture *f = make((ecp_peer_options){.framing = FRAMING_CONTENT_LENGTH});
    ecp_peer_gate_close(f->peer);
    answer_log a = {0};
    ecp_peer_call(f->peer, "waits", "[1]", 0, record, &a);
    ecp_peer_notify(f->peer, "also", NULL);
    ecp_peer_close(f->peer, "gone");
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, ECP_EIO);
    ecp_peer_gate_open(f->peer);
    assert_int_equal(f->writes, 0);
    finish(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newline_both_ways),
        cmocka_unit_test(test_content_length_both_ways),
        cmocka_unit_test(test_framing_follows_the_other_side),
        cmocka_unit_test(test_answers_out_of_order),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_close_completes_pending_once),
        cmocka_unit_test(test_free_from_a_callback),
        cmocka_unit_test(test_requests_and_notifications),
        cmocka_unit_test(test_handler_answers_later),
        cmocka_unit_test(test_malformed_input),
        cmocka_unit_test(test_huge_input),
        cmocka_unit_test(test_whole_messages),
        cmocka_unit_test(test_last_line_without_newline),
        cmocka_unit_test(test_gate_holds_all_but_the_handshake_and_answers),
        cmocka_unit_test(test_gate_closed_at_the_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
