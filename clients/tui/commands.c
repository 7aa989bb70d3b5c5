/* The commands: one table names each (as key bindings and the keybindings methods name
 * it), says what it does (F1's help and the palette show that line), which
 * function runs it, and which keys run it unless the server's bindings say
 * otherwise. Nothing else lists commands. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"

/* ---- the commands that are not one call ---- */

static void cmd_quit(app *a, tab *t) { editor_quit(a); }
static void cmd_help(app *a, tab *t) { help_open(a); }
static void cmd_palette(app *a, tab *t) { palette_open(a); }
static void cmd_picker(app *a, tab *t) { picker_open(a); }
static void cmd_grep(app *a, tab *t) { grep_start(a); }
static void cmd_terminal_toggle(app *a, tab *t) { terminal_toggle(a); }
static void cmd_terminal_hide(app *a, tab *t) { terminal_hide(a); }
static void cmd_bind(app *a, tab *t) { keys_bind(a); }
static void cmd_unbind(app *a, tab *t) { keys_unbind(a); }
static void cmd_chat_toggle(app *a, tab *t) { chat_toggle(a); }
static void cmd_chat_hide(app *a, tab *t) { chat_hide(a); }
static void cmd_chat_stop(app *a, tab *t) { chat_stop(a); }
static void cmd_git_panel(app *a, tab *t) { git_panel_open(a); }
static void cmd_restart(app *a, tab *t) { app_restart_server(a); }
static void cmd_theme_reload(app *a, tab *t) { editor_reload_theme(a); }
static void cmd_new(app *a, tab *t) { editor_new_file(a); }

/* Ctrl+S is also how a dead server is restarted, with or without a document. */
static void cmd_save(app *a, tab *t)
{
    if (a->server_dead)
        app_restart_server(a);
    else if (t && t->read_only)
        editor_refuse_edit(a, t);
    else if (t)
        editor_save(a, t);
}

static void cmd_save_as(app *a, tab *t) { editor_save_as(a, t); }
static void cmd_close(app *a, tab *t) { editor_close_tab(a, t); }
static void cmd_next_tab(app *a, tab *t) { editor_switch_tab(a, 1); }
static void cmd_previous_tab(app *a, tab *t) { editor_switch_tab(a, -1); }
static void cmd_undo(app *a, tab *t) { editor_undo(a, t, false); }
static void cmd_redo(app *a, tab *t) { editor_undo(a, t, true); }
static void cmd_cut(app *a, tab *t) { editor_copy(a, t, true); }
static void cmd_copy(app *a, tab *t) { editor_copy(a, t, false); }
static void cmd_paste(app *a, tab *t) { editor_paste(a, t); }
static void cmd_select_all(app *a, tab *t) { editor_select_all(a, t); }
static void cmd_newline(app *a, tab *t) { editor_newline(a, t); }
static void cmd_indent(app *a, tab *t) { editor_indent(a, t); }
static void cmd_outdent(app *a, tab *t) { editor_outdent(a, t); }
static void cmd_delete_word_left(app *a, tab *t) { editor_delete_word(a, t, "left"); }
static void cmd_delete_word_right(app *a, tab *t) { editor_delete_word(a, t, "right"); }
static void cmd_toggle_comment(app *a, tab *t) { editor_toggle_comment(a, t); }
static void cmd_duplicate(app *a, tab *t) { editor_duplicate_lines(a, t); }
static void cmd_move_up(app *a, tab *t) { editor_move_lines(a, t, "up"); }
static void cmd_move_down(app *a, tab *t) { editor_move_lines(a, t, "down"); }
static void cmd_find_previous(app *a, tab *t) { editor_find_previous(a, t); }
static void cmd_backspace(app *a, tab *t) { editor_delete(a, t, "left"); }
static void cmd_delete(app *a, tab *t) { editor_delete(a, t, "right"); }
static void cmd_find(app *a, tab *t) { editor_find(a, t); }
static void cmd_find_next(app *a, tab *t) { editor_find_next(a, t); }
static void cmd_replace(app *a, tab *t) { editor_replace(a, t); }
static void cmd_goto_line(app *a, tab *t) { editor_goto_line(a, t); }
static void cmd_next_occurrence(app *a, tab *t) { editor_next_occurrence(a, t); }
static void cmd_add_above(app *a, tab *t) { editor_add_cursor(a, t, -1); }
static void cmd_add_below(app *a, tab *t) { editor_add_cursor(a, t, 1); }
static void cmd_single_cursor(app *a, tab *t) { editor_single_cursor(a, t); }

#define MOVE(fn, direction, unit, select) \
    static void fn(app *a, tab *t) { editor_move(a, t, direction, unit, select); }
MOVE(cmd_up, "up", "character", false)
MOVE(cmd_down, "down", "character", false)
MOVE(cmd_left, "left", "character", false)
MOVE(cmd_right, "right", "character", false)
MOVE(cmd_select_up, "up", "character", true)
MOVE(cmd_select_down, "down", "character", true)
MOVE(cmd_select_left, "left", "character", true)
MOVE(cmd_select_right, "right", "character", true)
MOVE(cmd_word_left, "left", "word", false)
MOVE(cmd_word_right, "right", "word", false)
MOVE(cmd_select_word_left, "left", "word", true)
MOVE(cmd_select_word_right, "right", "word", true)
MOVE(cmd_home, "left", "line", false)
MOVE(cmd_end, "right", "line", false)
MOVE(cmd_select_home, "left", "line", true)
MOVE(cmd_select_end, "right", "line", true)
MOVE(cmd_top, "up", "document", false)
MOVE(cmd_bottom, "down", "document", false)
MOVE(cmd_select_top, "up", "document", true)
MOVE(cmd_select_bottom, "down", "document", true)
#undef MOVE

static void cmd_page_up(app *a, tab *t) { editor_page(a, t, -1, false); }
static void cmd_page_down(app *a, tab *t) { editor_page(a, t, 1, false); }
static void cmd_select_page_up(app *a, tab *t) { editor_page(a, t, -1, true); }
static void cmd_select_page_down(app *a, tab *t) { editor_page(a, t, 1, true); }

static void cmd_complete(app *a, tab *t) { lsp_complete(a, t); }
static void cmd_hover(app *a, tab *t) { lsp_hover(a, t); }
static void cmd_definition(app *a, tab *t) { lsp_definition(a, t); }
static void cmd_back(app *a, tab *t) { lsp_back(a, t); }
static void cmd_references(app *a, tab *t) { lsp_references(a, t); }
static void cmd_rename(app *a, tab *t) { lsp_rename(a, t); }
static void cmd_format(app *a, tab *t) { lsp_format(a, t); }
static void cmd_code_actions(app *a, tab *t) { lsp_code_actions(a, t); }
static void cmd_wrap(app *a, tab *t) { editor_toggle_wrap(a, t); }
static void cmd_redraw(app *a, tab *t) { editor_redraw(a); }

/* ---- the table ---- */

#define IN_PANES (SCOPE_TERMINAL | SCOPE_CHAT)

static const command_entry commands[] = {
    {"file.save", "Save", cmd_save, NEEDS_NOTHING, 0, "ctrl+s"},
    {"file.saveAs", "Save as...", cmd_save_as, NEEDS_TAB, 0, "alt+s"},
    {"file.new", "New file", cmd_new, NEEDS_NOTHING, 0, "ctrl+n"},
    {"file.picker", "Open a file (fuzzy)", cmd_picker, NEEDS_NOTHING, 0, "ctrl+p ctrl+o"},
    {"app.quit", "Quit", cmd_quit, NEEDS_NOTHING, IN_PANES, "ctrl+q"},
    {"edit.undo", "Undo", cmd_undo, EDITS, 0, "ctrl+z"},
    {"edit.redo", "Redo", cmd_redo, EDITS, 0, "ctrl+y"},
    {"edit.cut", "Cut", cmd_cut, EDITS, 0, "ctrl+x"},
    {"edit.copy", "Copy", cmd_copy, NEEDS_TAB, 0, "ctrl+c"},
    {"edit.paste", "Paste", cmd_paste, EDITS, 0, "ctrl+v"},
    {"edit.selectAll", "Select all", cmd_select_all, NEEDS_TAB, 0, "ctrl+a"},
    {"find.find", "Find in the document", cmd_find, NEEDS_TAB, 0, "ctrl+f"},
    {"find.next", "Find the next match", cmd_find_next, NEEDS_TAB, 0, "f3"},
    {"find.previous", "Find the previous match", cmd_find_previous, NEEDS_TAB, 0, "shift+f3"},
    {"find.replace", "Replace, asking at each match (y, n, a all, q)", cmd_replace, EDITS, 0, "ctrl+r"},
    {"search.project", "Search in the project's files", cmd_grep, NEEDS_NOTHING, 0, "alt+f f4"},
    {"nav.gotoLine", "Go to line", cmd_goto_line, NEEDS_TAB, 0, "ctrl+g"},
    {"app.help", "Help: key bindings", cmd_help, NEEDS_NOTHING, 0, "f1"},
    {"app.palette", "Command palette", cmd_palette, NEEDS_NOTHING, 0, "ctrl+e f2"},
    {"cursor.nextOccurrence", "Add a cursor at the next occurrence", cmd_next_occurrence, NEEDS_TAB, 0, "ctrl+d"},
    {"cursor.addAbove", "Add a cursor above", cmd_add_above, NEEDS_TAB, 0, "ctrl+alt+up alt+shift+up"},
    {"cursor.addBelow", "Add a cursor below", cmd_add_below, NEEDS_TAB, 0, "ctrl+alt+down alt+shift+down"},
    {"cursor.single", "Back to one cursor", cmd_single_cursor, NEEDS_TAB, 0, "escape"},
    {"tab.close", "Close the tab", cmd_close, NEEDS_TAB, 0, "ctrl+w"},
    {"tab.next", "Next tab", cmd_next_tab, NEEDS_TAB, 0, "ctrl+pagedown alt+right"},
    {"tab.previous", "Previous tab", cmd_previous_tab, NEEDS_TAB, 0, "ctrl+pageup"},
    {"terminal.toggle", "Terminal: show, focus, hide", cmd_terminal_toggle, NEEDS_NOTHING, IN_PANES, "ctrl+t"},
    {"terminal.hide", "Terminal: hide", cmd_terminal_hide, NEEDS_NOTHING, 0, ""},
    {"chat.toggle", "Agent chat: show, focus, back to the editor", cmd_chat_toggle, NEEDS_NOTHING, IN_PANES, "alt+a f6"},
    {"chat.hide", "Agent chat: hide", cmd_chat_hide, NEEDS_NOTHING, SCOPE_CHAT, ""},
    {"keys.bind", "Bind a key to a command", cmd_bind, NEEDS_NOTHING, 0, ""},
    {"keys.unbind", "Unbind a key", cmd_unbind, NEEDS_NOTHING, 0, ""},
    {"chat.stop", "Agent chat: stop the running answer", cmd_chat_stop, NEEDS_NOTHING, 0, ""},
    {"git.panel", "Git: status, stage, commit, diff", cmd_git_panel, NEEDS_NOTHING, 0, "alt+g f5"},
    {"server.restart", "Restart the server", cmd_restart, NEEDS_NOTHING, 0, ""},
    {"theme.reload", "Theme: read the server's current theme again", cmd_theme_reload, NEEDS_NOTHING, 0, ""},
    {"cursor.up", "Cursor up", cmd_up, NEEDS_TAB, 0, "up"},
    {"cursor.down", "Cursor down", cmd_down, NEEDS_TAB, 0, "down"},
    {"cursor.left", "Cursor left", cmd_left, NEEDS_TAB, 0, "left"},
    {"cursor.right", "Cursor right", cmd_right, NEEDS_TAB, 0, "right"},
    {"select.up", "Select up", cmd_select_up, NEEDS_TAB, 0, "shift+up"},
    {"select.down", "Select down", cmd_select_down, NEEDS_TAB, 0, "shift+down"},
    {"select.left", "Select left", cmd_select_left, NEEDS_TAB, 0, "shift+left"},
    {"select.right", "Select right", cmd_select_right, NEEDS_TAB, 0, "shift+right"},
    {"cursor.wordLeft", "Word left", cmd_word_left, NEEDS_TAB, 0, "ctrl+left"},
    {"cursor.wordRight", "Word right", cmd_word_right, NEEDS_TAB, 0, "ctrl+right"},
    {"select.wordLeft", "Select word left", cmd_select_word_left, NEEDS_TAB, 0, "ctrl+shift+left"},
    {"select.wordRight", "Select word right", cmd_select_word_right, NEEDS_TAB, 0, "ctrl+shift+right"},
    {"cursor.home", "Line start", cmd_home, NEEDS_TAB, 0, "home"},
    {"cursor.end", "Line end", cmd_end, NEEDS_TAB, 0, "end"},
    {"select.home", "Select to line start", cmd_select_home, NEEDS_TAB, 0, "shift+home"},
    {"select.end", "Select to line end", cmd_select_end, NEEDS_TAB, 0, "shift+end"},
    {"cursor.top", "Document start", cmd_top, NEEDS_TAB, 0, "ctrl+home"},
    {"cursor.bottom", "Document end", cmd_bottom, NEEDS_TAB, 0, "ctrl+end"},
    {"select.top", "Select to document start", cmd_select_top, NEEDS_TAB, 0, ""},
    {"select.bottom", "Select to document end", cmd_select_bottom, NEEDS_TAB, 0, ""},
    {"cursor.pageUp", "Page up", cmd_page_up, NEEDS_TAB, 0, "pageup"},
    {"cursor.pageDown", "Page down", cmd_page_down, NEEDS_TAB, 0, "pagedown"},
    {"select.pageUp", "Select page up", cmd_select_page_up, NEEDS_TAB, 0, "shift+pageup"},
    {"select.pageDown", "Select page down", cmd_select_page_down, NEEDS_TAB, 0, "shift+pagedown"},
    {"edit.newline", "New line (indented)", cmd_newline, EDITS, 0, "enter"},
    {"edit.tab", "Indent: the selected lines, else at the caret", cmd_indent, EDITS, 0, "tab"},
    {"edit.outdent", "Outdent the lines of the cursors", cmd_outdent, EDITS, 0, "shift+tab"},
    {"edit.deleteWordLeft", "Delete the word left", cmd_delete_word_left, EDITS, 0, "ctrl+backspace alt+backspace"},
    {"edit.deleteWordRight", "Delete the word right", cmd_delete_word_right, EDITS, 0, "ctrl+delete"},
    {"edit.toggleComment", "Comment or uncomment the lines", cmd_toggle_comment, EDITS, 0, "ctrl+/ ctrl+_"},
    {"edit.duplicateLines", "Duplicate the lines", cmd_duplicate, EDITS, 0, "ctrl+shift+d alt+shift+d"},
    {"edit.moveLinesUp", "Move the lines up", cmd_move_up, EDITS, 0, "alt+up"},
    {"edit.moveLinesDown", "Move the lines down", cmd_move_down, EDITS, 0, "alt+down"},
    {"edit.backspace", "Delete left", cmd_backspace, EDITS, 0, "backspace"},
    {"edit.delete", "Delete right", cmd_delete, EDITS, 0, "delete"},
    {"lsp.complete", "Completions from the language server", cmd_complete, EDITS, 0, "ctrl+space"},
    {"lsp.hover", "What the language server says of the symbol under the caret", cmd_hover, NEEDS_TAB, 0, "alt+k"},
    {"lsp.definition", "Go to the definition", cmd_definition, NEEDS_TAB, 0, "f12 ctrl+]"},
    {"nav.back", "Back to where the last jump came from", cmd_back, NEEDS_NOTHING, 0, "alt+left"},
    {"lsp.references", "Every reference to the symbol, in a list", cmd_references, NEEDS_TAB, 0, "shift+f12 f7"},
    {"lsp.rename", "Rename the symbol everywhere", cmd_rename, EDITS, 0, "f9"},
    {"lsp.format", "Format the document", cmd_format, EDITS, 0, "f10"},
    {"lsp.codeActions", "Code actions (quick fixes) at the caret", cmd_code_actions, EDITS, 0, "f8"},
    {"view.wrap", "Soft wrap: long lines continue below (on/off)", cmd_wrap, NEEDS_TAB, 0, "alt+z"},
    {"view.redraw", "Redraw the screen", cmd_redraw, NEEDS_NOTHING, IN_PANES, "ctrl+l"},
};

#define COMMAND_COUNT ((int)(sizeof commands / sizeof commands[0]))

const command_entry *commands_all(int *count)
{
    *count = COMMAND_COUNT;
    return commands;
}

const command_entry *command_find(const char *name)
{
    for (int i = 0; name && i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

void command_run(app *a, const char *name)
{
    a->need_paint = true;
    const command_entry *c = command_find(name);
    if (!c) {
        app_message(a, true, "Unknown command: %s", name);
        return;
    }
    tab *t = app_tab(a);
    if ((c->needs & NEEDS_TAB) && !t)
        return;
    if (c->needs == EDITS && t->read_only) {
        editor_refuse_edit(a, t);
        return;
    }
    c->run(a, t);
}

void commands_bind_defaults(app *a)
{
    for (int i = 0; i < COMMAND_COUNT; i++) {
        const char *k = commands[i].keys;
        while (*k) {
            size_t n = strcspn(k, " ");
            char key[32];
            snprintf(key, sizeof key, "%.*s", (int)n, k);
            bindings_add(a, key, commands[i].name);
            k += n;
            k += strspn(k, " ");
        }
    }
}
