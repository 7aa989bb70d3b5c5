/* Fuzzing the ECA front end (`ecpd --eca`) one line at a time.
 *
 * --eca is the server's own stdio connection serving the chat namespace, so
 * the narrowest entry that takes a client's line is a connection of a real
 * server: the input, up to its first newline, is received as one message
 * and the loop turns a few times. One server lives for the whole process,
 * with a private data directory and workspace (removed at exit). What it
 * wrote must be framed and valid JSON-RPC: responses with an id and exactly
 * one of result or a well-formed error, notifications with a method.
 *
 * Only the chat methods an ECA client sends are let through (chat/...,
 * initialized, ecp/ping, $/cancelRequest; not initialize, whose
 * workspaceRoot could move the workspace anywhere). No model is configured (the
 * provider variables are cleared), so a prompt ends at "no provider" without
 * reaching the network, and no MCP server is configured. */
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
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "arena.h"
#include "buf.h"
#include "framing.h"
#include "json.h"
#include "server.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define MAX_MESSAGE 4096
#define ANSWER_WAIT_MS 200

static uv_loop_t loop;
static server *srv;
static char dir[] = "/tmp/ecpd-eca-fuzz-XXXXXX";
static FILE *null_log;

typedef struct peer {
    buf out;
} peer;

static void io_write(void *ctx, const char *data, size_t len) { buf_append(&((peer *)ctx)->out, data, len); }
static size_t io_queued(void *ctx)
{
    (void)ctx;
    return 0;
}
static void io_set_reading(void *ctx, bool on) { (void)ctx, (void)on; }
static void io_close(void *ctx) { (void)ctx; }

static const connection_io io = {io_write, io_queued, io_set_reading, io_close, NULL, NULL};

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
    char workspace[sizeof dir + 8], data_dir[sizeof dir + 8], file[sizeof dir + 16];
    snprintf(workspace, sizeof workspace, "%s/ws", dir);
    snprintf(data_dir, sizeof data_dir, "%s/data", dir);
    snprintf(file, sizeof file, "%s/ws/a.txt", dir);
    REQUIRE(mkdir(workspace, 0700) == 0);
    FILE *f = fopen(file, "w");
    REQUIRE(f != NULL);
    fputs("text\n", f);
    fclose(f);
    null_log = fopen("/dev/null", "w");
    REQUIRE(null_log != NULL);
    server_options options = {.workspace = workspace, .data_dir = data_dir, .max_message_bytes = MAX_MESSAGE,
                              .log_out = null_log, .log_level = ECP_LOG_ERROR};
    ecp_error err;
    srv = server_new(&loop, &options, &err);
    REQUIRE(srv != NULL);
    atexit(cleanup);
    return 0;
}

static bool method_allowed(const char *method)
{
    static const char *const allowed[] = {"initialized", "ecp/ping", "$/cancelRequest", NULL};
    if (strncmp(method, "chat/", 5) == 0)
        return true;
    for (const char *const *m = allowed; *m; m++)
        if (strcmp(*m, method) == 0)
            return true;
    return false;
}

static bool member_allowed(const json_doc *doc, json_ref ref)
{
    if (json_type_of(doc, ref) != JSON_OBJECT)
        return true;
    json_ref m = json_get(doc, ref, "method");
    if (json_type_of(doc, m) != JSON_STRING)
        return true;
    arena a = ARENA_INIT;
    const char *method;
    size_t len;
    REQUIRE(json_string(doc, m, &a, &method, &len));
    bool ok = strlen(method) == len && method_allowed(method);
    arena_free(&a);
    return ok;
}

static bool line_allowed(const char *line, size_t len)
{
    json_doc doc;
    bool ok = true;
    if (json_doc_parse(&doc, line, len, NULL) == 0) {
        json_ref root = json_root(&doc);
        if (json_type_of(&doc, root) == JSON_ARRAY) {
            for (json_ref e = json_first(&doc, root); e != JSON_NO_REF; e = json_next(&doc, e))
                ok = ok && member_allowed(&doc, e);
        } else {
            ok = member_allowed(&doc, root);
        }
    }
    json_doc_free(&doc);
    return ok;
}

static bool has(const json_doc *doc, json_ref obj, const char *key) { return json_get(doc, obj, key) != JSON_NO_REF; }

/* A message the server must answer: an object with a method and an id (a batch is answered at once). */
static bool is_request(const char *line, size_t len)
{
    json_doc d;
    bool yes = json_doc_parse(&d, line, len, NULL) == 0 && json_type_of(&d, json_root(&d)) == JSON_OBJECT &&
               has(&d, json_root(&d), "method") && has(&d, json_root(&d), "id");
    json_doc_free(&d);
    return yes;
}

static void check_response(const json_doc *doc, json_ref r)
{
    REQUIRE(json_type_of(doc, r) == JSON_OBJECT);
    REQUIRE(json_string_eq(doc, json_get(doc, r, "jsonrpc"), "2.0"));
    json_type id = json_type_of(doc, json_get(doc, r, "id"));
    REQUIRE(id == JSON_STRING || id == JSON_NUMBER || id == JSON_NULL);
    bool result = has(doc, r, "result"), error = has(doc, r, "error");
    REQUIRE(result != error);
    if (error) {
        json_ref e = json_get(doc, r, "error");
        int64_t code;
        REQUIRE(json_int64(doc, json_get(doc, e, "code"), &code) && code < 0);
        REQUIRE(json_type_of(doc, json_get(doc, e, "message")) == JSON_STRING);
    }
}

static void check_output(const buf *out)
{
    if (out->len == 0)
        return;
    framing_decoder d;
    framing_decoder_init(&d, (size_t)1 << 30);
    framing_decoder_feed(&d, out->data, out->len);
    for (;;) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&d, &msg, &len);
        if (st == FRAME_NEED_MORE)
            break;
        REQUIRE(st == FRAME_MESSAGE);
        json_doc doc;
        ecp_error err;
        if (json_doc_parse(&doc, msg, len, &err) != 0) {
            fprintf(stderr, "eca_fuzz: the server wrote invalid JSON (%s): %s\n", err.message, msg);
            __builtin_trap();
        }
        json_ref root = json_root(&doc);
        if (json_type_of(&doc, root) == JSON_ARRAY) {
            for (json_ref e = json_first(&doc, root); e != JSON_NO_REF; e = json_next(&doc, e))
                check_response(&doc, e);
        } else if (has(&doc, root, "method")) {
            REQUIRE(json_string_eq(&doc, json_get(&doc, root, "jsonrpc"), "2.0"));
            REQUIRE(!has(&doc, root, "id"));
        } else {
            check_response(&doc, root);
        }
        json_doc_free(&doc);
        free(msg);
    }
    REQUIRE(d.in.len == d.start);
    framing_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    size_t len = nl ? (size_t)(nl - (const char *)data) : size;
    if (!line_allowed((const char *)data, len))
        return 0;
    buf line = BUF_INIT;
    buf_append(&line, data, len);
    buf_push(&line, '\n');
    peer p = {BUF_INIT};
    connection *conn = server_connection_open(srv, &io, &p, "eca");
    connection_receive(conn, line.data, line.len);
    /* a prompt answers once the store has looked for a key: wait for a request's answer, a little */
    bool request = is_request(line.data, len);
    for (int i = 0; i < 4 || (request && i < ANSWER_WAIT_MS && !strstr(p.out.data ? p.out.data : "", "\"id\""));
         i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        if (i >= 4)
            usleep(1000);
    }
    if (getenv("ECA_FUZZ_PRINT"))
        fwrite(p.out.data ? p.out.data : "", 1, p.out.len, stderr);
    check_output(&p.out);
    connection_close(conn);
    uv_run(&loop, UV_RUN_NOWAIT);
    buf_free(&p.out);
    buf_free(&line);
    return 0;
}
