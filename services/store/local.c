/* local: the store: opening and migrating the database, the fallback to
 * memory, and the one thread that runs every operation in order.
 *
 * Why a thread of its own rather than jobs on the pool: the operations must
 * run strictly one after another in submission order (a read must see the
 * writes before it, two settings writes must land in the order they were
 * made), a SQLite connection is best used from one thread, and teardown must
 * be able to wait for the queue to drain while the services that submitted
 * it still exist. One thread with a queue gives all three directly.
 *
 * Completions travel back to the loop through a uv_async_t that is referenced
 * only while something is pending, so an idle store never keeps a loop alive.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "internal.h"

typedef struct store_op {
    const store_op_type *type;
    void *data;
    int status;
    ecp_error err;
    struct store_op *next;
} store_op;

typedef struct op_list {
    store_op *head, *tail;
} op_list;

struct store {
    uv_loop_t *loop;
    ecp_logger *log;
    char *path;
    bool persistent;
    int schema_version;
    sqlite3 *db;
    int busy_ms;

    uv_thread_t thread;
    uv_mutex_t lock;
    uv_cond_t wake;  /* the thread: work arrived or stop */
    uv_cond_t idle;  /* store_flush: the queue emptied */
    op_list queue;   /* submitted, not run (under lock) */
    op_list ran;     /* run, completion pending (under lock) */
    bool busy;       /* the thread is running an op (under lock) */
    bool stopping;   /* (under lock) */

    uv_async_t async;
    size_t pending;  /* loop thread: submitted, completion not run */
    bool delivering; /* loop thread: inside deliver() */
};

static void list_push(op_list *l, store_op *op)
{
    op->next = NULL;
    if (l->tail)
        l->tail->next = op;
    else
        l->head = op;
    l->tail = op;
}

static store_op *list_take_all(op_list *l)
{
    store_op *all = l->head;
    l->head = l->tail = NULL;
    return all;
}

int store_harden_connection(sqlite3 *db)
{
    static const struct {
        int option, value;
    } settings[] = {
        {SQLITE_DBCONFIG_DEFENSIVE, 1},
        {SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER, 0},
        {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
        {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0},
    };
    for (size_t i = 0; i < sizeof settings / sizeof settings[0]; i++) {
        int now = -1;
        int rc = sqlite3_db_config(db, settings[i].option, settings[i].value, &now);
        if (rc != SQLITE_OK)
            return rc;
        if (now != settings[i].value)
            return SQLITE_MISUSE; /* the library ignored it: refuse to run unprotected */
    }
    return SQLITE_OK;
}

/* ----- helpers for work functions --------------------------------------------------- */

int store_error(sqlite3 *db, int rc, ecp_error *err, const char *what)
{
    int status;
    switch (rc & 0xff) {
    case SQLITE_FULL: status = ECP_ETOOBIG; break;
    case SQLITE_READONLY:
    case SQLITE_PERM: status = ECP_EREADONLY; break;
    case SQLITE_CANTOPEN: status = ECP_EACCES; break;
    case SQLITE_NOMEM: status = ECP_ENOMEM; break;
    case SQLITE_CONSTRAINT:
    case SQLITE_MISMATCH: status = ECP_EINVAL; break;
    case SQLITE_NOTFOUND: status = ECP_ENOTFOUND; break;
    default: status = ECP_EIO; break;
    }
    const char *reason = db && sqlite3_errcode(db) == rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    return ecp_error_set(err, status, "%s: %s", what, reason);
}

int store_exec(sqlite3 *db, const char *sql, ecp_error *err)
{
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : store_error(db, rc, err, "database");
}

int store_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **out, ecp_error *err)
{
    int rc = sqlite3_prepare_v2(db, sql, -1, out, NULL);
    return rc == SQLITE_OK ? 0 : store_error(db, rc, err, "database");
}

/* ----- the thread ------------------------------------------------------------------------ */

static void run_op(store *self, store_op *op)
{
    const store_op_type *t = op->type;
    op->status = 0;
    if (t->transaction && (op->status = store_exec(self->db, "BEGIN IMMEDIATE", &op->err)) < 0)
        return;
    op->status = t->work(self->db, op->data, &op->err);
    if (!t->transaction)
        return;
    if (op->status == 0) {
        int rc = sqlite3_exec(self->db, "COMMIT", NULL, NULL, NULL);
        if (rc != SQLITE_OK)
            op->status = store_error(self->db, rc, &op->err, "commit");
    }
    if (op->status != 0 && !sqlite3_get_autocommit(self->db))
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Deleted rows leave their pages free inside the file, and a hot-exit row is
 * a whole document's text: without this, the file keeps the size of the
 * largest unsaved text it ever held. When the queue runs dry and more than
 * this many pages are free, they go back to the file system. */
#define STORE_FREE_PAGES_KEPT 256

static int pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st;
    int value = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_step(st) == SQLITE_ROW)
        value = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    return value;
}

/* On the store's thread, between ops. A file made before incremental vacuum
 * was turned on is rewritten once (VACUUM) to turn it on. Nothing here waits
 * for another server: a checkpoint or VACUUM that would is left for a later
 * idle moment. */
static void give_back_free_pages(store *self)
{
    if (!self->persistent || pragma_int(self->db, "PRAGMA freelist_count") <= STORE_FREE_PAGES_KEPT)
        return;
    sqlite3_busy_timeout(self->db, 0);
    if (pragma_int(self->db, "PRAGMA auto_vacuum") != 2) {
        sqlite3_exec(self->db, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
        sqlite3_exec(self->db, "VACUUM", NULL, NULL, NULL);
    } else {
        sqlite3_exec(self->db, "PRAGMA incremental_vacuum", NULL, NULL, NULL);
    }
    /* The freed pages leave the main file only when the WAL is copied back;
     * TRUNCATE also empties the WAL, which a big row had grown. */
    sqlite3_wal_checkpoint_v2(self->db, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    sqlite3_busy_timeout(self->db, self->busy_ms);
}

static void thread_main(void *arg)
{
    store *self = arg;
    uv_mutex_lock(&self->lock);
    for (;;) {
        while (!self->queue.head && !self->stopping)
            uv_cond_wait(&self->wake, &self->lock);
        store_op *op = self->queue.head;
        if (!op)
            break; /* stopping, and nothing left */
        self->queue.head = op->next;
        if (!self->queue.head)
            self->queue.tail = NULL;
        self->busy = true;
        uv_mutex_unlock(&self->lock);

        run_op(self, op);
        if (op->status != 0)
            ecp_log(self->log, ECP_LOG_ERROR, "store: %s failed: %s", op->type->name, op->err.message);

        uv_mutex_lock(&self->lock);
        if (!self->queue.head) {
            uv_mutex_unlock(&self->lock);
            give_back_free_pages(self);
            uv_mutex_lock(&self->lock);
        }
        self->busy = false;
        list_push(&self->ran, op);
        if (!self->queue.head)
            uv_cond_broadcast(&self->idle);
        uv_async_send(&self->async);
    }
    uv_mutex_unlock(&self->lock);
}

/* ----- completions on the loop ----------------------------------------------------------- */

static void deliver(store *self)
{
    if (self->delivering)
        return; /* a completion flushed: the outer call picks up what is new */
    self->delivering = true;
    for (;;) {
        uv_mutex_lock(&self->lock);
        store_op *op = list_take_all(&self->ran);
        uv_mutex_unlock(&self->lock);
        if (!op)
            break;
        while (op) {
            store_op *next = op->next;
            if (op->type->done)
                op->type->done(op->data, op->status, &op->err);
            if (op->type->free_data)
                op->type->free_data(op->data);
            else
                free(op->data);
            free(op);
            self->pending--;
            op = next;
        }
    }
    self->delivering = false;
    if (self->pending == 0 && !uv_is_closing((uv_handle_t *)&self->async))
        uv_unref((uv_handle_t *)&self->async);
}

static void on_async(uv_async_t *handle) { deliver(handle->data); }

void store_submit(store *self, const store_op_type *type, void *data)
{
    store_op *op = xcalloc(1, sizeof *op);
    op->type = type;
    op->data = data;
    if (self->pending++ == 0)
        uv_ref((uv_handle_t *)&self->async);
    uv_mutex_lock(&self->lock);
    list_push(&self->queue, op);
    uv_cond_signal(&self->wake);
    uv_mutex_unlock(&self->lock);
}

void store_flush(store *self)
{
    /* A completion may submit more work: flush until nothing is left. */
    while (self->pending) {
        uv_mutex_lock(&self->lock);
        while (self->queue.head || self->busy)
            uv_cond_wait(&self->idle, &self->lock);
        uv_mutex_unlock(&self->lock);
        size_t before = self->pending;
        deliver(self);
        if (self->delivering || self->pending == before)
            break; /* flushed from inside a completion: the outer delivery goes on */
    }
}

size_t store_pending(const store *self) { return self->pending; }

/* ----- opening ----------------------------------------------------------------------------- */

static int read_user_version(sqlite3 *db, int *out, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, "PRAGMA user_version", &st, err);
    if (status < 0)
        return status;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int(st, 0);
    else
        status = store_error(db, rc, err, "reading the schema version");
    sqlite3_finalize(st);
    return status;
}

/* Brings the schema up to date, one migration per transaction. Another server
 * may migrate at the same moment: each step re-reads the version under the
 * write lock and skips what is already done. */
static int migrate(sqlite3 *db, int *version, ecp_error *err)
{
    int status = 0;
    size_t target = store__migration_count();
    for (;;) {
        int v = 0;
        if ((status = read_user_version(db, &v, err)) < 0)
            return status;
        if (v < 0 || (size_t)v >= target) {
            *version = v;
            return 0;
        }
        if ((status = store_exec(db, "BEGIN IMMEDIATE", err)) < 0)
            return status;
        if ((status = read_user_version(db, &v, err)) < 0)
            goto rollback;
        if ((size_t)v < target) {
            char pragma[64];
            snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d", v + 1);
            if ((status = store_exec(db, store__migration((size_t)v), err)) < 0 ||
                (status = store_exec(db, pragma, err)) < 0)
                goto rollback;
        }
        if ((status = store_exec(db, "COMMIT", err)) < 0)
            goto rollback;
    }
rollback:
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return status;
}

static int configure(sqlite3 *db, int busy_ms, bool wal, ecp_error *err)
{
    int status;
    sqlite3_busy_timeout(db, busy_ms);
    sqlite3_extended_result_codes(db, 1);
    if ((status = store_exec(db, "PRAGMA foreign_keys = ON", err)) < 0)
        return status;
    if (!wal)
        return 0;
    /* Switching a new file to WAL takes an exclusive lock, and SQLite answers
     * SQLITE_BUSY at once instead of calling the busy handler while another
     * process does the same; without a retry, one of two servers started
     * together on a fresh data directory would fall back to memory. */
    sqlite3_stmt *st;
    if ((status = store_prepare(db, "PRAGMA journal_mode = WAL", &st, err)) < 0)
        return status;
    int rc;
    for (int waited_ms = 0; (rc = sqlite3_step(st)) == SQLITE_BUSY && waited_ms < busy_ms; waited_ms += 10) {
        sqlite3_reset(st);
        sqlite3_sleep(10);
    }
    if (rc != SQLITE_ROW)
        status = store_error(db, rc, err, "switching to WAL");
    else if (strcmp((const char *)sqlite3_column_text(st, 0), "wal") != 0)
        status = ecp_error_set(err, ECP_EIO, "the database refuses WAL mode (journal mode %s)",
                               (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (status < 0)
        return status;
    return store_exec(db, "PRAGMA synchronous = NORMAL", err);
}

/* ----- damage ------------------------------------------------------------------------------ */

/* Whether rc says the file's bytes are wrong, rather than that it is locked,
 * read-only, missing or on a full disk. */
static bool is_damage(int rc)
{
    return (rc & 0xff) == SQLITE_NOTADB || (rc & 0xff) == SQLITE_CORRUPT;
}

static uint32_t get_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* SQLite's WAL checksum: pairs of 32-bit words, big- or little-endian as the
 * WAL's magic number says, folded into (s[0], s[1]). */
static void wal_checksum(bool big_endian, const unsigned char *p, size_t len, uint32_t s[2])
{
    for (size_t i = 0; i + 8 <= len; i += 8) {
        uint32_t a, b;
        if (big_endian) {
            a = get_be32(p + i);
            b = get_be32(p + i + 4);
        } else {
            a = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
            b = (uint32_t)p[i + 4] | (uint32_t)p[i + 5] << 8 | (uint32_t)p[i + 6] << 16 | (uint32_t)p[i + 7] << 24;
        }
        s[0] += a + s[1];
        s[1] += b + s[0];
    }
}

/* Whether <db>-wal holds committed transactions SQLite would silently skip.
 * SQLite reads a WAL up to the first frame whose checksum fails (each
 * frame's checksum continues the previous one's) and ignores the rest, so
 * garbage in a WAL loses what was committed after it, without an error. A
 * WAL whose header does not check out is damaged. Past the first failing
 * frame, a frame of the same generation (same salts) that checks out against
 * the checksum stored in the frame before it, and that commits a
 * transaction, is committed work SQLite would drop: damaged. What a kill
 * leaves is told apart from that: a torn last frame, the frames of a
 * transaction that never committed (partly overwritten by the next writer,
 * which starts again after the last commit), and frames of an older
 * generation (other salts) all commit nothing past the break. A WAL damaged
 * only in its last transaction cannot be told from a killed one.
 * Runs under the write lock, so no other server appends meanwhile. */
static bool wal_damaged(const char *db_path, char *why, size_t why_cap)
{
    buf path = BUF_INIT;
    buf_appendf(&path, "%s-wal", db_path);
    int fd = open(path.data, O_RDONLY | O_CLOEXEC);
    buf_free(&path);
    if (fd < 0)
        return false;
    bool damaged = false;
    struct stat st;
    unsigned char hdr[32];
    if (fstat(fd, &st) < 0 || st.st_size == 0)
        goto out;
    if (st.st_size < 32 || pread(fd, hdr, sizeof hdr, 0) != (ssize_t)sizeof hdr) {
        snprintf(why, why_cap, "its WAL is %lld bytes, shorter than a WAL header", (long long)st.st_size);
        damaged = true;
        goto out;
    }
    uint32_t magic = get_be32(hdr), page_size = get_be32(hdr + 8);
    bool big_endian = magic & 1;
    uint32_t seed[2] = {0, 0};
    wal_checksum(big_endian, hdr, 24, seed);
    if ((magic & ~1u) != 0x377f0682u || get_be32(hdr + 4) != 3007000u || page_size < 512 || page_size > 65536 ||
        (page_size & (page_size - 1)) != 0 || seed[0] != get_be32(hdr + 24) || seed[1] != get_be32(hdr + 28)) {
        snprintf(why, why_cap, "its WAL header is not a valid SQLite WAL header");
        damaged = true;
        goto out;
    }
    size_t frame_size = 24 + (size_t)page_size;
    unsigned char *frame = xmalloc(frame_size);
    long long broken_at = -1;
    for (off_t at = 32; at + (off_t)frame_size <= st.st_size; at += (off_t)frame_size) {
        if (pread(fd, frame, frame_size, at) != (ssize_t)frame_size)
            break;
        if (memcmp(frame + 8, hdr + 16, 8) != 0)
            break; /* a frame of an older generation: the WAL ends before it */
        long long index = (long long)((at - 32) / (off_t)frame_size);
        uint32_t sum[2] = {seed[0], seed[1]};
        wal_checksum(big_endian, frame, 8, sum);
        wal_checksum(big_endian, frame + 24, page_size, sum);
        bool valid = sum[0] == get_be32(frame + 16) && sum[1] == get_be32(frame + 20);
        if (!valid && broken_at < 0) {
            broken_at = index;
        } else if (valid && broken_at >= 0 && get_be32(frame + 4) != 0) {
            snprintf(why, why_cap,
                     "frame %lld of its WAL fails its checksum, and the transaction committed by frame %lld after "
                     "it would be lost",
                     broken_at, index);
            damaged = true;
            break;
        }
        seed[0] = get_be32(frame + 16);
        seed[1] = get_be32(frame + 20);
    }
    free(frame);
out:
    close(fd);
    return damaged;
}

static bool same_file_contents(const char *a, const char *b)
{
    int fa = open(a, O_RDONLY | O_CLOEXEC), fb = open(b, O_RDONLY | O_CLOEXEC);
    struct stat sa = {0}, sb = {0};
    if ((fa >= 0 && fstat(fa, &sa) < 0) || (fb >= 0 && fstat(fb, &sb) < 0))
        sa.st_size = -1;
    bool same = sa.st_size == 0 && sb.st_size == 0;
    if (fa >= 0 && fb >= 0 && sa.st_size == sb.st_size && sa.st_size > 0) {
        char x[16384], y[sizeof x];
        for (;;) {
            ssize_t n = read(fa, x, sizeof x);
            if (n <= 0 || read(fb, y, (size_t)n) != n || memcmp(x, y, (size_t)n) != 0) {
                same = n == 0;
                break;
            }
        }
    }
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return same;
}

static int copy_file(const char *from, const char *to)
{
    int in = open(from, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return errno == ENOENT ? 0 : -errno;
    struct stat st;
    if (fstat(in, &st) == 0 && st.st_size == 0) {
        close(in); /* an empty WAL holds nothing worth a copy */
        return 0;
    }
    int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    int status = out < 0 ? -errno : 0;
    char chunk[65536];
    while (status == 0) {
        ssize_t n = read(in, chunk, sizeof chunk);
        if (n == 0)
            break;
        if (n < 0 || write(out, chunk, (size_t)n) != n)
            status = -(errno ? errno : EIO);
    }
    if (status == 0 && fsync(out) < 0)
        status = -errno;
    if (out >= 0)
        close(out);
    close(in);
    if (status < 0)
        unlink(to);
    return status;
}

/* Keeps the damaged database and its WAL beside them as
 * state.db.damaged-<UTC time> and ...-wal, for a person to look at or
 * repair, unless an identical copy is there already (every start on the same
 * damaged files would make another). The originals stay as they are. */
static void keep_damaged_copy(store *self, const char *why)
{
    buf wal = BUF_INIT, name = BUF_INIT, copy_wal = BUF_INIT;
    buf_appendf(&wal, "%s-wal", self->path);
    const char *slash = strrchr(self->path, '/');
    size_t dir_len = slash ? (size_t)(slash - self->path) : 0;
    const char *base = slash ? slash + 1 : self->path;
    buf prefix = BUF_INIT;
    buf_appendf(&prefix, "%s.damaged-", base);

    char *dir = xstrndup(self->path, dir_len ? dir_len : 1);
    if (!slash)
        dir[0] = '.';
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (strncmp(e->d_name, prefix.data, prefix.len) != 0 || (len > 4 && !strcmp(e->d_name + len - 4, "-wal")))
            continue;
        buf_clear(&name);
        buf_appendf(&name, "%s/%s", dir, e->d_name);
        buf_clear(&copy_wal);
        buf_appendf(&copy_wal, "%s-wal", name.data);
        if (same_file_contents(self->path, name.data) && same_file_contents(wal.data, copy_wal.data)) {
            ecp_log(self->log, ECP_LOG_ERROR, "store: %s is damaged (%s); a copy of it is kept as %s", self->path,
                    why, name.data);
            goto done;
        }
    }

    char stamp[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    for (int attempt = 0; attempt < 100; attempt++) {
        buf_clear(&name);
        buf_appendf(&name, "%s.damaged-%s", self->path, stamp);
        if (attempt)
            buf_appendf(&name, ".%d", attempt);
        buf_clear(&copy_wal);
        buf_appendf(&copy_wal, "%s-wal", name.data);
        int status = copy_file(self->path, name.data);
        if (status == -EEXIST)
            continue;
        if (status == 0 && (status = copy_file(wal.data, copy_wal.data)) < 0)
            unlink(name.data);
        if (status < 0)
            ecp_log(self->log, ECP_LOG_ERROR, "store: %s is damaged (%s); no copy of it could be kept: %s",
                    self->path, why, strerror(-status));
        else
            ecp_log(self->log, ECP_LOG_ERROR, "store: %s is damaged (%s); a copy of it is kept as %s", self->path,
                    why, name.data);
        break;
    }
done:
    if (d)
        closedir(d);
    free(dir);
    buf_free(&prefix);
    buf_free(&wal);
    buf_free(&name);
    buf_free(&copy_wal);
}

/* The first 16 bytes of every SQLite database. */
static bool has_sqlite_header(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return true; /* not ours to judge: opening reports it */
    char head[16];
    ssize_t n = read(fd, head, sizeof head);
    close(fd);
    return n <= 0 || (n == (ssize_t)sizeof head && memcmp(head, "SQLite format 3", 16) == 0);
}

/* PRAGMA quick_check: every page and record well formed, without the index
 * cross-checks of integrity_check (O(N) rather than O(N log N)). */
static int quick_check(sqlite3 *db, char *why, size_t why_cap, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, "PRAGMA quick_check(1)", &st, err);
    if (status < 0)
        return status;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *answer = (const char *)sqlite3_column_text(st, 0);
        if (!answer || strcmp(answer, "ok") != 0) {
            snprintf(why, why_cap, "quick_check: %s", answer ? answer : "no answer");
            status = ecp_error_set(err, ECP_EIO, "the database is damaged: %s", why);
        }
    } else {
        status = store_error(db, rc, err, "checking the database");
    }
    sqlite3_finalize(st);
    return status;
}

/* Opens the file and checks it before anything is written to it: a damaged
 * file or WAL sets *damaged (with the reason in why) and is never touched,
 * not even by the checkpoint SQLite makes when its last connection closes. */
static int open_file(store *self, int busy_ms, bool *damaged, char *why, size_t why_cap, ecp_error *err)
{
    /* Created here with 0600 so that SQLite's -wal and -shm files, which take
     * the database's mode, are private too: the store holds secrets. */
    int fd = open(self->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
        return ecp_error_errno(err, errno, self->path);
    close(fd);
    if (!has_sqlite_header(self->path)) {
        snprintf(why, why_cap, "its header is not a SQLite database header");
        *damaged = true;
        return ecp_error_set(err, ECP_EIO, "%s: %s", self->path, why);
    }
    int rc = sqlite3_open_v2(self->path, &self->db, SQLITE_OPEN_READWRITE, NULL);
    if (rc != SQLITE_OK)
        return store_error(self->db, rc, err, self->path);
    if ((rc = store_harden_connection(self->db)) != SQLITE_OK ||
        (rc = sqlite3_db_config(self->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, NULL)) != SQLITE_OK)
        return store_error(self->db, rc, err, "hardening the connection");
    int status = configure(self->db, busy_ms, true, err);
    /* Under the write lock, so that no other server appends to the WAL or
     * restarts it while it is judged; it also tells now, not at the first
     * save, that another process holds the lock for good. */
    if (status == 0 && (status = store_exec(self->db, "BEGIN IMMEDIATE", err)) == 0) {
        if (wal_damaged(self->path, why, why_cap))
            status = ecp_error_set(err, ECP_EIO, "%s: %s", self->path, why);
        else
            status = quick_check(self->db, why, why_cap, err);
        if (status < 0 && why[0])
            *damaged = true;
        sqlite3_exec(self->db, "ROLLBACK", NULL, NULL, NULL);
    }
    if (status < 0 && !*damaged && is_damage(sqlite3_extended_errcode(self->db))) {
        snprintf(why, why_cap, "%s", sqlite3_errmsg(self->db));
        *damaged = true;
    }
    /* After the damage checks, which must see the WAL as it was left: these
     * read the file. A new file gives freed pages back (give_back_free_pages);
     * on an existing one this does nothing until its first VACUUM. The WAL is
     * cut back to 4 MiB whenever it restarts, however big one row made it. */
    if (status == 0 && ((status = store_exec(self->db, "PRAGMA auto_vacuum = INCREMENTAL", err)) < 0 ||
                        (status = store_exec(self->db, "PRAGMA journal_size_limit = 4194304", err)) < 0) &&
        is_damage(sqlite3_extended_errcode(self->db))) {
        snprintf(why, why_cap, "%s", sqlite3_errmsg(self->db));
        *damaged = true;
    }
    if (status == 0)
        status = migrate(self->db, &self->schema_version, err);
    if (status == 0)
        sqlite3_db_config(self->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, NULL);
    return status;
}

/* Copies what can still be read of the file into the memory database. */
static bool copy_readable_file(store *self)
{
    sqlite3 *src = NULL;
    buf uri = BUF_INIT;
    buf_append_str(&uri, "file:");
    for (const char *p = self->path; *p; p++) {
        if (*p == '?' || *p == '#' || *p == '%')
            buf_appendf(&uri, "%%%02X", (unsigned char)*p);
        else
            buf_push(&uri, *p);
    }
    buf_append_str(&uri, "?mode=ro&immutable=1");
    bool ok = false;
    int rc = sqlite3_open_v2(uri.data, &src, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);
    if (rc == SQLITE_OK)
        rc = store_harden_connection(src);
    if (rc == SQLITE_OK && sqlite3_exec(src, "SELECT count(*) FROM sqlite_master", NULL, NULL, NULL) == SQLITE_OK) {
        sqlite3_backup *b = sqlite3_backup_init(self->db, "main", src, "main");
        if (b) {
            ok = sqlite3_backup_step(b, -1) == SQLITE_DONE;
            sqlite3_backup_finish(b);
        }
    }
    sqlite3_close(src);
    buf_free(&uri);
    return ok;
}

static int open_memory(store *self, bool copy_file, ecp_error *err)
{
    int rc = sqlite3_open_v2(":memory:", &self->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);
    if (rc == SQLITE_OK)
        rc = store_harden_connection(self->db);
    if (rc != SQLITE_OK)
        return store_error(self->db, rc, err, "memory database");
    if (copy_file && copy_readable_file(self))
        ecp_log(self->log, ECP_LOG_WARN, "store: what could be read of %s was copied into memory", self->path);
    int status = configure(self->db, 0, false, err);
    if (status == 0)
        status = migrate(self->db, &self->schema_version, err);
    if (status < 0 && copy_file) {
        /* the copy itself was unusable: start from nothing */
        sqlite3_close(self->db);
        self->db = NULL;
        return open_memory(self, false, err);
    }
    return status;
}

static void after_close(uv_handle_t *handle) { free(handle->data); }

store *store_open(uv_loop_t *loop, ecp_logger *log, const store_options *options, ecp_error *err)
{
    store *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->log = log;
    buf path = BUF_INIT;
    buf_appendf(&path, "%s/state.db", options->data_dir);
    self->path = buf_detach(&path);
    int busy_ms = options->busy_timeout_ms > 0 ? options->busy_timeout_ms : STORE_BUSY_TIMEOUT_MS;
    self->busy_ms = busy_ms;

    ecp_error why = {0};
    if (!options->memory_only) {
        bool damaged = false;
        char damage[256] = "";
        if (open_file(self, busy_ms, &damaged, damage, sizeof damage, &why) == 0) {
            self->persistent = true;
        } else {
            if (damaged)
                keep_damaged_copy(self, damage);
            ecp_log(log, ECP_LOG_ERROR, "store: cannot use %s: %s; settings, sessions and secrets are kept in memory "
                    "for this run and will not be saved", self->path, why.message);
            sqlite3_close(self->db);
            self->db = NULL;
        }
    }
    if (!self->persistent && open_memory(self, !options->memory_only, &why) < 0) {
        ecp_error_set(err, why.status, "store: %s", why.message);
        sqlite3_close(self->db);
        free(self->path);
        free(self);
        return NULL;
    }

    uv_mutex_init(&self->lock);
    uv_cond_init(&self->wake);
    uv_cond_init(&self->idle);
    uv_async_init(loop, &self->async, on_async);
    self->async.data = self;
    uv_unref((uv_handle_t *)&self->async);
    if (uv_thread_create(&self->thread, thread_main, self) != 0) {
        ecp_error_set(err, ECP_ENOMEM, "store: cannot start its thread");
        uv_close((uv_handle_t *)&self->async, after_close);
        uv_mutex_destroy(&self->lock);
        uv_cond_destroy(&self->wake);
        uv_cond_destroy(&self->idle);
        sqlite3_close(self->db);
        free(self->path);
        /* self is the async handle's memory: freed by its close callback */
        return NULL;
    }
    return self;
}

void store_close(store *self)
{
    if (!self)
        return;
    store_flush(self);
    uv_mutex_lock(&self->lock);
    self->stopping = true;
    uv_cond_signal(&self->wake);
    uv_mutex_unlock(&self->lock);
    uv_thread_join(&self->thread);
    if (sqlite3_close(self->db) != SQLITE_OK)
        ecp_log(self->log, ECP_LOG_ERROR, "store: closing %s: %s", self->path, sqlite3_errmsg(self->db));
    uv_mutex_destroy(&self->lock);
    uv_cond_destroy(&self->wake);
    uv_cond_destroy(&self->idle);
    free(self->path);
    self->path = NULL;
    uv_close((uv_handle_t *)&self->async, after_close);
}

bool store_persistent(const store *self) { return self->persistent; }
const char *store_path(const store *self) { return self->path; }
int store_schema_version(const store *self) { return self->schema_version; }
