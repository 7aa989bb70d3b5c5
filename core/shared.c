#include "shared.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

typedef struct shared_waiter {
    ecp_shared_ready_fn fn;
    void *ctx;
} shared_waiter;

struct ecp_shared {
    char *data;
    size_t len;
    unsigned long refs;
    bool ready;
    shared_waiter *waiters; /* while pending */
    size_t waiter_count, waiter_cap;
};

static ecp_shared *shared_new(char *data, size_t len, bool ready)
{
    ecp_shared *self = xcalloc(1, sizeof *self);
    self->data = data;
    self->len = len;
    self->refs = 1;
    self->ready = ready;
    return self;
}

ecp_shared *ecp_shared_adopt(char *data, size_t len) { return shared_new(data, len, true); }

ecp_shared *ecp_shared_pending(void) { return shared_new(NULL, 0, false); }

ecp_shared *ecp_shared_ref(ecp_shared *self)
{
    self->refs++;
    return self;
}

void ecp_shared_unref(ecp_shared *self)
{
    if (!self)
        return;
    assert(self->refs > 0);
    if (--self->refs > 0)
        return;
    free(self->data);
    free(self->waiters);
    free(self);
}

bool ecp_shared_ready(const ecp_shared *self) { return self->ready; }

const char *ecp_shared_data(const ecp_shared *self)
{
    assert(self->ready);
    return self->data;
}

size_t ecp_shared_len(const ecp_shared *self)
{
    assert(self->ready);
    return self->len;
}

void ecp_shared_fill(ecp_shared *self, char *data, size_t len)
{
    assert(!self->ready);
    self->data = data;
    self->len = len;
    self->ready = true;
    /* a waiter may drop the last reference of its own, or ask for more */
    ecp_shared_ref(self);
    shared_waiter *waiters = self->waiters;
    size_t count = self->waiter_count;
    self->waiters = NULL;
    self->waiter_count = self->waiter_cap = 0;
    for (size_t i = 0; i < count; i++)
        waiters[i].fn(waiters[i].ctx);
    free(waiters);
    ecp_shared_unref(self);
}

void ecp_shared_when_ready(ecp_shared *self, ecp_shared_ready_fn fn, void *ctx)
{
    if (self->ready) {
        fn(ctx);
        return;
    }
    if (self->waiter_count == self->waiter_cap) {
        self->waiter_cap = self->waiter_cap ? self->waiter_cap * 2 : 4;
        self->waiters = xrealloc(self->waiters, self->waiter_cap * sizeof *self->waiters);
    }
    self->waiters[self->waiter_count++] = (shared_waiter){fn, ctx};
}

void ecp_shared_forget(ecp_shared *self, ecp_shared_ready_fn fn, void *ctx)
{
    for (size_t i = 0; i < self->waiter_count; i++) {
        if (self->waiters[i].fn == fn && self->waiters[i].ctx == ctx) {
            memmove(&self->waiters[i], &self->waiters[i + 1], (self->waiter_count - i - 1) * sizeof *self->waiters);
            self->waiter_count--;
            return;
        }
    }
}
