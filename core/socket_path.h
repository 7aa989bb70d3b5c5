/* socket_path: where a server for a workspace listens by default, so that
 * ecpd and its clients agree without being told, and the checks that keep
 * such a place private. */
#ifndef ECPD_SOCKET_PATH_H
#define ECPD_SOCKET_PATH_H

#include <stdbool.h>

#include "error.h"

/* $XDG_RUNTIME_DIR/ecpd/<hash>.sock, else /tmp/ecpd-<uid>/<hash>.sock, where
 * hash names the workspace directory (the current directory when NULL).
 * Returns a malloc'd string. */
char *ecp_default_socket_path(const char *workspace);

/* Creates dir 0700 when missing (its parent must exist), then checks it with
 * lstat: a real directory (not a symbolic link), owned by the current user,
 * and writable by nobody else, since whoever can write it can replace what
 * we put there. Returns 0, or a status with err naming the problem. */
int ecp_private_dir(const char *dir, ecp_error *err);

/* How a connection to a server's socket failed. */
typedef enum ecp_socket_failure {
    ECP_SOCKET_NOBODY = 1, /* nothing listens there (no file, or nobody accepting on it) */
    ECP_SOCKET_BUSY,       /* any other failure to connect (a full backlog, ...): try again later */
    ECP_SOCKET_REFUSED,    /* a path too long, or a server of another user: trying again will not help */
} ecp_socket_failure;

/* Connects to the server listening on the Unix socket at path and checks that
 * it runs as this user: what a client sends it includes files' text. extra_flags
 * is 0 or SOCK_NONBLOCK (a loop that must not wait on a full backlog). Returns
 * the connected descriptor, or -1 with *failure set and err naming the
 * problem. */
int ecp_socket_connect_own(const char *path, int extra_flags, ecp_socket_failure *failure, ecp_error *err);

/* True when something accepts connections on path. */
bool ecp_socket_answers(const char *path);

#endif
