/* The document service through the in-process client: every document method's
 * result shape and errors, the notifications and their order, two
 * clients on one document, the three position encodings, undo and the clean
 * state, what save and reload leave on disk, and a large file opened on the
 * thread pool while the server keeps answering. */
#include <dirent.h>
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

#include "buf.h"
#include "test_client.h"

/* ----- fixture and helpers ----------------------------------------------------- */

typedef struct fx {
    test_server *s;
    test_client *c;
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_server_new(NULL);
    f->c = test_client_connect(f->s);
    strcpy(f->dir, "/tmp/ecpd-doc-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    test_server_free(f->s);
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

/* A request that must fail with `want`; returns the error object (free it). */
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
        print_error("%s: expected error %d, got %d: %s\n", method, want, code, out ? out : "(none)");
    assert_int_equal(code, want);
    return out;
}

/* The same when the result does not matter. */
#define OK(...) free(ok(__VA_ARGS__))

static void expect_raw(const char *json, const char *path, const char *want)
{
    char *got = test_json_raw(json, path);
    if (!got || strcmp(got, want) != 0)
        print_error("at '%s'\n  want %s\n  got  %s\n", path, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void expect_str(const char *json, const char *path, const char *want)
{
    char *got = test_json_string(json, path);
    if (!got || strcmp(got, want) != 0)
        print_error("at '%s': want \"%s\", got \"%s\"\n", path, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static void expect_int(const char *json, const char *path, int64_t want)
{
    int64_t got = INT64_MIN;
    assert_true(test_json_int(json, path, &got));
    assert_int_equal(got, want);
}

static void expect_bool(const char *json, const char *path, bool want)
{
    bool got = !want;
    assert_true(test_json_bool(json, path, &got));
    assert_int_equal(got, want);
}

/* Checks a request's error message. */
static void expect_message(char *error, const char *want)
{
    expect_str(error, "message", want);
    free(error);
}

static void expect_call(test_client *c, const char *method, const char *params, const char *want_result)
{
    char *r = ok(c, method, "%s", params);
    expect_raw(r, "", want_result);
    free(r);
}

/* The event log must be exactly `want` with "#" standing for the last
 * request's id; the log is cleared afterwards. */
static void expect_events(test_client *c, const char *want)
{
    char expanded[4096];
    size_t n = 0;
    for (const char *p = want; *p && n < sizeof expanded - 32; p++) {
        if (*p == '#')
            n += (size_t)snprintf(expanded + n, sizeof expanded - n, "#%lld", (long long)last_id);
        else
            expanded[n++] = *p;
    }
    expanded[n] = '\0';
    /* Answers to earlier requests may lead the log; they are not events of
     * the request under test. */
    const char *got = test_client_event_log(c);
    while (*got == '#' && strchr(got, ',') && strcmp(got, expanded) != 0)
        got = strchr(got, ',') + 1;
    if (strcmp(got, expanded) != 0)
        print_error("events: want %s\n        got  %s\n", expanded, got);
    assert_string_equal(got, expanded);
    test_client_clear_notifications(c);
}

/* The params of the only notification captured, which must be `method`. */
static void expect_note(test_client *c, size_t index, const char *method, const char *want)
{
    const char *got = test_client_notification(c, method, index);
    if (!got || strcmp(got, want) != 0)
        print_error("%s[%zu]:\n  want %s\n  got  %s\n", method, index, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
}

static char *open_doc(test_client *c, const char *uri, const char *content_json)
{
    char *r = content_json ? ok(c, "document/open", "{\"uri\":\"%s\",\"content\":%s}", uri, content_json)
                           : ok(c, "document/open", "{\"uri\":\"%s\"}", uri);
    char *id = test_json_string(r, "documentId");
    assert_non_null(id);
    free(r);
    test_client_clear_notifications(c);
    return id;
}

static void write_bytes(const char *path, const char *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static char *read_bytes(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *data = malloc((size_t)n + 1);
    assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
    data[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return data;
}

static void expect_content(test_client *c, const char *id, const char *want)
{
    char *r = ok(c, "document/content", "{\"documentId\":\"%s\"}", id);
    expect_str(r, "content", want);
    free(r);
}

static void expect_dirty(test_client *c, const char *id, bool want)
{
    char *r = ok(c, "document/isDirty", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "isDirty", want);
    free(r);
}

static bool dir_has_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    bool found = false;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".ecpd-"))
            found = true;
    closedir(d);
    return found;
}

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
        {"kt", "plaintext"},
    };
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char *r = ok(f->c, "document/open", "{\"uri\":\"memory://dir/file%zu.%s\",\"content\":\"\"}", i, pairs[i][0]);
        expect_str(r, "info.languageId", pairs[i][1]);
        free(r);
    }
    char *r = ok(f->c, "document/open", "{\"uri\":\"memory://Makefile\",\"content\":\"\"}");
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
    expect_call(f->c, "document/info", params, want);
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
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":5}}]}", id);
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
             "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":0,\"column\":1}},{\"position\":{\"line\":1,"
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

#define AT(l, c) "{\"position\":{\"line\":" #l ",\"column\":" #c "}}"

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

/* ----- positions and encodings ---------------------------------------------------------------------- */

static void test_position_offset(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://o.txt", "\"ab\\n\\ud83d\\ude00c\\n\\u4e2d\"");
    static const struct {
        int line, column, offset;
    } pairs[] = {{0, 0, 0}, {0, 2, 2}, {1, 0, 3}, {1, 2, 5}, {1, 3, 6}, {2, 0, 7}, {2, 1, 8}, {3, 0, 8}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char *r = ok(f->c, "document/positionToOffset",
                     "{\"documentId\":\"%s\",\"position\":{\"line\":%d,\"column\":%d}}", id, pairs[i].line,
                     pairs[i].column);
        char want[64];
        snprintf(want, sizeof want, "{\"offset\":%d}", pairs[i].offset);
        expect_raw(r, "", want);
        free(r);
    }
    /* Inside a surrogate pair: the start of the character. */
    char *r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1}}", id);
    expect_raw(r, "", "{\"offset\":3}");
    free(r);
    static const struct {
        int offset, line, column;
    } back[] = {{0, 0, 0}, {2, 0, 2}, {3, 1, 0}, {4, 1, 0}, {5, 1, 2}, {6, 1, 3}, {7, 2, 0}, {8, 2, 1}};
    for (size_t i = 0; i < sizeof back / sizeof back[0]; i++) {
        r = ok(f->c, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":%d}", id, back[i].offset);
        char want[96];
        snprintf(want, sizeof want, "{\"position\":{\"line\":%d,\"column\":%d}}", back[i].line, back[i].column);
        expect_raw(r, "", want);
        free(r);
    }
    expect_message(fails(f->c, -32003, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":9}", id),
                   "Invalid offset: 9 is past the end of the document");
    expect_message(fails(f->c, -32602, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":-1}", id),
                   "offset: must be >= 0, got -1");
    expect_message(fails(f->c, -32001, "document/offsetToPosition", "{\"documentId\":\"x\",\"offset\":0}"),
                   "Document not found");
    expect_message(fails(f->c, -32001, "document/positionToOffset",
                         "{\"documentId\":\"x\",\"position\":{\"line\":0,\"column\":0}}"),
                   "Document not found");
    expect_message(fails(f->c, -32003, "document/positionToOffset",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":4}}", id),
                   "Invalid position: column 4 is past the end of line 1 (3 columns)");
    free(id);
}

static test_client *connect_with(test_server *s, const char *encoding)
{
    test_client *c = test_client_connect(s);
    char *r = ok(c, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"%s\"]}}", encoding);
    expect_str(r, "positionEncoding", encoding);
    free(r);
    return c;
}

static void expect_change_range(test_client *c, size_t index, const char *range_and_length)
{
    const char *note = test_client_notification(c, "document/didChange", index);
    assert_non_null(note);
    char *range = test_json_raw(note, "changes[0].range");
    int64_t len = -1;
    assert_true(test_json_int(note, "changes[0].rangeLength", &len));
    char got[256];
    snprintf(got, sizeof got, "%s/%lld", range, (long long)len);
    if (strcmp(got, range_and_length) != 0)
        print_error("want %s\ngot  %s\n", range_and_length, got);
    assert_string_equal(got, range_and_length);
    free(range);
}

#define RANGE(l1, c1, l2, c2)                                                                                     \
    "{\"start\":{\"line\":" #l1 ",\"column\":" #c1 "},\"end\":{\"line\":" #l2 ",\"column\":" #c2 "}}"

/* With every client counting bytes the change events carry byte columns
 * only; a client that then connects (UTF-16 until it says otherwise) gets
 * real UTF-16 ones at once. */
static void test_a_new_client_gets_its_columns(void **state)
{
    fx *f = *state;
    free(ok(f->c, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-8\"]}}"));
    char *id = open_doc(f->c, "memory://late.txt", "\"\\ud83d\\ude00x\"");
    test_client *late = test_client_connect(f->s);
    OK(late, "ecp/ping", "{}");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4},\"text\":\"y\"}", id);
    expect_change_range(late, 0, RANGE(0, 2, 0, 2) "/0");
    test_client_disconnect(late);
    free(id);
}

/* A change whose text is huge has it escaped off the loop: every client
 * still gets it whole, in its own units, and before the answer of the edit
 * that made it (the answer waits behind it). */
static void test_a_huge_change_text_arrives_whole_and_first(void **state)
{
    fx *f = *state;
    test_client *c32 = connect_with(f->s, "utf-32");
    char *id = open_doc(f->c, "memory://huge.txt", "\"\\ud83d\\ude00ab\"");
    test_client_clear_notifications(c32);
    const char unit[] = "say \\\"q\\\" \\t \\u00e9 \\ud83d\\ude00\\n"; /* as JSON */
    const char decoded[] = "say \"q\" \t \xC3\xA9 \xF0\x9F\x98\x80\n";
    size_t copies = (2u << 20) / (sizeof decoded - 1) + 1;
    buf params = BUF_INIT, want = BUF_INIT;
    buf_appendf(&params, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":2},\"text\":\"", id);
    for (size_t i = 0; i < copies; i++) {
        buf_append(&params, unit, sizeof unit - 1);
        buf_append(&want, decoded, sizeof decoded - 1);
    }
    buf_append_str(&params, "\"}");
    char *r = NULL;
    assert_int_equal(test_client_request(f->c, "document/insert", params.data, &r), 0);
    free(r);
    /* answered: the change was there already */
    const char *note = test_client_notification(f->c, "document/didChange", 0);
    assert_non_null(note);
    char *text = test_json_string(note, "changes[0].text");
    assert_non_null(text);
    assert_int_equal(strlen(text), want.len);
    assert_true(memcmp(text, want.data, want.len) == 0);
    free(text);
    expect_change_range(f->c, 0, RANGE(0, 2, 0, 2) "/0");
    assert_true(test_client_wait_notifications(c32, "document/didChange", 1, 10000));
    expect_change_range(c32, 0, RANGE(0, 1, 0, 1) "/0");
    text = test_json_string(test_client_notification(c32, "document/didChange", 0), "changes[0].text");
    assert_true(text && strlen(text) == want.len && memcmp(text, want.data, want.len) == 0);
    free(text);
    buf_free(&params);
    buf_free(&want);
    test_client_disconnect(c32);
    free(id);
}

static void test_encodings(void **state)
{
    fx *f = *state;
    test_client *c16 = f->c;
    test_client *c8 = connect_with(f->s, "utf-8");
    test_client *c32 = connect_with(f->s, "utf-32");
    /* a (1 byte) U+1F600 (4 bytes, 2 UTF-16 units) b U+4E2D (3 bytes) c */
    char *id = open_doc(c16, "memory://enc.txt", "\"a\\ud83d\\ude00b\\u4e2dc\"");
    test_client_clear_notifications(c8);
    test_client_clear_notifications(c32);

    /* The same cursor, in each client's units. */
    OK(c16, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    char want[256];
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"cursors\":[" AT(0, 5) "]}", id);
    expect_note(c16, 0, "document/didChangeCursors", want);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"cursors\":[" AT(0, 9) "]}", id);
    expect_note(c8, 0, "document/didChangeCursors", want);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"cursors\":[" AT(0, 4) "]}", id);
    expect_note(c32, 0, "document/didChangeCursors", want);
    char *r = ok(c8, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "cursors", "[" AT(0, 9) "]");
    free(r);

    /* Offsets count the client's units too. */
    r = ok(c16, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    expect_int(r, "offset", 5);
    free(r);
    r = ok(c8, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":9}}", id);
    expect_int(r, "offset", 9);
    free(r);
    r = ok(c32, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4}}", id);
    expect_int(r, "offset", 4);
    free(r);
    r = ok(c8, "document/textInRange", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 5) "}", id);
    expect_str(r, "text", "\xF0\x9F\x98\x80");
    free(r);
    r = ok(c32, "document/textInRange", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 3) "}", id);
    expect_str(r, "text", "\xF0\x9F\x98\x80" "b");
    free(r);

    /* One edit, three renderings of its change. */
    test_client_clear_notifications(c16);
    test_client_clear_notifications(c8);
    test_client_clear_notifications(c32);
    r = ok(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":9},\"text\":\"X\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    expect_change_range(c8, 0, RANGE(0, 9, 0, 9) "/0");
    expect_change_range(c16, 0, RANGE(0, 5, 0, 5) "/0");
    expect_change_range(c32, 0, RANGE(0, 4, 0, 4) "/0");
    r = ok(c32, "document/delete", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 1, 0, 2) "}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3}");
    free(r);
    expect_change_range(c32, 1, RANGE(0, 1, 0, 2) "/1");
    expect_change_range(c16, 1, RANGE(0, 1, 0, 3) "/2");
    expect_change_range(c8, 1, RANGE(0, 1, 0, 5) "/4");
    expect_content(c16, id, "ab\xE4\xB8\xAD" "Xc");

    /* Range errors speak the client's units. */
    expect_message(fails(c8, -32003, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":20},\"text\":\"x\"}", id),
                   "Invalid position: column 20 is past the end of line 0 (7 columns)");
    expect_message(fails(c16, -32003, "document/insert",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":20},\"text\":\"x\"}", id),
                   "Invalid position: column 20 is past the end of line 0 (5 columns)");
    /* A byte column inside a character snaps to the character's start. */
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3},\"text\":\"Y\"}", id);
    expect_content(c16, id, "abY\xE4\xB8\xAD" "Xc");

    /* The columns computed follow who is connected: with the UTF-32 client
     * gone nobody reads UTF-32 columns, and one that connects and
     * negotiates UTF-32 later gets its own units again. */
    test_client_disconnect(c32);
    test_client *late32 = test_client_connect(f->s);
    free(ok(late32, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-32\"]}}"));
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"\\ud83d\\ude00\"}",
       id);
    test_client_clear_notifications(c16);
    test_client_clear_notifications(late32);
    OK(c8, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":11},\"text\":\"Z\"}", id);
    expect_change_range(c16, 0, RANGE(0, 7, 0, 7) "/0");
    expect_change_range(late32, 0, RANGE(0, 6, 0, 6) "/0");
    OK(c8, "document/delete", "{\"documentId\":\"%s\",\"range\":" RANGE(0, 0, 0, 4) "}", id);
    expect_change_range(c16, 1, RANGE(0, 0, 0, 2) "/2");
    expect_change_range(late32, 1, RANGE(0, 0, 0, 1) "/1");
    expect_content(c16, id, "abY\xE4\xB8\xAD" "XZc");
    test_client_disconnect(late32);

    /* Words, in UTF-16. */
    char *w = open_doc(c16, "memory://w.txt", "\"\\ud83d\\ude00ab cd\"");
    r = ok(c16, "document/wordAtPosition", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3}}", w);
    expect_raw(r, "", "{\"range\":" RANGE(0, 2, 0, 4) ",\"text\":\"ab\"}");
    free(r);
    r = ok(c8, "document/wordAtPosition", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":4}}", w);
    expect_raw(r, "", "{\"range\":" RANGE(0, 4, 0, 6) ",\"text\":\"ab\"}");
    free(r);
    free(w);
    free(id);
}

static void test_word_at_position(void **state)
{
    fx *f = *state;
    char *id = open_doc(f->c, "memory://word.txt", "\"Hello World foo_bar9 x\"");
    char p[256];
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "null");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 0, 0, 5) ",\"text\":\"Hello\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":10}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 6, 0, 11) ",\"text\":\"World\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":14}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "{\"range\":" RANGE(0, 12, 0, 20) ",\"text\":\"foo_bar9\"}");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":22}}", id);
    expect_call(f->c, "document/wordAtPosition", p, "null");
    expect_call(f->c, "document/wordAtPosition", "{\"documentId\":\"nope\",\"position\":{\"line\":0,\"column\":0}}",
                "null");
    expect_message(fails(f->c, -32003, "document/wordAtPosition",
                         "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1}}", id),
                   "Invalid position: line 1 is past the end (1 line)");
    expect_message(fails(f->c, -32602, "document/wordAtPosition", "{\"documentId\":\"%s\"}", id),
                   "position: required object");
    free(id);
}

/* ----- two clients ------------------------------------------------------------------------------------ */

static void test_two_clients(void **state)
{
    fx *f = *state;
    test_client *c1 = f->c, *c2 = test_client_connect(f->s);
    /* A connection's framing is known once it has spoken. */
    free(ok(c2, "ecp/ping", "{}"));
    test_client_clear_notifications(c2);
    char *r = ok(c1, "document/open", "{\"uri\":\"memory://shared.txt\",\"content\":\"hello\"}");
    char *id = test_json_string(r, "documentId");
    free(r);
    expect_events(c1, "document/didOpen,#");
    assert_string_equal(test_client_event_log(c2), "document/didOpen");
    test_client_clear_notifications(c2);

    /* The second client opens the same uri: the same document, no didOpen. */
    r = ok(c2, "document/open", "{\"uri\":\"memory://shared.txt\"}");
    expect_str(r, "documentId", id);
    free(r);
    expect_events(c2, "#");
    assert_string_equal(test_client_event_log(c1), "");

    OK(c1, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":5},\"text\":\" world\"}", id);
    expect_events(c1, "document/didChange,#");
    assert_string_equal(test_client_event_log(c2), "document/didChange");
    const char *note = test_client_notification(c2, "document/didChange", 0);
    expect_int(note, "version", 2);
    expect_str(note, "changes[0].text", " world");
    test_client_clear_notifications(c2);

    r = ok(c2, "document/replace",
           "{\"documentId\":\"%s\",\"range\":" RANGE(0, 0, 0, 5) ",\"text\":\"HELLO\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":3}");
    free(r);
    expect_events(c2, "document/didChange,#");
    char want[512];
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"memory://shared.txt\",\"version\":3,\"changes\":[{\"range\":" RANGE(
                 0, 0, 0, 5) ",\"rangeLength\":5,\"text\":\"HELLO\"}]}",
             id);
    expect_note(c1, 0, "document/didChange", want);
    assert_string_equal(test_client_event_log(c1), "document/didChange");
    test_client_clear_notifications(c1);
    expect_content(c1, id, "HELLO world");
    expect_content(c2, id, "HELLO world");

    /* Cursors are the document's: one client's move reaches the other, and an
     * edit by one moves them for both. */
    OK(c2, "document/setCursor", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":3}}", id);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"cursors\":[" AT(0, 3) "]}", id);
    expect_note(c1, 0, "document/didChangeCursors", want);
    OK(c1, "document/edit",
       "{\"documentId\":\"%s\",\"edits\":[{\"range\":" RANGE(0, 0, 0, 0) ",\"text\":\"> \"}]}", id);
    r = ok(c2, "document/cursors", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"cursors\":[" AT(0, 5) "]}");
    free(r);
    test_client_clear_notifications(c1);
    test_client_clear_notifications(c2);

    /* Undo by one client undoes the other's edit, and both hear it. */
    r = ok(c2, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_events(c2, "document/didChange,#");
    assert_string_equal(test_client_event_log(c1), "document/didChange");
    expect_content(c1, id, "HELLO world");
    test_client_clear_notifications(c1);

    OK(c1, "document/close", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want, "{\"documentId\":\"%s\",\"uri\":\"memory://shared.txt\"}", id);
    expect_note(c2, 0, "document/didClose", want);
    /* A client going away closes nothing for the others. */
    char *id2 = open_doc(c2, "memory://other.txt", "\"x\"");
    test_client_disconnect(c2);
    expect_content(c1, id2, "x");
    free(id2);
    free(id);
}

/* ----- save and reload ------------------------------------------------------------------------------------ */

static void expect_file(const char *path, const char *want, size_t want_len)
{
    size_t len;
    char *got = read_bytes(path, &len);
    if (len != want_len || memcmp(got, want, len) != 0)
        print_error("%s holds %zu bytes: %s\n", path, len, got);
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);
    free(got);
}

static void test_save_round_trip(void **state)
{
    fx *f = *state;
    umask(022);
    char path[256], want[512];
    snprintf(path, sizeof path, "%s/crlf.txt", f->dir);
    const char original[] = "first\r\nsec\xff\xfeond\r\nthird\r\n";
    write_bytes(path, original, sizeof original - 1, 0640);
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", 4);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", id);
    expect_str(r, "text", "sec\xEF\xBF\xBD\xEF\xBF\xBDond");
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":5},\"text\":\"!\"}", id);
    test_client_clear_notifications(f->c);

    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want, "{\"success\":true,\"version\":2,\"uri\":\"file://%s\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_events(f->c, "#");
    /* CRLF and the invalid bytes are back, and the mode is kept. */
    const char edited[] = "first\r\nsec\xff\xfeond\r\nthird!\r\n";
    expect_file(path, edited, sizeof edited - 1);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0640);
    assert_false(dir_has_temp_files(f->dir));
    expect_dirty(f->c, id, false);

    /* Undo to before the save: dirty; save that; redo: dirty again. */
    OK(f->c, "document/undo", "{\"documentId\":\"%s\"}", id);
    expect_dirty(f->c, id, true);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    expect_int(r, "version", 3);
    free(r);
    expect_file(path, original, sizeof original - 1);
    expect_dirty(f->c, id, false);
    OK(f->c, "document/redo", "{\"documentId\":\"%s\"}", id);
    expect_dirty(f->c, id, true);

    /* A file whose first line end is LF is kept exactly, '\r' and all. */
    snprintf(path, sizeof path, "%s/mixed.txt", f->dir);
    const char mixed[] = "a\nb\r\nc";
    write_bytes(path, mixed, sizeof mixed - 1, 0600);
    char *m = open_doc(f->c, path, NULL);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", m);
    expect_str(r, "text", "b\r");
    free(r);
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":1},\"text\":\"!\"}", m);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", m);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "a\nb\r\nc!", 7);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    free(m);
    free(id);
}

static void test_save_as_and_failures(void **state)
{
    fx *f = *state;
    umask(022);
    char path[256], want[1024], p[512];
    char *id = open_doc(f->c, "memory://m.txt", "\"x\\ny\"");
    snprintf(p, sizeof p, "{\"documentId\":\"%s\"}", id);
    expect_call(f->c, "document/save", p,
                "{\"success\":false,\"version\":1,\"uri\":\"memory://m.txt\",\"error\":\"Document has no file: save it "
                "with a uri\"}");

    snprintf(path, sizeof path, "%s/out.py", f->dir);
    char *r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", id, path);
    snprintf(want, sizeof want, "{\"success\":true,\"version\":1,\"uri\":\"file://%s\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_file(path, "x\ny", 3);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0644);
    r = ok(f->c, "document/info", "%s", p);
    snprintf(want, sizeof want, "file://%s", path);
    expect_str(r, "uri", want);
    free(r);
    /* The document now has a file: a plain save works, and opening that
     * file finds this document. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":1},\"text\":\"z\"}", id);
    r = ok(f->c, "document/save", "%s", p);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, "x\nyz", 4);
    r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    expect_str(r, "documentId", id);
    free(r);

    char *other = open_doc(f->c, "memory://other.txt", "\"o\"");
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", other, path);
    snprintf(want, sizeof want, "Cannot save to file://%s: another open document has that uri", path);
    expect_bool(r, "success", false);
    expect_str(r, "error", want);
    free(r);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"memory://elsewhere\"}", other);
    expect_raw(r, "",
               "{\"success\":false,\"version\":1,\"uri\":\"memory://other.txt\",\"error\":\"Cannot save to "
               "memory://elsewhere: only file URIs can be saved to\"}");
    free(r);
    expect_call(f->c, "document/save", "{\"documentId\":\"nope\"}",
                "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    expect_message(fails(f->c, -32602, "document/save", "{\"documentId\":\"%s\",\"uri\":\"\"}", other),
                   "uri: must not be empty");

    /* A directory that cannot exist (its parent is a regular file; this
     * fails for root too): nothing changes on disk, the document stays dirty. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"!\"}", other);
    char blocker[256];
    snprintf(blocker, sizeof blocker, "%s/file.txt", f->dir);
    write_bytes(blocker, "keep", 4, 0644);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s/sub/a.txt\"}", other, blocker);
    snprintf(want, sizeof want,
             "{\"success\":false,\"version\":2,\"uri\":\"memory://other.txt\",\"error\":\"Failed to save %s/sub/a.txt: "
             "cannot create a file in its directory: Not a directory\"}",
             blocker);
    expect_raw(r, "", want);
    free(r);
    expect_dirty(f->c, other, true);
    expect_file(blocker, "keep", 4);

    /* A target that is a directory: the temporary file is written, the
     * rename fails, and the temporary file is gone again. */
    char adir[256];
    snprintf(adir, sizeof adir, "%s/adir", f->dir);
    assert_int_equal(mkdir(adir, 0755), 0);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\",\"uri\":\"file://%s\"}", other, adir);
    snprintf(want, sizeof want, "Failed to save %s: cannot replace the file: Is a directory", adir);
    expect_bool(r, "success", false);
    expect_str(r, "error", want);
    free(r);
    assert_false(dir_has_temp_files(f->dir));
    assert_int_equal(stat(adir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    expect_dirty(f->c, other, true);
    free(other);
    free(id);
}

static void test_reload(void **state)
{
    fx *f = *state;
    char path[256], want[512];
    snprintf(path, sizeof path, "%s/r.txt", f->dir);
    write_bytes(path, "one\ntwo\n", 8, 0644);
    char *id = open_doc(f->c, path, NULL);
    write_bytes(path, "ONE\n", 4, 0644);
    char *r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":2}");
    free(r);
    snprintf(want, sizeof want,
             "{\"documentId\":\"%s\",\"uri\":\"%s\",\"version\":2,\"changes\":[{\"range\":" RANGE(
                 0, 0, 2, 0) ",\"rangeLength\":8,\"text\":\"ONE\\n\"}]}",
             id, path);
    expect_note(f->c, 0, "document/didChange", want);
    expect_events(f->c, "document/didChange,#");
    expect_content(f->c, id, "ONE\n");
    expect_dirty(f->c, id, false);
    /* A reload is an undoable step, not a wipe of the history. */
    r = ok(f->c, "document/canUndo", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"canUndo\":true}");
    free(r);

    /* Unsaved changes are not thrown away unless asked. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":1,\"column\":0},\"text\":\"mine\"}", id);
    test_client_clear_notifications(f->c);
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_raw(r, "", "{\"success\":false,\"version\":3,\"error\":\"Document has unsaved changes\"}");
    free(r);
    expect_events(f->c, "#");
    expect_content(f->c, id, "ONE\nmine");
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\",\"force\":true}", id);
    expect_raw(r, "", "{\"success\":true,\"version\":4}");
    free(r);
    expect_content(f->c, id, "ONE\n");

    /* The line ends are re-read too. */
    write_bytes(path, "x\r\ny\r\n", 6, 0644);
    OK(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    expect_content(f->c, id, "x\ny\n");
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":0},\"text\":\"z\"}", id);
    OK(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_file(path, "x\r\ny\r\nz", 7);

    unlink(path);
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", id);
    snprintf(want, sizeof want,
             "{\"success\":false,\"version\":6,\"error\":\"Failed to open file: %s: No such file or directory\"}", path);
    expect_raw(r, "", want);
    free(r);
    expect_content(f->c, id, "x\ny\nz");

    char *m = open_doc(f->c, "memory://mem.txt", "\"m\"");
    r = ok(f->c, "document/reload", "{\"documentId\":\"%s\"}", m);
    expect_raw(r, "", "{\"success\":false,\"version\":1,\"error\":\"Document has no file to reload from\"}");
    free(r);
    expect_call(f->c, "document/reload", "{\"documentId\":\"nope\"}",
                "{\"success\":false,\"version\":0,\"error\":\"Document not found\"}");
    expect_message(fails(f->c, -32602, "document/reload", "{\"documentId\":\"%s\",\"force\":\"yes\"}", m),
                   "force: expected boolean, got string");
    free(m);
    free(id);
}

/* ----- large files ------------------------------------------------------------------------------------------- */

static void test_large_file_on_thread_pool(void **state)
{
    fx *f = *state;
    char path[256];
    snprintf(path, sizeof path, "%s/big.txt", f->dir);
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    const int lines = 380000; /* about 20 MB */
    for (int i = 0; i < lines; i++)
        fprintf(out, "line %06d: the quick brown fox jumps over the lazy dog\n", i);
    fclose(out);

    char params[300];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t open_id = test_client_send(f->c, "document/open", params);
    int64_t ping_id = test_client_send(f->c, "ecp/ping", "{\"n\":1}");
    char *r;
    assert_int_equal(test_client_wait_response(f->c, ping_id, 30000, &r), 0);
    expect_raw(r, "", "{\"n\":1}");
    free(r);
    /* The ping came back while the file was still being read. */
    char want[128];
    snprintf(want, sizeof want, "#%lld", (long long)ping_id);
    assert_string_equal(test_client_event_log(f->c), want);
    assert_int_equal(test_client_wait_response(f->c, open_id, 30000, &r), 0);
    snprintf(want, sizeof want, "#%lld,document/didOpen,#%lld", (long long)ping_id, (long long)open_id);
    assert_string_equal(test_client_event_log(f->c), want);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", lines + 1);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":%d}", id, lines - 1);
    expect_str(r, "text", "line 379999: the quick brown fox jumps over the lazy dog");
    free(r);
    /* Edit near the end, save through the pool, and find it on disk. */
    OK(f->c, "document/insert", "{\"documentId\":\"%s\",\"position\":{\"line\":%d,\"column\":4},\"text\":\"!\"}", id,
       lines - 1);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    size_t len;
    char *disk = read_bytes(path, &len);
    const char *tail = "line! 379999: the quick brown fox jumps over the lazy dog\n";
    assert_true(len > strlen(tail));
    assert_string_equal(disk + len - strlen(tail), tail);
    free(disk);
    free(id);
}

static void test_large_crlf_seam(void **state)
{
    fx *f = *state;
    /* The file is read in 4 MiB chunks: put a CRLF's '\r' at the very end of
     * the first chunk and its '\n' at the start of the second. */
    const size_t first = (4u << 20) - 1;
    size_t size = first + 2 + 8 + (2u << 20) + 2;
    char *data = malloc(size);
    memset(data, 'a', first);
    memcpy(data + first, "\r\nsecond\r\n", 10);
    memset(data + first + 10, 'b', 2u << 20);
    memcpy(data + size - 2, "\r\n", 2);
    char path[256];
    snprintf(path, sizeof path, "%s/seam.txt", f->dir);
    write_bytes(path, data, size, 0644);
    char *r = ok(f->c, "document/open", "{\"uri\":\"file://%s\"}", path);
    char *id = test_json_string(r, "documentId");
    expect_int(r, "info.lineCount", 4);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":0}", id);
    char *text = test_json_string(r, "text");
    assert_int_equal(strlen(text), first);
    assert_int_equal(strspn(text, "a"), first);
    free(text);
    free(r);
    r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":1}", id);
    expect_str(r, "text", "second");
    free(r);
    r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":0}}", id);
    expect_int(r, "offset", (int64_t)first + 1 + 7);
    free(r);
    /* Saving writes every CRLF back. */
    OK(f->c, "document/markClean", "{\"documentId\":\"%s\"}", id);
    r = ok(f->c, "document/save", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "success", true);
    free(r);
    expect_file(path, data, size);
    free(data);
    free(id);
}

static void test_multibyte_across_pieces(void **state)
{
    fx *f = *state;
    /* 20,000 emoji on one line: the tree cuts its pieces by bytes, so reads
     * come back in chunks that split characters. */
    size_t n = 20000;
    char *json = malloc(n * 12 + 3), *utf8 = malloc(n * 4 + 1);
    char *p = json;
    *p++ = '"';
    for (size_t i = 0; i < n; i++) {
        memcpy(p, "\\ud83d\\ude00", 12);
        p += 12;
        memcpy(utf8 + i * 4, "\xF0\x9F\x98\x80", 4);
    }
    *p++ = '"';
    *p = '\0';
    utf8[n * 4] = '\0';
    char *id = open_doc(f->c, "memory://emoji-wall.txt", json);
    expect_content(f->c, id, utf8);
    char *r = ok(f->c, "document/line", "{\"documentId\":\"%s\",\"lineNumber\":0}", id);
    expect_str(r, "text", utf8);
    free(r);
    OK(f->c, "document/selectAll", "{\"documentId\":\"%s\"}", id);
    r = ok(f->c, "document/selections", "{\"documentId\":\"%s\"}", id);
    expect_str(r, "selections[0]", utf8);
    free(r);
    /* Columns far along the line agree in every encoding. */
    r = ok(f->c, "document/positionToOffset", "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":30000}}", id);
    expect_int(r, "offset", 30000);
    free(r);
    r = ok(f->c, "document/offsetToPosition", "{\"documentId\":\"%s\",\"offset\":39999}", id);
    expect_raw(r, "", "{\"position\":{\"line\":0,\"column\":39998}}");
    free(r);
    free(json);
    free(utf8);
    free(id);
}

static void write_big_file(const char *path, int lines)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    for (int i = 0; i < lines; i++)
        fprintf(out, "row %07d of a file that is read on the thread pool\n", i);
    fclose(out);
}

static void test_cancel_open(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/cancel.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t id = test_client_send(f->c, "document/open", params);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)id);
    test_client_notify(f->c, "$/cancelRequest", note);
    char *e = NULL;
    assert_int_equal(test_client_wait_response(f->c, id, 30000, &e), -32800);
    expect_str(e, "message", "Request cancelled");
    free(e);
    /* The read stops and nothing is opened, now or later. */
    test_server_run_for(f->s, 300);
    char *r = ok(f->c, "document/list", NULL);
    expect_raw(r, "", "{\"documents\":[]}");
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 0);
    /* Opening again works. */
    r = ok(f->c, "document/open", "%s", params);
    expect_int(r, "info.lineCount", 200001);
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 1);
}

static void test_disconnect_during_open(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/gone.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    test_client *c2 = test_client_connect(f->s);
    test_client_send(c2, "document/open", params);
    test_client_disconnect(c2);
    test_server_run_for(f->s, 300);
    char *r = ok(f->c, "document/list", NULL);
    expect_raw(r, "", "{\"documents\":[]}");
    free(r);
    assert_int_equal(test_client_notification_count(f->c, "document/didOpen"), 0);
}

static void test_concurrent_opens_share_one_read(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/twice.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    int64_t a = test_client_send(f->c, "document/open", params);
    int64_t b = test_client_send(f->c, "document/open", params);
    char *ra, *rb;
    assert_int_equal(test_client_wait_response(f->c, a, 30000, &ra), 0);
    assert_int_equal(test_client_wait_response(f->c, b, 30000, &rb), 0);
    char *ida = test_json_string(ra, "documentId"), *idb = test_json_string(rb, "documentId");
    assert_string_equal(ida, idb);
    char want[128];
    snprintf(want, sizeof want, "document/didOpen,#%lld,#%lld", (long long)a, (long long)b);
    assert_string_equal(test_client_event_log(f->c), want);
    /* Cancelling one of two waiters leaves the other its answer. */
    char other[256];
    snprintf(other, sizeof other, "%s/thrice.txt", f->dir);
    write_big_file(other, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", other);
    int64_t c = test_client_send(f->c, "document/open", params);
    int64_t d = test_client_send(f->c, "document/open", params);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)c);
    test_client_notify(f->c, "$/cancelRequest", note);
    char *rc, *rd;
    assert_int_equal(test_client_wait_response(f->c, c, 30000, &rc), -32800);
    assert_int_equal(test_client_wait_response(f->c, d, 30000, &rd), 0);
    expect_int(rd, "info.lineCount", 200001);
    free(rc);
    free(rd);
    free(ida);
    free(idb);
    free(ra);
    free(rb);
}

static void test_server_ends_while_reading(void **state)
{
    fx *f = *state;
    char path[256], params[300];
    snprintf(path, sizeof path, "%s/late.txt", f->dir);
    write_big_file(path, 200000);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\"}", path);
    test_client_send(f->c, "document/open", params);
    /* teardown frees the server with the read in flight */
}

/* ----- the method table --------------------------------------------------------------------------------------- */

static void test_methods_listed(void **state)
{
    fx *f = *state;
    static const char *const names[] = {
        "open",       "close",       "info",        "list",         "content",         "line",
        "lines",      "textInRange", "version",     "insert",       "delete",          "replace",
        "setContent", "cursors",     "setCursors",  "setCursor",    "addCursor",       "moveCursors",
        "selectAll",  "clearSelections", "selections", "undo",      "redo",            "canUndo",
        "canRedo",    "isDirty",     "markClean",   "positionToOffset", "offsetToPosition", "wordAtPosition",
        "save",       "reload",      "edit",        "type",         "viewport",
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
        T(test_position_offset),
        T(test_a_new_client_gets_its_columns),
        T(test_a_huge_change_text_arrives_whole_and_first),
        T(test_encodings),
        T(test_word_at_position),
        T(test_two_clients),
        T(test_save_round_trip),
        T(test_save_as_and_failures),
        T(test_reload),
        T(test_large_file_on_thread_pool),
        T(test_large_crlf_seam),
        T(test_multibyte_across_pieces),
        T(test_cancel_open),
        T(test_disconnect_during_open),
        T(test_concurrent_opens_share_one_read),
        T(test_server_ends_while_reading),
        T(test_methods_listed),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
