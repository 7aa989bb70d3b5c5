/* ecpd: the command line. Everything else lives in the server object. */
#include <errno.h>
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agent/adapter.h"
#include "buf.h"
#include "compose.h"
#include "loop_trace.h"
#include "server.h"
#include "socket_path.h"
#include "transport.h"

static const char usage[] =
    "usage: ecpd [--stdio | --socket [PATH]] [--workspace DIR] [--data-dir DIR] [--config FILE]\n"
    "            [--log FILE] [--log-level error|warn|info|debug] [--max-message-bytes N]\n"
    "            [--max-connections N] [--stall-timeout SECONDS] [--max-input-bytes N]\n"
    "            [--input-timeout SECONDS] [--eca | --acp] [--model PROVIDER/MODEL]\n"
    "            [--trust-workspace] [--version] [--help]\n"
    "\n"
    "Serves the Editor Command Protocol (JSON-RPC 2.0) on stdio (the default) or on a\n"
    "Unix socket (default path: $XDG_RUNTIME_DIR/ecpd/<workspace-hash>.sock); started by\n"
    "socket activation (LISTEN_PID, LISTEN_FDS), --socket serves the socket on fd 3.\n"
    "--eca serves the ECA protocol (chat/*) on stdio, for the workspace in the current\n"
    "directory unless --workspace names one; --acp serves the Agent Client Protocol (v1)\n"
    "on stdio, newline-delimited; --model picks the agent's provider/model.\n"
    "A workspace's own settings that run programs or widen permissions apply once the\n"
    "folder is trusted (workspace/trust); --trust-workspace trusts it for this run.\n"
    "--print-socket-path prints the socket path the workspace's server listens on and\n"
    "exits. --socket --daemon makes sure a server listens there: one that answers is\n"
    "left alone, else one is started in the background (its stdio on /dev/null, its own\n"
    "session) and --daemon returns once it listens; with --print-socket-path it then\n"
    "prints the path. Clients on other hosts reach it this way over ssh.\n";

typedef struct app {
    uv_loop_t loop;
    server *srv;
    stream_link *stdio;
    acp_frontend *acp;
    socket_listener *listener;
    uv_signal_t sigint, sigterm, sighup;
    FILE *log_file;
} app;

static void stdio_closed(void *ctx, stream_link *link)
{
    app *a = ctx;
    (void)link;
    a->stdio = NULL;
    /* stdin closed: the client is gone, so we are done */
    server_request_exit(a->srv, 0);
}

/* The client closed our stdin: it is gone even if it never reads what we
 * still owe it, so the server goes now, not once that output is written. */
static void stdin_ended(void *ctx)
{
    app *a = ctx;
    server_request_exit(a->srv, 0);
}

static void acp_eof(void *ctx)
{
    app *a = ctx;
    server_request_exit(a->srv, 0);
}

/* Closing starts here and ends in main: the transports write what is queued
 * first, for as long as main waits. */
static void on_exit_requested(void *ctx, int code)
{
    app *a = ctx;
    (void)code;
    if (a->stdio)
        stream_link_close(a->stdio, true);
    if (a->acp)
        acp_frontend_close(a->acp);
    if (a->listener)
        transport_socket_stop(a->listener, true);
    uv_signal_stop(&a->sigint);
    uv_signal_stop(&a->sigterm);
    uv_signal_stop(&a->sighup);
}

/* True while a link, and so a connection, is open. */
static bool transports_open(const app *a)
{
    return a->stdio || (a->acp && !acp_frontend_closed(a->acp)) || (a->listener && transport_socket_has_clients(a->listener));
}

static void on_signal(uv_signal_t *handle, int signum)
{
    app *a = handle->data;
    ecp_log(server_logger(a->srv), ECP_LOG_INFO, "received signal %d", signum);
    server_request_exit(a->srv, 0);
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs the loop until it has nothing left, the deadline passes, or (with
 * until_closed) every transport has closed: exit must take at most a second
 * even if a child or a peer misbehaves. */
static void drain(uv_loop_t *loop, double deadline, const app *until_closed)
{
    while (now_seconds() < deadline && uv_run(loop, UV_RUN_NOWAIT)) {
        if (until_closed && !transports_open(until_closed))
            return;
        usleep(500);
    }
}

#define DAEMON_READY "ECPD-READY\n"

/* --daemon: the caller (often an ssh session) must get its answer only once
 * the server listens, and must not wait for the server to end. The child
 * leaves the caller's session and writes its start's errors, then the ready
 * line, to a pipe the parent reads to its end; the parent exits with what it
 * read. Returns -1 in the child (which goes on to serve), else the parent's
 * exit status. Done before the loop and its threads exist: only a process of
 * one thread may fork safely. */
static int daemon_start(int *report_fd)
{
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) < 0) {
        fprintf(stderr, "ecpd: --daemon: pipe: %s\n", strerror(errno));
        return 1;
    }
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "ecpd: --daemon: fork: %s\n", strerror(errno));
        return 1;
    }
    if (child == 0) {
        close(fds[0]);
        setsid();
        int null_fd = open("/dev/null", O_RDWR);
        if (null_fd >= 0) {
            dup2(null_fd, STDIN_FILENO);
            dup2(null_fd, STDOUT_FILENO);
            close(null_fd);
        }
        dup2(fds[1], STDERR_FILENO);
        *report_fd = fds[1];
        return -1;
    }
    close(fds[1]);
    buf said = BUF_INIT;
    char chunk[512];
    ssize_t n;
    while ((n = read(fds[0], chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        buf_append(&said, chunk, (size_t)n);
    }
    close(fds[0]);
    size_t ready_len = strlen(DAEMON_READY);
    bool ready = said.len >= ready_len && memcmp(said.data + said.len - ready_len, DAEMON_READY, ready_len) == 0;
    if (!ready)
        fprintf(stderr, "%.*s%s", (int)said.len, said.data ? said.data : "",
                said.len ? "" : "ecpd: the server ended before it listened\n");
    buf_free(&said);
    return ready ? 0 : 1;
}

/* The daemon listens (or another server already does): the parent may go,
 * and what the server says from now on goes nowhere. */
static void daemon_ready(int *report_fd)
{
    if (*report_fd < 0)
        return;
    ssize_t unused = write(*report_fd, DAEMON_READY, strlen(DAEMON_READY));
    (void)unused;
    int null_fd = open("/dev/null", O_WRONLY);
    if (null_fd >= 0) {
        dup2(null_fd, STDERR_FILENO);
        close(null_fd);
    }
    close(*report_fd);
    *report_fd = -1;
}

static bool parse_level(const char *s, ecp_log_level *out)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return *out = (ecp_log_level)i, true;
    return false;
}

/* glibc raises the size from which it maps a block on its own as big
 * blocks come and go (up to 32 MiB), and with it the free space a heap
 * keeps at its top: after one huge request (a replace-all of 670,000
 * edits: its message, its parse on a pool thread, its notification) tens
 * of megabytes stayed in each thread's heap for good, more than the
 * document itself. A fixed threshold maps every block of a megabyte or
 * more on its own, given back as soon as it is freed. */
static void allocator_setup(void)
{
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
}

int main(int argc, char **argv)
{
    allocator_setup();
    server_options options = {.log_level = ECP_LOG_WARN};
    const char *socket_path = NULL, *log_path = NULL;
    bool use_socket = false, eca = false, acp = false, print_socket_path = false, daemon = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *next = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VALUE()                                                   \
    do {                                                               \
        if (!next) {                                                   \
            fprintf(stderr, "ecpd: %s needs a value\n%s", arg, usage); \
            return 2;                                                  \
        }                                                              \
        i++;                                                           \
    } while (0)
        if (strcmp(arg, "--stdio") == 0) {
            use_socket = false;
        } else if (strcmp(arg, "--socket") == 0) {
            use_socket = true;
            if (next && next[0] != '-')
                socket_path = next, i++;
        } else if (strcmp(arg, "--workspace") == 0) {
            NEED_VALUE();
            options.workspace = next;
        } else if (strcmp(arg, "--data-dir") == 0) {
            NEED_VALUE();
            options.data_dir = next;
        } else if (strcmp(arg, "--config") == 0) {
            NEED_VALUE();
            options.config_path = next;
        } else if (strcmp(arg, "--log") == 0) {
            NEED_VALUE();
            log_path = next;
        } else if (strcmp(arg, "--log-level") == 0) {
            NEED_VALUE();
            if (!parse_level(next, &options.log_level)) {
                fprintf(stderr, "ecpd: unknown log level '%s'\n", next);
                return 2;
            }
        } else if (strcmp(arg, "--max-message-bytes") == 0) {
            NEED_VALUE();
            char *end;
            errno = 0;
            unsigned long long v = strtoull(next, &end, 10);
            if (errno || *end || v < 1024) {
                fprintf(stderr, "ecpd: --max-message-bytes needs a number >= 1024\n");
                return 2;
            }
            options.max_message_bytes = (size_t)v;
        } else if (strcmp(arg, "--max-connections") == 0) {
            NEED_VALUE();
            char *end;
            errno = 0;
            unsigned long v = strtoul(next, &end, 10);
            if (errno || *end || v < 1 || v > 100000) {
                fprintf(stderr, "ecpd: --max-connections needs a number from 1 to 100000\n");
                return 2;
            }
            options.max_connections = (unsigned)v;
        } else if (strcmp(arg, "--stall-timeout") == 0) {
            NEED_VALUE();
            char *end;
            errno = 0;
            unsigned long v = strtoul(next, &end, 10);
            if (errno || *end || v < 1 || v > 86400) {
                fprintf(stderr, "ecpd: --stall-timeout needs a number of seconds from 1 to 86400\n");
                return 2;
            }
            options.stall_timeout_ms = (unsigned)v * 1000u;
        } else if (strcmp(arg, "--max-input-bytes") == 0) {
            NEED_VALUE();
            char *end;
            errno = 0;
            unsigned long long v = strtoull(next, &end, 10);
            if (errno || *end || v < 1024) {
                fprintf(stderr, "ecpd: --max-input-bytes needs a number >= 1024\n");
                return 2;
            }
            options.max_input_bytes = (size_t)v;
        } else if (strcmp(arg, "--input-timeout") == 0) {
            NEED_VALUE();
            char *end;
            errno = 0;
            double v = strtod(next, &end);
            if (errno || *end || end == next || !(v >= 0.05 && v <= 86400)) {
                fprintf(stderr, "ecpd: --input-timeout needs a number of seconds from 0.05 to 86400\n");
                return 2;
            }
            options.input_timeout_ms = (unsigned)(v * 1000.0 + 0.5);
        } else if (strcmp(arg, "--eca") == 0) {
            /* ECA is the chat namespace on stdio: the framing follows the client's Content-Length headers */
            use_socket = false;
            eca = true;
        } else if (strcmp(arg, "--model") == 0) {
            NEED_VALUE();
            /* the agent reads --model where it reads ECPD_MODEL, which --model overrides */
            setenv("ECPD_MODEL", next, 1);
        } else if (strcmp(arg, "--trust-workspace") == 0) {
            options.trust_workspace = true;
        } else if (strcmp(arg, "--print-socket-path") == 0) {
            print_socket_path = true;
        } else if (strcmp(arg, "--daemon") == 0) {
            daemon = true;
        } else if (strcmp(arg, "--acp") == 0) {
            use_socket = false;
            acp = true;
        } else if (strcmp(arg, "--version") == 0) {
            printf("ecpd %s (protocol %s)\n", ECPD_VERSION, ECPD_PROTOCOL_VERSION);
            return 0;
        } else if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            fputs(usage, stdout);
            return 0;
        } else {
            fprintf(stderr, "ecpd: unknown argument '%s'\n%s", arg, usage);
            return 2;
        }
#undef NEED_VALUE
    }

    /* Before any service starts a child: the variables and the descriptor are this process's alone. */
    int activated_fd = -1;
    ecp_error err;
    int activated = use_socket ? transport_socket_inherited(&activated_fd, &err) : 0;
    if (activated < 0) {
        fprintf(stderr, "ecpd: %s\n", err.message);
        return 1;
    }

    int daemon_report = -1;
    if ((print_socket_path || daemon) && !activated) {
        if (daemon && (!use_socket || eca || acp)) {
            fprintf(stderr, "ecpd: --daemon serves a socket: it needs --socket\n");
            return 2;
        }
        char *path = socket_path ? xstrdup(socket_path) : ecp_default_socket_path(options.workspace);
        int status = -1;
        if (!daemon || ecp_socket_answers(path))
            status = 0;
        else
            status = daemon_start(&daemon_report);
        if (status == 0 && print_socket_path)
            printf("%s\n", path);
        free(path);
        if (status >= 0)
            return status;
    }

    char cwd[4096];
    if ((eca || acp) && !options.workspace && getcwd(cwd, sizeof cwd))
        options.workspace = cwd; /* an ECA or ACP client starts its server in the project */
    signal(SIGPIPE, SIG_IGN); /* a vanished peer is an EPIPE on its write, not our death */
    signal(SIGXFSZ, SIG_IGN); /* a save past RLIMIT_FSIZE is an EFBIG the save reports, not our death */
    app a = {0};
    if (log_path) {
        a.log_file = fopen(log_path, "a");
        if (!a.log_file) {
            fprintf(stderr, "ecpd: cannot open log %s: %s\n", log_path, strerror(errno));
            return 2;
        }
        options.log_out = a.log_file;
    }
    options.shared = use_socket;
    uv_loop_init(&a.loop);
    a.srv = server_new(&a.loop, &options, &err);
    if (!a.srv) {
        fprintf(stderr, "ecpd: %s\n", err.message);
        return 1;
    }
    server_set_exit_hook(a.srv, on_exit_requested, &a);
    uv_signal_init(&a.loop, &a.sigint);
    uv_signal_init(&a.loop, &a.sigterm);
    uv_signal_init(&a.loop, &a.sighup);
    a.sigint.data = a.sigterm.data = a.sighup.data = &a;
    uv_signal_start(&a.sigint, on_signal, SIGINT);
    uv_signal_start(&a.sigterm, on_signal, SIGTERM);
    /* a closed terminal: end like any other stop, socket file removed */
    uv_signal_start(&a.sighup, on_signal, SIGHUP);

    int code = 1;
    if (use_socket && activated) {
        a.listener = transport_socket_adopt(a.srv, activated_fd, &err);
        if (!a.listener) {
            fprintf(stderr, "ecpd: %s\n", err.message);
            goto done;
        }
        fprintf(stderr, "ecpd: listening on %s (handed over by socket activation: the socket stays when ecpd ends)\n",
                transport_socket_path(a.listener));
    } else if (use_socket) {
        char *path = socket_path ? xstrdup(socket_path) : ecp_default_socket_path(options.workspace);
        a.listener = transport_socket_start(a.srv, path, &err);
        if (!a.listener && daemon_report >= 0 && ecp_socket_answers(path)) {
            /* another --daemon won the race: its server is the one asked for */
            daemon_ready(&daemon_report);
            free(path);
            code = 0;
            goto done;
        }
        if (!a.listener) {
            fprintf(stderr, "ecpd: %s\n", err.message);
            free(path);
            goto done;
        }
        daemon_ready(&daemon_report);
        fprintf(stderr, "ecpd: listening on %s\n", path);
        fprintf(stderr, "ecpd: talk to it with: ecpctl --socket %s ecp/ping '{\"hello\":1}'\n", path);
        free(path);
    } else if (acp) {
        a.acp = acp_frontend_open(&a.loop, server_agent(a.srv), server_logger(a.srv), ECPD_VERSION, acp_eof, &a, &err);
        if (!a.acp) {
            fprintf(stderr, "ecpd: %s\n", err.message);
            goto done;
        }
    } else {
        a.stdio = transport_stdio_open(a.srv, stdio_closed, &a, &err);
        if (!a.stdio) {
            fprintf(stderr, "ecpd: stdio: %s\n", err.message);
            goto done;
        }
        stream_link_on_ended(a.stdio, stdin_ended, &a);
    }

    loop_trace *trace = loop_trace_start(&a.loop, getenv("ECPD_LOOP_TRACE"));
    while (!server_exit_requested(a.srv, &code))
        uv_run(&a.loop, UV_RUN_ONCE);
    loop_trace_stop(trace);
done:
    if (!server_exit_requested(a.srv, NULL))
        server_request_exit(a.srv, code);
    double deadline = now_seconds() + 1.0;
    /* Each connection belongs to its transport's link, so the server goes
     * only after every link has closed. Peers get a while to read what is
     * queued for them; links still waiting then are closed without it, and
     * their close callbacks, which close the connections, run on the next
     * turn of the loop (whatever the deadline: the server must not go first). */
    drain(&a.loop, deadline - 0.4, &a);
    if (a.stdio)
        stream_link_close(a.stdio, false);
    if (a.acp)
        acp_frontend_close(a.acp);
    if (a.listener)
        transport_socket_stop(a.listener, false);
    while (transports_open(&a) && uv_run(&a.loop, UV_RUN_NOWAIT))
        ;
    acp_frontend_free(a.acp);
    if (a.listener)
        transport_socket_free(a.listener), a.listener = NULL;
    uv_close((uv_handle_t *)&a.sigint, NULL);
    uv_close((uv_handle_t *)&a.sigterm, NULL);
    uv_close((uv_handle_t *)&a.sighup, NULL);
    server_free(a.srv);
    /* The services' handles close on the loop's next turns: that takes
     * moments, whatever freeing the services took (terminals get their grace
     * period there), so it has a bound of its own, not what is left of the
     * peers' second. */
    drain(&a.loop, now_seconds() + 0.5, NULL);
    if (uv_loop_close(&a.loop) != 0)
        ecp_log(NULL, ECP_LOG_WARN, "loop still had handles at exit");
    if (a.log_file)
        fclose(a.log_file);
    return code;
}
