/* The methods the server answers itself: the lifecycle of ecp.md section 3
 * (initialize, initialized, shutdown, exit), introspection (ecp/methods,
 * ecp/ping) and per-connection subscriptions (the notifications namespace). */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "uri.h"

static connection *caller(server *self, ecp_call *call) { return server__connection_by_id(self, ecp_call_client(call)); }

/* ----- processId ------------------------------------------------------------
 *
 * A pidfd becomes readable when its process ends: the loop learns of it at
 * once and nothing polls. */

typedef struct pid_watch {
    uv_poll_t poll;
    server *srv;
    uint64_t client;           /* the connection that named the process */
    int pid, fd;
    struct pid_watch *prev, *next;
} pid_watch;

static void watch_closed(uv_handle_t *handle)
{
    pid_watch *w = handle->data;
    server *srv = w->srv;
    close(w->fd);
    free(w);
    server__handle_released(srv);
}

static void watch_end(pid_watch *w)
{
    server *srv = w->srv;
    if (w->prev)
        w->prev->next = w->next;
    else
        srv->pid_watches = w->next;
    if (w->next)
        w->next->prev = w->prev;
    srv->closing_handles++;
    uv_close((uv_handle_t *)&w->poll, watch_closed);
}

/* The process is gone: a shared server loses that client, a private one has
 * lost its only client and ends. */
static void process_gone(server *self, uint64_t client, int pid)
{
    ecp_log(&self->log, ECP_LOG_INFO, "client process %d is gone", pid);
    if (!self->shared) {
        server_request_exit(self, 0);
        return;
    }
    connection *conn = server__connection_by_id(self, client);
    if (conn)
        server__connection_drop(conn, "its process is gone");
}

static void on_process_exit(uv_poll_t *handle, int status, int events)
{
    (void)status, (void)events;
    pid_watch *w = handle->data;
    server *self = w->srv;
    uint64_t client = w->client;
    int pid = w->pid;
    watch_end(w);
    process_gone(self, client, pid);
}

void server__forget_client_processes(server *self, uint64_t client)
{
    for (pid_watch *w = self->pid_watches, *next; w; w = next) {
        next = w->next;
        if (w->client == client)
            watch_end(w);
    }
}

void server__forget_all_processes(server *self)
{
    while (self->pid_watches)
        watch_end(self->pid_watches);
}

static void watch_process(server *self, connection *conn, int pid)
{
    if (pid <= 0 || !conn || conn->watching_process)
        return;
    int fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (fd < 0) {
        if (errno == ESRCH)
            process_gone(self, conn->id, pid);
        else
            ecp_log(&self->log, ECP_LOG_WARN, "cannot watch process %d: %s", pid, strerror(errno));
        return;
    }
    pid_watch *w = xcalloc(1, sizeof *w);
    w->srv = self;
    w->client = conn->id;
    w->pid = pid;
    w->fd = fd;
    if (uv_poll_init(self->loop, &w->poll, fd) < 0) {
        ecp_log(&self->log, ECP_LOG_WARN, "cannot watch process %d", pid);
        close(fd);
        free(w);
        return;
    }
    w->poll.data = w;
    uv_unref((uv_handle_t *)&w->poll); /* the watch alone keeps nothing alive */
    uv_poll_start(&w->poll, UV_READABLE, on_process_exit);
    w->next = self->pid_watches;
    if (self->pid_watches)
        self->pid_watches->prev = w;
    self->pid_watches = w;
    conn->watching_process = true;
}

static void write_capabilities(server *self, json_writer *w)
{
    jw_object_begin(w);
    jw_key(w, "namespaces");
    jw_array_begin(w);
    for (size_t i = 0; i < self->router.count; i++) {
        const char *ns = self->router.adapters[i].ns;
        bool seen = !ns[0];
        for (size_t j = 0; j < i && !seen; j++)
            seen = strcmp(self->router.adapters[j].ns, ns) == 0;
        if (!seen)
            jw_string(w, ns);
    }
    jw_array_end(w);
    jw_key(w, "notifications");
    jw_array_begin(w);
    for (size_t i = 0; i < self->router.count; i++)
        for (const char *const *n = self->router.adapters[i].notifications; n && *n; n++)
            jw_string(w, *n);
    jw_array_end(w);
    jw_key_bool(w, "persistence", server_services_persistent(&self->services));
    jw_object_end(w);
}

/* The name other clients see: clientInfo's name, and its version after a
 * space, cut to CLIENT_NAME_MAX bytes at a character's start. */
#define CLIENT_NAME_MAX 256

static void remember_name(connection *conn, const json_doc *doc, json_ref client_info, arena *a)
{
    const char *name = NULL, *version = NULL;
    size_t name_len = 0, version_len = 0;
    if (client_info != JSON_NO_REF) {
        json_ref n = json_get(doc, client_info, "name"), v = json_get(doc, client_info, "version");
        if (n != JSON_NO_REF && json_type_of(doc, n) == JSON_STRING)
            json_string(doc, n, a, &name, &name_len);
        if (v != JSON_NO_REF && json_type_of(doc, v) == JSON_STRING)
            json_string(doc, v, a, &version, &version_len);
    }
    buf out = BUF_INIT;
    if (name)
        buf_append(&out, name, name_len);
    if (name && version && version_len)
        buf_append(&out, " ", 1), buf_append(&out, version, version_len);
    size_t len = out.len;
    if (len > CLIENT_NAME_MAX) {
        len = CLIENT_NAME_MAX;
        while (len > 0 && ((unsigned char)out.data[len] & 0xC0) == 0x80)
            len--;
    }
    free(conn->name);
    conn->name = xstrndup(out.data ? out.data : "", len);
    buf_free(&out);
}

static void handle_initialize(void *ctx, ecp_call *call)
{
    server *self = ctx;
    json_ref params = ecp_call_params(call);
    const json_doc *doc = ecp_call_doc(call);
    int64_t pid;
    ecp_str root;
    json_ref caps, client_info, folders, encodings = JSON_NO_REF;
    if (!ecp_arg_int_opt(call, params, "processId", 0, &pid) || !ecp_arg_string_opt(call, params, "workspaceRoot", &root) ||
        !ecp_arg_object_opt(call, params, "clientInfo", &client_info) || !ecp_arg_object_opt(call, params, "capabilities", &caps) ||
        !ecp_arg_array_opt(call, params, "workspaceFolders", &folders) ||
        (caps != JSON_NO_REF && !ecp_arg_array_opt(call, caps, "capabilities.positionEncodings", &encodings)))
        return;
    /* An ECA (or LSP-style) client names its project as workspaceFolders: the
     * first one's uri stands for workspaceRoot when that is absent. */
    json_ref first_folder = folders != JSON_NO_REF ? json_first(doc, folders) : JSON_NO_REF;
    json_ref folder_uri = first_folder != JSON_NO_REF && json_type_of(doc, first_folder) == JSON_OBJECT
                              ? json_get(doc, first_folder, "uri")
                              : JSON_NO_REF;
    if (!root.ptr && folder_uri != JSON_NO_REF && json_type_of(doc, folder_uri) == JSON_STRING)
        json_string(doc, folder_uri, ecp_call_arena(call), &root.ptr, &root.len);

    /* The client lists encodings in order of preference; take the first we know. */
    ecp_position_encoding enc = ECP_ENCODING_UTF16;
    for (json_ref e = json_first(doc, encodings); e != JSON_NO_REF; e = json_next(doc, e)) {
        const char *name;
        if (json_string(doc, e, ecp_call_arena(call), &name, NULL) && ecp_encoding_parse(name, &enc))
            break;
    }
    connection *conn = caller(self, call);
    if (conn)
        remember_name(conn, doc, client_info, ecp_call_arena(call));
    if (conn && conn->encoding != enc) {
        conn->encoding = enc;
        server__client_encodings_changed(self);
    }
    if (root.ptr && self->shared) {
        ecp_log(&self->log, ECP_LOG_INFO, "%s: workspaceRoot ignored: a shared server keeps its workspace",
                conn ? conn->label : "a client");
    } else if (root.ptr) {
        buf path = BUF_INIT;
        if (uri_to_path(root.ptr, root.len, &path, NULL) == 0) {
            free(self->workspace);
            self->workspace = buf_detach(&path);
            server_services_set_workspace(&self->services, self->workspace);
        }
        buf_free(&path);
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_string(w, "protocolVersion", ECPD_PROTOCOL_VERSION);
    jw_key(w, "serverInfo");
    jw_object_begin(w);
    jw_key_string(w, "name", "ecpd");
    jw_key_string(w, "version", ECPD_VERSION);
    jw_object_end(w);
    jw_key_string(w, "positionEncoding", ecp_encoding_name(enc));
    jw_key_int(w, "clientId", (int64_t)ecp_call_client(call));
    /* A client of a shared server learns here which folder it shares (its own
     * workspaceRoot is ignored there). */
    if (self->workspace) {
        buf uri = BUF_INIT;
        uri_from_path(&uri, self->workspace, strlen(self->workspace));
        jw_key_string(w, "workspaceRoot", self->workspace);
        jw_key_string(w, "workspaceUri", uri.data);
        buf_free(&uri);
    } else {
        jw_key_null(w, "workspaceRoot");
        jw_key_null(w, "workspaceUri");
    }
    jw_key(w, "capabilities");
    write_capabilities(self, w);
    jw_object_end(w);
    ecp_call_finish(call);
    /* the others learn of it once, after it has its own id */
    if (conn && !conn->initialized) {
        conn->initialized = true;
        server__announce_client(self, conn, "client/didConnect");
    }
    /* after the answer: a process already gone may close the connection */
    watch_process(self, conn, (int)pid);
}

static void handle_initialized(void *ctx, ecp_call *call) { ecp_call_reply_null(call); }

static void handle_shutdown(void *ctx, ecp_call *call)
{
    server *self = ctx;
    connection *conn = caller(self, call);
    if (conn)
        conn->shutting_down = true;
    if (!self->shared)
        self->shutting_down = true;
    ecp_call_reply_null(call);
}

/* On a shared server a client's exit ends its own session only: the server
 * is everyone's, and ecp/stop (or a signal) ends it. */
static void handle_exit(void *ctx, ecp_call *call)
{
    server *self = ctx;
    connection *conn = caller(self, call);
    ecp_call_reply_null(call);
    if (self->shared) {
        if (conn)
            server__connection_finish(conn);
        return;
    }
    server_request_exit(self, self->shutting_down ? 0 : 1);
}

static void handle_whoami(void *ctx, ecp_call *call)
{
    connection *conn = caller(ctx, call);
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_int(w, "clientId", (int64_t)ecp_call_client(call));
    jw_key_string(w, "name", conn && conn->name ? conn->name : "");
    jw_object_end(w);
    ecp_call_finish(call);
}

static void handle_stop(void *ctx, ecp_call *call)
{
    server *self = ctx;
    connection *conn = caller(self, call);
    ecp_log(&self->log, ECP_LOG_INFO, "ecp/stop from %s", conn ? conn->label : "a client");
    ecp_call_reply_null(call);
    server_request_exit(self, 0);
}

static void handle_methods(void *ctx, ecp_call *call)
{
    server *self = ctx;
    ecp_str ns;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "namespace", &ns))
        return;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "methods");
    jw_array_begin(w);
    for (size_t i = 0; i < self->router.count; i++) {
        const ecp_adapter *a = &self->router.adapters[i];
        if (ns.ptr && strcmp(a->ns, ns.ptr) != 0)
            continue;
        for (size_t m = 0; m < a->method_count; m++) {
            jw_object_begin(w);
            jw_key_string(w, "name", a->methods[m].name);
            jw_key_string(w, "since", a->methods[m].since ? a->methods[m].since : ECPD_PROTOCOL_VERSION);
            jw_key_string(w, "summary", a->methods[m].summary);
            jw_key_string(w, "params", a->methods[m].params);
            jw_object_end(w);
        }
    }
    jw_array_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void handle_ping(void *ctx, ecp_call *call)
{
    json_ref params = ecp_call_params(call);
    if (params == JSON_NO_REF) {
        ecp_call_reply_null(call);
        return;
    }
    json_write_value(ecp_call_result(call), ecp_call_doc(call), params);
    ecp_call_finish(call);
}

/* Reads `events` as strings; answers -32602 and returns false when it is not
 * a non-empty array of strings. */
static bool read_events(ecp_call *call, const char ***out, size_t *count)
{
    json_ref events;
    if (!ecp_arg_array(call, ecp_call_params(call), "events", &events))
        return false;
    const json_doc *doc = ecp_call_doc(call);
    size_t n = json_length(doc, events), i = 0;
    const char **names = arena_alloc(ecp_call_arena(call), (n ? n : 1) * sizeof *names);
    for (json_ref e = json_first(doc, events); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        if (!json_string(doc, e, ecp_call_arena(call), &names[i], NULL) || !names[i][0]) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "events[%zu]: expected a non-empty string", i);
            return false;
        }
    }
    *out = names;
    *count = n;
    return true;
}

static bool list_has(const subscription_list *l, const char *s)
{
    for (size_t i = 0; i < l->count; i++)
        if (strcmp(l->items[i], s) == 0)
            return true;
    return false;
}

static void list_add(subscription_list *l, const char *s)
{
    if (list_has(l, s))
        return;
    l->items = xrealloc(l->items, (l->count + 1) * sizeof *l->items);
    l->items[l->count++] = xstrdup(s);
}

static void list_remove(subscription_list *l, const char *s)
{
    for (size_t i = 0; i < l->count; i++) {
        if (strcmp(l->items[i], s) == 0) {
            free(l->items[i]);
            l->items[i] = l->items[--l->count];
            return;
        }
    }
}

static void reply_names(ecp_call *call, const char *key, const char **names, size_t count)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++)
        jw_string(w, names[i]);
    jw_array_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

/* A connection that never subscribes receives everything; the first
 * subscribe narrows it to what it names. */
static void handle_subscribe(void *ctx, ecp_call *call)
{
    const char **names;
    size_t count;
    if (!read_events(call, &names, &count))
        return;
    connection *conn = caller(ctx, call);
    if (conn) {
        conn->filtered = true;
        for (size_t i = 0; i < count; i++) {
            list_add(&conn->subscribed, names[i]);
            list_remove(&conn->excluded, names[i]);
        }
    }
    reply_names(call, "subscribed", names, count);
}

/* Unsubscribing drops a subscription, and for a connection that receives
 * everything, excludes the name from then on. */
static void handle_unsubscribe(void *ctx, ecp_call *call)
{
    const char **names;
    size_t count;
    if (!read_events(call, &names, &count))
        return;
    connection *conn = caller(ctx, call);
    if (conn) {
        for (size_t i = 0; i < count; i++) {
            list_remove(&conn->subscribed, names[i]);
            if (!conn->filtered)
                list_add(&conn->excluded, names[i]);
        }
    }
    reply_names(call, "unsubscribed", names, count);
}

static const ecp_method lifecycle_methods[] = {
    {"initialize", handle_initialize, "1.0",
     "Optional: pick the position encoding (the client's first that the server knows, else utf-16) "
     "and learn the server's namespaces and notifications",
     "{processId?: integer, workspaceRoot?: string, workspaceFolders?: {uri?: string}[], clientInfo?: object, "
     "capabilities?: {positionEncodings?: string[]}}"},
    {"initialized", handle_initialized, "1.0",
     "The client is ready; nothing to do (answered with null when sent as a request)",
     "{}"},
    {"shutdown", handle_shutdown, "1.0",
     "Prepare to exit: every later request is refused with -32002",
     "{}"},
    {"exit", handle_exit, "1.0",
     "End the process: code 0 after shutdown, 1 without it",
     "{}"},
};

static const ecp_method ecp_methods[] = {
    {"ecp/methods", handle_methods, "1.0",
     "Every method this server routes, with its summary and params, optionally of one namespace",
     "{namespace?: string}"},
    {"ecp/ping", handle_ping, "1.0",
     "Echo params back (null without them): a latency probe",
     "any"},
    {"ecp/stop", handle_stop, "1.0",
     "Stop the server for every client (a shared server's exit ends only the caller's session)",
     "{}"},
    {"ecp/whoami", handle_whoami, "1.0",
     "This connection's clientId (the one initialize answered) and the name it gave in clientInfo",
     "{}"},
};

static const ecp_method notification_methods[] = {
    {"notifications/subscribe", handle_subscribe, "1.0",
     "Receive only the notifications named (exact, \"ns/*\" or \"*\"); without it a connection receives all",
     "{events: string[]}"},
    {"notifications/unsubscribe", handle_unsubscribe, "1.0",
     "Stop receiving the notifications named",
     "{events: string[]}"},
};

static const char *const client_notifications[] = {"client/didConnect", "client/didDisconnect", NULL};

#define COUNT(table) (sizeof table / sizeof table[0])

int server__lifecycle_register(server *self, ecp_error *err)
{
    const ecp_adapter adapters[] = {
        {.ns = "", .methods = lifecycle_methods, .method_count = COUNT(lifecycle_methods), .ctx = self,
         .notifications = client_notifications},
        {.ns = "ecp", .methods = ecp_methods, .method_count = COUNT(ecp_methods), .ctx = self},
        {.ns = "notifications", .methods = notification_methods, .method_count = COUNT(notification_methods),
         .ctx = self},
    };
    for (size_t i = 0; i < COUNT(adapters); i++) {
        int status = server__router_register(&self->router, &adapters[i], err);
        if (status < 0)
            return status;
    }
    return 0;
}
