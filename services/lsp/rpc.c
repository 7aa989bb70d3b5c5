/* JSON-RPC with a server process: the process (core/process) with its
 * stderr logged, the endpoint (core/peer) with Content-Length framing, the
 * gate that holds messages until initialize is answered, requests out with
 * their timeouts, and messages in, dispatched by kind. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "event.h"
#include "framing.h"
#include "internal.h"
#include "json.h"
#include "session/interface.h"
#include "shared.h"
#include "uri.h"

/* A line of stderr longer than this is logged in parts. */
#define LSP_STDERR_LINE 2000

/* ----- the process ------------------------------------------------------------------ */

static void proc_free(lsp_proc *p)
{
    if (p->svc) {
        if (p->prev)
            p->prev->next = p->next;
        else
            p->svc->procs = p->next;
        if (p->next)
            p->next->prev = p->prev;
    }
    ecp_process_close(p->process);
    ecp_peer_free(p->peer);
    buf_free(&p->err_line);
    free(p->language_id);
    free(p);
}

void lsp_proc_write(lsp_proc *p, const char *data, size_t len)
{
    if (p && !p->exited)
        ecp_process_write(p->process, data, len);
}

void lsp_proc_write_shared(lsp_proc *p, ecp_shared *bytes)
{
    if (p && !p->exited)
        ecp_process_write_shared(p->process, bytes);
}

void lsp_proc_drop_held(lsp_proc *p) { ecp_process_drop_held(p->process); }

static void proc_output(void *ctx, const char *data, size_t len)
{
    lsp_proc *p = ctx;
    ecp_peer_feed(p->peer, data, len); /* a detached process's peer is closed: ignored */
}

static void proc_error_output(void *ctx, const char *data, size_t len)
{
    lsp_proc *p = ctx;
    for (size_t i = 0; i < len; i++) {
        char c = data[i];
        if (c == '\n' || p->err_line.len > LSP_STDERR_LINE) {
            if (p->err_line.len)
                ecp_log(p->log, ECP_LOG_DEBUG, "lsp %s stderr: %s", p->language_id, p->err_line.data);
            buf_clear(&p->err_line);
        } else {
            buf_push(&p->err_line, c);
        }
    }
}

static void proc_exit(void *ctx, int64_t code, int sig)
{
    lsp_proc *p = ctx;
    p->exited = true;
    char why[128];
    if (sig)
        snprintf(why, sizeof why, "the server was killed by signal %d", sig);
    else
        snprintf(why, sizeof why, "the server exited with code %lld", (long long)code);
    ecp_log(p->log, p->server ? ECP_LOG_WARN : ECP_LOG_DEBUG, "lsp %s: %s", p->language_id, why);
    if (p->server)
        lsp_server_proc_gone(p->server, why); /* which releases p, and so frees it */
    else
        proc_free(p);
}

void lsp_proc_release(lsp_proc *p, bool kill_now)
{
    if (!p)
        return;
    p->server = NULL;
    /* nothing it says matters now, and what it was asked is answered already */
    ecp_peer_close(p->peer, "the server was stopped");
    if (p->exited) {
        proc_free(p);
        return;
    }
    if (kill_now)
        ecp_process_kill_now(p->process); /* proc_exit frees it */
    else
        ecp_process_kill_after(p->process, LSP_STOP_GRACE_MS);
}

void lsp_proc_stop(lsp_proc *p, bool at_teardown)
{
    if (!p)
        return;
    if (!p->exited) {
        static const char shutdown_msg[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"shutdown\"}";
        static const char exit_msg[] = "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}";
        buf out = BUF_INIT;
        lsp_frame(&out, shutdown_msg, sizeof shutdown_msg - 1);
        lsp_frame(&out, exit_msg, sizeof exit_msg - 1);
        lsp_proc_write(p, out.data, out.len);
        buf_free(&out);
    }
    if (!at_teardown) {
        lsp_proc_release(p, false);
        return;
    }
    /* The loop may not turn again: nothing may outlive the service, so the
     * process is killed (it had its exit) and let go now. */
    p->server = NULL;
    ecp_process_kill_now(p->process);
    proc_free(p);
}

void lsp_procs_end(lsp_service *svc)
{
    while (svc->procs) {
        lsp_proc *p = svc->procs;
        ecp_process_kill_now(p->process);
        proc_free(p);
    }
}

/* ----- the peer ---------------------------------------------------------------------- */

static void proc_send(void *ctx, const char *data, size_t len, int64_t request_id)
{
    (void)request_id; /* a server that stopped reading is noticed by its exit */
    lsp_proc_write(ctx, data, len);
}

static void proc_request(void *ctx, ecp_peer_request *request, const char *method, const json_doc *doc,
                         json_ref params)
{
    lsp_proc *p = ctx;
    (void)method;
    if (!p->server)
        return; /* answered nowhere when the peer is freed */
    lsp_server_request_in(p->server, request, doc, json_get(doc, json_root(doc), "method"), params);
}

static void proc_notification(void *ctx, const char *method, const json_doc *doc, json_ref params)
{
    lsp_proc *p = ctx;
    (void)method;
    if (p->server)
        lsp_server_notification_in(p->server, doc, json_get(doc, json_root(doc), "method"), params);
}

static void proc_problem(void *ctx, ecp_peer_problem problem, const char *detail)
{
    lsp_proc *p = ctx;
    switch (problem) {
    case ECP_PEER_OVERSIZED:
        ecp_log(p->log, ECP_LOG_WARN, "lsp %s: dropped a message: %s", p->language_id, detail);
        break;
    case ECP_PEER_MALFORMED:
        ecp_log(p->log, ECP_LOG_WARN, "lsp %s: ignored a message: %s", p->language_id, detail);
        break;
    case ECP_PEER_STRAY: /* answered after its timeout or cancel */
        ecp_log(p->log, ECP_LOG_DEBUG, "lsp %s: ignored %s", p->language_id, detail);
        break;
    case ECP_PEER_BROKEN:
        ecp_log(p->log, ECP_LOG_ERROR, "lsp %s: the server wrote something that is not LSP; stopping it",
                p->language_id);
        if (p->server)
            lsp_server_proc_gone(p->server, "the server wrote something that is not LSP");
        break;
    }
}

lsp_proc *lsp_proc_spawn(lsp_server *s, const char *file, const lsp_server_config *config, ecp_error *err)
{
    lsp_service *svc = s->svc;
    lsp_proc *p = xcalloc(1, sizeof *p);
    p->server = s;
    p->log = svc->log;
    p->language_id = xstrdup(s->language_id);
    buf_init(&p->err_line);
    ecp_peer_options peer_options = {.framing = FRAMING_CONTENT_LENGTH, .max_message = svc->max_message};
    ecp_peer_handlers handlers = {
        .ctx = p, .write = proc_send, .on_request = proc_request, .on_notification = proc_notification,
        .on_problem = proc_problem,
    };
    p->peer = ecp_peer_new(svc->loop, &peer_options, &handlers);
    ecp_peer_gate_close(p->peer);

    size_t argc = 0;
    while (config->args && config->args[argc])
        argc++;
    const char **argv = xcalloc(argc + 2, sizeof *argv);
    argv[0] = file;
    for (size_t i = 0; i < argc; i++)
        argv[i + 1] = config->args[i];
    size_t envc = 0;
    while (config->env && config->env[envc])
        envc++;
    const char **env = xcalloc(envc + 2, sizeof *env);
    char *path_var = lsp_absolute_path_var();
    size_t kept = 0;
    if (path_var)
        env[kept++] = path_var;
    for (size_t i = 0; i < envc; i++)
        env[kept++] = config->env[i];

    buf cwd = BUF_INIT;
    if (!s->root_uri || uri_file_path(s->root_uri, strlen(s->root_uri), &cwd, NULL) != 0 ||
        access(cwd.data, F_OK) != 0) {
        buf_clear(&cwd);
        buf_append_str(&cwd, "/");
    }
    ecp_process_options o = {
        .argv = argv, .env_add = env, .cwd = cwd.data, .pipe_stdin = true, .pipe_stdout = true,
        .stderr_to = ECP_STDERR_PIPE, .ctx = p, .on_output = proc_output, .on_error_output = proc_error_output,
        .on_exit = proc_exit,
    };
    ecp_error spawn_err = {0};
    p->process = ecp_process_start(svc->loop, &o, &spawn_err);
    free(argv);
    free(env);
    free(path_var);
    buf_free(&cwd);
    if (!p->process) {
        /* its message names the program too: "cannot start <file>: <why>" */
        const char *why = strrchr(spawn_err.message, ':');
        ecp_error_set(err, ECP_EIO, "Failed to start %s: %s", file, why ? why + 2 : spawn_err.message);
        proc_free(p);
        return NULL;
    }
    p->svc = svc;
    p->next = svc->procs;
    if (svc->procs)
        svc->procs->prev = p;
    svc->procs = p;
    return p;
}

/* ----- JSON-RPC to the server -------------------------------------------------------- */

void lsp_frame(buf *out, const char *json, size_t len) { framing_encode(FRAMING_CONTENT_LENGTH, out, json, len); }

static void initialize_answered(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    lsp_proc *p = ctx;
    lsp_server *s = p->server;
    (void)id;
    if (answer->status != 0 || !s || s->status != LSP_STARTING)
        return; /* the process is gone already, and why was told */
    if (answer->error != JSON_NO_REF || json_type_of(answer->doc, answer->result) != JSON_OBJECT) {
        char why[600];
        json_ref message = json_get(answer->doc, answer->error, "message");
        if (json_type_of(answer->doc, message) == JSON_STRING)
            snprintf(why, sizeof why, "initialize failed: %s", answer->message);
        else
            snprintf(why, sizeof why, "initialize failed");
        lsp_server_proc_gone(s, why);
        return;
    }
    lsp_server_ready(s, answer->doc, answer->result);
}

void lsp_server_initialize(lsp_server *s, const char *params)
{
    /* its deadline is the server's start timer, not a request timeout */
    ecp_peer_call_past_gate(s->proc->peer, "initialize", params, 0, initialize_answered, s->proc);
}

void lsp_server_initialized(lsp_server *s) { ecp_peer_notify_past_gate(s->proc->peer, "initialized", "{}"); }

void lsp_server_open_gate(lsp_server *s) { ecp_peer_gate_open(s->proc->peer); }

void lsp_server_notify(lsp_server *s, const char *method, const char *params, size_t params_len)
{
    assert(params[params_len] == '\0');
    (void)params_len;
    if (!s->proc)
        return;
    if (s->status == LSP_READY)
        ecp_peer_notify_past_gate(s->proc->peer, method, params);
    else
        ecp_peer_notify(s->proc->peer, method, params);
}

/* Unlinks the request and runs its callback once. */
void lsp_request_finish(lsp_request *r, int status, const ecp_error *err, const lsp_result *result)
{
    if (r->server) {
        for (lsp_request **pp = &r->server->pending; *pp; pp = &(*pp)->next)
            if (*pp == r) {
                *pp = r->next;
                break;
            }
    }
    r->server = NULL;
    lsp_result_cb cb = r->cb;
    r->cb = NULL;
    if (r->id) { /* still the peer's: it forgets it (request_answered sees the id gone) */
        int64_t id = r->id;
        r->id = 0;
        ecp_peer_fail_request(r->peer, id, "withdrawn");
    }
    if (cb)
        cb(r->ctx, status, err, result);
    free(r->method);
    free(r->uri);
    free(r);
}

static void request_answered(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    lsp_request *r = ctx;
    (void)id;
    if (!r->id)
        return; /* withdrawn by lsp_request_finish */
    r->id = 0;
    const char *language = r->server ? r->server->language_id : "language";
    ecp_error err;
    switch (answer->status) {
    case 0:
        lsp_request_answer_in(r, answer->doc, answer->result, answer->error);
        return;
    case ECP_ETIMEDOUT:
        ecp_error_set(&err, ECP_ETIMEDOUT, "The %s server did not answer %s within %u ms", language, r->method,
                      r->timeout_ms);
        ecp_log(r->svc->log, ECP_LOG_WARN, "lsp: %s", err.message);
        break;
    case ECP_ECANCELED:
        ecp_error_set(&err, ECP_ECANCELED, "Request cancelled");
        break;
    default:
        ecp_error_set(&err, answer->status, "Language server %s: %s", language, answer->message);
        break;
    }
    lsp_request_finish(r, err.status, &err, NULL);
}

void lsp_request_withdraw(lsp_request *r)
{
    if (r->id) {
        ecp_peer_cancel(r->peer, r->id); /* request_answered finishes it */
        return;
    }
    ecp_error err;
    ecp_error_set(&err, ECP_ECANCELED, "Request cancelled");
    lsp_request_finish(r, ECP_ECANCELED, &err, NULL);
}

unsigned lsp_request_timeout_ms(lsp_server *s)
{
    lsp_service *self = s->svc;
    lsp_server_config config;
    if (lsp_config_get(self, s->language_id, &config) && config.timeout_ms)
        return config.timeout_ms;
    if (self->timeout_ms)
        return self->timeout_ms;
    double ms = self->session ? session_setting_number(self->session, "lsp.requestTimeoutMs", 0) : 0;
    return ms >= 1 ? (unsigned)ms : LSP_DEFAULT_TIMEOUT_MS;
}

lsp_request *lsp_server_request(lsp_server *s, const char *method, const char *params, lsp_result_cb cb, void *ctx)
{
    lsp_request *r = xcalloc(1, sizeof *r);
    r->svc = s->svc;
    r->server = s;
    r->method = xstrdup(method);
    r->cb = cb;
    r->ctx = ctx;
    r->next = s->pending;
    s->pending = r;
    r->timeout_ms = lsp_request_timeout_ms(s);
    /* without a process (one gone while its requests fail) it is failed with them */
    if (s->proc) {
        r->peer = s->proc->peer;
        r->id = s->status == LSP_READY
                    ? ecp_peer_call_past_gate(r->peer, method, params, r->timeout_ms, request_answered, r)
                    : ecp_peer_call(r->peer, method, params, r->timeout_ms, request_answered, r);
    }
    return r;
}

void lsp_fail_pending(lsp_server *s, int status, const char *why)
{
    ecp_error err;
    ecp_error_set(&err, status, "Language server %s: %s", s->language_id, why);
    while (s->pending)
        lsp_request_finish(s->pending, status, &err, NULL);
}

void lsp_finish_starters(lsp_server *s, int status, const char *why)
{
    lsp_starter *list = s->starters;
    s->starters = NULL;
    ecp_error err;
    if (status)
        ecp_error_set(&err, status, "%s", why);
    lsp_server_info info;
    lsp_server_info_fill(s, &info);
    while (list) {
        lsp_starter *next = list->next;
        list->cb(list->ctx, status, status ? &err : NULL, &info);
        free(list);
        list = next;
    }
}
