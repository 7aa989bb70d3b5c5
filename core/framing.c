#include "framing.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Messages at least this large are handed out in the input buffer itself. */
#define FRAMING_TAKE_BYTES ((size_t)1 << 20)

void framing_decoder_init(framing_decoder *self, size_t max_message)
{
    memset(self, 0, sizeof *self);
    self->max_message = max_message;
}

void framing_decoder_free(framing_decoder *self) { buf_free(&self->in); }

static size_t pending(const framing_decoder *self) { return self->in.len - self->start; }

static void drop(framing_decoder *self, size_t n)
{
    self->start += n;
    self->scanned = 0;
    if (self->start == self->in.len) {
        self->start = 0;
        buf_clear(&self->in);
    }
}

void framing_decoder_feed(framing_decoder *self, const char *data, size_t len)
{
    if (self->broken)
        return;
    if (self->skip) {
        size_t n = len < self->skip ? len : self->skip;
        self->skip -= n;
        data += n, len -= n;
    }
    if (self->skip_line && len) {
        const char *nl = memchr(data, '\n', len);
        if (!nl)
            return;
        self->skip_line = false;
        len -= (size_t)(nl + 1 - data);
        data = nl + 1;
    }
    if (!len)
        return;
    /* Compact lazily: moving the tail on every message would make a long
     * pipelined burst quadratic. */
    if (self->start > 0 && self->start >= self->in.len / 2) {
        buf_consume(&self->in, self->start);
        self->start = 0;
    }
    buf_append(&self->in, data, len);
}

static char *copy_message(const char *p, size_t n)
{
    char *m = malloc(n + 1);
    if (!m)
        return NULL;
    memcpy(m, p, n);
    m[n] = '\0';
    return m;
}

/* Hands out the message of body bytes at the start of what is pending, then
 * drops consumed bytes (the body and its delimiter). A big message takes the
 * input buffer itself, trimmed to its size, rather than a copy: the peak of
 * receiving it is then one message, not two. */
static char *take_message(framing_decoder *self, size_t body, size_t consumed)
{
    size_t tail_from = self->start + consumed, tail_len = self->in.len - tail_from;
    if (body < FRAMING_TAKE_BYTES || tail_len > body / 2) {
        char *m = copy_message(self->in.data + self->start, body);
        drop(self, consumed);
        return m;
    }
    buf tail = BUF_INIT;
    if (tail_len)
        buf_append(&tail, self->in.data + tail_from, tail_len);
    char *m = self->in.data;
    if (self->start)
        memmove(m, m + self->start, body);
    m[body] = '\0';
    char *trimmed = realloc(m, body + 1);
    self->in = tail;
    self->start = 0;
    self->scanned = 0;
    return trimmed ? trimmed : m;
}

static frame_status next_line(framing_decoder *self, char **msg, size_t *len)
{
    for (;;) {
        const char *base = self->in.data + self->start;
        size_t avail = pending(self);
        /* Whitespace before a message (blank lines included) is dropped as it
         * arrives, so that how the stream is cut never changes what counts
         * against the limit. */
        size_t lead = 0;
        while (lead < avail && (base[lead] == ' ' || base[lead] == '\t' || base[lead] == '\r' || base[lead] == '\n'))
            lead++;
        if (lead) {
            drop(self, lead);
            continue;
        }
        const char *nl = avail > self->scanned ? memchr(base + self->scanned, '\n', avail - self->scanned) : NULL;
        if (!nl) {
            self->scanned = avail;
            /* a final '\r' may be the first half of the line's CRLF */
            if (avail - (avail && base[avail - 1] == '\r') > self->max_message) {
                /* too long and still no end: report it and drop the rest of the line */
                *len = avail;
                drop(self, avail);
                self->skip_line = true;
                return FRAME_OVERSIZED;
            }
            return FRAME_NEED_MORE;
        }
        size_t n = (size_t)(nl - base);
        size_t body = n;
        if (body && base[body - 1] == '\r')
            body--;
        if (body > self->max_message) {
            *len = body;
            drop(self, n + 1);
            return FRAME_OVERSIZED;
        }
        *msg = take_message(self, body, n + 1);
        *len = body;
        return *msg ? FRAME_MESSAGE : FRAME_OVERSIZED;
    }
}

/* Parses the header block [p, p+n); returns false if it is not one. */
static bool parse_header(const char *p, size_t n, size_t *body_len)
{
    bool have_length = false;
    while (n > 0) {
        const char *eol = memchr(p, '\n', n);
        size_t line = eol ? (size_t)(eol - p) : n;
        size_t text = line && p[line - 1] == '\r' ? line - 1 : line;
        if (text > 0) {
            const char *colon = memchr(p, ':', text);
            if (!colon)
                return false;
            size_t name_len = (size_t)(colon - p);
            const char *v = colon + 1, *end = p + text;
            while (v < end && (*v == ' ' || *v == '\t'))
                v++;
            if (name_len == 14 && strncasecmp(p, "Content-Length", 14) == 0) {
                if (v == end || have_length)
                    return false;
                size_t value = 0;
                for (; v < end && *v != ' ' && *v != '\t'; v++) {
                    if (!isdigit((unsigned char)*v) || value > (SIZE_MAX - 9) / 10)
                        return false;
                    value = value * 10 + (size_t)(*v - '0');
                }
                while (v < end && (*v == ' ' || *v == '\t'))
                    v++;
                if (v != end)
                    return false;
                *body_len = value;
                have_length = true;
            } else {
                /* other headers (Content-Type) are allowed and ignored, but must be well formed */
                for (size_t i = 0; i < name_len; i++)
                    if (!isgraph((unsigned char)p[i]))
                        return false;
                if (name_len == 0)
                    return false;
            }
        }
        if (!eol)
            break;
        n -= line + 1;
        p += line + 1;
    }
    return have_length;
}

static frame_status next_content_length(framing_decoder *self, char **msg, size_t *len)
{
    for (;;) {
        const char *base = self->in.data + self->start;
        size_t avail = pending(self);
        if (!self->have_header) {
            /* whitespace between messages is tolerated */
            size_t lead = 0;
            while (lead < avail && isspace((unsigned char)base[lead]))
                lead++;
            if (lead) {
                drop(self, lead);
                continue;
            }
            if (avail == 0)
                return FRAME_NEED_MORE;
            /* The blank line that ends a header of at most FRAMING_MAX_HEADER
             * bytes lies within the first FRAMING_MAX_HEADER + 4 bytes: look
             * no further (a pipelined burst would make a wider search
             * quadratic), and refuse the header once that many bytes are in. */
            size_t window = avail < FRAMING_MAX_HEADER + 4 ? avail : FRAMING_MAX_HEADER + 4;
            size_t from = self->scanned > 3 ? self->scanned - 3 : 0;
            const char *end = window >= from + 4 ? memmem(base + from, window - from, "\r\n\r\n", 4) : NULL;
            if (!end) {
                self->scanned = window;
                if (avail >= FRAMING_MAX_HEADER + 4)
                    goto bad;
                return FRAME_NEED_MORE;
            }
            size_t header_len = (size_t)(end - base);
            if (header_len > FRAMING_MAX_HEADER || !parse_header(base, header_len, &self->body_len))
                goto bad;
            drop(self, header_len + 4);
            self->have_header = true;
            if (self->body_len > self->max_message) {
                size_t have = pending(self) < self->body_len ? pending(self) : self->body_len;
                *len = self->body_len;
                self->skip = self->body_len - have;
                drop(self, have);
                self->have_header = false;
                return FRAME_OVERSIZED;
            }
            continue;
        }
        if (avail < self->body_len)
            return FRAME_NEED_MORE;
        *len = self->body_len;
        *msg = take_message(self, self->body_len, self->body_len);
        self->have_header = false;
        return *msg ? FRAME_MESSAGE : FRAME_OVERSIZED;
    }
bad:
    self->broken = true;
    buf_free(&self->in);
    self->start = 0;
    return FRAME_BAD_HEADER;
}

frame_status framing_decoder_next(framing_decoder *self, char **msg, size_t *len)
{
    *msg = NULL;
    *len = 0;
    if (self->broken)
        return FRAME_BAD_HEADER;
    if (!self->in.data)
        return FRAME_NEED_MORE; /* nothing ever fed (and no pointer to offset) */
    if (self->mode == FRAMING_UNKNOWN) {
        size_t i = 0;
        const char *base = self->in.data + self->start;
        while (i < pending(self) && isspace((unsigned char)base[i]))
            i++;
        /* whitespace before the first message is not kept: a peer could
         * otherwise fill memory without ever sending a message */
        drop(self, i);
        if (pending(self) == 0)
            return FRAME_NEED_MORE;
        base = self->in.data + self->start;
        self->mode = base[0] == 'C' || base[0] == 'c' ? FRAMING_CONTENT_LENGTH : FRAMING_NEWLINE;
    }
    return self->mode == FRAMING_CONTENT_LENGTH ? next_content_length(self, msg, len) : next_line(self, msg, len);
}

size_t framing_decoder_buffered(const framing_decoder *self) { return pending(self); }

bool framing_decoder_inside_message(const framing_decoder *self)
{
    return pending(self) > 0 || self->have_header || self->skip > 0 || self->skip_line;
}

void framing_encode(framing_mode mode, buf *out, const char *json, size_t len)
{
    if (mode == FRAMING_CONTENT_LENGTH) {
        buf_appendf(out, "Content-Length: %zu\r\n\r\n", len);
        buf_append(out, json, len);
    } else {
        buf_reserve(out, len + 1);
        buf_append(out, json, len);
        buf_push(out, '\n');
    }
}
