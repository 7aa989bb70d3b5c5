/* internal: what the files of services/file share and nobody else sees.
 *
 * The service object, the machinery that runs a tree walk as one or more
 * thread-pool work items, the set that keeps walks out of directory loops,
 * the errno-to-status translation with the messages users read, and the
 * watcher's entry points.
 */
#ifndef ECPD_FILE_INTERNAL_H
#define ECPD_FILE_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "file/interface.h"

typedef struct file__watcher file__watcher;

struct file_service {
    uv_loop_t *loop;
    ecp_logger *log;
    file_task *tasks;       /* running walks, so freeing the service can cancel them */
    file__watcher *watcher; /* NULL until the first watch */
};

/* ----- walks on the thread pool ------------------------------------------------
 * A task is one walk split into `items` work items that run `work` in
 * parallel; once the last has finished, `finish` runs on the loop (it calls the
 * user's callback) and then `destroy` frees the task. */

#define FILE__MAX_ITEMS 8

struct file_task {
    file_service *svc;         /* NULL once the service is gone */
    file_task *prev, *next;    /* in svc->tasks */
    atomic_bool cancel;
    unsigned items, pending;
    uv_work_t reqs[FILE__MAX_ITEMS];
    void (*work)(file_task *task, unsigned item);
    void (*finish)(file_task *task); /* status/err below tell how it went */
    void (*destroy)(file_task *task);
    int status;
    ecp_error err;
};

/* Links task (zeroed, with work, finish and destroy set) into svc and queues
 * its work items. */
void file__task_start(file_service *svc, file_task *task, unsigned items);

static inline bool file__task_cancelled(file_task *task)
{
    return atomic_load_explicit(&task->cancel, memory_order_relaxed);
}

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

/* The number of worker items a parallel walk should use. */
unsigned file__default_items(void);

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
