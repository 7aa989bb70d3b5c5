/* piece_tree: lines and columns. Where a line starts and ends, the line
 * of an offset, the byte at one: by descending the tree, or, when lines are
 * read in order, from the piece the last lookup landed in (the line cache).
 * The reasons are in the design notes in piece_tree.c. */
#include "piece_tree_internal.h"

#include <assert.h>
#include <stddef.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ---- scanning bytes ----------------------------------------------------- */

/* Index of the k-th (k >= 1) '\n' counting backwards from p[n-1]. */
static size_t find_nth_lf_back(const char *p, size_t n, size_t k)
{
    for (;;) {
        const char *q = memrchr(p, '\n', n);
        assert(q != NULL);
        if (--k == 0)
            return (size_t)(q - p);
        n = (size_t)(q - p);
    }
}

/* ---- lookups ------------------------------------------------------------ */

/* The piece holding the nth (nth >= 1) '\n' of the document. */
static const struct node *find_lf(const piece_tree *self, size_t nth, unsigned *idx, size_t *start, size_t *line)
{
    const struct node *x = self->root;
    size_t base = 0, lines = 0;
    for (;;) {
        const size_t *lf = x->lf;
        unsigned i = 0;
        prefetch_counts(lf, x->n);
        while (nth > lf[i]) {
            nth -= lf[i];
            lines += lf[i];
            i++;
        }
        assert(i < x->n);
        for (unsigned j = 0; j < i; j++)
            base += x->len[j];
        if (x->level == 0) {
            *idx = i;
            *start = base;
            *line = lines;
            return x;
        }
        x = x->ptr[i].child;
    }
}

static void cache_set(const piece_tree *self, const struct node *leaf, unsigned idx, size_t start, size_t line)
{
    struct line_cache *c = self->cache;
    c->leaf = leaf;
    c->idx = idx;
    c->text = leaf->ptr[idx].text;
    c->len = leaf->len[idx];
    c->lf = leaf->lf[idx];
    c->start = start;
    c->line = line;
    c->mark = 0;
    c->mark_lf = 0;
}

/* Index in the cached piece of the first '\n' at or after c->mark; one must
 * exist. Lines are mostly shorter than 128 bytes: looking at the next 128
 * at once finds the end without a call and with a branch that is nearly
 * always taken the same way, where memchr on lines of random length
 * mispredicts about every other time. */
static inline size_t next_lf_cached(const struct line_cache *c)
{
    size_t from = c->mark;
#if defined(__SSE2__)
    if (c->len - from >= 128) {
        uint64_t m0 = lf_mask64(c->text + from), m1 = lf_mask64(c->text + from + 64);
        if ((m0 | m1) != 0) {
            uint64_t m = m0 != 0 ? m0 : m1;
            size_t base = m0 != 0 ? 0 : 64;
            return from + base + (size_t)__builtin_ctzll(m);
        }
        from += 128;
    }
#endif
    return from + next_lf(c->text + from, c->len - from);
}

/* Reading in order crosses into the next piece every few dozen lines:
 * stepping along the leaves is cheaper than descending from the root. */
#define CACHE_WALK 8

/* Points the cache at the piece holding the nth '\n'. */
static void cache_seek_lf(const piece_tree *self, size_t nth)
{
    struct line_cache *c = self->cache;
    const struct node *leaf = c->leaf;
    unsigned idx = c->idx;
    if (leaf != NULL && nth > c->line) {
        if (nth - c->line <= c->lf)
            return;
        size_t start = c->start + c->len, line = c->line + c->lf;
        for (int step = 0; step < CACHE_WALK && step_piece(&leaf, &idx); step++) {
            if (nth - line <= leaf->lf[idx]) {
                cache_set(self, leaf, idx, start, line);
                return;
            }
            start += leaf->len[idx];
            line += leaf->lf[idx];
        }
    }
    size_t start, line;
    leaf = find_lf(self, nth, &idx, &start, &line);
    cache_set(self, leaf, idx, start, line);
}

/* Points the cache at the piece holding byte offset (offset < length). */
static void cache_seek_byte(const piece_tree *self, size_t offset)
{
    struct line_cache *c = self->cache;
    const struct node *leaf = c->leaf;
    unsigned idx = c->idx;
    if (leaf != NULL && offset >= c->start) {
        if (offset - c->start < c->len)
            return;
        size_t start = c->start + c->len, line = c->line + c->lf;
        for (int step = 0; step < CACHE_WALK && step_piece(&leaf, &idx); step++) {
            if (offset - start < leaf->len[idx]) {
                cache_set(self, leaf, idx, start, line);
                return;
            }
            start += leaf->len[idx];
            line += leaf->lf[idx];
        }
    }
    size_t start, line;
    struct node *found;
    descend(self, offset, false, NULL, &found, &idx, &start, &line);
    cache_set(self, found, idx, start, line);
}

/* Document offset of the nth (nth >= 1) '\n', found by scanning. */
static size_t lf_scan(const piece_tree *self, size_t nth)
{
    struct line_cache *c = self->cache;
    cache_seek_lf(self, nth);
    const char *text = c->text;
    size_t k = nth - c->line; /* 1..c->lf within the piece */
    size_t at;
    if (k == c->mark_lf + 1) {
        /* The next line of a sequential read: the common case. */
        at = next_lf_cached(c);
    } else if (k > c->mark_lf) {
        at = c->mark + find_nth_lf(text + c->mark, c->len - c->mark, k - c->mark_lf);
    } else if (c->mark_lf - k < k) {
        at = find_nth_lf_back(text, c->mark, c->mark_lf - k + 1);
    } else {
        at = find_nth_lf(text, c->len, k);
    }
    c->mark = at + 1;
    c->mark_lf = k;
    c->last_nth = nth;
    c->last_at = c->start + at;
    return c->last_at;
}

/* Reading line after line asks for every '\n' twice in a row: as the end of
 * one line (line_length) and as the start of the next (line_start). */
static inline size_t lf_position(const piece_tree *self, size_t nth)
{
    struct line_cache *c = self->cache;
    if (nth == c->last_nth)
        return c->last_at;
    /* The next '\n' after the last one found, in the same piece: the
     * common case of reading in order, kept free of calls. */
    if (c->leaf != NULL && nth == c->line + c->mark_lf + 1 && c->mark_lf < c->lf) {
        size_t at = next_lf_cached(c);
        c->mark = at + 1;
        c->mark_lf++;
        c->last_nth = nth;
        c->last_at = c->start + at;
        return c->last_at;
    }
    return lf_scan(self, nth);
}

/* ---- public: reading ---------------------------------------------------- */

size_t piece_tree_line_start(const piece_tree *self, size_t line)
{
    assert(line <= self->lf);
    return line == 0 ? 0 : lf_position(self, line) + 1;
}

size_t piece_tree_line_length(const piece_tree *self, size_t line)
{
    assert(line <= self->lf);
    size_t start = piece_tree_line_start(self, line);
    size_t end = line == self->lf ? self->length : lf_position(self, line + 1);
    return end - start;
}

void piece_tree_line_range(const piece_tree *self, size_t line, size_t *start, size_t *len)
{
    assert(line <= self->lf);
    size_t s = piece_tree_line_start(self, line);
    size_t end = line == self->lf ? self->length : lf_position(self, line + 1);
    *start = s;
    *len = end - s;
}

size_t piece_tree_line_of_offset(const piece_tree *self, size_t offset)
{
    assert(offset <= self->length);
    if (offset == self->length)
        return self->lf;
    struct line_cache *c = self->cache;
    cache_seek_byte(self, offset);
    const char *text = c->text;
    size_t r = offset - c->start;
    size_t before;
    if (r >= c->mark)
        before = c->mark_lf + count_lf(text + c->mark, r - c->mark);
    else if (c->mark - r < r)
        before = c->mark_lf - count_lf(text + r, c->mark - r);
    else
        before = count_lf(text, r);
    c->mark = r;
    c->mark_lf = before;
    return c->line + before;
}

char piece_tree_byte_at(const piece_tree *self, size_t offset)
{
    assert(offset < self->length);
    size_t start;
    struct node *leaf;
    unsigned i;
    size_t r = descend(self, offset, false, NULL, &leaf, &i, &start, NULL);
    return leaf->ptr[i].text[r];
}
