/* piece_tree: a red-black tree of pieces over an owned original buffer and an
 * append-only add buffer.
 *
 * Layout decisions and the reasons for them:
 *
 * - A node stores the byte and '\n' totals of its LEFT subtree, not of its
 *   whole subtree. A descent by offset or by line then reads only the node it
 *   visits, never a child, so it costs one cache line per level.
 * - A node is exactly 64 bytes and nodes live in 64-byte aligned slabs (the
 *   red/black bit hides in the low bit of the parent pointer to make room).
 *   Slabs grow from 2 KiB to 2 MiB, the large ones on huge pages where the
 *   kernel gives them: a tree of millions of pieces is far larger than the
 *   caches, and every level of a descent is then a memory access that should
 *   not also be a TLB miss.
 * - The original is cut into pieces of at most ORIGINAL_PIECE bytes at load
 *   time (after a '\n' when one is near the cut), so finding a line inside a
 *   piece scans a bounded number of bytes, with nothing stored per line.
 * - Pieces point straight at their bytes. The original never moves and the
 *   add buffer is a list of blocks that are never reallocated.
 * - An insert where the previous one ended, whose bytes would follow the
 *   previous insert's in the add buffer, lengthens that piece instead of
 *   adding one, and a delete of its tail (backspace) shortens it and gives the
 *   bytes back to the add buffer: typing does not fragment the tree.
 * - Editors read lines in order, so the piece the last line lookup landed in,
 *   and how far into it the lookup had counted, is remembered; the next
 *   lookup in that piece resumes the scan instead of descending and scanning
 *   from the piece start again. Every edit forgets it.
 */
#include "piece_tree.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Upper bound of an original piece: the most bytes one line lookup scans. The
 * fuzz target builds with tiny values so that every boundary case occurs in a
 * few bytes of input. */
#ifndef PIECE_TREE_ORIGINAL_PIECE
#define PIECE_TREE_ORIGINAL_PIECE (16 * 1024)
#endif
/* Add blocks start small so that a document that is only read costs nothing
 * and a lightly edited one little, then double to amortise allocation. */
#ifndef PIECE_TREE_ADD_BLOCK_MIN
#define PIECE_TREE_ADD_BLOCK_MIN (4 * 1024)
#endif
#ifndef PIECE_TREE_ADD_BLOCK_MAX
#define PIECE_TREE_ADD_BLOCK_MAX (1024 * 1024)
#endif
_Static_assert(PIECE_TREE_ORIGINAL_PIECE >= 2, "load cuts pieces at no less than half the bound");
#define CACHE_LINE 64
#define HUGE_PAGE (2 * 1024 * 1024)
#define NODE_SLAB_MIN 32
#define NODE_SLAB_MAX (HUGE_PAGE / CACHE_LINE)

struct node {
    struct node *left;
    struct node *right;
    uintptr_t parent_color; /* parent pointer, low bit set when red */
    size_t size_left;       /* bytes in the left subtree */
    size_t lf_left;         /* '\n' in the left subtree */
    const char *text;
    size_t len;
    size_t lf;
};

_Static_assert(sizeof(struct node) == CACHE_LINE, "a node must fill exactly one cache line");

/* Never reallocated: pieces point into data. */
struct add_block {
    struct add_block *next;
    size_t cap;
    size_t used;
    char data[];
};

struct node_slab {
    struct node_slab *next;
    void *raw;
};

/* Where the last line lookup landed. Valid until the next edit. */
struct line_cache {
    const struct node *node; /* NULL when nothing is remembered */
    size_t start;            /* document offset of node's first byte */
    size_t line;             /* '\n' before node */
    size_t mark;             /* an offset inside the piece, 0..len */
    size_t mark_lf;          /* '\n' in text[0, mark) */
    size_t last_nth;         /* the last '\n' found is the last_nth-th (0: none) */
    size_t last_at;          /* and it is at this document offset */
};

struct piece_tree {
    struct node *root;
    struct node nil; /* sentinel: black, zero length; leaves and root's parent */
    size_t length;
    size_t lf;
    size_t pieces;

    char *original;
    size_t original_len;

    struct add_block *blocks; /* every block, newest first */
    struct add_block *cur;    /* the block small inserts append to, or NULL */
    size_t next_block_cap;

    struct node_slab *slabs;
    size_t next_slab_nodes;
    struct node *free_nodes; /* linked through left */
    struct node *bump;       /* never used nodes of the newest slab */
    struct node *bump_end;
    size_t free_count;       /* both of the above */

    /* The piece the previous insert created or extended, and the document
     * offset where it ends; an insert exactly there extends it in place as
     * long as its bytes are the last ones appended to the add buffer. */
    struct node *last_insert;
    size_t last_insert_end;

    /* Lookups take a const tree yet update the cache: the pointer makes that
     * an ordinary write to a non-const object. */
    struct line_cache *cache;
    struct line_cache cache_storage;
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
static uint64_t lf_mask64(const char *p)
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

/* '\n' in the part of piece n from r on. The node's count answers without
 * touching the bytes when the piece has no '\n' or nothing else; otherwise
 * the shorter side is scanned. */
static size_t lf_from(const struct node *n, size_t r)
{
    if (n->lf == 0 || n->lf == n->len)
        return n->lf == 0 ? 0 : n->len - r;
    return r <= n->len - r ? n->lf - count_lf(n->text, r) : count_lf(n->text + r, n->len - r);
}

/* '\n' in text[from, from + len) of piece n, without touching the bytes
 * when the piece's count decides it. */
static size_t lf_in(const struct node *n, size_t from, size_t len)
{
    if (n->lf == 0 || n->lf == n->len)
        return n->lf == 0 ? 0 : len;
    return count_lf(n->text + from, len);
}

/* ---- nodes -------------------------------------------------------------- */

static inline struct node *parent_of(const struct node *n)
{
    return (struct node *)(n->parent_color & ~(uintptr_t)1);
}

static inline bool is_red(const struct node *n)
{
    return n->parent_color & 1;
}

static inline void set_parent(struct node *n, struct node *p)
{
    n->parent_color = (uintptr_t)p | (n->parent_color & 1);
}

static inline void set_red(struct node *n)
{
    n->parent_color |= 1;
}

static inline void set_black(struct node *n)
{
    n->parent_color &= ~(uintptr_t)1;
}

static bool add_slab(piece_tree *self)
{
    size_t count = self->next_slab_nodes;
    size_t bytes = count * sizeof(struct node);
    char *raw;
    size_t have;
    if (bytes >= HUGE_PAGE) {
        /* Aligned so that the kernel can back it with one huge page. */
        raw = aligned_alloc(HUGE_PAGE, bytes);
        if (raw == NULL)
            return false;
#if defined(MADV_HUGEPAGE)
        madvise(raw, bytes, MADV_HUGEPAGE);
#endif
        have = bytes;
    } else {
        have = bytes + CACHE_LINE;
        raw = malloc(have);
        if (raw == NULL)
            return false;
    }
    /* What is left of the previous slab moves to the free list. */
    while (self->bump != self->bump_end) {
        self->bump->left = self->free_nodes;
        self->free_nodes = self->bump++;
    }
    /* The start of a slab, before its first aligned node, links the slabs. */
    struct node_slab *slab = (struct node_slab *)raw;
    slab->raw = raw;
    slab->next = self->slabs;
    self->slabs = slab;
    uintptr_t first = ((uintptr_t)raw + sizeof(struct node_slab) + CACHE_LINE - 1) & ~(uintptr_t)(CACHE_LINE - 1);
    self->bump = (struct node *)first;
    self->bump_end = self->bump + ((uintptr_t)raw + have - first) / sizeof(struct node);
    self->free_count += (size_t)(self->bump_end - self->bump);
    if (self->next_slab_nodes < NODE_SLAB_MAX)
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

static struct node *take_node(piece_tree *self, const char *text, size_t len, size_t lf)
{
    assert(self->free_count > 0);
    struct node *n = self->free_nodes;
    if (n != NULL)
        self->free_nodes = n->left;
    else
        n = self->bump++;
    self->free_count--;
    n->left = n->right = &self->nil;
    n->parent_color = (uintptr_t)&self->nil;
    n->size_left = n->lf_left = 0;
    n->text = text;
    n->len = len;
    n->lf = lf;
    return n;
}

static void give_node(piece_tree *self, struct node *n)
{
    n->left = self->free_nodes;
    self->free_nodes = n;
    self->free_count++;
}

static void give_subtree(piece_tree *self, struct node *n)
{
    /* Recursion depth is the tree height: at most twice log2 of the pieces. */
    if (n == &self->nil)
        return;
    give_subtree(self, n->left);
    give_subtree(self, n->right);
    give_node(self, n);
}

static struct node *leftmost(const piece_tree *self, struct node *n)
{
    while (n->left != &self->nil)
        n = n->left;
    return n;
}

static const struct node *successor(const piece_tree *self, const struct node *n)
{
    if (n->right != &self->nil)
        return leftmost(self, n->right);
    const struct node *p = parent_of(n);
    while (p != &self->nil && n == p->right) {
        n = p;
        p = parent_of(p);
    }
    return p == &self->nil ? NULL : p;
}

/* The left-subtree totals of every ancestor that has n on its left change
 * when n's subtree gains or loses bytes. */
static void grow_upward(piece_tree *self, struct node *n, size_t len, size_t lf)
{
    for (struct node *p = parent_of(n); p != &self->nil; n = p, p = parent_of(p)) {
        if (n == p->left) {
            p->size_left += len;
            p->lf_left += lf;
        }
    }
}

static void shrink_upward(piece_tree *self, struct node *n, size_t len, size_t lf)
{
    for (struct node *p = parent_of(n); p != &self->nil; n = p, p = parent_of(p)) {
        if (n == p->left) {
            p->size_left -= len;
            p->lf_left -= lf;
        }
    }
}

/* ---- red-black balancing ------------------------------------------------ */

static void replace_child(piece_tree *self, struct node *p, struct node *old, struct node *new_child)
{
    if (p == &self->nil)
        self->root = new_child;
    else if (p->left == old)
        p->left = new_child;
    else
        p->right = new_child;
}

static void rotate_left(piece_tree *self, struct node *x)
{
    struct node *y = x->right;
    x->right = y->left;
    if (y->left != &self->nil)
        set_parent(y->left, x);
    set_parent(y, parent_of(x));
    replace_child(self, parent_of(x), x, y);
    y->left = x;
    set_parent(x, y);
    /* y's left subtree is now x with all of x's left subtree. */
    y->size_left += x->size_left + x->len;
    y->lf_left += x->lf_left + x->lf;
}

static void rotate_right(piece_tree *self, struct node *y)
{
    struct node *x = y->left;
    y->left = x->right;
    if (x->right != &self->nil)
        set_parent(x->right, y);
    set_parent(x, parent_of(y));
    replace_child(self, parent_of(y), y, x);
    x->right = y;
    set_parent(y, x);
    /* y's left subtree is now only x's former right subtree. */
    y->size_left -= x->size_left + x->len;
    y->lf_left -= x->lf_left + x->lf;
}

static void insert_fixup(piece_tree *self, struct node *z)
{
    while (is_red(parent_of(z))) {
        struct node *p = parent_of(z);
        struct node *g = parent_of(p);
        if (p == g->left) {
            struct node *u = g->right;
            if (is_red(u)) {
                set_black(p);
                set_black(u);
                set_red(g);
                z = g;
            } else {
                if (z == p->right) {
                    z = p;
                    rotate_left(self, z);
                    p = parent_of(z);
                }
                set_black(p);
                set_red(g);
                rotate_right(self, g);
            }
        } else {
            struct node *u = g->left;
            if (is_red(u)) {
                set_black(p);
                set_black(u);
                set_red(g);
                z = g;
            } else {
                if (z == p->left) {
                    z = p;
                    rotate_right(self, z);
                    p = parent_of(z);
                }
                set_black(p);
                set_red(g);
                rotate_left(self, g);
            }
        }
    }
    set_black(self->root);
}

static void delete_fixup(piece_tree *self, struct node *x)
{
    while (x != self->root && !is_red(x)) {
        struct node *p = parent_of(x);
        if (x == p->left) {
            struct node *w = p->right;
            if (is_red(w)) {
                set_black(w);
                set_red(p);
                rotate_left(self, p);
                w = p->right;
            }
            if (!is_red(w->left) && !is_red(w->right)) {
                set_red(w);
                x = p;
            } else {
                if (!is_red(w->right)) {
                    set_black(w->left);
                    set_red(w);
                    rotate_right(self, w);
                    w = p->right;
                }
                if (is_red(p))
                    set_red(w);
                else
                    set_black(w);
                set_black(p);
                set_black(w->right);
                rotate_left(self, p);
                x = self->root;
            }
        } else {
            struct node *w = p->left;
            if (is_red(w)) {
                set_black(w);
                set_red(p);
                rotate_right(self, p);
                w = p->left;
            }
            if (!is_red(w->right) && !is_red(w->left)) {
                set_red(w);
                x = p;
            } else {
                if (!is_red(w->left)) {
                    set_black(w->right);
                    set_red(w);
                    rotate_left(self, w);
                    w = p->left;
                }
                if (is_red(p))
                    set_red(w);
                else
                    set_black(w);
                set_black(p);
                set_black(w->left);
                rotate_right(self, p);
                x = self->root;
            }
        }
    }
    set_black(x);
}

/* Links z as the in-order successor of pos (pos == nil: as the first piece). */
static void link_after(piece_tree *self, struct node *pos, struct node *z)
{
    set_red(z);
    if (self->root == &self->nil) {
        self->root = z;
    } else if (pos == &self->nil) {
        struct node *p = leftmost(self, self->root);
        p->left = z;
        set_parent(z, p);
    } else if (pos->right == &self->nil) {
        pos->right = z;
        set_parent(z, pos);
    } else {
        struct node *p = leftmost(self, pos->right);
        p->left = z;
        set_parent(z, p);
    }
    grow_upward(self, z, z->len, z->lf);
    insert_fixup(self, z);
    self->pieces++;
}

/* Links z as the in-order predecessor of pos. */
static void link_before(piece_tree *self, struct node *pos, struct node *z)
{
    set_red(z);
    struct node *p = pos;
    if (p->left == &self->nil) {
        p->left = z;
    } else {
        for (p = p->left; p->right != &self->nil;)
            p = p->right;
        p->right = z;
    }
    set_parent(z, p);
    grow_upward(self, z, z->len, z->lf);
    insert_fixup(self, z);
    self->pieces++;
}

static void unlink_node(piece_tree *self, struct node *z)
{
    struct node *y = z;
    if (z->left != &self->nil && z->right != &self->nil) {
        /* Move the successor's piece into z and unlink the successor, which
         * has at most one child. Ancestors above z lose z's bytes; the nodes
         * between z and the successor lose the successor's. */
        y = leftmost(self, z->right);
        for (struct node *n = y, *p = parent_of(y); p != z; n = p, p = parent_of(p)) {
            if (n == p->left) {
                p->size_left -= y->len;
                p->lf_left -= y->lf;
            }
        }
        shrink_upward(self, z, z->len, z->lf);
        z->text = y->text;
        z->len = y->len;
        z->lf = y->lf;
    } else {
        shrink_upward(self, z, z->len, z->lf);
    }
    /* y now holds no bytes of its own and its subtree is its one child's,
     * so splicing it out changes no ancestor's totals. */
    struct node *x = y->left != &self->nil ? y->left : y->right;
    struct node *p = parent_of(y);
    set_parent(x, p);
    replace_child(self, p, y, x);
    if (!is_red(y))
        delete_fixup(self, x);
    give_node(self, y);
    self->pieces--;
}

/* ---- lookups ------------------------------------------------------------ */

/* The piece holding byte `offset` (offset < length); *start gets the
 * document offset of the piece, *line the number of '\n' before it. */
static struct node *find_byte(const piece_tree *self, size_t offset, size_t *start, size_t *line)
{
    struct node *x = self->root;
    size_t base = 0, lines = 0;
    for (;;) {
        assert(x != &self->nil);
        if (offset < x->size_left) {
            x = x->left;
        } else if (offset - x->size_left < x->len) {
            *start = base + x->size_left;
            *line = lines + x->lf_left;
            return x;
        } else {
            offset -= x->size_left + x->len;
            base += x->size_left + x->len;
            lines += x->lf_left + x->lf;
            x = x->right;
        }
    }
}

/* The piece holding the nth (nth >= 1) '\n' of the document. */
static struct node *find_lf(const piece_tree *self, size_t nth, size_t *start, size_t *line)
{
    struct node *x = self->root;
    size_t base = 0, lines = 0;
    for (;;) {
        assert(x != &self->nil);
        if (nth <= x->lf_left) {
            x = x->left;
        } else if (nth - x->lf_left <= x->lf) {
            *start = base + x->size_left;
            *line = lines + x->lf_left;
            return x;
        } else {
            nth -= x->lf_left + x->lf;
            base += x->size_left + x->len;
            lines += x->lf_left + x->lf;
            x = x->right;
        }
    }
}

static void cache_set(const piece_tree *self, const struct node *n, size_t start, size_t line)
{
    struct line_cache *c = self->cache;
    c->node = n;
    c->start = start;
    c->line = line;
    c->mark = 0;
    c->mark_lf = 0;
}

static void forget(piece_tree *self)
{
    self->cache->node = NULL;
    self->cache->last_nth = 0;
}

/* Document offset of the nth (nth >= 1) '\n', found by scanning. */
static size_t lf_scan(const piece_tree *self, size_t nth)
{
    struct line_cache *c = self->cache;
    const struct node *n = c->node;
    if (n == NULL || nth <= c->line || nth - c->line > n->lf) {
        size_t start, line;
        n = find_lf(self, nth, &start, &line);
        cache_set(self, n, start, line);
    }
    size_t k = nth - c->line; /* 1..n->lf within the piece */
    size_t at;
    if (k == c->mark_lf + 1) {
        /* The next line of a sequential read: the common case. */
        at = c->mark + next_lf(n->text + c->mark, n->len - c->mark);
    } else if (k > c->mark_lf) {
        at = c->mark + find_nth_lf(n->text + c->mark, n->len - c->mark, k - c->mark_lf);
    } else if (c->mark_lf - k < k) {
        at = find_nth_lf_back(n->text, c->mark, c->mark_lf - k + 1);
    } else {
        at = find_nth_lf(n->text, n->len, k);
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
    const struct line_cache *c = self->cache;
    return nth == c->last_nth ? c->last_at : lf_scan(self, nth);
}

/* ---- public: lifetime --------------------------------------------------- */

piece_tree *piece_tree_new(void)
{
    piece_tree *self = malloc(sizeof *self);
    if (self == NULL)
        return NULL;
    memset(self, 0, sizeof *self);
    self->nil.left = self->nil.right = &self->nil;
    self->nil.parent_color = (uintptr_t)&self->nil;
    self->root = &self->nil;
    self->next_block_cap = PIECE_TREE_ADD_BLOCK_MIN;
    self->next_slab_nodes = NODE_SLAB_MIN;
    self->cache = &self->cache_storage;
    return self;
}

piece_tree *piece_tree_new_owning(char *original, size_t len)
{
    assert(original != NULL || len == 0);
    piece_tree *self = piece_tree_new();
    if (self == NULL)
        return NULL;
    if (!reserve_nodes(self, len / (PIECE_TREE_ORIGINAL_PIECE / 2) + 1))
        goto fail;
    struct node *prev = &self->nil;
    for (size_t at = 0; at < len;) {
        size_t n = len - at;
        if (n > PIECE_TREE_ORIGINAL_PIECE) {
            /* Cut after a '\n' when one is in the upper half, so that most
             * lines sit whole in one piece and are read as one chunk. */
            n = PIECE_TREE_ORIGINAL_PIECE;
            const char *nl = memrchr(original + at + n / 2, '\n', n - n / 2);
            if (nl != NULL)
                n = (size_t)(nl - (original + at)) + 1;
        }
        /* Reserved for pieces of at least half the bound: always enough. */
        struct node *z = take_node(self, original + at, n, count_lf(original + at, n));
        link_after(self, prev, z);
        self->length += n;
        self->lf += z->lf;
        prev = z;
        at += n;
    }
    self->original = original;
    self->original_len = len;
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
        free(s->raw);
    }
    for (struct add_block *b = self->blocks, *next; b != NULL; b = next) {
        next = b->next;
        free(b);
    }
    free(self->original);
    free(self);
}

size_t piece_tree_length(const piece_tree *self)
{
    return self->length;
}

size_t piece_tree_line_count(const piece_tree *self)
{
    return self->lf + 1;
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
    b->next = self->blocks;
    self->blocks = b;
    if (!large) {
        self->cur = b;
        if (self->next_block_cap < PIECE_TREE_ADD_BLOCK_MAX)
            self->next_block_cap *= 2;
    }
    *block = b;
    return b->data;
}

static bool extends_last_insert(const piece_tree *self, size_t offset, size_t len)
{
    const struct node *n = self->last_insert;
    const struct add_block *b = self->cur;
    return n != NULL && offset == self->last_insert_end && b != NULL && n->text + n->len == b->data + b->used &&
           b->cap - b->used >= len;
}

int piece_tree_insert(piece_tree *self, size_t offset, const char *text, size_t len)
{
    assert(offset <= self->length);
    assert(text != NULL || len == 0);
    if (len == 0)
        return 0;
    size_t lf = count_lf(text, len);

    if (extends_last_insert(self, offset, len)) {
        struct node *n = self->last_insert;
        memcpy(self->cur->data + self->cur->used, text, len);
        self->cur->used += len;
        n->len += len;
        n->lf += lf;
        grow_upward(self, n, len, lf);
        self->length += len;
        self->lf += lf;
        self->last_insert_end += len;
        forget(self);
        return 0;
    }

    /* Splitting a piece takes two nodes: the insert and the split-off tail. */
    if (!reserve_nodes(self, 2))
        return -1;
    struct add_block *block;
    char *dst = add_space(self, len, &block);
    if (dst == NULL)
        return -1;
    memcpy(dst, text, len);
    block->used += len;
    struct node *z = take_node(self, dst, len, lf);

    if (offset == 0) {
        link_after(self, &self->nil, z);
    } else {
        size_t start, line;
        struct node *x = find_byte(self, offset - 1, &start, &line);
        size_t r = offset - start; /* 1..x->len */
        if (r == x->len) {
            link_after(self, x, z);
        } else {
            size_t tail_len = x->len - r, tail_lf = lf_from(x, r);
            if (x->left != &self->nil && x->right != &self->nil) {
                struct node *tail = take_node(self, x->text + r, tail_len, tail_lf);
                x->len = r;
                x->lf -= tail_lf;
                shrink_upward(self, x, tail_len, tail_lf);
                link_after(self, x, z);
                link_after(self, z, tail);
            } else if (x->left == &self->nil && x->right == &self->nil && !is_red(x)) {
                /* A black leaf takes the inserted piece and gets the two
                 * halves as red children: the subtree stays balanced, so
                 * there is nothing to rebalance and one walk up. */
                struct node *tail = take_node(self, x->text + r, tail_len, tail_lf);
                const char *ztext = z->text;
                z->text = x->text;
                z->len = r;
                z->lf = x->lf - tail_lf;
                x->text = ztext;
                x->len = len;
                x->lf = lf;
                x->size_left = z->len;
                x->lf_left = z->lf;
                x->left = z;
                x->right = tail;
                set_parent(z, x);
                set_parent(tail, x);
                set_red(z);
                set_red(tail);
                grow_upward(self, x, len, lf);
                self->pieces += 2;
                z = x;
            } else {
                /* x has a free child slot: hang the new pieces there rather
                 * than walk down a subtree that is not in cache. */
                bool keep_head = x->right == &self->nil;
                struct node *head = x;
                if (keep_head) {
                    struct node *tail = take_node(self, x->text + r, tail_len, tail_lf);
                    x->len = r;
                    x->lf -= tail_lf;
                    shrink_upward(self, x, tail_len, tail_lf);
                    link_after(self, x, z);
                    link_after(self, z, tail);
                } else {
                    head = take_node(self, x->text, r, x->lf - tail_lf);
                    x->text += r;
                    x->len = tail_len;
                    x->lf = tail_lf;
                    shrink_upward(self, x, head->len, head->lf);
                    link_before(self, x, head);
                    link_before(self, x, z);
                }
            }
        }
    }
    self->length += len;
    self->lf += lf;
    self->last_insert = z;
    self->last_insert_end = offset + len;
    forget(self);
    return 0;
}

/* Backspace right after typing: the deleted bytes are the newest in the add
 * buffer and no other piece refers to them, so the add buffer can take them
 * back and the next keystroke still extends the same piece. */
static bool shrinks_last_insert(piece_tree *self, size_t offset, size_t len)
{
    struct node *n = self->last_insert;
    struct add_block *b = self->cur;
    if (n == NULL || offset + len != self->last_insert_end || len >= n->len || b == NULL ||
        n->text + n->len != b->data + b->used)
        return false;
    size_t lf = count_lf(n->text + n->len - len, len);
    n->len -= len;
    n->lf -= lf;
    shrink_upward(self, n, len, lf);
    b->used -= len;
    self->length -= len;
    self->lf -= lf;
    self->last_insert_end -= len;
    return true;
}

int piece_tree_delete(piece_tree *self, size_t offset, size_t len)
{
    assert(len <= self->length && offset <= self->length - len);
    if (len == 0)
        return 0;
    forget(self);
    if (shrinks_last_insert(self, offset, len))
        return 0;
    if (len == self->length) {
        /* Emptying the document: drop every piece without rebalancing. */
        give_subtree(self, self->root);
        self->root = &self->nil;
        self->length = 0;
        self->lf = 0;
        self->pieces = 0;
        self->last_insert = NULL;
        return 0;
    }

    /* Only a delete strictly inside one piece needs a node (the tail). */
    if (!reserve_nodes(self, 1))
        return -1;
    self->last_insert = NULL;

    size_t start, line;
    struct node *x = find_byte(self, offset, &start, &line);
    size_t r = offset - start;
    if (r + len < x->len) {
        if (r == 0) {
            size_t lf = lf_in(x, 0, len);
            x->text += len;
            x->len -= len;
            x->lf -= lf;
            shrink_upward(self, x, len, lf);
            self->lf -= lf;
        } else {
            size_t tail_len = x->len - r - len;
            size_t tail_lf = lf_in(x, r + len, tail_len);
            size_t gone_lf = lf_in(x, r, len);
            struct node *tail = take_node(self, x->text + r + len, tail_len, tail_lf);
            shrink_upward(self, x, x->len - r, gone_lf + tail_lf);
            x->len = r;
            x->lf -= gone_lf + tail_lf;
            link_after(self, x, tail);
            self->lf -= gone_lf;
        }
        self->length -= len;
        return 0;
    }

    size_t left = len;
    if (r > 0) {
        size_t gone = x->len - r;
        size_t lf = lf_in(x, r, gone);
        x->len = r;
        x->lf -= lf;
        shrink_upward(self, x, gone, lf);
        self->length -= gone;
        self->lf -= lf;
        left -= gone;
    }
    /* Whole pieces from `offset` on, then the head of the last one. Each
     * step finds its piece afresh because unlinking moves pieces between
     * nodes. */
    while (left > 0) {
        x = find_byte(self, offset, &start, &line);
        if (x->len <= left) {
            left -= x->len;
            self->length -= x->len;
            self->lf -= x->lf;
            unlink_node(self, x);
        } else {
            size_t lf = lf_in(x, 0, left);
            x->text += left;
            x->len -= left;
            x->lf -= lf;
            shrink_upward(self, x, left, lf);
            self->length -= left;
            self->lf -= lf;
            left = 0;
        }
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

size_t piece_tree_line_of_offset(const piece_tree *self, size_t offset)
{
    assert(offset <= self->length);
    if (offset == self->length)
        return self->lf;
    struct line_cache *c = self->cache;
    if (c->node == NULL || offset < c->start || offset - c->start >= c->node->len) {
        size_t start, line;
        const struct node *n = find_byte(self, offset, &start, &line);
        cache_set(self, n, start, line);
    }
    const char *text = c->node->text;
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
    size_t start, line;
    const struct node *n = find_byte(self, offset, &start, &line);
    return n->text[offset - start];
}

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
    if (c->node != NULL && offset >= c->start && offset - c->start < c->node->len) {
        r->node = c->node;
        r->skip = offset - c->start;
        return;
    }
    size_t start, line;
    r->node = find_byte(self, offset, &start, &line);
    r->skip = offset - start;
}

bool piece_tree_reader_next(piece_tree_reader *r, const char **chunk, size_t *len)
{
    if (r->node == NULL || r->remaining == 0)
        return false;
    const struct node *n = r->node;
    size_t avail = n->len - r->skip;
    size_t take = avail < r->remaining ? avail : r->remaining;
    *chunk = n->text + r->skip;
    *len = take;
    r->remaining -= take;
    r->skip = 0;
    r->node = r->remaining > 0 ? successor(r->tree, n) : NULL;
    return true;
}

size_t piece_tree_copy(const piece_tree *self, size_t offset, size_t len, char *out)
{
    /* A line just looked up usually lies whole in the cached piece. */
    const struct line_cache *c = self->cache;
    if (c->node != NULL && offset >= c->start && offset - c->start <= c->node->len &&
        len <= c->node->len - (offset - c->start)) {
        assert(offset + len <= self->length);
        memcpy(out, c->node->text + (offset - c->start), len);
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

/* ---- public: checking --------------------------------------------------- */

struct check_walk {
    size_t offset; /* document offset of the next piece in order */
    size_t line;   /* '\n' before it */
    size_t pieces;
    bool saw_last_insert;
    bool saw_cached;
    bool saw_last_lf;
};

static bool points_into_buffers(const piece_tree *self, const struct node *n)
{
    if (self->original != NULL && n->text >= self->original && n->len <= self->original_len &&
        (size_t)(n->text - self->original) <= self->original_len - n->len)
        return true;
    for (const struct add_block *b = self->blocks; b != NULL; b = b->next)
        if (n->text >= b->data && n->len <= b->used && (size_t)(n->text - b->data) <= b->used - n->len)
            return true;
    return false;
}

/* Recounts the subtree of n from the real bytes. *len and *lf get its totals
 * and *black its black height; returns false on the first broken invariant. */
static bool check_subtree(const piece_tree *self, const struct node *n, const struct node *parent,
                          struct check_walk *w, size_t *len, size_t *lf, size_t *black)
{
    if (n == &self->nil) {
        *len = *lf = 0;
        *black = 1;
        return true;
    }
    if (parent_of(n) != parent)
        return false;
    if (is_red(n) && (is_red(n->left) || is_red(n->right)))
        return false;
    size_t llen, llf, lblack, rlen, rlf, rblack;
    if (!check_subtree(self, n->left, n, w, &llen, &llf, &lblack))
        return false;
    if (n->size_left != llen || n->lf_left != llf)
        return false;
    if (n->len == 0 || !points_into_buffers(self, n))
        return false;
    size_t own_lf = 0;
    for (size_t i = 0; i < n->len; i++)
        own_lf += n->text[i] == '\n';
    if (own_lf != n->lf)
        return false;
    if (n == self->last_insert) {
        w->saw_last_insert = true;
        if (self->last_insert_end != w->offset + n->len)
            return false;
    }
    const struct line_cache *c = self->cache;
    if (n == c->node) {
        w->saw_cached = true;
        if (c->start != w->offset || c->line != w->line || c->mark > n->len)
            return false;
        size_t mark_lf = 0;
        for (size_t i = 0; i < c->mark; i++)
            mark_lf += n->text[i] == '\n';
        if (mark_lf != c->mark_lf)
            return false;
    }
    if (c->last_nth != 0 && c->last_at >= w->offset && c->last_at - w->offset < n->len) {
        size_t r = c->last_at - w->offset, before = 0;
        for (size_t i = 0; i < r; i++)
            before += n->text[i] == '\n';
        if (n->text[r] != '\n' || w->line + before + 1 != c->last_nth)
            return false;
        w->saw_last_lf = true;
    }
    w->offset += n->len;
    w->line += n->lf;
    w->pieces++;
    if (!check_subtree(self, n->right, n, w, &rlen, &rlf, &rblack))
        return false;
    if (lblack != rblack)
        return false;
    *len = llen + n->len + rlen;
    *lf = llf + n->lf + rlf;
    *black = lblack + (is_red(n) ? 0 : 1);
    return true;
}

bool piece_tree_check(const piece_tree *self)
{
    if (is_red(&self->nil) || self->nil.len != 0 || self->nil.lf != 0)
        return false;
    if (is_red(self->root))
        return false;
    if (self->root != &self->nil && parent_of(self->root) != &self->nil)
        return false;
    struct check_walk w = {0};
    size_t len, lf, black;
    if (!check_subtree(self, self->root, &self->nil, &w, &len, &lf, &black))
        return false;
    if (len != self->length || lf != self->lf || w.pieces != self->pieces)
        return false;
    if (self->last_insert != NULL && !w.saw_last_insert)
        return false;
    if (self->cache->node != NULL && !w.saw_cached)
        return false;
    if (self->cache->last_nth != 0 && !w.saw_last_lf)
        return false;
    size_t free_count = (size_t)(self->bump_end - self->bump);
    for (const struct node *n = self->free_nodes; n != NULL; n = n->left)
        free_count++;
    if (free_count != self->free_count)
        return false;
    for (const struct add_block *b = self->blocks; b != NULL; b = b->next)
        if (b->used > b->cap)
            return false;
    return true;
}
