/* cursor: multi-cursors and selections as byte offsets.
 *
 * Cursors live as offsets so that following an edit is arithmetic; they turn
 * into {line, column} only when a client asks. The primary cursor is always
 * items[0] and survives every merge.
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "internal.h"

/* Lines moved by a page up or down. */
#define PAGE_LINES 20

void document__cursors_init(doc_cursor_set *set)
{
    set->items = xmalloc(sizeof *set->items);
    set->cap = 1;
    set->count = 1;
    set->items[0] = (doc_cursor){0, 0, DOC_NO_DESIRED};
}

void document__cursors_free(doc_cursor_set *set)
{
    free(set->items);
    memset(set, 0, sizeof *set);
}

static void reserve(doc_cursor_set *set, size_t n)
{
    if (n <= set->cap)
        return;
    size_t cap = set->cap ? set->cap : 1;
    while (cap < n)
        cap *= 2;
    set->items = xrealloc(set->items, cap * sizeof *set->items);
    set->cap = cap;
}

void document__cursors_copy(doc_cursor_set *dst, const doc_cursor_set *src)
{
    dst->items = NULL;
    dst->cap = 0;
    reserve(dst, src->count);
    memcpy(dst->items, src->items, src->count * sizeof *src->items);
    dst->count = src->count;
}

void document__cursors_reset(doc_cursor_set *set, size_t anchor, size_t active)
{
    reserve(set, 1);
    set->count = 1;
    set->items[0] = (doc_cursor){anchor, active, DOC_NO_DESIRED};
}

void document__cursors_push(doc_cursor_set *set, size_t anchor, size_t active, size_t desired)
{
    reserve(set, set->count + 1);
    set->items[set->count++] = (doc_cursor){anchor, active, desired};
}

static size_t shift_one(size_t p, size_t offset, size_t deleted, size_t inserted)
{
    if (p < offset)
        return p;
    if (p == offset)
        return deleted == 0 ? p + inserted : p;
    if (p < offset + deleted)
        return offset + inserted; /* inside replaced text: after its replacement */
    return p - deleted + inserted;
}

void document__cursors_shift(doc_cursor_set *set, size_t offset, size_t deleted, size_t inserted)
{
    for (size_t i = 0; i < set->count; i++) {
        doc_cursor *c = &set->items[i];
        c->anchor = shift_one(c->anchor, offset, deleted, inserted);
        c->active = shift_one(c->active, offset, deleted, inserted);
    }
}

/* ----- parties: one set of cursors per client --------------------------------- */

doc_party *document__party(const document *doc, uint64_t owner)
{
    for (size_t i = 0; i < doc->party_count; i++)
        if (doc->parties[i]->owner == owner)
            return doc->parties[i];
    return NULL;
}

doc_cursor_set *document__cursors_of(document *doc, uint64_t owner)
{
    doc_party *party = document__party(doc, owner);
    if (party)
        return &party->cursors;
    if (doc->party_count == doc->party_cap) {
        doc->party_cap = doc->party_cap ? doc->party_cap * 2 : 4;
        doc->parties = xrealloc(doc->parties, doc->party_cap * sizeof *doc->parties);
    }
    party = xcalloc(1, sizeof *party);
    party->owner = owner;
    document__cursors_init(&party->cursors);
    doc->parties[doc->party_count++] = party;
    return &party->cursors;
}

void document__party_drop(document *doc, uint64_t owner)
{
    for (size_t i = 0; i < doc->party_count; i++) {
        if (doc->parties[i]->owner != owner)
            continue;
        document__cursors_free(&doc->parties[i]->cursors);
        free(doc->parties[i]);
        memmove(doc->parties + i, doc->parties + i + 1, (doc->party_count - i - 1) * sizeof *doc->parties);
        doc->party_count--;
        return;
    }
}

void document__parties_free(document *doc)
{
    for (size_t i = 0; i < doc->party_count; i++) {
        document__cursors_free(&doc->parties[i]->cursors);
        free(doc->parties[i]);
    }
    free(doc->parties);
    doc->parties = NULL;
    doc->party_count = doc->party_cap = 0;
}

typedef struct span {
    size_t lo, hi, index;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi)
        return x->hi < y->hi ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int index_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

void document__cursors_normalize(doc_cursor_set *set, size_t length)
{
    for (size_t i = 0; i < set->count; i++) {
        doc_cursor *c = &set->items[i];
        if (c->anchor > length)
            c->anchor = length;
        if (c->active > length)
            c->active = length;
    }
    if (set->count < 2)
        return;
    span *spans = xmalloc(set->count * sizeof *spans);
    for (size_t i = 0; i < set->count; i++) {
        doc_cursor *c = &set->items[i];
        spans[i] = (span){c->anchor < c->active ? c->anchor : c->active, c->anchor < c->active ? c->active : c->anchor,
                          i};
    }
    qsort(spans, set->count, sizeof *spans, span_cmp);
    /* Sweep: a group absorbs the next span when they overlap, or touch with
     * one of them empty (a caret at a selection's edge belongs to it). */
    size_t groups = 0;
    for (size_t i = 0; i < set->count; i++) {
        span s = spans[i];
        if (groups) {
            span *g = &spans[groups - 1];
            bool merge = s.lo < g->hi || (s.lo == g->hi && (s.lo == s.hi || g->lo == g->hi));
            if (merge) {
                if (s.hi > g->hi)
                    g->hi = s.hi;
                if (s.index < g->index)
                    g->index = s.index;
                continue;
            }
        }
        spans[groups++] = s;
    }
    if (groups < set->count) {
        qsort(spans, groups, sizeof *spans, index_cmp);
        doc_cursor *out = xmalloc(groups * sizeof *out);
        for (size_t i = 0; i < groups; i++) {
            const doc_cursor *keep = &set->items[spans[i].index];
            bool reversed = keep->active < keep->anchor;
            out[i].anchor = reversed ? spans[i].hi : spans[i].lo;
            out[i].active = reversed ? spans[i].lo : spans[i].hi;
            out[i].desired = keep->desired;
        }
        memcpy(set->items, out, groups * sizeof *out);
        set->count = groups;
        free(out);
    }
    free(spans);
}

/* ----- movement --------------------------------------------------------------- */

/* Characters are extended grapheme clusters (UAX #29, through utf8proc):
 * a caret never stands inside 👍🏽, a ZWJ family or e + U+0301. Clusters are
 * found in a window of this many bytes around the caret, so a pathological
 * one (thousands of combining marks) is cut into pieces of about this size
 * rather than scanned whole. */
#define GRAPHEME_SPAN ((size_t)256)

/* One code point of s[0, n): its length, and U+FFFD for a byte that starts
 * no valid sequence (which is then one character on its own). */
static size_t decode_cp(const unsigned char *s, size_t n, utf8proc_int32_t *cp)
{
    utf8proc_ssize_t k = utf8proc_iterate(s, (utf8proc_ssize_t)n, cp);
    if (k <= 0) {
        *cp = 0xFFFD;
        return 1;
    }
    return (size_t)k;
}

/* Where the cluster that starts at `at` (a boundary) ends, within s[0, n). */
static size_t cluster_end(const unsigned char *s, size_t n, size_t at)
{
    utf8proc_int32_t prev, cp, state = 0;
    at += decode_cp(s + at, n - at, &prev);
    while (at < n) {
        size_t k = decode_cp(s + at, n - at, &cp);
        if (utf8proc_grapheme_break_stateful(prev, cp, &state))
            break;
        prev = cp;
        at += k;
    }
    return at;
}

/* The first code point start at or after s[0] (past at most 3 continuation bytes). */
static size_t align_start(const unsigned char *s, size_t n)
{
    size_t b = 0;
    while (b < n && b < 3 && (s[b] & 0xC0) == 0x80)
        b++;
    return b;
}

static size_t next_char(const piece_tree *t, size_t p)
{
    size_t length = piece_tree_length(t);
    if (p >= length)
        return length;
    unsigned char bytes[GRAPHEME_SPAN];
    size_t n = length - p < GRAPHEME_SPAN ? length - p : GRAPHEME_SPAN;
    piece_tree_copy(t, p, n, (char *)bytes);
    return p + cluster_end(bytes, n, 0);
}

/* The start of the cluster that holds offset `at` inside [from, to), from
 * being a line start (cut: a window's start, maybe inside a character). */
static size_t cluster_start(const piece_tree *t, size_t from, size_t to, size_t at, bool cut)
{
    unsigned char bytes[2 * GRAPHEME_SPAN];
    size_t n = to - from;
    piece_tree_copy(t, from, n, (char *)bytes);
    size_t b = cut ? align_start(bytes, n) : 0;
    while (b < n) {
        size_t e = cluster_end(bytes, n, b);
        if (from + e > at)
            return from + b;
        b = e;
    }
    return from + b;
}

static size_t prev_char(const piece_tree *t, size_t p)
{
    if (p == 0)
        return 0;
    size_t line_start = piece_tree_line_start(t, piece_tree_line_of_offset(t, p - 1));
    size_t from = p - line_start > GRAPHEME_SPAN ? p - GRAPHEME_SPAN : line_start;
    return cluster_start(t, from, p, p - 1, from != line_start);
}

size_t document__snap_to_character(const piece_tree *t, size_t p)
{
    size_t length = piece_tree_length(t);
    if (p == 0 || p >= length)
        return p;
    size_t line = piece_tree_line_of_offset(t, p);
    size_t line_start = piece_tree_line_start(t, line);
    if (p == line_start)
        return p;
    size_t line_end = line_start + piece_tree_line_length(t, line);
    size_t from = p - line_start > GRAPHEME_SPAN ? p - GRAPHEME_SPAN : line_start;
    size_t to = line_end - p > GRAPHEME_SPAN ? p + GRAPHEME_SPAN : line_end;
    return cluster_start(t, from, to, p, from != line_start);
}

static bool word_byte_at(const piece_tree *t, size_t p)
{
    return document__is_word_byte((unsigned char)piece_tree_byte_at(t, p));
}

size_t document__word_right(const piece_tree *t, size_t p)
{
    size_t line = piece_tree_line_of_offset(t, p);
    size_t end = piece_tree_line_start(t, line) + piece_tree_line_length(t, line);
    if (p == end)
        return p < piece_tree_length(t) ? p + 1 : p;
    while (p < end && !word_byte_at(t, p))
        p++;
    while (p < end && word_byte_at(t, p))
        p++;
    return p;
}

size_t document__word_left(const piece_tree *t, size_t p)
{
    size_t line = piece_tree_line_of_offset(t, p);
    size_t start = piece_tree_line_start(t, line);
    if (p == start)
        return p > 0 ? p - 1 : 0;
    while (p > start && !word_byte_at(t, p - 1))
        p--;
    while (p > start && word_byte_at(t, p - 1))
        p--;
    return p;
}

/* Moves p by `lines` lines (negative: up), aiming at code-point column
 * *desired (set from p when it has none). */
static size_t vertical(const document *doc, size_t p, long lines, size_t *desired)
{
    const piece_tree *t = doc->tree;
    size_t line = piece_tree_line_of_offset(t, p);
    size_t start = piece_tree_line_start(t, line);
    if (*desired == DOC_NO_DESIRED)
        *desired = document__line_units(doc, start, p).u32;
    size_t count = piece_tree_line_count(t);
    size_t target;
    if (lines < 0)
        target = (size_t)-lines > line ? 0 : line - (size_t)-lines;
    else
        target = (size_t)lines > count - 1 - line ? count - 1 : line + (size_t)lines;
    if (target == line)
        /* Already on the first (last) line: go to its start (end). */
        return lines < 0 ? start : start + piece_tree_line_length(t, line);
    size_t tstart = piece_tree_line_start(t, target);
    size_t tend = tstart + piece_tree_line_length(t, target);
    size_t out;
    if (!document__line_seek(doc, tstart, tend - tstart, *desired, ECP_ENCODING_UTF32, &out))
        out = tend;
    return out;
}

int document__cursors_move(document *doc, doc_cursor_set *set, document_direction dir, document_unit unit,
                           bool select)
{
    const piece_tree *t = doc->tree;
    size_t length = piece_tree_length(t);
    bool horizontal = dir == DOCUMENT_LEFT || dir == DOCUMENT_RIGHT;
    for (size_t i = 0; i < set->count; i++) {
        doc_cursor *c = &set->items[i];
        size_t p = c->active;
        size_t desired = c->desired;
        if (horizontal) {
            desired = DOC_NO_DESIRED;
            if (!select && c->anchor != c->active && unit == DOCUMENT_BY_CHARACTER) {
                /* Left/right on a selection collapses it to that side. */
                size_t lo = c->anchor < c->active ? c->anchor : c->active;
                size_t hi = c->anchor < c->active ? c->active : c->anchor;
                p = dir == DOCUMENT_LEFT ? lo : hi;
            } else {
                switch (unit) {
                case DOCUMENT_BY_CHARACTER:
                    p = dir == DOCUMENT_LEFT ? prev_char(t, p) : next_char(t, p);
                    break;
                case DOCUMENT_BY_WORD:
                    p = dir == DOCUMENT_LEFT ? document__word_left(t, p) : document__word_right(t, p);
                    break;
                case DOCUMENT_BY_LINE:
                case DOCUMENT_BY_PAGE: {
                    size_t line = piece_tree_line_of_offset(t, p);
                    size_t start = piece_tree_line_start(t, line);
                    p = dir == DOCUMENT_LEFT ? start : start + piece_tree_line_length(t, line);
                    break;
                }
                case DOCUMENT_BY_DOCUMENT:
                    p = dir == DOCUMENT_LEFT ? 0 : length;
                    break;
                }
            }
        } else if (unit == DOCUMENT_BY_DOCUMENT) {
            desired = DOC_NO_DESIRED;
            p = dir == DOCUMENT_UP ? 0 : length;
        } else {
            long lines = unit == DOCUMENT_BY_PAGE ? PAGE_LINES : 1;
            p = vertical(doc, p, dir == DOCUMENT_UP ? -lines : lines, &desired);
        }
        c->active = p;
        if (!select)
            c->anchor = p;
        c->desired = desired;
    }
    document__cursors_normalize(set, length);
    return 0;
}

/* ----- the public cursor functions ---------------------------------------------- */

/* A desired column is kept in code points; a client sees it in its units.
 * Past the end of the line every extra column is one unit in any encoding. */
static size_t desired_to_enc(const document *doc, size_t active, size_t desired, ecp_position_encoding enc)
{
    if (enc == ECP_ENCODING_UTF32)
        return desired;
    size_t line = piece_tree_line_of_offset(doc->tree, active);
    size_t start = piece_tree_line_start(doc->tree, line);
    size_t end = start + piece_tree_line_length(doc->tree, line);
    size_t at;
    if (document__line_seek(doc, start, end - start, desired, ECP_ENCODING_UTF32, &at)) {
        doc_units before = document__line_units(doc, start, at);
        return doc_units_get(&before, enc);
    }
    doc_units all = document__line_units(doc, start, end);
    return doc_units_get(&all, enc) + (desired - all.u32);
}

static size_t desired_from_enc(const document *doc, size_t active, size_t column, ecp_position_encoding enc)
{
    if (enc == ECP_ENCODING_UTF32)
        return column;
    size_t line = piece_tree_line_of_offset(doc->tree, active);
    size_t start = piece_tree_line_start(doc->tree, line);
    size_t end = start + piece_tree_line_length(doc->tree, line);
    size_t at;
    if (document__line_seek(doc, start, end - start, column, enc, &at))
        return document__line_units(doc, start, at).u32;
    doc_units all = document__line_units(doc, start, end);
    return all.u32 + (column - doc_units_get(&all, enc));
}

int document_get_cursors(document_service *self, const char *document_id, uint64_t owner, ecp_position_encoding enc,
                         document_cursor **out, size_t *count, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    /* a client that never moved its cursors here has its caret at the start */
    doc_party *party = document__party(doc, owner);
    doc_cursor start = {0, 0, DOC_NO_DESIRED};
    const doc_cursor_set *mine = party ? &party->cursors : &(doc_cursor_set){&start, 1, 1};
    document_cursor *list = xmalloc(mine->count * sizeof *list);
    for (size_t i = 0; i < mine->count; i++) {
        const doc_cursor *c = &mine->items[i];
        document__position_of(doc, c->active, enc, &list[i].active);
        if (c->anchor == c->active)
            list[i].anchor = list[i].active;
        else
            document__position_of(doc, c->anchor, enc, &list[i].anchor);
        list[i].has_desired_column = c->desired != DOC_NO_DESIRED;
        list[i].desired_column = list[i].has_desired_column ? desired_to_enc(doc, c->active, c->desired, enc) : 0;
    }
    *out = list;
    *count = mine->count;
    return 0;
}

int document_set_cursors(document_service *self, const char *document_id, uint64_t owner,
                         const document_cursor *cursors, size_t count, ecp_position_encoding enc, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    if (count == 0)
        return ecp_error_set(err, ECP_EINVAL, "At least one cursor is required");
    if (count > DOC_MAX_CURSORS)
        return ecp_error_set(err, ECP_EINVAL, "cursors: at most %zu, got %zu", DOC_MAX_CURSORS, count);
    doc_cursor_set set = {0};
    for (size_t i = 0; i < count; i++) {
        size_t anchor, active;
        int rc;
        if ((rc = document__offset_of(doc, &cursors[i].active, enc, &active, err)) != 0 ||
            (rc = document__offset_of(doc, &cursors[i].anchor, enc, &anchor, err)) != 0) {
            document__cursors_free(&set);
            return rc;
        }
        /* a position inside a character (a grapheme cluster) is its start */
        active = document__snap_to_character(doc->tree, active);
        anchor = document__snap_to_character(doc->tree, anchor);
        size_t desired = cursors[i].has_desired_column
                             ? desired_from_enc(doc, active, cursors[i].desired_column, enc)
                             : DOC_NO_DESIRED;
        document__cursors_push(&set, anchor, active, desired);
    }
    document__cursors_free(mine);
    *mine = set;
    document__cursors_normalize(mine, piece_tree_length(doc->tree));
    document__emit_cursors(self, doc, owner);
    return 0;
}

int document_add_cursor(document_service *self, const char *document_id, uint64_t owner, const document_position *pos,
                        ecp_position_encoding enc, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    size_t at;
    int rc = document__offset_of(doc, pos, enc, &at, err);
    if (rc != 0)
        return rc;
    at = document__snap_to_character(doc->tree, at);
    if (mine->count >= DOC_MAX_CURSORS)
        return ecp_error_set(err, ECP_EINVAL, "Too many cursors: at most %zu", DOC_MAX_CURSORS);
    document__cursors_push(mine, at, at, DOC_NO_DESIRED);
    document__cursors_normalize(mine, piece_tree_length(doc->tree));
    document__emit_cursors(self, doc, owner);
    return 0;
}

int document_move_cursors(document_service *self, const char *document_id, uint64_t owner, document_direction dir,
                          document_unit unit, bool select, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    document__cursors_move(doc, mine, dir, unit, select);
    document__emit_cursors(self, doc, owner);
    return 0;
}

int document_select_all(document_service *self, const char *document_id, uint64_t owner, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    document__cursors_reset(mine, 0, piece_tree_length(doc->tree));
    document__emit_cursors(self, doc, owner);
    return 0;
}

int document_clear_selections(document_service *self, const char *document_id, uint64_t owner, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    for (size_t i = 0; i < mine->count; i++)
        mine->items[i].anchor = mine->items[i].active;
    document__cursors_normalize(mine, piece_tree_length(doc->tree));
    document__emit_cursors(self, doc, owner);
    return 0;
}

int document_read_selection(document_service *self, const char *document_id, uint64_t owner, size_t index,
                            document_chunk_fn fn, void *ctx, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    /* a client that never moved its cursors here has its caret at the start */
    doc_party *party = document__party(doc, owner);
    doc_cursor start = {0, 0, DOC_NO_DESIRED};
    const doc_cursor_set *mine = party ? &party->cursors : &(doc_cursor_set){&start, 1, 1};
    if (index >= mine->count)
        return ecp_error_set(err, ECP_ERANGE, "No cursor %zu (the document has %zu)", index, mine->count);
    const doc_cursor *c = &mine->items[index];
    size_t lo = c->anchor < c->active ? c->anchor : c->active;
    size_t hi = c->anchor < c->active ? c->active : c->anchor;
    document__read_bytes(doc->tree, lo, hi - lo, fn, ctx);
    return 0;
}
