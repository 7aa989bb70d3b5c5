/* A trace of the loop's turns, for finding what holds answers up (see
 * loop_trace.c). Only ecpd's main starts one, when ECPD_LOOP_TRACE names a
 * file. */
#ifndef ECPD_SERVER_LOOP_TRACE_H
#define ECPD_SERVER_LOOP_TRACE_H

#include <uv.h>

typedef struct loop_trace loop_trace;

/* Starts tracing loop into the file at path; NULL (nothing traced) when
 * path is NULL or empty, or the file cannot be made (said on stderr). */
loop_trace *loop_trace_start(uv_loop_t *loop, const char *path);
/* Writes the file and closes the trace's handles (freed once libuv has
 * closed them: the loop must run again before it is closed). NULL: nothing. */
void loop_trace_stop(loop_trace *trace);

#endif
