/* local: the service, the repositories it knows, their cached status and
 * what their watches hear.
 *
 * A repository becomes known the first time an operation of the service
 * reaches it: the service then watches its work tree (and its git directory,
 * when that lies elsewhere) through the file service. Every change a watch
 * reports drops the cached status and is sorted by what it touched: the
 * index or a file of the work tree is a status change, HEAD a branch change,
 * a ref a commit, the stash ref a stash; lock files, objects and logs are
 * ignored (they never change what a client sees by themselves). Listeners
 * hear each kind once until the status is computed again, so that a checkout
 * of a thousand files is one notification, not a thousand.
 *
 * The cache keeps one status per repository, stored only when nothing was
 * heard while it was computed (a change made during the walk may or may not
 * be in it). Everything here runs on the loop; the status itself is computed
 * by a job.
 */
#include "internal.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "document/interface.h"
#include "file/interface.h"
#include "session/interface.h"

/* ----- the service ------------------------------------------------------------------- */

/* git.networkTimeoutMs: the deadline of transfers that start from now on. */
static void read_transfer_timeout(gitsvc *self)
{
    double ms = self->session ? session_setting_number(self->session, "git.networkTimeoutMs", GITSVC_TRANSFER_TIMEOUT_MS)
                              : GITSVC_TRANSFER_TIMEOUT_MS;
    self->transfer_timeout_ms = ms >= 1 ? (uint64_t)ms : GITSVC_TRANSFER_TIMEOUT_MS;
}

static void setting_changed(void *ctx, const char *key, const char *value_json)
{
    (void)value_json;
    if (strcmp(key, "git.networkTimeoutMs") == 0)
        read_transfer_timeout(ctx);
}

static const session_listener settings_listener = {.on_setting = setting_changed};

gitsvc *gitsvc_new(ecp_pool *pool, ecp_logger *log, struct file_service *files, struct document_service *documents,
                   struct session_service *session)
{
    gitsvc *self = calloc(1, sizeof *self);
    if (!self)
        return NULL;
    self->pool = pool;
    self->log = log;
    self->files = files;
    self->documents = documents;
    self->session = session;
    self->jobs = ecp_job_set_new(pool);
    self->listeners = (ecp_listeners)ECP_LISTENERS_INIT;
    read_transfer_timeout(self);
    if (session)
        session_subscribe(session, &settings_listener, self);
    gitsvc__documents_follow(self);
    return self;
}

void gitsvc_start_libgit2(gitsvc *self)
{
    if (self->libgit2_started)
        return;
    self->libgit2_started = true;
    /* Opened here, at the first operation, not at start (lazy_git2.h). When
     * it cannot be, every operation fails in gitsvc_repo_open with this
     * message. */
    ecp_error load_err;
    if (gitsvc__git2_load(&load_err) < 0) {
        if (self->log)
            ecp_log(self->log, ECP_LOG_ERROR, "git: %s", load_err.message);
        return;
    }
    /* It fails only when out of memory; the job's own libgit2 calls then
     * fail with their errors, so nothing more is needed here. */
    if (git_libgit2_init() < 0 && self->log)
        ecp_log(self->log, ECP_LOG_ERROR, "git: libgit2 could not start");
}

static void known_free(gitsvc__known *k)
{
    if (k->svc->files) {
        if (k->watch_root)
            file_watch_remove(k->svc->files, k->watch_root);
        if (k->watch_gitdir)
            file_watch_remove(k->svc->files, k->watch_gitdir);
    }
    for (size_t i = 0; i < k->alias_count; i++)
        free(k->aliases[i]);
    free(k->aliases);
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++) {
        arena_free(&k->status_mem[i]);
        gitsvc_repo_close(k->kept[i]);
    }
    ecp_shared_unref(k->json);
    free_each(k->root, k->gitdir, k);
}

void gitsvc_free(gitsvc *self)
{
    if (!self)
        return;
    if (self->session)
        session_unsubscribe(self->session, &settings_listener, self);
    /* jobs first: a status job's done would store into what follows */
    ecp_job_set_close(self->jobs);
    gitsvc__documents_stop(self);
    gitsvc__tokens_orphan(self);
    while (self->known) {
        gitsvc__known *k = self->known;
        self->known = k->next;
        known_free(k);
    }
    ecp_listeners_free(&self->listeners);
    free(self);
    /* libgit2 is left initialised when a job started it (its init counts references, so a second
     * service only adds one): it keeps an error record per thread that only
     * the thread's exit frees, and the pool's threads outlive the service.
     * Shutting libgit2 down under them would strand those records at every
     * service a process creates; left alone they stay reachable and go with
     * the process. */
}

/* ----- events -------------------------------------------------------------------------------- */

const char *gitsvc_change_kind_name(gitsvc_change_kind kind)
{
    switch (kind) {
    case GITSVC_CHANGE_BRANCH: return "branch";
    case GITSVC_CHANGE_COMMIT: return "commit";
    case GITSVC_CHANGE_STASH: return "stash";
    default: return "status";
    }
}

void gitsvc_subscribe(gitsvc *self, const gitsvc_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

bool gitsvc_unsubscribe(gitsvc *self, const gitsvc_listener *listener, void *ctx)
{
    return ecp_listeners_remove(&self->listeners, listener, ctx);
}

static void drop_status(gitsvc__known *k)
{
    k->generation++;
    k->status = NULL;
    ecp_shared_unref(k->json);
    k->json = NULL;
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++)
        arena_free(&k->status_mem[i]);
}

/* Something in the git directory changed: what the kept repository cached
 * of it may be stale. */
static void drop_kept(gitsvc__known *k)
{
    k->generation++; /* and one lent to a status now at work is not kept either */
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++) {
        gitsvc_repo_close(k->kept[i]);
        k->kept[i] = NULL;
    }
}

static void announce(gitsvc__known *k, const char *path, gitsvc_change_kind kind, bool always)
{
    unsigned bit = 1u << kind;
    if (!always && (k->announced & bit))
        return;
    k->announced |= bit;
    gitsvc_change ch = {k->root, path, kind};
    ECP_EMIT(&k->svc->listeners, gitsvc_listener, on_change, &ch);
}

/* rel of path under base, or NULL. */
static const char *under(const char *path, const char *base)
{
    size_t n = strlen(base);
    if (strncmp(path, base, n) || (path[n] != '/' && path[n] != '\0'))
        return NULL;
    return path[n] ? path + n + 1 : path + n;
}

static bool starts(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

/* What a change of a path inside the git directory means; false: nothing. */
static bool gitdir_kind(const char *rel, gitsvc_change_kind *kind)
{
    size_t n = strlen(rel);
    if (n >= 5 && !strcmp(rel + n - 5, ".lock"))
        return false;
    if (!strcmp(rel, "HEAD")) {
        *kind = GITSVC_CHANGE_BRANCH;
    } else if (!strcmp(rel, "index") || !strcmp(rel, "MERGE_HEAD")) {
        *kind = GITSVC_CHANGE_STATUS;
    } else if (starts(rel, "refs/stash") || starts(rel, "logs/refs/stash")) {
        *kind = GITSVC_CHANGE_STASH;
    } else if (starts(rel, "refs/") || !strcmp(rel, "packed-refs")) {
        *kind = GITSVC_CHANGE_COMMIT;
    } else {
        return false;
    }
    return true;
}

static void on_watch(void *ctx, const file_change *change)
{
    gitsvc__known *k = ctx;
    gitsvc_change_kind kind = GITSVC_CHANGE_STATUS;
    const char *rel = under(change->path, k->gitdir);
    if (rel) {
        drop_kept(k);
        if (!gitdir_kind(rel, &kind))
            return;
    } else if (!under(change->path, k->root)) {
        return;
    }
    drop_status(k);
    if (rel)
        gitsvc__documents_repo_changed(k->svc, k->root); /* HEAD, a ref or the index: what documents diff against */
    announce(k, change->path, kind, false);
}

static gitsvc__known *find_known(gitsvc *self, const char *root)
{
    for (gitsvc__known *k = self->known; k; k = k->next)
        if (!strcmp(k->root, root))
            return k;
    return NULL;
}

/* A repository's watch covers its tree a slice per loop turn (a big work
 * tree would otherwise stall every client while it is set up); what changed
 * in the part not yet covered was not seen, so the status computed meanwhile
 * is dropped once the whole tree is. */
static void on_watch_ready(void *ctx, uint64_t id)
{
    (void)id;
    drop_status(ctx);
}

static gitsvc__known *track(gitsvc *self, const char *root, const char *gitdir)
{
    gitsvc__known *k = find_known(self, root);
    if (k)
        return k;
    k = xcalloc(1, sizeof *k);
    k->svc = self;
    k->root = xstrdup(root);
    k->gitdir = xstrdup(gitdir);
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++)
        arena_init(&k->status_mem[i]);
    if (self->files) {
        ecp_error err;
        /* not files.exclude: .git itself must be followed */
        const file_watch_options options = {.recursive = true, .ready = on_watch_ready};
        if (file_watch_start(self->files, root, &options, on_watch, k, &k->watch_root, &err) < 0) {
            k->watch_root = 0;
            ecp_log(self->log, ECP_LOG_WARN, "git: cannot watch %s: %s", root, err.message);
        }
        if (!under(gitdir, root) &&
            file_watch_start(self->files, gitdir, &options, on_watch, k, &k->watch_gitdir, &err) < 0) {
            k->watch_gitdir = 0;
            ecp_log(self->log, ECP_LOG_WARN, "git: cannot watch %s: %s", gitdir, err.message);
        }
    }
    k->next = self->known;
    self->known = k;
    return k;
}

void gitsvc_track(gitsvc *self, const char *root, const char *gitdir)
{
    track(self, root, gitdir);
}

void gitsvc_changed(gitsvc *self, const char *root, const char *gitdir, gitsvc_change_kind kind)
{
    gitsvc__known *k = track(self, root, gitdir);
    drop_status(k);
    drop_kept(k);
    gitsvc__documents_repo_changed(self, k->root);
    announce(k, root, kind, true);
}

/* ----- the cached status -------------------------------------------------------------------- */

/* GITSVC_STATUS_ITEMS items, each on a repository of its own. The first
 * reads HEAD against the index (and the branch) and the conflicts: usually
 * answered from the index's own tree (nothing staged) in a millisecond. The
 * work tree against the index, nearly all of the time, is cut into parts
 * (gitsvc__status_plan) by the first item to get there, and every item then
 * takes parts until none is left. No item ever waits for another: one that
 * finds no thread to run on only finds the parts taken when it does, and
 * two that plan at once keep the plan published first. Done joins the parts
 * and merges. */
#define STATUS_PARTS_MAX (8 * GITSVC_STATUS_ITEMS) /* small parts even out threads that start late or are preempted */
#define STATUS_PART_MIN 1000                       /* index entries: less is not worth a thread */

typedef struct status_job {
    gitsvc *svc;
    char *path;
    gitsvc_status_cb cb;
    void *ctx;
    gitsvc_status_format format; /* may be NULL */
    void *fctx;
    char *root, *gitdir;
    /* per item: the known repository's kept one, lent; or the one the item opened */
    gitsvc_repo *repos[GITSVC_STATUS_ITEMS];
    uint64_t generation; /* of the known repository when the work began; UINT64_MAX: unknown */
    arena mem[GITSVC_STATUS_ITEMS]; /* per item, kept by the cache as they are */
    gitsvc_status staged;           /* the first item's: staged, the branch */
    gitsvc_status conflicts;        /* the first item's */
    _Atomic(gitsvc__status_plan *) plan; /* NULL until published, then never changed */
    atomic_size_t next_part;             /* the next part to take */
    int rc[GITSVC_STATUS_ITEMS];
    gitsvc_error err[GITSVC_STATUS_ITEMS];
    atomic_uint items_left; /* the last item to end joins the parts and formats the answer */
    /* the outcome, the last item's */
    int outcome;
    gitsvc_error *outcome_err;
    gitsvc_status *st; /* in mem[0] */
    buf json;          /* the formatter's */
} status_job;

/* The plan the items share: the one already published, else repo's, unless
 * another item published one meanwhile. */
static gitsvc__status_plan *shared_plan(status_job *j, gitsvc_repo *repo)
{
    gitsvc__status_plan *plan = atomic_load_explicit(&j->plan, memory_order_acquire);
    if (plan)
        return plan;
    gitsvc__status_plan *mine = gitsvc__status_plan_new(repo, STATUS_PARTS_MAX, STATUS_PART_MIN);
    if (atomic_compare_exchange_strong_explicit(&j->plan, &plan, mine, memory_order_acq_rel, memory_order_acquire))
        return mine;
    gitsvc__status_plan_free(mine);
    return plan;
}

static void status_item(ecp_job *job, unsigned item)
{
    status_job *j = ecp_job_data(job);
    int *rc = &j->rc[item];
    gitsvc_error *err = &j->err[item];
    if ((*rc = gitsvc__check_cancel(job, err)))
        return;
    gitsvc__status_plan *plan = atomic_load_explicit(&j->plan, memory_order_acquire);
    if (item > 0 && plan && atomic_load(&j->next_part) >= plan->part_count)
        return; /* all taken: no repository to open for nothing */
    if (!j->repos[item] && (*rc = gitsvc_repo_open(j->path, &j->repos[item], NULL, err)))
        return;
    gitsvc_repo *repo = j->repos[item];
    if (item == 0) {
        j->root = xstrdup(gitsvc_repo_root(repo));
        j->gitdir = xstrdup(gitsvc_repo_gitdir(repo));
        if ((*rc = gitsvc__status_staged(repo, job, &j->mem[0], &j->staged, err)) ||
            (*rc = gitsvc__status_conflicts(repo, &j->mem[0], &j->conflicts, err)))
            return;
    }
    plan = shared_plan(j, repo);
    for (size_t part; (part = atomic_fetch_add(&j->next_part, 1)) < plan->part_count;) {
        if ((*rc = gitsvc__status_workdir(repo, job, &j->mem[item], &plan->parts[part], &plan->results[part], err)))
            return;
        plan->complete[part] = true;
    }
}

/* 0 when every part was answered and the first item did its own work: an
 * item that failed before it took a part (its repository would not open)
 * changed nothing. Otherwise the first failure. */
static int status_outcome(status_job *j, gitsvc_error **err)
{
    *err = &j->err[0];
    if (j->rc[0])
        return j->rc[0];
    gitsvc__status_plan *plan = atomic_load_explicit(&j->plan, memory_order_acquire);
    bool complete = plan != NULL;
    for (size_t i = 0; complete && i < plan->part_count; i++)
        complete = plan->complete[i];
    if (complete)
        return 0;
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++)
        if (j->rc[i]) {
            *err = &j->err[i];
            return j->rc[i];
        }
    return gitsvc__fail(*err, ECP_ECANCELED, GITSVC_COMMAND_FAILED, "Request cancelled");
}

/* On the thread of the last item to end: the parts joined and merged into
 * one status, and its answer rendered, so that a status of a large tree
 * costs the loop nothing but the callback. */
static void status_finish(status_job *j)
{
    j->outcome = status_outcome(j, &j->outcome_err);
    if (j->outcome)
        return;
    gitsvc__status_plan *plan = atomic_load_explicit(&j->plan, memory_order_acquire);
    gitsvc_status workdir = j->conflicts;
    gitsvc__status_join(&workdir, plan->results, plan->part_count, &j->mem[0]);
    gitsvc_status *st = arena_alloc(&j->mem[0], sizeof *st);
    *st = j->staged;
    gitsvc__status_merge(st, &workdir, &j->mem[0]);
    j->st = st;
    if (j->format)
        j->format(j->fctx, st, &j->json);
}

static void status_work(ecp_job *job, unsigned item)
{
    status_job *j = ecp_job_data(job);
    status_item(job, item);
    if (atomic_fetch_sub_explicit(&j->items_left, 1, memory_order_acq_rel) == 1)
        status_finish(j);
}

static void add_alias(gitsvc__known *k, const char *path)
{
    for (size_t i = 0; i < k->alias_count; i++)
        if (!strcmp(k->aliases[i], path))
            return;
    if (k->alias_count == 64)
        return; /* enough: the others compute their status each time */
    k->aliases = xrealloc(k->aliases, (k->alias_count + 1) * sizeof *k->aliases);
    k->aliases[k->alias_count++] = xstrdup(path);
}

static void status_done(ecp_job *job)
{
    status_job *j = ecp_job_data(job);
    gitsvc_error *err = j->outcome_err;
    int rc = j->outcome;
    if (rc == 0 && ecp_job_cancelled(job))
        rc = gitsvc__fail(err, ECP_ECANCELED, GITSVC_COMMAND_FAILED, "Request cancelled");
    if (rc) {
        j->cb(j->ctx, rc, err, NULL, NULL, NULL);
        return;
    }
    gitsvc_status *st = j->st;
    ecp_shared *json = NULL;
    if (j->json.data) {
        size_t len = j->json.len;
        json = ecp_shared_adopt(buf_detach(&j->json), len);
    }
    /* Kept only when the repository was already watched when the walk began
     * and nothing was heard since: a change made during the walk may or may
     * not be in it, and one seen for the first time was not watched at all. */
    gitsvc__known *k = find_known(j->svc, j->root);
    bool fresh = k && k->generation == j->generation;
    if (!k)
        k = track(j->svc, j->root, j->gitdir);
    add_alias(k, j->path);
    if (fresh) {
        for (int i = 0; i < GITSVC_STATUS_ITEMS; i++) {
            arena_free(&k->status_mem[i]);
            k->status_mem[i] = j->mem[i];
            arena_init(&j->mem[i]);
            /* kept only when watched: nothing else would tell it is stale */
            if (!k->kept[i] && (k->watch_root || k->watch_gitdir)) {
                k->kept[i] = j->repos[i];
                j->repos[i] = NULL;
            }
        }
        k->status = st;
        ecp_shared_unref(k->json); /* a forced status replaces a fresh one */
        k->json = json ? ecp_shared_ref(json) : NULL;
        k->json_format = j->format;
        k->json_fctx = j->fctx;
        k->announced = 0;
    }
    j->cb(j->ctx, 0, NULL, k->root, st, json);
    ecp_shared_unref(json);
}

static void status_free(void *data)
{
    status_job *j = data;
    free_each(j->path, j->root, j->gitdir);
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++) {
        gitsvc_repo_close(j->repos[i]);
        arena_free(&j->mem[i]);
    }
    gitsvc__status_plan_free(atomic_load_explicit(&j->plan, memory_order_acquire));
    buf_free(&j->json);
    free(j);
}

static const ecp_job_type status_type = {"git.status", ECP_LANE_LONG, false, status_work, status_done, status_free};

static gitsvc__known *known_for_path(gitsvc *self, const char *path)
{
    for (gitsvc__known *k = self->known; k; k = k->next) {
        if (!strcmp(k->root, path))
            return k;
        for (size_t i = 0; i < k->alias_count; i++)
            if (!strcmp(k->aliases[i], path))
                return k;
    }
    return NULL;
}

/* The cached status's answer as format renders it: rendered again (on the
 * loop, once) only when the cache holds another formatter's. */
static ecp_shared *cached_json(gitsvc__known *k, gitsvc_status_format format, void *fctx)
{
    if (!format)
        return NULL;
    if (!k->json || k->json_format != format || k->json_fctx != fctx) {
        buf out = BUF_INIT;
        format(fctx, k->status, &out);
        size_t len = out.len;
        ecp_shared_unref(k->json);
        k->json = ecp_shared_adopt(buf_detach(&out), len);
        k->json_format = format;
        k->json_fctx = fctx;
    }
    return ecp_shared_ref(k->json);
}

ecp_job *gitsvc_status_start(gitsvc *self, const gitsvc_status_args *args, gitsvc_status_cb cb, void *ctx)
{
    const char *path = args->where.path;
    gitsvc__known *k = known_for_path(self, path);
    if (k && k->status && !args->force) {
        ecp_shared *json = cached_json(k, args->format, args->fctx);
        cb(ctx, 0, NULL, k->root, k->status, json);
        ecp_shared_unref(json);
        return NULL;
    }
    status_job *j = xcalloc(1, sizeof *j);
    j->svc = self;
    j->path = xstrdup(path);
    j->cb = cb;
    j->ctx = ctx;
    j->format = args->format;
    j->fctx = args->fctx;
    j->generation = k ? k->generation : UINT64_MAX;
    for (int i = 0; i < GITSVC_STATUS_ITEMS; i++) {
        if (k) {
            j->repos[i] = k->kept[i]; /* lent: back in done, when nothing changed meanwhile */
            k->kept[i] = NULL;
        }
        arena_init(&j->mem[i]);
    }
    atomic_init(&j->plan, NULL);
    atomic_init(&j->next_part, 0);
    atomic_init(&j->items_left, GITSVC_STATUS_ITEMS);
    buf_init(&j->json);
    gitsvc_start_libgit2(self);
    ecp_job *job = ecp_job_new(self->jobs, &status_type, j);
    if (args->where.serve)
        ecp_job_serve(job, args->where.serve);
    ecp_job_start(job, GITSVC_STATUS_ITEMS);
    return job;
}

/* ----- a document's changes against HEAD ------------------------------------------------------- */

typedef struct changes_job {
    document_snapshot *snap;
    gitsvc_changes_cb cb;
    void *ctx;
    arena mem;
    gitsvc_line_change *changes;
    size_t count;
    int rc;
    gitsvc_error err;
} changes_job;

/* git's failures say their kind: they stay in j->err, and err is left alone. */
static int changes_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)job;
    (void)err;
    changes_job *j = payload;
    const char *uri = document_snapshot_uri(j->snap);
    buf path = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(uri, strlen(uri), &path, &e) != 0) {
        buf_free(&path);
        return 0; /* not a file: in no repository, no changes */
    }
    gitsvc_repo *repo = NULL;
    const char *rel = NULL;
    if (gitsvc_repo_open(path.data, &repo, NULL, &j->err) == 0 &&
        gitsvc_repo_relative(repo, path.data, &j->mem, &rel, &j->err) == 0)
        j->rc = gitsvc_diff_snapshot(repo, rel, j->snap, &j->mem, &j->changes, &j->count, &j->err);
    gitsvc_repo_close(repo);
    buf_free(&path);
    return j->rc;
}

static void changes_done(void *payload, int status, const ecp_error *err)
{
    changes_job *j = payload;
    if (status && !j->rc) /* cancelled before it began */
        j->rc = gitsvc__fail(&j->err, status, GITSVC_COMMAND_FAILED, "%s", err->message);
    j->cb(j->ctx, j->rc, j->rc ? &j->err : NULL, j->changes, j->count);
}

static void changes_release(void *payload)
{
    changes_job *j = payload;
    document_snapshot_release(j->snap);
    arena_free(&j->mem);
}

static const ecp_job_kind changes_kind =
    ECP_JOB_KIND("git.documentChanges", ECP_LANE_SHORT, false, changes_work, changes_done, changes_release);

ecp_job *gitsvc_document_changes_start(gitsvc *self, const char *document_id, ecp_call *serve, gitsvc_changes_cb cb,
                                       void *ctx, gitsvc_error *err)
{
    if (!self->documents) {
        gitsvc__fail(err, ECP_ENOTSUP, GITSVC_COMMAND_FAILED, "No documents are available to the git service");
        return NULL;
    }
    ecp_error e;
    document_snapshot *snap = document_snapshot_take(self->documents, document_id, &e);
    if (!snap) {
        gitsvc__fail(err, e.status, GITSVC_COMMAND_FAILED, "%s", e.message);
        return NULL;
    }
    changes_job j = {.snap = snap, .cb = cb, .ctx = ctx};
    arena_init(&j.mem);
    gitsvc_start_libgit2(self);
    return ecp_job_run(self->jobs, &changes_kind, &j, sizeof j, serve);
}
