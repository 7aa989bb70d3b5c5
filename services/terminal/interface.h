/* terminal: shells on real pseudo-terminals, with their screens.
 *
 * The terminal service runs shells (or any program) on pseudo-terminals and
 * keeps what they show: each terminal's output is read by the loop, fed to a
 * libvterm screen with a scrollback ring, and reported to listeners as raw
 * output, changed screen rows, title changes and the program's exit. A
 * client reads the screen cell by cell (with colours and attributes), types
 * into it, resizes it and scrolls through its history. Terminals belong to
 * the service, not to whoever created them: they live on when that client
 * disconnects, so a client that comes back finds them as it left them.
 *
 * What it promises:
 *
 * - Processes. Each program runs as the leader of a session of its own with
 *   the terminal as its controlling terminal, so job control works and every
 *   process it starts stays in that session (background jobs in process
 *   groups of their own included). Closing a terminal (terminal_close,
 *   terminal_close_all) and freeing the service end every process of the
 *   terminal: SIGHUP (and SIGCONT, for stopped jobs) to each of its process
 *   groups, then, after TERMINAL_KILL_GRACE_MS, SIGKILL to each process still
 *   there, whether it ignores SIGHUP (`nohup`, `trap '' HUP`) or not. The
 *   terminal's processes are those of its session, and those that moved to
 *   a session of their own (`setsid`) but still have the terminal open; a
 *   daemon that also let go of the terminal (its descriptors closed or sent
 *   elsewhere) has left it and is spared. The service reaps its own
 *   children (a SIGCHLD handler that waits for its own pids only), so no
 *   zombie is left behind; the other
 *   processes of a session are not its children and are reaped by whoever
 *   adopts them. Closing answers at once; the grace period runs on the loop.
 *   Freeing the service waits for it (at most TERMINAL_KILL_GRACE_MS plus the
 *   time SIGKILL takes).
 *
 * - Output. A thread of each terminal reads its pseudo-terminal as the
 *   program writes (each read may wait for the kernel's line discipline,
 *   which the loop must not), and the loop takes what it read into a
 *   backlog, a chunk at a time or as soon as the program pauses. The loop
 *   interprets the backlog
 *   once per loop turn: it feeds it to libvterm, then emits what it fed as
 *   on_output (in pieces of at most TERMINAL_OUTPUT_CHUNK bytes, never
 *   cutting a UTF-8 sequence), then the title if it changed, then the rows of
 *   the viewport that changed (on_screen, once per turn per terminal). A
 *   small amount of output (what typing produces) is interpreted in the turn
 *   that read it; a flood is gathered for up to TERMINAL_BATCH_MS so that it
 *   is interpreted in large pieces.
 *
 * - Bounded memory and a loop that keeps answering. What a terminal holds is
 *   bounded: its backlog (TERMINAL_BACKLOG_MAX: when it is full, the service
 *   stops reading the pseudo-terminal, so a program that floods it blocks in
 *   its own write until the backlog drains), its queue of input for the
 *   program (TERMINAL_INPUT_MAX: a program that never reads its input gets
 *   no more, and terminal_write fails), its screen (rows x cols cells) and its
 *   scrollback (the lines asked for, at most TERMINAL_SCROLLBACK_MAX_LINES
 *   and TERMINAL_SCROLLBACK_MAX_BYTES: the oldest lines go first). Each turn
 *   interprets for at most about TERMINAL_TURN_BUDGET_MS, so other requests
 *   are answered between the pieces of a flood. Listeners receive output
 *   synchronously: the service keeps nothing for them once on_output
 *   returns.
 *
 * - Held output. A listener that cannot pass on more for now (its clients
 *   stopped reading) holds the service's output (terminal_service_hold_output)
 *   until they catch up. While it is held, no terminal's pseudo-terminal is
 *   read, so its program blocks in its write as it would on a real terminal
 *   nobody reads, and no more output is reported: the backlog read before the
 *   hold is still interpreted (the screens stay current and on_screen still
 *   comes) but its bytes are reported only on release, in order, with the
 *   exit of a program that ended meanwhile after them. Input, resizing and
 *   everything else go on.
 *
 * - Fast floods. Interpreting text costs libvterm a copy of the whole screen
 *   per line scrolled, so a long run of plain text (printable characters and
 *   line ends, no escape sequence) that scrolls more lines than the screen
 *   and the scrollback can hold is skipped up to the lines that will still
 *   be visible or in the scrollback when the run ends: the screen and the
 *   scrollback come out exactly as if every line had been interpreted. This
 *   is only done when nothing the skipped text could touch differs (the
 *   main screen, no scroll margins, the cursor at the start of the bottom
 *   row). on_output still carries every byte.
 *
 * - Bad input. Output that is not valid UTF-8 is shown as U+FFFD; malformed
 *   escape sequences are ignored as libvterm ignores them; neither can make
 *   the service fail.
 *
 * Everything here runs on the loop thread. Functions return 0 or a negative
 * ECP_STATUS code with an optional ecp_error whose message names the
 * terminal and the reason.
 */
#ifndef ECPD_TERMINAL_INTERFACE_H
#define ECPD_TERMINAL_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "error.h"
#include "log.h"

#define TERMINAL_DEFAULT_COLS 80
#define TERMINAL_DEFAULT_ROWS 24
#define TERMINAL_DEFAULT_SCROLLBACK 1000
#define TERMINAL_MAX_COLS 1000
#define TERMINAL_MAX_ROWS 500
#define TERMINAL_SCROLLBACK_MAX_LINES 100000
#define TERMINAL_SCROLLBACK_MAX_BYTES ((size_t)64 << 20)
#define TERMINAL_MAX_COUNT 64

#define TERMINAL_BACKLOG_MAX ((size_t)4 << 20)
#define TERMINAL_INPUT_MAX ((size_t)1 << 20)
#define TERMINAL_OUTPUT_CHUNK ((size_t)64 << 10)
#define TERMINAL_BATCH_MS 32
#define TERMINAL_TURN_BUDGET_MS 4
/* Long enough for a program that handles SIGHUP to finish its clean-up (a
 * shell's EXIT trap that removes a lock file, an editor writing its swap
 * file): SIGKILL leaves such things behind for the user's next shell. */
#define TERMINAL_KILL_GRACE_MS 1000

typedef struct terminal_service terminal_service;

/* ----- the service ------------------------------------------------------------ */

typedef struct terminal_service_options {
    /* The shell a terminal runs when its creator names none. This is where a
     * setting such as `terminal.integrated.shell` comes in: whoever reads
     * settings passes it here (or later to terminal_service_set_shell).
     * NULL: $SHELL, else /bin/sh. Copied. */
    const char *shell;
    /* The working directory of a terminal whose creator names none (the
     * workspace). NULL, or a directory that does not exist: the server's own
     * working directory. Copied. */
    const char *cwd;
} terminal_service_options;

/* Creates the service on loop (borrowed; it must outlive the service). log
 * may be NULL; options may be NULL. Returns NULL only when the loop refuses
 * a handle. */
terminal_service *terminal_service_new(uv_loop_t *loop, ecp_logger *log, const terminal_service_options *options);

/* Ends every process of every terminal (see above: SIGHUP, the grace period,
 * SIGKILL, and the reaping of its own children, waited for here), closes
 * every handle and frees the service. Listeners are dropped without being
 * told. The loop should run once more afterwards so that libuv releases the
 * handles. */
void terminal_service_free(terminal_service *self);

/* Replaces the default shell (NULL: back to $SHELL, else /bin/sh). Terminals
 * already running keep theirs. */
void terminal_service_set_shell(terminal_service *self, const char *shell);

/* The shell a terminal created now without a shell of its own would run. */
const char *terminal_service_shell(const terminal_service *self);

/* ----- terminals ---------------------------------------------------------------- */

typedef struct terminal_create_options {
    const char *shell;   /* a path, or a name looked up in PATH; NULL: the service's default */
    const char *cwd;     /* NULL: the service's default */
    /* Variables added to the server's environment, as "NAME=value", after
     * TERM=xterm-256color and COLORTERM=truecolor (so they may override them). */
    const char *const *env;
    size_t env_count;
    unsigned cols, rows; /* 0: 80 x 24; at most TERMINAL_MAX_COLS x TERMINAL_MAX_ROWS */
    size_t scrollback;   /* lines kept above the screen; at most TERMINAL_SCROLLBACK_MAX_LINES */
} terminal_create_options;

/* Starts a terminal. bash, zsh and sh run as interactive login shells
 * (`-il`), as editors start them; any other program runs without
 * arguments. *id_out (caller frees) receives the new terminal's id,
 * "terminal-<n>-<ms>". Fails with ECP_ERANGE for cols, rows or scrollback
 * out of range, ECP_ENOTFOUND for a shell or cwd that does not exist,
 * ECP_EACCES for one that cannot be used, ECP_ETOOBIG when
 * TERMINAL_MAX_COUNT terminals exist, and ECP_EIO when the system refuses a
 * pseudo-terminal or a process; the message says which and why. */
int terminal_create(terminal_service *self, const terminal_create_options *options, char **id_out, ecp_error *err);

/* Closes a terminal: its processes are ended (see above), its screen is
 * freed, and no event names it afterwards. ECP_ENOTFOUND for an unknown id.
 * Safe from inside a listener. */
int terminal_close(terminal_service *self, const char *id);

/* Closes every terminal. */
void terminal_close_all(terminal_service *self);

/* Queues len bytes for the program's input (it reads them as typed keys)
 * and writes what the pseudo-terminal takes now; the rest goes when it is
 * writable, never blocking the loop. ECP_ENOTFOUND, ECP_ESTATE when the
 * program has exited, ECP_ETOOBIG when the queue would pass
 * TERMINAL_INPUT_MAX (the program is not reading its input). */
int terminal_write(terminal_service *self, const char *id, const char *data, size_t len, ecp_error *err);

/* Sets the screen's size and tells the program (SIGWINCH through the
 * pseudo-terminal). ECP_ENOTFOUND; ECP_ERANGE for 0 or more than the
 * maximum. */
int terminal_resize(terminal_service *self, const char *id, unsigned cols, unsigned rows, ecp_error *err);

/* Moves the viewport `lines` up into the scrollback (negative: down),
 * stopping at its ends. ECP_ENOTFOUND. */
int terminal_scroll(terminal_service *self, const char *id, long lines, ecp_error *err);
int terminal_scroll_to_bottom(terminal_service *self, const char *id, ecp_error *err);

typedef struct terminal_info {
    /* Borrowed from the service: valid until the terminal is closed or its
     * title changes, and never across a loop turn. */
    const char *id;
    const char *shell;
    const char *cwd;
    const char *title; /* the shell's path until the program sets one (OSC 0 or 2) */
    unsigned cols, rows;
    bool running;      /* false once the program has exited */
    int exit_code;     /* when !running: its status, or 128 + the signal that ended it */
    int pid;
} terminal_info;

/* ECP_ENOTFOUND for an unknown id. */
int terminal_get_info(const terminal_service *self, const char *id, terminal_info *out);

/* The terminals in the order they were created. *out (caller frees the
 * array, not the strings) receives *count entries. */
void terminal_list(const terminal_service *self, terminal_info **out, size_t *count);

/* One cell of the viewport. */
typedef struct terminal_cell {
    /* The cell's characters as UTF-8 (a base character and the combining
     * marks on it): " " for an empty cell, "" for the right half of a wide
     * character (the cell before it holds the character). */
    char text[25];
    uint8_t width;     /* 2 for a wide character, 0 for its right half, else 1 */
    bool has_fg, has_bg; /* false: the terminal's default colour */
    uint32_t fg, bg;     /* 0xRRGGBB, from libvterm's palette for indexed colours */
    bool bold, italic, underline, dim, inverse;
} terminal_cell;

/* What a client paints: the viewport (the screen, or part of the scrollback
 * and the top of the screen when scrolled back). */
typedef struct terminal_viewport {
    unsigned rows, cols;
    terminal_cell *cells;    /* rows x cols, row by row; free with terminal_viewport_free */
    unsigned cursor_row, cursor_col; /* on the screen, not counting the scroll */
    size_t scroll_offset;    /* lines scrolled up into the scrollback */
    size_t scrollback_size;  /* lines in the scrollback */
} terminal_viewport;

/* ECP_ENOTFOUND for an unknown id. */
int terminal_get_viewport(const terminal_service *self, const char *id, terminal_viewport *out);
void terminal_viewport_free(terminal_viewport *viewport);

/* ----- listeners (callbacks on the loop thread) ---------------------------------- */

/* The strings and arrays passed are valid during the call only. A listener
 * may call any function of the service, terminal_close included (the
 * terminal then sends nothing more). */
typedef struct terminal_listener {
    /* Bytes the program wrote, in order, as read. */
    void (*on_output)(void *ctx, const char *id, const char *data, size_t len);
    /* Rows of the viewport (0 = top) whose contents changed, ascending. */
    void (*on_screen)(void *ctx, const char *id, const unsigned *rows, size_t count);
    /* The program set the title (OSC 0 or 2). */
    void (*on_title)(void *ctx, const char *id, const char *title);
    /* The program exited, after its last output was reported. */
    void (*on_exit)(void *ctx, const char *id, int exit_code);
} terminal_listener;

/* Holds every terminal's output (see "Held output" above), from the next
 * piece on (a listener may call it from inside on_output). Holds count: the
 * output resumes when each hold has been released. Releasing a service that
 * is not held does nothing. */
void terminal_service_hold_output(terminal_service *self);
void terminal_service_release_output(terminal_service *self);
bool terminal_service_output_held(const terminal_service *self);

/* listener is borrowed (usually a static const) until unsubscribed. */
void terminal_subscribe(terminal_service *self, const terminal_listener *listener, void *ctx);
bool terminal_unsubscribe(terminal_service *self, const terminal_listener *listener, void *ctx);

#endif
