#include "jsonrpc.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

static int fail(rpc_problem *problem, int code, const char *message)
{
    problem->code = code;
    snprintf(problem->message, sizeof problem->message, "%s", message);
    return -1;
}

/* The members a message may have, found in one pass over its keys (the
 * first of a repeated key counts, as with json_get). */
typedef struct members {
    json_ref id, jsonrpc, method, params, result, error;
} members;

static void find_members(const json_doc *doc, json_ref object, members *m)
{
    /* in the order of the struct's fields */
    static const char *const names[] = {"id", "jsonrpc", "method", "params", "result", "error"};
    static const size_t lens[] = {2, 7, 6, 6, 6, 5};
    json_ref found[6];
    json_get_members(doc, object, names, lens, 6, found);
    *m = (members){found[0], found[1], found[2], found[3], found[4], found[5]};
}

int rpc_message_read(const json_doc *doc, json_ref ref, arena *a, rpc_message *out, rpc_problem *problem)
{
    memset(out, 0, sizeof *out);
    out->params = JSON_NO_REF;
    if (json_type_of(doc, ref) != JSON_OBJECT)
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: a message must be a JSON object");
    members m;
    find_members(doc, ref, &m);

    /* Read the id first, so that every later complaint can be answered to it. */
    json_ref id = m.id;
    json_type id_type = json_type_of(doc, id);
    if (id_type == JSON_STRING || id_type == JSON_NUMBER || id_type == JSON_NULL) {
        /* a null id is allowed by JSON-RPC 2.0 and still makes a request:
         * its text "null" is what the answer echoes */
        out->id_raw = json_raw(doc, id, &out->id_len);
    } else if (id_type != JSON_ABSENT) {
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: id must be a string or a number");
    }

    size_t version_len;
    const char *version = json_raw(doc, m.jsonrpc, &version_len);
    bool version_ok = version_len == 5 && memcmp(version, "\"2.0\"", 5) == 0; /* as every client writes it */
    if (!version_ok && !json_string_eq(doc, m.jsonrpc, "2.0"))
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");

    json_ref method = m.method;
    if (json_type_of(doc, method) == JSON_ABSENT) {
        if (json_type_of(doc, m.result) != JSON_ABSENT || json_type_of(doc, m.error) != JSON_ABSENT) {
            out->kind = RPC_RESPONSE;
            return 0;
        }
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method is required");
    }
    if (json_type_of(doc, method) != JSON_STRING)
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method must be a string");
    size_t raw_len;
    const char *raw = json_raw(doc, method, &raw_len);
    if (raw_len - 2 < sizeof out->method_buf && !memchr(raw + 1, '\\', raw_len - 2)) {
        /* a name without escapes (every real one) needs no decoding and no arena */
        memcpy(out->method_buf, raw + 1, raw_len - 2);
        out->method_buf[raw_len - 2] = '\0';
        out->method = out->method_buf;
    } else {
        size_t method_len;
        if (!json_string(doc, method, a, &out->method, &method_len))
            return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method must be a string");
        if (strlen(out->method) != method_len)
            return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method contains a NUL character");
    }

    json_ref params = m.params;
    json_type params_type = json_type_of(doc, params);
    if (params_type == JSON_OBJECT || params_type == JSON_ARRAY)
        out->params = params;
    else if (params_type != JSON_ABSENT && params_type != JSON_NULL)
        return fail(problem, ECP_WIRE_INVALID_PARAMS, "params: expected object or array");

    out->kind = id_type == JSON_ABSENT ? RPC_NOTIFICATION : RPC_REQUEST;
    return 0;
}
