/* wordcount: the words and lines of a file, counted off the loop.
 *
 * The smallest complete service, kept as the example services/README.md
 * walks through. It promises that a count never blocks the loop (the file
 * is read by a job of the service), that it can be cancelled at any time,
 * and that it reads only regular files (a FIFO or a device could block or
 * never end).
 *
 * Errors: 0 or a negative ECP_STATUS code with an ecp_error naming the path
 * and the reason: ECP_ENOTFOUND, ECP_EACCES, ECP_EISDIR, ECP_EIO (not a
 * regular file, or a read failed), ECP_ECANCELED.
 */
#ifndef ECPD_WORDCOUNT_INTERFACE_H
#define ECPD_WORDCOUNT_INTERFACE_H

#include <stdint.h>

#include "error.h"
#include "job.h"

typedef struct wordcount_service wordcount_service;

/* Jobs run on pool (borrowed; it must outlive the service). NULL only when
 * out of memory. */
wordcount_service *wordcount_service_new(ecp_pool *pool);

/* Cancels every count, waits for those on a thread, answers the calls they
 * serve; no callback runs afterwards. */
void wordcount_service_free(wordcount_service *svc);

typedef struct wordcount_args {
    const char *path;  /* absolute; copied */
    ecp_call *serve;   /* may be NULL: the call the job serves (its cancel cancels the job). Borrowed. */
} wordcount_args;

typedef struct wordcount_result {
    uint64_t words; /* runs of bytes that are not ASCII white space */
    uint64_t lines; /* newline bytes, as wc -l counts them */
} wordcount_result;

/* Runs once, on the loop: 0 and result, or a status and err. Both are valid
 * during the call only. */
typedef void (*wordcount_cb)(void *ctx, int status, const ecp_error *err, const wordcount_result *result);

/* Counts the file at args->path in a job of the service and returns it,
 * started. The caller may cancel it (ecp_job_cancel) until cb has run. */
ecp_job *wordcount_count_start(wordcount_service *svc, const wordcount_args *args, wordcount_cb cb, void *ctx);

#endif
