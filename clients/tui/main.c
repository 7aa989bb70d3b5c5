/* ecp-tui's start, its loop and its connection to the server. */
#include <errno.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "editor.h"
#include "input.h"
#include "lsp.h"
#include "view.h"
#include "arena.h"
#include "socket_path.h"
#include "ssh_remote.h"

#define ECP_TUI_VERSION "0.1.0"

static const char usage[] =
    "usage: ecp-tui [--connect [SOCKET]] [--server PATH] [--server-log FILE] [FILE|DIR ...]\n"
    "       ecp-tui --ssh [USER@]HOST[:DIR] [--connect] [--ssh-option OPT]... [--ssh-ecpd PATH] [FILE ...]\n"
    "Opens the files (FILE:LINE opens at a line), or a fuzzy file picker on a directory.\n"
    "The workspace is the first directory named, else the current directory.\n"
    "Without --connect it runs its own ecpd on stdio: $ECPD, else the one beside ecp-tui\n"
    "(or in the build tree beside it), else ecpd from PATH. --connect shares a running\n"
    "server (ecpd --socket); without SOCKET (a socket, or a path ending in .sock), the\n"
    "workspace's default socket. With no server there it starts one, and starts one\n"
    "again if that one stops.\n"
    "--ssh edits on another host: `ssh -T HOST -- ecpd --stdio --workspace DIR` runs with\n"
    "your own ssh config, keys and agent, and the editor talks over it as over a local\n"
    "ecpd. DIR (default: the remote login directory; ~/ and relative paths start there)\n"
    "is the workspace, and FILEs are remote paths, relative to it; with no FILE the file\n"
    "picker opens. With --connect it shares HOST's socket server instead: `ecpd --socket\n"
    "--daemon --print-socket-path` there starts one unless one answers and says where it\n"
    "listens, and `ssh -N -L` forwards that socket to one in a private 0700 directory here\n"
    "until the editor exits (a lost connection runs both again). --ssh-ecpd names the\n"
    "remote program (default: ecpd on the remote PATH). --ssh-option passes one argument\n"
    "to ssh (-Fconfig, -p2222, -i/key, -oName=value); $ECP_SSH_OPTIONS holds more,\n"
    "separated by spaces, before them. The remote shell must be a POSIX one.\n"
    "F1 lists the keys; every one can be rebound through the server's keybindings.\n";

/* libuv owns SIGWINCH (ncurses' handler would only be heard at the next key). */
static void on_sigwinch(uv_signal_t *h, int signum)
{
    app *a = h->data;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
        resize_term(ws.ws_row, ws.ws_col);
    input_resized(a);
}

static void on_input(uv_poll_t *h, int status, int events)
{
    app *a = h->data;
    if (status < 0) {
        app_quit_now(a);
        return;
    }
    input_read(a);
}

static void on_prepare(uv_prepare_t *h)
{
    app *a = h->data;
    if (a->need_paint && !a->quitting) {
        a->need_paint = false;
        paint(a);
    }
}

/* ---- the server ---- */

static void trust_refresh(app *a);

static void on_notify(void *ctx, const char *method, const json_doc *doc, json_ref params)
{
    app *a = ctx;
    if (strncmp(method, "terminal/", 9) == 0)
        terminal_handle_notification(a, method, doc, params);
    else if (strncmp(method, "chat/", 5) == 0)
        chat_handle_notification(a, method, doc, params);
    else if (strcmp(method, "workspace/didChangeTrust") == 0)
        trust_refresh(a);
    else
        editor_handle_notification(a, method, doc, params);
}

static void on_reconnect_timer(uv_timer_t *h);

static void on_closed(void *ctx, const char *why)
{
    app *a = ctx;
    if (a->quitting)
        return;
    model_server_lost(a, why);
    if (a->connected_to_socket) {
        a->reconnect_tries = 0;
        a->started_socket_server = false;
        uv_timer_start(&a->reconnect_timer, on_reconnect_timer, 0, 0);
    }
}

static void on_theme(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (result != JSON_NO_REF)
        model_theme_arrived(a, doc, json_get(doc, result, "theme"));
    a->need_paint = true;
}

static void on_repo(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    model_repository_arrived(a, doc, result);
    git_refresh_branch(a);
    for (int i = 0; i < a->tab_count; i++)
        tab_request_git(a, a->tabs[i]);
}

/* ---- workspace trust ---- */

static void on_trusted(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "Could not trust the folder: %s", msg ? msg : "the server refused");
        free(msg);
    } else {
        app_message(a, false, "Trusted %s: its settings apply and its language servers start", a->workspace);
        editor_start_languages_again(a);
    }
    trust_refresh(a);
}

static void trust_chosen(app *a, int key)
{
    if (key == 'y')
        app_call(a, "workspace/trust", on_trusted, 0, "{\"uri\":%J,\"trusted\":true}", a->workspace);
    else
        app_message(a, false, "Restricted: this folder's settings that run programs stay ignored");
}

/* The first time the workspace has settings that only trust applies, the
 * user is asked; the status line says it is restricted for as long as it is. */
static void on_trust_state(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    model_trust_arrived(a, doc, result);
    if (!a->restricted || a->trust_asked || a->prompt.active)
        return;
    a->trust_asked = true;
    prompt_choose(a, "Trust this folder? Its settings that run programs apply only then (y/n)", "yn", trust_chosen);
}

static void trust_refresh(app *a) { app_call(a, "workspace/isTrusted", on_trust_state, 0, NULL); }

void app_ask_trust(app *a, const char *why)
{
    if (a->trust_asked || a->prompt.active)
        return;
    a->trust_asked = true;
    char question[256];
    snprintf(question, sizeof question, "Trust this folder? %s, so they start only then (y/n)", why);
    prompt_choose(a, question, "yn", trust_chosen);
}

/* Our own clientId: the cursors of ours are those notifications name with it. */
static void on_initialized(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    int64_t id = -1;
    if (result != JSON_NO_REF && json_int64(doc, json_get(doc, result, "clientId"), &id))
        a->client_id = id;
    for (int i = 0; i < a->tab_count; i++)
        tab_request_clients(a, a->tabs[i]);
}

static void begin_session(app *a)
{
    a->server_dead = false;
    a->client_id = -1;
    /* Asked first, so that its answer comes before any notification of another client's cursors. */
    app_call(a, "initialize", on_initialized, 0,
             "{\"processId\":%d,\"workspaceRoot\":%J,\"clientInfo\":{\"name\":\"ecp-tui\",\"version\":%J},"
             "\"capabilities\":{\"positionEncodings\":[\"utf-32\"]}}",
             /* a process id names a process on the server's host: ours is on another */
             a->ssh ? 0 : (int)getpid(), a->workspace, ECP_TUI_VERSION);
    keybindings_reload(a);
    app_call(a, "theme/current", on_theme, 0, NULL);
    app_call(a, "git/isRepo", on_repo, 0, "{\"uri\":%J}", a->workspace);
    trust_refresh(a);
    lsp_read_settings(a);
}

static rpc_client *connect_socket(app *a, char **why)
{
    rpc_handlers h = {.ctx = a, .on_notify = on_notify, .on_closed = on_closed};
    return rpc_connect(a->loop, a->socket_path, h, why);
}

#define SSH_FORWARD_WAIT_MS 30000

/* --ssh --connect: a remote socket server (started there unless one answers)
 * and a running forwarder of its socket to a->socket_path. Blocks for the
 * ssh round trips. */
static int ssh_prepare_forward(app *a, char **why)
{
    char *remote = ecp_ssh_remote_socket(a->ssh, a->workspace, why);
    if (!remote)
        return -1;
    int status = 0;
    if (!ecp_ssh_forward_alive(a->ssh_forward)) {
        ecp_ssh_forward_stop(a->ssh_forward);
        status = ecp_ssh_forward_start(a->ssh_forward, a->ssh, remote, SSH_FORWARD_WAIT_MS, why);
    }
    free(remote);
    if (status == 0) {
        free(a->socket_path);
        a->socket_path = xstrdup(a->ssh_forward->local_socket);
    }
    return status;
}

/* At start: the socket's server, else one started for it, waited for a few seconds. */
static bool connect_server(app *a)
{
    rpc_handlers h = {.ctx = a, .on_notify = on_notify, .on_closed = on_closed};
    char *why = NULL;
    if (a->ssh && a->connected_to_socket) {
        if (ssh_prepare_forward(a, &why) == 0)
            a->rpc = connect_socket(a, &why);
    } else if (a->ssh) {
        a->rpc = rpc_spawn_ssh(a->loop, a->ssh, a->workspace, a->server_log, h, &why);
    } else if (a->socket_path) {
        a->rpc = connect_socket(a, &why);
        if (!a->rpc && rpc_start_socket_server(a->loop, a->server_path, a->socket_path, a->workspace, a->server_log, &why)) {
            for (int tries = 0; !a->rpc && tries < 100; tries++) {
                free(why);
                why = NULL;
                usleep(50 * 1000);
                a->rpc = connect_socket(a, &why);
            }
        }
    } else {
        a->rpc = rpc_spawn(a->loop, a->server_path, a->workspace, a->server_log, h, &why);
    }
    if (!a->rpc) {
        app_message(a, true, "%s", why ? why : "cannot reach the server");
        free(why);
        return false;
    }
    free(why);
    begin_session(a);
    return true;
}

/* ---- a shared server that stopped: connect again, starting one if none answers ---- */

#define RECONNECT_EVERY_MS 100
#define RECONNECT_TRIES 100 /* ten seconds, then Ctrl+S tries again */

#define SSH_RECONNECT_EVERY_MS 1000
#define SSH_RECONNECT_TRIES 10

static void on_reconnect_timer(uv_timer_t *h)
{
    app *a = h->data;
    if (a->quitting || rpc_is_open(a->rpc))
        return;
    char *why = NULL;
    /* Over ssh the forward answers locally whether or not the remote server
     * lives: the remote side is made sure of first, every try. */
    rpc_client *rpc = NULL;
    if (!a->ssh || ssh_prepare_forward(a, &why) == 0)
        rpc = connect_socket(a, &why);
    if (rpc) {
        free(why);
        rpc_close(a->rpc);
        a->rpc = rpc;
        a->reconnect_tries = 0;
        a->started_socket_server = false;
        begin_session(a);
        recovery_offer(a);
        return;
    }
    if (a->ssh) {
        if (++a->reconnect_tries < SSH_RECONNECT_TRIES) {
            uv_timer_start(&a->reconnect_timer, on_reconnect_timer, SSH_RECONNECT_EVERY_MS, 0);
        } else {
            app_message(a, true, "Cannot reach the server on %s (%s); Ctrl+S tries again", a->ssh->host, why ? why : "");
            a->reconnect_tries = 0;
        }
        free(why);
        return;
    }
    /* Nobody answers: start a server once per outage. Editors that lost the same server wait each a
     * different while first (by process id), so that one starts it and the others find it. */
    if (!a->started_socket_server && a->reconnect_tries >= 1 + (int)(getpid() % 5)) {
        char *start_why = NULL;
        a->started_socket_server = true;
        if (!rpc_start_socket_server(a->loop, a->server_path, a->socket_path, a->workspace, a->server_log, &start_why))
            app_message(a, true, "%s", start_why);
        free(start_why);
    }
    if (++a->reconnect_tries < RECONNECT_TRIES) {
        uv_timer_start(&a->reconnect_timer, on_reconnect_timer, RECONNECT_EVERY_MS, 0);
    } else {
        app_message(a, true, "Cannot reach a server on %s (%s); Ctrl+S tries again", a->socket_path, why ? why : "");
        a->reconnect_tries = 0;
        a->started_socket_server = false;
    }
    free(why);
}

/* Over ssh nothing is known until the remote ecpd answers: ssh may fail to
 * log in, or find no ecpd there. At start the editor waits for a first
 * answer, so that such a failure is a message on the terminal and exit
 * status 1, not an editor that lost a server it never had. */
static void on_first_answer(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    *(bool *)ctx = true;
}

static char *wait_for_remote(app *a)
{
    bool answered = false;
    if (!rpc_call(a->rpc, "ecp/ping", on_first_answer, &answered, 0, NULL))
        return xstrdup("the connection closed at once");
    while (!answered && rpc_is_open(a->rpc))
        uv_run(a->loop, UV_RUN_ONCE);
    if (answered)
        return NULL;
    uv_timer_stop(&a->reconnect_timer); /* the editor ends here: nothing to reconnect */
    /* what ssh said may come just after its exit */
    for (int i = 0; i < 20; i++) {
        uv_run(a->loop, UV_RUN_NOWAIT);
        usleep(10 * 1000);
    }
    char *why = rpc_ssh_failure(a->rpc);
    if (!why) {
        buf b = BUF_INIT;
        buf_appendf(&b, "the server on %s did not answer through the forwarded socket", a->ssh->host);
        why = buf_detach(&b);
    }
    return why;
}

void app_restart_server(app *a)
{
    if (rpc_is_open(a->rpc))
        return;
    if (a->connected_to_socket) {
        a->reconnect_tries = 0;
        uv_timer_start(&a->reconnect_timer, on_reconnect_timer, 0, 0);
        return;
    }
    rpc_close(a->rpc);
    a->rpc = NULL;
    a->server_dead = true;
    if (connect_server(a))
        recovery_offer(a);
}

void app_quit_now(app *a)
{
    a->quitting = true;
    uv_stop(a->loop);
}

/* Another client opening or closing the file sends no notification of its own: ask now and then. */
#define PRESENCE_EVERY_MS 1500

static void on_presence_timer(uv_timer_t *h)
{
    app *a = h->data;
    tab *t = app_tab(a);
    if (t && rpc_is_open(a->rpc))
        tab_request_clients(a, t);
}

/* ---- start ---- */

static char *find_server(void)
{
    const char *env = getenv("ECPD");
    if (env && *env)
        return xstrdup(env);
    char exe[PATH_MAX];
    size_t size = sizeof exe;
    if (uv_exepath(exe, &size) == 0) {
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = 0;
            const char *beside[] = {"/ecpd", "/../../server/ecpd", "/../server/ecpd"};
            for (size_t i = 0; i < 3; i++) {
                buf p = BUF_INIT;
                buf_appendf(&p, "%s%s", exe, beside[i]);
                if (access(p.data, X_OK) == 0)
                    return buf_detach(&p);
                buf_free(&p);
            }
        }
    }
    const char *path = getenv("PATH");
    if (path) {
        char *copy = xstrdup(path), *save = NULL;
        for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
            buf p = BUF_INIT;
            buf_appendf(&p, "%s/ecpd", dir);
            if (access(p.data, X_OK) == 0) {
                free(copy);
                return buf_detach(&p);
            }
            buf_free(&p);
        }
        free(copy);
    }
    return NULL;
}

static char *absolute(const char *path)
{
    char *real = realpath(path, NULL);
    if (real)
        return real;
    /* A file not made yet: absolute from the current directory. */
    if (path[0] == '/')
        return xstrdup(path);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return xstrdup(path);
    buf b = BUF_INIT;
    buf_appendf(&b, "%s/%s", cwd, path);
    return buf_detach(&b);
}

static void setup_curses(app *a)
{
    set_escdelay(25);
    char *direct = direct_colour_terminal();
    if (direct)
        a->screen = newterm(direct, stdout, stdin);
    if (!a->screen)
        initscr();
    free(direct);
    raw();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    nodelay(stdscr, TRUE);
    meta(stdscr, TRUE);
    if (has_colors()) {
        start_color();
        use_default_colors();
    }
    a->direct_color = COLORS >= 0x1000000;
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    getmaxyx(stdscr, a->rows, a->cols);
    /* Bracketed paste: a paste arrives marked, as text, not as keys to indent. */
    fputs("\033[?2004h", stdout);
    fflush(stdout);
}

static void free_app(app *a)
{
    for (int i = 0; i < a->tab_count; i++)
        tab_free(a->tabs[i]);
    free(a->tabs);
    bindings_clear(a);
    free(a->binding_key);
    free(a->binding_note);
    queue_drop(a);
    prompt_close(a);
    overlay_close(a);
    terminal_free(a);
    chat_free(a);
    lsp_free(a);
    buf_free(&a->paste);
    for (int i = 0; i < a->started_language_count; i++)
        free(a->started_languages[i]);
    free(a->started_languages);
    free(a->message);
    free(a->socket_path);
    free(a->server_path);
    free(a->server_log);
    if (a->ssh_forward)
        ecp_ssh_forward_stop(a->ssh_forward); /* the forwarder ends with the editor */
    free(a->ssh_forward);
    if (a->ssh)
        ecp_ssh_free(a->ssh);
    free(a->ssh);
    free(a->workspace);
    free(a->repo_root);
    free(a->branch);
    free(a->last_search);
    free(a->replace_with);
    buf_free(&a->clipboard);
    buf_free(&a->typed);
    buf_free(&a->prompt.input);
    buf_free(&a->overlay.query);
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

int main(int argc, char **argv)
{
    setlocale(LC_ALL, "");
    if (strcmp(nl_langinfo(CODESET), "UTF-8") != 0)
        setlocale(LC_CTYPE, "C.UTF-8");
    app *a = xcalloc(1, sizeof *a);
    const char **files = xcalloc((size_t)argc + 1, sizeof *files);
    int file_count = 0;
    bool connect = false;
    const char *ssh_spec = NULL, *ssh_ecpd = NULL;
    const char **ssh_options = xcalloc((size_t)argc + 1, sizeof *ssh_options);
    int ssh_option_count = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            fputs(usage, stdout);
            free(files);
            free(ssh_options);
            free_app(a);
            free(a);
            return 0;
        } else if (strcmp(argv[i], "--version") == 0) {
            printf("ecp-tui %s\n", ECPD_VERSION);
            free(files);
            free(ssh_options);
            free_app(a);
            free(a);
            return 0;
        } else if (strcmp(argv[i], "--connect") == 0) {
            connect = true;
            struct stat st;
            /* A socket, or where one is to be: a path ending in .sock that does not exist yet. */
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            size_t n = next ? strlen(next) : 0;
            if (next && ((stat(next, &st) == 0 && S_ISSOCK(st.st_mode)) ||
                         (n > 5 && strcmp(next + n - 5, ".sock") == 0 && access(next, F_OK) != 0)))
                a->socket_path = absolute(argv[++i]);
        } else if (strcmp(argv[i], "--ssh") == 0 && i + 1 < argc) {
            ssh_spec = argv[++i];
        } else if (strcmp(argv[i], "--ssh-option") == 0 && i + 1 < argc) {
            ssh_options[ssh_option_count++] = argv[++i];
        } else if (strcmp(argv[i], "--ssh-ecpd") == 0 && i + 1 < argc) {
            ssh_ecpd = argv[++i];
        } else if (strcmp(argv[i], "--server") == 0 && i + 1 < argc) {
            a->server_path = xstrdup(argv[++i]);
        } else if (strcmp(argv[i], "--server-log") == 0 && i + 1 < argc) {
            a->server_log = absolute(argv[++i]);
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "ecp-tui: unknown option %s\n%s", argv[i], usage);
            free(files);
            free(ssh_options);
            free_app(a);
            free(a);
            return 2;
        } else {
            files[file_count++] = argv[i];
        }
    }
    if (ssh_spec) {
        a->ssh = xcalloc(1, sizeof *a->ssh);
        a->ssh_forward = xcalloc(1, sizeof *a->ssh_forward);
        a->ssh_forward->pid = -1;
        ecp_error err;
        char *why = NULL;
        int status = ecp_ssh_parse(a->ssh, ssh_spec, &err);
        if (status == 0) {
            for (int i = 0; i < ssh_option_count; i++)
                ecp_ssh_add_option(a->ssh, ssh_options[i]);
            if (ssh_ecpd)
                ecp_ssh_set_ecpd(a->ssh, ssh_ecpd);
        }
        int exit_code = 0;
        if (status < 0)
            fprintf(stderr, "ecp-tui: %s\n%s", err.message, usage), exit_code = 2;
        else if (a->socket_path)
            fprintf(stderr, "ecp-tui: --ssh --connect takes no SOCKET: it is the remote workspace's\n"), exit_code = 2;
        else if (!(a->workspace = ecp_ssh_remote_workspace(a->ssh, &why)))
            fprintf(stderr, "ecp-tui: %s\n", why), exit_code = 1;
        free(why);
        if (exit_code) {
            free(files);
            free(ssh_options);
            free_app(a);
            free(a);
            return exit_code;
        }
    }
    free(ssh_options);
    /* The workspace: the first directory named, else here, as ecpd's own default (so
     * --connect finds the socket a plain `ecpd --socket` started here listens on). */
    for (int i = 0; i < file_count && !a->workspace; i++) {
        struct stat st;
        if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode))
            a->workspace = absolute(files[i]);
    }
    if (!a->workspace)
        a->workspace = absolute(".");
    if (connect && !a->socket_path)
        a->socket_path = ecp_default_socket_path(a->workspace);
    if (!a->server_path)
        a->server_path = find_server();
    if (!a->server_path && !connect && !a->ssh) {
        fprintf(stderr, "ecp-tui: no ecpd beside ecp-tui nor in PATH (set ECPD or --server)\n");
        free(files);
        free_app(a);
        free(a);
        return 2;
    }
    if (!a->server_path)
        a->server_path = xstrdup("ecpd");
    a->connected_to_socket = connect;

    uv_loop_t loop;
    uv_loop_init(&loop);
    a->loop = &loop;
    signal(SIGPIPE, SIG_IGN);
    a->next_serial = 1;
    a->client_id = -1;
    colors_default(a);
    commands_bind_defaults(a);
    /* a connection lost while the remote ecpd is waited for starts it */
    uv_timer_init(&loop, &a->reconnect_timer);
    a->reconnect_timer.data = a;

    char *failed = NULL;
    if (!connect_server(a))
        failed = xstrdup(a->message);
    else if (a->ssh)
        failed = wait_for_remote(a);
    /* Keys come from a terminal: anything else (a file, /dev/null) cannot be
     * polled, and there would be no one to edit for. Said after the server's
     * own failures, which are more use to know. */
    if (!failed && !isatty(STDIN_FILENO))
        failed = xstrdup("standard input is not a terminal; run it in one (ecpctl speaks to a server from scripts)");
    if (failed) {
        fprintf(stderr, "ecp-tui: %s\n", failed);
        free(failed);
        free(files);
        rpc_close(a->rpc);
        a->rpc = NULL;
        uv_walk(&loop, close_walk, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        uv_loop_close(&loop);
        free_app(a);
        free(a);
        return 1;
    }
    setup_curses(a);
    uv_poll_init(&loop, &a->input, STDIN_FILENO);
    a->input.data = a;
    uv_poll_start(&a->input, UV_READABLE, on_input);
    uv_prepare_init(&loop, &a->painter);
    a->painter.data = a;
    uv_prepare_start(&a->painter, on_prepare);
    uv_signal_init(&loop, &a->sigwinch);
    a->sigwinch.data = a;
    uv_signal_start(&a->sigwinch, on_sigwinch, SIGWINCH);
    uv_timer_init(&loop, &a->git_timer);
    a->git_timer.data = a;
    uv_timer_init(&loop, &a->message_timer);
    a->message_timer.data = a;
    uv_timer_init(&loop, &a->presence_timer);
    a->presence_timer.data = a;
    uv_timer_start(&a->presence_timer, on_presence_timer, PRESENCE_EVERY_MS, PRESENCE_EVERY_MS);

    recovery_offer(a);
    bool opened_picker = false;
    for (int i = 0; i < file_count; i++) {
        struct stat st;
        if (a->ssh) {
            /* a remote path: the file system here knows nothing of it; FILE:LINE opens at a line */
            buf remote = BUF_INIT;
            if (files[i][0] != '/')
                buf_appendf(&remote, "%s/", a->workspace);
            buf_append_str(&remote, files[i]);
            int line = 0;
            char *colon = strrchr(remote.data, ':');
            if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1)) {
                line = atoi(colon + 1) - 1;
                *colon = 0;
            }
            editor_open_path(a, remote.data, line < 0 ? 0 : line, 0);
            buf_free(&remote);
            continue;
        }
        if (stat(files[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!opened_picker) {
                opened_picker = true;
                command_run(a, "file.picker");
            }
            continue;
        }
        /* FILE:LINE opens at a line, unless a file of that very name exists. */
        int line = 0;
        char *name = xstrdup(files[i]);
        char *colon = strrchr(name, ':');
        if (colon && colon[1] && strspn(colon + 1, "0123456789") == strlen(colon + 1) && access(name, F_OK) != 0) {
            line = atoi(colon + 1) - 1;
            *colon = 0;
        }
        char *abs = absolute(name);
        editor_open_path(a, abs, line < 0 ? 0 : line, 0);
        free(abs);
        free(name);
    }
    if (file_count == 0)
        command_run(a, a->ssh ? "file.picker" : "file.new");
    free(files);
    a->need_paint = true;
    uv_run(&loop, UV_RUN_DEFAULT);

    fputs("\033[?2004l", stdout);
    fflush(stdout);
    endwin();
    if (a->screen)
        delscreen(a->screen);
    rpc_close(a->rpc);
    a->rpc = NULL;
    uv_walk(&loop, close_walk, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    free_app(a);
    free(a);
    return 0;
}
