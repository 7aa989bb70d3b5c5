/* lsp: a client of real language servers.
 *
 * The lsp service runs one language server process per language (clangd for
 * C, pyright for Python, ...), speaks LSP to it over its stdin and stdout
 * (Content-Length framing), keeps it in step with the open documents and
 * passes requests through to it.
 *
 * What it promises:
 * - Lifetimes. A server starts on lsp_server_start, or by itself when a
 *   document of its language opens (the document service's, or one opened
 *   through lsp_document_open) while lsp.enabled is true and no server of
 *   the language exists, and runs until
 *   lsp_server_stop or the service is freed; both send `shutdown` and `exit`
 *   and then end the process, so no server outlives the service. The binary
 *   is found on PATH, then in ~/.cargo/bin, ~/.local/bin, /opt/homebrew/bin,
 *   /usr/local/bin, ~/go/bin, ~/.bun/bin and options.extra_path (by default
 *   <prefix>/share/ecpd/node/node_modules/.bin when installed, else the
 *   checkout's third_party/node), and spawned by its absolute path. Empty and
 *   relative PATH entries are skipped, and left out of the PATH a server
 *   gets: they name folders of the working directory, often a workspace. A
 *   command that is a relative path is not found.
 * - Trust. A server runs what the folder it is rooted in names (the
 *   folder's node_modules/typescript, the environment a pyrightconfig.json
 *   names), so it starts, by any road (lsp_server_start, lsp_document_open,
 *   a restart), only in a folder the session service says is trusted; a
 *   server without a root folder does not start at all. Trusting a folder
 *   starts the servers of the documents already open. A command that is not
 *   found is reported (on_unavailable) once per language and root, and not
 *   looked for again at the next open; lsp_server_start still tries it.
 *   Python's default is pylsp, else pyright-langserver when only that is
 *   found. Withdrawing trust stops the servers
 *   whose root is no longer trusted, as lsp_server_stop does. Without a
 *   session service nothing is checked: the embedder answers for its roots.
 * - Documents. Every document of the document service whose language has a
 *   running server is opened on that server, and its edits follow as
 *   incremental didChange (whole-text when the server asks for full sync),
 *   its saves as didSave, its close as didClose. Documents a client holds
 *   itself come through lsp_document_*.
 * - Timeouts. Every request to a server has a timer (the server's
 *   configuration's timeout_ms, else options.timeout_ms, else the
 *   lsp.requestTimeoutMs setting, else 30 s); a request that outlives it fails with ECP_ETIMEDOUT and
 *   is cancelled on the server ($/cancelRequest). initialize has the same
 *   deadline, but at least 5 s: a server that does not answer it in time is
 *   ended, and its start fails with ECP_EIO.
 * - Restarts. A server that exits without being asked to, or writes what
 *   cannot be read, is reported (status error), restarted after a backoff
 *   (0.5 s, 1 s, 2 s), at most 3 times in any minute, and its documents are
 *   opened again. Requests it had not answered fail with ECP_EIO.
 * - One server's faults never reach another server or the service.
 * - Positions. A server is offered UTF-8, UTF-16 and UTF-32 and speaks the
 *   one it chooses (lsp_server_encoding); what goes to it and comes from it
 *   is converted with lsp_column_convert and lsp_json_convert, from the text
 *   of the documents the service follows (positions in files it does not
 *   follow are passed unchanged).
 *
 * The process must ignore SIGPIPE (ecpd does): a server that died between
 * two writes is then an error on the write, not the end of the process.
 *
 * - Big changes off the loop. A didChange with much text to escape (the whole
 *   text for a full-sync server, a huge inserted text) is made by a job from a
 *   snapshot of the document (options.pool); what is sent to that server
 *   after it waits until it is made, so a server hears every message in the
 *   order it was sent.
 *
 * Everything runs on the loop thread. Strings passed in are copied; strings
 * passed to callbacks are valid during the call only.
 */
#ifndef ECPD_LSP_INTERFACE_H
#define ECPD_LSP_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "error.h"
#include "log.h"
#include "utf.h"

typedef struct lsp_service lsp_service;
struct document_service;
struct session_service;
struct ecp_pool;

/* ----- lifetime ---------------------------------------------------------------- */

typedef struct lsp_service_options {
    uv_loop_t *loop;                        /* required; borrowed, outlives the service */
    struct ecp_pool *pool;                  /* may be NULL (big didChange texts escaped on the loop); borrowed */
    ecp_logger *log;                        /* may be NULL; borrowed */
    struct document_service *documents;     /* may be NULL; borrowed, outlives the service */
    struct session_service *session;        /* may be NULL (no settings, no trust); borrowed, outlives the service */
    const char *workspace;                  /* may be NULL; copied. The default root of servers */
    const char *extra_path;                 /* may be NULL; a ':'-list searched after the defaults; copied */
    unsigned timeout_ms;                    /* 0: the lsp.requestTimeoutMs setting, else 30000 */
    size_t max_message;                     /* 0: 64 MiB. A larger message from a server is dropped */
} lsp_service_options;

/* NULL when out of memory. */
lsp_service *lsp_service_new(const lsp_service_options *options);
/* Stops every server (shutdown, exit, then SIGKILL of what still runs), fails
 * every pending request with ECP_ECANCELED (their callbacks run before this
 * returns and must not call the service), and frees the service. The
 * processes' handles close on the next turns of the loop. */
void lsp_service_free(lsp_service *self);

/* ----- configuration -------------------------------------------------------------- */

/* The language of a path or uri by the catalogue's extension map, or NULL. */
const char *lsp_language_of(const char *path);

/* A server's command line. Arrays are NULL-terminated. */
typedef struct lsp_server_config {
    const char *command;
    const char *const *args;
    const char *initialization_options; /* JSON text or NULL */
    const char *settings;               /* JSON text or NULL: what workspace/configuration answers from */
    const char *const *env;             /* "NAME=value", added to the environment; may be NULL */
    unsigned timeout_ms;                /* 0: the service's request timeout */
} lsp_server_config;

/* Replaces the configuration of a language (copied). ECP_EINVAL without a command. */
int lsp_config_set(lsp_service *self, const char *language_id, const lsp_server_config *config, ecp_error *err);
/* The custom configuration, else the default; false when there is none. The
 * pointers live until the next lsp_config_set of that language. */
bool lsp_config_get(lsp_service *self, const char *language_id, lsp_server_config *out);

/* ----- servers ------------------------------------------------------------------- */

typedef enum lsp_status {
    LSP_STOPPED = 0,
    LSP_STARTING,
    LSP_READY,
    LSP_ERROR,
} lsp_status;
const char *lsp_status_name(lsp_status status);

typedef struct lsp_server_info {
    const char *language_id;
    lsp_status status;
    const char *capabilities; /* JSON text of the server's capabilities once ready, else NULL */
    const char *error;        /* why it is in LSP_ERROR, else NULL */
    ecp_position_encoding encoding; /* what the server counts columns in, once ready */
} lsp_server_info;

/* status 0 when the server is ready; otherwise ECP_ENOTFOUND (no
 * configuration), ECP_ESTATE (lsp.enabled is false), ECP_EACCES (its folder,
 * workspace_uri else the served workspace, is not trusted; err names it),
 * ECP_EIO (the binary is missing or initialize failed), ECP_ECANCELED
 * (stopped or freed meanwhile).
 * Runs before lsp_server_start returns when the server is already ready or
 * the start fails at once. */
typedef void (*lsp_start_cb)(void *ctx, int status, const ecp_error *err, const lsp_server_info *info);
void lsp_server_start(lsp_service *self, const char *language_id, const char *workspace_uri, lsp_start_cb cb,
                      void *ctx);
/* Sends shutdown and exit; the status goes to stopped. 0 also when nothing runs. */
int lsp_server_stop(lsp_service *self, const char *language_id);
/* Fills *out for one language (stopped when unknown). The strings live until
 * the server's status next changes. */
void lsp_server_get(lsp_service *self, const char *language_id, lsp_server_info *out);
/* Every server that is starting, ready or failed. */
void lsp_server_each(lsp_service *self, void (*fn)(void *ctx, const lsp_server_info *info), void *ctx);
/* The position encoding the server of language_id uses (UTF-16 by default). */
ecp_position_encoding lsp_server_encoding(lsp_service *self, const char *language_id);

/* ----- documents a client holds itself --------------------------------------------- */

/* Opens (or replaces) the document and starts its language's server when it
 * has a configuration; a server that cannot start is reported through
 * on_status, never as a failure here. */
int lsp_document_open(lsp_service *self, const char *uri, const char *language_id, const char *text, size_t len,
                      ecp_error *err);
/* Whole-text change; nothing happens for an unknown document. */
int lsp_document_change(lsp_service *self, const char *uri, const char *text, size_t len, int64_t version);
int lsp_document_save(lsp_service *self, const char *uri, const char *text, size_t len); /* text may be NULL */
/* Closes it on its server and forgets its diagnostics. */
int lsp_document_close(lsp_service *self, const char *uri);

/* ----- requests -------------------------------------------------------------------- */

/* What a request wants of the server's result. The result is read once, where
 * the server's message is read: what the callback gets is either the
 * server's own JSON text of it (when its strings are valid UTF-8 and no
 * position has to change units) or one rendering of it, never a copy made
 * by writing and reading it again. */
typedef enum lsp_result_kind {
    LSP_RESULT_VALUE,     /* the result as it is */
    LSP_RESULT_ITEMS,     /* a CompletionItem[]: the result when it is an array, else its `items` array */
    LSP_RESULT_LOCATIONS, /* Location, Location[] or LocationLink[], as lsp_location structs */
} lsp_result_kind;

/* One place in a file: a Location's uri and range, or a LocationLink's
 * targetUri and targetSelectionRange (targetRange when it has none). */
typedef struct lsp_location {
    const char *uri; /* NULL when the server named none */
    bool has_range;
    size_t start_line, start_character, end_line, end_character; /* in the encoding asked for */
} lsp_location;

typedef struct lsp_result {
    bool is_null;     /* the result was null or absent (ITEMS: also an object without an items array) */
    const char *json; /* VALUE, ITEMS: JSON text of the value ("null" when is_null), positions in the
                       * encoding asked for; LOCATIONS: NULL */
    size_t len;
    const lsp_location *locations; /* LOCATIONS: in the server's order */
    size_t location_count;
} lsp_result;

/* The answer of a server: status 0 with result; ECP_ENOTFOUND when no server
 * has the document open (the caller answers the empty result); ECP_ESTATE
 * when its server is not running (err says why); ECP_ETIMEDOUT; ECP_ENOTSUP
 * when the server answered MethodNotFound; ECP_EIO when it answered another
 * error or went away; ECP_ECANCELED when cancelled through lsp_request_cancel
 * or at teardown. result is NULL unless status is 0, and valid during the
 * call only. */
typedef void (*lsp_result_cb)(void *ctx, int status, const ecp_error *err, const lsp_result *result);
typedef struct lsp_request lsp_request;

/* Sends `method` with `params` (JSON text, whose "textDocument":{"uri"} names
 * the document) to the server that has `uri` open; the result comes as `kind`
 * says, with its positions counted in `enc`. Returns the request, valid
 * until its callback has run, or NULL when the callback already ran. */
lsp_request *lsp_request_send(lsp_service *self, const char *uri, const char *method, const char *params,
                              lsp_result_kind kind, ecp_position_encoding enc, lsp_result_cb cb, void *ctx);
/* The callback runs now with ECP_ECANCELED, and the server gets $/cancelRequest. */
void lsp_request_cancel(lsp_service *self, lsp_request *req);

/* ----- positions ------------------------------------------------------------------------ */

/* The encoding of the server that has uri open (UTF-16 when none). */
ecp_position_encoding lsp_encoding_of(lsp_service *self, const char *uri);
/* A column of line `line` of uri, counted in `from`, counted in `to`. */
size_t lsp_column_convert(lsp_service *self, const char *uri, size_t line, size_t column, ecp_position_encoding from,
                          ecp_position_encoding to);
/* JSON text with every LSP Position in it ({line, character}) converted: a
 * position belongs to the uri of the nearest enclosing object that names one
 * (uri, targetUri, textDocument.uri, a key of WorkspaceEdit.changes), else
 * to default_uri. Returns malloc'd text (the caller frees it), or NULL when
 * json does not parse. */
char *lsp_json_convert(lsp_service *self, const char *default_uri, const char *json, size_t len,
                       ecp_position_encoding from, ecp_position_encoding to, size_t *out_len);

/* ----- diagnostics ------------------------------------------------------------------ */

typedef struct lsp_diagnostic {
    size_t start_line, start_column, end_line, end_column; /* columns in the encoding asked for */
    int severity;                                          /* 1 error .. 4 hint; 0 when absent */
    const char *message;
    const char *source;                                    /* may be NULL */
    const char *json;                                      /* the whole Diagnostic as JSON text, in that encoding */
    size_t json_len;
} lsp_diagnostic;

/* The last diagnostics published for uri, as JSON text of a Diagnostic[]
 * ("[]" when none) with columns in enc; the caller frees it. */
char *lsp_diagnostics_get(lsp_service *self, const char *uri, ecp_position_encoding enc);
/* Calls fn for every diagnostic of uri that touches lines [first_line,
 * last_line], in the order the server published them, with columns in enc.
 * Returns how many. */
size_t lsp_diagnostics_in_lines(lsp_service *self, const char *uri, size_t first_line, size_t last_line,
                                ecp_position_encoding enc, void (*fn)(void *ctx, const lsp_diagnostic *diagnostic),
                                void *ctx);
/* Every uri with diagnostics. */
void lsp_diagnostics_each(lsp_service *self, void (*fn)(void *ctx, const char *uri), void *ctx);
/* Counts of severity 1 and 2 over every uri. */
void lsp_diagnostics_summary(lsp_service *self, size_t *errors, size_t *warnings);

/* ----- events ------------------------------------------------------------------------ */

/* Every callback is optional and runs on the loop thread. */
typedef struct lsp_listener {
    /* New diagnostics for uri: read them with lsp_diagnostics_get. */
    void (*on_diagnostics)(void *ctx, const char *uri);
    void (*on_status)(void *ctx, const lsp_server_info *info);
    /* window/showMessage and window/showMessageRequest; params_json is LSP's params. */
    void (*on_message)(void *ctx, const char *language_id, const char *params_json);
    /* $/progress: token and value as JSON text. */
    void (*on_progress)(void *ctx, const char *language_id, const char *token_json, const char *value_json);
    /* A document's language has a server configured whose command is not
     * found: said once per language and root, not at every open. */
    void (*on_unavailable)(void *ctx, const char *language_id, const char *command, const char *reason);
} lsp_listener;

/* The listener struct is borrowed until lsp_unsubscribe with the same pair. */
void lsp_subscribe(lsp_service *self, const lsp_listener *listener, void *ctx);
void lsp_unsubscribe(lsp_service *self, const lsp_listener *listener, void *ctx);

#endif
