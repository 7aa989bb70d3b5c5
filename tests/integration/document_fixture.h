/* What the document tests share: a server and a client per test with a
 * scratch directory, requests that must succeed or fail, and checks of
 * results, notifications, contents and files. */
#ifndef ECPD_TEST_DOCUMENT_FIXTURE_H
#define ECPD_TEST_DOCUMENT_FIXTURE_H

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "test_client.h"

/* ----- fixture and helpers ----------------------------------------------------- */

typedef struct fx {
    test_server *s;
    test_client *c;
    char dir[64];
} fx;

static inline int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    f->s = test_server_new(NULL);
    f->c = test_client_connect(f->s);
    strcpy(f->dir, "/tmp/ecpd-doc-test-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static inline int teardown(void **state)
{
    fx *f = *state;
    test_server_free(f->s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

static int64_t last_id;

static inline char *vcall(test_client *c, const char *method, int *code, const char *fmt, va_list ap)
{
    char *params = NULL;
    if (fmt && vasprintf(&params, fmt, ap) < 0)
        abort();
    last_id = test_client_send(c, method, params);
    char *out = NULL;
    *code = test_client_wait_response(c, last_id, 30000, &out);
    free(params);
    return out;
}

/* A request that must succeed; returns its result JSON (free it). */
static inline char *ok(test_client *c, const char *method, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline char *ok(test_client *c, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != 0)
        print_error("%s failed with %d: %s\n", method, code, out ? out : "(none)");
    assert_int_equal(code, 0);
    return out;
}

/* A request that must fail with `want`; returns the error object (free it). */
static inline char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline char *fails(test_client *c, int want, const char *method, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code;
    char *out = vcall(c, method, &code, fmt, ap);
    va_end(ap);
    if (code != want)
        print_error("%s: expected error %d, got %d: %s\n", method, want, code, out ? out : "(none)");
    assert_int_equal(code, want);
    return out;
}

/* The same when the result does not matter. */
#define OK(...) free(ok(__VA_ARGS__))

static inline void expect_raw(const char *json, const char *path, const char *want)
{
    char *got = test_json_raw(json, path);
    if (!got || strcmp(got, want) != 0)
        print_error("at '%s'\n  want %s\n  got  %s\n", path, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static inline void expect_str(const char *json, const char *path, const char *want)
{
    char *got = test_json_string(json, path);
    if (!got || strcmp(got, want) != 0)
        print_error("at '%s': want \"%s\", got \"%s\"\n", path, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

static inline void expect_int(const char *json, const char *path, int64_t want)
{
    int64_t got = INT64_MIN;
    assert_true(test_json_int(json, path, &got));
    assert_int_equal(got, want);
}

static inline void expect_bool(const char *json, const char *path, bool want)
{
    bool got = !want;
    assert_true(test_json_bool(json, path, &got));
    assert_int_equal(got, want);
}

/* Checks a request's error message. */
static inline void expect_message(char *error, const char *want)
{
    expect_str(error, "message", want);
    free(error);
}

static inline void expect_call(test_client *c, const char *method, const char *params, const char *want_result)
{
    char *r = ok(c, method, "%s", params);
    expect_raw(r, "", want_result);
    free(r);
}

/* The event log must be exactly `want` with "#" standing for the last
 * request's id; the log is cleared afterwards. */
static inline void expect_events(test_client *c, const char *want)
{
    char expanded[4096];
    size_t n = 0;
    for (const char *p = want; *p && n < sizeof expanded - 32; p++) {
        if (*p == '#')
            n += (size_t)snprintf(expanded + n, sizeof expanded - n, "#%lld", (long long)last_id);
        else
            expanded[n++] = *p;
    }
    expanded[n] = '\0';
    /* Answers to earlier requests may lead the log; they are not events of
     * the request under test. */
    const char *got = test_client_event_log(c);
    while (*got == '#' && strchr(got, ',') && strcmp(got, expanded) != 0)
        got = strchr(got, ',') + 1;
    if (strcmp(got, expanded) != 0)
        print_error("events: want %s\n        got  %s\n", expanded, got);
    assert_string_equal(got, expanded);
    test_client_clear_notifications(c);
}

/* The params of the only notification captured, which must be `method`. */
static inline void expect_note(test_client *c, size_t index, const char *method, const char *want)
{
    const char *got = test_client_notification(c, method, index);
    if (!got || strcmp(got, want) != 0)
        print_error("%s[%zu]:\n  want %s\n  got  %s\n", method, index, want, got ? got : "(absent)");
    assert_non_null(got);
    assert_string_equal(got, want);
}

static inline char *open_doc(test_client *c, const char *uri, const char *content_json)
{
    char *r = content_json ? ok(c, "document/open", "{\"uri\":\"%s\",\"content\":%s}", uri, content_json)
                           : ok(c, "document/open", "{\"uri\":\"%s\"}", uri);
    char *id = test_json_string(r, "documentId");
    assert_non_null(id);
    free(r);
    test_client_clear_notifications(c);
    return id;
}

static inline void write_bytes(const char *path, const char *data, size_t len, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static inline void expect_content(test_client *c, const char *id, const char *want)
{
    char *r = ok(c, "document/content", "{\"documentId\":\"%s\"}", id);
    expect_str(r, "content", want);
    free(r);
}

static inline void expect_dirty(test_client *c, const char *id, bool want)
{
    char *r = ok(c, "document/isDirty", "{\"documentId\":\"%s\"}", id);
    expect_bool(r, "isDirty", want);
    free(r);
}

/* A cursor at (line, column), and a range, as the wire writes them. */
#define AT(l, c) "{\"position\":{\"line\":" #l ",\"column\":" #c "}}"
#define RANGE(l1, c1, l2, c2)                                                                                     \
    "{\"start\":{\"line\":" #l1 ",\"column\":" #c1 "},\"end\":{\"line\":" #l2 ",\"column\":" #c2 "}}"

#endif
