#include "rpc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "error.h"
#include "framing.h"
#include "json_writer.h"

typedef struct pending {
    int64_t id;
    rpc_reply_fn reply;
    void *ctx;
    uint64_t tag;
} pending;

struct rpc_client {
    uv_loop_t *loop;
    rpc_handlers handlers;
    bool spawned;
    uv_process_t process;
    uv_pipe_t to_server;   /* the server's stdin, or the socket */
    uv_pipe_t from_server; /* the server's stdout (spawned only) */
    int open_handles;
    bool open;             /* messages can still be sent */
    bool closing;          /* rpc_close was called: free once the handles are closed */
    framing_decoder decoder;
    int64_t next_id;
    pending *pending;
    size_t pending_len, pending_cap;
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
    self->pending_len = 0;
    if (self->handlers.on_closed)
        self->handlers.on_closed(self->handlers.ctx, why);
}

static void on_handle_closed(uv_handle_t *h)
{
    rpc_client *self = h->data;
    if (--self->open_handles > 0 || !self->closing)
        return;
    framing_decoder_free(&self->decoder);
    free(self->pending);
    free(self);
}

static void close_handles(rpc_client *self)
{
    uv_handle_t *handles[] = {(uv_handle_t *)&self->to_server, (uv_handle_t *)&self->from_server,
                              (uv_handle_t *)&self->process};
    for (size_t i = 0; i < 3; i++) {
        if (handles[i]->data && !uv_is_closing(handles[i]))
            uv_close(handles[i], on_handle_closed);
    }
}

static void dispatch(rpc_client *self, const char *text, size_t len)
{
    json_doc doc = {0};
    ecp_error err = {0};
    if (json_doc_parse(&doc, text, len, &err) != 0) {
        json_doc_free(&doc);
        return;
    }
    json_ref root = json_root(&doc);
    json_ref method = json_get(&doc, root, "method");
    json_ref id = json_get(&doc, root, "id");
    if (method != JSON_NO_REF) {
        arena a = ARENA_INIT;
        const char *name;
        size_t n;
        if (id == JSON_NO_REF && json_string(&doc, method, &a, &name, &n) && self->handlers.on_notify)
            self->handlers.on_notify(self->handlers.ctx, name, &doc, json_get(&doc, root, "params"));
        arena_free(&a);
    } else {
        int64_t num;
        if (json_int64(&doc, id, &num)) {
            for (size_t i = 0; i < self->pending_len; i++) {
                if (self->pending[i].id != num)
                    continue;
                pending p = self->pending[i];
                self->pending[i] = self->pending[--self->pending_len];
                if (p.reply)
                    p.reply(p.ctx, p.tag, &doc, json_get(&doc, root, "result"), json_get(&doc, root, "error"));
                break;
            }
        }
    }
    json_doc_free(&doc);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *b)
{
    rpc_client *self = stream->data;
    if (nread < 0) {
        free(b->base);
        uv_read_stop(stream);
        report_closed(self, nread == UV_EOF ? "the server closed the connection" : uv_strerror((int)nread));
        return;
    }
    framing_decoder_feed(&self->decoder, b->base, (size_t)nread);
    free(b->base);
    for (;;) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&self->decoder, &msg, &len);
        if (st == FRAME_NEED_MORE || st == FRAME_BAD_HEADER)
            break;
        if (st == FRAME_MESSAGE) {
            dispatch(self, msg, len);
            free(msg);
        }
        if (!self->open)
            break;
    }
}

static void on_process_exit(uv_process_t *p, int64_t status, int signal)
{
    rpc_client *self = p->data;
    char why[96];
    if (signal)
        snprintf(why, sizeof why, "the server was killed by signal %d", signal);
    else
        snprintf(why, sizeof why, "the server exited with status %lld", (long long)status);
    report_closed(self, why);
}

static rpc_client *client_new(uv_loop_t *loop, rpc_handlers handlers)
{
    rpc_client *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->handlers = handlers;
    self->next_id = 1;
    framing_decoder_init(&self->decoder, (size_t)512 << 20);
    return self;
}

rpc_client *rpc_spawn(uv_loop_t *loop, const char *server, const char *workspace, const char *server_log,
                      rpc_handlers handlers, char **why)
{
    rpc_client *self = client_new(loop, handlers);
    self->spawned = true;
    uv_pipe_init(loop, &self->to_server, 0);
    uv_pipe_init(loop, &self->from_server, 0);
    self->to_server.data = self->from_server.data = self;
    self->open_handles = 2;
    int err_fd = open(server_log ? server_log : "/dev/null", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&self->to_server},
        {.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&self->from_server},
        {.flags = err_fd >= 0 ? UV_INHERIT_FD : UV_IGNORE, .data.fd = err_fd},
    };
    char *args[] = {(char *)server, "--stdio", "--workspace", (char *)workspace, NULL};
    uv_process_options_t opts = {
        .file = server, .args = args, .exit_cb = on_process_exit, .stdio = stdio, .stdio_count = 3,
    };
    int rc = uv_spawn(loop, &self->process, &opts);
    if (err_fd >= 0)
        close(err_fd);
    if (rc != 0) {
        buf b = BUF_INIT;
        buf_appendf(&b, "cannot start %s: %s", server, uv_strerror(rc));
        *why = buf_detach(&b);
        /* libuv wants even a process that never started closed. */
        self->closing = true;
        self->process.data = self;
        self->open_handles = 3;
        close_handles(self);
        return NULL;
    }
    self->process.data = self;
    self->open_handles = 3;
    self->open = true;
    uv_read_start((uv_stream_t *)&self->from_server, on_alloc, on_read);
    return self;
}

rpc_client *rpc_connect(uv_loop_t *loop, const char *socket_path, rpc_handlers handlers, char **why)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    buf b = BUF_INIT;
    if (strlen(socket_path) >= sizeof addr.sun_path) {
        buf_appendf(&b, "socket path too long: %s", socket_path);
        *why = buf_detach(&b);
        return NULL;
    }
    strcpy(addr.sun_path, socket_path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        buf_appendf(&b, "cannot connect to %s: %s", socket_path, strerror(errno));
        *why = buf_detach(&b);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    /* What we send includes file contents: only our own user's server may read it. */
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid()) {
        buf_appendf(&b, "the server on %s runs as another user; refusing to talk to it", socket_path);
        *why = buf_detach(&b);
        close(fd);
        return NULL;
    }
    rpc_client *self = client_new(loop, handlers);
    uv_pipe_init(loop, &self->to_server, 0);
    self->to_server.data = self;
    self->open_handles = 1;
    uv_pipe_open(&self->to_server, fd);
    self->open = true;
    uv_read_start((uv_stream_t *)&self->to_server, on_alloc, on_read);
    return self;
}

typedef struct write_req {
    uv_write_t req;
    char *data;
} write_req;

static void on_written(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    free(w->data);
    free(w);
    (void)status; /* a failed write shows as the read side closing */
}

static bool send_message(rpc_client *self, buf *msg)
{
    buf_push(msg, '\n');
    write_req *w = xmalloc(sizeof *w);
    size_t len = msg->len;
    w->data = buf_detach(msg);
    uv_buf_t ub = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&self->to_server, &ub, 1, on_written) != 0) {
        free(w->data);
        free(w);
        return false;
    }
    return true;
}

static bool send_v(rpc_client *self, int64_t id, const char *method, const char *fmt, va_list ap)
{
    if (!self || !self->open)
        return false;
    buf msg = BUF_INIT;
    buf_append_str(&msg, "{\"jsonrpc\":\"2.0\",");
    if (id > 0)
        buf_appendf(&msg, "\"id\":%lld,", (long long)id);
    rpc_format(&msg, "\"method\":%J", method);
    if (fmt) {
        buf_append_str(&msg, ",\"params\":");
        rpc_vformat(&msg, fmt, ap);
    }
    buf_push(&msg, '}');
    bool ok = send_message(self, &msg);
    buf_free(&msg);
    return ok;
}

bool rpc_call(rpc_client *self, const char *method, rpc_reply_fn reply, void *ctx, uint64_t tag,
              const char *params_fmt, ...)
{
    if (!self || !self->open)
        return false;
    int64_t id = self->next_id++;
    va_list ap;
    va_start(ap, params_fmt);
    bool ok = send_v(self, id, method, params_fmt, ap);
    va_end(ap);
    if (!ok)
        return false;
    if (self->pending_len == self->pending_cap) {
        self->pending_cap = self->pending_cap ? self->pending_cap * 2 : 16;
        self->pending = xrealloc(self->pending, self->pending_cap * sizeof *self->pending);
    }
    self->pending[self->pending_len++] = (pending){id, reply, ctx, tag};
    return true;
}

bool rpc_notify(rpc_client *self, const char *method, const char *params_fmt, ...)
{
    va_list ap;
    va_start(ap, params_fmt);
    bool ok = send_v(self, 0, method, params_fmt, ap);
    va_end(ap);
    return ok;
}

bool rpc_is_open(const rpc_client *self) { return self && self->open; }

void rpc_close(rpc_client *self)
{
    if (!self)
        return;
    self->open = false;
    self->pending_len = 0;
    self->closing = true;
    close_handles(self);
}
