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

/* Runs once, on the loop: 0 and the counts (words: runs of bytes that are not
 * ASCII white space; lines: newline bytes, as wc -l counts them), or a
 * status and err, valid during the call only. */
typedef void (*wordcount_cb)(void *ctx, int status, const ecp_error *err, uint64_t words, uint64_t lines);

/* Counts the file at path (absolute; copied) in a job of the service and
 * returns it, started. serve (may be NULL) is the call the job serves: its
 * cancel cancels the job. The caller may cancel it (ecp_job_cancel) until cb
 * has run. */
ecp_job *wordcount_count_start(wordcount_service *svc, const char *path, ecp_call *serve, wordcount_cb cb, void *ctx);

#endif
