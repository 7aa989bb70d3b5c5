/* utf: UTF-8 decoding and column arithmetic.
 *
 * Clients count columns in UTF-16 code units (the default, as in JavaScript and
 * LSP), UTF-8 bytes, or UTF-32 code points; buffers store UTF-8 bytes. These
 * functions convert between a byte offset inside one line and a column in the
 * negotiated encoding.
 *
 * Invalid UTF-8 is never an error here: each byte that does not start a valid
 * sequence counts as one U+FFFD (one UTF-16 unit, one code point, one byte), the
 * same way the JSON writer renders it, so columns agree with what clients see.
 */
#ifndef ECPD_UTF_H
#define ECPD_UTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ecp_position_encoding {
    ECP_ENCODING_UTF16 = 0, /* the default */
    ECP_ENCODING_UTF8,
    ECP_ENCODING_UTF32,
} ecp_position_encoding;

/* "utf-16", "utf-8", "utf-32". */
const char *ecp_encoding_name(ecp_position_encoding enc);
/* Parses a name; returns false for anything else. */
bool ecp_encoding_parse(const char *name, ecp_position_encoding *out);

/* Decodes one code point at s (n > 0 bytes available). Returns the bytes
 * consumed (1..4); an invalid or truncated sequence yields U+FFFD and 1. */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

/* Encodes cp (<= 0x10FFFF, not a surrogate) into out; returns 1..4. */
size_t utf8_encode(uint32_t cp, char out[4]);

/* Length of the longest valid UTF-8 prefix of s. */
size_t utf8_valid_prefix(const char *s, size_t n);
static inline bool utf8_is_valid(const char *s, size_t n) { return utf8_valid_prefix(s, n) == n; }

/* Width of one decoded code point in the encoding's units. */
size_t utf_units_of(uint32_t cp, size_t bytes, ecp_position_encoding enc);

/* Columns spanned by the n bytes at s. */
size_t utf_column_count(const char *s, size_t n, ecp_position_encoding enc);

/* The byte offset in line (n bytes) of `column`. A column inside a code point
 * (the second half of a surrogate pair, the middle of a multi-byte sequence
 * under utf-8) snaps back to that code point's start. Returns false when the
 * column lies past the end of the line; *byte_out is then n. */
bool utf_column_to_byte(const char *line, size_t n, size_t column, ecp_position_encoding enc, size_t *byte_out);

/* The column of byte offset `byte` (<= n) in line. A byte inside a code point
 * snaps back to that code point's start, as a column does above. */
size_t utf_byte_to_column(const char *line, size_t n, size_t byte, ecp_position_encoding enc);

#endif
