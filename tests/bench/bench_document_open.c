/* B3: open a generated 100 MB, ~1.5 M-line file from disk through the
 * document service's C API on a real libuv loop (so the read runs on the
 * thread pool, as in the server), against `wc -l` on the same file spawned in
 * the same run. Both get the same warm-up: the file is read once beforehand,
 * so each measures work on a file in the page cache.
 *
 * Prints one line:
 *   B3 open_ms=<median> wc_ms=<median> ratio=<open/wc> rss_added_mb=<median>
 *      file_mb=<size> mem_ratio=<rss_added/size> runs=<n>
 *
 * Usage: bench_document_open [runs] [path]   (defaults: 5, /tmp/ecpd-b3.txt;
 * the file is generated when missing or of the wrong size). Needs coreutils'
 * wc (Debian: coreutils, always installed). */
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "document/interface.h"

extern char **environ;

#define TARGET_BYTES (100u * 1000u * 1000u)

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double rss_mb(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2) {
        fprintf(stderr, "cannot read /proc/self/statm\n");
        exit(1);
    }
    fclose(f);
    return (double)resident * (double)sysconf(_SC_PAGESIZE) / (1024.0 * 1024.0);
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

/* Source-like lines of varied length, about 67 bytes on average. */
static void generate(const char *path)
{
    static const char *const words[] = {"int", "return", "value", "const", "struct", "document", "(x)", "{",
                                        "}", "->next", "buffer", "size_t", "if", "while", "0;", "=", "piece",
                                        "tree", "line", "offset"};
    FILE *out = fopen(path, "wb");
    if (!out) {
        perror(path);
        exit(1);
    }
    unsigned seed = 42;
    size_t written = 0;
    char line[256];
    while (written < TARGET_BYTES) {
        size_t n = 0;
        seed = seed * 1103515245u + 12345u;
        int indent = (int)((seed >> 16) % 4) * 4;
        memset(line, ' ', (size_t)indent);
        n = (size_t)indent;
        seed = seed * 1103515245u + 12345u;
        size_t target = 30 + (seed >> 16) % 70;
        while (n < target) {
            seed = seed * 1103515245u + 12345u;
            const char *w = words[(seed >> 16) % 20];
            size_t wl = strlen(w);
            memcpy(line + n, w, wl);
            n += wl;
            line[n++] = ' ';
        }
        line[n - 1] = '\n';
        if (written + n > TARGET_BYTES)
            n = TARGET_BYTES - written, line[n - 1] = '\n';
        fwrite(line, 1, n, out);
        written += n;
    }
    fclose(out);
}

static void warm(const char *path)
{
    int fd = open(path, O_RDONLY);
    static char chunk[1 << 20];
    while (read(fd, chunk, sizeof chunk) > 0)
        ;
    close(fd);
}

static double time_wc(const char *path)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    char *argv[] = {"wc", "-l", (char *)path, NULL};
    double t0 = now_ms();
    pid_t pid;
    if (posix_spawnp(&pid, "wc", &fa, NULL, argv, environ) != 0) {
        fprintf(stderr, "cannot run wc\n");
        exit(1);
    }
    int status;
    waitpid(pid, &status, 0);
    double t = now_ms() - t0;
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "wc failed\n");
        exit(1);
    }
    return t;
}

typedef struct result {
    bool done;
    int status;
    char id[64];
} result;

static void opened(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    result *r = ctx;
    r->done = true;
    r->status = status;
    if (status != 0)
        fprintf(stderr, "open failed: %s\n", err->message);
    else
        snprintf(r->id, sizeof r->id, "%s", id);
}

int main(int argc, char **argv)
{
    int runs = argc > 1 ? atoi(argv[1]) : 5;
    const char *path = argc > 2 ? argv[2] : "/tmp/ecpd-b3.txt";
    if (runs < 1 || runs > 50)
        runs = 5;
    struct stat st;
    if (stat(path, &st) != 0 || st.st_size != (off_t)TARGET_BYTES)
        generate(path);
    stat(path, &st);
    char uri[512];
    snprintf(uri, sizeof uri, "file://%s", path);

    uv_loop_t loop;
    uv_loop_init(&loop);
    ecp_pool *pool = ecp_pool_new(&loop, NULL);
    document_service *svc = document_service_new(pool, NULL);
    warm(path);
    time_wc(path);

    double open_ms[50], wc_ms[50], added[50];
    size_t lines = 0;
    for (int i = 0; i < runs; i++) {
        wc_ms[i] = time_wc(path);
        double before = rss_mb();
        result r = {0};
        document_open_options opt = {.uri = uri};
        double t0 = now_ms();
        document_open(svc, &opt, opened, &r);
        while (!r.done)
            uv_run(&loop, UV_RUN_ONCE);
        open_ms[i] = now_ms() - t0;
        added[i] = rss_mb() - before;
        if (r.status != 0)
            return 1;
        document_info info;
        document_get_info(svc, r.id, &info, NULL);
        lines = info.line_count;
        document_close(svc, r.id, NULL);
    }
    document_service_free(svc);
    ecp_pool_free(pool);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);

    double file_mb = (double)st.st_size / (1024.0 * 1024.0);
    double o = median(open_ms, runs), w = median(wc_ms, runs), m = median(added, runs);
    printf("B3 open_ms=%.1f wc_ms=%.1f ratio=%.2f rss_added_mb=%.1f file_mb=%.1f mem_ratio=%.3f lines=%zu runs=%d\n",
           o, w, o / w, m, file_mb, m / file_mb, lines, runs);
    return 0;
}
