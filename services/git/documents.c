/* documents: every open document's changes against HEAD, kept ready for a
 * gutter.
 *
 * `document/viewport` asks for the changes of the visible lines while its
 * answer is written on the loop, where libgit2 must never run. So the
 * service follows the open documents (document events) and keeps, for each,
 * the changes its text had against HEAD when they were last computed: a
 * short job diffs a snapshot off the loop after the text changes (debounced,
 * so that typing is one diff, not one per key) and after HEAD or the index of
 * the document's repository moves (heard through the same watches as the
 * status cache). One job per document is in flight at most; a change heard
 * while it runs asks for another once it ends. What the viewport shows is
 * therefore the latest result, which may lag the text by a debounce and a
 * diff, as syntax tokens lag the last parse.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#include "document/interface.h"
#include "file/interface.h"

/* Quiet time after the last edit before a document is diffed again. */
#define DEBOUNCE_MS 150

struct gitsvc__doc {
    char *id;
    char *root;   /* the repository it was last found in; NULL: none (yet) */
    bool diffed;  /* a diff has ended: root says where the document is */
    bool wanted;  /* the text or the repository changed since the last diff began */
    ecp_job *job; /* the diff in flight, or NULL */
    gitsvc_line_change *changes; /* malloc'd, by line */
    size_t count;
    gitsvc__doc *next;
};

typedef struct doc_job {
    gitsvc *svc;
    char *id;
    document_snapshot *snap;
    char *root, *gitdir; /* outputs: the repository, when there is one */
    arena mem;
    gitsvc_line_change *changes;
    size_t count;
    int rc;
    gitsvc_error err;
} doc_job;

static gitsvc__doc *find_doc(gitsvc *self, const char *id)
{
    return self->doc_ids ? ecp_map_get(self->doc_ids, id) : NULL;
}

static void doc_free(gitsvc__doc *d)
{
    free_each(d->id, d->root, d->changes, d);
}

/* ----- the diff job -------------------------------------------------------------------------- */

static void doc_work(ecp_job *job, unsigned item)
{
    (void)item;
    doc_job *j = ecp_job_data(job);
    if ((j->rc = gitsvc__check_cancel(job, &j->err)))
        return;
    const char *uri = document_snapshot_uri(j->snap);
    buf path = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(uri, strlen(uri), &path, &e) != 0) {
        buf_free(&path);
        return; /* not a file: in no repository, no changes */
    }
    gitsvc_repo *repo = NULL;
    const char *rel = NULL;
    if (gitsvc_repo_open(path.data, &repo, NULL, &j->err) != 0) {
        buf_free(&path);
        return; /* in no repository: no changes */
    }
    j->root = xstrdup(gitsvc_repo_root(repo));
    j->gitdir = xstrdup(gitsvc_repo_gitdir(repo));
    if ((j->rc = gitsvc_repo_relative(repo, path.data, &j->mem, &rel, &j->err)) == 0)
        j->rc = gitsvc_diff_snapshot(repo, rel, j->snap, &j->mem, &j->changes, &j->count, &j->err);
    gitsvc_repo_close(repo);
    buf_free(&path);
}

static void arm(gitsvc *self);

static void doc_done(ecp_job *job)
{
    doc_job *j = ecp_job_data(job);
    gitsvc__doc *d = find_doc(j->svc, j->id);
    if (!d || d->job != job)
        return; /* closed meanwhile */
    d->job = NULL;
    if (j->rc == 0 && !ecp_job_cancelled(job)) {
        free(d->changes);
        d->changes = j->count ? xmalloc(j->count * sizeof *d->changes) : NULL;
        if (j->count)
            memcpy(d->changes, j->changes, j->count * sizeof *d->changes);
        d->count = j->count;
        free(d->root);
        d->root = j->root ? xstrdup(j->root) : NULL;
        d->diffed = true;
        /* from now on HEAD and the index of its repository are watched */
        if (j->root)
            gitsvc_track(j->svc, j->root, j->gitdir);
    } else if (j->rc && !ecp_job_cancelled(job)) {
        ecp_log(j->svc->log, ECP_LOG_DEBUG, "git: changes of %s: %s", j->id, j->err.message);
    }
    if (d->wanted)
        arm(j->svc);
}

static void doc_job_free(void *data)
{
    doc_job *j = data;
    document_snapshot_release(j->snap);
    free_each(j->id, j->root, j->gitdir);
    arena_free(&j->mem);
    free(j);
}

static const ecp_job_type doc_type = {"git.documentChangesCache", ECP_LANE_SHORT, false, doc_work, doc_done,
                                      doc_job_free};

static void start_diff(gitsvc *self, gitsvc__doc *d)
{
    ecp_error e;
    document_snapshot *snap = document_snapshot_take(self->documents, d->id, &e);
    d->wanted = false;
    if (!snap)
        return;
    doc_job *j = xcalloc(1, sizeof *j);
    j->svc = self;
    j->id = xstrdup(d->id);
    j->snap = snap;
    arena_init(&j->mem);
    gitsvc_start_libgit2(self);
    d->job = ecp_job_new(self->jobs, &doc_type, j);
    ecp_job_start(d->job, 1);
}

static void on_quiet(uv_timer_t *timer)
{
    gitsvc *self = timer->data;
    for (gitsvc__doc *d = self->docs; d; d = d->next)
        if (d->wanted && !d->job)
            start_diff(self, d);
}

/* (Re)starts the quiet time: every document that wants a diff and has none
 * in flight gets one when it ends. */
static void arm(gitsvc *self)
{
    if (self->quiet)
        uv_timer_start(self->quiet, on_quiet, DEBOUNCE_MS, 0);
}

/* ----- following documents -------------------------------------------------------------------- */

static void doc_opened(void *ctx, const document_info *info)
{
    gitsvc *self = ctx;
    gitsvc__doc *d = find_doc(self, info->document_id);
    if (!d) {
        d = xcalloc(1, sizeof *d);
        d->id = xstrdup(info->document_id);
        d->next = self->docs;
        self->docs = d;
        ecp_map_set(self->doc_ids, d->id, d, NULL);
    }
    d->wanted = true;
    arm(self);
}

static void doc_changed(void *ctx, const document_change_event *event)
{
    gitsvc *self = ctx;
    gitsvc__doc *d = find_doc(self, event->document_id);
    /* a document in no repository has nothing to diff until it is saved elsewhere */
    if (!d || (d->diffed && !d->root))
        return;
    d->wanted = true;
    arm(self);
}

static void doc_closed(void *ctx, const char *document_id, const char *uri)
{
    (void)uri;
    gitsvc *self = ctx;
    for (gitsvc__doc **p = &self->docs; *p; p = &(*p)->next) {
        if (strcmp((*p)->id, document_id))
            continue;
        gitsvc__doc *d = *p;
        *p = d->next;
        ecp_map_remove(self->doc_ids, document_id, NULL);
        if (d->job)
            ecp_job_cancel(d->job); /* its done finds no document and keeps nothing */
        doc_free(d);
        return;
    }
}

/* Saved as another file: it may now be in another repository. */
static void doc_saved(void *ctx, const char *document_id, const char *uri, uint64_t version)
{
    (void)uri;
    (void)version;
    gitsvc *self = ctx;
    gitsvc__doc *d = find_doc(self, document_id);
    if (!d)
        return;
    d->wanted = true;
    arm(self);
}

static const document_listener doc_listener = {
    .on_open = doc_opened, .on_change = doc_changed, .on_close = doc_closed, .on_save = doc_saved,
};

static void quiet_closed(uv_handle_t *h)
{
    free(h);
}

void gitsvc__documents_follow(gitsvc *self)
{
    if (!self->documents)
        return;
    self->quiet = xmalloc(sizeof *self->quiet);
    uv_timer_init(ecp_pool_loop(self->pool), self->quiet);
    self->quiet->data = self;
    self->doc_ids = ecp_map_new();
    document_subscribe(self->documents, &doc_listener, self);
    document_list(self->documents, doc_opened, self);
}

void gitsvc__documents_stop(gitsvc *self)
{
    if (!self->documents)
        return;
    document_unsubscribe(self->documents, &doc_listener, self);
    while (self->docs) {
        gitsvc__doc *d = self->docs;
        self->docs = d->next;
        doc_free(d);
    }
    ecp_map_free(self->doc_ids);
    self->doc_ids = NULL;
    if (self->quiet) {
        uv_timer_stop(self->quiet);
        uv_close((uv_handle_t *)self->quiet, quiet_closed);
        self->quiet = NULL;
    }
}

void gitsvc__documents_repo_changed(gitsvc *self, const char *root)
{
    bool any = false;
    for (gitsvc__doc *d = self->docs; d; d = d->next) {
        if (d->root && !strcmp(d->root, root)) {
            d->wanted = true;
            any = true;
        }
    }
    if (any)
        arm(self);
}

/* ----- what the viewport reads ------------------------------------------------------------------- */

size_t gitsvc_document_cached_changes(gitsvc *self, const char *document_id, size_t first, size_t last,
                                      const gitsvc_line_change **out)
{
    *out = NULL;
    gitsvc__doc *d = find_doc(self, document_id);
    if (!d || !d->count)
        return 0;
    /* changes are sorted by line: [lo, hi) are those in lines first+1 .. last (1-based) */
    size_t lo = 0;
    while (lo < d->count && d->changes[lo].line < first + 1)
        lo++;
    size_t hi = lo;
    while (hi < d->count && d->changes[hi].line <= last)
        hi++;
    *out = d->changes + lo;
    return hi - lo;
}

/* ----- the unsaved text of a file ------------------------------------------------------------------ */

typedef struct doc_lookup {
    const char *path;
    char *document_id;
} doc_lookup;

static void find_document(void *ctx, const document_info *info)
{
    doc_lookup *l = ctx;
    if (l->document_id)
        return;
    buf p = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(info->uri, strlen(info->uri), &p, &e) == 0 && !strcmp(p.data, l->path))
        l->document_id = xstrdup(info->document_id);
    buf_free(&p);
}

document_snapshot *gitsvc__document_snapshot(gitsvc *self, const char *document_id, const char *path)
{
    if (!self->documents)
        return NULL;
    char *id = NULL;
    if (document_id) {
        id = xstrdup(document_id);
    } else if (path[0] == '/') {
        /* an absolute path names the document open on that file, if any */
        buf norm = BUF_INIT;
        file_path_normalize(&norm, path, strlen(path));
        doc_lookup l = {norm.data, NULL};
        document_list(self->documents, find_document, &l);
        id = l.document_id;
        buf_free(&norm);
    }
    ecp_error e;
    document_snapshot *snap = id ? document_snapshot_take(self->documents, id, &e) : NULL;
    free(id);
    return snap;
}
