/* text: columns, offsets and words over a piece tree.
 *
 * Columns are counted by decoding from the start of the line with core/utf's
 * rules (an invalid byte is one U+FFFD), so they agree with utf_column_count
 * and with what the JSON writer sends. The tree hands out its bytes in chunks
 * that may split a multi-byte sequence; the scanner below never decodes a lead
 * byte without its whole sequence in view, carrying up to three bytes over a
 * chunk seam.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How far apart document offset checkpoints are laid down (bytes). */
#define CHECKPOINT_SPACING (1u << 20)
/* Spans of a line shorter than this are decoded whole, every time. */
#define LONG_LINE ((size_t)64 << 10)
/* How far apart marks inside a long line lie (bytes): the most a column
 * conversion on it decodes, once the line is marked. */
#define MARK_SPACING ((size_t)8 << 10)
/* The longest slice a marking scan decodes before it may lay a mark. */
#define SCAN_SLICE (MARK_SPACING / 4)
/* Long lines whose marks are kept, the least recently converted going. */
#define MARKED_LINES 4

typedef struct scan {
    doc_units n;                /* consumed so far (plus the starting point) */
    ecp_position_encoding enc;  /* the encoding `stop` counts in */
    size_t stop;                /* SIZE_MAX: count everything */
    bool stopped;
    void (*mark)(void *ctx, const struct scan *s);
    void *mark_ctx;
} scan;

static inline size_t scan_units(const scan *s) { return doc_units_get(&s->n, s->enc); }

static inline bool scan_reached(scan *s)
{
    if (s->stop != SIZE_MAX && scan_units(s) >= s->stop)
        s->stopped = true;
    return s->stopped;
}

/* Consumes whole code points from p; returns the bytes consumed. Unless final,
 * a non-ASCII lead byte with fewer than four bytes after it is left for the
 * next call, which will see the rest of its sequence. */
static size_t scan_block(scan *s, const char *p, size_t len, bool final)
{
    size_t i = 0;
    while (i < len) {
        if (scan_reached(s))
            return i;
        unsigned char c = (unsigned char)p[i];
        if (c < 0x80) {
            size_t j = i + 1;
            while (j + 8 <= len) {
                uint64_t w;
                memcpy(&w, p + j, 8);
                if (w & 0x8080808080808080ull)
                    break;
                j += 8;
            }
            while (j < len && (unsigned char)p[j] < 0x80)
                j++;
            size_t run = j - i;
            if (s->stop != SIZE_MAX && run > s->stop - scan_units(s))
                run = s->stop - scan_units(s);
            s->n.u8 += run;
            s->n.u16 += run;
            s->n.u32 += run;
            i += run;
            continue;
        }
        if (!final && len - i < 4)
            break;
        uint32_t cp;
        size_t k = utf8_decode(p + i, len - i, &cp);
        size_t w16 = cp >= 0x10000 ? 2 : 1;
        if (s->stop != SIZE_MAX) {
            size_t w = s->enc == ECP_ENCODING_UTF8 ? k : s->enc == ECP_ENCODING_UTF16 ? w16 : 1;
            if (scan_units(s) + w > s->stop) {
                s->stopped = true; /* the column is inside this code point: snap back */
                return i;
            }
        }
        s->n.u8 += k;
        s->n.u16 += w16;
        s->n.u32 += 1;
        i += k;
    }
    scan_reached(s);
    return i;
}

/* Hands out the bytes to scan in order; false once there are no more. */
typedef bool (*scan_next_fn)(void *reader, const char **chunk, size_t *len);

static void scan_chunks(scan *s, scan_next_fn next, void *reader)
{
    char carry[8];
    size_t nc = 0;
    const char *p;
    size_t n;
    while (next(reader, &p, &n)) {
        /* Finish a sequence split over the seam one byte at a time: at most
         * three rounds per chunk. */
        while (nc && n) {
            carry[nc++] = *p++;
            n--;
            size_t used = scan_block(s, carry, nc, false);
            if (s->stopped)
                return;
            memmove(carry, carry + used, nc - used);
            nc -= used;
        }
        /* A scan that lays marks takes a long chunk (a large insert is
         * one piece) in slices, so that the marks lie close enough. */
        while (n) {
            size_t take = s->mark && n > SCAN_SLICE ? SCAN_SLICE : n;
            size_t used = scan_block(s, p, take, false);
            if (s->stopped)
                return;
            if (take < n) { /* what the slice left at its end, the next one reads */
                p += used;
                n -= used;
            } else {
                nc = n - used;
                memcpy(carry, p + used, nc);
                n = 0;
            }
            if (s->mark)
                s->mark(s->mark_ctx, s);
        }
    }
    if (nc)
        scan_block(s, carry, nc, true);
}

static bool tree_next(void *reader, const char **chunk, size_t *len)
{
    return piece_tree_reader_next(reader, chunk, len);
}

static bool snapshot_next(void *reader, const char **chunk, size_t *len)
{
    return piece_tree_snapshot_reader_next(reader, chunk, len);
}

static void scan_range(const piece_tree *tree, size_t from, size_t len, scan *s)
{
    if (scan_reached(s) || len == 0)
        return;
    piece_tree_reader r;
    piece_tree_reader_init(&r, tree, from, len);
    scan_chunks(s, tree_next, &r);
}

static void scan_init(scan *s, ecp_position_encoding enc, size_t stop)
{
    memset(s, 0, sizeof *s);
    s->enc = enc;
    s->stop = stop;
}

doc_units document__units(const piece_tree *tree, size_t from, size_t len)
{
    scan s;
    scan_init(&s, ECP_ENCODING_UTF8, SIZE_MAX);
    scan_range(tree, from, len, &s);
    return s.n;
}

doc_units document__snapshot_units(const piece_tree_snapshot *snap, size_t from, size_t len)
{
    scan s;
    scan_init(&s, ECP_ENCODING_UTF8, SIZE_MAX);
    if (len) {
        piece_tree_snapshot_reader r;
        piece_tree_snapshot_reader_init(&r, snap, from, len);
        scan_chunks(&s, snapshot_next, &r);
    }
    return s.n;
}

doc_units document__units_of(const char *p, size_t len)
{
    scan s;
    scan_init(&s, ECP_ENCODING_UTF8, SIZE_MAX);
    scan_block(&s, p, len, true);
    return s.n;
}

/* Like document__seek, and reports the units the span holds when it falls
 * short. */
static bool seek(const piece_tree *tree, size_t from, size_t limit, size_t column, ecp_position_encoding enc,
                 size_t *out, size_t *units_in_span)
{
    scan s;
    scan_init(&s, enc, column);
    scan_range(tree, from, limit - from, &s);
    *out = from + s.n.u8;
    if (units_in_span)
        *units_in_span = scan_units(&s);
    return s.stopped;
}

bool document__seek(const piece_tree *tree, size_t from, size_t limit, size_t column, ecp_position_encoding enc,
                    size_t *out)
{
    return seek(tree, from, limit, column, enc, out, NULL);
}

/* ----- marks inside long lines ---------------------------------------------- */

static void checkpoint_insert(doc_checkpoint **list, size_t *count, size_t *cap, doc_units n, size_t spacing);
static void start_at_checkpoint(const doc_checkpoint *list, size_t count, size_t v, ecp_position_encoding enc,
                                scan *s);

/* Units from `start`, the first byte of a line, to points inside it; the
 * marks' bytes count from start. */
typedef struct line_marks {
    size_t start; /* SIZE_MAX: unused */
    doc_checkpoint *marks;
    size_t count;
    size_t cap;
    uint64_t used; /* when last converted in, for replacing the least recent */
} line_marks;

struct doc_columns {
    line_marks lines[MARKED_LINES];
    uint64_t clock;
};

doc_columns *document__columns_new(void)
{
    doc_columns *cols = xcalloc(1, sizeof *cols);
    for (size_t i = 0; i < MARKED_LINES; i++)
        cols->lines[i].start = SIZE_MAX;
    return cols;
}

void document__columns_free(doc_columns *cols)
{
    if (!cols)
        return;
    for (size_t i = 0; i < MARKED_LINES; i++)
        free(cols->lines[i].marks);
    free(cols);
}

void document__columns_clear(doc_columns *cols)
{
    for (size_t i = 0; i < MARKED_LINES; i++) {
        cols->lines[i].start = SIZE_MAX;
        cols->lines[i].count = 0;
    }
}

static line_marks *marks_of_line(doc_columns *cols, size_t start)
{
    line_marks *victim = &cols->lines[0];
    for (size_t i = 0; i < MARKED_LINES; i++) {
        line_marks *m = &cols->lines[i];
        if (m->start == start) {
            m->used = ++cols->clock;
            return m;
        }
        if (m->used < victim->used)
            victim = m;
    }
    victim->start = start;
    victim->count = 0;
    victim->used = ++cols->clock;
    return victim;
}

static void line_mark_add(void *ctx, const scan *s)
{
    line_marks *m = ctx;
    checkpoint_insert(&m->marks, &m->count, &m->cap, s->n, MARK_SPACING);
}

/* Scans the long line that starts at start and holds len bytes, from its
 * last mark at or before v (in enc), leaving marks behind for the next
 * conversion; stop is scan_init's. */
static void scan_long_line(const document *doc, size_t start, size_t len, ecp_position_encoding enc, size_t v,
                           size_t stop, scan *s)
{
    line_marks *m = marks_of_line(doc->columns, start);
    scan_init(s, enc, stop);
    start_at_checkpoint(m->marks, m->count, v, enc, s);
    s->mark = line_mark_add;
    s->mark_ctx = m;
    scan_range(doc->tree, start + s->n.u8, len - s->n.u8, s);
}

doc_units document__line_units(const document *doc, size_t line_start, size_t offset)
{
    size_t len = offset - line_start;
    if (len < LONG_LINE)
        return document__units(doc->tree, line_start, len);
    scan s;
    scan_long_line(doc, line_start, len, ECP_ENCODING_UTF8, len, SIZE_MAX, &s);
    return s.n;
}

/* seek() over the line that starts at start and holds len bytes. */
static bool line_seek(const document *doc, size_t start, size_t len, size_t column, ecp_position_encoding enc,
                      size_t *out, size_t *units_in_line)
{
    if (len < LONG_LINE || column == 0)
        return seek(doc->tree, start, start + len, column, enc, out, units_in_line);
    scan s;
    scan_long_line(doc, start, len, enc, column, column, &s);
    *out = start + s.n.u8;
    *units_in_line = scan_units(&s);
    return s.stopped;
}

bool document__line_seek(const document *doc, size_t line_start, size_t len, size_t column, ecp_position_encoding enc,
                         size_t *out)
{
    size_t have;
    return line_seek(doc, line_start, len, column, enc, out, &have);
}

static bool is_continuation(unsigned char c) { return (c & 0xC0) == 0x80; }

void document__columns_edit(document *doc, size_t offset, const char *del, size_t del_len, const char *ins,
                            size_t ins_len)
{
    doc_columns *cols = doc->columns;
    bool any = false;
    for (size_t i = 0; i < MARKED_LINES && !any; i++)
        any = cols->lines[i].start != SIZE_MAX;
    if (!any)
        return;
    /* Decoding is the same on both sides of the edit, and of the text it
     * puts in, when neither end of it falls inside a character: a byte
     * that is no continuation byte always starts one. */
    size_t end = offset + del_len;
    unsigned char after = end < piece_tree_length(doc->tree) ? (unsigned char)piece_tree_byte_at(doc->tree, end) : 0;
    unsigned char old_first = del_len ? (unsigned char)del[0] : after;
    unsigned char new_first = ins_len ? (unsigned char)ins[0] : after;
    bool clean = !is_continuation(after) && !is_continuation(old_first) && !is_continuation(new_first);
    bool measured = false;
    doc_units gone = {0, 0, 0}, added = {0, 0, 0};
    for (size_t i = 0; i < MARKED_LINES; i++) {
        line_marks *m = &cols->lines[i];
        if (m->start == SIZE_MAX)
            continue;
        if (offset < m->start) {
            if (end <= m->start) {
                m->start = m->start - del_len + ins_len; /* the line itself is untouched */
            } else {
                m->start = SIZE_MAX; /* its start is gone */
                m->count = 0;
            }
            continue;
        }
        size_t rel = offset - m->start, kept = 0;
        if (!clean) {
            /* Decoding up to a mark depends on the three bytes after it. */
            while (kept < m->count && m->marks[kept].byte + 4 <= rel)
                kept++;
            m->count = kept;
            continue;
        }
        if (!measured) {
            gone = document__units_of(del, del_len);
            added = document__units_of(ins, ins_len);
            measured = true;
        }
        for (size_t k = 0; k < m->count; k++) {
            doc_checkpoint c = m->marks[k];
            if (c.byte > rel) {
                if (c.byte < rel + del_len)
                    continue; /* inside what goes */
                c.byte = c.byte - gone.u8 + added.u8;
                c.u16 = c.u16 - gone.u16 + added.u16;
                c.u32 = c.u32 - gone.u32 + added.u32;
            }
            m->marks[kept++] = c;
        }
        m->count = kept;
    }
}

int document__offset_of(const document *doc, const document_position *pos, ecp_position_encoding enc, size_t *out,
                        ecp_error *err)
{
    size_t lines = piece_tree_line_count(doc->tree);
    if (pos->line >= lines) {
        if (pos->line == lines && pos->column == 0) {
            *out = piece_tree_length(doc->tree);
            return 0;
        }
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: line %zu is past the end (%zu line%s)", pos->line,
                             lines, lines == 1 ? "" : "s");
    }
    size_t start = piece_tree_line_start(doc->tree, pos->line);
    if (pos->column == 0) {
        *out = start;
        return 0;
    }
    size_t len = piece_tree_line_length(doc->tree, pos->line);
    size_t have;
    if (!line_seek(doc, start, len, pos->column, enc, out, &have))
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: column %zu is past the end of line %zu (%zu column%s)",
                             pos->column, pos->line, have, have == 1 ? "" : "s");
    return 0;
}

void document__line_column(const document *doc, size_t offset, size_t *line, doc_units *col)
{
    *line = piece_tree_line_of_offset(doc->tree, offset);
    size_t start = piece_tree_line_start(doc->tree, *line);
    *col = document__line_units(doc, start, offset);
}

void document__position_of(const document *doc, size_t offset, ecp_position_encoding enc, document_position *out)
{
    out->line = piece_tree_line_of_offset(doc->tree, offset);
    size_t start = piece_tree_line_start(doc->tree, out->line);
    if (enc == ECP_ENCODING_UTF8) {
        out->column = offset - start;
        return;
    }
    doc_units u = document__line_units(doc, start, offset);
    out->column = doc_units_get(&u, enc);
}

/* ----- document offsets in units, with checkpoints -------------------------- */

/* Keeps n in the sorted list unless a neighbour lies closer than spacing. */
static void checkpoint_insert(doc_checkpoint **list, size_t *count, size_t *cap, doc_units n, size_t spacing)
{
    size_t lo = 0, hi = *count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if ((*list)[mid].byte < n.u8)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t prev = lo ? (*list)[lo - 1].byte : 0;
    size_t next = lo < *count ? (*list)[lo].byte : SIZE_MAX;
    if (n.u8 - prev < spacing || next - n.u8 < spacing)
        return;
    if (*count == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *list = xrealloc(*list, *cap * sizeof **list);
    }
    memmove(*list + lo + 1, *list + lo, (*count - lo) * sizeof **list);
    (*list)[lo] = (doc_checkpoint){n.u8, n.u16, n.u32};
    (*count)++;
}

static void checkpoint_add(void *ctx, const scan *s)
{
    document *doc = ctx;
    checkpoint_insert(&doc->checkpoints, &doc->checkpoint_count, &doc->checkpoint_cap, s->n, CHECKPOINT_SPACING);
}

static size_t checkpoint_units(const doc_checkpoint *c, ecp_position_encoding enc)
{
    return enc == ECP_ENCODING_UTF8 ? c->byte : enc == ECP_ENCODING_UTF16 ? c->u16 : c->u32;
}

/* Starts s at the last of list whose value in enc is <= v. */
static void start_at_checkpoint(const doc_checkpoint *list, size_t count, size_t v, ecp_position_encoding enc, scan *s)
{
    size_t lo = 0, hi = count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (checkpoint_units(&list[mid], enc) <= v)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo) {
        const doc_checkpoint *c = &list[lo - 1];
        s->n = (doc_units){c->byte, c->u16, c->u32};
    }
}

/* Scans the text up to byte end, in enc until stop (scan_init's), from the
 * last checkpoint whose value in v_enc is <= v, leaving checkpoints behind. */
static void scan_from_checkpoint(document *doc, size_t v, ecp_position_encoding v_enc, ecp_position_encoding enc,
                                 size_t stop, size_t end, scan *s)
{
    scan_init(s, enc, stop);
    start_at_checkpoint(doc->checkpoints, doc->checkpoint_count, v, v_enc, s);
    s->mark = checkpoint_add;
    s->mark_ctx = doc;
    scan_range(doc->tree, s->n.u8, end - s->n.u8, s);
}

void document__checkpoints_invalidate(document *doc, size_t offset)
{
    /* Decoding up to a checkpoint depends on the three bytes after it too (a
     * lead byte just before it may combine with them). */
    while (doc->checkpoint_count && doc->checkpoints[doc->checkpoint_count - 1].byte + 4 > offset)
        doc->checkpoint_count--;
}

size_t document__units_before(document *doc, size_t offset, ecp_position_encoding enc)
{
    if (enc == ECP_ENCODING_UTF8)
        return offset;
    scan s;
    scan_from_checkpoint(doc, offset, ECP_ENCODING_UTF8, enc, SIZE_MAX, offset, &s);
    return scan_units(&s);
}

bool document__offset_at_units(document *doc, size_t units, ecp_position_encoding enc, size_t *out)
{
    size_t length = piece_tree_length(doc->tree);
    if (enc == ECP_ENCODING_UTF8) {
        if (units > length)
            return false;
        /* A byte inside a sequence snaps back to its start, as columns do. */
        size_t line = piece_tree_line_of_offset(doc->tree, units);
        size_t start, len;
        piece_tree_line_range(doc->tree, line, &start, &len);
        return document__seek(doc->tree, start, start + len, units - start, enc, out);
    }
    scan s;
    scan_from_checkpoint(doc, units, enc, enc, units, length, &s);
    *out = s.n.u8;
    return s.stopped;
}

/* ----- words ---------------------------------------------------------------- */

bool document__is_word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool document__word_at(const document *doc, size_t offset, size_t *start, size_t *end)
{
    size_t length = piece_tree_length(doc->tree);
    if (offset >= length || !document__is_word_byte((unsigned char)piece_tree_byte_at(doc->tree, offset)))
        return false;
    /* A "word" longer than any identifier (a 30 MB run of letters) is not
     * one: the scan stops at the bound, whatever the document holds. */
    size_t s = offset, e = offset + 1;
    size_t floor = offset > DOCUMENT_WORD_MAX ? offset - DOCUMENT_WORD_MAX : 0;
    size_t ceiling = length - offset > DOCUMENT_WORD_MAX ? offset + DOCUMENT_WORD_MAX : length;
    while (s > floor && document__is_word_byte((unsigned char)piece_tree_byte_at(doc->tree, s - 1)))
        s--;
    while (e < ceiling && document__is_word_byte((unsigned char)piece_tree_byte_at(doc->tree, e)))
        e++;
    if ((s == floor && s > 0 && document__is_word_byte((unsigned char)piece_tree_byte_at(doc->tree, s - 1))) ||
        (e == ceiling && e < length && document__is_word_byte((unsigned char)piece_tree_byte_at(doc->tree, e))))
        return false;
    *start = s;
    *end = e;
    return true;
}
