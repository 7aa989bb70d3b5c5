/* What the lsp tests share: one server and one client per test file, a
 * temporary workspace, and waits on what language servers publish. */
#ifndef ECPD_TESTS_LSP_FIXTURE_H
#define ECPD_TESTS_LSP_FIXTURE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "test_client.h"

/* ctest's SKIP_RETURN_CODE for a language whose server is not installed. */
#define SKIP_CODE 77
/* Language servers start in 0.1-0.4 s on an idle machine; this one is shared. */
#define WAIT_MS 30000

static test_server *srv;
static test_client *cl;
static char top[64];

static __attribute__((unused)) double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static __attribute__((unused)) bool have_program(const char *name)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "PATH=\"$PATH:%s\" command -v %s >/dev/null 2>&1", ECPD_LSP_NODE_BIN, name);
    return system(cmd) == 0;
}

static __attribute__((unused)) int fixture_setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN); /* as ecpd does: a server that died is an EPIPE, not our death */
    strcpy(top, "/tmp/ecpd-lsp-XXXXXX");
    if (!mkdtemp(top))
        return -1;
    test_server_options o = {.workspace = top};
    srv = test_server_new(&o);
    cl = test_client_connect(srv);
    /* language servers start only in a trusted folder */
    char params[128];
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\",\"trusted\":true}", top);
    char *trusted = NULL;
    if (test_client_request(cl, "workspace/trust", params, &trusted) != 0 || !strstr(trusted, "\"trusted\":true")) {
        fprintf(stderr, "workspace/trust %s: %s\n", top, trusted ? trusted : "(timeout)");
        free(trusted);
        return -1;
    }
    free(trusted);
    return 0;
}

static __attribute__((unused)) int fixture_teardown(void **state)
{
    (void)state;
    test_server_free(srv);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", top);
    return system(cmd) == 0 ? 0 : -1;
}

static __attribute__((unused)) void write_at(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", top, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static __attribute__((unused)) char *uri_of(const char *name)
{
    char *u = malloc(300);
    snprintf(u, 300, "file://%s/%s", top, name);
    return u;
}

/* The result of a request that must succeed (the caller frees it). */
#define ok(method, ...) ok_at(__LINE__, method, __VA_ARGS__)
static __attribute__((unused, format(printf, 3, 4))) char *ok_at(int line, const char *method, const char *fmt, ...)
{
    char params[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = test_client_request(cl, method, params, &out);
    if (rc != 0)
        fail_msg("line %d: %s %s failed with %d: %s", line, method, params, rc, out ? out : "(timeout)");
    return out;
}

/* The error of a request that must fail with code (the caller frees it). */
#define fails(code, method, ...) fails_at(__LINE__, code, method, __VA_ARGS__)
static __attribute__((unused, format(printf, 4, 5))) char *fails_at(int line, int code, const char *method,
                                                                    const char *fmt, ...)
{
    char params[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int rc = test_client_request(cl, method, params, &out);
    if (rc != code)
        fail_msg("line %d: %s %s: expected error %d, got %d: %s", line, method, params, code, rc,
                 out ? out : "(timeout)");
    return out;
}

/* The number of diagnostics in the last lsp/didPublishDiagnostics for uri, or -1. */
static __attribute__((unused)) long last_diagnostics(const char *uri, char **json)
{
    size_t n = test_client_notification_count(cl, "lsp/didPublishDiagnostics");
    for (size_t i = n; i-- > 0;) {
        const char *p = test_client_notification(cl, "lsp/didPublishDiagnostics", i);
        char *u = test_json_string(p, "uri");
        bool match = u && strcmp(u, uri) == 0;
        free(u);
        if (match) {
            if (json)
                *json = strdup(p);
            return test_json_length(p, "diagnostics");
        }
    }
    return -1;
}

/* Waits until the last diagnostics of uri are empty (want_errors false) or not. */
static __attribute__((unused)) char *wait_diagnostics(const char *uri, bool want_errors)
{
    double end = now_ms() + WAIT_MS;
    for (;;) {
        char *json = NULL;
        long n = last_diagnostics(uri, &json);
        if (n >= 0 && (want_errors ? n > 0 : n == 0))
            return json;
        free(json);
        if (now_ms() > end)
            fail_msg("no %s diagnostics for %s (log: %s)", want_errors ? "non-empty" : "empty", uri,
                     test_client_notification_log(cl));
        test_server_run_for(srv, 20);
    }
}

/* Waits for an lsp/serverStatusChanged of language with status; returns its params. */
static __attribute__((unused)) char *wait_status(const char *language, const char *status)
{
    double end = now_ms() + WAIT_MS;
    for (;;) {
        size_t n = test_client_notification_count(cl, "lsp/serverStatusChanged");
        for (size_t i = 0; i < n; i++) {
            const char *p = test_client_notification(cl, "lsp/serverStatusChanged", i);
            char *l = test_json_string(p, "languageId"), *s = test_json_string(p, "status");
            bool match = l && s && !strcmp(l, language) && !strcmp(s, status);
            free(l);
            free(s);
            if (match)
                return strdup(p);
        }
        if (now_ms() > end)
            fail_msg("no status %s for %s (log: %s)", status, language, test_client_notification_log(cl));
        test_server_run_for(srv, 20);
    }
}

static __attribute__((unused)) void want_string(const char *json, const char *path, const char *want)
{
    char *s = test_json_string(json, path);
    if (!s || strcmp(s, want) != 0)
        fail_msg("%s: want \"%s\", got %s in %s", path, want, s ? s : "(absent)", json);
    free(s);
}

/* A document/open of a file in the workspace; returns its documentId. */
static __attribute__((unused)) char *open_document(const char *name)
{
    char *u = uri_of(name);
    char *r = ok("document/open", "{\"uri\":\"%s\"}", u);
    char *id = test_json_string(r, "documentId");
    free(r);
    free(u);
    assert_non_null(id);
    return id;
}

#endif
