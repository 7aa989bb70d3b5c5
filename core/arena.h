/* arena: bump allocation for memory that dies all at once.
 *
 * Each request gets an arena: its decoded params and scratch strings come from
 * it, and the whole arena is released when the reply has been written, so a
 * handler never frees what it decoded. Allocations are 16-byte aligned and never
 * move. Out of memory is fatal (see buf.h).
 */
#ifndef ECPD_ARENA_H
#define ECPD_ARENA_H

#include <stddef.h>

struct arena_block;

typedef struct arena {
    struct arena_block *head; /* newest block; older ones are linked behind it */
} arena;

#define ARENA_INIT {NULL}

void arena_init(arena *self);

/* Releases every block. The arena may be used again afterwards. */
void arena_free(arena *self);

void *arena_alloc(arena *self, size_t n);
void *arena_calloc(arena *self, size_t n);
char *arena_strndup(arena *self, const char *s, size_t n);
char *arena_sprintf(arena *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
