/* edit: changing text, and the undo history that remembers how.
 *
 * Every change to a document goes through run(): a list of primitive
 * replacements applied in order, each described (in every encoding) from the
 * text just before it, so the change event can say where it happened in
 * coordinates a client can still apply. Multi-edits are applied from the last
 * to the first, which keeps every edit in the caller's original coordinates
 * and makes them valid in sequence too.
 *
 * History states have ids: the state after a step is named by the step's id,
 * which changes whenever the step grows. "Clean" is simply "the current
 * state's id is the one last written to disk", so undoing back to the saved
 * text makes the document clean without comparing any text.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The history keeps at most svc->undo_max_steps steps and undo_max_bytes
 * bytes (document__history_trim). A dropped step leaves its slot before
 * steps[0]; moving the steps back costs a move of every one of them, so it
 * waits until the free slots are at least UNDO_SLACK and half as many as
 * the steps: an edit on a full history then pays for two moves at most, not
 * for a shift of the whole array every few edits. */
#define UNDO_SLACK 64
#define TYPING_GROUP_NS (300ull * 1000 * 1000)

/* A replacement of the whole text at least this large builds a new tree
 * instead of deleting and inserting: the old tree's buffers are freed rather
 * than kept behind an add buffer that only grows (a thousand setContent
 * calls on a large document would otherwise keep every version). */
#define WHOLE_TEXT_MIN (64u << 10)

/* ----- splices ------------------------------------------------------------------ */

/* One replacement of a splice: `gap` unchanged bytes since the end of the
 * one before (since the start of the text for the first), then old_len
 * bytes replaced by new_len. The unchanged bytes are the same on both
 * sides, so the spans read either way: forward (old bytes become new) or
 * back. Splices are made only for texts under 4 GiB. */
typedef struct doc_splice_span {
    uint32_t gap;
    uint32_t old_len;
    uint32_t new_len;
} doc_splice_span;

struct doc_splice {
    size_t count;
    doc_splice_span *spans; /* in document order */
    char *olds;             /* every span's old bytes, in order */
    size_t olds_len;
    char *news;             /* and its new ones */
    size_t news_len;
};

static void splice_free(struct doc_splice *sp)
{
    if (!sp)
        return;
    free(sp->spans);
    free(sp->olds);
    free(sp->news);
    free(sp);
}

static size_t splice_bytes(const struct doc_splice *sp)
{
    return sizeof *sp + sp->count * sizeof *sp->spans + sp->olds_len + sp->news_len;
}

/* ----- history ----------------------------------------------------------------- */

void document__history_init(doc_history *h, uint64_t base_id)
{
    memset(h, 0, sizeof *h);
    h->base_id = base_id;
}

static void step_free(doc_undo_step *s)
{
    for (size_t i = 0; i < s->count; i++) {
        free(s->changes[i].deleted);
        free(s->changes[i].inserted);
        piece_tree_free(s->changes[i].other);
        free(s->changes[i].measures);
        splice_free(s->changes[i].splice);
    }
    free(s->changes);
    document__cursors_free(&s->before);
    document__cursors_free(&s->after);
    free(s->typing_ends);
    memset(s, 0, sizeof *s);
}

void document__history_free(doc_history *h)
{
    for (size_t i = 0; i < h->count; i++)
        step_free(&h->steps[i]);
    free(h->steps ? h->steps - h->dropped : NULL);
    memset(h, 0, sizeof *h);
}

static size_t changes_bytes(const doc_undo_change *c, size_t n)
{
    size_t bytes = n * sizeof *c;
    for (size_t i = 0; i < n; i++) /* a kept tree holds one of the two texts, and its pieces */
        bytes += c[i].splice  ? splice_bytes(c[i].splice)
                 : c[i].other ? piece_tree_length(c[i].other) + piece_tree_piece_count(c[i].other) * 16
                              : c[i].deleted_len + c[i].inserted_len;
    return bytes;
}

static size_t cursors_bytes(const doc_cursor_set *set) { return set->count * sizeof *set->items; }

/* Gives the slots of dropped steps back to the end of the array. */
static void compact(doc_history *h)
{
    if (!h->dropped)
        return;
    doc_undo_step *start = h->steps - h->dropped;
    memmove(start, h->steps, h->count * sizeof *h->steps);
    h->steps = start;
    h->cap += h->dropped;
    h->dropped = 0;
}

/* Drops steps [0, n) (all applied): the state below what is left is the
 * last dropped step's. */
static void drop_oldest(doc_history *h, size_t n)
{
    if (n == 0)
        return;
    h->base_id = h->steps[n - 1].id;
    for (size_t i = 0; i < n; i++) {
        h->bytes -= h->steps[i].bytes;
        step_free(&h->steps[i]);
    }
    h->steps += n;
    h->dropped += n;
    h->cap -= n;
    h->count -= n;
    h->applied -= n;
    if ((h->dropped >= UNDO_SLACK && h->dropped >= h->count / 2) || h->count == 0)
        compact(h);
}

void document__history_trim(document_service *svc, document *doc)
{
    doc_history *h = &doc->history;
    size_t limit = svc->undo_max_bytes, max_steps = svc->undo_max_steps;
    if (h->bytes <= limit && h->count <= max_steps)
        return;
    size_t n = 0, freed = 0;
    while (n < h->applied && (h->bytes - freed > limit || h->count - n > max_steps))
        freed += h->steps[n++].bytes;
    drop_oldest(h, n);
    /* Only what could be redone is left, and it is still too much. */
    while ((h->bytes > limit || h->count > max_steps) && h->count > h->applied) {
        doc_undo_step *last = &h->steps[--h->count];
        h->bytes -= last->bytes;
        step_free(last);
    }
}

uint64_t document__state_id(const document *doc)
{
    const doc_history *h = &doc->history;
    return h->applied ? h->steps[h->applied - 1].id : h->base_id;
}

bool document__can_undo(const document *doc) { return doc->history.applied > 0; }
bool document__can_redo(const document *doc) { return doc->history.applied < doc->history.count; }

/* ----- primitive replacements ------------------------------------------------------ */

typedef struct prim {
    size_t offset;
    const char *del; /* the bytes at [offset, offset + del_len) now */
    size_t del_len;
    const char *ins;
    size_t ins_len;
    /* A whole-text replacement: the tree to swap with the document's (del is
     * NULL; ins is that tree's text, flat). measure, when not NULL, is what
     * the deletion spans, measured ahead. */
    piece_tree **swap;
    const doc_whole_measure *measure;
    /* Many replacements at once: the splice, read forward (its old bytes
     * become its new ones) or back. offset is where its first one starts;
     * del and ins are unused. */
    const struct doc_splice *splice;
    bool back;
} prim;

/* Units of [from, from + len) of the tree in the encodings that change events
 * carry; with UTF-8 alone nothing is decoded (the other counts are then the
 * byte counts). */
static doc_units units_in_use(const document *doc, const piece_tree *tree, size_t from, size_t len)
{
    if (doc->svc->encodings == 1u << ECP_ENCODING_UTF8)
        return (doc_units){len, len, len};
    return document__units(tree, from, len);
}

/* The column of offset on the line that starts at line_start, the same way. */
static doc_units column_in_use(const document *doc, size_t line_start, size_t offset)
{
    if (doc->svc->encodings == 1u << ECP_ENCODING_UTF8)
        return (doc_units){offset - line_start, offset - line_start, offset - line_start};
    return document__line_units(doc, line_start, offset);
}

static doc_units units_of_in_use(const document *doc, const char *p, size_t len)
{
    if (doc->svc->encodings == 1u << ECP_ENCODING_UTF8)
        return (doc_units){len, len, len};
    return document__units_of(p, len);
}

static void set_columns(document_change_position *pos, doc_units u)
{
    pos->column[ECP_ENCODING_UTF8] = u.u8;
    pos->column[ECP_ENCODING_UTF16] = u.u16;
    pos->column[ECP_ENCODING_UTF32] = u.u32;
}

/* The whole text goes: from the start to the end of the last line. */
static void describe_whole(const document *doc, const prim *p, document_change *c)
{
    const piece_tree *tree = doc->tree;
    size_t length = piece_tree_length(tree);
    size_t last = piece_tree_line_count(tree) - 1;
    size_t last_start = piece_tree_line_start(tree, last);
    doc_units gone, tail;
    if (p->measure && p->measure->version == doc->version) {
        gone = p->measure->gone;
        tail = p->measure->tail;
    } else {
        gone = units_in_use(doc, tree, 0, length);
        tail = last ? units_in_use(doc, tree, last_start, length - last_start) : gone;
    }
    c->offset = 0;
    c->deleted_len = length;
    c->text = p->ins;
    c->text_len = p->ins_len;
    c->start.line = 0;
    set_columns(&c->start, (doc_units){0, 0, 0});
    c->end.line = last;
    set_columns(&c->end, tail);
    c->range_length[ECP_ENCODING_UTF8] = gone.u8;
    c->range_length[ECP_ENCODING_UTF16] = gone.u16;
    c->range_length[ECP_ENCODING_UTF32] = gone.u32;
}

/* After the swap that ev describes: the text that went (now c->other)
 * spans what ev says, when every encoding was measured for it, and the one
 * that came spans `came`. */
static void swap_measured(const document *doc, doc_undo_change *c, const document_change *ev, doc_swap_measure came)
{
    if (!c->measures)
        c->measures = xcalloc(2, sizeof *c->measures);
    c->measures[0] = came;
    c->measures[1] = (doc_swap_measure){
        .known = doc->svc->encodings != 1u << ECP_ENCODING_UTF8,
        .gone = {ev->range_length[ECP_ENCODING_UTF8], ev->range_length[ECP_ENCODING_UTF16],
                 ev->range_length[ECP_ENCODING_UTF32]},
        .tail = {ev->end.column[ECP_ENCODING_UTF8], ev->end.column[ECP_ENCODING_UTF16],
                 ev->end.column[ECP_ENCODING_UTF32]},
    };
}

static void describe(const document *doc, const prim *p, document_change *c)
{
    if (p->swap) {
        describe_whole(doc, p, c);
        return;
    }
    size_t line = piece_tree_line_of_offset(doc->tree, p->offset);
    size_t line_start = piece_tree_line_start(doc->tree, line);
    doc_units col = column_in_use(doc, line_start, p->offset);
    doc_units gone = units_of_in_use(doc, p->del, p->del_len);
    c->offset = p->offset;
    c->deleted_len = p->del_len;
    c->text = p->ins;
    c->text_len = p->ins_len;
    c->start.line = line;
    set_columns(&c->start, col);
    c->range_length[ECP_ENCODING_UTF8] = gone.u8;
    c->range_length[ECP_ENCODING_UTF16] = gone.u16;
    c->range_length[ECP_ENCODING_UTF32] = gone.u32;
    const char *last_nl = p->del_len ? memrchr(p->del, '\n', p->del_len) : NULL;
    if (!last_nl) {
        c->end.line = line;
        set_columns(&c->end, (doc_units){col.u8 + gone.u8, col.u16 + gone.u16, col.u32 + gone.u32});
        return;
    }
    size_t lines = 0;
    for (const char *s = p->del, *end = p->del + p->del_len; (s = memchr(s, '\n', (size_t)(end - s))); s++)
        lines++;
    size_t tail_off = (size_t)(last_nl + 1 - p->del);
    c->end.line = line + lines;
    set_columns(&c->end, units_of_in_use(doc, last_nl + 1, p->del_len - tail_off));
}

/* The splice's replacements as change events, in the coordinates of the
 * text before the step (the old one), on the tree that holds it now:
 * forward from the last to the first (the order a multi-edit applies its
 * edits), back from the first to the last (the order undo takes them
 * back), so that the events are the ones the edits made one by one would
 * send. */
static void splice_describe(const document *doc, const struct doc_splice *sp, bool back, document_change *events)
{
    size_t at = 0;
    const char *old = sp->olds, *new = sp->news;
    for (size_t k = 0; k < sp->count; k++) {
        const doc_splice_span *s = &sp->spans[k];
        at += s->gap;
        prim one = back ? (prim){.offset = at, .del = new, .del_len = s->new_len, .ins = old, .ins_len = s->old_len}
                        : (prim){.offset = at, .del = old, .del_len = s->old_len, .ins = new, .ins_len = s->new_len};
        describe(doc, &one, &events[back ? k : sp->count - 1 - k]);
        at += s->old_len;
        old += s->old_len;
        new += s->new_len;
    }
}

/* The text of tree with the splice applied, as a new tree over one buffer.
 * NULL when out of memory. */
static piece_tree *splice_build(const piece_tree *tree, const struct doc_splice *sp, bool back)
{
    size_t length = piece_tree_length(tree);
    size_t out_len = back ? length - sp->news_len + sp->olds_len : length - sp->olds_len + sp->news_len;
    char *out = malloc(out_len + 1);
    if (!out)
        return NULL;
    const char *flat = piece_tree_flat(tree), *put = back ? sp->olds : sp->news;
    size_t at = 0, w = 0;
    for (size_t k = 0; k <= sp->count; k++) {
        /* the unchanged bytes before span k, or after the last one */
        size_t keep = k < sp->count ? sp->spans[k].gap : length - at;
        if (flat)
            memcpy(out + w, flat + at, keep);
        else if (keep)
            piece_tree_copy(tree, at, keep, out + w);
        at += keep;
        w += keep;
        if (k == sp->count)
            break;
        const doc_splice_span *s = &sp->spans[k];
        size_t take = back ? s->new_len : s->old_len, give = back ? s->old_len : s->new_len;
        memcpy(out + w, put, give);
        put += give;
        w += give;
        at += take;
    }
    out[out_len] = '\0';
    piece_tree *built = piece_tree_new_owning(out, out_len);
    if (!built)
        free(out);
    return built;
}

/* Applies a splice prim and, when events is not NULL, describes it there
 * (splice_describe), on the text before it when forward and on the text
 * after it when back: both are in the old text's coordinates. The old tree
 * is freed, not kept: the step holds what undoing needs. On failure the
 * text is as it was. */
static int splice_run(document *doc, const prim *p, document_change *events)
{
    if (events && !p->back)
        splice_describe(doc, p->splice, false, events);
    piece_tree *built = splice_build(doc->tree, p->splice, p->back);
    if (!built)
        return -1;
    piece_tree_free(doc->tree);
    doc->tree = built;
    document__checkpoints_invalidate(doc, p->offset);
    document__columns_clear(doc->columns);
    if (events && p->back)
        splice_describe(doc, p->splice, true, events);
    return 0;
}

/* Moves the cursors of set as the replacements of p moved the text, in the
 * order they were made. */
static void shift_cursors(doc_cursor_set *set, const prim *p)
{
    if (!p->splice) {
        document__cursors_shift(set, p->offset, p->del_len, p->ins_len);
        return;
    }
    const struct doc_splice *sp = p->splice;
    if (p->back) { /* from the first, each at its place in the old text */
        size_t at = 0;
        for (size_t k = 0; k < sp->count; k++) {
            at += sp->spans[k].gap;
            document__cursors_shift(set, at, sp->spans[k].new_len, sp->spans[k].old_len);
            at += sp->spans[k].old_len;
        }
        return;
    }
    size_t end = 0; /* from the last: where the last one ends, then each one's end */
    for (size_t k = 0; k < sp->count; k++)
        end += sp->spans[k].gap + sp->spans[k].old_len;
    for (size_t k = sp->count; k-- > 0;) {
        size_t at = end - sp->spans[k].old_len;
        document__cursors_shift(set, at, sp->spans[k].old_len, sp->spans[k].new_len);
        end = at - sp->spans[k].gap;
    }
}

/* The number of change events p makes. */
static size_t events_of(const prim *p) { return p->splice ? p->splice->count : 1; }

/* On failure the text is as it was. */
static int replace(document *doc, const prim *p)
{
    if (p->splice)
        return splice_run(doc, p, NULL);
    if (p->swap) {
        piece_tree *now = doc->tree;
        doc->tree = *p->swap;
        *p->swap = now;
        document__checkpoints_invalidate(doc, 0);
        document__columns_clear(doc->columns);
        return 0;
    }
    size_t offset = p->offset;
    document__columns_edit(doc, offset, p->del, p->del_len, p->ins, p->ins_len);
    if (p->del_len && piece_tree_delete(doc->tree, offset, p->del_len) != 0)
        return -1;
    if (p->ins_len && piece_tree_insert(doc->tree, offset, p->ins, p->ins_len) != 0) {
        /* Put the deleted bytes back; with no memory even for that, the
         * document cannot be kept consistent (buf.h's policy: abort). */
        if (p->del_len && piece_tree_insert(doc->tree, offset, p->del, p->del_len) != 0)
            abort();
        return -1;
    }
    document__checkpoints_invalidate(doc, offset);
    return 0;
}

/* The replacement that takes p back. */
static prim inverse(const prim *p)
{
    return (prim){p->offset, p->ins, p->ins_len, p->del, p->del_len, p->swap, NULL, p->splice, !p->back};
}

/* Applies p[0..n) in order, describing each into events (events_of(p[i])
 * each). All or nothing. */
static int run(document *doc, const prim *p, size_t n, document_change *events, ecp_error *err)
{
    for (size_t i = 0, e = 0; i < n; e += events_of(&p[i]), i++) {
        int rc;
        if (p[i].splice) {
            rc = splice_run(doc, &p[i], &events[e]);
        } else {
            describe(doc, &p[i], &events[e]);
            rc = replace(doc, &p[i]);
        }
        if (rc != 0) {
            while (i-- > 0) {
                prim back = inverse(&p[i]);
                if (replace(doc, &back) != 0)
                    abort();
            }
            return ecp_error_set(err, ECP_ENOMEM, "Out of memory while editing the document");
        }
    }
    return 0;
}

/* ----- applying edits ------------------------------------------------------------- */

static bool is_keystroke(const doc_edit *e)
{
    if (e->start != e->end || e->len == 0 || e->len > 4 || e->text[0] == '\n' || e->text[0] == '\r')
        return false;
    uint32_t cp;
    size_t k = utf8_decode(e->text, e->len, &cp);
    return k == e->len && !(cp == 0xFFFD && k == 1 && (unsigned char)e->text[0] >= 0x80);
}

/* changes[0, nchanges) made edits[0, count) (one change per edit, or one
 * for them all). */
static void history_push(document_service *svc, document *doc, uint64_t owner, doc_undo_change *changes,
                         size_t nchanges, size_t count, doc_cursor_set *before, const doc_edit *edits, bool group,
                         size_t *ends)
{
    doc_history *h = &doc->history;
    for (size_t i = h->applied; i < h->count; i++) {
        h->bytes -= h->steps[i].bytes;
        step_free(&h->steps[i]);
    }
    h->count = h->applied;

    bool typing = ends != NULL;
    uint64_t now = document__now_ns();
    doc_undo_step *top = h->applied ? &h->steps[h->applied - 1] : NULL;
    const doc_cursor_set *mine = document__cursors_of(doc, owner);
    bool join = false;
    if (top && h->fresh && top->owner == owner) {
        if (group) {
            join = true;
        } else if (typing && top->typing && top->id != doc->saved_id && top->id != doc->snapshot_id &&
                   now - top->last_ns <= TYPING_GROUP_NS && top->count_ends == count) {
            join = true;
            for (size_t k = 0; k < count && join; k++)
                join = edits[k].start == top->typing_ends[k];
        }
    }
    if (join) {
        size_t was = top->bytes, added = changes_bytes(changes, nchanges);
        size_t replaced = cursors_bytes(&top->after) + top->count_ends * sizeof(size_t);
        if (top->count + nchanges > top->cap) {
            top->cap = (top->count + nchanges) * 2;
            top->changes = xrealloc(top->changes, top->cap * sizeof *top->changes);
        }
        memcpy(top->changes + top->count, changes, nchanges * sizeof *changes);
        top->count += nchanges;
        free(changes);
        document__cursors_free(before);
        document__cursors_free(&top->after);
        document__cursors_copy(&top->after, mine);
        top->id = document__new_state_id(svc);
        top->last_ns = now;
        free(top->typing_ends);
        top->typing = top->typing && typing;
        top->typing_ends = top->typing ? ends : NULL;
        top->count_ends = top->typing ? count : 0;
        if (!top->typing)
            free(ends);
        top->bytes = was - replaced + added + cursors_bytes(&top->after) + top->count_ends * sizeof(size_t);
        h->bytes = h->bytes - was + top->bytes;
    } else {
        if (h->count == h->cap) {
            /* the slots dropped steps left at the front come first, but
             * grow unless they are many: see UNDO_SLACK */
            bool grow = h->dropped < UNDO_SLACK || h->dropped < h->count / 2;
            compact(h);
            if (grow) {
                h->cap = h->cap ? h->cap * 2 : 16;
                h->steps = xrealloc(h->steps, h->cap * sizeof *h->steps);
            }
        }
        doc_undo_step *s = &h->steps[h->count++];
        memset(s, 0, sizeof *s);
        s->id = document__new_state_id(svc);
        s->changes = changes;
        s->count = s->cap = nchanges;
        s->before = *before;
        s->owner = owner;
        document__cursors_copy(&s->after, mine);
        s->typing = typing;
        s->typing_ends = ends;
        s->count_ends = typing ? count : 0;
        s->last_ns = now;
        s->bytes = sizeof *s + changes_bytes(changes, nchanges) + cursors_bytes(&s->before) + cursors_bytes(&s->after) +
                   s->count_ends * sizeof(size_t);
        h->bytes += s->bytes;
        h->applied = h->count;
    }
    h->fresh = true;
    document__history_trim(svc, doc);
}

/* Whether edits (sorted, in the text of tree) are made as a splice: see
 * DOC_SPLICE_MIN_EDITS. */
static bool splice_suits(const document_service *svc, const piece_tree *tree, const doc_edit *edits, size_t count)
{
    size_t length = piece_tree_length(tree);
    if (count < svc->splice_min_edits || length > UINT32_MAX || length / count > DOC_SPLICE_SPACING)
        return false;
    for (size_t k = 0; k < count; k++)
        if (edits[k].len > UINT32_MAX)
            return false;
    return true;
}

/* The splice that makes edits (sorted, not overlapping, in the text of
 * tree), with copies of the bytes they replace and of their texts. NULL
 * when out of memory. */
static struct doc_splice *splice_new(const piece_tree *tree, const doc_edit *edits, size_t count)
{
    struct doc_splice *sp = calloc(1, sizeof *sp);
    if (!sp)
        return NULL;
    for (size_t k = 0; k < count; k++) {
        sp->olds_len += edits[k].end - edits[k].start;
        sp->news_len += edits[k].len;
    }
    sp->count = count;
    sp->spans = malloc(count * sizeof *sp->spans);
    sp->olds = malloc(sp->olds_len ? sp->olds_len : 1);
    sp->news = malloc(sp->news_len ? sp->news_len : 1);
    if (!sp->spans || !sp->olds || !sp->news) {
        splice_free(sp);
        return NULL;
    }
    size_t prev_end = 0, o = 0, n = 0;
    for (size_t k = 0; k < count; k++) {
        const doc_edit *e = &edits[k];
        size_t old_len = e->end - e->start;
        sp->spans[k] = (doc_splice_span){(uint32_t)(e->start - prev_end), (uint32_t)old_len, (uint32_t)e->len};
        if (old_len)
            piece_tree_copy(tree, e->start, old_len, sp->olds + o);
        if (e->len)
            memcpy(sp->news + n, e->text, e->len);
        o += old_len;
        n += e->len;
        prev_end = e->end;
    }
    return sp;
}

/* document__apply, where `whole` (taken over, also on failure), when not
 * NULL, holds the text that edits[0], the only edit, puts in place of the
 * whole text: it becomes the document's tree and the old one is kept for
 * undo. */
static int apply_with(document_service *svc, document *doc, uint64_t owner, doc_edit *edits, size_t count, bool group,
                      doc_cursor_policy policy, piece_tree *whole, const doc_whole_measure *measure, ecp_error *err)
{
    int rc = 0;
    bool splice = !whole && splice_suits(svc, doc->tree, edits, count);
    size_t nchanges = splice ? 1 : count; /* undo records, each one prim */
    doc_undo_change *undo = calloc(nchanges, sizeof *undo);
    prim *prims = calloc(nchanges, sizeof *prims);
    document_change *events = calloc(count, sizeof *events);
    size_t *ends = NULL;
    doc_cursor_set before = {0};
    if (!undo || !prims || !events) {
        piece_tree_free(whole);
        rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory while editing the document");
        goto done;
    }
    if (splice) {
        if (!(undo[0].splice = splice_new(doc->tree, edits, count))) {
            rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot keep %zu edits for undo", count);
            goto done;
        }
        undo[0].offset = edits[0].start;
        prims[0] = (prim){.offset = edits[0].start, .splice = undo[0].splice};
    }
    if (whole) {
        undo[0] = (doc_undo_change){.deleted_len = edits[0].end, .inserted_len = edits[0].len, .other = whole};
        prims[0] = (prim){0, NULL, edits[0].end, edits[0].text, edits[0].len, &undo[0].other, measure, NULL, false};
    }
    /* Applied from the last edit to the first: undo[a] and prims[a] are in
     * application order. */
    for (size_t a = 0; a < count && !whole && !splice; a++) {
        const doc_edit *e = &edits[count - 1 - a];
        doc_undo_change *u = &undo[a];
        u->offset = e->start;
        u->deleted_len = e->end - e->start;
        u->inserted_len = e->len;
        if (u->deleted_len && !(u->deleted = malloc(u->deleted_len))) {
            rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot keep %zu bytes for undo", u->deleted_len);
            goto done;
        }
        if (e->len && !(u->inserted = malloc(e->len))) {
            rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot keep %zu bytes for undo", e->len);
            goto done;
        }
        if (u->deleted_len)
            piece_tree_copy(doc->tree, e->start, u->deleted_len, u->deleted);
        if (e->len)
            memcpy(u->inserted, e->text, e->len);
        prims[a] = (prim){u->offset, u->deleted, u->deleted_len, e->text, e->len, NULL, NULL, NULL, false};
    }
    bool typing = true;
    for (size_t k = 0; k < count && typing; k++)
        typing = is_keystroke(&edits[k]);
    if (typing)
        ends = xmalloc(count * sizeof *ends);

    doc_cursor_set *mine = document__cursors_of(doc, owner);
    document__cursors_copy(&before, mine);
    rc = run(doc, prims, nchanges, events, err);
    if (rc != 0)
        goto done;
    /* the texts the events show are the caller's, as for single edits: the
     * step (and the copy it holds) may be trimmed before they are sent */
    for (size_t k = 0; splice && k < count; k++)
        events[count - 1 - k].text = edits[k].text;
    if (whole) {
        /* what the new text spans holds whatever happened meanwhile: it is the tree put in place */
        bool came = measure && measure->came_known;
        swap_measured(doc, &undo[0], &events[0],
                      came ? (doc_swap_measure){true, measure->came_gone, measure->came_tail} : (doc_swap_measure){0});
    }
    /* every client's cursors follow the text; a reload keeps them all where they were */
    for (size_t p = 0; p < doc->party_count && policy != DOC_CURSORS_KEEP; p++)
        for (size_t a = 0; a < nchanges; a++)
            shift_cursors(&doc->parties[p]->cursors, &prims[a]);

    /* Where each edit's text ends once all of them are in. */
    size_t delta_add = 0, delta_sub = 0;
    for (size_t k = 0; k < count; k++) {
        size_t end = edits[k].start + edits[k].len + delta_add - delta_sub;
        if (ends)
            ends[k] = end;
        if (policy == DOC_CURSORS_EACH_END && edits[k].order < mine->count)
            mine->items[edits[k].order] = (doc_cursor){end, end, DOC_NO_DESIRED};
        if (policy == DOC_CURSORS_PRIMARY_END && k == 0)
            mine->items[0] = (doc_cursor){end, end, DOC_NO_DESIRED};
        delta_add += edits[k].len;
        delta_sub += edits[k].end - edits[k].start;
    }
    size_t length = piece_tree_length(doc->tree);
    if (policy == DOC_CURSORS_DOCUMENT_END)
        document__cursors_reset(mine, length, length);
    for (size_t p = 0; p < doc->party_count; p++)
        document__cursors_normalize(&doc->parties[p]->cursors, length);
    doc->version++;
    history_push(svc, doc, owner, undo, nchanges, count, &before, edits, group, ends);
    undo = NULL;
    ends = NULL;
    before.items = NULL;
    document__emit_change(svc, doc, events, count);
done:
    if (undo) {
        for (size_t a = 0; a < nchanges; a++) {
            free(undo[a].deleted);
            free(undo[a].inserted);
            piece_tree_free(undo[a].other);
            free(undo[a].measures);
            splice_free(undo[a].splice);
        }
        free(undo);
    }
    if (before.items)
        document__cursors_free(&before);
    free(ends);
    free(prims);
    free(events);
    return rc;
}

int document__apply(document_service *svc, document *doc, uint64_t owner, doc_edit *edits, size_t count, bool group,
                    doc_cursor_policy policy, ecp_error *err)
{
    size_t length = piece_tree_length(doc->tree);
    if (count != 1 || group || edits[0].start != 0 || edits[0].end != length ||
        edits[0].len + length < WHOLE_TEXT_MIN)
        return apply_with(svc, doc, owner, edits, count, group, policy, NULL, NULL, err);
    /* A new tree over one copy of the text: the undo step keeps the old tree
     * itself, and the change event shows the new tree's bytes. */
    char *copy = malloc(edits[0].len + 1);
    if (copy) {
        if (edits[0].len)
            memcpy(copy, edits[0].text, edits[0].len);
        copy[edits[0].len] = '\0';
    }
    piece_tree *tree = copy ? piece_tree_new_owning(copy, edits[0].len) : NULL;
    if (!tree) {
        free(copy);
        return ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot hold %zu bytes", edits[0].len);
    }
    doc_edit whole = {0, length, piece_tree_flat(tree), edits[0].len, edits[0].order};
    return apply_with(svc, doc, owner, &whole, 1, false, policy, tree, NULL, err);
}

void document__place_cursors(document *doc, uint64_t owner, const doc_cursor_set *set)
{
    doc_cursor_set *mine = document__cursors_of(doc, owner);
    document__cursors_free(mine);
    document__cursors_copy(mine, set);
    document__cursors_normalize(mine, piece_tree_length(doc->tree));
    doc_history *h = &doc->history;
    doc_undo_step *top = h->applied ? &h->steps[h->applied - 1] : NULL;
    if (!top || top->owner != owner)
        return;
    size_t was = cursors_bytes(&top->after);
    document__cursors_free(&top->after);
    document__cursors_copy(&top->after, mine);
    top->bytes = top->bytes - was + cursors_bytes(&top->after);
    h->bytes = h->bytes - was + cursors_bytes(&top->after);
}

int document__replace_tree(document_service *svc, document *doc, uint64_t owner, piece_tree *tree,
                           doc_cursor_policy policy,
                           const doc_whole_measure *measure, ecp_error *err)
{
    const char *flat = piece_tree_flat(tree);
    char *copy = NULL;
    size_t len = piece_tree_length(tree);
    if (!flat) {
        if (!(copy = malloc(len + 1))) {
            piece_tree_free(tree);
            return ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot hold %zu bytes", len);
        }
        piece_tree_copy(tree, 0, len, copy);
        flat = copy;
    }
    doc_edit whole = {0, piece_tree_length(doc->tree), flat, len, 0};
    int rc = apply_with(svc, doc, owner, &whole, 1, false, policy, tree, measure, err);
    free(copy);
    return rc;
}

int document__undo(document_service *svc, document *doc, uint64_t owner, bool redo)
{
    doc_history *h = &doc->history;
    if (redo ? h->applied == h->count : h->applied == 0)
        return ECP_ESTATE;
    doc_undo_step *s = redo ? &h->steps[h->applied] : &h->steps[h->applied - 1];
    size_t nevents = 0;
    for (size_t i = 0; i < s->count; i++)
        nevents += s->changes[i].splice ? s->changes[i].splice->count : 1;
    prim *prims = xmalloc(s->count * sizeof *prims);
    document_change *events = xmalloc(nevents * sizeof *events);
    /* The event needs the text that a kept tree puts back as one run of
     * bytes: the tree's own when it was never edited, else a copy. */
    char **flats = xcalloc(s->count, sizeof *flats);
    /* what each swap's departing text spans, when known: measured nothing on the loop */
    doc_whole_measure *known = xcalloc(s->count, sizeof *known);
    for (size_t i = 0; i < s->count; i++) {
        doc_undo_change *c = redo ? &s->changes[i] : &s->changes[s->count - 1 - i];
        if (c->splice) {
            prims[i] = (prim){.offset = c->offset, .splice = c->splice, .back = !redo};
            continue;
        }
        if (c->other) {
            const char *flat = piece_tree_flat(c->other);
            if (!flat) {
                flats[i] = xmalloc(piece_tree_length(c->other) + 1);
                piece_tree_copy(c->other, 0, piece_tree_length(c->other), flats[i]);
                flat = flats[i];
            }
            size_t was = redo ? c->deleted_len : c->inserted_len, becomes = redo ? c->inserted_len : c->deleted_len;
            /* The text that goes is exactly the one the last swap put in
             * place (undo restores texts byte for byte): its measure holds.
             * Its version is the one it is described at; later changes of
             * the step are undone first, but none of them moves it. */
            const doc_whole_measure *m = NULL;
            if (c->measures && c->measures[0].known) {
                known[i] = (doc_whole_measure){.version = doc->version, .gone = c->measures[0].gone,
                                                .tail = c->measures[0].tail};
                m = &known[i];
            }
            prims[i] = (prim){0, NULL, was, flat, becomes, &c->other, m, NULL, false};
            continue;
        }
        prims[i] = redo ? (prim){.offset = c->offset, .del = c->deleted, .del_len = c->deleted_len,
                                 .ins = c->inserted, .ins_len = c->inserted_len}
                        : (prim){.offset = c->offset, .del = c->inserted, .del_len = c->inserted_len,
                                 .ins = c->deleted, .ins_len = c->deleted_len};
    }
    int rc = run(doc, prims, s->count, events, NULL);
    for (size_t i = 0, e = 0; rc == 0 && i < s->count; e += events_of(&prims[i]), i++) {
        doc_undo_change *c = redo ? &s->changes[i] : &s->changes[s->count - 1 - i];
        if (c->other) /* the trees changed places: so do their measures */
            swap_measured(doc, c, &events[e], c->measures ? c->measures[1] : (doc_swap_measure){0});
    }
    if (rc == 0) {
        /* the caller's cursors go back to where the step's author had them;
         * everyone else's follow the text */
        doc_cursor_set *mine = document__cursors_of(doc, owner);
        for (size_t p = 0; p < doc->party_count; p++)
            for (size_t i = 0; i < s->count && &doc->parties[p]->cursors != mine; i++)
                shift_cursors(&doc->parties[p]->cursors, &prims[i]);
        document__cursors_free(mine);
        document__cursors_copy(mine, redo ? &s->after : &s->before);
        for (size_t p = 0; p < doc->party_count; p++)
            document__cursors_normalize(&doc->parties[p]->cursors, piece_tree_length(doc->tree));
        h->applied += redo ? 1 : -1;
        h->fresh = false;
        doc->version++;
        document__emit_change(svc, doc, events, nevents);
    }
    for (size_t i = 0; i < s->count; i++)
        free(flats[i]);
    free(flats);
    free(known);
    free(prims);
    free(events);
    return rc;
}

/* Whether the tree holds exactly text. */
static bool tree_equals(const piece_tree *tree, const char *text, size_t len)
{
    if (piece_tree_length(tree) != len)
        return false;
    piece_tree_reader r;
    piece_tree_reader_init(&r, tree, 0, len);
    const char *chunk;
    size_t n, at = 0;
    while (piece_tree_reader_next(&r, &chunk, &n)) {
        if (memcmp(chunk, text + at, n) != 0)
            return false;
        at += n;
    }
    return true;
}

int document__replace_all(document_service *svc, document *doc, const char *text, size_t len, ecp_error *err)
{
    if (!tree_equals(doc->tree, text, len)) {
        /* Nothing joins the step before, and nothing will join this one:
         * undo takes back exactly the reload. */
        doc->history.fresh = false;
        doc_edit e = {0, piece_tree_length(doc->tree), text, len, 0};
        int rc = document__apply(svc, doc, 0, &e, 1, false, DOC_CURSORS_KEEP, err);
        if (rc != 0)
            return rc;
        doc->history.fresh = false;
    }
    doc->saved_id = document__state_id(doc);
    return 0;
}

/* ----- the public editing functions ---------------------------------------------------- */

static int edit_cmp(const void *a, const void *b)
{
    const doc_edit *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

int document__apply_sorted(document_service *svc, document *doc, uint64_t owner, doc_edit *edits, size_t count,
                        bool group, doc_cursor_policy policy, uint64_t *version, ecp_error *err)
{
    qsort(edits, count, sizeof *edits, edit_cmp);
    for (size_t k = 1; k < count; k++)
        if (edits[k].start < edits[k - 1].end)
            return ecp_error_set(err, ECP_EINVAL, "Edits %zu and %zu overlap", edits[k - 1].order, edits[k].order);
    /* Edits that change nothing make no step and no version. */
    size_t n = 0;
    for (size_t k = 0; k < count; k++)
        if (edits[k].start != edits[k].end || edits[k].len)
            edits[n++] = edits[k];
    int rc = n ? document__apply(svc, doc, owner, edits, n, group, policy, err) : 0;
    if (version)
        *version = doc->version;
    return rc;
}

int document_apply_edits(document_service *self, const char *document_id, uint64_t owner, const document_edit *edits,
                         size_t count, ecp_position_encoding enc, unsigned flags, uint64_t *version, ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    if (count == 0)
        return ecp_error_set(err, ECP_EINVAL, "No edits given");
    int rc = 0;
    doc_edit *list = xmalloc(count * sizeof *list);
    for (size_t k = 0; k < count; k++) {
        const document_range *r = &edits[k].range;
        if (r->end.line < r->start.line || (r->end.line == r->start.line && r->end.column < r->start.column)) {
            rc = ecp_error_set(err, ECP_EINVAL, "Invalid range: the end precedes the start");
            goto done;
        }
        list[k].order = k;
        list[k].text = edits[k].text;
        list[k].len = edits[k].len;
        if ((rc = document__offset_of(doc, &r->start, enc, &list[k].start, err)) != 0 ||
            (rc = document__offset_of(doc, &r->end, enc, &list[k].end, err)) != 0)
            goto done;
        if (list[k].end < list[k].start)
            list[k].end = list[k].start;
    }
    rc = document__apply_sorted(self, doc, owner, list, count, flags & DOCUMENT_EDIT_GROUP,
                      flags & DOCUMENT_EDIT_MOVE_CURSOR ? DOC_CURSORS_PRIMARY_END : DOC_CURSORS_FOLLOW, version, err);
done:
    free(list);
    return rc;
}

int document_set_content(document_service *self, const char *document_id, uint64_t owner, const char *text,
                         size_t len, uint64_t *version, ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    doc_edit e = {0, piece_tree_length(doc->tree), text, len, 0};
    return document__apply_sorted(self, doc, owner, &e, 1, false, DOC_CURSORS_DOCUMENT_END, version, err);
}

/* A cursor's place in document order: where its selection starts, then its index. */
typedef struct cursor_place {
    size_t start;
    size_t index;
} cursor_place;

static int by_place(const void *a, const void *b)
{
    const cursor_place *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

/* Types at each of owner's cursors, replacing its selection, each cursor
 * ending after its text: texts[0] at every one (one_text), or texts[k] at
 * the k-th in document order. */
static int type_at_cursors(document_service *self, document *doc, uint64_t owner, const document_text *texts,
                           bool one_text, unsigned flags, uint64_t *version, ecp_error *err)
{
    const doc_cursor_set *mine = document__cursors_of(doc, owner);
    size_t n = mine->count;
    doc_edit *list = xmalloc((n ? n : 1) * sizeof *list);
    for (size_t i = 0; i < n; i++) {
        const doc_cursor *c = &mine->items[i];
        size_t lo = c->anchor < c->active ? c->anchor : c->active;
        size_t hi = c->anchor < c->active ? c->active : c->anchor;
        list[i] = (doc_edit){lo, hi, texts[0].text, texts[0].len, i};
    }
    if (!one_text) {
        cursor_place *places = xmalloc((n ? n : 1) * sizeof *places);
        for (size_t i = 0; i < n; i++)
            places[i] = (cursor_place){list[i].start, i};
        qsort(places, n, sizeof *places, by_place);
        for (size_t k = 0; k < n; k++) {
            list[places[k].index].text = texts[k].text;
            list[places[k].index].len = texts[k].len;
        }
        free(places);
    }
    int rc = document__apply_sorted(self, doc, owner, list, n, flags & DOCUMENT_EDIT_GROUP, DOC_CURSORS_EACH_END,
                                    version, err);
    free(list);
    return rc;
}

int document_type(document_service *self, const char *document_id, uint64_t owner, const char *text, size_t len,
                  unsigned flags, uint64_t *version, ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    size_t count = document__cursors_of(doc, owner)->count;
    if (count && len > DOC_MAX_INSERT_BYTES / count)
        return ecp_error_set(err, ECP_EINVAL, "text: %zu bytes at %zu cursors is more than %zu MiB", len, count,
                             DOC_MAX_INSERT_BYTES >> 20);
    return type_at_cursors(self, doc, owner, &(document_text){text, len}, true, flags, version, err);
}

int document_type_each(document_service *self, const char *document_id, uint64_t owner, const document_text *texts,
                       size_t count, unsigned flags, uint64_t *version, ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    size_t cursors = document__cursors_of(doc, owner)->count;
    if (count != cursors)
        return ecp_error_set(err, ECP_EINVAL, "texts: %zu texts for %zu cursors (one each)", count, cursors);
    size_t total = 0;
    for (size_t k = 0; k < count; k++) {
        if (texts[k].len > DOC_MAX_INSERT_BYTES - total)
            return ecp_error_set(err, ECP_EINVAL, "texts: more than %zu MiB in all", DOC_MAX_INSERT_BYTES >> 20);
        total += texts[k].len;
    }
    return type_at_cursors(self, doc, owner, texts, false, flags, version, err);
}

static int undo_redo(document_service *self, const char *document_id, uint64_t owner, bool redo, uint64_t *version,
                     ecp_error *err)
{
    document *doc;
    int status = document__writable(self, document_id, version, &doc, err);
    if (status != 0)
        return status;
    int rc = document__undo(self, doc, owner, redo);
    if (version)
        *version = doc->version;
    if (rc == ECP_ESTATE)
        return ecp_error_set(err, rc, redo ? "Nothing to redo" : "Nothing to undo");
    if (rc != 0)
        return ecp_error_set(err, rc, "Out of memory while editing the document");
    return 0;
}

int document_undo(document_service *self, const char *document_id, uint64_t owner, uint64_t *version, ecp_error *err)
{
    return undo_redo(self, document_id, owner, false, version, err);
}

int document_redo(document_service *self, const char *document_id, uint64_t owner, uint64_t *version, ecp_error *err)
{
    return undo_redo(self, document_id, owner, true, version, err);
}

int document_history(document_service *self, const char *document_id, bool *can_undo, bool *can_redo, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    *can_undo = doc && document__can_undo(doc);
    *can_redo = doc && document__can_redo(doc);
    return doc ? 0 : ECP_ENOTFOUND;
}

int document_mark_clean(document_service *self, const char *document_id, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    doc->saved_id = document__state_id(doc);
    document__adopt_disk(self, doc);
    return 0;
}
