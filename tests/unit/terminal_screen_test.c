/* The terminal's screen without a program: libvterm fed through the parser's
 * mirror. Text, colours (palette, 256 and truecolor), attributes (dim
 * included, which libvterm 0.1.4 does not know), wide and combining
 * characters, the scrollback ring and the viewport's scroll, resizing,
 * titles, terminal replies, damaged rows, malformed input (with the CSI
 * sequence that overflows libvterm 0.1.4), and the skipping of plain-text
 * floods, checked against interpreting every byte on random streams. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "terminal/internal.h"

typedef struct events_seen {
    buf replies;
    char title[256];
    int titles;
} events_seen;

static void on_reply(void *ctx, const char *data, size_t len) { buf_append(&((events_seen *)ctx)->replies, data, len); }

static void on_title(void *ctx, const char *title)
{
    events_seen *e = ctx;
    snprintf(e->title, sizeof e->title, "%s", title);
    e->titles++;
}

static const term__screen_events events = {on_reply, on_title};

static void feed(term__screen *s, const char *text) { term__screen_feed(s, text, strlen(text), 0); }

/* The text of a viewport row, trailing blanks dropped. */
static char *row_text(term__screen *s, unsigned row)
{
    unsigned cols = term__screen_cols(s);
    terminal_cell *cells = calloc(cols, sizeof *cells);
    term__screen_row(s, row, cells);
    buf out = BUF_INIT;
    for (unsigned c = 0; c < cols; c++)
        buf_append_str(&out, cells[c].text);
    free(cells);
    while (out.len && out.data[out.len - 1] == ' ')
        out.data[--out.len] = '\0';
    if (!out.data)
        buf_append(&out, "", 0);
    return buf_detach(&out);
}

static void assert_row(term__screen *s, unsigned row, const char *want)
{
    char *got = row_text(s, row);
    if (strcmp(got, want) != 0)
        fail_msg("row %u: got \"%s\", want \"%s\"", row, got, want);
    free(got);
}

static terminal_cell cell_at(term__screen *s, unsigned row, unsigned col)
{
    unsigned cols = term__screen_cols(s);
    terminal_cell *cells = calloc(cols, sizeof *cells);
    term__screen_row(s, row, cells);
    terminal_cell c = cells[col];
    free(cells);
    return c;
}

static void test_text_and_cursor(void **state)
{
    term__screen *s = term__screen_new(5, 20, 100, NULL, NULL);
    feed(s, "hello\r\nworld");
    assert_row(s, 0, "hello");
    assert_row(s, 1, "world");
    unsigned r, c;
    term__screen_cursor(s, &r, &c);
    assert_int_equal(r, 1);
    assert_int_equal(c, 5);
    terminal_cell empty = cell_at(s, 3, 3);
    assert_string_equal(empty.text, " ");
    assert_false(empty.has_fg || empty.has_bg || empty.bold || empty.dim || empty.inverse);
    term__screen_free(s);
}

static void test_colours(void **state)
{
    term__screen *s = term__screen_new(5, 20, 0, NULL, NULL);
    feed(s, "\x1b[31mR\x1b[38;5;196mX\x1b[38;2;1;2;3mT\x1b[44mB\x1b[48;2;250;128;7mG\x1b[0mN"
            "\x1b[38:2:9:8:7mC\x1b[39;49mD");
    terminal_cell red = cell_at(s, 0, 0);
    assert_true(red.has_fg);
    assert_int_equal(red.fg, 0xe00000); /* libvterm's palette red */
    assert_false(red.has_bg);
    assert_int_equal(cell_at(s, 0, 1).fg, 0xff0000); /* xterm 256: 196 */
    assert_int_equal(cell_at(s, 0, 2).fg, 0x010203);
    terminal_cell blue_bg = cell_at(s, 0, 3);
    assert_true(blue_bg.has_bg);
    assert_int_equal(blue_bg.bg, 0x0000e0);
    assert_int_equal(cell_at(s, 0, 4).bg, 0xfa8007);
    terminal_cell plain = cell_at(s, 0, 5);
    assert_false(plain.has_fg);
    assert_false(plain.has_bg);
    assert_int_equal(cell_at(s, 0, 6).fg, 0x090807); /* colon form */
    assert_false(cell_at(s, 0, 7).has_fg);
    term__screen_free(s);
}

static void test_attributes_and_dim(void **state)
{
    term__screen *s = term__screen_new(5, 30, 0, NULL, NULL);
    feed(s, "\x1b[1mb\x1b[0m\x1b[3mi\x1b[0m\x1b[4mu\x1b[0m\x1b[2md\x1b[0m\x1b[7mv\x1b[0m"
            "\x1b[1;2mB\x1b[22mn\x1b[2;5mk\x1b[25mK\x1b[0;5mx\x1b[0m\x1b[38;2;2;2;2mc\x1b[0m");
    assert_true(cell_at(s, 0, 0).bold);
    assert_true(cell_at(s, 0, 1).italic);
    assert_true(cell_at(s, 0, 2).underline);
    terminal_cell dim = cell_at(s, 0, 3);
    assert_true(dim.dim);
    assert_false(dim.bold);
    assert_true(cell_at(s, 0, 4).inverse);
    terminal_cell both = cell_at(s, 0, 5);
    assert_true(both.bold && both.dim);
    terminal_cell normal = cell_at(s, 0, 6); /* 22: neither bold nor dim */
    assert_false(normal.bold || normal.dim);
    assert_true(cell_at(s, 0, 7).dim);       /* blink does not clear it */
    assert_true(cell_at(s, 0, 8).dim);       /* nor does blink off */
    assert_false(cell_at(s, 0, 9).dim);      /* blink alone is not dim */
    terminal_cell rgb = cell_at(s, 0, 10);   /* a 2 inside 38;2;... is a colour */
    assert_false(rgb.dim);
    assert_int_equal(rgb.fg, 0x020202);
    term__screen_free(s);
}

static void test_wide_and_combining(void **state)
{
    term__screen *s = term__screen_new(3, 10, 0, NULL, NULL);
    feed(s, "a\xe4\xb8\xad" "b" "e\xcc\x81" "\xef\xbc\xa1");
    terminal_cell a = cell_at(s, 0, 0);
    assert_string_equal(a.text, "a");
    terminal_cell wide = cell_at(s, 0, 1);
    assert_string_equal(wide.text, "\xe4\xb8\xad");
    assert_int_equal(wide.width, 2);
    terminal_cell half = cell_at(s, 0, 2);
    assert_string_equal(half.text, "");
    assert_int_equal(half.width, 0);
    assert_string_equal(cell_at(s, 0, 3).text, "b");
    assert_string_equal(cell_at(s, 0, 4).text, "e\xcc\x81"); /* e + combining acute, one cell */
    assert_int_equal(cell_at(s, 0, 5).width, 2);              /* fullwidth A */
    assert_int_equal(cell_at(s, 0, 6).width, 0);
    unsigned r, c;
    term__screen_cursor(s, &r, &c);
    assert_int_equal(c, 7);
    /* wide characters survive the trip through the scrollback */
    feed(s, "\r\n\r\n\r\n");
    term__screen_free(s);
    s = term__screen_new(2, 10, 10, NULL, NULL);
    feed(s, "\xe4\xb8\xad" "e\xcc\x81" "\r\nx\r\ny");
    assert_int_equal(term__screen_scrollback_size(s), 1);
    assert_true(term__screen_scroll(s, 1));
    assert_string_equal(cell_at(s, 0, 0).text, "\xe4\xb8\xad");
    assert_int_equal(cell_at(s, 0, 0).width, 2);
    assert_string_equal(cell_at(s, 0, 1).text, "");
    assert_string_equal(cell_at(s, 0, 2).text, "e\xcc\x81");
    term__screen_free(s);
}

static void test_invalid_utf8(void **state)
{
    term__screen *s = term__screen_new(3, 10, 0, NULL, NULL);
    feed(s, "a\xff" "b\xc3" "c");
    assert_string_equal(cell_at(s, 0, 0).text, "a");
    assert_string_equal(cell_at(s, 0, 1).text, "\xef\xbf\xbd");
    assert_string_equal(cell_at(s, 0, 2).text, "b");
    assert_string_equal(cell_at(s, 0, 3).text, "\xef\xbf\xbd");
    assert_string_equal(cell_at(s, 0, 4).text, "c");
    /* a character split between two writes is one character */
    term__screen_feed(s, "\r\n\xe4\xb8", 4, 0);
    term__screen_feed(s, "\xad", 1, 0);
    assert_string_equal(cell_at(s, 1, 0).text, "\xe4\xb8\xad");
    term__screen_free(s);
}

static void test_scrollback_and_scroll(void **state)
{
    term__screen *s = term__screen_new(5, 20, 100, NULL, NULL);
    char line[32];
    for (int i = 0; i < 1000; i++) {
        snprintf(line, sizeof line, "line %d\r\n", i);
        feed(s, line);
    }
    /* 1000 lines and an empty one below: 996 went up, the ring keeps 100 */
    assert_int_equal(term__screen_scrollback_size(s), 100);
    assert_row(s, 0, "line 996");
    assert_row(s, 3, "line 999");
    assert_true(term__screen_scroll(s, 3));
    assert_int_equal(term__screen_scroll_offset(s), 3);
    assert_row(s, 0, "line 993");
    assert_row(s, 3, "line 996");
    assert_true(term__screen_scroll(s, 1000));
    assert_int_equal(term__screen_scroll_offset(s), 100);
    assert_row(s, 0, "line 896");
    assert_false(term__screen_scroll(s, 5)); /* already at the top */
    /* output while scrolled back keeps the same lines in view... */
    assert_true(term__screen_scroll(s, -90));
    assert_row(s, 0, "line 986");
    feed(s, "more\r\n");
    assert_row(s, 0, "line 986");
    /* ...and the way down stops at the screen */
    assert_true(term__screen_scroll(s, -LONG_MAX));
    assert_int_equal(term__screen_scroll_offset(s), 0);
    assert_row(s, 3, "more");
    term__screen_free(s);
}

static void test_resize_keeps_lines(void **state)
{
    term__screen *s = term__screen_new(5, 20, 100, NULL, NULL);
    feed(s, "a\r\nb\r\nc\r\nd\r\ne");
    term__screen_resize(s, 2, 20); /* the top lines go up into the scrollback */
    assert_int_equal(term__screen_rows(s), 2);
    assert_row(s, 0, "d");
    assert_row(s, 1, "e");
    assert_int_equal(term__screen_scrollback_size(s), 3);
    term__screen_resize(s, 5, 10); /* and come back down */
    assert_int_equal(term__screen_scrollback_size(s), 0);
    assert_row(s, 0, "a");
    assert_row(s, 4, "e");
    assert_int_equal(term__screen_cols(s), 10);
    term__screen_free(s);
}

static void test_title_reply_and_damage(void **state)
{
    events_seen e = {0};
    term__screen *s = term__screen_new(5, 20, 0, &events, &e);
    feed(s, "\x1b]0;first\x07");
    assert_string_equal(e.title, "first");
    feed(s, "\x1b]2;second\x1b\\");
    assert_string_equal(e.title, "second");
    feed(s, "\x1b]1;icon only\x07");
    assert_string_equal(e.title, "second");
    /* a title that arrives in pieces (libvterm 0.1.4 alone loses it) */
    const char *pieces[] = {"\x1b", "]", "2;sp", "l\x01it", "\x1b", "\\"};
    for (size_t i = 0; i < 6; i++)
        feed(s, pieces[i]);
    assert_string_equal(e.title, "split");
    feed(s, "\x1b]2;gone\x1b[1mB");  /* an ESC that starts something else drops it */
    assert_string_equal(e.title, "split");
    assert_true(cell_at(s, 0, 0).bold);
    feed(s, "\x1b[c"); /* device attributes: the terminal answers */
    assert_true(e.replies.len > 3);
    assert_memory_equal(e.replies.data, "\x1b[?", 3);
    unsigned rows[5];
    term__screen_take_damage(s, rows);
    feed(s, "\x1b[4;1Hx");
    size_t n = term__screen_take_damage(s, rows);
    assert_int_equal(n, 1);
    assert_int_equal(rows[0], 3);
    assert_int_equal(term__screen_take_damage(s, rows), 0);
    buf_free(&e.replies);
    term__screen_free(s);
}

/* libvterm 0.1.4 writes past its argument array for a CSI sequence with
 * more than 16 arguments: such a sequence must never reach it. */
static void test_malformed_input(void **state)
{
    term__screen *s = term__screen_new(5, 20, 10, NULL, NULL);
    buf b = BUF_INIT;
    buf_append_str(&b, "x\x1b[");
    for (int i = 0; i < 20000; i++)
        buf_append_str(&b, "1;");
    buf_append_str(&b, "my");
    term__screen_feed(s, b.data, b.len, 0);
    buf_clear(&b);
    buf_append_str(&b, "\x1b[");
    for (int i = 0; i < 5000; i++)
        buf_append_str(&b, "123:");
    buf_append_str(&b, "mz");
    term__screen_feed(s, b.data, b.len, 0);
    assert_row(s, 0, "xyz");
    /* a too long sequence split over many writes */
    buf_clear(&b);
    buf_append_str(&b, "\x1b[");
    for (int i = 0; i < 300; i++)
        buf_append_str(&b, "9");
    buf_append_str(&b, ";1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;18;19;20m!");
    for (size_t i = 0; i < b.len; i++)
        term__screen_feed(s, b.data + i, 1, 0);
    assert_row(s, 0, "xyz!");
    /* random bytes, in random pieces */
    srand(7);
    for (int round = 0; round < 200; round++) {
        char junk[512];
        for (size_t i = 0; i < sizeof junk; i++)
            junk[i] = (char)(rand() % 4 == 0 ? "\x1b[];?:0123456789mrhlHJK\x07\x18\x9b\xc3"[rand() % 28] : rand());
        size_t at = 0;
        while (at < sizeof junk) {
            size_t n = 1 + (size_t)rand() % 64;
            if (n > sizeof junk - at)
                n = sizeof junk - at;
            term__screen_feed(s, junk + at, n, 0);
            at += n;
        }
    }
    unsigned r, c;
    term__screen_cursor(s, &r, &c);
    assert_true(r < 5 && c <= 20);
    buf_free(&b);
    term__screen_free(s);
}

/* ----- skipping plain text ------------------------------------------------------------ */

static unsigned long long rng_state;
static unsigned rnd(unsigned n)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((rng_state >> 33) % n);
}

static void plain_line(buf *out)
{
    static const char *const pieces[] = {"abc", "hello world", "\xc3\xa9", "\xe4\xb8\xad\xe6\x96\x87", "\t",
                                         "e\xcc\x81", "0123456789", "~!@#$%^&*()_+", "\xf0\x9f\x98\x80"};
    unsigned n = rnd(12);
    for (unsigned i = 0; i < n; i++)
        buf_append_str(out, pieces[rnd(sizeof pieces / sizeof pieces[0])]);
    unsigned end = rnd(20);
    buf_append_str(out, end == 0 ? "\n" : end == 1 ? "\r" : "\r\n");
}

/* A stream of plain floods and everything that could spoil skipping them. */
static void random_stream(buf *out, unsigned rows)
{
    for (unsigned step = 0; step < 60; step++) {
        switch (rnd(16)) {
        case 0:
        case 1:
        case 2: { /* a flood */
            unsigned lines = 500 + rnd(3000);
            for (unsigned i = 0; i < lines; i++)
                plain_line(out);
            break;
        }
        case 3:
            buf_appendf(out, "\x1b[%u;%ur", 1 + rnd(rows), 1 + rnd(rows + 2));
            break;
        case 4:
            buf_append_str(out, rnd(2) ? "\x1b[r" : "\x1b[1;999r");
            break;
        case 5:
            buf_appendf(out, "\x1b[%u;%uH", 1 + rnd(rows), 1 + rnd(30));
            break;
        case 6:
            buf_appendf(out, "\x1b[%u%c", rnd(5), "ABCDJKLMPX@"[rnd(11)]);
            break;
        case 7:
            buf_append_str(out, rnd(2) ? "\x1b[?1049h" : "\x1b[?1049l");
            break;
        case 8:
            buf_appendf(out, "\x1b[%u;3%um", rnd(10), rnd(8));
            break;
        case 9:
            buf_append_str(out, rnd(2) ? "\x1b[?69h\x1b[3;9s" : "\x1b[?69l");
            break;
        case 10:
            buf_append_str(out, rnd(4) ? "\x1b]0;title\x07" : "\x1b" "c");
            break;
        case 11:
            buf_append_str(out, rnd(2) ? "\x1b[4h" : "\x1b[4l"); /* insert mode */
            break;
        case 12:
            buf_append_str(out, rnd(2) ? "\x1bM\x1bM" : "\x1b" "7\x1b[2;2H\x1b" "8");
            break;
        case 13:
            buf_append_str(out, "\x1b]0;unterminated ");
            break;
        case 14:
            buf_append_str(out, "\xe4\xb8"); /* a character cut off */
            break;
        default:
            plain_line(out);
            break;
        }
    }
}

/* Everything a client can see: the viewport at every scroll position, the
 * cursor, the scrollback's size. */
static char *dump(term__screen *s)
{
    buf out = BUF_INIT;
    size_t total = term__screen_scrollback_size(s);
    unsigned r, c;
    term__screen_cursor(s, &r, &c);
    buf_appendf(&out, "cursor %u,%u scrollback %zu\n", r, c, total);
    term__screen_scroll(s, -LONG_MAX);
    for (unsigned row = 0; row < term__screen_rows(s); row++) {
        char *t = row_text(s, row);
        buf_appendf(&out, "%s\n", t);
        free(t);
    }
    for (size_t k = 1; k <= total; k++) {
        term__screen_scroll(s, -LONG_MAX);
        term__screen_scroll(s, (long)k);
        char *t = row_text(s, 0);
        buf_appendf(&out, "sb %zu: %s\n", k, t);
        free(t);
    }
    term__screen_scroll(s, -LONG_MAX);
    return buf_detach(&out);
}

static void test_skipping_matches_interpreting(void **state)
{
    uint64_t skipped_total = 0;
    for (unsigned seed = 1; seed <= 12; seed++) {
        rng_state = seed;
        unsigned rows = 5 + rnd(20), cols = 20 + rnd(70);
        size_t scrollback = rnd(3) ? rnd(300) : 0;
        buf stream = BUF_INIT;
        random_stream(&stream, rows);
        term__screen *fast = term__screen_new(rows, cols, scrollback, NULL, NULL);
        term__screen *slow = term__screen_new(rows, cols, scrollback, NULL, NULL);
        term__screen_set_fast_forward(slow, false);
        /* the same bytes, cut differently */
        for (size_t at = 0; at < stream.len;) {
            size_t n = 1 + rnd(rnd(4) ? 300000 : 300);
            if (n > stream.len - at)
                n = stream.len - at;
            size_t done = 0;
            while (done < n)
                done += term__screen_feed(fast, stream.data + at + done, n - done, 0);
            at += n;
        }
        term__screen_feed(slow, stream.data, stream.len, 0);
        char *a = dump(fast), *b = dump(slow);
        if (strcmp(a, b) != 0) {
            size_t i = 0;
            while (a[i] == b[i])
                i++;
            size_t from = i > 200 ? i - 200 : 0;
            fail_msg("seed %u (%ux%u, scrollback %zu): skipping changed the screen near\n%.400s\n---\n%.400s", seed,
                     rows, cols, scrollback, a + from, b + from);
        }
        assert_int_equal(term__screen_skipped(slow), 0);
        skipped_total += term__screen_skipped(fast);
        free(a);
        free(b);
        buf_free(&stream);
        term__screen_free(fast);
        term__screen_free(slow);
    }
    assert_true(skipped_total > 0); /* the streams did exercise it */
}

static void test_flood_is_skipped(void **state)
{
    term__screen *s = term__screen_new(24, 80, 1000, NULL, NULL);
    buf b = BUF_INIT;
    for (int i = 0; i < 100000; i++)
        buf_appendf(&b, "flood line %d\r\n", i);
    term__screen_feed(s, b.data, b.len, 0);
    assert_true(term__screen_skipped(s) > b.len / 2);
    assert_row(s, 22, "flood line 99999");
    assert_row(s, 0, "flood line 99977");
    assert_int_equal(term__screen_scrollback_size(s), 1000);
    term__screen_scroll(s, 1000);
    assert_row(s, 0, "flood line 98977");
    buf_free(&b);
    term__screen_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_and_cursor),
        cmocka_unit_test(test_colours),
        cmocka_unit_test(test_attributes_and_dim),
        cmocka_unit_test(test_wide_and_combining),
        cmocka_unit_test(test_invalid_utf8),
        cmocka_unit_test(test_scrollback_and_scroll),
        cmocka_unit_test(test_resize_keeps_lines),
        cmocka_unit_test(test_title_reply_and_damage),
        cmocka_unit_test(test_malformed_input),
        cmocka_unit_test(test_skipping_matches_interpreting),
        cmocka_unit_test(test_flood_is_skipped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
