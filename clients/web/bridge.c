/* One page's relay: its WebSocket on one side, a connection of its own to
 * ecpd's socket on the other. Each side is read only while what waits to be
 * written to the other stays under a watermark, so a page (or an ecpd) that
 * stops reading holds ecp-web's memory at about that much. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "buf.h"
#include "socket_path.h"
#include "framing.h"
#include "json.h"
#include "utf.h"
#include "web.h"

/* What one writeable callback hands lws: larger messages leave as fragments,
 * so lws never holds more than this of ours. */
#define FRAGMENT_BYTES ((size_t)64 << 10)
#define CONNECT_EVERY_MS 50
#define CONNECT_TRIES 200         /* ten seconds for a server to come up */
#define SERVER_START_EVERY_MS 3000
/* Close codes lws has no names for (RFC 6455's registry). */
#define CLOSE_SERVICE_RESTART 1012
#define CLOSE_TRY_AGAIN_LATER 1013
/* lws_write's close frame: part of lws's ABI, between LWS_WRITE_HTTP and LWS_WRITE_PING, though its
 * header leaves the name out. */
#define LWS_WRITE_CLOSE_FRAME ((enum lws_write_protocol)4)

typedef struct out_msg {
    struct out_msg *next;
    size_t len, sent;
    unsigned char data[]; /* LWS_PRE bytes for lws, then the message */
} out_msg;

struct bridge {
    web *w;
    bridge *prev, *next;   /* in w->pages while the WebSocket is open */
    struct lws *wsi;       /* NULL once the WebSocket is gone */
    uv_pipe_t pipe;
    uv_timer_t retry;
    int open_handles;      /* freed when the WebSocket and every handle are gone */
    bool connected, reading;
    int tries;
    framing_decoder decoder;
    out_msg *head, *tail;  /* toward the page */
    size_t queued;
    buf incoming;          /* the page's message being received */
    buf unsent;            /* framed messages waiting for ecpd to answer the socket */
    size_t to_ecpd;        /* handed to ecpd's socket, not written yet */
    bool page_paused;
    bool got_message;
    bool closing;
    int close_code;
    char close_reason[124]; /* a close frame's reason is at most 123 bytes */
    char read_buf[64 << 10];
};

static void maybe_free(bridge *b)
{
    if (b->wsi || b->open_handles > 0)
        return;
    framing_decoder_free(&b->decoder);
    while (b->head) {
        out_msg *m = b->head;
        b->head = m->next;
        free(m);
    }
    buf_free(&b->incoming);
    buf_free(&b->unsent);
    free(b);
}

static void handle_closed(uv_handle_t *h)
{
    bridge *b = h->data;
    b->open_handles--;
    maybe_free(b);
}

static void close_handle(bridge *b, uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, handle_closed);
}

/* Ends the page's WebSocket once what ecpd sent before is delivered. */
static void close_page(bridge *b, int code, const char *reason)
{
    if (b->closing)
        return;
    b->closing = true;
    b->close_code = code;
    snprintf(b->close_reason, sizeof b->close_reason, "%s", reason);
    /* Cut at a character boundary: the reason is UTF-8 text. */
    size_t n = strlen(b->close_reason);
    b->close_reason[utf8_valid_prefix(b->close_reason, n)] = 0;
    if (b->wsi)
        lws_callback_on_writable(b->wsi);
}

static void drop_ecpd(bridge *b)
{
    if (b->connected) {
        b->connected = false;
        b->reading = false;
        close_handle(b, (uv_handle_t *)&b->pipe);
    }
}

/* ---- toward ecpd ---- */

typedef struct write_req {
    uv_write_t req;
    bridge *b;
    size_t len;
    char data[];
} write_req;

static void written(uv_write_t *req, int status)
{
    write_req *wr = (write_req *)req;
    bridge *b = wr->b;
    (void)status; /* a failed write shows as the read side ending */
    b->to_ecpd -= wr->len;
    free(wr);
    if (b->page_paused && b->to_ecpd < WEB_LOW_WATERMARK && b->wsi) {
        b->page_paused = false;
        lws_rx_flow_control(b->wsi, 1);
    }
}

static void write_ecpd(bridge *b, const char *data, size_t len)
{
    write_req *wr = xmalloc(sizeof *wr + len);
    memcpy(wr->data, data, len);
    wr->b = b;
    wr->len = len;
    uv_buf_t ub = uv_buf_init(wr->data, (unsigned)len);
    if (uv_write(&wr->req, (uv_stream_t *)&b->pipe, &ub, 1, written) != 0) {
        b->to_ecpd -= len;
        free(wr);
    }
}

static void send_to_ecpd(bridge *b, const char *json, size_t len)
{
    buf framed = BUF_INIT;
    framing_encode(FRAMING_CONTENT_LENGTH, &framed, json, len);
    b->to_ecpd += framed.len;
    if (b->connected)
        write_ecpd(b, framed.data, framed.len);
    else
        buf_append(&b->unsent, framed.data, framed.len);
    buf_free(&framed);
    if (b->to_ecpd > WEB_HIGH_WATERMARK && !b->page_paused && b->wsi) {
        b->page_paused = true;
        lws_rx_flow_control(b->wsi, 0);
    }
}

/* ---- toward the page ---- */

/* ecpd's answer to a connection it will not take (over --max-connections):
 * one error with no id, then the end. Its message becomes the close's reason. */
static bool refusal_reason(const char *msg, size_t len, buf *reason)
{
    if (len > 4096)
        return false;
    json_doc doc;
    if (json_doc_parse(&doc, msg, len, NULL) != 0)
        return false;
    json_ref root = json_root(&doc);
    json_ref error = json_get(&doc, root, "error");
    json_ref text = json_get(&doc, error, "message");
    size_t raw_len = 0;
    const char *raw = json_type_of(&doc, text) == JSON_STRING ? json_raw(&doc, text, &raw_len) : NULL;
    bool refused = json_type_of(&doc, json_get(&doc, root, "id")) == JSON_NULL && raw && raw_len >= 2 &&
                   json_unescape(raw + 1, raw_len - 2, reason);
    json_doc_free(&doc);
    return refused;
}

static void queue_for_page(bridge *b, const char *msg, size_t len)
{
    out_msg *m = xmalloc(sizeof *m + LWS_PRE + len);
    m->next = NULL;
    m->len = len;
    m->sent = 0;
    memcpy(m->data + LWS_PRE, msg, len);
    if (b->tail)
        b->tail->next = m;
    else
        b->head = m;
    b->tail = m;
    b->queued += len;
    if (b->wsi)
        lws_callback_on_writable(b->wsi);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *out)
{
    bridge *b = h->data;
    (void)suggested;
    *out = uv_buf_init(b->read_buf, sizeof b->read_buf);
}

static void on_ecpd_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *data)
{
    bridge *b = stream->data;
    if (nread < 0) {
        buf why = BUF_INIT;
        if (nread == UV_EOF)
            buf_append_str(&why, "ecpd closed the connection");
        else
            buf_appendf(&why, "ecpd's socket failed: %s", uv_strerror((int)nread));
        /* 1012: the service restarts; the page connects again, and a new server is started if need be. */
        close_page(b, CLOSE_SERVICE_RESTART, why.data);
        buf_free(&why);
        drop_ecpd(b);
        return;
    }
    framing_decoder_feed(&b->decoder, data->base, (size_t)nread);
    for (;;) {
        char *msg = NULL;
        size_t len = 0;
        frame_status st = framing_decoder_next(&b->decoder, &msg, &len);
        if (st == FRAME_NEED_MORE)
            break;
        if (st == FRAME_MESSAGE) {
            buf reason = BUF_INIT;
            if (!b->got_message && refusal_reason(msg, len, &reason)) {
                fprintf(stderr, "ecp-web: ecpd refused a page: %s\n", reason.data);
                close_page(b, CLOSE_TRY_AGAIN_LATER, reason.data);
            } else {
                queue_for_page(b, msg, len);
            }
            b->got_message = true;
            buf_free(&reason);
            free(msg);
        } else if (st == FRAME_OVERSIZED) {
            /* Dropping it would leave the page waiting for an answer that never comes. */
            close_page(b, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "ecpd sent a message larger than 256 MiB");
            drop_ecpd(b);
            return;
        } else {
            close_page(b, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "ecpd sent a header that cannot be read");
            drop_ecpd(b);
            return;
        }
    }
    if (b->queued > WEB_HIGH_WATERMARK && b->reading) {
        b->reading = false;
        uv_read_stop(stream);
    }
}

int bridge_writeable(bridge *b)
{
    out_msg *m = b->head;
    if (!m) {
        if (!b->closing)
            return 0;
        /* The close frame is written here, by lws, rather than left to the close that returning -1
         * starts: lws 4.1 built for debugging closes twice after a writeable callback asks for it,
         * and the second close drops the frame the first one queued. */
        unsigned char frame[LWS_PRE + 2 + sizeof b->close_reason];
        size_t reason_len = strlen(b->close_reason);
        frame[LWS_PRE] = (unsigned char)(b->close_code >> 8);
        frame[LWS_PRE + 1] = (unsigned char)(b->close_code & 0xff);
        memcpy(frame + LWS_PRE + 2, b->close_reason, reason_len);
        lws_write(b->wsi, frame + LWS_PRE, 2 + reason_len, LWS_WRITE_CLOSE_FRAME);
        return -1;
    }
    size_t chunk = m->len - m->sent;
    if (chunk > FRAGMENT_BYTES)
        chunk = FRAGMENT_BYTES;
    int flags = m->sent == 0 ? LWS_WRITE_TEXT : LWS_WRITE_CONTINUATION;
    if (m->sent + chunk < m->len)
        flags |= LWS_WRITE_NO_FIN;
    /* The LWS_PRE bytes before a later fragment are the earlier one's, already sent: lws may write there. */
    int n = lws_write(b->wsi, m->data + LWS_PRE + m->sent, chunk, (enum lws_write_protocol)flags);
    if (n < 0)
        return -1;
    m->sent += chunk;
    b->queued -= chunk;
    if (m->sent == m->len) {
        b->head = m->next;
        if (!b->head)
            b->tail = NULL;
        free(m);
    }
    if (!b->reading && b->connected && b->queued < WEB_LOW_WATERMARK) {
        b->reading = true;
        uv_read_start((uv_stream_t *)&b->pipe, on_alloc, on_ecpd_read);
    }
    if (b->head || b->closing)
        lws_callback_on_writable(b->wsi);
    return 0;
}

/* ---- connecting ---- */

/* A connected socket to ecpd, or -1 with why set. Like every client of the
 * socket, it talks only to a server of its own user: what it relays
 * includes the files' text. */
static int connect_ecpd(const char *path, buf *why, bool *fatal, bool *nobody_there)
{
    /* Non-blocking: a server that stopped accepting (its backlog full) must not stop ecp-web's loop;
     * a Unix socket's connect then fails at once (EAGAIN), and is tried again. */
    ecp_socket_failure failure = 0;
    ecp_error err = {0};
    int fd = ecp_socket_connect_own(path, SOCK_NONBLOCK, &failure, &err);
    *fatal = fd < 0 && failure == ECP_SOCKET_REFUSED;
    *nobody_there = fd < 0 && failure == ECP_SOCKET_NOBODY;
    if (fd < 0)
        buf_appendf(why, "%s", err.message);
    return fd;
}

static void detached_closed(uv_handle_t *h) { free(h); }

/* Starts `ecpd --socket PATH --workspace DIR`, which outlives us: it serves
 * every client of the workspace. Several pages that find no server start it
 * once; a second ecpd on the same socket would refuse to start anyway. */
static void start_server(web *w)
{
    uint64_t now = uv_now(w->loop);
    if (w->last_server_start_ms && now - w->last_server_start_ms < SERVER_START_EVERY_MS)
        return;
    w->last_server_start_ms = now;
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    char *argv[] = {w->server_path, "--socket", w->socket_path, "--workspace", w->workspace, NULL};
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_IGNORE},
        {.flags = UV_IGNORE},
        {.flags = null_fd >= 0 ? UV_INHERIT_FD : UV_IGNORE, .data.fd = null_fd},
    };
    uv_process_options_t o = {.file = w->server_path, .args = argv, .stdio = stdio, .stdio_count = 3,
                              .flags = UV_PROCESS_DETACHED};
    uv_process_t *process = xcalloc(1, sizeof *process);
    int rc = uv_spawn(w->loop, process, &o);
    if (null_fd >= 0)
        close(null_fd);
    if (rc != 0)
        fprintf(stderr, "ecp-web: cannot start %s: %s\n", w->server_path, uv_strerror(rc));
    else
        fprintf(stderr, "ecp-web: no server answered on %s; started %s\n", w->socket_path, w->server_path);
    uv_close((uv_handle_t *)process, detached_closed);
}

static bool try_connect(bridge *b)
{
    buf why = BUF_INIT;
    bool fatal = false, nobody_there = false;
    int fd = connect_ecpd(b->w->socket_path, &why, &fatal, &nobody_there);
    if (fd < 0) {
        if (fatal || ++b->tries >= CONNECT_TRIES) {
            fprintf(stderr, "ecp-web: %s\n", why.data);
            close_page(b, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, why.data);
        } else if (nobody_there) {
            start_server(b->w); /* a server that is there but busy (EAGAIN) is waited for instead */
        }
        buf_free(&why);
        return false;
    }
    buf_free(&why);
    uv_pipe_init(b->w->loop, &b->pipe, 0);
    b->pipe.data = b;
    b->open_handles++;
    if (uv_pipe_open(&b->pipe, fd) != 0) {
        close(fd);
        close_handle(b, (uv_handle_t *)&b->pipe);
        close_page(b, LWS_CLOSE_STATUS_UNEXPECTED_CONDITION, "cannot use ecpd's socket");
        return false;
    }
    b->connected = true;
    b->reading = true;
    uv_read_start((uv_stream_t *)&b->pipe, on_alloc, on_ecpd_read);
    if (b->unsent.len) {
        write_ecpd(b, b->unsent.data, b->unsent.len);
        buf_free(&b->unsent);
    }
    return true;
}

static void on_retry(uv_timer_t *t)
{
    bridge *b = t->data;
    if (b->wsi && !b->connected && !b->closing && !try_connect(b) && !b->closing)
        uv_timer_start(&b->retry, on_retry, CONNECT_EVERY_MS, 0);
}

bridge *bridge_open(web *w, struct lws *wsi)
{
    bridge *b = xcalloc(1, sizeof *b);
    b->w = w;
    b->wsi = wsi;
    b->next = w->pages;
    if (w->pages)
        w->pages->prev = b;
    w->pages = b;
    framing_decoder_init(&b->decoder, WEB_MAX_MESSAGE);
    uv_timer_init(w->loop, &b->retry);
    b->retry.data = b;
    b->open_handles = 1;
    if (!try_connect(b) && !b->closing)
        uv_timer_start(&b->retry, on_retry, CONNECT_EVERY_MS, 0);
    return b;
}

int bridge_receive(bridge *b, const char *data, size_t len)
{
    if (lws_frame_is_binary(b->wsi)) {
        static const char why[] = "binary frames are not JSON-RPC";
        lws_close_reason(b->wsi, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, (unsigned char *)why, sizeof why - 1);
        return -1;
    }
    if (b->incoming.len + len > WEB_MAX_MESSAGE) {
        static const char why[] = "message too large";
        lws_close_reason(b->wsi, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, (unsigned char *)why, sizeof why - 1);
        return -1;
    }
    buf_append(&b->incoming, data, len);
    if (!lws_is_final_fragment(b->wsi) || lws_remaining_packet_payload(b->wsi) > 0)
        return 0;
    if (!utf8_is_valid(b->incoming.data, b->incoming.len)) {
        static const char why[] = "a text frame that is not UTF-8";
        lws_close_reason(b->wsi, LWS_CLOSE_STATUS_INVALID_PAYLOAD, (unsigned char *)why, sizeof why - 1);
        return -1;
    }
    /* Once the page is being closed (ecpd went away), what it still sends has nowhere to go. */
    if (b->incoming.len && !b->closing)
        send_to_ecpd(b, b->incoming.data, b->incoming.len);
    /* A large message's room is not kept for the connection's life. */
    if (b->incoming.cap > WEB_LOW_WATERMARK)
        buf_free(&b->incoming);
    else
        buf_clear(&b->incoming);
    return 0;
}

void bridge_closed(bridge *b)
{
    if (b->prev)
        b->prev->next = b->next;
    else
        b->w->pages = b->next;
    if (b->next)
        b->next->prev = b->prev;
    b->prev = b->next = NULL;
    b->wsi = NULL;
    drop_ecpd(b);
    close_handle(b, (uv_handle_t *)&b->retry);
}

void bridge_close_all(web *w)
{
    for (bridge *b = w->pages; b; b = b->next)
        close_page(b, LWS_CLOSE_STATUS_GOINGAWAY, "ecp-web is stopping");
}

void bridge_start_server_if_absent(web *w)
{
    buf why = BUF_INIT;
    bool fatal = false, nobody_there = false;
    int fd = connect_ecpd(w->socket_path, &why, &fatal, &nobody_there);
    if (fd >= 0)
        close(fd);
    else if (nobody_there)
        start_server(w);
    else
        fprintf(stderr, "ecp-web: %s\n", why.data);
    buf_free(&why);
}
