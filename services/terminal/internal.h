/* internal: what the files of services/terminal share and nobody else sees.
 *
 * screen.c is the libvterm side: a screen with its scrollback ring, fed the
 * program's bytes. process.c starts programs on pseudo-terminals and finds
 * and signals the processes of a session. local.c ties them to the loop.
 */
#ifndef ECPD_TERMINAL_INTERNAL_H
#define ECPD_TERMINAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "terminal/interface.h"

/* ----- the screen (screen.c) ------------------------------------------------------ */

typedef struct term__screen term__screen;

typedef struct term__screen_events {
    /* Bytes the terminal answers with (device attributes, cursor reports):
     * they go to the program's input. */
    void (*reply)(void *ctx, const char *data, size_t len);
    /* The program set the title. */
    void (*title)(void *ctx, const char *title);
} term__screen_events;

/* A screen of rows x cols with room for scrollback lines above it. events
 * (borrowed) may be NULL. */
term__screen *term__screen_new(unsigned rows, unsigned cols, size_t scrollback, const term__screen_events *events,
                               void *ctx);
void term__screen_free(term__screen *self);

/* Interprets the program's bytes, in order; a sequence cut off at the end is
 * completed by the next call. Stops early, at a point of its choosing, once
 * the monotonic clock (uv_hrtime) passes deadline_ns (0: never), and returns
 * how many bytes it consumed. */
size_t term__screen_feed(term__screen *self, const char *data, size_t len, uint64_t deadline_ns);

/* Whether runs of plain text may be skipped (see interface.h); on by
 * default. The tests compare both ways. */
void term__screen_set_fast_forward(term__screen *self, bool on);
/* Bytes skipped so far. */
uint64_t term__screen_skipped(const term__screen *self);

void term__screen_resize(term__screen *self, unsigned rows, unsigned cols);
unsigned term__screen_rows(const term__screen *self);
unsigned term__screen_cols(const term__screen *self);

/* The viewport's scroll: lines up into the scrollback. Returns whether it moved. */
bool term__screen_scroll(term__screen *self, long lines);
size_t term__screen_scroll_offset(const term__screen *self);
size_t term__screen_scrollback_size(const term__screen *self);
void term__screen_cursor(const term__screen *self, unsigned *row, unsigned *col);

/* Fills cols cells of viewport row `row`. */
void term__screen_row(const term__screen *self, unsigned row, terminal_cell *out);

/* The viewport rows changed since the last call, ascending, into rows (room
 * for term__screen_rows entries); returns their number and forgets them. */
size_t term__screen_take_damage(term__screen *self, unsigned *rows);
/* Marks every viewport row changed. */
void term__screen_damage_all(term__screen *self);

/* ----- the service (local.c) ------------------------------------------------------ */

/* What the service holds for its terminals right now: backlogs and input
 * queues, in bytes. For the tests of its bounds. */
size_t term__buffered(const terminal_service *self);

/* ----- processes (process.c) ------------------------------------------------------ */

typedef struct term__spawn {
    const char *path;          /* resolved: absolute or relative to the server's cwd */
    char *const *argv;
    char *const *envp;
    const char *cwd;
    unsigned cols, rows;
} term__spawn;

/* Opens a pseudo-terminal and starts the program on it as the leader of a
 * new session with the terminal as its controlling terminal, its signals at
 * their defaults and unblocked. *master (close-on-exec, non-blocking) and
 * *pid receive the master side and the process, *tty the slave side's device
 * number. ECP_ENOTFOUND, ECP_EACCES or ECP_EIO with the reason. */
int term__spawn_start(const term__spawn *spec, int *master, pid_t *pid, dev_t *tty, ecp_error *err);

/* Looks a program up as a shell would: a name with a '/' as it is, else in
 * PATH. Appends the path to out (a buf). ECP_ENOTFOUND, ECP_EACCES. */
struct buf;
int term__resolve_program(const char *name, struct buf *out, ecp_error *err);

/* The processes of terminals, read from /proc: those whose session is one
 * of ours, and those (of our user) that have one of our terminals (the slave
 * sides' devices; 0 for none) open, as a process that left the session with
 * setsid but still uses the terminal has.
 *
 * Numbers are reused, and this machine may hand out the same pid within
 * seconds. A terminal's device number cannot be reused while its master side
 * is open, so the service keeps the master open until the session is ended.
 * A session id can be reused once its leader is reaped and every member has
 * gone: a process that is its own session's leader under a reaped leader's
 * number is then someone else's new session, never ours to signal. */
typedef struct term__session {
    pid_t sid;          /* the leader's pid */
    dev_t tty;          /* the slave side's device; 0 for none */
    bool leader_reaped; /* the leader has been waited for: its number may be reused */
} term__session;

typedef struct term__member {
    pid_t pid, pgid, sid;
} term__member;

/* Lists the live (not zombie) processes of those sessions, never the server
 * itself. *out (caller frees) receives *n members. */
void term__session_members(const term__session *sessions, size_t count, term__member **out, size_t *n);

/* SIGHUP then SIGCONT to every process group of those sessions' processes. */
void term__session_hangup(const term__session *sessions, size_t count);

/* SIGKILL to every process of those sessions, whether it ignores SIGHUP or
 * not. Returns how many processes were left to kill. */
size_t term__session_kill(const term__session *sessions, size_t count);

#endif
