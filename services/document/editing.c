/* editing: the commands every client would otherwise write itself (indent,
 * outdent, new line, duplicate and move lines, delete a word, toggle a
 * comment), acting at one client's cursors as one undoable step.
 *
 * Each command turns owner's cursors into a list of plain edits over the
 * text as it is, then applies them at once, so undo, change events and the
 * other clients' cursors come from the one path every edit takes.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ----- the indent unit ----------------------------------------------------------- */

const char *document_line_comment(const char *language_id)
{
    static const struct {
        const char *language;
        const char *token;
    } table[] = {
        {"c", "//"},          {"cpp", "//"},          {"objective-c", "//"}, {"csharp", "//"},
        {"java", "//"},       {"javascript", "//"},   {"javascriptreact", "//"},
        {"typescript", "//"}, {"typescriptreact", "//"}, {"rust", "//"},  {"go", "//"},
        {"kotlin", "//"},     {"swift", "//"},        {"scss", "//"},        {"less", "//"},
        {"jsonc", "//"},      {"python", "#"},        {"shellscript", "#"},  {"shell", "#"},
        {"bash", "#"},        {"yaml", "#"},          {"toml", "#"},         {"ruby", "#"},
        {"perl", "#"},        {"r", "#"},             {"makefile", "#"},     {"dockerfile", "#"},
        {"cmake", "#"},       {"graphql", "#"},     {"lua", "--"},          {"sql", "--"},         {"haskell", "--"},
    };
    if (!language_id)
        return NULL;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i].language, language_id) == 0)
            return table[i].token;
    return NULL;
}

typedef struct line_indent_scan {
    size_t tab_lines;    /* indented lines that start with a tab */
    size_t space_lines;  /* indented lines that start with a space */
    size_t steps[9];     /* steps[k]: how often the leading spaces grew by k (1..8) between lines */
    size_t prev_spaces;  /* leading spaces of the last line that had text */
    size_t cur_spaces;
    bool cur_first;      /* nothing of the current line seen yet */
    bool cur_in_lead;    /* still in its leading whitespace */
    bool cur_tab;
    bool cur_text;       /* it has something other than whitespace */
} line_indent_scan;

static void scan_begin(void *ctx, size_t line)
{
    (void)line;
    line_indent_scan *s = ctx;
    s->cur_spaces = 0;
    s->cur_first = true;
    s->cur_in_lead = true;
    s->cur_tab = false;
    s->cur_text = false;
}

static void scan_chunk(void *ctx, const char *p, size_t len)
{
    line_indent_scan *s = ctx;
    for (size_t i = 0; i < len && s->cur_in_lead; i++) {
        if (p[i] == ' ') {
            s->cur_spaces++;
        } else if (p[i] == '\t') {
            if (s->cur_first)
                s->cur_tab = true;
            s->cur_spaces = 0;
        } else {
            s->cur_in_lead = false;
            s->cur_text = p[i] != '\r';
        }
        s->cur_first = false;
    }
}

static void scan_end(void *ctx, size_t line)
{
    (void)line;
    line_indent_scan *s = ctx;
    if (!s->cur_text)
        return; /* blank lines say nothing */
    if (s->cur_tab)
        s->tab_lines++;
    else if (s->cur_spaces > 0)
        s->space_lines++;
    if (!s->cur_tab && s->cur_spaces > s->prev_spaces && s->cur_spaces - s->prev_spaces <= 8)
        s->steps[s->cur_spaces - s->prev_spaces]++;
    if (!s->cur_tab)
        s->prev_spaces = s->cur_spaces;
}

static const document_line_reader indent_reader = {scan_begin, scan_chunk, scan_end};

document_indent document__detect_indent(const document *doc)
{
    line_indent_scan s = {0};
    size_t count = piece_tree_line_count(doc->tree);
    piece_tree_lines it;
    piece_tree_lines_init(&it, doc->tree, 0, count < DOCUMENT_INDENT_SCAN_LINES ? count : DOCUMENT_INDENT_SCAN_LINES);
    document__read_lines(&it, 0, &indent_reader, &s);
    if (s.tab_lines > s.space_lines)
        return (document_indent){true, 4};
    size_t best = 0;
    for (size_t k = 1; k <= 8; k++)
        if (s.steps[k] > s.steps[best])
            best = k;
    return (document_indent){false, best ? best : 4};
}

int document_indent_of(document_service *self, const char *document_id, document_indent *out, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    *out = document__indent(self, doc);
    return 0;
}

void document_newline_indent(const char *before, size_t len, const document_indent *unit, buf *out)
{
    size_t lead = 0;
    while (lead < len && (before[lead] == ' ' || before[lead] == '\t'))
        lead++;
    buf_append(out, before, lead);
    size_t last = len;
    while (last > lead && (before[last - 1] == ' ' || before[last - 1] == '\t'))
        last--;
    if (last > lead && strchr("{[(:", before[last - 1])) {
        if (unit->tabs)
            buf_push(out, '\t');
        else
            for (size_t i = 0; i < unit->size; i++)
                buf_push(out, ' ');
    }
}

void document_service_set_indent_provider(document_service *self, document_indent_fn fn, void *ctx)
{
    self->indent_provider = fn;
    self->indent_provider_ctx = ctx;
}

/* ----- lines the cursors touch --------------------------------------------------- */

typedef struct line_span {
    size_t first, last; /* inclusive */
} line_span;

static int span_cmp(const void *a, const void *b)
{
    const line_span *x = a, *y = b;
    return x->first < y->first ? -1 : x->first > y->first;
}

static size_t line_end(const piece_tree *t, size_t line)
{
    return piece_tree_line_start(t, line) + piece_tree_line_length(t, line);
}

/* The lines of one cursor: a selection that ends at the start of a line
 * (and began on an earlier one) leaves that line out. */
static line_span cursor_lines(const piece_tree *t, const doc_cursor *c)
{
    size_t lo = c->anchor < c->active ? c->anchor : c->active;
    size_t hi = c->anchor < c->active ? c->active : c->anchor;
    line_span s = {piece_tree_line_of_offset(t, lo), piece_tree_line_of_offset(t, hi)};
    if (s.last > s.first && piece_tree_line_start(t, s.last) == hi)
        s.last--;
    return s;
}

/* The cursors' lines as sorted spans, those that overlap or touch merged
 * (`touching`: adjacent spans merge too). Returns the count; *out is
 * malloc'd. */
static size_t touched_lines(const document *doc, const doc_cursor_set *set, bool touching, line_span **out)
{
    line_span *spans = xmalloc(set->count * sizeof *spans);
    for (size_t i = 0; i < set->count; i++)
        spans[i] = cursor_lines(doc->tree, &set->items[i]);
    qsort(spans, set->count, sizeof *spans, span_cmp);
    size_t n = 0;
    for (size_t i = 0; i < set->count; i++) {
        if (n && spans[i].first <= spans[n - 1].last + (touching ? 1 : 0)) {
            if (spans[i].last > spans[n - 1].last)
                spans[n - 1].last = spans[i].last;
        } else {
            spans[n++] = spans[i];
        }
    }
    *out = spans;
    return n;
}

/* ----- the edit list ---------------------------------------------------------------- */

/* Edits whose texts live in one buffer that grows as they are made: a text
 * is kept as an offset until every edit is in. */
typedef struct edit_list {
    doc_edit *items;
    size_t *text_at;
    size_t count, cap;
    buf texts;
} edit_list;

static void edits_add(edit_list *l, size_t start, size_t end, const char *text, size_t len)
{
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = xrealloc(l->items, l->cap * sizeof *l->items);
        l->text_at = xrealloc(l->text_at, l->cap * sizeof *l->text_at);
    }
    l->text_at[l->count] = l->texts.len;
    buf_append(&l->texts, text, len);
    l->items[l->count] = (doc_edit){start, end, NULL, len, l->count};
    l->count++;
}

/* The same with the text copied out of the document. */
static void edits_add_copy(edit_list *l, const piece_tree *t, size_t start, size_t end, size_t from, size_t len,
                           const char *prefix, const char *suffix)
{
    size_t at = l->texts.len;
    size_t pre = prefix ? strlen(prefix) : 0, suf = suffix ? strlen(suffix) : 0;
    buf_reserve(&l->texts, pre + len + suf);
    if (pre)
        buf_append(&l->texts, prefix, pre);
    buf_reserve(&l->texts, len);
    piece_tree_copy(t, from, len, l->texts.data + l->texts.len);
    l->texts.len += len;
    if (suf)
        buf_append(&l->texts, suffix, suf);
    edits_add(l, start, end, NULL, 0);
    l->text_at[l->count - 1] = at;
    l->items[l->count - 1].len = pre + len + suf;
}

static int edits_apply(document_service *svc, document *doc, uint64_t owner, edit_list *l, doc_cursor_policy policy,
                       uint64_t *version, ecp_error *err)
{
    for (size_t i = 0; i < l->count; i++)
        l->items[i].text = l->texts.data ? l->texts.data + l->text_at[i] : "";
    int rc = 0;
    if (l->count)
        rc = document__apply_sorted(svc, doc, owner, l->items, l->count, false, policy, version, err);
    else if (version)
        *version = doc->version;
    return rc;
}

static void edits_free(edit_list *l)
{
    free(l->items);
    free(l->text_at);
    buf_free(&l->texts);
}

/* ----- the commands ----------------------------------------------------------------- */

static void unit_text(const document_indent *unit, buf *out)
{
    if (unit->tabs)
        buf_push(out, '\t');
    else
        for (size_t i = 0; i < unit->size; i++)
            buf_push(out, ' ');
}

static void indent_lines(document_service *svc, document *doc, const line_span *spans, size_t n, bool outdent, edit_list *l)
{
    const piece_tree *t = doc->tree;
    document_indent unit = document__indent(svc, doc);
    buf text = BUF_INIT;
    unit_text(&unit, &text);
    for (size_t s = 0; s < n; s++) {
        for (size_t line = spans[s].first; line <= spans[s].last; line++) {
            size_t start = piece_tree_line_start(t, line);
            size_t len = piece_tree_line_length(t, line);
            if (!outdent) {
                /* a lone empty line is indented (the caret is on it); empty
                 * lines among several are left alone */
                if (len > 0 || spans[s].first == spans[s].last)
                    edits_add(l, start, start, text.data, text.len);
                continue;
            }
            size_t k = 0;
            if (len > 0 && piece_tree_byte_at(t, start) == '\t')
                k = 1;
            else
                while (k < len && k < unit.size && piece_tree_byte_at(t, start + k) == ' ')
                    k++;
            if (k)
                edits_add(l, start, start + k, "", 0);
        }
    }
    buf_free(&text);
}

/* How far Enter reads each way from the caret's line start and the caret:
 * 10,000 cursors on a line of a megabyte of blanks would each read it all
 * (a longer indent is copied as its first NEWLINE_SCAN_MAX bytes). */
#define NEWLINE_SCAN_MAX ((size_t)1024)

/* Whether only blanks follow p on its line. The indent provider judges a
 * line whole, so it is asked only where Enter leaves nothing of the line
 * behind the caret to carry down. A line read no further than
 * NEWLINE_SCAN_MAX bytes: longer counts as not blank. */
static bool rest_is_blank(const piece_tree *t, size_t p)
{
    size_t end = line_end(t, piece_tree_line_of_offset(t, p));
    if (end - p > NEWLINE_SCAN_MAX)
        return false;
    for (; p < end; p++) {
        char b = piece_tree_byte_at(t, p);
        if (b != ' ' && b != '\t' && b != '\r')
            return false;
    }
    return true;
}

static void newline_at_cursors(document_service *svc, document *doc, const doc_cursor_set *set, edit_list *l)
{
    const piece_tree *t = doc->tree;
    document_indent unit = document__indent(svc, doc);
    buf before = BUF_INIT, text = BUF_INIT;
    for (size_t i = 0; i < set->count; i++) {
        const doc_cursor *c = &set->items[i];
        size_t lo = c->anchor < c->active ? c->anchor : c->active;
        size_t hi = c->anchor < c->active ? c->active : c->anchor;
        size_t start = piece_tree_line_start(t, piece_tree_line_of_offset(t, lo));
        /* what the rule reads of the line before the caret: its leading
         * blanks and its last other character, not the whole (maybe long)
         * line */
        buf_clear(&before);
        size_t p = start;
        for (; p < lo && p - start < NEWLINE_SCAN_MAX; p++) {
            char b = piece_tree_byte_at(t, p);
            if (b != ' ' && b != '\t')
                break;
            buf_push(&before, b);
        }
        size_t q = lo;
        while (q > p && lo - q < NEWLINE_SCAN_MAX &&
               (piece_tree_byte_at(t, q - 1) == ' ' || piece_tree_byte_at(t, q - 1) == '\t'))
            q--;
        if (q > p && lo - q < NEWLINE_SCAN_MAX)
            buf_push(&before, piece_tree_byte_at(t, q - 1));
        buf_clear(&text);
        buf_push(&text, '\n');
        char *known = NULL;
        if (svc->indent_provider && lo == hi && rest_is_blank(t, hi) &&
            svc->indent_provider(svc->indent_provider_ctx, doc->id, piece_tree_line_of_offset(t, lo), &known) == 1 &&
            known) {
            buf_append_str(&text, known);
        } else {
            document_newline_indent(before.data ? before.data : "", before.len, &unit, &text);
        }
        free(known);
        edits_add(l, lo, hi, text.data, text.len);
    }
    buf_free(&before);
    buf_free(&text);
}

static void duplicate_lines(const document *doc, const line_span *spans, size_t n, edit_list *l)
{
    const piece_tree *t = doc->tree;
    for (size_t s = 0; s < n; s++) {
        size_t start = piece_tree_line_start(t, spans[s].first);
        size_t end = line_end(t, spans[s].last);
        /* the copy goes above, so that every cursor follows the original
         * down onto the lower of the two */
        edits_add_copy(l, t, start, start, start, end - start, NULL, "\n");
    }
}

/* One span's move: offsets in [block_lo, block_hi] shift by block_by, those
 * in the neighbour line [next_lo, next_hi] by next_by. */
typedef struct line_move {
    size_t block_lo, block_hi;
    long block_by;
    size_t next_lo, next_hi;
    long next_by;
} line_move;

static size_t moved_offset(const line_move *moves, size_t n, size_t p)
{
    for (size_t i = 0; i < n; i++) {
        if (p >= moves[i].block_lo && p <= moves[i].block_hi)
            return (size_t)((long)p + moves[i].block_by);
        if (p >= moves[i].next_lo && p <= moves[i].next_hi)
            return (size_t)((long)p + moves[i].next_by);
    }
    return p;
}

/* Each span swaps with its neighbour line: the neighbour is taken out and
 * put back on the other side. Every client's cursors on either go with
 * their text (moves says how). Returns how many spans move. */
static size_t move_lines(const document *doc, const line_span *spans, size_t n, bool up, line_move *moves,
                         edit_list *l)
{
    const piece_tree *t = doc->tree;
    size_t count = piece_tree_line_count(t), length = piece_tree_length(t), m = 0;
    for (size_t s = 0; s < n; s++) {
        size_t first = spans[s].first, last = spans[s].last;
        if (up ? first == 0 : last + 1 >= count)
            continue;
        size_t bstart = piece_tree_line_start(t, first), bend = line_end(t, last);
        size_t blen = bend - bstart;
        if (up) {
            size_t pstart = piece_tree_line_start(t, first - 1);
            size_t plen = bstart - pstart; /* with its '\n' */
            edits_add(l, pstart, bstart, "", 0);
            if (bend < length)
                edits_add_copy(l, t, bend + 1, bend + 1, pstart, plen, NULL, NULL);
            else /* the last line has no '\n': the neighbour comes after one */
                edits_add_copy(l, t, bend, bend, pstart, plen - 1, "\n", NULL);
            moves[m++] = (line_move){bstart, bend, -(long)plen, pstart, bstart - 1, (long)blen + 1};
        } else {
            size_t nstart = bend + 1, nend = line_end(t, last + 1);
            if (nend < length) {
                edits_add(l, nstart, nend + 1, "", 0);
                edits_add_copy(l, t, bstart, bstart, nstart, nend + 1 - nstart, NULL, NULL);
            } else { /* the neighbour is the last line, without '\n' */
                edits_add(l, bend, nend, "", 0);
                edits_add_copy(l, t, bstart, bstart, nstart, nend - nstart, NULL, "\n");
            }
            moves[m++] = (line_move){bstart, bend, (long)(nend - nstart + 1), nstart, nend, -(long)blen - 1};
        }
    }
    return m;
}

/* Where every client's cursors go (after[p] for parties[p]), worked out on
 * the text before the move: the caller's with the spans their lines are in
 * (a selection that ends at the start of the line below goes with it),
 * everyone else's with the text they stand in. */
static doc_cursor_set *cursors_after_move(const document *doc, uint64_t owner, const line_move *moves, size_t m)
{
    doc_cursor_set *after = xcalloc(doc->party_count ? doc->party_count : 1, sizeof *after);
    for (size_t p = 0; p < doc->party_count; p++) {
        doc_cursor_set *set = &after[p];
        document__cursors_copy(set, &doc->parties[p]->cursors);
        for (size_t i = 0; i < set->count; i++) {
            doc_cursor *c = &set->items[i];
            if (doc->parties[p]->owner != owner) {
                c->anchor = moved_offset(moves, m, c->anchor);
                c->active = moved_offset(moves, m, c->active);
                continue;
            }
            line_span mine = cursor_lines(doc->tree, c);
            size_t lo = piece_tree_line_start(doc->tree, mine.first);
            for (size_t k = 0; k < m; k++) {
                if (lo >= moves[k].block_lo && lo <= moves[k].block_hi) {
                    c->anchor = (size_t)((long)c->anchor + moves[k].block_by);
                    c->active = (size_t)((long)c->active + moves[k].block_by);
                    break;
                }
            }
        }
    }
    return after;
}

static void place_moved(document *doc, uint64_t owner, doc_cursor_set *after)
{
    size_t length = piece_tree_length(doc->tree);
    for (size_t p = 0; p < doc->party_count; p++) {
        if (doc->parties[p]->owner == owner) {
            document__place_cursors(doc, owner, &after[p]);
        } else {
            document__cursors_free(&doc->parties[p]->cursors);
            document__cursors_copy(&doc->parties[p]->cursors, &after[p]);
            document__cursors_normalize(&doc->parties[p]->cursors, length);
        }
    }
}

typedef struct range {
    size_t start, end;
} range;

static int range_cmp(const void *a, const void *b)
{
    const range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static void delete_words(const document *doc, const doc_cursor_set *set, bool left, edit_list *l)
{
    range *r = xmalloc(set->count * sizeof *r);
    for (size_t i = 0; i < set->count; i++) {
        const doc_cursor *c = &set->items[i];
        size_t lo = c->anchor < c->active ? c->anchor : c->active;
        size_t hi = c->anchor < c->active ? c->active : c->anchor;
        if (lo == hi) {
            if (left)
                lo = document__word_left(doc->tree, lo);
            else
                hi = document__word_right(doc->tree, hi);
        }
        r[i] = (range){lo, hi};
    }
    /* two carets in one word delete it once */
    qsort(r, set->count, sizeof *r, range_cmp);
    size_t n = 0;
    for (size_t i = 0; i < set->count; i++) {
        if (n && r[i].start <= r[n - 1].end) {
            if (r[i].end > r[n - 1].end)
                r[n - 1].end = r[i].end;
        } else {
            r[n++] = r[i];
        }
    }
    for (size_t i = 0; i < n; i++)
        if (r[i].end > r[i].start)
            edits_add(l, r[i].start, r[i].end, "", 0);
    free(r);
}

/* A line's start, length and leading blanks; false when nothing follows the
 * blanks (a blank line is neither commented nor uncommented). */
static bool text_line(const piece_tree *t, size_t line, size_t *start, size_t *len, size_t *lead)
{
    *start = piece_tree_line_start(t, line);
    *len = piece_tree_line_length(t, line);
    size_t k = 0;
    while (k < *len) {
        char b = piece_tree_byte_at(t, *start + k);
        if (b != ' ' && b != '\t')
            break;
        k++;
    }
    *lead = k;
    return k < *len;
}

static bool has_token_at(const piece_tree *t, size_t at, size_t limit, const char *token, size_t tlen)
{
    if (limit - at < tlen)
        return false;
    for (size_t i = 0; i < tlen; i++)
        if (piece_tree_byte_at(t, at + i) != token[i])
            return false;
    return true;
}

static void toggle_comment(const document *doc, const line_span *spans, size_t n, const char *token, edit_list *l)
{
    const piece_tree *t = doc->tree;
    size_t tlen = strlen(token);
    bool all = true, any = false;
    size_t least = SIZE_MAX;
    for (size_t s = 0; s < n; s++) {
        for (size_t line = spans[s].first; line <= spans[s].last; line++) {
            size_t start, len, lead;
            if (!text_line(t, line, &start, &len, &lead))
                continue;
            any = true;
            if (lead < least)
                least = lead;
            if (!has_token_at(t, start + lead, start + len, token, tlen))
                all = false;
        }
    }
    if (!any)
        return;
    char *with_space = xmalloc(tlen + 2);
    memcpy(with_space, token, tlen);
    memcpy(with_space + tlen, " ", 2);
    for (size_t s = 0; s < n; s++) {
        for (size_t line = spans[s].first; line <= spans[s].last; line++) {
            size_t start, len, lead;
            if (!text_line(t, line, &start, &len, &lead))
                continue;
            if (all) {
                size_t at = start + lead, k = tlen;
                if (at + k < start + len && piece_tree_byte_at(t, at + k) == ' ')
                    k++;
                edits_add(l, at, at + k, "", 0);
            } else {
                edits_add(l, start + least, start + least, with_space, tlen + 1);
            }
        }
    }
    free(with_space);
}

int document_run_command(document_service *self, const char *document_id, uint64_t owner, document_command command,
                         uint64_t *version, ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    const char *token = NULL;
    if (command == DOCUMENT_TOGGLE_COMMENT && !(token = document_line_comment(doc->language_id)))
        return ecp_error_set(err, ECP_EINVAL, "Language '%s' has no line comment", doc->language_id);

    doc_cursor_set *mine = document__cursors_of(doc, owner);
    edit_list l = {0};
    line_span *spans = NULL;
    bool touching = command == DOCUMENT_MOVE_LINES_UP || command == DOCUMENT_MOVE_LINES_DOWN ||
                    command == DOCUMENT_DUPLICATE_LINES;
    size_t n = touched_lines(doc, mine, touching, &spans);
    line_move *moves = NULL;
    size_t moved = 0;
    doc_cursor_set *after = NULL; /* every client's cursors, when lines move */
    size_t parties = 0;
    doc_cursor_policy policy = DOC_CURSORS_FOLLOW;
    switch (command) {
    case DOCUMENT_INDENT:
    case DOCUMENT_OUTDENT:
        indent_lines(self, doc, spans, n, command == DOCUMENT_OUTDENT, &l);
        break;
    case DOCUMENT_NEWLINE:
        newline_at_cursors(self, doc, mine, &l);
        policy = DOC_CURSORS_EACH_END;
        break;
    case DOCUMENT_DUPLICATE_LINES:
        duplicate_lines(doc, spans, n, &l);
        break;
    case DOCUMENT_MOVE_LINES_UP:
    case DOCUMENT_MOVE_LINES_DOWN:
        moves = xmalloc((n ? n : 1) * sizeof *moves);
        moved = move_lines(doc, spans, n, command == DOCUMENT_MOVE_LINES_UP, moves, &l);
        parties = doc->party_count;
        after = cursors_after_move(doc, owner, moves, moved);
        break;
    case DOCUMENT_DELETE_WORD_LEFT:
    case DOCUMENT_DELETE_WORD_RIGHT:
        delete_words(doc, mine, command == DOCUMENT_DELETE_WORD_LEFT, &l);
        break;
    case DOCUMENT_TOGGLE_COMMENT:
        toggle_comment(doc, spans, n, token, &l);
        break;
    }
    uint64_t version_before = doc->version;
    int rc = edits_apply(self, doc, owner, &l, policy, version, err);
    /* an edit adds no party: after[] still matches doc->parties[] */
    if (rc == 0 && after && doc->version != version_before && parties == doc->party_count)
        place_moved(doc, owner, after);
    for (size_t p = 0; p < parties; p++)
        document__cursors_free(&after[p]);
    free(after);
    free(moves);
    edits_free(&l);
    free(spans);
    return rc;
}

document_indent document__indent(document_service *svc, document *doc)
{
    const document_format *format = document__format(svc, doc);
    if (format->has_indent)
        return format->indent;
    /* Each Enter and each document/info asks. One edit seldom changes a
     * file's indent style, so the scan is repeated only after one edit per 64
     * lines it reads: at most 64 lines scanned per edit, amortised, however
     * large the document and however often it is asked. */
    uint64_t edits_since = doc->version - doc->detected_version;
    if (doc->detected_version == 0 || (edits_since > 0 && edits_since >= 1 + doc->detected_lines / 64)) {
        size_t count = piece_tree_line_count(doc->tree);
        doc->detected = document__detect_indent(doc);
        doc->detected_version = doc->version;
        doc->detected_lines = count < DOCUMENT_INDENT_SCAN_LINES ? count : DOCUMENT_INDENT_SCAN_LINES;
    }
    return doc->detected;
}
