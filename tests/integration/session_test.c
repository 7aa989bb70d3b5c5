/* The session service through the in-process client: every config, theme,
 * keybindings, session and secret method's result shape and error codes, the
 * notifications and their order, settings files edited while the server
 * runs, what survives a restart on the same data directory, and recovery of
 * unsaved text left by a server that is no longer running. */
#include <errno.h>
#include <fcntl.h>
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

#include "test_client.h"

/* ----- fixture and helpers ---------------------------------------------------------- */

typedef struct fx {
    test_server *s;
    test_client *c;
    char dir[64];       /* scratch: files, the workspace */
    char data[128];     /* the data directory, kept across restarts */
    char workspace[128];
    char config[160];   /* the user settings file */
    char log_path[160];
    FILE *log;
} fx;

static void start(fx *f)
{
    f->log = fopen(f->log_path, "a");
    assert_non_null(f->log);
    test_server_options o = {.workspace = f->workspace, .data_dir = f->data, .config = f->config, .log = f->log};
    f->s = test_server_new(&o);
    f->c = test_client_connect(f->s);
}

static void stop(fx *f)
{
    test_server_free(f->s);
    f->s = NULL;
    fclose(f->log);
    f->log = NULL;
}

static void restart(fx *f)
{
    stop(f);
    start(f);
}

static void write_file(const char *path, const char *text)
{
    /* written beside and renamed over, as editors save */
    char tmp[300];
    assert_true(snprintf(tmp, sizeof tmp, "%s.tmp", path) < (int)sizeof tmp);
    FILE *fp = fopen(tmp, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    assert_int_equal(rename(tmp, path), 0);
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/ecpd-session-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->data, sizeof f->data, "%s/data", f->dir);
    snprintf(f->workspace, sizeof f->workspace, "%s/ws", f->dir);
    snprintf(f->config, sizeof f->config, "%s/user-settings.json", f->dir);
    snprintf(f->log_path, sizeof f->log_path, "%s/ecpd.log", f->dir);
    mkdir(f->workspace, 0700);
    start(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    if (f->s)
        stop(f);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static int64_t last_id;

static char *vcall(test_client *c, const char *method, int *code, const char *fmt, va_list ap)
{
    char *params = NULL;
    if (fmt && vasprintf(&params, fmt, ap) < 0)
        abort();
    last_id = test_client_send(c, method, params);
    char *out = NULL;
    *code = test_client_wait_response(c, last_id, 30000, &out);
    free(params);
    return out;
}

/* A request that must succeed; returns its result JSON (free it). */
static char *ok(test_client *c, const char *method, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static char *ok(test_client *c, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != 0)
        print_error("%s failed with %d: %s\n", method, code, out ? out : "(none)");
    assert_int_equal(code, 0);
    return out;
}

/* A request that must fail with `want`; returns the error object JSON. */
static char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != want)
        print_error("%s: wanted %d, got %d: %s\n", method, want, code, out ? out : "(none)");
    assert_int_equal(code, want);
    return out;
}

static void ok_equal(test_client *c, const char *method, const char *params, const char *want)
{
    char *out = ok(c, method, "%s", params ? params : "{}");
    assert_string_equal(out, want);
    free(out);
}

static void want_string(const char *json, const char *path, const char *want)
{
    char *s = test_json_string(json, path);
    if (!s || strcmp(s, want) != 0)
        print_error("%s: wanted \"%s\", got %s in %s\n", path, want, s ? s : "(absent)", json);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

static void want_raw(const char *json, const char *path, const char *want)
{
    char *s = test_json_raw(json, path);
    if (!s || strcmp(s, want) != 0)
        print_error("%s: wanted %s, got %s in %s\n", path, want, s ? s : "(absent)", json);
    assert_non_null(s);
    assert_string_equal(s, want);
    free(s);
}

/* The n-th notification of method (asserting there is one). */
static const char *note(test_client *c, const char *method, size_t n)
{
    const char *p = test_client_notification(c, method, n);
    if (!p)
        print_error("no %s #%zu; log: %s\n", method, n, test_client_notification_log(c));
    assert_non_null(p);
    return p;
}

/* Runs the loop until a notification matching filter has arrived (at most 5 s). */
static void wait_note(fx *f, const char *filter, size_t count)
{
    if (!test_client_wait_notifications(f->c, filter, count, 5000))
        print_error("waited for %zu %s; log: %s\n", count, filter, test_client_notification_log(f->c));
    assert_true(test_client_notification_count(f->c, filter) >= count);
}

static char *read_whole(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return NULL;
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    size_t got = fread(data, 1, (size_t)n, fp);
    fclose(fp);
    data[got] = '\0';
    *len = got;
    return data;
}

static bool file_contains(const char *path, const char *needle)
{
    size_t len;
    char *data = read_whole(path, &len);
    if (!data)
        return false;
    bool found = memmem(data, len, needle, strlen(needle)) != NULL;
    free(data);
    return found;
}

/* ----- config ------------------------------------------------------------------------------ */

static void test_config_defaults_get_and_schema(void **state)
{
    fx *f = *state;
    char *out = ok(f->c, "config/getAll", NULL);
    assert_int_equal(test_json_length(out, "settings"), 70 + 9); /* the catalogue's, and the extensions' */
    want_raw(out, "settings.editor\\.fontSize", "14");
    free(out);

    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":14}");
    ok_equal(f->c, "config/get", "{\"key\":\"files.exclude\"}",
             "{\"value\":{\"**/node_modules\":true,\"**/.git\":true,\"**/.DS_Store\":true}}");
    /* in the schema, not among the defaults a fresh server reports */
    ok_equal(f->c, "config/get", "{\"key\":\"tui.timeline.mode\"}", "{}");
    ok_equal(f->c, "config/get", "{\"key\":\"no.such.key\"}", "{}");
    free(fails(f->c, -32602, "config/get", "{}"));

    out = ok(f->c, "config/schema", NULL);
    assert_int_equal(test_json_length(out, "schema.properties"), 79 + 10);
    want_string(out, "schema.properties.editor\\.fontSize.type", "number");
    want_raw(out, "schema.properties.editor\\.fontSize.default", "14");
    want_raw(out, "schema.properties.editor\\.fontSize.minimum", "8");
    want_raw(out, "schema.properties.editor\\.fontSize.maximum", "72");
    want_raw(out, "schema.properties.editor\\.wordWrap.enum", "[\"off\",\"on\",\"wordWrapColumn\",\"bounded\"]");
    want_raw(out, "schema.properties.tui\\.timeline\\.mode.default", "\"file\"");
    free(out);
}

static void test_config_set_notifies_before_answering_and_persists(void **state)
{
    fx *f = *state;
    test_client_clear_notifications(f->c);
    ok_equal(f->c, "config/set", "{\"key\":\"editor.fontSize\",\"value\":18}", "{\"success\":true}");
    char want_log[64];
    snprintf(want_log, sizeof want_log, "config/didChange,#%lld", (long long)last_id);
    assert_string_equal(test_client_event_log(f->c), want_log);
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"editor.fontSize\",\"value\":18}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":18}");

    /* the same value again changes nothing, so nothing is said */
    test_client_clear_notifications(f->c);
    ok_equal(f->c, "config/set", "{\"key\":\"editor.fontSize\",\"value\":18}", "{\"success\":true}");
    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 0);

    /* false, 0 and starred keys are values like any other */
    ok_equal(f->c, "config/set", "{\"key\":\"editor.folding\",\"value\":false}", "{\"success\":true}");
    ok_equal(f->c, "config/set", "{\"key\":\"tui.timeline.mode\",\"value\":\"repo\"}", "{\"success\":true}");

    restart(f);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":18}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.folding\"}", "{\"value\":false}");
    ok_equal(f->c, "config/get", "{\"key\":\"tui.timeline.mode\"}", "{\"value\":\"repo\"}");
    char *out = ok(f->c, "config/getAll", NULL);
    assert_int_equal(test_json_length(out, "settings"), 70 + 9 + 1);
    free(out);
}

static void test_config_set_refuses_bad_values_and_keeps_the_old(void **state)
{
    fx *f = *state;
    test_client_clear_notifications(f->c);
    char *e = fails(f->c, -32301, "config/set", "{\"key\":\"editor.fontSize\",\"value\":\"big\"}");
    want_string(e, "message", "Invalid value for setting 'editor.fontSize': expected number, got string");
    want_string(e, "data.key", "editor.fontSize");
    want_raw(e, "data.value", "\"big\"");
    want_string(e, "data.reason", "expected number, got string");
    free(e);

    e = fails(f->c, -32301, "config/set", "{\"key\":\"editor.fontSize\",\"value\":100}");
    want_string(e, "data.reason", "must be at most 72");
    free(e);
    e = fails(f->c, -32301, "config/set", "{\"key\":\"editor.fontSize\",\"value\":2}");
    want_string(e, "data.reason", "must be at least 8");
    free(e);
    e = fails(f->c, -32301, "config/set", "{\"key\":\"editor.wordWrap\",\"value\":\"sometimes\"}");
    want_string(e, "data.reason", "must be one of \"off\", \"on\", \"wordWrapColumn\", \"bounded\"");
    free(e);
    e = fails(f->c, -32301, "config/set", "{\"key\":\"editor.fontSize\",\"value\":null}");
    want_string(e, "data.reason", "expected number, got null");
    free(e);
    e = fails(f->c, -32301, "config/set", "{\"key\":\"files.exclude\",\"value\":[1]}");
    want_string(e, "data.reason", "expected object, got array");
    free(e);
    e = fails(f->c, -32301, "config/set", "{\"key\":\"no.such\",\"value\":1}");
    want_string(e, "message", "Unknown setting: no.such");
    want_string(e, "data.key", "no.such");
    free(e);
    free(fails(f->c, -32602, "config/set", "{\"key\":\"editor.fontSize\"}"));
    free(fails(f->c, -32602, "config/set", "{\"value\":3}"));

    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 0);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":14}");
}

/* The keys this server adds after the catalogue's: in the schema as
 * extensions, reported by config/getAll, checked like any other. */
static void test_extension_keys_are_in_the_schema_and_checked(void **state)
{
    fx *f = *state;
    char *out = ok(f->c, "config/schema", NULL);
    static const char *const keys[] = {
        "agent\\.model", "agent\\.approval", "agent\\.maxTurns", "lsp\\.requestTimeoutMs", "database\\.pageSize",
        "database\\.maxResultBytes", "editor\\.undoHistoryMaxBytes", "server\\.maxConnections", "git\\.networkTimeoutMs",
    };
    char path[128];
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        snprintf(path, sizeof path, "schema.properties.%s.extension", keys[i]);
        want_raw(out, path, "true");
    }
    /* the catalogue's own keys are not marked */
    char *absent = test_json_raw(out, "schema.properties.editor\\.undoHistoryLimit.extension");
    assert_null(absent);
    want_string(out, "schema.properties.agent\\.maxTurns.type", "integer");
    want_raw(out, "schema.properties.agent\\.maxTurns.default", "25");
    want_raw(out, "schema.properties.agent\\.approval.enum", "[\"ask\",\"allow\"]");
    want_raw(out, "schema.properties.lsp\\.requestTimeoutMs.default", "30000");
    want_raw(out, "schema.properties.database\\.pageSize.default", "1000");
    want_raw(out, "schema.properties.database\\.maxResultBytes.default", "16777216");
    want_raw(out, "schema.properties.editor\\.undoHistoryMaxBytes.default", "268435456");
    want_raw(out, "schema.properties.server\\.maxConnections.default", "64");
    want_string(out, "schema.properties.agent\\.model.type", "string");
    free(out);

    out = ok(f->c, "config/getAll", NULL);
    want_raw(out, "settings.agent\\.maxTurns", "25");
    want_raw(out, "settings.agent\\.approval", "\"ask\"");
    absent = test_json_raw(out, "settings.agent\\.model"); /* unset: --model, ECPD_MODEL or a key decide */
    assert_null(absent);
    free(out);

    static const struct {
        const char *key, *value, *reason;
    } refused[] = {
        {"agent.model", "\"gpt-4.1\"", "expected provider/model (openai/..., anthropic/... or ollama/...)"},
        {"agent.model", "\"/gpt\"", "expected provider/model (openai/..., anthropic/... or ollama/...)"},
        {"agent.model", "7", "expected string, got number"},
        {"agent.approval", "\"always\"", "must be one of \"ask\", \"allow\""},
        {"agent.approval", "true", "expected string, got boolean"},
        {"agent.maxTurns", "0", "must be at least 1"},
        {"agent.maxTurns", "2.5", "must be a whole number"},
        {"agent.maxTurns", "\"5\"", "expected number, got string"},
        {"lsp.requestTimeoutMs", "10", "must be at least 100"},
        {"lsp.requestTimeoutMs", "3600001", "must be at most 3600000"},
        {"database.pageSize", "0", "must be at least 1"},
        {"database.pageSize", "10.5", "must be a whole number"},
        {"database.maxResultBytes", "1000", "must be at least 1024"},
        {"database.maxResultBytes", "4294967297", "must be at most 4294967296"},
        {"editor.undoHistoryMaxBytes", "1024", "must be at least 65536"},
        {"editor.undoHistoryMaxBytes", "false", "expected number, got boolean"},
        {"server.maxConnections", "0", "must be at least 1"},
        {"server.maxConnections", "100001", "must be at most 100000"},
    };
    test_client_clear_notifications(f->c);
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char *e = fails(f->c, -32301, "config/set", "{\"key\":\"%s\",\"value\":%s}", refused[i].key, refused[i].value);
        want_string(e, "data.key", refused[i].key);
        want_raw(e, "data.value", refused[i].value);
        want_string(e, "data.reason", refused[i].reason);
        free(e);
    }
    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 0);

    ok_equal(f->c, "config/set", "{\"key\":\"agent.model\",\"value\":\"openai/gpt-4.1\"}", "{\"success\":true}");
    ok_equal(f->c, "config/set", "{\"key\":\"agent.maxTurns\",\"value\":3}", "{\"success\":true}");
    ok_equal(f->c, "config/set", "{\"key\":\"database.maxResultBytes\",\"value\":4294967296}", "{\"success\":true}");
    restart(f);
    ok_equal(f->c, "config/get", "{\"key\":\"agent.model\"}", "{\"value\":\"openai/gpt-4.1\"}");
    ok_equal(f->c, "config/get", "{\"key\":\"agent.maxTurns\"}", "{\"value\":3}");
    ok_equal(f->c, "config/get", "{\"key\":\"database.maxResultBytes\"}", "{\"value\":4294967296}");
}

static char *open_doc(fx *f, const char *path, const char *content);

/* Undoes until nothing is left; returns how many steps there were. */
static int undo_all(fx *f, const char *id)
{
    int undone = 0;
    for (;;) {
        char *out = ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
        char *success = test_json_raw(out, "success");
        bool did = success && strcmp(success, "true") == 0;
        free(success);
        free(out);
        if (!did)
            return undone;
        undone++;
    }
}

/* Inserts count lines of width bytes each, one undo step per line (a
 * newline never joins the step before). */
static void insert_lines(fx *f, const char *id, int count, size_t width)
{
    char *line = malloc(width + 1);
    memset(line, 'x', width - 2);
    memcpy(line + width - 2, "\\n", 2);
    line[width] = '\0';
    for (int i = 0; i < count; i++)
        free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":%d,\"column\":0},\"text\":\"%s\"}",
                id, i, line));
    free(line);
}

static void test_undo_history_follows_its_settings(void **state)
{
    fx *f = *state;
    char path[300];
    snprintf(path, sizeof path, "%s/undo.txt", f->workspace);

    /* in steps: the catalogue's editor.undoHistoryLimit */
    ok_equal(f->c, "config/set", "{\"key\":\"editor.undoHistoryLimit\",\"value\":100}", "{\"success\":true}");
    char *id = open_doc(f, path, "");
    insert_lines(f, id, 150, 2);
    assert_int_equal(undo_all(f, id), 100);
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", id));
    free(id);

    /* a change applies to the open documents at once */
    ok_equal(f->c, "config/reset", "{\"key\":\"editor.undoHistoryLimit\"}", "{\"success\":true}");
    id = open_doc(f, path, "");
    insert_lines(f, id, 150, 2);
    ok_equal(f->c, "config/set", "{\"key\":\"editor.undoHistoryLimit\",\"value\":120}", "{\"success\":true}");
    assert_int_equal(undo_all(f, id), 120);
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", id));
    free(id);

    /* in bytes: 40 steps of 4 KiB are more than 64 KiB, so the oldest go */
    ok_equal(f->c, "config/reset", "{\"key\":\"editor.undoHistoryLimit\"}", "{\"success\":true}");
    id = open_doc(f, path, "");
    insert_lines(f, id, 40, 4096);
    assert_int_equal(undo_all(f, id), 40); /* the defaults keep them all */
    ok_equal(f->c, "config/set", "{\"key\":\"editor.undoHistoryMaxBytes\",\"value\":65536}", "{\"success\":true}");
    insert_lines(f, id, 40, 4096);
    int kept = undo_all(f, id);
    if (kept < 10 || kept > 15)
        print_error("64 KiB kept %d steps of 4 KiB\n", kept);
    assert_true(kept >= 10 && kept <= 15);
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", id));
    free(id);
}

static void test_config_reset(void **state)
{
    fx *f = *state;
    free(ok(f->c, "config/set", "{\"key\":\"editor.tabSize\",\"value\":8}"));
    free(ok(f->c, "config/set", "{\"key\":\"editor.fontSize\",\"value\":20}"));
    test_client_clear_notifications(f->c);
    ok_equal(f->c, "config/reset", "{\"key\":\"editor.tabSize\"}", "{\"success\":true}");
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"editor.tabSize\",\"value\":2}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":20}");

    ok_equal(f->c, "config/reset", NULL, "{\"success\":true}");
    assert_string_equal(note(f->c, "config/didChange", 1), "{\"key\":\"editor.fontSize\",\"value\":14}");
    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 2);
    free(fails(f->c, -32301, "config/reset", "{\"key\":\"nope\"}"));

    restart(f);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":14}");
}

static void test_config_files_layer_and_follow_edits(void **state)
{
    fx *f = *state;
    stop(f);
    write_file(f->config, "// the user's settings\n{\n  \"editor.fontSize\": 16, /* bigger */\n"
                          "  \"editor.tabSize\": 4,\n  \"no.such.key\": 1,\n  \"editor.wordWrap\": \"often\",\n}\n");
    start(f);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":16}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.tabSize\"}", "{\"value\":4}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.wordWrap\"}", "{\"value\":\"off\"}"); /* refused: default */

    /* The workspace file wins over the user file; it appears with its directory. */
    char ws_dir[200], ws_file[240];
    snprintf(ws_dir, sizeof ws_dir, "%s/.ecpd", f->workspace);
    snprintf(ws_file, sizeof ws_file, "%s/settings.json", ws_dir);
    test_client_clear_notifications(f->c);
    assert_int_equal(mkdir(ws_dir, 0700), 0);
    test_server_run_for(f->s, 200);
    write_file(ws_file, "{\"editor.tabSize\": 3}");
    wait_note(f, "config/didChange", 1);
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"editor.tabSize\",\"value\":3}");

    /* An edit of the user file applies at once. */
    test_client_clear_notifications(f->c);
    write_file(f->config, "{\"editor.fontSize\": 20, \"editor.tabSize\": 4}");
    wait_note(f, "config/didChange", 1);
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"editor.fontSize\",\"value\":20}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.tabSize\"}", "{\"value\":3}");

    /* A malformed file keeps its last good values and is reported. */
    test_client_clear_notifications(f->c);
    write_file(f->config, "{\"editor.fontSize\": 30,,, oops");
    wait_note(f, "$/showMessage", 1);
    const char *msg = note(f->c, "$/showMessage", 0);
    want_raw(msg, "type", "1");
    char *text = test_json_string(msg, "message");
    assert_non_null(strstr(text, "user-settings.json"));
    assert_non_null(strstr(text, "keeping the settings it had before"));
    free(text);
    test_server_run_for(f->s, 200);
    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 0);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":20}");
    assert_true(file_contains(f->log_path, "keeping the settings it had before"));

    /* config/set wins over both files; removing the workspace file lets the user file show. */
    free(ok(f->c, "config/set", "{\"key\":\"editor.tabSize\",\"value\":6}"));
    test_client_clear_notifications(f->c);
    assert_int_equal(unlink(ws_file), 0);
    test_server_run_for(f->s, 400);
    assert_int_equal(test_client_notification_count(f->c, "config/didChange"), 0);
    ok_equal(f->c, "config/get", "{\"key\":\"editor.tabSize\"}", "{\"value\":6}");
    free(ok(f->c, "config/reset", "{\"key\":\"editor.tabSize\"}"));
    /* the user file's last good text set 4 */
    ok_equal(f->c, "config/get", "{\"key\":\"editor.tabSize\"}", "{\"value\":4}");
}

/* ----- themes ----------------------------------------------------------------------------------------- */

static void test_themes(void **state)
{
    fx *f = *state;
    char *out = ok(f->c, "theme/list", NULL);
    assert_int_equal(test_json_length(out, "themes"), 8);
    /* the reference's ids: its two built-in themes are "One Dark" and "One Light" */
    want_string(out, "themes[0].id", "One Dark");
    want_string(out, "themes[0].name", "One Dark");
    want_string(out, "themes[0].type", "dark");
    want_raw(out, "themes[0].builtin", "true");
    want_string(out, "themes[1].id", "One Light");
    free(out);
    out = ok(f->c, "theme/get", "{\"themeId\":\"One Light\"}");
    want_string(out, "theme.id", "One Light");
    want_string(out, "theme.type", "light");
    free(out);
    /* the slugs settings files have stay accepted, and are answered with the ids */
    out = ok(f->c, "theme/get", "{\"themeId\":\"one-dark\"}");
    want_string(out, "theme.id", "One Dark");
    free(out);

    out = ok(f->c, "theme/current", NULL);
    want_string(out, "theme.id", "catppuccin-frappe");
    free(out);

    out = ok(f->c, "theme/get", "{\"themeId\":\"github-dark\"}");
    want_string(out, "theme.id", "github-dark");
    assert_int_equal(test_json_length(out, "theme.colors"), 15);
    want_string(out, "theme.colors.editor\\.background", "#0d1117");
    want_string(out, "theme.tokenColors[1].scope", "keyword");
    want_string(out, "theme.tokenColors[1].settings.foreground", "#ff7b72");
    want_string(out, "theme.tokenColors[0].settings.fontStyle", "italic");
    free(out);

    char *e = fails(f->c, -32303, "theme/get", "{\"themeId\":\"solarized\"}");
    want_string(e, "message", "Theme not found: solarized");
    want_string(e, "data.themeId", "solarized");
    free(e);
    free(fails(f->c, -32303, "theme/set", "{\"themeId\":\"solarized\"}"));
    free(fails(f->c, -32602, "theme/set", "{}"));

    test_client_clear_notifications(f->c);
    ok_equal(f->c, "theme/set", "{\"themeId\":\"one-light\"}", "{\"success\":true}");
    char want_log[80];
    snprintf(want_log, sizeof want_log, "config/didChange,theme/didChange,#%lld", (long long)last_id);
    assert_string_equal(test_client_event_log(f->c), want_log);
    assert_string_equal(note(f->c, "theme/didChange", 0), "{\"themeId\":\"One Light\"}");
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"workbench.colorTheme\",\"value\":\"One Light\"}");

    restart(f);
    out = ok(f->c, "theme/current", NULL);
    want_string(out, "theme.id", "One Light");
    free(out);
    /* a settings file's slug names the theme too */
    free(ok(f->c, "config/set", "{\"key\":\"workbench.colorTheme\",\"value\":\"one-dark\"}"));
    out = ok(f->c, "theme/current", NULL);
    want_string(out, "theme.id", "One Dark");
    free(out);
    ok_equal(f->c, "theme/set", "{\"themeId\":\"One Light\"}", "{\"success\":true}");

    /* an unknown id in the setting falls back to One Dark */
    test_client_clear_notifications(f->c);
    free(ok(f->c, "config/set", "{\"key\":\"workbench.colorTheme\",\"value\":\"nope\"}"));
    assert_string_equal(note(f->c, "theme/didChange", 0), "{\"themeId\":\"One Dark\"}");
    out = ok(f->c, "theme/current", NULL);
    want_string(out, "theme.id", "One Dark");
    free(out);
}

/* ----- key bindings ---------------------------------------------------------------------------------------- */

static void resolve_is(fx *f, const char *params, const char *command)
{
    char *out = ok(f->c, "keybindings/resolve", "%s", params);
    char want[200];
    if (command && command[0] == '{')
        snprintf(want, sizeof want, "%s", command); /* a whole result, with args */
    else if (command)
        snprintf(want, sizeof want, "{\"command\":\"%s\"}", command);
    else
        snprintf(want, sizeof want, "{\"command\":null}");
    if (strcmp(out, want) != 0)
        print_error("resolve %s: wanted %s, got %s\n", params, want, out);
    assert_string_equal(out, want);
    free(out);
}

static void test_keybindings(void **state)
{
    fx *f = *state;
    ok_equal(f->c, "keybindings/get", NULL, "{\"bindings\":[]}");
    test_client_clear_notifications(f->c);
    ok_equal(f->c, "keybindings/add", "{\"binding\":{\"key\":\"ctrl+s\",\"command\":\"file.save\"}}", "{\"success\":true}");
    /* every change is told, with the bindings, before its answer */
    char want_log[64];
    snprintf(want_log, sizeof want_log, "keybindings/didChange,#%lld", (long long)last_id);
    assert_string_equal(test_client_event_log(f->c), want_log);
    assert_string_equal(note(f->c, "keybindings/didChange", 0),
                        "{\"bindings\":[{\"key\":\"ctrl+s\",\"command\":\"file.save\"}]}");
    ok_equal(f->c, "keybindings/add",
             "{\"binding\":{\"key\":\"Shift+Ctrl+P\",\"command\":\"palette\",\"when\":\"!inputFocus\",\"args\":{\"a\":1}}}",
             "{\"success\":true}");
    ok_equal(f->c, "keybindings/get", NULL,
             "{\"bindings\":[{\"key\":\"ctrl+s\",\"command\":\"file.save\"},"
             "{\"key\":\"Shift+Ctrl+P\",\"command\":\"palette\",\"when\":\"!inputFocus\",\"args\":{\"a\":1}}]}");

    /* bad bindings: no key or command is -32602, a bad when clause -32304; nothing changes */
    char *e = fails(f->c, -32602, "keybindings/add", "{\"binding\":{\"command\":\"x\"}}");
    want_string(e, "message", "binding.key: required string");
    free(e);
    free(fails(f->c, -32602, "keybindings/add", "{\"binding\":{\"key\":\"ctrl+x\"}}"));
    free(fails(f->c, -32602, "keybindings/add", "{\"binding\":{\"key\":\"\",\"command\":\"x\"}}"));
    e = fails(f->c, -32304, "keybindings/add", "{\"binding\":{\"key\":\"ctrl+x\",\"command\":\"x\",\"when\":\"a && (b\"}}");
    want_string(e, "data.when", "a && (b");
    free(e);
    e = fails(f->c, -32602, "keybindings/set", "{\"bindings\":[{\"key\":\"a\",\"command\":\"b\"},{\"key\":\"c\"}]}");
    want_string(e, "message", "bindings[1].command: required string");
    free(e);
    char *out = ok(f->c, "keybindings/get", NULL);
    assert_int_equal(test_json_length(out, "bindings"), 2);
    free(out);
    /* refusals change nothing, so nothing is told */
    assert_int_equal(test_client_notification_count(f->c, "keybindings/didChange"), 2);

    /* resolve: exact on the canonical key, modifiers in any order when bound */
    resolve_is(f, "{\"key\":{\"key\":\"s\",\"ctrl\":true}}", "file.save");
    resolve_is(f, "{\"key\":{\"key\":\"S\",\"ctrl\":true}}", "file.save");
    resolve_is(f, "{\"key\":{\"key\":\"s\",\"ctrl\":true,\"shift\":true}}", NULL);
    resolve_is(f, "{\"key\":{\"key\":\"s\"}}", NULL);
    resolve_is(f, "{\"key\":{\"key\":\"p\",\"ctrl\":true,\"shift\":true}}", "{\"command\":\"palette\",\"args\":{\"a\":1}}");
    resolve_is(f, "{\"key\":{\"key\":\"p\",\"ctrl\":true,\"shift\":true},\"context\":{\"inputFocus\":true}}", NULL);
    free(fails(f->c, -32602, "keybindings/resolve", "{\"key\":{\"ctrl\":true}}"));

    /* adding the same key replaces it; set replaces everything */
    ok_equal(f->c, "keybindings/add", "{\"key\":\"ctrl+s\",\"command\":\"file.saveAll\"}", "{\"success\":true}");
    resolve_is(f, "{\"key\":{\"key\":\"s\",\"ctrl\":true}}", "file.saveAll");
    ok_equal(f->c, "keybindings/set",
             "{\"bindings\":["
             "{\"key\":\"ctrl+k\",\"command\":\"a\",\"when\":\"editorFocus && (languageId == 'c' || languageId == cpp)\"},"
             "{\"key\":\"ctrl+k\",\"command\":\"b\",\"when\":\"editorFocus && languageId != 'c' && !readOnly\"},"
             "{\"key\":\"alt+f4\",\"command\":\"quit\"}]}",
             "{\"success\":true}");
    resolve_is(f, "{\"key\":{\"key\":\"s\",\"ctrl\":true}}", NULL);
    resolve_is(f, "{\"key\":{\"key\":\"k\",\"ctrl\":true},\"context\":{\"editorFocus\":true,\"languageId\":\"c\"}}", "a");
    /* readOnly unsent counts as true, so !readOnly holds and the later binding would win */
    resolve_is(f, "{\"key\":{\"key\":\"k\",\"ctrl\":true},\"context\":{\"editorFocus\":true,\"languageId\":\"cpp\"}}", "b");
    resolve_is(f,
               "{\"key\":{\"key\":\"k\",\"ctrl\":true},"
               "\"context\":{\"editorFocus\":true,\"languageId\":\"cpp\",\"readOnly\":true}}",
               "a");
    resolve_is(f,
               "{\"key\":{\"key\":\"k\",\"ctrl\":true},"
               "\"context\":{\"editorFocus\":true,\"languageId\":\"go\",\"readOnly\":false}}",
               "b");
    resolve_is(f,
               "{\"key\":{\"key\":\"k\",\"ctrl\":true},"
               "\"context\":{\"editorFocus\":true,\"languageId\":\"go\",\"readOnly\":true}}",
               NULL);
    resolve_is(f, "{\"key\":{\"key\":\"k\",\"ctrl\":true},\"context\":{\"editorFocus\":false,\"languageId\":\"c\"}}", NULL);
    resolve_is(f, "{\"key\":{\"key\":\"F4\",\"alt\":true}}", "quit");

    ok_equal(f->c, "keybindings/remove", "{\"key\":\"Alt+F4\"}", "{\"success\":true}");
    resolve_is(f, "{\"key\":{\"key\":\"F4\",\"alt\":true}}", NULL);

    restart(f);
    out = ok(f->c, "keybindings/get", NULL);
    assert_int_equal(test_json_length(out, "bindings"), 2);
    want_string(out, "bindings[1].command", "b");
    free(out);
    resolve_is(f, "{\"key\":{\"key\":\"k\",\"ctrl\":true},\"context\":{\"editorFocus\":true,\"languageId\":\"c\"}}", "a");
}

/* ----- sessions ------------------------------------------------------------------------------------------------- */

static char *open_doc(fx *f, const char *path, const char *content)
{
    write_file(path, content);
    char *out = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    char *id = test_json_string(out, "documentId");
    free(out);
    return id;
}

static void test_session_save_load_list_delete(void **state)
{
    fx *f = *state;
    char path[200];
    snprintf(path, sizeof path, "%s/a.txt", f->workspace);
    char *id = open_doc(f, path, "hello\nworld\n");
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"big \"}", id));
    free(ok(f->c, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":3}}", id));

    ok_equal(f->c, "session/current", NULL, "null");
    char *out = ok(f->c, "session/save", "{\"name\":\"My Work!!  2\",\"state\":{\"layout\":[1,2,{\"x\":null}]}}");
    want_string(out, "sessionId", "named-my-work-2");
    free(out);
    out = ok(f->c, "session/save", NULL);
    char *wid = test_json_string(out, "sessionId");
    assert_int_equal(strlen(wid), strlen("workspace-") + 16);
    assert_int_equal(strncmp(wid, "workspace-", 10), 0);
    free(out);

    out = ok(f->c, "session/load", "{\"sessionId\":\"named-my-work-2\"}");
    want_raw(out, "version", "1");
    want_string(out, "workspaceRoot", f->workspace);
    want_string(out, "sessionName", "My Work!!  2");
    want_raw(out, "state", "{\"layout\":[1,2,{\"x\":null}]}");
    assert_int_equal(test_json_length(out, "documents"), 1);
    want_string(out, "documents[0].filePath", path);
    want_raw(out, "documents[0].isDirty", "true");
    want_string(out, "documents[0].unsavedContent", "hello\nbig world\n");
    want_raw(out, "documents[0].cursors[0].position", "{\"line\":1,\"column\":3}");
    want_string(out, "activePaneId", "main");
    want_raw(out, "layout", "{\"type\":\"leaf\",\"paneId\":\"main\"}");
    want_raw(out, "ui.minimapEnabled", "true");
    char *ts = test_json_string(out, "timestamp");
    assert_int_equal(strlen(ts), 24);
    free(ts);
    free(out);

    out = ok(f->c, "session/current", NULL);
    want_string(out, "sessionName", "My Work!!  2"); /* load made it current */
    free(out);

    out = ok(f->c, "session/list", NULL);
    assert_int_equal(test_json_length(out, "sessions"), 2);
    want_raw(out, "sessions[0].documentCount", "1");
    free(out);

    /* without unsaved content when the setting says so */
    free(ok(f->c, "config/set", "{\"key\":\"session.save.unsavedContent\",\"value\":false}"));
    free(ok(f->c, "session/save", "{\"name\":\"lean\"}"));
    out = ok(f->c, "session/load", "{\"sessionId\":\"named-lean\"}");
    assert_false(test_json_has(out, "documents[0].unsavedContent"));
    free(out);

    restart(f);
    out = ok(f->c, "session/list", NULL);
    assert_int_equal(test_json_length(out, "sessions"), 3);
    want_string(out, "sessions[0].id", "named-lean"); /* newest first */
    want_string(out, "sessions[0].type", "named");
    free(out);
    out = ok(f->c, "session/load", "{\"sessionId\":\"%s\"}", wid);
    want_string(out, "documents[0].unsavedContent", "hello\nbig world\n");
    free(out);

    ok_equal(f->c, "session/delete", "{\"sessionId\":\"named-lean\"}", "{\"success\":true}");
    char *e = fails(f->c, -32302, "session/load", "{\"sessionId\":\"named-lean\"}");
    want_string(e, "message", "Session not found: named-lean");
    want_string(e, "data.sessionId", "named-lean");
    free(e);
    free(fails(f->c, -32302, "session/delete", "{\"sessionId\":\"named-lean\"}"));
    free(fails(f->c, -32602, "session/load", "{}"));
    free(fails(f->c, -32602, "session/save", "{\"name\":\"\"}"));
    free(fails(f->c, -32602, "session/save", "{\"state\":[1]}"));
    free(wid);
    free(id);
}

static void test_session_save_without_workspace(void **state)
{
    fx *f = *state;
    stop(f);
    f->log = fopen(f->log_path, "a");
    test_server_options o = {.data_dir = f->data, .log = f->log};
    f->s = test_server_new(&o);
    f->c = test_client_connect(f->s);
    char *e = fails(f->c, -32305, "session/save", NULL);
    want_string(e, "message", "No workspace to save a session for: give the session a name, or start the server "
                              "with --workspace");
    free(e);
    free(ok(f->c, "session/save", "{\"name\":\"x\"}"));

    /* initialize names the workspace: its settings file and its session follow */
    char ws_dir[200], ws_file[240];
    snprintf(ws_dir, sizeof ws_dir, "%s/.ecpd", f->workspace);
    snprintf(ws_file, sizeof ws_file, "%s/settings.json", ws_dir);
    assert_int_equal(mkdir(ws_dir, 0700), 0);
    write_file(ws_file, "{\"editor.tabSize\": 7}");
    test_client_clear_notifications(f->c);
    free(ok(f->c, "initialize", "{\"workspaceRoot\":\"file://%s\"}", f->workspace));
    wait_note(f, "config/didChange", 1);
    assert_string_equal(note(f->c, "config/didChange", 0), "{\"key\":\"editor.tabSize\",\"value\":7}");
    char *out = ok(f->c, "session/save", NULL);
    char *id = test_json_string(out, "sessionId");
    free(out);
    out = ok(f->c, "session/load", "{\"sessionId\":\"%s\"}", id);
    want_string(out, "workspaceRoot", f->workspace);
    free(out);
    free(id);
}

static void test_session_restore(void **state)
{
    fx *f = *state;
    char a[200], b[200], c[200];
    snprintf(a, sizeof a, "%s/a.txt", f->workspace);
    snprintf(b, sizeof b, "%s/b.txt", f->workspace);
    snprintf(c, sizeof c, "%s/c.txt", f->workspace);
    char *ida = open_doc(f, a, "one\ntwo\n");
    char *idb = open_doc(f, b, "bee\n");
    char *idc = open_doc(f, c, "sea\n");
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"!\"}", ida));
    free(ok(f->c, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":2}}", ida));
    free(ok(f->c, "session/save", "{\"name\":\"r\"}"));
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", ida));
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", idb));
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", idc));
    assert_int_equal(unlink(c), 0); /* vanished, and it had nothing unsaved */

    restart(f);
    char *out = ok(f->c, "session/restore", "{\"sessionId\":\"named-r\"}");
    assert_int_equal(test_json_length(out, "documents"), 2);
    char uri_a[220], uri_c[220];
    snprintf(uri_a, sizeof uri_a, "file://%s", a);
    snprintf(uri_c, sizeof uri_c, "file://%s", c);
    want_string(out, "documents[0].uri", uri_a);
    want_raw(out, "documents[0].isDirty", "true");
    want_raw(out, "documents[1].isDirty", "false");
    want_string(out, "missing[0]", uri_c);
    assert_int_equal(test_json_length(out, "missing"), 1);
    char *id = test_json_string(out, "documents[0].documentId");
    free(out);
    out = ok(f->c, "document/content", "{\"documentId\":\"%s\"}", id);
    want_string(out, "content", "one!\ntwo\n");
    free(out);
    out = ok(f->c, "document/cursors", "{\"documentId\":\"%s\"}", id);
    want_raw(out, "cursors[0].position", "{\"line\":1,\"column\":2}");
    free(out);
    /* undo goes back to the file's text */
    free(ok(f->c, "document/undo", "{\"documentId\":\"%s\"}", id));
    out = ok(f->c, "document/content", "{\"documentId\":\"%s\"}", id);
    want_string(out, "content", "one\ntwo\n");
    free(out);

    free(fails(f->c, -32302, "session/restore", "{\"sessionId\":\"named-none\"}"));
    free(id);
    free(ida);
    free(idb);
    free(idc);
}

static void test_session_restore_reports_missing_files(void **state)
{
    fx *f = *state;
    char a[200];
    snprintf(a, sizeof a, "%s/gone.txt", f->workspace);
    char *ida = open_doc(f, a, "x\n");
    free(ok(f->c, "session/save", "{\"name\":\"m\"}"));
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", ida));
    unlink(a);
    char *out = ok(f->c, "session/restore", "{\"sessionId\":\"named-m\"}");
    char uri[220];
    snprintf(uri, sizeof uri, "file://%s", a);
    assert_int_equal(test_json_length(out, "documents"), 0);
    want_string(out, "missing[0]", uri);
    free(out);
    free(ida);
}

/* ----- secrets --------------------------------------------------------------------------------------------------- */

#define SECRET_VALUE "s3cr3t-Value-that-must-not-leak"

static void test_secrets(void **state)
{
    fx *f = *state;
    ok_equal(f->c, "secret/providers", NULL,
             "{\"providers\":[{\"id\":\"env\",\"name\":\"Environment Variables\",\"priority\":20,\"isReadOnly\":true},"
             "{\"id\":\"encrypted-file\",\"name\":\"Encrypted File\",\"priority\":30,\"isReadOnly\":false}]}");
    ok_equal(f->c, "secret/get", "{\"key\":\"api.token\"}", "{\"value\":null}");
    ok_equal(f->c, "secret/has", "{\"key\":\"api.token\"}", "{\"exists\":false}");
    ok_equal(f->c, "secret/info", "{\"key\":\"api.token\"}", "{\"info\":null}");

    ok_equal(f->c, "secret/set",
             "{\"key\":\"api.token\",\"value\":\"" SECRET_VALUE "\",\"options\":{\"description\":\"the API\"}}",
             "{\"success\":true}");
    ok_equal(f->c, "secret/get", "{\"key\":\"api.token\"}", "{\"value\":\"" SECRET_VALUE "\"}");
    ok_equal(f->c, "secret/has", "{\"key\":\"api.token\"}", "{\"exists\":true}");
    char *out = ok(f->c, "secret/info", "{\"key\":\"api.token\"}");
    want_string(out, "info.key", "api.token");
    want_string(out, "info.provider", "encrypted-file");
    want_string(out, "info.description", "the API");
    assert_true(test_json_has(out, "info.createdAt"));
    assert_false(test_json_has(out, "info.expiresAt"));
    free(out);

    ok_equal(f->c, "secret/set", "{\"key\":\"api.old\",\"value\":\"x\",\"options\":{\"expiresAt\":\"2001-01-01T00:00:00Z\"}}",
             "{\"success\":true}");
    ok_equal(f->c, "secret/get", "{\"key\":\"api.old\"}", "{\"value\":null}");
    ok_equal(f->c, "secret/set", "{\"key\":\"other\",\"value\":\"\"}", "{\"success\":true}");
    ok_equal(f->c, "secret/get", "{\"key\":\"other\"}", "{\"value\":\"\"}");

    /* the env provider comes first and cannot be written */
    setenv("ECPD_SECRET_API_FROM_ENV", "from-env", 1);
    ok_equal(f->c, "secret/get", "{\"key\":\"api.from-env\"}", "{\"value\":\"from-env\"}");
    out = ok(f->c, "secret/info", "{\"key\":\"api.from-env\"}");
    want_string(out, "info.provider", "env");
    free(out);
    ok_equal(f->c, "secret/list", "{\"prefix\":\"api\"}", "{\"keys\":[\"api.token\",\"api_from_env\"]}");
    ok_equal(f->c, "secret/get", "{\"key\":\"api_from_env\"}", "{\"value\":\"from-env\"}");
    unsetenv("ECPD_SECRET_API_FROM_ENV");
    ok_equal(f->c, "secret/list", NULL, "{\"keys\":[\"api.token\",\"other\"]}");
    /* then the bare KEY; the prefixed variable wins when both are set */
    setenv("ECPD_TEST_PLAIN_ONLY", "bare", 1);
    ok_equal(f->c, "secret/get", "{\"key\":\"ecpd-test.plain-only\"}", "{\"value\":\"bare\"}");
    out = ok(f->c, "secret/info", "{\"key\":\"ecpd-test.plain-only\"}");
    want_string(out, "info.provider", "env");
    free(out);
    setenv("ECPD_SECRET_ECPD_TEST_PLAIN_ONLY", "prefixed", 1);
    ok_equal(f->c, "secret/get", "{\"key\":\"ecpd-test.plain-only\"}", "{\"value\":\"prefixed\"}");
    unsetenv("ECPD_SECRET_ECPD_TEST_PLAIN_ONLY");
    unsetenv("ECPD_TEST_PLAIN_ONLY");
    ok_equal(f->c, "secret/get", "{\"key\":\"ecpd-test.plain-only\"}", "{\"value\":null}");
    char *e = fails(f->c, -32603, "secret/set", "{\"key\":\"k\",\"value\":\"v\",\"options\":{\"provider\":\"env\"}}");
    want_string(e, "message", "Secret provider 'env' is read-only");
    free(e);

    /* params are checked, and no message carries a value */
    free(fails(f->c, -32602, "secret/get", "{}"));
    free(fails(f->c, -32602, "secret/get", "{\"key\":\"\"}"));
    free(fails(f->c, -32602, "secret/get", "{\"key\":\"a\\nb\"}"));
    e = fails(f->c, -32602, "secret/set", "{\"key\":\"k\",\"value\":42}");
    assert_null(strstr(e, "42"));
    free(e);
    free(fails(f->c, -32602, "secret/set", "{\"key\":\"k\",\"value\":\"v\",\"options\":{\"expiresAt\":\"soon\"}}"));

    restart(f);
    ok_equal(f->c, "secret/get", "{\"key\":\"api.token\"}", "{\"value\":\"" SECRET_VALUE "\"}");
    ok_equal(f->c, "secret/delete", "{\"key\":\"api.token\"}", "{\"deleted\":true}");
    ok_equal(f->c, "secret/delete", "{\"key\":\"api.token\"}", "{\"deleted\":false}");
    ok_equal(f->c, "secret/get", "{\"key\":\"api.token\"}", "{\"value\":null}");
    out = ok(f->c, "config/getAll", NULL);
    assert_null(strstr(out, SECRET_VALUE));
    free(out);
    stop(f);

    /* never in the log, never in the database or the key file in plain text */
    assert_false(file_contains(f->log_path, SECRET_VALUE));
    char path[200];
    snprintf(path, sizeof path, "%s/state.db", f->data);
    assert_false(file_contains(path, SECRET_VALUE));
    snprintf(path, sizeof path, "%s/state.db-wal", f->data);
    assert_false(file_contains(path, SECRET_VALUE));
    struct stat st;
    snprintf(path, sizeof path, "%s/secret.key", f->data);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 32);
    start(f);
}

/* ----- recovery ------------------------------------------------------------------------------------------------------ */

static void test_recovery_between_servers(void **state)
{
    fx *f = *state;
    char a[200], b[200];
    snprintf(a, sizeof a, "%s/a.txt", f->workspace);
    snprintf(b, sizeof b, "%s/b.txt", f->workspace);
    char *ida = open_doc(f, a, "alpha\n");
    char *idb = open_doc(f, b, "beta\n");
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"text\":\" typed\"}", ida));
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"!\"}", idb));
    test_server_run_for(f->s, 1200);
    /* saving clears its entry */
    free(ok(f->c, "document/save", "{\"documentId\":\"%s\"}", idb));
    test_server_run_for(f->s, 100);

    /* A second server on the same data directory and workspace: the first
     * still runs, so nothing is offered. */
    FILE *log2 = fopen(f->log_path, "a");
    test_server_options o = {.workspace = f->workspace, .data_dir = f->data, .log = log2};
    test_server *s2 = test_server_new(&o);
    test_client *c2 = test_client_connect(s2);
    char *out = ok(c2, "session/recoverable", NULL);
    assert_string_equal(out, "{\"documents\":[]}");
    free(out);
    test_server_free(s2);
    fclose(log2);

    /* The first goes away with a dirty document: the next one offers it. */
    stop(f);
    start(f);
    out = ok(f->c, "session/recoverable", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    char uri[220];
    snprintf(uri, sizeof uri, "file://%s", a);
    want_string(out, "documents[0].uri", uri);
    want_string(out, "documents[0].languageId", "plaintext");
    want_raw(out, "documents[0].bytes", "12");
    assert_true(test_json_has(out, "documents[0].savedAt"));
    free(out);

    out = ok(f->c, "session/recover", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    want_raw(out, "documents[0].isDirty", "true");
    char *id = test_json_string(out, "documents[0].documentId");
    free(out);
    out = ok(f->c, "document/content", "{\"documentId\":\"%s\"}", id);
    want_string(out, "content", "alpha typed\n");
    free(out);
    /* taken: not offered again */
    ok_equal(f->c, "session/recoverable", NULL, "{\"documents\":[]}");

    /* it is journaled again under this server; discarding after a restart forgets it */
    test_server_run_for(f->s, 1200);
    restart(f);
    out = ok(f->c, "session/recoverable", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    free(out);
    ok_equal(f->c, "session/discardRecovery", "{\"uris\":[\"file:///elsewhere\"]}", "{\"success\":true}");
    out = ok(f->c, "session/recoverable", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    free(out);
    ok_equal(f->c, "session/discardRecovery", NULL, "{\"success\":true}");
    ok_equal(f->c, "session/recoverable", NULL, "{\"documents\":[]}");
    free(fails(f->c, -32602, "session/recover", "{\"uris\":[1]}"));
    free(id);
    free(ida);
    free(idb);
}

/* Recovered text stays in the journal until a document holds it: one that
 * cannot be reopened is offered again by the next server, one whose text is
 * already the file's leaves nothing behind. */
static void test_recovered_text_is_kept_until_a_document_holds_it(void **state)
{
    fx *f = *state;
    char a[200], b[200], uri_a[220];
    snprintf(a, sizeof a, "%s/a.txt", f->workspace);
    snprintf(b, sizeof b, "%s/b.txt", f->workspace);
    snprintf(uri_a, sizeof uri_a, "file://%s", a);
    char *ida = open_doc(f, a, "alpha\n");
    char *idb = open_doc(f, b, "beta\n");
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"text\":\" typed\"}", ida));
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"!\"}", idb));
    test_server_run_for(f->s, 1200);
    stop(f);

    /* a.txt is a directory now: its text cannot go back into a document */
    assert_int_equal(unlink(a), 0);
    assert_int_equal(mkdir(a, 0700), 0);
    /* b.txt was saved elsewhere with the very text that was typed */
    write_file(b, "beta!\n");
    start(f);
    char *out = ok(f->c, "session/recover", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    want_raw(out, "documents[0].isDirty", "false");
    want_string(out, "missing[0]", uri_a);
    free(out);
    ok_equal(f->c, "session/recoverable", NULL, "{\"documents\":[]}");

    /* the next server offers a.txt's text again, and only that */
    restart(f);
    out = ok(f->c, "session/recoverable", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    want_string(out, "documents[0].uri", uri_a);
    want_raw(out, "documents[0].bytes", "12");
    free(out);
    assert_int_equal(rmdir(a), 0);
    out = ok(f->c, "session/recover", NULL);
    assert_int_equal(test_json_length(out, "documents"), 1);
    char *id = test_json_string(out, "documents[0].documentId");
    free(out);
    out = ok(f->c, "document/content", "{\"documentId\":\"%s\"}", id);
    want_string(out, "content", "alpha typed\n");
    free(out);
    /* saved: nothing is left to offer */
    free(ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id));
    restart(f);
    ok_equal(f->c, "session/recoverable", NULL, "{\"documents\":[]}");
    free(id);
    free(ida);
    free(idb);
}

static void test_closing_a_dirty_document_clears_its_entry(void **state)
{
    fx *f = *state;
    char a[200];
    snprintf(a, sizeof a, "%s/a.txt", f->workspace);
    char *ida = open_doc(f, a, "alpha\n");
    free(ok(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"x\"}", ida));
    test_server_run_for(f->s, 1200);
    free(ok(f->c, "document/close", "{\"documentId\":\"%s\"}", ida));
    restart(f);
    ok_equal(f->c, "session/recoverable", NULL, "{\"documents\":[]}");
    free(ida);
}

/* ----- lifecycle --------------------------------------------------------------------------------------------------- */

static void test_initialize_says_whether_state_persists(void **state)
{
    fx *f = *state;
    char *out = ok(f->c, "initialize", "{}");
    want_raw(out, "capabilities.persistence", "true");
    assert_non_null(strstr(out, "\"config\""));
    assert_non_null(strstr(out, "\"secret\""));
    assert_non_null(strstr(out, "\"theme/didChange\""));
    free(out);
    free(ok(f->c, "config/set", "{\"key\":\"editor.fontSize\",\"value\":30}"));
    stop(f);

    /* a database file that is not one: the server runs, in memory, and says so */
    char path[200];
    snprintf(path, sizeof path, "%s/state.db", f->data);
    char junk[4096];
    memset(junk, 'x', sizeof junk);
    FILE *fp = fopen(path, "w");
    fwrite(junk, 1, sizeof junk, fp);
    fclose(fp);
    snprintf(path, sizeof path, "%s/state.db-wal", f->data);
    unlink(path);
    start(f);
    out = ok(f->c, "initialize", "{}");
    want_raw(out, "capabilities.persistence", "false");
    free(out);
    ok_equal(f->c, "config/set", "{\"key\":\"editor.fontSize\",\"value\":12}", "{\"success\":true}");
    ok_equal(f->c, "config/get", "{\"key\":\"editor.fontSize\"}", "{\"value\":12}");
    free(ok(f->c, "session/save", "{\"name\":\"mem\"}"));
    out = ok(f->c, "session/list", NULL);
    assert_int_equal(test_json_length(out, "sessions"), 1);
    free(out);
    assert_true(file_contains(f->log_path, "kept in memory"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_defaults_get_and_schema, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_set_notifies_before_answering_and_persists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_set_refuses_bad_values_and_keeps_the_old, setup, teardown),
        cmocka_unit_test_setup_teardown(test_extension_keys_are_in_the_schema_and_checked, setup, teardown),
        cmocka_unit_test_setup_teardown(test_undo_history_follows_its_settings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_reset, setup, teardown),
        cmocka_unit_test_setup_teardown(test_config_files_layer_and_follow_edits, setup, teardown),
        cmocka_unit_test_setup_teardown(test_themes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_keybindings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_save_load_list_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_save_without_workspace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_restore, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_restore_reports_missing_files, setup, teardown),
        cmocka_unit_test_setup_teardown(test_secrets, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_between_servers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovered_text_is_kept_until_a_document_holds_it, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closing_a_dirty_document_clears_its_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_initialize_says_whether_state_persists, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
