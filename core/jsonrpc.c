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

/* Whether key k spells name; a key without escapes is compared in place. */
static bool key_is(const json_doc *doc, json_ref k, const char *name, size_t name_len)
{
    size_t raw_len;
    const char *raw = json_raw(doc, k, &raw_len); /* with its quotes */
    if (raw_len < 2)
        return false;
    if (!memchr(raw + 1, '\\', raw_len - 2))
        return raw_len - 2 == name_len && memcmp(raw + 1, name, name_len) == 0;
    return json_string_eq(doc, k, name);
}

static void find_members(const json_doc *doc, json_ref object, members *m)
{
    m->id = m->jsonrpc = m->method = m->params = m->result = m->error = JSON_NO_REF;
    static const struct {
        const char *name;
        size_t len;
        size_t offset;
    } names[] = {
        {"id", 2, offsetof(members, id)},           {"jsonrpc", 7, offsetof(members, jsonrpc)},
        {"method", 6, offsetof(members, method)},   {"params", 6, offsetof(members, params)},
        {"result", 6, offsetof(members, result)},   {"error", 5, offsetof(members, error)},
    };
    for (json_ref k = json_first(doc, object); k != JSON_NO_REF; k = json_next(doc, k)) {
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            json_ref *slot = (json_ref *)((char *)m + names[i].offset);
            if (*slot == JSON_NO_REF && key_is(doc, k, names[i].name, names[i].len)) {
                *slot = k + 1;
                break;
            }
        }
    }
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

    if (!json_string_eq(doc, m.jsonrpc, "2.0"))
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
