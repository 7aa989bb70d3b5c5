/* session: what the server remembers for its user — settings, sessions, key
 * bindings, themes, secrets — and the unsaved text it must never lose.
 *
 * The session service keeps every piece of user state in memory for quick
 * answers and persists it in the store (store/interface.h), so a restart, a
 * crash or a second server on the same data directory sees the same state.
 *
 * What it promises:
 * - Settings: one schema (the catalogue's 79 keys, then the extension keys
 *   that this server's own services read) decides every key's type, default
 *   and range. The effective value of a key is the last of these
 *   layers that sets it: the defaults, the user file (--config FILE, JSONC),
 *   the workspace file (<workspace>/.ecpd/settings.json, JSONC), and values
 *   set through this interface (persisted). Both files are watched: an edit
 *   applies at once; a malformed file keeps its last good values and is
 *   reported to the listeners' on_message and the log. Every change of an
 *   effective value reaches on_setting exactly once, with the new value.
 * - Themes are data: eight built-in themes with 15 UI colours and token
 *   colours keyed by tree-sitter capture names. The current theme is the
 *   `workbench.colorTheme` setting (an unknown id falls back to One Dark).
 * - Key bindings persist; `when` clauses are checked when they are set.
 * - Sessions (open documents with their cursors and, when the settings say
 *   so, their unsaved text, plus the client's own state) are saved in the
 *   store and restored into the document service.
 * - Secrets come from the environment (read-only) or from the store,
 *   encrypted with a key derived from a 0600 key file in the data directory.
 *   A secret's value never appears in a log line, an error message or a
 *   setting.
 * - Hot exit: while a document is dirty its text is journaled to the store
 *   about a second after the last edit, off the loop; saving or closing it
 *   clears the entry. A later server on the same workspace and data directory
 *   offers the text of servers that are no longer running for recovery.
 * - Workspace trust: a workspace is untrusted until the user trusts it (the
 *   folder or one of its ancestors, compared as real paths; kept in the
 *   store, never in the workspace). In an untrusted workspace the workspace
 *   file's values of the schema's restricted keys (those that name a
 *   program, its arguments, environment or a path, and those that widen a
 *   permission) are ignored, and on_message names them once per workspace.
 *   Trusting or withdrawing trust recomputes them like any other change.
 *
 * Threads: every function runs on the loop thread; callbacks run there too.
 * Errors: functions return 0 or a negative ECP status with `err` filled:
 * ECP_ENOTFOUND (unknown setting, session or theme), ECP_EINVAL (a value the
 * schema refuses, a malformed binding), ECP_EREADONLY (writing the env
 * provider), ECP_ESTATE (a workspace session without a workspace), ECP_EIO
 * and friends from the store.
 */
#ifndef ECPD_SESSION_INTERFACE_H
#define ECPD_SESSION_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "job.h"
#include "log.h"

struct store;
struct document_service;
struct file_service;

typedef struct session_service session_service;

/* ----- lifetime ------------------------------------------------------------------ */

typedef struct session_service_options {
    ecp_pool *pool;                     /* required; borrowed */
    ecp_logger *log;                    /* may be NULL; borrowed */
    struct store *store;                /* required; borrowed, outlives the service */
    struct document_service *documents; /* required; borrowed, outlives the service */
    struct file_service *files;         /* required (watches the settings files); borrowed */
    const char *workspace;              /* may be NULL; copied */
    const char *config_path;            /* --config FILE, may be NULL; copied */
    const char *data_dir;               /* required (the secret key file lives there); copied */
    bool trust_workspace;               /* trust the workspace this run starts with (--trust-workspace) */
} session_service_options;

/* Loads the state from the store and the settings files and starts watching
 * the files. Returns NULL with err filled when it cannot. */
session_service *session_service_new(const session_service_options *options, ecp_error *err);

/* Journals what is still dirty, waits for the store to take every write,
 * stops the watches and frees the service. */
void session_service_free(session_service *self);

/* The workspace the server now serves (initialize may name it). Copied. */
void session_service_set_workspace(session_service *self, const char *workspace);
const char *session_service_workspace(const session_service *self); /* NULL when none */

/* Times as clients see them: "2026-01-31T12:00:00.000Z" (out holds 32
 * bytes), and back (Z or an offset; fractions optional; false when malformed). */
void session_time_iso(char out[32], int64_t ms);
bool session_time_parse_iso(const char *s, int64_t *ms);

/* ----- events --------------------------------------------------------------------------- */

typedef enum session_message_type {
    SESSION_MESSAGE_ERROR = 1,
    SESSION_MESSAGE_WARNING = 2,
    SESSION_MESSAGE_INFO = 3,
} session_message_type;

/* Every callback is optional and runs on the loop thread. Pointers are valid
 * during the call only. */
typedef struct session_listener {
    /* An effective setting changed; value_json is its new JSON text, or NULL
     * when the key no longer has a value. */
    void (*on_setting)(void *ctx, const char *key, const char *value_json);
    /* The current theme changed. */
    void (*on_theme)(void *ctx, const char *theme_id);
    /* Something a person should know: a settings file that does not parse. */
    void (*on_message)(void *ctx, session_message_type type, const char *message);
    /* A folder was trusted or its trust withdrawn (path: its real path). The
     * settings it changes have reached on_setting first. */
    void (*on_trust)(void *ctx, const char *path, bool trusted);
} session_listener;

/* listener is borrowed (usually a static const) until unsubscribed. */
void session_subscribe(session_service *self, const session_listener *listener, void *ctx);
void session_unsubscribe(session_service *self, const session_listener *listener, void *ctx);

/* ----- settings ----------------------------------------------------------------------------- */

typedef enum session_setting_type {
    SESSION_SETTING_BOOLEAN,
    SESSION_SETTING_NUMBER,
    SESSION_SETTING_STRING,
    SESSION_SETTING_OBJECT,
} session_setting_type;

/* One row of the schema. Static data: valid for the life of the process. */
typedef struct session_setting_schema {
    const char *key;
    session_setting_type type;
    const char *default_json;   /* the schema default, JSON text */
    const char *const *choices; /* enum values, NULL-terminated, or NULL */
    bool has_range;
    double minimum, maximum;
    bool integer;               /* a number that must be whole */
    /* Further check of a string value (its text) or an object value (its
     * JSON text); returns false with a reason written to reason (cap bytes).
     * NULL: any string or object. */
    bool (*check)(const char *value, char *reason, size_t cap);
    const char *description;
    /* Not in the catalogue: a key this server adds for its own services. */
    bool extension;
    /* Part of the values a fresh server reports (config/getAll); the others
     * have a value only once a layer sets one. */
    bool reported_by_default;
    /* Names a program, its arguments, environment or a path, or widens a
     * permission: an untrusted workspace's file cannot set it. */
    bool restricted;
} session_setting_schema;

const session_setting_schema *session_settings_schema(size_t *count);
const session_setting_schema *session_setting_find(const char *key);
const char *session_setting_type_name(session_setting_type type);

/* The effective value's JSON text, or NULL (unknown key, or no layer sets
 * it). Valid until the setting next changes. */
const char *session_setting_json(session_service *self, const char *key);

/* Typed reads of the effective value; `fallback` when it is unset or of
 * another type. The string is valid until the setting next changes. */
bool session_setting_bool(session_service *self, const char *key, bool fallback);
double session_setting_number(session_service *self, const char *key, double fallback);
const char *session_setting_string(session_service *self, const char *key, const char *fallback);

/* Calls fn for every key that has an effective value, in schema order. */
void session_settings_each(session_service *self, void (*fn)(void *ctx, const char *key, const char *value_json),
                           void *ctx);

#define SESSION_REASON_MAX 200

/* Sets a value in the topmost layer and persists it. The value is checked
 * against the schema: ECP_ENOTFOUND for an unknown key, ECP_EINVAL for a
 * value it refuses; err's message says which and why, and reason (may be
 * NULL) receives the why alone ("expected number, got string", "must be at
 * most 72"). */
int session_setting_set(session_service *self, const char *key, const char *value_json, size_t len,
                        char reason[SESSION_REASON_MAX], ecp_error *err);

/* Drops the topmost layer's value of key (NULL: of every key), so the files
 * and defaults show through again. ECP_ENOTFOUND for an unknown key. */
int session_setting_reset(session_service *self, const char *key, ecp_error *err);

/* The value of key that the workspace file sets but that is ignored because
 * the workspace is untrusted (JSON text), or NULL. Valid until the settings
 * or the trust next change. */
const char *session_setting_ignored(session_service *self, const char *key);

/* Whether name may name an MCP server, in agent.mcpServers as in the agent's
 * own mcp/startServer: 1 to 40 letters, digits, '-' or single '_' ("__"
 * separates the server from the tool in the names the model sees). */
bool session_mcp_server_name_valid(const char *name);

/* ----- workspace trust ------------------------------------------------------------------------- */

/* Whether the served workspace is trusted (false when there is none). */
bool session_workspace_trusted(session_service *self);

/* Whether the folder at path (absolute) is trusted: it or an ancestor is, as
 * real paths. ECP_ENOTFOUND when it does not exist, ECP_ENOTDIR when it is
 * not a folder, ECP_EACCES when it cannot be looked at. */
int session_trust_query(session_service *self, const char *path, bool *trusted, ecp_error *err);

/* Trusts the folder at path, or withdraws the trust given to it and to the
 * folders beneath it; persisted. *trusted (may be NULL) receives whether it
 * is trusted afterwards (an ancestor's trust still covers it). Errors as
 * session_trust_query. The workspace's restricted settings follow at once. */
int session_trust_set(session_service *self, const char *path, bool trust, bool *trusted, ecp_error *err);

/* ----- themes ---------------------------------------------------------------------------------- */

#define SESSION_THEME_COLOR_COUNT 15

typedef struct session_token_color {
    const char *capture;    /* a tree-sitter capture name: "keyword", "function.method" */
    const char *foreground; /* "#rrggbb" */
    const char *font_style; /* "italic", "bold", or NULL */
} session_token_color;

typedef struct session_theme {
    const char *id;   /* "One Dark", "catppuccin-frappe" */
    const char *name; /* "One Dark" */
    const char *type; /* "dark" or "light" */
    const char *const *color_names; /* SESSION_THEME_COLOR_COUNT names, the same for every theme */
    const char *const *colors;      /* SESSION_THEME_COLOR_COUNT values, in color_names' order */
    const session_token_color *token_colors;
    size_t token_color_count;
} session_theme;

/* The built-in themes (static data). */
const session_theme *session_themes(size_t *count);
/* By id, or by an alias settings files may have ("one-dark" for "One Dark"). */
const session_theme *session_theme_find(const char *id);

/* The current theme: never NULL. */
const session_theme *session_theme_current(session_service *self);

/* The colour of a capture in the current theme: the longest listed prefix of
 * "a.b.c" ("a.b", then "a"), or NULL when none is listed. */
const session_token_color *session_theme_token_color(session_service *self, const char *capture);

/* Makes id current (through workbench.colorTheme) and persists it.
 * ECP_ENOTFOUND for an unknown theme. */
int session_theme_set(session_service *self, const char *id, ecp_error *err);

/* ----- key bindings ------------------------------------------------------------------------------- */

typedef struct session_keybinding {
    const char *key;     /* as given: "Ctrl+Shift+P" */
    const char *command;
    const char *when;    /* NULL: always */
    const char *args_json; /* NULL: none */
} session_keybinding;

/* The bindings in order. Valid until they next change. */
const session_keybinding *session_keybindings(session_service *self, size_t *count);

/* Replaces every binding (all are checked first: ECP_EINVAL names the first
 * bad one and changes nothing; *bad_index receives its index). */
int session_keybindings_set(session_service *self, const session_keybinding *list, size_t count, size_t *bad_index,
                            ecp_error *err);

/* Adds a binding, replacing any with the same key. */
int session_keybinding_add(session_service *self, const session_keybinding *binding, ecp_error *err);

/* Removes the bindings of key; *removed (may be NULL) says whether any was. */
int session_keybinding_remove(session_service *self, const char *key, bool *removed, ecp_error *err);

/* A pressed key and its modifiers. */
typedef struct session_keypress {
    const char *key;
    bool ctrl, shift, alt, meta;
} session_keypress;

/* A context key's value for `when` clauses: a boolean, or a string. */
typedef struct session_context_value {
    const char *name;
    const char *string; /* NULL for a boolean */
    bool boolean;
} session_context_value;

/* The binding a key press runs in the given context: the last binding whose
 * canonical key matches exactly and whose `when` holds; NULL when none. A
 * context key the client did not send counts as true on its own (as the
 * catalogue's reference does) and as unequal to any value. */
const session_keybinding *session_keybinding_resolve(session_service *self, const session_keypress *press,
                                                     const session_context_value *context, size_t context_count);

/* The canonical form of a key string ("Shift+Ctrl+P" -> "ctrl+shift+p"):
 * modifiers in the order ctrl, alt, shift, meta, then the key in lower case.
 * Appends to out (malloc'd, caller frees); ECP_EINVAL for an empty key. */
int session_key_canonical(const char *key, char **out, ecp_error *err);

/* Checks a `when` clause; ECP_EINVAL with the reason and the offset. */
int session_when_check(const char *when, ecp_error *err);

/* ----- sessions ------------------------------------------------------------------------------------- */

typedef struct session_summary {
    const char *id;
    const char *name;           /* NULL for a workspace session */
    const char *type;           /* "workspace" or "named" */
    const char *workspace_root; /* NULL when none */
    int64_t last_modified;      /* ms since the epoch */
    int64_t document_count;
} session_summary;

/* status 0: id is the saved session's id. */
typedef void (*session_save_cb)(void *ctx, int status, const ecp_error *err, const char *id);

/* Captures the open documents (uri, the cursors of `client`, a connection's
 * id, and unsaved text when
 * session.save.unsavedContent is on) and the client's state (JSON text,
 * may be NULL) and saves them as `named-<name>` or, without a name, as the
 * workspace's session (ECP_ESTATE when there is no workspace). It becomes the
 * current session. */
void session_save(session_service *self, uint64_t client, const char *name, const char *client_state_json,
                  session_save_cb cb, void *ctx);

/* state_json is the SessionState JSON text (valid during the call). */
typedef void (*session_load_cb)(void *ctx, int status, const ecp_error *err, const char *state_json);
void session_load(session_service *self, const char *id, session_load_cb cb, void *ctx);

/* The current session's state JSON, or NULL. */
const char *session_current(session_service *self);

typedef void (*session_list_cb)(void *ctx, int status, const ecp_error *err, const session_summary *list,
                                size_t count);
/* Newest first. */
void session_list(session_service *self, session_list_cb cb, void *ctx);

typedef void (*session_status_cb)(void *ctx, int status, const ecp_error *err);
/* ECP_ENOTFOUND for an unknown session. */
void session_delete(session_service *self, const char *id, session_status_cb cb, void *ctx);

/* What a restore or a recovery reopened: the ids of the documents now open
 * and the uris that could not be (their files are gone). */
typedef struct session_reopened {
    const char *const *document_ids;
    size_t document_count;
    const char *const *missing;
    size_t missing_count;
} session_reopened;

typedef void (*session_reopen_cb)(void *ctx, int status, const ecp_error *err, const session_reopened *result);

/* Reopens a saved session's documents with their unsaved text, and with
 * the cursors saved as `client`'s (a connection's id). */
void session_restore(session_service *self, uint64_t client, const char *id, session_reopen_cb cb, void *ctx);

/* ----- recovery (hot exit) --------------------------------------------------------------------------- */

typedef struct session_recoverable {
    const char *uri;
    const char *language_id;
    int64_t saved_at; /* ms since the epoch */
    int64_t bytes;
} session_recoverable;

typedef void (*session_recoverable_cb)(void *ctx, int status, const ecp_error *err, const session_recoverable *list,
                                       size_t count);
/* Unsaved text left on this workspace by servers that are no longer running,
 * newest first, one entry per uri. */
void session_recoverable_list(session_service *self, session_recoverable_cb cb, void *ctx);

/* Reopens the given uris (NULL: all) dirty with the recovered text. The text
 * stays in the store, this server's now, until its document is journaled
 * again, saved or closed: a crash right after a recovery loses nothing, and
 * text whose document cannot be reopened is offered again once this server
 * is gone. */
void session_recover(session_service *self, const char *const *uris, size_t count, session_reopen_cb cb, void *ctx);

/* Forgets the given uris' recovered text (NULL: all). */
void session_discard_recovery(session_service *self, const char *const *uris, size_t count, session_status_cb cb,
                              void *ctx);

/* ----- secrets ---------------------------------------------------------------------------------------- */

typedef struct session_secret_provider {
    const char *id;   /* "env", "encrypted-file" */
    const char *name;
    int priority;     /* lower is asked first */
    bool read_only;
} session_secret_provider;

const session_secret_provider *session_secret_providers(size_t *count);

typedef struct session_secret_info {
    const char *key;
    const char *provider;
    int64_t created_at;  /* ms since the epoch; 0 when unknown */
    int64_t expires_at;  /* 0 when it never expires */
    const char *description; /* NULL when none */
} session_secret_info;

typedef struct session_secret_options {
    int64_t expires_at;      /* 0: never */
    const char *description; /* may be NULL */
    const char *provider;    /* NULL: the first writable one */
} session_secret_options;

/* value is NULL when no provider has the key (or it expired); found says
 * whether one had it. The value is valid during the call only. */
typedef void (*session_secret_get_cb)(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                                      const session_secret_info *info);
void session_secret_get(session_service *self, const char *key, session_secret_get_cb cb, void *ctx);

void session_secret_set(session_service *self, const char *key, const char *value, size_t len,
                        const session_secret_options *options, session_status_cb cb, void *ctx);

typedef void (*session_secret_delete_cb)(void *ctx, int status, const ecp_error *err, bool deleted);
void session_secret_delete(session_service *self, const char *key, session_secret_delete_cb cb, void *ctx);

typedef void (*session_secret_list_cb)(void *ctx, int status, const ecp_error *err, const char *const *keys,
                                       size_t count);
/* The keys of every provider starting with prefix (NULL: all), sorted, once each. */
void session_secret_list(session_service *self, const char *prefix, session_secret_list_cb cb, void *ctx);

#endif
