/* transport: moving bytes between libuv streams and server connections.
 *
 * A stream_link joins one connection to a reading stream and a writing
 * stream (the same handle for a socket; stdin and stdout for stdio). It owns
 * the handles once attached, and it owns its connection: it opens it, and
 * closes it (connection_close) after both handles have closed, when no libuv
 * callback of the link can run any more; nothing else closes it. The link
 * then frees itself.
 *
 * Hence the order at teardown: close every link, run the loop until each has
 * told its on_closed, and only then free the server. A link that waits for a
 * peer to read its output can wait forever, so closing it again without
 * flush cuts the wait short; its connection is then closed on the loop's next
 * turn.
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

/* Closes the link (the connection is closed once the handles have closed).
 * With flush, output already queued is written first, for as long as the
 * peer takes to read it; a later call without flush stops waiting and drops
 * what is unwritten. Further calls do nothing. */
void stream_link_close(stream_link *link, bool flush);

/* Called once when the peer's input ends (end of file or a read error),
 * while the link is still flushing what is queued for it: a peer that
 * closed its end without reading may never let that flush finish, and its
 * owner need not wait for it to know the peer is gone. A link with this
 * callback goes on reading for a while (PAUSED_READ_BYTES) when its
 * connection pauses for a peer that does not read its output, or the end
 * would go unseen for as long as that lasts; the connection acts on nothing
 * it receives until it resumes. */
typedef void (*stream_link_ended_fn)(void *ctx);
void stream_link_on_ended(stream_link *link, stream_link_ended_fn fn, void *ctx);

/* ----- the two transports of ecpd ----------------------------------------- */

/* Serves the process's stdin/stdout as one connection. on_closed runs when
 * stdin has closed (the client is gone) or the connection was dropped. */
stream_link *transport_stdio_open(server *srv, stream_link_closed_fn on_closed, void *ctx, ecp_error *err);

typedef struct socket_listener socket_listener;

/* Listens on path (its directory is created 0700 when missing; the socket is
 * 0600; a stale socket file is replaced; a live one is an error). The listener
 * owns the link of every client it accepted until that link has closed. */
socket_listener *transport_socket_start(server *srv, const char *path, ecp_error *err);
/* Socket activation (systemd's LISTEN_PID/LISTEN_FDS convention): when
 * LISTEN_PID is this process and LISTEN_FDS is at least 1, sets *fd to 3, the
 * first socket handed over, and returns 1; returns 0 when nothing was handed
 * over, and a negative status, err saying why, when fd 3 is not a listening
 * Unix stream socket. Either way the variables are removed from the
 * environment and the descriptor made close-on-exec, so that no child
 * (terminals, language servers) takes them for its own. */
int transport_socket_inherited(int *fd, ecp_error *err);
/* Listens on fd, a listening socket handed over by socket activation. Its
 * file belongs to whoever made it: the listener never removes it. */
socket_listener *transport_socket_adopt(server *srv, int fd, ecp_error *err);
/* The socket's path, for messages. */
const char *transport_socket_path(const socket_listener *listener);
/* Stops listening and removes the socket file (the first time; never an
 * adopted one's), and closes
 * every client as stream_link_close(link, flush) does: call it with flush,
 * then without to stop waiting for clients that do not read. */
void transport_socket_stop(socket_listener *listener, bool flush);
/* True while the link of a client is still open, its connection with it. */
bool transport_socket_has_clients(const socket_listener *listener);
/* Frees a stopped listener whose clients have all closed. */
void transport_socket_free(socket_listener *listener);

#endif
