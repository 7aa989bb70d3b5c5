#include "socket_path.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "buf.h"

char *ecp_default_socket_path(const char *workspace)
{
    char cwd[4096];
    if (!workspace)
        workspace = getcwd(cwd, sizeof cwd) ? cwd : "/";
    /* FNV-1a: short, stable, and enough to keep workspaces apart */
    unsigned long long h = 1469598103934665603ULL;
    for (const unsigned char *p = (const unsigned char *)workspace; *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    buf path = BUF_INIT;
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    if (runtime && runtime[0] == '/')
        buf_appendf(&path, "%s/ecpd/%016llx.sock", runtime, h);
    else
        buf_appendf(&path, "/tmp/ecpd-%u/%016llx.sock", (unsigned)getuid(), h);
    return buf_detach(&path);
}

int ecp_private_dir(const char *dir, ecp_error *err)
{
    if (mkdir(dir, 0700) < 0 && errno != EEXIST)
        return ecp_error_errno(err, errno, dir);
    struct stat st;
    if (lstat(dir, &st) < 0)
        return ecp_error_errno(err, errno, dir);
    if (!S_ISDIR(st.st_mode))
        return ecp_error_set(err, ECP_ENOTDIR, "%s is not a directory (a symbolic link is refused)", dir);
    if (st.st_uid != getuid())
        return ecp_error_set(err, ECP_EACCES, "directory %s belongs to another user (uid %u)", dir,
                             (unsigned)st.st_uid);
    if (st.st_mode & (S_IWGRP | S_IWOTH))
        return ecp_error_set(err, ECP_EACCES,
                             "directory %s is writable by group or others (mode %03o); make it private with chmod 700",
                             dir, (unsigned)(st.st_mode & 0777));
    return 0;
}

static bool socket_address(const char *path, struct sockaddr_un *addr)
{
    *addr = (struct sockaddr_un){.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr->sun_path)
        return false;
    strcpy(addr->sun_path, path);
    return true;
}

int ecp_socket_connect_own(const char *path, int extra_flags, ecp_socket_failure *failure, ecp_error *err)
{
    struct sockaddr_un addr;
    if (!socket_address(path, &addr)) {
        *failure = ECP_SOCKET_REFUSED;
        ecp_error_set(err, ECP_EINVAL, "socket path too long: %s", path);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | extra_flags, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) {
        int e = errno;
        *failure = e == ENOENT || e == ECONNREFUSED ? ECP_SOCKET_NOBODY : ECP_SOCKET_BUSY;
        ecp_error_set(err, ECP_EIO, "cannot connect to %s: %s", path, strerror(e));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || cred.uid != getuid()) {
        *failure = ECP_SOCKET_REFUSED;
        ecp_error_set(err, ECP_EACCES, "the server on %s runs as another user; refusing to talk to it", path);
        close(fd);
        return -1;
    }
    return fd;
}

bool ecp_socket_answers(const char *path)
{
    struct sockaddr_un addr;
    if (!socket_address(path, &addr))
        return false;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    if (fd >= 0)
        close(fd);
    return live;
}
