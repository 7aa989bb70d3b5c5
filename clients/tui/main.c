/* ecp-tui's start, its loop, its keys and its connection to the server. */
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "arena.h"
#include "socket_path.h"

static const char usage[] =
    "usage: ecp-tui [--connect [SOCKET]] [--server PATH] [--server-log FILE] [FILE|DIR ...]\n"
    "Opens the files (FILE:LINE opens at a line), or a fuzzy file picker on a directory.\n"
    "The workspace is the first directory named, else the current directory.\n"
    "Without --connect it runs its own ecpd on stdio: $ECPD, else the one beside ecp-tui\n"
    "(or in the build tree beside it), else ecpd from PATH. --connect shares a running\n"
    "server (ecpd --socket); without SOCKET, the workspace's default socket.\n"
    "F1 lists the keys; every one can be rebound through the server's keybindings.\n";

/* The built-in bindings; the server's keybindings (keybindings/get) are read
 * at start and win over these, key by key. */
static const struct {
    const char *key, *command;
} default_bindings[] = {
    {"ctrl+s", "file.save"},          {"alt+s", "file.saveAs"},         {"f12", "file.saveAs"},
    {"ctrl+q", "app.quit"},           {"ctrl+z", "edit.undo"},          {"ctrl+y", "edit.redo"},
    {"ctrl+x", "edit.cut"},           {"ctrl+c", "edit.copy"},          {"ctrl+v", "edit.paste"},
    {"ctrl+a", "edit.selectAll"},     {"ctrl+f", "find.find"},          {"f3", "find.next"},
    {"ctrl+r", "find.replace"},       {"ctrl+h", "find.replace"},       {"alt+f", "search.project"},
    {"f4", "search.project"},         {"ctrl+p", "file.picker"},        {"ctrl+o", "file.picker"},
    {"ctrl+g", "nav.gotoLine"},       {"f1", "app.help"},               {"ctrl+e", "app.palette"},
    {"f2", "app.palette"},            {"ctrl+d", "cursor.nextOccurrence"},
    {"alt+up", "cursor.addAbove"},    {"alt+down", "cursor.addBelow"},  {"ctrl+alt+up", "cursor.addAbove"},
    {"ctrl+alt+down", "cursor.addBelow"}, {"escape", "cursor.single"},
    {"ctrl+w", "tab.close"},          {"ctrl+n", "file.new"},           {"ctrl+pagedown", "tab.next"},
    {"ctrl+pageup", "tab.previous"},  {"alt+right", "tab.next"},        {"alt+left", "tab.previous"},
    {"ctrl+t", "terminal.toggle"},    {"alt+a", "chat.toggle"},         {"f6", "chat.toggle"},    {"alt+g", "git.panel"},           {"f5", "git.panel"},
    {"up", "cursor.up"},              {"down", "cursor.down"},          {"left", "cursor.left"},
    {"right", "cursor.right"},        {"shift+up", "select.up"},        {"shift+down", "select.down"},
    {"shift+left", "select.left"},    {"shift+right", "select.right"},  {"ctrl+left", "cursor.wordLeft"},
    {"ctrl+right", "cursor.wordRight"}, {"ctrl+shift+left", "select.wordLeft"},
    {"ctrl+shift+right", "select.wordRight"}, {"home", "cursor.home"}, {"end", "cursor.end"},
    {"shift+home", "select.home"},    {"shift+end", "select.end"},      {"ctrl+home", "cursor.top"},
    {"ctrl+end", "cursor.bottom"},    {"pageup", "cursor.pageUp"},      {"pagedown", "cursor.pageDown"},
    {"shift+pageup", "select.pageUp"}, {"shift+pagedown", "select.pageDown"},
    {"enter", "edit.newline"},        {"tab", "edit.tab"},              {"backspace", "edit.backspace"},
    {"delete", "edit.delete"},
};

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

/* ---- keys ---- */

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
    else if (ch == 127 || ch == 8)
        snprintf(out, size, "%sbackspace", mod);
    else if (ch == 27)
        snprintf(out, size, "%sescape", mod);
    else if (ch == 0)
        snprintf(out, size, "ctrl+%sspace", mod);
    else if (ch >= 1 && ch <= 26)
        snprintf(out, size, "ctrl+%s%c", mod, (char)('a' + ch - 1));
    else if (ch >= 28 && ch <= 31)
        snprintf(out, size, "ctrl+%s%c", mod, "\\]^_"[ch - 28]);
    else if (alt && ch < 128)
        snprintf(out, size, "alt+%c", (char)(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
    else
        return false;
    return true;
}

static const char *command_for_key(app *a, const char *key)
{
    for (int i = a->binding_count - 1; i >= 0; i--) {
        if (strcmp(a->bindings[i].key, key) == 0)
            return a->bindings[i].command;
    }
    return NULL;
}

static void add_binding(app *a, const char *key, const char *command)
{
    a->bindings = xrealloc(a->bindings, (size_t)(a->binding_count + 1) * sizeof *a->bindings);
    a->bindings[a->binding_count++] = (binding){xstrdup(key), xstrdup(command)};
}

static void clear_bindings(app *a)
{
    for (int i = 0; i < a->binding_count; i++) {
        free(a->bindings[i].key);
        free(a->bindings[i].command);
    }
    free(a->bindings);
    a->bindings = NULL;
    a->binding_count = 0;
}

static void default_keys(app *a)
{
    for (size_t i = 0; i < sizeof default_bindings / sizeof default_bindings[0]; i++)
        add_binding(a, default_bindings[i].key, default_bindings[i].command);
}

/* A key as the keys read here are named: lower case, modifiers as ctrl+alt+shift+
 * (so Shift+Ctrl+Left and ctrl+shift+left are one key; meta and cmd are alt). */
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
        if (n == 4 && strncmp(rest, "ctrl", 4) == 0)
            ctrl = true;
        else if ((n == 3 && strncmp(rest, "alt", 3) == 0) || (n == 4 && strncmp(rest, "meta", 4) == 0) ||
                 (n == 3 && strncmp(rest, "cmd", 3) == 0))
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
    clear_bindings(a);
    default_keys(a);
    json_ref list = json_get(doc, result, "bindings");
    for (json_ref b = json_first(doc, list); b != JSON_NO_REF; b = json_next(doc, b)) {
        char *key = json_dup_string(doc, json_get(doc, b, "key"));
        char *command = json_dup_string(doc, json_get(doc, b, "command"));
        if (key && command) {
            char *canonical = key_canonical(key);
            add_binding(a, canonical, command); /* later entries win */
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
    if (strcmp(command_title(command), command) == 0) {
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
    const char *now = command_for_key(a, a->binding_key);
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

static void handle_key(app *a, const char *key, wint_t ch, bool printable)
{
    if (a->busy > 0) {
        a->queued = xrealloc(a->queued, (size_t)(a->queued_count + 1) * sizeof *a->queued);
        a->queued[a->queued_count++] = (queued_key){key ? xstrdup(key) : NULL, ch, printable};
        return;
    }
    if (a->prompt.active) {
        editor_flush_typed(a);
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
    const char *command = key ? command_for_key(a, key) : NULL;
    if (a->term.visible && a->term.focused && a->overlay.kind == OVERLAY_NONE) {
        if (command && (strcmp(command, "terminal.toggle") == 0 || strcmp(command, "app.quit") == 0 ||
                        strcmp(command, "chat.toggle") == 0)) {
            editor_run_command(a, command);
            return;
        }
        terminal_key(a, key, ch, printable);
        return;
    }
    if (a->chat.visible && a->chat.focused && a->overlay.kind == OVERLAY_NONE) {
        if (command && (strcmp(command, "chat.toggle") == 0 || strcmp(command, "app.quit") == 0 ||
                        strcmp(command, "terminal.toggle") == 0 || strcmp(command, "chat.hide") == 0)) {
            editor_run_command(a, command);
            return;
        }
        chat_key(a, key, ch, printable);
        return;
    }
    if (a->overlay.kind != OVERLAY_NONE) {
        if (overlay_key(a, key, ch, printable))
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
        editor_run_command(a, command);
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
    /* Replay what waited, until a key starts another chain. */
    int done = 0;
    while (a->busy == 0 && done < a->queued_count) {
        queued_key q = a->queued[done++];
        handle_key(a, q.key, q.ch, q.printable);
        free(q.key);
    }
    if (done) {
        memmove(a->queued, a->queued + done, (size_t)(a->queued_count - done) * sizeof *a->queued);
        a->queued_count -= done;
    }
    if (a->busy == 0)
        editor_flush_typed(a);
    a->need_paint = true;
}

static void drop_queued(app *a)
{
    for (int i = 0; i < a->queued_count; i++)
        free(a->queued[i].key);
    free(a->queued);
    a->queued = NULL;
    a->queued_count = 0;
    a->busy = 0;
}

static void apply_size(app *a)
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

/* libuv owns SIGWINCH (ncurses' handler would only be heard at the next key). */
static void on_sigwinch(uv_signal_t *h, int signum)
{
    app *a = h->data;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resize_term(ws.ws_row, ws.ws_col);
    apply_size(a);
}

static void read_input(app *a)
{
    for (;;) {
        wint_t ch;
        int rc = wget_wch(stdscr, &ch);
        if (rc == ERR)
            break;
        if (a->message && !a->message_is_error) {
            free(a->message);
            a->message = NULL;
        }
        a->need_paint = true;
        char key[64];
        if (rc == KEY_CODE_YES) {
            if (ch == KEY_RESIZE) {
                apply_size(a);
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

static void on_input(uv_poll_t *h, int status, int events)
{
    app *a = h->data;
    if (status < 0) {
        app_quit_now(a);
        return;
    }
    read_input(a);
}

static void on_prepare(uv_prepare_t *h)
{
    app *a = h->data;
    if (a->need_paint && !a->quitting) {
        a->need_paint = false;
        paint(a);
    }
}

/* ---- the server ---- */

static void trust_refresh(app *a);

static void on_notify(void *ctx, const char *method, const json_doc *doc, json_ref params)
{
    app *a = ctx;
    if (strncmp(method, "terminal/", 9) == 0)
        terminal_handle_notification(a, method, doc, params);
    else if (strncmp(method, "chat/", 5) == 0)
        chat_handle_notification(a, method, doc, params);
    else if (strcmp(method, "workspace/didChangeTrust") == 0)
        trust_refresh(a);
    else
        editor_handle_notification(a, method, doc, params);
}

static void on_closed(void *ctx, const char *why)
{
    app *a = ctx;
    if (a->quitting)
        return;
    a->server_dead = true;
    drop_queued(a);
    free(a->term.id);
    a->term.id = NULL;
    a->term.focused = false;
    a->term.visible = false;
    a->chat.running = a->chat.prompting = false;
    bool dirty = false;
    for (int i = 0; i < a->tab_count; i++)
        dirty = dirty || a->tabs[i]->dirty;
    app_message(a, true, "The server stopped (%s). %s", why,
                dirty ? "Your unsaved text is kept by the server's recovery: Ctrl+S restarts it and saves to a file of your choice."
                      : "Ctrl+S restarts it.");
}

static void on_theme(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (result != JSON_NO_REF)
        colors_from_theme(a, doc, json_get(doc, result, "theme"));
    a->need_paint = true;
}

static void on_repo(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool is_repo = false;
    json_bool(doc, json_get(doc, result, "isRepo"), &is_repo);
    free(a->repo_root);
    a->repo_root = is_repo ? json_dup_string(doc, json_get(doc, result, "rootUri")) : NULL;
    if (!a->repo_root && is_repo)
        a->repo_root = json_dup_string(doc, json_get(doc, result, "root"));
    git_refresh_branch(a);
    for (int i = 0; i < a->tab_count; i++)
        tab_request_git(a, a->tabs[i]);
}

/* ---- workspace trust ---- */

static void on_trusted(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "Could not trust the folder: %s", msg ? msg : "the server refused");
        free(msg);
    } else {
        app_message(a, false, "Trusted %s: its settings apply", a->workspace);
    }
    trust_refresh(a);
}

static void trust_chosen(app *a, int key)
{
    if (key == 'y')
        app_call(a, "workspace/trust", on_trusted, 0, "{\"uri\":%J,\"trusted\":true}", a->workspace);
    else
        app_message(a, false, "Restricted: this folder's settings that run programs stay ignored");
}

/* The first time the workspace has settings that only trust applies, the
 * user is asked; the status line says it is restricted for as long as it is. */
static void on_trust_state(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    bool trusted = true;
    json_bool(doc, json_get(doc, result, "trusted"), &trusted);
    json_ref ignored = json_get(doc, result, "ignoredSettings");
    a->restricted = result != JSON_NO_REF && !trusted && ignored != JSON_NO_REF && json_length(doc, ignored) > 0;
    a->need_paint = true;
    if (!a->restricted || a->trust_asked || a->prompt.active)
        return;
    a->trust_asked = true;
    prompt_choose(a, "Trust this folder? Its settings that run programs apply only then (y/n)", "yn", trust_chosen);
}

static void trust_refresh(app *a) { app_call(a, "workspace/isTrusted", on_trust_state, 0, NULL); }

static bool connect_server(app *a)
{
    rpc_handlers h = {.ctx = a, .on_notify = on_notify, .on_closed = on_closed};
    char *why = NULL;
    if (a->socket_path && !a->server_dead)
        a->rpc = rpc_connect(a->loop, a->socket_path, h, &why);
    else
        a->rpc = rpc_spawn(a->loop, a->server_path, a->workspace, a->server_log, h, &why);
    if (!a->rpc) {
        app_message(a, true, "%s", why ? why : "cannot reach the server");
        free(why);
        return false;
    }
    a->server_dead = false;
    app_call(a, "initialize", NULL, 0,
             "{\"processId\":%d,\"workspaceRoot\":%J,\"clientInfo\":{\"name\":\"ecp-tui\"},"
             "\"capabilities\":{\"positionEncodings\":[\"utf-32\"]}}",
             (int)getpid(), a->workspace);
    keybindings_reload(a);
    app_call(a, "theme/current", on_theme, 0, NULL);
    app_call(a, "git/isRepo", on_repo, 0, "{\"uri\":%J}", a->workspace);
    trust_refresh(a);
    return true;
}

void app_restart_server(app *a)
{
    if (rpc_is_open(a->rpc))
        return;
    rpc_close(a->rpc);
    a->rpc = NULL;
    a->server_dead = true;
    if (connect_server(a))
        recovery_offer(a);
}

void app_quit_now(app *a)
{
    a->quitting = true;
    uv_stop(a->loop);
}

/* ---- start ---- */

static char *find_server(void)
{
    const char *env = getenv("ECPD");
    if (env && *env)
        return xstrdup(env);
    char exe[PATH_MAX];
    size_t size = sizeof exe;
    if (uv_exepath(exe, &size) == 0) {
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            const char *beside[] = {"/ecpd", "/../../server/ecpd", "/../server/ecpd"};
            for (size_t i = 0; i < 3; i++) {
                buf p = BUF_INIT;
                buf_appendf(&p, "%s%s", exe, beside[i]);
                if (access(p.data, X_OK) == 0)
                    return buf_detach(&p);
                buf_free(&p);
            }
        }
    }
    const char *path = getenv("PATH");
    if (path) {
        char *copy = xstrdup(path), *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
            buf p = BUF_INIT;
            buf_appendf(&p, "%s/ecpd", dir);
            if (access(p.data, X_OK) == 0) {
                free(copy);
                return buf_detach(&p);
            }
            buf_free(&p);
        }
        free(copy);
    }
    return NULL;
}

static char *absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real)
        return real;
    /* A file not made yet: absolute from the current directory. */
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return xstrdup(path);
    buf b = BUF_INIT;
    buf_appendf(&b, "%s/%s", cwd, path);
    return buf_detach(&b);
}

static void setup_curses(app *a)
{
    set_escdelay(25);
    char *direct = direct_colour_terminal();
    if (direct)
        a->screen = newterm(direct, stdout, stdin);
    if (!a->screen)
        initscr();
    free(direct);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    meta(stdscr, TRUE);
    if (has_colors()) {
        start_color();
        use_default_colors();
    }
    a->direct_color = COLORS >= 0x1000000;
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    getmaxyx(stdscr, a->rows, a->cols);
}

static void free_app(app *a)
{
    for (int i = 0; i < a->tab_count; i++)
        tab_free(a->tabs[i]);
    free(a->tabs);
    clear_bindings(a);
    free(a->binding_key);
    free(a->binding_note);
    drop_queued(a);
    prompt_close(a);
    overlay_close(a);
    terminal_free(a);
    chat_free(a);
    for (int i = 0; i < a->started_language_count; i++)
        free(a->started_languages[i]);
    free(a->started_languages);
    free(a->message);
    free(a->socket_path);
    free(a->server_path);
    free(a->server_log);
    free(a->workspace);
    free(a->repo_root);
    free(a->branch);
    free(a->last_search);
    free(a->replace_find);
    buf_free(&a->clipboard);
    buf_free(&a->typed);
    buf_free(&a->prompt.input);
    buf_free(&a->overlay.query);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
        setlocale(LC_CTYPE, "C.UTF-8");
    app *a = xcalloc(1, sizeof *a);
    const char **files = xcalloc((size_t)argc + 1, sizeof *files);
    int file_count = 0;
    bool connect = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            free(files);
            free(a);
            return 0;
        } else if (strcmp(argv[i], "--connect") == 0) {
            connect = true;
            struct stat st;
            if (i + 1 < argc && stat(argv[i + 1], &st) == 0 && S_ISSOCK(st.st_mode))
                a->socket_path = xstrdup(argv[++i]);
        } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            a->server_path = xstrdup(argv[++i]);
        } else if (strcmp(argv[i], "--server-log") == 0 && i + 1 < argc) {
            a->server_log = absolute(argv[++i]);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ecp-tui: unknown option %s\n%s", argv[i], usage);
            free(files);
            free(a);
            return 2;
        } else {
            files[file_count++] = argv[i];
        }
    }
    /* The workspace: the first directory named, else here, as ecpd's own default (so
     * --connect finds the socket a plain `ecpd --socket` started here listens on). */
    for (int i = 0; i < file_count && !a->workspace; i++) {
        struct stat st;
        if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode))
            a->workspace = absolute(files[i]);
    }
    if (!a->workspace)
        a->workspace = absolute(".");
    if (connect && !a->socket_path)
        a->socket_path = ecp_default_socket_path(a->workspace);
    if (!a->server_path)
        a->server_path = find_server();
    if (!a->server_path && !connect) {
        fprintf(stderr, "ecp-tui: no ecpd beside ecp-tui nor in PATH (set ECPD or --server)\n");
        free(files);
        free_app(a);
        free(a);
        return 2;
    }
    if (!a->server_path)
        a->server_path = xstrdup("ecpd");
    a->connected_to_socket = connect;

    uv_loop_t loop;
    uv_loop_init(&loop);
    a->loop = &loop;
    signal(SIGPIPE, SIG_IGN);
    a->next_serial = 1;
    colors_default(a);
    default_keys(a);

    if (!connect_server(a)) {
        fprintf(stderr, "ecp-tui: %s\n", a->message);
        free(files);
        uv_loop_close(&loop);
        free_app(a);
        free(a);
        return 1;
    }
    setup_curses(a);
    uv_poll_init(&loop, &a->input, STDIN_FILENO);
    a->input.data = a;
    uv_poll_start(&a->input, UV_READABLE, on_input);
    uv_prepare_init(&loop, &a->painter);
    a->painter.data = a;
    uv_prepare_start(&a->painter, on_prepare);
    uv_signal_init(&loop, &a->sigwinch);
    a->sigwinch.data = a;
    uv_signal_start(&a->sigwinch, on_sigwinch, SIGWINCH);
    uv_timer_init(&loop, &a->git_timer);
    a->git_timer.data = a;
    uv_timer_init(&loop, &a->message_timer);
    a->message_timer.data = a;

    recovery_offer(a);
    bool opened_picker = false;
    for (int i = 0; i < file_count; i++) {
        struct stat st;
        if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!opened_picker) {
                opened_picker = true;
                editor_run_command(a, "file.picker");
            }
            continue;
        }
        /* FILE:LINE opens at a line, unless a file of that very name exists. */
        int line = 0;
        char *name = xstrdup(files[i]);
        char *colon = strrchr(name, ':');
        if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) && access(name, F_OK) != 0) {
            line = atoi(colon + 1) - 1;
            *colon = 0;
        }
        char *abs = absolute(name);
        editor_open_path(a, abs, line < 0 ? 0 : line, 0);
        free(abs);
        free(name);
    }
    if (file_count == 0)
        editor_run_command(a, "file.new");
    free(files);
    a->need_paint = true;
    uv_run(&loop, UV_RUN_DEFAULT);

    endwin();
    if (a->screen)
        delscreen(a->screen);
    rpc_close(a->rpc);
    a->rpc = NULL;
    uv_walk(&loop, close_walk, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free_app(a);
    free(a);
    return 0;
}
