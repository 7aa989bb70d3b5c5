/* The Unix socket: many clients at once, each its own connection. Only the
 * server's own user may connect: the directory is 0700, the socket 0600, and
 * each peer's uid is checked with SO_PEERCRED. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"
#include "socket_path.h"
#include "transport.h"


/* One accepted client, on the listener's list until its link has closed. */
typedef struct client_entry {
    socket_listener *owner;
    stream_link *link;
    struct client_entry *prev, *next;
} client_entry;

struct socket_listener {
    server *srv;
    uv_pipe_t *handle;      /* NULL once stopped: closing frees it */
    char *path;
    bool owns_path;         /* false when socket activation handed the socket over */
    client_entry *clients;
    unsigned accepted;
};

static void client_closed(void *ctx, stream_link *link)
{
    client_entry *e = ctx;
    (void)link;
    if (e->prev)
        e->prev->next = e->next;
    else
        e->owner->clients = e->next;
    if (e->next)
        e->next->prev = e->prev;
    free(e);
}

static bool peer_is_us(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof cred;
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.uid == getuid();
}

/* The peer learns why in the only words it is sure to understand, a
 * JSON-RPC error on one line, then the connection closes. The socket is
 * fresh and the line short, so one non-blocking write takes it whole. */
static void refuse_over_limit(socket_listener *l, uv_pipe_t *client)
{
    size_t limit = server_connection_limit(l->srv);
    char line[200];
    int n = snprintf(line, sizeof line,
                     "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":"
                     "\"Too many connections: this server takes at most %zu\"}}\n",
                     ECP_WIRE_SERVER_ERROR, limit);
    uv_buf_t b = uv_buf_init(line, (unsigned)n);
    uv_try_write((uv_stream_t *)client, &b, 1);
    ecp_log(server_logger(l->srv), ECP_LOG_WARN, "refused a socket client: %zu connections is the limit", limit);
    uv_close((uv_handle_t *)client, (uv_close_cb)free);
}

static void on_connection(uv_stream_t *server_stream, int status)
{
    socket_listener *l = server_stream->data;
    if (status < 0)
        return;
    uv_pipe_t *client = xmalloc(sizeof *client);
    uv_pipe_init(server_stream->loop, client, 0);
    if (uv_accept(server_stream, (uv_stream_t *)client) < 0) {
        uv_close((uv_handle_t *)client, (uv_close_cb)free);
        return;
    }
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)client, &fd) < 0 || !peer_is_us(fd)) {
        ecp_log(server_logger(l->srv), ECP_LOG_WARN, "refused a socket client of another user");
        uv_close((uv_handle_t *)client, (uv_close_cb)free);
        return;
    }
    if (server_connection_count(l->srv) >= server_connection_limit(l->srv)) {
        refuse_over_limit(l, client);
        return;
    }
    client_entry *e = xcalloc(1, sizeof *e);
    e->owner = l;
    e->next = l->clients;
    if (l->clients)
        l->clients->prev = e;
    l->clients = e;
    char label[32];
    snprintf(label, sizeof label, "socket #%u", ++l->accepted);
    e->link = stream_link_open(l->srv, (uv_stream_t *)client, (uv_stream_t *)client, -1, label, client_closed, e);
}

/* Creates the socket's directory when missing. A directory we create is 0700;
 * an existing one must belong to us and be writable by nobody else: whoever
 * can write it can put their own socket in our place. */
static int prepare_directory(const char *path, ecp_error *err)
{
    char *dir = xstrdup(path);
    char *slash = strrchr(dir, '/');
    int status = 0;
    if (slash && slash != dir) {
        *slash = '\0';
        status = ecp_private_dir(dir, err);
    }
    free(dir);
    return status;
}

/* A socket file left by a server that died is replaced; one that answers
 * belongs to a live server and is left alone. */
static int claim_path(const char *path, ecp_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return 0;
    if (!S_ISSOCK(st.st_mode))
        return ecp_error_set(err, ECP_EEXIST, "%s exists and is not a socket", path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
    int live = fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    if (fd >= 0)
        close(fd);
    if (live)
        return ecp_error_set(err, ECP_EEXIST, "another server is already listening on %s", path);
    unlink(path);
    return 0;
}

socket_listener *transport_socket_start(server *srv, const char *path, ecp_error *err)
{
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        ecp_error_set(err, ECP_ETOOBIG, "socket path is too long: %s", path);
        return NULL;
    }
    if (prepare_directory(path, err) < 0 || claim_path(path, err) < 0)
        return NULL;
    socket_listener *l = xcalloc(1, sizeof *l);
    l->srv = srv;
    l->path = xstrdup(path);
    l->handle = xmalloc(sizeof *l->handle);
    uv_pipe_init(server_loop(srv), l->handle, 0);
    l->handle->data = l;
    /* umask makes the socket 0600 from birth: no window where others could connect */
    mode_t old = umask(0177);
    int r = uv_pipe_bind(l->handle, path);
    umask(old);
    if (r == 0)
        r = uv_listen((uv_stream_t *)l->handle, 128, on_connection);
    if (r < 0) {
        ecp_error_set(err, ECP_EIO, "cannot listen on %s: %s", path, uv_strerror(r));
        uv_close((uv_handle_t *)l->handle, (uv_close_cb)free);
        free(l->path);
        free(l);
        return NULL;
    }
    chmod(path, 0600);
    l->owns_path = true;
    return l;
}

int transport_socket_inherited(int *fd, ecp_error *err)
{
    const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
    char *end = NULL;
    long listen_pid = pid ? strtol(pid, &end, 10) : 0;
    bool ours = pid && end && !*end && listen_pid == (long)getpid();
    long count = ours && fds ? strtol(fds, &end, 10) : 0;
    bool handed = ours && end && !*end && count >= 1;
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    if (!handed)
        return 0;
    enum { FIRST_FD = 3 }; /* SD_LISTEN_FDS_START */
    for (long i = 0; i < count && i < 1024; i++)
        fcntl(FIRST_FD + (int)i, F_SETFD, FD_CLOEXEC);
    int domain = 0, type = 0, listening = 0;
    socklen_t len = sizeof domain;
    bool usable = getsockopt(FIRST_FD, SOL_SOCKET, SO_DOMAIN, &domain, &len) == 0 && domain == AF_UNIX;
    len = sizeof type;
    usable = usable && getsockopt(FIRST_FD, SOL_SOCKET, SO_TYPE, &type, &len) == 0 && type == SOCK_STREAM;
    len = sizeof listening;
    usable = usable && getsockopt(FIRST_FD, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) == 0 && listening;
    if (!usable)
        return ecp_error_set(err, ECP_EINVAL,
                             "socket activation handed over fd 3, which is not a listening Unix stream socket");
    *fd = FIRST_FD;
    return 1;
}

socket_listener *transport_socket_adopt(server *srv, int fd, ecp_error *err)
{
    struct sockaddr_un addr = {0};
    socklen_t len = sizeof addr;
    char path[sizeof addr.sun_path + 1] = "(unnamed)";
    if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 && len > offsetof(struct sockaddr_un, sun_path) &&
        addr.sun_path[0])
        snprintf(path, sizeof path, "%.*s", (int)(len - offsetof(struct sockaddr_un, sun_path)), addr.sun_path);
    socket_listener *l = xcalloc(1, sizeof *l);
    l->srv = srv;
    l->path = xstrdup(path);
    l->handle = xmalloc(sizeof *l->handle);
    uv_pipe_init(server_loop(srv), l->handle, 0);
    l->handle->data = l;
    int r = uv_pipe_open(l->handle, fd);
    if (r == 0)
        r = uv_listen((uv_stream_t *)l->handle, 128, on_connection);
    if (r < 0) {
        ecp_error_set(err, ECP_EIO, "cannot listen on the socket handed over (%s): %s", path, uv_strerror(r));
        uv_close((uv_handle_t *)l->handle, (uv_close_cb)free);
        free(l->path);
        free(l);
        return NULL;
    }
    return l;
}

const char *transport_socket_path(const socket_listener *l) { return l->path; }

void transport_socket_stop(socket_listener *l, bool flush)
{
    if (l->handle) {
        uv_close((uv_handle_t *)l->handle, (uv_close_cb)free);
        l->handle = NULL;
        if (l->owns_path)
            unlink(l->path);
    }
    /* A link whose handles are already closing is still on the list, and a
     * second stream_link_close() leaves it be. */
    for (client_entry *e = l->clients; e; e = e->next)
        stream_link_close(e->link, flush);
}

bool transport_socket_has_clients(const socket_listener *l) { return l->clients != NULL; }

void transport_socket_free(socket_listener *l)
{
    assert(!l->handle && !l->clients); /* stopped, and every client's link has closed */
    free(l->path);
    free(l);
}
