/* ECPD_LOOP_TRACE=FILE: how long each turn of the loop kept it from reading.
 *
 * An answer waits for the turn that is running when its request arrives, so
 * the length of the loop's turns is what bounds it. A prepare handle (just
 * before the loop polls) and a check handle (just after the poll's callbacks)
 * split each turn into the poll phase, less the time the poll slept (libuv's
 * idle-time metric), where reads, writes and the model's stream are handled,
 * and the rest (check handles such as the terminals' screen feed, closing
 * handles, timers, idle handles). At exit the file gets a histogram of every
 * turn's busy time and one line for each turn of 2 ms or more. libuv runs
 * the newest check handle first: one a service starts after the trace (a
 * first terminal's) is counted in the poll phase, which moves time between
 * the two columns but not out of the turn. */
#include "loop_trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "buf.h"

#define TRACE_LONG_NS ((uint64_t)2000000)
#define TRACE_LONG_MAX ((size_t)1 << 20)
#define TRACE_BUCKETS 12 /* <0.5 ms, <1, <2, <4, ... <512, the rest */

typedef struct long_turn {
    uint64_t at_ns;    /* since the trace started */
    uint64_t poll_ns;  /* the poll phase's callbacks */
    uint64_t after_ns; /* from the check phase to the next poll */
    uint64_t cpu_ns;   /* of those, the time the loop's thread ran (the rest it waited for a core) */
} long_turn;

struct loop_trace {
    uv_loop_t *loop;
    FILE *out;
    uv_prepare_t prepare;
    uv_check_t check;
    uint64_t started;
    uint64_t prepare_at, idle_at_prepare; /* this turn's */
    uint64_t check_at, poll_ns;           /* 0 until this turn's check */
    uint64_t cpu_at_prepare, cpu_at_check, poll_cpu_ns;
    uint64_t turns, buckets[TRACE_BUCKETS];
    long_turn *longs;
    size_t long_count;
    int open;
};

static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void turn_ended(loop_trace *t, uint64_t now, uint64_t cpu)
{
    if (!t->check_at)
        return; /* the first turn, or one whose check did not run */
    uint64_t after = now - t->check_at, busy = t->poll_ns + after;
    size_t b = 0;
    for (uint64_t limit = 500000; b < TRACE_BUCKETS - 1 && busy >= limit; limit *= 2)
        b++;
    t->buckets[b]++;
    t->turns++;
    if (busy >= TRACE_LONG_NS && t->long_count < TRACE_LONG_MAX) {
        if ((t->long_count & (t->long_count - 1)) == 0) /* 0, 1, 2, 4 ...: grow by doubling */
            t->longs = xrealloc(t->longs, (t->long_count ? t->long_count * 2 : 1) * sizeof *t->longs);
        t->longs[t->long_count++] =
            (long_turn){t->prepare_at - t->started, t->poll_ns, after, t->poll_cpu_ns + (cpu - t->cpu_at_check)};
    }
    t->check_at = 0;
}

static void on_prepare(uv_prepare_t *handle)
{
    loop_trace *t = handle->data;
    uint64_t now = uv_hrtime(), cpu = thread_cpu_ns();
    turn_ended(t, now, cpu);
    t->prepare_at = now;
    t->cpu_at_prepare = cpu;
    t->idle_at_prepare = uv_metrics_idle_time(t->loop);
}

static void on_check(uv_check_t *handle)
{
    loop_trace *t = handle->data;
    uint64_t now = uv_hrtime(), slept = uv_metrics_idle_time(t->loop) - t->idle_at_prepare;
    uint64_t phase = now - t->prepare_at;
    t->poll_ns = phase > slept ? phase - slept : 0;
    t->check_at = now;
    t->cpu_at_check = thread_cpu_ns();
    t->poll_cpu_ns = t->cpu_at_check - t->cpu_at_prepare; /* the sleep costs no CPU */
}

loop_trace *loop_trace_start(uv_loop_t *loop, const char *path)
{
    if (!path || !*path)
        return NULL;
    FILE *out = fopen(path, "w");
    if (!out) {
        perror(path);
        return NULL;
    }
    loop_trace *t = xcalloc(1, sizeof *t);
    t->loop = loop;
    t->out = out;
    t->started = uv_hrtime();
    uv_loop_configure(loop, UV_METRICS_IDLE_TIME);
    uv_prepare_init(loop, &t->prepare);
    uv_check_init(loop, &t->check);
    t->prepare.data = t->check.data = t;
    uv_prepare_start(&t->prepare, on_prepare);
    uv_check_start(&t->check, on_check);
    /* it watches the loop; it keeps nothing alive */
    uv_unref((uv_handle_t *)&t->prepare);
    uv_unref((uv_handle_t *)&t->check);
    t->open = 2;
    return t;
}

static void handle_closed(uv_handle_t *handle)
{
    loop_trace *t = handle->data;
    if (--t->open == 0)
        free(t);
}

void loop_trace_stop(loop_trace *t)
{
    if (!t)
        return;
    fprintf(t->out, "turns %llu since %.6f s (CLOCK_MONOTONIC)\n", (unsigned long long)t->turns, (double)t->started / 1e9);
    double limit = 0.5;
    for (size_t b = 0; b < TRACE_BUCKETS; b++, limit *= 2) {
        if (b < TRACE_BUCKETS - 1)
            fprintf(t->out, "busy < %g ms: %llu\n", limit, (unsigned long long)t->buckets[b]);
        else
            fprintf(t->out, "busy >= %g ms: %llu\n", limit / 2, (unsigned long long)t->buckets[b]);
    }
    fprintf(t->out, "at_ms busy_ms poll_ms after_ms cpu_ms\n");
    for (size_t i = 0; i < t->long_count; i++) {
        const long_turn *l = &t->longs[i];
        fprintf(t->out, "%.3f %.3f %.3f %.3f %.3f\n", (double)l->at_ns / 1e6,
                (double)(l->poll_ns + l->after_ns) / 1e6, (double)l->poll_ns / 1e6, (double)l->after_ns / 1e6,
                (double)l->cpu_ns / 1e6);
    }
    fclose(t->out);
    free(t->longs);
    uv_close((uv_handle_t *)&t->prepare, handle_closed);
    uv_close((uv_handle_t *)&t->check, handle_closed);
}
