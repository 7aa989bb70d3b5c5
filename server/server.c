/* The server object: creation and teardown, the notification bus, and the
 * ways the process comes to an end. */
#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "socket_path.h"

/* ----- notification bus ------------------------------------------------------ */

/* Renders a notification once per position encoding in use and queues it on
 * every connection that wants it. Being synchronous is what puts a request's
 * notifications ahead of its response on every connection. */
static void notify_where(server *self, uint64_t client_id, uint64_t except, const char *method, ecp_render_fn render,
                         void *ctx)
{
    /* The server's buffers are reused from one notification to the next (a
     * notification rendered while one is being sent gets its own). */
    buf local[3] = {BUF_INIT, BUF_INIT, BUF_INIT};
    jw_splices local_spliced[3] = {{0}};
    buf *rendered = self->notifying ? local : self->rendered;
    jw_splices *spliced = self->notifying ? local_spliced : self->spliced;
    bool made[3] = {false, false, false};
    self->notifying++;
    for (int i = 0; i < 3; i++)
        buf_clear(&rendered[i]);
    for (connection *conn = self->connections; conn; conn = conn->next) {
        if (conn->closing || (client_id && conn->id != client_id) || (except && conn->id == except) ||
            !server__connection_wants(conn, method))
            continue;
        buf *msg = &rendered[conn->encoding];
        jw_splices *splices = &spliced[conn->encoding];
        if (!made[conn->encoding]) {
            made[conn->encoding] = true;
            json_writer w;
            jw_init(&w, msg);
            /* a big part of the message that caused this one (a huge
             * setContent's text) is quoted in place, not copied */
            jw_allow_splices(&w, splices);
            jw_object_begin(&w);
            jw_key_string(&w, "jsonrpc", "2.0");
            jw_key_string(&w, "method", method);
            jw_key(&w, "params");
            size_t before = msg->len;
            if (render)
                render(ctx, conn->encoding, &w);
            if (msg->len == before && !splices->count)
                jw_object_begin(&w), jw_object_end(&w);
            jw_object_end(&w);
            if (!splices->count && msg->len > CONNECTION_UNFRAMED_BYTES) {
                /* a big one is handed to the transports as it is, not
                 * copied into each one's write queue */
                size_t len = msg->len;
                ecp_shared *whole = ecp_shared_adopt(buf_detach(msg), len);
                jw_splices_add(splices, 0, ecp_shared_data(whole), len, whole);
                ecp_shared_unref(whole);
            }
        }
        /* (a message handed over whole is all splice: its buf holds nothing) */
        server__connection_notify(conn, method, msg->data ? msg->data : "", msg->len, splices);
    }
    self->notifying--;
    for (int i = 0; i < 3; i++) {
        jw_splices_clear(&spliced[i]); /* the transports hold what they still need */
        if (rendered == local || rendered[i].cap > ((size_t)64 << 10))
            buf_free(&rendered[i]); /* a big one is not kept */
        if (spliced == local_spliced)
            jw_splices_free(&spliced[i]);
    }
}

static void bus_notify(void *owner, uint64_t client_id, const char *method, ecp_render_fn render, void *ctx)
{
    notify_where(owner, client_id, 0, method, render, ctx);
}

static void render_client(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    (void)enc;
    const connection *conn = ctx;
    jw_object_begin(w);
    jw_key_int(w, "clientId", (int64_t)conn->id);
    jw_key_string(w, "name", conn->name ? conn->name : "");
    jw_object_end(w);
}

void server__announce_client(server *self, const connection *conn, const char *method)
{
    notify_where(self, 0, conn->id, method, render_client, (void *)conn);
}

static const char *bus_client_name(void *owner, uint64_t client_id)
{
    connection *conn = server__connection_by_id(owner, client_id);
    return conn ? (conn->name ? conn->name : "") : NULL;
}

void server__client_encodings_changed(server *self)
{
    unsigned mask = 0;
    for (connection *conn = self->connections; conn; conn = conn->next)
        if (!conn->closing) /* the bus sends nothing more to one that is */
            mask |= 1u << conn->encoding;
    server_services_client_encodings(&self->services, mask);
}

/* ----- flow control --------------------------------------------------------------- */

/* A connection is backed up from when its queue passes the pause bound until
 * it drains to half of it: exactly while it is paused. One that is closing
 * takes nothing more, so it holds nobody up. */
static bool bus_backed_up(void *owner, const char *method)
{
    server *self = owner;
    for (connection *conn = self->connections; conn; conn = conn->next)
        if (conn->paused && !conn->closing && server__connection_wants(conn, method))
            return true;
    return false;
}

/* Drops the clients that have held a waiting producer up for longer than
 * the stall timeout, unless only one client is connected (see
 * server_options.stall_timeout_ms). */
static void drop_stalled(server *self)
{
    if (self->connection_count < 2)
        return;
    uint64_t now = uv_now(self->loop);
    for (connection *conn = self->connections; conn; conn = conn->next) {
        if (!conn->paused || conn->closing || now - conn->paused_since < self->stall_timeout_ms)
            continue;
        for (drain_waiter *w = self->drain_waiters; w; w = w->next)
            if (server__connection_wants(conn, w->method)) {
                server__connection_drop(conn, "client has not read its output for too long while others wait");
                break;
            }
    }
}

/* How often a producer's wait is looked at while nothing drains: often
 * enough for the stall timeout, cheap enough to go unnoticed. */
#define DRAIN_RECHECK_MS 1000

static void on_drain_timer(uv_timer_t *timer)
{
    server *self = timer->data;
    drop_stalled(self);
    /* Take the drained waiters out first: a callback may register again or
     * cancel others, and must find the lists consistent. */
    drain_waiter **link = &self->drain_waiters;
    drain_waiter **firing_tail = &self->drain_firing;
    while (*firing_tail)
        firing_tail = &(*firing_tail)->next;
    while (*link) {
        drain_waiter *w = *link;
        if (bus_backed_up(self, w->method)) {
            link = &w->next;
            continue;
        }
        *link = w->next;
        w->next = NULL;
        *firing_tail = w;
        firing_tail = &w->next;
    }
    while (self->drain_firing) {
        drain_waiter *w = self->drain_firing;
        self->drain_firing = w->next;
        ecp_drained_fn fn = w->fn;
        void *ctx = w->ctx;
        free(w->method);
        free(w);
        fn(ctx);
    }
    if (self->drain_waiters && !self->freed)
        uv_timer_start(self->drain_timer, on_drain_timer, DRAIN_RECHECK_MS, 0);
}

static void schedule_drain_check(server *self)
{
    if (!self->drain_waiters || self->freed)
        return;
    if (!self->drain_timer) {
        self->drain_timer = xmalloc(sizeof *self->drain_timer);
        uv_timer_init(self->loop, self->drain_timer);
        self->drain_timer->data = self;
    }
    uv_timer_start(self->drain_timer, on_drain_timer, 0, 0); /* now, also when a recheck was due later */
}

void server__output_drained(server *self) { schedule_drain_check(self); }

static void cancel_all_waiters(server *self)
{
    drain_waiter *lists[2] = {self->drain_waiters, self->drain_firing};
    self->drain_waiters = self->drain_firing = NULL;
    for (int i = 0; i < 2; i++)
        for (drain_waiter *w = lists[i], *next; w; w = next) {
            next = w->next;
            free(w->method);
            free(w);
        }
}

static void bus_when_drained(void *owner, const char *method, ecp_drained_fn fn, void *ctx)
{
    server *self = owner;
    for (drain_waiter *w = self->drain_waiters; w; w = w->next)
        if (w->fn == fn && w->ctx == ctx && strcmp(w->method, method) == 0)
            return;
    drain_waiter *w = xcalloc(1, sizeof *w);
    w->method = xstrdup(method);
    w->fn = fn;
    w->ctx = ctx;
    w->next = self->drain_waiters;
    self->drain_waiters = w;
    schedule_drain_check(self); /* fires it at once if nobody is backed up, else starts the rechecks */
}

static void cancel_in(drain_waiter **link, ecp_drained_fn fn, void *ctx)
{
    while (*link) {
        drain_waiter *w = *link;
        if (w->fn == fn && w->ctx == ctx) {
            *link = w->next;
            free(w->method);
            free(w);
        } else {
            link = &w->next;
        }
    }
}

static void bus_cancel_when_drained(void *owner, ecp_drained_fn fn, void *ctx)
{
    server *self = owner;
    cancel_in(&self->drain_waiters, fn, ctx);
    cancel_in(&self->drain_firing, fn, ctx);
}

connection *server__connection_by_id(server *self, uint64_t id)
{
    for (connection *conn = self->connections; conn; conn = conn->next)
        if (conn->id == id)
            return conn;
    return NULL;
}

/* ----- data directory -------------------------------------------------------- */

/* Creates dir and its missing parents; the last component gets mode. */
static int make_dirs(const char *dir, mode_t mode, ecp_error *err)
{
    char *path = xstrdup(dir);
    int status = 0;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0755) < 0 && errno != EEXIST) {
            status = ecp_error_errno(err, errno, path);
            goto done;
        }
        *p = '/';
    }
    if (mkdir(path, mode) < 0 && errno != EEXIST) {
        status = ecp_error_errno(err, errno, path);
        goto done;
    }
    struct stat st;
    if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
        status = ecp_error_set(err, ECP_ENOTDIR, "data directory %s is not a directory", path);
done:
    free(path);
    return status;
}

/* The fallback under /tmp lives in a directory anyone could have made first:
 * it must be private and ours before anything is put in it. */
static char *default_data_dir(ecp_error *err)
{
    const char *xdg = getenv("XDG_DATA_HOME");
    buf dir = BUF_INIT;
    if (xdg && xdg[0] == '/') {
        buf_appendf(&dir, "%s/ecpd", xdg);
    } else if (getenv("HOME") && getenv("HOME")[0] == '/') {
        buf_appendf(&dir, "%s/.local/share/ecpd", getenv("HOME"));
    } else {
        buf_appendf(&dir, "/tmp/ecpd-%u", (unsigned)getuid());
        if (ecp_private_dir(dir.data, err) < 0) {
            buf_free(&dir);
            return NULL;
        }
        buf_appendf(&dir, "/data");
    }
    return buf_detach(&dir);
}

/* ----- lifetime ---------------------------------------------------------------- */

static void on_input_timer(uv_timer_t *timer) { server__connections_check_input(timer->data); }

static void server_release(server *self)
{
    free(self->workspace);
    free(self->data_dir);
    free(self->config_path);
    for (int i = 0; i < 3; i++) {
        buf_free(&self->rendered[i]);
        jw_splices_free(&self->spliced[i]);
    }
    free(self);
}

server *server_new(uv_loop_t *loop, const server_options *options, ecp_error *err)
{
    server *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->log.out = options->log_out ? options->log_out : stderr;
    self->log.level = options->log_level;
    self->max_message = options->max_message_bytes ? options->max_message_bytes : ECPD_DEFAULT_MAX_MESSAGE;
    self->shared = options->shared;
    self->max_connections = options->max_connections; /* 0: the server.maxConnections setting decides */
    self->stall_timeout_ms = options->stall_timeout_ms ? options->stall_timeout_ms : ECPD_DEFAULT_STALL_TIMEOUT_MS;
    self->max_input =
        options->max_input_bytes ? options->max_input_bytes : xsize_add(self->max_message, self->max_message);
    /* One client on stdio owns the server: it may take its time to speak. */
    if (self->shared)
        self->input_timeout_ms = options->input_timeout_ms ? options->input_timeout_ms : ECPD_DEFAULT_INPUT_TIMEOUT_MS;
    self->workspace = options->workspace ? xstrdup(options->workspace) : NULL;
    self->data_dir = options->data_dir ? xstrdup(options->data_dir) : default_data_dir(err);
    self->config_path = options->config_path ? xstrdup(options->config_path) : NULL;
    if (!self->data_dir || make_dirs(self->data_dir, 0700, err) < 0)
        goto fail;
    self->pool = ecp_pool_new(loop, &self->log);
    self->parse_jobs = ecp_job_set_new(self->pool);
    self->bus.notify = bus_notify;
    self->bus.owner = self;
    self->bus.backed_up = bus_backed_up;
    self->bus.when_drained = bus_when_drained;
    self->bus.cancel_when_drained = bus_cancel_when_drained;
    self->bus.client_name = bus_client_name;
    server__router_init(&self->router, &self->log);
    if (server__lifecycle_register(self, err) < 0)
        goto fail;
    /* A client's initialize replaces self->workspace, so the services get a
     * copy that lives only while they start (compose.h): one that kept it
     * would fail at once under ASan, not only after some initialize. */
    char *lent_workspace = self->workspace ? xstrdup(self->workspace) : NULL;
    server_env env = {
        .loop = loop, .log = &self->log, .pool = self->pool, .bus = &self->bus, .workspace = lent_workspace,
        .data_dir = self->data_dir, .config_path = self->config_path, .register_adapter = server__router_register,
        .router = &self->router, .trust_workspace = options->trust_workspace,
    };
    int status = server_services_start(&self->services, &env, err);
    free(lent_workspace);
    if (status < 0)
        goto fail;
    server__client_encodings_changed(self); /* none yet: no client reads any columns */
    if (self->input_timeout_ms) {
        self->input_timer = xmalloc(sizeof *self->input_timer);
        uv_timer_init(loop, self->input_timer);
        self->input_timer->data = self;
        /* a few looks per timeout: a connection goes at most a quarter late */
        uint64_t every = self->input_timeout_ms / 4;
        every = every < 50 ? 50 : every > 1000 ? 1000 : every;
        uv_timer_start(self->input_timer, on_input_timer, every, every);
        uv_unref((uv_handle_t *)self->input_timer); /* it watches connections; it keeps nothing alive */
    }
    return self;

fail:
    server__router_free(&self->router);
    server_services_stop(&self->services); /* after the adapters that refer to them */
    ecp_job_set_close(self->parse_jobs);
    ecp_pool_free(self->pool);
    server_release(self);
    return NULL;
}

void server__handle_released(server *self)
{
    if (--self->closing_handles == 0 && self->freed)
        server_release(self);
}

void server_free(server *self)
{
    /* Each connection belongs to the transport that opened it, which closes
     * it; one left open here would be closed twice. */
    assert(!self->connections && "a transport must close its connections before the server is freed");
    server__router_free(&self->router);
    server_services_stop(&self->services);
    /* Big messages still being parsed had connections, all closed by now:
     * nobody is left to dispatch them to. */
    ecp_job_set_close(self->parse_jobs);
    ecp_pool_free(self->pool);
    /* Producers release their waits in their teardown; what is left has
     * nobody to call. */
    self->freed = true;
    cancel_all_waiters(self);
    if (self->drain_timer)
        uv_close((uv_handle_t *)self->drain_timer, (uv_close_cb)free);
    if (self->input_timer)
        uv_close((uv_handle_t *)self->input_timer, (uv_close_cb)free);
    /* The watches point at the server: libuv still calls them after
     * uv_close(), until their close callbacks, and the last one frees it. */
    server__forget_all_processes(self);
    if (self->closing_handles == 0)
        server_release(self);
}

uv_loop_t *server_loop(server *self) { return self->loop; }

size_t server_connection_count(const server *self) { return self->connection_count; }

size_t server_connection_limit(const server *self)
{
    return self->max_connections ? self->max_connections
                                 : server_services_connection_limit(&self->services, ECPD_DEFAULT_MAX_CONNECTIONS);
}

ecp_bus *server_bus(server *self) { return &self->bus; }

int server_register_adapter(server *self, const ecp_adapter *adapter)
{
    return server__router_register(&self->router, adapter, NULL);
}

ecp_logger *server_logger(server *self) { return &self->log; }

void server_set_exit_hook(server *self, void (*hook)(void *ctx, int code), void *ctx)
{
    self->exit_hook = hook;
    self->exit_ctx = ctx;
}

void server_request_exit(server *self, int code)
{
    if (self->exit_requested)
        return;
    self->exit_requested = true;
    self->exit_code = code;
    ecp_log(&self->log, ECP_LOG_INFO, "exiting with code %d", code);
    if (self->exit_hook)
        self->exit_hook(self->exit_ctx, code);
}

bool server_exit_requested(const server *self, int *code)
{
    if (self->exit_requested && code)
        *code = self->exit_code;
    return self->exit_requested;
}
