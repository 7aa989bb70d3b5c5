/* local: the document service itself: the registry of open documents, ids,
 * events, queries, and the requests that touch the disk.
 *
 * Disk work runs as a job (core/job.h) in the service's job set, with its own
 * copies of its inputs (a path; for a save, a snapshot of the document, which
 * shares the text instead of copying it); the loop thread applies the result
 * when the job comes back, after checking that the document it concerns is
 * still there. Several opens of one file while it is being read wait on the
 * same job, so a file is never read twice at once.
 *
 * A request's task owns its waiters: the job's done answers them, and when
 * done never comes (the job set closed at teardown) the task's release answers
 * them with ECP_ECANCELED, so every callback runs exactly once.
 *
 * A file is named by its resolved path (symlinks and ".." followed) and, while
 * it exists, by its device and inode: every way of naming one file finds one
 * document. Saves of one file form a line: one writes, the next waits for it
 * (its snapshot already taken), so an older text is never renamed over a newer
 * one. The file's identity is recorded whenever the text matches the file
 * (open, reload, save); a save checks it just before writing, and the file
 * service's watch tells the document when the file changes, so it can reload
 * (no unsaved edits) or say so (unsaved edits, or the file gone).
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "file/interface.h"
#include "internal.h"
#include "uri.h"

/* Files up to this size are read on the loop thread: a thread-pool round trip
 * costs more than reading them. */
#define SMALL_FILE (1u << 20)

typedef enum task_kind {
    TASK_OPEN,
    TASK_RELOAD,
    TASK_SAVE,
} task_kind;

struct document_request {
    struct doc_task *task;
    struct document_request *next;
    document_open_cb open_cb;
    document_save_cb save_cb;
    document_reload_cb reload_cb;
    void *ctx;
};

/* One open, reload or save: the data of its job, or of the work done on the
 * loop for a small file. Everything in it is owned. */
typedef struct doc_task {
    document_service *svc;
    task_kind kind;
    ecp_job *job;              /* NULL when the work runs on the loop (or, for a save, has not begun) */
    struct doc_task *next_open; /* in svc->opening while an open reads on the pool */
    struct doc_task *next_save; /* in svc->saving while a save writes */
    struct doc_task *after;     /* save: the next save of the same file, waiting for this one */
    document_request *waiters;  /* in arrival order */
    /* inputs */
    char *path;
    char *uri;         /* open: the uri; save: the new uri of a save-as, else NULL */
    char *reply_uri;   /* save: the uri to report if the document is closed meanwhile */
    char *key;         /* open, save: the file's registry key (its resolved path) */
    char *language_id; /* open */
    bool read_only;    /* open */
    char *doc_id;      /* reload, save */
    bool force;        /* reload: despite unsaved edits; save: despite a change on disk */
    bool automatic;    /* reload: started because the file changed, for nobody's request */
    uint64_t state_id; /* save: the history state being written */
    document_snapshot *snap; /* save: the text to write */
    bool check;        /* save: refuse when the file is no longer `expect` */
    doc_disk expect;
    /* outputs */
    int status;
    ecp_error err;
    doc_file file;     /* open, reload: what was read (open: file.data is owned by tree) */
    piece_tree *tree;  /* open: the text read */
    doc_disk written;  /* save: the file as written (or as put back) */
    bool put_back;     /* save: failed in place, and the old contents were put back */
} doc_task;

/* ----- small things --------------------------------------------------------------- */

uint64_t document__now_ns(void) { return uv_hrtime(); }

uint64_t document__new_state_id(document_service *svc) { return ++svc->next_state_id; }

static uint64_t rng_next(document_service *svc)
{
    /* xorshift64*: ids need to be unlikely to repeat, not unpredictable. */
    uint64_t x = svc->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    svc->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static char *make_id(document_service *svc)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long ms = (unsigned long long)ts.tv_sec * 1000u + (unsigned long long)ts.tv_nsec / 1000000u;
    char rand9[10];
    uint64_t r = rng_next(svc);
    for (int i = 0; i < 9; i++, r /= 36)
        rand9[i] = digits[r % 36];
    rand9[9] = '\0';
    buf id = BUF_INIT;
    buf_appendf(&id, "doc_%llu_%s", ms, rand9);
    return buf_detach(&id);
}

static const struct {
    const char *ext;
    const char *language;
} language_map[] = {
    {"ts", "typescript"}, {"tsx", "typescriptreact"}, {"js", "javascript"}, {"jsx", "javascriptreact"},
    {"json", "json"},     {"jsonc", "jsonc"},         {"md", "markdown"},   {"html", "html"},
    {"css", "css"},       {"scss", "scss"},           {"less", "less"},     {"py", "python"},
    {"rs", "rust"},       {"go", "go"},               {"java", "java"},     {"c", "c"},
    {"cpp", "cpp"},       {"h", "c"},                 {"hpp", "cpp"},       {"rb", "ruby"},
    {"sh", "bash"},       {"bash", "bash"},           {"zsh", "bash"},      {"yml", "yaml"},
    {"yaml", "yaml"},     {"toml", "toml"},           {"xml", "xml"},       {"svg", "xml"},
    {"sql", "sql"},       {"graphql", "graphql"},     {"gql", "graphql"},   {"php", "php"},
    {"kt", "kotlin"},     {"kts", "kotlin"},          {"cs", "csharp"},     {"zig", "zig"},
    {"ex", "elixir"},     {"exs", "elixir"},          {"mk", "makefile"},   {"lua", "lua"},
};

/* Files known by their whole name, not an extension. */
static const struct {
    const char *name;
    const char *language;
} name_map[] = {
    {"Makefile", "makefile"}, {"makefile", "makefile"}, {"GNUmakefile", "makefile"},
    {"Gemfile", "ruby"},      {"Rakefile", "ruby"},     {"Dockerfile", "dockerfile"},
};

const char *document_language_of(const char *uri)
{
    const char *name = strrchr(uri, '/');
    name = name ? name + 1 : uri;
    for (size_t i = 0; i < sizeof name_map / sizeof name_map[0]; i++)
        if (strcmp(name, name_map[i].name) == 0)
            return name_map[i].language;
    const char *dot = strrchr(name, '.');
    if (!dot || !dot[1])
        return "plaintext";
    for (size_t i = 0; i < sizeof language_map / sizeof language_map[0]; i++)
        if (strcasecmp(dot + 1, language_map[i].ext) == 0)
            return language_map[i].language;
    return "plaintext";
}

void document__read_bytes(const piece_tree *tree, size_t offset, size_t len, document_chunk_fn fn, void *ctx)
{
    piece_tree_reader r;
    piece_tree_reader_init(&r, tree, offset, len);
    const char *chunk;
    size_t n;
    while (piece_tree_reader_next(&r, &chunk, &n))
        fn(ctx, chunk, n);
}

/* ----- registry ---------------------------------------------------------------------- */

document *document__find(document_service *svc, const char *id, ecp_error *err)
{
    document *doc = id ? ecp_map_get(svc->by_id, id) : NULL;
    if (!doc)
        ecp_error_set(err, ECP_ENOTFOUND, "Document not found");
    return doc;
}

document *document__find_writable(document_service *svc, const char *id, ecp_error *err)
{
    document *doc = document__find(svc, id, err);
    if (doc && doc->read_only) {
        ecp_error_set(err, ECP_EREADONLY, "Document is read-only");
        return NULL;
    }
    return doc;
}

int document__writable(document_service *svc, const char *id, uint64_t *version, document **out, ecp_error *err)
{
    document *doc = document__find(svc, id, err);
    *out = doc;
    if (version)
        *version = doc ? doc->version : 0;
    if (!doc)
        return ECP_ENOTFOUND;
    if (doc->read_only)
        return ecp_error_set(err, ECP_EREADONLY, "Document is read-only");
    return 0;
}

static document *find_by_key(document_service *svc, const char *key) { return ecp_map_get(svc->by_key, key); }

/* Points key at the first document, in the order they were opened, that has
 * it, or at none. */
static void key_index_rescan(document_service *svc, const char *key)
{
    for (size_t i = 0; i < svc->doc_count; i++)
        if (strcmp(svc->docs[i]->key, key) == 0) {
            ecp_map_set(svc->by_key, key, svc->docs[i], NULL);
            return;
        }
    ecp_map_remove(svc->by_key, key, NULL);
}

/* doc (in svc->docs) now has doc->key. Two documents may share a key for a
 * while (a save-as finishing onto a file opened meanwhile); the first one
 * opened is the one found, as before the index existed. */
static void key_index_add(document_service *svc, document *doc)
{
    void *holder = NULL;
    if (!ecp_map_find(svc->by_key, doc->key, &holder)) {
        ecp_map_set(svc->by_key, doc->key, doc, NULL);
    } else if (holder != doc) {
        svc->keys_shared = true;
        key_index_rescan(svc, doc->key);
    }
}

/* doc (no longer in svc->docs, or no longer with this key) gives key up. */
static void key_index_drop(document_service *svc, document *doc, const char *key)
{
    if (ecp_map_get(svc->by_key, key) != doc)
        return;
    if (svc->keys_shared)
        key_index_rescan(svc, key);
    else
        ecp_map_remove(svc->by_key, key, NULL);
}

/* The document of a file: by its resolved path, else (another hard link, a
 * bind mount) by the inode the file has now (disk: NULL or !exists when
 * there is no file). An inode is trusted only while the document's own path
 * still leads to it: a deleted file's number may be given to a new one. */
static document *find_file(document_service *svc, const char *key, const doc_disk *disk)
{
    document *doc = find_by_key(svc, key);
    if (doc || !disk || !disk->exists)
        return doc;
    for (size_t i = 0; i < svc->doc_count; i++) {
        document *d = svc->docs[i];
        if (!d->has_inode || !d->path || d->disk.dev != disk->dev || d->disk.ino != disk->ino)
            continue;
        doc_disk now;
        if (document__disk_stat(d->path, &now) == 0 && now.exists && now.dev == disk->dev && now.ino == disk->ino)
            return d;
    }
    return NULL;
}

/* The name a path's file is known by: its resolved path (symlinks, "." and
 * ".." followed), or for a file that does not exist yet its resolved
 * directory and its name, or failing that the path itself. *disk receives
 * what is there now. */
static char *resolve_path(const char *path, doc_disk *disk)
{
    if (document__disk_stat(path, disk) != 0)
        memset(disk, 0, sizeof *disk);
    char *real = realpath(path, NULL);
    if (real)
        return real;
    const char *slash = strrchr(path, '/');
    if (!slash || !slash[1])
        return xstrdup(path);
    char *dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
    char *real_dir = realpath(dir, NULL);
    free(dir);
    if (!real_dir)
        return xstrdup(path);
    buf out = BUF_INIT;
    buf_append_str(&out, real_dir);
    if (strcmp(real_dir, "/") != 0)
        buf_push(&out, '/');
    buf_append_str(&out, slash + 1);
    free(real_dir);
    return buf_detach(&out);
}

static bool has_unsaved_edits(const document *doc) { return document__state_id(doc) != doc->saved_id; }

static document *doc_new(document_service *svc, const char *uri, const char *path, const char *key,
                         const char *language_id, bool read_only, piece_tree *tree, bool crlf)
{
    document *doc = xcalloc(1, sizeof *doc);
    doc->columns = document__columns_new();
    doc->svc = svc;
    doc->id = make_id(svc);
    doc->uri = xstrdup(uri);
    doc->path = path ? xstrdup(path) : NULL;
    doc->key = xstrdup(key);
    doc->language_id = xstrdup(language_id ? language_id : document_language_of(path ? path : uri));
    doc->tree = tree;
    doc->version = 1;
    doc->read_only = read_only;
    doc->crlf = crlf;
    document__history_init(&doc->history, document__new_state_id(svc));
    doc->saved_id = doc->history.base_id;
    if (svc->doc_count == svc->doc_cap) {
        svc->doc_cap = svc->doc_cap ? svc->doc_cap * 2 : 8;
        svc->docs = xrealloc(svc->docs, svc->doc_cap * sizeof *svc->docs);
    }
    svc->docs[svc->doc_count++] = doc;
    ecp_map_set(svc->by_id, doc->id, doc, NULL);
    key_index_add(svc, doc);
    return doc;
}

static void doc_free(document *doc)
{
    piece_tree_free(doc->tree);
    document__parties_free(doc);
    document__history_free(&doc->history);
    document__columns_free(doc->columns);
    free_each(doc->id, doc->uri, doc->path, doc->key, doc->language_id, doc->checkpoints, doc);
}

void document__fill_info(const document *doc, document_info *out)
{
    out->document_id = doc->id;
    out->uri = doc->uri;
    out->language_id = doc->language_id;
    out->version = doc->version;
    out->is_dirty = has_unsaved_edits(doc) || doc->changed_on_disk;
    out->is_read_only = doc->read_only;
    out->line_count = piece_tree_line_count(doc->tree);
    out->changed_on_disk = doc->changed_on_disk;
}

/* ----- service ------------------------------------------------------------------------- */

ecp_pool *document_service_pool(const document_service *self) { return ecp_job_set_pool(self->jobs); }

document_service *document_service_new(ecp_pool *pool, ecp_logger *log)
{
    document_service *svc = calloc(1, sizeof *svc);
    if (!svc)
        return NULL;
    svc->jobs = ecp_job_set_new(pool);
    svc->log = log;
    svc->by_id = ecp_map_new();
    svc->by_key = ecp_map_new();
    svc->undo_max_bytes = DOCUMENT_UNDO_MAX_BYTES;
    svc->undo_max_steps = DOCUMENT_UNDO_MAX_STEPS;
    svc->splice_min_edits = DOC_SPLICE_MIN_EDITS;
    svc->encodings = DOCUMENT_ENCODINGS_ALL;
    if (getrandom(&svc->rng, sizeof svc->rng, GRND_NONBLOCK) != sizeof svc->rng)
        svc->rng = uv_hrtime() ^ (uint64_t)(uintptr_t)svc;
    if (svc->rng == 0)
        svc->rng = 0x9E3779B97F4A7C15ull;
    return svc;
}

void document_service_free(document_service *self)
{
    if (!self)
        return;
    /* First, while every document is still there: reads stop, saves already
     * handed to the pool finish writing, and every request still waiting is
     * answered with ECP_ECANCELED as its task is released. */
    ecp_job_set_close(self->jobs);
    document__format_lookups_free(self);
    for (size_t i = 0; i < self->doc_count; i++) {
        if (self->docs[i]->watch_id)
            file_watch_remove(self->files, self->docs[i]->watch_id);
        doc_free(self->docs[i]);
    }
    free(self->docs);
    ecp_map_free(self->by_id);
    ecp_map_free(self->by_key);
    free(self->encoding_readers);
    ecp_listeners_free(&self->listeners);
    ecp_listeners_free(&self->disk_listeners);
    free(self->workspace);
    free(self);
}

/* ----- events ----------------------------------------------------------------------------- */

int document_subscribe(document_service *self, const document_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
    return 0;
}

void document_unsubscribe(document_service *self, const document_listener *listener, void *ctx)
{
    ecp_listeners_remove(&self->listeners, listener, ctx);
}

int document_subscribe_disk(document_service *self, const document_disk_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->disk_listeners, listener, ctx);
    return 0;
}

void document_unsubscribe_disk(document_service *self, const document_disk_listener *listener, void *ctx)
{
    ecp_listeners_remove(&self->disk_listeners, listener, ctx);
}

void document__emit_change(document_service *svc, document *doc, const document_change *changes, size_t count)
{
    document_change_event ev = {doc->id, doc->uri, doc->version, changes, count};
    ECP_EMIT(&svc->listeners, document_listener, on_change, &ev);
}

void document__emit_cursors(document_service *svc, document *doc, uint64_t owner)
{
    ECP_EMIT(&svc->listeners, document_listener, on_cursors, doc->id, owner);
}

static void emit_open(document_service *svc, document *doc)
{
    document_info info;
    document__fill_info(doc, &info);
    ECP_EMIT(&svc->listeners, document_listener, on_open, &info);
}

/* ----- queries ------------------------------------------------------------------------------ */

int document_get_info(document_service *self, const char *document_id, document_info *out, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    document__fill_info(doc, out);
    return 0;
}

void document_list(document_service *self, void (*fn)(void *ctx, const document_info *info), void *ctx)
{
    for (size_t i = 0; i < self->doc_count; i++) {
        document_info info;
        document__fill_info(self->docs[i], &info);
        fn(ctx, &info);
    }
}

static int range_offsets(const document *doc, const document_range *range, ecp_position_encoding enc, size_t *start,
                         size_t *end, ecp_error *err)
{
    int rc;
    if (range->end.line < range->start.line ||
        (range->end.line == range->start.line && range->end.column < range->start.column))
        return ecp_error_set(err, ECP_EINVAL, "Invalid range: the end precedes the start");
    if ((rc = document__offset_of(doc, &range->start, enc, start, err)) != 0 ||
        (rc = document__offset_of(doc, &range->end, enc, end, err)) != 0)
        return rc;
    if (*end < *start)
        *end = *start;
    return 0;
}

int document_read(document_service *self, const char *document_id, const document_range *range,
                  ecp_position_encoding enc, document_chunk_fn fn, void *ctx, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    size_t start = 0, end = piece_tree_length(doc->tree);
    if (range) {
        int rc = range_offsets(doc, range, enc, &start, &end, err);
        if (rc != 0)
            return rc;
    }
    document__read_bytes(doc->tree, start, end - start, fn, ctx);
    return 0;
}

int document_read_line(document_service *self, const char *document_id, size_t line, document_chunk_fn fn, void *ctx,
                       ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    size_t lines = piece_tree_line_count(doc->tree);
    if (line >= lines)
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: line %zu is past the end (%zu line%s)", line, lines,
                             lines == 1 ? "" : "s");
    size_t start, len;
    piece_tree_line_range(doc->tree, line, &start, &len);
    document__read_bytes(doc->tree, start, len, fn, ctx);
    return 0;
}

int document_read_lines(document_service *self, const char *document_id, size_t first, size_t end,
                        const document_line_reader *reader, void *ctx, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    size_t lines = piece_tree_line_count(doc->tree);
    if (end > lines)
        end = lines;
    if (first >= end)
        return 0;
    piece_tree_lines it;
    piece_tree_lines_init(&it, doc->tree, first, end - first);
    document__read_lines(&it, first, reader, ctx);
    return 0;
}

static void append_chunk(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

int document_get_text(document_service *self, const char *document_id, const document_range *range,
                      ecp_position_encoding enc, buf *out, ecp_error *err)
{
    return document_read(self, document_id, range, enc, append_chunk, out, err);
}

int document_position_to_offset(document_service *self, const char *document_id, const document_position *pos,
                                ecp_position_encoding enc, uint64_t *out, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    size_t offset;
    int rc = document__offset_of(doc, pos, enc, &offset, err);
    if (rc == 0)
        *out = document__units_before(doc, offset, enc);
    return rc;
}

int document_offset_to_position(document_service *self, const char *document_id, uint64_t offset,
                                ecp_position_encoding enc, document_position *out, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc)
        return ECP_ENOTFOUND;
    size_t byte;
    if (offset > SIZE_MAX || !document__offset_at_units(doc, (size_t)offset, enc, &byte))
        return ecp_error_set(err, ECP_ERANGE, "Invalid offset: %llu is past the end of the document",
                             (unsigned long long)offset);
    document__position_of(doc, byte, enc, out);
    return 0;
}

int document_word_at(document_service *self, const char *document_id, const document_position *pos,
                     ecp_position_encoding enc, document_range *out, bool *found, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    *found = false;
    if (!doc)
        return ECP_ENOTFOUND;
    size_t offset, start, end;
    int rc = document__offset_of(doc, pos, enc, &offset, err);
    if (rc != 0)
        return rc;
    if (document__word_at(doc, offset, &start, &end)) {
        *found = true;
        document__position_of(doc, start, enc, &out->start);
        document__position_of(doc, end, enc, &out->end);
    }
    return 0;
}

/* ----- following the file ----------------------------------------------------------------------------- */

static void on_file_change(void *ctx, const file_change *change);

/* Watches the document's file through the file service, once the text is
 * known to be the file's. */
static void start_following(document_service *svc, document *doc)
{
    if (!svc->files || !doc->path || !doc->disk_known || doc->watch_id)
        return;
    ecp_error err;
    if (file_watch_add(svc->files, doc->key, false, on_file_change, doc, &doc->watch_id, &err) != 0) {
        doc->watch_id = 0;
        ecp_log(svc->log, ECP_LOG_INFO, "not following %s: %s", doc->key, err.message);
    }
}

static void stop_following(document_service *svc, document *doc)
{
    if (doc->watch_id)
        file_watch_remove(svc->files, doc->watch_id);
    doc->watch_id = 0;
}

/* The document keeps its text although the file is now `now`: say so, once
 * per state of the file. */
static void flag_changed(document_service *svc, document *doc, const doc_disk *now)
{
    if (!now->exists)
        doc->has_inode = false;
    if (doc->changed_on_disk && document__disk_same(&doc->disk_reported, now))
        return;
    doc->changed_on_disk = true;
    doc->disk_reported = *now;
    ECP_EMIT(&svc->disk_listeners, document_disk_listener, on_disk_change, doc->id, doc->uri);
}

/* The text now matches the file as `disk` describes it. */
static void matches_file(document_service *svc, document *doc, const doc_disk *disk)
{
    doc->disk = *disk;
    doc->disk_known = true;
    doc->has_inode = disk->exists;
    doc->changed_on_disk = false;
    start_following(svc, doc);
}

void document__adopt_disk(document_service *svc, document *doc)
{
    doc_disk now;
    if (doc->path && document__disk_stat(doc->path, &now) == 0)
        matches_file(svc, doc, &now);
}

static void follow_reload(document_service *svc, document *doc);

/* Looks at the file after its watch reported a change (or after the saves
 * and reloads that were running when it did). */
static void check_disk(document_service *svc, document *doc)
{
    if (!doc->path || !doc->disk_known)
        return;
    if (doc->saves_pending || doc->following) {
        doc->recheck = true;
        return;
    }
    doc->recheck = false;
    doc_disk now;
    if (document__disk_stat(doc->path, &now) != 0 || document__disk_same(&now, &doc->disk))
        return; /* cannot tell, or nothing we track changed (our own save) */
    if (now.exists && !has_unsaved_edits(doc))
        follow_reload(svc, doc);
    else
        flag_changed(svc, doc, &now);
}

static void on_file_change(void *ctx, const file_change *change)
{
    (void)change;
    document *doc = ctx;
    check_disk(doc->svc, doc);
}

void document_service_follow_files(document_service *self, struct file_service *files)
{
    self->files = files;
    for (size_t i = 0; i < self->doc_count; i++)
        start_following(self, self->docs[i]);
}

void document_service_set_encodings(document_service *self, const void *reader, unsigned mask)
{
    size_t i = 0;
    while (i < self->encoding_reader_count && self->encoding_readers[i].reader != reader)
        i++;
    if (i == self->encoding_reader_count) {
        self->encoding_readers = xrealloc(self->encoding_readers, (i + 1) * sizeof *self->encoding_readers);
        self->encoding_reader_count++;
    }
    self->encoding_readers[i] = (struct encoding_reader){reader, mask};
    unsigned all = 1u << ECP_ENCODING_UTF8;
    for (size_t k = 0; k < self->encoding_reader_count; k++)
        all |= self->encoding_readers[k].mask & DOCUMENT_ENCODINGS_ALL;
    self->encodings = all;
}

void document_service_set_undo_limit(document_service *self, size_t max_bytes)
{
    self->undo_max_bytes = max_bytes;
    for (size_t i = 0; i < self->doc_count; i++)
        document__history_trim(self, self->docs[i]);
}

size_t document_service_undo_limit(const document_service *self) { return self->undo_max_bytes; }

void document_service_set_undo_steps(document_service *self, size_t max_steps)
{
    self->undo_max_steps = max_steps ? max_steps : 1;
    for (size_t i = 0; i < self->doc_count; i++)
        document__history_trim(self, self->docs[i]);
}

size_t document_service_undo_steps(const document_service *self) { return self->undo_max_steps; }

/* ----- tasks and their jobs ------------------------------------------------------------------------ */

static doc_task *task_new(document_service *svc, task_kind kind)
{
    doc_task *t = xcalloc(1, sizeof *t);
    t->svc = svc;
    t->kind = kind;
    return t;
}

static document_request *task_wait(doc_task *t, void *ctx)
{
    document_request *req = xcalloc(1, sizeof *req);
    req->task = t;
    req->ctx = ctx;
    document_request **tail = &t->waiters;
    while (*tail)
        tail = &(*tail)->next;
    *tail = req;
    return req;
}

static document_request *task_take_waiter(doc_task *t)
{
    document_request *req = t->waiters;
    if (req)
        t->waiters = req->next;
    return req;
}

static void answer_cancelled(document_request *req, const ecp_error *err)
{
    if (req->open_cb)
        req->open_cb(req->ctx, ECP_ECANCELED, err, NULL, false);
    else if (req->reload_cb)
        req->reload_cb(req->ctx, ECP_ECANCELED, err, 0);
    else if (req->save_cb)
        req->save_cb(req->ctx, ECP_ECANCELED, err, 0, NULL);
    free(req);
}

static void opening_unlink(doc_task *t)
{
    for (doc_task **p = &t->svc->opening; *p; p = &(*p)->next_open) {
        if (*p == t) {
            *p = t->next_open;
            return;
        }
    }
}

static void saving_unlink(doc_task *t)
{
    for (doc_task **p = &t->svc->saving; *p; p = &(*p)->next_save) {
        if (*p == t) {
            *p = t->next_save;
            return;
        }
    }
}

/* Writes a save's snapshot; any thread. */
static void save_write(doc_task *t)
{
    doc_write how = {.expect = t->check ? &t->expect : NULL};
    t->status = document__snapshot_write(t->snap, t->path, &how, &t->err);
    t->written = how.written;
    t->put_back = how.put_back;
}

static void save_prepare(document_service *svc, doc_task *t);

/* Releases a task, on the loop. Waiters still there were never answered:
 * the job set closed before done could run. Saves still waiting behind this
 * one are written now, in order, before they are released the same way: the
 * service is going, and their bytes exist nowhere else. */
static void task_free(void *data)
{
    doc_task *t = data;
    if (t->waiters) {
        ecp_error err;
        ecp_error_set(&err, ECP_ECANCELED, "Request cancelled: the document service is shutting down");
        for (document_request *req; (req = task_take_waiter(t));)
            answer_cancelled(req, &err);
    }
    /* Each expects the file as the save before it left it: done never ran
     * for that one, so the document does not know it yet. */
    bool wrote = t->written.exists && (t->status == 0 || t->put_back);
    doc_disk left = t->written;
    for (doc_task *next; (next = t->after);) {
        t->after = next->after;
        next->after = NULL;
        save_prepare(t->svc, next);
        if (next->check && wrote)
            next->expect = left;
        save_write(next);
        if (next->status != 0)
            ecp_log(t->svc->log, ECP_LOG_WARN, "%s", next->err.message);
        wrote = next->written.exists && (next->status == 0 || next->put_back);
        if (wrote)
            left = next->written;
        task_free(next);
    }
    if (t->kind == TASK_OPEN && t->job)
        opening_unlink(t);
    if (t->kind == TASK_SAVE && t->job)
        saving_unlink(t);
    document_snapshot_release(t->snap);
    piece_tree_free(t->tree);
    free_each(t->path, t->uri, t->reply_uri, t->key, t->language_id, t->doc_id, t->file.data, t);
}

/* job may be NULL (a small file, read on the loop): then nothing cancels. An
 * open gets a tree (made here, off the loop, for a large file), a reload the
 * bytes. */
static void read_task(doc_task *t, const ecp_job *job)
{
    t->status = document__read_file_job(t->path, job, &t->file, &t->err);
    if (t->status != 0 || t->kind != TASK_OPEN)
        return;
    t->tree = piece_tree_new_owning(t->file.data, t->file.len);
    if (!t->tree) {
        t->status = ecp_error_set(&t->err, ECP_ENOMEM, "Failed to open file: %s: not enough memory", t->path);
        return;
    }
    t->file.data = NULL; /* the tree's now */
}

static void task_work(ecp_job *job, unsigned item)
{
    (void)item;
    doc_task *t = ecp_job_data(job);
    /* A save does not look at cancellation: the user's bytes go to disk. */
    if (t->kind == TASK_SAVE)
        save_write(t);
    else
        read_task(t, job);
}

static void finish_open(document_service *svc, doc_task *t);
static void finish_reload(document_service *svc, doc_task *t);
static void finish_save(document_service *svc, doc_task *t);

static void task_done(ecp_job *job)
{
    doc_task *t = ecp_job_data(job);
    switch (t->kind) {
    case TASK_OPEN:
        opening_unlink(t);
        finish_open(t->svc, t);
        break;
    case TASK_RELOAD: finish_reload(t->svc, t); break;
    case TASK_SAVE:
        saving_unlink(t);
        finish_save(t->svc, t);
        break;
    }
}

/* Reading a large file is long work; a save is short and, once asked for,
 * must happen even when the service closes. */
static const ecp_job_type read_job = {
    .name = "document.read",
    .lane = ECP_LANE_LONG,
    .work = task_work,
    .done = task_done,
    .free_data = task_free,
};

static const ecp_job_type save_job = {
    .name = "document.save",
    .lane = ECP_LANE_SHORT,
    .runs_to_end = true,
    .work = task_work,
    .done = task_done,
    .free_data = task_free,
};

static void task_start(document_service *svc, doc_task *t)
{
    t->job = ecp_job_new(svc->jobs, t->kind == TASK_SAVE ? &save_job : &read_job, t);
    if (t->kind == TASK_OPEN) {
        t->next_open = svc->opening;
        svc->opening = t;
    } else if (t->kind == TASK_SAVE) {
        t->next_save = svc->saving;
        svc->saving = t;
    }
    ecp_job_start(t->job, 1);
}

void document_request_cancel(document_service *self, document_request *req)
{
    doc_task *t = req->task;
    for (document_request **p = &t->waiters; *p; p = &(*p)->next) {
        if (*p == req) {
            *p = req->next;
            break;
        }
    }
    ecp_error err;
    ecp_error_set(&err, ECP_ECANCELED, "Request cancelled");
    answer_cancelled(req, &err);
    /* A save goes on: its bytes are the user's work and belong on disk. */
    if (!t->waiters && t->kind != TASK_SAVE)
        ecp_job_cancel(t->job);
    (void)self;
}

/* Leftovers of saves of path that a process which died while saving left
 * behind, removed off the loop. */
static void sweep_work(ecp_job *job, unsigned item)
{
    (void)item;
    if (!ecp_job_cancelled(job))
        document__sweep_temps(ecp_job_data(job));
}

static const ecp_job_type sweep_job = {
    .name = "document.sweep",
    .lane = ECP_LANE_SHORT,
    .work = sweep_work,
};

static void sweep_later(document_service *svc, const char *path)
{
    ecp_job *job = ecp_job_new(svc->jobs, &sweep_job, xstrdup(path));
    ecp_job_start(job, 1);
}

/* ----- open ---------------------------------------------------------------------------------------- */

static bool is_file_uri(const char *uri)
{
    const char *scheme;
    size_t scheme_len;
    if (!uri_scheme(uri, strlen(uri), &scheme, &scheme_len))
        return uri[0] == '/';
    return scheme_len == 4 && strncasecmp(scheme, "file", 4) == 0;
}

/* An open of key being read, that a new open can join. */
static doc_task *pending_open(document_service *svc, const char *key)
{
    for (doc_task *t = svc->opening; t; t = t->next_open)
        if (!ecp_job_cancelled(t->job) && strcmp(t->key, key) == 0)
            return t;
    return NULL;
}

static void finish_open(document_service *svc, doc_task *t)
{
    if (!t->waiters)
        return; /* every caller went away: open nothing */
    const char *id = NULL;
    bool already = true;
    if (t->status == 0) {
        document *doc = find_file(svc, t->key, &t->file.disk);
        if (!doc) {
            doc = doc_new(svc, t->uri, t->path, t->key, t->language_id, t->read_only, t->tree, t->file.crlf);
            t->tree = NULL;
            doc->bom = t->file.bom;
            already = false;
            matches_file(svc, doc, &t->file.disk);
            sweep_later(svc, doc->key);
            emit_open(svc, doc);
        }
        id = doc->id;
    }
    for (document_request *req; (req = task_take_waiter(t));) {
        req->open_cb(req->ctx, t->status, t->status ? &t->err : NULL, id, already);
        already = true;
        free(req);
    }
}

static bool is_large(const doc_disk *disk) { return disk->exists && disk->size > SMALL_FILE; }

document_request *document_open(document_service *self, const document_open_options *options, document_open_cb cb,
                                void *ctx)
{
    ecp_error err;
    buf path = BUF_INIT;
    char *real = NULL;
    doc_disk disk = {0};
    document_request *req = NULL;
    const char *uri = options->uri;
    bool is_file = is_file_uri(uri);
    if (is_file) {
        if (uri_file_path(uri, strlen(uri), &path, &err) != 0) {
            cb(ctx, err.status, &err, NULL, false);
            goto done;
        }
        real = resolve_path(path.data, &disk);
    }
    const char *key = is_file ? real : uri;
    document *doc = is_file ? find_file(self, key, &disk) : find_by_key(self, key);
    if (doc) {
        cb(ctx, 0, NULL, doc->id, true);
        goto done;
    }
    if (options->content || !is_file) {
        size_t len = options->content ? options->content_len : 0;
        char *text = malloc(len + 1);
        if (!text) {
            ecp_error_set(&err, ECP_ENOMEM, "Not enough memory for %zu bytes of content", len);
            cb(ctx, err.status, &err, NULL, false);
            goto done;
        }
        if (len)
            memcpy(text, options->content, len);
        bool crlf;
        len = document__normalize_eol(text, len, &crlf);
        piece_tree *tree = piece_tree_new_owning(text, len);
        if (!tree) {
            free(text);
            ecp_error_set(&err, ECP_ENOMEM, "Not enough memory for %zu bytes of content", len);
            cb(ctx, err.status, &err, NULL, false);
            goto done;
        }
        doc = doc_new(self, uri, is_file ? path.data : NULL, key, options->language_id, options->read_only, tree, crlf);
        /* The text is the caller's, not the file's: the file is not followed
         * (nor checked before a save) until the text has matched it once. */
        if (is_file && disk.exists) {
            doc->disk = disk;
            doc->has_inode = true;
        }
        emit_open(self, doc);
        cb(ctx, 0, NULL, doc->id, false);
        goto done;
    }
    doc_task *t = pending_open(self, key);
    if (t) {
        req = task_wait(t, ctx);
        req->open_cb = cb;
        goto done;
    }
    t = task_new(self, TASK_OPEN);
    t->path = xstrdup(path.data);
    t->key = xstrdup(key);
    t->uri = xstrdup(uri);
    t->language_id = options->language_id ? xstrdup(options->language_id) : NULL;
    t->read_only = options->read_only;
    req = task_wait(t, ctx);
    req->open_cb = cb;
    if (is_large(&disk)) {
        task_start(self, t);
    } else {
        /* Small, missing or odd: read here and now (errors come from the read). */
        read_task(t, NULL);
        finish_open(self, t);
        task_free(t);
        req = NULL;
    }
done:
    free(real);
    buf_free(&path);
    return req;
}

/* ----- reload ---------------------------------------------------------------------------------------- */

/* Puts what the task read in place of the text, as one undoable step. */
static int apply_reload(document_service *svc, document *doc, doc_task *t, ecp_error *err)
{
    bool crlf = doc->crlf, bom = doc->bom;
    doc->crlf = t->file.crlf; /* listeners of the change see the file's line ends */
    doc->bom = t->file.bom;
    int rc = document__replace_all(svc, doc, t->file.data, t->file.len, err);
    if (rc != 0) {
        doc->crlf = crlf;
        doc->bom = bom;
        return rc;
    }
    matches_file(svc, doc, &t->file.disk);
    return 0;
}

/* A reload the file's watch started: nobody waits for it. */
static void finish_following(document_service *svc, doc_task *t)
{
    document *doc = document__find(svc, t->doc_id, NULL);
    if (!doc)
        return;
    if (doc->following == t)
        doc->following = NULL;
    if (doc->saves_pending) {
        /* A save began meanwhile: it either writes over the same file (and
         * the file is then ours again) or finds it changed and says so. */
        doc->recheck = true;
    } else if (t->status != 0) {
        doc_disk now;
        if (document__disk_stat(doc->path, &now) != 0)
            now = t->file.disk;
        flag_changed(svc, doc, &now);
    } else if (has_unsaved_edits(doc)) {
        flag_changed(svc, doc, &t->file.disk); /* edited while the file was read */
    } else {
        ecp_error err;
        if (apply_reload(svc, doc, t, &err) != 0) {
            ecp_log(svc->log, ECP_LOG_WARN, "cannot reload %s: %s", doc->uri, err.message);
            flag_changed(svc, doc, &t->file.disk);
        }
    }
    if (doc->recheck)
        check_disk(svc, doc);
}

static void finish_reload(document_service *svc, doc_task *t)
{
    if (t->automatic) {
        finish_following(svc, t);
        return;
    }
    if (!t->waiters)
        return; /* cancelled, perhaps after the read was done: change nothing */
    ecp_error err;
    int status = t->status;
    const ecp_error *e = &t->err;
    document *doc = document__find(svc, t->doc_id, &err);
    if (!doc) {
        status = ECP_ENOTFOUND;
        e = &err;
    } else if (status == 0 && !t->force && has_unsaved_edits(doc)) {
        /* Edited while the file was being read: keep the edits. */
        status = ecp_error_set(&err, ECP_ESTATE, "Document has unsaved changes");
        e = &err;
    } else if (status == 0 && (status = apply_reload(svc, doc, t, &err)) != 0) {
        e = &err;
    }
    for (document_request *req; (req = task_take_waiter(t));) {
        req->reload_cb(req->ctx, status, status ? e : NULL, doc ? doc->version : 0);
        free(req);
    }
}

/* Reads the file (here when small, else on the pool) and finishes the task. */
static document_request *reload_start(document_service *svc, doc_task *t)
{
    doc_disk disk;
    if (document__disk_stat(t->path, &disk) == 0 && is_large(&disk)) {
        task_start(svc, t);
        return t->waiters;
    }
    read_task(t, NULL);
    finish_reload(svc, t);
    task_free(t);
    return NULL;
}

static void follow_reload(document_service *svc, document *doc)
{
    doc_task *t = task_new(svc, TASK_RELOAD);
    t->path = xstrdup(doc->path);
    t->doc_id = xstrdup(doc->id);
    t->automatic = true;
    doc->following = t;
    reload_start(svc, t);
}

document_request *document_reload(document_service *self, const char *document_id, bool force, document_reload_cb cb,
                                  void *ctx)
{
    ecp_error err;
    document *doc = document__find(self, document_id, &err);
    if (!doc) {
        cb(ctx, err.status, &err, 0);
        return NULL;
    }
    if (!doc->path) {
        ecp_error_set(&err, ECP_ESTATE, "Document has no file to reload from");
        cb(ctx, err.status, &err, doc->version);
        return NULL;
    }
    if (!force && has_unsaved_edits(doc)) {
        ecp_error_set(&err, ECP_ESTATE, "Document has unsaved changes");
        cb(ctx, err.status, &err, doc->version);
        return NULL;
    }
    doc_task *t = task_new(self, TASK_RELOAD);
    t->path = xstrdup(doc->path);
    t->doc_id = xstrdup(doc->id);
    t->force = force;
    document_request *req = task_wait(t, ctx);
    req->reload_cb = cb;
    return reload_start(self, t);
}

/* ----- a whole new text, made off the loop ------------------------------------------------------------ */

struct document_replacement {
    char *doc_id;
    uint64_t owner;                /* whose cursor goes to the end */
    piece_tree_snapshot *old_text; /* what it replaces, to measure */
    unsigned encodings;            /* those in use when it began */
    bool measured;                 /* measure holds what the old text spans */
    doc_whole_measure measure;
    piece_tree *tree;              /* the new text, once built */
};

document_replacement *document_replacement_begin(document_service *self, const char *document_id, uint64_t owner,
                                                 ecp_error *err)
{
    document *doc = document__find_writable(self, document_id, err);
    if (!doc)
        return NULL;
    document_replacement *r = xcalloc(1, sizeof *r);
    r->old_text = piece_tree_snapshot_take(doc->tree);
    if (!r->old_text) {
        free(r);
        ecp_error_set(err, ECP_ENOMEM, "Out of memory while editing the document");
        return NULL;
    }
    r->doc_id = xstrdup(doc->id);
    r->owner = owner;
    r->measure.version = doc->version;
    r->encodings = self->encodings;
    return r;
}

int document_replacement_build(document_replacement *r, char *text, size_t len, ecp_error *err)
{
    assert(!r->tree);
    if (!(r->tree = piece_tree_new_owning(text, len))) {
        free(text);
        return ecp_error_set(err, ECP_ENOMEM, "Out of memory: cannot hold %zu bytes", len);
    }
    if (r->encodings == 1u << ECP_ENCODING_UTF8)
        return 0; /* columns in bytes only: the loop knows them without decoding */
    const piece_tree_snapshot *old = r->old_text;
    size_t old_len = piece_tree_snapshot_length(old);
    size_t last_start = piece_tree_snapshot_line_start(old, piece_tree_snapshot_line_count(old) - 1);
    r->measure.gone = document__snapshot_units(old, 0, old_len);
    r->measure.tail = document__snapshot_units(old, last_start, old_len - last_start);
    /* and the new text, for the undo that will take it away again */
    size_t new_last_start = piece_tree_line_start(r->tree, piece_tree_line_count(r->tree) - 1);
    r->measure.came_gone = document__units(r->tree, 0, len);
    r->measure.came_tail = document__units(r->tree, new_last_start, len - new_last_start);
    r->measure.came_known = true;
    r->measured = true;
    return 0;
}

int document_replacement_finish(document_service *self, document_replacement *r, uint64_t *version, ecp_error *err)
{
    document *doc;
    int rc = document__writable(self, r->doc_id, version, &doc, err);
    if (rc == 0 && !r->tree) {
        rc = ecp_error_set(err, ECP_EINVAL, "The new text was never built");
    } else if (rc == 0) {
        /* (The measure stands only for the text it was taken from: the
         * replacement checks the version.) */
        piece_tree *tree = r->tree;
        r->tree = NULL;
        rc = document__replace_tree(self, doc, r->owner, tree, DOC_CURSORS_DOCUMENT_END,
                                    r->measured ? &r->measure : NULL, err);
        if (version)
            *version = doc->version;
    }
    document_replacement_free(r);
    return rc;
}

const char *document_replacement_document(const document_replacement *r) { return r->doc_id; }

void document_replacement_free(document_replacement *r)
{
    if (!r)
        return;
    piece_tree_snapshot_release(r->old_text);
    piece_tree_free(r->tree);
    free_each(r->doc_id, r);
}

/* ----- save ------------------------------------------------------------------------------------------- */

/* Decides, as the save begins (the saves before it in its file's line are
 * done), what the file must still be for the save to go ahead: what the
 * document last knew of it, for a save to its own file. */
static void save_prepare(document_service *svc, doc_task *t)
{
    document *doc = document__find(svc, t->doc_id, NULL);
    t->check = !t->force && doc && doc->path && doc->disk_known && strcmp(doc->key, t->key) == 0;
    if (t->check)
        t->expect = doc->disk;
}

static void save_begin(document_service *svc, doc_task *t)
{
    save_prepare(svc, t);
    task_start(svc, t);
}

/* Starts a save now, or queues it behind the save of the same file that is
 * writing. */
static void save_enqueue(document_service *svc, doc_task *t)
{
    for (doc_task *w = svc->saving; w; w = w->next_save) {
        if (strcmp(w->key, t->key) == 0) {
            while (w->after)
                w = w->after;
            w->after = t;
            return;
        }
    }
    save_begin(svc, t);
}

static void finish_save(document_service *svc, doc_task *t)
{
    document *doc = document__find(svc, t->doc_id, NULL);
    if (doc && doc->saves_pending)
        doc->saves_pending--;
    if (doc && t->status == 0) {
        doc->saved_id = t->state_id;
        if (t->uri) {
            stop_following(svc, doc);
            char *old_key = doc->key;
            doc->key = t->key;
            key_index_drop(svc, doc, old_key);
            key_index_add(svc, doc);
            free(old_key);
            free(doc->uri);
            free(doc->path);
            doc->uri = t->uri;
            doc->path = t->path;
            t->uri = t->path = t->key = NULL;
            doc->format_known = false; /* another file: its own .editorconfig */
            doc->format_lookup = NULL; /* one for the old path lands for nobody */
        }
        matches_file(svc, doc, &t->written);
        ECP_EMIT(&svc->listeners, document_listener, on_save, doc->id, doc->uri, doc->version);
    } else if (doc && t->put_back && t->check) {
        /* Our own failed write touched the file we knew, and put it back. */
        doc->disk = t->written;
    } else if (doc && t->status == ECP_ECONFLICT) {
        doc_disk now;
        if (document__disk_stat(doc->path, &now) == 0)
            flag_changed(svc, doc, &now);
    }
    if (t->status != 0)
        ecp_log(svc->log, t->status == ECP_ECONFLICT ? ECP_LOG_INFO : ECP_LOG_WARN, "%s%s%s", t->err.message,
                t->status == ECP_ECONFLICT ? ": " : "", t->status == ECP_ECONFLICT ? t->path : "");
    const char *uri = doc ? doc->uri : t->uri ? t->uri : t->reply_uri;
    for (document_request *req; (req = task_take_waiter(t));) {
        req->save_cb(req->ctx, t->status, t->status ? &t->err : NULL, doc ? doc->version : 0, uri);
        free(req);
    }
    /* The next save of this file, now that this one is on disk. */
    doc_task *next = t->after;
    t->after = NULL;
    if (next)
        save_begin(svc, next);
    if (doc && !doc->saves_pending && doc->recheck)
        check_disk(svc, doc);
}

document_request *document_save_with(document_service *self, const char *document_id,
                                     const document_save_options *options, document_save_cb cb, void *ctx)
{
    ecp_error err;
    buf path = BUF_INIT;
    char *key = NULL;
    document_request *req = NULL;
    const char *uri = options ? options->uri : NULL;
    document *doc = document__find(self, document_id, &err);
    if (!doc) {
        cb(ctx, err.status, &err, 0, NULL);
        goto done;
    }
    if (uri) {
        if (!is_file_uri(uri)) {
            ecp_error_set(&err, ECP_ENOPROVIDER, "Cannot save to %s: only file URIs can be saved to", uri);
            cb(ctx, err.status, &err, doc->version, doc->uri);
            goto done;
        }
        if (uri_file_path(uri, strlen(uri), &path, &err) != 0) {
            cb(ctx, err.status, &err, doc->version, doc->uri);
            goto done;
        }
        doc_disk disk;
        key = resolve_path(path.data, &disk);
        document *other = find_file(self, key, &disk);
        if (other && other != doc) {
            ecp_error_set(&err, ECP_EEXIST, "Cannot save to %s: another open document has that uri", uri);
            cb(ctx, err.status, &err, doc->version, doc->uri);
            goto done;
        }
    } else if (!doc->path) {
        ecp_error_set(&err, ECP_ESTATE, "Document has no file: save it with a uri");
        cb(ctx, err.status, &err, doc->version, doc->uri);
        goto done;
    }
    document__format_for_save(self, doc, uri ? path.data : doc->path);
    /* The text as it is now, written on the pool: O(pieces) here, not a copy. */
    document_snapshot *snap = document__snapshot_of(doc, &err);
    if (!snap) {
        cb(ctx, err.status, &err, doc->version, doc->uri);
        goto done;
    }
    doc_task *t = task_new(self, TASK_SAVE);
    t->doc_id = xstrdup(doc->id);
    t->snap = snap;
    t->state_id = document__state_id(doc);
    t->reply_uri = xstrdup(doc->uri);
    t->force = options && options->force;
    doc->snapshot_id = t->state_id;
    doc->saves_pending++;
    if (uri) {
        t->uri = xstrdup(uri);
        t->path = xstrdup(path.data);
        t->key = key;
        key = NULL;
    } else {
        t->path = xstrdup(doc->path);
        t->key = xstrdup(doc->key);
    }
    req = task_wait(t, ctx);
    req->save_cb = cb;
    /* Always on the pool: fsync can take long on any size. */
    save_enqueue(self, t);
done:
    free(key);
    buf_free(&path);
    return req;
}

document_request *document_save(document_service *self, const char *document_id, const char *uri,
                                document_save_cb cb, void *ctx)
{
    document_save_options options = {.uri = uri};
    return document_save_with(self, document_id, &options, cb, ctx);
}

/* ----- close ------------------------------------------------------------------------------------------------ */

int document_close(document_service *self, const char *document_id, ecp_error *err)
{
    void *found = NULL;
    if (!document_id || !ecp_map_remove(self->by_id, document_id, &found))
        return ecp_error_set(err, ECP_ENOTFOUND, "Document not found");
    document *doc = found;
    size_t i = 0;
    while (self->docs[i] != doc)
        i++;
    memmove(self->docs + i, self->docs + i + 1, (self->doc_count - i - 1) * sizeof *self->docs);
    self->doc_count--;
    key_index_drop(self, doc, doc->key);
    stop_following(self, doc);
    ECP_EMIT(&self->listeners, document_listener, on_close, doc->id, doc->uri);
    doc_free(doc);
    return 0;
}
