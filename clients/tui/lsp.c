/* The language server's features: every request names the document by its
 * uri and a position in code points (the connection's units), taken from the
 * cursors as the server has them once every earlier key is applied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"
#include "arena.h"
#include "error.h"
#include "json_writer.h"

enum lsp_use { USE_COMPLETE, USE_HOVER, USE_DEFINITION, USE_REFERENCES, USE_RENAME, USE_ACTIONS };

#define COMPLETION_MAX_ITEMS 200

/* ---- the settings ---- */

static void on_trigger_setting(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    char *value = json_dup_string(doc, json_get(doc, result, "value"));
    if (value) {
        free(a->trigger_characters);
        a->trigger_characters = value;
    }
}

void lsp_read_settings(app *a)
{
    if (!a->trigger_characters)
        a->trigger_characters = xstrdup(".:>");
    app_call(a, "config/get", on_trigger_setting, 0, "{\"key\":\"lsp.triggerCharacters\"}");
}

/* ---- the cursor, fresh, then the request ---- */

static void lsp_request(app *a, tab *t, enum lsp_use use, int line, int col);

static bool chained(enum lsp_use use) { return use == USE_DEFINITION || use == USE_REFERENCES; }

static void on_fresh_cursors(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum lsp_use use = (enum lsp_use)(tag & 0xFF);
    tab *t = tab_by_serial(a, tag >> 8);
    if (t && result != JSON_NO_REF)
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
    if (!t || !t->cursor_count) {
        if (chained(use))
            chain_end(a);
        return;
    }
    lsp_request(a, t, use, t->cursors[0].line, t->cursors[0].col);
}

static void at_cursor(app *a, tab *t, enum lsp_use use)
{
    if (chained(use))
        chain_begin(a);
    else
        editor_flush_typed(a);
    if (!app_call(a, "document/cursors", on_fresh_cursors, (t->serial << 8) | use, "{\"documentId\":%J}", t->doc_id) &&
        chained(use))
        chain_end(a);
}

static void say_error(app *a, const json_doc *doc, json_ref error, const char *what)
{
    char *msg = json_dup_string(doc, json_get(doc, error, "message"));
    app_message(a, true, "%s: %s", what, msg ? msg : "the language server did not answer");
    free(msg);
}

/* ---- applying edits ---- */

/* LSP's TextEdit[] as document/edit's edits; false when there is none. */
static bool edits_json(const json_doc *doc, json_ref list, buf *out)
{
    int count = 0;
    for (json_ref e = json_first(doc, list); e != JSON_NO_REF; e = json_next(doc, e)) {
        json_ref range = json_get(doc, e, "range");
        int sl, sc, el, ec;
        parse_position(doc, json_get(doc, range, "start"), &sl, &sc);
        parse_position(doc, json_get(doc, range, "end"), &el, &ec);
        char *text = json_dup_string(doc, json_get(doc, e, "newText"));
        rpc_format(out, "%s{\"range\":{\"start\":{\"line\":%d,\"column\":%d},\"end\":{\"line\":%d,\"column\":%d}},\"text\":%J}",
                   count ? "," : "", sl, sc, el, ec, text ? text : "");
        free(text);
        count++;
    }
    return count > 0;
}

static tab *tab_by_uri(app *a, const char *uri)
{
    char *path = path_of_uri(uri);
    tab *found = NULL;
    for (int i = 0; i < a->tab_count && !found; i++) {
        tab *t = a->tabs[i];
        if ((t->uri && strcmp(t->uri, uri) == 0) || (path && t->path && strcmp(t->path, path) == 0))
            found = t;
    }
    free(path);
    return found;
}

static void on_opened_for_edit(void *ctx, uint64_t id, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    for (int i = 0; i < a->open_count; i++) {
        pending_open *p = &a->opens[i];
        if (p->id != id)
            continue;
        if (error == JSON_NO_REF) {
            int current = a->current;
            editor_adopt_document(a, doc, json_get(doc, result, "info"), 0, 0);
            tab *t = tab_by_uri(a, p->uri);
            if (t)
                editor_apply_edits(a, t, p->edits);
            if (current < a->tab_count)
                a->current = current; /* the file edited opens behind the one in front */
        } else {
            say_error(a, doc, error, "Not edited");
        }
        free(p->uri);
        free(p->edits);
        a->opens[i] = a->opens[--a->open_count];
        break;
    }
    a->need_paint = true;
}

static void apply_file_edits(app *a, const char *uri, const char *edits, int *files)
{
    (*files)++;
    tab *t = tab_by_uri(a, uri);
    if (t) {
        editor_apply_edits(a, t, edits);
        return;
    }
    /* Opened to be edited: its changes stay unsaved in a tab, as for the files already open. */
    uint64_t id = ++a->next_open_id;
    if (!app_call(a, "document/open", on_opened_for_edit, id, "{\"uri\":%J}", uri))
        return;
    a->opens = xrealloc(a->opens, (size_t)(a->open_count + 1) * sizeof *a->opens);
    a->opens[a->open_count++] = (pending_open){id, xstrdup(uri), xstrdup(edits)};
}

/* A WorkspaceEdit (changes by uri, or documentChanges); the number of files it touches. */
static int apply_workspace_edit(app *a, const json_doc *doc, json_ref edit)
{
    int files = 0;
    json_ref changes = json_get(doc, edit, "changes");
    if (json_type_of(doc, changes) == JSON_OBJECT) {
        arena ar = ARENA_INIT;
        for (json_ref m = json_first(doc, changes); m != JSON_NO_REF; m = json_next(doc, m)) {
            const char *uri;
            size_t n;
            buf edits = BUF_INIT;
            if (json_string(doc, m, &ar, &uri, &n) && edits_json(doc, m + 1, &edits))
                apply_file_edits(a, uri, edits.data, &files);
            buf_free(&edits);
        }
        arena_free(&ar);
    }
    json_ref list = json_get(doc, edit, "documentChanges");
    for (json_ref d = json_first(doc, list); d != JSON_NO_REF; d = json_next(doc, d)) {
        char *uri = json_dup_string(doc, json_get(doc, json_get(doc, d, "textDocument"), "uri"));
        buf edits = BUF_INIT;
        if (uri && edits_json(doc, json_get(doc, d, "edits"), &edits))
            apply_file_edits(a, uri, edits.data, &files);
        buf_free(&edits);
        free(uri);
    }
    return files;
}

/* ---- completion ---- */

static void completion_clear(completion_popup *c)
{
    for (int i = 0; i < c->item_count; i++) {
        free(c->items[i].label);
        free(c->items[i].text);
    }
    free(c->items);
    c->items = NULL;
    c->item_count = c->selected = c->scroll = 0;
    c->visible = false;
}

void lsp_completion_close(app *a)
{
    if (!a->completion.visible && !a->completion.item_count)
        return;
    completion_clear(&a->completion);
    a->completion.generation++;
    a->need_paint = true;
}

/* A snippet's text without its tab stops: ${1:name} is name, $1 and $0 are nothing. */
static char *snippet_text(const char *s)
{
    buf out = BUF_INIT;
    for (const char *p = s; *p; p++) {
        if (p[0] == '\\' && p[1]) {
            buf_push(&out, *++p);
        } else if (p[0] == '$' && p[1] >= '0' && p[1] <= '9') {
            while (p[1] >= '0' && p[1] <= '9')
                p++;
        } else if (p[0] == '$' && p[1] == '{') {
            p += 2;
            while (*p >= '0' && *p <= '9')
                p++;
            if (*p == ':')
                p++;
            int depth = 1;
            for (; *p; p++) {
                if (*p == '{')
                    depth++;
                else if (*p == '}' && --depth == 0)
                    break;
                buf_push(&out, *p);
            }
            if (!*p)
                break;
        } else {
            buf_push(&out, *p);
        }
    }
    if (!out.data)
        buf_append_str(&out, "");
    return buf_detach(&out);
}

static void on_completion(void *ctx, uint64_t generation, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    completion_popup *c = &a->completion;
    if (generation != c->generation)
        return;
    completion_clear(c);
    json_ref list = json_get(doc, result, "items");
    if (list == JSON_NO_REF && json_type_of(doc, result) == JSON_ARRAY)
        list = result;
    for (json_ref it = json_first(doc, list); it != JSON_NO_REF && c->item_count < COMPLETION_MAX_ITEMS;
         it = json_next(doc, it)) {
        completion_item item = {0};
        item.label = json_dup_string(doc, json_get(doc, it, "label"));
        if (!item.label)
            continue;
        json_ref edit = json_get(doc, it, "textEdit");
        char *text = json_dup_string(doc, json_get(doc, edit, "newText"));
        if (text) {
            json_ref range = json_get(doc, edit, "range");
            if (range == JSON_NO_REF)
                range = json_get(doc, edit, "replace"); /* an InsertReplaceEdit */
            parse_position(doc, json_get(doc, range, "start"), &item.start_line, &item.start_col);
            parse_position(doc, json_get(doc, range, "end"), &item.end_line, &item.end_col);
            item.has_range = range != JSON_NO_REF;
        } else {
            text = json_dup_string(doc, json_get(doc, it, "insertText"));
        }
        if (!text)
            text = xstrdup(item.label);
        if (json_int_or(doc, json_get(doc, it, "insertTextFormat"), 1) == 2) {
            char *plain = snippet_text(text);
            free(text);
            text = plain;
        }
        item.text = text;
        /* clangd pads its labels (a space, or a bullet for an include to add). */
        char *label = item.label;
        while (*label == ' ')
            label++;
        if (label != item.label)
            memmove(item.label, label, strlen(label) + 1);
        c->items = xrealloc(c->items, (size_t)(c->item_count + 1) * sizeof *c->items);
        c->items[c->item_count++] = item;
    }
    c->visible = c->item_count > 0;
    a->need_paint = true;
}

void lsp_complete(app *a, tab *t) { at_cursor(a, t, USE_COMPLETE); }

static bool word_char(char ch) { return ch == '_' || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || (ch & 0x80); }

void lsp_after_typing(app *a, tab *t, const char *text, size_t len)
{
    if (!len || !t->language || strcmp(t->language, "plaintext") == 0)
        return;
    char last = text[len - 1];
    bool trigger = a->trigger_characters && last && strchr(a->trigger_characters, last);
    if (trigger || (a->completion.visible && word_char(last)))
        lsp_complete(a, t);
    else
        lsp_completion_close(a);
}

void lsp_completion_move(app *a, int step)
{
    completion_popup *c = &a->completion;
    if (!c->item_count)
        return;
    c->selected += step;
    if (c->selected < 0)
        c->selected = step < -1 ? 0 : c->item_count - 1; /* Up from the first wraps to the last */
    if (c->selected >= c->item_count)
        c->selected = step > 1 ? c->item_count - 1 : 0;
    a->need_paint = true;
}

void lsp_completion_accept(app *a)
{
    completion_popup *c = &a->completion;
    tab *t = app_tab(a);
    if (!t || !c->item_count || !t->cursor_count) {
        lsp_completion_close(a);
        return;
    }
    completion_item *it = &c->items[c->selected];
    int line = t->cursors[0].line, col = t->cursors[0].col;
    int sl = line, sc = col;
    if (it->has_range && it->start_line == line) {
        sc = it->start_col;
    } else {
        /* No edit of its own: the item replaces the word before the caret. */
        const char *text = view_text(t, line);
        if (text) {
            size_t at = col_to_byte(text, strlen(text), col), k = at;
            while (k > 0 && word_char(text[k - 1]))
                k--;
            for (size_t i = k; i < at;) {
                int n;
                utf8_next(text + i, &n);
                i += (size_t)n;
                sc--;
            }
        }
    }
    if (sc > col)
        sc = col;
    editor_replace_range(a, t, sl, sc, line, col, it->text);
    lsp_completion_close(a);
}

/* ---- hover, definition, references ---- */

static void hover_append(buf *out, const json_doc *doc, json_ref part)
{
    arena ar = ARENA_INIT;
    const char *s;
    size_t n;
    if (json_type_of(doc, part) == JSON_STRING && json_string(doc, part, &ar, &s, &n)) {
        if (out->len)
            buf_push(out, '\n');
        buf_append(out, s, n);
    } else if (json_string(doc, json_get(doc, part, "value"), &ar, &s, &n)) {
        if (out->len)
            buf_push(out, '\n');
        buf_append(out, s, n);
    }
    arena_free(&ar);
}

static void show_hover(app *a, const json_doc *doc, json_ref result)
{
    json_ref contents = json_get(doc, result, "contents");
    buf text = BUF_INIT;
    if (json_type_of(doc, contents) == JSON_ARRAY) {
        for (json_ref p = json_first(doc, contents); p != JSON_NO_REF; p = json_next(doc, p))
            hover_append(&text, doc, p);
    } else if (contents != JSON_NO_REF) {
        hover_append(&text, doc, contents);
    }
    /* Markdown's fences, rules, heading marks and backticks say nothing in a box of plain text. */
    buf clean = BUF_INIT;
    for (const char *line = text.data ? text.data : ""; *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        bool mark_only = (n >= 3 && (strncmp(line, "```", 3) == 0 || strncmp(line, "---", 3) == 0));
        if (!mark_only) {
            size_t skip = 0;
            while (skip < n && line[skip] == '#')
                skip++;
            if (skip && skip < n && line[skip] == ' ')
                skip++;
            else
                skip = 0;
            for (size_t i = skip; i < n; i++)
                if (line[i] != '`')
                    buf_push(&clean, line[i]);
            buf_push(&clean, '\n');
        }
        line += n + (end ? 1 : 0);
    }
    while (clean.len && clean.data[clean.len - 1] == '\n')
        clean.data[--clean.len] = 0;
    free(a->hover);
    a->hover = clean.len ? buf_detach(&clean) : NULL;
    if (!a->hover)
        app_message(a, false, "Nothing to show here");
    buf_free(&clean);
    buf_free(&text);
}

static void push_jump(app *a, tab *t)
{
    if (!t->path || !t->cursor_count)
        return;
    if (a->jump_count == JUMP_HISTORY) {
        free(a->jumps[0].path);
        memmove(a->jumps, a->jumps + 1, (JUMP_HISTORY - 1) * sizeof *a->jumps);
        a->jump_count--;
    }
    a->jumps[a->jump_count++] = (jump_place){xstrdup(t->path), t->cursors[0].line, t->cursors[0].col};
}

static void go_to_location(app *a, tab *from, const json_doc *doc, json_ref loc)
{
    char *uri = json_dup_string(doc, json_get(doc, loc, "uri"));
    if (!uri)
        uri = json_dup_string(doc, json_get(doc, loc, "targetUri"));
    json_ref range = json_get(doc, loc, "range");
    if (range == JSON_NO_REF)
        range = json_get(doc, loc, "targetSelectionRange");
    int line, col;
    parse_position(doc, json_get(doc, range, "start"), &line, &col);
    char *path = path_of_uri(uri);
    if (path) {
        push_jump(a, from);
        editor_jump(a, path, line, col);
    } else {
        app_message(a, true, "The definition is in %s, which is not a file", uri ? uri : "nothing");
    }
    free(path);
    free(uri);
}

static void show_references(app *a, const json_doc *doc, json_ref locations)
{
    int count = (int)json_length(doc, locations);
    if (!count) {
        app_message(a, false, "No references");
        return;
    }
    char title[64];
    snprintf(title, sizeof title, "References: %d", count);
    overlay_open(a, OVERLAY_GREP, title);
    for (json_ref loc = json_first(doc, locations); loc != JSON_NO_REF; loc = json_next(doc, loc)) {
        char *uri = json_dup_string(doc, json_get(doc, loc, "uri"));
        char *path = path_of_uri(uri);
        int line, col;
        parse_position(doc, json_get(doc, json_get(doc, loc, "range"), "start"), &line, &col);
        if (path) {
            const char *shown = path;
            size_t n = strlen(a->workspace);
            if (strncmp(path, a->workspace, n) == 0 && path[n] == '/')
                shown = path + n + 1;
            tab *t = tab_by_uri(a, uri);
            const char *text = t ? view_text(t, line) : NULL;
            buf label = BUF_INIT;
            buf_appendf(&label, "%s:%d:%d  %s", shown, line + 1, col + 1, text ? text + strspn(text, " \t") : "");
            overlay_add(a, label.data, path, line, col, 0);
            buf_free(&label);
        }
        free(path);
        free(uri);
    }
    overlay_refilter(a);
}

/* ---- code actions ---- */

static void actions_clear(app *a)
{
    for (int i = 0; i < a->code_action_count; i++)
        free(a->code_actions[i]);
    free(a->code_actions);
    a->code_actions = NULL;
    a->code_action_count = 0;
    free(a->code_actions_uri);
    a->code_actions_uri = NULL;
}

/* LSP offers a Command ({title, command: "name", arguments}) or a CodeAction
 * ({title, edit?, command?: Command}); a CodeAction with neither is one the
 * server would fill in on resolve, which we do not ask for. */
static bool action_runnable(const json_doc *doc, json_ref act)
{
    json_ref command = json_get(doc, act, "command");
    return json_type_of(doc, json_get(doc, act, "edit")) == JSON_OBJECT ||
           json_type_of(doc, command) == JSON_STRING || json_type_of(doc, command) == JSON_OBJECT;
}

static void show_actions(app *a, tab *t, const json_doc *doc, json_ref list)
{
    actions_clear(a);
    if (!json_length(doc, list)) {
        app_message(a, false, "No code actions here");
        return;
    }
    a->code_actions_uri = xstrdup(t->uri);
    overlay_open(a, OVERLAY_ACTIONS, "Code actions (Enter applies, Esc closes)");
    for (json_ref act = json_first(doc, list); act != JSON_NO_REF; act = json_next(doc, act)) {
        char *title = json_dup_string(doc, json_get(doc, act, "title"));
        if (title && action_runnable(doc, act)) {
            buf text = BUF_INIT;
            json_writer w;
            jw_init(&w, &text);
            json_write_value(&w, doc, act);
            char index[16];
            snprintf(index, sizeof index, "%d", a->code_action_count);
            a->code_actions = xrealloc(a->code_actions, (size_t)(a->code_action_count + 1) * sizeof *a->code_actions);
            a->code_actions[a->code_action_count++] = buf_detach(&text);
            overlay_add(a, title, index, 0, 0, 0);
        } else if (title) {
            buf label = BUF_INIT;
            buf_appendf(&label, "%s (the server left it empty)", title);
            overlay_add(a, label.data, NULL, 0, 0, 3);
            buf_free(&label);
        }
        free(title);
    }
    overlay_refilter(a);
}

static void on_command_ran(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    (void)tag;
    (void)result;
    app *a = ctx;
    if (error != JSON_NO_REF)
        say_error(a, doc, error, "The code action failed");
    else
        app_message(a, false, "Code action applied");
    a->need_paint = true;
}

/* A chosen action: its edit first, then its command, in the server that
 * offered it (whose workspace/applyEdit then edits the documents). */
void lsp_code_action_chosen(app *a, int index)
{
    if (index < 0 || index >= a->code_action_count || !a->code_actions_uri)
        return;
    json_doc doc = {0};
    ecp_error err = {0};
    if (json_doc_parse(&doc, a->code_actions[index], strlen(a->code_actions[index]), &err) == 0) {
        json_ref act = json_root(&doc);
        json_ref edit = json_get(&doc, act, "edit");
        json_ref command = json_get(&doc, act, "command");
        /* a Command's name is its "command"; a CodeAction's command is a Command */
        json_ref name = json_type_of(&doc, command) == JSON_STRING ? command : json_get(&doc, command, "command");
        json_ref arguments = json_type_of(&doc, command) == JSON_STRING ? json_get(&doc, act, "arguments")
                                                                       : json_get(&doc, command, "arguments");
        int files = json_type_of(&doc, edit) == JSON_OBJECT ? apply_workspace_edit(a, &doc, edit) : 0;
        if (json_type_of(&doc, name) == JSON_STRING) {
            buf args = BUF_INIT;
            if (json_type_of(&doc, arguments) == JSON_ARRAY) {
                json_writer w;
                jw_init(&w, &args);
                json_write_value(&w, &doc, arguments);
            } else {
                buf_append_str(&args, "[]");
            }
            char *command_name = json_dup_string(&doc, name);
            app_call(a, "lsp/executeCommand", on_command_ran, 0, "{\"uri\":%J,\"command\":%J,\"arguments\":%s}",
                     a->code_actions_uri, command_name, args.data);
            free(command_name);
            buf_free(&args);
        } else {
            app_message(a, false, "Applied to %d file%s", files, files == 1 ? "" : "s");
        }
    }
    json_doc_free(&doc);
    actions_clear(a);
}

/* ---- the answers ---- */

static void on_lsp_answer(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum lsp_use use = (enum lsp_use)(tag & 0xFF);
    tab *t = tab_by_serial(a, tag >> 8);
    if (error != JSON_NO_REF) {
        static const char *const what[] = {"No completions", "No hover", "No definition", "No references", "Not renamed",
                                           "No code actions"};
        say_error(a, doc, error, what[use]);
    } else if (t && use == USE_HOVER) {
        show_hover(a, doc, result);
    } else if (t && use == USE_DEFINITION) {
        json_ref locations = json_get(doc, result, "locations");
        if (locations == JSON_NO_REF)
            locations = result;
        json_ref first = json_type_of(doc, locations) == JSON_ARRAY ? json_first(doc, locations) : locations;
        if (first == JSON_NO_REF || json_type_of(doc, first) != JSON_OBJECT)
            app_message(a, false, "No definition found");
        else
            go_to_location(a, t, doc, first);
    } else if (t && use == USE_REFERENCES) {
        json_ref locations = json_get(doc, result, "locations");
        show_references(a, doc, locations == JSON_NO_REF ? result : locations);
    } else if (t && use == USE_RENAME) {
        json_ref edit = json_get(doc, result, "edit");
        int files = json_type_of(doc, edit) == JSON_OBJECT ? apply_workspace_edit(a, doc, edit) : 0;
        if (files)
            app_message(a, false, "Renamed in %d file%s", files, files == 1 ? "" : "s");
        else
            app_message(a, true, "Nothing to rename here");
    } else if (t && use == USE_ACTIONS) {
        show_actions(a, t, doc, result);
    }
    a->need_paint = true;
    if (chained(use))
        chain_end(a);
}

static void lsp_request(app *a, tab *t, enum lsp_use use, int line, int col)
{
    const char *uri = t->uri;
    bool sent;
    if (use == USE_COMPLETE) {
        a->completion.generation++;
        sent = app_call(a, "lsp/completion", on_completion, a->completion.generation,
                        "{\"uri\":%J,\"position\":{\"line\":%d,\"character\":%d}}", uri, line, col);
    } else if (use == USE_HOVER) {
        sent = app_call(a, "lsp/hover", on_lsp_answer, (t->serial << 8) | use,
                        "{\"uri\":%J,\"position\":{\"line\":%d,\"character\":%d}}", uri, line, col);
    } else if (use == USE_DEFINITION) {
        sent = app_call(a, "lsp/definition", on_lsp_answer, (t->serial << 8) | use,
                        "{\"uri\":%J,\"position\":{\"line\":%d,\"character\":%d}}", uri, line, col);
    } else if (use == USE_REFERENCES) {
        sent = app_call(a, "lsp/references", on_lsp_answer, (t->serial << 8) | use,
                        "{\"uri\":%J,\"position\":{\"line\":%d,\"character\":%d},\"includeDeclaration\":true}", uri, line,
                        col);
    } else if (use == USE_ACTIONS) {
        /* The diagnostics on the caret's line are what a quick fix fixes. */
        buf diags = BUF_INIT;
        for (int i = 0; i < t->diag_count; i++) {
            diagnostic *d = &t->diags[i];
            if (line < d->start_line || line > d->end_line)
                continue;
            rpc_format(&diags, "%s{\"range\":{\"start\":{\"line\":%d,\"character\":%d},\"end\":{\"line\":%d,\"character\":%d}},\"severity\":%d,\"message\":%J}",
                       diags.len ? "," : "", d->start_line, d->start_col, d->end_line, d->end_col, d->severity,
                       d->message ? d->message : "");
        }
        cursor *k = &t->cursors[0];
        int sl = k->has_selection ? k->anchor_line : line, sc = k->has_selection ? k->anchor_col : col;
        if (sl > line || (sl == line && sc > col)) {
            int tl = sl, tc = sc;
            sl = line, sc = col, line = tl, col = tc;
        }
        sent = app_call(a, "lsp/codeAction", on_lsp_answer, (t->serial << 8) | use,
                        "{\"uri\":%J,\"range\":{\"start\":{\"line\":%d,\"character\":%d},\"end\":{\"line\":%d,\"character\":%d}},\"context\":{\"diagnostics\":[%s]}}",
                        uri, sl, sc, line, col, diags.data ? diags.data : "");
        buf_free(&diags);
    } else {
        sent = false;
    }
    if (!sent && chained(use))
        chain_end(a);
}

void lsp_hover(app *a, tab *t) { at_cursor(a, t, USE_HOVER); }
void lsp_definition(app *a, tab *t) { at_cursor(a, t, USE_DEFINITION); }
void lsp_references(app *a, tab *t) { at_cursor(a, t, USE_REFERENCES); }
void lsp_code_actions(app *a, tab *t) { at_cursor(a, t, USE_ACTIONS); }

void lsp_back(app *a, tab *t)
{
    (void)t;
    if (!a->jump_count) {
        app_message(a, false, "Nowhere to go back to");
        return;
    }
    jump_place *j = &a->jumps[--a->jump_count];
    editor_jump(a, j->path, j->line, j->col);
    free(j->path);
    j->path = NULL;
}

/* ---- rename: the name asked for, then the position as the server has it ---- */

static void on_rename_cursors(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (t && result != JSON_NO_REF)
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
    if (!t || !t->cursor_count || !a->rename_to)
        return;
    app_call(a, "lsp/rename", on_lsp_answer, (t->serial << 8) | USE_RENAME,
             "{\"uri\":%J,\"position\":{\"line\":%d,\"character\":%d},\"newName\":%J}", t->uri, t->cursors[0].line,
             t->cursors[0].col, a->rename_to);
}

static void rename_answered(app *a, const char *name)
{
    tab *t = app_tab(a);
    if (!t || !name || !*name)
        return;
    free(a->rename_to);
    a->rename_to = xstrdup(name);
    app_call(a, "document/cursors", on_rename_cursors, t->serial, "{\"documentId\":%J}", t->doc_id);
}

static void on_rename_word(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    char *word = json_type_of(doc, result) == JSON_OBJECT ? json_dup_string(doc, json_get(doc, result, "text")) : NULL;
    chain_end(a);
    prompt_ask(a, "Rename to:", word ? word : "", rename_answered);
    free(word);
}

static void on_rename_position(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (t && result != JSON_NO_REF)
        model_cursors_arrived(t, doc, json_get(doc, result, "cursors"));
    if (!t || !t->cursor_count ||
        !app_call(a, "document/wordAtPosition", on_rename_word, serial,
                  "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id, t->cursors[0].line,
                  t->cursors[0].col))
        chain_end(a);
}

void lsp_rename(app *a, tab *t)
{
    chain_begin(a);
    if (!app_call(a, "document/cursors", on_rename_position, t->serial, "{\"documentId\":%J}", t->doc_id))
        chain_end(a);
}

/* ---- format ---- */

static void on_format(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (error != JSON_NO_REF) {
        say_error(a, doc, error, "Not formatted");
        return;
    }
    buf edits = BUF_INIT;
    if (t && edits_json(doc, result, &edits)) {
        editor_apply_edits(a, t, edits.data);
        app_message(a, false, "Formatted");
    } else if (t) {
        app_message(a, false, "Already formatted (or no formatter for %s)", t->language ? t->language : "this file");
    }
    buf_free(&edits);
}

void lsp_format(app *a, tab *t)
{
    editor_flush_typed(a);
    app_call(a, "lsp/format", on_format, t->serial, "{\"uri\":%J,\"options\":{\"tabSize\":4,\"insertSpaces\":true}}",
             t->uri);
}

void lsp_free(app *a)
{
    completion_clear(&a->completion);
    free(a->hover);
    a->hover = NULL;
    free(a->trigger_characters);
    a->trigger_characters = NULL;
    free(a->rename_to);
    a->rename_to = NULL;
    for (int i = 0; i < a->jump_count; i++)
        free(a->jumps[i].path);
    a->jump_count = 0;
    actions_clear(a);
    for (int i = 0; i < a->open_count; i++) {
        free(a->opens[i].uri);
        free(a->opens[i].edits);
    }
    free(a->opens);
    a->opens = NULL;
    a->open_count = 0;
}
