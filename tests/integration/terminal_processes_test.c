/* The processes behind terminals, checked in the process table: closeAll,
 * close and the server's teardown end every process of a terminal's session
 * (background jobs in process groups of their own, stopped jobs, a shell
 * or a job that ignores SIGHUP, a job that left the session but still uses
 * the terminal), leaving neither orphans nor zombies, while a daemon that
 * let go of the terminal lives on. Real shells: bash and /bin/sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "terminal_helpers.h"

#define WAIT_MS 10000

static test_server *srv;
static test_client *cl;

static int setup(void **state)
{
    srv = test_server_new(NULL);
    cl = test_client_connect(srv);
    return 0;
}

static int teardown(void **state)
{
    if (srv)
        test_server_free(srv);
    srv = NULL;
    return 0;
}

/* Gone for good: not even a zombie waits to be reaped. */
static bool gone(pid_t pid) { return kill(pid, 0) < 0 && errno == ESRCH; }

static bool read_stat(pid_t pid, char *state, pid_t *pgid, pid_t *sid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    int ppid, pg, se;
    const char *after = strrchr(text, ')');
    if (!after || sscanf(after + 1, " %c %d %d %d", state, &ppid, &pg, &se) != 4)
        return false;
    *pgid = pg;
    *sid = se;
    return true;
}

/* How many processes (zombies included) are in process group pgid or, when
 * by_session, in session pgid. */
static int count_in(pid_t id, bool by_session)
{
    int n = 0;
    DIR *dir = opendir("/proc");
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        pid_t pid = (pid_t)atoi(e->d_name);
        char st;
        pid_t pgid, sid;
        if (pid > 0 && read_stat(pid, &st, &pgid, &sid) && (by_session ? sid : pgid) == id)
            n++;
    }
    if (dir)
        closedir(dir);
    return n;
}

/* The pid of the live process whose command line is exactly argv (two words). */
static pid_t find_command(const char *arg0, const char *arg1)
{
    pid_t found = 0;
    DIR *dir = opendir("/proc");
    struct dirent *e;
    while (dir && (e = readdir(dir)) && !found) {
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0)
            continue;
        char path[64], cmd[256];
        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
        int fd = open(path, O_RDONLY);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, cmd, sizeof cmd - 1);
        close(fd);
        if (n <= 0)
            continue;
        cmd[n] = '\0';
        char st;
        pid_t pgid, sid;
        if (!strcmp(cmd, arg0) && (size_t)n > strlen(arg0) + 1 && !strcmp(cmd + strlen(arg0) + 1, arg1) &&
            read_stat(pid, &st, &pgid, &sid) && st != 'Z')
            found = pid;
    }
    if (dir)
        closedir(dir);
    return found;
}

/* Runs the server until every pid is gone and nothing is left in their
 * groups or in the sessions of the listed shells. */
static bool wait_all_gone(const pid_t *pids, size_t n, const pid_t *groups, size_t ng, const pid_t *sessions,
                          size_t ns, int timeout_ms)
{
    long long end = th_now_ms() + timeout_ms;
    for (;;) {
        bool all = true;
        for (size_t i = 0; i < n; i++)
            all &= gone(pids[i]);
        for (size_t i = 0; i < ng; i++)
            all &= count_in(groups[i], false) == 0;
        for (size_t i = 0; i < ns; i++)
            all &= count_in(sessions[i], true) == 0;
        if (all)
            return true;
        if (th_now_ms() >= end)
            return false;
        if (srv)
            test_server_run_for(srv, 20);
        else
            usleep(20000);
    }
}

/* Types `command echo <tag>:$$:$!:` (command ends with & or ;) and reads the
 * two numbers back. */
static void run_and_read(const char *id, const char *command, const char *tag, pid_t *a, pid_t *b)
{
    char text[512], shown[64];
    /* the quotes keep the command line on the screen from matching */
    snprintf(text, sizeof text, "%s echo %c''%s:$%s:$%s:\r", command, tag[0], tag + 1, "$", "!");
    snprintf(shown, sizeof shown, "%s:", tag);
    assert_int_equal(th_type(cl, id, text), 0);
    th_screen s;
    assert_true(th_wait_text(srv, cl, id, shown, WAIT_MS, &s));
    const char *at = strstr(s.text[th_screen_find(&s, shown)], shown);
    int x = 0, y = 0;
    assert_int_equal(sscanf(at + strlen(shown), "%d:%d:", &x, &y), 2);
    th_screen_free(&s);
    *a = x;
    *b = y;
}

static void test_close_all_ends_every_process(void **state)
{
    char *one = th_create(cl, "\"shell\":\"/bin/bash\"");
    char *two = th_create(cl, "\"shell\":\"/bin/bash\"");
    pid_t shell1, job1, shell2, job2, stopped_shell, stopped;
    run_and_read(one, "sleep 1000 &", "PIDS", &shell1, &job1);
    /* a shell deaf to SIGHUP (its job started before, so it is not) */
    run_and_read(two, "sleep 1001 & trap '' HUP;", "PIDS", &shell2, &job2);
    run_and_read(one, "sleep 1002 & kill -STOP $!;", "STOP", &stopped_shell, &stopped);
    assert_int_equal(stopped_shell, shell1);
    /* the jobs have process groups of their own, in the shells' sessions */
    char st;
    pid_t pgid, sid;
    assert_true(read_stat(job1, &st, &pgid, &sid));
    assert_int_equal(pgid, job1);
    assert_int_equal(sid, shell1);
    assert_true(read_stat(job2, &st, &pgid, &sid));
    assert_int_equal(pgid, job2);
    assert_int_equal(sid, shell2);
    assert_true(read_stat(stopped, &st, &pgid, &sid));
    assert_true(count_in(shell1, true) >= 3);

    char *out = NULL;
    assert_int_equal(test_client_request(cl, "terminal/closeAll", NULL, &out), 0);
    assert_string_equal(out, "{\"success\":true}");
    free(out);
    assert_int_equal(test_client_request(cl, "terminal/list", NULL, &out), 0);
    assert_string_equal(out, "{\"terminals\":[]}");
    free(out);
    pid_t pids[] = {shell1, job1, shell2, job2, stopped};
    pid_t groups[] = {job1, job2, stopped, shell1, shell2};
    pid_t sessions[] = {shell1, shell2};
    assert_true(wait_all_gone(pids, 5, groups, 5, sessions, 2, WAIT_MS));
    free(one);
    free(two);
}

static void test_close_ends_a_sh_session(void **state)
{
    char *id = th_create(cl, "\"shell\":\"/bin/sh\"");
    pid_t shell, job;
    run_and_read(id, "sleep 1003 &", "PIDS", &shell, &job);
    char st;
    pid_t pgid, sid;
    assert_true(read_stat(job, &st, &pgid, &sid));
    assert_int_equal(sid, shell);
    char params[256];
    snprintf(params, sizeof params, "{\"terminalId\":\"%s\"}", id);
    assert_int_equal(test_client_request(cl, "terminal/close", params, NULL), 0);
    pid_t pids[] = {shell, job};
    assert_true(wait_all_gone(pids, 2, &pgid, 1, &shell, 1, WAIT_MS));
    char *out = NULL;
    assert_int_equal(test_client_request(cl, "terminal/exists", params, &out), 0);
    assert_string_equal(out, "{\"exists\":false}");
    free(out);
    free(id);
}

static void test_only_a_daemon_that_let_go_of_the_terminal_lives_on(void **state)
{
    char *id = th_create(cl, "\"shell\":\"/bin/bash\"");
    /* durations of this run's own, to find these processes by their command line */
    char d[5][16], command[512];
    for (int i = 0; i < 5; i++)
        snprintf(d[i], sizeof d[i], "%d%d", (int)getpid(), i + 1);
    /* a daemon (its own session, the terminal let go of), then what only
     * looks detached: nohup, a job deaf to SIGHUP, setsid still writing to
     * the terminal, and a plain job */
    snprintf(command, sizeof command,
             "setsid sleep %s </dev/null >/dev/null 2>&1 & nohup sleep %s >/dev/null 2>&1 & "
             "(trap '' HUP; exec sleep %s) & setsid sleep %s & sleep %s &",
             d[0], d[1], d[2], d[3], d[4]);
    pid_t shell, unused;
    run_and_read(id, command, "PIDS", &shell, &unused);
    pid_t found[5] = {0};
    long long end = th_now_ms() + WAIT_MS;
    for (bool all = false; !all && th_now_ms() < end;) {
        all = true;
        for (int i = 0; i < 5; i++) {
            if (!found[i])
                found[i] = find_command("sleep", d[i]);
            all &= found[i] != 0;
        }
        test_server_run_for(srv, 20);
    }
    for (int i = 0; i < 5; i++)
        assert_true(found[i]);
    char st;
    pid_t pgid, sid;
    assert_true(read_stat(found[3], &st, &pgid, &sid));
    assert_int_not_equal(sid, shell); /* left the session, kept the terminal */
    char params[256];
    snprintf(params, sizeof params, "{\"terminalId\":\"%s\"}", id);
    assert_int_equal(test_client_request(cl, "terminal/close", params, NULL), 0);
    pid_t pids[] = {shell, found[1], found[2], found[3], found[4]};
    bool ended = wait_all_gone(pids, 5, NULL, 0, NULL, 0, WAIT_MS);
    bool daemon_lives = !gone(found[0]);
    for (int i = 0; i < 5; i++)
        kill(found[i], SIGKILL);
    assert_true(ended);
    assert_true(daemon_lives);
    free(id);
}

static void test_teardown_ends_background_jobs(void **state)
{
    char *id = th_create(cl, "\"shell\":\"/bin/bash\"");
    pid_t shell, job;
    run_and_read(id, "sleep 1007 &", "PIDS", &shell, &job);
    char st;
    pid_t pgid, sid;
    assert_true(read_stat(job, &st, &pgid, &sid));
    assert_int_equal(pgid, job);
    assert_int_equal(sid, shell);
    long long t0 = th_now_ms();
    test_server_free(srv);
    srv = NULL;
    long long took = th_now_ms() - t0;
    pid_t pids[] = {shell, job};
    /* the shell is reaped inside the teardown; the job, killed, by init */
    assert_true(gone(shell));
    assert_true(wait_all_gone(pids, 2, &job, 1, &shell, 1, 3000));
    assert_true(took < 3000);
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_close_all_ends_every_process, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_ends_a_sh_session, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_a_daemon_that_let_go_of_the_terminal_lives_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_teardown_ends_background_jobs, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
