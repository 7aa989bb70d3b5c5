/* ssh_remote: reaching an ecpd on another host through OpenSSH's client.
 *
 * The user's own ssh runs with their config, keys and agent; we add only -T
 * (the wire is bytes, not a terminal) and, for ssh -N forwards, the options
 * a forward needs to fail loudly. Extra ssh options come from the words of
 * $ECP_SSH_OPTIONS and then from each --ssh-option, one ssh argument each
 * (-Fconfig, -p2222, -i/key, -oName=value).
 *
 * The remote command goes to the remote user's shell as one string: every
 * word of it is single-quoted, so a workspace path with spaces, quotes or
 * $(...) reaches ecpd as it was typed. The remote shell must be a POSIX one
 * (sh, bash, dash, zsh, ksh).
 */
#ifndef ECPD_SSH_REMOTE_H
#define ECPD_SSH_REMOTE_H

#include <stdbool.h>
#include <sys/types.h>

#include "buf.h"
#include "error.h"

/* ssh's own exit status for its failures (as opposed to the remote command's) */
#define ECP_SSH_FAILED 255
/* the remote shell's status for a command it cannot find */
#define ECP_SSH_NOT_FOUND 127

typedef struct ecp_ssh {
    char *destination;  /* [user@]host, as ssh takes it */
    char *host;         /* host alone, for messages */
    char *path;         /* the remote workspace as given, NULL: the remote login directory */
    char **options;     /* extra ssh arguments */
    size_t option_count;
    char *ecpd;         /* the remote program (--ssh-ecpd), "ecpd" by default */
} ecp_ssh;

/* Reads [user@]host[:path] (an IPv6 host in brackets: [::1]:path) and
 * $ECP_SSH_OPTIONS. Returns 0, or a status with err saying what is wrong. */
int ecp_ssh_parse(ecp_ssh *out, const char *spec, ecp_error *err);
void ecp_ssh_add_option(ecp_ssh *self, const char *option);
void ecp_ssh_set_ecpd(ecp_ssh *self, const char *program);
void ecp_ssh_free(ecp_ssh *self);

/* word as one POSIX shell word: in single quotes, a quote as '\'' */
void ecp_ssh_quote(buf *out, const char *word);

/* `ssh OPTIONS -T [extra ...] -- DESTINATION 'word' 'word' ...`: a
 * NULL-terminated, malloc'd argv (free with ecp_ssh_argv_free). extra and
 * remote_words are NULL-terminated; remote_words NULL: no remote command. */
char **ecp_ssh_argv(const ecp_ssh *self, const char *const *extra, const char *const *remote_words);
void ecp_ssh_argv_free(char **argv);

/* ssh running `ECPD --stdio [--workspace PATH]` (workspace NULL: the ecp_ssh's path) */
char **ecp_ssh_stdio_argv(const ecp_ssh *self, const char *workspace);

/* Runs argv to its end (killing it after timeout_ms), its stdin on /dev/null,
 * collecting stdout into out and stderr into errors (either may be NULL: it
 * is dropped). Returns the exit status, 128 + a signal, or -1 with errors
 * saying why it could not run. */
int ecp_ssh_run(char *const *argv, int timeout_ms, buf *out, buf *errors);

/* What to tell the user when ssh ended with status (a remote command's, or
 * ECP_SSH_FAILED for ssh's own failure) having said errors (may be NULL):
 * for a missing remote ecpd, how to install it or name it; else ssh's own
 * words. malloc'd. */
char *ecp_ssh_failure(const ecp_ssh *self, int status, const char *errors);

/* The absolute remote workspace: the path as given when absolute, else
 * resolved by the remote shell (~/ and relative paths from the login
 * directory). NULL with why (malloc'd) when ssh or the path fails. */
char *ecp_ssh_remote_workspace(const ecp_ssh *self, char **why);

/* Makes sure a socket server listens for the workspace on the remote host
 * (`ECPD --socket --daemon --print-socket-path`, which starts one unless one
 * answers) and returns its socket path there (malloc'd), or NULL with why. */
char *ecp_ssh_remote_socket(const ecp_ssh *self, const char *workspace, char **why);

/* A forward of a local socket to the remote one: a private 0700 directory
 * with the local socket in it, and the `ssh -N -L` that serves it. The
 * forwarder gets SIGTERM when the thread that started it ends, so a client
 * that crashes leaves no forwarder behind (its directory stays). */
typedef struct ecp_ssh_forward {
    char *dir;
    char *local_socket;
    char *log;          /* the forwarder's stderr */
    pid_t pid;
} ecp_ssh_forward;

/* Starts the forwarder and waits (up to timeout_ms) until the local socket
 * exists. Returns 0, or -1 with why (malloc'd; ssh's own words when it
 * failed). On success the caller owns the forwarder: ecp_ssh_forward_stop. */
int ecp_ssh_forward_start(ecp_ssh_forward *fwd, const ecp_ssh *self, const char *remote_socket, int timeout_ms,
                          char **why);
/* True while the forwarder runs (reaps it once it has ended). */
bool ecp_ssh_forward_alive(ecp_ssh_forward *fwd);
/* Kills the forwarder, waits for it, removes the directory and its files. */
void ecp_ssh_forward_stop(ecp_ssh_forward *fwd);

#endif
