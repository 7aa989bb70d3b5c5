/* Unit tests of the answers core/rpc_reply.c writes for the adapters: flat
 * objects of fields (for results and notifications), lists under one key,
 * errors whose data is built in place, and free_each. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "call.h"
#include "jsonrpc.h"
#include "rpc.h"

typedef struct delivered {
    int count;
    char *last;
} delivered;

static void on_deliver(void *owner, ecp_call *call, const char *response, size_t len, const jw_splices *splices)
{
    (void)splices;
    (void)call;
    delivered *d = owner;
    d->count++;
    free(d->last);
    d->last = strndup(response, len);
}

/* A call of id 7, as the server would make it, whose answer lands in out. */
static ecp_call *make_call(delivered *out)
{
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"test/reply\",\"params\":{}}";
    char *copy = xstrdup(text);
    ecp_call_init init;
    memset(&init, 0, sizeof init);
    assert_int_equal(json_doc_parse(&init.doc, copy, strlen(copy), NULL), 0);
    arena scratch = ARENA_INIT;
    rpc_message msg;
    rpc_problem problem;
    assert_int_equal(rpc_message_read(&init.doc, json_root(&init.doc), &scratch, &msg, &problem), 0);
    init.text = copy;
    init.len = strlen(copy);
    init.message = json_root(&init.doc);
    init.method = msg.method;
    init.id_raw = msg.id_raw;
    init.id_len = msg.id_len;
    init.params = msg.params;
    init.client_id = 1;
    init.deliver = on_deliver;
    init.owner = out;
    ecp_call *call = ecp_call_create(&init);
    arena_free(&scratch);
    return call;
}

/* Answers a fresh call with answer and returns what the client got. */
static char *answer_of(void (*answer)(ecp_call *call))
{
    delivered out = {0};
    ecp_call *call = make_call(&out);
    answer(call);
    ecp_call_unref(call);
    assert_int_equal(out.count, 1);
    return out.last;
}

static void reply_fields(ecp_call *call)
{
    ecp_call_reply_fields(call, ECP_FIELDS(ECP_INT_FIELD("words", 3), ECP_BOOL_FIELD("exact", true),
                                           ECP_STRING_FIELD("name", NULL), ECP_STRING_FIELD_OPT("status", NULL),
                                           ECP_STRING_FIELD_OPT("title", "a \"b\""), ECP_TRUE_FIELD_OPT("stale", false),
                                           ECP_TRUE_FIELD_OPT("moved", true)));
}

static void test_fields_make_one_flat_object(void **state)
{
    (void)state;
    char *got = answer_of(reply_fields);
    /* a NULL string is null, an optional one is left out, and so is a false optional flag */
    assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"words\":3,\"exact\":true,\"name\":null,"
                             "\"title\":\"a \\\"b\\\"\",\"moved\":true}}");
    free(got);
}

static void test_fields_render_a_notification(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    ecp_render_fields(ECP_FIELDS(ECP_STRING_FIELD("terminalId", "t-1"), ECP_INT_FIELD("exitCode", -1)),
                      ECP_ENCODING_UTF16, &w);
    assert_string_equal(out.data, "{\"terminalId\":\"t-1\",\"exitCode\":-1}");
    buf_free(&out);
}

static void reply_list(ecp_call *call)
{
    json_writer *w = ecp_call_result_list(call, "items");
    jw_int(w, 1);
    jw_int(w, 2);
    ecp_call_finish_list(call, w);
}

static void reply_empty_list(ecp_call *call) { ecp_call_finish_list(call, ecp_call_result_list(call, "items")); }

static void test_a_list_under_one_key(void **state)
{
    (void)state;
    char *got = answer_of(reply_list);
    assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"items\":[1,2]}}");
    free(got);
    got = answer_of(reply_empty_list);
    assert_string_equal(got, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"items\":[]}}");
    free(got);
}

static void error_keyed(ecp_call *call)
{
    ecp_call_error_keyed(call, -32700, "terminalId", "t-9", "Terminal not found: %s", "t-9");
}

static void test_an_error_keyed_by_what_was_not_found(void **state)
{
    (void)state;
    char *got = answer_of(error_keyed);
    assert_non_null(strstr(got, "\"code\":-32700"));
    assert_non_null(strstr(got, "\"message\":\"Terminal not found: t-9\""));
    assert_non_null(strstr(got, "\"data\":{\"terminalId\":\"t-9\"}"));
    free(got);
}

static void error_with_data(ecp_call *call)
{
    ecp_error_data d;
    json_writer *w = ecp_error_data_begin(&d);
    jw_key_string(w, "uri", "file:///a");
    jw_key_int(w, "position", 4);
    ecp_call_error_with(call, -32100, &d, "No such file: %s", "/a");
}

static void test_an_error_with_data_built_in_place(void **state)
{
    (void)state;
    char *got = answer_of(error_with_data);
    assert_non_null(strstr(got, "\"code\":-32100"));
    assert_non_null(strstr(got, "\"message\":\"No such file: /a\""));
    assert_non_null(strstr(got, "\"data\":{\"uri\":\"file:///a\",\"position\":4}"));
    free(got);
}

/* Under the sanitizer builds a pointer left out would be a leak. */
static void test_free_each_frees_every_pointer(void **state)
{
    (void)state;
    char *a = xstrdup("a"), *b = NULL, *c = xmalloc(100);
    free_each(a, b, c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields_make_one_flat_object),
        cmocka_unit_test(test_fields_render_a_notification),
        cmocka_unit_test(test_a_list_under_one_key),
        cmocka_unit_test(test_an_error_keyed_by_what_was_not_found),
        cmocka_unit_test(test_an_error_with_data_built_in_place),
        cmocka_unit_test(test_free_each_frees_every_pointer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
