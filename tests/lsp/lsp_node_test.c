/* The lsp service with the language servers npm installs into
 * third_party/node (third_party/install-deps.sh): pyright for Python and
 * typescript-language-server for TypeScript. Each: a file with a type error
 * gets its diagnostics; hover, completion, definition, references,
 * documentSymbol and rename answer about a variable used once after its
 * declaration; an edit that fixes the error clears the diagnostics. */
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

    /* the word is declared on line 0 and used at the hover's position */
    char quoted[64];
    snprintf(quoted, sizeof quoted, "\"%s\"", hover_word);
    r = ok("lsp/completion", "{\"uri\":\"%s\",\"position\":{\"line\":%d,\"character\":%d}}", uri, hover_line,
           hover_character);
    if (test_json_length(r, "items") < 1 || !strstr(r, quoted))
        fail_msg("completion of %s: %.300s", language, r);
    free(r);
    r = ok("lsp/definition", "{\"uri\":\"%s\",\"position\":{\"line\":%d,\"character\":%d}}", uri, hover_line,
           hover_character);
    int64_t line = -1;
    if (test_json_length(r, "locations") != 1 || !test_json_int(r, "locations[0].range.start.line", &line) || line != 0)
        fail_msg("definition of %s: %s", language, r);
    want_string(r, "locations[0].uri", uri);
    free(r);
    r = ok("lsp/references", "{\"uri\":\"%s\",\"position\":{\"line\":%d,\"character\":%d}}", uri, hover_line,
           hover_character);
    if (test_json_length(r, "locations") != 2)
        fail_msg("references of %s: %s", language, r);
    free(r);
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", uri);
    if (test_json_length(r, "symbols") < 1 || !strstr(r, quoted))
        fail_msg("documentSymbol of %s: %s", language, r);
    free(r);
    r = ok("lsp/rename", "{\"uri\":\"%s\",\"position\":{\"line\":%d,\"character\":%d},\"newName\":\"renamed\"}",
           uri, hover_line, hover_character);
    const char *first = strstr(r, "\"newText\":\"renamed\"");
    if (!first || !strstr(first + 1, "\"newText\":\"renamed\""))
        fail_msg("rename of %s: two edits wanted: %s", language, r);
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
