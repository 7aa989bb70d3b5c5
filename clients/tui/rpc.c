#include "rpc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "socket_path.h"
#include "error.h"
#include "json_writer.h"
#include "peer.h"
#include "process.h"
#include "ssh_remote.h"

typedef struct reply_to {
    rpc_reply_fn reply;
    void *ctx;
    uint64_t tag;
} reply_to;

struct rpc_client {
    uv_loop_t *loop;
    rpc_handlers handlers;
    ecp_process *server;   /* a spawned server */
    uv_pipe_t socket;      /* or a running server's socket */
    bool have_socket;
    ecp_peer *peer;
    bool open;             /* messages can still be sent */
    const ecp_ssh *ssh;    /* the server runs on another host, through this ssh */
    int log_fd;            /* where ssh's stderr is copied, or -1 */
    buf ssh_said;          /* ssh's stderr, its last few lines */
    bool exited;
    int exit_status;       /* as a shell says it: the status, or 128 + a signal */
};

void rpc_vformat(buf *out, const char *fmt, va_list ap)
{
    for (const char *p = fmt; *p; p++) {
        if (*p != '%') {
            buf_push(out, *p);
            continue;
        }
        switch (*++p) {
        case 'J': {
            const char *s = va_arg(ap, const char *);
            if (!s) {
                buf_append_str(out, "null");
            } else {
                buf_push(out, '"');
                json_escape_into(out, s, strlen(s));
                buf_push(out, '"');
            }
            break;
        }
        case 'N': {
            const char *s = va_arg(ap, const char *);
            size_t n = va_arg(ap, size_t);
            buf_push(out, '"');
            json_escape_into(out, s, n);
            buf_push(out, '"');
            break;
        }
        case 'd': buf_appendf(out, "%d", va_arg(ap, int)); break;
        case 'L': buf_appendf(out, "%lld", (long long)va_arg(ap, int64_t)); break;
        case 'b': buf_append_str(out, va_arg(ap, int) ? "true" : "false"); break;
        case 's': buf_append_str(out, va_arg(ap, const char *)); break;
        case '%': buf_push(out, '%'); break;
        default: abort(); /* a format the program itself got wrong */
        }
    }
}

void rpc_format(buf *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    rpc_vformat(out, fmt, ap);
    va_end(ap);
}

static void report_closed(rpc_client *self, const char *why)
{
    if (!self->open)
        return;
    self->open = false;
    ecp_peer_close(self->peer, why); /* the pending replies are dropped (take_reply) */
    if (self->handlers.on_closed)
        self->handlers.on_closed(self->handlers.ctx, why);
}

static void take_reply(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    reply_to *r = ctx;
    (void)id;
    if (answer->status == 0 && r->reply)
        r->reply(r->ctx, r->tag, answer->doc, answer->result, answer->error);
    free(r);
}

typedef struct write_req {
    uv_write_t req;
    char data[];
} write_req;

static void written(uv_write_t *req, int status)
{
    (void)status; /* a failed write shows as the read side closing */
    free(req);
}

static void write_to_server(void *ctx, const char *data, size_t len, int64_t request_id)
{
    rpc_client *self = ctx;
    (void)request_id;
    if (self->server) {
        ecp_process_write(self->server, data, len);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    /* small messages leave at once; the rest waits for the socket */
    int n = uv_try_write((uv_stream_t *)&self->socket, &b, 1);
    if (n == (int)len)
        return;
    size_t done = n > 0 ? (size_t)n : 0;
    write_req *w = xmalloc(sizeof *w + len - done);
    memcpy(w->data, data + done, len - done);
    b = uv_buf_init(w->data, (unsigned)(len - done));
    if (uv_write(&w->req, (uv_stream_t *)&self->socket, &b, 1, written) != 0)
        free(w);
}

static void on_notification(void *ctx, const char *method, const json_doc *doc, json_ref params)
{
    rpc_client *self = ctx;
    if (self->handlers.on_notify)
        self->handlers.on_notify(self->handlers.ctx, method, doc, params);
}

static void on_problem(void *ctx, ecp_peer_problem problem, const char *detail)
{
    (void)detail;
    if (problem == ECP_PEER_BROKEN)
        report_closed(ctx, "the server sent a header that cannot be read");
}

static rpc_client *client_new(uv_loop_t *loop, rpc_handlers handlers)
{
    rpc_client *self = xcalloc(1, sizeof *self);
    self->log_fd = -1;
    self->loop = loop;
    self->handlers = handlers;
    ecp_peer_options options = {.framing = FRAMING_UNKNOWN, .max_message = (size_t)512 << 20};
    ecp_peer_handlers h = {.ctx = self, .write = write_to_server, .on_notification = on_notification,
                           .on_problem = on_problem};
    self->peer = ecp_peer_new(loop, &options, &h);
    return self;
}

static void server_output(void *ctx, const char *data, size_t len)
{
    rpc_client *self = ctx;
    ecp_peer_feed(self->peer, data, len);
}

static void server_output_end(void *ctx, int status)
{
    rpc_client *self = ctx;
    if (self->ssh)
        return; /* ssh's exit status says why, and comes next */
    report_closed(ctx, status == 0 ? "the server closed the connection" : uv_strerror(status));
}

#define SSH_SAID_KEEP 2048

static void ssh_error_output(void *ctx, const char *data, size_t len)
{
    rpc_client *self = ctx;
    if (self->log_fd >= 0) {
        ssize_t unused = write(self->log_fd, data, len);
        (void)unused;
    }
    buf_append(&self->ssh_said, data, len);
    if (self->ssh_said.len > SSH_SAID_KEEP) {
        /* what ssh says last is why it ends; keep from a line's start */
        size_t drop = self->ssh_said.len - SSH_SAID_KEEP;
        const char *nl = memchr(self->ssh_said.data + drop, '\n', self->ssh_said.len - drop);
        buf_consume(&self->ssh_said, nl ? (size_t)(nl - self->ssh_said.data) + 1 : drop);
    }
}

char *rpc_ssh_failure(const rpc_client *self)
{
    if (!self || !self->ssh)
        return NULL;
    const char *said = self->ssh_said.data ? self->ssh_said.data : "";
    /* ssh ends its lines with \r\n once it has a session; the last line is the one that matters */
    buf last = BUF_INIT;
    size_t end = self->ssh_said.len;
    while (end && (said[end - 1] == '\n' || said[end - 1] == '\r'))
        end--;
    size_t start = end;
    while (start && said[start - 1] != '\n')
        start--;
    buf_append(&last, said + start, end - start);
    buf_push(&last, 0);
    char *why = ecp_ssh_failure(self->ssh, self->exit_status, last.data);
    buf_free(&last);
    if (self->exit_status == ECP_SSH_NOT_FOUND)
        return why;
    buf b = BUF_INIT;
    buf_appendf(&b, "the connection to %s was lost: %s", self->ssh->host, why);
    free(why);
    return buf_detach(&b);
}

static void server_exited(void *ctx, int64_t status, int signal)
{
    rpc_client *self = ctx;
    self->exited = true;
    self->exit_status = signal ? 128 + signal : (int)status;
    if (self->ssh) {
        char *text = rpc_ssh_failure(self);
        report_closed(ctx, text);
        free(text);
        return;
    }
    char why[96];
    if (signal)
        snprintf(why, sizeof why, "the server was killed by signal %d", signal);
    else
        snprintf(why, sizeof why, "the server exited with status %lld", (long long)status);
    report_closed(ctx, why);
}

rpc_client *rpc_spawn(uv_loop_t *loop, const char *server, const char *workspace, const char *server_log,
                      rpc_handlers handlers, char **why)
{
    int err_fd = open(server_log ? server_log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    const char *argv[] = {server, "--stdio", "--workspace", workspace, NULL};
    rpc_client *self = client_new(loop, handlers);
    ecp_process_options o = {
        .argv = argv, .pipe_stdin = true, .pipe_stdout = true,
        .stderr_to = err_fd >= 0 ? ECP_STDERR_FD : ECP_STDERR_IGNORE, .stderr_fd = err_fd,
        .leave_running = true, /* it leaves by itself, saving what it must, at end of file */
        .ctx = self,
        .on_output = server_output, .on_output_end = server_output_end, .on_exit = server_exited,
    };
    ecp_error err = {0};
    self->server = ecp_process_start(loop, &o, &err);
    if (err_fd >= 0)
        close(err_fd);
    if (!self->server) {
        *why = xstrdup(err.message);
        ecp_peer_free(self->peer);
        free(self);
        return NULL;
    }
    self->open = true;
    return self;
}

rpc_client *rpc_spawn_ssh(uv_loop_t *loop, const ecp_ssh *ssh, const char *workspace, const char *server_log,
                          rpc_handlers handlers, char **why)
{
    char **argv = ecp_ssh_stdio_argv(ssh, workspace);
    rpc_client *self = client_new(loop, handlers);
    self->ssh = ssh;
    if (server_log)
        self->log_fd = open(server_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    /* ssh's stderr is read, not shown: the screen is the editor's, and what ssh says goes in the message */
    ecp_process_options o = {
        .argv = (const char *const *)argv, .pipe_stdin = true, .pipe_stdout = true,
        .stderr_to = ECP_STDERR_PIPE,
        .leave_running = true, /* the remote server leaves at end of file, saving what it must */
        .ctx = self,
        .on_output = server_output, .on_error_output = ssh_error_output,
        .on_output_end = server_output_end, .on_exit = server_exited,
    };
    ecp_error err = {0};
    self->server = ecp_process_start(loop, &o, &err);
    ecp_ssh_argv_free(argv);
    if (!self->server) {
        *why = xstrdup(err.message);
        if (self->log_fd >= 0)
            close(self->log_fd);
        ecp_peer_free(self->peer);
        free(self);
        return NULL;
    }
    self->open = true;
    return self;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void on_socket_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *b)
{
    rpc_client *self = stream->data;
    if (nread > 0)
        ecp_peer_feed(self->peer, b->base, (size_t)nread);
    free(b->base);
    if (nread < 0) {
        uv_read_stop(stream);
        report_closed(self, nread == UV_EOF ? "the server closed the connection" : uv_strerror((int)nread));
    }
}

rpc_client *rpc_connect(uv_loop_t *loop, const char *socket_path, rpc_handlers handlers, char **why)
{
    ecp_socket_failure failure;
    ecp_error err = {0};
    int fd = ecp_socket_connect_own(socket_path, 0, &failure, &err);
    if (fd < 0) {
        *why = xstrdup(err.message);
        return NULL;
    }
    rpc_client *self = client_new(loop, handlers);
    uv_pipe_init(loop, &self->socket, 0);
    self->socket.data = self;
    self->have_socket = true;
    uv_pipe_open(&self->socket, fd);
    self->open = true;
    uv_read_start((uv_stream_t *)&self->socket, on_alloc, on_socket_read);
    return self;
}

static void detached_closed(uv_handle_t *h) { free(h); }

bool rpc_start_socket_server(uv_loop_t *loop, const char *server, const char *socket_path, const char *workspace,
                             const char *server_log, char **why)
{
    int err_fd = open(server_log ? server_log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    char *argv[] = {(char *)server, "--socket", (char *)socket_path, "--workspace", (char *)workspace, NULL};
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_IGNORE},
        {.flags = err_fd >= 0 ? UV_INHERIT_FD : UV_IGNORE, .data.fd = err_fd},
    };
    uv_process_options_t o = {.file = server, .args = argv, .stdio = stdio, .stdio_count = 3,
                              .flags = UV_PROCESS_DETACHED};
    uv_process_t *process = xcalloc(1, sizeof *process);
    int rc = uv_spawn(loop, process, &o);
    if (err_fd >= 0)
        close(err_fd);
    if (rc != 0) {
        buf b = BUF_INIT;
        buf_appendf(&b, "cannot start %s: %s", server, uv_strerror(rc));
        *why = buf_detach(&b);
        uv_close((uv_handle_t *)process, detached_closed);
        return false;
    }
    /* Not ours to wait for: it serves every client of the workspace. */
    uv_unref((uv_handle_t *)process);
    uv_close((uv_handle_t *)process, detached_closed);
    return true;
}

static bool send_v(rpc_client *self, const char *method, reply_to *reply, const char *fmt, va_list ap)
{
    buf params = BUF_INIT;
    if (fmt)
        rpc_vformat(&params, fmt, ap);
    bool ok;
    if (reply)
        ok = ecp_peer_call(self->peer, method, fmt ? params.data : NULL, 0, take_reply, reply) > 0;
    else
        ok = ecp_peer_notify(self->peer, method, fmt ? params.data : NULL);
    buf_free(&params);
    return ok;
}

bool rpc_call(rpc_client *self, const char *method, rpc_reply_fn reply, void *ctx, uint64_t tag,
              const char *params_fmt, ...)
{
    if (!self || !self->open)
        return false;
    reply_to *r = xmalloc(sizeof *r);
    *r = (reply_to){reply, ctx, tag};
    va_list ap;
    va_start(ap, params_fmt);
    bool ok = send_v(self, method, r, params_fmt, ap);
    va_end(ap);
    if (!ok)
        free(r);
    return ok;
}

bool rpc_notify(rpc_client *self, const char *method, const char *params_fmt, ...)
{
    if (!self || !self->open)
        return false;
    va_list ap;
    va_start(ap, params_fmt);
    bool ok = send_v(self, method, NULL, params_fmt, ap);
    va_end(ap);
    return ok;
}

bool rpc_is_open(const rpc_client *self) { return self && self->open; }

static void socket_closed(uv_handle_t *h) { free(h->data); }

void rpc_close(rpc_client *self)
{
    if (!self)
        return;
    self->open = false;
    ecp_peer_free(self->peer);
    if (self->server) {
        ecp_process_close(self->server);
        if (self->log_fd >= 0)
            close(self->log_fd);
        buf_free(&self->ssh_said);
        free(self);
    } else if (!uv_is_closing((uv_handle_t *)&self->socket)) {
        uv_close((uv_handle_t *)&self->socket, socket_closed);
    }
}
