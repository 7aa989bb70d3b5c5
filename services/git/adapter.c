/* adapter: the git service's JSON-RPC methods (the `git` namespace).
 *
 * Every method but the cached status runs as one job of the service that
 * serves its call: the work opens the repository the call's `uri` names,
 * does one operation of interface.h and closes it, all on one pool thread;
 * done writes the result. Walks (status, log, blame, merges, checkouts,
 * transfers) take the long lane so that short answers never wait behind
 * them. A method that changes a repository tells the service (gitsvc_changed)
 * before it answers, so `git/didChange` reaches every client before the
 * response. Failures are -32208 with data {gitErrorCode, uri}; a cancel is
 * -32800.
 */
#include "adapter.h"
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "document/interface.h"
#include "file/interface.h"
#include "rpc.h"

typedef struct git_adapter {
    gitsvc *svc;
    ecp_bus *bus;
} git_adapter;

/* ----- errors ------------------------------------------------------------------------- */

static const ecp_wire_map wire_codes[] = {
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

static void reply_error(ecp_call *call, int status, const gitsvc_error *err, const char *uri)
{
    int code = ecp_wire_code(wire_codes, sizeof wire_codes / sizeof wire_codes[0], status, ECP_WIRE_GIT_COMMAND_FAILED);
    if (code == ECP_WIRE_REQUEST_CANCELLED) {
        ecp_call_error(call, code, "Request cancelled");
        return;
    }
    buf data = BUF_INIT;
    json_writer w;
    jw_init(&w, &data);
    jw_object_begin(&w);
    jw_key_string(&w, "gitErrorCode", gitsvc_code_name(err ? err->code : GITSVC_COMMAND_FAILED));
    jw_key_string(&w, "uri", uri ? uri : "");
    jw_object_end(&w);
    ecp_call_error_data(call, code, data.data, "%s", err && err->message[0] ? err->message : ecp_status_text(status));
    buf_free(&data);
}

/* ----- operations ------------------------------------------------------------------------ */

/* Every operation: its job's name, its lane, and the kind of change a success makes. */
#define NO_CHANGE (-1)
#define OPS(X)                                                                    \
    X(OP_IS_REPO, "git.isRepo", ECP_LANE_SHORT, NO_CHANGE)                        \
    X(OP_BRANCH, "git.branch", ECP_LANE_SHORT, NO_CHANGE)                         \
    X(OP_STAGE, "git.stage", ECP_LANE_LONG, GITSVC_CHANGE_STATUS)                 \
    X(OP_STAGE_ALL, "git.stageAll", ECP_LANE_LONG, GITSVC_CHANGE_STATUS)          \
    X(OP_UNSTAGE, "git.unstage", ECP_LANE_SHORT, GITSVC_CHANGE_STATUS)            \
    X(OP_DISCARD, "git.discard", ECP_LANE_SHORT, GITSVC_CHANGE_STATUS)            \
    X(OP_DIFF, "git.diff", ECP_LANE_SHORT, NO_CHANGE)                             \
    X(OP_DIFF_LINES, "git.diffLines", ECP_LANE_SHORT, NO_CHANGE)                  \
    X(OP_DIFF_BUFFER, "git.diffBuffer", ECP_LANE_SHORT, NO_CHANGE)                \
    X(OP_COMMIT, "git.commit", ECP_LANE_SHORT, GITSVC_CHANGE_COMMIT)              \
    X(OP_AMEND, "git.amend", ECP_LANE_SHORT, GITSVC_CHANGE_COMMIT)                \
    X(OP_LOG, "git.log", ECP_LANE_LONG, NO_CHANGE)                                \
    X(OP_BRANCHES, "git.branches", ECP_LANE_SHORT, NO_CHANGE)                     \
    X(OP_CREATE_BRANCH, "git.createBranch", ECP_LANE_SHORT, GITSVC_CHANGE_BRANCH) \
    X(OP_SWITCH_BRANCH, "git.switchBranch", ECP_LANE_LONG, GITSVC_CHANGE_BRANCH)  \
    X(OP_DELETE_BRANCH, "git.deleteBranch", ECP_LANE_SHORT, GITSVC_CHANGE_BRANCH) \
    X(OP_RENAME_BRANCH, "git.renameBranch", ECP_LANE_SHORT, GITSVC_CHANGE_BRANCH) \
    X(OP_PUSH, "git.push", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)                   \
    X(OP_PULL, "git.pull", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)                   \
    X(OP_FETCH, "git.fetch", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)                 \
    X(OP_REMOTES, "git.remotes", ECP_LANE_SHORT, NO_CHANGE)                       \
    X(OP_MERGE, "git.merge", ECP_LANE_LONG, GITSVC_CHANGE_COMMIT)                 \
    X(OP_MERGE_ABORT, "git.mergeAbort", ECP_LANE_LONG, GITSVC_CHANGE_STATUS)      \
    X(OP_CONFLICTS, "git.conflicts", ECP_LANE_SHORT, NO_CHANGE)                   \
    X(OP_STASH, "git.stash", ECP_LANE_LONG, GITSVC_CHANGE_STASH)                  \
    X(OP_STASH_POP, "git.stashPop", ECP_LANE_LONG, GITSVC_CHANGE_STASH)           \
    X(OP_STASH_LIST, "git.stashList", ECP_LANE_SHORT, NO_CHANGE)                  \
    X(OP_STASH_DROP, "git.stashDrop", ECP_LANE_SHORT, GITSVC_CHANGE_STASH)        \
    X(OP_STASH_APPLY, "git.stashApply", ECP_LANE_LONG, GITSVC_CHANGE_STASH)       \
    X(OP_BLAME, "git.blame", ECP_LANE_LONG, NO_CHANGE)                            \
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

typedef struct op_job {
    git_adapter *ad;
    op_kind kind;
    char *path; /* what uri names */
    char *uri;  /* as the client wrote it, for error data */
    /* inputs: copies, the work runs off the loop */
    char *arg;  /* path, name, message, branch or remote */
    char *ref;  /* show */
    char *text; /* diffBuffer's content */
    size_t text_len;
    document_snapshot *snap; /* diffBuffer of an open document */
    gitsvc_tokens *tokens;   /* push, pull, fetch: the credentials of HTTP(S) remotes */
    uv_timer_t *deadline;    /* push, pull, fetch: answers NETWORK_ERROR when the remote is silent too long */
    char **paths;
    size_t path_count;
    bool flag, flag2; /* staged, checkout, force / setUpstream */
    size_t number;    /* log's count, a stash index */
    /* outputs */
    bool skipped; /* cancelled before it began */
    bool bare;
    int rc;
    gitsvc_error err;
    char *root, *gitdir;
    arena mem;
    union {
        gitsvc_status branch;
        struct { gitsvc_hunk *items; size_t count; } hunks;
        struct { gitsvc_line_change *items; size_t count; } changes;
        gitsvc_commit_result commit;
        struct { gitsvc_commit_info *items; size_t count; } log;
        struct { gitsvc_branch *items; size_t count; const char *current; } branches;
        struct { gitsvc_remote *items; size_t count; } remotes;
        struct { gitsvc_stash *items; size_t count; } stashes;
        struct { const char **items; size_t count; } files;
        struct { gitsvc_blame_line *items; size_t count; } blame;
        struct { const char *content; size_t len; } show;
        gitsvc_merge_result merge;
        gitsvc_sync_result sync;
    } out;
} op_job;

/* The operation proper, on the open repository. */
static int op_run(op_job *j, ecp_job *job, gitsvc_repo *repo)
{
    gitsvc_error *err = &j->err;
    arena *mem = &j->mem;
    const char *rel = NULL;
    int rc;
    /* methods that name one file take it relative to the root or absolute */
    switch (j->kind) {
    case OP_DIFF:
    case OP_DIFF_LINES:
    case OP_DIFF_BUFFER:
    case OP_BLAME:
    case OP_SHOW:
        if ((rc = gitsvc_repo_relative(repo, j->arg, mem, &rel, err)))
            return rc;
        break;
    default:
        break;
    }
    const char **rels = NULL;
    if (j->path_count) {
        rels = arena_alloc(mem, j->path_count * sizeof *rels);
        for (size_t i = 0; i < j->path_count; i++)
            if ((rc = gitsvc_repo_relative(repo, j->paths[i], mem, &rels[i], err)))
                return rc;
    }
    gitsvc_remote_options ro = {j->arg, j->flag, j->flag2, j->tokens};
    switch (j->kind) {
    case OP_IS_REPO:
        return 0;
    case OP_BRANCH:
        return gitsvc_branch_read(repo, mem, &j->out.branch, err);
    case OP_STAGE:
        return gitsvc_stage(repo, rels, j->path_count, false, err);
    case OP_STAGE_ALL:
        return gitsvc_stage(repo, NULL, 0, true, err);
    case OP_UNSTAGE:
        return gitsvc_unstage(repo, rels, j->path_count, err);
    case OP_DISCARD:
        return gitsvc_discard(repo, rels, j->path_count, err);
    case OP_DIFF:
        return gitsvc_diff_read(repo, rel, j->flag, mem, &j->out.hunks.items, &j->out.hunks.count, err);
    case OP_DIFF_LINES:
        return gitsvc_diff_lines(repo, rel, mem, &j->out.changes.items, &j->out.changes.count, err);
    case OP_DIFF_BUFFER:
        if (j->snap)
            return gitsvc_diff_snapshot(repo, rel, j->snap, mem, &j->out.changes.items, &j->out.changes.count, err);
        return gitsvc_diff_text(repo, rel, j->text, j->text_len, mem, &j->out.changes.items, &j->out.changes.count,
                                err);
    case OP_COMMIT:
        return gitsvc_commit(repo, j->arg, mem, &j->out.commit, err);
    case OP_AMEND:
        return gitsvc_amend(repo, j->arg, mem, &j->out.commit, err);
    case OP_LOG:
        return gitsvc_log_read(repo, j->number, job, mem, &j->out.log.items, &j->out.log.count, err);
    case OP_BRANCHES:
        return gitsvc_branches_read(repo, mem, &j->out.branches.items, &j->out.branches.count,
                                    &j->out.branches.current, err);
    case OP_CREATE_BRANCH:
        return gitsvc_branch_create(repo, j->arg, j->flag, err);
    case OP_SWITCH_BRANCH:
        return gitsvc_branch_switch(repo, j->arg, job, err);
    case OP_DELETE_BRANCH:
        return gitsvc_branch_delete(repo, j->arg, j->flag, err);
    case OP_RENAME_BRANCH:
        return gitsvc_branch_rename(repo, j->arg, err);
    case OP_PUSH:
        return gitsvc_push(repo, &ro, job, mem, &j->out.sync, err);
    case OP_PULL:
        return gitsvc_pull(repo, &ro, job, mem, &j->out.sync, err);
    case OP_FETCH:
        rc = gitsvc_fetch(repo, &ro, job, mem, &j->out.sync, err);
        if (rc == 0 && !j->out.sync.success)
            rc = gitsvc__fail(err, ECP_EIO, j->out.sync.code, "%s", j->out.sync.error);
        return rc;
    case OP_REMOTES:
        return gitsvc_remotes_read(repo, mem, &j->out.remotes.items, &j->out.remotes.count, err);
    case OP_MERGE:
        return gitsvc_merge(repo, j->arg, job, mem, &j->out.merge, err);
    case OP_MERGE_ABORT:
        return gitsvc_merge_abort(repo, err);
    case OP_CONFLICTS:
        return gitsvc_conflicts_read(repo, mem, &j->out.files.items, &j->out.files.count, err);
    case OP_STASH:
        return gitsvc_stash_push(repo, j->arg, err);
    case OP_STASH_POP:
        return gitsvc_stash_apply(repo, GITSVC_STASH_POP, j->number, err);
    case OP_STASH_LIST:
        return gitsvc_stash_list(repo, mem, &j->out.stashes.items, &j->out.stashes.count, err);
    case OP_STASH_DROP:
        return gitsvc_stash_apply(repo, GITSVC_STASH_DROP, j->number, err);
    case OP_STASH_APPLY:
        return gitsvc_stash_apply(repo, GITSVC_STASH_APPLY, j->number, err);
    case OP_BLAME:
        return gitsvc_blame_read(repo, rel, job, mem, &j->out.blame.items, &j->out.blame.count, err);
    case OP_SHOW:
        return gitsvc_show(repo, rel, j->ref, mem, &j->out.show.content, &j->out.show.len, err);
    case OP_KINDS:
        break;
    }
    return 0;
}

static void op_work(ecp_job *job, unsigned item)
{
    op_job *j = ecp_job_data(job);
    /* Nothing has been read or changed yet: a cancelled operation need not
     * begin. Once begun, a change runs to its end (see interface.h). */
    if (ecp_job_cancelled(job)) {
        j->skipped = true;
        return;
    }
    gitsvc_repo *repo = NULL;
    j->rc = gitsvc_repo_open(j->path, &repo, &j->bare, &j->err);
    if (j->rc)
        return;
    j->root = xstrdup(gitsvc_repo_root(repo));
    j->gitdir = xstrdup(gitsvc_repo_gitdir(repo));
    j->rc = op_run(j, job, repo);
    gitsvc_repo_close(repo);
}

/* ----- results ----------------------------------------------------------------------------- */

static void write_strings(json_writer *w, const char *key, const char *const *items, size_t count)
{
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++)
        jw_string(w, items[i]);
    jw_array_end(w);
}

static const char *change_type_name(gitsvc_change_type t)
{
    switch (t) {
    case GITSVC_LINE_CHANGE_ADDED: return "added";
    case GITSVC_LINE_CHANGE_DELETED: return "deleted";
    default: return "modified";
    }
}

static void write_changes(json_writer *w, const gitsvc_line_change *changes, size_t count)
{
    jw_key(w, "changes");
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)changes[i].line);
        jw_key_string(w, "type", change_type_name(changes[i].type));
        jw_object_end(w);
    }
    jw_array_end(w);
}

void git_adapter_write_viewport_changes(void *svc, const char *document_id, const char *uri, size_t first,
                                        size_t last, ecp_position_encoding enc, json_writer *w)
{
    (void)uri;
    (void)enc; /* lines only */
    const gitsvc_line_change *changes = NULL;
    size_t count = last > first ? gitsvc_document_cached_changes(svc, document_id, first, last, &changes) : 0;
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)changes[i].line);
        jw_key_string(w, "type", change_type_name(changes[i].type));
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_entries(json_writer *w, const char *key, const gitsvc_status_entry *e, size_t count)
{
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        char status[2] = {e[i].status, '\0'};
        jw_object_begin(w);
        jw_key_string(w, "path", e[i].path);
        jw_key_string(w, "status", status);
        if (e[i].old_path)
            jw_key_string(w, "oldPath", e[i].old_path);
        jw_object_end(w);
    }
    jw_array_end(w);
}

static void write_status(json_writer *w, const gitsvc_status *st)
{
    jw_object_begin(w);
    jw_key_string(w, "branch", st->branch);
    jw_key_int(w, "ahead", (int64_t)st->ahead);
    jw_key_int(w, "behind", (int64_t)st->behind);
    write_entries(w, "staged", st->staged, st->staged_count);
    write_entries(w, "unstaged", st->unstaged, st->unstaged_count);
    write_strings(w, "untracked", st->untracked, st->untracked_count);
    jw_object_end(w);
}

static const char *line_type_name(gitsvc_line_type t)
{
    switch (t) {
    case GITSVC_LINE_ADDED: return "added";
    case GITSVC_LINE_DELETED: return "deleted";
    default: return "context";
    }
}

static void write_result(op_job *j, json_writer *w)
{
    jw_object_begin(w);
    switch (j->kind) {
    case OP_IS_REPO:
        jw_key_bool(w, "isRepo", true);
        jw_key_string(w, "rootUri", j->root);
        break;
    case OP_BRANCH:
        jw_key_string(w, "branch", j->out.branch.branch);
        if (j->out.branch.tracking)
            jw_key_string(w, "tracking", j->out.branch.tracking);
        jw_key_int(w, "ahead", (int64_t)j->out.branch.ahead);
        jw_key_int(w, "behind", (int64_t)j->out.branch.behind);
        break;
    case OP_DIFF:
        jw_key(w, "hunks");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.hunks.count; i++) {
            const gitsvc_hunk *h = &j->out.hunks.items[i];
            jw_object_begin(w);
            jw_key_int(w, "oldStart", (int64_t)h->old_start);
            jw_key_int(w, "oldCount", (int64_t)h->old_count);
            jw_key_int(w, "newStart", (int64_t)h->new_start);
            jw_key_int(w, "newCount", (int64_t)h->new_count);
            jw_key(w, "lines");
            jw_array_begin(w);
            for (size_t k = 0; k < h->line_count; k++) {
                const gitsvc_diff_line *l = &h->lines[k];
                jw_object_begin(w);
                jw_key_string(w, "type", line_type_name(l->type));
                jw_key_string(w, "content", l->content);
                if (l->old_line)
                    jw_key_int(w, "oldLineNum", (int64_t)l->old_line);
                if (l->new_line)
                    jw_key_int(w, "newLineNum", (int64_t)l->new_line);
                jw_object_end(w);
            }
            jw_array_end(w);
            jw_object_end(w);
        }
        jw_array_end(w);
        break;
    case OP_DIFF_LINES:
    case OP_DIFF_BUFFER:
        write_changes(w, j->out.changes.items, j->out.changes.count);
        break;
    case OP_COMMIT:
    case OP_AMEND:
        jw_key_bool(w, "success", j->out.commit.success);
        if (j->out.commit.success)
            jw_key_string(w, "hash", j->out.commit.hash);
        else
            jw_key_string(w, "error", j->out.commit.error);
        break;
    case OP_LOG:
        jw_key(w, "commits");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.log.count; i++) {
            const gitsvc_commit_info *c = &j->out.log.items[i];
            jw_object_begin(w);
            jw_key_string(w, "hash", c->hash);
            jw_key_string(w, "shortHash", c->short_hash);
            jw_key_string(w, "message", c->subject);
            jw_key_string(w, "author", c->author);
            jw_key_string(w, "email", c->email);
            jw_key_string(w, "date", c->date);
            jw_object_end(w);
        }
        jw_array_end(w);
        break;
    case OP_BRANCHES:
        jw_key(w, "branches");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.branches.count; i++) {
            const gitsvc_branch *b = &j->out.branches.items[i];
            jw_object_begin(w);
            jw_key_string(w, "name", b->name);
            jw_key_bool(w, "current", b->current);
            if (b->tracking)
                jw_key_string(w, "tracking", b->tracking);
            if (b->commit[0])
                jw_key_string(w, "commit", b->commit);
            jw_object_end(w);
        }
        jw_array_end(w);
        jw_key_string(w, "current", j->out.branches.current);
        break;
    case OP_REMOTES:
        jw_key(w, "remotes");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.remotes.count; i++) {
            const gitsvc_remote *r = &j->out.remotes.items[i];
            jw_object_begin(w);
            jw_key_string(w, "name", r->name);
            jw_key_string(w, "fetchUrl", r->fetch_url);
            jw_key_string(w, "pushUrl", r->push_url);
            jw_object_end(w);
        }
        jw_array_end(w);
        break;
    case OP_PUSH:
    case OP_PULL:
        jw_key_bool(w, "success", j->out.sync.success);
        if (j->kind == OP_PULL && j->out.sync.success)
            jw_key_bool(w, "changed", j->out.sync.changed);
        if (j->out.sync.conflicts) {
            jw_key_bool(w, "conflicts", true);
            write_strings(w, "conflictFiles", j->out.sync.conflict_files, j->out.sync.conflict_count);
        }
        if (!j->out.sync.success && j->out.sync.error)
            jw_key_string(w, "error", j->out.sync.error);
        break;
    case OP_MERGE:
        jw_key_bool(w, "success", j->out.merge.success);
        write_strings(w, "conflicts", j->out.merge.conflicts, j->out.merge.conflict_count);
        jw_key_string(w, "message", j->out.merge.message ? j->out.merge.message : "");
        break;
    case OP_CONFLICTS:
        write_strings(w, "files", j->out.files.items, j->out.files.count);
        break;
    case OP_STASH:
        jw_key_bool(w, "success", true);
        jw_key_string(w, "stashId", "stash@{0}");
        break;
    case OP_STASH_LIST:
        jw_key(w, "stashes");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.stashes.count; i++) {
            const gitsvc_stash *s = &j->out.stashes.items[i];
            char id[48];
            snprintf(id, sizeof id, "stash@{%zu}", s->index);
            jw_object_begin(w);
            jw_key_string(w, "id", id);
            jw_key_int(w, "index", (int64_t)s->index);
            jw_key_string(w, "branch", s->branch);
            jw_key_string(w, "message", s->message);
            jw_object_end(w);
        }
        jw_array_end(w);
        break;
    case OP_BLAME:
        jw_key(w, "lines");
        jw_array_begin(w);
        for (size_t i = 0; i < j->out.blame.count; i++) {
            const gitsvc_blame_line *l = &j->out.blame.items[i];
            jw_object_begin(w);
            jw_key_string(w, "commit", l->commit);
            jw_key_string(w, "author", l->author);
            jw_key_string(w, "date", l->date);
            jw_key_int(w, "line", (int64_t)l->line);
            jw_key_string(w, "content", l->content);
            jw_object_end(w);
        }
        jw_array_end(w);
        break;
    case OP_SHOW:
        jw_key_string_n(w, "content", j->out.show.content, j->out.show.len);
        break;
    default:
        jw_key_bool(w, "success", true);
        break;
    }
    jw_object_end(w);
}

/* Whether a successful operation changed the repository. */
static bool op_changed(const op_job *j)
{
    switch (j->kind) {
    case OP_COMMIT:
    case OP_AMEND: return j->out.commit.success;
    case OP_MERGE: return j->out.merge.changed;
    case OP_PUSH:
    case OP_FETCH: return j->out.sync.success;
    case OP_PULL: return j->out.sync.changed;
    default: return op_change[j->kind] != NO_CHANGE;
    }
}

static void op_done(ecp_job *job)
{
    op_job *j = ecp_job_data(job);
    ecp_call *call = ecp_job_call(job);
    if (ecp_call_answered(call)) {
        /* a transfer past its deadline was answered already; its repository is still watched */
        if (j->root)
            gitsvc_track(j->ad->svc, j->root, j->gitdir);
        return;
    }
    if (j->skipped) {
        reply_error(call, ECP_ECANCELED, NULL, j->uri);
        return;
    }
    if (j->kind == OP_IS_REPO && j->rc && j->err.code == GITSVC_NOT_A_REPO) {
        json_writer *w = ecp_call_result(call);
        jw_object_begin(w);
        jw_key_bool(w, "isRepo", false);
        jw_object_end(w);
        ecp_call_finish(call);
        return;
    }
    if (j->root) {
        /* whatever happened, a change may have: the repository is watched from now on */
        if (!j->rc && op_changed(j))
            gitsvc_changed(j->ad->svc, j->root, j->gitdir, (gitsvc_change_kind)op_change[j->kind]);
        else
            gitsvc_track(j->ad->svc, j->root, j->gitdir);
    }
    if (j->rc) {
        reply_error(call, j->rc, &j->err, j->uri);
        return;
    }
    write_result(j, ecp_call_result(call));
    ecp_call_finish(call);
}

static void op_free(void *data)
{
    op_job *j = data;
    free(j->path);
    free(j->uri);
    free(j->arg);
    free(j->ref);
    free(j->text);
    document_snapshot_release(j->snap);
    gitsvc_tokens_free(j->tokens);
    free(j->tokens);
    if (j->deadline)
        uv_close((uv_handle_t *)j->deadline, (uv_close_cb)free);
    for (size_t i = 0; i < j->path_count; i++)
        free(j->paths[i]);
    free(j->paths);
    free(j->root);
    free(j->gitdir);
    arena_free(&j->mem);
    free(j);
}

/* Operations that change a repository do not stop half-way, but one that
 * has not begun when the server goes down need not begin: nothing is lost. */
static const ecp_job_type op_types[OP_KINDS] = {
#define OP_TYPE(kind, name, lane, change) [kind] = {name, lane, false, op_work, op_done, op_free},
    OPS(OP_TYPE)
#undef OP_TYPE
};

/* ----- params ----------------------------------------------------------------------------------- */

/* Reads `uri` into a new job of kind; NULL when the call was answered. */
static op_job *op_begin(git_adapter *ad, ecp_call *call, op_kind kind)
{
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return NULL;
    buf path = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(uri.ptr, uri.len, &path, &e) != 0) {
        buf_free(&path);
        if (kind == OP_IS_REPO) {
            ecp_call_reply_raw(call, "{\"isRepo\":false}", 16);
            return NULL;
        }
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", e.message);
        return NULL;
    }
    op_job *j = xcalloc(1, sizeof *j);
    j->ad = ad;
    j->kind = kind;
    j->path = buf_detach(&path);
    j->uri = xstrndup(uri.ptr, uri.len);
    arena_init(&j->mem);
    return j;
}

static void op_start(git_adapter *ad, ecp_call *call, op_job *j)
{
    ecp_job *job = ecp_job_new(gitsvc_jobs(ad->svc), &op_types[j->kind], j);
    ecp_job_serve(job, call);
    ecp_job_start(job, 1);
}

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
    ecp_call *call = ecp_job_call(job);
    if (!ecp_call_answered(call) && !ecp_call_abandoned(call)) {
        gitsvc_error err = {.code = GITSVC_NETWORK_ERROR};
        snprintf(err.message, sizeof err.message, "The remote did not finish within %llu ms",
                 (unsigned long long)gitsvc_transfer_timeout_ms(j->ad->svc));
        if (j->kind == OP_FETCH) {
            reply_error(call, ECP_ETIMEDOUT, &err, j->uri);
        } else { /* push and pull say so in their result, as for any failure to reach the remote */
            json_writer *w = ecp_call_result(call);
            jw_object_begin(w);
            jw_key_bool(w, "success", false);
            jw_key_string(w, "error", err.message);
            jw_object_end(w);
            ecp_call_finish(call);
        }
    }
    ecp_job_cancel(job); /* the work sees it at libgit2's next callback (the job's data stays its own) */
}

/* A transfer: the remote's credentials are read from the secret store on
 * the loop first (the call waits, served by the job, which can be
 * cancelled meanwhile), then the job starts with them. Its deadline runs
 * from the call's arrival. */
static void op_start_transfer(git_adapter *ad, ecp_call *call, op_job *j)
{
    ecp_job *job = ecp_job_new(gitsvc_jobs(ad->svc), &op_types[j->kind], j);
    ecp_job_serve(job, call);
    j->deadline = xmalloc(sizeof *j->deadline);
    uv_timer_init(ecp_pool_loop(ad->svc->pool), j->deadline);
    j->deadline->data = job;
    uv_timer_start(j->deadline, transfer_overdue, gitsvc_transfer_timeout_ms(ad->svc), 0);
    gitsvc_tokens_load(ad->svc, tokens_loaded, job);
}

static bool arg_text(ecp_call *call, const char *name, bool required, char **out)
{
    ecp_str s;
    json_ref p = ecp_call_params(call);
    if (required ? !ecp_arg_string(call, p, name, &s) : !ecp_arg_string_opt(call, p, name, &s))
        return false;
    if (s.ptr && memchr(s.ptr, '\0', s.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must not contain a NUL character", name);
        return false;
    }
    *out = s.ptr ? xstrndup(s.ptr, s.len) : NULL;
    return true;
}

static bool arg_bool(ecp_call *call, const char *name, bool def, bool *out)
{
    return ecp_arg_bool_opt(call, ecp_call_params(call), name, def, out);
}

static bool arg_paths(ecp_call *call, op_job *j)
{
    const json_doc *doc = ecp_call_doc(call);
    json_ref arr;
    if (!ecp_arg_array(call, ecp_call_params(call), "paths", &arr))
        return false;
    size_t n = 0;
    for (json_ref e = json_first(doc, arr); e != JSON_NO_REF; e = json_next(doc, e))
        n++;
    if (n == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths: must name at least one path");
        return false;
    }
    j->paths = xcalloc(n, sizeof *j->paths);
    size_t i = 0;
    for (json_ref e = json_first(doc, arr); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        const char *s;
        size_t len;
        if (!json_string(doc, e, ecp_call_arena(call), &s, &len) || memchr(s, '\0', len) || !len) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths[%zu]: must be a non-empty string", i);
            return false;
        }
        buf p = BUF_INIT;
        if (s[0] == '/' || !strncmp(s, "file:", 5)) {
            ecp_error e2;
            if (file_path_from_uri(s, len, &p, &e2) != 0) {
                buf_free(&p);
                ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths[%zu]: %s", i, e2.message);
                return false;
            }
        } else {
            buf_append(&p, s, len);
        }
        j->paths[j->path_count++] = buf_detach(&p);
    }
    return true;
}

/* A path param: relative to the root, absolute, or a file:// URI. */
static bool arg_file(ecp_call *call, const char *name, char **out)
{
    ecp_str s;
    if (!ecp_arg_string(call, ecp_call_params(call), name, &s))
        return false;
    if (!s.len || memchr(s.ptr, '\0', s.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must be a non-empty path", name);
        return false;
    }
    if (!strncmp(s.ptr, "file:", 5)) {
        buf p = BUF_INIT;
        ecp_error e;
        if (file_path_from_uri(s.ptr, s.len, &p, &e) != 0) {
            buf_free(&p);
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: %s", name, e.message);
            return false;
        }
        *out = buf_detach(&p);
    } else {
        *out = xstrndup(s.ptr, s.len);
    }
    return true;
}

/* "stash@{2}" or "2". */
static bool arg_stash(ecp_call *call, op_job *j, bool required)
{
    ecp_str s;
    json_ref p = ecp_call_params(call);
    if (required ? !ecp_arg_string(call, p, "stashId", &s) : !ecp_arg_string_opt(call, p, "stashId", &s))
        return false;
    j->number = 0;
    if (!s.ptr)
        return true;
    const char *d = s.ptr;
    size_t len = s.len;
    if (len > 8 && !strncmp(d, "stash@{", 7) && d[len - 1] == '}') {
        d += 7;
        len -= 8;
    }
    size_t n = 0;
    bool ok = len > 0 && len < 10;
    for (size_t i = 0; ok && i < len; i++) {
        ok = d[i] >= '0' && d[i] <= '9';
        n = n * 10 + (size_t)(d[i] - '0');
    }
    if (!ok) {
        gitsvc_error err;
        gitsvc__fail(&err, ECP_ENOTFOUND, GITSVC_STASH_NOT_FOUND, "%s is not a valid stash reference", s.ptr);
        reply_error(call, err.status, &err, j->uri);
        return false;
    }
    j->number = n;
    return true;
}

/* ----- the methods ------------------------------------------------------------------------------- */

#define BEGIN(kind)                                      \
    git_adapter *ad = ctx;                               \
    op_job *j = op_begin(ad, call, kind);                \
    if (!j)                                              \
        return;

#define FAIL_UNLESS(cond) \
    if (!(cond)) {        \
        op_free(j);       \
        return;           \
    }

static void m_is_repo(void *ctx, ecp_call *call)
{
    BEGIN(OP_IS_REPO);
    op_start(ad, call, j);
}

static void m_branch(void *ctx, ecp_call *call)
{
    BEGIN(OP_BRANCH);
    op_start(ad, call, j);
}

static void m_stage(void *ctx, ecp_call *call)
{
    BEGIN(OP_STAGE);
    FAIL_UNLESS(arg_paths(call, j));
    op_start(ad, call, j);
}

static void m_stage_all(void *ctx, ecp_call *call)
{
    BEGIN(OP_STAGE_ALL);
    op_start(ad, call, j);
}

static void m_unstage(void *ctx, ecp_call *call)
{
    BEGIN(OP_UNSTAGE);
    FAIL_UNLESS(arg_paths(call, j));
    op_start(ad, call, j);
}

static void m_discard(void *ctx, ecp_call *call)
{
    BEGIN(OP_DISCARD);
    FAIL_UNLESS(arg_paths(call, j));
    op_start(ad, call, j);
}

static void m_diff(void *ctx, ecp_call *call)
{
    BEGIN(OP_DIFF);
    FAIL_UNLESS(arg_file(call, "path", &j->arg) && arg_bool(call, "staged", false, &j->flag));
    op_start(ad, call, j);
}

static void m_diff_lines(void *ctx, ecp_call *call)
{
    BEGIN(OP_DIFF_LINES);
    FAIL_UNLESS(arg_file(call, "path", &j->arg));
    op_start(ad, call, j);
}

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

static void m_diff_buffer(void *ctx, ecp_call *call)
{
    BEGIN(OP_DIFF_BUFFER);
    json_ref p = ecp_call_params(call);
    ecp_str content, doc_id;
    FAIL_UNLESS(arg_file(call, "path", &j->arg) && ecp_arg_string_opt(call, p, "content", &content) &&
                ecp_arg_string_opt(call, p, "documentId", &doc_id));
    if (content.ptr) {
        j->text = xmalloc(content.len + 1);
        memcpy(j->text, content.ptr, content.len);
        j->text[content.len] = '\0';
        j->text_len = content.len;
        op_start(ad, call, j);
        return;
    }
    /* no content: the unsaved text of the open document, read from a snapshot off the loop */
    document_service *docs = ad->svc->documents;
    char *id = NULL;
    if (doc_id.ptr) {
        id = xstrndup(doc_id.ptr, doc_id.len);
    } else if (docs && j->arg[0] == '/') {
        /* an absolute path names the document open on that file, if any */
        buf norm = BUF_INIT;
        file_path_normalize(&norm, j->arg, strlen(j->arg));
        doc_lookup l = {norm.data, NULL};
        document_list(docs, find_document, &l);
        id = l.document_id;
        buf_free(&norm);
    }
    ecp_error e;
    j->snap = docs && id ? document_snapshot_take(docs, id, &e) : NULL;
    free(id);
    if (!j->snap) {
        op_free(j);
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS,
                       "content: required string (or documentId, or the absolute path of an open document)");
        return;
    }
    op_start(ad, call, j);
}

static void m_commit(void *ctx, ecp_call *call)
{
    BEGIN(OP_COMMIT);
    FAIL_UNLESS(arg_text(call, "message", true, &j->arg));
    op_start(ad, call, j);
}

static void m_amend(void *ctx, ecp_call *call)
{
    BEGIN(OP_AMEND);
    FAIL_UNLESS(arg_text(call, "message", false, &j->arg));
    op_start(ad, call, j);
}

static void m_log(void *ctx, ecp_call *call)
{
    BEGIN(OP_LOG);
    json_ref p = ecp_call_params(call);
    size_t max_count;
    FAIL_UNLESS(ecp_arg_index_opt(call, p, "maxCount", 50, &max_count) &&
                ecp_arg_index_opt(call, p, "count", max_count, &j->number));
    op_start(ad, call, j);
}

static void m_branches(void *ctx, ecp_call *call)
{
    BEGIN(OP_BRANCHES);
    op_start(ad, call, j);
}

static void m_create_branch(void *ctx, ecp_call *call)
{
    BEGIN(OP_CREATE_BRANCH);
    FAIL_UNLESS(arg_text(call, "name", true, &j->arg) && arg_bool(call, "checkout", true, &j->flag));
    op_start(ad, call, j);
}

static void m_switch_branch(void *ctx, ecp_call *call)
{
    BEGIN(OP_SWITCH_BRANCH);
    FAIL_UNLESS(arg_text(call, "name", true, &j->arg));
    op_start(ad, call, j);
}

static void m_delete_branch(void *ctx, ecp_call *call)
{
    BEGIN(OP_DELETE_BRANCH);
    FAIL_UNLESS(arg_text(call, "name", true, &j->arg) && arg_bool(call, "force", false, &j->flag));
    op_start(ad, call, j);
}

static void m_rename_branch(void *ctx, ecp_call *call)
{
    BEGIN(OP_RENAME_BRANCH);
    FAIL_UNLESS(arg_text(call, "newName", true, &j->arg));
    op_start(ad, call, j);
}

static void m_push(void *ctx, ecp_call *call)
{
    BEGIN(OP_PUSH);
    FAIL_UNLESS(arg_text(call, "remote", false, &j->arg) && arg_bool(call, "force", false, &j->flag) &&
                arg_bool(call, "setUpstream", false, &j->flag2));
    op_start_transfer(ad, call, j);
}

static void m_pull(void *ctx, ecp_call *call)
{
    BEGIN(OP_PULL);
    FAIL_UNLESS(arg_text(call, "remote", false, &j->arg));
    op_start_transfer(ad, call, j);
}

static void m_fetch(void *ctx, ecp_call *call)
{
    BEGIN(OP_FETCH);
    FAIL_UNLESS(arg_text(call, "remote", false, &j->arg));
    op_start_transfer(ad, call, j);
}

static void m_remotes(void *ctx, ecp_call *call)
{
    BEGIN(OP_REMOTES);
    op_start(ad, call, j);
}

static void m_merge(void *ctx, ecp_call *call)
{
    BEGIN(OP_MERGE);
    FAIL_UNLESS(arg_text(call, "branch", true, &j->arg));
    op_start(ad, call, j);
}

static void m_merge_abort(void *ctx, ecp_call *call)
{
    BEGIN(OP_MERGE_ABORT);
    op_start(ad, call, j);
}

static void m_conflicts(void *ctx, ecp_call *call)
{
    BEGIN(OP_CONFLICTS);
    op_start(ad, call, j);
}

static void m_stash(void *ctx, ecp_call *call)
{
    BEGIN(OP_STASH);
    FAIL_UNLESS(arg_text(call, "message", false, &j->arg));
    op_start(ad, call, j);
}

static void m_stash_pop(void *ctx, ecp_call *call)
{
    BEGIN(OP_STASH_POP);
    FAIL_UNLESS(arg_stash(call, j, false));
    op_start(ad, call, j);
}

static void m_stash_list(void *ctx, ecp_call *call)
{
    BEGIN(OP_STASH_LIST);
    op_start(ad, call, j);
}

static void m_stash_drop(void *ctx, ecp_call *call)
{
    BEGIN(OP_STASH_DROP);
    FAIL_UNLESS(arg_stash(call, j, true));
    op_start(ad, call, j);
}

static void m_stash_apply(void *ctx, ecp_call *call)
{
    BEGIN(OP_STASH_APPLY);
    FAIL_UNLESS(arg_stash(call, j, false));
    op_start(ad, call, j);
}

static void m_blame(void *ctx, ecp_call *call)
{
    BEGIN(OP_BLAME);
    FAIL_UNLESS(arg_file(call, "path", &j->arg));
    op_start(ad, call, j);
}

static void m_show(void *ctx, ecp_call *call)
{
    BEGIN(OP_SHOW);
    FAIL_UNLESS(arg_file(call, "path", &j->arg) && arg_text(call, "ref", true, &j->ref));
    op_start(ad, call, j);
}

/* ----- status: from the service's cache, or a job of its own ----------------------------------------- */

typedef struct status_call {
    ecp_call *call;
    char *uri;
} status_call;

static void status_answer(void *ctx, int status, const gitsvc_error *err, const char *root, const gitsvc_status *st)
{
    status_call *s = ctx;
    if (status)
        reply_error(s->call, status, err, s->uri);
    else
        write_status(ecp_call_result(s->call), st), ecp_call_finish(s->call);
    free(s->uri);
    free(s);
}

static void m_status(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str uri;
    bool force;
    if (!ecp_arg_string(call, p, "uri", &uri) || !ecp_arg_bool_opt(call, p, "forceRefresh", false, &force))
        return;
    buf path = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(uri.ptr, uri.len, &path, &e) != 0) {
        buf_free(&path);
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", e.message);
        return;
    }
    status_call *s = xcalloc(1, sizeof *s);
    s->call = call;
    s->uri = xstrndup(uri.ptr, uri.len);
    ecp_job *job = NULL;
    gitsvc_status_get(ad->svc, path.data, force, status_answer, s, &job);
    buf_free(&path);
    if (job) {
        ecp_job_serve(job, call);
        ecp_job_start(job, GITSVC_STATUS_ITEMS);
    }
}

/* ----- notifications ---------------------------------------------------------------------------------- */

static void render_change(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const gitsvc_change *ch = ctx;
    buf u = BUF_INIT;
    file_uri_from_path(&u, ch->path);
    jw_object_begin(w);
    jw_key_string_n(w, "uri", u.data, u.len);
    jw_key_string(w, "rootUri", ch->root);
    jw_key_string(w, "kind", gitsvc_change_kind_name(ch->kind));
    jw_object_end(w);
    buf_free(&u);
}

static void on_change(void *ctx, const gitsvc_change *change)
{
    git_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "git/didChange", render_change, (void *)change);
}

static const gitsvc_listener listener = {on_change};

/* ----- the adapter -------------------------------------------------------------------------------------- */

#define URI "uri: string"
static const ecp_method methods[] = {
    {"git/isRepo", m_is_repo, "1.0", "Whether a path is inside a git work tree, and its root (a plain path)",
     "{" URI "}"},
    {"git/status", m_status, "1.0",
     "Branch, ahead/behind, staged, unstaged and untracked files; cached until a watch sees a change",
     "{" URI ", forceRefresh?: boolean}"},
    {"git/branch", m_branch, "1.0", "The current branch, its upstream and how far ahead and behind it is",
     "{" URI "}"},
    {"git/stage", m_stage, "1.0", "Stage files or directories (deletions too)", "{" URI ", paths: string[]}"},
    {"git/stageAll", m_stage_all, "1.0", "Stage every change of the work tree, as `git add -A`", "{" URI "}"},
    {"git/unstage", m_unstage, "1.0", "Put paths' index entries back to HEAD's", "{" URI ", paths: string[]}"},
    {"git/discard", m_discard, "1.0", "Put paths back to HEAD in the index and the work tree",
     "{" URI ", paths: string[]}"},
    {"git/diff", m_diff, "1.0", "Hunks of one file: work tree against the index, or staged: index against HEAD",
     "{" URI ", path: string, staged?: boolean}"},
    {"git/diffLines", m_diff_lines, "1.0", "Changed lines (1-based) of one file, work tree against the index",
     "{" URI ", path: string}"},
    {"git/diffBuffer", m_diff_buffer, "1.0",
     "Changed lines of unsaved text against HEAD: content, or an open document's snapshot",
     "{" URI ", path: string, content?: string, documentId?: string}"},
    {"git/commit", m_commit, "1.0", "Commit the index with the configured author; nothing staged is success:false",
     "{" URI ", message: string}"},
    {"git/amend", m_amend, "1.0", "Replace HEAD's commit with the index's tree; no message keeps HEAD's",
     "{" URI ", message?: string}"},
    {"git/log", m_log, "1.0", "Commits from HEAD, newest first (count, or maxCount; default 50)",
     "{" URI ", count?: integer >= 0, maxCount?: integer >= 0}"},
    {"git/branches", m_branches, "1.0", "Local branches with their upstreams and tips, and the current one",
     "{" URI "}"},
    {"git/createBranch", m_create_branch, "1.0", "Create a branch at HEAD and (by default) switch to it",
     "{" URI ", name: string, checkout?: boolean}"},
    {"git/switchBranch", m_switch_branch, "1.0", "Check out a local branch, keeping local changes that do not conflict",
     "{" URI ", name: string}"},
    {"git/deleteBranch", m_delete_branch, "1.0", "Delete a local branch; one not merged into HEAD needs force",
     "{" URI ", name: string, force?: boolean}"},
    {"git/renameBranch", m_rename_branch, "1.0", "Rename the current branch", "{" URI ", newName: string}"},
    {"git/push", m_push, "1.0", "Push the current branch; failures come back as success:false",
     "{" URI ", remote?: string, force?: boolean, setUpstream?: boolean}"},
    {"git/pull", m_pull, "1.0", "Fetch, then merge the upstream into the current branch",
     "{" URI ", remote?: string}"},
    {"git/fetch", m_fetch, "1.0", "Fetch a remote (default origin)", "{" URI ", remote?: string}"},
    {"git/remotes", m_remotes, "1.0", "The remotes with their fetch and push URLs", "{" URI "}"},
    {"git/merge", m_merge, "1.0", "Merge a branch into HEAD; conflicts are listed and left to resolve",
     "{" URI ", branch: string}"},
    {"git/mergeAbort", m_merge_abort, "1.0", "Abandon the merge in progress, keeping unrelated local changes",
     "{" URI "}"},
    {"git/conflicts", m_conflicts, "1.0", "Paths with unresolved conflicts", "{" URI "}"},
    {"git/stash", m_stash, "1.0", "Stash the local changes as stash@{0}", "{" URI ", message?: string}"},
    {"git/stashPop", m_stash_pop, "1.0", "Apply a stash (default stash@{0}) and drop it", "{" URI ", stashId?: string}"},
    {"git/stashList", m_stash_list, "1.0", "The stashes, newest first", "{" URI "}"},
    {"git/stashDrop", m_stash_drop, "1.0", "Drop a stash", "{" URI ", stashId: string}"},
    {"git/stashApply", m_stash_apply, "1.0", "Apply a stash (default stash@{0}) and keep it",
     "{" URI ", stashId?: string}"},
    {"git/blame", m_blame, "1.0", "Who last changed each line of a file as it is in the work tree",
     "{" URI ", path: string}"},
    {"git/show", m_show, "1.0", "A file's content at a ref", "{" URI ", path: string, ref: string}"},
};
#undef URI

static void adapter_destroy(void *ctx)
{
    git_adapter *ad = ctx;
    gitsvc_unsubscribe(ad->svc, &listener, ad);
    free(ad);
}

static const char *const notifications[] = {"git/didChange", NULL};

void git_adapter_init(ecp_adapter *out, gitsvc *svc, ecp_bus *bus)
{
    git_adapter *ad = xcalloc(1, sizeof *ad);
    ad->svc = svc;
    ad->bus = bus;
    gitsvc_subscribe(svc, &listener, ad);
    *out = (ecp_adapter){.ns = "git", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = ad, .destroy = adapter_destroy, .notifications = notifications};
}
