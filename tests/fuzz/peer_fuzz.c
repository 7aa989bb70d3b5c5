/* Fuzzing the JSON-RPC peer.
 *
 * Input layout: byte 0 picks the framing (newline, Content-Length, or whole
 * messages split at NUL bytes) and whether malformed input is answered; the
 * rest is what the other side sends. Before feeding it, the peer has three
 * requests of its own pending; requests it receives are answered at once,
 * with an error, or held and answered once the input is over. Checked:
 *   - nothing crashes, leaks or reads out of bounds (ASan, UBSan);
 *   - each request of ours completes exactly once, by the end;
 *   - what the peer writes is bounded by what it was fed (it never loops
 *     writing on its own). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "peer.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

#define HELD_MAX 16

typedef struct state {
    size_t written;
    size_t writes;
    int completions[4];
    ecp_peer_request *held[HELD_MAX];
    size_t held_count;
    unsigned requests;
} state;

static void on_write(void *ctx, const char *data, size_t len, int64_t request_id)
{
    state *st = ctx;
    (void)data, (void)request_id;
    st->written += len;
    st->writes++;
}

static void on_request(void *ctx, ecp_peer_request *r, const char *method, const json_doc *d, json_ref params)
{
    state *st = ctx;
    (void)d, (void)params;
    switch (st->requests++ % 3) {
    case 0: ecp_peer_respond(r, "{\"ok\":true}"); break;
    case 1: ecp_peer_respond_error(r, -32601, "Method not found: %s", method); break;
    default:
        if (st->held_count < HELD_MAX)
            st->held[st->held_count++] = r;
        else
            ecp_peer_respond(r, NULL);
    }
}

static void on_answer(void *ctx, int64_t id, const ecp_peer_answer *answer)
{
    state *st = ctx;
    REQUIRE(id >= 1 && id <= 3);
    REQUIRE(answer->message != NULL);
    if (answer->status == 0)
        REQUIRE(answer->doc != NULL);
    st->completions[id]++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    const char *stream = (const char *)data + 1;
    size_t len = size - 1;
    uv_loop_t loop;
    uv_loop_init(&loop);
    state st = {0};
    ecp_peer_options options = {
        .framing = mode & 1 ? FRAMING_CONTENT_LENGTH : (mode & 2 ? FRAMING_UNKNOWN : FRAMING_NEWLINE),
        .messages = (mode & 12) == 12, .max_message = 256, .answer_invalid = mode & 16,
        .params_object_only = mode & 32,
    };
    ecp_peer_handlers handlers = {.ctx = &st, .write = on_write, .on_request = on_request};
    ecp_peer *peer = ecp_peer_new(&loop, &options, &handlers);
    for (int i = 0; i < 3; i++)
        REQUIRE(ecp_peer_call(peer, "m", i ? "{}" : NULL, 0, on_answer, &st) == i + 1);
    size_t before = st.written;
    if (options.messages) {
        for (size_t at = 0; at <= len;) {
            const char *nul = memchr(stream + at, '\0', len - at);
            size_t n = nul ? (size_t)(nul - (stream + at)) : len - at;
            ecp_peer_feed_message(peer, stream + at, n);
            at += n + 1;
        }
    } else {
        /* in two cuts, so that a message may straddle them */
        size_t cut = len ? (mode >> 6) * len / 4 : 0;
        ecp_peer_feed(peer, stream, cut);
        ecp_peer_feed(peer, stream + cut, len - cut);
        ecp_peer_feed_end(peer);
    }
    /* every answer or error is at most a few hundred bytes plus what it echoes (an id) */
    REQUIRE(st.written - before <= (len + 1) * 400);
    if (mode & 64 && st.held_count)
        ecp_peer_cancel(peer, 2);
    for (size_t i = 0; i < st.held_count; i++)
        ecp_peer_respond(st.held[i], "1");
    ecp_peer_free(peer);
    uv_run(&loop, UV_RUN_DEFAULT);
    for (int i = 1; i <= 3; i++)
        REQUIRE(st.completions[i] == 1);
    REQUIRE(uv_loop_close(&loop) == 0);
    return 0;
}
