/* json_writer: building JSON text that is always valid.
 *
 * Strings are escaped (quotes, backslash, every control character) and any
 * invalid UTF-8 is replaced by U+FFFD, so nothing a client or a file feeds us
 * can break a message; a raw newline never appears inside the output, which the
 * newline-delimited framing relies on. Commas are placed automatically: call
 * the functions in document order and the text is well formed.
 *
 *   json_writer w; jw_init(&w, &out);
 *   jw_object_begin(&w);
 *   jw_key(&w, "version"); jw_int(&w, 3);
 *   jw_key_string(&w, "uri", uri);
 *   jw_object_end(&w);
 *
 * The writer appends to a caller-owned buf and holds nothing itself.
 */
#ifndef ECPD_JSON_WRITER_H
#define ECPD_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "shared.h"

/* A value the writer did not copy: len bytes at data, kept alive by a
 * reference to owner, standing at offset `at` of the output buf (before
 * what was written after it). With data NULL it is all of owner's bytes,
 * which may still be pending (shared.h): whoever sends the output waits
 * for them. */
typedef struct jw_splice {
    size_t at;
    const char *data;
    size_t len;
    ecp_shared *owner;
} jw_splice;

typedef struct jw_splices {
    jw_splice *items;
    size_t count, cap;
} jw_splices;

typedef struct json_writer {
    buf *out;
    jw_splices *splices;    /* NULL: every value is copied into out */
    bool need_comma;        /* a value was just completed at the current level */
    char carry[4];          /* a string chunk's incomplete UTF-8 tail */
    unsigned char carry_len;
} json_writer;

void jw_init(json_writer *w, buf *out);

void jw_object_begin(json_writer *w);
void jw_object_end(json_writer *w);
void jw_array_begin(json_writer *w);
void jw_array_end(json_writer *w);

void jw_key(json_writer *w, const char *key);
void jw_key_n(json_writer *w, const char *key, size_t len);

void jw_string(json_writer *w, const char *s); /* NULL writes null */
void jw_string_n(json_writer *w, const char *s, size_t len);
/* A string written in pieces, as it comes out of a buffer: a UTF-8
 * sequence split between two chunks is held back until it is whole, so the
 * result is exactly what jw_string_n would write for the concatenation. */
void jw_string_begin(json_writer *w);
void jw_string_chunk(json_writer *w, const char *s, size_t len);
void jw_string_end(json_writer *w);

void jw_int(json_writer *w, int64_t v);
void jw_uint(json_writer *w, uint64_t v);
void jw_double(json_writer *w, double v); /* NaN and infinities write null */
void jw_bool(json_writer *w, bool v);
void jw_null(json_writer *w);

/* Inserts already-valid JSON text as one value (an echoed id, a stored
 * result). The caller vouches for it. */
void jw_raw(json_writer *w, const char *json, size_t len);

/* Like jw_raw, but a value of JW_SPLICE_MIN bytes or more is not copied
 * when the writer allows splices: it is recorded, with a reference to
 * owner, for whoever sends the output to write from where it lies. */
#define JW_SPLICE_MIN ((size_t)64 << 10)
void jw_raw_shared(json_writer *w, const char *json, size_t len, ecp_shared *owner);
/* Whether w splices (jw_allow_splices), so that jw_raw_pending may be used. */
bool jw_splicing(const json_writer *w);
/* A value that is all of owner's bytes, when it is filled (it may be
 * pending): valid JSON, which the filler vouches for. Only when splicing. */
void jw_raw_pending(json_writer *w, ecp_shared *owner);
/* The bytes of a splice, once its owner is ready. */
const char *jw_splice_data(const jw_splice *s);
size_t jw_splice_len(const jw_splice *s);
/* Whether every splice's bytes are there; if not, *waiting (may be NULL)
 * is the first owner that is pending. */
bool jw_splices_ready(const jw_splices *splices, ecp_shared **waiting);

/* Lets w splice (jw_raw_shared) into splices, which the caller owns: the
 * output is then out's bytes with each splice inserted at its offset, in
 * order. */
void jw_allow_splices(json_writer *w, jw_splices *splices);
/* The total length of len bytes of output with its splices (whose owners
 * must be ready). */
size_t jw_spliced_len(size_t len, const jw_splices *splices);
/* Adds a splice of len bytes at data, which owner keeps alive (a reference
 * is taken), at offset `at` of the output; after the last one. */
void jw_splices_add(jw_splices *splices, size_t at, const char *data, size_t len, ecp_shared *owner);
/* Drops every splice (and its reference), keeping the array. */
void jw_splices_clear(jw_splices *splices);
/* Hands out len bytes of output at json with the splices inserted, piece by
 * piece in order: the output's own bytes with owner NULL, a splice's with
 * its owner (which must be ready). */
typedef void (*jw_piece_fn)(void *ctx, const char *data, size_t len, ecp_shared *owner);
void jw_splices_walk(const char *json, size_t len, const jw_splices *splices, jw_piece_fn piece, void *ctx);
/* Appends out's bytes with the splices inserted, copied, to `to`. */
void jw_splices_append_to(buf *to, const char *json, size_t len, const jw_splices *splices);
void jw_splices_free(jw_splices *splices);

/* Key and value in one call, the common case in adapters. */
void jw_key_string(json_writer *w, const char *key, const char *s);
void jw_key_string_n(json_writer *w, const char *key, const char *s, size_t len);
void jw_key_int(json_writer *w, const char *key, int64_t v);
void jw_key_double(json_writer *w, const char *key, double v);
void jw_key_bool(json_writer *w, const char *key, bool v);
void jw_key_null(json_writer *w, const char *key);

/* Appends the escaped body of a JSON string (no quotes) to out. */
void json_escape_into(buf *out, const char *s, size_t len);

/* The protocol's Position under key: "key": {"line": line, "column": column}. */
void jw_key_position(json_writer *w, const char *key, size_t line, size_t column);

/* ----- optional members ----- */

/* The member key: s, left out when s is NULL (a field that is absent, not null). */
void jw_key_string_opt(json_writer *w, const char *key, const char *s);

#endif
