/* history: every query a client ran, and the favourites among them, in the store.
 *
 * The table is created by the first operation the service submits (CREATE
 * TABLE IF NOT EXISTS): the store runs operations in order, so every later one
 * finds it. A query is written when it starts (status "running") and updated
 * when it ends, so a running query is in the history with its queryId.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "store/interface.h"

static int init_work(sqlite3 *db, void *data, ecp_error *err)
{
    (void)data;
    return store_exec(db,
                      "CREATE TABLE IF NOT EXISTS database_history ("
                      "  id INTEGER PRIMARY KEY,"
                      "  query_id TEXT NOT NULL,"
                      "  connection_id TEXT NOT NULL,"
                      "  sql TEXT NOT NULL,"
                      "  started_at INTEGER NOT NULL,"
                      "  duration_ms REAL,"
                      "  row_count INTEGER,"
                      "  status TEXT NOT NULL,"
                      "  error TEXT,"
                      "  favorite INTEGER NOT NULL DEFAULT 0);"
                      "CREATE INDEX IF NOT EXISTS database_history_by_query ON database_history (query_id);"
                      "CREATE INDEX IF NOT EXISTS database_history_by_time ON database_history (started_at DESC);",
                      err);
}

static const store_op_type init_type = {"database.history.init", true, init_work, NULL, NULL};

void db_history_init(store *st) { store_submit(st, &init_type, NULL); }

/* Runs sql once: its parameters bound by bind, each row it yields handed to
 * row (NULL for a statement that yields none), to its end; what says what
 * failed. */
static int run_sql(sqlite3 *db, const char *sql, void (*bind)(sqlite3_stmt *st, void *data),
                   void (*row)(sqlite3_stmt *st, void *data), void *data, ecp_error *err, const char *what)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, sql, &st, err);
    if (status < 0)
        return status;
    bind(st, data);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && row)
        row(st, data);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, what);
}

typedef struct entry_op {
    char *query_id, *connection_id, *sql, *status, *error;
    int64_t started_at, row_count;
    double duration_ms;
} entry_op;

static void entry_free(void *data)
{
    entry_op *e = data;
    free_each(e->query_id, e->connection_id, e->sql, e->status, e->error, e);
}

static void bind_begin(sqlite3_stmt *st, void *data)
{
    entry_op *e = data;
    sqlite3_bind_text(st, 1, e->query_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, e->connection_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, e->sql, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, e->started_at);
}

static int begin_work(sqlite3 *db, void *data, ecp_error *err)
{
    return run_sql(db,
                   "INSERT INTO database_history (query_id, connection_id, sql, started_at, status)"
                   " VALUES (?, ?, ?, ?, 'running')",
                   bind_begin, NULL, data, err, "could not record a query");
}

static void bind_end(sqlite3_stmt *st, void *data)
{
    entry_op *e = data;
    sqlite3_bind_text(st, 1, e->status, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 2, e->duration_ms);
    if (e->row_count >= 0)
        sqlite3_bind_int64(st, 3, e->row_count);
    sqlite3_bind_text(st, 4, e->error, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, e->query_id, -1, SQLITE_STATIC);
}

static int end_work(sqlite3 *db, void *data, ecp_error *err)
{
    return run_sql(db,
                   "UPDATE database_history SET status = ?, duration_ms = ?, row_count = ?, error = ?"
                   " WHERE query_id = ?",
                   bind_end, NULL, data, err, "could not record a query's end");
}

static const store_op_type begin_type = {"database.history.begin", false, begin_work, NULL, entry_free};
static const store_op_type end_type = {"database.history.end", false, end_work, NULL, entry_free};

void db_history_begin(store *st, const db_statement *s, const char *connection_id)
{
    entry_op *e = xcalloc(1, sizeof *e);
    e->query_id = xstrdup(s->query_id);
    e->connection_id = xstrdup(connection_id);
    e->sql = xstrdup(s->sql);
    e->started_at = s->started_at;
    store_submit(st, &begin_type, e);
}

void db_history_end(store *st, const db_statement *s)
{
    entry_op *e = xcalloc(1, sizeof *e);
    e->query_id = xstrdup(s->query_id);
    bool never_ran = s->completed_at == 0 && s->status == 0;
    e->status = xstrdup(s->status == ECP_ECANCELED ? "cancelled"
                        : s->status < 0           ? "error"
                        : never_ran               ? "skipped"
                                                  : "success");
    e->error = s->status < 0 ? xstrdup(s->fail.message) : NULL;
    e->duration_ms = s->duration_ms;
    e->row_count = s->status == 0 && !never_ran ? (int64_t)s->result.row_count : -1;
    store_submit(st, &end_type, e);
}

/* ----- reading -------------------------------------------------------------------------------- */

typedef struct list_op {
    database_history_query q;
    char *connection_id, *search;
    database_history_entry *entries;
    size_t count, cap;
    database_history_cb cb;
    void *ctx;
} list_op;

static char *column_text(sqlite3_stmt *st, int col)
{
    const unsigned char *t = sqlite3_column_text(st, col);
    return t ? xstrdup((const char *)t) : NULL;
}

static void bind_list(sqlite3_stmt *st, void *data)
{
    list_op *l = data;
    sqlite3_bind_text(st, 1, l->connection_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, l->search, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, l->q.favorites_only);
    sqlite3_bind_int64(st, 4, l->q.limit);
    sqlite3_bind_int64(st, 5, l->q.offset);
}

static void list_row(sqlite3_stmt *st, void *data)
{
    list_op *l = data;
    if (l->count == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->entries = xrealloc(l->entries, l->cap * sizeof *l->entries);
    }
    database_history_entry *e = &l->entries[l->count++];
    e->id = sqlite3_column_int64(st, 0);
    e->query_id = column_text(st, 1);
    e->connection_id = column_text(st, 2);
    e->sql = column_text(st, 3);
    e->executed_at = sqlite3_column_int64(st, 4);
    e->duration_ms = sqlite3_column_type(st, 5) != SQLITE_NULL ? sqlite3_column_double(st, 5) : -1;
    e->row_count = sqlite3_column_type(st, 6) != SQLITE_NULL ? sqlite3_column_int64(st, 6) : -1;
    e->status = column_text(st, 7);
    e->error = column_text(st, 8);
    e->favorite = sqlite3_column_int(st, 9) != 0;
}

static int list_work(sqlite3 *db, void *data, ecp_error *err)
{
    return run_sql(db,
                   "SELECT id, query_id, connection_id, sql, started_at, duration_ms, row_count, status, error,"
                   " favorite FROM database_history WHERE (?1 IS NULL OR connection_id = ?1)"
                   " AND (?2 IS NULL OR instr(lower(sql), lower(?2)) > 0) AND (?3 = 0 OR favorite = 1)"
                   " ORDER BY started_at DESC, id DESC LIMIT ?4 OFFSET ?5",
                   bind_list, list_row, data, err, "could not read the query history");
}

static void list_done(void *data, int status, const ecp_error *err)
{
    list_op *l = data;
    l->cb(l->ctx, status, err, status == 0 ? l->entries : NULL, status == 0 ? l->count : 0);
}

static void list_free(void *data)
{
    list_op *l = data;
    for (size_t i = 0; i < l->count; i++) {
        database_history_entry *e = &l->entries[i];
        free_each((char *)e->query_id, (char *)e->connection_id, (char *)e->sql, (char *)e->status, (char *)e->error);
    }
    free_each(l->entries, l->connection_id, l->search, l);
}

static const store_op_type list_type = {"database.history.list", false, list_work, list_done, list_free};

void db_history_list(store *st, const database_history_query *q, database_history_cb cb, void *ctx)
{
    list_op *l = xcalloc(1, sizeof *l);
    l->q = *q;
    l->connection_id = q->connection_id ? xstrdup(q->connection_id) : NULL;
    l->search = q->search ? xstrdup(q->search) : NULL;
    l->q.connection_id = l->q.search = NULL;
    l->cb = cb;
    l->ctx = ctx;
    store_submit(st, &list_type, l);
}

typedef struct change_op {
    char *connection_id;
    int64_t id;
    bool favorite, clear;
    database_history_done_cb cb;
    void *ctx;
} change_op;

static void bind_change(sqlite3_stmt *st, void *data)
{
    change_op *c = data;
    if (c->clear) {
        sqlite3_bind_text(st, 1, c->connection_id, -1, SQLITE_STATIC);
    } else {
        sqlite3_bind_int(st, 2, c->favorite);
        sqlite3_bind_int64(st, 3, c->id);
    }
}

static int change_work(sqlite3 *db, void *data, ecp_error *err)
{
    change_op *c = data;
    int status = run_sql(db,
                         c->clear ? "DELETE FROM database_history WHERE ?1 IS NULL OR connection_id = ?1"
                                  : "UPDATE database_history SET favorite = ?2 WHERE id = ?3",
                         bind_change, NULL, c, err, "could not change the query history");
    if (status < 0)
        return status;
    if (!c->clear && sqlite3_changes(db) == 0)
        return ecp_error_set(err, ECP_EINVAL, "historyId: no history entry %lld", (long long)c->id);
    return 0;
}

static void change_done(void *data, int status, const ecp_error *err)
{
    change_op *c = data;
    c->cb(c->ctx, status, err);
}

static void change_free(void *data)
{
    change_op *c = data;
    free(c->connection_id);
    free(c);
}

static const store_op_type change_type = {"database.history.change", true, change_work, change_done, change_free};

void db_history_clear(store *st, const char *connection_id, database_history_done_cb cb, void *ctx)
{
    change_op *c = xcalloc(1, sizeof *c);
    c->clear = true;
    c->connection_id = connection_id ? xstrdup(connection_id) : NULL;
    c->cb = cb;
    c->ctx = ctx;
    store_submit(st, &change_type, c);
}

void db_history_favorite(store *st, int64_t id, bool favorite, database_history_done_cb cb, void *ctx)
{
    change_op *c = xcalloc(1, sizeof *c);
    c->id = id;
    c->favorite = favorite;
    c->cb = cb;
    c->ctx = ctx;
    store_submit(st, &change_type, c);
}
