/* The input: keys read from the terminal, named as key bindings name them,
 * and run through the commands table. The table (commands.c) is the one list
 * of commands: it drives the dispatch, F1's help, the palette and the
 * built-in key bindings, and names each command as the keybindings methods do. */
#ifndef ECP_TUI_INPUT_H
#define ECP_TUI_INPUT_H

#include "model.h"

typedef enum command_needs {
    NEEDS_NOTHING = 0,
    NEEDS_TAB = 1,      /* does nothing without a document */
    EDITS = 2 | 1,      /* changes the document: refused on a read-only one */
} command_needs;

typedef enum command_scope {
    SCOPE_EDITOR = 0,
    SCOPE_TERMINAL = 1, /* its key works while the terminal pane has the keys */
    SCOPE_CHAT = 2,     /* its key works while the chat pane has the keys */
} command_scope;

typedef struct command_entry {
    const char *name;  /* as key bindings name it: file.save */
    const char *help;  /* F1's and the palette's line */
    void (*run)(app *a, tab *t);
    command_needs needs;
    unsigned scopes;   /* command_scope bits beyond the editor */
    const char *keys;  /* the built-in keys, separated by spaces */
} command_entry;

/* commands.c */
const command_entry *commands_all(int *count);
const command_entry *command_find(const char *name);
/* Runs a command by name; an unknown name is said on the status line. */
void command_run(app *a, const char *name);
/* The built-in bindings, from the table. */
void commands_bind_defaults(app *a);

/* input.c */
/* Reads every key waiting on the terminal. */
void input_read(app *a);
/* The terminal changed size. */
void input_resized(app *a);
/* A key as the keys read here are named: lower case, modifiers as ctrl+alt+shift+. */
char *key_canonical(const char *written);
void keybindings_reload(app *a);
void keys_bind(app *a);
void keys_unbind(app *a);
/* A command whose next step needs the server's answer (the selection, the
 * cursors) holds the keys typed meanwhile, so they apply after it, in order. */
void chain_begin(app *a);
void chain_end(app *a);
/* The server is back and the tabs with it: the keys typed meanwhile run, in order. */
void keys_replay(app *a);

#endif
