/* B13: file/grep over a generated tree of 50,000 files (~200 MB), for a literal
 * and for a regex, through the file service's C API on a real libuv loop,
 * against `rg` (Debian ripgrep: apt-get install ripgrep) and `grep -rn` on the
 * same tree in the same run.
 *
 *   bench_grep [DIR] [RUNS]
 *
 * DIR (default /tmp/ecpd-bench-grep) holds the tree; it is made once
 * (deterministically, from a fixed seed) and reused while its stamp matches.
 * Each figure is the median of RUNS (default 5) warm runs. The match counts
 * of the three tools are printed too: they must agree. Prints
 *   B13 literal_ms=... rg_ms=... grep_ms=... ratio_rg=... matches=... rg_matches=... grep_matches=...
 *   B13 regex_ms=...   (the same fields)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "file/interface.h"

#define FILES 50000
#define TOP_DIRS 50
#define SUB_DIRS 20
#define TARGET_BYTES (200u << 20)
#define STAMP "ecpd-bench-grep v3 50000 files 200MB seed 42"

static uint64_t rng(uint64_t *state)
{
    /* xorshift64*: the same tree on every machine */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 2685821657736338717ull;
}

static const char *const words[] = {
    "int", "return", "static", "const", "char", "void", "struct", "buffer", "length", "offset", "value",
    "result", "error", "status", "node", "tree", "piece", "line", "column", "index", "count", "size",
    "data", "text", "file", "path", "name", "next", "prev", "left", "right", "parent", "child", "key",
    "hash", "table", "entry", "list", "queue", "stack", "loop", "handle", "request", "reply", "client",
};

static void make_line(buf *b, uint64_t *seed)
{
    size_t nwords = 4 + rng(seed) % 10;
    for (size_t i = 0; i < nwords; i++) {
        if (i)
            buf_push(b, ' ');
        uint64_t r = rng(seed);
        if (r % 1000 == 0) {
            buf_append_str(b, "ecpd_needle_marker");
        } else if (r % 997 == 1) {
            /* what the regex looks for: fn_<letters>_<3 digits>( */
            const char *w = words[rng(seed) % (sizeof words / sizeof *words)];
            unsigned n = (unsigned)(rng(seed) % 1000);
            buf_appendf(b, "fn_%s_%03u(", w, n);
        } else {
            buf_append_str(b, words[r % (sizeof words / sizeof *words)]);
        }
    }
    buf_push(b, '\n');
}

static int make_tree(const char *root)
{
    char stamp_path[4096];
    snprintf(stamp_path, sizeof stamp_path, "%s/.stamp", root);
    FILE *f = fopen(stamp_path, "r");
    if (f) {
        char line[256] = "";
        bool same = fgets(line, sizeof line, f) && !strncmp(line, STAMP, strlen(STAMP));
        fclose(f);
        if (same)
            return 0;
    }
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        return -1;
    fprintf(stderr, "bench_grep: generating %d files under %s ...\n", FILES, root);
    mkdir(root, 0755);
    buf b = BUF_INIT;
    char path[4096];
    uint64_t state = 42, *seed = &state;
    size_t per_file = TARGET_BYTES / FILES;
    int n = 0;
    for (int t = 0; t < TOP_DIRS; t++) {
        snprintf(path, sizeof path, "%s/mod%02d", root, t);
        mkdir(path, 0755);
        for (int s = 0; s < SUB_DIRS; s++) {
            snprintf(path, sizeof path, "%s/mod%02d/part%02d", root, t, s);
            mkdir(path, 0755);
            for (int k = 0; k < FILES / TOP_DIRS / SUB_DIRS; k++, n++) {
                buf_clear(&b);
                /* sizes vary from a quarter to 1.75 times the mean */
                size_t want = per_file / 4 + rng(seed) % (per_file * 3 / 2);
                while (b.len < want)
                    make_line(&b, seed);
                snprintf(path, sizeof path, "%s/mod%02d/part%02d/file%05d.c", root, t, s, n);
                int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                if (fd < 0 || write(fd, b.data, b.len) != (ssize_t)b.len) {
                    perror(path);
                    return -1;
                }
                close(fd);
            }
        }
    }
    buf_free(&b);
    f = fopen(stamp_path, "w");
    fprintf(f, "%s\n", STAMP);
    fclose(f);
    return 0;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

typedef struct run {
    bool done;
    int status;
    size_t count;
} run;

static void on_grep(void *ctx, int status, const ecp_error *err, const file_grep_result *res)
{
    run *r = ctx;
    r->done = true;
    r->status = status;
    if (status)
        fprintf(stderr, "bench_grep: %s\n", err->message);
    else
        r->count = res->count;
}

static double ours(file_service *svc, uv_loop_t *loop, const char *root, const char *pattern, bool regex,
                   size_t *count)
{
    file_grep_options o = {0};
    o.pattern = pattern;
    o.regex = regex;
    o.case_sensitive = true;
    o.base = root;
    o.exclude = (const char *const[]){".stamp"};
    o.exclude_count = 1;
    run r = {0};
    double t0 = now_ms();
    ecp_error err;
    ecp_job *walk;
    if (file_grep_prepare(svc, &o, on_grep, &r, &walk, &err) != 0) {
        fprintf(stderr, "bench_grep: %s\n", err.message);
        exit(1);
    }
    file_walk_start(walk);
    while (!r.done)
        uv_run(loop, UV_RUN_ONCE);
    double t = now_ms() - t0;
    *count = r.count;
    return t;
}

static double shell(const char *cmd, size_t *count)
{
    double t0 = now_ms();
    FILE *p = popen(cmd, "r");
    unsigned long n = 0;
    if (!p || fscanf(p, "%lu", &n) != 1) {
        fprintf(stderr, "bench_grep: '%s' failed\n", cmd);
        if (p)
            pclose(p);
        return -1;
    }
    pclose(p);
    *count = n;
    return now_ms() - t0;
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

static void workload(file_service *svc, uv_loop_t *loop, const char *root, int runs, const char *label,
                     const char *pattern, bool regex)
{
    char rg_cmd[8192], grep_cmd[8192];
    snprintf(rg_cmd, sizeof rg_cmd, "rg -n --no-heading %s '%s' '%s' | wc -l", regex ? "" : "-F", pattern, root);
    snprintf(grep_cmd, sizeof grep_cmd, "grep -rn %s '%s' '%s' | wc -l", regex ? "-E" : "-F", pattern, root);
    double a[64], b[64], c[64];
    size_t na = 0, nb = 0, nc = 0;
    /* warm-up: page cache and the tools' own start-up */
    ours(svc, loop, root, pattern, regex, &na);
    shell(rg_cmd, &nb);
    shell(grep_cmd, &nc);
    for (int i = 0; i < runs; i++) {
        a[i] = ours(svc, loop, root, pattern, regex, &na);
        b[i] = shell(rg_cmd, &nb);
        c[i] = shell(grep_cmd, &nc);
    }
    double ma = median(a, runs), mb = median(b, runs), mc = median(c, runs);
    printf("B13 %s_ms=%.1f rg_ms=%.1f grep_ms=%.1f ratio_rg=%.2f matches=%zu rg_matches=%zu grep_matches=%zu\n", label,
           ma, mb, mc, ma / mb, na, nb, nc);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "/tmp/ecpd-bench-grep";
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (runs < 1 || runs > 64)
        runs = 5;
    if (system("command -v rg >/dev/null && command -v grep >/dev/null") != 0) {
        fprintf(stderr, "bench_grep: the comparators are missing: apt-get install -y ripgrep grep\n");
        return 2;
    }
    if (make_tree(root) != 0)
        return 1;
    uv_loop_t loop;
    uv_loop_init(&loop);
    ecp_pool *pool = ecp_pool_new(&loop, NULL);
    file_service *svc = file_service_new(pool, NULL);
    workload(svc, &loop, root, runs, "literal", "ecpd_needle_marker", false);
    workload(svc, &loop, root, runs, "regex", "fn_[a-z]+_[0-9]{3}\\(", true);
    file_service_free(svc);
    ecp_pool_free(pool);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return 0;
}
