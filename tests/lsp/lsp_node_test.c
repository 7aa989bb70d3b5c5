/* The lsp service with the language servers npm installs into
 * third_party/node (third_party/install-deps.sh): pyright for Python and
 * typescript-language-server for TypeScript. Each: a file with a type error
 * gets its diagnostics, a hover answers, an edit that fixes the error clears
 * them. */
#include "lsp_fixture.h"

static void check_language(const char *language, const char *file, const char *text, int hover_line,
                           int hover_character, const char *hover_word, const char *fix_json_edit)
{
    write_at(file, text);
    char *r = ok("lsp/start", "{\"languageId\":\"%s\"}", language);
    bool ready = false;
    assert_true(test_json_bool(r, "ready", &ready) && ready);
    free(r);
    char *uri = uri_of(file);
    test_client_clear_notifications(cl);
    char *id = open_document(file);
    free(wait_diagnostics(uri, true));

    r = ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":%d,\"character\":%d}}", uri, hover_line,
           hover_character);
    if (!strstr(r, hover_word))
        fail_msg("hover of %s: %s", language, r);
    free(r);

    test_client_clear_notifications(cl);
    free(ok("document/edit", "{\"documentId\":\"%s\",\"edits\":[%s]}", id, fix_json_edit));
    free(wait_diagnostics(uri, false));
    free(ok("lsp/stop", "{\"languageId\":\"%s\"}", language));
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(uri);
    free(id);
}

static void test_pyright(void **state)
{
    (void)state;
    if (!have_program("pyright-langserver"))
        skip();
    free(ok("lsp/setServerConfig",
            "{\"languageId\":\"python\",\"config\":{\"command\":\"pyright-langserver\",\"args\":[\"--stdio\"]}}"));
    check_language("python", "main.py", "count: int = \"three\"\nprint(count)\n", 1, 7, "count",
                   "{\"range\":{\"start\":{\"line\":0,\"column\":13},\"end\":{\"line\":0,\"column\":20}},\"text\":\"3\"}");
}

static void test_typescript_language_server(void **state)
{
    (void)state;
    if (!have_program("typescript-language-server"))
        skip();
    check_language("typescript", "main.ts", "const total: number = \"three\";\nconsole.log(total);\n", 1, 14, "total",
                   "{\"range\":{\"start\":{\"line\":0,\"column\":22},\"end\":{\"line\":0,\"column\":29}},\"text\":\"3\"}");
}

int main(void)
{
    if (!have_program("pyright-langserver") && !have_program("typescript-language-server")) {
        fprintf(stderr, "SKIP: run third_party/install-deps.sh to install pyright and typescript-language-server\n");
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyright),
        cmocka_unit_test(test_typescript_language_server),
    };
    return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
