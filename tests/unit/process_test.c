/* Unit tests of core/process.h: a child's output and exit, stdin piped
 * through, the environment added to ours, a program that does not exist, a
 * kill that a child heeds, one that ignores SIGTERM and is killed after the
 * grace period, a group killed whole, and a close that needs no callback;
 * shared bytes written from where they lie, and writes held in order behind
 * bytes still in the making; stderr read through a pipe; a child given time to
 * leave by itself before it is killed; programs found in PATH's absolute
 * entries only. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "process.h"
#include "shared.h"

typedef struct run {
    uv_loop_t loop;
    buf output;
    buf errors;
    int output_ends;
    int exits;
    int64_t status;
    int term_signal;
    uint64_t exited_at;
} run;

static void on_output(void *ctx, const char *data, size_t len) { buf_append(&((run *)ctx)->output, data, len); }
static void on_output_end(void *ctx, int status)
{
    run *r = ctx;
    (void)status;
    r->output_ends++;
}
static void on_exit_cb(void *ctx, int64_t status, int term_signal)
{
    run *r = ctx;
    r->exits++;
    r->status = status;
    r->term_signal = term_signal;
    r->exited_at = uv_now(&r->loop);
}

static ecp_process *start(run *r, const char *const *argv, const char *const *env, uint64_t grace_ms, bool group)
{
    uv_loop_init(&r->loop);
    ecp_process_options o = {
        .argv = argv, .env_add = env, .pipe_stdin = true, .pipe_stdout = true, .grace_ms = grace_ms,
        .own_group = group, .ctx = r, .on_output = on_output, .on_output_end = on_output_end, .on_exit = on_exit_cb,
    };
    ecp_error err = {0};
    ecp_process *p = ecp_process_start(&r->loop, &o, &err);
    assert_non_null(p);
    return p;
}

/* A zombie nobody has reaped yet is not running. */
static bool running(int pid)
{
    char path[64], stat[256] = "";
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')');
    return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

static void finish(run *r)
{
    uv_run(&r->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&r->loop), 0);
    buf_free(&r->output);
    buf_free(&r->errors);
}

static void run_until_output_ends(run *r)
{
    while (!r->output_ends)
        uv_run(&r->loop, UV_RUN_ONCE);
}

static char *filled(char c, size_t len)
{
    char *data = malloc(len);
    memset(data, c, len);
    return data;
}

static void run_until_exit(run *r)
{
    while (!r->exits)
        uv_run(&r->loop, UV_RUN_ONCE);
}

static void test_output_and_exit(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"sh", "-c", "read line; echo \"got $line $ECP_PROCESS_TEST\"; exit 3", NULL};
    const char *env[] = {"ECP_PROCESS_TEST=added", NULL};
    ecp_process *p = start(&r, argv, env, 1000, false);
    assert_true(ecp_process_write(p, "hello\n", 6));
    ecp_process_close_stdin(p);
    run_until_exit(&r);
    while (!r.output_ends)
        uv_run(&r.loop, UV_RUN_ONCE);
    assert_string_equal(r.output.data, "got hello added\n");
    assert_int_equal(r.status, 3);
    assert_int_equal(r.term_signal, 0);
    assert_true(ecp_process_exited(p));
    assert_false(ecp_process_write(p, "x", 1));
    ecp_process_close(p);
    finish(&r);
    assert_int_equal(r.exits, 1);
    assert_int_equal(r.output_ends, 1);
}

static void test_cannot_start(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    const char *argv[] = {"/nonexistent/program", NULL};
    ecp_error err = {0};
    ecp_process_options o = {.argv = argv, .pipe_stdin = true, .pipe_stdout = true};
    assert_null(ecp_process_start(&loop, &o, &err));
    assert_int_equal(err.status, ECP_ENOTFOUND);
    assert_non_null(strstr(err.message, "cannot start /nonexistent/program"));
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_kill_heeded(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"sleep", "30", NULL};
    ecp_process *p = start(&r, argv, NULL, 5000, false);
    uint64_t began = uv_now(&r.loop);
    ecp_process_kill(p);
    run_until_exit(&r);
    assert_int_equal(r.term_signal, SIGTERM);
    assert_true(r.exited_at - began < 2000);
    ecp_process_close(p);
    finish(&r);
}

static void test_sigterm_ignored(void **state)
{
    (void)state;
    run r = {0};
    /* says when its trap is in place, then ignores SIGTERM */
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL};
    ecp_process *p = start(&r, argv, NULL, 300, false);
    while (!r.output.len)
        uv_run(&r.loop, UV_RUN_ONCE);
    uv_update_time(&r.loop);
    uint64_t began = uv_now(&r.loop);
    ecp_process_kill(p);
    run_until_exit(&r);
    assert_int_equal(r.term_signal, SIGKILL);
    assert_true(r.exited_at - began >= 300);
    ecp_process_close(p);
    finish(&r);
}

static void test_close_kills_after_grace(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL};
    ecp_process *p = start(&r, argv, NULL, 200, false);
    while (!r.output.len)
        uv_run(&r.loop, UV_RUN_ONCE);
    int pid = ecp_process_pid(p);
    ecp_process_close(p); /* the loop ends only once the child is gone and everything freed */
    finish(&r);
    assert_int_equal(r.exits, 0); /* no callback after close */
    assert_false(running(pid));
}

static void test_group_killed_whole(void **state)
{
    (void)state;
    run r = {0};
    /* a grandchild that keeps stdout open: without the group, the output would never end */
    const char *argv[] = {"sh", "-c", "sleep 30 & echo $!; wait", NULL};
    ecp_process *p = start(&r, argv, NULL, 0, true);
    while (!strchr(r.output.data ? r.output.data : "", '\n'))
        uv_run(&r.loop, UV_RUN_ONCE);
    int grandchild = atoi(r.output.data);
    ecp_process_kill_now(p);
    run_until_exit(&r);
    while (!r.output_ends)
        uv_run(&r.loop, UV_RUN_ONCE);
    assert_int_equal(r.term_signal, SIGKILL);
    usleep(50000);
    assert_true(grandchild > 0);
    assert_false(running(grandchild));
    ecp_process_close(p);
    finish(&r);
}

static void test_leave_running(void **state)
{
    (void)state;
    run r = {0};
    uv_loop_init(&r.loop);
    /* a child that leaves by itself once its stdin ends */
    const char *argv[] = {"sh", "-c", "cat >/dev/null; sleep 0.3", NULL};
    ecp_process_options o = {.argv = argv, .pipe_stdin = true, .pipe_stdout = true, .leave_running = true,
                             .ctx = &r, .on_exit = on_exit_cb};
    ecp_error err = {0};
    ecp_process *p = ecp_process_start(&r.loop, &o, &err);
    assert_non_null(p);
    int pid = ecp_process_pid(p);
    ecp_process_close(p);
    finish(&r); /* everything is let go at once: the loop has nothing left */
    assert_true(running(pid));
    assert_int_equal(r.exits, 0);
    for (int i = 0; i < 100 && running(pid); i++)
        usleep(20000);
    assert_false(running(pid));
}

/* The reference taken is what keeps the bytes: the caller lets go of its own at once. */
static void test_shared_bytes_written_from_where_they_lie(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"cat", NULL};
    ecp_process *p = start(&r, argv, NULL, 1000, false);
    size_t len = (size_t)8 << 20;
    ecp_shared *bytes = ecp_shared_adopt(filled('x', len), len);
    assert_true(ecp_process_write_shared(p, bytes));
    ecp_shared_unref(bytes);
    assert_true(ecp_process_write(p, "end", 3));
    while (r.output.len < len + 3 && !r.exits)
        uv_run(&r.loop, UV_RUN_ONCE);
    ecp_process_close_stdin(p);
    run_until_output_ends(&r);
    assert_int_equal(r.output.len, len + 3);
    assert_memory_equal(r.output.data + len, "end", 3);
    assert_int_equal(strspn(r.output.data, "x"), len);
    ecp_process_close(p);
    finish(&r);
}

/* What is written after bytes still in the making waits behind them, whether copied or shared. */
static void test_writes_held_behind_bytes_in_the_making(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"cat", NULL};
    ecp_process *p = start(&r, argv, NULL, 1000, false);
    assert_true(ecp_process_write(p, "1", 1));
    ecp_shared *making = ecp_shared_pending();
    assert_true(ecp_process_write_shared(p, making));
    assert_true(ecp_process_write(p, "3", 1));
    ecp_shared *ready = ecp_shared_adopt(strdup("4"), 1);
    assert_true(ecp_process_write_shared(p, ready));
    ecp_shared_unref(ready);
    ecp_shared *second = ecp_shared_pending();
    assert_true(ecp_process_write_shared(p, second));
    assert_true(ecp_process_write(p, "6", 1));
    for (int i = 0; i < 20; i++)
        uv_run(&r.loop, UV_RUN_NOWAIT);
    usleep(50000);
    for (int i = 0; i < 20; i++)
        uv_run(&r.loop, UV_RUN_NOWAIT);
    assert_string_equal(r.output.data ? r.output.data : "", "1");
    ecp_shared_fill(second, strdup("5"), 1); /* made before the first: still after it */
    ecp_shared_fill(making, strdup("2"), 1);
    ecp_shared_unref(making);
    ecp_shared_unref(second);
    while (r.output.len < 6 && !r.exits)
        uv_run(&r.loop, UV_RUN_ONCE);
    assert_string_equal(r.output.data, "123456");
    ecp_process_close(p);
    finish(&r);
}

/* Dropped, what was held is never written, and bytes made afterwards find nobody waiting. */
static void test_held_writes_dropped(void **state)
{
    (void)state;
    run r = {0};
    const char *argv[] = {"cat", NULL};
    ecp_process *p = start(&r, argv, NULL, 1000, false);
    ecp_shared *making = ecp_shared_pending();
    assert_true(ecp_process_write_shared(p, making));
    assert_true(ecp_process_write(p, "held", 4));
    ecp_process_drop_held(p);
    assert_true(ecp_process_write(p, "last", 4));
    while (r.output.len < 4 && !r.exits)
        uv_run(&r.loop, UV_RUN_ONCE);
    assert_string_equal(r.output.data, "last");
    ecp_shared *at_close = ecp_shared_pending();
    assert_true(ecp_process_write_shared(p, at_close));
    assert_true(ecp_process_write(p, "never", 5));
    ecp_process_close(p); /* a close with something held forgets it too */
    finish(&r);
    ecp_shared_fill(making, strdup("made"), 4);
    ecp_shared_fill(at_close, strdup("made"), 4);
    ecp_shared_unref(making);
    ecp_shared_unref(at_close);
}

static void on_error_output(void *ctx, const char *data, size_t len) { buf_append(&((run *)ctx)->errors, data, len); }

static void test_stderr_through_a_pipe(void **state)
{
    (void)state;
    run r = {0};
    uv_loop_init(&r.loop);
    const char *argv[] = {"sh", "-c", "echo out; echo err >&2", NULL};
    ecp_process_options o = {
        .argv = argv, .pipe_stdout = true, .stderr_to = ECP_STDERR_PIPE, .ctx = &r, .on_output = on_output,
        .on_error_output = on_error_output, .on_output_end = on_output_end, .on_exit = on_exit_cb,
    };
    ecp_error err = {0};
    ecp_process *p = ecp_process_start(&r.loop, &o, &err);
    assert_non_null(p);
    run_until_exit(&r);
    run_until_output_ends(&r);
    for (int i = 0; i < 100 && !r.errors.len; i++)
        uv_run(&r.loop, UV_RUN_NOWAIT);
    assert_string_equal(r.output.data, "out\n");
    assert_string_equal(r.errors.data, "err\n");
    ecp_process_close(p);
    finish(&r);
}

/* A child told to leave gets the time to: no signal while it does, a SIGKILL when it does not. */
static void test_kill_after_a_wait(void **state)
{
    (void)state;
    run r = {0};
    const char *leaves[] = {"sh", "-c", "read line; exit 0", NULL};
    ecp_process *p = start(&r, leaves, NULL, 0, false);
    ecp_process_kill_after(p, 5000);
    assert_true(ecp_process_write(p, "bye\n", 4));
    run_until_exit(&r);
    assert_int_equal(r.term_signal, 0);
    assert_int_equal(r.status, 0);
    ecp_process_close(p);
    finish(&r);

    run stays = {0};
    const char *ignores[] = {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done", NULL};
    p = start(&stays, ignores, NULL, 0, false);
    while (!stays.output.len)
        uv_run(&stays.loop, UV_RUN_ONCE);
    uv_update_time(&stays.loop);
    uint64_t began = uv_now(&stays.loop);
    ecp_process_kill_after(p, 300);
    run_until_exit(&stays);
    assert_int_equal(stays.term_signal, SIGKILL);
    assert_true(stays.exited_at - began >= 300);
    ecp_process_close(p);
    finish(&stays);
}

static void make_file(const char *path, mode_t mode)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("#!/bin/sh\n", f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* Only absolute entries are searched, and only executable regular files are programs. */
static void test_find_program(void **state)
{
    (void)state;
    char top[] = "/tmp/ecp_find_program_XXXXXX";
    assert_non_null(mkdtemp(top));
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(top), 0);
    assert_int_equal(mkdir("rel", 0755), 0);
    assert_int_equal(mkdir("abs", 0755), 0);
    assert_int_equal(mkdir("abs/tool.d", 0755), 0);
    make_file("tool", 0755);          /* in the working directory: "" and "." */
    make_file("rel/tool", 0755);      /* in a relative entry */
    make_file("abs/plain", 0644);     /* not executable */
    assert_int_equal(mkdir("abs/dir", 0755), 0);
    assert_int_equal(mkdir("abs/dir/tool", 0755), 0); /* a directory of that name */
    make_file("abs/tool", 0755);
    char dirs[8192], want[4096];
    snprintf(dirs, sizeof dirs, ":.:rel:%s/abs/dir:%s/abs", top, top);
    snprintf(want, sizeof want, "%s/abs/tool", top);
    char *found = ecp_process_find_program("tool", dirs);
    assert_non_null(found);
    assert_string_equal(found, want);
    free(found);
    assert_null(ecp_process_find_program("tool", ":.:rel"));
    snprintf(dirs, sizeof dirs, "%s/abs", top);
    assert_null(ecp_process_find_program("plain", dirs));
    assert_null(ecp_process_find_program("missing", dirs));
    assert_null(ecp_process_find_program("tool", ""));
    assert_int_equal(chdir(cwd), 0);
    char cleanup[8300];
    snprintf(cleanup, sizeof cleanup, "rm -rf '%s'", top);
    assert_int_equal(system(cleanup), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_output_and_exit),
        cmocka_unit_test(test_cannot_start),
        cmocka_unit_test(test_kill_heeded),
        cmocka_unit_test(test_sigterm_ignored),
        cmocka_unit_test(test_close_kills_after_grace),
        cmocka_unit_test(test_group_killed_whole),
        cmocka_unit_test(test_leave_running),
        cmocka_unit_test(test_shared_bytes_written_from_where_they_lie),
        cmocka_unit_test(test_writes_held_behind_bytes_in_the_making),
        cmocka_unit_test(test_held_writes_dropped),
        cmocka_unit_test(test_stderr_through_a_pipe),
        cmocka_unit_test(test_kill_after_a_wait),
        cmocka_unit_test(test_find_program),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
