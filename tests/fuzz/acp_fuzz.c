/* Fuzzing the ACP front end (`ecpd --acp`) one line at a time.
 *
 * One real server lives for the whole process, with a private data directory
 * and workspace (removed at exit). Each input is a few lines, as a client
 * writes them on stdin: a front end that reads no stdin takes each line
 * where its reader would hand it over, the loop turns a few times, and the
 * front end is closed and freed. Everything it wrote must be one JSON object
 * per line, "jsonrpc":"2.0", and either a request or notification to the
 * client (a method) or a response (an id, and exactly one of result or a
 * well-formed error).
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
    buf out = BUF_INIT;
    struct acp_frontend *acp = acp__frontend_detached(&loop, server_agent(srv), NULL, "fuzz", &out);
    for (const char *p = text; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *stop = nl ? nl : end;
        acp__frontend_take_line(acp, p, (size_t)(stop - p));
        uv_run(&loop, UV_RUN_NOWAIT);
        p = stop + 1;
    }
    for (int i = 0; i < 4; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (getenv("ACP_FUZZ_PRINT"))
        fwrite(out.data ? out.data : "", 1, out.len, stderr);
    check_output(&out);
    acp_frontend_close(acp);
    uv_run(&loop, UV_RUN_NOWAIT);
    acp_frontend_free(acp);
    buf_free(&out);
    return 0;
}
