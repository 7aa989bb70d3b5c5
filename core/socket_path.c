#include "socket_path.h"

#include <stdlib.h>
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
