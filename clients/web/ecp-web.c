/* ecp-web's start: its flags, its one libuv loop (which libwebsockets joins,
 * and which also drives every connection to ecpd), and its end. */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"
#include "server.h"
#include "share_dir.h"
#include "socket_path.h"
#include "web.h"

static const char usage[] =
    "usage: ecp-web [--connect SOCKET] [--workspace DIR] [--server ECPD] [--host ADDRESS] [--port N]\n"
    "               [--static DIR] [--cert FILE --key FILE]\n"
    "Serves ecpd's browser GUI and prints its URL, with the token every request needs.\n"
    "Each page gets a connection of its own to ecpd's socket (default: the workspace's, the workspace\n"
    "being the current directory); with no server answering there, it starts `ECPD --socket SOCKET\n"
    "--workspace DIR` (ECPD: --server, else $ECPD, else the ecpd beside ecp-web, else from PATH).\n"
    "It listens on 127.0.0.1 (--host to change it) at port N (default 0: any free port), over\n"
    "https with --cert and --key. The page's files come from --static (default: <prefix>/share/ecpd/web\n"
    "when installed, else static/ beside ecp-web).\n";

typedef struct options {
    const char *connect, *workspace, *server, *host, *static_dir, *cert, *key;
    int port;
} options;

typedef struct app {
    web w;
    uv_loop_t loop;
    uv_signal_t signals[3];
    uv_timer_t stopping;
    uint64_t stop_deadline_ms;
    struct lws_context *context;
} app;

/* How long the pages get to take what ecpd sent them and their close frame, at the end. */
#define STOP_GRACE_MS 1000

static int callback(struct lws *wsi, enum lws_callback_reasons reason, void *user, void *in, size_t len)
{
    struct lws_context *context = lws_get_context(wsi);
    web *w = context ? lws_context_user(context) : NULL;
    bridge **relay = user;
    switch (reason) {
    case LWS_CALLBACK_HTTP:
        return web_serve_http(w, wsi, in ? (const char *)in : "/", len);
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE:
        return web_confirm_upgrade(w, wsi);
    case LWS_CALLBACK_ESTABLISHED:
        *relay = bridge_open(w, wsi);
        return 0;
    case LWS_CALLBACK_RECEIVE:
        return *relay ? bridge_receive(*relay, in, len) : -1;
    case LWS_CALLBACK_SERVER_WRITEABLE:
        return *relay ? bridge_writeable(*relay) : 0;
    case LWS_CALLBACK_CLOSED:
        if (*relay)
            bridge_closed(*relay);
        *relay = NULL;
        return 0;
    default:
        return lws_callback_http_dummy(wsi, reason, user, in, len);
    }
}

static const struct lws_protocols protocols[] = {
    {"ecp", callback, sizeof(bridge *), 64 << 10, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

/* Once the pages are closed, or have had their time: lws closes what is left (and so every relay)
 * and its own handles; the loop then ends. */
static void on_stopping(uv_timer_t *t)
{
    app *a = t->data;
    if (a->w.pages && uv_now(&a->loop) < a->stop_deadline_ms)
        return;
    uv_close((uv_handle_t *)t, NULL);
    if (a->context)
        lws_context_destroy(a->context);
}

static void on_signal(uv_signal_t *h, int signum)
{
    app *a = h->data;
    (void)signum;
    for (size_t i = 0; i < sizeof a->signals / sizeof a->signals[0]; i++)
        if (!uv_is_closing((uv_handle_t *)&a->signals[i]))
            uv_close((uv_handle_t *)&a->signals[i], NULL);
    /* Each page is told why it lost the server (1001) rather than finding its connection cut. */
    bridge_close_all(&a->w);
    a->stop_deadline_ms = uv_now(&a->loop) + STOP_GRACE_MS;
    uv_timer_init(&a->loop, &a->stopping);
    a->stopping.data = a;
    uv_timer_start(&a->stopping, on_stopping, 0, 10);
}

static char *absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real)
        return real;
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[PATH_MAX];
    buf b = BUF_INIT;
    buf_appendf(&b, "%s/%s", getcwd(cwd, sizeof cwd) ? cwd : ".", path);
    return buf_detach(&b);
}

static char *beside_binary(const char *name)
{
    char exe[PATH_MAX];
    size_t size = sizeof exe;
    if (uv_exepath(exe, &size) != 0)
        return NULL;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = 0;
    buf b = BUF_INIT;
    buf_appendf(&b, "%s/%s", exe, name);
    return buf_detach(&b);
}

/* An installed ecp-web finds the page under <prefix>/share/ecpd/web; one in
 * the build tree, in static/ beside it. */
static char *default_static_dir(void)
{
    char *beside = beside_binary("static");
    char *dir = ecp_share_path("web", beside);
    free(beside);
    return dir;
}

static char *find_server(const char *given)
{
    if (given)
        return xstrdup(given);
    const char *env = getenv("ECPD");
    if (env && *env)
        return xstrdup(env);
    const char *beside[] = {"ecpd", "../../server/ecpd", "../server/ecpd"};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        char *p = beside_binary(beside[i]);
        if (p && access(p, X_OK) == 0)
            return p;
        free(p);
    }
    return xstrdup("ecpd"); /* from PATH, as uv_spawn looks it up */
}

/* Whether the port can be had, so that a port in use is said plainly rather than in lws's log. */
static int check_port(const char *host, int port)
{
    if (port == 0)
        return 0;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST};
    struct addrinfo *res = NULL;
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "ecp-web: --host %s is not an IP address: %s\n", host, gai_strerror(rc));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    int status = 0;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0) {
        if (errno == EADDRINUSE)
            fprintf(stderr, "ecp-web: port %d on %s is in use\n", port, host);
        else
            fprintf(stderr, "ecp-web: cannot listen on %s port %d: %s\n", host, port, strerror(errno));
        status = -1;
    }
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return status;
}

static bool parse_port(const char *s, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || !*s || *end || v < 0 || v > 65535)
        return false;
    *out = (int)v;
    return true;
}

static int bad_usage(const char *fmt, const char *arg)
{
    fputs("ecp-web: ", stderr);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    fputs(usage, stderr);
    return 2;
}

static int parse_args(int argc, char **argv, options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        }
        if (strcmp(arg, "--version") == 0) {
            printf("ecp-web %s\n", ECPD_VERSION);
            return 0;
        }
        const char **slot = NULL;
        if (strcmp(arg, "--connect") == 0) slot = &o->connect;
        else if (strcmp(arg, "--workspace") == 0) slot = &o->workspace;
        else if (strcmp(arg, "--server") == 0) slot = &o->server;
        else if (strcmp(arg, "--host") == 0) slot = &o->host;
        else if (strcmp(arg, "--static") == 0) slot = &o->static_dir;
        else if (strcmp(arg, "--cert") == 0) slot = &o->cert;
        else if (strcmp(arg, "--key") == 0) slot = &o->key;
        else if (strcmp(arg, "--port") != 0)
            return bad_usage("unknown option %s", arg);
        if (i + 1 >= argc || !*argv[i + 1])
            return bad_usage("%s needs a value", arg);
        if (slot) {
            *slot = argv[++i];
        } else if (!parse_port(argv[++i], &o->port)) {
            return bad_usage("--port needs a number from 0 to 65535, not %s", argv[i]);
        }
    }
    if (!o->cert != !o->key)
        return bad_usage("%s", "--cert and --key go together");
    return -1;
}

static bool readable_file(const char *what, const char *path)
{
    if (access(path, R_OK) == 0)
        return true;
    fprintf(stderr, "ecp-web: cannot read the %s %s: %s\n", what, path, strerror(errno));
    return false;
}

static void print_url(const web *w, const char *host, int port)
{
    const char *shown = host;
    if (strcmp(host, "0.0.0.0") == 0)
        shown = "127.0.0.1";
    else if (strcmp(host, "::") == 0)
        shown = "::1";
    bool v6 = strchr(shown, ':') != NULL;
    printf("%s://%s%s%s:%d/?token=%s\n", w->tls ? "https" : "http", v6 ? "[" : "", shown, v6 ? "]" : "", port,
           w->token);
    fflush(stdout);
}

static void free_web(web *w)
{
    free(w->static_dir);
    free(w->socket_path);
    free(w->workspace);
    free(w->server_path);
}

int main(int argc, char **argv)
{
    options o = {.host = "127.0.0.1"};
    int parsed = parse_args(argc, argv, &o);
    if (parsed >= 0)
        return parsed;
    signal(SIGPIPE, SIG_IGN);

    app a;
    memset(&a, 0, sizeof a);
    web *w = &a.w;
    w->workspace = absolute(o.workspace ? o.workspace : ".");
    w->socket_path = o.connect ? absolute(o.connect) : ecp_default_socket_path(w->workspace);
    w->server_path = find_server(o.server);
    w->tls = o.cert != NULL;
    char *static_dir = o.static_dir ? xstrdup(o.static_dir) : default_static_dir();
    w->static_dir = static_dir ? realpath(static_dir, NULL) : NULL;
    struct stat st;
    if (!w->static_dir || stat(w->static_dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "ecp-web: no directory of static files at %s\n", static_dir ? static_dir : "(unknown)");
        free(static_dir);
        free_web(w);
        return 1;
    }
    free(static_dir);
    if ((w->tls && (!readable_file("certificate", o.cert) || !readable_file("key", o.key))) ||
        check_port(o.host, o.port) != 0) {
        free_web(w);
        return 1;
    }
    web_make_token(w->token);

    uv_loop_init(&a.loop);
    w->loop = &a.loop;
    lws_set_log_level(LLL_ERR, NULL);

    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    void *foreign_loops[1] = {&a.loop};
    info.foreign_loops = foreign_loops;
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_FAIL_UPON_UNABLE_TO_BIND |
                   LWS_SERVER_OPTION_UV_NO_SIGSEGV_SIGFPE_SPIN;
    if (!strchr(o.host, ':'))
        info.options |= LWS_SERVER_OPTION_DISABLE_IPV6;
    if (w->tls) {
        info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
        info.ssl_cert_filepath = o.cert;
        info.ssl_private_key_filepath = o.key;
    }
    info.port = o.port;
    info.iface = o.host;
    info.protocols = protocols;
    info.user = w;
    info.pcontext = &a.context;
    info.max_http_header_data = 8192;
    info.pt_serv_buf_size = 64 << 10;
    info.uid = (uid_t)-1;
    info.gid = (gid_t)-1;
    a.context = lws_create_context(&info);
    if (!a.context) {
        fprintf(stderr, "ecp-web: cannot serve on %s port %d%s\n", o.host, o.port,
                w->tls ? " (can the certificate and key be used together?)" : "");
        uv_run(&a.loop, UV_RUN_DEFAULT);
        uv_loop_close(&a.loop);
        free_web(w);
        return 1;
    }
    struct lws_vhost *vhost = lws_get_vhost_by_name(a.context, "default");
    int port = vhost ? lws_get_vhost_listen_port(vhost) : o.port;

    const int signums[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof signums / sizeof signums[0]; i++) {
        uv_signal_init(&a.loop, &a.signals[i]);
        a.signals[i].data = &a;
        uv_signal_start(&a.signals[i], on_signal, signums[i]);
    }
    fprintf(stderr, "ecp-web: serving %s; each page gets a connection to %s\n", w->static_dir, w->socket_path);
    bridge_start_server_if_absent(w);
    print_url(w, o.host, port);

    uv_run(&a.loop, UV_RUN_DEFAULT);
    if (a.context)
        lws_context_destroy(a.context);
    uv_run(&a.loop, UV_RUN_DEFAULT);
    uv_loop_close(&a.loop);
    free_web(w);
    return 0;
}
