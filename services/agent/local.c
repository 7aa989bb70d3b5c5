/* agent: chats, the turn loop, the providers' configuration and the store. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "shared.h"
#include "file/interface.h"
#include "session/interface.h"
#include "store/interface.h"

#define DEFAULT_MAX_TURNS 25
#define TITLE_MAX 80

static const char system_prompt[] =
    "You are a coding assistant inside an editor. Use the tools to read and change the files of the workspace; "
    "paths are relative to the workspace root.";

struct chat {
    agent_service *svc;
    chat *next;
    char *id, *title, *model;
    int64_t created_at, updated_at;
    agent_message *messages;
    size_t count;
    bool running;
    /* the turn in progress */
    llm_endpoint endpoint; /* owned strings */
    char *model_name;      /* without the provider */
    int turns;
    int max_turns;
    llm_request *request;
    size_t prepared;        /* tool calls of the streaming answer announced so far */
    char reasoning_id[32];  /* of the reasoning streaming now; empty when none */
    uint64_t reasoning_started;
    unsigned reasoning_count;
    size_t calls_from;      /* index of the assistant message whose calls run */
    size_t next_call;       /* its next call to handle */
    bool awaiting_approval;
    bool awaiting_tools;    /* the first request waits for the setting's MCP servers to start */
    tool_plan plan;         /* of the call awaiting approval or running */
    tool_run *run;
    bool hosted;            /* the running call is the tool host's */
    mcp_call *mcp;          /* the running call is an MCP server's */
    uint64_t call_started;  /* uv_hrtime() */
    long session_tokens;
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void message_free(agent_message *m)
{
    if (m->text_owner)
        ecp_shared_unref(m->text_owner);
    else
        free(m->text);
    for (size_t i = 0; i < m->call_count; i++) {
        free_each(m->calls[i].id, m->calls[i].name, m->calls[i].arguments);
    }
    free_each(m->calls, m->tool_call_id, m->tool_name);
}

static void endpoint_free(llm_endpoint *e)
{
    free((char *)e->url);
    free((char *)e->api_key);
    memset(e, 0, sizeof *e);
}

static void chat_free(chat *c)
{
    for (size_t i = 0; i < c->count; i++)
        message_free(&c->messages[i]);
    free(c->messages);
    endpoint_free(&c->endpoint);
    tool_plan_free(&c->plan);
    free_each(c->model_name, c->id, c->title, c->model, c);
}

static chat *find_chat(agent_service *svc, const char *id) { return ecp_map_get(svc->chat_ids, id); }

/* ----- the store ------------------------------------------------------------------------ */

static void write_message_json(buf *out, const agent_message *m)
{
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_string(&w, "role", m->role == ROLE_USER ? "user" : m->role == ROLE_ASSISTANT ? "assistant" : "tool");
    if (m->text)
        jw_key_string(&w, "text", m->text);
    if (m->role == ROLE_ASSISTANT && m->call_count) {
        jw_key(&w, "toolCalls");
        jw_array_begin(&w);
        for (size_t i = 0; i < m->call_count; i++) {
            jw_object_begin(&w);
            jw_key_string(&w, "id", m->calls[i].id);
            jw_key_string(&w, "name", m->calls[i].name);
            jw_key_string(&w, "arguments", m->calls[i].arguments);
            jw_object_end(&w);
        }
        jw_array_end(&w);
    }
    if (m->role == ROLE_TOOL) {
        jw_key_string(&w, "toolCallId", m->tool_call_id);
        jw_key_string(&w, "name", m->tool_name);
        jw_key_bool(&w, "error", m->error);
    }
    jw_object_end(&w);
}

static char *str_field(const json_doc *d, json_ref obj, const char *key)
{
    arena a = ARENA_INIT;
    const char *s = NULL;
    size_t n = 0;
    json_ref v = json_get(d, obj, key);
    char *out = NULL;
    if (v != JSON_NO_REF && json_type_of(d, v) == JSON_STRING && json_string(d, v, &a, &s, &n))
        out = xstrndup(s, n);
    arena_free(&a);
    return out;
}

static bool read_message_json(const char *text, agent_message *m)
{
    memset(m, 0, sizeof *m);
    json_doc d = {0};
    if (json_doc_parse(&d, text, strlen(text), NULL) < 0)
        return false;
    json_ref root = json_root(&d);
    char *role = str_field(&d, root, "role");
    bool ok = role != NULL;
    if (ok) {
        m->role = strcmp(role, "user") == 0 ? ROLE_USER : strcmp(role, "assistant") == 0 ? ROLE_ASSISTANT : ROLE_TOOL;
        m->text = str_field(&d, root, "text");
        json_ref calls = json_get(&d, root, "toolCalls");
        m->call_count = json_length(&d, calls);
        m->calls = m->call_count ? xcalloc(m->call_count, sizeof *m->calls) : NULL;
        size_t i = 0;
        for (json_ref c = json_first(&d, calls); c != JSON_NO_REF && i < m->call_count; c = json_next(&d, c), i++) {
            m->calls[i].id = str_field(&d, c, "id");
            m->calls[i].name = str_field(&d, c, "name");
            m->calls[i].arguments = str_field(&d, c, "arguments");
            if (!m->calls[i].id)
                m->calls[i].id = xstrdup("");
            if (!m->calls[i].name)
                m->calls[i].name = xstrdup("");
            if (!m->calls[i].arguments)
                m->calls[i].arguments = xstrdup("{}");
        }
        if (m->role == ROLE_TOOL) {
            m->tool_call_id = str_field(&d, root, "toolCallId");
            m->tool_name = str_field(&d, root, "name");
            bool e = false;
            json_bool(&d, json_get(&d, root, "error"), &e);
            m->error = e;
            if (!m->tool_call_id)
                m->tool_call_id = xstrdup("");
            if (!m->tool_name)
                m->tool_name = xstrdup("");
        }
    }
    free(role);
    json_doc_free(&d);
    return ok;
}

typedef struct save_op {
    char *id, *title, *model;
    int64_t created_at, updated_at;
    int64_t seq;           /* -1: the chat row only */
    agent_message message; /* a copy (a model's answer shares its bytes), written as JSON on the
                            * store's thread: it may be megabytes, too long to escape on the loop */
} save_op;

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

static void message_copy(agent_message *to, const agent_message *from)
{
    *to = *from;
    if (from->text_owner)
        ecp_shared_ref(from->text_owner); /* the bytes never change: the store's thread reads them in place */
    else
        to->text = dup_or_null(from->text);
    to->tool_call_id = dup_or_null(from->tool_call_id);
    to->tool_name = dup_or_null(from->tool_name);
    to->calls = from->call_count ? xcalloc(from->call_count, sizeof *to->calls) : NULL;
    for (size_t i = 0; i < from->call_count; i++) {
        to->calls[i].id = dup_or_null(from->calls[i].id);
        to->calls[i].name = dup_or_null(from->calls[i].name);
        to->calls[i].arguments = dup_or_null(from->calls[i].arguments);
    }
}

static int save_work(sqlite3 *db, void *data, ecp_error *err)
{
    save_op *op = data;
    sqlite3_stmt *st;
    int s = store_prepare(db,
                          "INSERT INTO chats (id, title, model, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5) "
                          "ON CONFLICT (id) DO UPDATE SET title = ?2, model = ?3, updated_at = ?5",
                          &st, err);
    if (s)
        return s;
    sqlite3_bind_text(st, 1, op->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, op->title, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, op->model, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, op->created_at);
    sqlite3_bind_int64(st, 5, op->updated_at);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return store_error(db, rc, err, "saving a chat");
    if (op->seq < 0)
        return 0;
    if ((s = store_prepare(db, "INSERT OR REPLACE INTO chat_messages (chat_id, seq, message) VALUES (?1, ?2, ?3)",
                           &st, err)))
        return s;
    buf json = BUF_INIT;
    write_message_json(&json, &op->message);
    sqlite3_bind_text(st, 1, op->id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, op->seq);
    sqlite3_bind_text(st, 3, json.data, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    buf_free(&json);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "saving a chat message");
}

static void save_free(void *data)
{
    save_op *op = data;
    message_free(&op->message);
    free_each(op->id, op->title, op->model, op);
}

static const store_op_type save_type = {"agent.chat.save", true, save_work, NULL, save_free};

/* Saves the chat's row and, when seq >= 0, its message number seq. */
static void persist(chat *c, int64_t seq)
{
    save_op *op = xcalloc(1, sizeof *op);
    op->id = xstrdup(c->id);
    op->title = c->title ? xstrdup(c->title) : NULL;
    op->model = c->model ? xstrdup(c->model) : NULL;
    op->created_at = c->created_at;
    op->updated_at = c->updated_at;
    op->seq = seq;
    if (seq >= 0)
        message_copy(&op->message, &c->messages[seq]);
    store_submit(c->svc->store, &save_type, op);
}

static int delete_work(sqlite3 *db, void *data, ecp_error *err)
{
    sqlite3_stmt *st;
    int s = store_prepare(db, "DELETE FROM chats WHERE id = ?1", &st, err);
    if (s)
        return s;
    sqlite3_bind_text(st, 1, data, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "deleting a chat");
}

static const store_op_type delete_type = {"agent.chat.delete", true, delete_work, NULL, NULL};

typedef struct load_op {
    agent_service *svc;
    chat *chats; /* built on the store's thread, handed over in done */
} load_op;

static int load_work(sqlite3 *db, void *data, ecp_error *err)
{
    load_op *op = data;
    sqlite3_stmt *st;
    int s = store_prepare(db, "SELECT id, title, model, created_at, updated_at FROM chats ORDER BY updated_at", &st,
                          err);
    if (s)
        return s;
    while (sqlite3_step(st) == SQLITE_ROW) {
        chat *c = xcalloc(1, sizeof *c);
        c->id = xstrdup((const char *)sqlite3_column_text(st, 0));
        c->title = sqlite3_column_text(st, 1) ? xstrdup((const char *)sqlite3_column_text(st, 1)) : NULL;
        c->model = sqlite3_column_text(st, 2) ? xstrdup((const char *)sqlite3_column_text(st, 2)) : NULL;
        c->created_at = sqlite3_column_int64(st, 3);
        c->updated_at = sqlite3_column_int64(st, 4);
        c->next = op->chats;
        op->chats = c;
    }
    sqlite3_finalize(st);
    if ((s = store_prepare(db, "SELECT message FROM chat_messages WHERE chat_id = ?1 ORDER BY seq", &st, err)))
        return s;
    for (chat *c = op->chats; c; c = c->next) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, c->id, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            agent_message m;
            if (!read_message_json((const char *)sqlite3_column_text(st, 0), &m))
                continue;
            c->messages = xrealloc(c->messages, (c->count + 1) * sizeof *c->messages);
            c->messages[c->count++] = m;
        }
    }
    sqlite3_finalize(st);
    return 0;
}

static void load_done(void *data, int status, const ecp_error *err)
{
    load_op *op = data;
    if (status < 0)
        ecp_log(op->svc->log, ECP_LOG_WARN, "chats could not be loaded: %s", err->message);
    /* the list is newest first, as it was read oldest first */
    for (chat *c = op->chats, *next; c; c = next) {
        next = c->next;
        c->svc = op->svc;
        c->next = NULL;
        chat **tail = &op->svc->chats;
        while (*tail)
            tail = &(*tail)->next;
        *tail = c;
        if (!find_chat(op->svc, c->id)) /* a chat begun before the load ends is found first, as it comes first */
            ecp_map_set(op->svc->chat_ids, c->id, c, NULL);
    }
    op->chats = NULL;
}

static void load_free(void *data)
{
    load_op *op = data;
    for (chat *c = op->chats, *next; c; c = next) {
        next = c->next;
        chat_free(c);
    }
    free(op);
}

static const store_op_type load_type = {"agent.chat.load", false, load_work, load_done, load_free};

/* ----- events ----------------------------------------------------------------------------- */

void agent_subscribe(agent_service *self, const agent_listener *l, void *ctx)
{
    ecp_listeners_add(&self->listeners, l, ctx);
}

void agent_unsubscribe(agent_service *self, const agent_listener *l, void *ctx)
{
    ecp_listeners_remove(&self->listeners, l, ctx);
}

static void emit(chat *c, agent_content *content)
{
    content->chat_id = c->id;
    if (!content->role)
        content->role = "assistant";
    ECP_EMIT(&c->svc->listeners, agent_listener, on_content, content);
}

static void emit_status(chat *c)
{
    ECP_EMIT(&c->svc->listeners, agent_listener, on_status, c->id, c->running ? "running" : "idle");
}

static void emit_text(chat *c, const char *role, const char *text)
{
    agent_content e = {.type = AGENT_CONTENT_TEXT, .role = role, .text = text, .text_len = strlen(text)};
    emit(c, &e);
}

/* ----- messages ----------------------------------------------------------------------------- */

static agent_message *append_message(chat *c, agent_role role, const char *text)
{
    c->messages = xrealloc(c->messages, (c->count + 1) * sizeof *c->messages);
    agent_message *m = &c->messages[c->count++];
    memset(m, 0, sizeof *m);
    m->role = role;
    m->text = text ? xstrdup(text) : NULL;
    return m;
}

static void touch(chat *c, bool new_message)
{
    c->updated_at = now_ms();
    persist(c, new_message ? (int64_t)c->count - 1 : -1);
}

static void add_tool_result(chat *c, const agent_call *call, bool error, const char *output)
{
    char *id = xstrdup(call->id), *name = xstrdup(call->name);
    agent_message *m = append_message(c, ROLE_TOOL, output);
    m->tool_call_id = id;
    m->tool_name = name;
    m->error = error;
    touch(c, true);
}

/* The arguments as a JSON object text: the model's when they parse, else "{}". */
static const char *arguments_object(const char *arguments)
{
    json_doc d = {0};
    bool ok = json_doc_parse(&d, arguments, strlen(arguments), NULL) == 0 &&
              json_type_of(&d, json_root(&d)) == JSON_OBJECT;
    json_doc_free(&d);
    return ok ? arguments : "{}";
}

/* ----- requests ---------------------------------------------------------------------------- */

typedef struct tool_writer {
    json_writer *w;
    llm_api api;
} tool_writer;

static void write_tool(void *ctx, const char *name, const char *description, const char *parameters)
{
    tool_writer *t = ctx;
    json_writer *w = t->w;
    jw_object_begin(w);
    if (t->api == LLM_API_OPENAI) {
        jw_key_string(w, "type", "function");
        jw_key(w, "function");
        jw_object_begin(w);
    }
    jw_key_string(w, "name", name);
    jw_key_string(w, "description", description);
    jw_key(w, t->api == LLM_API_OPENAI ? "parameters" : "input_schema");
    jw_raw(w, parameters, strlen(parameters));
    if (t->api == LLM_API_OPENAI)
        jw_object_end(w);
    jw_object_end(w);
}

/* Ours, then the running MCP servers'. */
static void write_tools(json_writer *w, agent_service *svc, llm_api api)
{
    size_t n;
    const agent_tool_info *tools = agent_tools(&n);
    tool_writer t = {w, api};
    jw_key(w, "tools");
    jw_array_begin(w);
    for (size_t i = 0; i < n; i++)
        write_tool(&t, tools[i].name, tools[i].description, tools[i].parameters);
    mcp_each_tool(svc, write_tool, &t);
    jw_array_end(w);
}

static void write_openai_messages(json_writer *w, const chat *c)
{
    jw_key(w, "messages");
    jw_array_begin(w);
    jw_object_begin(w);
    jw_key_string(w, "role", "system");
    jw_key_string(w, "content", system_prompt);
    jw_object_end(w);
    for (size_t i = 0; i < c->count; i++) {
        const agent_message *m = &c->messages[i];
        jw_object_begin(w);
        if (m->role == ROLE_USER) {
            jw_key_string(w, "role", "user");
            jw_key_string(w, "content", m->text ? m->text : "");
        } else if (m->role == ROLE_ASSISTANT) {
            jw_key_string(w, "role", "assistant");
            jw_key_string(w, "content", m->text && m->text[0] ? m->text : NULL);
            if (m->call_count) {
                jw_key(w, "tool_calls");
                jw_array_begin(w);
                for (size_t k = 0; k < m->call_count; k++) {
                    jw_object_begin(w);
                    jw_key_string(w, "id", m->calls[k].id);
                    jw_key_string(w, "type", "function");
                    jw_key(w, "function");
                    jw_object_begin(w);
                    jw_key_string(w, "name", m->calls[k].name);
                    jw_key_string(w, "arguments", m->calls[k].arguments);
                    jw_object_end(w);
                    jw_object_end(w);
                }
                jw_array_end(w);
            }
        } else {
            jw_key_string(w, "role", "tool");
            jw_key_string(w, "tool_call_id", m->tool_call_id);
            jw_key_string(w, "content", m->text ? m->text : "");
        }
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_anthropic_messages(json_writer *w, const chat *c)
{
    jw_key(w, "messages");
    jw_array_begin(w);
    for (size_t i = 0; i < c->count; i++) {
        const agent_message *m = &c->messages[i];
        if (m->role == ROLE_USER) {
            jw_object_begin(w);
            jw_key_string(w, "role", "user");
            jw_key_string(w, "content", m->text ? m->text : "");
            jw_object_end(w);
        } else if (m->role == ROLE_ASSISTANT) {
            jw_object_begin(w);
            jw_key_string(w, "role", "assistant");
            jw_key(w, "content");
            jw_array_begin(w);
            if (m->text && m->text[0]) {
                jw_object_begin(w);
                jw_key_string(w, "type", "text");
                jw_key_string(w, "text", m->text);
                jw_object_end(w);
            }
            for (size_t k = 0; k < m->call_count; k++) {
                jw_object_begin(w);
                jw_key_string(w, "type", "tool_use");
                jw_key_string(w, "id", m->calls[k].id);
                jw_key_string(w, "name", m->calls[k].name);
                jw_key(w, "input");
                const char *input = arguments_object(m->calls[k].arguments);
                jw_raw(w, input, strlen(input));
                jw_object_end(w);
            }
            jw_array_end(w);
            jw_object_end(w);
        } else {
            /* consecutive tool results go back as one user message */
            jw_object_begin(w);
            jw_key_string(w, "role", "user");
            jw_key(w, "content");
            jw_array_begin(w);
            for (; i < c->count && c->messages[i].role == ROLE_TOOL; i++) {
                const agent_message *t = &c->messages[i];
                jw_object_begin(w);
                jw_key_string(w, "type", "tool_result");
                jw_key_string(w, "tool_use_id", t->tool_call_id);
                jw_key_string(w, "content", t->text ? t->text : "");
                jw_key_bool(w, "is_error", t->error);
                jw_object_end(w);
            }
            i--;
            jw_array_end(w);
            jw_object_end(w);
        }
    }
    jw_array_end(w);
}

static void request_body(const chat *c, buf *out)
{
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_string(&w, "model", c->model_name);
    jw_key_bool(&w, "stream", true);
    if (c->endpoint.api == LLM_API_OPENAI) {
        jw_key(&w, "stream_options");
        jw_object_begin(&w);
        jw_key_bool(&w, "include_usage", true);
        jw_object_end(&w);
        write_openai_messages(&w, c);
        write_tools(&w, c->svc, LLM_API_OPENAI);
        jw_key_string(&w, "tool_choice", "auto");
    } else {
        jw_key_int(&w, "max_tokens", 8192);
        jw_key_string(&w, "system", system_prompt);
        write_anthropic_messages(&w, c);
        write_tools(&w, c->svc, LLM_API_ANTHROPIC);
    }
    jw_object_end(&w);
}

/* ----- the turn ----------------------------------------------------------------------------- */

static void send_request(chat *c);
static void next_call(chat *c);

static void end_turn(chat *c, agent_stop stop, const char *system_text)
{
    c->request = NULL;
    c->running = false;
    if (system_text)
        emit_text(c, "system", system_text);
    agent_content e = {.type = AGENT_CONTENT_PROGRESS, .role = "system", .finished = true, .stop = stop,
                       .error_message = stop == AGENT_STOP_ERROR ? system_text : NULL};
    emit(c, &e);
    emit_status(c);
    touch(c, false);
}

/* The model's reasoning ends with the first thing that is not reasoning. */
static void end_reasoning(chat *c)
{
    if (!c->reasoning_id[0])
        return;
    agent_content e = {.type = AGENT_CONTENT_REASON_FINISHED, .tool_id = c->reasoning_id,
                       .total_ms = (double)(uv_hrtime() - c->reasoning_started) / 1e6};
    emit(c, &e);
    c->reasoning_id[0] = '\0';
}

static void on_llm_reasoning(void *ctx, const char *text, size_t len)
{
    chat *c = ctx;
    if (!c->reasoning_id[0]) {
        snprintf(c->reasoning_id, sizeof c->reasoning_id, "reasoning-%u", ++c->reasoning_count);
        c->reasoning_started = uv_hrtime();
        agent_content s = {.type = AGENT_CONTENT_REASON_STARTED, .tool_id = c->reasoning_id};
        emit(c, &s);
    }
    agent_content e = {.type = AGENT_CONTENT_REASON_TEXT, .tool_id = c->reasoning_id, .text = text, .text_len = len};
    emit(c, &e);
}

static void on_llm_text(void *ctx, const char *text, size_t len)
{
    chat *c = ctx;
    end_reasoning(c);
    agent_content e = {.type = AGENT_CONTENT_TEXT, .text = text, .text_len = len};
    emit(c, &e);
}

static void on_llm_fragment(void *ctx, size_t index, const llm_tool_call *call, const char *fragment, size_t len)
{
    chat *c = ctx;
    end_reasoning(c);
    (void)index;
    agent_content e = {.type = AGENT_CONTENT_TOOL_PREPARE, .tool_id = call->id, .tool_name = call->name,
                       .text = fragment, .text_len = len};
    emit(c, &e);
}

static void on_llm_finish(void *ctx, const char *error, llm_answer *answer)
{
    chat *c = ctx;
    c->request = NULL;
    end_reasoning(c);
    if (error) {
        end_turn(c, AGENT_STOP_ERROR, error);
        return;
    }
    if (answer->input_tokens || answer->output_tokens) {
        c->session_tokens += answer->input_tokens + answer->output_tokens;
        agent_content u = {.type = AGENT_CONTENT_USAGE, .role = "system", .session_tokens = c->session_tokens};
        emit(c, &u);
    }
    /* The answer's text becomes the message's as it is: copying tens of
     * megabytes here (and again for the store) held the loop at the turn's end. */
    agent_message *m = append_message(c, ROLE_ASSISTANT, NULL);
    size_t text_len = answer->text.len;
    char *text = answer->text.data ? buf_detach(&answer->text) : xstrdup("");
    m->text_owner = ecp_shared_adopt(text, text_len);
    m->text = text;
    m->call_count = answer->call_count;
    m->calls = answer->call_count ? xcalloc(answer->call_count, sizeof *m->calls) : NULL;
    for (size_t i = 0; i < answer->call_count; i++) {
        const llm_tool_call *t = &answer->calls[i];
        m->calls[i].id = xstrdup(t->id);
        m->calls[i].name = xstrdup(t->name);
        m->calls[i].arguments = xstrndup(t->arguments.data ? t->arguments.data : "", t->arguments.len);
    }
    touch(c, true);
    c->turns++;
    if (answer->call_count == 0 || answer->cut_short || answer->refused) {
        /* calls in an answer cut at its limit are incomplete: none runs */
        size_t at = (size_t)(m - c->messages); /* adding results moves the messages */
        for (size_t i = 0; i < answer->call_count; i++)
            add_tool_result(c, &c->messages[at].calls[i], true,
                            "Error: this call did not run: the model's answer was cut at its output limit or refused");
        end_turn(c, answer->refused ? AGENT_STOP_REFUSAL : answer->cut_short ? AGENT_STOP_MAX_TOKENS : AGENT_STOP_END,
                 NULL);
        return;
    }
    c->calls_from = c->count - 1;
    c->next_call = 0;
    next_call(c);
}

static const llm_callbacks llm_cb = {.on_text = on_llm_text, .on_tool_fragment = on_llm_fragment,
                                     .on_reasoning = on_llm_reasoning, .on_finish = on_llm_finish};

static void send_request(chat *c)
{
    ecp_error load_err = {0};
    llm_client *llm = agent__llm(c->svc, &load_err);
    if (!llm) {
        end_turn(c, AGENT_STOP_ERROR, load_err.message);
        return;
    }
    buf body = BUF_INIT;
    request_body(c, &body);
    c->request = llm_request_start(llm, &c->endpoint, body.data, &llm_cb, c);
    buf_free(&body);
    if (c->request && c->svc->streams_paused)
        llm_request_pause(c->request, true);
}

void agent_pause_streams(agent_service *self, bool paused)
{
    if (self->streams_paused == paused)
        return;
    self->streams_paused = paused;
    /* Going on may deliver content, and a client that falls behind again
     * pauses every stream from inside this walk: stop when that happens. */
    for (chat *c = self->chats; c && self->streams_paused == paused; c = c->next)
        if (c->request)
            llm_request_pause(c->request, paused);
}

static const agent_call *current_call(chat *c)
{
    const agent_message *m = &c->messages[c->calls_from];
    return &m->calls[c->next_call];
}

static void call_event(chat *c, agent_content *e, const agent_call *call)
{
    e->tool_id = call->id;
    e->tool_name = call->name;
    e->arguments = arguments_object(call->arguments);
    emit(c, e);
}

static void call_finished(chat *c, const agent_call *call, bool error, const char *output)
{
    agent_content e = {.type = AGENT_CONTENT_TOOL_CALLED, .error = error, .text = output, .text_len = strlen(output),
                       .total_ms = (double)(uv_hrtime() - c->call_started) / 1e6};
    call_event(c, &e, call);
    add_tool_result(c, call, error, output);
}

static void tool_done(void *ctx, bool error, const char *output)
{
    chat *c = ctx;
    c->run = NULL;
    c->hosted = false;
    c->mcp = NULL;
    tool_plan_free(&c->plan);
    call_finished(c, current_call(c), error, output);
    c->next_call++;
    next_call(c);
}

static void run_call(chat *c)
{
    const agent_call *call = current_call(c);
    agent_content e = {.type = AGENT_CONTENT_TOOL_RUNNING};
    call_event(c, &e, call);
    agent_service *svc = c->svc;
    if (strcmp(c->plan.name, "update_plan") == 0) {
        json_doc d = {0};
        buf entries = BUF_INIT;
        if (json_doc_parse(&d, call->arguments, strlen(call->arguments), NULL) == 0 &&
            plan_entries(&d, &entries, NULL) == 0) {
            agent_content p = {.type = AGENT_CONTENT_PLAN, .tool_id = call->id, .tool_name = call->name,
                               .arguments = entries.data};
            emit(c, &p);
        }
        buf_free(&entries);
        json_doc_free(&d);
    }
    if (c->plan.mcp) {
        ecp_error err = {0};
        c->mcp = mcp_call_start(svc, call->name, arguments_object(call->arguments), tool_done, c, &err);
        if (!c->mcp) {
            buf out = BUF_INIT;
            buf_appendf(&out, "Error: %s", err.message);
            tool_done(c, true, out.data);
            buf_free(&out);
        }
        return;
    }
    if (svc->host) {
        agent_host_call hc = {c->id, call->id, call->name, c->plan.path, arguments_object(call->arguments)};
        c->hosted = true;
        if (svc->host->run(svc->host_ctx, &hc, c))
            return;
        c->hosted = false;
    }
    c->run = tool_start(svc, &c->plan, call->arguments, tool_done, c);
}

void agent_host_call_done(void *token, bool error, const char *output) { tool_done(token, error, output); }

void agent_set_tool_host(agent_service *self, const agent_tool_host *host, void *ctx)
{
    self->host = host;
    self->host_ctx = ctx;
}

static void cancel_hosted(chat *c)
{
    if (c->mcp)
        mcp_call_cancel(c->mcp);
    c->mcp = NULL;
    if (c->hosted && c->svc->host)
        c->svc->host->cancel(c->svc->host_ctx, c);
    c->hosted = false;
}

static bool approval_allowed(agent_service *svc)
{
    const char *setting = svc->session ? session_setting_string(svc->session, "agent.approval", NULL) : NULL;
    return setting && strcmp(setting, "allow") == 0;
}

/* Handles the calls of the last answer one at a time; then asks the model again. */
static void next_call(chat *c)
{
    /* (adding a result moves the messages: the answer is looked up each time) */
    while (c->next_call < c->messages[c->calls_from].call_count) {
        const agent_call *call = current_call(c);
        c->call_started = uv_hrtime();
        ecp_error err = {0};
        if (tool_check(c->svc, call->name, call->arguments, &c->plan, &err) < 0) {
            buf out = BUF_INIT;
            buf_appendf(&out, "Error: %s", err.message);
            call_finished(c, call, true, out.data);
            buf_free(&out);
            c->next_call++;
            continue;
        }
        bool ask = c->plan.needs_approval && !approval_allowed(c->svc);
        /* set first: a listener may answer from inside the event */
        c->awaiting_approval = ask;
        agent_content e = {.type = AGENT_CONTENT_TOOL_RUN, .manual_approval = ask};
        call_event(c, &e, call);
        if (ask)
            return;
        run_call(c);
        return;
    }
    if (c->turns >= c->max_turns) {
        char text[120];
        snprintf(text, sizeof text, "Stopped: the turn limit (%d model requests) was reached", c->max_turns);
        end_turn(c, AGENT_STOP_TURN_LIMIT, text);
        return;
    }
    send_request(c);
}

int agent_tool_answer(agent_service *self, const char *chat_id, const char *tool_call_id, bool approve,
                      ecp_error *err)
{
    chat *c = find_chat(self, chat_id);
    if (!c || !c->running || !c->awaiting_approval || strcmp(current_call(c)->id, tool_call_id) != 0)
        return ecp_error_set(err, ECP_ENOTFOUND, "no tool call %s waits for approval in chat %s", tool_call_id,
                             chat_id);
    c->awaiting_approval = false;
    if (approve) {
        run_call(c);
        return 0;
    }
    const agent_call *call = current_call(c);
    agent_content e = {.type = AGENT_CONTENT_TOOL_REJECTED, .reason = "userChoiceDeny"};
    call_event(c, &e, call);
    tool_plan_free(&c->plan);
    add_tool_result(c, call, true, "Error: the user rejected this tool call");
    c->next_call++;
    next_call(c);
    return 0;
}

int agent_prompt_stop(agent_service *self, const char *chat_id, ecp_error *err)
{
    chat *c = find_chat(self, chat_id);
    if (!c)
        return ecp_error_set(err, ECP_ENOTFOUND, "no chat %s", chat_id);
    if (!c->running)
        return 0;
    c->awaiting_tools = false;
    if (c->request) {
        llm_request_cancel(c->request);
        c->request = NULL;
        end_reasoning(c);
    } else if (c->calls_from < c->count && c->messages[c->calls_from].role == ROLE_ASSISTANT) {
        /* Every call of the answer that has no result gets one, so the chat stays consistent. */
        const agent_message *m = &c->messages[c->calls_from];
        size_t n = m->call_count;
        for (; c->next_call < n; c->next_call++) {
            const agent_call *call = &c->messages[c->calls_from].calls[c->next_call];
            if (c->run) {
                tool_cancel(c->run);
                c->run = NULL;
            }
            cancel_hosted(c);
            agent_content e = {.type = AGENT_CONTENT_TOOL_REJECTED, .reason = "userPromptStop"};
            call_event(c, &e, call);
            add_tool_result(c, call, true, "Error: stopped by the user");
        }
        c->awaiting_approval = false;
        tool_plan_free(&c->plan);
    }
    end_turn(c, AGENT_STOP_CANCELLED, NULL);
    return 0;
}

/* ----- configuration ------------------------------------------------------------------------- */

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

static const char *const no_provider_message =
    "No LLM provider is configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for another OpenAI-compatible "
    "server), ANTHROPIC_API_KEY or OLLAMA_HOST, and choose the model with --model, ECPD_MODEL or the agent.model "
    "setting (provider/model, e.g. openai/gpt-4.1)";

/* A key that came from the secret store instead of the environment. */
typedef struct key_override {
    const char *var;   /* "OPENAI_API_KEY" */
    const char *value;
} key_override;

static const char *key_of(const key_override *ko, const char *var)
{
    return ko && strcmp(ko->var, var) == 0 ? ko->value : env(var);
}

/* Resolves "provider/model" (or the first provider with a key) into c's
 * endpoint. A missing key is ECP_ENOTSUP with *missing naming the variable
 * (NULL when no model was chosen and no provider has a key). */
static int configure(chat *c, const char *requested, const key_override *ko, const char **missing, ecp_error *err)
{
    *missing = NULL;
    const char *chosen = requested;
    if (!chosen)
        chosen = env("ECPD_MODEL");
    if (!chosen && c->svc->session)
        chosen = session_setting_string(c->svc->session, "agent.model", NULL);
    if (!chosen && c->model)
        chosen = c->model; /* a chat keeps its model */
    char *model_copy = chosen ? xstrdup(chosen) : NULL; /* c->model is replaced below */
    const char *model = model_copy;
    buf provider = BUF_INIT;
    const char *name = NULL;
    if (model) {
        const char *slash = strchr(model, '/');
        if (!slash || slash == model || !slash[1]) {
            buf_free(&provider);
            int s = ecp_error_set(err, ECP_EINVAL, "model %s: expected provider/model (openai/..., anthropic/... or "
                                                   "ollama/...)", model);
            free(model_copy);
            return s;
        }
        buf_append(&provider, model, (size_t)(slash - model));
        name = slash + 1;
    } else if (key_of(ko, "OPENAI_API_KEY")) {
        buf_append_str(&provider, "openai"), name = "gpt-4.1";
    } else if (key_of(ko, "ANTHROPIC_API_KEY")) {
        buf_append_str(&provider, "anthropic"), name = "claude-sonnet-4-0";
    } else if (env("OLLAMA_HOST")) {
        buf_append_str(&provider, "ollama"), name = "qwen2.5-coder";
    } else {
        return ecp_error_set(err, ECP_ENOTSUP, "%s", no_provider_message);
    }
    /* (model_copy is NULL on the paths above that return) */
    buf url = BUF_INIT;
    const char *key = NULL;
    int status = 0;
    llm_api api = LLM_API_OPENAI;
    if (strcmp(provider.data, "openai") == 0) {
        key = key_of(ko, "OPENAI_API_KEY");
        const char *base = env("OPENAI_BASE_URL");
        if (!key && !base) {
            *missing = "OPENAI_API_KEY";
            status = ecp_error_set(err, ECP_ENOTSUP, "%s", no_provider_message);
        }
        buf_appendf(&url, "%s/chat/completions", base ? base : "https://api.openai.com/v1");
        api = LLM_API_OPENAI;
    } else if (strcmp(provider.data, "anthropic") == 0) {
        key = key_of(ko, "ANTHROPIC_API_KEY");
        if (!key) {
            *missing = "ANTHROPIC_API_KEY";
            status = ecp_error_set(err, ECP_ENOTSUP, "%s", no_provider_message);
        }
        const char *base = env("ANTHROPIC_BASE_URL");
        buf_appendf(&url, "%s/v1/messages", base ? base : "https://api.anthropic.com");
        api = LLM_API_ANTHROPIC;
    } else if (strcmp(provider.data, "ollama") == 0) {
        const char *host = env("OLLAMA_HOST");
        if (!host)
            status = ecp_error_set(err, ECP_ENOTSUP, "%s", no_provider_message);
        else
            buf_appendf(&url, "%s%s/v1/chat/completions", strstr(host, "://") ? "" : "http://", host);
        api = LLM_API_OPENAI;
    } else {
        status = ecp_error_set(err, ECP_EINVAL, "model %s: unknown provider %s (openai, anthropic or ollama)",
                               model, provider.data);
    }
    /* a base URL given with its trailing slash */
    if (!status) {
        char *u = url.data;
        for (char *p = strstr(u, "//chat/"); p; p = NULL)
            memmove(p, p + 1, strlen(p));
        for (char *p = strstr(u, "//v1/"); p && p > u && p[-1] != ':'; p = NULL)
            memmove(p, p + 1, strlen(p));
        endpoint_free(&c->endpoint);
        c->endpoint.api = api;
        c->endpoint.url = buf_detach(&url);
        c->endpoint.api_key = key ? xstrdup(key) : NULL;
        free(c->model_name);
        c->model_name = xstrdup(name);
        free(c->model);
        buf full = BUF_INIT;
        buf_appendf(&full, "%s/%s", provider.data, name);
        c->model = buf_detach(&full);
    }
    buf_free(&url);
    buf_free(&provider);
    free(model_copy);
    return status;
}

char *agent_default_model(agent_service *self)
{
    chat probe = {.svc = self};
    const char *missing;
    char *model = NULL;
    if (configure(&probe, NULL, NULL, &missing, NULL) == 0) {
        model = probe.model;
        probe.model = NULL;
    }
    endpoint_free(&probe.endpoint);
    free(probe.model_name);
    free(probe.model);
    return model;
}

/* ----- chats ---------------------------------------------------------------------------------- */

char *agent__new_id(void)
{
    unsigned char bytes[16];
    if (uv_random(NULL, NULL, bytes, sizeof bytes, 0, NULL) != 0)
        for (size_t i = 0; i < sizeof bytes; i++)
            bytes[i] = (unsigned char)(uv_hrtime() >> (i % 8 * 8));
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    buf b = BUF_INIT;
    for (size_t i = 0; i < 16; i++)
        buf_appendf(&b, "%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "", bytes[i]);
    return buf_detach(&b);
}

/* ----- commands -------------------------------------------------------------------------------- */

static const agent_command_info commands[] = {
    {"tools", "List the tools the model is offered: ours and those of the running MCP servers"},
    {"mcp", "List the MCP servers, their state and how many tools each offers"},
};

const agent_command_info *agent_commands(size_t *count)
{
    *count = sizeof commands / sizeof commands[0];
    return commands;
}

/* "/name" alone (or followed by blanks) names a command. */
static const agent_command_info *find_command(const char *message)
{
    if (message[0] != '/')
        return NULL;
    size_t n = strcspn(message + 1, " \t\r\n");
    if (message[1 + n + strspn(message + 1 + n, " \t\r\n")] != '\0')
        return NULL;
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strlen(commands[i].name) == n && strncmp(commands[i].name, message + 1, n) == 0)
            return &commands[i];
    return NULL;
}

static void list_tool(void *ctx, const char *name, const char *description, const char *schema)
{
    (void)schema;
    buf_appendf(ctx, "- %s: %s\n", name, description);
}

static void list_server(void *ctx, const agent_mcp_info *info)
{
    buf_appendf(ctx, "- %s (%s): %s, %zu tool%s%s%s\n", info->name, info->url ? info->url : info->command, info->status,
                info->tool_count, info->tool_count == 1 ? "" : "s", info->error ? "; " : "", info->error ? info->error : "");
}

static void run_command(chat *c, const agent_command_info *command, buf *out)
{
    if (strcmp(command->name, "tools") == 0) {
        size_t n;
        const agent_tool_info *tools = agent_tools(&n);
        for (size_t i = 0; i < n; i++)
            list_tool(out, tools[i].name, tools[i].description, tools[i].parameters);
        mcp_each_tool(c->svc, list_tool, out);
    } else {
        agent_mcp_list(c->svc, list_server, out);
        if (!out->len)
            buf_append_str(out, "No MCP server is configured.\n");
    }
}

/* The prompt with the keys known now; on success answers done before any content. */
static int prompt_now(agent_service *self, const char *chat_id, const char *message, const char *model,
                      const key_override *ko, agent_prompt_cb done, void *ctx, const char **missing, ecp_error *err)
{
    *missing = NULL;
    chat *c = chat_id ? find_chat(self, chat_id) : NULL;
    bool created = false;
    if (c && c->running)
        return ecp_error_set(err, ECP_ESTATE, "chat %s is already answering a prompt; stop it first", chat_id);
    if (!c) {
        c = xcalloc(1, sizeof *c);
        c->svc = self;
        c->id = chat_id ? xstrdup(chat_id) : agent__new_id();
        c->created_at = c->updated_at = now_ms();
        created = true;
    }
    int status = configure(c, model, ko, missing, err);
    /* the model is reached through libcurl: a server that cannot load it says so to the prompt */
    if (status == 0 && !find_command(message) && !agent__llm(self, err))
        status = ECP_EIO;
    if (status < 0) {
        if (created)
            chat_free(c);
        return status;
    }
    if (created) {
        c->next = self->chats;
        self->chats = c;
        ecp_map_set(self->chat_ids, c->id, c, NULL);
    }
    if (!c->title) {
        size_t n = strcspn(message, "\n");
        c->title = xstrndup(message, n < TITLE_MAX ? n : TITLE_MAX);
    }
    /* the setting's MCP servers start with the first prompt that may use their tools */
    mcp_need(self);
    const agent_command_info *command = find_command(message);
    if (command) {
        /* answered here, without the model; the chat's messages stay as they were */
        c->running = true;
        done(ctx, 0, NULL, c->id, c->model);
        emit_status(c);
        buf out = BUF_INIT;
        run_command(c, command, &out);
        end_turn(c, AGENT_STOP_END, out.data);
        buf_free(&out);
        return 0;
    }
    append_message(c, ROLE_USER, message);
    touch(c, true);
    c->running = true;
    c->turns = 0;
    c->prepared = 0;
    c->max_turns = self->session ? (int)session_setting_number(self->session, "agent.maxTurns", DEFAULT_MAX_TURNS)
                                 : DEFAULT_MAX_TURNS;
    if (c->max_turns < 1)
        c->max_turns = DEFAULT_MAX_TURNS;
    done(ctx, 0, NULL, c->id, c->model);
    emit_status(c);
    agent_content e = {.type = AGENT_CONTENT_PROGRESS, .role = "system", .text = "Waiting model",
                       .text_len = strlen("Waiting model")};
    emit(c, &e);
    if (mcp_starting(self))
        c->awaiting_tools = true; /* sent once they run or fail, within their start timeout */
    else
        send_request(c);
    return 0;
}

void agent__mcp_settled(agent_service *svc)
{
    if (mcp_starting(svc))
        return;
    for (chat *c = svc->chats; c; c = c->next)
        if (c->awaiting_tools) {
            c->awaiting_tools = false;
            send_request(c);
        }
}

/* A prompt waiting for the secret store to say whether it holds a key. */
struct key_wait {
    agent_service *svc; /* NULL once the service is gone */
    key_wait *next;
    char *chat_id, *message, *model;
    agent_prompt_cb done;
    void *ctx;
    const char *keys[2];
    size_t key_count, tried;
    ecp_error first_err; /* the answer when no key is found */
};

static void key_wait_free(key_wait *w)
{
    if (w->svc) {
        key_wait **p = &w->svc->key_waits;
        while (*p != w)
            p = &(*p)->next;
        *p = w->next;
    }
    free_each(w->chat_id, w->message, w->model, w);
}

static void secret_found(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                         const session_secret_info *info)
{
    (void)err;
    (void)info;
    key_wait *w = ctx;
    if (!w->svc) {
        ecp_error gone = {0};
        ecp_error_set(&gone, ECP_ECANCELED, "the server is stopping");
        w->done(w->ctx, ECP_ECANCELED, &gone, NULL, NULL);
        key_wait_free(w);
        return;
    }
    const char *var = w->keys[w->tried++];
    if (status == 0 && value) {
        char *key = xstrndup(value, len);
        key_override ko = {var, key};
        const char *missing;
        ecp_error e = {0};
        int s = prompt_now(w->svc, w->chat_id, w->message, w->model, &ko, w->done, w->ctx, &missing, &e);
        free(key);
        if (s == 0 || !missing || w->tried >= w->key_count) {
            if (s < 0)
                w->done(w->ctx, s, &e, NULL, NULL);
            key_wait_free(w);
            return;
        }
    }
    if (w->tried < w->key_count) {
        session_secret_get(w->svc->session, w->keys[w->tried], secret_found, w);
        return;
    }
    w->done(w->ctx, w->first_err.status, &w->first_err, NULL, NULL);
    key_wait_free(w);
}

int agent_prompt(agent_service *self, const char *chat_id, const char *message, const char *model,
                 agent_prompt_cb done, void *ctx, ecp_error *err)
{
    const char *missing = NULL;
    int status = prompt_now(self, chat_id, message, model, NULL, done, ctx, &missing, err);
    if (status != ECP_ENOTSUP || !self->session)
        return status;
    /* API keys may also live in the secret store, under the variables' names. */
    key_wait *w = xcalloc(1, sizeof *w);
    w->svc = self;
    w->chat_id = chat_id ? xstrdup(chat_id) : NULL;
    w->message = xstrdup(message);
    w->model = model ? xstrdup(model) : NULL;
    w->done = done;
    w->ctx = ctx;
    if (missing) {
        w->keys[w->key_count++] = missing;
    } else {
        w->keys[w->key_count++] = "OPENAI_API_KEY";
        w->keys[w->key_count++] = "ANTHROPIC_API_KEY";
    }
    if (err)
        w->first_err = *err;
    else
        ecp_error_set(&w->first_err, ECP_ENOTSUP, "%s", no_provider_message);
    w->next = self->key_waits;
    self->key_waits = w;
    session_secret_get(self->session, w->keys[0], secret_found, w);
    return 0;
}

int agent_chat_delete(agent_service *self, const char *chat_id, ecp_error *err)
{
    chat **p = &self->chats;
    while (*p && strcmp((*p)->id, chat_id) != 0)
        p = &(*p)->next;
    if (!*p)
        return ecp_error_set(err, ECP_ENOTFOUND, "no chat %s", chat_id);
    chat *c = *p;
    if (c->running)
        agent_prompt_stop(self, chat_id, NULL);
    *p = c->next;
    ecp_map_remove(self->chat_ids, c->id, NULL);
    for (chat *same = c->next; same; same = same->next) /* a stored chat that a new one of its id hid */
        if (!strcmp(same->id, c->id) && ecp_map_set(self->chat_ids, same->id, same, NULL))
            break;
    store_submit(self->store, &delete_type, xstrdup(c->id));
    ECP_EMIT(&self->listeners, agent_listener, on_deleted, c->id);
    chat_free(c);
    return 0;
}

static void fill_info(const chat *c, agent_chat_info *info)
{
    *info = (agent_chat_info){
        .id = c->id, .title = c->title, .model = c->model, .status = c->running ? "running" : "idle",
        .created_at = c->created_at, .updated_at = c->updated_at, .message_count = c->count,
    };
}

static int by_update(const void *a, const void *b)
{
    const chat *x = *(chat *const *)a, *y = *(chat *const *)b;
    return x->updated_at < y->updated_at ? 1 : x->updated_at > y->updated_at ? -1 : 0;
}

void agent_chat_list(agent_service *self, void (*fn)(void *ctx, const agent_chat_info *info), void *ctx)
{
    size_t n = 0;
    for (chat *c = self->chats; c; c = c->next)
        n++;
    chat **all = xmalloc((n ? n : 1) * sizeof *all);
    n = 0;
    for (chat *c = self->chats; c; c = c->next)
        all[n++] = c;
    qsort(all, n, sizeof *all, by_update);
    for (size_t i = 0; i < n; i++) {
        agent_chat_info info;
        fill_info(all[i], &info);
        fn(ctx, &info);
    }
    free(all);
}

int agent_chat_open(agent_service *self, const char *chat_id, agent_chat_info *info,
                    void (*message_fn)(void *ctx, const agent_message_info *message), void *ctx, ecp_error *err)
{
    chat *c = find_chat(self, chat_id);
    if (!c)
        return ecp_error_set(err, ECP_ENOTFOUND, "no chat %s", chat_id);
    fill_info(c, info);
    for (size_t i = 0; message_fn && i < c->count; i++) {
        const agent_message *m = &c->messages[i];
        const char **ids = xcalloc(m->call_count + 1, sizeof *ids), **names = xcalloc(m->call_count + 1, sizeof *names),
                   **args = xcalloc(m->call_count + 1, sizeof *args);
        for (size_t k = 0; k < m->call_count; k++) {
            ids[k] = m->calls[k].id;
            names[k] = m->calls[k].name;
            args[k] = arguments_object(m->calls[k].arguments);
        }
        agent_message_info mi = {
            .role = m->role == ROLE_USER ? "user" : m->role == ROLE_ASSISTANT ? "assistant" : "tool",
            .text = m->text, .tool_call_id = m->tool_call_id, .tool_name = m->tool_name, .error = m->error,
            .call_count = m->call_count, .call_ids = ids, .call_names = names, .call_arguments = args,
        };
        message_fn(ctx, &mi);
        free_each(ids, names, args);
    }
    return 0;
}

/* ----- context for prompts ------------------------------------------------------------------------ */

/* Owned by the service until its walk calls back. A walk still running when
 * the service goes never calls back (the file service, freed after us without
 * a turn of the loop in between, drops it), so the service frees its ops. */
struct query_op {
    agent_service *svc;
    query_op *next;
    agent_query_cb done;
    void *ctx;
};

static void query_found(void *ctx, int status, const ecp_error *err, const file_search_result *result)
{
    query_op *op = ctx;
    for (query_op **p = &op->svc->queries; *p; p = &(*p)->next)
        if (*p == op) {
            *p = op->next;
            break;
        }
    size_t n = status < 0 ? 0 : result->count;
    const char **paths = xcalloc(n + 1, sizeof *paths);
    for (size_t i = 0; i < n; i++)
        paths[i] = result->hits[i].path;
    op->done(op->ctx, status, err, paths, n);
    free(paths);
    free(op);
}

int agent_query_files(agent_service *self, const char *query, size_t max, agent_query_cb done, void *ctx,
                      ecp_job **walk, ecp_error *err)
{
    if (!self->workspace)
        return ecp_error_set(err, ECP_EACCES, "there is no workspace to find context in");
    query_op *op = xcalloc(1, sizeof *op);
    op->svc = self;
    op->done = done;
    op->ctx = ctx;
    file_search_options o = {.pattern = query, .base = self->workspace, .max_results = max,
                             .encoding = ECP_ENCODING_UTF8};
    int status = file_search_prepare(self->files, &o, query_found, op, walk, err);
    if (status < 0) {
        free(op);
        return status;
    }
    op->next = self->queries;
    self->queries = op;
    return status;
}

void agent_query_start(ecp_job *walk) { file_walk_start(walk); }

/* ----- the service ------------------------------------------------------------------------------ */

static void setting_changed(void *ctx, const char *key, const char *value_json)
{
    agent_service *svc = ctx;
    if (strcmp(key, "agent.mcpServers") == 0 && svc->mcp_following)
        mcp_follow_setting(svc, value_json);
}

static const session_listener settings_listener = {.on_setting = setting_changed};

llm_client *agent__llm(agent_service *svc, ecp_error *err)
{
    if (!svc->llm)
        svc->llm = llm_client_new(svc->loop, err);
    return svc->llm;
}

agent_service *agent_service_new(const agent_service_options *o, ecp_error *err)
{
    (void)err;
    agent_service *svc = xmalloc(sizeof *svc);
    *svc = (agent_service){
        .loop = o->loop, .log = o->log, .store = o->store, .documents = o->documents, .files = o->files,
        .session = o->session, .lsp = o->lsp, .git = o->git, .jobs = ecp_job_set_new(o->pool),
        .chat_ids = ecp_map_new(), .workspace = o->workspace ? xstrdup(o->workspace) : NULL,
    };
    load_op *op = xcalloc(1, sizeof *op);
    op->svc = svc;
    store_submit(svc->store, &load_type, op);
    store_flush(svc->store);
    /* the setting's MCP servers wait for something that needs them (mcp_need) */
    if (svc->session)
        session_subscribe(svc->session, &settings_listener, svc);
    return svc;
}

void agent_service_free(agent_service *self)
{
    if (!self)
        return;
    for (key_wait *w = self->key_waits; w; w = w->next)
        w->svc = NULL; /* answered when the secret store calls back */
    self->key_waits = NULL;
    for (query_op *op = self->queries, *next; op; op = next) {
        next = op->next;
        free(op);
    }
    self->queries = NULL;
    for (chat *c = self->chats; c; c = c->next) {
        c->awaiting_tools = false; /* the servers stopping below must not send it */
        if (c->run)
            tool_cancel(c->run);
        c->run = NULL;
        cancel_hosted(c);
    }
    if (self->session)
        session_unsubscribe(self->session, &settings_listener, self);
    mcp_stop_all(self); /* after the chats' calls were cancelled: nobody is told */
    llm_client_free(self->llm); /* aborts every request without calling back */
    ecp_job_set_close(self->jobs);
    for (chat *c = self->chats, *next; c; c = next) {
        next = c->next;
        chat_free(c);
    }
    ecp_map_free(self->chat_ids);
    ecp_listeners_free(&self->listeners);
    free(self->workspace);
    free(self);
}

void agent_service_set_workspace(agent_service *self, const char *workspace)
{
    free(self->workspace);
    self->workspace = workspace ? xstrdup(workspace) : NULL;
}
