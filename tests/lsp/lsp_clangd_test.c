/* The lsp service with clangd: one server for the whole file, driven through
 * the in-process client as an editor would drive it. Documents opened with
 * document/open reach clangd by themselves, edits go as incremental
 * didChange (diagnostics follow an edit that fixes the error), every query
 * comes back in the catalogue's shape, and a clangd killed with SIGKILL is
 * restarted and given its documents again. */
#include <signal.h>
#include <sys/types.h>

#include "lsp_fixture.h"

#define MAIN_C                                                                                                         \
    "int add(int a, int b) { return a + b; }\n"                                                                       \
    "int main(void) {\n"                                                                                               \
    "    int total = add(1, 2);\n"                                                                                     \
    "    return total + missing;\n"                                                                                    \
    "}\n"

static char *main_uri, *main_id;

static int group_setup(void **state)
{
    if (fixture_setup(state))
        return -1;
    write_at("main.c", MAIN_C);
    main_uri = uri_of("main.c");
    char root[128];
    snprintf(root, sizeof root, "file://%s", top);
    char *r = ok("lsp/start", "{\"languageId\":\"c\",\"workspaceUri\":\"%s\"}", root);
    free(r);
    main_id = open_document("main.c");
    return 0;
}

static int group_teardown(void **state)
{
    free(main_uri);
    free(main_id);
    return fixture_teardown(state);
}

/* The pid of our clangd child, or 0. */
static pid_t clangd_pid(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "pgrep -P %d clangd", (int)getpid());
    FILE *p = popen(cmd, "r");
    int pid = 0;
    if (p) {
        if (fscanf(p, "%d", &pid) != 1)
            pid = 0;
        pclose(p);
    }
    return (pid_t)pid;
}

static void test_start_reports_ready_with_capabilities(void **state)
{
    (void)state;
    char *r = ok("lsp/start", "{\"languageId\":\"c\"}");
    want_string(r, "languageId", "c");
    bool b = false;
    assert_true(test_json_bool(r, "ready", &b) && b);
    assert_true(test_json_has(r, "capabilities.hoverProvider"));
    free(r);
    r = ok("lsp/status", "{\"languageId\":\"c\"}");
    want_string(r, "servers[0].status", "ready");
    free(r);
    r = ok("lsp/status", "{}");
    assert_int_equal(test_json_length(r, "servers"), 1);
    free(r);
    r = ok("lsp/status", "{\"languageId\":\"go\"}");
    want_string(r, "servers[0].status", "stopped");
    free(r);
    assert_non_null(clangd_pid());
}

static void test_an_open_document_gets_its_diagnostics(void **state)
{
    (void)state;
    char *p = wait_diagnostics(main_uri, true);
    char *msg = test_json_string(p, "diagnostics[0].message");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "missing"));
    free(msg);
    int64_t line = -1;
    assert_true(test_json_int(p, "diagnostics[0].range.start.line", &line));
    assert_int_equal(line, 3);
    free(p);

    char *r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", main_uri);
    assert_true(test_json_length(r, "diagnostics") >= 1);
    free(r);
    r = ok("lsp/allDiagnostics", "{}");
    assert_true(test_json_length(r, "diagnostics") >= 1);
    free(r);
    r = ok("lsp/diagnosticsSummary", "{}");
    int64_t errors = 0;
    assert_true(test_json_int(r, "errors", &errors));
    assert_true(errors >= 1);
    free(r);

    /* document/viewport paints the visible lines with them: line 3's error is
     * in a viewport over lines 2..5, not in one over lines 0..2. */
    r = ok("document/viewport", "{\"documentId\":\"%s\",\"startLine\":2,\"lineCount\":4,\"include\":[\"diagnostics\"]}",
           main_id);
    assert_true(test_json_length(r, "diagnostics") >= 1);
    line = -1;
    assert_true(test_json_int(r, "diagnostics[0].range.start.line", &line));
    assert_int_equal(line, 3);
    free(r);
    r = ok("document/viewport", "{\"documentId\":\"%s\",\"startLine\":0,\"lineCount\":2,\"include\":[\"diagnostics\"]}",
           main_id);
    assert_int_equal(test_json_length(r, "diagnostics"), 0);
    free(r);
}

/* A document opened by its plain path reaches the server under its file://
 * URI (servers know no other kind), and either spelling finds its
 * diagnostics. */
static void test_a_document_opened_by_its_path(void **state)
{
    (void)state;
    write_at("plain.c", "int f(void) { return missing_too; }\n");
    char path[160];
    snprintf(path, sizeof path, "%s/plain.c", top);
    char *r = ok("document/open", "{\"uri\":\"%s\"}", path);
    free(r);
    char *uri = uri_of("plain.c");
    char *p = wait_diagnostics(uri, true);
    char *msg = test_json_string(p, "diagnostics[0].message");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "missing_too"));
    free(msg);
    free(p);
    r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", path);
    assert_true(test_json_length(r, "diagnostics") >= 1);
    free(r);
    free(uri);
}

static void test_queries_come_back_in_the_catalogue_shapes(void **state)
{
    (void)state;
    /* hover over the call of add */
    char *r = ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":2,\"character\":17}}", main_uri);
    char *value = test_json_string(r, "contents.value");
    assert_non_null(value);
    assert_non_null(strstr(value, "add"));
    free(value);
    free(r);

    /* completion inside "total" on line 3 */
    r = ok("lsp/completion", "{\"uri\":\"%s\",\"position\":{\"line\":3,\"character\":14}}", main_uri);
    assert_true(test_json_length(r, "items") >= 1);
    assert_non_null(strstr(r, "total"));
    free(r);

    r = ok("lsp/definition", "{\"uri\":\"%s\",\"position\":{\"line\":2,\"character\":17}}", main_uri);
    assert_int_equal(test_json_length(r, "locations"), 1);
    int64_t line = -1;
    assert_true(test_json_int(r, "locations[0].range.start.line", &line));
    assert_int_equal(line, 0);
    want_string(r, "locations[0].uri", main_uri);
    free(r);

    r = ok("lsp/references", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":5}}", main_uri);
    assert_int_equal(test_json_length(r, "locations"), 2);
    free(r);
    r = ok("lsp/references", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":5},\"includeDeclaration\":false}",
           main_uri);
    assert_int_equal(test_json_length(r, "locations"), 1);
    free(r);

    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", main_uri);
    assert_int_equal(test_json_length(r, "symbols"), 2);
    want_string(r, "symbols[0].name", "add");
    want_string(r, "symbols[1].name", "main");
    free(r);

    r = ok("lsp/rename", "{\"uri\":\"%s\",\"position\":{\"line\":2,\"character\":9},\"newName\":\"sum\"}", main_uri);
    char path[400];
    snprintf(path, sizeof path, "edit.changes.%s", main_uri);
    /* dots in the uri are keys' own: escape them for the path reader */
    char escaped[800];
    size_t o = 0;
    for (const char *c = path; *c && o < sizeof escaped - 3; c++) {
        if (*c == '.' && c > path + strlen("edit.changes"))
            escaped[o++] = '\\';
        escaped[o++] = *c;
    }
    escaped[o] = '\0';
    assert_int_equal(test_json_length(r, escaped), 2);
    assert_non_null(strstr(r, "\"newText\":\"sum\""));
    free(r);

    r = ok("lsp/format", "{\"uri\":\"%s\"}", main_uri);
    assert_true(test_json_length(r, "") >= 1);
    assert_non_null(strstr(r, "newText"));
    free(r);

    r = ok("lsp/codeAction",
           "{\"uri\":\"%s\",\"range\":{\"start\":{\"line\":3,\"character\":19},\"end\":{\"line\":3,\"character\":26}}}",
           main_uri);
    assert_true(test_json_length(r, "") >= 0);
    free(r);

    r = ok("lsp/signatureHelp", "{\"uri\":\"%s\",\"position\":{\"line\":2,\"character\":20}}", main_uri);
    assert_non_null(strstr(r, "signatures"));
    free(r);
}

static void test_edits_reach_the_server_incrementally(void **state)
{
    (void)state;
    test_client_clear_notifications(cl);
    /* "missing" -> "0": the error goes away */
    char *r = ok("document/edit",
                 "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":3,\"column\":19},"
                 "\"end\":{\"line\":3,\"column\":26}},\"text\":\"0\"}]}",
                 main_id);
    free(r);
    free(wait_diagnostics(main_uri, false));

    /* a new error on a new line: where the server puts it shows it has our text */
    test_client_clear_notifications(cl);
    r = ok("document/edit",
           "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":2,\"column\":0},"
           "\"end\":{\"line\":2,\"column\":0}},\"text\":\"    int other = nothing_here;\\n\"}]}",
           main_id);
    free(r);
    char *p = wait_diagnostics(main_uri, true);
    int64_t line = -1, character = -1;
    assert_true(test_json_int(p, "diagnostics[0].range.start.line", &line));
    assert_true(test_json_int(p, "diagnostics[0].range.start.character", &character));
    assert_int_equal(line, 2);
    assert_int_equal(character, 16);
    free(p);

    /* undo is an edit like any other */
    test_client_clear_notifications(cl);
    free(ok("document/undo", "{\"documentId\":\"%s\"}", main_id));
    free(wait_diagnostics(main_uri, false));
}

/* clangd speaks UTF-8; the client counts UTF-16 units: every column is converted both ways. */
static void test_columns_are_converted_for_a_server_that_speaks_utf8(void **state)
{
    (void)state;
    char *r = ok("lsp/status", "{\"languageId\":\"c\"}");
    want_string(r, "servers[0].positionEncoding", "utf-8");
    free(r);
    write_at("wide.c", "int add(int a, int b);\nint f(void) {\n/* \xc3\xa9\xf0\x9f\x98\x80 */ int y = add(1, 2) + missing;\n"
                       "return y; }\n");
    char *uri = uri_of("wide.c");
    test_client_clear_notifications(cl);
    char *id = open_document("wide.c");
    char *p = wait_diagnostics(uri, true);
    int64_t character = -1;
    assert_true(test_json_int(p, "diagnostics[0].range.start.character", &character));
    assert_int_equal(character, 30); /* 33 in bytes */
    assert_true(test_json_int(p, "diagnostics[0].range.end.character", &character));
    assert_int_equal(character, 37);
    free(p);
    r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", uri);
    assert_true(test_json_int(r, "diagnostics[0].range.start.character", &character));
    assert_int_equal(character, 30);
    free(r);

    /* hover at UTF-16 column 19, inside "add" (byte 22) */
    r = ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":2,\"character\":19}}", uri);
    assert_non_null(strstr(r, "add"));
    assert_true(test_json_int(r, "range.start.character", &character));
    assert_int_equal(character, 18);
    free(r);

    /* an edit in UTF-16 columns after the emoji reaches clangd in bytes: "missing" -> "0" */
    test_client_clear_notifications(cl);
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":2,\"column\":30},"
            "\"end\":{\"line\":2,\"column\":37}},\"text\":\"0\"}]}",
            id));
    free(wait_diagnostics(uri, false));
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(uri);
}

static void test_save_as_moves_the_document_on_the_server(void **state)
{
    (void)state;
    write_at("before.c", "int before_rename(void) { return 0; }\n");
    char *old_uri = uri_of("before.c"), *new_uri = uri_of("after.c");
    char *id = open_document("before.c");
    char *r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", old_uri);
    want_string(r, "symbols[0].name", "before_rename");
    free(r);
    free(ok("document/save", "{\"documentId\":\"%s\",\"uri\":\"%s\"}", id, new_uri));
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", new_uri);
    want_string(r, "symbols[0].name", "before_rename");
    free(r);
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", old_uri);
    assert_string_equal(r, "{\"symbols\":[]}");
    free(r);
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(old_uri);
    free(new_uri);
}

static void test_a_document_the_client_holds(void **state)
{
    (void)state;
    char *uri = uri_of("held.c");
    test_client_clear_notifications(cl);
    free(ok("lsp/documentOpen", "{\"uri\":\"%s\",\"languageId\":\"c\",\"content\":\"int f(void) { return nope; }\\n\"}",
            uri));
    free(wait_diagnostics(uri, true));
    test_client_clear_notifications(cl);
    free(ok("lsp/documentChange", "{\"uri\":\"%s\",\"content\":\"int f(void) { return 1; }\\n\",\"version\":2}", uri));
    free(wait_diagnostics(uri, false));
    char *r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", uri);
    want_string(r, "symbols[0].name", "f");
    free(r);
    free(ok("lsp/documentSave", "{\"uri\":\"%s\"}", uri));
    free(ok("lsp/documentClose", "{\"uri\":\"%s\"}", uri));
    r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", uri);
    assert_string_equal(r, "{\"diagnostics\":[]}");
    free(r);
    /* closed: no server has it any more */
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", uri);
    assert_string_equal(r, "{\"symbols\":[]}");
    free(r);
    free(uri);
}

/* A code action that is a command (clangd's tweaks, which it offers for C++)
 * runs through lsp/executeCommand: clangd answers with workspace/applyEdit,
 * which edits the open document before the command's answer arrives. */
static void test_a_code_action_command_runs_and_edits(void **state)
{
    (void)state;
    char root[128];
    snprintf(root, sizeof root, "file://%s", top);
    free(ok("lsp/start", "{\"languageId\":\"cpp\",\"workspaceUri\":\"%s\"}", root));
    write_at("tweak.cpp", "int twice(int v) { return v * 2; }\n"
                        "int use(int a) {\n"
                        "    return twice(a + 1) * 3;\n"
                        "}\n");
    char *uri = uri_of("tweak.cpp");
    char *doc = open_document("tweak.cpp");
    free(wait_diagnostics(uri, false));
    /* "a + 1" selected */
    char *r = ok("lsp/codeAction",
                 "{\"uri\":\"%s\",\"range\":{\"start\":{\"line\":2,\"character\":17},"
                 "\"end\":{\"line\":2,\"character\":22}}}",
                 uri);
    long n = test_json_length(r, "");
    char *command = NULL, *arguments = NULL;
    for (long i = 0; i < n && !command; i++) {
        char path[64];
        snprintf(path, sizeof path, "[%ld].title", i);
        char *title = test_json_string(r, path);
        if (title && strstr(title, "Extract subexpression")) {
            snprintf(path, sizeof path, "[%ld].command.command", i);
            command = test_json_string(r, path);
            snprintf(path, sizeof path, "[%ld].command.arguments", i);
            arguments = test_json_raw(r, path);
        }
        free(title);
    }
    if (!command)
        fail_msg("clangd offered no \"Extract subexpression\" command: %s", r);
    free(r);
    assert_string_equal(command, "clangd.applyTweak");
    assert_non_null(arguments);

    r = ok("lsp/executeCommand", "{\"uri\":\"%s\",\"command\":\"%s\",\"arguments\":%s}", uri, command, arguments);
    free(r);
    r = ok("document/content", "{\"documentId\":\"%s\"}", doc);
    char *text = test_json_string(r, "content");
    /* the expression now has a variable of its own, and the call uses it */
    assert_non_null(text);
    if (!strstr(text, " = a + 1;\n") || strstr(text, "twice(a + 1)"))
        fail_msg("the tweak did not edit the document: %s", text);
    free(text);
    free(r);

    /* a command for a document no server has has nowhere to run: an error, not a silent null */
    free(fails(-32405, "lsp/executeCommand", "{\"uri\":\"file:///nowhere/x.c\",\"command\":\"%s\"}", command));
    /* a mistyped argument list is refused before anything runs */
    free(fails(-32602, "lsp/executeCommand", "{\"uri\":\"%s\",\"command\":\"%s\",\"arguments\":{}}", uri, command));
    free(command);
    free(arguments);
    free(ok("document/close", "{\"documentId\":\"%s\"}", doc));
    free(ok("lsp/stop", "{\"languageId\":\"cpp\"}"));
    free(doc);
    free(uri);
}

static void test_a_document_no_server_has_gets_empty_results(void **state)
{
    (void)state;
    const char *u = "file:///nowhere/x.c";
    char *r = ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_string_equal(r, "null");
    free(r);
    r = ok("lsp/completion", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_string_equal(r, "{\"items\":[]}");
    free(r);
    r = ok("lsp/definition", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_string_equal(r, "{\"locations\":[]}");
    free(r);
    r = ok("lsp/rename", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0},\"newName\":\"x\"}", u);
    assert_string_equal(r, "{\"edit\":null}");
    free(r);
    r = ok("lsp/format", "{\"uri\":\"%s\"}", u);
    assert_string_equal(r, "[]");
    free(r);
    r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", u);
    assert_string_equal(r, "{\"diagnostics\":[]}");
    free(r);
}

static void test_params_and_configuration(void **state)
{
    (void)state;
    free(fails(-32602, "lsp/hover", "{\"position\":{\"line\":0,\"character\":0}}"));
    free(fails(-32602, "lsp/hover", "{\"uri\":\"file:///a.c\"}"));
    free(fails(-32602, "lsp/hover", "{\"uri\":\"file:///a.c\",\"position\":{\"line\":-1,\"character\":0}}"));
    free(fails(-32602, "lsp/start", "{}"));
    free(fails(-32602, "lsp/setServerConfig", "{\"languageId\":\"zig\",\"config\":{}}"));
    free(fails(-32400, "lsp/start", "{\"languageId\":\"cobol\"}"));
    free(ok("config/set", "{\"key\":\"lsp.enabled\",\"value\":false}"));
    free(fails(-32409, "lsp/start", "{\"languageId\":\"c\"}"));
    free(ok("config/set", "{\"key\":\"lsp.enabled\",\"value\":true}"));

    char *r = ok("lsp/getLanguageId", "{\"filePath\":\"/a/b.tsx\"}");
    assert_string_equal(r, "{\"languageId\":\"typescriptreact\"}");
    free(r);
    r = ok("lsp/getLanguageId", "{\"filePath\":\"/a/b.hpp\"}");
    assert_string_equal(r, "{\"languageId\":\"cpp\"}");
    free(r);
    r = ok("lsp/getLanguageId", "{\"filePath\":\"/a/README\"}");
    assert_string_equal(r, "{\"languageId\":null}");
    free(r);
    r = ok("lsp/hasServerFor", "{\"languageId\":\"python\"}");
    assert_string_equal(r, "{\"available\":true}");
    free(r);
    r = ok("lsp/hasServerFor", "{\"languageId\":\"cobol\"}");
    assert_string_equal(r, "{\"available\":false}");
    free(r);
    r = ok("lsp/getServerConfig", "{\"languageId\":\"c\"}");
    want_string(r, "config.command", "clangd");
    free(r);
    r = ok("lsp/getServerConfig", "{\"languageId\":\"cobol\"}");
    assert_string_equal(r, "{\"config\":null}");
    free(r);
    free(ok("lsp/setServerConfig",
            "{\"languageId\":\"zig\",\"config\":{\"command\":\"zls\",\"args\":[\"--x\"],\"settings\":{\"a\":1},"
            "\"env\":{\"K\":\"v\"},\"requestTimeoutMs\":5000}}"));
    r = ok("lsp/getServerConfig", "{\"languageId\":\"zig\"}");
    assert_string_equal(r, "{\"config\":{\"command\":\"zls\",\"args\":[\"--x\"],\"settings\":{\"a\":1},"
                           "\"requestTimeoutMs\":5000,\"env\":{\"K\":\"v\"}}}");
    free(r);
}

static void test_a_missing_binary(void **state)
{
    (void)state;
    free(ok("lsp/setServerConfig", "{\"languageId\":\"rust\",\"config\":{\"command\":\"ecpd-no-such-server\"}}"));
    char *e = fails(-32401, "lsp/start", "{\"languageId\":\"rust\"}");
    want_string(e, "message", "Language server not found: ecpd-no-such-server");
    free(e);
    test_client_clear_notifications(cl);
    char *u = uri_of("lib.rs");
    char *r = ok("lsp/documentOpen", "{\"uri\":\"%s\",\"languageId\":\"rust\",\"content\":\"fn main() {}\"}", u);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    char *st = wait_status("rust", "error");
    want_string(st, "error", "Language server not found: ecpd-no-such-server");
    free(st);
    /* a request to a server that failed says so */
    e = fails(-32402, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_non_null(strstr(e, "not running"));
    free(e);
    free(ok("lsp/documentClose", "{\"uri\":\"%s\"}", u));
    free(u);
    /* the other server did not notice */
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", main_uri);
    assert_int_equal(test_json_length(r, "symbols"), 2);
    free(r);
}

static void test_a_killed_server_is_restarted_with_its_documents(void **state)
{
    (void)state;
    pid_t pid = clangd_pid();
    assert_true(pid > 0);
    test_client_clear_notifications(cl);
    kill(pid, SIGKILL);
    char *st = wait_status("c", "error");
    assert_non_null(strstr(st, "signal 9"));
    free(st);
    free(wait_status("c", "ready"));
    assert_true(clangd_pid() != pid);
    /* reopened: clangd publishes for it again, and answers about it */
    free(wait_diagnostics(main_uri, false));
    char *r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", main_uri);
    assert_int_equal(test_json_length(r, "symbols"), 2);
    free(r);
    /* edits after the restart still reach it */
    test_client_clear_notifications(cl);
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":3,\"column\":19},"
            "\"end\":{\"line\":3,\"column\":20}},\"text\":\"gone\"}]}",
            main_id));
    free(wait_diagnostics(main_uri, true));
}

static void test_stop_ends_the_process(void **state)
{
    (void)state;
    pid_t pid = clangd_pid();
    assert_true(pid > 0);
    char *plain = uri_of("plain.c");
    char *r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", plain);
    assert_true(test_json_length(r, "diagnostics") >= 1);
    free(r);
    test_client_clear_notifications(cl);
    free(ok("lsp/stop", "{\"languageId\":\"c\"}"));
    free(wait_status("c", "stopped"));
    /* a stopped server's diagnostics go with it, and clients hear so */
    free(wait_diagnostics(plain, false));
    r = ok("lsp/diagnostics", "{\"uri\":\"%s\"}", plain);
    assert_int_equal(test_json_length(r, "diagnostics"), 0);
    free(r);
    free(plain);
    r = ok("lsp/status", "{}");
    assert_string_equal(r, "{\"servers\":[{\"languageId\":\"rust\",\"status\":\"error\","
                           "\"error\":\"Language server not found: ecpd-no-such-server\"}]}");
    free(r);
    double end = now_ms() + WAIT_MS;
    while (clangd_pid() == pid && now_ms() < end)
        test_server_run_for(srv, 50);
    assert_true(clangd_pid() != pid);
    /* stopped: the document is no server's any more */
    r = ok("lsp/documentSymbol", "{\"uri\":\"%s\"}", main_uri);
    assert_string_equal(r, "{\"symbols\":[]}");
    free(r);
    free(ok("lsp/stop", "{\"languageId\":\"c\"}"));
}

int main(void)
{
    if (!have_program("clangd")) {
        fprintf(stderr, "SKIP: clangd is not installed\n");
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_start_reports_ready_with_capabilities),
        cmocka_unit_test(test_an_open_document_gets_its_diagnostics),
        cmocka_unit_test(test_a_document_opened_by_its_path),
        cmocka_unit_test(test_queries_come_back_in_the_catalogue_shapes),
        cmocka_unit_test(test_edits_reach_the_server_incrementally),
        cmocka_unit_test(test_columns_are_converted_for_a_server_that_speaks_utf8),
        cmocka_unit_test(test_save_as_moves_the_document_on_the_server),
        cmocka_unit_test(test_a_document_the_client_holds),
        cmocka_unit_test(test_a_code_action_command_runs_and_edits),
        cmocka_unit_test(test_a_document_no_server_has_gets_empty_results),
        cmocka_unit_test(test_params_and_configuration),
        cmocka_unit_test(test_a_missing_binary),
        cmocka_unit_test(test_a_killed_server_is_restarted_with_its_documents),
        cmocka_unit_test(test_stop_ends_the_process),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
