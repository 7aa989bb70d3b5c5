/* screen: a libvterm screen, its scrollback ring, and what libvterm 0.1.4
 * cannot do by itself.
 *
 * libvterm interprets the bytes and keeps the visible screen; the lines it
 * scrolls off the top come to sb_pushline and live here, in a ring of
 * compact cells, until the ring is full (then the oldest go). Two things are
 * added on the way in, which is why the bytes pass through a mirror of
 * libvterm's own parser before they reach it:
 *
 * - Whole strings and short sequences. libvterm 0.1.4 loses an OSC string
 *   (a title) that arrives in two writes, and writes past an array for a
 *   CSI sequence with more than 16 arguments. The mirror holds each
 *   sequence until it is complete and gives it to libvterm in one write,
 *   and drops a CSI sequence that is too long.
 *
 * - Dim. libvterm 0.1.4 ignores SGR 2 (faint). The mirror rewrites each SGR
 *   sequence so that libvterm's blink attribute carries dim instead: 2
 *   becomes 5, 22 becomes 22;25, and a real 5 or 25 becomes the ignored 2.
 *   Blink is not part of a cell on the wire, so nothing is lost but blinking.
 *
 * - Skipping runs of plain text. libvterm copies the whole screen for every
 *   line it scrolls, which makes a flood of text (cat of a big file) cost
 *   rows x cols per line. When the bytes ahead are a long run of plain text
 *   (printable characters, tabs, CR and LF; valid UTF-8; no escape or other
 *   control), only its last lines can still be seen: every line before
 *   them is scrolled through the screen and out of the scrollback before the
 *   run ends. Such a run is skipped up to a line start S after which at
 *   least rows + scrollback + a margin lines remain, provided that the text
 *   between cannot leave anything else behind: the parser is between
 *   sequences, the main screen is shown, no scroll margins are set, and the
 *   cursor is at the start of the bottom row right after a CR LF. Under
 *   those conditions each LF of the run scrolls the whole screen, each line
 *   is written on a blank row, and nothing but the cursor's row, the
 *   screen's rows and the scrollback changes; the cursor is at the start of
 *   the bottom row at S either way, and the lines after S replace every row
 *   and every scrollback line that the skipped text would have written (the
 *   margin covers the row the cursor was on and a UTF-8 sequence cut off
 *   before the run). So the screen and the scrollback come out identical;
 *   the tests check it against interpreting everything.
 *   The mirror tracks the scroll margins itself (libvterm does not report
 *   them): top/bottom margins other than the full screen, or left/right
 *   margin mode, turn skipping off until they are reset.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>
#include <uv.h>
#include <vterm.h>

#include "buf.h"
#include "utf.h"

/* An escape sequence longer than this passes through unexamined; a CSI
 * sequence longer than this is dropped. */
#define SEQ_MAX 256
/* libvterm 0.1.4 loses an OSC or DCS string that reaches it in two writes
 * (a title split between two reads): strings up to this long are given to
 * it whole. */
#define STRING_MAX ((size_t)4096)
/* Interpreting stops between slices when the turn's time is up. */
#define SLICE_BYTES ((size_t)2 << 10)
/* A skip must save at least this much to be worth looking at the cursor. */
#define SKIP_MIN_BYTES ((size_t)16 << 10)
#define SKIP_MARGIN_LINES 8
/* libvterm 0.1.4 keeps this many CSI arguments and writes past its array
 * for more: a CSI sequence with more is never given to it. */
#define CSI_ARGS_MAX 16

enum parse_state {
    P_NORMAL,
    P_ESC,
    P_CSI_LEADER,
    P_CSI_ARGS,
    P_CSI_INTERMED,
    P_STRING,      /* OSC or DCS */
    P_STRING_ESC,  /* an ESC inside one: ST, or the start of another sequence */
    P_CSI_DISCARD, /* a CSI sequence too long for libvterm, dropped to its end */
};

/* A scrollback cell: 16 bytes instead of libvterm's 40. */
typedef struct sb_cell {
    uint32_t ch;       /* the first character; 0 empty, UINT32_MAX the right half of a wide one */
    VTermColor fg, bg;
    uint16_t attrs;
    uint8_t width;
    uint8_t nchars;    /* characters in the cell; those after the first are the line's extras */
} sb_cell;

typedef struct sb_line {
    size_t bytes;
    uint16_t len;         /* cells stored: the row without its blank end */
    uint16_t extra_count;
    sb_cell cells[];      /* then extra_count uint32_t: combining characters, in cell order */
} sb_line;

struct term__screen {
    VTerm *vt;
    VTermScreen *vs;
    VTermState *state;
    unsigned rows, cols;
    const term__screen_events *events;
    void *ctx;
    VTermScreenCell blank;

    sb_line **ring;   /* cap slots; count lines from head, oldest first */
    size_t cap, head, count, bytes;
    size_t offset;    /* viewport: lines scrolled up into the ring */

    uint8_t *damaged; /* per viewport row */

    int pstate;
    char held[SEQ_MAX]; /* the sequence being read, not yet given to libvterm */
    size_t held_len;
    bool held_tainted;  /* overflowed or carries control bytes: forwarded as is */
    bool esc_intermed;
    unsigned csi_args;  /* arguments of the CSI sequence being held */
    buf string;         /* the OSC or DCS string being held, from its ESC */
    bool string_passing; /* too long to hold: passed on as it comes */
    bool altscreen, margins_tb, margins_lr;

    bool fast_forward;
    char last[2];             /* the last two bytes consumed */
    uint64_t consumed;
    uint64_t no_skip_before;  /* position before which no skip can succeed */
    uint64_t skipped;
};

/* ----- the scrollback ring ---------------------------------------------------------------- */

static uint16_t pack_attrs(const VTermScreenCellAttrs *a)
{
    return (uint16_t)(a->bold | a->underline << 1 | a->italic << 3 | a->blink << 4 | a->reverse << 5 |
                      a->strike << 6 | a->font << 7 | a->dwl << 11 | a->dhl << 12);
}

static void unpack_attrs(uint16_t v, VTermScreenCellAttrs *a)
{
    memset(a, 0, sizeof *a);
    a->bold = v & 1;
    a->underline = (v >> 1) & 3;
    a->italic = (v >> 3) & 1;
    a->blink = (v >> 4) & 1;
    a->reverse = (v >> 5) & 1;
    a->strike = (v >> 6) & 1;
    a->font = (v >> 7) & 15;
    a->dwl = (v >> 11) & 1;
    a->dhl = (v >> 12) & 3;
}

static bool cell_is_blank(const VTermScreenCell *c)
{
    VTermScreenCellAttrs none;
    memset(&none, 0, sizeof none);
    return c->chars[0] == 0 && VTERM_COLOR_IS_DEFAULT_FG(&c->fg) && VTERM_COLOR_IS_DEFAULT_BG(&c->bg) &&
           pack_attrs(&c->attrs) == pack_attrs(&none);
}

static size_t cell_chars(const VTermScreenCell *c)
{
    size_t n = 0;
    while (n < VTERM_MAX_CHARS_PER_CELL && c->chars[n])
        n++;
    return n;
}

static sb_line *line_from_cells(int cols, const VTermScreenCell *cells)
{
    size_t len = (size_t)cols;
    while (len && cell_is_blank(&cells[len - 1]))
        len--;
    size_t extras = 0;
    for (size_t i = 0; i < len; i++)
        if (cells[i].chars[0] != UINT32_MAX && cell_chars(&cells[i]) > 1)
            extras += cell_chars(&cells[i]) - 1;
    size_t bytes = sizeof(sb_line) + len * sizeof(sb_cell) + extras * sizeof(uint32_t);
    sb_line *line = xmalloc(bytes);
    line->bytes = bytes;
    line->len = (uint16_t)len;
    line->extra_count = (uint16_t)extras;
    uint32_t *extra = (uint32_t *)(line->cells + len);
    for (size_t i = 0; i < len; i++) {
        const VTermScreenCell *c = &cells[i];
        sb_cell *o = &line->cells[i];
        size_t n = c->chars[0] == UINT32_MAX ? 1 : cell_chars(c);
        o->ch = c->chars[0];
        o->nchars = (uint8_t)n;
        o->fg = c->fg;
        o->bg = c->bg;
        o->attrs = pack_attrs(&c->attrs);
        o->width = (uint8_t)c->width;
        for (size_t k = 1; k < n; k++)
            *extra++ = c->chars[k];
    }
    return line;
}

/* Expands a stored line into cols libvterm cells, blank past its end. */
static void line_to_cells(const term__screen *s, const sb_line *line, int cols, VTermScreenCell *out)
{
    const uint32_t *extra = (const uint32_t *)(line->cells + line->len);
    for (int i = 0; i < cols; i++) {
        VTermScreenCell *c = &out[i];
        if ((size_t)i >= line->len) {
            *c = s->blank;
            continue;
        }
        const sb_cell *o = &line->cells[i];
        memset(c->chars, 0, sizeof c->chars);
        c->chars[0] = o->ch;
        for (size_t k = 1; k < o->nchars && k < VTERM_MAX_CHARS_PER_CELL; k++)
            c->chars[k] = *extra++;
        c->width = (char)o->width;
        unpack_attrs(o->attrs, &c->attrs);
        c->fg = o->fg;
        c->bg = o->bg;
    }
}

static sb_line *ring_at(const term__screen *s, size_t index) /* 0 = oldest */
{
    return s->ring[(s->head + index) % s->cap];
}

static void ring_drop_oldest(term__screen *s)
{
    sb_line *line = s->ring[s->head];
    s->bytes -= line->bytes;
    free(line);
    s->ring[s->head] = NULL;
    s->head = (s->head + 1) % s->cap;
    s->count--;
}

static void damage_viewport_row(term__screen *s, size_t row)
{
    if (row < s->rows)
        s->damaged[row] = 1;
}

void term__screen_damage_all(term__screen *s) { memset(s->damaged, 1, s->rows); }

static int on_pushline(int cols, const VTermScreenCell *cells, void *user)
{
    term__screen *s = user;
    if (!s->cap)
        return 1;
    sb_line *line = line_from_cells(cols, cells);
    while (s->count && (s->count == s->cap || s->bytes + line->bytes > TERMINAL_SCROLLBACK_MAX_BYTES))
        ring_drop_oldest(s);
    s->ring[(s->head + s->count) % s->cap] = line;
    s->count++;
    s->bytes += line->bytes;
    if (s->offset) {
        /* keep showing the same lines while scrolled back, as long as they
         * are kept */
        s->offset++;
        if (s->offset > s->count) { /* the line shown at the top is gone */
            s->offset = s->count;
            term__screen_damage_all(s);
        }
    }
    return 1;
}

static int on_popline(int cols, VTermScreenCell *cells, void *user)
{
    term__screen *s = user;
    if (!s->count)
        return 0;
    size_t last = (s->head + s->count - 1) % s->cap;
    sb_line *line = s->ring[last];
    line_to_cells(s, line, cols, cells);
    s->bytes -= line->bytes;
    free(line);
    s->ring[last] = NULL;
    s->count--;
    if (s->offset > s->count)
        s->offset = s->count;
    return 1;
}

/* ----- libvterm's callbacks ----------------------------------------------------------------- */

static int on_damage(VTermRect rect, void *user)
{
    term__screen *s = user;
    for (int r = rect.start_row; r < rect.end_row; r++)
        damage_viewport_row(s, (size_t)r + s->offset);
    return 1;
}

static int on_settermprop(VTermProp prop, VTermValue *val, void *user)
{
    term__screen *s = user;
    switch (prop) {
    case VTERM_PROP_ALTSCREEN:
        s->altscreen = val->boolean;
        break;
    case VTERM_PROP_TITLE:
        if (s->events && s->events->title)
            s->events->title(s->ctx, val->string ? val->string : "");
        break;
    default:
        break;
    }
    return 1;
}

static void on_reply(const char *data, size_t len, void *user)
{
    term__screen *s = user;
    if (s->events && s->events->reply)
        s->events->reply(s->ctx, data, len);
}

static const VTermScreenCallbacks screen_callbacks = {
    .damage = on_damage,
    .settermprop = on_settermprop,
    .sb_pushline = on_pushline,
    .sb_popline = on_popline,
};

/* ----- the parser's mirror ------------------------------------------------------------------ */

static void forward(term__screen *s, const char *p, size_t n)
{
    if (n)
        vterm_input_write(s->vt, p, n);
}

static void flush_held(term__screen *s)
{
    forward(s, s->held, s->held_len);
    s->held_len = 0;
    s->held_tainted = false;
}

static void hold(term__screen *s, char c)
{
    if (s->held_len == SEQ_MAX) {
        forward(s, s->held, s->held_len);
        s->held_len = 0;
        s->held_tainted = true;
    }
    s->held[s->held_len++] = c;
}

static void start_escape(term__screen *s)
{
    flush_held(s);
    hold(s, '\x1b');
    s->pstate = P_ESC;
    s->esc_intermed = false;
}

typedef struct csi_arg {
    long value;     /* -1: missing */
    bool more;      /* followed by ':' (a sub-parameter) */
} csi_arg;

/* Reads the arguments of a held CSI sequence as libvterm does. Returns the
 * count, or -1 when there are more than libvterm keeps. */
static int parse_args(const char *p, size_t n, csi_arg *args)
{
    int count = 0;
    if (!n) {
        args[0] = (csi_arg){-1, false};
        return 1;
    }
    args[0] = (csi_arg){-1, false};
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (c >= '0' && c <= '9') {
            if (args[count].value < 0)
                args[count].value = 0;
            if (args[count].value < 100000000)
                args[count].value = args[count].value * 10 + (c - '0');
        } else {
            args[count].more = c == ':';
            if (++count == CSI_ARGS_MAX)
                return -1;
            args[count] = (csi_arg){-1, false};
        }
    }
    return count + 1;
}

static void append_arg(buf *out, const csi_arg *a)
{
    if (a->value >= 0)
        buf_appendf(out, "%ld", a->value);
}

/* SGR: carry dim in blink (see the top of this file). */
static void finish_sgr(term__screen *s, const char *params, size_t n)
{
    csi_arg args[CSI_ARGS_MAX];
    int count = parse_args(params, n, args);
    if (count < 0) {
        flush_held(s);
        return;
    }
    buf out = BUF_INIT;
    buf_append(&out, "\x1b[", 2);
    bool changed = false;
    int produced = 0;
    for (int i = 0; i < count;) {
        /* the group of this code: itself, the colour arguments libvterm
         * takes after 38 and 48, and any sub-parameters */
        int last = i;
        long v = args[i].value;
        if ((v == 38 || v == 48) && !args[i].more && i + 1 < count) {
            int rest = count - i - 2;
            long palette = args[i + 1].value;
            int take = palette == 2 ? (rest < 3 ? rest : 3) : palette == 5 ? (rest > 0 ? 1 : 0) : 0;
            last = i + 1 + take;
        }
        int end = last + 1;
        while (end < count && args[end - 1].more)
            end++;
        const char *replacement = NULL;
        if (end == i + 1 && !args[i].more) {
            if (v == 2)
                replacement = "5";
            else if (v == 5 || v == 25)
                replacement = "2";
            else if (v == 22)
                replacement = "22;25";
        }
        if (produced)
            buf_push(&out, ';');
        if (replacement) {
            buf_append_str(&out, replacement);
            changed = true;
            produced += v == 22 ? 2 : 1;
        } else {
            for (int k = i; k < end; k++) {
                append_arg(&out, &args[k]);
                if (k + 1 < end)
                    buf_push(&out, args[k].more ? ':' : ';');
            }
            produced += end - i;
        }
        i = end;
    }
    buf_push(&out, 'm');
    if (changed && produced <= CSI_ARGS_MAX) {
        forward(s, out.data, out.len);
        s->held_len = 0;
        s->held_tainted = false;
    } else {
        flush_held(s);
    }
    buf_free(&out);
}

/* DECSTBM: skipping stays on only for margins that span the whole screen
 * (libvterm then follows the screen's height through resizes). */
static void finish_stbm(term__screen *s, const char *params, size_t n)
{
    csi_arg args[CSI_ARGS_MAX];
    int count = parse_args(params, n, args);
    if (count < 0 || count > 2) {
        s->margins_tb = true;
    } else {
        long top = args[0].value <= 0 ? 1 : args[0].value;
        long bottom = count < 2 || args[1].value <= 0 ? (long)s->rows : args[1].value;
        s->margins_tb = !(top == 1 && bottom == (long)s->rows);
    }
    flush_held(s);
}

static void finish_csi(term__screen *s)
{
    const char *p = s->held + 2; /* after ESC [ */
    const char *end = s->held + s->held_len - 1;
    char final = *end;
    if (s->held_tainted) {
        /* not seen whole: assume the worst of what it could have set */
        if (final == 'r')
            s->margins_tb = true;
        if (final == 'h')
            s->margins_lr = true;
        flush_held(s);
        return;
    }
    char leader = 0;
    if (p < end && *p >= 0x3c && *p <= 0x3f)
        leader = *p++;
    const char *params = p;
    while (p < end && ((*p >= '0' && *p <= '9') || *p == ';' || *p == ':'))
        p++;
    size_t nparams = (size_t)(p - params);
    bool intermediates = p < end;
    if (!leader && !intermediates && final == 'm') {
        finish_sgr(s, params, nparams);
        return;
    }
    if (!leader && !intermediates && final == 'r') {
        finish_stbm(s, params, nparams);
        return;
    }
    if (leader == '?' && !intermediates && (final == 'h' || final == 'l')) {
        csi_arg args[CSI_ARGS_MAX];
        int count = parse_args(params, nparams, args);
        for (int i = 0; i < count; i++)
            if (args[i].value == 69)
                s->margins_lr = final == 'h';
        if (count < 0 && final == 'h')
            s->margins_lr = true;
    }
    flush_held(s);
}

/* Drops the CSI sequence being held: libvterm never sees it, but the
 * control bytes inside it, which it would have executed, still reach it. */
static void discard_csi(term__screen *s)
{
    for (size_t i = 0; i < s->held_len; i++)
        if ((unsigned char)s->held[i] < 0x20 && s->held[i] != 0x1b)
            forward(s, &s->held[i], 1);
    s->held_len = 0;
    s->held_tainted = false;
    s->pstate = P_CSI_DISCARD;
}

/* One byte of a sequence being held (every state but P_NORMAL and P_STRING),
 * following libvterm's parser: what it ignores or executes in the middle of
 * a sequence stays in place, so it sees the same bytes in the same order. */
static void step_held(term__screen *s, unsigned char c)
{
    bool in_csi = s->pstate == P_CSI_LEADER || s->pstate == P_CSI_ARGS || s->pstate == P_CSI_INTERMED;
    if (s->pstate == P_CSI_DISCARD) {
        if (c == 0x1b)
            start_escape(s);
        else if (c == 0x18 || c == 0x1a)
            s->pstate = P_NORMAL;
        else if (c < 0x20)
            forward(s, (const char *)&c, 1);
        else if (c > 0x3f && c != 0x7f)
            s->pstate = P_NORMAL; /* its final byte, or one that ends it as invalid */
        return;
    }
    if (in_csi && s->held_len == SEQ_MAX && c != 0x1b && c != 0x18 && c != 0x1a) {
        discard_csi(s);
        step_held(s, c);
        return;
    }
    if (c == 0x00 || c == 0x7f || (c < 0x20 && c != 0x18 && c != 0x1a && c != 0x1b)) {
        hold(s, (char)c);
        s->held_tainted = true;
        return;
    }
    if (c == 0x18 || c == 0x1a) { /* CAN, SUB: the sequence is dropped */
        hold(s, (char)c);
        flush_held(s);
        s->pstate = P_NORMAL;
        return;
    }
    if (c == 0x1b) {
        start_escape(s);
        return;
    }
    switch (s->pstate) {
    case P_ESC:
        hold(s, (char)c);
        if (c == '[') {
            s->pstate = P_CSI_LEADER;
            s->csi_args = 1;
        } else if (c == ']' || c == 'P') {
            buf_clear(&s->string);
            buf_append(&s->string, s->held, s->held_len);
            s->held_len = 0;
            s->held_tainted = false;
            s->string_passing = false;
            s->pstate = P_STRING;
        } else if (c >= 0x20 && c <= 0x2f) {
            s->esc_intermed = true;
        } else if (c >= 0x30 && c < 0x7f) {
            if (c == 'c' && !s->esc_intermed) /* RIS resets the margins */
                s->margins_tb = s->margins_lr = false;
            flush_held(s);
            s->pstate = P_NORMAL;
        } else {
            s->held_tainted = true; /* libvterm ignores it and stays in the escape */
        }
        return;
    case P_CSI_LEADER:
        if (c >= 0x3c && c <= 0x3f) {
            hold(s, (char)c);
            return;
        }
        s->pstate = P_CSI_ARGS;
        /* fall through */
    case P_CSI_ARGS:
        if ((c >= '0' && c <= '9') || c == ';' || c == ':') {
            if ((c == ';' || c == ':') && ++s->csi_args > CSI_ARGS_MAX) {
                discard_csi(s);
                return;
            }
            hold(s, (char)c);
            return;
        }
        s->pstate = P_CSI_INTERMED;
        /* fall through */
    case P_CSI_INTERMED:
        hold(s, (char)c);
        if (c >= 0x20 && c <= 0x2f)
            return;
        if (c >= 0x40 && c <= 0x7e)
            finish_csi(s);
        else
            flush_held(s); /* an invalid sequence, which libvterm drops */
        s->pstate = P_NORMAL;
        return;
    default:
        return;
    }
}

static void flush_string(term__screen *s)
{
    forward(s, s->string.data, s->string.len);
    buf_clear(&s->string);
}

/* Bytes of an OSC or DCS string from p[i], up to its end or n; held in
 * s->string unless it grew too long (then passed on from *run). Returns
 * where the mirror goes on. */
static size_t string_bytes(term__screen *s, const char *p, size_t i, size_t n, size_t *run)
{
    for (; i < n; i++) {
        unsigned char c = (unsigned char)p[i];
        if (s->pstate == P_STRING_ESC) {
            if (c == '\\' || c == 0x18 || c == 0x1a) { /* ST; or CAN, SUB: cancelled */
                buf_push(&s->string, (char)c);
                flush_string(s);
                s->pstate = P_NORMAL;
                *run = i + 1;
                return i + 1;
            }
            if (c == 0x1b || (c >= 0x20 && c != 0x7f)) {
                /* the string ends unfinished and this ESC starts a sequence;
                 * libvterm drops such a string, whether given whole or not */
                s->string.len--;
                flush_string(s);
                s->pstate = P_NORMAL;
                start_escape(s);
                *run = i;
                return i; /* this byte belongs to the new sequence */
            }
            buf_push(&s->string, (char)c); /* a control, executed inside the string */
            continue;
        }
        if (s->string_passing) {
            if (c == 0x07 || c == 0x18 || c == 0x1a) {
                s->pstate = P_NORMAL;
                return i + 1;
            }
            if (c == 0x1b) {
                forward(s, p + *run, i - *run);
                buf_clear(&s->string);
                buf_push(&s->string, '\x1b');
                s->string_passing = false;
                s->pstate = P_STRING_ESC;
                *run = i + 1;
            }
            continue;
        }
        buf_push(&s->string, (char)c);
        *run = i + 1;
        if (c == 0x07 || c == 0x18 || c == 0x1a) {
            flush_string(s);
            s->pstate = P_NORMAL;
            return i + 1;
        }
        if (c == 0x1b) {
            s->pstate = P_STRING_ESC;
        } else if (s->string.len >= STRING_MAX) {
            flush_string(s);
            s->string_passing = true;
        }
    }
    return n;
}

/* Gives n bytes to libvterm through the mirror. */
static void feed_bytes(term__screen *s, const char *p, size_t n)
{
    size_t i = 0, run = 0; /* run: start of the bytes passed on as they are */
    while (i < n) {
        if (s->pstate == P_NORMAL) {
            const char *esc = memchr(p + i, 0x1b, n - i);
            if (!esc) {
                i = n;
                break;
            }
            i = (size_t)(esc - p);
            forward(s, p + run, i - run);
            start_escape(s);
            run = ++i;
            continue;
        }
        if (s->pstate == P_STRING || s->pstate == P_STRING_ESC) {
            i = string_bytes(s, p, i, n, &run);
            continue;
        }
        step_held(s, (unsigned char)p[i]);
        run = ++i;
    }
    forward(s, p + run, n - run);
}

/* ----- skipping plain text ------------------------------------------------------------------ */

/* The end of the run of plain text that starts at pos. */
static size_t plain_end(const char *p, size_t pos, size_t len)
{
    size_t i = pos;
    while (i < len) {
        unsigned char c = (unsigned char)p[i];
        if ((c >= 0x20 && c < 0x7f) || c == '\r' || c == '\n' || c == '\t') {
            i++;
            continue;
        }
        if (c < 0x80)
            break;
        uint32_t cp;
        size_t k = utf8_decode(p + i, len - i, &cp);
        if ((cp == 0xFFFD && k == 1) || cp < 0xA0)
            break; /* invalid, cut off, or a C1 control */
        i += k;
    }
    return i;
}

/* A line start S in [pos, q) after which at least `keep` LFs remain before
 * q; 0 when there is none. */
static size_t skip_target(const char *p, size_t pos, size_t q, size_t keep)
{
    size_t seen = 0;
    size_t i = q;
    while (i > pos) {
        const char *nl = memrchr(p + pos, '\n', i - pos);
        if (!nl)
            return 0;
        i = (size_t)(nl - p);
        if (seen >= keep && i > pos && p[i - 1] == '\r')
            return i + 1;
        seen++;
    }
    return 0;
}

/* The position after the n-th CR LF from pos (or len). */
static size_t after_lines(const char *p, size_t pos, size_t len, size_t n)
{
    size_t i = pos;
    while (n && i < len) {
        const char *nl = memchr(p + i, '\n', len - i);
        if (!nl)
            return len;
        i = (size_t)(nl - p) + 1;
        if (i >= 2 && i - 2 >= pos && p[i - 2] == '\r')
            n--;
    }
    return i;
}

static bool may_skip(const term__screen *s)
{
    return s->fast_forward && s->pstate == P_NORMAL && !s->held_len && !s->altscreen && !s->margins_tb &&
           !s->margins_lr && s->last[0] == '\r' && s->last[1] == '\n';
}

/* Skips from pos (a line start) when the conditions at the top of this file
 * hold; returns where interpreting goes on. */
static size_t try_skip(term__screen *s, const char *p, size_t pos, size_t len)
{
    size_t q = plain_end(p, pos, len);
    size_t keep = s->rows + s->cap + SKIP_MARGIN_LINES;
    size_t target = skip_target(p, pos, q, keep);
    if (!target || target - pos < SKIP_MIN_BYTES) {
        /* nothing to gain before the run ends (or before more arrives) */
        s->no_skip_before = s->consumed + (q - pos);
        return pos;
    }
    VTermPos cursor;
    vterm_state_get_cursorpos(s->state, &cursor);
    if (cursor.row != (int)s->rows - 1 || cursor.col != 0) {
        /* after a screenful of lines the cursor is on the bottom row */
        s->no_skip_before = s->consumed + (after_lines(p, pos, len, s->rows) - pos);
        return pos;
    }
    s->skipped += target - pos;
    s->consumed += target - pos;
    term__screen_damage_all(s);
    return target;
}

/* Where the slice that starts at pos ends: after its last CR LF when it has
 * one, so that the next slice starts a line. */
static size_t slice_end(const char *p, size_t pos, size_t len)
{
    if (len - pos <= SLICE_BYTES)
        return len;
    size_t end = pos + SLICE_BYTES;
    const char *nl = memrchr(p + pos, '\n', end - pos);
    if (nl && nl > p + pos && nl[-1] == '\r')
        return (size_t)(nl - p) + 1;
    return end;
}

size_t term__screen_feed(term__screen *s, const char *data, size_t len, uint64_t deadline_ns)
{
    size_t pos = 0;
    while (pos < len) {
        if (may_skip(s) && s->consumed >= s->no_skip_before)
            pos = try_skip(s, data, pos, len);
        size_t end = slice_end(data, pos, len);
        feed_bytes(s, data + pos, end - pos);
        s->consumed += end - pos;
        if (end - pos >= 2) {
            s->last[0] = data[end - 2];
            s->last[1] = data[end - 1];
        } else if (end > pos) {
            s->last[0] = s->last[1];
            s->last[1] = data[end - 1];
        }
        pos = end;
        if (deadline_ns && uv_hrtime() >= deadline_ns)
            break;
    }
    return pos;
}

/* ----- the screen ------------------------------------------------------------------------------ */

term__screen *term__screen_new(unsigned rows, unsigned cols, size_t scrollback, const term__screen_events *events,
                               void *ctx)
{
    term__screen *s = xmalloc(sizeof *s);
    *s = (term__screen){
        .rows = rows, .cols = cols, .events = events, .ctx = ctx, .cap = scrollback,
        .ring = scrollback ? xcalloc(scrollback, sizeof *s->ring) : NULL, .damaged = xcalloc(rows, 1),
        .fast_forward = true, .last = {'\r', '\n'},
    };
    s->vt = vterm_new((int)rows, (int)cols);
    vterm_set_utf8(s->vt, 1);
    vterm_output_set_callback(s->vt, on_reply, s);
    s->state = vterm_obtain_state(s->vt);
    s->vs = vterm_obtain_screen(s->vt);
    vterm_screen_enable_altscreen(s->vs, 1);
    vterm_screen_set_callbacks(s->vs, &screen_callbacks, s);
    vterm_screen_set_damage_merge(s->vs, VTERM_DAMAGE_ROW);
    vterm_screen_reset(s->vs, 1);
    vterm_screen_get_cell(s->vs, (VTermPos){0, 0}, &s->blank);
    return s;
}

void term__screen_free(term__screen *s)
{
    if (!s)
        return;
    vterm_free(s->vt);
    while (s->count)
        ring_drop_oldest(s);
    free(s->ring);
    free(s->damaged);
    buf_free(&s->string);
    free(s);
}

void term__screen_set_fast_forward(term__screen *s, bool on) { s->fast_forward = on; }

uint64_t term__screen_skipped(const term__screen *s) { return s->skipped; }

void term__screen_resize(term__screen *s, unsigned rows, unsigned cols)
{
    if (rows == s->rows && cols == s->cols)
        return;
    if (rows != s->rows) {
        free(s->damaged);
        s->damaged = xcalloc(rows, 1);
    }
    s->rows = rows;
    s->cols = cols;
    vterm_set_size(s->vt, (int)rows, (int)cols);
    vterm_screen_flush_damage(s->vs);
    term__screen_damage_all(s);
}

unsigned term__screen_rows(const term__screen *s) { return s->rows; }
unsigned term__screen_cols(const term__screen *s) { return s->cols; }

bool term__screen_scroll(term__screen *s, long lines)
{
    size_t before = s->offset;
    if (lines < 0)
        s->offset = (size_t)-lines >= s->offset ? 0 : s->offset - (size_t)-lines;
    else
        s->offset = (size_t)lines >= s->count - s->offset ? s->count : s->offset + (size_t)lines;
    if (s->offset == before)
        return false;
    term__screen_damage_all(s);
    return true;
}

size_t term__screen_scroll_offset(const term__screen *s) { return s->offset; }
size_t term__screen_scrollback_size(const term__screen *s) { return s->count; }

void term__screen_cursor(const term__screen *s, unsigned *row, unsigned *col)
{
    VTermPos pos;
    vterm_state_get_cursorpos(s->state, &pos);
    *row = (unsigned)pos.row;
    *col = (unsigned)pos.col;
}

static uint32_t rgb_of(const term__screen *s, VTermColor c)
{
    vterm_screen_convert_color_to_rgb(s->vs, &c);
    return (uint32_t)c.rgb.red << 16 | (uint32_t)c.rgb.green << 8 | c.rgb.blue;
}

static void cell_out(const term__screen *s, const VTermScreenCell *c, terminal_cell *out)
{
    memset(out, 0, sizeof *out);
    if (c->chars[0] == UINT32_MAX) {
        out->width = 0; /* the right half of a wide character: text "" */
    } else if (c->chars[0] == 0) {
        out->text[0] = ' ';
        out->width = 1;
    } else {
        size_t at = 0;
        for (size_t k = 0; k < VTERM_MAX_CHARS_PER_CELL && c->chars[k]; k++) {
            uint32_t cp = c->chars[k];
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                cp = 0xFFFD;
            at += utf8_encode(cp, out->text + at);
        }
        out->width = c->width == 2 ? 2 : 1;
    }
    if (!VTERM_COLOR_IS_DEFAULT_FG(&c->fg)) {
        out->has_fg = true;
        out->fg = rgb_of(s, c->fg);
    }
    if (!VTERM_COLOR_IS_DEFAULT_BG(&c->bg)) {
        out->has_bg = true;
        out->bg = rgb_of(s, c->bg);
    }
    out->bold = c->attrs.bold;
    out->italic = c->attrs.italic;
    out->underline = c->attrs.underline != 0;
    out->dim = c->attrs.blink; /* see the top of this file */
    out->inverse = c->attrs.reverse;
}

void term__screen_row(const term__screen *s, unsigned row, terminal_cell *out)
{
    if (row < s->offset) {
        VTermScreenCell *cells = xmalloc(s->cols * sizeof *cells);
        line_to_cells(s, ring_at(s, s->count - s->offset + row), (int)s->cols, cells);
        for (unsigned c = 0; c < s->cols; c++)
            cell_out(s, &cells[c], &out[c]);
        /* a wide character cut off by a narrower screen has no right half */
        if (s->cols && out[s->cols - 1].width == 2)
            out[s->cols - 1].width = 1;
        free(cells);
        return;
    }
    int screen_row = (int)(row - s->offset);
    for (unsigned c = 0; c < s->cols; c++) {
        VTermScreenCell cell;
        vterm_screen_get_cell(s->vs, (VTermPos){screen_row, (int)c}, &cell);
        cell_out(s, &cell, &out[c]);
    }
}

size_t term__screen_take_damage(term__screen *s, unsigned *rows)
{
    vterm_screen_flush_damage(s->vs);
    size_t n = 0;
    for (unsigned r = 0; r < s->rows; r++)
        if (s->damaged[r]) {
            rows[n++] = r;
            s->damaged[r] = 0;
        }
    return n;
}
