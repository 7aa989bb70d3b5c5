/* call: how the server creates, answers and abandons calls.
 *
 * Adapters see an ecp_call only through rpc.h. This header is for the code
 * that owns connections: it builds a call from a decoded message, hands it to
 * a handler, and receives the finished response through a deliver callback.
 *
 * A call is reference-counted: the dispatcher holds one reference while the
 * handler runs and the pending answer holds another, so a handler that answers
 * before returning does not free the call under the dispatcher's feet.
 */
#ifndef ECPD_CALL_H
#define ECPD_CALL_H

#include "log.h"
#include "rpc.h"

/* Receives the complete response text of an answered call (one JSON object,
 * no framing): response's bytes with each of splices (NULL: none) inserted
 * at its offset (json_writer.h). Not called for notifications or abandoned
 * calls. */
typedef void (*ecp_deliver_fn)(void *owner, ecp_call *call, const char *response, size_t len,
                               const jw_splices *splices);

typedef struct ecp_call_init {
    char *text;                 /* the message's own text; the call takes it (malloc'd) */
    size_t len;
    json_doc doc;               /* parsed over text; the call takes it */
    json_ref message;           /* the message object within doc */
    const char *method;         /* decoded name; copied */
    const char *id_raw;         /* the id's JSON text, NULL for a notification; copied */
    size_t id_len;
    json_ref params;
    uint64_t client_id;
    ecp_position_encoding encoding;
    ecp_deliver_fn deliver;
    void *owner;
    /* Where the owner counts the code running on a call's behalf, whose
     * notifications it caused (ecp_call_cause_begin); may be NULL. */
    unsigned *(*cause_counter)(void *owner);
    ecp_logger *log;            /* where misuse (a second answer) is reported; may be NULL */
} ecp_call_init;

ecp_call *ecp_call_create(ecp_call_init *init);
void ecp_call_ref(ecp_call *call);
void ecp_call_unref(ecp_call *call);

bool ecp_call_deferred(const ecp_call *call);
bool ecp_call_holds_client(const ecp_call *call);
bool ecp_call_is_notification(const ecp_call *call);
const char *ecp_call_id_raw(const ecp_call *call, size_t *len);

/* Marks the call abandoned (the client cancelled it or went away): its answer
 * will not be delivered, and its abandon hook runs now. */
void ecp_call_abandon(ecp_call *call);

/* Server-side linkage: the connection keeps its pending calls in a list. */
void *ecp_call_link(ecp_call *call);
void ecp_call_set_link(ecp_call *call, void *link);

/* The notification bus as the server implements it. */
struct ecp_bus {
    void (*notify)(void *owner, uint64_t client_id, const char *method, ecp_render_fn render, void *ctx);
    void *owner;
    /* Flow control (rpc.h); NULL: never backed up. */
    bool (*backed_up)(void *owner, const char *method);
    void (*when_drained)(void *owner, const char *method, ecp_drained_fn fn, void *ctx);
    void (*cancel_when_drained)(void *owner, ecp_drained_fn fn, void *ctx);
    /* The name a client gave itself (rpc.h); NULL: no names known. */
    const char *(*client_name)(void *owner, uint64_t client_id);
};

/* Writes a complete error response for id_raw (may be NULL: id null) to out. */
void ecp_write_error_response(buf *out, const char *id_raw, size_t id_len, int code, const char *message,
                              const char *data_json);

#endif
