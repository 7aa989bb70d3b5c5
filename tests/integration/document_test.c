/* The document service through the in-process client: every document method's
 * result shape and errors, the notifications and their order, cursors, undo
 * and the clean state, and the method table. Positions and two clients are in
 * document_encodings_test.c, files on disk in document_files_test.c. */
#include "document_fixture.h"

/* ----- open, close, list, info --------------------------------------------------------- */

static void test_open_memory(void **state)
{
    fx *f = *state;
    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://notes/a.ts\",\"content\":\"const a = 1;\\nlet b;\\n\"}");
    char *id = test_json_string(r, "documentId");
    assert_non_null(id);
    /* doc_<ms>_<9 base-36 characters> */
    assert_memory_equal(id, "doc_", 4);
    const char *p = id + 4;
    while (*p >= '0' && *p <= '9')
        p++;
    assert_true(p > id + 4 + 9);
    assert_int_equal(*p, '_');
    assert_int_equal(strlen(p + 1), 9);
    assert_int_equal(strspn(p + 1, "0123456789abcdefghijklmnopqrstuvwxyz"), 9);
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://notes/a.ts\",\"languageId\":\"typescript\",\"version\":1,"
             "\"isDirty\":false,\"isReadOnly\":false,\"lineCount\":3}",
             id);
    expect_raw(r, "info", want);
    free(r);
    expect_events(f->c, "document/didOpen,#");
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"memory://notes/a.ts\",\"languageId\":\"typescript\"}",
             id);
    test_client_clear_notifications(f->c);

    /* The same uri again: the same document, no didOpen. */
    r = ok(f->c, "document/open", "{\"uri\":\"memory://notes/a.ts\",\"content\":\"ignored\"}");
    expect_str(r, "documentId", id);
    expect_int(r, "info.version", 1);
    free(r);
    expect_events(f->c, "#");
    expect_content(f->c, id, "const a = 1;\nlet b;\n");

    /* untitled: and no content: an empty plaintext document. */
    r = ok(f->c, "document/open", "{\"uri\":\"untitled:Untitled-1\"}");
    expect_str(r, "info.languageId", "plaintext");
    expect_int(r, "info.lineCount", 1);
    char *id2 = test_json_string(r, "documentId");
    assert_string_not_equal(id, id2);
    expect_content(f->c, id2, "");
    free(r);
    free(id2);

    /* An explicit language wins over the extension. */
    r = ok(f->c, "document/open", "{\"uri\":\"memory://x.ts\",\"languageId\":\"rust\",\"content\":\"\"}");
    expect_str(r, "info.languageId", "rust");
    free(r);
    free(id);
}

static void test_open_notification(void **state)
{
    fx *f = *state;
    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://n.md\",\"content\":\"# hi\"}");
    char *id = test_json_string(r, "documentId");
    free(r);
    char want[256];
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"memory://n.md\",\"languageId\":\"markdown\"}", id);
    expect_note(f->c, 0, "document/didOpen", want);
    assert_int_equal(test_client_notification_count(f->c, NULL), 1);
    free(id);
}

static void test_language_map(void **state)
{
    fx *f = *state;
    static const char *const pairs[][2] = {
        {"ts", "typescript"}, {"tsx", "typescriptreact"}, {"js", "javascript"}, {"jsx", "javascriptreact"},
        {"json", "json"},     {"jsonc", "jsonc"},         {"md", "markdown"},   {"html", "html"},
        {"css", "css"},       {"scss", "scss"},           {"less", "less"},     {"py", "python"},
        {"rs", "rust"},       {"go", "go"},               {"java", "java"},     {"c", "c"},
        {"cpp", "cpp"},       {"h", "c"},                 {"hpp", "cpp"},       {"rb", "ruby"},
        {"sh", "bash"},       {"bash", "bash"},           {"zsh", "bash"},      {"yml", "yaml"},
        {"yaml", "yaml"},     {"toml", "toml"},           {"xml", "xml"},       {"svg", "xml"},
        {"sql", "sql"},       {"graphql", "graphql"},     {"gql", "graphql"},   {"txt", "plaintext"},
        {"kt", "kotlin"},     {"cs", "csharp"},           {"zig", "zig"},       {"ex", "elixir"},
        {"mk", "makefile"},   {"php", "php"},             {"lua", "lua"},       {"bak", "plaintext"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char *r = ok(f->c, "document/open", "{\"uri\":\"memory://dir/file%zu.%s\",\"content\":\"\"}", i, pairs[i][0]);
        expect_str(r, "info.languageId", pairs[i][1]);
        free(r);
    }
    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://Makefile\",\"content\":\"\"}");
    expect_str(r, "info.languageId", "makefile");
    free(r);
    r = ok(f->c, "document/open", "{\"uri\":\"memory://dir/Dockerfile\",\"content\":\"\"}");
    expect_str(r, "info.languageId", "dockerfile");
    free(r);
    r = ok(f->c, "document/open", "{\"uri\":\"memory://dir/README\",\"content\":\"\"}");
    expect_str(r, "info.languageId", "plaintext");
    free(r);
}

static void test_open_params(void **state)
{
    fx *f = *state;
    expect_message(fails(f->c, -32602, "document/open", "{}"), "uri: required string");
    expect_message(fails(f->c, -32602, "document/open", NULL), "uri: required string");
    expect_message(fails(f->c, -32602, "document/open", "{\"uri\":\"\"}"), "uri: must not be empty");
    expect_message(fails(f->c, -32602, "document/open", "{\"uri\":7}"), "uri: expected string, got number");
    expect_message(fails(f->c, -32602, "document/open", "{\"uri\":\"memory://a\",\"content\":5}"),
                   "content: expected string, got number");
    expect_message(fails(f->c, -32602, "document/open", "{\"uri\":\"memory://a\",\"readOnly\":\"yes\"}"),
                   "readOnly: expected boolean, got string");
    char *e = fails(f->c, -32602, "document/open", "{\"uri\":\"file://otherhost/etc/hosts\"}");
    expect_str(e, "message", "uri: file URI names a remote host: otherhost");
    free(e);
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
}

static void test_open_file_failures(void **state)
{
    fx *f = *state;
    char want[512];
    snprintf(want, sizeof want, "Failed to open file: %s: Is a directory", f->dir);
    expect_message(fails(f->c, -32603, "document/open", "{\"uri\":\"file://%s\"}", f->dir), want);
    snprintf(want, sizeof want, "Failed to open file: %s/missing.txt: No such file or directory", f->dir);
    expect_message(fails(f->c, -32603, "document/open", "{\"uri\":\"file://%s/missing.txt\"}", f->dir), want);
    /* A plain absolute path is a file too. */
    expect_message(fails(f->c, -32603, "document/open", "{\"uri\":\"%s/missing.txt\"}", f->dir), want);
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
    char *r = ok(f->c, "document/list", NULL);
    expect_raw(r, "", "{\"documents\":[]}");
    free(r);
}

static void test_open_file(void **state)
{
    fx *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/a b.c", f->dir);
    const char text[] = "int x;\r\nchar *s = \"\xff\xfe\";\r\nlast";
    write_bytes(path, text, sizeof text - 1, 0644);
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s/a%%20b.c\"}", f->dir);
    char *id = test_json_string(r, "documentId");
    expect_str(r, "info.languageId", "c");
    expect_int(r, "info.lineCount", 3);
    expect_bool(r, "info.isDirty", false);
    free(r);
    /* CRLF arrives as LF; invalid bytes arrive as U+FFFD on the wire. */
    expect_content(f->c, id, "int x;\nchar *s = \"\xEF\xBF\xBD\xEF\xBF\xBD\";\nlast");
    /* The same file under its unencoded uri and as a plain path. */
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    expect_str(r, "documentId", id);
    free(r);
    r = ok(f->c, "document/open", "{\"uri\":\"%s\"}", path);
    expect_str(r, "documentId", id);
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 1);
    free(id);
}

static void test_close(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://c.txt", "\"x\"");
    expect_call(f->c, "document/close", "{\"documentId\":\"placeholder\"}", "{\"success\":false}");
    char params[128];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/close", params, "{\"success\":true}");
    expect_events(f->c, "document/didClose,#");
    char want[256];
    test_client_clear_notifications(f->c);
    expect_call(f->c, "document/close", params, "{\"success\":false}");
    expect_events(f->c, "#");
    expect_message(fails(f->c, -32001, "document/info", "%s", params), "Document not found");
    /* Reopening makes a new document with a new id. */
    char *id2 = open_doc(f->c, "memory://c.txt", "\"y\"");
    assert_string_not_equal(id, id2);
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id2);
    OK(f->c, "document/close", "%s", params);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"memory://c.txt\"}", id2);
    expect_note(f->c, 0, "document/didClose", want);
    expect_message(fails(f->c, -32602, "document/close", "{}"), "documentId: required string");
    free(id);
    free(id2);
}

static void test_info_list_version_content(void **state)
{
    fx *f = *state;
    char *a = open_doc(f->c, "memory://one.py", "\"a\\nb\"");
    char *b = open_doc(f->c, "memory://two.txt", "\"\"");
    char want[1024];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://one.py\",\"languageId\":\"python\",\"version\":1,"
             "\"isDirty\":false,\"isReadOnly\":false,\"lineCount\":2}",
             a);
    char params[128];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", a);
    /* info alone adds the indent unit (the text says nothing: 4 spaces) */
    char want_info[1100];
    snprintf(want_info, sizeof want_info, "%.*s,\"indent\":{\"style\":\"spaces\",\"size\":4}}",
             (int)strlen(want) - 1, want);
    expect_call(f->c, "document/info", params, want_info);
    char *r = ok(f->c, "document/list", NULL);
    assert_int_equal(test_json_length(r, "documents"), 2);
    free(r);
    r = ok(f->c, "document/list", "{}");
    assert_int_equal(test_json_length(r, "documents"), 2);
    expect_raw(r, "documents[0]", want);
    expect_str(r, "documents[1].documentId", b);
    free(r);
    expect_call(f->c, "document/content", params, "{\"content\":\"a\\nb\",\"version\":1,\"lineCount\":2}");
    expect_call(f->c, "document/version", params, "{\"version\":1}");

    static const char *const queries[] = {"document/info", "document/content", "document/version", "document/cursors",
                                          "document/selections"};
    for (size_t i = 0; i < sizeof queries / sizeof queries[0]; i++) {
        expect_message(fails(f->c, -32001, queries[i], "{\"documentId\":\"doc_1_nothere00\"}"), "Document not found");
        expect_message(fails(f->c, -32602, queries[i], "{}"), "documentId: required string");
        expect_message(fails(f->c, -32602, queries[i], "{\"documentId\":3}"), "documentId: expected string, got number");
    }
    free(a);
    free(b);
}

/* ----- reading text ------------------------------------------------------------------------ */

static void test_line_lines(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://l.txt", "\"zero\\none\\ntwo\"");
    char params[160];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"lineNumber\":1}", id);
    expect_call(f->c, "document/line", params, "{\"lineNumber\":1,\"text\":\"one\"}");
    expect_message(fails(f->c, -32003, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":3}", id),
                   "Invalid position: line 3 is past the end (3 lines)");
    expect_message(fails(f->c, -32003, "document/line", "{\"documentId\":\"nope\",\"lineNumber\":0}"),
                   "Document not found");
    expect_message(fails(f->c, -32602, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":-1}", id),
                   "lineNumber: must be >= 0, got -1");
    expect_message(fails(f->c, -32602, "document/line", "{\"documentId\":\"%s\"}", id), "lineNumber: required integer");

    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":1,\"endLine\":10}", id);
    expect_call(f->c, "document/lines", params,
                "{\"lines\":[{\"lineNumber\":1,\"text\":\"one\"},{\"lineNumber\":2,\"text\":\"two\"}]}");
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":0,\"endLine\":1}", id);
    expect_call(f->c, "document/lines", params, "{\"lines\":[{\"lineNumber\":0,\"text\":\"zero\"}]}");
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":2,\"endLine\":1}", id);
    expect_call(f->c, "document/lines", params, "{\"lines\":[]}");
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":7,\"endLine\":9}", id);
    expect_call(f->c, "document/lines", params, "{\"lines\":[]}");
    expect_call(f->c, "document/lines", "{\"documentId\":\"nope\",\"startLine\":0,\"endLine\":9}", "{\"lines\":[]}");
    expect_message(fails(f->c, -32602, "document/lines", "{\"documentId\":\"%s\",\"startLine\":0}", id),
                   "endLine: required integer");
    free(id);
}

static void test_text_in_range(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://r.txt", "\"hello\\nworld\"");
    char params[256];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":1},\"end\":{\"line\":1,\"column\":3}}}",
             id);
    expect_call(f->c, "document/textInRange", params, "{\"text\":\"ello\\nwor\"}");
    /* {lineCount, 0} is the end of the document. */
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":2,\"column\":0}}}",
             id);
    expect_call(f->c, "document/textInRange", params, "{\"text\":\"hello\\nworld\"}");
    expect_message(fails(f->c, -32602, "document/textInRange",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":3},\"end\":{\"line\":0,"
                         "\"column\":1}}}",
                         id),
                   "range: end (0:1) precedes start (0:3)");
    expect_message(fails(f->c, -32003, "document/textInRange",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":5,"
                         "\"column\":0}}}",
                         id),
                   "Invalid position: line 5 is past the end (2 lines)");
    expect_message(fails(f->c, -32003, "document/textInRange",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,"
                         "\"column\":9}}}",
                         id),
                   "Invalid position: column 9 is past the end of line 0 (5 columns)");
    expect_message(fails(f->c, -32003, "document/textInRange",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":2,\"column\":1},\"end\":{\"line\":2,"
                         "\"column\":1}}}",
                         id),
                   "Invalid position: line 2 is past the end (2 lines)");
    expect_message(fails(f->c, -32602, "document/textInRange",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"column\":0},\"end\":{\"line\":0,\"column\":1}}}",
                         id),
                   "range.start.line: required integer");
    expect_message(fails(f->c, -32602, "document/textInRange", "{\"documentId\":\"%s\"}", id), "range: required object");
    expect_message(fails(f->c, -32001, "document/textInRange",
                         "{\"documentId\":\"nope\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,"
                         "\"column\":0}}}"),
                   "Document not found");
    free(id);
}

static void test_viewport(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://v.txt", "\"a\\nb\\nc\\nd\"");
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"version\":1,\"startLine\":1,\"lineCount\":4,\"lines\":[{\"lineNumber\":1,"
             "\"text\":\"b\"},{\"lineNumber\":2,\"text\":\"c\"}],\"tokens\":[[],[]]}",
             id);
    /* tokens come from the syntax service (plain text has none); a name no
     * service provides adds nothing */
    char *r = ok(f->c, "document/viewport",
                 "{\"documentId\":\"%s\",\"startLine\":1,\"lineCount\":2,\"include\":[\"tokens\",\"whatever\"]}", id);
    expect_raw(r, "", want);
    free(r);
    r = ok(f->c, "document/viewport", "{\"documentId\":\"%s\",\"startLine\":3,\"lineCount\":100}", id);
    expect_raw(r, "lines", "[{\"lineNumber\":3,\"text\":\"d\"}]");
    free(r);
    r = ok(f->c, "document/viewport", "{\"documentId\":\"%s\",\"startLine\":9,\"lineCount\":2}", id);
    expect_raw(r, "lines", "[]");
    expect_int(r, "startLine", 9);
    free(r);
    expect_message(fails(f->c, -32001, "document/viewport", "{\"documentId\":\"x\",\"startLine\":0,\"lineCount\":1}"),
                   "Document not found");
    expect_message(fails(f->c, -32602, "document/viewport", "{\"documentId\":\"%s\",\"startLine\":0}", id),
                   "lineCount: required integer");
    expect_message(
        fails(f->c, -32602, "document/viewport", "{\"documentId\":\"%s\",\"startLine\":0,\"lineCount\":1,\"include\":3}",
              id),
        "include: expected array, got number");
    free(id);
}

/* ----- editing --------------------------------------------------------------------------------- */

static void test_insert(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://t.txt", "\"hello\\nworld\"");
    char *r = ok(f->c, "document/insert",
                 "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"text\":\" there\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://t.txt\",\"version\":2,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":0,\"column\":5},\"end\":{\"line\":0,\"column\":5}},\"rangeLength\":0,\"text\":\" there\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "hello there\nworld");
    expect_dirty(f->c, id, true);
    /* The insert put the caret after its text, without a cursor notification. */
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[{\"position\":{\"line\":0,\"column\":11}}]}");
    free(r);

    r = ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"a\\nb\"}",
           id);
    expect_raw(r, "", "{\"success\":true,\"version\":3}");
    free(r);
    expect_content(f->c, id, "hello there\na\nbworld");
    test_client_clear_notifications(f->c);

    r = ok(f->c, "document/insert", "{\"documentId\":\"nope\",\"position\":{\"line\":0,\"column\":0},\"text\":\"x\"}");
    expect_raw(r, "", "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    free(r);
    expect_message(
        fails(f->c, -32003, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":7,\"column\":0},\"text\":\"x\"}",
              id),
        "Invalid position: line 7 is past the end (3 lines)");
    expect_message(fails(f->c, -32003, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":2},\"text\":\"x\"}", id),
                   "Invalid position: column 2 is past the end of line 1 (1 column)");
    expect_message(fails(f->c, -32602, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0}}", id),
                   "text: required string");
    expect_message(fails(f->c, -32602, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":\"2\"},\"text\":\"x\"}", id),
                   "position.column: expected integer, got string");
    expect_message(fails(f->c, -32602, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":-4,\"column\":0},\"text\":\"x\"}", id),
                   "position.line: must be >= 0, got -4");
    expect_message(fails(f->c, -32602, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"x\","
                         "\"groupWithPrevious\":1}",
                         id),
                   "groupWithPrevious: expected boolean, got number");
    /* None of the refusals changed anything or said anything. */
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
    r = ok(f->c, "document/version", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"version\":3}");
    free(r);
    free(id);
}

static void test_delete_replace_set_content(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://d.txt", "\"abc\\ndef\\nghi\"");
    char want[512];
    char *r = ok(f->c, "document/delete",
                 "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":1},\"end\":{\"line\":1,\"column\":1}}}",
                 id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://d.txt\",\"version\":2,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":0,\"column\":1},\"end\":{\"line\":1,\"column\":1}},\"rangeLength\":4,\"text\":\"\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "aef\nghi");
    expect_dirty(f->c, id, true);

    /* Deleting is undoable: the undo's change puts the text back. */
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3,\"canUndo\":false,\"canRedo\":true}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://d.txt\",\"version\":3,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":0,\"column\":1},\"end\":{\"line\":0,\"column\":1}},\"rangeLength\":0,\"text\":\"bc\\nd\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "abc\ndef\nghi");
    expect_dirty(f->c, id, false);

    r = ok(f->c, "document/replace",
           "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":1,\"column\":0},\"end\":{\"line\":1,\"column\":3}},"
           "\"text\":\"XY\\nZ\"}",
           id);
    expect_raw(r, "", "{\"success\":true,\"version\":4}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://d.txt\",\"version\":4,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":1,\"column\":0},\"end\":{\"line\":1,\"column\":3}},\"rangeLength\":3,\"text\":\"XY\\nZ\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    test_client_clear_notifications(f->c);
    expect_content(f->c, id, "abc\nXY\nZ\nghi");
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":5,\"canUndo\":false,\"canRedo\":true}");
    free(r);
    expect_content(f->c, id, "abc\ndef\nghi");
    test_client_clear_notifications(f->c);

    r = ok(f->c, "document/setContent", "{\"documentId\":\"%s\",\"content\":\"new\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":6}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://d.txt\",\"version\":6,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":0,\"column\":0},\"end\":{\"line\":2,\"column\":3}},\"rangeLength\":11,\"text\":\"new\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[{\"position\":{\"line\":0,\"column\":3}}]}");
    free(r);
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":7,\"canUndo\":false,\"canRedo\":true}");
    free(r);
    expect_content(f->c, id, "abc\ndef\nghi");

    r = ok(f->c, "document/setContent", "{\"documentId\":\"nope\",\"content\":\"\"}");
    expect_raw(r, "", "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    free(r);
    r = ok(f->c, "document/delete",
           "{\"documentId\":\"nope\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":1}}}");
    expect_raw(r, "", "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    free(r);
    expect_message(fails(f->c, -32602, "document/delete", "{\"documentId\":\"%s\"}", id), "range: required object");
    expect_message(fails(f->c, -32602, "document/setContent", "{\"documentId\":\"%s\"}", id),
                   "content: required string");
    expect_message(fails(f->c, -32602, "document/replace",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":1,\"column\":0},\"end\":{\"line\":0,"
                         "\"column\":3}},\"text\":\"\"}",
                         id),
                   "range: end (0:3) precedes start (1:0)");
    expect_message(fails(f->c, -32003, "document/delete",
                         "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,"
                         "\"column\":4}}}",
                         id),
                   "Invalid position: column 4 is past the end of line 0 (3 columns)");
    free(id);
}

static void test_edit_multi(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://e.txt", "\"one two three\"");
    char *r = ok(f->c, "document/edit",
                 "{\"documentId\":\"%s\",\"edits\":["
                 "{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":3}},\"text\":\"1\"},"
                 "{\"range\":{\"start\":{\"line\":0,\"column\":8},\"end\":{\"line\":0,\"column\":13}},\"text\":\"3\"},"
                 "{\"range\":{\"start\":{\"line\":0,\"column\":4},\"end\":{\"line\":0,\"column\":7}},\"text\":\"2\"}]}",
                 id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    /* One notification; the changes go from the last to the first, so each
     * one's range holds before it and after the ones before it. */
    char want[1024];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://e.txt\",\"version\":2,\"changes\":["
             "{\"range\":{\"start\":{\"line\":0,\"column\":8},\"end\":{\"line\":0,\"column\":13}},\"rangeLength\":5,"
             "\"text\":\"3\"},"
             "{\"range\":{\"start\":{\"line\":0,\"column\":4},\"end\":{\"line\":0,\"column\":7}},\"rangeLength\":3,"
             "\"text\":\"2\"},"
             "{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":3}},\"rangeLength\":3,"
             "\"text\":\"1\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "1 2 3");
    /* One undo step. */
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3,\"canUndo\":false,\"canRedo\":true}");
    free(r);
    expect_content(f->c, id, "one two three");
    test_client_clear_notifications(f->c);

    /* Overlaps are refused before anything changes. */
    expect_message(
        fails(f->c, -32602, "document/edit",
              "{\"documentId\":\"%s\",\"edits\":["
              "{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":5}},\"text\":\"\"},"
              "{\"range\":{\"start\":{\"line\":0,\"column\":3},\"end\":{\"line\":0,\"column\":6}},\"text\":\"\"}]}",
              id),
        "Edits 0 and 1 overlap");
    expect_message(
        fails(f->c, -32003, "document/edit",
              "{\"documentId\":\"%s\",\"edits\":["
              "{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":1}},\"text\":\"Z\"},"
              "{\"range\":{\"start\":{\"line\":0,\"column\":3},\"end\":{\"line\":0,\"column\":60}},\"text\":\"\"}]}",
              id),
        "Invalid position: column 60 is past the end of line 0 (13 columns)");
    expect_message(fails(f->c, -32602, "document/edit", "{\"documentId\":\"%s\",\"edits\":[]}", id),
                   "edits: must not be empty");
    expect_message(fails(f->c, -32602, "document/edit",
                         "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},"
                         "\"end\":{\"line\":0,\"column\":0}},\"text\":\"\"},{\"range\":{\"start\":{\"column\":0},"
                         "\"end\":{\"line\":0,\"column\":0}},\"text\":\"\"}]}",
                         id),
                   "edits[1].range.start.line: required integer");
    expect_message(fails(f->c, -32602, "document/edit", "{\"documentId\":\"%s\",\"edits\":[5]}", id),
                   "edits[0]: expected object, got number");
    expect_message(fails(f->c, -32602, "document/edit",
                         "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},"
                         "\"end\":{\"line\":0,\"column\":0}}}]}",
                         id),
                   "edits[0].text: required string");
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
    expect_content(f->c, id, "one two three");
    r = ok(f->c, "document/version", "{\"documentId\":\"%s\"}", id);
    expect_int(r, "version", 3);
    free(r);

    /* Two inserts at one point land in the order given, next to a
     * replacement that starts there. */
    r = ok(f->c, "document/edit",
           "{\"documentId\":\"%s\",\"edits\":["
           "{\"range\":{\"start\":{\"line\":0,\"column\":4},\"end\":{\"line\":0,\"column\":7}},\"text\":\"TWO\"},"
           "{\"range\":{\"start\":{\"line\":0,\"column\":4},\"end\":{\"line\":0,\"column\":4}},\"text\":\"a\"},"
           "{\"range\":{\"start\":{\"line\":0,\"column\":4},\"end\":{\"line\":0,\"column\":4}},\"text\":\"b\"}]}",
           id);
    expect_raw(r, "", "{\"success\":true,\"version\":4}");
    free(r);
    expect_content(f->c, id, "one abTWO three");

    r = ok(f->c, "document/edit",
           "{\"documentId\":\"nope\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,"
           "\"column\":0}},\"text\":\"\"}]}");
    expect_raw(r, "", "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    free(r);
    free(id);
}

static void test_type_multi_cursor(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://y.txt", "\"ab\\ncd\"");
    char *r = ok(f->c, "document/setCursors",
                 "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,"
                 "\"column\":1}}]}",
                 id);
    expect_raw(r, "", "{\"success\":true}");
    free(r);
    test_client_clear_notifications(f->c);
    r = ok(f->c, "document/type", "{\"documentId\":\"%s\",\"text\":\"X\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    char want[1024];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://y.txt\",\"version\":2,\"changes\":["
             "{\"range\":{\"start\":{\"line\":1,\"column\":1},\"end\":{\"line\":1,\"column\":1}},\"rangeLength\":0,"
             "\"text\":\"X\"},"
             "{\"range\":{\"start\":{\"line\":0,\"column\":1},\"end\":{\"line\":0,\"column\":1}},\"rangeLength\":0,"
             "\"text\":\"X\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "aXb\ncXd");
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors",
               "[{\"position\":{\"line\":0,\"column\":2}},{\"position\":{\"line\":1,\"column\":2}}]");
    free(r);
    /* Typing again at both carets joins the same undo step. */
    r = ok(f->c, "document/type", "{\"documentId\":\"%s\",\"text\":\"Y\"}", id);
    free(r);
    expect_content(f->c, id, "aXYb\ncXYd");
    r = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "canUndo", false);
    free(r);
    expect_content(f->c, id, "ab\ncd");
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors",
               "[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,\"column\":1}}]");
    free(r);

    /* A selection is replaced by what is typed. */
    OK(f->c, "document/setCursor",
       "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":2},\"selection\":{\"anchor\":{\"line\":0,\"column\":0},"
       "\"active\":{\"line\":1,\"column\":1}}}",
       id);
    r = ok(f->c, "document/type", "{\"documentId\":\"%s\",\"text\":\"Q\\n\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":5}");
    free(r);
    expect_content(f->c, id, "Q\nd");
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors", "[{\"position\":{\"line\":1,\"column\":0}}]");
    free(r);
    expect_message(fails(f->c, -32602, "document/type", "{\"documentId\":\"%s\"}", id), "text: required string");
    r = ok(f->c, "document/type", "{\"documentId\":\"nope\",\"text\":\"x\"}");
    expect_raw(r, "", "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    free(r);
    free(id);
}

static void test_read_only(void **state)
{
    fx *f = *state;
    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://ro.txt\",\"content\":\"keep\",\"readOnly\":true}");
    char *id = test_json_string(r, "documentId");
    expect_bool(r, "info.isReadOnly", true);
    free(r);
    test_client_clear_notifications(f->c);
    const char *refused = "{\"success\":false,\"version\":1,\"error\":\"Document is read-only\"}";
    char params[512];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"x\"}", id);
    expect_call(f->c, "document/insert", params, refused);
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":2}}}",
             id);
    expect_call(f->c, "document/delete", params, refused);
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":2}},"
             "\"text\":\"zz\"}",
             id);
    expect_call(f->c, "document/replace", params, refused);
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"content\":\"gone\"}", id);
    expect_call(f->c, "document/setContent", params, refused);
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,"
             "\"column\":0}},\"text\":\"x\"}]}",
             id);
    expect_call(f->c, "document/edit", params, refused);
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"text\":\"x\"}", id);
    expect_call(f->c, "document/type", params, refused);
    /* Read-only wins over a bad position: the document refuses first. */
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"position\":{\"line\":9,\"column\":0},\"text\":\"x\"}", id);
    expect_call(f->c, "document/insert", params, refused);
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/undo", params, "{\"success\":false,\"version\":1,\"canUndo\":false,\"canRedo\":false}");
    expect_content(f->c, id, "keep");
    expect_dirty(f->c, id, false);
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
    /* Cursors still move in a read-only document. */
    expect_call(f->c, "document/selectAll", params, "{\"success\":true}");
    free(id);
}

/* ----- cursors ------------------------------------------------------------------------------- */

static void test_cursor_methods(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://cur.txt", "\"hello world\\nsecond line\\n\"");
    char p[512], want[1024];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/cursors", p, "{\"cursors\":[{\"position\":{\"line\":0,\"column\":0}}]}");

    expect_call(f->c, "document/setCursor",
                (snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id), p),
                "{\"success\":true}");
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"clientId\":1,\"cursors\":[{\"position\":{\"line\":0,\"column\":5}}]}", id);
    expect_note(f->c, 0, "document/didChangeCursors", want);
    expect_events(f->c, "document/didChangeCursors,#");

    snprintf(p, sizeof p,
             "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"selection\":{\"anchor\":{\"line\":0,"
             "\"column\":0},\"active\":{\"line\":0,\"column\":5}}}",
             id);
    expect_call(f->c, "document/setCursor", p, "{\"success\":true}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":0,\"column\":5},\"selection\":{\"anchor\":{\"line\":0,"
                "\"column\":0},\"active\":{\"line\":0,\"column\":5}}}]}");
    expect_call(f->c, "document/selections", p, "{\"selections\":[\"hello\"]}");
    test_client_clear_notifications(f->c);

    expect_call(f->c, "document/clearSelections", p, "{\"success\":true}");
    expect_events(f->c, "document/didChangeCursors,#");
    expect_call(f->c, "document/selections", p, "{\"selections\":[\"\"]}");
    expect_call(f->c, "document/cursors", p, "{\"cursors\":[{\"position\":{\"line\":0,\"column\":5}}]}");

    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":3}}", id);
    expect_call(f->c, "document/addCursor", p, "{\"success\":true}");
    expect_events(f->c, "document/didChangeCursors,#");
    expect_call(f->c, "document/addCursor", p, "{\"success\":true}"); /* the same spot merges */
    expect_events(f->c, "document/didChangeCursors,#");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":0,\"column\":5}},{\"position\":{\"line\":1,\"column\":3}}]}");
    expect_call(f->c, "document/selections", p, "{\"selections\":[\"\",\"\"]}");

    expect_call(f->c, "document/selectAll", p, "{\"success\":true}");
    expect_events(f->c, "document/didChangeCursors,#");
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":2,\"column\":0},\"selection\":{\"anchor\":{\"line\":0,"
                "\"column\":0},\"active\":{\"line\":2,\"column\":0}}}]}");
    expect_call(f->c, "document/selections", p, "{\"selections\":[\"hello world\\nsecond line\\n\"]}");

    /* Every cursor's selection is honoured, in order. */
    snprintf(p, sizeof p,
             "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,"
             "\"column\":6},\"selection\":{\"anchor\":{\"line\":1,\"column\":0},\"active\":{\"line\":1,\"column\":6}}}]}",
             id);
    expect_call(f->c, "document/setCursors", p, "{\"success\":true}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/selections", p, "{\"selections\":[\"\",\"second\"]}");
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"clientId\":1,\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,"
             "\"column\":6},\"selection\":{\"anchor\":{\"line\":1,\"column\":0},\"active\":{\"line\":1,\"column\":6}}}]}",
             id);
    expect_note(f->c, test_client_notification_count(f->c, "document/didChangeCursors") - 1,
                "document/didChangeCursors", want);
    /* Overlapping cursors merge; the primary survives. */
    snprintf(p, sizeof p,
             "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":3}},{\"position\":{\"line\":0,"
             "\"column\":5},\"selection\":{\"anchor\":{\"line\":0,\"column\":1},\"active\":{\"line\":0,\"column\":5}}},"
             "{\"position\":{\"line\":0,\"column\":3}}]}",
             id);
    expect_call(f->c, "document/setCursors", p, "{\"success\":true}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":0,\"column\":5},\"selection\":{\"anchor\":{\"line\":0,"
                "\"column\":1},\"active\":{\"line\":0,\"column\":5}}}]}");

    /* Cursors follow edits, and collapse together when their text goes. */
    snprintf(p, sizeof p,
             "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":2}},{\"position\":{\"line\":0,"
             "\"column\":4}},{\"position\":{\"line\":1,\"column\":3}}]}",
             id);
    expect_call(f->c, "document/setCursors", p, "{\"success\":true}");
    test_client_clear_notifications(f->c);
    OK(f->c, "document/delete",
       "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":1},\"end\":{\"line\":0,\"column\":5}}}", id);
    expect_events(f->c, "document/didChange,#");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,\"column\":3}}]}");
    OK(f->c, "document/edit",
       "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":1,\"column\":0},\"end\":{\"line\":1,"
       "\"column\":0}},\"text\":\"ab\"}]}",
       id);
    expect_call(f->c, "document/cursors", p,
                "{\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,\"column\":5}}]}");
    test_client_clear_notifications(f->c);

    /* Refusals. */
    expect_message(fails(f->c, -32602, "document/setCursors", "{\"documentId\":\"%s\",\"cursors\":[]}", id),
                   "cursors: must not be empty");
    expect_message(fails(f->c, -32602, "document/setCursors", "{\"documentId\":\"%s\",\"cursors\":[{}]}", id),
                   "cursors[0].position: required object");
    expect_message(fails(f->c, -32602, "document/setCursor",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"selection\":{\"anchor\":{"
                         "\"line\":0,\"column\":0}}}",
                         id),
                   "selection.active: required object");
    expect_message(fails(f->c, -32003, "document/setCursor",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":9,\"column\":0}}", id),
                   "Invalid position: line 9 is past the end (3 lines)");
    expect_message(fails(f->c, -32003, "document/addCursor",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":99}}", id),
                   "Invalid position: column 99 is past the end of line 0 (7 columns)");
    expect_message(fails(f->c, -32602, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"sideways\"}", id),
                   "direction: must be up, down, left or right, got \"sideways\"");
    expect_message(fails(f->c, -32602, "document/moveCursors",
                         "{\"documentId\":\"%s\",\"direction\":\"up\",\"unit\":\"parsec\"}", id),
                   "unit: must be character, word, line, page or document, got \"parsec\"");
    expect_message(fails(f->c, -32602, "document/moveCursors", "{\"documentId\":\"%s\"}", id),
                   "direction: required string");
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);

    /* An unknown document: {success:false} for changes, -32001 for queries. */
    const char *none = "{\"documentId\":\"nope\",\"position\":{\"line\":0,\"column\":0},\"cursors\":[{\"position\":{"
                       "\"line\":0,\"column\":0}}],\"direction\":\"up\"}";
    static const char *const changes[] = {"document/setCursor", "document/setCursors", "document/addCursor",
                                          "document/moveCursors", "document/selectAll", "document/clearSelections"};
    for (size_t i = 0; i < sizeof changes / sizeof changes[0]; i++)
        expect_call(f->c, changes[i], none, "{\"success\":false}");
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);
    free(id);
}

static char *cursor_after(test_client *c, const char *id, size_t line, size_t column, const char *move)
{
    OK(c, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":%zu,\"column\":%zu}}", id, line, column);
    char *r = ok(c, "document/moveCursors", "{\"documentId\":\"%s\",%s}", id, move);
    expect_raw(r, "", "{\"success\":true}");
    free(r);
    r = ok(c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    char *cur = test_json_raw(r, "cursors[0]");
    free(r);
    return cur;
}

static void expect_move(test_client *c, const char *id, size_t line, size_t column, const char *move,
                        const char *want)
{
    char *got = cursor_after(c, id, line, column, move);
    if (strcmp(got, want) != 0)
        print_error("from %zu:%zu %s\n  want %s\n  got  %s\n", line, column, move, want, got);
    assert_string_equal(got, want);
    free(got);
}


static void test_move_cursors(void **state)
{
    fx *f = *state;
    char content[2048] = "\"alpha beta_gamma  delta\\nshort\\na much longer line here";
    for (int i = 3; i < 30; i++)
        snprintf(content + strlen(content), sizeof content - strlen(content), "\\nl%d", i);
    strcat(content, "\"");
    char *id = open_doc(f->c, "memory://m.txt", content);
    const char *right = "\"direction\":\"right\"", *left = "\"direction\":\"left\"";
    expect_move(f->c, id, 0, 0, right, AT(0, 1));
    expect_move(f->c, id, 0, 0, "\"direction\":\"right\",\"unit\":\"character\"", AT(0, 1));
    expect_move(f->c, id, 0, 0, left, AT(0, 0));
    expect_move(f->c, id, 1, 0, left, AT(0, 23));
    expect_move(f->c, id, 0, 23, right, AT(1, 0));
    const char *wr = "\"direction\":\"right\",\"unit\":\"word\"", *wl = "\"direction\":\"left\",\"unit\":\"word\"";
    expect_move(f->c, id, 0, 1, wr, AT(0, 5));
    expect_move(f->c, id, 0, 5, wr, AT(0, 16));
    expect_move(f->c, id, 0, 16, wr, AT(0, 23));
    expect_move(f->c, id, 0, 23, wr, AT(1, 0));
    expect_move(f->c, id, 1, 0, wl, AT(0, 23));
    expect_move(f->c, id, 0, 23, wl, AT(0, 18));
    expect_move(f->c, id, 0, 18, wl, AT(0, 6));
    expect_move(f->c, id, 0, 10, "\"direction\":\"left\",\"unit\":\"line\"", AT(0, 0));
    expect_move(f->c, id, 0, 10, "\"direction\":\"right\",\"unit\":\"line\"", AT(0, 23));
    expect_move(f->c, id, 5, 1, "\"direction\":\"up\",\"unit\":\"document\"", AT(0, 0));
    expect_move(f->c, id, 5, 1, "\"direction\":\"down\",\"unit\":\"document\"", AT(29, 3));
    expect_move(f->c, id, 0, 0, "\"direction\":\"down\",\"unit\":\"page\"", "{\"position\":{\"line\":20,\"column\":0},"
                                                                           "\"desiredColumn\":0}");
    expect_move(f->c, id, 25, 2, "\"direction\":\"up\",\"unit\":\"page\"",
                "{\"position\":{\"line\":5,\"column\":2},\"desiredColumn\":2}");
    expect_move(f->c, id, 25, 2, "\"direction\":\"down\",\"unit\":\"page\"",
                "{\"position\":{\"line\":29,\"column\":2},\"desiredColumn\":2}");
    /* Up on the first line goes to its start; down on the last to its end. */
    expect_move(f->c, id, 0, 3, "\"direction\":\"up\"", "{\"position\":{\"line\":0,\"column\":0},\"desiredColumn\":3}");
    expect_move(f->c, id, 29, 1, "\"direction\":\"down\"",
                "{\"position\":{\"line\":29,\"column\":3},\"desiredColumn\":1}");

    /* The desired column survives a short line. */
    char *cur = cursor_after(f->c, id, 2, 20, "\"direction\":\"up\"");
    assert_string_equal(cur, "{\"position\":{\"line\":1,\"column\":5},\"desiredColumn\":20}");
    free(cur);
    char *r = ok(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"up\",\"unit\":\"line\"}", id);
    free(r);
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors[0]", "{\"position\":{\"line\":0,\"column\":20},\"desiredColumn\":20}");
    free(r);
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"down\"}", id);
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"down\"}", id);
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors[0]", "{\"position\":{\"line\":2,\"column\":20},\"desiredColumn\":20}");
    free(r);
    /* A horizontal move forgets it. */
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"left\"}", id);
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors[0]", AT(2, 19));
    free(r);

    /* Selecting extends from the anchor. */
    cur = cursor_after(f->c, id, 0, 0, "\"direction\":\"right\",\"unit\":\"word\",\"select\":true");
    assert_string_equal(cur, "{\"position\":{\"line\":0,\"column\":5},\"selection\":{\"anchor\":{\"line\":0,\"column\":0},"
                             "\"active\":{\"line\":0,\"column\":5}}}");
    free(cur);
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"right\",\"unit\":\"word\",\"select\":true}",
       id);
    r = ok(f->c, "document/selections", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"selections\":[\"alpha beta_gamma\"]}");
    free(r);
    /* Left without select collapses the selection to its start. */
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"left\"}", id);
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[" AT(0, 0) "]}");
    free(r);

    /* Several cursors move together and merge when they meet. */
    OK(f->c, "document/setCursors",
       "{\"documentId\":\"%s\",\"cursors\":[" AT(0, 0) "," AT(1, 0) "]}", id);
    test_client_clear_notifications(f->c);
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"down\"}", id);
    expect_events(f->c, "document/didChangeCursors,#");
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[{\"position\":{\"line\":1,\"column\":0},\"desiredColumn\":0},{\"position\":{"
                      "\"line\":2,\"column\":0},\"desiredColumn\":0}]}");
    free(r);
    OK(f->c, "document/moveCursors", "{\"documentId\":\"%s\",\"direction\":\"up\",\"unit\":\"document\"}", id);
    r = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[" AT(0, 0) "]}");
    free(r);

    /* Characters, not code units: an emoji is one step, two UTF-16 columns. */
    char *e = open_doc(f->c, "memory://emoji.txt", "\"a\\ud83d\\ude00b\"");
    expect_move(f->c, e, 0, 1, right, AT(0, 3));
    expect_move(f->c, e, 0, 3, left, AT(0, 1));
    free(e);
    free(id);
}

/* ----- history ------------------------------------------------------------------------------------ */

static void test_undo_redo(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://u.txt", "\"abc\"");
    char p[256];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/undo", p, "{\"success\":false,\"version\":1,\"canUndo\":false,\"canRedo\":false}");
    expect_call(f->c, "document/redo", p, "{\"success\":false,\"version\":1,\"canUndo\":false,\"canRedo\":false}");
    expect_call(f->c, "document/canUndo", p, "{\"canUndo\":false}");
    expect_call(f->c, "document/canRedo", p, "{\"canRedo\":false}");
    assert_int_equal(test_client_notification_count(f->c, NULL), 0);

    /* Undo puts the cursors back where they were before the edit. */
    OK(f->c, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":1}}", id);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"X\"}", id);
    expect_call(f->c, "document/cursors", p, "{\"cursors\":[" AT(0, 4) "]}");
    expect_call(f->c, "document/canUndo", p, "{\"canUndo\":true}");
    test_client_clear_notifications(f->c);
    expect_call(f->c, "document/undo", p, "{\"success\":true,\"version\":3,\"canUndo\":false,\"canRedo\":true}");
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "abc");
    expect_call(f->c, "document/cursors", p, "{\"cursors\":[" AT(0, 1) "]}");
    expect_call(f->c, "document/canRedo", p, "{\"canRedo\":true}");
    expect_call(f->c, "document/redo", p, "{\"success\":true,\"version\":4,\"canUndo\":true,\"canRedo\":false}");
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://u.txt\",\"version\":4,\"changes\":[{\"range\":{\"start\":{"
             "\"line\":0,\"column\":3},\"end\":{\"line\":0,\"column\":3}},\"rangeLength\":0,\"text\":\"X\"}]}",
             id);
    expect_note(f->c, 0, "document/didChange", want);
    expect_content(f->c, id, "abcX");
    expect_call(f->c, "document/cursors", p, "{\"cursors\":[" AT(0, 4) "]}");

    /* A new edit after an undo drops what could be redone. */
    OK(f->c, "document/undo", "%s", p);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"Z\\n\"}", id);
    expect_call(f->c, "document/canRedo", p, "{\"canRedo\":false}");
    expect_call(f->c, "document/redo", p, "{\"success\":false,\"version\":6,\"canUndo\":true,\"canRedo\":false}");

    /* Unknown documents. */
    const char *none = "{\"documentId\":\"nope\"}";
    expect_call(f->c, "document/undo", none, "{\"success\":false,\"version\":0,\"canUndo\":false,\"canRedo\":false}");
    expect_call(f->c, "document/redo", none, "{\"success\":false,\"version\":0,\"canUndo\":false,\"canRedo\":false}");
    expect_call(f->c, "document/canUndo", none, "{\"canUndo\":false}");
    expect_call(f->c, "document/canRedo", none, "{\"canRedo\":false}");
    expect_call(f->c, "document/isDirty", none, "{\"isDirty\":false}");
    expect_call(f->c, "document/markClean", none, "{\"success\":true}");
    expect_message(fails(f->c, -32602, "document/undo", "{}"), "documentId: required string");
    free(id);
}

static void test_clean_state(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://clean.txt", "\"abc\"");
    char p[128];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_dirty(f->c, id, false);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"1\"}", id);
    expect_dirty(f->c, id, true);
    OK(f->c, "document/undo", "%s", p);
    expect_dirty(f->c, id, false); /* back to the saved text */
    char *r = ok(f->c, "document/info", "%s", p);
    expect_bool(r, "isDirty", false);
    free(r);
    OK(f->c, "document/redo", "%s", p);
    expect_dirty(f->c, id, true);
    expect_call(f->c, "document/markClean", p, "{\"success\":true}");
    expect_dirty(f->c, id, false);
    OK(f->c, "document/undo", "%s", p);
    expect_dirty(f->c, id, true);
    OK(f->c, "document/redo", "%s", p);
    expect_dirty(f->c, id, false);
    free(id);
}

static void test_undo_grouping(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://g.txt", "\"abc\"");
    char p[128];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    /* Quick adjacent keystrokes are one step. */
    for (int i = 0; i < 3; i++)
        OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":%d},\"text\":\"%c\"}",
           id, 3 + i, 'x' + i);
    expect_content(f->c, id, "abcxyz");
    expect_call(f->c, "document/undo", p, "{\"success\":true,\"version\":5,\"canUndo\":false,\"canRedo\":true}");
    expect_content(f->c, id, "abc");
    /* A pause ends the group. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"x\"}", id);
    test_server_run_for(f->s, 350);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"y\"}", id);
    OK(f->c, "document/undo", "%s", p);
    expect_content(f->c, id, "abcx");
    OK(f->c, "document/undo", "%s", p);
    expect_content(f->c, id, "abc");
    /* Keystrokes that are not adjacent, or newlines, are steps of their own. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"1\"}", id);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"2\"}", id);
    OK(f->c, "document/undo", "%s", p);
    expect_content(f->c, id, "1abc");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"\\n\"}", id);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"\\n\"}", id);
    OK(f->c, "document/undo", "%s", p);
    expect_content(f->c, id, "1abc\n");
    OK(f->c, "document/undo", "%s", p);
    OK(f->c, "document/undo", "%s", p);
    expect_content(f->c, id, "abc");
    /* groupWithPrevious joins anything to the step before. */
    OK(f->c, "document/replace",
       "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":0,\"column\":1}},"
       "\"text\":\"Z\"}",
       id);
    test_server_run_for(f->s, 350);
    OK(f->c, "document/delete",
       "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":0,\"column\":2},\"end\":{\"line\":0,\"column\":3}},"
       "\"groupWithPrevious\":true}",
       id);
    expect_content(f->c, id, "Zb");
    expect_call(f->c, "document/undo", p, "{\"success\":true,\"version\":20,\"canUndo\":false,\"canRedo\":true}");
    expect_content(f->c, id, "abc");
    free(id);
}

/* ----- the method table --------------------------------------------------------------------------------------- */

static void test_methods_listed(void **state)
{
    fx *f = *state;
    static const char *const names[] = {
        "open",       "close",       "clients",     "info",        "list",         "content",         "line",
        "lines",      "textInRange", "version",     "insert",       "delete",          "replace",
        "setContent", "cursors",     "setCursors",  "setCursor",    "addCursor",       "moveCursors",
        "selectAll",  "clearSelections", "selections", "undo",      "redo",            "canUndo",
        "canRedo",    "isDirty",     "markClean",   "positionToOffset", "offsetToPosition", "wordAtPosition",
        "save",       "reload",      "edit",        "type",         "viewport",        "indent",
        "outdent",    "newline",     "duplicateLines", "moveLines", "deleteWord",      "find",
        "toggleComment",
    };
    char *r = ok(f->c, "ecp/methods", "{\"namespace\":\"document\"}");
    size_t count = sizeof names / sizeof names[0];
    assert_int_equal(test_json_length(r, "methods"), (long)count);
    for (size_t i = 0; i < count; i++) {
        char path[64], want[64];
        snprintf(path, sizeof path, "methods[%zu].name", i);
        snprintf(want, sizeof want, "document/%s", names[i]);
        expect_str(r, path, want);
    }
    free(r);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_open_memory),
        T(test_open_notification),
        T(test_language_map),
        T(test_open_params),
        T(test_open_file_failures),
        T(test_open_file),
        T(test_close),
        T(test_info_list_version_content),
        T(test_line_lines),
        T(test_text_in_range),
        T(test_viewport),
        T(test_insert),
        T(test_delete_replace_set_content),
        T(test_edit_multi),
        T(test_type_multi_cursor),
        T(test_read_only),
        T(test_cursor_methods),
        T(test_move_cursors),
        T(test_undo_redo),
        T(test_clean_state),
        T(test_undo_grouping),
        T(test_methods_listed),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
