/* Fuzzing the server's dispatch: the input is what a peer sends.
 *
 * One real server lives for the whole fuzzing process (creating one per input
 * is slow), with a private data directory made once and removed at exit. Each
 * input opens a connection whose transport collects what the server writes,
 * feeds the bytes, lets the loop run a few turns, and closes the connection.
 * Everything the server wrote must be framed in the peer's framing and be
 * valid JSON-RPC: responses with "jsonrpc":"2.0", an id, and exactly one of
 * result or error (a well-formed error object), notifications with a method,
 * batches as non-empty arrays of responses.
 *
 * Methods that touch the file system outside the server's own directory
 * (file/write, file/delete, document/save, opening a document from disk, and
 * the namespaces of services that run programs or reach the network) are not
 * sent: an input that names one is skipped, so the fuzzer cannot damage the
 * machine it runs on. A `shutdown` or `exit` changes the server for good, so
 * after an input that sends one the server is made anew. */
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

#include "arena.h"
#include "buf.h"
#include "framing.h"
#include "json.h"
#include "jsonrpc.h"
#include "server.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define MAX_MESSAGE 1024

static uv_loop_t loop;
static server *srv;
static char data_dir[] = "/tmp/ecpd-dispatch-fuzz-XXXXXX";
static FILE *null_log;

typedef struct peer {
    buf out;
    bool close_requested;
} peer;

static void io_write(void *ctx, const char *data, size_t len) { buf_append(&((peer *)ctx)->out, data, len); }
static size_t io_queued(void *ctx)
{
    (void)ctx;
    return 0; /* the peer reads everything at once */
}
static void io_set_reading(void *ctx, bool on) { (void)ctx, (void)on; }
static void io_close(void *ctx) { ((peer *)ctx)->close_requested = true; }

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
    nftw(data_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void start_server(void)
{
    server_options options = {
        .workspace = NULL,
        .data_dir = data_dir,
        .max_message_bytes = MAX_MESSAGE,
        .log_out = null_log,
        .log_level = ECP_LOG_ERROR,
    };
    ecp_error err;
    srv = server_new(&loop, &options, &err);
    if (!srv) {
        fprintf(stderr, "dispatch_fuzz: server_new: %s\n", err.message);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    REQUIRE(uv_loop_init(&loop) == 0);
    REQUIRE(mkdtemp(data_dir) != NULL);
    null_log = fopen("/dev/null", "w");
    REQUIRE(null_log != NULL);
    start_server();
    atexit(cleanup);
    return 0;
}

/* ---- which inputs are sent --------------------------------------------------------- */

static bool method_allowed(const json_doc *doc, json_ref params, const char *method, bool *resets)
{
    static const char *const denied_namespaces[] = {"git", "terminal", "lsp", "database", "db", "chat", "session",
                                                    "syntax", "agent", "ai", "llm", "provider", "workspace", "search",
                                                    "shell", "process", NULL};
    static const char *const pure_file_methods[] = {"file/pathToUri", "file/uriToPath", "file/getParent",
                                                    "file/getBasename", "file/join", NULL};
    if (strcmp(method, "shutdown") == 0 || strcmp(method, "exit") == 0)
        *resets = true;
    const char *slash = strchr(method, '/');
    if (!slash)
        return true;
    size_t ns_len = (size_t)(slash - method);
    for (const char *const *ns = denied_namespaces; *ns; ns++)
        if (strlen(*ns) == ns_len && strncmp(*ns, method, ns_len) == 0)
            return false;
    if (ns_len == 4 && strncmp(method, "file", 4) == 0) {
        for (const char *const *m = pure_file_methods; *m; m++)
            if (strcmp(*m, method) == 0)
                return true;
        return false;
    }
    if (strcmp(method, "document/save") == 0 || strcmp(method, "document/reload") == 0)
        return false;
    if (strcmp(method, "document/open") == 0)
        return json_type_of(doc, json_get(doc, params, "content")) == JSON_STRING; /* never read from disk */
    return true;
}

static bool member_allowed(const json_doc *doc, json_ref ref, bool *resets)
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
    bool ok = strlen(method) != len || method_allowed(doc, json_get(doc, ref, "params"), method, resets);
    arena_free(&a);
    return ok;
}

/* Decodes the input the way the server will and looks at every method. */
static bool input_allowed(const uint8_t *data, size_t size, bool *resets)
{
    framing_decoder d;
    framing_decoder_init(&d, MAX_MESSAGE);
    framing_decoder_feed(&d, (const char *)data, size);
    bool ok = true;
    for (;;) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&d, &msg, &len);
        if (st == FRAME_NEED_MORE || st == FRAME_BAD_HEADER)
            break;
        if (st != FRAME_MESSAGE)
            continue;
        json_doc doc;
        if (json_doc_parse(&doc, msg, len, NULL) == 0) {
            json_ref root = json_root(&doc);
            if (json_type_of(&doc, root) == JSON_ARRAY) {
                for (json_ref e = json_first(&doc, root); e != JSON_NO_REF; e = json_next(&doc, e))
                    ok = ok && member_allowed(&doc, e, resets);
            } else {
                ok = ok && member_allowed(&doc, root, resets);
            }
            json_doc_free(&doc);
        }
        free(msg);
    }
    framing_decoder_free(&d);
    return ok;
}

/* ---- what the server wrote --------------------------------------------------------- */

static bool has(const json_doc *doc, json_ref obj, const char *key) { return json_get(doc, obj, key) != JSON_NO_REF; }

static void check_response(const json_doc *doc, json_ref r)
{
    REQUIRE(json_type_of(doc, r) == JSON_OBJECT);
    REQUIRE(json_string_eq(doc, json_get(doc, r, "jsonrpc"), "2.0"));
    REQUIRE(!has(doc, r, "method"));
    json_type id = json_type_of(doc, json_get(doc, r, "id"));
    REQUIRE(id == JSON_STRING || id == JSON_NUMBER || id == JSON_NULL);
    bool result = has(doc, r, "result"), error = has(doc, r, "error");
    REQUIRE(result != error);
    if (error) {
        json_ref e = json_get(doc, r, "error");
        REQUIRE(json_type_of(doc, e) == JSON_OBJECT);
        int64_t code;
        REQUIRE(json_int64(doc, json_get(doc, e, "code"), &code));
        REQUIRE(code < 0);
        REQUIRE(json_type_of(doc, json_get(doc, e, "message")) == JSON_STRING);
    }
    REQUIRE(json_length(doc, r) == 3); /* jsonrpc, id, and result or error */
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
        REQUIRE(memchr(msg, '\n', len) == NULL);
        json_doc doc;
        ecp_error err;
        if (json_doc_parse(&doc, msg, len, &err) != 0) {
            fprintf(stderr, "the server wrote invalid JSON (%s): %s\n", err.message, msg);
            __builtin_trap();
        }
        json_ref root = json_root(&doc);
        if (json_type_of(&doc, root) == JSON_ARRAY) {
            REQUIRE(json_length(&doc, root) > 0); /* a batch of notifications only gets no reply */
            for (json_ref e = json_first(&doc, root); e != JSON_NO_REF; e = json_next(&doc, e))
                check_response(&doc, e);
        } else {
            REQUIRE(json_type_of(&doc, root) == JSON_OBJECT);
            if (has(&doc, root, "method")) {
                REQUIRE(json_string_eq(&doc, json_get(&doc, root, "jsonrpc"), "2.0"));
                REQUIRE(json_type_of(&doc, json_get(&doc, root, "method")) == JSON_STRING);
                REQUIRE(!has(&doc, root, "id"));
            } else {
                check_response(&doc, root);
            }
        }
        json_doc_free(&doc);
        free(msg);
    }
    /* the output ends on a message boundary */
    REQUIRE(d.in.len == d.start);
    framing_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bool resets = false;
    if (!input_allowed(data, size, &resets))
        return 0;

    peer p = {BUF_INIT, false};
    connection *conn = server_connection_open(srv, &io, &p, "fuzz");
    connection_receive(conn, (const char *)data, size);
    for (int i = 0; i < 4; i++)
        uv_run(&loop, UV_RUN_NOWAIT);
    if (getenv("DISPATCH_FUZZ_PRINT")) /* to see what an input does */
        fwrite(p.out.data ? p.out.data : "", 1, p.out.len, stderr);
    check_output(&p.out);
    connection_close(conn);
    uv_run(&loop, UV_RUN_NOWAIT);
    buf_free(&p.out);

    if (resets || server_exit_requested(srv, NULL)) {
        server_free(srv);
        uv_run(&loop, UV_RUN_NOWAIT);
        start_server();
    }
    return 0;
}
