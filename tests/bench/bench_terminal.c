/* B10: `cat` of a 200 MB file through the terminal methods, until the screen is
 * current, against the same `cat` on a bare pseudo-terminal read into
 * nothing, in the same run.
 *
 *   bench_terminal [MB] [runs]      (defaults: 200 MB, 3 runs; medians)
 *
 * The file is generated: lines of 0 to 79 printable characters, so that the
 * last line of the file is the row above the cursor at the end.
 *
 * bare:   forkpty(cat FILE) on an 80x24 pseudo-terminal; read until EIO.
 * screen: a real server in this process and one connection that listens to
 *         terminal/exit and terminal/didChangeScreen only; terminal/create
 *         runs a script that execs the same cat; timed from the create
 *         request to the terminal/exit notification, which the service sends
 *         once the last byte is on the screen; then terminal/getBuffer must
 *         show the file's last line.
 * output: the same with a connection that also receives every
 *         terminal/output notification (rendered as JSON, framed and handed
 *         to the transport, which throws it away): what a GUI client costs.
 *
 * Prints one line: B10 bare_mbps=... screen_mbps=... output_mbps=... and
 * their ratios to the bare figure (target: >= 0.5), then the CPU seconds
 * this process spent in each (the bare reader's, the whole server's), which
 * a loaded machine disturbs less than the wall time.
 */
#include <errno.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "buf.h"
#include "json.h"
#include "server.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds this process has used: the reader, or the whole server. */
static double cpu_s(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
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

/* ----- the input ------------------------------------------------------------------------ */

static char last_line[128];

static void make_file(const char *path, size_t bytes)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789 ABCDEFGHIJKLMNOPQRSTUVWXYZ_-+=";
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(1);
    }
    unsigned long long x = 42;
    char line[128];
    size_t written = 0;
    while (written < bytes) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        size_t len = (size_t)(x >> 33) % 80;
        for (size_t i = 0; i < len; i++) {
            x = x * 6364136223846793005ULL + 1442695040888963407ULL;
            line[i] = alphabet[(x >> 33) % (sizeof alphabet - 1)];
        }
        if (len && line[len - 1] == ' ')
            line[len - 1] = '.';
        line[len] = '\n';
        fwrite(line, 1, len + 1, f);
        written += len + 1;
        memcpy(last_line, line, len);
        last_line[len] = '\0';
    }
    fclose(f);
}

/* ----- the bare pseudo-terminal ------------------------------------------------------- */

static double run_bare(const char *file)
{
    struct winsize ws = {.ws_row = 24, .ws_col = 80};
    int master;
    double t0 = now_s();
    pid_t pid = forkpty(&master, NULL, NULL, &ws);
    if (pid == 0) {
        execl("/bin/cat", "cat", file, (char *)NULL);
        _exit(127);
    }
    if (pid < 0) {
        perror("forkpty");
        exit(1);
    }
    static char chunk[65536];
    for (;;) {
        ssize_t n = read(master, chunk, sizeof chunk);
        if (n > 0)
            continue;
        if (n < 0 && errno == EINTR)
            continue;
        break; /* EIO: cat is gone and everything was read */
    }
    double t = now_s() - t0;
    close(master);
    waitpid(pid, NULL, 0);
    return t;
}

/* ----- through the server ----------------------------------------------------------------- */

typedef struct peer {
    buf log;          /* every message but terminal/output, one per line */
    size_t output_bytes;
    size_t output_messages;
} peer;

static void io_write(void *ctx, const char *data, size_t len)
{
    peer *p = ctx;
    static const char output_prefix[] = "{\"jsonrpc\":\"2.0\",\"method\":\"terminal/output\"";
    if (len > sizeof output_prefix && !memcmp(data, output_prefix, sizeof output_prefix - 1)) {
        p->output_bytes += len;
        p->output_messages++;
        return;
    }
    buf_append(&p->log, data, len);
    if (!len || data[len - 1] != '\n')
        buf_push(&p->log, '\n');
}
static size_t io_queued(void *ctx) { return 0; }
static void io_set_reading(void *ctx, bool on) {}
static void io_close(void *ctx) {}
static const connection_io bench_io = {io_write, io_queued, io_set_reading, io_close, NULL, NULL};

static void tick(uv_timer_t *t) { (void)t; }

typedef struct bench {
    uv_loop_t loop;
    uv_timer_t tick;
    server *srv;
    connection *conn;
    peer peer;
    int next_id;
} bench;

static void turn(bench *b)
{
    uv_timer_start(&b->tick, tick, 5, 5);
    uv_run(&b->loop, UV_RUN_ONCE);
    uv_timer_stop(&b->tick);
}

/* Sends a request; returns its id. */
static int send_request(bench *b, const char *method, const char *params)
{
    char msg[1024];
    int id = ++b->next_id;
    snprintf(msg, sizeof msg, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\",\"params\":%s}\n", id, method, params);
    connection_receive(b->conn, msg, strlen(msg));
    return id;
}

/* Runs the loop until the log holds needle; returns the line that holds it (caller frees). */
static char *wait_for(bench *b, const char *needle, double timeout_s)
{
    double end = now_s() + timeout_s;
    while (now_s() < end) {
        char *at = b->peer.log.data ? strstr(b->peer.log.data, needle) : NULL;
        if (at) {
            char *start = at;
            while (start > b->peer.log.data && start[-1] != '\n')
                start--;
            char *stop = strchr(at, '\n');
            return strndup(start, stop ? (size_t)(stop - start) : strlen(start));
        }
        turn(b);
    }
    fprintf(stderr, "bench_terminal: timed out waiting for %s\n", needle);
    exit(1);
}

static char *request(bench *b, const char *method, const char *params)
{
    int id = send_request(b, method, params);
    char needle[32];
    snprintf(needle, sizeof needle, "\"id\":%d,", id);
    return wait_for(b, needle, 600);
}

/* The text of row `row` of a getBuffer result, trailing blanks dropped. */
static char *row_text(const char *json, long row)
{
    json_doc doc;
    if (json_doc_parse(&doc, json, strlen(json), NULL) < 0)
        return strdup("");
    json_ref cells = json_get(&doc, json_get(&doc, json_get(&doc, json_root(&doc), "result"), "buffer"), "cells");
    json_ref r = json_array_at(&doc, cells, (size_t)row);
    buf out = BUF_INIT;
    buf_append(&out, "", 0);
    arena a = ARENA_INIT;
    for (json_ref c = json_first(&doc, r); c != JSON_NO_REF; c = json_next(&doc, c)) {
        const char *ch;
        size_t len;
        if (json_string(&doc, json_get(&doc, c, "char"), &a, &ch, &len))
            buf_append(&out, ch, len);
    }
    arena_free(&a);
    json_doc_free(&doc);
    while (out.len && out.data[out.len - 1] == ' ')
        out.data[--out.len] = '\0';
    return buf_detach(&out);
}

static double run_server(const char *script, bool with_output, size_t *output_bytes)
{
    bench b = {0};
    uv_loop_init(&b.loop);
    uv_timer_init(&b.loop, &b.tick);
    char data_dir[] = "/tmp/ecpd-b10-data-XXXXXX";
    if (!mkdtemp(data_dir))
        exit(1);
    server_options options = {.data_dir = data_dir, .log_level = ECP_LOG_ERROR};
    ecp_error err;
    b.srv = server_new(&b.loop, &options, &err);
    if (!b.srv) {
        fprintf(stderr, "bench_terminal: %s\n", err.message);
        exit(1);
    }
    b.conn = server_connection_open(b.srv, &bench_io, &b.peer, "bench");
    free(request(&b, "notifications/subscribe",
                 with_output ? "{\"events\":[\"terminal/*\"]}"
                             : "{\"events\":[\"terminal/exit\",\"terminal/didChangeScreen\"]}"));
    char params[512];
    snprintf(params, sizeof params, "{\"shell\":\"%s\",\"cols\":80,\"rows\":24,\"scrollback\":1000}", script);
    double t0 = now_s();
    char *created = request(&b, "terminal/create", params);
    char *exited = wait_for(&b, "\"method\":\"terminal/exit\"", 600);
    double t = now_s() - t0;
    free(exited);
    const char *id_at = strstr(created, "\"terminalId\":\"");
    if (!id_at) {
        fprintf(stderr, "bench_terminal: terminal/create failed: %s\n", created);
        exit(1);
    }
    char id[64];
    sscanf(id_at + 14, "%63[^\"]", id);
    free(created);
    snprintf(params, sizeof params, "{\"terminalId\":\"%s\"}", id);
    char *screen = request(&b, "terminal/getBuffer", params);
    const char *y_at = strstr(screen, "\"y\":");
    long cursor_y = y_at ? atol(y_at + 4) : 0;
    char *last = row_text(screen, cursor_y - 1);
    if (strcmp(last, last_line) != 0) {
        fprintf(stderr, "bench_terminal: the screen is not current: row %ld is \"%s\", the file ends with \"%s\"\n",
                cursor_y - 1, last, last_line);
        exit(1);
    }
    free(last);
    free(screen);
    free(request(&b, "terminal/close", params));
    *output_bytes = b.peer.output_bytes;
    connection_close(b.conn);
    server_free(b.srv);
    uv_close((uv_handle_t *)&b.tick, NULL);
    for (int i = 0; i < 1000 && uv_run(&b.loop, UV_RUN_NOWAIT); i++)
        usleep(1000);
    uv_loop_close(&b.loop);
    buf_free(&b.peer.log);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", data_dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_terminal: could not remove %s\n", data_dir);
    return t;
}

int main(int argc, char **argv)
{
    size_t mb = argc > 1 ? (size_t)atol(argv[1]) : 200;
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    if (runs < 1 || runs > 20)
        runs = 3;
    char dir[] = "/tmp/ecpd-b10-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    char file[256], script[256];
    snprintf(file, sizeof file, "%s/data.txt", dir);
    snprintf(script, sizeof script, "%s/cat.sh", dir);
    make_file(file, mb << 20);
    FILE *f = fopen(script, "w");
    fprintf(f, "#!/bin/sh\nexec /bin/cat '%s'\n", file);
    fclose(f);
    chmod(script, 0755);
    struct stat st;
    stat(file, &st);
    double size_mb = (double)st.st_size / 1e6;

    double bare[20], screen[20], output[20], bare_cpu[20], screen_cpu[20], output_cpu[20];
    size_t output_bytes = 0;
    /* warm the page cache and the binaries */
    run_bare(file);
    for (int i = 0; i < runs; i++) {
        double c0 = cpu_s();
        bare[i] = run_bare(file);
        double c1 = cpu_s();
        screen[i] = run_server(script, false, &output_bytes);
        double c2 = cpu_s();
        output[i] = run_server(script, true, &output_bytes);
        double c3 = cpu_s();
        bare_cpu[i] = c1 - c0;
        screen_cpu[i] = c2 - c1;
        output_cpu[i] = c3 - c2;
        fprintf(stderr,
                "B10 run %d: bare %.2f s (cpu %.2f), screen %.2f s (cpu %.2f), output %.2f s (cpu %.2f; %zu MB of "
                "terminal/output JSON)\n",
                i + 1, bare[i], bare_cpu[i], screen[i], screen_cpu[i], output[i], output_cpu[i], output_bytes >> 20);
    }
    double b = size_mb / median(bare, runs), s = size_mb / median(screen, runs), o = size_mb / median(output, runs);
    printf("B10 file_mb=%.0f bare_mbps=%.1f screen_mbps=%.1f output_mbps=%.1f screen_ratio=%.2f output_ratio=%.2f "
           "bare_cpu_s=%.2f screen_cpu_s=%.2f output_cpu_s=%.2f\n",
           size_mb, b, s, o, s / b, o / b, median(bare_cpu, runs), median(screen_cpu, runs),
           median(output_cpu, runs));
    unlink(file);
    unlink(script);
    rmdir(dir);
    return 0;
}
