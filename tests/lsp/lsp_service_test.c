/* The lsp service's C API on a loop of its own: diagnostics by line range
 * (what document/viewport will show), status events, and a service freed
 * with a server running leaves no handle on the loop. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "lsp/interface.h"

typedef struct seen {
    int diagnostics;
    int ready;
    char messages[256];
} seen;

static void on_diagnostics(void *ctx, const char *uri)
{
    (void)uri;
    ((seen *)ctx)->diagnostics++;
}

static void on_status(void *ctx, const lsp_server_info *info)
{
    ((seen *)ctx)->ready += info->status == LSP_READY;
}

static const lsp_listener listener = {.on_diagnostics = on_diagnostics, .on_status = on_status};

static void collect(void *ctx, const lsp_diagnostic *d)
{
    seen *s = ctx;
    char line[64];
    snprintf(line, sizeof line, "%zu:%zu-%zu:%zu %d %s %s;", d->start_line, d->start_column, d->end_line,
             d->end_column, d->severity, d->source ? d->source : "-", d->message);
    strncat(s->messages, line, sizeof s->messages - strlen(s->messages) - 1);
}

static void test_diagnostics_by_line_range(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    lsp_service_options o = {.loop = &loop};
    lsp_service *svc = lsp_service_new(&o);
    seen s = {0};
    lsp_subscribe(svc, &listener, &s);
    static const char *const args[] = {ECPD_LSP_FAKE_SERVER, "diagnostics", NULL};
    lsp_server_config config = {.command = "python3", .args = args};
    assert_int_equal(lsp_config_set(svc, "fake", &config, NULL), 0);
    assert_int_equal(lsp_document_open(svc, "file:///w/a.fake", "fake", "x\n", 2, NULL), 0);
    for (int i = 0; i < 3000 && s.diagnostics == 0; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(s.ready, 1);
    assert_int_equal(s.diagnostics, 1);

    assert_int_equal(lsp_diagnostics_in_lines(svc, "file:///w/a.fake", 3, 10, ECP_ENCODING_UTF16, collect, &s), 1);
    assert_string_equal(s.messages, "5:1-5:4 2 fake second;");
    s.messages[0] = '\0';
    assert_int_equal(lsp_diagnostics_in_lines(svc, "file:///w/a.fake", 0, 5, ECP_ENCODING_UTF16, collect, &s), 2);
    assert_string_equal(s.messages, "0:1-0:4 1 fake first;5:1-5:4 2 fake second;");
    assert_int_equal(lsp_diagnostics_in_lines(svc, "file:///w/a.fake", 1, 4, ECP_ENCODING_UTF16, NULL, NULL), 0);
    assert_int_equal(lsp_diagnostics_in_lines(svc, "file:///w/other", 0, 100, ECP_ENCODING_UTF16, NULL, NULL), 0);
    size_t errors, warnings;
    lsp_diagnostics_summary(svc, &errors, &warnings);
    assert_int_equal(errors, 1);
    assert_int_equal(warnings, 1);

    lsp_document_close(svc, "file:///w/a.fake");
    char *json = lsp_diagnostics_get(svc, "file:///w/a.fake", ECP_ENCODING_UTF16);
    assert_string_equal(json, "[]");
    free(json);

    /* freed with the server running: every handle closes on the next turn */
    lsp_service_free(svc);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_language_map_and_defaults(void **state)
{
    (void)state;
    assert_string_equal(lsp_language_of("/a/b.py"), "python");
    assert_string_equal(lsp_language_of("file:///a/b.cjs"), "javascript");
    assert_string_equal(lsp_language_of("x.psql"), "sql");
    assert_null(lsp_language_of("/a.b/c"));
    assert_null(lsp_language_of(".c"));
    uv_loop_t loop;
    uv_loop_init(&loop);
    lsp_service_options o = {.loop = &loop};
    lsp_service *svc = lsp_service_new(&o);
    lsp_server_config c;
    assert_true(lsp_config_get(svc, "ruby", &c));
    assert_string_equal(c.command, "solargraph");
    assert_string_equal(c.args[0], "stdio");
    assert_false(lsp_config_get(svc, "cobol", &c));
    lsp_server_config bad = {0};
    ecp_error err;
    assert_int_equal(lsp_config_set(svc, "x", &bad, &err), ECP_EINVAL);
    lsp_service_free(svc);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_diagnostics_by_line_range),
        cmocka_unit_test(test_language_map_and_defaults),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
