/* The git service's C API on a loop of its own: the cached status (kept
 * until a change, answered without a job, its formatted bytes kept with
 * it), the operations as jobs of the service (a change told to listeners
 * before the callback, a big answer formatted off the loop, no callback
 * after the service is freed), a document's unsaved text against HEAD
 * through a snapshot (what `document/viewport`'s gitChanges shows), the
 * credentials an HTTP(S) remote gets from a token in the session's secret
 * store, and the transfer deadline the service follows from the settings. */
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

#include <git2.h>
#include <git2/sys/credential.h>

#include "document/interface.h"
#include "file/interface.h"
#include "git/interface.h"
#include "internal.h"
#include "session/interface.h"
#include "store/interface.h"

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

static void on_status(void *ctx, int status, const gitsvc_error *err, const char *root, const gitsvc_status *st,
                      ecp_shared *json)
{
    (void)json;
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
    int before = s->calls;
    gitsvc_status_args a = {.where = {repo, NULL}, .force = force};
    ecp_job *job = gitsvc_status_start(git, &a, on_status, s);
    if (job) {
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
    status_seen t = {0};
    gitsvc_status_args a = {.where = {"/", NULL}};
    assert_non_null(gitsvc_status_start(git, &a, on_status, &t));
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
    gitsvc_error err;
    assert_non_null(gitsvc_document_changes_start(git, id, NULL, on_changes, c, &err));
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
    assert_int_equal(document_apply_edits(docs, o.id, 0, edits, 2, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
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
    gitsvc_error err;
    changes_seen g = {0};
    assert_null(gitsvc_document_changes_start(git, "doc-nope", NULL, on_changes, &g, &err));
    assert_false(g.done);
}

/* ----- operations as jobs of the service ------------------------------------------------- */

typedef struct op_seen {
    int calls, status;
    int heard_before; /* changes the listener had heard when the callback ran */
    char json[256];
    bool formatted_on_loop;
    int formats;
} op_seen;

static int heard_changes;
static uv_thread_t loop_thread;

static void count_heard(void *ctx, const gitsvc_change *change)
{
    (void)ctx;
    (void)change;
    heard_changes++;
}

static const gitsvc_listener heard = {count_heard};

static void on_done(void *ctx, int status, const gitsvc_error *err)
{
    op_seen *o = ctx;
    o->calls++;
    o->status = status;
    o->heard_before = heard_changes;
}

static void run_until(const int *calls, int n)
{
    while (*calls < n)
        uv_run(&loop, UV_RUN_ONCE);
}

static void test_a_change_is_told_before_its_callback(void **state)
{
    sh("echo new > staged.txt");
    heard_changes = 0;
    gitsvc_subscribe(git, &heard, NULL);
    const char *paths[] = {"staged.txt"};
    gitsvc_paths_args a = {.where = {repo, NULL}, .paths = paths, .count = 1};
    op_seen o = {0};
    assert_non_null(gitsvc_stage_start(git, &a, on_done, &o));
    run_until(&o.calls, 1);
    assert_int_equal(o.status, 0);
    assert_int_equal(o.heard_before, 1);
    /* a failure changes nothing and tells nobody */
    const char *outside[] = {"/elsewhere/x"};
    gitsvc_paths_args b = {.where = {repo, NULL}, .paths = outside, .count = 1};
    op_seen f = {0};
    assert_non_null(gitsvc_stage_start(git, &b, on_done, &f));
    run_until(&f.calls, 1);
    assert_int_not_equal(f.status, 0);
    assert_int_equal(heard_changes, 1);
    assert_true(gitsvc_unsubscribe(git, &heard, NULL));
    sh("git diff --cached --name-only | grep -qx staged.txt");
}

static void format_log_count(void *fctx, const gitsvc_log_result *r, buf *out)
{
    op_seen *o = fctx;
    uv_thread_t self = uv_thread_self();
    o->formatted_on_loop = uv_thread_equal(&self, &loop_thread);
    buf_appendf(out, "{\"commits\":%zu,\"first\":\"%s\"}", r->count, r->count ? r->commits[0].subject : "");
}

static void on_log(void *ctx, int status, const gitsvc_error *err, const gitsvc_log_result *r, ecp_shared *json)
{
    op_seen *o = ctx;
    o->calls++;
    o->status = status;
    if (json)
        snprintf(o->json, sizeof o->json, "%.*s", (int)ecp_shared_len(json), ecp_shared_data(json));
}

static void format_status_count(void *fctx, const gitsvc_status *st, buf *out)
{
    op_seen *o = fctx;
    o->formats++; /* the test's loop waits while the job runs: no other thread touches it */
    uv_thread_t self = uv_thread_self();
    o->formatted_on_loop = uv_thread_equal(&self, &loop_thread);
    buf_appendf(out, "{\"untracked\":%zu}", st->untracked_count);
}

static void on_formatted_status(void *ctx, int status, const gitsvc_error *err, const char *root,
                                const gitsvc_status *st, ecp_shared *json)
{
    op_seen *o = ctx;
    o->calls++;
    o->status = status;
    snprintf(o->json, sizeof o->json, "%.*s", json ? (int)ecp_shared_len(json) : 0, json ? ecp_shared_data(json) : "");
}

static void test_big_answers_are_formatted_off_the_loop(void **state)
{
    loop_thread = uv_thread_self();
    op_seen o = {0};
    gitsvc_log_args a = {.where = {repo, NULL}, .max = 10, .format = format_log_count, .fctx = &o};
    assert_non_null(gitsvc_log_start(git, &a, on_log, &o));
    run_until(&o.calls, 1);
    assert_int_equal(o.status, 0);
    assert_string_equal(o.json, "{\"commits\":1,\"first\":\"first\"}");
    assert_false(o.formatted_on_loop);

    /* the status: formatted by the job, then kept with the cached status */
    sh("echo x > u1.txt && echo y > u2.txt");
    op_seen s = {0};
    gitsvc_status_args sa = {.where = {repo, NULL}, .format = format_status_count, .fctx = &s};
    for (int i = 0; i < 2; i++) { /* the first makes the repository known; the second is kept */
        sa.force = true;
        assert_non_null(gitsvc_status_start(git, &sa, on_formatted_status, &s));
        run_until(&s.calls, i + 1);
    }
    assert_int_equal(s.status, 0);
    assert_string_equal(s.json, "{\"untracked\":2}");
    assert_false(s.formatted_on_loop);
    assert_int_equal(s.formats, 2);
    sa.force = false;
    assert_null(gitsvc_status_start(git, &sa, on_formatted_status, &s)); /* from the cache, at once */
    assert_int_equal(s.calls, 3);
    assert_string_equal(s.json, "{\"untracked\":2}");
    assert_int_equal(s.formats, 2); /* not rendered again */
    /* forced over a fresh one: computed and rendered again, the old bytes released */
    sh("echo z > u3.txt");
    sa.force = true;
    assert_non_null(gitsvc_status_start(git, &sa, on_formatted_status, &s));
    run_until(&s.calls, 4);
    assert_string_equal(s.json, "{\"untracked\":3}");
    assert_int_equal(s.formats, 3);
}

static int never_called;

static void on_log_never(void *ctx, int status, const gitsvc_error *err, const gitsvc_log_result *r,
                         ecp_shared *json)
{
    never_called++;
}

static void test_no_callback_after_the_service_is_freed(void **state)
{
    never_called = 0;
    for (int i = 0; i < 8; i++) {
        gitsvc_log_args a = {.where = {repo, NULL}, .max = 10};
        assert_non_null(gitsvc_log_start(git, &a, on_log_never, NULL));
    }
    gitsvc_free(git);
    git = gitsvc_new(pool, NULL, NULL, docs, NULL);
    assert_non_null(git);
    for (int i = 0; i < 20; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    assert_int_equal(never_called, 0);
}

/* ----- credentials from the secret store ----------------------------------------------- */

typedef struct with_session {
    store *st;
    file_service *files;
    session_service *session;
    gitsvc *git;
} with_session;

static void status_done(void *ctx, int status, const ecp_error *err)
{
    (void)err;
    *(int *)ctx = status;
}

static void store_secret(session_service *session, const char *key, const char *value)
{
    int status = 1;
    session_secret_set(session, key, value, strlen(value), NULL, status_done, &status);
    while (status == 1)
        uv_run(&loop, UV_RUN_ONCE);
    assert_int_equal(status, 0);
}

static void tokens_done(void *ctx, gitsvc_tokens *tokens)
{
    *(gitsvc_tokens **)ctx = tokens;
}

static gitsvc_tokens *load_tokens(gitsvc *g)
{
    gitsvc_tokens *tokens = NULL;
    gitsvc_tokens_load(g, tokens_done, &tokens);
    while (!tokens)
        uv_run(&loop, UV_RUN_ONCE);
    return tokens;
}

/* What the callback offers a URL that allows types, as "user:password",
 * "ssh", "username:<name>" or "none" (GIT_EAUTH and failed). */
static void offer(gitsvc_credentials *c, const char *url, const char *user, unsigned types, char *out, size_t size)
{
    git_credential *cred = NULL;
    int rc = gitsvc_credentials_acquire(&cred, url, user, types, c);
    if (rc == GIT_EAUTH) {
        assert_null(cred);
        assert_true(c->failed);
        snprintf(out, size, "none");
        return;
    }
    assert_int_equal(rc, 0);
    assert_non_null(cred);
    if (cred->credtype == GIT_CREDENTIAL_USERPASS_PLAINTEXT) {
        git_credential_userpass_plaintext *up = (git_credential_userpass_plaintext *)cred;
        snprintf(out, size, "%s:%s", up->username, up->password);
    } else if (cred->credtype == GIT_CREDENTIAL_USERNAME) {
        snprintf(out, size, "username:%s", git_credential_get_username(cred));
    } else {
        snprintf(out, size, "other");
    }
    git_credential_free(cred);
}

static void test_credentials_from_the_secret_store(void **state)
{
    char data[128];
    snprintf(data, sizeof data, "%s/data", top);
    mkdir(data, 0700);
    unsetenv("SSH_AUTH_SOCK");
    with_session w = {0};
    ecp_error err;
    store_options so = {.data_dir = data};
    w.st = store_open(&loop, NULL, &so, &err);
    assert_non_null(w.st);
    w.files = file_service_new(pool, NULL);
    session_service_options o = {.pool = pool, .store = w.st, .documents = docs, .files = w.files, .data_dir = data};
    w.session = session_service_new(&o, &err);
    assert_non_null(w.session);
    w.git = gitsvc_new(pool, NULL, NULL, NULL, w.session);
    store_secret(w.session, "git.token.example.com", "alice:s3cret");
    store_secret(w.session, "git.token.tok.example:8443", "ghp_token");
    store_secret(w.session, "other.key", "not for git");

    gitsvc_tokens *tokens = load_tokens(w.git);
    assert_int_equal(tokens->count, 2);
    char got[256];
    const unsigned http = GIT_CREDENTIAL_USERPASS_PLAINTEXT;

    /* user and password from the stored "user:password" */
    gitsvc_credentials c = {.tokens = tokens};
    offer(&c, "https://example.com/team/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "alice:s3cret");
    /* asked again: the remote refused it, and nothing else is offered */
    offer(&c, "https://example.com/team/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "none");

    /* a token alone is the password, with the URL's user name, else x-access-token; host:port first */
    gitsvc_credentials d = {.tokens = tokens};
    offer(&d, "https://bob@tok.example:8443/r.git", "bob", http, got, sizeof got);
    assert_string_equal(got, "bob:ghp_token");
    gitsvc_credentials e = {.tokens = tokens};
    offer(&e, "http://EXAMPLE.com:8080/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "alice:s3cret"); /* no token for the port: the host's */
    gitsvc_credentials f = {.tokens = tokens};
    offer(&f, "https://tok.example:8443/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "x-access-token:ghp_token");

    /* no token for the host, or a remote that does not take a password: none */
    gitsvc_credentials g = {.tokens = tokens};
    offer(&g, "https://elsewhere.org/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "none");
    gitsvc_credentials h = {.tokens = tokens};
    offer(&h, "ssh://git@example.com/r.git", "git", GIT_CREDENTIAL_SSH_KEY, got, sizeof got);
    assert_string_equal(got, "none"); /* no ssh-agent here */
    gitsvc_credentials i = {.tokens = tokens};
    offer(&i, "ssh://git@example.com/r.git", "git", GIT_CREDENTIAL_USERNAME, got, sizeof got);
    assert_string_equal(got, "username:git");
    gitsvc_tokens_free(tokens);
    free(tokens);

    /* without a session service: no tokens, nothing offered */
    gitsvc_tokens *none = load_tokens(git);
    assert_int_equal(none->count, 0);
    gitsvc_credentials n = {.tokens = none};
    offer(&n, "https://example.com/team/r.git", NULL, http, got, sizeof got);
    assert_string_equal(got, "none");
    gitsvc_tokens_free(none);
    free(none);

    /* the transfer deadline follows git.networkTimeoutMs, which the service hears itself */
    assert_int_equal(w.git->transfer_timeout_ms, GITSVC_TRANSFER_TIMEOUT_MS);
    assert_int_equal(session_setting_set(w.session, "git.networkTimeoutMs", "250", 3, NULL, &err), 0);
    assert_int_equal(w.git->transfer_timeout_ms, 250);
    assert_int_equal(session_setting_reset(w.session, "git.networkTimeoutMs", &err), 0);
    assert_int_equal(w.git->transfer_timeout_ms, GITSVC_TRANSFER_TIMEOUT_MS);

    gitsvc_free(w.git);
    session_service_free(w.session);
    file_service_free(w.files);
    store_close(w.st);
    uv_run(&loop, UV_RUN_NOWAIT);
}

int main(void)
{
    /* The credentials' callback is called here directly, not by libgit2 in
     * an operation that would have opened the library first. */
    if (gitsvc__git2_load(NULL) < 0)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_document_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_change_is_told_before_its_callback, setup, teardown),
        cmocka_unit_test_setup_teardown(test_big_answers_are_formatted_off_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_callback_after_the_service_is_freed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_credentials_from_the_secret_store, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
