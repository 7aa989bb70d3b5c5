/* glob: the file service's pattern matcher (private to services/file).
 *
 * Patterns are matched against '/'-separated paths relative to a base
 * directory. The syntax is the one editors and Bun.Glob share:
 *   `*`  any run of characters inside one path segment
 *   `?`  one character (a UTF-8 code point)
 *   `**` as a whole segment: zero or more segments
 *   `[abc]`, `[a-z]`, `[!a-z]` / `[^a-z]`  one character from (or not from) a set
 *   `{a,b}`  alternatives, nested, which may contain '/'
 *   `\x` the character x itself
 * Unless FILE__GLOB_DOT is given, a wildcard never matches a leading '.' of a
 * segment and `**` never enters a segment that starts with '.', so `**` skips
 * hidden files and directories as shells do; a pattern segment that starts
 * with a literal '.' still matches them.
 *
 * A compiled glob is immutable and may be shared between threads.
 */
#ifndef ECPD_FILE_GLOB_H
#define ECPD_FILE_GLOB_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

enum {
    FILE__GLOB_DOT = 1,      /* wildcards match leading dots too */
    FILE__GLOB_BASENAME = 2, /* a pattern without '/' matches the last segment at any depth */
};

typedef struct file__glob file__glob;

/* What a pattern may hold. Compiling and matching take stack and time in
 * proportion to these, and a pattern may come from anyone who can send a
 * request or write a settings file; real patterns stay far below them. */
#define FILE__GLOB_MAX_BRACE_DEPTH 32    /* '{' inside '{' */
#define FILE__GLOB_MAX_BRACE_GROUPS 256  /* '{' in the whole pattern */
#define FILE__GLOB_MAX_SEGMENTS 1024     /* '/'-separated parts */
#define FILE__GLOB_MAX_EXPANSION (1 << 20) /* bytes brace expansion may write */

/* Compiles pattern. Fails with ECP_EINVAL and a message naming the problem and
 * its byte offset ("unclosed '[' at offset 3") for an unclosed class or brace,
 * a trailing backslash, or one of the limits above passed ("pattern nests
 * braces deeper than 32 (offset 32)"), or more than 1024 brace alternatives.
 * The caller owns *out and frees it with file__glob_free. */
int file__glob_compile(const char *pattern, unsigned flags, file__glob **out, ecp_error *err);
void file__glob_free(file__glob *self);

/* True when the relative path (len bytes, no leading '/') matches. */
bool file__glob_match(const file__glob *self, const char *path, size_t len);

/* True when some path strictly below directory `dir` (relative; "" for the
 * base itself) could match, so a walker may skip directories that cannot. */
bool file__glob_could_match_below(const file__glob *self, const char *dir, size_t len);

/* True when `pattern` holds no glob syntax at all (no * ? [ { or \). */
bool file__glob_is_literal(const char *pattern);

/* Matches one segment pattern against one name (for tests and for callers that
 * match a single name). */
bool file__glob_match_segment(const char *pattern, size_t plen, const char *name, size_t nlen, bool dot);

/* A growing list of owned strings (a walk's directories, a pattern's
 * expansions). */
typedef struct file__strlist {
    char **items;
    size_t n, cap;
} file__strlist;

void file__strlist_push(file__strlist *l, char *s); /* takes s */
void file__strlist_free(file__strlist *l);           /* frees the strings; the list is empty again */

#endif
