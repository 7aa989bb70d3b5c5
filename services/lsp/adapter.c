/* The lsp methods: params in, LSP requests out, results reshaped as the catalogue says. */
#include "adapter.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "interface.h"
#include "map.h"

typedef struct lsp_adapter {
    lsp_service *svc;
    ecp_bus *bus;
    /* Documents whose diagnostics changed while a connection that receives
     * them was backed up, in the order they first did: each gets its newest
     * set once the connections drain, not every set in between. */
    ecp_map *stale_at;   /* uri -> its place in stale */
    char **stale;
    size_t stale_first, stale_count, stale_cap;
    bool awaiting_drain;
} lsp_adapter;

static const ecp_wire_map start_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_LSP_SERVER_NOT_FOUND},
    {ECP_ESTATE, ECP_WIRE_LSP_DISABLED},
    {ECP_EIO, ECP_WIRE_LSP_SERVER_START_FAILED},
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
    {ECP_EACCES, ECP_WIRE_LSP_WORKSPACE_NOT_TRUSTED},
};

static const ecp_wire_map request_codes[] = {
    {ECP_ESTATE, ECP_WIRE_LSP_SERVER_NOT_INITIALIZED},
    {ECP_ETIMEDOUT, ECP_WIRE_LSP_REQUEST_TIMEOUT},
    {ECP_EIO, ECP_WIRE_LSP_REQUEST_FAILED},
    {ECP_ENOTSUP, ECP_WIRE_LSP_NOT_SUPPORTED},
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ----- server lifetime ------------------------------------------------------------ */

static void write_server(json_writer *w, const lsp_server_info *info)
{
    jw_object_begin(w);
    jw_key_string(w, "languageId", info->language_id);
    jw_key_string(w, "status", lsp_status_name(info->status));
    if (info->capabilities) {
        jw_key(w, "capabilities");
        jw_raw(w, info->capabilities, strlen(info->capabilities));
        jw_key_string(w, "positionEncoding", ecp_encoding_name(info->encoding));
    }
    if (info->error)
        jw_key_string(w, "error", info->error);
    jw_object_end(w);
}

static void started(void *ctx, int status, const ecp_error *err, const lsp_server_info *info)
{
    ecp_call *call = ctx;
    if (status) {
        ecp_call_error(call, ecp_wire_code(start_codes, COUNT(start_codes), status, ECP_WIRE_LSP_SERVER_START_FAILED),
                       "%s", err ? err->message : "Language server failed to start");
        return;
    }
    json_writer *w = ecp_call_result_object(call);
    jw_key_bool(w, "success", true);
    jw_key_string(w, "languageId", info->language_id);
    jw_key_bool(w, "ready", info->status == LSP_READY);
    jw_key(w, "capabilities");
    if (info->capabilities)
        jw_raw(w, info->capabilities, strlen(info->capabilities));
    else
        jw_object_begin(w), jw_object_end(w);
    jw_key_string(w, "positionEncoding", ecp_encoding_name(info->encoding));
    ecp_call_finish_object(call, w);
}

static void m_start(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str language, root;
    if (!ecp_arg_string(call, p, "languageId", &language) || !ecp_arg_string_opt(call, p, "workspaceUri", &root))
        return;
    ecp_call_defer(call);
    lsp_server_start(a->svc, language.ptr, root.ptr, started, call);
}

static void m_stop(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str language;
    if (!ecp_arg_string(call, ecp_call_params(call), "languageId", &language))
        return;
    lsp_server_stop(a->svc, language.ptr);
    ecp_call_reply_success(call, true);
}

static void status_item(void *ctx, const lsp_server_info *info) { write_server(ctx, info); }

static void m_status(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str language;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "languageId", &language))
        return;
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "servers");
    jw_array_begin(w);
    if (language.ptr) {
        lsp_server_info info;
        lsp_server_get(a->svc, language.ptr, &info);
        write_server(w, &info);
    } else {
        lsp_server_each(a->svc, status_item, w);
    }
    jw_array_end(w);
    ecp_call_finish_object(call, w);
}

/* ----- documents a client holds ------------------------------------------------------ */

static void m_document_open(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str uri, language, content;
    if (!ecp_arg_string(call, p, "uri", &uri) || !ecp_arg_string(call, p, "languageId", &language) ||
        !ecp_arg_string(call, p, "content", &content))
        return;
    lsp_document_open(a->svc, uri.ptr, language.ptr, content.ptr, content.len, NULL);
    ecp_call_reply_success(call, true);
}

static void m_document_change(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str uri, content;
    int64_t version;
    if (!ecp_arg_string(call, p, "uri", &uri) || !ecp_arg_string(call, p, "content", &content) ||
        !ecp_arg_int_opt(call, p, "version", 1, &version))
        return;
    lsp_document_change(a->svc, uri.ptr, content.ptr, content.len, version);
    ecp_call_reply_success(call, true);
}

static void m_document_save(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str uri, content;
    if (!ecp_arg_string(call, p, "uri", &uri) || !ecp_arg_string_opt(call, p, "content", &content))
        return;
    lsp_document_save(a->svc, uri.ptr, content.ptr, content.len);
    ecp_call_reply_success(call, true);
}

static void m_document_close(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return;
    lsp_document_close(a->svc, uri.ptr);
    ecp_call_reply_success(call, true);
}

/* ----- requests to servers ------------------------------------------------------------- */

typedef enum result_shape {
    SHAPE_ITEMS,      /* {items: CompletionItem[]} */
    SHAPE_RAW,        /* the result itself, null included */
    SHAPE_LOCATIONS,  /* {locations: [{uri, range}]} */
    SHAPE_SYMBOLS,    /* {symbols: [...]} */
    SHAPE_EDIT,       /* {edit: WorkspaceEdit | null} */
    SHAPE_ARRAY,      /* the result, null as [] */
    SHAPE_COMMAND,    /* the result itself; with no server to run it, an error */
} result_shape;

typedef struct pending_call {
    ecp_call *call;
    result_shape shape;
    lsp_service *svc;
    lsp_request *req;
} pending_call;

static void write_empty(json_writer *w, result_shape shape)
{
    switch (shape) {
    case SHAPE_ITEMS:
    case SHAPE_LOCATIONS:
    case SHAPE_SYMBOLS:
        jw_object_begin(w);
        jw_key(w, shape == SHAPE_ITEMS ? "items" : shape == SHAPE_LOCATIONS ? "locations" : "symbols");
        jw_array_begin(w);
        jw_array_end(w);
        jw_object_end(w);
        break;
    case SHAPE_EDIT:
        jw_object_begin(w);
        jw_key_null(w, "edit");
        jw_object_end(w);
        break;
    case SHAPE_ARRAY:
        jw_array_begin(w);
        jw_array_end(w);
        break;
    case SHAPE_RAW:
    case SHAPE_COMMAND:
        jw_null(w);
        break;
    }
}

static void write_location(json_writer *w, const lsp_location *loc)
{
    jw_object_begin(w);
    if (loc->uri)
        jw_key_string(w, "uri", loc->uri);
    else
        jw_key_null(w, "uri");
    jw_key(w, "range");
    if (!loc->has_range) {
        jw_null(w);
    } else {
        jw_object_begin(w);
        jw_key(w, "start");
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)loc->start_line);
        jw_key_int(w, "character", (int64_t)loc->start_character);
        jw_object_end(w);
        jw_key(w, "end");
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)loc->end_line);
        jw_key_int(w, "character", (int64_t)loc->end_character);
        jw_object_end(w);
        jw_object_end(w);
    }
    jw_object_end(w);
}

/* The result in the catalogue's shape: the server's value quoted as it came
 * (or as the service rendered it once), or locations rendered from structs. */
static void write_shaped(json_writer *w, result_shape shape, const lsp_result *r)
{
    if (r->is_null) {
        write_empty(w, shape);
        return;
    }
    const char *key = NULL;
    switch (shape) {
    case SHAPE_LOCATIONS:
        jw_object_begin(w);
        jw_key(w, "locations");
        jw_array_begin(w);
        for (size_t i = 0; i < r->location_count; i++)
            write_location(w, &r->locations[i]);
        jw_array_end(w);
        jw_object_end(w);
        return;
    case SHAPE_ITEMS:
        key = "items";
        break;
    case SHAPE_SYMBOLS:
        key = "symbols";
        break;
    case SHAPE_EDIT:
        key = "edit";
        break;
    case SHAPE_ARRAY:
    case SHAPE_RAW:
    case SHAPE_COMMAND:
        break;
    }
    if (key) {
        jw_object_begin(w);
        jw_key(w, key);
    }
    jw_raw(w, r->json, r->len);
    if (key)
        jw_object_end(w);
}

static void answered(void *ctx, int status, const ecp_error *err, const lsp_result *result)
{
    pending_call *pc = ctx;
    ecp_call *call = pc->call;
    result_shape shape = pc->shape;
    free(pc);
    if (status == ECP_ENOTFOUND && shape == SHAPE_COMMAND) {
        /* a command that cannot run must not look as if it ran */
        ecp_call_error(call, ECP_WIRE_LSP_DOCUMENT_NOT_OPEN, "no language server has this document open: "
                       "the command has nowhere to run");
        return;
    }
    if (status == ECP_ENOTFOUND) {
        /* no server has the document open: the catalogue's empty result */
        json_writer *w = ecp_call_result(call);
        write_empty(w, shape);
        ecp_call_finish(call);
        return;
    }
    if (status) {
        ecp_call_error(call, ecp_wire_code(request_codes, COUNT(request_codes), status, ECP_WIRE_LSP_REQUEST_FAILED),
                       "%s", err ? err->message : "Language server request failed");
        return;
    }
    json_writer *w = ecp_call_result(call);
    write_shaped(w, shape, result);
    ecp_call_finish(call);
}

static void abandoned(void *ctx)
{
    pending_call *pc = ctx;
    if (pc->req)
        lsp_request_cancel(pc->svc, pc->req);
}

static void forward(lsp_adapter *a, ecp_call *call, const char *uri, const char *method, const buf *params,
                    result_shape shape)
{
    pending_call *pc = calloc(1, sizeof *pc);
    if (!pc) {
        ecp_call_error(call, ECP_WIRE_INTERNAL_ERROR, "out of memory");
        return;
    }
    pc->call = ecp_call_defer(call);
    pc->shape = shape;
    pc->svc = a->svc;
    lsp_result_kind kind = shape == SHAPE_ITEMS       ? LSP_RESULT_ITEMS
                           : shape == SHAPE_LOCATIONS ? LSP_RESULT_LOCATIONS
                                                      : LSP_RESULT_VALUE;
    /* the callback may run (and free pc) before lsp_request_send returns */
    lsp_request *req =
        lsp_request_send(a->svc, uri, method, params->data, kind, ecp_call_encoding(call), answered, pc);
    if (req) {
        pc->req = req;
        ecp_call_on_abandon(call, abandoned, pc);
    }
}

/* A request about a document: its uri and the params for its server, built in w. */
typedef struct target {
    ecp_str uri;
    buf params;
    json_writer w;
} target;

/* Reads {uri, position?} and starts t's params with textDocument (and position, in the server's units).
 * t's params are the caller's to free afterwards, whatever this returns. */
static bool read_target(lsp_service *svc, ecp_call *call, bool with_position, target *t)
{
    buf_init(&t->params);
    jw_init(&t->w, &t->params);
    json_writer *w = &t->w;
    ecp_str *uri = &t->uri;
    json_ref p = ecp_call_params(call);
    if (!ecp_arg_string(call, p, "uri", uri))
        return false;
    jw_object_begin(w);
    jw_key(w, "textDocument");
    jw_object_begin(w);
    jw_key_string(w, "uri", uri->ptr);
    jw_object_end(w);
    if (!with_position)
        return true;
    json_ref pos;
    int64_t line, character;
    if (!ecp_arg_object(call, p, "position", &pos) || !ecp_arg_int(call, pos, "position.line", &line))
        return false;
    if (json_get(ecp_call_doc(call), pos, "character") != JSON_NO_REF) {
        if (!ecp_arg_int(call, pos, "position.character", &character))
            return false;
    } else if (!ecp_arg_int(call, pos, "position.column", &character)) {
        return false;
    }
    if (line < 0 || character < 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "position: line and character must be >= 0");
        return false;
    }
    character = (int64_t)lsp_column_convert(svc, uri->ptr, (size_t)line, (size_t)character, ecp_call_encoding(call),
                                            lsp_encoding_of(svc, uri->ptr));
    jw_key(w, "position");
    jw_object_begin(w);
    jw_key_int(w, "line", line);
    jw_key_int(w, "character", character);
    jw_object_end(w);
    return true;
}

/* Closes t's params and sends the request. */
static void forward_target(lsp_adapter *a, ecp_call *call, target *t, const char *method, result_shape shape)
{
    jw_object_end(&t->w);
    forward(a, call, t->uri.ptr, method, &t->params, shape);
}

static void simple_request(void *ctx, ecp_call *call, const char *method, bool with_position, result_shape shape)
{
    target t;
    if (read_target(((lsp_adapter *)ctx)->svc, call, with_position, &t))
        forward_target(ctx, call, &t, method, shape);
    buf_free(&t.params);
}

static void m_completion(void *ctx, ecp_call *call)
{
    simple_request(ctx, call, "textDocument/completion", true, SHAPE_ITEMS);
}
static void m_hover(void *ctx, ecp_call *call) { simple_request(ctx, call, "textDocument/hover", true, SHAPE_RAW); }
static void m_signature_help(void *ctx, ecp_call *call)
{
    simple_request(ctx, call, "textDocument/signatureHelp", true, SHAPE_RAW);
}
static void m_definition(void *ctx, ecp_call *call)
{
    simple_request(ctx, call, "textDocument/definition", true, SHAPE_LOCATIONS);
}
static void m_document_symbol(void *ctx, ecp_call *call)
{
    simple_request(ctx, call, "textDocument/documentSymbol", false, SHAPE_SYMBOLS);
}

static void m_references(void *ctx, ecp_call *call)
{
    target t;
    bool include;
    if (read_target(((lsp_adapter *)ctx)->svc, call, true, &t) &&
        ecp_arg_bool_opt(call, ecp_call_params(call), "includeDeclaration", true, &include)) {
        jw_key(&t.w, "context");
        jw_object_begin(&t.w);
        jw_key_bool(&t.w, "includeDeclaration", include);
        jw_object_end(&t.w);
        forward_target(ctx, call, &t, "textDocument/references", SHAPE_LOCATIONS);
    }
    buf_free(&t.params);
}

static void m_rename(void *ctx, ecp_call *call)
{
    target t;
    ecp_str name;
    if (read_target(((lsp_adapter *)ctx)->svc, call, true, &t) &&
        ecp_arg_string(call, ecp_call_params(call), "newName", &name)) {
        jw_key_string_n(&t.w, "newName", name.ptr, name.len);
        forward_target(ctx, call, &t, "textDocument/rename", SHAPE_EDIT);
    }
    buf_free(&t.params);
}

static void m_format(void *ctx, ecp_call *call)
{
    target t;
    json_ref options = JSON_NO_REF;
    if (read_target(((lsp_adapter *)ctx)->svc, call, false, &t) &&
        ecp_arg_object_opt(call, ecp_call_params(call), "options", &options)) {
        jw_key(&t.w, "options");
        if (options != JSON_NO_REF) {
            json_write_value(&t.w, ecp_call_doc(call), options);
        } else {
            jw_object_begin(&t.w);
            jw_key_int(&t.w, "tabSize", 4);
            jw_key_bool(&t.w, "insertSpaces", true);
            jw_object_end(&t.w);
        }
        forward_target(ctx, call, &t, "textDocument/formatting", SHAPE_ARRAY);
    }
    buf_free(&t.params);
}

/* A value of the params with its positions in the server's units. */
static void write_for_server(lsp_service *svc, ecp_call *call, const char *uri, json_ref value, json_writer *w)
{
    size_t raw_len, conv_len;
    const char *raw = json_raw(ecp_call_doc(call), value, &raw_len);
    char *conv = lsp_json_convert(svc, uri, raw, raw_len, ecp_call_encoding(call), lsp_encoding_of(svc, uri),
                                  &conv_len);
    if (conv)
        jw_raw(w, conv, conv_len);
    else
        json_write_value(w, ecp_call_doc(call), value);
    free(conv);
}

static void m_code_action(void *ctx, ecp_call *call)
{
    lsp_service *svc = ((lsp_adapter *)ctx)->svc;
    target t;
    json_ref range, context = JSON_NO_REF;
    json_ref p = ecp_call_params(call);
    if (read_target(svc, call, false, &t) && ecp_arg_object(call, p, "range", &range) &&
        ecp_arg_object_opt(call, p, "context", &context)) {
        jw_key(&t.w, "range");
        write_for_server(svc, call, t.uri.ptr, range, &t.w);
        jw_key(&t.w, "context");
        if (context != JSON_NO_REF) {
            /* its diagnostics are the client's, counted in the client's units */
            write_for_server(svc, call, t.uri.ptr, context, &t.w);
        } else {
            jw_object_begin(&t.w);
            jw_key(&t.w, "diagnostics");
            jw_array_begin(&t.w);
            jw_array_end(&t.w);
            jw_object_end(&t.w);
        }
        forward_target(ctx, call, &t, "textDocument/codeAction", SHAPE_ARRAY);
    }
    buf_free(&t.params);
}

/* A command a code action names (clangd's tweaks, pyright's organize
 * imports) runs in the server that offered it: the uri picks the server. Its
 * arguments are the server's own and go back as they came. What the command
 * changes arrives as the server's workspace/applyEdit, applied like any edit. */
static void m_execute_command(void *ctx, ecp_call *call)
{
    json_ref p = ecp_call_params(call);
    ecp_str uri, command;
    json_ref arguments = json_get(ecp_call_doc(call), p, "arguments");
    if (!ecp_arg_string(call, p, "uri", &uri) || !ecp_arg_string(call, p, "command", &command))
        return;
    buf params;
    buf_init(&params);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key_string_n(&w, "command", command.ptr, command.len);
    if (json_type_of(ecp_call_doc(call), arguments) == JSON_ARRAY) {
        jw_key(&w, "arguments");
        json_write_value(&w, ecp_call_doc(call), arguments);
    }
    jw_object_end(&w);
    forward(ctx, call, uri.ptr, "workspace/executeCommand", &params, SHAPE_COMMAND);
    buf_free(&params);
}

/* ----- diagnostics ------------------------------------------------------------------------ */

static void m_diagnostics(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return;
    char *json = lsp_diagnostics_get(a->svc, uri.ptr, ecp_call_encoding(call));
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "diagnostics");
    jw_raw(w, json, strlen(json));
    ecp_call_finish_object(call, w);
    free(json);
}

typedef struct all_ctx {
    lsp_service *svc;
    json_writer *w;
    ecp_position_encoding enc;
} all_ctx;

static void all_item(void *ctx, const char *uri)
{
    all_ctx *c = ctx;
    char *json = lsp_diagnostics_get(c->svc, uri, c->enc);
    jw_key(c->w, uri);
    jw_raw(c->w, json, strlen(json));
    free(json);
}

static void m_all_diagnostics(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "diagnostics");
    jw_object_begin(w);
    all_ctx c = {a->svc, w, ecp_call_encoding(call)};
    lsp_diagnostics_each(a->svc, all_item, &c);
    jw_object_end(w);
    ecp_call_finish_object(call, w);
}

static void m_diagnostics_summary(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    size_t errors, warnings;
    lsp_diagnostics_summary(a->svc, &errors, &warnings);
    json_writer *w = ecp_call_result_object(call);
    jw_key_int(w, "errors", (int64_t)errors);
    jw_key_int(w, "warnings", (int64_t)warnings);
    ecp_call_finish_object(call, w);
}

/* ----- configuration ------------------------------------------------------------------------ */

static char *raw_copy(const json_doc *d, json_ref ref)
{
    if (ref == JSON_NO_REF || json_type_of(d, ref) == JSON_NULL)
        return NULL;
    buf out;
    buf_init(&out);
    json_writer w;
    jw_init(&w, &out);
    json_write_value(&w, d, ref);
    return buf_detach(&out);
}

static void m_set_server_config(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    json_ref p = ecp_call_params(call), config, args = JSON_NO_REF, env = JSON_NO_REF;
    ecp_str language, command;
    if (!ecp_arg_string(call, p, "languageId", &language) || !ecp_arg_object(call, p, "config", &config) ||
        !ecp_arg_string(call, config, "config.command", &command) ||
        !ecp_arg_array_opt(call, config, "config.args", &args) || !ecp_arg_object_opt(call, config, "config.env", &env))
        return;
    const json_doc *d = ecp_call_doc(call);
    arena *ar = ecp_call_arena(call);
    size_t nargs = json_length(d, args), nenv = json_length(d, env);
    const char **argv = arena_alloc(ar, (nargs + 1) * sizeof *argv);
    const char **envv = arena_alloc(ar, (nenv + 1) * sizeof *envv);
    size_t i = 0;
    for (json_ref e = json_first(d, args); e != JSON_NO_REF; e = json_next(d, e)) {
        size_t len;
        if (!json_string(d, e, ar, &argv[i++], &len)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.args: must be an array of strings");
            return;
        }
    }
    argv[i] = NULL;
    i = 0;
    for (json_ref k = json_first(d, env); k != JSON_NO_REF; k = json_next(d, k)) {
        const char *name, *value;
        size_t nlen, vlen;
        if (!json_string(d, k, ar, &name, &nlen) || !json_string(d, k + 1, ar, &value, &vlen)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.env: must map names to strings");
            return;
        }
        char *pair = arena_alloc(ar, nlen + vlen + 2);
        memcpy(pair, name, nlen);
        pair[nlen] = '=';
        memcpy(pair + nlen + 1, value, vlen + 1);
        envv[i++] = pair;
    }
    envv[i] = NULL;
    size_t timeout_ms;
    if (!ecp_arg_index_opt(call, config, "config.requestTimeoutMs", 0, &timeout_ms))
        return;
    if (timeout_ms > 3600000) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.requestTimeoutMs: at most 3600000");
        return;
    }
    char *init = raw_copy(d, json_get(d, config, "initializationOptions"));
    char *settings = raw_copy(d, json_get(d, config, "settings"));
    lsp_server_config c = {
        .command = command.ptr, .args = argv, .initialization_options = init, .settings = settings,
        .env = nenv ? envv : NULL, .timeout_ms = (unsigned)timeout_ms,
    };
    ecp_error err = {0};
    int rc = lsp_config_set(a->svc, language.ptr, &c, &err);
    free(init);
    free(settings);
    if (rc)
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s", err.message);
    else
        ecp_call_reply_success(call, true);
}

static void m_get_server_config(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str language;
    if (!ecp_arg_string(call, ecp_call_params(call), "languageId", &language))
        return;
    lsp_server_config c;
    bool found = lsp_config_get(a->svc, language.ptr, &c);
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "config");
    if (!found) {
        jw_null(w);
    } else {
        jw_object_begin(w);
        jw_key_string(w, "command", c.command);
        jw_key(w, "args");
        jw_array_begin(w);
        for (size_t i = 0; c.args && c.args[i]; i++)
            jw_string(w, c.args[i]);
        jw_array_end(w);
        if (c.initialization_options) {
            jw_key(w, "initializationOptions");
            jw_raw(w, c.initialization_options, strlen(c.initialization_options));
        }
        if (c.settings) {
            jw_key(w, "settings");
            jw_raw(w, c.settings, strlen(c.settings));
        }
        if (c.timeout_ms)
            jw_key_int(w, "requestTimeoutMs", c.timeout_ms);
        if (c.env) {
            jw_key(w, "env");
            jw_object_begin(w);
            for (size_t i = 0; c.env[i]; i++) {
                const char *eq = strchr(c.env[i], '=');
                jw_key_n(w, c.env[i], eq ? (size_t)(eq - c.env[i]) : strlen(c.env[i]));
                jw_string(w, eq ? eq + 1 : "");
            }
            jw_object_end(w);
        }
        jw_object_end(w);
    }
    ecp_call_finish_object(call, w);
}

static void m_get_language_id(void *ctx, ecp_call *call)
{
    (void)ctx;
    ecp_str path;
    if (!ecp_arg_string(call, ecp_call_params(call), "filePath", &path))
        return;
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "languageId");
    jw_string(w, lsp_language_of(path.ptr));
    ecp_call_finish_object(call, w);
}

static void m_has_server_for(void *ctx, ecp_call *call)
{
    lsp_adapter *a = ctx;
    ecp_str language;
    if (!ecp_arg_string(call, ecp_call_params(call), "languageId", &language))
        return;
    lsp_server_config c;
    json_writer *w = ecp_call_result_object(call);
    jw_key_bool(w, "available", lsp_config_get(a->svc, language.ptr, &c));
    ecp_call_finish_object(call, w);
}

/* ----- notifications ------------------------------------------------------------------------- */

/* A server's window/showMessage: its language and LSP's params (JSON text). */
typedef struct message_event {
    const char *language_id, *params;
} message_event;

typedef struct diagnostics_event {
    lsp_service *svc;
    const char *uri;
} diagnostics_event;

static void render_diagnostics(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    diagnostics_event *e = ctx;
    char *json = lsp_diagnostics_get(e->svc, e->uri, enc);
    jw_object_begin(w);
    jw_key_string(w, "uri", e->uri);
    jw_key(w, "diagnostics");
    jw_raw(w, json, strlen(json));
    jw_object_end(w);
    free(json);
}

static void publish_stale(void *ctx)
{
    lsp_adapter *a = ctx;
    a->awaiting_drain = false;
    while (a->stale_first < a->stale_count) {
        if (ecp_bus_backed_up(a->bus, "lsp/didPublishDiagnostics")) {
            a->awaiting_drain = true;
            ecp_bus_when_drained(a->bus, "lsp/didPublishDiagnostics", publish_stale, a);
            break;
        }
        char *uri = a->stale[a->stale_first++];
        ecp_map_remove(a->stale_at, uri, NULL);
        diagnostics_event e = {a->svc, uri};
        ecp_bus_notify(a->bus, "lsp/didPublishDiagnostics", render_diagnostics, &e);
        free(uri);
    }
    if (a->stale_first == a->stale_count) {
        a->stale_first = a->stale_count = 0;
    } else if (a->stale_first > a->stale_count / 2) {
        size_t left = a->stale_count - a->stale_first;
        memmove(a->stale, a->stale + a->stale_first, left * sizeof *a->stale);
        a->stale_first = 0;
        a->stale_count = left;
    }
}

/* The notification renders the document's diagnostics as they are when it
 * is sent, so one held back stands for every set published meanwhile. */
static void on_diagnostics(void *ctx, const char *uri)
{
    lsp_adapter *a = ctx;
    if (a->stale_first == a->stale_count && !ecp_bus_backed_up(a->bus, "lsp/didPublishDiagnostics")) {
        diagnostics_event e = {a->svc, uri};
        ecp_bus_notify(a->bus, "lsp/didPublishDiagnostics", render_diagnostics, &e);
        return;
    }
    if (!a->stale_at)
        a->stale_at = ecp_map_new();
    if (ecp_map_get(a->stale_at, uri))
        return;
    if (a->stale_count == a->stale_cap) {
        a->stale_cap = a->stale_cap ? a->stale_cap * 2 : 16;
        a->stale = xrealloc(a->stale, a->stale_cap * sizeof *a->stale);
    }
    char *copy = xstrdup(uri);
    a->stale[a->stale_count++] = copy;
    ecp_map_set(a->stale_at, copy, copy, NULL);
    if (!a->awaiting_drain) {
        a->awaiting_drain = true;
        ecp_bus_when_drained(a->bus, "lsp/didPublishDiagnostics", publish_stale, a);
    }
}

static void render_status(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    write_server(w, ctx);
}

static void on_status(void *ctx, const lsp_server_info *info)
{
    lsp_adapter *a = ctx;
    ecp_bus_notify(a->bus, "lsp/serverStatusChanged", render_status, (void *)info);
}

/* {languageId, ...the members of LSP's params} */
static void render_message(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    const message_event *m = ctx;
    json_doc d = {0};
    jw_object_begin(w);
    jw_key_string(w, "languageId", m->language_id);
    if (json_doc_parse(&d, m->params, strlen(m->params), NULL) == 0)
        for (json_ref k = json_first(&d, json_root(&d)); k != JSON_NO_REF; k = json_next(&d, k)) {
            size_t len;
            const char *raw = json_raw(&d, k, &len);
            if (len >= 2 && !json_string_eq(&d, k, "languageId")) {
                jw_raw(w, raw, len); /* the key, quotes included: a valid JSON string */
                buf_append(w->out, ":", 1);
                w->need_comma = false;
                json_write_value(w, &d, k + 1);
            }
        }
    json_doc_free(&d);
    jw_object_end(w);
}

static void on_message(void *ctx, const char *language_id, const char *params)
{
    lsp_adapter *a = ctx;
    message_event m = {language_id, params};
    ecp_bus_notify(a->bus, "lsp/didShowMessage", render_message, &m);
}

/* token and value are JSON texts, passed on as the server sent them */
static void on_progress(void *ctx, const char *language_id, const char *token, const char *value)
{
    lsp_adapter *a = ctx;
    ecp_bus_notify(a->bus, "lsp/progress", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("languageId", language_id), ECP_JSON_FIELD("token", token),
                              ECP_JSON_FIELD("value", value)));
}

/* A server that cannot be found: its status for clients that show servers, and words for the user. */
static void on_unavailable(void *ctx, const char *language_id, const char *command, const char *reason)
{
    lsp_adapter *a = ctx;
    ecp_bus_notify(a->bus, "lsp/serverStatusChanged", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("languageId", language_id), ECP_STRING_FIELD("status", "unavailable"),
                              ECP_STRING_FIELD("reason", reason)));
    buf message = BUF_INIT;
    buf_appendf(&message, "No %s language server: %s was not found. Install it, or name another with lsp/setServerConfig.",
                language_id, command);
    ecp_bus_notify(a->bus, "$/showMessage", ecp_render_fields,
                   ECP_FIELDS(ECP_INT_FIELD("type", 2), /* warning, as LSP's MessageType */
                              ECP_STRING_FIELD("message", message.data)));
    buf_free(&message);
}

static const lsp_listener adapter_listener = {
    .on_diagnostics = on_diagnostics, .on_status = on_status, .on_message = on_message, .on_progress = on_progress,
    .on_unavailable = on_unavailable,
};

/* ----- the table ------------------------------------------------------------------------------ */

#define POS "{uri: string, position: {line: integer, character?: integer, column?: integer}}"

static const ecp_method methods[] = {
    {"lsp/start", m_start, "1.0", "Start the language server of a language and wait until it is ready",
     "{languageId: string, workspaceUri?: string}"},
    {"lsp/stop", m_stop, "1.0", "Stop a language server (shutdown, exit)", "{languageId: string}"},
    {"lsp/status", m_status, "1.0", "The state of one language server, or of every running or failed one",
     "{languageId?: string}"},
    {"lsp/documentOpen", m_document_open, "1.0", "Open a document the client holds on its language's server",
     "{uri: string, languageId: string, content: string}"},
    {"lsp/documentChange", m_document_change, "1.0", "Replace the text of a document the client holds",
     "{uri: string, content: string, version?: integer}"},
    {"lsp/documentSave", m_document_save, "1.0", "Tell the server a document was saved",
     "{uri: string, content?: string}"},
    {"lsp/documentClose", m_document_close, "1.0", "Close a document on its server and drop its diagnostics",
     "{uri: string}"},
    {"lsp/completion", m_completion, "1.0", "Completion items at a position", POS},
    {"lsp/hover", m_hover, "1.0", "Hover information at a position, or null", POS},
    {"lsp/signatureHelp", m_signature_help, "1.0", "Signature help at a position, or null", POS},
    {"lsp/definition", m_definition, "1.0", "Where the symbol at a position is defined", POS},
    {"lsp/references", m_references, "1.0", "Every reference to the symbol at a position",
     "{uri: string, position: {line: integer, character?: integer, column?: integer}, includeDeclaration?: boolean}"},
    {"lsp/documentSymbol", m_document_symbol, "1.0", "The symbols of a document", "{uri: string}"},
    {"lsp/rename", m_rename, "1.0", "The workspace edit that renames the symbol at a position",
     "{uri: string, position: {line: integer, character?: integer, column?: integer}, newName: string}"},
    {"lsp/diagnostics", m_diagnostics, "1.0", "The last diagnostics published for a document", "{uri: string}"},
    {"lsp/allDiagnostics", m_all_diagnostics, "1.0", "The last diagnostics of every document", "{}"},
    {"lsp/diagnosticsSummary", m_diagnostics_summary, "1.0", "How many errors and warnings are published", "{}"},
    {"lsp/setServerConfig", m_set_server_config, "1.0", "Set the command and options of a language's server",
     "{languageId: string, config: {command: string, args?: string[], initializationOptions?: any, "
     "settings?: any, env?: {[name]: string}, requestTimeoutMs?: integer >= 0}}"},
    {"lsp/getServerConfig", m_get_server_config, "1.0", "The configuration of a language's server, or null",
     "{languageId: string}"},
    {"lsp/getLanguageId", m_get_language_id, "1.0", "The language of a path by its extension, or null",
     "{filePath: string}"},
    {"lsp/hasServerFor", m_has_server_for, "1.0", "Whether a language has a server configured",
     "{languageId: string}"},
    {"lsp/format", m_format, "1.0", "The edits that format a whole document",
     "{uri: string, options?: {tabSize?: integer, insertSpaces?: boolean}}"},
    {"lsp/codeAction", m_code_action, "1.0", "The code actions for a range",
     "{uri: string, range: object, context?: object}"},
    {"lsp/executeCommand", m_execute_command, "1.0",
     "Run a command a code action names, in the server of a document; its edits come as workspace/applyEdit",
     "{uri: string, command: string, arguments?: any[]}"},
};

static const char *const notifications[] = {
    "lsp/didPublishDiagnostics", "lsp/serverStatusChanged", "lsp/didShowMessage", "lsp/progress", NULL,
};

static void adapter_destroy(void *ctx)
{
    lsp_adapter *a = ctx;
    lsp_unsubscribe(a->svc, &adapter_listener, a);
    if (a->awaiting_drain)
        ecp_bus_cancel_when_drained(a->bus, publish_stale, a);
    for (size_t i = a->stale_first; i < a->stale_count; i++)
        free(a->stale[i]);
    free(a->stale);
    ecp_map_free(a->stale_at);
    free(a);
}

void lsp_adapter_init(ecp_adapter *out, lsp_service *svc, ecp_bus *bus)
{
    lsp_adapter *a = xmalloc(sizeof *a);
    *a = (lsp_adapter){.svc = svc, .bus = bus};
    lsp_subscribe(svc, &adapter_listener, a);
    *out = (ecp_adapter){
        .ns = "lsp", .methods = methods, .method_count = COUNT(methods), .ctx = a,
        .destroy = adapter_destroy, .notifications = notifications,
    };
}
