/* The file service through its C API on a loop and a pool of its own: single
 * operations as jobs of the service (each calls back once with its outcome;
 * one cancelled before it began is dropped, unless it is a write; a FIFO is
 * never replaced), walks as jobs of the long lane (items admitted one at a
 * time still end, a cancel reaches them, a grep renders its answer on a pool
 * thread), listeners of the service's changes (called after the watch,
 * safe to unsubscribe while called), and a teardown while walks run (no
 * callback afterwards, nothing left behind).
 *
 * The pool has three threads, so the long lane holds one: every walk's items
 * run one after another, each only once the one before it has ended.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file/interface.h"
#include "file/internal.h"

#define TREE_DIRS 20
#define TREE_FILES 50
/* `(a+)+$` backtracks on each of these lines until the match limit stops it,
 * and after a few such lines the file is given up, some 20 ms a file: it
 * takes hundreds of files for a grep to run for seconds. */
#define SLOW_FILES 400
#define SLOW_LINES 200
#define SLOW_PATTERN "(a+)+$"

typedef struct fixture {
    uv_loop_t loop;
    uv_timer_t tick;
    ecp_pool *pool;
    file_service *svc;
    char dir[64];
} fixture;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void tick_cb(uv_timer_t *t) { (void)t; }

/* Runs the loop until *counter reaches want or timeout_ms pass. */
static bool run_until(fixture *f, const int *counter, int want, int timeout_ms)
{
    double end = now_ms() + timeout_ms;
    while (*counter < want && now_ms() < end)
        uv_run(&f->loop, UV_RUN_ONCE);
    return *counter >= want;
}

static void run_for(fixture *f, int ms)
{
    double end = now_ms() + ms;
    while (now_ms() < end)
        uv_run(&f->loop, UV_RUN_ONCE);
}

static void write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        fail_msg("cannot write %s", path);
    close(fd);
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    strcpy(f->dir, "/tmp/ecpd-file-service-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    uv_loop_init(&f->loop);
    uv_timer_init(&f->loop, &f->tick);
    uv_timer_start(&f->tick, tick_cb, 10, 10); /* bounds every UV_RUN_ONCE */
    f->pool = ecp_pool_new(&f->loop, NULL);
    f->svc = file_service_new(f->pool, NULL);
    *state = f;
    return 0;
}

/* Frees what the test left (the service may be gone already) and checks
 * that nothing is left on the loop. */
static int teardown(void **state)
{
    fixture *f = *state;
    file_service_free(f->svc);
    ecp_pool_free(f->pool);
    uv_close((uv_handle_t *)&f->tick, NULL);
    for (int i = 0; i < 5000 && uv_run(&f->loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    int rc = uv_loop_close(&f->loop);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    if (system(cmd) != 0)
        rc = -1;
    free(f);
    return rc == 0 ? 0 : -1;
}


/* ----- single operations ----------------------------------------------------------------- */

typedef struct op_outcome {
    int calls;
    int status;
    char message[600];
    char *data; /* read */
    size_t len;
    bool invalid_utf8;
    file_info info; /* stat */
    double mod_time; /* write */
    size_t written;
    size_t entries; /* readDir */
    char first[64];
} op_outcome;

static void note_status(op_outcome *o, int status, const ecp_error *err)
{
    o->calls++;
    o->status = status;
    snprintf(o->message, sizeof o->message, "%s", status && err ? err->message : "");
}

static void on_done(void *ctx, int status, const ecp_error *err) { note_status(ctx, status, err); }

static void on_read(void *ctx, int status, const ecp_error *err, const file_read_result *r)
{
    op_outcome *o = ctx;
    note_status(o, status, err);
    if (r) {
        o->data = strndup(r->data, r->len);
        o->len = r->len;
        o->invalid_utf8 = r->invalid_utf8;
        o->info = r->info;
    }
}

static void on_write(void *ctx, int status, const ecp_error *err, const file_write_result *r)
{
    op_outcome *o = ctx;
    note_status(o, status, err);
    if (r) {
        o->mod_time = r->mod_time;
        o->written = r->bytes_written;
    }
}

static void on_stat(void *ctx, int status, const ecp_error *err, const file_info *info)
{
    op_outcome *o = ctx;
    note_status(o, status, err);
    if (info)
        o->info = *info;
}

static void on_read_dir(void *ctx, int status, const ecp_error *err, const file_read_dir_result *r)
{
    op_outcome *o = ctx;
    note_status(o, status, err);
    if (r) {
        o->entries = r->count;
        snprintf(o->first, sizeof o->first, "%s", r->count ? r->entries[0].name : "");
    }
}

/* Starts job and runs the loop until its callback has run once more. */
static void run_op(fixture *f, ecp_job *job, op_outcome *o)
{
    int want = o->calls + 1;
    file_job_start(job);
    assert_true(run_until(f, &o->calls, want, 5000));
}

static void test_operations_as_jobs(void **state)
{
    fixture *f = *state;
    char a[128], b[128], c[128], sub[128];
    snprintf(a, sizeof a, "%s/a.txt", f->dir);
    snprintf(b, sizeof b, "%s/b.txt", f->dir);
    snprintf(c, sizeof c, "%s/c.txt", f->dir);
    snprintf(sub, sizeof sub, "%s/sub/deeper", f->dir);

    /* the service keeps its own copy of what it was given */
    char *bytes = strdup("caf\xc3\xa9 \xff");
    file_write_args wa = {.path = a, .data = bytes, .len = strlen(bytes), .options = {false, true}};
    op_outcome w = {0};
    ecp_job *job = file_write_prepare(f->svc, &wa, on_write, &w);
    memset(bytes, 'x', strlen(bytes));
    free(bytes);
    run_op(f, job, &w);
    assert_int_equal(w.status, 0);
    assert_int_equal(w.written, 7);
    assert_true(w.mod_time > 0);

    op_outcome r = {0};
    file_read_args ra = {.path = a, .max_size = 1024, .check_utf8 = true};
    run_op(f, file_read_prepare(f->svc, &ra, on_read, &r), &r);
    assert_int_equal(r.status, 0);
    assert_string_equal(r.data, "caf\xc3\xa9 \xff");
    assert_true(r.invalid_utf8);
    assert_int_equal(r.info.size, 7);
    free(r.data);
    r.data = NULL;
    ra.max_size = 3;
    run_op(f, file_read_prepare(f->svc, &ra, on_read, &r), &r);
    assert_int_equal(r.status, ECP_ETOOBIG);
    assert_null(r.data);

    op_outcome s = {0};
    run_op(f, file_stat_prepare(f->svc, a, on_stat, &s), &s);
    assert_int_equal(s.status, 0);
    assert_true(s.info.exists && s.info.is_file);
    run_op(f, file_stat_prepare(f->svc, b, on_stat, &s), &s);
    assert_int_equal(s.status, 0);
    assert_false(s.info.exists);

    op_outcome d = {0};
    run_op(f, file_copy_prepare(f->svc, a, b, on_done, &d), &d);
    assert_int_equal(d.status, 0);
    run_op(f, file_rename_prepare(f->svc, b, c, on_done, &d), &d);
    assert_int_equal(d.status, 0);
    run_op(f, file_create_dir_prepare(f->svc, sub, true, on_done, &d), &d);
    assert_int_equal(d.status, 0);

    op_outcome l = {0};
    run_op(f, file_read_dir_prepare(f->svc, f->dir, on_read_dir, &l), &l);
    assert_int_equal(l.status, 0);
    assert_int_equal(l.entries, 3); /* sub/, a.txt, c.txt */
    assert_string_equal(l.first, "sub");

    snprintf(sub, sizeof sub, "%s/sub", f->dir);
    run_op(f, file_delete_dir_prepare(f->svc, sub, false, on_done, &d), &d);
    assert_int_equal(d.status, ECP_ENOTEMPTY);
    run_op(f, file_delete_dir_prepare(f->svc, sub, true, on_done, &d), &d);
    assert_int_equal(d.status, 0);
    run_op(f, file_delete_prepare(f->svc, c, on_done, &d), &d);
    assert_int_equal(d.status, 0);
    run_op(f, file_delete_prepare(f->svc, c, on_done, &d), &d);
    assert_int_equal(d.status, ECP_ENOTFOUND);
    assert_non_null(strstr(d.message, "c.txt"));
    assert_int_equal(d.calls, 7);
    assert_int_equal(ecp_job_set_count(f->svc->jobs), 0);
}

/* A cancel before the operation begins drops it and says so, except for a
 * write, whose bytes exist nowhere else: it lands and reports how. */
static void test_cancel_before_an_operation_begins(void **state)
{
    fixture *f = *state;
    char a[128];
    snprintf(a, sizeof a, "%s/a.txt", f->dir);
    write_file(a, "old", 3);

    op_outcome d = {0};
    ecp_job *job = file_delete_prepare(f->svc, a, on_done, &d);
    ecp_job_cancel(job);
    run_op(f, job, &d);
    assert_int_equal(d.status, ECP_ECANCELED);
    assert_int_equal(access(a, F_OK), 0);

    op_outcome w = {0};
    file_write_args wa = {.path = a, .data = "new", .len = 3, .options = {false, true}};
    job = file_write_prepare(f->svc, &wa, on_write, &w);
    ecp_job_cancel(job);
    run_op(f, job, &w);
    assert_int_equal(w.status, 0);
    op_outcome r = {0};
    file_read_args ra = {.path = a, .max_size = 16};
    run_op(f, file_read_prepare(f->svc, &ra, on_read, &r), &r);
    assert_string_equal(r.data, "new");
    free(r.data);
}

/* The jobs refuse a FIFO as the target of a write, a copy or a rename, as
 * the blocking calls do, and leave it in place. */
static void test_operations_never_replace_a_fifo(void **state)
{
    fixture *f = *state;
    char fifo[128], src[128];
    snprintf(fifo, sizeof fifo, "%s/pipe", f->dir);
    snprintf(src, sizeof src, "%s/src.txt", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    write_file(src, "data", 4);

    op_outcome w = {0};
    file_write_args wa = {.path = fifo, .data = "x", .len = 1, .options = {false, true}};
    run_op(f, file_write_prepare(f->svc, &wa, on_write, &w), &w);
    assert_int_equal(w.status, ECP_EIO);
    op_outcome d = {0};
    run_op(f, file_copy_prepare(f->svc, src, fifo, on_done, &d), &d);
    assert_int_equal(d.status, ECP_EIO);
    run_op(f, file_rename_prepare(f->svc, src, fifo, on_done, &d), &d);
    assert_int_equal(d.status, ECP_EIO);
    struct stat st;
    assert_int_equal(lstat(fifo, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    assert_int_equal(access(src, F_OK), 0);
}

/* A grep asked to render its answer does it on the pool thread that ends it,
 * and hands the bytes to the callback. */
typedef struct render_probe {
    pthread_t loop_thread;
    int formats;
    bool on_loop;
    size_t count_seen;
    int calls;
    char rendered[64];
} render_probe;

static void render_count(void *fctx, const file_grep_result *r, buf *out)
{
    render_probe *p = fctx;
    p->formats++;
    p->on_loop = pthread_equal(pthread_self(), p->loop_thread);
    p->count_seen = r->count;
    buf_appendf(out, "{\"count\":%zu}", r->count);
}

static void on_rendered_grep(void *ctx, int status, const ecp_error *err, const file_grep_result *r)
{
    (void)err;
    render_probe *p = ctx;
    p->calls++;
    if (status == 0 && r->rendered)
        snprintf(p->rendered, sizeof p->rendered, "%.*s", (int)ecp_shared_len(r->rendered),
                 ecp_shared_data(r->rendered));
}

static void test_grep_renders_off_the_loop(void **state)
{
    fixture *f = *state;
    char p[128];
    for (int i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/f%d.txt", f->dir, i);
        write_file(p, "one needle\nnone\nneedle two\n", 27);
    }
    render_probe probe = {.loop_thread = pthread_self()};
    file_grep_options o = {0};
    o.pattern = "needle";
    o.case_sensitive = true;
    o.base = f->dir;
    o.threads = 2;
    o.format = render_count;
    o.fctx = &probe;
    ecp_job *walk = NULL;
    assert_int_equal(file_grep_prepare(f->svc, &o, on_rendered_grep, &probe, &walk, NULL), 0);
    file_walk_start(walk);
    assert_true(run_until(f, &probe.calls, 1, 10000));
    assert_int_equal(probe.formats, 1);
    assert_false(probe.on_loop);
    assert_int_equal(probe.count_seen, 6);
    assert_string_equal(probe.rendered, "{\"count\":6}");
}

static void render_read(void *fctx, const file_read_result *r, buf *out)
{
    render_probe *p = fctx;
    p->formats++;
    p->on_loop = pthread_equal(pthread_self(), p->loop_thread);
    buf_appendf(out, "[%zu]", r->len);
}

static void on_rendered_read(void *ctx, int status, const ecp_error *err, const file_read_result *r)
{
    (void)err;
    render_probe *p = ctx;
    p->calls++;
    if (status == 0 && r->rendered)
        snprintf(p->rendered, sizeof p->rendered, "%.*s", (int)ecp_shared_len(r->rendered),
                 ecp_shared_data(r->rendered));
}

/* So does a read: a big file's content is escaped off the loop. */
static void test_read_renders_off_the_loop(void **state)
{
    fixture *f = *state;
    char p[128];
    snprintf(p, sizeof p, "%s/a.txt", f->dir);
    write_file(p, "12345", 5);
    render_probe probe = {.loop_thread = pthread_self()};
    file_read_args ra = {.path = p, .max_size = 64, .format = render_read, .fctx = &probe};
    file_job_start(file_read_prepare(f->svc, &ra, on_rendered_read, &probe));
    assert_true(run_until(f, &probe.calls, 1, 5000));
    assert_int_equal(probe.formats, 1);
    assert_false(probe.on_loop);
    assert_string_equal(probe.rendered, "[5]");
}

static void render_glob(void *fctx, const file_glob_result *r, buf *out)
{
    render_probe *p = fctx;
    p->formats++;
    p->on_loop = pthread_equal(pthread_self(), p->loop_thread);
    buf_appendf(out, "[%zu]", r->count);
}

static void on_rendered_glob(void *ctx, int status, const ecp_error *err, const file_glob_result *r)
{
    (void)err;
    render_probe *p = ctx;
    p->calls++;
    if (status == 0 && r->rendered)
        snprintf(p->rendered, sizeof p->rendered, "%.*s", (int)ecp_shared_len(r->rendered),
                 ecp_shared_data(r->rendered));
}

/* And a glob. */
static void test_glob_renders_off_the_loop(void **state)
{
    fixture *f = *state;
    char p[128];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/f%d.txt", f->dir, i);
        write_file(p, "x", 1);
    }
    render_probe probe = {.loop_thread = pthread_self()};
    file_glob_options o = {.pattern = "*.txt", .base = f->dir, .format = render_glob, .fctx = &probe};
    ecp_job *walk = NULL;
    assert_int_equal(file_glob_prepare(f->svc, &o, on_rendered_glob, &probe, &walk, NULL), 0);
    file_walk_start(walk);
    assert_true(run_until(f, &probe.calls, 1, 5000));
    assert_int_equal(probe.formats, 1);
    assert_false(probe.on_loop);
    assert_string_equal(probe.rendered, "[4]");
}

static void render_search(void *fctx, const file_search_result *r, buf *out)
{
    render_probe *p = fctx;
    p->formats++;
    p->on_loop = pthread_equal(pthread_self(), p->loop_thread);
    buf_appendf(out, "[%zu]", r->count);
}

static void on_rendered_search(void *ctx, int status, const ecp_error *err, const file_search_result *r)
{
    (void)err;
    render_probe *p = ctx;
    p->calls++;
    if (status == 0 && r->rendered)
        snprintf(p->rendered, sizeof p->rendered, "%.*s", (int)ecp_shared_len(r->rendered),
                 ecp_shared_data(r->rendered));
}

/* And a search, which renders no more than max_results. */
static void test_search_renders_off_the_loop(void **state)
{
    fixture *f = *state;
    char p[128];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/needle%d.txt", f->dir, i);
        write_file(p, "x", 1);
    }
    render_probe probe = {.loop_thread = pthread_self()};
    file_search_options o = {.pattern = "ndl", .base = f->dir, .max_results = 3, .format = render_search,
                             .fctx = &probe};
    ecp_job *walk = NULL;
    assert_int_equal(file_search_prepare(f->svc, &o, on_rendered_search, &probe, &walk, NULL), 0);
    file_walk_start(walk);
    assert_true(run_until(f, &probe.calls, 1, 5000));
    assert_int_equal(probe.formats, 1);
    assert_false(probe.on_loop);
    assert_string_equal(probe.rendered, "[3]");
}

/* ----- walks ------------------------------------------------------------------------- */

typedef struct grep_outcome {
    int calls;
    int status;
    size_t count;
    size_t files_searched;
    bool truncated;
} grep_outcome;

static void on_grep(void *ctx, int status, const ecp_error *err, const file_grep_result *res)
{
    grep_outcome *o = ctx;
    o->calls++;
    o->status = status;
    if (status == 0) {
        o->count = res->count;
        o->files_searched = res->files_searched;
        o->truncated = res->truncated;
    }
}

static ecp_job *start_grep(fixture *f, const char *base, const char *pattern, bool regex, unsigned threads,
                           grep_outcome *out)
{
    file_grep_options o = {0};
    o.pattern = pattern;
    o.regex = regex;
    o.case_sensitive = true;
    o.base = base;
    o.threads = threads;
    ecp_job *walk = NULL;
    ecp_error err;
    if (file_grep_prepare(f->svc, &o, on_grep, out, &walk, &err) != 0)
        fail_msg("file_grep_prepare: %s", err.message);
    file_walk_start(walk);
    return walk;
}

/* TREE_DIRS x TREE_FILES files; every third one holds the needle, once. */
static void make_tree(fixture *f, char *root, size_t n)
{
    snprintf(root, n, "%s/tree", f->dir);
    mkdir(root, 0755);
    char p[256];
    for (int d = 0; d < TREE_DIRS; d++) {
        snprintf(p, sizeof p, "%s/d%02d", root, d);
        mkdir(p, 0755);
        for (int i = 0; i < TREE_FILES; i++) {
            snprintf(p, sizeof p, "%s/d%02d/f%02d.txt", root, d, i);
            const char *body = (d * TREE_FILES + i) % 3 == 0 ? "one\nthe needle\nthree\n" : "one\ntwo\nthree\n";
            write_file(p, body, strlen(body));
        }
    }
}

static void make_slow_tree(fixture *f, char *root, size_t n)
{
    snprintf(root, n, "%s/slow", f->dir);
    mkdir(root, 0755);
    char line[50];
    memset(line, 'a', 48);
    memcpy(line + 48, "b\n", 2);
    static char body[SLOW_LINES * 50];
    for (int i = 0; i < SLOW_LINES; i++)
        memcpy(body + i * 50, line, 50);
    for (int i = 0; i < SLOW_FILES; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/s%03d.txt", root, i);
        write_file(p, body, sizeof body);
    }
}

static void test_walk_items_follow_the_pool(void **state)
{
    fixture *f = *state;
    assert_int_equal(ecp_pool_threads(f->pool), 3);
    assert_int_equal(ecp_pool_long_limit(f->pool), 1);
    /* more items would only wait for the one the lane admits */
    assert_int_equal(file__walk_items(f->svc), 1);
}

/* Grep's workers wait for each other on a condition variable; the lane
 * admits them one at a time here, each once the one before has ended. Two
 * greps at once interleave their items in the lane's queue. */
static void test_grep_items_admitted_one_at_a_time(void **state)
{
    fixture *f = *state;
    char root[128];
    make_tree(f, root, sizeof root);
    const size_t files = TREE_DIRS * TREE_FILES, hits = (files + 2) / 3;
    grep_outcome a = {0}, b = {0};
    start_grep(f, root, "needle", false, 4, &a);
    start_grep(f, root, "ne+dle", true, ECP_JOB_MAX_ITEMS, &b);
    assert_int_equal(ecp_job_set_count(f->svc->jobs), 2);
    assert_true(run_until(f, &a.calls, 1, 20000));
    assert_true(run_until(f, &b.calls, 1, 20000));
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.status, 0);
    assert_int_equal(a.count, hits);
    assert_int_equal(a.files_searched, files);
    assert_int_equal(b.status, 0);
    assert_int_equal(b.count, hits);
    assert_int_equal(b.files_searched, files);
    assert_int_equal(ecp_job_set_count(f->svc->jobs), 0);
}

static void test_cancel_a_walk(void **state)
{
    fixture *f = *state;
    char root[128];
    make_slow_tree(f, root, sizeof root);
    grep_outcome o = {0};
    ecp_job *walk = start_grep(f, root, SLOW_PATTERN, true, 2, &o);
    run_for(f, 100);
    assert_int_equal(o.calls, 0); /* still busy */
    double t0 = now_ms();
    ecp_job_cancel(walk);
    assert_true(run_until(f, &o.calls, 1, 5000));
    fprintf(stderr, "file_service_test: a slow grep ended %.1f ms after its cancel\n", now_ms() - t0);
    assert_int_equal(o.status, ECP_ECANCELED);
    run_for(f, 50);
    assert_int_equal(o.calls, 1);
}

typedef struct glob_outcome {
    int calls;
} glob_outcome;

static void on_glob(void *ctx, int status, const ecp_error *err, const file_glob_result *res)
{
    ((glob_outcome *)ctx)->calls++;
}

/* Freeing the service while one walk runs on a thread and another waits for
 * the lane: it returns once the running one has noticed, and neither calls
 * back, then or later. */
static void test_free_while_walks_run(void **state)
{
    fixture *f = *state;
    char root[128];
    make_slow_tree(f, root, sizeof root);
    grep_outcome o = {0};
    start_grep(f, root, SLOW_PATTERN, true, 2, &o);
    glob_outcome g = {0};
    file_glob_options go = {.pattern = "**/*.txt", .base = root};
    ecp_job *walk = NULL;
    assert_int_equal(file_glob_prepare(f->svc, &go, on_glob, &g, &walk, NULL), 0);
    file_walk_start(walk);
    run_for(f, 100);
    assert_int_equal(o.calls, 0);
    assert_int_equal(g.calls, 0);
    double t0 = now_ms();
    file_service_free(f->svc);
    f->svc = NULL;
    double ms = now_ms() - t0;
    fprintf(stderr, "file_service_test: freeing the service during a slow grep took %.1f ms\n", ms);
    assert_true(ms < 2000);
    run_for(f, 100);
    assert_int_equal(o.calls, 0);
    assert_int_equal(g.calls, 0);
}

/* ----- listeners ------------------------------------------------------------------------ */

typedef struct recorder {
    fixture *f;
    char log[512];
    int watch_calls;
    int calls[3];
    void *unsubscribe_ctx; /* listener 0 unsubscribes this one and itself */
} recorder;

typedef struct listener_ctx {
    recorder *r;
    int index;
} listener_ctx;

static void on_watch(void *ctx, const file_change *change)
{
    recorder *r = ctx;
    r->watch_calls++;
    strncat(r->log, "watch,", sizeof r->log - strlen(r->log) - 1);
}

static void on_listen(void *ctx, const file_change *change);
static const file_listener listener_table = {on_listen};

static void on_listen(void *ctx, const file_change *change)
{
    listener_ctx *l = ctx;
    recorder *r = l->r;
    r->calls[l->index]++;
    char entry[32];
    snprintf(entry, sizeof entry, "listener%d,", l->index);
    strncat(r->log, entry, sizeof r->log - strlen(r->log) - 1);
    if (l->index == 0 && r->unsubscribe_ctx) {
        assert_true(file_unsubscribe(r->f->svc, &listener_table, r->unsubscribe_ctx));
        assert_true(file_unsubscribe(r->f->svc, &listener_table, ctx));
        r->unsubscribe_ctx = NULL;
    }
}

static void test_listener_sees_changes_after_the_watch(void **state)
{
    fixture *f = *state;
    recorder r = {.f = f};
    listener_ctx l0 = {&r, 0};
    uint64_t id;
    assert_int_equal(file_watch_add(f->svc, f->dir, true, on_watch, &r, &id, NULL), 0);
    file_subscribe(f->svc, &listener_table, &l0);
    char p[128];
    snprintf(p, sizeof p, "%s/new.txt", f->dir);
    write_file(p, "x", 1);
    assert_true(run_until(f, &r.calls[0], 1, 3000));
    assert_string_equal(r.log, "watch,listener0,");

    /* gone once unsubscribed, with the watch still reporting */
    assert_true(file_unsubscribe(f->svc, &listener_table, &l0));
    assert_false(file_unsubscribe(f->svc, &listener_table, &l0));
    unlink(p);
    assert_true(run_until(f, &r.watch_calls, 2, 3000));
    run_for(f, 100);
    assert_int_equal(r.calls[0], 1);
    assert_int_equal(file_watch_remove(f->svc, id), 0);
}

/* Listener 0 unsubscribes listener 1 (next in line) and itself while the
 * change is being told: 1 hears nothing, 2 still hears it, and afterwards
 * only 2 hears anything. */
static void test_unsubscribe_during_a_change(void **state)
{
    fixture *f = *state;
    recorder r = {.f = f};
    listener_ctx l[3] = {{&r, 0}, {&r, 1}, {&r, 2}};
    uint64_t id;
    assert_int_equal(file_watch_add(f->svc, f->dir, false, on_watch, &r, &id, NULL), 0);
    for (int i = 0; i < 3; i++)
        file_subscribe(f->svc, &listener_table, &l[i]);
    r.unsubscribe_ctx = &l[1];
    char p[128];
    snprintf(p, sizeof p, "%s/a.txt", f->dir);
    write_file(p, "x", 1);
    assert_true(run_until(f, &r.calls[2], 1, 3000));
    assert_string_equal(r.log, "watch,listener0,listener2,");
    snprintf(p, sizeof p, "%s/b.txt", f->dir);
    write_file(p, "y", 1);
    assert_true(run_until(f, &r.calls[2], 2, 3000));
    assert_int_equal(r.calls[0], 1);
    assert_int_equal(r.calls[1], 0);
    assert_int_equal(r.calls[2], 2);
    assert_int_equal(file_watch_remove(f->svc, id), 0);
}

/* A listener may end the very watch that reported the change. */
typedef struct remover {
    fixture *f;
    uint64_t id;
    int calls;
} remover;

static void on_change_remove_watch(void *ctx, const file_change *change)
{
    remover *rm = ctx;
    rm->calls++;
    if (rm->id) {
        assert_int_equal(file_watch_remove(rm->f->svc, rm->id), 0);
        rm->id = 0;
    }
}

static void on_watch_noop(void *ctx, const file_change *change) {}

static const file_listener remover_table = {on_change_remove_watch};

static void test_listener_removes_the_watch(void **state)
{
    fixture *f = *state;
    remover rm = {.f = f};
    assert_int_equal(file_watch_add(f->svc, f->dir, false, on_watch_noop, NULL, &rm.id, NULL), 0);
    file_subscribe(f->svc, &remover_table, &rm);
    char p[128];
    /* two paths in one window: the watch is gone before the second is told */
    snprintf(p, sizeof p, "%s/a.txt", f->dir);
    write_file(p, "x", 1);
    snprintf(p, sizeof p, "%s/b.txt", f->dir);
    write_file(p, "y", 1);
    assert_true(run_until(f, &rm.calls, 1, 3000));
    run_for(f, 200);
    assert_int_equal(rm.calls, 1);
    assert_int_equal(rm.id, 0);
}

int main(void)
{
    /* before anything uses libuv's pool: three threads, one for long work */
    setenv("UV_THREADPOOL_SIZE", "3", 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_operations_as_jobs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_before_an_operation_begins, setup, teardown),
        cmocka_unit_test_setup_teardown(test_operations_never_replace_a_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grep_renders_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_renders_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_glob_renders_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_search_renders_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_walk_items_follow_the_pool, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grep_items_admitted_one_at_a_time, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_a_walk, setup, teardown),
        cmocka_unit_test_setup_teardown(test_free_while_walks_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listener_sees_changes_after_the_watch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unsubscribe_during_a_change, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listener_removes_the_watch, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
