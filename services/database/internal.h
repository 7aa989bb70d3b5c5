/* internal: what the database service's own files share.
 *
 * local.c keeps the configs, the connections and their queues of jobs, the
 * recent queries and the settings; sqlite.c and postgres.c are the engines
 * behind db_engine; common.c holds what both engines and local.c use;
 * history.c keeps history and favourites in the store. adapter.c sees none
 * of it: it calls interface.h.
 */
#ifndef ECPD_DATABASE_INTERNAL_H
#define ECPD_DATABASE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "interface.h"
#include "map.h"

#define DB_DEFAULT_PAGE_SIZE 1000
#define DB_DEFAULT_MAX_RESULT_BYTES (16u << 20)
#define DB_RECENT_QUERIES 64

/* ----- values and results (their types are in interface.h) ----------------------------- */

int db_fail(database_failure *f, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
database_value *db_values_copy(const database_value *v, size_t n);
void db_fields_free(database_field *f, size_t n);
void db_result_free(database_result *r);

/* ----- engines ------------------------------------------------------------------------- */

/* The limits a statement runs under, and how it learns it must stop. Pool thread. */
typedef struct db_run {
    ecp_job *job;          /* cancelled: stop */
    int64_t deadline_ms;   /* uv_hrtime()/1e6 clock; 0: none */
    size_t page_size;
    size_t max_bytes;
    bool keep_values;      /* fill database_result.cells as well */
} db_run;

bool db_run_should_stop(const db_run *run);

/* Begins field i of a row rendered as a JSON object: the comma before every
 * field but the first, the field's name and the colon; its value follows. */
void db_row_key(buf *out, const database_result *r, size_t i);

/* Appends one rendered row to the page, or holds it back in pending (and
 * marks the page truncated) when the page is full; false when held back. */
bool db_page_add(buf *pending, bool *has_pending, const db_run *run, database_result *out, const char *row,
                 size_t len);
int64_t db_now_ms(void);

/* One engine connection. Its functions run on the pool thread of the job that
 * owns the connection at the time, except interrupt (any thread). */
typedef struct db_handle db_handle;

typedef struct db_engine {
    const char *type_name;
    /* Opens; password may be NULL. */
    int (*open)(const database_config *config, const char *password, db_handle **out, database_failure *f);
    void (*close)(db_handle *h);
    const char *(*server_version)(db_handle *h);
    /* Runs sql with params and reads up to run->page_size rows after skipping
     * `skip` of them. The statement stays open as the handle's cursor when
     * rows remain (keep_cursor), to be continued by next_page. */
    int (*execute)(db_handle *h, const char *sql, const database_value *params, size_t param_count, size_t skip,
                   bool keep_cursor, const db_run *run, database_result *out, database_failure *f);
    /* The next page of the open cursor; ECP_ESTATE when there is none. */
    int (*next_page)(db_handle *h, const db_run *run, database_result *out, database_failure *f);
    void (*close_cursor)(db_handle *h);
    /* Stops the running statement soon, from any thread and without blocking;
     * NULL when only the job's own thread can (PostgreSQL: PQcancel opens a
     * connection, so the job sends it when it sees the cancel, within a
     * slice of its wait). */
    void (*interrupt)(db_handle *h);
    /* Transactions: begin, commit, rollback. */
    int (*exec_simple)(db_handle *h, const char *sql, const db_run *run, database_failure *f);
    /* Schema browsing: queries for the schemas, tables, columns... */
    const struct db_schema_sql *schema;
} db_engine;

extern const db_engine db_sqlite_engine;
extern const db_engine db_postgres_engine;

/* Schema reads as parameterised SQL, so that browsing runs through the same
 * execute as queries. Each names its columns; each engine has its own. */
typedef struct db_schema_sql {
    const char *schemas;      /* (include_system) -> name, is_system, owner */
    const char *tables;       /* (schema) -> schema, name, type, row_count, size_bytes, comment */
    const char *columns;      /* (schema, table) -> name, data_type, nullable, default_value, is_pk, type_id */
    const char *foreign_keys; /* (schema, table) -> name, column, ref_schema, ref_table, ref_column */
    const char *indexes;      /* (schema, table) -> name, is_unique, is_primary, columns (comma-joined) */
    const char *table_info;   /* (schema, table) -> type, row_count, size_bytes, comment */
    const char *ddl;          /* (schema, table) -> ddl */
} db_schema_sql;

/* ----- statements ------------------------------------------------------------------------ */

/* One statement of a query, a fetch or a transaction, and what became of it. */
typedef struct db_statement {
    char *sql;
    database_value *params;
    size_t param_count;
    char *label;
    /* results */
    int status;
    database_failure fail;
    database_result result;
    char query_id[DATABASE_ID_MAX];
    int64_t started_at, completed_at; /* ms since the epoch */
    double duration_ms;
} db_statement;

/* ----- configs (common.c, local.c) --------------------------------------------------------- */

/* Parses a connections.json; entries that do not parse are skipped. */
size_t db_configs_parse(const char *text, size_t len, bool project, database_config **out);
char *db_configs_render(database_config *const *configs, size_t count);

/* ----- history (history.c) -------------------------------------------------------------- */

void db_history_init(struct store *st);
void db_history_begin(struct store *st, const db_statement *s, const char *connection_id);
void db_history_end(struct store *st, const db_statement *s);
void db_history_list(struct store *st, const database_history_query *q, database_history_cb cb, void *ctx);
void db_history_clear(struct store *st, const char *connection_id, database_history_done_cb cb, void *ctx);
void db_history_favorite(struct store *st, int64_t id, bool favorite, database_history_done_cb cb, void *ctx);

/* ----- the service (local.c: configs and connections; ops.c: their jobs) ---------------- */

typedef struct db_conn {
    database_service *svc;
    database_config config;
    database_link_status status;
    char *error;
    int64_t connected_at;
    bool deleted;
    bool lost;                   /* the server ended the connection (SQLSTATE 08xxx, 57Pxx) */
    db_handle *handle;           /* touched only by the connection's running job */
    const db_engine *engine;
    ecp_job *running;
    ecp_job **queue;
    size_t queue_len, queue_cap;
    /* The open cursor's query and how many of its rows were served (job threads only). */
    char cursor_query[DATABASE_ID_MAX];
    size_t cursor_pos;
} db_conn;

/* A recent query, for fetch and cancel. (A ring searched by id: 64 entries.) */
typedef struct db_recent {
    char id[DATABASE_ID_MAX];
    db_conn *conn;
    char *sql;
    database_value *params;
    size_t param_count;
    ecp_job *job; /* while queued or running */
} db_recent;

struct database_service {
    ecp_pool *pool;
    ecp_logger *log;
    ecp_job_set *jobs;
    struct store *store;
    struct session_service *session;
    char *data_dir, *workspace;
    db_conn **conns; /* every connection, deleted ones until their queue ends */
    size_t conn_count, conn_cap;
    ecp_map *live;   /* the connections not deleted, by id */
    db_recent recent[DB_RECENT_QUERIES];
    size_t recent_next;
    uint64_t next_id;
    struct db_secret_wait *secret_waits; /* connects waiting for their password */
    uv_mutex_t save_lock;
    uint64_t save_generation, saved_generation[2];
    size_t page_size, max_bytes; /* database.pageSize, database.maxResultBytes */
};

int64_t db_wall_ms(void);
const db_engine *db_engine_of(database_engine_type type);
db_conn *db_conn_find(database_service *svc, const char *id);
/* Makes a relative SQLite path absolute within workspace (may be NULL: the
 * current directory); ECP_EINVAL naming the path when it would leave it (by
 * ".." or a symbolic link). It reads the file system (realpath): pool thread. */
int db_config_confine_path(const char *workspace, database_config *config, ecp_error *err);
/* Writes the scope's configs, off the loop. */
void db_configs_save(database_service *svc, bool project);
/* Frees a deleted connection whose last job has ended. */
void db_conn_release(database_service *svc, db_conn *c);
/* ops.c: forgets the secret reads in flight (the service is going). */
void db_ops_detach(database_service *svc);

#endif
