#include "uri.h"

#include <string.h>
#include <strings.h>

#include "error.h"

/* RFC 3986 unreserved characters, plus '/' (the path separator) and the
 * sub-delimiters and ':' '@' that a path segment may carry unencoded. '%', '#',
 * '?', space, controls and every non-ASCII byte are encoded. */
static bool keep_in_path(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("-._~/!$&'()*+,;=:@", c) != NULL;
}

void uri_from_path(buf *out, const char *path, size_t len)
{
    static const char hex[] = "0123456789ABCDEF";
    buf_reserve(out, len + 7);
    buf_append_str(out, "file://");
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (keep_in_path(c)) {
            buf_push(out, (char)c);
        } else {
            char esc[3] = {'%', hex[c >> 4], hex[c & 15]};
            buf_append(out, esc, 3);
        }
    }
}

bool uri_scheme(const char *uri, size_t len, const char **scheme, size_t *scheme_len)
{
    /* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
    if (len == 0 || !((uri[0] >= 'a' && uri[0] <= 'z') || (uri[0] >= 'A' && uri[0] <= 'Z')))
        return false;
    for (size_t i = 1; i < len; i++) {
        char c = uri[i];
        if (c == ':') {
            *scheme = uri;
            *scheme_len = i;
            return true;
        }
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '+' || c == '-' ||
              c == '.'))
            return false;
    }
    return false;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

void uri_percent_decode(buf *out, const char *s, size_t len)
{
    buf_reserve(out, len);
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '%' && i + 2 < len) {
            int hi = hex_value(s[i + 1]);
            int lo = hex_value(s[i + 2]);
            if (hi >= 0 && lo >= 0) {
                buf_push(out, (char)(hi << 4 | lo));
                i += 2;
                continue;
            }
        }
        buf_push(out, s[i]);
    }
}

int uri_to_path(const char *uri, size_t len, buf *out, ecp_error *err)
{
    if (memchr(uri, '\0', len))
        return ecp_error_set(err, ECP_EBADURI, "URI contains a NUL byte");
    const char *scheme;
    size_t scheme_len;
    if (!uri_scheme(uri, len, &scheme, &scheme_len)) {
        if (len == 0 || uri[0] != '/')
            return ecp_error_set(err, ECP_EBADURI, "not an absolute path or URI: %.*s", (int)(len > 200 ? 200 : len), uri);
        buf_append(out, uri, len);
        return 0;
    }
    if (!(scheme_len == 4 && strncasecmp(scheme, "file", 4) == 0))
        return ecp_error_set(err, ECP_ENOPROVIDER, "no provider for scheme '%.*s'", (int)scheme_len, scheme);
    const char *p = uri + 5, *end = uri + len, *slash;
    if (end - p < 2 || p[0] != '/' || p[1] != '/') {
        /* file:/abs/path (one slash) is accepted by RFC 8089's minimal form */
        if (!(p < end && p[0] == '/'))
            return ecp_error_set(err, ECP_EBADURI, "malformed file URI: %.*s", (int)(len > 200 ? 200 : len), uri);
        slash = p;
    } else {
        p += 2;
        slash = memchr(p, '/', (size_t)(end - p));
        if (!slash)
            return ecp_error_set(err, ECP_EBADURI, "file URI has no path: %.*s", (int)(len > 200 ? 200 : len), uri);
        size_t host_len = (size_t)(slash - p);
        if (host_len && !(host_len == 9 && strncasecmp(p, "localhost", 9) == 0))
            return ecp_error_set(err, ECP_EBADURI, "file URI names a remote host: %.*s", (int)host_len, p);
    }
    size_t start = out->len;
    uri_percent_decode(out, slash, (size_t)(end - slash));
    if (memchr(out->data + start, '\0', out->len - start)) {
        out->len = start;
        out->data[start] = '\0';
        return ecp_error_set(err, ECP_EBADURI, "URI decodes to a path with a NUL byte");
    }
    return 0;
}

void uri_path_normalize(buf *out, const char *path, size_t len)
{
    size_t start = out->len;
    buf_push(out, '/');
    size_t i = 0;
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 0 || (n == 1 && path[i] == '.')) {
            /* nothing */
        } else if (n == 2 && path[i] == '.' && path[i + 1] == '.') {
            /* drop the last segment, never going above the root */
            size_t k = out->len;
            while (k > start + 1 && out->data[k - 1] != '/')
                k--;
            if (k > start + 1)
                k--; /* the '/' before the dropped segment */
            out->len = k > start + 1 ? k : start + 1;
            out->data[out->len] = '\0';
        } else {
            if (out->len > start + 1)
                buf_push(out, '/');
            buf_append(out, path + i, n);
        }
        i = j;
    }
}

int uri_file_path(const char *uri, size_t len, buf *out, ecp_error *err)
{
    buf raw = BUF_INIT;
    int rc = uri_to_path(uri, len, &raw, err);
    if (rc == 0)
        uri_path_normalize(out, raw.data ? raw.data : "/", raw.len);
    buf_free(&raw);
    return rc;
}

/* ----- paths ----- */

bool uri_path_within(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}
