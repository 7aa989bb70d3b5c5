/* B7 and B8: highlighting a large C file.
 *
 * B7: a full highlight of a C file of at least 2 MB (the project's own C
 * sources, repeated) three ways in one process: through syntax/highlight on the
 * in-process client (JSON in and out included), through the service's own
 * highlighter (parse, predicates, precedence, tokens per line), and the
 * floor: bare ts_parser_parse_string plus a query cursor walking every
 * capture of the same query over the same bytes.
 *
 * B8: a 2 MB C document open in the document service and followed by the
 * syntax service; 1000 keystrokes at the caret in the middle of the visible
 * 60 lines, each followed by the tokens of those 60 lines through
 * syntax_document_tokens (the function document/viewport is to call). The
 * time counted runs from the edit's return (when its response would be
 * written) to the tokens; the reparse then lands before the next keystroke,
 * as it would at typing speed.
 *
 * Prints:
 *   B7 file_mb=<size> wire_ms=<median> service_ms=<median> floor_ms=<median>
 *      ratio_wire=<wire/floor> ratio_service=<service/floor> runs=<n>
 *   B8 doc_mb=<size> p50_us=<..> p99_us=<..> max_us=<..> edit_p99_us=<..>
 *      apply_p50_us=<..> apply_p99_us=<..> (the edit alone, followers included)
 *      settled_p50_us=<..> settled_p99_us=<..> keystrokes=<n>
 *
 * Usage: bench_syntax [runs [B7|B8]]  (default 5; one of them alone with the
 * second). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tree_sitter/api.h>
#include <uv.h>

#include "buf.h"
#include "document/interface.h"
#include "internal.h"
#include "json_writer.h"
#include "syntax/interface.h"
#include "test_client.h"

const TSLanguage *tree_sitter_c(void);

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    int i = (int)(p * (n - 1) + 0.5);
    return v[i];
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot read %s (run sh third_party/fetch-grammars.sh)\n", path);
        exit(1);
    }
    buf b = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        buf_append(&b, chunk, n);
    fclose(f);
    *len = b.len;
    return buf_detach(&b);
}

static TSQuery *c_query(void)
{
    size_t len;
    char *src = read_all(ECPD_GRAMMAR_DIR "/tree-sitter-c/queries/highlights.scm", &len);
    uint32_t off;
    TSQueryError e;
    TSQuery *q = ts_query_new(tree_sitter_c(), src, (uint32_t)len, &off, &e);
    free(src);
    return q;
}

static double floor_run(const TSQuery *q, const char *text, size_t len, size_t *captures)
{
    double t0 = now_ms();
    TSParser *p = ts_parser_new();
    ts_parser_set_language(p, tree_sitter_c());
    TSTree *tree = ts_parser_parse_string(p, NULL, text, (uint32_t)len);
    TSQueryCursor *c = ts_query_cursor_new();
    ts_query_cursor_exec(c, q, ts_tree_root_node(tree));
    TSQueryMatch m;
    uint32_t index;
    size_t n = 0;
    while (ts_query_cursor_next_capture(c, &m, &index))
        n++;
    ts_query_cursor_delete(c);
    ts_tree_delete(tree);
    ts_parser_delete(p);
    *captures = n;
    return now_ms() - t0;
}

static void b7(int runs, const char *text, size_t len)
{
    TSQuery *q = c_query();
    syntax_grammars *grammars = syntax_grammars_new(ECPD_GRAMMAR_DIR, NULL);
    syntax_grammar *g = syntax_grammars_find(grammars, "c");
    syntax_grammar_ready(grammars, g);

    buf params = BUF_INIT;
    buf_append_str(&params, "{\"languageId\":\"c\",\"content\":\"");
    json_escape_into(&params, text, len);
    buf_append_str(&params, "\"}");
    test_server *s = test_server_new(NULL);
    test_client *c = test_client_connect(s);

    double *wire = calloc((size_t)runs, sizeof *wire), *svc = calloc((size_t)runs, sizeof *svc),
           *flo = calloc((size_t)runs, sizeof *flo);
    size_t captures = 0, tokens = 0;
    for (int r = 0; r < runs; r++) {
        flo[r] = floor_run(q, text, len, &captures);

        double t0 = now_ms();
        char *copy = xmalloc(len + 1);
        memcpy(copy, text, len);
        syntax_text *t = syntax_text_build(grammars, g, copy, len);
        svc[r] = now_ms() - t0;
        tokens = 0;
        for (size_t i = 0; i < t->lines.count; i++)
            tokens += t->raw ? t->raw[i].count : 0;
        syntax_text_free(t);

        char *out = NULL;
        t0 = now_ms();
        fprintf(stderr, "B7 run %d: floor %.1f ms, service %.1f ms\n", r, flo[r], svc[r]);
        int64_t id = test_client_send(c, "syntax/highlight", params.data);
        if (test_client_wait_response(c, id, 300000, &out) != 0) {
            fprintf(stderr, "syntax/highlight failed: %.200s\n", out ? out : "(timeout)");
            exit(1);
        }
        wire[r] = now_ms() - t0;
        free(out);
    }
    double w = pct(wire, runs, 0.5), sv = pct(svc, runs, 0.5), fl = pct(flo, runs, 0.5);
    printf("B7 file_mb=%.2f wire_ms=%.1f service_ms=%.1f floor_ms=%.1f ratio_wire=%.2f ratio_service=%.2f "
           "captures=%zu tokens=%zu runs=%d\n",
           (double)len / 1e6, w, sv, fl, w / fl, sv / fl, captures, tokens, runs);
    fflush(stdout);
    free(wire);
    free(svc);
    free(flo);
    buf_free(&params);
    test_server_free(s);
    syntax_grammars_free(grammars);
    ts_query_delete(q);
}

typedef struct opened {
    bool done;
    char id[64];
} opened;

static void on_open(void *ctx, int status, const ecp_error *err, const char *document_id, bool already_open)
{
    opened *o = ctx;
    if (status) {
        fprintf(stderr, "open failed: %s\n", err ? err->message : "?");
        exit(1);
    }
    snprintf(o->id, sizeof o->id, "%s", document_id);
    o->done = true;
}

static void b8(const char *text, size_t len)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    ecp_pool *pool = ecp_pool_new(&loop, NULL);
    document_service *docs = document_service_new(pool, NULL);
    syntax_service *syntax = syntax_service_new(pool, NULL, docs, NULL, ECPD_GRAMMAR_DIR);
    opened o = {0};
    document_open_options opts = {"file:///tmp/ecpd-b8.c", text, len, NULL, false};
    document_open(docs, &opts, on_open, &o);
    while (!o.done || !syntax_document_settled(syntax, o.id))
        uv_run(&loop, UV_RUN_ONCE);

    document_info info;
    document_get_info(docs, o.id, &info, NULL);
    size_t top = info.line_count / 2, caret_line = top + 30, col = 0;
    for (;; caret_line++) {
        buf line = BUF_INIT;
        document_get_text(docs, o.id, &(document_range){{caret_line, 0}, {caret_line + 1, 0}}, ECP_ENCODING_UTF16,
                          &line, NULL);
        size_t i = 0;
        while (i < line.len && (line.data[i] == ' ' || line.data[i] == '\t'))
            i++;
        bool word = i + 1 < line.len && ((line.data[i] >= 'a' && line.data[i] <= 'z') || line.data[i] == '_');
        buf_free(&line);
        if (word) {
            col = i + 1;
            break;
        }
    }
    enum { KEYS = 1000 };
    double *lat = calloc(KEYS, sizeof *lat), *edit = calloc(KEYS, sizeof *edit), *settled = calloc(KEYS, sizeof *settled),
           *apply = calloc(KEYS, sizeof *apply);
    for (int k = 0; k < KEYS; k++) {
        /* Typing then erasing a letter inside the line's first word keeps the
         * code valid, as most keystrokes do. */
        document_edit e = k % 2 ? (document_edit){{{caret_line, col}, {caret_line, col + 1}}, "", 0}
                                : (document_edit){{{caret_line, col}, {caret_line, col}}, "x", 1};
        double t0 = now_ms();
        if (document_apply_edits(docs, o.id, 0, &e, 1, ECP_ENCODING_UTF16, 0, NULL, NULL) != 0) {
            fprintf(stderr, "edit failed\n");
            exit(1);
        }
        double t1 = now_ms();
        syntax_line *lines;
        size_t count;
        syntax_document_tokens(syntax, o.id, top, 60, ECP_ENCODING_UTF16, &lines, &count, NULL);
        double t2 = now_ms();
        syntax_lines_free(lines, count);
        lat[k] = (t2 - t1) * 1000.0;
        apply[k] = (t1 - t0) * 1000.0;
        edit[k] = (t2 - t0) * 1000.0;
        while (!syntax_document_settled(syntax, o.id))
            uv_run(&loop, UV_RUN_ONCE);
        /* The same 60 lines once the reparse has landed: what the query costs
         * with no parse competing for the processor. */
        t0 = now_ms();
        syntax_document_tokens(syntax, o.id, top, 60, ECP_ENCODING_UTF16, &lines, &count, NULL);
        settled[k] = (now_ms() - t0) * 1000.0;
        syntax_lines_free(lines, count);
    }
    double p50 = pct(lat, KEYS, 0.5), p99 = pct(lat, KEYS, 0.99), mx = pct(lat, KEYS, 1.0);
    double ep99 = pct(edit, KEYS, 0.99), sp50 = pct(settled, KEYS, 0.5), sp99 = pct(settled, KEYS, 0.99);
    double ap50 = pct(apply, KEYS, 0.5), ap99 = pct(apply, KEYS, 0.99);
    printf("B8 doc_mb=%.2f p50_us=%.0f p99_us=%.0f max_us=%.0f edit_p99_us=%.0f apply_p50_us=%.0f apply_p99_us=%.0f "
           "settled_p50_us=%.0f settled_p99_us=%.0f keystrokes=%d\n",
           (double)len / 1e6, p50, p99, mx, ep99, ap50, ap99, sp50, sp99, KEYS);
    free(apply);
    free(settled);
    free(lat);
    free(edit);
    syntax_service_free(syntax);
    document_service_free(docs);
    ecp_pool_free(pool);
    for (int i = 0; i < 1000 && uv_run(&loop, UV_RUN_NOWAIT); i++)
        ;
    uv_loop_close(&loop);
}

/* About 2.5 MB of ordinary C: the project's own sources, repeated. (A
 * grammar's generated parser.c is one giant table initialiser on which the
 * 0.20 query engine takes minutes, floor and service alike: it measures the
 * engine, not highlighting.) */
static char *c_corpus(size_t *len)
{
    static const char *const files[] = {
        "core/json.c", "core/jsonrpc.c", "core/job.c", "core/utf.c", "core/uri.c", "core/buf.c",
        "services/document/local.c", "services/document/piece_tree.c", "services/document/edit.c",
        "services/document/adapter.c", "services/file/grep.c", "services/file/walk.c", "services/git/read.c",
        "services/session/settings.c", "server/router.c", "server/connection.c",
    };
    buf b = BUF_INIT;
    while (b.len < (5u << 19)) {
        for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
            size_t n;
            char *t;
            char path[512];
            snprintf(path, sizeof path, "%s/%s", ECPD_SOURCE_DIR, files[i]);
            t = read_all(path, &n);
            buf_append(&b, t, n);
            free(t);
        }
    }
    *len = b.len;
    return buf_detach(&b);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    if (runs < 1)
        runs = 1;
    size_t len;
    char *text = c_corpus(&len);
    if (argc <= 2 || strcmp(argv[2], "B8") != 0)
        b7(runs, text, len);
    /* B8: the first 2 MB, cut at a line end. */
    size_t cut = len < (2u << 20) ? len : (2u << 20);
    while (cut < len && text[cut - 1] != '\n')
        cut++;
    if (argc <= 2 || strcmp(argv[2], "B7") != 0)
        b8(text, cut);
    free(text);
    return 0;
}
