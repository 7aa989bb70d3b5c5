/* transport: moving bytes between libuv streams and server connections.
 *
 * A stream_link joins one connection to a reading stream and a writing
 * stream (the same handle for a socket; stdin and stdout for stdio). It owns
 * the handles once attached, and frees itself after both have closed, telling
 * the connection at that point (never earlier), as server.h requires.
 */
#ifndef ECPD_TRANSPORT_H
#define ECPD_TRANSPORT_H

#include <stdbool.h>
#include <uv.h>

#include "server.h"

typedef struct stream_link stream_link;

/* Called once the link has closed and been freed. */
typedef void (*stream_link_closed_fn)(void *ctx, stream_link *link);

/* Takes ownership of in (and out, which may equal in, or be NULL to write
 * synchronously to out_fd, for a stdout that is a regular file). Both handles
 * must be initialised on the server's loop and be allocated with malloc. */
stream_link *stream_link_open(server *srv, uv_stream_t *in, uv_stream_t *out, int out_fd, const char *label,
                              stream_link_closed_fn on_closed, void *ctx);

/* Closes the link (the connection is told once the handles have closed).
 * With flush, output already queued is written first. */
void stream_link_close(stream_link *link, bool flush);

/* ----- the two transports of ecpd ----------------------------------------- */

/* Serves the process's stdin/stdout as one connection. on_closed runs when
 * stdin has closed (the client is gone) or the connection was dropped. */
stream_link *transport_stdio_open(server *srv, stream_link_closed_fn on_closed, void *ctx, ecp_error *err);

typedef struct socket_listener socket_listener;

/* Listens on path (its directory is created 0700 when missing; the socket is
 * 0600; a stale socket file is replaced; a live one is an error). */
socket_listener *transport_socket_start(server *srv, const char *path, ecp_error *err);
/* Stops listening, removes the socket file and closes every client. */
void transport_socket_stop(socket_listener *listener);

#endif
