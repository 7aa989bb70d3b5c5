#include "ssh_remote.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "socket_path.h"

extern char **environ;

static void add_words(ecp_ssh *self, const char *text)
{
    const char *p = text;
    for (;;) {
        p += strspn(p, " \t\n");
        size_t n = strcspn(p, " \t\n");
        if (n == 0)
            return;
        char *word = xmalloc(n + 1);
        memcpy(word, p, n);
        word[n] = 0;
        ecp_ssh_add_option(self, word);
        free(word);
        p += n;
    }
}

int ecp_ssh_parse(ecp_ssh *out, const char *spec, ecp_error *err)
{
    *out = (ecp_ssh){0};
    const char *at = strchr(spec, '@');
    const char *host = at ? at + 1 : spec;
    const char *colon;
    if (host[0] == '[') {
        const char *close = strchr(host, ']');
        if (!close)
            return ecp_error_set(err, ECP_EINVAL, "--ssh %s: an IPv6 host needs its closing ]", spec);
        colon = close[1] == ':' ? close + 1 : NULL;
        if (!colon && close[1])
            return ecp_error_set(err, ECP_EINVAL, "--ssh %s: only :PATH may follow [HOST]", spec);
    } else {
        colon = strchr(host, ':');
    }
    size_t dest_len = colon ? (size_t)(colon - spec) : strlen(spec);
    size_t host_len = colon ? (size_t)(colon - host) : strlen(host);
    if (host_len == 0 || (at && at == spec))
        return ecp_error_set(err, ECP_EINVAL, "--ssh %s: expected [USER@]HOST[:PATH]", spec);
    /* ssh would read a destination that starts with '-' as an option */
    if (spec[0] == '-' || host[0] == '-')
        return ecp_error_set(err, ECP_EINVAL, "--ssh %s: a host may not start with '-'", spec);
    out->destination = xmalloc(dest_len + 1);
    memcpy(out->destination, spec, dest_len);
    out->destination[dest_len] = 0;
    if (host[0] == '[') {
        /* ssh takes an IPv6 address bare */
        size_t n = strchr(host, ']') - host - 1;
        out->host = xmalloc(n + 1);
        memcpy(out->host, host + 1, n);
        out->host[n] = 0;
        size_t user_len = at ? (size_t)(host - spec) : 0;
        free(out->destination);
        out->destination = xmalloc(user_len + n + 1);
        memcpy(out->destination, spec, user_len);
        memcpy(out->destination + user_len, out->host, n + 1);
    } else {
        out->host = xmalloc(host_len + 1);
        memcpy(out->host, host, host_len);
        out->host[host_len] = 0;
    }
    if (colon && colon[1])
        out->path = xstrdup(colon + 1);
    out->ecpd = xstrdup("ecpd");
    const char *env = getenv("ECP_SSH_OPTIONS");
    if (env)
        add_words(out, env);
    return 0;
}

void ecp_ssh_add_option(ecp_ssh *self, const char *option)
{
    self->options = xrealloc(self->options, (self->option_count + 1) * sizeof *self->options);
    self->options[self->option_count++] = xstrdup(option);
}

void ecp_ssh_set_ecpd(ecp_ssh *self, const char *program)
{
    free(self->ecpd);
    self->ecpd = xstrdup(program);
}

void ecp_ssh_free(ecp_ssh *self)
{
    for (size_t i = 0; i < self->option_count; i++)
        free(self->options[i]);
    free(self->options);
    free(self->destination);
    free(self->host);
    free(self->path);
    free(self->ecpd);
    *self = (ecp_ssh){0};
}

void ecp_ssh_quote(buf *out, const char *word)
{
    buf_push(out, '\'');
    for (const char *p = word; *p; p++) {
        if (*p == '\'')
            buf_append_str(out, "'\\''");
        else
            buf_push(out, *p);
    }
    buf_push(out, '\'');
}

char **ecp_ssh_argv(const ecp_ssh *self, const char *const *extra, const char *const *remote_words)
{
    size_t extra_count = 0;
    while (extra && extra[extra_count])
        extra_count++;
    char **argv = xcalloc(self->option_count + extra_count + 6, sizeof *argv);
    size_t n = 0;
    argv[n++] = xstrdup("ssh");
    for (size_t i = 0; i < self->option_count; i++)
        argv[n++] = xstrdup(self->options[i]);
    argv[n++] = xstrdup("-T");
    for (size_t i = 0; i < extra_count; i++)
        argv[n++] = xstrdup(extra[i]);
    argv[n++] = xstrdup("--");
    argv[n++] = xstrdup(self->destination);
    if (remote_words) {
        buf command = BUF_INIT;
        for (size_t i = 0; remote_words[i]; i++) {
            if (i)
                buf_push(&command, ' ');
            ecp_ssh_quote(&command, remote_words[i]);
        }
        argv[n++] = buf_detach(&command);
    }
    argv[n] = NULL;
    return argv;
}

void ecp_ssh_argv_free(char **argv)
{
    if (!argv)
        return;
    for (char **p = argv; *p; p++)
        free(*p);
    free(argv);
}

char **ecp_ssh_stdio_argv(const ecp_ssh *self, const char *workspace)
{
    if (!workspace)
        workspace = self->path;
    const char *words[] = {self->ecpd, "--stdio", workspace ? "--workspace" : NULL, workspace, NULL};
    return ecp_ssh_argv(self, NULL, words);
}

/* The last line of what the remote command printed: a shell's start-up files may print before it. */
static char *last_line(buf *out)
{
    while (out->len && (out->data[out->len - 1] == '\n' || out->data[out->len - 1] == '\r'))
        out->data[--out->len] = 0;
    if (!out->len)
        return NULL;
    char *nl = strrchr(out->data, '\n');
    return xstrdup(nl ? nl + 1 : out->data);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int ecp_ssh_run(char *const *argv, int timeout_ms, buf *out, buf *errors)
{
    int out_pipe[2], err_pipe[2];
    if (pipe2(out_pipe, O_CLOEXEC) < 0)
        goto cannot;
    if (pipe2(err_pipe, O_CLOEXEC) < 0) {
        close(out_pipe[0]);
        close(out_pipe[1]);
        goto cannot;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, out_pipe[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(out_pipe[1]);
    close(err_pipe[1]);
    if (rc != 0) {
        close(out_pipe[0]);
        close(err_pipe[0]);
        errno = rc;
        goto cannot;
    }
    long long deadline = now_ms() + timeout_ms;
    bool killed = false;
    struct pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
    while (fds[0].fd >= 0 || fds[1].fd >= 0) {
        long long left = deadline - now_ms();
        if (left <= 0 && !killed) {
            kill(pid, SIGKILL);
            killed = true;
            if (errors)
                buf_appendf(errors, "%s gave no answer within %d s\n", argv[0], timeout_ms / 1000);
        }
        int r = poll(fds, 2, left > 0 ? (int)left : 100);
        if (r < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                close(fds[i].fd);
                fds[i].fd = -1;
                continue;
            }
            buf *to = i == 0 ? out : errors;
            if (to)
                buf_append(to, chunk, (size_t)n);
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR)
            return -1;
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
cannot:
    if (errors)
        buf_appendf(errors, "cannot run %s: %s\n", argv[0], strerror(errno));
    return -1;
}

char *ecp_ssh_failure(const ecp_ssh *self, int status, const char *errors)
{
    buf b = BUF_INIT;
    /* ssh's last words, on one line */
    buf said = BUF_INIT;
    if (errors) {
        for (const char *p = errors; *p; p++)
            if (*p != '\r')
                buf_push(&said, *p == '\n' ? ' ' : *p);
        while (said.len && said.data[said.len - 1] == ' ')
            said.data[--said.len] = 0;
    }
    if (status == ECP_SSH_NOT_FOUND || (errors && strstr(errors, "command not found"))) {
        buf_appendf(&b,
                    "%s is not installed on %s (or not on its PATH for non-interactive ssh): install it there, e.g. "
                    "`apt install ./ecpd_*.deb`, or pass --ssh-ecpd PATH",
                    strcmp(self->ecpd, "ecpd") == 0 ? "ecpd" : self->ecpd, self->host);
        if (said.len)
            buf_appendf(&b, " (%s)", said.data);
    } else if (said.len) {
        buf_appendf(&b, "%s", said.data);
    } else if (status == ECP_SSH_FAILED) {
        buf_appendf(&b, "ssh to %s failed", self->host);
    } else if (status > 128) {
        buf_appendf(&b, "ssh to %s was killed by signal %d", self->host, status - 128);
    } else {
        buf_appendf(&b, "ssh to %s ended with status %d", self->host, status);
    }
    buf_free(&said);
    return buf_detach(&b);
}

#define SSH_ANSWER_MS 30000

char *ecp_ssh_remote_workspace(const ecp_ssh *self, char **why)
{
    if (self->path && self->path[0] == '/')
        return xstrdup(self->path);
    /* The remote shell resolves it: from the login directory, ~/ meaning that directory. */
    const char *relative = self->path;
    if (relative && strcmp(relative, "~") == 0)
        relative = NULL;
    else if (relative && strncmp(relative, "~/", 2) == 0)
        relative += 2;
    buf command = BUF_INIT;
    if (relative && *relative) {
        buf_append_str(&command, "cd ");
        ecp_ssh_quote(&command, relative);
        buf_append_str(&command, " && ");
    }
    buf_append_str(&command, "pwd");
    char **argv = ecp_ssh_argv(self, NULL, NULL);
    size_t n = 0;
    while (argv[n])
        n++;
    argv = xrealloc(argv, (n + 2) * sizeof *argv);
    argv[n] = buf_detach(&command);
    argv[n + 1] = NULL;
    buf out = BUF_INIT, errors = BUF_INIT;
    int status = ecp_ssh_run(argv, SSH_ANSWER_MS, &out, &errors);
    ecp_ssh_argv_free(argv);
    char *result = status == 0 ? last_line(&out) : NULL;
    if (result && result[0] != '/') {
        free(result);
        result = NULL;
    }
    if (!result) {
        buf_push(&errors, 0);
        *why = ecp_ssh_failure(self, status == 0 ? 1 : status, errors.data);
    }
    buf_free(&out);
    buf_free(&errors);
    return result;
}

char *ecp_ssh_remote_socket(const ecp_ssh *self, const char *workspace, char **why)
{
    if (!workspace)
        workspace = self->path;
    const char *words[] = {self->ecpd, "--socket", "--daemon", "--print-socket-path",
                           workspace ? "--workspace" : NULL, workspace, NULL};
    char **argv = ecp_ssh_argv(self, NULL, words);
    buf out = BUF_INIT, errors = BUF_INIT;
    int status = ecp_ssh_run(argv, SSH_ANSWER_MS, &out, &errors);
    ecp_ssh_argv_free(argv);
    char *result = status == 0 ? last_line(&out) : NULL;
    if (result && result[0] != '/') {
        free(result);
        result = NULL;
    }
    if (!result) {
        buf_push(&errors, 0);
        *why = ecp_ssh_failure(self, status == 0 ? 1 : status, errors.data);
    }
    buf_free(&out);
    buf_free(&errors);
    return result;
}

static char *read_small_file(const char *path)
{
    buf b = BUF_INIT;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        char chunk[1024];
        ssize_t n;
        while (b.len < 8192 && (n = read(fd, chunk, sizeof chunk)) > 0)
            buf_append(&b, chunk, (size_t)n);
        close(fd);
    }
    buf_push(&b, 0);
    return buf_detach(&b);
}

/* A client killed before its cleanup (SIGKILL, a crash) leaves its private
 * directory behind, with a dead socket and ssh's log in it. The next client
 * removes those whose client is gone: the directory's name carries its
 * client's pid. Only directories owned by us and not links, and only the
 * two files a client puts there (a directory holding anything else stays). */
static void remove_stale_forward_dirs(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = 0;
        int end = 0;
        if (sscanf(e->d_name, "ecp-ssh-%ld-%n", &pid, &end) != 1 || end == 0 || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_uid == getuid()) {
            unlinkat(fd, "ecpd.sock", 0);
            unlinkat(fd, "ssh.log", 0);
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        close(fd);
    }
    closedir(d);
}

int ecp_ssh_forward_start(ecp_ssh_forward *fwd, const ecp_ssh *self, const char *remote_socket, int timeout_ms,
                          char **why)
{
    *fwd = (ecp_ssh_forward){.pid = -1};
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    const char *runtime_dir = runtime && runtime[0] == '/' ? runtime : "/tmp";
    remove_stale_forward_dirs(runtime_dir);
    buf dir = BUF_INIT;
    buf_appendf(&dir, "%s/ecp-ssh-%ld-XXXXXX", runtime_dir, (long)getpid());
    /* mkdtemp makes it 0700: only we may connect to what is in it */
    if (!mkdtemp(dir.data)) {
        buf b = BUF_INIT;
        buf_appendf(&b, "cannot make a private directory %s: %s", dir.data, strerror(errno));
        *why = buf_detach(&b);
        buf_free(&dir);
        return -1;
    }
    fwd->dir = buf_detach(&dir);
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/ecpd.sock", fwd->dir);
    fwd->local_socket = buf_detach(&path);
    buf_appendf(&path, "%s/ssh.log", fwd->dir);
    fwd->log = buf_detach(&path);
    buf forward = BUF_INIT;
    buf_appendf(&forward, "%s:%s", fwd->local_socket, remote_socket);
    const char *extra[] = {"-N", "-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes",
                           "-L", forward.data, NULL};
    char **argv = ecp_ssh_argv(self, extra, NULL);
    buf_free(&forward);
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    int log_fd = open(fwd->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    pid_t parent = getpid();
    fwd->pid = null_fd >= 0 && log_fd >= 0 ? fork() : -1;
    if (fwd->pid == 0) {
        /* A client that dies without its cleanup (a crash, SIGKILL) takes the forwarder with it.
         * Only async-signal-safe calls here: the parent may have threads. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent)
            _exit(1);
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
        execvp(argv[0], argv);
        _exit(126);
    }
    int rc = fwd->pid < 0 ? errno : 0;
    if (null_fd >= 0)
        close(null_fd);
    if (log_fd >= 0)
        close(log_fd);
    ecp_ssh_argv_free(argv);
    if (rc != 0) {
        buf b = BUF_INIT;
        buf_appendf(&b, "cannot run ssh: %s", strerror(rc));
        *why = buf_detach(&b);
        fwd->pid = -1;
        ecp_ssh_forward_stop(fwd);
        return -1;
    }
    long long deadline = now_ms() + timeout_ms;
    while (!ecp_socket_answers(fwd->local_socket)) {
        if (!ecp_ssh_forward_alive(fwd) || now_ms() > deadline) {
            char *said = read_small_file(fwd->log);
            *why = ecp_ssh_failure(self, ECP_SSH_FAILED, said);
            free(said);
            ecp_ssh_forward_stop(fwd);
            return -1;
        }
        usleep(20 * 1000);
    }
    return 0;
}

bool ecp_ssh_forward_alive(ecp_ssh_forward *fwd)
{
    if (fwd->pid <= 0)
        return false;
    int status;
    pid_t r = waitpid(fwd->pid, &status, WNOHANG);
    if (r == fwd->pid || (r < 0 && errno == ECHILD)) {
        fwd->pid = -1;
        return false;
    }
    return true;
}

void ecp_ssh_forward_stop(ecp_ssh_forward *fwd)
{
    if (fwd->pid > 0) {
        kill(fwd->pid, SIGTERM);
        int status;
        while (waitpid(fwd->pid, &status, 0) < 0 && errno == EINTR)
            ;
        fwd->pid = -1;
    }
    if (fwd->local_socket)
        unlink(fwd->local_socket);
    if (fwd->log)
        unlink(fwd->log);
    if (fwd->dir)
        rmdir(fwd->dir);
    free(fwd->dir);
    free(fwd->local_socket);
    free(fwd->log);
    *fwd = (ecp_ssh_forward){.pid = -1};
}
