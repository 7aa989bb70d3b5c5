/* process: a child process with piped stdio, watched by the loop.
 *
 * Starts argv with our environment plus what env_add sets, in cwd, with its
 * stdin and stdout as pipes when asked; output arrives through on_output as
 * it comes, its end once, and the exit once. Killing (ecp_process_kill, or
 * closing a child that still runs) sends SIGTERM, then SIGKILL when the child
 * has not exited after grace_ms (0: SIGKILL at once); own_group puts the child
 * in a process group of its own and signals the whole group, so what it started
 * goes with it.
 *
 * Closing releases the owner: no callback runs after ecp_process_close, and
 * the process frees itself once the child is gone and the loop has let go of
 * its handles.
 */
#ifndef ECPD_PROCESS_H
#define ECPD_PROCESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "error.h"
#include "shared.h"

typedef struct ecp_process ecp_process;

typedef enum ecp_process_stderr {
    ECP_STDERR_IGNORE = 0,  /* /dev/null */
    ECP_STDERR_INHERIT,     /* ours */
    ECP_STDERR_FD,          /* stderr_fd (the caller keeps and closes it) */
    ECP_STDERR_PIPE,        /* a pipe, read to on_error_output */
} ecp_process_stderr;

typedef struct ecp_process_options {
    const char *const *argv;    /* NULL-terminated; argv[0] is the program, looked up in PATH */
    const char *const *env_add; /* "NAME=value" set on top of our environment; NULL: ours as it is */
    const char *cwd;            /* NULL: ours */
    bool pipe_stdin;            /* else /dev/null */
    bool pipe_stdout;           /* else /dev/null */
    ecp_process_stderr stderr_to;
    int stderr_fd;
    bool own_group;
    uint64_t grace_ms;
    /* Closing lets a child that still runs go on (it reads end of file on
     * its stdin and is expected to leave), and forgets it at once. */
    bool leave_running;
    void *ctx;
    /* stdout's bytes as they come (valid during the call) */
    void (*on_output)(void *ctx, const char *data, size_t len);
    /* stderr's bytes as they come, with ECP_STDERR_PIPE (valid during the call) */
    void (*on_error_output)(void *ctx, const char *data, size_t len);
    /* stdout ended (0) or failed (a libuv error), once */
    void (*on_output_end)(void *ctx, int status);
    /* the child exited: its status, or the signal that ended it */
    void (*on_exit)(void *ctx, int64_t status, int term_signal);
} ecp_process_options;

/* Starts the child. Returns NULL with err set (ECP_ENOTFOUND, ECP_EACCES or
 * ECP_EIO, and libuv's reason) when it cannot start. */
ecp_process *ecp_process_start(uv_loop_t *loop, const ecp_process_options *options, ecp_error *err);

/* Writes to the child's stdin (copied). Returns false once stdin is closed. */
bool ecp_process_write(ecp_process *self, const char *data, size_t len);
/* Writes bytes to the child's stdin from where they lie, holding a reference
 * until the kernel has taken them. Bytes still in the making (a message of
 * many megabytes made off the loop: ecp_shared_pending) are held, and so is
 * every write after them, until they are filled: the child reads everything
 * in the order it was written. Returns false once stdin is closed. */
bool ecp_process_write_shared(ecp_process *self, ecp_shared *bytes);
/* Forgets the writes held behind bytes still in the making: they are never
 * written (for a child that is to hear its last words now). */
void ecp_process_drop_held(ecp_process *self);
/* Closes the child's stdin: it reads end of file. Held writes are dropped. */
void ecp_process_close_stdin(ecp_process *self);

int ecp_process_pid(const ecp_process *self);
bool ecp_process_exited(const ecp_process *self);

/* SIGTERM, then SIGKILL after the grace period. Does nothing once the child exited. */
void ecp_process_kill(ecp_process *self);
/* SIGKILL now. */
void ecp_process_kill_now(ecp_process *self);
/* SIGKILL unless the child has exited within wait_ms: for a child told to
 * leave in its own protocol (a language server's exit), which a SIGTERM would
 * cut short. Does nothing once the child exited. */
void ecp_process_kill_after(ecp_process *self, uint64_t wait_ms);

/* The program a bare name (no slash) stands for: the first regular file of
 * that name that we may execute in the absolute entries of dirs, a ':'-list
 * such as PATH (malloc'd), or NULL. An empty or relative entry ("", ".",
 * "bin") names a folder of the working directory, and a child's working
 * directory is often a workspace nobody has trusted: its planted "node" or
 * "clangd" must not be what runs. */
char *ecp_process_find_program(const char *name, const char *dirs);

/* Lets go of the child: stdin closes, the child is killed if it still runs
 * (unless leave_running), and no callback runs again. */
void ecp_process_close(ecp_process *self);

#endif
