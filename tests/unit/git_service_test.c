/* The git service's C API on a loop of its own: the cached status (kept
 * until a change, answered without a job), and a document's unsaved text
 * against HEAD through a snapshot (what `document/viewport`'s gitChanges
 * would show). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "document/interface.h"
#include "git/interface.h"

static uv_loop_t loop;
static ecp_pool *pool;
static document_service *docs;
static gitsvc *git;
static char top[64], repo[128];

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[4096], full[4300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && { %s ; } >/dev/null 2>&1", repo, cmd);
    if (system(full) != 0)
        fail_msg("command failed: %s", cmd);
}

static int setup(void **state)
{
    strcpy(top, "/tmp/ecpd-gitsvc-XXXXXX");
    if (!mkdtemp(top))
        return -1;
    snprintf(repo, sizeof repo, "%s/r", top);
    mkdir(repo, 0700);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("HOME", top, 1);
    sh("git init -q -b main . && git config user.name U && git config user.email u@e && "
       "printf 'one\\ntwo\\nthree\\n' > f.txt && git add f.txt && git commit -qm first");
    uv_loop_init(&loop);
    pool = ecp_pool_new(&loop, NULL);
    docs = document_service_new(pool, NULL);
    git = gitsvc_new(pool, NULL, NULL, docs, NULL);
    assert_non_null(git);
    return 0;
}

static int teardown(void **state)
{
    gitsvc_free(git);
    document_service_free(docs);
    ecp_pool_free(pool);
    for (int i = 0; i < 5000 && uv_run(&loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    assert_int_equal(uv_loop_close(&loop), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct status_seen {
    int calls, status;
    size_t unstaged, untracked;
    char branch[64];
} status_seen;

static void on_status(void *ctx, int status, const gitsvc_error *err, const char *root, const gitsvc_status *st)
{
    status_seen *s = ctx;
    s->calls++;
    s->status = status;
    if (!status) {
        s->unstaged = st->unstaged_count;
        s->untracked = st->untracked_count;
        snprintf(s->branch, sizeof s->branch, "%s", st->branch);
    }
}

/* Asks for the status; returns whether it needed a job (not the cache). */
static bool get_status(status_seen *s, bool force)
{
    ecp_job *job = NULL;
    int before = s->calls;
    gitsvc_status_get(git, repo, force, on_status, s, &job);
    if (job) {
        ecp_job_start(job, GITSVC_STATUS_ITEMS);
        while (s->calls == before)
            uv_run(&loop, UV_RUN_ONCE);
    }
    assert_int_equal(s->calls, before + 1);
    return job != NULL;
}

static void count_changes(void *ctx, const gitsvc_change *change)
{
    ++*(int *)ctx;
}

static const gitsvc_listener counter = {count_changes};

static void test_status_cache(void **state)
{
    status_seen s = {0};
    assert_true(get_status(&s, false)); /* unknown repository: computed */
    assert_int_equal(s.status, 0);
    assert_string_equal(s.branch, "main");
    assert_true(get_status(&s, false));  /* known now: computed and kept */
    assert_false(get_status(&s, false)); /* from the cache, answered at once */
    assert_true(get_status(&s, true));   /* forceRefresh computes */
    assert_false(get_status(&s, false));
    /* with no file service, what changes it is what goes through the service */
    sh("echo x > new.txt");
    assert_false(get_status(&s, false));
    assert_int_equal(s.untracked, 0);
    int heard = 0;
    gitsvc_subscribe(git, &counter, &heard);
    char gitdir[160];
    snprintf(gitdir, sizeof gitdir, "%s/.git", repo);
    gitsvc_changed(git, repo, gitdir, GITSVC_CHANGE_STATUS);
    assert_int_equal(heard, 1);
    assert_true(get_status(&s, false));
    assert_int_equal(s.untracked, 1);
    assert_true(gitsvc_unsubscribe(git, &counter, &heard));
    /* not a repository */
    ecp_job *job = NULL;
    status_seen t = {0};
    gitsvc_status_get(git, "/", false, on_status, &t, &job);
    assert_non_null(job);
    ecp_job_start(job, GITSVC_STATUS_ITEMS);
    while (!t.calls)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_not_equal(t.status, 0);
}

typedef struct changes_seen {
    bool done;
    int status;
    char text[256];
} changes_seen;

static void on_changes(void *ctx, int status, const gitsvc_error *err, const gitsvc_line_change *changes,
                       size_t count)
{
    changes_seen *c = ctx;
    c->done = true;
    c->status = status;
    static const char *const names[] = {"added", "modified", "deleted"};
    for (size_t i = 0; i < count; i++) {
        size_t len = strlen(c->text);
        snprintf(c->text + len, sizeof c->text - len, "%zu:%s ", changes[i].line, names[changes[i].type]);
    }
}

typedef struct opened {
    bool done;
    char id[64];
} opened;

static void on_open(void *ctx, int status, const ecp_error *err, const char *document_id, bool already_open)
{
    opened *o = ctx;
    assert_int_equal(status, 0);
    snprintf(o->id, sizeof o->id, "%s", document_id);
    o->done = true;
}

static void open_doc(const char *uri, const char *content, opened *o)
{
    document_open_options opts = {uri, content, content ? strlen(content) : 0, NULL, false};
    document_open(docs, &opts, on_open, o);
    while (!o->done)
        uv_run(&loop, UV_RUN_ONCE);
}

static void changes_of(const char *id, changes_seen *c)
{
    ecp_job *job = NULL;
    gitsvc_error err;
    assert_int_equal(gitsvc_document_changes(git, id, on_changes, c, &job, &err), 0);
    ecp_job_start(job, 1);
    while (!c->done)
        uv_run(&loop, UV_RUN_ONCE);
}

static void test_document_changes(void **state)
{
    char uri[256];
    snprintf(uri, sizeof uri, "file://%s/f.txt", repo);
    opened o = {0};
    open_doc(uri, NULL, &o);
    changes_seen c = {0};
    changes_of(o.id, &c);
    assert_int_equal(c.status, 0);
    assert_string_equal(c.text, "");
    /* unsaved edits: a line changed, one added at the end */
    document_edit edits[] = {{{{1, 0}, {1, 3}}, "TWO", 3}, {{{3, 0}, {3, 0}}, "four\n", 5}};
    assert_int_equal(document_apply_edits(docs, o.id, edits, 2, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    changes_seen d = {0};
    changes_of(o.id, &d);
    assert_string_equal(d.text, "2:modified 4:added ");
    /* a document of a file no commit has: every line added */
    snprintf(uri, sizeof uri, "file://%s/fresh.txt", repo);
    opened n = {0};
    open_doc(uri, "a\nb\n", &n);
    changes_seen e = {0};
    changes_of(n.id, &e);
    assert_string_equal(e.text, "1:added 2:added ");
    /* outside any repository: no changes, no error */
    opened u = {0};
    open_doc("untitled:one", "text\n", &u);
    changes_seen f = {0};
    changes_of(u.id, &f);
    assert_int_equal(f.status, 0);
    assert_string_equal(f.text, "");
    /* not an open document */
    ecp_job *job = NULL;
    gitsvc_error err;
    assert_int_not_equal(gitsvc_document_changes(git, "doc-nope", on_changes, &f, &job, &err), 0);
    assert_null(job);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_document_changes, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
