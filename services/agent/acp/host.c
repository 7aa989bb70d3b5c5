/* acp host: tools run on the client's side, through its file system and its terminals. */
#include "acp.h"

/* ----- the client's file system ------------------------------------------------------------------ */

static void write_file_request(acp_frontend *acp, acp_session *s, void *token, const char *path, const char *content)
{
    buf out = BUF_INIT;
    json_writer w;
    outgoing *o = acp__request_begin(acp, &w, &out, "fs/write_text_file", OUT_WRITE, s);
    o->token = token;
    o->path = xstrdup(path);
    o->new_string = xstrdup(content); /* for the result's byte count */
    jw_object_begin(&w);
    jw_key_string(&w, "sessionId", s->id);
    jw_key_string(&w, "path", path);
    jw_key_string(&w, "content", content);
    jw_object_end(&w);
    acp__request_send(acp, o, &out);
}

static void error_output(const json_doc *d, json_ref error, buf *out);

#define SHELL_TIMEOUT_DEFAULT_MS 30000
#define SHELL_TIMEOUT_MAX_MS 600000
#define TERMINAL_OUTPUT_LIMIT (64 << 10)

static outgoing *terminal_request(terminal_run *t, const char *method, outgoing_kind kind, json_writer *w, buf *out)
{
    outgoing *o = acp__request_begin(t->acp, w, out, method, kind, t->session);
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
    acp__request_send(t->acp, o, &out);
}

static void terminal_timer_closed(uv_handle_t *h)
{
    terminal_run *t = h->data;
    t->acp->open_handles--;
    free(t->terminal_id);
    free(t);
}

/* Ends the run: releases the client's terminal (if it has one) and forgets it. */
void acp__terminal_finish(terminal_run *t)
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
    acp__terminal_finish(t);
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
    const char *command = acp__argument(&d, "command", &a);
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
    acp__request_send(acp, create, &out);
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
            acp__update_begin(&w, &out, t->session, "tool_call_update");
            jw_key_string(&w, "toolCallId", o->tool_id);
            jw_key(&w, "content");
            jw_array_begin(&w);
            jw_object_begin(&w);
            jw_key_string(&w, "type", "terminal");
            jw_key_string(&w, "terminalId", t->terminal_id);
            jw_object_end(&w);
            jw_array_end(&w);
            acp__update_send(acp, &w, &out);
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
    acp_session *s = acp__find_session(acp, call->chat_id);
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
        const char *content = acp__argument(&d, "content", &a);
        write_file_request(acp, s, token, call->path, content ? content : "");
    } else {
        buf out = BUF_INIT;
        json_writer w;
        outgoing *o = acp__request_begin(acp, &w, &out, "fs/read_text_file", read ? OUT_READ : OUT_EDIT_READ, s);
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
            const char *old = acp__argument(&d, "old_string", &a), *new_text = acp__argument(&d, "new_string", &a);
            o->old_string = xstrdup(old ? old : "");
            o->new_string = xstrdup(new_text ? new_text : "");
            json_ref all = json_get(&d, json_root(&d), "all_occurrences");
            if (all != JSON_NO_REF)
                json_bool(&d, all, &o->all_occurrences);
        }
        jw_object_end(&w);
        acp__request_send(acp, o, &out);
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
            acp__terminal_finish(t);
            return;
        }
    for (outgoing *o = acp->outgoing; o; o = o->next)
        if (o->token == token) {
            acp__withdraw(acp, o);
            return;
        }
}

const agent_tool_host acp__host = {host_run, host_cancel};

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
            size_t count = acp__apply_edit(content, o->old_string, o->new_string, o->all_occurrences, &edited);
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
        acp__remember(o->session, o->tool_name, always_allow);
    agent_tool_answer(acp->agent, o->session->id, o->tool_id, allow, NULL);
}

void acp__answered(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    outgoing *o = ctx;
    acp_frontend *acp = o->acp;
    (void)id;
    acp__outgoing_remove(acp, o);
    if (answer->status != 0) {
        acp__outgoing_free(o); /* withdrawn, or the client is gone */
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
    acp__outgoing_free(o);
}
