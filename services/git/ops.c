/* ops: the service's operations, each one job.
 *
 * A job opens the repository its path names, does one operation of the
 * blocking functions (read.c, write.c, remote.c) and closes it, all on one
 * pool thread; a formatter the caller gave renders a big result there too.
 * done tells the service what changed (gitsvc_changed) before it calls back,
 * so that listeners, and through them every client, hear of a change before
 * the answer. Whatever happened, the repository is watched from then on.
 *
 * A transfer first reads its remote's credentials from the secret store on
 * the loop, then starts; its deadline runs from the start call. Past it the
 * callback runs at once with NETWORK_ERROR and the job is cancelled; its
 * done only keeps watching the repository.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document/interface.h"

/* Every operation: its job's name, its lane, and the kind of change a success makes. */
#define NO_CHANGE (-1)
#define OPS(X)                                                                   \
    X(OP_IS_REPO, "git.isRepo", ECP_LANE_SHORT, NO_CHANGE)                       \
    X(OP_HEAD, "git.branch", ECP_LANE_SHORT, NO_CHANGE)                          \
    X(OP_STAGE, "git.stage", ECP_LANE_LONG, GITSVC_CHANGE_STATUS)                \
    X(OP_UNSTAGE, "git.unstage", ECP_LANE_SHORT, GITSVC_CHANGE_STATUS)           \
    X(OP_DISCARD, "git.discard", ECP_LANE_SHORT, GITSVC_CHANGE_STATUS)           \
    X(OP_DIFF, "git.diff", ECP_LANE_SHORT, NO_CHANGE)                            \
    X(OP_DIFF_LINES, "git.diffLines", ECP_LANE_SHORT, NO_CHANGE)                 \
    X(OP_DIFF_TEXT, "git.diffBuffer", ECP_LANE_SHORT, NO_CHANGE)                 \
    X(OP_COMMIT, "git.commit", ECP_LANE_SHORT, GITSVC_CHANGE_COMMIT)             \
    X(OP_LOG, "git.log", ECP_LANE_LONG, NO_CHANGE)                               \
    X(OP_BRANCHES, "git.branches", ECP_LANE_SHORT, NO_CHANGE)                    \
    X(OP_BRANCH_SHORT, "git.branchChange", ECP_LANE_SHORT, GITSVC_CHANGE_BRANCH) \
    X(OP_BRANCH_SWITCH, "git.switchBranch", ECP_LANE_LONG, GITSVC_CHANGE_BRANCH) \
    X(OP_TRANSFER, "git.transfer", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)          \
    X(OP_REMOTES, "git.remotes", ECP_LANE_SHORT, NO_CHANGE)                      \
    X(OP_MERGE, "git.merge", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)                \
    X(OP_MERGE_ABORT, "git.mergeAbort", ECP_LANE_LONG, GITSVC_CHANGE_STATUS)     \
    X(OP_CONFLICTS, "git.conflicts", ECP_LANE_SHORT, NO_CHANGE)                  \
    X(OP_STASH, "git.stash", ECP_LANE_LONG, GITSVC_CHANGE_STASH)                 \
    X(OP_STASH_DROP, "git.stashDrop", ECP_LANE_SHORT, GITSVC_CHANGE_STASH)       \
    X(OP_STASHES, "git.stashList", ECP_LANE_SHORT, NO_CHANGE)                    \
    X(OP_BLAME, "git.blame", ECP_LANE_LONG, NO_CHANGE)                           \
    X(OP_SHOW, "git.show", ECP_LANE_SHORT, NO_CHANGE)

typedef enum op_kind {
#define OP_ENUM(kind, name, lane, change) kind,
    OPS(OP_ENUM)
#undef OP_ENUM
        OP_KINDS
} op_kind;

static const int op_change[OP_KINDS] = {
#define OP_CHANGE(kind, name, lane, change) [kind] = change,
    OPS(OP_CHANGE)
#undef OP_CHANGE
};

/* The callback of an operation: the member its kind names. */
typedef union op_callback {
    gitsvc_done_cb done;
    gitsvc_root_cb root;
    gitsvc_head_cb head;
    gitsvc_diff_cb diff;
    gitsvc_changes_cb changes;
    gitsvc_commit_cb commit;
    gitsvc_log_cb log;
    gitsvc_branches_cb branches;
    gitsvc_remotes_cb remotes;
    gitsvc_stashes_cb stashes;
    gitsvc_paths_cb paths;
    gitsvc_merge_cb merge;
    gitsvc_sync_cb sync;
    gitsvc_blame_cb blame;
    gitsvc_show_cb show;
} op_callback;

typedef struct op_job {
    gitsvc *svc;
    op_kind kind;
    op_callback cb;
    void *ctx;
    bool called; /* cb has run (a transfer past its deadline) */
    /* inputs: copies, the work runs off the loop */
    char *path;
    char *arg;  /* file, name, message, branch or remote */
    char *ref;  /* show */
    char *text; /* diffBuffer's content */
    size_t text_len;
    document_snapshot *snap; /* diffBuffer of an open document */
    char **paths;
    size_t path_count;
    bool flag, flag2; /* staged, checkout, force, amend / setUpstream */
    size_t number;    /* log's count, a stash index */
    int sub;          /* a gitsvc_branch_op, gitsvc_stash_op or gitsvc_transfer_op */
    union {
        gitsvc_diff_format diff;
        gitsvc_log_format log;
        gitsvc_blame_format blame;
    } format;
    void *fctx;
    gitsvc_tokens *tokens; /* transfers: the credentials of HTTP(S) remotes */
    uv_timer_t *deadline;  /* transfers */
    /* outputs */
    int rc;
    gitsvc_error err;
    char *root, *gitdir;
    arena mem;
    buf json; /* the formatter's */
    union {
        gitsvc_status head;
        gitsvc_diff_result diff;
        struct { gitsvc_line_change *items; size_t count; } changes;
        gitsvc_commit_result commit;
        gitsvc_log_result log;
        gitsvc_branches_result branches;
        gitsvc_remotes_result remotes;
        gitsvc_stashes_result stashes;
        struct { const char **items; size_t count; } files;
        gitsvc_blame_result blame;
        struct { const char *content; size_t len; } show;
        gitsvc_merge_result merge;
        gitsvc_sync_result sync;
    } out;
} op_job;

/* ----- the work (a pool thread) ----------------------------------------------------------- */

static bool names_one_file(op_kind kind)
{
    return kind == OP_DIFF || kind == OP_DIFF_LINES || kind == OP_DIFF_TEXT || kind == OP_BLAME || kind == OP_SHOW;
}

static int run_branch(op_job *j, ecp_job *job, gitsvc_repo *repo)
{
    switch ((gitsvc_branch_op)j->sub) {
    case GITSVC_BRANCH_CREATE: return gitsvc_branch_create(repo, j->arg, j->flag, &j->err);
    case GITSVC_BRANCH_SWITCH: return gitsvc_branch_switch(repo, j->arg, job, &j->err);
    case GITSVC_BRANCH_DELETE: return gitsvc_branch_delete(repo, j->arg, j->flag, &j->err);
    case GITSVC_BRANCH_RENAME: return gitsvc_branch_rename(repo, j->arg, &j->err);
    }
    return 0;
}

static int run_transfer(op_job *j, ecp_job *job, gitsvc_repo *repo)
{
    gitsvc_remote_options ro = {j->arg, j->flag, j->flag2, j->tokens};
    gitsvc_sync_result *out = &j->out.sync;
    switch ((gitsvc_transfer_op)j->sub) {
    case GITSVC_PUSH: return gitsvc_push(repo, &ro, job, &j->mem, out, &j->err);
    case GITSVC_PULL: return gitsvc_pull(repo, &ro, job, &j->mem, out, &j->err);
    case GITSVC_FETCH: break;
    }
    int rc = gitsvc_fetch(repo, &ro, job, &j->mem, out, &j->err);
    if (rc == 0 && !out->success)
        rc = gitsvc__fail(&j->err, ECP_EIO, out->code, "%s", out->error);
    return rc;
}

/* The operation proper, on the open repository. */
static int op_run(op_job *j, ecp_job *job, gitsvc_repo *repo)
{
    gitsvc_error *err = &j->err;
    arena *mem = &j->mem;
    const char *rel = NULL;
    int rc;
    if (names_one_file(j->kind) && (rc = gitsvc_repo_relative(repo, j->arg, mem, &rel, err)))
        return rc;
    const char **rels = NULL;
    if (j->path_count) {
        rels = arena_alloc(mem, j->path_count * sizeof *rels);
        for (size_t i = 0; i < j->path_count; i++)
            if ((rc = gitsvc_repo_relative(repo, j->paths[i], mem, &rels[i], err)))
                return rc;
    }
    switch (j->kind) {
    case OP_IS_REPO: return 0;
    case OP_HEAD: return gitsvc_branch_read(repo, mem, &j->out.head, err);
    case OP_STAGE: return gitsvc_stage(repo, rels, j->path_count, j->path_count == 0, err);
    case OP_UNSTAGE: return gitsvc_unstage(repo, rels, j->path_count, err);
    case OP_DISCARD: return gitsvc_discard(repo, rels, j->path_count, err);
    case OP_DIFF: {
        gitsvc_hunk *hunks = NULL;
        rc = gitsvc_diff_read(repo, rel, j->flag, mem, &hunks, &j->out.diff.count, err);
        j->out.diff.hunks = hunks;
        if (rc == 0 && j->format.diff)
            j->format.diff(j->fctx, &j->out.diff, &j->json);
        return rc;
    }
    case OP_DIFF_LINES:
        return gitsvc_diff_lines(repo, rel, mem, &j->out.changes.items, &j->out.changes.count, err);
    case OP_DIFF_TEXT:
        if (j->snap)
            return gitsvc_diff_snapshot(repo, rel, j->snap, mem, &j->out.changes.items, &j->out.changes.count, err);
        return gitsvc_diff_text(repo, rel, j->text, j->text_len, mem, &j->out.changes.items, &j->out.changes.count,
                                err);
    case OP_COMMIT:
        if (j->flag)
            return gitsvc_amend(repo, j->arg, mem, &j->out.commit, err);
        return gitsvc_commit(repo, j->arg, mem, &j->out.commit, err);
    case OP_LOG: {
        gitsvc_commit_info *commits = NULL;
        rc = gitsvc_log_read(repo, j->number, job, mem, &commits, &j->out.log.count, err);
        j->out.log.commits = commits;
        if (rc == 0 && j->format.log)
            j->format.log(j->fctx, &j->out.log, &j->json);
        return rc;
    }
    case OP_BRANCHES: {
        gitsvc_branch *items = NULL;
        rc = gitsvc_branches_read(repo, mem, &items, &j->out.branches.count, &j->out.branches.current, err);
        j->out.branches.items = items;
        return rc;
    }
    case OP_BRANCH_SHORT:
    case OP_BRANCH_SWITCH: return run_branch(j, job, repo);
    case OP_TRANSFER: return run_transfer(j, job, repo);
    case OP_REMOTES: {
        gitsvc_remote *items = NULL;
        rc = gitsvc_remotes_read(repo, mem, &items, &j->out.remotes.count, err);
        j->out.remotes.items = items;
        return rc;
    }
    case OP_MERGE: return gitsvc_merge(repo, j->arg, job, mem, &j->out.merge, err);
    case OP_MERGE_ABORT: return gitsvc_merge_abort(repo, err);
    case OP_CONFLICTS: return gitsvc_conflicts_read(repo, mem, &j->out.files.items, &j->out.files.count, err);
    case OP_STASH:
    case OP_STASH_DROP:
        if (j->sub == GITSVC_STASH_SAVE)
            return gitsvc_stash_push(repo, j->arg, err);
        return gitsvc_stash_apply(repo, (gitsvc_stash_op)j->sub, j->number, err);
    case OP_STASHES: {
        gitsvc_stash *items = NULL;
        rc = gitsvc_stash_list(repo, mem, &items, &j->out.stashes.count, err);
        j->out.stashes.items = items;
        return rc;
    }
    case OP_BLAME: {
        gitsvc_blame_line *lines = NULL;
        rc = gitsvc_blame_read(repo, rel, job, mem, &lines, &j->out.blame.count, err);
        j->out.blame.lines = lines;
        if (rc == 0 && j->format.blame)
            j->format.blame(j->fctx, &j->out.blame, &j->json);
        return rc;
    }
    case OP_SHOW: return gitsvc_show(repo, rel, j->ref, mem, &j->out.show.content, &j->out.show.len, err);
    case OP_KINDS: break;
    }
    return 0;
}

/* A cancelled operation that has not begun does not begin (core/job.h):
 * nothing has been read or changed yet. Once begun, a change runs to its end
 * (see interface.h). git's failures say their kind: they stay in j->err, and
 * err is left alone. */
static int op_work(ecp_job *job, void *payload, ecp_error *err)
{
    (void)err;
    op_job *j = payload;
    gitsvc_repo *repo = NULL;
    j->rc = gitsvc_repo_open(j->path, &repo, NULL, &j->err);
    if (j->rc)
        return j->rc;
    j->root = xstrdup(gitsvc_repo_root(repo));
    j->gitdir = xstrdup(gitsvc_repo_gitdir(repo));
    j->rc = op_run(j, job, repo);
    gitsvc_repo_close(repo);
    return j->rc;
}

/* ----- the outcome (the loop) ---------------------------------------------------------------- */

/* Whether a successful operation changed the repository. */
static bool op_changed(const op_job *j)
{
    switch (j->kind) {
    case OP_COMMIT: return j->out.commit.success;
    case OP_MERGE: return j->out.merge.changed;
    case OP_TRANSFER: return j->sub == GITSVC_PULL ? j->out.sync.changed : j->out.sync.success;
    default: return op_change[j->kind] != NO_CHANGE;
    }
}

/* Calls back with the outcome; json is the formatter's, or NULL. */
static void op_call_back(op_job *j, int rc, const gitsvc_error *err, ecp_shared *json)
{
    j->called = true;
    void *ctx = j->ctx;
    if (rc) {
        switch (j->kind) {
        case OP_IS_REPO: j->cb.root(ctx, rc, err, NULL); return;
        case OP_HEAD: j->cb.head(ctx, rc, err, NULL); return;
        case OP_DIFF: j->cb.diff(ctx, rc, err, NULL, NULL); return;
        case OP_DIFF_LINES:
        case OP_DIFF_TEXT: j->cb.changes(ctx, rc, err, NULL, 0); return;
        case OP_COMMIT: j->cb.commit(ctx, rc, err, NULL); return;
        case OP_LOG: j->cb.log(ctx, rc, err, NULL, NULL); return;
        case OP_BRANCHES: j->cb.branches(ctx, rc, err, NULL); return;
        case OP_REMOTES: j->cb.remotes(ctx, rc, err, NULL); return;
        case OP_STASHES: j->cb.stashes(ctx, rc, err, NULL); return;
        case OP_CONFLICTS: j->cb.paths(ctx, rc, err, NULL, 0); return;
        case OP_MERGE: j->cb.merge(ctx, rc, err, NULL); return;
        case OP_TRANSFER: j->cb.sync(ctx, rc, err, NULL); return;
        case OP_BLAME: j->cb.blame(ctx, rc, err, NULL, NULL); return;
        case OP_SHOW: j->cb.show(ctx, rc, err, NULL, 0); return;
        default: j->cb.done(ctx, rc, err); return;
        }
    }
    switch (j->kind) {
    case OP_IS_REPO: j->cb.root(ctx, 0, NULL, j->root); return;
    case OP_HEAD: j->cb.head(ctx, 0, NULL, &j->out.head); return;
    case OP_DIFF: j->cb.diff(ctx, 0, NULL, &j->out.diff, json); return;
    case OP_DIFF_LINES:
    case OP_DIFF_TEXT: j->cb.changes(ctx, 0, NULL, j->out.changes.items, j->out.changes.count); return;
    case OP_COMMIT: j->cb.commit(ctx, 0, NULL, &j->out.commit); return;
    case OP_LOG: j->cb.log(ctx, 0, NULL, &j->out.log, json); return;
    case OP_BRANCHES: j->cb.branches(ctx, 0, NULL, &j->out.branches); return;
    case OP_REMOTES: j->cb.remotes(ctx, 0, NULL, &j->out.remotes); return;
    case OP_STASHES: j->cb.stashes(ctx, 0, NULL, &j->out.stashes); return;
    case OP_CONFLICTS: j->cb.paths(ctx, 0, NULL, j->out.files.items, j->out.files.count); return;
    case OP_MERGE: j->cb.merge(ctx, 0, NULL, &j->out.merge); return;
    case OP_TRANSFER: j->cb.sync(ctx, 0, NULL, &j->out.sync); return;
    case OP_BLAME: j->cb.blame(ctx, 0, NULL, &j->out.blame, json); return;
    case OP_SHOW: j->cb.show(ctx, 0, NULL, j->out.show.content, j->out.show.len); return;
    default: j->cb.done(ctx, 0, NULL); return;
    }
}

static void op_done(void *payload, int status, const ecp_error *err)
{
    op_job *j = payload;
    if (j->root) {
        /* whatever happened, a change may have: the repository is watched from now on */
        if (!j->rc && !j->called && op_changed(j))
            gitsvc_changed(j->svc, j->root, j->gitdir, (gitsvc_change_kind)op_change[j->kind]);
        else
            gitsvc_track(j->svc, j->root, j->gitdir);
    }
    if (j->called)
        return; /* a transfer past its deadline: told already */
    if (status && !j->rc) { /* cancelled before it began */
        gitsvc_error skipped;
        op_call_back(j, gitsvc__fail(&skipped, status, GITSVC_COMMAND_FAILED, "%s", err->message), &skipped, NULL);
        return;
    }
    if (j->rc) {
        op_call_back(j, j->rc, &j->err, NULL);
        return;
    }
    ecp_shared *json = NULL;
    if (j->json.data) {
        size_t len = j->json.len;
        json = ecp_shared_adopt(buf_detach(&j->json), len);
    }
    op_call_back(j, 0, NULL, json);
    ecp_shared_unref(json);
}

static void op_release(void *payload)
{
    op_job *j = payload;
    free_each(j->path, j->arg, j->ref, j->text);
    document_snapshot_release(j->snap);
    gitsvc_tokens_free(j->tokens);
    free(j->tokens);
    if (j->deadline)
        uv_close((uv_handle_t *)j->deadline, (uv_close_cb)free);
    for (size_t i = 0; i < j->path_count; i++)
        free(j->paths[i]);
    free_each(j->paths, j->root, j->gitdir);
    buf_free(&j->json);
    arena_free(&j->mem);
}

/* Operations that change a repository do not stop half-way, but one that
 * has not begun when the server goes down need not begin: nothing is lost. */
static const ecp_job_kind op_kinds[OP_KINDS] = {
#define OP_KIND(kind, name, lane, change) [kind] = ECP_JOB_KIND(name, lane, false, op_work, op_done, op_release),
    OPS(OP_KIND)
#undef OP_KIND
};

/* ----- starting ------------------------------------------------------------------------------- */

static char *copy(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* arg: the operation's one string input (may be NULL), copied. */
static op_job *op_new(gitsvc *svc, op_kind kind, const gitsvc_where *where, const char *arg, op_callback cb,
                      void *ctx)
{
    op_job *j = xcalloc(1, sizeof *j);
    j->svc = svc;
    j->kind = kind;
    j->path = xstrdup(where->path);
    j->arg = copy(arg);
    j->cb = cb;
    j->ctx = ctx;
    arena_init(&j->mem);
    buf_init(&j->json);
    return j;
}

/* The job of j (which it copies and frees), serving the call, not started. */
static ecp_job *op_job_new(op_job *j, const gitsvc_where *where)
{
    gitsvc_start_libgit2(j->svc);
    ecp_job *job = ecp_job_prepare(j->svc->jobs, &op_kinds[j->kind], j, sizeof *j);
    free(j);
    if (where->serve)
        ecp_job_serve(job, where->serve);
    return job;
}

static ecp_job *op_start(op_job *j, const gitsvc_where *where)
{
    ecp_job *job = op_job_new(j, where);
    ecp_job_start(job, 1);
    return job;
}

ecp_job *gitsvc_is_repo_start(gitsvc *svc, const gitsvc_where *where, gitsvc_root_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_IS_REPO, where, NULL, (op_callback){.root = cb}, ctx), where);
}

ecp_job *gitsvc_head_start(gitsvc *svc, const gitsvc_where *where, gitsvc_head_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_HEAD, where, NULL, (op_callback){.head = cb}, ctx), where);
}

ecp_job *gitsvc_diff_start(gitsvc *svc, const gitsvc_diff_args *args, gitsvc_diff_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_DIFF, &args->where, args->file, (op_callback){.diff = cb}, ctx);
    j->flag = args->staged;
    j->format.diff = args->format;
    j->fctx = args->fctx;
    return op_start(j, &args->where);
}

ecp_job *gitsvc_diff_lines_start(gitsvc *svc, const gitsvc_file_args *args, gitsvc_changes_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_DIFF_LINES, &args->where, args->file, (op_callback){.changes = cb}, ctx),
                    &args->where);
}

ecp_job *gitsvc_diff_text_start(gitsvc *svc, const gitsvc_diff_text_args *args, gitsvc_changes_cb cb, void *ctx,
                                gitsvc_error *err)
{
    document_snapshot *snap = NULL;
    if (!args->text) {
        /* the unsaved text of the open document, read from a snapshot off the loop */
        snap = gitsvc__document_snapshot(svc, args->document_id, args->file);
        if (!snap) {
            gitsvc__fail(err, ECP_EINVAL, GITSVC_COMMAND_FAILED, "No text, and no open document for %s",
                         args->document_id ? args->document_id : args->file);
            return NULL;
        }
    }
    op_job *j = op_new(svc, OP_DIFF_TEXT, &args->where, args->file, (op_callback){.changes = cb}, ctx);
    j->snap = snap;
    if (args->text) {
        j->text = xmalloc(args->len + 1);
        memcpy(j->text, args->text, args->len);
        j->text[args->len] = '\0';
        j->text_len = args->len;
    }
    return op_start(j, &args->where);
}

ecp_job *gitsvc_blame_start(gitsvc *svc, const gitsvc_blame_args *args, gitsvc_blame_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_BLAME, &args->where, args->file, (op_callback){.blame = cb}, ctx);
    j->format.blame = args->format;
    j->fctx = args->fctx;
    return op_start(j, &args->where);
}

ecp_job *gitsvc_show_start(gitsvc *svc, const gitsvc_show_args *args, gitsvc_show_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_SHOW, &args->where, args->file, (op_callback){.show = cb}, ctx);
    j->ref = xstrdup(args->ref);
    return op_start(j, &args->where);
}

ecp_job *gitsvc_log_start(gitsvc *svc, const gitsvc_log_args *args, gitsvc_log_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_LOG, &args->where, NULL, (op_callback){.log = cb}, ctx);
    j->number = args->max;
    j->format.log = args->format;
    j->fctx = args->fctx;
    return op_start(j, &args->where);
}

ecp_job *gitsvc_branches_start(gitsvc *svc, const gitsvc_where *where, gitsvc_branches_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_BRANCHES, where, NULL, (op_callback){.branches = cb}, ctx), where);
}

ecp_job *gitsvc_remotes_start(gitsvc *svc, const gitsvc_where *where, gitsvc_remotes_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_REMOTES, where, NULL, (op_callback){.remotes = cb}, ctx), where);
}

ecp_job *gitsvc_stashes_start(gitsvc *svc, const gitsvc_where *where, gitsvc_stashes_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_STASHES, where, NULL, (op_callback){.stashes = cb}, ctx), where);
}

ecp_job *gitsvc_conflicts_start(gitsvc *svc, const gitsvc_where *where, gitsvc_paths_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_CONFLICTS, where, NULL, (op_callback){.paths = cb}, ctx), where);
}

static ecp_job *paths_start(gitsvc *svc, op_kind kind, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx)
{
    op_job *j = op_new(svc, kind, &args->where, NULL, (op_callback){.done = cb}, ctx);
    if (args->count) {
        j->paths = xcalloc(args->count, sizeof *j->paths);
        for (size_t i = 0; i < args->count; i++)
            j->paths[i] = xstrdup(args->paths[i]);
        j->path_count = args->count;
    }
    return op_start(j, &args->where);
}

ecp_job *gitsvc_stage_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx)
{
    return paths_start(svc, OP_STAGE, args, cb, ctx);
}

ecp_job *gitsvc_unstage_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx)
{
    return paths_start(svc, OP_UNSTAGE, args, cb, ctx);
}

ecp_job *gitsvc_discard_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx)
{
    return paths_start(svc, OP_DISCARD, args, cb, ctx);
}

ecp_job *gitsvc_commit_start(gitsvc *svc, const gitsvc_commit_args *args, gitsvc_commit_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_COMMIT, &args->where, args->message, (op_callback){.commit = cb}, ctx);
    j->flag = args->amend;
    return op_start(j, &args->where);
}

ecp_job *gitsvc_branch_start(gitsvc *svc, const gitsvc_branch_args *args, gitsvc_done_cb cb, void *ctx)
{
    /* a checkout walks the work tree: the long lane */
    op_kind kind = args->op == GITSVC_BRANCH_SWITCH ? OP_BRANCH_SWITCH : OP_BRANCH_SHORT;
    op_job *j = op_new(svc, kind, &args->where, args->name, (op_callback){.done = cb}, ctx);
    j->sub = args->op;
    j->flag = args->op == GITSVC_BRANCH_CREATE ? args->checkout : args->force;
    return op_start(j, &args->where);
}

ecp_job *gitsvc_merge_start(gitsvc *svc, const gitsvc_merge_args *args, gitsvc_merge_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_MERGE, &args->where, args->branch, (op_callback){.merge = cb}, ctx), &args->where);
}

ecp_job *gitsvc_merge_abort_start(gitsvc *svc, const gitsvc_where *where, gitsvc_done_cb cb, void *ctx)
{
    return op_start(op_new(svc, OP_MERGE_ABORT, where, NULL, (op_callback){.done = cb}, ctx), where);
}

ecp_job *gitsvc_stash_start(gitsvc *svc, const gitsvc_stash_args *args, gitsvc_done_cb cb, void *ctx)
{
    /* a drop touches no file: the short lane */
    op_kind kind = args->op == GITSVC_STASH_DROP ? OP_STASH_DROP : OP_STASH;
    op_job *j = op_new(svc, kind, &args->where, args->message, (op_callback){.done = cb}, ctx);
    j->sub = args->op;
    j->number = args->index;
    return op_start(j, &args->where);
}

/* ----- transfers --------------------------------------------------------------------------------- */

static void tokens_loaded(void *ctx, gitsvc_tokens *tokens)
{
    ecp_job *job = ctx;
    op_job *j = ecp_job_data(job);
    j->tokens = tokens;
    ecp_job_start(job, 1);
}

static void transfer_overdue(uv_timer_t *timer)
{
    ecp_job *job = timer->data;
    op_job *j = ecp_job_data(job);
    if (!j->called) {
        gitsvc_error err;
        gitsvc__fail(&err, ECP_ETIMEDOUT, GITSVC_NETWORK_ERROR, "The remote did not finish within %llu ms",
                     (unsigned long long)j->svc->transfer_timeout_ms);
        if (j->sub == GITSVC_FETCH) {
            op_call_back(j, err.status, &err, NULL);
        } else { /* push and pull say so in their result, as for any failure to reach the remote */
            gitsvc_sync_result r = {.success = false, .error = err.message, .code = GITSVC_NETWORK_ERROR};
            j->called = true;
            j->cb.sync(j->ctx, 0, NULL, &r);
        }
    }
    ecp_job_cancel(job); /* the work sees it at libgit2's next callback (the job's data stays its own) */
}

ecp_job *gitsvc_transfer_start(gitsvc *svc, const gitsvc_transfer_args *args, gitsvc_sync_cb cb, void *ctx)
{
    op_job *j = op_new(svc, OP_TRANSFER, &args->where, args->remote, (op_callback){.sync = cb}, ctx);
    j->sub = args->op;
    j->flag = args->force;
    j->flag2 = args->set_upstream;
    ecp_job *job = op_job_new(j, &args->where);
    j = ecp_job_data(job);
    j->deadline = xmalloc(sizeof *j->deadline);
    uv_timer_init(ecp_pool_loop(svc->pool), j->deadline);
    j->deadline->data = job;
    uv_timer_start(j->deadline, transfer_overdue, svc->transfer_timeout_ms, 0);
    gitsvc_tokens_load(svc, tokens_loaded, job);
    return job;
}
