/* Fuzzing the framing decoder.
 *
 * Input layout: byte 0 picks how many of the following bytes (0..15) are
 * chunk sizes; the rest is the stream a peer sends. The stream is fed three
 * ways, whole, byte by byte, and in chunks of the sizes given (cycled), with a
 * small limit (64 bytes), and each time:
 *   - nothing crashes, and BAD_HEADER, once seen, repeats;
 *   - no message is longer than the limit;
 *   - messages are disjoint slices of the stream, in order (every byte of a
 *     message is accounted for by the input, none is invented or reused);
 *   - after the decoder asks for more, it holds no more than one message's
 *     limit or one header's worth of bytes.
 * The three runs must produce the same events (statuses and message bytes; an
 * oversized message's reported size may differ with the cuts); when one hits a
 * bad header, all must, after the same events. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "framing.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define MAX_MESSAGE 64

typedef struct run {
    buf log;          /* the events: status byte, then for messages the length and bytes */
    size_t events;
    bool bad;
    const char *stream;
    size_t stream_len;
    size_t cursor;    /* where the previous message ended in the stream */
} run;

static void drain(framing_decoder *d, run *r)
{
    if (r->bad) {
        char *msg;
        size_t len;
        REQUIRE(framing_decoder_next(d, &msg, &len) == FRAME_BAD_HEADER && msg == NULL);
        return;
    }
    for (;;) {
        char *msg = NULL;
        size_t len = 0;
        frame_status st = framing_decoder_next(d, &msg, &len);
        if (st == FRAME_NEED_MORE) {
            REQUIRE(msg == NULL && len == 0);
            size_t held = d->in.len - d->start;
            if (d->mode == FRAMING_UNKNOWN)
                REQUIRE(held == 0); /* whitespace before the first message is not kept */
            else if (d->mode == FRAMING_NEWLINE)
                REQUIRE(held <= MAX_MESSAGE + 1); /* a line within the limit, and its '\r' */
            else if (d->have_header)
                REQUIRE(held < d->body_len && d->body_len <= MAX_MESSAGE);
            else
                REQUIRE(held <= FRAMING_MAX_HEADER + 3);
            return;
        }
        r->events++;
        buf_push(&r->log, (char)st);
        if (st == FRAME_MESSAGE) {
            REQUIRE(msg != NULL && msg[len] == '\0');
            REQUIRE(len <= MAX_MESSAGE);
            /* the message is the next slice of the stream */
            const char *at = len ? memmem(r->stream + r->cursor, r->stream_len - r->cursor, msg, len)
                                 : r->stream + r->cursor;
            REQUIRE(at != NULL);
            r->cursor = (size_t)(at - r->stream) + len;
            buf_append(&r->log, &len, sizeof len);
            buf_append(&r->log, msg, len);
            free(msg);
            continue;
        }
        REQUIRE(msg == NULL);
        if (st == FRAME_OVERSIZED) {
            REQUIRE(len > MAX_MESSAGE);
            continue;
        }
        REQUIRE(st == FRAME_BAD_HEADER);
        REQUIRE(d->mode == FRAMING_CONTENT_LENGTH);
        r->bad = true;
        /* it stays broken */
        REQUIRE(framing_decoder_next(d, &msg, &len) == FRAME_BAD_HEADER && msg == NULL);
        return;
    }
}

static void run_stream(run *r, const char *stream, size_t len, const uint8_t *sizes, size_t nsizes, int how)
{
    memset(r, 0, sizeof *r);
    r->stream = stream;
    r->stream_len = len;
    framing_decoder d;
    framing_decoder_init(&d, MAX_MESSAGE);
    drain(&d, r); /* nothing fed yet */
    size_t at = 0, k = 0;
    while (at < len) {
        size_t n;
        if (how == 0)
            n = len;
        else if (how == 1)
            n = 1;
        else
            n = nsizes ? 1 + sizes[k++ % nsizes] % 97 : 7;
        if (n > len - at)
            n = len - at;
        framing_decoder_feed(&d, stream + at, n);
        at += n;
        drain(&d, r);
        if (how == 2 && nsizes && sizes[k % nsizes] % 5 == 0) {
            framing_decoder_feed(&d, stream + at, 0); /* empty reads happen too */
            drain(&d, r);
        }
    }
    drain(&d, r);
    REQUIRE(r->cursor <= len);
    framing_decoder_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t nsizes = data[0] % 16;
    if (size < 1 + nsizes)
        return 0;
    const uint8_t *sizes = data + 1;
    const char *stream = (const char *)data + 1 + nsizes;
    size_t len = size - 1 - nsizes;

    run runs[3];
    for (int how = 0; how < 3; how++)
        run_stream(&runs[how], stream, len, sizes, nsizes, how);
    for (int how = 1; how < 3; how++) {
        REQUIRE(runs[how].bad == runs[0].bad);
        REQUIRE(runs[how].events == runs[0].events);
        REQUIRE(runs[how].log.len == runs[0].log.len);
        REQUIRE(runs[0].log.len == 0 || memcmp(runs[how].log.data, runs[0].log.data, runs[0].log.len) == 0);
    }
    for (int how = 0; how < 3; how++)
        buf_free(&runs[how].log);

    /* what the encoder frames, the decoder gives back */
    if (len <= MAX_MESSAGE && !memchr(stream, '\n', len)) {
        for (int mode = FRAMING_CONTENT_LENGTH; mode <= FRAMING_NEWLINE; mode++) {
            /* newline framing drops leading whitespace and a final '\r' */
            size_t lead = 0;
            while (mode == FRAMING_NEWLINE && lead < len && (stream[lead] == ' ' || stream[lead] == '\t' || stream[lead] == '\r'))
                lead++;
            size_t body = len - lead;
            if (mode == FRAMING_NEWLINE && body && stream[lead + body - 1] == '\r')
                continue;
            buf out = BUF_INIT;
            framing_encode((framing_mode)mode, &out, "[0]", 3);
            framing_encode((framing_mode)mode, &out, stream, len);
            framing_decoder d;
            framing_decoder_init(&d, MAX_MESSAGE);
            framing_decoder_feed(&d, out.data, out.len);
            char *msg;
            size_t n;
            REQUIRE(framing_decoder_next(&d, &msg, &n) == FRAME_MESSAGE && n == 3 && memcmp(msg, "[0]", 3) == 0);
            free(msg);
            frame_status st = framing_decoder_next(&d, &msg, &n);
            if (mode == FRAMING_NEWLINE && body == 0) {
                REQUIRE(st == FRAME_NEED_MORE);
            } else {
                REQUIRE(st == FRAME_MESSAGE && n == body && memcmp(msg, stream + lead, body) == 0);
                free(msg);
            }
            REQUIRE(framing_decoder_next(&d, &msg, &n) == FRAME_NEED_MORE);
            framing_decoder_free(&d);
            buf_free(&out);
        }
    }
    return 0;
}
