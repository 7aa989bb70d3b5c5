/* Fuzzing the ACP front end (`ecpd --acp`) one line at a time.
 *
 * One real server lives for the whole process, with a private data directory
 * and workspace (removed at exit). Each input is a few lines, as a client
 * writes them on stdin: a front end that reads no stdin takes each line
 * where its reader would hand it over, the loop turns a few times, and the
 * front end is closed and freed. Everything it wrote must be one JSON object
 * per line, "jsonrpc":"2.0", and either a request or notification to the
 * client (a method) or a response (an id, and exactly one of result or a
 * well-formed error). "@session" in a line stands for the id of the last
 * session the front end made, so inputs can reach the methods that need one.
 *
 * No model is configured (the provider variables are cleared), so a prompt
 * ends at "no provider" without reaching the network; a session whose
 * mcpServers would start a program or open a connection is not sent; the
 * client's file and terminal requests only go to the output. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "adapter.h"
#include "buf.h"
#include "compose.h"
#include "internal.h"
#include "json.h"
#include "server.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

static uv_loop_t loop;
static server *srv;
static char dir[] = "/tmp/ecpd-acp-fuzz-XXXXXX";
static FILE *null_log;

#define ANSWER_WAIT_MS 200

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void cleanup(void)
{
    if (srv) {
        server_free(srv);
        srv = NULL;
        uv_run(&loop, UV_RUN_NOWAIT);
    }
    nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    static const char *const provider_vars[] = {"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                                                "ANTHROPIC_BASE_URL", "OLLAMA_HOST", "ECPD_MODEL", NULL};
    for (const char *const *v = provider_vars; *v; v++)
        unsetenv(*v);
    REQUIRE(uv_loop_init(&loop) == 0);
    REQUIRE(mkdtemp(dir) != NULL);
    char path[sizeof dir + 32];
    snprintf(path, sizeof path, "%s/ws", dir);
    REQUIRE(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/ws/a.txt", dir);
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs("text\n", f);
    fclose(f);
    null_log = fopen("/dev/null", "w");
    REQUIRE(null_log != NULL);
    char data_dir[sizeof dir + 8], workspace[sizeof dir + 8];
    snprintf(data_dir, sizeof data_dir, "%s/data", dir);
    snprintf(workspace, sizeof workspace, "%s/ws", dir);
    server_options options = {.workspace = workspace, .data_dir = data_dir, .log_out = null_log,
                              .log_level = ECP_LOG_ERROR};
    ecp_error err;
    srv = server_new(&loop, &options, &err);
    REQUIRE(srv != NULL);
    atexit(cleanup);
    return 0;
}

/* A session/new or session/load whose mcpServers is not empty would start programs or open connections. */
static bool line_allowed(const char *line, size_t len)
{
    json_doc d;
    bool ok = true;
    if (json_doc_parse(&d, line, len, NULL) == 0 && json_type_of(&d, json_root(&d)) == JSON_OBJECT) {
        json_ref params = json_get(&d, json_root(&d), "params");
        for (json_ref k = json_first(&d, params); k != JSON_NO_REF && ok; k = json_next(&d, k))
            if (json_string_eq(&d, k, "mcpServers") && json_length(&d, k + 1) > 0)
                ok = false;
    }
    json_doc_free(&d);
    return ok;
}

static bool has(const json_doc *d, json_ref obj, const char *key) { return json_get(d, obj, key) != JSON_NO_REF; }

/* A line the front end must answer: an object with a method and an id. */
static bool is_request(const char *line, size_t len)
{
    json_doc d;
    bool yes = json_doc_parse(&d, line, len, NULL) == 0 && json_type_of(&d, json_root(&d)) == JSON_OBJECT &&
               has(&d, json_root(&d), "method") && has(&d, json_root(&d), "id");
    json_doc_free(&d);
    return yes;
}

/* Session ids are random: "@session" in a line stands for the last one the front end gave. */
#define SESSION_MARK "@session"

static void with_session(buf *out, const char *line, size_t len, const char *session)
{
    size_t mark = strlen(SESSION_MARK);
    for (size_t i = 0; i < len;) {
        if (session[0] && len - i >= mark && memcmp(line + i, SESSION_MARK, mark) == 0) {
            buf_append_str(out, session);
            i += mark;
        } else {
            buf_push(out, line[i++]);
        }
    }
}

static void remember_session(const buf *out, char *session, size_t cap)
{
    static const char key[] = "\"result\":{\"sessionId\":\"";
    const char *last = NULL;
    for (const char *p = out->data; p && (p = memmem(p, out->len - (size_t)(p - out->data), key, sizeof key - 1));
         p += sizeof key - 1)
        last = p + sizeof key - 1;
    if (!last)
        return;
    size_t n = strcspn(last, "\"");
    if (n < cap && last + n < out->data + out->len)
        memcpy(session, last, n), session[n] = '\0';
}

/* Responses among the lines written so far. */
static size_t answers(const buf *out)
{
    if (out->len == 0)
        return 0;
    size_t n = 0;
    const char *p = out->data, *end = out->data + out->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            break;
        n += memmem(p, (size_t)(nl - p), "\"result\"", 8) || memmem(p, (size_t)(nl - p), "\"error\"", 7);
        p = nl + 1;
    }
    return n;
}

static void check_message(const char *line, size_t len)
{
    json_doc d;
    ecp_error err;
    if (json_doc_parse(&d, line, len, &err) != 0) {
        fprintf(stderr, "acp_fuzz: the front end wrote invalid JSON (%s): %.*s\n", err.message, (int)len, line);
        __builtin_trap();
    }
    json_ref root = json_root(&d);
    REQUIRE(json_type_of(&d, root) == JSON_OBJECT);
    REQUIRE(json_string_eq(&d, json_get(&d, root, "jsonrpc"), "2.0"));
    if (has(&d, root, "method")) {
        REQUIRE(json_type_of(&d, json_get(&d, root, "method")) == JSON_STRING);
    } else {
        json_type id = json_type_of(&d, json_get(&d, root, "id"));
        REQUIRE(id == JSON_STRING || id == JSON_NUMBER || id == JSON_NULL);
        bool result = has(&d, root, "result"), error = has(&d, root, "error");
        REQUIRE(result != error);
        if (error) {
            json_ref e = json_get(&d, root, "error");
            int64_t code;
            REQUIRE(json_int64(&d, json_get(&d, e, "code"), &code) && code < 0);
            REQUIRE(json_type_of(&d, json_get(&d, e, "message")) == JSON_STRING);
        }
    }
    json_doc_free(&d);
}

static void check_output(const buf *out)
{
    if (out->len == 0)
        return;
    const char *p = out->data, *end = out->data + out->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        REQUIRE(nl != NULL); /* every line ends */
        check_message(p, (size_t)(nl - p));
        p = nl + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data, *end = text + size;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        if (!line_allowed(p, (size_t)(stop - p)))
            return 0;
        p = stop + 1;
    }
    size_t requests = 0;
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        requests += is_request(p, (size_t)(stop - p));
        p = stop + 1;
    }
    buf out = BUF_INIT;
    struct acp_frontend *acp = acp__frontend_detached(&loop, server_agent(srv), NULL, "fuzz", &out);
    char session[64] = "";
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        buf line = BUF_INIT;
        with_session(&line, p, (size_t)(stop - p), session);
        acp__frontend_take_line(acp, line.data ? line.data : "", line.len);
        buf_free(&line);
        uv_run(&loop, UV_RUN_NOWAIT);
        remember_session(&out, session, sizeof session);
        p = stop + 1;
    }
    /* a prompt is answered once the store has looked for a key: give the answers a little while */
    for (int i = 0; i < 4 || (i < ANSWER_WAIT_MS && answers(&out) < requests); i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (i >= 4)
            usleep(1000);
    }
    if (getenv("ACP_FUZZ_PRINT"))
        fwrite(out.data ? out.data : "", 1, out.len, stderr);
    check_output(&out);
    acp_frontend_close(acp);
    uv_run(&loop, UV_RUN_NOWAIT);
    acp_frontend_free(acp);
    buf_free(&out);
    return 0;
}
