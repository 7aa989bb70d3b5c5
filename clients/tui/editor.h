/* The requests that keep the model in step with the server, and the
 * operations the commands run: each asks the server and, when the answer
 * comes, hands it to the model. */
#ifndef ECP_TUI_EDITOR_H
#define ECP_TUI_EDITOR_H

#include "model.h"

/* main.c: the connection */
void app_quit_now(app *a);
void app_restart_server(app *a);
/* Asks once per run whether to trust the workspace; why says what trusting would let run. */
void app_ask_trust(app *a, const char *why);


/* editor.c: documents */
/* Asks again for the language servers of the languages opened so far (after the folder is trusted). */
void editor_start_languages_again(app *a);
void editor_open_path(app *a, const char *path, int line, int col);
void editor_adopt_document(app *a, const json_doc *doc, json_ref info, int line, int col);
void tab_request_viewport(app *a, tab *t);
void tab_request_cursors(app *a, tab *t);
void tab_request_git(app *a, tab *t);
/* document/clients: who else holds it, and where their cursors are. */
void tab_request_clients(app *a, tab *t);
/* A new server gave back the unsaved text it could (already adopted): the
 * other tabs open again by uri, then each gets its cursors and the edits the
 * old server never answered, then the keys typed meanwhile are replayed. */
void editor_restore_tabs(app *a, const json_doc *doc, json_ref recovered, int recovered_count);
void editor_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params);
/* Sends the printable keys read this turn as one document/type. */
void editor_flush_typed(app *a);
void editor_click(app *a, int row, int col);
void editor_scroll(app *a, int lines);

/* editor.c: what the commands do (t is the current tab) */
void editor_new_file(app *a);
void editor_reload_theme(app *a);
void editor_quit(app *a);
void editor_save(app *a, tab *t);
void editor_save_as(app *a, tab *t);
void editor_close_tab(app *a, tab *t);
void editor_switch_tab(app *a, int step);
void editor_undo(app *a, tab *t, bool redo);
void editor_copy(app *a, tab *t, bool cut);
void editor_paste(app *a, tab *t);
void editor_select_all(app *a, tab *t);
void editor_type(app *a, tab *t, const char *text, size_t len);
void editor_newline(app *a, tab *t);
void editor_delete(app *a, tab *t, const char *direction);
void editor_find(app *a, tab *t);
void editor_find_next(app *a, tab *t);
void editor_find_previous(app *a, tab *t);
/* Alt+R, Alt+C, Alt+W in the find prompt: regex, case, whole word. */
void editor_find_toggle(app *a, char which);
void editor_indent(app *a, tab *t);
void editor_outdent(app *a, tab *t);
void editor_delete_word(app *a, tab *t, const char *direction);
void editor_toggle_comment(app *a, tab *t);
void editor_duplicate_lines(app *a, tab *t);
void editor_move_lines(app *a, tab *t, const char *direction);
void editor_replace(app *a, tab *t);
void editor_goto_line(app *a, tab *t);
void editor_next_occurrence(app *a, tab *t);
void editor_add_cursor(app *a, tab *t, int delta);
void editor_single_cursor(app *a, tab *t);
void editor_move(app *a, tab *t, const char *direction, const char *unit, bool select);
void editor_page(app *a, tab *t, int direction, bool select);
/* A bracketed paste: the text inserted as one edit, line breaks as \n, never indented again. */
void editor_paste_text(app *a, tab *t, const char *text, size_t len);
/* document/edit's edits (JSON text of the array's members), as one undoable step. */
void editor_apply_edits(app *a, tab *t, const char *edits);
/* The range selected, then text typed over it: the caret ends after the text. */
void editor_replace_range(app *a, tab *t, int sl, int sc, int el, int ec, const char *text);
/* The file at a position: its tab if open, else opened. */
void editor_jump(app *a, const char *path, int line, int col);
void editor_toggle_wrap(app *a, tab *t);
void editor_redraw(app *a);
/* Says the document cannot be changed here (read-only, or binary). */
void editor_refuse_edit(app *a, tab *t);
/* Shared by editor.c and find.c: the view follows the caret until the
 * cursors' answer; a chain of requests ends with the tab's cursors asked
 * again (chain_with_cursors), and its answer finds its tab (chain_tab). */
void tab_follow(app *a, tab *t);
void chain_finish(app *a, tab *t);
void chain_with_cursors(app *a, tab *t, rpc_reply_fn next, uint64_t tag);
tab *chain_tab(app *a, uint64_t serial, const json_doc *doc, json_ref result);

/* panes.c: the prompt line, the overlays, git, the terminal, recovery */
void prompt_ask(app *a, const char *label, const char *initial, prompt_done done);
/* A path: the text given stays when typing begins (a folder to name a file in). */
void prompt_ask_path(app *a, const char *label, const char *initial, prompt_done done);
void prompt_choose(app *a, const char *question, const char *choices, choice_done choose);
bool prompt_key(app *a, wint_t ch, bool is_key);
void prompt_close(app *a);
void overlay_open(app *a, overlay_kind kind, const char *title);
void overlay_close(app *a);
bool overlay_key(app *a, const char *key, wint_t ch, bool printable);
void overlay_add(app *a, const char *label, const char *data, int line, int col, int attr);
void overlay_refilter(app *a);
void picker_open(app *a);
void palette_open(app *a);
void help_open(app *a);
void grep_start(app *a);
void git_panel_open(app *a);
void git_refresh_branch(app *a);
void terminal_toggle(app *a);
void terminal_hide(app *a);
void terminal_key(app *a, const char *key, wint_t ch, bool printable);
void terminal_layout(app *a);
void terminal_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params);
void terminal_free(app *a);
void recovery_offer(app *a);

/* chat.c: the agent chat */
void chat_layout(app *a);
void chat_toggle(app *a);
void chat_hide(app *a);
void chat_key(app *a, const char *key, wint_t ch, bool printable);
void chat_stop(app *a);
void chat_handle_notification(app *a, const char *method, const json_doc *doc, json_ref params);

#endif
