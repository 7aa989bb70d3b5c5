#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "glob.h"
#include "session/interface.h"
#include "uri.h"

/* ----- the service ------------------------------------------------------------ */

file_service *file_service_new(ecp_pool *pool, ecp_logger *log)
{
    file_service *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->pool = pool;
    self->loop = ecp_pool_loop(pool);
    self->log = log;
    self->jobs = ecp_job_set_new(pool);
    self->listeners = (ecp_listeners)ECP_LISTENERS_INIT;
    return self;
}

/* ----- settings ------------------------------------------------------------------ */

/* files.exclude names the directories recursive watches stay out of. A
 * pattern that does not compile is logged by set_watch_exclude and left out. */
static void apply_files_exclude(file_service *self)
{
    file_service_set_watch_exclude(self, session_setting_json(self->session, "files.exclude"), NULL);
}

static void setting_changed(void *ctx, const char *key, const char *value_json)
{
    (void)value_json;
    if (strcmp(key, "files.exclude") == 0)
        apply_files_exclude(ctx);
}

static const session_listener settings_listener = {.on_setting = setting_changed};

void file_service_follow_settings(file_service *self, session_service *session)
{
    if (self->session)
        session_unsubscribe(self->session, &settings_listener, self);
    self->session = session;
    if (!session)
        return;
    apply_files_exclude(self);
    session_subscribe(session, &settings_listener, self);
}

void file_service_free(file_service *self)
{
    if (!self)
        return;
    file_service_follow_settings(self, NULL);
    /* Jobs first: a walk's done would call back into whoever started it. */
    ecp_job_set_close(self->jobs);
    file__watcher_free(self->watcher);
    file_service_set_watch_exclude(self, NULL, NULL);
    ecp_listeners_free(&self->listeners);
    free(self);
}

uv_loop_t *file_service_loop(file_service *self)
{
    return self->loop;
}

/* ----- listeners ------------------------------------------------------------------ */

void file_subscribe(file_service *self, const file_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

bool file_unsubscribe(file_service *self, const file_listener *listener, void *ctx)
{
    return ecp_listeners_remove(&self->listeners, listener, ctx);
}

/* ----- walks ---------------------------------------------------------------------- */

void file_walk_start(ecp_job *walk)
{
    const file__walk *w = ecp_job_data(walk);
    ecp_job_start(walk, w->items);
}

int file__walk_outcome(ecp_job *job, bool ready, buf *rendered, ecp_shared **shared)
{
    file__walk *w = ecp_job_data(job);
    if (w->status == 0 && (!ready || ecp_job_cancelled(job)))
        w->status = ecp_error_set(&w->err, ECP_ECANCELED, "Request cancelled");
    if (w->status == 0 && rendered) {
        size_t len = rendered->len;
        *shared = ecp_shared_adopt(buf_detach(rendered), len);
    }
    return w->status;
}

unsigned file__walk_items(const file_service *svc)
{
    /* More items than cores only make the walk's threads take turns, and
     * more than the long lane's limit would wait for each other's turn. */
    unsigned n = ecp_pool_long_limit(svc->pool);
    unsigned cores = uv_available_parallelism();
    if (cores < n)
        n = cores;
    if (n > ECP_JOB_MAX_ITEMS)
        n = ECP_JOB_MAX_ITEMS;
    return n ? n : 1;
}

/* ----- the (dev, inode) set ----------------------------------------------------- */

static size_t idset_slot(const file__idset *self, uint64_t dev, uint64_t ino)
{
    uint64_t h = (dev * 0x9E3779B97F4A7C15ull) ^ (ino * 0xC2B2AE3D27D4EB4Full);
    h ^= h >> 29;
    size_t mask = self->cap - 1, i = (size_t)h & mask;
    while (self->keys[2 * i] || self->keys[2 * i + 1]) {
        if (self->keys[2 * i] == dev && self->keys[2 * i + 1] == ino)
            return i;
        i = (i + 1) & mask;
    }
    return i;
}

bool file__idset_add(file__idset *self, uint64_t dev, uint64_t ino)
{
    if (dev == 0 && ino == 0)
        ino = UINT64_MAX; /* (0,0) marks empty slots */
    if ((self->count + 1) * 2 > self->cap) {
        file__idset old = *self;
        self->cap = old.cap ? old.cap * 2 : 64;
        self->keys = xcalloc(self->cap * 2, sizeof *self->keys);
        self->count = 0;
        for (size_t i = 0; i < old.cap; i++) {
            if (old.keys[2 * i] || old.keys[2 * i + 1]) {
                size_t s = idset_slot(self, old.keys[2 * i], old.keys[2 * i + 1]);
                self->keys[2 * s] = old.keys[2 * i];
                self->keys[2 * s + 1] = old.keys[2 * i + 1];
                self->count++;
            }
        }
        free(old.keys);
    }
    size_t s = idset_slot(self, dev, ino);
    if (self->keys[2 * s] == dev && self->keys[2 * s + 1] == ino)
        return false;
    self->keys[2 * s] = dev;
    self->keys[2 * s + 1] = ino;
    self->count++;
    return true;
}

void file__idset_free(file__idset *self)
{
    free(self->keys);
    memset(self, 0, sizeof *self);
}

/* ----- errors ---------------------------------------------------------------------- */

/* The errno values a file operation names for a person; any other is an
 * I/O error in strerror's words. */
static const struct {
    int errnum;
    int status;
    const char *what;
} errno_statuses[] = {
    {ENOENT, ECP_ENOTFOUND, "File not found"},         {EACCES, ECP_EACCES, "Permission denied"},
    {EPERM, ECP_EACCES, "Permission denied"},          {EROFS, ECP_EACCES, "Read-only file system"},
    {EISDIR, ECP_EISDIR, "Is a directory"},            {ENOTDIR, ECP_ENOTDIR, "Not a directory"},
    {EEXIST, ECP_EEXIST, "Already exists"},            {ENOTEMPTY, ECP_ENOTEMPTY, "Directory not empty"},
    {ENOMEM, ECP_ENOMEM, "Out of memory"},
};

int file__errno(ecp_error *err, int errnum, const char *path)
{
    for (size_t i = 0; i < sizeof errno_statuses / sizeof errno_statuses[0]; i++)
        if (errno_statuses[i].errnum == errnum)
            return ecp_error_set(err, errno_statuses[i].status, "%s: %s", errno_statuses[i].what, path);
    return ecp_error_set(err, ECP_EIO, "%s: %s", path, strerror(errnum));
}

/* ----- paths ----------------------------------------------------------------------- */

void file_path_normalize(buf *out, const char *path, size_t len)
{
    uri_path_normalize(out, path, len);
}

int file_path_from_uri(const char *uri, size_t len, buf *out, ecp_error *err)
{
    return uri_file_path(uri, len, out, err);
}

void file_uri_from_path(buf *out, const char *path)
{
    uri_from_path(out, path, strlen(path));
}

void file__join(buf *out, const char *base, const char *name)
{
    buf_clear(out);
    size_t bl = strlen(base);
    buf_append(out, base, bl);
    if (bl == 0 || base[bl - 1] != '/')
        buf_push(out, '/');
    buf_append_str(out, name);
}

bool file__excluded_by_default(const char *name)
{
    return !strcmp(name, ".git") || !strcmp(name, "node_modules") || !strcmp(name, ".DS_Store");
}

/* The directory part of path ("/" for "/a"), into out. */
static void dir_of(buf *out, const char *path)
{
    buf_clear(out);
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        buf_append_str(out, "/");
    else
        buf_append(out, path, (size_t)(slash - path));
}

/* ENOENT from creating path: what is missing is its directory. */
static int parent_not_found(ecp_error *err, const char *path)
{
    buf dir = BUF_INIT;
    dir_of(&dir, path);
    int rc = ecp_error_set(err, ECP_ENOTFOUND, "Parent directory not found: %s", dir.data);
    buf_free(&dir);
    return rc;
}

static const char *base_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* ----- stat ------------------------------------------------------------------------ */

static double ms_of(struct statx_timestamp ts)
{
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

static void info_from_statx(file_info *out, const struct statx *sx)
{
    out->exists = true;
    out->is_directory = S_ISDIR(sx->stx_mode);
    out->is_file = S_ISREG(sx->stx_mode);
    out->size = sx->stx_size;
    out->mod_time = ms_of(sx->stx_mtime);
    out->create_time = (sx->stx_mask & STATX_BTIME) ? ms_of(sx->stx_btime) : ms_of(sx->stx_ctime);
    out->mode = sx->stx_mode;
}

int file_stat(const char *path, file_info *out, ecp_error *err)
{
    memset(out, 0, sizeof *out);
    struct statx sx, lsx;
    unsigned mask = STATX_BASIC_STATS | STATX_BTIME;
    bool have_l = statx(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, mask, &lsx) == 0;
    int lerr = errno;
    if (!have_l) {
        if (lerr == ENOENT || lerr == ENOTDIR)
            return 0;
        return file__errno(err, lerr, path);
    }
    bool link = S_ISLNK(lsx.stx_mode);
    if (link) {
        if (statx(AT_FDCWD, path, 0, mask, &sx) != 0) {
            /* a dangling link: it exists, but is neither a file nor a directory */
            out->exists = true;
            out->is_symlink = true;
            out->mod_time = ms_of(lsx.stx_mtime);
            out->create_time = ms_of(lsx.stx_ctime);
            out->mode = lsx.stx_mode;
            return 0;
        }
        info_from_statx(out, &sx);
    } else {
        info_from_statx(out, &lsx);
    }
    out->is_symlink = link;
    return 0;
}

/* ----- read ------------------------------------------------------------------------- */

int file_read(const char *path, size_t max_size, char **data, size_t *len, file_info *info, ecp_error *err)
{
    *data = NULL;
    *len = 0;
    char *bytes = NULL;
    int rc = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        rc = file__errno(err, errno, path);
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = file__errno(err, errno, path);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EISDIR, "Is a directory: %s", path);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", path);
        goto done;
    }
    if ((uint64_t)st.st_size > max_size) {
        rc = ecp_error_set(err, ECP_ETOOBIG, "File too large: %s (%lld bytes; the limit is %zu)", path,
                           (long long)st.st_size, max_size);
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1, n = 0;
    bytes = malloc(cap + 1);
    if (!bytes) {
        rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory reading %s", path);
        goto done;
    }
    for (;;) {
        if (n == cap) {
            /* the file grew while we read it */
            if (cap > max_size) {
                rc = ecp_error_set(err, ECP_ETOOBIG, "File too large: %s", path);
                goto done;
            }
            char *more = realloc(bytes, cap * 2 + 1);
            if (!more) {
                rc = ecp_error_set(err, ECP_ENOMEM, "Out of memory reading %s", path);
                goto done;
            }
            bytes = more;
            cap *= 2;
        }
        ssize_t r = read(fd, bytes + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = file__errno(err, errno, path);
            goto done;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    bytes[n] = '\0';
    if (info) {
        memset(info, 0, sizeof *info);
        struct statx sx;
        if (statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS | STATX_BTIME, &sx) == 0)
            info_from_statx(info, &sx);
        info->size = n;
    }
    *data = bytes;
    *len = n;
    bytes = NULL;
done:
    free(bytes);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* ----- write --------------------------------------------------------------------------- */

/* mkdir -p: creates path and its missing parents. */
static int make_dirs(const char *path, mode_t mode, ecp_error *err)
{
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return 0;
        return ecp_error_set(err, ECP_EEXIST, "Already exists and is not a directory: %s", path);
    }
    buf b = BUF_INIT;
    buf_append_str(&b, path);
    int rc = 0;
    for (size_t i = 1; i <= b.len; i++) {
        if (i < b.len && b.data[i] != '/')
            continue;
        char saved = b.data[i];
        b.data[i] = '\0';
        if (mkdir(b.data, mode) != 0) {
            if (errno != EEXIST) {
                rc = file__errno(err, errno, b.data);
                break;
            }
            if (stat(b.data, &st) == 0 && !S_ISDIR(st.st_mode)) {
                rc = ecp_error_set(err, ECP_EEXIST, "Already exists and is not a directory: %s", b.data);
                break;
            }
        }
        b.data[i] = saved;
    }
    buf_free(&b);
    return rc;
}

/* Copies the rest of src into dst, in the kernel when it can. */
static int copy_fd(int src, int dst)
{
    for (;;) {
        ssize_t n = copy_file_range(src, NULL, dst, NULL, 1 << 30, 0);
        if (n == 0)
            return 0;
        if (n > 0)
            continue;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
            return -1;
        break;
    }
    char chunk[65536];
    for (;;) {
        ssize_t r = read(src, chunk, sizeof chunk);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            return 0;
        if (buf_write_fd(dst, chunk, (size_t)r) != 0)
            return -1;
    }
}

/* Creates a fresh, exclusive temporary file next to target; its name goes to
 * tmp and its descriptor to *fd. */
static int open_temp(const char *target, mode_t mode, buf *tmp, int *fd, ecp_error *err)
{
    buf dir = BUF_INIT;
    dir_of(&dir, target);
    *fd = -1;
    for (int attempt = 0; attempt < 16 && *fd < 0; attempt++) {
        unsigned char rnd[6];
        if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
            memset(rnd, attempt, sizeof rnd);
        buf_clear(tmp);
        buf_appendf(tmp, "%s%s.%s.%02x%02x%02x%02x%02x%02x.tmp", dir.data, strcmp(dir.data, "/") ? "/" : "",
                    base_of(target), rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
        *fd = open(tmp->data, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (*fd < 0 && errno != EEXIST)
            break;
    }
    int rc = 0;
    if (*fd < 0 && errno == ENOENT)
        rc = ecp_error_set(err, ECP_ENOTFOUND, "Parent directory not found: %s", dir.data);
    else if (*fd < 0)
        rc = file__errno(err, errno, dir.data); /* the directory refused a new file */
    if (*fd < 0)
        buf_clear(tmp); /* nothing to remove */
    buf_free(&dir);
    return rc;
}

static void sync_dir_of(const char *path)
{
    buf dir = BUF_INIT;
    dir_of(&dir, path);
    int dfd = open(dir.data, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    buf_free(&dir);
}

/* Puts tmp in place of target: rename when replacing, link when the target must
 * not exist (link fails atomically if something appeared meanwhile). */
static int commit_temp(const char *tmp, const char *target, bool replace, ecp_error *err)
{
    if (replace) {
        if (rename(tmp, target) != 0)
            return file__errno(err, errno, target);
        return 0;
    }
    if (link(tmp, target) == 0) {
        unlink(tmp);
        return 0;
    }
    if (errno == EEXIST)
        return ecp_error_set(err, ECP_EEXIST, "File already exists: %s", target);
    /* file systems without hard links: check, then rename */
    struct stat st;
    if (lstat(target, &st) == 0)
        return ecp_error_set(err, ECP_EEXIST, "File already exists: %s", target);
    if (rename(tmp, target) != 0)
        return file__errno(err, errno, target);
    return 0;
}

/* Writes data into the file at target through a temporary file. `existing`
 * describes target when it exists (NULL otherwise). */
static int replace_contents(const char *target, const struct stat *existing, bool replace, const char *data,
                            size_t len, int src_fd, ecp_error *err)
{
    buf tmp = BUF_INIT;
    int rc = 0;
    mode_t mode = existing ? (existing->st_mode & 07777) : 0666;
    int fd;
    rc = open_temp(target, mode, &tmp, &fd, err);
    if (rc)
        goto done;
    if (src_fd >= 0 ? copy_fd(src_fd, fd) != 0 : buf_write_fd(fd, data, len) != 0) {
        rc = file__errno(err, errno, target);
        goto done;
    }
    if (existing) {
        /* the umask may have cut bits from the mode given to open */
        fchmod(fd, existing->st_mode & 07777);
        if (existing->st_uid != geteuid() || existing->st_gid != getegid())
            (void)!fchown(fd, existing->st_uid, existing->st_gid);
    }
    if (fsync(fd) != 0) {
        rc = file__errno(err, errno, target);
        goto done;
    }
    int cfd = fd;
    fd = -1;
    if (close(cfd) != 0) {
        rc = file__errno(err, errno, target);
        goto done;
    }
    rc = commit_temp(tmp.data, target, replace, err);
    if (rc == 0) {
        sync_dir_of(target);
        buf_clear(&tmp);
    }
done:
    if (fd >= 0)
        close(fd);
    if (tmp.len)
        unlink(tmp.data);
    buf_free(&tmp);
    return rc;
}

/* The file a write to path should replace: the target of a symlink. */
static void resolve_target(const char *path, buf *out)
{
    buf_clear(out);
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        char *real = realpath(path, NULL);
        if (real) {
            buf_append_str(out, real);
            free(real);
            return;
        }
    }
    buf_append_str(out, path);
}

int file_write(const char *path, const char *data, size_t len, const file_write_options *options,
               double *mod_time, ecp_error *err)
{
    file_write_options defaults = {false, true};
    if (!options)
        options = &defaults;
    buf target = BUF_INIT, dir = BUF_INIT;
    int rc = 0;
    resolve_target(path, &target);
    struct stat st;
    bool exists = stat(target.data, &st) == 0;
    if (!exists && errno != ENOENT) {
        rc = file__errno(err, errno, path);
        goto done;
    }
    if (exists && S_ISDIR(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EISDIR, "Is a directory: %s", path);
        goto done;
    }
    if (exists && !options->overwrite) {
        rc = ecp_error_set(err, ECP_EEXIST, "File already exists: %s", path);
        goto done;
    }
    if (exists && !S_ISREG(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", path);
        goto done;
    }
    dir_of(&dir, target.data);
    struct stat dst;
    if (stat(dir.data, &dst) != 0) {
        if (errno != ENOENT) {
            rc = file__errno(err, errno, dir.data);
            goto done;
        }
        if (!options->create_parents) {
            rc = ecp_error_set(err, ECP_ENOTFOUND, "Parent directory not found: %s", dir.data);
            goto done;
        }
        rc = make_dirs(dir.data, 0777, err);
        if (rc)
            goto done;
    } else if (!S_ISDIR(dst.st_mode)) {
        rc = ecp_error_set(err, ECP_ENOTDIR, "Not a directory: %s", dir.data);
        goto done;
    }
    rc = replace_contents(target.data, exists ? &st : NULL, options->overwrite, data, len, -1, err);
    if (rc == ECP_EACCES && exists && access(target.data, W_OK) == 0) {
        /* The directory refuses new files but the file itself is writable:
         * write in place, which is what the user can do by hand. */
        int fd = open(target.data, O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd >= 0) {
            rc = buf_write_fd(fd, data, len) == 0 && fsync(fd) == 0 ? 0 : file__errno(err, errno, path);
            close(fd);
        }
    }
    if (rc)
        goto done;
    if (mod_time) {
        file_info info;
        *mod_time = file_stat(target.data, &info, NULL) == 0 ? info.mod_time : 0;
    }
done:
    buf_free(&target);
    buf_free(&dir);
    return rc;
}

/* ----- delete, rename, copy --------------------------------------------------------- */

int file_delete(const char *path, ecp_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return file__errno(err, errno, path);
    if (S_ISDIR(st.st_mode))
        return ecp_error_set(err, ECP_EISDIR, "Is a directory: %s (use deleteDir for directories)", path);
    if (unlink(path) != 0)
        return file__errno(err, errno, path);
    return 0;
}

/* Removes the directory `name` in dirfd and everything below it, never
 * following symlinks. `path` is its full path, for messages. */
static int remove_tree_at(int dirfd, const char *name, const char *path, ecp_error *err)
{
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return file__errno(err, errno, path);
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return file__errno(err, errno, path);
    }
    int rc = 0;
    buf child = BUF_INIT;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        bool is_dir = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st;
            is_dir = fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
        }
        file__join(&child, path, e->d_name);
        if (is_dir)
            rc = remove_tree_at(fd, e->d_name, child.data, err);
        else if (unlinkat(fd, e->d_name, 0) != 0 && errno != ENOENT)
            rc = file__errno(err, errno, child.data);
    }
    if (rc == 0 && errno != 0)
        rc = file__errno(err, errno, path);
    closedir(d);
    buf_free(&child);
    if (rc == 0 && unlinkat(dirfd, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
        rc = file__errno(err, errno, path);
    return rc;
}

static int copy_file(const char *from, const char *to, ecp_error *err)
{
    int src = open(from, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (src < 0)
        return file__errno(err, errno, from);
    int rc = 0;
    struct stat sst, dst;
    if (fstat(src, &sst) != 0) {
        rc = file__errno(err, errno, from);
        goto done;
    }
    if (!S_ISREG(sst.st_mode)) {
        rc = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", from);
        goto done;
    }
    bool exists = stat(to, &dst) == 0;
    if (exists && S_ISDIR(dst.st_mode)) {
        rc = ecp_error_set(err, ECP_EISDIR, "Is a directory: %s", to);
        goto done;
    }
    /* as file_write: a FIFO or a device is not turned into a regular file */
    if (exists && !S_ISREG(dst.st_mode)) {
        rc = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", to);
        goto done;
    }
    /* the copy takes the source's mode, but belongs to whoever copies */
    struct stat mode_src = sst;
    mode_src.st_uid = geteuid();
    mode_src.st_gid = getegid();
    rc = replace_contents(to, &mode_src, true, NULL, 0, src, err);
done:
    close(src);
    return rc;
}

/* Copies directory `from` to `to` (which must not exist), symlinks as symlinks. */
/* Never inlined: its 4 KiB buffer must not sit in each frame of copy_tree,
 * which recurses as deep as the tree (2,000 levels fit in PATH_MAX). */
static __attribute__((noinline)) int copy_link(const char *from, const char *to, ecp_error *err)
{
    char target[4096];
    ssize_t n = readlink(from, target, sizeof target - 1);
    if (n < 0)
        return file__errno(err, errno, from);
    target[n] = '\0';
    if (symlink(target, to) != 0)
        return file__errno(err, errno, to);
    return 0;
}

static int copy_tree(const char *from, const char *to, ecp_error *err)
{
    struct stat st;
    if (lstat(from, &st) != 0)
        return file__errno(err, errno, from);
    if (S_ISLNK(st.st_mode))
        return copy_link(from, to, err);
    if (!S_ISDIR(st.st_mode))
        return copy_file(from, to, err);
    if (mkdir(to, (st.st_mode & 07777) | 0700) != 0)
        return file__errno(err, errno, to);
    DIR *d = opendir(from);
    if (!d)
        return file__errno(err, errno, from);
    int rc = 0;
    buf a = BUF_INIT, b = BUF_INIT;
    struct dirent *e;
    while (rc == 0 && (errno = 0, e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        file__join(&a, from, e->d_name);
        file__join(&b, to, e->d_name);
        rc = copy_tree(a.data, b.data, err);
    }
    if (rc == 0 && errno != 0)
        rc = file__errno(err, errno, from);
    closedir(d);
    if (rc == 0)
        chmod(to, st.st_mode & 07777);
    buf_free(&a);
    buf_free(&b);
    return rc;
}

int file_rename(const char *from, const char *to, ecp_error *err)
{
    struct stat st;
    if (lstat(from, &st) != 0)
        return file__errno(err, errno, from);
    /* The entry at `to` is what a rename replaces (a symlink itself, not its
     * target): a FIFO, socket or device there is refused, as file_write does. */
    struct stat existing;
    if (lstat(to, &existing) == 0 && !S_ISREG(existing.st_mode) && !S_ISDIR(existing.st_mode) &&
        !S_ISLNK(existing.st_mode))
        return ecp_error_set(err, ECP_EIO, "Not a regular file: %s", to);
    if (rename(from, to) == 0)
        return 0;
    int e = errno;
    if (e == EXDEV) {
        struct stat tst;
        if (lstat(to, &tst) == 0) {
            if (S_ISDIR(tst.st_mode) != S_ISDIR(st.st_mode))
                return file__errno(err, S_ISDIR(tst.st_mode) ? EISDIR : ENOTDIR, to);
            int rc = S_ISDIR(tst.st_mode) ? file_delete_dir(to, false, err) : file_delete(to, err);
            if (rc)
                return rc;
        }
        int rc = S_ISDIR(st.st_mode) ? copy_tree(from, to, err) : copy_file(from, to, err);
        if (rc)
            return rc;
        return S_ISDIR(st.st_mode) ? file_delete_dir(from, true, err) : file_delete(from, err);
    }
    if (e == ENOENT)
        return parent_not_found(err, to);
    if (e == EINVAL)
        return ecp_error_set(err, ECP_EINVAL, "Cannot move a directory into itself: %s to %s", from, to);
    return file__errno(err, e, to);
}

int file_copy(const char *from, const char *to, ecp_error *err)
{
    struct stat st;
    if (stat(from, &st) != 0)
        return file__errno(err, errno, from);
    if (!S_ISDIR(st.st_mode))
        return copy_file(from, to, err);
    struct stat tst;
    if (lstat(to, &tst) == 0)
        return ecp_error_set(err, ECP_EEXIST, "Already exists: %s", to);
    /* copying a directory into itself would never end */
    char *rf = realpath(from, NULL);
    buf parent = BUF_INIT;
    dir_of(&parent, to);
    char *rp = realpath(parent.data, NULL);
    int rc = 0;
    if (rf && rp) {
        if (uri_path_within(rp, rf))
            rc = ecp_error_set(err, ECP_EINVAL, "Cannot copy a directory into itself: %s to %s", from, to);
    } else if (!rp) {
        rc = ecp_error_set(err, ECP_ENOTFOUND, "Parent directory not found: %s", parent.data);
    }
    free(rf);
    free(rp);
    buf_free(&parent);
    if (rc)
        return rc;
    rc = copy_tree(from, to, err);
    if (rc) {
        ecp_error ignored;
        remove_tree_at(AT_FDCWD, to, to, &ignored);
    }
    return rc;
}

/* ----- directories ------------------------------------------------------------------- */

static int ci_compare(const char *a, const char *b)
{
    int c = strcasecmp(a, b);
    if (c)
        return c;
    /* lower case first on ties, as localeCompare does ("a" < "A") */
    return -strcmp(a, b);
}

static int entry_compare(const void *pa, const void *pb)
{
    const file_dir_entry *a = pa, *b = pb;
    bool da = a->type == FILE_TYPE_DIRECTORY, db = b->type == FILE_TYPE_DIRECTORY;
    if (da != db)
        return da ? -1 : 1;
    return ci_compare(a->name, b->name);
}

int file_read_dir(const char *path, file_dir_entry **entries, size_t *count, ecp_error *err)
{
    *entries = NULL;
    *count = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return file__errno(err, errno, path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        close(fd);
        return ecp_error_set(err, ECP_ENOTDIR, "Not a directory: %s", path);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int rc = file__errno(err, errno, path);
        close(fd);
        return rc;
    }
    size_t n = 0, cap = 16;
    file_dir_entry *list = xmalloc(cap * sizeof *list);
    struct dirent *e;
    int rc = 0;
    while ((errno = 0, e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap) {
            cap *= 2;
            list = xrealloc(list, cap * sizeof *list);
        }
        file_dir_entry *it = &list[n];
        memset(it, 0, sizeof *it);
        struct statx sx;
        it->type = FILE_TYPE_OTHER;
        if (statx(fd, e->d_name, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0) {
            if (S_ISLNK(sx.stx_mode))
                it->type = FILE_TYPE_SYMLINK;
            else if (S_ISDIR(sx.stx_mode))
                it->type = FILE_TYPE_DIRECTORY;
            else if (S_ISREG(sx.stx_mode))
                it->type = FILE_TYPE_FILE;
            if (it->type == FILE_TYPE_FILE) {
                it->size = sx.stx_size;
                it->mod_time = ms_of(sx.stx_mtime);
            }
        } else {
            continue; /* vanished meanwhile */
        }
        it->name = xstrdup(e->d_name);
        n++;
    }
    if (errno != 0)
        rc = file__errno(err, errno, path);
    closedir(d);
    if (rc) {
        file_dir_entries_free(list, n);
        return rc;
    }
    if (n > 1)
        qsort(list, n, sizeof *list, entry_compare);
    *entries = list;
    *count = n;
    return 0;
}

void file_dir_entries_free(file_dir_entry *entries, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(entries[i].name);
    free(entries);
}

int file_create_dir(const char *path, bool recursive, ecp_error *err)
{
    if (recursive)
        return make_dirs(path, 0777, err);
    if (mkdir(path, 0777) == 0)
        return 0;
    if (errno == ENOENT)
        return parent_not_found(err, path);
    return file__errno(err, errno, path);
}

int file_delete_dir(const char *path, bool recursive, ecp_error *err)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return file__errno(err, errno, path);
    if (!S_ISDIR(st.st_mode))
        return ecp_error_set(err, ECP_ENOTDIR, "Not a directory: %s", path);
    if (!recursive) {
        if (rmdir(path) == 0)
            return 0;
        if (errno == EEXIST || errno == ENOTEMPTY)
            return ecp_error_set(err, ECP_ENOTEMPTY, "Directory not empty: %s", path);
        return file__errno(err, errno, path);
    }
    return remove_tree_at(AT_FDCWD, path, path, err);
}

/* ----- pattern lists ------------------------------------------------------------------- */

int file__globs_compile(const char *const *patterns, size_t count, unsigned flags, file__glob ***out,
                        ecp_error *err)
{
    *out = count ? xcalloc(count, sizeof **out) : NULL;
    for (size_t i = 0; i < count; i++) {
        ecp_error e;
        int rc = file__glob_compile(patterns[i], flags, &(*out)[i], &e);
        if (rc) {
            ecp_error_set(err, rc, "invalid glob '%.40s%s': %s", patterns[i], strlen(patterns[i]) > 40 ? "..." : "",
                          e.message);
            file__globs_free(*out, count);
            *out = NULL;
            return rc;
        }
    }
    return 0;
}

void file__globs_free(file__glob **globs, size_t count)
{
    if (!globs)
        return;
    for (size_t i = 0; i < count; i++)
        file__glob_free(globs[i]);
    free(globs);
}

bool file__globs_match(file__glob *const *globs, size_t count, const char *rel, size_t len)
{
    for (size_t i = 0; i < count; i++)
        if (file__glob_match(globs[i], rel, len))
            return true;
    return false;
}
