/* mcp: Model Context Protocol servers as tool sources, over stdio.
 *
 * Each server is a child process speaking newline-delimited JSON-RPC on its
 * stdin and stdout: initialize, notifications/initialized, tools/list (every
 * page), then tools/call for each call the model makes. A server that cannot
 * start, answers initialize with an error, or exits is "failed": its tools are
 * withdrawn at once and every call still waiting on it gets an error result,
 * so a turn never hangs on it. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "session/interface.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
#define MCP_MAX_LINE ((size_t)32 << 20)
#define MCP_OUTPUT_MAX ((size_t)256 << 10)
#define MCP_START_TIMEOUT_MS 30000

typedef enum mcp_state { MCP_STARTING, MCP_RUNNING, MCP_FAILED, MCP_STOPPED } mcp_state;

typedef struct mcp_tool {
    char *name, *description, *schema; /* schema: JSON text */
    bool read_only;
} mcp_tool;

typedef struct mcp_post mcp_post;

typedef enum mcp_request_kind { REQ_INITIALIZE, REQ_LIST, REQ_CALL } mcp_request_kind;

struct mcp_call {
    mcp_call *next;
    mcp_server *server;
    int64_t id;
    mcp_request_kind kind;
    tool_done_fn done; /* REQ_CALL */
    void *ctx;
};

struct mcp_server {
    agent_service *svc; /* NULL once the service is gone */
    mcp_server *next;
    char *name, *command;
    char **args; /* NULL-terminated, args[0] = command */
    char **env;  /* NULL-terminated NAME=value, or NULL: ours */
    mcp_state state;
    char *error;
    uv_process_t process;
    uv_pipe_t in, out;
    uv_timer_t start_timer;
    int open_handles;
    bool exited;
    buf pending;
    int64_t next_id;
    mcp_call *calls;
    /* the streamable HTTP transport (url set): each message is a POST */
    char *url;
    char **headers;           /* NULL-terminated "Name: value" */
    char *session_id;         /* the server's Mcp-Session-Id, once given */
    struct mcp_post *posts;   /* POSTs in flight */
    mcp_tool *tools;
    size_t tool_count;
    bool listing;      /* tools/list pages still coming */
    bool from_setting; /* named by agent.mcpServers: it follows the setting, a client's server does not */
};

/* One message posted to an HTTP server, and the answers it brings. */
struct mcp_post {
    mcp_post *next;
    mcp_server *server;
    llm_request *request;
    int64_t id;               /* of the request it carries; 0 for a notification */
    buf answers;              /* the messages of its answer, NUL-separated, handled once it ends */
};

static const char *const state_names[] = {"starting", "running", "failed", "stopped"};

static void tools_free(mcp_tool *tools, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(tools[i].name);
        free(tools[i].description);
        free(tools[i].schema);
    }
    free(tools);
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void server_free(mcp_server *s)
{
    free(s->name);
    free(s->command);
    strv_free(s->args);
    strv_free(s->env);
    strv_free(s->headers);
    free(s->url);
    free(s->session_id);
    free(s->error);
    buf_free(&s->pending);
    tools_free(s->tools, s->tool_count);
    free(s);
}

static void fill_info(const mcp_server *s, agent_mcp_info *info, const char **names, const char **descriptions,
                      const char **schemas)
{
    for (size_t i = 0; i < s->tool_count; i++) {
        names[i] = s->tools[i].name;
        descriptions[i] = s->tools[i].description;
        schemas[i] = s->tools[i].schema;
    }
    *info = (agent_mcp_info){
        .name = s->name, .command = s->command, .url = s->url, .args = (const char *const *)s->args + 1,
        .status = state_names[s->state], .error = s->error,
        .tool_count = s->state == MCP_RUNNING ? s->tool_count : 0,
        .tool_names = names, .tool_descriptions = descriptions, .tool_schemas = schemas,
    };
}

static void announce(mcp_server *s)
{
    if (!s->svc)
        return;
    size_t n = s->tool_count + 1;
    const char **names = xcalloc(n, sizeof *names), **descriptions = xcalloc(n, sizeof *descriptions),
               **schemas = xcalloc(n, sizeof *schemas);
    agent_mcp_info info;
    fill_info(s, &info, names, descriptions, schemas);
    ECP_EMIT(&s->svc->listeners, agent_listener, on_mcp, &info);
    free(names);
    free(descriptions);
    free(schemas);
    if (s->state != MCP_STARTING)
        agent__mcp_settled(s->svc);
}

/* ----- output ---------------------------------------------------------------------------- */

typedef struct mcp_write {
    uv_write_t req;
    char *data;
} mcp_write;

static void mcp_written(uv_write_t *req, int status)
{
    (void)status;
    mcp_write *w = (mcp_write *)req;
    free(w->data);
    free(w);
}

static void post_message(mcp_server *s, buf *msg, int64_t id);

/* Sends one message; id is that of the request it is (0: a notification or a response). */
static void send_message_id(mcp_server *s, buf *msg, int64_t id)
{
    if (s->url) {
        post_message(s, msg, id);
        return;
    }
    buf_push(msg, '\n');
    if (s->exited || uv_is_closing((uv_handle_t *)&s->in)) {
        buf_free(msg);
        return;
    }
    mcp_write *w = xmalloc(sizeof *w);
    size_t len = msg->len;
    w->data = buf_detach(msg);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&s->in, &b, 1, mcp_written) != 0) {
        free(w->data);
        free(w);
    }
}

static void send_message(mcp_server *s, buf *msg) { send_message_id(s, msg, 0); }

/* Sends a request; params_json is an object's JSON text (NULL: none). */
static mcp_call *send_request(mcp_server *s, mcp_request_kind kind, const char *method, const char *params_json)
{
    mcp_call *c = xcalloc(1, sizeof *c);
    c->server = s;
    c->id = ++s->next_id;
    c->kind = kind;
    c->next = s->calls;
    s->calls = c;
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_string(&w, "jsonrpc", "2.0");
    jw_key_int(&w, "id", c->id);
    jw_key_string(&w, "method", method);
    if (params_json) {
        jw_key(&w, "params");
        jw_raw(&w, params_json, strlen(params_json));
    }
    jw_object_end(&w);
    send_message_id(s, &out, c->id);
    return c;
}

static void send_notification(mcp_server *s, const char *method, const char *params_json)
{
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_string(&w, "jsonrpc", "2.0");
    jw_key_string(&w, "method", method);
    if (params_json) {
        jw_key(&w, "params");
        jw_raw(&w, params_json, strlen(params_json));
    }
    jw_object_end(&w);
    send_message(s, &out);
}

static void unlink_call(mcp_server *s, mcp_call *c)
{
    for (mcp_call **p = &s->calls; *p; p = &(*p)->next)
        if (*p == c) {
            *p = c->next;
            return;
        }
}

/* ----- failure and stop ------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
    mcp_server *s = h->data;
    if (--s->open_handles == 0 && !s->svc)
        server_free(s);
}

static void close_handles(mcp_server *s)
{
    while (s->posts) {
        mcp_post *p = s->posts;
        s->posts = p->next;
        llm_request_cancel(p->request);
        buf_free(&p->answers);
        free(p);
    }
    if (s->url) {
        if (!uv_is_closing((uv_handle_t *)&s->start_timer))
            uv_close((uv_handle_t *)&s->start_timer, handle_closed);
        return;
    }
    uv_handle_t *handles[] = {(uv_handle_t *)&s->in, (uv_handle_t *)&s->out, (uv_handle_t *)&s->start_timer};
    for (size_t i = 0; i < 3; i++)
        if (!uv_is_closing(handles[i]))
            uv_close(handles[i], handle_closed);
    if (!s->exited && !uv_is_closing((uv_handle_t *)&s->process))
        uv_process_kill(&s->process, SIGKILL); /* its stdin is closing too; nothing of its state is ours to keep */
}

/* Every call still waiting gets its error result; tools are withdrawn. */
static void fail(mcp_server *s, mcp_state state, const char *why)
{
    if (s->state == MCP_FAILED || s->state == MCP_STOPPED)
        return;
    s->state = state;
    free(s->error);
    s->error = why ? xstrdup(why) : NULL;
    if (s->svc && why)
        ecp_log(s->svc->log, ECP_LOG_WARN, "MCP server %s: %s", s->name, why);
    close_handles(s);
    while (s->calls) {
        mcp_call *c = s->calls;
        s->calls = c->next;
        if (c->kind == REQ_CALL && c->done) {
            buf out = BUF_INIT;
            buf_appendf(&out, "Error: MCP server %s %s", s->name, why ? why : "was stopped");
            c->done(c->ctx, true, out.data);
            buf_free(&out);
        }
        free(c);
    }
    announce(s);
}

static void on_exit_cb(uv_process_t *p, int64_t status, int term_signal)
{
    mcp_server *s = p->data;
    s->exited = true;
    uv_close((uv_handle_t *)p, handle_closed);
    char why[96];
    if (term_signal)
        snprintf(why, sizeof why, "exited (signal %d)", term_signal);
    else
        snprintf(why, sizeof why, "exited with status %lld", (long long)status);
    fail(s, MCP_FAILED, why);
}

static void start_timed_out(uv_timer_t *t)
{
    mcp_server *s = t->data;
    if (s->state == MCP_STARTING)
        fail(s, MCP_FAILED, "did not finish starting within 30 s");
}

static void output_closed(uv_timer_t *t)
{
    fail(t->data, MCP_FAILED, "closed its output");
}

/* ----- input ------------------------------------------------------------------------------ */

static void list_page(mcp_server *s, const char *cursor)
{
    buf params = BUF_INIT;
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    if (cursor)
        jw_key_string(&w, "cursor", cursor);
    jw_object_end(&w);
    send_request(s, REQ_LIST, "tools/list", params.data);
    buf_free(&params);
}

static void take_tools(mcp_server *s, const json_doc *d, json_ref result)
{
    json_ref tools = json_get(d, result, "tools");
    arena a = ARENA_INIT;
    for (json_ref t = tools != JSON_NO_REF ? json_first(d, tools) : JSON_NO_REF; t != JSON_NO_REF; t = json_next(d, t)) {
        json_ref name = json_get(d, t, "name"), description = json_get(d, t, "description"),
                 schema = json_get(d, t, "inputSchema"), annotations = json_get(d, t, "annotations");
        const char *n, *desc = "";
        if (name == JSON_NO_REF || !json_string(d, name, &a, &n, NULL) || schema == JSON_NO_REF ||
            json_type_of(d, schema) != JSON_OBJECT)
            continue;
        if (description != JSON_NO_REF)
            json_string(d, description, &a, &desc, NULL);
        buf schema_text = BUF_INIT;
        json_writer w;
        jw_init(&w, &schema_text);
        json_write_value(&w, d, schema);
        bool read_only = false;
        json_ref hint = annotations != JSON_NO_REF ? json_get(d, annotations, "readOnlyHint") : JSON_NO_REF;
        if (hint != JSON_NO_REF)
            json_bool(d, hint, &read_only);
        s->tools = xrealloc(s->tools, (s->tool_count + 1) * sizeof *s->tools);
        s->tools[s->tool_count++] = (mcp_tool){xstrdup(n), xstrdup(desc), buf_detach(&schema_text), read_only};
    }
    json_ref next = json_get(d, result, "nextCursor");
    const char *cursor = NULL;
    if (next != JSON_NO_REF && json_string(d, next, &a, &cursor, NULL) && cursor[0]) {
        list_page(s, cursor);
    } else {
        s->state = MCP_RUNNING;
        uv_timer_stop(&s->start_timer);
        announce(s);
    }
    arena_free(&a);
}

/* A tools/call result as the tool's output: its text contents, one after another. */
static void call_output(const json_doc *d, json_ref result, buf *out, bool *error)
{
    json_ref is_error = json_get(d, result, "isError"), content = json_get(d, result, "content");
    *error = false;
    if (is_error != JSON_NO_REF)
        json_bool(d, is_error, error);
    if (*error)
        buf_append_str(out, "Error: ");
    arena a = ARENA_INIT;
    for (json_ref c = content != JSON_NO_REF ? json_first(d, content) : JSON_NO_REF; c != JSON_NO_REF; c = json_next(d, c)) {
        json_ref type = json_get(d, c, "type");
        const char *text;
        size_t len;
        if (out->len > (*error ? 7u : 0u))
            buf_push(out, '\n');
        if (type != JSON_NO_REF && json_string_eq(d, type, "text") && json_get(d, c, "text") != JSON_NO_REF &&
            json_string(d, json_get(d, c, "text"), &a, &text, &len)) {
            buf_append(out, text, len);
        } else if (type != JSON_NO_REF && json_string_eq(d, type, "resource")) {
            json_ref res = json_get(d, c, "resource");
            json_ref t = res != JSON_NO_REF ? json_get(d, res, "text") : JSON_NO_REF;
            if (t != JSON_NO_REF && json_string(d, t, &a, &text, &len))
                buf_append(out, text, len);
            else
                buf_append_str(out, "[a binary resource]");
        } else {
            const char *kind = "content";
            if (type != JSON_NO_REF)
                json_string(d, type, &a, &kind, NULL);
            buf_appendf(out, "[%s content]", kind);
        }
        if (out->len > MCP_OUTPUT_MAX) {
            out->len = MCP_OUTPUT_MAX;
            out->data[out->len] = '\0';
            buf_append_str(out, "\n[output cut]");
            break;
        }
    }
    if (!out->len)
        buf_append_str(out, "(no output)");
    arena_free(&a);
}

static void handle_message(mcp_server *s, const char *line, size_t len)
{
    json_doc d = {0};
    if (json_doc_parse(&d, line, len, NULL) < 0 || json_type_of(&d, json_root(&d)) != JSON_OBJECT) {
        json_doc_free(&d);
        if (s->svc)
            ecp_log(s->svc->log, ECP_LOG_DEBUG, "MCP server %s wrote a line that is not a JSON object", s->name);
        return;
    }
    json_ref root = json_root(&d);
    json_ref id = json_get(&d, root, "id"), method = json_get(&d, root, "method");
    int64_t n;
    if (method != JSON_NO_REF) {
        /* a request of the server's (roots, sampling, ping): none is offered but ping */
        if (id != JSON_NO_REF) {
            buf out = BUF_INIT;
            json_writer w;
            jw_init(&w, &out);
            jw_object_begin(&w);
            jw_key_string(&w, "jsonrpc", "2.0");
            jw_key(&w, "id");
            json_write_value(&w, &d, id);
            if (json_string_eq(&d, method, "ping")) {
                jw_key(&w, "result");
                jw_object_begin(&w);
                jw_object_end(&w);
            } else {
                jw_key(&w, "error");
                jw_object_begin(&w);
                jw_key_int(&w, "code", -32601);
                jw_key_string(&w, "message", "Method not found");
                jw_object_end(&w);
            }
            jw_object_end(&w);
            send_message(s, &out);
        } else if (json_string_eq(&d, method, "notifications/tools/list_changed") && s->state == MCP_RUNNING) {
            tools_free(s->tools, s->tool_count);
            s->tools = NULL;
            s->tool_count = 0;
            s->state = MCP_STARTING;
            list_page(s, NULL);
        }
        json_doc_free(&d);
        return;
    }
    if (id == JSON_NO_REF || !json_int64(&d, id, &n)) {
        json_doc_free(&d);
        return;
    }
    mcp_call *c = s->calls;
    while (c && c->id != n)
        c = c->next;
    if (!c) {
        json_doc_free(&d);
        return; /* a call cancelled since */
    }
    unlink_call(s, c);
    json_ref result = json_get(&d, root, "result"), error = json_get(&d, root, "error");
    arena a = ARENA_INIT;
    const char *message = "an error without a message";
    if (error != JSON_NO_REF && json_get(&d, error, "message") != JSON_NO_REF)
        json_string(&d, json_get(&d, error, "message"), &a, &message, NULL);
    if (c->kind == REQ_CALL) {
        buf out = BUF_INIT;
        bool failed = true;
        if (error != JSON_NO_REF || result == JSON_NO_REF)
            buf_appendf(&out, "Error: %s", message);
        else
            call_output(&d, result, &out, &failed);
        c->done(c->ctx, failed, out.data);
        buf_free(&out);
    } else if (error != JSON_NO_REF || result == JSON_NO_REF) {
        buf why = BUF_INIT;
        buf_appendf(&why, "%s failed: %s", c->kind == REQ_INITIALIZE ? "initialize" : "tools/list", message);
        free(c);
        fail(s, MCP_FAILED, why.data);
        buf_free(&why);
        arena_free(&a);
        json_doc_free(&d);
        return;
    } else if (c->kind == REQ_INITIALIZE) {
        send_notification(s, "notifications/initialized", NULL);
        list_page(s, NULL);
    } else {
        take_tools(s, &d, result);
    }
    free(c);
    arena_free(&a);
    json_doc_free(&d);
}

/* Kept until the POST ends: handling a message may stop the server, which
 * must not cancel the transfer whose callback this is. */
static void post_answer(void *ctx, const char *json, size_t len)
{
    mcp_post *p = ctx;
    buf_append(&p->answers, json, len);
    buf_push(&p->answers, '\0');
}

static void post_finished(void *ctx, const char *error, const llm_answer *answer)
{
    mcp_post *p = ctx;
    mcp_server *s = p->server;
    for (mcp_post **q = &s->posts; *q; q = &(*q)->next)
        if (*q == p) {
            *q = p->next;
            break;
        }
    if (answer->session_id && !s->session_id)
        s->session_id = xstrdup(answer->session_id);
    int64_t id = p->id;
    buf answers = p->answers;
    free(p);
    for (size_t at = 0; at < answers.len && s->state != MCP_FAILED && s->state != MCP_STOPPED;) {
        size_t len = strlen(answers.data + at);
        handle_message(s, answers.data + at, len);
        at += len + 1;
    }
    buf_free(&answers);
    if (!error || s->state == MCP_FAILED || s->state == MCP_STOPPED)
        return;
    static const char prefix[] = "LLM request failed: ";
    const char *why = strncmp(error, prefix, sizeof prefix - 1) == 0 ? error + sizeof prefix - 1 : error;
    mcp_call *c = s->calls;
    while (c && c->id != id)
        c = c->next;
    if (!c)
        return; /* a notification, or a request answered meanwhile */
    if (c->kind != REQ_CALL) {
        buf b = BUF_INIT;
        buf_appendf(&b, "%s failed: %s", c->kind == REQ_INITIALIZE ? "initialize" : "tools/list", why);
        fail(s, MCP_FAILED, b.data);
        buf_free(&b);
        return;
    }
    unlink_call(s, c);
    buf out = BUF_INIT;
    buf_appendf(&out, "Error: %s", why);
    c->done(c->ctx, true, out.data);
    buf_free(&out);
    free(c);
}

static const llm_callbacks post_callbacks = {.on_message = post_answer, .on_finish = post_finished};

static void post_message(mcp_server *s, buf *msg, int64_t id)
{
    if (!s->svc || s->state == MCP_FAILED || s->state == MCP_STOPPED) {
        buf_free(msg);
        return;
    }
    size_t n = 0;
    while (s->headers && s->headers[n])
        n++;
    const char **headers = xcalloc(n + 3, sizeof *headers);
    for (size_t i = 0; i < n; i++)
        headers[i] = s->headers[i];
    buf session = BUF_INIT;
    headers[n++] = "MCP-Protocol-Version: " MCP_PROTOCOL_VERSION;
    if (s->session_id) {
        buf_appendf(&session, "Mcp-Session-Id: %s", s->session_id);
        headers[n++] = session.data;
    }
    mcp_post *p = xcalloc(1, sizeof *p);
    p->server = s;
    p->id = id;
    p->next = s->posts;
    s->posts = p;
    llm_endpoint ep = {.api = LLM_API_JSONRPC, .url = s->url, .headers = headers};
    p->request = llm_request_start(s->svc->llm, &ep, msg->data, &post_callbacks, p);
    free(headers);
    buf_free(&session);
    buf_free(msg);
}

static void mcp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void mcp_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    mcp_server *s = stream->data;
    if (n < 0) {
        free(b->base);
        uv_read_stop(stream);
        /* its exit, which says more, is most likely on its way */
        if (!s->exited && !uv_is_closing((uv_handle_t *)&s->start_timer))
            uv_timer_start(&s->start_timer, output_closed, 1000, 0);
        return;
    }
    const char *p = b->base, *end = b->base + n;
    while (p < end && s->state != MCP_FAILED && s->state != MCP_STOPPED) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
            buf_append(&s->pending, p, (size_t)(end - p));
            if (s->pending.len > MCP_MAX_LINE)
                fail(s, MCP_FAILED, "wrote a message longer than 32 MiB");
            break;
        }
        if (s->pending.len) {
            buf_append(&s->pending, p, (size_t)(nl - p));
            char *line = buf_detach(&s->pending);
            handle_message(s, line, strlen(line));
            free(line);
        } else if (nl > p) {
            handle_message(s, p, (size_t)(nl - p));
        }
        p = nl + 1;
    }
    free(b->base);
}

/* ----- the service's side ------------------------------------------------------------------- */

static mcp_server *find_server(agent_service *svc, const char *name)
{
    for (mcp_server *s = svc->mcp_servers; s; s = s->next)
        if (strcmp(s->name, name) == 0)
            return s;
    return NULL;
}

/* Takes the server out of the service's list and stops it; it frees itself
 * once its handles have closed. */
static void detach(agent_service *svc, mcp_server *s)
{
    for (mcp_server **p = &svc->mcp_servers; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    fail(s, MCP_STOPPED, NULL);
    s->svc = NULL;
    if (s->open_handles == 0)
        server_free(s);
}

static bool valid_name(const char *name)
{
    if (!name[0] || strlen(name) > 40)
        return false;
    for (const char *p = name; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              (*p == '_' && p[1] != '_')))
            return false;
    return true;
}

static bool same_strings(char **have, const char *const *want, size_t count)
{
    size_t n = 0;
    while (have && have[n])
        n++;
    if (n != count)
        return false;
    for (size_t i = 0; i < count; i++)
        if (strcmp(have[i], want[i]) != 0)
            return false;
    return true;
}

static bool same_config(const mcp_server *s, const agent_mcp_config *c)
{
    if (c->url && c->url[0])
        return s->url && strcmp(s->url, c->url) == 0 && same_strings(s->headers, c->headers, c->header_count);
    if (s->url || strcmp(s->command, c->command) != 0 || !same_strings(s->args + 1, c->args, c->arg_count))
        return false;
    /* the environment given, which leads s->env when there is one */
    if (!c->env_count)
        return !s->env;
    for (size_t i = 0; i < c->env_count; i++)
        if (!s->env || !s->env[i] || strcmp(s->env[i], c->env[i]) != 0)
            return false;
    return true;
}

static void send_initialize(mcp_server *s)
{
    buf params = BUF_INIT;
    buf_appendf(&params, "{\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"ecpd\","
                         "\"version\":\"1\"}}", MCP_PROTOCOL_VERSION);
    send_request(s, REQ_INITIALIZE, "initialize", params.data);
    buf_free(&params);
}

static int start_server(agent_service *self, const agent_mcp_config *config, bool from_setting, ecp_error *err)
{
    if (!config->name || !valid_name(config->name))
        return ecp_error_set(err, ECP_EINVAL, "an MCP server's name is 1 to 40 letters, digits, '-' or single '_'");
    if ((!config->command || !config->command[0]) && (!config->url || !config->url[0]))
        return ecp_error_set(err, ECP_EINVAL, "MCP server %s: a command (stdio) or a url (HTTP) is needed",
                             config->name);
    if (config->url && strncmp(config->url, "http://", 7) != 0 && strncmp(config->url, "https://", 8) != 0)
        return ecp_error_set(err, ECP_EINVAL, "MCP server %s: the url must be http:// or https://", config->name);
    mcp_server *old = find_server(self, config->name);
    if (old && (old->state == MCP_STARTING || old->state == MCP_RUNNING) && same_config(old, config)) {
        old->from_setting = from_setting; /* a client naming it takes it over: the setting lets it be */
        return 0; /* each new ACP session names the same servers: they go on serving */
    }
    if (old)
        detach(self, old);
    mcp_server *s = xcalloc(1, sizeof *s);
    s->svc = self;
    s->from_setting = from_setting;
    s->name = xstrdup(config->name);
    if (config->url && config->url[0]) {
        /* HTTP: no process; the first POST is initialize */
        s->url = xstrdup(config->url);
        s->args = xcalloc(2, sizeof *s->args); /* no command, no arguments */
        s->headers = xcalloc(config->header_count + 1, sizeof *s->headers);
        for (size_t i = 0; i < config->header_count; i++)
            s->headers[i] = xstrdup(config->headers[i]);
        s->exited = true;
        s->next = self->mcp_servers;
        self->mcp_servers = s;
        uv_timer_init(self->loop, &s->start_timer);
        s->start_timer.data = s;
        s->open_handles = 1;
        uv_timer_start(&s->start_timer, start_timed_out, MCP_START_TIMEOUT_MS, 0);
        announce(s);
        send_initialize(s);
        return 0;
    }
    s->command = xstrdup(config->command);
    s->args = xcalloc(config->arg_count + 2, sizeof *s->args);
    s->args[0] = xstrdup(config->command);
    for (size_t i = 0; i < config->arg_count; i++)
        s->args[i + 1] = xstrdup(config->args[i]);
    if (config->env_count) {
        /* ours, with the configured variables on top */
        extern char **environ;
        size_t base = 0;
        while (environ[base])
            base++;
        s->env = xcalloc(base + config->env_count + 1, sizeof *s->env);
        size_t k = 0;
        for (size_t i = 0; i < config->env_count; i++)
            s->env[k++] = xstrdup(config->env[i]);
        for (size_t i = 0; i < base; i++) {
            size_t name_len = strcspn(environ[i], "=");
            bool overridden = false;
            for (size_t j = 0; j < config->env_count && !overridden; j++)
                overridden = strncmp(config->env[j], environ[i], name_len) == 0 && config->env[j][name_len] == '=';
            if (!overridden)
                s->env[k++] = xstrdup(environ[i]);
        }
    }
    s->next = self->mcp_servers;
    self->mcp_servers = s;

    uv_pipe_init(self->loop, &s->in, 0);
    uv_pipe_init(self->loop, &s->out, 0);
    uv_timer_init(self->loop, &s->start_timer);
    s->in.data = s->out.data = s->start_timer.data = s->process.data = s;
    s->open_handles = 4;
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&s->in},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&s->out},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t o = {
        .file = s->command, .args = s->args, .env = s->env, .cwd = self->workspace, .exit_cb = on_exit_cb,
        .stdio = stdio, .stdio_count = 3,
    };
    int rc = uv_spawn(self->loop, &s->process, &o);
    if (rc < 0) {
        s->exited = true;
        uv_close((uv_handle_t *)&s->process, handle_closed);
        buf why = BUF_INIT;
        buf_appendf(&why, "could not start %s: %s", s->command, uv_strerror(rc));
        fail(s, MCP_FAILED, why.data);
        buf_free(&why);
        return 0;
    }
    uv_read_start((uv_stream_t *)&s->out, mcp_alloc, mcp_read);
    uv_timer_start(&s->start_timer, start_timed_out, MCP_START_TIMEOUT_MS, 0);
    announce(s);
    send_initialize(s);
    return 0;
}

int agent_mcp_start(agent_service *self, const agent_mcp_config *config, ecp_error *err)
{
    mcp_need(self);
    return start_server(self, config, false, err);
}

void mcp_need(agent_service *svc)
{
    if (svc->mcp_following)
        return;
    svc->mcp_following = true;
    if (svc->session)
        mcp_follow_setting(svc, session_setting_json(svc->session, "agent.mcpServers"));
}

bool mcp_starting(agent_service *svc)
{
    for (mcp_server *s = svc->mcp_servers; s; s = s->next)
        if (s->from_setting && s->state == MCP_STARTING)
            return true;
    return false;
}

/* One server of agent.mcpServers as a configuration; its strings live in a. False when it is not of the
 * setting's form (the schema refuses such a value, so only a hand-broken store gets here). */
static bool setting_config(const json_doc *d, json_ref key, arena *a, agent_mcp_config *config)
{
    json_ref server = key + 1;
    const char *name;
    *config = (agent_mcp_config){0};
    if (!json_string(d, key, a, &name, NULL) || json_type_of(d, server) != JSON_OBJECT)
        return false;
    config->name = name;
    json_ref command = json_get(d, server, "command"), url = json_get(d, server, "url"),
             args = json_get(d, server, "args"), pairs = json_get(d, server, url != JSON_NO_REF ? "headers" : "env");
    if (url != JSON_NO_REF ? !json_string(d, url, a, &config->url, NULL)
                           : command == JSON_NO_REF || !json_string(d, command, a, &config->command, NULL))
        return false;
    if ((args != JSON_NO_REF && json_type_of(d, args) != JSON_ARRAY) ||
        (pairs != JSON_NO_REF && json_type_of(d, pairs) != JSON_OBJECT))
        return false;
    size_t argc = args != JSON_NO_REF && url == JSON_NO_REF ? json_length(d, args) : 0,
           pairc = pairs != JSON_NO_REF ? json_length(d, pairs) : 0;
    const char **argv = arena_calloc(a, (argc + 1) * sizeof *argv), **pairv = arena_calloc(a, (pairc + 1) * sizeof *pairv);
    size_t k = 0;
    for (json_ref e = argc ? json_first(d, args) : JSON_NO_REF; e != JSON_NO_REF; e = json_next(d, e))
        if (!json_string(d, e, a, &argv[k++], NULL))
            return false;
    k = 0;
    for (json_ref n = pairc ? json_first(d, pairs) : JSON_NO_REF; n != JSON_NO_REF; n = json_next(d, n)) {
        const char *field, *value;
        if (!json_string(d, n, a, &field, NULL) || !json_string(d, n + 1, a, &value, NULL))
            return false;
        pairv[k++] = arena_sprintf(a, url != JSON_NO_REF ? "%s: %s" : "%s=%s", field, value);
    }
    if (url != JSON_NO_REF) {
        config->headers = pairv;
        config->header_count = k;
    } else {
        config->args = argv;
        config->arg_count = argc;
        config->env = pairv;
        config->env_count = k;
    }
    return true;
}

void mcp_follow_setting(agent_service *svc, const char *value_json)
{
    json_doc d = {0};
    bool parsed = value_json && json_doc_parse(&d, value_json, strlen(value_json), NULL) == 0 &&
                  json_type_of(&d, json_root(&d)) == JSON_OBJECT;
    json_ref root = parsed ? json_root(&d) : JSON_NO_REF;
    /* the setting's servers it no longer names go */
    for (mcp_server *s = svc->mcp_servers, *next; s; s = next) {
        next = s->next;
        if (s->from_setting && (root == JSON_NO_REF || json_get(&d, root, s->name) == JSON_NO_REF))
            detach(svc, s);
    }
    arena a = ARENA_INIT;
    for (json_ref k = root != JSON_NO_REF ? json_first(&d, root) : JSON_NO_REF; k != JSON_NO_REF; k = json_next(&d, k)) {
        agent_mcp_config config;
        if (!setting_config(&d, k, &a, &config)) {
            ecp_log(svc->log, ECP_LOG_WARN, "agent.mcpServers: a server is not {command, ...} or {url, ...}");
            continue;
        }
        mcp_server *old = find_server(svc, config.name);
        if (old && !old->from_setting) {
            ecp_log(svc->log, ECP_LOG_INFO, "agent.mcpServers: %s was started by a client and stays as it is",
                    config.name);
            continue;
        }
        if (old && same_config(old, &config))
            continue; /* unchanged: running, or failed until its configuration changes */
        ecp_error err = {0};
        if (start_server(svc, &config, true, &err) < 0)
            ecp_log(svc->log, ECP_LOG_WARN, "agent.mcpServers: %s", err.message);
    }
    arena_free(&a);
    json_doc_free(&d);
}

int agent_mcp_stop(agent_service *self, const char *name, ecp_error *err)
{
    mcp_server *s = find_server(self, name);
    if (!s)
        return ecp_error_set(err, ECP_ENOTFOUND, "no MCP server %s", name);
    detach(self, s);
    return 0;
}

void agent_mcp_list(agent_service *self, void (*fn)(void *ctx, const agent_mcp_info *info), void *ctx)
{
    mcp_need(self);
    for (mcp_server *s = self->mcp_servers; s; s = s->next) {
        size_t n = s->tool_count + 1;
        const char **names = xcalloc(n, sizeof *names), **descriptions = xcalloc(n, sizeof *descriptions),
                   **schemas = xcalloc(n, sizeof *schemas);
        agent_mcp_info info;
        fill_info(s, &info, names, descriptions, schemas);
        fn(ctx, &info);
        free(names);
        free(descriptions);
        free(schemas);
    }
}

void mcp_stop_all(agent_service *svc)
{
    while (svc->mcp_servers)
        detach(svc, svc->mcp_servers);
}

void mcp_each_tool(agent_service *svc, void (*fn)(void *ctx, const char *full_name, const char *description,
                                                  const char *schema),
                   void *ctx)
{
    buf name = BUF_INIT;
    for (mcp_server *s = svc->mcp_servers; s; s = s->next) {
        if (s->state != MCP_RUNNING)
            continue;
        for (size_t i = 0; i < s->tool_count; i++) {
            buf_clear(&name);
            buf_appendf(&name, "mcp__%s__%s", s->name, s->tools[i].name);
            fn(ctx, name.data, s->tools[i].description, s->tools[i].schema);
        }
    }
    buf_free(&name);
}

/* "mcp__<server>__<tool>" of a running server. */
static const mcp_tool *find_tool(agent_service *svc, const char *full_name, mcp_server **server)
{
    if (strncmp(full_name, "mcp__", 5) != 0)
        return NULL;
    const char *rest = full_name + 5, *sep = strstr(rest, "__");
    if (!sep)
        return NULL;
    for (mcp_server *s = svc->mcp_servers; s; s = s->next) {
        if (s->state != MCP_RUNNING || strlen(s->name) != (size_t)(sep - rest) || strncmp(s->name, rest, (size_t)(sep - rest)) != 0)
            continue;
        for (size_t i = 0; i < s->tool_count; i++)
            if (strcmp(s->tools[i].name, sep + 2) == 0) {
                *server = s;
                return &s->tools[i];
            }
    }
    return NULL;
}

bool mcp_tool_known(agent_service *svc, const char *full_name, bool *read_only)
{
    mcp_server *s;
    const mcp_tool *t = find_tool(svc, full_name, &s);
    if (t && read_only)
        *read_only = t->read_only;
    return t != NULL;
}

mcp_call *mcp_call_start(agent_service *svc, const char *full_name, const char *arguments, tool_done_fn done,
                         void *ctx, ecp_error *err)
{
    mcp_server *s;
    const mcp_tool *t = find_tool(svc, full_name, &s);
    if (!t) {
        ecp_error_set(err, ECP_ENOTFOUND, "the MCP tool %s is not available (its server stopped)", full_name);
        return NULL;
    }
    buf params = BUF_INIT;
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key_string(&w, "name", t->name);
    jw_key(&w, "arguments");
    jw_raw(&w, arguments, strlen(arguments));
    jw_object_end(&w);
    mcp_call *c = send_request(s, REQ_CALL, "tools/call", params.data);
    buf_free(&params);
    c->done = done;
    c->ctx = ctx;
    return c;
}

void mcp_call_cancel(mcp_call *c)
{
    mcp_server *s = c->server;
    char params[96];
    snprintf(params, sizeof params, "{\"requestId\":%lld,\"reason\":\"stopped by the user\"}", (long long)c->id);
    send_notification(s, "notifications/cancelled", params);
    unlink_call(s, c);
    free(c);
}
