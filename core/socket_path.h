/* socket_path: where a server for a workspace listens by default, so that
 * ecpd and its clients agree without being told, and the checks that keep
 * such a place private. */
#ifndef ECPD_SOCKET_PATH_H
#define ECPD_SOCKET_PATH_H

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

#endif
