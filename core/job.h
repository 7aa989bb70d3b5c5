/* job: the one way to run work off the loop.
 *
 * Anything that can block (reading or saving a file, a directory walk, a
 * grep, libgit2, SQLite, a full parse) runs as a job on libuv's thread pool.
 * A job is a small state machine every service shares:
 *
 *     ecp_job_new ──► ecp_job_start ──► work(job, item) on pool threads
 *                                        │  (each item once, in parallel)
 *                                        ▼
 *                         done(job) on the loop, once, after every item
 *                                        │
 *                                        ▼
 *                         the job and its data are freed
 *
 * What it promises:
 * - A job owns its data (inputs and outputs, set before it starts and read
 *   back in done); the type's free_data releases it, on the loop, exactly once,
 *   whatever happens.
 * - done runs exactly once, on the loop, after every work item has returned,
 *   unless the job set it belongs to is closed first (then never: closing is
 *   for teardown, when there is nobody left to tell).
 * - A job may serve a call (ecp_job_serve): the call is kept alive until the
 *   job ends, the client's $/cancelRequest or disconnect cancels the job, and
 *   done answers it. A done that forgets to answer is logged and the call is
 *   answered with -32603 (or -32800 when the job was cancelled), so a client
 *   never waits forever; answering twice is caught by the call itself.
 * - Cancelling sets a flag that work polls (ecp_job_cancelled, from any
 *   thread) and done sees. Work that must finish once begun (a save: the
 *   user's bytes are on their way to disk) simply does not poll it.
 * - Two lanes keep long work from starving short work. Items of long jobs (a
 *   grep of 100,000 files, a git log, a full parse) never occupy more than
 *   ecp_pool_long_limit() of the pool's threads, so a save, a read or a stat
 *   always finds a free thread within one short item's time.
 * - Closing a job set (at a service's teardown) cancels every job in it,
 *   waits for the work items already on a thread to return, releases their
 *   data without calling done, and answers their calls. Nothing calls back
 *   into the closed service afterwards.
 *
 * Threads: everything here runs on the loop thread except work itself and
 * ecp_job_cancelled / ecp_job_data, which work may call.
 */
#ifndef ECPD_JOB_H
#define ECPD_JOB_H

#include <stdbool.h>
#include <stddef.h>

#include <uv.h>

#include "error.h"
#include "log.h"

/* A job may serve a call, but a service's interface that names jobs must not
 * see the wire: the call stays an opaque type here (rpc.h defines it). */
typedef struct ecp_call ecp_call;

typedef struct ecp_pool ecp_pool;
typedef struct ecp_job_set ecp_job_set;
typedef struct ecp_job ecp_job;

/* ----- the pool ------------------------------------------------------------------ */

/* Sizes libuv's thread pool for this process (UV_THREADPOOL_SIZE, unless the
 * environment already sets it) and returns the number of threads it will
 * have. Call it before anything uses the pool: libuv reads the size once. */
unsigned ecp_pool_size_threads(void);

/* One per loop: the lanes' bookkeeping over libuv's pool. `log` (may be NULL)
 * is borrowed and must outlive the pool. */
ecp_pool *ecp_pool_new(uv_loop_t *loop, ecp_logger *log);

/* Frees the pool once every job set on it is closed. Work items of closed
 * sets that have not come back through the loop yet keep it until they do
 * (the loop must run a little longer, as it must for closing handles). */
void ecp_pool_free(ecp_pool *self);

uv_loop_t *ecp_pool_loop(const ecp_pool *self);
ecp_logger *ecp_pool_log(const ecp_pool *self);
unsigned ecp_pool_threads(const ecp_pool *self);
/* The most threads long items may hold at once. */
unsigned ecp_pool_long_limit(const ecp_pool *self);

/* ----- job sets: what one service owns --------------------------------------------- */

/* Every job belongs to a set, and a service keeps one set for all of its jobs
 * so that its teardown can close them. */
ecp_job_set *ecp_job_set_new(ecp_pool *pool);

/* Cancels every job of the set, waits for items already running, frees their
 * data and answers their calls (without calling done), then frees the set. */
void ecp_job_set_close(ecp_job_set *self);

ecp_pool *ecp_job_set_pool(const ecp_job_set *self);
/* Jobs started and not yet ended. */
size_t ecp_job_set_count(const ecp_job_set *self);

/* ----- jobs ----------------------------------------------------------------------- */

typedef enum ecp_lane {
    ECP_LANE_SHORT, /* milliseconds: a read, a stat, a save, a git status */
    ECP_LANE_LONG,  /* unbounded: a walk, a grep, a git log, a full parse */
} ecp_lane;

#define ECP_JOB_MAX_ITEMS 16

/* What a kind of job does. Usually a static const per kind. */
typedef struct ecp_job_type {
    const char *name; /* for logs: "file.read" */
    ecp_lane lane;
    /* Work that must not be dropped once asked for (a save): closing the set
     * waits for it to run instead of withdrawing it. Short lane only. */
    bool runs_to_end;
    /* On a pool thread, once per item (0 .. items-1), all items in parallel,
     * also after a cancel (poll ecp_job_cancelled). Reads and writes only the
     * job's data. Closing the set withdraws items that have not begun. */
    void (*work)(ecp_job *job, unsigned item);
    /* On the loop, once, after every item. Answers the served call, if any. */
    void (*done)(ecp_job *job);
    /* Releases the data (NULL: free()). Runs on the loop, last. */
    void (*free_data)(void *data);
} ecp_job_type;

/* A new job in set, owning `data`. It does nothing until started. */
ecp_job *ecp_job_new(ecp_job_set *set, const ecp_job_type *type, void *data);

void *ecp_job_data(const ecp_job *job);
ecp_job_set *ecp_job_owner(const ecp_job *job);

/* The job answers call: it defers it, keeps it alive until the job ends, and
 * cancels the job when the client cancels the call or goes away. Only before
 * ecp_job_start. */
void ecp_job_serve(ecp_job *job, ecp_call *call);
ecp_call *ecp_job_call(const ecp_job *job); /* NULL when it serves none */

/* Queues `items` (1 .. ECP_JOB_MAX_ITEMS) work items in the job's lane. The
 * job must not be touched by the caller afterwards except to cancel it, until
 * done. */
void ecp_job_start(ecp_job *job, unsigned items);

/* Asks the job to stop (loop thread). Idempotent. done still runs. */
void ecp_job_cancel(ecp_job *job);

/* Whether the job was cancelled: by ecp_job_cancel, its call's client, or
 * its set closing. Safe from any thread. */
bool ecp_job_cancelled(const ecp_job *job);

/* ----- one-item jobs around a payload ------------------------------------------- */

/* The common case, one piece of blocking work and one answer, without the
 * bookkeeping: the job owns a copy of a caller-sized payload (the inputs
 * going in, the outcome coming back), keeps the status and the error itself,
 * and frees the payload at its end. A service's operation is then a work
 * function, a done function and a short _start:
 *
 *     static const ecp_job_kind count_kind =
 *         ECP_JOB_KIND("wordcount.count", ECP_LANE_LONG, false, count_work, count_done, count_release);
 *     count_job j = {.path = xstrdup(path), .cb = cb, .ctx = ctx};
 *     return ecp_job_run(svc->jobs, &count_kind, &j, sizeof j, serve);
 *
 * ecp_job_data(job) is the job's payload, so code that reads a job's data
 * keeps working on these jobs. */
typedef struct ecp_job_kind {
    /* name, lane and runs_to_end as for any job; its callbacks stay NULL */
    ecp_job_type type;
    /* On a pool thread, once, unless the job was cancelled before it began
     * (then done gets ECP_ECANCELED "Request cancelled"), which a runs_to_end
     * kind never is. Returns 0 or a negative status with err set. */
    int (*work)(ecp_job *job, void *payload, ecp_error *err);
    /* On the loop, once, after work (not when the set closes first): status
     * is what work returned; err is NULL when status is 0. */
    void (*done)(void *payload, int status, const ecp_error *err);
    /* On the loop, last, always, once: releases what the payload owns (NULL:
     * nothing). The payload's own bytes are freed after it. */
    void (*release)(void *payload);
} ecp_job_kind;

/* A kind, as a static const initializer: name, lane, runs_to_end, work, done, release. */
#define ECP_JOB_KIND(name_, lane_, runs_to_end_, work_, done_, release_)                                          \
    {                                                                                                             \
        .type = {.name = (name_), .lane = (lane_), .runs_to_end = (runs_to_end_)}, .work = (work_), .done = (done_), \
        .release = (release_)                                                                                     \
    }

/* A new job of kind in set owning a copy of the `size` bytes at payload,
 * not started: the caller may serve a call and starts it (one item). */
ecp_job *ecp_job_prepare(ecp_job_set *set, const ecp_job_kind *kind, const void *payload, size_t size);

/* ecp_job_prepare, ecp_job_serve(job, serve) when serve is not NULL, and
 * ecp_job_start(job, 1): the job, running, which the caller may cancel until
 * done has run. */
ecp_job *ecp_job_run(ecp_job_set *set, const ecp_job_kind *kind, const void *payload, size_t size,
                     ecp_call *serve);

#endif
