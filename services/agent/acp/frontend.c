/* acp frontend: the transport (stdin, stdout, the peer over them) and the front end's life. */
#include "acp.h"

/* ----- output ---------------------------------------------------------------------------- */

typedef struct write_req {
    uv_write_t req;
    char *data;
} write_req;

static void written(uv_write_t *req, int status)
{
    (void)status;
    write_req *w = (write_req *)req;
    free(w->data);
    free(w);
}

/* The peer's bytes: one framed message. */
static void write_out(void *ctx, const char *data, size_t len, int64_t request_id)
{
    acp_frontend *acp = ctx;
    (void)request_id;
    if (acp->sink) {
        buf_append(acp->sink, data, len);
        return;
    }
    if (acp->closing && !acp->out_is_pipe)
        return;
    if (!acp->out_is_pipe) {
        /* stdout is a file: written directly */
        size_t off = 0;
        while (off < len) {
            ssize_t n = write(STDOUT_FILENO, data + off, len - off);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
        return;
    }
    write_req *w = xmalloc(sizeof *w);
    w->data = xmalloc(len);
    memcpy(w->data, data, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&acp->out, &b, 1, written) != 0) {
        free(w->data);
        free(w);
    }
}

/* Begins a result value; result_send answers request with it. */
void acp__result_begin(json_writer *w, buf *out) { jw_init(w, out); }

void acp__result_send(ecp_peer_request *request, buf *out)
{
    ecp_peer_respond(request, out->data);
    buf_free(out);
}

void acp__reply_empty(ecp_peer_request *request) { ecp_peer_respond(request, "{}"); }

/* Begins a session/update notification's params and its update object, after the discriminator. */
void acp__update_begin(json_writer *w, buf *out, const acp_session *s, const char *kind)
{
    jw_init(w, out);
    jw_object_begin(w);
    jw_key_string(w, "sessionId", s->id);
    jw_key(w, "update");
    jw_object_begin(w);
    jw_key_string(w, "sessionUpdate", kind);
}

void acp__update_send(acp_frontend *acp, json_writer *w, buf *out)
{
    jw_object_end(w);
    jw_object_end(w);
    ecp_peer_notify(acp->peer, "session/update", out->data);
    buf_free(out);
}

void acp__send_text_chunk(acp_frontend *acp, const acp_session *s, const char *kind, const char *text, size_t len)
{
    buf out = BUF_INIT;
    json_writer w;
    acp__update_begin(&w, &out, s, kind);
    jw_key(&w, "content");
    jw_object_begin(&w);
    jw_key_string(&w, "type", "text");
    jw_key_string_n(&w, "text", text, len);
    jw_object_end(&w);
    acp__update_send(acp, &w, &out);
}

/* Begins a request to the client: the caller writes the params object, then request_send. */
outgoing *acp__request_begin(acp_frontend *acp, json_writer *w, buf *out, const char *method, outgoing_kind kind,
                               acp_session *s)
{
    outgoing *o = xcalloc(1, sizeof *o);
    o->acp = acp;
    o->method = method;
    o->kind = kind;
    o->session = s;
    o->next = acp->outgoing;
    acp->outgoing = o;
    jw_init(w, out);
    return o;
}


void acp__request_send(acp_frontend *acp, outgoing *o, buf *out)
{
    o->id = ecp_peer_call(acp->peer, o->method, out->data, 0, acp__answered, o);
    buf_free(out);
}

void acp__outgoing_free(outgoing *o)
{
    free_each(o->tool_id, o->tool_name, o->path, o->old_string, o->new_string, o);
}

void acp__outgoing_remove(acp_frontend *acp, outgoing *o)
{
    for (outgoing **p = &acp->outgoing; *p; p = &(*p)->next)
        if (*p == o) {
            *p = o->next;
            return;
        }
}

/* Forgets a request to the client: its answer, if one comes, is ignored. */
void acp__withdraw(acp_frontend *acp, outgoing *o)
{
    if (!ecp_peer_cancel(acp->peer, o->id)) { /* never sent: the peer was closed */
        acp__outgoing_remove(acp, o);
        acp__outgoing_free(o);
    }
}


/* ----- input ----------------------------------------------------------------------------------------- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    (void)h;
    b->base = xmalloc(suggested);
    b->len = suggested;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    acp_frontend *acp = s->data;
    if (n > 0 && !acp->closing)
        ecp_peer_feed(acp->peer, b->base, (size_t)n);
    free(b->base);
    if (n < 0) {
        uv_read_stop(s);
        ecp_peer_feed_end(acp->peer);
        if (acp->on_eof)
            acp->on_eof(acp->ctx);
    }
}

/* A withdrawn request's answer is simply ignored: ACP has no cancel notice for it. */
static void send_no_cancel(void *ctx, ecp_peer *peer, int64_t id)
{
    (void)ctx, (void)peer, (void)id;
}

/* ----- lifetime -------------------------------------------------------------------------------------- */

static void handle_closed(uv_handle_t *h)
{
    acp_frontend *acp = h->data;
    acp->open_handles--;
}

static void out_shut(uv_shutdown_t *req, int status)
{
    (void)status;
    acp_frontend *acp = req->data;
    free(req);
    uv_close((uv_handle_t *)&acp->out, handle_closed);
}

/* ACP is newline-delimited JSON-RPC whose params are objects; a malformed line is answered. */
static ecp_peer *new_peer(uv_loop_t *loop, acp_frontend *acp)
{
    ecp_peer_options options = {
        .framing = FRAMING_NEWLINE, .max_message = ACP_MAX_LINE, .answer_invalid = true, .params_object_only = true,
    };
    ecp_peer_handlers handlers = {
        .ctx = acp, .write = write_out, .on_request = acp__on_request, .on_notification = acp__on_notification,
        .send_cancel = send_no_cancel,
    };
    return ecp_peer_new(loop, &options, &handlers);
}

/* A frontend with its peer, neither reading nor serving the agent yet. */
static acp_frontend *frontend_new(uv_loop_t *loop, agent_service *agent, ecp_logger *log, const char *version)
{
    acp_frontend *acp = xmalloc(sizeof *acp);
    *acp = (acp_frontend){.loop = loop, .agent = agent, .log = log, .version = version};
    acp->peer = new_peer(loop, acp);
    return acp;
}

/* From now on the frontend hears the agent's events and runs the tools it asks the client for. */
static void serve_agent(acp_frontend *acp)
{
    agent_subscribe(acp->agent, &acp__listener, acp);
    agent_set_tool_host(acp->agent, &acp__host, acp);
}

acp_frontend *acp_frontend_open(uv_loop_t *loop, agent_service *agent, ecp_logger *log, const char *version,
                                void (*on_eof)(void *ctx), void *ctx, ecp_error *err)
{
    uv_handle_type in_type = uv_guess_handle(STDIN_FILENO), out_type = uv_guess_handle(STDOUT_FILENO);
    if (in_type != UV_NAMED_PIPE && in_type != UV_TTY) {
        ecp_error_set(err, ECP_ENOTSUP, "--acp needs stdin to be a pipe");
        return NULL;
    }
    acp_frontend *acp = frontend_new(loop, agent, log, version);
    acp->on_eof = on_eof;
    acp->ctx = ctx;
    uv_pipe_init(loop, &acp->in, 0);
    acp->in.data = acp;
    acp->open_handles++;
    if (uv_pipe_open(&acp->in, STDIN_FILENO) != 0) {
        /* as if the client had gone at once */
        ecp_log(log, ECP_LOG_ERROR, "--acp: cannot read stdin");
        uv_close((uv_handle_t *)&acp->in, handle_closed);
        acp->closing = true;
        serve_agent(acp);
        if (on_eof)
            on_eof(ctx);
        return acp;
    }
    if (out_type == UV_NAMED_PIPE) {
        uv_pipe_init(loop, &acp->out, 0);
        acp->out.data = acp;
        acp->open_handles++;
        if (uv_pipe_open(&acp->out, STDOUT_FILENO) == 0)
            acp->out_is_pipe = true;
        else
            uv_close((uv_handle_t *)&acp->out, handle_closed);
    }
    serve_agent(acp);
    uv_read_start((uv_stream_t *)&acp->in, on_alloc, on_read);
    return acp;
}

acp_frontend *acp__frontend_detached(uv_loop_t *loop, agent_service *agent, ecp_logger *log, const char *version,
                                     buf *sink)
{
    acp_frontend *acp = frontend_new(loop, agent, log, version);
    acp->sink = sink;
    serve_agent(acp);
    return acp;
}

void acp__frontend_take_line(acp_frontend *self, const char *line, size_t len)
{
    ecp_peer_feed(self->peer, line, len);
    ecp_peer_feed(self->peer, "\n", 1);
}

void acp_frontend_close(acp_frontend *self)
{
    if (self->closing)
        return;
    self->closing = true;
    /* the client is gone or going: its terminals with it */
    while (self->terminals) {
        terminal_run *t = self->terminals;
        t->token = NULL;
        acp__terminal_finish(t);
    }
    if (self->sink)
        return; /* no streams of its own */
    if (!uv_is_closing((uv_handle_t *)&self->in)) {
        uv_read_stop((uv_stream_t *)&self->in);
        uv_close((uv_handle_t *)&self->in, handle_closed);
    }
    if (self->out_is_pipe) {
        uv_shutdown_t *req = xmalloc(sizeof *req);
        req->data = self;
        if (uv_shutdown(req, (uv_stream_t *)&self->out, out_shut) != 0) {
            free(req);
            uv_close((uv_handle_t *)&self->out, handle_closed);
        }
    }
}

bool acp_frontend_closed(const acp_frontend *self) { return self->open_handles == 0; }

void acp_frontend_free(acp_frontend *self)
{
    if (!self)
        return;
    agent_set_tool_host(self->agent, NULL, NULL);
    agent_unsubscribe(self->agent, &acp__listener, self);
    /* completes (and frees) every request still out, and releases those unanswered */
    ecp_peer_free(self->peer);
    acp__accepting_orphan(self);
    for (waiting_answer *w = self->waiting, *next; w; w = next) {
        next = w->next;
        acp__waiting_free(w);
    }
    for (acp_session *s = self->sessions, *next; s; s = next) {
        next = s->next;
        acp__session_free(s);
    }
    free(self);
}
