#include "utf.h"

#include <string.h>

const char *ecp_encoding_name(ecp_position_encoding enc)
{
    switch (enc) {
    case ECP_ENCODING_UTF8: return "utf-8";
    case ECP_ENCODING_UTF32: return "utf-32";
    case ECP_ENCODING_UTF16: break;
    }
    return "utf-16";
}

bool ecp_encoding_parse(const char *name, ecp_position_encoding *out)
{
    if (strcmp(name, "utf-16") == 0)
        *out = ECP_ENCODING_UTF16;
    else if (strcmp(name, "utf-8") == 0)
        *out = ECP_ENCODING_UTF8;
    else if (strcmp(name, "utf-32") == 0)
        *out = ECP_ENCODING_UTF32;
    else
        return false;
    return true;
}

/* Strict decoding per RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF. Anything else is one invalid byte. */
size_t utf8_decode(const char *str, size_t n, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t len;
    uint32_t v, min;
    if ((c & 0xE0) == 0xC0)
        len = 2, v = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0)
        len = 3, v = c & 0x0F, min = 0x800;
    else if ((c & 0xF8) == 0xF0)
        len = 4, v = c & 0x07, min = 0x10000;
    else
        goto invalid;
    if (n < len)
        goto invalid;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            goto invalid;
        v = (v << 6) | (s[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF))
        goto invalid;
    *cp = v;
    return len;
invalid:
    *cp = 0xFFFD;
    return 1;
}

size_t utf8_encode(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

size_t utf8_valid_prefix(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        if (cp == 0xFFFD && k == 1)
            return i;
        i += k;
    }
    return n;
}

size_t utf_units_of(uint32_t cp, size_t bytes, ecp_position_encoding enc)
{
    switch (enc) {
    case ECP_ENCODING_UTF8:
        /* An invalid byte is one byte on disk; it counts as one unit. */
        return bytes;
    case ECP_ENCODING_UTF32:
        return 1;
    case ECP_ENCODING_UTF16:
        break;
    }
    return cp >= 0x10000 ? 2 : 1;
}

size_t utf_column_count(const char *s, size_t n, ecp_position_encoding enc)
{
    if (enc == ECP_ENCODING_UTF8)
        return n;
    size_t col = 0;
    for (size_t i = 0; i < n;) {
        if ((unsigned char)s[i] < 0x80) {
            col++, i++;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        col += utf_units_of(cp, k, enc);
        i += k;
    }
    return col;
}

bool utf_column_to_byte(const char *line, size_t n, size_t column, ecp_position_encoding enc, size_t *byte_out)
{
    size_t col = 0, i = 0;
    while (i < n && col < column) {
        uint32_t cp;
        size_t k = (unsigned char)line[i] < 0x80 ? (cp = (unsigned char)line[i], 1) : utf8_decode(line + i, n - i, &cp);
        size_t units = utf_units_of(cp, k, enc);
        if (col + units > column)
            break; /* column falls inside this code point: snap to its start */
        col += units;
        i += k;
    }
    *byte_out = i;
    return col == column || i < n;
}

size_t utf_byte_to_column(const char *line, size_t n, size_t byte, ecp_position_encoding enc)
{
    if (byte > n)
        byte = n;
    /* Decoding against the whole line (not the first `byte` bytes) sees the
     * code point a byte falls inside and stops at its start. */
    size_t col = 0;
    for (size_t i = 0; i < byte;) {
        uint32_t cp;
        size_t k = (unsigned char)line[i] < 0x80 ? (cp = (unsigned char)line[i], 1) : utf8_decode(line + i, n - i, &cp);
        if (i + k > byte)
            break;
        col += utf_units_of(cp, k, enc);
        i += k;
    }
    return col;
}
