/* structure: folds, selection ranges, indent and symbols from a document's tree.
 *
 * Everything here reads the loop's latest tree of a followed document with
 * the plain node API (nodes, tree cursors, queries), walks it with a cursor
 * rather than recursion, and stops at a bound: a document can be 16 MiB and
 * its tree tens of thousands of levels deep.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "document/interface.h"

/* ----- positions ------------------------------------------------------------------------------ */

static syntax_position position_of(const syntax_doc_view *v, size_t byte, ecp_position_encoding enc)
{
    if (byte > v->len)
        byte = v->len;
    size_t line = line_index_line_of(v->lines, byte);
    size_t start = v->lines->starts[line], end = v->lines->starts[line + 1] - 1;
    if (byte > end)
        byte = end;
    return (syntax_position){line, utf_byte_to_column(v->text + start, end - start, byte - start, enc)};
}

static syntax_range range_of(const syntax_doc_view *v, size_t start, size_t end, ecp_position_encoding enc)
{
    return (syntax_range){position_of(v, start, enc), position_of(v, end, enc)};
}

/* The last line a node covers: one that ends at the start of a line (after
 * its '\n') does not reach into that line. */
static uint32_t last_row(TSNode node)
{
    TSPoint s = ts_node_start_point(node), e = ts_node_end_point(node);
    return e.row > s.row && e.column == 0 ? e.row - 1 : e.row;
}

/* ----- folds ------------------------------------------------------------------------------------ */

static bool is_comment(TSNode node) { return strstr(ts_node_type(node), "comment") != NULL; }

/* The fold of a node of more than one line: up to the line before its
 * closing token (`}`, `]`, `end`) when that token starts its last line's
 * content, so that the closing line stays in view; else to its last line. */
static bool fold_of(TSNode node, syntax_fold *out)
{
    uint32_t first = ts_node_start_point(node).row, last = last_row(node);
    if (last <= first)
        return false;
    uint32_t children = ts_node_child_count(node);
    if (children > 0) {
        TSNode closing = ts_node_child(node, children - 1);
        if (!ts_node_is_named(closing) && ts_node_start_point(closing).row == last)
            last--;
    }
    if (last <= first)
        return false;
    *out = (syntax_fold){first, last, is_comment(node)};
    return true;
}

/* Stops early, with what it has, once job is cancelled. */
static void folds_of(const ecp_job *job, const syntax_doc_view *view, syntax_fold **out, size_t *count)
{
    const syntax_doc_view v = *view;
    syntax_fold *folds = NULL;
    size_t n = 0, cap = 0;
    TSTreeCursor cursor = ts_tree_cursor_new(ts_tree_root_node(v.tree));
    size_t depth = 0;
    bool more = ts_tree_cursor_goto_first_child(&cursor);
    if (more)
        depth++;
    for (size_t visited = 0; more; visited++) {
        if ((visited & 4095) == 4095 && ecp_job_cancelled(job))
            break;
        TSNode node = ts_tree_cursor_current_node(&cursor);
        bool multi_line = last_row(node) > ts_node_start_point(node).row;
        syntax_fold fold;
        if (multi_line && ts_node_is_named(node) && fold_of(node, &fold)) {
            /* Nodes that start on one line come one after another, each
             * inside the one before: the innermost is the fold of that line. */
            if (n && folds[n - 1].start_line == fold.start_line) {
                folds[n - 1] = fold;
            } else {
                if (n == SYNTAX_MAX_FOLDS)
                    break;
                if (n == cap) {
                    cap = cap ? cap * 2 : 64;
                    folds = xrealloc(folds, cap * sizeof *folds);
                }
                folds[n++] = fold;
            }
        }
        /* A node of one line holds no node of several. */
        if (multi_line && ts_tree_cursor_goto_first_child(&cursor)) {
            depth++;
            continue;
        }
        while (!ts_tree_cursor_goto_next_sibling(&cursor)) {
            if (--depth == 0 || !ts_tree_cursor_goto_parent(&cursor)) {
                more = false;
                break;
            }
        }
    }
    ts_tree_cursor_delete(&cursor);
    *out = folds;
    *count = n;
}

/* ----- selection ranges ------------------------------------------------------------------------ */

typedef struct byte_range {
    uint32_t start, end;
} byte_range;

/* The byte of a position, or ECP_ERANGE naming it as the document service does. */
static int byte_of(const syntax_doc_view *v, const syntax_position *p, ecp_position_encoding enc, size_t *byte,
                   ecp_error *err)
{
    size_t lines = v->lines->count;
    if (p->line == lines && p->column == 0) {
        *byte = v->len;
        return 0;
    }
    if (p->line >= lines)
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: line %zu is past the end (%zu line%s)", p->line,
                             lines, lines == 1 ? "" : "s");
    size_t start = v->lines->starts[p->line], end = v->lines->starts[p->line + 1] - 1;
    size_t in_line;
    if (!utf_column_to_byte(v->text + start, end - start, p->column, enc, &in_line))
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: column %zu is past the end of line %zu (%zu columns)",
                             p->column, p->line, utf_column_count(v->text + start, end - start, enc));
    *byte = start + in_line;
    return 0;
}

/* Walks from root to the smallest node holding byte, keeping the innermost
 * SYNTAX_MAX_SELECTION_DEPTH in ring; returns how many it passed. */
static size_t nodes_holding(TSNode root, size_t byte, byte_range *ring)
{
    size_t seen = 0;
    TSTreeCursor cursor = ts_tree_cursor_new(root);
    while (ts_tree_cursor_goto_first_child_for_byte(&cursor, (uint32_t)byte) >= 0) {
        TSNode node = ts_tree_cursor_current_node(&cursor);
        if (ts_node_start_byte(node) > byte || ts_node_end_byte(node) <= byte)
            break; /* between children: the parent is the smallest */
        ring[seen++ % SYNTAX_MAX_SELECTION_DEPTH] = (byte_range){ts_node_start_byte(node), ts_node_end_byte(node)};
    }
    ts_tree_cursor_delete(&cursor);
    return seen;
}

/* The nodes from the root down to the smallest that holds byte: the
 * innermost SYNTAX_MAX_SELECTION_DEPTH of them in a ring, then outwards to
 * the whole document. */
static void select_at(const syntax_doc_view *v, size_t byte, ecp_position_encoding enc, syntax_selection *out)
{
    byte_range ring[SYNTAX_MAX_SELECTION_DEPTH];
    size_t seen = 0;
    /* before the first parse lands (or of a text no grammar parses) the
     * whole document is the only range */
    byte_range root_range = {0, (uint32_t)v->len};
    if (v->tree) {
        TSNode root = ts_tree_root_node(v->tree);
        root_range = (byte_range){ts_node_start_byte(root), ts_node_end_byte(root)};
        seen = nodes_holding(root, byte, ring);
    }

    size_t kept = seen < SYNTAX_MAX_SELECTION_DEPTH ? seen : SYNTAX_MAX_SELECTION_DEPTH;
    out->ranges = xmalloc((kept + 2) * sizeof *out->ranges);
    out->count = 0;
    byte_range last = {UINT32_MAX, 0};
    for (size_t i = 0; i < kept + 2; i++) {
        byte_range r;
        if (i < kept)
            r = ring[(seen - 1 - i) % SYNTAX_MAX_SELECTION_DEPTH];
        else if (i == kept)
            r = root_range;
        else
            r = (byte_range){0, (uint32_t)v->len};
        /* each range holds the one before; one of the same bytes is left out */
        if (last.start != UINT32_MAX && (r.start > last.start || r.end < last.end))
            continue;
        if (r.start == last.start && r.end == last.end)
            continue;
        out->ranges[out->count++] = range_of(v, r.start, r.end, enc);
        last = r;
    }
}

static int selections_of(const ecp_job *job, const syntax_doc_view *v, const syntax_position *positions, size_t count,
                         ecp_position_encoding enc, syntax_selection **out, size_t *out_count, ecp_error *err)
{
    size_t *bytes = xmalloc((count ? count : 1) * sizeof *bytes);
    for (size_t i = 0; i < count; i++) {
        int status = byte_of(v, &positions[i], enc, &bytes[i], err);
        if (status < 0) {
            free(bytes);
            return status;
        }
    }
    syntax_selection *selections = xcalloc(count ? count : 1, sizeof *selections);
    for (size_t i = 0; i < count && !ecp_job_cancelled(job); i++)
        select_at(v, bytes[i], enc, &selections[i]);
    free(bytes);
    *out = selections;
    *out_count = count;
    return 0;
}

void syntax_selections_free(syntax_selection *selections, size_t count)
{
    for (size_t i = 0; selections && i < count; i++)
        free(selections[i].ranges);
    free(selections);
}

/* ----- indent ------------------------------------------------------------------------------------ */

/* How far up a new line's indent is looked for, and how many lines teach
 * the document's indent unit. */
#define INDENT_LOOK_BACK 1000
#define INDENT_SAMPLE_LINES 1000
#define INDENT_LEAD_MAX 256 /* leading whitespace read of a line */

static void append_chunk(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

typedef struct indent_sample {
    buf line;
    size_t tab_lines, space_lines;
    size_t previous_spaces; /* of the last non-blank line */
    bool have_previous;
    size_t steps[9];        /* how often the indent grew by 1..8 spaces */
} indent_sample;

static void sample_begin(void *ctx, size_t line)
{
    (void)line;
    indent_sample *s = ctx;
    s->line.len = 0;
}

static void sample_chunk(void *ctx, const char *chunk, size_t len)
{
    indent_sample *s = ctx;
    /* Only the leading whitespace matters; a minified line is not kept whole. */
    if (s->line.len < INDENT_LEAD_MAX)
        buf_append(&s->line, chunk, len < INDENT_LEAD_MAX ? len : INDENT_LEAD_MAX);
}

static void sample_end(void *ctx, size_t line)
{
    (void)line;
    indent_sample *s = ctx;
    size_t spaces = 0, i = 0;
    while (i < s->line.len && (s->line.data[i] == ' ' || s->line.data[i] == '\t'))
        i++;
    if (i == s->line.len)
        return; /* blank */
    if (s->line.data[0] == '\t') {
        s->tab_lines++;
        s->have_previous = false;
        return;
    }
    while (spaces < s->line.len && s->line.data[spaces] == ' ')
        spaces++;
    if (spaces)
        s->space_lines++;
    if (s->have_previous && spaces > s->previous_spaces && spaces - s->previous_spaces <= 8)
        s->steps[spaces - s->previous_spaces]++;
    s->previous_spaces = spaces;
    s->have_previous = true;
}

/* The document's own indent unit, from its first lines. */
static void indent_unit(document_service *docs, const char *document_id, const syntax_grammar *g, buf *unit)
{
    indent_sample s = {0};
    buf_init(&s.line);
    static const document_line_reader reader = {sample_begin, sample_chunk, sample_end};
    document_read_lines(docs, document_id, 0, INDENT_SAMPLE_LINES, &reader, &s, NULL);
    buf_free(&s.line);
    if (s.tab_lines > s.space_lines || (!s.tab_lines && !s.space_lines && g && strcmp(g->name, "go") == 0)) {
        buf_push(unit, '\t');
        return;
    }
    size_t width = 0;
    for (size_t w = 1; w <= 8; w++)
        if (s.steps[w] > (width ? s.steps[width] : 0))
            width = w;
    if (!width)
        width = 4;
    for (size_t i = 0; i < width; i++)
        buf_push(unit, ' ');
}

static bool opens_block(const syntax_grammar *g, const char *line, size_t len)
{
    while (len && (line[len - 1] == ' ' || line[len - 1] == '\t' || line[len - 1] == '\r'))
        len--;
    if (!len)
        return false;
    char last = line[len - 1];
    if (last == '{' || last == '[' || last == '(')
        return true;
    return last == ':' && g && (strcmp(g->name, "python") == 0 || strcmp(g->name, "yaml") == 0);
}

int syntax_document_indent(syntax_service *self, const char *document_id, size_t line, char **out, ecp_error *err)
{
    *out = NULL;
    syntax_doc_view v;
    int status = syntax_document_view(self, document_id, &v, err);
    if (status < 0)
        return status;
    document_service *docs = syntax_service_documents(self);
    document_info info;
    status = document_get_info(docs, document_id, &info, err);
    if (status < 0)
        return status;
    if (line >= info.line_count)
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: line %zu is past the end (%zu line%s)", line,
                             info.line_count, info.line_count == 1 ? "" : "s");
    buf text = BUF_INIT, indent = BUF_INIT;
    for (size_t back = 0; back < INDENT_LOOK_BACK && back <= line; back++) {
        text.len = 0;
        if (document_read_line(docs, document_id, line - back, append_chunk, &text, NULL) < 0)
            break;
        size_t lead = 0;
        while (lead < text.len && (text.data[lead] == ' ' || text.data[lead] == '\t'))
            lead++;
        if (lead == text.len)
            continue; /* blank */
        buf_append(&indent, text.data, lead);
        if (opens_block(v.grammar, text.data, text.len))
            indent_unit(docs, document_id, v.grammar, &indent);
        break;
    }
    buf_free(&text);
    buf_push(&indent, '\0');
    *out = buf_detach(&indent);
    return 0;
}

int syntax_newline_indent(void *ctx, const char *document_id, size_t line, char **out)
{
    *out = NULL;
    syntax_doc_view v;
    if (syntax_document_view(ctx, document_id, &v, NULL) < 0 || !v.grammar || !v.tree)
        return 0;
    return syntax_document_indent(ctx, document_id, line, out, NULL) == 0 ? 1 : 0;
}

/* ----- symbols ---------------------------------------------------------------------------------- */

/* The tags queries of each grammar, concatenated in order (typescript's
 * adds to javascript's). */
static const struct {
    const char *grammar;
    const char *files[3];
} tags_files[] = {
    {"c", {"tree-sitter-c/queries/tags.scm"}},
    {"cpp", {"tree-sitter-cpp/queries/tags.scm"}},
    {"javascript", {"tree-sitter-javascript/queries/tags.scm"}},
    {"typescript", {"tree-sitter-javascript/queries/tags.scm", "tree-sitter-typescript/queries/tags.scm"}},
    {"tsx", {"tree-sitter-javascript/queries/tags.scm", "tree-sitter-typescript/queries/tags.scm"}},
    {"python", {"tree-sitter-python/queries/tags.scm"}},
    {"rust", {"tree-sitter-rust/queries/tags.scm"}},
    {"go", {"tree-sitter-go/queries/tags.scm"}},
    {"java", {"tree-sitter-java/queries/tags.scm"}},
    {"lua", {"tree-sitter-lua/queries/tags.scm"}},
};

/* The longest name kept of a symbol. */
#define SYMBOL_NAME_MAX 1024

static const char *const *tags_files_of(const syntax_grammar *g)
{
    for (size_t i = 0; g && g->language && i < sizeof tags_files / sizeof tags_files[0]; i++)
        if (strcmp(tags_files[i].grammar, g->name) == 0)
            return tags_files[i].files;
    return NULL;
}

/* The tags query of g, read and compiled for each request, on the pool (a
 * few hundred bytes of patterns); NULL, with why, when it does not load. */
static TSQuery *tags_query(const char *dir, const syntax_grammar *g, char *why, size_t why_cap)
{
    const char *const *files = tags_files_of(g);
    if (!files)
        return NULL;
    buf source = BUF_INIT;
    for (size_t i = 0; i < 3 && files[i]; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(why, why_cap, "syntax: cannot read %s; %s has no symbols", path, g->name);
            buf_free(&source);
            return NULL;
        }
        char chunk[8192];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
            buf_append(&source, chunk, n);
        fclose(f);
        buf_push(&source, '\n');
    }
    uint32_t error_offset = 0;
    TSQueryError error = TSQueryErrorNone;
    TSQuery *q = ts_query_new(g->language(), source.data, (uint32_t)source.len, &error_offset, &error);
    buf_free(&source);
    if (!q)
        snprintf(why, why_cap, "syntax: the %s tags query does not compile (error %d at byte %u); it has no symbols",
                 g->name, (int)error, error_offset);
    return q;
}

static TSNode capture_node(const TSQueryMatch *m, uint32_t capture, bool *found)
{
    for (uint16_t i = 0; i < m->capture_count; i++)
        if (m->captures[i].index == capture) {
            *found = true;
            return m->captures[i].node;
        }
    *found = false;
    return (TSNode){0};
}

static bool node_text_is(const syntax_doc_view *v, TSNode node, const char *s, size_t len)
{
    uint32_t a = ts_node_start_byte(node), b = ts_node_end_byte(node);
    return b >= a && b <= v->len && b - a == len && memcmp(v->text + a, s, len) == 0;
}

/* The #eq? and #not-eq? of a match's pattern (the definitions' only
 * predicates in the shipped tags queries); the rest (#strip!,
 * #select-adjacent!, #match? on references) do not decide a definition. */
static bool predicates_hold(const syntax_doc_view *v, const TSQuery *q, const TSQueryMatch *m)
{
    uint32_t n = 0;
    const TSQueryPredicateStep *steps = ts_query_predicates_for_pattern(q, m->pattern_index, &n);
    for (uint32_t i = 0; i < n;) {
        uint32_t end = i;
        while (end < n && steps[end].type != TSQueryPredicateStepTypeDone)
            end++;
        if (end - i == 3 && steps[i].type == TSQueryPredicateStepTypeString &&
            steps[i + 1].type == TSQueryPredicateStepTypeCapture) {
            uint32_t len;
            const char *op = ts_query_string_value_for_id(q, steps[i].value_id, &len);
            bool negated = strcmp(op, "not-eq?") == 0;
            if (negated || strcmp(op, "eq?") == 0) {
                bool found;
                TSNode a = capture_node(m, steps[i + 1].value_id, &found);
                if (found) {
                    bool equal;
                    if (steps[i + 2].type == TSQueryPredicateStepTypeString) {
                        const char *s = ts_query_string_value_for_id(q, steps[i + 2].value_id, &len);
                        equal = node_text_is(v, a, s, len);
                    } else {
                        bool other;
                        TSNode b = capture_node(m, steps[i + 2].value_id, &other);
                        uint32_t bs = ts_node_start_byte(b), be = ts_node_end_byte(b);
                        equal = other && be >= bs && be <= v->len && node_text_is(v, a, v->text + bs, be - bs);
                    }
                    if (equal == negated)
                        return false;
                }
            }
        }
        i = end + 1;
    }
    return true;
}

/* C and C++ tag a function by its declarator: the symbol is the whole
 * definition (or declaration) around it. */
static TSNode widen(TSNode node)
{
    const char *type = ts_node_type(node);
    size_t len = strlen(type);
    if (len < 10 || strcmp(type + len - 10, "declarator") != 0)
        return node;
    TSNode at = node;
    for (int hops = 0; hops < 16; hops++) {
        TSNode parent = ts_node_parent(at);
        if (ts_node_is_null(parent))
            return node;
        const char *pt = ts_node_type(parent);
        size_t pl = strlen(pt);
        if (pl >= 10 && strcmp(pt + pl - 10, "declarator") == 0) {
            at = parent;
            continue;
        }
        if (strcmp(pt, "function_definition") == 0 || strcmp(pt, "declaration") == 0 ||
            strcmp(pt, "field_declaration") == 0)
            return parent;
        return node;
    }
    return node;
}

static int symbol_kind(const char *tag, const char *node_type)
{
    static const struct {
        const char *tag;
        int kind;
    } kinds[] = {
        {"class", 5}, {"method", 6}, {"function", 12}, {"interface", 11}, {"module", 2}, {"namespace", 3},
        {"constant", 14}, {"macro", 14}, {"field", 8}, {"property", 7}, {"enum", 10}, {"variable", 13},
        {"type", 23}, {"struct", 23}, {"trait", 11}, {"implementation", 5},
    };
    if (strstr(node_type, "enum"))
        return 10;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (strcmp(kinds[i].tag, tag) == 0)
            return kinds[i].kind;
    return 13;
}

typedef struct raw_symbol {
    uint32_t start, end, name_start, name_end;
    const char *tag;
    int kind;
} raw_symbol;

static int by_position(const void *a, const void *b)
{
    const raw_symbol *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1; /* the larger holds the smaller: first */
    if (x->name_start != y->name_start)
        return x->name_start < y->name_start ? -1 : 1;
    return 0;
}

static const char *tag_of(const char *capture_name)
{
    static const char *const known[] = {"class", "method", "function", "interface", "module", "namespace",
                                        "constant", "macro", "field", "property", "enum", "variable",
                                        "type", "struct", "trait", "implementation"};
    const char *tag = capture_name + strlen("definition.");
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(known[i], tag) == 0)
            return known[i];
    return "symbol";
}

static void symbols_of(const ecp_job *job, const syntax_doc_view *view, const char *dir, ecp_position_encoding enc,
                       syntax_symbol **out, size_t *count, char *why, size_t why_cap)
{
    const syntax_doc_view v = *view;
    *out = NULL;
    *count = 0;
    TSQuery *q = tags_query(dir, v.grammar, why, why_cap);
    if (!q)
        return;
    uint32_t name_capture = UINT32_MAX, captures = ts_query_capture_count(q);
    const char **tags = xcalloc(captures + 1, sizeof *tags); /* per capture: its definition tag, or NULL */
    for (uint32_t c = 0; c < captures; c++) {
        uint32_t len;
        const char *name = ts_query_capture_name_for_id(q, c, &len);
        if (strcmp(name, "name") == 0)
            name_capture = c;
        else if (strncmp(name, "definition.", strlen("definition.")) == 0)
            tags[c] = tag_of(name);
    }
    /* References (calls, uses) are most of a file's matches and none of its
     * symbols: patterns that capture no definition are not run. */
    for (uint32_t pattern = 0, patterns = ts_query_pattern_count(q); pattern < patterns; pattern++) {
        bool defines = false;
        for (uint32_t c = 0; c < captures && !defines; c++)
            defines = tags[c] && ts_query_capture_quantifier_for_id(q, pattern, c) != TSQuantifierZero;
        if (!defines)
            ts_query_disable_pattern(q, pattern);
    }
    raw_symbol *raw = NULL;
    size_t n = 0, cap = 0;
    TSQueryCursor *qc = ts_query_cursor_new();
    ts_query_cursor_exec(qc, q, ts_tree_root_node(v.tree));
    TSQueryMatch m;
    for (size_t matches = 0; n < SYNTAX_MAX_SYMBOLS && ts_query_cursor_next_match(qc, &m); matches++) {
        if ((matches & 1023) == 1023 && ecp_job_cancelled(job))
            break;
        bool have_def = false, have_name = false;
        TSNode def = {0}, name = {0};
        const char *tag = NULL;
        for (uint16_t i = 0; i < m.capture_count; i++) {
            uint32_t c = m.captures[i].index;
            if (c == name_capture && !have_name) {
                name = m.captures[i].node;
                have_name = true;
            } else if (tags[c] && !have_def) {
                def = m.captures[i].node;
                tag = tags[c];
                have_def = true;
            }
        }
        if (!have_def || !have_name || !predicates_hold(&v, q, &m))
            continue;
        def = widen(def);
        raw_symbol s = {ts_node_start_byte(def), ts_node_end_byte(def), ts_node_start_byte(name),
                        ts_node_end_byte(name), tag, symbol_kind(tag, ts_node_type(def))};
        /* LSP wants the name inside the symbol's range */
        if (s.name_start < s.start)
            s.start = s.name_start;
        if (s.name_end > s.end)
            s.end = s.name_end;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            raw = xrealloc(raw, cap * sizeof *raw);
        }
        raw[n++] = s;
    }
    ts_query_cursor_delete(qc);
    ts_query_delete(q);
    free(tags);
    if (n > 1)
        qsort(raw, n, sizeof *raw, by_position);

    syntax_symbol *symbols = xcalloc(n ? n : 1, sizeof *symbols);
    const raw_symbol **bytes = xcalloc(n ? n : 1, sizeof *bytes); /* each kept symbol's */
    size_t kept = 0, stack[SYNTAX_MAX_SYMBOL_DEPTH], depth = 0;
    for (size_t i = 0; i < n; i++) {
        const raw_symbol *s = &raw[i];
        if (i && raw[i - 1].start == s->start && raw[i - 1].end == s->end && raw[i - 1].name_start == s->name_start)
            continue; /* two patterns found one definition */
        /* Sorted by start, the larger first: the symbols that hold this one
         * are the open ones that reach past it. */
        while (depth && !(s->end <= bytes[stack[depth - 1]]->end))
            depth--;
        syntax_symbol *sym = &symbols[kept];
        sym->parent = depth ? stack[depth - 1] : SIZE_MAX;
        sym->tag = s->tag;
        sym->kind = s->kind;
        if (sym->parent != SIZE_MAX && sym->kind == 12 &&
            (symbols[sym->parent].kind == 5 || symbols[sym->parent].kind == 11))
            sym->kind = 6; /* a function in a class is its method */
        sym->range = range_of(&v, s->start, s->end, enc);
        sym->selection_range = range_of(&v, s->name_start, s->name_end, enc);
        size_t name_len = s->name_end - s->name_start;
        if (name_len > SYMBOL_NAME_MAX)
            name_len = utf8_valid_prefix(v.text + s->name_start, SYMBOL_NAME_MAX);
        sym->name = xmalloc(name_len + 1);
        memcpy(sym->name, v.text + s->name_start, name_len);
        sym->name[name_len] = 0;
        bytes[kept] = s;
        if (depth < SYNTAX_MAX_SYMBOL_DEPTH)
            stack[depth++] = kept;
        kept++;
    }
    free(bytes);
    free(raw);
    *out = symbols;
    *count = kept;
}

void syntax_symbols_free(syntax_symbol *symbols, size_t count)
{
    for (size_t i = 0; symbols && i < count; i++)
        free(symbols[i].name);
    free(symbols);
}

/* ----- requests: each on the pool, over a copy of the tree and its text ----------------------- */

typedef enum structure_op { OP_FOLDS, OP_SELECTIONS, OP_SYMBOLS } structure_op;

typedef struct structure_job {
    structure_op op;
    const syntax_grammar *grammar;
    const char *dir;            /* the grammars' (they outlive the service's jobs) */
    ecp_logger *log;
    TSTree *tree;               /* a copy: the loop's goes on with edits */
    char *text;
    size_t len;
    line_index lines;           /* built on the pool */
    ecp_position_encoding enc;
    syntax_position *positions; /* OP_SELECTIONS */
    size_t position_count;
    int status;
    ecp_error err;
    char why[4200];             /* a tags query that did not load, logged on the loop */
    syntax_structure result;
    syntax_structure_cb cb;
    void *ctx;
} structure_job;

static void structure_work(ecp_job *job, unsigned item)
{
    (void)item;
    structure_job *j = ecp_job_data(job);
    if (ecp_job_cancelled(job))
        return;
    line_index_build(&j->lines, j->text, j->len);
    syntax_doc_view v = {j->grammar, j->tree, j->text, j->len, &j->lines};
    switch (j->op) {
    case OP_FOLDS:
        folds_of(job, &v, &j->result.folds, &j->result.fold_count);
        break;
    case OP_SELECTIONS:
        j->status = selections_of(job, &v, j->positions, j->position_count, j->enc, &j->result.selections,
                                  &j->result.selection_count, &j->err);
        break;
    case OP_SYMBOLS:
        symbols_of(job, &v, j->dir, j->enc, &j->result.symbols, &j->result.symbol_count, j->why, sizeof j->why);
        break;
    }
}

static void structure_done(ecp_job *job)
{
    structure_job *j = ecp_job_data(job);
    if (j->why[0])
        ecp_log(j->log, ECP_LOG_WARN, "%s", j->why);
    if (ecp_job_cancelled(job)) {
        ecp_error err = {0};
        j->cb(j->ctx, ecp_error_set(&err, ECP_ECANCELED, "Request cancelled"), &err, NULL);
        return;
    }
    if (j->status < 0)
        j->cb(j->ctx, j->status, &j->err, NULL);
    else
        j->cb(j->ctx, 0, NULL, &j->result);
}

static void structure_free(void *data)
{
    structure_job *j = data;
    if (j->tree)
        ts_tree_delete(j->tree);
    free(j->text);
    line_index_free(&j->lines);
    free(j->positions);
    free(j->result.folds);
    syntax_selections_free(j->result.selections, j->result.selection_count);
    syntax_symbols_free(j->result.symbols, j->result.symbol_count);
    free(j);
}

static const ecp_job_type structure_type = {"syntax.structure", ECP_LANE_LONG, false, structure_work,
                                            structure_done, structure_free};

/* Answers at once what needs no tree (NULL), or starts the job. */
static ecp_job *structure_start(syntax_service *self, structure_op op, const char *document_id,
                                ecp_position_encoding enc, const syntax_position *positions, size_t count,
                                ecp_call *call, syntax_structure_cb cb, void *ctx)
{
    static const syntax_structure none = {0};
    syntax_doc_view v;
    ecp_error err = {0};
    int status = syntax_document_view(self, document_id, &v, &err);
    if (status < 0) {
        cb(ctx, status, &err, NULL);
        return NULL;
    }
    if (op == OP_SELECTIONS && count > SYNTAX_MAX_SELECTION_POSITIONS) {
        cb(ctx, ecp_error_set(&err, ECP_EINVAL, "positions: at most %d, got %zu", SYNTAX_MAX_SELECTION_POSITIONS,
                              count),
           &err, NULL);
        return NULL;
    }
    /* selections answer one range per position even without a tree */
    if ((!v.tree && op != OP_SELECTIONS) || (op == OP_SYMBOLS && !tags_files_of(v.grammar))) {
        cb(ctx, 0, NULL, &none);
        return NULL;
    }
    buf untreed = BUF_INIT; /* the document's own text, when there is no tree yet */
    if (!v.tree) {
        status = document_get_text(syntax_service_documents(self), document_id, NULL, ECP_ENCODING_UTF8, &untreed,
                                   &err);
        if (status < 0) {
            buf_free(&untreed);
            cb(ctx, status, &err, NULL);
            return NULL;
        }
        v.text = untreed.data ? untreed.data : "";
        v.len = untreed.len;
    }
    structure_job *j = xcalloc(1, sizeof *j);
    j->op = op;
    j->grammar = v.grammar;
    syntax_grammars *grammars = syntax_service_grammars(self);
    j->dir = syntax_grammars_dir(grammars);
    j->log = syntax_grammars_log(grammars);
    j->tree = v.tree ? ts_tree_copy(v.tree) : NULL;
    j->text = xmalloc(v.len + 1);
    memcpy(j->text, v.text, v.len);
    j->text[v.len] = 0;
    j->len = v.len;
    buf_free(&untreed);
    j->enc = enc;
    if (count) {
        j->positions = xmalloc(count * sizeof *positions);
        memcpy(j->positions, positions, count * sizeof *positions);
    }
    j->position_count = count;
    j->cb = cb;
    j->ctx = ctx;
    ecp_job *job = ecp_job_new(syntax_service_jobs(self), &structure_type, j);
    if (call)
        ecp_job_serve(job, call);
    ecp_job_start(job, 1);
    return job;
}

ecp_job *syntax_document_folds_start(syntax_service *self, const char *document_id, ecp_call *call,
                                     syntax_structure_cb cb, void *ctx)
{
    return structure_start(self, OP_FOLDS, document_id, ECP_ENCODING_UTF16, NULL, 0, call, cb, ctx);
}

ecp_job *syntax_document_selection_ranges_start(syntax_service *self, const char *document_id,
                                                const syntax_position *positions, size_t count,
                                                ecp_position_encoding enc, ecp_call *call, syntax_structure_cb cb,
                                                void *ctx)
{
    return structure_start(self, OP_SELECTIONS, document_id, enc, positions, count, call, cb, ctx);
}

ecp_job *syntax_document_symbols_start(syntax_service *self, const char *document_id, ecp_position_encoding enc,
                                       ecp_call *call, syntax_structure_cb cb, void *ctx)
{
    return structure_start(self, OP_SYMBOLS, document_id, enc, NULL, 0, call, cb, ctx);
}
