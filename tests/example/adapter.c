/* adapter: wordcount/count on the wire. */
#include "adapter.h"

static void answer_count(void *call, int status, const ecp_error *err, uint64_t words, uint64_t lines)
{
    if (!ecp_call_reply_failed(call, ecp_file_wire_codes, ECP_FILE_WIRE_CODE_COUNT, status, err)) /* unlisted: -32603 */
        ecp_call_reply_fields(call, ECP_FIELDS(ECP_INT_FIELD("words", words), ECP_INT_FIELD("lines", lines)));
}

static void m_count(void *ctx, ecp_call *call)
{
    const char *path = ecp_arg_file_path(call, ecp_call_params(call), "uri"); /* in the call's arena */
    if (path)                                                                  /* NULL: answered already */
        wordcount_count_start(ctx, path, call, answer_count, call);
}

static const ecp_method methods[] = {
    {"wordcount/count", m_count, "1.0", "The words and lines of a file", "{uri: string}"},
};

void wordcount_adapter_init(ecp_adapter *out, wordcount_service *svc)
{
    *out = (ecp_adapter){.ns = "wordcount", .methods = methods, .method_count = 1, .ctx = svc};
}
