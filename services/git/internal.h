/* internal: what the files of services/git share and nobody else sees.
 *
 * The service object and its table of known repositories (status cache and
 * watches), the opened repository, and the small functions every operation
 * uses: libgit2 failures turned into gitsvc_error, abbreviated hashes, dates,
 * growing arrays in an arena, and the conversion of diff hunks into line
 * changes.
 */
#ifndef ECPD_GIT_INTERNAL_H
#define ECPD_GIT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "shared.h"
#include "event.h"
#include "git/interface.h"
#include "job.h"
#include "lazy_git2.h"
#include "map.h"

/* The threads of one status, each on a repository of its own. */
#define GITSVC_STATUS_ITEMS 2

typedef struct gitsvc__known gitsvc__known;
typedef struct gitsvc__doc gitsvc__doc;
typedef struct gitsvc__load gitsvc__load;

struct gitsvc {
    ecp_pool *pool;                     /* borrowed */
    ecp_logger *log;                    /* borrowed, may be NULL */
    struct file_service *files;         /* borrowed, may be NULL */
    struct document_service *documents; /* borrowed, may be NULL */
    ecp_job_set *jobs;
    ecp_listeners listeners; /* gitsvc_listener tables */
    gitsvc__known *known;    /* repositories seen, most recent first */
    gitsvc__doc *docs;       /* open documents and their changes against HEAD (documents.c) */
    ecp_map *doc_ids;        /* the same documents by id; NULL without documents */
    uv_timer_t *quiet;       /* the debounce of their diffs; NULL without documents */
    struct session_service *session; /* borrowed, may be NULL: the secrets of remotes and the settings */
    gitsvc__load *loads;             /* tokens being read from it (credentials.c) */
    uint64_t transfer_timeout_ms;    /* git.networkTimeoutMs, followed through the session's listener */
    bool libgit2_started;            /* gitsvc_start_libgit2 has run */
};


/* A repository the service has seen: its watches and its cached status. */
struct gitsvc__known {
    gitsvc *svc;
    char *root, *gitdir;
    char **aliases; /* paths a status was asked for that resolved here */
    size_t alias_count;
    uint64_t watch_root, watch_gitdir; /* 0: none */
    /* Bumped by every change heard: a status computed across a change is
     * answered but not kept. */
    uint64_t generation;
    arena status_mem[GITSVC_STATUS_ITEMS]; /* a status is made by that many threads, each with an arena */
    gitsvc_status *status; /* NULL: none, or stale */
    /* The status's bytes as the formatter json_format made them with
     * json_fctx; NULL: none yet. Dropped with the status. */
    ecp_shared *json;
    gitsvc_status_format json_format;
    void *json_fctx;
    /* The repositories the last status was computed on, kept for the next
     * one (opening one and parsing a large index is a good part of a
     * status); lent to one status job at a time, through the loop. Closed
     * when anything in the git directory changes (its config, refs or index
     * may be cached in them); NULL: none, or nothing watched. */
    gitsvc_repo *kept[GITSVC_STATUS_ITEMS]; /* one per thread of a status: libgit2's objects are not shared */
    unsigned announced;    /* kinds (bit per gitsvc_change_kind) told since the status was computed */
    gitsvc__known *next;
};

struct gitsvc_repo {
    git_repository *repo;
    char *root;   /* no final '/' */
    char *gitdir; /* no final '/' */
};

/* ----- the service's own (loop thread) ------------------------------------------------ */


/* How long a push, pull or fetch may go without finishing before its call is
 * answered NETWORK_ERROR: the `git.networkTimeoutMs` setting, else this.
 * libgit2 1.5 has no timeout of its own, so a remote that accepts the
 * connection and then says nothing would otherwise hold the call until the
 * system's TCP timeouts; the transfer itself is cancelled and ends at its
 * next callback or when the connection fails. */
#define GITSVC_TRANSFER_TIMEOUT_MS 60000u

/* The repository at root (and its git directory gitdir) changed through an
 * operation of this interface: its cached status is dropped and listeners
 * hear of it before this returns. Also starts watching the repository when
 * the service did not know it yet. */
void gitsvc_changed(gitsvc *self, const char *root, const char *gitdir, gitsvc_change_kind kind);

/* Starts watching the repository at root when the service does not know it
 * yet, so that its listeners hear of changes from then on. */
void gitsvc_track(gitsvc *self, const char *root, const char *gitdir);

/* ----- blocking operations (a job's thread) ------------------------------------------- */

/* Only the branch part of the status: cheaper, no tree walk. */
int gitsvc_branch_read(gitsvc_repo *repo, arena *mem, gitsvc_status *out, gitsvc_error *err);

/* Changed lines of one path, the work tree against the index (a gutter). */
int gitsvc_diff_lines(gitsvc_repo *repo, const char *rel_path, arena *mem, gitsvc_line_change **changes,
                      size_t *count, gitsvc_error *err);

/* Changed lines of text (an editor's unsaved buffer) against the path's
 * content in HEAD. A path HEAD does not have (untracked, or no commit yet)
 * gives every line as added. */
int gitsvc_diff_text(gitsvc_repo *repo, const char *rel_path, const char *text, size_t len, arena *mem,
                     gitsvc_line_change **changes, size_t *count, gitsvc_error *err);

/* The same for a document snapshot's text, read off the loop (any thread;
 * the snapshot stays the caller's). */
int gitsvc_diff_snapshot(gitsvc_repo *repo, const char *rel_path, const struct document_snapshot *snap,
                         arena *mem, gitsvc_line_change **changes, size_t *count, gitsvc_error *err);
/* Who last changed each line of the file as it is in the work tree. */
int gitsvc_blame_read(gitsvc_repo *repo, const char *rel_path, const ecp_job *job, arena *mem,
                      gitsvc_blame_line **lines, size_t *count, gitsvc_error *err);

/* The content of a path at a ref (any revision expression: "HEAD~1", a hash,
 * a branch). GITSVC_INVALID_REF, GITSVC_FILE_NOT_FOUND. */
int gitsvc_show(gitsvc_repo *repo, const char *rel_path, const char *ref, arena *mem, const char **content,
                size_t *len, gitsvc_error *err);

/* Local branches by name; *current is the current branch ("HEAD" when
 * detached, the unborn branch's name when there is no commit yet). */
int gitsvc_branches_read(gitsvc_repo *repo, arena *mem, gitsvc_branch **branches, size_t *count,
                         const char **current, gitsvc_error *err);

int gitsvc_remotes_read(gitsvc_repo *repo, arena *mem, gitsvc_remote **remotes, size_t *count, gitsvc_error *err);

int gitsvc_stash_list(gitsvc_repo *repo, arena *mem, gitsvc_stash **stashes, size_t *count, gitsvc_error *err);

/* Paths with unresolved conflicts in the index. */
int gitsvc_conflicts_read(gitsvc_repo *repo, arena *mem, const char ***paths, size_t *count, gitsvc_error *err);

/* Stage paths (files or directories; deleted files are staged as deleted);
 * all: every change of the work tree, as `git add -A`. */
int gitsvc_stage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, bool all, gitsvc_error *err);
/* Put the paths' index entries back to HEAD's (remove them on an unborn branch). */
int gitsvc_unstage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err);
/* Put the paths back to HEAD, in the index and the work tree. */
int gitsvc_discard(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err);

/* Commits the index with the configured user.name and user.email (a clear
 * GITSVC_COMMAND_FAILED when they are not set). Nothing staged is
 * success:false "Nothing to commit"; unresolved conflicts are
 * GITSVC_MERGE_CONFLICT. Concludes a merge in progress. */
int gitsvc_commit(gitsvc_repo *repo, const char *message, arena *mem, gitsvc_commit_result *out, gitsvc_error *err);
/* Replaces HEAD's commit with one of the index's tree; message NULL keeps HEAD's. */
int gitsvc_amend(gitsvc_repo *repo, const char *message, arena *mem, gitsvc_commit_result *out, gitsvc_error *err);

int gitsvc_branch_create(gitsvc_repo *repo, const char *name, bool checkout, gitsvc_error *err);
/* Checks out a local branch, keeping local changes that do not conflict;
 * GITSVC_UNCOMMITTED_CHANGES when they would be overwritten. */
int gitsvc_branch_switch(gitsvc_repo *repo, const char *name, const ecp_job *job, gitsvc_error *err);
/* Without force, a branch not merged into HEAD is refused. */
int gitsvc_branch_delete(gitsvc_repo *repo, const char *name, bool force, gitsvc_error *err);
/* Renames the current branch. */
int gitsvc_branch_rename(gitsvc_repo *repo, const char *new_name, gitsvc_error *err);

/* Saves the work tree's and the index's changes as stash@{0}. Nothing to
 * save is GITSVC_NOTHING_TO_COMMIT. */
int gitsvc_stash_push(gitsvc_repo *repo, const char *message, gitsvc_error *err);


/* index: which stash@{n}. GITSVC_NO_STASH when there is none at all,
 * GITSVC_STASH_NOT_FOUND when n is past the last. */
int gitsvc_stash_apply(gitsvc_repo *repo, gitsvc_stash_op op, size_t index, gitsvc_error *err);


/* Merges a branch (local, or a remote-tracking one such as "origin/main")
 * into HEAD: up to date, fast-forward, or a merge commit; conflicts are left
 * in the work tree and the index for the user, as `git merge` leaves them. */
int gitsvc_merge(gitsvc_repo *repo, const char *branch, const ecp_job *job, arena *mem, gitsvc_merge_result *out,
                 gitsvc_error *err);
/* Abandons a merge in progress: HEAD's tree in the index and the work tree. */
int gitsvc_merge_abort(gitsvc_repo *repo, gitsvc_error *err);

/* ----- credentials ------------------------------------------------------------------ */

/* An HTTP(S) remote's credentials are the secret "git.token.<host>" (the
 * URL's host in lower case, or "git.token.<host>:<port>", which wins when
 * the URL names that port): "user:password", or a token alone, sent as the
 * password with the URL's user name, else "x-access-token". */
#define GITSVC_TOKEN_PREFIX "git.token."

typedef struct gitsvc_token {
    char *host;  /* what follows the prefix */
    char *value;
} gitsvc_token;

typedef struct gitsvc_tokens {
    gitsvc_token *items;
    size_t count;
} gitsvc_tokens;

/* Loop thread. Reads every "git.token.*" secret of the session service;
 * cb runs once, on the loop (before this returns when there is no session
 * service), with the tokens, which it owns (gitsvc_tokens_free, then
 * free()); none when there are none. Never after gitsvc_free. */
typedef void (*gitsvc_tokens_cb)(void *ctx, gitsvc_tokens *tokens);
void gitsvc_tokens_load(gitsvc *self, gitsvc_tokens_cb cb, void *ctx);
/* Wipes and frees the tokens' contents (not the struct). NULL is ignored. */
void gitsvc_tokens_free(gitsvc_tokens *tokens);

/* Any thread. The stored value for an http:// or https:// URL's host, or
 * NULL (another scheme, no such token). */
const char *gitsvc_token_for_url(const gitsvc_tokens *tokens, const char *url);

/* One transfer's credentials: what has been offered already. */
typedef struct gitsvc_credentials {
    const gitsvc_tokens *tokens; /* may be NULL */
    unsigned asks;
    bool offered_token;
    bool failed; /* nothing (more) to offer: the transfer fails with GITSVC_AUTH_FAILED */
} gitsvc_credentials;

/* libgit2's credentials callback (git_credential_acquire_cb), with a
 * gitsvc_credentials as payload, on the transfer's thread. The first time
 * an HTTP(S) remote allows a user name and password, the host's token;
 * the first time an SSH remote asks, the ssh-agent's keys (when
 * SSH_AUTH_SOCK is set) or the URL's user name. Anything else, and any ask
 * after a refusal, sets failed and returns GIT_EAUTH: never a prompt. */
int gitsvc_credentials_acquire(struct git_credential **out, const char *url, const char *username_from_url,
                               unsigned int allowed_types, void *payload);

typedef struct gitsvc_remote_options {
    const char *remote;   /* NULL: "origin" */
    bool force;           /* push: replace the remote branch even when it is not an ancestor, as long as it is
                           * where our remote-tracking branch says (git's --force-with-lease): else
                           * PUSH_REJECTED, "stale info" */
    bool set_upstream;    /* push: make remote/branch the current branch's upstream */
    const gitsvc_tokens *tokens; /* credentials of HTTP(S) remotes (gitsvc_tokens_load); may be NULL */
} gitsvc_remote_options;

/* These report a failure to reach or convince the remote in the result
 * (success:false, error, code), and fail (return non-zero) only for what is
 * wrong here: not a repository, a cancel. */
int gitsvc_fetch(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                 gitsvc_sync_result *out, gitsvc_error *err);
int gitsvc_push(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err);
int gitsvc_pull(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err);

/* ----- open documents (documents.c, loop thread) ------------------------------------ */

/* Subscribes to the document service (when there is one) and starts
 * following the documents already open. */
void gitsvc__documents_follow(gitsvc *self);
/* Unsubscribes and forgets them; after the service's jobs are closed. */
void gitsvc__documents_stop(gitsvc *self);
/* HEAD, a ref or the index of the repository at root moved: its documents
 * are diffed again. */
void gitsvc__documents_repo_changed(gitsvc *self, const char *root);
/* A snapshot of the open document document_id names (may be NULL), else of
 * the one open on path when path is absolute; NULL when there is none or
 * the service has no document service. The caller releases it. */
struct document_snapshot *gitsvc__document_snapshot(gitsvc *self, const char *document_id, const char *path);

/* The tokens being loaded finish without telling anyone: the service goes. */
void gitsvc__tokens_orphan(gitsvc *self);

/* ----- errors --------------------------------------------------------------------- */

/* Records code, status and a formatted message in err (may be NULL); returns status. */
int gitsvc__fail(gitsvc_error *err, int status, gitsvc_code code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* A libgit2 failure rc of `what`: the message is "<what>: <libgit2's message>";
 * code is used unless rc says better (a lock file, an authentication
 * failure, a checkout conflict). Returns a negative status. */
int gitsvc__libgit2(gitsvc_error *err, int rc, gitsvc_code code, const char *what);

/* ECP_ECANCELED with its message when job (may be NULL) was cancelled. */
int gitsvc__check_cancel(const ecp_job *job, gitsvc_error *err);

/* ----- small functions ---------------------------------------------------------------- */

void gitsvc__short_hash(char out[9], const git_oid *oid);
void gitsvc__date(char out[11], const git_time *when);

/* Makes room for one more item in an array that lives in mem; returns the
 * (possibly moved) array. *cap grows by doubling; the old copy stays in the
 * arena until it is released. */
void *gitsvc__grow(arena *mem, void *items, size_t count, size_t *cap, size_t size);

/* Hunks of a diff with no context turned into line changes. */
typedef struct gitsvc__changes {
    arena *mem;
    gitsvc_line_change *items;
    size_t count, cap;
} gitsvc__changes;

void gitsvc__changes_add_hunk(gitsvc__changes *out, size_t old_count, size_t new_start, size_t new_count);

/* The branch part of a status (also used by the status itself). */
int gitsvc__head_info(git_repository *repo, arena *mem, gitsvc_status *out, gitsvc_error *err);

/* The parts of a status, on the same repository or each on one of its own
 * (any thread): HEAD against the index with the branch (staged); the
 * index's conflicts; the index against the work tree, with untracked files,
 * for all of it or a part (workdir). unstaged is conflicts and the workdir
 * of the whole tree. Merging (into staged) takes the second's arrays and
 * allocates in mem. */
int gitsvc__status_staged(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out, gitsvc_error *err);
int gitsvc__status_conflicts(gitsvc_repo *repo, arena *mem, gitsvc_status *out, gitsvc_error *err);
int gitsvc__status_unstaged(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out,
                            gitsvc_error *err);
void gitsvc__status_merge(gitsvc_status *staged, const gitsvc_status *unstaged, arena *mem);

/* A part of the work tree: literal paths relative to its root, each with
 * everything under it; paths NULL: the whole tree. */
typedef struct gitsvc__status_part {
    const char **paths;
    size_t count;
} gitsvc__status_part;

/* The work tree cut into parts of about the same number of index entries,
 * for as many threads, each diffing one part at a time on a repository of
 * its own; and what each part gave. */
typedef struct gitsvc__status_plan {
    arena mem;
    gitsvc__status_part *parts;
    size_t part_count;
    gitsvc_status *results; /* per part: its unstaged and untracked lists */
    bool *complete;         /* per part: results holds its answer */
} gitsvc__status_plan;

/* Plans from repo's index (read again first when it changed) and its work
 * tree's directories: at most max_parts parts of at least min_part index
 * entries, or one part, the whole tree (a small or case-insensitive index).
 * Never fails: what cannot be read makes fewer parts. */
gitsvc__status_plan *gitsvc__status_plan_new(gitsvc_repo *repo, size_t max_parts, size_t min_part);
void gitsvc__status_plan_free(gitsvc__status_plan *plan);

int gitsvc__status_workdir(gitsvc_repo *repo, const ecp_job *job, arena *mem, const gitsvc__status_part *part,
                           gitsvc_status *out, gitsvc_error *err);

/* The unstaged and untracked lists of count parts as one, ordered as one
 * diff of the whole tree would give them, into `into` (arrays in mem; the
 * entries' strings stay where they are). */
void gitsvc__status_join(gitsvc_status *into, const gitsvc_status *parts, size_t count, arena *mem);

/* The upstream of local branch `branch`, or a negative libgit2 code. */
int gitsvc__upstream(git_repository *repo, const char *branch, git_reference **out);

/* The commit HEAD points at, or NULL (and 0) on an unborn branch. */
int gitsvc__head_commit(git_repository *repo, git_commit **out, gitsvc_error *err);

#endif
