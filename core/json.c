#include "json.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "error.h"
#include "json_writer.h"
#include "utf.h"

/* The one translation unit that holds jsmn's implementation. JSMN_STRICT and
 * JSMN_PARENT_LINKS come from the build, identically for every file. */
#include <jsmn.h>

#define TOKENS(doc) ((jsmntok_t *)(doc)->tokens)

/* One test of a bit, not four compares: the readers ask this of nearly every byte. */
#define WS_BITS ((1ull << ' ') | (1ull << '\t') | (1ull << '\n') | (1ull << '\r'))
static inline bool is_ws(char c) { return (unsigned char)c <= ' ' && (WS_BITS >> (unsigned char)c & 1); }

/* Source extent of a token: jsmn's string tokens exclude their quotes. */
static int tok_begin(const jsmntok_t *t) { return t->type == JSMN_STRING ? t->start - 1 : t->start; }
static int tok_end(const jsmntok_t *t) { return t->type == JSMN_STRING ? t->end + 1 : t->end; }

/* The text between two tokens must be whitespace around at most one
 * separator: jsmn itself tolerates missing or doubled commas. */
static bool gap_ok(const char *text, int from, int to, char separator)
{
    bool seen = separator == 0;
    for (int i = from; i < to; i++) {
        if (is_ws(text[i]))
            continue;
        if (!seen && text[i] == separator) {
            seen = true;
            continue;
        }
        return false;
    }
    return seen;
}

static bool number_ok(const char *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9')
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
    else
        return false;
    if (i < n && s[i] == '.') {
        size_t digits = ++i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == digits)
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        size_t digits = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            i++;
        if (i == digits)
            return false;
    }
    return i == n;
}

static bool literal_is(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && memcmp(s, lit, n) == 0;
}

static int hex4(const char *s)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            return -1;
        v = v << 4 | d;
    }
    return v;
}

/* Decodes a string body into out (room for len bytes suffices: no escape
 * expands). Returns the decoded length, or -1 on an invalid escape, a lone
 * surrogate or a raw control character. */
static long unescape_to(const char *s, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        /* runs of plain bytes, nearly every string entirely, in a tight loop */
        if (out) {
            while (i < len && (unsigned char)s[i] >= 0x20 && s[i] != '\\')
                out[o++] = s[i++];
        } else {
            while (i < len && (unsigned char)s[i] >= 0x20 && s[i] != '\\')
                o++, i++;
        }
        if (i == len)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            return -1;
        if (c != '\\') {
            if (out)
                out[o] = (char)c;
            o++;
            continue;
        }
        if (++i >= len)
            return -1;
        char e = s[i], simple = 0;
        switch (e) {
        case '"': simple = '"'; break;
        case '\\': simple = '\\'; break;
        case '/': simple = '/'; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        case 'u': break;
        default: return -1;
        }
        if (simple) {
            if (out)
                out[o] = simple;
            o++;
            continue;
        }
        if (i + 4 >= len)
            return -1;
        int u = hex4(s + i + 1);
        if (u < 0)
            return -1;
        i += 4;
        uint32_t cp = (uint32_t)u;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return -1; /* a low surrogate with no high one before it */
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (i + 6 >= len)
                return -1;
            if (s[i + 1] != '\\' || s[i + 2] != 'u')
                return -1;
            int lo = hex4(s + i + 3);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return -1;
            cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            i += 6;
        }
        char tmp[4];
        size_t k = utf8_encode(cp, tmp);
        if (out)
            memcpy(out + o, tmp, k);
        o += k;
    }
    return (long)o;
}

/* Whether a string body is valid: a plain one, nearly every one, needs no
 * more than one look at each byte. */
static bool string_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            return false;
        if (c == '\\')
            return unescape_to(s + i, len - i, NULL) >= 0; /* the plain prefix is fine */
    }
    return true;
}

bool json_unescape(const char *s, size_t len, buf *out)
{
    buf_reserve(out, len);
    long n = unescape_to(s, len, out->data + out->len);
    if (n < 0) {
        out->data[out->len] = '\0';
        return false;
    }
    out->len += (size_t)n;
    out->data[out->len] = '\0';
    return true;
}

/* Checks what jsmn leaves unchecked: separators, trailing commas, number and
 * literal syntax, string escapes, key types and a single top-level value (the
 * nesting depth is checked before tokenizing, by too_deep()). */
static int validate(json_doc *doc, ecp_error *err)
{
    jsmntok_t *t = TOKENS(doc);
    const char *text = doc->text;
    int n = doc->count;
    int result = 0;
    /* the end of each container's previous child; a small message, the
     * common case, needs no allocation */
    int small[64];
    int *last_end = n <= 64 ? small : xmalloc(sizeof(int) * (size_t)n);

    for (int i = 0; i < n; i++) {
        last_end[i] = -1;
        int p = t[i].parent;
        if (p < 0) {
            if (i != 0) {
                result = ecp_error_set(err, ECP_EPARSE, "unexpected data after the JSON value at offset %d", tok_begin(&t[i]));
                goto done;
            }
        }
        if (p >= 0 && t[p].type == JSMN_STRING) {
            /* a member value: "key" : value (jsmn also lets a string inside an
             * array take a "value") */
            if (t[p].parent < 0 || t[t[p].parent].type != JSMN_OBJECT || !gap_ok(text, tok_end(&t[p]), tok_begin(&t[i]), ':'))
                goto syntax;
            last_end[t[p].parent] = tok_end(&t[i]);
        } else if (p >= 0) {
            if (t[p].type == JSMN_OBJECT && (t[i].type != JSMN_STRING || t[i].size != 1))
                goto syntax;
            int from = last_end[p] < 0 ? t[p].start + 1 : last_end[p];
            if (!gap_ok(text, from, tok_begin(&t[i]), last_end[p] < 0 ? 0 : ','))
                goto syntax;
            last_end[p] = tok_end(&t[i]);
        }
        const char *s = text + t[i].start;
        size_t len = (size_t)(t[i].end - t[i].start);
        if (t[i].type == JSMN_PRIMITIVE) {
            if (!(number_ok(s, len) || literal_is(s, len, "true") || literal_is(s, len, "false") ||
                  literal_is(s, len, "null"))) {
                result = ecp_error_set(err, ECP_EPARSE, "invalid literal '%.*s' at offset %d", (int)(len > 32 ? 32 : len), s,
                                       t[i].start);
                goto done;
            }
        } else if (t[i].type == JSMN_STRING) {
            if (!string_ok(s, len)) {
                result = ecp_error_set(err, ECP_EPARSE, "invalid string escape or control character in the string at offset %d",
                                       tok_begin(&t[i]));
                goto done;
            }
        }
    }
    /* closing brackets: nothing but whitespace after the last child */
    for (int i = 0; i < n; i++) {
        if (t[i].type != JSMN_OBJECT && t[i].type != JSMN_ARRAY)
            continue;
        int from = last_end[i] < 0 ? t[i].start + 1 : last_end[i];
        if (!gap_ok(text, from, t[i].end - 1, 0))
            goto syntax;
    }
    if (n > 0 && (!gap_ok(text, 0, tok_begin(&t[0]), 0) || !gap_ok(text, tok_end(&t[0]), (int)doc->len, 0)))
        goto syntax;
    goto done;

syntax:
    result = ecp_error_set(err, ECP_EPARSE, "invalid JSON syntax");
done:
    if (last_end != small)
        free(last_end);
    return result;
}

/* The deepest nesting of brackets outside strings. It is measured before
 * tokenizing because jsmn closes a bracket by walking up from the last token,
 * which makes deep nesting quadratic. */
static bool too_deep(const char *text, size_t len)
{
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > JSON_MAX_DEPTH)
                return true;
        } else if ((c == ']' || c == '}') && depth > 0) {
            depth--;
        }
    }
    return false;
}

int json_doc_parse_reference(json_doc *self, const char *text, size_t len, ecp_error *err)
{
    memset(self, 0, sizeof *self);
    self->text = text;
    self->len = len;
    if (len > (size_t)INT32_MAX - 2)
        return ecp_error_set(err, ECP_ETOOBIG, "JSON text of %zu bytes is too large", len);
    /* Nesting deeper than the limit takes more opening brackets than a
     * message this short has bytes. */
    if (len > JSON_MAX_DEPTH && too_deep(text, len))
        return ecp_error_set(err, ECP_EPARSE, "nesting deeper than %d levels", JSON_MAX_DEPTH);
    jsmn_parser parser;
    jsmn_init(&parser);
    /* Every value takes at least two bytes with its separator (a container
     * its two brackets), so a small message gets an array that fits it
     * without being grown, and small enough for the allocator's fast path. */
    int cap = len / 2 + 2 < 64 ? (int)(len / 2 + 2) : 64;
    self->tokens = xmalloc(sizeof(jsmntok_t) * (size_t)cap);
    self->cap = cap;
    for (;;) {
        int r = jsmn_parse(&parser, text, len, TOKENS(self), (unsigned)self->cap);
        if (r == JSMN_ERROR_NOMEM) {
            /* jsmn resumes where it stopped when handed a bigger array */
            if (self->cap > INT_MAX / 2 || (size_t)self->cap * 2 > SIZE_MAX / sizeof(jsmntok_t)) {
                json_doc_free(self);
                return ecp_error_set(err, ECP_ETOOBIG, "JSON text has too many values");
            }
            self->cap *= 2;
            self->tokens = xrealloc(self->tokens, sizeof(jsmntok_t) * (size_t)self->cap);
            continue;
        }
        if (r == JSMN_ERROR_PART && parser.toknext == 0 && text[parser.pos] != '"') {
            /* A bare top-level primitive ("42", "true"): strict jsmn wants a
             * delimiter after it. It runs to the end of the text; validate()
             * checks its spelling. */
            jsmntok_t *t = TOKENS(self);
            t->type = JSMN_PRIMITIVE;
            t->start = (int)parser.pos;
            t->end = (int)len;
            t->size = 0;
            t->parent = -1;
            r = 1;
        }
        if (r < 0) {
            int status = ecp_error_set(err, ECP_EPARSE, r == JSMN_ERROR_PART ? "incomplete JSON text" : "invalid JSON syntax at offset %u",
                                       parser.pos);
            json_doc_free(self);
            return status;
        }
        self->count = r;
        break;
    }
    if (self->count == 0) {
        json_doc_free(self);
        return ecp_error_set(err, ECP_EPARSE, "empty JSON text");
    }
    int status = validate(self, err);
    if (status < 0)
        json_doc_free(self);
    return status;
}

/* ----- the one-pass reader ---------------------------------------------------
 *
 * What json_doc_parse_reference does in three passes (the depth count, jsmn,
 * then validate() over the tokens), done in one: the grammar of RFC 8259 is
 * followed byte by byte, so every separator, number, literal and escape is
 * checked where it is met, and the tokens come out exactly as jsmn would make
 * them (JSMN_PARENT_LINKS: a member's value has its key as parent, a key its
 * object). It decides only whether the text is valid; a refused text is read
 * again by the reference reader, whose message is the one the peer gets, so
 * the words of every complaint stay what they were. */

/* Bytes a string holds as they are: not a quote, a backslash or a control
 * character. */
static inline bool plain_string_byte(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

typedef struct reader {
    jsmntok_t *tokens;
    int count, cap;
} reader;

/* Doubles the token array; false when it cannot grow. Out of the way of the
 * loop: a small message never gets here. */
static __attribute__((noinline)) bool grow_tokens(reader *r)
{
    if (r->cap > INT_MAX / 2 || (size_t)r->cap * 2 > SIZE_MAX / sizeof(jsmntok_t))
        return false;
    r->cap *= 2;
    r->tokens = xrealloc(r->tokens, sizeof(jsmntok_t) * (size_t)r->cap);
    return true;
}

/* A new token under parent, counted in the parent's size as jsmn counts it;
 * -1 when the array cannot grow. */
static inline int new_token(reader *r, jsmntype_t type, size_t start, int parent)
{
    if (r->count == r->cap && !grow_tokens(r))
        return -1;
    jsmntok_t *t = &r->tokens[r->count];
    t->type = type;
    t->start = (int)start;
    t->end = -1;
    t->size = 0;
    t->parent = parent;
    if (parent >= 0)
        r->tokens[parent].size++;
    return r->count++;
}

/* The string whose opening quote is at pos: the offset of its closing quote,
 * or 0 when it is invalid. Escapes are checked as unescape_to() checks them:
 * a high surrogate must be followed at once by a low one. */
static size_t read_string(const unsigned char *s, size_t pos, size_t len)
{
    size_t i = pos + 1;
    for (;;) {
        while (i < len && plain_string_byte(s[i]))
            i++;
        if (i >= len)
            return 0;
        if (s[i] == '"')
            return i;
        if (s[i] != '\\')
            return 0; /* a control character */
        if (++i >= len)
            return 0;
        switch (s[i]) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            i++;
            continue;
        case 'u': break;
        default: return 0;
        }
        if (i + 4 >= len)
            return 0;
        int u = hex4((const char *)s + i + 1);
        if (u < 0 || (u >= 0xDC00 && u <= 0xDFFF))
            return 0;
        i += 5;
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (i + 5 >= len || s[i] != '\\' || s[i + 1] != 'u')
                return 0;
            int lo = hex4((const char *)s + i + 2);
            if (lo < 0xDC00 || lo > 0xDFFF)
                return 0;
            i += 6;
        }
    }
}

static size_t skip_digits(const unsigned char *s, size_t pos, size_t len)
{
    while (pos < len && s[pos] >= '0' && s[pos] <= '9')
        pos++;
    return pos;
}

/* A number or a literal at pos, as number_ok() and literal_is() accept them:
 * the offset just past it, or 0 when it is invalid. What follows is checked
 * by the caller. */
static size_t read_primitive(const unsigned char *s, size_t pos, size_t len)
{
    unsigned char c = s[pos];
    if (c == 't' || c == 'f' || c == 'n') {
        const char *lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
        size_t n = c == 'f' ? 5 : 4;
        return len - pos >= n && memcmp(s + pos, lit, n) == 0 ? pos + n : 0;
    }
    if (c == '-')
        pos++;
    if (pos < len && s[pos] == '0') {
        pos++;
    } else {
        size_t digits = pos;
        if ((pos = skip_digits(s, pos, len)) == digits)
            return 0;
    }
    if (pos < len && s[pos] == '.') {
        size_t digits = ++pos;
        if ((pos = skip_digits(s, pos, len)) == digits)
            return 0;
    }
    if (pos < len && (s[pos] == 'e' || s[pos] == 'E')) {
        pos++;
        if (pos < len && (s[pos] == '+' || s[pos] == '-'))
            pos++;
        size_t digits = pos;
        if ((pos = skip_digits(s, pos, len)) == digits)
            return 0;
    }
    return pos;
}

/* Whether text is one valid JSON value; the tokens are in r when it is. The
 * open containers are kept in a stack bounded by JSON_MAX_DEPTH, so no input
 * can make the reader recurse or nest further. */
static bool read_document(reader *r, const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t pos = 0;
    int open[JSON_MAX_DEPTH];
    int depth = 0;
    int parent = -1; /* what the next value belongs to: a key, an array, or nothing */
    int tok;
#define SKIP_WS()                                                                                                  \
    while (pos < len && is_ws((char)s[pos]))                                                                       \
    pos++
    SKIP_WS();
    if (pos >= len)
        return false;
    for (;;) {
        /* a value */
        if (pos >= len)
            return false;
        unsigned char c = s[pos];
        if (c == '"') {
            size_t end;
            if ((tok = new_token(r, JSMN_STRING, pos + 1, parent)) < 0 || !(end = read_string(s, pos, len)))
                return false;
            r->tokens[tok].end = (int)end;
            pos = end + 1;
        } else if (c == '{' || c == '[') {
            if (depth == JSON_MAX_DEPTH)
                return false;
            if ((tok = new_token(r, c == '{' ? JSMN_OBJECT : JSMN_ARRAY, pos, parent)) < 0)
                return false;
            open[depth++] = tok;
            pos++;
            SKIP_WS();
            if (pos < len && s[pos] == (c == '{' ? '}' : ']')) {
                r->tokens[tok].end = (int)++pos;
                depth--;
            } else if (c == '[') {
                parent = tok;
                continue;
            } else {
                goto key;
            }
        } else {
            size_t end;
            if ((tok = new_token(r, JSMN_PRIMITIVE, pos, parent)) < 0 || !(end = read_primitive(s, pos, len)))
                return false;
            r->tokens[tok].end = (int)end;
            pos = end;
        }
        /* after a value: a separator, or the end of its container(s) */
        for (;;) {
            SKIP_WS();
            if (depth == 0)
                return pos == len;
            if (pos >= len)
                return false;
            int container = open[depth - 1];
            bool object = r->tokens[container].type == JSMN_OBJECT;
            c = s[pos++];
            if (c == ',') {
                SKIP_WS();
                if (object)
                    goto key;
                parent = container;
                break;
            }
            if (c != (object ? '}' : ']'))
                return false;
            r->tokens[container].end = (int)pos;
            depth--;
        }
        continue;
    key:
        /* pos is at what must be a member's key */
        if (pos >= len || s[pos] != '"')
            return false;
        {
            size_t end;
            if ((tok = new_token(r, JSMN_STRING, pos + 1, open[depth - 1])) < 0 || !(end = read_string(s, pos, len)))
                return false;
            r->tokens[tok].end = (int)end;
            pos = end + 1;
        }
        SKIP_WS();
        if (pos >= len || s[pos] != ':')
            return false;
        pos++;
        SKIP_WS();
        parent = tok;
    }
#undef SKIP_WS
}

int json_doc_parse(json_doc *self, const char *text, size_t len, ecp_error *err)
{
    memset(self, 0, sizeof *self);
    if (len > (size_t)INT32_MAX - 2)
        return ecp_error_set(err, ECP_ETOOBIG, "JSON text of %zu bytes is too large", len);
    /* Every value takes at least two bytes with its separator (a container
     * its two brackets), so a small message gets an array that fits it
     * without being grown, and small enough for the allocator's fast path. */
    int cap = len / 2 + 2 < 64 ? (int)(len / 2 + 2) : 64;
    reader r = {.tokens = xmalloc(sizeof(jsmntok_t) * (size_t)cap), .cap = cap};
    if (!read_document(&r, text, len)) {
        free(r.tokens);
        return json_doc_parse_reference(self, text, len, err);
    }
    self->text = text;
    self->len = len;
    self->tokens = r.tokens;
    self->count = r.count;
    self->cap = r.cap;
    return 0;
}

void json_doc_free(json_doc *self)
{
    free(self->tokens);
    self->tokens = NULL;
    self->count = self->cap = 0;
}

json_ref json_root(const json_doc *self) { return self->count > 0 ? 0 : JSON_NO_REF; }

static bool valid_ref(const json_doc *self, json_ref ref) { return ref >= 0 && ref < self->count; }

json_type json_type_of(const json_doc *self, json_ref ref)
{
    if (!valid_ref(self, ref))
        return JSON_ABSENT;
    const jsmntok_t *t = &TOKENS(self)[ref];
    switch (t->type) {
    case JSMN_OBJECT: return JSON_OBJECT;
    case JSMN_ARRAY: return JSON_ARRAY;
    case JSMN_STRING: return JSON_STRING;
    case JSMN_PRIMITIVE:
        switch (self->text[t->start]) {
        case 't':
        case 'f': return JSON_BOOL;
        case 'n': return JSON_NULL;
        default: return JSON_NUMBER;
        }
    default: return JSON_ABSENT;
    }
}

const char *json_type_name(json_type type)
{
    switch (type) {
    case JSON_ABSENT: return "absent";
    case JSON_NULL: return "null";
    case JSON_BOOL: return "boolean";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    }
    return "?";
}

/* The token after ref's whole subtree. */
static json_ref skip_subtree(const json_doc *self, json_ref ref)
{
    const jsmntok_t *t = TOKENS(self);
    int end = t[ref].end;
    json_ref j = ref + 1;
    while (j < self->count && t[j].start < end)
        j++;
    return j;
}

json_ref json_first(const json_doc *self, json_ref container)
{
    json_type type = json_type_of(self, container);
    if ((type != JSON_ARRAY && type != JSON_OBJECT) || TOKENS(self)[container].size == 0)
        return JSON_NO_REF;
    return container + 1;
}

json_ref json_next(const json_doc *self, json_ref ref)
{
    if (!valid_ref(self, ref))
        return JSON_NO_REF;
    const jsmntok_t *t = TOKENS(self);
    int parent = t[ref].parent;
    if (parent < 0)
        return JSON_NO_REF;
    /* stepping over a key means stepping over its value too */
    json_ref after = t[parent].type == JSMN_OBJECT ? skip_subtree(self, ref + 1) : skip_subtree(self, ref);
    if (after >= self->count || t[after].parent != parent)
        return JSON_NO_REF;
    return after;
}

size_t json_length(const json_doc *self, json_ref container)
{
    json_type type = json_type_of(self, container);
    if (type != JSON_ARRAY && type != JSON_OBJECT)
        return 0;
    return (size_t)TOKENS(self)[container].size;
}

json_ref json_array_at(const json_doc *self, json_ref array, size_t index)
{
    if (json_type_of(self, array) != JSON_ARRAY)
        return JSON_NO_REF;
    json_ref e = json_first(self, array);
    for (size_t i = 0; e != JSON_NO_REF && i < index; i++)
        e = json_next(self, e);
    return e;
}

bool json_string_eq(const json_doc *self, json_ref ref, const char *s)
{
    if (json_type_of(self, ref) != JSON_STRING)
        return false;
    const jsmntok_t *t = &TOKENS(self)[ref];
    const char *body = self->text + t->start;
    size_t len = (size_t)(t->end - t->start), slen = strlen(s);
    if (!memchr(body, '\\', len))
        return len == slen && memcmp(body, s, len) == 0;
    char small[256];
    char *tmp = len <= sizeof small ? small : xmalloc(len);
    long n = unescape_to(body, len, tmp);
    bool eq = n >= 0 && (size_t)n == slen && memcmp(tmp, s, slen) == 0;
    if (tmp != small)
        free(tmp);
    return eq;
}

json_ref json_get(const json_doc *self, json_ref object, const char *key)
{
    if (json_type_of(self, object) != JSON_OBJECT)
        return JSON_NO_REF;
    size_t key_len = strlen(key);
    bool plain_key = !memchr(key, '\\', key_len);
    const jsmntok_t *t = TOKENS(self);
    /* the keys are walked over the tokens themselves: each value's subtree
     * is stepped over once, with no check that the caller's ref is sound
     * (json_type_of did it) */
    int keys = t[object].size;
    json_ref k = object + 1;
    for (int n = 0; n < keys; n++) {
        const char *body = self->text + t[k].start;
        size_t len = (size_t)(t[k].end - t[k].start);
        /* Equal bytes are an equal key unless the key itself holds a
         * backslash; a body with escapes is longer than what it decodes
         * to, so only a longer one needs decoding. */
        if (plain_key && len == key_len) {
            if (memcmp(body, key, len) == 0)
                return k + 1;
        } else if ((!plain_key || (len > key_len && memchr(body, '\\', len))) && json_string_eq(self, k, key)) {
            return k + 1;
        }
        if (n + 1 < keys)
            k = skip_subtree(self, k + 1);
    }
    return JSON_NO_REF;
}

/* memcmp for the few bytes of a key, without a call */
static inline bool same_bytes(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

void json_get_members(const json_doc *self, json_ref object, const char *const *names, const size_t *name_lens,
                      size_t count, json_ref *out)
{
    for (size_t i = 0; i < count; i++)
        out[i] = JSON_NO_REF;
    if (json_type_of(self, object) != JSON_OBJECT)
        return;
    const jsmntok_t *t = TOKENS(self);
    int keys = t[object].size;
    json_ref k = object + 1;
    for (int n = 0; n < keys; n++) {
        const char *body = self->text + t[k].start;
        size_t len = (size_t)(t[k].end - t[k].start);
        int escaped = -1; /* not looked at yet: most keys never need to be */
        for (size_t i = 0; i < count; i++) {
            if (out[i] != JSON_NO_REF)
                continue;
            /* Equal bytes are the name (the names hold no backslash); a body
             * with escapes is longer than what it decodes to, so only a
             * longer one may still spell it. */
            bool match;
            if (len == name_lens[i]) {
                match = same_bytes(body, names[i], len);
            } else if (len > name_lens[i]) {
                if (escaped < 0)
                    escaped = memchr(body, '\\', len) != NULL;
                match = escaped && json_string_eq(self, k, names[i]);
            } else {
                match = false;
            }
            if (match) {
                out[i] = k + 1;
                break;
            }
        }
        if (n + 1 < keys)
            k = skip_subtree(self, k + 1);
    }
}

bool json_bool(const json_doc *self, json_ref ref, bool *out)
{
    if (json_type_of(self, ref) != JSON_BOOL)
        return false;
    *out = self->text[TOKENS(self)[ref].start] == 't';
    return true;
}

bool json_double(const json_doc *self, json_ref ref, double *out)
{
    if (json_type_of(self, ref) != JSON_NUMBER)
        return false;
    const jsmntok_t *t = &TOKENS(self)[ref];
    char tmp[64];
    size_t len = (size_t)(t->end - t->start);
    if (len >= sizeof tmp) {
        /* very long literals are rare; parse a private copy */
        char *big = xstrndup(self->text + t->start, len);
        *out = strtod(big, NULL);
        free(big);
        return true;
    }
    memcpy(tmp, self->text + t->start, len);
    tmp[len] = '\0';
    *out = strtod(tmp, NULL);
    return true;
}

bool json_int64(const json_doc *self, json_ref ref, int64_t *out)
{
    if (json_type_of(self, ref) != JSON_NUMBER)
        return false;
    const jsmntok_t *t = &TOKENS(self)[ref];
    const char *s = self->text + t->start;
    size_t len = (size_t)(t->end - t->start);
    /* Nearly every number on the wire is a line, a column or an id: up to
     * 18 digits, read at once (validate() has checked the syntax). */
    size_t i = s[0] == '-';
    if (len - i <= 18) {
        int64_t v = 0;
        size_t k = i;
        while (k < len && s[k] >= '0' && s[k] <= '9')
            v = v * 10 + (s[k++] - '0');
        if (k == len) {
            *out = i ? -v : v;
            return true;
        }
    }
    bool plain = !memchr(s, '.', len) && !memchr(s, 'e', len) && !memchr(s, 'E', len);
    if (plain && len < 32) {
        char tmp[32];
        memcpy(tmp, s, len);
        tmp[len] = '\0';
        errno = 0;
        long long v = strtoll(tmp, NULL, 10);
        if (errno == ERANGE)
            return false;
        *out = v;
        return true;
    }
    double d;
    if (!json_double(self, ref, &d) || d != floor(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0)
        return false;
    *out = (int64_t)d;
    return true;
}

bool json_string(const json_doc *self, json_ref ref, arena *a, const char **out, size_t *len)
{
    if (json_type_of(self, ref) != JSON_STRING)
        return false;
    const jsmntok_t *t = &TOKENS(self)[ref];
    size_t raw = (size_t)(t->end - t->start);
    char *dst = arena_alloc(a, raw + 1);
    long n = unescape_to(self->text + t->start, raw, dst);
    if (n < 0)
        return false; /* validated at parse time; cannot happen */
    dst[n] = '\0';
    *out = dst;
    if (len)
        *len = (size_t)n;
    return true;
}

const char *json_raw(const json_doc *self, json_ref ref, size_t *len)
{
    if (!valid_ref(self, ref)) {
        *len = 0;
        return NULL;
    }
    const jsmntok_t *t = &TOKENS(self)[ref];
    *len = (size_t)(tok_end(t) - tok_begin(t));
    return self->text + tok_begin(t);
}

void json_write_value(json_writer *w, const json_doc *self, json_ref ref)
{
    /* Recursion is bounded: parsing refused anything deeper than JSON_MAX_DEPTH. */
    switch (json_type_of(self, ref)) {
    case JSON_ABSENT:
    case JSON_NULL:
        jw_null(w);
        return;
    case JSON_BOOL:
    case JSON_NUMBER: {
        size_t len;
        const char *raw = json_raw(self, ref, &len);
        jw_raw(w, raw, len);
        return;
    }
    case JSON_STRING: {
        const jsmntok_t *t = &TOKENS(self)[ref];
        buf s = BUF_INIT;
        json_unescape(self->text + t->start, (size_t)(t->end - t->start), &s);
        jw_string_n(w, s.data ? s.data : "", s.len);
        buf_free(&s);
        return;
    }
    case JSON_ARRAY:
        jw_array_begin(w);
        for (json_ref e = json_first(self, ref); e != JSON_NO_REF; e = json_next(self, e))
            json_write_value(w, self, e);
        jw_array_end(w);
        return;
    case JSON_OBJECT:
        jw_object_begin(w);
        for (json_ref k = json_first(self, ref); k != JSON_NO_REF; k = json_next(self, k)) {
            const jsmntok_t *t = &TOKENS(self)[k];
            buf key = BUF_INIT;
            json_unescape(self->text + t->start, (size_t)(t->end - t->start), &key);
            jw_key_n(w, key.data ? key.data : "", key.len);
            buf_free(&key);
            json_write_value(w, self, k + 1);
        }
        jw_object_end(w);
        return;
    }
}
