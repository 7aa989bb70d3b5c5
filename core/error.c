#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *ecp_status_text(int status)
{
    switch (status) {
#define ECP_STATUS_TEXT(name, value, text) \
    case value:                            \
        return text;
        ECP_STATUS_CODES(ECP_STATUS_TEXT)
#undef ECP_STATUS_TEXT
    }
    return "unknown error";
}

int ecp_status_from_errno(int errnum)
{
    switch (errnum) {
    case 0: return ECP_OK;
    case ENOMEM: return ECP_ENOMEM;
    case EINVAL: return ECP_EINVAL;
    case ENOENT: return ECP_ENOTFOUND;
    case EEXIST: return ECP_EEXIST;
    case EISDIR: return ECP_EISDIR;
    case ENOTDIR: return ECP_ENOTDIR;
    case ENOTEMPTY: return ECP_ENOTEMPTY;
    case EACCES:
    case EPERM: return ECP_EACCES;
    case EROFS: return ECP_EREADONLY;
    case ELOOP: return ECP_ELOOP;
    case ECANCELED: return ECP_ECANCELED;
    case ENAMETOOLONG:
    case EFBIG: return ECP_ETOOBIG;
    case ENOTSUP: return ECP_ENOTSUP;
    default: return ECP_EIO;
    }
}

int ecp_error_set(ecp_error *err, int status, const char *fmt, ...)
{
    if (err) {
        err->status = status;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return status;
}

int ecp_error_errno(ecp_error *err, int errnum, const char *what)
{
    return ecp_error_set(err, ecp_status_from_errno(errnum), "%s: %s", what, strerror(errnum));
}

int ecp_wire_code(const ecp_wire_map *map, size_t count, int status, int fallback)
{
    for (size_t i = 0; i < count; i++)
        if (map[i].status == status)
            return map[i].wire;
    return fallback;
}
