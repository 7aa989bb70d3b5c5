/* ecp-tui's model: what the client keeps of the server's state, and the
 * functions through which it changes, each named for what happened.
 *
 * ecp-tui is a terminal editor that is a client of ecpd and nothing more.
 *
 * The server owns every document's text, cursors, undo history, tokens,
 * diagnostics and git state; this program keeps only what is on screen (the
 * lines of each tab's viewport, its cursors, the terminal pane's cells) and
 * asks for more when a notification says something changed. No request is
 * ever waited for: each answer arrives on the libuv loop, and the screen is
 * painted once per loop turn (ncurses sends the terminal only the cells that
 * changed). Columns are code points (the connection asks for utf-32).
 *
 * Three layers, each with its header: this model (model.c), which the others
 * include; the view (view.h, paint.c), which reads the model and paints it;
 * the input (input.h: keys, the commands table) and the requests that keep
 * the model in step with the server (editor.h). The view and the input do
 * not include each other.
 */
#ifndef ECP_TUI_MODEL_H
#define ECP_TUI_MODEL_H

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

#include "buf.h"
#include "json.h"
#include "rpc.h"

typedef struct token {
    int start, end; /* code point columns */
    int rgb;        /* -1: no colour */
} token;

typedef struct view_line {
    char *text;
    token *tokens;
    int token_count;
} view_line;

typedef struct diagnostic {
    int start_line, start_col, end_line, end_col;
    int severity; /* 1 error .. 4 hint */
    char *message;
} diagnostic;

typedef struct cursor {
    int line, col;        /* the caret (selection's active end) */
    bool has_selection;
    int anchor_line, anchor_col;
} cursor;

typedef enum git_mark { GIT_NONE = 0, GIT_ADDED, GIT_MODIFIED, GIT_DELETED } git_mark;

typedef struct line_mark {
    int line; /* 0-based */
    git_mark mark;
} line_mark;

/* A request kind whose answers replace each other: at most one is in flight,
 * and a wish for a newer one while it is sends one more when it lands. */
typedef struct refresh {
    bool in_flight, again;
} refresh_slot;

/* Another client's view of a document: its name and its cursors, drawn faintly. */
typedef struct other_client {
    int64_t client_id;
    char *name;
    cursor *cursors;
    int cursor_count;
} other_client;

/* An edit sent and not answered yet: sent again, in order, to a server that
 * replaced one that went away before answering it. */
typedef struct pending_edit {
    uint64_t seq;
    char *method;
    char *params; /* the members after documentId, as JSON text */
} pending_edit;

typedef struct tab {
    uint64_t serial;
    char *doc_id;
    char *uri;       /* as the server gave it */
    char *path;      /* absolute path, NULL for a document without a file */
    char *language;
    int64_t version;
    int line_count;
    bool dirty;
    bool changed_on_disk;
    bool read_only;  /* the server's, or a binary file's: keys that edit are refused here */
    bool binary;     /* a NUL byte was seen in its text */
    int top, left;   /* first line shown, first display column shown */
    view_line *lines; /* the viewport: lines [lines_start, lines_start + line_total) */
    int lines_start, line_total;
    diagnostic *diags;
    int diag_count;
    line_mark *marks;
    int mark_count;
    cursor *cursors; /* primary first */
    int cursor_count;
    cursor *known_cursors; /* the cursors as the server last told them, before any local echo */
    int known_cursor_count;
    refresh_slot viewport, cursors_refresh, info, clients;
    bool follow_cursor; /* scroll to the primary cursor when it next arrives */
    other_client *others; /* the other clients holding this document */
    int other_count;
    pending_edit *edits;  /* sent, not answered yet, oldest first */
    int edit_count;
    uint64_t edits_sent;  /* edits sent to this document, ever */
    uint64_t info_asked_at; /* edits_sent when the info in flight was asked for */
    bool reopening;       /* being opened again under a new server: its doc_id is stale until then */
    bool wrap;            /* long lines continue on the rows below (soft wrap) */
    bool wrap_set;        /* wrap was toggled here: the language's default no longer applies */
    bool refit_wrap;      /* scrolled to the caret counting lines not here yet as one row each */
    uint64_t predictions;       /* cursor moves predicted here before the server's answer */
    uint64_t cursors_asked_at;  /* predictions when the cursors in flight were asked for */
} tab;

typedef enum overlay_kind {
    OVERLAY_NONE = 0,
    OVERLAY_PICKER,  /* fuzzy file names, file/search */
    OVERLAY_GREP,    /* project search results, file/grep */
    OVERLAY_PALETTE, /* every command */
    OVERLAY_HELP,    /* key bindings */
    OVERLAY_GIT,     /* git status: stage, unstage, commit, diff */
    OVERLAY_DIFF,    /* one file's diff */
    OVERLAY_ACTIONS, /* a language server's code actions */
} overlay_kind;

typedef struct list_item {
    char *label;
    char *data;     /* a path, a command name */
    int line, col;  /* where to jump (grep) */
    int attr;       /* 0, or a colour role for diff lines */
} list_item;

typedef struct overlay {
    overlay_kind kind;
    char *title;
    buf query;
    list_item *items;
    int item_count;
    int *visible; /* indexes of the items shown (palette and help filter locally) */
    int visible_count;
    int selected, scroll;
    uint64_t generation; /* answers for an older query are dropped */
} overlay_state;

/* The language server's completions at the caret, shown under it. */
typedef struct completion_item {
    char *label;
    char *text;              /* what is inserted */
    bool has_range;          /* the item's text edit replaces this range, else the word before the caret */
    int start_line, start_col, end_line, end_col;
} completion_item;

typedef struct completion_popup {
    bool visible;
    completion_item *items;
    int item_count, selected, scroll;
    uint64_t generation;     /* answers for an older request are dropped */
} completion_popup;

/* Where a jump (go to definition) came from: Alt+Left goes back. */
typedef struct jump_place {
    char *path;
    int line, col;
} jump_place;

#define JUMP_HISTORY 64

/* A workspace edit's share for a file not open yet: applied once it is. */
typedef struct pending_open {
    uint64_t id;
    char *uri;
    char *edits; /* document/edit's edits, as JSON text */
} pending_open;

typedef struct app app;
typedef void (*prompt_done)(app *a, const char *answer); /* NULL: cancelled */
typedef void (*choice_done)(app *a, int key);            /* the key pressed */

typedef struct prompt {
    bool active;
    char *label;
    buf input;
    size_t cursor;        /* byte offset in input */
    bool fresh;           /* the input is the suggested answer: typing replaces it */
    prompt_done done;
    choice_done choose;   /* a question answered by one key */
    char *choices;        /* the keys that answer it */
    bool toggles;         /* Find's and Replace's: Alt+R, Alt+C, Alt+W switch regex, case, whole word */
} prompt;

typedef struct term_cell {
    char ch[16];
    int fg, bg; /* rgb, -1 default */
    bool bold, underline, inverse, italic;
} term_cell;

typedef struct terminal_pane {
    bool visible, focused;
    char *id;
    bool creating;
    int rows, cols;
    term_cell *cells;
    int cell_rows, cell_cols;
    int cursor_x, cursor_y;
    refresh_slot buffer;
    bool exited;
    buf early_input; /* typed before the shell existed: sent once it does */
} terminal_pane;

typedef enum chat_role { CHAT_USER, CHAT_ASSISTANT, CHAT_TOOL, CHAT_SYSTEM } chat_role;

/* One paragraph of the chat: what was asked, the answer as it streams, a tool
 * call and what became of it, or a failure the server reported. */
typedef struct chat_entry {
    chat_role role;
    buf text;
    char *tool_id; /* CHAT_TOOL: the call this entry follows */
    char *status;  /* CHAT_TOOL: waiting, running, done, failed, rejected */
} chat_entry;

typedef struct chat_pane {
    bool visible, focused;
    int rows;            /* the pane's height, its heading and its input line included */
    char *chat_id;       /* NULL until the first prompt is answered */
    char *model;
    bool running;        /* a turn runs: Escape stops it */
    bool prompting;      /* chat/prompt sent, not answered yet */
    chat_entry *entries;
    int entry_count;
    buf input;
    char *waiting_id;    /* a tool call waiting for approval */
    char *waiting_label; /* what it would do */
    int scroll;          /* display lines scrolled back from the end */
} chat_pane;

typedef struct queued_key {
    char *key;
    wint_t ch;
    bool printable;
    char *paste; /* a bracketed paste, inserted as it came (key is NULL) */
    size_t paste_len;
} queued_key;

typedef struct binding {
    char *key;
    char *command;
} binding;

/* A search in a document's lines, a chunk at a time (editor.c). */
typedef struct search_scan {
    int use;                  /* what a match is for */
    int from_line, from_col;  /* where it started */
    int next_line;            /* the first line of the next chunk */
    int chunk;                /* lines asked for at once; doubles */
    bool wrapped;             /* past the end, back from the first line */
} search_scan;

typedef struct colors {
    int fg, bg;             /* editor */
    int line_number, line_number_active;
    int selection, cursor_line;
    int status_fg, status_bg;
    int tab_active, tab_inactive;
    int added, modified, deleted;
    int error, warning;
} colors;

struct app {
    uv_loop_t *loop;
    uv_poll_t input;
    uv_prepare_t painter;
    uv_signal_t sigwinch;
    uv_timer_t git_timer;
    uv_timer_t message_timer;
    rpc_client *rpc;
    bool server_dead;
    bool connected_to_socket;
    char *socket_path;
    char *server_path;
    char *server_log;
    struct ecp_ssh *ssh;                 /* --ssh: the server is on this host, else NULL */
    struct ecp_ssh_forward *ssh_forward; /* --ssh --connect: the forwarder of its socket */
    char *workspace;
    char *repo_root;   /* NULL outside a git work tree */
    char *branch;
    tab **tabs;
    int tab_count, current;
    uint64_t next_serial;
    prompt prompt;
    overlay_state overlay;
    terminal_pane term;
    chat_pane chat;
    binding *bindings;  /* the built-in keys, then the server's */
    int binding_count;
    char *binding_key;  /* a key being bound, while its command is asked for */
    char *binding_note; /* what the binding being sent will say when it lands */
    colors colors;
    bool direct_color;
    SCREEN *screen;     /* a terminfo entry other than $TERM's (direct colour), else NULL */
    bool need_paint;
    bool quitting;
    char *message;      /* shown on the status line until the next key */
    bool message_is_error;
    buf clipboard;
    buf typed;          /* printable keys read in this turn, sent as one document/type */
    char *last_search;
    search_scan scan;
    char **started_languages;
    int started_language_count;
    int rows, cols;
    int pending_saves;  /* saves a quit waits for */
    bool quit_after_saves;
    int busy;           /* steps of a command waiting for the server: keys wait behind them */
    queued_key *queued;
    int queued_count;
    bool restarting;    /* a restarted server: recover our unsaved text, then offer to save it */
    bool restricted;    /* the workspace is untrusted and settings of its own are ignored */
    bool trust_asked;   /* "Trust this folder?" was asked: once per run */
    int64_t client_id;  /* initialize's clientId; -1 before it (or from a server without one) */
    int reopen_count;   /* tabs being opened again under a new server */
    int recovered_count; /* documents a new server gave back with their unsaved text */
    uint64_t restore_current; /* the tab that was current when the server went */
    uv_timer_t reconnect_timer;
    uv_timer_t presence_timer; /* asks who else holds the current document, now and then */
    int reconnect_tries;
    bool started_socket_server; /* this run started a socket server for the reconnection */
    bool pasting;        /* inside a bracketed paste: what is read is text, not keys */
    buf paste;           /* the paste so far */
    bool paste_too_big;  /* past PASTE_LIMIT: the rest is dropped */
    int paste_end_seen;  /* characters of the end marker read so far */
    completion_popup completion;
    char *hover;         /* the language server's hover text, shown in a box until the next key */
    char *trigger_characters; /* lsp.triggerCharacters: typing one asks for completions */
    jump_place jumps[JUMP_HISTORY];
    int jump_count;
    char **code_actions; /* the JSON text of each code action offered (OVERLAY_ACTIONS' items point here) */
    int code_action_count;
    char *code_actions_uri; /* the document they were offered for: its server runs their commands */
    char *rename_to;     /* the new name, while the position is asked for */
    pending_open *opens;
    int open_count;
    uint64_t next_open_id;
    int git_refreshes_left; /* viewports asked again after an edit, for the gutter's git marks */
    bool find_regex, find_case, find_word; /* how find and replace match */
    char *replace_with;  /* the replacement of the replace under way */
    int replaced;        /* how many it replaced so far */
    int replace_end_line, replace_end_col;   /* the end of the match asked about */
    int replace_from_line, replace_from_col; /* where the last search for the next match began */
    bool replace_rest;   /* 'a' was chosen: every match left is replaced without asking */
    int find_from_line, find_from_col;   /* where the find under way looks from */
    int find_match_line, find_match_col; /* the match found last, for its rank */
};

/* A bracketed paste kept in memory is at most this long; the rest is dropped, aloud. */
#define PASTE_LIMIT (16u << 20)

/* ---- the connection (model.c) ---- */

void app_message(app *a, bool error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Sends a request; false when the connection is closed (nothing was sent). */
bool app_call(app *a, const char *method, rpc_reply_fn reply, uint64_t tag, const char *fmt, ...);
char *json_dup_string(const json_doc *doc, json_ref ref);
int json_int_or(const json_doc *doc, json_ref ref, int fallback);
/* The server went away: what depended on it (its terminal, a running chat
 * turn, the keys waiting on a chain) is dropped; the documents stay. */
void model_server_lost(app *a, const char *why);

/* ---- text columns (model.c): UTF-8 in, code point columns out ---- */

#define TAB_WIDTH 4 /* display columns between tab stops */

int utf8_next(const char *s, int *len);
int text_display_col(const char *text, int col);
int text_col_at_display(const char *text, int display);
int text_cols(const char *text);
/* Byte offset of a code point column in one line. */
size_t col_to_byte(const char *text, size_t len, int col);
/* file:// and the path percent-encoded, as the language servers want a document named. */
char *file_uri(const char *path);
/* The path of a file:// URI (percent-decoded), or NULL for another scheme. */
char *path_of_uri(const char *uri);

/* ---- documents (model.c) ---- */

tab *app_tab(app *a);
tab *tab_by_serial(app *a, uint64_t serial);
tab *tab_by_doc(app *a, const char *doc_id);
/* The text of a line if it is in the viewport kept, else NULL. */
const char *view_text(const tab *t, int line);
/* Where the editor's lines go on the screen: rows [top, top + height). */
void editor_layout(const app *a, int *top, int *height);
/* A document the server opened (or reopened after a restart): its tab,
 * made if there is none for it yet, becomes the current one. */
tab *model_document_opened(app *a, const json_doc *doc, json_ref info);
void model_document_closed(app *a, tab *t);
void model_viewport_arrived(app *a, tab *t, const json_doc *doc, json_ref result);
void model_cursors_arrived(tab *t, const json_doc *doc, json_ref cursors);
/* Another client's cursors (document/didChangeCursors, document/clients). */
void model_other_cursors_arrived(tab *t, int64_t client_id, const char *name, const json_doc *doc, json_ref cursors);
/* document/clients: every client but this one. */
void model_clients_arrived(tab *t, int64_t self_id, const json_doc *doc, json_ref clients);
void model_client_left(app *a, int64_t client_id);
/* An edit sent to the document (it is dirty from now on, whatever an older answer says). */
void model_edit_sent(tab *t, uint64_t seq, const char *method, const char *params);
void model_edit_answered(tab *t, uint64_t seq);
/* Unsaved: dirty as the server says, or an edit sent and not answered yet. */
bool tab_unsaved(const tab *t);
void model_info_arrived(tab *t, const json_doc *doc, json_ref result);
/* uri: where it was saved when that changed, else NULL. */
void model_document_saved(app *a, tab *t, const char *uri);
void tab_free(tab *t);
void parse_position(const json_doc *doc, json_ref pos, int *line, int *col);
/* A request kind whose answers replace each other: true when one may be sent now. */
bool refresh_begin(refresh_slot *r);
/* Ends a refresh; true when another was wished for meanwhile. */
bool refresh_end(refresh_slot *r);

/* ---- the workspace (model.c) ---- */

void model_repository_arrived(app *a, const json_doc *doc, json_ref result);
void model_branch_arrived(app *a, const json_doc *doc, json_ref result);
/* restricted: the workspace is untrusted and has settings that trust alone applies. */
void model_trust_arrived(app *a, const json_doc *doc, json_ref result);

/* ---- the panes (model.c) ---- */

void model_terminal_screen_arrived(terminal_pane *tp, const json_doc *doc, json_ref buffer);
/* A paragraph of the chat; the pane scrolls back to the end to show it. */
chat_entry *chat_add_entry(chat_pane *c, chat_role role, const char *text);
void chat_clear_waiting(chat_pane *c);
/* The tool call that waited was approved or rejected here. */
void model_chat_tool_answered(chat_pane *c, bool approve);
/* chat/contentReceived: text streams in, a tool call is made, runs, ends. */
void model_chat_content_arrived(app *a, const json_doc *doc, json_ref params);
void chat_free(app *a);

/* ---- the theme (model.c) ---- */

void colors_default(app *a);
void model_theme_arrived(app *a, const json_doc *doc, json_ref theme);
/* Columns left of the text: git mark, line number, space. */
int gutter_width(const tab *t);
/* How many rows a line takes on screen (more than one when it wraps). */
int tab_line_rows(const app *a, const tab *t, int line);

/* ---- key bindings as the server last told them (model.c) ---- */

/* The command a key runs: its last binding. NULL when it is not bound. */
const char *binding_command(const app *a, const char *key);
void bindings_add(app *a, const char *key, const char *command);
void bindings_clear(app *a);

/* ---- the queue of keys behind a command waiting for the server (model.c) ---- */

void queue_push(app *a, const char *key, wint_t ch, bool printable);
void queue_push_paste(app *a, const char *text, size_t len);
/* Takes every waiting key out of the queue: the caller owns the array and its keys. */
queued_key *queue_take(app *a, int *count);
void queue_drop(app *a);

#endif
