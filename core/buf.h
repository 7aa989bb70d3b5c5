/* buf: a growable byte buffer, the one way the project builds strings.
 *
 * Memory policy: running out of memory while growing a buffer is treated as
 * fatal (the process logs and aborts), as in git and Neovim. An editor core that
 * cannot allocate a few bytes for a reply cannot do anything useful, and
 * checking every append would bury the logic. Code that allocates in proportion
 * to user input (loading a file, a huge paste) checks its own allocations with
 * plain malloc and reports ECP_ENOMEM instead.
 *
 * `data` is always NUL-terminated once anything has been appended, so a buf
 * holding text can be passed to C string functions. The owner frees it.
 */
#ifndef ECPD_BUF_H
#define ECPD_BUF_H

#include <stdarg.h>
#include <stddef.h>
#include <string.h>

typedef struct buf {
    char *data;   /* NULL until the first append */
    size_t len;   /* bytes in use, not counting the NUL */
    size_t cap;   /* bytes allocated */
} buf;

#define BUF_INIT {NULL, 0, 0}

void buf_init(buf *self);
void buf_free(buf *self);

/* Makes room for `extra` more bytes (plus the NUL). */
void buf_reserve(buf *self, size_t extra);

/* Appending is on every path that writes JSON: when the room is there (the
 * common case) it is a few instructions inline, and only growth is a call. */
static inline void buf_append(buf *self, const void *data, size_t len)
{
    if (self->cap - self->len <= len)
        buf_reserve(self, len);
    if (len)
        memcpy(self->data + self->len, data, len);
    self->len += len;
    self->data[self->len] = '\0';
}

static inline void buf_push(buf *self, char c)
{
    if (self->cap - self->len <= 1)
        buf_reserve(self, 1);
    self->data[self->len++] = c;
    self->data[self->len] = '\0';
}

void buf_append_str(buf *self, const char *s);
void buf_appendf(buf *self, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_vappendf(buf *self, const char *fmt, va_list ap);

/* Forgets the contents but keeps the allocation. */
void buf_clear(buf *self);

/* Drops the first n bytes (n <= len). */
void buf_consume(buf *self, size_t n);

/* Hands the allocation to the caller (NUL-terminated, never NULL) and leaves
 * the buffer empty. */
char *buf_detach(buf *self);

/* Allocation helpers with the same fatal-on-exhaustion policy. */
void *xmalloc(size_t n);
/* a + b, or the out-of-memory abort when the sum does not fit a size_t: a
 * size that wrapped would allocate too little and be written past. */
size_t xsize_add(size_t a, size_t b);
void *xcalloc(size_t count, size_t n);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Frees each of the pointers given (NULLs are fine): what a struct owns,
 * released in one statement, `free_each(j->path, j->text, j)`. */
#define free_each(...) free_array((void *[]){__VA_ARGS__}, sizeof((void *[]){__VA_ARGS__}) / sizeof(void *))
void free_array(void *const *pointers, size_t count);

/* Frees a NULL-terminated array of strings and the strings (v may be NULL):
 * an argv or an environment built for a child. */
void free_strv(char **v);

/* ----- file descriptors ----- */

/* Appends what fd holds, up to its end, resuming after EINTR. Returns 0 at
 * the end; ECP_ETOOBIG as soon as self would hold more than max bytes (what
 * was read before stays); the status of errno when a read fails. */
int buf_read_fd(buf *self, int fd, size_t max);

/* Writes all len bytes of data to fd, resuming after EINTR and short writes:
 * 0, or -1 with errno set. */
int buf_write_fd(int fd, const char *data, size_t len);

#endif
