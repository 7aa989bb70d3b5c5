/* ops: the jobs of the connections. Each connection runs its jobs one at a
 * time, in the order they were asked for; a test runs on its own. The
 * asynchronous calls of interface.h start here. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/interface.h"

typedef enum db_op_kind {
    DB_OP_CONNECT, DB_OP_TEST, DB_OP_DISCONNECT, DB_OP_QUERY, DB_OP_FETCH, DB_OP_TRANSACTION, DB_OP_SCHEMA,
} db_op_kind;

/* One operation on a connection, its inputs copied on the loop, its results
 * read back on the loop by the caller's callback. */
typedef struct db_op {
    db_op_kind kind;
    database_service *svc;
    db_conn *conn;               /* NULL for a test */
    database_config config;      /* DB_OP_TEST (and DB_OP_CONNECT's copy) */
    char *password;              /* read from the secret; wiped when freed */
    char *workspace;             /* connect, test: where a relative path must stay */
    db_statement *statements;    /* query, fetch: 1; transaction: n */
    size_t statement_count;
    size_t offset, limit;        /* fetch */
    char fetch_query[DATABASE_ID_MAX];
    database_schema_read read;   /* DB_OP_SCHEMA */
    char *schema, *table;
    bool include_system;
    /* results */
    int status;
    database_failure fail;
    database_result parts[5];    /* schema reads */
    char *server_version;
    double latency_ms;
    bool committed;
    size_t failed_index;         /* transaction: the statement that failed */
    /* What the job needs of the settings and the connection's config, copied on
     * the loop at submission: the config may change while the job runs. */
    size_t page_size, max_bytes;
    int64_t query_timeout_ms;
    char conn_id[DATABASE_ID_MAX];
    /* The caller's: a format run on the pool at the end, and the callback. */
    database_query_format format;
    void *fctx;
    buf formatted;
    union {
        database_done_cb done;
        database_test_cb test;
        database_query_cb query;
        database_transaction_cb transaction;
        database_schema_cb schema;
    } cb;
    void *ctx;
} db_op;

typedef struct db_secret_wait {
    ecp_job *job;
    db_op *op;
    database_service *svc; /* NULL once the service is gone: the answer is dropped */
    struct db_secret_wait *next;
} db_secret_wait;

static void op_free(void *data);
static void op_work(ecp_job *job, unsigned item);
static void op_done(ecp_job *job);

static const ecp_job_type op_type = {"database.op", ECP_LANE_LONG, false, op_work, op_done, op_free};

static db_op *op_new(database_service *svc, db_op_kind kind, db_conn *conn)
{
    db_op *op = xcalloc(1, sizeof *op);
    op->kind = kind;
    op->svc = svc;
    op->conn = conn;
    for (size_t i = 0; i < 5; i++)
        db_result_free(&op->parts[i]);
    return op;
}

static void op_free(void *data)
{
    db_op *op = data;
    database_config_clear(&op->config);
    if (op->password) {
        memset(op->password, 0, strlen(op->password));
        free(op->password);
    }
    for (size_t i = 0; i < op->statement_count; i++) {
        db_statement *s = &op->statements[i];
        free(s->sql);
        free(s->label);
        database_values_free(s->params, s->param_count);
        db_result_free(&s->result);
    }
    free(op->statements);
    for (size_t i = 0; i < 5; i++)
        db_result_free(&op->parts[i]);
    free_each(op->schema, op->table, op->server_version, op->workspace);
    buf_free(&op->formatted);
    free(op);
}

/* ----- the work (a pool thread: the op and its connection's handle only) ------------------------ */

static void query_result_of(const db_op *op, const db_statement *s, database_query_result *out)
{
    *out = (database_query_result){.query_id = s->query_id, .connection_id = op->conn_id, .sql = s->sql,
                                   .result = &s->result, .started_at = s->started_at,
                                   .completed_at = s->completed_at, .duration_ms = s->duration_ms};
}

/* A big page is rendered here, on the pool, not on the loop. */
static void format_result(db_op *op)
{
    if (!op->format || op->status < 0 || (op->kind != DB_OP_QUERY && op->kind != DB_OP_FETCH))
        return;
    database_query_result r;
    query_result_of(op, &op->statements[0], &r);
    op->format(op->fctx, &r, &op->formatted);
}

static db_run make_run(ecp_job *job, const db_op *op)
{
    db_run run = {.job = job};
    if (op->query_timeout_ms > 0)
        run.deadline_ms = db_now_ms() + op->query_timeout_ms;
    run.page_size = op->page_size;
    run.max_bytes = op->max_bytes;
    return run;
}

static int run_statement(db_conn *c, db_statement *s, const db_run *run, bool keep_cursor)
{
    s->started_at = db_wall_ms();
    int64_t t0 = (int64_t)uv_hrtime();
    db_result_free(&s->result);
    s->status = c->engine->execute(c->handle, s->sql, s->params, s->param_count, 0, keep_cursor, run, &s->result,
                                   &s->fail);
    s->completed_at = db_wall_ms();
    s->duration_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
    if (s->status == 0 && keep_cursor && !s->result.done) {
        snprintf(c->cursor_query, sizeof c->cursor_query, "%s", s->query_id);
        c->cursor_pos = s->result.row_count;
    } else {
        c->cursor_query[0] = '\0';
    }
    return s->status;
}

static int schema_read(db_conn *c, db_op *op, const db_run *base)
{
    const db_schema_sql *q = c->engine->schema;
    db_run run = *base;
    run.keep_values = true;
    run.page_size = 100000;
    database_value args[2] = {{.kind = DATABASE_TEXT}, {.kind = DATABASE_TEXT}};
    args[0].s = op->schema ? op->schema : (char *)"";
    args[0].len = strlen(args[0].s);
    args[1].s = op->table ? op->table : (char *)"";
    args[1].len = strlen(args[1].s);
    const char *sqls[5] = {0};
    size_t nargs = 2;
    database_value flag = {.kind = DATABASE_BOOL, .i = op->include_system};
    switch (op->read) {
    case DATABASE_SCHEMAS: sqls[0] = q->schemas; nargs = 1; break;
    case DATABASE_TABLES: sqls[0] = q->tables; nargs = 1; break;
    case DATABASE_DESCRIBE:
        sqls[0] = q->table_info;
        sqls[1] = q->columns;
        sqls[2] = q->foreign_keys;
        sqls[3] = q->indexes;
        break;
    default: sqls[0] = q->table_info; sqls[1] = q->ddl; break;
    }
    for (size_t i = 0; i < 5 && sqls[i]; i++) {
        const database_value *p = op->read == DATABASE_SCHEMAS ? &flag : args;
        int status = c->engine->execute(c->handle, sqls[i], p, nargs, 0, false, &run, &op->parts[i], &op->fail);
        if (status < 0)
            return status;
    }
    if (op->read != DATABASE_SCHEMAS && op->read != DATABASE_TABLES && op->parts[0].row_count == 0)
        return db_fail(&op->fail, ECP_ENOTFOUND, "table: no table %s.%s", op->schema, op->table);
    return 0;
}

static void op_work(ecp_job *job, unsigned item)
{
    (void)item;
    db_op *op = ecp_job_data(job);
    db_conn *c = op->conn;
    db_run run = make_run(job, op);
    if (op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) {
        /* At test, and again at connect: a config read from a file, or a symbolic link made since it was saved. */
        ecp_error err = {0};
        if (db_config_confine_path(op->workspace, &op->config, &err) < 0) {
            op->status = db_fail(&op->fail, err.status, "%s", err.message);
            return;
        }
    }
    if (op->status < 0) /* refused before it started (a missing secret) */
        return;
    if (ecp_job_cancelled(job)) {
        op->status = db_fail(&op->fail, ECP_ECANCELED, "cancelled");
        return;
    }
    switch (op->kind) {
    case DB_OP_TEST: {
        const db_engine *e = db_engine_of(op->config.type);
        db_handle *h = NULL;
        int64_t t0 = (int64_t)uv_hrtime();
        op->status = e->open(&op->config, op->password, &h, &op->fail);
        if (op->status == 0) {
            database_result r = {0};
            db_result_free(&r);
            op->status = e->execute(h, "SELECT 1", NULL, 0, 0, false, &run, &r, &op->fail);
            db_result_free(&r);
            op->latency_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
            op->server_version = xstrdup(e->server_version(h));
            e->close(h);
        }
        return;
    }
    case DB_OP_CONNECT:
        if (c->handle && !c->lost)
            return;
        if (c->handle) { /* reconnect: the old connection is gone */
            c->engine->close(c->handle);
            c->handle = NULL;
            c->cursor_query[0] = '\0';
        }
        op->status = c->engine->open(&op->config, op->password, &c->handle, &op->fail);
        if (op->status == 0)
            op->server_version = xstrdup(c->engine->server_version(c->handle));
        return;
    case DB_OP_DISCONNECT:
        if (c->handle)
            c->engine->close(c->handle);
        c->handle = NULL;
        c->cursor_query[0] = '\0';
        return;
    default: break;
    }
    if (!c->handle) {
        op->status = db_fail(&op->fail, ECP_ESTATE, "connectionId: %s is not connected", op->conn_id);
        return;
    }
    switch (op->kind) {
    case DB_OP_QUERY:
        op->status = run_statement(c, &op->statements[0], &run, true);
        if (op->status < 0)
            op->fail = op->statements[0].fail;
        break;
    case DB_OP_FETCH: {
        db_statement *s = &op->statements[0];
        run.page_size = op->limit;
        s->started_at = db_wall_ms();
        int64_t t0 = (int64_t)uv_hrtime();
        if (c->cursor_query[0] && !strcmp(c->cursor_query, op->fetch_query) && op->offset == c->cursor_pos) {
            s->status = c->engine->next_page(c->handle, &run, &s->result, &s->fail);
        } else {
            c->cursor_query[0] = '\0';
            s->status = c->engine->execute(c->handle, s->sql, s->params, s->param_count, op->offset, true, &run,
                                           &s->result, &s->fail);
        }
        if (s->status == 0 && !s->result.done) {
            snprintf(c->cursor_query, sizeof c->cursor_query, "%s", op->fetch_query);
            c->cursor_pos = op->offset + s->result.row_count;
        } else {
            c->cursor_query[0] = '\0';
        }
        if (s->status == 0 && s->result.done)
            s->result.total_rows = (int64_t)(op->offset + s->result.row_count);
        s->completed_at = db_wall_ms();
        s->duration_ms = (double)((int64_t)uv_hrtime() - t0) / 1e6;
        op->status = s->status;
        if (s->status < 0)
            op->fail = s->fail;
        break;
    }
    case DB_OP_TRANSACTION:
        c->cursor_query[0] = '\0';
        op->status = c->engine->exec_simple(c->handle, "BEGIN", &run, &op->fail);
        if (op->status < 0)
            break;
        for (size_t i = 0; i < op->statement_count; i++) {
            if (run_statement(c, &op->statements[i], &run, false) < 0) {
                op->status = op->statements[i].status;
                op->fail = op->statements[i].fail;
                op->failed_index = i;
                db_run plain = {.page_size = 1, .max_bytes = 1};
                database_failure ignored;
                c->engine->exec_simple(c->handle, "ROLLBACK", &plain, &ignored);
                return;
            }
        }
        op->status = c->engine->exec_simple(c->handle, "COMMIT", &run, &op->fail);
        if (op->status < 0) {
            db_run plain = {.page_size = 1, .max_bytes = 1};
            database_failure ignored;
            c->engine->exec_simple(c->handle, "ROLLBACK", &plain, &ignored);
            op->failed_index = op->statement_count;
        } else {
            op->committed = true;
        }
        break;
    default:
        c->cursor_query[0] = '\0';
        op->status = schema_read(c, op, &run);
        break;
    }
    format_result(op);
}

static void start_next(db_conn *c);

static void recent_forget_job(database_service *svc, ecp_job *job)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
        if (svc->recent[i].job == job)
            svc->recent[i].job = NULL;
}

static void conn_after(db_conn *c, const db_op *op)
{
    c->running = NULL;
    if (op->kind == DB_OP_CONNECT) {
        free(c->error);
        c->error = NULL;
        if (op->status == 0) {
            c->status = DATABASE_CONNECTED;
            c->lost = false;
            c->connected_at = db_wall_ms();
        } else {
            c->status = DATABASE_ERROR;
            c->error = xstrdup(op->fail.message);
        }
    } else if (op->kind == DB_OP_DISCONNECT) {
        c->status = DATABASE_DISCONNECTED;
        c->lost = false;
        c->connected_at = 0;
    } else if (op->status < 0 &&
               (!strncmp(op->fail.engine_code, "08", 2) || !strncmp(op->fail.engine_code, "57P", 3))) {
        /* The server went away: say so, and let connect open a new one. */
        c->lost = true;
        c->status = DATABASE_ERROR;
        free(c->error);
        c->error = xstrdup(op->fail.message);
    }
}

static void answer(db_op *op)
{
    const database_failure *fail = op->status < 0 ? &op->fail : NULL;
    switch (op->kind) {
    case DB_OP_CONNECT:
    case DB_OP_DISCONNECT:
        if (op->cb.done)
            op->cb.done(op->ctx, op->status, fail);
        break;
    case DB_OP_TEST: {
        database_test_result r = {.latency_ms = op->latency_ms, .server_version = op->server_version};
        if (op->cb.test)
            op->cb.test(op->ctx, op->status, fail, op->status == 0 ? &r : NULL);
        break;
    }
    case DB_OP_QUERY:
    case DB_OP_FETCH: {
        database_query_result r;
        query_result_of(op, &op->statements[0], &r);
        ecp_shared *formatted = NULL;
        if (op->status == 0 && op->format) {
            size_t len = op->formatted.len;
            formatted = ecp_shared_adopt(buf_detach(&op->formatted), len);
        }
        if (op->cb.query)
            op->cb.query(op->ctx, op->status, fail, op->status == 0 ? &r : NULL, formatted);
        ecp_shared_unref(formatted);
        break;
    }
    case DB_OP_TRANSACTION: {
        if (!op->cb.transaction)
            break;
        if (op->status == ECP_ECANCELED || op->status == ECP_ESTATE) { /* cancelled, or never connected */
            op->cb.transaction(op->ctx, op->status, fail, NULL);
            break;
        }
        size_t n = op->statement_count;
        database_query_result *rs = xcalloc(n, sizeof *rs);
        database_failure *fs = xcalloc(n, sizeof *fs);
        const char **labels = xcalloc(n, sizeof *labels);
        for (size_t i = 0; i < n; i++) {
            query_result_of(op, &op->statements[i], &rs[i]);
            fs[i] = op->statements[i].fail;
            labels[i] = op->statements[i].label;
        }
        database_transaction_result r = {.committed = op->committed, .failed_index = op->failed_index,
                                         .failure = &op->fail, .statement_count = n, .statements = rs,
                                         .statement_failures = fs, .labels = labels};
        op->cb.transaction(op->ctx, 0, NULL, &r);
        free_each(rs, fs, labels);
        break;
    }
    case DB_OP_SCHEMA: {
        database_schema_result r = {.read = op->read, .schema = op->schema, .table = op->table};
        size_t parts = op->read == DATABASE_DESCRIBE ? 4 : op->read == DATABASE_DDL ? 2 : 1;
        for (size_t i = 0; i < parts; i++)
            r.parts[i] = &op->parts[i];
        if (op->cb.schema)
            op->cb.schema(op->ctx, op->status, fail, op->status == 0 ? &r : NULL);
        break;
    }
    }
}

static void op_done(ecp_job *job)
{
    db_op *op = ecp_job_data(job);
    db_conn *c = op->conn;
    database_service *svc = op->svc;
    recent_forget_job(svc, job);
    if (c)
        conn_after(c, op);
    if (op->kind == DB_OP_QUERY || op->kind == DB_OP_TRANSACTION)
        for (size_t i = 0; i < op->statement_count; i++)
            db_history_end(svc->store, &op->statements[i]);
    answer(op);
    if (c)
        start_next(c);
}

static void start_next(db_conn *c)
{
    if (c->running)
        return;
    if (c->queue_len == 0) {
        if (c->deleted)
            db_conn_release(c->svc, c);
        return;
    }
    c->running = c->queue[0];
    memmove(c->queue, c->queue + 1, --c->queue_len * sizeof *c->queue);
    ecp_job_start(c->running, 1);
}

static void enqueue(db_conn *c, ecp_job *job)
{
    if (c->queue_len == c->queue_cap) {
        c->queue_cap = c->queue_cap ? c->queue_cap * 2 : 4;
        c->queue = xrealloc(c->queue, c->queue_cap * sizeof *c->queue);
    }
    c->queue[c->queue_len++] = job;
    start_next(c);
}

static void remember_query(database_service *svc, db_op *op, db_statement *s, ecp_job *job)
{
    snprintf(s->query_id, sizeof s->query_id, "q-%llx-%llu", (unsigned long long)db_wall_ms(),
             (unsigned long long)++svc->next_id);
    s->started_at = db_wall_ms();
    db_recent *r = &svc->recent[svc->recent_next++ % DB_RECENT_QUERIES];
    free(r->sql);
    database_values_free(r->params, r->param_count);
    snprintf(r->id, sizeof r->id, "%s", s->query_id);
    r->conn = op->conn;
    r->sql = xstrdup(s->sql);
    r->params = db_values_copy(s->params, s->param_count);
    r->param_count = s->param_count;
    r->job = job;
    db_history_begin(svc->store, s, op->conn->config.id);
}

/* ----- submitting ----------------------------------------------------------------------------------- */

static void wait_unlink(database_service *svc, db_secret_wait *w)
{
    for (db_secret_wait **p = &svc->secret_waits; *p; p = &(*p)->next)
        if (*p == w) {
            *p = w->next;
            return;
        }
}

static void got_secret(void *ctx, int status, const ecp_error *err, const char *value, size_t len,
                       const session_secret_info *info)
{
    (void)err;
    (void)info;
    db_secret_wait *w = ctx;
    if (!w->svc) { /* the service was freed while the secret was read; its set freed the job */
        free(w);
        return;
    }
    wait_unlink(w->svc, w);
    db_op *op = w->op;
    if (status == 0 && value)
        op->password = xstrndup(value, len);
    else
        /* Refused before it reaches the engine: the job sees the failure and says it. */
        op->status = db_fail(&op->fail, ECP_ENOTFOUND, "passwordSecret: no secret named %s",
                             op->config.password_secret);
    if (op->conn)
        enqueue(op->conn, w->job);
    else
        ecp_job_start(w->job, 1);
    free(w);
}

void db_ops_detach(database_service *svc)
{
    for (db_secret_wait *w = svc->secret_waits; w; w = w->next)
        w->svc = NULL;
    svc->secret_waits = NULL;
}

/* Makes op a job serving `serve`, and queues it (a connect or a test after
 * its password). The op's inputs are in place; settings are copied here:
 * they live on the loop, and the job gets their values, never the service. */
static ecp_job *submit(db_op *op, ecp_call *serve)
{
    database_service *svc = op->svc;
    op->page_size = svc->page_size;
    op->max_bytes = svc->max_bytes;
    const database_config *cfg = op->conn ? &op->conn->config : &op->config;
    op->query_timeout_ms = cfg->query_timeout_ms;
    snprintf(op->conn_id, sizeof op->conn_id, "%s", cfg->id ? cfg->id : "");
    ecp_job *job = ecp_job_new(svc->jobs, &op_type, op);
    if (serve)
        ecp_job_serve(job, serve);
    /* Every statement of a transaction names its job: cancelling any of them rolls the whole back. */
    if (op->kind == DB_OP_QUERY || op->kind == DB_OP_TRANSACTION)
        for (size_t i = 0; i < op->statement_count; i++)
            remember_query(svc, op, &op->statements[i], job);
    if (op->kind == DB_OP_FETCH)
        for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
            if (!strcmp(svc->recent[i].id, op->fetch_query))
                svc->recent[i].job = job;
    if (op->kind == DB_OP_CONNECT) {
        database_config_clear(&op->config);
        database_config_copy(&op->config, &op->conn->config);
        op->conn->status = DATABASE_CONNECTING;
    }
    if ((op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) && svc->workspace)
        op->workspace = xstrdup(svc->workspace);
    if ((op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) && op->status == 0 && op->config.project &&
        op->config.password_secret && svc->session && !session_workspace_trusted(svc->session))
        /* The workspace's file names the host as well as the secret: an untrusted repository would be handed
         * the user's password by the first connect. */
        op->status = db_fail(&op->fail, ECP_EACCES,
                             "passwordSecret: a project connection gets no secret until the workspace is trusted "
                             "(workspace/trust)");
    if (op->status == 0 && (op->kind == DB_OP_CONNECT || op->kind == DB_OP_TEST) && op->config.password_secret &&
        svc->session) {
        db_secret_wait *w = xcalloc(1, sizeof *w);
        w->job = job;
        w->op = op;
        w->svc = svc;
        w->next = svc->secret_waits;
        svc->secret_waits = w;
        session_secret_get(svc->session, op->config.password_secret, got_secret, w);
        return job;
    }
    if (op->conn)
        enqueue(op->conn, job);
    else
        ecp_job_start(job, 1);
    return job;
}

static db_conn *find_conn(database_service *svc, const char *id, ecp_error *err)
{
    db_conn *c = id ? db_conn_find(svc, id) : NULL;
    if (!c)
        ecp_error_set(err, ECP_EINVAL, "connectionId: no connection %s", id ? id : "(none)");
    return c;
}

/* ----- connections ------------------------------------------------------------------------------------- */

static ecp_job *connection_op(database_service *svc, db_op_kind kind, const database_connection_args *args,
                              database_done_cb cb, void *ctx, ecp_error *err)
{
    db_conn *c = find_conn(svc, args->connection_id, err);
    if (!c)
        return NULL;
    db_op *op = op_new(svc, kind, c);
    op->cb.done = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

ecp_job *database_connect_start(database_service *svc, const database_connection_args *args, database_done_cb cb,
                                void *ctx, ecp_error *err)
{
    return connection_op(svc, DB_OP_CONNECT, args, cb, ctx, err);
}

ecp_job *database_disconnect_start(database_service *svc, const database_connection_args *args,
                                   database_done_cb cb, void *ctx, ecp_error *err)
{
    return connection_op(svc, DB_OP_DISCONNECT, args, cb, ctx, err);
}

ecp_job *database_connection_delete_start(database_service *svc, const database_connection_args *args,
                                          database_done_cb cb, void *ctx, ecp_error *err)
{
    ecp_job *job = connection_op(svc, DB_OP_DISCONNECT, args, cb, ctx, err);
    if (!job)
        return NULL;
    db_conn *c = db_conn_find(svc, args->connection_id);
    c->deleted = true;
    ecp_map_remove(svc->live, c->config.id, NULL);
    db_configs_save(svc, c->config.project);
    start_next(c);
    return job;
}

ecp_job *database_connection_test_start(database_service *svc, const database_test_args *args,
                                        database_test_cb cb, void *ctx, ecp_error *err)
{
    (void)err; /* its path is checked by the job */
    db_op *op = op_new(svc, DB_OP_TEST, NULL);
    database_config_copy(&op->config, args->config);
    op->cb.test = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

/* ----- queries ---------------------------------------------------------------------------------------- */

static void statement_set(db_statement *s, const char *sql, const database_value *params, size_t n, const char *label)
{
    s->sql = xstrdup(sql);
    s->params = db_values_copy(params, n);
    s->param_count = n;
    s->label = label ? xstrdup(label) : NULL;
    db_result_free(&s->result);
}

ecp_job *database_query_start(database_service *svc, const database_query_args *args, database_query_cb cb,
                              void *ctx, ecp_error *err)
{
    db_conn *c = find_conn(svc, args->connection_id, err);
    if (!c)
        return NULL;
    db_op *op = op_new(svc, DB_OP_QUERY, c);
    op->statements = xcalloc(1, sizeof *op->statements);
    op->statement_count = 1;
    statement_set(&op->statements[0], args->sql, args->params, args->param_count, NULL);
    op->format = args->format;
    op->fctx = args->fctx;
    op->cb.query = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

static db_recent *recent_find(database_service *svc, const char *query_id)
{
    for (size_t i = 0; i < DB_RECENT_QUERIES; i++)
        if (svc->recent[i].id[0] && !strcmp(svc->recent[i].id, query_id))
            return &svc->recent[i];
    return NULL;
}

ecp_job *database_fetch_start(database_service *svc, const database_fetch_args *args, database_query_cb cb,
                              void *ctx, ecp_error *err)
{
    db_recent *r = recent_find(svc, args->query_id);
    if (!r || !r->conn) {
        ecp_error_set(err, ECP_EINVAL, "queryId: no query %s", args->query_id);
        return NULL;
    }
    if (args->limit == 0 || args->limit > 100000) {
        ecp_error_set(err, ECP_EINVAL, "limit: must be 1 to 100000");
        return NULL;
    }
    db_op *op = op_new(svc, DB_OP_FETCH, r->conn);
    op->statements = xcalloc(1, sizeof *op->statements);
    op->statement_count = 1;
    /* A fetch re-runs its query's statement when the cursor moved on: it needs the sql and params. */
    statement_set(&op->statements[0], r->sql, r->params, r->param_count, NULL);
    snprintf(op->statements[0].query_id, sizeof op->statements[0].query_id, "%s", r->id);
    snprintf(op->fetch_query, sizeof op->fetch_query, "%s", r->id);
    op->offset = args->offset;
    op->limit = args->limit;
    op->format = args->format;
    op->fctx = args->fctx;
    op->cb.query = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

int database_query_cancel(database_service *svc, const char *query_id, bool *running, ecp_error *err)
{
    db_recent *r = recent_find(svc, query_id);
    if (!r)
        return ecp_error_set(err, ECP_EINVAL, "queryId: no query %s", query_id);
    *running = r->job != NULL;
    if (r->job) {
        ecp_job_cancel(r->job);
        /* The handle is alive while the connection's job runs: close is queued behind it. */
        if (r->conn && r->conn->running == r->job && r->conn->handle && r->conn->engine->interrupt)
            r->conn->engine->interrupt(r->conn->handle);
    }
    return 0;
}

ecp_job *database_transaction_start(database_service *svc, const database_transaction_args *args,
                                    database_transaction_cb cb, void *ctx, ecp_error *err)
{
    db_conn *c = find_conn(svc, args->connection_id, err);
    if (!c)
        return NULL;
    if (args->statement_count == 0) {
        ecp_error_set(err, ECP_EINVAL, "queries: at least one query");
        return NULL;
    }
    db_op *op = op_new(svc, DB_OP_TRANSACTION, c);
    op->statements = xcalloc(args->statement_count, sizeof *op->statements);
    op->statement_count = args->statement_count;
    for (size_t i = 0; i < args->statement_count; i++) {
        const database_statement_args *a = &args->statements[i];
        statement_set(&op->statements[i], a->sql, a->params, a->param_count, a->label);
    }
    op->cb.transaction = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

/* ----- schema browsing ---------------------------------------------------------------------------------- */

ecp_job *database_schema_start(database_service *svc, const database_schema_args *args, database_schema_cb cb,
                               void *ctx, ecp_error *err)
{
    db_conn *c = find_conn(svc, args->connection_id, err);
    if (!c)
        return NULL;
    if ((args->read == DATABASE_DESCRIBE || args->read == DATABASE_DDL) && !args->table) {
        ecp_error_set(err, ECP_EINVAL, "table: required string");
        return NULL;
    }
    db_op *op = op_new(svc, DB_OP_SCHEMA, c);
    op->read = args->read;
    op->include_system = args->include_system;
    if (args->read != DATABASE_SCHEMAS)
        op->schema = xstrdup(args->schema ? args->schema : c->config.type == DATABASE_SQLITE ? "main" : "public");
    op->table = args->table ? xstrdup(args->table) : NULL;
    op->cb.schema = cb;
    op->ctx = ctx;
    return submit(op, args->serve);
}

/* ----- history ------------------------------------------------------------------------------------------ */

void database_history_list(database_service *svc, const database_history_query *q, database_history_cb cb,
                           void *ctx)
{
    db_history_list(svc->store, q, cb, ctx);
}

void database_history_clear(database_service *svc, const char *connection_id, database_history_done_cb cb,
                            void *ctx)
{
    db_history_clear(svc->store, connection_id, cb, ctx);
}

void database_history_favorite(database_service *svc, int64_t history_id, bool favorite,
                               database_history_done_cb cb, void *ctx)
{
    db_history_favorite(svc->store, history_id, favorite, cb, ctx);
}
