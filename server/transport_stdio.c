/* stdio: the client spawned us and owns our stdin and stdout. stdout carries
 * protocol only; logs go to stderr. */
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "transport.h"

/* Wraps fd in a libuv stream when it is a pipe, socket or terminal. A regular
 * file (stdout redirected to a file) has no stream: NULL, written directly. */
static uv_stream_t *open_stream(uv_loop_t *loop, int fd, ecp_error *err, int *status)
{
    uv_handle_type type = uv_guess_handle(fd);
    *status = 0;
    if (type == UV_NAMED_PIPE) {
        uv_pipe_t *pipe = xmalloc(sizeof *pipe);
        uv_pipe_init(loop, pipe, 0);
        if (uv_pipe_open(pipe, fd) == 0)
            return (uv_stream_t *)pipe;
        free(pipe);
    } else if (type == UV_TTY) {
        uv_tty_t *tty = xmalloc(sizeof *tty);
        if (uv_tty_init(loop, tty, fd, 0) == 0)
            return (uv_stream_t *)tty;
        free(tty);
    } else if (type == UV_FILE && fd == STDOUT_FILENO) {
        return NULL;
    }
    *status = ecp_error_set(err, ECP_ENOTSUP, "file descriptor %d is not a pipe, socket or terminal", fd);
    return NULL;
}

stream_link *transport_stdio_open(server *srv, stream_link_closed_fn on_closed, void *ctx, ecp_error *err)
{
    uv_loop_t *loop = server_loop(srv);
    int status;
    uv_stream_t *in = open_stream(loop, STDIN_FILENO, err, &status);
    if (status < 0)
        return NULL;
    uv_stream_t *out = open_stream(loop, STDOUT_FILENO, err, &status);
    if (status < 0) {
        uv_close((uv_handle_t *)in, (uv_close_cb)free);
        return NULL;
    }
    return stream_link_open(srv, in, out, STDOUT_FILENO, "stdio", on_closed, ctx);
}
