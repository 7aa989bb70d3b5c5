/* piece_tree: piece_tree_check, every invariant recounted from the real
 * bytes, for tests. */
#include "piece_tree_internal.h"

#include <stdint.h>

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

/* The '\n' in text, one byte at a time: not count_lf, which is among what
 * the check is for. */
static size_t recount_lf(const char *text, size_t len)
{
    size_t lf = 0;
    for (size_t i = 0; i < len; i++)
        lf += text[i] == '\n';
    return lf;
}

static bool check_piece(const piece_tree *self, const struct node *leaf, unsigned idx, struct check_walk *w)
{
    struct entry ev = get_entry(leaf, idx);
    const struct entry *e = &ev;
    if (e->len == 0 || !points_into_buffers(self, e))
        return false;
    if (recount_lf(e->u.text, e->len) != e->lf)
        return false;
    const struct line_cache *c = self->cache;
    if (leaf == c->leaf && idx == c->idx) {
        w->saw_cached = true;
        if (c->text != e->u.text || c->len != e->len || c->lf != e->lf)
            return false;
        if (c->start != w->offset || c->line != w->line || c->mark > e->len)
            return false;
        if (recount_lf(e->u.text, c->mark) != c->mark_lf)
            return false;
    }
    if (c->last_nth != 0 && c->last_at >= w->offset && c->last_at - w->offset < e->len) {
        size_t r = c->last_at - w->offset;
        if (e->u.text[r] != '\n' || w->line + recount_lf(e->u.text, r) + 1 != c->last_nth)
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
