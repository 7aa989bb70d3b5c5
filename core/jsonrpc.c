#include "jsonrpc.h"

#include <stdio.h>
#include <string.h>

#include "error.h"

static int fail(rpc_problem *problem, int code, const char *message)
{
    problem->code = code;
    snprintf(problem->message, sizeof problem->message, "%s", message);
    return -1;
}

int rpc_message_read(const json_doc *doc, json_ref ref, arena *a, rpc_message *out, rpc_problem *problem)
{
    memset(out, 0, sizeof *out);
    out->params = JSON_NO_REF;
    if (json_type_of(doc, ref) != JSON_OBJECT)
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: a message must be a JSON object");

    /* Read the id first, so that every later complaint can be answered to it. */
    json_ref id = json_get(doc, ref, "id");
    json_type id_type = json_type_of(doc, id);
    if (id_type == JSON_STRING || id_type == JSON_NUMBER || id_type == JSON_NULL) {
        /* a null id is allowed by JSON-RPC 2.0 and still makes a request:
         * its text "null" is what the answer echoes */
        out->id_raw = json_raw(doc, id, &out->id_len);
    } else if (id_type != JSON_ABSENT) {
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: id must be a string or a number");
    }

    if (!json_string_eq(doc, json_get(doc, ref, "jsonrpc"), "2.0"))
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: \"jsonrpc\" must be \"2.0\"");

    json_ref method = json_get(doc, ref, "method");
    if (json_type_of(doc, method) == JSON_ABSENT) {
        if (json_type_of(doc, json_get(doc, ref, "result")) != JSON_ABSENT ||
            json_type_of(doc, json_get(doc, ref, "error")) != JSON_ABSENT) {
            out->kind = RPC_RESPONSE;
            return 0;
        }
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method is required");
    }
    size_t method_len;
    if (!json_string(doc, method, a, &out->method, &method_len))
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method must be a string");
    if (strlen(out->method) != method_len)
        return fail(problem, ECP_WIRE_INVALID_REQUEST, "Invalid Request: method contains a NUL character");

    json_ref params = json_get(doc, ref, "params");
    json_type params_type = json_type_of(doc, params);
    if (params_type == JSON_OBJECT || params_type == JSON_ARRAY)
        out->params = params;
    else if (params_type != JSON_ABSENT && params_type != JSON_NULL)
        return fail(problem, ECP_WIRE_INVALID_PARAMS, "params: expected object or array");

    out->kind = id_type == JSON_ABSENT ? RPC_NOTIFICATION : RPC_REQUEST;
    return 0;
}
