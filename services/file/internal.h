/* internal: what the files of services/file share and nobody else sees.
 *
 * The service object, what every tree walk's job starts with, the set that
 * keeps walks out of directory loops, the errno-to-status translation with
 * the messages users read, and the watcher's entry points.
 */
#ifndef ECPD_FILE_INTERNAL_H
#define ECPD_FILE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "event.h"
#include "file/interface.h"
#include "job.h"

typedef struct file__watcher file__watcher;

struct file_service {
    uv_loop_t *loop;
    ecp_logger *log;
    ecp_pool *pool;          /* borrowed */
    ecp_job_set *jobs;       /* every job of the service: single operations and walks */
    ecp_listeners listeners; /* file_listener tables */
    file__watcher *watcher;  /* NULL until the first watch */
    char **watch_exclude;    /* file_service_set_watch_exclude's patterns, each one valid */
    size_t watch_exclude_count;
    struct session_service *session; /* borrowed while the service follows its settings, else NULL */
};

/* ----- walks ---------------------------------------------------------------------
 * A walk is a job in the long lane whose data starts with a file__walk. Its
 * work items record a failure in status/err; file__walk_status tells done
 * how it went, a cancel included. */

typedef struct file__walk {
    unsigned items; /* how many work items file_walk_start queues */
    int status;
    ecp_error err;
} file__walk;

/* The status a walk's done reports: its own failure, else ECP_ECANCELED when
 * it was cancelled or is not `ready` (cancelled after the walk had looked,
 * before its result was finished), else 0. On 0 the bytes a formatter wrote
 * into *rendered (rendered may be NULL: none) are handed to *shared. */
int file__walk_outcome(ecp_job *job, bool ready, buf *rendered, ecp_shared **shared);

/* The number of work items a parallel walk should use: no more than the
 * pool lets long work hold, nor than there are cores. */
unsigned file__walk_items(const file_service *svc);

/* ----- directory loops ------------------------------------------------------------ */

/* A set of (device, inode) pairs: the directories a walk has entered. */
typedef struct file__idset {
    uint64_t *keys; /* pairs; (0,0) marks an empty slot */
    size_t cap, count;
} file__idset;

/* Adds (dev, ino); returns false when it was already there (a loop). */
bool file__idset_add(file__idset *self, uint64_t dev, uint64_t ino);
void file__idset_free(file__idset *self);

/* ----- errors ---------------------------------------------------------------------- */

/* Records errnum for path with the message users read ("File not found: /a"). */
int file__errno(ecp_error *err, int errnum, const char *path);

/* ----- the watcher (watch.c) ------------------------------------------------------- */

void file__watcher_free(file__watcher *self);

/* ----- path helpers ------------------------------------------------------------------ */

/* The names that `files.exclude` hides by default: `.git`, `node_modules`,
 * `.DS_Store`. Searches skip them (and everything below them). */
bool file__excluded_by_default(const char *name);

/* base + "/" + name into out (cleared first), without doubling a '/'. */
void file__join(buf *out, const char *base, const char *name);

/* Compiles a list of patterns for relative-path matching (a pattern without
 * '/' matches the last segment at any depth). ECP_EINVAL names the bad one. */
struct file__glob;
int file__globs_compile(const char *const *patterns, size_t count, unsigned flags, struct file__glob ***out,
                        ecp_error *err);
void file__globs_free(struct file__glob **globs, size_t count);
bool file__globs_match(struct file__glob *const *globs, size_t count, const char *rel, size_t len);

#endif
