/* Unit tests of the framing (framing.h): both framings, mode detection, every
 * way a stream can be cut into reads, oversized messages, bad headers, a long
 * pipelined burst, and encode/decode agreement. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "buf.h"
#include "framing.h"

/* Under valgrind everything runs some 50 times slower: the time limit of the
 * burst test stretches accordingly (it guards against quadratic work, which
 * would take minutes either way). */
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SLOWDOWN (RUNNING_ON_VALGRIND ? 60.0 : 1.0)
#endif
#endif
#ifndef SLOWDOWN
#define SLOWDOWN 1.0
#endif

/* ---- helpers ------------------------------------------------------------------ */

typedef struct event {
    frame_status status;
    char *msg;   /* FRAME_MESSAGE only */
    size_t len;
} event;

typedef struct events {
    event *items;
    size_t count, cap;
} events;

static void events_push(events *e, frame_status st, char *msg, size_t len)
{
    if (e->count == e->cap) {
        e->cap = e->cap ? e->cap * 2 : 16;
        e->items = xrealloc(e->items, e->cap * sizeof *e->items);
    }
    e->items[e->count++] = (event){st, msg, len};
}

static void events_free(events *e)
{
    for (size_t i = 0; i < e->count; i++)
        free(e->items[i].msg);
    free(e->items);
    *e = (events){0};
}

/* Takes events until NEED_MORE (or a BAD_HEADER, which repeats forever). */
static void drain(framing_decoder *d, events *e)
{
    if (e->count && e->items[e->count - 1].status == FRAME_BAD_HEADER)
        return; /* the connection is closed after a bad header */
    for (;;) {
        char *msg = (char *)"sentinel";
        size_t len = 12345;
        frame_status st = framing_decoder_next(d, &msg, &len);
        if (st == FRAME_NEED_MORE) {
            assert_null(msg);
            assert_int_equal(len, 0);
            return;
        }
        if (st == FRAME_MESSAGE) {
            assert_non_null(msg);
            assert_int_equal(msg[len], '\0');
        } else {
            assert_null(msg);
        }
        events_push(e, st, msg, len);
        if (st == FRAME_BAD_HEADER)
            return;
    }
}

/* Feeds data in the pieces that end at cuts[0..ncuts) and then at len. */
static void run_cuts(size_t max, const char *data, size_t len, const size_t *cuts, size_t ncuts, events *out)
{
    framing_decoder d;
    framing_decoder_init(&d, max);
    size_t at = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t to = i < ncuts ? cuts[i] : len;
        framing_decoder_feed(&d, data + at, to - at);
        drain(&d, out);
        at = to;
    }
    framing_decoder_free(&d);
}

static void run_whole(size_t max, const char *data, size_t len, events *out) { run_cuts(max, data, len, NULL, 0, out); }

static void run_bytewise(size_t max, const char *data, size_t len, events *out)
{
    framing_decoder d;
    framing_decoder_init(&d, max);
    for (size_t i = 0; i < len; i++) {
        framing_decoder_feed(&d, data + i, 1);
        drain(&d, out);
    }
    framing_decoder_free(&d);
}

/* The expected event list, from (status, text) pairs; text is NULL for
 * OVERSIZED and BAD_HEADER. */
typedef struct want {
    frame_status status;
    const char *msg;
    size_t len; /* for OVERSIZED: the size when it is known exactly; 0: any */
} want;

static void check_events(const events *got, const want *w, size_t n, const char *what)
{
    if (got->count != n)
        fail_msg("%s: %zu events, want %zu", what, got->count, n);
    for (size_t i = 0; i < n; i++) {
        const event *e = &got->items[i];
        if (e->status != w[i].status)
            fail_msg("%s: event %zu has status %d, want %d", what, i, (int)e->status, (int)w[i].status);
        if (w[i].status == FRAME_MESSAGE) {
            size_t wl = strlen(w[i].msg);
            if (e->len != wl || memcmp(e->msg, w[i].msg, wl) != 0)
                fail_msg("%s: event %zu is '%.*s', want '%s'", what, i, (int)e->len, e->msg, w[i].msg);
        } else if (w[i].status == FRAME_OVERSIZED && w[i].len && e->len != w[i].len) {
            fail_msg("%s: oversized event %zu reports %zu bytes, want %zu", what, i, e->len, w[i].len);
        }
    }
}

/* The stream must decode to `w` however it is cut: whole, byte by byte, and
 * in two pieces at every split point. */
static void check_all_splits(size_t max, const char *data, size_t len, const want *w, size_t n)
{
    events e = {0};
    run_whole(max, data, len, &e);
    check_events(&e, w, n, "whole");
    events_free(&e);
    run_bytewise(max, data, len, &e);
    /* observed sizes of oversized messages depend on the cut: compare without them */
    want *loose = xmalloc((n ? n : 1) * sizeof *loose);
    for (size_t i = 0; i < n; i++) {
        loose[i] = w[i];
        if (loose[i].status == FRAME_OVERSIZED)
            loose[i].len = 0;
    }
    check_events(&e, loose, n, "byte by byte");
    events_free(&e);
    for (size_t k = 0; k <= len; k++) {
        char what[64];
        snprintf(what, sizeof what, "split at %zu", k);
        run_cuts(max, data, len, &k, 1, &e);
        check_events(&e, loose, n, what);
        events_free(&e);
    }
    free(loose);
}

static char *repeat(char c, size_t n)
{
    char *s = xmalloc(n + 1);
    memset(s, c, n);
    s[n] = '\0';
    return s;
}

/* A JSON string message of exactly n bytes: "xxx...". */
static char *json_of_size(size_t n)
{
    char *s = repeat('x', n);
    s[0] = '"';
    s[n - 1] = '"';
    return s;
}

/* ---- newline framing ----------------------------------------------------------- */

static void test_newline_basic(void **state)
{
    (void)state;
    static const char stream[] = "{\"a\":1}\n[1,2]\n\"s\"\n";
    static const want w[] = {{FRAME_MESSAGE, "{\"a\":1}", 0}, {FRAME_MESSAGE, "[1,2]", 0}, {FRAME_MESSAGE, "\"s\"", 0}};
    events e = {0};
    run_whole(1024, stream, strlen(stream), &e);
    check_events(&e, w, 3, "newline");
    events_free(&e);

    framing_decoder d;
    framing_decoder_init(&d, 1024);
    char *msg = (char *)"x";
    size_t len = 5;
    /* nothing fed yet */
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_null(msg);
    assert_int_equal(len, 0);
    assert_int_equal(d.mode, FRAMING_UNKNOWN);
    /* a message without its newline waits */
    framing_decoder_feed(&d, "{\"a\":1}", 7);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(d.mode, FRAMING_NEWLINE);
    framing_decoder_feed(&d, "\n", 1);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    assert_string_equal(msg, "{\"a\":1}");
    assert_int_equal(len, 7);
    free(msg);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    /* feeding nothing is harmless */
    framing_decoder_feed(&d, NULL, 0);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    framing_decoder_free(&d);
}

static void test_newline_crlf_and_blank_lines(void **state)
{
    (void)state;
    static const char stream[] = "\n\r\n  \t \r\n{\"a\":1}\r\n\r\n\n[2]\n \t{\"b\":\"c d\"}  \r\n\r\n";
    static const want w[] = {
        {FRAME_MESSAGE, "{\"a\":1}", 0}, {FRAME_MESSAGE, "[2]", 0}, {FRAME_MESSAGE, "{\"b\":\"c d\"}  ", 0}};
    check_all_splits(1024, stream, strlen(stream), w, 3);
    /* only blank lines: nothing */
    check_all_splits(1024, " \n\r\n\t\n", 6, NULL, 0);
}

static void test_newline_oversized(void **state)
{
    (void)state;
    /* max 16: lines of 16 bytes pass, 17 do not, however they arrive */
    char *m16 = json_of_size(16), *m17 = json_of_size(17), *m100 = json_of_size(100);
    buf s = BUF_INIT;
    buf_appendf(&s, "%s\n%s\n[1]\n%s\r\n{}\n%s\r\n", m16, m17, m100, m16);
    want w[] = {{FRAME_MESSAGE, m16, 0}, {FRAME_OVERSIZED, NULL, 17},  {FRAME_MESSAGE, "[1]", 0},
                {FRAME_OVERSIZED, NULL, 100}, {FRAME_MESSAGE, "{}", 0}, {FRAME_MESSAGE, m16, 0}};
    check_all_splits(16, s.data, s.len, w, 6);

    /* an oversized line that arrives in many pieces is reported once, and
     * the next line is still decoded */
    framing_decoder d;
    framing_decoder_init(&d, 16);
    events e = {0};
    framing_decoder_feed(&d, "[", 1);
    for (int i = 0; i < 1000; i++) {
        framing_decoder_feed(&d, "1,2,3,4,5,", 10);
        drain(&d, &e);
        /* the decoder does not hold the discarded line */
        assert_true(d.in.len - d.start <= 16 + 10);
    }
    framing_decoder_feed(&d, "6]\n[7]", 6);
    drain(&d, &e);
    framing_decoder_feed(&d, "\n", 1);
    drain(&d, &e);
    static const want w2[] = {{FRAME_OVERSIZED, NULL, 0}, {FRAME_MESSAGE, "[7]", 0}};
    check_events(&e, w2, 2, "pieces");
    assert_true(e.items[0].len > 16);
    events_free(&e);
    framing_decoder_free(&d);

    /* leading whitespace does not count against the limit */
    char *pad = repeat(' ', 40);
    buf_clear(&s);
    buf_appendf(&s, "%s%s\n%s\n%s%s\n", pad, m16, pad, pad, m17);
    want w3[] = {{FRAME_MESSAGE, m16, 0}, {FRAME_OVERSIZED, NULL, 17}};
    check_all_splits(16, s.data, s.len, w3, 2);
    free(pad);

    free(m16);
    free(m17);
    free(m100);
    buf_free(&s);
}

/* ---- content-length framing -------------------------------------------------------- */

static void test_content_length_basic(void **state)
{
    (void)state;
    static const char stream[] = "Content-Length: 7\r\n\r\n{\"a\":1}"
                                 "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n[]"
                                 "\r\n\r\n\n  "
                                 "content-type: application/json\r\nCONTENT-LENGTH:3\r\n\r\n\"x\""
                                 "Content-Length: \t 12 \t\r\n\r\n[\"a\\nb\",\"\n\"]"
                                 "Content-Length: 0\r\n\r\n"
                                 "cOnTeNt-LeNgTh: 00002\r\n\r\n{}";
    static const want w[] = {{FRAME_MESSAGE, "{\"a\":1}", 0}, {FRAME_MESSAGE, "[]", 0},
                             {FRAME_MESSAGE, "\"x\"", 0},     {FRAME_MESSAGE, "[\"a\\nb\",\"\n\"]", 0},
                             {FRAME_MESSAGE, "", 0},          {FRAME_MESSAGE, "{}", 0}};
    check_all_splits(1024, stream, strlen(stream), w, 6);

    /* a header without its body waits, as does half a body */
    framing_decoder d;
    framing_decoder_init(&d, 1024);
    char *msg;
    size_t len;
    framing_decoder_feed(&d, "Content-Length: 10\r\n\r\n", 22);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(d.mode, FRAMING_CONTENT_LENGTH);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    framing_decoder_feed(&d, "[1,2,", 5);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    framing_decoder_feed(&d, "3,4]Content", 11);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    assert_int_equal(len, 10);
    assert_string_equal(msg, "[1,2,3,4]C");
    free(msg);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    framing_decoder_free(&d);
}

static void test_content_length_oversized(void **state)
{
    (void)state;
    char *body100 = json_of_size(100), *body16 = json_of_size(16);
    buf s = BUF_INIT;
    buf_appendf(&s, "Content-Length: 100\r\n\r\n%sContent-Length: 16\r\n\r\n%sContent-Length: 17\r\n\r\n%s-Content-Length: 2\r\n\r\n{}",
                body100, body16, body16);
    want w[] = {{FRAME_OVERSIZED, NULL, 100}, {FRAME_MESSAGE, body16, 0}, {FRAME_OVERSIZED, NULL, 17},
                {FRAME_MESSAGE, "{}", 0}};
    /* the announced size is known in every cut */
    events e = {0};
    run_bytewise(16, s.data, s.len, &e);
    check_events(&e, w, 4, "byte by byte");
    events_free(&e);
    check_all_splits(16, s.data, s.len, w, 4);

    /* a huge body that arrives in many pieces: reported once, never buffered */
    framing_decoder d;
    framing_decoder_init(&d, 64);
    framing_decoder_feed(&d, "Content-Length: 1000000\r\n\r\n", 27);
    drain(&d, &e);
    char chunk[1000];
    memset(chunk, 'z', sizeof chunk);
    for (int i = 0; i < 999; i++) {
        framing_decoder_feed(&d, chunk, sizeof chunk);
        drain(&d, &e);
        assert_true(d.in.len - d.start == 0);
    }
    framing_decoder_feed(&d, chunk, 990);
    drain(&d, &e);
    framing_decoder_feed(&d, "0123456789Content-Length: 3\r\n\r\n[5]", 34);
    drain(&d, &e);
    want w2[] = {{FRAME_OVERSIZED, NULL, 1000000}, {FRAME_MESSAGE, "[5]", 0}};
    check_events(&e, w2, 2, "pieces");
    events_free(&e);
    framing_decoder_free(&d);

    free(body100);
    free(body16);
    buf_free(&s);
}

static void check_bad_header(const char *stream, size_t len)
{
    want w[] = {{FRAME_BAD_HEADER, NULL, 0}};
    events e = {0};
    run_whole(1 << 20, stream, len, &e);
    check_events(&e, w, 1, stream);
    events_free(&e);
    run_bytewise(1 << 20, stream, len, &e);
    check_events(&e, w, 1, stream);
    events_free(&e);
}

static void test_bad_headers(void **state)
{
    (void)state;
#define BAD(s) check_bad_header(s, sizeof(s) - 1)
    BAD("Content-Length 5\r\n\r\n{\"a\"}");
    BAD("Content-Length: abc\r\n\r\n");
    BAD("Content-Length: -5\r\n\r\n");
    BAD("Content-Length: +5\r\n\r\n");
    BAD("Content-Length: 5x\r\n\r\n");
    BAD("Content-Length: 5 5\r\n\r\n");
    BAD("Content-Length: 0x10\r\n\r\n");
    BAD("Content-Length:\r\n\r\n");
    BAD("Content-Length:  \r\n\r\n");
    BAD("Content-Length: 99999999999999999999999999\r\n\r\n");
    BAD("Content-Type: application/json\r\n\r\n{}");
    BAD("Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}");
    BAD("Content-Length: 2\r\ncontent-length: 3\r\n\r\n{}");
    BAD("Content-Length : 2\r\n\r\n{}");
    BAD("Content-Length: 2\r\nX Bad: y\r\n\r\n{}");
    BAD("Content-Length: 2\r\n: y\r\n\r\n{}");
    BAD("Content-Length: 2\r\nno colon here\r\n\r\n{}");
    BAD("Cookie\r\n\r\n");
#undef BAD

    /* a header block that never ends is refused once it passes the limit,
     * not buffered forever */
    framing_decoder d;
    framing_decoder_init(&d, 1 << 20);
    events e = {0};
    framing_decoder_feed(&d, "Content-Length: 2\r\nX-Pad: ", 26);
    char pad[100];
    memset(pad, 'p', sizeof pad);
    size_t fed = 26;
    while (e.count == 0 && fed < 3 * FRAMING_MAX_HEADER) {
        framing_decoder_feed(&d, pad, sizeof pad);
        fed += sizeof pad;
        drain(&d, &e);
    }
    assert_int_equal(e.count, 1);
    assert_int_equal(e.items[0].status, FRAME_BAD_HEADER);
    assert_true(fed > FRAMING_MAX_HEADER && fed <= FRAMING_MAX_HEADER + 3 + sizeof pad);
    /* and the decoder stays broken: nothing more is decoded */
    framing_decoder_feed(&d, "\r\n\r\n{}Content-Length: 2\r\n\r\n{}", 30);
    char *msg;
    size_t len;
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_BAD_HEADER);
    assert_null(msg);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_BAD_HEADER);
    events_free(&e);
    framing_decoder_free(&d);
}

/* A header block of exactly n bytes (without its blank line). */
static char *header_of_size(size_t n, const char *body)
{
    buf b = BUF_INIT;
    buf_appendf(&b, "Content-Length: %zu\r\nX-Pad: ", strlen(body));
    while (b.len < n)
        buf_push(&b, 'p');
    buf_append_str(&b, "\r\n\r\n");
    buf_append_str(&b, body);
    return buf_detach(&b);
}

static void test_header_limit(void **state)
{
    (void)state;
    /* FRAMING_MAX_HEADER bytes of header are accepted however they arrive */
    char *s = header_of_size(FRAMING_MAX_HEADER, "[1]");
    want ok[] = {{FRAME_MESSAGE, "[1]", 0}};
    events e = {0};
    run_whole(1024, s, strlen(s), &e);
    check_events(&e, ok, 1, "whole");
    events_free(&e);
    run_bytewise(1024, s, strlen(s), &e);
    check_events(&e, ok, 1, "byte by byte");
    events_free(&e);
    for (size_t k = FRAMING_MAX_HEADER - 8; k < FRAMING_MAX_HEADER + 8; k++) {
        run_cuts(1024, s, strlen(s), &k, 1, &e);
        check_events(&e, ok, 1, "split near the limit");
        events_free(&e);
    }
    free(s);
    /* one byte more is not */
    s = header_of_size(FRAMING_MAX_HEADER + 1, "[1]");
    check_bad_header(s, strlen(s));
    free(s);
}

/* ---- mode detection --------------------------------------------------------------- */

static framing_mode mode_of(const char *stream)
{
    framing_decoder d;
    framing_decoder_init(&d, 1024);
    framing_decoder_feed(&d, stream, strlen(stream));
    char *msg;
    size_t len;
    frame_status st = framing_decoder_next(&d, &msg, &len);
    if (st == FRAME_MESSAGE)
        free(msg);
    framing_mode m = d.mode;
    framing_decoder_free(&d);
    return m;
}

static void test_mode_detection(void **state)
{
    (void)state;
    assert_int_equal(mode_of("Content-Length: 2\r\n\r\n{}"), FRAMING_CONTENT_LENGTH);
    assert_int_equal(mode_of("content-length: 2\r\n\r\n{}"), FRAMING_CONTENT_LENGTH);
    assert_int_equal(mode_of("C"), FRAMING_CONTENT_LENGTH);
    assert_int_equal(mode_of("c"), FRAMING_CONTENT_LENGTH);
    assert_int_equal(mode_of(" \r\n\t Content-Length: 2\r\n\r\n{}"), FRAMING_CONTENT_LENGTH);
    assert_int_equal(mode_of("{\"a\":1}\n"), FRAMING_NEWLINE);
    assert_int_equal(mode_of("{"), FRAMING_NEWLINE);
    assert_int_equal(mode_of("["), FRAMING_NEWLINE);
    assert_int_equal(mode_of("\n\n  [1]\n"), FRAMING_NEWLINE);
    assert_int_equal(mode_of("x"), FRAMING_NEWLINE);
    assert_int_equal(mode_of(""), FRAMING_UNKNOWN);
    assert_int_equal(mode_of(" \r\n\t"), FRAMING_UNKNOWN);

    /* whitespace first, the deciding byte later */
    framing_decoder d;
    framing_decoder_init(&d, 1024);
    char *msg;
    size_t len;
    framing_decoder_feed(&d, "\r\n ", 3);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(d.mode, FRAMING_UNKNOWN);
    framing_decoder_feed(&d, "Content-Length: 3\r\n\r\n[1]", 24);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    assert_int_equal(d.mode, FRAMING_CONTENT_LENGTH);
    assert_string_equal(msg, "[1]");
    free(msg);
    /* once decided, the mode stays: a newline message is now a header
     * that has not ended, then a bad one */
    framing_decoder_feed(&d, "{\"a\":1}\n", 8);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    framing_decoder_feed(&d, "\r\n\r\n", 4);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_BAD_HEADER);
    framing_decoder_free(&d);

    /* whitespace before the first message is dropped as it arrives */
    framing_decoder_init(&d, 1024);
    char ws[4096];
    for (size_t i = 0; i < sizeof ws; i++)
        ws[i] = " \t\r\n\v\f"[i % 6];
    for (int i = 0; i < 256; i++) {
        framing_decoder_feed(&d, ws, sizeof ws);
        assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
        assert_int_equal(d.in.len - d.start, 0);
        assert_int_equal(d.mode, FRAMING_UNKNOWN);
    }
    framing_decoder_feed(&d, "\v[1]\n", 5);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    assert_string_equal(msg, "[1]");
    free(msg);
    framing_decoder_free(&d);

    framing_decoder_init(&d, 1024);
    static const char mixed[] = "[1]\nContent-Length: 2\r\n\r\n{}\n";
    framing_decoder_feed(&d, mixed, strlen(mixed));
    events e = {0};
    drain(&d, &e);
    static const want w[] = {{FRAME_MESSAGE, "[1]", 0}, {FRAME_MESSAGE, "Content-Length: 2", 0},
                             {FRAME_MESSAGE, "{}", 0}};
    check_events(&e, w, 3, "newline stays newline");
    events_free(&e);
    framing_decoder_free(&d);
}

/* ---- every cut of a mixed stream ------------------------------------------------------ */

static void test_every_split_point(void **state)
{
    (void)state;
    char *big = json_of_size(300);
    buf s = BUF_INIT;
    /* content-length: messages of 0, 2, 300 bytes, headers in several spellings */
    buf_appendf(&s, "Content-Length: 2\r\n\r\n{}");
    buf_appendf(&s, "Content-Length: 300\r\nContent-Type: application/json\r\n\r\n%s", big);
    buf_appendf(&s, "\r\n");
    buf_appendf(&s, "Content-Length: 0\r\n\r\n");
    buf_appendf(&s, "content-length:   11  \r\n\r\n[\"\\r\\n\",\"\"]");
    buf_appendf(&s, "Content-Length: 3\r\n\r\n\n\n\n");
    want w[] = {{FRAME_MESSAGE, "{}", 0}, {FRAME_MESSAGE, big, 0}, {FRAME_MESSAGE, "", 0},
                {FRAME_MESSAGE, "[\"\\r\\n\",\"\"]", 0}, {FRAME_MESSAGE, "\n\n\n", 0}};
    check_all_splits(1024, s.data, s.len, w, 5);
    /* the same with a limit that makes the big one oversized */
    want w_small[] = {{FRAME_MESSAGE, "{}", 0}, {FRAME_OVERSIZED, NULL, 300}, {FRAME_MESSAGE, "", 0},
                      {FRAME_MESSAGE, "[\"\\r\\n\",\"\"]", 0}, {FRAME_MESSAGE, "\n\n\n", 0}};
    check_all_splits(100, s.data, s.len, w_small, 5);

    /* newline: short, long, CRLF, blank lines */
    buf_clear(&s);
    buf_appendf(&s, "{}\n%s\r\n\n[1,2,3]\r\n   \n{\"k\":\"v\"}\n", big);
    want w2[] = {{FRAME_MESSAGE, "{}", 0}, {FRAME_MESSAGE, big, 0}, {FRAME_MESSAGE, "[1,2,3]", 0},
                 {FRAME_MESSAGE, "{\"k\":\"v\"}", 0}};
    check_all_splits(1024, s.data, s.len, w2, 4);
    want w2_small[] = {{FRAME_MESSAGE, "{}", 0}, {FRAME_OVERSIZED, NULL, 300}, {FRAME_MESSAGE, "[1,2,3]", 0},
                       {FRAME_MESSAGE, "{\"k\":\"v\"}", 0}};
    check_all_splits(100, s.data, s.len, w2_small, 4);
    /* a message of exactly the limit, ended by CRLF */
    check_all_splits(300, s.data, s.len, w2, 4);

    /* three pieces, at every pair of cut points of a short stream */
    static const char short_cl[] = "Content-Length: 4\r\n\r\n[10]\nContent-Length: 2\r\n\r\n{}";
    static const want w3[] = {{FRAME_MESSAGE, "[10]", 0}, {FRAME_MESSAGE, "{}", 0}};
    size_t n = strlen(short_cl);
    for (size_t i = 0; i <= n; i++)
        for (size_t j = i; j <= n; j++) {
            size_t cuts[2] = {i, j};
            events e = {0};
            run_cuts(1024, short_cl, n, cuts, 2, &e);
            check_events(&e, w3, 2, "three pieces");
            events_free(&e);
        }
    free(big);
    buf_free(&s);
}

/* ---- a long burst -------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void burst(framing_mode mode, size_t chunk)
{
    enum { N = 100000 };
    buf s = BUF_INIT;
    char msg[64];
    for (int i = 0; i < N; i++) {
        int n = snprintf(msg, sizeof msg, "{\"id\":%d}", i);
        framing_encode(mode, &s, msg, (size_t)n);
    }
    double t0 = now();
    framing_decoder d;
    framing_decoder_init(&d, 1 << 20);
    int seen = 0;
    for (size_t at = 0; at < s.len;) {
        size_t k = s.len - at < chunk ? s.len - at : chunk;
        framing_decoder_feed(&d, s.data + at, k);
        at += k;
        char *m;
        size_t len;
        frame_status st;
        while ((st = framing_decoder_next(&d, &m, &len)) == FRAME_MESSAGE) {
            int n = snprintf(msg, sizeof msg, "{\"id\":%d}", seen);
            if (len != (size_t)n || memcmp(m, msg, len) != 0)
                fail_msg("message %d is '%s'", seen, m);
            free(m);
            seen++;
        }
        assert_int_equal(st, FRAME_NEED_MORE);
    }
    double elapsed = now() - t0;
    assert_int_equal(seen, N);
    if (elapsed > 1.0 * SLOWDOWN)
        fail_msg("100000 messages took %.2f s (mode %d, chunks of %zu)", elapsed, (int)mode, chunk);
    framing_decoder_free(&d);
    buf_free(&s);
}

static void test_pipelined_burst(void **state)
{
    (void)state;
    burst(FRAMING_NEWLINE, (size_t)-1);
    burst(FRAMING_CONTENT_LENGTH, (size_t)-1);
    burst(FRAMING_NEWLINE, 65536);
    burst(FRAMING_CONTENT_LENGTH, 65536);
    burst(FRAMING_NEWLINE, 7);
    burst(FRAMING_CONTENT_LENGTH, 7);
}

/* ---- encoding ------------------------------------------------------------------------- */

static void test_encode(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    buf_append_str(&out, "prefix|");
    framing_encode(FRAMING_CONTENT_LENGTH, &out, "{\"a\":1}", 7);
    assert_string_equal(out.data, "prefix|Content-Length: 7\r\n\r\n{\"a\":1}");
    buf_clear(&out);
    framing_encode(FRAMING_NEWLINE, &out, "{\"a\":1}", 7);
    framing_encode(FRAMING_UNKNOWN, &out, "[]", 2);
    assert_string_equal(out.data, "{\"a\":1}\n[]\n");
    buf_clear(&out);
    framing_encode(FRAMING_CONTENT_LENGTH, &out, "", 0);
    assert_string_equal(out.data, "Content-Length: 0\r\n\r\n");
    buf_clear(&out);

    /* what is encoded decodes back, in both framings */
    static const char *msgs[] = {"{}", "[1,2,3]", "{\"text\":\"line1\\nline2\",\"e\":\"\xC3\xA9\"}", "\"\"", "null"};
    for (int mode = FRAMING_CONTENT_LENGTH; mode <= FRAMING_NEWLINE; mode++) {
        buf_clear(&out);
        for (size_t i = 0; i < 5; i++)
            framing_encode((framing_mode)mode, &out, msgs[i], strlen(msgs[i]));
        want w[5];
        for (size_t i = 0; i < 5; i++)
            w[i] = (want){FRAME_MESSAGE, msgs[i], 0};
        check_all_splits(1024, out.data, out.len, w, 5);
    }
    /* content-length carries any bytes, newlines and NULs included */
    buf_clear(&out);
    framing_encode(FRAMING_CONTENT_LENGTH, &out, "a\nb\0c", 5);
    framing_decoder d;
    framing_decoder_init(&d, 1024);
    framing_decoder_feed(&d, out.data, out.len);
    char *msg;
    size_t len;
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    assert_int_equal(len, 5);
    assert_memory_equal(msg, "a\nb\0c", 6);
    free(msg);
    framing_decoder_free(&d);
    buf_free(&out);
}

/* A big message is handed out in the decoder's own buffer: what came before
 * and after it in the same feed must survive, in both framings. */
static void test_big_messages_keep_their_neighbours(void **state)
{
    (void)state;
    const size_t big = ((size_t)3 << 20) + 7;
    for (int cl = 0; cl < 2; cl++) {
        buf stream = BUF_INIT, body = BUF_INIT;
        buf_append(&body, "\"", 1);
        for (size_t i = 0; i < big - 2; i++)
            buf_push(&body, (char)('a' + i % 26));
        buf_append(&body, "\"", 1);
        const char *parts[] = {"[1]", body.data, "[2]"};
        for (int i = 0; i < 3; i++) {
            if (cl)
                buf_appendf(&stream, "Content-Length: %zu\r\n\r\n%s", strlen(parts[i]), parts[i]);
            else
                buf_appendf(&stream, "%s\n", parts[i]);
        }
        framing_decoder d;
        framing_decoder_init(&d, (size_t)64 << 20);
        /* fed in uneven pieces, as a socket delivers them */
        for (size_t off = 0; off < stream.len;) {
            size_t n = stream.len - off < 300007 ? stream.len - off : 300007;
            framing_decoder_feed(&d, stream.data + off, n);
            off += n;
        }
        for (int i = 0; i < 3; i++) {
            char *msg;
            size_t len;
            assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
            assert_int_equal(len, strlen(parts[i]));
            assert_memory_equal(msg, parts[i], len);
            assert_int_equal(msg[len], '\0');
            free(msg);
        }
        char *msg;
        size_t len;
        assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
        /* and the decoder goes on after it */
        framing_decoder_feed(&d, cl ? "Content-Length: 3\r\n\r\n[3]" : "[3]\n", cl ? 24 : 4);
        assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
        assert_string_equal(msg, "[3]");
        free(msg);
        framing_decoder_free(&d);
        buf_free(&stream);
        buf_free(&body);
    }
}

/* What a decoder holds for its peer, and whether a message has begun: the
 * server's input budget and its timeout read these. */
static void test_what_is_held_and_whether_a_message_has_begun(void **state)
{
    (void)state;
    char *msg;
    size_t len;
    framing_decoder d;
    framing_decoder_init(&d, 16);
    assert_int_equal(framing_decoder_buffered(&d), 0);
    assert_false(framing_decoder_inside_message(&d));
    /* whitespace before a message is not held, and begins nothing */
    framing_decoder_feed(&d, " \n", 2);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(framing_decoder_buffered(&d), 0);
    assert_false(framing_decoder_inside_message(&d));
    framing_decoder_feed(&d, "[1,", 3);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(framing_decoder_buffered(&d), 3);
    assert_true(framing_decoder_inside_message(&d));
    framing_decoder_feed(&d, "2]\n[", 4);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    free(msg);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(framing_decoder_buffered(&d), 1);
    /* an oversized line is dropped as it comes, but it has not ended */
    framing_decoder_feed(&d, "1,2,3,4,5,6,7,8,9,", 18);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_OVERSIZED);
    assert_int_equal(framing_decoder_buffered(&d), 0);
    assert_true(framing_decoder_inside_message(&d));
    framing_decoder_feed(&d, "0]\n", 3);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_false(framing_decoder_inside_message(&d));
    framing_decoder_free(&d);

    /* with headers: a message has begun once its header is read, body or not */
    framing_decoder_init(&d, 16);
    framing_decoder_feed(&d, "Content-Length: 2\r\n\r\n", 21);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_NEED_MORE);
    assert_int_equal(framing_decoder_buffered(&d), 0);
    assert_true(framing_decoder_inside_message(&d));
    framing_decoder_feed(&d, "{}", 2);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_MESSAGE);
    free(msg);
    assert_false(framing_decoder_inside_message(&d));
    /* an oversized body being skipped has not ended either */
    framing_decoder_feed(&d, "Content-Length: 40\r\n\r\n{", 23);
    assert_int_equal(framing_decoder_next(&d, &msg, &len), FRAME_OVERSIZED);
    assert_true(framing_decoder_inside_message(&d));
    framing_decoder_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_newline_basic),
        cmocka_unit_test(test_newline_crlf_and_blank_lines),
        cmocka_unit_test(test_newline_oversized),
        cmocka_unit_test(test_content_length_basic),
        cmocka_unit_test(test_content_length_oversized),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_header_limit),
        cmocka_unit_test(test_mode_detection),
        cmocka_unit_test(test_every_split_point),
        cmocka_unit_test(test_pipelined_burst),
        cmocka_unit_test(test_encode),
        cmocka_unit_test(test_big_messages_keep_their_neighbours),
        cmocka_unit_test(test_what_is_held_and_whether_a_message_has_begun),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
