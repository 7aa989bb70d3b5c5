/* acp updates: the agent's events as session/update notifications, and permission requests. */
#include "acp.h"

#include <errno.h>
#include <fcntl.h>

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
const char *acp__argument(const json_doc *d, const char *key, arena *a)
{
    json_ref v = json_get(d, json_root(d), key);
    const char *s = NULL;
    if (v == JSON_NO_REF || !json_string(d, v, a, &s, NULL))
        return NULL;
    return s;
}

static void write_title(json_writer *w, const char *name, const json_doc *d, arena *a)
{
    const char *path = acp__argument(d, "path", a), *command = acp__argument(d, "command", a),
               *pattern = acp__argument(d, "pattern", a);
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
void acp__write_call_fields(json_writer *w, const acp_session *s, const char *tool_id, const char *name,
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
    const char *path = parsed ? acp__argument(&d, "path", &a) : NULL;
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
    acp__update_begin(&w, &out, s, "tool_call");
    jw_key_string(&w, "toolCallId", tool_id);
    jw_key_string(&w, "status", "pending");
    acp__write_call_fields(&w, s, tool_id, name, arguments, acp->agent->workspace);
    acp__update_send(acp, &w, &out);
}

/* The file as it is now, to show the diff against; NULL when it is missing
 * (*missing) or is not a regular text file of at most READ_TEXT_MAX bytes.
 * The path is the model's, inside a workspace nobody may have trusted: a
 * FIFO there would block the loop in open or read, a link to /dev/zero would
 * never end. So it is opened without waiting and read only when regular. */
static char *read_whole(const char *path, bool *missing)
{
    *missing = false;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        *missing = errno == ENOENT;
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > READ_TEXT_MAX) {
        close(fd);
        return NULL;
    }
    buf b = BUF_INIT;
    char chunk[65536];
    bool whole = true;
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            whole = false;
            break;
        }
        if (n == 0)
            break;
        if (b.len + (size_t)n > READ_TEXT_MAX) { /* it grew while read */
            whole = false;
            break;
        }
        buf_append(&b, chunk, (size_t)n);
    }
    close(fd);
    if (!whole) {
        buf_free(&b);
        return NULL;
    }
    if (!b.data)
        buf_append(&b, "", 0);
    return buf_detach(&b);
}

/* old -> new in text; returns the count of replacements made (0: none; with
 * !all, more than one occurrence is refused and counted without replacing). */
size_t acp__apply_edit(const char *text, const char *old, const char *new_text, bool all, buf *out)
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
    acp__clear_diff(s);
    bool write = strcmp(name, "write_file") == 0, edit = strcmp(name, "edit_file") == 0;
    if (!write && !edit)
        return;
    json_doc d = {0};
    arena a = ARENA_INIT;
    char *resolved = NULL;
    if (json_doc_parse(&d, arguments, strlen(arguments), NULL) < 0)
        goto out;
    const char *path = acp__argument(&d, "path", &a);
    if (!path || !acp->agent->workspace || agent_confine(acp->agent->workspace, path, &resolved, NULL) < 0)
        goto out;
    bool missing;
    char *current = read_whole(resolved, &missing);
    if (!current && !missing)
        goto out; /* not a file whose text can be shown: the call is shown without a diff */
    if (write) {
        const char *content = acp__argument(&d, "content", &a);
        if (content) {
            s->diff_new = xstrdup(content);
            s->diff_old = current;
            s->diff_new_file = missing;
            current = NULL;
        }
    } else if (current) {
        const char *old = acp__argument(&d, "old_string", &a), *new_text = acp__argument(&d, "new_string", &a);
        json_ref all_ref = json_get(&d, json_root(&d), "all_occurrences");
        bool all = false;
        if (all_ref != JSON_NO_REF)
            json_bool(&d, all_ref, &all);
        buf edited = BUF_INIT;
        if (old && new_text && acp__apply_edit(current, old, new_text, all, &edited) > 0 && edited.data) {
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

void acp__send_call_update(acp_frontend *acp, acp_session *s, const char *tool_id, const char *status,
                             const char *text, size_t text_len, bool with_diff)
{
    buf out = BUF_INIT;
    json_writer w;
    acp__update_begin(&w, &out, s, "tool_call_update");
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
    acp__update_send(acp, &w, &out);
}

static void ask_permission(acp_frontend *acp, acp_session *s, const agent_content *c)
{
    buf out = BUF_INIT;
    json_writer w;
    outgoing *o = acp__request_begin(acp, &w, &out, "session/request_permission", OUT_PERMISSION, s);
    o->tool_id = xstrdup(c->tool_id);
    o->tool_name = xstrdup(c->tool_name);
    jw_object_begin(&w);
    jw_key_string(&w, "sessionId", s->id);
    jw_key(&w, "toolCall");
    jw_object_begin(&w);
    jw_key_string(&w, "toolCallId", c->tool_id);
    jw_key_string(&w, "status", "pending");
    acp__write_call_fields(&w, s, c->tool_id, c->tool_name, c->arguments, acp->agent->workspace);
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
    acp__request_send(acp, o, &out);
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
            acp__send_text_chunk(acp, s, "agent_message_chunk", s->system_text.data, s->system_text.len);
        const char *reason = s->cancelled || c->stop == AGENT_STOP_CANCELLED ? "cancelled"
                             : c->stop == AGENT_STOP_TURN_LIMIT             ? "max_turn_requests"
                             : c->stop == AGENT_STOP_MAX_TOKENS             ? "max_tokens"
                             : c->stop == AGENT_STOP_REFUSAL                ? "refusal"
                                                                            : "end_turn";
        buf out = BUF_INIT;
        json_writer w;
        acp__result_begin(&w, &out);
        jw_object_begin(&w);
        jw_key_string(&w, "stopReason", reason);
        jw_object_end(&w);
        acp__result_send(s->prompt, &out);
    }
    acp__clear_turn(s);
}

static void on_content(void *ctx, const agent_content *c)
{
    acp_frontend *acp = ctx;
    acp_session *s = acp__find_session(acp, c->chat_id);
    if (!s || !s->prompt)
        return; /* a chat of another front end, or a turn no prompt of ours started */
    switch (c->type) {
    case AGENT_CONTENT_TEXT:
        if (c->role && strcmp(c->role, "assistant") == 0 && c->text_len)
            acp__send_text_chunk(acp, s, "agent_message_chunk", c->text, c->text_len);
        else if (c->text_len)
            buf_append(&s->system_text, c->text, c->text_len); /* an error's goes in the error instead */
        break;
    case AGENT_CONTENT_PLAN: {
        buf out = BUF_INIT;
        json_writer w;
        acp__update_begin(&w, &out, s, "plan");
        jw_key(&w, "entries");
        jw_raw(&w, c->arguments, strlen(c->arguments));
        acp__update_send(acp, &w, &out);
        break;
    }
    case AGENT_CONTENT_REASON_TEXT:
        acp__send_text_chunk(acp, s, "agent_thought_chunk", c->text, c->text_len);
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
        const standing_answer *a = acp__standing(s, c->tool_name);
        if (s->allow_all || a) {
            agent_tool_answer(acp->agent, s->id, c->tool_id, s->allow_all || a->allow, NULL);
            break;
        }
        ask_permission(acp, s, c);
        break;
    }
    case AGENT_CONTENT_TOOL_RUNNING:
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        acp__send_call_update(acp, s, c->tool_id, "in_progress", NULL, 0, false);
        break;
    case AGENT_CONTENT_TOOL_CALLED: {
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        bool diff = !c->error && s->diff_tool_id && strcmp(s->diff_tool_id, c->tool_id) == 0;
        acp__send_call_update(acp, s, c->tool_id, c->error ? "failed" : "completed", c->text, c->text_len, diff);
        break;
    }
    case AGENT_CONTENT_TOOL_REJECTED: {
        announce(acp, s, c->tool_id, c->tool_name, c->arguments);
        const char *why = strcmp(c->reason, "userChoiceDeny") == 0 ? "Rejected by the user" : "Cancelled";
        acp__send_call_update(acp, s, c->tool_id, "failed", why, strlen(why), false);
        /* a permission request still out for it is void */
        for (outgoing *o = acp->outgoing; o; o = o->next)
            if (o->kind == OUT_PERMISSION && o->session == s && strcmp(o->tool_id, c->tool_id) == 0) {
                acp__withdraw(acp, o);
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
    acp__update_begin(&w, &out, s, "available_commands_update");
    jw_key(&w, "availableCommands");
    jw_array_begin(&w);
    for (size_t i = 0; i < n; i++) {
        jw_object_begin(&w);
        jw_key_string(&w, "name", commands[i].name);
        jw_key_string(&w, "description", commands[i].description);
        jw_object_end(&w);
    }
    jw_array_end(&w);
    acp__update_send(acp, &w, &out);
}

void acp__waiting_free(waiting_answer *w)
{
    for (size_t i = 0; i < w->server_count; i++)
        free(w->servers[i]);
    free(w->servers);
    free(w);
}

/* Answers every session/new or session/load whose servers are all running or failed. */
void acp__answer_ready(acp_frontend *acp)
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
        acp__reply_session_state(acp, w->request, w->session, w->with_id);
        send_commands(acp, w->session);
        acp__waiting_free(w);
    }
}

static void on_mcp(void *ctx, const agent_mcp_info *info)
{
    acp_frontend *acp = ctx;
    if (strcmp(info->status, "failed") == 0)
        ecp_log(acp->log, ECP_LOG_ERROR, "MCP server %s failed: %s; its tools are not offered", info->name,
                info->error ? info->error : "");
    acp__answer_ready(acp);
}

const agent_listener acp__listener = {on_content, on_status, on_deleted, on_mcp};
