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

/* Diagnostics of many files: each file's own, listed in the order they were
 * first published, gone with the file's close, and all gone (each told) when
 * the server stops. */
#define MANY_FILES 300

typedef struct published {
    char uris[2 * MANY_FILES][32];
    size_t n;
    size_t listed;
    char order[2 * MANY_FILES][32];
} published;

static void on_published(void *ctx, const char *uri)
{
    published *p = ctx;
    if (p->n < 2 * MANY_FILES)
        snprintf(p->uris[p->n++], sizeof p->uris[0], "%s", uri);
}

static const lsp_listener published_listener = {.on_diagnostics = on_published};

static void list_uri(void *ctx, const char *uri)
{
    published *p = ctx;
    if (p->listed < 2 * MANY_FILES)
        snprintf(p->order[p->listed++], sizeof p->order[0], "%s", uri);
}

static void test_diagnostics_of_many_files(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    lsp_service_options o = {.loop = &loop};
    lsp_service *svc = lsp_service_new(&o);
    published *p = calloc(1, sizeof *p);
    lsp_subscribe(svc, &published_listener, p);
    static const char *const args[] = {ECPD_LSP_FAKE_SERVER, "diagnostics", NULL};
    lsp_server_config config = {.command = "python3", .args = args};
    assert_int_equal(lsp_config_set(svc, "fake", &config, NULL), 0);
    char uri[32];
    for (int i = 0; i < MANY_FILES; i++) {
        snprintf(uri, sizeof uri, "file:///w/%d.fake", i);
        assert_int_equal(lsp_document_open(svc, uri, "fake", "x\n", 2, NULL), 0);
    }
    for (int i = 0; i < 30000 && p->n < MANY_FILES; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(p->n, MANY_FILES);

    lsp_diagnostics_each(svc, list_uri, p);
    assert_int_equal(p->listed, MANY_FILES);
    for (size_t i = 0; i < MANY_FILES; i++)
        assert_string_equal(p->order[i], p->uris[i]);
    size_t errors, warnings;
    lsp_diagnostics_summary(svc, &errors, &warnings);
    assert_int_equal(errors, MANY_FILES);
    assert_int_equal(warnings, MANY_FILES);

    /* close the files published at even places */
    for (size_t i = 0; i < MANY_FILES; i += 2)
        lsp_document_close(svc, p->uris[i]);
    for (size_t i = 0; i < MANY_FILES; i++)
        assert_int_equal(lsp_diagnostics_in_lines(svc, p->uris[i], 0, 10, ECP_ENCODING_UTF16, NULL, NULL),
                         i % 2 ? 2 : 0);
    p->listed = 0;
    lsp_diagnostics_each(svc, list_uri, p);
    assert_int_equal(p->listed, MANY_FILES / 2);
    for (size_t k = 0; k < MANY_FILES / 2; k++)
        assert_string_equal(p->order[k], p->uris[2 * k + 1]);
    lsp_diagnostics_summary(svc, &errors, &warnings);
    assert_int_equal(errors, MANY_FILES / 2);

    /* the server stops: each file left is told its diagnostics are gone */
    assert_int_equal(lsp_server_stop(svc, "fake"), 0);
    for (int i = 0; i < 3000 && p->n < MANY_FILES + MANY_FILES / 2; i++)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(p->n, MANY_FILES + MANY_FILES / 2);
    p->listed = 0;
    lsp_diagnostics_each(svc, list_uri, p);
    assert_int_equal(p->listed, 0);

    lsp_unsubscribe(svc, &published_listener, p);
    free(p);
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
        cmocka_unit_test(test_diagnostics_of_many_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
