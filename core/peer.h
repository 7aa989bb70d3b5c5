/* peer: one JSON-RPC 2.0 endpoint, whatever carries its bytes.
 *
 * A peer is fed what arrives (bytes through core/framing, or whole messages
 * for a transport that frames them itself, such as an HTTP POST's answer) and
 * hands what it sends to a write callback. It numbers the requests it sends,
 * keeps them until their answer, a timeout, a cancel or the close completes
 * each exactly once; it dispatches the requests and notifications it receives
 * to the owner's handlers and lets each request be answered once, at once or
 * later; and it answers what is not JSON-RPC with the proper error (when asked
 * to) without ever failing on it: input is bounded by max_message and parsed
 * without recursion (core/json).
 *
 * It runs on the libuv loop it is given (one timer, for the timeouts). Every
 * callback may close or free the peer: the peer notices and stops.
 */
#ifndef ECPD_PEER_H
#define ECPD_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "framing.h"
#include "json.h"

typedef struct ecp_peer ecp_peer;
/* A request received and not yet answered; the peer owns it until it is
 * answered, or until the peer is freed. */
typedef struct ecp_peer_request ecp_peer_request;

/* How a request we sent ended. */
typedef struct ecp_peer_answer {
    int status;           /* 0: an answer came; ECP_ETIMEDOUT, ECP_ECANCELED, ECP_EIO (closed, or not delivered) */
    const json_doc *doc;  /* the answer's document (NULL unless status is 0); valid during the callback */
    json_ref result;      /* JSON_NO_REF when absent */
    json_ref error;       /* the error object, JSON_NO_REF when absent */
    int64_t code;         /* the error's code (0 when none) */
    const char *message;  /* the error's message, or why status is not 0; never NULL */
} ecp_peer_answer;

typedef void (*ecp_peer_answer_fn)(void *ctx, int64_t id, const ecp_peer_answer *answer);

typedef enum ecp_peer_problem {
    ECP_PEER_MALFORMED,   /* a message that is not JSON-RPC (answered when answer_invalid is set) */
    ECP_PEER_OVERSIZED,   /* a message over max_message, dropped */
    ECP_PEER_BROKEN,      /* a Content-Length header that cannot be read: nothing more is decoded */
    ECP_PEER_STRAY,       /* an answer to no request of ours (one cancelled or timed out since) */
} ecp_peer_problem;

typedef struct ecp_peer_handlers {
    void *ctx;
    /* Bytes to send (framed), or one whole message when the peer was made for
     * messages. request_id is the id of the request being sent, 0 for anything
     * else, so that a transport that cannot deliver it can say so
     * (ecp_peer_fail_request). The callback copies what it keeps. Required. */
    void (*write)(void *ctx, const char *data, size_t len, int64_t request_id);
    /* A request: answer it once with ecp_peer_respond or ecp_peer_respond_error,
     * now or later. NULL: every request is answered -32601. */
    void (*on_request)(void *ctx, ecp_peer_request *request, const char *method, const json_doc *doc,
                       json_ref params);
    /* A notification. NULL: ignored. */
    void (*on_notification)(void *ctx, const char *method, const json_doc *doc, json_ref params);
    /* Sends the notice that request id was cancelled. NULL: "$/cancelRequest" {"id": id}. */
    void (*send_cancel)(void *ctx, ecp_peer *peer, int64_t id);
    /* Something wrong arrived (for logging; a BROKEN stream is the owner's to close). NULL: ignored. */
    void (*on_problem)(void *ctx, ecp_peer_problem problem, const char *detail);
} ecp_peer_handlers;

typedef struct ecp_peer_options {
    /* FRAMING_NEWLINE or FRAMING_CONTENT_LENGTH fix the framing both ways;
     * FRAMING_UNKNOWN follows the first message received and sends newline JSON
     * until then. Ignored when messages is set. */
    framing_mode framing;
    bool messages;        /* fed and writes whole messages: no framing */
    size_t max_message;   /* longest message received (0: 64 MiB) */
    /* Answer what is not JSON-RPC (parse errors, invalid requests, oversized
     * messages) with an error to id null, as a server must. */
    bool answer_invalid;
    /* Refuse requests whose params are not an object (-32602 "params must be an object"). */
    bool params_object_only;
} ecp_peer_options;

ecp_peer *ecp_peer_new(uv_loop_t *loop, const ecp_peer_options *options, const ecp_peer_handlers *handlers);

/* Bytes received. Handlers run from here. */
void ecp_peer_feed(ecp_peer *self, const char *data, size_t len);
/* One whole message received (a peer made for messages). */
void ecp_peer_feed_message(ecp_peer *self, const char *json, size_t len);
/* The input ended: a last newline-framed message without its newline is still read. */
void ecp_peer_feed_end(ecp_peer *self);

/* Sends a request; params_json is a JSON object or array (NULL: none).
 * timeout_ms 0 waits for ever. done is called exactly once. Returns the
 * request's id (> 0), or 0 when the peer is closed (done is not called). */
int64_t ecp_peer_call(ecp_peer *self, const char *method, const char *params_json, uint64_t timeout_ms,
                      ecp_peer_answer_fn done, void *ctx);
/* Sends a notification. False when the peer is closed. */
bool ecp_peer_notify(ecp_peer *self, const char *method, const char *params_json);

/* The gate, for a protocol that opens with a handshake (LSP: nothing but
 * initialize until it is answered, and initialized first after it). While
 * the gate is closed, the requests and notifications sent (cancel notices
 * too) wait behind it, in order, and their timeouts run; answers to the other
 * side's requests pass, and so does what is sent with the _past_gate calls.
 * Opening it sends what waited, in order. The gate starts open. */
void ecp_peer_gate_close(ecp_peer *self);
void ecp_peer_gate_open(ecp_peer *self);
int64_t ecp_peer_call_past_gate(ecp_peer *self, const char *method, const char *params_json, uint64_t timeout_ms,
                                ecp_peer_answer_fn done, void *ctx);
bool ecp_peer_notify_past_gate(ecp_peer *self, const char *method, const char *params_json);

/* Withdraws request id: the cancel notice goes out and done is called with
 * ECP_ECANCELED. Returns false when no such request is pending. */
bool ecp_peer_cancel(ecp_peer *self, int64_t id);
/* The transport could not deliver request id: done is called with ECP_EIO
 * and message. */
bool ecp_peer_fail_request(ecp_peer *self, int64_t id, const char *message);

/* The request's method and id (its JSON text, "null" for a null id). */
const char *ecp_peer_request_method(const ecp_peer_request *request);
const char *ecp_peer_request_id(const ecp_peer_request *request);
/* Answers with result_json (a JSON value; NULL: null) and releases the request. */
void ecp_peer_respond(ecp_peer_request *request, const char *result_json);
void ecp_peer_respond_error(ecp_peer_request *request, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* An error to a message that had no usable id. */
void ecp_peer_send_error(ecp_peer *self, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

bool ecp_peer_is_open(const ecp_peer *self);
size_t ecp_peer_pending_count(const ecp_peer *self);
/* Stops: nothing more is sent or dispatched, and every pending request is
 * completed with ECP_EIO and why. Requests received stay answerable (their
 * answers go nowhere). */
void ecp_peer_close(ecp_peer *self, const char *why);
/* Closes (if open) and releases the peer and every request it received and
 * that was not answered. May be called from a handler. */
void ecp_peer_free(ecp_peer *self);

#endif
