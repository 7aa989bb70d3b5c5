/* framing: cutting a byte stream into JSON-RPC messages, and back.
 *
 * Two framings share the wire, chosen per connection by the first byte the
 * peer sends that is not whitespace: 'C' or 'c' means LSP-style headers
 * (`Content-Length: N\r\n\r\n` then N bytes); anything else means
 * newline-delimited JSON (one message per line; blank lines, whitespace
 * before a message and the '\r' of a CRLF are not part of it). Replies use
 * the peer's framing.
 *
 * The decoder never holds more than one message plus its limit: a message
 * larger than max_message is reported once as FRAME_OVERSIZED and its bytes
 * are discarded as they arrive, so the connection survives it. A header that
 * cannot be parsed is FRAME_BAD_HEADER, after which the stream cannot be
 * resynchronised and the connection should be closed.
 */
#ifndef ECPD_FRAMING_H
#define ECPD_FRAMING_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

typedef enum framing_mode {
    FRAMING_UNKNOWN = 0,
    FRAMING_CONTENT_LENGTH,
    FRAMING_NEWLINE,
} framing_mode;

typedef enum frame_status {
    FRAME_NEED_MORE = 0,
    FRAME_MESSAGE,
    FRAME_OVERSIZED,
    FRAME_BAD_HEADER,
} frame_status;

/* Longest header block we accept before calling it garbage. */
#define FRAMING_MAX_HEADER 8192

typedef struct framing_decoder {
    framing_mode mode;
    size_t max_message;
    buf in;              /* unconsumed bytes live in in.data[start, in.len) */
    size_t start;
    size_t scanned;      /* bytes after start already searched for a delimiter */
    size_t body_len;     /* content-length mode: body size once the header is read */
    bool have_header;
    size_t skip;         /* bytes of an oversized message still to discard */
    bool skip_line;      /* newline mode: discarding up to the next '\n' */
    bool broken;         /* a bad header was seen: nothing more is decoded */
} framing_decoder;

void framing_decoder_init(framing_decoder *self, size_t max_message);
void framing_decoder_free(framing_decoder *self);

/* Adds received bytes (copied, except those of an oversized message, which
 * are dropped on the spot). */
void framing_decoder_feed(framing_decoder *self, const char *data, size_t len);

/* Takes the next event. For FRAME_MESSAGE, *msg is a malloc'd, NUL-terminated
 * copy of the message (the caller frees it) and *len its length. For
 * FRAME_OVERSIZED, *len is the announced or observed size. */
frame_status framing_decoder_next(framing_decoder *self, char **msg, size_t *len);

/* Bytes received and held that have not been handed out as messages yet:
 * what a peer makes the server keep for it. */
size_t framing_decoder_buffered(const framing_decoder *self);

/* True while a message has begun and not ended: some of it is held, or an
 * oversized one is being discarded. */
bool framing_decoder_inside_message(const framing_decoder *self);

/* Appends one framed message to out. An unknown mode frames as newline JSON. */
void framing_encode(framing_mode mode, buf *out, const char *json, size_t len);

#endif
