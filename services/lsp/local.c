/* The lsp service: language server processes, their JSON-RPC, document sync
 * and diagnostics. */
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
#include "uri.h"

typedef struct lsp_server lsp_server;

/* A document the servers see: one of the document service's, or one a client holds. */
typedef struct lsp_doc {
    char *uri;
    char *language_id;
    char *document_id; /* NULL: the client holds the text, kept in text */
    char *text;
    size_t len;
    int64_t version;
    struct lsp_doc *next;
} lsp_doc;

typedef struct lsp_diag_entry {
    char *uri;
    char *json;                 /* as the server published it */
    char *language_id;          /* of the server that published it */
    ecp_position_encoding enc;  /* the server's */
    struct lsp_diag_entry *next;
} lsp_diag_entry;

struct lsp_request {
    uv_timer_t timer; /* first: the request is freed when the timer closes */
    lsp_service *svc;
    lsp_server *server;
    int64_t id;
    char *method;
    unsigned timeout_ms;
    lsp_result_cb cb;
    void *ctx;
    struct lsp_request *next;
};

typedef struct lsp_starter {
    lsp_start_cb cb;
    void *ctx;
    struct lsp_starter *next;
} lsp_starter;

/* One process of a server. It outlives its server when the server is stopped
 * or restarted: it is freed once its handles have closed. */
typedef struct lsp_proc {
    lsp_server *server; /* NULL once detached */
    lsp_service *svc;   /* NULL once the service is gone */
    struct lsp_proc *prev, *next; /* the service's live processes */
    ecp_logger *log;
    char *language_id;
    uv_process_t process;
    uv_pipe_t in, out, err;
    uv_timer_t kill_timer;
    int open_handles;
    bool exited;
    framing_decoder decoder;
    buf err_line;
} lsp_proc;

struct lsp_server {
    lsp_service *svc;
    char *language_id;
    char *root_uri;
    lsp_status status;
    char *error;
    char *capabilities;
    lsp_proc *proc;
    int64_t next_id;
    int64_t init_id;
    lsp_request *pending;
    buf outbox; /* framed messages held until initialize has answered */
    int sync_kind; /* 0 none, 1 full, 2 incremental */
    bool save_text;
    ecp_position_encoding enc;
    lsp_starter *starters;
    uint64_t restarts[LSP_MAX_RESTARTS];
    size_t restart_count;
    uv_timer_t *timer; /* initialize's deadline while starting, the restart's backoff after a crash */
    bool was_ready;
    struct lsp_server *next;
};

typedef struct lsp_custom_config {
    char *language_id;
    char *command;
    char **args;
    char *init_options;
    char *settings;
    char **env;
    unsigned timeout_ms;
    struct lsp_custom_config *next;
} lsp_custom_config;

struct lsp_service {
    uv_loop_t *loop;
    ecp_logger *log;
    document_service *documents;
    session_service *session;
    char *workspace;
    char *extra_path;
    unsigned timeout_ms;
    size_t max_message;
    lsp_server *servers;
    lsp_doc *docs;
    lsp_diag_entry *diags;
    lsp_custom_config *configs;
    lsp_proc *procs; /* every process whose handles are open, its server's or detached */
    ecp_listeners listeners;
};

/* ----- configuration ----------------------------------------------------------- */

typedef struct default_config {
    const char *language_id;
    const char *command;
    const char *const *args;
} default_config;

static const char *const args_stdio[] = {"--stdio", NULL};
static const char *const args_none[] = {NULL};
static const char *const args_solargraph[] = {"stdio", NULL};
static const char *const args_postgres[] = {"lsp-proxy", NULL};
static const char *const args_clangd[] = {"--log=error", NULL};

static const default_config default_configs[] = {
    {"typescript", "typescript-language-server", args_stdio},
    {"javascript", "typescript-language-server", args_stdio},
    {"typescriptreact", "typescript-language-server", args_stdio},
    {"javascriptreact", "typescript-language-server", args_stdio},
    {"rust", "rust-analyzer", args_none},
    {"python", "pylsp", args_none},
    {"go", "gopls", args_none},
    {"ruby", "solargraph", args_solargraph},
    {"c", "clangd", args_clangd},
    {"cpp", "clangd", args_clangd},
    {"json", "vscode-json-language-server", args_stdio},
    {"html", "vscode-html-language-server", args_stdio},
    {"css", "vscode-css-language-server", args_stdio},
    {"sql", "postgres-language-server", args_postgres},
};

static const struct {
    const char *ext;
    const char *language_id;
} extension_map[] = {
    {"ts", "typescript"}, {"tsx", "typescriptreact"}, {"js", "javascript"}, {"jsx", "javascriptreact"},
    {"mjs", "javascript"}, {"cjs", "javascript"},     {"rs", "rust"},       {"py", "python"},
    {"go", "go"},          {"rb", "ruby"},            {"c", "c"},           {"h", "c"},
    {"cpp", "cpp"},        {"cc", "cpp"},             {"cxx", "cpp"},       {"hpp", "cpp"},
    {"hxx", "cpp"},        {"json", "json"},          {"html", "html"},     {"htm", "html"},
    {"sql", "sql"},        {"pgsql", "sql"},          {"psql", "sql"},      {"css", "css"},
    {"scss", "css"},       {"less", "css"},
};

const char *lsp_language_of(const char *path)
{
    if (!path)
        return NULL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return NULL;
    for (size_t i = 0; i < sizeof extension_map / sizeof extension_map[0]; i++)
        if (strcmp(dot + 1, extension_map[i].ext) == 0)
            return extension_map[i].language_id;
    return NULL;
}

static lsp_custom_config *custom_config(lsp_service *self, const char *language_id)
{
    for (lsp_custom_config *c = self->configs; c; c = c->next)
        if (strcmp(c->language_id, language_id) == 0)
            return c;
    return NULL;
}

static char **strv_dup(const char *const *v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **out = xcalloc(n + 1, sizeof *out);
    for (size_t i = 0; i < n; i++)
        out[i] = xstrdup(v[i]);
    return out;
}

static void strv_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

static void custom_config_clear(lsp_custom_config *c)
{
    free(c->command);
    strv_free(c->args);
    free(c->init_options);
    free(c->settings);
    strv_free(c->env);
}

int lsp_config_set(lsp_service *self, const char *language_id, const lsp_server_config *config, ecp_error *err)
{
    if (!config || !config->command || !*config->command)
        return ecp_error_set(err, ECP_EINVAL, "config.command: required string");
    lsp_custom_config *c = custom_config(self, language_id);
    if (c) {
        custom_config_clear(c);
    } else {
        c = xcalloc(1, sizeof *c);
        c->language_id = xstrdup(language_id);
        c->next = self->configs;
        self->configs = c;
    }
    c->command = xstrdup(config->command);
    c->args = strv_dup(config->args);
    c->init_options = config->initialization_options ? xstrdup(config->initialization_options) : NULL;
    c->settings = config->settings ? xstrdup(config->settings) : NULL;
    c->env = config->env ? strv_dup(config->env) : NULL;
    c->timeout_ms = config->timeout_ms;
    return 0;
}

bool lsp_config_get(lsp_service *self, const char *language_id, lsp_server_config *out)
{
    memset(out, 0, sizeof *out);
    lsp_custom_config *c = custom_config(self, language_id);
    if (c) {
        out->command = c->command;
        out->args = (const char *const *)c->args;
        out->initialization_options = c->init_options;
        out->settings = c->settings;
        out->env = (const char *const *)c->env;
        out->timeout_ms = c->timeout_ms;
        return true;
    }
    for (size_t i = 0; i < sizeof default_configs / sizeof default_configs[0]; i++)
        if (strcmp(default_configs[i].language_id, language_id) == 0) {
            out->command = default_configs[i].command;
            out->args = default_configs[i].args;
            return true;
        }
    return false;
}

/* Calls fn for each absolute entry of a ':'-list. Empty and relative entries
 * ("", ".", "bin") name folders of the working directory, which is often a
 * workspace: a search there would run the workspace's own clangd. */
static bool each_absolute_dir(const char *list, bool (*fn)(void *ctx, const char *dir, size_t len), void *ctx)
{
    for (const char *dir = list; dir;) {
        const char *colon = strchr(dir, ':');
        size_t n = colon ? (size_t)(colon - dir) : strlen(dir);
        if (n > 0 && dir[0] == '/' && fn(ctx, dir, n))
            return true;
        dir = colon ? colon + 1 : NULL;
    }
    return false;
}

typedef struct command_search {
    const char *command;
    buf *out;
} command_search;

static bool command_in(void *ctx, const char *dir, size_t len)
{
    command_search *search = ctx;
    buf_clear(search->out);
    buf_append(search->out, dir, len);
    buf_appendf(search->out, "/%s", search->command);
    return access(search->out->data, X_OK) == 0;
}

/* The absolute path of command: itself when it is an absolute path, else the
 * first executable in the absolute entries of PATH, the catalogue's extra
 * directories and extra_path. A relative path with a slash ("./clangd") is
 * not a command: it would be looked for in ecpd's working directory and run
 * from the server's, the workspace. */
static bool resolve_command(lsp_service *self, const char *command, buf *out)
{
    buf_clear(out);
    if (strchr(command, '/')) {
        if (command[0] != '/' || access(command, X_OK) != 0)
            return false;
        buf_append_str(out, command);
        return true;
    }
    const char *home = getenv("HOME");
    buf dirs;
    buf_init(&dirs);
    const char *path = getenv("PATH");
    buf_append_str(&dirs, path ? path : "/usr/bin:/bin");
    static const char *const home_dirs[] = {"/.cargo/bin", "/.local/bin", "/go/bin", "/.bun/bin"};
    for (size_t i = 0; home && i < sizeof home_dirs / sizeof home_dirs[0]; i++)
        buf_appendf(&dirs, ":%s%s", home, home_dirs[i]);
    buf_append_str(&dirs, ":/opt/homebrew/bin:/usr/local/bin");
    if (self->extra_path)
        buf_appendf(&dirs, ":%s", self->extra_path);
    command_search search = {.command = command, .out = out};
    bool found = each_absolute_dir(dirs.data, command_in, &search);
    buf_free(&dirs);
    return found;
}

static bool path_entry_append(void *ctx, const char *dir, size_t len)
{
    buf *out = ctx;
    if (out->len > strlen("PATH="))
        buf_push(out, ':');
    buf_append(out, dir, len);
    return false;
}

/* "PATH=" with the absolute entries of PATH (malloc'd), or NULL when PATH has
 * no other kind. A server looks programs up on PATH from the folder it is
 * rooted in (pyright its python3): an empty or relative entry would find the
 * workspace's. */
static char *absolute_path_var(void)
{
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    buf out;
    buf_init(&out);
    buf_append_str(&out, "PATH=");
    each_absolute_dir(path, path_entry_append, &out);
    if (strcmp(out.data + strlen("PATH="), path) == 0) {
        buf_free(&out);
        return NULL;
    }
    return buf_detach(&out);
}

/* ----- events -------------------------------------------------------------------- */

void lsp_subscribe(lsp_service *self, const lsp_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

void lsp_unsubscribe(lsp_service *self, const lsp_listener *listener, void *ctx)
{
    ecp_listeners_remove(&self->listeners, listener, ctx);
}

const char *lsp_status_name(lsp_status status)
{
    switch (status) {
    case LSP_STARTING: return "starting";
    case LSP_READY: return "ready";
    case LSP_ERROR: return "error";
    default: return "stopped";
    }
}

static void server_info(const lsp_server *s, lsp_server_info *out)
{
    out->language_id = s->language_id;
    out->status = s->status;
    out->capabilities = s->status == LSP_READY ? s->capabilities : NULL;
    out->error = s->status == LSP_ERROR ? s->error : NULL;
    out->encoding = s->enc;
}

/* Tells the document service which columns the ready servers read from its
 * change events (each in the position encoding it negotiated). */
static void report_encodings(lsp_service *self)
{
    if (!self->documents)
        return;
    unsigned mask = 0;
    for (lsp_server *s = self->servers; s; s = s->next)
        if (s->status == LSP_READY)
            mask |= 1u << s->enc;
    document_service_set_encodings(self->documents, self, mask);
}

static void server_set_status(lsp_server *s, lsp_status status, const char *error)
{
    s->status = status;
    report_encodings(s->svc);
    free(s->error);
    s->error = error ? xstrdup(error) : NULL;
    lsp_server_info info;
    server_info(s, &info);
    ECP_EMIT(&s->svc->listeners, lsp_listener, on_status, &info);
}

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

static void proc_close(lsp_proc *p)
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

typedef struct write_req {
    uv_write_t req;
    char *data;
} write_req;

static void write_done(uv_write_t *req, int status)
{
    (void)status; /* a server that stopped reading is noticed by its exit */
    write_req *w = (write_req *)req;
    free(w->data);
    free(w);
}

static void proc_write(lsp_proc *p, const char *data, size_t len)
{
    if (!p || p->exited || uv_is_closing((uv_handle_t *)&p->in))
        return;
    write_req *w = xmalloc(sizeof *w);
    w->data = xmalloc(len ? len : 1);
    memcpy(w->data, data, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&p->in, &b, 1, write_done) != 0) {
        free(w->data);
        free(w);
    }
}

static void server_message(lsp_server *s, const char *text, size_t len);
static void server_proc_gone(lsp_server *s, const char *why);

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

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
                server_proc_gone(p->server, "the server wrote something that is not LSP");
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
        server_proc_gone(p->server, why);
    proc_close(p);
}

/* Detaches the process from its server and ends it: at once with kill, or
 * after the grace period when it was asked to exit. */
static void proc_release(lsp_proc *p, bool kill_now)
{
    if (!p)
        return;
    p->server = NULL;
    if (p->exited) {
        proc_close(p);
        return;
    }
    if (kill_now) {
        uv_process_kill(&p->process, SIGKILL);
        return; /* proc_exit closes it */
    }
    uv_timer_start(&p->kill_timer, proc_kill_now, LSP_STOP_GRACE_MS, 0);
}

static lsp_proc *proc_spawn(lsp_server *s, const char *file, const lsp_server_config *config, ecp_error *err)
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
    char *path_var = absolute_path_var();
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
        proc_close(p);
        return NULL;
    }
    uv_read_start((uv_stream_t *)&p->out, alloc_cb, proc_read);
    uv_read_start((uv_stream_t *)&p->err, alloc_cb, proc_read_err);
    return p;
}

/* ----- JSON-RPC to the server -------------------------------------------------------- */

static void frame_into(buf *out, const buf *json) { framing_encode(FRAMING_CONTENT_LENGTH, out, json->data, json->len); }

/* Sends now, or holds the message until initialize has answered. */
static void server_send(lsp_server *s, const buf *json, bool before_ready)
{
    buf framed;
    buf_init(&framed);
    frame_into(&framed, json);
    if (s->status == LSP_READY || before_ready)
        proc_write(s->proc, framed.data, framed.len);
    else
        buf_append(&s->outbox, framed.data, framed.len);
    buf_free(&framed);
}

static void server_notify(lsp_server *s, const char *method, const char *params, size_t params_len)
{
    buf out;
    buf_init(&out);
    buf_appendf(&out, "{\"jsonrpc\":\"2.0\",\"method\":\"%s\",\"params\":", method);
    buf_append(&out, params, params_len);
    buf_push(&out, '}');
    server_send(s, &out, false);
    buf_free(&out);
}

static void request_timer_closed(uv_handle_t *h)
{
    lsp_request *r = (lsp_request *)h;
    free(r->method);
    free(r);
}

/* Unlinks the request and runs its callback once. */
static void request_finish(lsp_request *r, int status, const ecp_error *err, const char *result, size_t len)
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
        cb(r->ctx, status, err, result, len);
}

static void send_cancel(lsp_server *s, int64_t id)
{
    char params[64];
    int n = snprintf(params, sizeof params, "{\"id\":%lld}", (long long)id);
    server_notify(s, "$/cancelRequest", params, (size_t)n);
}

static void request_timeout(uv_timer_t *t)
{
    lsp_request *r = (lsp_request *)t;
    ecp_error err;
    ecp_error_set(&err, ECP_ETIMEDOUT, "The %s server did not answer %s within %u ms",
                  r->server ? r->server->language_id : "language", r->method, r->timeout_ms);
    ecp_log(r->svc->log, ECP_LOG_WARN, "lsp: %s", err.message);
    if (r->server)
        send_cancel(r->server, r->id);
    request_finish(r, ECP_ETIMEDOUT, &err, NULL, 0);
}

static unsigned timeout_ms(lsp_server *s)
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

static lsp_request *server_request(lsp_server *s, const char *method, const char *params, size_t params_len,
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
    r->timeout_ms = timeout_ms(s);
    uv_timer_start(&r->timer, request_timeout, r->timeout_ms, 0);
    buf out;
    buf_init(&out);
    buf_appendf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"%s\",\"params\":", (long long)r->id, method);
    buf_append(&out, params, params_len);
    buf_push(&out, '}');
    server_send(s, &out, before_ready);
    buf_free(&out);
    return r;
}

static void fail_pending(lsp_server *s, int status, const char *why)
{
    ecp_error err;
    ecp_error_set(&err, status, "Language server %s: %s", s->language_id, why);
    while (s->pending)
        request_finish(s->pending, status, &err, NULL, 0);
}

static void finish_starters(lsp_server *s, int status, const char *why)
{
    lsp_starter *list = s->starters;
    s->starters = NULL;
    ecp_error err;
    if (status)
        ecp_error_set(&err, status, "%s", why);
    lsp_server_info info;
    server_info(s, &info);
    while (list) {
        lsp_starter *next = list->next;
        list->cb(list->ctx, status, status ? &err : NULL, &info);
        free(list);
        list = next;
    }
}

/* ----- documents on servers -------------------------------------------------------------- */

/* Language servers know files only by file:// URIs, while a document may
 * have been opened by its plain path: both spellings name the document by its
 * URI here, so a server hears a URI and the client's either form finds it. */
static char *doc_uri(const char *uri)
{
    const char *scheme;
    size_t scheme_len;
    size_t len = strlen(uri);
    if (uri[0] != '/' || uri_scheme(uri, len, &scheme, &scheme_len))
        return xstrdup(uri);
    buf path = BUF_INIT, out = BUF_INIT;
    uri_path_normalize(&path, uri, len);
    uri_from_path(&out, path.data, path.len);
    buf_free(&path);
    return buf_detach(&out);
}

static lsp_doc *doc_find(lsp_service *self, const char *uri)
{
    char *want = doc_uri(uri);
    lsp_doc *found = NULL;
    for (lsp_doc *d = self->docs; d && !found; d = d->next)
        if (strcmp(d->uri, want) == 0)
            found = d;
    free(want);
    return found;
}

static lsp_doc *doc_find_id(lsp_service *self, const char *document_id)
{
    for (lsp_doc *d = self->docs; d; d = d->next)
        if (d->document_id && strcmp(d->document_id, document_id) == 0)
            return d;
    return NULL;
}

static lsp_server *server_find(lsp_service *self, const char *language_id)
{
    for (lsp_server *s = self->servers; s; s = s->next)
        if (strcmp(s->language_id, language_id) == 0)
            return s;
    return NULL;
}

static void doc_text(lsp_service *self, const lsp_doc *d, buf *out)
{
    if (!d->document_id)
        buf_append(out, d->text ? d->text : "", d->len);
    else if (self->documents)
        document_get_text(self->documents, d->document_id, NULL, ECP_ENCODING_UTF8, out, NULL);
}

static void send_did_open(lsp_server *s, const lsp_doc *d)
{
    buf text, params;
    buf_init(&text);
    buf_init(&params);
    doc_text(s->svc, d, &text);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key(&w, "textDocument");
    jw_object_begin(&w);
    jw_key_string(&w, "uri", d->uri);
    jw_key_string(&w, "languageId", d->language_id);
    jw_key_int(&w, "version", d->version);
    jw_key_string_n(&w, "text", text.data ? text.data : "", text.len);
    jw_object_end(&w);
    jw_object_end(&w);
    server_notify(s, "textDocument/didOpen", params.data, params.len);
    buf_free(&text);
    buf_free(&params);
}

static void send_did_close(lsp_server *s, const char *uri)
{
    buf params;
    buf_init(&params);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key(&w, "textDocument");
    jw_object_begin(&w);
    jw_key_string(&w, "uri", uri);
    jw_object_end(&w);
    jw_object_end(&w);
    server_notify(s, "textDocument/didClose", params.data, params.len);
    buf_free(&params);
}

static void send_full_change(lsp_server *s, const lsp_doc *d)
{
    buf text, params;
    buf_init(&text);
    buf_init(&params);
    doc_text(s->svc, d, &text);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key(&w, "textDocument");
    jw_object_begin(&w);
    jw_key_string(&w, "uri", d->uri);
    jw_key_int(&w, "version", d->version);
    jw_object_end(&w);
    jw_key(&w, "contentChanges");
    jw_array_begin(&w);
    jw_object_begin(&w);
    jw_key_string_n(&w, "text", text.data ? text.data : "", text.len);
    jw_object_end(&w);
    jw_array_end(&w);
    jw_object_end(&w);
    server_notify(s, "textDocument/didChange", params.data, params.len);
    buf_free(&text);
    buf_free(&params);
}

static void send_did_save(lsp_server *s, const lsp_doc *d)
{
    buf text, params;
    buf_init(&text);
    buf_init(&params);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key(&w, "textDocument");
    jw_object_begin(&w);
    jw_key_string(&w, "uri", d->uri);
    jw_object_end(&w);
    if (s->save_text) {
        doc_text(s->svc, d, &text);
        jw_key_string_n(&w, "text", text.data ? text.data : "", text.len);
    }
    jw_object_end(&w);
    server_notify(s, "textDocument/didSave", params.data, params.len);
    buf_free(&text);
    buf_free(&params);
}

/* The server of a document, when it runs or is starting. */
static lsp_server *doc_server(lsp_service *self, const lsp_doc *d)
{
    lsp_server *s = server_find(self, d->language_id);
    return s && (s->status == LSP_READY || s->status == LSP_STARTING) ? s : NULL;
}

/* ----- diagnostics ------------------------------------------------------------------------ */

static lsp_diag_entry **diag_slot(lsp_service *self, const char *uri)
{
    char *want = doc_uri(uri);
    lsp_diag_entry **pp = &self->diags;
    while (*pp && strcmp((*pp)->uri, want) != 0)
        pp = &(*pp)->next;
    free(want);
    return pp;
}

static void diag_set(lsp_service *self, const lsp_server *from, const char *uri, const char *json, size_t len)
{
    lsp_diag_entry **pp = diag_slot(self, uri);
    if (!*pp) {
        *pp = xcalloc(1, sizeof **pp);
        (*pp)->uri = doc_uri(uri);
    }
    free((*pp)->json);
    free((*pp)->language_id);
    (*pp)->json = xstrndup(json, len);
    (*pp)->language_id = xstrdup(from->language_id);
    (*pp)->enc = from->enc;
    ECP_EMIT(&self->listeners, lsp_listener, on_diagnostics, uri);
}

static void diag_unlink(lsp_diag_entry **pp)
{
    lsp_diag_entry *e = *pp;
    *pp = e->next;
    free(e->uri);
    free(e->json);
    free(e->language_id);
    free(e);
}

static void diag_clear(lsp_service *self, const char *uri)
{
    lsp_diag_entry **pp = diag_slot(self, uri);
    if (*pp)
        diag_unlink(pp);
}

/* A server that stops or dies takes its diagnostics with it: they describe
 * what it last saw, and a restarted server publishes them anew. Clients hear
 * an empty list for each file, as LSP clients clear a stopped server's. */
static void diag_clear_server(lsp_service *self, const char *language_id)
{
    for (;;) {
        lsp_diag_entry **pp = &self->diags;
        while (*pp && strcmp((*pp)->language_id, language_id) != 0)
            pp = &(*pp)->next;
        if (!*pp)
            return;
        char *uri = xstrdup((*pp)->uri);
        diag_unlink(pp);
        ECP_EMIT(&self->listeners, lsp_listener, on_diagnostics, uri);
        free(uri);
    }
}

char *lsp_diagnostics_get(lsp_service *self, const char *uri, ecp_position_encoding enc)
{
    lsp_diag_entry *e = *diag_slot(self, uri);
    if (!e)
        return xstrdup("[]");
    size_t len;
    char *out = lsp_json_convert(self, uri, e->json, strlen(e->json), e->enc, enc, &len);
    return out ? out : xstrdup("[]");
}

void lsp_diagnostics_each(lsp_service *self, void (*fn)(void *ctx, const char *uri), void *ctx)
{
    for (lsp_diag_entry *e = self->diags; e; e = e->next)
        fn(ctx, e->uri);
}

static size_t size_of(const json_doc *doc, json_ref ref)
{
    int64_t v = 0;
    return json_int64(doc, ref, &v) && v > 0 ? (size_t)v : 0;
}

size_t lsp_diagnostics_in_lines(lsp_service *self, const char *uri, size_t first_line, size_t last_line,
                                ecp_position_encoding enc, void (*fn)(void *ctx, const lsp_diagnostic *diagnostic),
                                void *ctx)
{
    char *json = lsp_diagnostics_get(self, uri, enc);
    json_doc doc = {0};
    size_t found = 0;
    if (json_doc_parse(&doc, json, strlen(json), NULL) == 0) {
        arena a;
        arena_init(&a);
        for (json_ref d = json_first(&doc, json_root(&doc)); d != JSON_NO_REF; d = json_next(&doc, d)) {
            json_ref range = json_get(&doc, d, "range");
            json_ref start = json_get(&doc, range, "start"), end = json_get(&doc, range, "end");
            lsp_diagnostic out = {
                .start_line = size_of(&doc, json_get(&doc, start, "line")),
                .start_column = size_of(&doc, json_get(&doc, start, "character")),
                .end_line = size_of(&doc, json_get(&doc, end, "line")),
                .end_column = size_of(&doc, json_get(&doc, end, "character")),
                .severity = (int)size_of(&doc, json_get(&doc, d, "severity")),
            };
            if (out.end_line < first_line || out.start_line > last_line)
                continue;
            size_t n;
            if (!json_string(&doc, json_get(&doc, d, "message"), &a, &out.message, &n))
                out.message = "";
            if (!json_string(&doc, json_get(&doc, d, "source"), &a, &out.source, &n))
                out.source = NULL;
            out.json = json_raw(&doc, d, &out.json_len);
            found++;
            if (fn)
                fn(ctx, &out);
        }
        arena_free(&a);
    }
    json_doc_free(&doc);
    free(json);
    return found;
}

void lsp_diagnostics_summary(lsp_service *self, size_t *errors, size_t *warnings)
{
    *errors = *warnings = 0;
    for (lsp_diag_entry *e = self->diags; e; e = e->next) {
        json_doc doc = {0};
        if (json_doc_parse(&doc, e->json, strlen(e->json), NULL) == 0)
            for (json_ref d = json_first(&doc, json_root(&doc)); d != JSON_NO_REF; d = json_next(&doc, d)) {
                int64_t sev = 0;
                json_int64(&doc, json_get(&doc, d, "severity"), &sev);
                *errors += sev == 1;
                *warnings += sev == 2;
            }
        json_doc_free(&doc);
    }
}

/* ----- what a server sends ------------------------------------------------------------------- */

static void server_ready(lsp_server *s, const json_doc *doc, json_ref result)
{
    json_ref caps = json_get(doc, result, "capabilities");
    size_t len = 0;
    const char *raw = caps != JSON_NO_REF ? json_raw(doc, caps, &len) : "{}";
    if (caps == JSON_NO_REF)
        len = 2;
    free(s->capabilities);
    s->capabilities = xstrndup(raw, len);
    s->enc = ECP_ENCODING_UTF16;
    json_ref pe = json_get(doc, caps, "positionEncoding");
    if (pe == JSON_NO_REF)
        pe = json_get(doc, result, "offsetEncoding");
    if (json_string_eq(doc, pe, "utf-8"))
        s->enc = ECP_ENCODING_UTF8;
    else if (json_string_eq(doc, pe, "utf-32"))
        s->enc = ECP_ENCODING_UTF32;
    json_ref sync = json_get(doc, caps, "textDocumentSync");
    int64_t kind = 0;
    s->save_text = false;
    if (json_int64(doc, sync, &kind)) {
        s->sync_kind = (int)kind;
    } else {
        json_int64(doc, json_get(doc, sync, "change"), &kind);
        s->sync_kind = (int)kind;
        bool include = false;
        json_bool(doc, json_get(doc, json_get(doc, sync, "save"), "includeText"), &include);
        s->save_text = include;
    }

    buf initialized;
    buf_init(&initialized);
    buf_append_str(&initialized, "{\"jsonrpc\":\"2.0\",\"method\":\"initialized\",\"params\":{}}");
    server_send(s, &initialized, true);
    buf_free(&initialized);
    uv_timer_stop(s->timer);
    s->status = LSP_READY;
    s->was_ready = true;
    report_encodings(s->svc); /* before the documents go out: their next change is in its encoding */
    for (lsp_doc *d = s->svc->docs; d; d = d->next)
        if (strcmp(d->language_id, s->language_id) == 0)
            send_did_open(s, d);
    if (s->outbox.len) {
        proc_write(s->proc, s->outbox.data, s->outbox.len);
        buf_clear(&s->outbox);
    }
    ecp_log(s->svc->log, ECP_LOG_INFO, "lsp %s: ready (%s positions)", s->language_id, ecp_encoding_name(s->enc));
    server_set_status(s, LSP_READY, NULL);
    finish_starters(s, 0, NULL);
}

static void reply(lsp_server *s, const json_doc *doc, json_ref id, const char *result_json)
{
    size_t id_len;
    const char *id_raw = json_raw(doc, id, &id_len);
    buf out;
    buf_init(&out);
    buf_append_str(&out, "{\"jsonrpc\":\"2.0\",\"id\":");
    buf_append(&out, id_raw, id_len);
    buf_appendf(&out, ",\"result\":%s}", result_json);
    server_send(s, &out, true);
    buf_free(&out);
}

static void reply_error(lsp_server *s, const json_doc *doc, json_ref id, int code, const char *message)
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
    server_send(s, &out, true);
    buf_free(&out);
}

/* The value at a dotted section of the server's configured settings, else
 * the editor setting of that name ("lsp.hover.enabled"), else null. */
static void configuration_item(lsp_server *s, const json_doc *doc, json_ref item, json_writer *w)
{
    arena a;
    arena_init(&a);
    const char *section = NULL;
    size_t len = 0;
    if (!json_string(doc, json_get(doc, item, "section"), &a, &section, &len))
        section = NULL;
    lsp_server_config config;
    json_doc settings = {0};
    json_ref at = JSON_NO_REF;
    if (lsp_config_get(s->svc, s->language_id, &config) && config.settings &&
        json_doc_parse(&settings, config.settings, strlen(config.settings), NULL) == 0) {
        at = json_root(&settings);
        if (section && *section) {
            char *path = xstrdup(section);
            char *save = NULL;
            for (char *part = strtok_r(path, ".", &save); part && at != JSON_NO_REF; part = strtok_r(NULL, ".", &save))
                at = json_get(&settings, at, part);
            free(path);
        }
    }
    const char *editor = NULL;
    if (at != JSON_NO_REF)
        json_write_value(w, &settings, at);
    else if (section && s->svc->session && (editor = session_setting_json(s->svc->session, section)))
        jw_raw(w, editor, strlen(editor));
    else
        jw_null(w);
    json_doc_free(&settings);
    arena_free(&a);
}

/* workspace/applyEdit: every document's edits as one undoable step. */
static bool apply_text_edits(lsp_server *s, const json_doc *doc, const char *uri, json_ref edits, buf *why)
{
    lsp_service *svc = s->svc;
    lsp_doc *d = doc_find(svc, uri);
    if (!d || !d->document_id || !svc->documents) {
        buf_appendf(why, "%s is not open in the editor", uri);
        return false;
    }
    size_t n = json_length(doc, edits);
    document_edit *list = xcalloc(n ? n : 1, sizeof *list);
    arena a;
    arena_init(&a);
    size_t i = 0;
    for (json_ref e = json_first(doc, edits); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        json_ref r = json_get(doc, e, "range");
        json_ref st = json_get(doc, r, "start"), en = json_get(doc, r, "end");
        list[i].range.start.line = size_of(doc, json_get(doc, st, "line"));
        list[i].range.start.column = size_of(doc, json_get(doc, st, "character"));
        list[i].range.end.line = size_of(doc, json_get(doc, en, "line"));
        list[i].range.end.column = size_of(doc, json_get(doc, en, "character"));
        if (!json_string(doc, json_get(doc, e, "newText"), &a, &list[i].text, &list[i].len)) {
            list[i].text = "";
            list[i].len = 0;
        }
    }
    ecp_error err = {0};
    int rc = document_apply_edits(svc->documents, d->document_id, list, n, s->enc, 0, NULL, &err);
    if (rc)
        buf_appendf(why, "%s: %s", uri, err.message);
    arena_free(&a);
    free(list);
    return rc == 0;
}

static void apply_edit(lsp_server *s, const json_doc *doc, json_ref id, json_ref params)
{
    json_ref edit = json_get(doc, params, "edit");
    buf why;
    buf_init(&why);
    bool ok = true;
    arena a;
    arena_init(&a);
    json_ref changes = json_get(doc, edit, "changes");
    for (json_ref k = json_first(doc, changes); k != JSON_NO_REF && ok; k = json_next(doc, k)) {
        const char *uri;
        size_t len;
        if (json_string(doc, k, &a, &uri, &len))
            ok = apply_text_edits(s, doc, uri, k + 1, &why);
    }
    json_ref dc = json_get(doc, edit, "documentChanges");
    for (json_ref c = json_first(doc, dc); c != JSON_NO_REF && ok; c = json_next(doc, c)) {
        const char *uri;
        size_t len;
        if (json_get(doc, c, "kind") != JSON_NO_REF) {
            buf_append_str(&why, "file operations are not supported");
            ok = false;
        } else if (json_string(doc, json_get(doc, json_get(doc, c, "textDocument"), "uri"), &a, &uri, &len)) {
            ok = apply_text_edits(s, doc, uri, json_get(doc, c, "edits"), &why);
        }
    }
    buf result;
    buf_init(&result);
    buf_appendf(&result, "{\"applied\":%s", ok ? "true" : "false");
    if (!ok) {
        buf_append_str(&result, ",\"failureReason\":\"");
        json_escape_into(&result, why.data ? why.data : "", why.len);
        buf_push(&result, '"');
    }
    buf_push(&result, '}');
    reply(s, doc, id, result.data);
    buf_free(&result);
    buf_free(&why);
    arena_free(&a);
}

static void server_request_in(lsp_server *s, const json_doc *doc, json_ref id, json_ref method, json_ref params)
{
    if (json_string_eq(doc, method, "workspace/configuration")) {
        buf out;
        buf_init(&out);
        json_writer w;
        jw_init(&w, &out);
        jw_array_begin(&w);
        for (json_ref item = json_first(doc, json_get(doc, params, "items")); item != JSON_NO_REF;
             item = json_next(doc, item))
            configuration_item(s, doc, item, &w);
        jw_array_end(&w);
        reply(s, doc, id, out.data);
        buf_free(&out);
    } else if (json_string_eq(doc, method, "client/registerCapability") ||
               json_string_eq(doc, method, "client/unregisterCapability") ||
               json_string_eq(doc, method, "window/workDoneProgress/create")) {
        reply(s, doc, id, "null");
    } else if (json_string_eq(doc, method, "window/showMessageRequest")) {
        size_t len;
        const char *raw = json_raw(doc, params, &len);
        char *copy = xstrndup(raw ? raw : "{}", raw ? len : 2);
        ECP_EMIT(&s->svc->listeners, lsp_listener, on_message, s->language_id, copy);
        free(copy);
        reply(s, doc, id, "null");
    } else if (json_string_eq(doc, method, "workspace/applyEdit")) {
        apply_edit(s, doc, id, params);
    } else if (json_string_eq(doc, method, "workspace/workspaceFolders")) {
        buf out;
        buf_init(&out);
        if (s->root_uri) {
            buf_append_str(&out, "[{\"uri\":\"");
            json_escape_into(&out, s->root_uri, strlen(s->root_uri));
            buf_append_str(&out, "\",\"name\":\"workspace\"}]");
        } else {
            buf_append_str(&out, "null");
        }
        reply(s, doc, id, out.data);
        buf_free(&out);
    } else {
        size_t len;
        const char *raw = json_raw(doc, method, &len);
        ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: unknown request %.*s from the server", s->language_id,
                (int)(raw ? len : 0), raw ? raw : "");
        reply_error(s, doc, id, -32601, "Method not found");
    }
}

static void server_notification_in(lsp_server *s, const json_doc *doc, json_ref method, json_ref params)
{
    lsp_service *svc = s->svc;
    if (json_string_eq(doc, method, "textDocument/publishDiagnostics")) {
        arena a;
        arena_init(&a);
        const char *uri;
        size_t len;
        json_ref diags = json_get(doc, params, "diagnostics");
        if (json_string(doc, json_get(doc, params, "uri"), &a, &uri, &len) &&
            json_type_of(doc, diags) == JSON_ARRAY) {
            /* written again so that what reaches clients is valid UTF-8 whatever the server sent */
            buf clean;
            buf_init(&clean);
            json_writer w;
            jw_init(&w, &clean);
            json_write_value(&w, doc, diags);
            diag_set(svc, s, uri, clean.data, clean.len);
            buf_free(&clean);
        }
        arena_free(&a);
    } else if (json_string_eq(doc, method, "window/showMessage")) {
        buf clean;
        buf_init(&clean);
        json_writer w;
        jw_init(&w, &clean);
        json_write_value(&w, doc, params);
        ECP_EMIT(&svc->listeners, lsp_listener, on_message, s->language_id, clean.data ? clean.data : "null");
        buf_free(&clean);
    } else if (json_string_eq(doc, method, "$/progress")) {
        buf token, value;
        buf_init(&token);
        buf_init(&value);
        json_writer w;
        jw_init(&w, &token);
        json_write_value(&w, doc, json_get(doc, params, "token"));
        jw_init(&w, &value);
        json_write_value(&w, doc, json_get(doc, params, "value"));
        ECP_EMIT(&svc->listeners, lsp_listener, on_progress, s->language_id, token.data ? token.data : "null",
                 value.data ? value.data : "null");
        buf_free(&token);
        buf_free(&value);
    } else if (json_string_eq(doc, method, "window/logMessage")) {
        arena a;
        arena_init(&a);
        const char *msg;
        size_t len;
        if (json_string(doc, json_get(doc, params, "message"), &a, &msg, &len))
            ecp_log(svc->log, ECP_LOG_DEBUG, "lsp %s: %s", s->language_id, msg);
        arena_free(&a);
    }
}

static void server_response_in(lsp_server *s, const json_doc *doc, int64_t id, json_ref result, json_ref error)
{
    if (id == s->init_id && s->status == LSP_STARTING) {
        s->init_id = -1;
        if (error != JSON_NO_REF || json_type_of(doc, result) != JSON_OBJECT) {
            arena a;
            arena_init(&a);
            const char *msg = NULL;
            size_t len;
            char why[600];
            if (json_string(doc, json_get(doc, error, "message"), &a, &msg, &len))
                snprintf(why, sizeof why, "initialize failed: %s", msg);
            else
                snprintf(why, sizeof why, "initialize failed");
            arena_free(&a);
            server_proc_gone(s, why);
            return;
        }
        server_ready(s, doc, result);
        return;
    }
    lsp_request *r = s->pending;
    while (r && r->id != id)
        r = r->next;
    if (!r)
        return; /* answered after its timeout or cancel */
    if (error != JSON_NO_REF) {
        arena a;
        arena_init(&a);
        const char *msg = NULL;
        size_t len;
        int64_t code = 0;
        json_int64(doc, json_get(doc, error, "code"), &code);
        ecp_error err;
        if (!json_string(doc, json_get(doc, error, "message"), &a, &msg, &len))
            msg = "no message";
        /* MethodNotFound: the server does not do this at all, which is not a failure of this request */
        int status = code == -32601 ? ECP_ENOTSUP : ECP_EIO;
        if (status == ECP_ENOTSUP)
            ecp_error_set(&err, status, "The %s server does not support %s: %s", s->language_id, r->method, msg);
        else
            ecp_error_set(&err, status, "The %s server failed %s: %s (%lld)", s->language_id, r->method, msg,
                          (long long)code);
        arena_free(&a);
        request_finish(r, status, &err, NULL, 0);
        return;
    }
    buf clean;
    buf_init(&clean);
    json_writer w;
    jw_init(&w, &clean);
    if (result == JSON_NO_REF)
        jw_null(&w);
    else
        json_write_value(&w, doc, result);
    request_finish(r, 0, NULL, clean.data, clean.len);
    buf_free(&clean);
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
            server_request_in(s, &doc, id, method, params);
        else
            server_notification_in(s, &doc, method, params);
    } else {
        int64_t n;
        if (json_int64(&doc, id, &n))
            server_response_in(s, &doc, n, json_get(&doc, root, "result"), json_get(&doc, root, "error"));
        else
            ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: ignored a response without a numeric id", s->language_id);
    }
    json_doc_free(&doc);
}

/* ----- starting, crashing, stopping ---------------------------------------------------------- */

static void write_initialize(lsp_server *s, const lsp_server_config *config, buf *out)
{
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_int(&w, "processId", (int64_t)getpid());
    jw_key(&w, "clientInfo");
    jw_object_begin(&w);
    jw_key_string(&w, "name", "ecpd");
    jw_object_end(&w);
    jw_key(&w, "rootUri");
    jw_string(&w, s->root_uri);
    if (s->root_uri) {
        buf path;
        buf_init(&path);
        if (uri_file_path(s->root_uri, strlen(s->root_uri), &path, NULL) == 0)
            jw_key_string(&w, "rootPath", path.data);
        buf_free(&path);
        jw_key(&w, "workspaceFolders");
        jw_array_begin(&w);
        jw_object_begin(&w);
        jw_key_string(&w, "uri", s->root_uri);
        jw_key_string(&w, "name", "workspace");
        jw_object_end(&w);
        jw_array_end(&w);
    }
    if (config->initialization_options) {
        jw_key(&w, "initializationOptions");
        jw_raw(&w, config->initialization_options, strlen(config->initialization_options));
    }
    jw_key(&w, "capabilities");
    static const char capabilities[] =
        "{\"general\":{\"positionEncodings\":[\"utf-8\",\"utf-16\",\"utf-32\"]},"
        /* what clangd before 15 reads instead */
        "\"offsetEncoding\":[\"utf-8\",\"utf-16\",\"utf-32\"],"
        "\"workspace\":{\"applyEdit\":true,\"configuration\":true,\"workspaceFolders\":true,"
        "\"workspaceEdit\":{\"documentChanges\":true}},"
        "\"window\":{\"workDoneProgress\":true,\"showMessage\":{}},"
        "\"textDocument\":{"
        "\"synchronization\":{\"dynamicRegistration\":false,\"didSave\":true,\"willSave\":false},"
        "\"publishDiagnostics\":{\"relatedInformation\":true,\"versionSupport\":true},"
        "\"completion\":{\"completionItem\":{\"snippetSupport\":true,"
        "\"documentationFormat\":[\"markdown\",\"plaintext\"]}},"
        "\"hover\":{\"contentFormat\":[\"markdown\",\"plaintext\"]},"
        "\"signatureHelp\":{\"signatureInformation\":{\"documentationFormat\":[\"markdown\",\"plaintext\"]}},"
        "\"definition\":{\"linkSupport\":false},\"references\":{},"
        "\"documentSymbol\":{\"hierarchicalDocumentSymbolSupport\":true},"
        "\"rename\":{\"prepareSupport\":false},\"formatting\":{},"
        "\"codeAction\":{\"codeActionLiteralSupport\":{\"codeActionKind\":{\"valueSet\":"
        "[\"quickfix\",\"refactor\",\"source\"]}}}}}";
    jw_raw(&w, capabilities, sizeof capabilities - 1);
    jw_object_end(&w);
}

static unsigned initialize_timeout_ms(lsp_server *s)
{
    unsigned ms = timeout_ms(s);
    return ms > LSP_MIN_INITIALIZE_TIMEOUT_MS ? ms : LSP_MIN_INITIALIZE_TIMEOUT_MS;
}

static void initialize_timeout(uv_timer_t *t)
{
    lsp_server *s = t->data;
    char why[128];
    snprintf(why, sizeof why, "the server did not answer initialize within %u ms", initialize_timeout_ms(s));
    ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: %s", s->language_id, why);
    server_proc_gone(s, why);
}

/* A server runs what the folder it is rooted in names: typescript-language-server
 * prefers the folder's node_modules/typescript, pyright reads the Python
 * environment its pyrightconfig.json names and runs an interpreter there,
 * others read project files that name programs. So a server starts only in a folder the user trusts: 0,
 * or ECP_EACCES with err naming the folder. Without a session service nothing
 * keeps trust, and the embedder answers for the roots it gives. */
static int root_trust_check(lsp_service *self, const char *root_uri, ecp_error *err)
{
    if (!self->session)
        return 0;
    static const char why[] = "Language servers run programs a workspace names, so they start only in a trusted "
                              "folder: trust it with workspace/trust.";
    if (!root_uri)
        return ecp_error_set(err, ECP_EACCES, "%s No workspace folder is open", why);
    buf path;
    buf_init(&path);
    int status = 0;
    bool trusted = false;
    ecp_error query = {0};
    if (uri_file_path(root_uri, strlen(root_uri), &path, NULL) != 0)
        status = ecp_error_set(err, ECP_EACCES, "%s Not a folder: %s", why, root_uri);
    else if (session_trust_query(self->session, path.data, &trusted, &query) != 0)
        status = ecp_error_set(err, ECP_EACCES, "%s %s", why, query.message);
    else if (!trusted)
        status = ecp_error_set(err, ECP_EACCES, "%s Not trusted: %s", why, path.data);
    buf_free(&path);
    return status;
}

/* Spawns the server's process and sends initialize. */
static int server_launch(lsp_server *s, ecp_error *err)
{
    int trust = root_trust_check(s->svc, s->root_uri, err);
    if (trust != 0)
        return trust;
    lsp_server_config config;
    if (!lsp_config_get(s->svc, s->language_id, &config))
        return ecp_error_set(err, ECP_ENOTFOUND, "No language server configured for %s", s->language_id);
    buf file;
    buf_init(&file);
    if (!resolve_command(s->svc, config.command, &file)) {
        buf_free(&file);
        return ecp_error_set(err, ECP_EIO, "Language server not found: %s", config.command);
    }
    s->proc = proc_spawn(s, file.data, &config, err);
    buf_free(&file);
    if (!s->proc)
        return ECP_EIO;
    s->status = LSP_STARTING;
    s->sync_kind = 0;
    buf params;
    buf_init(&params);
    write_initialize(s, &config, &params);
    s->init_id = s->next_id;
    /* initialize has no request record: its answer is handled by server_response_in */
    s->next_id++;
    buf out;
    buf_init(&out);
    buf_appendf(&out, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":\"initialize\",\"params\":", (long long)s->init_id);
    buf_append(&out, params.data, params.len);
    buf_push(&out, '}');
    server_send(s, &out, true);
    buf_free(&out);
    buf_free(&params);
    /* a server that never answers initialize would hold lsp/start forever */
    uv_timer_start(s->timer, initialize_timeout, initialize_timeout_ms(s), 0);
    server_set_status(s, LSP_STARTING, NULL);
    return 0;
}

static void restart_fire(uv_timer_t *t)
{
    lsp_server *s = t->data;
    ecp_error err = {0};
    ecp_log(s->svc->log, ECP_LOG_INFO, "lsp %s: restarting", s->language_id);
    if (server_launch(s, &err) != 0)
        server_set_status(s, LSP_ERROR, err.message);
}

static void server_proc_gone(lsp_server *s, const char *why)
{
    uv_timer_stop(s->timer);
    lsp_proc *p = s->proc;
    s->proc = NULL;
    proc_release(p, true);
    bool was_starting = s->status == LSP_STARTING;
    buf_clear(&s->outbox);
    s->init_id = -1;
    fail_pending(s, ECP_EIO, why);
    server_set_status(s, LSP_ERROR, why);
    diag_clear_server(s->svc, s->language_id);
    if (was_starting)
        finish_starters(s, ECP_EIO, why);
    if (!s->was_ready)
        return; /* a server that never started is not started again and again */
    uint64_t now = uv_now(s->svc->loop);
    size_t recent = 0;
    for (size_t i = 0; i < s->restart_count && i < LSP_MAX_RESTARTS; i++)
        recent += now - s->restarts[i] < LSP_RESTART_WINDOW_MS;
    if (recent >= LSP_MAX_RESTARTS) {
        ecp_log(s->svc->log, ECP_LOG_ERROR, "lsp %s: crashed %d times within a minute; not restarting",
                s->language_id, LSP_MAX_RESTARTS);
        return;
    }
    s->restarts[s->restart_count % LSP_MAX_RESTARTS] = now;
    s->restart_count++;
    uint64_t delay = 500u << (recent < 3 ? recent : 3);
    uv_timer_start(s->timer, restart_fire, delay, 0);
}

static void timer_closed(uv_handle_t *h) { free(h); }

/* Ends the server: shutdown and exit when it can hear them, then its process. */
static void server_end(lsp_server *s, bool at_teardown)
{
    uv_timer_stop(s->timer);
    uv_close((uv_handle_t *)s->timer, timer_closed);
    s->timer = NULL;
    fail_pending(s, ECP_ECANCELED, "was stopped");
    finish_starters(s, ECP_ECANCELED, "The server was stopped");
    lsp_proc *p = s->proc;
    s->proc = NULL;
    if (p && !p->exited) {
        static const char shutdown_msg[] = "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"shutdown\"}";
        static const char exit_msg[] = "{\"jsonrpc\":\"2.0\",\"method\":\"exit\"}";
        buf out;
        buf_init(&out);
        framing_encode(FRAMING_CONTENT_LENGTH, &out, shutdown_msg, sizeof shutdown_msg - 1);
        framing_encode(FRAMING_CONTENT_LENGTH, &out, exit_msg, sizeof exit_msg - 1);
        if (at_teardown) {
            uv_buf_t b = uv_buf_init(out.data, (unsigned)out.len);
            uv_try_write((uv_stream_t *)&p->in, &b, 1);
        } else {
            proc_write(p, out.data, out.len);
        }
        buf_free(&out);
    }
    if (at_teardown && p) {
        /* The loop may not turn again: nothing may outlive the service, so the
         * process is killed (it had its exit) and every handle closed now. */
        p->server = NULL;
        if (!p->exited)
            uv_process_kill(&p->process, SIGKILL);
        p->exited = true;
        proc_close(p);
        return;
    }
    proc_release(p, false);
}

static void server_free(lsp_server *s)
{
    free(s->language_id);
    free(s->root_uri);
    free(s->error);
    free(s->capabilities);
    buf_free(&s->outbox);
    free(s);
}

static lsp_server *server_new(lsp_service *self, const char *language_id, const char *root_uri)
{
    lsp_server *s = xcalloc(1, sizeof *s);
    s->svc = self;
    s->language_id = xstrdup(language_id);
    s->root_uri = root_uri ? xstrdup(root_uri) : NULL;
    s->next_id = 1;
    s->init_id = -1;
    s->enc = ECP_ENCODING_UTF16;
    buf_init(&s->outbox);
    s->timer = xmalloc(sizeof *s->timer);
    uv_timer_init(self->loop, s->timer);
    s->timer->data = s;
    s->next = self->servers;
    self->servers = s;
    return s;
}

static char *workspace_uri(lsp_service *self)
{
    const char *ws = self->session ? session_service_workspace(self->session) : NULL;
    if (!ws)
        ws = self->workspace;
    if (!ws)
        return NULL;
    buf out;
    buf_init(&out);
    uri_from_path(&out, ws, strlen(ws));
    return buf_detach(&out);
}

void lsp_server_start(lsp_service *self, const char *language_id, const char *root_uri, lsp_start_cb cb, void *ctx)
{
    ecp_error err = {0};
    lsp_server_info info = {.language_id = language_id, .status = LSP_STOPPED};
    lsp_server_config config;
    if (!lsp_config_get(self, language_id, &config)) {
        ecp_error_set(&err, ECP_ENOTFOUND, "No language server configured for %s", language_id);
        cb(ctx, ECP_ENOTFOUND, &err, &info);
        return;
    }
    if (self->session && !session_setting_bool(self->session, "lsp.enabled", true)) {
        ecp_error_set(&err, ECP_ESTATE, "Language servers are disabled (lsp.enabled is false)");
        cb(ctx, ECP_ESTATE, &err, &info);
        return;
    }
    lsp_server *s = server_find(self, language_id);
    char *served = root_uri || s ? NULL : workspace_uri(self);
    int trust = root_trust_check(self, root_uri ? root_uri : s ? s->root_uri : served, &err);
    free(served);
    if (trust != 0) {
        ecp_log(self->log, ECP_LOG_INFO, "lsp %s: %s", language_id, err.message);
        cb(ctx, trust, &err, &info);
        return;
    }
    if (s && s->status == LSP_READY) {
        server_info(s, &info);
        cb(ctx, 0, NULL, &info);
        return;
    }
    if (!s) {
        char *ws = root_uri ? NULL : workspace_uri(self);
        s = server_new(self, language_id, root_uri ? root_uri : ws);
        free(ws);
    }
    if (s->status != LSP_STARTING) {
        uv_timer_stop(s->timer);
        if (server_launch(s, &err) != 0) {
            ecp_log(self->log, ECP_LOG_WARN, "lsp %s: %s", language_id, err.message);
            server_set_status(s, LSP_ERROR, err.message);
            server_info(s, &info);
            cb(ctx, err.status, &err, &info);
            return;
        }
    }
    lsp_starter *st = xcalloc(1, sizeof *st);
    st->cb = cb;
    st->ctx = ctx;
    st->next = s->starters;
    s->starters = st;
}

int lsp_server_stop(lsp_service *self, const char *language_id)
{
    for (lsp_server **pp = &self->servers; *pp; pp = &(*pp)->next) {
        lsp_server *s = *pp;
        if (strcmp(s->language_id, language_id) != 0)
            continue;
        *pp = s->next;
        server_end(s, false);
        diag_clear_server(self, s->language_id);
        s->status = LSP_STOPPED;
        report_encodings(self);
        lsp_server_info info = {.language_id = s->language_id, .status = LSP_STOPPED};
        ECP_EMIT(&self->listeners, lsp_listener, on_status, &info);
        server_free(s);
        return 0;
    }
    return 0;
}

void lsp_server_get(lsp_service *self, const char *language_id, lsp_server_info *out)
{
    lsp_server *s = server_find(self, language_id);
    if (s) {
        server_info(s, out);
    } else {
        memset(out, 0, sizeof *out);
        out->language_id = language_id;
        out->status = LSP_STOPPED;
    }
}

void lsp_server_each(lsp_service *self, void (*fn)(void *ctx, const lsp_server_info *info), void *ctx)
{
    for (lsp_server *s = self->servers; s; s = s->next) {
        lsp_server_info info;
        server_info(s, &info);
        fn(ctx, &info);
    }
}

ecp_position_encoding lsp_server_encoding(lsp_service *self, const char *language_id)
{
    lsp_server *s = server_find(self, language_id);
    return s ? s->enc : ECP_ENCODING_UTF16;
}

/* ----- positions ------------------------------------------------------------------------------ */

static void append_chunk(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

/* The text of one line of uri, when the service follows that document. */
static bool line_text(lsp_service *self, const char *uri, size_t line, buf *out)
{
    lsp_doc *d = doc_find(self, uri);
    if (!d)
        return false;
    buf_clear(out);
    if (d->document_id)
        return self->documents &&
               document_read_line(self->documents, d->document_id, line, append_chunk, out, NULL) == 0;
    const char *p = d->text ? d->text : "", *end = p + d->len;
    for (size_t l = 0; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        p = nl + 1;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    buf_append(out, p, nl ? (size_t)(nl - p) : (size_t)(end - p));
    return true;
}

static size_t column_in(const buf *text, size_t column, ecp_position_encoding from, ecp_position_encoding to)
{
    const char *s = text->data ? text->data : "";
    size_t byte;
    if (utf_column_to_byte(s, text->len, column, from, &byte))
        return utf_byte_to_column(s, text->len, byte, to);
    /* past the end of the line (a range that ends after it): keep the excess */
    return utf_column_count(s, text->len, to) + (column - utf_column_count(s, text->len, from));
}

size_t lsp_column_convert(lsp_service *self, const char *uri, size_t line, size_t column, ecp_position_encoding from,
                          ecp_position_encoding to)
{
    if (from == to || !uri)
        return column;
    buf text;
    buf_init(&text);
    size_t out = line_text(self, uri, line, &text) ? column_in(&text, column, from, to) : column;
    buf_free(&text);
    return out;
}

ecp_position_encoding lsp_encoding_of(lsp_service *self, const char *uri)
{
    lsp_doc *d = doc_find(self, uri);
    lsp_server *s = d ? server_find(self, d->language_id) : NULL;
    return s ? s->enc : ECP_ENCODING_UTF16;
}

typedef struct converter {
    lsp_service *svc;
    const json_doc *doc;
    ecp_position_encoding from, to;
    arena *strings;
    buf line;          /* the text of cached_line of cached_uri */
    const char *cached_uri;
    size_t cached_line;
    bool cached_ok;
} converter;

static bool is_position(const json_doc *d, json_ref obj, int64_t *line, int64_t *character)
{
    return json_length(d, obj) == 2 && json_int64(d, json_get(d, obj, "line"), line) &&
           json_int64(d, json_get(d, obj, "character"), character) && *line >= 0 && *character >= 0;
}

static void convert_value(converter *c, json_ref ref, const char *uri, json_writer *w);

static const char *string_of(converter *c, json_ref ref)
{
    const char *s;
    size_t len;
    return json_string(c->doc, ref, c->strings, &s, &len) ? s : NULL;
}

static void convert_object(converter *c, json_ref obj, const char *uri, json_writer *w)
{
    const json_doc *d = c->doc;
    int64_t line, character;
    if (is_position(d, obj, &line, &character)) {
        size_t column = (size_t)character;
        if (uri) {
            if (!c->cached_uri || strcmp(c->cached_uri, uri) != 0 || c->cached_line != (size_t)line) {
                c->cached_uri = uri;
                c->cached_line = (size_t)line;
                c->cached_ok = line_text(c->svc, uri, (size_t)line, &c->line);
            }
            if (c->cached_ok)
                column = column_in(&c->line, column, c->from, c->to);
        }
        jw_object_begin(w);
        jw_key_int(w, "line", line);
        jw_key_int(w, "character", (int64_t)column);
        jw_object_end(w);
        return;
    }
    const char *own = string_of(c, json_get(d, obj, "uri"));
    if (!own)
        own = string_of(c, json_get(d, obj, "targetUri"));
    if (!own)
        own = string_of(c, json_get(d, json_get(d, obj, "textDocument"), "uri"));
    if (own)
        uri = own;
    jw_object_begin(w);
    for (json_ref k = json_first(d, obj); k != JSON_NO_REF; k = json_next(d, k)) {
        const char *key = string_of(c, k);
        if (!key)
            continue;
        jw_key(w, key);
        if (strcmp(key, "changes") == 0 && json_type_of(d, k + 1) == JSON_OBJECT) {
            /* WorkspaceEdit.changes: each key is the uri of its edits */
            jw_object_begin(w);
            for (json_ref u = json_first(d, k + 1); u != JSON_NO_REF; u = json_next(d, u)) {
                const char *edits_uri = string_of(c, u);
                if (!edits_uri)
                    continue;
                jw_key(w, edits_uri);
                convert_value(c, u + 1, edits_uri, w);
            }
            jw_object_end(w);
        } else {
            convert_value(c, k + 1, uri, w);
        }
    }
    jw_object_end(w);
}

static void convert_value(converter *c, json_ref ref, const char *uri, json_writer *w)
{
    switch (json_type_of(c->doc, ref)) {
    case JSON_OBJECT:
        convert_object(c, ref, uri, w);
        break;
    case JSON_ARRAY:
        jw_array_begin(w);
        for (json_ref e = json_first(c->doc, ref); e != JSON_NO_REF; e = json_next(c->doc, e))
            convert_value(c, e, uri, w);
        jw_array_end(w);
        break;
    default:
        json_write_value(w, c->doc, ref);
        break;
    }
}

char *lsp_json_convert(lsp_service *self, const char *default_uri, const char *json, size_t len,
                       ecp_position_encoding from, ecp_position_encoding to, size_t *out_len)
{
    json_doc doc = {0};
    if (json_doc_parse(&doc, json, len, NULL) != 0) {
        json_doc_free(&doc);
        return NULL;
    }
    buf out;
    buf_init(&out);
    json_writer w;
    jw_init(&w, &out);
    if (from == to) {
        json_write_value(&w, &doc, json_root(&doc));
    } else {
        arena strings;
        arena_init(&strings);
        converter c = {.svc = self, .doc = &doc, .from = from, .to = to, .strings = &strings};
        buf_init(&c.line);
        convert_value(&c, json_root(&doc), default_uri, &w);
        buf_free(&c.line);
        arena_free(&strings);
    }
    json_doc_free(&doc);
    if (out_len)
        *out_len = out.len;
    if (!out.data)
        buf_append(&out, "", 0);
    return buf_detach(&out);
}

/* ----- requests ------------------------------------------------------------------------------- */

lsp_request *lsp_request_send(lsp_service *self, const char *uri, const char *method, const char *params,
                              lsp_result_cb cb, void *ctx)
{
    ecp_error err = {0};
    lsp_doc *d = doc_find(self, uri);
    lsp_server *s = d ? server_find(self, d->language_id) : NULL;
    if (!s || s->status == LSP_STOPPED) {
        ecp_error_set(&err, ECP_ENOTFOUND, "No language server has %s open", uri);
        cb(ctx, ECP_ENOTFOUND, &err, NULL, 0);
        return NULL;
    }
    if (s->status == LSP_ERROR) {
        ecp_error_set(&err, ECP_ESTATE, "The %s server is not running: %s", s->language_id,
                      s->error ? s->error : "it failed");
        cb(ctx, ECP_ESTATE, &err, NULL, 0);
        return NULL;
    }
    return server_request(s, method, params, strlen(params), cb, ctx, false);
}

void lsp_request_cancel(lsp_service *self, lsp_request *req)
{
    (void)self;
    ecp_error err;
    ecp_error_set(&err, ECP_ECANCELED, "Request cancelled");
    if (req->server && req->server->status == LSP_READY)
        send_cancel(req->server, req->id);
    request_finish(req, ECP_ECANCELED, &err, NULL, 0);
}

/* ----- documents -------------------------------------------------------------------------------- */

static lsp_doc *doc_add(lsp_service *self, const char *uri, const char *language_id, const char *document_id)
{
    lsp_doc *d = xcalloc(1, sizeof *d);
    d->uri = doc_uri(uri);
    d->language_id = xstrdup(language_id);
    d->document_id = document_id ? xstrdup(document_id) : NULL;
    d->next = self->docs;
    self->docs = d;
    return d;
}

static void doc_remove(lsp_service *self, lsp_doc *d)
{
    for (lsp_doc **pp = &self->docs; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    free(d->uri);
    free(d->language_id);
    free(d->document_id);
    free(d->text);
    free(d);
}

static void auto_started(void *ctx, int status, const ecp_error *err, const lsp_server_info *info)
{
    (void)ctx, (void)status, (void)err, (void)info; /* reported through on_status */
}

int lsp_document_open(lsp_service *self, const char *uri, const char *language_id, const char *text, size_t len,
                      ecp_error *err)
{
    (void)err;
    lsp_doc *d = doc_find(self, uri);
    if (d && d->document_id)
        return 0; /* the editor's own document wins: it is already followed */
    bool reopen = d != NULL;
    if (reopen && strcmp(d->language_id, language_id) != 0) {
        lsp_server *old = doc_server(self, d);
        if (old && old->status == LSP_READY)
            send_did_close(old, uri);
        doc_remove(self, d);
        d = NULL;
        reopen = false;
    }
    if (!d)
        d = doc_add(self, uri, language_id, NULL);
    free(d->text);
    d->text = xmalloc(len + 1);
    memcpy(d->text, text, len);
    d->text[len] = '\0';
    d->len = len;
    d->version = reopen ? d->version + 1 : 1;
    lsp_server *s = server_find(self, language_id);
    if (s && s->status == LSP_READY) {
        if (reopen)
            send_full_change(s, d);
        else
            send_did_open(s, d);
    } else if (!s || s->status != LSP_STARTING) {
        lsp_server_config config;
        if (lsp_config_get(self, language_id, &config))
            lsp_server_start(self, language_id, NULL, auto_started, NULL);
    }
    return 0;
}

int lsp_document_change(lsp_service *self, const char *uri, const char *text, size_t len, int64_t version)
{
    lsp_doc *d = doc_find(self, uri);
    if (!d || d->document_id)
        return 0;
    free(d->text);
    d->text = xmalloc(len + 1);
    memcpy(d->text, text, len);
    d->text[len] = '\0';
    d->len = len;
    d->version = version > d->version ? version : d->version + 1;
    lsp_server *s = doc_server(self, d);
    if (s && s->status == LSP_READY)
        send_full_change(s, d);
    return 0;
}

int lsp_document_save(lsp_service *self, const char *uri, const char *text, size_t len)
{
    lsp_doc *d = doc_find(self, uri);
    if (!d)
        return 0;
    if (text && !d->document_id)
        lsp_document_change(self, uri, text, len, d->version + 1);
    lsp_server *s = doc_server(self, d);
    if (s && s->status == LSP_READY)
        send_did_save(s, d);
    return 0;
}

int lsp_document_close(lsp_service *self, const char *uri)
{
    lsp_doc *d = doc_find(self, uri);
    if (d && !d->document_id) {
        lsp_server *s = doc_server(self, d);
        if (s && s->status == LSP_READY)
            send_did_close(s, uri);
        doc_remove(self, d);
    }
    diag_clear(self, uri);
    return 0;
}

/* ----- following the document service ------------------------------------------------------------ */

static void on_doc_open(void *ctx, const document_info *info)
{
    lsp_service *self = ctx;
    lsp_server_config config;
    if (!info->language_id || !lsp_config_get(self, info->language_id, &config))
        return;
    lsp_doc *old = doc_find(self, info->uri);
    if (old && !old->document_id) {
        lsp_server *s = doc_server(self, old);
        if (s && s->status == LSP_READY)
            send_did_close(s, old->uri);
        doc_remove(self, old);
    }
    lsp_doc *d = doc_add(self, info->uri, info->language_id, info->document_id);
    d->version = (int64_t)info->version;
    lsp_server *s = server_find(self, d->language_id);
    if (s && s->status == LSP_READY)
        send_did_open(s, d);
}

static void on_doc_change(void *ctx, const document_change_event *event)
{
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, event->document_id);
    if (!d)
        return;
    d->version = (int64_t)event->version;
    lsp_server *s = server_find(self, d->language_id);
    if (!s || s->status != LSP_READY)
        return;
    if (s->sync_kind == 0)
        return;
    if (s->sync_kind == 1) {
        send_full_change(s, d);
        return;
    }
    buf params;
    buf_init(&params);
    json_writer w;
    jw_init(&w, &params);
    jw_object_begin(&w);
    jw_key(&w, "textDocument");
    jw_object_begin(&w);
    jw_key_string(&w, "uri", d->uri);
    jw_key_int(&w, "version", d->version);
    jw_object_end(&w);
    jw_key(&w, "contentChanges");
    jw_array_begin(&w);
    for (size_t i = 0; i < event->count; i++) {
        const document_change *c = &event->changes[i];
        jw_object_begin(&w);
        jw_key(&w, "range");
        jw_object_begin(&w);
        jw_key(&w, "start");
        jw_object_begin(&w);
        jw_key_int(&w, "line", (int64_t)c->start.line);
        jw_key_int(&w, "character", (int64_t)c->start.column[s->enc]);
        jw_object_end(&w);
        jw_key(&w, "end");
        jw_object_begin(&w);
        jw_key_int(&w, "line", (int64_t)c->end.line);
        jw_key_int(&w, "character", (int64_t)c->end.column[s->enc]);
        jw_object_end(&w);
        jw_object_end(&w);
        jw_key_int(&w, "rangeLength", (int64_t)c->range_length[s->enc]);
        jw_key_string_n(&w, "text", c->text, c->text_len);
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_object_end(&w);
    server_notify(s, "textDocument/didChange", params.data, params.len);
    buf_free(&params);
}

static void on_doc_save(void *ctx, const char *document_id, const char *uri, uint64_t version)
{
    (void)version;
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, document_id);
    if (!d)
        return;
    lsp_server *s = server_find(self, d->language_id);
    bool ready = s && s->status == LSP_READY;
    if (uri && strcmp(uri, d->uri) != 0) {
        /* saved under another name: the server sees the old one close and the new one open */
        if (ready)
            send_did_close(s, d->uri);
        diag_clear(self, d->uri);
        free(d->uri);
        d->uri = xstrdup(uri);
        if (ready)
            send_did_open(s, d);
    }
    if (ready)
        send_did_save(s, d);
}

static void on_doc_close(void *ctx, const char *document_id, const char *uri)
{
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, document_id);
    if (!d)
        return;
    lsp_server *s = server_find(self, d->language_id);
    if (s && s->status == LSP_READY)
        send_did_close(s, d->uri);
    diag_clear(self, uri);
    doc_remove(self, d);
}

static const document_listener doc_listener = {
    .on_open = on_doc_open, .on_change = on_doc_change, .on_save = on_doc_save, .on_close = on_doc_close,
};

/* ----- workspace trust ----------------------------------------------------------------------------- */

/* Trust withdrawn from a folder (and the folders beneath it) stops the servers
 * rooted there, as lsp_server_stop does; each root is asked again, so one
 * that an ancestor's trust still covers keeps its server. Trusting starts
 * nothing: clients start servers. */
static void on_trust(void *ctx, const char *path, bool trusted)
{
    lsp_service *self = ctx;
    (void)path;
    if (trusted)
        return;
    size_t count = 0;
    for (lsp_server *s = self->servers; s; s = s->next)
        count++;
    char **untrusted = xcalloc(count + 1, sizeof *untrusted);
    size_t n = 0;
    for (lsp_server *s = self->servers; s; s = s->next) {
        ecp_error err = {0};
        if (root_trust_check(self, s->root_uri, &err) != 0) {
            ecp_log(self->log, ECP_LOG_INFO, "lsp %s: stopping: %s", s->language_id, err.message);
            untrusted[n++] = xstrdup(s->language_id);
        }
    }
    for (size_t i = 0; i < n; i++) {
        lsp_server_stop(self, untrusted[i]);
        free(untrusted[i]);
    }
    free(untrusted);
}

static const session_listener trust_listener = {.on_trust = on_trust};

/* ----- lifetime ------------------------------------------------------------------------------------- */

lsp_service *lsp_service_new(const lsp_service_options *o)
{
    lsp_service *self = xcalloc(1, sizeof *self);
    self->loop = o->loop;
    self->log = o->log;
    self->documents = o->documents;
    self->session = o->session;
    self->workspace = o->workspace ? xstrdup(o->workspace) : NULL;
    self->extra_path = xstrdup(o->extra_path ? o->extra_path : ECPD_LSP_EXTRA_PATH);
    self->timeout_ms = o->timeout_ms;
    self->max_message = o->max_message ? o->max_message : (size_t)64 << 20;
    if (self->documents) {
        document_subscribe(self->documents, &doc_listener, self);
        document_list(self->documents, on_doc_open, self); /* those open before us */
    }
    if (self->session)
        session_subscribe(self->session, &trust_listener, self);
    return self;
}

void lsp_service_free(lsp_service *self)
{
    if (!self)
        return;
    if (self->session)
        session_unsubscribe(self->session, &trust_listener, self);
    if (self->documents) {
        document_unsubscribe(self->documents, &doc_listener, self);
        document_service_set_encodings(self->documents, self, 0);
    }
    while (self->servers) {
        lsp_server *s = self->servers;
        self->servers = s->next;
        server_end(s, true);
        server_free(s);
    }
    /* stopped servers still in their grace period go now as well */
    for (lsp_proc *p = self->procs; p; p = p->next) {
        p->svc = NULL;
        p->log = NULL;
        if (!p->exited)
            uv_process_kill(&p->process, SIGKILL);
        p->exited = true;
        proc_close(p);
    }
    self->procs = NULL;
    while (self->docs)
        doc_remove(self, self->docs);
    while (self->diags)
        diag_unlink(&self->diags);
    while (self->configs) {
        lsp_custom_config *c = self->configs;
        self->configs = c->next;
        custom_config_clear(c);
        free(c->language_id);
        free(c);
    }
    ecp_listeners_free(&self->listeners);
    free(self->workspace);
    free(self->extra_path);
    free(self);
}
