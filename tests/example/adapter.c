/* adapter: wordcount/count on the wire. */
#include "adapter.h"

#include "buf.h"
#include "interface.h"
#include "uri.h"

static const ecp_wire_map wire_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_FILE_NOT_FOUND},     {ECP_EACCES, ECP_WIRE_FILE_ACCESS_DENIED},
    {ECP_EISDIR, ECP_WIRE_FILE_IS_DIRECTORY},     {ECP_EBADURI, ECP_WIRE_FILE_INVALID_URI},
    {ECP_ENOPROVIDER, ECP_WIRE_FILE_NO_PROVIDER}, {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

static void answer_count(void *ctx, int status, const ecp_error *err, const wordcount_result *r)
{
    ecp_call *call = ctx;
    if (status) /* unlisted statuses: -32603 */
        ecp_call_reply_status(call, wire_codes, ECP_WIRE_MAP_COUNT(wire_codes), status, err, NULL);
    else
        ecp_call_reply_fields(call, ECP_FIELDS(ECP_INT_FIELD("words", r->words), ECP_INT_FIELD("lines", r->lines)));
}

static void m_count(void *ctx, ecp_call *call)
{
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return;
    buf path = BUF_INIT;
    ecp_error err = {0};
    int status = uri_file_path(uri.ptr, uri.len, &path, &err);
    if (status)
        answer_count(call, status, &err, NULL);
    else
        wordcount_count_start(ctx, &(wordcount_args){.path = path.data, .serve = call}, answer_count, call);
    buf_free(&path);
}

static const ecp_method methods[] = {
    {"wordcount/count", m_count, "1.0", "The words and lines of a file", "{uri: string}"},
};

void wordcount_adapter_init(ecp_adapter *out, struct wordcount_service *svc)
{
    *out = (ecp_adapter){.ns = "wordcount", .methods = methods, .method_count = 1, .ctx = svc};
}
