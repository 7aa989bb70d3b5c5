/* piece_tree: a B+tree of pieces over an owned original buffer and an
 * append-only add buffer.
 *
 * Layout decisions and the reasons for them:
 *
 * - Pieces live in leaves, many to a node, and internal nodes hold for each
 *   child the byte and '\n' totals of its subtree. A binary tree of a million
 *   pieces is twenty-odd levels deep and every level is a cache miss; with a
 *   fanout of ~40 the same lookup visits four or five nodes. Byte counts,
 *   '\n' counts and pointers sit in three arrays, so a descent reads only the
 *   counts it steers by, and it asks for all of a node's lines at once: each
 *   level then costs about one wait for memory.
 * - Leaf entries and internal entries have the same shape (a pointer, a byte
 *   count, a '\n' count), so splitting, merging and rebalancing are written
 *   once for both.
 * - Nodes are aligned to their (power of two) size inside slabs: a pointer
 *   to a piece then also names its leaf, which lets a reader and the line
 *   cache step to the next piece without a parent pointer or a descent.
 *   Slabs grow to 2 MiB, the large ones on huge pages where the kernel gives
 *   them, so that a descent is not also a string of TLB misses.
 * - Leaves are chained in document order for the same reason.
 * - No parent pointers: an edit records the path it descended and fixes
 *   totals and overflows/underflows along it.
 * - The original is cut into pieces of at most ORIGINAL_PIECE bytes at load
 *   time (after a '\n' when one is near the cut), so finding a line inside a
 *   piece scans a bounded number of bytes, with nothing stored per line.
 * - Pieces point straight at their bytes. The original never moves and the
 *   add buffer is a list of blocks that are never reallocated.
 * - An insert at the end of a piece whose bytes are the last ones appended to
 *   the add buffer lengthens that piece instead of adding one, and a delete of
 *   such a piece's tail (backspace) shortens it and gives the bytes back to
 *   the add buffer: typing does not fragment the tree. No piece shares add
 *   bytes with another, so the bytes given back are referenced by no piece;
 *   but a snapshot may still show them. So taking a snapshot sets a floor in
 *   the current add block at its high-water mark, and while any snapshot of
 *   the tree is alive no bytes below the floor are given back (the piece is
 *   shortened all the same, and the next keystroke starts a new piece).
 *   Bytes above the floor were appended after every live snapshot was taken
 *   and are seen by none of them. Nothing else ever writes a byte twice.
 * - The original and the add blocks are one shared store, reference counted
 *   (atomically) by the tree and by each snapshot, and freed by whichever
 *   lets go last: a snapshot outlives the tree it was taken from. The tree
 *   appends to the store's block list on its own thread; nobody else reads
 *   the list before the last reference is gone.
 * - A snapshot copies each piece's (pointer, length, '\n' count), walking the
 *   chained leaves, as prefix sums: pieces * 24 bytes and no text. Lookups
 *   binary-search the sums, so they cost O(log pieces) plus a scan inside one
 *   piece, and nothing in a snapshot changes after it is made, so any number
 *   of threads may read it at once.
 * - Every edit that may need nodes reserves the worst case (one per level
 *   plus a new root) before it changes anything, so it either fails with the
 *   tree untouched or cannot fail.
 * - Editors read lines in order, so the piece the last line lookup landed in,
 *   and how far into it the lookup had counted, is remembered; the next
 *   lookup in that piece, or a few pieces further on, resumes from there
 *   instead of descending. Every edit forgets it.
 */
#include "piece_tree.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h> /* AVX2 for lines_copy, used when the CPU has it */
#endif

/* Upper bound of an original piece: the most bytes one line lookup scans, and
 * twice the most an insert into it scans to split it. 4 KiB keeps a 100 MB
 * document's bookkeeping near 1% of it. The
 * fuzz target builds with tiny values so that every boundary case occurs in a
 * few bytes of input. */
#ifndef PIECE_TREE_ORIGINAL_PIECE
#define PIECE_TREE_ORIGINAL_PIECE (4 * 1024)
#endif
/* Add blocks start small so that a document that is only read costs nothing
 * and a lightly edited one little, then double to amortise allocation. */
#ifndef PIECE_TREE_ADD_BLOCK_MIN
#define PIECE_TREE_ADD_BLOCK_MIN (4 * 1024)
#endif
#ifndef PIECE_TREE_ADD_BLOCK_MAX
#define PIECE_TREE_ADD_BLOCK_MAX (1024 * 1024)
#endif
/* Entries per node. 42 fills a 1 KiB node exactly. A build with tiny pieces
 * (the fuzz target) gets tiny nodes too, so that splits, merges and
 * rebalancing between siblings all happen within a few bytes of input. */
#ifndef PIECE_TREE_FANOUT
#if PIECE_TREE_ORIGINAL_PIECE < 64
#define PIECE_TREE_FANOUT 4
#else
#define PIECE_TREE_FANOUT 42
#endif
#endif
_Static_assert(PIECE_TREE_ORIGINAL_PIECE >= 2, "load cuts pieces at no less than half the bound");
/* An insert adds up to two entries to a leaf; both halves of a split must
 * still be at least half full. */
_Static_assert(PIECE_TREE_FANOUT >= 4 && PIECE_TREE_FANOUT <= 1024, "fanout out of range");

#define FANOUT PIECE_TREE_FANOUT
#define MIN_FILL (FANOUT / 2)
/* Every non-root node is at least half full: 64 levels hold more pieces than
 * memory can. */
#define MAX_DEPTH 64
#define HUGE_PAGE (2 * 1024 * 1024)
#define NODE_SLAB_MIN 8

struct node;

typedef union {
    const char *text;   /* in a leaf: the piece's bytes */
    struct node *child; /* in an internal node */
} slot;

/* Counts and pointers in separate arrays: a descent scans only the counts
 * it steers by, a few cache lines per node. */
struct node {
    struct node *next; /* leaf: next leaf in document order; free: next free */
    uint32_t n;
    uint32_t level; /* 0 for leaves */
    size_t len[FANOUT]; /* bytes of the piece or of the child's subtree */
    size_t lf[FANOUT];  /* '\n' among them */
    slot ptr[FANOUT];
};

/* One entry of a node as a value, for moving entries between nodes. */
struct entry {
    slot u;
    size_t len;
    size_t lf;
};

#define ALIGN_FOR(s)                                                                                          \
    ((s) <= 64 ? 64                                                                                           \
     : (s) <= 128 ? 128                                                                                       \
     : (s) <= 256 ? 256                                                                                       \
     : (s) <= 512 ? 512                                                                                       \
     : (s) <= 1024 ? 1024                                                                                     \
     : (s) <= 2048 ? 2048                                                                                     \
     : (s) <= 4096 ? 4096                                                                                     \
     : (s) <= 8192 ? 8192                                                                                     \
     : (s) <= 16384 ? 16384                                                                                   \
                    : 32768)
enum { NODE_SIZE = ALIGN_FOR(sizeof(struct node)) };
_Static_assert(NODE_SIZE >= sizeof(struct node), "a node must fit its slot");

/* Never reallocated: pieces point into data. */
struct add_block {
    struct add_block *next;
    size_t cap;
    size_t used;
    char data[];
};

/* The first slot of every slab links the slabs. */
struct node_slab {
    struct node_slab *next;
};

/* Where the last line lookup landed. Valid until the next edit. */
struct line_cache {
    const struct node *leaf; /* NULL when nothing is remembered */
    unsigned idx;            /* the piece within the leaf */
    const char *text;        /* and a copy of it */
    size_t len;
    size_t lf;
    size_t start;    /* document offset of the piece's first byte */
    size_t line;     /* '\n' before the piece */
    size_t mark;     /* an offset inside the piece, 0..len */
    size_t mark_lf;  /* '\n' in text[0, mark) */
    size_t last_nth; /* the last '\n' found is the last_nth-th (0: none) */
    size_t last_at;  /* and it is at this document offset */
};

/* The bytes pieces point at. The tree and each of its snapshots hold one
 * reference; the tree alone appends blocks, on its own thread. */
struct store {
    atomic_size_t refs;
    char *original;
    size_t original_len;
    struct add_block *blocks; /* every block, newest first */
};

struct piece_tree {
    struct node *root;
    unsigned height; /* levels; root->level == height - 1 */
    size_t length;
    size_t lf;
    size_t pieces;
    bool edited; /* an insert or delete happened: the text may no longer be the original as it lies */

    struct store *store;
    struct add_block *cur;    /* the block small inserts append to, or NULL */
    size_t next_block_cap;
    /* Bytes of floor_block below floor_used may be shown by a snapshot:
     * never given back while one is alive. floor_block NULL: no floor. */
    const struct add_block *floor_block;
    size_t floor_used;

    struct node_slab *slabs;
    size_t next_slab_nodes;
    struct node *free_nodes; /* linked through next */
    size_t free_count;
    size_t node_total; /* every usable slot of every slab */

    /* Lookups take a const tree yet update the cache: the pointer makes that
     * an ordinary write to a non-const object. */
    struct line_cache *cache;
    struct line_cache cache_storage;
};

/* The nodes an edit descended through, by level (0: the leaf). */
struct path {
    struct node *node[MAX_DEPTH];
    unsigned idx[MAX_DEPTH];
};

/* ---- scanning bytes ----------------------------------------------------- */

static size_t count_lf(const char *p, size_t n)
{
    size_t c = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    const __m128i zero = _mm_setzero_si128();
    while (n >= 16) {
        /* Byte counters overflow after 255 steps: fold them before that. */
        size_t blocks = n / 16 > 255 ? 255 : n / 16;
        __m128i acc = zero;
        for (size_t i = 0; i < blocks; i++, p += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), nl));
        __m128i s = _mm_sad_epu8(acc, zero);
        c += (size_t)_mm_cvtsi128_si32(s) + (size_t)_mm_extract_epi16(s, 4);
        n -= blocks * 16;
    }
#endif
    const char *end = p + n;
    while ((p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        c++;
        p++;
    }
    return c;
}

#if defined(__SSE2__)
static inline __attribute__((always_inline)) uint64_t lf_mask64(const char *p)
{
    const __m128i nl = _mm_set1_epi8('\n');
    uint64_t a = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), nl));
    uint64_t b = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), nl));
    uint64_t c = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), nl));
    uint64_t d = (uint16_t)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), nl));
    return a | b << 16 | c << 32 | d << 48;
}
#endif

/* Index of the first '\n' in p[0, n), which must exist. */
static inline size_t next_lf(const char *p, size_t n)
{
    const char *q = memchr(p, '\n', n);
    assert(q != NULL);
    return (size_t)(q - p);
}

/* Index of the k-th (k >= 1) '\n' in p[0, n), which must exist. */
static size_t find_nth_lf(const char *p, size_t n, size_t k)
{
    size_t i = 0;
    assert(k >= 1);
#if defined(__SSE2__)
    /* memchr wins when the '\n' is the next one or close to it (sequential
     * reading); counting 64 bytes at a time wins when many are skipped. */
    if (k > 4) {
        for (; i + 64 <= n; i += 64) {
            uint64_t m = lf_mask64(p + i);
            size_t c = (size_t)__builtin_popcountll(m);
            if (c >= k) {
                while (--k)
                    m &= m - 1;
                return i + (size_t)__builtin_ctzll(m);
            }
            k -= c;
        }
    }
#endif
    for (;;) {
        const char *q = memchr(p + i, '\n', n - i);
        assert(q != NULL);
        if (--k == 0)
            return (size_t)(q - p);
        i = (size_t)(q - p) + 1;
    }
}

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

/* '\n' in the part of piece e from r on. The piece's count answers without
 * touching the bytes when it has no '\n' or nothing else; otherwise the
 * shorter side is scanned. */
static size_t lf_from(const struct entry *e, size_t r)
{
    if (e->lf == 0 || e->lf == e->len)
        return e->lf == 0 ? 0 : e->len - r;
    return r <= e->len - r ? e->lf - count_lf(e->u.text, r) : count_lf(e->u.text + r, e->len - r);
}

/* '\n' in text[from, from + len) of piece e. */
static size_t lf_in(const struct entry *e, size_t from, size_t len)
{
    if (e->lf == 0 || e->lf == e->len)
        return e->lf == 0 ? 0 : len;
    return count_lf(e->u.text + from, len);
}

/* ---- nodes -------------------------------------------------------------- */

static inline const struct node *node_of(const void *p)
{
    return (const struct node *)((uintptr_t)p & ~(uintptr_t)(NODE_SIZE - 1));
}

static inline struct entry get_entry(const struct node *x, unsigned i)
{
    struct entry e = {x->ptr[i], x->len[i], x->lf[i]};
    return e;
}

static inline void put_entry(struct node *x, unsigned i, struct entry e)
{
    x->ptr[i] = e.u;
    x->len[i] = e.len;
    x->lf[i] = e.lf;
}

/* Moves count entries from y[from] to x[to]; the ranges may overlap. */
static inline void move_entries(struct node *x, unsigned to, const struct node *y, unsigned from, unsigned count)
{
    memmove(&x->len[to], &y->len[from], count * sizeof x->len[0]);
    memmove(&x->lf[to], &y->lf[from], count * sizeof x->lf[0]);
    memmove(&x->ptr[to], &y->ptr[from], count * sizeof x->ptr[0]);
}

/* Warms every line of a node's counts at once: the scan that follows then
 * waits for memory about once, not once per line. */
static inline void prefetch_counts(const size_t *counts, unsigned n)
{
    for (unsigned i = 0; i < n; i += 64 / sizeof *counts)
        __builtin_prefetch(&counts[i]);
}

static bool add_slab(piece_tree *self)
{
    size_t count = self->next_slab_nodes;
    size_t bytes = count * NODE_SIZE;
    /* Large slabs aligned so that the kernel can back them with huge pages. */
    size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : NODE_SIZE;
    char *raw = aligned_alloc(align, bytes);
    if (raw == NULL)
        return false;
#if defined(MADV_HUGEPAGE)
    if (bytes >= HUGE_PAGE)
        madvise(raw, bytes, MADV_HUGEPAGE);
#endif
    struct node_slab *slab = (struct node_slab *)raw;
    slab->next = self->slabs;
    self->slabs = slab;
    /* Pushed last to first so that nodes are handed out in address order. */
    for (size_t i = count; i-- > 1;) {
        struct node *n = (struct node *)(raw + i * NODE_SIZE);
        n->next = self->free_nodes;
        self->free_nodes = n;
    }
    self->free_count += count - 1;
    self->node_total += count - 1;
    if (bytes < HUGE_PAGE)
        self->next_slab_nodes *= 2;
    return true;
}

/* Makes sure `count` nodes can be taken without allocating, so that an edit
 * either fails before touching the tree or cannot fail at all. */
static bool reserve_nodes(piece_tree *self, size_t count)
{
    while (self->free_count < count)
        if (!add_slab(self))
            return false;
    return true;
}

static struct node *take_node(piece_tree *self, unsigned level)
{
    assert(self->free_count > 0);
    struct node *n = self->free_nodes;
    self->free_nodes = n->next;
    self->free_count--;
    n->next = NULL;
    n->n = 0;
    n->level = level;
    return n;
}

static void give_node(piece_tree *self, struct node *n)
{
    n->next = self->free_nodes;
    self->free_nodes = n;
    self->free_count++;
}

static void give_subtree(piece_tree *self, struct node *n)
{
    /* Recursion depth is the tree height. */
    if (n->level > 0)
        for (unsigned i = 0; i < n->n; i++)
            give_subtree(self, n->ptr[i].child);
    give_node(self, n);
}

static void node_totals(const struct node *x, size_t *len, size_t *lf)
{
    size_t l = 0, f = 0;
    for (unsigned i = 0; i < x->n; i++) {
        l += x->len[i];
        f += x->lf[i];
    }
    *len = l;
    *lf = f;
}

static void grow_path(piece_tree *self, struct path *p, size_t len, size_t lf)
{
    for (unsigned l = 1; l < self->height; l++) {
        p->node[l]->len[p->idx[l]] += len;
        p->node[l]->lf[p->idx[l]] += lf;
    }
}

static void shrink_path(piece_tree *self, struct path *p, size_t len, size_t lf)
{
    for (unsigned l = 1; l < self->height; l++) {
        p->node[l]->len[p->idx[l]] -= len;
        p->node[l]->lf[p->idx[l]] -= lf;
    }
}

/* Inserts k (1 or 2) entries at position `at` of the node at `level` on the
 * path, splitting nodes up to the root as they overflow. The totals of the
 * path above must already count the new entries; the nodes were reserved. */
static void insert_entries(piece_tree *self, struct path *p, unsigned level, unsigned at, const struct entry *add,
                           unsigned k)
{
    struct node *x = p->node[level];
    if (x->n + k <= FANOUT) {
        move_entries(x, at + k, x, at, x->n - at);
        for (unsigned j = 0; j < k; j++)
            put_entry(x, at + j, add[j]);
        x->n += k;
        return;
    }
    unsigned total = x->n + k, left = total / 2;
    struct node *r = take_node(self, x->level);
    struct entry all[FANOUT + 2];
    for (unsigned j = 0; j < at; j++)
        all[j] = get_entry(x, j);
    for (unsigned j = 0; j < k; j++)
        all[at + j] = add[j];
    for (unsigned j = at; j < x->n; j++)
        all[j + k] = get_entry(x, j);
    for (unsigned j = 0; j < left; j++)
        put_entry(x, j, all[j]);
    for (unsigned j = left; j < total; j++)
        put_entry(r, j - left, all[j]);
    x->n = left;
    r->n = total - left;
    if (x->level == 0) {
        r->next = x->next;
        x->next = r;
    }
    struct entry re = {.u.child = r};
    node_totals(r, &re.len, &re.lf);
    if (level + 1 == self->height) {
        struct node *root = take_node(self, level + 1);
        struct entry le = {.u.child = x};
        node_totals(x, &le.len, &le.lf);
        put_entry(root, 0, le);
        put_entry(root, 1, re);
        root->n = 2;
        self->root = root;
        self->height++;
        return;
    }
    struct node *parent = p->node[level + 1];
    unsigned pi = p->idx[level + 1];
    parent->len[pi] -= re.len;
    parent->lf[pi] -= re.lf;
    insert_entries(self, p, level + 1, pi + 1, &re, 1);
}

/* Restores the fill of the node at `level` on the path (and of its ancestors
 * in turn) after it lost entries: it borrows from or merges with a sibling.
 * The totals along the path must already be right. Never allocates. */
static void fix_underflow(piece_tree *self, struct path *p, unsigned level)
{
    for (;;) {
        struct node *x = p->node[level];
        if (level + 1 == self->height) {
            /* A root with one child hands the root role down. */
            while (x->level > 0 && x->n == 1) {
                struct node *child = x->ptr[0].child;
                give_node(self, x);
                x = child;
                self->height--;
            }
            self->root = x;
            return;
        }
        if (x->n >= MIN_FILL)
            return;
        struct node *parent = p->node[level + 1];
        unsigned pi = p->idx[level + 1];
        unsigned li = pi > 0 ? pi - 1 : pi;
        struct node *l = parent->ptr[li].child, *r = parent->ptr[li + 1].child;
        unsigned total = l->n + r->n;
        if (total <= FANOUT) {
            move_entries(l, l->n, r, 0, r->n);
            l->n = total;
            if (l->level == 0)
                l->next = r->next;
            parent->len[li] += parent->len[li + 1];
            parent->lf[li] += parent->lf[li + 1];
            move_entries(parent, li + 1, parent, li + 2, parent->n - li - 2);
            parent->n--;
            give_node(self, r);
            level++;
            continue;
        }
        unsigned want = total / 2;
        if (l->n > want) {
            unsigned move = l->n - want;
            move_entries(r, move, r, 0, r->n);
            move_entries(r, 0, l, want, move);
            l->n = want;
            r->n += move;
        } else {
            unsigned move = want - l->n;
            move_entries(l, l->n, r, 0, move);
            move_entries(r, 0, r, move, r->n - move);
            l->n = want;
            r->n -= move;
        }
        node_totals(l, &parent->len[li], &parent->lf[li]);
        node_totals(r, &parent->len[li + 1], &parent->lf[li + 1]);
        return;
    }
}

/* ---- lookups ------------------------------------------------------------ */

/* Descends to the piece holding byte `offset` and returns the offset inside
 * it; *leaf and *idx get the piece, *start its document offset, *line the
 * '\n' before it (skipped when line is NULL: those counts are not read). With at_end, an offset at a boundary between pieces lands
 * at the end of the earlier piece (and offset may equal the length); without,
 * it lands at the start of the later one (offset < length). p, when not NULL,
 * records the way down. */
static size_t descend(const piece_tree *self, size_t offset, bool at_end, struct path *p, struct node **leaf,
                      unsigned *idx, size_t *start, size_t *line)
{
    struct node *x = self->root;
    size_t base = 0, lines = 0;
    for (;;) {
        const size_t *len = x->len;
        unsigned i = 0;
        prefetch_counts(len, x->n);
        prefetch_counts((const size_t *)x->ptr, x->n);
        if (p != NULL && x->level == 0)
            prefetch_counts(x->lf, x->n);
        if (at_end) {
            while (offset > len[i]) {
                offset -= len[i];
                base += len[i];
                i++;
            }
        } else {
            while (offset >= len[i]) {
                offset -= len[i];
                base += len[i];
                i++;
            }
        }
        assert(i < x->n);
        if (line != NULL)
            for (unsigned j = 0; j < i; j++)
                lines += x->lf[j];
        if (p != NULL) {
            p->node[x->level] = x;
            p->idx[x->level] = i;
        }
        if (x->level == 0) {
            /* An insert or delete inside the piece counts its '\n' next:
             * start fetching the bytes while the caller prepares. */
            if (p != NULL)
                __builtin_prefetch(x->ptr[i].text + offset);
            *leaf = x;
            *idx = i;
            *start = base;
            if (line != NULL)
                *line = lines;
            return offset;
        }
        x = x->ptr[i].child;
    }
}

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

static void forget(piece_tree *self)
{
    self->cache->leaf = NULL;
    self->cache->last_nth = 0;
}

/* The piece after (*leaf, *idx) in document order; false at the end. */
static inline bool step_piece(const struct node **leaf, unsigned *idx)
{
    if (*idx + 1 < (*leaf)->n) {
        ++*idx;
        return true;
    }
    *leaf = (*leaf)->next;
    *idx = 0;
    return *leaf != NULL;
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

/* ---- public: lifetime --------------------------------------------------- */

static void store_release(struct store *store)
{
    /* The last one out sees every block the tree appended: the tree's
     * release comes after its last append. */
    if (atomic_fetch_sub_explicit(&store->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (struct add_block *b = store->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(store->original);
    free(store);
}

piece_tree *piece_tree_new(void)
{
    piece_tree *self = malloc(sizeof *self);
    if (self == NULL)
        return NULL;
    memset(self, 0, sizeof *self);
    self->next_block_cap = PIECE_TREE_ADD_BLOCK_MIN;
    self->next_slab_nodes = NODE_SLAB_MIN;
    self->cache = &self->cache_storage;
    self->store = malloc(sizeof *self->store);
    if (self->store == NULL) {
        free(self);
        return NULL;
    }
    atomic_init(&self->store->refs, 1);
    self->store->original = NULL;
    self->store->original_len = 0;
    self->store->blocks = NULL;
    if (!reserve_nodes(self, 1)) {
        free(self->store);
        free(self);
        return NULL;
    }
    self->root = take_node(self, 0);
    self->height = 1;
    return self;
}

/* Length of the original piece that starts at `at`. */
static size_t original_cut(const char *original, size_t len, size_t at)
{
    size_t n = len - at;
    if (n > PIECE_TREE_ORIGINAL_PIECE) {
        /* Cut after a '\n' when one is in the upper half, so that most lines
         * sit whole in one piece and are read as one chunk. */
        n = PIECE_TREE_ORIGINAL_PIECE;
        const char *nl = memrchr(original + at + n / 2, '\n', n - n / 2);
        if (nl != NULL)
            n = (size_t)(nl - (original + at)) + 1;
    }
    return n;
}

piece_tree *piece_tree_new_owning(char *original, size_t len)
{
    assert(original != NULL || len == 0);
    piece_tree *self = piece_tree_new();
    if (self == NULL)
        return NULL;
    if (len > 0) {
        /* Every piece but the last is longer than half the bound, which
         * bounds the pieces, and so the nodes, before anything is built. */
        size_t need = 0;
        for (size_t c = len / (PIECE_TREE_ORIGINAL_PIECE / 2) + 1;;) {
            size_t k = (c + FANOUT - 1) / FANOUT;
            need += k;
            if (k == 1)
                break;
            c = k;
        }
        give_node(self, self->root);
        self->root = NULL;
        if (!reserve_nodes(self, need)) {
            self->root = take_node(self, 0);
            goto fail;
        }
        size_t k = 0, count = 0;
        struct node *first = NULL, *before = NULL, *leaf = NULL;
        for (size_t at = 0; at < len;) {
            if (leaf == NULL || leaf->n == FANOUT) {
                struct node *x = take_node(self, 0);
                if (leaf != NULL)
                    leaf->next = x;
                else
                    first = x;
                before = leaf;
                leaf = x;
                k++;
            }
            size_t n = original_cut(original, len, at);
            struct entry e = {.u.text = original + at, .len = n, .lf = count_lf(original + at, n)};
            put_entry(leaf, leaf->n++, e);
            self->lf += e.lf;
            count++;
            at += n;
        }
        /* Leaves are filled in turn: the last one may be short, and the
         * full one before it shares with it. */
        if (before != NULL && leaf->n < MIN_FILL) {
            unsigned want = (before->n + leaf->n) / 2, move = before->n - want;
            move_entries(leaf, move, leaf, 0, leaf->n);
            move_entries(leaf, 0, before, want, move);
            before->n = want;
            leaf->n += move;
        }
        self->length = len;
        self->pieces = count;
        self->height = 1;
        /* Internal levels are chained through next while they are built. */
        for (size_t c = k; c > 1;) {
            size_t up = (c + FANOUT - 1) / FANOUT;
            struct node *child = first, *upfirst = NULL, *upprev = NULL;
            for (size_t i = 0; i < up; i++) {
                struct node *x = take_node(self, self->height);
                size_t fill = c / up + (i < c % up);
                for (size_t j = 0; j < fill; j++) {
                    struct entry e = {.u.child = child};
                    node_totals(child, &e.len, &e.lf);
                    put_entry(x, x->n++, e);
                    struct node *next = child->next;
                    if (child->level > 0)
                        child->next = NULL;
                    child = next;
                }
                if (upprev != NULL)
                    upprev->next = x;
                else
                    upfirst = x;
                upprev = x;
            }
            first = upfirst;
            c = up;
            self->height++;
        }
        if (first->level > 0)
            first->next = NULL;
        self->root = first;
    }
    self->store->original = original;
    self->store->original_len = len;
    return self;

fail:
    /* The caller keeps `original` when creation fails. */
    piece_tree_free(self);
    return NULL;
}

void piece_tree_free(piece_tree *self)
{
    if (self == NULL)
        return;
    for (struct node_slab *s = self->slabs, *next; s != NULL; s = next) {
        next = s->next;
        free(s);
    }
    store_release(self->store);
    free(self);
}

size_t piece_tree_length(const piece_tree *self)
{
    return self->length;
}

const char *piece_tree_flat(const piece_tree *self)
{
    if (self->edited)
        return NULL;
    return self->length ? self->store->original : "";
}

size_t piece_tree_line_count(const piece_tree *self)
{
    return self->lf + 1;
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

bool piece_tree_lines_next(piece_tree_lines *it, const char **chunk, size_t *len, bool *ends)
{
    if (it->lines_left == 0)
        return false;
    while (it->left == 0) {
        bool more = it->snapshot ? piece_tree_snapshot_reader_next(&it->snap_reader, &it->at, &it->left)
                                 : piece_tree_reader_next(&it->tree_reader, &it->at, &it->left);
        if (!more) {
            /* The bytes ran out: that ends the last line. */
            *chunk = "";
            *len = 0;
            *ends = true;
            it->lines_left--;
            return true;
        }
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

bool piece_tree_lines_copy(piece_tree_lines *it, char *out, size_t cap, size_t *len)
{
    if (it->lines_left == 0)
        return false;
    size_t got = 0; /* the line's bytes so far, copied or not */
    for (;;) {
        while (it->left == 0) {
            bool more = it->snapshot ? piece_tree_snapshot_reader_next(&it->snap_reader, &it->at, &it->left)
                                     : piece_tree_reader_next(&it->tree_reader, &it->at, &it->left);
            if (!more) {
                it->lines_left--;
                *len = got;
                return true;
            }
        }
        const char *p = it->at;
        size_t left = it->left;
#if defined(HAVE_AVX2_COPY)
        if (got <= cap && __builtin_cpu_supports("avx2")) {
            bool found;
            size_t k = copy_to_lf_avx2(p, left, out + got, cap - got, &found);
            if (found) {
                it->at = p + k + 1;
                it->left = left - k - 1;
                it->lines_left--;
                *len = got + k;
                return true;
            }
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
            if (m) {
                unsigned k = (unsigned)__builtin_ctz(m);
                it->at = p + k + 1;
                it->left = left - k - 1;
                it->lines_left--;
                *len = got + k;
                return true;
            }
            p += 32;
            left -= 32;
            got += 32;
        }
        while (left >= 16 && got + 16 <= cap) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, nl));
            _mm_storeu_si128((__m128i *)(out + got), v);
            if (m) {
                unsigned k = (unsigned)__builtin_ctz(m);
                it->at = p + k + 1;
                it->left = left - k - 1;
                it->lines_left--;
                *len = got + k;
                return true;
            }
            p += 16;
            left -= 16;
            got += 16;
        }
#endif
        const char *nl_at = memchr(p, '\n', left);
        size_t n = nl_at ? (size_t)(nl_at - p) : left;
        if (got < cap)
            memcpy(out + got, p, n < cap - got ? n : cap - got);
        got += n;
        if (nl_at) {
            it->at = nl_at + 1;
            it->left = left - n - 1;
            it->lines_left--;
            *len = got;
            return true;
        }
        it->left = 0;
    }
}

size_t piece_tree_piece_count(const piece_tree *self)
{
    return self->pieces;
}

/* ---- public: editing ---------------------------------------------------- */

/* Room for len bytes in the add buffer, or NULL when out of memory. Nothing is
 * committed: the caller bumps `used` of the returned block (*block). */
static char *add_space(piece_tree *self, size_t len, struct add_block **block)
{
    struct add_block *b = self->cur;
    if (b != NULL && b->cap - b->used >= len) {
        *block = b;
        return b->data + b->used;
    }
    /* A large insert gets a block of its own and leaves the current block
     * current, so little of a block is ever left unused. */
    bool large = len > PIECE_TREE_ADD_BLOCK_MAX / 4;
    size_t cap = large || len > self->next_block_cap ? len : self->next_block_cap;
    if (cap > SIZE_MAX - sizeof *b)
        return NULL;
    b = malloc(sizeof *b + cap);
    if (b == NULL)
        return NULL;
    b->cap = cap;
    b->used = 0;
    b->next = self->store->blocks;
    self->store->blocks = b;
    if (!large) {
        self->cur = b;
        if (self->next_block_cap < PIECE_TREE_ADD_BLOCK_MAX)
            self->next_block_cap *= 2;
    }
    *block = b;
    return b->data;
}

/* The piece's bytes are the last ones appended to the current add block. */
static bool ends_add_buffer(const piece_tree *self, const struct entry *e)
{
    const struct add_block *b = self->cur;
    return b != NULL && e->u.text + e->len == b->data + b->used && e->u.text >= b->data;
}

/* Whether the last len bytes of the current add block may be handed out
 * again: not when a live snapshot may show them. */
static bool may_give_back(piece_tree *self, size_t len)
{
    const struct add_block *b = self->cur;
    if (b != self->floor_block || b->used - len >= self->floor_used)
        return true;
    /* Only the tree's own reference left: every snapshot has been released,
     * and its reads happened before its release. */
    if (atomic_load_explicit(&self->store->refs, memory_order_acquire) == 1) {
        self->floor_block = NULL;
        return true;
    }
    return false;
}

int piece_tree_insert(piece_tree *self, size_t offset, const char *text, size_t len)
{
    assert(offset <= self->length);
    assert(text != NULL || len == 0);
    if (len == 0)
        return 0;
    self->edited = true;
    size_t lf = count_lf(text, len);

    struct path p;
    struct node *leaf = self->root;
    unsigned i = 0;
    struct entry e = {.len = 0};
    size_t r = 0, start;
    if (self->pieces > 0) {
        r = descend(self, offset, true, &p, &leaf, &i, &start, NULL);
        e = get_entry(leaf, i);
    } else {
        p.node[0] = leaf;
        p.idx[0] = 0;
    }

    if (self->pieces > 0 && r == e.len && ends_add_buffer(self, &e) && self->cur->cap - self->cur->used >= len) {
        /* Typing on: the piece grows in place. */
        memcpy(self->cur->data + self->cur->used, text, len);
        self->cur->used += len;
        leaf->len[i] += len;
        leaf->lf[i] += lf;
        grow_path(self, &p, len, lf);
        self->length += len;
        self->lf += lf;
        forget(self);
        return 0;
    }

    /* A split at every level and a new root, at most. */
    if (!reserve_nodes(self, self->height + 1))
        return -1;
    struct add_block *block;
    char *dst = add_space(self, len, &block);
    if (dst == NULL)
        return -1;
    memcpy(dst, text, len);
    block->used += len;

    struct entry add[2];
    unsigned k = 1, at;
    add[0].u.text = dst;
    add[0].len = len;
    add[0].lf = lf;
    if (self->pieces == 0 || r == 0) {
        at = i;
    } else if (r == e.len) {
        at = i + 1;
    } else {
        size_t tail_lf = lf_from(&e, r);
        add[1].u.text = e.u.text + r;
        add[1].len = e.len - r;
        add[1].lf = tail_lf;
        leaf->len[i] = r;
        leaf->lf[i] -= tail_lf;
        k = 2;
        at = i + 1;
    }
    grow_path(self, &p, len, lf);
    insert_entries(self, &p, 0, at, add, k);
    self->pieces += k;
    self->length += len;
    self->lf += lf;
    forget(self);
    return 0;
}

int piece_tree_delete(piece_tree *self, size_t offset, size_t len)
{
    assert(len <= self->length && offset <= self->length - len);
    if (len == 0)
        return 0;
    self->edited = true;
    forget(self);
    if (len == self->length) {
        /* Emptying the document: drop every node without rebalancing. */
        give_subtree(self, self->root);
        self->root = take_node(self, 0);
        self->height = 1;
        self->length = 0;
        self->lf = 0;
        self->pieces = 0;
        return 0;
    }

    struct path p;
    struct node *leaf;
    unsigned i;
    size_t start;
    size_t r = descend(self, offset, false, &p, &leaf, &i, &start, NULL);
    struct entry e = get_entry(leaf, i);
    if (r + len <= e.len && !(r == 0 && len == e.len)) {
        if (r == 0) {
            size_t lf = lf_in(&e, 0, len);
            leaf->ptr[i].text += len;
            leaf->len[i] -= len;
            leaf->lf[i] -= lf;
            shrink_path(self, &p, len, lf);
            self->lf -= lf;
        } else if (r + len == e.len) {
            size_t lf = lf_in(&e, r, len);
            /* Backspace right after typing: no piece refers to these
             * bytes, so the add buffer takes them back and the next
             * keystroke still extends the same piece. */
            if (ends_add_buffer(self, &e) && may_give_back(self, len))
                self->cur->used -= len;
            leaf->len[i] -= len;
            leaf->lf[i] -= lf;
            shrink_path(self, &p, len, lf);
            self->lf -= lf;
        } else {
            /* Strictly inside one piece: the tail becomes a piece. */
            if (!reserve_nodes(self, self->height + 1))
                return -1;
            struct entry tail;
            size_t tail_len = e.len - r - len;
            size_t gone_lf = lf_in(&e, r, len);
            tail.u.text = e.u.text + r + len;
            tail.len = tail_len;
            tail.lf = lf_in(&e, r + len, tail_len);
            leaf->len[i] = r;
            leaf->lf[i] -= gone_lf + tail.lf;
            shrink_path(self, &p, len, gone_lf);
            insert_entries(self, &p, 0, i + 1, &tail, 1);
            self->pieces++;
            self->lf -= gone_lf;
        }
        self->length -= len;
        return 0;
    }

    size_t left = len;
    if (r > 0) {
        size_t gone = e.len - r;
        size_t lf = lf_in(&e, r, gone);
        leaf->len[i] = r;
        leaf->lf[i] -= lf;
        shrink_path(self, &p, gone, lf);
        self->length -= gone;
        self->lf -= lf;
        left -= gone;
    }
    /* Whole pieces from `offset` on, a leaf at a time, then the head of the
     * last one. Each round descends afresh: rebalancing moves pieces. */
    while (left > 0) {
        descend(self, offset, false, &p, &leaf, &i, &start, NULL);
        unsigned j = i;
        size_t glen = 0, glf = 0;
        while (j < leaf->n && leaf->len[j] <= left - glen) {
            glen += leaf->len[j];
            glf += leaf->lf[j];
            j++;
        }
        move_entries(leaf, i, leaf, j, leaf->n - j);
        leaf->n -= j - i;
        self->pieces -= j - i;
        left -= glen;
        if (left > 0 && i < leaf->n) {
            e = get_entry(leaf, i);
            size_t lf = lf_in(&e, 0, left);
            leaf->ptr[i].text += left;
            leaf->len[i] -= left;
            leaf->lf[i] -= lf;
            glen += left;
            glf += lf;
            left = 0;
        }
        shrink_path(self, &p, glen, glf);
        self->length -= glen;
        self->lf -= glf;
        fix_underflow(self, &p, 0);
    }
    return 0;
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

/* ---- public: checking --------------------------------------------------- */

struct check_walk {
    size_t offset; /* document offset of the next piece in order */
    size_t line;   /* '\n' before it */
    size_t pieces;
    size_t nodes;
    const struct node *prev_leaf;
    bool saw_cached;
    bool saw_last_lf;
};

static bool points_into_buffers(const piece_tree *self, const struct entry *e)
{
    const struct store *st = self->store;
    if (st->original != NULL && e->u.text >= st->original && e->len <= st->original_len &&
        (size_t)(e->u.text - st->original) <= st->original_len - e->len)
        return true;
    for (const struct add_block *b = st->blocks; b != NULL; b = b->next)
        if (e->u.text >= b->data && e->len <= b->used && (size_t)(e->u.text - b->data) <= b->used - e->len)
            return true;
    return false;
}

static bool check_piece(const piece_tree *self, const struct node *leaf, unsigned idx, struct check_walk *w)
{
    struct entry ev = get_entry(leaf, idx);
    const struct entry *e = &ev;
    if (e->len == 0 || !points_into_buffers(self, e))
        return false;
    size_t own_lf = 0;
    for (size_t i = 0; i < e->len; i++)
        own_lf += e->u.text[i] == '\n';
    if (own_lf != e->lf)
        return false;
    const struct line_cache *c = self->cache;
    if (leaf == c->leaf && idx == c->idx) {
        w->saw_cached = true;
        if (c->text != e->u.text || c->len != e->len || c->lf != e->lf)
            return false;
        if (c->start != w->offset || c->line != w->line || c->mark > e->len)
            return false;
        size_t mark_lf = 0;
        for (size_t i = 0; i < c->mark; i++)
            mark_lf += e->u.text[i] == '\n';
        if (mark_lf != c->mark_lf)
            return false;
    }
    if (c->last_nth != 0 && c->last_at >= w->offset && c->last_at - w->offset < e->len) {
        size_t r = c->last_at - w->offset, before = 0;
        for (size_t i = 0; i < r; i++)
            before += e->u.text[i] == '\n';
        if (e->u.text[r] != '\n' || w->line + before + 1 != c->last_nth)
            return false;
        w->saw_last_lf = true;
    }
    w->offset += e->len;
    w->line += e->lf;
    w->pieces++;
    return true;
}

/* Recounts the subtree of x from the real bytes into *len and *lf; returns
 * false on the first broken invariant. */
static bool check_node(const piece_tree *self, const struct node *x, unsigned level, struct check_walk *w, size_t *len,
                       size_t *lf)
{
    if (((uintptr_t)x & (NODE_SIZE - 1)) != 0 || x->level != level || x->n > FANOUT)
        return false;
    if (x == self->root) {
        if (level > 0 ? x->n < 2 : (x->n == 0) != (self->length == 0))
            return false;
    } else if (x->n < MIN_FILL) {
        return false;
    }
    w->nodes++;
    size_t tl = 0, tf = 0;
    for (unsigned i = 0; i < x->n; i++) {
        if (level > 0) {
            size_t cl, cf;
            if (!check_node(self, x->ptr[i].child, level - 1, w, &cl, &cf))
                return false;
            if (cl != x->len[i] || cf != x->lf[i])
                return false;
        } else if (!check_piece(self, x, i, w)) {
            return false;
        }
        tl += x->len[i];
        tf += x->lf[i];
    }
    if (level == 0) {
        if (w->prev_leaf != NULL && w->prev_leaf->next != x)
            return false;
        w->prev_leaf = x;
    }
    *len = tl;
    *lf = tf;
    return true;
}

bool piece_tree_check(const piece_tree *self)
{
    if (self->root == NULL || self->height == 0 || self->height > MAX_DEPTH || self->root->level != self->height - 1)
        return false;
    struct check_walk w = {0};
    size_t len, lf;
    if (!check_node(self, self->root, self->height - 1, &w, &len, &lf))
        return false;
    if (w.prev_leaf == NULL || w.prev_leaf->next != NULL)
        return false;
    if (len != self->length || lf != self->lf || w.pieces != self->pieces)
        return false;
    if (self->cache->leaf != NULL && !w.saw_cached)
        return false;
    if (self->cache->last_nth != 0 && !w.saw_last_lf)
        return false;
    size_t free_count = 0;
    for (const struct node *n = self->free_nodes; n != NULL; n = n->next)
        free_count++;
    if (free_count != self->free_count || w.nodes + free_count != self->node_total)
        return false;
    bool floor_seen = self->floor_block == NULL;
    for (const struct add_block *b = self->store->blocks; b != NULL; b = b->next) {
        if (b->used > b->cap)
            return false;
        if (b == self->floor_block)
            floor_seen = b->used >= self->floor_used && self->floor_used <= b->cap;
    }
    return floor_seen;
}
