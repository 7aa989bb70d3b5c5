#include "buf.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"

static void out_of_memory(size_t n)
{
    fprintf(stderr, "ecpd: out of memory allocating %zu bytes\n", n);
    abort();
}

size_t xsize_add(size_t a, size_t b)
{
    if (a > SIZE_MAX - b) {
        fprintf(stderr, "ecpd: size overflow adding %zu and %zu bytes\n", a, b);
        abort();
    }
    return a + b;
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        out_of_memory(n);
    return p;
}

void *xcalloc(size_t count, size_t n)
{
    void *p = calloc(count ? count : 1, n ? n : 1);
    if (!p)
        out_of_memory(n && count > SIZE_MAX / n ? SIZE_MAX : count * n);
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        out_of_memory(n);
    return q;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(xsize_add(n, 1));
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *xstrdup(const char *s) { return xstrndup(s, strlen(s)); }

void free_array(void *const *pointers, size_t count)
{
    for (size_t i = 0; i < count; i++)
        free(pointers[i]);
}

void buf_init(buf *self) { *self = (buf)BUF_INIT; }

void buf_free(buf *self)
{
    free(self->data);
    buf_init(self);
}

void buf_reserve(buf *self, size_t extra)
{
    size_t need = xsize_add(xsize_add(self->len, extra), 1);
    if (need <= self->cap)
        return;
    size_t cap = self->cap ? self->cap : 64;
    while (cap < need) {
        size_t grown = cap < ((size_t)1 << 30) ? cap * 2 : cap + cap / 2;
        cap = grown > cap ? grown : need; /* growth that would wrap takes just what is needed */
    }
    self->data = xrealloc(self->data, cap);
    self->cap = cap;
}


void buf_append_str(buf *self, const char *s) { buf_append(self, s, strlen(s)); }


void buf_vappendf(buf *self, const char *fmt, va_list ap)
{
    va_list copy;
    va_copy(copy, ap);
    char small[256];
    int n = vsnprintf(small, sizeof small, fmt, copy);
    va_end(copy);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        buf_append(self, small, (size_t)n);
        return;
    }
    buf_reserve(self, (size_t)n);
    vsnprintf(self->data + self->len, (size_t)n + 1, fmt, ap);
    self->len += (size_t)n;
}

void buf_appendf(buf *self, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vappendf(self, fmt, ap);
    va_end(ap);
}

void buf_clear(buf *self)
{
    self->len = 0;
    if (self->data)
        self->data[0] = '\0';
}

void buf_consume(buf *self, size_t n)
{
    if (n >= self->len) {
        buf_clear(self);
        return;
    }
    memmove(self->data, self->data + n, self->len - n);
    self->len -= n;
    self->data[self->len] = '\0';
}

char *buf_detach(buf *self)
{
    if (!self->data)
        buf_reserve(self, 0), self->data[0] = '\0';
    char *p = self->data;
    buf_init(self);
    return p;
}

void free_strv(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* ----- file descriptors ----- */

int buf_read_fd(buf *self, int fd, size_t max)
{
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return ecp_status_from_errno(errno);
        if (n == 0)
            return 0;
        if (self->len + (size_t)n > max)
            return ECP_ETOOBIG;
        buf_append(self, chunk, (size_t)n);
    }
}

int buf_write_fd(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, data, len > (1u << 30) ? (1u << 30) : len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        data += w;
        len -= (size_t)w;
    }
    return 0;
}
