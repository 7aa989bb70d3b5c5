/* sqlite: the embedded engine.
 *
 * One sqlite3 connection per database connection, opened and used only by the
 * connection's jobs (one at a time). A running statement checks, every few
 * thousand virtual-machine steps, whether its job was cancelled or its
 * deadline passed, and stops itself: that is how $/cancelRequest,
 * database/cancel and queryTimeout reach it. database/cancel also calls
 * sqlite3_interrupt, which stops a statement between those checks. A
 * statement waiting for another connection's lock (up to connectionTimeout)
 * waits in short slices and checks the same between them: SQLite's own
 * busy_timeout would sleep through a cancel.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "json_writer.h"
#include "store/interface.h"

struct db_handle {
    sqlite3 *db;
    const db_run *run;   /* the statement running now, for the progress handler */
    sqlite3_stmt *cursor;
    buf pending;         /* a row read but left out of the last page by the byte cap */
    bool has_pending;
    size_t columns;
    bool read_only;
    int64_t busy_timeout_ms; /* the longest a statement waits for a lock */
    int64_t busy_since_ms;
    bool busy_stopped;       /* the wait for a lock ended because the run must stop */
    char refused[160];  /* why the authorizer refused the last statement ("" when it did not) */
    bool refused_write; /* ... because the connection is readOnly */
};

static const struct {
    int code;
    const char *name;
} code_names[] = {
    {SQLITE_CONSTRAINT_UNIQUE, "SQLITE_CONSTRAINT_UNIQUE"},
    {SQLITE_CONSTRAINT_PRIMARYKEY, "SQLITE_CONSTRAINT_PRIMARYKEY"},
    {SQLITE_CONSTRAINT_NOTNULL, "SQLITE_CONSTRAINT_NOTNULL"},
    {SQLITE_CONSTRAINT_FOREIGNKEY, "SQLITE_CONSTRAINT_FOREIGNKEY"},
    {SQLITE_CONSTRAINT_CHECK, "SQLITE_CONSTRAINT_CHECK"},
    {SQLITE_READONLY_DBMOVED, "SQLITE_READONLY_DBMOVED"},
    {SQLITE_CANTOPEN_ISDIR, "SQLITE_CANTOPEN_ISDIR"},
    {SQLITE_AUTH, "SQLITE_AUTH"},
    {SQLITE_ERROR, "SQLITE_ERROR"},
    {SQLITE_INTERNAL, "SQLITE_INTERNAL"},
    {SQLITE_PERM, "SQLITE_PERM"},
    {SQLITE_ABORT, "SQLITE_ABORT"},
    {SQLITE_BUSY, "SQLITE_BUSY"},
    {SQLITE_LOCKED, "SQLITE_LOCKED"},
    {SQLITE_NOMEM, "SQLITE_NOMEM"},
    {SQLITE_READONLY, "SQLITE_READONLY"},
    {SQLITE_INTERRUPT, "SQLITE_INTERRUPT"},
    {SQLITE_IOERR, "SQLITE_IOERR"},
    {SQLITE_CORRUPT, "SQLITE_CORRUPT"},
    {SQLITE_FULL, "SQLITE_FULL"},
    {SQLITE_CANTOPEN, "SQLITE_CANTOPEN"},
    {SQLITE_CONSTRAINT, "SQLITE_CONSTRAINT"},
    {SQLITE_MISMATCH, "SQLITE_MISMATCH"},
    {SQLITE_RANGE, "SQLITE_RANGE"},
    {SQLITE_NOTADB, "SQLITE_NOTADB"},
    {SQLITE_TOOBIG, "SQLITE_TOOBIG"},
};

static void code_name(int code, char *out, size_t cap)
{
    for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
        if (code_names[i].code == code) {
            snprintf(out, cap, "%s", code_names[i].name);
            return;
        }
    for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
        if (code_names[i].code == (code & 0xff)) {
            snprintf(out, cap, "%s_%d", code_names[i].name, code);
            return;
        }
    snprintf(out, cap, "SQLITE_%d", code);
}

static int fail_sqlite(db_handle *h, int rc, database_failure *f, const char *what)
{
    int ext = h && h->db ? sqlite3_extended_errcode(h->db) : rc;
    if ((ext & 0xff) != (rc & 0xff))
        ext = rc;
    int status = ECP_EIO;
    int primary = rc & 0xff;
    if (primary == SQLITE_BUSY && h && h->busy_stopped)
        primary = SQLITE_INTERRUPT; /* gave up the lock wait to stop */
    switch (primary) {
    case SQLITE_INTERRUPT: status = (h && h->run && h->run->job && ecp_job_cancelled(h->run->job)) ? ECP_ECANCELED
                                    : (h && h->run && h->run->deadline_ms && db_now_ms() >= h->run->deadline_ms)
                                        ? ECP_ERANGE
                                        : ECP_ECANCELED;
        break;
    case SQLITE_READONLY: status = ECP_EREADONLY; break;
    case SQLITE_CANTOPEN: status = ECP_ENOTFOUND; break;
    case SQLITE_NOMEM: status = ECP_ENOMEM; break;
    case SQLITE_TOOBIG: status = ECP_ETOOBIG; break;
    default: break;
    }
    const char *msg = h && h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc);
    /* The authorizer's refusal (SQLITE_AUTH, or SQLITE_ERROR for a function) says what it refused. */
    bool refused = h && h->refused[0];
    if (refused) {
        msg = h->refused;
        status = h->refused_write ? ECP_EREADONLY : ECP_EACCES;
    }
    if (status == ECP_ERANGE)
        db_fail(f, status, "%s: the query ran past its queryTimeout", what);
    else if (status == ECP_ECANCELED)
        db_fail(f, status, "%s: cancelled", what);
    else
        db_fail(f, status, "%s: %s", what, msg);
    code_name(ext, f->engine_code, sizeof f->engine_code);
    if (refused) /* a readOnly refusal reads as any write to a read-only file */
        snprintf(f->engine_code, sizeof f->engine_code, "%s", h->refused_write ? "SQLITE_READONLY" : "SQLITE_AUTH");
    int offset = h && h->db ? sqlite3_error_offset(h->db) : -1;
    f->position = offset >= 0 ? offset + 1 : 0;
    return status;
}

static int progress(void *ctx)
{
    db_handle *h = ctx;
    return h->run && db_run_should_stop(h->run);
}

/* Another connection holds the lock: wait in slices of at most 20 ms, and
 * give up when the run must stop or busy_timeout_ms has passed (0: SQLITE_BUSY). */
static int busy_wait(void *ctx, int count)
{
    db_handle *h = ctx;
    int64_t now = db_now_ms();
    if (count == 0)
        h->busy_since_ms = now;
    if (h->run && db_run_should_stop(h->run)) {
        h->busy_stopped = true;
        return 0;
    }
    int64_t left = h->busy_since_ms + h->busy_timeout_ms - now;
    if (left <= 0)
        return 0;
    int slice = count < 5 ? 1 << count : 20;
    sqlite3_sleep(left < slice ? (int)left : slice);
    return 1;
}

/* ----- readOnly ----------------------------------------------------------------------------- */

/* PRAGMAs that only answer, even when given an argument (a table's name, a row limit). */
static const char *const answering_pragmas[] = {
    "table_info",       "table_xinfo",      "table_list",     "index_info",      "index_xinfo",
    "index_list",       "foreign_key_list", "foreign_key_check", "integrity_check", "quick_check",
    "database_list",    "collation_list",   "function_list",  "module_list",     "pragma_list",
    "compile_options",
};

/* PRAGMAs that write even without an argument. */
static const char *const acting_pragmas[] = {"optimize", "wal_checkpoint", "incremental_vacuum", "shrink_memory"};

static bool in_list(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (name && sqlite3_stricmp(name, list[i]) == 0)
            return true;
    return false;
}

/* What a readOnly connection refuses, by authorizer action code. */
static const char *write_action(int action)
{
    switch (action) {
    case SQLITE_INSERT: return "INSERT";
    case SQLITE_UPDATE: return "UPDATE";
    case SQLITE_DELETE: return "DELETE";
    case SQLITE_ATTACH: return "ATTACH";
    case SQLITE_DETACH: return "DETACH";
    case SQLITE_ALTER_TABLE: return "ALTER TABLE";
    case SQLITE_REINDEX: return "REINDEX";
    case SQLITE_ANALYZE: return "ANALYZE";
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX: return "CREATE INDEX";
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_TABLE: return "CREATE TABLE";
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER: return "CREATE TRIGGER";
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW: return "CREATE VIEW";
    case SQLITE_CREATE_VTABLE: return "CREATE VIRTUAL TABLE";
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX: return "DROP INDEX";
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE: return "DROP TABLE";
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER: return "DROP TRIGGER";
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW: return "DROP VIEW";
    case SQLITE_DROP_VTABLE: return "DROP VIRTUAL TABLE";
    default: return NULL;
    }
}

/* SQLITE_OPEN_READONLY alone still lets a statement write other files
 * (ATTACH creates one, VACUUM INTO writes a copy anywhere) and change the
 * connection (temp tables, journal_mode): a readOnly connection is refused
 * every statement that writes anything, before it runs. Every connection is
 * refused fts3_tokenizer: with one argument it hands the client an address
 * in the server (the two-argument form is off: store_harden_connection). */
static int authorizer(void *ctx, int action, const char *arg1, const char *arg2, const char *db_name,
                      const char *trigger)
{
    (void)db_name;
    (void)trigger;
    db_handle *h = ctx;
    if (action == SQLITE_FUNCTION && arg2 && !sqlite3_stricmp(arg2, "fts3_tokenizer")) {
        h->refused_write = false;
        snprintf(h->refused, sizeof h->refused, "fts3_tokenizer refused: it reads and sets function pointers");
        return SQLITE_DENY;
    }
    if (!h->read_only)
        return SQLITE_OK;
    const char *what = write_action(action);
    if ((action == SQLITE_INSERT || action == SQLITE_UPDATE || action == SQLITE_DELETE) && arg1 &&
        (!sqlite3_stricmp(arg1, "sqlite_master") || !sqlite3_stricmp(arg1, "sqlite_temp_master")))
        return SQLITE_OK; /* the CREATE, DROP or ALTER that writes it is asked next, and refused by its name */
    if (what) {
        h->refused_write = true;
        snprintf(h->refused, sizeof h->refused, "readOnly connection: %s refused%s%s", what,
                 arg1 && action != SQLITE_ATTACH ? " on " : "", arg1 && action != SQLITE_ATTACH ? arg1 : "");
        return SQLITE_DENY;
    }
    if (action == SQLITE_PRAGMA &&
        (in_list(arg1, acting_pragmas, sizeof acting_pragmas / sizeof acting_pragmas[0]) ||
         (arg2 && !in_list(arg1, answering_pragmas, sizeof answering_pragmas / sizeof answering_pragmas[0])))) {
        h->refused_write = true;
        snprintf(h->refused, sizeof h->refused, "readOnly connection: PRAGMA %s refused (it would write or change "
                 "the connection)", arg1 ? arg1 : "");
        return SQLITE_DENY;
    }
    return SQLITE_OK;
}

/* After the authorizer, what SQLite itself knows writes: VACUUM (INTO a file
 * too) and the journal mode have no authorizer action of their own. */
static int refuse_writing_statement(db_handle *h, sqlite3_stmt *st, database_failure *f)
{
    if (!h->read_only || sqlite3_stmt_readonly(st))
        return 0;
    const char *sql = sqlite3_sql(st);
    while (*sql == ' ' || *sql == '\t' || *sql == '\n' || *sql == '\r')
        sql++;
    size_t word = 0;
    while (word < 40 && ((sql[word] >= 'a' && sql[word] <= 'z') || (sql[word] >= 'A' && sql[word] <= 'Z')))
        word++;
    if (word == 6 && sqlite3_strnicmp(sql, "PRAGMA", 6) == 0)
        return 0; /* judged by the authorizer: "PRAGMA journal_mode" only reads, yet is not readonly to SQLite */
    int status = db_fail(f, ECP_EREADONLY, "the query failed: readOnly connection: %.*s refused (it would write)",
                         (int)word, sql);
    snprintf(f->engine_code, sizeof f->engine_code, "SQLITE_READONLY");
    return status;
}

static int sq_open(const database_config *config, const char *password, db_handle **out, database_failure *f)
{
    (void)password;
    db_handle *h = xcalloc(1, sizeof *h);
    buf_init(&h->pending);
    int flags = (config->read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                SQLITE_OPEN_FULLMUTEX;
    const char *path = config->path && config->path[0] ? config->path : ":memory:";
    int rc = sqlite3_open_v2(path, &h->db, flags, NULL);
    if (rc == SQLITE_OK)
        rc = store_harden_connection(h->db);
    if (rc == SQLITE_OK) {
        h->read_only = config->read_only;
        rc = sqlite3_set_authorizer(h->db, authorizer, h);
    }
    if (rc == SQLITE_OK) {
        sqlite3_extended_result_codes(h->db, 1);
        h->busy_timeout_ms = config->connection_timeout_ms > 0 ? config->connection_timeout_ms : 2000;
        sqlite3_busy_handler(h->db, busy_wait, h);
        sqlite3_progress_handler(h->db, 1000, progress, h);
        /* Opening is lazy: read the schema now, so a file that is no database fails here. */
        rc = sqlite3_exec(h->db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
    }
    if (rc != SQLITE_OK) {
        int status = fail_sqlite(h, rc, f, "could not open the database");
        sqlite3_close(h->db);
        buf_free(&h->pending);
        free(h);
        return status;
    }
    *out = h;
    return 0;
}

static void sq_close_cursor(db_handle *h)
{
    if (h->cursor)
        sqlite3_finalize(h->cursor);
    h->cursor = NULL;
    h->has_pending = false;
    buf_clear(&h->pending);
}

static void sq_close(db_handle *h)
{
    if (!h)
        return;
    sq_close_cursor(h);
    sqlite3_close_v2(h->db);
    buf_free(&h->pending);
    free(h);
}

static const char *sq_version(db_handle *h)
{
    (void)h;
    return sqlite3_libversion();
}

static void sq_interrupt(db_handle *h) { sqlite3_interrupt(h->db); }

static int bind_params(db_handle *h, sqlite3_stmt *st, const database_value *params, size_t n, database_failure *f)
{
    int expected = sqlite3_bind_parameter_count(st);
    if ((size_t)expected != n)
        return db_fail(f, ECP_EINVAL, "params: the statement takes %d parameter%s, %zu given", expected,
                       expected == 1 ? "" : "s", n);
    for (size_t i = 0; i < n; i++) {
        int rc, idx = (int)i + 1;
        const database_value *v = &params[i];
        switch (v->kind) {
        case DATABASE_NULL: rc = sqlite3_bind_null(st, idx); break;
        case DATABASE_INT: rc = sqlite3_bind_int64(st, idx, v->i); break;
        case DATABASE_BOOL: rc = sqlite3_bind_int(st, idx, v->i != 0); break;
        case DATABASE_REAL: rc = sqlite3_bind_double(st, idx, v->d); break;
        case DATABASE_BLOB: rc = sqlite3_bind_blob64(st, idx, v->s, v->len, SQLITE_TRANSIENT); break;
        default: rc = sqlite3_bind_text64(st, idx, v->s, v->len, SQLITE_TRANSIENT, SQLITE_UTF8); break;
        }
        if (rc != SQLITE_OK)
            return fail_sqlite(h, rc, f, "could not bind a parameter");
    }
    return 0;
}

static void read_fields(db_handle *h, sqlite3_stmt *st, database_result *out)
{
    int n = sqlite3_column_count(st);
    out->field_count = (size_t)n;
    out->fields = xcalloc(n ? (size_t)n : 1, sizeof *out->fields);
    for (int i = 0; i < n; i++) {
        database_field *fd = &out->fields[i];
        fd->name = xstrdup(sqlite3_column_name(st, i) ? sqlite3_column_name(st, i) : "");
        const char *decl = sqlite3_column_decltype(st, i);
        fd->data_type = xstrdup(decl ? decl : "");
        fd->nullable = true;
        /* The declared type's affinity, as SQLite's fundamental type codes. */
        fd->type_id = SQLITE_NULL;
        if (decl) {
            char up[64];
            size_t k = 0;
            for (; decl[k] && k < sizeof up - 1; k++)
                up[k] = (char)(decl[k] >= 'a' && decl[k] <= 'z' ? decl[k] - 32 : decl[k]);
            up[k] = '\0';
            fd->type_id = strstr(up, "INT")                                                        ? SQLITE_INTEGER
                          : (strstr(up, "CHAR") || strstr(up, "CLOB") || strstr(up, "TEXT"))      ? SQLITE_TEXT
                          : (strstr(up, "BLOB"))                                                    ? SQLITE_BLOB
                          : (strstr(up, "REAL") || strstr(up, "FLOA") || strstr(up, "DOUB"))      ? SQLITE_FLOAT
                                                                                                    : SQLITE_NULL;
        }
        const char *table = sqlite3_column_table_name(st, i), *column = sqlite3_column_origin_name(st, i);
        const char *schema = sqlite3_column_database_name(st, i);
        if (table && column) {
            int notnull = 0, pk = 0;
            if (sqlite3_table_column_metadata(h->db, schema, table, column, NULL, NULL, &notnull, &pk, NULL) ==
                SQLITE_OK) {
                fd->nullable = !notnull;
                fd->primary_key = pk != 0;
            }
        }
    }
}

static void cell_value(sqlite3_stmt *st, int i, database_value *v)
{
    memset(v, 0, sizeof *v);
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER: v->kind = DATABASE_INT; v->i = sqlite3_column_int64(st, i); break;
    case SQLITE_FLOAT: v->kind = DATABASE_REAL; v->d = sqlite3_column_double(st, i); break;
    case SQLITE_TEXT:
        v->kind = DATABASE_TEXT;
        v->s = (char *)sqlite3_column_text(st, i);
        v->len = (size_t)sqlite3_column_bytes(st, i);
        break;
    case SQLITE_BLOB:
        v->kind = DATABASE_BLOB;
        v->s = (char *)sqlite3_column_blob(st, i);
        v->len = (size_t)sqlite3_column_bytes(st, i);
        break;
    default: v->kind = DATABASE_NULL; break;
    }
}

static void render_row(sqlite3_stmt *st, const database_result *r, buf *out)
{
    buf_push(out, '{');
    for (size_t i = 0; i < r->field_count; i++) {
        db_row_key(out, r, i);
        database_value v;
        cell_value(st, (int)i, &v);
        database_value_json(out, &v);
    }
    buf_push(out, '}');
}

static void keep_values(sqlite3_stmt *st, database_result *r)
{
    size_t n = r->field_count;
    r->cells = xrealloc(r->cells, (r->row_count + 1) * (n ? n : 1) * sizeof *r->cells);
    for (size_t i = 0; i < n; i++) {
        database_value v;
        cell_value(st, (int)i, &v);
        database_value *c = &r->cells[r->row_count * n + i];
        *c = v;
        if (v.kind == DATABASE_TEXT || v.kind == DATABASE_BLOB) {
            c->s = xmalloc(v.len + 1);
            memcpy(c->s, v.s, v.len);
            c->s[v.len] = '\0';
        }
    }
}

static bool page_add(db_handle *h, const db_run *run, database_result *out, const char *row, size_t len)
{
    return db_page_add(&h->pending, &h->has_pending, run, out, row, len);
}

/* Steps the cursor into out until the page is full or the rows end. */
static int read_page(db_handle *h, const db_run *run, database_result *out, database_failure *f)
{
    sqlite3_stmt *st = h->cursor;
    buf row = BUF_INIT;
    int status = 0;
    if (h->has_pending) {
        h->has_pending = false;
        page_add(h, run, out, h->pending.data, h->pending.len);
        buf_clear(&h->pending);
    }
    h->run = run;
    h->busy_stopped = false;
    while (out->row_count < run->page_size) {
        int rc = sqlite3_step(st);
        if (rc == SQLITE_DONE) {
            out->done = true;
            break;
        }
        if (rc != SQLITE_ROW) {
            status = fail_sqlite(h, rc, f, "the query failed");
            break;
        }
        buf_clear(&row);
        render_row(st, out, &row);
        if (out->row_count == 0 && row.len > run->max_bytes) {
            status = db_fail(f, ECP_ETOOBIG, "a row of %zu bytes exceeds database.maxResultBytes (%zu)", row.len,
                             run->max_bytes);
            break;
        }
        if (run->keep_values)
            keep_values(st, out);
        if (!page_add(h, run, out, row.data, row.len))
            break;
    }
    h->run = NULL;
    buf_free(&row);
    return status;
}

static int sq_execute(db_handle *h, const char *sql, const database_value *params, size_t param_count, size_t skip,
                      bool keep_cursor, const db_run *run, database_result *out, database_failure *f)
{
    sq_close_cursor(h);
    const char *tail = sql;
    sqlite3_stmt *st = NULL;
    int status = 0;
    h->run = run;
    h->busy_stopped = false;
    /* Every statement but the last runs to its end; the last one is the answer. */
    for (;;) {
        const char *next = NULL;
        h->refused[0] = '\0';
        int rc = sqlite3_prepare_v2(h->db, tail, -1, &st, &next);
        if (rc != SQLITE_OK) {
            status = fail_sqlite(h, rc, f, "the query failed");
            break;
        }
        if (!st) { /* only whitespace or comments left */
            if (tail == sql)
                status = db_fail(f, ECP_EINVAL, "sql: no statement");
            break;
        }
        if ((status = refuse_writing_statement(h, st, f)) < 0)
            break;
        const char *rest = next;
        while (*rest == ' ' || *rest == '\n' || *rest == '\t' || *rest == '\r' || *rest == ';')
            rest++;
        if (*rest == '\0') {
            if ((status = bind_params(h, st, params, param_count, f)) < 0)
                break;
            read_fields(h, st, out);
            h->cursor = st;
            st = NULL;
            int changes_before = sqlite3_total_changes(h->db);
            for (size_t i = 0; i < skip && status == 0; i++) {
                int src = sqlite3_step(h->cursor);
                if (src == SQLITE_DONE)
                    break;
                if (src != SQLITE_ROW)
                    status = fail_sqlite(h, src, f, "the query failed");
            }
            if (status == 0)
                status = read_page(h, run, out, f);
            if (status == 0 && out->done) {
                out->total_rows = (int64_t)(skip + out->row_count);
                if (sqlite3_column_count(h->cursor) == 0 || !sqlite3_stmt_readonly(h->cursor))
                    out->affected_rows =
                        sqlite3_total_changes(h->db) != changes_before ? sqlite3_changes64(h->db) : 0;
            }
            break;
        }
        if (param_count) {
            status = db_fail(f, ECP_EINVAL, "params: bound parameters need a single statement");
            break;
        }
        do
            rc = sqlite3_step(st);
        while (rc == SQLITE_ROW);
        if (rc != SQLITE_DONE) {
            status = fail_sqlite(h, rc, f, "the query failed");
            break;
        }
        sqlite3_finalize(st);
        st = NULL;
        tail = next;
    }
    if (st)
        sqlite3_finalize(st);
    h->run = NULL;
    if (status < 0 || out->done || !keep_cursor)
        sq_close_cursor(h);
    return status;
}

static int sq_next_page(db_handle *h, const db_run *run, database_result *out, database_failure *f)
{
    if (!h->cursor)
        return ECP_ESTATE;
    read_fields(h, h->cursor, out);
    int status = read_page(h, run, out, f);
    if (status < 0 || out->done)
        sq_close_cursor(h);
    return status;
}

static int sq_exec_simple(db_handle *h, const char *sql, const db_run *run, database_failure *f)
{
    sq_close_cursor(h);
    h->run = run;
    h->busy_stopped = false;
    h->refused[0] = '\0';
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
    h->run = NULL;
    return rc == SQLITE_OK ? 0 : fail_sqlite(h, rc, f, sql);
}

static const db_schema_sql sqlite_schema_sql = {
    .schemas = "SELECT name, name = 'temp' AS is_system, NULL AS owner FROM pragma_database_list"
               " WHERE ?1 OR name <> 'temp' ORDER BY seq",
    .tables = "SELECT ?1 AS schema, name, type, NULL AS row_count, NULL AS size_bytes, NULL AS comment"
              " FROM pragma_table_list WHERE schema = ?1 AND type IN ('table', 'view')"
              " AND name NOT LIKE 'sqlite_%' ORDER BY name",
    .columns = "SELECT name, type AS data_type, \"notnull\" = 0 AS nullable, dflt_value AS default_value,"
               " pk > 0 AS is_pk, NULL AS type_id FROM pragma_table_info(?2, ?1) ORDER BY cid",
    .foreign_keys = "SELECT 'fk_' || id AS name, \"from\" AS column, ?1 AS ref_schema, \"table\" AS ref_table,"
                    " \"to\" AS ref_column FROM pragma_foreign_key_list(?2, ?1) ORDER BY id, seq",
    .indexes = "SELECT l.name, l.\"unique\" AS is_unique, l.origin = 'pk' AS is_primary,"
               " (SELECT group_concat(name, ',') FROM pragma_index_info(l.name, ?1)) AS columns"
               " FROM pragma_index_list(?2, ?1) AS l ORDER BY l.name",
    .table_info = "SELECT type, NULL AS row_count, NULL AS size_bytes, NULL AS comment FROM pragma_table_list"
                  " WHERE schema = ?1 AND name = ?2",
    .ddl = "SELECT group_concat(sql || ';', char(10)) FROM (SELECT sql FROM sqlite_schema WHERE tbl_name = ?2"
           " AND sql IS NOT NULL AND ?1 = 'main' ORDER BY type = 'table' DESC, name)",
};

const db_engine db_sqlite_engine = {
    .type_name = "sqlite",
    .open = sq_open,
    .close = sq_close,
    .server_version = sq_version,
    .execute = sq_execute,
    .next_page = sq_next_page,
    .close_cursor = sq_close_cursor,
    .interrupt = sq_interrupt,
    .exec_simple = sq_exec_simple,
    .schema = &sqlite_schema_sql,
};
