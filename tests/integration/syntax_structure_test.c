/* The structure editors build on syntax trees, through the in-process
 * client: folding ranges, selection ranges, the indent of a new line and
 * document symbols, over real files in C, Python, JavaScript, TypeScript,
 * JSON and Markdown, with their errors and bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static char *call(fx *f, int want, const char *method, const char *params)
{
    char *out = NULL;
    int rc = test_client_request(f->c, method, params, &out);
    if (rc != want)
        fail_msg("%s %.200s: %d, wanted %d: %s", method, params, rc, want, out ? out : "(null)");
    return out;
}

static char *json_quote(const char *s)
{
    char *out = malloc(strlen(s) * 6 + 3), *q = out;
    *q++ = '"';
    for (const char *p = s; *p; p++) {
        if (*p == '\n') {
            *q++ = '\\';
            *q++ = 'n';
        } else if (*p == '\t') {
            *q++ = '\\';
            *q++ = 't';
        } else if (*p == '"' || *p == '\\') {
            *q++ = '\\';
            *q++ = *p;
        } else {
            *q++ = *p;
        }
    }
    *q++ = '"';
    *q = 0;
    return out;
}

/* Opens content at uri and waits for its first parse; returns its id. */
static char *open_parsed(fx *f, const char *uri, const char *content)
{
    char *quoted = json_quote(content);
    size_t n = strlen(quoted) + strlen(uri) + 64;
    char *params = malloc(n);
    snprintf(params, n, "{\"uri\":\"%s\",\"content\":%s}", uri, quoted);
    char *out = call(f, 0, "document/open", params);
    char *id = test_json_string(out, "documentId");
    free(out);
    free(params);
    free(quoted);
    char tokens[256];
    snprintf(tokens, sizeof tokens, "{\"documentId\":\"%s\",\"startLine\":0,\"endLine\":0}", id);
    for (int i = 0; i < 6000; i++) { /* a minute: the big file under sanitizers on a busy machine */
        out = call(f, 0, "syntax/documentTokens", tokens);
        bool settled = false;
        test_json_bool(out, "settled", &settled);
        free(out);
        if (settled)
            return id;
        test_server_run_for(f->s, 10);
    }
    fail_msg("%s never settled", uri);
    return NULL;
}

static char *by_id(fx *f, const char *method, const char *id)
{
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
    return call(f, 0, method, params);
}

static int64_t int_at(const char *json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t int_at(const char *json, const char *fmt, ...)
{
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    int64_t v = -1;
    if (!test_json_int(json, path, &v))
        fail_msg("no integer at %s in %.400s", path, json);
    return v;
}

static char *string_at(const char *json, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *string_at(const char *json, const char *fmt, ...)
{
    char path[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(path, sizeof path, fmt, ap);
    va_end(ap);
    char *s = test_json_string(json, path);
    if (!s)
        fail_msg("no string at %s in %.400s", path, json);
    return s;
}

/* Whether a folding range of exactly these lines is in the answer, and its kind ("" for none). */
static bool has_fold(const char *out, int64_t start, int64_t end, const char *kind)
{
    long n = test_json_length(out, "ranges");
    for (long i = 0; i < n; i++) {
        if (int_at(out, "ranges[%ld].startLine", i) != start || int_at(out, "ranges[%ld].endLine", i) != end)
            continue;
        char path[64];
        snprintf(path, sizeof path, "ranges[%ld].kind", i);
        char *k = test_json_string(out, path);
        bool ok = kind[0] ? k && strcmp(k, kind) == 0 : !k;
        free(k);
        return ok;
    }
    return false;
}

/* ----- folding ranges ------------------------------------------------------------------------ */

static const char c_file[] = "/*\n"                         /* 0 */
                             " * A long comment that runs\n" /* 1 */
                             " * over several lines.\n"      /* 2 */
                             " */\n"                         /* 3 */
                             "#include <stdio.h>\n"          /* 4 */
                             "\n"                            /* 5 */
                             "static int outer(int x)\n"     /* 6 */
                             "{\n"                           /* 7 */
                             "    if (x) {\n"                /* 8 */
                             "        while (x > 1) {\n"     /* 9 */
                             "            x--;\n"            /* 10 */
                             "        }\n"                   /* 11 */
                             "        return x + 1;\n"       /* 12 */
                             "    }\n"                       /* 13 */
                             "    return 0;\n"               /* 14 */
                             "}\n"                           /* 15 */
                             "\n"                            /* 16 */
                             "int second(void) {\n"          /* 17 */
                             "    return outer(2);\n"        /* 18 */
                             "}\n";                          /* 19 */

static void test_c_folds(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-a.c", c_file);
    char *out = by_id(f, "syntax/foldingRanges", id);
    /* The comment folds whole; a block folds to the line before its closing brace. */
    assert_true(has_fold(out, 0, 3, "comment"));
    assert_true(has_fold(out, 7, 14, ""));
    assert_true(has_fold(out, 8, 12, ""));
    assert_true(has_fold(out, 9, 10, ""));
    assert_true(has_fold(out, 17, 18, ""));
    /* One range a line: the innermost node that starts there. */
    long n = test_json_length(out, "ranges");
    for (long i = 1; i < n; i++)
        assert_true(int_at(out, "ranges[%ld].startLine", i) > int_at(out, "ranges[%ld].startLine", i - 1));
    free(out);
    free(id);
}

static void test_json_markdown_python_folds(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-a.json", "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}\n");
    char *out = by_id(f, "syntax/foldingRanges", id);
    assert_true(has_fold(out, 0, 5, ""));
    assert_true(has_fold(out, 1, 3, ""));
    free(out);
    free(id);

    id = open_parsed(f, "file:///tmp/structure-a.md", "# Title\n\ntext\n\n## Part\n\nmore text\nand more\n");
    out = by_id(f, "syntax/foldingRanges", id);
    assert_true(test_json_length(out, "ranges") >= 1);
    assert_int_equal(int_at(out, "ranges[0].startLine"), 0);
    assert_true(has_fold(out, 4, 7, ""));
    free(out);
    free(id);

    /* Python has no closing line: a def folds to its last line. */
    id = open_parsed(f, "file:///tmp/structure-a.py", "def f(x):\n    y = x\n    return y\n\nz = 1\n");
    out = by_id(f, "syntax/foldingRanges", id);
    assert_true(has_fold(out, 0, 2, ""));
    free(out);
    free(id);
}

static void test_javascript_nested_functions(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-n.js",
                           "function outer() {\n"     /* 0 */
                           "  function inner() {\n"   /* 1 */
                           "    return 1;\n"          /* 2 */
                           "  }\n"                    /* 3 */
                           "  return inner();\n"      /* 4 */
                           "}\n");                    /* 5 */
    char *out = by_id(f, "syntax/foldingRanges", id);
    assert_int_equal(test_json_length(out, "ranges"), 2);
    assert_true(has_fold(out, 0, 4, ""));
    assert_true(has_fold(out, 1, 2, ""));
    free(out);
    out = by_id(f, "syntax/symbols", id);
    assert_int_equal(test_json_length(out, "symbols"), 1);
    char *name = string_at(out, "symbols[0].children[0].name");
    assert_string_equal(name, "inner");
    free(name);
    assert_int_equal(int_at(out, "symbols[0].children[0].kind"), 12); /* a function in a function */
    assert_int_equal(int_at(out, "symbols[0].range.end.line"), 5);
    free(out);
    free(id);
}

/* ----- selection ranges ---------------------------------------------------------------------- */

static void test_selection_grows_from_identifier_to_file(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-b.c", c_file);
    char params[512];
    /* `x` of `return x + 1;` on line 12, and the `second` of line 17 */
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"positions\":[{\"line\":12,\"column\":15},{\"line\":17,\"column\":6}]}", id);
    char *out = call(f, 0, "syntax/selectionRanges", params);
    assert_int_equal(test_json_length(out, "ranges"), 2);

    char path[4096] = "ranges[0]";
    assert_int_equal(int_at(out, "%s.range.start.line", path), 12);
    assert_int_equal(int_at(out, "%s.range.start.column", path), 15);
    assert_int_equal(int_at(out, "%s.range.end.column", path), 16);
    bool saw_function = false;
    int levels = 1;
    int64_t prev_start_line = 12, prev_end_line = 12;
    for (;;) {
        size_t len = strlen(path);
        assert_true(len + sizeof ".parent" <= sizeof path);
        memcpy(path + len, ".parent", sizeof ".parent");
        if (!test_json_has(out, path)) {
            path[len] = 0;
            break;
        }
        levels++;
        int64_t sl = int_at(out, "%s.range.start.line", path), el = int_at(out, "%s.range.end.line", path);
        assert_true(sl <= prev_start_line && el >= prev_end_line); /* each holds the one before */
        prev_start_line = sl;
        prev_end_line = el;
        if (sl == 6 && el == 15 && int_at(out, "%s.range.end.column", path) == 1)
            saw_function = true;
    }
    assert_true(saw_function);
    assert_true(levels >= 5); /* identifier, binary expression, return, blocks, the function, the file */
    /* the last is the whole document */
    assert_int_equal(int_at(out, "%s.range.start.line", path), 0);
    assert_int_equal(int_at(out, "%s.range.start.column", path), 0);
    assert_int_equal(int_at(out, "%s.range.end.line", path), 20);
    assert_int_equal(int_at(out, "%s.range.end.column", path), 0);

    assert_int_equal(int_at(out, "ranges[1].range.start.line"), 17);
    assert_int_equal(int_at(out, "ranges[1].range.start.column"), 4);
    assert_int_equal(int_at(out, "ranges[1].range.end.column"), 10);
    free(out);
    free(id);
}

static void test_selection_columns_use_the_connection_encoding(void **state)
{
    fx *f = *state;
    /* "é" is one UTF-16 unit and two bytes: `b` is at column 19 in UTF-16, 20 in bytes */
    char *id = open_parsed(f, "file:///tmp/structure-c.js", "const s = \"\xc3\xa9\"; let b = 1;\n");
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"positions\":[{\"line\":0,\"column\":19}]}", id);
    char *out = call(f, 0, "syntax/selectionRanges", params);
    assert_int_equal(int_at(out, "ranges[0].range.start.column"), 19);
    assert_int_equal(int_at(out, "ranges[0].range.end.column"), 20);
    free(out);
    free(id);
}

static void test_selection_bounds_and_errors(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-d.c", c_file);
    size_t cap = 64 * 1024;
    char *params = malloc(cap);
    int n = snprintf(params, cap, "{\"documentId\":\"%s\",\"positions\":[", id);
    for (int i = 0; i < 1001; i++)
        n += snprintf(params + n, cap - (size_t)n, "%s{\"line\":0,\"column\":0}", i ? "," : "");
    snprintf(params + n, cap - (size_t)n, "]}");
    char *out = call(f, -32602, "syntax/selectionRanges", params);
    char *message = string_at(out, "message");
    assert_non_null(strstr(message, "positions"));
    free(message);
    free(out);

    char small[256];
    snprintf(small, sizeof small, "{\"documentId\":\"%s\",\"positions\":[{\"line\":99,\"column\":0}]}", id);
    free(call(f, -32003, "syntax/selectionRanges", small));
    snprintf(small, sizeof small, "{\"documentId\":\"%s\",\"positions\":[{\"line\":0,\"column\":99}]}", id);
    free(call(f, -32003, "syntax/selectionRanges", small));
    free(call(f, -32001, "syntax/selectionRanges", "{\"documentId\":\"nope\",\"positions\":[]}"));
    free(call(f, -32602, "syntax/selectionRanges", "{\"documentId\":\"nope\"}"));
    free(params);
    free(id);
}

/* Nesting far deeper than the chain's bound: the chain is cut, still ends at the file. */
static void test_selection_depth_is_bounded(void **state)
{
    fx *f = *state;
    size_t depth = 5000;
    char *text = malloc(depth * 2 + 16);
    memset(text, '[', depth);
    memcpy(text + depth, "1", 1);
    memset(text + depth + 1, ']', depth);
    strcpy(text + depth * 2 + 1, "\n");
    char *id = open_parsed(f, "file:///tmp/structure-deep.json", text);
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"positions\":[{\"line\":0,\"column\":%zu}]}", id, depth);
    char *out = call(f, 0, "syntax/selectionRanges", params);
    assert_int_equal(int_at(out, "ranges[0].range.start.column"), (int64_t)depth);
    size_t levels = 0;
    for (const char *p = out; (p = strstr(p, "\"parent\"")); p++)
        levels++;
    assert_true(levels >= 10 && levels <= 256);
    free(out);
    free(by_id(f, "syntax/foldingRanges", id));
    free(text);
    free(id);
}

/* ----- indent -------------------------------------------------------------------------------- */

static char *indent_after(fx *f, const char *id, int line)
{
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"line\":%d}", id, line);
    char *out = call(f, 0, "syntax/indent", params);
    char *indent = string_at(out, "indent");
    free(out);
    return indent;
}

static void test_indent(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-e.c", c_file);
    char *indent = indent_after(f, id, 8); /* "    if (x) {" */
    assert_string_equal(indent, "        ");
    free(indent);
    indent = indent_after(f, id, 10); /* "            x--;" */
    assert_string_equal(indent, "            ");
    free(indent);
    indent = indent_after(f, id, 16); /* a blank line after "}": the line above */
    assert_string_equal(indent, "");
    free(indent);
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"line\":21}", id);
    free(call(f, -32003, "syntax/indent", params));
    free(call(f, -32001, "syntax/indent", "{\"documentId\":\"nope\",\"line\":0}"));
    free(id);

    /* Python: after a colon, one level of the file's own unit (two spaces here) */
    id = open_parsed(f, "file:///tmp/structure-f.py", "class A:\n  def f(self):\n    return 1\n\n  def g(self):\n");
    indent = indent_after(f, id, 4);
    assert_string_equal(indent, "    ");
    free(indent);
    indent = indent_after(f, id, 0);
    assert_string_equal(indent, "  ");
    free(indent);
    free(id);

    /* A file indented with tabs gets a tab */
    id = open_parsed(f, "file:///tmp/structure-g.js",
                     "function f() {\n\tif (a) {\n\t\treturn [\n\t\t\t1,\n\t\t];\n\t}\n}\n");
    indent = indent_after(f, id, 1);
    assert_string_equal(indent, "\t\t");
    free(indent);
    free(id);

    /* A document without a grammar keeps the previous line's indent */
    id = open_parsed(f, "file:///tmp/structure-h.txt", "  some text\n\n");
    indent = indent_after(f, id, 1);
    assert_string_equal(indent, "  ");
    free(indent);
    free(id);
}

/* Enter at the caret (document/newline), then the document's text. */
static char *newline_at(fx *f, const char *id, int line, int column)
{
    char params[256];
    snprintf(params, sizeof params,
             "{\"documentId\":\"%s\",\"cursors\":[{\"position\":{\"line\":%d,\"column\":%d}}]}", id, line, column);
    free(call(f, 0, "document/setCursors", params));
    snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
    free(call(f, 0, "document/newline", params));
    char *out = call(f, 0, "document/content", params);
    char *content = string_at(out, "content");
    free(out);
    return content;
}

/* document/newline takes its indent from the syntax service where the
 * document has a grammar and a tree, and keeps its own rule elsewhere. */
static void test_newline_indents_from_the_syntax_service(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-n.c", "int f(int x) {\n  if (x) {\n}\n");
    char *content = newline_at(f, id, 1, 10);
    assert_string_equal(content, "int f(int x) {\n  if (x) {\n    \n}\n");
    free(content);
    free(id);

    /* On the blank line after `return x` the new line takes the indent of
     * the last line with text, as syntax/indent says; the document's own
     * rule would keep the blank line's (none). */
    id = open_parsed(f, "file:///tmp/structure-n.py", "def f(x):\n    return x\n\n");
    char *indent = indent_after(f, id, 2);
    content = newline_at(f, id, 2, 0);
    char want[128];
    snprintf(want, sizeof want, "def f(x):\n    return x\n\n%s\n", indent);
    assert_string_equal(indent, "    ");
    assert_string_equal(content, want);
    free(content);
    free(indent);

    /* With text after the caret the line is not judged whole: the
     * document's rule applies (here: the indent of `return x`'s line). */
    content = newline_at(f, id, 1, 10);
    assert_string_equal(content, "def f(x):\n    return\n     x\n\n    \n");
    free(content);
    free(id);

    /* Without a grammar: the document's rule, one level after ':' */
    id = open_parsed(f, "file:///tmp/structure-n.txt", "note:\n");
    content = newline_at(f, id, 0, 5);
    assert_string_equal(content, "note:\n    \n");
    free(content);
    free(id);
}

/* ----- symbols ------------------------------------------------------------------------------- */

static const char py_file[] = "import os\n"             /* 0 */
                              "\n"                      /* 1 */
                              "class Shape:\n"          /* 2 */
                              "    def __init__(self):\n" /* 3 */
                              "        self.n = 0\n"    /* 4 */
                              "\n"                      /* 5 */
                              "    def area(self):\n"   /* 6 */
                              "        return 0\n"      /* 7 */
                              "\n"                      /* 8 */
                              "def main():\n"           /* 9 */
                              "    return Shape()\n";   /* 10 */

static void test_python_symbols(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-i.py", py_file);
    char *out = by_id(f, "syntax/symbols", id);
    assert_int_equal(test_json_length(out, "symbols"), 2);
    char *name = string_at(out, "symbols[0].name");
    assert_string_equal(name, "Shape");
    free(name);
    assert_int_equal(int_at(out, "symbols[0].kind"), 5); /* Class */
    assert_int_equal(int_at(out, "symbols[0].range.start.line"), 2);
    assert_int_equal(int_at(out, "symbols[0].range.end.line"), 7);
    assert_int_equal(int_at(out, "symbols[0].selectionRange.start.column"), 6);
    assert_int_equal(int_at(out, "symbols[0].selectionRange.end.column"), 11);
    assert_int_equal(test_json_length(out, "symbols[0].children"), 2);
    name = string_at(out, "symbols[0].children[1].name");
    assert_string_equal(name, "area");
    free(name);
    assert_int_equal(int_at(out, "symbols[0].children[1].kind"), 6); /* Method: a function in a class */
    assert_int_equal(int_at(out, "symbols[0].children[1].range.start.line"), 6);
    name = string_at(out, "symbols[1].name");
    assert_string_equal(name, "main");
    free(name);
    assert_int_equal(int_at(out, "symbols[1].kind"), 12); /* Function */
    assert_false(test_json_has(out, "symbols[1].children"));
    free(out);
    free(id);
}

static void test_c_and_typescript_symbols(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-j.c", c_file);
    char *out = by_id(f, "syntax/symbols", id);
    assert_int_equal(test_json_length(out, "symbols"), 2);
    char *name = string_at(out, "symbols[0].name");
    assert_string_equal(name, "outer");
    free(name);
    assert_int_equal(int_at(out, "symbols[0].kind"), 12);
    /* the whole definition, from its return type to its closing brace */
    assert_int_equal(int_at(out, "symbols[0].range.start.line"), 6);
    assert_int_equal(int_at(out, "symbols[0].range.start.column"), 0);
    assert_int_equal(int_at(out, "symbols[0].range.end.line"), 15);
    assert_int_equal(int_at(out, "symbols[0].selectionRange.start.column"), 11);
    name = string_at(out, "symbols[1].name");
    assert_string_equal(name, "second");
    free(name);
    free(out);
    free(id);

    id = open_parsed(f, "file:///tmp/structure-k.ts",
                     "interface Point { x: number }\n"
                     "class Box {\n"
                     "  size(): number { return 1; }\n"
                     "}\n"
                     "function make(): Box { return new Box(); }\n");
    out = by_id(f, "syntax/symbols", id);
    assert_true(test_json_length(out, "symbols") >= 3);
    bool box = false, make = false;
    for (long i = 0; i < test_json_length(out, "symbols"); i++) {
        char *n = string_at(out, "symbols[%ld].name", i);
        if (strcmp(n, "Box") == 0) {
            box = true;
            char *child = string_at(out, "symbols[%ld].children[0].name", i);
            assert_string_equal(child, "size");
            free(child);
            assert_int_equal(int_at(out, "symbols[%ld].children[0].kind", i), 6);
        }
        if (strcmp(n, "make") == 0)
            make = true;
        free(n);
    }
    assert_true(box && make);
    free(out);
    free(id);
}

/* ----- documents without structure ------------------------------------------------------------ */

static void test_plain_documents_and_unknown_ids(void **state)
{
    fx *f = *state;
    char *id = open_parsed(f, "file:///tmp/structure-l.txt", "a\n  b\n  c\nd\n");
    char *out = by_id(f, "syntax/foldingRanges", id);
    assert_string_equal(out, "{\"ranges\":[]}");
    free(out);
    out = by_id(f, "syntax/symbols", id);
    assert_string_equal(out, "{\"symbols\":[]}");
    free(out);
    char params[256];
    snprintf(params, sizeof params, "{\"documentId\":\"%s\",\"positions\":[{\"line\":0,\"column\":0}]}", id);
    /* one range per position all the same: the whole document */
    out = call(f, 0, "syntax/selectionRanges", params);
    assert_string_equal(out, "{\"ranges\":[{\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":4,"
                             "\"column\":0}}}]}");
    free(out);
    free(id);

    /* JSON has no tags query: no symbols */
    id = open_parsed(f, "file:///tmp/structure-m.json", "{\"a\": 1}\n");
    out = by_id(f, "syntax/symbols", id);
    assert_string_equal(out, "{\"symbols\":[]}");
    free(out);
    free(id);

    free(call(f, -32001, "syntax/foldingRanges", "{\"documentId\":\"nope\"}"));
    free(call(f, -32001, "syntax/symbols", "{\"documentId\":\"nope\"}"));
}

/* A tags query over a file of 400,000 calls walks all of them for a second
 * or more: on the pool, while the loop answers others. */
static void test_large_files_are_answered_off_the_loop(void **state)
{
    fx *f = *state;
    const char head[] = "void f(void)\n{\n", line[] = "    g(1, 2);\n", tail[] = "}\n";
    size_t calls = 400000, n = strlen(head) + calls * strlen(line) + strlen(tail);
    char *text = malloc(n + 1), *p = text;
    p += sprintf(p, "%s", head);
    for (size_t i = 0; i < calls; i++)
        p += sprintf(p, "%s", line);
    sprintf(p, "%s", tail);
    char *id = open_parsed(f, "file:///tmp/structure-calls.c", text);
    free(text);
    test_client *other = test_client_connect(f->s);
    const char *methods[] = {"syntax/symbols", "syntax/foldingRanges"};
    for (size_t m = 0; m < 2; m++) {
        char params[256];
        snprintf(params, sizeof params, "{\"documentId\":\"%s\"}", id);
        int64_t slow = test_client_send(f->c, methods[m], params);
        char *out = NULL;
        assert_int_equal(test_client_request(other, "ecp/ping", NULL, &out), 0);
        free(out);
        /* answered the ping with the walk still running */
        assert_int_equal(test_client_wait_response(f->c, slow, 0, &out), INT32_MIN);
        assert_int_equal(test_client_wait_response(f->c, slow, 60000, &out), 0);
        free(out);
    }
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_c_folds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_markdown_python_folds, setup, teardown),
        cmocka_unit_test_setup_teardown(test_javascript_nested_functions, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection_grows_from_identifier_to_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection_columns_use_the_connection_encoding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection_bounds_and_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_selection_depth_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_indent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_newline_indents_from_the_syntax_service, setup, teardown),
        cmocka_unit_test_setup_teardown(test_python_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_c_and_typescript_symbols, setup, teardown),
        cmocka_unit_test_setup_teardown(test_plain_documents_and_unknown_ids, setup, teardown),
        cmocka_unit_test_setup_teardown(test_large_files_are_answered_off_the_loop, setup, teardown),
    };
    return cmocka_run_group_tests(tests, 0, 0);
}
