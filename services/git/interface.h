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
 * - Every operation is a job of the service: gitsvc_<operation>_start copies
 *   its arguments, runs the operation on a pool thread and calls back once,
 *   on the loop, with a result that is valid during the call only (or never,
 *   when the service is freed first). The job serves the caller's call when
 *   the arguments name one, so that $/cancelRequest and a disconnect cancel
 *   it; the caller may also cancel it (ecp_job_cancel) until the callback has
 *   run. Walks (status, log, blame, merges, checkouts, transfers) take the
 *   long lane, so that short answers never wait behind them.
 * - A big answer (a status, a diff, a log, a blame) may be rendered on the
 *   pool thread as well: the arguments' formatter runs at the end of the job
 *   and the callback gets its bytes beside the result.
 * - libgit2 objects are used by one thread at a time. Every operation opens
 *   its own repository (gitsvc_repo_open) on the thread that runs it and
 *   closes it there, except the status, whose repository the service keeps
 *   between statuses and lends to one status job at a time through the
 *   loop; nothing that touches a repository runs on the loop.
 * - A repository is discovered upward from any path inside its work tree
 *   (existing or not). A bare repository has no work tree: it is refused as
 *   not a repository, as the `git` command refuses work-tree commands there.
 * - Paths in results are relative to the work tree's root, '/'-separated.
 *   Lines are 1-based where results count them, hashes are abbreviated to 8
 *   hex digits, dates are YYYY-MM-DD in the signature's own time zone.
 * - A change either happens whole or not at all: an operation that fails
 *   leaves the index, the refs and the work tree as they were (a merge that
 *   stops on conflicts leaves the conflicts to resolve, as `git merge` does).
 *   An operation cancelled before it began does nothing; operations that can
 *   walk history or a large tree poll the cancel flag where libgit2 lets them
 *   (walks, progress callbacks); operations that change a repository never
 *   stop half-way.
 * - A change made through this interface is told to the listeners before
 *   its callback runs, so that a client hears of it before the answer.
 * - The status of each repository the service has seen is cached and kept
 *   fresh by the file service's watches of its work tree and git directory,
 *   not by a timer: a repeated status with nothing changed in between answers
 *   at once, without touching the disk. Listeners hear every change the
 *   watches see and every change made through this interface, sorted into
 *   status, branch, commit and stash changes.
 * - Nothing prompts: credentials come from an ssh-agent (SSH remotes) or
 *   from the session's secret store (HTTP(S) remotes: "git.token.<host>",
 *   read on the loop before a transfer starts) or nowhere, each offered
 *   once, and a remote that refuses them or asks for anything else fails
 *   with GITSVC_AUTH_FAILED. A transfer has a deadline, the
 *   `git.networkTimeoutMs` setting, which the service follows itself through
 *   the session service (libgit2 1.5 has no network timeout of its own).
 *
 * C names start with `gitsvc_` because libgit2 owns the `git_` prefix.
 *
 * Errors: functions return (or call back with) 0 or a negative ECP_STATUS
 * code and fill the gitsvc_error with the kind of git failure
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
#include "buf.h"
#include "error.h"
#include "job.h"
#include "log.h"
#include "shared.h"

struct file_service;
struct document_service;
struct document_snapshot;
struct session_service;

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
 * remotes get no credentials and transfers the default deadline) holds the
 * tokens of remotes and the settings the service follows. All are borrowed
 * and must outlive the service. NULL only when out of memory. libgit2 starts
 * before the service's first job (see gitsvc_start_libgit2). */
gitsvc *gitsvc_new(ecp_pool *pool, ecp_logger *log, struct file_service *files, struct document_service *documents,
                   struct session_service *session);

/* Starts libgit2 once, on the loop. The service does so before its first
 * job; code that calls this interface's blocking functions on jobs of its
 * own (gitsvc_repo_open and what follows) calls it first. Starting it parses
 * the system's CA bundle (15-20 ms), so a server never asked about git never
 * pays for it. */
void gitsvc_start_libgit2(gitsvc *self);

/* Closes the service's jobs (cancelling what can stop, waiting for what is
 * on a thread, calling nobody back), removes its watches, drops its
 * listeners without telling them and frees it. libgit2 stays initialised
 * until the process ends (see gitsvc_free). */
void gitsvc_free(gitsvc *self);

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
/* ----- repositories (any thread; each open one belongs to one thread) --------------- */

/* Blocking reads for another service's own jobs (the agent's tools), on a
 * pool thread: a repository, its status, a diff, the log. Nothing of this
 * service runs them on the loop; its own callers use the operations below. */

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
 * A blocking read's result lives in the arena its caller passes (strings and
 * arrays): releasing the arena releases it. An operation's result belongs to
 * the service and is valid during its callback only. */

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

typedef struct gitsvc_blame_line {
    char commit[9];      /* "00000000" for a line not committed yet */
    const char *author;  /* "Not Committed Yet" for such a line */
    char date[11];
    size_t line;         /* 1-based */
    const char *content;
} gitsvc_blame_line;

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

typedef struct gitsvc_remote {
    const char *name, *fetch_url, *push_url;
} gitsvc_remote;

typedef struct gitsvc_stash {
    size_t index;
    const char *branch;
    const char *message;
} gitsvc_stash;

typedef struct gitsvc_commit_result {
    bool success;
    char hash[9];
    const char *error; /* when !success: "Nothing to commit" */
} gitsvc_commit_result;

typedef struct gitsvc_merge_result {
    bool success;
    const char **conflicts; /* paths */
    size_t conflict_count;
    const char *message;
    bool changed; /* HEAD moved */
} gitsvc_merge_result;

typedef struct gitsvc_sync_result {
    bool success;
    bool changed;         /* pull: HEAD moved */
    bool conflicts;       /* pull: the merge stopped on conflicts */
    const char **conflict_files;
    size_t conflict_count;
    const char *error;    /* when !success */
    gitsvc_code code;     /* when !success: what kind of failure */
} gitsvc_sync_result;

/* ----- operations (loop thread) --------------------------------------------------- *
 *
 * Each gitsvc_<operation>_start copies its arguments (strings too) before it
 * returns, starts a job of the service and returns it; the job belongs to
 * the service. cb runs once, on the loop, with 0 and the result, or a
 * negative status and err; the result and err are valid during the call
 * only; never when the service is freed first. The caller may cancel the
 * job (ecp_job_cancel) until cb has run: an operation that has not begun
 * ends with ECP_ECANCELED, one that changes a repository and has begun
 * runs to its end. */

/* Where every operation happens, and for whom. */
typedef struct gitsvc_where {
    const char *path; /* absolute: a file or directory inside the work tree (missing parts allowed) */
    /* May be NULL. A call the job serves (ecp_job_serve, before it starts): the call's $/cancelRequest and
     * its client's disconnect cancel the job, and the call lives until cb has run. Borrowed. */
    ecp_call *serve;
} gitsvc_where;

/* A path argument: relative to the work tree's root, or absolute. */
typedef struct gitsvc_file_args {
    gitsvc_where where;
    const char *file;
} gitsvc_file_args;

/* The callbacks. root is the work tree's root (no final '/'). */
typedef void (*gitsvc_done_cb)(void *ctx, int status, const gitsvc_error *err);
typedef void (*gitsvc_root_cb)(void *ctx, int status, const gitsvc_error *err, const char *root);
typedef void (*gitsvc_head_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_status *head);
typedef void (*gitsvc_changes_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_line_change *changes,
                                  size_t count);
typedef void (*gitsvc_commit_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_commit_result *result);
typedef void (*gitsvc_merge_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_merge_result *result);
typedef void (*gitsvc_sync_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_sync_result *result);
typedef void (*gitsvc_paths_cb)(void *ctx, int status, const gitsvc_error *err, const char *const *paths,
                                size_t count);
typedef void (*gitsvc_show_cb)(void *ctx, int status, const gitsvc_error *err, const char *content, size_t len);

typedef struct gitsvc_branches_result {
    const gitsvc_branch *items; /* by name */
    size_t count;
    const char *current; /* "HEAD" when detached, the unborn branch's name when there is no commit yet */
} gitsvc_branches_result;
typedef void (*gitsvc_branches_cb)(void *ctx, int status, const gitsvc_error *err,
                                   const gitsvc_branches_result *result);

typedef struct gitsvc_remotes_result {
    const gitsvc_remote *items;
    size_t count;
} gitsvc_remotes_result;
typedef void (*gitsvc_remotes_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_remotes_result *result);

typedef struct gitsvc_stashes_result {
    const gitsvc_stash *items; /* newest first */
    size_t count;
} gitsvc_stashes_result;
typedef void (*gitsvc_stashes_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_stashes_result *result);

/* Big answers: a formatter (may be NULL) runs on the job's pool thread at
 * the end of a successful operation, touching only the result, fctx
 * (borrowed: it must stay valid and usable from another thread until cb has
 * run) and out; its bytes reach cb as json (one reference, the callback's
 * to borrow: ecp_shared_ref to keep it), or NULL without a formatter or on
 * a failure. */
typedef struct gitsvc_diff_result {
    const gitsvc_hunk *hunks;
    size_t count;
} gitsvc_diff_result;
typedef void (*gitsvc_diff_format)(void *fctx, const gitsvc_diff_result *r, buf *out);
typedef void (*gitsvc_diff_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_diff_result *result,
                               ecp_shared *json);

typedef struct gitsvc_log_result {
    const gitsvc_commit_info *commits; /* newest first */
    size_t count;
} gitsvc_log_result;
typedef void (*gitsvc_log_format)(void *fctx, const gitsvc_log_result *r, buf *out);
typedef void (*gitsvc_log_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_log_result *result,
                              ecp_shared *json);

typedef struct gitsvc_blame_result {
    const gitsvc_blame_line *lines;
    size_t count;
} gitsvc_blame_result;
typedef void (*gitsvc_blame_format)(void *fctx, const gitsvc_blame_result *r, buf *out);
typedef void (*gitsvc_blame_cb)(void *ctx, int status, const gitsvc_error *err, const gitsvc_blame_result *result,
                                ecp_shared *json);

/* Whether path is in a work tree, and its root: GITSVC_NOT_A_REPO when it
 * is not, or only in a bare repository. */
ecp_job *gitsvc_is_repo_start(gitsvc *svc, const gitsvc_where *where, gitsvc_root_cb cb, void *ctx);

/* Only the branch part of the status (branch, tracking, ahead, behind):
 * cheaper, no tree walk. */
ecp_job *gitsvc_head_start(gitsvc *svc, const gitsvc_where *where, gitsvc_head_cb cb, void *ctx);

/* The hunks of one file (3 lines of context): the index against the work
 * tree, or with staged HEAD against the index. */
typedef struct gitsvc_diff_args {
    gitsvc_where where;
    const char *file;
    bool staged;
    gitsvc_diff_format format;
    void *fctx;
} gitsvc_diff_args;
ecp_job *gitsvc_diff_start(gitsvc *svc, const gitsvc_diff_args *args, gitsvc_diff_cb cb, void *ctx);

/* Changed lines of one file, the work tree against the index (a gutter). */
ecp_job *gitsvc_diff_lines_start(gitsvc *svc, const gitsvc_file_args *args, gitsvc_changes_cb cb, void *ctx);

/* Changed lines of unsaved text against the file's content in HEAD (every
 * line added when HEAD has no such file): text when it is not NULL, else the
 * open document document_id names, else the one open on file when file is
 * absolute, read from a snapshot off the loop. When there is no text and no
 * such document it fails at once: NULL, err set (ECP_EINVAL), cb not
 * called. */
typedef struct gitsvc_diff_text_args {
    gitsvc_where where;
    const char *file;
    const char *text; /* may be NULL; len bytes, NULs allowed */
    size_t len;
    const char *document_id; /* may be NULL */
} gitsvc_diff_text_args;
ecp_job *gitsvc_diff_text_start(gitsvc *svc, const gitsvc_diff_text_args *args, gitsvc_changes_cb cb, void *ctx,
                                gitsvc_error *err);

/* Who last changed each line of the file as it is in the work tree. */
typedef struct gitsvc_blame_args {
    gitsvc_where where;
    const char *file;
    gitsvc_blame_format format;
    void *fctx;
} gitsvc_blame_args;
ecp_job *gitsvc_blame_start(gitsvc *svc, const gitsvc_blame_args *args, gitsvc_blame_cb cb, void *ctx);

/* The content of a file at a ref (any revision expression: "HEAD~1", a hash,
 * a branch). GITSVC_INVALID_REF, GITSVC_FILE_NOT_FOUND. */
typedef struct gitsvc_show_args {
    gitsvc_where where;
    const char *file;
    const char *ref;
} gitsvc_show_args;
ecp_job *gitsvc_show_start(gitsvc *svc, const gitsvc_show_args *args, gitsvc_show_cb cb, void *ctx);

/* Up to max commits from HEAD, newest first (none on an unborn branch). */
typedef struct gitsvc_log_args {
    gitsvc_where where;
    size_t max;
    gitsvc_log_format format;
    void *fctx;
} gitsvc_log_args;
ecp_job *gitsvc_log_start(gitsvc *svc, const gitsvc_log_args *args, gitsvc_log_cb cb, void *ctx);

/* Local branches, remotes, stashes and the paths with unresolved conflicts. */
ecp_job *gitsvc_branches_start(gitsvc *svc, const gitsvc_where *where, gitsvc_branches_cb cb, void *ctx);
ecp_job *gitsvc_remotes_start(gitsvc *svc, const gitsvc_where *where, gitsvc_remotes_cb cb, void *ctx);
ecp_job *gitsvc_stashes_start(gitsvc *svc, const gitsvc_where *where, gitsvc_stashes_cb cb, void *ctx);
ecp_job *gitsvc_conflicts_start(gitsvc *svc, const gitsvc_where *where, gitsvc_paths_cb cb, void *ctx);

/* Stage paths (files or directories, relative to the root or absolute;
 * deleted files are staged as deleted); with count 0, every change of the
 * work tree, as `git add -A`. */
typedef struct gitsvc_paths_args {
    gitsvc_where where;
    const char *const *paths;
    size_t count;
} gitsvc_paths_args;
ecp_job *gitsvc_stage_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx);
/* Put the paths' index entries back to HEAD's (remove them on an unborn branch). */
ecp_job *gitsvc_unstage_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx);
/* Put the paths back to HEAD, in the index and the work tree. */
ecp_job *gitsvc_discard_start(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx);

/* Commits the index with the configured user.name and user.email (a clear
 * GITSVC_COMMAND_FAILED when they are not set). Nothing staged is
 * success:false "Nothing to commit"; unresolved conflicts are
 * GITSVC_MERGE_CONFLICT. Concludes a merge in progress. amend replaces
 * HEAD's commit with one of the index's tree; its message NULL keeps HEAD's. */
typedef struct gitsvc_commit_args {
    gitsvc_where where;
    const char *message;
    bool amend;
} gitsvc_commit_args;
ecp_job *gitsvc_commit_start(gitsvc *svc, const gitsvc_commit_args *args, gitsvc_commit_cb cb, void *ctx);

/* Branches: create one at HEAD (and check it out); check out a local one,
 * keeping local changes that do not conflict (GITSVC_UNCOMMITTED_CHANGES
 * when they would be overwritten); delete one (without force, one not
 * merged into HEAD is refused); rename the current one to name. */
typedef enum gitsvc_branch_op {
    GITSVC_BRANCH_CREATE,
    GITSVC_BRANCH_SWITCH,
    GITSVC_BRANCH_DELETE,
    GITSVC_BRANCH_RENAME,
} gitsvc_branch_op;
typedef struct gitsvc_branch_args {
    gitsvc_where where;
    gitsvc_branch_op op;
    const char *name;
    bool checkout; /* create */
    bool force;    /* delete */
} gitsvc_branch_args;
ecp_job *gitsvc_branch_start(gitsvc *svc, const gitsvc_branch_args *args, gitsvc_done_cb cb, void *ctx);

/* Merges a branch (local, or a remote-tracking one such as "origin/main")
 * into HEAD: up to date, fast-forward, or a merge commit; conflicts are left
 * in the work tree and the index for the user, as `git merge` leaves them.
 * Abort abandons a merge in progress: HEAD's tree in the index and the work
 * tree, keeping unrelated local changes. */
typedef struct gitsvc_merge_args {
    gitsvc_where where;
    const char *branch;
} gitsvc_merge_args;
ecp_job *gitsvc_merge_start(gitsvc *svc, const gitsvc_merge_args *args, gitsvc_merge_cb cb, void *ctx);
ecp_job *gitsvc_merge_abort_start(gitsvc *svc, const gitsvc_where *where, gitsvc_done_cb cb, void *ctx);

/* Stashes. SAVE keeps the work tree's and the index's changes as stash@{0}
 * (nothing to save is GITSVC_NOTHING_TO_COMMIT); the others act on
 * stash@{index}: GITSVC_NO_STASH when there is none at all,
 * GITSVC_STASH_NOT_FOUND when index is past the last. */
typedef enum gitsvc_stash_op { GITSVC_STASH_APPLY, GITSVC_STASH_POP, GITSVC_STASH_DROP, GITSVC_STASH_SAVE } gitsvc_stash_op;
typedef struct gitsvc_stash_args {
    gitsvc_where where;
    gitsvc_stash_op op;
    const char *message; /* SAVE; may be NULL */
    size_t index;
} gitsvc_stash_args;
ecp_job *gitsvc_stash_start(gitsvc *svc, const gitsvc_stash_args *args, gitsvc_done_cb cb, void *ctx);

/* Transfers. The remote's credentials are read from the session's secret
 * store first (the job waits on the loop meanwhile, and can be cancelled),
 * then the transfer runs. A failure to reach or convince the remote is
 * reported in the result (success:false, error, code) by push and pull, and
 * as a failure (ECP_EIO, or ECP_ETIMEDOUT past the deadline) by fetch.
 * Past the deadline (`git.networkTimeoutMs`, from the start) cb runs at
 * once with GITSVC_NETWORK_ERROR and the transfer is cancelled: it ends at
 * libgit2's next callback, without calling back again. */
typedef enum gitsvc_transfer_op { GITSVC_FETCH, GITSVC_PUSH, GITSVC_PULL } gitsvc_transfer_op;
typedef struct gitsvc_transfer_args {
    gitsvc_where where;
    gitsvc_transfer_op op;
    const char *remote; /* NULL: "origin" */
    bool force;         /* push: replace the remote branch even when it is not an ancestor, as long as it is
                         * where our remote-tracking branch says (git's --force-with-lease): else
                         * PUSH_REJECTED, "stale info" */
    bool set_upstream;  /* push: make remote/branch the current branch's upstream */
} gitsvc_transfer_args;
ecp_job *gitsvc_transfer_start(gitsvc *svc, const gitsvc_transfer_args *args, gitsvc_sync_cb cb, void *ctx);

/* ----- the cached status (loop thread) -------------------------------------------- */

/* Status and branch (porcelain v1 with untracked files listed one by one;
 * renames in the index are detected) of the repository that holds
 * where.path. When the service has a fresh status of it (and !force), cb
 * runs before this returns and the answer is NULL; otherwise the job that
 * computes it (long lane). json: the formatter's bytes, as for the big
 * answers above; a cached status keeps the bytes of its last formatter, so
 * a repeated status with the same formatter and fctx is not rendered
 * again. */
typedef void (*gitsvc_status_format)(void *fctx, const gitsvc_status *st, buf *out);
typedef void (*gitsvc_status_cb)(void *ctx, int status, const gitsvc_error *err, const char *root,
                                 const gitsvc_status *st, ecp_shared *json);
typedef struct gitsvc_status_args {
    gitsvc_where where;
    bool force; /* compute it again even when the cached one is fresh */
    gitsvc_status_format format;
    void *fctx;
} gitsvc_status_args;
ecp_job *gitsvc_status_start(gitsvc *svc, const gitsvc_status_args *args, gitsvc_status_cb cb, void *ctx);

/* ----- a document's changes against HEAD (loop thread) ------------------------------- */

/* Takes a snapshot of the open document (the service's document service)
 * and diffs it against HEAD off the loop (a short job); a document whose
 * file is in no repository has no changes. For `document/viewport`'s
 * gitChanges: the composition root can hand this to the document adapter.
 * Fails at once (NULL, err set, cb not called) when the document is not
 * open or the service has no document service. */
ecp_job *gitsvc_document_changes_start(gitsvc *svc, const char *document_id, ecp_call *serve, gitsvc_changes_cb cb,
                                       void *ctx, gitsvc_error *err);

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

