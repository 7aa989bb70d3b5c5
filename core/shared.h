/* shared: bytes that several readers hold at once, freed by the last one.
 *
 * A big notification quotes a part of the message that caused it (the text
 * of a 100 MB setContent): instead of copying that part into the
 * notification and again into each connection's write queue, the writer
 * splices a reference to it (json_writer.h, jw_raw_shared) and the transport
 * writes it from where it lies, holding a reference until the kernel has
 * taken it.
 *
 * Bytes may also still be in the making (escaped off the loop): such a
 * shared is pending until ecp_shared_fill, and a reader that needs its bytes
 * asks to be told (ecp_shared_when_ready) instead of waiting.
 *
 * The count and the waiters are not atomic: everything here runs on the
 * loop thread.
 */
#ifndef ECPD_SHARED_H
#define ECPD_SHARED_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ecp_shared ecp_shared;

/* Takes data (malloc'd, may be NULL when len is 0) and returns it with one
 * reference, the caller's. */
ecp_shared *ecp_shared_adopt(char *data, size_t len);
/* A shared with no bytes yet, one reference, the caller's. */
ecp_shared *ecp_shared_pending(void);
/* Another reference to the same bytes; returns self. */
ecp_shared *ecp_shared_ref(ecp_shared *self);
/* Drops one reference; the last frees the bytes. NULL is ignored. */
void ecp_shared_unref(ecp_shared *self);

/* Whether the bytes are there (always, unless made pending and not filled). */
bool ecp_shared_ready(const ecp_shared *self);
/* Only once ready. */
const char *ecp_shared_data(const ecp_shared *self);
size_t ecp_shared_len(const ecp_shared *self);

/* Gives a pending shared its bytes (malloc'd, taken), then runs each waiter
 * once, in the order they asked. */
void ecp_shared_fill(ecp_shared *self, char *data, size_t len);

/* Runs fn(ctx) once self is ready: at once if it is. A waiter that goes
 * away before then withdraws with ecp_shared_forget (the same fn and ctx). */
typedef void (*ecp_shared_ready_fn)(void *ctx);
void ecp_shared_when_ready(ecp_shared *self, ecp_shared_ready_fn fn, void *ctx);
void ecp_shared_forget(ecp_shared *self, ecp_shared_ready_fn fn, void *ctx);

#endif
