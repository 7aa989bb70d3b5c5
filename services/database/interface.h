/* database: SQL databases a person works with from the editor.
 *
 * A connection is a saved config (a name, an engine, where the database is)
 * and, once connected, one open engine connection. Two engines serve the same
 * operations: SQLite, embedded (`type:"sqlite"`, `path` a file created on
 * demand or `:memory:`), and PostgreSQL through libpq (`type:"postgres"`).
 *
 * What it promises:
 * - Nothing blocks the loop. Every operation on an engine connection (opening
 *   it, a query, a page of rows, a schema read, closing it) is a job the
 *   service owns, on the long lane, and the jobs of one connection run one at
 *   a time in the order they were asked for: an engine connection is never
 *   used by two threads at once. Saved configs are written by jobs of the
 *   short lane; history goes through the store's own thread.
 * - Parameters are always bound by the engine, never spliced into SQL.
 * - A query answers its first page (`database.pageSize` rows, 1,000 unless a
 *   setting says otherwise) and keeps its cursor open on the connection, so the
 *   next page is the next rows; a page asked for out of order, or after
 *   another query used the connection, re-runs the statement and skips to the
 *   offset. No page holds more than `database.maxResultBytes` of rendered rows
 *   (16 MiB unless the setting says otherwise): the server never holds more
 *   than one page per connection. The service follows both settings itself
 *   (the session service's on_setting); a job uses the values of the moment
 *   it was asked for.
 * - A query stops when asked (database_query_cancel, ecp_job_cancel of its
 *   job, or the $/cancelRequest of the call its job serves), when its
 *   queryTimeout passes, or when the service shuts down. SQLite: the job's
 *   progress handler checks every 1,000 virtual-machine steps, and
 *   database_query_cancel also calls sqlite3_interrupt on the running
 *   statement; a statement waiting for another connection's lock (up to
 *   connectionTimeout) checks between slices of at most 20 ms. PostgreSQL:
 *   the job waits on the socket in slices of 50 ms and sends PQcancel itself
 *   within one slice (from the job's thread: PQcancel opens a connection of
 *   its own and would block the loop). A query still queued behind another
 *   never starts.
 * - readOnly is the engine's: SQLITE_OPEN_READONLY with an authorizer that
 *   refuses any statement that writes (sqlite3_stmt_readonly, plus ATTACH,
 *   VACUUM INTO and the like), PostgreSQL's default_transaction_read_only. No
 *   SQL is parsed to guess what it does.
 * - Every SQLite connection is hardened like the server's store (no
 *   extension loading, no fts3_tokenizer, defensive mode, no trust in the
 *   functions a schema names). A relative SQLite path names a file of the
 *   workspace and may not leave it, by ".." or a symbolic link, at create,
 *   update, test and connect.
 * - A password is never stored, logged or returned: a config names a secret
 *   (`passwordSecret`) of the session service, read when connecting.
 * - Configs persist as JSON: global ones in `<data-dir>/connections.json`,
 *   project ones in `<workspace>/.ecpd/connections.json`. History and
 *   favourites live in the server's store (table `database_history`).
 *
 * Slow calls are asynchronous: `database_<noun>_start` copies its arguments,
 * returns the job that does the work (NULL, with err, when refused at once:
 * an unknown connection or query id) and calls
 * cb once, on the loop, when it ends, or never when the service is freed
 * first. The job belongs to the service. An argument's `serve` (may be NULL)
 * is the call the job serves (ecp_job_serve, done by the service before the
 * job can start), so that $/cancelRequest and a disconnect cancel it; the
 * caller may ecp_job_cancel(job) until cb has run. Results are the service's,
 * valid during cb only.
 *
 * Errors are a negative ECP_* status with a message for a person; an
 * engine's failure also carries the engine's own words (database_failure).
 *
 * Threads: every function here runs on the loop thread, except a format
 * callback (below), which runs on the job's pool thread.
 */
#ifndef ECPD_DATABASE_INTERFACE_H
#define ECPD_DATABASE_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "job.h"
#include "log.h"
#include "shared.h"

struct store;
struct session_service;

typedef struct database_service database_service;

#define DATABASE_ID_MAX 64 /* bytes of a connection or query id, with its NUL */

/* ----- the service ------------------------------------------------------------------------ */

typedef struct database_service_options {
    ecp_pool *pool;                   /* required; borrowed */
    ecp_logger *log;                  /* may be NULL; borrowed */
    struct store *store;              /* required (history, favourites); borrowed */
    struct session_service *session;  /* may be NULL (no secrets, default settings); borrowed, outlives the service */
    const char *data_dir;             /* required (global configs); copied */
    const char *workspace;            /* may be NULL (no project configs); copied */
} database_service_options;

/* Loads the saved configs (a file that does not parse is logged and left
 * alone) and follows the `database.*` settings. NULL with err filled when
 * data_dir is missing. */
database_service *database_service_new(const database_service_options *options, ecp_error *err);

/* Cancels every query, closes every engine connection, releases everything.
 * No callback runs afterwards, except those of history calls already in the
 * store, which the store still answers. */
void database_service_free(database_service *self);

/* The workspace changed: project configs are read from the new one. */
void database_service_set_workspace(database_service *self, const char *workspace);

/* ----- values ------------------------------------------------------------------------------ */

/* A failure in the engine's own words: the SQLite extended code
 * ("SQLITE_CONSTRAINT_UNIQUE") or the SQLSTATE ("42601"), the 1-based
 * character position of a syntax error (0: none). */
typedef struct database_failure {
    int status;           /* a negative ECP_* status */
    char message[512];    /* for a person */
    char engine_code[40]; /* "" when the engine gave none */
    int position;
    char detail[512];     /* "" when none */
} database_failure;

typedef enum database_engine_type { DATABASE_SQLITE, DATABASE_POSTGRES } database_engine_type;

/* A saved connection. Every string is owned by whoever holds the struct
 * (database_config_clear frees them); NULL when absent. */
typedef struct database_config {
    char *id, *name;
    database_engine_type type;
    char *path;                        /* sqlite */
    char *host, *database, *username;  /* postgres */
    int port;
    char *password_secret;             /* a secret's key, never the password */
    bool ssl;                          /* postgres: sslmode=require (verify-full with ssl_ca) */
    bool ssl_reject_unauthorized;
    char *ssl_ca, *ssl_cert, *ssl_key; /* file paths */
    int64_t connection_timeout_ms, query_timeout_ms; /* 0: none */
    bool read_only;
    bool project;                      /* scope "project" */
} database_config;

void database_config_clear(database_config *c);
/* dst gets copies of src's strings. */
void database_config_copy(database_config *dst, const database_config *src);

typedef enum database_value_kind {
    DATABASE_NULL, DATABASE_INT, DATABASE_REAL, DATABASE_TEXT, DATABASE_BOOL, DATABASE_BLOB
} database_value_kind;

typedef struct database_value {
    database_value_kind kind;
    int64_t i;  /* INT, BOOL */
    double d;   /* REAL */
    char *s;    /* TEXT, BLOB: owned by the array's holder (database_values_free) */
    size_t len;
} database_value;

/* Frees n values and the array. */
void database_values_free(database_value *v, size_t n);
/* Appends the value's JSON text to out (a BLOB as PostgreSQL writes bytea: "\\x" and hex digits). */
void database_value_json(buf *out, const database_value *v);

typedef struct database_field {
    char *name;
    char *data_type;      /* the engine's type name; "" when none is declared */
    int64_t type_id;      /* PostgreSQL's type oid; SQLite's affinity code (SQLITE_INTEGER...) */
    bool nullable;
    bool primary_key;
    char *default_value;  /* NULL: none */
    int64_t origin_table; /* PostgreSQL: the column's table oid and number (0: none) */
    int origin_column;
} database_field;

/* One statement's answer: rows rendered as JSON objects keyed by field name,
 * joined with commas (without the brackets). */
typedef struct database_result {
    database_field *fields;
    size_t field_count;
    buf rows;
    size_t row_count;
    bool done;              /* the statement has no rows after these */
    int64_t total_rows;     /* -1 unknown */
    int64_t affected_rows;  /* -1 none */
    bool truncated;         /* the byte cap ended the page */
    database_value *cells;  /* row-major (row_count x field_count): schema reads only */
    buf notices;            /* the engine's notices as JSON strings joined with commas */
} database_result;

/* ----- connections (quick: never block) ----------------------------------------------------- */

typedef enum database_link_status {
    DATABASE_DISCONNECTED, DATABASE_CONNECTING, DATABASE_CONNECTED, DATABASE_ERROR
} database_link_status;

/* What a connection is now. Its pointers are the service's, valid until the
 * next call that changes connections. */
typedef struct database_connection_info {
    const database_config *config;
    database_link_status status;
    const char *error;     /* NULL when none */
    int64_t connected_at;  /* ms since the epoch; 0 when not connected */
} database_connection_info;

/* false when there is no connection id. */
bool database_connection_get(database_service *self, const char *id, database_connection_info *out);
/* Every connection of the scope (-1 both, 0 global, 1 project), in creation
 * order: fills up to cap of them and returns how many there are. (A list:
 * the connections of one person are few.) */
size_t database_connection_list(database_service *self, int scope, database_connection_info *out, size_t cap);

/* ----- connections (asynchronous) ------------------------------------------------------------- */

typedef struct database_connection_args {
    const char *connection_id; /* copied */
    ecp_call *serve;           /* may be NULL */
} database_connection_args;

/* failure: NULL on success; valid during the call only. */
typedef void (*database_done_cb)(void *ctx, int status, const database_failure *failure);

typedef struct database_config_args {
    const char *connection_id;      /* update: the connection; create: unused */
    const database_config *config;  /* copied; for an update, the whole new config (the caller merges) */
    ecp_call *serve;                /* may be NULL */
} database_config_args;

/* connection_id: the connection's (the service's, valid until it is deleted). */
typedef void (*database_config_cb)(void *ctx, int status, const ecp_error *err, const char *connection_id);

/* Saves a copy of config (config->id NULL: a new id), a relative SQLite path
 * made absolute within the workspace (checked off the loop: realpath). At
 * once: ECP_EINVAL for a project scope without a workspace, ECP_EEXIST for an
 * id taken. In cb: ECP_EINVAL for a path that leaves the workspace,
 * ECP_EEXIST for an id taken meanwhile. */
ecp_job *database_connection_create_start(database_service *self, const database_config_args *args,
                                          database_config_cb cb, void *ctx, ecp_error *err);
/* Replaces the config of args->connection_id; it takes effect at the next
 * connect. At once: ECP_EINVAL for an unknown id or a project scope without a
 * workspace. In cb: ECP_EINVAL for a path that leaves the workspace, an
 * engine changed while the connection is open, or a connection deleted
 * meanwhile. */
ecp_job *database_connection_update_start(database_service *self, const database_config_args *args,
                                          database_config_cb cb, void *ctx, ecp_error *err);

/* Opens the connection (again, when the server ended it), reading its
 * password from its secret first. */
ecp_job *database_connect_start(database_service *self, const database_connection_args *args, database_done_cb cb,
                                void *ctx, ecp_error *err);
/* Closes the connection once its queued work has run. */
ecp_job *database_disconnect_start(database_service *self, const database_connection_args *args,
                                   database_done_cb cb, void *ctx, ecp_error *err);
/* Forgets the config at once (and saves the rest) and closes the connection
 * once its queued work has run; cb says when it is closed. */
ecp_job *database_connection_delete_start(database_service *self, const database_connection_args *args,
                                          database_done_cb cb, void *ctx, ecp_error *err);

typedef struct database_test_args {
    const database_config *config; /* copied */
    ecp_call *serve;               /* may be NULL */
} database_test_args;

typedef struct database_test_result {
    double latency_ms;
    const char *server_version;
} database_test_result;

/* status 0 with result; ECP_EINVAL when the config was refused before
 * opening (a relative path that leaves the workspace); any other failure is
 * the test's answer. */
typedef void (*database_test_cb)(void *ctx, int status, const database_failure *failure,
                                 const database_test_result *result);
/* Opens config once, runs SELECT 1, closes it. */
ecp_job *database_connection_test_start(database_service *self, const database_test_args *args,
                                        database_test_cb cb, void *ctx, ecp_error *err);

/* ----- queries ------------------------------------------------------------------------------------ */

/* One statement's page of rows, as a query or a fetch answers it. */
typedef struct database_query_result {
    const char *query_id;
    const char *connection_id;
    const char *sql;
    const database_result *result;
    int64_t started_at, completed_at; /* ms since the epoch */
    double duration_ms;
} database_query_result;

/* Renders r into out, on the job's pool thread (so fctx must be safe to use
 * there), at the end of a successful query or fetch. */
typedef void (*database_query_format)(void *fctx, const database_query_result *r, buf *out);

/* result: NULL unless status is 0. formatted: what format wrote (NULL
 * without a format); a reference the service drops after cb, so take one
 * (ecp_shared_ref, or a call's ecp_call_reply_shared) to keep it. */
typedef void (*database_query_cb)(void *ctx, int status, const database_failure *failure,
                                  const database_query_result *result, ecp_shared *formatted);

typedef struct database_query_args {
    const char *connection_id;     /* copied */
    const char *sql;               /* copied */
    const database_value *params;  /* copied; may be NULL when param_count is 0 */
    size_t param_count;
    database_query_format format;  /* may be NULL */
    void *fctx;
    ecp_call *serve;               /* may be NULL */
} database_query_args;

/* Runs sql with params and answers its first page; the query gets an id
 * (result->query_id) that names it to fetch and cancel while it is among
 * the service's 64 most recent. */
ecp_job *database_query_start(database_service *self, const database_query_args *args, database_query_cb cb,
                              void *ctx, ecp_error *err);

typedef struct database_fetch_args {
    const char *query_id;          /* copied */
    size_t offset, limit;          /* limit 1 .. 100,000 */
    database_query_format format;  /* may be NULL */
    void *fctx;
    ecp_call *serve;               /* may be NULL */
} database_fetch_args;

/* Another page of a recent query's rows: from its open cursor when offset is
 * where the last page ended, else by running it again. ECP_EINVAL at once for
 * an unknown query id or a limit out of range. */
ecp_job *database_fetch_start(database_service *self, const database_fetch_args *args, database_query_cb cb,
                              void *ctx, ecp_error *err);

/* Stops a recent query: a queued one never starts, a running one is
 * interrupted (see the promises above); a statement of a transaction stops
 * the whole transaction, which rolls back. *running says whether it had not
 * ended yet. ECP_EINVAL naming the id when it is unknown. */
int database_query_cancel(database_service *self, const char *query_id, bool *running, ecp_error *err);

typedef struct database_statement_args {
    const char *sql;               /* copied */
    const database_value *params;  /* copied */
    size_t param_count;
    const char *label;             /* may be NULL; copied */
} database_statement_args;

typedef struct database_transaction_args {
    const char *connection_id;                 /* copied */
    const database_statement_args *statements; /* copied; at least one */
    size_t statement_count;
    ecp_call *serve;                           /* may be NULL */
} database_transaction_args;

typedef struct database_transaction_result {
    bool committed;
    /* When not committed: the statement that failed (statement_count when
     * COMMIT did), and its failure; statements before it have results. */
    size_t failed_index;
    const database_failure *failure;
    size_t statement_count;
    const database_query_result *statements;
    const database_failure *statement_failures; /* each statement's own (status 0: none) */
    const char *const *labels;                  /* each statement's label, NULL when none */
} database_transaction_result;

/* Runs the statements between BEGIN and COMMIT, rolling back at the first
 * failure. status is negative only when the transaction never began
 * (ECP_ECANCELED, or ECP_ESTATE when not connected); a rollback is a result. */
typedef void (*database_transaction_cb)(void *ctx, int status, const database_failure *failure,
                                        const database_transaction_result *result);
ecp_job *database_transaction_start(database_service *self, const database_transaction_args *args,
                                    database_transaction_cb cb, void *ctx, ecp_error *err);

/* ----- schema browsing ------------------------------------------------------------------------------- */

typedef enum database_schema_read {
    DATABASE_SCHEMAS,  /* parts[0]: name, is_system, owner */
    DATABASE_TABLES,   /* parts[0]: schema, name, type, row_count, size_bytes, comment */
    DATABASE_DESCRIBE, /* parts[0]: type, row_count, size_bytes, comment (one row);
                        * parts[1]: name, data_type, nullable, default_value, is_pk, type_id;
                        * parts[2]: name, column, ref_schema, ref_table, ref_column;
                        * parts[3]: name, is_unique, is_primary, columns (comma-joined) */
    DATABASE_DDL,      /* parts[0] as DESCRIBE's; parts[1]: ddl (one row) */
} database_schema_read;

typedef struct database_schema_args {
    database_schema_read read;
    const char *connection_id; /* copied */
    const char *schema;        /* copied; NULL: the engine's default ("main", "public") */
    const char *table;         /* DESCRIBE, DDL; copied */
    bool include_system;       /* SCHEMAS */
    ecp_call *serve;           /* may be NULL */
} database_schema_args;

typedef struct database_schema_result {
    database_schema_read read;
    const char *schema, *table;
    const database_result *parts[4]; /* NULL past the read's parts; every cell in `cells` */
} database_schema_result;

/* DESCRIBE and DDL fail with ECP_ENOTFOUND for a table that does not exist. */
typedef void (*database_schema_cb)(void *ctx, int status, const database_failure *failure,
                                   const database_schema_result *result);
ecp_job *database_schema_start(database_service *self, const database_schema_args *args, database_schema_cb cb,
                               void *ctx, ecp_error *err);

/* ----- history (in the store, whose thread runs these in order; none can be cancelled) ------------- */

typedef struct database_history_query {
    const char *connection_id; /* NULL: all; copied */
    const char *search;        /* NULL: none; copied */
    bool favorites_only;
    int64_t limit, offset;
} database_history_query;

typedef struct database_history_entry {
    int64_t id;
    const char *query_id, *connection_id, *sql;
    int64_t executed_at;   /* ms since the epoch */
    double duration_ms;    /* < 0: none */
    int64_t row_count;     /* < 0: none */
    const char *status;    /* "running", "success", "error", "cancelled", "skipped" */
    const char *error;     /* NULL: none */
    bool favorite;
} database_history_entry;

/* entries: newest first, the service's, valid during the call only. */
typedef void (*database_history_cb)(void *ctx, int status, const ecp_error *err,
                                    const database_history_entry *entries, size_t count);
void database_history_list(database_service *self, const database_history_query *query, database_history_cb cb,
                           void *ctx);

typedef void (*database_history_done_cb)(void *ctx, int status, const ecp_error *err);
/* Forgets the history of a connection (NULL: of all). */
void database_history_clear(database_service *self, const char *connection_id, database_history_done_cb cb,
                            void *ctx);
/* ECP_EINVAL naming the id for an unknown history entry. */
void database_history_favorite(database_service *self, int64_t history_id, bool favorite,
                               database_history_done_cb cb, void *ctx);

#endif
