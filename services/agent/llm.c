/* llm: see llm.h. libcurl's multi interface tells us which sockets to watch
 * (CURLMOPT_SOCKETFUNCTION: one uv_poll_t each) and when to call it back
 * (CURLMOPT_TIMERFUNCTION: one uv_timer_t); the loop drives every transfer. */
#include "llm.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "arena.h"
#include "json.h"
#include "llm_curl.h"

#define LLM_MAX_ATTEMPTS 3
#define LLM_RETRY_BASE_MS 200
#define LLM_ERROR_BODY_MAX 2048
/* How long one turn of the loop may spend reading a request's stream: a
 * model that streams faster than that waits, in libcurl and in the socket,
 * for the next turn, so answers to the clients go out between the slices. */
#define LLM_SLICE_NS ((uint64_t)2 * 1000000)

struct llm_client {
    uv_loop_t *loop;
    CURLM *multi;
    uv_timer_t *timer; /* heap: closes after the client is gone */
    llm_request *requests;
};

typedef struct socket_watch {
    uv_poll_t poll;
    curl_socket_t fd;
    llm_client *client;
} socket_watch;

struct llm_request {
    llm_client *client;
    llm_request *next, *prev;
    llm_api api;
    char *url, *api_key, *body;
    llm_callbacks cb;
    void *ctx;
    CURL *easy;
    struct curl_slist *headers;
    uv_timer_t *retry_timer;
    int attempts;
    /* the stream of the current attempt */
    long http_status;
    buf line;           /* the SSE line being read */
    buf event_data;     /* data: lines of the event being read */
    buf event_name;
    buf error_body;     /* a non-200 answer's body */
    char *error;        /* why the stream failed (set inside the write callback) */
    bool delivered;     /* something reached the callbacks: no retry from here */
    bool ended;         /* the end marker arrived */
    bool sse, sse_checked; /* LLM_API_JSONRPC: the answer is an event stream */
    buf body_in;           /* LLM_API_JSONRPC: a JSON answer's body */
    llm_answer answer;
    /* Reading in slices: the stream's bytes that arrived in a turn whose
     * slice was spent wait in backlog, libcurl holds the rest (held), and
     * resume takes them up in the next turns. */
    buf backlog;
    bool held;             /* libcurl paused by the slice */
    bool paused;           /* libcurl paused by llm_request_pause */
    uint64_t slice_turn;   /* the loop's time when the slice began */
    uint64_t slice_end;    /* uv_hrtime() */
    uv_idle_t *resume;     /* heap: closes after the request is gone */
    long anthropic_block_call[64]; /* content block index -> call index + 1 */
    long openai_index_call[64];    /* tool_calls[].index -> call index + 1 */
};

/* ----- the loop side of libcurl ---------------------------------------------------------- */

static void check_done(llm_client *c);

static void poll_closed(uv_handle_t *h) { free(h->data); }

static void on_poll(uv_poll_t *h, int status, int events)
{
    socket_watch *w = h->data;
    int flags = 0;
    if (status < 0)
        flags = CURL_CSELECT_ERR;
    if (events & UV_READABLE)
        flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE)
        flags |= CURL_CSELECT_OUT;
    int running;
    llm_client *c = w->client;
    curl_multi_socket_action(c->multi, w->fd, flags, &running);
    check_done(c);
}

static int socket_cb(CURL *easy, curl_socket_t s, int action, void *userp, void *socketp)
{
    (void)easy;
    llm_client *c = userp;
    socket_watch *w = socketp;
    if (action == CURL_POLL_REMOVE) {
        if (w) {
            uv_poll_stop(&w->poll);
            uv_close((uv_handle_t *)&w->poll, poll_closed);
            curl_multi_assign(c->multi, s, NULL);
        }
        return 0;
    }
    if (!w) {
        w = xcalloc(1, sizeof *w);
        w->fd = s;
        w->client = c;
        uv_poll_init_socket(c->loop, &w->poll, s);
        w->poll.data = w;
        curl_multi_assign(c->multi, s, w);
    }
    int events = 0;
    if (action == CURL_POLL_IN || action == CURL_POLL_INOUT)
        events |= UV_READABLE;
    if (action == CURL_POLL_OUT || action == CURL_POLL_INOUT)
        events |= UV_WRITABLE;
    uv_poll_start(&w->poll, events, on_poll);
    return 0;
}

static void on_timeout(uv_timer_t *t)
{
    llm_client *c = t->data;
    int running;
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(c);
}

static int timer_cb(CURLM *multi, long timeout_ms, void *userp)
{
    (void)multi;
    llm_client *c = userp;
    if (timeout_ms < 0)
        uv_timer_stop(c->timer);
    else
        uv_timer_start(c->timer, on_timeout, (uint64_t)timeout_ms, 0);
    return 0;
}

llm_client *llm_client_new(uv_loop_t *loop, ecp_error *err)
{
    if (llm_curl_load(err) < 0)
        return NULL;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    llm_client *c = xcalloc(1, sizeof *c);
    c->loop = loop;
    c->multi = curl_multi_init();
    c->timer = xmalloc(sizeof *c->timer);
    uv_timer_init(loop, c->timer);
    c->timer->data = c;
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    return c;
}

static void request_free(llm_request *r);

void llm_client_free(llm_client *self)
{
    if (!self)
        return;
    while (self->requests)
        llm_request_cancel(self->requests);
    curl_multi_cleanup(self->multi);
    uv_close((uv_handle_t *)self->timer, (uv_close_cb)free);
    free(self);
}

/* ----- answers ------------------------------------------------------------------------- */

void llm_answer_free(llm_answer *a)
{
    buf_free(&a->text);
    for (size_t i = 0; i < a->call_count; i++) {
        free(a->calls[i].id);
        free(a->calls[i].name);
        buf_free(&a->calls[i].arguments);
    }
    free(a->calls);
    free(a->session_id);
    memset(a, 0, sizeof *a);
}

static llm_tool_call *add_call(llm_answer *a, const char *id, size_t id_len, const char *name, size_t name_len)
{
    a->calls = xrealloc(a->calls, (a->call_count + 1) * sizeof *a->calls);
    llm_tool_call *call = &a->calls[a->call_count++];
    memset(call, 0, sizeof *call);
    call->id = id ? xstrndup(id, id_len) : xstrdup("");
    call->name = name ? xstrndup(name, name_len) : xstrdup("");
    return call;
}

/* ----- the stream ---------------------------------------------------------------------- */

static void fail_stream(llm_request *r, const char *fmt, const char *detail)
{
    if (r->error)
        return;
    buf b = BUF_INIT;
    buf_appendf(&b, fmt, detail ? detail : "");
    r->error = buf_detach(&b);
}

static void deliver_text(llm_request *r, const char *s, size_t n)
{
    if (!n)
        return;
    r->delivered = true;
    buf_append(&r->answer.text, s, n);
    if (r->cb.on_text)
        r->cb.on_text(r->ctx, s, n);
}

static void deliver_reasoning(llm_request *r, const char *s, size_t n)
{
    if (!n)
        return;
    r->delivered = true;
    if (r->cb.on_reasoning)
        r->cb.on_reasoning(r->ctx, s, n);
}

static void deliver_fragment(llm_request *r, size_t index, const char *s, size_t n)
{
    r->delivered = true;
    llm_tool_call *call = &r->answer.calls[index];
    buf_append(&call->arguments, s, n);
    if (r->cb.on_tool_fragment)
        r->cb.on_tool_fragment(r->ctx, index, call, s, n);
}

/* The string at key in obj, decoded into the arena; NULL when absent. */
static const char *str_at(const json_doc *d, json_ref obj, const char *key, arena *a, size_t *len)
{
    const char *s = NULL;
    json_ref v = json_get(d, obj, key);
    if (v == JSON_NO_REF || json_type_of(d, v) != JSON_STRING || !json_string(d, v, a, &s, len))
        return NULL;
    return s;
}

static long int_at(const json_doc *d, json_ref obj, const char *key, long def)
{
    int64_t v;
    json_ref r = json_get(d, obj, key);
    return r != JSON_NO_REF && json_int64(d, r, &v) ? (long)v : def;
}

static void error_event(llm_request *r, const json_doc *d, json_ref err, arena *a)
{
    const char *msg = json_type_of(d, err) == JSON_STRING ? str_at(d, json_root(d), "error", a, NULL)
                                                           : str_at(d, err, "message", a, NULL);
    fail_stream(r, "LLM request failed: the provider reported an error: %s", msg ? msg : "(no message)");
}

static void openai_event(llm_request *r, const json_doc *d, arena *a)
{
    json_ref root = json_root(d);
    json_ref err = json_get(d, root, "error");
    if (err != JSON_NO_REF && json_type_of(d, err) != JSON_NULL) {
        error_event(r, d, err, a);
        return;
    }
    json_ref usage = json_get(d, root, "usage");
    if (usage != JSON_NO_REF && json_type_of(d, usage) == JSON_OBJECT) {
        r->answer.input_tokens = int_at(d, usage, "prompt_tokens", r->answer.input_tokens);
        r->answer.output_tokens = int_at(d, usage, "completion_tokens", r->answer.output_tokens);
    }
    json_ref choice = json_array_at(d, json_get(d, root, "choices"), 0);
    const char *finish = choice != JSON_NO_REF ? str_at(d, choice, "finish_reason", a, NULL) : NULL;
    if (finish && strcmp(finish, "length") == 0)
        r->answer.cut_short = true;
    if (finish && strcmp(finish, "content_filter") == 0)
        r->answer.refused = true;
    json_ref delta = json_get(d, choice, "delta");
    if (delta == JSON_NO_REF)
        return;
    size_t n;
    const char *thought = str_at(d, delta, "reasoning_content", a, &n);
    if (!thought)
        thought = str_at(d, delta, "reasoning", a, &n);
    if (thought)
        deliver_reasoning(r, thought, n);
    const char *text = str_at(d, delta, "content", a, &n);
    if (text)
        deliver_text(r, text, n);
    json_ref calls = json_get(d, delta, "tool_calls");
    for (json_ref tc = json_first(d, calls); tc != JSON_NO_REF; tc = json_next(d, tc)) {
        long index = int_at(d, tc, "index", 0);
        size_t id_len = 0, name_len = 0, args_len = 0;
        const char *id = str_at(d, tc, "id", a, &id_len);
        json_ref fn = json_get(d, tc, "function");
        const char *name = str_at(d, fn, "name", a, &name_len);
        const char *args = str_at(d, fn, "arguments", a, &args_len);
        /* Calls are keyed by index; a new id on a known index is a new call
         * (servers that reuse index 0 for parallel calls). */
        bool known = index >= 0 && index < 64 && r->openai_index_call[index];
        size_t slot = known ? (size_t)r->openai_index_call[index] - 1 : 0;
        if (!known || (id && id_len && r->answer.calls[slot].id[0] && strcmp(r->answer.calls[slot].id, id) != 0)) {
            if (index < 0 || index >= 64 || (!id && !name)) {
                fail_stream(r, "LLM request failed: a tool call fragment for an unknown call%s", NULL);
                return;
            }
            add_call(&r->answer, id, id_len, name, name_len);
            slot = r->answer.call_count - 1;
            r->openai_index_call[index] = (long)r->answer.call_count;
        } else {
            llm_tool_call *c = &r->answer.calls[slot];
            if (id && !c->id[0]) {
                free(c->id);
                c->id = xstrndup(id, id_len);
            }
            if (name && !c->name[0]) {
                free(c->name);
                c->name = xstrndup(name, name_len);
            }
        }
        deliver_fragment(r, slot, args ? args : "", args ? args_len : 0);
    }
}

static void anthropic_event(llm_request *r, const json_doc *d, arena *a)
{
    json_ref root = json_root(d);
    const char *type = str_at(d, root, "type", a, NULL);
    if (!type)
        return;
    if (strcmp(type, "error") == 0) {
        error_event(r, d, json_get(d, root, "error"), a);
    } else if (strcmp(type, "message_start") == 0) {
        json_ref usage = json_get(d, json_get(d, root, "message"), "usage");
        r->answer.input_tokens = int_at(d, usage, "input_tokens", r->answer.input_tokens);
    } else if (strcmp(type, "message_delta") == 0) {
        r->answer.output_tokens = int_at(d, json_get(d, root, "usage"), "output_tokens", r->answer.output_tokens);
        const char *stop = str_at(d, json_get(d, root, "delta"), "stop_reason", a, NULL);
        if (stop && strcmp(stop, "max_tokens") == 0)
            r->answer.cut_short = true;
        if (stop && strcmp(stop, "refusal") == 0)
            r->answer.refused = true;
    } else if (strcmp(type, "message_stop") == 0) {
        r->ended = true;
    } else if (strcmp(type, "content_block_start") == 0) {
        long index = int_at(d, root, "index", -1);
        json_ref block = json_get(d, root, "content_block");
        const char *btype = str_at(d, block, "type", a, NULL);
        if (btype && strcmp(btype, "tool_use") == 0 && index >= 0 && index < 64) {
            size_t id_len = 0, name_len = 0;
            const char *id = str_at(d, block, "id", a, &id_len);
            const char *name = str_at(d, block, "name", a, &name_len);
            add_call(&r->answer, id, id_len, name, name_len);
            r->anthropic_block_call[index] = (long)r->answer.call_count;
            deliver_fragment(r, r->answer.call_count - 1, "", 0);
        }
    } else if (strcmp(type, "content_block_delta") == 0) {
        long index = int_at(d, root, "index", -1);
        json_ref delta = json_get(d, root, "delta");
        const char *dtype = str_at(d, delta, "type", a, NULL);
        size_t n;
        if (dtype && strcmp(dtype, "text_delta") == 0) {
            const char *text = str_at(d, delta, "text", a, &n);
            if (text)
                deliver_text(r, text, n);
        } else if (dtype && strcmp(dtype, "thinking_delta") == 0) {
            const char *thought = str_at(d, delta, "thinking", a, &n);
            if (thought)
                deliver_reasoning(r, thought, n);
        } else if (dtype && strcmp(dtype, "input_json_delta") == 0) {
            const char *part = str_at(d, delta, "partial_json", a, &n);
            if (index < 0 || index >= 64 || !r->anthropic_block_call[index]) {
                fail_stream(r, "LLM request failed: input_json_delta for a block that is not a tool call%s", NULL);
                return;
            }
            if (part)
                deliver_fragment(r, (size_t)r->anthropic_block_call[index] - 1, part, n);
        }
    }
}

static void dispatch_event(llm_request *r)
{
    const char *data = r->event_data.data ? r->event_data.data : "";
    size_t len = r->event_data.len;
    if (len && data[len - 1] == '\n')
        len--;
    if (len == 0)
        return;
    if (r->api == LLM_API_JSONRPC) {
        if (r->cb.on_message)
            r->cb.on_message(r->ctx, data, len);
        return;
    }
    if (r->api == LLM_API_OPENAI && len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        r->ended = true;
        return;
    }
    json_doc d = {0};
    arena a = ARENA_INIT;
    if (json_doc_parse(&d, data, len, NULL) < 0 || json_type_of(&d, json_root(&d)) != JSON_OBJECT) {
        char excerpt[81];
        snprintf(excerpt, sizeof excerpt, "%.*s", (int)(len < 80 ? len : 80), data);
        fail_stream(r, "LLM request failed: malformed event in the stream: %s", excerpt);
    } else if (r->api == LLM_API_OPENAI) {
        openai_event(r, &d, &a);
    } else {
        anthropic_event(r, &d, &a);
    }
    json_doc_free(&d);
    arena_free(&a);
}

static void sse_line(llm_request *r, const char *line, size_t len)
{
    if (len && line[len - 1] == '\r')
        len--;
    if (len == 0) {
        dispatch_event(r);
        buf_clear(&r->event_data);
        buf_clear(&r->event_name);
        return;
    }
    if (line[0] == ':')
        return; /* a comment or keep-alive */
    const char *colon = memchr(line, ':', len);
    size_t field_len = colon ? (size_t)(colon - line) : len;
    const char *value = colon ? colon + 1 : line + len;
    size_t value_len = len - (size_t)(value - line);
    if (value_len && value[0] == ' ')
        value++, value_len--;
    if (field_len == 4 && memcmp(line, "data", 4) == 0) {
        buf_append(&r->event_data, value, value_len);
        buf_push(&r->event_data, '\n');
    } else if (field_len == 5 && memcmp(line, "event", 5) == 0) {
        buf_clear(&r->event_name);
        buf_append(&r->event_name, value, value_len);
    }
}

#define JSONRPC_BODY_MAX ((size_t)32 << 20)

static size_t on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    llm_request *r = userp;
    size_t n = size * nmemb;
    static const char name[] = "mcp-session-id:";
    if (r->api == LLM_API_JSONRPC && n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        size_t start = sizeof name - 1, end = n;
        while (start < end && (data[start] == ' ' || data[start] == '\t'))
            start++;
        while (end > start && (data[end - 1] == '\r' || data[end - 1] == '\n' || data[end - 1] == ' '))
            end--;
        free(r->answer.session_id);
        r->answer.session_id = xstrndup(data + start, end - start);
    }
    return n;
}

/* libcurl reads the answer while neither the caller nor the slice holds it. */
static void update_receiving(llm_request *req)
{
    if (!req->easy)
        return; /* between attempts */
    bool paused = req->paused || req->held;
    curl_easy_pause(req->easy, paused ? CURLPAUSE_RECV : CURLPAUSE_CONT);
}

static bool slice_spent(const llm_request *r) { return uv_hrtime() >= r->slice_end; }

static void slice_begin(llm_request *r)
{
    r->slice_turn = uv_now(r->client->loop);
    r->slice_end = uv_hrtime() + LLM_SLICE_NS;
}

/* Reads the stream's lines out of data until the slice is spent or the
 * caller pauses, unless whole; returns how many bytes it took. */
static size_t read_lines(llm_request *r, const char *data, size_t n, bool whole)
{
    size_t at = 0;
    while (at < n && !r->error) {
        const char *nl = memchr(data + at, '\n', n - at);
        if (!nl) {
            buf_append(&r->line, data + at, n - at);
            return n;
        }
        size_t end = (size_t)(nl - data);
        if (r->line.len) {
            buf_append(&r->line, data + at, end - at);
            sse_line(r, r->line.data, r->line.len);
            buf_clear(&r->line);
        } else {
            sse_line(r, data + at, end - at); /* a whole line in place: no copy */
        }
        at = end + 1;
        if (!whole && (r->paused || slice_spent(r)))
            break; /* paused from a callback: the rest waits with the caller */
    }
    return at;
}

static void on_resume(uv_idle_t *idle);

/* The rest of the stream waits for the next turn. */
static void hold(llm_request *r)
{
    if (!r->resume) {
        r->resume = xmalloc(sizeof *r->resume);
        uv_idle_init(r->client->loop, r->resume);
        r->resume->data = r;
    }
    if (!r->paused)
        uv_idle_start(r->resume, on_resume);
    if (!r->held) {
        r->held = true;
        update_receiving(r);
    }
}

/* A new turn: a slice of what waits, then libcurl reads again once nothing
 * does (and the caller has not paused the request). */
static void on_resume(uv_idle_t *idle)
{
    llm_request *r = idle->data;
    uv_idle_stop(idle);
    if (r->paused)
        return;
    slice_begin(r);
    size_t took = read_lines(r, r->backlog.data, r->backlog.len, false);
    buf_consume(&r->backlog, took);
    if (r->error)
        buf_clear(&r->backlog); /* libcurl reads again, and its write callback aborts the transfer */
    if (r->backlog.len) {
        if (!r->paused)
            uv_idle_start(idle, on_resume);
        return;
    }
    r->held = false;
    update_receiving(r); /* may write at once: within this slice */
}

void llm_request_pause(llm_request *req, bool paused)
{
    if (req->paused == paused)
        return;
    req->paused = paused;
    if (paused) {
        if (req->resume)
            uv_idle_stop(req->resume);
        if (!req->held)
            update_receiving(req);
        return;
    }
    if (req->held)
        uv_idle_start(req->resume, on_resume); /* the backlog goes first */
    else
        update_receiving(req);
}

static size_t on_write(char *data, size_t size, size_t nmemb, void *userp)
{
    llm_request *r = userp;
    size_t n = size * nmemb;
    if (!r->http_status)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
    if (r->api == LLM_API_JSONRPC && r->http_status == 200 && !r->sse_checked) {
        char *type = NULL;
        curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &type);
        r->sse = type && strncasecmp(type, "text/event-stream", 17) == 0;
        r->sse_checked = true;
    }
    if (r->api == LLM_API_JSONRPC && r->http_status == 200 && !r->sse) {
        /* one JSON body, delivered whole at the end */
        if (r->body_in.len + n > JSONRPC_BODY_MAX)
            return 0;
        buf_append(&r->body_in, data, n);
        return n;
    }
    if (r->http_status != 200) {
        size_t room = LLM_ERROR_BODY_MAX - r->error_body.len;
        buf_append(&r->error_body, data, n < room ? n : room);
        return n;
    }
    if (r->error)
        return 0;
    if (r->held || r->paused) {
        buf_append(&r->backlog, data, n); /* what libcurl had already read: after what waits */
        return n;
    }
    if (r->slice_turn != uv_now(r->client->loop))
        slice_begin(r);
    size_t took = read_lines(r, data, n, false);
    if (r->error)
        return 0; /* aborts the transfer */
    if (took < n) {
        buf_append(&r->backlog, data + took, n - took);
        hold(r);
    }
    return n;
}

/* ----- requests ------------------------------------------------------------------------- */

static void reset_attempt(llm_request *r)
{
    r->http_status = 0;
    buf_clear(&r->line);
    buf_clear(&r->event_data);
    buf_clear(&r->event_name);
    buf_clear(&r->error_body);
    free(r->error);
    r->error = NULL;
    r->ended = false;
    r->sse = r->sse_checked = false;
    buf_clear(&r->body_in);
    buf_clear(&r->backlog);
    r->held = false;
    if (r->resume)
        uv_idle_stop(r->resume);
    llm_answer_free(&r->answer);
    memset(r->anthropic_block_call, 0, sizeof r->anthropic_block_call);
    memset(r->openai_index_call, 0, sizeof r->openai_index_call);
}

static void start_attempt(llm_request *r)
{
    reset_attempt(r);
    r->attempts++;
    r->easy = curl_easy_init();
    curl_easy_setopt(r->easy, CURLOPT_URL, r->url);
    curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, r->body);
    curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
    curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
    curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT, 15L);
    curl_easy_setopt(r->easy, CURLOPT_ACCEPT_ENCODING, "");
    curl_multi_add_handle(r->client->multi, r->easy);
}

static void drop_easy(llm_request *r)
{
    if (!r->easy)
        return;
    curl_multi_remove_handle(r->client->multi, r->easy);
    curl_easy_cleanup(r->easy);
    r->easy = NULL;
}

static void on_retry(uv_timer_t *t)
{
    llm_request *r = t->data;
    start_attempt(r);
}

static void request_free(llm_request *r)
{
    drop_easy(r);
    if (r->retry_timer) {
        uv_timer_stop(r->retry_timer);
        uv_close((uv_handle_t *)r->retry_timer, (uv_close_cb)free);
    }
    if (r->resume) {
        uv_idle_stop(r->resume);
        uv_close((uv_handle_t *)r->resume, (uv_close_cb)free);
    }
    if (r->prev)
        r->prev->next = r->next;
    else
        r->client->requests = r->next;
    if (r->next)
        r->next->prev = r->prev;
    reset_attempt(r);
    buf_free(&r->line);
    buf_free(&r->event_data);
    buf_free(&r->event_name);
    buf_free(&r->error_body);
    buf_free(&r->body_in);
    buf_free(&r->backlog);
    curl_slist_free_all(r->headers);
    free_each(r->url, r->api_key, r->body, r);
}

/* A short reason from an error body: its error.message when it is JSON. */
static void describe_http_error(llm_request *r, buf *out)
{
    buf_appendf(out, "LLM request failed: HTTP %ld", r->http_status);
    json_doc d = {0};
    arena a = ARENA_INIT;
    const char *msg = NULL;
    if (r->error_body.len && json_doc_parse(&d, r->error_body.data, r->error_body.len, NULL) == 0) {
        json_ref e = json_get(&d, json_root(&d), "error");
        msg = json_type_of(&d, e) == JSON_STRING ? str_at(&d, json_root(&d), "error", &a, NULL)
                                                 : str_at(&d, e, "message", &a, NULL);
    }
    if (msg)
        buf_appendf(out, ": %s", msg);
    else if (r->error_body.len)
        buf_appendf(out, ": %.*s", (int)(r->error_body.len < 200 ? r->error_body.len : 200), r->error_body.data);
    json_doc_free(&d);
    arena_free(&a);
}

static void finish_attempt(llm_request *r, CURLcode code)
{
    if (!r->http_status)
        curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->http_status);
    drop_easy(r);
    if (r->backlog.len && !r->error && code == CURLE_OK) {
        /* the transfer ended with bytes still waiting for their turn: they are the answer's end */
        read_lines(r, r->backlog.data, r->backlog.len, true);
    }
    buf_clear(&r->backlog);
    r->held = false;
    if (r->resume)
        uv_idle_stop(r->resume);
    buf why = BUF_INIT;
    bool retryable = false;
    if (r->error) {
        buf_append_str(&why, r->error);
    } else if (code != CURLE_OK && r->http_status == 0) {
        buf_appendf(&why, "LLM request failed: %s", curl_easy_strerror(code));
        retryable = true;
    } else if (r->api == LLM_API_JSONRPC && r->http_status == 202) {
        /* accepted: a notification or a response has no answer */
    } else if (r->http_status != 200) {
        describe_http_error(r, &why);
        retryable = r->http_status == 429 || r->http_status >= 500;
    } else if (code != CURLE_OK) {
        buf_appendf(&why, "LLM request failed: the stream broke: %s", curl_easy_strerror(code));
    } else if (r->api == LLM_API_JSONRPC) {
        if (r->sse && r->event_data.len)
            dispatch_event(r); /* a last event without its blank line */
        else if (!r->sse && r->body_in.len && r->cb.on_message)
            r->cb.on_message(r->ctx, r->body_in.data, r->body_in.len);
    } else if (!r->ended) {
        buf_append_str(&why, r->api == LLM_API_OPENAI ? "LLM request failed: the stream ended before [DONE]"
                                                      : "LLM request failed: the stream ended before message_stop");
    }
    if (why.len && retryable && !r->delivered && r->attempts < LLM_MAX_ATTEMPTS && r->api != LLM_API_JSONRPC) {
        buf_free(&why);
        if (!r->retry_timer) {
            r->retry_timer = xmalloc(sizeof *r->retry_timer);
            uv_timer_init(r->client->loop, r->retry_timer);
            r->retry_timer->data = r;
        }
        uv_timer_start(r->retry_timer, on_retry, (uint64_t)LLM_RETRY_BASE_MS << (r->attempts - 1), 0);
        return;
    }
    llm_callbacks cb = r->cb;
    void *ctx = r->ctx;
    llm_answer answer = r->answer;
    memset(&r->answer, 0, sizeof r->answer);
    request_free(r);
    cb.on_finish(ctx, why.len ? why.data : NULL, &answer);
    llm_answer_free(&answer);
    buf_free(&why);
}

static void check_done(llm_client *c)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(c->multi, &left))) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        llm_request *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r)
            finish_attempt(r, msg->data.result);
    }
}

llm_request *llm_request_start(llm_client *self, const llm_endpoint *ep, const char *body, const llm_callbacks *cb,
                               void *ctx)
{
    llm_request *r = xcalloc(1, sizeof *r);
    r->client = self;
    r->api = ep->api;
    r->url = xstrdup(ep->url);
    r->api_key = ep->api_key ? xstrdup(ep->api_key) : NULL;
    r->body = xstrdup(body);
    r->cb = *cb;
    r->ctx = ctx;
    r->headers = curl_slist_append(NULL, "Content-Type: application/json");
    r->headers = curl_slist_append(r->headers, ep->api == LLM_API_JSONRPC ? "Accept: application/json, text/event-stream"
                                                                          : "Accept: text/event-stream");
    for (size_t i = 0; ep->headers && ep->headers[i]; i++)
        r->headers = curl_slist_append(r->headers, ep->headers[i]);
    buf h = BUF_INIT;
    if (ep->api == LLM_API_ANTHROPIC) {
        r->headers = curl_slist_append(r->headers, "anthropic-version: 2023-06-01");
        if (ep->api_key) {
            buf_appendf(&h, "x-api-key: %s", ep->api_key);
            r->headers = curl_slist_append(r->headers, h.data);
        }
    } else if (ep->api_key) {
        buf_appendf(&h, "Authorization: Bearer %s", ep->api_key);
        r->headers = curl_slist_append(r->headers, h.data);
    }
    buf_free(&h);
    r->next = self->requests;
    if (self->requests)
        self->requests->prev = r;
    self->requests = r;
    start_attempt(r);
    return r;
}

void llm_request_cancel(llm_request *r)
{
    if (r)
        request_free(r);
}
