/* The syntax service's C API on a loop of its own: a document edited at
 * random, reparsed incrementally through every edit and every undo, ends
 * with the tokens its first full parse gave the same text; tokens asked
 * for between an edit and its reparse come from the old tree, shifted; a
 * document over the size cap (a 50 MB minified line) stays plain with a log
 * line; a grammar whose query does not compile turns off its language only;
 * the not- forms of the predicates hold where they should;
 * the tokens of a long run of broken code, and of a minified line of
 * megabytes, come in bounded time; a watched parse (a text of many tokens,
 * lexed by the grammar's quiet copy of its language) gives the tree and
 * tokens a bare parse gives, whole, incremental and over an included range,
 * and still refuses the texts that would overflow a node's child count;
 * texts and sessions are highlighted by the service's own jobs, copied when
 * asked, handed back once on the loop, cancelled through their job, and
 * never called back once the service is freed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <time.h>

#include "buf.h"
#include "document/interface.h"
#include "internal.h"
#include "syntax/interface.h"

typedef struct fx {
    uv_loop_t loop;
    ecp_pool *pool;
    document_service *docs;
    syntax_service *syntax;
    char *log_text; /* what the service logged, through log */
    size_t log_len;
    ecp_logger log;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->pool = ecp_pool_new(&f->loop, NULL);
    f->docs = document_service_new(f->pool, NULL);
    f->log.out = open_memstream(&f->log_text, &f->log_len);
    f->log.level = ECP_LOG_WARN;
    f->syntax = syntax_service_new(f->pool, &f->log, f->docs, NULL, NULL);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    syntax_service_free(f->syntax);
    document_service_free(f->docs);
    ecp_pool_free(f->pool);
    for (int i = 0; i < 5000 && uv_run(&f->loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    fclose(f->log.out);
    free(f->log_text);
    free(f);
    return 0;
}

/* Whether the service has logged a line holding text. */
static bool logged(fx *f, const char *text)
{
    fflush(f->log.out);
    return f->log_text && strstr(f->log_text, text) != NULL;
}

typedef struct opened {
    bool done;
    char id[64];
} opened;

static void on_open(void *ctx, int status, const ecp_error *err, const char *document_id, bool already_open)
{
    opened *o = ctx;
    assert_int_equal(status, 0);
    snprintf(o->id, sizeof o->id, "%s", document_id);
    o->done = true;
}

static void settle(fx *f, const char *id)
{
    for (int i = 0; i < 100000 && !syntax_document_settled(f->syntax, id); i++)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_true(syntax_document_settled(f->syntax, id));
}

static void open_doc(fx *f, const char *uri, const char *content, size_t len, opened *o)
{
    document_open_options opts = {uri, content, len, NULL, false};
    o->done = false;
    document_open(f->docs, &opts, on_open, o);
    while (!o->done)
        uv_run(&f->loop, UV_RUN_ONCE);
    settle(f, o->id);
}

/* All tokens of a document as text: "line:start-end:scope" lines. */
static void dump(fx *f, const char *id, buf *out)
{
    document_info info;
    assert_int_equal(document_get_info(f->docs, id, &info, NULL), 0);
    syntax_line *lines;
    size_t count;
    assert_int_equal(syntax_document_tokens(f->syntax, id, 0, info.line_count, ECP_ENCODING_UTF16, &lines, &count, NULL),
                     0);
    assert_int_equal(count, info.line_count);
    for (size_t l = 0; l < count; l++)
        for (size_t i = 0; i < lines[l].count; i++)
            buf_appendf(out, "%zu:%zu-%zu:%s\n", l, lines[l].tokens[i].start, lines[l].tokens[i].end,
                        lines[l].tokens[i].scope);
    syntax_lines_free(lines, count);
}

static uint64_t next(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005ull + 1442695040888963407ull;
    return *seed >> 33;
}

static void random_edits(void **state, const char *uri, const char *const *snippets, size_t nsnippets,
                         const char *start_text)
{
    fx *f = *state;
    buf text = BUF_INIT;
    for (int i = 0; i < 40; i++)
        buf_append_str(&text, start_text);
    opened a;
    open_doc(f, uri, text.data, text.len, &a);
    buf_free(&text);
    buf original = BUF_INIT;
    dump(f, a.id, &original);
    assert_true(original.len > 0);

    uint64_t seed = 12345;
    for (int burst = 0; burst < 60; burst++) {
        /* A burst of edits lands while a reparse may be running. */
        int edits = 1 + (int)(next(&seed) % 4);
        for (int e = 0; e < edits; e++) {
            document_info info;
            assert_int_equal(document_get_info(f->docs, a.id, &info, NULL), 0);
            size_t line = next(&seed) % info.line_count;
            buf l = BUF_INIT;
            assert_int_equal(document_get_text(f->docs, a.id,
                                               &(document_range){{line, 0}, {line + 1 < info.line_count ? line + 1 : line, 0}},
                                               ECP_ENCODING_UTF8, &l, NULL),
                             0);
            size_t col = l.len ? next(&seed) % l.len : 0;
            size_t del = next(&seed) % 4;
            if (col + del > l.len)
                del = l.len - col;
            buf_free(&l);
            const char *ins = snippets[next(&seed) % nsnippets];
            document_edit edit = {{{line, col}, {line, col + del}}, ins, strlen(ins)};
            /* A deletion reaching past the line's end joins it with the next. */
            if (document_apply_edits(f->docs, a.id, 0, &edit, 1, ECP_ENCODING_UTF8, 0, NULL, NULL) != 0) {
                edit.range.end = edit.range.start;
                assert_int_equal(document_apply_edits(f->docs, a.id, 0, &edit, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
            }
            /* Sometimes let the reparse start in between. */
            if (next(&seed) % 2)
                uv_run(&f->loop, UV_RUN_NOWAIT);
        }
        settle(f, a.id);
        if (burst % 6 != 5)
            continue;
        /* Broken code is recovered from differently by an incremental and a
         * fresh parse (tree-sitter promises no more), so the comparison is
         * made on valid text: every edit so far is undone, one reparse at a
         * time, and the result must match the full parse the document had
         * when it opened. Redone, the edits go on from where they were. */
        int undone = 0;
        while (document_undo(f->docs, a.id, 0, NULL, NULL) == 0) {
            undone++;
            if (undone % 3 == 0)
                settle(f, a.id);
        }
        settle(f, a.id);
        buf now = BUF_INIT;
        dump(f, a.id, &now);
        if (now.len != original.len || memcmp(now.data, original.data, now.len) != 0)
            fail_msg("after burst %d and %d undos the tokens differ from those of the first parse", burst, undone);
        buf_free(&now);
        while (document_redo(f->docs, a.id, 0, NULL, NULL) == 0)
            ;
        settle(f, a.id);
    }
    buf_free(&original);
}

static void test_random_edits_in_c(void **state)
{
    static const char *const snippets[] = {"{", "}", "/*", "*/", "\"", "int x;", "\n", "if (a) ", "#define X 1\n",
                                           "//", "", "é", "MAX_LEN", "(", ")", "'"};
    random_edits(state, "file:///tmp/syntax-random.c", snippets, sizeof snippets / sizeof snippets[0],
                 "#include <stdio.h>\n/* note */\nstatic int f(int a) {\n    if (a > 1) return puts(\"x\");\n"
                 "    return MAX_LEN;\n}\n");
}

static void test_random_edits_in_python(void **state)
{
    static const char *const snippets[] = {"def ", ":", "\n    ", "\"\"\"", "#", "None", "(", ")", "'", "\n", ""};
    random_edits(state, "file:///tmp/syntax-random.py", snippets, sizeof snippets / sizeof snippets[0],
                 "def f(a):\n    \"\"\"doc\"\"\"\n    return a + 1  # c\n\nclass A:\n    pass\n");
}

static void test_stale_tokens_are_shifted(void **state)
{
    fx *f = *state;
    opened a;
    open_doc(f, "file:///tmp/syntax-shift.c", "int a;\nint b;\n", 14, &a);
    document_edit edit = {{{0, 0}, {0, 0}}, "\n\n  ", 4};
    assert_int_equal(document_apply_edits(f->docs, a.id, 0, &edit, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_false(syntax_document_settled(f->syntax, a.id)); /* the reparse has not landed */
    syntax_line *lines;
    size_t count;
    assert_int_equal(syntax_document_tokens(f->syntax, a.id, 2, 2, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    assert_int_equal(count, 2);
    assert_true(lines[0].count >= 1);
    assert_string_equal(lines[0].tokens[0].scope, "type");
    assert_int_equal(lines[0].tokens[0].start, 2);
    assert_int_equal(lines[0].tokens[0].end, 5);
    assert_string_equal(lines[1].tokens[0].scope, "type");
    assert_int_equal(lines[1].tokens[0].start, 0);
    syntax_lines_free(lines, count);
    settle(f, a.id);
}

static void test_too_large_stays_plain(void **state)
{
    fx *f = *state;
    /* A 50 MB minified line: one identifier, which a parse would paint. */
    size_t n = (size_t)50 << 20;
    char *text = malloc(n);
    memset(text, 'a', n);
    opened a;
    open_doc(f, "file:///tmp/syntax-huge.c", text, n, &a);
    free(text);
    assert_true(logged(f, "larger than the 16 MiB"));
    syntax_line *lines;
    size_t count;
    assert_int_equal(syntax_document_tokens(f->syntax, a.id, 0, 1, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    assert_int_equal(count, 1);
    assert_int_equal(lines[0].count, 0);
    syntax_lines_free(lines, count);
}

static void write_text(const char *path, const char *text)
{
    FILE *out = fopen(path, "w");
    assert_non_null(out);
    fputs(text, out);
    fclose(out);
}

/* A grammar directory of its own in dir (a mkdtemp template): the C
 * grammar's query is c_query, python's is the real one. */
static void make_grammar_dir(char *dir, const char *c_query)
{
    char path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/tree-sitter-c", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/tree-sitter-c/queries", dir);
    assert_int_equal(mkdir(path, 0700), 0);
    snprintf(path, sizeof path, "%s/tree-sitter-c/queries/highlights.scm", dir);
    write_text(path, c_query);
    snprintf(path, sizeof path, "%s/tree-sitter-python", dir);
    assert_int_equal(symlink(ECPD_GRAMMAR_DIR "/tree-sitter-python", path), 0);
}

static void remove_dir(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

/* A C query that does not compile: C (and cpp, which starts from the C
 * patterns) stays plain text with a log line, python is highlighted as ever. */
static void test_broken_query_turns_off_one_language(void **state)
{
    fx *f = *state;
    char dir[] = "/tmp/ecpd-syntax-grammars-XXXXXX";
    make_grammar_dir(dir, "((identifier) @variable (#no-such-node))\n(((\n");
    syntax_service_free(f->syntax);
    f->syntax = syntax_service_new(f->pool, &f->log, f->docs, NULL, dir);
    assert_true(syntax_language_supported(f->syntax, "c")); /* not tried yet */
    opened c, py;
    open_doc(f, "file:///tmp/syntax-broken.c", "int x;\n", strlen("int x;\n"), &c);
    open_doc(f, "file:///tmp/syntax-fine.py", "def f():\n    pass\n", strlen("def f():\n    pass\n"), &py);
    assert_true(logged(f, "the c highlight query does not compile"));
    assert_false(syntax_language_supported(f->syntax, "c"));
    assert_true(syntax_language_supported(f->syntax, "python"));

    syntax_line *lines;
    size_t count;
    assert_int_equal(syntax_document_tokens(f->syntax, c.id, 0, 1, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    assert_int_equal(count, 1);
    assert_int_equal(lines[0].count, 0);
    syntax_lines_free(lines, count);
    assert_int_equal(syntax_document_tokens(f->syntax, py.id, 0, 1, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    assert_int_equal(count, 1);
    assert_true(lines[0].count >= 1);
    assert_string_equal(lines[0].tokens[0].scope, "keyword");
    syntax_lines_free(lines, count);
    remove_dir(dir);
}

/* The not- forms of the predicates, which no shipped query uses, on a query
 * of the test's own: each later pattern that holds paints over the earlier. */
static void test_negated_predicates(void **state)
{
    fx *f = *state;
    char dir[] = "/tmp/ecpd-syntax-grammars-XXXXXX";
    make_grammar_dir(dir, "(identifier) @variable\n"
                          "((identifier) @keyword (#not-eq? @keyword \"x\"))\n"
                          "((identifier) @string (#not-match? @string \"^[a-y]\"))\n"
                          "((identifier) @number (#not-any-of? @number \"x\" \"y\" \"zz\"))\n");
    syntax_service_free(f->syntax);
    f->syntax = syntax_service_new(f->pool, &f->log, f->docs, NULL, dir);
    static const char text[] = "x;\nzz;\nq;\n";
    opened c;
    open_doc(f, "file:///tmp/syntax-negated.c", text, strlen(text), &c);
    syntax_line *lines;
    size_t count;
    assert_int_equal(syntax_document_tokens(f->syntax, c.id, 0, 3, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    assert_int_equal(count, 3);
    static const char *const want[] = {"variable", "string", "number"};
    for (size_t l = 0; l < 3; l++) {
        assert_true(lines[l].count >= 1);
        assert_string_equal(lines[l].tokens[0].scope, want[l]);
    }
    syntax_lines_free(lines, count);
    remove_dir(dir);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Broken code nested 5,000 deep leaves thousands of nodes under the root;
 * the tokens of its first line are computed on the loop, so they must come
 * in bounded time (milliseconds; the limit leaves room for sanitizers). */
static void test_tokens_of_broken_code_are_quick(void **state)
{
    fx *f = *state;
    static const char unit[] = "int a = (";
    size_t depth = 5000, n = sizeof unit - 1;
    char *text = malloc(depth * n);
    for (size_t i = 0; i < depth; i++)
        memcpy(text + i * n, unit, n);
    opened a;
    open_doc(f, "file:///tmp/syntax-broken-nest.c", text, depth * n, &a);
    free(text);
    syntax_line *lines;
    size_t count;
    double t0 = now_s();
    assert_int_equal(syntax_document_tokens(f->syntax, a.id, 0, 1, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    double took = now_s() - t0;
    assert_int_equal(count, 1);
    assert_true(lines[0].count >= depth); /* every `int` at least */
    syntax_lines_free(lines, count);
    if (took > 0.25) /* 13 s when the root's children were walked with ts_node_next_sibling */
        fail_msg("the tokens of one line took %.3f s", took);
}

/* A minified line of 4 MB is highlighted in its first 16 KiB only: its
 * tokens come in bounded time, and the short lines around it keep theirs. */
/* ThreadSanitizer runs this code some ten times slower: a parse of the
 * 4 MiB line would pass the guarded parse's CPU budget there, and the
 * document would stay plain. A 512 KiB line is still far past the 16 KiB
 * a line is highlighted in, and still parsed under the guard. */
#if defined(__SANITIZE_THREAD__)
#define LONG_LINE_BYTES ((size_t)512 << 10)
#define LONG_LINE_SECONDS 5.0
#else
#define LONG_LINE_BYTES ((size_t)4 << 20)
#define LONG_LINE_SECONDS 0.5
#endif

static void test_long_line_is_cut(void **state)
{
    fx *f = *state;
    static const char before[] = "let c = 2;\n", after[] = "\nvar b = 1;\n";
    size_t n = LONG_LINE_BYTES, nb = sizeof before - 1, na = sizeof after - 1;
    char *text = malloc(nb + n + na);
    memcpy(text, before, nb);
    for (size_t i = 0; i < n; i += 8)
        memcpy(text + nb + i, "a=[1,2];", 8);
    memcpy(text + nb + n, after, na);
    opened a;
    open_doc(f, "file:///tmp/syntax-minified.js", text, nb + n + na, &a);
    free(text);
    syntax_line *lines;
    size_t count;
    double t0 = now_s();
    assert_int_equal(syntax_document_tokens(f->syntax, a.id, 0, 3, ECP_ENCODING_UTF16, &lines, &count, NULL), 0);
    double took = now_s() - t0;
    assert_int_equal(count, 3);
    if (lines[0].count == 0) {
        fflush(f->log.out);
        fail_msg("the document stayed plain: %s", f->log_text ? f->log_text : "(nothing logged)");
    }
    assert_string_equal(lines[0].tokens[0].scope, "keyword");
    assert_true(lines[1].count > 1000);
    assert_true(lines[1].tokens[lines[1].count - 1].end <= 16384);
    assert_true(lines[2].count >= 1);
    assert_string_equal(lines[2].tokens[0].scope, "keyword");
    syntax_lines_free(lines, count);
    if (took > LONG_LINE_SECONDS) /* 3 s when the whole line was highlighted */
        fail_msg("the tokens of a minified line took %.3f s", took);
}

/* ----- wide trees ----------------------------------------------------------------------------------- */

static char *repeat(const char *unit, size_t times, size_t *len)
{
    size_t n = strlen(unit);
    char *text = malloc(n * times + 1);
    for (size_t i = 0; i < times; i++)
        memcpy(text + i * n, unit, n);
    text[n * times] = '\0';
    *len = n * times;
    return text;
}

/* The most children any node of tree has, walked without recursion. */
static uint32_t widest_node(const TSTree *tree)
{
    TSTreeCursor walk = ts_tree_cursor_new(ts_tree_root_node(tree));
    uint32_t widest = 0;
    for (;;) {
        uint32_t n = ts_node_child_count(ts_tree_cursor_current_node(&walk));
        if (n > widest)
            widest = n;
        if (ts_tree_cursor_goto_first_child(&walk))
            continue;
        while (!ts_tree_cursor_goto_next_sibling(&walk)) {
            if (!ts_tree_cursor_goto_parent(&walk)) {
                ts_tree_cursor_delete(&walk);
                return widest;
            }
        }
    }
}

/* Every line's tokens; their total. */
static size_t highlight_all(const syntax_grammar *g, const TSTree *tree, const char *text, size_t len,
                            raw_line **out, line_index *lines)
{
    line_index_build(lines, text, len);
    *out = calloc(lines->count, sizeof **out);
    syntax_highlight_lines(g, tree, text, len, lines, 0, lines->count, *out);
    size_t total = 0;
    for (size_t l = 0; l < lines->count; l++)
        total += (*out)[l].count;
    return total;
}

static void free_lines(raw_line *raw, line_index *lines)
{
    for (size_t l = 0; l < lines->count; l++)
        free(raw[l].tokens);
    free(raw);
    line_index_free(lines);
}

/* Texts that give a node 65,536 children or more (65,535 unclosed `[`, a
 * run of 70,000 comments or `!`) parse, highlight, reparse after an edit
 * and are freed like any other: the runtime counts children in 32 bits (one
 * that counted in 16 freed the wrong pointer with such a tree). The ASan
 * tree checks the freeing. The run of comments parses without errors, so
 * its reparse must also give the tokens of a full parse. */
static void test_wide_trees_parse(void **state)
{
    (void)state;
    static const struct {
        const char *language, *unit;
        size_t times;
        uint32_t widest; /* at least this many children on one node */
        size_t tokens;   /* at least this many tokens */
    } cases[] = {{"json", "[", 65535, 65535, 0},
                 {"c", "// c\n", 70000, 70000, 70000},
                 {"javascript", "!", 70000, 65536, 1},
                 {"c", "int a = (", 20000, 65536, 5000}}; /* one line: its first 16 KiB */
    syntax_grammars *grammars = syntax_grammars_new(ECPD_GRAMMAR_DIR, NULL);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        syntax_grammar *g = syntax_grammars_find(grammars, cases[c].language);
        assert_true(syntax_grammar_ready(grammars, g));
        size_t len;
        char *text = repeat(cases[c].unit, cases[c].times, &len);
        const char *why = NULL;
        TSTree *tree = syntax_parse(g, NULL, text, len, NULL, &why);
        if (!tree)
            fail_msg("%s: %zu x '%s' was not parsed: %s", cases[c].language, cases[c].times, cases[c].unit, why);
        uint32_t widest = widest_node(tree);
        if (widest < cases[c].widest)
            fail_msg("%s: %zu x '%s': the widest node has %u children", cases[c].language, cases[c].times,
                     cases[c].unit, widest);
        line_index lines;
        raw_line *raw;
        size_t tokens = highlight_all(g, tree, text, len, &raw, &lines);
        if (tokens < cases[c].tokens)
            fail_msg("%s: %zu x '%s': %zu tokens", cases[c].language, cases[c].times, cases[c].unit, tokens);

        /* The first byte deleted, reparsed from the edited tree. */
        TSInputEdit edit = {0, 1, 0, {0, 0}, {0, 1}, {0, 0}};
        ts_tree_edit(tree, &edit);
        TSTree *reparsed = syntax_parse(g, tree, text + 1, len - 1, NULL, &why);
        assert_non_null(reparsed);
        if (!ts_node_has_error(ts_tree_root_node(reparsed))) {
            TSTree *full = syntax_parse(g, NULL, text + 1, len - 1, NULL, &why);
            line_index lines_a, lines_b;
            raw_line *ra, *rb;
            size_t ta = highlight_all(g, reparsed, text + 1, len - 1, &ra, &lines_a);
            size_t tb = highlight_all(g, full, text + 1, len - 1, &rb, &lines_b);
            assert_int_equal(ta, tb);
            for (size_t l = 0; l < lines_a.count; l++) {
                assert_int_equal(ra[l].count, rb[l].count);
                for (uint32_t t = 0; t < ra[l].count; t++)
                    if (ra[l].tokens[t].start != rb[l].tokens[t].start || ra[l].tokens[t].end != rb[l].tokens[t].end ||
                        ra[l].tokens[t].capture != rb[l].tokens[t].capture)
                        fail_msg("%s: line %zu token %u differs after a reparse", cases[c].language, l, t);
            }
            free_lines(ra, &lines_a);
            free_lines(rb, &lines_b);
            ts_tree_delete(full);
        }
        print_message("%s: %zu x '%s': widest node %u children, %zu tokens\n", cases[c].language, cases[c].times,
                      cases[c].unit, widest, tokens);
        free_lines(raw, &lines);
        ts_tree_delete(reparsed);
        ts_tree_delete(tree);
        free(text);
    }
    syntax_grammars_free(grammars);
}

/* ----- texts and sessions: the service's own jobs ------------------------------------------------ */

typedef struct outcome {
    int calls;
    int status;
    char message[512];
    char language[32];
    size_t lines;
    char line1[256];       /* line 1's tokens: "start-end:scope " each */
    char session_id[64];
    char document_id[64];
    uint64_t version;
    syntax_service *svc;
} outcome;

static void got_highlight(void *ctx, int status, const ecp_error *err, const syntax_highlight_result *r,
                          ecp_shared *formatted)
{
    assert_null(formatted);
    outcome *o = ctx;
    o->calls++;
    o->status = status;
    if (status < 0) {
        assert_null(r);
        snprintf(o->message, sizeof o->message, "%s", err ? err->message : "");
        return;
    }
    snprintf(o->language, sizeof o->language, "%s", r->language_id);
    o->lines = syntax_text_line_count(r->text);
    syntax_line line;
    syntax_highlight_line_tokens(r, 1, ECP_ENCODING_UTF16, &line);
    size_t at = 0;
    for (size_t i = 0; i < line.count && at < sizeof o->line1; i++)
        at += (size_t)snprintf(o->line1 + at, sizeof o->line1 - at, "%zu-%zu:%s ", line.tokens[i].start,
                               line.tokens[i].end, line.tokens[i].scope);
    free(line.tokens);
}

static void got_session(void *ctx, int status, const ecp_error *err, const syntax_session_info *info)
{
    outcome *o = ctx;
    o->calls++;
    o->status = status;
    if (status < 0) {
        assert_null(info);
        snprintf(o->message, sizeof o->message, "%s", err ? err->message : "");
        return;
    }
    snprintf(o->session_id, sizeof o->session_id, "%s", info->session_id);
    snprintf(o->document_id, sizeof o->document_id, "%s", info->document_id);
    o->version = info->version;
}

static void wait_outcome(fx *f, outcome *o)
{
    for (int i = 0; i < 100000 && !o->calls; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(o->calls, 1);
}

/* A text is copied when asked, highlighted off the loop, and handed back
 * once, on the loop; a language without a grammar is plain text. */
static void test_text_highlight(void **state)
{
    fx *f = *state;
    char text[] = "int x;\n/* c */ int y;\n";
    outcome o = {.svc = f->syntax};
    syntax_highlight_args args = {.language_id = "c", .content = text, .content_len = sizeof text - 1};
    ecp_job *job = syntax_highlight_start(f->syntax, &args, got_highlight, &o);
    assert_non_null(job);
    memset(text, 'z', sizeof text - 1); /* the service has its own copy */
    assert_int_equal(o.calls, 0);       /* never from inside the start */
    wait_outcome(f, &o);
    assert_int_equal(o.status, 0);
    assert_string_equal(o.language, "c");
    assert_int_equal(o.lines, 3);
    assert_string_equal(o.line1, "0-7:comment 8-11:type 12-13:variable 13-14:delimiter ");
    syntax_metrics m;
    syntax_metrics_get(f->syntax, &m);
    assert_int_equal(m.parse_count, 1);
    syntax_metrics_reset(f->syntax);
    syntax_metrics_get(f->syntax, &m);
    assert_int_equal(m.parse_count, 0);

    outcome plain = {.svc = f->syntax};
    syntax_highlight_args swift = {.language_id = "swift", .content = "x = 1\ny = 2", .content_len = 11};
    syntax_highlight_start(f->syntax, &swift, got_highlight, &plain);
    wait_outcome(f, &plain);
    assert_int_equal(plain.status, 0);
    assert_string_equal(plain.language, "plaintext");
    assert_int_equal(plain.lines, 2);
    assert_string_equal(plain.line1, "");
}

typedef struct formatted {
    pthread_t loop_thread;
    bool off_loop;
    int calls;
    char answer[256];
} formatted;

static void format_line0(void *fctx, const syntax_highlight_result *r, buf *out)
{
    formatted *f = fctx;
    f->off_loop = !pthread_equal(pthread_self(), f->loop_thread);
    syntax_line line;
    syntax_highlight_line_tokens(r, 0, ECP_ENCODING_UTF8, &line);
    buf_appendf(out, "%s %zu:", r->language_id, syntax_text_line_count(r->text));
    for (size_t i = 0; i < line.count; i++)
        buf_appendf(out, " %s", line.tokens[i].scope);
    free(line.tokens);
}

static void got_formatted(void *ctx, int status, const ecp_error *err, const syntax_highlight_result *r,
                          ecp_shared *answer)
{
    (void)err;
    formatted *f = ctx;
    f->calls++;
    assert_int_equal(status, 0);
    assert_non_null(r);
    assert_non_null(answer);
    snprintf(f->answer, sizeof f->answer, "%.*s", (int)ecp_shared_len(answer), ecp_shared_data(answer));
}

/* A format writes the answer on the pool; the callback gets its bytes. */
static void test_text_formatted_off_the_loop(void **state)
{
    fx *f = *state;
    formatted out = {.loop_thread = pthread_self()};
    syntax_highlight_args args = {.language_id = "c", .content = "int x; // c\n", .content_len = 12,
                                  .format = format_line0, .fctx = &out};
    syntax_highlight_start(f->syntax, &args, got_formatted, &out);
    for (int i = 0; i < 100000 && !out.calls; i++)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(out.calls, 1);
    assert_true(out.off_loop);
    assert_string_equal(out.answer, "c 2: type variable delimiter comment");
}

/* Cancelled through its job: the callback says so, and no parse counts. */
static void test_text_cancelled(void **state)
{
    fx *f = *state;
    outcome o = {.svc = f->syntax};
    syntax_highlight_args args = {.language_id = "c", .content = "int x;", .content_len = 6};
    ecp_job_cancel(syntax_highlight_start(f->syntax, &args, got_highlight, &o));
    wait_outcome(f, &o);
    assert_int_equal(o.status, ECP_ECANCELED);
    syntax_metrics m;
    syntax_metrics_get(f->syntax, &m);
    assert_int_equal(m.parse_count, 0);
}

/* A session is created, read, updated and disposed; an update of a
 * session disposed meanwhile, or of one never made, is ECP_ENOTFOUND. */
static void test_session_lifecycle(void **state)
{
    fx *f = *state;
    outcome made = {.svc = f->syntax};
    syntax_session_create_args create = {"doc-1", "c", "int x;\n// c\n", 12, NULL};
    syntax_session_create_start(f->syntax, &create, got_session, &made);
    wait_outcome(f, &made);
    assert_int_equal(made.status, 0);
    assert_int_equal(made.version, 1);
    assert_string_equal(made.document_id, "doc-1");
    assert_memory_equal(made.session_id, "syntax-", 7);

    syntax_session_info info;
    assert_int_equal(syntax_session_get(f->syntax, made.session_id, &info, NULL), 0);
    assert_string_equal(info.language_id, "c");
    const syntax_text *t = syntax_session_read(f->syntax, made.session_id);
    assert_int_equal(syntax_text_line_count(t), 3);
    syntax_line line;
    syntax_text_line_tokens(f->syntax, t, 1, ECP_ENCODING_UTF8, &line);
    assert_int_equal(line.count, 1);
    assert_string_equal(line.tokens[0].scope, "comment");
    free(line.tokens);
    syntax_metrics m;
    syntax_metrics_get(f->syntax, &m);
    assert_int_equal(m.cache_hits, 1);

    outcome updated = {.svc = f->syntax};
    syntax_session_update_args update = {made.session_id, "int y;", 6, NULL};
    syntax_session_update_start(f->syntax, &update, got_session, &updated);
    wait_outcome(f, &updated);
    assert_int_equal(updated.status, 0);
    assert_int_equal(updated.version, 2);
    assert_int_equal(syntax_text_line_count(syntax_session_read(f->syntax, made.session_id)), 1);

    outcome late = {.svc = f->syntax};
    syntax_session_update_start(f->syntax, &update, got_session, &late);
    syntax_session_dispose(f->syntax, made.session_id);
    wait_outcome(f, &late);
    assert_int_equal(late.status, ECP_ENOTFOUND);
    char want[128];
    snprintf(want, sizeof want, "Session not found: %s", made.session_id);
    assert_string_equal(late.message, want);
    ecp_error err = {0};
    assert_int_equal(syntax_session_get(f->syntax, made.session_id, &info, &err), ECP_ENOTFOUND);
    assert_null(syntax_session_read(f->syntax, made.session_id));

    outcome never = {.svc = f->syntax};
    syntax_session_update_args unknown = {"syntax-0-0", "x", 1, NULL};
    syntax_session_update_start(f->syntax, &unknown, got_session, &never);
    wait_outcome(f, &never);
    assert_int_equal(never.status, ECP_ENOTFOUND);
}

/* A service freed with a text in flight calls nobody back and leaks
 * nothing (the ASan tree checks the second). */
static void test_freed_with_text_in_flight(void **state)
{
    fx *f = *state;
    buf text = BUF_INIT;
    for (int i = 0; i < 20000; i++)
        buf_append_str(&text, "static int f(int a) { return a * 2; }\n");
    outcome o = {.svc = f->syntax};
    syntax_highlight_args args = {.language_id = "c", .content = text.data, .content_len = text.len};
    syntax_highlight_start(f->syntax, &args, got_highlight, &o);
    outcome s = {.svc = f->syntax};
    syntax_session_create_args create = {"doc", "c", text.data, text.len, NULL};
    syntax_session_create_start(f->syntax, &create, got_session, &s);
    buf_free(&text);
    syntax_service_free(f->syntax);
    f->syntax = NULL;
    for (int i = 0; i < 50; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(o.calls, 0);
    assert_int_equal(s.calls, 0);
}

/* Without a session service there is no theme to set. */
static void test_theme_without_session(void **state)
{
    fx *f = *state;
    ecp_error err = {0};
    assert_int_equal(syntax_theme_set(f->syntax, "one-light", &err), ECP_ENOTFOUND);
    assert_string_equal(err.message, "Theme not found: one-light");
    assert_string_equal(syntax_theme_current(f->syntax), "one-dark");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_random_edits_in_c, setup, teardown),
        cmocka_unit_test_setup_teardown(test_random_edits_in_python, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_tokens_are_shifted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_too_large_stays_plain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_broken_query_turns_off_one_language, setup, teardown),
        cmocka_unit_test_setup_teardown(test_negated_predicates, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tokens_of_broken_code_are_quick, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_line_is_cut, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_highlight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_formatted_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_text_cancelled, setup, teardown),
        cmocka_unit_test_setup_teardown(test_session_lifecycle, setup, teardown),
        cmocka_unit_test_setup_teardown(test_freed_with_text_in_flight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_theme_without_session, setup, teardown),
        cmocka_unit_test(test_wide_trees_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
