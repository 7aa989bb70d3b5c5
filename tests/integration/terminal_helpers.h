/* What the terminal tests share: starting terminals, typing into them, and
 * reading their screens through terminal/getBuffer. */
#ifndef ECPD_TEST_TERMINAL_HELPERS_H
#define ECPD_TEST_TERMINAL_HELPERS_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "buf.h"
#include "json.h"
#include "json_writer.h"
#include "test_client.h"

/* Quiet, predictable shells: no history file, no profile surprises in the prompt, and no
 * ~/.bashrc: what the machine's user runs there (a version manager's rehash that waits on a lock a
 * killed shell left behind) is not the terminal service's to test. */
#define QUIET_ENV "\"env\":{\"HISTFILE\":\"/dev/null\",\"PS1\":\"$ \",\"ENV\":\"\",\"HOME\":\"/dev/null\"}"

static inline long long th_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* terminal/create with the given members ("\"shell\":\"/bin/sh\""); aborts
 * the test when it fails. Returns the id (caller frees). */
static inline char *th_create(test_client *c, const char *members)
{
    char params[2048];
    snprintf(params, sizeof params, "{%s%s" QUIET_ENV "}", members, members[0] ? "," : "");
    char *out = NULL;
    int code = test_client_request(c, "terminal/create", params, &out);
    if (code != 0) {
        fprintf(stderr, "terminal/create %s: %d %s\n", params, code, out ? out : "");
        abort();
    }
    char *id = test_json_string(out, "terminalId");
    free(out);
    if (!id)
        abort();
    return id;
}

/* terminal/write of text; returns the error code (0 on success). */
static inline int th_type(test_client *c, const char *id, const char *text)
{
    buf params = BUF_INIT;
    buf_append_str(&params, "{\"terminalId\":\"");
    buf_append_str(&params, id);
    buf_append_str(&params, "\",\"data\":\"");
    json_escape_into(&params, text, strlen(text));
    buf_append_str(&params, "\"}");
    int code = test_client_request(c, "terminal/write", params.data, NULL);
    buf_free(&params);
    return code;
}

/* A screen as terminal/getBuffer gave it. */
typedef struct th_screen {
    char *json;
    json_doc doc;
    arena a;
    json_ref cells;
    long rows, cols;
    char **text; /* per row, the cells' characters joined */
    int64_t cursor_x, cursor_y, scroll_offset, scrollback_size;
} th_screen;

static inline void th_screen_free(th_screen *s)
{
    for (long r = 0; r < s->rows; r++)
        free(s->text[r]);
    free(s->text);
    json_doc_free(&s->doc);
    arena_free(&s->a);
    free(s->json);
    memset(s, 0, sizeof *s);
}

/* Reads the screen; false when getBuffer says null. */
static inline bool th_screen_load(test_client *c, const char *id, th_screen *s)
{
    memset(s, 0, sizeof *s);
    char params[256];
    snprintf(params, sizeof params, "{\"terminalId\":\"%s\"}", id);
    if (test_client_request(c, "terminal/getBuffer", params, &s->json) != 0)
        abort();
    if (json_doc_parse(&s->doc, s->json, strlen(s->json), NULL) < 0)
        abort();
    arena_init(&s->a);
    json_ref buffer = json_get(&s->doc, json_root(&s->doc), "buffer");
    if (json_type_of(&s->doc, buffer) != JSON_OBJECT)
        return false;
    s->cells = json_get(&s->doc, buffer, "cells");
    s->rows = (long)json_length(&s->doc, s->cells);
    s->text = calloc((size_t)s->rows + 1, sizeof *s->text);
    long r = 0;
    for (json_ref row = json_first(&s->doc, s->cells); row != JSON_NO_REF; row = json_next(&s->doc, row), r++) {
        buf t = BUF_INIT;
        buf_append(&t, "", 0);
        s->cols = (long)json_length(&s->doc, row);
        for (json_ref cell = json_first(&s->doc, row); cell != JSON_NO_REF; cell = json_next(&s->doc, cell)) {
            const char *ch;
            size_t len;
            json_string(&s->doc, json_get(&s->doc, cell, "char"), &s->a, &ch, &len);
            buf_append(&t, ch, len);
        }
        s->text[r] = buf_detach(&t);
    }
    json_ref cursor = json_get(&s->doc, buffer, "cursor");
    json_int64(&s->doc, json_get(&s->doc, cursor, "x"), &s->cursor_x);
    json_int64(&s->doc, json_get(&s->doc, cursor, "y"), &s->cursor_y);
    json_int64(&s->doc, json_get(&s->doc, buffer, "scrollOffset"), &s->scroll_offset);
    json_int64(&s->doc, json_get(&s->doc, buffer, "scrollbackSize"), &s->scrollback_size);
    return true;
}

/* The first row that contains needle, or -1. */
static inline long th_screen_find(const th_screen *s, const char *needle)
{
    for (long r = 0; r < s->rows; r++)
        if (strstr(s->text[r], needle))
            return r;
    return -1;
}

/* The cell (row, col) of a loaded screen. */
static inline json_ref th_cell(th_screen *s, long row, long col)
{
    return json_array_at(&s->doc, json_array_at(&s->doc, s->cells, (size_t)row), (size_t)col);
}

static inline bool th_cell_bool(th_screen *s, long row, long col, const char *key)
{
    bool v = false;
    json_bool(&s->doc, json_get(&s->doc, th_cell(s, row, col), key), &v);
    return v;
}

/* A cell's colour: "#rrggbb", or "null". */
static inline const char *th_cell_color(th_screen *s, long row, long col, const char *key)
{
    json_ref v = json_get(&s->doc, th_cell(s, row, col), key);
    if (json_type_of(&s->doc, v) != JSON_STRING)
        return "null";
    const char *out;
    json_string(&s->doc, v, &s->a, &out, NULL);
    return out;
}

static inline const char *th_cell_char(th_screen *s, long row, long col)
{
    const char *out = "";
    json_string(&s->doc, json_get(&s->doc, th_cell(s, row, col), "char"), &s->a, &out, NULL);
    return out;
}

/* The column of the first cell of row whose character is ch, or -1. */
static inline long th_find_cell(th_screen *s, long row, const char *ch)
{
    for (long c = 0; c < s->cols; c++)
        if (!strcmp(th_cell_char(s, row, c), ch))
            return c;
    return -1;
}

/* Runs the server until the screen shows needle; the screen is left loaded
 * in *s (when s is not NULL). */
static inline bool th_wait_text(test_server *srv, test_client *c, const char *id, const char *needle, int timeout_ms,
                                th_screen *s)
{
    long long end = th_now_ms() + timeout_ms;
    for (;;) {
        th_screen local;
        th_screen *scr = s ? s : &local;
        bool ok = th_screen_load(c, id, scr) && th_screen_find(scr, needle) >= 0;
        if (ok && !s)
            th_screen_free(scr);
        if (ok)
            return true;
        th_screen_free(scr);
        if (th_now_ms() >= end)
            return false;
        test_server_run_for(srv, 20);
    }
}

/* Index of the first notification of `method` for terminal id whose params
 * contain `needle` (NULL: any), from index `from`; -1 when none. */
static inline long th_find_note(test_client *c, const char *method, const char *id, const char *needle, size_t from)
{
    size_t n = test_client_notification_count(c, method);
    for (size_t i = from; i < n; i++) {
        const char *p = test_client_notification(c, method, i);
        if (p && strstr(p, id) && (!needle || strstr(p, needle)))
            return (long)i;
    }
    return -1;
}

static inline bool th_wait_note(test_server *srv, test_client *c, const char *method, const char *id,
                                const char *needle, int timeout_ms)
{
    long long end = th_now_ms() + timeout_ms;
    while (th_find_note(c, method, id, needle, 0) < 0) {
        if (th_now_ms() >= end)
            return false;
        test_server_run_for(srv, 10);
    }
    return true;
}

#endif
