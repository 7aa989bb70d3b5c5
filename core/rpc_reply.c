/* The answers adapters give again and again: a result of one key, and an
 * error from a status through the adapter's map of wire codes. */
#include "call.h"
#include "error.h"
#include "rpc.h"

void ecp_call_reply_empty(ecp_call *call)
{
    ecp_call_reply_raw(call, "{}", 2);
}

void ecp_call_reply_bool(ecp_call *call, const char *key, bool value)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, key, value);
    jw_object_end(w);
    ecp_call_finish(call);
}

void ecp_call_reply_int(ecp_call *call, const char *key, int64_t value)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_int(w, key, value);
    jw_object_end(w);
    ecp_call_finish(call);
}

void ecp_call_reply_string(ecp_call *call, const char *key, const char *value)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_string(w, key, value);
    jw_object_end(w);
    ecp_call_finish(call);
}

void ecp_call_reply_status(ecp_call *call, const ecp_wire_map *map, size_t count, int status, const ecp_error *err,
                           const char *data_json)
{
    int code = ecp_wire_code(map, count, status, ECP_WIRE_INTERNAL_ERROR);
    ecp_call_error_data(call, code, data_json, "%s", err ? err->message : ecp_status_text(status));
}
