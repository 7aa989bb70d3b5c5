/* piece_tree: reading without copying and reading lines in order, from the
 * tree and from its snapshots, and the snapshots themselves. The reasons
 * are in the design notes in piece_tree.c. */
#include "piece_tree_internal.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h> /* AVX2 for lines_copy, used when the CPU has it */
#endif

/* ---- nodes -------------------------------------------------------------- */

static inline const struct node *node_of(const void *p)
{
    return (const struct node *)((uintptr_t)p & ~(uintptr_t)(NODE_SIZE - 1));
}

/* ---- public: readers ---------------------------------------------------- */

/* The reader's node is the piece's slot in its leaf: the leaf is found from
 * it by alignment. */
void piece_tree_reader_init(piece_tree_reader *r, const piece_tree *self, size_t offset, size_t len)
{
    assert(len <= self->length && offset <= self->length - len);
    r->tree = self;
    r->node = NULL;
    r->skip = 0;
    r->remaining = len;
    if (len == 0)
        return;
    /* Reading a line right after looking it up lands in the cached piece. */
    const struct line_cache *c = self->cache;
    if (c->leaf != NULL && offset >= c->start && offset - c->start < c->len) {
        r->node = &c->leaf->ptr[c->idx];
        r->skip = offset - c->start;
        return;
    }
    size_t start;
    struct node *leaf;
    unsigned i;
    r->skip = descend(self, offset, false, NULL, &leaf, &i, &start, NULL);
    r->node = &leaf->ptr[i];
}

bool piece_tree_reader_next(piece_tree_reader *r, const char **chunk, size_t *len)
{
    if (r->node == NULL || r->remaining == 0)
        return false;
    const slot *s = r->node;
    const struct node *leaf = node_of(s);
    unsigned i = (unsigned)(s - leaf->ptr);
    size_t avail = leaf->len[i] - r->skip;
    size_t take = avail < r->remaining ? avail : r->remaining;
    *chunk = s->text + r->skip;
    *len = take;
    r->remaining -= take;
    r->skip = 0;
    r->node = r->remaining > 0 && step_piece(&leaf, &i) ? &leaf->ptr[i] : NULL;
    return true;
}

size_t piece_tree_copy(const piece_tree *self, size_t offset, size_t len, char *out)
{
    /* A line just looked up usually lies whole in the cached piece. */
    const struct line_cache *c = self->cache;
    if (c->leaf != NULL && offset >= c->start && offset - c->start <= c->len && len <= c->len - (offset - c->start)) {
        assert(offset + len <= self->length);
        memcpy(out, c->text + (offset - c->start), len);
        return len;
    }
    piece_tree_reader r;
    const char *chunk;
    size_t n, done = 0;
    piece_tree_reader_init(&r, self, offset, len);
    while (piece_tree_reader_next(&r, &chunk, &n)) {
        memcpy(out + done, chunk, n);
        done += n;
    }
    return done;
}

/* ---- public: snapshots -------------------------------------------------- */

/* Piece i covers [start[i], start[i + 1]) of the document and has
 * lf_before[i + 1] - lf_before[i] '\n'. The arrays follow the struct in the
 * same allocation. */
struct piece_tree_snapshot {
    struct store *store;
    size_t pieces;
    size_t bytes; /* of this allocation */
    const size_t *start;     /* pieces + 1 */
    const size_t *lf_before; /* pieces + 1 */
    const char *const *text; /* pieces */
};

piece_tree_snapshot *piece_tree_snapshot_take(piece_tree *self)
{
    size_t n = self->pieces;
    if (n > (SIZE_MAX - sizeof(piece_tree_snapshot)) / (3 * sizeof(size_t)) - 1)
        return NULL;
    size_t bytes = sizeof(piece_tree_snapshot) + (2 * (n + 1) + n) * sizeof(size_t);
    piece_tree_snapshot *snap = malloc(bytes);
    if (snap == NULL)
        return NULL;
    size_t *start = (size_t *)(snap + 1);
    size_t *lf_before = start + n + 1;
    const char **text = (const char **)(lf_before + n + 1);
    _Static_assert(sizeof(const char *) == sizeof(size_t), "pointers and sizes share one allocation");
    const struct node *x = self->root;
    while (x->level > 0)
        x = x->ptr[0].child;
    size_t k = 0, at = 0, lines = 0;
    for (; x != NULL; x = x->next) {
        for (unsigned i = 0; i < x->n; i++, k++) {
            text[k] = x->ptr[i].text;
            start[k] = at;
            lf_before[k] = lines;
            at += x->len[i];
            lines += x->lf[i];
        }
    }
    assert(k == n && at == self->length && lines == self->lf);
    start[n] = at;
    lf_before[n] = lines;
    snap->store = self->store;
    snap->pieces = n;
    snap->bytes = bytes;
    snap->start = start;
    snap->lf_before = lf_before;
    snap->text = text;
    atomic_fetch_add_explicit(&self->store->refs, 1, memory_order_relaxed);
    /* Raising the floor to where the add buffer is now keeps every byte this
     * snapshot shows; an older floor lies below it (used never sank under
     * it), or in an older block that is never given back to again. */
    self->floor_block = self->cur;
    self->floor_used = self->cur != NULL ? self->cur->used : 0;
    return snap;
}

void piece_tree_snapshot_release(piece_tree_snapshot *snap)
{
    if (snap == NULL)
        return;
    store_release(snap->store);
    free(snap);
}

size_t piece_tree_snapshot_length(const piece_tree_snapshot *snap)
{
    return snap->start[snap->pieces];
}

size_t piece_tree_snapshot_line_count(const piece_tree_snapshot *snap)
{
    return snap->lf_before[snap->pieces] + 1;
}

size_t piece_tree_snapshot_bytes(const piece_tree_snapshot *snap)
{
    return snap->bytes;
}

/* The piece holding byte offset (offset < length): the last piece whose
 * start is at or before it (pieces are never empty). */
static size_t snap_piece_at(const piece_tree_snapshot *snap, size_t offset)
{
    size_t lo = 0, hi = snap->pieces; /* start[lo] <= offset < start[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (snap->start[mid] <= offset)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Document offset of the nth (1 <= nth <= '\n' count) '\n'; *piece gets the
 * piece that holds it. */
static size_t snap_lf_position(const piece_tree_snapshot *snap, size_t nth, size_t *piece)
{
    const size_t *lfb = snap->lf_before;
    size_t lo = 0, hi = snap->pieces; /* lfb[lo] < nth <= lfb[hi] */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (lfb[mid] < nth)
            lo = mid;
        else
            hi = mid;
    }
    *piece = lo;
    size_t len = snap->start[lo + 1] - snap->start[lo];
    return snap->start[lo] + find_nth_lf(snap->text[lo], len, nth - lfb[lo]);
}

size_t piece_tree_snapshot_line_start(const piece_tree_snapshot *snap, size_t line)
{
    assert(line < piece_tree_snapshot_line_count(snap));
    size_t piece;
    return line == 0 ? 0 : snap_lf_position(snap, line, &piece) + 1;
}

void piece_tree_snapshot_line_range(const piece_tree_snapshot *snap, size_t line, size_t *start, size_t *len)
{
    size_t lines = piece_tree_snapshot_line_count(snap);
    assert(line < lines);
    size_t s = 0, piece = 0, end;
    if (line > 0)
        s = snap_lf_position(snap, line, &piece) + 1;
    if (line + 1 == lines) {
        end = piece_tree_snapshot_length(snap);
    } else if (snap->lf_before[piece + 1] > line) {
        /* The line ends in the piece where it starts: the common case. */
        const char *text = snap->text[piece];
        size_t from = s - snap->start[piece];
        end = s + next_lf(text + from, snap->start[piece + 1] - snap->start[piece] - from);
    } else {
        end = snap_lf_position(snap, line + 1, &piece);
    }
    *start = s;
    *len = end - s;
}

void piece_tree_snapshot_reader_init(piece_tree_snapshot_reader *r, const piece_tree_snapshot *snap, size_t offset,
                                     size_t len)
{
    assert(len <= piece_tree_snapshot_length(snap) && offset <= piece_tree_snapshot_length(snap) - len);
    r->snap = snap;
    r->piece = 0;
    r->skip = 0;
    r->remaining = len;
    if (len == 0)
        return;
    r->piece = snap_piece_at(snap, offset);
    r->skip = offset - snap->start[r->piece];
}

bool piece_tree_snapshot_reader_next(piece_tree_snapshot_reader *r, const char **chunk, size_t *len)
{
    if (r->remaining == 0)
        return false;
    const piece_tree_snapshot *snap = r->snap;
    size_t avail = snap->start[r->piece + 1] - snap->start[r->piece] - r->skip;
    size_t take = avail < r->remaining ? avail : r->remaining;
    *chunk = snap->text[r->piece] + r->skip;
    *len = take;
    r->remaining -= take;
    r->skip = 0;
    r->piece++;
    return true;
}

size_t piece_tree_snapshot_copy(const piece_tree_snapshot *snap, size_t offset, size_t len, char *out)
{
    piece_tree_snapshot_reader r;
    const char *chunk;
    size_t n, done = 0;
    piece_tree_snapshot_reader_init(&r, snap, offset, len);
    while (piece_tree_snapshot_reader_next(&r, &chunk, &n)) {
        memcpy(out + done, chunk, n);
        done += n;
    }
    return done;
}

/* ---- lines in order ----------------------------------------------------- */

/* The bytes [start of first, end of line first + count - 1): the '\n' that
 * ends the last line is left out, so the reader running dry ends it. */
static void lines_range(size_t first, size_t count, size_t line_count, size_t length, size_t first_start,
                        size_t next_start, size_t *from, size_t *len)
{
    *from = first_start;
    size_t end = first + count < line_count ? next_start - 1 : length;
    *len = count ? end - first_start : 0;
}

void piece_tree_lines_init(piece_tree_lines *it, const piece_tree *self, size_t first, size_t count)
{
    assert(first + count <= piece_tree_line_count(self));
    memset(it, 0, sizeof *it);
    it->lines_left = count;
    if (count == 0)
        return;
    size_t from, len, lines = piece_tree_line_count(self);
    size_t first_start = piece_tree_line_start(self, first);
    size_t next_start = first + count < lines ? piece_tree_line_start(self, first + count) : 0;
    lines_range(first, count, lines, self->length, first_start, next_start, &from, &len);
    piece_tree_reader_init(&it->tree_reader, self, from, len);
}

void piece_tree_snapshot_lines_init(piece_tree_lines *it, const piece_tree_snapshot *snap, size_t first, size_t count)
{
    assert(first + count <= piece_tree_snapshot_line_count(snap));
    memset(it, 0, sizeof *it);
    it->snapshot = true;
    it->lines_left = count;
    if (count == 0)
        return;
    size_t from, len, lines = piece_tree_snapshot_line_count(snap);
    size_t first_start = piece_tree_snapshot_line_start(snap, first);
    size_t next_start = first + count < lines ? piece_tree_snapshot_line_start(snap, first + count) : 0;
    lines_range(first, count, lines, piece_tree_snapshot_length(snap), first_start, next_start, &from, &len);
    piece_tree_snapshot_reader_init(&it->snap_reader, snap, from, len);
}

/* Bytes at it->at when there are none left there: false when the text ran out. */
static inline bool next_bytes(piece_tree_lines *it)
{
    while (it->left == 0) {
        bool more = it->snapshot ? piece_tree_snapshot_reader_next(&it->snap_reader, &it->at, &it->left)
                                 : piece_tree_reader_next(&it->tree_reader, &it->at, &it->left);
        if (!more)
            return false;
    }
    return true;
}

bool piece_tree_lines_next(piece_tree_lines *it, const char **chunk, size_t *len, bool *ends)
{
    if (it->lines_left == 0)
        return false;
    if (!next_bytes(it)) {
        /* The bytes ran out: that ends the last line. */
        *chunk = "";
        *len = 0;
        *ends = true;
        it->lines_left--;
        return true;
    }
    const char *nl = memchr(it->at, '\n', it->left);
    *chunk = it->at;
    if (nl) {
        *len = (size_t)(nl - it->at);
        *ends = true;
        it->left -= *len + 1;
        it->at = nl + 1;
        it->lines_left--;
    } else {
        *len = it->left;
        *ends = false;
        it->left = 0;
    }
    return true;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
/* The bytes of p (left of them) before the first '\n', copied to out (room
 * for cap) 64 at a time while both allow; returns how many were looked at
 * and sets *found when the '\n' was among them (at the returned count). */
__attribute__((target("avx2"))) static size_t copy_to_lf_avx2(const char *p, size_t left, char *out, size_t cap,
                                                                bool *found)
{
    const __m256i nl = _mm256_set1_epi8('\n');
    size_t i = 0;
    while (left - i >= 64 && cap - i >= 64) {
        __m256i v0 = _mm256_loadu_si256((const __m256i *)(p + i));
        __m256i v1 = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        _mm256_storeu_si256((__m256i *)(out + i), v0);
        _mm256_storeu_si256((__m256i *)(out + i + 32), v1);
        uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v0, nl)) |
                     (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(v1, nl)) << 32;
        if (m) {
            *found = true;
            return i + (size_t)__builtin_ctzll(m);
        }
        i += 64;
    }
    *found = false;
    return i;
}
#define HAVE_AVX2_COPY 1
#endif

/* The line's '\n' is p[k], where got bytes of the line came before p: the
 * line is got + k bytes long, and the iterator goes on after it. */
static inline bool line_ends_at(piece_tree_lines *it, const char *p, size_t left, size_t k, size_t got, size_t *len)
{
    it->at = p + k + 1;
    it->left = left - k - 1;
    it->lines_left--;
    *len = got + k;
    return true;
}

bool piece_tree_lines_copy(piece_tree_lines *it, char *out, size_t cap, size_t *len)
{
    if (it->lines_left == 0)
        return false;
    size_t got = 0; /* the line's bytes so far, copied or not */
    for (;;) {
        if (!next_bytes(it)) {
            it->lines_left--;
            *len = got;
            return true;
        }
        const char *p = it->at;
        size_t left = it->left;
#if defined(HAVE_AVX2_COPY)
        if (got <= cap && __builtin_cpu_supports("avx2")) {
            bool found;
            size_t k = copy_to_lf_avx2(p, left, out + got, cap - got, &found);
            if (found)
                return line_ends_at(it, p, left, k, got, len);
            p += k;
            left -= k;
            got += k;
        }
#endif
#if defined(__SSE2__)
        /* Sixteen bytes at a time: stored whole (out has room), searched for
         * the '\n' in the same pass. */
        const __m128i nl = _mm_set1_epi8('\n');
        /* Two at once while there is room: most lines end within a few
         * rounds, and one branch per 32 bytes keeps the loop short. */
        while (left >= 32 && got + 32 <= cap) {
            __m128i v0 = _mm_loadu_si128((const __m128i *)p);
            __m128i v1 = _mm_loadu_si128((const __m128i *)(p + 16));
            _mm_storeu_si128((__m128i *)(out + got), v0);
            _mm_storeu_si128((__m128i *)(out + got + 16), v1);
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v0, nl)) |
                         (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v1, nl)) << 16;
            if (m)
                return line_ends_at(it, p, left, (size_t)__builtin_ctz(m), got, len);
            p += 32;
            left -= 32;
            got += 32;
        }
        while (left >= 16 && got + 16 <= cap) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl));
            _mm_storeu_si128((__m128i *)(out + got), v);
            if (m)
                return line_ends_at(it, p, left, (size_t)__builtin_ctz(m), got, len);
            p += 16;
            left -= 16;
            got += 16;
        }
#endif
        const char *nl_at = memchr(p, '\n', left);
        size_t n = nl_at ? (size_t)(nl_at - p) : left;
        if (got < cap)
            memcpy(out + got, p, n < cap - got ? n : cap - got);
        if (nl_at)
            return line_ends_at(it, p, left, n, got, len);
        got += n;
        it->left = 0;
    }
}
