/* Unit tests of core/process.h: a child's output and exit, stdin piped
 * through, the environment added to ours, a program that does not exist, a
 * kill that a child heeds, one that ignores SIGTERM and is killed after the
 * grace period, a group killed whole, and a close that needs no callback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "process.h"

typedef struct run {
    uv_loop_t loop;
    buf output;
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
