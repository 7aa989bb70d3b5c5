/* adapter: the database service on the wire (the `database` namespace):
 * params in, interface.h's calls, results out.
 *
 * Engine failures are -32603 with data {engineCode, position?, detail?}; bad
 * params, an unknown connection or query id are -32602 naming the field; a
 * cancelled query is -32800.
 */
#include "adapter.h"
#include "database/interface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"

/* ----- errors ---------------------------------------------------------------------------- */

static const ecp_wire_map wire_codes[] = {
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
    {ECP_ENOTSUP, ECP_WIRE_INVALID_PARAMS},
    {ECP_EEXIST, ECP_WIRE_INVALID_PARAMS},
};

/* f: the failure in the engine's words (its status is status). */
static void reply_error(ecp_call *call, int status, const database_failure *f)
{
    int code = ecp_wire_code(wire_codes, sizeof wire_codes / sizeof wire_codes[0], status, ECP_WIRE_INTERNAL_ERROR);
    if (code != ECP_WIRE_INTERNAL_ERROR) {
        ecp_call_error(call, code, "%s", f->message);
        return;
    }
    ecp_error_data d;
    json_writer *w = ecp_error_data_begin(&d);
    jw_key_string(w, "engineCode", f->engine_code[0] ? f->engine_code : ecp_status_text(status));
    if (f->position > 0)
        jw_key_int(w, "position", f->position);
    if (f->detail[0])
        jw_key_string(w, "detail", f->detail);
    ecp_call_error_with(call, code, &d, "%s", f->message);
}

/* A refusal without the engine's words. */
static void reply_refusal(ecp_call *call, int status, const ecp_error *err)
{
    database_failure f = {.status = status};
    snprintf(f.message, sizeof f.message, "%s", err ? err->message : ecp_status_text(status));
    reply_error(call, f.status, &f);
}

/* The first lines of an answer: a failure (status < 0) is answered and true
 * returned; on success nothing is, for the result to follow. */
static bool failed(ecp_call *call, int status, const database_failure *f)
{
    if (status < 0)
        reply_error(call, status, f);
    return status < 0;
}

/* The same for a refusal (reply_refusal). */
static bool refused(ecp_call *call, int status, const ecp_error *err)
{
    if (status < 0)
        reply_refusal(call, status, err);
    return status < 0;
}

/* ----- params ---------------------------------------------------------------------------- */

/* Reads connectionId and checks it names a connection (before the other params, so that is the error). */
static bool read_conn(ecp_call *call, database_service *svc, const char **id, database_connection_info *info)
{
    ecp_str s;
    if (!ecp_arg_string(call, ecp_call_params(call), "connectionId", &s))
        return false;
    if (!database_connection_get(svc, s.ptr, info)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "connectionId: no connection %s", s.ptr);
        return false;
    }
    *id = s.ptr;
    return true;
}

/* An optional string that must be one of two words: *which is -1 when it is
 * absent, else 0 for first and 1 for second; false when the call was answered. */
static bool arg_either(ecp_call *call, json_ref obj, const char *name, const char *first, const char *second,
                       int *which)
{
    ecp_str s;
    if (!ecp_arg_string_opt(call, obj, name, &s))
        return false;
    *which = !s.ptr ? -1 : !strcmp(s.ptr, first) ? 0 : !strcmp(s.ptr, second) ? 1 : -2;
    if (*which == -2)
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must be \"%s\" or \"%s\"", name, first, second);
    return *which != -2;
}

static char *dup_str(ecp_str s) { return s.ptr ? xstrndup(s.ptr, s.len) : NULL; }

/* Reads a config; with base (updateConnection) absent fields keep base's values. */
static bool read_config(ecp_call *call, json_ref obj, const database_config *base, database_config *out)
{
    const json_doc *doc = ecp_call_doc(call);
    if (base)
        database_config_copy(out, base);
    else
        memset(out, 0, sizeof *out);
    ecp_str s;
#define STR_FIELD(key, field)                                       \
    if (!ecp_arg_string_opt(call, obj, "config." key, &s))          \
        goto bad;                                                   \
    if (s.ptr) {                                                    \
        free(out->field);                                           \
        out->field = dup_str(s);                                    \
    }
    if (json_type_of(doc, json_get(doc, obj, "password")) != JSON_ABSENT) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS,
                       "config.password: not accepted; store the password as a secret and name it in passwordSecret");
        goto bad;
    }
    if (!base) {
        STR_FIELD("id", id)
        if (out->id && (out->id[0] == '\0' || strlen(out->id) >= DATABASE_ID_MAX)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.id: must be 1 to %d bytes", DATABASE_ID_MAX - 1);
            goto bad;
        }
    }
    STR_FIELD("name", name)
    if (!out->name) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.name: required string");
        goto bad;
    }
    int type;
    if (!arg_either(call, obj, "config.type", "sqlite", "postgres", &type))
        goto bad;
    if (type >= 0) {
        out->type = type ? DATABASE_POSTGRES : DATABASE_SQLITE;
    } else if (!base) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.type: required string");
        goto bad;
    }
    STR_FIELD("path", path)
    STR_FIELD("host", host)
    STR_FIELD("database", database)
    STR_FIELD("username", username)
    STR_FIELD("passwordSecret", password_secret)
    int64_t port, ct, qt;
    if (!ecp_arg_int_opt(call, obj, "config.port", out->port, &port) ||
        !ecp_arg_int_opt(call, obj, "config.connectionTimeout", out->connection_timeout_ms, &ct) ||
        !ecp_arg_int_opt(call, obj, "config.queryTimeout", out->query_timeout_ms, &qt) ||
        !ecp_arg_bool_opt(call, obj, "config.readOnly", out->read_only, &out->read_only))
        goto bad;
    if (port < 0 || port > 65535 || ct < 0 || qt < 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.%s: out of range",
                       port < 0 || port > 65535 ? "port" : ct < 0 ? "connectionTimeout" : "queryTimeout");
        goto bad;
    }
    out->port = (int)port;
    out->connection_timeout_ms = ct;
    out->query_timeout_ms = qt;
    json_ref ssl = json_get(doc, obj, "ssl");
    json_type st = json_type_of(doc, ssl);
    if (st == JSON_BOOL) {
        json_bool(doc, ssl, &out->ssl);
    } else if (st == JSON_OBJECT) {
        out->ssl = true;
        if (!ecp_arg_bool_opt(call, ssl, "config.ssl.rejectUnauthorized", false, &out->ssl_reject_unauthorized))
            goto bad;
        STR_FIELD("ssl.ca", ssl_ca)
        STR_FIELD("ssl.cert", ssl_cert)
        STR_FIELD("ssl.key", ssl_key)
    } else if (st != JSON_ABSENT && st != JSON_NULL) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.ssl: must be a boolean or an object");
        goto bad;
    }
    int scope;
    if (!arg_either(call, obj, "config.scope", "global", "project", &scope))
        goto bad;
    if (scope >= 0)
        out->project = scope;
    if (out->type == DATABASE_SQLITE && !out->path) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.path: required for a sqlite connection");
        goto bad;
    }
    if (out->type == DATABASE_POSTGRES && (!out->database || !out->username)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "config.%s: required for a postgres connection",
                       out->database ? "username" : "database");
        goto bad;
    }
    return true;
#undef STR_FIELD
bad:
    database_config_clear(out);
    return false;
}

static bool read_params(ecp_call *call, json_ref obj, const char *name, database_value **out, size_t *count)
{
    json_ref list;
    *out = NULL;
    *count = 0;
    if (!ecp_arg_array_opt(call, obj, name, &list))
        return false;
    if (list == JSON_NO_REF)
        return true;
    const json_doc *doc = ecp_call_doc(call);
    size_t n = json_length(doc, list), i = 0;
    database_value *v = xcalloc(n ? n : 1, sizeof *v);
    for (json_ref r = json_first(doc, list); r != JSON_NO_REF; r = json_next(doc, r), i++) {
        const char *s;
        size_t len;
        switch (json_type_of(doc, r)) {
        case JSON_NULL: v[i].kind = DATABASE_NULL; break;
        case JSON_BOOL: {
            bool b;
            json_bool(doc, r, &b);
            v[i].kind = DATABASE_BOOL;
            v[i].i = b;
            break;
        }
        case JSON_NUMBER:
            if (json_int64(doc, r, &v[i].i)) {
                v[i].kind = DATABASE_INT;
            } else {
                v[i].kind = DATABASE_REAL;
                json_double(doc, r, &v[i].d);
            }
            break;
        case JSON_STRING:
            json_string(doc, r, ecp_call_arena(call), &s, &len);
            v[i].kind = DATABASE_TEXT;
            v[i].s = xstrndup(s, len);
            v[i].len = len;
            break;
        default: {
            /* Arrays and objects travel as their JSON text (PostgreSQL json/jsonb, SQLite's json functions). */
            size_t rl;
            const char *raw = json_raw(doc, r, &rl);
            v[i].kind = DATABASE_TEXT;
            v[i].s = xstrndup(raw, rl);
            v[i].len = rl;
            break;
        }
        }
    }
    *out = v;
    *count = n;
    return true;
}

/* ----- rendering ------------------------------------------------------------------------------ */

static void write_fields(json_writer *w, const database_result *r)
{
    jw_key(w, "fields");
    jw_array_begin(w);
    for (size_t i = 0; i < r->field_count; i++) {
        const database_field *f = &r->fields[i];
        jw_object_begin(w);
        jw_key_string(w, "name", f->name);
        jw_key_string(w, "dataType", f->data_type);
        jw_key_int(w, "dataTypeId", f->type_id);
        jw_key_bool(w, "nullable", f->nullable);
        jw_key_string_opt(w, "defaultValue", f->default_value);
        jw_key_bool(w, "isPrimaryKey", f->primary_key);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_query_result(json_writer *w, const database_query_result *q)
{
    const database_result *r = q->result;
    jw_object_begin(w);
    jw_key_string(w, "queryId", q->query_id);
    jw_key_string(w, "connectionId", q->connection_id);
    jw_key_string(w, "sql", q->sql);
    jw_key(w, "rows");
    jw_array_begin(w);
    if (r->rows.len)
        jw_raw(w, r->rows.data, r->rows.len);
    jw_array_end(w);
    write_fields(w, r);
    jw_key_int(w, "rowCount", (int64_t)r->row_count);
    if (r->total_rows >= 0)
        jw_key_int(w, "totalRows", r->total_rows);
    jw_key_bool(w, "hasMore", !r->done);
    if (r->truncated)
        jw_key_bool(w, "truncated", true);
    jw_key_int(w, "startedAt", q->started_at);
    jw_key_int(w, "completedAt", q->completed_at);
    jw_key_double(w, "durationMs", q->duration_ms);
    if (r->affected_rows >= 0)
        jw_key_int(w, "affectedRows", r->affected_rows);
    if (r->notices.len) {
        jw_key(w, "notices");
        jw_array_begin(w);
        jw_raw(w, r->notices.data, r->notices.len);
        jw_array_end(w);
    }
    jw_object_end(w);
}

static const char *status_name(database_link_status s)
{
    static const char *const names[] = {"disconnected", "connecting", "connected", "error"};
    return names[s];
}

static void write_info(json_writer *w, const database_connection_info *info)
{
    const database_config *cfg = info->config;
    jw_object_begin(w);
    jw_key_string(w, "id", cfg->id);
    jw_key_string(w, "name", cfg->name);
    jw_key_string(w, "type", cfg->type == DATABASE_POSTGRES ? "postgres" : "sqlite");
    jw_key_string(w, "status", status_name(info->status));
    if (cfg->type == DATABASE_SQLITE)
        jw_key_string(w, "path", cfg->path);
    jw_key_string(w, "host", cfg->host ? cfg->host : "");
    jw_key_string(w, "database", cfg->database ? cfg->database : (cfg->path ? cfg->path : ""));
    jw_key_string_opt(w, "error", info->error);
    jw_key_bool(w, "readOnly", cfg->read_only);
    jw_key_string(w, "scope", cfg->project ? "project" : "global");
    if (info->connected_at)
        jw_key_int(w, "connectedAt", info->connected_at);
    jw_object_end(w);
}

/* A start that was refused at once is answered here; else its job serves the call. */
static void started(ecp_call *call, ecp_job *job, const ecp_error *err)
{
    if (!job)
        reply_refusal(call, err->status, err);
}

/* For the calls that change the saved connections: their path checks run off
 * the loop, but a client that pipelines `createConnection` then `connect`
 * (or `deleteConnection` then `listConnections`) must see the change, as it
 * did when these answered at once. So the client's later messages wait. */
static void started_in_order(ecp_call *call, ecp_job *job, const ecp_error *err)
{
    if (job)
        ecp_call_hold_client(call);
    else
        reply_refusal(call, err->status, err);
}

/* The `config` param, as read_config reads it. */
static bool read_config_param(ecp_call *call, const database_config *base, database_config *out)
{
    json_ref obj;
    return ecp_arg_object(call, ecp_call_params(call), "config", &obj) && read_config(call, obj, base, out);
}

/* ----- connections ------------------------------------------------------------------------------ */

/* {success: true}, or the refusal. */
static void answer_done(void *ctx, int status, const ecp_error *err)
{
    if (!refused(ctx, status, err))
        ecp_call_reply_success(ctx, true);
}

static void answer_created(void *ctx, int status, const ecp_error *err, const char *connection_id)
{
    if (!refused(ctx, status, err))
        ecp_call_reply_string(ctx, "connectionId", connection_id);
}

static void m_create(void *ctx, ecp_call *call)
{
    database_config cfg;
    if (!read_config_param(call, NULL, &cfg))
        return;
    ecp_error err = {0};
    database_config_args args = {.config = &cfg, .serve = call};
    started_in_order(call, database_connection_create_start(ctx, &args, answer_created, call, &err), &err);
    database_config_clear(&cfg);
}

static void answer_success(void *ctx, int status, const database_failure *failure)
{
    if (!failed(ctx, status, failure))
        ecp_call_reply_success(ctx, true);
}

typedef ecp_job *(*connection_start_fn)(database_service *, const database_connection_args *, database_done_cb,
                                        void *, ecp_error *);

static void connection_call(database_service *svc, ecp_call *call, connection_start_fn start)
{
    const char *id;
    database_connection_info info;
    if (!read_conn(call, svc, &id, &info))
        return;
    ecp_error err = {0};
    database_connection_args args = {.connection_id = id, .serve = call};
    started(call, start(svc, &args, answer_success, call, &err), &err);
}

static void m_connect(void *ctx, ecp_call *call) { connection_call(ctx, call, database_connect_start); }
static void m_disconnect(void *ctx, ecp_call *call) { connection_call(ctx, call, database_disconnect_start); }
static void m_delete(void *ctx, ecp_call *call) { connection_call(ctx, call, database_connection_delete_start); }

static void m_list(void *ctx, ecp_call *call)
{
    int which; /* -1: both */
    if (!arg_either(call, ecp_call_params(call), "scope", "global", "project", &which))
        return;
    size_t n = database_connection_list(ctx, which, NULL, 0);
    database_connection_info *list = xcalloc(n ? n : 1, sizeof *list);
    database_connection_list(ctx, which, list, n);
    json_writer *w = ecp_call_result_list(call, "connections");
    for (size_t i = 0; i < n; i++)
        write_info(w, &list[i]);
    ecp_call_finish_list(call, w);
    free(list);
}

static void m_get(void *ctx, ecp_call *call)
{
    ecp_str id;
    if (!ecp_arg_string(call, ecp_call_params(call), "connectionId", &id))
        return;
    database_connection_info info;
    bool found = database_connection_get(ctx, id.ptr, &info);
    json_writer *w = ecp_call_result_key(call, "connection");
    if (found)
        write_info(w, &info);
    else
        jw_null(w);
    ecp_call_finish_key(call, w);
}

static void answer_test(void *ctx, int status, const database_failure *failure, const database_test_result *result)
{
    ecp_call *call = ctx;
    if (status == ECP_EINVAL) { /* refused before opening: bad params, not a failed test */
        reply_error(call, status, failure);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    if (status < 0) {
        jw_key_string(w, "error", failure->message);
        if (failure->engine_code[0])
            jw_key_string(w, "engineCode", failure->engine_code);
    } else {
        jw_key_double(w, "latencyMs", result->latency_ms);
        jw_key_string(w, "serverVersion", result->server_version);
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_test(void *ctx, ecp_call *call)
{
    database_config cfg;
    if (!read_config_param(call, NULL, &cfg))
        return;
    ecp_error err = {0};
    database_test_args args = {.config = &cfg, .serve = call};
    started(call, database_connection_test_start(ctx, &args, answer_test, call, &err), &err);
    database_config_clear(&cfg);
}

static void answer_updated(void *ctx, int status, const ecp_error *err, const char *connection_id)
{
    (void)connection_id;
    answer_done(ctx, status, err);
}

static void m_update(void *ctx, ecp_call *call)
{
    const char *id;
    database_connection_info info;
    database_config cfg;
    if (!read_conn(call, ctx, &id, &info) || !read_config_param(call, info.config, &cfg))
        return;
    ecp_error err = {0};
    database_config_args args = {.connection_id = id, .config = &cfg, .serve = call};
    started_in_order(call, database_connection_update_start(ctx, &args, answer_updated, call, &err), &err);
    database_config_clear(&cfg);
}

/* ----- queries ------------------------------------------------------------------------------------ */

/* On the query's pool thread: a page may be 16 MiB of rows. */
static void format_query_result(void *fctx, const database_query_result *r, buf *out)
{
    (void)fctx;
    json_writer w;
    jw_init(&w, out);
    write_query_result(&w, r);
}

static void answer_query(void *ctx, int status, const database_failure *failure, const database_query_result *result,
                         ecp_shared *formatted)
{
    (void)result;
    if (!failed(ctx, status, failure))
        ecp_call_reply_shared(ctx, formatted);
}

static void m_query(void *ctx, ecp_call *call)
{
    const char *id;
    database_connection_info info;
    ecp_str sql;
    database_value *params;
    size_t n;
    json_ref p = ecp_call_params(call);
    if (!read_conn(call, ctx, &id, &info) || !ecp_arg_string(call, p, "sql", &sql) ||
        !read_params(call, p, "params", &params, &n))
        return;
    ecp_error err = {0};
    database_query_args args = {.connection_id = id, .sql = sql.ptr, .params = params, .param_count = n,
                                .format = format_query_result, .serve = call};
    started(call, database_query_start(ctx, &args, answer_query, call, &err), &err);
    database_values_free(params, n);
}

static void m_fetch(void *ctx, ecp_call *call)
{
    ecp_str qid;
    size_t offset, limit;
    json_ref p = ecp_call_params(call);
    if (!ecp_arg_string(call, p, "queryId", &qid) || !ecp_arg_index(call, p, "offset", &offset) ||
        !ecp_arg_index(call, p, "limit", &limit))
        return;
    ecp_error err = {0};
    database_fetch_args args = {.query_id = qid.ptr, .offset = offset, .limit = limit,
                                .format = format_query_result, .serve = call};
    started(call, database_fetch_start(ctx, &args, answer_query, call, &err), &err);
}

static void answer_transaction(void *ctx, int status, const database_failure *failure,
                               const database_transaction_result *r)
{
    ecp_call *call = ctx;
    if (failed(call, status, failure))
        return;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", r->committed);
    jw_key(w, "results");
    jw_array_begin(w);
    for (size_t i = 0; i < r->statement_count; i++) {
        if (r->committed || i < r->failed_index) {
            write_query_result(w, &r->statements[i]);
        } else if (i == r->failed_index) {
            const database_failure *f = &r->statement_failures[i];
            jw_object_begin(w);
            jw_key_string(w, "error", f->message[0] ? f->message : r->failure->message);
            if (f->engine_code[0])
                jw_key_string(w, "engineCode", f->engine_code);
            jw_key_string_opt(w, "label", r->labels[i]);
            jw_object_end(w);
        }
    }
    jw_array_end(w);
    if (r->committed) {
        jw_key_int(w, "committedAt", r->statements[r->statement_count - 1].completed_at);
    } else {
        jw_key_int(w, "rolledBackAt", r->statements[0].completed_at);
        jw_key_string(w, "error", r->failure->message);
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

static void free_statements(database_statement_args *list, database_value **params, size_t n)
{
    for (size_t i = 0; i < n; i++)
        database_values_free(params[i], list[i].param_count);
    free(list);
    free(params);
}

static void m_transaction(void *ctx, ecp_call *call)
{
    const char *id;
    database_connection_info info;
    json_ref list;
    json_ref p = ecp_call_params(call);
    if (!read_conn(call, ctx, &id, &info) || !ecp_arg_array(call, p, "queries", &list))
        return;
    const json_doc *doc = ecp_call_doc(call);
    size_t n = json_length(doc, list);
    if (n == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "queries: at least one query");
        return;
    }
    database_statement_args *statements = xcalloc(n, sizeof *statements);
    database_value **params = xcalloc(n, sizeof *params);
    size_t i = 0;
    for (json_ref q = json_first(doc, list); q != JSON_NO_REF; q = json_next(doc, q), i++) {
        char name[64];
        ecp_str sql, label = {0};
        snprintf(name, sizeof name, "queries[%zu].sql", i);
        bool ok = json_type_of(doc, q) == JSON_OBJECT && ecp_arg_string(call, q, name, &sql);
        if (ok) {
            snprintf(name, sizeof name, "queries[%zu].label", i);
            ok = ecp_arg_string_opt(call, q, name, &label);
        }
        if (ok) {
            snprintf(name, sizeof name, "queries[%zu].params", i);
            ok = read_params(call, q, name, &params[i], &statements[i].param_count);
        }
        if (!ok) {
            if (json_type_of(doc, q) != JSON_OBJECT)
                ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "queries[%zu]: must be an object", i);
            free_statements(statements, params, i);
            return;
        }
        statements[i].sql = sql.ptr;
        statements[i].params = params[i];
        statements[i].label = label.ptr;
    }
    ecp_error err = {0};
    database_transaction_args args = {.connection_id = id, .statements = statements, .statement_count = n,
                                      .serve = call};
    started(call, database_transaction_start(ctx, &args, answer_transaction, call, &err), &err);
    free_statements(statements, params, n);
}

static void m_cancel(void *ctx, ecp_call *call)
{
    ecp_str qid;
    if (!ecp_arg_string(call, ecp_call_params(call), "queryId", &qid))
        return;
    bool running = false;
    ecp_error err = {0};
    if (database_query_cancel(ctx, qid.ptr, &running, &err) < 0) {
        reply_refusal(call, err.status, &err);
        return;
    }
    ecp_call_reply_bool(call, "cancelled", running);
}

/* ----- schema browsing ------------------------------------------------------------------------------ */

static const database_value *cell(const database_result *r, size_t row, size_t col)
{
    static const database_value null_value = {.kind = DATABASE_NULL};
    return row < r->row_count && col < r->field_count ? &r->cells[row * r->field_count + col] : &null_value;
}

static void key_cell_string(json_writer *w, const char *key, const database_value *v, bool omit_null)
{
    if (v->kind == DATABASE_NULL) {
        if (!omit_null)
            jw_key_null(w, key);
        return;
    }
    jw_key(w, key);
    if (v->kind == DATABASE_TEXT)
        jw_string_n(w, v->s, v->len);
    else {
        buf b = BUF_INIT;
        database_value_json(&b, v);
        jw_string_n(w, b.data, b.len);
        buf_free(&b);
    }
}

static bool cell_true(const database_value *v)
{
    return (v->kind == DATABASE_INT || v->kind == DATABASE_BOOL) ? v->i != 0
           : v->kind == DATABASE_TEXT                     ? (v->len && (v->s[0] == 't' || v->s[0] == '1'))
                                                    : false;
}

static void key_cell_int(json_writer *w, const char *key, const database_value *v)
{
    if (v->kind == DATABASE_INT)
        jw_key_int(w, key, v->i);
    else if (v->kind == DATABASE_TEXT && v->len)
        jw_key_int(w, key, strtoll(v->s, NULL, 10));
}

/* How one column of a schema query's rows is written. */
typedef enum cell_kind {
    CELL_STRING,      /* a null is written null */
    CELL_STRING_OPT,  /* a null is left out */
    CELL_BOOL,
    CELL_INT,         /* left out unless a number */
} cell_kind;

typedef struct row_field {
    const char *key;
    cell_kind kind;
} row_field;

/* The fields of each row, column by column. */
static const row_field schema_row[] = {{"name", CELL_STRING}, {"isSystem", CELL_BOOL}, {"owner", CELL_STRING_OPT}};
static const row_field table_row[] = {
    {"schema", CELL_STRING}, {"name", CELL_STRING},    {"type", CELL_STRING},
    {"rowCount", CELL_INT},  {"sizeBytes", CELL_INT}, {"comment", CELL_STRING_OPT},
};
static const row_field column_row[] = {
    {"name", CELL_STRING},           {"dataType", CELL_STRING},    {"nullable", CELL_BOOL},
    {"defaultValue", CELL_STRING_OPT}, {"isPrimaryKey", CELL_BOOL}, {"dataTypeId", CELL_INT},
};
static const row_field foreign_key_row[] = {
    {"name", CELL_STRING},           {"column", CELL_STRING},          {"referencedSchema", CELL_STRING},
    {"referencedTable", CELL_STRING}, {"referencedColumn", CELL_STRING},
};

/* key: an array of r's rows, each an object of fields. */
static void write_rows(json_writer *w, const char *key, const database_result *r, const row_field *fields,
                       size_t count)
{
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < r->row_count; i++) {
        jw_object_begin(w);
        for (size_t col = 0; col < count; col++) {
            const database_value *v = cell(r, i, col);
            switch (fields[col].kind) {
            case CELL_STRING: key_cell_string(w, fields[col].key, v, false); break;
            case CELL_STRING_OPT: key_cell_string(w, fields[col].key, v, true); break;
            case CELL_BOOL: jw_key_bool(w, fields[col].key, cell_true(v)); break;
            case CELL_INT: key_cell_int(w, fields[col].key, v); break;
            }
        }
        jw_object_end(w);
    }
    jw_array_end(w);
}
#define WRITE_ROWS(w, key, r, fields) write_rows(w, key, r, fields, sizeof fields / sizeof fields[0])

static void answer_schema(void *ctx, int status, const database_failure *failure, const database_schema_result *op)
{
    ecp_call *call = ctx;
    if (failed(call, status, failure))
        return;
    const database_result *r = op->parts[0];
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    if (op->read == DATABASE_SCHEMAS) {
        WRITE_ROWS(w, "schemas", r, schema_row);
    } else if (op->read == DATABASE_TABLES) {
        WRITE_ROWS(w, "tables", r, table_row);
    } else if (op->read == DATABASE_DESCRIBE) {
        const database_result *cols = op->parts[1], *fks = op->parts[2], *idx = op->parts[3];
        jw_key_string(w, "schema", op->schema);
        jw_key_string(w, "name", op->table);
        key_cell_string(w, "type", cell(r, 0, 0), false);
        WRITE_ROWS(w, "columns", cols, column_row);
        bool any_pk = false;
        for (size_t i = 0; i < cols->row_count; i++)
            any_pk |= cell_true(cell(cols, i, 4));
        if (any_pk) {
            jw_key(w, "primaryKey");
            jw_array_begin(w);
            for (size_t i = 0; i < cols->row_count; i++)
                if (cell_true(cell(cols, i, 4))) {
                    const database_value *v = cell(cols, i, 0);
                    jw_string_n(w, v->s, v->len);
                }
            jw_array_end(w);
        }
        WRITE_ROWS(w, "foreignKeys", fks, foreign_key_row);
        jw_key(w, "indexes");
        jw_array_begin(w);
        for (size_t i = 0; i < idx->row_count; i++) {
            jw_object_begin(w);
            key_cell_string(w, "name", cell(idx, i, 0), false);
            jw_key_bool(w, "isUnique", cell_true(cell(idx, i, 1)));
            jw_key_bool(w, "isPrimary", cell_true(cell(idx, i, 2)));
            jw_key(w, "columns");
            jw_array_begin(w);
            const database_value *v = cell(idx, i, 3);
            if (v->kind == DATABASE_TEXT) {
                const char *s = v->s;
                while (*s) {
                    const char *comma = strchr(s, ',');
                    size_t len = comma ? (size_t)(comma - s) : strlen(s);
                    jw_string_n(w, s, len);
                    s += len + (comma ? 1 : 0);
                }
            }
            jw_array_end(w);
            jw_object_end(w);
        }
        jw_array_end(w);
        key_cell_int(w, "rowCount", cell(r, 0, 1));
        key_cell_int(w, "sizeBytes", cell(r, 0, 2));
        key_cell_string(w, "comment", cell(r, 0, 3), true);
    } else {
        const database_value *v = cell(op->parts[1], 0, 0);
        jw_key(w, "ddl");
        if (v->kind == DATABASE_TEXT)
            jw_string_n(w, v->s, v->len);
        else
            jw_string(w, "");
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

static void schema_call(database_service *svc, ecp_call *call, database_schema_args *args)
{
    ecp_error err = {0};
    args->serve = call;
    started(call, database_schema_start(svc, args, answer_schema, call, &err), &err);
}

static void m_list_schemas(void *ctx, ecp_call *call)
{
    database_schema_args args = {.read = DATABASE_SCHEMAS};
    database_connection_info info;
    if (!read_conn(call, ctx, &args.connection_id, &info) ||
        !ecp_arg_bool_opt(call, ecp_call_params(call), "includeSystem", false, &args.include_system))
        return;
    schema_call(ctx, call, &args);
}

static void m_list_tables(void *ctx, ecp_call *call)
{
    database_schema_args args = {.read = DATABASE_TABLES};
    database_connection_info info;
    ecp_str schema;
    if (!read_conn(call, ctx, &args.connection_id, &info) ||
        !ecp_arg_string_opt(call, ecp_call_params(call), "schema", &schema))
        return;
    args.schema = schema.ptr;
    schema_call(ctx, call, &args);
}

static void table_op(void *ctx, ecp_call *call, database_schema_read read)
{
    database_schema_args args = {.read = read};
    database_connection_info info;
    ecp_str schema, table;
    json_ref p = ecp_call_params(call);
    if (!read_conn(call, ctx, &args.connection_id, &info) || !ecp_arg_string(call, p, "schema", &schema) ||
        !ecp_arg_string(call, p, "table", &table))
        return;
    args.schema = schema.ptr;
    args.table = table.ptr;
    schema_call(ctx, call, &args);
}

static void m_describe(void *ctx, ecp_call *call) { table_op(ctx, call, DATABASE_DESCRIBE); }
static void m_ddl(void *ctx, ecp_call *call) { table_op(ctx, call, DATABASE_DDL); }

/* ----- history ------------------------------------------------------------------------------------------ */

static void history_answer(void *ctx, int status, const ecp_error *err, const database_history_entry *entries,
                           size_t count)
{
    ecp_call *call = ctx;
    if (refused(call, status, err))
        return;
    json_writer *w = ecp_call_result_list(call, "entries");
    for (size_t i = 0; i < count; i++) {
        const database_history_entry *e = &entries[i];
        jw_object_begin(w);
        jw_key_int(w, "id", e->id);
        jw_key_string(w, "queryId", e->query_id);
        jw_key_string(w, "connectionId", e->connection_id);
        jw_key_string(w, "sql", e->sql);
        jw_key_int(w, "executedAt", e->executed_at);
        if (e->duration_ms >= 0)
            jw_key_double(w, "durationMs", e->duration_ms);
        if (e->row_count >= 0)
            jw_key_int(w, "rowCount", e->row_count);
        jw_key_string(w, "status", e->status);
        jw_key_string_opt(w, "error", e->error);
        jw_key_bool(w, "isFavorite", e->favorite);
        jw_object_end(w);
    }
    ecp_call_finish_list(call, w);
}

static void history_read(void *ctx, ecp_call *call, bool search, bool favorites)
{
    json_ref p = ecp_call_params(call);
    ecp_str conn = {0}, text = {0};
    int64_t limit = 100, offset = 0;
    if (!ecp_arg_string_opt(call, p, "connectionId", &conn))
        return;
    if (search && !ecp_arg_string(call, p, "query", &text))
        return;
    if (!search && !favorites &&
        (!ecp_arg_int_opt(call, p, "limit", 100, &limit) || !ecp_arg_int_opt(call, p, "offset", 0, &offset)))
        return;
    if (limit < 1 || limit > 10000 || offset < 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s", limit < 1 || limit > 10000 ? "limit: must be 1 to 10000"
                                                                                       : "offset: must be >= 0");
        return;
    }
    database_history_query q = {.connection_id = conn.ptr, .search = text.ptr,
                          .favorites_only = favorites, .limit = search || favorites ? 1000 : limit,
                          .offset = offset};
    database_history_list(ctx, &q, history_answer, ecp_call_defer(call));
}

static void m_history(void *ctx, ecp_call *call) { history_read(ctx, call, false, false); }
static void m_search_history(void *ctx, ecp_call *call) { history_read(ctx, call, true, false); }
static void m_favorites(void *ctx, ecp_call *call) { history_read(ctx, call, false, true); }

static void cleared(void *ctx, int status, const ecp_error *err)
{
    if (!refused(ctx, status, err))
        ecp_call_reply_bool(ctx, "cleared", true);
}

static void m_clear_history(void *ctx, ecp_call *call)
{
    ecp_str conn;
    if (!ecp_arg_string_opt(call, ecp_call_params(call), "connectionId", &conn))
        return;
    database_history_clear(ctx, conn.ptr, cleared, ecp_call_defer(call));
}

static void m_favorite(void *ctx, ecp_call *call)
{
    json_ref p = ecp_call_params(call);
    int64_t id;
    bool favorite;
    if (!ecp_arg_int(call, p, "historyId", &id))
        return;
    json_ref f = json_get(ecp_call_doc(call), p, "favorite");
    if (json_type_of(ecp_call_doc(call), f) != JSON_BOOL) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "favorite: required boolean");
        return;
    }
    json_bool(ecp_call_doc(call), f, &favorite);
    database_history_favorite(ctx, id, favorite, answer_done, ecp_call_defer(call));
}

/* ----- the table ------------------------------------------------------------------------------------------ */

/* A config's fields after its name and type, which updateConnection may leave out too. */
#define CONFIG_FIELDS                                                                                               \
    "path?: string, host?: string, port?: integer, database?: string, username?: string, passwordSecret?: string, " \
    "ssl?: boolean|{rejectUnauthorized?: boolean, ca?: string, cert?: string, key?: string}, "                      \
    "connectionTimeout?: integer, queryTimeout?: integer, readOnly?: boolean, scope?: string"
#define NEW_CONFIG "{config: {id?: string, name: string, type: string, " CONFIG_FIELDS "}}"

static const ecp_method methods[] = {
    {"database/createConnection", m_create, "1.0", "Save a connection config (sqlite: path; postgres: host...)",
     NEW_CONFIG},
    {"database/connect", m_connect, "1.0", "Open a saved connection", "{connectionId: string}"},
    {"database/disconnect", m_disconnect, "1.0", "Close a connection after its queued work",
     "{connectionId: string}"},
    {"database/deleteConnection", m_delete, "1.0", "Close and forget a connection config", "{connectionId: string}"},
    {"database/listConnections", m_list, "1.0", "The saved connections and their status", "{scope?: string}"},
    {"database/getConnection", m_get, "1.0", "One connection's config and status (null when unknown)",
     "{connectionId: string}"},
    {"database/testConnection", m_test, "1.0", "Open a config once and report latency and version", NEW_CONFIG},
    {"database/updateConnection", m_update, "1.0", "Change a saved config (fields given replace the old ones)",
     "{connectionId: string, config: {name?: string, type?: string, " CONFIG_FIELDS "}}"},
    {"database/query", m_query, "1.0", "Run SQL with bound params; answers the first page of rows",
     "{connectionId: string, sql: string, params?: any[]}"},
    {"database/transaction", m_transaction, "1.0", "Run queries in one transaction; roll back on the first error",
     "{connectionId: string, queries: {sql: string, params?: any[], label?: string}[]}"},
    {"database/cancel", m_cancel, "1.0", "Stop a running query", "{queryId: string}"},
    {"database/fetchRows", m_fetch, "1.0", "Another page of a query's rows",
     "{queryId: string, offset: integer >= 0, limit: integer >= 0}"},
    {"database/listSchemas", m_list_schemas, "1.0", "The schemas of a connection",
     "{connectionId: string, includeSystem?: boolean}"},
    {"database/listTables", m_list_tables, "1.0", "The tables and views of a schema",
     "{connectionId: string, schema?: string}"},
    {"database/describeTable", m_describe, "1.0", "A table's columns, keys and indexes",
     "{connectionId: string, schema: string, table: string}"},
    {"database/getTableDDL", m_ddl, "1.0", "The SQL that creates a table and its indexes",
     "{connectionId: string, schema: string, table: string}"},
    {"database/history", m_history, "1.0", "Queries run, newest first",
     "{connectionId?: string, limit?: integer, offset?: integer}"},
    {"database/searchHistory", m_search_history, "1.0", "Queries whose SQL contains a text",
     "{query: string, connectionId?: string}"},
    {"database/clearHistory", m_clear_history, "1.0", "Forget the query history", "{connectionId?: string}"},
    {"database/favoriteQuery", m_favorite, "1.0", "Mark or unmark a history entry as a favourite",
     "{historyId: integer, favorite: boolean}"},
    {"database/getFavorites", m_favorites, "1.0", "The favourite queries", "{connectionId?: string}"},
};

void database_adapter_init(ecp_adapter *out, database_service *svc)
{
    *out = (ecp_adapter){.ns = "database", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = svc};
}
