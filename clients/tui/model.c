/* The model: the documents as the server last described them, their cursors,
 * the panes' state and the connection's. The functions here change the model
 * and nothing else: none paints, none reads a key, none sends a request but
 * app_call itself. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "arena.h"
#include "model.h"

/* ---- the connection ---- */

void app_message(app *a, bool error, const char *fmt, ...)
{
    free(a->message);
    buf b = BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    buf_vappendf(&b, fmt, ap);
    va_end(ap);
    a->message = buf_detach(&b);
    a->message_is_error = error;
    a->need_paint = true;
}

char *json_dup_string(const json_doc *doc, json_ref ref)
{
    arena ar = ARENA_INIT;
    const char *s;
    size_t n;
    char *out = NULL;
    if (json_string(doc, ref, &ar, &s, &n))
        out = xstrndup(s, n);
    arena_free(&ar);
    return out;
}

int json_int_or(const json_doc *doc, json_ref ref, int fallback)
{
    int64_t v;
    return json_int64(doc, ref, &v) ? (int)v : fallback;
}

bool app_call(app *a, const char *method, rpc_reply_fn reply, uint64_t tag, const char *fmt, ...)
{
    if (!rpc_is_open(a->rpc))
        return false;
    buf params = BUF_INIT;
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        rpc_vformat(&params, fmt, ap);
        va_end(ap);
    }
    /* The params are already JSON: pass them through %s. */
    bool ok = rpc_call(a->rpc, method, reply, a, tag, fmt ? "%s" : NULL, params.data ? params.data : "{}");
    buf_free(&params);
    return ok;
}

static void others_clear(tab *t);

void model_server_lost(app *a, const char *why)
{
    a->server_dead = true;
    a->client_id = -1;
    /* Keys that waited behind a command waiting for the server were never
     * shown; they are refused aloud rather than applied to a new server's
     * state, which the command they waited for never saw. */
    int refused = a->queued_count;
    queue_drop(a);
    free(a->term.id);
    a->term.id = NULL;
    a->term.focused = false;
    a->term.visible = false;
    a->chat.running = a->chat.prompting = false;
    bool dirty = false;
    for (int i = 0; i < a->tab_count; i++) {
        tab *t = a->tabs[i];
        dirty = dirty || tab_unsaved(t);
        others_clear(t);
        t->viewport = t->cursors_refresh = t->info = t->clients = (refresh_slot){0};
    }
    char refused_note[96] = "";
    if (refused)
        snprintf(refused_note, sizeof refused_note, " %d key%s typed while it was busy %s not applied.", refused,
                 refused == 1 ? "" : "s", refused == 1 ? "was" : "were");
    if (a->connected_to_socket)
        app_message(a, true, "The server stopped (%s); reconnecting. Keys typed meanwhile wait for it.%s", why, refused_note);
    else
        app_message(a, true, "The server stopped (%s).%s %s", why, refused_note,
                    dirty ? "Your unsaved text is kept by the server's recovery: Ctrl+S restarts it and saves to a file of your choice."
                          : "Ctrl+S restarts it.");
}

/* ---- text columns ---- */

int utf8_next(const char *s, int *len)
{
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) {
        *len = 1;
        return u[0];
    }
    int n = u[0] >= 0xF0 ? 4 : u[0] >= 0xE0 ? 3 : u[0] >= 0xC0 ? 2 : 0;
    if (n == 0) {
        *len = 1;
        return 0xFFFD;
    }
    int cp = u[0] & (0x3F >> (n - 1));
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *len = 1;
            return 0xFFFD;
        }
        cp = (cp << 6) | (u[i] & 0x3F);
    }
    *len = n;
    return cp;
}

static int cp_width(int cp, int display)
{
    if (cp == '\t')
        return TAB_WIDTH - display % TAB_WIDTH;
    int w = wcwidth((wchar_t)cp);
    return w < 0 ? 1 : w;
}

int text_display_col(const char *text, int col)
{
    int display = 0;
    for (int i = 0; i < col && text && *text; i++) {
        int len;
        int cp = utf8_next(text, &len);
        display += cp_width(cp, display);
        text += len;
    }
    return display;
}

int text_col_at_display(const char *text, int target)
{
    int display = 0, col = 0;
    while (text && *text) {
        int len;
        int cp = utf8_next(text, &len);
        int w = cp_width(cp, display);
        if (display + w > target && w > 0)
            return col;
        display += w;
        text += len;
        col++;
    }
    return col;
}

int text_cols(const char *text)
{
    int col = 0;
    while (text && *text) {
        int len;
        utf8_next(text, &len);
        text += len;
        col++;
    }
    return col;
}

size_t col_to_byte(const char *text, size_t len, int col)
{
    size_t i = 0;
    for (int c = 0; c < col && i < len && text[i] != '\n'; c++) {
        int n;
        utf8_next(text + i, &n);
        i += (size_t)n;
    }
    return i;
}

char *path_of_uri(const char *uri)
{
    if (!uri)
        return NULL;
    if (uri[0] == '/')
        return xstrdup(uri);
    if (strncmp(uri, "file://", 7) != 0)
        return NULL;
    /* Undo the percent-encoding the server writes. */
    buf b = BUF_INIT;
    for (const char *p = uri + 7; *p; p++) {
        if (p[0] == '%' && p[1] && p[2]) {
            char hex[3] = {p[1], p[2], 0};
            buf_push(&b, (char)strtol(hex, NULL, 16));
            p += 2;
        } else {
            buf_push(&b, *p);
        }
    }
    return buf_detach(&b);
}

char *file_uri(const char *path)
{
    buf b = BUF_INIT;
    buf_append_str(&b, "file://");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("/-._~", *p))
            buf_push(&b, (char)*p);
        else
            buf_appendf(&b, "%%%02X", *p);
    }
    return buf_detach(&b);
}

/* ---- documents ---- */

tab *app_tab(app *a) { return a->tab_count ? a->tabs[a->current] : NULL; }

tab *tab_by_serial(app *a, uint64_t serial)
{
    for (int i = 0; i < a->tab_count; i++)
        if (a->tabs[i]->serial == serial)
            return a->tabs[i];
    return NULL;
}

tab *tab_by_doc(app *a, const char *doc_id)
{
    for (int i = 0; doc_id && i < a->tab_count; i++)
        if (a->tabs[i]->doc_id && strcmp(a->tabs[i]->doc_id, doc_id) == 0)
            return a->tabs[i];
    return NULL;
}

static void free_lines(tab *t)
{
    for (int i = 0; i < t->line_total; i++) {
        free(t->lines[i].text);
        free(t->lines[i].tokens);
    }
    free(t->lines);
    t->lines = NULL;
    t->line_total = 0;
    for (int i = 0; i < t->diag_count; i++)
        free(t->diags[i].message);
    free(t->diags);
    t->diags = NULL;
    t->diag_count = 0;
}

static void others_clear(tab *t)
{
    for (int i = 0; i < t->other_count; i++) {
        free(t->others[i].name);
        free(t->others[i].cursors);
    }
    free(t->others);
    t->others = NULL;
    t->other_count = 0;
}

static void edits_clear(tab *t)
{
    for (int i = 0; i < t->edit_count; i++) {
        free(t->edits[i].method);
        free(t->edits[i].params);
    }
    free(t->edits);
    t->edits = NULL;
    t->edit_count = 0;
}

void tab_free(tab *t)
{
    free_lines(t);
    others_clear(t);
    edits_clear(t);
    free(t->known_cursors);
    free(t->doc_id);
    free(t->uri);
    free(t->path);
    free(t->language);
    free(t->marks);
    free(t->cursors);
    free(t);
}

void model_document_closed(app *a, tab *t)
{
    int index = 0;
    while (index < a->tab_count && a->tabs[index] != t)
        index++;
    if (index == a->tab_count)
        return;
    tab_free(a->tabs[index]);
    memmove(a->tabs + index, a->tabs + index + 1, (size_t)(a->tab_count - index - 1) * sizeof *a->tabs);
    a->tab_count--;
    if (a->current >= a->tab_count)
        a->current = a->tab_count ? a->tab_count - 1 : 0;
    a->need_paint = true;
}

const char *view_text(const tab *t, int line)
{
    int i = line - t->lines_start;
    return i >= 0 && i < t->line_total ? t->lines[i].text : NULL;
}

void editor_layout(const app *a, int *top, int *height)
{
    *top = 1;
    int h = a->rows - 2;
    if (a->term.visible)
        h -= a->term.rows + 1;
    if (a->chat.visible)
        h -= a->chat.rows;
    *height = h < 1 ? 1 : h;
}

void parse_position(const json_doc *doc, json_ref pos, int *line, int *col)
{
    *line = json_int_or(doc, json_get(doc, pos, "line"), 0);
    json_ref c = json_get(doc, pos, "column");
    if (c == JSON_NO_REF)
        c = json_get(doc, pos, "character");
    *col = json_int_or(doc, c, 0);
}

static cursor *parse_cursors(const json_doc *doc, json_ref cursors, int *count)
{
    size_t n = json_length(doc, cursors);
    cursor *list = xcalloc(n ? n : 1, sizeof *list);
    *count = 0;
    for (json_ref c = json_first(doc, cursors); c != JSON_NO_REF; c = json_next(doc, c)) {
        cursor *k = &list[(*count)++];
        parse_position(doc, json_get(doc, c, "position"), &k->line, &k->col);
        json_ref sel = json_get(doc, c, "selection");
        if (sel != JSON_NO_REF) {
            parse_position(doc, json_get(doc, sel, "anchor"), &k->anchor_line, &k->anchor_col);
            int al, ac;
            parse_position(doc, json_get(doc, sel, "active"), &al, &ac);
            k->line = al, k->col = ac;
            k->has_selection = k->anchor_line != k->line || k->anchor_col != k->col;
        }
    }
    return list;
}

void model_cursors_arrived(tab *t, const json_doc *doc, json_ref cursors)
{
    free(t->cursors);
    t->cursors = parse_cursors(doc, cursors, &t->cursor_count);
    free(t->known_cursors);
    t->known_cursor_count = t->cursor_count;
    t->known_cursors = xcalloc(t->cursor_count ? (size_t)t->cursor_count : 1, sizeof *t->known_cursors);
    memcpy(t->known_cursors, t->cursors, (size_t)t->cursor_count * sizeof *t->cursors);
}

void model_other_cursors_arrived(tab *t, int64_t client_id, const char *name, const json_doc *doc, json_ref cursors)
{
    other_client *o = NULL;
    for (int i = 0; i < t->other_count && !o; i++)
        if (t->others[i].client_id == client_id)
            o = &t->others[i];
    if (!o) {
        t->others = xrealloc(t->others, (size_t)(t->other_count + 1) * sizeof *t->others);
        o = &t->others[t->other_count++];
        *o = (other_client){.client_id = client_id};
    }
    if (name) {
        free(o->name);
        o->name = xstrdup(name);
    }
    free(o->cursors);
    o->cursors = parse_cursors(doc, cursors, &o->cursor_count);
}

void model_clients_arrived(tab *t, int64_t self_id, const json_doc *doc, json_ref clients)
{
    others_clear(t);
    for (json_ref c = json_first(doc, clients); c != JSON_NO_REF; c = json_next(doc, c)) {
        int64_t id = -1;
        /* Client 0 is the server itself (the agent's tools, a language server's edits): not a person here. */
        if (!json_int64(doc, json_get(doc, c, "clientId"), &id) || id == self_id || id == 0)
            continue;
        char *name = json_dup_string(doc, json_get(doc, c, "name"));
        model_other_cursors_arrived(t, id, name ? name : "", doc, json_get(doc, c, "cursors"));
        free(name);
    }
}

void model_client_left(app *a, int64_t client_id)
{
    for (int i = 0; i < a->tab_count; i++) {
        tab *t = a->tabs[i];
        for (int j = 0; j < t->other_count; j++) {
            if (t->others[j].client_id != client_id)
                continue;
            free(t->others[j].name);
            free(t->others[j].cursors);
            memmove(t->others + j, t->others + j + 1, (size_t)(t->other_count - j - 1) * sizeof *t->others);
            t->other_count--;
            a->need_paint = true;
            break;
        }
    }
}

void model_edit_sent(tab *t, uint64_t seq, const char *method, const char *params)
{
    t->edits = xrealloc(t->edits, (size_t)(t->edit_count + 1) * sizeof *t->edits);
    t->edits[t->edit_count++] = (pending_edit){seq, xstrdup(method), xstrdup(params)};
    t->edits_sent++;
    t->dirty = true;
}

void model_edit_answered(tab *t, uint64_t seq)
{
    for (int i = 0; i < t->edit_count; i++) {
        if (t->edits[i].seq != seq)
            continue;
        free(t->edits[i].method);
        free(t->edits[i].params);
        memmove(t->edits + i, t->edits + i + 1, (size_t)(t->edit_count - i - 1) * sizeof *t->edits);
        t->edit_count--;
        return;
    }
}

bool tab_unsaved(const tab *t) { return t->dirty || t->edit_count > 0; }

bool refresh_begin(refresh_slot *r)
{
    if (r->in_flight) {
        r->again = true;
        return false;
    }
    r->in_flight = true;
    return true;
}

bool refresh_end(refresh_slot *r)
{
    r->in_flight = false;
    bool again = r->again;
    r->again = false;
    return again;
}

static void parse_tokens(view_line *l, const json_doc *doc, json_ref tokens)
{
    size_t n = json_length(doc, tokens);
    l->tokens = n ? xcalloc(n, sizeof *l->tokens) : NULL;
    l->token_count = 0;
    arena ar = ARENA_INIT;
    for (json_ref k = json_first(doc, tokens); k != JSON_NO_REF; k = json_next(doc, k)) {
        token *tk = &l->tokens[l->token_count++];
        tk->start = json_int_or(doc, json_get(doc, k, "start"), 0);
        tk->end = json_int_or(doc, json_get(doc, k, "end"), 0);
        tk->rgb = -1;
        const char *color;
        size_t len;
        if (json_string(doc, json_get(doc, k, "color"), &ar, &color, &len) && len >= 7 && color[0] == '#')
            tk->rgb = (int)strtol(color + 1, NULL, 16) & 0xFFFFFF;
    }
    arena_free(&ar);
}

/* A line as it is painted: a NUL byte (a binary file's) would end the C string
 * early, so it becomes U+FFFD (one column, as the NUL was) and marks the file
 * binary: read-only here, the way git tells binary from text. */
static char *line_text(const json_doc *doc, json_ref ref, tab *t)
{
    arena ar = ARENA_INIT;
    const char *s;
    size_t n;
    buf out = BUF_INIT;
    if (json_string(doc, ref, &ar, &s, &n)) {
        for (size_t i = 0; i < n; i++) {
            if (s[i] == 0) {
                buf_append_str(&out, "\xEF\xBF\xBD");
                t->binary = t->read_only = true;
            } else {
                buf_push(&out, s[i]);
            }
        }
    }
    arena_free(&ar);
    return out.data ? buf_detach(&out) : xstrdup("");
}

/* gitChanges: the buffer's changes against HEAD on the lines shown (1-based, as git/diffLines). */
static void git_marks_arrived(tab *t, const json_doc *doc, json_ref changes)
{
    size_t n = json_length(doc, changes);
    free(t->marks);
    t->marks = n ? xcalloc(n, sizeof *t->marks) : NULL;
    t->mark_count = 0;
    for (json_ref c = json_first(doc, changes); c != JSON_NO_REF; c = json_next(doc, c)) {
        line_mark *m = &t->marks[t->mark_count++];
        m->line = json_int_or(doc, json_get(doc, c, "line"), 1) - 1; /* the service counts from 1 */
        json_ref type = json_get(doc, c, "type");
        m->mark = json_string_eq(doc, type, "added")      ? GIT_ADDED
                  : json_string_eq(doc, type, "deleted")  ? GIT_DELETED
                                                          : GIT_MODIFIED;
    }
}

void model_viewport_arrived(app *a, tab *t, const json_doc *doc, json_ref result)
{
    bool was_binary = t->binary;
    free_lines(t);
    json_ref lines = json_get(doc, result, "lines"), tokens = json_get(doc, result, "tokens");
    t->lines_start = json_int_or(doc, json_get(doc, result, "startLine"), 0);
    t->line_count = json_int_or(doc, json_get(doc, result, "lineCount"), t->line_count);
    json_int64(doc, json_get(doc, result, "version"), &t->version);
    size_t n = json_length(doc, lines);
    t->lines = n ? xcalloc(n, sizeof *t->lines) : NULL;
    json_ref tk = json_first(doc, tokens);
    for (json_ref l = json_first(doc, lines); l != JSON_NO_REF; l = json_next(doc, l)) {
        view_line *v = &t->lines[t->line_total++];
        v->text = line_text(doc, json_get(doc, l, "text"), t);
        if (tk != JSON_NO_REF) {
            parse_tokens(v, doc, tk);
            tk = json_next(doc, tk);
        }
    }
    json_ref changes = json_get(doc, result, "gitChanges");
    if (changes != JSON_NO_REF)
        git_marks_arrived(t, doc, changes);
    json_ref diags = json_get(doc, result, "diagnostics");
    size_t dn = json_length(doc, diags);
    t->diags = dn ? xcalloc(dn, sizeof *t->diags) : NULL;
    for (json_ref d = json_first(doc, diags); d != JSON_NO_REF; d = json_next(doc, d)) {
        diagnostic *g = &t->diags[t->diag_count++];
        json_ref range = json_get(doc, d, "range");
        parse_position(doc, json_get(doc, range, "start"), &g->start_line, &g->start_col);
        parse_position(doc, json_get(doc, range, "end"), &g->end_line, &g->end_col);
        g->severity = json_int_or(doc, json_get(doc, d, "severity"), 1);
        g->message = json_dup_string(doc, json_get(doc, d, "message"));
        if (!g->message)
            g->message = xstrdup("");
    }
    if (t->binary && !was_binary)
        app_message(a, false, "%s is a binary file: shown read-only", t->path ? t->path : t->uri);
    if (t->top >= t->line_count && t->line_count > 0) {
        t->top = t->line_count - 1;
        t->viewport.again = true;
    }
}

void model_info_arrived(tab *t, const json_doc *doc, json_ref result)
{
    bool dirty = t->dirty;
    json_bool(doc, json_get(doc, result, "isDirty"), &dirty);
    /* An answer asked for before the last edit was sent knows nothing of it. */
    t->dirty = dirty || (t->edits_sent != t->info_asked_at && t->dirty);
    bool disk = false;
    json_bool(doc, json_get(doc, result, "changedOnDisk"), &disk);
    t->changed_on_disk = disk;
    t->line_count = json_int_or(doc, json_get(doc, result, "lineCount"), t->line_count);
}

tab *model_document_opened(app *a, const json_doc *doc, json_ref info)
{
    char *doc_id = json_dup_string(doc, json_get(doc, info, "documentId"));
    char *uri = json_dup_string(doc, json_get(doc, info, "uri"));
    if (!doc_id) {
        free(uri);
        return NULL;
    }
    char *path = path_of_uri(uri);
    tab *t = tab_by_doc(a, doc_id);
    for (int i = 0; !t && path && i < a->tab_count; i++)
        if (a->tabs[i]->path && strcmp(a->tabs[i]->path, path) == 0)
            t = a->tabs[i]; /* the same file under a restarted server */
    for (int i = 0; !t && i < a->tab_count; i++)
        if (uri && a->tabs[i]->uri && strcmp(a->tabs[i]->uri, uri) == 0)
            t = a->tabs[i]; /* a document without a file, under a restarted server */
    if (!t) {
        t = xcalloc(1, sizeof *t);
        t->serial = a->next_serial++;
        a->tabs = xrealloc(a->tabs, (size_t)(a->tab_count + 1) * sizeof *a->tabs);
        a->tabs[a->tab_count++] = t;
    }
    for (int i = 0; i < a->tab_count; i++)
        if (a->tabs[i] == t)
            a->current = i;
    free(t->doc_id);
    free(t->uri);
    free(t->path);
    free(t->language);
    t->doc_id = doc_id;
    t->uri = uri;
    t->path = path;
    t->language = json_dup_string(doc, json_get(doc, info, "languageId"));
    if (!t->wrap_set)
        t->wrap = !t->language || strcmp(t->language, "markdown") == 0 || strcmp(t->language, "plaintext") == 0;
    json_int64(doc, json_get(doc, info, "version"), &t->version);
    json_bool(doc, json_get(doc, info, "isDirty"), &t->dirty);
    bool read_only = false;
    json_bool(doc, json_get(doc, info, "isReadOnly"), &read_only);
    t->read_only = read_only || t->binary;
    t->line_count = json_int_or(doc, json_get(doc, info, "lineCount"), 1);
    t->viewport = t->cursors_refresh = t->info = (refresh_slot){0};
    a->need_paint = true;
    return t;
}

void model_document_saved(app *a, tab *t, const char *uri)
{
    t->dirty = false;
    if (uri) {
        free(t->uri);
        free(t->path);
        t->uri = xstrdup(uri);
        t->path = path_of_uri(uri);
    }
    app_message(a, false, "Saved %s", t->path ? t->path : t->uri);
}

/* ---- the workspace ---- */

void model_repository_arrived(app *a, const json_doc *doc, json_ref result)
{
    bool is_repo = false;
    json_bool(doc, json_get(doc, result, "isRepo"), &is_repo);
    free(a->repo_root);
    a->repo_root = is_repo ? json_dup_string(doc, json_get(doc, result, "rootUri")) : NULL;
    if (!a->repo_root && is_repo)
        a->repo_root = json_dup_string(doc, json_get(doc, result, "root"));
}

void model_branch_arrived(app *a, const json_doc *doc, json_ref result)
{
    char *branch = json_dup_string(doc, json_get(doc, result, "branch"));
    free(a->branch);
    a->branch = branch;
    a->need_paint = true;
}

void model_trust_arrived(app *a, const json_doc *doc, json_ref result)
{
    bool trusted = true;
    json_bool(doc, json_get(doc, result, "trusted"), &trusted);
    json_ref ignored = json_get(doc, result, "ignoredSettings");
    a->restricted = result != JSON_NO_REF && !trusted && ignored != JSON_NO_REF && json_length(doc, ignored) > 0;
    a->need_paint = true;
}

/* ---- the terminal pane ---- */

void model_terminal_screen_arrived(terminal_pane *tp, const json_doc *doc, json_ref b)
{
    json_ref cells = json_get(doc, b, "cells");
    int rows = (int)json_length(doc, cells), cols = 0;
    for (json_ref r = json_first(doc, cells); r != JSON_NO_REF; r = json_next(doc, r))
        if ((int)json_length(doc, r) > cols)
            cols = (int)json_length(doc, r);
    free(tp->cells);
    tp->cells = rows && cols ? xcalloc((size_t)rows * (size_t)cols, sizeof *tp->cells) : NULL;
    tp->cell_rows = rows;
    tp->cell_cols = cols;
    arena ar = ARENA_INIT;
    int y = 0;
    for (json_ref r = json_first(doc, cells); r != JSON_NO_REF; r = json_next(doc, r), y++) {
        int x = 0;
        for (json_ref c = json_first(doc, r); c != JSON_NO_REF; c = json_next(doc, c), x++) {
            term_cell *tc = &tp->cells[y * cols + x];
            const char *s;
            size_t n;
            if (json_string(doc, json_get(doc, c, "char"), &ar, &s, &n) && n < sizeof tc->ch)
                memcpy(tc->ch, s, n);
            tc->fg = tc->bg = -1;
            if (json_string(doc, json_get(doc, c, "fg"), &ar, &s, &n) && n == 7)
                tc->fg = (int)strtol(s + 1, NULL, 16);
            if (json_string(doc, json_get(doc, c, "bg"), &ar, &s, &n) && n == 7)
                tc->bg = (int)strtol(s + 1, NULL, 16);
            json_bool(doc, json_get(doc, c, "bold"), &tc->bold);
            json_bool(doc, json_get(doc, c, "underline"), &tc->underline);
            json_bool(doc, json_get(doc, c, "inverse"), &tc->inverse);
            json_bool(doc, json_get(doc, c, "italic"), &tc->italic);
        }
    }
    arena_free(&ar);
    json_ref cur = json_get(doc, b, "cursor");
    tp->cursor_x = json_int_or(doc, json_get(doc, cur, "x"), 0);
    tp->cursor_y = json_int_or(doc, json_get(doc, cur, "y"), 0);
}

/* ---- the agent chat ---- */

chat_entry *chat_add_entry(chat_pane *c, chat_role role, const char *text)
{
    c->entries = xrealloc(c->entries, (size_t)(c->entry_count + 1) * sizeof *c->entries);
    chat_entry *e = &c->entries[c->entry_count++];
    *e = (chat_entry){.role = role, .text = BUF_INIT};
    if (text)
        buf_append_str(&e->text, text);
    c->scroll = 0; /* something new: show the end */
    return e;
}

static chat_entry *tool_entry(chat_pane *c, const char *id)
{
    for (int i = c->entry_count - 1; id && i >= 0; i--)
        if (c->entries[i].role == CHAT_TOOL && c->entries[i].tool_id && strcmp(c->entries[i].tool_id, id) == 0)
            return &c->entries[i];
    return NULL;
}

static void set_status(chat_entry *e, const char *status)
{
    free(e->status);
    e->status = xstrdup(status);
}

void chat_clear_waiting(chat_pane *c)
{
    free(c->waiting_id);
    free(c->waiting_label);
    c->waiting_id = c->waiting_label = NULL;
}

void chat_free(app *a)
{
    chat_pane *c = &a->chat;
    for (int i = 0; i < c->entry_count; i++) {
        buf_free(&c->entries[i].text);
        free(c->entries[i].tool_id);
        free(c->entries[i].status);
    }
    free(c->entries);
    c->entries = NULL;
    c->entry_count = 0;
    free(c->chat_id);
    free(c->model);
    c->chat_id = c->model = NULL;
    chat_clear_waiting(c);
    buf_free(&c->input);
}

void model_chat_tool_answered(chat_pane *c, bool approve)
{
    chat_entry *e = tool_entry(c, c->waiting_id);
    if (e)
        set_status(e, approve ? "approved" : "rejecting");
    chat_clear_waiting(c);
}

void model_chat_content_arrived(app *a, const json_doc *doc, json_ref params)
{
    chat_pane *c = &a->chat;
    json_ref content = json_get(doc, params, "content");
    json_ref type = json_get(doc, content, "type");
    a->need_paint = true;
    if (json_string_eq(doc, type, "text")) {
        char *text = json_dup_string(doc, json_get(doc, content, "text"));
        if (!text)
            return;
        if (json_string_eq(doc, json_get(doc, params, "role"), "system"))
            chat_add_entry(c, CHAT_SYSTEM, text);
        else if (c->entry_count && c->entries[c->entry_count - 1].role == CHAT_ASSISTANT)
            buf_append_str(&c->entries[c->entry_count - 1].text, text), c->scroll = 0;
        else
            chat_add_entry(c, CHAT_ASSISTANT, text);
        free(text);
    } else if (json_string_eq(doc, type, "progress")) {
        c->running = !json_string_eq(doc, json_get(doc, content, "state"), "finished");
        if (!c->running)
            chat_clear_waiting(c);
    } else if (json_string_eq(doc, type, "toolCallRun")) {
        char *id = json_dup_string(doc, json_get(doc, content, "id"));
        char *name = json_dup_string(doc, json_get(doc, content, "name"));
        size_t len = 0;
        const char *args = json_raw(doc, json_get(doc, content, "arguments"), &len);
        buf label = BUF_INIT;
        buf_appendf(&label, "%s ", name ? name : "?");
        if (args)
            buf_append(&label, args, len);
        chat_entry *e = chat_add_entry(c, CHAT_TOOL, label.data);
        e->tool_id = id;
        bool manual = false;
        json_bool(doc, json_get(doc, content, "manualApproval"), &manual);
        set_status(e, manual ? "waits for approval" : "running");
        if (manual) {
            chat_clear_waiting(c);
            c->waiting_id = xstrdup(id ? id : "");
            c->waiting_label = buf_detach(&label);
        }
        buf_free(&label);
        free(name);
    } else if (json_string_eq(doc, type, "toolCallRunning") || json_string_eq(doc, type, "toolCalled") ||
               json_string_eq(doc, type, "toolCallRejected")) {
        char *id = json_dup_string(doc, json_get(doc, content, "id"));
        chat_entry *e = tool_entry(c, id);
        if (e && json_string_eq(doc, type, "toolCallRunning")) {
            set_status(e, "running");
        } else if (e && json_string_eq(doc, type, "toolCalled")) {
            bool failed = false;
            json_bool(doc, json_get(doc, content, "error"), &failed);
            char *out = json_dup_string(doc, json_get(doc, json_array_at(doc, json_get(doc, content, "outputs"), 0), "text"));
            buf status = BUF_INIT;
            buf_appendf(&status, "%s: %s", failed ? "failed" : "done", out ? out : "");
            set_status(e, status.data);
            buf_free(&status);
            free(out);
        } else if (e) {
            char *reason = json_dup_string(doc, json_get(doc, content, "reason"));
            buf status = BUF_INIT;
            buf_appendf(&status, "rejected%s%s", reason ? ": " : "", reason ? reason : "");
            set_status(e, status.data);
            buf_free(&status);
            free(reason);
        }
        if (c->waiting_id && id && strcmp(c->waiting_id, id) == 0)
            chat_clear_waiting(c);
        free(id);
    }
}

/* ---- the theme ---- */

void colors_default(app *a)
{
    a->colors = (colors){
        .fg = 0xabb2bf, .bg = 0x282c34, .line_number = 0x636d83, .line_number_active = 0xabb2bf,
        .selection = 0x3e4451, .cursor_line = 0x2c313c, .status_fg = 0x9da5b4, .status_bg = 0x21252b,
        .tab_active = 0x282c34, .tab_inactive = 0x21252b, .added = 0x98c379, .modified = 0x61afef,
        .deleted = 0xe06c75, .error = 0xe06c75, .warning = 0xe5c07b,
    };
}

void model_theme_arrived(app *a, const json_doc *doc, json_ref theme)
{
    json_ref c = json_get(doc, theme, "colors");
    struct {
        const char *key;
        int *slot;
    } keys[] = {
        {"editor.background", &a->colors.bg},
        {"editor.foreground", &a->colors.fg},
        {"editorLineNumber.foreground", &a->colors.line_number},
        {"editorLineNumber.activeForeground", &a->colors.line_number_active},
        {"editor.selectionBackground", &a->colors.selection},
        {"editor.lineHighlightBackground", &a->colors.cursor_line},
        {"statusBar.background", &a->colors.status_bg},
        {"statusBar.foreground", &a->colors.status_fg},
        {"tab.activeBackground", &a->colors.tab_active},
        {"tab.inactiveBackground", &a->colors.tab_inactive},
    };
    arena ar = ARENA_INIT;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const char *s;
        size_t n;
        if (json_string(doc, json_get(doc, c, keys[i].key), &ar, &s, &n) && n >= 7 && s[0] == '#')
            *keys[i].slot = (int)strtol(s + 1, NULL, 16) & 0xFFFFFF;
    }
    arena_free(&ar);
    a->need_paint = true;
}

int gutter_width(const tab *t)
{
    int digits = 1;
    for (int n = t->line_count; n >= 10; n /= 10)
        digits++;
    return digits + 2; /* git mark, number, space */
}

/* ---- key bindings ---- */

const char *binding_command(const app *a, const char *key)
{
    for (int i = a->binding_count - 1; i >= 0; i--) {
        if (strcmp(a->bindings[i].key, key) == 0)
            return a->bindings[i].command;
    }
    return NULL;
}

void bindings_add(app *a, const char *key, const char *command)
{
    a->bindings = xrealloc(a->bindings, (size_t)(a->binding_count + 1) * sizeof *a->bindings);
    a->bindings[a->binding_count++] = (binding){xstrdup(key), xstrdup(command)};
}

void bindings_clear(app *a)
{
    for (int i = 0; i < a->binding_count; i++) {
        free(a->bindings[i].key);
        free(a->bindings[i].command);
    }
    free(a->bindings);
    a->bindings = NULL;
    a->binding_count = 0;
}

/* ---- keys waiting behind a command ---- */

void queue_push(app *a, const char *key, wint_t ch, bool printable)
{
    a->queued = xrealloc(a->queued, (size_t)(a->queued_count + 1) * sizeof *a->queued);
    a->queued[a->queued_count++] = (queued_key){key ? xstrdup(key) : NULL, ch, printable, NULL, 0};
}

void queue_push_paste(app *a, const char *text, size_t len)
{
    a->queued = xrealloc(a->queued, (size_t)(a->queued_count + 1) * sizeof *a->queued);
    a->queued[a->queued_count++] = (queued_key){NULL, 0, false, xstrndup(text, len), len};
}

queued_key *queue_take(app *a, int *count)
{
    queued_key *taken = a->queued;
    *count = a->queued_count;
    a->queued = NULL;
    a->queued_count = 0;
    return taken;
}

void queue_drop(app *a)
{
    for (int i = 0; i < a->queued_count; i++) {
        free(a->queued[i].key);
        free(a->queued[i].paste);
    }
    free(a->queued);
    a->queued = NULL;
    a->queued_count = 0;
    a->busy = 0;
}

int tab_line_rows(const app *a, const tab *t, int line)
{
    if (!t->wrap)
        return 1;
    const char *text = view_text(t, line);
    int width = a->cols - gutter_width(t) - 1;
    if (!text || width < 1)
        return 1;
    int cols = text_display_col(text, 1 << 30);
    return cols <= width ? 1 : (cols + width - 1) / width;
}

