/* journal: hot exit. The text of every dirty document goes to the store a
 * moment after it changes, so that a server killed at any point leaves it
 * behind for the next one.
 *
 * Each server that keeps text here is an instance, from its first row on: a
 * row in `instances` and a lock file <data-dir>/instances/<id>.lock that it
 * holds (flock) while it runs. The
 * kernel drops the lock when the process dies however it dies, so "is the
 * server that wrote this entry still running" is one non-blocking flock.
 * Journal rows belong to their instance; recovery offers the rows of
 * instances that are not running, on this workspace.
 *
 * Timing: the first edit after a write arms a timer; further edits push it
 * back by DEBOUNCE_MS but never past MAX_WAIT_MS after that first edit, so
 * continuous typing is still written at least every MAX_WAIT_MS and what was
 * typed more than a second before a kill is in the store. The loop only takes
 * a snapshot of the document (no copy of its text); the store's thread
 * streams the snapshot into the row, so a 100 MB document costs the loop
 * nothing. One write per document is in flight at a time: edits made while
 * it runs are written when it ends, so a large document is written as often
 * as the disk allows and no more.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "internal.h"
#include "map.h"

#define DEBOUNCE_MS 250
#define MAX_WAIT_MS 750
/* SQLite's largest value (SQLITE_MAX_LENGTH) is a little under this. */
#define JOURNAL_MAX_BYTES ((size_t)999 << 20)

struct journal_entry {
    session_service *svc;
    char *document_id;
    char *uri;          /* the uri its row is written under */
    char *language_id;
    uv_timer_t timer;
    bool armed;
    uint64_t first_pending; /* uv_now of the first edit not yet written */
    bool written;           /* a row exists (or is on its way) */
    bool writing;           /* a write is in the store's queue */
    bool too_big_logged;
    journal_entry *next;
};

/* ----- instances ---------------------------------------------------------------------------------- */

static void lock_path(buf *out, const char *data_dir, const char *id)
{
    buf_appendf(out, "%s/instances/%s.lock", data_dir, id);
}

/* Whether the instance `id` still runs: its lock file is locked. Any thread. */
static bool instance_alive(const char *data_dir, const char *id)
{
    buf path = BUF_INIT;
    lock_path(&path, data_dir, id);
    int fd = open(path.data, O_RDONLY | O_CLOEXEC);
    buf_free(&path);
    if (fd < 0)
        return false;
    bool alive = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
    close(fd); /* releases the probe's lock, if it took one */
    return alive;
}

typedef enum journal_action {
    JOURNAL_REGISTER,    /* our instance row; forget dead instances with nothing left */
    JOURNAL_PUT,
    JOURNAL_DELETE,      /* our row of uri */
    JOURNAL_LIST,        /* recoverable entries */
    JOURNAL_TAKE,        /* recoverable entries with their text */
    JOURNAL_DISCARD,     /* delete recoverable entries */
    JOURNAL_UNREGISTER,  /* clean exit: our instance row if nothing of ours is left */
} journal_action;

typedef struct found_entry {
    char *owner;
    char *uri;
    char *language_id;
    int64_t saved_at;
    int64_t bytes;
    char *content; /* JOURNAL_TAKE only */
} found_entry;

typedef struct journal_op {
    journal_action action;
    session_service *svc;
    char *data_dir;
    char *owner;
    char *workspace;
    char *uri;
    char *language_id;
    document_snapshot *text; /* JOURNAL_PUT: streamed into the row */
    char *document_id;       /* JOURNAL_PUT: whose write ends */
    int64_t now;
    char **uris; /* a filter: NULL for all */
    size_t uri_count;
    found_entry *found;
    size_t found_count;
    bool kept_instance; /* UNREGISTER: rows remain, the lock file stays */
    session_recoverable_cb list_cb;
    session_reopen_cb reopen_cb;
    session_status_cb status_cb;
    void *ctx;
} journal_op;

static bool wanted(const journal_op *op, const char *uri)
{
    if (!op->uris)
        return true;
    for (size_t i = 0; i < op->uri_count; i++)
        if (strcmp(op->uris[i], uri) == 0)
            return true;
    return false;
}

static char *dup_column(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? xstrdup(s) : NULL;
}

/* Recoverable rows on the workspace: not ours, of instances not running,
 * newest first, the newest one per uri. Only those are found, and only what
 * was found is ever adopted or deleted: an older copy of the same uri, left
 * by another server killed on the same workspace, is that server's text and
 * stays, offered once the newer one is settled. */
static int find_recoverable(sqlite3 *db, journal_op *op, bool with_text, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db,
                               "SELECT owner, uri, language_id, saved_at, length(content), content FROM journal "
                               "WHERE workspace = ?1 AND owner != ?2 ORDER BY saved_at DESC, uri",
                               &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->workspace, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, op->owner, -1, SQLITE_STATIC);
    int rc;
    size_t cap = 0;
    /* liveness per owner, asked once */
    char **alive = NULL, **dead = NULL;
    size_t alive_n = 0, dead_n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *owner = (const char *)sqlite3_column_text(st, 0);
        const char *uri = (const char *)sqlite3_column_text(st, 1);
        if (!owner || !uri || !wanted(op, uri))
            continue;
        bool is_alive = false, known = false;
        for (size_t i = 0; i < alive_n && !known; i++)
            if (strcmp(alive[i], owner) == 0)
                known = is_alive = true;
        for (size_t i = 0; i < dead_n && !known; i++)
            if (strcmp(dead[i], owner) == 0)
                known = true;
        if (!known) {
            is_alive = instance_alive(op->data_dir, owner);
            char ***list = is_alive ? &alive : &dead;
            size_t *n = is_alive ? &alive_n : &dead_n;
            *list = xrealloc(*list, (*n + 1) * sizeof **list);
            (*list)[(*n)++] = xstrdup(owner);
        }
        if (is_alive)
            continue;
        bool seen = false;
        for (size_t i = 0; i < op->found_count && !seen; i++)
            seen = strcmp(op->found[i].uri, uri) == 0;
        if (seen)
            continue;
        if (op->found_count == cap) {
            cap = cap ? cap * 2 : 8;
            op->found = xrealloc(op->found, cap * sizeof *op->found);
        }
        found_entry *f = &op->found[op->found_count++];
        memset(f, 0, sizeof *f);
        f->owner = xstrdup(owner);
        f->uri = xstrdup(uri);
        f->language_id = dup_column(st, 2);
        f->saved_at = sqlite3_column_int64(st, 3);
        f->bytes = sqlite3_column_int64(st, 4);
        if (with_text) {
            f->content = xmalloc((size_t)f->bytes + 1);
            memcpy(f->content, sqlite3_column_blob(st, 5), (size_t)f->bytes);
            f->content[f->bytes] = '\0';
        }
    }
    if (rc != SQLITE_DONE)
        status = store_error(db, rc, err, "reading the journal");
    sqlite3_finalize(st);
    for (size_t i = 0; i < alive_n; i++)
        free(alive[i]);
    for (size_t i = 0; i < dead_n; i++)
        free(dead[i]);
    free(alive);
    free(dead);
    return status;
}

static int delete_found(sqlite3 *db, journal_op *op, ecp_error *err)
{
    sqlite3_stmt *st;
    int status = store_prepare(db, "DELETE FROM journal WHERE owner = ?1 AND uri = ?2", &st, err);
    for (size_t i = 0; i < op->found_count && status == 0; i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, op->found[i].owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->found[i].uri, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
            status = store_error(db, rc, err, "clearing the journal");
    }
    sqlite3_finalize(st);
    return status;
}

/* The found rows, each the one handed back for its uri, become this
 * server's: kept under our name until the reopened document is journaled
 * over it, saved or closed. A server killed right after a recovery thus
 * leaves the text for the next one, and text whose document cannot be
 * reopened is offered again once we are gone. */
static int adopt_found(sqlite3 *db, journal_op *op, ecp_error *err)
{
    sqlite3_stmt *adopt;
    int status = store_prepare(db, "UPDATE OR REPLACE journal SET owner = ?3 WHERE owner = ?1 AND uri = ?2", &adopt,
                               err);
    for (size_t i = 0; i < op->found_count && status == 0; i++) {
        sqlite3_reset(adopt);
        sqlite3_bind_text(adopt, 1, op->found[i].owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(adopt, 2, op->found[i].uri, -1, SQLITE_STATIC);
        sqlite3_bind_text(adopt, 3, op->owner, -1, SQLITE_STATIC);
        int rc = sqlite3_step(adopt);
        if (rc != SQLITE_DONE)
            status = store_error(db, rc, err, "taking over the journal");
    }
    sqlite3_finalize(adopt);
    return status;
}

/* Instances that are gone and left nothing: their rows and lock files. */
static void forget_dead_instances(sqlite3 *db, journal_op *op)
{
    sqlite3_stmt *st;
    if (store_prepare(db, "SELECT id FROM instances WHERE id != ?1 AND NOT EXISTS "
                          "(SELECT 1 FROM journal WHERE journal.owner = instances.id)",
                      &st, NULL) < 0)
        return;
    sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
    char **gone = NULL;
    size_t n = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *id = (const char *)sqlite3_column_text(st, 0);
        if (id && !instance_alive(op->data_dir, id)) {
            gone = xrealloc(gone, (n + 1) * sizeof *gone);
            gone[n++] = xstrdup(id);
        }
    }
    sqlite3_finalize(st);
    if (store_prepare(db, "DELETE FROM instances WHERE id = ?1", &st, NULL) == 0) {
        for (size_t i = 0; i < n; i++) {
            sqlite3_reset(st);
            sqlite3_bind_text(st, 1, gone[i], -1, SQLITE_STATIC);
            sqlite3_step(st);
            buf path = BUF_INIT;
            lock_path(&path, op->data_dir, gone[i]);
            unlink(path.data);
            buf_free(&path);
        }
        sqlite3_finalize(st);
    }
    for (size_t i = 0; i < n; i++)
        free(gone[i]);
    free(gone);
}

typedef struct blob_writer {
    sqlite3_blob *blob;
    int offset;
    int rc;
} blob_writer;

static void write_blob_chunk(void *ctx, const char *chunk, size_t len)
{
    blob_writer *b = ctx;
    if (b->rc != SQLITE_OK)
        return;
    b->rc = sqlite3_blob_write(b->blob, chunk, (int)len, b->offset);
    b->offset += (int)len;
}

/* The row is made with room for the text, then the snapshot is streamed into
 * it chunk by chunk: no copy of the whole text exists anywhere. */
static int put_text(sqlite3 *db, journal_op *op, ecp_error *err)
{
    sqlite3_stmt *st;
    size_t len = document_snapshot_length(op->text);
    int status = store_prepare(db,
                               "INSERT OR REPLACE INTO journal (owner, uri, workspace, language_id, saved_at, content) "
                               "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                               &st, err);
    if (status < 0)
        return status;
    sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, op->uri, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, op->workspace, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, op->language_id ? op->language_id : "plaintext", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, op->now);
    sqlite3_bind_zeroblob64(st, 6, len);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return store_error(db, rc, err, "journaling unsaved text");
    if (len == 0)
        return 0;
    blob_writer b = {.rc = SQLITE_OK};
    rc = sqlite3_blob_open(db, "main", "journal", "content", sqlite3_last_insert_rowid(db), 1, &b.blob);
    if (rc != SQLITE_OK)
        return store_error(db, rc, err, "journaling unsaved text");
    document_snapshot_read(op->text, 0, len, write_blob_chunk, &b, NULL);
    sqlite3_blob_close(b.blob);
    return b.rc == SQLITE_OK ? 0 : store_error(db, b.rc, err, "journaling unsaved text");
}

static int journal_work(sqlite3 *db, void *data, ecp_error *err)
{
    journal_op *op = data;
    sqlite3_stmt *st;
    int status = 0, rc;
    switch (op->action) {
    case JOURNAL_REGISTER:
        if ((status = store_prepare(db, "INSERT OR REPLACE INTO instances (id, pid, started_at) VALUES (?1, ?2, ?3)",
                                    &st, err)) < 0)
            return status;
        sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)getpid());
        sqlite3_bind_int64(st, 3, op->now);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return store_error(db, rc, err, "registering the server");
        forget_dead_instances(db, op);
        return 0;
    case JOURNAL_PUT: return put_text(db, op, err);
    case JOURNAL_DELETE:
        if ((status = store_prepare(db, "DELETE FROM journal WHERE owner = ?1 AND uri = ?2", &st, err)) < 0)
            return status;
        sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, op->uri, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "clearing the journal");
    case JOURNAL_LIST: return find_recoverable(db, op, false, err);
    case JOURNAL_TAKE:
        if ((status = find_recoverable(db, op, true, err)) == 0)
            status = adopt_found(db, op, err);
        if (status == 0)
            forget_dead_instances(db, op);
        return status;
    case JOURNAL_DISCARD:
        if ((status = find_recoverable(db, op, false, err)) == 0)
            status = delete_found(db, op, err);
        if (status == 0)
            forget_dead_instances(db, op);
        return status;
    case JOURNAL_UNREGISTER:
        if ((status = store_prepare(db, "SELECT 1 FROM journal WHERE owner = ?1 LIMIT 1", &st, err)) < 0)
            return status;
        sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
        op->kept_instance = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
        if (op->kept_instance)
            return 0;
        if ((status = store_prepare(db, "DELETE FROM instances WHERE id = ?1", &st, err)) < 0)
            return status;
        sqlite3_bind_text(st, 1, op->owner, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
        if (rc != SQLITE_DONE)
            return store_error(db, rc, err, "unregistering the server");
        buf path = BUF_INIT;
        lock_path(&path, op->data_dir, op->owner);
        unlink(path.data); /* still locked by us until we close it: nobody mistakes us for dead */
        buf_free(&path);
        return 0;
    }
    return 0;
}

static void write_entry(journal_entry *e);
static journal_entry *entry_of(session_service *self, const char *document_id);
static void clear_row(session_service *self, const char *uri);

/* A recovered item is settled; its row is ours now (adopt_found). A document
 * journaled under that uri takes the row over: it is rewritten by the next
 * write and cleared by a save or a close. A document with nothing to keep
 * (its text is the file's) or journaled under another spelling of the file
 * leaves nothing for the row to hold. One that could not be opened keeps
 * its row, offered again once this server is gone. */
static void recovered_item(session_service *self, const reopen_item *item, const char *document_id)
{
    if (!document_id)
        return;
    journal_entry *e = entry_of(self, document_id);
    if (e && strcmp(e->uri, item->uri) == 0)
        e->written = true;
    else
        clear_row(self, item->uri);
}

static void journal_done(void *data, int status, const ecp_error *err)
{
    journal_op *op = data;
    switch (op->action) {
    case JOURNAL_PUT: {
        /* the next write of this document may go; edits made meanwhile go now */
        journal_entry *e = op->svc->freeing ? NULL : entry_of(op->svc, op->document_id);
        if (e) {
            e->writing = false;
            if (e->armed && !uv_is_active((uv_handle_t *)&e->timer))
                write_entry(e);
        }
        break;
    }
    case JOURNAL_LIST: {
        size_t n = 0;
        session_recoverable *list = xcalloc(op->found_count + 1, sizeof *list);
        for (size_t i = 0; i < op->found_count; i++)
            list[n++] = (session_recoverable){op->found[i].uri, op->found[i].language_id, op->found[i].saved_at,
                                              op->found[i].bytes};
        op->list_cb(op->ctx, status, err, list, status == 0 ? n : 0);
        free(list);
        break;
    }
    case JOURNAL_TAKE: {
        if (status < 0) {
            op->reopen_cb(op->ctx, status, err, NULL);
            break;
        }
        reopen_item *items = xcalloc(op->found_count + 1, sizeof *items);
        size_t n = 0;
        for (size_t i = 0; i < op->found_count; i++) {
            found_entry *f = &op->found[i];
            reopen_item *it = &items[n++];
            it->uri = f->uri, f->uri = NULL;
            it->language_id = f->language_id, f->language_id = NULL;
            it->content = f->content, f->content = NULL;
            it->content_len = (size_t)f->bytes;
            it->has_content = true;
        }
        session__reopen(op->svc, 0, items, n, recovered_item, op->reopen_cb, op->ctx);
        break;
    }
    case JOURNAL_DISCARD: op->status_cb(op->ctx, status, err); break;
    default: break;
    }
}

static void journal_free_op(void *data)
{
    journal_op *op = data;
    for (size_t i = 0; i < op->found_count; i++) {
        free_each(op->found[i].owner, op->found[i].uri, op->found[i].language_id, op->found[i].content);
    }
    for (size_t i = 0; i < op->uri_count; i++)
        free(op->uris[i]);
    free_each(op->uris, op->found, op->data_dir, op->owner, op->workspace, op->uri, op->language_id);
    document_snapshot_release(op->text);
    free(op->document_id);
    free(op);
}

static const store_op_type journal_type = {
    .name = "journal", .transaction = true, .work = journal_work, .done = journal_done, .free_data = journal_free_op,
};

static journal_op *new_op(session_service *self, journal_action action)
{
    journal_op *op = xcalloc(1, sizeof *op);
    op->action = action;
    op->svc = self;
    op->data_dir = xstrdup(self->data_dir);
    op->owner = xstrdup(self->instance_id);
    op->workspace = xstrdup(self->workspace ? self->workspace : "");
    op->now = session__now_ms();
    return op;
}

static void set_filter(journal_op *op, const char *const *uris, size_t count)
{
    if (!uris)
        return;
    op->uris = xcalloc(count + 1, sizeof *op->uris);
    for (size_t i = 0; i < count; i++)
        op->uris[i] = xstrdup(uris[i]);
    op->uri_count = count;
}

/* ----- following documents ----------------------------------------------------------------------------- */

static journal_entry *entry_of(session_service *self, const char *document_id)
{
    return self->journal_by_id ? ecp_map_get(self->journal_by_id, document_id) : NULL;
}

/* Our instance, its lock file and its row, are made with the first text
 * this server keeps in the journal (written, or recovered and adopted): a
 * server that never holds unsaved text writes nothing to the store and
 * makes no file, and its start waits for no disk. Submitted before the op
 * that needs it, so the store runs it first. */
static void register_instance(session_service *self)
{
    if (self->registered)
        return;
    self->registered = true;
    buf dir = BUF_INIT, path = BUF_INIT;
    buf_appendf(&dir, "%s/instances", self->data_dir);
    if (mkdir(dir.data, 0700) < 0 && errno != EEXIST)
        ecp_log(self->log, ECP_LOG_WARN, "journal: cannot create %s: %s", dir.data, strerror(errno));
    lock_path(&path, self->data_dir, self->instance_id);
    self->instance_lock_fd = open(path.data, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (self->instance_lock_fd < 0 || flock(self->instance_lock_fd, LOCK_EX | LOCK_NB) < 0)
        ecp_log(self->log, ECP_LOG_WARN, "journal: cannot lock %s: %s; another server may offer this one's unsaved "
                "text for recovery while it runs", path.data, strerror(errno));
    self->instance_lock_path = buf_detach(&path);
    buf_free(&dir);
    store_submit(self->store, &journal_type, new_op(self, JOURNAL_REGISTER));
}

static void write_entry(journal_entry *e)
{
    session_service *self = e->svc;
    uv_timer_stop(&e->timer);
    if (e->writing)
        return; /* still armed: the write in flight starts the next when it ends */
    e->armed = false;
    document_info info;
    if (document_get_info(self->docs, e->document_id, &info, NULL) < 0 || !info.is_dirty)
        return;
    document_snapshot *text = document_snapshot_take(self->docs, e->document_id, NULL);
    if (!text)
        return;
    if (document_snapshot_length(text) >= JOURNAL_MAX_BYTES) {
        if (!e->too_big_logged)
            ecp_log(self->log, ECP_LOG_WARN, "journal: %s is too large to journal (%zu bytes)", e->uri,
                    document_snapshot_length(text));
        e->too_big_logged = true;
        document_snapshot_release(text);
        return;
    }
    register_instance(self);
    journal_op *op = new_op(self, JOURNAL_PUT);
    op->uri = xstrdup(e->uri);
    op->language_id = xstrdup(e->language_id);
    op->document_id = xstrdup(e->document_id);
    op->text = text;
    store_submit(self->store, &journal_type, op);
    e->written = true;
    e->writing = true;
}

static void on_timer(uv_timer_t *timer) { write_entry(timer->data); }

static void entry_close_cb(uv_handle_t *handle)
{
    journal_entry *e = handle->data;
    free_each(e->document_id, e->uri, e->language_id, e);
}

static void clear_row(session_service *self, const char *uri)
{
    journal_op *op = new_op(self, JOURNAL_DELETE);
    op->uri = xstrdup(uri);
    store_submit(self->store, &journal_type, op);
}

static void entry_drop(session_service *self, journal_entry *e, bool clear)
{
    for (journal_entry **p = &self->journal; *p; p = &(*p)->next) {
        if (*p == e) {
            *p = e->next;
            break;
        }
    }
    ecp_map_remove(self->journal_by_id, e->document_id, NULL);
    if (clear && e->written)
        clear_row(self, e->uri);
    uv_timer_stop(&e->timer);
    uv_close((uv_handle_t *)&e->timer, entry_close_cb);
}

static void on_change(void *ctx, const document_change_event *event)
{
    session_service *self = ctx;
    document_info info;
    if (document_get_info(self->docs, event->document_id, &info, NULL) < 0)
        return;
    journal_entry *e = entry_of(self, event->document_id);
    if (!info.is_dirty) {
        /* undone back to what is on disk: nothing to keep */
        if (e)
            entry_drop(self, e, true);
        return;
    }
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->svc = self;
        e->document_id = xstrdup(event->document_id);
        e->uri = xstrdup(info.uri);
        e->language_id = xstrdup(info.language_id);
        uv_timer_init(ecp_pool_loop(self->pool), &e->timer);
        e->timer.data = e;
        e->next = self->journal;
        self->journal = e;
        if (!self->journal_by_id)
            self->journal_by_id = ecp_map_new();
        ecp_map_set(self->journal_by_id, e->document_id, e, NULL);
    }
    uint64_t now = uv_now(ecp_pool_loop(self->pool));
    if (!e->armed) {
        e->armed = true;
        e->first_pending = now;
    }
    uint64_t deadline = e->first_pending + MAX_WAIT_MS;
    uint64_t delay = now + DEBOUNCE_MS > deadline ? (deadline > now ? deadline - now : 0) : DEBOUNCE_MS;
    uv_timer_start(&e->timer, on_timer, delay, 0);
}

static void on_saved_or_closed(session_service *self, const char *document_id)
{
    journal_entry *e = entry_of(self, document_id);
    if (e)
        entry_drop(self, e, true);
}

static void on_close(void *ctx, const char *document_id, const char *uri) { on_saved_or_closed(ctx, document_id); }

static void on_save(void *ctx, const char *document_id, const char *uri, uint64_t version)
{
    on_saved_or_closed(ctx, document_id);
}

static const document_listener journal_listener = {
    .on_change = on_change,
    .on_close = on_close,
    .on_save = on_save,
};

/* ----- recovery ---------------------------------------------------------------------------------------- */

void session_recoverable_list(session_service *self, session_recoverable_cb cb, void *ctx)
{
    journal_op *op = new_op(self, JOURNAL_LIST);
    op->list_cb = cb;
    op->ctx = ctx;
    store_submit(self->store, &journal_type, op);
}

void session_recover(session_service *self, const char *const *uris, size_t count, session_reopen_cb cb, void *ctx)
{
    register_instance(self); /* what is taken becomes ours (adopt_found) */
    journal_op *op = new_op(self, JOURNAL_TAKE);
    set_filter(op, uris, count);
    op->reopen_cb = cb;
    op->ctx = ctx;
    store_submit(self->store, &journal_type, op);
}

void session_discard_recovery(session_service *self, const char *const *uris, size_t count, session_status_cb cb,
                              void *ctx)
{
    journal_op *op = new_op(self, JOURNAL_DISCARD);
    set_filter(op, uris, count);
    op->status_cb = cb;
    op->ctx = ctx;
    store_submit(self->store, &journal_type, op);
}

/* ----- lifetime ---------------------------------------------------------------------------------------- */

int session__journal_init(session_service *self, ecp_error *err)
{
    unsigned char raw[16];
    randombytes_buf(raw, sizeof raw);
    for (size_t i = 0; i < sizeof raw; i++)
        snprintf(self->instance_id + 2 * i, 3, "%02x", raw[i]);
    document_subscribe(self->docs, &journal_listener, self);
    (void)err;
    return 0;
}

void session__journal_free(session_service *self)
{
    if (!self->instance_id[0])
        return; /* never started */
    document_unsubscribe(self->docs, &journal_listener, self);
    /* What is armed is written now; every entry stays in the store: the
     * documents are still dirty, and the next server offers them back. */
    while (self->journal) {
        journal_entry *e = self->journal;
        if (e->armed) {
            e->writing = false; /* the last write goes after the one in flight */
            write_entry(e);
        }
        entry_drop(self, e, false);
    }
    ecp_map_free(self->journal_by_id);
    self->journal_by_id = NULL;
    if (!self->registered)
        return; /* nothing of ours in the store, and no lock file */
    journal_op *op = new_op(self, JOURNAL_UNREGISTER);
    store_submit(self->store, &journal_type, op);
    store_flush(self->store);
    if (self->instance_lock_fd >= 0)
        close(self->instance_lock_fd);
    self->instance_lock_fd = -1;
    free(self->instance_lock_path);
    self->instance_lock_path = NULL;
}
