/* Language servers that start by themselves: a document's opening starts its
 * language's server, with no lsp/start, and every connected client hears
 * the server's status and diagnostics. Nothing starts in a folder that is
 * not trusted until it is, nor while lsp.enabled is false, and a server that
 * is not installed is reported once, not at every open. Real servers
 * (clangd, pyright from third_party/node) through the in-process client;
 * each test has a server of its own. */
#include <sys/types.h>

#include "lsp_fixture.h"

#define BROKEN_C "int main(void) {\n    return undeclared_thing;\n}\n"

static int setup(void **state)
{
    if (fixture_setup(state))
        return -1;
    char ccj[512];
    snprintf(ccj, sizeof ccj, "[{\"directory\":\"%s\",\"file\":\"main.c\",\"command\":\"cc -c main.c\"}]\n", top);
    write_at("compile_commands.json", ccj);
    write_at("main.c", BROKEN_C);
    write_at("other.c", "int other(void) { return 1; }\n");
    return 0;
}

/* How many of our live children have a name that starts with name (clangd
 * names itself clangd.main; a killed server of an earlier test may stay a
 * zombie, its loop gone). */
static int children_named(const char *name)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd, "ps --ppid %d -o stat=,comm= | awk '$1 !~ /^Z/ && index($2, \"%s\") == 1' | wc -l",
             (int)getpid(), name);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

/* How many notifications method c has whose params hold every one of the texts (NULL-terminated). */
static size_t count_notes(test_client *c, const char *method, const char *const *texts)
{
    size_t found = 0, n = test_client_notification_count(c, method);
    for (size_t i = 0; i < n; i++) {
        const char *p = test_client_notification(c, method, i);
        bool all = true;
        for (size_t t = 0; texts && texts[t]; t++)
            all = all && strstr(p, texts[t]) != NULL;
        found += all;
    }
    return found;
}

/* Waits until client c has a notification method holding every one of texts. */
static void wait_note_on(test_client *c, const char *method, const char *const *texts)
{
    double end = now_ms() + WAIT_MS;
    while (count_notes(c, method, texts) == 0) {
        if (now_ms() > end)
            fail_msg("no %s with %s (log: %s)", method, texts[0], test_client_notification_log(c));
        test_server_run_for(srv, 20);
    }
}

/* Waits until a client has non-empty diagnostics for uri that mention what. */
static void wait_diagnostic_on(test_client *c, const char *uri, const char *what)
{
    const char *texts[] = {uri, what, NULL};
    wait_note_on(c, "lsp/didPublishDiagnostics", texts);
}

static void test_opening_a_c_file_starts_clangd_for_every_client(void **state)
{
    (void)state;
    if (!have_program("clangd"))
        skip();
    test_client *second = test_client_connect(srv);
    /* a client hears notifications once it has spoken */
    assert_int_equal(test_client_request(second, "ecp/ping", "{}", NULL), 0);
    char *uri = uri_of("main.c");
    char *id = open_document("main.c");
    wait_diagnostic_on(cl, uri, "undeclared_thing");
    wait_diagnostic_on(second, uri, "undeclared_thing");
    const char *ready[] = {"\"languageId\":\"c\"", "\"status\":\"ready\"", NULL};
    assert_true(count_notes(second, "lsp/serverStatusChanged", ready) == 1);
    assert_int_equal(children_named("clangd"), 1);

    /* an explicit lsp/start answers as for a server already running: no second process */
    char *r = ok("lsp/start", "{\"languageId\":\"c\"}");
    bool is_ready = false;
    assert_true(test_json_bool(r, "ready", &is_ready) && is_ready);
    free(r);
    /* a second document of the language goes to the same server */
    char *other = open_document("other.c");
    test_server_run_for(srv, 300);
    assert_int_equal(children_named("clangd"), 1);
    assert_true(count_notes(cl, "lsp/serverStatusChanged", ready) == 1);
    free(other);
    free(id);
    free(uri);
    test_client_disconnect(second);
}

static void test_an_untrusted_folder_starts_nothing_until_trusted(void **state)
{
    (void)state;
    if (!have_program("clangd"))
        skip();
    char *r = ok("workspace/trust", "{\"uri\":\"file://%s\",\"trusted\":false}", top);
    assert_non_null(strstr(r, "\"trusted\":false"));
    free(r);
    /* nor is a server that is not installed looked for there: trust comes first */
    free(ok("lsp/setServerConfig", "{\"languageId\":\"rust\",\"config\":{\"command\":\"ecpd-no-such-server\"}}"));
    write_at("a.rs", "fn main() {}\n");
    test_client_clear_notifications(cl);
    char *uri = uri_of("main.c");
    char *id = open_document("main.c");
    char *rs = open_document("a.rs");
    test_server_run_for(srv, 1500);
    assert_int_equal(children_named("clangd"), 0);
    assert_int_equal(test_client_notification_count(cl, "lsp/serverStatusChanged"), 0);
    assert_int_equal(test_client_notification_count(cl, "$/showMessage"), 0);

    free(ok("workspace/trust", "{\"uri\":\"file://%s\",\"trusted\":true}", top));
    wait_diagnostic_on(cl, uri, "undeclared_thing");
    assert_int_equal(children_named("clangd"), 1);
    const char *unavailable[] = {"\"languageId\":\"rust\"", "\"status\":\"unavailable\"", NULL};
    assert_int_equal(count_notes(cl, "lsp/serverStatusChanged", unavailable), 1);
    free(rs);
    free(id);
    free(uri);
}

static void test_a_python_file_gets_pyright_diagnostics(void **state)
{
    (void)state;
    if (!have_program("pyright-langserver") || have_program("pylsp"))
        skip();
    write_at("a.py", "def f():\n    return undefined_name\n");
    char *uri = uri_of("a.py");
    char *id = open_document("a.py");
    wait_diagnostic_on(cl, uri, "undefined_name");
    const char *ready[] = {"\"languageId\":\"python\"", "\"status\":\"ready\"", NULL};
    assert_true(count_notes(cl, "lsp/serverStatusChanged", ready) == 1);
    char *config = ok("lsp/getServerConfig", "{\"languageId\":\"python\"}");
    want_string(config, "config.command", "pyright-langserver");
    free(config);
    free(id);
    free(uri);
}

static void test_a_missing_server_is_reported_once(void **state)
{
    (void)state;
    free(ok("lsp/setServerConfig", "{\"languageId\":\"rust\",\"config\":{\"command\":\"ecpd-no-such-server\"}}"));
    write_at("a.rs", "fn main() {}\n");
    write_at("b.rs", "fn other() {}\n");
    test_client_clear_notifications(cl);
    char *a = open_document("a.rs");
    char *b = open_document("b.rs");
    const char *unavailable[] = {"\"languageId\":\"rust\"", "\"status\":\"unavailable\"", NULL};
    wait_note_on(cl, "lsp/serverStatusChanged", unavailable);
    test_server_run_for(srv, 300);
    assert_int_equal(count_notes(cl, "lsp/serverStatusChanged", unavailable), 1);
    const char *named[] = {"\"reason\":\"Language server not found: ecpd-no-such-server\"", NULL};
    assert_int_equal(count_notes(cl, "lsp/serverStatusChanged", named), 1);
    const char *warning[] = {"\"type\":2", "ecpd-no-such-server", NULL};
    assert_int_equal(count_notes(cl, "$/showMessage", warning), 1);
    assert_int_equal(test_client_notification_count(cl, "$/showMessage"), 1);

    /* an explicit lsp/start still looks for it */
    char *e = fails(-32401, "lsp/start", "{\"languageId\":\"rust\"}");
    want_string(e, "message", "Language server not found: ecpd-no-such-server");
    free(e);
    free(a);
    free(b);
}

static void test_lsp_enabled_false_starts_nothing(void **state)
{
    (void)state;
    if (!have_program("clangd"))
        skip();
    free(ok("config/set", "{\"key\":\"lsp.enabled\",\"value\":false}"));
    free(ok("lsp/setServerConfig", "{\"languageId\":\"rust\",\"config\":{\"command\":\"ecpd-no-such-server\"}}"));
    write_at("a.rs", "fn main() {}\n");
    test_client_clear_notifications(cl);
    char *id = open_document("main.c");
    char *rs = open_document("a.rs");
    test_server_run_for(srv, 1500);
    assert_int_equal(children_named("clangd"), 0);
    assert_int_equal(test_client_notification_count(cl, "lsp/serverStatusChanged"), 0);
    assert_int_equal(test_client_notification_count(cl, "lsp/didPublishDiagnostics"), 0);
    assert_int_equal(test_client_notification_count(cl, "$/showMessage"), 0);
    free(rs);

    /* set back at run time: the next open starts it */
    free(ok("config/set", "{\"key\":\"lsp.enabled\",\"value\":true}"));
    char *other_uri = uri_of("other.c");
    char *other = open_document("other.c");
    char *main_uri = uri_of("main.c");
    wait_diagnostic_on(cl, main_uri, "undeclared_thing");
    assert_int_equal(children_named("clangd"), 1);
    free(main_uri);
    free(other_uri);
    free(other);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_opening_a_c_file_starts_clangd_for_every_client, setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_an_untrusted_folder_starts_nothing_until_trusted, setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_a_python_file_gets_pyright_diagnostics, setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_a_missing_server_is_reported_once, setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_lsp_enabled_false_starts_nothing, setup, fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
