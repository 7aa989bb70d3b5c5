/* Unit tests of core/job.h: jobs finish once on the loop after every item,
 * own and free their data, cancel (by hand, through their call, by closing
 * their set), answer the call they serve even when done forgets to, and keep
 * long work to its lane so that short work always finds a thread. The last
 * test is a stress run meant for the sanitizer builds (ASan here; the same
 * executable builds under ThreadSanitizer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "buf.h"
#include "call.h"
#include "job.h"
#include "jsonrpc.h"

typedef struct fixture {
    uv_loop_t loop;
    ecp_logger log;
    char *log_text;
    size_t log_len;
    ecp_pool *pool;
    ecp_job_set *set;
    char said[64]; /* the message a payload job's done was told */
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->log.out = open_memstream(&f->log_text, &f->log_len);
    f->log.level = ECP_LOG_DEBUG;
    f->pool = ecp_pool_new(&f->loop, &f->log);
    f->set = ecp_job_set_new(f->pool);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->set)
        ecp_job_set_close(f->set);
    ecp_pool_free(f->pool);
    /* orphaned items come back through the loop */
    while (uv_run(&f->loop, UV_RUN_NOWAIT))
        usleep(100);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    fclose(f->log.out);
    free(f->log_text);
    free(f);
    return 0;
}

static const char *log_text(fixture *f)
{
    fflush(f->log.out);
    return f->log_text ? f->log_text : "";
}

/* Runs the loop until *flag or about 10 s pass. */
static void run_until(fixture *f, atomic_int *flag)
{
    for (int i = 0; i < 100000 && !atomic_load(flag); i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (!atomic_load(flag))
            usleep(100);
    }
    assert_true(atomic_load(flag));
}

/* ----- what every test job records --------------------------------------------------- */

typedef struct record {
    atomic_int items_run;
    atomic_int done_calls;
    atomic_int freed;
    atomic_int saw_cancelled;
    atomic_int *running_long; /* shared: long items running now */
    atomic_int *max_long;     /* the most seen at once */
    atomic_int *release;      /* blocking work waits for this */
    unsigned on_done_answers; /* times done answers its call */
    const unsigned *causing;  /* the call's cause counter, looked at by done */
    unsigned causing_in_done; /* what done saw of it, before and after answering */
    unsigned causing_after_answer;
} record;

typedef struct job_data {
    record *rec;
} job_data;

static job_data *data_for(record *rec)
{
    job_data *d = calloc(1, sizeof *d);
    d->rec = rec;
    return d;
}

static void count_work(ecp_job *job, unsigned item)
{
    (void)item;
    job_data *d = ecp_job_data(job);
    atomic_fetch_add(&d->rec->items_run, 1);
}

/* Blocks until released or cancelled, counting how many run at once. */
static void blocking_work(ecp_job *job, unsigned item)
{
    (void)item;
    job_data *d = ecp_job_data(job);
    record *r = d->rec;
    int now = atomic_fetch_add(r->running_long, 1) + 1;
    int seen = atomic_load(r->max_long);
    while (now > seen && !atomic_compare_exchange_weak(r->max_long, &seen, now))
        ;
    while (!atomic_load(r->release) && !ecp_job_cancelled(job))
        usleep(200);
    atomic_fetch_sub(r->running_long, 1);
    atomic_fetch_add(&r->items_run, 1);
}

static void record_done(ecp_job *job)
{
    job_data *d = ecp_job_data(job);
    atomic_fetch_add(&d->rec->done_calls, 1);
    if (ecp_job_cancelled(job))
        atomic_fetch_add(&d->rec->saw_cancelled, 1);
    ecp_call *call = ecp_job_call(job);
    if (d->rec->causing)
        d->rec->causing_in_done = *d->rec->causing;
    for (unsigned i = 0; call && i < d->rec->on_done_answers; i++)
        ecp_call_reply_null(call);
    if (d->rec->causing)
        d->rec->causing_after_answer = *d->rec->causing;
}

static void record_free(void *data)
{
    job_data *d = data;
    atomic_fetch_add(&d->rec->freed, 1);
    free(d);
}

static const ecp_job_type short_counter = {"test.short", ECP_LANE_SHORT, false, count_work, record_done, record_free};
static const ecp_job_type long_blocker = {"test.long", ECP_LANE_LONG, false, blocking_work, record_done, record_free};
static const ecp_job_type short_blocker = {"test.short_block", ECP_LANE_SHORT, false, blocking_work, record_done,
                                           record_free};

/* ----- tests ----------------------------------------------------------------------------- */

static void test_items_then_done_once(void **state)
{
    fixture *f = *state;
    record rec = {0};
    ecp_job *job = ecp_job_new(f->set, &short_counter, data_for(&rec));
    assert_int_equal(ecp_job_set_count(f->set), 1);
    ecp_job_start(job, 5);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 5);
    assert_int_equal(atomic_load(&rec.done_calls), 1);
    assert_int_equal(atomic_load(&rec.saw_cancelled), 0);
    assert_int_equal(ecp_job_set_count(f->set), 0);
}

static void test_cancel_reaches_work_and_done(void **state)
{
    fixture *f = *state;
    atomic_int running = 0, max = 0, release = 0;
    record rec = {.running_long = &running, .max_long = &max, .release = &release};
    ecp_job *job = ecp_job_new(f->set, &long_blocker, data_for(&rec));
    ecp_job_start(job, 1);
    /* let the item reach its thread, then cancel: only the flag can end it */
    for (int i = 0; i < 10000 && atomic_load(&running) == 0; i++)
        usleep(100);
    assert_int_equal(atomic_load(&running), 1);
    ecp_job_cancel(job);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.done_calls), 1);
    assert_int_equal(atomic_load(&rec.saw_cancelled), 1);
}

/* The point of the lanes: with every long slot taken and more long work
 * queued, a short job still runs at once. */
static void test_short_work_is_never_starved(void **state)
{
    fixture *f = *state;
    unsigned limit = ecp_pool_long_limit(f->pool);
    assert_true(limit >= 1 && limit < ecp_pool_threads(f->pool));
    atomic_int running = 0, max = 0, release = 0;
    record longs = {.running_long = &running, .max_long = &max, .release = &release};
    unsigned long_jobs = limit + 3;
    for (unsigned i = 0; i < long_jobs; i++)
        ecp_job_start(ecp_job_new(f->set, &long_blocker, data_for(&longs)), 2);
    record shorts = {0};
    ecp_job_start(ecp_job_new(f->set, &short_counter, data_for(&shorts)), 1);
    run_until(f, &shorts.freed);
    assert_int_equal(atomic_load(&shorts.items_run), 1);
    /* the long ones are still blocked: the short one did not wait for them */
    assert_int_equal(atomic_load(&longs.done_calls), 0);
    assert_true((unsigned)atomic_load(&max) <= limit);
    atomic_store(&release, 1);
    for (int i = 0; i < 100000 && (unsigned)atomic_load(&longs.freed) < long_jobs; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(100);
    }
    assert_int_equal(atomic_load(&longs.freed), (int)long_jobs);
    assert_int_equal(atomic_load(&longs.items_run), (int)(2 * long_jobs));
    assert_true((unsigned)atomic_load(&max) <= limit);
}

/* Closing a set cancels running work, waits for it, frees every job's data
 * and never calls done; queued long items never run at all. */
static void test_close_cancels_waits_and_frees(void **state)
{
    fixture *f = *state;
    unsigned limit = ecp_pool_long_limit(f->pool);
    atomic_int running = 0, max = 0, release = 0;
    record rec = {.running_long = &running, .max_long = &max, .release = &release};
    unsigned jobs = limit + 4;
    for (unsigned i = 0; i < jobs; i++)
        ecp_job_start(ecp_job_new(f->set, &long_blocker, data_for(&rec)), 1);
    record shorts = {.running_long = &running, .max_long = &max, .release = &release};
    ecp_job_start(ecp_job_new(f->set, &short_blocker, data_for(&shorts)), 1);
    for (int i = 0; i < 10000 && (unsigned)atomic_load(&running) < limit + 1; i++)
        usleep(100);
    assert_int_equal(atomic_load(&running), (int)limit + 1);
    ecp_job_set_close(f->set);
    f->set = NULL;
    /* close returned: nothing runs any more, everything is freed, no done */
    assert_int_equal(atomic_load(&running), 0);
    assert_int_equal(atomic_load(&rec.freed), (int)jobs);
    assert_int_equal(atomic_load(&shorts.freed), 1);
    assert_int_equal(atomic_load(&rec.done_calls) + atomic_load(&shorts.done_calls), 0);
    assert_int_equal(atomic_load(&rec.items_run), (int)limit);
}

static const ecp_job_type short_to_end = {"test.save", ECP_LANE_SHORT, true, count_work, record_done, record_free};

/* Work that must run once asked for (a save) still runs when the set closes
 * before a thread took it; other work that had not begun is dropped. */
static void test_close_runs_what_must_run_to_the_end(void **state)
{
    fixture *f = *state;
    unsigned threads = ecp_pool_threads(f->pool);
    atomic_int running = 0, max = 0, release = 0;
    record blockers = {.running_long = &running, .max_long = &max, .release = &release};
    for (unsigned i = 0; i < threads; i++)
        ecp_job_start(ecp_job_new(f->set, &short_blocker, data_for(&blockers)), 1);
    for (int i = 0; i < 10000 && (unsigned)atomic_load(&running) < threads; i++)
        usleep(100);
    assert_int_equal(atomic_load(&running), (int)threads); /* no thread is free */
    record save = {0}, read = {0};
    ecp_job_start(ecp_job_new(f->set, &short_to_end, data_for(&save)), 1);
    ecp_job_start(ecp_job_new(f->set, &short_counter, data_for(&read)), 1);
    ecp_job_set_close(f->set); /* the blockers see the cancel and return */
    f->set = NULL;
    assert_int_equal(atomic_load(&save.items_run), 1);
    assert_int_equal(atomic_load(&read.items_run), 0);
    assert_int_equal(atomic_load(&save.freed) + atomic_load(&read.freed), 2);
    assert_int_equal(atomic_load(&save.done_calls) + atomic_load(&read.done_calls), 0);
    assert_int_equal(atomic_load(&blockers.freed), (int)threads);
}

/* ----- serving a call ---------------------------------------------------------------------- */

typedef struct delivered {
    int count;
    char *last;
    unsigned causing; /* code running on the call's behalf (ecp_call_cause_begin) */
} delivered;

static unsigned *cause_counter(void *owner) { return &((delivered *)owner)->causing; }

static void on_deliver(void *owner, ecp_call *call, const char *response, size_t len, const jw_splices *splices)
{
    (void)splices;
    (void)call;
    delivered *d = owner;
    d->count++;
    free(d->last);
    d->last = strndup(response, len);
}

static ecp_call *make_call(fixture *f, delivered *out)
{
    static const char text[] = "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"test/slow\",\"params\":{}}";
    char *copy = xstrdup(text);
    ecp_call_init init;
    memset(&init, 0, sizeof init);
    assert_int_equal(json_doc_parse(&init.doc, copy, strlen(copy), NULL), 0);
    arena scratch = ARENA_INIT;
    rpc_message msg;
    rpc_problem problem;
    assert_int_equal(rpc_message_read(&init.doc, json_root(&init.doc), &scratch, &msg, &problem), 0);
    init.text = copy;
    init.len = strlen(copy);
    init.message = json_root(&init.doc);
    init.method = msg.method;
    init.id_raw = msg.id_raw;
    init.id_len = msg.id_len;
    init.params = msg.params;
    init.client_id = 1;
    init.deliver = on_deliver;
    init.owner = out;
    init.cause_counter = cause_counter;
    init.log = &f->log;
    ecp_call *call = ecp_call_create(&init);
    arena_free(&scratch);
    return call;
}

/* Starts a one-item job serving a fresh call, as a handler would, and
 * drops the dispatcher's reference as the server does when the handler
 * returns. */
static void serve(fixture *f, const ecp_job_type *type, record *rec, delivered *out, ecp_call **call_out)
{
    ecp_call *call = make_call(f, out);
    ecp_job *job = ecp_job_new(f->set, type, data_for(rec));
    ecp_job_serve(job, call);
    assert_ptr_equal(ecp_job_call(job), call);
    assert_true(ecp_call_deferred(call));
    ecp_job_start(job, 1);
    if (call_out)
        *call_out = call;
    ecp_call_unref(call);
}

static void test_done_answers_the_call(void **state)
{
    fixture *f = *state;
    record rec = {.on_done_answers = 1};
    delivered out = {0};
    serve(f, &short_counter, &rec, &out, NULL);
    run_until(f, &rec.freed);
    assert_int_equal(out.count, 1);
    assert_string_equal(out.last, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":null}");
    free(out.last);
}

/* What done notifies on its way to the answer, the call caused: it comes
 * before the answer on every connection (PROTOCOL.md section 6). */
static void test_done_runs_on_its_calls_behalf(void **state)
{
    fixture *f = *state;
    delivered out = {0};
    record rec = {.on_done_answers = 1, .causing = &out.causing};
    serve(f, &short_counter, &rec, &out, NULL);
    run_until(f, &rec.freed);
    assert_int_equal(out.count, 1);
    assert_int_equal(rec.causing_in_done, 1);
    assert_int_equal(rec.causing_after_answer, 1); /* until done returns */
    assert_int_equal(out.causing, 0);
    free(out.last);
}

/* An abandoned call's job causes nothing: its owner is gone. */
static void test_abandoned_calls_done_causes_nothing(void **state)
{
    fixture *f = *state;
    delivered out = {0};
    record rec = {.on_done_answers = 1, .causing = &out.causing};
    ecp_call *call = make_call(f, &out);
    ecp_job *job = ecp_job_new(f->set, &short_counter, data_for(&rec));
    ecp_job_serve(job, call);
    ecp_call_abandon(call); /* the client cancelled it, or went away */
    ecp_job_start(job, 1);
    ecp_call_unref(call);
    run_until(f, &rec.freed);
    assert_int_equal(rec.causing_in_done, 0);
    assert_int_equal(out.causing, 0);
    free(out.last);
}

static void test_unanswered_call_gets_internal_error(void **state)
{
    fixture *f = *state;
    record rec = {.on_done_answers = 0};
    delivered out = {0};
    serve(f, &short_counter, &rec, &out, NULL);
    run_until(f, &rec.freed);
    assert_int_equal(out.count, 1);
    assert_non_null(strstr(out.last, "\"code\":-32603"));
    assert_non_null(strstr(log_text(f), "job test.short finished without answering test/slow"));
    free(out.last);
}

static void test_second_answer_is_caught(void **state)
{
    fixture *f = *state;
    record rec = {.on_done_answers = 2};
    delivered out = {0};
    serve(f, &short_counter, &rec, &out, NULL);
    run_until(f, &rec.freed);
    assert_int_equal(out.count, 1);
    assert_string_equal(out.last, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":null}");
    assert_non_null(strstr(log_text(f), "test/slow: answered a second time"));
    free(out.last);
}

/* The client cancels: the job is told, and its answer goes nowhere. */
static void test_abandoned_call_cancels_the_job(void **state)
{
    fixture *f = *state;
    atomic_int running = 0, max = 0, release = 0;
    record rec = {.running_long = &running, .max_long = &max, .release = &release, .on_done_answers = 0};
    delivered out = {0};
    ecp_call *call;
    serve(f, &long_blocker, &rec, &out, &call);
    for (int i = 0; i < 10000 && atomic_load(&running) == 0; i++)
        usleep(100);
    /* as the server does on $/cancelRequest; the pending answer's reference
     * keeps the call alive until it is answered */
    ecp_call_abandon(call);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.saw_cancelled), 1);
    assert_int_equal(out.count, 0);
    /* a cancelled job that does not answer is not an error */
    assert_null(strstr(log_text(f), "without answering"));
}

/* Closing the set answers (and releases) the calls of its jobs. */
static void test_close_releases_calls(void **state)
{
    fixture *f = *state;
    atomic_int running = 0, max = 0, release = 0;
    record rec = {.running_long = &running, .max_long = &max, .release = &release};
    delivered out = {0};
    serve(f, &long_blocker, &rec, &out, NULL);
    ecp_job_set_close(f->set);
    f->set = NULL;
    assert_int_equal(atomic_load(&rec.freed), 1);
    assert_int_equal(atomic_load(&rec.done_calls), 0);
    assert_int_equal(out.count, 1);
    assert_non_null(strstr(out.last, "\"code\":-32800"));
    free(out.last);
}

/* ----- one-item jobs around a payload ------------------------------------------------------ */

typedef struct kind_payload {
    record *rec;
    char *copy;        /* owned: freed by release */
    bool block;        /* work waits for rec->release or a cancel */
    uv_thread_t loop_thread;
    atomic_int *status; /* what done was told */
    char *said;         /* 64 bytes: the message done was told */
} kind_payload;

static int kind_work(ecp_job *job, void *payload, ecp_error *err)
{
    kind_payload *p = payload;
    assert_ptr_equal(ecp_job_data(job), payload);
    assert_false(uv_thread_equal(&p->loop_thread, &(uv_thread_t){uv_thread_self()}));
    atomic_fetch_add(&p->rec->items_run, 1);
    while (p->block && !atomic_load(p->rec->release) && !ecp_job_cancelled(job))
        usleep(200);
    if (ecp_job_cancelled(job))
        return ecp_error_set(err, ECP_ECANCELED, "stopped half-way: %s", p->copy);
    return 0;
}

static void kind_done(void *payload, int status, const ecp_error *err)
{
    kind_payload *p = payload;
    uv_thread_t self = uv_thread_self();
    assert_true(uv_thread_equal(&p->loop_thread, &self)); /* on the loop */
    assert_true(status == 0 ? err == NULL : err != NULL && err->status == status);
    atomic_store(p->status, status);
    if (err)
        snprintf(p->said, 64, "%.60s", err->message);
    atomic_fetch_add(&p->rec->done_calls, 1);
}

static void kind_release(void *payload)
{
    kind_payload *p = payload;
    free(p->copy);
    p->copy = NULL;
    atomic_fetch_add(&p->rec->freed, 1);
}

static const ecp_job_kind short_kind =
    ECP_JOB_KIND("test.kind", ECP_LANE_SHORT, false, kind_work, kind_done, kind_release);
static const ecp_job_kind saving_kind =
    ECP_JOB_KIND("test.kind_save", ECP_LANE_SHORT, true, kind_work, kind_done, kind_release);

static kind_payload payload_for(fixture *f, record *rec, atomic_int *status, bool block)
{
    return (kind_payload){.rec = rec, .copy = xstrdup("a.txt"), .block = block, .loop_thread = uv_thread_self(),
                          .status = status, .said = f->said};
}

static void test_kind_runs_work_then_done_on_the_loop(void **state)
{
    fixture *f = *state;
    record rec = {0};
    atomic_int status = 1;
    kind_payload p = payload_for(f, &rec, &status, false);
    ecp_job_run(f->set, &short_kind, &p, sizeof p, NULL);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 1);
    assert_int_equal(atomic_load(&rec.done_calls), 1);
    assert_int_equal(atomic_load(&rec.freed), 1);
    assert_int_equal(atomic_load(&status), 0);
}

/* Cancelled before it began: work never runs, done hears ECP_ECANCELED,
 * the payload is released once. */
static void test_kind_cancelled_before_it_runs(void **state)
{
    fixture *f = *state;
    record rec = {0};
    atomic_int status = 0;
    kind_payload p = payload_for(f, &rec, &status, false);
    ecp_job *job = ecp_job_prepare(f->set, &short_kind, &p, sizeof p);
    ecp_job_cancel(job);
    ecp_job_start(job, 1);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 0);
    assert_int_equal(atomic_load(&rec.done_calls), 1);
    assert_int_equal(atomic_load(&rec.freed), 1);
    assert_int_equal(atomic_load(&status), ECP_ECANCELED);
    assert_string_equal(f->said, "Request cancelled");
}

/* ...unless it must run to its end. */
static void test_kind_that_runs_to_end_ignores_an_early_cancel(void **state)
{
    fixture *f = *state;
    record rec = {0};
    atomic_int status = 1;
    kind_payload p = payload_for(f, &rec, &status, false);
    ecp_job *job = ecp_job_prepare(f->set, &saving_kind, &p, sizeof p);
    ecp_job_cancel(job);
    ecp_job_start(job, 1);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 1);
    assert_int_equal(atomic_load(&status), ECP_ECANCELED); /* work saw the flag and said so */
}

/* Cancelled while it runs: work sees the flag, done gets work's own error. */
static void test_kind_cancelled_while_it_runs(void **state)
{
    fixture *f = *state;
    atomic_int release = 0;
    record rec = {.release = &release};
    atomic_int status = 0;
    kind_payload p = payload_for(f, &rec, &status, true);
    ecp_job *job = ecp_job_run(f->set, &short_kind, &p, sizeof p, NULL);
    for (int i = 0; i < 100000 && atomic_load(&rec.items_run) == 0; i++)
        usleep(100);
    ecp_job_cancel(job);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 1);
    assert_int_equal(atomic_load(&rec.done_calls), 1);
    assert_int_equal(atomic_load(&rec.freed), 1);
    assert_int_equal(atomic_load(&status), ECP_ECANCELED);
    assert_string_equal(f->said, "stopped half-way: a.txt");
}

/* The set closes under a running job: no done, the payload released once,
 * the call it serves answered -32800. */
static void test_kind_released_once_when_its_set_closes(void **state)
{
    fixture *f = *state;
    atomic_int release = 0;
    record rec = {.release = &release};
    atomic_int status = 1;
    delivered out = {0};
    ecp_call *call = make_call(f, &out);
    kind_payload p = payload_for(f, &rec, &status, true);
    ecp_job_run(f->set, &short_kind, &p, sizeof p, call);
    assert_true(ecp_call_deferred(call));
    ecp_call_unref(call);
    for (int i = 0; i < 100000 && atomic_load(&rec.items_run) == 0; i++)
        usleep(100);
    ecp_job_set_close(f->set);
    f->set = NULL;
    assert_int_equal(atomic_load(&rec.done_calls), 0);
    assert_int_equal(atomic_load(&rec.freed), 1);
    assert_int_equal(out.count, 1);
    assert_non_null(strstr(out.last, "\"code\":-32800"));
    free(out.last);
}

/* The client cancels the call before the job began: done hears it. */
static void test_kind_serves_its_call(void **state)
{
    fixture *f = *state;
    record rec = {0};
    atomic_int status = 0;
    delivered out = {0};
    ecp_call *call = make_call(f, &out);
    ecp_call_abandon(call);
    kind_payload p = payload_for(f, &rec, &status, false);
    ecp_job_run(f->set, &short_kind, &p, sizeof p, call);
    ecp_call_unref(call);
    run_until(f, &rec.freed);
    assert_int_equal(atomic_load(&rec.items_run), 0);
    assert_int_equal(atomic_load(&status), ECP_ECANCELED);
    assert_int_equal(out.count, 0);
}

/* ----- stress ------------------------------------------------------------------------------- */

typedef struct stress_data {
    atomic_int *freed;
    atomic_int *done;
    atomic_uint sum[ECP_JOB_MAX_ITEMS];
} stress_data;

static void stress_work(ecp_job *job, unsigned item)
{
    stress_data *d = ecp_job_data(job);
    for (unsigned i = 0; i < 200 && !ecp_job_cancelled(job); i++)
        atomic_fetch_add(&d->sum[item], 1);
}

static void stress_done(ecp_job *job)
{
    stress_data *d = ecp_job_data(job);
    atomic_fetch_add(d->done, 1);
}

static void stress_free(void *data)
{
    stress_data *d = data;
    atomic_fetch_add(d->freed, 1);
    free(d);
}

static const ecp_job_type stress_short = {"stress.short", ECP_LANE_SHORT, false, stress_work, stress_done, stress_free};
static const ecp_job_type stress_long = {"stress.long", ECP_LANE_LONG, false, stress_work, stress_done, stress_free};

static void test_stress_many_jobs_two_sets(void **state)
{
    fixture *f = *state;
    ecp_job_set *doomed = ecp_job_set_new(f->pool);
    atomic_int freed = 0, done = 0;
    unsigned seed = 12345, started = 0, doomed_count = 0;
    for (unsigned round = 0; round < 40; round++) {
        for (unsigned k = 0; k < 50; k++) {
            seed = seed * 1103515245u + 12345u;
            bool to_doomed = doomed && (seed >> 8) % 4 == 0;
            const ecp_job_type *type = (seed >> 12) % 2 ? &stress_long : &stress_short;
            stress_data *d = calloc(1, sizeof *d);
            d->freed = &freed;
            d->done = &done;
            ecp_job *job = ecp_job_new(to_doomed ? doomed : f->set, type, d);
            ecp_job_start(job, 1 + (seed >> 16) % ECP_JOB_MAX_ITEMS);
            if ((seed >> 20) % 5 == 0)
                ecp_job_cancel(job);
            started++;
            doomed_count += to_doomed;
        }
        uv_run(&f->loop, UV_RUN_NOWAIT);
        if (round == 20) {
            ecp_job_set_close(doomed);
            doomed = NULL;
        }
    }
    for (int i = 0; i < 200000 && (unsigned)atomic_load(&freed) < started; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(50);
    }
    assert_int_equal(atomic_load(&freed), (int)started);
    /* every job of the surviving set and the closed set's already finished
     * ones saw done; the others were freed without it */
    assert_true((unsigned)atomic_load(&done) >= started - doomed_count);
    assert_int_equal(ecp_job_set_count(f->set), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_items_then_done_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cancel_reaches_work_and_done, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_work_is_never_starved, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_cancels_waits_and_frees, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_runs_what_must_run_to_the_end, setup, teardown),
        cmocka_unit_test_setup_teardown(test_done_answers_the_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_done_runs_on_its_calls_behalf, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_calls_done_causes_nothing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_unanswered_call_gets_internal_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_second_answer_is_caught, setup, teardown),
        cmocka_unit_test_setup_teardown(test_abandoned_call_cancels_the_job, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_releases_calls, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_runs_work_then_done_on_the_loop, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_cancelled_before_it_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_that_runs_to_end_ignores_an_early_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_cancelled_while_it_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_released_once_when_its_set_closes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kind_serves_its_call, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stress_many_jobs_two_sets, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
