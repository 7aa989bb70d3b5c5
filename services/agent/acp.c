/* acp: the Agent Client Protocol front end over the agent service. */
#include "adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
#include "buf.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "peer.h"

#define ACP_MAX_LINE ((size_t)64 << 20)
#define READ_TEXT_MAX ((size_t)8 << 20)

enum {
    RPC_METHOD_NOT_FOUND = -32601,
    RPC_INVALID_PARAMS = -32602,
    RPC_INTERNAL_ERROR = -32603,
};

typedef struct acp_session acp_session;
typedef struct outgoing outgoing;

/* A tool name answered "always" for the session. */
typedef struct standing_answer {
    char *tool;
    bool allow;
} standing_answer;

struct acp_session {
    acp_session *next;
    char *id;
    bool allow_all;          /* mode "allow": no permission requests */
    char *model;             /* "provider/model"; NULL: the agent's default */
    standing_answer *answers;
    size_t answer_count;
    /* the prompt in progress */
    ecp_peer_request *prompt; /* its session/prompt, to answer at its end; NULL when none runs */
    bool cancelled;
    buf system_text;         /* the turn's own messages (a command's output), sent at its end */
    char **announced;        /* tool call ids already sent as tool_call */
    size_t announced_count;
    /* the diff of the write or edit awaiting approval or running */
    char *diff_tool_id, *diff_path, *diff_old, *diff_new;
    bool diff_new_file;
};

typedef enum outgoing_kind {
    OUT_PERMISSION, OUT_READ, OUT_WRITE, OUT_EDIT_READ,
    OUT_TERMINAL_CREATE, OUT_TERMINAL_WAIT, OUT_TERMINAL_OUTPUT, OUT_TERMINAL_OTHER,
} outgoing_kind;

typedef struct terminal_run terminal_run;

/* A request we sent the client, waiting for its answer. */
struct outgoing {
    outgoing *next;
    acp_frontend *acp;
    int64_t id;
    outgoing_kind kind;
    const char *method;
    acp_session *session;
    char *tool_id, *tool_name;
    void *token;             /* a hosted call's */
    char *path;
    char *old_string, *new_string;
    bool all_occurrences;
    terminal_run *terminal;  /* the terminal requests of a command */
};

/* A shell command run in a terminal of the client's: create, wait for its
 * exit (or the timeout: kill), read the output, release. */
struct terminal_run {
    terminal_run *next;
    acp_frontend *acp;
    acp_session *session;
    void *token;             /* NULL once the call is cancelled or answered */
    char *terminal_id;
    uv_timer_t timer;
    bool timed_out;
    bool exited;
    int64_t exit_code, signal;
};

/* A session/new or session/load answered once its MCP servers are ready. */
typedef struct waiting_answer {
    struct waiting_answer *next;
    ecp_peer_request *request;
    acp_session *session;
    bool with_id;
    char **servers;
    size_t server_count;
} waiting_answer;

struct acp_frontend {
    uv_loop_t *loop;
    agent_service *agent;
    ecp_logger *log;
    uv_pipe_t in;
    uv_pipe_t out;
    bool out_is_pipe;
    int open_handles;
    bool closing;
    ecp_peer *peer;
    void (*on_eof)(void *ctx);
    void *ctx;
    const char *version;
    bool client_reads, client_writes, client_terminals;
    terminal_run *terminals;
    acp_session *sessions;
    outgoing *outgoing;      /* requests to the client, until the peer completes them */
    waiting_answer *waiting;
};

/* ----- output ---------------------------------------------------------------------------- */

typedef struct write_req {
    uv_write_t req;
    char *data;
} write_req;

static void written(uv_write_t *req, int status)
{
    (void)status;
    write_req *w = (write_req *)req;
    free(w->data);
    free(w);
}

/* The peer's bytes: one framed message. */
static void write_out(void *ctx, const char *data, size_t len, int64_t request_id)
{
    acp_frontend *acp = ctx;
    (void)request_id;
    if (acp->closing && !acp->out_is_pipe)
        return;
    if (!acp->out_is_pipe) {
        /* stdout is a file: written directly */
        size_t off = 0;
        while (off < len) {
            ssize_t n = write(STDOUT_FILENO, data + off, len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        return;
    }
    write_req *w = xmalloc(sizeof *w);
    w->data = xmalloc(len);
    memcpy(w->data, data, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&acp->out, &b, 1, written) != 0) {
        free(w->data);
        free(w);
    }
}

/* Begins a result value; result_send answers request with it. */
static void result_begin(json_writer *w, buf *out) { jw_init(w, out); }

static void result_send(ecp_peer_request *request, buf *out)
{
    ecp_peer_respond(request, out->data);
    buf_free(out);
}

static void reply_empty(ecp_peer_request *request) { ecp_peer_respond(request, "{}"); }

#define reply_error ecp_peer_respond_error

/* Begins a session/update notification's params and its update object, after the discriminator. */
static void update_begin(json_writer *w, buf *out, const acp_session *s, const char *kind)
{
    jw_init(w, out);
    jw_object_begin(w);
    jw_key_string(w, "sessionId", s->id);
    jw_key(w, "update");
    jw_object_begin(w);
    jw_key_string(w, "sessionUpdate", kind);
}

static void update_send(acp_frontend *acp, json_writer *w, buf *out)
{
    jw_object_end(w);
    jw_object_end(w);
    ecp_peer_notify(acp->peer, "session/update", out->data);
    buf_free(out);
}

static void send_text_chunk(acp_frontend *acp, const acp_session *s, const char *kind, const char *text, size_t len)
{
    buf out = BUF_INIT;
    json_writer w;
    update_begin(&w, &out, s, kind);
    jw_key(&w, "content");
    jw_object_begin(&w);
    jw_key_string(&w, "type", "text");
    jw_key_string_n(&w, "text", text, len);
    jw_object_end(&w);
    update_send(acp, &w, &out);
}

/* Begins a request to the client: the caller writes the params object, then request_send. */
static outgoing *request_begin(acp_frontend *acp, json_writer *w, buf *out, const char *method, outgoing_kind kind,
                               acp_session *s)
{
    outgoing *o = xcalloc(1, sizeof *o);
    o->acp = acp;
    o->method = method;
    o->kind = kind;
    o->session = s;
    o->next = acp->outgoing;
    acp->outgoing = o;
    jw_init(w, out);
    return o;
}

static void answered(void *ctx, int64_t id, const ecp_peer_answer *answer);

static void request_send(acp_frontend *acp, outgoing *o, buf *out)
{
    o->id = ecp_peer_call(acp->peer, o->method, out->data, 0, answered, o);
    buf_free(out);
}

static void outgoing_free(outgoing *o)
{
    free(o->tool_id);
    free(o->tool_name);
    free(o->path);
    free(o->old_string);
    free(o->new_string);
    free(o);
}

static void outgoing_remove(acp_frontend *acp, outgoing *o)
{
    for (outgoing **p = &acp->outgoing; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            return;
        }
}

/* Forgets a request to the client: its answer, if one comes, is ignored. */
static void withdraw(acp_frontend *acp, outgoing *o)
{
    if (!ecp_peer_cancel(acp->peer, o->id)) { /* never sent: the peer was closed */
        outgoing_remove(acp, o);
        outgoing_free(o);
    }
}

/* ----- sessions ------------------------------------------------------------------------------ */

static acp_session *find_session(acp_frontend *acp, const char *id)
{
    for (acp_session *s = acp->sessions; s; s = s->next)
        if (strcmp(s->id, id) == 0)
            return s;
    return NULL;
}

static acp_session *add_session(acp_frontend *acp, const char *id)
{
    acp_session *s = find_session(acp, id);
    if (s)
        return s;
    s = xcalloc(1, sizeof *s);
    s->id = xstrdup(id);
    s->next = acp->sessions;
    acp->sessions = s;
    return s;
}

static void clear_diff(acp_session *s)
{
    free(s->diff_tool_id);
    free(s->diff_path);
    free(s->diff_old);
    free(s->diff_new);
    s->diff_tool_id = s->diff_path = s->diff_old = s->diff_new = NULL;
}

static void clear_turn(acp_session *s)
{
    buf_free(&s->system_text);
    s->prompt = NULL; /* answered, or released with the peer */
    s->cancelled = false;
    for (size_t i = 0; i < s->announced_count; i++)
        free(s->announced[i]);
    free(s->announced);
    s->announced = NULL;
    s->announced_count = 0;
    clear_diff(s);
}

static void session_free(acp_session *s)
{
    clear_turn(s);
    for (size_t i = 0; i < s->answer_count; i++)
        free(s->answers[i].tool);
    free(s->answers);
    free(s->model);
    free(s->id);
    free(s);
}

static const standing_answer *standing(const acp_session *s, const char *tool)
{
    for (size_t i = 0; i < s->answer_count; i++)
        if (strcmp(s->answers[i].tool, tool) == 0)
            return &s->answers[i];
    return NULL;
}

static void remember(acp_session *s, const char *tool, bool allow)
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

static void reply_session_state(acp_frontend *acp, ecp_peer_request *request, const acp_session *s, bool with_id)
{
    buf out = BUF_INIT;
    json_writer w;
    result_begin(&w, &out);
    jw_object_begin(&w);
    if (with_id)
        jw_key_string(&w, "sessionId", s->id);
    jw_key(&w, "modes");
    write_modes(&w, s);
    jw_key(&w, "configOptions");
    write_config_options(&w, acp, s);
    jw_object_end(&w);
    result_send(request, &out);
}

/* ----- tool calls as updates ------------------------------------------------------------------ */

static const char *tool_kind(const char *name)
{
    if (strcmp(name, "read_file") == 0 || strcmp(name, "list_directory") == 0 || strcmp(name, "git") == 0 ||
        strcmp(name, "diagnostics") == 0)
        return "read";
    if (strcmp(name, "update_plan") == 0)
        return "think";
    if (strcmp(name, "write_file") == 0 || strcmp(name, "edit_file") == 0)
        return "edit";
    if (strcmp(name, "grep") == 0)
        return "search";
    if (strcmp(name, "shell_command") == 0)
        return "execute";
    return "other";
}

static bool is_announced(const acp_session *s, const char *tool_id)
{
    for (size_t i = 0; i < s->announced_count; i++)
        if (strcmp(s->announced[i], tool_id) == 0)
            return true;
    return false;
}

/* A string argument of the call, or NULL. */
static const char *argument(const json_doc *d, const char *key, arena *a)
{
    json_ref v = json_get(d, json_root(d), key);
    const char *s = NULL;
    if (v == JSON_NO_REF || !json_string(d, v, a, &s, NULL))
        return NULL;
    return s;
}

static void write_title(json_writer *w, const char *name, const json_doc *d, arena *a)
{
    const char *path = argument(d, "path", a), *command = argument(d, "command", a),
               *pattern = argument(d, "pattern", a);
    buf t = BUF_INIT;
    if (strcmp(name, "shell_command") == 0 && command)
        buf_appendf(&t, "Run %s", command);
    else if (strcmp(name, "grep") == 0 && pattern)
        buf_appendf(&t, "Search for %s", pattern);
    else if (path)
        buf_appendf(&t, "%s %s", name, path);
    else
        buf_append_str(&t, name);
    jw_key_string(w, "title", t.data);
    buf_free(&t);
}

static void write_diff(json_writer *w, const acp_session *s)
{
    jw_object_begin(w);
    jw_key_string(w, "type", "diff");
    jw_key_string(w, "path", s->diff_path);
    jw_key(w, "oldText");
    if (s->diff_new_file)
        jw_null(w);
    else
        jw_string(w, s->diff_old);
    jw_key_string(w, "newText", s->diff_new);
    jw_object_end(w);
}

/* Writes the tool call's fields: title, kind, locations, rawInput, and the diff when there is one. */
static void write_call_fields(json_writer *w, const acp_session *s, const char *tool_id, const char *name,
                              const char *arguments, const char *workspace)
{
    json_doc d = {0};
    arena a = ARENA_INIT;
    bool parsed = json_doc_parse(&d, arguments, strlen(arguments), NULL) == 0 &&
                  json_type_of(&d, json_root(&d)) == JSON_OBJECT;
    if (parsed)
        write_title(w, name, &d, &a);
    else
        jw_key_string(w, "title", name);
    jw_key_string(w, "kind", tool_kind(name));
    const char *path = parsed ? argument(&d, "path", &a) : NULL;
    char *resolved = NULL;
    if (path && workspace && agent_confine(workspace, path, &resolved, NULL) == 0) {
        jw_key(w, "locations");
        jw_array_begin(w);
        jw_object_begin(w);
        jw_key_string(w, "path", resolved);
        jw_object_end(w);
        jw_array_end(w);
    }
    free(resolved);
    jw_key(w, "rawInput");
    jw_raw(w, parsed ? arguments : "{}", strlen(parsed ? arguments : "{}"));
    if (s && s->diff_tool_id && strcmp(s->diff_tool_id, tool_id) == 0) {
        jw_key(w, "content");
        jw_array_begin(w);
        write_diff(w, s);
        jw_array_end(w);
    }
    arena_free(&a);
    json_doc_free(&d);
}

static void announce(acp_frontend *acp, acp_session *s, const char *tool_id, const char *name, const char *arguments)
{
    if (is_announced(s, tool_id))
        return;
    s->announced = xrealloc(s->announced, (s->announced_count + 1) * sizeof *s->announced);
    s->announced[s->announced_count++] = xstrdup(tool_id);
    buf out = BUF_INIT;
    json_writer w;
    update_begin(&w, &out, s, "tool_call");
    jw_key_string(&w, "toolCallId", tool_id);
    jw_key_string(&w, "status", "pending");
    write_call_fields(&w, s, tool_id, name, arguments, acp->agent->workspace);
    update_send(acp, &w, &out);
}

static char *read_whole(const char *path, bool *missing)
{
    *missing = false;
    FILE *f = fopen(path, "rb");
    if (!f) {
        *missing = true;
        return NULL;
    }
    buf b = BUF_INIT;
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.len < READ_TEXT_MAX)
        buf_append(&b, chunk, n);
    fclose(f);
    if (!b.data)
        buf_append(&b, "", 0);
    return buf_detach(&b);
}

/* old -> new in text; returns the count of replacements made (0: none; with
 * !all, more than one occurrence is refused and counted without replacing). */
static size_t apply_edit(const char *text, const char *old, const char *new_text, bool all, buf *out)
{
    size_t old_len = strlen(old), count = 0;
    if (!old_len)
        return 0;
    for (const char *p = strstr(text, old); p; p = strstr(p + old_len, old))
        count++;
    if (count == 0 || (count > 1 && !all))
        return count > 1 ? count : 0;
    const char *from = text;
    for (const char *p = strstr(text, old); p; p = strstr(from, old)) {
        buf_append(out, from, (size_t)(p - from));
        buf_append_str(out, new_text);
        from = p + old_len;
    }
    buf_append_str(out, from);
    return count;
}

/* The diff a write or edit will make, from the file as it is now. */
static void prepare_diff(acp_frontend *acp, acp_session *s, const char *tool_id, const char *name,
                         const char *arguments)
{
    clear_diff(s);
    bool write = strcmp(name, "write_file") == 0, edit = strcmp(name, "edit_file") == 0;
    if (!write && !edit)
        return;
    json_doc d = {0};
    arena a = ARENA_INIT;
    char *resolved = NULL;
    if (json_doc_parse(&d, arguments, strlen(arguments), NULL) < 0)
        goto out;
    const char *path = argument(&d, "path", &a);
    if (!path || !acp->agent->workspace || agent_confine(acp->agent->workspace, path, &resolved, NULL) < 0)
        goto out;
    bool missing;
    char *current = read_whole(resolved, &missing);
    if (write) {
        const char *content = argument(&d, "content", &a);
        if (content) {
            s->diff_new = xstrdup(content);
            s->diff_old = current;
            s->diff_new_file = missing;
            current = NULL;
        }
    } else if (current) {
        const char *old = argument(&d, "old_string", &a), *new_text = argument(&d, "new_string", &a);
        json_ref all_ref = json_get(&d, json_root(&d), "all_occurrences");
        bool all = false;
        if (all_ref != JSON_NO_REF)
            json_bool(&d, all_ref, &all);
        buf edited = BUF_INIT;
        if (old && new_text && apply_edit(current, old, new_text, all, &edited) > 0 && edited.data) {
            s->diff_old = current;
            s->diff_new = buf_detach(&edited);
            s->diff_new_file = false;
            current = NULL;
        }
        buf_free(&edited);
    }
    free(current);
    if (s->diff_new) {
        s->diff_tool_id = xstrdup(tool_id);
        s->diff_path = resolved;
        resolved = NULL;
    }
out:
    free(resolved);
    arena_free(&a);
    json_doc_free(&d);
}

static void send_call_update(acp_frontend *acp, acp_session *s, const char *tool_id, const char *status,
                             const char *text, size_t text_len, bool with_diff)
{
    buf out = BUF_INIT;
    json_writer w;
    update_begin(&w, &out, s, "tool_call_update");
    jw_key_string(&w, "toolCallId", tool_id);
    jw_key_string(&w, "status", status);
    if (text || with_diff) {
        jw_key(&w, "content");
        jw_array_begin(&w);
        if (with_diff)
            write_diff(&w, s);
        if (text) {
            jw_object_begin(&w);
            jw_key_string(&w, "type", "content");
            jw_key(&w, "content");
            jw_object_begin(&w);
            jw_key_string(&w, "type", "text");
            jw_key_string_n(&w, "text", text, text_len);
            jw_object_end(&w);
            jw_object_end(&w);
        }
        jw_array_end(&w);
    }
    update_send(acp, &w, &out);
}

static void ask_permission(acp_frontend *acp, acp_session *s, const agent_content *c)
{
    buf out = BUF_INIT;
    json_writer w;
    outgoing *o = request_begin(acp, &w, &out, "session/request_permission", OUT_PERMISSION, s);
    o->tool_id = xstrdup(c->tool_id);
    o->tool_name = xstrdup(c->tool_name);
    jw_object_begin(&w);
    jw_key_string(&w, "sessionId", s->id);
    jw_key(&w, "toolCall");
    jw_object_begin(&w);
    jw_key_string(&w, "toolCallId", c->tool_id);
    jw_key_string(&w, "status", "pending");
    write_call_fields(&w, s, c->tool_id, c->tool_name, c->arguments, acp->agent->workspace);
    jw_object_end(&w);
    jw_key(&w, "options");
    jw_array_begin(&w);
    static const char *const options[][2] = {
        {"allow_once", "Allow"}, {"allow_always", "Always allow"}, {"reject_once", "Reject"},
        {"reject_always", "Always reject"},
    };
    for (size_t i = 0; i < 4; i++) {
        jw_object_begin(&w);
        jw_key_string(&w, "optionId", options[i][0]);
        jw_key_string(&w, "name", options[i][1]);
        jw_key_string(&w, "kind", options[i][0]);
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_object_end(&w);
    request_send(acp, o, &out);
}

/* ----- the agent's events ------------------------------------------------------------------------ */

static void finish_prompt(acp_frontend *acp, acp_session *s, const agent_content *c)
{
    if (!s->prompt)
        return;
    if (!s->cancelled && c->stop == AGENT_STOP_ERROR) {
        reply_error(s->prompt, RPC_INTERNAL_ERROR, "%s", c->error_message ? c->error_message : "the model's request failed");
    } else {
        if (s->system_text.len)
            send_text_chunk(acp, s, "agent_message_chunk", s->system_text.data, s->system_text.len);
        const char *reason = s->cancelled || c->stop == AGENT_STOP_CANCELLED ? "cancelled"
                             : c->stop == AGENT_STOP_TURN_LIMIT             ? "max_turn_requests"
                             : c->stop == AGENT_STOP_MAX_TOKENS             ? "max_tokens"
                             : c->stop == AGENT_STOP_REFUSAL                ? "refusal"
                                                                            : "end_turn";
        buf out = BUF_INIT;
        json_writer w;
        result_begin(&w, &out);
        jw_object_begin(&w);
        jw_key_string(&w, "stopReason", reason);
        jw_object_end(&w);
        result_send(s->prompt, &out);
    }
    clear_turn(s);
}

static void on_content(void *ctx, const agent_content *c)
{
    acp_frontend *acp = ctx;
    acp_session *s = find_session(acp, c->chat_id);
    if (!s || !s->prompt)
        return; /* a chat of another front end, or a turn no prompt of ours started */
    switch (c->type) {
    case AGENT_CONTENT_TEXT:
        if (c->role && strcmp(c->role, "assistant") == 0 && c->text_len)
            send_text_chunk(acp, s, "agent_message_chunk", c->text, c->text_len);
        else if (c->text_len)
            buf_append(&s->system_text, c->text, c->text_len); /* an error's goes in the error instead */
        break;
    case AGENT_CONTENT_PLAN: {
        buf out = BUF_INIT;
        json_writer w;
        update_begin(&w, &out, s, "plan");
        jw_key(&w, "entries");
        jw_raw(&w, c->arguments, strlen(c->arguments));
        update_send(acp, &w, &out);
        break;
    }
    case AGENT_CONTENT_REASON_TEXT:
        send_text_chunk(acp, s, "agent_thought_chunk", c->text, c->text_len);
        break;
    case AGENT_CONTENT_PROGRESS:
        if (c->finished)
            finish_prompt(acp, s, c);
        break;
    case AGENT_CONTENT_TOOL_RUN: {
        prepare_diff(acp, s, c->tool_id, c->tool_name, c->arguments);
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        if (!c->manual_approval)
            break;
        const standing_answer *a = standing(s, c->tool_name);
        if (s->allow_all || a) {
            agent_tool_answer(acp->agent, s->id, c->tool_id, s->allow_all || a->allow, NULL);
            break;
        }
        ask_permission(acp, s, c);
        break;
    }
    case AGENT_CONTENT_TOOL_RUNNING:
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        send_call_update(acp, s, c->tool_id, "in_progress", NULL, 0, false);
        break;
    case AGENT_CONTENT_TOOL_CALLED: {
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        bool diff = !c->error && s->diff_tool_id && strcmp(s->diff_tool_id, c->tool_id) == 0;
        send_call_update(acp, s, c->tool_id, c->error ? "failed" : "completed", c->text, c->text_len, diff);
        break;
    }
    case AGENT_CONTENT_TOOL_REJECTED: {
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        const char *why = strcmp(c->reason, "userChoiceDeny") == 0 ? "Rejected by the user" : "Cancelled";
        send_call_update(acp, s, c->tool_id, "failed", why, strlen(why), false);
        /* a permission request still out for it is void */
        for (outgoing *o = acp->outgoing; o; o = o->next)
            if (o->kind == OUT_PERMISSION && o->session == s && strcmp(o->tool_id, c->tool_id) == 0) {
                withdraw(acp, o);
                break;
            }
        break;
    }
    default:
        break;
    }
}

static void on_status(void *ctx, const char *chat_id, const char *status)
{
    (void)ctx;
    (void)chat_id;
    (void)status;
}

static void on_deleted(void *ctx, const char *chat_id)
{
    (void)ctx;
    (void)chat_id;
}

static void reply_session_state(acp_frontend *acp, ecp_peer_request *request, const acp_session *s, bool with_id);

typedef struct server_state {
    const char *name;
    bool starting;
} server_state;

static void check_starting(void *ctx, const agent_mcp_info *info)
{
    server_state *st = ctx;
    if (strcmp(info->name, st->name) == 0 && strcmp(info->status, "starting") == 0)
        st->starting = true;
}

/* The commands a prompt may be, once the client knows the session. */
static void send_commands(acp_frontend *acp, const acp_session *s)
{
    size_t n;
    const agent_command_info *commands = agent_commands(&n);
    buf out = BUF_INIT;
    json_writer w;
    update_begin(&w, &out, s, "available_commands_update");
    jw_key(&w, "availableCommands");
    jw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jw_object_begin(&w);
        jw_key_string(&w, "name", commands[i].name);
        jw_key_string(&w, "description", commands[i].description);
        jw_object_end(&w);
    }
    jw_array_end(&w);
    update_send(acp, &w, &out);
}

static void waiting_free(waiting_answer *w)
{
    for (size_t i = 0; i < w->server_count; i++)
        free(w->servers[i]);
    free(w->servers);
    free(w);
}

/* Answers every session/new or session/load whose servers are all running or failed. */
static void answer_ready(acp_frontend *acp)
{
    for (waiting_answer **p = &acp->waiting; *p;) {
        waiting_answer *w = *p;
        bool starting = false;
        for (size_t i = 0; i < w->server_count && !starting; i++) {
            server_state st = {w->servers[i], false};
            agent_mcp_list(acp->agent, check_starting, &st);
            starting = st.starting;
        }
        if (starting) {
            p = &w->next;
            continue;
        }
        *p = w->next;
        reply_session_state(acp, w->request, w->session, w->with_id);
        send_commands(acp, w->session);
        waiting_free(w);
    }
}

static void on_mcp(void *ctx, const agent_mcp_info *info)
{
    acp_frontend *acp = ctx;
    if (strcmp(info->status, "failed") == 0)
        ecp_log(acp->log, ECP_LOG_ERROR, "MCP server %s failed: %s; its tools are not offered", info->name,
                info->error ? info->error : "");
    answer_ready(acp);
}

static const agent_listener listener = {on_content, on_status, on_deleted, on_mcp};

/* ----- the client's file system ------------------------------------------------------------------ */

static void write_file_request(acp_frontend *acp, acp_session *s, void *token, const char *path, const char *content)
{
    buf out = BUF_INIT;
    json_writer w;
    outgoing *o = request_begin(acp, &w, &out, "fs/write_text_file", OUT_WRITE, s);
    o->token = token;
    o->path = xstrdup(path);
    o->new_string = xstrdup(content); /* for the result's byte count */
    jw_object_begin(&w);
    jw_key_string(&w, "sessionId", s->id);
    jw_key_string(&w, "path", path);
    jw_key_string(&w, "content", content);
    jw_object_end(&w);
    request_send(acp, o, &out);
}

static void error_output(const json_doc *d, json_ref error, buf *out);

#define SHELL_TIMEOUT_DEFAULT_MS 30000
#define SHELL_TIMEOUT_MAX_MS 600000
#define TERMINAL_OUTPUT_LIMIT (64 << 10)

static outgoing *terminal_request(terminal_run *t, const char *method, outgoing_kind kind, json_writer *w, buf *out)
{
    outgoing *o = request_begin(t->acp, w, out, method, kind, t->session);
    o->terminal = kind == OUT_TERMINAL_OTHER ? NULL : t; /* kill and release: nothing waits on their answer */
    jw_object_begin(w);
    jw_key_string(w, "sessionId", t->session->id);
    if (t->terminal_id)
        jw_key_string(w, "terminalId", t->terminal_id);
    return o;
}

static void terminal_simple(terminal_run *t, const char *method, outgoing_kind kind)
{
    buf out = BUF_INIT;
    json_writer w;
    outgoing *o = terminal_request(t, method, kind, &w, &out);
    jw_object_end(&w);
    request_send(t->acp, o, &out);
}

static void terminal_timer_closed(uv_handle_t *h)
{
    terminal_run *t = h->data;
    t->acp->open_handles--;
    free(t->terminal_id);
    free(t);
}

/* Ends the run: releases the client's terminal (if it has one) and forgets it. */
static void terminal_finish(terminal_run *t)
{
    acp_frontend *acp = t->acp;
    for (terminal_run **p = &acp->terminals; *p; p = &(*p)->next)
        if (*p == t) {
            *p = t->next;
            break;
        }
    /* requests of this run still out are answered into nothing */
    for (outgoing *o = acp->outgoing; o; o = o->next)
        if (o->terminal == t)
            o->terminal = NULL;
    if (t->terminal_id && !acp->closing)
        terminal_simple(t, "terminal/release", OUT_TERMINAL_OTHER);
    uv_timer_stop(&t->timer);
    uv_close((uv_handle_t *)&t->timer, terminal_timer_closed);
}

static void terminal_result(terminal_run *t, bool error, const char *output)
{
    void *token = t->token;
    t->token = NULL;
    terminal_finish(t);
    if (token)
        agent_host_call_done(token, error, output);
}

static void terminal_timeout(uv_timer_t *timer)
{
    terminal_run *t = timer->data;
    t->timed_out = true;
    if (t->terminal_id) {
        /* killed, its wait_for_exit answers, and the output is read as after any exit */
        terminal_simple(t, "terminal/kill", OUT_TERMINAL_OTHER);
    }
}

static bool terminal_start(acp_frontend *acp, acp_session *s, const agent_host_call *call, void *token)
{
    json_doc d = {0};
    arena a = ARENA_INIT;
    json_doc_parse(&d, call->arguments, strlen(call->arguments), NULL); /* checked by the service */
    const char *command = argument(&d, "command", &a);
    json_ref timeout_ref = json_get(&d, json_root(&d), "timeout");
    int64_t timeout_ms = SHELL_TIMEOUT_DEFAULT_MS;
    if (timeout_ref != JSON_NO_REF && (!json_int64(&d, timeout_ref, &timeout_ms) || timeout_ms < 1 ||
                                       timeout_ms > SHELL_TIMEOUT_MAX_MS))
        timeout_ms = SHELL_TIMEOUT_DEFAULT_MS;
    terminal_run *t = xcalloc(1, sizeof *t);
    t->acp = acp;
    t->session = s;
    t->token = token;
    uv_timer_init(acp->loop, &t->timer);
    t->timer.data = t;
    acp->open_handles++;
    t->next = acp->terminals;
    acp->terminals = t;
    buf out = BUF_INIT;
    json_writer w;
    outgoing *create = terminal_request(t, "terminal/create", OUT_TERMINAL_CREATE, &w, &out);
    create->tool_id = xstrdup(call->tool_id);
    /* the same shell as our own shell tool, in the workspace */
    jw_key_string(&w, "command", "/bin/sh");
    jw_key(&w, "args");
    jw_array_begin(&w);
    jw_string(&w, "-c");
    jw_string(&w, command ? command : "");
    jw_array_end(&w);
    if (acp->agent->workspace)
        jw_key_string(&w, "cwd", acp->agent->workspace);
    jw_key_int(&w, "outputByteLimit", TERMINAL_OUTPUT_LIMIT);
    jw_object_end(&w);
    request_send(acp, create, &out);
    uv_timer_start(&t->timer, terminal_timeout, (uint64_t)timeout_ms, 0);
    arena_free(&a);
    json_doc_free(&d);
    return true;
}

static void terminal_answered(acp_frontend *acp, outgoing *o, const json_doc *d, json_ref result, json_ref error)
{
    terminal_run *t = o->terminal;
    if (!t || o->kind == OUT_TERMINAL_OTHER)
        return;
    if (error != JSON_NO_REF) {
        buf output = BUF_INIT;
        error_output(d, error, &output);
        terminal_result(t, true, output.data);
        buf_free(&output);
        return;
    }
    arena a = ARENA_INIT;
    if (o->kind == OUT_TERMINAL_CREATE) {
        json_ref id = result != JSON_NO_REF ? json_get(d, result, "terminalId") : JSON_NO_REF;
        const char *terminal_id;
        if (id == JSON_NO_REF || !json_string(d, id, &a, &terminal_id, NULL)) {
            terminal_result(t, true, "Error: the client's terminal/create answered no terminalId");
        } else {
            t->terminal_id = xstrdup(terminal_id);
            /* the client shows the command's output live in the tool call */
            buf out = BUF_INIT;
            json_writer w;
            update_begin(&w, &out, t->session, "tool_call_update");
            jw_key_string(&w, "toolCallId", o->tool_id);
            jw_key(&w, "content");
            jw_array_begin(&w);
            jw_object_begin(&w);
            jw_key_string(&w, "type", "terminal");
            jw_key_string(&w, "terminalId", t->terminal_id);
            jw_object_end(&w);
            jw_array_end(&w);
            update_send(acp, &w, &out);
            if (t->timed_out)
                terminal_simple(t, "terminal/kill", OUT_TERMINAL_OTHER);
            terminal_simple(t, "terminal/wait_for_exit", OUT_TERMINAL_WAIT);
        }
    } else if (o->kind == OUT_TERMINAL_WAIT) {
        json_ref code = json_get(d, result, "exitCode"), sig = json_get(d, result, "signal");
        t->exited = true;
        if (code == JSON_NO_REF || !json_int64(d, code, &t->exit_code))
            t->exit_code = 0;
        t->signal = sig != JSON_NO_REF && json_type_of(d, sig) != JSON_NULL;
        uv_timer_stop(&t->timer);
        terminal_simple(t, "terminal/output", OUT_TERMINAL_OUTPUT);
    } else {
        json_ref output_ref = json_get(d, result, "output");
        const char *text = "";
        size_t len = 0;
        if (output_ref != JSON_NO_REF)
            json_string(d, output_ref, &a, &text, &len);
        buf out = BUF_INIT;
        bool failed = true;
        if (t->timed_out)
            buf_append_str(&out, "Error: the command timed out\n");
        else if (t->signal)
            buf_append_str(&out, "Error: the command was killed by a signal\n");
        else if (t->exit_code)
            buf_appendf(&out, "Error: the command exited with status %lld\n", (long long)t->exit_code);
        else
            failed = false;
        buf_append(&out, text, len);
        if (!failed)
            buf_append_str(&out, len ? "\nExit code: 0" : "(no output)\n\nExit code: 0");
        terminal_result(t, failed, out.data);
        buf_free(&out);
    }
    arena_free(&a);
}

static bool host_run(void *ctx, const agent_host_call *call, void *token)
{
    acp_frontend *acp = ctx;
    acp_session *s = find_session(acp, call->chat_id);
    if (!s)
        return false;
    if (strcmp(call->tool_name, "shell_command") == 0)
        return acp->client_terminals && terminal_start(acp, s, call, token);
    if (!call->path)
        return false;
    bool read = strcmp(call->tool_name, "read_file") == 0, write = strcmp(call->tool_name, "write_file") == 0,
         edit = strcmp(call->tool_name, "edit_file") == 0;
    if (!(read && acp->client_reads) && !(write && acp->client_writes) &&
        !(edit && acp->client_reads && acp->client_writes))
        return false;
    json_doc d = {0};
    arena a = ARENA_INIT;
    json_doc_parse(&d, call->arguments, strlen(call->arguments), NULL); /* checked by the service */
    if (write) {
        const char *content = argument(&d, "content", &a);
        write_file_request(acp, s, token, call->path, content ? content : "");
    } else {
        buf out = BUF_INIT;
        json_writer w;
        outgoing *o = request_begin(acp, &w, &out, "fs/read_text_file", read ? OUT_READ : OUT_EDIT_READ, s);
        o->token = token;
        o->path = xstrdup(call->path);
        jw_object_begin(&w);
        jw_key_string(&w, "sessionId", s->id);
        jw_key_string(&w, "path", call->path);
        if (read) {
            json_ref offset = json_get(&d, json_root(&d), "line_offset"), limit = json_get(&d, json_root(&d), "limit");
            int64_t v;
            if (offset != JSON_NO_REF && json_int64(&d, offset, &v) && v > 0)
                jw_key_int(&w, "line", v + 1);
            if (limit != JSON_NO_REF && json_int64(&d, limit, &v) && v > 0)
                jw_key_int(&w, "limit", v);
        } else {
            const char *old = argument(&d, "old_string", &a), *new_text = argument(&d, "new_string", &a);
            o->old_string = xstrdup(old ? old : "");
            o->new_string = xstrdup(new_text ? new_text : "");
            json_ref all = json_get(&d, json_root(&d), "all_occurrences");
            if (all != JSON_NO_REF)
                json_bool(&d, all, &o->all_occurrences);
        }
        jw_object_end(&w);
        request_send(acp, o, &out);
    }
    arena_free(&a);
    json_doc_free(&d);
    return true;
}

static void host_cancel(void *ctx, void *token)
{
    acp_frontend *acp = ctx;
    for (terminal_run *t = acp->terminals; t; t = t->next)
        if (t->token == token) {
            t->token = NULL;
            if (t->terminal_id && !t->exited && !acp->closing)
                terminal_simple(t, "terminal/kill", OUT_TERMINAL_OTHER);
            terminal_finish(t);
            return;
        }
    for (outgoing *o = acp->outgoing; o; o = o->next)
        if (o->token == token) {
            withdraw(acp, o);
            return;
        }
}

static const agent_tool_host host = {host_run, host_cancel};

/* An error object's message, for a tool result. */
static void error_output(const json_doc *d, json_ref error, buf *out)
{
    arena a = ARENA_INIT;
    const char *message = NULL;
    json_ref m = json_get(d, error, "message");
    if (m == JSON_NO_REF || !json_string(d, m, &a, &message, NULL))
        message = "the client refused";
    buf_appendf(out, "Error: %s", message);
    arena_free(&a);
}

static void answered_file(acp_frontend *acp, outgoing *o, const json_doc *d, json_ref result, json_ref error)
{
    buf output = BUF_INIT;
    bool failed = true;
    arena a = ARENA_INIT;
    if (error != JSON_NO_REF) {
        error_output(d, error, &output);
    } else if (o->kind == OUT_WRITE) {
        buf_appendf(&output, "Wrote %zu bytes to %s", strlen(o->new_string), o->path);
        failed = false;
    } else {
        const char *content = NULL;
        size_t len = 0;
        json_ref c = result != JSON_NO_REF ? json_get(d, result, "content") : JSON_NO_REF;
        if (c == JSON_NO_REF || !json_string(d, c, &a, &content, &len)) {
            buf_append_str(&output, "Error: the client's fs/read_text_file answered no content");
        } else if (o->kind == OUT_READ) {
            buf_append(&output, content, len);
            if (!output.data)
                buf_append(&output, "", 0);
            failed = false;
        } else {
            buf edited = BUF_INIT;
            size_t count = apply_edit(content, o->old_string, o->new_string, o->all_occurrences, &edited);
            if (count == 0) {
                buf_appendf(&output, "Error: old_string was not found in %s", o->path);
            } else if (!edited.data) {
                buf_appendf(&output, "Error: old_string occurs %zu times in %s; give more context or set "
                                     "all_occurrences", count, o->path);
            } else {
                /* the second half of the edit: the write, still for the same call */
                write_file_request(acp, o->session, o->token, o->path, edited.data);
                buf_free(&edited);
                buf_free(&output);
                arena_free(&a);
                return;
            }
            buf_free(&edited);
        }
    }
    arena_free(&a);
    agent_host_call_done(o->token, failed, output.data);
    buf_free(&output);
}

static void answered_permission(acp_frontend *acp, outgoing *o, const json_doc *d, json_ref result)
{
    json_ref outcome = result != JSON_NO_REF ? json_get(d, result, "outcome") : JSON_NO_REF;
    json_ref kind = outcome != JSON_NO_REF ? json_get(d, outcome, "outcome") : JSON_NO_REF;
    json_ref option = outcome != JSON_NO_REF ? json_get(d, outcome, "optionId") : JSON_NO_REF;
    if (kind == JSON_NO_REF || !json_string_eq(d, kind, "selected") || option == JSON_NO_REF)
        return; /* cancelled: the turn is being stopped by session/cancel */
    bool always_allow = json_string_eq(d, option, "allow_always"), always_reject = json_string_eq(d, option, "reject_always");
    bool allow = always_allow || json_string_eq(d, option, "allow_once");
    if (always_allow || always_reject)
        remember(o->session, o->tool_name, always_allow);
    agent_tool_answer(acp->agent, o->session->id, o->tool_id, allow, NULL);
}

static void answered(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    outgoing *o = ctx;
    acp_frontend *acp = o->acp;
    (void)id;
    outgoing_remove(acp, o);
    if (answer->status != 0) {
        outgoing_free(o); /* withdrawn, or the client is gone */
        return;
    }
    const json_doc *d = answer->doc;
    json_ref result = answer->result, error = answer->error;
    if (o->kind == OUT_PERMISSION) {
        if (error != JSON_NO_REF)
            agent_tool_answer(acp->agent, o->session->id, o->tool_id, false, NULL);
        else
            answered_permission(acp, o, d, result);
    } else if (o->kind >= OUT_TERMINAL_CREATE) {
        terminal_answered(acp, o, d, result, error);
    } else {
        answered_file(acp, o, d, result, error);
    }
    outgoing_free(o);
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
    acp_session *s = find_session(r->acp, id);
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
    result_begin(&w, &out);
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
    result_send(r->request, &out);
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
    answer_ready(r->acp);
}

static char *new_session_id(void)
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

static void m_session_new(method_call *r)
{
    if (r->params == JSON_NO_REF || !session_place(r))
        return;
    char *id = new_session_id();
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
        send_text_chunk(acp, rp->s, "user_message_chunk", m->text, strlen(m->text));
    } else if (strcmp(m->role, "assistant") == 0) {
        if (m->text && m->text[0])
            send_text_chunk(acp, rp->s, "agent_message_chunk", m->text, strlen(m->text));
        for (size_t i = 0; i < m->call_count; i++) {
            buf out = BUF_INIT;
            json_writer w;
            update_begin(&w, &out, rp->s, "tool_call");
            jw_key_string(&w, "toolCallId", m->call_ids[i]);
            jw_key_string(&w, "status", "pending");
            write_call_fields(&w, NULL, m->call_ids[i], m->call_names[i], m->call_arguments[i],
                              acp->agent->workspace);
            update_send(acp, &w, &out);
        }
    } else if (m->tool_call_id) {
        const char *text = m->text ? m->text : "";
        send_call_update(acp, rp->s, m->tool_call_id, m->error ? "failed" : "completed", text, strlen(text), false);
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

typedef struct accept_ctx {
    acp_frontend *acp;
    char *session_id;
} accept_ctx;

static void prompt_accepted(void *ctx, int status, const ecp_error *err, const char *chat_id, const char *model)
{
    (void)chat_id;
    (void)model;
    accept_ctx *a = ctx;
    acp_session *s = find_session(a->acp, a->session_id);
    if (s && s->prompt) {
        if (status < 0) {
            reply_error(s->prompt, status == ECP_EINVAL ? RPC_INVALID_PARAMS : RPC_INTERNAL_ERROR, "%s",
                        err ? err->message : "the prompt failed");
            clear_turn(s);
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
    ecp_error err = {0};
    if (agent_prompt(r->acp->agent, s->id, text.data, s->model, prompt_accepted, a, &err) < 0) {
        clear_turn(s);
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
    reply_empty(r->request);
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
    result_begin(&w, &out);
    jw_object_begin(&w);
    jw_key(&w, "configOptions");
    write_config_options(&w, r->acp, s);
    jw_object_end(&w);
    result_send(r->request, &out);
}

static void n_cancel(acp_frontend *acp, const json_doc *d, json_ref params)
{
    json_ref id = params != JSON_NO_REF ? json_get(d, params, "sessionId") : JSON_NO_REF;
    arena a = ARENA_INIT;
    const char *sid;
    acp_session *s = id != JSON_NO_REF && json_string(d, id, &a, &sid, NULL) ? find_session(acp, sid) : NULL;
    arena_free(&a);
    if (!s || !s->prompt)
        return;
    s->cancelled = true;
    /* a permission request still out is withdrawn: its answer will be ignored */
    for (outgoing *o = acp->outgoing, *next; o; o = next) {
        next = o->next;
        if (o->session == s && o->kind == OUT_PERMISSION)
            withdraw(acp, o);
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

static void on_request(void *ctx, ecp_peer_request *request, const char *name, const json_doc *d, json_ref params)
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

static void on_notification(void *ctx, const char *name, const json_doc *d, json_ref params)
{
    /* other notifications ($/cancel_request, extensions) are not ours to act on */
    if (strcmp(name, "session/cancel") == 0)
        n_cancel(ctx, d, params);
}

/* ----- input ----------------------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    acp_frontend *acp = s->data;
    if (n > 0 && !acp->closing)
        ecp_peer_feed(acp->peer, b->base, (size_t)n);
    free(b->base);
    if (n < 0) {
        uv_read_stop(s);
        ecp_peer_feed_end(acp->peer);
        if (acp->on_eof)
            acp->on_eof(acp->ctx);
    }
}

/* A withdrawn request's answer is simply ignored: ACP has no cancel notice for it. */
static void send_no_cancel(void *ctx, ecp_peer *peer, int64_t id)
{
    (void)ctx, (void)peer, (void)id;
}

/* ----- lifetime -------------------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
    acp_frontend *acp = h->data;
    acp->open_handles--;
}

static void out_shut(uv_shutdown_t *req, int status)
{
    (void)status;
    acp_frontend *acp = req->data;
    free(req);
    uv_close((uv_handle_t *)&acp->out, handle_closed);
}

acp_frontend *acp_frontend_open(uv_loop_t *loop, agent_service *agent, ecp_logger *log, const char *version,
                                void (*on_eof)(void *ctx), void *ctx, ecp_error *err)
{
    uv_handle_type in_type = uv_guess_handle(STDIN_FILENO), out_type = uv_guess_handle(STDOUT_FILENO);
    if (in_type != UV_NAMED_PIPE && in_type != UV_TTY) {
        ecp_error_set(err, ECP_ENOTSUP, "--acp needs stdin to be a pipe");
        return NULL;
    }
    acp_frontend *acp = xcalloc(1, sizeof *acp);
    acp->loop = loop;
    acp->agent = agent;
    acp->log = log;
    acp->on_eof = on_eof;
    acp->ctx = ctx;
    acp->version = version;
    ecp_peer_options options = {
        .framing = FRAMING_NEWLINE, .max_message = ACP_MAX_LINE, .answer_invalid = true, .params_object_only = true,
    };
    ecp_peer_handlers handlers = {
        .ctx = acp, .write = write_out, .on_request = on_request, .on_notification = on_notification,
        .send_cancel = send_no_cancel,
    };
    acp->peer = ecp_peer_new(loop, &options, &handlers);
    uv_pipe_init(loop, &acp->in, 0);
    acp->in.data = acp;
    acp->open_handles++;
    if (uv_pipe_open(&acp->in, STDIN_FILENO) != 0) {
        /* as if the client had gone at once */
        ecp_log(log, ECP_LOG_ERROR, "--acp: cannot read stdin");
        uv_close((uv_handle_t *)&acp->in, handle_closed);
        acp->closing = true;
        agent_subscribe(agent, &listener, acp);
        agent_set_tool_host(agent, &host, acp);
        if (on_eof)
            on_eof(ctx);
        return acp;
    }
    if (out_type == UV_NAMED_PIPE) {
        uv_pipe_init(loop, &acp->out, 0);
        acp->out.data = acp;
        acp->open_handles++;
        if (uv_pipe_open(&acp->out, STDOUT_FILENO) == 0)
            acp->out_is_pipe = true;
        else
            uv_close((uv_handle_t *)&acp->out, handle_closed);
    }
    agent_subscribe(agent, &listener, acp);
    agent_set_tool_host(agent, &host, acp);
    uv_read_start((uv_stream_t *)&acp->in, on_alloc, on_read);
    return acp;
}

void acp_frontend_close(acp_frontend *self)
{
    if (self->closing)
        return;
    self->closing = true;
    /* the client is gone or going: its terminals with it */
    while (self->terminals) {
        terminal_run *t = self->terminals;
        t->token = NULL;
        terminal_finish(t);
    }
    if (!uv_is_closing((uv_handle_t *)&self->in)) {
        uv_read_stop((uv_stream_t *)&self->in);
        uv_close((uv_handle_t *)&self->in, handle_closed);
    }
    if (self->out_is_pipe) {
        uv_shutdown_t *req = xmalloc(sizeof *req);
        req->data = self;
        if (uv_shutdown(req, (uv_stream_t *)&self->out, out_shut) != 0) {
            free(req);
            uv_close((uv_handle_t *)&self->out, handle_closed);
        }
    }
}

bool acp_frontend_closed(const acp_frontend *self) { return self->open_handles == 0; }

void acp_frontend_free(acp_frontend *self)
{
    if (!self)
        return;
    agent_set_tool_host(self->agent, NULL, NULL);
    agent_unsubscribe(self->agent, &listener, self);
    /* completes (and frees) every request still out, and releases those unanswered */
    ecp_peer_free(self->peer);
    for (waiting_answer *w = self->waiting, *next; w; w = next) {
        next = w->next;
        waiting_free(w);
    }
    for (acp_session *s = self->sessions, *next; s; s = next) {
        next = s->next;
        session_free(s);
    }
    free(self);
}
