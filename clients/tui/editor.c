/* Tabs and editing: every edit, move and search is a request to the
 * document service; what comes back (notifications and answers) goes to the
 * model's functions, which update the few lines and cursors kept for the
 * screen. The commands table (commands.c) runs the editor_* operations here. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"
#include "arena.h"

/* ---- answers ---- */

static void scroll_to_primary(app *a, tab *t)
{
    if (!t->cursor_count)
        return;
    int top_row, height;
    editor_layout(a, &top_row, &height);
    int line = t->cursors[0].line, old_top = t->top;
    if (line < t->top)
        t->top = line;
    else if (line >= t->top + height)
        t->top = line - height + 1;
    if (t->wrap) {
        /* Wrapped lines above it can push the caret's line below the screen; lines
         * not here yet count one row, so this is done again when they arrive. */
        int rows = 0;
        for (int l = t->top; l <= line; l++)
            rows += tab_line_rows(a, t, l);
        while (rows > height && t->top < line)
            rows -= tab_line_rows(a, t, t->top++);
        t->refit_wrap = true;
    }
    const char *text = view_text(t, line);
    int gutter = gutter_width(t), width = a->cols - gutter - 1;
    if (t->wrap) {
        t->left = 0;
    } else if (text && width > 4) {
        int d = text_display_col(text, t->cursors[0].col);
        if (d < t->left)
            t->left = d;
        else if (d >= t->left + width)
            t->left = d - width + 1;
    }
    if (t->top != old_top)
        tab_request_viewport(a, t);
}

static void on_cursors(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t)
        return;
    /* An answer asked for before a move predicted here would take the caret back: the next one says. */
    bool stale = t->cursors_asked_at != t->predictions;
    if (result != JSON_NO_REF && !stale)
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
    bool more = t->cursors_refresh.again || stale;
    if (t->follow_cursor && t->cursor_count) {
        /* Keys still on their way move the caret again: keep following until the last answer. */
        if (!more)
            t->follow_cursor = false;
        scroll_to_primary(a, t);
    }
    a->need_paint = true;
    if (refresh_end(&t->cursors_refresh) || stale)
        tab_request_cursors(a, t);
}

void tab_request_cursors(app *a, tab *t)
{
    if (!t->cursors_refresh.in_flight)
        t->cursors_asked_at = t->predictions;
    if (refresh_begin(&t->cursors_refresh) &&
        !app_call(a, "document/cursors", on_cursors, t->serial, "{\"documentId\":%J}", t->doc_id))
        t->cursors_refresh.in_flight = false;
}

static void on_viewport(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t)
        return;
    if (result != JSON_NO_REF)
        model_viewport_arrived(a, t, doc, result);
    a->need_paint = true;
    if (t->refit_wrap && !t->viewport.again && result != JSON_NO_REF && t->cursor_count) {
        t->refit_wrap = false;
        int old_top = t->top;
        scroll_to_primary(a, t);
        t->refit_wrap = false;
        if (t->top != old_top)
            t->viewport.again = true;
    }
    if (refresh_end(&t->viewport))
        tab_request_viewport(a, t);
}

void tab_request_viewport(app *a, tab *t)
{
    int top_row, height;
    editor_layout(a, &top_row, &height);
    if (refresh_begin(&t->viewport) &&
        !app_call(a, "document/viewport", on_viewport, t->serial,
                  "{\"documentId\":%J,\"startLine\":%d,\"lineCount\":%d,\"include\":[\"tokens\",\"diagnostics\"%s]}",
                  t->doc_id, t->top, height, a->repo_root && t->path ? ",\"gitChanges\"" : ""))
        t->viewport.in_flight = false;
}

static void tab_request_info(app *a, tab *t);

static void on_info(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t)
        return;
    if (result != JSON_NO_REF)
        model_info_arrived(t, doc, result);
    a->need_paint = true;
    if (refresh_end(&t->info))
        tab_request_info(a, t);
}

static void tab_request_info(app *a, tab *t)
{
    if (!refresh_begin(&t->info))
        return;
    t->info_asked_at = t->edits_sent;
    if (!app_call(a, "document/info", on_info, t->serial, "{\"documentId\":%J}", t->doc_id))
        t->info.in_flight = false;
}

/* ---- the other clients on a document ---- */

static void on_clients(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t)
        return;
    if (result != JSON_NO_REF && a->client_id >= 0)
        model_clients_arrived(t, a->client_id, doc, json_get(doc, result, "clients"));
    a->need_paint = true;
    if (refresh_end(&t->clients))
        tab_request_clients(a, t);
}

/* A server that does not know document/clients answers an error: nobody else is shown. */
void tab_request_clients(app *a, tab *t)
{
    if (a->client_id < 0 || t->reopening)
        return;
    if (refresh_begin(&t->clients) &&
        !app_call(a, "document/clients", on_clients, t->serial, "{\"documentId\":%J}", t->doc_id))
        t->clients.in_flight = false;
}

/* ---- edits: each is remembered until answered, so that a new server gets those the old one never answered ---- */

static void on_edit_answered(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, tag >> 32);
    if (!t)
        return;
    model_edit_answered(t, tag & 0xFFFFFFFFu);
    tab_request_info(a, t); /* an edit that changed nothing leaves the document as clean as it was */
    a->need_paint = true;
}

static bool send_edit_params(app *a, tab *t, const char *method, const char *params)
{
    uint64_t seq = (t->edits_sent + 1) & 0xFFFFFFFFu;
    if (!app_call(a, method, on_edit_answered, (t->serial << 32) | seq, "{\"documentId\":%J%s%s}", t->doc_id,
                  *params ? "," : "", params))
        return false;
    model_edit_sent(t, seq, method, params);
    return true;
}

/* Sends an edit: params_fmt (rpc_format's) gives the members after documentId. */
static bool send_edit(app *a, tab *t, const char *method, const char *params_fmt, ...)
{
    buf params = BUF_INIT;
    va_list ap;
    va_start(ap, params_fmt);
    rpc_vformat(&params, params_fmt, ap);
    va_end(ap);
    bool sent = send_edit_params(a, t, method, params.data ? params.data : "");
    buf_free(&params);
    return sent;
}

/* Under a new server: the cursors where the old one last said they were, then
 * the edits it never answered, in order. */
static void resend_unanswered(app *a, tab *t)
{
    if (t->known_cursor_count) {
        buf list = BUF_INIT;
        for (int i = 0; i < t->known_cursor_count; i++) {
            cursor *k = &t->known_cursors[i];
            rpc_format(&list, "%s{\"position\":{\"line\":%d,\"column\":%d}", i ? "," : "", k->line, k->col);
            if (k->has_selection)
                rpc_format(&list, ",\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}",
                           k->anchor_line, k->anchor_col, k->line, k->col);
            buf_push(&list, '}');
        }
        app_call(a, "document/setCursors", NULL, 0, "{\"documentId\":%J,\"cursors\":[%s]}", t->doc_id, list.data);
        buf_free(&list);
    }
    pending_edit *edits = t->edits;
    int count = t->edit_count;
    t->edits = NULL;
    t->edit_count = 0;
    for (int i = 0; i < count; i++) {
        send_edit_params(a, t, edits[i].method, edits[i].params);
        free(edits[i].method);
        free(edits[i].params);
    }
    free(edits);
}

/* The gutter's git marks come with the viewport (its gitChanges, from the
 * server's latest diff of the buffer): asking again is asking for the viewport. */
void tab_request_git(app *a, tab *t)
{
    if (!a->repo_root || !t->path)
        return;
    tab_request_viewport(a, t);
}

/* The server diffs a document about 150 ms after its last edit, off its loop:
 * the viewport is asked again once that is likely done, and once more later
 * for a slow diff (a big file). */
#define GIT_REFRESH_FIRST_MS 250
#define GIT_REFRESH_AGAIN_MS 750

static void on_git_timer(uv_timer_t *h)
{
    app *a = h->data;
    for (int i = 0; i < a->tab_count; i++)
        tab_request_git(a, a->tabs[i]);
    if (--a->git_refreshes_left <= 0)
        uv_timer_stop(&a->git_timer);
}

static void schedule_git(app *a)
{
    a->git_refreshes_left = 2;
    uv_timer_start(&a->git_timer, on_git_timer, GIT_REFRESH_FIRST_MS, GIT_REFRESH_AGAIN_MS);
}

/* ---- opening ---- */

/* -32410, LSP_WORKSPACE_NOT_TRUSTED in the server's error table */
#define LSP_NOT_TRUSTED_CODE (-32410)

/* A language server that is not installed answers an error, ignored; one refused because the folder is
 * not trusted (it would run programs the folder names) is a reason to ask the user. */
static void on_language_started(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    (void)tag, (void)result;
    app *a = ctx;
    int64_t code = 0;
    if (error != JSON_NO_REF && json_int64(doc, json_get(doc, error, "code"), &code) && code == LSP_NOT_TRUSTED_CODE)
        app_ask_trust(a, "Language servers run programs it names");
}

static void request_language_server(app *a, const char *language)
{
    char *root = file_uri(a->workspace);
    app_call(a, "lsp/start", on_language_started, 0, "{\"languageId\":%J,\"workspaceUri\":%J}", language, root);
    free(root);
}

void editor_start_languages_again(app *a)
{
    for (int i = 0; i < a->started_language_count; i++)
        request_language_server(a, a->started_languages[i]);
}

static void start_language(app *a, const char *language)
{
    if (!language || strcmp(language, "plaintext") == 0)
        return;
    for (int i = 0; i < a->started_language_count; i++)
        if (strcmp(a->started_languages[i], language) == 0)
            return;
    a->started_languages = xrealloc(a->started_languages, (size_t)(a->started_language_count + 1) * sizeof(char *));
    a->started_languages[a->started_language_count++] = xstrdup(language);
    /* diagnostics come from the language's server */
    request_language_server(a, language);
}

void editor_adopt_document(app *a, const json_doc *doc, json_ref info, int line, int col)
{
    tab *t = model_document_opened(a, doc, info);
    if (!t)
        return;
    start_language(a, t->language);
    if (line > 0 || col > 0) {
        if (line >= t->line_count)
            line = t->line_count > 0 ? t->line_count - 1 : 0;
        app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}",
                 t->doc_id, line, col);
        int top_row, height;
        editor_layout(a, &top_row, &height);
        t->top = line > height / 2 ? line - height / 2 : 0;
    }
    t->follow_cursor = true;
    tab_request_viewport(a, t);
    tab_request_cursors(a, t);
    tab_request_git(a, t);
    tab_request_clients(a, t);
    a->need_paint = true;
}

static void on_opened(void *ctx, uint64_t where, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "%s", msg ? msg : "cannot open the file");
        free(msg);
        return;
    }
    editor_adopt_document(a, doc, json_get(doc, result, "info"), (int)(where >> 32), (int)(where & 0xFFFFFFFF));
}

void editor_open_path(app *a, const char *path, int line, int col)
{
    for (int i = 0; i < a->tab_count; i++) {
        if (a->tabs[i]->path && strcmp(a->tabs[i]->path, path) == 0 && !a->restarting) {
            a->current = i;
            tab *t = a->tabs[i];
            if (line > 0 || col > 0) {
                app_call(a, "document/setCursor", NULL, 0,
                         "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id, line, col);
                t->follow_cursor = true;
                tab_request_cursors(a, t);
            }
            a->need_paint = true;
            return;
        }
    }
    char *uri = file_uri(path);
    app_call(a, "document/open", on_opened, ((uint64_t)(unsigned)line << 32) | (unsigned)col, "{\"uri\":%J}", uri);
    free(uri);
}

/* ---- a new server ---- */

static void restore_finish(app *a)
{
    for (int i = 0; i < a->tab_count; i++)
        resend_unanswered(a, a->tabs[i]);
    int replayed = a->queued_count, n = a->recovered_count;
    /* The tab that was in front comes back to the front, unless Save as is about to ask for a recovered one. */
    for (int i = 0; i < a->tab_count && !(n > 0 && !a->connected_to_socket); i++)
        if (a->tabs[i]->serial == a->restore_current)
            a->current = i;
    a->restarting = false;
    keys_replay(a);
    if (n > 0 && !a->connected_to_socket)
        command_run(a, "file.saveAs");
    app_message(a, false, "The server is back; %d document%s recovered with %s unsaved text%s%s", n, n == 1 ? "" : "s",
                n == 1 ? "its" : "their", replayed ? ", the keys typed meanwhile applied" : "",
                n && !a->connected_to_socket ? ": choose where to save it" : "");
}

static void on_reopened(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (t)
        t->reopening = false;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "Not opened again: %s", msg ? msg : "the server refused");
        free(msg);
    } else if (t) {
        editor_adopt_document(a, doc, json_get(doc, result, "info"), 0, 0);
    }
    if (a->reopen_count > 0 && --a->reopen_count == 0)
        restore_finish(a);
}

void editor_restore_tabs(app *a, const json_doc *doc, json_ref recovered, int recovered_count)
{
    a->recovered_count = recovered_count;
    a->reopen_count = 0;
    for (int i = 0; i < a->tab_count; i++) {
        tab *t = a->tabs[i];
        if (!t->path)
            continue;
        bool back = false;
        for (json_ref d = json_first(doc, recovered); d != JSON_NO_REF && !back; d = json_next(doc, d))
            back = json_string_eq(doc, json_get(doc, d, "uri"), t->uri);
        if (back)
            continue;
        /* Its text is the file's, or another client's under this server already. */
        if (app_call(a, "document/open", on_reopened, t->serial, "{\"uri\":%J}", t->uri)) {
            t->reopening = true;
            a->reopen_count++;
        }
    }
    if (a->reopen_count == 0)
        restore_finish(a);
}

/* ---- notifications ---- */

static void refresh_tab(app *a, tab *t)
{
    tab_request_viewport(a, t);
    tab_request_cursors(a, t);
    tab_request_info(a, t);
}

void editor_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params)
{
    char *doc_id = json_dup_string(doc, json_get(doc, params, "documentId"));
    tab *t = tab_by_doc(a, doc_id);
    free(doc_id);
    if (strcmp(method, "document/didChange") == 0 && t) {
        refresh_tab(a, t);
        schedule_git(a);
        if (t->other_count)
            tab_request_clients(a, t); /* the edit moved their cursors too */
    } else if (strcmp(method, "document/didSave") == 0 && t) {
        /* Saved by whoever: clean, unless an edit of ours is still on its way. */
        if (t->edit_count == 0)
            t->dirty = false;
        tab_request_info(a, t);
        schedule_git(a);
        a->need_paint = true;
    } else if (strcmp(method, "document/didOpen") == 0 && t) {
        tab_request_clients(a, t); /* someone else opened it too */
    } else if (strcmp(method, "client/didDisconnect") == 0) {
        int64_t client = -1;
        if (json_int64(doc, json_get(doc, params, "clientId"), &client))
            model_client_left(a, client);
        for (int i = 0; i < a->tab_count; i++)
            tab_request_clients(a, a->tabs[i]);
    } else if (strcmp(method, "document/didChangeCursors") == 0 && t) {
        int64_t client = -1;
        json_int64(doc, json_get(doc, params, "clientId"), &client);
        if (client >= 0 && client != a->client_id) {
            if (a->client_id < 0 || client == 0)
                return; /* whose, we learn from initialize's answer (ours are asked for after it); 0 is the server's own */
            bool known = false;
            for (int i = 0; i < t->other_count; i++)
                known = known || t->others[i].client_id == client;
            model_other_cursors_arrived(t, client, NULL, doc, json_get(doc, params, "cursors"));
            if (!known)
                tab_request_clients(a, t); /* its name */
            a->need_paint = true;
            return;
        }
        if (t->cursors_asked_at == t->predictions && !t->cursors_refresh.in_flight)
            model_cursors_arrived(t, doc, json_get(doc, params, "cursors"));
        if (t->follow_cursor)
            scroll_to_primary(a, t); /* the answer to tab_follow()'s request ends the following */
        a->need_paint = true;
    } else if (strcmp(method, "document/didClose") == 0 && t) {
        model_document_closed(a, t);
    } else if (strcmp(method, "document/didChangeOnDisk") == 0 && t) {
        tab_request_info(a, t);
        app_message(a, true, "%s changed on disk; saving will ask before overwriting it", t->path ? t->path : t->uri);
    } else if (strcmp(method, "syntax/didChange") == 0 && t) {
        json_ref ranges = json_get(doc, params, "ranges");
        for (json_ref r = json_first(doc, ranges); r != JSON_NO_REF; r = json_next(doc, r)) {
            int s = json_int_or(doc, json_get(doc, r, "startLine"), 0);
            int e = json_int_or(doc, json_get(doc, r, "endLine"), 0);
            if (e >= t->top && s < t->top + a->rows) {
                tab_request_viewport(a, t);
                break;
            }
        }
    } else if (strcmp(method, "lsp/didPublishDiagnostics") == 0) {
        for (int i = 0; i < a->tab_count; i++)
            tab_request_viewport(a, a->tabs[i]);
    } else if (strcmp(method, "git/didChange") == 0) {
        git_refresh_branch(a);
        schedule_git(a);
    } else if (strcmp(method, "theme/didChange") == 0) {
        editor_reload_theme(a);
    } else if (strcmp(method, "keybindings/didChange") == 0) {
        keybindings_reload(a); /* another client (or this one) rebound a key */
    } else if (strcmp(method, "$/showMessage") == 0 || strcmp(method, "lsp/didShowMessage") == 0) {
        char *msg = json_dup_string(doc, json_get(doc, params, "message"));
        if (msg)
            app_message(a, json_int_or(doc, json_get(doc, params, "type"), 3) <= 1, "%s", msg);
        free(msg);
    }
}

/* ---- editing ---- */

void tab_follow(app *a, tab *t)
{
    t->follow_cursor = true;
    tab_request_cursors(a, t);
}

static void on_chain_cursors(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (t && result != JSON_NO_REF) {
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
        scroll_to_primary(a, t);
    }
    chain_end(a);
}

/* The last step of a chain: the cursors as the chain left them. */
void chain_finish(app *a, tab *t)
{
    if (!t || !app_call(a, "document/cursors", on_chain_cursors, t->serial, "{\"documentId\":%J}", t->doc_id))
        chain_end(a);
}

/* The first step: the cursors as every earlier key left them, then `next`. */
void chain_with_cursors(app *a, tab *t, rpc_reply_fn next, uint64_t tag)
{
    chain_begin(a);
    if (!app_call(a, "document/cursors", next, tag, "{\"documentId\":%J}", t->doc_id))
        chain_end(a);
}

tab *chain_tab(app *a, uint64_t serial, const json_doc *doc, json_ref result)
{
    tab *t = tab_by_serial(a, serial);
    if (t && result != JSON_NO_REF)
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
    return t;
}

/* Shows typed text at once, before the server's answer replaces the lines:
 * only the plain case (one line of text, carets without selections, on lines
 * on screen), which is what typing is. */
static void echo_locally(tab *t, const char *text, size_t len)
{
    if (memchr(text, '\n', len) || memchr(text, '\t', len))
        return;
    int added = 0;
    for (const char *p = text; p < text + len; added++) {
        int n;
        utf8_next(p, &n);
        p += n;
    }
    for (int i = 0; i < t->cursor_count; i++) {
        cursor *k = &t->cursors[i];
        int row = k->line - t->lines_start;
        if (k->has_selection || row < 0 || row >= t->line_total)
            continue;
        view_line *v = &t->lines[row];
        size_t old = strlen(v->text), at = col_to_byte(v->text, old, k->col);
        char *grown = xmalloc(old + len + 1);
        memcpy(grown, v->text, at);
        memcpy(grown + at, text, len);
        memcpy(grown + at + len, v->text + at, old - at + 1);
        free(v->text);
        v->text = grown;
        for (int j = 0; j < v->token_count; j++) {
            if (v->tokens[j].start >= k->col)
                v->tokens[j].start += added;
            if (v->tokens[j].end > k->col)
                v->tokens[j].end += added;
        }
        /* Carets after this one on the same line move with it. */
        for (int j = 0; j < t->cursor_count; j++)
            if (j != i && t->cursors[j].line == k->line && t->cursors[j].col > k->col)
                t->cursors[j].col += added;
        k->col += added;
    }
}

void editor_refuse_edit(app *a, tab *t)
{
    app_message(a, true, "%s is read-only%s", t->path ? t->path : t->uri, t->binary ? " (a binary file)" : "");
}

void editor_flush_typed(app *a)
{
    if (!a->typed.len)
        return;
    tab *t = app_tab(a);
    if (t && t->read_only) {
        editor_refuse_edit(a, t);
        buf_clear(&a->typed);
        return;
    }
    /* Shown only once it is on its way: text the server never gets is never shown. */
    /* Taken out first: what runs after the send (a completion request) may flush again. */
    buf typed = a->typed;
    a->typed = (buf)BUF_INIT;
    if (t && send_edit(a, t, "document/type", "\"text\":%N", typed.data, typed.len)) {
        echo_locally(t, typed.data, typed.len);
        tab_follow(a, t);
        lsp_after_typing(a, t, typed.data, typed.len);
    } else if (t) {
        app_message(a, true, "Not typed: the server is gone");
    }
    buf_free(&typed);
}

static void type_text(app *a, tab *t, const char *text, size_t len)
{
    send_edit(a, t, "document/type", "\"text\":%N", text, len);
    tab_follow(a, t);
}

static bool any_selection(tab *t)
{
    for (int i = 0; i < t->cursor_count; i++)
        if (t->cursors[i].has_selection)
            return true;
    return false;
}

static void move_cursors(app *a, tab *t, const char *direction, const char *unit, bool select)
{
    app_call(a, "document/moveCursors", NULL, 0, "{\"documentId\":%J,\"direction\":%J,\"unit\":%J,\"select\":%b}",
             t->doc_id, direction, unit, select);
    tab_follow(a, t);
}

/* A page is what the screen shows: the view scrolls by one and the caret moves
 * as far, so it stays on the same row (the server's own page does not know the
 * screen's height). */
static void page_move(app *a, tab *t, int direction, bool select)
{
    if (!t->cursor_count)
        return;
    int top_row, height;
    editor_layout(a, &top_row, &height);
    cursor k = t->cursors[0];
    int last = t->line_count > 0 ? t->line_count - 1 : 0;
    int line = k.line + direction * height;
    line = line < 0 ? 0 : line > last ? last : line;
    int top = t->top + direction * height;
    int max_top = t->line_count > height ? t->line_count - height : 0;
    top = top < 0 ? 0 : top > max_top ? max_top : top;
    int col = line == 0 && direction < 0 && line == k.line ? 0 : k.col;
    if (select) {
        int al = k.has_selection ? k.anchor_line : k.line, ac = k.has_selection ? k.anchor_col : k.col;
        app_call(a, "document/setCursor", NULL, 0,
                 "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
                 t->doc_id, line, col, al, ac, line, col);
    } else {
        app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}",
                 t->doc_id, line, col);
    }
    if (top != t->top) {
        t->top = top;
        tab_request_viewport(a, t);
    }
    /* The next key of a burst pages from here, not from where the last answer left the caret. */
    t->predictions++;
    t->cursor_count = 1;
    t->cursors[0] = (cursor){.line = line, .col = col, .has_selection = select,
                             .anchor_line = select ? (k.has_selection ? k.anchor_line : k.line) : 0,
                             .anchor_col = select ? (k.has_selection ? k.anchor_col : k.col) : 0};
    tab_follow(a, t);
}

static void delete_towards(app *a, tab *t, const char *direction)
{
    if (!any_selection(t))
        app_call(a, "document/moveCursors", NULL, 0,
                 "{\"documentId\":%J,\"direction\":%J,\"unit\":\"character\",\"select\":true}", t->doc_id, direction);
    type_text(a, t, "", 0);
}

/* The server indents the new line from the caret's line as every earlier key left it. */
static void newline(app *a, tab *t)
{
    send_edit(a, t, "document/newline", "");
    tab_follow(a, t);
}

static void osc52_copy(const char *text, size_t len)
{
    static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    buf out = BUF_INIT;
    buf_append_str(&out, "\033]52;c;");
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned char)text[i] << 16;
        if (i + 1 < len)
            v |= (unsigned char)text[i + 1] << 8;
        if (i + 2 < len)
            v |= (unsigned char)text[i + 2];
        buf_push(&out, b64[(v >> 18) & 63]);
        buf_push(&out, b64[(v >> 12) & 63]);
        buf_push(&out, i + 1 < len ? b64[(v >> 6) & 63] : '=');
        buf_push(&out, i + 2 < len ? b64[v & 63] : '=');
    }
    buf_append_str(&out, "\a");
    fwrite(out.data, 1, out.len, stdout);
    fflush(stdout);
    buf_free(&out);
}

static void on_selections(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool cut = tag & 1;
    tab *t = tab_by_serial(a, tag >> 1);
    json_ref list = json_get(doc, result, "selections");
    if (list == JSON_NO_REF)
        list = result;
    buf text = BUF_INIT;
    bool first = true;
    arena ar = ARENA_INIT;
    for (json_ref s = json_first(doc, list); s != JSON_NO_REF; s = json_next(doc, s)) {
        const char *str;
        size_t n;
        if (!json_string(doc, s, &ar, &str, &n) || n == 0)
            continue;
        if (!first)
            buf_push(&text, '\n');
        buf_append(&text, str, n);
        first = false;
    }
    arena_free(&ar);
    if (text.len) {
        buf_clear(&a->clipboard);
        buf_append(&a->clipboard, text.data, text.len);
        osc52_copy(text.data, text.len);
        app_message(a, false, "%s %zu bytes", cut ? "Cut" : "Copied", text.len);
        if (cut && t)
            type_text(a, t, "", 0);
    }
    buf_free(&text);
    chain_finish(a, t);
}

static void on_copy_cursors(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool cut = tag & 1;
    tab *t = chain_tab(a, tag >> 1, doc, result);
    if (!t) {
        chain_end(a);
        return;
    }
    if (!any_selection(t) && t->cursor_count) {
        /* Nothing selected: the whole line, as most editors do. */
        const char *line = view_text(t, t->cursors[0].line);
        if (!line) {
            chain_end(a);
            return;
        }
        buf_clear(&a->clipboard);
        buf_append_str(&a->clipboard, line);
        buf_push(&a->clipboard, '\n');
        osc52_copy(a->clipboard.data, a->clipboard.len);
        if (cut) {
            int l = t->cursors[0].line;
            send_edit(a, t, "document/delete",
                      "\"range\":{\"start\":{\"line\":%d,\"column\":0},\"end\":{\"line\":%d,\"column\":0}}", l,
                      l + 1 < t->line_count ? l + 1 : l);
            tab_follow(a, t);
        }
        app_message(a, false, "%s the line", cut ? "Cut" : "Copied");
        chain_finish(a, t);
        return;
    }
    if (!app_call(a, "document/selections", on_selections, (t->serial << 1) | (cut ? 1 : 0), "{\"documentId\":%J}", t->doc_id))
        chain_end(a);
}

static void copy_or_cut(app *a, tab *t, bool cut)
{
    chain_with_cursors(a, t, on_copy_cursors, (t->serial << 1) | (cut ? 1 : 0));
}

static void on_vertical_cursors(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    int delta = (tag & 1) ? 1 : -1;
    tab *t = chain_tab(a, tag >> 1, doc, result);
    if (!t || !t->cursor_count) {
        chain_end(a);
        return;
    }
    cursor *edge = &t->cursors[0];
    for (int i = 1; i < t->cursor_count; i++)
        if ((delta < 0 && t->cursors[i].line < edge->line) || (delta > 0 && t->cursors[i].line > edge->line))
            edge = &t->cursors[i];
    int line = edge->line + delta;
    if (line < 0 || line >= t->line_count) {
        chain_end(a);
        return;
    }
    const char *text = view_text(t, line);
    int col = edge->col, cols = text ? text_cols(text) : 0;
    if (col > cols)
        col = cols;
    app_call(a, "document/addCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id,
             line, col);
    chain_finish(a, t);
}

static void add_cursor_vertical(app *a, tab *t, int delta)
{
    chain_with_cursors(a, t, on_vertical_cursors, (t->serial << 1) | (delta > 0 ? 1 : 0));
}

static void goto_answered(app *a, const char *answer)
{
    tab *t = app_tab(a);
    if (!answer || !t)
        return;
    int line = atoi(answer), col = 0;
    const char *colon = strchr(answer, ':');
    if (colon)
        col = atoi(colon + 1) - 1;
    if (line < 1)
        line = 1;
    if (line > t->line_count)
        line = t->line_count;
    const char *text = view_text(t, line - 1);
    if (col < 0 || (text && col > text_cols(text)) || !text)
        col = 0;
    app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id,
             line - 1, col);
    int top_row, height;
    editor_layout(a, &top_row, &height);
    if (line - 1 < t->top || line - 1 >= t->top + height) {
        t->top = line - 1 > height / 2 ? line - 1 - height / 2 : 0;
        tab_request_viewport(a, t);
    }
    tab_follow(a, t);
}

/* ---- saving, closing, quitting ---- */

enum save_then { THEN_NOTHING, THEN_CLOSE, THEN_QUIT };

static void save_tab(app *a, tab *t, const char *as_path, bool force, enum save_then then);
static void release_tab(app *a, tab *t);

static void conflict_answered(app *a, int key)
{
    tab *t = app_tab(a);
    if (t && (key == 'y' || key == 'Y'))
        save_tab(a, t, NULL, true, THEN_NOTHING);
}

static void on_saved(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum save_then then = (enum save_then)(tag & 3);
    tab *t = tab_by_serial(a, tag >> 2);
    bool ok = false, conflict = false;
    json_bool(doc, json_get(doc, result, "success"), &ok);
    json_bool(doc, json_get(doc, result, "conflict"), &conflict);
    if (then == THEN_QUIT)
        a->pending_saves--;
    if (!ok) {
        char *msg = json_dup_string(doc, json_get(doc, result != JSON_NO_REF ? result : error, error != JSON_NO_REF ? "message" : "error"));
        a->quit_after_saves = false;
        if (conflict && t) {
            prompt_choose(a, "The file changed on disk since it was read. Overwrite it? (y/n)", "yYnN", conflict_answered);
        } else {
            app_message(a, true, "Not saved: %s", msg ? msg : "the server refused");
        }
        free(msg);
        return;
    }
    if (t) {
        char *uri = json_dup_string(doc, json_get(doc, result, "uri"));
        model_document_saved(a, t, uri);
        free(uri);
        tab_request_info(a, t);
        schedule_git(a);
        if (then == THEN_CLOSE)
            release_tab(a, t);
    }
    if (then == THEN_QUIT && a->quit_after_saves && a->pending_saves == 0)
        app_quit_now(a);
}

static void ask_save_as(app *a, tab *t);

static void save_as_answered(app *a, const char *answer)
{
    tab *t = app_tab(a);
    if (!answer || !*answer || !t) {
        a->quit_after_saves = false;
        return;
    }
    /* "folder/" and "/name" typed after it: one slash between them. */
    buf path = BUF_INIT;
    for (const char *p = answer; *p; p++)
        if (!(p[0] == '/' && p[1] == '/'))
            buf_push(&path, *p);
    save_tab(a, t, path.data, false, THEN_NOTHING);
    buf_free(&path);
}

static void save_tab(app *a, tab *t, const char *as_path, bool force, enum save_then then)
{
    if (!as_path && !t->path) {
        a->current = 0;
        for (int i = 0; i < a->tab_count; i++)
            if (a->tabs[i] == t)
                a->current = i;
        ask_save_as(a, t);
        return;
    }
    if (then == THEN_QUIT)
        a->pending_saves++;
    if (as_path) {
        buf abs = BUF_INIT;
        if (as_path[0] != '/')
            buf_appendf(&abs, "%s/", a->workspace);
        buf_append_str(&abs, as_path);
        char *uri = file_uri(abs.data);
        app_call(a, "document/save", on_saved, (t->serial << 2) | then, "{\"documentId\":%J,\"uri\":%J,\"force\":%b}",
                 t->doc_id, uri, force);
        free(uri);
        buf_free(&abs);
    } else {
        app_call(a, "document/save", on_saved, (t->serial << 2) | then, "{\"documentId\":%J,\"force\":%b}", t->doc_id,
                 force);
    }
}

/* Closing lets go of this client's hold only: the server closes the document
 * when nobody holds it, and until then others keep it, unsaved text and all.
 * Nothing is ever reverted here to throw changes away. */
static void release_tab(app *a, tab *t)
{
    app_call(a, "document/close", NULL, 0, "{\"documentId\":%J}", t->doc_id);
    model_document_closed(a, t);
}

static void close_answered(app *a, int key)
{
    tab *t = app_tab(a);
    if (!t)
        return;
    if (key == 'y' || key == 'Y')
        save_tab(a, t, NULL, false, THEN_CLOSE);
    else if (key == 'n' || key == 'N')
        release_tab(a, t);
}

static void on_quit_barrier(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app_quit_now(ctx);
}

static void quit_answered(app *a, int key)
{
    if (key == 's' || key == 'S') {
        a->quit_after_saves = true;
        for (int i = 0; i < a->tab_count; i++)
            if (tab_unsaved(a->tabs[i])) {
                if (!a->tabs[i]->path) {
                    a->current = i;
                    a->quit_after_saves = false;
                    ask_save_as(a, a->tabs[i]);
                    return;
                }
                save_tab(a, a->tabs[i], NULL, false, THEN_QUIT);
            }
        if (a->pending_saves == 0)
            app_quit_now(a);
    } else if (key == 'd' || key == 'D') {
        /* This client lets go of its unsaved documents: one nobody else holds closes, so that its
         * text is not offered for recovery next time; one another client holds stays theirs. */
        for (int i = 0; i < a->tab_count; i++)
            if (tab_unsaved(a->tabs[i]))
                app_call(a, "document/close", NULL, 0, "{\"documentId\":%J}", a->tabs[i]->doc_id);
        if (!app_call(a, "ecp/ping", on_quit_barrier, 0, NULL))
            app_quit_now(a);
    }
}

static void quit(app *a)
{
    /* An edit sent and not answered yet counts: its dirty state may not be here yet. */
    int dirty = 0, shared = 0;
    for (int i = 0; i < a->tab_count; i++) {
        dirty += tab_unsaved(a->tabs[i]);
        shared += tab_unsaved(a->tabs[i]) && a->tabs[i]->other_count > 0;
    }
    if (dirty == 0 || a->server_dead) {
        if (a->server_dead && (dirty || a->queued_count) && !a->quit_after_saves) {
            a->quit_after_saves = true; /* asked once; the second Ctrl+Q goes */
            app_message(a, true, "The server is gone with %d unsaved file%s%s: Ctrl+S restarts it and recovers them; Ctrl+Q again quits",
                        dirty, dirty == 1 ? "" : "s", a->queued_count ? " and keys typed since" : "");
            return;
        }
        app_quit_now(a);
        return;
    }
    char question[200];
    if (shared == dirty)
        snprintf(question, sizeof question,
                 "%d file%s unsaved, and open elsewhere. (s)ave all and quit, (d)on't save: quit (others keep %s open), (c)ancel?",
                 dirty, dirty == 1 ? " is" : "s are", dirty == 1 ? "it" : "them");
    else
        snprintf(question, sizeof question, "%d file%s unsaved. (s)ave all and quit, (d)iscard and quit%s, (c)ancel?", dirty,
                 dirty == 1 ? " is" : "s are", shared ? " (others keep theirs open)" : "");
    prompt_choose(a, question, "sSdDcC", quit_answered);
}

static void on_new(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (result != JSON_NO_REF)
        editor_adopt_document(a, doc, json_get(doc, result, "info"), 0, 0);
}

void editor_scroll(app *a, int lines)
{
    tab *t = app_tab(a);
    if (!t)
        return;
    int top = t->top + lines;
    if (top > t->line_count - 1)
        top = t->line_count - 1;
    if (top < 0)
        top = 0;
    if (top != t->top) {
        t->top = top;
        tab_request_viewport(a, t);
    }
}

void editor_click(app *a, int row, int col)
{
    tab *t = app_tab(a);
    int top_row, height;
    editor_layout(a, &top_row, &height);
    int term_end = top_row + height + (a->term.visible ? a->term.rows + 1 : 0);
    if (a->chat.visible && row >= term_end && row < term_end + a->chat.rows) {
        a->chat.focused = true;
        a->term.focused = false;
        return;
    }
    if (a->term.visible && row >= top_row + height && row < term_end) {
        a->term.focused = true;
        a->chat.focused = false;
        return;
    }
    a->term.focused = false;
    a->chat.focused = false;
    if (row == 0) {
        /* The tab bar: tabs are 20 columns wide at most, as painted. */
        int x = 0;
        for (int i = 0; i < a->tab_count; i++) {
            const char *p = a->tabs[i]->path ? strrchr(a->tabs[i]->path, '/') + 1 : "untitled";
            int w = (int)strlen(p) + 4;
            if (col >= x && col < x + w) {
                a->current = i;
                tab_request_viewport(a, a->tabs[i]);
                return;
            }
            x += w;
        }
        return;
    }
    if (!t || row < top_row || row >= top_row + height)
        return;
    int line = t->top + row - top_row;
    if (line >= t->line_count)
        line = t->line_count - 1;
    const char *text = view_text(t, line);
    int gutter = gutter_width(t);
    int c = text ? text_col_at_display(text, col - gutter + t->left) : 0;
    if (col < gutter)
        c = 0;
    app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id,
             line, c);
    tab_request_cursors(a, t);
}

/* ---- what the commands do ---- */

static void on_theme_reload(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (result != JSON_NO_REF)
        model_theme_arrived(a, doc, json_get(doc, result, "theme"));
    for (int i = 0; i < a->tab_count; i++)
        tab_request_viewport(a, a->tabs[i]);
}

void editor_reload_theme(app *a) { app_call(a, "theme/current", on_theme_reload, 0, NULL); }

void editor_quit(app *a) { quit(a); }

void editor_new_file(app *a)
{
    static unsigned untitled;
    char uri[48];
    snprintf(uri, sizeof uri, "untitled:%d-%u", (int)getpid(), ++untitled);
    app_call(a, "document/open", on_new, 0, "{\"uri\":%J,\"content\":\"\"}", uri);
}

void editor_save(app *a, tab *t) { save_tab(a, t, NULL, false, THEN_NOTHING); }

/* The folder is pre-filled and stays: what is typed after it is a name in it (Ctrl+U clears it). */
static void ask_save_as(app *a, tab *t)
{
    buf initial = BUF_INIT;
    if (t->path)
        buf_append_str(&initial, t->path);
    else
        buf_appendf(&initial, "%s/", a->workspace);
    prompt_ask_path(a, "Save as:", initial.data, save_as_answered);
    buf_free(&initial);
}

void editor_save_as(app *a, tab *t) { ask_save_as(a, t); }

void editor_close_tab(app *a, tab *t)
{
    if (!tab_unsaved(t))
        release_tab(a, t);
    else if (t->other_count > 0)
        prompt_choose(a, "Save changes before closing? (y)es, (n)o: close (others keep it open, unsaved), (c)ancel", "yYnNcC",
                      close_answered);
    else
        prompt_choose(a, "Save changes before closing? (y)es, (n)o, (c)ancel", "yYnNcC", close_answered);
}

void editor_switch_tab(app *a, int step)
{
    a->current = (a->current + (step > 0 ? 1 : a->tab_count - 1)) % a->tab_count;
    tab_request_viewport(a, app_tab(a));
    tab_request_cursors(a, app_tab(a));
    tab_request_clients(a, app_tab(a));
}

void editor_undo(app *a, tab *t, bool redo)
{
    send_edit(a, t, redo ? "document/redo" : "document/undo", "");
    tab_follow(a, t);
}

void editor_copy(app *a, tab *t, bool cut) { copy_or_cut(a, t, cut); }

/* A paste: with as many lines as there are cursors, one line at each (in
 * document order), as a column copied from several cursors comes back;
 * otherwise the whole text at every cursor. */
static void paste_text(app *a, tab *t, const char *text, size_t len)
{
    size_t body = len && text[len - 1] == '\n' ? len - 1 : len;
    int lines = 1;
    for (size_t i = 0; i < body; i++)
        lines += text[i] == '\n';
    if (t->cursor_count < 2 || lines != t->cursor_count) {
        type_text(a, t, text, len);
        return;
    }
    buf params = BUF_INIT;
    buf_append_str(&params, "\"texts\":[");
    for (size_t start = 0, i = 0; i <= body; i++) {
        if (i < body && text[i] != '\n')
            continue;
        rpc_format(&params, "%s%N", start ? "," : "", text + start, i - start);
        start = i + 1;
    }
    buf_push(&params, ']');
    buf_push(&params, '\0');
    send_edit_params(a, t, "document/type", params.data);
    buf_free(&params);
    tab_follow(a, t);
}

void editor_paste(app *a, tab *t)
{
    if (a->clipboard.len)
        paste_text(a, t, a->clipboard.data, a->clipboard.len);
}

void editor_select_all(app *a, tab *t)
{
    app_call(a, "document/selectAll", NULL, 0, "{\"documentId\":%J}", t->doc_id);
    tab_request_cursors(a, t);
}

void editor_type(app *a, tab *t, const char *text, size_t len) { type_text(a, t, text, len); }

void editor_newline(app *a, tab *t) { newline(a, t); }

void editor_delete(app *a, tab *t, const char *direction) { delete_towards(a, t, direction); }


void editor_goto_line(app *a, tab *t) { prompt_ask(a, "Go to line:", "", goto_answered); }

void editor_add_cursor(app *a, tab *t, int delta) { add_cursor_vertical(a, t, delta); }

void editor_single_cursor(app *a, tab *t)
{
    if (t->cursor_count)
        app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}",
                 t->doc_id, t->cursors[0].line, t->cursors[0].col);
    tab_request_cursors(a, t);
}

void editor_move(app *a, tab *t, const char *direction, const char *unit, bool select)
{
    move_cursors(a, t, direction, unit, select);
}

void editor_page(app *a, tab *t, int direction, bool select) { page_move(a, t, direction, select); }

void editor_paste_text(app *a, tab *t, const char *text, size_t len)
{
    buf clean = BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\r') {
            buf_push(&clean, '\n');
            if (i + 1 < len && text[i + 1] == '\n')
                i++;
        } else {
            buf_push(&clean, text[i]);
        }
    }
    if (clean.len)
        paste_text(a, t, clean.data, clean.len);
    buf_free(&clean);
}

void editor_apply_edits(app *a, tab *t, const char *edits)
{
    send_edit(a, t, "document/edit", "\"edits\":[%s]", edits);
    tab_follow(a, t);
}

void editor_replace_range(app *a, tab *t, int sl, int sc, int el, int ec, const char *text)
{
    app_call(a, "document/setCursor", NULL, 0,
             "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
             t->doc_id, el, ec, sl, sc, el, ec);
    type_text(a, t, text, strlen(text));
}

void editor_jump(app *a, const char *path, int line, int col)
{
    for (int i = 0; i < a->tab_count; i++) {
        tab *t = a->tabs[i];
        if (t->path && strcmp(t->path, path) == 0) {
            a->current = i;
            app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}",
                     t->doc_id, line, col);
            t->predictions++;
            if (t->cursor_count) {
                t->cursor_count = 1;
                t->cursors[0] = (cursor){.line = line, .col = col};
            }
            int top_row, height;
            editor_layout(a, &top_row, &height);
            if (line < t->top || line >= t->top + height) {
                t->top = line > height / 2 ? line - height / 2 : 0;
                tab_request_viewport(a, t);
            }
            tab_follow(a, t);
            tab_request_viewport(a, t);
            a->need_paint = true;
            return;
        }
    }
    editor_open_path(a, path, line, col);
}

void editor_toggle_wrap(app *a, tab *t)
{
    t->wrap = !t->wrap;
    t->wrap_set = true;
    t->left = 0;
    app_message(a, false, "Soft wrap %s", t->wrap ? "on" : "off");
    t->follow_cursor = true;
    scroll_to_primary(a, t);
    a->need_paint = true;
}

void editor_redraw(app *a)
{
    clearok(curscr, TRUE);
    for (int i = 0; i < a->tab_count; i++)
        a->tabs[i]->follow_cursor = false;
    tab *t = app_tab(a);
    if (t) {
        tab_request_viewport(a, t);
        tab_request_cursors(a, t);
    }
    a->need_paint = true;
}

/* ---- the editing commands of the document service ---- */

static void line_edit(app *a, tab *t, const char *method, const char *params_fmt, const char *arg)
{
    if (arg)
        send_edit(a, t, method, params_fmt, arg);
    else
        send_edit(a, t, method, "");
    tab_follow(a, t);
}

static void on_tab_cursors(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = chain_tab(a, serial, doc, result);
    if (t && any_selection(t))
        line_edit(a, t, "document/indent", "", NULL);
    else if (t)
        type_text(a, t, "    ", 4);
    chain_end(a);
}

/* Tab indents the lines of a selection, else types an indent: which, the cursors as the earlier keys left them say. */
void editor_indent(app *a, tab *t) { chain_with_cursors(a, t, on_tab_cursors, t->serial); }
void editor_outdent(app *a, tab *t) { line_edit(a, t, "document/outdent", "", NULL); }
void editor_delete_word(app *a, tab *t, const char *direction)
{
    line_edit(a, t, "document/deleteWord", "\"direction\":%J", direction);
}
void editor_toggle_comment(app *a, tab *t) { line_edit(a, t, "document/toggleComment", "", NULL); }
void editor_duplicate_lines(app *a, tab *t) { line_edit(a, t, "document/duplicateLines", "", NULL); }
void editor_move_lines(app *a, tab *t, const char *direction)
{
    line_edit(a, t, "document/moveLines", "\"direction\":%J", direction);
}

/* ---- find and replace through document/find and document/replace ---- */
