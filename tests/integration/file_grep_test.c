/* file/grep through the in-process client: result shape, columns, case,
 * regex, include/exclude, what is skipped, limits, bad patterns, and that a
 * long grep neither delays other requests nor outlives $/cancelRequest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_client.h"

#define BIG_DIRS 100
#define BIG_FILES_PER_DIR 1000
/* Files of lines on which `(a+)+$` backtracks until the match limit stops it:
 * a few such lines and the file is given up, some 20 ms each, so it takes
 * many files to keep each grep's workers busy for seconds. */
#define SLOW_FILES 600
#define SLOW_LINES 200
#define SLOW_GREP "{\"pattern\":\"(a+)+$\",\"regex\":true,\"baseUri\":\"%s\"}"

static test_server *srv;
static test_client *cl;
static char root[64]; /* holds small/ and big/ */
static char small[128];
static char big[128];
static char slow[128];

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/* CPU time of the whole process (every thread). */
static double cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000.0 +
           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000.0;
}

static void put(const char *rel, const char *content, size_t len)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", small, rel);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    close(fd);
}

static void mk(const char *rel)
{
    char p[512];
    snprintf(p, sizeof p, "%s/%s", small, rel);
    assert_int_equal(mkdir(p, 0755), 0);
}

static void make_big_tree(void)
{
    snprintf(big, sizeof big, "%s/big", root);
    mkdir(big, 0755);
    char body[1200];
    int n = 0;
    for (int i = 0; i < 20; i++)
        n += snprintf(body + n, sizeof body - (size_t)n, "line %02d of a generated file with some words in it\n", i);
    n += snprintf(body + n, sizeof body - (size_t)n, "common_token appears once per file\n");
    for (int d = 0; d < BIG_DIRS; d++) {
        char p[256];
        snprintf(p, sizeof p, "%s/d%03d", big, d);
        mkdir(p, 0755);
        for (int f = 0; f < BIG_FILES_PER_DIR; f++) {
            snprintf(p, sizeof p, "%s/d%03d/f%04d.txt", big, d, f);
            int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd < 0 || write(fd, body, (size_t)n) != n)
                fail_msg("cannot write %s", p);
            close(fd);
        }
    }
}

static void make_slow_tree(void)
{
    snprintf(slow, sizeof slow, "%s/slow", root);
    mkdir(slow, 0755);
    char line[64];
    memset(line, 'a', 48);
    memcpy(line + 48, "b\n", 2);
    char body[SLOW_LINES * 50];
    for (int i = 0; i < SLOW_LINES; i++)
        memcpy(body + i * 50, line, 50);
    for (int f = 0; f < SLOW_FILES; f++) {
        char p[256];
        snprintf(p, sizeof p, "%s/s%02d.txt", slow, f);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || write(fd, body, sizeof body) != (ssize_t)sizeof body)
            fail_msg("cannot write %s", p);
        close(fd);
    }
}

static int group_setup(void **state)
{
    /* 100,000 files on a loaded disk take minutes to make and remove; in
     * memory they take seconds, and grep reads them from the page cache
     * either way. */
    struct stat st;
    bool shm = stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0;
    strcpy(root, shm ? "/dev/shm/ecpd-grep-XXXXXX" : "/tmp/ecpd-grep-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    snprintf(small, sizeof small, "%s/small", root);
    mkdir(small, 0755);
    mk("sub");
    mk(".git");
    mk("node_modules");
    const char *a_c = "int main(void)\n{\n    puts(\"h\xc3\xa9llo w\xc3\xb6rld\");\n}\n";
    put("a.c", a_c, strlen(a_c));
    put("b.txt", "Hello\nhello\nHELLO\n", 18);
    put("crlf.txt", "one\r\ntwo match\r\n", 16);
    put("bin.dat", "match\0binary\n", 13);
    put(".git/config", "match\n", 6);
    put("node_modules/x.js", "match\n", 6);
    put(".DS_Store", "match\n", 6);
    put("sub/deep.c", "/* match */\n", 12);
    char longline[6000];
    memset(longline, 'a', 5000);
    memcpy(longline + 5000, "match\n", 6);
    put("long.txt", longline, 5006);
    char p[512];
    snprintf(p, sizeof p, "%s/ln.txt", small);
    if (symlink("crlf.txt", p) != 0)
        return -1;
    double t0 = now_ms();
    make_big_tree();
    make_slow_tree();
    fprintf(stderr, "file_grep_test: made %d files in %.0f ms\n", BIG_DIRS * BIG_FILES_PER_DIR, now_ms() - t0);
    srv = test_server_new(NULL);
    cl = test_client_connect(srv);
    return 0;
}

static int group_teardown(void **state)
{
    test_server_free(srv);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

static char *grep(test_client *c, int want, const char *fmt, ...)
{
    char params[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(params, sizeof params, fmt, ap);
    va_end(ap);
    char *out = NULL;
    int code = test_client_request(c, "file/grep", params, &out);
    if (code != want)
        fail_msg("file/grep %s: wanted %d, got %d: %s", params, want, code, out ? out : "");
    return out;
}

static void want_match(const char *r, int i, const char *rel, int64_t line, int64_t column, const char *text)
{
    char path[64], want_uri[512];
    snprintf(want_uri, sizeof want_uri, "file://%s/%s", small, rel);
    snprintf(path, sizeof path, "matches[%d].uri", i);
    char *uri = test_json_string(r, path);
    snprintf(path, sizeof path, "matches[%d].text", i);
    char *t = test_json_string(r, path);
    int64_t l = -1, c = -1;
    snprintf(path, sizeof path, "matches[%d].line", i);
    test_json_int(r, path, &l);
    snprintf(path, sizeof path, "matches[%d].column", i);
    test_json_int(r, path, &c);
    if (!uri || strcmp(uri, want_uri) || l != line || c != column || (text && (!t || strcmp(t, text))))
        fail_msg("match %d: wanted %s:%lld:%lld, got %s", i, want_uri, (long long)line, (long long)column, r);
    free(uri);
    free(t);
}

static void want_count(const char *r, long n, bool truncated)
{
    if (test_json_length(r, "matches") != n)
        fail_msg("wanted %ld matches: %s", n, r);
    bool t;
    assert_true(test_json_bool(r, "truncated", &t));
    assert_int_equal(t, truncated);
}

static void test_literal(void **state)
{
    char *r = grep(cl, 0, "{\"pattern\":\"match\",\"baseUri\":\"file://%s\"}", small);
    /* binary files, symlinks, .git, node_modules and .DS_Store are skipped */
    want_count(r, 3, false);
    want_match(r, 0, "crlf.txt", 1, 4, "two match"); /* no \r in the text */
    want_match(r, 1, "long.txt", 0, 5000, NULL);
    want_match(r, 2, "sub/deep.c", 0, 3, "/* match */");
    char *t = test_json_string(r, "matches[1].text");
    assert_int_equal(strlen(t), 1000); /* long lines are cut */
    free(t);
    free(r);
}

static void test_columns_and_encodings(void **state)
{
    /* "    puts(\"héllo wörld\")": wörld starts at byte 17, UTF-16 unit 16 */
    char *r = grep(cl, 0, "{\"pattern\":\"w\xc3\xb6rld\",\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "a.c", 2, 16, "    puts(\"h\xc3\xa9llo w\xc3\xb6rld\");");
    free(r);
    /* a regex '.' is one character, not one byte */
    r = grep(cl, 0, "{\"pattern\":\"h.llo w.rld\",\"regex\":true,\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "a.c", 2, 10, NULL);
    free(r);

    test_client *c8 = test_client_connect(srv);
    char *init = NULL;
    assert_int_equal(
        test_client_request(c8, "initialize", "{\"capabilities\":{\"positionEncodings\":[\"utf-8\"]}}", &init), 0);
    char *enc = test_json_string(init, "positionEncoding");
    free(init);
    if (enc && !strcmp(enc, "utf-8")) {
        r = grep(c8, 0, "{\"pattern\":\"w\xc3\xb6rld\",\"baseUri\":\"%s\"}", small);
        want_match(r, 0, "a.c", 2, 17, NULL);
        free(r);
    } else {
        fail_msg("the server did not accept utf-8 positions: %s", enc ? enc : "(none)");
    }
    free(enc);
    test_client_disconnect(c8);
}

static void test_case_and_regex(void **state)
{
    char *r = grep(cl, 0, "{\"pattern\":\"hello\",\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "b.txt", 1, 0, "hello");
    free(r);
    r = grep(cl, 0, "{\"pattern\":\"hello\",\"caseSensitive\":false,\"baseUri\":\"%s\"}", small);
    want_count(r, 3, false);
    want_match(r, 2, "b.txt", 2, 0, "HELLO");
    free(r);
    r = grep(cl, 0, "{\"pattern\":\"^H[A-Z]+$\",\"regex\":true,\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "b.txt", 2, 0, "HELLO");
    free(r);
    /* a match never runs across a line end */
    r = grep(cl, 0, "{\"pattern\":\"one\\\\s+two\",\"regex\":true,\"baseUri\":\"%s\"}", small);
    want_count(r, 0, false);
    free(r);
    /* a literal's regex characters are plain characters */
    r = grep(cl, 0, "{\"pattern\":\"/* match\",\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    free(r);
}

static void test_include_exclude_limits(void **state)
{
    char *r = grep(cl, 0, "{\"pattern\":\"match\",\"include\":[\"*.c\"],\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "sub/deep.c", 0, 3, NULL);
    free(r);
    r = grep(cl, 0, "{\"pattern\":\"match\",\"include\":\"*.c, crlf.*\",\"baseUri\":\"%s\"}", small);
    want_count(r, 2, false);
    free(r);
    r = grep(cl, 0, "{\"pattern\":\"match\",\"exclude\":[\"sub\",\"long.*\"],\"baseUri\":\"%s\"}", small);
    want_count(r, 1, false);
    want_match(r, 0, "crlf.txt", 1, 4, NULL);
    free(r);
    r = grep(cl, 0, "{\"pattern\":\"match\",\"maxResults\":2,\"baseUri\":\"%s\"}", small);
    want_count(r, 2, true);
    free(r);
    /* a single file as the base */
    r = grep(cl, 0, "{\"pattern\":\"l\",\"baseUri\":\"%s/b.txt\",\"caseSensitive\":false}", small);
    want_count(r, 3, false);
    free(r);
}

static void test_bad_input(void **state)
{
    char *e = grep(cl, -32602, "{\"pattern\":\"(unclosed\",\"regex\":true,\"baseUri\":\"%s\"}", small);
    char *msg = test_json_string(e, "message");
    assert_string_equal(msg, "pattern: invalid regular expression at offset 9: missing closing parenthesis");
    free(msg);
    free(e);
    e = grep(cl, -32602, "{\"pattern\":\"x\",\"include\":[\"[a\"],\"baseUri\":\"%s\"}", small);
    msg = test_json_string(e, "message");
    assert_non_null(strstr(msg, "unclosed '[' at offset 0"));
    free(msg);
    free(e);
    e = grep(cl, -32100, "{\"pattern\":\"x\",\"baseUri\":\"%s/none\"}", small);
    char *code = test_json_string(e, "data.code");
    assert_string_equal(code, "FILE_NOT_FOUND");
    free(code);
    free(e);
    e = grep(cl, -32602, "{\"baseUri\":\"%s\"}", small);
    msg = test_json_string(e, "message");
    assert_string_equal(msg, "pattern: required string");
    free(msg);
    free(e);
    e = grep(cl, -32602, "{\"pattern\":\"x\",\"maxResults\":-1,\"baseUri\":\"%s\"}", small);
    free(e);
    e = grep(cl, -32106, "{\"pattern\":\"x\",\"baseUri\":\"relative\"}");
    free(e);
}

static void test_limit_on_a_big_tree(void **state)
{
    double t0 = now_ms();
    char *r = grep(cl, 0, "{\"pattern\":\"common_token\",\"maxResults\":10,\"baseUri\":\"%s\"}", big);
    double ms = now_ms() - t0;
    want_count(r, 10, true);
    free(r);
    fprintf(stderr, "file_grep_test: maxResults 10 over %d files: %.1f ms\n", BIG_DIRS * BIG_FILES_PER_DIR, ms);
    assert_true(ms < 1000);

    /* glob and search stop early too */
    char *out = NULL;
    t0 = now_ms();
    assert_int_equal(test_client_requestf(cl, "file/glob", &out,
                                          "{\"pattern\":\"**/*.txt\",\"maxResults\":10,\"baseUri\":\"%s\"}", big),
                     0);
    ms = now_ms() - t0;
    assert_int_equal(test_json_length(out, "uris"), 10);
    free(out);
    assert_true(ms < 1000);
    t0 = now_ms();
    assert_int_equal(test_client_requestf(cl, "file/search", &out,
                                          "{\"pattern\":\"f00\",\"maxResults\":10,\"includePatterns\":[\"%s\"]}",
                                          big),
                     0);
    ms = now_ms() - t0;
    assert_int_equal(test_json_length(out, "results"), 10);
    int64_t score = 0;
    assert_true(test_json_int(out, "results[9].score", &score));
    assert_int_equal(score, 100);
    free(out);
    assert_true(ms < 1000);
}

/* A grep that has to read all 100,000 files. */
#define FULL_SCAN "{\"pattern\":\"absent_[0-9]+_token\",\"regex\":true,\"baseUri\":\"%s\"}"

static void test_ping_during_grep(void **state)
{
    char params[512];
    snprintf(params, sizeof params, FULL_SCAN, big);
    /* On a loaded machine the loop thread can be descheduled for as long as
     * the whole grep takes, and then there is nothing to observe: try again
     * (a few times) rather than conclude anything from such a run. */
    for (int attempt = 0; attempt < 5; attempt++) {
        double t0 = now_ms();
        int64_t id = test_client_send(cl, "file/grep", params);
        test_server_run_for(srv, 5); /* let the walk start */
        double p0 = now_ms();
        char *pong = NULL;
        assert_int_equal(test_client_request(cl, "ecp/ping", "{\"n\":7}", &pong), 0);
        double ping_ms = now_ms() - p0;
        assert_string_equal(pong, "{\"n\":7}");
        free(pong);
        char *out = NULL;
        if (test_client_wait_response(cl, id, 0, &out) == 0) {
            fprintf(stderr, "file_grep_test: the grep ended before the ping was sent; trying again\n");
            free(out);
            continue;
        }
        /* the ping came back while the grep was still running */
        assert_int_equal(test_client_wait_response(cl, id, 30000, &out), 0);
        double grep_ms = now_ms() - t0;
        want_count(out, 0, false);
        free(out);
        fprintf(stderr, "file_grep_test: ping %.1f ms during a %.1f ms grep\n", ping_ms, grep_ms);
        assert_true(grep_ms > 100);
        assert_true(ping_ms * 5 < grep_ms);
        return;
    }
    fail_msg("the grep always ended before a ping could be sent");
}

static void test_cancel(void **state)
{
    char params[512];
    snprintf(params, sizeof params, FULL_SCAN, big);
    /* how long the full walk takes, for comparison */
    double t0 = now_ms();
    char *out = NULL;
    assert_int_equal(test_client_request(cl, "file/grep", params, &out), 0);
    free(out);
    double full_ms = now_ms() - t0;

    int64_t id = test_client_send(cl, "file/grep", params);
    test_server_run_for(srv, 10);
    char cancel[64];
    snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)id);
    double c0 = now_ms();
    test_client_notify(cl, "$/cancelRequest", cancel);
    int code = test_client_wait_response(cl, id, 30000, &out);
    double cancel_ms = now_ms() - c0;
    assert_int_equal(code, -32800);
    char *msg = test_json_string(out, "message");
    assert_string_equal(msg, "Request cancelled");
    free(msg);
    free(out);
    fprintf(stderr, "file_grep_test: cancelled in %.1f ms; the whole grep takes %.1f ms\n", cancel_ms, full_ms);
    assert_true(cancel_ms < 500);
    assert_true(cancel_ms * 2 < full_ms);
    /* and the walk itself stopped: the process is idle afterwards */
    double cpu0 = cpu_ms();
    test_server_run_for(srv, 300);
    double cpu = cpu_ms() - cpu0;
    fprintf(stderr, "file_grep_test: %.1f ms of CPU in the 300 ms after the cancel\n", cpu);
    assert_true(cpu < 100);
    /* the server goes on serving */
    assert_int_equal(test_client_request(cl, "ecp/ping", "{}", &out), 0);
    free(out);
}

/* Long work must not starve short work: while four greps that could each
 * keep every thread of the pool busy for a minute run, a read of a small
 * file still finds a thread at once. */
static void test_read_during_slow_greps(void **state)
{
    char params[512];
    snprintf(params, sizeof params, SLOW_GREP, slow);
    int64_t ids[4];
    for (int i = 0; i < 4; i++)
        ids[i] = test_client_send(cl, "file/grep", params);
    test_server_run_for(srv, 200); /* the greps take their threads */
    for (int i = 0; i < 4; i++)
        if (test_client_wait_response(cl, ids[i], 0, NULL) != INT32_MIN)
            fail_msg("grep %d ended before the read was sent", i);

    double t0 = now_ms();
    char *out = NULL;
    int code = test_client_requestf(cl, "file/read", &out, "{\"uri\":\"file://%s/b.txt\"}", small);
    double read_ms = now_ms() - t0;
    fprintf(stderr, "file_grep_test: file/read took %.1f ms during four slow greps\n", read_ms);
    assert_int_equal(code, 0);
    char *content = test_json_string(out, "content");
    assert_string_equal(content, "Hello\nhello\nHELLO\n");
    free(content);
    free(out);
    /* well under a millisecond on an idle machine; a loaded one may
     * deschedule the loop for a while */
    assert_true(read_ms < 1000);

    for (int i = 0; i < 4; i++) {
        if (test_client_wait_response(cl, ids[i], 0, NULL) != INT32_MIN)
            fail_msg("grep %d ended during the read", i);
        char cancel[64];
        snprintf(cancel, sizeof cancel, "{\"id\":%lld}", (long long)ids[i]);
        test_client_notify(cl, "$/cancelRequest", cancel);
    }
    for (int i = 0; i < 4; i++) {
        code = test_client_wait_response(cl, ids[i], 30000, &out);
        assert_int_equal(code, -32800);
        free(out);
    }
    /* the greps stopped, the ones still waiting for a thread too */
    test_server_run_for(srv, 200);
    double cpu0 = cpu_ms();
    test_server_run_for(srv, 300);
    double cpu = cpu_ms() - cpu0;
    fprintf(stderr, "file_grep_test: %.1f ms of CPU in the 300 ms after cancelling the slow greps\n", cpu);
    assert_true(cpu < 100);
}

/* The server goes away while a slow grep runs on a thread, a read is on its
 * way and a write was just sent. Nothing may crash or leak (the sanitizer
 * build checks), no callback may reach the freed service, and the write must
 * still land: its bytes exist nowhere else. */
static void test_free_the_server_during_grep_and_read(void **state)
{
    test_server *s = test_server_new(NULL);
    test_client *c = test_client_connect(s);
    char params[512];
    snprintf(params, sizeof params, SLOW_GREP, slow);
    int64_t grep_id = test_client_send(c, "file/grep", params);
    test_server_run_for(s, 100); /* the grep is on a thread now */
    assert_int_equal(test_client_wait_response(c, grep_id, 0, NULL), INT32_MIN);
    char saved[256];
    snprintf(saved, sizeof saved, "%s/saved-at-exit.txt", root);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s/b.txt\"}", small);
    test_client_send(c, "file/read", params);
    snprintf(params, sizeof params, "{\"uri\":\"file://%s\",\"content\":\"last words\"}", saved);
    test_client_send(c, "file/write", params);
    double t0 = now_ms();
    test_server_free(s);
    double ms = now_ms() - t0;
    fprintf(stderr, "file_grep_test: freeing the server during a slow grep took %.1f ms\n", ms);
    assert_true(ms < 5000);
    char buf[64] = "";
    int fd = open(saved, O_RDONLY);
    assert_true(fd >= 0);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    assert_int_equal(n, 10);
    assert_string_equal(buf, "last words");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_literal),
        cmocka_unit_test(test_columns_and_encodings),
        cmocka_unit_test(test_case_and_regex),
        cmocka_unit_test(test_include_exclude_limits),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_limit_on_a_big_tree),
        cmocka_unit_test(test_ping_during_grep),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_read_during_slow_greps),
        cmocka_unit_test(test_free_the_server_during_grep_and_read),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
