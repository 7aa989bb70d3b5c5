/* repo: opening a repository, paths inside it, and libgit2's failures.
 *
 * Everything here may run on any thread: a gitsvc_repo is opened by the job
 * that uses it and closed by the same job.
 */
#include "internal.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "file/interface.h"

/* ----- errors ------------------------------------------------------------------------ */

const char *gitsvc_code_name(gitsvc_code code)
{
    switch (code) {
#define GITSVC_CODE_NAME(name) \
    case name: return &#name[7];
        GITSVC_CODES(GITSVC_CODE_NAME)
#undef GITSVC_CODE_NAME
    }
    return "COMMAND_FAILED";
}

int gitsvc__fail(gitsvc_error *err, int status, gitsvc_code code, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        err->code = code;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

int gitsvc__libgit2(gitsvc_error *err, int rc, gitsvc_code code, const char *what)
{
    const git_error *e = git_error_last();
    const char *text = e && e->message ? e->message : "unknown libgit2 error";
    int status = ECP_EIO;
    switch (rc) {
    case GIT_ELOCKED:
        /* a lock file left behind by a crashed git, or another writer at work */
        code = GITSVC_COMMAND_FAILED;
        status = ECP_ESTATE;
        break;
    case GIT_EAUTH:
        code = GITSVC_AUTH_FAILED;
        status = ECP_EACCES;
        break;
    case GIT_ECONFLICT:
        code = GITSVC_UNCOMMITTED_CHANGES;
        status = ECP_ESTATE;
        break;
    case GIT_EMERGECONFLICT:
        code = GITSVC_MERGE_CONFLICT;
        status = ECP_ESTATE;
        break;
    case GIT_ENOTFOUND:
        status = ECP_ENOTFOUND;
        break;
    default:
        break;
    }
    return gitsvc__fail(err, status, code, "%s: %s", what, text);
}

int gitsvc__check_cancel(const ecp_job *job, gitsvc_error *err)
{
    if (job && ecp_job_cancelled(job))
        return gitsvc__fail(err, ECP_ECANCELED, GITSVC_COMMAND_FAILED, "Request cancelled");
    return 0;
}

/* ----- hashes, dates, arrays, line changes ------------------------------------------------------------------------- */

void gitsvc__short_hash(char out[9], const git_oid *oid)
{
    char full[GIT_OID_HEXSZ + 1];
    git_oid_tostr(full, sizeof full, oid);
    memcpy(out, full, 8);
    out[8] = '\0';
}

void gitsvc__date(char out[11], const git_time *when)
{
    time_t t = (time_t)(when->time + (git_time_t)when->offset * 60);
    struct tm tm;
    gmtime_r(&t, &tm);
    char text[64];
    snprintf(text, sizeof text, "%04d-%02d-%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday);
    memcpy(out, text, 10);
    out[10] = '\0';
}

void *gitsvc__grow(arena *mem, void *items, size_t count, size_t *cap, size_t size)
{
    if (count < *cap)
        return items;
    size_t ncap = *cap ? *cap * 2 : 16;
    void *next = arena_alloc(mem, ncap * size);
    if (count)
        memcpy(next, items, count * size);
    *cap = ncap;
    return next;
}

static void changes_push(gitsvc__changes *out, size_t line, gitsvc_change_type type)
{
    out->items = gitsvc__grow(out->mem, out->items, out->count, &out->cap, sizeof *out->items);
    out->items[out->count++] = (gitsvc_line_change){line, type};
}

void gitsvc__changes_add_hunk(gitsvc__changes *out, size_t old_count, size_t new_start, size_t new_count)
{
    if (new_count == 0) {
        /* nothing left of the old lines: mark where they were */
        changes_push(out, new_start ? new_start : 1, GITSVC_LINE_CHANGE_DELETED);
        return;
    }
    gitsvc_change_type type = old_count == 0 ? GITSVC_LINE_CHANGE_ADDED : GITSVC_LINE_CHANGE_MODIFIED;
    for (size_t i = 0; i < new_count; i++)
        changes_push(out, new_start + i, type);
}

/* ----- opening ---------------------------------------------------------------------- */

static char *without_final_slash(const char *p)
{
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/')
        n--;
    return xstrndup(p, n);
}

int gitsvc_repo_open(const char *path, gitsvc_repo **out, bool *bare_out, gitsvc_error *err)
{
    *out = NULL;
    if (bare_out)
        *bare_out = false;
    if (!path || path[0] != '/')
        return gitsvc__fail(err, ECP_EINVAL, GITSVC_NOT_A_REPO, "Not an absolute path: %s", path ? path : "");
    /* Discovery starts from the deepest directory that exists: a file that was
     * deleted, or is about to be created, still names its repository. */
    buf dir = BUF_INIT;
    buf_append_str(&dir, path);
    struct stat st;
    while (stat(dir.data, &st) != 0 || !S_ISDIR(st.st_mode)) {
        char *slash = strrchr(dir.data, '/');
        if (!slash || slash == dir.data) {
            buf_clear(&dir);
            buf_append_str(&dir, "/");
            break;
        }
        dir.len = (size_t)(slash - dir.data);
        dir.data[dir.len] = '\0';
    }
    /* Every operation begins here: without libgit2 it ends here, saying why. */
    ecp_error load_err;
    if (gitsvc__git2_load(&load_err) < 0) {
        buf_free(&dir);
        return gitsvc__fail(err, load_err.status, GITSVC_COMMAND_FAILED, "%s", load_err.message);
    }
    git_repository *repo = NULL;
    int rc = git_repository_open_ext(&repo, dir.data, 0, NULL);
    buf_free(&dir);
    if (rc == GIT_ENOTFOUND)
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_NOT_A_REPO, "Not a git repository: %s", path);
    if (rc < 0) {
        gitsvc__libgit2(err, rc, GITSVC_NOT_A_REPO, path);
        if (err)
            err->code = GITSVC_NOT_A_REPO;
        return ECP_ENOTFOUND;
    }
    if (git_repository_is_bare(repo) || !git_repository_workdir(repo)) {
        git_repository_free(repo);
        if (bare_out)
            *bare_out = true;
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_NOT_A_REPO,
                            "Not a git work tree: %s is in a bare repository", path);
    }
    gitsvc_repo *r = xcalloc(1, sizeof *r);
    r->repo = repo;
    r->root = without_final_slash(git_repository_workdir(repo));
    r->gitdir = without_final_slash(git_repository_path(repo));
    *out = r;
    return 0;
}

void gitsvc_repo_close(gitsvc_repo *repo)
{
    if (!repo)
        return;
    git_repository_free(repo->repo);
    free_each(repo->root, repo->gitdir, repo);
}

const char *gitsvc_repo_root(const gitsvc_repo *repo) { return repo->root; }
const char *gitsvc_repo_gitdir(const gitsvc_repo *repo) { return repo->gitdir; }

/* rel of path under base ("" for base itself), or NULL when path is elsewhere. */
static const char *under(const char *path, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(path, base, n))
        return NULL;
    if (path[n] == '\0')
        return path + n;
    if (path[n] == '/')
        return path + n + 1;
    if (n == 1 && base[0] == '/')
        return path + 1;
    return NULL;
}

/* The real path of the deepest existing ancestor of path, with the rest appended. */
static void resolve_existing(buf *out, const char *path)
{
    buf head = BUF_INIT;
    buf_append_str(&head, path);
    size_t cut = head.len;
    char real[PATH_MAX];
    while (!realpath(head.data, real)) {
        char *slash = strrchr(head.data, '/');
        if (!slash || slash == head.data) {
            buf_append_str(out, path);
            buf_free(&head);
            return;
        }
        head.len = (size_t)(slash - head.data);
        head.data[head.len] = '\0';
        cut = head.len;
    }
    buf_append_str(out, real);
    buf_append_str(out, path + cut);
    buf_free(&head);
}

int gitsvc_repo_relative(const gitsvc_repo *repo, const char *path, arena *mem, const char **out,
                         gitsvc_error *err)
{
    buf abs = BUF_INIT, norm = BUF_INIT;
    if (path[0] != '/') {
        buf_append_str(&abs, repo->root);
        buf_push(&abs, '/');
    }
    buf_append_str(&abs, path);
    file_path_normalize(&norm, abs.data, abs.len);
    const char *rel = under(norm.data, repo->root);
    if (!rel) {
        /* the path may reach the work tree through a symbolic link */
        buf real = BUF_INIT;
        resolve_existing(&real, norm.data);
        rel = under(real.data, repo->root);
        if (rel) {
            buf_clear(&norm);
            buf_append_str(&norm, real.data);
            rel = under(norm.data, repo->root);
        }
        buf_free(&real);
    }
    int rc = 0;
    if (!rel)
        rc = gitsvc__fail(err, ECP_EINVAL, GITSVC_COMMAND_FAILED, "Path is outside the repository at %s: %s",
                          repo->root, path);
    else if (under(norm.data, repo->gitdir))
        rc = gitsvc__fail(err, ECP_EINVAL, GITSVC_COMMAND_FAILED, "Path is inside the git directory: %s", path);
    else
        *out = arena_strndup(mem, rel, strlen(rel));
    buf_free(&abs);
    buf_free(&norm);
    return rc;
}
