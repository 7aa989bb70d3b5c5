/* adapter: the terminal service's JSON-RPC methods (the `terminal` namespace).
 *
 * Every method answers at once: starting a program is one posix_spawn, and
 * the rest reads or changes state the loop owns. Terminals belong to no
 * client, so their notifications go to every client and nothing is dropped
 * when one disconnects. A client that stops reading holds every terminal's
 * output until it catches up (see "Flow control" below).
 */
#include "adapter.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rpc.h"
#include "terminal/interface.h"

typedef struct terminal_adapter {
    terminal_service *svc;
    ecp_bus *bus;
    bool holding;       /* a client cannot take more: the service's output is held */
} terminal_adapter;

/* ----- errors ----------------------------------------------------------------------------- */

/* A terminal that does not exist is -32700, with the id in the error's data
 * (it is also JSON-RPC's parse error; a parse error has no id). */
static void reply_not_found(ecp_call *call, const char *id)
{
    ecp_call_error_keyed(call, ECP_WIRE_TERMINAL_NOT_FOUND, "terminalId", id, "Terminal not found: %s", id);
}

/* What each method's failures are, by status. */
static const ecp_wire_map use_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_TERMINAL_NOT_FOUND},
    {ECP_ESTATE, ECP_WIRE_TERMINAL_NOT_RUNNING},
    {ECP_ERANGE, ECP_WIRE_TERMINAL_INVALID_DIMENSIONS},
    {ECP_ETOOBIG, ECP_WIRE_TERMINAL_WRITE_FAILED},
};

static void reply_error(ecp_call *call, const char *id, int status, const ecp_error *err)
{
    int code = ecp_wire_code(use_codes, ECP_WIRE_MAP_COUNT(use_codes), status, ECP_WIRE_INTERNAL_ERROR);
    if (code == ECP_WIRE_TERMINAL_NOT_FOUND)
        reply_not_found(call, id);
    else
        ecp_call_error_keyed(call, code, "terminalId", id, "%s", err ? err->message : ecp_status_text(status));
}

/* ----- params ------------------------------------------------------------------------------ */

static bool arg_id(ecp_call *call, ecp_str *id)
{
    return ecp_arg_string(call, ecp_call_params(call), "terminalId", id);
}

static bool check_dimensions(ecp_call *call, int64_t cols, int64_t rows)
{
    if (cols >= 1 && cols <= TERMINAL_MAX_COLS && rows >= 1 && rows <= TERMINAL_MAX_ROWS)
        return true;
    ecp_call_error(call, ECP_WIRE_TERMINAL_INVALID_DIMENSIONS,
                   "Invalid dimensions: cols must be 1..%d and rows 1..%d, got %lldx%lld", TERMINAL_MAX_COLS,
                   TERMINAL_MAX_ROWS, (long long)cols, (long long)rows);
    return false;
}

/* env: an object of strings, as "NAME=value" in the call's arena. */
static bool arg_env(ecp_call *call, json_ref params, const char ***out, size_t *count)
{
    json_ref env;
    *out = NULL;
    *count = 0;
    if (!ecp_arg_object_opt(call, params, "env", &env))
        return false;
    if (env == JSON_NO_REF)
        return true;
    const json_doc *doc = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    size_t n = json_length(doc, env);
    const char **list = arena_alloc(a, (n ? n : 1) * sizeof *list);
    size_t i = 0;
    for (json_ref key = json_first(doc, env); key != JSON_NO_REF; key = json_next(doc, key)) {
        const char *name, *value;
        size_t name_len, value_len;
        json_string(doc, key, a, &name, &name_len);
        if (!name_len || memchr(name, '=', name_len) || memchr(name, '\0', name_len)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "env: invalid variable name \"%s\"", name);
            return false;
        }
        if (!json_string(doc, key + 1, a, &value, &value_len)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "env.%s: must be a string", name);
            return false;
        }
        if (memchr(value, '\0', value_len)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "env.%s: must not contain a NUL character", name);
            return false;
        }
        char *pair = arena_alloc(a, name_len + value_len + 2);
        memcpy(pair, name, name_len);
        pair[name_len] = '=';
        memcpy(pair + name_len + 1, value, value_len + 1);
        list[i++] = pair;
    }
    *out = list;
    *count = i;
    return true;
}

static bool no_nul(ecp_call *call, const char *name, const ecp_str *s)
{
    if (!s->ptr || !memchr(s->ptr, '\0', s->len))
        return true;
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must not contain a NUL character", name);
    return false;
}

/* ----- results ------------------------------------------------------------------------------ */

static void write_info(json_writer *w, const terminal_info *info)
{
    ecp_write_fields(w, ECP_FIELDS(ECP_STRING_FIELD("terminalId", info->id), ECP_STRING_FIELD("shell", info->shell),
                                   ECP_STRING_FIELD("cwd", info->cwd), ECP_INT_FIELD("cols", info->cols),
                                   ECP_INT_FIELD("rows", info->rows), ECP_BOOL_FIELD("running", info->running),
                                   ECP_STRING_FIELD("title", info->title)));
}

static void write_color(json_writer *w, const char *key, bool has, uint32_t rgb)
{
    if (!has) {
        jw_key_null(w, key);
        return;
    }
    char hex[8];
    snprintf(hex, sizeof hex, "#%06x", (unsigned)rgb & 0xFFFFFF);
    jw_key_string(w, key, hex);
}

static void write_cell(json_writer *w, const terminal_cell *c)
{
    jw_object_begin(w);
    jw_key_string(w, "char", c->text);
    write_color(w, "fg", c->has_fg, c->fg);
    write_color(w, "bg", c->has_bg, c->bg);
    jw_key_bool(w, "bold", c->bold);
    jw_key_bool(w, "italic", c->italic);
    jw_key_bool(w, "underline", c->underline);
    jw_key_bool(w, "dim", c->dim);
    jw_key_bool(w, "inverse", c->inverse);
    jw_object_end(w);
}

/* {success: true}, or the failure of the terminal named id. */
static void reply_status(ecp_call *call, const char *id, int status, const ecp_error *err)
{
    if (status)
        reply_error(call, id, status, err);
    else
        ecp_call_reply_success(call, true);
}

/* ----- methods ------------------------------------------------------------------------------ */

static void m_create(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str shell, cwd;
    int64_t cols, rows;
    size_t scrollback;
    terminal_create_options o = {0};
    const char **env;
    if (!ecp_arg_string_opt(call, p, "shell", &shell) || !ecp_arg_string_opt(call, p, "cwd", &cwd) ||
        !arg_env(call, p, &env, &o.env_count) ||
        !ecp_arg_int_opt(call, p, "cols", TERMINAL_DEFAULT_COLS, &cols) ||
        !ecp_arg_int_opt(call, p, "rows", TERMINAL_DEFAULT_ROWS, &rows) ||
        !ecp_arg_index_opt(call, p, "scrollback", TERMINAL_DEFAULT_SCROLLBACK, &scrollback) ||
        !no_nul(call, "shell", &shell) || !no_nul(call, "cwd", &cwd) || !check_dimensions(call, cols, rows))
        return;
    if (scrollback > TERMINAL_SCROLLBACK_MAX_LINES) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "scrollback: at most %d lines, got %zu",
                       TERMINAL_SCROLLBACK_MAX_LINES, scrollback);
        return;
    }
    o.env = env;
    o.shell = shell.ptr;
    o.cwd = cwd.ptr;
    o.cols = (unsigned)cols;
    o.rows = (unsigned)rows;
    o.scrollback = scrollback;
    char *id = NULL;
    ecp_error err;
    int status = terminal_create(ad->svc, &o, &id, &err);
    if (status) {
        /* every failure to start is StartFailed, with the reason */
        ecp_call_error(call, ECP_WIRE_TERMINAL_START_FAILED, "%s", err.message);
        return;
    }
    ecp_call_reply_string(call, "terminalId", id);
    free(id);
}

static void m_close(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    terminal_close(ad->svc, id.ptr); /* an unknown id is closed already */
    ecp_call_reply_success(call, true);
}

static void m_close_all(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    terminal_close_all(ad->svc);
    ecp_call_reply_success(call, true);
}

static void m_write(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id, data;
    if (!arg_id(call, &id) || !ecp_arg_string(call, ecp_call_params(call), "data", &data))
        return;
    ecp_error err;
    int status = terminal_write(ad->svc, id.ptr, data.ptr, data.len, &err);
    reply_status(call, id.ptr, status, &err);
}

static void m_resize(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id;
    int64_t cols, rows;
    if (!arg_id(call, &id) || !ecp_arg_int(call, p, "cols", &cols) || !ecp_arg_int(call, p, "rows", &rows))
        return;
    terminal_info info;
    if (terminal_get_info(ad->svc, id.ptr, &info)) {
        reply_not_found(call, id.ptr);
        return;
    }
    if (!check_dimensions(call, cols, rows))
        return;
    ecp_error err;
    int status = terminal_resize(ad->svc, id.ptr, (unsigned)cols, (unsigned)rows, &err);
    reply_status(call, id.ptr, status, &err);
}

static void m_get_buffer(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    terminal_viewport vp;
    json_writer *w = ecp_call_result_key(call, "buffer");
    if (terminal_get_viewport(ad->svc, id.ptr, &vp)) {
        jw_null(w);
        ecp_call_finish_key(call, w);
        return;
    }
    jw_object_begin(w);
    jw_key(w, "cells");
    jw_array_begin(w);
    for (unsigned r = 0; r < vp.rows; r++) {
        jw_array_begin(w);
        for (unsigned c = 0; c < vp.cols; c++)
            write_cell(w, &vp.cells[(size_t)r * vp.cols + c]);
        jw_array_end(w);
    }
    jw_array_end(w);
    jw_key(w, "cursor");
    jw_object_begin(w);
    jw_key_int(w, "x", vp.cursor_col);
    jw_key_int(w, "y", vp.cursor_row);
    jw_object_end(w);
    jw_key_int(w, "scrollOffset", (int64_t)vp.scroll_offset);
    jw_key_int(w, "scrollbackSize", (int64_t)vp.scrollback_size);
    jw_object_end(w);
    ecp_call_finish_key(call, w);
    terminal_viewport_free(&vp);
}

static void m_scroll(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    int64_t lines;
    if (!arg_id(call, &id) || !ecp_arg_int(call, ecp_call_params(call), "lines", &lines))
        return;
    if (lines > LONG_MAX)
        lines = LONG_MAX;
    if (lines < -LONG_MAX)
        lines = -LONG_MAX;
    ecp_error err;
    int status = terminal_scroll(ad->svc, id.ptr, (long)lines, &err);
    reply_status(call, id.ptr, status, &err);
}

static void m_scroll_to_bottom(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    ecp_error err;
    int status = terminal_scroll_to_bottom(ad->svc, id.ptr, &err);
    reply_status(call, id.ptr, status, &err);
}

static void m_get_info(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    terminal_info info;
    json_writer *w = ecp_call_result_key(call, "info");
    if (terminal_get_info(ad->svc, id.ptr, &info))
        jw_null(w);
    else
        write_info(w, &info);
    ecp_call_finish_key(call, w);
}

static void m_list(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    terminal_info *list;
    size_t count;
    terminal_list(ad->svc, &list, &count);
    json_writer *w = ecp_call_result_list(call, "terminals");
    for (size_t i = 0; i < count; i++)
        write_info(w, &list[i]);
    ecp_call_finish_list(call, w);
    free(list);
}

static void m_exists(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    terminal_info info;
    ecp_call_reply_bool(call, "exists", terminal_get_info(ad->svc, id.ptr, &info) == 0);
}

static void m_is_running(void *ctx, ecp_call *call)
{
    terminal_adapter *ad = ctx;
    ecp_str id;
    if (!arg_id(call, &id))
        return;
    terminal_info info;
    ecp_call_reply_bool(call, "running", terminal_get_info(ad->svc, id.ptr, &info) == 0 && info.running);
}

/* ----- notifications ------------------------------------------------------------------------ */

/* Flow control. A flood (`yes`) produces output faster than a client may
 * read it; a client that falls behind would see its connection's queue grow
 * until the server drops it, and on stdio that ends the server with every
 * terminal. So once one of the notifications that grow with the output is
 * backed up on some connection, the service's output is held (its programs
 * block in their writes), and released once every such connection has
 * drained. */
static const char *const flowing[] = {"terminal/output", "terminal/didChangeScreen"};

static void on_drained(void *ctx)
{
    terminal_adapter *ad = ctx;
    if (!ad->holding)
        return;
    for (size_t i = 0; i < sizeof flowing / sizeof flowing[0]; i++)
        if (ecp_bus_backed_up(ad->bus, flowing[i])) {
            ecp_bus_when_drained(ad->bus, flowing[i], on_drained, ad);
            return;
        }
    ad->holding = false;
    terminal_service_release_output(ad->svc);
}

static void hold_if_backed_up(terminal_adapter *ad, const char *method)
{
    if (!ecp_bus_backed_up(ad->bus, method))
        return;
    if (!ad->holding) {
        ad->holding = true;
        terminal_service_hold_output(ad->svc);
    }
    ecp_bus_when_drained(ad->bus, method, on_drained, ad);
}

typedef struct output_note {
    const char *id;
    const char *data;
    size_t len;
} output_note;

static void render_output(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const output_note *n = ctx;
    jw_object_begin(w);
    jw_key_string(w, "terminalId", n->id);
    jw_key_string_n(w, "data", n->data, n->len);
    jw_object_end(w);
}

static void on_output(void *ctx, const char *id, const char *data, size_t len)
{
    terminal_adapter *ad = ctx;
    output_note n = {id, data, len};
    ecp_bus_notify(ad->bus, "terminal/output", render_output, &n);
    hold_if_backed_up(ad, "terminal/output");
}

typedef struct screen_note {
    const char *id;
    const unsigned *rows;
    size_t count;
} screen_note;

static void render_screen(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const screen_note *n = ctx;
    jw_object_begin(w);
    jw_key_string(w, "terminalId", n->id);
    jw_key(w, "rows");
    jw_array_begin(w);
    for (size_t i = 0; i < n->count; i++)
        jw_int(w, n->rows[i]);
    jw_array_end(w);
    jw_object_end(w);
}

static void on_screen(void *ctx, const char *id, const unsigned *rows, size_t count)
{
    terminal_adapter *ad = ctx;
    screen_note n = {id, rows, count};
    ecp_bus_notify(ad->bus, "terminal/didChangeScreen", render_screen, &n);
    hold_if_backed_up(ad, "terminal/didChangeScreen");
}

static void on_title(void *ctx, const char *id, const char *title)
{
    terminal_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "terminal/title", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("terminalId", id), ECP_STRING_FIELD("title", title)));
}

static void on_terminal_exit(void *ctx, const char *id, int exit_code)
{
    terminal_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "terminal/exit", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("terminalId", id), ECP_INT_FIELD("exitCode", exit_code)));
}

static const terminal_listener listener = {
    .on_output = on_output,
    .on_screen = on_screen,
    .on_title = on_title,
    .on_exit = on_terminal_exit,
};

/* ----- the adapter ---------------------------------------------------------------------------- */

static const ecp_method methods[] = {
    {"terminal/create", m_create, "1.0",
     "Start a shell (shell, else the configured one, $SHELL, /bin/sh) on a pseudo-terminal",
     "{shell?: string, cwd?: string, env?: {[name]: string}, cols?: integer, rows?: integer, "
     "scrollback?: integer >= 0}"},
    {"terminal/close", m_close, "1.0",
     "End a terminal and every process of its session; an unknown id succeeds",
     "{terminalId: string}"},
    {"terminal/closeAll", m_close_all, "1.0",
     "End every terminal and every process of their sessions",
     "{}"},
    {"terminal/write", m_write, "1.0",
     "Send text to the program as typed input",
     "{terminalId: string, data: string}"},
    {"terminal/resize", m_resize, "1.0",
     "Set the screen's size; the program is told (SIGWINCH)",
     "{terminalId: string, cols: integer, rows: integer}"},
    {"terminal/getBuffer", m_get_buffer, "1.0",
     "The viewport's cells with colours and attributes, the cursor and the scroll; null for an unknown id",
     "{terminalId: string}"},
    {"terminal/scroll", m_scroll, "1.0",
     "Move the viewport lines up into the scrollback (negative: down)",
     "{terminalId: string, lines: integer}"},
    {"terminal/scrollToBottom", m_scroll_to_bottom, "1.0",
     "Show the screen again (scrollOffset 0)",
     "{terminalId: string}"},
    {"terminal/getInfo", m_get_info, "1.0",
     "A terminal's shell, cwd, size, title and whether its program runs; null for an unknown id",
     "{terminalId: string}"},
    {"terminal/list", m_list, "1.0",
     "Every terminal, in the order they were created",
     "{}"},
    {"terminal/exists", m_exists, "1.0",
     "Whether a terminal exists",
     "{terminalId: string}"},
    {"terminal/isRunning", m_is_running, "1.0",
     "Whether a terminal's program still runs (false for an unknown id)",
     "{terminalId: string}"},
};

static void adapter_destroy(void *ctx)
{
    terminal_adapter *ad = ctx;
    terminal_unsubscribe(ad->svc, &listener, ad);
    ecp_bus_cancel_when_drained(ad->bus, on_drained, ad);
    if (ad->holding)
        terminal_service_release_output(ad->svc);
    free(ad);
}

static const char *const notifications[] = {"terminal/output", "terminal/exit", "terminal/title",
                                            "terminal/didChangeScreen", NULL};

void terminal_adapter_init(ecp_adapter *out, terminal_service *svc, ecp_bus *bus)
{
    terminal_adapter *ad = xmalloc(sizeof *ad);
    *ad = (terminal_adapter){.svc = svc, .bus = bus};
    terminal_subscribe(svc, &listener, ad);
    *out = (ecp_adapter){.ns = "terminal", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = ad, .destroy = adapter_destroy, .notifications = notifications};
}
