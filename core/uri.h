/* uri: file:// URIs and paths, per RFC 3986 and RFC 8089.
 *
 * On output a path becomes `file://` plus the path with every byte outside
 * RFC 3986's unreserved set, '/' and a few safe sub-delimiters percent-encoded
 * (a space is %20, '#' is %23, non-ASCII bytes are %XX each), so any URI we send
 * parses back to the same path. On input we accept encoded and unencoded
 * `file://` URIs (a literal '%' not followed by two hex digits is kept as is),
 * `file://localhost/...`, and plain absolute paths.
 */
#ifndef ECPD_URI_H
#define ECPD_URI_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

struct ecp_error;

/* Appends the URI of an absolute path to out. */
void uri_from_path(buf *out, const char *path, size_t len);

/* The scheme of a URI ("file", "memory", ...) as a pointer/length into uri;
 * returns false when there is none (a plain path). */
bool uri_scheme(const char *uri, size_t len, const char **scheme, size_t *scheme_len);

/* Appends the absolute path named by a file:// URI or a plain absolute path.
 * Fails with ECP_ENOPROVIDER for another scheme and ECP_EBADURI for a
 * relative path, a remote host, a NUL byte or a malformed URI. The path is
 * returned as given (no normalisation of "..": callers decide). */
int uri_to_path(const char *uri, size_t len, buf *out, struct ecp_error *err);

/* Appends the lexical normal form of an absolute path: "." and empty
 * segments are dropped and ".." removes the segment before it (never going
 * above the root), as URL parsing does. */
void uri_path_normalize(buf *out, const char *path, size_t len);

/* The one way a URI names a file: appends the normalised absolute path
 * (uri_to_path, then uri_path_normalize) of a file:// URI or a plain absolute
 * path. Every service that turns URIs into paths goes through here, so that
 * two services never disagree on which file a URI names. Fails as
 * uri_to_path does. */
int uri_file_path(const char *uri, size_t len, buf *out, struct ecp_error *err);

/* Appends the percent-decoded form of s. Invalid escapes are kept literally. */
void uri_percent_decode(buf *out, const char *s, size_t len);

/* ----- paths ----- */

/* Whether the absolute path is dir or lies below it (every path lies below
 * "/"). Both are compared as written: normalise or resolve them first. */
bool uri_path_within(const char *path, const char *dir);

#endif
