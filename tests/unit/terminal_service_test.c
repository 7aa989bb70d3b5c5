/* The terminal service through its C API on a loop of its own, with real
 * programs: events in order (output, then exit, once), a listener that
 * closes the terminal from inside a callback, the backlog's bound, the
 * size of each output piece, one screen change per loop turn and the
 * loop's turns during a flood nobody listens to, output held for a listener
 * whose clients stopped reading, the default shell (the
 * hook for a setting), the statuses of failures, and a session number that
 * someone else's new session has taken. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "terminal/interface.h"
#include "terminal/internal.h"

typedef struct fixture {
    uv_loop_t loop;
    uv_timer_t tick;
    terminal_service *svc;
    buf events;     /* "output:<data>|exit:<code>|title:<t>|" for the watched id */
    char watched[64];
    int exits;
    int screens;
    bool close_on_output;
    bool count_only;      /* a flood: count the output, keep none of it */
    size_t output_bytes;
    size_t largest_output; /* the longest single on_output */
    bool hold_on_output;  /* hold the service's output from inside the first on_output */
    bool held;
    size_t output_at_exit;
    char script[64];
} fixture;

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void tick_cb(uv_timer_t *t) { (void)t; }

static void run_for(fixture *f, int ms)
{
    long long end = now_ms() + ms;
    while (now_ms() < end) {
        uv_timer_start(&f->tick, tick_cb, 5, 0);
        uv_run(&f->loop, UV_RUN_ONCE);
    }
}

static bool run_until(fixture *f, const int *counter, int want, int timeout_ms)
{
    long long end = now_ms() + timeout_ms;
    while (*counter < want && now_ms() < end) {
        uv_timer_start(&f->tick, tick_cb, 5, 0);
        uv_run(&f->loop, UV_RUN_ONCE);
    }
    return *counter >= want;
}

static void on_output(void *ctx, const char *id, const char *data, size_t len)
{
    fixture *f = ctx;
    if (strcmp(id, f->watched))
        return;
    f->output_bytes += len;
    if (len > f->largest_output)
        f->largest_output = len;
    if (f->hold_on_output && !f->held) {
        terminal_service_hold_output(f->svc);
        f->held = true;
    }
    if (f->count_only)
        return;
    buf_append_str(&f->events, "output:");
    buf_append(&f->events, data, len);
    buf_push(&f->events, '|');
    if (f->close_on_output)
        assert_int_equal(terminal_close(f->svc, id), 0);
}

static void on_screen(void *ctx, const char *id, const unsigned *rows, size_t count)
{
    fixture *f = ctx;
    if (!strcmp(id, f->watched))
        f->screens++;
}

static void on_title(void *ctx, const char *id, const char *title)
{
    fixture *f = ctx;
    if (!strcmp(id, f->watched))
        buf_appendf(&f->events, "title:%s|", title);
}

static void on_exit_event(void *ctx, const char *id, int code)
{
    fixture *f = ctx;
    if (strcmp(id, f->watched))
        return;
    buf_appendf(&f->events, "exit:%d|", code);
    f->output_at_exit = f->output_bytes;
    f->exits++;
}

static const terminal_listener listener = {on_output, on_screen, on_title, on_exit_event};

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    uv_timer_init(&f->loop, &f->tick);
    f->svc = terminal_service_new(&f->loop, NULL, NULL);
    terminal_subscribe(f->svc, &listener, f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    terminal_service_free(f->svc);
    uv_close((uv_handle_t *)&f->tick, NULL);
    for (int i = 0; i < 100 && uv_run(&f->loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    if (f->script[0])
        unlink(f->script);
    buf_free(&f->events);
    free(f);
    return 0;
}

/* A program of the test's own: sh running body. */
static const char *script(fixture *f, const char *body)
{
    strcpy(f->script, "/tmp/ecpd-term-unit-XXXXXX");
    int fd = mkstemp(f->script);
    assert_true(fd >= 0);
    dprintf(fd, "#!/bin/sh\n%s\n", body);
    close(fd);
    chmod(f->script, 0755);
    return f->script;
}

static char *start(fixture *f, const char *shell)
{
    terminal_create_options o = {.shell = shell};
    char *id = NULL;
    ecp_error err;
    int status = terminal_create(f->svc, &o, &id, &err);
    if (status)
        fail_msg("terminal_create %s: %s", shell, err.message);
    snprintf(f->watched, sizeof f->watched, "%s", id);
    return id;
}

static void test_output_then_exit_once(void **state)
{
    fixture *f = *state;
    char *id = start(f, script(f, "printf 'one\\033]2;named\\007'; sleep 0.1; printf 'two'; exit 3"));
    assert_true(run_until(f, &f->exits, 1, 10000));
    run_for(f, 100);
    assert_int_equal(f->exits, 1);
    const char *e = f->events.data;
    const char *one = strstr(e, "one"), *title = strstr(e, "title:named|"), *two = strstr(e, "two"),
               *exit = strstr(e, "exit:3|");
    assert_true(one && title && two && exit);
    assert_true(one < title && title < two && two < exit);
    assert_true(f->screens > 0);
    terminal_info info;
    assert_int_equal(terminal_get_info(f->svc, id, &info), 0);
    assert_false(info.running);
    assert_int_equal(info.exit_code, 3);
    assert_string_equal(info.title, "named");
    ecp_error err;
    assert_int_equal(terminal_write(f->svc, id, "x", 1, &err), ECP_ESTATE);
    terminal_viewport vp;
    assert_int_equal(terminal_get_viewport(f->svc, id, &vp), 0);
    assert_string_equal(vp.cells[0].text, "o");
    assert_string_equal(vp.cells[3].text, "t");
    terminal_viewport_free(&vp);
    free(id);
}

static void test_close_from_a_listener(void **state)
{
    fixture *f = *state;
    f->close_on_output = true;
    char *id = start(f, script(f, "echo first; sleep 0.2; echo second; sleep 5"));
    long long end = now_ms() + 10000;
    terminal_info info;
    while (terminal_get_info(f->svc, id, &info) == 0 && now_ms() < end)
        run_for(f, 10);
    assert_int_not_equal(terminal_get_info(f->svc, id, &info), 0);
    run_for(f, 400);
    /* one output, nothing after the close */
    assert_non_null(strstr(f->events.data, "first"));
    assert_null(strstr(f->events.data, "second"));
    assert_int_equal(f->exits, 0);
    free(id);
}

static void late_cb(uv_timer_t *t)
{
    long long *worst = t->data;
    static long long last;
    long long now = now_ms();
    if (last && now - last > *worst)
        *worst = now - last;
    last = now;
}

static void test_flood_is_bounded(void **state)
{
    fixture *f = *state;
    f->count_only = true;
    char *id = start(f, script(f, "exec yes 'a fairly long line of flood output to fill the terminal'"));
    uv_timer_t late;
    long long worst = 0;
    uv_timer_init(&f->loop, &late);
    late.data = &worst;
    uv_timer_start(&late, late_cb, 1, 1);
    size_t most = 0;
    int most_screens_per_turn = 0;
    long long end = now_ms() + 1500;
    while (now_ms() < end) {
        int screens_before = f->screens;
        uv_run(&f->loop, UV_RUN_ONCE);
        if (f->screens - screens_before > most_screens_per_turn)
            most_screens_per_turn = f->screens - screens_before;
        size_t now = term__buffered(f->svc);
        if (now > most)
            most = now;
    }
    uv_close((uv_handle_t *)&late, NULL);
    uv_run(&f->loop, UV_RUN_NOWAIT); /* the handle lives on this stack */
    fprintf(stderr, "flood: at most %zu bytes held, slowest turn %lld ms, output %zu bytes seen\n", most, worst,
            f->output_bytes);
    assert_true(most <= TERMINAL_BACKLOG_MAX); /* nothing is typed: all of it is backlog */
    /* a turn interprets a bounded amount (milliseconds alone); the bound leaves
     * room for a loaded machine and a sanitizer build, far below an unbounded read */
    assert_true(worst < 500);
    assert_true(f->output_bytes > 1000000); /* it did flood */
    /* the flood reaches listeners in bounded pieces, and the damaged rows
     * once per loop turn however much a turn interprets */
    assert_true(f->largest_output > 0 && f->largest_output <= TERMINAL_OUTPUT_CHUNK);
    assert_true(f->screens > 0);
    assert_int_equal(most_screens_per_turn, 1);
    assert_int_equal(terminal_close(f->svc, id), 0);
    free(id);
}

/* A listener whose clients stopped reading holds the output: the
 * pseudo-terminal is not read (the program blocks in its write), nothing
 * more is reported, and on release every byte comes, then the exit. */
static void test_held_output(void **state)
{
    fixture *f = *state;
    f->count_only = true;
    f->hold_on_output = true;
    size_t total = 20000000;
    char *id = start(f, script(f, "yes 'held output' | head -c 20000000; exit 4"));
    long long end = now_ms() + 10000;
    while (!f->held && now_ms() < end)
        run_for(f, 5);
    assert_true(f->held);
    assert_true(terminal_service_output_held(f->svc));
    size_t at_hold = f->output_bytes;
    run_for(f, 500);
    assert_int_equal(f->output_bytes, at_hold); /* the piece that asked for the hold was the last */
    assert_int_equal(f->exits, 0);
    assert_true(term__buffered(f->svc) <= TERMINAL_BACKLOG_MAX);
    terminal_info info;
    assert_int_equal(terminal_get_info(f->svc, id, &info), 0);
    assert_true(info.running); /* blocked in its write */
    ecp_error err;
    assert_int_equal(terminal_write(f->svc, id, "x", 1, &err), 0); /* input still goes */
    /* holds count: one release of two leaves it held */
    terminal_service_hold_output(f->svc);
    terminal_service_release_output(f->svc);
    run_for(f, 100);
    assert_int_equal(f->output_bytes, at_hold);
    terminal_service_release_output(f->svc);
    assert_false(terminal_service_output_held(f->svc));
    assert_true(run_until(f, &f->exits, 1, 30000));
    assert_true(f->output_at_exit >= total); /* every byte, then the exit */
    assert_true(strstr(f->events.data, "exit:4|") != NULL);
    free(id);
}

static void test_default_shell_and_failures(void **state)
{
    fixture *f = *state;
    terminal_service_set_shell(f->svc, "/bin/sh");
    assert_string_equal(terminal_service_shell(f->svc), "/bin/sh");
    char *id = NULL;
    ecp_error err;
    assert_int_equal(terminal_create(f->svc, NULL, &id, &err), 0);
    terminal_info info;
    assert_int_equal(terminal_get_info(f->svc, id, &info), 0);
    assert_string_equal(info.shell, "/bin/sh");
    assert_string_equal(info.title, "/bin/sh");
    assert_int_equal(info.cols, 80);
    assert_int_equal(info.rows, 24);
    assert_true(info.running);
    free(id);
    terminal_service_set_shell(f->svc, NULL);
    const char *env_shell = getenv("SHELL");
    assert_string_equal(terminal_service_shell(f->svc), env_shell && env_shell[0] ? env_shell : "/bin/sh");

    terminal_create_options o = {.shell = "/nope/nothing"};
    assert_int_equal(terminal_create(f->svc, &o, &id, &err), ECP_ENOTFOUND);
    assert_string_equal(err.message, "Shell not found: /nope/nothing");
    o.shell = "/etc/passwd";
    assert_int_equal(terminal_create(f->svc, &o, &id, &err), ECP_EACCES);
    o = (terminal_create_options){.shell = "/bin/sh", .cols = 1001};
    assert_int_equal(terminal_create(f->svc, &o, &id, &err), ECP_ERANGE);
    o = (terminal_create_options){.shell = "/bin/sh", .cwd = "/etc/passwd"};
    assert_int_equal(terminal_create(f->svc, &o, &id, &err), ECP_ENOTFOUND);
    assert_int_equal(terminal_close(f->svc, "terminal-0-0"), ECP_ENOTFOUND);
    assert_int_equal(terminal_resize(f->svc, "terminal-0-0", 10, 10, &err), ECP_ENOTFOUND);
    terminal_close_all(f->svc);
    terminal_info *list;
    size_t count;
    terminal_list(f->svc, &list, &count);
    assert_int_equal(count, 0);
    free(list);
}

/* A session whose leader was reaped may see its number taken by someone
 * else's new session (this machine reuses pids within seconds): that new
 * leader is not ours to signal, while a session whose leader is still ours
 * is. */
static void test_reused_session_number_is_left_alone(void **state)
{
    (void)state;
    pid_t other = fork();
    assert_true(other >= 0);
    if (other == 0) {
        setsid(); /* its own session: its sid is its pid, as a reused number would be */
        pause();
        _exit(0);
    }
    /* wait until it leads its session */
    for (int i = 0; i < 1000 && getsid(other) != other; i++)
        usleep(1000);
    assert_int_equal(getsid(other), other);
    term__session reused = {.sid = other, .tty = 0, .leader_reaped = true};
    assert_int_equal(term__session_kill(&reused, 1), 0);
    term__session_hangup(&reused, 1);
    usleep(50000);
    int wstatus;
    assert_int_equal(waitpid(other, &wstatus, WNOHANG), 0); /* still alive */
    term__session ours = {.sid = other, .tty = 0, .leader_reaped = false};
    assert_int_equal(term__session_kill(&ours, 1), 1);
    assert_int_equal(waitpid(other, &wstatus, 0), other);
    assert_true(WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_output_then_exit_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_from_a_listener, setup, teardown),
        cmocka_unit_test_setup_teardown(test_flood_is_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_held_output, setup, teardown),
        cmocka_unit_test_setup_teardown(test_default_shell_and_failures, setup, teardown),
        cmocka_unit_test(test_reused_session_number_is_left_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
