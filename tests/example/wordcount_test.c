/* The example service through a real server: its result, its params checked
 * by the router from the signature, a file error, and the loop free while a
 * big file is counted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "rpc.h"
#include "test_client.h"
#include "wordcount/adapter.h"
#include "wordcount/interface.h"

typedef struct fixture {
    char dir[32];
    test_server *server;
    ecp_pool *pool;
    wordcount_service *svc;
    test_client *client;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/wordcount-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->server = test_server_new(NULL);
    f->pool = ecp_pool_new(test_server_loop(f->server), NULL);
    f->svc = wordcount_service_new(f->pool);
    ecp_adapter adapter;
    wordcount_adapter_init(&adapter, f->svc);
    test_server_register(f->server, &adapter);
    f->client = test_client_connect(f->server);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    test_client_disconnect(f->client);
    wordcount_service_free(f->svc);
    ecp_pool_free(f->pool);
    test_server_free(f->server);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void write_file(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static void expect_error(fixture *f, const char *params, int code, const char *message)
{
    char *out = NULL;
    assert_int_equal(test_client_request(f->client, "wordcount/count", params, &out), code);
    char *got = test_json_string(out, "message");
    assert_string_equal(got, message);
    free(got);
    free(out);
}

static void counts_words_and_lines(void **state)
{
    fixture *f = *state;
    char path[64];
    snprintf(path, sizeof path, "%s/a.txt", f->dir);
    write_file(path, "one two\n\tthree  \n\nfour");
    char *out = NULL;
    assert_int_equal(test_client_requestf(f->client, "wordcount/count", &out, "{\"uri\":\"file://%s\"}", path), 0);
    int64_t words = 0, lines = 0;
    assert_true(test_json_int(out, "words", &words));
    assert_true(test_json_int(out, "lines", &lines));
    assert_int_equal(words, 4);
    assert_int_equal(lines, 3);
    assert_int_equal(test_json_length(out, ""), 2);
    free(out);
}

/* The router checks params against the table's signature before the
 * handler runs (its readers word a refusal the same way, by design). */
static void the_signature_refuses_a_missing_or_mistyped_uri(void **state)
{
    fixture *f = *state;
    char *out = NULL;
    assert_int_equal(test_client_request(f->client, "ecp/methods", NULL, &out), 0);
    assert_non_null(strstr(out, "\"name\":\"wordcount/count\""));
    assert_non_null(strstr(out, "\"params\":\"{uri: string}\""));
    free(out);
    expect_error(f, "{}", -32602, "uri: required string");
    expect_error(f, "{\"uri\":7}", -32602, "uri: expected string, got number");
    expect_error(f, "{\"uri\":null}", -32602, "uri: required string");
}

static void a_file_error_has_its_code(void **state)
{
    fixture *f = *state;
    char params[96];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s/missing\"}", f->dir);
    char *out = NULL;
    assert_int_equal(test_client_request(f->client, "wordcount/count", params, &out), -32100);
    free(out);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", f->dir);
    assert_int_equal(test_client_request(f->client, "wordcount/count", params, &out), -32102);
    free(out);
}

/* A FIFO without a writer would read as an empty file and a device might
 * never end: only a regular file is counted. */
static void a_file_that_is_not_regular_is_refused(void **state)
{
    fixture *f = *state;
    char path[64];
    snprintf(path, sizeof path, "%s/fifo", f->dir);
    assert_int_equal(mkfifo(path, 0600), 0);
    char *out = NULL;
    assert_int_equal(test_client_requestf(f->client, "wordcount/count", &out, "{\"uri\":\"file://%s\"}", path), -32603);
    char *message = test_json_string(out, "message");
    char want[96];
    snprintf(want, sizeof want, "Not a regular file: %s", path);
    assert_string_equal(message, want);
    free(message);
    free(out);
}

/* A URI that names no file is refused by the core's reader as the file
 * service refuses it: its code, the reader's message, data {uri, code}. */
static void a_uri_that_names_no_file_is_a_file_error(void **state)
{
    fixture *f = *state;
    static const struct {
        const char *params, *uri, *code_name, *message;
        int code;
    } cases[] = {
        {"{\"uri\":\"relative/a.txt\"}", "relative/a.txt", "INVALID_URI",
         "not an absolute path or URI: relative/a.txt", -32106},
        {"{\"uri\":\"file://otherhost/etc/passwd\"}", "file://otherhost/etc/passwd", "INVALID_URI",
         "file URI names a remote host: otherhost", -32106},
        {"{\"uri\":\"http://example.com/a.txt\"}", "http://example.com/a.txt", "NO_PROVIDER",
         "no provider for scheme 'http'", -32107},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = NULL;
        assert_int_equal(test_client_request(f->client, "wordcount/count", cases[i].params, &out), cases[i].code);
        char *message = test_json_string(out, "message");
        char *uri = test_json_string(out, "data.uri");
        char *code_name = test_json_string(out, "data.code");
        assert_non_null(uri);
        assert_non_null(code_name);
        assert_string_equal(message, cases[i].message);
        assert_string_equal(uri, cases[i].uri);
        assert_string_equal(code_name, cases[i].code_name);
        free(message);
        free(uri);
        free(code_name);
        free(out);
    }
}

/* A sparse file of 16 GiB takes no disk and seconds to read: the count is
 * still running when the ping answers, and its cancel ends it. */
static void the_loop_answers_while_a_big_file_is_counted(void **state)
{
    fixture *f = *state;
    char path[64], params[96];
    snprintf(path, sizeof path, "%s/big", f->dir);
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    assert_int_equal(ftruncate(fileno(fp), (off_t)16 << 30), 0);
    fclose(fp);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t id = test_client_send(f->client, "wordcount/count", params);
    char *out = NULL;
    assert_int_equal(test_client_request(f->client, "ecp/ping", NULL, &out), 0);
    free(out);
    assert_int_equal(test_client_wait_response(f->client, id, 0, &out), INT32_MIN);
    char cancel[48];
    snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)id);
    test_client_notify(f->client, "$/cancelRequest", cancel);
    assert_int_equal(test_client_wait_response(f->client, id, 5000, &out), -32800);
    free(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(counts_words_and_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(the_signature_refuses_a_missing_or_mistyped_uri, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_error_has_its_code, setup, teardown),
        cmocka_unit_test_setup_teardown(a_file_that_is_not_regular_is_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(a_uri_that_names_no_file_is_a_file_error, setup, teardown),
        cmocka_unit_test_setup_teardown(the_loop_answers_while_a_big_file_is_counted, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
