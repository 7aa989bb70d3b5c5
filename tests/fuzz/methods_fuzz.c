/* Fuzzing every method of every adapter, through an in-process server.
 *
 * The target knows no method. At start it asks a server for `ecp/methods`,
 * compiles each method's params signature (rpc_sig.h) into the shape of its
 * required fields, and learns what else it needs from the server's own -32602
 * answers ("position.line: required integer"), then from what a second try needs:
 * a method whose params name a key that another method's result holds
 * ("documentId") is tried again after that method. A service is thus fuzzed
 * the day it is registered, with no change here.
 *
 * An input is a sequence of calls. Each call is a header, then bytes of its
 * own that build its params:
 *     u32 method   the first method whose name hashes at or above it (FNV-1a),
 *                  so adding a method moves few inputs to another one
 *     u8  flags    bit 0: params absent; bit 1: any JSON value instead of the
 *                  learned shape; bit 5: the next call goes out without
 *                  waiting for the answer; bit 6: sent as a notification;
 *                  bit 7: cancelled ($/cancelRequest) right after it is sent
 *     u16 length   how many of the following bytes are this call's
 * A byte the params want past the end of their bytes reads as 0, and 0 always
 * means "what the learned shape expects": the required fields, each with a
 * sensible value (an id a previous result gave, a file of the workspace).
 * So a method's header alone is a good seed; other bytes diverge from there:
 * other strings, numbers at the edges, wrong types, missing and extra keys.
 *
 * Every input gets a fresh server, a fresh workspace (a few files under the
 * target's private directory in $TMPDIR, by default /tmp) and one
 * connection. Each request must be answered exactly once, within
 * ANSWER_TIMEOUT_MS, with a well-formed response; notifications must be well
 * formed; the freed server must leave no libuv handle behind, and (libFuzzer's
 * leak check) no memory.
 *
 * What it may touch: every string sent that names a file (an absolute path or
 * a file: URI, also after percent-decoding, also up to a NUL byte) is replaced
 * unless it lies in the workspace, and relative strings cannot climb
 * out with "..". The working directory, HOME, TMPDIR and the XDG directories
 * are private too. Where the kernel has Landlock, the process (and any child
 * a service spawns) also cannot write outside the private directory and the
 * directories libFuzzer writes to, open TCP connections, or signal other
 * processes; without it, the namespaces of services that run programs or
 * reach the network are left out. Methods that end the process or the
 * session (exit, shutdown, a namespace's stop...) are never called.
 *
 * METHODS_FUZZ_SEEDS=DIR writes one seed per method into DIR (the calls that
 * produce what it needs, then the method with its learned params) and exits;
 * METHODS_FUZZ_PRINT=1 prints each call and its answer; METHODS_FUZZ_SHAPES=1
 * prints the learned params.
 *
 * This file is the driver; the params of each call are built in
 * methods_fuzz_params.c. */
#include "methods_fuzz.h"

/* ----- the target's state: made once, by LLVMFuzzerInitialize ----------------------- */

struct methods_fuzz_state G;

void dump_session(void)
{
    if (G.current && G.current->trace.len)
        fprintf(stderr, "methods_fuzz: the calls of this input:\n%.*s\n", (int)G.current->trace.len,
                G.current->trace.data);
}

static uint32_t fnv1a(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static bool vocabulary_has(const char *key)
{
    for (size_t i = 0; i < G.vocabulary_count; i++)
        if (strcmp(G.vocabulary[i], key) == 0)
            return true;
    return false;
}

static void vocabulary_add(const char *key)
{
    if (!key[0] || vocabulary_has(key))
        return;
    G.vocabulary = xrealloc(G.vocabulary, (G.vocabulary_count + 1) * sizeof *G.vocabulary);
    G.vocabulary[G.vocabulary_count++] = xstrdup(key);
}

/* ----- the private directory -------------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

static void remove_tree(const char *path) { nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS); }

static void write_file(const char *dir, const char *name, const char *content, size_t len)
{
    char path[PATH_MAX * 2];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    REQUIRE(f != NULL);
    REQUIRE(fwrite(content, 1, len, f) == len);
    fclose(f);
}

/* The workspace every input starts from. */
static void reset_workspace(void)
{
    remove_tree(G.ws);
    remove_tree(G.data);
    REQUIRE(mkdir(G.ws, 0700) == 0 && mkdir(G.data, 0700) == 0);
    char sub[PATH_MAX * 2];
    snprintf(sub, sizeof sub, "%s/sub", G.ws);
    REQUIRE(mkdir(sub, 0700) == 0);
    snprintf(sub, sizeof sub, "%s/sub/deep", G.ws);
    REQUIRE(mkdir(sub, 0700) == 0);
    static const char a[] = "hello world\nsecond line\n\tindented third\nfoo bar baz foo\n";
    static const char c[] = "int main(void)\n{\n    return 0;\n}\n";
    static const char crlf[] = "one\r\ntwo\r\n\r\nfour";
    static const char utf8[] = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87\n\xc3\x28 invalid\n";
    static const char bin[] = "\x00\x01\x02\xff\xfe binary\n\x00";
    write_file(G.ws, "a.txt", a, sizeof a - 1);
    write_file(G.ws, "empty", "", 0);
    write_file(G.ws, "crlf.txt", crlf, sizeof crlf - 1);
    write_file(G.ws, "utf8.txt", utf8, sizeof utf8 - 1);
    write_file(G.ws, "bin.dat", bin, sizeof bin - 1);
    write_file(G.ws, "sub/b.c", c, sizeof c - 1);
    write_file(G.ws, "sub/deep/c.md", "# title\n\ntext\n", 14);
    REQUIRE(chdir(G.ws) == 0); /* a new directory: the last input may have removed the old one */
    if (!G.ws_real[0])
        REQUIRE(realpath(G.ws, G.ws_real) != NULL);
}

/* ----- the session: one server, one connection --------------------------------------- */

static bool has(const json_doc *doc, json_ref obj, const char *key) { return json_get(doc, obj, key) != JSON_NO_REF; }

static void pool_add(session *s, const char *key, bool is_string, const char *text, size_t len)
{
    for (size_t i = 0; i < s->pool_count; i++) {
        pooled *p = &s->pool[i];
        if (p->is_string == is_string && p->len == len && strcmp(p->key, key) == 0 && memcmp(p->text, text, len) == 0)
            return;
    }
    pooled *p = &s->pool[s->pool_next];
    if (s->pool_count == MAX_POOL) {
        free(p->key);
        free(p->text);
    } else {
        s->pool_count++;
    }
    p->key = xstrdup(key);
    p->is_string = is_string;
    p->text = xstrndup(text, len);
    p->len = len;
    s->pool_next = (s->pool_next + 1) % MAX_POOL;
}

static void note_result_key(session *s, const char *key)
{
    if (!s->learning)
        return;
    for (size_t i = 0; i < s->result_key_count; i++)
        if (strcmp(s->result_keys[i], key) == 0)
            return;
    s->result_keys = xrealloc(s->result_keys, (s->result_key_count + 1) * sizeof *s->result_keys);
    s->result_keys[s->result_key_count++] = xstrdup(key);
}

/* Keeps the strings and numbers of a result, by key, for later calls. */
static void harvest(session *s, const json_doc *doc, json_ref ref, const char *key, int depth)
{
    if (depth > 6)
        return;
    json_type t = json_type_of(doc, ref);
    if (t == JSON_OBJECT) {
        arena a = ARENA_INIT;
        for (json_ref k = json_first(doc, ref); k != JSON_NO_REF; k = json_next(doc, k)) {
            const char *name;
            if (json_string(doc, k, &a, &name, NULL)) {
                note_result_key(s, name);
                harvest(s, doc, k + 1, name, depth + 1); /* the value follows its key */
            }
        }
        arena_free(&a);
    } else if (t == JSON_ARRAY) {
        size_t i = 0;
        for (json_ref e = json_first(doc, ref); e != JSON_NO_REF && i < 8; e = json_next(doc, e), i++)
            harvest(s, doc, e, key, depth + 1);
    } else if (key && (t == JSON_STRING || t == JSON_NUMBER)) {
        size_t len;
        const char *raw = json_raw(doc, ref, &len);
        if (t == JSON_NUMBER) {
            pool_add(s, key, false, raw, len);
        } else {
            arena a = ARENA_INIT;
            const char *str;
            size_t n;
            if (json_string(doc, ref, &a, &str, &n) && n < 4096)
                pool_add(s, key, true, str, n);
            arena_free(&a);
        }
    }
}

static void check_error(const json_doc *doc, json_ref e)
{
    REQUIRE(json_type_of(doc, e) == JSON_OBJECT);
    int64_t code;
    REQUIRE(json_int64(doc, json_get(doc, e, "code"), &code));
    REQUIRE(code < 0);
    REQUIRE(json_type_of(doc, json_get(doc, e, "message")) == JSON_STRING);
}

static void take_message(session *s, const char *msg, size_t len)
{
    REQUIRE(memchr(msg, '\n', len) == NULL);
    json_doc doc;
    ecp_error err;
    if (json_doc_parse(&doc, msg, len, &err) != 0) {
        fprintf(stderr, "methods_fuzz: the server wrote invalid JSON (%s): %.*s\n", err.message, (int)len, msg);
        REQUIRE(!"valid JSON");
    }
    json_ref root = json_root(&doc);
    REQUIRE(json_type_of(&doc, root) == JSON_OBJECT); /* we send no batches */
    REQUIRE(json_string_eq(&doc, json_get(&doc, root, "jsonrpc"), "2.0"));
    if (has(&doc, root, "method")) {
        REQUIRE(json_type_of(&doc, json_get(&doc, root, "method")) == JSON_STRING);
        REQUIRE(!has(&doc, root, "id"));
        json_doc_free(&doc);
        return;
    }
    if (G.print && !s->learning)
        fprintf(stderr, "  <- %.*s\n", (int)(len > 600 ? 600 : len), msg);
    int64_t id;
    if (json_type_of(&doc, json_get(&doc, root, "id")) == JSON_NULL) {
        /* a message that is no valid request (params neither object nor
         * array), which is answered, with no id, even without an id */
        check_error(&doc, json_get(&doc, root, "error"));
        REQUIRE(json_length(&doc, root) == 3);
        json_doc_free(&doc);
        return;
    }
    REQUIRE(json_int64(&doc, json_get(&doc, root, "id"), &id));
    REQUIRE(id > 0 && id < s->next_id); /* an id we sent */
    REQUIRE((size_t)id < s->answers_cap && s->answers[id] == 0); /* answered once */
    s->answers[id]++;
    s->unanswered--;
    bool result = has(&doc, root, "result"), error = has(&doc, root, "error");
    REQUIRE(result != error);
    REQUIRE(json_length(&doc, root) == 3);
    free(s->last_message);
    s->last_message = NULL;
    s->last_code = 0;
    if (error) {
        json_ref e = json_get(&doc, root, "error");
        check_error(&doc, e);
        int64_t code;
        json_int64(&doc, json_get(&doc, e, "code"), &code);
        s->last_code = (int)code;
        arena a = ARENA_INIT;
        const char *m;
        size_t n;
        if (json_string(&doc, json_get(&doc, e, "message"), &a, &m, &n))
            s->last_message = xstrndup(m, n);
        arena_free(&a);
    } else {
        json_ref r = json_get(&doc, root, "result");
        size_t rlen;
        const char *raw = json_raw(&doc, r, &rlen);
        buf_clear(&s->last_result);
        buf_append(&s->last_result, raw, rlen);
        harvest(s, &doc, r, NULL, 0);
    }
    json_doc_free(&doc);
}

static void io_write(void *ctx, const char *data, size_t len)
{
    session *s = ctx;
    framing_decoder_feed(&s->output, data, len);
    for (;;) {
        char *msg;
        size_t n;
        frame_status st = framing_decoder_next(&s->output, &msg, &n);
        if (st == FRAME_NEED_MORE)
            return;
        REQUIRE(st == FRAME_MESSAGE);
        take_message(s, msg, n);
        free(msg);
    }
}
static size_t io_queued(void *ctx)
{
    (void)ctx;
    return 0; /* the peer reads everything at once */
}
static void io_set_reading(void *ctx, bool on) { (void)ctx, (void)on; }
static void io_close(void *ctx)
{
    (void)ctx;
    REQUIRE(!"the server dropped a client that sends only well-framed messages");
}

static const connection_io io = {io_write, io_queued, io_set_reading, io_close, NULL, NULL};

static void tick_cb(uv_timer_t *t) { (void)t; }

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void forget_result_keys(session *s)
{
    for (size_t k = 0; k < s->result_key_count; k++)
        free(s->result_keys[k]);
    s->result_key_count = 0;
}

static void session_begin(session *s, bool learning)
{
    memset(s, 0, sizeof *s);
    s->learning = learning;
    s->next_id = 1;
    framing_decoder_init(&s->output, (size_t)1 << 30);
    reset_workspace();
    server_options options = {
        .workspace = G.ws, .data_dir = G.data, .log_out = G.null_log, .log_level = ECP_LOG_ERROR,
    };
    ecp_error err;
    s->srv = server_new(&G.loop, &options, &err);
    if (!s->srv) {
        fprintf(stderr, "methods_fuzz: server_new: %s\n", err.message);
        abort();
    }
    s->conn = server_connection_open(s->srv, &io, s, "fuzz");
    G.current = s;
}

static void wait_answers(session *s, int64_t id, const char *method);

static void session_end(session *s)
{
    wait_answers(s, 0, "a request sent without waiting");
    /* Work still in flight (a notification's, which nothing waits for) ends
     * first, as it would for a client that stays: the services do not yet
     * release the calls of work they drop at teardown, and the leak would
     * hide everything else. METHODS_FUZZ_TEARDOWN_IN_FLIGHT=1 shows it. */
    long long deadline = now_ms() + ANSWER_TIMEOUT_MS;
    while (!G.teardown_in_flight && G.loop.active_reqs.count > 0 && now_ms() < deadline) {
        uv_timer_start(&G.tick, tick_cb, 10, 0);
        uv_run(&G.loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&G.tick);
    connection_close(s->conn);
    server_free(s->srv);
    /* what the services still had running comes back and goes */
    deadline = now_ms() + ANSWER_TIMEOUT_MS;
    while (uv_loop_alive(&G.loop) && now_ms() < deadline) {
        uv_timer_start(&G.tick, tick_cb, 10, 0);
        uv_run(&G.loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&G.tick);
    REQUIRE(!uv_loop_alive(&G.loop)); /* the server left no handle behind */
    framing_decoder_free(&s->output);
    for (size_t i = 0; i < s->pool_count; i++)
        free(s->pool[i].key), free(s->pool[i].text);
    forget_result_keys(s);
    free(s->result_keys);
    free(s->answers);
    free(s->last_message);
    buf_free(&s->last_result);
    buf_free(&s->trace);
    G.current = NULL;
}

static void send_text(session *s, const buf *msg)
{
    connection_receive(s->conn, msg->data, msg->len);
}

/* Runs the loop until request id is answered, or with id 0 every request. */
static void wait_answers(session *s, int64_t id, const char *method)
{
    long long deadline = now_ms() + ANSWER_TIMEOUT_MS;
    while (id ? s->answers[id] == 0 : s->unanswered > 0) {
        if (now_ms() > deadline) {
            fprintf(stderr, "methods_fuzz: %s was not answered within %d ms\n", method, ANSWER_TIMEOUT_MS);
            REQUIRE(!"every request is answered");
        }
        uv_timer_start(&G.tick, tick_cb, 10, 0);
        uv_run(&G.loop, UV_RUN_ONCE);
    }
    uv_timer_stop(&G.tick);
}

/* Sends one call and, unless told not to wait, runs the loop until it is
 * answered (a notification: a few turns). params is JSON text, or NULL for
 * none. */
static void session_call(session *s, const method_info *m, const char *params, size_t params_len, bool notify,
                         bool cancel, bool wait)
{
    int64_t id = notify ? 0 : s->next_id++;
    if (!notify && (size_t)id >= s->answers_cap) {
        size_t cap = s->answers_cap ? s->answers_cap * 2 : 64;
        s->answers = xrealloc(s->answers, cap);
        memset(s->answers + s->answers_cap, 0, cap - s->answers_cap);
        s->answers_cap = cap;
    }
    buf msg = BUF_INIT;
    json_writer w;
    jw_init(&w, &msg);
    jw_object_begin(&w);
    jw_key_string(&w, "jsonrpc", "2.0");
    if (!notify)
        jw_key_int(&w, "id", id);
    jw_key_string(&w, "method", m->name);
    if (params) {
        jw_key(&w, "params");
        jw_raw(&w, params, params_len);
    }
    jw_object_end(&w);
    buf_append_str(&s->trace, "  ");
    buf_append(&s->trace, msg.data, msg.len > 2000 ? 2000 : msg.len);
    buf_push(&s->trace, '\n');
    if (G.print && !s->learning)
        fprintf(stderr, "-> %.*s\n", (int)(msg.len > 600 ? 600 : msg.len), msg.data);
    buf_push(&msg, '\n');
    s->last_code = 0;
    if (!notify)
        s->unanswered++;
    send_text(s, &msg);
    if (cancel && !notify) {
        buf_clear(&msg);
        buf_appendf(&msg, "{\"jsonrpc\":\"2.0\",\"method\":\"$/cancelRequest\",\"params\":{\"id\":%lld}}\n",
                    (long long)id);
        send_text(s, &msg);
    }
    buf_free(&msg);
    if (notify || !wait) {
        for (int i = 0; i < 4; i++)
            uv_run(&G.loop, UV_RUN_NOWAIT);
        return;
    }
    wait_answers(s, id, m->name);
}

/* Builds the params of one call from its bytes. */
static void build_params(session *s, const method_info *m, input *in, uint8_t flags, buf *out)
{
    json_writer w;
    jw_init(&w, out);
    if (flags & 0x02)
        gen_any(s, in, 0, &w);
    else
        gen_value(s, in, &m->params, NULL, 0, &w);
}

/* ----- learning the methods' params ------------------------------------------------- */

static shape_type parse_type(const char *s)
{
    if (strncmp(s, "a ", 2) == 0)
        s += 2;
    else if (strncmp(s, "an ", 3) == 0)
        s += 3;
    if (strncmp(s, "non-empty ", 10) == 0)
        s += 10;
    static const struct {
        const char *name;
        shape_type type;
    } names[] = {{"string", T_STRING}, {"integer", T_INTEGER}, {"number", T_NUMBER}, {"boolean", T_BOOLEAN},
                 {"object", T_OBJECT}, {"array", T_ARRAY}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i].name);
        if (strncmp(s, names[i].name, n) == 0 && !((s[n] >= 'a' && s[n] <= 'z') || s[n] == '_'))
            return names[i].type;
    }
    return T_ANY;
}

static shape *shape_field(shape *obj, const char *key, size_t key_len)
{
    if (obj->type != T_OBJECT) {
        obj->type = T_OBJECT;
    }
    for (size_t i = 0; i < obj->field_count; i++)
        if (strlen(obj->fields[i].key) == key_len && strncmp(obj->fields[i].key, key, key_len) == 0)
            return &obj->fields[i];
    obj->fields = xrealloc(obj->fields, (obj->field_count + 1) * sizeof *obj->fields);
    shape *f = &obj->fields[obj->field_count++];
    memset(f, 0, sizeof *f);
    f->key = xstrndup(key, key_len);
    f->type = T_ANY;
    return f;
}

static shape *shape_element(shape *arr)
{
    arr->type = T_ARRAY;
    if (!arr->element) {
        arr->element = xcalloc(1, sizeof *arr->element);
        arr->element->type = T_OBJECT;
    }
    return arr->element;
}

/* The required fields of a method's compiled params signature (rpc_sig.h),
 * as learning from the server's answers would find them one by one: a
 * method starts with its whole declared shape. Alternatives take the first;
 * a literal is a string. Bounded by the signature's depth. */
static void shape_from_signature(shape *sh, const ecp_sig *sig, uint32_t node)
{
    const ecp_sig_node *n = &sig->nodes[node];
    if (n->type == ECP_SIG_UNION)
        n = &sig->nodes[node = n->child];
    switch (n->type) {
    case ECP_SIG_STRING:
    case ECP_SIG_LITERAL: sh->type = T_STRING; break;
    case ECP_SIG_INTEGER: sh->type = T_INTEGER; break;
    case ECP_SIG_NUMBER: sh->type = T_NUMBER; break;
    case ECP_SIG_BOOLEAN: sh->type = T_BOOLEAN; break;
    case ECP_SIG_OBJECT:
    case ECP_SIG_MAP: sh->type = T_OBJECT; break;
    case ECP_SIG_ARRAY: shape_from_signature(shape_element(sh), sig, n->child); return;
    case ECP_SIG_ANY:
    case ECP_SIG_UNION: sh->type = T_ANY; return;
    }
    if (n->type != ECP_SIG_OBJECT)
        return;
    for (uint32_t f = n->child; f != ECP_SIG_NONE; f = sig->nodes[f].next)
        if (!sig->nodes[f].optional)
            shape_from_signature(shape_field(sh, sig->nodes[f].name, strlen(sig->nodes[f].name)), sig, f);
}

/* Learns from "<path>: required <type>", "<path>: expected <type>, got ..."
 * and "<path>: must be a <type>", where path is "a.b[0].c". Returns true when
 * the shape changed. */
static bool learn_from(shape *root, const char *message)
{
    const char *colon = strstr(message, ": ");
    if (!colon)
        return false;
    const char *what = colon + 2;
    shape_type type;
    if (strncmp(what, "required ", 9) == 0 || strncmp(what, "expected ", 9) == 0)
        type = parse_type(what + 9);
    else if (strncmp(what, "must be ", 8) == 0)
        type = parse_type(what + 8);
    else
        return false;
    if (type == T_ANY)
        return false;
    shape *node = root;
    for (const char *p = message; p < colon;) {
        const char *end = p;
        while (end < colon && *end != '.' && *end != '[')
            end++;
        if (end == p)
            return false;
        node = shape_field(node, p, (size_t)(end - p));
        while (end < colon && *end == '[') {
            const char *close = memchr(end, ']', (size_t)(colon - end));
            if (!close)
                return false;
            node = shape_element(node);
            end = close + 1;
        }
        p = end < colon && *end == '.' ? end + 1 : end;
    }
    if (node->type == type)
        return false;
    node->type = type;
    if (type == T_ARRAY && !node->element)
        shape_element(node); /* try one element: its fields are learned next */
    return true;
}

static bool method_ends_things(const char *name)
{
    static const char *const enders[] = {"exit", "shutdown", "stop", "quit", "restart", NULL};
    const char *last = strrchr(name, '/');
    last = last ? last + 1 : name;
    for (const char *const *e = enders; *e; e++)
        if (strcmp(last, *e) == 0)
            return true;
    return false;
}

/* Without Landlock: namespaces of services that run programs or reach the
 * network, which the string checks above cannot contain. */
static bool namespace_unsandboxed_risky(const char *name)
{
    static const char *const risky[] = {"git", "terminal", "lsp", "database", "db", "chat", "session", "agent", "ai",
                                        "llm", "provider", "shell", "process", "run", "debug", "http", "net",
                                        "mcp", "acp", NULL};
    const char *slash = strchr(name, '/');
    if (!slash)
        return false;
    size_t n = (size_t)(slash - name);
    for (const char *const *r = risky; *r; r++)
        if (strlen(*r) == n && strncmp(*r, name, n) == 0)
            return true;
    return false;
}

/* One call with the params learned so far, nothing from an input. */
static void call_placeholder(session *s, const method_info *m)
{
    input none = {NULL, 0, 0};
    buf params = BUF_INIT;
    build_params(s, m, &none, 0, &params);
    session_call(s, m, params.data, params.len, false, false, true);
    buf_free(&params);
}

static void learn_method(session *s, method_info *m)
{
    for (int i = 0; i < LEARN_TRIES; i++) {
        forget_result_keys(s);
        call_placeholder(s, m);
        if (s->last_code == 0) {
            for (size_t k = 0; k < s->result_key_count; k++) {
                vocabulary_add(s->result_keys[k]);
                bool known = false;
                for (size_t j = 0; j < m->produce_count && !known; j++)
                    known = strcmp(m->produces[j], s->result_keys[k]) == 0;
                if (!known) {
                    m->produces = xrealloc(m->produces, (m->produce_count + 1) * sizeof *m->produces);
                    m->produces[m->produce_count++] = xstrdup(s->result_keys[k]);
                }
            }
        }
        forget_result_keys(s);
        if (s->last_code != -32602 || !s->last_message || !learn_from(&m->params, s->last_message))
            return;
    }
}

static void shape_keys(const shape *sh, void (*fn)(const char *key, void *ctx), void *ctx)
{
    if (sh->key)
        fn(sh->key, ctx);
    for (size_t i = 0; i < sh->field_count; i++)
        shape_keys(&sh->fields[i], fn, ctx);
    if (sh->element)
        shape_keys(sh->element, fn, ctx);
}

typedef struct prelude_ctx {
    method_info *m;
    size_t self;
} prelude_ctx;

/* The first other method whose results hold key is called before m. */
static void add_producer(const char *key, void *opaque)
{
    prelude_ctx *ctx = opaque;
    vocabulary_add(key);
    for (size_t p = 0; p < G.method_count; p++) {
        if (p == ctx->self)
            continue;
        const method_info *producer = &G.methods[p];
        for (size_t k = 0; k < producer->produce_count; k++) {
            if (strcmp(producer->produces[k], key) != 0)
                continue;
            for (size_t i = 0; i < ctx->m->prelude_count; i++)
                if (ctx->m->prelude[i] == p)
                    return;
            ctx->m->prelude = xrealloc(ctx->m->prelude, (ctx->m->prelude_count + 1) * sizeof *ctx->m->prelude);
            ctx->m->prelude[ctx->m->prelude_count++] = p;
            return;
        }
    }
}

static void print_shape(const shape *sh, int depth)
{
    static const char *const names[] = {"any", "string", "integer", "number", "boolean", "object", "array"};
    fprintf(stderr, "%*s%s: %s\n", depth * 2, "", sh->key ? sh->key : "[]", names[sh->type]);
    for (size_t i = 0; i < sh->field_count; i++)
        print_shape(&sh->fields[i], depth + 1);
    if (sh->element)
        print_shape(sh->element, depth + 1);
}

static void learn_all(void)
{
    /* first pass: all methods in one session, in table order */
    session s;
    session_begin(&s, true);
    for (size_t i = 0; i < G.method_count; i++)
        learn_method(&s, &G.methods[i]);
    session_end(&s);
    /* second pass: each method after the methods producing what it needs */
    for (size_t i = 0; i < G.method_count; i++) {
        method_info *m = &G.methods[i];
        prelude_ctx ctx = {m, i};
        shape_keys(&m->params, add_producer, &ctx);
        session_begin(&s, true);
        for (size_t p = 0; p < m->prelude_count; p++)
            call_placeholder(&s, &G.methods[m->prelude[p]]);
        learn_method(&s, m);
        session_end(&s);
        ctx.m = m; /* fields learned just now may need more producers */
        shape_keys(&m->params, add_producer, &ctx);
    }
    if (getenv("METHODS_FUZZ_SHAPES")) {
        for (size_t i = 0; i < G.method_count; i++) {
            fprintf(stderr, "%s (after", G.methods[i].name);
            for (size_t p = 0; p < G.methods[i].prelude_count; p++)
                fprintf(stderr, " %s", G.methods[G.methods[i].prelude[p]].name);
            fprintf(stderr, ")\n");
            print_shape(&G.methods[i].params, 1);
        }
    }
}

/* ----- finding the methods ------------------------------------------------------------ */

static int by_hash(const void *a, const void *b)
{
    uint32_t x = G.methods[*(const size_t *)a].hash, y = G.methods[*(const size_t *)b].hash;
    return x < y ? -1 : x > y;
}

static const method_info *pick_method(uint32_t selector)
{
    size_t lo = 0, hi = G.method_count;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (G.methods[G.ring[mid]].hash < selector)
            lo = mid + 1;
        else
            hi = mid;
    }
    return &G.methods[G.ring[lo == G.method_count ? 0 : lo]];
}

/* Asks a server for ecp/methods. */
static void find_methods(void)
{
    session s;
    session_begin(&s, true);
    method_info list = {.name = "ecp/methods"};
    session_call(&s, &list, NULL, 0, false, false, true);
    REQUIRE(s.last_code == 0);
    json_doc doc;
    REQUIRE(json_doc_parse(&doc, s.last_result.data, s.last_result.len, NULL) == 0);
    json_ref methods = json_get(&doc, json_root(&doc), "methods");
    arena a = ARENA_INIT;
    for (json_ref e = json_first(&doc, methods); e != JSON_NO_REF; e = json_next(&doc, e)) {
        const char *name;
        REQUIRE(json_string(&doc, json_get(&doc, e, "name"), &a, &name, NULL));
        if (method_ends_things(name) || (!G.sandboxed && namespace_unsandboxed_risky(name)))
            continue;
        G.methods = xrealloc(G.methods, (G.method_count + 1) * sizeof *G.methods);
        method_info *m = &G.methods[G.method_count++];
        memset(m, 0, sizeof *m);
        m->name = xstrdup(name);
        m->hash = fnv1a(m->name);
        m->params.type = T_OBJECT;
        const char *params;
        ecp_sig sig;
        if (json_string(&doc, json_get(&doc, e, "params"), &a, &params, NULL) &&
            ecp_sig_compile(params, &sig, NULL) == 0) {
            if (sig.nodes[sig.root].type == ECP_SIG_OBJECT)
                shape_from_signature(&m->params, &sig, sig.root);
            ecp_sig_free(&sig);
        }
    }
    arena_free(&a);
    json_doc_free(&doc);
    session_end(&s);
    REQUIRE(G.method_count > 0);
    G.ring = xcalloc(G.method_count, sizeof *G.ring);
    for (size_t i = 0; i < G.method_count; i++)
        G.ring[i] = i;
    qsort(G.ring, G.method_count, sizeof *G.ring, by_hash);
}

/* ----- the sandbox ---------------------------------------------------------------------- */

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

/* The ruleset attributes of Landlock ABI 6, which older headers lack. */
struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net;
    uint64_t scoped;
};
#define FS_TRUNCATE (1ULL << 14)
#define NET_BIND_TCP (1ULL << 0)
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define SCOPE_SIGNAL (1ULL << 1)

static void allow_beneath(int ruleset, const char *path, uint64_t access)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
        access &= LANDLOCK_ACCESS_FS_WRITE_FILE | FS_TRUNCATE;
    struct landlock_path_beneath_attr rule = {.allowed_access = access, .parent_fd = fd};
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) < 0)
        fprintf(stderr, "methods_fuzz: cannot allow writes under %s: %s\n", path, strerror(errno));
    close(fd);
}

/* Writes only under the private directory and the places libFuzzer writes
 * to; no TCP; no signals to processes outside. False when the kernel cannot. */
static bool enter_sandbox(char **writable, size_t count)
{
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1)
        return false;
    uint64_t fs = LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
                  LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                  LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
                  LANDLOCK_ACCESS_FS_MAKE_SYM;
    if (abi >= 2)
        fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        fs |= FS_TRUNCATE;
    struct ruleset_attr attr = {.handled_access_fs = fs};
    if (abi >= 4)
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
    if (abi >= 6)
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL;
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
    if (ruleset < 0)
        return false;
    for (size_t i = 0; i < count; i++)
        allow_beneath(ruleset, writable[i], fs);
    allow_beneath(ruleset, "/dev/null", fs);
    bool ok = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
    close(ruleset);
    return ok;
}

/* ----- start ------------------------------------------------------------------------------ */

/* The private directory is removed by a child that waits for this process
 * to end, however it ends (a crash too), and that stays outside the sandbox,
 * in which the directory itself cannot be removed. */
static void start_cleaner(void)
{
    int fds[2];
    REQUIRE(pipe2(fds, O_CLOEXEC) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR);
        dup2(null, 0), dup2(null, 1), dup2(null, 2);
        for (int fd = 3; fd < 1024; fd++)
            if (fd != fds[0])
                close(fd);
        setsid(); /* a Ctrl-C for the fuzzer is not for the cleaner */
        char c;
        while (read(fds[0], &c, 1) < 0 && errno == EINTR)
            ;
        remove_tree(G.root);
        _exit(0);
    }
    close(fds[0]); /* fds[1] stays open until this process ends */
}

static char *absolute(const char *cwd, const char *path)
{
    buf b = BUF_INIT;
    if (path[0] != '/')
        buf_appendf(&b, "%s/", cwd);
    buf_append_str(&b, path);
    return buf_detach(&b);
}

static char *dir_of(const char *path)
{
    char *d = xstrdup(path);
    char *slash = strrchr(d, '/');
    if (slash && slash != d)
        *slash = '\0';
    else if (slash)
        slash[1] = '\0';
    return d;
}

/* The working directory becomes private, so libFuzzer's paths are made
 * absolute first, and crashes go to where it was unless told otherwise.
 * Collects the directories libFuzzer writes to. */
static void fix_arguments(int *argc, char ***argv, const char *cwd, char ***writable, size_t *count)
{
    static const char *const path_flags[] = {"-artifact_prefix=", "-exact_artifact_path=", "-merge_control_file=",
                                             "-dict=", "-features_dir=", NULL};
    int n = *argc;
    char **out = xcalloc((size_t)n + 2, sizeof *out);
    bool has_prefix = false;
    size_t w = 0;
    *writable = xcalloc((size_t)n + 5, sizeof **writable);
    for (int i = 0; i < n; i++) {
        const char *arg = (*argv)[i];
        out[i] = (char *)arg;
        if (i == 0)
            continue;
        if (arg[0] != '-') {
            out[i] = absolute(cwd, arg);
            struct stat st;
            if (stat(out[i], &st) == 0 && S_ISDIR(st.st_mode))
                (*writable)[w++] = out[i];
            continue;
        }
        for (const char *const *f = path_flags; *f; f++) {
            size_t fl = strlen(*f);
            if (strncmp(arg, *f, fl) != 0 || !arg[fl])
                continue;
            char *value = absolute(cwd, arg + fl);
            buf b = BUF_INIT;
            buf_append(&b, arg, fl);
            buf_append_str(&b, value);
            out[i] = buf_detach(&b);
            if (strcmp(*f, "-artifact_prefix=") == 0)
                has_prefix = true;
            if (strcmp(*f, "-features_dir=") == 0) {
                (*writable)[w++] = value;
                continue;
            }
            if (strcmp(*f, "-dict=") != 0)
                (*writable)[w++] = dir_of(value);
            free(value);
        }
    }
    if (!has_prefix) {
        buf b = BUF_INIT;
        buf_appendf(&b, "-artifact_prefix=%s/", cwd);
        out[n++] = buf_detach(&b);
        (*writable)[w++] = xstrdup(cwd);
    }
    out[n] = NULL;
    *argc = n;
    *argv = G.argv = out; /* kept for the whole run: libFuzzer reads them later */
    *count = w;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    G.print = getenv("METHODS_FUZZ_PRINT") != NULL;
    G.teardown_in_flight = getenv("METHODS_FUZZ_TEARDOWN_IN_FLIGHT") != NULL;
    char cwd[PATH_MAX];
    REQUIRE(getcwd(cwd, sizeof cwd) != NULL);
    /* TMPDIR: in the processes libFuzzer starts to merge, the private
     * directory of the process that started them, the one place they may
     * write to */
    const char *tmp = getenv("TMPDIR") && getenv("TMPDIR")[0] == '/' ? getenv("TMPDIR") : "/tmp";
    snprintf(G.root, sizeof G.root, "%s/ecpd-methods-fuzz-XXXXXX", tmp);
    REQUIRE(mkdtemp(G.root) != NULL);
    start_cleaner();
    snprintf(G.ws, sizeof G.ws, "%s/ws", G.root);
    snprintf(G.data, sizeof G.data, "%s/data", G.root);
    static const char *const dirs[] = {"home", "tmp", "config", "cache", "share", "run"};
    static const char *const vars[] = {"HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME",
                                       "XDG_RUNTIME_DIR"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", G.root, dirs[i]);
        REQUIRE(mkdir(path, 0700) == 0);
        setenv(vars[i], path, 1);
    }

    fix_arguments(argc, argv, cwd, &G.writable, &G.writable_count);
    G.writable[G.writable_count++] = G.root;
    char *seeds = getenv("METHODS_FUZZ_SEEDS") ? absolute(cwd, getenv("METHODS_FUZZ_SEEDS")) : NULL;
    if (seeds)
        G.writable[G.writable_count++] = seeds;
    G.sandboxed = enter_sandbox(G.writable, G.writable_count);
    if (!G.sandboxed)
        fprintf(stderr, "methods_fuzz: no Landlock here: the namespaces of services that run programs or "
                        "reach the network are not fuzzed\n");

    reset_workspace();
    G.null_log = fopen("/dev/null", "w");
    REQUIRE(G.null_log != NULL);
    REQUIRE(uv_loop_init(&G.loop) == 0);
    uv_timer_init(&G.loop, &G.tick);
    uv_unref((uv_handle_t *)&G.tick);

    find_methods();
    learn_all();
    fprintf(stderr, "methods_fuzz: %zu methods, %zu keys%s\n", G.method_count, G.vocabulary_count,
            G.sandboxed ? ", in a Landlock sandbox" : "");

    if (seeds) {
        for (size_t i = 0; i < G.method_count; i++) {
            const method_info *m = &G.methods[i];
            buf seed = BUF_INIT;
            for (size_t p = 0; p <= m->prelude_count; p++) {
                uint32_t h = G.methods[p < m->prelude_count ? m->prelude[p] : i].hash;
                uint8_t header[7] = {(uint8_t)h, (uint8_t)(h >> 8), (uint8_t)(h >> 16), (uint8_t)(h >> 24), 0, 0, 0};
                buf_append(&seed, (const char *)header, sizeof header);
            }
            char path[PATH_MAX * 2];
            snprintf(path, sizeof path, "%s/%s", seeds, m->name);
            for (char *c = path + strlen(seeds) + 1; *c; c++)
                if (*c == '/')
                    *c = '_';
            FILE *f = fopen(path, "wb");
            REQUIRE(f != NULL);
            fwrite(seed.data, 1, seed.len, f);
            fclose(f);
            buf_free(&seed);
        }
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size, 0};
    session s;
    session_begin(&s, false);
    for (int n = 0; n < MAX_CALLS && in.at < in.size; n++) {
        const method_info *m = pick_method(take_u32(&in));
        uint8_t flags = take_u8(&in);
        size_t len = take_u16(&in);
        input own = {in.data + in.at, 0, 0};
        own.size = take_bytes(&in, len, &own.data);
        buf params = BUF_INIT;
        if (!(flags & 0x01))
            build_params(&s, m, &own, flags, &params);
        session_call(&s, m, flags & 0x01 ? NULL : params.data, params.len, flags & 0x40, flags & 0x80,
                     !(flags & 0x20));
        buf_free(&params);
    }
    session_end(&s);
    return 0;
}
