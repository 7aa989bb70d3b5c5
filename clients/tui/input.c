/* The input: keys read from the terminal, named as key bindings name them
 * (ctrl+alt+shift+key), and run through the commands table; the key bindings
 * kept by the server; the keys that wait while a command waits for it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"

/* The modifiers xterm encodes in the names ncurses gives extended keys
 * (kUP5 is ctrl+up): 2 shift, 3 alt, 4 alt+shift, 5 ctrl, 6 ctrl+shift,
 * 7 ctrl+alt, 8 ctrl+alt+shift. */
static const char *const modifier_prefix[] = {"", "", "shift+", "alt+", "alt+shift+", "ctrl+", "ctrl+shift+",
                                              "ctrl+alt+", "ctrl+alt+shift+"};

static bool extended_key_name(int code, char *out, size_t size)
{
    const char *name = keyname(code);
    if (!name || name[0] != 'k')
        return false;
    static const struct {
        const char *prefix, *key;
    } names[] = {{"kUP", "up"},     {"kDN", "down"},     {"kLFT", "left"}, {"kRIT", "right"}, {"kHOM", "home"},
                 {"kEND", "end"},   {"kNXT", "pagedown"}, {"kPRV", "pageup"}, {"kDC", "delete"}, {"kIC", "insert"}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i].prefix);
        if (strncmp(name, names[i].prefix, n) == 0 && name[n] >= '2' && name[n] <= '8' && name[n + 1] == 0) {
            snprintf(out, size, "%s%s", modifier_prefix[name[n] - '0'], names[i].key);
            return true;
        }
    }
    return false;
}

/* The canonical name of a function key (ctrl+alt+shift+key, as keybindings
 * write it), or false for a key without one. */
static bool function_key_name(int code, char *out, size_t size)
{
    static const struct {
        int code;
        const char *name;
    } keys[] = {
        {KEY_UP, "up"},           {KEY_DOWN, "down"},           {KEY_LEFT, "left"},       {KEY_RIGHT, "right"},
        {KEY_SR, "shift+up"},     {KEY_SF, "shift+down"},       {KEY_SLEFT, "shift+left"}, {KEY_SRIGHT, "shift+right"},
        {KEY_HOME, "home"},       {KEY_END, "end"},             {KEY_SHOME, "shift+home"}, {KEY_SEND, "shift+end"},
        {KEY_PPAGE, "pageup"},    {KEY_NPAGE, "pagedown"},      {KEY_SPREVIOUS, "shift+pageup"},
        {KEY_SNEXT, "shift+pagedown"}, {KEY_DC, "delete"},      {KEY_IC, "insert"},       {KEY_SDC, "shift+delete"},
        {KEY_BACKSPACE, "backspace"}, {KEY_ENTER, "enter"},     {KEY_BTAB, "shift+tab"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].code == code) {
            snprintf(out, size, "%s", keys[i].name);
            return true;
        }
    }
    if (code >= KEY_F(1) && code <= KEY_F(12)) {
        snprintf(out, size, "f%d", code - KEY_F0);
        return true;
    }
    if (code >= KEY_F(13) && code <= KEY_F(24)) {
        snprintf(out, size, "shift+f%d", code - KEY_F(12));
        return true;
    }
    if (code >= KEY_F(25) && code <= KEY_F(36)) {
        snprintf(out, size, "ctrl+f%d", code - KEY_F(24));
        return true;
    }
    return extended_key_name(code, out, size);
}

/* Names a control character or an Alt+character, or false for printable text. */
static bool char_key_name(wint_t ch, bool alt, char *out, size_t size)
{
    const char *mod = alt ? "alt+" : "";
    if (ch == '\r' || ch == '\n')
        snprintf(out, size, "%senter", mod);
    else if (ch == '\t')
        snprintf(out, size, "%stab", mod);
    else if (ch == 127)
        snprintf(out, size, "%sbackspace", mod);
    else if (ch == 8) /* what terminals send for Ctrl+Backspace */
        snprintf(out, size, "ctrl+%sbackspace", mod);
    else if (ch == 27)
        snprintf(out, size, "%sescape", mod);
    else if (ch == 0)
        snprintf(out, size, "ctrl+%sspace", mod);
    else if (ch >= 1 && ch <= 26)
        snprintf(out, size, "ctrl+%s%c", mod, (char)('a' + ch - 1));
    else if (ch >= 28 && ch <= 31)
        snprintf(out, size, "ctrl+%s%c", mod, "\\]^_"[ch - 28]);
    else if (alt && ch >= 'A' && ch <= 'Z')
        snprintf(out, size, "alt+shift+%c", (char)(ch - 'A' + 'a'));
    else if (alt && ch < 128)
        snprintf(out, size, "alt+%c", (char)ch);
    else
        return false;
    return true;
}

/* A key as the keys read here are named: lower case, modifiers as ctrl+alt+shift+
 * (so Shift+Ctrl+Left and ctrl+shift+left are one key; meta, cmd and super are alt). */
char *key_canonical(const char *written)
{
    char *lower = xstrdup(written);
    for (char *p = lower; *p; p++)
        *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    bool ctrl = false, alt = false, shift = false;
    char *rest = lower;
    for (;;) {
        char *plus = strchr(rest, '+');
        if (!plus || plus[1] == 0)
            break; /* the last part is the key, "+" itself included */
        size_t n = (size_t)(plus - rest);
        /* The server's names for the modifiers too (control, option, super); a terminal tells
         * no meta key from alt, so meta, cmd and super are alt here. */
        if ((n == 4 && strncmp(rest, "ctrl", 4) == 0) || (n == 7 && strncmp(rest, "control", 7) == 0))
            ctrl = true;
        else if ((n == 3 && strncmp(rest, "alt", 3) == 0) || (n == 6 && strncmp(rest, "option", 6) == 0) ||
                 (n == 4 && strncmp(rest, "meta", 4) == 0) || (n == 3 && strncmp(rest, "cmd", 3) == 0) ||
                 (n == 5 && strncmp(rest, "super", 5) == 0))
            alt = true;
        else if (n == 5 && strncmp(rest, "shift", 5) == 0)
            shift = true;
        else
            break;
        rest = plus + 1;
    }
    buf out = BUF_INIT;
    buf_appendf(&out, "%s%s%s%s", ctrl ? "ctrl+" : "", alt ? "alt+" : "", shift ? "shift+" : "", rest);
    free(lower);
    return buf_detach(&out);
}

/* The built-in keys, then the server's on top: what keybindings/get answers now. */
static void on_keybindings(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (error != JSON_NO_REF)
        return;
    bindings_clear(a);
    commands_bind_defaults(a);
    json_ref list = json_get(doc, result, "bindings");
    for (json_ref b = json_first(doc, list); b != JSON_NO_REF; b = json_next(doc, b)) {
        char *key = json_dup_string(doc, json_get(doc, b, "key"));
        char *command = json_dup_string(doc, json_get(doc, b, "command"));
        if (key && command) {
            char *canonical = key_canonical(key);
            bindings_add(a, canonical, command); /* later entries win */
            free(canonical);
        }
        free(key);
        free(command);
    }
    if (a->overlay.kind == OVERLAY_HELP)
        help_open(a);
    a->need_paint = true;
}

void keybindings_reload(app *a)
{
    app_call(a, "keybindings/get", on_keybindings, 0, NULL);
}

/* ---- rebinding from here: the server keeps the binding, then it is read back ---- */

static void on_bound(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool ok = error == JSON_NO_REF;
    json_bool(doc, json_get(doc, result, "success"), &ok);
    if (!ok) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "Not bound: %s", msg ? msg : "the server refused");
        free(msg);
    } else {
        app_message(a, false, "%s", a->binding_note ? a->binding_note : "Bound");
    }
    free(a->binding_note);
    a->binding_note = NULL;
    keybindings_reload(a);
}

static void bind_command_answered(app *a, const char *command)
{
    char *key = a->binding_key;
    a->binding_key = NULL;
    if (!command || !*command || !key) {
        free(key);
        return;
    }
    if (!command_find(command)) {
        app_message(a, true, "No command %s (the palette lists them)", command);
        free(key);
        return;
    }
    free(a->binding_note);
    buf note = BUF_INIT;
    buf_appendf(&note, "%s now runs %s", key, command);
    a->binding_note = buf_detach(&note);
    app_call(a, "keybindings/add", on_bound, 0, "{\"binding\":{\"key\":%J,\"command\":%J}}", key, command);
    free(key);
}

static void bind_key_answered(app *a, const char *key)
{
    if (!key || !*key)
        return;
    free(a->binding_key);
    a->binding_key = key_canonical(key);
    buf label = BUF_INIT;
    buf_appendf(&label, "%s runs the command:", a->binding_key);
    const char *now = binding_command(a, a->binding_key);
    prompt_ask(a, label.data, now ? now : "", bind_command_answered);
    buf_free(&label);
}

static void unbind_answered(app *a, const char *key)
{
    if (!key || !*key)
        return;
    char *canonical = key_canonical(key);
    free(a->binding_note);
    buf note = BUF_INIT;
    buf_appendf(&note, "%s runs what it ran before it was bound", canonical);
    a->binding_note = buf_detach(&note);
    app_call(a, "keybindings/remove", on_bound, 0, "{\"key\":%J}", canonical);
    free(canonical);
}

void keys_bind(app *a)
{
    prompt_ask(a, "Bind the key (as ctrl+alt+shift+k, f5, alt+up):", "", bind_key_answered);
}

void keys_unbind(app *a)
{
    prompt_ask(a, "Unbind the key:", "", unbind_answered);
}

/* The keys that still work with the server gone: those that bring it back or quit. */
static bool works_without_server(const app *a, const char *key)
{
    const char *command = key ? binding_command(a, key) : NULL;
    return command && (strcmp(command, "file.save") == 0 || strcmp(command, "server.restart") == 0 ||
                       strcmp(command, "app.quit") == 0);
}

static void handle_key(app *a, const char *key, wint_t ch, bool printable);

/* Code points of text (UTF-8) as keys, for what reads keys rather than text
 * (the prompt, a list's query, the panes); a line break is Enter where a pane
 * takes it, and nothing on a one-line prompt. */
static void paste_as_keys(app *a, const char *text, size_t len, bool newlines)
{
    mbstate_t st = {0};
    for (size_t i = 0; i < len;) {
        wchar_t wc;
        size_t n = mbrtowc(&wc, text + i, len - i, &st);
        if (n == (size_t)-1 || n == (size_t)-2 || n == 0) {
            memset(&st, 0, sizeof st);
            i++;
            continue;
        }
        i += n;
        if (wc == L'\r' || wc == L'\n') {
            if (newlines && !(wc == L'\n' && i >= 2 && text[i - 2] == '\r'))
                handle_key(a, "enter", '\r', false);
        } else if (wc == L'\t') {
            if (newlines)
                handle_key(a, "tab", '\t', false);
        } else if (wc >= 32) {
            handle_key(a, NULL, (wint_t)wc, true);
        }
    }
}

/* A bracketed paste: one insert of the text as it came, never indented again. */
static void handle_paste(app *a, const char *text, size_t len)
{
    if ((a->server_dead || a->restarting) && !a->prompt.active) {
        editor_flush_typed(a);
        queue_push_paste(a, text, len);
        app_message(a, true, "The server is %s: the paste waits for it", a->server_dead ? "gone" : "coming back");
        return;
    }
    if (a->busy > 0) {
        queue_push_paste(a, text, len);
        return;
    }
    lsp_completion_close(a);
    bool pane = a->overlay.kind == OVERLAY_NONE && ((a->term.visible && a->term.focused) || (a->chat.visible && a->chat.focused));
    if (a->prompt.active || a->overlay.kind != OVERLAY_NONE || pane) {
        paste_as_keys(a, text, len, pane);
        return;
    }
    editor_flush_typed(a);
    tab *t = app_tab(a);
    if (!t)
        return;
    if (t->read_only) {
        editor_refuse_edit(a, t);
        return;
    }
    editor_paste_text(a, t, text, len);
}

/* The completion popup takes the keys that choose in it; any other key but text closes it. */
static bool completion_key(app *a, const char *key)
{
    if (!key)
        return false;
    if (strcmp(key, "up") == 0 || strcmp(key, "down") == 0 || strcmp(key, "pageup") == 0 || strcmp(key, "pagedown") == 0) {
        lsp_completion_move(a, key[0] == 'u' ? -1 : key[0] == 'd' ? 1 : key[4] == 'u' ? -8 : 8);
        return true;
    }
    if (strcmp(key, "enter") == 0 || strcmp(key, "tab") == 0) {
        lsp_completion_accept(a);
        return true;
    }
    lsp_completion_close(a);
    return strcmp(key, "escape") == 0;
}

static void handle_key(app *a, const char *key, wint_t ch, bool printable)
{
    /* With the server gone, or back but its tabs not yet, a key waits, unseen,
     * to run once they are: never shown and then lost. */
    if ((a->server_dead || a->restarting) && !a->prompt.active && !works_without_server(a, key)) {
        editor_flush_typed(a);
        queue_push(a, key, ch, printable);
        app_message(a, true, "The server is %s: %d key%s wait%s for it%s", a->server_dead ? "gone" : "coming back",
                    a->queued_count, a->queued_count == 1 ? "" : "s", a->queued_count == 1 ? "s" : "",
                    a->server_dead && !a->connected_to_socket ? " (Ctrl+S restarts it)" : "");
        return;
    }
    if (a->busy > 0) {
        queue_push(a, key, ch, printable);
        return;
    }
    if (a->prompt.active) {
        editor_flush_typed(a);
        if (a->prompt.toggles && key && (strcmp(key, "alt+r") == 0 || strcmp(key, "alt+c") == 0 || strcmp(key, "alt+w") == 0)) {
            editor_find_toggle(a, key[4]);
            return;
        }
        /* The prompt reads characters: name the keys it knows as theirs. */
        wint_t c = ch;
        if (key && strcmp(key, "backspace") == 0)
            c = 127;
        else if (key && strcmp(key, "enter") == 0)
            c = '\r';
        else if (key && strcmp(key, "escape") == 0)
            c = 27;
        prompt_key(a, c, !printable && key != NULL);
        return;
    }
    const char *command = key ? binding_command(a, key) : NULL;
    /* A pane that has the keys takes them all but the few commands that move the keys elsewhere. */
    const command_entry *pane_command = command_find(command);
    if (a->term.visible && a->term.focused && a->overlay.kind == OVERLAY_NONE) {
        if (pane_command && (pane_command->scopes & SCOPE_TERMINAL))
            command_run(a, command);
        else
            terminal_key(a, key, ch, printable);
        return;
    }
    if (a->chat.visible && a->chat.focused && a->overlay.kind == OVERLAY_NONE) {
        if (pane_command && (pane_command->scopes & SCOPE_CHAT))
            command_run(a, command);
        else
            chat_key(a, key, ch, printable);
        return;
    }
    if (a->overlay.kind != OVERLAY_NONE) {
        if (overlay_key(a, key, ch, printable))
            return;
    }
    if (a->completion.visible && !printable) {
        editor_flush_typed(a);
        if (completion_key(a, key))
            return;
    }
    if (printable) {
        char utf8[8];
        mbstate_t st = {0};
        size_t n = wcrtomb(utf8, (wchar_t)ch, &st);
        if (n != (size_t)-1)
            buf_append(&a->typed, utf8, n);
        return;
    }
    editor_flush_typed(a);
    if (command)
        command_run(a, command);
    else if (key)
        app_message(a, false, "%s is not bound", key);
}

void chain_begin(app *a)
{
    editor_flush_typed(a);
    a->busy++;
}

void chain_end(app *a)
{
    if (a->busy > 0)
        a->busy--;
    if (a->busy == 0 && a->queued_count > 0) {
        /* The waiting keys leave the queue before any of them runs: a command that
         * ends at once (its request could not be sent) ends its chain from inside
         * this replay, and must find nothing left to replay. A key that starts a
         * chain which waits sends the keys after it back to the queue, in order. */
        int count;
        queued_key *waiting = queue_take(a, &count);
        for (int i = 0; i < count; i++) {
            if (waiting[i].paste)
                handle_paste(a, waiting[i].paste, waiting[i].paste_len);
            else
                handle_key(a, waiting[i].key, waiting[i].ch, waiting[i].printable);
            free(waiting[i].key);
            free(waiting[i].paste);
        }
        free(waiting);
    }
    if (a->busy == 0)
        editor_flush_typed(a);
    a->need_paint = true;
}

void keys_replay(app *a)
{
    /* chain_end replays what waits once nothing is busy. */
    a->busy++;
    chain_end(a);
}

void input_resized(app *a)
{
    editor_flush_typed(a);
    getmaxyx(stdscr, a->rows, a->cols);
    terminal_layout(a);
    if (a->chat.visible)
        chat_layout(a);
    for (int i = 0; i < a->tab_count; i++) {
        a->tabs[i]->follow_cursor = true;
        tab_request_viewport(a, a->tabs[i]);
        tab_request_cursors(a, a->tabs[i]);
    }
    clearok(curscr, TRUE);
    a->need_paint = true;
}

static const char paste_start[] = "[200~", paste_end[] = "\033[201~";

static void paste_append(app *a, const char *bytes, size_t n)
{
    if (a->paste.len + n > PASTE_LIMIT) {
        a->paste_too_big = true;
        return;
    }
    buf_append(&a->paste, bytes, n);
}

/* Inside a paste every character is text until the end marker; the marker is
 * matched a character at a time, as it may arrive split across reads. */
static void paste_read(app *a, int rc, wint_t ch)
{
    if (rc != OK)
        return; /* a function key's code inside a paste is not text */
    if ((char)ch == paste_end[a->paste_end_seen] && ch < 128) {
        if (++a->paste_end_seen < (int)sizeof paste_end - 1)
            return;
        a->pasting = false;
        a->paste_end_seen = 0;
        if (a->paste_too_big)
            app_message(a, true, "The paste was cut at %u MiB", PASTE_LIMIT >> 20);
        a->paste_too_big = false;
        handle_paste(a, a->paste.data ? a->paste.data : "", a->paste.len);
        buf_free(&a->paste);
        return;
    }
    if (a->paste_end_seen) {
        paste_append(a, paste_end, (size_t)a->paste_end_seen);
        a->paste_end_seen = 0;
        if (ch == 27) {
            a->paste_end_seen = 1;
            return;
        }
    }
    char utf8[8];
    mbstate_t st = {0};
    size_t n = wcrtomb(utf8, (wchar_t)ch, &st);
    if (n != (size_t)-1)
        paste_append(a, utf8, n);
}

/* After Escape and '[': the rest of a paste's start marker, or false with the
 * characters read that were not it (they are keys, handled after Alt+[). */
static bool paste_begins(app *a, wint_t *read, int *read_count)
{
    *read_count = 0;
    for (int i = 1; paste_start[i]; i++) {
        wint_t c;
        int rc = wget_wch(stdscr, &c);
        if (rc == ERR)
            return false;
        if (rc != OK || c != (wint_t)(unsigned char)paste_start[i]) {
            read[(*read_count)++] = rc == OK ? c : 0;
            return false;
        }
        read[(*read_count)++] = c;
    }
    a->pasting = true;
    a->paste_end_seen = 0;
    a->paste_too_big = false;
    buf_clear(&a->paste);
    return true;
}

void input_read(app *a)
{
    for (;;) {
        wint_t ch;
        int rc = wget_wch(stdscr, &ch);
        if (rc == ERR)
            break;
        a->need_paint = true;
        if (a->pasting) {
            paste_read(a, rc, ch);
            continue;
        }
        if (a->hover) {
            free(a->hover);
            a->hover = NULL;
        }
        if (a->message && !a->message_is_error) {
            free(a->message);
            a->message = NULL;
        }
        a->need_paint = true;
        char key[64];
        if (rc == KEY_CODE_YES) {
            if (ch == KEY_RESIZE) {
                input_resized(a);
                continue;
            }
            if (ch == KEY_MOUSE) {
                MEVENT ev;
                if (getmouse(&ev) != OK)
                    continue;
                editor_flush_typed(a);
                if (ev.bstate & BUTTON4_PRESSED)
                    editor_scroll(a, -3);
                else if (ev.bstate & BUTTON5_PRESSED)
                    editor_scroll(a, 3);
                else if (ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON1_RELEASED))
                    editor_click(a, ev.y, ev.x);
                continue;
            }
            if (function_key_name((int)ch, key, sizeof key))
                handle_key(a, key, 0, false);
            continue;
        }
        if (ch == 27) {
            /* Alt+key arrives as Escape and the key: take the key now if it came with it. */
            wint_t next;
            int rc2 = wget_wch(stdscr, &next);
            if (rc2 == OK && next == '[') {
                wint_t read[8];
                int read_count;
                if (paste_begins(a, read, &read_count))
                    continue;
                handle_key(a, "alt+[", '[', false);
                for (int i = 0; i < read_count; i++)
                    if (read[i] && char_key_name(read[i], false, key, sizeof key))
                        handle_key(a, key, read[i], false);
                    else if (read[i])
                        handle_key(a, NULL, read[i], true);
                continue;
            }
            /* Only Escape and a printable key read as Alt+key: Escape then Ctrl+E is two keys. */
            if (rc2 == OK && next > 32 && next < 127 && char_key_name(next, true, key, sizeof key)) {
                handle_key(a, key, next, false);
                continue;
            }
            /* Escape then a function key is two keys: the terminal names Alt+arrows itself (kDN3). */
            handle_key(a, "escape", 27, false);
            if (rc2 == KEY_CODE_YES && function_key_name((int)next, key, sizeof key))
                handle_key(a, key, 0, false);
            else if (rc2 == OK && char_key_name(next, false, key, sizeof key))
                handle_key(a, key, next, false);
            else if (rc2 == OK)
                handle_key(a, NULL, next, true);
            continue;
        }
        if (char_key_name(ch, false, key, sizeof key))
            handle_key(a, key, ch, false);
        else
            handle_key(a, NULL, ch, true);
    }
    editor_flush_typed(a);
}

