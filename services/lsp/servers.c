/* The lsp service's servers: their configuration, how a program is found,
 * starting (initialize and capabilities), crashing and restarting, stopping,
 * workspace trust, and the service's own lifetime. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "session/interface.h"
#include "share_dir.h"
#include "uri.h"

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

/* What a language's default runs when its own command is not found and this one is. */
static const default_config fallback_configs[] = {
    {"python", "pyright-langserver", args_stdio},
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

static bool resolve_command(lsp_service *self, const char *command, buf *out);

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

static void custom_config_clear(lsp_custom_config *c)
{
    free_strv(c->args);
    free_strv(c->env);
    free_each(c->command, c->init_options, c->settings);
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
            buf found = BUF_INIT;
            for (size_t j = 0; j < sizeof fallback_configs / sizeof fallback_configs[0]; j++)
                if (strcmp(fallback_configs[j].language_id, language_id) == 0 &&
                    !resolve_command(self, out->command, &found) &&
                    resolve_command(self, fallback_configs[j].command, &found)) {
                    out->command = fallback_configs[j].command;
                    out->args = fallback_configs[j].args;
                }
            buf_free(&found);
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
    char *found = ecp_process_find_program(command, dirs.data);
    buf_free(&dirs);
    if (found)
        buf_append_str(out, found);
    free(found);
    return found != NULL;
}

bool lsp_command_find(lsp_service *self, const char *command, buf *out) { return resolve_command(self, command, out); }

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
char *lsp_absolute_path_var(void)
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

void lsp_server_info_fill(const lsp_server *s, lsp_server_info *out)
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
    lsp_server_info_fill(s, &info);
    ECP_EMIT(&s->svc->listeners, lsp_listener, on_status, &info);
}

void lsp_server_ready(lsp_server *s, const json_doc *doc, json_ref result)
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

    lsp_server_initialized(s);
    uv_timer_stop(s->timer);
    s->status = LSP_READY;
    s->was_ready = true;
    report_encodings(s->svc); /* before the documents go out: their next change is in its encoding */
    for (lsp_doc *d = s->svc->docs; d; d = d->next)
        if (strcmp(d->language_id, s->language_id) == 0)
            lsp_send_did_open(s, d);
    lsp_server_open_gate(s); /* what was sent while it started goes after the documents */
    ecp_log(s->svc->log, ECP_LOG_INFO, "lsp %s: ready (%s positions)", s->language_id, ecp_encoding_name(s->enc));
    server_set_status(s, LSP_READY, NULL);
    lsp_finish_starters(s, 0, NULL);
}
void lsp_server_notification_in(lsp_server *s, const json_doc *doc, json_ref method, json_ref params)
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
            lsp_diag_publish(svc, s, uri, doc, diags);
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
    unsigned ms = lsp_request_timeout_ms(s);
    return ms > LSP_MIN_INITIALIZE_TIMEOUT_MS ? ms : LSP_MIN_INITIALIZE_TIMEOUT_MS;
}

static void initialize_timeout(uv_timer_t *t)
{
    lsp_server *s = t->data;
    char why[128];
    snprintf(why, sizeof why, "the server did not answer initialize within %u ms", initialize_timeout_ms(s));
    ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: %s", s->language_id, why);
    lsp_server_proc_gone(s, why);
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

int lsp_trust_check(lsp_service *self, const char *root_uri, ecp_error *err)
{
    return root_trust_check(self, root_uri, err);
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
    s->proc = lsp_proc_spawn(s, file.data, &config, err);
    buf_free(&file);
    if (!s->proc)
        return ECP_EIO;
    s->status = LSP_STARTING;
    s->sync_kind = 0;
    buf params;
    buf_init(&params);
    write_initialize(s, &config, &params);
    lsp_server_initialize(s, params.data);
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

void lsp_server_proc_gone(lsp_server *s, const char *why)
{
    uv_timer_stop(s->timer);
    lsp_proc *p = s->proc;
    s->proc = NULL;
    bool was_starting = s->status == LSP_STARTING;
    lsp_fail_pending(s, ECP_EIO, why); /* while their process can still forget them */
    lsp_proc_release(p, true);
    server_set_status(s, LSP_ERROR, why);
    lsp_diag_clear_server(s->svc, s->language_id);
    if (was_starting)
        lsp_finish_starters(s, ECP_EIO, why);
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
    lsp_fail_pending(s, ECP_ECANCELED, "was stopped");
    lsp_finish_starters(s, ECP_ECANCELED, "The server was stopped");
    lsp_proc *p = s->proc;
    s->proc = NULL;
    lsp_proc_stop(p, at_teardown);
}

static void server_free(lsp_server *s)
{
    free(s->language_id);
    free(s->root_uri);
    free(s->error);
    free(s->capabilities);
    free(s);
}

static lsp_server *server_new(lsp_service *self, const char *language_id, const char *root_uri)
{
    lsp_server *s = xcalloc(1, sizeof *s);
    s->svc = self;
    s->language_id = xstrdup(language_id);
    s->root_uri = root_uri ? xstrdup(root_uri) : NULL;
    s->enc = ECP_ENCODING_UTF16;
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

char *lsp_served_root(lsp_service *self) { return workspace_uri(self); }

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
    lsp_server *s = lsp_server_find(self, language_id);
    char *served = root_uri || s ? NULL : workspace_uri(self);
    int trust = root_trust_check(self, root_uri ? root_uri : s ? s->root_uri : served, &err);
    free(served);
    if (trust != 0) {
        ecp_log(self->log, ECP_LOG_INFO, "lsp %s: %s", language_id, err.message);
        cb(ctx, trust, &err, &info);
        return;
    }
    if (s && s->status == LSP_READY) {
        lsp_server_info_fill(s, &info);
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
            lsp_server_info_fill(s, &info);
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
        lsp_diag_clear_server(self, s->language_id);
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
    lsp_server *s = lsp_server_find(self, language_id);
    if (s) {
        lsp_server_info_fill(s, out);
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
        lsp_server_info_fill(s, &info);
        fn(ctx, &info);
    }
}

ecp_position_encoding lsp_server_encoding(lsp_service *self, const char *language_id)
{
    lsp_server *s = lsp_server_find(self, language_id);
    return s ? s->enc : ECP_ENCODING_UTF16;
}

/* ----- workspace trust ----------------------------------------------------------------------------- */

/* Trust withdrawn from a folder (and the folders beneath it) stops the servers
 * rooted there, as lsp_server_stop does; each root is asked again, so one
 * that an ancestor's trust still covers keeps its server. Trusting starts
 * the servers of the open documents (autostart.c). */
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
    self->docs_by_uri = ecp_map_new();
    self->docs_by_id = ecp_map_new();
    self->diags = ecp_map_new();
    self->documents = o->documents;
    self->session = o->session;
    self->workspace = o->workspace ? xstrdup(o->workspace) : NULL;
    /* installed: language servers installed with npm under <prefix>/share/ecpd/node; from the build tree:
     * the checkout's third_party/node */
    self->extra_path = o->extra_path ? xstrdup(o->extra_path)
                                     : ecp_share_path("node/node_modules/.bin", ECPD_LSP_EXTRA_PATH);
    self->timeout_ms = o->timeout_ms;
    self->max_message = o->max_message ? o->max_message : (size_t)64 << 20;
    if (o->pool)
        self->jobs = ecp_job_set_new(o->pool);
    if (self->documents) {
        lsp_documents_follow(self);
    }
    if (self->session)
        session_subscribe(self->session, &trust_listener, self);
    lsp_autostart_init(self);
    return self;
}

void lsp_service_free(lsp_service *self)
{
    if (!self)
        return;
    lsp_autostart_free(self);
    if (self->session)
        session_unsubscribe(self->session, &trust_listener, self);
    if (self->documents) {
        lsp_documents_unfollow(self);
        document_service_set_encodings(self->documents, self, 0);
    }
    if (self->jobs) {
        /* what was not made is never sent: the servers hear their shutdown now */
        ecp_job_set_close(self->jobs);
        for (lsp_server *s = self->servers; s; s = s->next)
            if (s->proc)
                lsp_proc_drop_held(s->proc);
    }
    while (self->servers) {
        lsp_server *s = self->servers;
        self->servers = s->next;
        server_end(s, true);
        server_free(s);
    }
    /* stopped servers still in their grace period go now as well */
    lsp_procs_end(self);
    while (self->docs)
        lsp_doc_remove(self, self->docs);
    ecp_map_free(self->docs_by_uri);
    ecp_map_free(self->docs_by_id);
    lsp_diag_free_all(self);
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
