/* git_fixture: what the git tests share. Repositories are built with the git
 * command in a temporary directory, with no system or user configuration
 * (HOME points at an empty directory) and fixed dates, and the git command
 * is also what our answers are compared with. Include after cmocka.h. */
#ifndef ECPD_GIT_FIXTURE_H
#define ECPD_GIT_FIXTURE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_client.h"

static test_server *srv;
static test_client *cl;
static char top[64];  /* the test's temporary directory */
static char repo[128]; /* top/r: the repository most tests use */

/* Runs a shell command (printf-formatted) in dir; fails the test unless it exits 0. */
static __attribute__((unused)) void sh_in(const char *dir, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static __attribute__((unused)) void sh_in(const char *dir, const char *fmt, ...)
{
    char cmd[8192], full[9000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && { %s ; } >/dev/null 2>&1", dir, cmd);
    if (system(full) != 0)
        fail_msg("command failed: %s", cmd);
}

#define sh(...) sh_in(repo, __VA_ARGS__)

/* The output of a shell command run in repo (malloc'd). */
static __attribute__((unused)) char *out_of(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static __attribute__((unused)) char *out_of(const char *fmt, ...)
{
    char cmd[8192], full[9000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    snprintf(full, sizeof full, "cd '%s' && %s 2>/dev/null", repo, cmd);
    FILE *p = popen(full, "r");
    assert_non_null(p);
    size_t cap = 4096, len = 0;
    char *s = malloc(cap);
    size_t n;
    while ((n = fread(s + len, 1, cap - len - 1, p)) > 0) {
        len += n;
        if (cap - len < 2)
            s = realloc(s, cap *= 2);
    }
    s[len] = '\0';
    pclose(p);
    return s;
}

static __attribute__((unused)) void write_at(const char *rel, const char *content)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", repo, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
}

static __attribute__((unused)) char *read_at(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", repo, rel);
    FILE *f = fopen(p, "r");
    if (!f)
        return NULL;
    char *s = calloc(1, 65536);
    size_t n = fread(s, 1, 65535, f);
    s[n] = '\0';
    fclose(f);
    return s;
}

static __attribute__((unused)) char *vcall(const char *method, int want, const char *fmt, va_list ap)
{
    char params[16384];
    vsnprintf(params, sizeof params, fmt, ap);
    char *out = NULL;
    int code = test_client_request(cl, method, params, &out);
    if (code != want)
        fail_msg("%s %s: wanted %d, got %d: %s", method, params, want, code, out ? out : "(nothing)");
    return out;
}

/* Calls method and asserts success; returns the result JSON (free it). */
static __attribute__((unused)) char *ok(const char *method, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static __attribute__((unused)) char *ok(const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = vcall(method, 0, fmt, ap);
    va_end(ap);
    return r;
}

/* Calls method, asserts -32208 with data.gitErrorCode == code and data.uri; returns the error JSON. */
static __attribute__((unused)) char *git_fails(const char *method, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static __attribute__((unused)) char *git_fails(const char *method, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = vcall(method, -32208, fmt, ap);
    va_end(ap);
    char *got = test_json_string(r, "data.gitErrorCode");
    if (!got || strcmp(got, code))
        fail_msg("%s: wanted gitErrorCode %s, got %s", method, code, r);
    free(got);
    if (!test_json_has(r, "data.uri"))
        fail_msg("%s: no data.uri in %s", method, r);
    return r;
}

/* Calls method and asserts the error code (not -32208). */
static __attribute__((unused)) char *fails(const char *method, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static __attribute__((unused)) char *fails(const char *method, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *r = vcall(method, code, fmt, ap);
    va_end(ap);
    return r;
}

static __attribute__((unused)) void want_str(const char *json, const char *path, const char *want)
{
    char *s = test_json_string(json, path);
    if (!s || strcmp(s, want))
        fail_msg("%s: wanted \"%s\", got \"%s\" in %s", path, want, s ? s : "(absent)", json);
    free(s);
}

static __attribute__((unused)) void want_bool(const char *json, const char *path, bool want)
{
    bool b;
    if (!test_json_bool(json, path, &b) || b != want)
        fail_msg("%s: wanted %s in %s", path, want ? "true" : "false", json);
}

static __attribute__((unused)) int64_t get_int(const char *json, const char *path)
{
    int64_t v;
    if (!test_json_int(json, path, &v))
        fail_msg("%s: no integer in %s", path, json);
    return v;
}

static __attribute__((unused)) void want_int(const char *json, const char *path, int64_t want)
{
    int64_t got = get_int(json, path);
    if (got != want)
        fail_msg("%s: wanted %lld, got %lld in %s", path, (long long)want, (long long)got, json);
}

static __attribute__((unused)) void want_text(const char *got, const char *want, const char *what)
{
    if (strcmp(got, want))
        fail_msg("%s differs.\n--- ours:\n%s\n--- git:\n%s", what, got, want);
}

/* A fresh repository at `dir` on branch main, with an identity of its own. */
static __attribute__((unused)) void init_repo_at(const char *dir)
{
    sh_in(top, "git init -q -b main '%s' && cd '%s' && git config user.name 'Ada Lovelace' && "
               "git config user.email ada@example.com",
          dir, dir);
}

/* Commits everything staged with a fixed date (day of January 2024). */
static __attribute__((unused)) void commit_on(int day, const char *message)
{
    sh("GIT_AUTHOR_DATE='2024-01-%02d 12:00:00 +0100' GIT_COMMITTER_DATE='2024-01-%02d 12:00:00 +0100' "
       "git commit -q -m '%s'",
       day, day, message);
}

static __attribute__((unused)) int fixture_setup(void **state)
{
    strcpy(top, "/tmp/ecpd-git-XXXXXX");
    if (!mkdtemp(top))
        return -1;
    /* nothing of the machine's git configuration reaches the tests */
    char home[128];
    snprintf(home, sizeof home, "%s/home", top);
    mkdir(home, 0700);
    setenv("HOME", home, 1);
    setenv("XDG_CONFIG_HOME", home, 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    unsetenv("GIT_DIR");
    unsetenv("GIT_WORK_TREE");
    snprintf(repo, sizeof repo, "%s/r", top);
    init_repo_at(repo);
    srv = test_server_new(NULL);
    cl = test_client_connect(srv);
    return 0;
}

static __attribute__((unused)) int fixture_teardown(void **state)
{
    test_server_free(srv);
    char cmd[512];
    /* a server a test started and did not get to stop */
    snprintf(cmd, sizeof cmd, "cd '%s' && if [ -f auth.pid ]; then kill $(cat auth.pid) 2>/dev/null; fi; rm -rf '%s'",
             top, top);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
