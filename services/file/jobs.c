/* jobs: the single operations as jobs of the service.
 *
 * Each operation copies its inputs into a one-item job of the short lane,
 * runs the blocking call of local.c on a pool thread, and hands the outcome
 * to its callback on the loop. One payload serves them all; each operation
 * has its own work, its own done and its own kind, so adding one touches
 * only its own lines. A cancelled operation that has not begun does not
 * begin (core/job.h), unless it must run to its end; once begun, nothing
 * looks at the flag again, so no change to the disk stops half-way.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "utf.h"

typedef struct op_job {
    file__walk head; /* items: 1, which file_job_start reads */
    char *path, *path2;
    char *content;
    size_t content_len;
    size_t max_size;
    bool check_utf8, recursive;
    int change; /* a change_kind, for the changes below */
    file_write_options write_options;
    union {
        file_read_cb read;
        file_write_cb write;
        file_stat_cb stat;
        file_read_dir_cb read_dir;
        file_done_cb done;
    } cb;
    void *ctx;
    void (*format_read)(void *fctx, const file_read_result *r, buf *out);
    void *fctx;
    /* outcomes */
    file_read_result read;
    char *data;
    buf rendered;
    ecp_shared *shared; /* rendered, handed to the loop */
    file_write_result written;
    file_info info;
    file_dir_entry *entries;
    size_t count;
} op_job;

static void op_release(void *payload)
{
    op_job *j = payload;
    free_each(j->path, j->path2, j->content, j->data);
    buf_free(&j->rendered);
    ecp_shared_unref(j->shared);
    if (j->entries)
        file_dir_entries_free(j->entries, j->count);
}

/* The job, not started, owning j's copies. */
static ecp_job *op_new(file_service *svc, const ecp_job_kind *kind, op_job *j)
{
    j->head.items = 1;
    return ecp_job_prepare(svc->jobs, kind, j, sizeof *j);
}

void file_job_start(ecp_job *job) { file_walk_start(job); }

/* ----- read ----------------------------------------------------------------------- */

static int read_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    op_job *j = payload;
    size_t len = 0;
    int status = file_read(j->path, j->max_size, &j->data, &len, &j->read.info, err);
    if (status == 0) {
        j->read.data = j->data;
        j->read.len = len;
        j->read.invalid_utf8 = j->check_utf8 && !utf8_is_valid(j->data, len);
        if (j->format_read)
            j->format_read(j->fctx, &j->read, &j->rendered);
    }
    return status;
}

static void read_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    if (status == 0 && j->format_read) {
        size_t len = j->rendered.len;
        j->shared = ecp_shared_adopt(buf_detach(&j->rendered), len);
        j->read.rendered = j->shared;
    }
    j->cb.read(j->ctx, status, err, status ? NULL : &j->read);
}

/* Reads change nothing, and nobody is left to read the answer. */
static const ecp_job_kind read_kind =
    ECP_JOB_KIND("file.read", ECP_LANE_SHORT, false, read_work, read_done, op_release);

ecp_job *file_read_prepare(file_service *self, const file_read_args *args, file_read_cb cb, void *ctx)
{
    op_job j = {.path = xstrdup(args->path), .max_size = args->max_size, .check_utf8 = args->check_utf8,
                .format_read = args->format, .fctx = args->fctx, .cb.read = cb, .ctx = ctx};
    return op_new(self, &read_kind, &j);
}

/* ----- write ---------------------------------------------------------------------- */

static int write_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    op_job *j = payload;
    j->written.bytes_written = j->content_len;
    return file_write(j->path, j->content, j->content_len, &j->write_options, &j->written.mod_time, err);
}

static void write_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    j->cb.write(j->ctx, status, err, status ? NULL : &j->written);
}

/* The bytes of a write exist nowhere else: a save sent just before the
 * client quit (or cancelled, with the answer no longer wanted) must land.
 * It replaces the file atomically, so running it late harms nothing. */
static const ecp_job_kind write_kind =
    ECP_JOB_KIND("file.write", ECP_LANE_SHORT, true, write_work, write_done, op_release);

ecp_job *file_write_prepare(file_service *self, const file_write_args *args, file_write_cb cb, void *ctx)
{
    op_job j = {.path = xstrdup(args->path), .content = xmalloc(args->len + 1), .content_len = args->len,
                .write_options = args->options, .cb.write = cb, .ctx = ctx};
    memcpy(j.content, args->data, args->len);
    j.content[args->len] = '\0';
    return op_new(self, &write_kind, &j);
}

/* ----- stat ----------------------------------------------------------------------- */

static int stat_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    op_job *j = payload;
    return file_stat(j->path, &j->info, err);
}

static void stat_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    j->cb.stat(j->ctx, status, err, status ? NULL : &j->info);
}

static const ecp_job_kind stat_kind =
    ECP_JOB_KIND("file.stat", ECP_LANE_SHORT, false, stat_work, stat_done, op_release);

ecp_job *file_stat_prepare(file_service *self, const char *path, file_stat_cb cb, void *ctx)
{
    return op_new(self, &stat_kind, &(op_job){.path = xstrdup(path), .cb.stat = cb, .ctx = ctx});
}

/* ----- read a directory ------------------------------------------------------------ */

static int read_dir_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    op_job *j = payload;
    return file_read_dir(j->path, &j->entries, &j->count, err);
}

static void read_dir_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    file_read_dir_result r = {j->entries, j->count};
    j->cb.read_dir(j->ctx, status, err, status ? NULL : &r);
}

static const ecp_job_kind read_dir_kind =
    ECP_JOB_KIND("file.readDir", ECP_LANE_SHORT, false, read_dir_work, read_dir_done, op_release);

ecp_job *file_read_dir_prepare(file_service *self, const char *path, file_read_dir_cb cb, void *ctx)
{
    return op_new(self, &read_dir_kind, &(op_job){.path = xstrdup(path), .cb.read_dir = cb, .ctx = ctx});
}

/* ----- changes that return only their outcome ----------------------------------------
 * They lose nothing by not beginning (the old path, the source, the parent
 * still hold everything) and the caller is told they were cancelled; a
 * deletion or a copy of a big tree run behind a client that has gone would
 * surprise it, and would hold up the shutdown. Each is one call of local.c. */

typedef enum change_kind {
    CHANGE_DELETE,
    CHANGE_RENAME,
    CHANGE_COPY,
    CHANGE_CREATE_DIR,
    CHANGE_DELETE_DIR,
} change_kind;

static int change(change_kind kind, const op_job *j, ecp_error *err)
{
    switch (kind) {
    case CHANGE_DELETE: return file_delete(j->path, err);
    case CHANGE_RENAME: return file_rename(j->path, j->path2, err);
    case CHANGE_COPY: return file_copy(j->path, j->path2, err);
    case CHANGE_CREATE_DIR: return file_create_dir(j->path, j->recursive, err);
    case CHANGE_DELETE_DIR: return file_delete_dir(j->path, j->recursive, err);
    }
    return ecp_error_set(err, ECP_EINVAL, "unknown change");
}

static int change_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    return change(((op_job *)payload)->change, payload, err);
}

static void change_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    j->cb.done(j->ctx, status, err);
}

static const ecp_job_kind change_kinds[] = {
    [CHANGE_DELETE] = ECP_JOB_KIND("file.delete", ECP_LANE_SHORT, false, change_work, change_done, op_release),
    [CHANGE_RENAME] = ECP_JOB_KIND("file.rename", ECP_LANE_SHORT, false, change_work, change_done, op_release),
    [CHANGE_COPY] = ECP_JOB_KIND("file.copy", ECP_LANE_SHORT, false, change_work, change_done, op_release),
    [CHANGE_CREATE_DIR] = ECP_JOB_KIND("file.createDir", ECP_LANE_SHORT, false, change_work, change_done, op_release),
    [CHANGE_DELETE_DIR] = ECP_JOB_KIND("file.deleteDir", ECP_LANE_SHORT, false, change_work, change_done, op_release),
};

static ecp_job *change_new(file_service *svc, change_kind kind, op_job j)
{
    j.change = kind;
    return op_new(svc, &change_kinds[kind], &j);
}

ecp_job *file_delete_prepare(file_service *self, const char *path, file_done_cb cb, void *ctx)
{
    return change_new(self, CHANGE_DELETE, (op_job){.path = xstrdup(path), .cb.done = cb, .ctx = ctx});
}

ecp_job *file_rename_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx)
{
    return change_new(self, CHANGE_RENAME,
                      (op_job){.path = xstrdup(from), .path2 = xstrdup(to), .cb.done = cb, .ctx = ctx});
}

ecp_job *file_copy_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx)
{
    return change_new(self, CHANGE_COPY,
                      (op_job){.path = xstrdup(from), .path2 = xstrdup(to), .cb.done = cb, .ctx = ctx});
}

ecp_job *file_create_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx)
{
    return change_new(self, CHANGE_CREATE_DIR,
                      (op_job){.path = xstrdup(path), .recursive = recursive, .cb.done = cb, .ctx = ctx});
}

ecp_job *file_delete_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx)
{
    return change_new(self, CHANGE_DELETE_DIR,
                      (op_job){.path = xstrdup(path), .recursive = recursive, .cb.done = cb, .ctx = ctx});
}
