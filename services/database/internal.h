/* internal: what the database service's own files share.
 *
 * local.c keeps the configs, the connections and their queues of jobs, and
 * the recent queries; sqlite.c and postgres.c are the engines behind
 * db_engine; history.c keeps history and favourites in the store; adapter.c
 * turns params into these calls and results into JSON.
 */
#ifndef ECPD_DATABASE_INTERNAL_H
#define ECPD_DATABASE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "interface.h"

#define DB_DEFAULT_PAGE_SIZE 1000
#define DB_DEFAULT_MAX_RESULT_BYTES (16u << 20)
#define DB_RECENT_QUERIES 64
#define DB_ID_MAX 64

/* ----- failures ------------------------------------------------------------------------ */

/* A failure with the engine's own words: the SQLite extended code ("SQLITE_CONSTRAINT_UNIQUE")
 * or the SQLSTATE ("42601"), the 1-based character position of a syntax error (0: none). */
typedef struct db_failure {
    int status;
    char message[512];
    char engine_code[40];
    int position;
    char detail[512];
} db_failure;

int db_fail(db_failure *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ----- configs ------------------------------------------------------------------------- */

typedef enum db_type { DB_SQLITE, DB_POSTGRES } db_type;

typedef struct db_config {
    char *id, *name;
    db_type type;
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
} db_config;

void db_config_clear(db_config *c);
void db_config_copy(db_config *dst, const db_config *src);

/* ----- values and results -------------------------------------------------------------- */

typedef enum db_value_kind { DB_NULL, DB_INT, DB_REAL, DB_TEXT, DB_BOOL, DB_BLOB } db_value_kind;

typedef struct db_value {
    db_value_kind kind;
    int64_t i;
    double d;
    char *s; /* TEXT, BLOB: owned */
    size_t len;
} db_value;

void db_values_free(db_value *v, size_t n);
db_value *db_values_copy(const db_value *v, size_t n);

typedef struct db_field {
    char *name;
    char *data_type;  /* the engine's type name; "" when none is declared */
    int64_t type_id;  /* PostgreSQL's type oid; SQLite's affinity code (SQLITE_INTEGER...) */
    bool nullable;
    bool primary_key;
    char *default_value; /* NULL: none */
    int64_t origin_table; /* PostgreSQL: the column's table oid and number (0: none) */
    int origin_column;
} db_field;

void db_fields_free(db_field *f, size_t n);

/* One statement's answer: rows rendered as JSON objects keyed by field name,
 * joined with commas (without the brackets). */
typedef struct db_result {
    db_field *fields;
    size_t field_count;
    buf rows;
    size_t row_count;
    bool done;              /* the statement has no rows after these */
    int64_t total_rows;     /* -1 unknown */
    int64_t affected_rows;  /* -1 none */
    bool truncated;         /* the byte cap ended the page */
    db_value *cells;        /* row-major, when the run asked for values (schema reads) */
    buf notices;            /* the engine's notices as JSON strings joined with commas */
} db_result;

void db_result_free(db_result *r);

/* ----- engines ------------------------------------------------------------------------- */

/* The limits a statement runs under, and how it learns it must stop. Pool thread. */
typedef struct db_run {
    ecp_job *job;          /* cancelled: stop */
    int64_t deadline_ms;   /* uv_hrtime()/1e6 clock; 0: none */
    size_t page_size;
    size_t max_bytes;
    bool keep_values;      /* fill db_result.cells as well */
} db_run;

bool db_run_should_stop(const db_run *run);
int64_t db_now_ms(void);

/* One engine connection. Its functions run on the pool thread of the job that
 * owns the connection at the time, except interrupt (any thread). */
typedef struct db_handle db_handle;

typedef struct db_engine {
    const char *type_name;
    /* Opens; password may be NULL. */
    int (*open)(const db_config *config, const char *password, db_handle **out, db_failure *f);
    void (*close)(db_handle *h);
    const char *(*server_version)(db_handle *h);
    /* Runs sql with params and reads up to run->page_size rows after skipping
     * `skip` of them. The statement stays open as the handle's cursor when
     * rows remain (keep_cursor), to be continued by next_page. */
    int (*execute)(db_handle *h, const char *sql, const db_value *params, size_t param_count, size_t skip,
                   bool keep_cursor, const db_run *run, db_result *out, db_failure *f);
    /* The next page of the open cursor; ECP_ESTATE when there is none. */
    int (*next_page)(db_handle *h, const db_run *run, db_result *out, db_failure *f);
    void (*close_cursor)(db_handle *h);
    /* Stops the running statement soon; any thread. */
    void (*interrupt)(db_handle *h);
    /* Transactions: begin, commit, rollback. */
    int (*exec_simple)(db_handle *h, const char *sql, const db_run *run, db_failure *f);
    /* Schema browsing: queries for the schemas, tables, columns... */
    const struct db_schema_sql *schema;
} db_engine;

extern const db_engine db_sqlite_engine;
extern const db_engine db_postgres_engine;

/* Schema reads as parameterised SQL, so that browsing runs through the same
 * execute as queries. Each names its columns; see schema.c. */
typedef struct db_schema_sql {
    const char *schemas;      /* (include_system) -> name, is_system, owner */
    const char *tables;       /* (schema) -> schema, name, type, row_count, size_bytes, comment */
    const char *columns;      /* (schema, table) -> name, data_type, nullable, default_value, is_pk, type_id */
    const char *foreign_keys; /* (schema, table) -> name, column, ref_schema, ref_table, ref_column */
    const char *indexes;      /* (schema, table) -> name, is_unique, is_primary, columns (comma-joined) */
    const char *table_info;   /* (schema, table) -> type, row_count, size_bytes, comment */
    const char *ddl;          /* (schema, table) -> ddl */
} db_schema_sql;

/* The JSON text of a value (for rendering rows). */
void db_json_value(buf *out, const db_value *v);

/* ----- the service: connections and their operations ------------------------------------ */

typedef struct db_conn db_conn;

typedef enum db_status { DB_DISCONNECTED, DB_CONNECTING, DB_CONNECTED, DB_ERROR } db_status;

typedef struct db_conn_info {
    const db_config *config;
    db_status status;
    const char *error;     /* NULL when none */
    int64_t connected_at;  /* ms since the epoch; 0 when not connected */
} db_conn_info;

db_conn *db_conn_find(database_service *svc, const char *id);
void db_conn_info_get(db_conn *conn, db_conn_info *out);
/* Every connection of the scope (-1 both, 0 global, 1 project), in creation order. */
size_t db_conn_list(database_service *svc, int scope, db_conn **out, size_t cap);

/* Adds a config (config->id NULL: a new id). Copies it. */
/* Makes a relative SQLite path absolute within the workspace; ECP_EINVAL naming the path when it
 * would leave the workspace (by ".." or a symbolic link). */
int db_config_confine_path(database_service *svc, db_config *config, ecp_error *err);
int db_conn_create(database_service *svc, const db_config *config, const char **id_out, ecp_error *err);
/* Replaces the config (the adapter merged the partial update). Takes effect at the next connect. */
int db_conn_update(database_service *svc, db_conn *conn, const db_config *config, ecp_error *err);
/* Forgets the config and closes the connection once its queued work has run. */
void db_conn_delete(database_service *svc, db_conn *conn);

typedef enum db_op_kind {
    DB_OP_CONNECT, DB_OP_TEST, DB_OP_DISCONNECT, DB_OP_QUERY, DB_OP_FETCH, DB_OP_TRANSACTION,
    DB_OP_SCHEMAS, DB_OP_TABLES, DB_OP_DESCRIBE, DB_OP_DDL,
} db_op_kind;

typedef struct db_statement {
    char *sql;
    db_value *params;
    size_t param_count;
    char *label;
    /* results */
    int status;
    db_failure fail;
    db_result result;
    char query_id[DB_ID_MAX];
    int64_t started_at, completed_at; /* ms since the epoch */
    double duration_ms;
} db_statement;

/* One operation on a connection: the adapter fills the inputs, the service runs
 * it as a job in the connection's queue and hands it back to `answer` on the
 * loop, which answers the call. */
typedef struct db_op db_op;
typedef void (*db_answer_fn)(db_op *op, ecp_call *call);

struct db_op {
    db_op_kind kind;
    database_service *svc;
    db_conn *conn;            /* NULL for a test */
    db_config config;         /* DB_OP_TEST (and DB_OP_CONNECT's copy) */
    char *password;           /* read from the secret; wiped when freed */
    db_statement *statements; /* query: 1, transaction: n */
    size_t statement_count;
    size_t offset, limit;     /* fetch */
    char fetch_query[DB_ID_MAX];
    char *schema, *table;
    bool include_system;
    /* results */
    int status;
    db_failure fail;
    db_result parts[5];       /* schema reads: see schema.c */
    char *server_version;
    double latency_ms;
    bool committed;
    size_t failed_index;      /* transaction: the statement that failed */
    /* What the job needs of the settings and the connection's config, copied on
     * the loop at submission: the config may change while the job runs. */
    size_t page_size, max_bytes;
    int64_t query_timeout_ms;
    char conn_id[DB_ID_MAX];
    db_answer_fn answer;
    void *answer_ctx;
};

db_op *db_op_new(database_service *svc, db_op_kind kind, db_conn *conn);
void db_op_discard(db_op *op); /* one that was never submitted */
/* Runs op (taking it) for call; answer runs on the loop when it ends. An op on
 * a connection that is not connected fails with ECP_ESTATE, except connect. */
void db_op_submit(db_op *op, ecp_call *call, db_answer_fn answer, void *answer_ctx);
/* Cancels a recent query; false when the id is unknown. *running says whether it ran. */
bool db_query_cancel(database_service *svc, const char *query_id, bool *running);
/* Whether a recent query is known (for fetchRows' params check) and its connection. */
db_conn *db_query_conn(database_service *svc, const char *query_id);
/* Copies a recent query's sql, params and id into out; false when unknown. */
bool db_query_copy(database_service *svc, const char *query_id, db_statement *out);

/* ----- history (history.c) -------------------------------------------------------------- */

struct store *db_service_store(database_service *svc);
void db_history_init(struct store *st);
void db_history_begin(struct store *st, const db_statement *s, const char *connection_id);
void db_history_end(struct store *st, const db_statement *s);

typedef struct db_history_query {
    char *connection_id; /* NULL: all */
    char *search;        /* NULL: none */
    bool favorites_only;
    int64_t limit, offset;
} db_history_query;
/* entries_json: the JSON array of QueryHistoryEntry. */
typedef void (*db_history_cb)(void *ctx, int status, const ecp_error *err, const char *entries_json);
void db_history_list(struct store *st, const db_history_query *q, db_history_cb cb, void *ctx);
typedef void (*db_history_status_cb)(void *ctx, int status, const ecp_error *err);
void db_history_clear(struct store *st, const char *connection_id, db_history_status_cb cb, void *ctx);
/* ECP_ENOTFOUND for an unknown history id. */
void db_history_favorite(struct store *st, int64_t id, bool favorite, db_history_status_cb cb, void *ctx);

/* ----- configs on disk (configs.c) ------------------------------------------------------- */

/* Parses a connections.json; entries that do not parse are skipped. */
size_t db_configs_parse(const char *text, size_t len, bool project, db_config **out);
char *db_configs_render(db_config *const *configs, size_t count);

#endif
