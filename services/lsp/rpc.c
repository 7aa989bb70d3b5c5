/* JSON-RPC with a server process: spawning it, Content-Length framing on
 * its pipes, messages out (notifications, requests with their timers,
 * replies) and messages in, dispatched by kind. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "framing.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "session/interface.h"
#include "shared.h"
#include "uri.h"

/* ----- the process ------------------------------------------------------------------ */

static void proc_handle_closed(uv_handle_t *h)
{
    lsp_proc *p = h->data;
    if (--p->open_handles > 0)
        return;
    if (p->svc) {
        if (p->prev)
            p->prev->next = p->next;
        else
            p->svc->procs = p->next;
        if (p->next)
            p->next->prev = p->prev;
    }
    lsp_proc_drop_held(p);
    framing_decoder_free(&p->decoder);
    buf_free(&p->err_line);
    free(p->language_id);
    free(p);
}

static void proc_close_handle(lsp_proc *p, uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, proc_handle_closed);
}

void lsp_proc_close(lsp_proc *p)
{
    proc_close_handle(p, (uv_handle_t *)&p->in);
    proc_close_handle(p, (uv_handle_t *)&p->out);
    proc_close_handle(p, (uv_handle_t *)&p->err);
    proc_close_handle(p, (uv_handle_t *)&p->kill_timer);
    proc_close_handle(p, (uv_handle_t *)&p->process);
}

static void proc_kill_now(uv_timer_t *t)
{
    lsp_proc *p = t->data;
    if (!p->exited)
        uv_process_kill(&p->process, SIGKILL);
}

/* A write in flight: its own copy of the bytes, or a reference to shared ones. */
typedef struct write_req {
    uv_write_t req;
    char *data;
    ecp_shared *shared;
} write_req;

static void write_done(uv_write_t *req, int status)
{
    (void)status; /* a server that stopped reading is noticed by its exit */
    write_req *w = (write_req *)req;
    free(w->data);
    ecp_shared_unref(w->shared);
    free(w);
}

static void write_now(lsp_proc *p, const char *data, size_t len, ecp_shared *shared)
{
    if (!p || p->exited || uv_is_closing((uv_handle_t *)&p->in))
        return;
    write_req *w = xcalloc(1, sizeof *w);
    if (shared) {
        w->shared = ecp_shared_ref(shared);
    } else {
        w->data = xmalloc(len ? len : 1);
        memcpy(w->data, data, len);
        data = w->data;
    }
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&p->in, &b, 1, write_done) != 0) {
        free(w->data);
        ecp_shared_unref(w->shared);
        free(w);
    }
}

static void held_flush(void *ctx)
{
    lsp_proc *p = ctx;
    while (p->held && ecp_shared_ready(p->held->bytes)) {
        lsp_held *h = p->held;
        p->held = h->next;
        if (!p->held)
            p->held_tail = NULL;
        write_now(p, ecp_shared_data(h->bytes), ecp_shared_len(h->bytes), h->bytes);
        ecp_shared_unref(h->bytes);
        free(h);
    }
}

static void held_push(lsp_proc *p, ecp_shared *bytes)
{
    lsp_held *h = xcalloc(1, sizeof *h);
    h->bytes = bytes;
    if (p->held_tail)
        p->held_tail->next = h;
    else
        p->held = h;
    p->held_tail = h;
    if (!ecp_shared_ready(bytes))
        ecp_shared_when_ready(bytes, held_flush, p);
}

void lsp_proc_drop_held(lsp_proc *p)
{
    while (p->held) {
        lsp_held *h = p->held;
        p->held = h->next;
        if (!ecp_shared_ready(h->bytes))
            ecp_shared_forget(h->bytes, held_flush, p);
        ecp_shared_unref(h->bytes);
        free(h);
    }
    p->held_tail = NULL;
}

void lsp_proc_write(lsp_proc *p, const char *data, size_t len)
{
    if (!p || p->exited)
        return;
    if (!p->held) {
        write_now(p, data, len, NULL);
        return;
    }
    /* behind a message still being made: it goes out after it */
    char *copy = xmalloc(len ? len : 1);
    memcpy(copy, data, len);
    held_push(p, ecp_shared_adopt(copy, len));
}

void lsp_proc_write_shared(lsp_proc *p, ecp_shared *bytes)
{
    if (!p || p->exited)
        return;
    if (!p->held && ecp_shared_ready(bytes)) {
        write_now(p, ecp_shared_data(bytes), ecp_shared_len(bytes), bytes);
        return;
    }
    held_push(p, ecp_shared_ref(bytes));
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void server_message(lsp_server *s, const char *text, size_t len);


static void proc_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    lsp_proc *p = stream->data;
    if (n < 0) {
        free(b->base);
        uv_read_stop(stream);
        return;
    }
    framing_decoder_feed(&p->decoder, b->base, (size_t)n);
    free(b->base);
    for (;;) {
        char *msg = NULL;
        size_t len = 0;
        frame_status st = framing_decoder_next(&p->decoder, &msg, &len);
        if (st == FRAME_NEED_MORE)
            break;
        if (st == FRAME_OVERSIZED) {
            ecp_log(p->log, ECP_LOG_WARN, "lsp %s: dropped a message of %zu bytes (too large)", p->language_id, len);
            continue;
        }
        if (st == FRAME_BAD_HEADER) {
            ecp_log(p->log, ECP_LOG_ERROR, "lsp %s: the server wrote something that is not LSP; stopping it",
                    p->language_id);
            uv_read_stop(stream);
            if (p->server)
                lsp_server_proc_gone(p->server, "the server wrote something that is not LSP");
            return;
        }
        if (p->server)
            server_message(p->server, msg, len);
        free(msg);
        if (!p->server) /* the message made us drop the server */
            return;
    }
}

static void proc_read_err(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    lsp_proc *p = stream->data;
    if (n > 0) {
        for (ssize_t i = 0; i < n; i++) {
            char c = b->base[i];
            if (c == '\n' || p->err_line.len > 2000) {
                if (p->err_line.len)
                    ecp_log(p->log, ECP_LOG_DEBUG, "lsp %s stderr: %s", p->language_id, p->err_line.data);
                buf_clear(&p->err_line);
            } else {
                buf_push(&p->err_line, c);
            }
        }
    } else if (n < 0) {
        uv_read_stop(stream);
    }
    free(b->base);
}

static void proc_exit(uv_process_t *process, int64_t code, int sig)
{
    lsp_proc *p = process->data;
    p->exited = true;
    char why[128];
    if (sig)
        snprintf(why, sizeof why, "the server was killed by signal %d", sig);
    else
        snprintf(why, sizeof why, "the server exited with code %lld", (long long)code);
    ecp_log(p->log, p->server ? ECP_LOG_WARN : ECP_LOG_DEBUG, "lsp %s: %s", p->language_id, why);
    if (p->server)
        lsp_server_proc_gone(p->server, why);
    lsp_proc_close(p);
}

/* Detaches the process from its server and ends it: at once with kill, or
 * after the grace period when it was asked to exit. */
void lsp_proc_release(lsp_proc *p, bool kill_now)
{
    if (!p)
        return;
    p->server = NULL;
    if (p->exited) {
        lsp_proc_close(p);
        return;
    }
    if (kill_now) {
        uv_process_kill(&p->process, SIGKILL);
        return; /* proc_exit closes it */
    }
    uv_timer_start(&p->kill_timer, proc_kill_now, LSP_STOP_GRACE_MS, 0);
}

lsp_proc *lsp_proc_spawn(lsp_server *s, const char *file, const lsp_server_config *config, ecp_error *err)
{
    lsp_service *svc = s->svc;
    lsp_proc *p = xcalloc(1, sizeof *p);
    p->server = s;
    p->svc = svc;
    p->next = svc->procs;
    if (svc->procs)
        svc->procs->prev = p;
    svc->procs = p;
    p->log = svc->log;
    p->language_id = xstrdup(s->language_id);
    framing_decoder_init(&p->decoder, svc->max_message);
    buf_init(&p->err_line);
    uv_pipe_init(svc->loop, &p->in, 0);
    uv_pipe_init(svc->loop, &p->out, 0);
    uv_pipe_init(svc->loop, &p->err, 0);
    uv_timer_init(svc->loop, &p->kill_timer);
    p->in.data = p->out.data = p->err.data = p->kill_timer.data = p->process.data = p;
    p->open_handles = 5;

    size_t argc = 0;
    while (config->args && config->args[argc])
        argc++;
    char **argv = xcalloc(argc + 2, sizeof *argv);
    argv[0] = (char *)file;
    for (size_t i = 0; i < argc; i++)
        argv[i + 1] = (char *)config->args[i];

    char **envp = NULL;
    char *path_var = lsp_absolute_path_var();
    if ((config->env && config->env[0]) || path_var) {
        extern char **environ;
        size_t n = 0, m = 0, kept = 0;
        while (environ[n])
            n++;
        while (config->env && config->env[m])
            m++;
        envp = xcalloc(n + m + 2, sizeof *envp);
        for (size_t i = 0; i < n; i++)
            if (!path_var || strncmp(environ[i], "PATH=", 5) != 0)
                envp[kept++] = environ[i];
        if (path_var)
            envp[kept++] = path_var;
        for (size_t i = 0; i < m; i++)
            envp[kept++] = (char *)config->env[i];
    }

    buf cwd;
    buf_init(&cwd);
    if (!s->root_uri || uri_file_path(s->root_uri, strlen(s->root_uri), &cwd, NULL) != 0 ||
        access(cwd.data, F_OK) != 0) {
        buf_clear(&cwd);
        buf_append_str(&cwd, "/");
    }

    uv_stdio_container_t stdio[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&p->in},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&p->out},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&p->err},
    };
    uv_process_options_t o = {
        .exit_cb = proc_exit, .file = file, .args = argv, .env = envp, .cwd = cwd.data,
        .stdio_count = 3, .stdio = stdio,
    };
    int rc = uv_spawn(svc->loop, &p->process, &o);
    free(argv);
    free(envp);
    free(path_var);
    buf_free(&cwd);
    if (rc != 0) {
        ecp_error_set(err, ECP_EIO, "Failed to start %s: %s", file, uv_strerror(rc));
        p->exited = true;
        p->server = NULL;
        lsp_proc_close(p);
        return NULL;
    }
    uv_read_start((uv_stream_t *)&p->out, alloc_cb, proc_read);
    uv_read_start((uv_stream_t *)&p->err, alloc_cb, proc_read_err);
    return p;
}

/* ----- JSON-RPC to the server -------------------------------------------------------- */

void lsp_frame(buf *out, const char *json, size_t len) { framing_encode(FRAMING_CONTENT_LENGTH, out, json, len); }

/* Sends now, or holds the message until initialize has answered. */
void lsp_server_send(lsp_server *s, const buf *json, bool before_ready)
{
    buf framed;
    buf_init(&framed);
    lsp_frame(&framed, json->data, json->len);
    if (s->status == LSP_READY || before_ready)
        lsp_proc_write(s->proc, framed.data, framed.len);
    else
        buf_append(&s->outbox, framed.data, framed.len);
    buf_free(&framed);
}

void lsp_server_notify(lsp_server *s, const char *method, const char *params, size_t params_len)
{
    buf out;
    buf_init(&out);
    buf_appendf(&out, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":", method);
    buf_append(&out, params, params_len);
    buf_push(&out, '}');
    lsp_server_send(s, &out, false);
    buf_free(&out);
}

static void request_timer_closed(uv_handle_t *h)
{
    lsp_request *r = (lsp_request *)h;
    free(r->method);
    free(r->uri);
    free(r);
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
    uv_timer_stop(&r->timer);
    lsp_result_cb cb = r->cb;
    r->cb = NULL;
    uv_close((uv_handle_t *)&r->timer, request_timer_closed);
    if (cb)
        cb(r->ctx, status, err, result);
}

void lsp_send_cancel(lsp_server *s, int64_t id)
{
    char params[64];
    int n = snprintf(params, sizeof params, "{\"id\":%lld}", (long long)id);
    lsp_server_notify(s, "$/cancelRequest", params, (size_t)n);
}

static void request_timeout(uv_timer_t *t)
{
    lsp_request *r = (lsp_request *)t;
    ecp_error err;
    ecp_error_set(&err, ECP_ETIMEDOUT, "The %s server did not answer %s within %u ms",
                  r->server ? r->server->language_id : "language", r->method, r->timeout_ms);
    ecp_log(r->svc->log, ECP_LOG_WARN, "lsp: %s", err.message);
    if (r->server)
        lsp_send_cancel(r->server, r->id);
    lsp_request_finish(r, ECP_ETIMEDOUT, &err, NULL);
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

lsp_request *lsp_server_request(lsp_server *s, const char *method, const char *params, size_t params_len,
                                   lsp_result_cb cb, void *ctx, bool before_ready)
{
    lsp_request *r = xcalloc(1, sizeof *r);
    r->svc = s->svc;
    r->server = s;
    r->id = s->next_id++;
    r->method = xstrdup(method);
    r->cb = cb;
    r->ctx = ctx;
    r->next = s->pending;
    s->pending = r;
    uv_timer_init(s->svc->loop, &r->timer);
    r->timeout_ms = lsp_request_timeout_ms(s);
    uv_timer_start(&r->timer, request_timeout, r->timeout_ms, 0);
    buf out;
    buf_init(&out);
    buf_appendf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":", (long long)r->id, method);
    buf_append(&out, params, params_len);
    buf_push(&out, '}');
    lsp_server_send(s, &out, before_ready);
    buf_free(&out);
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

void lsp_server_reply(lsp_server *s, const json_doc *doc, json_ref id, const char *result_json)
{
    size_t id_len;
    const char *id_raw = json_raw(doc, id, &id_len);
    buf out;
    buf_init(&out);
    buf_append_str(&out, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_append(&out, id_raw, id_len);
    buf_appendf(&out, ",\"result\":%s}", result_json);
    lsp_server_send(s, &out, true);
    buf_free(&out);
}

void lsp_server_reply_error(lsp_server *s, const json_doc *doc, json_ref id, int code, const char *message)
{
    size_t id_len;
    const char *id_raw = json_raw(doc, id, &id_len);
    buf out;
    buf_init(&out);
    buf_append_str(&out, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_append(&out, id_raw, id_len);
    buf_appendf(&out, ",\"error\":{\"code\":%d,\"message\":\"", code);
    json_escape_into(&out, message, strlen(message));
    buf_append_str(&out, "\"}}");
    lsp_server_send(s, &out, true);
    buf_free(&out);
}

static void server_message(lsp_server *s, const char *text, size_t len)
{
    json_doc doc = {0};
    ecp_error err;
    if (json_doc_parse(&doc, text, len, &err) != 0 || json_type_of(&doc, json_root(&doc)) != JSON_OBJECT) {
        ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: ignored a message that is not a JSON object", s->language_id);
        json_doc_free(&doc);
        return;
    }
    json_ref root = json_root(&doc);
    json_ref id = json_get(&doc, root, "id");
    json_ref method = json_get(&doc, root, "method");
    json_ref params = json_get(&doc, root, "params");
    if (json_type_of(&doc, method) == JSON_STRING) {
        if (id != JSON_NO_REF && json_type_of(&doc, id) != JSON_NULL)
            lsp_server_request_in(s, &doc, id, method, params);
        else
            lsp_server_notification_in(s, &doc, method, params);
    } else {
        int64_t n;
        if (json_int64(&doc, id, &n))
            lsp_server_response_in(s, &doc, n, json_get(&doc, root, "result"), json_get(&doc, root, "error"));
        else
            ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: ignored a response without a numeric id", s->language_id);
    }
    json_doc_free(&doc);
}

