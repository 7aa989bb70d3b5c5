/* event: entries are flagged while an emit runs and dropped once none does,
 * so the indices an emit walks never shift under it. */
#include "event.h"

#include <stdlib.h>

#include "buf.h"

void ecp_listeners_free(ecp_listeners *self)
{
    free(self->items);
    *self = (ecp_listeners)ECP_LISTENERS_INIT;
}

void ecp_listeners_add(ecp_listeners *self, const void *callbacks, void *ctx)
{
    if (self->count == self->cap) {
        self->cap = self->cap ? self->cap * 2 : 4;
        self->items = xrealloc(self->items, self->cap * sizeof *self->items);
    }
    self->items[self->count++] = (ecp_listener_entry){callbacks, ctx, false};
}

static void compact(ecp_listeners *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        if (!self->items[i].removed)
            self->items[n++] = self->items[i];
    self->count = n;
    self->has_removed = false;
}

bool ecp_listeners_remove(ecp_listeners *self, const void *callbacks, void *ctx)
{
    for (size_t i = 0; i < self->count; i++) {
        ecp_listener_entry *e = &self->items[i];
        if (!e->removed && e->callbacks == callbacks && e->ctx == ctx) {
            e->removed = true;
            self->has_removed = true;
            if (self->emitting == 0)
                compact(self);
            return true;
        }
    }
    return false;
}

size_t ecp_listeners_count(const ecp_listeners *self)
{
    size_t n = 0;
    for (size_t i = 0; i < self->count; i++)
        n += !self->items[i].removed;
    return n;
}

void ecp_emit_begin(ecp_emit *it, ecp_listeners *set)
{
    it->set = set;
    it->next = 0;
    it->end = set->count;
    set->emitting++;
}

bool ecp_emit_next(ecp_emit *it, const void **callbacks, void **ctx)
{
    /* Re-read the array each time: a callback may have grown (moved) it. */
    while (it->next < it->end) {
        const ecp_listener_entry *e = &it->set->items[it->next++];
        if (!e->removed) {
            *callbacks = e->callbacks;
            *ctx = e->ctx;
            return true;
        }
    }
    return false;
}

void ecp_emit_end(ecp_emit *it)
{
    ecp_listeners *set = it->set;
    if (--set->emitting == 0 && set->has_removed)
        compact(set);
}
