/* ecpctl: talk to ecpd from a shell.
 *
 *   ecpctl ecp/ping '{"hello":1}'          one request to the workspace's server
 *   ecpctl --socket PATH document/list     a server on another socket
 *   ecpctl --spawn file/stat '{"uri":"/etc"}'    a private ecpd on stdio
 *   ecpctl --listen                        print notifications as they arrive
 *   ecpctl --methods [NAMESPACE]           what the server implements, one method a line
 *   ecpctl --stop                          stop the workspace's server (ecp/stop)
 *   printf 'ecp/ping {}\n' | ecpctl         requests from stdin, one per line
 *   ecpctl --ssh me@host:/src ecp/ping     an ecpd on another host, on ssh's stdio
 *   ecpctl --ssh host:/src --connect ...   that host's shared server, its socket forwarded
 *
 * Each response is printed as one line of JSON. The exit status is 0 when
 * every request succeeded, 1 when one answered an error, 2 on a usage or
 * connection problem (a server that goes away before answering is one).
 * Blocking I/O and poll(): a script client needs no loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "arena.h"
#include "buf.h"
#include "framing.h"
#include "json.h"
#include "json_writer.h"
#include "socket_path.h"
#include "ssh_remote.h"

static const char usage[] =
    "usage: ecpctl [--socket PATH | --spawn | --ssh [USER@]HOST[:DIR] [--connect]] [--workspace DIR]\n"
    "              [--ssh-option OPT]... [--ssh-ecpd PATH] [--listen] [--timeout SECONDS]\n"
    "              [METHOD [PARAMS_JSON] | --methods [NAMESPACE] | --stop]\n"
    "--spawn runs $ECPD, else the ecpd next to ecpctl (or in the build tree beside it),\n"
    "else ecpd from PATH.\n"
    "--stop stops the server on the socket for every client.\n"
    "--ssh runs `ssh -T HOST -- ecpd --stdio --workspace DIR` with your own ssh config, keys\n"
    "and agent, and talks over it as --spawn does (DIR: --workspace, else the remote login\n"
    "directory). With --connect it reaches HOST's shared server instead: `ecpd --socket\n"
    "--daemon --print-socket-path` there starts one unless one answers and says where it\n"
    "listens, then `ssh -N -L` forwards that socket to one in a private 0700 directory here,\n"
    "for as long as ecpctl runs. --ssh-ecpd names the remote program (default: ecpd on the\n"
    "remote PATH). --ssh-option passes one argument to ssh (-Fconfig, -p2222, -i/key,\n"
    "-oName=value); $ECP_SSH_OPTIONS holds more, separated by spaces, before them.\n"
    "Without METHOD, reads requests from stdin: one per line, either a JSON-RPC message\n"
    "or 'METHOD [PARAMS_JSON]'. Prints each response (and, with --listen, each\n"
    "notification) as one line of JSON.\n"
    "--methods prints the methods the server implements (of one namespace, if named),\n"
    "one a line: name, params, and what it does.\n";

typedef struct session {
    int rfd, wfd;
    pid_t child;
    framing_decoder in;
    long long next_id;
    int outstanding;     /* requests sent and not answered */
    bool any_error;
    bool listen;
    bool methods;        /* print ecp/methods' answer for a person */
    const char *methods_ns;
} session;

static int connect_socket(const char *path)
{
    /* Whoever listens there reads what we send, file contents and all: it
     * must be our own server, not one another user put in its place. */
    ecp_socket_failure failure;
    ecp_error err = {0};
    int fd = ecp_socket_connect_own(path, 0, &failure, &err);
    if (fd < 0) {
        fprintf(stderr, "ecpctl: %s\n", err.message);
        return -1;
    }
    return fd;
}

/* Finds the server to run: $ECPD, else the ecpd next to this program (an
 * install), else the one of its build tree (build/server/ecpd beside
 * build/clients/cli/ecpctl), else "ecpd" for PATH. */
static void find_server(char *server, size_t size)
{
    const char *explicit_server = getenv("ECPD");
    if (explicit_server && explicit_server[0]) {
        snprintf(server, size, "%s", explicit_server);
        return;
    }
    snprintf(server, size, "ecpd");
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0)
        return;
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (!slash)
        return;
    *slash = '\0';
    static const char *const beside[] = {"/ecpd", "/../../server/ecpd"};
    for (size_t i = 0; i < sizeof beside / sizeof beside[0]; i++) {
        char candidate[PATH_MAX + 32];
        snprintf(candidate, sizeof candidate, "%s%s", self, beside[i]);
        if (access(candidate, X_OK) == 0) {
            snprintf(server, size, "%s", candidate);
            return;
        }
    }
}

/* Runs the server find_server() names on stdio, or argv (ssh) when given. */
static int spawn_server(session *s, const char *workspace, char *const *argv)
{
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) < 0 || pipe2(from_child, O_CLOEXEC) < 0) {
        perror("ecpctl: pipe");
        return -1;
    }
    char server[PATH_MAX + 40];
    find_server(server, sizeof server);
    s->child = fork();
    if (s->child < 0) {
        perror("ecpctl: fork");
        return -1;
    }
    if (s->child == 0) {
        dup2(to_child[0], STDIN_FILENO);
        dup2(from_child[1], STDOUT_FILENO);
        if (argv) {
            execvp(argv[0], argv);
            fprintf(stderr, "ecpctl: cannot run %s: %s\n", argv[0], strerror(errno));
            _exit(126); /* not 127: that is the remote shell's word for a missing ecpd */
        }
        if (workspace)
            execlp(server, server, "--stdio", "--workspace", workspace, (char *)NULL);
        else
            execlp(server, server, "--stdio", (char *)NULL);
        fprintf(stderr, "ecpctl: cannot run %s: %s\n", server, strerror(errno));
        _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    s->wfd = to_child[1];
    s->rfd = from_child[0];
    return 0;
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w, n -= (size_t)w;
    }
    return true;
}

/* Sends one line of input: a JSON-RPC message as is, or METHOD [PARAMS]. */
static bool send_line(session *s, const char *line)
{
    while (*line == ' ' || *line == '\t')
        line++;
    size_t len = strcspn(line, "\r\n");
    if (len == 0)
        return true;
    buf msg = BUF_INIT;
    if (line[0] == '{' || line[0] == '[') {
        buf_append(&msg, line, len);
        /* count the requests in it, so we know how many answers to wait for */
        json_doc doc;
        if (json_doc_parse(&doc, msg.data, msg.len, NULL) == 0) {
            json_ref root = json_root(&doc);
            if (json_type_of(&doc, root) == JSON_ARRAY)
                s->outstanding++;
            else if (json_get(&doc, root, "id") != JSON_NO_REF)
                s->outstanding++;
            json_doc_free(&doc);
        } else {
            s->outstanding++; /* the server answers a parse error */
        }
    } else {
        size_t mlen = strcspn(line, " \t\r\n");
        const char *params = line + mlen;
        while (*params == ' ' || *params == '\t')
            params++;
        size_t plen = strcspn(params, "\r\n");
        json_writer w;
        jw_init(&w, &msg);
        buf_appendf(&msg, "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"method\":", ++s->next_id);
        jw_string_n(&w, line, mlen);
        if (plen)
            buf_appendf(&msg, ",\"params\":%.*s", (int)plen, params);
        buf_push(&msg, '}');
        s->outstanding++;
    }
    buf_push(&msg, '\n');
    bool ok = write_all(s->wfd, msg.data, msg.len);
    buf_free(&msg);
    return ok;
}

/* Prints ecp/methods' result as "name  params -- summary" lines, names
 * aligned. Returns how many, or -1 when the result is not a list of methods. */
static long print_methods(const json_doc *doc, json_ref result)
{
    json_ref list = json_get(doc, result, "methods");
    if (json_type_of(doc, list) != JSON_ARRAY)
        return -1;
    arena a = ARENA_INIT;
    size_t width = 0;
    for (json_ref m = json_first(doc, list); m != JSON_NO_REF; m = json_next(doc, m)) {
        const char *name;
        size_t len;
        if (json_string(doc, json_get(doc, m, "name"), &a, &name, &len) && len > width)
            width = len;
    }
    long count = 0;
    for (json_ref m = json_first(doc, list); m != JSON_NO_REF; m = json_next(doc, m), count++) {
        const char *name = "?", *params = "", *summary = "";
        json_string(doc, json_get(doc, m, "name"), &a, &name, NULL);
        json_string(doc, json_get(doc, m, "params"), &a, &params, NULL);
        json_string(doc, json_get(doc, m, "summary"), &a, &summary, NULL);
        printf("%-*s  %s -- %s\n", (int)width, name, params, summary);
    }
    fflush(stdout);
    arena_free(&a);
    return count;
}

/* Prints what the server sent; returns false when the connection ended. */
static bool read_server(session *s)
{
    char chunk[65536];
    ssize_t n = read(s->rfd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR)
        return true;
    if (n <= 0)
        return false;
    framing_decoder_feed(&s->in, chunk, (size_t)n);
    for (;;) {
        char *msg;
        size_t len;
        frame_status st = framing_decoder_next(&s->in, &msg, &len);
        if (st != FRAME_MESSAGE)
            break;
        json_doc doc;
        bool is_notification = false, is_error = false, printed = false;
        if (json_doc_parse(&doc, msg, len, NULL) == 0) {
            json_ref root = json_root(&doc);
            is_notification = json_type_of(&doc, json_get(&doc, root, "method")) == JSON_STRING;
            is_error = json_get(&doc, root, "error") != JSON_NO_REF;
            if (s->methods && !is_notification && !is_error) {
                long count = print_methods(&doc, json_get(&doc, root, "result"));
                printed = count >= 0;
                if (count == 0) {
                    fprintf(stderr, "ecpctl: the server has no methods in namespace \"%s\"\n", s->methods_ns);
                    is_error = true;
                }
            }
            json_doc_free(&doc);
        }
        if (!is_notification) {
            s->outstanding--;
            s->any_error |= is_error;
        }
        if (!printed && (!is_notification || s->listen)) {
            fwrite(msg, 1, len, stdout);
            fputc('\n', stdout);
            fflush(stdout);
        }
        free(msg);
    }
    return true;
}

int main(int argc, char **argv)
{
    const char *socket_path = NULL, *workspace = NULL, *method = NULL, *params = NULL;
    buf methods_params = BUF_INIT;
    bool spawn = false, stop = false, connect = false;
    const char *ssh_spec = NULL, *ssh_ecpd = NULL;
    enum { MAX_SSH_OPTIONS = 32 };
    const char *ssh_options[MAX_SSH_OPTIONS];
    size_t ssh_option_count = 0;
    int timeout_s = 30;
    session s = {.rfd = -1, .wfd = -1};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--socket") == 0 && i + 1 < argc)
            socket_path = argv[++i];
        else if (strcmp(argv[i], "--workspace") == 0 && i + 1 < argc)
            workspace = argv[++i];
        else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc)
            timeout_s = atoi(argv[++i]);
        else if (strcmp(argv[i], "--spawn") == 0)
            spawn = true;
        else if (strcmp(argv[i], "--ssh") == 0 && i + 1 < argc)
            ssh_spec = argv[++i];
        else if (strcmp(argv[i], "--ssh-option") == 0 && i + 1 < argc && ssh_option_count < MAX_SSH_OPTIONS)
            ssh_options[ssh_option_count++] = argv[++i];
        else if (strcmp(argv[i], "--ssh-ecpd") == 0 && i + 1 < argc)
            ssh_ecpd = argv[++i];
        else if (strcmp(argv[i], "--connect") == 0)
            connect = true;
        else if (strcmp(argv[i], "--listen") == 0)
            s.listen = true;
        else if (strcmp(argv[i], "--methods") == 0)
            s.methods = true;
        else if (strcmp(argv[i], "--stop") == 0)
            stop = true;
        else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
            return fputs(usage, stdout), 0;
        else if (strcmp(argv[i], "--version") == 0)
            return printf("ecpctl %s\n", ECPD_VERSION), 0;
        else if (argv[i][0] == '-' && argv[i][1] == '-')
            return fprintf(stderr, "ecpctl: unknown option %s\n%s", argv[i], usage), 2;
        else if (!method)
            method = argv[i];
        else if (!params)
            params = argv[i];
        else
            return fprintf(stderr, "ecpctl: too many arguments\n%s", usage), 2;
    }
    if (s.methods) {
        /* the one positional argument, if any, is the namespace */
        if (params)
            return fprintf(stderr, "ecpctl: --methods takes one namespace\n%s", usage), 2;
        json_writer w;
        jw_init(&w, &methods_params);
        jw_object_begin(&w);
        if (method)
            jw_key_string(&w, "namespace", method);
        s.methods_ns = method;
        jw_object_end(&w);
        method = "ecp/methods";
        params = methods_params.data;
    }
    if (stop) {
        if (method || s.methods || spawn || s.listen)
            return fprintf(stderr, "ecpctl: --stop takes no method and no --spawn, --methods or --listen\n%s", usage), 2;
        method = "ecp/stop";
    }
    if ((ssh_option_count || ssh_ecpd || connect) && !ssh_spec)
        return fprintf(stderr, "ecpctl: --ssh-option, --ssh-ecpd and --connect go with --ssh\n%s", usage), 2;
    if (ssh_spec && (spawn || socket_path))
        return fprintf(stderr, "ecpctl: --ssh takes no --spawn or --socket\n%s", usage), 2;
    signal(SIGPIPE, SIG_IGN);
    ecp_ssh ssh = {0};
    ecp_ssh_forward forward = {.pid = -1};
    if (ssh_spec) {
        ecp_error err;
        if (ecp_ssh_parse(&ssh, ssh_spec, &err) < 0)
            return fprintf(stderr, "ecpctl: %s\n", err.message), 2;
        for (size_t i = 0; i < ssh_option_count; i++)
            ecp_ssh_add_option(&ssh, ssh_options[i]);
        if (ssh_ecpd)
            ecp_ssh_set_ecpd(&ssh, ssh_ecpd);
        if (!ssh.path && workspace)
            ssh.path = xstrdup(workspace);
    }
    framing_decoder_init(&s.in, (size_t)1 << 31);
    if (ssh_spec && connect) {
        char *why = NULL;
        char *remote = ecp_ssh_remote_socket(&ssh, NULL, &why);
        if (!remote || ecp_ssh_forward_start(&forward, &ssh, remote, 30000, &why) < 0) {
            fprintf(stderr, "ecpctl: %s\n", why);
            free(why);
            free(remote);
            ecp_ssh_free(&ssh);
            framing_decoder_free(&s.in);
            return 2;
        }
        free(remote);
        s.rfd = s.wfd = connect_socket(forward.local_socket);
        if (s.rfd < 0) {
            ecp_ssh_forward_stop(&forward);
            ecp_ssh_free(&ssh);
            framing_decoder_free(&s.in);
            return 2;
        }
    } else if (ssh_spec) {
        char **ssh_argv = ecp_ssh_stdio_argv(&ssh, NULL);
        int rc = spawn_server(&s, NULL, ssh_argv);
        ecp_ssh_argv_free(ssh_argv);
        if (rc < 0) {
            ecp_ssh_free(&ssh);
            framing_decoder_free(&s.in);
            return 2;
        }
    } else if (spawn) {
        if (spawn_server(&s, workspace, NULL) < 0)
            return 2;
    } else {
        char *path = socket_path ? strdup(socket_path) : ecp_default_socket_path(workspace);
        s.rfd = s.wfd = connect_socket(path);
        free(path);
        if (s.rfd < 0)
            return 2;
    }

    bool stdin_open = method == NULL && !(s.listen && isatty(STDIN_FILENO));
    if (!method && s.listen) {
        /* a server frames nothing for a client that has not spoken; speaking
         * first also makes the subscription explicit */
        method = "notifications/subscribe";
        params = "{\"events\":[\"*\"]}";
    }
    bool lost = false; /* the server went away with requests unanswered */
    if (method) {
        buf line = BUF_INIT;
        buf_appendf(&line, "%s %s", method, params ? params : "");
        if (!send_line(&s, line.data)) {
            fprintf(stderr, "ecpctl: the server closed the connection\n");
            lost = true;
        }
        buf_free(&line);
    }
    buf input = BUF_INIT;
    int idle_ms = 0;
    while (!lost) {
        if (!stdin_open && s.outstanding <= 0 && !s.listen)
            break;
        struct pollfd fds[2] = {{s.rfd, POLLIN, 0}, {stdin_open ? STDIN_FILENO : -1, POLLIN, 0}};
        int r = poll(fds, 2, 100);
        if (r < 0 && errno != EINTR)
            break;
        if (r == 0 && !stdin_open && !s.listen && (idle_ms += 100) >= timeout_s * 1000) {
            fprintf(stderr, "ecpctl: no answer within %d s\n", timeout_s);
            s.any_error = true;
            break;
        }
        if (fds[0].revents & (POLLIN | POLLHUP)) {
            idle_ms = 0;
            if (!read_server(&s)) {
                if (s.outstanding > 0) {
                    /* over ssh, why it closed is known once ssh has exited */
                    if (!(ssh_spec && s.child > 0))
                        fprintf(stderr, "ecpctl: the server closed the connection without answering\n");
                    lost = true;
                }
                break;
            }
        }
        if (stdin_open && (fds[1].revents & (POLLIN | POLLHUP))) {
            char chunk[65536];
            ssize_t n = read(STDIN_FILENO, chunk, sizeof chunk);
            if (n <= 0) {
                stdin_open = false;
                if (input.len)
                    send_line(&s, input.data);
                continue;
            }
            buf_append(&input, chunk, (size_t)n);
            char *nl;
            while (input.len && (nl = memchr(input.data, '\n', input.len))) {
                *nl = '\0';
                if (!send_line(&s, input.data))
                    stdin_open = false;
                buf_consume(&input, (size_t)(nl - input.data) + 1);
            }
        }
    }
    buf_free(&input);
    buf_free(&methods_params);
    framing_decoder_free(&s.in);
    if (s.child > 0) {
        close(s.wfd); /* EOF on its stdin ends the server */
        close(s.rfd);
        int status = 0;
        waitpid(s.child, &status, 0);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (ssh_spec && (lost || code == ECP_SSH_NOT_FOUND || code == ECP_SSH_FAILED)) {
            /* ssh said its own words on our stderr; a missing remote ecpd gets ours too */
            if (code != ECP_SSH_FAILED) {
                char *why = ecp_ssh_failure(&ssh, code, NULL);
                fprintf(stderr, "ecpctl: %s\n", why);
                free(why);
            }
            lost = true;
        } else if (code == 127) {
            lost = true; /* the child could not exec the server (it said why) */
        }
    } else {
        close(s.rfd);
    }
    ecp_ssh_forward_stop(&forward);
    ecp_ssh_free(&ssh);
    return lost ? 2 : s.any_error ? 1 : 0;
}
