/* jobs: the single operations as jobs of the service.
 *
 * Each operation copies its inputs into a job of the short lane, runs the
 * blocking call of local.c on a pool thread, and hands the outcome to its
 * callback on the loop. One job struct serves them all; each operation has
 * its own work, its own done and its own type, so adding one touches only
 * its own lines.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "utf.h"

typedef struct op_job {
    file__walk head; /* items: 1; status and err: the outcome */
    bool skipped;    /* cancelled before it began */
    char *path, *path2;
    char *content;
    size_t content_len;
    size_t max_size;
    bool check_utf8, recursive;
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

static void op_free(void *data)
{
    op_job *j = data;
    free(j->path);
    free(j->path2);
    free(j->content);
    free(j->data);
    buf_free(&j->rendered);
    ecp_shared_unref(j->shared);
    if (j->entries)
        file_dir_entries_free(j->entries, j->count);
    free(j);
}

/* Nothing has been read or changed yet: a cancelled operation need not
 * begin, unless it must run to its end anyway. Once begun, nothing looks at
 * the flag again, so no change to the disk stops half-way. */
static op_job *op_begin(ecp_job *job, bool runs_to_end)
{
    op_job *j = ecp_job_data(job);
    if (!runs_to_end && ecp_job_cancelled(job)) {
        j->skipped = true;
        return NULL;
    }
    return j;
}

/* The outcome done hands on: a skipped operation was cancelled. */
static op_job *op_outcome(ecp_job *job)
{
    op_job *j = ecp_job_data(job);
    if (j->skipped)
        j->head.status = ecp_error_set(&j->head.err, ECP_ECANCELED, "Request cancelled");
    return j;
}

static ecp_job *op_new(file_service *svc, const ecp_job_type *type, const char *path, void *ctx)
{
    op_job *j = xcalloc(1, sizeof *j);
    j->head.items = 1;
    j->path = xstrdup(path);
    j->ctx = ctx;
    return ecp_job_new(svc->jobs, type, j);
}

void file_job_start(ecp_job *job) { file_walk_start(job); }

/* ----- read ----------------------------------------------------------------------- */

static void read_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (!j)
        return;
    size_t len = 0;
    j->head.status = file_read(j->path, j->max_size, &j->data, &len, &j->read.info, &j->head.err);
    if (j->head.status == 0) {
        j->read.data = j->data;
        j->read.len = len;
        j->read.invalid_utf8 = j->check_utf8 && !utf8_is_valid(j->data, len);
        if (j->format_read)
            j->format_read(j->fctx, &j->read, &j->rendered);
    }
}

static void read_done(ecp_job *job)
{
    op_job *j = op_outcome(job);
    if (j->head.status == 0 && j->format_read) {
        size_t len = j->rendered.len;
        j->shared = ecp_shared_adopt(buf_detach(&j->rendered), len);
        j->read.rendered = j->shared;
    }
    j->cb.read(j->ctx, j->head.status, &j->head.err, j->head.status ? NULL : &j->read);
}

/* Reads change nothing, and nobody is left to read the answer. */
static const ecp_job_type read_type = {"file.read", ECP_LANE_SHORT, false, read_work, read_done, op_free};

ecp_job *file_read_prepare(file_service *self, const file_read_args *args, file_read_cb cb, void *ctx)
{
    ecp_job *job = op_new(self, &read_type, args->path, ctx);
    op_job *j = ecp_job_data(job);
    j->max_size = args->max_size;
    j->check_utf8 = args->check_utf8;
    j->format_read = args->format;
    j->fctx = args->fctx;
    j->cb.read = cb;
    return job;
}

/* ----- write ---------------------------------------------------------------------- */

static void write_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, true);
    j->head.status =
        file_write(j->path, j->content, j->content_len, &j->write_options, &j->written.mod_time, &j->head.err);
    j->written.bytes_written = j->content_len;
}

static void write_done(ecp_job *job)
{
    op_job *j = op_outcome(job);
    j->cb.write(j->ctx, j->head.status, &j->head.err, j->head.status ? NULL : &j->written);
}

/* The bytes of a write exist nowhere else: a save sent just before the
 * client quit (or cancelled, with the answer no longer wanted) must land.
 * It replaces the file atomically, so running it late harms nothing. */
static const ecp_job_type write_type = {"file.write", ECP_LANE_SHORT, true, write_work, write_done, op_free};

ecp_job *file_write_prepare(file_service *self, const file_write_args *args, file_write_cb cb, void *ctx)
{
    ecp_job *job = op_new(self, &write_type, args->path, ctx);
    op_job *j = ecp_job_data(job);
    j->content = xmalloc(args->len + 1);
    memcpy(j->content, args->data, args->len);
    j->content[args->len] = '\0';
    j->content_len = args->len;
    j->write_options = args->options;
    j->cb.write = cb;
    return job;
}

/* ----- stat ----------------------------------------------------------------------- */

static void stat_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_stat(j->path, &j->info, &j->head.err);
}

static void stat_done(ecp_job *job)
{
    op_job *j = op_outcome(job);
    j->cb.stat(j->ctx, j->head.status, &j->head.err, j->head.status ? NULL : &j->info);
}

static const ecp_job_type stat_type = {"file.stat", ECP_LANE_SHORT, false, stat_work, stat_done, op_free};

ecp_job *file_stat_prepare(file_service *self, const char *path, file_stat_cb cb, void *ctx)
{
    ecp_job *job = op_new(self, &stat_type, path, ctx);
    ((op_job *)ecp_job_data(job))->cb.stat = cb;
    return job;
}

/* ----- read a directory ------------------------------------------------------------ */

static void read_dir_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_read_dir(j->path, &j->entries, &j->count, &j->head.err);
}

static void read_dir_done(ecp_job *job)
{
    op_job *j = op_outcome(job);
    file_read_dir_result r = {j->entries, j->count};
    j->cb.read_dir(j->ctx, j->head.status, &j->head.err, j->head.status ? NULL : &r);
}

static const ecp_job_type read_dir_type = {"file.readDir", ECP_LANE_SHORT, false, read_dir_work, read_dir_done,
                                           op_free};

ecp_job *file_read_dir_prepare(file_service *self, const char *path, file_read_dir_cb cb, void *ctx)
{
    ecp_job *job = op_new(self, &read_dir_type, path, ctx);
    ((op_job *)ecp_job_data(job))->cb.read_dir = cb;
    return job;
}

/* ----- changes that return only their outcome ----------------------------------------
 * They lose nothing by not beginning (the old path, the source, the parent
 * still hold everything) and the caller is told they were cancelled; a
 * deletion or a copy of a big tree run behind a client that has gone would
 * surprise it, and would hold up the shutdown. */

static void change_done(ecp_job *job)
{
    op_job *j = op_outcome(job);
    j->cb.done(j->ctx, j->head.status, &j->head.err);
}

static ecp_job *change_new(file_service *svc, const ecp_job_type *type, const char *path, file_done_cb cb,
                           void *ctx)
{
    ecp_job *job = op_new(svc, type, path, ctx);
    ((op_job *)ecp_job_data(job))->cb.done = cb;
    return job;
}

static void delete_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_delete(j->path, &j->head.err);
}

static const ecp_job_type delete_type = {"file.delete", ECP_LANE_SHORT, false, delete_work, change_done, op_free};

ecp_job *file_delete_prepare(file_service *self, const char *path, file_done_cb cb, void *ctx)
{
    return change_new(self, &delete_type, path, cb, ctx);
}

static void rename_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_rename(j->path, j->path2, &j->head.err);
}

static const ecp_job_type rename_type = {"file.rename", ECP_LANE_SHORT, false, rename_work, change_done, op_free};

ecp_job *file_rename_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx)
{
    ecp_job *job = change_new(self, &rename_type, from, cb, ctx);
    ((op_job *)ecp_job_data(job))->path2 = xstrdup(to);
    return job;
}

static void copy_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_copy(j->path, j->path2, &j->head.err);
}

static const ecp_job_type copy_type = {"file.copy", ECP_LANE_SHORT, false, copy_work, change_done, op_free};

ecp_job *file_copy_prepare(file_service *self, const char *from, const char *to, file_done_cb cb, void *ctx)
{
    ecp_job *job = change_new(self, &copy_type, from, cb, ctx);
    ((op_job *)ecp_job_data(job))->path2 = xstrdup(to);
    return job;
}

static void create_dir_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_create_dir(j->path, j->recursive, &j->head.err);
}

static const ecp_job_type create_dir_type = {"file.createDir", ECP_LANE_SHORT, false, create_dir_work, change_done,
                                             op_free};

ecp_job *file_create_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx)
{
    ecp_job *job = change_new(self, &create_dir_type, path, cb, ctx);
    ((op_job *)ecp_job_data(job))->recursive = recursive;
    return job;
}

static void delete_dir_work(ecp_job *job, unsigned item)
{
    (void)item;
    op_job *j = op_begin(job, false);
    if (j)
        j->head.status = file_delete_dir(j->path, j->recursive, &j->head.err);
}

static const ecp_job_type delete_dir_type = {"file.deleteDir", ECP_LANE_SHORT, false, delete_dir_work, change_done,
                                             op_free};

ecp_job *file_delete_dir_prepare(file_service *self, const char *path, bool recursive, file_done_cb cb, void *ctx)
{
    ecp_job *job = change_new(self, &delete_dir_type, path, cb, ctx);
    ((op_job *)ecp_job_data(job))->recursive = recursive;
    return job;
}
