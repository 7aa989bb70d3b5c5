/* Painting: the whole screen is drawn into ncurses' buffer every turn that
 * something changed, and ncurses sends the terminal only the cells that
 * differ, so an edit repaints the damaged lines and nothing else. Colours are
 * the theme's RGB: as they are on a direct-colour terminal, else the nearest
 * of the 256 (or 8) the terminal has. This is the view: it reads the model
 * and keeps nothing of its own but the overlay's and the chat's scroll, which
 * follow the selection and the end of the text as the screen's size allows. */
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "view.h"
#include "arena.h"

static int nearest_256(int rgb)
{
    int r = (rgb >> 16) & 255, g = (rgb >> 8) & 255, b = rgb & 255;
    static const int steps[6] = {0, 95, 135, 175, 215, 255};
    int idx[3], comp[3] = {r, g, b};
    for (int i = 0; i < 3; i++) {
        int best = 0;
        for (int s = 1; s < 6; s++)
            if (abs(steps[s] - comp[i]) < abs(steps[best] - comp[i]))
                best = s;
        idx[i] = best;
    }
    int cube = 16 + 36 * idx[0] + 6 * idx[1] + idx[2];
    int cr = steps[idx[0]], cg = steps[idx[1]], cb = steps[idx[2]];
    int cube_dist = (cr - r) * (cr - r) + (cg - g) * (cg - g) + (cb - b) * (cb - b);
    int grey = (r + g + b) / 3, gi = grey < 8 ? 0 : grey > 238 ? 23 : (grey - 8) / 10;
    int gv = 8 + 10 * gi;
    int grey_dist = (gv - r) * (gv - r) + (gv - g) * (gv - g) + (gv - b) * (gv - b);
    return grey_dist < cube_dist ? 232 + gi : cube;
}

int color_index(app *a, int rgb)
{
    if (rgb < 0 || !has_colors())
        return -1;
    if (a->direct_color)
        return rgb < 8 ? 8 : rgb; /* 0-7 name the terminal's own palette there: near-black stays near-black */
    if (COLORS >= 256)
        return nearest_256(rgb);
    int r = (rgb >> 16) & 255, g = (rgb >> 8) & 255, b = rgb & 255;
    return (r > 127 ? 1 : 0) | (g > 127 ? 2 : 0) | (b > 127 ? 4 : 0);
}

int pair_of(app *a, int fg_rgb, int bg_rgb)
{
    if (!has_colors())
        return 0;
    int p = alloc_pair(color_index(a, fg_rgb), color_index(a, bg_rgb));
    return p < 0 ? 0 : p;
}

/* One screen cell being built: a base character and the combining marks after it. */
typedef struct cell {
    wchar_t wc[CCHARW_MAX + 1];
    int n;
    attr_t attr;
    int pair;
    int width;
    int x;
} cell;

static void emit(int y, cell *c)
{
    if (c->n == 0)
        return;
    c->wc[c->n] = 0;
    cchar_t cc;
    int pair = c->pair;
    setcchar(&cc, c->wc, c->attr, 0, &pair);
    mvadd_wch(y, c->x, &cc);
    c->n = 0;
}

void put_text(app *a, int y, int x, int max_x, const char *text, attr_t attr, int pair)
{
    cell c = {.n = 0};
    while (text && *text && x < max_x) {
        wchar_t wc;
        mbstate_t st = {0};
        size_t len = mbrtowc(&wc, text, strlen(text), &st);
        if (len == (size_t)-1 || len == (size_t)-2 || len == 0) {
            wc = L'?';
            len = 1;
        }
        text += len;
        int w = wcwidth(wc);
        if (w == 0 && c.n > 0 && c.n < CCHARW_MAX) {
            c.wc[c.n++] = wc;
            continue;
        }
        if (w < 0)
            wc = L'?', w = 1;
        if (x + w > max_x)
            break;
        emit(y, &c);
        c = (cell){.wc = {wc}, .n = 1, .attr = attr, .pair = pair, .width = w, .x = x};
        x += w;
    }
    emit(y, &c);
}

void fill(int y, int x, int max_x, int pair)
{
    cchar_t cc;
    setcchar(&cc, L" ", 0, 0, &pair);
    for (; x < max_x; x++)
        mvadd_wch(y, x, &cc);
}

static bool in_selection(const cursor *k, int line, int col)
{
    if (!k->has_selection)
        return false;
    int sl = k->anchor_line, sc = k->anchor_col, el = k->line, ec = k->col;
    if (sl > el || (sl == el && sc > ec)) {
        int tl = sl, tc = sc;
        sl = el, sc = ec, el = tl, ec = tc;
    }
    if (line < sl || line > el)
        return false;
    if (line == sl && col < sc)
        return false;
    if (line == el && col >= ec)
        return false;
    return true;
}

static const diagnostic *diagnostic_at(const tab *t, int line, int col, int line_cols)
{
    for (int i = 0; i < t->diag_count; i++) {
        const diagnostic *d = &t->diags[i];
        int sc = d->start_col, ec = d->end_col;
        if (d->start_line == d->end_line && sc == ec) {
            /* An empty range marks the character at it (or the last one of the line). */
            if (sc >= line_cols && line_cols > 0)
                sc = line_cols - 1;
            ec = sc + 1;
        }
        if (line < d->start_line || line > d->end_line)
            continue;
        if (line == d->start_line && col < sc)
            continue;
        if (line == d->end_line && col >= ec)
            continue;
        return d;
    }
    return NULL;
}

/* Another client's caret: drawn faintly, never as ours. */
static bool other_cursor_at(const tab *t, int line, int col)
{
    for (int i = 0; i < t->other_count; i++)
        for (int j = 0; j < t->others[i].cursor_count; j++)
            if (t->others[i].cursors[j].line == line && t->others[i].cursors[j].col == col)
                return true;
    return false;
}

static bool other_cursor_past(const tab *t, int line, int cols)
{
    for (int i = 0; i < t->other_count; i++)
        for (int j = 0; j < t->others[i].cursor_count; j++)
            if (t->others[i].cursors[j].line == line && t->others[i].cursors[j].col >= cols)
                return true;
    return false;
}

/* One row of a line: its display columns [left, left + width); a continuation
 * row of a wrapped line has no number in its gutter. */
static void paint_line(app *a, tab *t, int y, int line, int gutter, int width, int left, bool continuation)
{
    colors *c = &a->colors;
    bool current = t->cursor_count && t->cursors[0].line == line;
    int bg = current ? c->cursor_line : c->bg;
    int base = pair_of(a, c->fg, bg);
    const view_line *v = NULL;
    if (line - t->lines_start >= 0 && line - t->lines_start < t->line_total)
        v = &t->lines[line - t->lines_start];
    if (line >= t->line_count || !v) {
        fill(y, 0, gutter + width, pair_of(a, c->fg, c->bg));
        if (line < t->line_count) /* not arrived yet: a dim marker, never stale text */
            put_text(a, y, gutter - 1, gutter, "~", A_DIM, pair_of(a, c->line_number, c->bg));
        return;
    }
    /* The gutter: git mark, line number. */
    git_mark mark = GIT_NONE;
    for (int i = 0; i < t->mark_count; i++)
        if (t->marks[i].line == line)
            mark = t->marks[i].mark;
    static const char *mark_text[] = {" ", "+", "~", "_"};
    int mark_rgb = mark == GIT_ADDED ? c->added : mark == GIT_MODIFIED ? c->modified : c->deleted;
    put_text(a, y, 0, 1, mark_text[mark], A_BOLD, pair_of(a, mark == GIT_NONE ? c->fg : mark_rgb, c->bg));
    char number[64];
    if (continuation)
        snprintf(number, sizeof number, "%*s ", (gutter - 2) & 31, "");
    else
        snprintf(number, sizeof number, "%*d ", (gutter - 2) & 31, line + 1);
    put_text(a, y, 1, gutter, number, current ? A_BOLD : 0,
             pair_of(a, current ? c->line_number_active : c->line_number, c->bg));
    /* The text. */
    int cols = 0;
    for (const char *p = v->text; *p; cols++) {
        mbstate_t st = {0};
        wchar_t wc;
        size_t n = mbrtowc(&wc, p, strlen(p), &st);
        p += (n == (size_t)-1 || n == (size_t)-2 || n == 0) ? 1 : n;
    }
    const char *p = v->text;
    int display = 0, tk = 0, x_end = gutter + width;
    cell pending = {.n = 0};
    for (int col = 0; *p; col++) {
        mbstate_t st = {0};
        wchar_t wc;
        size_t n = mbrtowc(&wc, p, strlen(p), &st);
        if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
            wc = 0xFFFD;
            n = 1;
        }
        p += n;
        int w = wc == L'\t' ? TAB_WIDTH - display % TAB_WIDTH : wcwidth(wc);
        if (w == 0 && pending.n > 0 && pending.n < CCHARW_MAX) {
            pending.wc[pending.n++] = wc;
            continue;
        }
        if (w < 0)
            wc = 0xFFFD, w = 1;
        int fg = c->fg, cbg = bg;
        attr_t attr = 0;
        while (tk < v->token_count && v->tokens[tk].end <= col)
            tk++;
        if (tk < v->token_count && v->tokens[tk].start <= col && v->tokens[tk].rgb >= 0)
            fg = v->tokens[tk].rgb;
        for (int i = 0; i < t->cursor_count; i++) {
            if (in_selection(&t->cursors[i], line, col))
                cbg = c->selection;
            if (i > 0 && t->cursors[i].line == line && t->cursors[i].col == col)
                attr |= A_REVERSE;
        }
        if (other_cursor_at(t, line, col))
            attr |= A_UNDERLINE | A_DIM;
        const diagnostic *d = diagnostic_at(t, line, col, cols);
        if (d) {
            attr |= A_UNDERLINE;
            if (d->severity == 1)
                fg = c->error;
            else if (d->severity == 2)
                fg = c->warning;
        }
        int x = gutter + display - left;
        display += w;
        if (x < gutter || x + w > x_end)
            continue;
        emit(y, &pending);
        int pair = pair_of(a, fg, cbg);
        if (wc == L'\t') {
            for (int i = 0; i < w; i++) {
                cell sp = {.wc = {L' '}, .n = 1, .attr = attr & (attr_t)~A_UNDERLINE, .pair = pair, .x = x + i};
                if (i == 0)
                    sp.attr = attr;
                emit(y, &sp);
            }
            continue;
        }
        pending = (cell){.wc = {wc}, .n = 1, .attr = attr, .pair = pair, .width = w, .x = x};
    }
    emit(y, &pending);
    int x = gutter + display - left;
    if (x < gutter)
        x = gutter;
    fill(y, x, x_end, base);
    /* A secondary cursor at the end of its line; another client's, faint. */
    int ex = gutter + display - left;
    bool own_at_end = false;
    for (int i = 1; i < t->cursor_count; i++)
        own_at_end = own_at_end || (t->cursors[i].line == line && t->cursors[i].col >= cols);
    if (ex >= gutter && ex < x_end) {
        if (own_at_end)
            put_text(a, y, ex, ex + 1, " ", A_REVERSE, base);
        else if (other_cursor_past(t, line, cols))
            put_text(a, y, ex, ex + 1, " ", A_UNDERLINE | A_DIM, base);
    }
}

static void paint_tabs(app *a)
{
    colors *c = &a->colors;
    fill(0, 0, a->cols, pair_of(a, c->status_fg, c->tab_inactive));
    int x = 0;
    for (int i = 0; i < a->tab_count && x < a->cols; i++) {
        tab *t = a->tabs[i];
        const char *name = t->path ? strrchr(t->path, '/') + 1 : "untitled";
        char label[300];
        snprintf(label, sizeof label, " %s%s ", name, tab_unsaved(t) ? " ●" : "  ");
        bool active = i == a->current;
        put_text(a, 0, x, a->cols, label, active ? A_BOLD : 0,
                 pair_of(a, active ? c->fg : c->status_fg, active ? c->tab_active : c->tab_inactive));
        x += (int)strlen(name) + 4;
    }
}

static void paint_overlay(app *a, int top, int height)
{
    colors *c = &a->colors;
    overlay_state *o = &a->overlay;
    int base = pair_of(a, c->fg, c->status_bg);
    for (int y = top; y < top + height; y++)
        fill(y, 0, a->cols, base);
    char head[512];
    snprintf(head, sizeof head, " %s", o->title ? o->title : "");
    put_text(a, top, 0, a->cols, head, A_BOLD, base);
    bool has_query = o->kind == OVERLAY_PICKER || o->kind == OVERLAY_PALETTE || o->kind == OVERLAY_HELP;
    int first = top + 1;
    if (has_query) {
        put_text(a, top + 1, 0, a->cols, "> ", A_BOLD, base);
        put_text(a, top + 1, 2, a->cols, o->query.data ? o->query.data : "", 0, base);
        first = top + 2;
    }
    int rows = top + height - first;
    if (rows < 1)
        return;
    if (o->selected < o->scroll)
        o->scroll = o->selected;
    if (o->selected >= o->scroll + rows)
        o->scroll = o->selected - rows + 1;
    for (int i = 0; i < rows && o->scroll + i < o->visible_count; i++) {
        list_item *it = &o->items[o->visible[o->scroll + i]];
        bool sel = o->scroll + i == o->selected && o->kind != OVERLAY_HELP && o->kind != OVERLAY_DIFF;
        int fg = it->attr == 1 ? c->added : it->attr == 2 ? c->deleted : it->attr == 3 ? c->modified : c->fg;
        put_text(a, first + i, 1, a->cols, it->label, sel ? A_REVERSE : 0, pair_of(a, fg, c->status_bg));
    }
}

static void paint_terminal(app *a, int top)
{
    colors *c = &a->colors;
    terminal_pane *tp = &a->term;
    int head = pair_of(a, c->status_fg, c->status_bg);
    fill(top, 0, a->cols, head);
    put_text(a, top, 1, a->cols, tp->focused ? "TERMINAL (keys go to the shell; Ctrl+T: back to the editor)"
                                             : "TERMINAL (Ctrl+T: focus)",
             tp->focused ? A_BOLD : 0, head);
    for (int r = 0; r < tp->rows; r++) {
        int y = top + 1 + r;
        fill(y, 0, a->cols, pair_of(a, -1, -1));
        if (!tp->cells || r >= tp->cell_rows)
            continue;
        int x = 0;
        for (int col = 0; col < tp->cell_cols && x < a->cols; col++) {
            term_cell *tc = &tp->cells[r * tp->cell_cols + col];
            if (!tc->ch[0])
                continue; /* the second half of a wide character */
            attr_t attr = (tc->bold ? A_BOLD : 0) | (tc->underline ? A_UNDERLINE : 0) | (tc->inverse ? A_REVERSE : 0) |
                          (tc->italic ? A_ITALIC : 0);
            int pair = has_colors() ? alloc_pair(color_index(a, tc->fg), color_index(a, tc->bg)) : 0;
            put_text(a, y, col, a->cols, tc->ch, attr, pair < 0 ? 0 : pair);
            x = col + 1;
        }
    }
}

/* ---- the agent chat pane ---- */

typedef struct shown_line {
    char *text;
    int rgb;
    attr_t attr;
} shown_line;

typedef struct shown {
    shown_line *lines;
    int count;
} shown;

static void show(shown *s, const char *text, size_t len, int rgb, attr_t attr)
{
    s->lines = xrealloc(s->lines, (size_t)(s->count + 1) * sizeof *s->lines);
    s->lines[s->count++] = (shown_line){xstrndup(text, len), rgb, attr};
}

/* Cuts text into lines of at most width columns, at its newlines and where it is too wide. */
static void wrap(shown *s, const char *text, int width, int rgb, attr_t attr)
{
    if (width < 1)
        width = 1;
    const char *line = text;
    while (*line) {
        const char *p = line, *end = line;
        int cols = 0;
        while (*p && *p != '\n') {
            wchar_t wc;
            mbstate_t st = {0};
            size_t n = mbrtowc(&wc, p, strlen(p), &st);
            if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
                n = 1, wc = L'?';
            int w = wcwidth(wc);
            if (w < 0)
                w = 1;
            if (cols + w > width)
                break;
            cols += w;
            p += n;
            end = p;
        }
        show(s, line, (size_t)(end - line), rgb, attr);
        bool stuck = end == line;
        line = end;
        if (*line == '\n')
            line++;
        else if (stuck && *line)
            line++; /* a character wider than the pane: skip it rather than loop */
    }
}

static void chat_paint(app *a, int top)
{
    chat_pane *c = &a->chat;
    colors *k = &a->colors;
    int head = pair_of(a, k->status_fg, k->status_bg);
    fill(top, 0, a->cols, head);
    buf title = BUF_INIT;
    buf_appendf(&title, "AGENT%s%s  %s  (Enter sends, Esc stops, PgUp/PgDn scroll, Alt+A: %s)", c->model ? " " : "",
                c->model ? c->model : "", c->running ? "answering..." : "idle", c->focused ? "back to the editor" : "focus");
    put_text(a, top, 1, a->cols, title.data, c->focused ? A_BOLD : 0, head);
    buf_free(&title);
    int area = c->rows - 2, width = a->cols - 1;
    shown s = {0};
    for (int i = 0; i < c->entry_count; i++) {
        chat_entry *e = &c->entries[i];
        buf b = BUF_INIT;
        int rgb = k->fg;
        switch (e->role) {
        case CHAT_USER: buf_appendf(&b, "you> %s", e->text.data ? e->text.data : ""); rgb = k->modified; break;
        case CHAT_ASSISTANT: buf_append_str(&b, e->text.data ? e->text.data : ""); break;
        case CHAT_TOOL:
            buf_appendf(&b, "tool %s: %s", e->text.data ? e->text.data : "", e->status ? e->status : "");
            rgb = e->status && (strncmp(e->status, "failed", 6) == 0 || strncmp(e->status, "rejected", 8) == 0) ? k->error
                  : e->status && strncmp(e->status, "done", 4) == 0                                             ? k->added
                                                                                                                : k->warning;
            break;
        case CHAT_SYSTEM: buf_appendf(&b, "! %s", e->text.data ? e->text.data : ""); rgb = k->error; break;
        }
        if (b.len)
            wrap(&s, b.data, width, rgb, e->role == CHAT_USER ? A_BOLD : 0);
        buf_free(&b);
    }
    if (c->scroll > s.count - area)
        c->scroll = s.count - area > 0 ? s.count - area : 0;
    int first = s.count - area - c->scroll;
    if (first < 0)
        first = 0;
    for (int r = 0; r < area; r++) {
        int y = top + 1 + r;
        fill(y, 0, a->cols, pair_of(a, k->fg, k->bg));
        if (first + r < s.count)
            put_text(a, y, 1, a->cols, s.lines[first + r].text, s.lines[first + r].attr,
                     pair_of(a, s.lines[first + r].rgb, k->bg));
    }
    for (int i = 0; i < s.count; i++)
        free(s.lines[i].text);
    free(s.lines);
    int y = top + c->rows - 1;
    fill(y, 0, a->cols, head);
    if (c->waiting_id) {
        buf q = BUF_INIT;
        buf_appendf(&q, "Run %s ? y approves, n rejects, Esc stops", c->waiting_label ? c->waiting_label : "");
        put_text(a, y, 0, a->cols, q.data, A_BOLD, pair_of(a, k->warning, k->status_bg));
        buf_free(&q);
    } else {
        put_text(a, y, 0, a->cols, "> ", A_BOLD, head);
        /* The end of a long prompt, where the typing is. */
        const char *in = c->input.data ? c->input.data : "";
        while (text_display_col(in, 1 << 30) > a->cols - 3 && *in) {
            in++;
            while (((unsigned char)*in & 0xC0) == 0x80)
                in++;
        }
        put_text(a, y, 2, a->cols, in, 0, head);
    }
}

/* The row and column of the prompt's caret, or -1 when the pane does not hold it. */
static int chat_cursor(app *a, int top, int *x)
{
    chat_pane *c = &a->chat;
    if (!c->visible || !c->focused || c->waiting_id)
        return -1;
    int w = text_display_col(c->input.data, 1 << 30);
    *x = 2 + (w > a->cols - 3 ? a->cols - 3 : w);
    return top + c->rows - 1;
}

static void paint_status(app *a, tab *t)
{
    colors *c = &a->colors;
    int y = a->rows - 1;
    int base = pair_of(a, c->status_fg, c->status_bg);
    fill(y, 0, a->cols, base);
    if (a->prompt.active) {
        put_text(a, y, 0, a->cols, a->prompt.label, A_BOLD, base);
        int x = (int)strlen(a->prompt.label) + 1;
        if (!a->prompt.choose)
            put_text(a, y, x, a->cols, a->prompt.input.data ? a->prompt.input.data : "", 0, base);
        return;
    }
    /* Position first; cursors, branch and language while they fit. */
    buf rb = BUF_INIT;
    if (t && t->cursor_count) {
        buf_appendf(&rb, "Ln %d, Col %d", t->cursors[0].line + 1, t->cursors[0].col + 1);
        char extra[3][128];
        snprintf(extra[0], sizeof extra[0], t->cursor_count > 1 ? " (%d cursors)" : "", t->cursor_count);
        snprintf(extra[1], sizeof extra[1], "   %s", a->branch ? a->branch : "");
        snprintf(extra[2], sizeof extra[2], "   %s ", t->language ? t->language : "");
        for (int i = 0; i < 3; i++)
            if ((i != 1 || a->branch) && (int)(rb.len + strlen(extra[i])) < a->cols - 12)
                buf_append_str(&rb, extra[i]);
    }
    /* Who else has this file open: one name, else how many. */
    char presence[96] = "";
    if (t && t->other_count == 1 && t->others[0].name && *t->others[0].name)
        snprintf(presence, sizeof presence, "+1 other (%.40s)   ", t->others[0].name);
    else if (t && t->other_count)
        snprintf(presence, sizeof presence, "+%d other%s   ", t->other_count, t->other_count == 1 ? "" : "s");
    char right[640];
    snprintf(right, sizeof right, "%s%s%s", presence, a->restricted ? "Restricted   " : "", rb.data ? rb.data : "");
    buf_free(&rb);
    int rw = (int)strlen(right);
    if (rw >= a->cols)
        rw = 0, right[0] = 0;
    int left_end = a->cols - rw - 1;
    if (a->message) {
        put_text(a, y, 1, left_end, a->message, a->message_is_error ? A_BOLD : 0,
                 a->message_is_error ? pair_of(a, c->error, c->status_bg) : base);
    } else if (t) {
        const diagnostic *d = NULL;
        for (int i = 0; t->cursor_count && i < t->diag_count && !d; i++)
            if (t->diags[i].start_line <= t->cursors[0].line && t->diags[i].end_line >= t->cursors[0].line)
                d = &t->diags[i];
        if (d) {
            buf m = BUF_INIT;
            buf_appendf(&m, "%s %s", d->severity == 1 ? "error:" : d->severity == 2 ? "warning:" : "note:", d->message);
            for (char *q = m.data; *q; q++)
                if (*q == '\n')
                    *q = ' ';
            put_text(a, y, 1, left_end, m.data, 0, pair_of(a, d->severity == 1 ? c->error : c->warning, c->status_bg));
            buf_free(&m);
        } else {
            buf m = BUF_INIT;
            buf_appendf(&m, "%s%s%s%s", t->path ? t->path : "untitled", tab_unsaved(t) ? " [modified]" : "",
                        t->changed_on_disk ? " [changed on disk]" : "",
                        t->binary ? " [binary, read-only]" : t->read_only ? " [read-only]" : "");
            put_text(a, y, 1, left_end, m.data, 0, base);
            buf_free(&m);
        }
    }
    if (rw < a->cols)
        put_text(a, y, a->cols - rw, a->cols, right, 0, base);
}

/* The completion popup: under the caret, or above it near the bottom. */
static void paint_completion(app *a, int cy, int cx, int top, int height)
{
    completion_popup *c = &a->completion;
    int rows_shown = c->item_count < 8 ? c->item_count : 8;
    if (c->selected < c->scroll)
        c->scroll = c->selected;
    if (c->selected >= c->scroll + rows_shown)
        c->scroll = c->selected - rows_shown + 1;
    int width = 0;
    for (int i = 0; i < c->item_count; i++) {
        int w = text_display_col(c->items[i].label, 1 << 30);
        width = w > width ? w : width;
    }
    width = width + 2 > 50 ? 50 : width + 2;
    if (width > a->cols)
        width = a->cols;
    int y = cy + 1 + rows_shown <= top + height ? cy + 1 : cy - rows_shown;
    if (y < top)
        y = top;
    int x = cx + width > a->cols ? a->cols - width : cx;
    colors *k = &a->colors;
    for (int i = 0; i < rows_shown; i++) {
        int index = c->scroll + i;
        bool selected = index == c->selected;
        int pair = pair_of(a, selected ? k->status_fg : k->fg, selected ? k->status_bg : k->selection);
        fill(y + i, x, x + width, pair);
        put_text(a, y + i, x + 1, x + width, c->items[index].label, selected ? A_BOLD : 0, pair);
    }
}

/* The hover box: the language server's words, in a box by the caret. */
static void paint_hover(app *a, int cy, int cx, int top, int height)
{
    int lines = 0, width = 0;
    for (const char *p = a->hover; *p;) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *line = xstrndup(p, n);
        int w = text_display_col(line, 1 << 30);
        free(line);
        width = w > width ? w : width;
        lines++;
        p += n + (end ? 1 : 0);
    }
    int max_rows = height / 2 > 3 ? height / 2 : 3;
    if (lines > max_rows)
        lines = max_rows;
    width += 2;
    if (width > a->cols - 2)
        width = a->cols - 2;
    int y = cy + 1 + lines <= top + height ? cy + 1 : cy - lines;
    if (y < top)
        y = top;
    int x = cx + width > a->cols ? a->cols - width : cx;
    if (x < 0)
        x = 0;
    colors *k = &a->colors;
    int pair = pair_of(a, k->status_fg, k->status_bg);
    const char *p = a->hover;
    for (int i = 0; i < lines && *p; i++) {
        const char *end = strchr(p, '\n');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        char *line = xstrndup(p, n);
        fill(y + i, x, x + width, pair);
        put_text(a, y + i, x + 1, x + width - 1, line, 0, pair);
        free(line);
        p += n + (end ? 1 : 0);
    }
}

void paint(app *a)
{
    if (a->rows < 3 || a->cols < 8) {
        erase();
        put_text(a, 0, 0, a->cols, "ecp-tui: too small", 0, 0);
        refresh();
        return;
    }
    tab *t = app_tab(a);
    colors *c = &a->colors;
    int top, height;
    editor_layout(a, &top, &height);
    paint_tabs(a);
    int cursor_y = -1, cursor_x = -1;
    if (a->overlay.kind != OVERLAY_NONE) {
        paint_overlay(a, top, height);
        if (a->overlay.kind == OVERLAY_PICKER || a->overlay.kind == OVERLAY_PALETTE || a->overlay.kind == OVERLAY_HELP)
            cursor_y = top + 1, cursor_x = 2 + text_display_col(a->overlay.query.data, 1 << 30);
    } else if (t) {
        int gutter = gutter_width(t), width = a->cols - gutter - 1;
        int cursor_row = -1, cursor_col = -1;
        int caret_line = t->cursor_count ? t->cursors[0].line : -1;
        for (int r = 0, line = t->top; r < height; line++) {
            int rows = tab_line_rows(a, t, line);
            for (int k = 0; k < rows && r < height; k++, r++) {
                int left = t->wrap ? k * width : t->left;
                paint_line(a, t, top + r, line, gutter, width, left, k > 0);
                if (line == caret_line && cursor_row < 0) {
                    const char *text = view_text(t, line);
                    int d = text ? text_display_col(text, t->cursors[0].col) : 0;
                    /* The caret at the end of a full row shows at the start of the next. */
                    if (!t->wrap || (d >= left && (d < left + width || k == rows - 1)))
                        cursor_row = top + r, cursor_col = gutter + d - left;
                }
            }
        }
        /* The scrollbar. */
        int track = pair_of(a, c->line_number, c->bg);
        for (int r = 0; r < height; r++)
            put_text(a, top + r, a->cols - 1, a->cols, " ", 0, track);
        if (t->line_count > height) {
            int thumb = height * height / t->line_count;
            if (thumb < 1)
                thumb = 1;
            int start = (int)((long long)t->top * height / t->line_count);
            if (start + thumb > height)
                start = height - thumb;
            for (int r = start; r < start + thumb; r++)
                put_text(a, top + r, a->cols - 1, a->cols, "█", 0, track);
        }
        if (cursor_row >= 0 && !a->term.focused && !a->chat.focused && cursor_col >= gutter &&
            cursor_col < gutter + width + (t->wrap ? 1 : 0))
            cursor_y = cursor_row, cursor_x = cursor_col;
        if (cursor_y >= 0 && a->completion.visible)
            paint_completion(a, cursor_y, cursor_x, top, height);
        if (cursor_y >= 0 && a->hover)
            paint_hover(a, cursor_y, cursor_x, top, height);
    } else {
        for (int r = 0; r < height; r++)
            fill(top + r, 0, a->cols, pair_of(a, c->fg, c->bg));
        put_text(a, top + height / 2, 2, a->cols, "No file open: Ctrl+P opens one, Ctrl+N makes one, F1 helps.", 0,
                 pair_of(a, c->line_number, c->bg));
    }
    if (a->term.visible)
        paint_terminal(a, top + height);
    if (a->term.visible && a->term.focused && a->overlay.kind == OVERLAY_NONE)
        cursor_y = top + height + 1 + a->term.cursor_y, cursor_x = a->term.cursor_x;
    int chat_top = top + height + (a->term.visible ? a->term.rows + 1 : 0);
    if (a->chat.visible) {
        chat_paint(a, chat_top);
        int x = 0, y = a->overlay.kind == OVERLAY_NONE ? chat_cursor(a, chat_top, &x) : -1;
        if (y >= 0)
            cursor_y = y, cursor_x = x;
        else if (a->chat.focused)
            cursor_y = -1;
    }
    paint_status(a, t);
    if (a->prompt.active) {
        cursor_y = a->rows - 1;
        cursor_x = (int)strlen(a->prompt.label) + 1 +
                   (a->prompt.choose ? 0 : text_display_col(a->prompt.input.data, 1 << 30));
    }
    if (cursor_y >= 0 && cursor_x >= 0 && cursor_x < a->cols) {
        curs_set(1);
        move(cursor_y, cursor_x);
    } else {
        curs_set(0);
    }
    refresh();
}
