/* acp session: the client's sessions, their modes and configuration, and the methods it calls. */
#include "acp.h"

/* ----- sessions ------------------------------------------------------------------------------ */

acp_session *acp__find_session(acp_frontend *acp, const char *id)
{
    for (acp_session *s = acp->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static acp_session *add_session(acp_frontend *acp, const char *id)
{
    acp_session *s = acp__find_session(acp, id);
    if (s)
        return s;
    s = xcalloc(1, sizeof *s);
    s->id = xstrdup(id);
    s->next = acp->sessions;
    acp->sessions = s;
    return s;
}

void acp__clear_diff(acp_session *s)
{
    free_each(s->diff_tool_id, s->diff_path, s->diff_old, s->diff_new);
    s->diff_tool_id = s->diff_path = s->diff_old = s->diff_new = NULL;
}

void acp__clear_turn(acp_session *s)
{
    buf_free(&s->system_text);
    s->prompt = NULL; /* acp__answered, or released with the peer */
    s->cancelled = false;
    for (size_t i = 0; i < s->announced_count; i++)
        free(s->announced[i]);
    free(s->announced);
    s->announced = NULL;
    s->announced_count = 0;
    acp__clear_diff(s);
}

void acp__session_free(acp_session *s)
{
    acp__clear_turn(s);
    for (size_t i = 0; i < s->answer_count; i++)
        free(s->answers[i].tool);
    free_each(s->answers, s->model, s->id, s);
}

const standing_answer *acp__standing(const acp_session *s, const char *tool)
{
    for (size_t i = 0; i < s->answer_count; i++)
        if (strcmp(s->answers[i].tool, tool) == 0)
            return &s->answers[i];
    return NULL;
}

void acp__remember(acp_session *s, const char *tool, bool allow)
{
    s->answers = xrealloc(s->answers, (s->answer_count + 1) * sizeof *s->answers);
    s->answers[s->answer_count++] = (standing_answer){xstrdup(tool), allow};
}

/* ----- modes and configuration -------------------------------------------------------------- */

static void write_modes(json_writer *w, const acp_session *s)
{
    jw_object_begin(w);
    jw_key_string(w, "currentModeId", s->allow_all ? "allow" : "ask");
    jw_key(w, "availableModes");
    jw_array_begin(w);
    jw_object_begin(w);
    jw_key_string(w, "id", "ask");
    jw_key_string(w, "name", "Ask");
    jw_key_string(w, "description", "Writes, edits and shell commands ask for permission first");
    jw_object_end(w);
    jw_object_begin(w);
    jw_key_string(w, "id", "allow");
    jw_key_string(w, "name", "Allow");
    jw_key_string(w, "description", "Writes, edits and shell commands run without asking");
    jw_object_end(w);
    jw_array_end(w);
    jw_object_end(w);
}

static void write_select_option(json_writer *w, const char *value, const char *name)
{
    jw_object_begin(w);
    jw_key_string(w, "value", value);
    jw_key_string(w, "name", name);
    jw_object_end(w);
}

static void write_config_options(json_writer *w, acp_frontend *acp, const acp_session *s)
{
    jw_array_begin(w);
    jw_object_begin(w);
    jw_key_string(w, "id", "mode");
    jw_key_string(w, "name", "Approval");
    jw_key_string(w, "category", "mode");
    jw_key_string(w, "type", "select");
    jw_key_string(w, "currentValue", s->allow_all ? "allow" : "ask");
    jw_key(w, "options");
    jw_array_begin(w);
    write_select_option(w, "ask", "Ask");
    write_select_option(w, "allow", "Allow");
    jw_array_end(w);
    jw_object_end(w);
    /* the model: the one configured (the only one the provider settings name) */
    char *model = s->model ? xstrdup(s->model) : agent_default_model(acp->agent);
    if (model) {
        jw_object_begin(w);
        jw_key_string(w, "id", "model");
        jw_key_string(w, "name", "Model");
        jw_key_string(w, "category", "model");
        jw_key_string(w, "type", "select");
        jw_key_string(w, "currentValue", model);
        jw_key(w, "options");
        jw_array_begin(w);
        write_select_option(w, model, model);
        jw_array_end(w);
        jw_object_end(w);
    }
    free(model);
    jw_array_end(w);
}

void acp__reply_session_state(acp_frontend *acp, ecp_peer_request *request, const acp_session *s, bool with_id)
{
    buf out = BUF_INIT;
    json_writer w;
    acp__result_begin(&w, &out);
    jw_object_begin(&w);
    if (with_id)
        jw_key_string(&w, "sessionId", s->id);
    jw_key(&w, "modes");
    write_modes(&w, s);
    jw_key(&w, "configOptions");
    write_config_options(&w, acp, s);
    jw_object_end(&w);
    acp__result_send(request, &out);
}


/* ----- methods ------------------------------------------------------------------------------------- */

typedef struct method_call {
    acp_frontend *acp;
    const json_doc *doc;
    json_ref params;
    ecp_peer_request *request;
    arena *mem;
    char **server_names; /* the MCP servers session_place started */
    size_t server_count;
} method_call;

static bool param_string(method_call *r, const char *key, bool required, const char **out)
{
    *out = NULL;
    json_ref v = r->params != JSON_NO_REF ? json_get(r->doc, r->params, key) : JSON_NO_REF;
    if (v == JSON_NO_REF || json_type_of(r->doc, v) == JSON_NULL) {
        if (required)
            reply_error(r->request, RPC_INVALID_PARAMS, "missing parameter %s", key);
        return !required;
    }
    if (!json_string(r->doc, v, r->mem, out, NULL)) {
        reply_error(r->request, RPC_INVALID_PARAMS, "parameter %s must be a string", key);
        return false;
    }
    return true;
}

static acp_session *param_session(method_call *r)
{
    const char *id;
    if (!param_string(r, "sessionId", true, &id))
        return NULL;
    acp_session *s = acp__find_session(r->acp, id);
    if (!s)
        reply_error(r->request, RPC_INVALID_PARAMS, "no session %s", id);
    return s;
}

static bool flag(const json_doc *d, json_ref obj, const char *key)
{
    json_ref v = obj != JSON_NO_REF ? json_get(d, obj, key) : JSON_NO_REF;
    bool b = false;
    return v != JSON_NO_REF && json_bool(d, v, &b) && b;
}

static void m_initialize(method_call *r)
{
    json_ref caps = r->params != JSON_NO_REF ? json_get(r->doc, r->params, "clientCapabilities") : JSON_NO_REF;
    json_ref fs = caps != JSON_NO_REF ? json_get(r->doc, caps, "fs") : JSON_NO_REF;
    r->acp->client_reads = flag(r->doc, fs, "readTextFile");
    r->acp->client_writes = flag(r->doc, fs, "writeTextFile");
    r->acp->client_terminals = flag(r->doc, caps, "terminal");
    buf out = BUF_INIT;
    json_writer w;
    acp__result_begin(&w, &out);
    jw_object_begin(&w);
    jw_key_int(&w, "protocolVersion", 1);
    jw_key(&w, "agentCapabilities");
    jw_object_begin(&w);
    jw_key_bool(&w, "loadSession", true);
    jw_key(&w, "promptCapabilities");
    jw_object_begin(&w);
    jw_key_bool(&w, "image", false);
    jw_key_bool(&w, "audio", false);
    jw_key_bool(&w, "embeddedContext", true);
    jw_object_end(&w);
    jw_key(&w, "mcpCapabilities");
    jw_object_begin(&w);
    jw_key_bool(&w, "http", true);
    jw_key_bool(&w, "sse", false);
    jw_object_end(&w);
    jw_object_end(&w);
    jw_key(&w, "authMethods");
    jw_array_begin(&w);
    jw_array_end(&w);
    jw_key(&w, "agentInfo");
    jw_object_begin(&w);
    jw_key_string(&w, "name", "ecpd");
    jw_key_string(&w, "title", "ecpd");
    jw_key_string(&w, "version", r->acp->version);
    jw_object_end(&w);
    jw_object_end(&w);
    acp__result_send(r->request, &out);
}

/* cwd and mcpServers, as session/new and session/load take them. */
static bool session_place(method_call *r)
{
    const char *cwd;
    if (!param_string(r, "cwd", true, &cwd))
        return false;
    struct stat st;
    if (cwd[0] != '/' || stat(cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        reply_error(r->request, RPC_INVALID_PARAMS, "cwd must be an absolute path to a directory: %s", cwd);
        return false;
    }
    json_ref servers = json_get(r->doc, r->params, "mcpServers");
    if (servers != JSON_NO_REF && json_type_of(r->doc, servers) != JSON_ARRAY) {
        reply_error(r->request, RPC_INVALID_PARAMS, "mcpServers must be an array");
        return false;
    }
    char *real = realpath(cwd, NULL);
    agent_service_set_workspace(r->acp->agent, real ? real : cwd);
    free(real);
    /* every server is checked before any starts (in the workspace) */
    size_t count = servers != JSON_NO_REF ? json_length(r->doc, servers) : 0;
    agent_mcp_config *configs = xcalloc(count + 1, sizeof *configs);
    const char **strings = xcalloc(1, sizeof *strings);
    size_t string_count = 0, k = 0;
    bool ok = true;
    for (json_ref e = count ? json_first(r->doc, servers) : JSON_NO_REF; e != JSON_NO_REF && ok;
         e = json_next(r->doc, e), k++) {
        json_ref name = json_type_of(r->doc, e) == JSON_OBJECT ? json_get(r->doc, e, "name") : JSON_NO_REF;
        json_ref type = name != JSON_NO_REF ? json_get(r->doc, e, "type") : JSON_NO_REF;
        json_ref command = name != JSON_NO_REF ? json_get(r->doc, e, "command") : JSON_NO_REF;
        json_ref url = name != JSON_NO_REF ? json_get(r->doc, e, "url") : JSON_NO_REF;
        json_ref args = name != JSON_NO_REF ? json_get(r->doc, e, "args") : JSON_NO_REF;
        json_ref env = name != JSON_NO_REF ? json_get(r->doc, e, "env") : JSON_NO_REF;
        agent_mcp_config *c = &configs[k];
        bool http = type != JSON_NO_REF && json_string_eq(r->doc, type, "http");
        if (name == JSON_NO_REF || !json_string(r->doc, name, r->mem, &c->name, NULL)) {
            reply_error(r->request, RPC_INVALID_PARAMS, "an MCP server needs a name");
            ok = false;
        } else if (type != JSON_NO_REF && !http && !json_string_eq(r->doc, type, "stdio")) {
            reply_error(r->request, RPC_INVALID_PARAMS,
                        "MCP server %s: the transport is stdio or http (sse is not supported)", c->name);
            ok = false;
        } else if (http && (url == JSON_NO_REF || !json_string(r->doc, url, r->mem, &c->url, NULL))) {
            reply_error(r->request, RPC_INVALID_PARAMS, "MCP server %s: an http server needs a url", c->name);
            ok = false;
        } else if (!http && (command == JSON_NO_REF || !json_string(r->doc, command, r->mem, &c->command, NULL))) {
            reply_error(r->request, RPC_INVALID_PARAMS, "MCP server %s: a stdio server needs a command", c->name);
            ok = false;
        }
        if (http) {
            args = JSON_NO_REF;
            env = json_get(r->doc, e, "headers"); /* [{name, value}] like env */
        }
        size_t argc = ok && args != JSON_NO_REF ? json_length(r->doc, args) : 0;
        size_t envc = ok && env != JSON_NO_REF ? json_length(r->doc, env) : 0;
        strings = xrealloc(strings, (string_count + argc + envc + 1) * sizeof *strings);
        c->args = strings + string_count; /* fixed up below: strings may still move */
        c->arg_count = argc;
        for (json_ref a = argc ? json_first(r->doc, args) : JSON_NO_REF; a != JSON_NO_REF && ok; a = json_next(r->doc, a))
            ok = json_string(r->doc, a, r->mem, &strings[string_count++], NULL);
        c->env_count = envc;
        for (json_ref v = envc ? json_first(r->doc, env) : JSON_NO_REF; v != JSON_NO_REF && ok; v = json_next(r->doc, v)) {
            json_ref vn = json_type_of(r->doc, v) == JSON_OBJECT ? json_get(r->doc, v, "name") : JSON_NO_REF;
            json_ref vv = vn != JSON_NO_REF ? json_get(r->doc, v, "value") : JSON_NO_REF;
            const char *n, *val;
            ok = vv != JSON_NO_REF && json_string(r->doc, vn, r->mem, &n, NULL) &&
                 json_string(r->doc, vv, r->mem, &val, NULL);
            if (ok) {
                buf pair = BUF_INIT;
                buf_appendf(&pair, http ? "%s: %s" : "%s=%s", n, val);
                char *copy = arena_strndup(r->mem, pair.data, pair.len);
                buf_free(&pair);
                strings[string_count++] = copy;
            }
        }
        if (!ok && c->name && (c->command || c->url))
            reply_error(r->request, RPC_INVALID_PARAMS,
                        "MCP server %s: args must be strings, env and headers [{name, value}] of strings", c->name);
        if (http) {
            c->header_count = c->env_count;
            c->env_count = 0;
        }
    }
    if (ok) {
        /* the args and env of each server follow each other in strings */
        size_t at = 0;
        for (size_t i = 0; i < k; i++) {
            configs[i].args = strings + at;
            at += configs[i].arg_count;
            configs[i].env = configs[i].headers = strings + at;
            at += configs[i].env_count + configs[i].header_count;
        }
        for (size_t i = 0; i < k && ok; i++) {
            ecp_error err = {0};
            if (agent_mcp_start(r->acp->agent, &configs[i], &err) < 0) {
                reply_error(r->request, RPC_INVALID_PARAMS, "%s", err.message);
                ok = false;
            }
        }
    }
    if (ok) {
        r->server_names = xcalloc(k + 1, sizeof *r->server_names);
        for (size_t i = 0; i < k; i++)
            r->server_names[i] = xstrdup(configs[i].name);
        r->server_count = k;
    }
    free(configs);
    free(strings);
    return ok;
}

/* The answer to session/new or session/load, once the session's MCP servers are ready. */
static void answer_when_ready(method_call *r, acp_session *s, bool with_id)
{
    waiting_answer *w = xcalloc(1, sizeof *w);
    w->request = r->request;
    w->session = s;
    w->with_id = with_id;
    w->servers = r->server_names;
    w->server_count = r->server_count;
    r->server_names = NULL;
    r->server_count = 0;
    w->next = r->acp->waiting;
    r->acp->waiting = w;
    acp__answer_ready(r->acp);
}

static void m_session_new(method_call *r)
{
    if (r->params == JSON_NO_REF || !session_place(r))
        return;
    char *id = agent__new_id();
    acp_session *s = add_session(r->acp, id);
    free(id);
    answer_when_ready(r, s, true);
}

typedef struct replay {
    acp_frontend *acp;
    acp_session *s;
} replay;

static void replay_message(void *ctx, const agent_message_info *m)
{
    replay *rp = ctx;
    acp_frontend *acp = rp->acp;
    if (strcmp(m->role, "user") == 0 && m->text) {
        acp__send_text_chunk(acp, rp->s, "user_message_chunk", m->text, strlen(m->text));
    } else if (strcmp(m->role, "assistant") == 0) {
        if (m->text && m->text[0])
            acp__send_text_chunk(acp, rp->s, "agent_message_chunk", m->text, strlen(m->text));
        for (size_t i = 0; i < m->call_count; i++) {
            buf out = BUF_INIT;
            json_writer w;
            acp__update_begin(&w, &out, rp->s, "tool_call");
            jw_key_string(&w, "toolCallId", m->call_ids[i]);
            jw_key_string(&w, "status", "pending");
            acp__write_call_fields(&w, NULL, m->call_ids[i], m->call_names[i], m->call_arguments[i],
                              acp->agent->workspace);
            acp__update_send(acp, &w, &out);
        }
    } else if (m->tool_call_id) {
        const char *text = m->text ? m->text : "";
        acp__send_call_update(acp, rp->s, m->tool_call_id, m->error ? "failed" : "completed", text, strlen(text), false);
    }
}

static void m_session_load(method_call *r)
{
    const char *id;
    if (r->params == JSON_NO_REF || !param_string(r, "sessionId", true, &id))
        return;
    agent_chat_info info;
    if (agent_chat_open(r->acp->agent, id, &info, NULL, NULL, NULL) < 0) {
        reply_error(r->request, RPC_INVALID_PARAMS, "no session %s", id);
        return;
    }
    if (!session_place(r))
        return;
    acp_session *s = add_session(r->acp, id);
    if (s->prompt) {
        reply_error(r->request, RPC_INVALID_PARAMS, "session %s is answering a prompt", id);
        return;
    }
    if (!s->model && info.model)
        s->model = xstrdup(info.model);
    replay rp = {r->acp, s};
    agent_chat_open(r->acp->agent, id, &info, replay_message, &rp, NULL);
    answer_when_ready(r, s, false);
}

/* The prompt's content blocks as the message's text. */
static bool prompt_text(method_call *r, json_ref blocks, buf *text)
{
    for (json_ref b = json_first(r->doc, blocks); b != JSON_NO_REF; b = json_next(r->doc, b)) {
        json_ref type = json_type_of(r->doc, b) == JSON_OBJECT ? json_get(r->doc, b, "type") : JSON_NO_REF;
        const char *s = NULL, *uri = NULL;
        size_t len = 0;
        if (type != JSON_NO_REF && json_string_eq(r->doc, type, "text")) {
            json_ref t = json_get(r->doc, b, "text");
            if (t == JSON_NO_REF || !json_string(r->doc, t, r->mem, &s, &len))
                goto bad;
            buf_append(text, s, len);
        } else if (type != JSON_NO_REF && json_string_eq(r->doc, type, "resource_link")) {
            json_ref u = json_get(r->doc, b, "uri");
            if (u == JSON_NO_REF || !json_string(r->doc, u, r->mem, &uri, NULL))
                goto bad;
            buf_appendf(text, "%s(file: %s)", text->len ? "\n" : "", uri);
        } else if (type != JSON_NO_REF && json_string_eq(r->doc, type, "resource")) {
            json_ref res = json_get(r->doc, b, "resource");
            json_ref u = res != JSON_NO_REF ? json_get(r->doc, res, "uri") : JSON_NO_REF;
            json_ref t = res != JSON_NO_REF ? json_get(r->doc, res, "text") : JSON_NO_REF;
            if (u == JSON_NO_REF || t == JSON_NO_REF || !json_string(r->doc, u, r->mem, &uri, NULL) ||
                !json_string(r->doc, t, r->mem, &s, &len)) {
                reply_error(r->request, RPC_INVALID_PARAMS, "only text resources can be embedded");
                return false;
            }
            buf_appendf(text, "%s<file uri=\"%s\">\n", text->len ? "\n" : "", uri);
            buf_append(text, s, len);
            buf_append_str(text, "\n</file>");
        } else {
            reply_error(r->request, RPC_INVALID_PARAMS,
                        "prompt content must be text, resource_link or a text resource");
            return false;
        }
    }
    if (!text->len) {
        reply_error(r->request, RPC_INVALID_PARAMS, "the prompt is empty");
        return false;
    }
    return true;
bad:
    reply_error(r->request, RPC_INVALID_PARAMS, "a prompt content block is malformed");
    return false;
}

/* A prompt the agent may answer after the front end is gone (a key looked
 * for in the secret store while the client closes stdin): the front end
 * keeps them, and on its way out leaves them with acp NULL. */
struct accept_ctx {
    accept_ctx *next;
    acp_frontend *acp; /* NULL once the front end is freed */
    char *session_id;
};

static void accept_unlink(accept_ctx *a)
{
    if (!a->acp)
        return;
    accept_ctx **p = &a->acp->accepting;
    while (*p != a)
        p = &(*p)->next;
    *p = a->next;
}

void acp__accepting_orphan(acp_frontend *acp)
{
    for (accept_ctx *a = acp->accepting; a; a = a->next)
        a->acp = NULL; /* freed when the agent answers */
    acp->accepting = NULL;
}

static void prompt_accepted(void *ctx, int status, const ecp_error *err, const char *chat_id, const char *model)
{
    (void)chat_id;
    (void)model;
    accept_ctx *a = ctx;
    if (!a->acp) {
        free(a->session_id);
        free(a);
        return;
    }
    accept_unlink(a);
    acp_session *s = acp__find_session(a->acp, a->session_id);
    if (s && s->prompt) {
        if (status < 0) {
            reply_error(s->prompt, status == ECP_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR, "%s",
                        err ? err->message : "the prompt failed");
            acp__clear_turn(s);
        } else if (s->cancelled) {
            agent_prompt_stop(a->acp->agent, s->id, NULL);
        }
    }
    free(a->session_id);
    free(a);
}

static void m_session_prompt(method_call *r)
{
    acp_session *s = param_session(r);
    if (!s)
        return;
    json_ref blocks = json_get(r->doc, r->params, "prompt");
    if (blocks == JSON_NO_REF || json_type_of(r->doc, blocks) != JSON_ARRAY) {
        reply_error(r->request, RPC_INVALID_PARAMS, "prompt must be an array of content blocks");
        return;
    }
    if (s->prompt) {
        reply_error(r->request, RPC_INVALID_PARAMS, "session %s is already answering a prompt", s->id);
        return;
    }
    buf text = BUF_INIT;
    if (!prompt_text(r, blocks, &text)) {
        buf_free(&text);
        return;
    }
    s->prompt = r->request;
    accept_ctx *a = xcalloc(1, sizeof *a);
    a->acp = r->acp;
    a->session_id = xstrdup(s->id);
    a->next = r->acp->accepting;
    r->acp->accepting = a;
    ecp_error err = {0};
    if (agent_prompt(r->acp->agent, s->id, text.data, s->model, prompt_accepted, a, &err) < 0) {
        accept_unlink(a);
        acp__clear_turn(s);
        reply_error(r->request, err.status == ECP_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR, "%s",
                    err.message);
        free(a->session_id);
        free(a);
    }
    buf_free(&text);
}

static bool set_mode(acp_session *s, const char *mode)
{
    if (strcmp(mode, "ask") == 0)
        s->allow_all = false;
    else if (strcmp(mode, "allow") == 0)
        s->allow_all = true;
    else
        return false;
    return true;
}

static void m_set_mode(method_call *r)
{
    acp_session *s = param_session(r);
    const char *mode;
    if (!s || !param_string(r, "modeId", true, &mode))
        return;
    if (!set_mode(s, mode)) {
        reply_error(r->request, RPC_INVALID_PARAMS, "unknown mode %s (ask or allow)", mode);
        return;
    }
    acp__reply_empty(r->request);
}

static void m_set_config_option(method_call *r)
{
    acp_session *s = param_session(r);
    const char *config, *value;
    if (!s || !param_string(r, "configId", true, &config) || !param_string(r, "value", true, &value))
        return;
    if (strcmp(config, "mode") == 0) {
        if (!set_mode(s, value)) {
            reply_error(r->request, RPC_INVALID_PARAMS, "unknown mode %s (ask or allow)", value);
            return;
        }
    } else if (strcmp(config, "model") == 0) {
        char *current = s->model ? xstrdup(s->model) : agent_default_model(r->acp->agent);
        bool known = current && strcmp(current, value) == 0;
        free(current);
        if (!known) {
            reply_error(r->request, RPC_INVALID_PARAMS, "model %s is not one of the configured models", value);
            return;
        }
        free(s->model);
        s->model = xstrdup(value);
    } else {
        reply_error(r->request, RPC_INVALID_PARAMS, "unknown config option %s (mode or model)", config);
        return;
    }
    buf out = BUF_INIT;
    json_writer w;
    acp__result_begin(&w, &out);
    jw_object_begin(&w);
    jw_key(&w, "configOptions");
    write_config_options(&w, r->acp, s);
    jw_object_end(&w);
    acp__result_send(r->request, &out);
}

static void n_cancel(acp_frontend *acp, const json_doc *d, json_ref params)
{
    json_ref id = params != JSON_NO_REF ? json_get(d, params, "sessionId") : JSON_NO_REF;
    arena a = ARENA_INIT;
    const char *sid;
    acp_session *s = id != JSON_NO_REF && json_string(d, id, &a, &sid, NULL) ? acp__find_session(acp, sid) : NULL;
    arena_free(&a);
    if (!s || !s->prompt)
        return;
    s->cancelled = true;
    /* a permission request still out is withdrawn: its answer will be ignored */
    for (outgoing *o = acp->outgoing, *next; o; o = next) {
        next = o->next;
        if (o->session == s && o->kind == OUT_PERMISSION)
            acp__withdraw(acp, o);
    }
    /* (while the prompt waits for the secret store, prompt_accepted stops it) */
    agent_prompt_stop(acp->agent, s->id, NULL);
}

static const struct {
    const char *name;
    void (*fn)(method_call *r);
} methods[] = {
    {"initialize", m_initialize},
    {"session/new", m_session_new},
    {"session/load", m_session_load},
    {"session/prompt", m_session_prompt},
    {"session/set_mode", m_set_mode},
    {"session/set_config_option", m_set_config_option},
};

void acp__on_request(void *ctx, ecp_peer_request *request, const char *name, const json_doc *d, json_ref params)
{
    acp_frontend *acp = ctx;
    size_t i = 0, n = sizeof methods / sizeof methods[0];
    while (i < n && strcmp(methods[i].name, name) != 0)
        i++;
    if (i == n) {
        reply_error(request, RPC_METHOD_NOT_FOUND, "Method not found: %s", name);
        return;
    }
    arena mem = ARENA_INIT;
    method_call r = {acp, d, params, request, &mem, NULL, 0};
    methods[i].fn(&r);
    for (size_t k = 0; k < r.server_count; k++)
        free(r.server_names[k]);
    free(r.server_names);
    arena_free(&mem);
}

void acp__on_notification(void *ctx, const char *name, const json_doc *d, json_ref params)
{
    /* other notifications ($/cancel_request, extensions) are not ours to act on */
    if (strcmp(name, "session/cancel") == 0)
        n_cancel(ctx, d, params);
}
