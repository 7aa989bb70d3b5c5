/* socket_path: where a server for a workspace listens by default, so that
 * ecpd and its clients agree without being told. */
#ifndef ECPD_SOCKET_PATH_H
#define ECPD_SOCKET_PATH_H

/* $XDG_RUNTIME_DIR/ecpd/<hash>.sock, else /tmp/ecpd-<uid>/<hash>.sock, where
 * hash names the workspace directory (the current directory when NULL).
 * Returns a malloc'd string. */
char *ecp_default_socket_path(const char *workspace);

#endif
