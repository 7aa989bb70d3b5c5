#include "log.h"

#include <stdarg.h>
#include <time.h>

static const char *level_name(ecp_log_level level)
{
    switch (level) {
    case ECP_LOG_ERROR: return "error";
    case ECP_LOG_WARN: return "warn";
    case ECP_LOG_INFO: return "info";
    case ECP_LOG_DEBUG: return "debug";
    }
    return "?";
}

void ecp_log(ecp_logger *logger, ecp_log_level level, const char *fmt, ...)
{
    if (!logger || !logger->out || level > logger->level)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    fprintf(logger->out, "%02d:%02d:%02d.%03ld ecpd %s: ", tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000, level_name(level));
    va_list ap;
    va_start(ap, fmt);
    vfprintf(logger->out, fmt, ap);
    va_end(ap);
    fputc('\n', logger->out);
    fflush(logger->out);
}
