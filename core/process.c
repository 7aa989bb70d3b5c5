#include "process.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* A write waiting behind bytes still in the making. */
typedef struct held_write {
    ecp_shared *bytes;
    struct held_write *next;
} held_write;

struct ecp_process {
    ecp_process_options options; /* argv, env_add and cwd are not kept */
    uv_process_t child;
    uv_pipe_t in, out, err;
    uv_timer_t grace;
    held_write *held, *held_tail; /* in order; the first is the one not yet made */
    int open_handles;
    bool exited;
    bool closed;    /* the owner let go: no more callbacks */
    bool released;  /* every handle is closing: freed when the last one is closed */
};

static void handle_closed(uv_handle_t *h)
{
    ecp_process *self = h->data;
    /* (a loop torn down by walking its handles closes them without us) */
    if (--self->open_handles == 0 && self->closed)
        free(self);
}

static void close_handle(uv_handle_t *h)
{
    if (h->data && !uv_is_closing(h))
        uv_close(h, handle_closed);
}

/* Once the owner has let go and the child is gone, everything closes. */
static void maybe_release(ecp_process *self)
{
    if (!self->closed || !self->exited || self->released)
        return;
    self->released = true;
    close_handle((uv_handle_t *)&self->in);
    close_handle((uv_handle_t *)&self->out);
    close_handle((uv_handle_t *)&self->err);
    close_handle((uv_handle_t *)&self->grace);
    close_handle((uv_handle_t *)&self->child);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void on_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    ecp_process *self = stream->data;
    if (n > 0 && !self->closed && self->options.on_output)
        self->options.on_output(self->options.ctx, b->base, (size_t)n);
    free(b->base);
    if (n < 0) {
        uv_read_stop(stream);
        close_handle((uv_handle_t *)stream);
        if (!self->closed && self->options.on_output_end)
            self->options.on_output_end(self->options.ctx, n == UV_EOF ? 0 : (int)n);
    }
}

static void on_error_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    ecp_process *self = stream->data;
    if (n > 0 && !self->closed && self->options.on_error_output)
        self->options.on_error_output(self->options.ctx, b->base, (size_t)n);
    free(b->base);
    if (n < 0) {
        uv_read_stop(stream);
        close_handle((uv_handle_t *)stream);
    }
}

static void child_exited(uv_process_t *child, int64_t status, int term_signal)
{
    ecp_process *self = child->data;
    self->exited = true;
    uv_timer_stop(&self->grace);
    if (!self->closed && self->options.on_exit)
        self->options.on_exit(self->options.ctx, status, term_signal);
    maybe_release(self);
}

static void signal_child(ecp_process *self, int signum)
{
    if (self->exited)
        return;
    if (self->options.own_group)
        uv_kill(-self->child.pid, signum);
    else
        uv_process_kill(&self->child, signum);
}

static void grace_over(uv_timer_t *t) { signal_child(t->data, SIGKILL); }

void ecp_process_kill(ecp_process *self)
{
    if (self->exited)
        return;
    if (!self->options.grace_ms) {
        signal_child(self, SIGKILL);
        return;
    }
    signal_child(self, SIGTERM);
    if (!uv_is_active((uv_handle_t *)&self->grace))
        uv_timer_start(&self->grace, grace_over, self->options.grace_ms, 0);
}

void ecp_process_kill_now(ecp_process *self) { signal_child(self, SIGKILL); }

void ecp_process_kill_after(ecp_process *self, uint64_t wait_ms)
{
    if (self->exited)
        return;
    uv_timer_start(&self->grace, grace_over, wait_ms, 0);
}

int ecp_process_pid(const ecp_process *self) { return self->child.pid; }
bool ecp_process_exited(const ecp_process *self) { return self->exited; }

/* A write in flight: its own copy of the bytes, or a reference to shared ones. */
typedef struct write_req {
    uv_write_t req;
    char *data;
    ecp_shared *shared;
} write_req;

static void written(uv_write_t *req, int status)
{
    (void)status; /* a child that stops reading shows as its exit */
    write_req *w = (write_req *)req;
    free(w->data);
    ecp_shared_unref(w->shared);
    free(w);
}

static bool stdin_open(const ecp_process *self)
{
    const uv_handle_t *in = (const uv_handle_t *)&self->in;
    return in->data && !uv_is_closing(in) && !self->closed;
}

/* Hands the bytes to libuv: copied, unless they are shared. */
static bool write_now(ecp_process *self, const char *data, size_t len, ecp_shared *shared)
{
    write_req *w = xcalloc(1, sizeof *w);
    if (shared) {
        w->shared = ecp_shared_ref(shared);
    } else {
        w->data = xmalloc(len ? len : 1);
        memcpy(w->data, data, len);
        data = w->data;
    }
    uv_buf_t b = uv_buf_init((char *)data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&self->in, &b, 1, written) != 0) {
        free(w->data);
        ecp_shared_unref(w->shared);
        free(w);
        return false;
    }
    return true;
}

/* Writes what is held, up to the first bytes still in the making. */
static void held_flush(void *ctx)
{
    ecp_process *self = ctx;
    while (self->held && ecp_shared_ready(self->held->bytes)) {
        held_write *h = self->held;
        self->held = h->next;
        if (!self->held)
            self->held_tail = NULL;
        if (stdin_open(self))
            write_now(self, ecp_shared_data(h->bytes), ecp_shared_len(h->bytes), h->bytes);
        ecp_shared_unref(h->bytes);
        free(h);
    }
}

/* Takes the caller's reference to bytes. */
static void held_push(ecp_process *self, ecp_shared *bytes)
{
    held_write *h = xcalloc(1, sizeof *h);
    h->bytes = bytes;
    if (self->held_tail)
        self->held_tail->next = h;
    else
        self->held = h;
    self->held_tail = h;
    if (!ecp_shared_ready(bytes))
        ecp_shared_when_ready(bytes, held_flush, self);
}

void ecp_process_drop_held(ecp_process *self)
{
    while (self->held) {
        held_write *h = self->held;
        self->held = h->next;
        if (!ecp_shared_ready(h->bytes))
            ecp_shared_forget(h->bytes, held_flush, self);
        ecp_shared_unref(h->bytes);
        free(h);
    }
    self->held_tail = NULL;
}

bool ecp_process_write(ecp_process *self, const char *data, size_t len)
{
    if (!stdin_open(self))
        return false;
    if (!self->held)
        return write_now(self, data, len, NULL);
    /* behind bytes still in the making: they go out after them */
    char *copy = xmalloc(len ? len : 1);
    memcpy(copy, data, len);
    held_push(self, ecp_shared_adopt(copy, len));
    return true;
}

bool ecp_process_write_shared(ecp_process *self, ecp_shared *bytes)
{
    if (!stdin_open(self))
        return false;
    if (!self->held && ecp_shared_ready(bytes))
        return write_now(self, ecp_shared_data(bytes), ecp_shared_len(bytes), bytes);
    held_push(self, ecp_shared_ref(bytes));
    return true;
}

void ecp_process_close_stdin(ecp_process *self)
{
    ecp_process_drop_held(self);
    close_handle((uv_handle_t *)&self->in);
}

void ecp_process_close(ecp_process *self)
{
    if (!self || self->closed)
        return;
    self->closed = true;
    ecp_process_close_stdin(self);
    uv_handle_t *outputs[] = {(uv_handle_t *)&self->out, (uv_handle_t *)&self->err};
    for (size_t i = 0; i < 2; i++)
        if (outputs[i]->data && !uv_is_closing(outputs[i])) {
            uv_read_stop((uv_stream_t *)outputs[i]);
            close_handle(outputs[i]);
        }
    if (self->options.leave_running)
        self->exited = true; /* as far as we are concerned */
    else
        ecp_process_kill(self);
    maybe_release(self);
}

/* Our environment with env_add on top; NULL when nothing is added. */
static char **environment(const char *const *env_add)
{
    if (!env_add || !env_add[0])
        return NULL;
    extern char **environ;
    size_t base = 0, added = 0;
    while (environ[base])
        base++;
    while (env_add[added])
        added++;
    char **env = xcalloc(base + added + 1, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < added; i++)
        env[k++] = xstrdup(env_add[i]);
    for (size_t i = 0; i < base; i++) {
        size_t name_len = strcspn(environ[i], "=");
        bool overridden = false;
        for (size_t j = 0; j < added && !overridden; j++)
            overridden = strncmp(env_add[j], environ[i], name_len) == 0 && env_add[j][name_len] == '=';
        if (!overridden)
            env[k++] = xstrdup(environ[i]);
    }
    return env;
}

char *ecp_process_find_program(const char *name, const char *dirs)
{
    buf candidate = BUF_INIT;
    char *found = NULL;
    for (const char *dir = dirs ? dirs : ""; !found;) {
        size_t n = strcspn(dir, ":");
        if (n > 0 && dir[0] == '/') {
            buf_clear(&candidate);
            buf_append(&candidate, dir, n);
            buf_appendf(&candidate, "/%s", name);
            struct stat st;
            if (stat(candidate.data, &st) == 0 && S_ISREG(st.st_mode) && access(candidate.data, X_OK) == 0)
                found = xstrdup(candidate.data);
        }
        if (!dir[n])
            break;
        dir += n + 1;
    }
    buf_free(&candidate);
    return found;
}

/* The program argv[0] stands for: a bare name is looked up in the child's
 * PATH (ours, unless env sets one); a name with a slash is the caller's
 * explicit choice and is kept. NULL when nothing is found. */
static char *program_path(const char *name, char *const *env)
{
    if (strchr(name, '/'))
        return xstrdup(name);
    const char *path = NULL;
    for (size_t i = 0; env && env[i] && !path; i++)
        if (strncmp(env[i], "PATH=", 5) == 0)
            path = env[i] + 5;
    if (!path)
        path = getenv("PATH");
    if (!path)
        path = "/usr/local/bin:/usr/bin:/bin";
    return ecp_process_find_program(name, path);
}

ecp_process *ecp_process_start(uv_loop_t *loop, const ecp_process_options *options, ecp_error *err)
{
    ecp_process *self = xcalloc(1, sizeof *self);
    self->options = *options;
    self->options.argv = NULL;
    self->options.env_add = NULL;
    self->options.cwd = NULL;
    uv_stdio_container_t stdio[3] = {{.flags = UV_IGNORE}, {.flags = UV_IGNORE}, {.flags = UV_IGNORE}};
    if (options->pipe_stdin) {
        uv_pipe_init(loop, &self->in, 0);
        self->in.data = self;
        self->open_handles++;
        stdio[0] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&self->in};
    }
    if (options->pipe_stdout) {
        uv_pipe_init(loop, &self->out, 0);
        self->out.data = self;
        self->open_handles++;
        stdio[1] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&self->out};
    }
    if (options->stderr_to == ECP_STDERR_PIPE) {
        uv_pipe_init(loop, &self->err, 0);
        self->err.data = self;
        self->open_handles++;
        stdio[2] = (uv_stdio_container_t){.flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE, .data.stream = (uv_stream_t *)&self->err};
    } else if (options->stderr_to == ECP_STDERR_INHERIT)
        stdio[2] = (uv_stdio_container_t){.flags = UV_INHERIT_FD, .data.fd = 2};
    else if (options->stderr_to == ECP_STDERR_FD && options->stderr_fd >= 0)
        stdio[2] = (uv_stdio_container_t){.flags = UV_INHERIT_FD, .data.fd = options->stderr_fd};
    uv_timer_init(loop, &self->grace);
    self->grace.data = self;
    self->open_handles++;
    char **env = environment(options->env_add);
    char *program = program_path(options->argv[0], env);
    uv_process_options_t o = {
        .file = program ? program : options->argv[0], .args = (char **)options->argv, .env = env, .cwd = options->cwd,
        .exit_cb = child_exited, .stdio = stdio, .stdio_count = 3,
        .flags = options->own_group ? UV_PROCESS_DETACHED : 0,
    };
    /* a bare name found nowhere is not handed to libuv, whose execvp would search the relative entries
     * (and then the child handle was never made: nothing to close) */
    int rc = UV_ENOENT;
    if (program) {
        self->child.data = self;
        self->open_handles++;
        rc = uv_spawn(loop, &self->child, &o);
    }
    free(program);
    free_strv(env);
    if (rc < 0) {
        ecp_error_set(err, rc == UV_ENOENT ? ECP_ENOTFOUND : rc == UV_EACCES ? ECP_EACCES : ECP_EIO,
                      "cannot start %s: %s", options->argv[0], uv_strerror(rc));
        /* libuv wants even a child that never started closed */
        self->exited = true;
        self->closed = true;
        maybe_release(self);
        return NULL;
    }
    if (options->pipe_stdout)
        uv_read_start((uv_stream_t *)&self->out, on_alloc, on_read);
    if (options->stderr_to == ECP_STDERR_PIPE)
        uv_read_start((uv_stream_t *)&self->err, on_alloc, on_error_read);
    return self;
}
