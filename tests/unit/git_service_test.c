/* The git service's C API on a loop of its own: the cached status (kept
 * until a change, answered without a job), a document's unsaved text
 * against HEAD through a snapshot (what `document/viewport`'s gitChanges
 * shows), and the credentials an HTTP(S) remote gets from a token in the
 * session's secret store. */
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

    gitsvc_free(w.git);
    session_service_free(w.session);
    file_service_free(w.files);
    store_close(w.st);
    uv_run(&loop, UV_RUN_NOWAIT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_status_cache, setup, teardown),
        cmocka_unit_test_setup_teardown(test_document_changes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_credentials_from_the_secret_store, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
