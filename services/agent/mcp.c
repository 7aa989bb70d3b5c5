/* mcp: Model Context Protocol servers as tool sources, over stdio or streamable HTTP.
 *
 * Each server is a child process speaking newline-delimited JSON-RPC on its
 * stdin and stdout (core/process.h), or a URL each message is POSTed to; the
 * JSON-RPC itself is core/peer.h's. The conversation: initialize,
 * notifications/initialized, tools/list (every page), then tools/call for each
 * call the model makes. A server that cannot start, answers initialize with an
 * error, or exits is "failed": its tools are withdrawn at once and every call
 * still waiting on it gets an error result, so a turn never hangs on it. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "peer.h"
#include "process.h"
#include "session/interface.h"

#define MCP_PROTOCOL_VERSION "2025-06-18"
#define MCP_MAX_LINE ((size_t)32 << 20)
#define MCP_OUTPUT_MAX ((size_t)256 << 10)
#define MCP_START_TIMEOUT_MS 30000
/* A stopped server that has not exited this long after SIGTERM is killed. */
#define MCP_STOP_GRACE_MS 2000

typedef enum mcp_state { MCP_STARTING, MCP_RUNNING, MCP_FAILED, MCP_STOPPED } mcp_state;

typedef struct mcp_tool {
    char *name, *description, *schema; /* schema: JSON text */
    bool read_only;
} mcp_tool;

typedef struct mcp_post mcp_post;

typedef enum mcp_request_kind { REQ_INITIALIZE, REQ_LIST, REQ_CALL } mcp_request_kind;

/* A request of ours, until the peer completes it. */
struct mcp_call {
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
    char **env;  /* NULL-terminated NAME=value added to ours, or NULL */
    mcp_state state;
    char *error;
    ecp_peer *peer;
    ecp_process *process;     /* the stdio transport */
    uv_timer_t start_timer;
    bool timer_closed;
    /* the streamable HTTP transport (url set): each message is a POST */
    char *url;
    char **headers;           /* NULL-terminated "Name: value" */
    char *session_id;         /* the server's Mcp-Session-Id, once given */
    struct mcp_post *posts;   /* POSTs in flight */
    mcp_tool *tools;
    size_t tool_count;
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
        free_each(tools[i].name, tools[i].description, tools[i].schema);
    }
    free(tools);
}

static void server_free(mcp_server *s)
{
    ecp_peer_free(s->peer);
    free_strv(s->args);
    free_strv(s->env);
    free_strv(s->headers);
    free_each(s->name, s->command, s->url, s->session_id, s->error);
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
    free_each(names, descriptions, schemas);
    if (s->state != MCP_STARTING)
        agent__mcp_settled(s->svc);
}

static bool stopped(const mcp_server *s) { return s->state == MCP_FAILED || s->state == MCP_STOPPED; }

/* ----- failure and stop ------------------------------------------------------------------- */

static void timer_closed(uv_handle_t *h)
{
    mcp_server *s = h->data;
    s->timer_closed = true;
    if (!s->svc)
        server_free(s);
}

static void close_transport(mcp_server *s)
{
    while (s->posts) {
        mcp_post *p = s->posts;
        s->posts = p->next;
        llm_request_cancel(p->request);
        buf_free(&p->answers);
        free(p);
    }
    /* its stdin closes and it is asked to stop: nothing of its state is ours to keep */
    ecp_process_close(s->process);
    s->process = NULL;
    if (!uv_is_closing((uv_handle_t *)&s->start_timer))
        uv_close((uv_handle_t *)&s->start_timer, timer_closed);
}

/* Every call still waiting gets its error result; tools are withdrawn. */
static void fail(mcp_server *s, mcp_state state, const char *why)
{
    if (stopped(s))
        return;
    s->state = state;
    free(s->error);
    s->error = why ? xstrdup(why) : NULL;
    if (s->svc && why)
        ecp_log(s->svc->log, ECP_LOG_WARN, "MCP server %s: %s", s->name, why);
    close_transport(s);
    ecp_peer_close(s->peer, why ? why : "was stopped");
    announce(s);
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

/* ----- requests ------------------------------------------------------------------------------ */

static void answered(void *ctx, int64_t id, const ecp_peer_answer *answer);

/* Sends a request; params_json is an object's JSON text (NULL: none). */
static mcp_call *send_request(mcp_server *s, mcp_request_kind kind, const char *method, const char *params_json,
                              tool_done_fn done, void *ctx)
{
    mcp_call *c = xmalloc(sizeof *c);
    *c = (mcp_call){.server = s, .kind = kind, .done = done, .ctx = ctx};
    c->id = ecp_peer_call(s->peer, method, params_json, 0, answered, c);
    if (!c->id) {
        free(c);
        return NULL;
    }
    return c;
}

static void list_page(mcp_server *s, const char *cursor)
{
    buf params = BUF_INIT;
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    if (cursor)
        jw_key_string(&w, "cursor", cursor);
    jw_object_end(&w);
    send_request(s, REQ_LIST, "tools/list", params.data, NULL, NULL);
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

static void answered(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    mcp_call *c = ctx;
    mcp_server *s = c->server;
    (void)id;
    if (answer->status == ECP_ECANCELED) {
        free(c); /* withdrawn by mcp_call_cancel: its caller has let go */
        return;
    }
    bool failed = answer->status != 0 || answer->error != JSON_NO_REF || answer->result == JSON_NO_REF;
    if (c->kind == REQ_CALL) {
        buf out = BUF_INIT;
        if (answer->status != 0 && stopped(s))
            buf_appendf(&out, "Error: MCP server %s %s", s->name, answer->message);
        else if (failed)
            buf_appendf(&out, "Error: %s", answer->message);
        else
            call_output(answer->doc, answer->result, &out, &failed);
        c->done(c->ctx, failed, out.data);
        buf_free(&out);
    } else if (failed) {
        if (!stopped(s)) {
            buf why = BUF_INIT;
            buf_appendf(&why, "%s failed: %s", c->kind == REQ_INITIALIZE ? "initialize" : "tools/list",
                        answer->message);
            fail(s, MCP_FAILED, why.data);
            buf_free(&why);
        }
    } else if (c->kind == REQ_INITIALIZE) {
        ecp_peer_notify(s->peer, "notifications/initialized", NULL);
        list_page(s, NULL);
    } else {
        take_tools(s, answer->doc, answer->result);
    }
    free(c);
}

/* ----- what the server sends ------------------------------------------------------------------ */

/* A request of the server's (roots, sampling, ping): none is offered but ping. */
static void on_request(void *ctx, ecp_peer_request *request, const char *method, const json_doc *d, json_ref params)
{
    (void)ctx, (void)d, (void)params;
    if (strcmp(method, "ping") == 0)
        ecp_peer_respond(request, "{}");
    else
        ecp_peer_respond_error(request, -32601, "Method not found");
}

static void on_notification(void *ctx, const char *method, const json_doc *d, json_ref params)
{
    mcp_server *s = ctx;
    (void)d, (void)params;
    if (strcmp(method, "notifications/tools/list_changed") == 0 && s->state == MCP_RUNNING) {
        tools_free(s->tools, s->tool_count);
        s->tools = NULL;
        s->tool_count = 0;
        s->state = MCP_STARTING;
        list_page(s, NULL);
    }
}

static void on_problem(void *ctx, ecp_peer_problem problem, const char *detail)
{
    mcp_server *s = ctx;
    if (problem == ECP_PEER_OVERSIZED)
        fail(s, MCP_FAILED, "wrote a message longer than 32 MiB");
    else if (s->svc && problem == ECP_PEER_MALFORMED)
        ecp_log(s->svc->log, ECP_LOG_DEBUG, "MCP server %s wrote a message that is not JSON-RPC: %s", s->name, detail);
}

static void send_cancel(void *ctx, ecp_peer *peer, int64_t id)
{
    (void)ctx;
    char params[96];
    snprintf(params, sizeof params, "{\"requestId\":%" PRId64 ",\"reason\":\"stopped by the user\"}", id);
    ecp_peer_notify(peer, "notifications/cancelled", params);
}

/* ----- stdio ------------------------------------------------------------------------------------- */

static void process_output(void *ctx, const char *data, size_t len)
{
    mcp_server *s = ctx;
    ecp_peer_feed(s->peer, data, len);
}

static void process_output_end(void *ctx, int status)
{
    mcp_server *s = ctx;
    (void)status;
    /* its exit, which says more, is most likely on its way */
    if (!stopped(s) && !uv_is_closing((uv_handle_t *)&s->start_timer))
        uv_timer_start(&s->start_timer, output_closed, 1000, 0);
}

static void process_exited(void *ctx, int64_t status, int term_signal)
{
    mcp_server *s = ctx;
    char why[96];
    if (term_signal)
        snprintf(why, sizeof why, "exited (signal %d)", term_signal);
    else
        snprintf(why, sizeof why, "exited with status %lld", (long long)status);
    fail(s, MCP_FAILED, why);
}

/* ----- streamable HTTP ----------------------------------------------------------------------------- */

/* Kept until the POST ends: handling a message may stop the server, which
 * must not cancel the transfer whose callback this is. */
static void post_answer(void *ctx, const char *json, size_t len)
{
    mcp_post *p = ctx;
    buf_append(&p->answers, json, len);
    buf_push(&p->answers, '\0');
}

static void post_finished(void *ctx, const char *error, llm_answer *answer)
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
    for (size_t at = 0; at < answers.len && !stopped(s);) {
        size_t len = strlen(answers.data + at);
        ecp_peer_feed_message(s->peer, answers.data + at, len);
        at += len + 1;
    }
    buf_free(&answers);
    if (!error || stopped(s) || !id)
        return;
    static const char prefix[] = "LLM request failed: ";
    const char *why = strncmp(error, prefix, sizeof prefix - 1) == 0 ? error + sizeof prefix - 1 : error;
    ecp_peer_fail_request(s->peer, id, why); /* unless it was answered meanwhile */
}

static const llm_callbacks post_callbacks = {.on_message = post_answer, .on_finish = post_finished};

static void post_message(mcp_server *s, const char *data, size_t len, int64_t id)
{
    if (!s->svc || stopped(s))
        return;
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
    buf body = BUF_INIT;
    buf_append(&body, data, len);
    llm_endpoint ep = {.api = LLM_API_JSONRPC, .url = s->url, .headers = headers};
    p->request = llm_request_start(agent__llm(s->svc, NULL), &ep, body.data, &post_callbacks, p); /* made at the start */
    free(headers);
    buf_free(&session);
    buf_free(&body);
}

static void write_message(void *ctx, const char *data, size_t len, int64_t request_id)
{
    mcp_server *s = ctx;
    if (s->url)
        post_message(s, data, len, request_id);
    else if (s->process)
        ecp_process_write(s->process, data, len);
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
    if (s->timer_closed)
        server_free(s);
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
    send_request(s, REQ_INITIALIZE, "initialize", params.data, NULL, NULL);
    buf_free(&params);
}

static int start_server(agent_service *self, const agent_mcp_config *config, bool from_setting, ecp_error *err)
{
    if (!config->name || !session_mcp_server_name_valid(config->name))
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
    bool http = config->url && config->url[0];
    ecp_peer_options options = {.framing = FRAMING_NEWLINE, .messages = http, .max_message = MCP_MAX_LINE};
    ecp_peer_handlers handlers = {
        .ctx = s, .write = write_message, .on_request = on_request, .on_notification = on_notification,
        .send_cancel = send_cancel, .on_problem = on_problem,
    };
    s->peer = ecp_peer_new(self->loop, &options, &handlers);
    uv_timer_init(self->loop, &s->start_timer);
    s->start_timer.data = s;
    s->next = self->mcp_servers;
    self->mcp_servers = s;
    if (http) {
        /* no process; the first POST is initialize */
        s->url = xstrdup(config->url);
        s->args = xcalloc(2, sizeof *s->args); /* no command, no arguments */
        s->headers = xcalloc(config->header_count + 1, sizeof *s->headers);
        for (size_t i = 0; i < config->header_count; i++)
            s->headers[i] = xstrdup(config->headers[i]);
        ecp_error load_err = {0};
        if (!agent__llm(self, &load_err)) {
            fail(s, MCP_FAILED, load_err.message); /* no libcurl: no HTTP */
            return 0;
        }
    } else {
        s->command = xstrdup(config->command);
        s->args = xcalloc(config->arg_count + 2, sizeof *s->args);
        s->args[0] = xstrdup(config->command);
        for (size_t i = 0; i < config->arg_count; i++)
            s->args[i + 1] = xstrdup(config->args[i]);
        if (config->env_count) {
            s->env = xcalloc(config->env_count + 1, sizeof *s->env);
            for (size_t i = 0; i < config->env_count; i++)
                s->env[i] = xstrdup(config->env[i]);
        }
        ecp_process_options o = {
            .argv = (const char *const *)s->args, .env_add = (const char *const *)s->env, .cwd = self->workspace,
            .pipe_stdin = true, .pipe_stdout = true, .stderr_to = ECP_STDERR_INHERIT, .grace_ms = MCP_STOP_GRACE_MS,
            .ctx = s, .on_output = process_output, .on_output_end = process_output_end, .on_exit = process_exited,
        };
        ecp_error spawn_err = {0};
        s->process = ecp_process_start(self->loop, &o, &spawn_err);
        if (!s->process) {
            buf why = BUF_INIT;
            const char *reason = strstr(spawn_err.message, ": ");
            buf_appendf(&why, "could not start %s: %s", s->command, reason ? reason + 2 : spawn_err.message);
            fail(s, MCP_FAILED, why.data);
            buf_free(&why);
            return 0;
        }
    }
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
        free_each(names, descriptions, schemas);
    }
}

void mcp_stop_all(agent_service *svc)
{
    /* the service is going, and the loop soon after it: no grace period would run out */
    for (mcp_server *s = svc->mcp_servers; s; s = s->next)
        if (s->process)
            ecp_process_kill_now(s->process);
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
    mcp_call *c = send_request(s, REQ_CALL, "tools/call", params.data, done, ctx);
    buf_free(&params);
    if (!c)
        ecp_error_set(err, ECP_ENOTFOUND, "the MCP tool %s is not available (its server stopped)", full_name);
    return c;
}

void mcp_call_cancel(mcp_call *c)
{
    ecp_peer_cancel(c->server->peer, c->id); /* which frees c */
}
