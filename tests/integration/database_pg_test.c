/* The database namespace on a real PostgreSQL (database_pg_fixture.py starts
 * it): every method, paging, a query of 10 million rows answered by its first
 * page with bounded memory, cancel of a running pg_sleep, readOnly enforced
 * by the server, rollback, injection through params, a wrong password, and
 * the server ending the connection mid-query. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "test_client.h"

static test_server *server;
static test_client *client;
static const char *port, *password;

static char *call_ok(const char *method, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *call_ok(const char *method, const char *fmt, ...)
{
    char params[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int code = test_client_request(client, method, params, &out);
    if (code != 0)
        fail_msg("%s %s: %d %s", method, params, code, out ? out : "(timeout)");
    return out;
}

static int call_err(char **out, const char *method, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int call_err(char **out, const char *method, const char *fmt, ...)
{
    char params[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    return test_client_request(client, method, params, out);
}

/* A connection to the test cluster; returns its id (static). */
static const char *open_pg(const char *id, const char *extra)
{
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"%s\",\"name\":\"%s\",\"type\":\"postgres\",\"host\":\"127.0.0.1\","
                 "\"port\":%s,\"database\":\"postgres\",\"username\":\"tester\",\"passwordSecret\":\"pg.pw\"%s}}",
                 id, id, port, extra));
    free(call_ok("database/connect", "{\"connectionId\":\"%s\"}", id));
    return id;
}

static void exec_sql(const char *id, const char *sql)
{
    free(call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"%s\"}", id, sql));
}

static int setup(void **state)
{
    (void)state;
    port = getenv("ECPD_PG_PORT");
    password = getenv("ECPD_PG_PASSWORD");
    if (!port || !password) {
        fprintf(stderr, "run me through database_pg_fixture.py\n");
        return -1;
    }
    server = test_server_new(NULL);
    client = test_client_connect(server);
    free(call_ok("secret/set", "{\"key\":\"pg.pw\",\"value\":\"%s\"}", password));
    free(call_ok("secret/set", "{\"key\":\"pg.wrong\",\"value\":\"not-the-password\"}"));
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_server_free(server);
    return 0;
}

static void test_connect_and_test(void **state)
{
    (void)state;
    char *r = call_ok("database/testConnection",
                      "{\"config\":{\"name\":\"t\",\"type\":\"postgres\",\"host\":\"127.0.0.1\",\"port\":%s,"
                      "\"database\":\"postgres\",\"username\":\"tester\",\"passwordSecret\":\"pg.pw\"}}",
                      port);
    bool ok = false;
    assert_true(test_json_bool(r, "success", &ok) && ok);
    char *v = test_json_string(r, "serverVersion");
    assert_non_null(strstr(v, "15."));
    free(v);
    assert_true(test_json_has(r, "latencyMs"));
    free(r);

    /* A wrong password: a clear failure that never shows either password. */
    r = call_ok("database/testConnection",
                "{\"config\":{\"name\":\"t\",\"type\":\"postgres\",\"host\":\"127.0.0.1\",\"port\":%s,"
                "\"database\":\"postgres\",\"username\":\"tester\",\"passwordSecret\":\"pg.wrong\"}}",
                port);
    assert_true(test_json_bool(r, "success", &ok) && !ok);
    char *code = test_json_string(r, "engineCode");
    assert_string_equal(code, "28P01");
    free(code);
    assert_null(strstr(r, "not-the-password"));
    assert_null(strstr(r, password));
    free(r);
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"wrong\",\"name\":\"w\",\"type\":\"postgres\",\"host\":\"127.0.0.1\","
                 "\"port\":%s,\"database\":\"postgres\",\"username\":\"tester\",\"passwordSecret\":\"pg.wrong\"}}",
                 port));
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/connect", "{\"connectionId\":\"wrong\"}"), -32603);
    code = test_json_string(e, "data.engineCode");
    assert_string_equal(code, "28P01");
    free(code);
    free(e);
    r = call_ok("database/getConnection", "{\"connectionId\":\"wrong\"}");
    char *s = test_json_string(r, "connection.status");
    assert_string_equal(s, "error");
    free(s);
    assert_null(strstr(r, "not-the-password"));
    free(r);
    /* A missing secret. */
    free(call_ok("database/updateConnection", "{\"connectionId\":\"wrong\",\"config\":{\"passwordSecret\":\"nope\"}}"));
    assert_int_equal(call_err(&e, "database/connect", "{\"connectionId\":\"wrong\"}"), -32603);
    assert_non_null(strstr(e, "passwordSecret"));
    free(e);
}

static void test_queries(void **state)
{
    (void)state;
    const char *id = open_pg("pg", "");
    exec_sql(id, "DROP TABLE IF EXISTS t; CREATE TABLE t (id serial PRIMARY KEY, name text NOT NULL, score float8,"
                 " ok boolean, doc jsonb)");
    char *r = call_ok("database/query",
                      "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (name, score, ok, doc) VALUES ($1, $2, $3, $4),"
                      " ($5, NULL, NULL, NULL)\",\"params\":[\"a\",1.5,true,{\"k\":[1,2]},\"b\"]}",
                      id);
    int64_t n = 0;
    assert_true(test_json_int(r, "affectedRows", &n) && n == 2);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT id, name, score, ok, doc FROM t ORDER BY id\"}",
                id);
    assert_int_equal(test_json_length(r, "rows"), 2);
    char *s = test_json_string(r, "rows[0].name");
    assert_string_equal(s, "a");
    free(s);
    bool b = false;
    assert_true(test_json_bool(r, "rows[0].ok", &b) && b);
    assert_true(test_json_int(r, "rows[0].doc.k[1]", &n) && n == 2);
    s = test_json_string(r, "fields[0].dataType");
    assert_string_equal(s, "int4");
    free(s);
    assert_true(test_json_int(r, "fields[1].dataTypeId", &n) && n == 25);
    assert_true(test_json_bool(r, "fields[0].isPrimaryKey", &b) && b);
    assert_true(test_json_bool(r, "fields[1].nullable", &b) && !b);
    assert_true(test_json_bool(r, "fields[2].nullable", &b) && b);
    s = test_json_string(r, "fields[0].defaultValue");
    assert_non_null(strstr(s, "nextval"));
    free(s);
    assert_true(test_json_int(r, "totalRows", &n) && n == 2);
    free(r);

    r = call_ok("database/query",
                "{\"connectionId\":\"%s\",\"sql\":\"DO $$BEGIN RAISE NOTICE 'hello %%', 42; END$$\"}", id);
    s = test_json_string(r, "notices[0]");
    assert_non_null(strstr(s, "hello 42"));
    free(s);
    free(r);

    /* Injection through params stays data. */
    r = call_ok("database/query",
                "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM t WHERE name = $1\","
                "\"params\":[\"a' OR '1'='1\"]}",
                id);
    s = test_json_string(r, "rows[0].n");
    assert_null(s); /* count is int8: a number */
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 0);
    free(r);
    free(call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (name) VALUES ($1)\","
                                   "\"params\":[\"x'); DROP TABLE t; --\"]}",
                 id));
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM t\"}", id);
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 3);
    free(r);

    char *e = NULL;
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELEC 1\"}", id), -32603);
    s = test_json_string(e, "data.engineCode");
    assert_string_equal(s, "42601");
    free(s);
    assert_true(test_json_int(e, "data.position", &n) && n == 1);
    free(e);
    assert_int_equal(call_err(&e, "database/query",
                              "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (id, name) VALUES (1, 'dup')\"}", id),
                     -32603);
    s = test_json_string(e, "data.engineCode");
    assert_string_equal(s, "23505");
    free(s);
    assert_true(test_json_has(e, "data.detail"));
    free(e);

    /* Paging through 100,000 rows. */
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT g AS x FROM generate_series(1, 100000) g\"}",
                id);
    assert_int_equal(test_json_length(r, "rows"), 1000);
    char *qid = test_json_string(r, "queryId");
    free(r);
    int64_t seen = 1000, x = 0;
    while (seen < 100000) {
        r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":%lld,\"limit\":10000}", qid, (long long)seen);
        long len = test_json_length(r, "rows");
        assert_true(len > 0);
        assert_true(test_json_int(r, "rows[0].x", &x) && x == seen + 1);
        seen += len;
        free(r);
    }
    r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":10,\"limit\":2}", qid);
    assert_true(test_json_int(r, "rows[0].x", &x) && x == 11);
    free(r);
    free(qid);
    /* The connection is usable after a cursor left open. */
    exec_sql(id, "SELECT 1");

    /* Transaction: rollback on the first error. */
    r = call_ok("database/transaction",
                "{\"connectionId\":\"%s\",\"queries\":[{\"sql\":\"INSERT INTO t (name) VALUES ('in-tx')\"},"
                "{\"sql\":\"INSERT INTO t (id, name) VALUES (1, 'dup')\",\"label\":\"dup\"}]}",
                id);
    bool ok = true;
    assert_true(test_json_bool(r, "success", &ok) && !ok);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM t WHERE name = 'in-tx'\"}",
                id);
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 0);
    free(r);
    r = call_ok("database/transaction",
                "{\"connectionId\":\"%s\",\"queries\":[{\"sql\":\"INSERT INTO t (name) VALUES ($1)\",\"params\":[\"c\"]}]}",
                id);
    assert_true(test_json_bool(r, "success", &ok) && ok);
    free(r);
}

static void test_schema(void **state)
{
    (void)state;
    const char *id = "pg";
    exec_sql(id, "DROP TABLE IF EXISTS child; DROP TABLE IF EXISTS parent;"
                 " CREATE TABLE parent (id int PRIMARY KEY, name text NOT NULL DEFAULT 'x');"
                 " CREATE TABLE child (id int PRIMARY KEY, parent_id int REFERENCES parent (id));"
                 " CREATE INDEX child_parent ON child (parent_id)");
    char *r = call_ok("database/listSchemas", "{\"connectionId\":\"%s\"}", id);
    assert_non_null(strstr(r, "\"public\""));
    assert_null(strstr(r, "pg_catalog"));
    free(r);
    r = call_ok("database/listSchemas", "{\"connectionId\":\"%s\",\"includeSystem\":true}", id);
    assert_non_null(strstr(r, "pg_catalog"));
    free(r);
    r = call_ok("database/listTables", "{\"connectionId\":\"%s\"}", id);
    assert_non_null(strstr(r, "\"child\""));
    assert_non_null(strstr(r, "\"parent\""));
    free(r);
    r = call_ok("database/describeTable", "{\"connectionId\":\"%s\",\"schema\":\"public\",\"table\":\"child\"}", id);
    assert_int_equal(test_json_length(r, "columns"), 2);
    char *s = test_json_string(r, "foreignKeys[0].referencedTable");
    assert_string_equal(s, "parent");
    free(s);
    s = test_json_string(r, "primaryKey[0]");
    assert_string_equal(s, "id");
    free(s);
    assert_int_equal(test_json_length(r, "indexes"), 2);
    free(r);
    r = call_ok("database/getTableDDL", "{\"connectionId\":\"%s\",\"schema\":\"public\",\"table\":\"parent\"}", id);
    s = test_json_string(r, "ddl");
    assert_non_null(strstr(s, "CREATE TABLE public.parent"));
    assert_non_null(strstr(s, "DEFAULT 'x'::text"));
    assert_non_null(strstr(s, "PRIMARY KEY (id)"));
    free(s);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/describeTable",
                              "{\"connectionId\":\"%s\",\"schema\":\"public\",\"table\":\"nope\"}", id),
                     -32603);
    free(e);
}

static void test_cancel_timeout_read_only(void **state)
{
    (void)state;
    const char *id = "pg";
    char params[256];
    snprintf(params, sizeof params, "{\"connectionId\":\"%s\",\"sql\":\"SELECT pg_sleep(30)\"}", id);
    int64_t rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 300);
    char *h = call_ok("database/history", "{\"connectionId\":\"%s\",\"limit\":1}", id);
    char *qid = test_json_string(h, "entries[0].queryId");
    char *st = test_json_string(h, "entries[0].status");
    assert_string_equal(st, "running");
    free(st);
    free(h);
    free(call_ok("database/cancel", "{\"queryId\":\"%s\"}", qid));
    char *out = NULL;
    assert_int_equal(test_client_wait_response(client, rid, 5000, &out), -32800);
    free(out);
    free(qid);

    rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 200);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)rid);
    test_client_notify(client, "$/cancelRequest", note);
    assert_int_equal(test_client_wait_response(client, rid, 5000, &out), -32800);
    free(out);
    exec_sql(id, "SELECT 1");

    /* queryTimeout and readOnly, enforced by the server. */
    open_pg("pg-ro", ",\"readOnly\":true,\"queryTimeout\":300");
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"pg-ro\",\"sql\":\"SELECT pg_sleep(10)\"}"),
                     -32603);
    assert_non_null(strstr(e, "queryTimeout"));
    free(e);
    assert_int_equal(call_err(&e, "database/query",
                              "{\"connectionId\":\"pg-ro\",\"sql\":\"INSERT INTO t (name) VALUES ('ro')\"}"),
                     -32603);
    char *code = test_json_string(e, "data.engineCode");
    assert_string_equal(code, "25006");
    free(code);
    free(e);
}

static void test_server_goes_away(void **state)
{
    (void)state;
    open_pg("victim", "");
    char *r = call_ok("database/query", "{\"connectionId\":\"victim\",\"sql\":\"SELECT pg_backend_pid() AS pid\"}");
    int64_t pid = 0;
    assert_true(test_json_int(r, "rows[0].pid", &pid));
    free(r);
    char params[256];
    snprintf(params, sizeof params, "{\"connectionId\":\"victim\",\"sql\":\"SELECT pg_sleep(30)\"}");
    int64_t rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 300);
    r = call_ok("database/query", "{\"connectionId\":\"pg\",\"sql\":\"SELECT pg_terminate_backend($1)\",\"params\":[%lld]}",
                (long long)pid);
    free(r);
    char *out = NULL;
    assert_int_equal(test_client_wait_response(client, rid, 5000, &out), -32603);
    assert_true(test_json_has(out, "data.engineCode"));
    free(out);
    /* Other connections are unaffected; the lost one says so and reconnects. */
    exec_sql("pg", "SELECT 1");
    r = call_ok("database/getConnection", "{\"connectionId\":\"victim\"}");
    char *st = test_json_string(r, "connection.status");
    assert_string_equal(st, "error");
    free(st);
    free(r);
    free(call_ok("database/connect", "{\"connectionId\":\"victim\"}"));
    exec_sql("victim", "SELECT 1");
    r = call_ok("database/history", "{\"connectionId\":\"victim\"}");
    assert_true(test_json_length(r, "entries") >= 3);
    free(r);
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"victim\"}"));
}

/* ssl reaches libpq (the test cluster has none), and connectionTimeout bounds
 * a server that accepts the connection and never answers. */
static void test_ssl_and_connection_timeout(void **state)
{
    (void)state;
    char *r = call_ok("database/testConnection",
                      "{\"config\":{\"name\":\"t\",\"type\":\"postgres\",\"host\":\"127.0.0.1\",\"port\":%s,"
                      "\"database\":\"postgres\",\"username\":\"tester\",\"passwordSecret\":\"pg.pw\",\"ssl\":true}}",
                      port);
    bool ok = true;
    assert_true(test_json_bool(r, "success", &ok) && !ok);
    assert_non_null(strstr(r, "SSL"));
    free(r);

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    assert_int_equal(listen(fd, 4), 0);
    socklen_t len = sizeof addr;
    getsockname(fd, (struct sockaddr *)&addr, &len);
    r = call_ok("database/testConnection",
                "{\"config\":{\"name\":\"t\",\"type\":\"postgres\",\"host\":\"127.0.0.1\",\"port\":%d,"
                "\"database\":\"postgres\",\"username\":\"tester\",\"connectionTimeout\":300}}",
                ntohs(addr.sin_port));
    assert_true(test_json_bool(r, "success", &ok) && !ok);
    assert_non_null(strstr(r, "connectionTimeout"));
    free(r);
    close(fd);
}

/* The server's resident memory, in KiB (the server runs in this process). */
static long resident_kib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

/* 10 million rows streamed by the server: the query answers its first page
 * without reading the rest, and the next query on the connection ends the
 * open result instead of waiting for it. */
static void test_ten_million_rows(void **state)
{
    (void)state;
    const char *id = "pg";
    long before = resident_kib();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *r = call_ok("database/query",
                      "{\"connectionId\":\"%s\",\"sql\":\"SELECT generate_series(1, 10000000) AS x\"}", id);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double first = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_int_equal(test_json_length(r, "rows"), 1000);
    assert_false(test_json_has(r, "totalRows"));
    bool more = false;
    assert_true(test_json_bool(r, "hasMore", &more) && more);
    char *qid = test_json_string(r, "queryId");
    free(r);
    int64_t x = 0;
    r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":1000,\"limit\":5}", qid);
    assert_true(test_json_int(r, "rows[0].x", &x) && x == 1001);
    free(r);
    free(qid);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    exec_sql(id, "SELECT 1");
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    long grown = resident_kib() - before;
    if (first > 5.0 || took > 5.0 || grown > 100 * 1024)
        fail_msg("10 million rows: first page %.3f s, next query %.3f s, server grew %ld KiB", first, took, grown);
}

/* The methods that do not touch the engine, on a postgres connection. */
static void test_connections_and_history(void **state)
{
    (void)state;
    open_pg("hist", "");
    char *r = call_ok("database/listConnections", "{}");
    assert_non_null(strstr(r, "\"id\":\"hist\""));
    assert_null(strstr(r, password));
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"hist\"}");
    char *s = test_json_string(r, "connection.type");
    assert_string_equal(s, "postgres");
    free(s);
    s = test_json_string(r, "connection.host");
    assert_string_equal(s, "127.0.0.1");
    free(s);
    s = test_json_string(r, "connection.database");
    assert_string_equal(s, "postgres");
    free(s);
    free(r);

    exec_sql("hist", "SELECT 'pg needle' AS n");
    exec_sql("hist", "SELECT 2");
    r = call_ok("database/history", "{\"connectionId\":\"hist\",\"limit\":1}");
    assert_int_equal(test_json_length(r, "entries"), 1);
    s = test_json_string(r, "entries[0].sql");
    assert_string_equal(s, "SELECT 2");
    free(s);
    free(r);
    r = call_ok("database/history", "{\"connectionId\":\"hist\",\"limit\":1,\"offset\":1}");
    s = test_json_string(r, "entries[0].sql");
    assert_string_equal(s, "SELECT 'pg needle' AS n");
    free(s);
    free(r);
    r = call_ok("database/searchHistory", "{\"query\":\"PG NEEDLE\",\"connectionId\":\"hist\"}");
    assert_int_equal(test_json_length(r, "entries"), 1);
    int64_t hid = 0;
    assert_true(test_json_int(r, "entries[0].id", &hid));
    free(r);
    r = call_ok("database/favoriteQuery", "{\"historyId\":%lld,\"favorite\":true}", (long long)hid);
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    r = call_ok("database/getFavorites", "{\"connectionId\":\"hist\"}");
    assert_int_equal(test_json_length(r, "entries"), 1);
    bool fav = false;
    assert_true(test_json_bool(r, "entries[0].isFavorite", &fav) && fav);
    free(r);
    r = call_ok("database/clearHistory", "{\"connectionId\":\"hist\"}");
    assert_string_equal(r, "{\"cleared\":true}");
    free(r);
    r = call_ok("database/history", "{\"connectionId\":\"hist\"}");
    assert_int_equal(test_json_length(r, "entries"), 0);
    free(r);

    /* Disconnected, the connection refuses queries until it connects again. */
    r = call_ok("database/disconnect", "{\"connectionId\":\"hist\"}");
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"hist\"}");
    s = test_json_string(r, "connection.status");
    assert_string_equal(s, "disconnected");
    free(s);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"hist\",\"sql\":\"SELECT 1\"}"), -32603);
    assert_non_null(strstr(e, "not connected"));
    free(e);
    free(call_ok("database/connect", "{\"connectionId\":\"hist\"}"));
    exec_sql("hist", "SELECT 1");
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"hist\"}"));
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"hist\",\"sql\":\"SELECT 1\"}"), -32602);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connect_and_test),
        cmocka_unit_test(test_queries),
        cmocka_unit_test(test_ten_million_rows),
        cmocka_unit_test(test_connections_and_history),
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_cancel_timeout_read_only),
        cmocka_unit_test(test_server_goes_away),
        cmocka_unit_test(test_ssl_and_connection_timeout),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
