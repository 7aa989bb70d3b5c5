/* B9: git/status on a generated repository of 50,000 files with 500 of them
 * modified, through a real server (the in-process client: request, job,
 * libgit2, JSON answer), against `git status --porcelain` on the same
 * repository in the same run, once the server watches the repository (as
 * an editor's does); the repeated status with nothing changed in between,
 * which the service answers from its cache; and the very first status, on a
 * repository the server has not seen yet.
 *
 *   bench_git_status [DIR] [RUNS]
 *
 * DIR (default /tmp/ecpd-bench-git) holds the repository; it is made once
 * with the git command (deterministically) and reused while its stamp
 * matches. Each figure is the median of RUNS (default 7) warm runs. Prints
 *   B9 status_ms=... git_ms=... ratio=... cached_us=... first_ms=... entries=... git_entries=...
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_client.h"

#define FILES 50000
#define MODIFIED 500
#define TOP_DIRS 50
#define SUB_DIRS 20
#define STAMP "ecpd-bench-git v1 50000 files 500 modified"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static int run(const char *fmt, const char *dir)
{
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "cd '%s' && %s", dir, fmt);
    return system(cmd);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

static void file_path(char *out, size_t n, const char *root, int i)
{
    int per_top = FILES / TOP_DIRS, per_sub = per_top / SUB_DIRS;
    snprintf(out, n, "%s/d%02d/s%02d/f%05d.txt", root, i / per_top, (i % per_top) / per_sub, i);
}

static int make_repo(const char *root)
{
    char stamp[4096];
    snprintf(stamp, sizeof stamp, "%s/.git/ecpd-bench-stamp", root);
    FILE *f = fopen(stamp, "r");
    if (f) {
        char line[256] = "";
        bool same = fgets(line, sizeof line, f) && !strncmp(line, STAMP, strlen(STAMP));
        fclose(f);
        if (same)
            return 0;
    }
    fprintf(stderr, "bench_git_status: generating %d files in %s\n", FILES, root);
    char cmd[8192];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", root, root);
    if (system(cmd))
        return -1;
    if (run("git init -q -b main . && git config user.name Bench && git config user.email bench@example.com", root))
        return -1;
    char path[4096];
    for (int i = 0; i < FILES; i++) {
        file_path(path, sizeof path, root, i);
        char *slash = strrchr(path, '/');
        *slash = '\0';
        mkdir(path, 0755);
        char *dirs = strrchr(path, '/');
        if (dirs) {
            *dirs = '\0';
            mkdir(path, 0755);
            *dirs = '/';
            mkdir(path, 0755);
        }
        *slash = '/';
        f = fopen(path, "w");
        if (!f)
            return -1;
        fprintf(f, "file %d\nline two\nline three\n", i);
        fclose(f);
    }
    if (run("git add -A && git commit -q -m 'fifty thousand files'", root))
        return -1;
    /* every hundredth file changed: 500 modified, in the work tree only */
    for (int i = 0; i < FILES; i += FILES / MODIFIED) {
        file_path(path, sizeof path, root, i);
        f = fopen(path, "a");
        fprintf(f, "modified\n");
        fclose(f);
    }
    f = fopen(stamp, "w");
    fprintf(f, "%s\n", STAMP);
    fclose(f);
    return 0;
}

static long count_lines(const char *cmd, const char *dir)
{
    char full[4096];
    snprintf(full, sizeof full, "cd '%s' && %s", dir, cmd);
    FILE *p = popen(full, "r");
    long n = 0;
    int c;
    while ((c = fgetc(p)) != EOF)
        n += c == '\n';
    pclose(p);
    return n;
}

int main(int argc, char **argv)
{
    const char *root = argc > 1 ? argv[1] : "/tmp/ecpd-bench-git";
    int runs = argc > 2 ? atoi(argv[2]) : 7;
    if (runs < 1 || runs > 100)
        runs = 7;
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    if (make_repo(root)) {
        fprintf(stderr, "bench_git_status: cannot make the repository in %s\n", root);
        return 1;
    }

    /* the comparator, warm: the first run also refreshes the index */
    double git_ms[100], ours_ms[100], cached_us[100];
    long git_entries = count_lines("git status --porcelain", root);
    for (int i = 0; i < runs; i++) {
        double t = now_ms();
        if (run("git status --porcelain >/dev/null", root))
            return 1;
        git_ms[i] = now_ms() - t;
    }

    test_server *srv = test_server_new(NULL);
    test_client *cl = test_client_connect(srv);
    char params[4200], forced[4300];
    snprintf(params, sizeof params, "{\"uri\":\"%s\"}", root);
    snprintf(forced, sizeof forced, "{\"uri\":\"%s\",\"forceRefresh\":true}", root);
    char *out = NULL;
    /* the first status makes the repository known (and watched): timed on
     * its own, as the status of a repository the server has not seen */
    double first = now_ms();
    if (test_client_request(cl, "git/status", forced, &out) != 0) {
        fprintf(stderr, "bench_git_status: git/status failed: %s\n", out ? out : "");
        return 1;
    }
    long entries = test_json_length(out, "unstaged") + test_json_length(out, "staged") +
                   test_json_length(out, "untracked");
    double first_ms = now_ms() - first;
    free(out);
    /* then as in an editor that has the repository open: its watches set up,
     * every status computed again (forceRefresh) */
    test_server_run_for(srv, 300);
    for (int i = 0; i < runs; i++) {
        double t = now_ms();
        test_client_request(cl, "git/status", forced, &out);
        ours_ms[i] = now_ms() - t;
        free(out);
    }
    /* let the watches settle, keep one status, then repeat with nothing changed */
    test_server_run_for(srv, 300);
    test_client_request(cl, "git/status", forced, &out);
    free(out);
    for (int i = 0; i < runs; i++) {
        double t = now_ms();
        test_client_request(cl, "git/status", params, &out);
        cached_us[i] = (now_ms() - t) * 1000.0;
        free(out);
    }
    test_server_free(srv);

    double g = median(git_ms, runs), o = median(ours_ms, runs);
    printf("B9 status_ms=%.1f git_ms=%.1f ratio=%.2f cached_us=%.0f first_ms=%.1f entries=%ld git_entries=%ld\n", o,
           g, o / g, median(cached_us, runs), first_ms, entries, git_entries);
    return 0;
}
