/* Servers that start by themselves: opening a document of a language starts
 * that language's server, so every client gets diagnostics without asking
 * for them. The rules are those of lsp_server_start, seen from the open:
 * nothing starts while lsp.enabled is false or in a folder that is not
 * trusted (trusting it later starts the servers of the documents already
 * open), and a server that cannot be found is reported once per language and
 * root, not again at every open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "internal.h"
#include "map.h"
#include "session/interface.h"

struct lsp_autostart {
    bool enabled;         /* lsp.enabled, as last heard */
    ecp_map *unavailable; /* "language\nroot uri" of servers reported as not found */
};

static void started_by_itself(void *ctx, int status, const ecp_error *err, const lsp_server_info *info)
{
    (void)ctx, (void)status, (void)err, (void)info; /* its status went out through on_status */
}

static char *unavailable_key(const char *language_id, const char *root_uri)
{
    buf key = BUF_INIT;
    buf_appendf(&key, "%s\n%s", language_id, root_uri ? root_uri : "");
    return buf_detach(&key);
}

/* Says, once for this language and root, that its server is not installed:
 * a client that opens many files of the language hears it once. */
static void report_unavailable(lsp_service *self, const char *language_id, const char *root_uri,
                               const char *command)
{
    char *key = unavailable_key(language_id, root_uri);
    bool first = ecp_map_set(self->autostart->unavailable, key, NULL, NULL);
    free(key);
    if (!first)
        return;
    char reason[512];
    snprintf(reason, sizeof reason, "Language server not found: %s", command);
    ecp_log(self->log, ECP_LOG_WARN, "lsp %s: %s", language_id, reason);
    ECP_EMIT(&self->listeners, lsp_listener, on_unavailable, language_id, command, reason);
}

void lsp_autostart_document(lsp_service *self, const char *language_id)
{
    if (!self->autostart || !self->autostart->enabled || !language_id)
        return;
    if (lsp_server_find(self, language_id))
        return; /* running, starting, or failed: a failed one waits for its restart or for lsp/start */
    lsp_server_config config;
    if (!lsp_config_get(self, language_id, &config))
        return;
    char *root = lsp_served_root(self);
    char *key = unavailable_key(language_id, root);
    bool reported = ecp_map_find(self->autostart->unavailable, key, NULL);
    free(key);
    ecp_error err = {0};
    buf file = BUF_INIT;
    /* trust first: in an untrusted folder nothing is looked for either, until its trust event */
    if (!reported && lsp_trust_check(self, root, &err) == 0) {
        if (!lsp_command_find(self, config.command, &file)) {
            report_unavailable(self, language_id, root, config.command);
        } else {
            ecp_log(self->log, ECP_LOG_INFO, "lsp %s: starting for an open document", language_id);
            lsp_server_start(self, language_id, NULL, started_by_itself, NULL);
        }
    }
    buf_free(&file);
    free(root);
}

/* ----- what the service hears -------------------------------------------------------------------- */

static void on_open(void *ctx, const document_info *info)
{
    lsp_autostart_document(ctx, info->language_id);
}

static const document_listener open_listener = {.on_open = on_open};

/* The documents already open, once their folder is trusted. */
static void start_for_open_documents(lsp_service *self)
{
    size_t count = 0;
    for (lsp_doc *d = self->docs; d; d = d->next)
        count++;
    /* copied: each start is heard by listeners, which may open or close documents meanwhile */
    char **languages = xcalloc(count + 1, sizeof *languages);
    size_t n = 0;
    for (lsp_doc *d = self->docs; d; d = d->next)
        languages[n++] = xstrdup(d->language_id);
    for (size_t i = 0; i < n; i++) {
        lsp_autostart_document(self, languages[i]);
        free(languages[i]);
    }
    free(languages);
}

static void on_setting(void *ctx, const char *key, const char *value_json)
{
    lsp_service *self = ctx;
    if (strcmp(key, "lsp.enabled") == 0)
        self->autostart->enabled = !value_json || strcmp(value_json, "false") != 0;
}

static void on_trust(void *ctx, const char *path, bool trusted)
{
    (void)path;
    lsp_documents_trust_changed(ctx);
    if (trusted)
        start_for_open_documents(ctx);
}

static const session_listener settings_listener = {.on_setting = on_setting, .on_trust = on_trust};

/* A server that became ready after all (an lsp/start once it was installed)
 * is reported again if it goes missing later. */
static void on_status(void *ctx, const lsp_server_info *info)
{
    lsp_service *self = ctx;
    if (info->status != LSP_READY)
        return;
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    const char *key;
    size_t len = strlen(info->language_id);
    while (ecp_map_next(self->autostart->unavailable, &it, &key, NULL))
        if (strncmp(key, info->language_id, len) == 0 && key[len] == '\n')
            ecp_map_iter_remove(self->autostart->unavailable, &it);
}

static const lsp_listener status_listener = {.on_status = on_status};

/* ----- lifetime ------------------------------------------------------------------------------------ */

void lsp_autostart_init(lsp_service *self)
{
    lsp_autostart *a = xcalloc(1, sizeof *a);
    a->unavailable = ecp_map_new();
    a->enabled = !self->session || session_setting_bool(self->session, "lsp.enabled", true);
    self->autostart = a;
    lsp_subscribe(self, &status_listener, self);
    if (self->session)
        session_subscribe(self->session, &settings_listener, self);
    if (self->documents) {
        document_subscribe(self->documents, &open_listener, self);
        start_for_open_documents(self); /* those opened before the service */
    }
}

void lsp_autostart_free(lsp_service *self)
{
    lsp_autostart *a = self->autostart;
    if (!a)
        return;
    if (self->documents)
        document_unsubscribe(self->documents, &open_listener, self);
    if (self->session)
        session_unsubscribe(self->session, &settings_listener, self);
    lsp_unsubscribe(self, &status_listener, self);
    ecp_map_free(a->unavailable);
    free(a);
    self->autostart = NULL;
}
