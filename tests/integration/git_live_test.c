/* The git service while things happen: a status that follows what the git
 * command does to the repository behind the server's back (git/didChange,
 * sorted by kind, once per kind until the status is asked again), a long
 * git/log that neither blocks ecp/ping nor survives $/cancelRequest, and an
 * open document's gutter (document/viewport's gitChanges) that follows its
 * edits and the commits made behind the server's back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "git_fixture.h"

/* File events are gathered for 50 ms; this leaves room on a busy machine. */
#define EVENT_MS 3000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

/* The number of git/didChange notifications of kind so far. */
static size_t changes_of(const char *kind)
{
    size_t n = 0, total = test_client_notification_count(cl, "git/didChange");
    for (size_t i = 0; i < total; i++) {
        char *k = test_json_string(test_client_notification(cl, "git/didChange", i), "kind");
        n += k && !strcmp(k, kind);
        free(k);
    }
    return n;
}

/* Runs the loop until a git/didChange of kind arrives. */
static void wait_change(const char *kind)
{
    double end = now_ms() + EVENT_MS;
    while (changes_of(kind) == 0 && now_ms() < end)
        test_server_run_for(srv, 20);
    if (changes_of(kind) == 0)
        fail_msg("no git/didChange of kind %s (log: %s)", kind, test_client_notification_log(cl));
}

static char *status(void)
{
    return ok("git/status", "{\"uri\":\"%s\"}", repo);
}

static void test_status_follows_the_git_command(void **state)
{
    write_at("a.txt", "a\n");
    write_at("b.txt", "b\n");
    sh("git add -A");
    commit_on(1, "first");
    char *first = status(); /* the repository becomes known and watched */
    char *second = status();
    assert_string_equal(first, second);
    free(first);
    free(second);
    char *cached = status(); /* no change between: from the cache */
    assert_string_equal(cached,
                        "{\"branch\":\"main\",\"ahead\":0,\"behind\":0,\"staged\":[],\"unstaged\":[],\"untracked\":[]}");
    free(cached);
    test_client_clear_notifications(cl);

    /* edits in the work tree: one status change, however many files */
    write_at("a.txt", "changed\n");
    write_at("c.txt", "new\n");
    wait_change("status");
    test_server_run_for(srv, 300);
    assert_int_equal(changes_of("status"), 1);
    char *r = status();
    assert_string_equal(r, "{\"branch\":\"main\",\"ahead\":0,\"behind\":0,\"staged\":[],"
                           "\"unstaged\":[{\"path\":\"a.txt\",\"status\":\"M\"}],\"untracked\":[\"c.txt\"]}");
    free(r);
    const char *note = test_client_notification(cl, "git/didChange", 0);
    want_str(note, "rootUri", repo);
    char *uri = test_json_string(note, "uri");
    assert_int_equal(strncmp(uri, "file://", 7), 0);
    free(uri);

    /* git add, by the git command: the index changed */
    test_client_clear_notifications(cl);
    sh("git add a.txt");
    wait_change("status");
    r = status();
    assert_string_equal(r, "{\"branch\":\"main\",\"ahead\":0,\"behind\":0,\"staged\":[{\"path\":\"a.txt\","
                           "\"status\":\"M\"}],\"unstaged\":[],\"untracked\":[\"c.txt\"]}");
    free(r);

    /* a commit moves the branch */
    test_client_clear_notifications(cl);
    sh("git commit -qm second");
    wait_change("commit");
    r = status();
    assert_int_equal(test_json_length(r, "staged"), 0);
    free(r);

    /* another branch checked out */
    test_client_clear_notifications(cl);
    sh("git checkout -q -b topic");
    wait_change("branch");
    r = status();
    want_str(r, "branch", "topic");
    free(r);

    /* a stash */
    test_client_clear_notifications(cl);
    write_at("b.txt", "stash me\n");
    sh("git stash -q");
    wait_change("stash");
    r = status();
    assert_int_equal(test_json_length(r, "unstaged"), 0);
    free(r);
}

static void test_own_changes_notify_before_the_answer(void **state)
{
    write_at("a.txt", "a\n");
    sh("git add -A");
    commit_on(1, "first");
    free(status());
    write_at("a.txt", "b\n");
    test_client_clear_notifications(cl);
    free(ok("git/stage", "{\"uri\":\"%s\",\"paths\":[\"a.txt\"]}", repo));
    /* the notification came before the response of the request that caused it */
    const char *log = test_client_event_log(cl);
    const char *note = strstr(log, "git/didChange");
    const char *answer = strchr(log, '#');
    if (!note || !answer || note > answer)
        fail_msg("git/didChange should precede the answer: %s", log);
    want_str(test_client_notification(cl, "git/didChange", 0), "kind", "status");
    char *r = ok("git/commit", "{\"uri\":\"%s\",\"message\":\"two\"}", repo);
    free(r);
    assert_true(changes_of("commit") >= 1);
    /* forceRefresh computes again and agrees */
    r = ok("git/status", "{\"uri\":\"%s\",\"forceRefresh\":true}", repo);
    assert_int_equal(test_json_length(r, "staged"), 0);
    free(r);
    /* a client that unsubscribes from git notifications hears none */
    free(ok("notifications/unsubscribe", "{\"events\":[\"git/*\"]}"));
    test_client_clear_notifications(cl);
    free(ok("git/createBranch", "{\"uri\":\"%s\",\"name\":\"quiet\"}", repo));
    assert_int_equal(test_client_notification_count(cl, "git/didChange"), 0);
}

/* A repository with `commits` commits, made by git fast-import. */
static void long_history(int commits)
{
    sh("python3 -c \"import sys\n"
       "w=sys.stdout.write\n"
       "w('blob\\nmark :1\\ndata 2\\nx\\n')\n"
       "for i in range(%d):\n"
       "  m='commit %%d' %% i\n"
       "  w('commit refs/heads/main\\ncommitter A <a@e> %%d +0000\\ndata %%d\\n%%s\\n' %% (1600000000 + i, len(m), m))\n"
       "  w('M 100644 :1 f\\n' if i == 0 else '')\n"
       "\" | git fast-import --quiet && git reset -q --hard main",
       commits);
}

static void test_ping_answers_while_log_runs_and_cancel_stops_it(void **state)
{
    long_history(40000);
    /* the whole history, to measure it */
    double t0 = now_ms();
    char *all = ok("git/log", "{\"uri\":\"%s\",\"count\":1000000}", repo);
    double full_ms = now_ms() - t0;
    assert_int_equal(test_json_length(all, "commits"), 40000);
    free(all);

    /* ping while it runs again */
    char *out = NULL;
    char params[256];
    snprintf(params, sizeof params, "{\"uri\":\"%s\",\"count\":1000000}", repo);
    int64_t log_id = test_client_send(cl, "git/log", params);
    test_server_run_for(srv, 5);
    double p0 = now_ms();
    free(ok("ecp/ping", "{\"n\":1}"));
    double ping_ms = now_ms() - p0;
    bool log_done = test_client_wait_response(cl, log_id, 0, &out) != INT32_MIN;
    if (log_done)
        free(out);
    else
        assert_int_equal(test_client_wait_response(cl, log_id, 30000, &out), 0), free(out);
    print_message("git/log of 40,000 commits: %.0f ms; ecp/ping meanwhile: %.2f ms (log %s)\n", full_ms, ping_ms,
                  log_done ? "had already ended" : "still running");
    assert_true(ping_ms < 50 || ping_ms < full_ms / 4);

    /* cancel: the answer comes at once, and the walks stop: with every long
     * lane held by cancelled walks, a short log that needs a lane gets one
     * long before a whole walk could have ended */
    int64_t ids[8];
    for (int i = 0; i < 8; i++)
        ids[i] = test_client_send(cl, "git/log", params);
    test_server_run_for(srv, 30);
    for (int i = 0; i < 8; i++) {
        char cancel[64];
        snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)ids[i]);
        test_client_notify(cl, "$/cancelRequest", cancel);
    }
    for (int i = 0; i < 8; i++) {
        int code = test_client_wait_response(cl, ids[i], 30000, &out);
        if (code != -32800)
            fail_msg("wanted -32800 after $/cancelRequest, got %d: %.200s", code, out ? out : "");
        free(out);
    }
    double c0 = now_ms();
    char *one = ok("git/log", "{\"uri\":\"%s\",\"count\":1}", repo);
    double after_ms = now_ms() - c0;
    free(one);
    print_message("a log of one commit after the cancels: %.1f ms\n", after_ms);
    assert_true(after_ms < full_ms / 2);
}

/* document/viewport's gitChanges of lines [start, start + count), once they
 * equal want (the diff runs after the edits settle), else fails. */
static void wait_git_changes(const char *id, int start, int count, const char *want)
{
    double end = now_ms() + EVENT_MS * 2;
    char *got = NULL;
    for (;;) {
        char *r = ok("document/viewport",
                     "{\"documentId\":\"%s\",\"startLine\":%d,\"lineCount\":%d,\"include\":[\"gitChanges\"]}", id,
                     start, count);
        free(got);
        got = test_json_raw(r, "gitChanges");
        free(r);
        if (got && !strcmp(got, want))
            break;
        if (now_ms() > end)
            fail_msg("gitChanges of lines %d+%d: wanted %s, got %s", start, count, want, got ? got : "(absent)");
        test_server_run_for(srv, 30);
    }
    free(got);
}

static void test_viewport_git_changes_follow_edits_and_commits(void **state)
{
    write_at("t.txt", "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\n");
    sh("git add t.txt");
    commit_on(1, "lines");
    char *r = ok("document/open", "{\"uri\":\"file://%s/t.txt\"}", repo);
    char *id = test_json_string(r, "documentId");
    free(r);
    assert_non_null(id);
    wait_git_changes(id, 0, 20, "[]"); /* the committed text: nothing changed */

    /* one line replaced, one inserted, one deleted, as three edits */
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":1,\"column\":0},"
            "\"end\":{\"line\":1,\"column\":2}},\"text\":\"L2\"}]}", id));
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":4,\"column\":0},"
            "\"end\":{\"line\":4,\"column\":0}},\"text\":\"new\\n\"}]}", id));
    /* l1 L2 l3 l4 new l5 l6 l7 l8: l7 is line 7 (0-based) */
    free(ok("document/edit",
            "{\"documentId\":\"%s\",\"edits\":[{\"range\":{\"start\":{\"line\":7,\"column\":0},"
            "\"end\":{\"line\":8,\"column\":0}},\"text\":\"\"}]}", id));
    const char *all = "[{\"line\":2,\"type\":\"modified\"},{\"line\":5,\"type\":\"added\"},"
                      "{\"line\":7,\"type\":\"deleted\"}]";
    wait_git_changes(id, 0, 20, all);
    /* the same as git/diffBuffer of the same text, and only the visible lines */
    r = ok("git/diffBuffer", "{\"uri\":\"%s\",\"path\":\"t.txt\",\"documentId\":\"%s\"}", repo, id);
    char *changes = test_json_raw(r, "changes");
    assert_string_equal(changes, all);
    free(changes);
    free(r);
    wait_git_changes(id, 4, 2, "[{\"line\":5,\"type\":\"added\"}]");
    wait_git_changes(id, 7, 5, "[]");

    /* saved, then committed by the git command: HEAD moves and the gutter empties */
    free(ok("document/save", "{\"documentId\":\"%s\"}", id));
    test_server_run_for(srv, 1000); /* the save's own diff has run: what follows is the commit's doing */
    wait_git_changes(id, 0, 20, all);
    sh("git commit -qam edited");
    wait_git_changes(id, 0, 20, "[]");
    free(id);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_follows_the_git_command, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_own_changes_notify_before_the_answer, fixture_setup, fixture_teardown),
        cmocka_unit_test_setup_teardown(test_viewport_git_changes_follow_edits_and_commits, fixture_setup,
                                        fixture_teardown),
        cmocka_unit_test_setup_teardown(test_ping_answers_while_log_runs_and_cancel_stops_it, fixture_setup,
                                        fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
