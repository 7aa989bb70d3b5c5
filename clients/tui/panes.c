/* What is not the text: the prompt on the status line, the list overlays
 * (file picker, project search, command palette, help, git panel, diff), the
 * terminal pane and the recovery of unsaved text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"
#include "arena.h"

/* ---- the prompt ---- */

void prompt_close(app *a)
{
    free(a->prompt.label);
    free(a->prompt.choices);
    a->prompt.label = a->prompt.choices = NULL;
    a->prompt.active = false;
    a->prompt.toggles = false;
    a->prompt.done = NULL;
    a->prompt.choose = NULL;
    buf_clear(&a->prompt.input);
    a->need_paint = true;
}

void prompt_ask(app *a, const char *label, const char *initial, prompt_done done)
{
    prompt_close(a);
    a->prompt.active = true;
    a->prompt.label = xstrdup(label);
    a->prompt.done = done;
    if (initial && *initial)
        buf_append_str(&a->prompt.input, initial);
    a->prompt.fresh = initial && *initial;
    a->prompt.cursor = a->prompt.input.len;
}

void prompt_ask_path(app *a, const char *label, const char *initial, prompt_done done)
{
    prompt_ask(a, label, initial, done);
    a->prompt.fresh = false;
}

void prompt_choose(app *a, const char *question, const char *choices, choice_done choose)
{
    prompt_close(a);
    a->prompt.active = true;
    a->prompt.label = xstrdup(question);
    a->prompt.choices = xstrdup(choices);
    a->prompt.choose = choose;
}

bool prompt_key(app *a, wint_t ch, bool is_key)
{
    prompt *p = &a->prompt;
    if (p->choose) {
        if (ch == 27 || ch == 7 || ch == 3) {
            prompt_close(a);
            return true;
        }
        if (ch > 0 && ch < 128 && strchr(p->choices, (int)ch)) {
            choice_done choose = p->choose;
            prompt_close(a);
            choose(a, (int)ch);
        }
        return true;
    }
    if (ch == 27 || ch == 7 || ch == 3) {
        prompt_done done = p->done;
        prompt_close(a);
        if (done)
            done(a, NULL);
        return true;
    }
    if (ch == '\r' || ch == '\n') {
        char *answer = xstrdup(p->input.data ? p->input.data : "");
        prompt_done done = p->done;
        prompt_close(a);
        if (done)
            done(a, answer);
        free(answer);
        return true;
    }
    bool fresh = p->fresh;
    p->fresh = false;
    if (ch == 127 || ch == 8) {
        /* Drop the last character, whole. */
        while (p->input.len > 0) {
            unsigned char last = (unsigned char)p->input.data[--p->input.len];
            if ((last & 0xC0) != 0x80)
                break;
        }
        if (p->input.data)
            p->input.data[p->input.len] = 0;
        return true;
    }
    if (ch == 21) { /* ctrl+u clears */
        buf_clear(&p->input);
        return true;
    }
    if (!is_key && ch >= 32) {
        if (fresh)
            buf_clear(&p->input);
        char utf8[8];
        mbstate_t st = {0};
        size_t n = wcrtomb(utf8, (wchar_t)ch, &st);
        if (n != (size_t)-1)
            buf_append(&p->input, utf8, n);
    }
    return true;
}

/* ---- overlays ---- */

static void clear_items(overlay_state *o)
{
    for (int i = 0; i < o->item_count; i++) {
        free(o->items[i].label);
        free(o->items[i].data);
    }
    free(o->items);
    free(o->visible);
    o->items = NULL;
    o->visible = NULL;
    o->item_count = o->visible_count = 0;
    o->selected = o->scroll = 0;
}

void overlay_close(app *a)
{
    clear_items(&a->overlay);
    free(a->overlay.title);
    a->overlay.title = NULL;
    a->overlay.kind = OVERLAY_NONE;
    buf_clear(&a->overlay.query);
    a->overlay.generation++;
    a->need_paint = true;
}

void overlay_open(app *a, overlay_kind kind, const char *title)
{
    overlay_close(a);
    a->overlay.kind = kind;
    a->overlay.title = xstrdup(title);
}

void overlay_add(app *a, const char *label, const char *data, int line, int col, int attr)
{
    overlay_state *o = &a->overlay;
    o->items = xrealloc(o->items, (size_t)(o->item_count + 1) * sizeof *o->items);
    o->items[o->item_count++] = (list_item){xstrdup(label), data ? xstrdup(data) : NULL, line, col, attr};
}

static bool fuzzy(const char *text, const char *query)
{
    for (; *query; query++) {
        char q = (char)(*query >= 'A' && *query <= 'Z' ? *query - 'A' + 'a' : *query);
        for (;; text++) {
            if (!*text)
                return false;
            char t = (char)(*text >= 'A' && *text <= 'Z' ? *text - 'A' + 'a' : *text);
            if (t == q) {
                text++;
                break;
            }
        }
    }
    return true;
}

void overlay_refilter(app *a)
{
    overlay_state *o = &a->overlay;
    free(o->visible);
    o->visible = xcalloc((size_t)o->item_count + 1, sizeof *o->visible);
    o->visible_count = 0;
    bool local = o->kind == OVERLAY_PALETTE || o->kind == OVERLAY_HELP;
    for (int i = 0; i < o->item_count; i++)
        if (!local || !o->query.len || fuzzy(o->items[i].label, o->query.data))
            o->visible[o->visible_count++] = i;
    if (o->selected >= o->visible_count)
        o->selected = o->visible_count ? o->visible_count - 1 : 0;
    a->need_paint = true;
}

static void on_search(void *ctx, uint64_t generation, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (a->overlay.kind != OVERLAY_PICKER || generation != a->overlay.generation)
        return; /* an answer to an older query */
    clear_items(&a->overlay);
    json_ref results = json_get(doc, result, "results");
    size_t root_len = strlen(a->workspace);
    for (json_ref r = json_first(doc, results); r != JSON_NO_REF; r = json_next(doc, r)) {
        char *uri = json_dup_string(doc, json_get(doc, r, "uri"));
        if (!uri)
            continue;
        const char *path = strncmp(uri, "file://", 7) == 0 ? uri + 7 : uri;
        const char *shown = strncmp(path, a->workspace, root_len) == 0 && path[root_len] == '/' ? path + root_len + 1 : path;
        overlay_add(a, shown, path, 0, 0, 0);
        free(uri);
    }
    overlay_refilter(a);
}

static void picker_query(app *a)
{
    overlay_state *o = &a->overlay;
    o->generation++;
    app_call(a, "file/search", on_search, o->generation,
             "{\"pattern\":%J,\"includePatterns\":[%J],\"maxResults\":%d}", o->query.data ? o->query.data : "",
             a->workspace, a->rows > 10 ? a->rows : 10);
}

void picker_open(app *a)
{
    overlay_open(a, OVERLAY_PICKER, "Open file");
    picker_query(a);
}

static void on_grep(void *ctx, uint64_t generation, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (a->overlay.kind != OVERLAY_GREP || generation != a->overlay.generation)
        return;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        overlay_close(a);
        app_message(a, true, "Search failed: %s", msg ? msg : "");
        free(msg);
        return;
    }
    json_ref matches = json_get(doc, result, "matches");
    size_t root_len = strlen(a->workspace);
    for (json_ref m = json_first(doc, matches); m != JSON_NO_REF; m = json_next(doc, m)) {
        char *uri = json_dup_string(doc, json_get(doc, m, "uri"));
        char *text = json_dup_string(doc, json_get(doc, m, "text"));
        if (!uri)
            continue;
        const char *path = strncmp(uri, "file://", 7) == 0 ? uri + 7 : uri;
        const char *shown = strncmp(path, a->workspace, root_len) == 0 && path[root_len] == '/' ? path + root_len + 1 : path;
        int line = json_int_or(doc, json_get(doc, m, "line"), 0), col = json_int_or(doc, json_get(doc, m, "column"), 0);
        buf label = BUF_INIT;
        buf_appendf(&label, "%s:%d: %s", shown, line + 1, text ? text + strspn(text, " \t") : "");
        overlay_add(a, label.data, path, line, col, 0);
        buf_free(&label);
        free(uri);
        free(text);
    }
    bool truncated = false;
    json_bool(doc, json_get(doc, result, "truncated"), &truncated);
    free(a->overlay.title);
    buf title = BUF_INIT;
    buf_appendf(&title, "%d match%s%s (Enter opens, Esc closes)", a->overlay.item_count,
                a->overlay.item_count == 1 ? "" : "es", truncated ? ", more not shown" : "");
    a->overlay.title = buf_detach(&title);
    overlay_refilter(a);
}

static void grep_answered(app *a, const char *answer)
{
    if (!answer || !*answer)
        return;
    overlay_open(a, OVERLAY_GREP, "Searching...");
    a->overlay.generation++;
    app_call(a, "file/grep", on_grep, a->overlay.generation, "{\"pattern\":%J,\"baseUri\":%J,\"maxResults\":500}", answer,
             a->workspace);
}

void grep_start(app *a)
{
    prompt_ask(a, "Search in files:", "", grep_answered);
}

void palette_open(app *a)
{
    overlay_open(a, OVERLAY_PALETTE, "Command palette (type to filter, Enter runs)");
    int n;
    const command_entry *commands = commands_all(&n);
    for (int i = 0; i < n; i++) {
        buf label = BUF_INIT;
        buf_appendf(&label, "%-40s %s", commands[i].help, commands[i].name);
        overlay_add(a, label.data, commands[i].name, 0, 0, 0);
        buf_free(&label);
    }
    overlay_refilter(a);
}

void help_open(app *a)
{
    overlay_open(a, OVERLAY_HELP, "Keys (type to filter, Esc closes); rebind any with keybindings/add {key, command}");
    int n;
    const command_entry *commands = commands_all(&n);
    for (int i = 0; i < n; i++) {
        buf keys = BUF_INIT;
        for (int b = 0; b < a->binding_count; b++) {
            if (strcmp(a->bindings[b].command, commands[i].name) != 0)
                continue;
            /* A key counts for the command that its last binding names. */
            bool overridden = false;
            for (int later = b + 1; later < a->binding_count; later++)
                if (strcmp(a->bindings[later].key, a->bindings[b].key) == 0)
                    overridden = true;
            if (!overridden)
                buf_appendf(&keys, "%s%s", keys.len ? ", " : "", a->bindings[b].key);
        }
        buf label = BUF_INIT;
        buf_appendf(&label, "%-28s %-40s %s", keys.len ? keys.data : "(unbound)", commands[i].help, commands[i].name);
        overlay_add(a, label.data, commands[i].name, 0, 0, 0);
        buf_free(&label);
        buf_free(&keys);
    }
    overlay_add(a, "In the git panel: s stage, u unstage, a stage all, c commit, Enter diff, r refresh", NULL, 0, 0, 3);
    overlay_add(a, "In the agent chat: Enter sends, y / n approve or reject a tool call that waits, Esc stops the answer",
                NULL, 0, 0, 3);
    overlay_add(a, "In the completion popup: Up / Down choose, Enter or Tab inserts, Esc closes; . : > open it as you type",
                NULL, 0, 0, 3);
    overlay_add(a, "Pasting (the terminal's paste) inserts the text as it is: one edit, never indented again", NULL, 0, 0, 3);
    overlay_add(a, "Mouse: click places the cursor, the wheel scrolls", NULL, 0, 0, 3);
    overlay_refilter(a);
}

/* ---- git ---- */

static void on_branch(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    model_branch_arrived(ctx, doc, result);
}

void git_refresh_branch(app *a)
{
    if (a->repo_root)
        app_call(a, "git/branch", on_branch, 0, "{\"uri\":%J}", a->repo_root);
}

static void on_git_status(void *ctx, uint64_t generation, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (a->overlay.kind != OVERLAY_GIT || generation != a->overlay.generation)
        return;
    int keep = a->overlay.selected;
    clear_items(&a->overlay);
    static const struct {
        const char *key, *heading;
        int attr;
    } groups[] = {{"staged", "Staged (u unstages, c commits)", 1},
                  {"unstaged", "Changed (s stages, Enter shows the diff)", 3},
                  {"untracked", "Untracked (s stages)", 2}};
    for (size_t g = 0; g < 3; g++) {
        json_ref list = json_get(doc, result, groups[g].key);
        if (!json_length(doc, list))
            continue;
        overlay_add(a, groups[g].heading, NULL, 0, 0, 0);
        for (json_ref f = json_first(doc, list); f != JSON_NO_REF; f = json_next(doc, f)) {
            char *path = json_type_of(doc, f) == JSON_STRING ? json_dup_string(doc, f)
                                                              : json_dup_string(doc, json_get(doc, f, "path"));
            char *status = json_dup_string(doc, json_get(doc, f, "status"));
            if (!path) {
                free(status);
                continue;
            }
            buf label = BUF_INIT;
            buf_appendf(&label, "  %s %s", status ? status : "?", path);
            overlay_add(a, label.data, path, (int)g, 0, groups[g].attr);
            buf_free(&label);
            free(path);
            free(status);
        }
    }
    if (a->overlay.item_count == 0)
        overlay_add(a, "Nothing to commit: the work tree is clean", NULL, 0, 0, 0);
    a->overlay.selected = keep;
    overlay_refilter(a);
    /* A heading is not a file: the selection starts on (or moves down to) the first file. */
    overlay_state *o = &a->overlay;
    int first_file = o->selected;
    while (first_file < o->visible_count && !o->items[o->visible[first_file]].data)
        first_file++;
    if (first_file < o->visible_count)
        o->selected = first_file;
}

static void git_status_refresh(app *a)
{
    a->overlay.generation++;
    app_call(a, "git/status", on_git_status, a->overlay.generation, "{\"uri\":%J,\"forceRefresh\":true}", a->repo_root);
}

void git_panel_open(app *a)
{
    if (!a->repo_root) {
        app_message(a, true, "%s is not in a git work tree", a->workspace);
        return;
    }
    buf title = BUF_INIT;
    buf_appendf(&title, "Git: %s on %s   (s stage, u unstage, a stage all, c commit, Enter diff, r refresh, Esc close)",
                a->repo_root, a->branch ? a->branch : "?");
    overlay_open(a, OVERLAY_GIT, title.data);
    buf_free(&title);
    git_status_refresh(a);
}

static void on_git_done(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool ok = true;
    json_bool(doc, json_get(doc, result, "success"), &ok);
    if (error != JSON_NO_REF || !ok) {
        char *msg = json_dup_string(doc, error != JSON_NO_REF ? json_get(doc, error, "message") : json_get(doc, result, "error"));
        app_message(a, true, "git: %s", msg ? msg : "failed");
        free(msg);
    } else if (tag == 1) {
        app_message(a, false, "Committed");
    }
    if (a->overlay.kind == OVERLAY_GIT)
        git_status_refresh(a);
    git_refresh_branch(a);
}

static void commit_answered(app *a, const char *message)
{
    if (!message || !*message)
        return;
    app_call(a, "git/commit", on_git_done, 1, "{\"uri\":%J,\"message\":%J}", a->repo_root, message);
}

static void on_diff(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (a->overlay.kind != OVERLAY_DIFF)
        return;
    json_ref hunks = json_get(doc, result, "hunks");
    for (json_ref h = json_first(doc, hunks); h != JSON_NO_REF; h = json_next(doc, h)) {
        char head[128];
        snprintf(head, sizeof head, "@@ -%d,%d +%d,%d @@", json_int_or(doc, json_get(doc, h, "oldStart"), 0),
                 json_int_or(doc, json_get(doc, h, "oldCount"), 0), json_int_or(doc, json_get(doc, h, "newStart"), 0),
                 json_int_or(doc, json_get(doc, h, "newCount"), 0));
        overlay_add(a, head, NULL, 0, 0, 3);
        json_ref lines = json_get(doc, h, "lines");
        for (json_ref l = json_first(doc, lines); l != JSON_NO_REF; l = json_next(doc, l)) {
            json_ref type = json_get(doc, l, "type");
            bool added = json_string_eq(doc, type, "added"), deleted = json_string_eq(doc, type, "deleted");
            char *content = json_dup_string(doc, json_get(doc, l, "content"));
            buf label = BUF_INIT;
            buf_appendf(&label, "%c%s", added ? '+' : deleted ? '-' : ' ', content ? content : "");
            overlay_add(a, label.data, NULL, 0, 0, added ? 1 : deleted ? 2 : 0);
            buf_free(&label);
            free(content);
        }
    }
    if (a->overlay.item_count == 0)
        overlay_add(a, "No differences", NULL, 0, 0, 0);
    overlay_refilter(a);
}

static bool git_key(app *a, const char *key, wint_t ch, bool printable)
{
    overlay_state *o = &a->overlay;
    list_item *it = o->visible_count ? &o->items[o->visible[o->selected]] : NULL;
    const char *path = it ? it->data : NULL;
    if (printable && (ch == 's' || ch == 'u') && path) {
        app_call(a, ch == 's' ? "git/stage" : "git/unstage", on_git_done, 0, "{\"uri\":%J,\"paths\":[%J]}", a->repo_root,
                 path);
        return true;
    }
    if (printable && ch == 'a') {
        app_call(a, "git/stageAll", on_git_done, 0, "{\"uri\":%J}", a->repo_root);
        return true;
    }
    if (printable && ch == 'c') {
        prompt_ask(a, "Commit message:", "", commit_answered);
        return true;
    }
    if (printable && ch == 'r') {
        git_status_refresh(a);
        return true;
    }
    if (key && strcmp(key, "enter") == 0 && path) {
        bool staged = it->line == 0;
        char *p = xstrdup(path);
        buf title = BUF_INIT;
        buf_appendf(&title, "Diff of %s%s (Esc closes)", p, staged ? " (staged)" : "");
        overlay_open(a, OVERLAY_DIFF, title.data);
        buf_free(&title);
        app_call(a, "git/diff", on_diff, 0, "{\"uri\":%J,\"path\":%J,\"staged\":%b}", a->repo_root, p, staged);
        free(p);
        return true;
    }
    return false;
}

/* ---- overlay keys ---- */

bool overlay_key(app *a, const char *key, wint_t ch, bool printable)
{
    overlay_state *o = &a->overlay;
    if (key && (strcmp(key, "escape") == 0 || strcmp(key, "ctrl+g") == 0 || strcmp(key, "ctrl+c") == 0)) {
        if (o->kind == OVERLAY_DIFF && a->repo_root)
            git_panel_open(a);
        else
            overlay_close(a);
        return true;
    }
    int page = a->rows > 6 ? a->rows - 6 : 1;
    if (key && (strcmp(key, "up") == 0 || strcmp(key, "down") == 0 || strcmp(key, "pageup") == 0 ||
                strcmp(key, "pagedown") == 0)) {
        int step = key[0] == 'u' ? -1 : key[0] == 'd' ? 1 : key[4] == 'u' ? -page : page;
        o->selected += step;
        if (o->selected < 0)
            o->selected = 0;
        if (o->selected >= o->visible_count)
            o->selected = o->visible_count ? o->visible_count - 1 : 0;
        if (o->kind == OVERLAY_HELP || o->kind == OVERLAY_DIFF)
            o->scroll = o->selected;
        a->need_paint = true;
        return true;
    }
    if (o->kind == OVERLAY_GIT && git_key(a, key, ch, printable))
        return true;
    if (o->kind == OVERLAY_GIT || o->kind == OVERLAY_DIFF) {
        /* Letters mean nothing here; another command (Ctrl+Q, F1) closes the panel and runs. */
        if (printable || !key || strcmp(key, "enter") == 0)
            return true;
        overlay_close(a);
        return false;
    }
    bool has_query = o->kind == OVERLAY_PICKER || o->kind == OVERLAY_PALETTE || o->kind == OVERLAY_HELP;
    if (has_query && (printable || (key && strcmp(key, "backspace") == 0))) {
        if (printable) {
            char utf8[8];
            mbstate_t st = {0};
            size_t n = wcrtomb(utf8, (wchar_t)ch, &st);
            if (n != (size_t)-1)
                buf_append(&o->query, utf8, n);
        } else if (o->query.len) {
            while (o->query.len > 0 && ((unsigned char)o->query.data[--o->query.len] & 0xC0) == 0x80) {
            }
            o->query.data[o->query.len] = 0;
        }
        o->selected = 0;
        if (o->kind == OVERLAY_PICKER)
            picker_query(a);
        else
            overlay_refilter(a);
        return true;
    }
    if (key && strcmp(key, "enter") == 0) {
        if (!o->visible_count)
            return true;
        list_item *it = &o->items[o->visible[o->selected]];
        char *data = it->data ? xstrdup(it->data) : NULL;
        int line = it->line, col = it->col;
        overlay_kind kind = o->kind;
        if (kind == OVERLAY_HELP) {
            free(data);
            return true;
        }
        overlay_close(a);
        if (data && kind == OVERLAY_PALETTE)
            command_run(a, data);
        else if (data && kind == OVERLAY_ACTIONS)
            lsp_code_action_chosen(a, atoi(data));
        else if (kind == OVERLAY_ACTIONS)
            ; /* a command only the language server could run */
        else if (data)
            editor_open_path(a, data, line, col);
        free(data);
        return true;
    }
    /* Other keys go through to the editor's bindings (Ctrl+Q still quits). */
    if (key && printable == false) {
        overlay_close(a);
        return false;
    }
    return true;
}

/* ---- the terminal pane ---- */

void terminal_layout(app *a)
{
    terminal_pane *tp = &a->term;
    int rows = a->rows / 3;
    if (rows < 3)
        rows = 3;
    if (rows > a->rows - 5)
        rows = a->rows - 5 > 1 ? a->rows - 5 : 1;
    int cols = a->cols > 1 ? a->cols : 1;
    bool changed = rows != tp->rows || cols != tp->cols;
    tp->rows = rows;
    tp->cols = cols;
    if (changed && tp->id)
        app_call(a, "terminal/resize", NULL, 0, "{\"terminalId\":%J,\"cols\":%d,\"rows\":%d}", tp->id, cols, rows);
    a->need_paint = true;
}

static void on_buffer(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    terminal_pane *tp = &a->term;
    json_ref b = json_get(doc, result, "buffer");
    if (json_type_of(doc, b) == JSON_OBJECT)
        model_terminal_screen_arrived(tp, doc, b);
    a->need_paint = true;
    tp->buffer.in_flight = false;
    if (tp->buffer.again && tp->id) {
        tp->buffer.again = false;
        tp->buffer.in_flight = app_call(a, "terminal/getBuffer", on_buffer, 0, "{\"terminalId\":%J}", tp->id);
    }
}

static void request_buffer(app *a)
{
    terminal_pane *tp = &a->term;
    if (!tp->id)
        return;
    if (tp->buffer.in_flight) {
        tp->buffer.again = true;
        return;
    }
    tp->buffer.in_flight = app_call(a, "terminal/getBuffer", on_buffer, 0, "{\"terminalId\":%J}", tp->id);
}

static void on_terminal_created(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    a->term.creating = false;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "No terminal: %s", msg ? msg : "");
        free(msg);
        a->term.visible = a->term.focused = false;
        return;
    }
    free(a->term.id);
    a->term.id = json_dup_string(doc, json_get(doc, result, "terminalId"));
    a->term.exited = false;
    if (a->term.id && a->term.early_input.len)
        app_call(a, "terminal/write", NULL, 0, "{\"terminalId\":%J,\"data\":%N}", a->term.id, a->term.early_input.data,
                 a->term.early_input.len);
    buf_clear(&a->term.early_input);
    request_buffer(a);
}

void terminal_hide(app *a)
{
    a->term.visible = a->term.focused = false;
    terminal_layout(a);
}

void terminal_toggle(app *a)
{
    terminal_pane *tp = &a->term;
    if (!tp->visible) {
        tp->visible = tp->focused = true;
        terminal_layout(a);
        if (a->chat.visible)
            chat_layout(a); /* the two panes share what the editor leaves */
        if (!tp->id && !tp->creating) {
            tp->creating = true;
            app_call(a, "terminal/create", on_terminal_created, 0, "{\"cwd\":%J,\"cols\":%d,\"rows\":%d}", a->workspace,
                     tp->cols, tp->rows);
        }
    } else if (tp->focused) {
        tp->focused = false;
    } else {
        tp->focused = true;
    }
    if (tp->focused)
        a->chat.focused = false;
    /* The editor's height changed: its viewport too. */
    for (int i = 0; i < a->tab_count; i++)
        tab_request_viewport(a, a->tabs[i]);
    a->need_paint = true;
}

void terminal_key(app *a, const char *key, wint_t ch, bool printable)
{
    terminal_pane *tp = &a->term;
    if (!tp->id && !tp->creating)
        return;
    if (tp->exited) {
        /* A finished shell: any key starts a new one. */
        free(tp->id);
        tp->id = NULL;
        tp->visible = false;
        terminal_toggle(a);
        return;
    }
    char bytes[16] = "";
    size_t n = 0;
    if (printable) {
        mbstate_t st = {0};
        n = wcrtomb(bytes, (wchar_t)ch, &st);
        if (n == (size_t)-1)
            return;
    } else if (key) {
        static const struct {
            const char *key, *seq;
        } seqs[] = {{"up", "\033[A"},      {"down", "\033[B"},     {"right", "\033[C"},   {"left", "\033[D"},
                    {"home", "\033[H"},    {"end", "\033[F"},      {"pageup", "\033[5~"}, {"pagedown", "\033[6~"},
                    {"delete", "\033[3~"}, {"insert", "\033[2~"},  {"enter", "\r"},       {"tab", "\t"},
                    {"backspace", "\177"}, {"escape", "\033"},     {"shift+tab", "\033[Z"}, {"f1", "\033OP"},
                    {"f2", "\033OQ"},      {"f3", "\033OR"},       {"f4", "\033OS"}};
        for (size_t i = 0; i < sizeof seqs / sizeof seqs[0] && !n; i++)
            if (strcmp(key, seqs[i].key) == 0)
                n = strlen(strcpy(bytes, seqs[i].seq));
        if (!n && strncmp(key, "ctrl+", 5) == 0 && key[5] && !key[6] && key[5] >= 'a' && key[5] <= 'z') {
            bytes[0] = (char)(key[5] - 'a' + 1);
            n = 1;
        } else if (!n && strncmp(key, "alt+", 4) == 0 && key[4] && !key[5]) {
            bytes[0] = 27, bytes[1] = key[4];
            n = 2;
        }
    }
    if (n && !tp->id)
        buf_append(&tp->early_input, bytes, n);
    else if (n)
        app_call(a, "terminal/write", NULL, 0, "{\"terminalId\":%J,\"data\":%N}", tp->id, bytes, n);
}

void terminal_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params)
{
    terminal_pane *tp = &a->term;
    json_ref id = json_get(doc, params, "terminalId");
    if (!tp->id || !json_string_eq(doc, id, tp->id))
        return;
    if (strcmp(method, "terminal/didChangeScreen") == 0)
        request_buffer(a);
    else if (strcmp(method, "terminal/exit") == 0) {
        tp->exited = true;
        app_message(a, false, "The shell exited; a key in the terminal starts another");
    }
}

void terminal_free(app *a)
{
    free(a->term.id);
    free(a->term.cells);
    buf_free(&a->term.early_input);
    a->term.id = NULL;
    a->term.cells = NULL;
}

/* ---- recovery ---- */

static void on_recovered(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    json_ref docs = json_get(doc, result, "documents");
    int n = 0;
    for (json_ref d = json_first(doc, docs); d != JSON_NO_REF; d = json_next(doc, d), n++) {
        editor_adopt_document(a, doc, d, 0, 0);
        /* A recovered document is nobody's until opened: this client holds it from now on. */
        char *uri = json_dup_string(doc, json_get(doc, d, "uri"));
        if (uri)
            app_call(a, "document/open", NULL, 0, "{\"uri\":%J}", uri);
        free(uri);
    }
    if (a->restarting) {
        editor_restore_tabs(a, doc, docs, n);
    } else if (n) {
        app_message(a, false, "Recovered %d document%s with unsaved text", n, n == 1 ? "" : "s");
    }
}

static void recover_answered(app *a, int key)
{
    if (key == 'y' || key == 'Y')
        app_call(a, "session/recover", on_recovered, 0, "{}");
    else if (key == 'd' || key == 'D')
        app_call(a, "session/discardRecovery", NULL, 0, "{}");
}

static void on_recoverable(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    json_ref docs = json_get(doc, result, "documents");
    size_t n = json_length(doc, docs);
    if (a->restarting) {
        buf uris = BUF_INIT;
        for (int i = 0; i < a->tab_count; i++)
            if (tab_unsaved(a->tabs[i]) && a->tabs[i]->uri)
                rpc_format(&uris, "%s%J", uris.len ? "," : "", a->tabs[i]->uri);
        app_call(a, "session/recover", on_recovered, 0, "{\"uris\":[%s]}", uris.data ? uris.data : "");
        buf_free(&uris);
        return;
    }
    if (!n)
        return;
    char *first = json_dup_string(doc, json_get(doc, json_array_at(doc, docs, 0), "uri"));
    char question[512];
    snprintf(question, sizeof question, "Unsaved text of %zu document%s (%s%s) was left by a server that stopped. Recover it? (y)es, (n)ot now, (d)iscard",
             n, n == 1 ? "" : "s", first ? first : "", n > 1 ? ", ..." : "");
    free(first);
    prompt_choose(a, question, "yYnNdD", recover_answered);
}

void recovery_offer(app *a)
{
    a->restarting = a->tab_count > 0;
    a->restore_current = app_tab(a) ? app_tab(a)->serial : 0;
    app_call(a, "session/recoverable", on_recoverable, 0, NULL);
}
