/* local: the wordcount service's jobs. */
#include "interface.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buf.h"

struct wordcount_service {
    ecp_job_set *jobs;
};

typedef struct count_job {
    char *path; /* owned */
    wordcount_cb cb;
    void *ctx;
    uint64_t words, lines; /* written by count_fd, read by count_done */
} count_job;

wordcount_service *wordcount_service_new(ecp_pool *pool)
{
    wordcount_service *svc = xcalloc(1, sizeof *svc);
    svc->jobs = ecp_job_set_new(pool);
    return svc;
}

void wordcount_service_free(wordcount_service *svc)
{
    ecp_job_set_close(svc->jobs);
    free(svc);
}

static int count_fd(ecp_job *job, int fd, count_job *j, ecp_error *err)
{
    char chunk[65536];
    bool in_word = false;
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ecp_error_errno(err, errno, j->path);
        if (ecp_job_cancelled(job))
            return ecp_error_set(err, ECP_ECANCELED, "Count cancelled: %s", j->path);
        for (ssize_t i = 0; i < n; i++) {
            bool space = chunk[i] == ' ' || (chunk[i] >= '\t' && chunk[i] <= '\r');
            j->lines += chunk[i] == '\n';
            j->words += !in_word && !space;
            in_word = !space;
        }
    }
    return 0;
}

static int count_work(ecp_job *job, void *payload, ecp_error *err)
{
    count_job *j = payload;
    int fd = open(j->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int status;
    if (fd < 0)
        return ecp_error_errno(err, errno, j->path);
    if (fstat(fd, &st) != 0)
        status = ecp_error_errno(err, errno, j->path);
    else if (S_ISDIR(st.st_mode))
        status = ecp_error_set(err, ECP_EISDIR, "Is a directory: %s", j->path);
    else if (!S_ISREG(st.st_mode))
        status = ecp_error_set(err, ECP_EIO, "Not a regular file: %s", j->path);
    else
        status = count_fd(job, fd, j, err);
    close(fd);
    return status;
}

static void count_done(void *payload, int status, const ecp_error *err)
{
    count_job *j = payload;
    j->cb(j->ctx, status, err, j->words, j->lines);
}

static void count_release(void *payload) { free(((count_job *)payload)->path); }

static const ecp_job_kind count_kind =
    ECP_JOB_KIND("wordcount.count", ECP_LANE_LONG, false, count_work, count_done, count_release);

ecp_job *wordcount_count_start(wordcount_service *svc, const char *path, ecp_call *serve, wordcount_cb cb, void *ctx)
{
    count_job j = {.path = xstrdup(path), .cb = cb, .ctx = ctx};
    return ecp_job_run(svc->jobs, &count_kind, &j, sizeof j, serve);
}
