/* The syntax service through the in-process client: every syntax method's
 * result shape and error codes, the captures each shipped language gives a
 * sample, documents followed through edits (syntax/didChange, tokens shifted
 * and then reparsed), theme changes recolouring, and bad input (invalid
 * UTF-8, a long line, deep nesting) answered in bounded time without
 * holding up other requests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_client.h"

typedef struct fx {
    test_server *s;
    test_client *c;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_server_new(NULL);
    f->c = test_client_connect(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    test_server_free(f->s);
    free(f);
    return 0;
}

/* The request's result (or error) JSON; asserts the status. */
static char *call(fx *f, int want, const char *method, const char *params)
{
    char *out = NULL;
    int rc = test_client_request(f->c, method, params, &out);
    if (rc != want)
        fail_msg("%s %s: %d, wanted %d: %s", method, params, rc, want, out ? out : "(null)");
    return out;
}

/* Whether line `line` of a highlight result holds a token of `scope` whose
 * text (in content's line) is `text`. */
static bool has_token(const char *result, const char *lines_path, const char *content, int line, const char *text,
                      const char *scope)
{
    const char *p = content;
    for (int i = 0; i < line && p; i++) {
        p = strchr(p, '\n');
        if (p)
            p++;
    }
    if (!p)
        return false;
    char path[128];
    snprintf(path, sizeof path, "%s[%d]", lines_path, line);
    long n = test_json_length(result, path);
    for (long i = 0; i < n; i++) {
        char key[160];
        int64_t start, end;
        snprintf(key, sizeof key, "%s[%d][%ld].start", lines_path, line, i);
        test_json_int(result, key, &start);
        snprintf(key, sizeof key, "%s[%d][%ld].end", lines_path, line, i);
        test_json_int(result, key, &end);
        snprintf(key, sizeof key, "%s[%d][%ld].scope", lines_path, line, i);
        char *s = test_json_string(result, key);
        bool ok = s && strcmp(s, scope) == 0 && (size_t)(end - start) == strlen(text) &&
                  strncmp(p + start, text, (size_t)(end - start)) == 0;
        free(s);
        if (ok)
            return true;
    }
    return false;
}

static char *highlight(fx *f, const char *language, const char *content)
{
    char *esc = malloc(strlen(content) * 2 + 1), *q = esc;
    for (const char *p = content; *p; p++) {
        if (*p == '\n') {
            *q++ = '\\';
            *q++ = 'n';
        } else if (*p == '"' || *p == '\\') {
            *q++ = '\\';
            *q++ = *p;
        } else {
            *q++ = *p;
        }
    }
    *q = 0;
    size_t n = strlen(esc) + strlen(language) + 64;
    char *params = malloc(n);
    snprintf(params, n, "{\"languageId\":\"%s\",\"content\":\"%s\"}", language, esc);
    char *out = call(f, 0, "syntax/highlight", params);
    free(params);
    free(esc);
    return out;
}

/* ----- each language's captures ------------------------------------------------------------ */

typedef struct sample {
    const char *language;
    const char *content;
    int line;
    const char *text;
    const char *scope;
} sample;

static const sample samples[] = {
    {"c", "#define MAX_LEN 10\nint main(void) { return puts(\"hi\"); }\n", 1, "int", "type"},
    {"c", "#define MAX_LEN 10\nint main(void) { return MAX_LEN; }\n", 1, "MAX_LEN", "constant"}, /* #match? */
    {"c", "#define MAX_LEN 10\nint main(void) { return puts(\"hi\"); }\n", 1, "puts", "function"}, /* last wins */
    {"c", "int x = 1; // note\n", 0, "// note", "comment"},
    {"cpp", "class A { public: virtual void f(); };\n", 0, "class", "keyword"},
    {"cpp", "int main() { return 0; }\n", 0, "int", "type"}, /* inherited from C */
    {"javascript", "const x = require('y');\n", 0, "const", "keyword"},
    {"javascript", "const x = require('y');\n", 0, "require", "function.builtin"}, /* #eq? */
    {"javascriptreact", "const a = <div>hi</div>;\n", 0, "div", "tag"},
    {"typescript", "interface A { b: number }\n", 0, "interface", "keyword"},
    {"typescript", "const x = 1;\n", 0, "const", "keyword"}, /* inherited from javascript */
    {"typescriptreact", "const a: number = <div/>;\n", 0, "number", "type.builtin"},
    {"python", "def f(x):\n    return None\n", 0, "def", "keyword"},
    {"python", "def f(x):\n    return None\n", 1, "None", "constant.builtin"},
    {"json", "{\"a\": 1}\n", 0, "1", "number"},
    {"rust", "fn main() { let x = 1; }\n", 0, "fn", "keyword"},
    {"go", "package main\nfunc main() {}\n", 1, "func", "keyword"},
    {"bash", "echo hi # c\n", 0, "# c", "comment"},
    {"shellscript", "if true; then echo; fi\n", 0, "if", "keyword"},
    {"markdown", "# Title\n\ntext\n", 0, "Title", "markup.heading"},
    {"html", "<p class=\"a\">x</p>\n", 0, "p", "tag"},
    {"css", "a { color: red; }\n", 0, "color", "property"},
    {"java", "class A { void f() {} }\n", 0, "class", "keyword"},
    {"lua", "local x = 1\n", 0, "local", "keyword"},
    {"lua", "print(1)\nprinter(1)\n", 0, "print", "function.builtin"}, /* #any-of? */
    {"lua", "print(1)\nprinter(1)\n", 1, "printer", "function.call"},  /* ... and not for others */
    {"yaml", "a: 1\n", 0, "1", "number"},
    {"toml", "[a]\nb = true\n", 1, "true", "boolean"},
    {"php", "<?php\n// note\nif ($a) { echo \"hi\"; }\n", 2, "if", "keyword"},
    {"php", "<?php\n// note\nif ($a) { echo \"hi\"; }\n", 2, "\"hi\"", "string"},
    {"php", "<?php\n// note\nif ($a) { echo \"hi\"; }\n", 1, "// note", "comment"},
    {"ruby", "# note\ndef f\n  \"hi\"\nend\n", 1, "def", "keyword"},
    {"ruby", "# note\ndef f\n  \"hi\"\nend\n", 2, "\"hi\"", "string"},
    {"ruby", "# note\ndef f\n  \"hi\"\nend\n", 0, "# note", "comment"},
    {"csharp", "// note\nclass A { string s = \"hi\"; }\n", 1, "class", "keyword"},
    {"csharp", "// note\nclass A { string s = \"hi\"; }\n", 1, "\"hi\"", "string"},
    {"csharp", "// note\nclass A { string s = \"hi\"; }\n", 0, "// note", "comment"},
    {"sql", "-- note\nSELECT 'hi' FROM t;\n", 1, "SELECT", "keyword"},
    {"sql", "-- note\nSELECT 'hi' FROM t;\n", 1, "'hi'", "string"},
    {"sql", "-- note\nSELECT 'hi' FROM t;\n", 0, "-- note", "comment"},
    {"makefile", "# note\nifdef X\nA = \"hi\"\nendif\n", 1, "ifdef", "keyword"},
    {"makefile", "# note\nifdef X\nA = \"hi\"\nendif\n", 0, "# note", "comment"},
    {"kotlin", "// note\nfun f() = \"hi\"\n", 1, "fun", "keyword.function"},
    {"kotlin", "// note\nfun f() = \"hi\"\n", 1, "\"hi\"", "string"},
    {"kotlin", "// note\nfun f() = \"hi\"\n", 0, "// note", "comment"},
    {"zig", "// note\nconst s = \"hi\";\n", 1, "const", "keyword"},
    {"zig", "// note\nconst s = \"hi\";\n", 1, "\"hi\"", "string"},
    {"zig", "// note\nconst s = \"hi\";\n", 0, "// note", "comment"},
    {"zig", "const MAX = 1;\nconst low = MAX;\n", 1, "MAX", "constant"}, /* #lua-match? */
    {"zig", "const MAX = 1;\nconst low = MAX;\n", 1, "low", "variable"},  /* ... and not for others */
    {"elixir", "# note\ndef f, do: \"hi\"\n", 1, "def", "keyword"},
    {"elixir", "# note\ndef f, do: \"hi\"\n", 1, "\"hi\"", "string"},
    {"elixir", "# note\ndef f, do: \"hi\"\n", 0, "# note", "comment"},
};

static void test_each_language_highlights_its_sample(void **state)
{
    fx *f = *state;
    for (size_t i = 0; i < sizeof samples / sizeof samples[0]; i++) {
        const sample *s = &samples[i];
        char *out = highlight(f, s->language, s->content);
        char *lang = test_json_string(out, "languageId");
        assert_string_equal(lang, s->language);
        if (!has_token(out, "lines", s->content, s->line, s->text, s->scope))
            fail_msg("%s: no @%s on '%s' in line %d: %s", s->language, s->scope, s->text, s->line, out);
        free(lang);
        free(out);
    }
}

static void test_tokens_have_colours_and_no_whitespace(void **state)
{
    fx *f = *state;
    char *out = highlight(f, "c", "int   x;   /* a */\n");
    long n = test_json_length(out, "lines[0]");
    assert_true(n >= 3);
    for (long i = 0; i < n; i++) {
        char key[64];
        int64_t start, end;
        snprintf(key, sizeof key, "lines[0][%ld].start", i);
        assert_true(test_json_int(out, key, &start));
        snprintf(key, sizeof key, "lines[0][%ld].end", i);
        assert_true(test_json_int(out, key, &end));
        assert_true(end > start);
        const char *text = "int   x;   /* a */";
        bool blank = true;
        for (int64_t k = start; k < end; k++)
            blank = blank && text[k] == ' ';
        assert_false(blank);
    }
    char *color = test_json_string(out, "lines[0][0].color");
    assert_non_null(color);
    assert_int_equal(color[0], '#');
    /* The object's exact text: its tail after the numbers is written from a
     * copy made once per scope and colour of the answer. */
    char *scope = test_json_string(out, "lines[0][0].scope");
    assert_non_null(scope);
    char want[160];
    snprintf(want, sizeof want, "{\"start\":0,\"end\":3,\"scope\":\"%s\",\"color\":\"%s\"}", scope, color);
    char *raw = test_json_raw(out, "lines[0][0]");
    assert_string_equal(raw, want);
    free(raw);
    free(scope);
    free(color);
    free(out);
}

static void test_utf16_columns(void **state)
{
    fx *f = *state;
    /* "é" is one UTF-16 unit and two bytes; "😀" two units and four bytes. */
    char *out = highlight(f, "c", "char *s = \"é😀\"; int y;\n");
    bool found = false;
    long n = test_json_length(out, "lines[0]");
    for (long i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "lines[0][%ld].scope", i);
        char *scope = test_json_string(out, key);
        if (scope && strcmp(scope, "type") == 0) {
            int64_t start;
            snprintf(key, sizeof key, "lines[0][%ld].start", i);
            test_json_int(out, key, &start);
            if (start > 0) {
                /* `int` after the string: 17 UTF-16 units in. */
                assert_int_equal(start, 17);
                found = true;
            }
        }
        free(scope);
    }
    assert_true(found);
    free(out);
}

/* The same text on a connection that negotiated UTF-8 and one that
 * negotiated UTF-32: columns in the connection's units. */
static void test_negotiated_encodings(void **state)
{
    fx *f = *state;
    static const struct {
        const char *encoding;
        int64_t start;
    } cases[] = {{"utf-8", 20}, {"utf-32", 16}}; /* "é" 2/1 units, "😀" 4/1 */
    for (size_t c = 0; c < 2; c++) {
        test_client *client = test_client_connect(f->s);
        char params[128], *out = NULL;
        snprintf(params, sizeof params, "{\"capabilities\":{\"positionEncodings\":[\"%s\"]}}", cases[c].encoding);
        assert_int_equal(test_client_request(client, "initialize", params, &out), 0);
        free(out);
        assert_int_equal(test_client_request(client, "syntax/highlight",
                                             "{\"languageId\":\"c\",\"content\":\"char *s = \\\"é😀\\\"; int y;\"}", &out),
                         0);
        bool found = false;
        long n = test_json_length(out, "lines[0]");
        for (long i = 0; i < n && !found; i++) {
            char key[64];
            snprintf(key, sizeof key, "lines[0][%ld].scope", i);
            char *scope = test_json_string(out, key);
            int64_t start = 0;
            snprintf(key, sizeof key, "lines[0][%ld].start", i);
            test_json_int(out, key, &start);
            found = scope && strcmp(scope, "type") == 0 && start > 0;
            if (found)
                assert_int_equal(start, cases[c].start);
            free(scope);
        }
        assert_true(found);
        free(out);
        test_client_disconnect(client);
    }
}

static void test_unsupported_language_is_plaintext(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/highlight", "{\"languageId\":\"swift\",\"content\":\"let x = 1\"}");
    assert_string_equal(out, "{\"lines\":[],\"languageId\":\"plaintext\",\"timing\":0}");
    free(out);
    out = call(f, 0, "syntax/highlight", "{\"languageId\":\"klingon\",\"content\":\"x\"}");
    char *lang = test_json_string(out, "languageId");
    assert_string_equal(lang, "plaintext");
    free(lang);
    free(out);
    free(call(f, -32602, "syntax/highlight", "{\"content\":\"x\"}"));
}

static void test_highlight_line(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/highlightLine",
                     "{\"content\":\"/* a\\nb */ int x;\",\"languageId\":\"c\",\"lineNumber\":1}");
    /* line 1 starts inside the comment: the whole text was parsed */
    char *scope = test_json_string(out, "tokens[0].scope");
    assert_string_equal(scope, "comment");
    free(scope);
    free(out);
    free(call(f, -32602, "syntax/highlightLine", "{\"content\":\"x\",\"languageId\":\"c\"}"));
    out = call(f, 0, "syntax/highlightLine", "{\"content\":\"x\",\"languageId\":\"c\",\"lineNumber\":9}");
    assert_string_equal(out, "{\"tokens\":[]}");
    free(out);
}

static void test_sessions(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/createSession",
                     "{\"documentId\":\"d1\",\"languageId\":\"python\",\"content\":\"def f():\\n  pass\\n\"}");
    char *id = test_json_string(out, "session.sessionId");
    assert_non_null(id);
    assert_memory_equal(id, "syntax-", 7);
    int64_t v;
    assert_true(test_json_int(out, "session.version", &v));
    assert_int_equal(v, 1);
    free(out);

    char params[256];
    snprintf(params, sizeof params, "{\"sessionId\":\"%s\",\"lineNumber\":0}", id);
    out = call(f, 0, "syntax/getSessionTokens", params);
    char *scope = test_json_string(out, "tokens[0].scope");
    assert_string_equal(scope, "keyword");
    free(scope);
    free(out);

    snprintf(params, sizeof params, "{\"sessionId\":\"%s\",\"content\":\"x = 1\\n\"}", id);
    out = call(f, 0, "syntax/updateSession", params);
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    snprintf(params, sizeof params, "{\"sessionId\":\"%s\"}", id);
    out = call(f, 0, "syntax/getSession", params);
    assert_true(test_json_int(out, "session.version", &v));
    assert_int_equal(v, 2);
    free(out);
    out = call(f, 0, "syntax/getSessionAllTokens", params);
    assert_int_equal(test_json_length(out, "lines"), 2);
    free(out);

    out = call(f, 0, "syntax/disposeSession", params);
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    out = call(f, 0, "syntax/getSession", params);
    assert_string_equal(out, "{\"session\":null}");
    free(out);
    snprintf(params, sizeof params, "{\"sessionId\":\"%s\",\"lineNumber\":0}", id);
    out = call(f, 0, "syntax/getSessionTokens", params);
    assert_string_equal(out, "{\"tokens\":[]}");
    free(out);
    snprintf(params, sizeof params, "{\"sessionId\":\"%s\",\"content\":\"y\"}", id);
    out = call(f, -32503, "syntax/updateSession", params);
    assert_non_null(strstr(out, "Session not found"));
    free(out);
    free(call(f, 0, "syntax/disposeSession", "{\"sessionId\":\"nope\"}"));
    free(id);
}

static void test_languages_and_detection(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/languages", "{}");
    assert_non_null(strstr(out, "\"typescriptreact\""));
    assert_non_null(strstr(out, "\"c\""));
    assert_non_null(strstr(out, "\"ruby\""));
    assert_non_null(strstr(out, "\"makefile\""));
    assert_null(strstr(out, "\"swift\""));
    free(out);
    out = call(f, 0, "syntax/isSupported", "{\"languageId\":\"rust\"}");
    assert_string_equal(out, "{\"supported\":true}");
    free(out);
    out = call(f, 0, "syntax/isSupported", "{\"languageId\":\"cobol\"}");
    assert_string_equal(out, "{\"supported\":false}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/b/main.TSX\"}");
    assert_string_equal(out, "{\"languageId\":\"typescriptreact\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/run.zsh\"}");
    assert_string_equal(out, "{\"languageId\":\"bash\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/schema.pgsql\"}");
    assert_string_equal(out, "{\"languageId\":\"sql\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/b.scss\"}");
    assert_string_equal(out, "{\"languageId\":\"scss\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/b.hxx\"}");
    assert_string_equal(out, "{\"languageId\":null}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/Makefile\"}");
    assert_string_equal(out, "{\"languageId\":\"makefile\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/build.zig\"}");
    assert_string_equal(out, "{\"languageId\":\"zig\"}");
    free(out);
    out = call(f, 0, "syntax/detectLanguage", "{\"filePath\":\"/a/Makefile.bak\"}");
    assert_string_equal(out, "{\"languageId\":null}");
    free(out);
}

static void test_themes(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/getTheme", "{}");
    assert_string_equal(out, "{\"theme\":\"catppuccin-frappe\"}"); /* the catalogue's default */
    free(out);
    out = call(f, 0, "syntax/themes", "{}");
    assert_non_null(strstr(out, "\"catppuccin-frappe\""));
    assert_non_null(strstr(out, "\"github-light\""));
    free(out);
    out = call(f, -32502, "syntax/setTheme", "{\"theme\":\"nope\"}");
    assert_non_null(strstr(out, "Theme not found: nope"));
    free(out);
    out = call(f, -32502, "syntax/highlight", "{\"languageId\":\"c\",\"content\":\"int x;\",\"theme\":\"nope\"}");
    free(out);

    char *before = highlight(f, "c", "int x;\n");
    out = call(f, 0, "syntax/setTheme", "{\"theme\":\"github-light\"}");
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    out = call(f, 0, "syntax/getTheme", "{}");
    assert_string_equal(out, "{\"theme\":\"github-light\"}");
    free(out);
    char *after = highlight(f, "c", "int x;\n");
    char *c1 = test_json_string(before, "lines[0][0].color"), *c2 = test_json_string(after, "lines[0][0].color");
    assert_non_null(c1);
    assert_non_null(c2);
    assert_string_not_equal(c1, c2);
    free(c1);
    free(c2);
    free(before);
    free(after);

    out = call(f, 0, "syntax/highlight",
               "{\"languageId\":\"c\",\"content\":\"int x;\",\"theme\":\"catppuccin-mocha\"}");
    free(out);
    out = call(f, 0, "syntax/getTheme", "{}");
    assert_string_equal(out, "{\"theme\":\"catppuccin-mocha\"}");
    free(out);
}

static void test_metrics_and_readiness(void **state)
{
    fx *f = *state;
    free(call(f, 0, "syntax/resetMetrics", "{}"));
    free(highlight(f, "c", "int x;\n"));
    char *out = call(f, 0, "syntax/metrics", "{}");
    int64_t n;
    assert_true(test_json_int(out, "metrics.parseCount", &n));
    assert_int_equal(n, 1);
    assert_true(test_json_has(out, "metrics.averageParseTime"));
    free(out);
    free(call(f, 0, "syntax/resetMetrics", "{}"));
    out = call(f, 0, "syntax/metrics", "{}");
    assert_true(test_json_int(out, "metrics.parseCount", &n));
    assert_int_equal(n, 0);
    free(out);
    out = call(f, 0, "syntax/isReady", "{}");
    assert_string_equal(out, "{\"ready\":true}");
    free(out);
    out = call(f, 0, "syntax/waitForReady", "{}");
    assert_string_equal(out, "{\"ready\":true}");
    free(out);
}

/* ----- documents ------------------------------------------------------------------------------- */

static char *open_doc(fx *f, const char *uri, const char *content_json)
{
    char params[512];
    snprintf(params, sizeof params, "{\"uri\":\"%s\",\"content\":%s}", uri, content_json);
    char *out = call(f, 0, "document/open", params);
    char *id = test_json_string(out, "documentId");
    free(out);
    return id;
}

/* Waits until the document's tree matches its text. */
static char *settled_tokens(fx *f, const char *id, int start, int end)
{
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":%d,\"endLine\":%d}", id, start, end);
    for (int i = 0; i < 500; i++) {
        char *out = call(f, 0, "syntax/documentTokens", params);
        bool settled = false;
        test_json_bool(out, "settled", &settled);
        if (settled)
            return out;
        free(out);
        test_server_run_for(f->s, 10);
    }
    fail_msg("document %s never settled", id);
    return NULL;
}

static void test_documents_are_followed(void **state)
{
    fx *f = *state;
    char *id = open_doc(f, "file:///tmp/syntax-a.c", "\"int x;\\n/* c */\\n\"");
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    char *out = settled_tokens(f, id, 0, 1);
    char *scope = test_json_string(out, "lines[1][0].scope");
    assert_string_equal(scope, "comment");
    free(scope);
    free(out);

    /* document/viewport paints its lines with the same tokens, one array a
     * line; an include no service provides adds nothing. */
    char viewport[256];
    snprintf(viewport, sizeof viewport,
             "{\"documentId\":\"%s\",\"startLine\":1,\"lineCount\":5,\"include\":[\"tokens\",\"nothing\"]}", id);
    out = call(f, 0, "document/viewport", viewport);
    assert_int_equal(test_json_length(out, "tokens"), test_json_length(out, "lines"));
    scope = test_json_string(out, "tokens[0][0].scope");
    assert_string_equal(scope, "comment");
    free(scope);
    assert_false(test_json_has(out, "nothing"));
    free(out);

    /* Opening a comment at the top turns line 1 into comment text. */
    test_client_clear_notifications(f->c);
    char params[256];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"position\":{\"line\":0,\"column\":0},\"text\":\"/* \"}", id);
    free(call(f, 0, "document/insert", params));
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    const char *note = test_client_notification(f->c, "syntax/didChange", 0);
    int64_t start = -1, version = 0;
    assert_true(test_json_int(note, "ranges[0].startLine", &start));
    assert_int_equal(start, 0);
    assert_true(test_json_int(note, "version", &version));
    assert_int_equal(version, 2);
    out = settled_tokens(f, id, 0, 1);
    scope = test_json_string(out, "lines[0][0].scope");
    assert_string_equal(scope, "comment");
    free(scope);
    int64_t end;
    assert_true(test_json_int(out, "lines[0][0].end", &end));
    assert_int_equal(end, 9); /* the comment opened runs to the end of the line */
    free(out);

    /* A theme change reports every line of the document. */
    test_client_clear_notifications(f->c);
    free(call(f, 0, "syntax/setTheme", "{\"theme\":\"one-light\"}"));
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    note = test_client_notification(f->c, "syntax/didChange", 0);
    int64_t last;
    assert_true(test_json_int(note, "ranges[0].endLine", &last));
    assert_int_equal(last, 2);

    free(call(f, -32001, "syntax/documentTokens", "{\"documentId\":\"nope\",\"startLine\":0,\"endLine\":1}"));
    free(id);
}

static void test_plain_documents_have_no_tokens(void **state)
{
    fx *f = *state;
    char *id = open_doc(f, "file:///tmp/syntax-a.txt", "\"int x;\"");
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"startLine\":0,\"endLine\":5}", id);
    char *out = call(f, 0, "syntax/documentTokens", params);
    assert_string_equal(out, "{\"lines\":[[]],\"settled\":true}");
    free(out);
    free(id);
}

/* ----- bad input ------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_invalid_utf8_and_long_lines(void **state)
{
    fx *f = *state;
    /* Raw bytes that are not UTF-8, and a NUL, inside the text. */
    char *out = call(f, 0, "syntax/highlight", "{\"languageId\":\"c\",\"content\":\"int \xff\xfe x; \\u0000 int y;\"}");
    free(out);

    size_t n = 256u << 10;
    char *params = malloc(n + 100);
    int k = sprintf(params, "{\"languageId\":\"javascript\",\"content\":\"");
    for (size_t i = 0; i < n / 8; i++)
        memcpy(params + k + i * 8, "a=[1,2];", 8);
    strcpy(params + k + n, "\"}");
    double t0 = now_s();
    out = call(f, 0, "syntax/highlight", params);
    double took = now_s() - t0;
    assert_int_equal(test_json_length(out, "lines"), 1);
    /* Highlighted in its first 16 KiB only. */
    long tokens = test_json_length(out, "lines[0]");
    assert_true(tokens > 1000);
    char key[64];
    int64_t end = 0;
    snprintf(key, sizeof key, "lines[0][%ld].end", tokens - 1);
    assert_true(test_json_int(out, key, &end));
    assert_true(end <= 16384);
    assert_true(took < 20.0);
    free(out);
    free(params);
}

/* Deeply nested text makes a parser work hard: it is parsed off the loop,
 * so a cheap request sent after it answers at once, and it answers in
 * bounded time (texts past 65,535 unclosed tokens: below). */
static void test_deep_nesting_is_bounded(void **state)
{
    fx *f = *state;
    static const struct {
        const char *language, *open;
    } cases[] = {{"json", "["}, {"c", "int a = ("}, {"javascript", "f(["}, {"python", "x = ("}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t depth = 10000, n = strlen(cases[c].open);
        char *params = malloc(depth * n + 128);
        int k = sprintf(params, "{\"languageId\":\"%s\",\"content\":\"", cases[c].language);
        for (size_t i = 0; i < depth; i++)
            memcpy(params + k + i * n, cases[c].open, n);
        strcpy(params + k + depth * n, "\"}");
        double t0 = now_s();
        int64_t rid = test_client_send(f->c, "syntax/highlight", params);
        char *out = call(f, 0, "syntax/isReady", "{}");
        double quick = now_s() - t0;
        assert_string_equal(out, "{\"ready\":true}");
        free(out);
        assert_int_equal(test_client_wait_response(f->c, rid, 30000, &out), 0);
        double took = now_s() - t0;
        char *lang = test_json_string(out, "languageId");
        assert_string_equal(lang, cases[c].language);
        free(lang);
        free(out);
        free(params);
        if (quick > 0.5 || took > 20.0)
            fail_msg("%s nested %zu deep: isReady after %.3f s, highlight after %.3f s", cases[c].language, depth,
                     quick, took);
        print_message("%s: isReady %.4f s, highlight %.3f s\n", cases[c].language, quick, took);
    }
}

/* Broken code that leaves 65,535 tokens unclosed, or 65,535 comments in a
 * row, gives a node that many children: the runtime counts them in 32 bits,
 * so such a document is parsed and highlighted like any other (a runtime
 * that counted in 16 bits freed the wrong pointer with that tree, and the
 * server died). Each text ends with a line comment, which must come back
 * as a comment, in the document and in a one-shot highlight; nothing stays
 * plain, and the server goes on answering. */
static void test_wide_trees_are_highlighted(void **state)
{
    fx *f = *state;
    test_server_free(f->s);
    char *log_text = NULL;
    size_t log_len = 0;
    FILE *log = open_memstream(&log_text, &log_len);
    test_server_options options = {.log = log};
    f->s = test_server_new(&options);
    f->c = test_client_connect(f->s);
    static const struct {
        const char *language, *ext, *unit;
        size_t count;
    } cases[] = {{"json", "json", "[", 65535},
                 {"javascript", "js", "f([", 22000},
                 {"javascript", "js", "!", 70000},
                 {"c", "c", "int a = (", 20000},
                 {"c", "c", "// c\\n", 70000}};
    static const char tail[] = "\\n// end";
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t n = strlen(cases[c].unit);
        char *content = malloc(cases[c].count * n + sizeof tail + 3);
        content[0] = '"';
        for (size_t i = 0; i < cases[c].count; i++)
            memcpy(content + 1 + i * n, cases[c].unit, n);
        sprintf(content + 1 + cases[c].count * n, "%s\"", tail);
        /* The same text unescaped, to find the comment's line in. */
        size_t raw_len = 0;
        char *raw = malloc(strlen(content) + 1);
        for (const char *p = content + 1; p[1]; p++) {
            if (p[0] == '\\' && p[1] == 'n') {
                raw[raw_len++] = '\n';
                p++;
            } else {
                raw[raw_len++] = *p;
            }
        }
        raw[raw_len] = '\0';
        int last = 0;
        for (size_t i = 0; i < raw_len; i++)
            last += raw[i] == '\n';

        char uri[64];
        snprintf(uri, sizeof uri, "file:///tmp/syntax-wide-%zu.%s", c, cases[c].ext);
        size_t plen = strlen(content) + 128;
        char *params = malloc(plen);
        snprintf(params, plen, "{\"uri\":\"%s\",\"content\":%s}", uri, content);
        char *out = call(f, 0, "document/open", params);
        char *id = test_json_string(out, "documentId");
        free(out);
        snprintf(params, plen, "{\"documentId\":\"%s\",\"startLine\":%d,\"endLine\":%d}", id, last, last);
        bool settled = false;
        for (int i = 0; i < 6000 && !settled; i++) {
            out = call(f, 0, "syntax/documentTokens", params);
            test_json_bool(out, "settled", &settled);
            /* lines[0] is the text's last line, which starts with the comment. */
            if (settled && !has_token(out, "lines", raw + raw_len - strlen("// end"), 0, "// end", "comment"))
                fail_msg("%s: %zu x '%s': no comment at the end: %.300s", cases[c].language, cases[c].count,
                         cases[c].unit, out);
            free(out);
            if (!settled)
                test_server_run_for(f->s, 10);
        }
        if (!settled)
            fail_msg("%s: %zu x '%s' never settled", cases[c].language, cases[c].count, cases[c].unit);

        snprintf(params, plen, "{\"languageId\":\"%s\",\"content\":%s}", cases[c].language, content);
        out = call(f, 0, "syntax/highlight", params);
        if (!has_token(out, "lines", raw, last, "// end", "comment"))
            fail_msg("%s: %zu x '%s' highlighted: no comment at the end", cases[c].language, cases[c].count,
                     cases[c].unit);
        free(out);
        fflush(log);
        if (log_text && strstr(log_text, "stays plain text"))
            fail_msg("%s: %zu x '%s': %s", cases[c].language, cases[c].count, cases[c].unit, log_text);
        out = call(f, 0, "syntax/isReady", "{}");
        assert_string_equal(out, "{\"ready\":true}");
        free(out);
        free(id);
        free(params);
        free(content);
        free(raw);
    }

    /* Ordinary code with as many tokens, and as many comments. */
    size_t reps = 60000;
    const char *unit = "int f(void) { /* c */ return 0; }\\n";
    size_t n = strlen(unit);
    char *params = malloc(reps * n + 128);
    int k = sprintf(params, "{\"languageId\":\"c\",\"content\":\"");
    for (size_t i = 0; i < reps; i++)
        memcpy(params + k + i * n, unit, n);
    strcpy(params + k + reps * n, "\"}");
    char *out = call(f, 0, "syntax/highlight", params);
    assert_int_equal(test_json_length(out, "lines"), (long)reps + 1);
    assert_true(test_json_length(out, "lines[59999]") >= 5);
    free(out);
    free(params);

    /* And 70,000 declarations that tree-sitter also tries, and rejects, as
     * expressions at the top of a file. */
    reps = 70000;
    unit = "T * x;\\n";
    n = strlen(unit);
    params = malloc(reps * n + 128);
    k = sprintf(params, "{\"languageId\":\"c\",\"content\":\"");
    for (size_t i = 0; i < reps; i++)
        memcpy(params + k + i * n, unit, n);
    strcpy(params + k + reps * n, "\"}");
    out = call(f, 0, "syntax/highlight", params);
    assert_true(test_json_length(out, "lines[69999]") >= 2);
    free(out);
    free(params);
    test_server_free(f->s);
    f->s = NULL;
    fclose(log);
    free(log_text);
    f->s = test_server_new(NULL);
    f->c = test_client_connect(f->s);
}

/* ----- injections ------------------------------------------------------------------------------ */

/* Highlights content (a JSON string's characters, escaped) as language and
 * returns the result. */
static char *highlight_as(fx *f, const char *language, const char *content_json)
{
    size_t n = strlen(content_json) + 128;
    char *params = malloc(n);
    snprintf(params, n, "{\"languageId\":\"%s\",\"content\":%s}", language, content_json);
    char *out = call(f, 0, "syntax/highlight", params);
    free(params);
    return out;
}

static void expect_token(const char *out, const char *content, int line, const char *text, const char *scope)
{
    if (!has_token(out, "lines", content, line, text, scope))
        fail_msg("no @%s on '%s' in line %d: %s", scope, text, line, out);
}

/* Code fences get the tokens of the language their info string names, the
 * markdown around them keeps its own. */
static void test_markdown_fences_are_injected(void **state)
{
    fx *f = *state;
    const char *content = "# Title\n"
                          "```c\n"
                          "int main(void) { return 0; }\n"
                          "```\n"
                          "text\n"
                          "```python\n"
                          "def f(x):\n"
                          "    return None\n"
                          "```\n";
    char *out = highlight_as(f, "markdown",
                             "\"# Title\\n```c\\nint main(void) { return 0; }\\n```\\ntext\\n```python\\n"
                             "def f(x):\\n    return None\\n```\\n\"");
    expect_token(out, content, 0, "Title", "markup.heading");
    expect_token(out, content, 1, "```", "punctuation.delimiter");
    expect_token(out, content, 2, "int", "type");
    expect_token(out, content, 2, "main", "function");
    expect_token(out, content, 2, "return", "keyword");
    expect_token(out, content, 6, "def", "keyword");
    expect_token(out, content, 6, "f", "function");
    expect_token(out, content, 7, "None", "constant.builtin");
    free(out);
}

/* <script> is javascript and <style> css inside html. */
static void test_html_script_and_style_are_injected(void **state)
{
    fx *f = *state;
    const char *content = "<html>\n"
                          "<script>\n"
                          "const answer = 42;\n"
                          "</script>\n"
                          "<style>\n"
                          "body { color: red; }\n"
                          "</style>\n"
                          "</html>\n";
    char *out = highlight_as(f, "html",
                             "\"<html>\\n<script>\\nconst answer = 42;\\n</script>\\n<style>\\nbody { color: red; }\\n"
                             "</style>\\n</html>\\n\"");
    expect_token(out, content, 1, "script", "tag");
    expect_token(out, content, 2, "const", "keyword");
    expect_token(out, content, 2, "42", "number");
    expect_token(out, content, 5, "body", "tag");
    expect_token(out, content, 5, "color", "property");
    free(out);
}

/* Emphasis, code spans and links inside markdown's paragraphs, through the
 * inline grammar. */
static void test_markdown_inline(void **state)
{
    fx *f = *state;
    const char *content = "Some *stress* and `code` and [a link](https://example.com).\n";
    char *out = highlight_as(f, "markdown",
                             "\"Some *stress* and `code` and [a link](https://example.com).\\n\"");
    expect_token(out, content, 0, "stress", "markup.italic");
    expect_token(out, content, 0, "*", "punctuation.delimiter");
    expect_token(out, content, 0, "code", "markup.raw");
    expect_token(out, content, 0, "`", "punctuation.delimiter");
    expect_token(out, content, 0, "a link", "markup.link");
    expect_token(out, content, 0, "https://example.com", "markup.link.url");
    free(out);
}

/* Markdown's text itself is coloured, not only its markers: the heading's
 * words, strong text, link text and code spans carry the markup.* scopes
 * the themes colour, and a colour. */
static void test_markdown_text_is_coloured(void **state)
{
    fx *f = *state;
    const char *content = "# Big title\n\nSee **this** and [the docs](https://example.com) and `x = 1`.\n";
    char *out = highlight_as(f, "markdown",
                             "\"# Big title\\n\\nSee **this** and [the docs](https://example.com) and `x = 1`.\\n\"");
    expect_token(out, content, 0, "Big title", "markup.heading");
    expect_token(out, content, 2, "this", "markup.bold");
    expect_token(out, content, 2, "the docs", "markup.link");
    expect_token(out, content, 2, "https://example.com", "markup.link.url");
    expect_token(out, content, 2, "x = 1", "markup.raw");
    static const char *const scopes[] = {"markup.heading", "markup.bold", "markup.link", "markup.link.url",
                                         "markup.raw"};
    for (size_t s = 0; s < sizeof scopes / sizeof scopes[0]; s++) {
        bool coloured = false;
        for (int line = 0; line <= 2 && !coloured; line++) {
            char path[64];
            snprintf(path, sizeof path, "lines[%d]", line);
            long n = test_json_length(out, path);
            for (long i = 0; i < n && !coloured; i++) {
                char key[96];
                snprintf(key, sizeof key, "lines[%d][%ld].scope", line, i);
                char *scope = test_json_string(out, key);
                snprintf(key, sizeof key, "lines[%d][%ld].color", line, i);
                char *color = test_json_string(out, key);
                coloured = scope && strcmp(scope, scopes[s]) == 0 && color && color[0] == '#';
                free(scope);
                free(color);
            }
        }
        if (!coloured)
            fail_msg("no colour on @%s: %s", scopes[s], out);
    }
    free(out);
}

/* An edit inside a fence of an open document reparses its layer: the tokens
 * of the new code come with the document's next syntax/didChange. */
static void test_edit_inside_a_fence(void **state)
{
    fx *f = *state;
    char *id = open_doc(f, "file:///tmp/syntax-fence.md", "\"# T\\n```c\\nint x;\\n```\\n\"");
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    char *out = settled_tokens(f, id, 0, 3);
    expect_token(out, "# T\n```c\nint x;\n```\n", 2, "int", "type");
    free(out);
    test_client_clear_notifications(f->c);
    char params[256];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"position\":{\"line\":2,\"column\":0},\"text\":\"static \"}", id);
    free(call(f, 0, "document/insert", params));
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    out = settled_tokens(f, id, 0, 3);
    const char *now = "# T\n```c\nstatic int x;\n```\n";
    expect_token(out, now, 2, "static", "keyword");
    expect_token(out, now, 2, "int", "type");

    /* The fence's language changes: the layer goes, another comes. */
    free(out);
    test_client_clear_notifications(f->c);
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"range\":{\"start\":{\"line\":1,\"column\":3},\"end\":{\"line\":1,\"column\":4}},"
             "\"text\":\"python\"}", id);
    free(call(f, 0, "document/replace", params));
    assert_true(test_client_wait_notifications(f->c, "syntax/didChange", 1, 5000));
    out = settled_tokens(f, id, 0, 3);
    if (has_token(out, "lines", "# T\n```python\nstatic int x;\n```\n", 2, "int", "type"))
        fail_msg("C tokens in a python fence: %s", out);
    free(out);
    free(id);
}

/* ----- the parts the adapter renders ------------------------------------------------------------ */

/* document/viewport's tokens are written by the syntax adapter as
 * documentTokens' lines are: the same bytes for the same lines, colours
 * included, and [] for the lines past what the service has. */
static void test_viewport_tokens_are_document_tokens(void **state)
{
    fx *f = *state;
    char *id = open_doc(f, "file:///tmp/syntax-viewport.c",
                        "\"#include <stdio.h>\\nstatic int x = 1; /* c */\\n\\nint main(void) { return \\\"s\\\"[0]; }\\n\"");
    char *tokens = settled_tokens(f, id, 0, 4);
    char *lines = test_json_raw(tokens, "lines");
    char params[256];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"startLine\":0,\"lineCount\":5,\"include\":[\"tokens\"]}", id);
    char *out = call(f, 0, "document/viewport", params);
    char *painted = test_json_raw(out, "tokens");
    assert_non_null(strstr(lines, "\"color\":\"#"));
    assert_string_equal(painted, lines);
    free(painted);
    free(out);
    free(lines);
    free(tokens);
    free(id);

    /* A document in a language without a grammar: empty lines. */
    id = open_doc(f, "file:///tmp/syntax-viewport.txt", "\"a\\nb\\n\"");
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"startLine\":0,\"lineCount\":3,\"include\":[\"tokens\"]}", id);
    out = call(f, 0, "document/viewport", params);
    painted = test_json_raw(out, "tokens");
    assert_string_equal(painted, "[[],[],[]]");
    free(painted);
    free(out);
    free(id);
}

/* syntax/highlight's answer is written off the loop with the colours of
 * the theme current when it was asked; a session's tokens on the loop with
 * the current theme's. For the same text and theme they are the same bytes:
 * injected languages, non-ASCII columns and a theme set by the request
 * itself included. */
static void test_highlight_answer_is_session_tokens(void **state)
{
    fx *f = *state;
    static const char content[] =
        "# Tïtle *em* `code`\\n\\n```c\\nstatic int x = 1; // é\\n```\\n\\n<b>x</b>\\n```python\\ndef f(): return \\\"ü\\\"\\n```\\n";
    char params[512];
    snprintf(params, sizeof params, "{\"languageId\":\"markdown\",\"content\":\"%s\",\"theme\":\"one-light\"}",
             content);
    char *out = call(f, 0, "syntax/highlight", params);
    char *highlighted = test_json_raw(out, "lines");
    free(out);
    snprintf(params, sizeof params, "{\"documentId\":\"d\",\"languageId\":\"markdown\",\"content\":\"%s\"}", content);
    out = call(f, 0, "syntax/createSession", params);
    char *sid = test_json_string(out, "session.sessionId");
    free(out);
    snprintf(params, sizeof params, "{\"sessionId\":\"%s\"}", sid);
    out = call(f, 0, "syntax/getSessionAllTokens", params);
    char *kept = test_json_raw(out, "lines");
    free(out);
    assert_non_null(strstr(highlighted, "\"scope\":\"keyword\""));
    assert_non_null(strstr(highlighted, "\"color\":\"#"));
    assert_string_equal(highlighted, kept);
    free(kept);
    free(highlighted);
    free(sid);
}

/* A C text of about `bytes` as a JSON string's contents. */
static char *big_c_json(size_t bytes)
{
    static const char line[] = "static int f(int a) { return a * 2 + (a > 1 ? a : 0); } /* x */\\n";
    size_t n = bytes / (sizeof line - 2) + 1;
    char *out = malloc(n * (sizeof line - 1) + 1), *p = out;
    for (size_t i = 0; i < n; i++, p += sizeof line - 1)
        memcpy(p, line, sizeof line - 1);
    *p = 0;
    return out;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The colour of line 0's first token of C text `content` under theme. */
static char *first_colour(fx *f, const char *theme, const char *content)
{
    char *out = NULL;
    assert_int_equal(test_client_requestf(f->c, "syntax/highlight", &out,
                                          "{\"languageId\":\"c\",\"content\":\"%s\",\"theme\":\"%s\"}", content, theme),
                     0);
    char *colour = test_json_string(out, "lines[0][0].color");
    free(out);
    return colour;
}

/* A highlight is coloured with the theme current when it was asked: a
 * theme made current while it parses does not reach it. */
static void test_highlight_keeps_the_theme_it_was_asked_with(void **state)
{
    fx *f = *state;
    char *light = first_colour(f, "one-light", "int x;"), *dark = first_colour(f, "one-dark", "int x;");
    assert_non_null(light);
    assert_non_null(dark);
    assert_string_not_equal(light, dark);

    char *text = big_c_json(128u << 10);
    size_t n = strlen(text) + 128;
    char *params = malloc(n);
    snprintf(params, n, "{\"languageId\":\"c\",\"content\":\"int x;\\n%s\",\"theme\":\"one-light\"}", text);
    int64_t id = test_client_send(f->c, "syntax/highlight", params);
    free(call(f, 0, "syntax/setTheme", "{\"theme\":\"one-dark\"}"));
    char *out = NULL;
    assert_int_equal(test_client_wait_response(f->c, id, 60000, &out), 0);
    char *colour = test_json_string(out, "lines[0][0].color");
    assert_string_equal(colour, light);
    free(colour);
    free(out);
    free(params);
    free(text);
    free(light);
    free(dark);
}

/* $/cancelRequest reaches the service's job: the highlight is answered
 * -32800, and the parse, though it runs on, is never counted, even long
 * after it would have landed. */
static void test_cancelled_highlight(void **state)
{
    fx *f = *state;
    char *text = big_c_json(128u << 10);
    size_t n = strlen(text) + 64;
    char *params = malloc(n);
    snprintf(params, n, "{\"languageId\":\"c\",\"content\":\"%s\"}", text);
    double t0 = now_ms();
    free(call(f, 0, "syntax/highlight", params));
    int whole_ms = (int)(now_ms() - t0);
    free(call(f, 0, "syntax/resetMetrics", "{}"));

    int64_t id = test_client_send(f->c, "syntax/highlight", params);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)id);
    test_client_notify(f->c, "$/cancelRequest", note);
    char *out = NULL;
    assert_int_equal(test_client_wait_response(f->c, id, 60000, &out), -32800);
    free(out);
    test_server_run_for(f->s, 2 * whole_ms + 200);
    out = call(f, 0, "syntax/metrics", "{}");
    int64_t parses = -1;
    assert_true(test_json_int(out, "metrics.parseCount", &parses));
    assert_int_equal(parses, 0);
    free(out);
    free(params);
    free(text);
}

/* A session disposed while its update is parsed: the update is answered
 * -32503, and the session does not come back. */
static void test_session_disposed_during_update(void **state)
{
    fx *f = *state;
    char *out = call(f, 0, "syntax/createSession", "{\"documentId\":\"d\",\"languageId\":\"c\",\"content\":\"int x;\"}");
    char *sid = test_json_string(out, "session.sessionId");
    free(out);
    char *text = big_c_json(128u << 10);
    size_t n = strlen(text) + 128;
    char *params = malloc(n);
    snprintf(params, n, "{\"sessionId\":\"%s\",\"content\":\"%s\"}", sid, text);
    int64_t update = test_client_send(f->c, "syntax/updateSession", params);
    char small[128];
    snprintf(small, sizeof small, "{\"sessionId\":\"%s\"}", sid);
    out = call(f, 0, "syntax/disposeSession", small);
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    assert_int_equal(test_client_wait_response(f->c, update, 60000, &out), -32503);
    char want[128];
    snprintf(want, sizeof want, "Session not found: %s", sid);
    assert_non_null(strstr(out, want));
    free(out);
    out = call(f, 0, "syntax/getSession", small);
    assert_string_equal(out, "{\"session\":null}");
    free(out);
    free(params);
    free(text);
    free(sid);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_each_language_highlights_its_sample, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_have_colours_and_no_whitespace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_utf16_columns, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negotiated_encodings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsupported_language_is_plaintext, setup, teardown),
        cmocka_unit_test_setup_teardown(test_highlight_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sessions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_languages_and_detection, setup, teardown),
        cmocka_unit_test_setup_teardown(test_themes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_metrics_and_readiness, setup, teardown),
        cmocka_unit_test_setup_teardown(test_documents_are_followed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_documents_have_no_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_invalid_utf8_and_long_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deep_nesting_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wide_trees_are_highlighted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_markdown_fences_are_injected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_html_script_and_style_are_injected, setup, teardown),
        cmocka_unit_test_setup_teardown(test_markdown_inline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_markdown_text_is_coloured, setup, teardown),
        cmocka_unit_test_setup_teardown(test_edit_inside_a_fence, setup, teardown),
        cmocka_unit_test_setup_teardown(test_viewport_tokens_are_document_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_highlight_answer_is_session_tokens, setup, teardown),
        cmocka_unit_test_setup_teardown(test_highlight_keeps_the_theme_it_was_asked_with, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancelled_highlight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_disposed_during_update, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
