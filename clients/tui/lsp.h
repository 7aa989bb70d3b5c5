/* The language server's features through the core's lsp methods: the
 * completion popup, hover, go to definition and back, references, rename,
 * format and code actions. Each asks the server and changes the document
 * only through document edits, so undo and the other clients follow. */
#ifndef ECP_TUI_LSP_H
#define ECP_TUI_LSP_H

#include "model.h"

/* lsp.trigger_characters: read at the start of a session, and again when the setting changes. */
void lsp_read_settings(app *a);
/* Text was typed: a trigger character opens the popup, more of a word narrows it, anything else closes it. */
void lsp_after_typing(app *a, tab *t, const char *text, size_t len);
void lsp_complete(app *a, tab *t);
void lsp_completion_move(app *a, int step);
void lsp_completion_accept(app *a);
void lsp_completion_close(app *a);
void lsp_hover(app *a, tab *t);
void lsp_definition(app *a, tab *t);
void lsp_back(app *a, tab *t);
void lsp_references(app *a, tab *t);
void lsp_rename(app *a, tab *t);
void lsp_format(app *a, tab *t);
void lsp_code_actions(app *a, tab *t);
/* The code action at index of those offered was chosen in the list. */
void lsp_code_action_chosen(app *a, int index);
void lsp_free(app *a);

#endif
