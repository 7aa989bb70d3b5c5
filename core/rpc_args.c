/* The typed param readers of rpc.h. Their -32602 messages and those of the
 * signature checker (rpc_sig.c) read alike: "<field>: required string",
 * "<field>: expected integer, got string". */
#include <stdint.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "rpc.h"
#include "uri.h"

static const char *key_of(const char *name)
{
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* Looks up name in obj. Absent and null both count as missing. */
static json_ref lookup(const ecp_call *call, json_ref obj, const char *name)
{
    const json_doc *doc = ecp_call_doc(call);
    json_ref ref = json_get(doc, obj, key_of(name));
    return json_type_of(doc, ref) == JSON_NULL ? JSON_NO_REF : ref;
}

static bool missing(ecp_call *call, const char *name, const char *what)
{
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: required %s", name, what);
    return false;
}

static bool mistyped(ecp_call *call, json_ref ref, const char *name, const char *what)
{
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: expected %s, got %s", name, what,
                   json_type_name(json_type_of(ecp_call_doc(call), ref)));
    return false;
}

static bool read_string(ecp_call *call, json_ref obj, const char *name, ecp_str *out, bool required)
{
    json_ref ref = lookup(call, obj, name);
    if (ref == JSON_NO_REF) {
        out->ptr = NULL;
        out->len = 0;
        return required ? missing(call, name, "string") : true;
    }
    if (!json_string(ecp_call_doc(call), ref, ecp_call_arena(call), &out->ptr, &out->len))
        return mistyped(call, ref, name, "string");
    return true;
}

bool ecp_arg_string(ecp_call *call, json_ref obj, const char *name, ecp_str *out)
{
    return read_string(call, obj, name, out, true);
}

bool ecp_arg_string_opt(ecp_call *call, json_ref obj, const char *name, ecp_str *out)
{
    return read_string(call, obj, name, out, false);
}

static bool read_int(ecp_call *call, json_ref obj, const char *name, int64_t *out, bool required)
{
    json_ref ref = lookup(call, obj, name);
    if (ref == JSON_NO_REF)
        return required ? missing(call, name, "integer") : true;
    if (!json_int64(ecp_call_doc(call), ref, out))
        return mistyped(call, ref, name, "integer");
    return true;
}

bool ecp_arg_int(ecp_call *call, json_ref obj, const char *name, int64_t *out)
{
    return read_int(call, obj, name, out, true);
}

bool ecp_arg_int_opt(ecp_call *call, json_ref obj, const char *name, int64_t def, int64_t *out)
{
    *out = def;
    return read_int(call, obj, name, out, false);
}

static bool read_index(ecp_call *call, json_ref obj, const char *name, size_t *out, bool required)
{
    int64_t v;
    json_ref ref = lookup(call, obj, name);
    if (ref == JSON_NO_REF)
        return required ? missing(call, name, "integer") : true;
    if (!json_int64(ecp_call_doc(call), ref, &v))
        return mistyped(call, ref, name, "integer");
    if (v < 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must be >= 0, got %lld", name, (long long)v);
        return false;
    }
    if ((uint64_t)v > SIZE_MAX) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: %lld is too large", name, (long long)v);
        return false;
    }
    *out = (size_t)v;
    return true;
}

bool ecp_arg_index(ecp_call *call, json_ref obj, const char *name, size_t *out)
{
    return read_index(call, obj, name, out, true);
}

bool ecp_arg_index_opt(ecp_call *call, json_ref obj, const char *name, size_t def, size_t *out)
{
    *out = def;
    return read_index(call, obj, name, out, false);
}

bool ecp_arg_double_opt(ecp_call *call, json_ref obj, const char *name, double def, double *out)
{
    *out = def;
    json_ref ref = lookup(call, obj, name);
    if (ref == JSON_NO_REF)
        return true;
    if (!json_double(ecp_call_doc(call), ref, out))
        return mistyped(call, ref, name, "number");
    return true;
}

bool ecp_arg_bool_opt(ecp_call *call, json_ref obj, const char *name, bool def, bool *out)
{
    *out = def;
    json_ref ref = lookup(call, obj, name);
    if (ref == JSON_NO_REF)
        return true;
    if (!json_bool(ecp_call_doc(call), ref, out))
        return mistyped(call, ref, name, "boolean");
    return true;
}

static bool read_container(ecp_call *call, json_ref obj, const char *name, json_ref *out, json_type type,
                           bool required)
{
    const char *what = type == JSON_OBJECT ? "object" : "array";
    json_ref ref = lookup(call, obj, name);
    *out = JSON_NO_REF;
    if (ref == JSON_NO_REF)
        return required ? missing(call, name, what) : true;
    if (json_type_of(ecp_call_doc(call), ref) != type)
        return mistyped(call, ref, name, what);
    *out = ref;
    return true;
}

bool ecp_arg_object(ecp_call *call, json_ref obj, const char *name, json_ref *out)
{
    return read_container(call, obj, name, out, JSON_OBJECT, true);
}

bool ecp_arg_object_opt(ecp_call *call, json_ref obj, const char *name, json_ref *out)
{
    return read_container(call, obj, name, out, JSON_OBJECT, false);
}

bool ecp_arg_array(ecp_call *call, json_ref obj, const char *name, json_ref *out)
{
    return read_container(call, obj, name, out, JSON_ARRAY, true);
}

bool ecp_arg_array_opt(ecp_call *call, json_ref obj, const char *name, json_ref *out)
{
    return read_container(call, obj, name, out, JSON_ARRAY, false);
}

const char *ecp_arg_file_path(ecp_call *call, json_ref obj, const char *name)
{
    ecp_str uri;
    if (!read_string(call, obj, name, &uri, true))
        return NULL;
    buf bytes = BUF_INIT;
    ecp_error err;
    int status = uri_file_path(uri.ptr, uri.len, &bytes, &err);
    const char *path = status == 0 ? arena_strndup(ecp_call_arena(call), bytes.data, bytes.len) : NULL;
    buf_free(&bytes);
    if (path)
        return path;
    /* the file service's own shape of a file error, so that a URI is refused alike by every method */
    int code = ecp_wire_code(ecp_file_wire_codes, ECP_FILE_WIRE_CODE_COUNT, status, ECP_WIRE_FILE_INVALID_URI);
    ecp_error_data d;
    json_writer *w = ecp_error_data_begin(&d);
    jw_key_string(w, "uri", uri.ptr);
    jw_key_string(w, "code", code == ECP_WIRE_FILE_NO_PROVIDER ? "NO_PROVIDER" : "INVALID_URI");
    ecp_call_error_with(call, code, &d, "%s", err.message);
    return NULL;
}
