#include "arena.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* Blocks grow so that a request with many small strings makes few mallocs,
 * and a single big allocation gets a block of its own. */
#define ARENA_MIN_BLOCK 4096
#define ARENA_ALIGN 16

struct arena_block {
    struct arena_block *next;
    size_t used;
    size_t size;
    _Alignas(ARENA_ALIGN) unsigned char data[];
};

void arena_init(arena *self) { self->head = NULL; }

void arena_free(arena *self)
{
    struct arena_block *b = self->head;
    while (b) {
        struct arena_block *next = b->next;
        free(b);
        b = next;
    }
    self->head = NULL;
}

void *arena_alloc(arena *self, size_t n)
{
    size_t rounded = xsize_add(n, ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
    if (rounded == 0)
        rounded = ARENA_ALIGN;
    struct arena_block *b = self->head;
    if (!b || b->size - b->used < rounded) {
        size_t size = b ? b->size * 2 : ARENA_MIN_BLOCK;
        if (size > (1u << 20))
            size = 1u << 20;
        if (size < rounded)
            size = rounded;
        struct arena_block *nb = xmalloc(xsize_add(sizeof *nb, size));
        nb->size = size;
        nb->used = 0;
        /* A block made for one oversized request goes behind the current one,
         * so the current block's free space is not abandoned. */
        if (b && size == rounded && b->size - b->used >= ARENA_ALIGN) {
            nb->next = b->next;
            b->next = nb;
            nb->used = rounded;
            return nb->data;
        }
        nb->next = b;
        self->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += rounded;
    return p;
}

void *arena_calloc(arena *self, size_t n)
{
    void *p = arena_alloc(self, n);
    memset(p, 0, n);
    return p;
}

char *arena_strndup(arena *self, const char *s, size_t n)
{
    char *p = arena_alloc(self, n + 1);
    if (n)
        memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arena_sprintf(arena *self, const char *fmt, ...)
{
    va_list ap, copy;
    va_start(ap, fmt);
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    char *p = arena_alloc(self, n > 0 ? (size_t)n + 1 : 1);
    vsnprintf(p, n > 0 ? (size_t)n + 1 : 1, fmt, ap);
    va_end(ap);
    return p;
}
