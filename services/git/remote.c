/* remote: fetch, push and pull, without prompts.
 *
 * Credentials come from credentials.c: an ssh-agent's keys or the URL's
 * user name for SSH, the session's token for HTTP(S), each offered once;
 * anything else (a password nobody stored, a second attempt) fails at once
 * as an authentication failure, so nothing ever waits for a person.
 * Every callback libgit2 makes during a transfer polls the job's cancel
 * flag, so a cancelled transfer stops at its next callback. libgit2 1.5 has
 * no connect or read timeout of its own (and a stream of our own with one
 * would break its SSH transport, which reaches into libgit2's socket
 * stream): a remote that accepts a connection and then says nothing holds
 * the transfer until the system's TCP timeouts end it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct transfer {
    const ecp_job *job;
    gitsvc_credentials credentials;
    bool cancelled;
    char push_error[256];
    arena *mem;
} transfer;

/* Non-zero stops the transfer: the job was cancelled. */
static int keep_going(transfer *t)
{
    if (t->job && ecp_job_cancelled(t->job)) {
        t->cancelled = true;
        return -1;
    }
    return 0;
}

static int on_credentials(git_credential **out, const char *url, const char *username_from_url,
                          unsigned int allowed_types, void *payload)
{
    transfer *t = payload;
    if (keep_going(t))
        return -1;
    return gitsvc_credentials_acquire(out, url, username_from_url, allowed_types, &t->credentials);
}

static int on_transfer(const git_indexer_progress *stats, void *payload)
{
    return keep_going(payload);
}

static int on_sideband(const char *str, int len, void *payload)
{
    return keep_going(payload);
}

static int on_push_transfer(unsigned int current, unsigned int total, size_t bytes, void *payload)
{
    return keep_going(payload);
}

static int on_pack_progress(int stage, uint32_t current, uint32_t total, void *payload)
{
    return keep_going(payload);
}

static int on_push_update(const char *refname, const char *status, void *data)
{
    transfer *t = data;
    if (status && !t->push_error[0])
        snprintf(t->push_error, sizeof t->push_error, "%s: %s", refname, status);
    return 0;
}

static void callbacks_init(git_remote_callbacks *cb, transfer *t)
{
    cb->credentials = on_credentials;
    cb->transfer_progress = on_transfer;
    cb->sideband_progress = on_sideband;
    cb->push_transfer_progress = on_push_transfer;
    cb->pack_progress = on_pack_progress;
    cb->push_update_reference = on_push_update;
    cb->payload = t;
}


/* A failed transfer in the result: its kind and libgit2's words. */
static int transfer_failed(transfer *t, int rc, gitsvc_sync_result *out, gitsvc_error *err, const char *what)
{
    if (t->cancelled)
        return gitsvc__fail(err, ECP_ECANCELED, GITSVC_COMMAND_FAILED, "Request cancelled");
    const git_error *e = git_error_last();
    out->success = false;
    if (t->credentials.failed || rc == GIT_EAUTH)
        out->code = GITSVC_AUTH_FAILED;
    else if (e && (e->klass == GIT_ERROR_NET || e->klass == GIT_ERROR_SSH || e->klass == GIT_ERROR_HTTP ||
                   e->klass == GIT_ERROR_OS || e->klass == GIT_ERROR_SSL))
        out->code = GITSVC_NETWORK_ERROR;
    else
        out->code = GITSVC_COMMAND_FAILED;
    out->error = arena_sprintf(t->mem, "%s: %s", what, e && e->message ? e->message : "failed");
    git_error_clear();
    return 0;
}

/* The remote a transfer talks to, and t and the callbacks that report to it
 * ready; false when there is no such remote (res says so). */
static bool transfer_open(gitsvc_repo *repo, const gitsvc_remote_options *o, const ecp_job *job, arena *mem,
                          git_remote **remote, transfer *t, git_remote_callbacks *cb, gitsvc_sync_result *res)
{
    const char *name = o && o->remote && o->remote[0] ? o->remote : "origin";
    if (git_remote_lookup(remote, repo->repo, name) < 0) {
        git_error_clear();
        res->success = false;
        res->code = GITSVC_COMMAND_FAILED;
        res->error = arena_sprintf(mem, "No such remote: %s", name);
        return false;
    }
    memset(t, 0, sizeof *t);
    t->credentials.tokens = o ? o->tokens : NULL;
    t->job = job;
    t->mem = mem;
    callbacks_init(cb, t);
    return true;
}

int gitsvc_fetch(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                 gitsvc_sync_result *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    int rc = gitsvc__check_cancel(job, err);
    if (rc)
        return rc;
    git_fetch_options fo = GIT_FETCH_OPTIONS_INIT;
    git_remote *remote = NULL;
    transfer t;
    if (!transfer_open(repo, options, job, mem, &remote, &t, &fo.callbacks, out))
        return 0;
    rc = git_remote_fetch(remote, NULL, &fo, NULL);
    git_remote_free(remote);
    if (rc < 0)
        return transfer_failed(&t, rc, out, err, "Fetch failed");
    out->success = true;
    return 0;
}

/* A force push replaces the remote branch only when it is where our
 * remote-tracking branch says it is (`git push --force-with-lease`): a
 * branch someone else moved since we last fetched is not overwritten
 * unseen. Reads the refs the connected remote advertises; the push that
 * follows on the same connection sends the advertised tip as the old value,
 * so the remote refuses it if the branch moves in between. false: stale
 * (out says so). */
static bool lease_holds(gitsvc_repo *repo, git_remote *remote, const char *branch, arena *mem,
                        gitsvc_sync_result *out)
{
    const git_remote_head **heads = NULL;
    size_t count = 0;
    if (git_remote_ls(&heads, &count, remote) < 0) {
        git_error_clear();
        count = 0;
    }
    char *ref = arena_sprintf(mem, "refs/heads/%s", branch);
    const git_oid *theirs = NULL;
    for (size_t i = 0; i < count && !theirs; i++)
        if (!strcmp(heads[i]->name, ref))
            theirs = &heads[i]->oid;
    if (!theirs)
        return true; /* nothing there to overwrite */
    git_oid known;
    char *tracking = arena_sprintf(mem, "refs/remotes/%s/%s", git_remote_name(remote), branch);
    bool holds = git_reference_name_to_id(&known, repo->repo, tracking) == 0 && git_oid_equal(&known, theirs);
    git_error_clear();
    if (!holds) {
        out->success = false;
        out->code = GITSVC_PUSH_REJECTED;
        out->error = arena_sprintf(mem,
                                   "Push rejected: %s: stale info (the remote branch is not where %s/%s says it "
                                   "is; fetch first)",
                                   ref, git_remote_name(remote), branch);
    }
    return holds;
}

int gitsvc_push(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err)
{
    memset(out, 0, sizeof *out);
    gitsvc_status head = {0};
    int rc;
    if ((rc = gitsvc__check_cancel(job, err)) || (rc = gitsvc__head_info(repo->repo, mem, &head, err)))
        return rc;
    if (head.detached || head.unborn) {
        out->code = GITSVC_COMMAND_FAILED;
        out->error = head.detached ? "You are not currently on a branch" : "There is no commit to push yet";
        return 0;
    }
    git_push_options po = GIT_PUSH_OPTIONS_INIT;
    git_remote *remote = NULL;
    transfer t;
    if (!transfer_open(repo, options, job, mem, &remote, &t, &po.callbacks, out))
        return 0;
    if (options && options->force) {
        rc = git_remote_connect(remote, GIT_DIRECTION_PUSH, &po.callbacks, &po.proxy_opts, NULL);
        if (rc < 0) {
            git_remote_free(remote);
            transfer_failed(&t, rc, out, err, "Push failed");
            return t.cancelled ? ECP_ECANCELED : 0;
        }
        if (!lease_holds(repo, remote, head.branch, mem, out)) {
            git_remote_disconnect(remote);
            git_remote_free(remote);
            return 0;
        }
    }
    char *refspec = arena_sprintf(mem, "%srefs/heads/%s:refs/heads/%s", options && options->force ? "+" : "",
                                  head.branch, head.branch);
    char *specs[] = {refspec};
    git_strarray refspecs = {specs, 1};
    rc = git_remote_push(remote, &refspecs, &po);
    if (rc < 0) {
        git_remote_free(remote);
        transfer_failed(&t, rc, out, err, "Push failed");
        if (out->code == GITSVC_COMMAND_FAILED && !t.cancelled) {
            const char *text = out->error ? out->error : "";
            if (strstr(text, "non-fast-forward") || strstr(text, "fast forward") || strstr(text, "rejected"))
                out->code = GITSVC_PUSH_REJECTED;
        }
        return t.cancelled ? ECP_ECANCELED : 0;
    }
    if (t.push_error[0]) {
        git_remote_free(remote);
        out->success = false;
        out->code = GITSVC_PUSH_REJECTED;
        out->error = arena_sprintf(mem, "Push rejected: %s", t.push_error);
        return 0;
    }
    if (options && options->set_upstream) {
        git_reference *branch = NULL;
        char *upstream = arena_sprintf(mem, "%s/%s", git_remote_name(remote), head.branch);
        if (git_branch_lookup(&branch, repo->repo, head.branch, GIT_BRANCH_LOCAL) == 0)
            git_branch_set_upstream(branch, upstream);
        git_reference_free(branch);
        git_error_clear();
    }
    git_remote_free(remote);
    out->success = true;
    return 0;
}

int gitsvc_pull(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err)
{
    int rc = gitsvc_fetch(repo, options, job, mem, out, err);
    if (rc || !out->success)
        return rc;
    gitsvc_status head = {0};
    if ((rc = gitsvc__head_info(repo->repo, mem, &head, err)))
        return rc;
    if (head.detached) {
        out->success = false;
        out->code = GITSVC_COMMAND_FAILED;
        out->error = "You are not currently on a branch";
        return 0;
    }
    /* the upstream, else the branch of the same name on the remote */
    const char *remote = options && options->remote && options->remote[0] ? options->remote : "origin";
    const char *from = head.tracking;
    if (!from || (options && options->remote && strncmp(from, remote, strlen(remote))))
        from = arena_sprintf(mem, "%s/%s", remote, head.branch);
    gitsvc_merge_result merged;
    gitsvc_error merge_err;
    rc = gitsvc_merge(repo, from, job, mem, &merged, &merge_err);
    if (rc == ECP_ECANCELED) {
        *err = merge_err;
        return rc;
    }
    if (rc) {
        out->success = false;
        out->code = merge_err.code;
        out->error = arena_sprintf(mem, "%s", merge_err.message);
        return 0;
    }
    out->success = merged.success;
    out->changed = merged.changed;
    if (merged.conflict_count) {
        out->conflicts = true;
        out->conflict_files = merged.conflicts;
        out->conflict_count = merged.conflict_count;
        out->code = GITSVC_MERGE_CONFLICT;
        out->error = merged.message;
    }
    return 0;
}
