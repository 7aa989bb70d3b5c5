/* event: the listeners of a service's events.
 *
 * A service that reports what happens to it (a document changed, a file
 * appeared, a terminal printed) keeps one ecp_listeners and lets others
 * subscribe a table of callbacks (its own listener struct, such as
 * document_listener) with a context pointer. Emitting calls every listener
 * subscribed when the emit began, in the order they subscribed.
 *
 * Safe against the things listeners do: a listener may unsubscribe itself or
 * any other, or subscribe a new one, from inside a callback, also from inside
 * a nested emit. A listener removed during an emit is not called after its
 * removal; one added during an emit is called from the next emit on.
 *
 * Everything here runs on the loop thread.
 *
 *     ECP_EMIT(&svc->listeners, document_listener, on_close, doc->id, doc->uri);
 */
#ifndef ECPD_EVENT_H
#define ECPD_EVENT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ecp_listener_entry {
    const void *callbacks; /* the subscriber's table; borrowed */
    void *ctx;
    bool removed;
} ecp_listener_entry;

typedef struct ecp_listeners {
    ecp_listener_entry *items;
    size_t count, cap;
    unsigned emitting; /* nesting depth of emits in progress */
    bool has_removed;  /* entries to drop once no emit runs */
} ecp_listeners;

#define ECP_LISTENERS_INIT {0}

void ecp_listeners_free(ecp_listeners *self);

/* Subscribes (callbacks, ctx). callbacks is borrowed: keep it alive (usually
 * a static const) until unsubscribed. Subscribing the same pair twice makes
 * it be called twice. */
void ecp_listeners_add(ecp_listeners *self, const void *callbacks, void *ctx);

/* Unsubscribes the first live entry with that pair; returns false when there
 * was none. */
bool ecp_listeners_remove(ecp_listeners *self, const void *callbacks, void *ctx);

size_t ecp_listeners_count(const ecp_listeners *self);

/* The iteration ECP_EMIT is made of. */
typedef struct ecp_emit {
    ecp_listeners *set;
    size_t next;
    size_t end; /* entries present when the emit began */
} ecp_emit;

void ecp_emit_begin(ecp_emit *it, ecp_listeners *set);
bool ecp_emit_next(ecp_emit *it, const void **callbacks, void **ctx);
void ecp_emit_end(ecp_emit *it);

/* Calls `member` of every listener's table of type `type` that has it set,
 * with the listener's ctx first and the rest of the arguments after it. */
#define ECP_EMIT(set, type, member, ...)                                        \
    do {                                                                        \
        ecp_emit emit_;                                                         \
        const void *callbacks_;                                                 \
        void *ctx_;                                                             \
        ecp_emit_begin(&emit_, (set));                                          \
        while (ecp_emit_next(&emit_, &callbacks_, &ctx_)) {                     \
            const type *listener_ = callbacks_;                                 \
            if (listener_->member)                                              \
                listener_->member(ctx_, __VA_ARGS__);                           \
        }                                                                       \
        ecp_emit_end(&emit_);                                                   \
    } while (0)

#endif
