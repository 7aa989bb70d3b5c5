/* The store alone: the schema and its migrations, operations in submission
 * order with their completions on the loop, flushing, persistence across a
 * reopen, two stores writing one file at once, processes that open one fresh
 * file together, and the fallback to memory when the file cannot be used
 * (corrupt, locked, not a file). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "buf.h"
#include "interface.h"
#include "internal.h"

typedef struct fixture {
    uv_loop_t loop;
    char dir[64];
    char path[128];
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    strcpy(f->dir, "/tmp/ecpd-store-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->path, sizeof f->path, "%s/state.db", f->dir);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    int rc = system(cmd);
    free(f);
    return rc == 0 ? 0 : -1;
}

static store *open_store(fixture *f, int busy_ms)
{
    store_options o = {.data_dir = f->dir, .busy_timeout_ms = busy_ms};
    ecp_error err;
    store *s = store_open(&f->loop, NULL, &o, &err);
    assert_non_null(s);
    return s;
}

static void close_store(fixture *f, store *s)
{
    store_close(s);
    uv_run(&f->loop, UV_RUN_NOWAIT);
}

/* ----- operations used by the tests ------------------------------------------------------- */

typedef struct put_op {
    char key[32];
    char value[32];
    buf *trace; /* completions append "<key>;" */
} put_op;

static int put_work(sqlite3 *db, void *data, ecp_error *err)
{
    put_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db, "INSERT OR REPLACE INTO settings (key, value) VALUES (?1, ?2)", &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, op->value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "put");
}

static void put_done(void *data, int status, const ecp_error *err)
{
    put_op *op = data;
    assert_int_equal(status, 0);
    if (op->trace)
        buf_appendf(op->trace, "%s;", op->key);
}

static const store_op_type put_type = {.name = "test.put", .transaction = true, .work = put_work, .done = put_done};

static void put(store *s, const char *key, const char *value, buf *trace)
{
    put_op *op = calloc(1, sizeof *op);
    snprintf(op->key, sizeof op->key, "%s", key);
    snprintf(op->value, sizeof op->value, "%s", value);
    op->trace = trace;
    store_submit(s, &put_type, op);
}

typedef struct count_op {
    int count;
    int *out;
    bool ran_done;
} count_op;

static int count_work(sqlite3 *db, void *data, ecp_error *err)
{
    count_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db, "SELECT count(*) FROM settings", &st, err);
    if (status < 0)
        return status;
    if (sqlite3_step(st) == SQLITE_ROW)
        op->count = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return 0;
}

static void count_done(void *data, int status, const ecp_error *err)
{
    count_op *op = data;
    *op->out = op->count;
}

static const store_op_type count_type = {.name = "test.count", .work = count_work, .done = count_done};

static int count_rows(store *s)
{
    int n = -1;
    count_op *op = calloc(1, sizeof *op);
    op->out = &n;
    store_submit(s, &count_type, op);
    store_flush(s);
    return n;
}

typedef struct pragma_op {
    const char *pragma;
    int value;
    int *out;
} pragma_op;

static int pragma_work(sqlite3 *db, void *data, ecp_error *err)
{
    pragma_op *op = data;
    sqlite3_stmt *st;
    int status = store_prepare(db, op->pragma, &st, err);
    if (status < 0)
        return status;
    op->value = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int(st, 0) : -1;
    sqlite3_finalize(st);
    return 0;
}

static void pragma_done(void *data, int status, const ecp_error *err)
{
    pragma_op *op = data;
    *op->out = status == 0 ? op->value : -2;
}

static const store_op_type pragma_type = {.name = "test.pragma", .work = pragma_work, .done = pragma_done};

/* An integer pragma as the store's own connection sees it. */
static int store_pragma(store *s, const char *pragma)
{
    int n = -3;
    pragma_op *op = calloc(1, sizeof *op);
    op->pragma = pragma;
    op->out = &n;
    store_submit(s, &pragma_type, op);
    store_flush(s);
    return n;
}

/* A text pragma of the file as another process sees it. */
static void expect_file_pragma(const char *path, const char *pragma, const char *want)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, pragma, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), want);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

typedef struct sql_op {
    const char *sql;
} sql_op;

static int sql_work(sqlite3 *db, void *data, ecp_error *err) { return store_exec(db, ((sql_op *)data)->sql, err); }

static void sql_done(void *data, int status, const ecp_error *err)
{
    (void)data;
    (void)err;
    assert_int_equal(status, 0);
}

static const store_op_type sql_type = {.name = "test.sql", .transaction = true, .work = sql_work, .done = sql_done};

static void run_sql(store *s, const char *sql)
{
    sql_op *op = calloc(1, sizeof *op);
    op->sql = sql;
    store_submit(s, &sql_type, op);
    store_flush(s);
}

static off_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : 0;
}

/* The database file and its WAL, in bytes. */
static off_t store_bytes(fixture *f)
{
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", f->path);
    return file_size(f->path) + file_size(wal);
}

/* ----- tests ----------------------------------------------------------------------------------- */

static void test_open_creates_a_private_migrated_database(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    assert_true(store_persistent(s));
    assert_string_equal(store_path(s), f->path);
    assert_int_equal(store_schema_version(s), (int)store__migration_count());
    struct stat st;
    assert_int_equal(stat(f->path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    /* Crash-safe and checked: WAL on the file, foreign keys on the connection. */
    assert_int_equal(store_pragma(s, "PRAGMA foreign_keys"), 1);
    assert_int_equal(store_pragma(s, "PRAGMA user_version"), (int)store__migration_count());
    close_store(f, s);
    expect_file_pragma(f->path, "PRAGMA journal_mode", "wal");
    char version[16];
    snprintf(version, sizeof version, "%d", (int)store__migration_count());
    expect_file_pragma(f->path, "PRAGMA user_version", version);

    /* Reopening migrates nothing and keeps the version. */
    s = open_store(f, 0);
    assert_int_equal(store_schema_version(s), (int)store__migration_count());
    close_store(f, s);
}

static void test_operations_run_in_order_and_complete_on_the_loop(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    buf trace = BUF_INIT, want = BUF_INIT;
    for (int i = 0; i < 200; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%03d", i);
        put(s, key, "1", &trace);
        buf_appendf(&want, "%s;", key);
    }
    assert_true(store_pending(s) > 0);
    /* The completions come through the loop, in submission order. */
    while (store_pending(s))
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_string_equal(trace.data, want.data);
    /* A read submitted after writes sees them. */
    put(s, "last", "2", NULL);
    assert_int_equal(count_rows(s), 201);
    buf_free(&trace);
    buf_free(&want);
    close_store(f, s);
}

static void test_close_runs_what_is_queued_and_it_persists(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    buf trace = BUF_INIT;
    for (int i = 0; i < 50; i++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", i);
        put(s, key, "v", &trace);
    }
    close_store(f, s); /* no loop turn in between: close must run them all */
    assert_int_equal((int)trace.len, 50 * 3 + 40); /* "k0;".."k9;" are 3 bytes, the rest 4 */
    buf_free(&trace);

    s = open_store(f, 0);
    assert_int_equal(count_rows(s), 50);
    close_store(f, s);
}

static void test_two_stores_share_one_file(void **state)
{
    fixture *f = *state;
    store *a = open_store(f, 0), *b = open_store(f, 0);
    assert_true(store_persistent(a));
    assert_true(store_persistent(b));
    for (int i = 0; i < 300; i++) {
        char key[16];
        snprintf(key, sizeof key, "%c%d", i % 2 ? 'a' : 'b', i);
        put(i % 2 ? a : b, key, "x", NULL);
    }
    store_flush(a);
    store_flush(b);
    assert_int_equal(count_rows(a), 300);
    assert_int_equal(count_rows(b), 300);
    close_store(f, a);
    close_store(f, b);

    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Servers started together on a fresh data directory: every one of them
 * switches the new file to WAL and migrates it, and none may give up and fall
 * back to memory, or its saves would never reach the shared file. Each opener
 * is a process of its own, as servers are, and they are let go at once. */
static void test_processes_opening_a_fresh_file_together_all_persist(void **state)
{
    fixture *f = *state;
    enum { ROUNDS = 12, OPENERS = 4 };
    for (int round = 0; round < ROUNDS; round++) {
        char dir[160];
        snprintf(dir, sizeof dir, "%s/round-%d", f->dir, round);
        assert_int_equal(mkdir(dir, 0700), 0);
        int go[2];
        assert_int_equal(pipe(go), 0);
        pid_t pids[OPENERS];
        for (int i = 0; i < OPENERS; i++) {
            pids[i] = fork();
            assert_true(pids[i] >= 0);
            if (pids[i] == 0) {
                close(go[1]);
                char byte;
                if (read(go[0], &byte, 1) != 0) /* end of file: the start signal */
                    _exit(3);
                uv_loop_t loop;
                uv_loop_init(&loop);
                store_options o = {.data_dir = dir};
                store *s = store_open(&loop, NULL, &o, NULL);
                int code = !s ? 2 : store_persistent(s) ? 0 : 1;
                if (s)
                    store_close(s);
                uv_run(&loop, UV_RUN_NOWAIT);
                uv_loop_close(&loop);
                _exit(code);
            }
        }
        close(go[0]);
        close(go[1]); /* every opener starts now */
        int in_memory = 0;
        for (int i = 0; i < OPENERS; i++) {
            int wstatus;
            assert_int_equal(waitpid(pids[i], &wstatus, 0), pids[i]);
            assert_true(WIFEXITED(wstatus));
            assert_int_not_equal(WEXITSTATUS(wstatus), 2);
            assert_int_not_equal(WEXITSTATUS(wstatus), 3);
            in_memory += WEXITSTATUS(wstatus) == 1;
        }
        if (in_memory)
            print_error("round %d: %d of %d stores fell back to memory\n", round, in_memory, OPENERS);
        assert_int_equal(in_memory, 0);
    }
}

static void test_a_corrupt_file_falls_back_to_memory_and_is_left_alone(void **state)
{
    fixture *f = *state;
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    for (int i = 0; i < 512; i++)
        fputs("this is not a database ", fp);
    fclose(fp);
    struct stat before;
    assert_int_equal(stat(f->path, &before), 0);

    store *s = open_store(f, 100);
    assert_false(store_persistent(s));
    /* Everything still works, in memory. */
    put(s, "k", "v", NULL);
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);

    struct stat after;
    assert_int_equal(stat(f->path, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
}

static void test_a_locked_file_falls_back_to_a_copy_in_memory(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    put(s, "saved", "before", NULL);
    close_store(f, s);

    /* Another process holds the write lock past the timeout. */
    sqlite3 *holder;
    assert_int_equal(sqlite3_open(f->path, &holder), SQLITE_OK);
    assert_int_equal(sqlite3_exec(holder, "BEGIN EXCLUSIVE", NULL, NULL, NULL), SQLITE_OK);

    s = open_store(f, 100);
    assert_false(store_persistent(s));
    /* What was saved before is still there to read, and writes work in memory. */
    assert_int_equal(count_rows(s), 1);
    put(s, "new", "v", NULL);
    assert_int_equal(count_rows(s), 2);
    close_store(f, s);

    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(holder);

    /* The file was not touched by the memory run. */
    s = open_store(f, 0);
    assert_true(store_persistent(s));
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);
}

static void test_a_path_that_is_no_file_falls_back_to_memory(void **state)
{
    fixture *f = *state;
    assert_int_equal(mkdir(f->path, 0700), 0);
    store *s = open_store(f, 100);
    assert_false(store_persistent(s));
    put(s, "k", "v", NULL);
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);
}

static void test_memory_only_never_touches_the_disk(void **state)
{
    fixture *f = *state;
    store_options o = {.data_dir = f->dir, .memory_only = true};
    store *s = store_open(&f->loop, NULL, &o, NULL);
    assert_non_null(s);
    assert_false(store_persistent(s));
    put(s, "k", "v", NULL);
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);
    assert_int_equal(access(f->path, F_OK), -1);
}

/* What a connection of the store answers where SQLite's dangerous corners are closed. */
static void expect_hardened(store *s)
{
    /* trusted_schema is on by default; fts3_tokenizer with two arguments plants a function pointer */
    assert_int_equal(store_pragma(s, "PRAGMA trusted_schema"), 0);
    assert_true(store_pragma(s, "SELECT fts3_tokenizer('simple', x'4141414141414141') IS NOT NULL") < 0);
}

static void test_every_connection_is_hardened(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    assert_true(store_persistent(s));
    expect_hardened(s);
    close_store(f, s);

    store_options o = {.data_dir = f->dir, .memory_only = true};
    s = store_open(&f->loop, NULL, &o, NULL);
    expect_hardened(s);
    close_store(f, s);

    /* the memory database that stands in for a file that cannot be used */
    FILE *fp = fopen(f->path, "w");
    assert_non_null(fp);
    fputs("not a database", fp);
    fclose(fp);
    s = open_store(f, 100);
    assert_false(store_persistent(s));
    expect_hardened(s);
    close_store(f, s);
}

typedef struct fail_op {
    int *status;
    char message[512];
} fail_op;

static int fail_work(sqlite3 *db, void *data, ecp_error *err)
{
    int status = store_exec(db, "INSERT INTO settings (key, value) VALUES ('x', 'y')", err);
    if (status < 0)
        return status;
    return store_exec(db, "INSERT INTO settings (key, value) VALUES ('x', 'z')", err); /* duplicate key */
}

static void fail_done(void *data, int status, const ecp_error *err)
{
    fail_op *op = data;
    *op->status = status;
    snprintf(op->message, sizeof op->message, "%s", err->message);
    assert_non_null(strstr(op->message, "UNIQUE"));
}

static const store_op_type fail_type = {.name = "test.fail", .transaction = true, .work = fail_work, .done = fail_done};

/* A hot-exit row holds a whole document's text; once it is deleted (the
 * document was saved), the file must not keep its size. */
static void test_a_deleted_big_row_gives_its_space_back(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    run_sql(s, "INSERT INTO settings (key, value) VALUES ('big', CAST(zeroblob(20000000) AS TEXT) || 'x')");
    assert_true(store_bytes(f) > 20000000);
    run_sql(s, "DELETE FROM settings WHERE key = 'big'");
    assert_true(store_bytes(f) < 2000000);
    put(s, "after", "1", NULL);
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);
}

/* A file made before the store gave space back (no incremental vacuum) is
 * rewritten once, on the store's thread, the first time it holds much that
 * is free, and keeps what it holds. */
static void test_an_older_file_is_converted_when_it_holds_much_free_space(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    put(s, "kept", "1", NULL);
    close_store(f, s);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "PRAGMA auto_vacuum = NONE; VACUUM", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
    expect_file_pragma(f->path, "PRAGMA auto_vacuum", "0");

    s = open_store(f, 0);
    run_sql(s, "INSERT INTO settings (key, value) VALUES ('big', CAST(zeroblob(20000000) AS TEXT) || 'x')");
    run_sql(s, "DELETE FROM settings WHERE key = 'big'");
    assert_true(store_bytes(f) < 2000000);
    assert_int_equal(store_pragma(s, "PRAGMA auto_vacuum"), 2);
    assert_int_equal(count_rows(s), 1);
    close_store(f, s);
}

static void test_a_failed_operation_rolls_back_whole(void **state)
{
    fixture *f = *state;
    store *s = open_store(f, 0);
    int status = 0;
    fail_op *op = calloc(1, sizeof *op);
    op->status = &status;
    store_submit(s, &fail_type, op);
    store_flush(s);
    assert_int_equal(status, ECP_EINVAL);
    assert_int_equal(count_rows(s), 0); /* the first insert went with the second */
    close_store(f, s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_open_creates_a_private_migrated_database, setup, teardown),
        cmocka_unit_test_setup_teardown(test_operations_run_in_order_and_complete_on_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_runs_what_is_queued_and_it_persists, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_stores_share_one_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_processes_opening_a_fresh_file_together_all_persist, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_corrupt_file_falls_back_to_memory_and_is_left_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_locked_file_falls_back_to_a_copy_in_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_path_that_is_no_file_falls_back_to_memory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_memory_only_never_touches_the_disk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_failed_operation_rolls_back_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_connection_is_hardened, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_deleted_big_row_gives_its_space_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_an_older_file_is_converted_when_it_holds_much_free_space, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
