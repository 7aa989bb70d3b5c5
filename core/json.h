/* json: reading JSON text without copying it.
 *
 * The text is read in one pass into a flat array of tokens, jsmn's own
 * (JSMN_PARENT_LINKS: a member's value has its key as parent), checked as it
 * goes against RFC 8259: separators, numbers, literals, escapes (invalid ones
 * and lone surrogates are refused) and a nesting limit. On top come typed
 * lookups and full string unescaping (\uXXXX, surrogate pairs). jsmn itself
 * reads only a refused text again, for the words of the complaint.
 *
 * A value is named by a json_ref, the index of its token. JSON_NO_REF stands for
 * "absent" and every lookup accepts it and answers "absent" in turn, so chains
 * like json_get(doc, json_get(doc, root, "position"), "line") need no checks in
 * between. The document borrows `text`: keep it alive while reading.
 */
#ifndef ECPD_JSON_H
#define ECPD_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena.h"

typedef int json_ref;
#define JSON_NO_REF (-1)

/* Refuse documents nested deeper than this: deep nesting is an attack, never an edit. */
#define JSON_MAX_DEPTH 512

typedef enum json_type {
    JSON_ABSENT = 0, /* for JSON_NO_REF */
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_type;

typedef struct json_doc {
    const char *text;
    size_t len;
    void *tokens; /* jsmntok_t[cap]; jsmn's token type is anonymous */
    int count;
    int cap;
} json_doc;

/* Tokenizes and validates one JSON value (surrounding whitespace allowed).
 * Returns 0, or ECP_EPARSE with a reason in err. On failure the doc holds no
 * tokens but must still be freed. */
struct ecp_error;
int json_doc_parse(json_doc *self, const char *text, size_t len, struct ecp_error *err);
void json_doc_free(json_doc *self);

/* The same in three passes (a depth count, jsmn, then a check of the
 * tokens): json_doc_parse gives the same tokens for every text it accepts,
 * accepts exactly the texts this does, and takes a refusal's message from
 * it. Exposed so tests can hold the two to that. */
int json_doc_parse_reference(json_doc *self, const char *text, size_t len, struct ecp_error *err);

/* The top-level value (JSON_NO_REF if nothing was parsed). */
json_ref json_root(const json_doc *self);

json_type json_type_of(const json_doc *self, json_ref ref);
const char *json_type_name(json_type type);

/* Member `key` of an object (the first one if repeated), or JSON_NO_REF. */
json_ref json_get(const json_doc *self, json_ref object, const char *key);

/* Several members of an object found in one pass over its keys: out[i] is
 * the value of names[i] (the first one if repeated, as json_get), or
 * JSON_NO_REF; every out[i] is JSON_NO_REF when object is not an object.
 * name_lens[i] is strlen(names[i]); no name may hold a backslash. */
void json_get_members(const json_doc *self, json_ref object, const char *const *names, const size_t *name_lens,
                      size_t count, json_ref *out);

/* Number of elements of an array or members of an object; 0 otherwise. */
size_t json_length(const json_doc *self, json_ref container);

/* Iteration over an array's elements or an object's keys:
 *   for (json_ref e = json_first(d, arr); e != JSON_NO_REF; e = json_next(d, e))
 * For objects json_first/json_next step over keys; the value is key + 1. */
json_ref json_first(const json_doc *self, json_ref container);
json_ref json_next(const json_doc *self, json_ref ref);
json_ref json_array_at(const json_doc *self, json_ref array, size_t index);

/* Typed reads. Each returns false (and leaves *out alone) when the value is
 * absent or of another type. */
bool json_bool(const json_doc *self, json_ref ref, bool *out);
/* Integers: the literal must have no fraction or exponent part, or be a double
 * with an integral value within int64 range (so 3.0 reads as 3, 3.5 does not). */
bool json_int64(const json_doc *self, json_ref ref, int64_t *out);
bool json_double(const json_doc *self, json_ref ref, double *out);

/* Decodes a string into memory from `a` (NUL-terminated; may contain NUL bytes
 * from \u0000, hence the length). Returns false if ref is not a string. */
bool json_string(const json_doc *self, json_ref ref, arena *a, const char **out, size_t *len);

/* Compares a string value (after unescaping) with a C string. */
bool json_string_eq(const json_doc *self, json_ref ref, const char *s);

/* The value's exact source text (strings with their quotes). */
const char *json_raw(const json_doc *self, json_ref ref, size_t *len);

/* Writes the value at ref again through the writer, so what goes out is
 * valid whatever came in (invalid UTF-8 inside strings becomes U+FFFD).
 * Use it rather than json_raw to echo a client's JSON. */
struct json_writer;
void json_write_value(struct json_writer *w, const json_doc *self, json_ref ref);

/* Unescapes the body of a JSON string literal (without quotes) into out.
 * Returns false on an invalid escape or a lone surrogate. Exposed for tests. */
struct buf;
bool json_unescape(const char *s, size_t len, struct buf *out);

#endif
