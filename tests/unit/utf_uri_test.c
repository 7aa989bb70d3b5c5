/* Unit tests of utf.h (strict UTF-8 decoding, encoding, column arithmetic in
 * the three position encodings) and uri.h (file URIs in and out, and a
 * seeded round trip over random byte paths). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "buf.h"
#include "error.h"
#include "uri.h"
#include "utf.h"

/* ---- utf8_decode / utf8_encode --------------------------------------------------- */

static void check_decode(const char *s, size_t n, uint32_t want_cp, size_t want_len)
{
    uint32_t cp = 0xDEADBEEF;
    size_t k = utf8_decode(s, n, &cp);
    if (k != want_len || cp != want_cp) {
        char hex[64] = "";
        for (size_t i = 0; i < n && i < 8; i++)
            snprintf(hex + strlen(hex), sizeof hex - strlen(hex), "%02X ", (unsigned char)s[i]);
        fail_msg("decode of %s(n=%zu) gave U+%04X/%zu, want U+%04X/%zu", hex, n, cp, k, want_cp, want_len);
    }
}

#define DEC(lit, cp, len) check_decode(lit, sizeof(lit) - 1, cp, len)
#define BAD(lit) check_decode(lit, sizeof(lit) - 1, 0xFFFD, 1)

static void test_decode_strict(void **state)
{
    (void)state;
    DEC("A", 0x41, 1);
    check_decode("\0", 1, 0, 1);
    DEC("\x7F", 0x7F, 1);
    DEC("\xC2\x80", 0x80, 2);
    DEC("\xC3\xA9", 0xE9, 2);
    DEC("\xDF\xBF", 0x7FF, 2);
    DEC("\xE0\xA0\x80", 0x800, 3);
    DEC("\xE4\xB8\xAD", 0x4E2D, 3);
    DEC("\xED\x9F\xBF", 0xD7FF, 3);
    DEC("\xEE\x80\x80", 0xE000, 3);
    DEC("\xEF\xBF\xBD", 0xFFFD, 3);
    DEC("\xEF\xBF\xBF", 0xFFFF, 3);
    DEC("\xF0\x90\x80\x80", 0x10000, 4);
    DEC("\xF0\x9F\x98\x80", 0x1F600, 4);
    DEC("\xF4\x8F\xBF\xBF", 0x10FFFF, 4);
    DEC("\xC3\xA9rest", 0xE9, 2); /* only one code point is taken */
    /* overlong forms */
    BAD("\xC0\x80");
    BAD("\xC0\xAF");
    BAD("\xC1\xBF");
    BAD("\xE0\x80\x80");
    BAD("\xE0\x9F\xBF");
    BAD("\xF0\x80\x80\x80");
    BAD("\xF0\x8F\xBF\xBF");
    /* surrogates */
    BAD("\xED\xA0\x80");
    BAD("\xED\xAF\xBF");
    BAD("\xED\xB0\x80");
    BAD("\xED\xBF\xBF");
    /* beyond U+10FFFF and bytes that never start a sequence */
    BAD("\xF4\x90\x80\x80");
    BAD("\xF5\x80\x80\x80");
    BAD("\xF7\xBF\xBF\xBF");
    BAD("\xF8\x88\x80\x80\x80");
    BAD("\xFC\x84\x80\x80\x80\x80");
    BAD("\xFE");
    BAD("\xFF");
    BAD("\x80");
    BAD("\xBF\xBF");
    /* truncated: by the end of the input, or by a byte that is no continuation */
    check_decode("\xC3\xA9", 1, 0xFFFD, 1);
    check_decode("\xE4\xB8\xAD", 2, 0xFFFD, 1);
    check_decode("\xF0\x9F\x98\x80", 3, 0xFFFD, 1);
    BAD("\xC3");
    BAD("\xE4\xB8");
    BAD("\xF0\x9F\x98");
    BAD("\xC3" "A");
    BAD("\xE4\xB8" "A");
    BAD("\xF0\x9F\x98" "A");
    BAD("\xE4\xC3\xA9");
    BAD("\xF0\x9F\xF0\x9F\x98\x80");
}

static void test_encode_round_trip(void **state)
{
    (void)state;
    static const struct {
        uint32_t cp;
        const char *bytes;
    } known[] = {
        {0x00, "\x00"},
        {0x7F, "\x7F"},
        {0x80, "\xC2\x80"},
        {0x7FF, "\xDF\xBF"},
        {0x800, "\xE0\xA0\x80"},
        {0xD7FF, "\xED\x9F\xBF"},
        {0xE000, "\xEE\x80\x80"},
        {0xFFFD, "\xEF\xBF\xBD"},
        {0xFFFF, "\xEF\xBF\xBF"},
        {0x10000, "\xF0\x90\x80\x80"},
        {0x1F600, "\xF0\x9F\x98\x80"},
        {0x10FFFF, "\xF4\x8F\xBF\xBF"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        char out[4];
        size_t k = utf8_encode(known[i].cp, out);
        size_t want = known[i].cp == 0 ? 1 : strlen(known[i].bytes);
        assert_int_equal(k, want);
        assert_memory_equal(out, known[i].bytes, k);
    }
    /* every scalar value encodes to the shortest form and decodes back */
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp == 0xD800)
            cp = 0xE000;
        char out[4];
        size_t k = utf8_encode(cp, out);
        size_t want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        if (k != want)
            fail_msg("U+%04X encodes to %zu bytes", cp, k);
        uint32_t back;
        if (utf8_decode(out, k, &back) != k || back != cp)
            fail_msg("U+%04X does not decode back", cp);
        if (k > 1 && utf8_decode(out, k - 1, &back) != 1)
            fail_msg("U+%04X truncated still decodes", cp);
        assert_true(utf8_is_valid(out, k));
    }
}

static void test_valid_prefix(void **state)
{
    (void)state;
    assert_int_equal(utf8_valid_prefix("", 0), 0);
    assert_int_equal(utf8_valid_prefix("abc", 3), 3);
    assert_int_equal(utf8_valid_prefix("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80z", 11), 11);
    assert_int_equal(utf8_valid_prefix("ab\xC3\xA9\xFFzz", 7), 4);
    assert_int_equal(utf8_valid_prefix("ab\xE4\xB8", 4), 2);
    assert_int_equal(utf8_valid_prefix("\xED\xA0\x80", 3), 0);
    assert_int_equal(utf8_valid_prefix("a\0b", 3), 3);
    assert_true(utf8_is_valid("\xF4\x8F\xBF\xBF", 4));
    assert_false(utf8_is_valid("\xF4\x90\x80\x80", 4));
    assert_false(utf8_is_valid("\xC0\x80", 2));
}

static void test_encoding_names(void **state)
{
    (void)state;
    assert_string_equal(ecp_encoding_name(ECP_ENCODING_UTF16), "utf-16");
    assert_string_equal(ecp_encoding_name(ECP_ENCODING_UTF8), "utf-8");
    assert_string_equal(ecp_encoding_name(ECP_ENCODING_UTF32), "utf-32");
    ecp_position_encoding e = ECP_ENCODING_UTF32;
    assert_true(ecp_encoding_parse("utf-16", &e));
    assert_int_equal(e, ECP_ENCODING_UTF16);
    assert_true(ecp_encoding_parse("utf-8", &e));
    assert_int_equal(e, ECP_ENCODING_UTF8);
    assert_true(ecp_encoding_parse("utf-32", &e));
    assert_int_equal(e, ECP_ENCODING_UTF32);
    e = ECP_ENCODING_UTF8;
    assert_false(ecp_encoding_parse("UTF-16", &e));
    assert_false(ecp_encoding_parse("utf16", &e));
    assert_false(ecp_encoding_parse("utf-16 ", &e));
    assert_false(ecp_encoding_parse("", &e));
    assert_int_equal(e, ECP_ENCODING_UTF8);

    assert_int_equal(utf_units_of(0x41, 1, ECP_ENCODING_UTF16), 1);
    assert_int_equal(utf_units_of(0xFFFF, 3, ECP_ENCODING_UTF16), 1);
    assert_int_equal(utf_units_of(0x10000, 4, ECP_ENCODING_UTF16), 2);
    assert_int_equal(utf_units_of(0x1F600, 4, ECP_ENCODING_UTF8), 4);
    assert_int_equal(utf_units_of(0x1F600, 4, ECP_ENCODING_UTF32), 1);
    assert_int_equal(utf_units_of(0xFFFD, 1, ECP_ENCODING_UTF8), 1);
}

/* ---- columns ------------------------------------------------------------------------ */

/* "aé中😀x": bytes 0 | 1-2 | 3-5 | 6-9 | 10, 11 in all */
static const char LINE[] = "a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80x";
#define LINE_LEN 11

static void check_col(const char *line, size_t n, size_t col, ecp_position_encoding enc, bool want_ok, size_t want_byte)
{
    size_t byte = 0xBAD;
    bool ok = utf_column_to_byte(line, n, col, enc, &byte);
    if (ok != want_ok || byte != want_byte)
        fail_msg("column %zu (%s) gave %s/%zu, want %s/%zu", col, ecp_encoding_name(enc), ok ? "true" : "false", byte,
                 want_ok ? "true" : "false", want_byte);
}

static void test_column_count(void **state)
{
    (void)state;
    assert_int_equal(utf_column_count(LINE, LINE_LEN, ECP_ENCODING_UTF16), 6);
    assert_int_equal(utf_column_count(LINE, LINE_LEN, ECP_ENCODING_UTF8), 11);
    assert_int_equal(utf_column_count(LINE, LINE_LEN, ECP_ENCODING_UTF32), 5);
    assert_int_equal(utf_column_count("", 0, ECP_ENCODING_UTF16), 0);
    assert_int_equal(utf_column_count("plain", 5, ECP_ENCODING_UTF16), 5);
    /* two emoji: four UTF-16 units */
    assert_int_equal(utf_column_count("\xF0\x9F\x98\x80\xF0\x9F\x91\x8D", 8, ECP_ENCODING_UTF16), 4);
    assert_int_equal(utf_column_count("\xF0\x9F\x98\x80\xF0\x9F\x91\x8D", 8, ECP_ENCODING_UTF32), 2);
    /* invalid bytes: one unit each, in every encoding */
    static const char bad[] = "a\xFF" "b\xE2\x82" "c\xED\xA0\x80";
    assert_int_equal(utf_column_count(bad, 9, ECP_ENCODING_UTF16), 9);
    assert_int_equal(utf_column_count(bad, 9, ECP_ENCODING_UTF32), 9);
    assert_int_equal(utf_column_count(bad, 9, ECP_ENCODING_UTF8), 9);
    /* an invalid byte then a valid sequence */
    assert_int_equal(utf_column_count("\xFF\xF0\x9F\x98\x80", 5, ECP_ENCODING_UTF16), 3);
}

static void test_column_to_byte(void **state)
{
    (void)state;
    /* UTF-16: a=0 é=1 中=2 😀=3,4 x=5 end=6 */
    static const size_t u16[] = {0, 1, 3, 6, 6, 10, 11};
    for (size_t c = 0; c < 7; c++)
        check_col(LINE, LINE_LEN, c, ECP_ENCODING_UTF16, true, u16[c]);
    check_col(LINE, LINE_LEN, 7, ECP_ENCODING_UTF16, false, LINE_LEN);
    check_col(LINE, LINE_LEN, 1000, ECP_ENCODING_UTF16, false, LINE_LEN);
    /* UTF-8: columns are bytes; inside a sequence snaps back to its start */
    static const size_t u8[] = {0, 1, 1, 3, 3, 3, 6, 6, 6, 6, 10, 11};
    for (size_t c = 0; c < 12; c++)
        check_col(LINE, LINE_LEN, c, ECP_ENCODING_UTF8, true, u8[c]);
    check_col(LINE, LINE_LEN, 12, ECP_ENCODING_UTF8, false, LINE_LEN);
    /* UTF-32: code points */
    static const size_t u32[] = {0, 1, 3, 6, 10, 11};
    for (size_t c = 0; c < 6; c++)
        check_col(LINE, LINE_LEN, c, ECP_ENCODING_UTF32, true, u32[c]);
    check_col(LINE, LINE_LEN, 6, ECP_ENCODING_UTF32, false, LINE_LEN);
    /* an empty line has only column 0 */
    check_col("", 0, 0, ECP_ENCODING_UTF16, true, 0);
    check_col("", 0, 1, ECP_ENCODING_UTF16, false, 0);
    /* a line that ends inside a surrogate pair's code point */
    check_col("a\xF0\x9F\x98\x80", 5, 2, ECP_ENCODING_UTF16, true, 1);
    check_col("a\xF0\x9F\x98\x80", 5, 3, ECP_ENCODING_UTF16, true, 5);
    check_col("a\xF0\x9F\x98\x80", 5, 4, ECP_ENCODING_UTF16, false, 5);
    /* invalid bytes are one unit each */
    static const char bad[] = "\xFF\xFEz\xE2\x82!";
    for (int enc = 0; enc < 3; enc++) {
        for (size_t c = 0; c <= 6; c++)
            check_col(bad, 6, c, (ecp_position_encoding)enc, true, c);
        check_col(bad, 6, 7, (ecp_position_encoding)enc, false, 6);
    }
}

static void test_byte_to_column(void **state)
{
    (void)state;
    static const size_t bytes[] = {0, 1, 3, 6, 10, 11};
    static const size_t u16[] = {0, 1, 2, 3, 5, 6}, u8[] = {0, 1, 3, 6, 10, 11}, u32[] = {0, 1, 2, 3, 4, 5};
    for (size_t i = 0; i < 6; i++) {
        assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, bytes[i], ECP_ENCODING_UTF16), u16[i]);
        assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, bytes[i], ECP_ENCODING_UTF8), u8[i]);
        assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, bytes[i], ECP_ENCODING_UTF32), u32[i]);
        /* and back */
        size_t b;
        assert_true(utf_column_to_byte(LINE, LINE_LEN, u16[i], ECP_ENCODING_UTF16, &b));
        assert_int_equal(b, bytes[i]);
    }
    /* a byte inside a code point counts from its start, in every encoding,
     * as a column inside one does the other way */
    static const size_t inside[] = {2, 4, 5, 7, 8, 9}, inside_start[] = {1, 3, 3, 6, 6, 6};
    for (size_t i = 0; i < 6; i++)
        for (int enc = 0; enc < 3; enc++)
            assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, inside[i], (ecp_position_encoding)enc),
                             utf_byte_to_column(LINE, LINE_LEN, inside_start[i], (ecp_position_encoding)enc));
    assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, 8, ECP_ENCODING_UTF16), 3);
    assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, 8, ECP_ENCODING_UTF8), 6);
    assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, 2, ECP_ENCODING_UTF32), 1);
    /* invalid bytes are code points of their own */
    assert_int_equal(utf_byte_to_column("\xFF\xFEz\xE2\x82!", 6, 4, ECP_ENCODING_UTF16), 4);
    assert_int_equal(utf_byte_to_column("a\xE2\x82", 3, 2, ECP_ENCODING_UTF16), 2);
    /* past the end clamps to the line's length */
    assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, 100, ECP_ENCODING_UTF16), 6);
    assert_int_equal(utf_byte_to_column(LINE, LINE_LEN, 100, ECP_ENCODING_UTF8), 11);
}

/* ---- URIs ---------------------------------------------------------------------------- */

static void check_from_path(const char *path, const char *want)
{
    buf out = BUF_INIT;
    buf_append_str(&out, ">");
    uri_from_path(&out, path, strlen(path));
    assert_string_equal(out.data + 1, want);
    assert_int_equal(out.data[0], '>');
    buf_free(&out);
}

static void test_uri_from_path(void **state)
{
    (void)state;
    check_from_path("/", "file:///");
    check_from_path("/home/user/file.c", "file:///home/user/file.c");
    check_from_path("/a b", "file:///a%20b");
    check_from_path("/a#b", "file:///a%23b");
    check_from_path("/100%", "file:///100%25");
    check_from_path("/a?b", "file:///a%3Fb");
    check_from_path("/caf\xC3\xA9", "file:///caf%C3%A9");
    check_from_path("/\xFF\x80", "file:///%FF%80");
    check_from_path("/tab\there\nnl", "file:///tab%09here%0Anl");
    check_from_path("/q\"<>\\^`{|}[]", "file:///q%22%3C%3E%5C%5E%60%7B%7C%7D%5B%5D");
    /* unreserved characters and the path's safe sub-delimiters stay as they are */
    check_from_path("/AZaz09-._~/!$&'()*+,;=:@", "file:///AZaz09-._~/!$&'()*+,;=:@");
    /* an embedded NUL is encoded, never cuts the URI */
    buf out = BUF_INIT;
    uri_from_path(&out, "/a\0b", 4);
    assert_string_equal(out.data, "file:///a%00b");
    buf_free(&out);
}

static void test_uri_scheme(void **state)
{
    (void)state;
    const char *s = NULL;
    size_t n = 0;
    assert_true(uri_scheme("file:///x", 9, &s, &n));
    assert_int_equal(n, 4);
    assert_memory_equal(s, "file", 4);
    assert_true(uri_scheme("a+b-c.9:rest", 12, &s, &n));
    assert_int_equal(n, 7);
    assert_true(uri_scheme("untitled:Untitled-1", 19, &s, &n));
    assert_int_equal(n, 8);
    assert_true(uri_scheme("C:/x", 4, &s, &n));
    assert_int_equal(n, 1);
    s = "unchanged";
    n = 99;
    assert_false(uri_scheme("/abs/path:x", 11, &s, &n));
    assert_false(uri_scheme("noscheme", 8, &s, &n));
    assert_false(uri_scheme("1abc:x", 6, &s, &n));
    assert_false(uri_scheme(":x", 2, &s, &n));
    assert_false(uri_scheme("a b:x", 5, &s, &n));
    assert_false(uri_scheme("", 0, &s, &n));
    assert_false(uri_scheme("file:", 4, &s, &n)); /* the colon lies beyond len */
    assert_string_equal(s, "unchanged");
    assert_int_equal(n, 99);
}

static void check_to_path_n(const char *uri, size_t len, const char *want)
{
    buf out = BUF_INIT;
    buf_append_str(&out, "pre:");
    ecp_error err = {0, ""};
    int rc = uri_to_path(uri, len, &out, &err);
    if (rc != 0)
        fail_msg("uri_to_path(%s) failed: %s", uri, err.message);
    assert_memory_equal(out.data, "pre:", 4);
    assert_int_equal(out.len, 4 + strlen(want));
    assert_string_equal(out.data + 4, want);
    buf_free(&out);
}

static void check_to_path(const char *uri, const char *want) { check_to_path_n(uri, strlen(uri), want); }

static void check_to_path_fails_n(const char *uri, size_t len, int status, const char *message)
{
    buf out = BUF_INIT;
    buf_append_str(&out, "pre:");
    ecp_error err = {0, ""};
    int rc = uri_to_path(uri, len, &out, &err);
    if (rc == 0)
        fail_msg("uri_to_path(%s) gave '%s', want \"%s\"", uri, out.data, message);
    assert_int_equal(rc, status);
    assert_int_equal(err.status, status);
    assert_string_equal(err.message, message);
    /* nothing was appended */
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "pre:");
    buf_free(&out);
    /* a NULL err is fine */
    buf_init(&out);
    assert_int_equal(uri_to_path(uri, len, &out, NULL), status);
    buf_free(&out);
}

static void check_to_path_fails(const char *uri, int status, const char *message)
{
    check_to_path_fails_n(uri, strlen(uri), status, message);
}

static void test_uri_to_path(void **state)
{
    (void)state;
    check_to_path("file:///home/user/a%20b.c", "/home/user/a b.c");
    check_to_path("file:///home/user/a b.c", "/home/user/a b.c");
    check_to_path("file:///caf%C3%A9/%c3%a9", "/caf\xC3\xA9/\xC3\xA9");
    check_to_path("file:///caf\xC3\xA9", "/caf\xC3\xA9");
    check_to_path("file:///a%23b%3Fc%25d", "/a#b?c%d");
    check_to_path("file:///a#b?c", "/a#b?c");
    check_to_path("file:///", "/");
    check_to_path("file://localhost/etc/hosts", "/etc/hosts");
    check_to_path("file://LocalHost/etc/hosts", "/etc/hosts");
    check_to_path("file://localhost/", "/");
    check_to_path("file:/x/y", "/x/y");
    check_to_path("file:/a%20b", "/a b");
    check_to_path("FILE:///x", "/x");
    check_to_path("File:///x", "/x");
    check_to_path("file:////server/share", "//server/share");
    /* a '%' without two hex digits is kept as it is */
    check_to_path("file:///100%", "/100%");
    check_to_path("file:///a%2", "/a%2");
    check_to_path("file:///a%zzb", "/a%zzb");
    check_to_path("file:///a%2g", "/a%2g");
    check_to_path("file:///%41%2", "/A%2");
    check_to_path("file:///%%41", "/%A");
    /* plain absolute paths are taken as they are: no decoding */
    check_to_path("/plain/path with space", "/plain/path with space");
    check_to_path("/plain%20path", "/plain%20path");
    check_to_path("/a:b", "/a:b");
    check_to_path("/", "/");
    /* and ".." is left alone */
    check_to_path("file:///a/../b", "/a/../b");

    check_to_path_fails("relative/path", ECP_EBADURI, "not an absolute path or URI: relative/path");
    check_to_path_fails("./x", ECP_EBADURI, "not an absolute path or URI: ./x");
    check_to_path_fails("~/x", ECP_EBADURI, "not an absolute path or URI: ~/x");
    check_to_path_fails("", ECP_EBADURI, "not an absolute path or URI: ");
    check_to_path_fails("file://server/share/x", ECP_EBADURI, "file URI names a remote host: server");
    check_to_path_fails("file://localhost.example/x", ECP_EBADURI, "file URI names a remote host: localhost.example");
    check_to_path_fails("file://local/x", ECP_EBADURI, "file URI names a remote host: local");
    check_to_path_fails("file:", ECP_EBADURI, "malformed file URI: file:");
    check_to_path_fails("file:x/y", ECP_EBADURI, "malformed file URI: file:x/y");
    check_to_path_fails("file://", ECP_EBADURI, "file URI has no path: file://");
    check_to_path_fails("file://localhost", ECP_EBADURI, "file URI has no path: file://localhost");
    check_to_path_fails("http://example.com/x", ECP_ENOPROVIDER, "no provider for scheme 'http'");
    check_to_path_fails("memory://1", ECP_ENOPROVIDER, "no provider for scheme 'memory'");
    check_to_path_fails("untitled:Untitled-1", ECP_ENOPROVIDER, "no provider for scheme 'untitled'");
    check_to_path_fails("files:///x", ECP_ENOPROVIDER, "no provider for scheme 'files'");
    check_to_path_fails("C:/Windows", ECP_ENOPROVIDER, "no provider for scheme 'C'");
    /* NUL bytes, raw or encoded, never reach a path */
    check_to_path_fails("file:///a%00b", ECP_EBADURI, "URI decodes to a path with a NUL byte");
    check_to_path_fails("file://localhost/%00", ECP_EBADURI, "URI decodes to a path with a NUL byte");
    check_to_path_fails("file:/a%00b", ECP_EBADURI, "URI decodes to a path with a NUL byte");
    check_to_path_fails_n("/a\0b", 4, ECP_EBADURI, "URI contains a NUL byte");
    check_to_path_fails_n("file:///a\0b", 11, ECP_EBADURI, "URI contains a NUL byte");
    /* long inputs are quoted to 200 bytes */
    char long_rel[400];
    memset(long_rel, 'r', sizeof long_rel - 1);
    long_rel[sizeof long_rel - 1] = '\0';
    char want[300];
    snprintf(want, sizeof want, "not an absolute path or URI: %.200s", long_rel);
    check_to_path_fails(long_rel, ECP_EBADURI, want);
}

static void test_percent_decode(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    uri_percent_decode(&out, "a%20b%2F%2f%zz%4", 16);
    assert_string_equal(out.data, "a b//%zz%4");
    buf_clear(&out);
    uri_percent_decode(&out, "%41%42%43", 9);
    assert_string_equal(out.data, "ABC");
    buf_clear(&out);
    uri_percent_decode(&out, "%", 1);
    assert_string_equal(out.data, "%");
    buf_clear(&out);
    /* len bounds the input: a '%' whose digits lie beyond it is literal */
    uri_percent_decode(&out, "x%41", 3);
    assert_string_equal(out.data, "x%4");
    buf_clear(&out);
    uri_percent_decode(&out, "%00", 3);
    assert_int_equal(out.len, 1);
    assert_int_equal(out.data[0], '\0');
    buf_free(&out);
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

static void test_uri_round_trip(void **state)
{
    (void)state;
    static const char *pieces[] = {"%", "%2", "%41", "#", "?", " ", "/", "//", "..", ":", "@", "\xC3\xA9", "~", "+"};
    for (int iter = 0; iter < 20000; iter++) {
        char path[128];
        size_t n = 1 + rnd() % 100;
        path[0] = '/';
        for (size_t i = 1; i < n;) {
            if (rnd() % 2) {
                char c = (char)(1 + rnd() % 255); /* no NUL */
                path[i++] = c;
            } else {
                const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
                size_t k = strlen(p);
                if (i + k > n) {
                    path[i++] = 'a';
                    continue;
                }
                memcpy(path + i, p, k);
                i += k;
                continue;
            }
        }
        buf uri = BUF_INIT;
        uri_from_path(&uri, path, n);
        /* the URI is plain ASCII with nothing that a URI parser would split on */
        assert_memory_equal(uri.data, "file://", 7);
        for (size_t i = 0; i < uri.len; i++) {
            unsigned char c = (unsigned char)uri.data[i];
            if (c <= 0x20 || c >= 0x7F || c == '#' || c == '?' || c == '"' || c == '\\')
                fail_msg("raw byte 0x%02X in '%s'", c, uri.data);
            if (c == '%')
                assert_true(i + 2 < uri.len && strchr("0123456789ABCDEF", uri.data[i + 1]) &&
                            strchr("0123456789ABCDEF", uri.data[i + 2]));
        }
        const char *scheme;
        size_t scheme_len;
        assert_true(uri_scheme(uri.data, uri.len, &scheme, &scheme_len));
        assert_int_equal(scheme_len, 4);
        buf back = BUF_INIT;
        ecp_error err;
        if (uri_to_path(uri.data, uri.len, &back, &err) != 0)
            fail_msg("'%s' does not parse back: %s", uri.data, err.message);
        assert_int_equal(back.len, n);
        assert_memory_equal(back.data, path, n);
        buf_free(&back);
        buf_free(&uri);
    }
}

static void test_uri_path_within(void **state)
{
    (void)state;
    assert_true(uri_path_within("/a/b", "/a"));
    assert_true(uri_path_within("/a", "/a"));
    assert_true(uri_path_within("/a/b/c", "/a/b"));
    assert_true(uri_path_within("/anything", "/"));
    assert_false(uri_path_within("/ab", "/a"));
    assert_false(uri_path_within("/a", "/a/b"));
    assert_false(uri_path_within("/b", "/a"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode_strict),
        cmocka_unit_test(test_encode_round_trip),
        cmocka_unit_test(test_valid_prefix),
        cmocka_unit_test(test_encoding_names),
        cmocka_unit_test(test_column_count),
        cmocka_unit_test(test_column_to_byte),
        cmocka_unit_test(test_byte_to_column),
        cmocka_unit_test(test_uri_from_path),
        cmocka_unit_test(test_uri_scheme),
        cmocka_unit_test(test_uri_to_path),
        cmocka_unit_test(test_percent_decode),
        cmocka_unit_test(test_uri_round_trip),
        cmocka_unit_test(test_uri_path_within),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
