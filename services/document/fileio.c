/* fileio: reading and atomically writing whole files.
 *
 * Both run on the pool's threads (reads of big files, every write), so they
 * touch nothing but their arguments and the file system; a write pulls its
 * bytes from its caller's source, which must be as safe to read there (a
 * snapshot is).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Whether the reader should give up: polled between chunks. */
typedef bool (*stop_fn)(const void *ctx);

static int read_file(const char *path, stop_fn stop, const void *stop_ctx, char **data_out, size_t *len_out,
                     bool *crlf_out, ecp_error *err)
{
    int rc = 0;
    char *data = NULL;
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
    data[w] = '\0';
    *data_out = data;
    *len_out = w;
    *crlf_out = crlf;
    data = NULL;
done:
    free(data);
    close(fd);
    return rc;
}

static bool flag_set(const void *ctx) { return atomic_load((atomic_bool *)ctx); }

int document__read_file(const char *path, atomic_bool *cancel, char **data, size_t *len, bool *crlf, ecp_error *err)
{
    return read_file(path, cancel ? flag_set : NULL, cancel, data, len, crlf, err);
}

static bool job_cancelled(const void *ctx) { return ecp_job_cancelled(ctx); }

int document__read_file_job(const char *path, const ecp_job *job, char **data, size_t *len, bool *crlf,
                            ecp_error *err)
{
    return read_file(path, job ? job_cancelled : NULL, job, data, len, crlf, err);
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
    if (len >= o->cap)
        return write_all(o->fd, p, len);
    memcpy(o->buf, p, len);
    o->used = len;
    return 0;
}

static int save_failure(ecp_error *err, int errnum, const char *what, const char *path)
{
    return ecp_error_set(err, ecp_status_from_errno(errnum), "Failed to save %s: %s: %s", path, what,
                         strerror(errnum));
}

int document__write_stream(const char *path, document_write_next next, void *ctx, bool crlf, ecp_error *err)
{
    int rc = 0, fd = -1;
    char *target = NULL, *tmp = NULL;
    bool tmp_made = false;
    out_file out = {.fd = -1};

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

    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) : 0;
    const char *base = slash ? slash + 1 : target;
    size_t tmp_cap = strlen(target) + 32;
    tmp = xmalloc(tmp_cap);
    for (int attempt = 0; attempt < 16 && fd < 0; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, 0) != sizeof r)
            r = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&r ^ (uint64_t)attempt;
        snprintf(tmp, tmp_cap, "%.*s/.%s.ecpd-%012llx", (int)dir_len, target, base,
                 (unsigned long long)(r & 0xFFFFFFFFFFFFull));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, exists ? 0600 : 0666);
        if (fd < 0 && errno != EEXIST) {
            rc = save_failure(err, errno, "cannot create a file in its directory", path);
            goto done;
        }
    }
    if (fd < 0) {
        rc = save_failure(err, EEXIST, "cannot create a temporary file", path);
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
    out.cap = WRITE_BUFFER;
    out.buf = malloc(out.cap);
    if (!out.buf) {
        rc = ecp_error_set(err, ECP_ENOMEM, "Failed to save %s: not enough memory", path);
        goto done;
    }
    const char *chunk;
    size_t n;
    int errnum = 0;
    while (errnum == 0 && next(ctx, &chunk, &n)) {
        if (!crlf) {
            errnum = out_put(&out, chunk, n);
            continue;
        }
        for (const char *end = chunk + n; errnum == 0 && chunk < end;) {
            const char *nl = memchr(chunk, '\n', (size_t)(end - chunk));
            errnum = out_put(&out, chunk, (size_t)((nl ? nl : end) - chunk));
            if (!nl || errnum != 0)
                break;
            errnum = out_put(&out, "\r\n", 2);
            chunk = nl + 1;
        }
    }
    if (errnum == 0)
        errnum = out_flush(&out);
    if (errnum != 0) {
        rc = save_failure(err, errnum, "write failed", path);
        goto done;
    }
    if (fsync(fd) != 0) {
        rc = save_failure(err, errno, "fsync failed", path);
        goto done;
    }
    int closing = fd;
    fd = -1;
    if (close(closing) != 0) {
        rc = save_failure(err, errno, "close failed", path);
        goto done;
    }
    if (rename(tmp, target) != 0) {
        rc = save_failure(err, errno, "cannot replace the file", path);
        goto done;
    }
    tmp_made = false;
    /* The rename is durable only once the directory entry is. */
    char *dir = dir_len ? xstrndup(target, dir_len) : xstrdup("/");
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
    if (fd >= 0)
        close(fd);
    if (tmp_made)
        unlink(tmp);
    free(tmp);
    free(target);
    return rc;
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
