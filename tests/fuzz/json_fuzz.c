/* Fuzzing the JSON reader against the writer.
 *
 * Arbitrary bytes go to json_doc_parse. A refused input must leave no tokens.
 * An accepted one is walked without recursion: every token visited through
 * json_first/json_next, every string, number and boolean read, lookups
 * checked against the walk. The value is then written twice, once through the
 * writer call by call and once with json_write_value; both outputs must parse
 * again, hold no raw newline, and have the same structure as the input (with
 * invalid UTF-8 in strings turned into U+FFFD and non-finite numbers into
 * null, as the writer promises), and reading and writing again must settle
 * on one text. The one-pass reader is held to the reference reader: the same
 * verdict, message and tokens for every input. */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "buf.h"
#include "error.h"
#include "json.h"
#include "json_writer.h"
#include "utf.h"

#define REQUIRE(cond)         \
    do {                      \
        if (!(cond))          \
            __builtin_trap(); \
    } while (0)

typedef struct frame {
    json_ref next;   /* the next element (or key) to visit, JSON_NO_REF at the end */
    bool object;
    size_t seen, expected, index;
    json_ref container;
} frame;

/* One more than the deepest document the reader accepts. */
#define STACK_DEPTH (JSON_MAX_DEPTH + 2)

/* A string as the writer must emit it: each byte that starts no valid UTF-8
 * sequence becomes U+FFFD. */
static void normalized_string(buf *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        if (cp == 0xFFFD && k == 1)
            buf_append(out, "\xEF\xBF\xBD", 3);
        else
            buf_append(out, s + i, k);
        i += k;
    }
}

static void dump_string(buf *out, char tag, const char *s, size_t n, bool normalize)
{
    buf_push(out, tag);
    buf tmp = BUF_INIT;
    if (normalize) {
        normalized_string(&tmp, s, n);
        s = tmp.data ? tmp.data : "";
        n = tmp.len;
    }
    buf_append(out, &n, sizeof n);
    buf_append(out, s, n);
    buf_free(&tmp);
}

/* Reads a string token and checks the string readers agree with each other. */
static const char *read_string(const json_doc *d, json_ref ref, arena *a, size_t *len)
{
    const char *s = NULL;
    REQUIRE(json_type_of(d, ref) == JSON_STRING);
    REQUIRE(json_string(d, ref, a, &s, len));
    REQUIRE(s[*len] == '\0');
    if (strlen(s) == *len)
        REQUIRE(json_string_eq(d, ref, s));
    size_t raw_len;
    const char *raw = json_raw(d, ref, &raw_len);
    REQUIRE(raw_len >= 2 && raw[0] == '"' && raw[raw_len - 1] == '"');
    REQUIRE(raw >= d->text && raw + raw_len <= d->text + d->len);
    buf u = BUF_INIT;
    REQUIRE(json_unescape(raw + 1, raw_len - 2, &u));
    REQUIRE(u.len == *len && memcmp(u.data, s, *len) == 0);
    buf_free(&u);
    return s;
}

static void dump_scalar(const json_doc *d, json_ref ref, arena *a, buf *out, bool normalize)
{
    size_t raw_len;
    const char *raw = json_raw(d, ref, &raw_len);
    REQUIRE(raw != NULL && raw_len > 0);
    switch (json_type_of(d, ref)) {
    case JSON_NULL:
        REQUIRE(raw_len == 4 && memcmp(raw, "null", 4) == 0);
        buf_push(out, 'n');
        return;
    case JSON_BOOL: {
        bool b;
        REQUIRE(json_bool(d, ref, &b));
        buf_push(out, b ? 't' : 'f');
        return;
    }
    case JSON_NUMBER: {
        int64_t i;
        double v;
        REQUIRE(json_double(d, ref, &v));
        REQUIRE(!isnan(v));
        if (json_int64(d, ref, &i)) {
            REQUIRE((double)i == v);
            buf_push(out, 'i');
            buf_append(out, &i, sizeof i);
        } else if (v == floor(v) && v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
            /* only a plain literal just below INT64_MIN gets here: it is no
             * integer as written, but its double is, and that is what the
             * writer emits and a reader reads back */
            REQUIRE(v == -9223372036854775808.0);
            i = INT64_MIN;
            buf_push(out, 'i');
            buf_append(out, &i, sizeof i);
        } else if (isfinite(v)) {
            buf_push(out, 'd');
            buf_append(out, &v, sizeof v);
        } else {
            buf_push(out, 'n'); /* the writer writes null for infinities */
        }
        return;
    }
    case JSON_STRING: {
        size_t len;
        const char *s = read_string(d, ref, a, &len);
        dump_string(out, 's', s, len, normalize);
        return;
    }
    default:
        __builtin_trap();
    }
}

/* A canonical form of the document's structure, built without recursion.
 * Also checks the lookups against the walk. */
static void dump(const json_doc *d, buf *out, bool normalize)
{
    static frame stack[STACK_DEPTH];
    int sp = 0;
    arena a = ARENA_INIT;
    json_ref ref = json_root(d);
    REQUIRE(ref == 0);
    int visited = 0; /* every token must be reachable: none is left out of the structure */
    for (;;) {
        visited++;
        json_type t = json_type_of(d, ref);
        if (t == JSON_ARRAY || t == JSON_OBJECT) {
            REQUIRE(sp < STACK_DEPTH);
            buf_push(out, t == JSON_ARRAY ? '[' : '{');
            stack[sp++] = (frame){json_first(d, ref), t == JSON_OBJECT, 0, json_length(d, ref), 0, ref};
        } else {
            REQUIRE(json_first(d, ref) == JSON_NO_REF);
            REQUIRE(json_length(d, ref) == 0);
            dump_scalar(d, ref, &a, out, normalize);
        }
        ref = JSON_NO_REF;
        while (sp > 0) {
            frame *f = &stack[sp - 1];
            if (f->next == JSON_NO_REF) {
                REQUIRE(f->seen == f->expected);
                buf_push(out, f->object ? '}' : ']');
                sp--;
                continue;
            }
            json_ref cur = f->next;
            f->next = json_next(d, cur);
            f->seen++;
            if (f->object) {
                size_t klen;
                const char *key = read_string(d, cur, &a, &klen);
                visited++;
                dump_string(out, 'k', key, klen, normalize);
                if (strlen(key) == klen) {
                    /* json_get finds this key, or an earlier one with the same text */
                    json_ref v = json_get(d, f->container, key);
                    REQUIRE(v != JSON_NO_REF && v <= cur + 1 && json_string_eq(d, v - 1, key));
                }
                ref = cur + 1;
            } else {
                if (f->index < 4)
                    REQUIRE(json_array_at(d, f->container, f->index) == cur);
                f->index++;
                ref = cur;
            }
            break;
        }
        if (ref == JSON_NO_REF)
            break;
    }
    REQUIRE(visited == d->count);
    arena_free(&a);
}

/* Writes the document through the writer, one call per value, without recursion. */
static void write_doc(const json_doc *d, buf *out)
{
    static frame stack[STACK_DEPTH];
    int sp = 0;
    arena a = ARENA_INIT;
    json_writer w;
    jw_init(&w, out);
    json_ref ref = json_root(d);
    for (;;) {
        switch (json_type_of(d, ref)) {
        case JSON_ARRAY:
        case JSON_OBJECT: {
            bool object = json_type_of(d, ref) == JSON_OBJECT;
            if (object)
                jw_object_begin(&w);
            else
                jw_array_begin(&w);
            stack[sp++] = (frame){json_first(d, ref), object, 0, 0, 0, ref};
            break;
        }
        case JSON_STRING: {
            const char *s;
            size_t len;
            REQUIRE(json_string(d, ref, &a, &s, &len));
            jw_string_n(&w, s, len);
            break;
        }
        case JSON_NUMBER: {
            int64_t i;
            double v;
            if (json_int64(d, ref, &i))
                jw_int(&w, i);
            else if (json_double(d, ref, &v))
                jw_double(&w, v);
            else
                __builtin_trap();
            break;
        }
        case JSON_BOOL: {
            bool b;
            REQUIRE(json_bool(d, ref, &b));
            jw_bool(&w, b);
            break;
        }
        case JSON_NULL:
            jw_null(&w);
            break;
        default:
            __builtin_trap();
        }
        ref = JSON_NO_REF;
        while (sp > 0) {
            frame *f = &stack[sp - 1];
            if (f->next == JSON_NO_REF) {
                if (f->object)
                    jw_object_end(&w);
                else
                    jw_array_end(&w);
                sp--;
                continue;
            }
            json_ref cur = f->next;
            f->next = json_next(d, cur);
            if (f->object) {
                const char *k;
                size_t klen;
                REQUIRE(json_string(d, cur, &a, &k, &klen));
                jw_key_n(&w, k, klen);
                ref = cur + 1;
            } else {
                ref = cur;
            }
            break;
        }
        if (ref == JSON_NO_REF)
            break;
    }
    arena_free(&a);
}

/* out must parse, hold no raw newline, and have the structure `want`. */
static void check_output(const buf *out, const buf *want)
{
    REQUIRE(out->len > 0);
    REQUIRE(memchr(out->data, '\n', out->len) == NULL);
    REQUIRE(memchr(out->data, '\r', out->len) == NULL);
    json_doc again;
    ecp_error err;
    REQUIRE(json_doc_parse(&again, out->data, out->len, &err) == 0);
    buf got = BUF_INIT;
    dump(&again, &got, false);
    REQUIRE(got.len == want->len && memcmp(got.data, want->data, got.len) == 0);
    buf_free(&got);
    json_doc_free(&again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_doc doc;
    ecp_error err = {0, ""};
    int rc = json_doc_parse(&doc, (const char *)data, size, &err);
    json_doc reference;
    ecp_error reference_err = {0, ""};
    int reference_rc = json_doc_parse_reference(&reference, (const char *)data, size, &reference_err);
    REQUIRE(rc == reference_rc);
    if (rc != 0)
        REQUIRE(strcmp(err.message, reference_err.message) == 0);
    REQUIRE(doc.count == reference.count);
    for (json_ref i = 0; i < doc.count; i++) {
        size_t len, reference_len;
        REQUIRE(json_raw(&doc, i, &len) == json_raw(&reference, i, &reference_len) && len == reference_len);
        REQUIRE(json_type_of(&doc, i) == json_type_of(&reference, i));
        REQUIRE(json_length(&doc, i) == json_length(&reference, i));
        REQUIRE(json_next(&doc, i) == json_next(&reference, i));
    }
    json_doc_free(&reference);
    if (rc != 0) {
        REQUIRE(rc == ECP_EPARSE && err.status == ECP_EPARSE && err.message[0]);
        REQUIRE(doc.count == 0 && json_root(&doc) == JSON_NO_REF);
        json_doc_free(&doc);
        return 0;
    }
    REQUIRE(doc.count > 0);

    buf want = BUF_INIT;
    dump(&doc, &want, true);

    buf out = BUF_INIT;
    write_doc(&doc, &out);
    check_output(&out, &want);

    /* reading and writing again settles: the second round gives the text of
     * the first (the first may still differ where a double written with an
     * exponent reads back as an integer, -9.2233720368547758e+18) */
    json_doc again;
    REQUIRE(json_doc_parse(&again, out.data, out.len, NULL) == 0);
    buf out2 = BUF_INIT;
    write_doc(&again, &out2);
    json_doc_free(&again);
    REQUIRE(json_doc_parse(&again, out2.data, out2.len, NULL) == 0);
    buf out3 = BUF_INIT;
    write_doc(&again, &out3);
    REQUIRE(out3.len == out2.len && memcmp(out3.data, out2.data, out2.len) == 0);
    buf_free(&out3);
    buf_free(&out2);
    json_doc_free(&again);

    /* json_write_value echoes numbers as written, everything else re-written */
    buf echo = BUF_INIT;
    json_writer w;
    jw_init(&w, &echo);
    json_write_value(&w, &doc, json_root(&doc));
    check_output(&echo, &want);
    buf_free(&echo);

    buf_free(&out);
    buf_free(&want);
    json_doc_free(&doc);
    return 0;
}
