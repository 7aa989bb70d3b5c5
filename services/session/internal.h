/* internal: what the files of the session service share and nobody else sees.
 *
 * Ownership: the service owns every string it holds (layers, effective
 * values, bindings, the current session, paths). Store operations own their
 * data; the service flushes the store before it goes, so no completion ever
 * reaches a freed service.
 */
#ifndef ECPD_SESSION_INTERNAL_H
#define ECPD_SESSION_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "file/interface.h"
#include "interface.h"
#include "job.h"
#include "json.h"
#include "json_writer.h"
#include "store/interface.h"

/* Settings layers, later wins. */
enum {
    LAYER_DEFAULT,
    LAYER_USER,      /* --config FILE */
    LAYER_WORKSPACE, /* <workspace>/.ecpd/settings.json */
    LAYER_SET,       /* session_setting_set, persisted */
    LAYER_COUNT,
};

/* A watched JSONC settings file feeding one layer. */
typedef struct settings_file {
    session_service *svc;
    int layer;
    char *path;        /* NULL: this layer has no file */
    char *watched_dir; /* the directory watched now: the file's, or its nearest existing ancestor */
    uint64_t watch_id;
    bool watching;
    char *last_text;   /* the last text read, good or not (NULL: no file) */
    size_t last_len;
    bool reading;      /* a read job is out */
    bool read_again;   /* the file changed while it was being read */
} settings_file;

typedef struct keybinding_entry {
    session_keybinding view; /* strings owned below */
    char *canonical;
} keybinding_entry;

typedef struct journal_entry journal_entry;

struct session_service {
    ecp_pool *pool;
    ecp_logger *log;
    store *store;
    document_service *docs;
    file_service *files;
    char *workspace;
    char *config_path;
    char *data_dir;
    ecp_job_set *jobs;
    ecp_listeners listeners;

    /* settings */
    char **layers[LAYER_COUNT]; /* each: one JSON text (owned) or NULL per schema row */
    char **effective;           /* owned copies of the winning layer's values */
    char **effective_strings;   /* decoded string values, made when first asked for */
    settings_file user_file, workspace_file;

    /* key bindings */
    keybinding_entry *bindings;
    size_t binding_count;
    session_keybinding *binding_views; /* rebuilt on change */
    struct ecp_map *binding_last;      /* canonical key -> 1 + index of its last binding; rebuilt with the views */
    size_t *binding_prev;              /* per binding: 1 + index of the one before it with its key, or 0 */

    /* sessions */
    char *current_id;    /* the current session's id, or NULL */
    char *current_state; /* its SessionState JSON */
    char instance_id[33];

    /* secrets */
    unsigned char *secret_key; /* sodium_malloc'd, crypto_aead_xchacha20poly1305_ietf_KEYBYTES */
    bool secrets_ephemeral;    /* no key file: what is encrypted now cannot be read by a later run */

    /* hot exit */
    journal_entry *journal;       /* one per dirty document being followed */
    struct ecp_map *journal_by_id; /* document id -> its entry in journal (made with the first) */
    int instance_lock_fd;         /* held from registration to the end: the lock says we run */
    char *instance_lock_path;
    bool registered;              /* our row is in `instances` (or on its way), made with the first kept text */

    /* workspace trust */
    char **trusted_folders;       /* real paths, as the store keeps them */
    size_t trusted_count;
    char *flag_trusted;           /* --trust-workspace: the real path of the workspace the server started
                                     with; a folder a client's initialize names later is not covered */
    char *layer_workspace;        /* the workspace whose file LAYER_WORKSPACE holds */
    bool workspace_trusted;       /* whether that workspace is trusted: its restricted values apply */
    char *noticed_workspace;      /* the workspace whose ignored keys on_message has named */
    bool freeing;
};

/* ----- small things (local.c) ----------------------------------------------------------- */

int64_t session__now_ms(void);
/* Emits to the listeners. */
void session__emit_setting(session_service *self, const char *key, const char *value_json);
void session__emit_theme(session_service *self, const char *theme_id);
void session__emit_message(session_service *self, session_message_type type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void session__emit_trust(session_service *self, const char *path, bool trusted);

/* ----- workspace trust (trust.c) ----------------------------------------------------------- */

int session__trust_init(session_service *self, ecp_error *err);
void session__trust_free(session_service *self);
/* Whether the folder at path is trusted now (false for NULL or a path that
 * does not resolve). */
bool session__path_trusted(session_service *self, const char *path);

/* ----- settings (settings.c) ----------------------------------------------------------------- */

int session__settings_init(session_service *self, ecp_error *err);
void session__settings_free(session_service *self);
/* Starts watching the settings files (after the loop can run callbacks). */
void session__settings_watch(session_service *self);
/* The workspace changed: its settings file is another. */
void session__settings_workspace_changed(session_service *self);
/* A folder's trust changed: the workspace's restricted values follow. */
void session__settings_trust_changed(session_service *self);
/* Converts JSONC (comments, trailing commas) to JSON of the same length, so
 * offsets keep pointing at the same place. Exposed for tests. */
void session__jsonc_strip(const char *text, size_t len, buf *out);

/* ----- key bindings (keybindings.c) ------------------------------------------------------------ */

int session__keybindings_init(session_service *self, ecp_error *err);
void session__keybindings_free(session_service *self);
/* Evaluates a when clause against a context, as keybinding resolution does
 * (a name the context lacks counts as true); the errors are session_when_check's. */
int session__when_eval(const char *when, const session_context_value *ctx, size_t ctx_count, bool *value,
                       ecp_error *err);

/* ----- sessions (sessions.c) and hot exit (journal.c) ------------------------------------------- */

void session__sessions_free(session_service *self);
int session__journal_init(session_service *self, ecp_error *err);
void session__journal_free(session_service *self);

/* Reopens documents one after another: shared by restore and recover. */
typedef struct reopen_item {
    char *uri;
    char *language_id;   /* may be NULL */
    char *content;       /* unsaved text to put in, or NULL: as on disk */
    size_t content_len;
    bool has_content;
    bool must_exist;     /* without content: a missing file is reported missing */
    char *cursors_json;  /* [{position:{line,column}, selection?}] in UTF-16, or NULL */
} reopen_item;

/* Told of each item as it is settled: document_id is the document it is now,
 * or NULL when it could not be opened. */
typedef void (*reopen_item_cb)(session_service *self, const reopen_item *item, const char *document_id);

/* client: whose cursors the items' cursors become. */
void session__reopen(session_service *self, uint64_t client, reopen_item *items, size_t count, reopen_item_cb each,
                     session_reopen_cb cb, void *ctx);

/* ----- secrets (secrets.c) ------------------------------------------------------------------------ */

int session__secrets_init(session_service *self, ecp_error *err);
void session__secrets_free(session_service *self);

#endif
