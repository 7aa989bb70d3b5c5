/* What the piece tree's own sources share, and nothing else includes: the
 * sizes it is built with, its nodes, the tree itself, the byte scanning
 * that every part counts '\n' with, and the few functions one part calls in
 * another. Users of the tree include piece_tree.h. */
#ifndef ECPD_PIECE_TREE_INTERNAL_H
#define ECPD_PIECE_TREE_INTERNAL_H

#include "piece_tree.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
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

static inline size_t count_lf(const char *p, size_t n)
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
static inline size_t find_nth_lf(const char *p, size_t n, size_t k)
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

/* ---- nodes -------------------------------------------------------------- */

static inline struct entry get_entry(const struct node *x, unsigned i)
{
    struct entry e = {x->ptr[i], x->len[i], x->lf[i]};
    return e;
}

/* Warms every line of a node's counts at once: the scan that follows then
 * waits for memory about once, not once per line. */
static inline void prefetch_counts(const size_t *counts, unsigned n)
{
    for (unsigned i = 0; i < n; i += 64 / sizeof *counts)
        __builtin_prefetch(&counts[i]);
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

/* ---- across the parts ---------------------------------------------------- */

/* piece_tree.c */
size_t descend(const piece_tree *self, size_t offset, bool at_end, struct path *p, struct node **leaf,
               unsigned *idx, size_t *start, size_t *line);
void store_release(struct store *store);

#endif
