#include "transport.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"

/* One read buffer per link, reused: a fresh 256 KiB malloc per read is an
 * mmap/munmap pair (it is above glibc's mmap threshold), and reads are
 * consumed synchronously in read_cb anyway. */
#define READ_BUFFER_SIZE (256 * 1024)
/* One write's buffers hold at most this each (uv_buf_t counts in unsigned int). */
#define WRITE_PIECE_BYTES ((size_t)16 << 20)
/* While its connection pauses, a link whose owner must see the end of input
 * reads this much more (the connection acts on none of it) before it stops:
 * enough for a client that closed its end after its last requests, and
 * still back-pressure for one that goes on sending. */
#define PAUSED_READ_BYTES ((size_t)1 << 20)

struct stream_link {
    server *srv;
    char *read_buffer;
    connection *conn;
    uv_stream_t *in;
    uv_stream_t *out;       /* NULL: synchronous writes to out_fd */
    int out_fd;
    int handles_open;
    bool closing;
    bool flushing;          /* closing, but waiting (uv_shutdown) for the peer to read what is queued */
    stream_link_closed_fn on_closed;
    void *ctx;
    stream_link_ended_fn on_ended;
    void *ended_ctx;
    bool paused;            /* its connection asked it to stop reading */
    size_t read_while_paused;
};

typedef struct write_req {
    uv_write_t req;
    stream_link *link;
    ecp_shared *owner; /* keeps the bytes written alive, when they are not in data */
    char data[];
} write_req;

static void alloc_cb(uv_handle_t *handle, size_t suggested, uv_buf_t *out)
{
    (void)suggested;
    stream_link *link = handle->data;
    out->base = link->read_buffer;
    out->len = READ_BUFFER_SIZE;
}

static void read_cb(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    stream_link *link = stream->data;
    if (n > 0 && !link->closing) {
        connection_receive(link->conn, b->base, (size_t)n);
        if (link->paused && !link->closing && (link->read_while_paused += (size_t)n) >= PAUSED_READ_BYTES)
            uv_read_stop(link->in);
    }
    if (n < 0 && !link->closing) {
        stream_link_close(link, true); /* EOF or error: the peer is gone; flush what it may still read */
        if (link->on_ended)
            link->on_ended(link->ended_ctx);
    }
}

static void write_cb(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    stream_link *link = w->link;
    ecp_shared_unref(w->owner);
    free(w);
    if (link->closing)
        return;
    if (status < 0) {
        stream_link_close(link, false);
        return;
    }
    connection_drained(link->conn);
}

/* Writes what the kernel takes now; returns how much of data is left for
 * a queued write, or SIZE_MAX once the link is closing. */
static size_t write_now(stream_link *link, const char *data, size_t len)
{
    if (link->closing)
        return SIZE_MAX;
    if (!link->out) {
        while (len > 0) {
            ssize_t n = write(link->out_fd, data, len);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                stream_link_close(link, false);
                return SIZE_MAX;
            }
            data += n, len -= (size_t)n;
        }
        return 0;
    }
    /* Most writes go out at once: then they need no request and no copy.
     * libuv refuses (UV_EAGAIN) while earlier writes wait, which keeps the
     * order; what the kernel does not take now, and any error, goes through
     * uv_write, which reports errors from write_cb as before. */
    uv_buf_t now = uv_buf_init((char *)data, len < WRITE_PIECE_BYTES ? (unsigned)len : (unsigned)WRITE_PIECE_BYTES);
    int sent = uv_try_write(link->out, &now, 1);
    return sent > 0 ? len - (size_t)sent : len;
}

/* Queues len bytes at data (which w keeps alive) behind what waits. */
static void write_queued(stream_link *link, write_req *w, const char *data, size_t len)
{
    w->link = link;
    /* uv_buf_t's length is an unsigned int: a reply over 4 GiB goes out as
     * several buffers of one write rather than truncated */
    uv_buf_t one, *bufs = &one;
    size_t count = len / WRITE_PIECE_BYTES + 1;
    if (count > 1)
        bufs = xmalloc(count * sizeof *bufs);
    for (size_t i = 0; i < count; i++) {
        size_t off = i * WRITE_PIECE_BYTES, n = len - off < WRITE_PIECE_BYTES ? len - off : WRITE_PIECE_BYTES;
        bufs[i] = uv_buf_init((char *)data + off, (unsigned)n);
    }
    int r = uv_write(&w->req, link->out, bufs, (unsigned)count, write_cb);
    if (bufs != &one)
        free(bufs); /* libuv copies the array of buffers, not what they point at */
    if (r < 0) {
        ecp_shared_unref(w->owner);
        free(w);
        stream_link_close(link, false);
    }
}

static void io_write(void *ctx, const char *data, size_t len)
{
    stream_link *link = ctx;
    size_t left = write_now(link, data, len);
    if (left == 0 || left == SIZE_MAX)
        return;
    data += len - left;
    write_req *w = xmalloc(xsize_add(sizeof *w, left));
    memcpy(w->data, data, left);
    w->owner = NULL;
    write_queued(link, w, w->data, left);
}

/* What the peer does not take at once waits where it lies, owner holding it. */
static void io_write_shared(void *ctx, ecp_shared *owner, const char *data, size_t len)
{
    stream_link *link = ctx;
    size_t left = write_now(link, data, len);
    if (left == 0 || left == SIZE_MAX)
        return;
    write_req *w = xmalloc(sizeof *w);
    w->owner = ecp_shared_ref(owner);
    write_queued(link, w, data + (len - left), left);
}

static size_t io_queued(void *ctx)
{
    stream_link *link = ctx;
    return link->out ? uv_stream_get_write_queue_size(link->out) : 0;
}

static void io_set_reading(void *ctx, bool on)
{
    stream_link *link = ctx;
    if (link->closing)
        return;
    link->paused = !on;
    link->read_while_paused = 0;
    if (!on && link->on_ended)
        return; /* its owner must see the end of input even then (transport.h) */
    if (on)
        uv_read_start(link->in, alloc_cb, read_cb);
    else
        uv_read_stop(link->in);
}

static void io_close(void *ctx) { stream_link_close(ctx, false); }

static void io_finish(void *ctx) { stream_link_close(ctx, true); }

static const connection_io stream_io = {io_write, io_queued, io_set_reading, io_close, io_finish, io_write_shared};

stream_link *stream_link_open(server *srv, uv_stream_t *in, uv_stream_t *out, int out_fd, const char *label,
                              stream_link_closed_fn on_closed, void *ctx)
{
    stream_link *link = xcalloc(1, sizeof *link);
    link->srv = srv;
    link->read_buffer = xmalloc(READ_BUFFER_SIZE);
    link->in = in;
    link->out = out;
    link->out_fd = out_fd;
    link->on_closed = on_closed;
    link->ctx = ctx;
    link->handles_open = out && out != in ? 2 : 1;
    in->data = link;
    if (out)
        out->data = link;
    link->conn = server_connection_open(srv, &stream_io, link, label);
    uv_read_start(in, alloc_cb, read_cb);
    return link;
}

void stream_link_on_ended(stream_link *link, stream_link_ended_fn fn, void *ctx)
{
    link->on_ended = fn;
    link->ended_ctx = ctx;
}

/* The link owns its connection: the connection is closed here, once no
 * callback of either handle can run any more, and nowhere else. */
static void handle_closed(uv_handle_t *handle)
{
    stream_link *link = handle->data;
    free(handle);
    if (--link->handles_open > 0)
        return;
    connection_close(link->conn);
    if (link->on_closed)
        link->on_closed(link->ctx, link);
    free(link->read_buffer);
    free(link);
}

static uv_stream_t *output_stream(stream_link *link) { return link->out ? link->out : link->in; }

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    (void)status;
    stream_link *link = req->handle->data;
    free(req);
    /* Not flushing any more: the flush was cut short, and closing the stream
     * is what cancelled this request (status UV_ECANCELED). */
    if (!link->flushing)
        return;
    link->flushing = false;
    uv_close((uv_handle_t *)output_stream(link), handle_closed);
}

void stream_link_close(stream_link *link, bool flush)
{
    if (link->closing) {
        if (!flush && link->flushing) {
            /* the peer is not reading: stop waiting for it */
            link->flushing = false;
            uv_close((uv_handle_t *)output_stream(link), handle_closed);
        }
        return;
    }
    if (flush)
        connection_flush(link->conn); /* answers gathered while reading go first */
    link->closing = true;
    uv_read_stop(link->in);
    if (link->out && link->out != link->in)
        uv_close((uv_handle_t *)link->in, handle_closed);
    uv_stream_t *out = output_stream(link);
    if (flush && link->out && uv_stream_get_write_queue_size(out) > 0) {
        /* let the answers already queued reach the peer first */
        uv_shutdown_t *req = xmalloc(sizeof *req);
        if (uv_shutdown(req, out, shutdown_cb) == 0) {
            link->flushing = true;
            return;
        }
        free(req);
    }
    uv_close((uv_handle_t *)out, handle_closed);
}
