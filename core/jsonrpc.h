/* jsonrpc: recognising JSON-RPC 2.0 messages.
 *
 * Given one parsed message object, tells a request from a notification from a
 * response, and checks what JSON-RPC 2.0 requires: "jsonrpc":"2.0", a string
 * method, an id that is a string or a number, params that are structured.
 * What fails gets the code and message the server sends back, and the id when
 * it could be read, so even a bad request is answered with its own id.
 */
#ifndef ECPD_JSONRPC_H
#define ECPD_JSONRPC_H

#include <stddef.h>

#include "arena.h"
#include "json.h"

typedef enum rpc_kind {
    RPC_REQUEST,
    RPC_NOTIFICATION,
    RPC_RESPONSE,
} rpc_kind;

typedef struct rpc_message {
    rpc_kind kind;
    const char *method;   /* decoded, in method_buf or the arena; NULL for a response */
    const char *id_raw;   /* the id's JSON text in the document, NULL when absent */
    size_t id_len;
    json_ref params;      /* JSON_NO_REF when absent */
    char method_buf[96];  /* holds a short method name: method may point here, so do not copy the struct */
} rpc_message;

typedef struct rpc_problem {
    int code;             /* wire code: -32600 or -32602 */
    char message[160];
} rpc_problem;

/* Reads message `ref` of doc. Returns 0, or -1 with problem filled in (and
 * out->id_raw set when the id was usable). */
int rpc_message_read(const json_doc *doc, json_ref ref, arena *a, rpc_message *out, rpc_problem *problem);

#endif
