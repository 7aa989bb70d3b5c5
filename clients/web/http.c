/* ecp-web's HTTP side: who may ask (the token, the Origin of an upgrade) and
 * which files it answers with (only regular files under --static). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "buf.h"
#include "web.h"

#define COOKIE_NAME "ecp_web_token"

void web_make_token(char out[WEB_TOKEN_CHARS + 1])
{
    unsigned char bytes[WEB_TOKEN_BYTES];
    /* Synchronous (no callback): the kernel's getrandom. Without randomness there is no safe token. */
    int rc = uv_random(NULL, NULL, bytes, sizeof bytes, 0, NULL);
    if (rc != 0) {
        fprintf(stderr, "ecp-web: no random bytes for the token: %s\n", uv_strerror(rc));
        exit(1);
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof bytes; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[WEB_TOKEN_CHARS] = 0;
}

/* Takes as long for every wrong guess, however many of its first characters are right. */
static bool token_equals(const char *token, const char *given, size_t given_len)
{
    unsigned diff = given_len != WEB_TOKEN_CHARS;
    for (size_t i = 0; i < WEB_TOKEN_CHARS; i++)
        diff |= (unsigned char)token[i] ^ (unsigned char)(i < given_len ? given[i] : 0);
    return diff == 0;
}

bool web_request_has_token(const web *w, struct lws *wsi)
{
    char arg[WEB_TOKEN_CHARS + 16];
    const char *v = lws_get_urlarg_by_name(wsi, "token=", arg, (int)sizeof arg);
    if (v && token_equals(w->token, v, strlen(v)))
        return true;
    char cookie[WEB_TOKEN_CHARS + 16];
    size_t len = sizeof cookie;
    if (lws_http_cookie_get(wsi, COOKIE_NAME, cookie, &len) == 0 && token_equals(w->token, cookie, len))
        return true;
    return false;
}

static bool query_has_token(const web *w, struct lws *wsi)
{
    char arg[WEB_TOKEN_CHARS + 16];
    const char *v = lws_get_urlarg_by_name(wsi, "token=", arg, (int)sizeof arg);
    return v && token_equals(w->token, v, strlen(v));
}

/* The answer to a refused or unknown request: a status and nothing else, on a
 * connection that is then closed (nothing more is read from such a client). */
static int refuse(struct lws *wsi, unsigned code)
{
    if (lws_return_http_status(wsi, code, NULL))
        return -1;
    return lws_http_transaction_completed(wsi) ? -1 : 0;
}

static const char *content_type_of(const char *path)
{
    static const struct { const char *ext, *type; } types[] = {
        {".html", "text/html; charset=utf-8"},
        {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},
        {".map", "application/json"},
        {".json", "application/json"},
        {".svg", "image/svg+xml"},
        {".png", "image/png"},
        {".ico", "image/x-icon"},
        {".woff2", "font/woff2"},
        {".txt", "text/plain; charset=utf-8"},
    };
    const char *dot = strrchr(path, '.');
    const char *slash = strrchr(path, '/');
    if (dot && (!slash || dot > slash))
        for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
            if (strcmp(dot, types[i].ext) == 0)
                return types[i].type;
    return "application/octet-stream";
}

/* The Host header, when it is a plain host[:port] that may be written into a header of ours. */
static bool read_host(struct lws *wsi, char *out, size_t size)
{
    if (lws_hdr_copy(wsi, out, (int)size, WSI_TOKEN_HOST) <= 0)
        return false;
    for (const char *p = out; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              strchr(".-:[]", *p)))
            return false;
    return true;
}

/* The file under static_dir that path names, or NULL: no "..", nothing a
 * symbolic link leads out to, only regular files. */
static char *resolve_static(const web *w, const char *path)
{
    if (path[0] != '/' || strstr(path, "..") || strchr(path, '\\'))
        return NULL;
    buf full = BUF_INIT;
    buf_appendf(&full, "%s%s", w->static_dir, strcmp(path, "/") == 0 ? "/index.html" : path);
    char *real = realpath(full.data, NULL);
    buf_free(&full);
    if (!real)
        return NULL;
    size_t n = strlen(w->static_dir);
    struct stat st;
    if (strncmp(real, w->static_dir, n) != 0 || real[n] != '/' || stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        free(real);
        return NULL;
    }
    return real;
}

static bool add_header(struct lws *wsi, const char *name, const char *value, unsigned char **p, unsigned char *end)
{
    return lws_add_http_header_by_name(wsi, (const unsigned char *)name, (const unsigned char *)value,
                                       (int)strlen(value), p, end) == 0;
}

int web_serve_http(web *w, struct lws *wsi, const char *path, size_t path_len)
{
    if (!web_request_has_token(w, wsi))
        return refuse(wsi, HTTP_STATUS_FORBIDDEN);
    /* Only GET: the page reads files, and everything else goes over the WebSocket. */
    if (lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) <= 0)
        return refuse(wsi, HTTP_STATUS_METHOD_NOT_ALLOWED);
    /* A %00 in the path would end it early: the file named would not be the one asked for. */
    char *file = strlen(path) == path_len ? resolve_static(w, path) : NULL;
    if (!file)
        return refuse(wsi, HTTP_STATUS_NOT_FOUND);

    const char *type = content_type_of(file);
    bool page = strcmp(type, "text/html; charset=utf-8") == 0;
    unsigned char headers[2048];
    unsigned char *p = headers, *end = headers + sizeof headers;
    char host[256];
    buf csp = BUF_INIT;
    buf_append_str(&csp, "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                         "img-src 'self' data:; font-src 'self' data:; object-src 'none'; base-uri 'none'; "
                         "form-action 'none'; frame-ancestors 'none'; connect-src 'self'");
    if (read_host(wsi, host, sizeof host))
        buf_appendf(&csp, " %s://%s", w->tls ? "wss" : "ws", host);
    bool ok = add_header(wsi, "content-security-policy:", csp.data, &p, end) &&
              add_header(wsi, "x-content-type-options:", "nosniff", &p, end) &&
              add_header(wsi, "referrer-policy:", "no-referrer", &p, end) &&
              add_header(wsi, "x-frame-options:", "DENY", &p, end) &&
              add_header(wsi, "cache-control:", page ? "no-store" : "no-cache", &p, end);
    buf_free(&csp);
    /* The page's own requests (app.js, the WebSocket) then need no token in their URL. */
    if (ok && page && query_has_token(w, wsi)) {
        buf cookie = BUF_INIT;
        buf_appendf(&cookie, COOKIE_NAME "=%s; HttpOnly; SameSite=Strict; Path=/%s", w->token,
                    w->tls ? "; Secure" : "");
        ok = add_header(wsi, "set-cookie:", cookie.data, &p, end);
        buf_free(&cookie);
    }
    if (!ok) {
        free(file);
        return refuse(wsi, HTTP_STATUS_INTERNAL_SERVER_ERROR);
    }
    int rc = lws_serve_http_file(wsi, file, type, (const char *)headers, (int)(p - headers));
    free(file);
    if (rc < 0 || (rc > 0 && lws_http_transaction_completed(wsi)))
        return -1;
    return 0;
}

/* An upgrade refused: lws completes the transaction itself when the callback returns 1. */
static int refuse_upgrade(struct lws *wsi, unsigned code)
{
    return lws_return_http_status(wsi, code, NULL) ? -1 : 1;
}

static bool origin_is_ours(const web *w, struct lws *wsi)
{
    char origin[300], host[256], own[300];
    int len = lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN);
    return len < (int)sizeof origin && lws_hdr_copy(wsi, origin, (int)sizeof origin, WSI_TOKEN_ORIGIN) > 0 &&
           read_host(wsi, host, sizeof host) &&
           snprintf(own, sizeof own, "%s://%s", w->tls ? "https" : "http", host) < (int)sizeof own &&
           strcmp(origin, own) == 0;
}

int web_confirm_upgrade(web *w, struct lws *wsi)
{
    if (!web_request_has_token(w, wsi))
        return refuse_upgrade(wsi, HTTP_STATUS_FORBIDDEN);
    char uri[64];
    if (lws_hdr_copy(wsi, uri, (int)sizeof uri, WSI_TOKEN_GET_URI) <= 0 || strcmp(uri, "/rpc") != 0)
        return refuse_upgrade(wsi, HTTP_STATUS_NOT_FOUND);
    /* A browser names the page that opens a WebSocket: only our own page may
     * (a client that is not a browser sends no Origin, and holds the token). */
    if (lws_hdr_total_length(wsi, WSI_TOKEN_ORIGIN) > 0 && !origin_is_ours(w, wsi))
        return refuse_upgrade(wsi, HTTP_STATUS_FORBIDDEN);
    return 0;
}
