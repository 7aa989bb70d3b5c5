/* The database namespace through the in-process client, on SQLite files:
 * every method's result shape, paging through 100,000 rows, a query of 10
 * million rows answered by its first page with bounded memory, cancel, readOnly
 * enforced by the engine, rollback, injection through params, a corrupt file,
 * and the errors a client can provoke. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "test_client.h"

static test_server *server;
static test_client *client;
static char dir[256], data_dir[300], workspace[300];

static void start_server(void)
{
    test_server_options o = {.data_dir = data_dir, .workspace = workspace};
    server = test_server_new(&o);
    client = test_client_connect(server);
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

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

/* Creates and connects a sqlite connection on dir/name; returns its id (static). */
static const char *open_db(const char *name, bool read_only)
{
    static char id[64];
    char *r = call_ok("database/createConnection",
                      "{\"config\":{\"name\":\"%s\",\"type\":\"sqlite\",\"path\":\"%s/%s\",\"readOnly\":%s}}", name,
                      dir, name, read_only ? "true" : "false");
    char *cid = test_json_string(r, "connectionId");
    snprintf(id, sizeof id, "%s", cid);
    free(cid);
    free(r);
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
    snprintf(dir, sizeof dir, "/tmp/ecpd-database-XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(data_dir, sizeof data_dir, "%s/data", dir);
    snprintf(workspace, sizeof workspace, "%s/ws", dir);
    assert_int_equal(mkdir(data_dir, 0700), 0);
    assert_int_equal(mkdir(workspace, 0700), 0);
    start_server();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    test_server_free(server);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    return 0;
}

/* A client that pipelines: the answer to a change of the saved connections
 * may come from the pool, but what the client sends after it must see it. */
static void test_pipelined_changes_apply_in_order(void **state)
{
    (void)state;
    char params[1024];
    snprintf(params, sizeof params, "{\"config\":{\"name\":\"piped\",\"type\":\"sqlite\",\"path\":\"%s/piped.db\"}}",
             dir);
    int64_t create = test_client_send(client, "database/createConnection", params);
    int64_t list = test_client_send(client, "database/listConnections", "{}");
    char *created = NULL, *listed = NULL;
    assert_int_equal(test_client_wait_response(client, create, 10000, &created), 0);
    assert_int_equal(test_client_wait_response(client, list, 10000, &listed), 0);
    char *id = test_json_string(created, "connectionId");
    assert_non_null(id);
    if (!strstr(listed, id))
        fail_msg("listConnections sent right after createConnection misses %s: %s", id, listed);

    /* an update then a connect: the connect opens the updated path */
    snprintf(params, sizeof params,
             "{\"connectionId\":\"%s\",\"config\":{\"name\":\"piped\",\"type\":\"sqlite\",\"path\":\"%s/piped2.db\"}}",
             id, dir);
    int64_t update = test_client_send(client, "database/updateConnection", params);
    snprintf(params, sizeof params, "{\"connectionId\":\"%s\"}", id);
    int64_t connect = test_client_send(client, "database/connect", params);
    char *updated = NULL, *connected = NULL;
    assert_int_equal(test_client_wait_response(client, update, 10000, &updated), 0);
    assert_int_equal(test_client_wait_response(client, connect, 10000, &connected), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/piped2.db", dir);
    if (access(path, F_OK) != 0)
        fail_msg("connect sent right after updateConnection did not open the updated path %s", path);
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"%s\"}", id));
    free(id);
    free(created);
    free(listed);
    free(updated);
    free(connected);
}

static void test_connections(void **state)
{
    (void)state;
    char *r = call_ok("database/createConnection",
                      "{\"config\":{\"id\":\"c1\",\"name\":\"one\",\"type\":\"sqlite\",\"path\":\"%s/one.db\"}}", dir);
    assert_string_equal(r, "{\"connectionId\":\"c1\"}");
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"c1\"}");
    char *s = test_json_string(r, "connection.status");
    assert_string_equal(s, "disconnected");
    free(s);
    free(r);
    r = call_ok("database/connect", "{\"connectionId\":\"c1\"}");
    assert_string_equal(r, "{\"success\":true}");
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"c1\"}");
    s = test_json_string(r, "connection.status");
    assert_string_equal(s, "connected");
    assert_true(test_json_has(r, "connection.connectedAt"));
    free(s);
    free(r);
    r = call_ok("database/listConnections", "{\"scope\":\"global\"}");
    assert_true(test_json_length(r, "connections") >= 1);
    free(r);
    r = call_ok("database/updateConnection", "{\"connectionId\":\"c1\",\"config\":{\"name\":\"renamed\"}}");
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"c1\"}");
    s = test_json_string(r, "connection.name");
    assert_string_equal(s, "renamed");
    free(s);
    free(r);
    /* The config is on disk in the data directory, without any password. */
    r = call_ok("database/testConnection", "{\"config\":{\"name\":\"t\",\"type\":\"sqlite\",\"path\":\":memory:\"}}");
    bool ok = false;
    assert_true(test_json_bool(r, "success", &ok) && ok);
    s = test_json_string(r, "serverVersion");
    assert_string_equal(s, sqlite3_libversion());
    free(s);
    free(r);
    r = call_ok("database/disconnect", "{\"connectionId\":\"c1\"}");
    free(r);
    r = call_ok("database/deleteConnection", "{\"connectionId\":\"c1\"}");
    free(r);
    r = call_ok("database/getConnection", "{\"connectionId\":\"c1\"}");
    assert_string_equal(r, "{\"connection\":null}");
    free(r);

    /* :memory: is a database of the connection's own. */
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"mem\",\"name\":\"mem\",\"type\":\"sqlite\",\"path\":\":memory:\"}}"));
    free(call_ok("database/connect", "{\"connectionId\":\"mem\"}"));
    free(call_ok("database/query", "{\"connectionId\":\"mem\",\"sql\":\"CREATE TABLE m (v)\"}"));
    r = call_ok("database/listTables", "{\"connectionId\":\"mem\"}");
    s = test_json_string(r, "tables[0].name");
    assert_string_equal(s, "m");
    free(s);
    free(r);
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"mem\"}"));
    char memory_file[400];
    snprintf(memory_file, sizeof memory_file, "%s/:memory:", workspace);
    assert_int_not_equal(access(memory_file, F_OK), 0);

    char *e = NULL;
    assert_int_equal(call_err(&e, "database/connect", "{\"connectionId\":\"nope\"}"), -32602);
    assert_non_null(strstr(e, "connectionId"));
    free(e);
    assert_int_equal(call_err(&e, "database/createConnection",
                              "{\"config\":{\"name\":\"x\",\"type\":\"oracle\",\"path\":\"a\"}}"),
                     -32602);
    assert_non_null(strstr(e, "config.type"));
    free(e);
    assert_int_equal(call_err(&e, "database/createConnection",
                              "{\"config\":{\"name\":\"x\",\"type\":\"sqlite\",\"path\":\"a\",\"password\":\"pw\"}}"),
                     -32602);
    assert_non_null(strstr(e, "config.password"));
    assert_null(strstr(e, "pw\""));
    free(e);
    assert_int_equal(call_err(&e, "database/cancel", "{\"queryId\":\"q-none\"}"), -32602);
    free(e);
    assert_int_equal(call_err(&e, "database/fetchRows", "{\"queryId\":\"q-none\",\"offset\":0,\"limit\":5}"), -32602);
    free(e);
}

static void test_query_shapes_and_errors(void **state)
{
    (void)state;
    const char *id = open_db("shapes.db", false);
    exec_sql(id, "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, data BLOB)");
    char *r = call_ok("database/query",
                      "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (name, score) VALUES (?, ?), (?, ?)\","
                      "\"params\":[\"a\",1.5,\"b\",null]}",
                      id);
    int64_t n = 0;
    assert_true(test_json_int(r, "affectedRows", &n));
    assert_int_equal(n, 2);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT id, name, score FROM t ORDER BY id\"}",
                id);
    assert_int_equal(test_json_length(r, "rows"), 2);
    char *s = test_json_string(r, "rows[0].name");
    assert_string_equal(s, "a");
    free(s);
    s = test_json_string(r, "fields[0].dataType");
    assert_string_equal(s, "INTEGER");
    free(s);
    bool b = false;
    assert_true(test_json_bool(r, "fields[0].isPrimaryKey", &b) && b);
    assert_true(test_json_bool(r, "fields[1].nullable", &b) && !b);
    assert_true(test_json_int(r, "totalRows", &n) && n == 2);
    assert_true(test_json_has(r, "queryId") && test_json_has(r, "durationMs") && test_json_has(r, "startedAt"));
    free(r);

    /* Injection through params stays data. */
    r = call_ok("database/query",
                "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM t WHERE name = ?\","
                "\"params\":[\"a' OR '1'='1\"]}",
                id);
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 0);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (name) VALUES (?)\","
                                  "\"params\":[\"x'); DROP TABLE t; --\"]}",
                id);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM t\"}", id);
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 3);
    free(r);

    /* A syntax error: -32603 with the engine's code and the position. */
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELEC * FROM t\"}", id),
                     -32603);
    s = test_json_string(e, "data.engineCode");
    assert_string_equal(s, "SQLITE_ERROR");
    free(s);
    assert_true(test_json_int(e, "data.position", &n) && n == 1);
    free(e);
    assert_int_equal(call_err(&e, "database/query",
                              "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO t (id, name) VALUES (1, 'dup')\"}", id),
                     -32603);
    s = test_json_string(e, "data.engineCode");
    assert_string_equal(s, "SQLITE_CONSTRAINT_PRIMARYKEY");
    free(s);
    free(e);
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT ?\",\"params\":[]}", id),
                     -32602);
    free(e);
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\"}", id), -32602);
    assert_non_null(strstr(e, "sql"));
    free(e);
}

static void test_paging(void **state)
{
    (void)state;
    const char *id = open_db("paging.db", false);
    exec_sql(id, "CREATE TABLE big AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)"
                 " SELECT x, 'row ' || x AS label FROM c");
    char *r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT x, label FROM big ORDER BY x\"}", id);
    assert_int_equal(test_json_length(r, "rows"), 1000);
    assert_false(test_json_has(r, "totalRows"));
    char *qid = test_json_string(r, "queryId");
    free(r);
    int64_t seen = 1000, x = 0;
    while (seen < 100000) {
        r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":%lld,\"limit\":5000}", qid, (long long)seen);
        long len = test_json_length(r, "rows");
        assert_true(len > 0);
        assert_true(test_json_int(r, "rows[0].x", &x));
        assert_int_equal(x, seen + 1);
        seen += len;
        free(r);
    }
    assert_int_equal(seen, 100000);
    /* Out of order: the statement runs again and skips to the offset. */
    r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":500,\"limit\":3}", qid);
    assert_true(test_json_int(r, "rows[0].x", &x) && x == 501);
    assert_int_equal(test_json_length(r, "rows"), 3);
    free(r);
    r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":99998,\"limit\":10}", qid);
    assert_int_equal(test_json_length(r, "rows"), 2);
    assert_true(test_json_int(r, "totalRows", &x) && x == 100000);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/fetchRows", "{\"queryId\":\"%s\",\"offset\":0,\"limit\":0}", qid), -32602);
    free(e);
    free(qid);
}

/* database.pageSize and database.maxResultBytes bound the next query's pages. */
static void test_page_settings(void **state)
{
    (void)state;
    const char *id = open_db("page-settings.db", false);
    exec_sql(id, "CREATE TABLE t AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000)"
                 " SELECT x, 'row ' || x AS label FROM c");
    const char *select = "SELECT x, label FROM t ORDER BY x";
    free(call_ok("config/set", "{\"key\":\"database.pageSize\",\"value\":37}"));
    char *r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"%s\"}", id, select);
    assert_int_equal(test_json_length(r, "rows"), 37);
    char *qid = test_json_string(r, "queryId");
    free(r);
    int64_t x = 0;
    r = call_ok("database/fetchRows", "{\"queryId\":\"%s\",\"offset\":37,\"limit\":5}", qid);
    assert_true(test_json_int(r, "rows[0].x", &x) && x == 38);
    free(r);
    free(qid);

    /* about 30 bytes a row: 1 KiB holds a few dozen of them, not 1000 */
    free(call_ok("config/set", "{\"key\":\"database.pageSize\",\"value\":1000}"));
    free(call_ok("config/set", "{\"key\":\"database.maxResultBytes\",\"value\":1024}"));
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"%s\"}", id, select);
    long rows = test_json_length(r, "rows");
    assert_true(rows > 10 && rows < 60);
    char *page = test_json_raw(r, "rows");
    assert_true(strlen(page) <= 1024 + 2);
    free(page);
    assert_true(test_json_has(r, "truncated"));
    free(r);

    free(call_ok("config/reset", "{\"key\":\"database.pageSize\"}"));
    free(call_ok("config/reset", "{\"key\":\"database.maxResultBytes\"}"));
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"%s\"}", id, select);
    assert_int_equal(test_json_length(r, "rows"), 1000);
    free(r);
}

static void test_cancel_and_timeout(void **state)
{
    (void)state;
    const char *id = open_db("slow.db", false);
    const char *endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    char params[512];
    snprintf(params, sizeof params, "{\"connectionId\":\"%s\",\"sql\":\"%s\"}", id, endless);
    int64_t rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 200);
    char *h = call_ok("database/history", "{\"connectionId\":\"%s\",\"limit\":1}", id);
    char *status = test_json_string(h, "entries[0].status");
    assert_string_equal(status, "running");
    char *qid = test_json_string(h, "entries[0].queryId");
    free(status);
    free(h);
    char *r = call_ok("database/cancel", "{\"queryId\":\"%s\"}", qid);
    assert_string_equal(r, "{\"cancelled\":true}");
    free(r);
    char *out = NULL;
    assert_int_equal(test_client_wait_response(client, rid, 10000, &out), -32800);
    free(out);
    free(qid);

    /* $/cancelRequest reaches the query too. */
    rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 100);
    char note[64];
    snprintf(note, sizeof note, "{\"id\":%lld}", (long long)rid);
    test_client_notify(client, "$/cancelRequest", note);
    assert_int_equal(test_client_wait_response(client, rid, 10000, &out), -32800);
    free(out);

    /* queryTimeout. */
    r = call_ok("database/updateConnection", "{\"connectionId\":\"%s\",\"config\":{\"queryTimeout\":200}}", id);
    free(r);
    free(call_ok("database/disconnect", "{\"connectionId\":\"%s\"}", id));
    free(call_ok("database/connect", "{\"connectionId\":\"%s\"}", id));
    char *e = NULL;
    assert_int_equal(test_client_request(client, "database/query", params, &e), -32603);
    assert_non_null(strstr(e, "queryTimeout"));
    free(e);
    /* The connection still works. */
    exec_sql(id, "SELECT 1");
}

/* The queryId of any statement of a running transaction cancels it: the
 * transaction rolls back and answers -32800. */
static void test_cancel_in_transaction(void **state)
{
    (void)state;
    const char *id = open_db("slow-transaction.db", false);
    exec_sql(id, "CREATE TABLE k (v)");
    const char *endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c";
    char params[512];
    snprintf(params, sizeof params,
             "{\"connectionId\":\"%s\",\"queries\":[{\"sql\":\"INSERT INTO k VALUES (1)\"},{\"sql\":\"%s\"}]}", id,
             endless);
    int64_t rid = test_client_send(client, "database/transaction", params);
    test_server_run_for(server, 200);
    char *h = call_ok("database/history", "{\"connectionId\":\"%s\",\"limit\":1}", id);
    char *sql = test_json_string(h, "entries[0].sql");
    assert_string_equal(sql, endless);
    free(sql);
    char *qid = test_json_string(h, "entries[0].queryId");
    free(h);
    char *r = call_ok("database/cancel", "{\"queryId\":\"%s\"}", qid);
    assert_string_equal(r, "{\"cancelled\":true}");
    free(r);
    free(qid);
    char *out = NULL;
    assert_int_equal(test_client_wait_response(client, rid, 10000, &out), -32800);
    free(out);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM k\"}", id);
    int64_t n = -1;
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 0);
    free(r);
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

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 10 million rows: the first page comes without reading the rest, and the
 * statement left open does not hold up the next query. */
static void test_ten_million_rows(void **state)
{
    (void)state;
    const char *id = open_db("ten-million.db", false);
    long before = resident_kib();
    double t0 = now_s();
    char *r = call_ok("database/query",
                      "{\"connectionId\":\"%s\",\"sql\":\"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c"
                      " WHERE x < 10000000) SELECT x FROM c\"}",
                      id);
    double first = now_s() - t0;
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
    t0 = now_s();
    exec_sql(id, "SELECT 1");
    double next = now_s() - t0;
    long grown = resident_kib() - before;
    if (first > 2.0 || next > 2.0 || grown > 100 * 1024)
        fail_msg("10 million rows: first page %.3f s, next query %.3f s, server grew %ld KiB", first, next, grown);
}

static void test_read_only_and_transaction(void **state)
{
    (void)state;
    const char *rw = open_db("ro.db", false);
    exec_sql(rw, "CREATE TABLE a (v INTEGER UNIQUE)");
    char *r = call_ok("database/transaction",
                      "{\"connectionId\":\"%s\",\"queries\":[{\"sql\":\"INSERT INTO a VALUES (1)\"},"
                      "{\"sql\":\"INSERT INTO a VALUES (?)\",\"params\":[2],\"label\":\"two\"}]}",
                      rw);
    bool ok = false;
    assert_true(test_json_bool(r, "success", &ok) && ok);
    assert_true(test_json_has(r, "committedAt"));
    free(r);
    r = call_ok("database/transaction",
                "{\"connectionId\":\"%s\",\"queries\":[{\"sql\":\"INSERT INTO a VALUES (3)\"},"
                "{\"sql\":\"INSERT INTO a VALUES (1)\",\"label\":\"dup\"},{\"sql\":\"INSERT INTO a VALUES (4)\"}]}",
                rw);
    assert_true(test_json_bool(r, "success", &ok) && !ok);
    assert_true(test_json_has(r, "rolledBackAt"));
    char *label = test_json_string(r, "results[1].label");
    assert_string_equal(label, "dup");
    free(label);
    free(r);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM a\"}", rw);
    int64_t n = 0;
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 2);
    free(r);

    const char *ro = open_db("ro.db", true);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO a VALUES (9)\"}", ro),
                     -32603);
    char *code = test_json_string(e, "data.engineCode");
    assert_non_null(strstr(code, "SQLITE_READONLY"));
    free(code);
    free(e);
    r = call_ok("database/query", "{\"connectionId\":\"%s\",\"sql\":\"SELECT count(*) AS n FROM a\"}", ro);
    assert_true(test_json_int(r, "rows[0].n", &n) && n == 2);
    free(r);
}

static void test_schema(void **state)
{
    (void)state;
    const char *id = open_db("schema.db", false);
    exec_sql(id, "CREATE TABLE parent (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'x')");
    exec_sql(id, "CREATE TABLE child (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent (id))");
    exec_sql(id, "CREATE UNIQUE INDEX child_parent ON child (parent_id)");
    char *r = call_ok("database/listSchemas", "{\"connectionId\":\"%s\"}", id);
    char *s = test_json_string(r, "schemas[0].name");
    assert_string_equal(s, "main");
    free(s);
    free(r);
    r = call_ok("database/listTables", "{\"connectionId\":\"%s\"}", id);
    assert_int_equal(test_json_length(r, "tables"), 2);
    s = test_json_string(r, "tables[0].name");
    assert_string_equal(s, "child");
    free(s);
    free(r);
    r = call_ok("database/describeTable", "{\"connectionId\":\"%s\",\"schema\":\"main\",\"table\":\"child\"}", id);
    assert_int_equal(test_json_length(r, "columns"), 2);
    s = test_json_string(r, "foreignKeys[0].referencedTable");
    assert_string_equal(s, "parent");
    free(s);
    s = test_json_string(r, "indexes[0].columns[0]");
    assert_string_equal(s, "parent_id");
    free(s);
    s = test_json_string(r, "primaryKey[0]");
    assert_string_equal(s, "id");
    free(s);
    free(r);
    r = call_ok("database/describeTable", "{\"connectionId\":\"%s\",\"schema\":\"main\",\"table\":\"parent\"}", id);
    s = test_json_string(r, "columns[1].defaultValue");
    assert_string_equal(s, "'x'");
    free(s);
    free(r);
    r = call_ok("database/getTableDDL", "{\"connectionId\":\"%s\",\"schema\":\"main\",\"table\":\"child\"}", id);
    s = test_json_string(r, "ddl");
    assert_non_null(strstr(s, "CREATE TABLE child"));
    assert_non_null(strstr(s, "CREATE UNIQUE INDEX child_parent"));
    free(s);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/describeTable",
                              "{\"connectionId\":\"%s\",\"schema\":\"main\",\"table\":\"nope\"}", id),
                     -32603);
    free(e);
}

static void test_history(void **state)
{
    (void)state;
    const char *id = open_db("history.db", false);
    exec_sql(id, "SELECT 'needle' AS n");
    exec_sql(id, "SELECT 2");
    char *r = call_ok("database/history", "{\"connectionId\":\"%s\"}", id);
    assert_true(test_json_length(r, "entries") >= 2);
    char *s = test_json_string(r, "entries[0].sql");
    assert_string_equal(s, "SELECT 2");
    free(s);
    s = test_json_string(r, "entries[0].status");
    assert_string_equal(s, "success");
    free(s);
    free(r);
    r = call_ok("database/searchHistory", "{\"query\":\"NEEDLE\",\"connectionId\":\"%s\"}", id);
    assert_int_equal(test_json_length(r, "entries"), 1);
    int64_t hid = 0;
    assert_true(test_json_int(r, "entries[0].id", &hid));
    free(r);
    free(call_ok("database/favoriteQuery", "{\"historyId\":%lld,\"favorite\":true}", (long long)hid));
    r = call_ok("database/getFavorites", "{\"connectionId\":\"%s\"}", id);
    assert_int_equal(test_json_length(r, "entries"), 1);
    free(r);
    /* History and favourites live in the server's store: a restart keeps them. */
    test_server_free(server);
    start_server();
    r = call_ok("database/getFavorites", "{\"connectionId\":\"%s\"}", id);
    assert_int_equal(test_json_length(r, "entries"), 1);
    s = test_json_string(r, "entries[0].sql");
    assert_string_equal(s, "SELECT 'needle' AS n");
    free(s);
    free(r);
    r = call_ok("database/history", "{\"connectionId\":\"%s\"}", id);
    assert_true(test_json_length(r, "entries") >= 2);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/favoriteQuery", "{\"historyId\":999999,\"favorite\":true}"), -32602);
    free(e);
    free(call_ok("database/clearHistory", "{\"connectionId\":\"%s\"}", id));
    r = call_ok("database/history", "{\"connectionId\":\"%s\"}", id);
    assert_int_equal(test_json_length(r, "entries"), 0);
    free(r);
}

static void test_corrupt_and_locked(void **state)
{
    (void)state;
    char path[512];
    snprintf(path, sizeof path, "%s/corrupt.db", dir);
    FILE *f = fopen(path, "wb");
    for (int i = 0; i < 512; i++)
        fputs("this is no database ", f);
    fclose(f);
    char *r = call_ok("database/createConnection",
                      "{\"config\":{\"id\":\"bad\",\"name\":\"bad\",\"type\":\"sqlite\",\"path\":\"%s\"}}", path);
    free(r);
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/connect", "{\"connectionId\":\"bad\"}"), -32603);
    char *code = test_json_string(e, "data.engineCode");
    assert_string_equal(code, "SQLITE_NOTADB");
    free(code);
    free(e);
    r = call_ok("database/getConnection", "{\"connectionId\":\"bad\"}");
    char *s = test_json_string(r, "connection.status");
    assert_string_equal(s, "error");
    free(s);
    free(r);

    /* Another process holds the write lock: a clear busy error, the connection stays usable. */
    const char *id = open_db("locked.db", false);
    exec_sql(id, "CREATE TABLE l (v)");
    free(call_ok("database/updateConnection", "{\"connectionId\":\"%s\",\"config\":{\"connectionTimeout\":100}}", id));
    free(call_ok("database/disconnect", "{\"connectionId\":\"%s\"}", id));
    free(call_ok("database/connect", "{\"connectionId\":\"%s\"}", id));
    sqlite3 *other;
    snprintf(path, sizeof path, "%s/locked.db", dir);
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(call_err(&e, "database/query", "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO l VALUES (1)\"}", id),
                     -32603);
    code = test_json_string(e, "data.engineCode");
    assert_string_equal(code, "SQLITE_BUSY");
    free(code);
    free(e);
    sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(other);
    exec_sql(id, "INSERT INTO l VALUES (1)");
}

/* A query waiting for another process's lock still stops at once when
 * cancelled or when its queryTimeout passes, whatever connectionTimeout
 * (the longest it may wait for the lock) says. */
static void test_cancel_while_locked(void **state)
{
    (void)state;
    const char *id = open_db("waiting.db", false);
    exec_sql(id, "CREATE TABLE w (v)");
    free(call_ok("database/updateConnection", "{\"connectionId\":\"%s\",\"config\":{\"connectionTimeout\":60000}}",
                 id));
    free(call_ok("database/disconnect", "{\"connectionId\":\"%s\"}", id));
    free(call_ok("database/connect", "{\"connectionId\":\"%s\"}", id));
    char path[512];
    snprintf(path, sizeof path, "%s/waiting.db", dir);
    sqlite3 *other;
    assert_int_equal(sqlite3_open(path, &other), SQLITE_OK);
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

    char params[256];
    snprintf(params, sizeof params, "{\"connectionId\":\"%s\",\"sql\":\"INSERT INTO w VALUES (1)\"}", id);
    int64_t rid = test_client_send(client, "database/query", params);
    test_server_run_for(server, 300);
    char *h = call_ok("database/history", "{\"connectionId\":\"%s\",\"limit\":1}", id);
    char *qid = test_json_string(h, "entries[0].queryId");
    free(h);
    double t0 = now_s();
    char *r = call_ok("database/cancel", "{\"queryId\":\"%s\"}", qid);
    assert_string_equal(r, "{\"cancelled\":true}");
    free(r);
    free(qid);
    char *out = NULL;
    assert_int_equal(test_client_wait_response(client, rid, 20000, &out), -32800);
    free(out);
    double waited = now_s() - t0;
    if (waited > 2.0)
        fail_msg("the cancelled query went on waiting for the lock for %.1f s", waited);

    /* queryTimeout too (connecting reads the schema: not while the lock is held). */
    sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
    free(call_ok("database/updateConnection", "{\"connectionId\":\"%s\",\"config\":{\"queryTimeout\":300}}", id));
    free(call_ok("database/disconnect", "{\"connectionId\":\"%s\"}", id));
    free(call_ok("database/connect", "{\"connectionId\":\"%s\"}", id));
    assert_int_equal(sqlite3_exec(other, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);
    t0 = now_s();
    char *e = NULL;
    assert_int_equal(test_client_request(client, "database/query", params, &e), -32603);
    waited = now_s() - t0;
    if (waited > 2.0)
        fail_msg("a query with a 300 ms queryTimeout waited for the lock for %.1f s", waited);
    assert_non_null(strstr(e, "queryTimeout"));
    free(e);

    sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
    sqlite3_close(other);
    exec_sql(id, "INSERT INTO w VALUES (1)");
}

static void test_configs_persist_without_passwords(void **state)
{
    (void)state;
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"g1\",\"name\":\"global one\",\"type\":\"sqlite\",\"path\":\"%s/g.db\","
                 "\"passwordSecret\":\"db.secret.key\",\"queryTimeout\":5000}}",
                 dir));
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"p1\",\"name\":\"project one\",\"type\":\"postgres\",\"host\":\"db.example\","
                 "\"database\":\"app\",\"username\":\"me\",\"passwordSecret\":\"pg.key\",\"scope\":\"project\","
                 "\"ssl\":{\"rejectUnauthorized\":true}}}"));
    /* The writes are jobs: a restart waits for them. */
    test_server_free(server);
    char path[400];
    snprintf(path, sizeof path, "%s/connections.json", data_dir);
    char *global = read_text(path);
    assert_non_null(global);
    assert_non_null(strstr(global, "\"passwordSecret\":\"db.secret.key\""));
    assert_null(strstr(global, "\"password\""));
    assert_null(strstr(global, "project one"));
    free(global);
    snprintf(path, sizeof path, "%s/.ecpd/connections.json", workspace);
    char *project = read_text(path);
    assert_non_null(project);
    assert_non_null(strstr(project, "project one"));
    free(project);

    start_server();
    char *r = call_ok("database/listConnections", "{\"scope\":\"project\"}");
    assert_int_equal(test_json_length(r, "connections"), 1);
    char *s = test_json_string(r, "connections[0].id");
    assert_string_equal(s, "p1");
    free(s);
    free(r);
    /* A relative path is the workspace's file. */
    free(call_ok("database/createConnection",
                 "{\"config\":{\"id\":\"rel\",\"name\":\"rel\",\"type\":\"sqlite\",\"path\":\"rel.db\"}}"));
    free(call_ok("database/connect", "{\"connectionId\":\"rel\"}"));
    char rel[400];
    snprintf(rel, sizeof rel, "%s/rel.db", workspace);
    assert_int_equal(access(rel, F_OK), 0);
    r = call_ok("database/getConnection", "{\"connectionId\":\"rel\"}");
    s = test_json_string(r, "connection.path");
    assert_string_equal(s, rel);
    free(s);
    free(r);
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"rel\"}"));
    char *e = NULL;
    assert_int_equal(call_err(&e, "database/transaction", "{\"connectionId\":\"g1\",\"queries\":[{\"sql\":\"SELECT 1\"}]}"),
                     -32603);
    assert_non_null(strstr(e, "not connected"));
    free(e);

    r = call_ok("database/getConnection", "{\"connectionId\":\"g1\"}");
    s = test_json_string(r, "connection.scope");
    assert_string_equal(s, "global");
    free(s);
    assert_null(strstr(r, "secret"));
    free(r);
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"p1\"}"));
    free(call_ok("database/deleteConnection", "{\"connectionId\":\"g1\"}"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_connections),
        cmocka_unit_test(test_pipelined_changes_apply_in_order),
        cmocka_unit_test(test_query_shapes_and_errors),
        cmocka_unit_test(test_paging),
        cmocka_unit_test(test_page_settings),
        cmocka_unit_test(test_cancel_and_timeout),
        cmocka_unit_test(test_cancel_in_transaction),
        cmocka_unit_test(test_ten_million_rows),
        cmocka_unit_test(test_read_only_and_transaction),
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_history),
        cmocka_unit_test(test_corrupt_and_locked),
        cmocka_unit_test(test_cancel_while_locked),
        cmocka_unit_test(test_configs_persist_without_passwords),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
