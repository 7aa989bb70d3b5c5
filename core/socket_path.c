#include "socket_path.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
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
