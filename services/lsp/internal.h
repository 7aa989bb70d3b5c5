/* What the lsp service's own files share. */
#ifndef ECPD_LSP_INTERNAL_H
#define ECPD_LSP_INTERNAL_H

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "framing.h"
#include "interface.h"
#include "job.h"
#include "json.h"
#include "json_writer.h"
#include "map.h"
#include "peer.h"
#include "process.h"
#include "session/interface.h"
#include "shared.h"

/* The default request timeout, when neither the options nor the settings name one. */
#define LSP_DEFAULT_TIMEOUT_MS 30000u
/* initialize has the request timeout, but never less than this: starting a
 * server (an interpreter, a JIT, a project to load) is slower than
 * answering a hover, and a deadline tuned for hovers must not fail it. */
#define LSP_MIN_INITIALIZE_TIMEOUT_MS 5000u
/* Restarts allowed within LSP_RESTART_WINDOW_MS before a crashed server stays down. */
#define LSP_MAX_RESTARTS 3
#define LSP_RESTART_WINDOW_MS 60000u
/* A didChange with at least this much text to escape (a whole document for a
 * full-sync server, a huge paste) is made by a job, not on the loop. */
#define LSP_OFF_LOOP_TEXT ((size_t)64 << 10)
/* How long a stopped server has to exit by itself before it is killed. */
#define LSP_STOP_GRACE_MS 1000u

typedef struct lsp_server lsp_server;
typedef struct lsp_autostart lsp_autostart;

/* A document the servers see: one of the document service's, or one a client holds. */
typedef struct lsp_doc {
    char *uri;
    char *language_id;
    char *document_id; /* NULL: the client holds the text, kept in text */
    char *text;
    size_t len;
    int64_t version;
    /* From a folder nobody trusts: never sent to a server, which would read
     * the project files beside it (clangd its compile_commands.json). */
    bool withheld;
    struct lsp_doc *next;
} lsp_doc;

/* One published Diagnostic (diagnostics.c). */
typedef struct lsp_diag lsp_diag;

typedef struct lsp_diag_entry {
    char *uri;
    lsp_diag *items;            /* as the server published them, in its order */
    size_t count;
    char *language_id;          /* of the server that published it */
    ecp_position_encoding enc;  /* the server's */
} lsp_diag_entry;

struct lsp_request {
    lsp_service *svc;
    lsp_server *server;
    ecp_peer *peer;  /* of the process it was sent to */
    int64_t id;      /* the peer's, while it waits for its answer; 0 after */
    char *method;
    unsigned timeout_ms;
    lsp_result_cb cb;
    void *ctx;
    lsp_result_kind kind;
    ecp_position_encoding enc; /* what the result's positions are counted in */
    char *uri;                 /* the document asked about: whose lines a position without a uri is on */
    struct lsp_request *next;
};

typedef struct lsp_starter {
    lsp_start_cb cb;
    void *ctx;
    struct lsp_starter *next;
} lsp_starter;

/* One process of a server. It outlives its server when the server is stopped
 * or restarted: it is freed once the child has exited, or with the service. */
typedef struct lsp_proc {
    lsp_server *server; /* NULL once detached */
    lsp_service *svc;   /* NULL until it is one of the service's procs */
    struct lsp_proc *prev, *next; /* the service's live processes */
    ecp_logger *log;
    char *language_id;
    ecp_process *process;
    /* Content-Length framed; its gate holds what is sent before initialize
     * is answered, except initialize itself and answers to the server */
    ecp_peer *peer;
    bool exited;
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
    lsp_request *pending;
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
    lsp_doc *docs;            /* the most recently opened first */
    ecp_map *docs_by_uri;     /* normalised uri -> the first of docs with it */
    ecp_map *docs_by_id;      /* document id -> the doc that follows it */
    bool doc_uris_shared;     /* two docs have had one uri: removing rescans */
    ecp_map *diags;           /* normalised uri -> lsp_diag_entry, in the order first published */
    lsp_custom_config *configs;
    lsp_proc *procs; /* every process not yet freed, its server's or detached */
    ecp_job_set *jobs; /* NULL without a pool: everything is made on the loop */
    ecp_listeners listeners;
    lsp_autostart *autostart; /* NULL until made, and once freed */
};

/* servers.c */
char *lsp_absolute_path_var(void);
void lsp_server_info_fill(const lsp_server *s, lsp_server_info *out);
void lsp_server_ready(lsp_server *s, const json_doc *doc, json_ref result);
void lsp_server_notification_in(lsp_server *s, const json_doc *doc, json_ref method, json_ref params);
void lsp_server_proc_gone(lsp_server *s, const char *why);

/* Where lsp_server_start looks: the served workspace as a file:// URI (malloc'd), or NULL. */
char *lsp_served_root(lsp_service *self);
/* 0 when a server may start rooted at root_uri; ECP_EACCES with err naming the folder when not. */
int lsp_trust_check(lsp_service *self, const char *root_uri, ecp_error *err);
/* The absolute path of a server's command into out, as a start would find it; false when it is not found. */
bool lsp_command_find(lsp_service *self, const char *command, buf *out);

/* rpc.c */
/* Appends one message with its Content-Length header. Any thread. */
void lsp_frame(buf *out, const char *json, size_t len);
/* Writes framed bytes now, or after the bytes in the making written before them. */
void lsp_proc_write(lsp_proc *p, const char *data, size_t len);
/* Writes framed bytes that may still be in the making (ecp_shared_pending):
 * they and everything written after them wait until they are filled. */
void lsp_proc_write_shared(lsp_proc *p, ecp_shared *bytes);
/* Forgets what is held: for a process that will hear nothing more that matters. */
void lsp_proc_drop_held(lsp_proc *p);
/* Detaches the process from its server and ends it: at once with kill_now,
 * else after the grace period unless it leaves by itself. */
void lsp_proc_release(lsp_proc *p, bool kill_now);
/* Detaches and ends it after shutdown and exit: within the grace period, or
 * at once at teardown, when the loop may not turn again. */
void lsp_proc_stop(lsp_proc *p, bool at_teardown);
/* The processes still in their grace period, killed and forgotten now. */
void lsp_procs_end(lsp_service *svc);
/* Starts the program; what is sent to it waits until lsp_server_open_gate,
 * but for initialize, initialized and the answers to its requests. */
lsp_proc *lsp_proc_spawn(lsp_server *s, const char *file, const lsp_server_config *config, ecp_error *err);
/* Sends initialize: its answer makes the server ready (lsp_server_ready) or gone. */
void lsp_server_initialize(lsp_server *s, const char *params);
/* Sends initialized, then lets through what waited for it. */
void lsp_server_initialized(lsp_server *s);
void lsp_server_open_gate(lsp_server *s);
/* params: params_len bytes of JSON followed by a NUL (a buf's data). Before the
 * server is ready, they wait behind the gate. */
void lsp_server_notify(lsp_server *s, const char *method, const char *params, size_t params_len);
lsp_request *lsp_server_request(lsp_server *s, const char *method, const char *params, lsp_result_cb cb, void *ctx);
void lsp_request_finish(lsp_request *r, int status, const ecp_error *err, const lsp_result *result);
/* Withdraws r: the server is told ($/cancelRequest) and r's callback gets ECP_ECANCELED. */
void lsp_request_withdraw(lsp_request *r);
unsigned lsp_request_timeout_ms(lsp_server *s);
void lsp_fail_pending(lsp_server *s, int status, const char *why);
void lsp_finish_starters(lsp_server *s, int status, const char *why);

/* requests.c */
/* Answers request, now. */
void lsp_server_request_in(lsp_server *s, ecp_peer_request *request, const json_doc *doc, json_ref method,
                           json_ref params);
/* The server's answer to r, which it completes. */
void lsp_request_answer_in(lsp_request *r, const json_doc *doc, json_ref result, json_ref error);

/* documents.c */
char *lsp_doc_uri(const char *uri);
lsp_doc *lsp_doc_find(lsp_service *self, const char *uri);
lsp_server *lsp_server_find(lsp_service *self, const char *language_id);
void lsp_send_did_open(lsp_server *s, const lsp_doc *d);
void lsp_doc_remove(lsp_service *self, lsp_doc *d);
/* Subscribes to the document service and opens the documents already open. */
void lsp_documents_follow(lsp_service *self);
/* Sends or takes back the documents whose folder's trust changed. */
void lsp_documents_trust_changed(lsp_service *self);
void lsp_documents_unfollow(lsp_service *self);

/* autostart.c */
/* Subscribes to document opens, lsp.enabled and trust; starts the servers of the documents already open. */
void lsp_autostart_init(lsp_service *self);
void lsp_autostart_free(lsp_service *self);
/* A document of language_id is open: starts its server when none exists, lsp.enabled is true and its
 * folder is trusted; a command that is not found is reported once per language and root. */
void lsp_autostart_document(lsp_service *self, const char *language_id);

/* diagnostics.c */
/* Replaces the diagnostics of uri with the Diagnostic[] at `diagnostics` of a server's message. */
void lsp_diag_publish(lsp_service *self, const lsp_server *from, const char *uri, const json_doc *doc,
                      json_ref diagnostics);
void lsp_diag_free_all(lsp_service *self);
void lsp_diag_clear(lsp_service *self, const char *uri);
void lsp_diag_clear_server(lsp_service *self, const char *language_id);
/* A non-negative integer, else 0. */
size_t lsp_json_size(const json_doc *doc, json_ref ref);

#endif
