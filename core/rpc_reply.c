/* The answers adapters give again and again: a result of one key, and an
 * error from a status through the adapter's map of wire codes. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
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

const ecp_wire_map ecp_file_wire_codes[ECP_FILE_WIRE_CODE_COUNT] = {
    {ECP_ENOTFOUND, ECP_WIRE_FILE_NOT_FOUND},     {ECP_EACCES, ECP_WIRE_FILE_ACCESS_DENIED},
    {ECP_EISDIR, ECP_WIRE_FILE_IS_DIRECTORY},     {ECP_EBADURI, ECP_WIRE_FILE_INVALID_URI},
    {ECP_ENOPROVIDER, ECP_WIRE_FILE_NO_PROVIDER}, {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

void ecp_call_reply_status(ecp_call *call, const ecp_wire_map *map, size_t count, int status, const ecp_error *err,
                           const char *data_json)
{
    int code = ecp_wire_code(map, count, status, ECP_WIRE_INTERNAL_ERROR);
    ecp_call_error_data(call, code, data_json, "%s", err ? err->message : ecp_status_text(status));
}

bool ecp_call_reply_failed(ecp_call *call, const ecp_wire_map *map, size_t count, int status, const ecp_error *err)
{
    if (status)
        ecp_call_reply_status(call, map, count, status, err, NULL);
    return status != 0;
}

json_writer *ecp_error_data_begin(ecp_error_data *d)
{
    buf_init(&d->bytes);
    jw_init(&d->w, &d->bytes);
    jw_object_begin(&d->w);
    return &d->w;
}

static void error_with(ecp_call *call, int code, ecp_error_data *d, const char *fmt, va_list ap)
{
    jw_object_end(&d->w);
    char message[1024];
    vsnprintf(message, sizeof message, fmt, ap);
    ecp_call_error_data(call, code, d->bytes.data, "%s", message);
    buf_free(&d->bytes);
}

void ecp_call_error_with(ecp_call *call, int code, ecp_error_data *d, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_with(call, code, d, fmt, ap);
    va_end(ap);
}

void ecp_call_error_keyed(ecp_call *call, int code, const char *key, const char *value, const char *fmt, ...)
{
    ecp_error_data d;
    jw_key_string(ecp_error_data_begin(&d), key, value);
    va_list ap;
    va_start(ap, fmt);
    error_with(call, code, &d, fmt, ap);
    va_end(ap);
}

void ecp_write_fields(json_writer *w, const ecp_fields *fields)
{
    jw_object_begin(w);
    for (size_t i = 0; i < fields->count; i++) {
        const ecp_field *f = &fields->items[i];
        switch (f->kind) {
        case ECP_FIELD_STRING_OPT:
            if (f->s)
                jw_key_string(w, f->key, f->s);
            break;
        case ECP_FIELD_STRING: jw_key_string(w, f->key, f->s); break;
        case ECP_FIELD_INT: jw_key_int(w, f->key, f->i); break;
        case ECP_FIELD_BOOL: jw_key_bool(w, f->key, f->b); break;
        case ECP_FIELD_TRUE_OPT:
            if (f->b)
                jw_key_bool(w, f->key, true);
            break;
        case ECP_FIELD_JSON:
            jw_key(w, f->key);
            if (f->s)
                jw_raw(w, f->s, strlen(f->s));
            else
                jw_null(w);
            break;
        }
    }
    jw_object_end(w);
}

void ecp_call_reply_fields(ecp_call *call, const ecp_fields *fields)
{
    ecp_write_fields(ecp_call_result(call), fields);
    ecp_call_finish(call);
}

void ecp_render_fields(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    ecp_write_fields(w, ctx);
}

json_writer *ecp_call_result_key(ecp_call *call, const char *key)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, key);
    return w;
}

void ecp_call_finish_key(ecp_call *call, json_writer *w)
{
    jw_object_end(w);
    ecp_call_finish(call);
}

json_writer *ecp_call_result_list(ecp_call *call, const char *key)
{
    json_writer *w = ecp_call_result_key(call, key);
    jw_array_begin(w);
    return w;
}

void ecp_call_finish_list(ecp_call *call, json_writer *w)
{
    jw_array_end(w);
    ecp_call_finish_key(call, w);
}

/* ----- an object result ---------------------------------------------------- */

json_writer *ecp_call_result_object(ecp_call *call)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    return w;
}

void ecp_call_finish_object(ecp_call *call, json_writer *w)
{
    jw_object_end(w);
    ecp_call_finish(call);
}
