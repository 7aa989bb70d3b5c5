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
#include "piece_tree_internal.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---- scanning bytes ----------------------------------------------------- */

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
size_t descend(const piece_tree *self, size_t offset, bool at_end, struct path *p, struct node **leaf,
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

static void forget(piece_tree *self)
{
    self->cache->leaf = NULL;
    self->cache->last_nth = 0;
}

/* ---- public: lifetime --------------------------------------------------- */

void store_release(struct store *store)
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
