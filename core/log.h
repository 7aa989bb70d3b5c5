/* log: where the server writes what it wants a person to know.
 *
 * A logger is owned by the server object and handed to the services that log;
 * there is no global logger. Output goes to stderr or to --log FILE, never to
 * stdout (which carries the protocol in stdio mode). A NULL logger discards.
 */
#ifndef ECPD_LOG_H
#define ECPD_LOG_H

#include <stdio.h>

typedef enum ecp_log_level {
    ECP_LOG_ERROR = 0,
    ECP_LOG_WARN,
    ECP_LOG_INFO,
    ECP_LOG_DEBUG,
} ecp_log_level;

typedef struct ecp_logger {
    FILE *out;            /* not owned unless owns_out */
    ecp_log_level level;  /* messages above it are dropped */
    int owns_out;
} ecp_logger;

void ecp_log(ecp_logger *logger, ecp_log_level level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
