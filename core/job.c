/* job: jobs over libuv's thread pool, in two lanes.
 *
 * libuv has one pool and runs what it is given first come, first served, so
 * the lanes are admission control in front of it: short items go straight to
 * libuv, long items only while fewer than long_limit of them are there, the
 * rest wait in our queue and are handed over as earlier ones come back. At
 * most long_limit threads can then be busy with long work, and a short item
 * waits at most for the short items ahead of it.
 *
 * Every item's uv_work_t lives inside its job, and libuv touches it until the
 * item's after-work callback has run on the loop. So a job's memory lives
 * until its last submitted item is back, even when its set was closed before
 * (the job is then an orphan: its data is gone and only the bookkeeping
 * waits for libuv).
 */
#include "job.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "call.h"
#include "error.h"

typedef enum item_state {
    ITEM_IDLE,      /* not started */
    ITEM_WAITING,   /* in the pool's long queue */
    ITEM_SUBMITTED, /* handed to libuv, after-work not run yet */
    ITEM_BACK,      /* after-work ran */
} item_state;

typedef struct job_item {
    uv_work_t req;
    ecp_job *job;
    unsigned index;
    item_state state;
    struct job_item *next_waiting;
} job_item;

struct ecp_job {
    ecp_pool *pool;
    ecp_job_set *set; /* NULL once the set closed: an orphan */
    ecp_job *prev, *next;
    const ecp_job_type *type;
    const ecp_job_kind *kind; /* one-item jobs around a payload only */
    void *data;
    int status;    /* a kind's outcome */
    ecp_error err; /* a kind's failure (pool thread until its item is back) */
    ecp_call *call;
    atomic_bool cancelled;
    unsigned items;
    unsigned outstanding; /* items not back on the loop yet (loop thread) */
    unsigned working;     /* items handed to libuv whose work has not returned (under pool->lock) */
    job_item item[ECP_JOB_MAX_ITEMS];
};

struct ecp_job_set {
    ecp_pool *pool;
    ecp_job *jobs;
    size_t count;
};

struct ecp_pool {
    uv_loop_t *loop;
    ecp_logger *log;
    unsigned threads;
    unsigned long_limit;
    unsigned long_submitted;   /* long items with libuv now */
    job_item *waiting_head;    /* long items waiting for room, first come first */
    job_item *waiting_tail;
    size_t submitted;          /* items with libuv now, of any lane */
    size_t sets;               /* open sets */
    bool freeing;
    uv_mutex_t lock;           /* guards every job's `working` */
    uv_cond_t returned;        /* some job's `working` reached 0 */
};

/* ----- the pool -------------------------------------------------------------------- */

unsigned ecp_pool_size_threads(void)
{
    const char *env = getenv("UV_THREADPOOL_SIZE");
    if (env && *env) {
        long n = strtol(env, NULL, 10);
        return n < 1 ? 1 : n > 1024 ? 1024 : (unsigned)n; /* libuv's own clamp */
    }
    /* Twice the cores, at least 4: pool threads spend much of their time
     * waiting for the disk, and the long lane leaves a quarter free. */
    unsigned n = uv_available_parallelism() * 2;
    if (n < 4)
        n = 4;
    if (n > 64)
        n = 64;
    char value[16];
    snprintf(value, sizeof value, "%u", n);
    setenv("UV_THREADPOOL_SIZE", value, 0);
    return n;
}

ecp_pool *ecp_pool_new(uv_loop_t *loop, ecp_logger *log)
{
    ecp_pool *self = xcalloc(1, sizeof *self);
    self->loop = loop;
    self->log = log;
    self->threads = ecp_pool_size_threads();
    unsigned reserve = self->threads / 4 < 2 ? 2 : self->threads / 4;
    self->long_limit = self->threads > reserve ? self->threads - reserve : 1;
    uv_mutex_init(&self->lock);
    uv_cond_init(&self->returned);
    return self;
}

static void pool_destroy(ecp_pool *self)
{
    uv_mutex_destroy(&self->lock);
    uv_cond_destroy(&self->returned);
    free(self);
}

void ecp_pool_free(ecp_pool *self)
{
    if (!self)
        return;
    assert(self->sets == 0 && "close every job set before freeing the pool");
    self->freeing = true;
    if (self->submitted == 0)
        pool_destroy(self);
}

uv_loop_t *ecp_pool_loop(const ecp_pool *self) { return self->loop; }
ecp_logger *ecp_pool_log(const ecp_pool *self) { return self->log; }
unsigned ecp_pool_threads(const ecp_pool *self) { return self->threads; }
unsigned ecp_pool_long_limit(const ecp_pool *self) { return self->long_limit; }

/* ----- items ------------------------------------------------------------------------ */

/* A payload job that was cancelled before it began need not begin: nothing
 * has been read or changed yet. */
static void kind_work(ecp_job *job)
{
    if (!job->type->runs_to_end && ecp_job_cancelled(job))
        job->status = ecp_error_set(&job->err, ECP_ECANCELED, "Request cancelled");
    else
        job->status = job->kind->work(job, job->data, &job->err);
}

static void item_work(uv_work_t *req)
{
    job_item *it = req->data;
    ecp_job *job = it->job;
    ecp_pool *pool = job->pool;
    if (job->kind)
        kind_work(job);
    else
        job->type->work(job, it->index);
    uv_mutex_lock(&pool->lock);
    if (--job->working == 0)
        uv_cond_broadcast(&pool->returned);
    uv_mutex_unlock(&pool->lock);
}

static void item_back(uv_work_t *req, int status);

static void submit(ecp_pool *pool, job_item *it)
{
    ecp_job *job = it->job;
    it->state = ITEM_SUBMITTED;
    pool->submitted++;
    if (job->type->lane == ECP_LANE_LONG)
        pool->long_submitted++;
    uv_mutex_lock(&pool->lock);
    job->working++;
    uv_mutex_unlock(&pool->lock);
    int rc = uv_queue_work(pool->loop, &it->req, item_work, item_back);
    assert(rc == 0); /* fails only without a work callback */
    (void)rc;
}

/* Hands waiting long items to libuv while there is room. */
static void admit(ecp_pool *pool)
{
    while (pool->waiting_head && pool->long_submitted < pool->long_limit) {
        job_item *it = pool->waiting_head;
        pool->waiting_head = it->next_waiting;
        if (!pool->waiting_head)
            pool->waiting_tail = NULL;
        it->next_waiting = NULL;
        submit(pool, it);
    }
}

static void unlink_job(ecp_job *job)
{
    ecp_job_set *set = job->set;
    if (job->prev)
        job->prev->next = job->next;
    else
        set->jobs = job->next;
    if (job->next)
        job->next->prev = job->prev;
    job->prev = job->next = NULL;
    set->count--;
}

/* Lets go of the job's call, answering it first with code and why when the
 * job left it unanswered (why: NULL when it must have been answered). */
static void release_call(ecp_job *job, int code, const char *why)
{
    ecp_call *call = job->call;
    if (!call)
        return;
    job->call = NULL;
    ecp_call_on_abandon(call, NULL, NULL);
    if (why && !ecp_call_answered(call))
        ecp_call_error(call, code, "%s", why);
    ecp_call_unref(call);
}

static void free_data(ecp_job *job)
{
    if (job->kind && job->kind->release)
        job->kind->release(job->data);
    if (job->type->free_data)
        job->type->free_data(job->data);
    else
        free(job->data);
    job->data = NULL;
}

/* Every item is back: done, then the end of the job. */
static void finish(ecp_job *job)
{
    unlink_job(job);
    /* what done notifies on the way to the answer, the call caused */
    if (job->call)
        ecp_call_cause_begin(job->call);
    if (job->kind)
        job->kind->done(job->data, job->status, job->status ? &job->err : NULL);
    else if (job->type->done)
        job->type->done(job);
    if (job->call)
        ecp_call_cause_end(job->call);
    if (job->call && !ecp_call_answered(job->call)) {
        if (ecp_job_cancelled(job)) {
            release_call(job, ECP_WIRE_REQUEST_CANCELLED, "Request cancelled");
        } else {
            ecp_log(job->pool->log, ECP_LOG_ERROR, "job %s finished without answering %s", job->type->name,
                    ecp_call_method(job->call));
            release_call(job, ECP_WIRE_INTERNAL_ERROR, "Internal error: the request ended without an answer");
        }
    }
    release_call(job, 0, NULL);
    free_data(job);
    free(job);
}

static void item_back(uv_work_t *req, int status)
{
    (void)status; /* UV_ECANCELED only for items a closing set withdrew */
    job_item *it = req->data;
    ecp_job *job = it->job;
    ecp_pool *pool = job->pool;
    it->state = ITEM_BACK;
    pool->submitted--;
    if (job->type->lane == ECP_LANE_LONG) {
        pool->long_submitted--;
        admit(pool);
    }
    if (--job->outstanding == 0) {
        if (job->set)
            finish(job);
        else
            free(job); /* an orphan of a closed set: its data went with the set */
    }
    if (pool->freeing && pool->submitted == 0)
        pool_destroy(pool);
}

/* ----- job sets ------------------------------------------------------------------------ */

ecp_job_set *ecp_job_set_new(ecp_pool *pool)
{
    ecp_job_set *self = xcalloc(1, sizeof *self);
    self->pool = pool;
    pool->sets++;
    return self;
}

ecp_pool *ecp_job_set_pool(const ecp_job_set *self) { return self->pool; }
size_t ecp_job_set_count(const ecp_job_set *self) { return self->count; }

static void withdraw_waiting(ecp_pool *pool, ecp_job *job)
{
    job_item **link = &pool->waiting_head;
    job_item *last = NULL;
    while (*link) {
        job_item *it = *link;
        if (it->job == job) {
            *link = it->next_waiting;
            it->next_waiting = NULL;
            it->state = ITEM_BACK;
            job->outstanding--;
        } else {
            last = it;
            link = &it->next_waiting;
        }
    }
    pool->waiting_tail = last;
}

void ecp_job_set_close(ecp_job_set *self)
{
    if (!self)
        return;
    ecp_pool *pool = self->pool;
    /* Stop what has not begun, tell what runs to stop... */
    for (ecp_job *job = self->jobs; job; job = job->next) {
        atomic_store(&job->cancelled, true);
        withdraw_waiting(pool, job);
        for (unsigned i = 0; i < job->items; i++) {
            job_item *it = &job->item[i];
            if (it->state == ITEM_SUBMITTED && !job->type->runs_to_end && uv_cancel((uv_req_t *)&it->req) == 0) {
                /* libuv will not run it; its after-work still comes */
                uv_mutex_lock(&pool->lock);
                job->working--;
                uv_mutex_unlock(&pool->lock);
            }
        }
    }
    /* ...and wait for it: after this, no thread touches any job's data. */
    uv_mutex_lock(&pool->lock);
    for (ecp_job *job = self->jobs; job; job = job->next)
        while (job->working > 0)
            uv_cond_wait(&pool->returned, &pool->lock);
    uv_mutex_unlock(&pool->lock);
    for (ecp_job *job = self->jobs, *next; job; job = next) {
        next = job->next;
        job->prev = job->next = NULL;
        job->set = NULL;
        release_call(job, ECP_WIRE_REQUEST_CANCELLED, "Request cancelled: the server is shutting down");
        free_data(job);
        if (job->outstanding == 0)
            free(job);
    }
    pool->sets--;
    free(self);
}

/* ----- jobs ----------------------------------------------------------------------------- */

static ecp_job *job_new(ecp_job_set *set, const ecp_job_type *type, void *data)
{
    assert(!type->runs_to_end || type->lane == ECP_LANE_SHORT);
    ecp_job *job = xcalloc(1, sizeof *job);
    job->pool = set->pool;
    job->set = set;
    job->type = type;
    job->data = data;
    atomic_init(&job->cancelled, false);
    job->next = set->jobs;
    if (set->jobs)
        set->jobs->prev = job;
    set->jobs = job;
    set->count++;
    return job;
}

ecp_job *ecp_job_new(ecp_job_set *set, const ecp_job_type *type, void *data)
{
    assert(type->work);
    return job_new(set, type, data);
}

ecp_job *ecp_job_prepare(ecp_job_set *set, const ecp_job_kind *kind, const void *payload, size_t size)
{
    assert(kind->work && kind->done && !kind->type.work && !kind->type.done && !kind->type.free_data);
    void *copy = xmalloc(size ? size : 1);
    memcpy(copy, payload, size);
    ecp_job *job = job_new(set, &kind->type, copy);
    job->kind = kind;
    return job;
}

ecp_job *ecp_job_run(ecp_job_set *set, const ecp_job_kind *kind, const void *payload, size_t size, ecp_call *serve)
{
    ecp_job *job = ecp_job_prepare(set, kind, payload, size);
    if (serve)
        ecp_job_serve(job, serve);
    ecp_job_start(job, 1);
    return job;
}

void *ecp_job_data(const ecp_job *job) { return job->data; }
ecp_job_set *ecp_job_owner(const ecp_job *job) { return job->set; }
ecp_call *ecp_job_call(const ecp_job *job) { return job->call; }

static void call_abandoned(void *ctx) { ecp_job_cancel(ctx); }

void ecp_job_serve(ecp_job *job, ecp_call *call)
{
    assert(!job->call && job->items == 0);
    job->call = call;
    ecp_call_ref(call);
    ecp_call_defer(call);
    if (ecp_call_abandoned(call))
        atomic_store(&job->cancelled, true);
    else
        ecp_call_on_abandon(call, call_abandoned, job);
}

void ecp_job_start(ecp_job *job, unsigned items)
{
    assert(job->items == 0 && "a job starts once");
    assert(items >= 1 && items <= ECP_JOB_MAX_ITEMS);
    assert(!job->kind || items == 1);
    ecp_pool *pool = job->pool;
    job->items = items;
    job->outstanding = items;
    for (unsigned i = 0; i < items; i++) {
        job_item *it = &job->item[i];
        it->job = job;
        it->index = i;
        it->req.data = it;
        if (job->type->lane == ECP_LANE_SHORT || pool->long_submitted < pool->long_limit) {
            submit(pool, it);
        } else {
            it->state = ITEM_WAITING;
            if (pool->waiting_tail)
                pool->waiting_tail->next_waiting = it;
            else
                pool->waiting_head = it;
            pool->waiting_tail = it;
        }
    }
}

void ecp_job_cancel(ecp_job *job) { atomic_store(&job->cancelled, true); }

bool ecp_job_cancelled(const ecp_job *job)
{
    return atomic_load_explicit(&job->cancelled, memory_order_relaxed);
}
