#include "compose.h"
#include "internal.h"

#include <string.h>
#include <unistd.h>

#include "agent/adapter.h"
#include "agent/interface.h"
#include "database/adapter.h"
#include "database/interface.h"
#include "document/adapter.h"
#include "document/interface.h"
#include "file/adapter.h"
#include "file/interface.h"
#include "git/adapter.h"
#include "git/interface.h"
#include "lsp/adapter.h"
#include "lsp/interface.h"
#include "session/adapter.h"
#include "session/interface.h"
#include "store/interface.h"
#include "syntax/adapter.h"
#include "syntax/interface.h"
#include "terminal/adapter.h"
#include "terminal/interface.h"

/* The terminal.integrated.shell setting is the shell of new terminals. Its
 * default (the catalogue's: $SHELL, else /bin/zsh) may name a shell this
 * machine lacks; a shell that cannot be run falls through to $SHELL, then
 * /bin/sh, as if the setting were absent. */
static void apply_shell_setting(server_services *self)
{
    const char *shell = session_setting_string(self->session, "terminal.integrated.shell", NULL);
    terminal_service_set_shell(self->terminal, shell && access(shell, X_OK) == 0 ? shell : NULL);
}

/* A whole-number setting, or fallback when it is unset (the schema has
 * already checked its range). */
static size_t setting_count(const server_services *self, const char *key, size_t fallback)
{
    double v = session_setting_number(self->session, key, (double)fallback);
    return v >= 1 ? (size_t)v : fallback;
}

/* editor.undoHistoryLimit (steps) and editor.undoHistoryMaxBytes bound every
 * document's undo history; a change applies to the open documents at once. */
static void apply_undo_settings(server_services *self)
{
    document_service_set_undo_steps(self->document,
                                    setting_count(self, "editor.undoHistoryLimit", DOCUMENT_UNDO_MAX_STEPS));
    document_service_set_undo_limit(self->document,
                                    setting_count(self, "editor.undoHistoryMaxBytes", DOCUMENT_UNDO_MAX_BYTES));
}

static void setting_changed(void *ctx, const char *key, const char *value_json)
{
    (void)value_json;
    if (strcmp(key, "terminal.integrated.shell") == 0)
        apply_shell_setting(ctx);
    else if (strcmp(key, "editor.undoHistoryLimit") == 0 || strcmp(key, "editor.undoHistoryMaxBytes") == 0)
        apply_undo_settings(ctx);
}

static const session_listener settings_to_services = {.on_setting = setting_changed};

static void write_diagnostic(void *ctx, const lsp_diagnostic *diagnostic)
{
    jw_raw(ctx, diagnostic->json, diagnostic->json_len);
}

/* document/viewport's `diagnostics`: the language servers' diagnostics that
 * touch the visible lines, as LSP Diagnostic objects. */
static void write_viewport_diagnostics(void *ctx, const char *document_id, const char *uri, size_t first,
                                       size_t last, ecp_position_encoding enc, json_writer *w)
{
    (void)document_id;
    jw_array_begin(w);
    if (last > first)
        lsp_diagnostics_in_lines(ctx, uri, first, last - 1, enc, write_diagnostic, w);
    jw_array_end(w);
}

int server_services_start(server_services *self, const server_env *env, ecp_error *err)
{
    memset(self, 0, sizeof *self);
    ecp_adapter adapter;
    int status;

    /* Never fails for a bad database: it falls back to memory and says so. */
    store_options so = {.data_dir = env->data_dir};
    self->store = store_open(env->loop, env->log, &so, err);
    if (!self->store)
        return err ? err->status : ECP_ENOMEM;

    self->document = document_service_new(env->pool, env->log);
    if (!self->document)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the document service");
    document_service_set_workspace(self->document, env->workspace);
    ecp_adapter document_adapter; /* its ctx stays valid (the router's) for the viewport parts below */
    document_adapter_init(&document_adapter, self->document, env->bus);
    if ((status = env->register_adapter(env->router, &document_adapter, err)) < 0)
        return status;

    self->file = file_service_new(env->pool, env->log);
    if (!self->file)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the file service");
    file_adapter_init(&adapter, self->file, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;

    /* Open documents follow their files through the file service's watches. */
    document_service_follow_files(self->document, self->file);

    session_service_options o = {
        .pool = env->pool, .log = env->log, .store = self->store, .documents = self->document, .files = self->file,
        .workspace = env->workspace, .config_path = env->config_path, .data_dir = env->data_dir,
        .trust_workspace = env->trust_workspace,
    };
    self->session = session_service_new(&o, err);
    if (!self->session)
        return err ? err->status : ECP_ENOMEM;
    /* The file service reads settings files for the session service, so it
     * came first and follows its settings from here on. */
    file_service_follow_settings(self->file, self->session);
    ecp_adapter session_adapters[SESSION_ADAPTER_COUNT];
    session_adapter_init(session_adapters, self->session, self->document, env->bus);
    for (size_t i = 0; i < SESSION_ADAPTER_COUNT; i++)
        if ((status = env->register_adapter(env->router, &session_adapters[i], err)) < 0)
            return status;

    self->git = gitsvc_new(env->pool, env->log, self->file, self->document, self->session);
    if (!self->git)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the git service");
    git_adapter_init(&adapter, self->git, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;
    document_adapter_add_viewport_part(
        &document_adapter, &(document_viewport_part){"gitChanges", git_adapter_write_viewport_changes, self->git});

    terminal_service_options terminal_options = {.shell = NULL, .cwd = env->workspace};
    self->terminal = terminal_service_new(env->loop, env->log, &terminal_options);
    if (!self->terminal)
        return ecp_error_set(err, ECP_EIO, "could not create the terminal service: no SIGCHLD handler");
    apply_shell_setting(self);
    apply_undo_settings(self);
    session_subscribe(self->session, &settings_to_services, self);
    terminal_adapter_init(&adapter, self->terminal, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;

    database_service_options dbo = {
        .pool = env->pool, .log = env->log, .store = self->store, .session = self->session,
        .data_dir = env->data_dir, .workspace = env->workspace,
    };
    self->database = database_service_new(&dbo, err);
    if (!self->database)
        return err ? err->status : ECP_ENOMEM;
    database_adapter_init(&adapter, self->database);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;

    /* Language servers follow the open documents and read their settings. */
    lsp_service_options lo = {
        .loop = env->loop, .pool = env->pool, .log = env->log, .documents = self->document, .session = self->session,
        .workspace = env->workspace,
    };
    self->lsp = lsp_service_new(&lo);
    if (!self->lsp)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the lsp service");
    lsp_adapter_init(&adapter, self->lsp, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;
    document_adapter_add_viewport_part(&document_adapter,
                                       &(document_viewport_part){"diagnostics", write_viewport_diagnostics, self->lsp});

    /* Syntax follows documents and colours with the session's theme. */
    self->syntax = syntax_service_new(env->pool, env->log, self->document, self->session, NULL);
    if (!self->syntax)
        return ecp_error_set(err, ECP_ENOMEM, "could not create the syntax service");
    document_service_set_indent_provider(self->document, syntax_newline_indent, self->syntax);
    syntax_adapter_init(&adapter, self->syntax, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;
    document_adapter_add_viewport_part(&document_adapter,
                                       &(document_viewport_part){"tokens", syntax_adapter_write_viewport_tokens,
                                                                 self->syntax});

    agent_service_options ao = {
        .loop = env->loop, .log = env->log, .pool = env->pool, .store = self->store, .documents = self->document,
        .files = self->file, .session = self->session, .lsp = self->lsp, .git = self->git,
        .workspace = env->workspace,
    };
    self->agent = agent_service_new(&ao, err);
    if (!self->agent)
        return err ? err->status : ECP_ENOMEM;
    agent_adapter_init(&adapter, self->agent, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;
    agent_mcp_adapter_init(&adapter, self->agent, env->bus);
    if ((status = env->register_adapter(env->router, &adapter, err)) < 0)
        return status;
    return 0;
}

void server_services_stop(server_services *self)
{
    if (self->agent)
        agent_service_free(self->agent);
    if (self->syntax) {
        document_service_set_indent_provider(self->document, NULL, NULL);
        syntax_service_free(self->syntax);
    }
    if (self->lsp)
        lsp_service_free(self->lsp);
    if (self->database)
        database_service_free(self->database);
    if (self->session && self->terminal)
        session_unsubscribe(self->session, &settings_to_services, self);
    if (self->terminal)
        terminal_service_free(self->terminal);
    if (self->git)
        gitsvc_free(self->git);
    if (self->file)
        file_service_follow_settings(self->file, NULL);
    if (self->session)
        session_service_free(self->session);
    /* The document service watches files through the file service: it goes first. */
    if (self->document)
        document_service_free(self->document);
    if (self->file)
        file_service_free(self->file);
    if (self->store)
        store_close(self->store);
    memset(self, 0, sizeof *self);
}

bool server_services_persistent(const server_services *self) { return self->store && store_persistent(self->store); }

size_t server_services_connection_limit(const server_services *self, size_t fallback)
{
    return self->session ? setting_count(self, "server.maxConnections", fallback) : fallback;
}

void server_services_set_workspace(server_services *self, const char *workspace)
{
    if (self->document)
        document_service_set_workspace(self->document, workspace);
    if (self->session)
        session_service_set_workspace(self->session, workspace);
    if (self->database)
        database_service_set_workspace(self->database, workspace);
    if (self->agent)
        agent_service_set_workspace(self->agent, workspace);
}

void server_services_client_encodings(server_services *self, unsigned mask)
{
    /* the clients read document/didChange's columns in theirs */
    if (self->document)
        document_service_set_encodings(self->document, self, mask);
}

struct agent_service *server_agent(struct server *srv) { return srv->services.agent; }
