/* Snapshots read on the pool while the loop edits: the document service
 * edits one document on the loop thread (random inserts and deletes, typing
 * with backspaces, saves, reloads that replace the whole text) while jobs on
 * the pool read snapshots taken at known moments, several threads at once
 * on each, and compare every byte and every line with a copy of the text
 * made when the snapshot was taken. At the end the document is closed and
 * the service freed while the last readers still run.
 *
 * A plain program (no test framework) so that it also builds under
 * ThreadSanitizer. Exit status 0 when every read matched.
 *
 * Usage: snapshot_stress_test [edits] [seed]   (defaults: 8000, 1)
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "buf.h"
#include "document/interface.h"
#include "job.h"

#define READERS 4          /* work items per snapshot: threads reading one snapshot at once */
#define MAX_IN_FLIGHT 8    /* snapshot checks running at once */
#define SNAPSHOT_EVERY 50  /* edits between snapshots */

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(size_t n) { return n == 0 ? 0 : (size_t)(rng() % n); }

static void die(const char *what)
{
    fprintf(stderr, "snapshot_stress_test: %s\n", what);
    exit(1);
}

typedef struct stress {
    uv_loop_t loop;
    ecp_pool *pool;
    ecp_job_set *checks;
    document_service *svc;
    char id[64];
    char path[64];
    size_t in_flight, passed, failed, snapshots;
} stress;

/* ----- a check: one snapshot, the text it must show, READERS readers ----- */

typedef struct check {
    stress *st;
    document_snapshot *snap;
    char *expect; /* the text when the snapshot was taken */
    size_t len;
    uint64_t version;
    uint64_t seed;
    atomic_uint readers_left; /* the last reader releases the snapshot */
    bool ok[READERS];
    char why[READERS][160];
} check;

typedef struct gather {
    char *bytes;
    size_t len, cap;
} gather;

static void gather_chunk(void *ctx, const char *chunk, size_t len)
{
    gather *g = ctx;
    if (g->len + len > g->cap) {
        g->cap = (g->len + len) * 2;
        g->bytes = xrealloc(g->bytes, g->cap);
    }
    memcpy(g->bytes + g->len, chunk, len);
    g->len += len;
}

static bool same(gather *g, const char *want, size_t len)
{
    bool ok = g->len == len && (len == 0 || memcmp(g->bytes, want, len) == 0);
    g->len = 0;
    return ok;
}

/* Reader 0: the whole text; 1: the lines (every line of one snapshot in
 * eight, a sample of the others); others: random ranges. */
static bool read_and_compare(check *c, unsigned reader, char *why, size_t why_cap)
{
    const document_snapshot *s = c->snap;
    gather g = {0};
    bool ok = true;
    if (document_snapshot_length(s) != c->len || document_snapshot_version(s) != c->version) {
        snprintf(why, why_cap, "length %zu version %llu, want %zu %llu", document_snapshot_length(s),
                 (unsigned long long)document_snapshot_version(s), c->len, (unsigned long long)c->version);
        return false;
    }
    if (strcmp(document_snapshot_uri(s), "memory://stress") != 0 &&
        strncmp(document_snapshot_uri(s), "file://", 7) != 0) {
        snprintf(why, why_cap, "uri %s", document_snapshot_uri(s));
        return false;
    }
    if (reader == 0) {
        ok = document_snapshot_read(s, 0, c->len, gather_chunk, &g, NULL) == 0 && same(&g, c->expect, c->len);
        if (!ok)
            snprintf(why, why_cap, "the whole text differs");
    } else if (reader == 1) {
        size_t line = 0, stride = c->seed % 8 == 0 ? 1 : 37;
        for (size_t at = 0;; line++) {
            const char *nl = memchr(c->expect + at, '\n', c->len - at);
            size_t end = nl ? (size_t)(nl - c->expect) : c->len;
            if ((line % stride == 0 || !nl) &&
                (document_snapshot_read_line(s, line, gather_chunk, &g, NULL) != 0 ||
                 !same(&g, c->expect + at, end - at))) {
                snprintf(why, why_cap, "line %zu differs", line);
                ok = false;
                break;
            }
            if (!nl)
                break;
            at = end + 1;
        }
        if (ok && document_snapshot_line_count(s) != line + 1) {
            snprintf(why, why_cap, "%zu lines, want %zu", document_snapshot_line_count(s), line + 1);
            ok = false;
        }
        if (ok && document_snapshot_read_line(s, line + 1, gather_chunk, &g, NULL) != ECP_ERANGE) {
            snprintf(why, why_cap, "line %zu past the end was read", line + 1);
            ok = false;
        }
    } else {
        uint64_t x = c->seed * 0x9E3779B97F4A7C15ull + reader;
        for (int i = 0; i < 50 && ok; i++) {
            x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
            size_t at = c->len ? (size_t)(x % (c->len + 1)) : 0;
            size_t n = (size_t)((x >> 32) % 4096);
            if (n > c->len - at)
                n = c->len - at;
            ok = document_snapshot_read(s, at, n, gather_chunk, &g, NULL) == 0 && same(&g, c->expect + at, n);
            if (!ok)
                snprintf(why, why_cap, "bytes %zu..%zu differ", at, at + n);
        }
    }
    free(g.bytes);
    return ok;
}

static void check_work(ecp_job *job, unsigned item)
{
    check *c = ecp_job_data(job);
    c->ok[item] = read_and_compare(c, item, c->why[item], sizeof c->why[item]);
    /* Released off the loop, by whichever reader ends last. */
    if (atomic_fetch_sub(&c->readers_left, 1) == 1) {
        document_snapshot_release(c->snap);
        c->snap = NULL;
    }
}

static void check_done(ecp_job *job)
{
    check *c = ecp_job_data(job);
    stress *st = c->st;
    st->in_flight--;
    for (unsigned i = 0; i < READERS; i++) {
        if (c->ok[i]) {
            st->passed++;
        } else {
            st->failed++;
            fprintf(stderr, "snapshot of version %llu, reader %u: %s\n", (unsigned long long)c->version, i,
                    c->why[i]);
        }
    }
}

static void check_free(void *data)
{
    check *c = data;
    document_snapshot_release(c->snap); /* only when no reader ran: the set closed first */
    free(c->expect);
    free(c);
}

static const ecp_job_type check_job = {
    .name = "stress.check",
    .lane = ECP_LANE_SHORT,
    .work = check_work,
    .done = check_done,
    .free_data = check_free,
};

/* ----- the editing side, on the loop ----- */

static char *text_now(stress *st, size_t *len)
{
    buf out = BUF_INIT;
    if (document_get_text(st->svc, st->id, NULL, ECP_ENCODING_UTF8, &out, NULL) != 0)
        die("reading the text failed");
    *len = out.len;
    if (!out.data)
        return xcalloc(1, 1);
    return buf_detach(&out);
}

static void start_check(stress *st)
{
    while (st->in_flight >= MAX_IN_FLIGHT)
        uv_run(&st->loop, UV_RUN_ONCE);
    check *c = xcalloc(1, sizeof *c);
    c->st = st;
    ecp_error err;
    c->snap = document_snapshot_take(st->svc, st->id, &err);
    if (!c->snap)
        die(err.message);
    c->expect = text_now(st, &c->len);
    c->version = document_snapshot_version(c->snap);
    c->seed = rng();
    atomic_init(&c->readers_left, READERS);
    ecp_job_start(ecp_job_new(st->checks, &check_job, c), READERS);
    st->in_flight++;
    st->snapshots++;
}

static document_position position_of(stress *st, size_t offset)
{
    document_position pos;
    if (document_offset_to_position(st->svc, st->id, offset, ECP_ENCODING_UTF8, &pos, NULL) != 0)
        die("offset out of range");
    return pos;
}

static size_t length_now(stress *st)
{
    document_info info;
    document_get_info(st->svc, st->id, &info, NULL);
    document_position end = {info.line_count, 0}; /* the end of the document */
    uint64_t offset = 0;
    if (document_position_to_offset(st->svc, st->id, &end, ECP_ENCODING_UTF8, &offset, NULL) != 0)
        die("no end");
    return (size_t)offset;
}

static void random_text(char *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = below(12) == 0 ? '\n' : (char)('a' + below(26));
}

static void replace(stress *st, size_t from, size_t to, const char *text, size_t len)
{
    document_edit e = {{position_of(st, from), position_of(st, to)}, text, len};
    if (document_apply_edits(st->svc, st->id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL) != 0)
        die("edit failed");
}

/* Types at a caret with backspaces: the piece tree's add buffer takes
 * backspaced bytes back unless a snapshot may show them. */
static void type_with_backspaces(stress *st, size_t at)
{
    document_position pos = position_of(st, at);
    document_cursor cur = {pos, pos, false, 0};
    if (document_set_cursors(st->svc, st->id, 0, &cur, 1, ECP_ENCODING_UTF8, NULL) != 0)
        die("cursor failed");
    for (size_t i = 1 + below(24); i > 0; i--) {
        if (below(3) == 0 && at > 0) {
            replace(st, at - 1, at, "", 0);
            at--;
        } else {
            char c;
            random_text(&c, 1);
            if (document_type(st->svc, st->id, 0, &c, 1, 0, NULL, NULL) != 0)
                die("typing failed");
            at++;
        }
        if (below(64) == 0)
            start_check(st); /* in the middle of a word being typed */
        pos = position_of(st, at);
        cur = (document_cursor){pos, pos, false, 0};
        document_set_cursors(st->svc, st->id, 0, &cur, 1, ECP_ENCODING_UTF8, NULL);
    }
}

typedef struct saving {
    bool done;
    int status;
} saving;

static void saved(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri)
{
    saving *s = ctx;
    s->done = true;
    s->status = status;
}

static void reloaded(void *ctx, int status, const ecp_error *err, uint64_t version)
{
    if (status != 0)
        die(err->message);
    *(bool *)ctx = true;
}

static void opened(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    if (status != 0)
        die(err->message);
    snprintf(ctx, 64, "%s", id);
}

/* Saves (the pool writes from a snapshot while edits go on), then reloads
 * the file: the tree that snapshots in flight came from is freed. */
static void save_and_reload(stress *st)
{
    size_t len;
    char *expect = text_now(st, &len);
    saving s = {0};
    char uri[96];
    snprintf(uri, sizeof uri, "file://%s", st->path);
    document_save(st->svc, st->id, uri, saved, &s);
    /* A few edits while the save writes. */
    for (int i = 0; i < 20; i++) {
        size_t at = below(length_now(st) + 1);
        replace(st, at, at, "x", 1);
    }
    while (!s.done)
        uv_run(&st->loop, UV_RUN_ONCE);
    if (s.status != 0)
        die("save failed");
    FILE *in = fopen(st->path, "rb");
    char *got = xmalloc(len + 1);
    if (!in || fread(got, 1, len + 1, in) != len || memcmp(got, expect, len) != 0)
        die("the saved file is not the text at the time of the save");
    fclose(in);
    free(got);
    free(expect);
    start_check(st);
    bool done = false;
    if (document_reload(st->svc, st->id, true, reloaded, &done))
        while (!done)
            uv_run(&st->loop, UV_RUN_ONCE);
    start_check(st);
}

int main(int argc, char **argv)
{
    long edits = argc > 1 ? atol(argv[1]) : 8000;
    rng_state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    stress *st = xcalloc(1, sizeof *st);
    uv_loop_init(&st->loop);
    st->pool = ecp_pool_new(&st->loop, NULL);
    st->checks = ecp_job_set_new(st->pool);
    st->svc = document_service_new(st->pool, NULL);
    snprintf(st->path, sizeof st->path, "/tmp/ecpd-snapshot-stress-%d.txt", (int)getpid());

    size_t len0 = 64000;
    char *text = xmalloc(len0);
    random_text(text, len0);
    document_open_options opt = {.uri = "memory://stress", .content = text, .content_len = len0};
    document_open(st->svc, &opt, opened, st->id);
    free(text);

    char piece[200];
    for (long step = 0; step < edits; step++) {
        size_t len = length_now(st);
        size_t k = below(100);
        if (k < 35) {
            size_t n = 1 + below(sizeof piece);
            random_text(piece, n);
            size_t at = below(len + 1);
            replace(st, at, at, piece, n);
        } else if (k < 60 && len > 0) {
            size_t at = below(len), n = 1 + below(len - at < 64 ? len - at : 64);
            replace(st, at, at + n, "", 0);
        } else {
            type_with_backspaces(st, below(len + 1));
        }
        if (step % 3000 == 1500)
            save_and_reload(st);
        if (step % SNAPSHOT_EVERY == 0)
            start_check(st);
        uv_run(&st->loop, UV_RUN_NOWAIT);
    }
    /* The last snapshots outlive their document and the service. */
    for (int i = 0; i < MAX_IN_FLIGHT; i++)
        start_check(st);
    if (document_close(st->svc, st->id, NULL) != 0)
        die("close failed");
    document_service_free(st->svc);
    while (st->in_flight > 0)
        uv_run(&st->loop, UV_RUN_ONCE);
    ecp_job_set_close(st->checks);
    ecp_pool_free(st->pool);
    uv_run(&st->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&st->loop) != 0)
        die("handles left open");
    unlink(st->path);
    printf("snapshot_stress_test: %zu snapshots, %zu reads matched, %zu failed\n", st->snapshots, st->passed,
           st->failed);
    int rc = st->failed == 0 && st->passed == st->snapshots * READERS ? 0 : 1;
    free(st);
    return rc;
}
