/* The lsp service against servers that misbehave (tests/lsp/fake_server.py):
 * one that writes garbage, one that exits during initialize, one that never
 * answers initialize, one that never answers anything else (and says which
 * cancellations reach it), one that sends a message too large to take, and
 * one that asks the client things (workspace/applyEdit,
 * workspace/configuration, window/showMessageRequest, a request nobody
 * knows), talks (showMessage, $/progress) and does not format. Each fault
 * gets its code, and every other server keeps working. Every server logs
 * what it reads, which shows what reached it: the document's sync and the
 * shutdown of lsp/stop. */
#include "lsp_fixture.h"

/* Every server logs what it reads to <top>/<language>.log. */
static void configure(const char *language, const char *mode, int timeout_ms)
{
    free(ok("lsp/setServerConfig",
            "{\"languageId\":\"%s\",\"config\":{\"command\":\"python3\",\"args\":[\"%s\",\"%s\",\"%s/%s.log\"],"
            "\"settings\":{\"fake\":{\"answer\":42}},\"requestTimeoutMs\":%d}}",
            language, ECPD_LSP_FAKE_SERVER, mode, top, language, timeout_ms));
}

/* The first line from `after` on of what the server of language read that
 * contains both needles, as an offset in its log, or -1. */
static long logged(const char *language, long after, const char *needle, const char *also)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s.log", top, language);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t size = 1 << 16;
    char *line = malloc(size);
    long found = -1;
    for (long at = ftell(f); fgets(line, (int)size, f); at = ftell(f))
        if (at >= after && strstr(line, needle) && (!also || strstr(line, also))) {
            found = at;
            break;
        }
    free(line);
    fclose(f);
    return found;
}

/* Runs the loop until logged() finds the line. */
static long wait_logged(const char *language, long after, const char *needle, const char *also)
{
    double end = now_ms() + WAIT_MS;
    long at;
    while ((at = logged(language, after, needle, also)) < 0 && now_ms() < end)
        test_server_run_for(srv, 20);
    if (at < 0)
        fail_msg("the %s server never read %s %s", language, needle, also ? also : "");
    return at;
}

/* Opens a held document of language and returns its uri. */
static char *held(const char *language)
{
    char *u = malloc(300);
    snprintf(u, 300, "file://%s/%s.txt", top, language);
    free(ok("lsp/documentOpen", "{\"uri\":\"%s\",\"languageId\":\"%s\",\"content\":\"text\\n\"}", u, language));
    return u;
}

static char *hover(const char *uri) { return ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", uri); }

/* The well-behaved server is asked after every fault: it must still answer. */
static void normal_still_answers(void)
{
    char *u = uri_of("normal.txt");
    char *r = hover(u);
    assert_non_null(strstr(r, "applied"));
    free(r);
    free(u);
}

static void test_a_server_that_asks_the_client_things(void **state)
{
    (void)state;
    configure("plaintext", "normal", 10000);
    write_at("normal.txt", "hello\n");
    free(ok("lsp/start", "{\"languageId\":\"plaintext\"}"));
    char *id = open_document("normal.txt");
    char *u = uri_of("normal.txt");
    test_client_clear_notifications(cl);
    char *r = hover(u);
    /* applyEdit applied, the unknown request refused with -32601, configuration from the
     * server's settings, else the editor's, registerCapability, workDoneProgress/create and
     * showMessageRequest answered null */
    char *contents = test_json_string(r, "contents");
    assert_string_equal(contents, "[{\"applied\": true}, -32601, [42, null, 2], true, true, true]");
    free(contents);
    free(r);
    r = ok("document/content", "{\"documentId\":\"%s\"}", id);
    assert_non_null(strstr(r, "// ok\\nhello"));
    free(r);
    /* one undoable step */
    free(ok("document/undo", "{\"documentId\":\"%s\"}", id));
    r = ok("document/content", "{\"documentId\":\"%s\"}", id);
    assert_null(strstr(r, "// ok"));
    free(r);

    /* the showMessageRequest, then the showMessage */
    assert_true(test_client_wait_notifications(cl, "lsp/didShowMessage", 2, WAIT_MS));
    const char *m = test_client_notification(cl, "lsp/didShowMessage", 0);
    want_string(m, "languageId", "plaintext");
    want_string(m, "message", "choose");
    want_string(m, "actions[0].title", "A");
    m = test_client_notification(cl, "lsp/didShowMessage", 1);
    want_string(m, "languageId", "plaintext");
    want_string(m, "message", "hello");
    assert_true(test_client_wait_notifications(cl, "lsp/progress", 1, WAIT_MS));
    const char *p = test_client_notification(cl, "lsp/progress", 0);
    assert_string_equal(p, "{\"languageId\":\"plaintext\",\"token\":\"t1\",\"value\":{\"kind\":\"begin\"}}");

    /* a server without the method: NotSupported, not a failure */
    char *e = fails(-32408, "lsp/format", "{\"uri\":\"%s\"}", u);
    assert_non_null(strstr(e, "does not support textDocument/formatting"));
    free(e);
    free(u);
    free(id);
}

static void test_garbage_stops_that_server_only(void **state)
{
    (void)state;
    configure("fakegarbage", "garbage", 10000);
    free(ok("lsp/start", "{\"languageId\":\"fakegarbage\"}"));
    char *u = held("fakegarbage");
    test_client_clear_notifications(cl);
    char *e = fails(-32404, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_non_null(strstr(e, "not LSP"));
    free(e);
    char *st = wait_status("fakegarbage", "error");
    assert_non_null(strstr(st, "not LSP"));
    free(st);
    free(u);
    normal_still_answers();
    free(ok("lsp/stop", "{\"languageId\":\"fakegarbage\"}"));
}

static void test_exit_during_initialize_fails_the_start(void **state)
{
    (void)state;
    configure("fakeexit", "exit-on-init", 10000);
    char *e = fails(-32401, "lsp/start", "{\"languageId\":\"fakeexit\"}");
    assert_non_null(strstr(e, "exited with code 3"));
    free(e);
    char *r = ok("lsp/status", "{\"languageId\":\"fakeexit\"}");
    want_string(r, "servers[0].status", "error");
    free(r);
    normal_still_answers();
}

/* Until initialize is answered nothing but initialize reaches a server, yet
 * a server that asks something first gets its answer; what was sent while it
 * started (a hover) reaches it after initialized and the documents. The
 * config's env is set over ours. */
static void test_a_server_that_asks_before_answering_initialize(void **state)
{
    (void)state;
    setenv("ECPD_FAKE_ENV", "ours", 1);
    free(ok("lsp/setServerConfig",
            "{\"languageId\":\"asksfirst\",\"config\":{\"command\":\"python3\",\"args\":[\"%s\",\"asks-first\","
            "\"%s/asksfirst.log\"],\"settings\":{\"fake\":{\"answer\":42}},\"env\":{\"ECPD_FAKE_ENV\":\"the config's\"}}}",
            ECPD_LSP_FAKE_SERVER, top));
    char *u = held("asksfirst"); /* starts the server */
    free(hover(u));
    long at = wait_logged("asksfirst", 0, "\"method\":\"initialize\"", NULL);
    at = wait_logged("asksfirst", at + 1, "\"result\":[42]", NULL);
    at = wait_logged("asksfirst", at + 1, "\"method\":\"initialized\"", NULL);
    at = wait_logged("asksfirst", at + 1, "\"textDocument/didOpen\"", "asksfirst.txt");
    wait_logged("asksfirst", at + 1, "\"textDocument/hover\"", NULL);
    assert_true(logged("asksfirst", 0, "\"textDocument/hover\"", NULL) > at);
    assert_true(logged("asksfirst", 0, "{\"env\": \"the config's\"}", NULL) == 0);
    free(ok("lsp/stop", "{\"languageId\":\"asksfirst\"}"));
    unsetenv("ECPD_FAKE_ENV");
    free(u);
}

/* Whether a fake server in mode is still our child. The brackets keep the
 * pattern from matching the shell that runs pgrep, a child of ours too. */
static bool fake_running(const char *mode)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "pgrep -P %d -f '[f]ake_server[.]py %s$' >/dev/null", (int)getpid(), mode);
    return system(cmd) == 0;
}

static void test_a_server_that_never_answers_initialize_fails_the_start(void **state)
{
    (void)state;
    /* the request timeout is shorter than starting takes: initialize gets 5 s */
    configure("fakemute", "mute", 300);
    double t0 = now_ms();
    char *e = fails(-32401, "lsp/start", "{\"languageId\":\"fakemute\"}");
    assert_true(now_ms() - t0 >= 4900);
    assert_non_null(strstr(e, "did not answer initialize within 5000 ms"));
    free(e);
    char *r = ok("lsp/status", "{\"languageId\":\"fakemute\"}");
    want_string(r, "servers[0].status", "error");
    free(r);
    /* and it is not left running */
    double end = now_ms() + WAIT_MS;
    while (fake_running("mute") && now_ms() < end)
        test_server_run_for(srv, 20);
    assert_false(fake_running("mute"));
    normal_still_answers();
}

static void test_a_server_that_never_answers_times_out(void **state)
{
    (void)state;
    configure("fakesilent", "silent", 300);
    free(ok("lsp/start", "{\"languageId\":\"fakesilent\"}"));
    char *u = held("fakesilent");
    test_client_clear_notifications(cl);
    double t0 = now_ms();
    char *e = fails(-32403, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_true(now_ms() - t0 >= 250);
    assert_non_null(strstr(e, "did not answer textDocument/hover within 300 ms"));
    free(e);
    /* the server was told to give up on it */
    assert_true(test_client_wait_notifications(cl, "lsp/didShowMessage", 1, WAIT_MS));
    want_string(test_client_notification(cl, "lsp/didShowMessage", 0), "languageId", "fakesilent");
    assert_non_null(strstr(test_client_notification(cl, "lsp/didShowMessage", 0), "cancelled "));
    /* a request the client cancels is withdrawn from the server too */
    int64_t id = test_client_send(cl, "lsp/hover", "{\"uri\":\"file:///x\",\"position\":{\"line\":0,\"character\":0}}");
    char *r = NULL;
    assert_int_equal(test_client_wait_response(cl, id, WAIT_MS, &r), 0);
    free(r);
    char params[512];
    snprintf(params, sizeof params, "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    id = test_client_send(cl, "lsp/hover", params);
    char cancel[64];
    snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)id);
    test_client_notify(cl, "$/cancelRequest", cancel);
    assert_int_equal(test_client_wait_response(cl, id, WAIT_MS, &r), -32800);
    free(r);
    assert_true(test_client_wait_notifications(cl, "lsp/didShowMessage", 2, WAIT_MS));
    assert_non_null(strstr(test_client_notification(cl, "lsp/didShowMessage", 1), "cancelled "));
    free(u);
    normal_still_answers();
    free(ok("lsp/stop", "{\"languageId\":\"fakesilent\"}"));
}

/* With no requestTimeoutMs of its own, a server's requests have the
 * lsp.requestTimeoutMs setting's time, read when each one starts. */
static void test_the_request_timeout_setting_bounds_a_server_without_its_own(void **state)
{
    (void)state;
    configure("fakequiet", "silent", 0);
    free(ok("config/set", "{\"key\":\"lsp.requestTimeoutMs\",\"value\":400}"));
    free(ok("lsp/start", "{\"languageId\":\"fakequiet\"}"));
    char *u = held("fakequiet");
    double t0 = now_ms();
    char *e = fails(-32403, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_true(now_ms() - t0 >= 350);
    assert_non_null(strstr(e, "did not answer textDocument/hover within 400 ms"));
    free(e);
    free(ok("config/set", "{\"key\":\"lsp.requestTimeoutMs\",\"value\":700}"));
    e = fails(-32403, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    assert_non_null(strstr(e, "within 700 ms"));
    free(e);
    free(ok("config/reset", "{\"key\":\"lsp.requestTimeoutMs\"}"));
    free(u);
    free(ok("lsp/stop", "{\"languageId\":\"fakequiet\"}"));
}

static void test_a_huge_message_is_dropped_and_the_server_kept(void **state)
{
    (void)state;
    configure("fakehuge", "huge", 1500);
    free(ok("lsp/start", "{\"languageId\":\"fakehuge\"}"));
    char *u = held("fakehuge");
    free(fails(-32403, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u));
    /* the server may still be writing its 65 MiB on a loaded machine: ask until it answers */
    char *r = NULL;
    for (int attempt = 0; attempt < 20 && !r; attempt++) {
        char params[512];
        snprintf(params, sizeof params, "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
        int rc = test_client_request(cl, "lsp/hover", params, &r);
        if (rc != 0) {
            assert_int_equal(rc, -32403);
            free(r);
            r = NULL;
        }
    }
    assert_non_null(r);
    char *contents = test_json_string(r, "contents");
    assert_string_equal(contents, "[]");
    free(contents);
    free(r);
    free(u);
    normal_still_answers();
}

static size_t status_count(const char *language, const char *status)
{
    size_t n = 0, total = test_client_notification_count(cl, "lsp/serverStatusChanged");
    for (size_t i = 0; i < total; i++) {
        const char *p = test_client_notification(cl, "lsp/serverStatusChanged", i);
        char *l = test_json_string(p, "languageId"), *st = test_json_string(p, "status");
        n += l && st && !strcmp(l, language) && !strcmp(st, status);
        free(l);
        free(st);
    }
    return n;
}

static void test_a_crashing_server_is_restarted_three_times_a_minute(void **state)
{
    (void)state;
    configure("fakecrash", "crash", 10000);
    free(ok("lsp/start", "{\"languageId\":\"fakecrash\"}"));
    char *u = held("fakecrash");
    test_client_clear_notifications(cl);
    for (size_t round = 1; round <= 4; round++) {
        char *e = fails(-32404, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
        assert_non_null(strstr(e, "exited with code 9"));
        free(e);
        if (round == 4)
            break;
        double end = now_ms() + WAIT_MS;
        while (status_count("fakecrash", "ready") < round && now_ms() < end)
            test_server_run_for(srv, 20);
        assert_int_equal(status_count("fakecrash", "ready"), round);
    }
    /* the fourth crash within a minute: it stays down */
    test_server_run_for(srv, 2500);
    assert_int_equal(status_count("fakecrash", "starting"), 3);
    char *r = ok("lsp/status", "{\"languageId\":\"fakecrash\"}");
    want_string(r, "servers[0].status", "error");
    free(r);
    free(fails(-32402, "lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u));
    free(u);
    normal_still_answers();
    /* a start asked for by hand tries again */
    free(ok("lsp/start", "{\"languageId\":\"fakecrash\"}"));
    free(ok("lsp/stop", "{\"languageId\":\"fakecrash\"}"));
}

/* What the editor does to a document reaches its server: the open with its
 * text, each edit as an incremental change (the whole text for a server that
 * asks for it), the save, the close; and lsp/stop is shutdown then exit. */
static void test_the_server_hears_the_document_and_the_stop(void **state)
{
    (void)state;
    write_at("sync.txt", "one\ntwo\n");
    char *id = open_document("sync.txt");
    long at = wait_logged("plaintext", 0, "\"textDocument/didOpen\"", "one\\ntwo\\n");
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":1,\"column\":1},"
            "\"end\":{\"line\":1,\"column\":2}},\"text\":\"W\"}]}",
            id));
    at = wait_logged("plaintext", at, "\"textDocument/didChange\"",
                     "\"range\":{\"start\":{\"line\":1,\"character\":1},\"end\":{\"line\":1,\"character\":2}}");
    assert_true(logged("plaintext", at, "\"text\":\"W\"", NULL) == at);
    free(ok("document/save", "{\"documentId\":\"%s\"}", id));
    at = wait_logged("plaintext", at, "\"textDocument/didSave\"", "sync.txt");
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    at = wait_logged("plaintext", at, "\"textDocument/didClose\"", "sync.txt");
    free(id);
    free(ok("lsp/stop", "{\"languageId\":\"plaintext\"}"));
    at = wait_logged("plaintext", at, "\"method\":\"shutdown\"", NULL);
    wait_logged("plaintext", at, "\"method\":\"exit\"", NULL);

    /* a server that asks for whole-text sync gets the whole text on every edit */
    configure("plaintext", "fullsync", 10000);
    free(ok("lsp/start", "{\"languageId\":\"plaintext\"}"));
    id = open_document("sync.txt");
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},"
            "\"end\":{\"line\":0,\"column\":0}},\"text\":\"zero\\n\"}]}",
            id));
    at = wait_logged("plaintext", at, "\"textDocument/didChange\"", "\"contentChanges\":[{\"text\":\"zero\\none\\ntWo\\n\"}]");
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(ok("lsp/stop", "{\"languageId\":\"plaintext\"}"));
}

/* A whole-text change of a big document is made off the loop, from a
 * snapshot, and so is a huge inserted text; what is sent after them (the
 * next change, a request) still reaches the server after them, with the text
 * each change had when it was made. */
static void test_big_changes_reach_the_server_in_order(void **state)
{
    (void)state;
    size_t lines = 20000; /* about 440 KiB: past what is made on the loop */
    char *big = malloc(lines * 32 + 16);
    char *p = big + sprintf(big, "first\n");
    for (size_t i = 0; i < lines; i++)
        p += sprintf(p, "line %08zu \"quoted\"\n", i);
    write_at("big.txt", big);
    free(big);
    const char *edit = "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},"
                       "\"end\":{\"line\":0,\"column\":0}},\"text\":\"%s\"}]}";

    configure("plaintext", "fullsync", 10000);
    free(ok("lsp/start", "{\"languageId\":\"plaintext\"}"));
    char *id = open_document("big.txt");
    char *u = uri_of("big.txt");
    long opened = wait_logged("plaintext", 0, "\"textDocument/didOpen\"", "big.txt"), at = opened;
    free(ok("document/edit", edit, id, "A"));
    free(ok("document/edit", edit, id, "B"));
    free(hover(u));
    at = wait_logged("plaintext", at, "\"textDocument/didChange\"", "\"text\":\"Afirst\\nline 00000000 \\\"quoted");
    at = wait_logged("plaintext", at + 1, "\"textDocument/didChange\"", "\"text\":\"BAfirst\\n");
    wait_logged("plaintext", at + 1, "\"textDocument/hover\"", NULL);
    assert_true(logged("plaintext", opened, "\"textDocument/hover\"", NULL) > at);
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(ok("lsp/stop", "{\"languageId\":\"plaintext\"}"));

    /* an incremental server: the huge text of one change is escaped off the loop */
    configure("plaintext", "utf8", 10000);
    free(ok("lsp/start", "{\"languageId\":\"plaintext\"}"));
    id = open_document("big.txt");
    at = opened = wait_logged("plaintext", at, "\"textDocument/didOpen\"", "big.txt");
    size_t n = 100000;
    char *paste = malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++)
        memcpy(paste + 2 * i, "\\t", 2); /* a tab, escaped in the edit's JSON */
    paste[n * 2] = '\0';
    char *params = malloc(n * 2 + 512);
    sprintf(params, edit, id, paste);
    char *out = NULL;
    assert_int_equal(test_client_request(cl, "document/edit", params, &out), 0);
    free(out);
    free(params);
    free(paste);
    free(ok("document/edit", edit, id, "C"));
    free(hover(u));
    at = wait_logged("plaintext", at, "\"textDocument/didChange\"", "\"rangeLength\":0,\"text\":\"\\t\\t\\t");
    at = wait_logged("plaintext", at + 1, "\"textDocument/didChange\"", "\"text\":\"C\"");
    wait_logged("plaintext", at + 1, "\"textDocument/hover\"", NULL);
    assert_true(logged("plaintext", opened, "\"textDocument/hover\"", NULL) > at);
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(u);
    free(ok("lsp/stop", "{\"languageId\":\"plaintext\"}"));
}

/* Change events carry only the columns someone reads: with every client
 * counting bytes, a server that counts UTF-16 units must still get its own.
 * "\U0001F600x": x is at UTF-16 column 2, byte 4. */
static void test_a_server_gets_its_units_when_every_client_counts_bytes(void **state)
{
    (void)state;
    free(ok("initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-8\"]}}"));
    configure("fakeunits", "silent", 10000);
    free(ok("lsp/start", "{\"languageId\":\"fakeunits\"}"));
    char *u = uri_of("units.txt");
    char *r = ok("document/open", "{\"uri\":\"%s\",\"languageId\":\"fakeunits\",\"content\":\"\\ud83d\\ude00x\\n\"}", u);
    char *id = test_json_string(r, "documentId");
    free(r);
    long at = wait_logged("fakeunits", 0, "\"textDocument/didOpen\"", "units.txt");
    free(ok("document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"y\"}", id));
    wait_logged("fakeunits", at, "\"textDocument/didChange\"",
                "\"range\":{\"start\":{\"line\":0,\"character\":2},\"end\":{\"line\":0,\"character\":2}}");
    free(ok("document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
    free(u);
    free(ok("lsp/stop", "{\"languageId\":\"fakeunits\"}"));
    free(ok("initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-16\"]}}"));
}

/* A server that counts bytes gets bytes, for every position the client
 * sends (a codeAction's context included), and the client gets its own
 * units back. "\u00e9\u00e9 x": x is at UTF-16 column 3, byte 5. */
static void test_positions_reach_a_utf8_server_in_bytes(void **state)
{
    (void)state;
    configure("fakeutf8", "utf8", 10000);
    char *r = ok("lsp/start", "{\"languageId\":\"fakeutf8\"}");
    want_string(r, "positionEncoding", "utf-8");
    free(r);
    char *u = uri_of("wide.txt");
    free(ok("lsp/documentOpen", "{\"uri\":\"%s\",\"languageId\":\"fakeutf8\",\"content\":\"\\u00e9\\u00e9 x\\n\"}", u));
    r = ok("lsp/hover", "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":3}}", u);
    int64_t character = -1;
    assert_true(test_json_int(r, "position.character", &character));
    assert_int_equal(character, 3);
    free(r);
    wait_logged("fakeutf8", 0, "\"textDocument/hover\"", "\"position\":{\"line\":0,\"character\":5}");

    r = ok("lsp/codeAction",
           "{\"uri\":\"%s\",\"range\":{\"start\":{\"line\":0,\"character\":3},\"end\":{\"line\":0,\"character\":4}},"
           "\"context\":{\"diagnostics\":[{\"range\":{\"start\":{\"line\":0,\"character\":3},"
           "\"end\":{\"line\":0,\"character\":4}},\"message\":\"m\"}]}}",
           u);
    assert_true(test_json_int(r, "context.diagnostics[0].range.start.character", &character));
    assert_int_equal(character, 3);
    free(r);
    long at = wait_logged("fakeutf8", 0, "\"textDocument/codeAction\"",
                          "\"range\":{\"start\":{\"line\":0,\"character\":5},\"end\":{\"line\":0,\"character\":6}}");
    assert_true(logged("fakeutf8", at, "\"context\":{\"diagnostics\":[{\"range\":{\"start\":{\"line\":0,"
                                       "\"character\":5},\"end\":{\"line\":0,\"character\":6}}",
                       NULL) == at);
    free(u);
    free(ok("lsp/stop", "{\"languageId\":\"fakeutf8\"}"));
}

/* Left for the teardown: a request in flight and a start that has not finished. */
static void test_teardown_with_work_in_flight(void **state)
{
    (void)state;
    configure("fakeinflight", "silent", 60000);
    free(ok("lsp/start", "{\"languageId\":\"fakeinflight\"}"));
    char *u = held("fakeinflight");
    char params[512];
    snprintf(params, sizeof params, "{\"uri\":\"%s\",\"position\":{\"line\":0,\"character\":0}}", u);
    test_client_send(cl, "lsp/hover", params);
    configure("fakeslowstart", "mute", 60000);
    test_client_send(cl, "lsp/start", "{\"languageId\":\"fakeslowstart\"}");
    test_server_run_for(srv, 100);
    free(u);
}

int main(void)
{
    if (!have_program("python3")) {
        fprintf(stderr, "SKIP: python3 is not installed\n");
        return SKIP_CODE;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_server_that_asks_the_client_things),
        cmocka_unit_test(test_garbage_stops_that_server_only),
        cmocka_unit_test(test_exit_during_initialize_fails_the_start),
        cmocka_unit_test(test_a_server_that_asks_before_answering_initialize),
        cmocka_unit_test(test_a_server_that_never_answers_initialize_fails_the_start),
        cmocka_unit_test(test_a_server_that_never_answers_times_out),
        cmocka_unit_test(test_the_request_timeout_setting_bounds_a_server_without_its_own),
        cmocka_unit_test(test_a_huge_message_is_dropped_and_the_server_kept),
        cmocka_unit_test(test_a_crashing_server_is_restarted_three_times_a_minute),
        cmocka_unit_test(test_the_server_hears_the_document_and_the_stop),
        cmocka_unit_test(test_big_changes_reach_the_server_in_order),
        cmocka_unit_test(test_positions_reach_a_utf8_server_in_bytes),
        cmocka_unit_test(test_a_server_gets_its_units_when_every_client_counts_bytes),
        cmocka_unit_test(test_teardown_with_work_in_flight),
    };
    return cmocka_run_group_tests(tests, fixture_setup, fixture_teardown);
}
