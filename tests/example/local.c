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
    char *path;
    wordcount_cb cb;
    void *ctx;
    int status;
    ecp_error err;
    wordcount_result result;
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

static int count_fd(ecp_job *job, int fd, count_job *j)
{
    char chunk[65536];
    bool in_word = false;
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ecp_error_errno(&j->err, errno, j->path);
        if (ecp_job_cancelled(job))
            return ecp_error_set(&j->err, ECP_ECANCELED, "Count cancelled: %s", j->path);
        for (ssize_t i = 0; i < n; i++) {
            bool space = chunk[i] == ' ' || (chunk[i] >= '\t' && chunk[i] <= '\r');
            j->result.lines += chunk[i] == '\n';
            j->result.words += !in_word && !space;
            in_word = !space;
        }
    }
    return 0;
}

static void count_work(ecp_job *job, unsigned item)
{
    count_job *j = ecp_job_data(job);
    int fd = open(j->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        j->status = ecp_error_errno(&j->err, errno, j->path);
    else if (fstat(fd, &st) != 0)
        j->status = ecp_error_errno(&j->err, errno, j->path);
    else if (S_ISDIR(st.st_mode))
        j->status = ecp_error_set(&j->err, ECP_EISDIR, "Is a directory: %s", j->path);
    else if (!S_ISREG(st.st_mode))
        j->status = ecp_error_set(&j->err, ECP_EIO, "Not a regular file: %s", j->path);
    else
        j->status = count_fd(job, fd, j);
    if (fd >= 0)
        close(fd);
}

static void count_done(ecp_job *job)
{
    count_job *j = ecp_job_data(job);
    j->cb(j->ctx, j->status, &j->err, &j->result);
}

static void count_free(void *data)
{
    count_job *j = data;
    free(j->path);
    free(j);
}

static const ecp_job_type count_type = {"wordcount.count", ECP_LANE_LONG, false, count_work, count_done, count_free};

ecp_job *wordcount_count_start(wordcount_service *svc, const wordcount_args *args, wordcount_cb cb, void *ctx)
{
    count_job *j = xcalloc(1, sizeof *j);
    j->path = xstrdup(args->path);
    j->cb = cb;
    j->ctx = ctx;
    ecp_job *job = ecp_job_new(svc->jobs, &count_type, j);
    if (args->serve)
        ecp_job_serve(job, args->serve);
    ecp_job_start(job, 1);
    return job;
}
