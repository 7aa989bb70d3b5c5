/* Unit tests of the JSON reader (json.h) and writer (json_writer.h): every
 * type and lookup, the strict number/literal/string/structure rules, the
 * nesting limit, escaping and U+FFFD replacement on output, and a seeded
 * round-trip property test of writer against reader. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <math.h>

#include "arena.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "json_writer.h"

/* ---- helpers ---------------------------------------------------------------- */

static void parse_ok_n(json_doc *doc, const char *text, size_t len)
{
    ecp_error err = {0, ""};
    int rc = json_doc_parse(doc, text, len, &err);
    if (rc != 0)
        fail_msg("parse of '%.*s' failed: %s", (int)(len > 200 ? 200 : len), text, err.message);
}

static void parse_ok(json_doc *doc, const char *text) { parse_ok_n(doc, text, strlen(text)); }

/* Parsing must fail with exactly this status and message. */
static void parse_fails_n(const char *text, size_t len, int status, const char *message)
{
    json_doc doc;
    ecp_error err = {0, ""};
    int rc = json_doc_parse(&doc, text, len, &err);
    if (rc == 0)
        fail_msg("'%.*s' parsed, expected \"%s\"", (int)(len > 200 ? 200 : len), text, message);
    assert_int_equal(rc, status);
    assert_int_equal(err.status, status);
    assert_string_equal(err.message, message);
    /* a failed parse holds no tokens */
    assert_int_equal(doc.count, 0);
    assert_int_equal(json_root(&doc), JSON_NO_REF);
    json_doc_free(&doc);
}

static void parse_fails(const char *text, const char *message)
{
    parse_fails_n(text, strlen(text), ECP_EPARSE, message);
}

#define SYNTAX "invalid JSON syntax"
#define INCOMPLETE "incomplete JSON text"

static int64_t int_of(const json_doc *doc, json_ref ref)
{
    int64_t v = 0x5a5a5a5a;
    if (!json_int64(doc, ref, &v))
        fail_msg("not an integer: ref %d", ref);
    return v;
}

/* Decodes string ref into a NUL-terminated heap copy (length in *len). */
static char *str_of(const json_doc *doc, json_ref ref, size_t *len)
{
    arena a = ARENA_INIT;
    const char *s = NULL;
    size_t n = 12345;
    assert_true(json_string(doc, ref, &a, &s, &n));
    assert_int_equal(s[n], '\0');
    char *copy = xstrndup(s, n);
    arena_free(&a);
    if (len)
        *len = n;
    return copy;
}

/* The value of the only element of a one-element array `[<text>]`. */
static void parse_single(json_doc *doc, const char *element_text, json_ref *elem)
{
    static char buf_text[4096];
    snprintf(buf_text, sizeof buf_text, "[%s]", element_text);
    parse_ok(doc, buf_text);
    assert_int_equal(json_length(doc, json_root(doc)), 1);
    *elem = json_array_at(doc, json_root(doc), 0);
    assert_int_not_equal(*elem, JSON_NO_REF);
}

/* ---- types and lookups -------------------------------------------------- */

static void test_types(void **state)
{
    (void)state;
    json_doc doc;
    const char *text = "{\"s\":\"x\",\"n\":-12,\"f\":1.5,\"t\":true,\"F\":false,\"z\":null,\"a\":[1],\"o\":{}}";
    parse_ok(&doc, text);
    json_ref root = json_root(&doc);
    assert_int_equal(root, 0);
    assert_int_equal(json_type_of(&doc, root), JSON_OBJECT);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "s")), JSON_STRING);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "n")), JSON_NUMBER);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "f")), JSON_NUMBER);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "t")), JSON_BOOL);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "F")), JSON_BOOL);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "z")), JSON_NULL);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "a")), JSON_ARRAY);
    assert_int_equal(json_type_of(&doc, json_get(&doc, root, "o")), JSON_OBJECT);
    assert_int_equal(json_get(&doc, root, "missing"), JSON_NO_REF);
    assert_int_equal(json_type_of(&doc, JSON_NO_REF), JSON_ABSENT);
    assert_int_equal(json_type_of(&doc, 1000), JSON_ABSENT);
    assert_int_equal(json_type_of(&doc, -7), JSON_ABSENT);
    assert_int_equal(json_length(&doc, root), 8);

    bool b = false;
    assert_true(json_bool(&doc, json_get(&doc, root, "t"), &b));
    assert_true(b);
    assert_true(json_bool(&doc, json_get(&doc, root, "F"), &b));
    assert_false(b);
    /* wrong types leave *out alone */
    b = true;
    assert_false(json_bool(&doc, json_get(&doc, root, "z"), &b));
    assert_false(json_bool(&doc, json_get(&doc, root, "s"), &b));
    assert_true(b);
    int64_t i = 99;
    assert_false(json_int64(&doc, json_get(&doc, root, "s"), &i));
    assert_false(json_int64(&doc, json_get(&doc, root, "t"), &i));
    assert_false(json_int64(&doc, json_get(&doc, root, "a"), &i));
    assert_false(json_int64(&doc, JSON_NO_REF, &i));
    assert_int_equal(i, 99);
    double d = 2.5;
    assert_false(json_double(&doc, json_get(&doc, root, "z"), &d));
    assert_true(d == 2.5);
    assert_true(json_double(&doc, json_get(&doc, root, "f"), &d));
    assert_true(d == 1.5);
    assert_true(json_double(&doc, json_get(&doc, root, "n"), &d));
    assert_true(d == -12.0);
    arena a = ARENA_INIT;
    const char *s = "untouched";
    size_t len = 77;
    assert_false(json_string(&doc, json_get(&doc, root, "n"), &a, &s, &len));
    assert_false(json_string(&doc, JSON_NO_REF, &a, &s, &len));
    assert_string_equal(s, "untouched");
    assert_int_equal(len, 77);
    arena_free(&a);

    assert_string_equal(json_type_name(JSON_ABSENT), "absent");
    assert_string_equal(json_type_name(JSON_NULL), "null");
    assert_string_equal(json_type_name(JSON_BOOL), "boolean");
    assert_string_equal(json_type_name(JSON_NUMBER), "number");
    assert_string_equal(json_type_name(JSON_STRING), "string");
    assert_string_equal(json_type_name(JSON_ARRAY), "array");
    assert_string_equal(json_type_name(JSON_OBJECT), "object");
    json_doc_free(&doc);
    /* freeing twice is harmless */
    json_doc_free(&doc);
}

static void test_top_level_scalars(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, "42");
    assert_int_equal(json_type_of(&doc, json_root(&doc)), JSON_NUMBER);
    assert_int_equal(int_of(&doc, json_root(&doc)), 42);
    json_doc_free(&doc);

    parse_ok(&doc, "  -7.25\n");
    double d = 0;
    assert_true(json_double(&doc, json_root(&doc), &d));
    assert_true(d == -7.25);
    json_doc_free(&doc);

    parse_ok(&doc, "true");
    bool b = false;
    assert_true(json_bool(&doc, json_root(&doc), &b));
    assert_true(b);
    json_doc_free(&doc);

    parse_ok(&doc, "\t\r\n false");
    assert_true(json_bool(&doc, json_root(&doc), &b));
    assert_false(b);
    json_doc_free(&doc);

    parse_ok(&doc, "null");
    assert_int_equal(json_type_of(&doc, json_root(&doc)), JSON_NULL);
    size_t len;
    const char *raw = json_raw(&doc, json_root(&doc), &len);
    assert_int_equal(len, 4);
    assert_memory_equal(raw, "null", 4);
    json_doc_free(&doc);

    parse_ok(&doc, "\"top\"");
    char *s = str_of(&doc, json_root(&doc), &len);
    assert_string_equal(s, "top");
    free(s);
    json_doc_free(&doc);

    parse_fails("1x", "invalid literal '1x' at offset 0");
    parse_fails(" tru", "invalid literal 'tru' at offset 1");
    parse_fails("nulll", "invalid literal 'nulll' at offset 0");
    parse_fails("-", "invalid literal '-' at offset 0");
    parse_fails_n("7\0", 2, ECP_EPARSE, "invalid literal '7' at offset 0");
}

static void test_nested_lookups(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, "{\"position\":{\"line\":3,\"character\":{\"deep\":[10,20,{\"x\":\"y\"}]}},\"k\":1,\"k\":2}");
    json_ref root = json_root(&doc);
    assert_int_equal(int_of(&doc, json_get(&doc, json_get(&doc, root, "position"), "line")), 3);
    json_ref deep = json_get(&doc, json_get(&doc, json_get(&doc, root, "position"), "character"), "deep");
    assert_int_equal(json_type_of(&doc, deep), JSON_ARRAY);
    assert_int_equal(json_length(&doc, deep), 3);
    assert_int_equal(int_of(&doc, json_array_at(&doc, deep, 1)), 20);
    assert_true(json_string_eq(&doc, json_get(&doc, json_array_at(&doc, deep, 2), "x"), "y"));
    /* the first of repeated keys */
    assert_int_equal(int_of(&doc, json_get(&doc, root, "k")), 1);
    /* absent propagates through a chain */
    assert_int_equal(json_get(&doc, json_get(&doc, root, "nope"), "line"), JSON_NO_REF);
    assert_int_equal(json_get(&doc, json_get(&doc, root, "k"), "line"), JSON_NO_REF); /* a number is no object */
    assert_int_equal(json_array_at(&doc, json_get(&doc, root, "nope"), 0), JSON_NO_REF);
    assert_int_equal(json_length(&doc, JSON_NO_REF), 0);
    assert_int_equal(json_first(&doc, JSON_NO_REF), JSON_NO_REF);
    assert_int_equal(json_next(&doc, JSON_NO_REF), JSON_NO_REF);
    /* keys are found only at the object's own level */
    assert_int_equal(json_get(&doc, root, "line"), JSON_NO_REF);
    assert_int_equal(json_get(&doc, root, "x"), JSON_NO_REF);
    json_doc_free(&doc);
}

static void test_iteration_array(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, "[[1,[2,3]],{\"a\":[4],\"b\":{\"c\":5}},\"s\",[],{},7,[[[]]],null]");
    json_ref root = json_root(&doc);
    static const json_type expect[] = {JSON_ARRAY, JSON_OBJECT, JSON_STRING, JSON_ARRAY,
                                       JSON_OBJECT, JSON_NUMBER, JSON_ARRAY, JSON_NULL};
    size_t n = 0;
    for (json_ref e = json_first(&doc, root); e != JSON_NO_REF; e = json_next(&doc, e)) {
        assert_true(n < 8);
        assert_int_equal(json_type_of(&doc, e), expect[n]);
        assert_int_equal(json_array_at(&doc, root, n), e);
        n++;
    }
    assert_int_equal(n, 8);
    assert_int_equal(json_length(&doc, root), 8);
    assert_int_equal(json_array_at(&doc, root, 8), JSON_NO_REF);
    assert_int_equal(json_array_at(&doc, root, (size_t)-1), JSON_NO_REF);
    assert_int_equal(int_of(&doc, json_array_at(&doc, root, 5)), 7);
    /* inner arrays */
    json_ref first = json_array_at(&doc, root, 0);
    assert_int_equal(json_length(&doc, first), 2);
    json_ref inner = json_array_at(&doc, first, 1);
    assert_int_equal(int_of(&doc, json_array_at(&doc, inner, 0)), 2);
    assert_int_equal(int_of(&doc, json_array_at(&doc, inner, 1)), 3);
    assert_int_equal(json_next(&doc, json_array_at(&doc, inner, 1)), JSON_NO_REF);
    assert_int_equal(json_next(&doc, inner), JSON_NO_REF); /* last of its array */
    /* empty containers */
    assert_int_equal(json_first(&doc, json_array_at(&doc, root, 3)), JSON_NO_REF);
    assert_int_equal(json_first(&doc, json_array_at(&doc, root, 4)), JSON_NO_REF);
    assert_int_equal(json_length(&doc, json_array_at(&doc, root, 3)), 0);
    /* scalars have no children, and the root no sibling */
    assert_int_equal(json_first(&doc, json_array_at(&doc, root, 5)), JSON_NO_REF);
    assert_int_equal(json_length(&doc, json_array_at(&doc, root, 2)), 0);
    assert_int_equal(json_next(&doc, root), JSON_NO_REF);
    /* json_array_at on an object */
    assert_int_equal(json_array_at(&doc, json_array_at(&doc, root, 1), 0), JSON_NO_REF);
    json_doc_free(&doc);
}

static void test_iteration_object(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, "{\"a\":{\"b\":[1,2],\"c\":{}},\"d\":[{\"e\":1},[]],\"f\":\"g\",\"h\":{},\"i\":[],\"j\":0}");
    json_ref root = json_root(&doc);
    static const char *keys[] = {"a", "d", "f", "h", "i", "j"};
    static const json_type types[] = {JSON_OBJECT, JSON_ARRAY, JSON_STRING, JSON_OBJECT, JSON_ARRAY, JSON_NUMBER};
    size_t n = 0;
    for (json_ref k = json_first(&doc, root); k != JSON_NO_REF; k = json_next(&doc, k)) {
        assert_true(n < 6);
        assert_int_equal(json_type_of(&doc, k), JSON_STRING);
        assert_true(json_string_eq(&doc, k, keys[n]));
        assert_int_equal(json_type_of(&doc, k + 1), types[n]);
        assert_int_equal(json_get(&doc, root, keys[n]), k + 1);
        n++;
    }
    assert_int_equal(n, 6);
    assert_int_equal(json_length(&doc, root), 6);
    /* the nested object's keys */
    json_ref a = json_get(&doc, root, "a");
    json_ref k = json_first(&doc, a);
    assert_true(json_string_eq(&doc, k, "b"));
    k = json_next(&doc, k);
    assert_true(json_string_eq(&doc, k, "c"));
    assert_int_equal(json_next(&doc, k), JSON_NO_REF);
    assert_int_equal(json_length(&doc, a), 2);
    json_doc_free(&doc);
}

/* ---- numbers --------------------------------------------------------------- */

static void check_int(const char *text, int64_t want)
{
    json_doc doc;
    json_ref e;
    parse_single(&doc, text, &e);
    assert_int_equal(json_type_of(&doc, e), JSON_NUMBER);
    int64_t v = 0x1234;
    if (!json_int64(&doc, e, &v))
        fail_msg("%s did not read as an integer", text);
    if (v != want)
        fail_msg("%s read as %lld, want %lld", text, (long long)v, (long long)want);
    json_doc_free(&doc);
}

static void check_not_int(const char *text)
{
    json_doc doc;
    json_ref e;
    parse_single(&doc, text, &e);
    assert_int_equal(json_type_of(&doc, e), JSON_NUMBER);
    int64_t v = 0x1234;
    if (json_int64(&doc, e, &v))
        fail_msg("%s read as the integer %lld", text, (long long)v);
    assert_int_equal(v, 0x1234);
    json_doc_free(&doc);
}

static void check_double(const char *text, double want)
{
    json_doc doc;
    json_ref e;
    parse_single(&doc, text, &e);
    double d = 0;
    assert_true(json_double(&doc, e, &d));
    if (d != want)
        fail_msg("%s read as %.17g, want %.17g", text, d, want);
    json_doc_free(&doc);
}

static void test_numbers(void **state)
{
    (void)state;
    check_int("0", 0);
    check_int("-0", 0);
    check_int("17", 17);
    check_int("-17", -17);
    check_int("9223372036854775807", INT64_MAX);
    check_int("-9223372036854775808", INT64_MIN);
    check_not_int("9223372036854775808");
    check_not_int("-9223372036854775809");
    check_not_int("99999999999999999999");
    check_not_int("123456789012345678901234567890123456789");
    /* integral doubles read as integers (json.h) */
    check_int("1e3", 1000);
    check_int("1E3", 1000);
    check_int("1e+3", 1000);
    check_int("3.0", 3);
    check_int("-3.000", -3);
    check_int("-0.0", 0);
    check_int("2.5e1", 25);
    check_int("12500e-2", 125);
    check_int("-9.2233720368547758e18", INT64_MIN);
    check_not_int("9.2233720368547758e18"); /* 2^63 */
    check_not_int("1e19");
    check_not_int("-1e19");
    check_not_int("1e400");
    check_not_int("1.5");
    check_not_int("-0.5");
    check_not_int("1e-1");
    check_not_int("3.0000001");

    check_double("1.5", 1.5);
    check_double("-0.25", -0.25);
    check_double("1e3", 1000.0);
    check_double("2E-2", 0.02);
    check_double("7", 7.0);
    check_double("9223372036854775807", 9223372036854775807.0);
    check_double("0.1", 0.1);
    {
        /* longer than any stack copy: the whole literal counts */
        static const char *big = "123456789012345678901234567890123456789012345678901234567890123456789012.5e-3";
        check_double(big, strtod(big, NULL));
        assert_true(strtod(big, NULL) > 1.2e68 && strtod(big, NULL) < 1.3e68);
    }
    {
        json_doc doc;
        json_ref e;
        parse_single(&doc, "-0", &e);
        double d = 1;
        assert_true(json_double(&doc, e, &d));
        assert_true(d == 0 && signbit(d));
        json_doc_free(&doc);
    }

    /* number syntax is checked at parse time */
    parse_fails("[01]", "invalid literal '01' at offset 1");
    parse_fails("[-01]", "invalid literal '-01' at offset 1");
    parse_fails("[00]", "invalid literal '00' at offset 1");
    parse_fails("[1.]", "invalid literal '1.' at offset 1");
    parse_fails("[1.e3]", "invalid literal '1.e3' at offset 1");
    parse_fails("[1e]", "invalid literal '1e' at offset 1");
    parse_fails("[1e+]", "invalid literal '1e+' at offset 1");
    parse_fails("[1e3.5]", "invalid literal '1e3.5' at offset 1");
    parse_fails("[-]", "invalid literal '-' at offset 1");
    parse_fails("[--1]", "invalid literal '--1' at offset 1");
    parse_fails("[-a]", "invalid literal '-a' at offset 1");
    parse_fails("[0x10]", "invalid literal '0x10' at offset 1");
    parse_fails("[1.5.2]", "invalid literal '1.5.2' at offset 1");
    parse_fails("{\"a\": 2-1}", "invalid literal '2-1' at offset 6");
    parse_fails("[.5]", "invalid JSON syntax at offset 1");
    parse_fails("[+1]", "invalid JSON syntax at offset 1");
    parse_fails("[Infinity]", "invalid JSON syntax at offset 1");
    parse_fails("[-Infinity]", "invalid literal '-Infinity' at offset 1");
    parse_fails("[NaN]", "invalid JSON syntax at offset 1");
    /* long junk is quoted to 32 characters */
    parse_fails("[1234567890123456789012345678901234567890x]",
                "invalid literal '12345678901234567890123456789012' at offset 1");
}

static void test_literals(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, "[true,false,null]");
    json_ref r = json_root(&doc);
    assert_int_equal(json_type_of(&doc, json_array_at(&doc, r, 0)), JSON_BOOL);
    assert_int_equal(json_type_of(&doc, json_array_at(&doc, r, 1)), JSON_BOOL);
    assert_int_equal(json_type_of(&doc, json_array_at(&doc, r, 2)), JSON_NULL);
    json_doc_free(&doc);

    parse_fails("[tru]", "invalid literal 'tru' at offset 1");
    parse_fails("[nul]", "invalid literal 'nul' at offset 1");
    parse_fails("[fals]", "invalid literal 'fals' at offset 1");
    parse_fails("[truee]", "invalid literal 'truee' at offset 1");
    parse_fails("[nulls]", "invalid literal 'nulls' at offset 1");
    parse_fails("[t]", "invalid literal 't' at offset 1");
    parse_fails("[True]", "invalid JSON syntax at offset 1");
    parse_fails("[NULL]", "invalid JSON syntax at offset 1");
    parse_fails("[FALSE]", "invalid JSON syntax at offset 1");
    parse_fails("{\"a\":undefined}", "invalid JSON syntax at offset 5");
}

/* ---- strings ---------------------------------------------------------------- */

static void check_string(const char *json_body, const char *want, size_t want_len)
{
    char text[512];
    snprintf(text, sizeof text, "[\"%s\"]", json_body);
    json_doc doc;
    parse_ok(&doc, text);
    json_ref e = json_array_at(&doc, json_root(&doc), 0);
    size_t len;
    char *s = str_of(&doc, e, &len);
    if (len != want_len || memcmp(s, want, len) != 0)
        fail_msg("\"%s\" decoded to %zu bytes, want %zu", json_body, len, want_len);
    free(s);
    /* json_unescape agrees and appends */
    buf b = BUF_INIT;
    buf_append_str(&b, "<");
    assert_true(json_unescape(json_body, strlen(json_body), &b));
    assert_int_equal(b.len, want_len + 1);
    assert_memory_equal(b.data + 1, want, want_len);
    assert_int_equal(b.data[b.len], '\0');
    buf_free(&b);
    json_doc_free(&doc);
}

static void check_bad_string(const char *json_body, const char *message)
{
    char text[512];
    snprintf(text, sizeof text, "[\"%s\"]", json_body);
    parse_fails(text, message);
    buf b = BUF_INIT;
    buf_append_str(&b, "keep");
    assert_false(json_unescape(json_body, strlen(json_body), &b));
    assert_int_equal(b.len, 4);
    assert_string_equal(b.data, "keep");
    buf_free(&b);
}

#define BAD_STRING_AT_1 "invalid string escape or control character in the string at offset 1"

static void test_strings(void **state)
{
    (void)state;
    check_string("", "", 0);
    check_string("plain", "plain", 5);
    check_string("\\\"\\\\\\/\\b\\f\\n\\r\\t", "\"\\/\b\f\n\r\t", 8);
    check_string("a\\u0000b", "a\0b", 3);
    check_string("\\u0000", "\0", 1);
    check_string("\\u0041\\u007a", "Az", 2);
    check_string("\\u00e9", "\xC3\xA9", 2);
    check_string("\\u00E9", "\xC3\xA9", 2);
    check_string("\\u07FF", "\xDF\xBF", 2);
    check_string("\\u0800", "\xE0\xA0\x80", 3);
    check_string("\\u20ac", "\xE2\x82\xAC", 3);
    check_string("\\uFFFF", "\xEF\xBF\xBF", 3);
    check_string("\\ud83d\\ude00", "\xF0\x9F\x98\x80", 4);
    check_string("\\uD834\\uDD1E!", "\xF0\x9D\x84\x9E!", 5);
    check_string("\\ud800\\udc00", "\xF0\x90\x80\x80", 4);
    check_string("\\udbff\\udfff", "\xF4\x8F\xBF\xBF", 4);
    /* raw UTF-8 and DEL pass through */
    check_string("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\x7f", "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80\x7f", 10);

    /* surrogates that do not pair */
    check_bad_string("\\ud83d", BAD_STRING_AT_1);
    check_bad_string("\\ud83dx", BAD_STRING_AT_1);
    check_bad_string("\\ud83dxxxxxx", BAD_STRING_AT_1);
    check_bad_string("\\ude00", BAD_STRING_AT_1);
    check_bad_string("a\\udfff", BAD_STRING_AT_1);
    check_bad_string("\\ude00\\ud83d", BAD_STRING_AT_1);
    check_bad_string("\\ud83d\\u0041", BAD_STRING_AT_1);
    check_bad_string("\\ud83d\\ud83d", BAD_STRING_AT_1);
    check_bad_string("\\ud83d\\n", BAD_STRING_AT_1);
    /* raw control characters */
    check_bad_string("a\tb", BAD_STRING_AT_1);
    check_bad_string("\n", BAD_STRING_AT_1);
    check_bad_string("\x01", BAD_STRING_AT_1);
    check_bad_string("x\x1f", BAD_STRING_AT_1);
    /* escapes that do not exist (jsmn rejects them while tokenizing) */
    parse_fails("[\"\\x41\"]", "invalid JSON syntax at offset 1");
    parse_fails("[\"\\'\"]", "invalid JSON syntax at offset 1");
    parse_fails("[\"\\a\"]", "invalid JSON syntax at offset 1");
    parse_fails("[\"\\U0041\"]", "invalid JSON syntax at offset 1");
    parse_fails("[\"\\u12\"]", "invalid JSON syntax at offset 1");
    parse_fails("[\"\\u00g0\"]", "invalid JSON syntax at offset 1");
    {
        buf b = BUF_INIT;
        assert_false(json_unescape("\\x41", 4, &b));
        assert_false(json_unescape("\\'", 2, &b));
        assert_false(json_unescape("\\u12", 4, &b));
        assert_false(json_unescape("\\u12g4", 6, &b));
        assert_false(json_unescape("ab\\", 3, &b));
        assert_false(json_unescape("\\ud83d\\", 7, &b));
        assert_false(json_unescape("\\ud83d\\u", 8, &b));
        assert_false(json_unescape("\\ud83d\\ude0", 11, &b));
        assert_int_equal(b.len, 0);
        buf_free(&b);
    }
    /* the offset names the string's opening quote */
    parse_fails("{\"k\": \"ok\", \"x\": \"a\x02\"}", "invalid string escape or control character in the string at offset 17");
    /* an unterminated string */
    parse_fails("[\"abc", INCOMPLETE);
    parse_fails("\"abc", INCOMPLETE);
    parse_fails_n("[\"a\0b\"]", 7, ECP_EPARSE, INCOMPLETE);
}

static void test_string_eq_and_raw(void **state)
{
    (void)state;
    json_doc doc;
    /* keys spelled with escapes are found by their decoded text */
    char long_key_json[700];
    char long_key[400];
    size_t o = 0;
    for (int i = 0; i < 300; i++) {
        long_key_json[o++] = (char)('a' + i % 26);
        long_key[i] = (char)('a' + i % 26);
    }
    memcpy(long_key_json + o, "\\u0021", 6); /* '!' */
    o += 6;
    long_key_json[o] = '\0';
    long_key[300] = '!';
    long_key[301] = '\0';
    char text[1200];
    snprintf(text, sizeof text,
             "{\"a\\u0062c\":1,\"\\\"q\\\"\":2,\"x\\/y\":3,\"\\u00e9t\\u00e9\":4,\"n\\u0000\":5,\"%s\":6,\"\":7,"
             "\"\\ud83d\\ude00\":8}",
             long_key_json);
    parse_ok(&doc, text);
    json_ref r = json_root(&doc);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "abc")), 1);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "\"q\"")), 2);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "x/y")), 3);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "\xC3\xA9t\xC3\xA9")), 4);
    assert_int_equal(json_get(&doc, r, "n"), JSON_NO_REF); /* "n\0" is not "n" */
    assert_int_equal(int_of(&doc, json_get(&doc, r, long_key)), 6);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "")), 7);
    assert_int_equal(int_of(&doc, json_get(&doc, r, "\xF0\x9F\x98\x80")), 8);
    assert_int_equal(json_get(&doc, r, "a\\u0062c"), JSON_NO_REF); /* the escaped spelling is not the key */
    assert_int_equal(json_get(&doc, r, "ab"), JSON_NO_REF);
    assert_int_equal(json_get(&doc, r, "abcd"), JSON_NO_REF);
    long_key[299] = 'Z';
    assert_int_equal(json_get(&doc, r, long_key), JSON_NO_REF);
    /* json_string_eq on non-strings */
    assert_false(json_string_eq(&doc, json_get(&doc, r, "abc"), "1"));
    assert_false(json_string_eq(&doc, JSON_NO_REF, ""));
    json_doc_free(&doc);

    static const char raw_text[] = "  {\"s\" : \"a\\\"b\\u00e9\", \"n\": 1.50 , \"o\":{ \"x\" : [ 1 , 2 ] }, \"e\":\"\"}  ";
    static const char s_raw[] = "\"a\\\"b\\u00e9\"";
    static const char o_raw[] = "{ \"x\" : [ 1 , 2 ] }";
    parse_ok(&doc, raw_text);
    r = json_root(&doc);
    size_t len;
    const char *raw = json_raw(&doc, json_get(&doc, r, "s"), &len);
    assert_int_equal(len, 12);
    assert_int_equal(strlen(s_raw), 12);
    assert_memory_equal(raw, s_raw, 12);
    raw = json_raw(&doc, json_get(&doc, r, "n"), &len);
    assert_int_equal(len, 4);
    assert_memory_equal(raw, "1.50", 4);
    raw = json_raw(&doc, json_get(&doc, r, "o"), &len);
    assert_int_equal(len, 19);
    assert_int_equal(strlen(o_raw), 19);
    assert_memory_equal(raw, o_raw, 19);
    raw = json_raw(&doc, json_get(&doc, r, "e"), &len);
    assert_int_equal(len, 2);
    assert_memory_equal(raw, "\"\"", 2);
    raw = json_raw(&doc, json_first(&doc, r), &len); /* a key */
    assert_int_equal(len, 3);
    assert_memory_equal(raw, "\"s\"", 3);
    raw = json_raw(&doc, r, &len);
    assert_int_equal(len, strlen(raw_text) - 4);
    assert_ptr_equal(raw, raw_text + 2);
    len = 99;
    assert_null(json_raw(&doc, JSON_NO_REF, &len));
    assert_int_equal(len, 0);
    json_doc_free(&doc);
}

/* ---- structure ---------------------------------------------------------------- */

static void test_structure(void **state)
{
    (void)state;
    json_doc doc;
    parse_ok(&doc, " \t\r\n{ \"a\" :\t1 ,\n\"b\" : [ ] , \"c\":{} }\r\n\t ");
    assert_int_equal(json_length(&doc, json_root(&doc)), 3);
    json_doc_free(&doc);
    parse_ok(&doc, "[]");
    assert_int_equal(json_length(&doc, json_root(&doc)), 0);
    json_doc_free(&doc);
    parse_ok(&doc, "{}");
    json_doc_free(&doc);

    /* trailing, missing and doubled commas */
    parse_fails("[1,]", SYNTAX);
    parse_fails("[1 , ]", SYNTAX);
    parse_fails("{\"a\":1,}", SYNTAX);
    parse_fails("[[],]", SYNTAX);
    parse_fails("[1 2]", SYNTAX);
    parse_fails("[\"a\" \"b\"]", SYNTAX);
    parse_fails("[[] []]", SYNTAX);
    parse_fails("[{}{}]", SYNTAX);
    parse_fails("{\"a\":1 \"b\":2}", SYNTAX);
    parse_fails("{\"a\":{} \"b\":2}", SYNTAX);
    parse_fails("[1,,2]", SYNTAX);
    parse_fails("[,1]", SYNTAX);
    parse_fails("[,]", SYNTAX);
    parse_fails("{,\"a\":1}", SYNTAX);
    parse_fails("{\"a\":1,,\"b\":2}", SYNTAX);
    /* colons */
    parse_fails("{\"a\" 1}", "invalid JSON syntax at offset 5");
    parse_fails("{\"a\" \"b\"}", SYNTAX);
    parse_fails("{\"a\"::1}", SYNTAX);
    parse_fails("{\"a\"}", SYNTAX);
    parse_fails("{\"a\":}", SYNTAX);
    parse_fails("{\"a\",\"b\"}", SYNTAX);
    parse_fails("{\"a\":1:2}", "invalid literal '1:2' at offset 5");
    parse_fails("{\"a\":\"b\":\"c\"}", SYNTAX);
    parse_fails("[\"a\":1]", SYNTAX);
    parse_fails("[{},\"a\":{}]", SYNTAX);
    parse_fails("\"a\":1", INCOMPLETE);
    parse_fails("\"a\":1 ", SYNTAX);
    parse_fails("[1:2]", "invalid literal '1:2' at offset 1");
    parse_fails("[:1]", SYNTAX);
    parse_fails("{1:2}", "invalid JSON syntax at offset 1");
    parse_fails("{true:2}", "invalid JSON syntax at offset 1");
    parse_fails("{[1]:2}", "invalid JSON syntax at offset 1");
    parse_fails("{{}:2}", "invalid JSON syntax at offset 1");
    parse_fails("{a:1}", "invalid JSON syntax at offset 1");
    /* brackets */
    parse_fails("[1}", "invalid JSON syntax at offset 2");
    parse_fails("{\"a\":1]", "invalid JSON syntax at offset 6");
    parse_fails("]", "invalid JSON syntax at offset 0");
    parse_fails("[1]]", "invalid JSON syntax at offset 3");
    parse_fails("[1,2", INCOMPLETE);
    parse_fails("{\"a\":", INCOMPLETE);
    parse_fails("{\"a\"", INCOMPLETE);
    parse_fails("[", INCOMPLETE);
    /* exactly one top-level value */
    parse_fails("{} {}", "unexpected data after the JSON value at offset 3");
    parse_fails("[1][2]", "unexpected data after the JSON value at offset 3");
    parse_fails("\"a\"\"b\"", "unexpected data after the JSON value at offset 3");
    parse_fails("{} 1 ", "unexpected data after the JSON value at offset 3");
    parse_fails("[] \"x\"", "unexpected data after the JSON value at offset 3");
    parse_fails("1 2", INCOMPLETE);
    parse_fails("1 2 ", "unexpected data after the JSON value at offset 2");
    parse_fails("{}x", "invalid JSON syntax at offset 2");
    parse_fails("{}/", "invalid JSON syntax at offset 2");
    parse_fails("\xEF\xBB\xBF{}", "invalid JSON syntax at offset 0"); /* no byte order mark */
    parse_fails_n("[1]\0", 4, ECP_EPARSE, SYNTAX);
    {
        json_doc d;
        assert_int_equal(json_doc_parse(&d, "\0[1]", 4, NULL), ECP_EPARSE);
        json_doc_free(&d);
    }
    parse_fails("[1]\f", "invalid JSON syntax at offset 3");
    /* empty input */
    parse_fails("", "empty JSON text");
    parse_fails(" \r\n\t ", "empty JSON text");
}

static char *nested(const char *open, const char *inner, const char *close, size_t depth)
{
    buf b = BUF_INIT;
    for (size_t i = 0; i < depth; i++)
        buf_append_str(&b, open);
    buf_append_str(&b, inner);
    for (size_t i = 0; i < depth; i++)
        buf_append_str(&b, close);
    return buf_detach(&b);
}

static void test_depth(void **state)
{
    (void)state;
    static const char *deep_msg = "nesting deeper than 512 levels";
    json_doc doc;
    char *t;

    t = nested("[", "", "]", JSON_MAX_DEPTH);
    parse_ok(&doc, t);
    json_ref e = json_root(&doc);
    for (int i = 1; i < JSON_MAX_DEPTH; i++)
        e = json_array_at(&doc, e, 0);
    assert_int_equal(json_type_of(&doc, e), JSON_ARRAY);
    assert_int_equal(json_length(&doc, e), 0);
    json_doc_free(&doc);
    free(t);
    /* scalars inside the deepest array are not a level of their own */
    t = nested("[", "1,\"s\",true", "]", JSON_MAX_DEPTH);
    parse_ok(&doc, t);
    json_doc_free(&doc);
    free(t);
    t = nested("[", "", "]", JSON_MAX_DEPTH + 1);
    parse_fails(t, deep_msg);
    free(t);
    t = nested("[", "{}", "]", JSON_MAX_DEPTH);
    parse_fails(t, deep_msg);
    free(t);

    /* objects count one level each, like arrays */
    t = nested("{\"a\":", "{}", "}", JSON_MAX_DEPTH - 1);
    parse_ok(&doc, t);
    e = json_root(&doc);
    for (int i = 1; i < JSON_MAX_DEPTH; i++)
        e = json_get(&doc, e, "a");
    assert_int_equal(json_type_of(&doc, e), JSON_OBJECT);
    json_doc_free(&doc);
    free(t);
    t = nested("{\"a\":", "{}", "}", JSON_MAX_DEPTH);
    parse_fails(t, deep_msg);
    free(t);
    t = nested("{\"a\":[", "1", "]}", JSON_MAX_DEPTH / 2);
    parse_ok(&doc, t);
    json_doc_free(&doc);
    free(t);
    t = nested("[{\"a\":", "[]", "}]", JSON_MAX_DEPTH / 2);
    parse_fails(t, deep_msg);
    free(t);

    /* an attack: a million levels, rejected without recursion or a crash */
    t = nested("[", "", "]", 1000000);
    parse_fails(t, deep_msg);
    free(t);
    t = nested("{\"k\":", "1", "}", 1000000);
    parse_fails(t, deep_msg);
    free(t);
    t = nested("[", "", "", 1000000);
    parse_fails(t, deep_msg);
    free(t);
    /* brackets inside strings are no nesting */
    t = nested("[\"[{\\\"\",", "1", "]", JSON_MAX_DEPTH);
    parse_ok(&doc, t);
    json_doc_free(&doc);
    free(t);
}

static void test_large_array(void **state)
{
    (void)state;
    enum { N = 100000 };
    buf b = BUF_INIT;
    buf_push(&b, '[');
    for (int i = 0; i < N; i++)
        buf_appendf(&b, i ? ",%d" : "%d", i);
    buf_push(&b, ']');
    json_doc doc;
    parse_ok_n(&doc, b.data, b.len);
    assert_int_equal(doc.count, N + 1);
    assert_true(doc.cap >= N + 1);
    json_ref r = json_root(&doc);
    assert_int_equal(json_length(&doc, r), N);
    int i = 0;
    for (json_ref e = json_first(&doc, r); e != JSON_NO_REF; e = json_next(&doc, e), i++)
        assert_int_equal(int_of(&doc, e), i);
    assert_int_equal(i, N);
    assert_int_equal(int_of(&doc, json_array_at(&doc, r, N - 1)), N - 1);
    assert_int_equal(json_array_at(&doc, r, N), JSON_NO_REF);
    json_doc_free(&doc);
    buf_free(&b);

    /* and as many objects, each several tokens long */
    buf_push(&b, '[');
    for (int k = 0; k < N / 4; k++)
        buf_appendf(&b, "%s{\"i\":%d,\"s\":[\"x\"]}", k ? "," : "", k);
    buf_push(&b, ']');
    parse_ok_n(&doc, b.data, b.len);
    r = json_root(&doc);
    assert_int_equal(json_length(&doc, r), N / 4);
    assert_int_equal(int_of(&doc, json_get(&doc, json_array_at(&doc, r, N / 4 - 1), "i")), N / 4 - 1);
    json_doc_free(&doc);
    buf_free(&b);
}

/* ---- writer -------------------------------------------------------------------- */

static void test_writer_values(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_string(&w, "s", "x");
    jw_key_string(&w, "ns", NULL);
    jw_key_string_n(&w, "sn", "a\0b", 3);
    jw_key_int(&w, "min", INT64_MIN);
    jw_key_int(&w, "max", INT64_MAX);
    jw_key(&w, "u");
    jw_uint(&w, UINT64_MAX);
    jw_key_double(&w, "d", 1.5);
    jw_key_double(&w, "third", 1.0 / 3.0);
    jw_key_double(&w, "whole", 3.0);
    jw_key_double(&w, "big", 1e300);
    jw_key_double(&w, "negzero", -0.0);
    jw_key_double(&w, "nan", NAN);
    jw_key_double(&w, "inf", INFINITY);
    jw_key_double(&w, "ninf", -INFINITY);
    jw_key_bool(&w, "t", true);
    jw_key_bool(&w, "f", false);
    jw_key_null(&w, "z");
    jw_key(&w, "raw");
    jw_raw(&w, "{\"pre\":[1]}", 11);
    jw_key_n(&w, "k\"n", 3);
    jw_string(&w, "v");
    jw_object_end(&w);
    assert_string_equal(out.data, "{\"s\":\"x\",\"ns\":null,\"sn\":\"a\\u0000b\",\"min\":-9223372036854775808,"
                                  "\"max\":9223372036854775807,\"u\":18446744073709551615,\"d\":1.5,"
                                  "\"third\":0.33333333333333331,\"whole\":3,\"big\":1.0000000000000001e+300,"
                                  "\"negzero\":-0,\"nan\":null,\"inf\":null,\"ninf\":null,\"t\":true,\"f\":false,"
                                  "\"z\":null,\"raw\":{\"pre\":[1]},\"k\\\"n\":\"v\"}");
    /* and it parses back */
    json_doc doc;
    parse_ok_n(&doc, out.data, out.len);
    assert_int_equal(int_of(&doc, json_get(&doc, json_root(&doc), "min")), INT64_MIN);
    json_doc_free(&doc);
    buf_free(&out);

    /* doubles print exactly enough to read back */
    static const double ds[] = {0.1, -0.000244140625, 5e-324, 1e15, 1e16, 123456789.125, 9007199254740993.0, -1e22};
    static const char *texts[] = {"0.10000000000000001", "-0.000244140625", "4.9406564584124654e-324",
                                  "1000000000000000", "10000000000000000", "123456789.125", "9007199254740992",
                                  "-1e+22"};
    for (size_t i = 0; i < sizeof ds / sizeof ds[0]; i++) {
        buf_clear(&out);
        jw_init(&w, &out);
        jw_double(&w, ds[i]);
        assert_string_equal(out.data, texts[i]);
        parse_ok_n(&doc, out.data, out.len);
        double back = 0;
        assert_true(json_double(&doc, json_root(&doc), &back));
        assert_true(back == ds[i]);
        json_doc_free(&doc);
    }
    buf_free(&out);
}

static void test_writer_commas(void **state)
{
    (void)state;
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_array_begin(&w);
    jw_array_begin(&w);
    jw_array_end(&w);
    jw_array_begin(&w);
    jw_int(&w, 1);
    jw_int(&w, 2);
    jw_array_end(&w);
    jw_object_begin(&w);
    jw_key(&w, "a");
    jw_array_begin(&w);
    jw_object_begin(&w);
    jw_object_end(&w);
    jw_object_begin(&w);
    jw_key_null(&w, "n");
    jw_object_end(&w);
    jw_array_end(&w);
    jw_key(&w, "b");
    jw_object_begin(&w);
    jw_key(&w, "c");
    jw_array_begin(&w);
    jw_array_begin(&w);
    jw_int(&w, 3);
    jw_array_end(&w);
    jw_array_end(&w);
    jw_object_end(&w);
    jw_key_int(&w, "d", 4);
    jw_object_end(&w);
    jw_string(&w, "e");
    jw_bool(&w, false);
    jw_null(&w);
    jw_raw(&w, "[]", 2);
    jw_double(&w, 0.5);
    jw_uint(&w, 9);
    jw_array_end(&w);
    assert_string_equal(out.data, "[[],[1,2],{\"a\":[{},{\"n\":null}],\"b\":{\"c\":[[3]]},\"d\":4},\"e\",false,null,[],0.5,9]");
    json_doc doc;
    parse_ok_n(&doc, out.data, out.len);
    json_doc_free(&doc);
    buf_free(&out);
}

static char *written(const char *s, size_t len)
{
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_string_n(&w, s, len);
    return buf_detach(&out);
}

static void check_written(const char *s, size_t len, const char *want)
{
    char *got = written(s, len);
    assert_string_equal(got, want);
    free(got);
}

#define RC "\xEF\xBF\xBD" /* U+FFFD */

static void test_writer_escapes(void **state)
{
    (void)state;
    check_written("", 0, "\"\"");
    check_written("plain / text", 12, "\"plain / text\"");
    check_written("q\"b\\", 4, "\"q\\\"b\\\\\"");
    check_written("\b\f\n\r\t", 5, "\"\\b\\f\\n\\r\\t\"");
    check_written("\x00\x01\x1f\x7f", 4, "\"\\u0000\\u0001\\u001f\x7f\"");
    check_written("\x1b[0m", 4, "\"\\u001b[0m\"");
    /* every control character gets an escape */
    for (int c = 0; c < 0x20; c++) {
        char in = (char)c;
        char *got = written(&in, 1);
        char want[16];
        switch (c) {
        case '\b': strcpy(want, "\"\\b\""); break;
        case '\f': strcpy(want, "\"\\f\""); break;
        case '\n': strcpy(want, "\"\\n\""); break;
        case '\r': strcpy(want, "\"\\r\""); break;
        case '\t': strcpy(want, "\"\\t\""); break;
        default: snprintf(want, sizeof want, "\"\\u%04x\"", (unsigned)c);
        }
        assert_string_equal(got, want);
        free(got);
    }
    /* valid UTF-8 is kept, including U+FFFD itself and the largest code point */
    check_written("\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80" RC "\xF4\x8F\xBF\xBF", 16,
                   "\"\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80" RC "\xF4\x8F\xBF\xBF\"");
    check_written("\xE2\x80\xA8", 3, "\"\xE2\x80\xA8\""); /* U+2028 is valid JSON text */
    /* invalid bytes: one U+FFFD each */
    check_written("\xC0\x80", 2, "\"" RC RC "\"");             /* overlong NUL */
    check_written("\xC1\xBF", 2, "\"" RC RC "\"");             /* overlong */
    check_written("\xE0\x80\xAF", 3, "\"" RC RC RC "\"");      /* overlong '/' */
    check_written("\xF0\x82\x82\xAC", 4, "\"" RC RC RC RC "\""); /* overlong euro */
    check_written("\xED\xA0\x80", 3, "\"" RC RC RC "\"");      /* surrogate D800 */
    check_written("\xED\xBF\xBF", 3, "\"" RC RC RC "\"");      /* surrogate DFFF */
    check_written("\xF4\x90\x80\x80", 4, "\"" RC RC RC RC "\""); /* above U+10FFFF */
    check_written("a\xE2\x82", 3, "\"a" RC RC "\"");           /* truncated at the end */
    check_written("\xE2\x82z", 3, "\"" RC RC "z\"");           /* truncated by ASCII */
    check_written("\xF0\x9F\x98", 3, "\"" RC RC RC "\"");
    check_written("\xFF", 1, "\"" RC "\"");
    check_written("\xFE\xFF", 2, "\"" RC RC "\"");
    check_written("\x80", 1, "\"" RC "\"");
    check_written("\xF8\x88\x80\x80\x80", 5, "\"" RC RC RC RC RC "\"");
    check_written("x\xC3\xA9\xFFy\xC3", 6, "\"x\xC3\xA9" RC "y" RC "\"");
    check_written("\"\xFF\\\n", 4, "\"\\\"" RC "\\\\\\n\"");

    /* keys are escaped the same way */
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_n(&w, "a\n\"\xFF", 4);
    jw_int(&w, 1);
    jw_object_end(&w);
    assert_string_equal(out.data, "{\"a\\n\\\"" RC "\":1}");
    buf_clear(&out);
    json_escape_into(&out, "x\ty\xC0", 4);
    assert_string_equal(out.data, "x\\ty" RC);
    buf_free(&out);

    /* no byte value ever yields a raw newline, and every output parses */
    for (int c = 0; c < 256; c++) {
        char in[3] = {'a', (char)c, 'b'};
        char *got = written(in, 3);
        assert_null(strchr(got, '\n'));
        assert_null(strchr(got, '\r'));
        json_doc doc;
        parse_ok(&doc, got);
        json_doc_free(&doc);
        free(got);
    }
}

static void check_echo(const char *in, size_t in_len, const char *want)
{
    json_doc doc;
    parse_ok_n(&doc, in, in_len);
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    json_write_value(&w, &doc, json_root(&doc));
    assert_string_equal(out.data, want);
    json_doc_free(&doc);
    buf_free(&out);
}

#define ECHO(lit, want) check_echo(lit, sizeof(lit) - 1, want)

static void test_write_value(void **state)
{
    (void)state;
    /* numbers are kept as written; strings and keys go through the writer */
    ECHO("{\"a\":[1,-0,1.50,1e3,true,false,null,\"x\\u00e9\\n\\/\"],\"b\":{},\"c\\\"\":\"\\ud83d\\ude00\",\"d\":[]}",
         "{\"a\":[1,-0,1.50,1e3,true,false,null,\"x\xC3\xA9\\n/\"],\"b\":{},\"c\\\"\":\"\xF0\x9F\x98\x80\",\"d\":[]}");
    ECHO(" { \"a\" : [ 1 , 2 ] , \"b\" : { \"c\" : null } } ", "{\"a\":[1,2],\"b\":{\"c\":null}}");
    /* what is not valid UTF-8 or not printable comes out escaped or replaced */
    ECHO("[\"a\xFF\xC0\x80" "b\",\"\\u0000\\u001f\"]", "[\"a" RC RC RC "b\",\"\\u0000\\u001f\"]");
    ECHO("{\"\xED\xA0\x80\":1}", "{\"" RC RC RC "\":1}");
    /* top-level scalars */
    ECHO("42", "42");
    ECHO(" \"s\" ", "\"s\"");
    ECHO("null", "null");
    /* deep documents, and the value goes where the writer stands */
    char *t = nested("[", "{\"k\":\"v\"}", "]", JSON_MAX_DEPTH - 1);
    json_doc doc;
    parse_ok(&doc, t);
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    json_write_value(&w, &doc, json_root(&doc));
    assert_string_equal(out.data, t);
    buf_clear(&out);
    jw_init(&w, &out);
    jw_object_begin(&w);
    jw_key_int(&w, "before", 1);
    jw_key(&w, "value");
    json_write_value(&w, &doc, json_array_at(&doc, json_root(&doc), 0));
    jw_key(&w, "absent");
    json_write_value(&w, &doc, JSON_NO_REF);
    jw_key_int(&w, "after", 2);
    jw_object_end(&w);
    buf expect = BUF_INIT;
    buf_appendf(&expect, "{\"before\":1,\"value\":%.*s,\"absent\":null,\"after\":2}", (int)strlen(t) - 2, t + 1);
    assert_string_equal(out.data, expect.data);
    buf_free(&expect);
    buf_free(&out);
    json_doc_free(&doc);
    free(t);
}

/* ---- round trip ------------------------------------------------------------------ */

/* An independent strict UTF-8 check (RFC 3629, table 3-7 of Unicode): the length
 * of the well-formed sequence at s, or 0. */
static size_t wellformed_at(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c <= 0x7F)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        return n >= 2 && s[1] >= 0x80 && s[1] <= 0xBF ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        unsigned char lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        return n >= 3 && s[1] >= lo && s[1] <= hi && s[2] >= 0x80 && s[2] <= 0xBF ? 3 : 0;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        unsigned char lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        return n >= 4 && s[1] >= lo && s[1] <= hi && s[2] >= 0x80 && s[2] <= 0xBF && s[3] >= 0x80 && s[3] <= 0xBF
                   ? 4
                   : 0;
    }
    return 0;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static size_t random_text(unsigned char *s, size_t max)
{
    static const char *pieces[] = {"a", " ", "\"", "\\", "\n", "\t", "\x01", "\x7f", "\xC3\xA9", "\xE4\xB8\xAD",
                                   "\xF0\x9F\x98\x80", "\xEF\xBF\xBD", "\xED\x9F\xBF", "\xEE\x80\x80",
                                   "\xF4\x8F\xBF\xBF", "/", "\xC2\x80", "\xE0\xA0\x80", "\xF0\x90\x80\x80"};
    size_t len = rnd() % max, i = 0;
    unsigned mode = rnd() % 3; /* 0: random bytes, 1: valid pieces only, 2: pieces and a few random bytes */
    while (i < len) {
        if (mode == 0 || (mode == 2 && rnd() % 32 == 0)) {
            s[i++] = (unsigned char)rnd();
            continue;
        }
        const char *p = pieces[rnd() % (sizeof pieces / sizeof pieces[0])];
        size_t k = strlen(p);
        if (i + k > len)
            break;
        memcpy(s + i, p, k);
        i += k;
    }
    return i;
}

static void test_round_trip_property(void **state)
{
    (void)state;
    unsigned char in[300];
    buf expect = BUF_INIT;
    int valid_seen = 0;
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = random_text(in, sizeof in);
        /* what the reader must see: the input with each byte that starts no
         * well-formed sequence replaced by U+FFFD */
        buf_clear(&expect);
        bool valid = true;
        for (size_t i = 0; i < n;) {
            size_t k = wellformed_at(in + i, n - i);
            if (k == 0) {
                buf_append(&expect, RC, 3);
                valid = false;
                i++;
            } else {
                buf_append(&expect, in + i, k);
                i += k;
            }
        }
        valid_seen += valid;
        buf out = BUF_INIT;
        json_writer w;
        jw_init(&w, &out);
        jw_array_begin(&w);
        jw_string_n(&w, (const char *)in, n);
        jw_array_end(&w);
        assert_null(memchr(out.data, '\n', out.len));
        json_doc doc;
        parse_ok_n(&doc, out.data, out.len);
        size_t len;
        char *back = str_of(&doc, json_array_at(&doc, json_root(&doc), 0), &len);
        if (valid) {
            assert_int_equal(len, n);
            assert_memory_equal(back, in, n);
        }
        assert_int_equal(len, expect.len);
        if (len)
            assert_memory_equal(back, expect.data, len);
        /* the decoded string is equal to itself as a key, too */
        free(back);
        json_doc_free(&doc);
        buf_free(&out);
    }
    /* the generator must produce plenty of both kinds */
    assert_true(valid_seen > 5000);
    assert_true(valid_seen < 15000);
    buf_free(&expect);
}

/* Whether two parses of one text made the same tokens: the same values at
 * the same places, with the same types, sizes and structure. */
static void assert_same_tokens(const json_doc *a, const json_doc *b)
{
    assert_int_equal(a->count, b->count);
    for (json_ref i = 0; i < a->count; i++) {
        size_t la, lb;
        const char *ra = json_raw(a, i, &la), *rb = json_raw(b, i, &lb);
        assert_ptr_equal(ra, rb);
        assert_int_equal(la, lb);
        assert_int_equal(json_type_of(a, i), json_type_of(b, i));
        assert_int_equal(json_length(a, i), json_length(b, i));
        assert_int_equal(json_next(a, i), json_next(b, i));
        assert_int_equal(json_first(a, i), json_first(b, i));
    }
}

/* The one-pass reader against the reference reader (jsmn, then a check of
 * its tokens): both accept or both refuse, with the same message, and what
 * is accepted comes out as the same tokens. */
static void parses_like_reference(const char *text, size_t len, int *accepted)
{
    json_doc fast, slow;
    ecp_error fast_err = {0, ""}, slow_err = {0, ""};
    int fast_rc = json_doc_parse(&fast, text, len, &fast_err);
    int slow_rc = json_doc_parse_reference(&slow, text, len, &slow_err);
    if (fast_rc != slow_rc)
        fail_msg("'%.*s': the one-pass reader says %d, the reference %d (%s)", (int)(len > 200 ? 200 : len), text,
                 fast_rc, slow_rc, slow_rc ? slow_err.message : fast_err.message);
    if (fast_rc == 0) {
        assert_same_tokens(&fast, &slow);
        ++*accepted;
    } else {
        assert_string_equal(fast_err.message, slow_err.message);
        assert_int_equal(fast.count, 0);
    }
    json_doc_free(&fast);
    json_doc_free(&slow);
}

static void test_one_pass_matches_reference(void **state)
{
    (void)state;
    static const char *const seeds[] = {
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ecp/ping\"}",
        "{\"jsonrpc\": \"2.0\", \"id\": \"a\\\"b\", \"method\": \"document/insert\", \"params\": {\"documentId\": \"d-1\", "
        "\"position\": {\"line\": 0, \"character\": 3}, \"text\": \"x\\u00e9\\ud83d\\ude00\\n\"}}",
        "[1, -0, 0.5, -1.25e+10, 2E-3, true, false, null, \"\", [], {}, [[]], {\"a\": {\"b\": [null]}}]",
        " \t\r\n42 ", "\"top\"", "true", "null", "-0.0e0", "{\"a\":1,\"a\":2}", "[\"\\/\\b\\f\\n\\r\\t\\\\\"]",
    };
    /* fragments that sit on the grammar's edges */
    static const char *const pieces[] = {
        "{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "d83d", "dc00", "00e9", "0", "1", "9", "-", "+", ".",
        "e", "E", "true", "fals", "false", "null", "nul", " ", "\n", "\t", "\r", "\x01", "\x7f", "\xC3\xA9",
        "\xff", "\"a\"", "\"k\":", "x", "\\n", "\\x", "\0",
    };
    int accepted = 0;
    for (size_t i = 0; i < sizeof seeds / sizeof *seeds; i++)
        parses_like_reference(seeds[i], strlen(seeds[i]), &accepted);
    assert_int_equal(accepted, (int)(sizeof seeds / sizeof *seeds));
    char text[400];
    for (int iter = 0; iter < 200000; iter++) {
        size_t n = 0;
        if (iter % 2 == 0) {
            /* a valid message with a few bytes changed, dropped or added */
            const char *seed = seeds[rnd() % (sizeof seeds / sizeof *seeds)];
            n = strlen(seed);
            memcpy(text, seed, n);
            for (unsigned edits = rnd() % 3 + 1; edits--;) {
                size_t at = n ? rnd() % n : 0;
                const char *p = pieces[rnd() % (sizeof pieces / sizeof *pieces)];
                size_t k = p[0] ? strlen(p) : 1;
                switch (rnd() % 3) {
                case 0: /* replace */
                    if (at + k <= n)
                        memcpy(text + at, p, k);
                    break;
                case 1: /* insert */
                    if (n + k < sizeof text) {
                        memmove(text + at + k, text + at, n - at);
                        memcpy(text + at, p, k);
                        n += k;
                    }
                    break;
                default: /* drop */
                    if (n) {
                        memmove(text + at, text + at + 1, n - at - 1);
                        n--;
                    }
                }
            }
        } else {
            /* fragments strung together */
            size_t want = rnd() % 40;
            for (size_t j = 0; j < want; j++) {
                const char *p = pieces[rnd() % (sizeof pieces / sizeof *pieces)];
                size_t k = p[0] ? strlen(p) : 1;
                if (n + k >= sizeof text)
                    break;
                memcpy(text + n, p, k);
                n += k;
            }
        }
        parses_like_reference(text, n, &accepted);
    }
    /* the generator must reach both sides of the line */
    assert_true(accepted > 2000);

    /* the depth limit, exactly at it and one past it */
    static char deep[2 * (JSON_MAX_DEPTH + 1) + 1];
    for (int depth = JSON_MAX_DEPTH; depth <= JSON_MAX_DEPTH + 1; depth++) {
        memset(deep, '[', (size_t)depth);
        memset(deep + depth, ']', (size_t)depth);
        parses_like_reference(deep, 2 * (size_t)depth, &accepted);
    }
}

/* A string written in chunks, split at every pair of points, is exactly the
 * string written whole, even when a split cuts a UTF-8 sequence or an
 * invalid byte sits at the cut. */
static void test_string_in_chunks(void **state)
{
    (void)state;
    const char text[] = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"\n\xff\xc3z\xe4\xb8";
    size_t n = sizeof text - 1;
    buf whole = BUF_INIT;
    json_writer w;
    jw_init(&w, &whole);
    jw_string_n(&w, text, n);
    for (size_t i = 0; i <= n; i++) {
        for (size_t j = i; j <= n; j++) {
            buf pieces = BUF_INIT;
            jw_init(&w, &pieces);
            jw_string_begin(&w);
            jw_string_chunk(&w, text, i);
            jw_string_chunk(&w, text + i, j - i);
            jw_string_chunk(&w, text + j, n - j);
            jw_string_end(&w);
            if (pieces.len != whole.len || memcmp(pieces.data, whole.data, whole.len) != 0)
                fail_msg("split at %zu,%zu: %s != %s", i, j, pieces.data, whole.data);
            buf_free(&pieces);
        }
    }
    /* inside an array, commas still come out right */
    buf arr = BUF_INIT;
    jw_init(&w, &arr);
    jw_array_begin(&w);
    jw_string_begin(&w);
    jw_string_chunk(&w, "x", 1);
    jw_string_end(&w);
    jw_string_begin(&w);
    jw_string_end(&w);
    jw_array_end(&w);
    assert_string_equal(arr.data, "[\"x\",\"\"]");
    buf_free(&arr);
    buf_free(&whole);
}

/* ----- size arithmetic ---------------------------------------------------------- */

/* Runs fn in a child and reports whether it died of SIGABRT: a size that
 * wraps must stop the process, never allocate too little. */
static bool aborts(void (*fn)(void))
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        int devnull = open("/dev/null", O_WRONLY);
        if (devnull >= 0)
            dup2(devnull, STDERR_FILENO);
        signal(SIGABRT, SIG_DFL);
        fn();
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

static void add_past_size_max(void) { (void)xsize_add(SIZE_MAX - 3, 4); }

static void reserve_past_size_max(void)
{
    buf b = BUF_INIT;
    buf_append(&b, "abc", 3);
    buf_reserve(&b, SIZE_MAX - 2);
}

static void arena_past_size_max(void)
{
    arena a = ARENA_INIT;
    (void)arena_alloc(&a, SIZE_MAX - 2);
}

static void strndup_past_size_max(void) { (void)xstrndup("", SIZE_MAX); }

static void test_size_arithmetic_never_wraps(void **state)
{
    (void)state;
    assert_int_equal(xsize_add(SIZE_MAX - 4, 4), SIZE_MAX);
    assert_int_equal(xsize_add(0, 0), 0);
    assert_true(aborts(add_past_size_max));
    assert_true(aborts(reserve_past_size_max));
    assert_true(aborts(arena_past_size_max));
    assert_true(aborts(strndup_past_size_max));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_types),
        cmocka_unit_test(test_string_in_chunks),
        cmocka_unit_test(test_top_level_scalars),
        cmocka_unit_test(test_nested_lookups),
        cmocka_unit_test(test_iteration_array),
        cmocka_unit_test(test_iteration_object),
        cmocka_unit_test(test_numbers),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_string_eq_and_raw),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_depth),
        cmocka_unit_test(test_large_array),
        cmocka_unit_test(test_writer_values),
        cmocka_unit_test(test_writer_commas),
        cmocka_unit_test(test_writer_escapes),
        cmocka_unit_test(test_write_value),
        cmocka_unit_test(test_round_trip_property),
        cmocka_unit_test(test_one_pass_matches_reference),
        cmocka_unit_test(test_size_arithmetic_never_wraps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
