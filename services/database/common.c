/* common: values, results, failures and configs, shared by the engines and the service. */
#include "internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "json.h"
#include "json_writer.h"

int db_fail(database_failure *f, int status, const char *fmt, ...)
{
    memset(f, 0, sizeof *f);
    f->status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return status;
}

int64_t db_now_ms(void) { return (int64_t)(uv_hrtime() / 1000000u); }

bool db_run_should_stop(const db_run *run)
{
    if (run->job && ecp_job_cancelled(run->job))
        return true;
    return run->deadline_ms && db_now_ms() >= run->deadline_ms;
}

bool db_page_add(buf *pending, bool *has_pending, const db_run *run, database_result *out, const char *row,
                 size_t len)
{
    if (out->row_count > 0 && out->rows.len + len + 1 > run->max_bytes) {
        buf_clear(pending);
        buf_append(pending, row, len);
        *has_pending = true;
        out->truncated = true;
        return false;
    }
    if (out->row_count)
        buf_push(&out->rows, ',');
    buf_append(&out->rows, row, len);
    out->row_count++;
    return true;
}

static char *dup_or_null(const char *s) { return s ? xstrdup(s) : NULL; }

void database_config_clear(database_config *c)
{
    free_each(c->id, c->name, c->path, c->host, c->database, c->username, c->password_secret, c->ssl_ca, c->ssl_cert,
              c->ssl_key);
    memset(c, 0, sizeof *c);
}

void database_config_copy(database_config *dst, const database_config *src)
{
    *dst = *src;
    dst->id = dup_or_null(src->id);
    dst->name = dup_or_null(src->name);
    dst->path = dup_or_null(src->path);
    dst->host = dup_or_null(src->host);
    dst->database = dup_or_null(src->database);
    dst->username = dup_or_null(src->username);
    dst->password_secret = dup_or_null(src->password_secret);
    dst->ssl_ca = dup_or_null(src->ssl_ca);
    dst->ssl_cert = dup_or_null(src->ssl_cert);
    dst->ssl_key = dup_or_null(src->ssl_key);
}

void database_values_free(database_value *v, size_t n)
{
    if (!v)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i].s);
    free(v);
}

database_value *db_values_copy(const database_value *v, size_t n)
{
    if (!n)
        return NULL;
    database_value *out = xcalloc(n, sizeof *out);
    for (size_t i = 0; i < n; i++) {
        out[i] = v[i];
        if (v[i].s) {
            out[i].s = xmalloc(v[i].len + 1);
            memcpy(out[i].s, v[i].s, v[i].len);
            out[i].s[v[i].len] = '\0';
        }
    }
    return out;
}

void db_fields_free(database_field *f, size_t n)
{
    if (!f)
        return;
    for (size_t i = 0; i < n; i++) {
        free_each(f[i].name, f[i].data_type, f[i].default_value);
    }
    free(f);
}

void db_result_free(database_result *r)
{
    db_fields_free(r->fields, r->field_count);
    if (r->cells)
        database_values_free(r->cells, r->row_count * r->field_count);
    buf_free(&r->rows);
    buf_free(&r->notices);
    memset(r, 0, sizeof *r);
    r->total_rows = -1;
    r->affected_rows = -1;
}

void db_row_key(buf *out, const database_result *r, size_t i)
{
    if (i)
        buf_push(out, ',');
    buf_push(out, '"');
    json_escape_into(out, r->fields[i].name, strlen(r->fields[i].name));
    buf_append(out, "\":", 2);
}

void database_value_json(buf *out, const database_value *v)
{
    static const char hex[] = "0123456789abcdef";
    switch (v->kind) {
    case DATABASE_INT: buf_appendf(out, "%lld", (long long)v->i); break;
    case DATABASE_BOOL: buf_append_str(out, v->i ? "true" : "false"); break;
    case DATABASE_REAL:
        if (isfinite(v->d))
            buf_appendf(out, "%.17g", v->d);
        else
            buf_append_str(out, "null");
        break;
    case DATABASE_TEXT:
        buf_push(out, '"');
        json_escape_into(out, v->s, v->len);
        buf_push(out, '"');
        break;
    case DATABASE_BLOB: /* as PostgreSQL writes bytea: "\x" and hex digits */
        buf_append_str(out, "\"\\\\x");
        for (size_t i = 0; i < v->len; i++) {
            buf_push(out, hex[(unsigned char)v->s[i] >> 4]);
            buf_push(out, hex[(unsigned char)v->s[i] & 15]);
        }
        buf_push(out, '"');
        break;
    default: buf_append_str(out, "null"); break;
    }
}

/* ----- connections.json ----------------------------------------------------------------- */

static char *str_field(const json_doc *doc, json_ref obj, const char *key, arena *a)
{
    const char *s;
    size_t len;
    if (!json_string(doc, json_get(doc, obj, key), a, &s, &len))
        return NULL;
    return xstrndup(s, len);
}

static int64_t int_field(const json_doc *doc, json_ref obj, const char *key, int64_t def)
{
    int64_t v;
    return json_int64(doc, json_get(doc, obj, key), &v) ? v : def;
}

static bool bool_field(const json_doc *doc, json_ref obj, const char *key, bool def)
{
    bool v;
    return json_bool(doc, json_get(doc, obj, key), &v) ? v : def;
}

size_t db_configs_parse(const char *text, size_t len, bool project, database_config **out)
{
    json_doc doc = {0};
    *out = NULL;
    if (json_doc_parse(&doc, text, len, NULL) < 0) {
        json_doc_free(&doc);
        return 0;
    }
    arena a;
    arena_init(&a);
    json_ref list = json_get(&doc, json_root(&doc), "connections");
    size_t n = 0, cap = json_length(&doc, list);
    *out = xcalloc(cap ? cap : 1, sizeof **out);
    for (json_ref r = json_first(&doc, list); r != JSON_NO_REF; r = json_next(&doc, r)) {
        database_config c = {0};
        c.id = str_field(&doc, r, "id", &a);
        c.name = str_field(&doc, r, "name", &a);
        char *type = str_field(&doc, r, "type", &a);
        c.type = type && !strcmp(type, "postgres") ? DATABASE_POSTGRES : DATABASE_SQLITE;
        bool known = type && (!strcmp(type, "postgres") || !strcmp(type, "sqlite"));
        free(type);
        c.path = str_field(&doc, r, "path", &a);
        c.host = str_field(&doc, r, "host", &a);
        c.database = str_field(&doc, r, "database", &a);
        c.username = str_field(&doc, r, "username", &a);
        c.password_secret = str_field(&doc, r, "passwordSecret", &a);
        c.port = (int)int_field(&doc, r, "port", 0);
        json_ref ssl = json_get(&doc, r, "ssl");
        c.ssl = json_type_of(&doc, ssl) == JSON_OBJECT || bool_field(&doc, r, "ssl", false);
        c.ssl_reject_unauthorized = bool_field(&doc, ssl, "rejectUnauthorized", false);
        c.ssl_ca = str_field(&doc, ssl, "ca", &a);
        c.ssl_cert = str_field(&doc, ssl, "cert", &a);
        c.ssl_key = str_field(&doc, ssl, "key", &a);
        c.connection_timeout_ms = int_field(&doc, r, "connectionTimeout", 0);
        c.query_timeout_ms = int_field(&doc, r, "queryTimeout", 0);
        c.read_only = bool_field(&doc, r, "readOnly", false);
        c.project = project;
        if (!c.id || !c.name || !known || strlen(c.id) >= DATABASE_ID_MAX) {
            database_config_clear(&c);
            continue;
        }
        (*out)[n++] = c;
    }
    arena_free(&a);
    json_doc_free(&doc);
    return n;
}

char *db_configs_render(database_config *const *configs, size_t count)
{
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key(&w, "connections");
    jw_array_begin(&w);
    for (size_t i = 0; i < count; i++) {
        const database_config *c = configs[i];
        jw_object_begin(&w);
        jw_key_string(&w, "id", c->id);
        jw_key_string(&w, "name", c->name);
        jw_key_string(&w, "type", c->type == DATABASE_POSTGRES ? "postgres" : "sqlite");
        jw_key_string_opt(&w, "path", c->path);
        jw_key_string_opt(&w, "host", c->host);
        if (c->port)
            jw_key_int(&w, "port", c->port);
        jw_key_string_opt(&w, "database", c->database);
        jw_key_string_opt(&w, "username", c->username);
        jw_key_string_opt(&w, "passwordSecret", c->password_secret);
        if (c->ssl) {
            jw_key(&w, "ssl");
            jw_object_begin(&w);
            jw_key_bool(&w, "rejectUnauthorized", c->ssl_reject_unauthorized);
            jw_key_string_opt(&w, "ca", c->ssl_ca);
            jw_key_string_opt(&w, "cert", c->ssl_cert);
            jw_key_string_opt(&w, "key", c->ssl_key);
            jw_object_end(&w);
        }
        if (c->connection_timeout_ms)
            jw_key_int(&w, "connectionTimeout", c->connection_timeout_ms);
        if (c->query_timeout_ms)
            jw_key_int(&w, "queryTimeout", c->query_timeout_ms);
        jw_key_bool(&w, "readOnly", c->read_only);
        jw_key_string(&w, "scope", c->project ? "project" : "global");
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_object_end(&w);
    buf_push(&out, '\n');
    return buf_detach(&out);
}
