/* highlight: a tree and its text in, tokens per line out.
 *
 * The runtime reports predicates without applying them, so a match is
 * kept only when its #eq?/#match?/#any-of? (and not- forms) hold, with PCRE2
 * for the regexes. The captures that survive are painted over the range in
 * order of start, then outer before inner, then pattern index: an inner node
 * paints over the node around it, and on one node the last pattern wins (the
 * rule of the ≥ 0.21 queries we pin). Runs of one capture become tokens;
 * runs of whitespace alone are dropped.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "utf.h"

/* ----- line index ------------------------------------------------------------------------------ */

void line_index_build(line_index *out, const char *text, size_t len)
{
    size_t cap = 64, n = 0;
    size_t *starts = xmalloc(cap * sizeof *starts);
    starts[n++] = 0;
    const char *p = text, *end = text + len;
    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        p++;
        if (n + 1 >= cap) {
            cap *= 2;
            starts = xrealloc(starts, cap * sizeof *starts);
        }
        starts[n++] = (size_t)(p - text);
    }
    starts[n] = len + 1;
    out->starts = starts;
    out->count = n;
}

void line_index_free(line_index *self)
{
    free(self->starts);
    self->starts = NULL;
    self->count = 0;
}

static size_t line_of(const line_index *self, size_t offset);

size_t line_index_line_of(const line_index *self, size_t offset) { return line_of(self, offset); }

/* The line holding byte offset (offset <= len). */
static size_t line_of(const line_index *self, size_t offset)
{
    size_t lo = 0, hi = self->count; /* starts[lo] <= offset < starts[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (self->starts[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

void line_index_replace(line_index *self, const char *new_text, size_t new_len, size_t offset, size_t deleted,
                        size_t inserted)
{
    size_t first = line_of(self, offset); /* the line the change starts in keeps its start */
    size_t old_end = offset + deleted;
    size_t after = first + 1; /* first line starting after the deleted range */
    while (after < self->count && self->starts[after] <= old_end)
        after++;
    size_t added = 0;
    for (const char *p = new_text + offset, *e = new_text + offset + inserted;
         p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        added++;
    size_t removed = after - first - 1;
    size_t tail = self->count + 1 - after; /* including the sentinel */
    size_t count = self->count - removed + added;
    if (added > removed)
        self->starts = xrealloc(self->starts, (count + 1) * sizeof *self->starts);
    memmove(&self->starts[first + 1 + added], &self->starts[after], tail * sizeof *self->starts);
    size_t k = first + 1;
    for (const char *p = new_text + offset, *e = new_text + offset + inserted;
         p < e && (p = memchr(p, '\n', (size_t)(e - p))) != NULL; p++)
        self->starts[k++] = (size_t)(p + 1 - new_text);
    for (size_t i = first + 1 + added; i <= count; i++)
        self->starts[i] = self->starts[i] - deleted + inserted;
    self->count = count;
    self->starts[count] = new_len + 1;
}

/* ----- predicates ------------------------------------------------------------------------------ */

static bool capture_text(const TSQueryMatch *m, uint32_t capture, const char *text, size_t len, const char **s,
                         size_t *n)
{
    for (uint16_t i = 0; i < m->capture_count; i++)
        if (m->captures[i].index == capture) {
            size_t a = ts_node_start_byte(m->captures[i].node), b = ts_node_end_byte(m->captures[i].node);
            if (b > len)
                b = len;
            if (a > b)
                a = b;
            *s = text + a;
            *n = b - a;
            return true;
        }
    return false;
}

static bool predicates_hold(const syntax_grammar *g, const TSQueryMatch *m, const char *text, size_t len,
                            pcre2_match_data *md)
{
    const pattern_predicates *pp = &g->predicates[m->pattern_index];
    for (size_t i = 0; i < pp->count; i++) {
        const predicate *pr = &pp->items[i];
        const char *s;
        size_t n;
        if (!capture_text(m, pr->capture, text, len, &s, &n))
            continue; /* a quantified capture that matched nothing: nothing to test */
        bool ok = false;
        switch (pr->kind) {
        case PRED_EQ_STRING:
            ok = n == pr->text_len && memcmp(s, pr->text, n) == 0;
            break;
        case PRED_EQ_CAPTURE: {
            const char *s2;
            size_t n2;
            ok = capture_text(m, pr->other_capture, text, len, &s2, &n2) && n == n2 && memcmp(s, s2, n) == 0;
            break;
        }
        case PRED_MATCH:
            ok = pcre2_match(pr->regex, (PCRE2_SPTR)s, n, 0, 0, md, NULL) >= 0;
            break;
        case PRED_ANY_OF:
            for (size_t k = 0; k < pr->choice_count && !ok; k++)
                ok = n == pr->choice_lens[k] && memcmp(s, pr->choices[k], n) == 0;
            break;
        }
        if (ok == pr->negated)
            return false;
    }
    return true;
}

/* ----- painting --------------------------------------------------------------------------------- */

typedef struct span {
    uint32_t start, end;
    uint32_t pattern;
    uint32_t capture;
} span;

static int span_order(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* outer first: the inner one paints over it */
    if (x->pattern != y->pattern)
        return x->pattern < y->pattern ? -1 : 1; /* the last pattern paints last */
    return 0;
}

static bool all_space(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\f' && s[i] != '\v')
            return false;
    return true;
}

void syntax_highlight_lines(const syntax_grammar *g, const TSTree *tree, const char *text, size_t len,
                            const line_index *lines, size_t first, size_t count, raw_line *out)
{
    memset(out, 0, count * sizeof *out);
    if (first >= lines->count || count == 0)
        return;
    if (first + count > lines->count)
        count = lines->count - first;
    /* Long lines among several: each long line on its own, cut at
     * SYNTAX_LINE_BYTES, and the runs of short lines between them together,
     * so that no query covers a long line whole. */
    if (count > 1) {
        bool any_long = false;
        for (size_t l = first; l < first + count && !any_long; l++)
            any_long = lines->starts[l + 1] - 1 - lines->starts[l] > SYNTAX_LINE_BYTES;
        if (any_long) {
            size_t run = first; /* the first short line not highlighted yet */
            for (size_t l = first; l <= first + count; l++) {
                bool is_long = l < first + count && lines->starts[l + 1] - 1 - lines->starts[l] > SYNTAX_LINE_BYTES;
                if (!is_long && l < first + count)
                    continue;
                if (l > run)
                    syntax_highlight_lines(g, tree, text, len, lines, run, l - run, &out[run - first]);
                if (is_long)
                    syntax_highlight_lines(g, tree, text, len, lines, l, 1, &out[l - first]);
                run = l + 1;
            }
            return;
        }
    }
    size_t from = lines->starts[first];
    size_t to = lines->starts[first + count] - 1; /* the end of the last line */
    if (to > len)
        to = len;
    if (count == 1 && to - from > SYNTAX_LINE_BYTES) {
        to = from + SYNTAX_LINE_BYTES;
        while (to > from && ((unsigned char)text[to] & 0xC0) == 0x80)
            to--; /* not inside a character */
    }
    if (from >= to)
        return;

    span *spans = NULL;
    size_t n = 0, cap = 0;
    TSQueryCursor *cursor = ts_query_cursor_new();
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    /* The query cursor steps over every child of the root before the
     * range, which costs milliseconds in a large file: the query runs on the
     * root's children that meet the range instead (highlight patterns never
     * capture the root itself). A root with few children is queried whole.
     * The children are walked with a tree cursor: ts_node_next_sibling finds
     * its parent again from the root each time, which makes a root with many
     * children (a long run of broken code) quadratic. */
    TSNode root = ts_tree_root_node(tree);
    TSNode node = root;
    TSTreeCursor walk = ts_tree_cursor_new(root);
    bool by_child = ts_node_child_count(root) > 64 && ts_tree_cursor_goto_first_child_for_byte(&walk, (uint32_t)from) >= 0;
    if (by_child)
        node = ts_tree_cursor_current_node(&walk);
    for (;;) {
        ts_query_cursor_set_byte_range(cursor, (uint32_t)from, (uint32_t)to);
        ts_query_cursor_exec(cursor, g->query, node);
        TSQueryMatch m;
        while (ts_query_cursor_next_match(cursor, &m)) {
            if (!predicates_hold(g, &m, text, len, md))
                continue;
            for (uint16_t i = 0; i < m.capture_count; i++) {
                uint32_t c = m.captures[i].index;
                if (g->capture_hidden[c])
                    continue;
                uint32_t a = ts_node_start_byte(m.captures[i].node), b = ts_node_end_byte(m.captures[i].node);
                if (a < from)
                    a = (uint32_t)from;
                if (b > to)
                    b = (uint32_t)to;
                if (a >= b)
                    continue;
                if (n == cap) {
                    cap = cap ? cap * 2 : 256;
                    spans = xrealloc(spans, cap * sizeof *spans);
                }
                spans[n++] = (span){a, b, m.pattern_index, c};
            }
        }
        if (!by_child || !ts_tree_cursor_goto_next_sibling(&walk))
            break;
        node = ts_tree_cursor_current_node(&walk);
        if (ts_node_start_byte(node) >= to)
            break;
    }
    ts_tree_cursor_delete(&walk);
    pcre2_match_data_free(md);
    ts_query_cursor_delete(cursor);
    if (n == 0) {
        free(spans);
        return;
    }
    qsort(spans, n, sizeof *spans, span_order);

    /* 0: nothing; else capture + 1. */
    uint16_t *paint = xcalloc(to - from, sizeof *paint);
    for (size_t i = 0; i < n; i++)
        for (uint32_t b = spans[i].start; b < spans[i].end; b++)
            paint[b - from] = (uint16_t)(spans[i].capture + 1);
    free(spans);

    for (size_t l = 0; l < count; l++) {
        size_t ls = lines->starts[first + l], le = lines->starts[first + l + 1] - 1;
        if (le > to)
            le = to;
        raw_line *line = &out[l];
        size_t cap_t = 0;
        size_t b = ls;
        while (b < le) {
            uint16_t v = paint[b - from];
            size_t e = b + 1;
            while (e < le && paint[e - from] == v)
                e++;
            if (v && !all_space(text + b, e - b)) {
                if (line->count == cap_t) {
                    cap_t = cap_t ? cap_t * 2 : 8;
                    line->tokens = xrealloc(line->tokens, cap_t * sizeof *line->tokens);
                }
                line->tokens[line->count++] = (raw_token){(uint32_t)(b - ls), (uint32_t)(e - ls), v - 1u, g};
            }
            b = e;
        }
    }
    free(paint);
}

void syntax_tokens_to_columns(const char *line, size_t len, const raw_token *in, size_t count,
                              ecp_position_encoding enc, size_t *starts, size_t *ends)
{
    size_t byte = 0, col = 0;
    for (size_t i = 0; i < count; i++) {
        size_t s = in[i].start < len ? in[i].start : len, e = in[i].end < len ? in[i].end : len;
        if (enc == ECP_ENCODING_UTF8) {
            starts[i] = s;
            ends[i] = e;
            continue;
        }
        if (s >= byte) {
            col += utf_column_count(line + byte, s - byte, enc);
            byte = s;
        }
        starts[i] = col;
        if (e >= byte) {
            col += utf_column_count(line + byte, e - byte, enc);
            byte = e;
        }
        ends[i] = col;
    }
}

/* ----- parsing ----------------------------------------------------------------------------------- */

typedef struct text_input {
    const char *text;
    uint32_t len;
} text_input;

static const char *read_text(void *payload, uint32_t byte, TSPoint position, uint32_t *bytes_read)
{
    const text_input *in = payload;
    if (byte >= in->len) {
        *bytes_read = 0;
        return "";
    }
    *bytes_read = in->len - byte;
    return in->text + byte;
}

/* The runtime asks every few hundred operations whether to go on. */
static bool parse_overdue(TSParseState *state)
{
    const uint64_t *deadline_ns = state->payload;
    return uv_hrtime() > *deadline_ns;
}

TSTree *syntax_parse(const syntax_grammar *g, const TSTree *old, const char *text, size_t len,
                     const TSRange *range, const char **why)
{
    TSParser *parser = ts_parser_new();
    ts_parser_set_language(parser, g->language());
    if (range)
        ts_parser_set_included_ranges(parser, range, 1);
    text_input in = {text, (uint32_t)len};
    uint64_t deadline_ns = uv_hrtime() + SYNTAX_PARSE_TIMEOUT_US * 1000u;
    TSTree *tree = ts_parser_parse_with_options(parser, old, (TSInput){&in, read_text, TSInputEncodingUTF8, NULL},
                                                (TSParseOptions){&deadline_ns, parse_overdue});
    if (!tree && why)
        *why = "its parse took longer than the 10 s allowed";
    ts_parser_delete(parser);
    return tree;
}

/* ----- injections ------------------------------------------------------------------------------ */

/* How deep layers nest: markdown, an html block in it, a <script> in that. */
#define LAYER_DEPTH 3
/* At most this many layers a document: a markdown file has one inline layer
 * a paragraph. */
#define LAYER_MAX 20000

/* The layer of the previous parse that starts at start with grammar g, if any. */
static const syntax_layer *previous_layer(const syntax_layers *previous, const syntax_grammar *g, uint32_t start)
{
    if (!previous || !previous->count)
        return NULL;
    size_t lo = 0, hi = previous->count; /* the first layer starting at or after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (previous->items[mid].start < start)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < previous->count && previous->items[i].start == start; i++)
        if (previous->items[i].grammar == g)
            return &previous->items[i];
    return NULL;
}

static void add_layers(syntax_grammars *grammars, const syntax_grammar *host, TSNode root, const char *text,
                       size_t len, const syntax_layers *previous, int depth, syntax_layers *out, size_t *cap)
{
    if (!host->injections || depth > LAYER_DEPTH)
        return;
    TSQueryCursor *cursor = ts_query_cursor_new();
    ts_query_cursor_exec(cursor, host->injections, root);
    TSQueryMatch m;
    while (ts_query_cursor_next_match(cursor, &m) && out->count < LAYER_MAX) {
        const char *name = host->injection_language[m.pattern_index];
        size_t name_len = name ? strlen(name) : 0;
        TSNode content;
        memset(&content, 0, sizeof content);
        bool have_content = false;
        for (uint16_t i = 0; i < m.capture_count; i++) {
            if (m.captures[i].index == host->injection_language_capture) {
                uint32_t a = ts_node_start_byte(m.captures[i].node), b = ts_node_end_byte(m.captures[i].node);
                if (b <= len && a < b) {
                    name = text + a;
                    name_len = b - a;
                }
            } else if (m.captures[i].index == host->injection_content_capture) {
                content = m.captures[i].node;
                have_content = true;
            }
        }
        if (!name || !have_content)
            continue;
        char lang[32];
        if (name_len >= sizeof lang)
            continue;
        memcpy(lang, name, name_len);
        lang[name_len] = '\0';
        syntax_grammar *g = syntax_grammars_find_injected(grammars, lang);
        if (!g || !syntax_grammar_ready(grammars, g))
            continue;
        TSRange range = {ts_node_start_point(content), ts_node_end_point(content), ts_node_start_byte(content),
                         ts_node_end_byte(content)};
        if (range.end_byte > len || range.start_byte >= range.end_byte)
            continue;
        /* A layer no edit touched is the same text at the same place: its
         * tree is kept. One that was edited is parsed again whole: a layer
         * is small, and a reparse of a tree whose included range changed
         * does not always give the tree a full parse gives (markdown's
         * inline grammar under the 0.20 runtime, found by the fuzz target). */
        const syntax_layer *before = previous_layer(previous, g, range.start_byte);
        TSTree *tree;
        if (before && !before->edited && before->end == range.end_byte)
            tree = ts_tree_copy(before->tree);
        else
            tree = syntax_parse(g, NULL, text, len, &range, NULL);
        if (!tree)
            continue;
        if (out->count == *cap) {
            *cap = *cap ? *cap * 2 : 8;
            out->items = xrealloc(out->items, *cap * sizeof *out->items);
        }
        out->items[out->count++] = (syntax_layer){g, tree, range.start_byte, range.end_byte, false};
        add_layers(grammars, g, ts_tree_root_node(tree), text, len, previous, depth + 1, out, cap);
    }
    ts_query_cursor_delete(cursor);
}

static int layer_order(const void *a, const void *b)
{
    const syntax_layer *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* outer first: the inner one paints over it */
}

void syntax_layers_build(syntax_grammars *grammars, const syntax_grammar *host, const TSTree *tree, const char *text,
                         size_t len, const syntax_layers *previous, syntax_layers *out)
{
    out->items = NULL;
    out->count = 0;
    size_t cap = 0;
    add_layers(grammars, host, ts_tree_root_node(tree), text, len, previous, 1, out, &cap);
    if (out->count > 1)
        qsort(out->items, out->count, sizeof *out->items, layer_order);
}

void syntax_layers_copy(const syntax_layers *from, syntax_layers *to)
{
    to->count = from->count;
    to->items = from->count ? xmalloc(from->count * sizeof *to->items) : NULL;
    for (size_t i = 0; i < from->count; i++) {
        to->items[i] = from->items[i];
        to->items[i].tree = ts_tree_copy(from->items[i].tree);
    }
}

void syntax_layers_free(syntax_layers *self)
{
    for (size_t i = 0; i < self->count; i++)
        ts_tree_delete(self->items[i].tree);
    free(self->items);
    self->items = NULL;
    self->count = 0;
}

static uint32_t shift_byte(uint32_t at, const TSInputEdit *e, bool is_end)
{
    if (at < e->start_byte || (at == e->start_byte && !is_end))
        return at;
    if (at >= e->old_end_byte)
        return at - e->old_end_byte + e->new_end_byte;
    return is_end ? e->new_end_byte : e->start_byte; /* inside the replaced bytes */
}

void syntax_layers_edit(syntax_layers *self, const TSInputEdit *edit)
{
    for (size_t i = 0; i < self->count; i++) {
        syntax_layer *l = &self->items[i];
        ts_tree_edit(l->tree, edit);
        /* Typing just after a layer's last byte may extend it: edited too. */
        if (edit->start_byte <= l->end && edit->old_end_byte >= l->start)
            l->edited = true;
        l->start = shift_byte(l->start, edit, false);
        l->end = shift_byte(l->end, edit, true);
    }
}

static int token_order(const void *a, const void *b)
{
    const raw_token *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* Removes the bytes [a, b) (line-relative) from line's tokens. */
static void cut_tokens(raw_line *line, uint32_t a, uint32_t b)
{
    size_t n = 0;
    raw_token *extra = NULL;
    size_t extra_count = 0;
    for (size_t i = 0; i < line->count; i++) {
        raw_token t = line->tokens[i];
        if (t.end <= a || t.start >= b) {
            line->tokens[n++] = t;
            continue;
        }
        if (t.start < a) {
            raw_token left = t;
            left.end = a;
            line->tokens[n++] = left;
        }
        if (t.end > b) {
            raw_token right = t;
            right.start = b;
            extra = xrealloc(extra, (extra_count + 1) * sizeof *extra);
            extra[extra_count++] = right;
        }
    }
    line->count = (uint32_t)n;
    if (extra_count) {
        line->tokens = xrealloc(line->tokens, (n + extra_count) * sizeof *line->tokens);
        memcpy(line->tokens + n, extra, extra_count * sizeof *extra);
        line->count += (uint32_t)extra_count;
    }
    free(extra);
}

void syntax_highlight_layered(const syntax_grammar *g, const TSTree *tree, const syntax_layers *layers,
                              const char *text, size_t len, const line_index *lines, size_t first, size_t count,
                              raw_line *out)
{
    syntax_highlight_lines(g, tree, text, len, lines, first, count, out);
    if (!layers || !layers->count || first >= lines->count)
        return;
    if (first + count > lines->count)
        count = lines->count - first;
    size_t from = lines->starts[first], to = lines->starts[first + count] - 1;
    raw_line *inner = xcalloc(count, sizeof *inner);
    for (size_t i = 0; i < layers->count; i++) {
        const syntax_layer *l = &layers->items[i];
        if (l->end <= from || l->start >= to || l->end > len)
            continue;
        size_t lf = first, lc = count; /* only the lines the layer meets */
        while (lf < first + lc - 1 && lines->starts[lf + 1] <= l->start) {
            lf++;
            lc--;
        }
        while (lc > 1 && lines->starts[lf + lc - 1] >= l->end)
            lc--;
        syntax_highlight_lines(l->grammar, l->tree, text, len, lines, lf, lc, inner + (lf - first));
        for (size_t k = lf; k < lf + lc; k++) {
            raw_line *dst = &out[k - first], *src = &inner[k - first];
            size_t ls = lines->starts[k], le = lines->starts[k + 1] - 1;
            uint32_t a = (uint32_t)(l->start > ls ? l->start - ls : 0);
            uint32_t b = (uint32_t)((l->end < le ? l->end : le) - ls);
            /* The layer paints over what lies under it where it has tokens;
             * elsewhere the host's tokens stay (a heading's title around
             * the plain words of its inline layer). */
            size_t keep = 0;
            for (size_t t = 0; t < src->count; t++)
                if (src->tokens[t].start >= a && src->tokens[t].end <= b) {
                    cut_tokens(dst, src->tokens[t].start, src->tokens[t].end);
                    src->tokens[keep++] = src->tokens[t];
                }
            if (keep) {
                dst->tokens = xrealloc(dst->tokens, (dst->count + keep) * sizeof *dst->tokens);
                memcpy(dst->tokens + dst->count, src->tokens, keep * sizeof *src->tokens);
                dst->count += (uint32_t)keep;
                qsort(dst->tokens, dst->count, sizeof *dst->tokens, token_order);
                /* What is left of a host token between the layer's may be
                 * only the spaces between them: not a token. */
                uint32_t kept = 0;
                for (uint32_t t = 0; t < dst->count; t++)
                    if (!all_space(text + ls + dst->tokens[t].start, dst->tokens[t].end - dst->tokens[t].start))
                        dst->tokens[kept++] = dst->tokens[t];
                dst->count = kept;
            }
            free(src->tokens);
            src->tokens = NULL;
            src->count = 0;
        }
    }
    free(inner);
}
