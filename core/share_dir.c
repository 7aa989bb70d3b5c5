#include "share_dir.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

char *ecp_share_dir(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    /* <prefix>/bin/<program>: drop the program, then bin */
    for (int level = 0; level < 2; level++) {
        char *slash = strrchr(exe, '/');
        if (!slash)
            return NULL;
        *slash = '\0';
    }
    buf dir = BUF_INIT;
    buf_appendf(&dir, "%s/share/ecpd", exe);
    struct stat st;
    if (stat(dir.data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        buf_free(&dir);
        return NULL;
    }
    return buf_detach(&dir);
}

char *ecp_share_path(const char *relative, const char *build_path)
{
    char *share = ecp_share_dir();
    if (!share)
        return build_path ? xstrdup(build_path) : NULL;
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/%s", share, relative);
    free(share);
    return buf_detach(&path);
}
