/* adapter: the chat methods on the wire, in the ECA protocol's shapes. */
#include "adapter.h"

#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "interface.h"
#include "job.h"

typedef struct adapter_ctx {
    agent_service *svc;
    ecp_bus *bus;
    bool holding; /* the streams wait for a client that is backed up */
} adapter_ctx;

static const ecp_wire_map wire_codes[] = {
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
    {ECP_ENOTFOUND, ECP_WIRE_INVALID_PARAMS},
    {ECP_ESTATE, ECP_WIRE_SERVER_ERROR},
    {ECP_ENOTSUP, ECP_WIRE_INTERNAL_ERROR},
    {ECP_EACCES, ECP_WIRE_SERVER_ERROR},
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

static void reply_error(ecp_call *call, const ecp_error *err)
{
    ecp_call_reply_status(call, wire_codes, ECP_WIRE_MAP_COUNT(wire_codes), err->status, err, NULL);
}

/* ----- notifications --------------------------------------------------------------------- */

static const char *const content_types[] = {
    [AGENT_CONTENT_TEXT] = "text",
    [AGENT_CONTENT_PROGRESS] = "progress",
    [AGENT_CONTENT_USAGE] = "usage",
    [AGENT_CONTENT_TOOL_PREPARE] = "toolCallPrepare",
    [AGENT_CONTENT_TOOL_RUN] = "toolCallRun",
    [AGENT_CONTENT_TOOL_RUNNING] = "toolCallRunning",
    [AGENT_CONTENT_TOOL_CALLED] = "toolCalled",
    [AGENT_CONTENT_TOOL_REJECTED] = "toolCallRejected",
    [AGENT_CONTENT_REASON_STARTED] = "reasonStarted",
    [AGENT_CONTENT_REASON_TEXT] = "reasonText",
    [AGENT_CONTENT_REASON_FINISHED] = "reasonFinished",
};

static void render_content(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    const agent_content *c = ctx;
    jw_object_begin(w);
    jw_key_string(w, "chatId", c->chat_id);
    jw_key_string(w, "role", c->role);
    jw_key(w, "content");
    jw_object_begin(w);
    jw_key_string(w, "type", content_types[c->type]);
    switch (c->type) {
    case AGENT_CONTENT_TEXT:
        jw_key_string_n(w, "text", c->text, c->text_len);
        break;
    case AGENT_CONTENT_PROGRESS:
        jw_key_string(w, "state", c->finished ? "finished" : "running");
        if (c->text)
            jw_key_string_n(w, "text", c->text, c->text_len);
        break;
    case AGENT_CONTENT_USAGE:
        jw_key_int(w, "sessionTokens", c->session_tokens);
        break;
    case AGENT_CONTENT_REASON_STARTED:
    case AGENT_CONTENT_REASON_TEXT:
    case AGENT_CONTENT_REASON_FINISHED:
        jw_key_string(w, "id", c->tool_id);
        if (c->type == AGENT_CONTENT_REASON_TEXT)
            jw_key_string_n(w, "text", c->text, c->text_len);
        if (c->type == AGENT_CONTENT_REASON_FINISHED)
            jw_key_double(w, "totalTimeMs", c->total_ms);
        break;
    default:
        jw_key_string(w, "origin", "native");
        jw_key_string(w, "id", c->tool_id);
        jw_key_string(w, "name", c->tool_name);
        jw_key_string(w, "server", "ecpd");
        if (c->type == AGENT_CONTENT_TOOL_PREPARE) {
            jw_key_string_n(w, "argumentsText", c->text, c->text_len);
            break;
        }
        jw_key(w, "arguments");
        jw_raw(w, c->arguments, strlen(c->arguments));
        if (c->type == AGENT_CONTENT_TOOL_RUN)
            jw_key_bool(w, "manualApproval", c->manual_approval);
        if (c->type == AGENT_CONTENT_TOOL_CALLED) {
            jw_key_bool(w, "error", c->error);
            jw_key(w, "outputs");
            jw_array_begin(w);
            jw_object_begin(w);
            jw_key_string(w, "type", "text");
            jw_key_string_n(w, "text", c->text, c->text_len);
            jw_object_end(w);
            jw_array_end(w);
            jw_key_double(w, "totalTimeMs", c->total_ms);
        }
        if (c->type == AGENT_CONTENT_TOOL_REJECTED)
            jw_key_string(w, "reason", c->reason);
        break;
    }
    jw_object_end(w);
    jw_object_end(w);
}

/* Flow control. A model may stream faster than a client reads; what piles
 * up for a slow client would grow without bound (the only client of a stdio
 * server is never dropped for it). So while a connection that receives the
 * content is backed up, the chats stop reading their models' answers, which
 * wait at the providers, and go on once it has drained. */
static void on_drained(void *ctx)
{
    adapter_ctx *a = ctx;
    if (!a->holding)
        return;
    if (ecp_bus_backed_up(a->bus, "chat/contentReceived")) {
        ecp_bus_when_drained(a->bus, "chat/contentReceived", on_drained, a);
        return;
    }
    a->holding = false;
    agent_pause_streams(a->svc, false);
}

static void on_content(void *ctx, const agent_content *content)
{
    adapter_ctx *a = ctx;
    if (content->type == AGENT_CONTENT_PLAN)
        return; /* ECA has no plan content: its client sees the update_plan call and its arguments */
    ecp_bus_notify(a->bus, "chat/contentReceived", render_content, (void *)content);
    if (!ecp_bus_backed_up(a->bus, "chat/contentReceived"))
        return;
    if (!a->holding) {
        a->holding = true;
        agent_pause_streams(a->svc, true);
    }
    ecp_bus_when_drained(a->bus, "chat/contentReceived", on_drained, a);
}

static void on_status(void *ctx, const char *chat_id, const char *status)
{
    adapter_ctx *a = ctx;
    ecp_bus_notify(a->bus, "chat/statusChanged", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("chatId", chat_id), ECP_STRING_FIELD_OPT("status", status)));
}

static void on_deleted(void *ctx, const char *chat_id)
{
    adapter_ctx *a = ctx;
    ecp_bus_notify(a->bus, "chat/deleted", ecp_render_fields, ECP_FIELDS(ECP_STRING_FIELD("chatId", chat_id)));
}

static const agent_listener listener = {on_content, on_status, on_deleted, NULL};

/* ----- methods ---------------------------------------------------------------------------- */

/* The answer goes out before the turn's first content. */
static void prompt_accepted(void *ctx, int status, const ecp_error *err, const char *chat_id, const char *model)
{
    ecp_call *call = ctx;
    if (status < 0) {
        reply_error(call, err);
        return;
    }
    json_writer *w = ecp_call_result_object(call);
    jw_key_string(w, "chatId", chat_id);
    jw_key_string(w, "model", model);
    jw_key_string(w, "status", "prompting");
    ecp_call_finish_object(call, w);
}

static void m_prompt(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str chat_id, message, model;
    if (!ecp_arg_string_opt(call, p, "chatId", &chat_id) || !ecp_arg_string(call, p, "message", &message) ||
        !ecp_arg_string_opt(call, p, "model", &model))
        return;
    ecp_error err = {0};
    ecp_call_defer(call); /* the secret store may have to be asked first */
    if (agent_prompt(a->svc, chat_id.ptr, message.ptr, model.ptr, prompt_accepted, call, &err) < 0)
        reply_error(call, &err);
}

static void tool_answer(void *ctx, ecp_call *call, bool approve)
{
    adapter_ctx *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str chat_id, tool_call_id;
    if (!ecp_arg_string(call, p, "chatId", &chat_id) || !ecp_arg_string(call, p, "toolCallId", &tool_call_id))
        return;
    ecp_error err = {0};
    if (agent_tool_answer(a->svc, chat_id.ptr, tool_call_id.ptr, approve, &err) < 0)
        reply_error(call, &err);
    else
        ecp_call_reply_empty(call);
}

static void m_approve(void *ctx, ecp_call *call) { tool_answer(ctx, call, true); }
static void m_reject(void *ctx, ecp_call *call) { tool_answer(ctx, call, false); }

/* stop, delete and mcp/stop: one name in, {} or the failure out. */
typedef int (*named_op_fn)(agent_service *svc, const char *name, ecp_error *err);

static void named_op(adapter_ctx *a, ecp_call *call, const char *param, named_op_fn op)
{
    ecp_str name;
    if (!ecp_arg_string(call, ecp_call_params(call), param, &name))
        return;
    ecp_error err = {0};
    if (op(a->svc, name.ptr, &err) < 0)
        reply_error(call, &err);
    else
        ecp_call_reply_empty(call);
}

static void m_stop(void *ctx, ecp_call *call) { named_op(ctx, call, "chatId", agent_prompt_stop); }
/* ECA defines no error here: deleting a chat that is gone (or never was, or
 * none named) leaves what the client wants, so it is answered {} as well. */
static void m_delete(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    ecp_str id;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "chatId", &id))
        return;
    ecp_error err = {0};
    if (id.ptr && agent_chat_delete(a->svc, id.ptr, &err) < 0 && err.status != ECP_ENOTFOUND)
        reply_error(call, &err);
    else
        ecp_call_reply_empty(call);
}

typedef struct list_ctx {
    json_writer *w;
    int64_t left;
} list_ctx;

static void write_chat(void *ctx, const agent_chat_info *info)
{
    list_ctx *l = ctx;
    if (l->left-- <= 0)
        return;
    ecp_write_fields(l->w, ECP_FIELDS(ECP_STRING_FIELD("id", info->id), ECP_STRING_FIELD_OPT("title", info->title),
                                      ECP_STRING_FIELD("status", info->status),
                                      ECP_INT_FIELD("createdAt", info->created_at),
                                      ECP_INT_FIELD("updatedAt", info->updated_at),
                                      ECP_STRING_FIELD_OPT("model", info->model),
                                      ECP_INT_FIELD("messageCount", info->message_count)));
}

static void m_list(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    json_ref p = ecp_call_params(call);
    int64_t limit;
    if (!ecp_arg_int_opt(call, p, "limit", INT64_MAX, &limit))
        return;
    json_writer *w = ecp_call_result_list(call, "chats");
    list_ctx l = {w, limit};
    agent_chat_list(a->svc, write_chat, &l);
    ecp_call_finish_list(call, w);
}

static void write_message(void *ctx, const agent_message_info *m)
{
    json_writer *w = ctx;
    jw_object_begin(w);
    jw_key_string(w, "role", m->role);
    if (m->text)
        jw_key_string(w, "text", m->text);
    if (m->call_count) {
        jw_key(w, "toolCalls");
        jw_array_begin(w);
        for (size_t i = 0; i < m->call_count; i++) {
            jw_object_begin(w);
            jw_key_string(w, "id", m->call_ids[i]);
            jw_key_string(w, "name", m->call_names[i]);
            jw_key(w, "arguments");
            jw_raw(w, m->call_arguments[i], strlen(m->call_arguments[i]));
            jw_object_end(w);
        }
        jw_array_end(w);
    }
    if (m->tool_call_id) {
        jw_key_string(w, "toolCallId", m->tool_call_id);
        jw_key_string(w, "name", m->tool_name);
        jw_key_bool(w, "error", m->error);
    }
    jw_object_end(w);
}

static void m_open(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str chat_id;
    if (!ecp_arg_string(call, p, "chatId", &chat_id))
        return;
    agent_chat_info info;
    ecp_error err = {0};
    json_writer *w = ecp_call_result_object(call);
    /* the messages first, into the result, when the chat exists */
    agent_chat_info probe;
    bool found = agent_chat_open(a->svc, chat_id.ptr, &probe, NULL, NULL, &err) == 0;
    jw_key_bool(w, "found", found);
    if (found) {
        jw_key_string(w, "chatId", chat_id.ptr);
        jw_key(w, "messages");
        jw_array_begin(w);
        agent_chat_open(a->svc, chat_id.ptr, &info, write_message, w, NULL);
        jw_array_end(w);
        if (info.title)
            jw_key_string(w, "title", info.title);
        jw_key_string(w, "status", info.status);
        if (info.model) {
            jw_key(w, "selection");
            jw_object_begin(w);
            jw_key_string(w, "model", info.model);
            jw_object_end(w);
        }
    }
    ecp_call_finish_object(call, w);
}

static void context_found(void *ctx, int status, const ecp_error *err, const char *const *paths, size_t count)
{
    ecp_call *call = ctx;
    if (status < 0) {
        reply_error(call, err);
        return;
    }
    json_writer *w = ecp_call_result_object(call);
    json_ref chat_id = json_get(ecp_call_doc(call), ecp_call_params(call), "chatId");
    if (chat_id != JSON_NO_REF && json_type_of(ecp_call_doc(call), chat_id) == JSON_STRING) {
        jw_key(w, "chatId");
        json_write_value(w, ecp_call_doc(call), chat_id);
    }
    jw_key(w, "contexts");
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "type", "file");
        jw_key_string(w, "path", paths[i]);
        jw_object_end(w);
    }
    jw_array_end(w);
    ecp_call_finish_object(call, w);
}

static void m_query_context(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str chat_id, query;
    if (!ecp_arg_string_opt(call, p, "chatId", &chat_id) || !ecp_arg_string(call, p, "query", &query))
        return;
    ecp_error err = {0};
    ecp_job *walk = NULL;
    if (agent_query_files(a->svc, query.ptr, 50, context_found, call, &walk, &err) < 0) {
        reply_error(call, &err);
        return;
    }
    ecp_job_serve(walk, call); /* a cancel or a disconnect stops the walk; teardown answers */
    agent_query_start(walk);
}

static bool matches(const char *name, const char *query)
{
    if (query[0] == '/')
        query++;
    for (const char *h = name; *h; h++) {
        size_t i = 0;
        while (query[i] && h[i] && (h[i] | 0x20) == (query[i] | 0x20))
            i++;
        if (!query[i])
            return true;
    }
    return !query[0];
}

static void m_query_commands(void *ctx, ecp_call *call)
{
    (void)ctx;
    json_ref p = ecp_call_params(call);
    ecp_str chat_id, query;
    if (!ecp_arg_string_opt(call, p, "chatId", &chat_id) || !ecp_arg_string_opt(call, p, "query", &query))
        return;
    size_t n;
    const agent_command_info *commands = agent_commands(&n);
    json_writer *w = ecp_call_result_object(call);
    if (chat_id.ptr)
        jw_key_string(w, "chatId", chat_id.ptr);
    jw_key(w, "commands");
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++) {
        if (!matches(commands[i].name, query.ptr ? query.ptr : ""))
            continue;
        jw_object_begin(w);
        jw_key_string(w, "name", commands[i].name);
        jw_key_string(w, "description", commands[i].description);
        jw_key_string(w, "type", "native");
        jw_key(w, "arguments");
        jw_array_begin(w);
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    ecp_call_finish_object(call, w);
}

static const ecp_method methods[] = {
    {"chat/prompt", m_prompt, "1.0",
     "Start a turn: answers {chatId, model, status: \"prompting\"} at once, then streams chat/contentReceived",
     "{chatId?: string, message: string, model?: string}"},
    {"chat/toolCallApprove", m_approve, "1.0", "Approve the tool call that waits for approval",
     "{chatId: string, toolCallId: string}"},
    {"chat/toolCallReject", m_reject, "1.0", "Reject the tool call that waits for approval; the model is told",
     "{chatId: string, toolCallId: string}"},
    {"chat/promptStop", m_stop, "1.0",
     "Stop the chat's turn: the model's stream is closed and a pending approval withdrawn",
     "{chatId: string}"},
    {"chat/delete", m_delete, "1.0", "Delete a chat and its stored messages; {} also for a chat that does not exist",
     "{chatId?: string}"},
    {"chat/list", m_list, "1.0", "The chats, most recently updated first", "{limit?: integer}"},
    {"chat/open", m_open, "1.0", "A chat's title, model and stored messages", "{chatId: string}"},
    {"chat/queryCommands", m_query_commands, "1.0",
     "The commands a prompt may be (\"/name\"), run without the model; those whose name contains the query",
     "{chatId?: string, query?: string}"},
    {"chat/queryContext", m_query_context, "1.0",
     "Files of the workspace whose name matches the query (fuzzy), as contexts a prompt may name",
     "{chatId?: string, query: string}"},
};

static const char *const notifications[] = {"chat/contentReceived", "chat/statusChanged", "chat/deleted", NULL};

static void destroy(void *ctx)
{
    adapter_ctx *a = ctx;
    agent_unsubscribe(a->svc, &listener, a);
    ecp_bus_cancel_when_drained(a->bus, on_drained, a);
    free(a);
}

/* ----- the mcp methods ---------------------------------------------------------------------------------- */

/* A server as mcp/listServers shows it, into the writer w (untyped: agent_mcp_list calls it back so). */
static void write_server(void *w, const agent_mcp_info *info)
{
    jw_object_begin(w);
    jw_key_string(w, "type", "mcp");
    jw_key_string(w, "name", info->name);
    if (info->url) {
        jw_key_string(w, "url", info->url);
    } else {
        jw_key_string(w, "command", info->command);
        jw_key(w, "args");
        jw_array_begin(w);
        for (size_t i = 0; info->args[i]; i++)
            jw_string(w, info->args[i]);
        jw_array_end(w);
    }
    jw_key_string(w, "status", info->status);
    if (info->error)
        jw_key_string(w, "error", info->error);
    jw_key_bool(w, "disabled", false);
    jw_key_bool(w, "hasAuth", false);
    jw_key(w, "tools");
    jw_array_begin(w);
    for (size_t i = 0; i < info->tool_count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "name", info->tool_names[i]);
        jw_key_string(w, "description", info->tool_descriptions[i]);
        jw_key(w, "parameters");
        jw_raw(w, info->tool_schemas[i], strlen(info->tool_schemas[i]));
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

static void render_server(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    write_server(w, ctx);
}

static void render_failure(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    const agent_mcp_info *info = ctx;
    jw_object_begin(w);
    jw_key_string(w, "type", "error");
    buf message = BUF_INIT;
    buf_appendf(&message, "MCP server %s failed: %s", info->name, info->error);
    jw_key_string(w, "message", message.data);
    buf_free(&message);
    jw_object_end(w);
}

static void on_mcp(void *ctx, const agent_mcp_info *info)
{
    adapter_ctx *a = ctx;
    ecp_bus_notify(a->bus, "tool/serverUpdated", render_server, (void *)info);
    if (strcmp(info->status, "failed") == 0 && info->error)
        ecp_bus_notify(a->bus, "$/showMessage", render_failure, (void *)info);
}

static const agent_listener mcp_listener = {NULL, NULL, NULL, on_mcp};

typedef struct found_server {
    const char *name;
    json_writer *w;
    bool found;
} found_server;

static void write_if_named(void *ctx, const agent_mcp_info *info)
{
    found_server *f = ctx;
    if (!f->found && strcmp(info->name, f->name) == 0) {
        write_server(f->w, info);
        f->found = true;
    }
}

static void m_mcp_start(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    const json_doc *doc = ecp_call_doc(call);
    json_ref p = ecp_call_params(call), args, env, headers;
    ecp_str name, command, url;
    if (!ecp_arg_string(call, p, "name", &name) || !ecp_arg_string_opt(call, p, "command", &command) ||
        !ecp_arg_string_opt(call, p, "url", &url) || !ecp_arg_array_opt(call, p, "args", &args) ||
        !ecp_arg_object_opt(call, p, "env", &env) || !ecp_arg_object_opt(call, p, "headers", &headers))
        return;
    if (!command.ptr && !url.ptr) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "missing parameter command (stdio) or url (HTTP)");
        return;
    }
    size_t argc = args != JSON_NO_REF ? json_length(doc, args) : 0, envc = env != JSON_NO_REF ? json_length(doc, env) : 0;
    /* headers go through the same "NAME=value" list, then become "Name: value" */
    json_ref pairs = url.ptr ? headers : env;
    if (url.ptr)
        envc = headers != JSON_NO_REF ? json_length(doc, headers) : 0;
    const char **argv = xcalloc(argc + 1, sizeof *argv), **envv = xcalloc(envc + 1, sizeof *envv);
    size_t k = 0;
    bool ok = true;
    for (json_ref e = args != JSON_NO_REF ? json_first(doc, args) : JSON_NO_REF; e != JSON_NO_REF && ok;
         e = json_next(doc, e))
        ok = json_string(doc, e, ecp_call_arena(call), &argv[k++], NULL);
    buf env_text = BUF_INIT; /* NAME=value strings, NUL-separated */
    size_t *offsets = xcalloc(envc + 1, sizeof *offsets);
    k = 0;
    for (json_ref key = pairs != JSON_NO_REF ? json_first(doc, pairs) : JSON_NO_REF; key != JSON_NO_REF && ok;
         key = json_next(doc, key)) {
        const char *n, *v;
        ok = json_string(doc, key, ecp_call_arena(call), &n, NULL) &&
             json_string(doc, key + 1, ecp_call_arena(call), &v, NULL);
        if (ok) {
            offsets[k++] = env_text.len;
            buf_appendf(&env_text, url.ptr ? "%s: %s" : "%s=%s", n, v);
            buf_push(&env_text, '\0');
        }
    }
    for (size_t i = 0; ok && i < k; i++)
        envv[i] = env_text.data + offsets[i];
    ecp_error err = {0};
    if (!ok) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "args must be strings, env and headers objects of strings");
    } else if (agent_mcp_start(a->svc,
                               url.ptr ? &(agent_mcp_config){.name = name.ptr, .url = url.ptr, .headers = envv,
                                                             .header_count = k}
                                       : &(agent_mcp_config){.name = name.ptr, .command = command.ptr, .args = argv,
                                                             .arg_count = argc, .env = envv, .env_count = k},
                               &err) < 0) {
        reply_error(call, &err);
    } else {
        json_writer *w = ecp_call_result_object(call);
        jw_key(w, "server");
        found_server f = {name.ptr, w, false};
        agent_mcp_list(a->svc, write_if_named, &f);
        if (!f.found)
            jw_null(w);
        ecp_call_finish_object(call, w);
    }
    free_each(argv, envv, offsets);
    buf_free(&env_text);
}

static void m_mcp_stop(void *ctx, ecp_call *call) { named_op(ctx, call, "name", agent_mcp_stop); }

static void m_mcp_list(void *ctx, ecp_call *call)
{
    adapter_ctx *a = ctx;
    json_writer *w = ecp_call_result_list(call, "servers");
    agent_mcp_list(a->svc, write_server, w);
    ecp_call_finish_list(call, w);
}

static const ecp_method mcp_methods[] = {
    {"mcp/startServer", m_mcp_start, "1.0",
     "Start an MCP server (stdio: a command; or streamable HTTP: a url) whose tools the model is then offered as "
     "mcp__<name>__<tool>; replaces a server of the same name. Its progress comes as tool/serverUpdated",
     "{name: string, command?: string, url?: string, args?: string[], env?: {[name: string]: string}, "
     "headers?: {[name: string]: string}}"},
    {"mcp/stopServer", m_mcp_stop, "1.0", "Stop an MCP server and withdraw its tools", "{name: string}"},
    {"mcp/listServers", m_mcp_list, "1.0", "The MCP servers, their state and their tools", "{}"},
};

static const char *const mcp_notifications[] = {"tool/serverUpdated", "$/showMessage", NULL};

static void mcp_destroy(void *ctx)
{
    adapter_ctx *a = ctx;
    agent_unsubscribe(a->svc, &mcp_listener, a);
    free(a);
}

/* A namespace's context, which follows the service through l until its destroy. */
static adapter_ctx *adapter_new(agent_service *svc, ecp_bus *bus, const agent_listener *l)
{
    adapter_ctx *a = xmalloc(sizeof *a);
    *a = (adapter_ctx){.svc = svc, .bus = bus};
    agent_subscribe(svc, l, a);
    return a;
}

void agent_mcp_adapter_init(ecp_adapter *out, agent_service *svc, ecp_bus *bus)
{
    *out = (ecp_adapter){
        .ns = "mcp", .methods = mcp_methods, .method_count = sizeof mcp_methods / sizeof mcp_methods[0],
        .ctx = adapter_new(svc, bus, &mcp_listener), .destroy = mcp_destroy, .notifications = mcp_notifications,
    };
}

void agent_adapter_init(ecp_adapter *out, agent_service *svc, ecp_bus *bus)
{
    *out = (ecp_adapter){
        .ns = "chat", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
        .ctx = adapter_new(svc, bus, &listener), .destroy = destroy, .notifications = notifications,
    };
}
