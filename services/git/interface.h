/* git: the repositories an editor works in, read and changed through libgit2.
 *
 * The git service answers what an editor asks of version control (the status
 * of a work tree, the changes of a file, who wrote each line, the history,
 * branches, stashes, merges, remotes) and makes the changes an editor makes
 * (stage, commit, switch branch, stash, merge, push, pull). It needs no `git`
 * executable: everything goes through libgit2, which the service initialises
 * when it is created.
 *
 * What it promises:
 * - libgit2 objects are used by one thread at a time. Every operation below
 *   opens its own repository (gitsvc_repo_open) on the thread that runs it
 *   and closes it there, except the status, whose repository the service
 *   keeps between statuses and lends to one status job at a time through the
 *   loop; the service's jobs (core/job.h) are the only callers on the server,
 *   so nothing that touches a repository runs on the loop.
 * - A repository is discovered upward from any path inside its work tree
 *   (existing or not). A bare repository has no work tree: it is refused as
 *   not a repository, as the `git` command refuses work-tree commands there.
 * - Paths in results are relative to the work tree's root, '/'-separated.
 *   Lines are 1-based where results count them, hashes are abbreviated to 8
 *   hex digits, dates are YYYY-MM-DD in the signature's own time zone.
 * - A change either happens whole or not at all: an operation that fails
 *   leaves the index, the refs and the work tree as they were (a merge that
 *   stops on conflicts leaves the conflicts to resolve, as `git merge` does).
 *   Operations that can walk history or a large tree poll the job's cancel
 *   flag where libgit2 lets them (walks, progress callbacks); operations that
 *   change a repository never stop half-way.
 * - The status of each repository the service has seen is cached and kept
 *   fresh by the file service's watches of its work tree and git directory,
 *   not by a timer: a repeated status with nothing changed in between answers
 *   at once, without touching the disk. Listeners hear every change the
 *   watches see and every change made through this interface, sorted into
 *   status, branch, commit and stash changes.
 * - Nothing prompts: credentials come from an ssh-agent (SSH remotes) or
 *   from the session's secret store (HTTP(S) remotes: "git.token.<host>",
 *   see gitsvc_credentials_acquire) or nowhere, each offered once, and a
 *   remote that refuses them or asks for anything else fails with
 *   GITSVC_AUTH_FAILED. A
 *   transfer stops when its job is cancelled, at libgit2's next callback;
 *   libgit2 1.5 has no network timeout of its own (see remote.c).
 *
 * C names start with `gitsvc_` because libgit2 owns the `git_` prefix.
 *
 * Errors: functions return 0 or a negative ECP_STATUS code and fill the
 * optional gitsvc_error with the code the protocol reports
 * (GITSVC_NOT_A_REPO, ...) and a message for a person that names the
 * repository or the ref and what went wrong. ECP_ECANCELED means the job was
 * cancelled before the operation changed anything.
 */
#ifndef ECPD_GIT_INTERFACE_H
#define ECPD_GIT_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"
#include "error.h"
#include "job.h"
#include "log.h"

struct file_service;
struct document_service;
struct document_snapshot;
struct session_service;
struct git_credential;

typedef struct gitsvc gitsvc;

/* ----- errors ------------------------------------------------------------------ */

#define GITSVC_CODES(X)            \
    X(GITSVC_COMMAND_FAILED)       \
    X(GITSVC_NOT_A_REPO)           \
    X(GITSVC_BRANCH_EXISTS)        \
    X(GITSVC_BRANCH_NOT_FOUND)     \
    X(GITSVC_UNCOMMITTED_CHANGES)  \
    X(GITSVC_NOTHING_TO_COMMIT)    \
    X(GITSVC_NO_STASH)             \
    X(GITSVC_STASH_NOT_FOUND)      \
    X(GITSVC_INVALID_REF)          \
    X(GITSVC_MERGE_CONFLICT)       \
    X(GITSVC_PUSH_REJECTED)        \
    X(GITSVC_AUTH_FAILED)          \
    X(GITSVC_NETWORK_ERROR)        \
    X(GITSVC_FILE_NOT_FOUND)

typedef enum gitsvc_code {
#define GITSVC_CODE_ENUM(name) name,
    GITSVC_CODES(GITSVC_CODE_ENUM)
#undef GITSVC_CODE_ENUM
} gitsvc_code;

/* "NOT_A_REPO" for GITSVC_NOT_A_REPO: the name without the prefix. */
const char *gitsvc_code_name(gitsvc_code code);

typedef struct gitsvc_error {
    int status;        /* an ECP_STATUS_CODES value */
    gitsvc_code code;  /* what kind of git failure */
    char message[512]; /* for a person */
} gitsvc_error;

/* ----- the service (loop thread) ------------------------------------------------ */

/* Creates the service: its jobs run on pool, its callbacks on the pool's
 * loop. files (may be NULL: then nothing is watched and the status cache
 * lasts until a change made through this interface) watches the
 * repositories; documents (may be NULL) lends the text of open documents,
 * which the service follows from now on; session (may be NULL: then HTTP(S)
 * remotes get no credentials) holds the tokens of remotes. All are borrowed
 * and must outlive the service. Initialises libgit2. NULL only when out of
 * memory or when libgit2 cannot start. */
gitsvc *gitsvc_new(ecp_pool *pool, ecp_logger *log, struct file_service *files, struct document_service *documents,
                   struct session_service *session);

/* Closes the service's jobs (cancelling what can stop, waiting for what is
 * on a thread), removes its watches, drops its listeners without telling
 * them and frees it. libgit2 stays initialised until the process ends (see
 * gitsvc_free). */
void gitsvc_free(gitsvc *self);

/* The set every job of the service belongs to (the adapter's jobs too), so
 * that gitsvc_free closes them. */
ecp_job_set *gitsvc_jobs(gitsvc *self);

/* How long a push, pull or fetch may go without finishing before its call is
 * answered NETWORK_ERROR: the `git.networkTimeoutMs` setting, else this.
 * libgit2 1.5 has no timeout of its own, so a remote that accepts the
 * connection and then says nothing would otherwise hold the call until the
 * system's TCP timeouts; the transfer itself is cancelled and ends at its
 * next callback or when the connection fails. */
#define GITSVC_TRANSFER_TIMEOUT_MS 60000u
uint64_t gitsvc_transfer_timeout_ms(gitsvc *self);

/* ----- events (loop thread) ---------------------------------------------------- */

typedef enum gitsvc_change_kind {
    GITSVC_CHANGE_STATUS, /* the work tree or the index */
    GITSVC_CHANGE_BRANCH, /* HEAD moved to another branch (or detached) */
    GITSVC_CHANGE_COMMIT, /* a branch or remote-tracking ref moved */
    GITSVC_CHANGE_STASH,  /* the stash list */
} gitsvc_change_kind;

const char *gitsvc_change_kind_name(gitsvc_change_kind kind); /* "status", ... */

typedef struct gitsvc_change {
    const char *root;        /* the work tree's root */
    const char *path;        /* absolute: what changed (a file, a ref, the root itself) */
    gitsvc_change_kind kind;
} gitsvc_change;

/* on_change runs on the loop once per kind of change until the status of
 * that repository is computed again (one edit that touches a hundred files is
 * one status change for its listeners), and at once for each change made
 * through this interface. Listeners may subscribe and unsubscribe from inside
 * the callback. */
typedef struct gitsvc_listener {
    void (*on_change)(void *ctx, const gitsvc_change *change);
} gitsvc_listener;

void gitsvc_subscribe(gitsvc *self, const gitsvc_listener *listener, void *ctx);
bool gitsvc_unsubscribe(gitsvc *self, const gitsvc_listener *listener, void *ctx);

/* The repository at root (and its git directory gitdir) changed through an
 * operation of this interface: its cached status is dropped and listeners
 * hear of it before this returns. Also starts watching the repository when
 * the service did not know it yet. */
void gitsvc_changed(gitsvc *self, const char *root, const char *gitdir, gitsvc_change_kind kind);

/* Starts watching the repository at root when the service does not know it
 * yet, so that its listeners hear of changes from then on. */
void gitsvc_track(gitsvc *self, const char *root, const char *gitdir);

/* ----- repositories (any thread; each open one belongs to one thread) --------------- */

typedef struct gitsvc_repo gitsvc_repo;

/* Opens the repository whose work tree holds path (absolute; a file or a
 * directory; missing parts of it are allowed). GITSVC_NOT_A_REPO when there
 * is none or it is bare (bare_out, if given, tells which). */
int gitsvc_repo_open(const char *path, gitsvc_repo **out, bool *bare_out, gitsvc_error *err);
void gitsvc_repo_close(gitsvc_repo *repo);

const char *gitsvc_repo_root(const gitsvc_repo *repo);   /* the work tree, without a final '/' */
const char *gitsvc_repo_gitdir(const gitsvc_repo *repo); /* the git directory, without a final '/' */

/* The path relative to the root of path, which is absolute or already
 * relative to the root. "" for the root itself. GITSVC_COMMAND_FAILED
 * (ECP_EINVAL) for a path outside the work tree or inside the git directory. */
int gitsvc_repo_relative(const gitsvc_repo *repo, const char *path, arena *mem, const char **out,
                         gitsvc_error *err);

/* ----- results ------------------------------------------------------------------- *
 * Every result lives in the arena the caller passes (strings and arrays);
 * releasing the arena releases it. */

typedef struct gitsvc_status_entry {
    const char *path;
    const char *old_path; /* renames: the path before; else NULL */
    char status;          /* A M D R C T U */
} gitsvc_status_entry;

typedef struct gitsvc_status {
    const char *branch;   /* "HEAD" when detached; the branch to be when unborn */
    const char *tracking; /* the upstream ("origin/main") or NULL */
    size_t ahead, behind; /* against the upstream */
    bool detached, unborn;
    gitsvc_status_entry *staged;   /* HEAD -> index */
    size_t staged_count;
    gitsvc_status_entry *unstaged; /* index -> work tree; conflicts are 'U' in both lists */
    size_t unstaged_count;
    const char **untracked;        /* every untracked file, also inside untracked directories */
    size_t untracked_count;
    const char **conflicts;        /* paths with unresolved conflicts, sorted */
    size_t conflict_count;
} gitsvc_status;

/* Status and branch (porcelain v1 with untracked files listed one by one;
 * renames in the index are detected). */
int gitsvc_status_read(gitsvc_repo *repo, const ecp_job *job, arena *mem, gitsvc_status *out, gitsvc_error *err);

/* Only the branch part of the status: cheaper, no tree walk. */
int gitsvc_branch_read(gitsvc_repo *repo, arena *mem, gitsvc_status *out, gitsvc_error *err);

typedef enum gitsvc_line_type {
    GITSVC_LINE_CONTEXT,
    GITSVC_LINE_ADDED,
    GITSVC_LINE_DELETED,
} gitsvc_line_type;

typedef struct gitsvc_diff_line {
    gitsvc_line_type type;
    const char *content; /* without its line end */
    size_t old_line;     /* 1-based; 0 for an added line */
    size_t new_line;     /* 1-based; 0 for a deleted line */
} gitsvc_diff_line;

typedef struct gitsvc_hunk {
    size_t old_start, old_count, new_start, new_count;
    gitsvc_diff_line *lines;
    size_t line_count;
} gitsvc_hunk;

/* The hunks of one path (3 lines of context): the index against the work
 * tree, or with staged HEAD against the index. */
int gitsvc_diff_read(gitsvc_repo *repo, const char *rel_path, bool staged, arena *mem, gitsvc_hunk **hunks,
                     size_t *count, gitsvc_error *err);

typedef enum gitsvc_change_type {
    GITSVC_LINE_CHANGE_ADDED,
    GITSVC_LINE_CHANGE_MODIFIED,
    GITSVC_LINE_CHANGE_DELETED,
} gitsvc_change_type;

typedef struct gitsvc_line_change {
    size_t line; /* 1-based, in the newer text; a deletion marks the line before the gap (at least 1) */
    gitsvc_change_type type;
} gitsvc_line_change;

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

typedef struct gitsvc_blame_line {
    char commit[9];      /* "00000000" for a line not committed yet */
    const char *author;  /* "Not Committed Yet" for such a line */
    char date[11];
    size_t line;         /* 1-based */
    const char *content;
} gitsvc_blame_line;

/* Who last changed each line of the file as it is in the work tree. */
int gitsvc_blame_read(gitsvc_repo *repo, const char *rel_path, const ecp_job *job, arena *mem,
                      gitsvc_blame_line **lines, size_t *count, gitsvc_error *err);

/* The content of a path at a ref (any revision expression: "HEAD~1", a hash,
 * a branch). GITSVC_INVALID_REF, GITSVC_FILE_NOT_FOUND. */
int gitsvc_show(gitsvc_repo *repo, const char *rel_path, const char *ref, arena *mem, const char **content,
                size_t *len, gitsvc_error *err);

typedef struct gitsvc_commit_info {
    char hash[41];
    char short_hash[9];
    const char *subject;
    const char *author;
    const char *email;
    char date[11]; /* author date */
} gitsvc_commit_info;

/* Up to max commits from HEAD, newest first (none on an unborn branch). */
int gitsvc_log_read(gitsvc_repo *repo, size_t max, const ecp_job *job, arena *mem, gitsvc_commit_info **commits,
                    size_t *count, gitsvc_error *err);

typedef struct gitsvc_branch {
    const char *name;
    bool current;
    const char *tracking; /* the upstream, or NULL */
    char commit[9];
} gitsvc_branch;

/* Local branches by name; *current is the current branch ("HEAD" when
 * detached, the unborn branch's name when there is no commit yet). */
int gitsvc_branches_read(gitsvc_repo *repo, arena *mem, gitsvc_branch **branches, size_t *count,
                         const char **current, gitsvc_error *err);

typedef struct gitsvc_remote {
    const char *name, *fetch_url, *push_url;
} gitsvc_remote;

int gitsvc_remotes_read(gitsvc_repo *repo, arena *mem, gitsvc_remote **remotes, size_t *count, gitsvc_error *err);

typedef struct gitsvc_stash {
    size_t index;
    const char *branch;
    const char *message;
} gitsvc_stash;

int gitsvc_stash_list(gitsvc_repo *repo, arena *mem, gitsvc_stash **stashes, size_t *count, gitsvc_error *err);

/* Paths with unresolved conflicts in the index. */
int gitsvc_conflicts_read(gitsvc_repo *repo, arena *mem, const char ***paths, size_t *count, gitsvc_error *err);

/* ----- changes ------------------------------------------------------------------ */

/* Stage paths (files or directories; deleted files are staged as deleted);
 * all: every change of the work tree, as `git add -A`. */
int gitsvc_stage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, bool all, gitsvc_error *err);
/* Put the paths' index entries back to HEAD's (remove them on an unborn branch). */
int gitsvc_unstage(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err);
/* Put the paths back to HEAD, in the index and the work tree. */
int gitsvc_discard(gitsvc_repo *repo, const char *const *rel_paths, size_t count, gitsvc_error *err);

typedef struct gitsvc_commit_result {
    bool success;
    char hash[9];
    const char *error; /* when !success: "Nothing to commit" */
} gitsvc_commit_result;

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

typedef enum gitsvc_stash_op { GITSVC_STASH_APPLY, GITSVC_STASH_POP, GITSVC_STASH_DROP } gitsvc_stash_op;

/* index: which stash@{n}. GITSVC_NO_STASH when there is none at all,
 * GITSVC_STASH_NOT_FOUND when n is past the last. */
int gitsvc_stash_apply(gitsvc_repo *repo, gitsvc_stash_op op, size_t index, gitsvc_error *err);

typedef struct gitsvc_merge_result {
    bool success;
    const char **conflicts; /* paths */
    size_t conflict_count;
    const char *message;
    bool changed; /* HEAD moved */
} gitsvc_merge_result;

/* Merges a branch (local, or a remote-tracking one such as "origin/main")
 * into HEAD: up to date, fast-forward, or a merge commit; conflicts are left
 * in the work tree and the index for the user, as `git merge` leaves them. */
int gitsvc_merge(gitsvc_repo *repo, const char *branch, const ecp_job *job, arena *mem, gitsvc_merge_result *out,
                 gitsvc_error *err);
/* Abandons a merge in progress: HEAD's tree in the index and the work tree. */
int gitsvc_merge_abort(gitsvc_repo *repo, gitsvc_error *err);

/* ----- remotes ------------------------------------------------------------------- */

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

typedef struct gitsvc_sync_result {
    bool success;
    bool changed;         /* pull: HEAD moved */
    bool conflicts;       /* pull: the merge stopped on conflicts */
    const char **conflict_files;
    size_t conflict_count;
    const char *error;    /* when !success */
    gitsvc_code code;     /* when !success: what kind of failure */
} gitsvc_sync_result;

/* These report a failure to reach or convince the remote in the result
 * (success:false, error, code), and fail (return non-zero) only for what is
 * wrong here: not a repository, a cancel. */
int gitsvc_fetch(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                 gitsvc_sync_result *out, gitsvc_error *err);
int gitsvc_push(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err);
int gitsvc_pull(gitsvc_repo *repo, const gitsvc_remote_options *options, const ecp_job *job, arena *mem,
                gitsvc_sync_result *out, gitsvc_error *err);

/* ----- the cached status (loop thread) -------------------------------------------- */

/* status is 0 or a failure (err set); st is valid during the call only. */
typedef void (*gitsvc_status_cb)(void *ctx, int status, const gitsvc_error *err, const char *root,
                                 const gitsvc_status *st);

/* The status of the repository that holds path. When the service has a
 * fresh status of it (and !force), cb runs before this returns and *job is
 * NULL. Otherwise *job is a job of the service, not started, that computes
 * it (in the long lane, as GITSVC_STATUS_ITEMS items): the
 * caller may let it serve a call (ecp_job_serve), then starts it with
 * ecp_job_start(job, GITSVC_STATUS_ITEMS); cb runs once when it ends,
 * ECP_ECANCELED after a cancel, never after gitsvc_free. */
#define GITSVC_STATUS_ITEMS 2
void gitsvc_status_get(gitsvc *self, const char *path, bool force, gitsvc_status_cb cb, void *ctx, ecp_job **job);

/* ----- a document's changes against HEAD (loop thread) ------------------------------- */

/* status 0: changes (valid during the call) of the document's current text
 * against HEAD; a document whose file is in no repository has none. */
typedef void (*gitsvc_changes_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_line_change *changes,
                                  size_t count);

/* Takes a snapshot of the open document (the service's document service)
 * and prepares a short job that diffs it against HEAD off the loop, as
 * gitsvc_status_get does (the caller serves a call with it, if it likes,
 * and starts it). For `document/viewport`'s gitChanges: the composition
 * root can hand this to the document adapter. Fails at once (returning
 * non-zero, *job NULL, cb not called) when the document is not open or the
 * service has no document service. */
int gitsvc_document_changes(gitsvc *self, const char *document_id, gitsvc_changes_cb cb, void *ctx, ecp_job **job,
                            gitsvc_error *err);

/* The changes, as last computed, of the open document's text against HEAD
 * that fall on lines first+1 .. last (1-based: the 0-based visible lines
 * [first, last)), by line; *out points into the service's copy, valid until
 * the loop runs again. The service follows the open documents of its
 * document service and diffs each off the loop about 150 ms after its last
 * edit and whenever HEAD, a ref or the index of its repository moves, one
 * diff per document at a time, so the answer never waits and may lag the
 * text by that much (a line inserted since is not shifted yet). 0 for a
 * document it does not know, one in no repository, or one not diffed yet. */
size_t gitsvc_document_cached_changes(gitsvc *self, const char *document_id, size_t first, size_t last,
                                      const gitsvc_line_change **out);

#endif
