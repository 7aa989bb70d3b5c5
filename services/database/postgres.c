/* postgres: PostgreSQL through libpq.
 *
 * libpq's asynchronous calls, driven from the job that owns the connection:
 * the job waits on PQsocket with poll() in slices of POLL_SLICE_MS, and after
 * each slice checks whether it was cancelled or ran past its deadline, then
 * sends PQcancel itself. Rows arrive in single-row mode, so a page never holds
 * more than its rows: a query that is not read to its end keeps its result
 * open as the connection's cursor, and the next page reads on from it. Any
 * other use of the connection first cancels that result and drains it.
 */
#include "internal.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_writer.h"
#include "postgres_pq.h"

#define POLL_SLICE_MS 50
#define DEFAULT_CONNECT_TIMEOUT_MS 10000

struct db_handle {
    PGconn *conn;
    PGcancel *cancel;
    bool in_result;       /* a result is open as the cursor */
    bool statement_ended; /* the last result seen ended a statement */
    buf pending;
    bool has_pending;
    buf notices;          /* since the last page: JSON strings joined with commas */
    int64_t query_timeout_ms;
    char version[32];
};

/* ----- failures ---------------------------------------------------------------------------- */

/* The end of a failure whose message quotes libpq's: that text ends with a
 * newline, which the message for a person does not; code is the SQLSTATE. */
static void finish_failure(database_failure *f, const char *code)
{
    size_t len = strlen(f->message);
    while (len && (f->message[len - 1] == '\n' || f->message[len - 1] == ' '))
        f->message[--len] = '\0';
    snprintf(f->engine_code, sizeof f->engine_code, "%s", code);
}

static int fail_result(db_handle *h, const PGresult *res, const db_run *run, database_failure *f)
{
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    if (!msg)
        msg = PQerrorMessage(h->conn);
    int status = ECP_EIO;
    if (state && !strcmp(state, "57014")) /* query_canceled: by us, or by statement_timeout */
        status = run && run->job && ecp_job_cancelled(run->job) ? ECP_ECANCELED : ECP_ERANGE;
    else if (state && !strcmp(state, "25006"))
        status = ECP_EREADONLY;
    if (status == ECP_ERANGE)
        db_fail(f, status, "the query ran past its queryTimeout");
    else if (status == ECP_ECANCELED)
        db_fail(f, status, "the query was cancelled");
    else
        db_fail(f, status, "the query failed: %s", msg);
    finish_failure(f, state ? state : PQstatus(h->conn) == CONNECTION_BAD ? "08006" : "XX000");
    if (state == NULL && PQstatus(h->conn) == CONNECTION_BAD)
        snprintf(f->message, sizeof f->message, "the connection to the server was lost: %s",
                 PQerrorMessage(h->conn));
    const char *pos = res ? PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION) : NULL;
    f->position = pos ? atoi(pos) : 0;
    const char *detail = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL) : NULL;
    if (detail)
        snprintf(f->detail, sizeof f->detail, "%s", detail);
    return status;
}

/* ----- waiting ------------------------------------------------------------------------------- */

/* Waits until the socket is ready for `events` or one slice passes. */
static void wait_socket(PGconn *conn, short events)
{
    struct pollfd p = {.fd = PQsocket(conn), .events = events};
    if (p.fd >= 0)
        poll(&p, 1, POLL_SLICE_MS);
}

static void send_cancel(db_handle *h)
{
    char errbuf[256];
    if (h->cancel)
        PQcancel(h->cancel, errbuf, sizeof errbuf);
}

/* The next result, waiting in slices and cancelling the statement once when
 * the run must stop. NULL at the end of the statement's results. */
static PGresult *next_result(db_handle *h, const db_run *run, bool *we_cancelled)
{
    while (PQisBusy(h->conn)) {
        if (run && !*we_cancelled && db_run_should_stop(run)) {
            send_cancel(h);
            *we_cancelled = true;
        }
        wait_socket(h->conn, POLLIN);
        if (!PQconsumeInput(h->conn))
            break; /* the connection is gone: PQgetResult reports it */
    }
    return PQgetResult(h->conn);
}

static void drain(db_handle *h)
{
    bool cancelled = false;
    if (h->in_result) {
        send_cancel(h);
        cancelled = true;
    }
    PGresult *r;
    while ((r = next_result(h, NULL, &cancelled)) != NULL)
        PQclear(r);
    h->in_result = false;
    h->has_pending = false;
    buf_clear(&h->pending);
}

/* Notices (NOTICE: table does not exist, skipping) are not errors: they go
 * with the next page instead of libpq's default, stderr. A flood is capped. */
static void keep_notice(void *ctx, const char *message)
{
    db_handle *h = ctx;
    if (h->notices.len > 64 * 1024)
        return;
    size_t len = strlen(message);
    while (len && message[len - 1] == '\n')
        len--;
    if (h->notices.len)
        buf_push(&h->notices, ',');
    buf_push(&h->notices, '"');
    json_escape_into(&h->notices, message, len);
    buf_push(&h->notices, '"');
}

/* ----- opening -------------------------------------------------------------------------------- */

static int pg_open(const database_config *config, const char *password, db_handle **out, database_failure *f)
{
    ecp_error load_err = {0};
    if (db_pq_load(&load_err) < 0)
        return db_fail(f, load_err.status, "%s", load_err.message); /* opened here, on the job's thread */
    char port[16], timeout[24], options[160];
    snprintf(port, sizeof port, "%d", config->port ? config->port : 5432);
    int64_t limit_ms = config->connection_timeout_ms > 0 ? config->connection_timeout_ms : DEFAULT_CONNECT_TIMEOUT_MS;
    snprintf(timeout, sizeof timeout, "%lld", (long long)((limit_ms + 999) / 1000));
    snprintf(options, sizeof options, "-c default_transaction_read_only=%s -c statement_timeout=%lld",
             config->read_only ? "on" : "off", (long long)config->query_timeout_ms);
    const char *sslmode = !config->ssl ? "prefer" : config->ssl_reject_unauthorized ? "verify-full" : "require";
    const char *keys[16], *values[16];
    int n = 0;
#define KV(k, v)                      \
    {                                 \
        const char *value_ = (v);     \
        if (value_) {                 \
            keys[n] = k;              \
            values[n++] = value_;     \
        }                             \
    }
    KV("host", config->host ? config->host : "localhost")
    KV("port", port)
    KV("dbname", config->database)
    KV("user", config->username)
    KV("password", password)
    KV("connect_timeout", timeout)
    KV("options", options)
    KV("sslmode", sslmode)
    KV("sslrootcert", config->ssl_ca)
    KV("sslcert", config->ssl_cert)
    KV("sslkey", config->ssl_key)
    KV("application_name", "ecpd")
    KV("client_encoding", "UTF8")
#undef KV
    keys[n] = values[n] = NULL;
    db_handle *h = xcalloc(1, sizeof *h);
    buf_init(&h->pending);
    buf_init(&h->notices);
    h->query_timeout_ms = config->query_timeout_ms;
    h->conn = PQconnectStartParams(keys, values, 0);
    int64_t deadline = db_now_ms() + limit_ms;
    PostgresPollingStatusType st = PGRES_POLLING_WRITING;
    while (h->conn && PQstatus(h->conn) != CONNECTION_BAD && st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
        if (db_now_ms() >= deadline)
            break;
        wait_socket(h->conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT);
        st = PQconnectPoll(h->conn);
    }
    if (!h->conn || st != PGRES_POLLING_OK) {
        const char *msg = h->conn ? PQerrorMessage(h->conn) : "out of memory";
        bool timed_out = h->conn && st != PGRES_POLLING_FAILED && PQstatus(h->conn) != CONNECTION_BAD;
        int status = timed_out ? ECP_ERANGE : strstr(msg, "password") ? ECP_EACCES : ECP_EIO;
        if (timed_out)
            db_fail(f, status, "could not connect within connectionTimeout (%lld ms)", (long long)limit_ms);
        else
            db_fail(f, status, "could not connect: %s", msg);
        finish_failure(f, strstr(msg, "password authentication failed") ? "28P01"
                          : strstr(msg, "does not exist")               ? "3D000"
                                                                        : "08001");
        PQfinish(h->conn);
        buf_free(&h->pending);
        buf_free(&h->notices);
        free(h);
        return status;
    }
    PQsetNoticeProcessor(h->conn, keep_notice, h);
    PQsetnonblocking(h->conn, 1);
    h->cancel = PQgetCancel(h->conn);
    int v = PQserverVersion(h->conn);
    snprintf(h->version, sizeof h->version, "%d.%d", v / 10000, v % 10000);
    *out = h;
    return 0;
}

static void pg_close(db_handle *h)
{
    if (!h)
        return;
    if (h->in_result)
        drain(h);
    if (h->cancel)
        PQfreeCancel(h->cancel);
    PQfinish(h->conn);
    buf_free(&h->pending);
    buf_free(&h->notices);
    free(h);
}

static const char *pg_version(db_handle *h) { return h->version; }

static void pg_close_cursor(db_handle *h)
{
    if (h->in_result)
        drain(h);
}

/* ----- rows ------------------------------------------------------------------------------------- */

static const struct {
    Oid oid;
    const char *name;
} type_names[] = {
    {16, "bool"}, {17, "bytea"}, {18, "char"}, {19, "name"}, {20, "int8"}, {21, "int2"}, {23, "int4"},
    {25, "text"}, {26, "oid"}, {114, "json"}, {700, "float4"}, {701, "float8"}, {1042, "bpchar"},
    {1043, "varchar"}, {1082, "date"}, {1083, "time"}, {1114, "timestamp"}, {1184, "timestamptz"},
    {1186, "interval"}, {1700, "numeric"}, {2278, "void"}, {2950, "uuid"}, {3802, "jsonb"},
};

static void read_fields(const PGresult *res, database_result *out)
{
    int n = PQnfields(res);
    out->field_count = (size_t)n;
    out->fields = xcalloc(n ? (size_t)n : 1, sizeof *out->fields);
    for (int i = 0; i < n; i++) {
        database_field *fd = &out->fields[i];
        fd->name = xstrdup(PQfname(res, i));
        Oid oid = PQftype(res, i);
        fd->type_id = oid;
        fd->nullable = true;
        char name[32];
        snprintf(name, sizeof name, "oid:%u", oid);
        for (size_t k = 0; k < sizeof type_names / sizeof type_names[0]; k++)
            if (type_names[k].oid == oid)
                snprintf(name, sizeof name, "%s", type_names[k].name);
        fd->data_type = xstrdup(name);
        fd->origin_table = PQftable(res, i) == InvalidOid ? 0 : PQftable(res, i);
        fd->origin_column = PQftablecol(res, i);
    }
}

static void render_row(const PGresult *res, const database_result *r, buf *out)
{
    buf_push(out, '{');
    for (size_t i = 0; i < r->field_count; i++) {
        db_row_key(out, r, i);
        if (PQgetisnull(res, 0, (int)i)) {
            buf_append_str(out, "null");
            continue;
        }
        const char *v = PQgetvalue(res, 0, (int)i);
        size_t len = (size_t)PQgetlength(res, 0, (int)i);
        switch (r->fields[i].type_id) {
        case 20: case 21: case 23: case 26: case 700: case 701:
            /* Numbers as numbers, except the ones JSON cannot spell. */
            if (strcmp(v, "NaN") && strcmp(v, "Infinity") && strcmp(v, "-Infinity")) {
                buf_append(out, v, len);
                continue;
            }
            break;
        case 16: buf_append_str(out, v[0] == 't' ? "true" : "false"); continue;
        case 114: case 3802: buf_append(out, v, len); continue;
        default: break;
        }
        buf_push(out, '"');
        json_escape_into(out, v, len);
        buf_push(out, '"');
    }
    buf_push(out, '}');
}

static void keep_values(const PGresult *res, database_result *r)
{
    size_t n = r->field_count;
    r->cells = xrealloc(r->cells, (r->row_count + 1) * (n ? n : 1) * sizeof *r->cells);
    for (size_t i = 0; i < n; i++) {
        database_value *c = &r->cells[r->row_count * n + i];
        memset(c, 0, sizeof *c);
        if (PQgetisnull(res, 0, (int)i))
            continue;
        c->kind = DATABASE_TEXT;
        c->len = (size_t)PQgetlength(res, 0, (int)i);
        c->s = xstrndup(PQgetvalue(res, 0, (int)i), c->len);
    }
}

static bool page_add(db_handle *h, const db_run *run, database_result *out, const char *row, size_t len)
{
    return db_page_add(&h->pending, &h->has_pending, run, out, row, len);
}

/* Reads results until the page is full or the statement's results end; skips `skip` rows first. */
static int read_page(db_handle *h, const db_run *run, size_t skip, database_result *out, database_failure *f)
{
    bool we_cancelled = false;
    int status = 0;
    buf row = BUF_INIT;
    if (h->has_pending) {
        h->has_pending = false;
        page_add(h, run, out, h->pending.data, h->pending.len);
        buf_clear(&h->pending);
    }
    size_t skipped = 0;
    while (out->row_count < run->page_size || skipped < skip) {
        PGresult *res = next_result(h, run, &we_cancelled);
        if (!res) {
            h->in_result = false;
            out->done = true;
            break;
        }
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_SINGLE_TUPLE) {
            if (h->statement_ended || !out->fields) {
                /* A new statement of a multi-statement sql: its rows are the answer now. */
                db_result_free(out);
                read_fields(res, out);
                h->statement_ended = false;
            }
            if (skipped < skip) {
                skipped++;
                PQclear(res);
                continue;
            }
            buf_clear(&row);
            render_row(res, out, &row);
            if (out->row_count == 0 && row.len > run->max_bytes) {
                PQclear(res);
                status = db_fail(f, ECP_ETOOBIG, "a row of %zu bytes exceeds database.maxResultBytes (%zu)", row.len,
                                 run->max_bytes);
                break;
            }
            if (run->keep_values)
                keep_values(res, out);
            bool added = page_add(h, run, out, row.data, row.len);
            PQclear(res);
            if (!added)
                break;
        } else if (st == PGRES_TUPLES_OK || st == PGRES_COMMAND_OK) {
            if (h->statement_ended || !out->fields) {
                db_result_free(out);
                read_fields(res, out);
            }
            const char *tuples = PQcmdTuples(res);
            if (st == PGRES_COMMAND_OK || (tuples[0] && strncmp(PQcmdStatus(res), "SELECT", 6)))
                out->affected_rows = tuples[0] ? atoll(tuples) : 0;
            h->statement_ended = true;
            PQclear(res);
        } else {
            status = fail_result(h, res, run, f);
            PQclear(res);
            break;
        }
    }
    buf_free(&row);
    if (status < 0) {
        h->in_result = true;
        drain(h);
    }
    if (h->notices.len) {
        buf_append(&out->notices, h->notices.data, h->notices.len);
        buf_clear(&h->notices);
    }
    return status;
}

static int pg_execute(db_handle *h, const char *sql, const database_value *params, size_t param_count, size_t skip,
                      bool keep_cursor, const db_run *run, database_result *out, database_failure *f);

/* Nullability, primary keys and defaults of the result's columns that come
 * from a table, from the catalogs. Only when the connection is free again
 * (the rows were read to their end): a cursor holds it otherwise. */
static void read_origins(db_handle *h, const db_run *run, database_result *out)
{
    buf sql = BUF_INIT;
    buf_append_str(&sql, "SELECT a.attrelid::bigint, a.attnum, NOT a.attnotnull, COALESCE(a.attnum = ANY (i.indkey), false),"
                         " pg_get_expr(d.adbin, d.adrelid) FROM pg_attribute a"
                         " LEFT JOIN pg_index i ON i.indrelid = a.attrelid AND i.indisprimary"
                         " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
                         " WHERE (a.attrelid, a.attnum) IN (");
    size_t n = 0;
    for (size_t i = 0; i < out->field_count; i++)
        if (out->fields[i].origin_table && out->fields[i].origin_column > 0)
            buf_appendf(&sql, "%s(%lld::oid, %d::int2)", n++ ? ", " : "", (long long)out->fields[i].origin_table,
                        out->fields[i].origin_column);
    buf_push(&sql, ')');
    if (n) {
        db_run meta = *run;
        meta.keep_values = true;
        meta.page_size = 10000;
        meta.max_bytes = 1 << 20;
        database_result m;
        memset(&m, 0, sizeof m);
        db_result_free(&m);
        database_failure ignored;
        if (pg_execute(h, sql.data, NULL, 0, 0, false, &meta, &m, &ignored) == 0) {
            for (size_t r = 0; r < m.row_count; r++) {
                const database_value *c = &m.cells[r * m.field_count];
                if (!c[0].s || !c[1].s)
                    continue;
                for (size_t i = 0; i < out->field_count; i++) {
                    database_field *fd = &out->fields[i];
                    if (fd->origin_table != atoll(c[0].s) || fd->origin_column != atoi(c[1].s))
                        continue;
                    fd->nullable = c[2].s && c[2].s[0] == 't';
                    fd->primary_key = c[3].s && c[3].s[0] == 't';
                    free(fd->default_value);
                    fd->default_value = c[4].s ? xstrdup(c[4].s) : NULL;
                }
            }
        }
        db_result_free(&m);
    }
    buf_free(&sql);
}

static int pg_execute(db_handle *h, const char *sql, const database_value *params, size_t param_count, size_t skip,
                      bool keep_cursor, const db_run *run, database_result *out, database_failure *f)
{
    pg_close_cursor(h);
    char **values = xcalloc(param_count + 1, sizeof *values);
    for (size_t i = 0; i < param_count; i++) {
        const database_value *v = &params[i];
        switch (v->kind) {
        case DATABASE_NULL: break;
        case DATABASE_INT: values[i] = xmalloc(24); snprintf(values[i], 24, "%lld", (long long)v->i); break;
        case DATABASE_BOOL: values[i] = xstrdup(v->i ? "true" : "false"); break;
        case DATABASE_REAL: values[i] = xmalloc(32); snprintf(values[i], 32, "%.17g", v->d); break;
        default: values[i] = xstrndup(v->s, v->len); break;
        }
    }
    int sent = param_count ? PQsendQueryParams(h->conn, sql, (int)param_count, NULL, (const char *const *)values,
                                               NULL, NULL, 0)
                           : PQsendQuery(h->conn, sql);
    for (size_t i = 0; i < param_count; i++)
        free(values[i]);
    free(values);
    if (!sent)
        return fail_result(h, NULL, run, f);
    PQsetSingleRowMode(h->conn);
    /* Flush what did not fit the socket (non-blocking). */
    int flushed;
    while ((flushed = PQflush(h->conn)) == 1)
        wait_socket(h->conn, POLLOUT | POLLIN);
    h->in_result = true;
    h->statement_ended = false;
    int status = read_page(h, run, skip, out, f);
    if (status == 0 && out->done)
        out->total_rows = (int64_t)(skip + out->row_count);
    if (status == 0 && out->done && !run->keep_values)
        read_origins(h, run, out);
    if (status == 0 && !out->done && !keep_cursor)
        drain(h);
    return status;
}

static int pg_next_page(db_handle *h, const db_run *run, database_result *out, database_failure *f)
{
    if (!h->in_result)
        return ECP_ESTATE;
    /* The fields are known from the first page; a page repeats them. */
    return read_page(h, run, 0, out, f);
}

static int pg_exec_simple(db_handle *h, const char *sql, const db_run *run, database_failure *f)
{
    database_result r = {0};
    db_result_free(&r);
    db_run plain = *run;
    plain.page_size = 1;
    plain.max_bytes = 1 << 20;
    int status = pg_execute(h, sql, NULL, 0, 0, false, &plain, &r, f);
    db_result_free(&r);
    return status;
}

static const db_schema_sql postgres_schema_sql = {
    .schemas = "SELECT nspname AS name, (nspname IN ('pg_catalog', 'information_schema') OR nspname LIKE 'pg\\_%')"
               " AS is_system, pg_get_userbyid(nspowner) AS owner FROM pg_namespace"
               " WHERE $1::boolean OR NOT (nspname IN ('pg_catalog', 'information_schema') OR nspname LIKE 'pg\\_%')"
               " ORDER BY nspname",
    .tables = "SELECT n.nspname, c.relname, CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized_view'"
              " WHEN 'f' THEN 'foreign_table' ELSE 'table' END, CASE WHEN c.reltuples >= 0 THEN"
              " c.reltuples::bigint END, pg_total_relation_size(c.oid), obj_description(c.oid, 'pg_class')"
              " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
              " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY c.relname",
    .columns = "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull,"
               " pg_get_expr(d.adbin, d.adrelid), COALESCE(a.attnum = ANY (i.indkey), false), a.atttypid::bigint"
               " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
               " JOIN pg_namespace n ON n.oid = c.relnamespace"
               " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
               " LEFT JOIN pg_index i ON i.indrelid = c.oid AND i.indisprimary"
               " WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped"
               " ORDER BY a.attnum",
    .foreign_keys = "SELECT con.conname, a.attname, fn.nspname, fc.relname, fa.attname FROM pg_constraint con"
                    " JOIN pg_class c ON c.oid = con.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " JOIN pg_class fc ON fc.oid = con.confrelid JOIN pg_namespace fn ON fn.oid = fc.relnamespace"
                    " CROSS JOIN LATERAL unnest(con.conkey, con.confkey) AS k(col, fcol)"
                    " JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.col"
                    " JOIN pg_attribute fa ON fa.attrelid = con.confrelid AND fa.attnum = k.fcol"
                    " WHERE con.contype = 'f' AND n.nspname = $1 AND c.relname = $2 ORDER BY con.conname",
    .indexes = "SELECT ic.relname, i.indisunique, i.indisprimary, (SELECT string_agg(a.attname, ',' ORDER BY k.ord)"
               " FROM unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord) JOIN pg_attribute a"
               " ON a.attrelid = i.indrelid AND a.attnum = k.attnum) FROM pg_index i"
               " JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_class c ON c.oid = i.indrelid"
               " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2"
               " ORDER BY ic.relname",
    .table_info = "SELECT CASE c.relkind WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized_view'"
                  " WHEN 'f' THEN 'foreign_table' ELSE 'table' END, CASE WHEN c.reltuples >= 0 THEN"
                  " c.reltuples::bigint END, pg_total_relation_size(c.oid), obj_description(c.oid, 'pg_class')"
                  " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                  " WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
    .ddl = "SELECT CASE WHEN c.relkind IN ('v', 'm') THEN 'CREATE VIEW ' || quote_ident($1) || '.' || quote_ident($2)"
           " || E' AS\\n' || pg_get_viewdef(c.oid, true) ELSE"
           " 'CREATE TABLE ' || quote_ident($1) || '.' || quote_ident($2) || E' (\\n' ||"
           " (SELECT string_agg('    ' || quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod) ||"
           " CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||"
           " COALESCE(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), ''), E',\\n' ORDER BY a.attnum)"
           " FROM pg_attribute a LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
           " WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) ||"
           " COALESCE((SELECT string_agg(E',\\n    CONSTRAINT ' || quote_ident(con.conname) || ' ' ||"
           " pg_get_constraintdef(con.oid), '' ORDER BY con.conname) FROM pg_constraint con"
           " WHERE con.conrelid = c.oid), '') || E'\\n);' ||"
           " COALESCE((SELECT string_agg(E'\\n' || pg_get_indexdef(i.indexrelid) || ';', '' ORDER BY i.indexrelid)"
           " FROM pg_index i WHERE i.indrelid = c.oid AND NOT EXISTS (SELECT 1 FROM pg_constraint k"
           " WHERE k.conindid = i.indexrelid)), '') END"
           " FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
};

const db_engine db_postgres_engine = {
    .type_name = "postgres",
    .open = pg_open,
    .close = pg_close,
    .server_version = pg_version,
    .execute = pg_execute,
    .next_page = pg_next_page,
    .close_cursor = pg_close_cursor,
    .interrupt = NULL, /* the job sends PQcancel itself: see next_result */
    .exec_simple = pg_exec_simple,
    .schema = &postgres_schema_sql,
};
