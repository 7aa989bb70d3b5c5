/* rpc: what an adapter sees of the wire.
 *
 * An adapter exposes one service as JSON-RPC methods. It describes itself as an
 * ecp_adapter: a namespace ("document") and one table of methods, which the
 * router uses both to dispatch and to answer `ecp/methods`, so the two cannot
 * drift apart. The server owns the calls, the connections and the notification
 * bus; adapters only hold pointers to them, and nothing here includes the
 * server.
 *
 * A handler receives an ecp_call and must answer it exactly once, with a
 * result or an error. It may answer before returning, or call
 * ecp_call_defer() and answer later from the main loop (after thread-pool work,
 * say). A deferred call that the client cancels ($/cancelRequest) or abandons
 * (disconnects) still has to be answered; the answer is then discarded.
 * Answering is what releases the call, its params and its arena.
 *
 * Everything here runs on the main loop thread.
 */
#ifndef ECPD_RPC_H
#define ECPD_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "error.h"
#include "json.h"
#include "json_writer.h"
#include "utf.h"

typedef struct ecp_call ecp_call;
typedef struct ecp_bus ecp_bus;

/* ----- methods and adapters ------------------------------------------------ */

typedef void (*ecp_handler)(void *ctx, ecp_call *call);

/* One method. The table of an adapter is also its documentation: ecp/methods
 * and `ecpctl --methods` print summary and params as they are written here, so
 * they are required, and the router refuses a table where one is empty. */
typedef struct ecp_method {
    const char *name;     /* full name, "document/open" */
    ecp_handler handler;
    const char *since;    /* protocol version that introduced it: "1.0" */
    const char *summary;  /* one line for a person: what the method does */
    /* The params the handler reads, as a compact signature: an object of
     * fields, `?` after an optional one, with string, integer, number,
     * boolean, object, any, T[], {...}, {[name]: T}, T|U, "literal", limits
     * (integer >= 0) and the types the protocol names (Position, Range,
     * Cursor): "{uri: string, readOnly?: boolean}". "{}" takes none, "any"
     * anything. rpc_sig.h has the grammar. The router compiles it at
     * registration and checks every request against it before the handler
     * runs, so it must say exactly what the handler reads: a declared field
     * reaches the handler present (when required) and of its type. */
    const char *params;
} ecp_method;

/* The router copies this struct when it is registered, but not what it
 * points to: ns, methods (and the names in them) and notifications must stay
 * valid and unchanged for as long as the server lives (static tables, in
 * practice). ctx is passed to every handler and to client_closed until the
 * server's teardown; with destroy, the router owns it from registration and
 * releases it then (after every connection has closed, before the services
 * are freed); without destroy, it stays its registrant's, who must keep it
 * alive as long as the server. */
/* The router accepts an adapter only when its namespace is new, every method
 * name is "<ns>/<action>" (for the namespace "", a name without a slash),
 * no name is listed twice or already routed, and every method has a handler,
 * a summary and params that compile. */
typedef struct ecp_adapter {
    const char *ns;                  /* namespace, without the slash */
    const ecp_method *methods;
    size_t method_count;
    void *ctx;                       /* passed to every handler */
    /* Optional: a client went away; drop what belonged to it (watches...). */
    void (*client_closed)(void *ctx, uint64_t client_id);
    /* Optional: release ctx at server teardown. */
    void (*destroy)(void *ctx);
    /* Optional: the notifications this adapter emits, NULL-terminated; the
     * server lists them in initialize's capabilities. */
    const char *const *notifications;
} ecp_adapter;

/* ----- reading params -------------------------------------------------------- */

json_ref ecp_call_params(const ecp_call *call);        /* JSON_NO_REF when absent */
const json_doc *ecp_call_doc(const ecp_call *call);
arena *ecp_call_arena(ecp_call *call);
const char *ecp_call_method(const ecp_call *call);
uint64_t ecp_call_client(const ecp_call *call);         /* 0 for the server itself */
ecp_position_encoding ecp_call_encoding(const ecp_call *call);
/* The message's own text (every string ecp_call_doc() reads lies in it) as
 * shared bytes, so that a notification can quote a part of it without a
 * copy (jw_raw_shared). The reference is the call's: ecp_shared_ref() one
 * to keep. */
ecp_shared *ecp_call_text(ecp_call *call);

/* A decoded string: NUL-terminated, in the call's arena. */
typedef struct ecp_str {
    const char *ptr;   /* NULL when an optional field is absent or null */
    size_t len;
} ecp_str;

/* Typed field readers. A field the method's signature declares has been
 * checked before the handler runs, so reading it cannot fail; they still
 * read, and check, fields a signature cannot describe.
 *
 * `obj` is the object to read from (ecp_call_params() for top-level fields,
 * or a nested object); `name` is the field's path as a
 * client would name it ("position.line"): the part after the last '.' is the
 * key looked up in obj, and the whole path goes into the error message.
 *
 * Each returns true when the caller may go on. When a required field is absent
 * or any field has the wrong type, it answers the call with -32602 and a
 * message naming the field ("documentId: required string") and returns false:
 * the handler must then return at once. Optional readers leave *out at its
 * default (NULL / def) when the field is absent or null. */
bool ecp_arg_string(ecp_call *call, json_ref obj, const char *name, ecp_str *out);
bool ecp_arg_string_opt(ecp_call *call, json_ref obj, const char *name, ecp_str *out);
bool ecp_arg_int(ecp_call *call, json_ref obj, const char *name, int64_t *out);
bool ecp_arg_int_opt(ecp_call *call, json_ref obj, const char *name, int64_t def, int64_t *out);
bool ecp_arg_double_opt(ecp_call *call, json_ref obj, const char *name, double def, double *out);
bool ecp_arg_bool_opt(ecp_call *call, json_ref obj, const char *name, bool def, bool *out);
bool ecp_arg_object(ecp_call *call, json_ref obj, const char *name, json_ref *out);
bool ecp_arg_object_opt(ecp_call *call, json_ref obj, const char *name, json_ref *out);
bool ecp_arg_array(ecp_call *call, json_ref obj, const char *name, json_ref *out);
bool ecp_arg_array_opt(ecp_call *call, json_ref obj, const char *name, json_ref *out);
/* A non-negative integer that fits size_t (negative: -32602 "<name>: must be >= 0"). */
bool ecp_arg_index(ecp_call *call, json_ref obj, const char *name, size_t *out);
bool ecp_arg_index_opt(ecp_call *call, json_ref obj, const char *name, size_t def, size_t *out);
/* A required string naming a file (a file:// URI or an absolute path), as the
 * normalised absolute path uri_file_path gives, in the call's arena. A URI
 * that names no file is answered as every file error is: -32106 (relative,
 * remote host, malformed) or -32107 (another scheme), uri_file_path's message,
 * data {uri: the field as written, code: "INVALID_URI" | "NO_PROVIDER"},
 * and NULL is returned. */
const char *ecp_arg_file_path(ecp_call *call, json_ref obj, const char *name);

/* ----- answering ------------------------------------------------------------ */

/* Starts the result: write exactly one JSON value into the returned writer,
 * then call ecp_call_finish(). */
json_writer *ecp_call_result(ecp_call *call);
void ecp_call_finish(ecp_call *call);

/* Shorthands for common results. */
void ecp_call_reply_null(ecp_call *call);
void ecp_call_reply_raw(ecp_call *call, const char *json, size_t len);
/* The same for a big result made off the loop: it is written to the peer
 * from where it lies, not copied (the call takes a reference to json). */
void ecp_call_reply_shared(ecp_call *call, ecp_shared *json);
void ecp_call_reply_success(ecp_call *call, bool success); /* {"success":<b>} */
/* Results of one key: {}, {"<key>":<b>}, {"<key>":<n>}, {"<key>":"<s>"}
 * (a NULL s writes null). */
void ecp_call_reply_empty(ecp_call *call);
void ecp_call_reply_bool(ecp_call *call, const char *key, bool value);
void ecp_call_reply_int(ecp_call *call, const char *key, int64_t value);
void ecp_call_reply_string(ecp_call *call, const char *key, const char *value);
/* A result that is a list under one key, {"<key>": [ ... ]}: write the items
 * into the writer returned, then ecp_call_finish_list. */
json_writer *ecp_call_result_list(ecp_call *call, const char *key);
void ecp_call_finish_list(ecp_call *call, json_writer *w);
/* A result of one key whose value is anything, {"<key>": ...}: write exactly
 * one value into the writer returned, then ecp_call_finish_key. */
json_writer *ecp_call_result_key(ecp_call *call, const char *key);
void ecp_call_finish_key(ecp_call *call, json_writer *w);

/* A flat object of a few plain fields, for a result or a notification's
 * params without a render function and a struct of its own:
 *
 *     ecp_call_reply_fields(call, ECP_FIELDS(ECP_INT_FIELD("words", n), ECP_BOOL_FIELD("exact", true)));
 *     ecp_bus_notify(bus, "x/didY", ecp_render_fields, ECP_FIELDS(ECP_STRING_FIELD("id", id)));
 *
 * ECP_FIELDS points into the enclosing block: it lives as long as the
 * statement's caller, which is what ecp_bus_notify needs. */
typedef enum ecp_field_kind {
    ECP_FIELD_STRING,     /* NULL writes null */
    ECP_FIELD_STRING_OPT, /* NULL leaves the field out */
    ECP_FIELD_INT,
    ECP_FIELD_BOOL,
    ECP_FIELD_TRUE_OPT,   /* written (as true) only when b is */
    ECP_FIELD_JSON,       /* s is JSON text, written as it is; NULL writes null */
} ecp_field_kind;
typedef struct ecp_field {
    const char *key;
    ecp_field_kind kind;
    const char *s;
    int64_t i;
    bool b;
} ecp_field;
typedef struct ecp_fields {
    const ecp_field *items;
    size_t count;
} ecp_fields;
#define ECP_STRING_FIELD(k, v) {.key = (k), .kind = ECP_FIELD_STRING, .s = (v)}
#define ECP_STRING_FIELD_OPT(k, v) {.key = (k), .kind = ECP_FIELD_STRING_OPT, .s = (v)}
#define ECP_INT_FIELD(k, v) {.key = (k), .kind = ECP_FIELD_INT, .i = (int64_t)(v)}
#define ECP_BOOL_FIELD(k, v) {.key = (k), .kind = ECP_FIELD_BOOL, .b = (v)}
#define ECP_TRUE_FIELD_OPT(k, v) {.key = (k), .kind = ECP_FIELD_TRUE_OPT, .b = (v)}
#define ECP_JSON_FIELD(k, v) {.key = (k), .kind = ECP_FIELD_JSON, .s = (v)}
#define ECP_FIELDS(...)                                                                                            \
    (&(ecp_fields){(const ecp_field[]){__VA_ARGS__}, sizeof((const ecp_field[]){__VA_ARGS__}) / sizeof(ecp_field)})
void ecp_call_reply_fields(ecp_call *call, const ecp_fields *fields);
/* An ecp_render_fn whose ctx is an ecp_fields. */
void ecp_render_fields(void *ctx, ecp_position_encoding enc, json_writer *w);
void ecp_write_fields(json_writer *w, const ecp_fields *fields);

/* Answers a failure: the wire code is the one the adapter's map (count
 * entries) gives status, -32603 when it lists none; the message is err's
 * (the status's text without err). data_json may be NULL. */
void ecp_call_reply_status(ecp_call *call, const ecp_wire_map *map, size_t count, int status, const ecp_error *err,
                           const char *data_json);
/* The first lines of a job's answer: a failure (status not 0) is answered as
 * ecp_call_reply_status answers it, without data, and true returned; on 0
 * nothing is answered and false returned, for the result to follow:
 *
 *     if (!ecp_call_reply_failed(call, ecp_file_wire_codes, ECP_FILE_WIRE_CODE_COUNT, status, err))
 *         ecp_call_reply_fields(call, ...);
 */
bool ecp_call_reply_failed(ecp_call *call, const ecp_wire_map *map, size_t count, int status, const ecp_error *err);
#define ECP_WIRE_MAP_COUNT(map) (sizeof(map) / sizeof((map)[0]))

/* The file errors of the catalogue that any adapter reading files answers
 * (server/PROTOCOL.md §5): not found -32100, permission denied -32101, is a
 * directory -32102, invalid URI -32106, no provider -32107, and cancelled
 * -32800, for an adapter to pass to ecp_call_reply_status instead of a copy
 * of its own. */
#define ECP_FILE_WIRE_CODE_COUNT 6
extern const ecp_wire_map ecp_file_wire_codes[ECP_FILE_WIRE_CODE_COUNT];

/* Answers with an error. `data_json` (may be NULL) is valid JSON text for the
 * error's `data` member. */
void ecp_call_error(ecp_call *call, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void ecp_call_error_data(ecp_call *call, int code, const char *data_json, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* An error whose data is an object built in place:
 *
 *     ecp_error_data d;
 *     json_writer *w = ecp_error_data_begin(&d);
 *     jw_key_string(w, "uri", uri);
 *     ecp_call_error_with(call, code, &d, "Not found: %s", uri);   (also releases d)
 */
typedef struct ecp_error_data {
    buf bytes;
    json_writer w;
} ecp_error_data;
json_writer *ecp_error_data_begin(ecp_error_data *d);
void ecp_call_error_with(ecp_call *call, int code, ecp_error_data *d, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with data of one string, {"<key>": "<value>"}: what was not found. */
void ecp_call_error_keyed(ecp_call *call, int code, const char *key, const char *value, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Keeps the call alive past the handler's return. Returns call. */
ecp_call *ecp_call_defer(ecp_call *call);

/* True once the client cancelled the call or went away: the answer will be
 * discarded, so stop working and answer (anything) to release it. */
bool ecp_call_abandoned(const ecp_call *call);

/* True once the call has its answer: work that races another answerer (a
 * deadline) checks it instead of answering twice. */
bool ecp_call_answered(const ecp_call *call);

/* The client's later messages are not handled until this deferred call is
 * answered: a request that finishes off the loop (a large replacement of a
 * document's text) keeps its place in that client's order, so its next
 * edit applies after it, never under it. Other clients go on. While held,
 * the client's $/cancelRequest waits too: hold only work that ends on its
 * own. Call before the handler returns. */
void ecp_call_hold_client(ecp_call *call);

/* Registers fn to run (once, on the main loop) when the call is cancelled or
 * its client goes away before it is answered. Replaces an earlier hook. */
void ecp_call_on_abandon(ecp_call *call, void (*fn)(void *ctx), void *ctx);

/* What a handler notifies while it runs, its request caused: on every
 * connection it comes before the request's answer, even when notifications
 * of its kind that stream on their own wait in their lane. Code that answers
 * a deferred call later (a child's reply, a timer) brackets what it notifies
 * on the call's way to its answer with these, for the same order; a job that
 * serves the call (ecp_job_serve) brackets its done by itself. Brackets
 * nest; an abandoned or answered call causes nothing. */
void ecp_call_cause_begin(ecp_call *call);
void ecp_call_cause_end(ecp_call *call);

/* ----- notifications -------------------------------------------------------- */

/* Writes the params value of a notification for clients that use `enc`.
 * Notifications without positions may ignore enc. */
typedef void (*ecp_render_fn)(void *ctx, ecp_position_encoding enc, json_writer *w);

/* Sends `method` to every connection subscribed to it. render is called at
 * most once per position encoding in use, before ecp_bus_notify returns; ctx
 * need not outlive the call. A notification emitted while handling a request
 * reaches every connection before that request's response. */
void ecp_bus_notify(ecp_bus *bus, const char *method, ecp_render_fn render, void *ctx);

/* The same for one client only (a watch's events go to the client that asked). */
void ecp_bus_notify_client(ecp_bus *bus, uint64_t client_id, const char *method, ecp_render_fn render,
                           void *ctx);

/* The name client_id gave itself in `initialize` (clientInfo's name, and
 * version after a space), "" when it gave none; NULL for an id no connection
 * has. Valid until the next loop turn. */
const char *ecp_bus_client_name(ecp_bus *bus, uint64_t client_id);

/* ----- flow control --------------------------------------------------------- *
 *
 * A client that stops reading does not stop a producer by itself: what the
 * bus sends it piles up in its connection (behind its answers, which never
 * wait for notifications no request caused), and a socket connection whose
 * queue passes its bound is dropped; the only client of a server on stdio
 * never is, and what piles up for it is kept. A producer that can wait (a
 * terminal's program can be left blocked in its write, a walk can pause)
 * asks after each notification whether the method is backed up and, if so,
 * stops producing and resumes when ecp_bus_when_drained calls it back. A
 * producer that cannot wait keeps sending: its slow socket clients are
 * dropped, and the server's memory holds it for a slow stdio client. */

/* True while some connection that receives `method` has more than the
 * server's pause bound queued (CONNECTION_PAUSE_BYTES) and has not yet
 * drained to half of it. A bus without flow control is never backed up. */
bool ecp_bus_backed_up(ecp_bus *bus, const char *method);

typedef void (*ecp_drained_fn)(void *ctx);

/* Calls fn(ctx) once, on the loop and never from inside this function, as
 * soon as no connection that receives `method` is backed up any more (one
 * that closes counts as drained); at once, in a later loop turn, when none is
 * now. Registering the same (method, fn, ctx) again while it waits does
 * nothing. method is copied. */
void ecp_bus_when_drained(ecp_bus *bus, const char *method, ecp_drained_fn fn, void *ctx);

/* Withdraws every waiting ecp_bus_when_drained of (fn, ctx), whatever its
 * method. A producer calls it before ctx goes away (its adapter's destroy). */
void ecp_bus_cancel_when_drained(ecp_bus *bus, ecp_drained_fn fn, void *ctx);

/* ----- an object result ---------------------------------------------------- */

/* A result that is one object, {...}: write its members into the writer
 * returned, then ecp_call_finish_object. */
json_writer *ecp_call_result_object(ecp_call *call);
void ecp_call_finish_object(ecp_call *call, json_writer *w);

#endif
