/* Benchmarks of the piece tree (BENCHMARKS.md):
 *
 *   B3 memory: what the tree adds to a loaded 100 MB document.
 *   B4: 1,000,000 single-byte inserts at random positions in it.
 *   B5: after 10,000 random edits, every line read the way an editor renders
 *       it: through the line iterator, which walks the leaves, each line
 *       copied into one reused buffer as its end is found (chunks_mb_s: the
 *       iterator's chunks copied by the caller; lookup_mb_s: one line_range
 *       and copy per line instead; reader_mb_s: one line_range and a reader
 *       per line), against memcpy of the same number of bytes.
 *
 * The document is generated in memory from a fixed seed: ~100 MB in ~1.5 M
 * lines of 0..132 bytes. Each workload runs `runs` times (argument 1, default
 * 3) on a fresh load and prints the median; one machine-readable line each:
 *
 *   B3 mem_extra_bytes=... file_bytes=... ratio=... load_ms=... lf_scan_ms=...
 *   B4 inserts_per_s=... ref_ropey_per_s=1800000 ratio=... final_lookup_ns=...
 *   B5 read_mb_s=... memcpy_mb_s=... ratio=... chunks_mb_s=... lookup_mb_s=... reader_mb_s=...
 *      flat_lines_mb_s=... ratio_flat_lines=...
 *
 * final_lookup_ns (one random byte_at in the tree B4 leaves) and
 * flat_lines_mb_s (the same lines cut from a flat buffer with memchr and
 * copied one by one) are context: the floors under each workload.
 *
 * Usage: bench_piece_tree [runs] [document bytes]
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "piece_tree.h"

#define MAX_RUNS 15

static uint64_t rng_state;

static uint64_t rng(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n);
    if (p == NULL) {
        fprintf(stderr, "bench_piece_tree: out of memory\n");
        exit(1);
    }
    return p;
}

/* Source-like text: words and spaces, lines of 0..132 bytes. */
static char *make_document(size_t size)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz    ABCDEFGHIJKLMNOPQRSTUVWXYZ(){};=+-*";
    char *doc = xmalloc(size);
    rng_state = 20240601;
    size_t at = 0;
    while (at < size) {
        size_t line = (size_t)(rng() % 133);
        for (size_t i = 0; i < line && at < size; i += 8) {
            uint64_t r = rng();
            for (int k = 0; k < 8 && i + (size_t)k < line && at < size; k++, r >>= 6)
                doc[at++] = alphabet[r & 63];
        }
        if (at < size)
            doc[at++] = '\n';
    }
    return doc;
}

static piece_tree *load_copy(const char *doc, size_t size)
{
    char *copy = xmalloc(size);
    memcpy(copy, doc, size);
    piece_tree *t = piece_tree_new_owning(copy, size);
    if (t == NULL) {
        fprintf(stderr, "bench_piece_tree: out of memory\n");
        exit(1);
    }
    return t;
}

static size_t heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

static size_t rss_bytes(void)
{
    unsigned long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return 0;
    if (fscanf(f, "%lu %lu", &size, &resident) != 2)
        resident = 0;
    fclose(f);
    return resident * 4096;
}

static volatile size_t sink;

static void bench_b3(const char *doc, size_t size)
{
    /* The original handed to the tree is already counted in both readings:
     * the difference is the tree's own bookkeeping. */
    char *copy = xmalloc(size);
    memcpy(copy, doc, size);
    size_t heap0 = heap_in_use(), rss0 = rss_bytes();
    double t0 = now_s();
    piece_tree *t = piece_tree_new_owning(copy, size);
    double t1 = now_s();
    size_t heap1 = heap_in_use(), rss1 = rss_bytes();
    if (t == NULL)
        exit(1);
    /* The floor of a load: finding every '\n' once. */
    double t2 = now_s();
    size_t lines = 0;
    for (const char *p = doc, *end = doc + size; (p = memchr(p, '\n', (size_t)(end - p))) != NULL; p++)
        lines++;
    double t3 = now_s();
    sink = lines;
    size_t extra = heap1 - heap0;
    printf("B3 mem_extra_bytes=%zu rss_extra_bytes=%zu file_bytes=%zu ratio=%.4f pieces=%zu load_ms=%.1f "
           "lf_scan_ms=%.1f lines=%zu\n",
           extra, rss1 > rss0 ? rss1 - rss0 : 0, size, (double)(size + extra) / (double)size,
           piece_tree_piece_count(t), (t1 - t0) * 1e3, (t3 - t2) * 1e3, piece_tree_line_count(t));
    piece_tree_free(t);
}

static void bench_b4(const char *doc, size_t size, int runs)
{
    enum { INSERTS = 1000000 };
    size_t *at = xmalloc(INSERTS * sizeof *at);
    double rate[MAX_RUNS], lookup_ns[MAX_RUNS];
    size_t pieces = 0;
    for (int run = 0; run < runs; run++) {
        rng_state = 4 + (uint64_t)run;
        for (size_t i = 0; i < INSERTS; i++)
            at[i] = (size_t)(rng() % (size + i + 1));
        piece_tree *t = load_copy(doc, size);
        double t0 = now_s();
        for (size_t i = 0; i < INSERTS; i++)
            if (piece_tree_insert(t, at[i], "x", 1) != 0)
                exit(1);
        double t1 = now_s();
        rate[run] = INSERTS / (t1 - t0);
        pieces = piece_tree_piece_count(t);
        /* Context, not a comparator: one descent to a random byte of the
         * final tree, the floor under every insert at that size. */
        size_t len = piece_tree_length(t), check = 0;
        for (size_t i = 0; i < INSERTS; i++)
            at[i] = (size_t)(rng() % len);
        double t2 = now_s();
        for (size_t i = 0; i < INSERTS; i++)
            check += (unsigned char)piece_tree_byte_at(t, at[i]);
        double t3 = now_s();
        sink = check;
        lookup_ns[run] = (t3 - t2) * 1e9 / INSERTS;
        piece_tree_free(t);
    }
    double r = median(rate, runs);
    printf("B4 inserts_per_s=%.0f ref_ropey_per_s=1800000 ratio=%.2f pieces=%zu final_lookup_ns=%.0f runs=%d\n", r,
           r / 1.8e6, pieces, median(lookup_ns, runs), runs);
    free(at);
}

static void random_edits(piece_tree *t, int edits)
{
    char text[64];
    for (int i = 0; i < edits; i++) {
        size_t len = piece_tree_length(t);
        if (rng() % 3 != 0) {
            size_t n = 1 + (size_t)(rng() % 40);
            for (size_t k = 0; k < n; k++)
                text[k] = rng() % 12 == 0 ? '\n' : (char)('a' + rng() % 26);
            if (piece_tree_insert(t, (size_t)(rng() % (len + 1)), text, n) != 0)
                exit(1);
        } else {
            size_t at = (size_t)(rng() % len), n = 1 + (size_t)(rng() % 80);
            if (piece_tree_delete(t, at, n < len - at ? n : len - at) != 0)
                exit(1);
        }
    }
}

static void bench_b5(const char *doc, size_t size, int runs)
{
    double ours[MAX_RUNS], chunks[MAX_RUNS], lookup[MAX_RUNS], reader[MAX_RUNS], ref[MAX_RUNS], flat_lines[MAX_RUNS];
    size_t line_cap = 1 << 16;
    char *line_buf = xmalloc(line_cap);
    char *flat = NULL, *dst = NULL;
    size_t pieces = 0;
    for (int run = 0; run < runs; run++) {
        rng_state = 5 + (uint64_t)run;
        piece_tree *t = load_copy(doc, size);
        random_edits(t, 10000);
        pieces = piece_tree_piece_count(t);
        size_t len = piece_tree_length(t), lines = piece_tree_line_count(t);

        /* Every line copied out into one reused buffer, as a renderer does,
         * through the iterator. */
        size_t total = 0, check = 0, got = 0;
        double t0 = now_s();
        piece_tree_lines it;
        piece_tree_lines_init(&it, t, 0, lines);
        while (piece_tree_lines_copy(&it, line_buf, line_cap, &got)) {
            if (got > line_cap)
                exit(1);
            check += got ? (unsigned char)line_buf[got - 1] : 0;
            total += got;
        }
        double t1 = now_s();

        /* The same through the iterator's chunks, copied by the caller. */
        double t10 = now_s();
        piece_tree_lines_init(&it, t, 0, lines);
        const char *chunk;
        size_t k;
        bool ends;
        got = 0;
        while (piece_tree_lines_next(&it, &chunk, &k, &ends)) {
            if (got + k > line_cap)
                exit(1);
            memcpy(line_buf + got, chunk, k);
            got += k;
            if (ends) {
                check += got ? (unsigned char)line_buf[got - 1] : 0;
                got = 0;
            }
        }
        double t11 = now_s();

        /* The same with one lookup per line. */
        size_t total_lookup = 0;
        double t8 = now_s();
        for (size_t l = 0; l < lines; l++) {
            size_t start, n;
            piece_tree_line_range(t, l, &start, &n);
            if (n > line_cap)
                exit(1);
            piece_tree_copy(t, start, n, line_buf);
            check += n ? (unsigned char)line_buf[n - 1] : 0;
            total_lookup += n;
        }
        double t9 = now_s();
        if (total_lookup != total)
            exit(1);

        /* The same through the reader, which hands out the tree's own bytes. */
        double t6 = now_s();
        for (size_t l = 0; l < lines; l++) {
            size_t start, n;
            got = 0;
            piece_tree_line_range(t, l, &start, &n);
            piece_tree_reader r;
            piece_tree_reader_init(&r, t, start, n);
            while (piece_tree_reader_next(&r, &chunk, &k)) {
                memcpy(line_buf + got, chunk, k);
                got += k;
            }
            check += got ? (unsigned char)line_buf[got - 1] : 0;
        }
        double t7 = now_s();
        sink = check;

        /* The comparator: the same number of bytes in one memcpy between
         * buffers that are already mapped. */
        if (flat == NULL) {
            flat = xmalloc(size * 2);
            dst = xmalloc(size * 2);
            memset(dst, 0, size * 2);
        }
        piece_tree_copy(t, 0, len, flat);
        memcpy(dst, flat, total);
        double t2 = now_s();
        memcpy(dst, flat, total);
        double t3 = now_s();
        sink = (unsigned char)dst[total / 2];

        /* Context: the same lines cut out of the flat copy with memchr and
         * copied one by one, the most a line-at-a-time reader can reach. */
        double t4 = now_s();
        for (const char *p = flat, *end = flat + len; p < end;) {
            const char *q = memchr(p, '\n', (size_t)(end - p));
            if (q == NULL)
                q = end;
            memcpy(line_buf, p, (size_t)(q - p));
            check += (unsigned char)line_buf[0];
            p = q + 1;
        }
        double t5 = now_s();
        sink = check;

        ours[run] = (double)total / (t1 - t0) / 1e6;
        lookup[run] = (double)total / (t9 - t8) / 1e6;
        chunks[run] = (double)total / (t11 - t10) / 1e6;
        reader[run] = (double)total / (t7 - t6) / 1e6;
        ref[run] = (double)total / (t3 - t2) / 1e6;
        flat_lines[run] = (double)total / (t5 - t4) / 1e6;
        piece_tree_free(t);
    }
    double o = median(ours, runs), m = median(ref, runs), f = median(flat_lines, runs);
    printf("B5 read_mb_s=%.0f memcpy_mb_s=%.0f ratio=%.3f chunks_mb_s=%.0f lookup_mb_s=%.0f reader_mb_s=%.0f "
           "flat_lines_mb_s=%.0f ratio_flat_lines=%.3f pieces=%zu runs=%d\n",
           o, m, o / m, median(chunks, runs), median(lookup, runs), median(reader, runs), f, o / f, pieces, runs);
    free(flat);
    free(dst);
    free(line_buf);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 3;
    size_t size = argc > 2 ? (size_t)strtoull(argv[2], NULL, 10) : 100u * 1000 * 1000;
    if (runs < 1 || runs > MAX_RUNS || size == 0) {
        fprintf(stderr, "usage: bench_piece_tree [runs 1..%d] [document bytes]\n", MAX_RUNS);
        return 2;
    }
    char *doc = make_document(size);
    bench_b3(doc, size);
    bench_b4(doc, size, runs);
    bench_b5(doc, size, runs);
    free(doc);
    return 0;
}
