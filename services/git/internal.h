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

#include <git2.h>
#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "event.h"
#include "git/interface.h"
#include "job.h"

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
    uv_timer_t *quiet;       /* the debounce of their diffs; NULL without documents */
    struct session_service *session; /* borrowed, may be NULL: the secrets of remotes */
    gitsvc__load *loads;             /* tokens being read from it (credentials.c) */
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

/* ----- open documents (documents.c, loop thread) ------------------------------------ */

/* Subscribes to the document service (when there is one) and starts
 * following the documents already open. */
void gitsvc__documents_follow(gitsvc *self);
/* Unsubscribes and forgets them; after the service's jobs are closed. */
void gitsvc__documents_stop(gitsvc *self);
/* HEAD, a ref or the index of the repository at root moved: its documents
 * are diffed again. */
void gitsvc__documents_repo_changed(gitsvc *self, const char *root);

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
