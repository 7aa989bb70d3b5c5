/* fileio: reading and safely writing whole files.
 *
 * Both run on the pool's threads (reads of big files, every write), so they
 * touch nothing but their arguments and the file system; a write pulls its
 * bytes from its caller's source, which must be as safe to read there (a
 * snapshot is).
 *
 * A write never leaves the file half-written: it replaces the file through a
 * temporary file and a rename, or, for a file with several hard links (which
 * a rename would split), writes in place with a copy of the old contents kept
 * until the new ones are on disk. Reads and writes record the file's identity
 * (device, inode, size, modification and change times), so that a later write
 * can tell whether someone else changed the file in between.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

/* Big enough to make syscalls negligible, small enough that the CRLF pass
 * finds the chunk still in cache. */
#define READ_CHUNK (4u << 20)

/* From this size on, the buffer a file is read into is prefaulted. */
#define BIG_BUFFER (4u << 20)

/* Faulting in a big buffer one 4 KiB page at a time while the kernel copies
 * the file into it costs more than the copy (measured: 100 MB took 550 ms
 * that way, 25 ms with huge pages populated up front). Both calls are hints:
 * a kernel that lacks them just faults as usual. */
static void prefault(char *data, size_t len)
{
    uintptr_t a = ((uintptr_t)data + 4095) & ~(uintptr_t)4095;
    uintptr_t b = ((uintptr_t)data + len) & ~(uintptr_t)4095;
    if (b <= a)
        return;
#ifdef MADV_HUGEPAGE
    madvise((void *)a, b - a, MADV_HUGEPAGE);
#endif
#ifdef MADV_POPULATE_WRITE
    madvise((void *)a, b - a, MADV_POPULATE_WRITE);
#endif
}

static int open_failure(ecp_error *err, int errnum, const char *path)
{
    return ecp_error_set(err, ecp_status_from_errno(errnum), "Failed to open file: %s: %s", path, strerror(errnum));
}

/* Normalises the n bytes just read at data + w in place; returns the new w. */
static size_t drop_crs(char *data, size_t w, size_t n)
{
    char *src = data + w, *end = src + n, *dst = src;
    /* The chunk before ended in '\r' and this one starts the '\n' it belongs to. */
    if (n && src[0] == '\n' && w && data[w - 1] == '\r')
        dst--;
    while (src < end) {
        char *cr = memchr(src, '\r', (size_t)(end - src));
        size_t run = (size_t)((cr ? cr : end) - src);
        if (dst != src)
            memmove(dst, src, run);
        dst += run;
        if (!cr)
            break;
        src = cr + 1;
        if (src < end && *src == '\n')
            continue; /* drop the '\r' of a CRLF */
        *dst++ = '\r'; /* a bare '\r', or one whose '\n' is in the next chunk */
    }
    return (size_t)(dst - data);
}

/* ----- file identity ------------------------------------------------------------ */

void document__disk_from_stat(const struct stat *st, doc_disk *out)
{
    memset(out, 0, sizeof *out);
    out->exists = true;
    out->dev = (uint64_t)st->st_dev;
    out->ino = (uint64_t)st->st_ino;
    out->size = (uint64_t)st->st_size;
    out->mtime_sec = (int64_t)st->st_mtim.tv_sec;
    out->mtime_nsec = (long)st->st_mtim.tv_nsec;
    out->ctime_sec = (int64_t)st->st_ctim.tv_sec;
    out->ctime_nsec = (long)st->st_ctim.tv_nsec;
}

int document__disk_stat(const char *path, doc_disk *out)
{
    struct stat st;
    memset(out, 0, sizeof *out);
    if (stat(path, &st) == 0) {
        document__disk_from_stat(&st, out);
        return 0;
    }
    return errno == ENOENT || errno == ENOTDIR ? 0 : ecp_status_from_errno(errno);
}

bool document__disk_same(const doc_disk *a, const doc_disk *b)
{
    if (!a->exists || !b->exists)
        return a->exists == b->exists;
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size && a->mtime_sec == b->mtime_sec &&
           a->mtime_nsec == b->mtime_nsec && a->ctime_sec == b->ctime_sec && a->ctime_nsec == b->ctime_nsec;
}

/* ----- reading ---------------------------------------------------------------------- */

static const char utf8_bom[3] = {'\xEF', '\xBB', '\xBF'};

/* Whether the reader should give up: polled between chunks. */
typedef bool (*stop_fn)(const void *ctx);

static int read_file(const char *path, stop_fn stop, const void *stop_ctx, doc_file *out, ecp_error *err)
{
    int rc = 0;
    char *data = NULL;
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return open_failure(err, errno, path);
    struct stat st;
    if (fstat(fd, &st) != 0) {
        rc = open_failure(err, errno, path);
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        rc = open_failure(err, EISDIR, path);
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EINVAL, "Failed to open file: %s: not a regular file", path);
        goto done;
    }
    size_t cap = (size_t)st.st_size + 1;
    data = malloc(cap);
    if (!data) {
        rc = ecp_error_set(err, ECP_ENOMEM, "Failed to open file: %s: not enough memory for %zu bytes", path,
                           cap - 1);
        goto done;
    }
    if (cap >= BIG_BUFFER)
        prefault(data, cap);
    size_t w = 0;
    bool decided = false, crlf = false;
    for (;;) {
        if (stop && stop(stop_ctx)) {
            rc = ecp_error_set(err, ECP_ECANCELED, "Failed to open file: %s: cancelled", path);
            goto done;
        }
        size_t room = cap - 1 - w; /* one byte stays for the NUL */
        char probe[4096];
        /* Once the buffer holds what fstat announced, a small read tells EOF
         * from a file that grew, without growing (and copying) the buffer. */
        char *into = room ? data + w : probe;
        ssize_t got = read(fd, into, room ? (room < READ_CHUNK ? room : READ_CHUNK) : sizeof probe);
        if (got < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            rc = open_failure(err, errno, path);
            goto done;
        }
        if (got == 0)
            break;
        size_t n = (size_t)got;
        if (!room) {
            size_t ncap = cap + cap / 2 + n + READ_CHUNK;
            char *grown = realloc(data, ncap);
            if (!grown) {
                rc = ecp_error_set(err, ECP_ENOMEM, "Failed to open file: %s: not enough memory", path);
                goto done;
            }
            data = grown;
            cap = ncap;
            memcpy(data + w, probe, n);
        }
        if (!decided) {
            const char *nl = memchr(data + w, '\n', n);
            if (nl) {
                size_t at = (size_t)(nl - data);
                decided = true;
                crlf = at > 0 && data[at - 1] == '\r';
            }
        }
        w = crlf ? drop_crs(data, w, n) : w + n;
    }
    /* A byte order mark is not text: it stays out of the document (and of
     * every position) and is written back by the save. */
    if (w >= sizeof utf8_bom && memcmp(data, utf8_bom, sizeof utf8_bom) == 0) {
        memmove(data, data + sizeof utf8_bom, w - sizeof utf8_bom);
        w -= sizeof utf8_bom;
        out->bom = true;
    }
    data[w] = '\0';
    /* What the file was when it was opened: a change made while it was read
     * then shows up as a difference, and the document follows it. */
    document__disk_from_stat(&st, &out->disk);
    out->data = data;
    out->len = w;
    out->crlf = crlf;
    data = NULL;
done:
    free(data);
    close(fd);
    return rc;
}

static bool flag_set(const void *ctx) { return atomic_load((atomic_bool *)ctx); }

int document__read_file(const char *path, atomic_bool *cancel, char **data, size_t *len, bool *crlf, ecp_error *err)
{
    doc_file file;
    int rc = read_file(path, cancel ? flag_set : NULL, cancel, &file, err);
    if (rc == 0) {
        *data = file.data;
        *len = file.len;
        *crlf = file.crlf;
    }
    return rc;
}

static bool job_cancelled(const void *ctx) { return ecp_job_cancelled(ctx); }

int document__read_file_job(const char *path, const ecp_job *job, doc_file *out, ecp_error *err)
{
    return read_file(path, job ? job_cancelled : NULL, job, out, err);
}

size_t document__normalize_eol(char *data, size_t len, bool *crlf)
{
    const char *nl = memchr(data, '\n', len);
    *crlf = nl && nl > data && nl[-1] == '\r';
    return *crlf ? drop_crs(data, 0, len) : len;
}

/* Pieces of a document are often a few bytes long: they are gathered into
 * writes of this size. A chunk at least this big goes to write() as it is. */
#define WRITE_BUFFER (1u << 20)

typedef struct out_file {
    int fd;
    char *buf;
    size_t used, cap;
    uint64_t total; /* bytes handed to write() so far */
} out_file;

/* Returns 0 or an errno. */
static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len < (1u << 30) ? len : (1u << 30));
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int out_flush(out_file *o)
{
    int rc = write_all(o->fd, o->buf, o->used);
    if (rc == 0)
        o->total += o->used;
    o->used = 0;
    return rc;
}

static int out_put(out_file *o, const char *p, size_t len)
{
    if (len <= o->cap - o->used) {
        memcpy(o->buf + o->used, p, len);
        o->used += len;
        return 0;
    }
    int rc = out_flush(o);
    if (rc != 0)
        return rc;
    if (len >= o->cap) {
        rc = write_all(o->fd, p, len);
        if (rc == 0)
            o->total += len;
        return rc;
    }
    memcpy(o->buf, p, len);
    o->used = len;
    return 0;
}

/* Writes what next hands out to fd through out (its buffer allocated by the
 * caller), the byte order mark first and CRLF line ends when asked, then
 * flushes. Returns 0 or an errno. */
static int out_stream(out_file *out, document_write_next next, void *ctx, const doc_write *how)
{
    int errnum = how->bom ? out_put(out, utf8_bom, sizeof utf8_bom) : 0;
    const char *chunk;
    size_t n;
    while (errnum == 0 && next(ctx, &chunk, &n)) {
        if (!how->crlf) {
            errnum = out_put(out, chunk, n);
            continue;
        }
        for (const char *end = chunk + n; errnum == 0 && chunk < end;) {
            const char *nl = memchr(chunk, '\n', (size_t)(end - chunk));
            errnum = out_put(out, chunk, (size_t)((nl ? nl : end) - chunk));
            if (!nl || errnum != 0)
                break;
            errnum = out_put(out, "\r\n", 2);
            chunk = nl + 1;
        }
    }
    return errnum ? errnum : out_flush(out);
}

static int save_failure(ecp_error *err, int errnum, const char *what, const char *path)
{
    return ecp_error_set(err, ecp_status_from_errno(errnum), "Failed to save %s: %s: %s", path, what,
                         strerror(errnum));
}

/* ----- temporary files ----------------------------------------------------------------
 *
 * A save writes ".<name>.ecpd-<12 hex digits>" next to the file and renames it
 * over the file. The writer holds an exclusive flock on it from the moment it
 * exists until it has been renamed (or removed), so one that nobody holds a
 * lock on was left by a save that never finished (the process died): the
 * kernel drops a dead process's locks. Only such files, of that exact name,
 * owned by us, are ever removed. */

#define TEMP_MARK ".ecpd-"
#define TEMP_DIGITS 12

/* The directory and last name of an absolute path. */
static void split_path(const char *path, char **dir, const char **base)
{
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    *dir = dir_len ? xstrndup(path, dir_len) : xstrdup("/");
    *base = slash ? slash + 1 : path;
}

/* Creates, locks and returns (in *fd) a temporary file next to target, named
 * after it with `kind` ("" for a save's temporary file, "backup-" for the copy
 * kept while a file is written in place). Returns 0 or an errno. */
static int temp_create(const char *target, const char *kind, mode_t mode, char **name, int *fd)
{
    char *dir;
    const char *base;
    split_path(target, &dir, &base);
    size_t cap = strlen(dir) + strlen(base) + strlen(kind) + 32;
    char *tmp = xmalloc(cap);
    int rc = EEXIST;
    *fd = -1;
    for (int attempt = 0; attempt < 16 && *fd < 0; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != sizeof r)
            r = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&r ^ (uint64_t)attempt;
        snprintf(tmp, cap, "%s/.%s" TEMP_MARK "%s%012llx", strcmp(dir, "/") ? dir : "", base, kind,
                 (unsigned long long)(r & 0xFFFFFFFFFFFFull));
        int f = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, mode);
        if (f < 0) {
            rc = errno;
            if (rc == EEXIST)
                continue;
            break;
        }
        /* A file system without locks gets none: a sweep there never
         * removes anything (it needs the lock too). A sweep may have taken
         * the file between its creation and the lock (it saw a file nobody
         * held): then it is gone, and we try again. */
        (void)flock(f, LOCK_EX);
        struct stat st;
        if (fstat(f, &st) == 0 && st.st_nlink == 0) {
            rc = EEXIST;
            close(f);
            continue;
        }
        *fd = f;
        rc = 0;
    }
    free(dir);
    if (rc != 0) {
        free(tmp);
        tmp = NULL;
    }
    *name = tmp;
    return rc;
}

static bool is_temp_name(const char *name, const char *base)
{
    size_t blen = strlen(base), mlen = strlen(TEMP_MARK);
    if (name[0] != '.' || strncmp(name + 1, base, blen) != 0 || strncmp(name + 1 + blen, TEMP_MARK, mlen) != 0)
        return false;
    const char *digits = name + 1 + blen + mlen;
    for (int i = 0; i < TEMP_DIGITS; i++)
        if (!((digits[i] >= '0' && digits[i] <= '9') || (digits[i] >= 'a' && digits[i] <= 'f')))
            return false;
    return digits[TEMP_DIGITS] == '\0';
}

size_t document__sweep_temps(const char *path)
{
    char *dir;
    const char *base;
    split_path(path, &dir, &base);
    size_t removed = 0;
    DIR *d = *base ? opendir(dir) : NULL;
    if (d) {
        int dfd = dirfd(d);
        uid_t me = geteuid();
        for (struct dirent *e; (e = readdir(d));) {
            if (!is_temp_name(e->d_name, base))
                continue;
            int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
            if (fd < 0)
                continue;
            struct stat st;
            /* Held by a save in progress (here or in another process): keep. */
            if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == me && flock(fd, LOCK_EX | LOCK_NB) == 0 &&
                unlinkat(dfd, e->d_name, 0) == 0)
                removed++;
            close(fd);
        }
        closedir(d);
    }
    free(dir);
    return removed;
}

/* ----- writing ----------------------------------------------------------------------- */

/* Copies from's bytes (from its start) over to's (from its start) and cuts to
 * where they end. Returns 0 or an errno. */
static int copy_contents(int from, int to, char *scratch, size_t cap)
{
    if (lseek(from, 0, SEEK_SET) < 0 || lseek(to, 0, SEEK_SET) < 0)
        return errno;
    off_t total = 0;
    for (;;) {
        ssize_t n = read(from, scratch, cap);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        if (n == 0)
            break;
        int rc = write_all(to, scratch, (size_t)n);
        if (rc != 0)
            return rc;
        total += n;
    }
    return ftruncate(to, total) != 0 ? errno : 0;
}

/* A file with several hard links is one file under several names: replacing
 * it by rename would leave the other names with the old text. It is written
 * in place instead, as editors do, after a copy of its contents is safe on
 * disk: if the write fails, the copy is put back (and the failure reported);
 * if even that fails, the copy is kept and its name is in the message. */
static int write_in_place(const char *path, const char *target, document_write_next next, void *ctx, doc_write *how,
                          out_file *out, ecp_error *err)
{
    int rc = 0, fd = -1, bfd = -1;
    char *backup = NULL;
    bool keep_backup = false;
    fd = open(target, O_RDWR | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        rc = save_failure(err, errno, "cannot open the file", path);
        goto done;
    }
    int errnum = temp_create(target, "backup-", 0600, &backup, &bfd);
    if (errnum != 0) {
        rc = save_failure(err, errnum, "cannot create a file in its directory", path);
        goto done;
    }
    if ((errnum = copy_contents(fd, bfd, out->buf, out->cap)) != 0 || (fsync(bfd) != 0 && (errnum = errno))) {
        rc = save_failure(err, errnum, "cannot keep a copy of the file", path);
        goto done;
    }
    out->fd = fd;
    if (lseek(fd, 0, SEEK_SET) < 0)
        errnum = errno;
    else
        errnum = out_stream(out, next, ctx, how);
    if (errnum == 0 && ftruncate(fd, (off_t)out->total) != 0)
        errnum = errno;
    if (errnum == 0 && fsync(fd) != 0)
        errnum = errno;
    if (errnum != 0) {
        int restored = copy_contents(bfd, fd, out->buf, out->cap);
        if (restored == 0 && fsync(fd) != 0)
            restored = errno;
        struct stat back;
        if (restored == 0) {
            rc = save_failure(err, errnum, "write failed", path);
            /* The same contents, but not the same modification time. */
            if (fstat(fd, &back) == 0) {
                document__disk_from_stat(&back, &how->written);
                how->put_back = true;
            }
        } else {
            keep_backup = true;
            rc = ecp_error_set(err, ecp_status_from_errno(errnum),
                               "Failed to save %s: write failed: %s; its previous contents are in %s", path,
                               strerror(errnum), backup);
        }
        goto done;
    }
    struct stat st;
    if (fstat(fd, &st) == 0)
        document__disk_from_stat(&st, &how->written);
done:
    if (bfd >= 0)
        close(bfd);
    if (backup && !keep_backup)
        unlink(backup);
    free(backup);
    if (fd >= 0)
        close(fd);
    return rc;
}

int document__write_stream_as(const char *path, document_write_next next, void *ctx, doc_write *how, ecp_error *err)
{
    int rc = 0, fd = -1;
    char *target = NULL, *tmp = NULL;
    bool tmp_made = false;
    out_file out = {.fd = -1};
    memset(&how->written, 0, sizeof how->written);
    how->put_back = false;

    struct stat lst, st;
    bool exists = false;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode))
        target = realpath(path, NULL); /* NULL for a dangling link: the link is replaced */
    if (!target)
        target = xstrdup(path);
    if (stat(target, &st) == 0)
        exists = true;
    else if (errno != ENOENT && errno != ENOTDIR) { /* those two: creating the file tells why */
        rc = save_failure(err, errno, "cannot inspect the file", path);
        goto done;
    }
    /* Someone else changed the file since we read or wrote it: writing now
     * would lose their change. A file that is gone is simply written again. */
    if (how->expect && exists) {
        doc_disk now;
        document__disk_from_stat(&st, &now);
        if (!document__disk_same(&now, how->expect)) {
            rc = ecp_error_set(err, ECP_ECONFLICT, "File changed on disk");
            goto done;
        }
    }
    /* As file_write: a FIFO, a socket or a device is not replaced by a
     * regular file (and never opened, which could block). */
    if (exists && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        rc = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", path);
        goto done;
    }
    document__sweep_temps(target);

    out.cap = WRITE_BUFFER;
    out.buf = malloc(out.cap);
    if (!out.buf) {
        rc = ecp_error_set(err, ECP_ENOMEM, "Failed to save %s: not enough memory", path);
        goto done;
    }
    if (exists && S_ISREG(st.st_mode) && st.st_nlink > 1) {
        rc = write_in_place(path, target, next, ctx, how, &out, err);
        goto done;
    }

    int errnum = temp_create(target, "", exists ? 0600 : 0666, &tmp, &fd);
    if (errnum != 0) {
        rc = save_failure(err, errnum, errnum == EEXIST ? "cannot create a temporary file"
                                                        : "cannot create a file in its directory",
                          path);
        goto done;
    }
    tmp_made = true;
    if (exists) {
        if (fchmod(fd, st.st_mode & 07777) != 0) {
            rc = save_failure(err, errno, "cannot keep the file mode", path);
            goto done;
        }
        /* Keeping the owner needs privileges we may lack; the mode matters more. */
        if (fchown(fd, st.st_uid, st.st_gid) != 0 && errno != EPERM) {
            rc = save_failure(err, errno, "cannot keep the file owner", path);
            goto done;
        }
    }
    out.fd = fd;
    if ((errnum = out_stream(&out, next, ctx, how)) != 0) {
        rc = save_failure(err, errnum, "write failed", path);
        goto done;
    }
    if (fsync(fd) != 0) {
        rc = save_failure(err, errno, "fsync failed", path);
        goto done;
    }
    /* Renamed while still locked, so that no sweep can take it first; its
     * bytes are on disk (fsync), so closing it afterwards cannot lose them. */
    if (rename(tmp, target) != 0) {
        rc = save_failure(err, errno, "cannot replace the file", path);
        goto done;
    }
    tmp_made = false;
    /* Looked at after the rename, which sets the change time: what the
     * document remembers is then the file as it stands, not its own save
     * mistaken for someone else's change. */
    struct stat written;
    if (fstat(fd, &written) == 0)
        document__disk_from_stat(&written, &how->written);
    /* The rename is durable only once the directory entry is. */
    char *dir;
    const char *base;
    split_path(target, &dir, &base);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    free(dir);
    if (dfd >= 0) {
        /* The new file is in place either way; a file system that cannot sync
         * a directory gives nothing better to report. */
        (void)fsync(dfd);
        close(dfd);
    }
done:
    free(out.buf);
    if (tmp_made)
        unlink(tmp);
    if (fd >= 0)
        close(fd);
    free(tmp);
    free(target);
    return rc;
}

int document__write_stream(const char *path, document_write_next next, void *ctx, bool crlf, ecp_error *err)
{
    doc_write how = {.crlf = crlf};
    return document__write_stream_as(path, next, ctx, &how, err);
}

typedef struct whole {
    const char *data;
    size_t len;
    bool given;
} whole;

static bool next_whole(void *ctx, const char **chunk, size_t *len)
{
    whole *w = ctx;
    if (w->given || w->len == 0)
        return false;
    w->given = true;
    *chunk = w->data;
    *len = w->len;
    return true;
}

int document__write_file(const char *path, const char *data, size_t len, ecp_error *err)
{
    whole w = {data, len, false};
    return document__write_stream(path, next_whole, &w, false, err);
}
