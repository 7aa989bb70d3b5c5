#include "json_writer.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf.h"

void jw_init(json_writer *w, buf *out)
{
    w->out = out;
    w->splices = NULL;
    w->need_comma = false;
    w->carry_len = 0;
}

static void before_value(json_writer *w)
{
    if (w->need_comma)
        buf_push(w->out, ',');
    w->need_comma = true;
}

void jw_object_begin(json_writer *w)
{
    before_value(w);
    buf_push(w->out, '{');
    w->need_comma = false;
}

void jw_object_end(json_writer *w)
{
    buf_push(w->out, '}');
    w->need_comma = true;
}

void jw_array_begin(json_writer *w)
{
    before_value(w);
    buf_push(w->out, '[');
    w->need_comma = false;
}

void jw_array_end(json_writer *w)
{
    buf_push(w->out, ']');
    w->need_comma = true;
}

/* Bytes that go out as they are: printable ASCII other than '"' and '\\'.
 * Everything else is escaped, or (from 0x80) checked as UTF-8. */
static const unsigned char plain_byte[256] = {
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* Whether any byte of w is a control character, '"', '\\' or not ASCII. */
static inline bool word_needs_look(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
    uint64_t zero_in = ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
    uint64_t control = (w - ones * 0x20) & ~w;
    return ((zero_in | control) & highs) != 0 || (w & highs) != 0;
}

void json_escape_into(buf *out, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    /* The common case, a string with nothing to escape, is copied in the
     * same pass that checks it. */
    if (out->cap - out->len <= len)
        buf_reserve(out, len + 2);
    char *dst = out->data + out->len;
    size_t i = 0;
    for (uint64_t w; i + 8 <= len; i += 8) { /* eight clean bytes at a time: long text is mostly clean */
        memcpy(&w, s + i, 8);
        if (word_needs_look(w))
            break;
        memcpy(dst + i, &w, 8);
    }
    while (i < len && plain_byte[(unsigned char)s[i]]) {
        dst[i] = s[i];
        i++;
    }
    out->len += i;
    out->data[out->len] = '\0';
    if (i == len)
        return;
    s += i, len -= i, i = 0;
    size_t run = 0; /* start of the pending run of bytes that need no escaping */
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        if (plain_byte[c]) {
            i++;
            /* Then eight bytes at a time while none of them needs a look:
             * large texts are mostly such runs. */
            while (i + 8 <= len) {
                uint64_t w;
                memcpy(&w, s + i, 8);
                if (word_needs_look(w))
                    break;
                i += 8;
            }
            continue;
        }
        if (c >= 0x80) {
            uint32_t cp;
            size_t k = utf8_decode(s + i, len - i, &cp);
            if (!(cp == 0xFFFD && k == 1)) {
                i += k; /* valid multi-byte sequence: copy as is */
                continue;
            }
        }
        buf_append(out, s + run, i - run);
        switch (c) {
        case '"': buf_append(out, "\\\"", 2); break;
        case '\\': buf_append(out, "\\\\", 2); break;
        case '\n': buf_append(out, "\\n", 2); break;
        case '\r': buf_append(out, "\\r", 2); break;
        case '\t': buf_append(out, "\\t", 2); break;
        case '\b': buf_append(out, "\\b", 2); break;
        case '\f': buf_append(out, "\\f", 2); break;
        default:
            if (c < 0x20) {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                buf_append(out, esc, 6);
            } else {
                buf_append(out, "\xEF\xBF\xBD", 3); /* U+FFFD for an invalid byte */
            }
        }
        i++;
        run = i;
    }
    buf_append(out, s + run, len - run);
}

void jw_key_n(json_writer *w, const char *key, size_t len)
{
    /* Keys are nearly always plain names: one reservation, copied as they
     * are checked; anything else goes through the escaper. */
    buf *out = w->out;
    if (out->cap - out->len <= len + 4)
        buf_reserve(out, len + 4);
    char *p = out->data + out->len;
    if (w->need_comma)
        *p++ = ',';
    *p++ = '"';
    size_t i = 0;
    while (i < len && plain_byte[(unsigned char)key[i]]) {
        p[i] = key[i];
        i++;
    }
    w->need_comma = false;
    if (i < len) {
        out->len = (size_t)(p - out->data);
        json_escape_into(out, key, len);
        buf_append(out, "\":", 2);
        return;
    }
    p += len;
    *p++ = '"';
    *p++ = ':';
    *p = '\0';
    out->len = (size_t)(p - out->data);
}

void jw_key(json_writer *w, const char *key) { jw_key_n(w, key, strlen(key)); }

void jw_string_n(json_writer *w, const char *s, size_t len)
{
    before_value(w);
    buf_push(w->out, '"');
    json_escape_into(w->out, s, len);
    buf_push(w->out, '"');
}

void jw_string(json_writer *w, const char *s)
{
    if (!s)
        jw_null(w);
    else
        jw_string_n(w, s, strlen(s));
}

/* Integers are in every position and every version number: format them
 * without printf's machinery. */
static void append_uint(buf *out, uint64_t v, bool negative)
{
    char digits[24];
    size_t i = sizeof digits;
    do {
        digits[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative)
        digits[--i] = '-';
    buf_append(out, digits + i, sizeof digits - i);
}

void jw_string_begin(json_writer *w)
{
    before_value(w);
    buf_push(w->out, '"');
    w->carry_len = 0;
}

/* Length of the sequence a lead byte announces (1 for anything else). */
static size_t utf8_sequence_length(unsigned char c)
{
    return (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
}

void jw_string_chunk(json_writer *w, const char *p, size_t len)
{
    if (w->carry_len) {
        size_t need = utf8_sequence_length((unsigned char)w->carry[0]);
        while (w->carry_len < need && len && ((unsigned char)*p & 0xC0) == 0x80) {
            w->carry[w->carry_len++] = *p++;
            len--;
        }
        if (w->carry_len < need && len == 0)
            return; /* still incomplete: wait for the next chunk */
        json_escape_into(w->out, w->carry, w->carry_len);
        w->carry_len = 0;
    }
    /* hold back a sequence cut off at the end of this chunk */
    size_t whole = len;
    for (size_t back = 1; back <= 3 && back <= len; back++) {
        unsigned char c = (unsigned char)p[len - back];
        if ((c & 0xC0) == 0x80)
            continue;
        if (utf8_sequence_length(c) > back)
            whole = len - back;
        break;
    }
    json_escape_into(w->out, p, whole);
    memcpy(w->carry, p + whole, len - whole);
    w->carry_len = (unsigned char)(len - whole);
}

void jw_string_end(json_writer *w)
{
    if (w->carry_len)
        json_escape_into(w->out, w->carry, w->carry_len);
    w->carry_len = 0;
    buf_push(w->out, '"');
}

void jw_int(json_writer *w, int64_t v)
{
    before_value(w);
    append_uint(w->out, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void jw_uint(json_writer *w, uint64_t v)
{
    before_value(w);
    append_uint(w->out, v, false);
}

void jw_double(json_writer *w, double v)
{
    if (!isfinite(v)) {
        jw_null(w);
        return;
    }
    before_value(w);
    if (v == floor(v) && fabs(v) < 1e15)
        buf_appendf(w->out, "%.0f", v);
    else
        buf_appendf(w->out, "%.17g", v);
}

void jw_bool(json_writer *w, bool v)
{
    before_value(w);
    buf_append_str(w->out, v ? "true" : "false");
}

void jw_null(json_writer *w)
{
    before_value(w);
    buf_append(w->out, "null", 4);
}

void jw_raw(json_writer *w, const char *json, size_t len)
{
    before_value(w);
    buf_append(w->out, json, len);
}

void jw_raw_shared(json_writer *w, const char *json, size_t len, ecp_shared *owner)
{
    if (!w->splices || len < JW_SPLICE_MIN) {
        jw_raw(w, json, len);
        return;
    }
    before_value(w);
    jw_splices_add(w->splices, w->out->len, json, len, owner);
}

void jw_splices_add(jw_splices *s, size_t at, const char *data, size_t len, ecp_shared *owner)
{
    if (s->count == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 4;
        s->items = xrealloc(s->items, s->cap * sizeof *s->items);
    }
    s->items[s->count++] = (jw_splice){at, data, len, ecp_shared_ref(owner)};
}

void jw_allow_splices(json_writer *w, jw_splices *splices) { w->splices = splices; }

bool jw_splicing(const json_writer *w) { return w->splices != NULL; }

void jw_raw_pending(json_writer *w, ecp_shared *owner)
{
    before_value(w);
    jw_splices_add(w->splices, w->out->len, NULL, 0, owner);
}

const char *jw_splice_data(const jw_splice *s) { return s->data ? s->data : ecp_shared_data(s->owner); }

size_t jw_splice_len(const jw_splice *s) { return s->data ? s->len : ecp_shared_len(s->owner); }

bool jw_splices_ready(const jw_splices *splices, ecp_shared **waiting)
{
    for (size_t i = 0; splices && i < splices->count; i++) {
        if (!ecp_shared_ready(splices->items[i].owner)) {
            if (waiting)
                *waiting = splices->items[i].owner;
            return false;
        }
    }
    return true;
}

size_t jw_spliced_len(size_t len, const jw_splices *splices)
{
    for (size_t i = 0; splices && i < splices->count; i++)
        len = xsize_add(len, jw_splice_len(&splices->items[i]));
    return len;
}

void jw_splices_clear(jw_splices *splices)
{
    for (size_t i = 0; i < splices->count; i++)
        ecp_shared_unref(splices->items[i].owner);
    splices->count = 0;
}

void jw_splices_walk(const char *json, size_t len, const jw_splices *splices, jw_piece_fn piece, void *ctx)
{
    size_t at = 0;
    for (size_t i = 0; splices && i < splices->count; i++) {
        const jw_splice *s = &splices->items[i];
        if (s->at > at)
            piece(ctx, json + at, s->at - at, NULL);
        piece(ctx, jw_splice_data(s), jw_splice_len(s), s->owner);
        at = s->at;
    }
    if (len > at)
        piece(ctx, json + at, len - at, NULL);
}

static void append_piece(void *ctx, const char *data, size_t len, ecp_shared *owner)
{
    (void)owner;
    buf_append(ctx, data, len);
}

void jw_splices_append_to(buf *to, const char *json, size_t len, const jw_splices *splices)
{
    jw_splices_walk(json, len, splices, append_piece, to);
}

void jw_splices_free(jw_splices *splices)
{
    jw_splices_clear(splices);
    free(splices->items);
    splices->items = NULL;
    splices->cap = 0;
}

void jw_key_string(json_writer *w, const char *key, const char *s)
{
    jw_key(w, key);
    jw_string(w, s);
}

void jw_key_string_n(json_writer *w, const char *key, const char *s, size_t len)
{
    jw_key(w, key);
    jw_string_n(w, s, len);
}

void jw_key_int(json_writer *w, const char *key, int64_t v)
{
    jw_key(w, key);
    jw_int(w, v);
}

void jw_key_double(json_writer *w, const char *key, double v)
{
    jw_key(w, key);
    jw_double(w, v);
}

void jw_key_bool(json_writer *w, const char *key, bool v)
{
    jw_key(w, key);
    jw_bool(w, v);
}

void jw_key_null(json_writer *w, const char *key)
{
    jw_key(w, key);
    jw_null(w);
}

void jw_key_position(json_writer *w, const char *key, size_t line, size_t column)
{
    jw_key(w, key);
    jw_object_begin(w);
    jw_key_int(w, "line", (int64_t)line);
    jw_key_int(w, "column", (int64_t)column);
    jw_object_end(w);
}

/* ----- optional members ----- */

void jw_key_string_opt(json_writer *w, const char *key, const char *s)
{
    if (s)
        jw_key_string(w, key, s);
}
