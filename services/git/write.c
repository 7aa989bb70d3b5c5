/* write: the changes the service makes to a repository.
 *
 * Each function checks everything it can before it changes anything, and
 * changes the index through libgit2's lock file (written whole, renamed into
 * place): a failure, a lock left behind by another git included, leaves the
 * repository as it was. Any thread.
 */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ----- the index ----------------------------------------------------------------------- */

static int open_index(gitsvc_repo *repo, git_index **out, gitsvc_error *err)
{
    int rc = git_repository_index(out, repo->repo);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the index");
    /* another git may have changed it since this repository was opened */
    git_index_read(*out, 0);
    return 0;
}

static int write_index(git_index *index, gitsvc_error *err)
{
    int rc = git_index_write(index);
    if (rc == GIT_ELOCKED) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED,
                            "Cannot write the index: %s.lock exists (another git is at work, or one crashed and "
                            "left it behind: remove it if no git is running)",
                            git_index_path(index));
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot write the index");
    return 0;
}

/* A pathspec that matches exactly the given paths and whatever is below
 * them: libgit2 reads pathspecs as fnmatch patterns, so a file named "*.c"
 * must not stand for every C file. Free with spec_free. */
static git_strarray exact_spec(const char *const *paths, size_t count)
{
    git_strarray spec = {xcalloc(count ? count : 1, sizeof(char *)), count};
    for (size_t i = 0; i < count; i++) {
        buf b = BUF_INIT;
        for (const char *p = paths[i]; *p; p++) {
            if (strchr("*?[]\\", *p))
                buf_push(&b, '\\');
            buf_push(&b, *p);
        }
        spec.strings[i] = b.data ? buf_detach(&b) : xstrdup("");
    }
    return spec;
}

static void spec_free(git_strarray *spec)
{
    for (size_t i = 0; i < spec->count; i++)
        free(spec->strings[i]);
    free(spec->strings);
}

/* Whether rel names something in the work tree or in the index. */
static bool path_known(gitsvc_repo *repo, git_index *index, const char *rel)
{
    if (!rel[0])
        return true;
    buf p = BUF_INIT;
    buf_appendf(&p, "%s/%s", repo->root, rel);
    struct stat st;
    bool known = lstat(p.data, &st) == 0;
    buf_free(&p);
    size_t at;
    if (!known)
        known = git_index_find_prefix(&at, index, rel) == 0;
    git_error_clear();
    return known;
}

int gitsvc_stage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, bool all, gitsvc_error *err)
{
    git_index *index = NULL;
    int rc = open_index(repo, &index, err);
    if (rc)
        return rc;
    for (size_t i = 0; !all && i < count; i++) {
        if (!path_known(repo, index, rel_paths[i])) {
            git_index_free(index);
            return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_FILE_NOT_FOUND, "pathspec '%s' did not match any files",
                                rel_paths[i]);
        }
    }
    git_strarray spec = exact_spec(rel_paths, all ? 0 : count);
    const git_strarray *ps = all ? NULL : &spec;
    rc = git_index_add_all(index, ps, GIT_INDEX_ADD_DEFAULT, NULL, NULL);
    if (rc == 0)
        rc = git_index_update_all(index, ps, NULL, NULL); /* files deleted from the work tree */
    if (rc < 0)
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot stage");
    else
        rc = write_index(index, err);
    spec_free(&spec);
    git_index_free(index);
    return rc;
}

/* The paths as HEAD has them: in the index (unstage), and with work_tree in
 * the work tree too (discard). */
static int reset_to_head(gitsvc_repo *repo, const char *const *rel_paths, size_t count, bool work_tree,
                         gitsvc_error *err)
{
    git_commit *head = NULL;
    int rc = gitsvc__head_commit(repo->repo, &head, err);
    if (rc)
        return rc;
    git_strarray spec = exact_spec(rel_paths, count);
    rc = git_reset_default(repo->repo, (git_object *)head, &spec);
    if (rc == 0 && head && work_tree) {
        git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
        co.checkout_strategy = GIT_CHECKOUT_FORCE;
        co.paths = spec;
        rc = git_checkout_head(repo->repo, &co);
    }
    spec_free(&spec);
    git_commit_free(head);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED,
                               work_tree ? "Cannot discard the changes" : "Cannot unstage");
    return 0;
}

int gitsvc_unstage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err)
{
    return reset_to_head(repo, rel_paths, count, false, err);
}

int gitsvc_discard(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err)
{
    return reset_to_head(repo, rel_paths, count, true, err);
}

/* ----- commits --------------------------------------------------------------------------- */

static int signature(gitsvc_repo *repo, git_signature **out, gitsvc_error *err)
{
    int rc = git_signature_default(out, repo->repo);
    if (rc < 0) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED,
                            "Author identity unknown: set user.name and user.email in the git configuration of %s",
                            repo->root);
    }
    return 0;
}

/* The message as `git commit -m` stores it: surrounding blank lines and
 * trailing spaces removed, one final newline. */
static int clean_message(const char *message, git_buf *out, gitsvc_error *err)
{
    int rc = git_message_prettify(out, message ? message : "", 0, '#');
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the message");
    if (!out->size) {
        git_buf_dispose(out);
        return gitsvc__fail(err, ECP_EINVAL, GITSVC_COMMAND_FAILED, "Aborting commit due to empty commit message");
    }
    return 0;
}

/* What a commit and an amend both read first: the author, the cleaned
 * message (when there is one) and the index. */
typedef struct commit_inputs {
    git_signature *sig;
    git_buf msg;
    git_index *index;
} commit_inputs;

static int commit_inputs_read(gitsvc_repo *repo, const char *message, commit_inputs *in, gitsvc_error *err)
{
    int rc;
    if ((rc = signature(repo, &in->sig, err)) || (message && (rc = clean_message(message, &in->msg, err))))
        return rc;
    return open_index(repo, &in->index, err);
}

static void commit_inputs_free(commit_inputs *in)
{
    git_index_free(in->index);
    git_buf_dispose(&in->msg);
    git_signature_free(in->sig);
}

static int no_conflicts(git_index *index, gitsvc_error *err)
{
    if (!git_index_has_conflicts(index))
        return 0;
    return gitsvc__fail(err, ECP_ESTATE, GITSVC_MERGE_CONFLICT,
                        "Committing is not possible because you have unmerged files");
}

typedef struct parents {
    git_commit *items[16];
    size_t count;
    git_repository *repo;
    int rc;
} parents;

static int on_merge_head(const git_oid *oid, void *payload)
{
    parents *p = payload;
    if (p->count == sizeof p->items / sizeof p->items[0])
        return 0;
    p->rc = git_commit_lookup(&p->items[p->count], p->repo, oid);
    if (p->rc == 0)
        p->count++;
    return p->rc;
}

static void parents_free(parents *p)
{
    for (size_t i = 0; i < p->count; i++)
        git_commit_free(p->items[i]);
    p->count = 0;
}

int gitsvc_commit(gitsvc_repo *repo, const char *message, arena *mem, gitsvc_commit_result *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    commit_inputs in = {.msg = GIT_BUF_INIT};
    git_tree *tree = NULL;
    parents par = {.repo = repo->repo};
    int rc;
    if ((rc = commit_inputs_read(repo, message ? message : "", &in, err)) || (rc = no_conflicts(in.index, err)))
        goto end;
    git_commit *head = NULL;
    if ((rc = gitsvc__head_commit(repo->repo, &head, err)))
        goto end;
    if (head)
        par.items[par.count++] = head;
    bool merging = git_repository_state(repo->repo) == GIT_REPOSITORY_STATE_MERGE;
    if (merging && (rc = git_repository_mergehead_foreach(repo->repo, on_merge_head, &par)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read MERGE_HEAD");
        goto end;
    }
    git_oid tree_id, commit_id;
    if ((rc = git_index_write_tree(&tree_id, in.index)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot write the tree");
        goto end;
    }
    bool unchanged = head ? git_oid_equal(&tree_id, git_commit_tree_id(head)) : git_index_entrycount(in.index) == 0;
    if (unchanged && !merging) {
        out->success = false;
        out->error = "Nothing to commit";
        rc = 0;
        goto end;
    }
    if ((rc = git_tree_lookup(&tree, repo->repo, &tree_id)) < 0 ||
        (rc = git_commit_create(&commit_id, repo->repo, "HEAD", in.sig, in.sig, NULL, in.msg.ptr, tree, par.count,
                                (const git_commit **)par.items)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot commit");
        goto end;
    }
    if (merging)
        git_repository_state_cleanup(repo->repo);
    out->success = true;
    gitsvc__short_hash(out->hash, &commit_id);
    rc = 0;
end:
    (void)mem;
    parents_free(&par);
    git_tree_free(tree);
    commit_inputs_free(&in);
    return rc;
}

int gitsvc_amend(gitsvc_repo *repo, const char *message, arena *mem, gitsvc_commit_result *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    commit_inputs in = {.msg = GIT_BUF_INIT};
    git_commit *head = NULL;
    git_tree *tree = NULL;
    int rc;
    if ((rc = commit_inputs_read(repo, message, &in, err)) || (rc = gitsvc__head_commit(repo->repo, &head, err)))
        goto end;
    if (!head) {
        rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_INVALID_REF, "You have nothing to amend: there is no commit yet");
        goto end;
    }
    if ((rc = no_conflicts(in.index, err)))
        goto end;
    git_oid tree_id, commit_id;
    if ((rc = git_index_write_tree(&tree_id, in.index)) < 0 ||
        (rc = git_tree_lookup(&tree, repo->repo, &tree_id)) < 0 ||
        (rc = git_commit_amend(&commit_id, head, "HEAD", NULL, in.sig, NULL, message ? in.msg.ptr : NULL, tree)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot amend");
        goto end;
    }
    out->success = true;
    gitsvc__short_hash(out->hash, &commit_id);
    rc = 0;
end:
    (void)mem;
    git_tree_free(tree);
    git_commit_free(head);
    commit_inputs_free(&in);
    return rc;
}

/* ----- branches ------------------------------------------------------------------------------- */

static int valid_branch_name(const char *name, gitsvc_error *err)
{
    int valid = 0;
    if (!name[0] || git_branch_name_is_valid(&valid, name) < 0 || !valid || !strcmp(name, "HEAD"))
        return gitsvc__fail(err, ECP_EINVAL, GITSVC_INVALID_REF, "'%s' is not a valid branch name", name);
    return 0;
}

static int lookup_branch(gitsvc_repo *repo, const char *name, git_reference **out, gitsvc_error *err)
{
    int rc = git_branch_lookup(out, repo->repo, name, GIT_BRANCH_LOCAL);
    if (rc == GIT_ENOTFOUND || rc == GIT_EINVALIDSPEC) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_BRANCH_NOT_FOUND, "Branch not found: %s", name);
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the branch");
    return 0;
}

static int set_head_branch(gitsvc_repo *repo, const char *name, gitsvc_error *err)
{
    buf ref = BUF_INIT;
    buf_appendf(&ref, "refs/heads/%s", name);
    int rc = git_repository_set_head(repo->repo, ref.data);
    buf_free(&ref);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot move HEAD");
    return 0;
}

int gitsvc_branch_create(gitsvc_repo *repo, const char *name, bool checkout, gitsvc_error *err)
{
    int rc = valid_branch_name(name, err);
    if (rc)
        return rc;
    git_commit *head = NULL;
    if ((rc = gitsvc__head_commit(repo->repo, &head, err)))
        return rc;
    if (!head)
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_INVALID_REF,
                            "Cannot create branch '%s': there is no commit to start it from", name);
    git_reference *ref = NULL;
    rc = git_branch_create(&ref, repo->repo, name, head, 0);
    git_commit_free(head);
    if (rc == GIT_EEXISTS) {
        git_error_clear();
        return gitsvc__fail(err, ECP_EEXIST, GITSVC_BRANCH_EXISTS, "A branch named '%s' already exists", name);
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot create the branch");
    git_reference_free(ref);
    /* the new branch points at HEAD's commit: only HEAD moves */
    return checkout ? set_head_branch(repo, name, err) : 0;
}

/* Checks out target's tree over the current one, keeping local changes that
 * do not conflict; nothing is touched when some would be overwritten. */
static int checkout_commit(gitsvc_repo *repo, git_commit *target, gitsvc_error *err)
{
    git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
    co.checkout_strategy = GIT_CHECKOUT_SAFE;
    int rc = git_checkout_tree(repo->repo, (git_object *)target, &co);
    if (rc == GIT_ECONFLICT) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_UNCOMMITTED_CHANGES,
                            "Your local changes would be overwritten: commit or stash them first");
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot check out");
    return 0;
}

int gitsvc_branch_switch(gitsvc_repo *repo, const char *name, const ecp_job *job, gitsvc_error *err)
{
    git_reference *ref = NULL;
    int rc = lookup_branch(repo, name, &ref, err);
    if (rc)
        return rc;
    git_commit *target = NULL;
    rc = git_reference_peel((git_object **)&target, ref, GIT_OBJECT_COMMIT);
    git_reference_free(ref);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the branch");
    if (!(rc = gitsvc__check_cancel(job, err)) && !(rc = checkout_commit(repo, target, err)))
        rc = set_head_branch(repo, name, err);
    git_commit_free(target);
    return rc;
}

int gitsvc_branch_delete(gitsvc_repo *repo, const char *name, bool force, gitsvc_error *err)
{
    git_reference *ref = NULL;
    int rc = lookup_branch(repo, name, &ref, err);
    if (rc)
        return rc;
    if (git_branch_is_head(ref) == 1) {
        git_reference_free(ref);
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED,
                            "Cannot delete branch '%s': it is the current branch", name);
    }
    if (!force) {
        git_commit *head = NULL;
        const git_oid *tip = git_reference_target(ref);
        if ((rc = gitsvc__head_commit(repo->repo, &head, err))) {
            git_reference_free(ref);
            return rc;
        }
        bool merged = head && tip &&
                      (git_oid_equal(git_commit_id(head), tip) ||
                       git_graph_descendant_of(repo->repo, git_commit_id(head), tip) == 1);
        git_commit_free(head);
        if (!merged) {
            git_reference_free(ref);
            return gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED,
                                "The branch '%s' is not fully merged: delete it with force", name);
        }
    }
    rc = git_branch_delete(ref);
    git_reference_free(ref);
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot delete the branch");
    return 0;
}

int gitsvc_branch_rename(gitsvc_repo *repo, const char *new_name, gitsvc_error *err)
{
    int rc = valid_branch_name(new_name, err);
    if (rc)
        return rc;
    arena mem = ARENA_INIT;
    gitsvc_status head;
    memset(&head, 0, sizeof head);
    rc = gitsvc__head_info(repo->repo, &mem, &head, err);
    if (rc == 0 && head.detached)
        rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED, "No branch to rename: HEAD is detached");
    if (rc == 0 && !strcmp(head.branch, new_name))
        goto end;
    git_reference *existing = NULL;
    if (rc == 0 && git_branch_lookup(&existing, repo->repo, new_name, GIT_BRANCH_LOCAL) == 0) {
        git_reference_free(existing);
        rc = gitsvc__fail(err, ECP_EEXIST, GITSVC_BRANCH_EXISTS, "A branch named '%s' already exists", new_name);
    }
    git_error_clear();
    if (rc)
        goto end;
    if (head.unborn) {
        /* no commit yet: only HEAD names the branch */
        rc = set_head_branch(repo, new_name, err);
        goto end;
    }
    git_reference *ref = NULL, *moved = NULL;
    if ((rc = lookup_branch(repo, head.branch, &ref, err)))
        goto end;
    rc = git_branch_move(&moved, ref, new_name, 0);
    git_reference_free(ref);
    git_reference_free(moved);
    if (rc < 0)
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot rename the branch");
end:
    arena_free(&mem);
    return rc;
}

/* ----- stashes ---------------------------------------------------------------------------------- */

int gitsvc_stash_push(gitsvc_repo *repo, const char *message, gitsvc_error *err)
{
    git_signature *sig = NULL;
    int rc = signature(repo, &sig, err);
    if (rc)
        return rc;
    git_commit *head = NULL;
    if ((rc = gitsvc__head_commit(repo->repo, &head, err)) == 0 && !head)
        rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED, "You do not have the initial commit yet");
    git_commit_free(head);
    git_oid id;
    if (rc == 0 && (rc = git_stash_save(&id, repo->repo, sig, message && message[0] ? message : NULL,
                                        GIT_STASH_DEFAULT)) < 0) {
        if (rc == GIT_ENOTFOUND) {
            git_error_clear();
            rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_NOTHING_TO_COMMIT, "No local changes to save");
        } else {
            rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot stash");
        }
    }
    git_signature_free(sig);
    return rc < 0 ? rc : 0;
}

static int count_stash(size_t index, const char *message, const git_oid *stash_id, void *payload)
{
    ++*(size_t *)payload;
    return 0;
}

int gitsvc_stash_apply(gitsvc_repo *repo, gitsvc_stash_op op, size_t index, gitsvc_error *err)
{
    size_t count = 0;
    git_stash_foreach(repo->repo, count_stash, &count);
    git_error_clear();
    if (count == 0)
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_NO_STASH, "No stash entries found");
    if (index >= count)
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_STASH_NOT_FOUND, "stash@{%zu} is not a valid stash", index);
    git_stash_apply_options o = GIT_STASH_APPLY_OPTIONS_INIT;
    o.checkout_options.checkout_strategy = GIT_CHECKOUT_SAFE;
    int rc;
    switch (op) {
    case GITSVC_STASH_APPLY: rc = git_stash_apply(repo->repo, index, &o); break;
    case GITSVC_STASH_POP: rc = git_stash_pop(repo->repo, index, &o); break;
    default: rc = git_stash_drop(repo->repo, index); break;
    }
    if (rc == GIT_ECONFLICT || rc == GIT_EMERGECONFLICT) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ESTATE, rc == GIT_ECONFLICT ? GITSVC_UNCOMMITTED_CHANGES : GITSVC_MERGE_CONFLICT,
                            "The stash conflicts with local changes: commit or stash them first");
    }
    if (rc < 0)
        return gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot apply the stash");
    return 0;
}

/* ----- merges ------------------------------------------------------------------------------------ */

static int conflict_paths(git_repository *repo, arena *mem, gitsvc_merge_result *out)
{
    gitsvc_repo r = {.repo = repo};
    return gitsvc_conflicts_read(&r, mem, &out->conflicts, &out->conflict_count, NULL);
}

int gitsvc_merge(gitsvc_repo *repo, const char *branch, const ecp_job *job, arena *mem, gitsvc_merge_result *out,
                 gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    git_reference *ref = NULL;
    git_annotated_commit *theirs = NULL;
    git_commit *head = NULL, *their_commit = NULL;
    git_signature *sig = NULL;
    git_index *index = NULL;
    git_tree *tree = NULL;
    int rc = git_reference_dwim(&ref, repo->repo, branch);
    if (rc < 0) {
        git_error_clear();
        return gitsvc__fail(err, ECP_ENOTFOUND, GITSVC_BRANCH_NOT_FOUND, "Branch not found: %s", branch);
    }
    if (git_repository_state(repo->repo) != GIT_REPOSITORY_STATE_NONE) {
        rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_MERGE_CONFLICT,
                          "A merge (or another operation) is in progress: conclude or abort it first");
        goto end;
    }
    if ((rc = git_annotated_commit_from_ref(&theirs, repo->repo, ref)) < 0 ||
        (rc = git_commit_lookup(&their_commit, repo->repo, git_annotated_commit_id(theirs))) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot read the branch");
        goto end;
    }
    git_merge_analysis_t analysis;
    git_merge_preference_t pref;
    const git_annotated_commit *heads[] = {theirs};
    if ((rc = git_merge_analysis(&analysis, &pref, repo->repo, heads, 1)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot merge");
        goto end;
    }
    if ((rc = gitsvc__check_cancel(job, err)))
        goto end;
    if (analysis & GIT_MERGE_ANALYSIS_UP_TO_DATE) {
        out->success = true;
        out->message = "Already up to date.";
        goto end;
    }
    if ((rc = gitsvc__head_commit(repo->repo, &head, err)))
        goto end;
    if ((analysis & (GIT_MERGE_ANALYSIS_FASTFORWARD | GIT_MERGE_ANALYSIS_UNBORN)) &&
        !(pref & GIT_MERGE_PREFERENCE_NO_FASTFORWARD)) {
        if ((rc = checkout_commit(repo, their_commit, err)))
            goto end;
        git_reference *head_ref = NULL, *target_ref = NULL, *moved = NULL;
        rc = git_reference_lookup(&head_ref, repo->repo, "HEAD");
        if (rc == 0) {
            if (git_reference_resolve(&target_ref, head_ref) == 0) {
                rc = git_reference_set_target(&moved, target_ref, git_commit_id(their_commit), "merge: Fast-forward");
            } else {
                /* unborn: create the branch HEAD names */
                git_error_clear();
                rc = git_reference_create(&moved, repo->repo, git_reference_symbolic_target(head_ref),
                                          git_commit_id(their_commit), 0, "merge: initial");
            }
        }
        git_reference_free(moved);
        git_reference_free(target_ref);
        git_reference_free(head_ref);
        if (rc < 0) {
            rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot move the branch");
            goto end;
        }
        out->success = true;
        out->changed = true;
        out->message = "Fast-forward";
        goto end;
    }
    /* A merge commit needs an author: know it before anything changes. */
    if ((rc = signature(repo, &sig, err)))
        goto end;
    git_merge_options mo = GIT_MERGE_OPTIONS_INIT;
    git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
    co.checkout_strategy = GIT_CHECKOUT_SAFE | GIT_CHECKOUT_ALLOW_CONFLICTS;
    rc = git_merge(repo->repo, heads, 1, &mo, &co);
    if (rc == GIT_ECONFLICT) {
        git_error_clear();
        rc = gitsvc__fail(err, ECP_ESTATE, GITSVC_UNCOMMITTED_CHANGES,
                          "Your local changes would be overwritten by the merge: commit or stash them first");
        goto end;
    }
    if (rc < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot merge");
        goto end;
    }
    if ((rc = open_index(repo, &index, err)))
        goto end;
    if (git_index_has_conflicts(index)) {
        /* left for the user to resolve and commit, or to abort */
        conflict_paths(repo->repo, mem, out);
        out->success = false;
        out->changed = true;
        out->message = "Automatic merge failed; fix conflicts and then commit the result.";
        goto end;
    }
    git_oid tree_id, commit_id;
    const char *shorthand = git_reference_shorthand(ref);
    char *message = arena_sprintf(mem, "Merge %sbranch '%s'\n", git_reference_is_remote(ref) ? "remote-tracking " : "",
                                  shorthand);
    const git_commit *parents2[] = {head, their_commit};
    if ((rc = git_index_write_tree(&tree_id, index)) < 0 || (rc = git_tree_lookup(&tree, repo->repo, &tree_id)) < 0 ||
        (rc = git_commit_create(&commit_id, repo->repo, "HEAD", sig, sig, NULL, message, tree, 2, parents2)) < 0) {
        rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot commit the merge");
        goto end;
    }
    git_repository_state_cleanup(repo->repo);
    out->success = true;
    out->changed = true;
    out->message = "Merge made by the 'ort' strategy.";
    rc = 0;
end:
    git_tree_free(tree);
    git_index_free(index);
    git_signature_free(sig);
    git_commit_free(head);
    git_commit_free(their_commit);
    git_annotated_commit_free(theirs);
    git_reference_free(ref);
    return rc;
}

typedef struct merged_paths {
    char **items;
    size_t count, cap;
} merged_paths;

static int on_merged_delta(const git_diff_delta *delta, float progress, void *payload)
{
    merged_paths *m = payload;
    for (int side = 0; side < 2; side++) {
        const char *path = side ? delta->new_file.path : delta->old_file.path;
        if (side && !strcmp(path, delta->old_file.path))
            break;
        if (m->count == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 16;
            m->items = xrealloc(m->items, m->cap * sizeof *m->items);
        }
        m->items[m->count++] = xstrdup(path);
    }
    return 0;
}

static int on_first_merge_head(const git_oid *oid, void *payload)
{
    git_oid_cpy(payload, oid);
    return 1;
}

int gitsvc_merge_abort(gitsvc_repo *repo, gitsvc_error *err)
{
    if (git_repository_state(repo->repo) != GIT_REPOSITORY_STATE_MERGE)
        return gitsvc__fail(err, ECP_ESTATE, GITSVC_COMMAND_FAILED, "There is no merge to abort (MERGE_HEAD missing)");
    git_commit *head = NULL, *theirs = NULL, *base = NULL;
    int rc = gitsvc__head_commit(repo->repo, &head, err);
    if (rc)
        return rc;
    /* The merge touched only what changed between the merge base and the
     * other side, and it refused to start over local changes to those files:
     * put exactly those paths back to HEAD and keep every other local
     * change, staged or not, as `git merge --abort` does. */
    merged_paths m = {0};
    git_tree *head_tree = NULL, *their_tree = NULL, *base_tree = NULL;
    git_diff *diff = NULL;
    git_index *index = NULL;
    git_oid their_id, base_id;
    git_repository_mergehead_foreach(repo->repo, on_first_merge_head, &their_id);
    if (!head || (rc = git_commit_lookup(&theirs, repo->repo, &their_id)) < 0 ||
        (rc = git_merge_base(&base_id, repo->repo, git_commit_id(head), &their_id)) < 0 ||
        (rc = git_commit_lookup(&base, repo->repo, &base_id)) < 0 || (rc = git_commit_tree(&head_tree, head)) < 0 ||
        (rc = git_commit_tree(&their_tree, theirs)) < 0 || (rc = git_commit_tree(&base_tree, base)) < 0)
        goto failed;
    git_diff_options o = GIT_DIFF_OPTIONS_INIT;
    if ((rc = git_diff_tree_to_tree(&diff, repo->repo, base_tree, their_tree, &o)) < 0 ||
        (rc = git_diff_foreach(diff, on_merged_delta, NULL, NULL, NULL, &m)) < 0)
        goto failed;
    if ((rc = open_index(repo, &index, err)))
        goto end;
    for (size_t i = 0; i < m.count; i++) {
        git_index_conflict_remove(index, m.items[i]);
        git_tree_entry *e = NULL;
        if (git_tree_entry_bypath(&e, head_tree, m.items[i]) == 0) {
            git_index_entry entry;
            memset(&entry, 0, sizeof entry);
            entry.mode = git_tree_entry_filemode(e);
            git_oid_cpy(&entry.id, git_tree_entry_id(e));
            entry.path = m.items[i];
            rc = git_index_add(index, &entry);
            git_tree_entry_free(e);
        } else {
            git_index_remove_bypath(index, m.items[i]);
            buf p = BUF_INIT;
            buf_appendf(&p, "%s/%s", repo->root, m.items[i]);
            unlink(p.data);
            buf_free(&p);
        }
        git_error_clear();
        if (rc < 0)
            goto failed;
    }
    if ((rc = write_index(index, err)))
        goto end;
    if (m.count) {
        git_checkout_options co = GIT_CHECKOUT_OPTIONS_INIT;
        co.checkout_strategy = GIT_CHECKOUT_FORCE | GIT_CHECKOUT_DISABLE_PATHSPEC_MATCH;
        co.paths.strings = m.items;
        co.paths.count = m.count;
        if ((rc = git_checkout_head(repo->repo, &co)) < 0)
            goto failed;
    }
    git_repository_state_cleanup(repo->repo);
    rc = 0;
    goto end;
failed:
    rc = gitsvc__libgit2(err, rc, GITSVC_COMMAND_FAILED, "Cannot abort the merge");
end:
    for (size_t i = 0; i < m.count; i++)
        free(m.items[i]);
    free(m.items);
    git_diff_free(diff);
    git_index_free(index);
    git_tree_free(head_tree);
    git_tree_free(their_tree);
    git_tree_free(base_tree);
    git_commit_free(head);
    git_commit_free(theirs);
    git_commit_free(base);
    return rc;
}
