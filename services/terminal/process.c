/* process: programs on pseudo-terminals, and the processes of a session.
 *
 * A program is started with posix_spawn, which reports a failure to run it
 * (a missing file, a bad working directory, no permission) as its return
 * value: glibc's child shares the parent's memory until exec and writes the
 * error back, the same job a close-on-exec pipe does for fork and exec. The
 * child becomes the leader of a new session (POSIX_SPAWN_SETSID) before its
 * file actions run, so opening the terminal's slave side as its standard
 * input makes that terminal its controlling terminal, as TIOCSCTTY would.
 * The parent opens the slave only with O_NOCTTY, so the terminal can never
 * become the server's own.
 *
 * The processes of a session are found in /proc: every process records its
 * session and process group there. A session's id is its leader's pid, and
 * Linux does not give that number to a new process while any process still
 * uses it as its session or group, so a process found with that session is
 * one of the terminal's. A process that left the session (`setsid`) but
 * still has the terminal open on some descriptor is one of the terminal's
 * too: it is found by the device of the descriptors in /proc/PID/fd, and
 * Linux does not give a pseudo-terminal's number to a new one while any
 * process still has its slave side open.
 */
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "buf.h"
#include "process.h"

/* ----- finding the program ------------------------------------------------------------ */

static int check_program(const char *path, ecp_error *err)
{
    struct stat st;
    if (stat(path, &st) < 0) {
        if (errno == ENOENT || errno == ENOTDIR)
            return ecp_error_set(err, ECP_ENOTFOUND, "Shell not found: %s", path);
        return ecp_error_set(err, ECP_EACCES, "Cannot use shell %s: %s", path, strerror(errno));
    }
    if (S_ISDIR(st.st_mode))
        return ecp_error_set(err, ECP_EACCES, "Shell is a directory: %s", path);
    if (access(path, X_OK) < 0)
        return ecp_error_set(err, ECP_EACCES, "Shell is not executable: %s", path);
    return 0;
}

int term__resolve_program(const char *name, buf *out, ecp_error *err)
{
    if (!name[0])
        return ecp_error_set(err, ECP_ENOTFOUND, "Shell not found: the name is empty");
    if (strchr(name, '/')) {
        int status = check_program(name, err);
        if (!status)
            buf_append_str(out, name);
        return status;
    }
    const char *path = getenv("PATH");
    if (!path || !path[0])
        path = "/usr/local/bin:/usr/bin:/bin";
    /* absolute entries only: the working directory is often a workspace, whose own shell must not be found */
    char *found = ecp_process_find_program(name, path);
    if (!found)
        return ecp_error_set(err, ECP_ENOTFOUND, "Shell not found in PATH: %s", name);
    buf_append_str(out, found);
    free(found);
    return 0;
}

/* ----- starting it --------------------------------------------------------------------- */

int term__spawn_start(const term__spawn *spec, int *master_out, pid_t *pid_out, dev_t *tty_out, ecp_error *err)
{
    int status = 0;
    int slave = -1;
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attr;
    bool have_actions = false, have_attr = false;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (master < 0)
        return ecp_error_set(err, ECP_EIO, "Cannot open a pseudo-terminal: %s", strerror(errno));
    char name[128];
    if (grantpt(master) < 0 || unlockpt(master) < 0 || ptsname_r(master, name, sizeof name) != 0) {
        status = ecp_error_set(err, ECP_EIO, "Cannot set up a pseudo-terminal: %s", strerror(errno));
        goto done;
    }
    slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (slave < 0) {
        status = ecp_error_set(err, ECP_EIO, "Cannot open %s: %s", name, strerror(errno));
        goto done;
    }
    /* Line editing must know that a character may take several bytes. */
    struct termios tio;
    if (tcgetattr(slave, &tio) == 0) {
        tio.c_iflag |= IUTF8;
        tcsetattr(slave, TCSANOW, &tio);
    }
    struct stat slave_st;
    if (fstat(slave, &slave_st) < 0) {
        status = ecp_error_set(err, ECP_EIO, "Cannot set up a pseudo-terminal: %s", strerror(errno));
        goto done;
    }
    struct winsize ws = {.ws_row = (unsigned short)spec->rows, .ws_col = (unsigned short)spec->cols};
    ioctl(slave, TIOCSWINSZ, &ws);
    if (fcntl(master, F_SETFL, fcntl(master, F_GETFL) | O_NONBLOCK) < 0) {
        status = ecp_error_set(err, ECP_EIO, "Cannot set up a pseudo-terminal: %s", strerror(errno));
        goto done;
    }

    posix_spawn_file_actions_init(&actions);
    have_actions = true;
    posix_spawn_file_actions_addopen(&actions, 0, name, O_RDWR, 0);
    posix_spawn_file_actions_adddup2(&actions, 0, 1);
    posix_spawn_file_actions_adddup2(&actions, 0, 2);
    if (spec->cwd)
        posix_spawn_file_actions_addchdir_np(&actions, spec->cwd);
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
    posix_spawnattr_init(&attr);
    have_attr = true;
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&attr, &none);  /* the loop's threads may block some */
    posix_spawnattr_setsigdefault(&attr, &all); /* the server ignores SIGPIPE */
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, spec->path, &actions, &attr, spec->argv, spec->envp);
    if (rc != 0) {
        int kind = rc == ENOENT ? ECP_ENOTFOUND : rc == EACCES || rc == EPERM ? ECP_EACCES : ECP_EIO;
        status = ecp_error_set(err, kind, "Cannot start %s: %s", spec->path, strerror(rc));
        goto done;
    }
    *master_out = master;
    *pid_out = pid;
    *tty_out = slave_st.st_rdev;
    master = -1;

done:
    if (have_actions)
        posix_spawn_file_actions_destroy(&actions);
    if (have_attr)
        posix_spawnattr_destroy(&attr);
    if (slave >= 0)
        close(slave);
    if (master >= 0)
        close(master);
    return status;
}

/* ----- the processes of a session -------------------------------------------------------- */

/* Whether a process of session sid belongs to one of ours. */
static bool wanted(pid_t pid, pid_t sid, const term__session *sessions, size_t count)
{
    for (size_t i = 0; i < count; i++)
        if (sessions[i].sid == sid)
            return !(pid == sid && sessions[i].leader_reaped); /* a new leader under a reused number */
    return false;
}

/* Reads "pid (comm) state ppid pgrp session ..." from /proc/<pid>/stat. */
static bool read_stat(const char *pid_name, char *state, pid_t *pgid, pid_t *sid)
{
    char path[64], text[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid_name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    ssize_t n = read(fd, text, sizeof text - 1);
    close(fd);
    if (n <= 0)
        return false;
    text[n] = '\0';
    const char *after = strrchr(text, ')'); /* comm may hold spaces and parentheses */
    int ppid, pg, se;
    if (!after || sscanf(after + 1, " %c %d %d %d", state, &ppid, &pg, &se) != 4)
        return false;
    *pgid = pg;
    *sid = se;
    return true;
}

/* Whether the process has one of the terminals (slave devices) open. Only
 * our own processes let us look; the others are not ours to end anyway. */
static bool holds_terminal(const char *pid_name, const term__session *sessions, size_t count)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%s/fd", pid_name);
    DIR *dir = opendir(path);
    if (!dir)
        return false;
    bool found = false;
    struct dirent *e;
    while (!found && (e = readdir(dir))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char fd_path[64 + sizeof e->d_name];
        struct stat st;
        snprintf(fd_path, sizeof fd_path, "%s/%s", path, e->d_name);
        if (stat(fd_path, &st) < 0 || !S_ISCHR(st.st_mode))
            continue;
        for (size_t i = 0; i < count && !found; i++)
            found = sessions[i].tty && st.st_rdev == sessions[i].tty;
    }
    closedir(dir);
    return found;
}

void term__session_members(const term__session *sessions, size_t count, term__member **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    DIR *dir = opendir("/proc");
    if (!dir)
        return;
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char state;
        pid_t pgid, sid;
        if (!read_stat(e->d_name, &state, &pgid, &sid))
            continue;
        if (state == 'Z' || state == 'X')
            continue; /* already ended; its parent reaps it */
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid == self || (!wanted(pid, sid, sessions, count) && !holds_terminal(e->d_name, sessions, count)))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            *out = xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (term__member){pid, pgid, sid};
    }
    closedir(dir);
}

/* Never the server's own group or session, nor init's: a mistake here must
 * not signal everything. */
static bool may_signal(pid_t id)
{
    return id > 1 && id != getpgrp() && id != getsid(0) && id != getpid();
}

void term__session_hangup(const term__session *sessions, size_t count)
{
    term__member *members;
    size_t n;
    term__session_members(sessions, count, &members, &n);
    for (size_t i = 0; i < n; i++) {
        pid_t pgid = members[i].pgid;
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = members[j].pgid == pgid;
        if (seen || !may_signal(pgid))
            continue;
        kill(-pgid, SIGHUP);
        kill(-pgid, SIGCONT); /* a stopped job acts on SIGHUP only once it runs */
    }
    /* a leader that left its own group (it cannot, but cheaply sure) */
    for (size_t i = 0; i < count; i++)
        if (!sessions[i].leader_reaped && may_signal(sessions[i].sid))
            kill(sessions[i].sid, SIGHUP);
    free(members);
}

size_t term__session_kill(const term__session *sessions, size_t count)
{
    term__member *members;
    size_t n, left = 0;
    term__session_members(sessions, count, &members, &n);
    for (size_t i = 0; i < n; i++) {
        /* SIGHUP ignored or not: a program that outlived its terminal on
         * purpose (nohup, trap '' HUP) would otherwise live as long as the
         * machine, and a closed terminal is the user's word that it is done */
        if (!may_signal(members[i].pid))
            continue;
        kill(members[i].pid, SIGKILL);
        left++;
    }
    free(members);
    return left;
}
