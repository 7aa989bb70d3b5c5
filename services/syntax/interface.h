/* syntax: highlighting on tree-sitter.
 *
 * The syntax service gives every open document whose language has a grammar
 * a syntax tree, and turns trees into tokens coloured by the current theme.
 *
 * What it promises:
 * - A document is parsed off the loop, from a snapshot, when it opens; each
 *   change is applied to its tree at once (ts_tree_edit, on the loop, so the
 *   tree's positions always match the text) and reparsed incrementally off
 *   the loop. When a reparse lands, the lines whose tokens may have changed
 *   (the edited lines and tree-sitter's changed ranges) are reported through
 *   on_tokens, so a client repaints only those.
 * - Tokens are computed from the latest tree when asked for, for the lines
 *   asked: syntax_document_tokens never waits for a parse. Between an edit
 *   and its reparse the tokens come from the edited old tree: stale but
 *   shifted to the new text.
 * - A token is one highlighted span of one line: {start, end} columns in the
 *   caller's encoding, `scope` the capture name ("keyword", "function.method"),
 *   `color` the current theme's colour for it (NULL when the theme has none).
 *   Whitespace-only spans are not tokens. A line is highlighted in its first
 *   16 KiB only (a minified line of megabytes would hold the loop for
 *   seconds); past that it has no tokens. Predicates of the highlight queries
 *   (#eq?, #match?, #any-of? and their not- forms) are applied, and when
 *   several patterns capture one node the last one wins.
 * - Languages inside others are highlighted with their own grammars, found
 *   by the host grammar's injections.scm: markdown code fences (the info
 *   string names the language), html <script> and <style>, and markdown's
 *   inline text (emphasis, code spans, links). Each is parsed off the loop
 *   with its document, over its own bytes, and its tokens paint over the
 *   host's where it has tokens.
 * - A language without a grammar, a document larger than SYNTAX_MAX_BYTES
 *   (16 MiB), or a parse that takes longer than 10 s (20 s of processor
 *   time when watched, as below) stays plain text (no tokens), with a log
 *   line; a grammar whose query fails to load turns off that language only.
 * - A text whose tree could hold a node of 65,536 children (the 0.20 runtime
 *   counts them in 16 bits and dies freeing such a tree), from 65,535
 *   unclosed tokens or comments in a row, stays plain text with a log line:
 *   a text of more than ~32,000 tokens is parsed under a watch of the parse
 *   stack that cancels it first.
 * - A theme change (the session service's current theme) recolours every
 *   document: on_tokens reports all of its lines.
 *
 * Threads: every function runs on the loop thread.
 */
#ifndef ECPD_SYNTAX_INTERFACE_H
#define ECPD_SYNTAX_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "job.h"
#include "log.h"
#include "utf.h"

struct document_service;
struct session_service;

typedef struct syntax_service syntax_service;

/* Follows every document of `documents` (open now and later) and takes its
 * colours from `session`'s current theme. All three of pool, documents and
 * session (and log, may be NULL) are borrowed and must outlive the service.
 * query_dir holds the grammars' query files (third_party/grammars); NULL
 * uses the directory the build found. */
syntax_service *syntax_service_new(ecp_pool *pool, ecp_logger *log, struct document_service *documents,
                                   struct session_service *session, const char *query_dir);

/* Stops following documents, withdraws parses still running and frees all. */
void syntax_service_free(syntax_service *self);

/* ----- languages ------------------------------------------------------------------------------- */

/* Whether language_id (a catalogue id: "typescriptreact", "sh") is
 * highlighted here: it has a grammar and its query loads. */
bool syntax_language_supported(syntax_service *self, const char *language_id);

/* Calls fn for every catalogue language id that is highlighted here. */
void syntax_languages(syntax_service *self, void (*fn)(void *ctx, const char *language_id), void *ctx);

/* The language of a file path or uri by its extension; NULL when unknown. */
const char *syntax_language_detect(const char *path);

/* ----- tokens ---------------------------------------------------------------------------------- */

typedef struct syntax_token {
    size_t start, end;   /* columns in the caller's encoding; end exclusive */
    const char *scope;   /* the capture name; valid as long as the service */
    const char *color;   /* "#rrggbb", or NULL; static data */
} syntax_token;

typedef struct syntax_line {
    syntax_token *tokens;
    size_t count;
} syntax_line;

/* Frees what syntax_document_tokens returned. */
void syntax_lines_free(syntax_line *lines, size_t count);

/* The tokens of lines [first, first + count) of a document, from its latest
 * tree, without waiting: *out receives min(count, lines left) lines (malloc'd;
 * free with syntax_lines_free), each possibly empty. A document in plain
 * text, or whose first parse has not landed yet, has lines without tokens.
 * ECP_ENOTFOUND when the service does not know the document. */
int syntax_document_tokens(syntax_service *self, const char *document_id, size_t first, size_t count,
                           ecp_position_encoding enc, syntax_line **out, size_t *out_count, ecp_error *err);

/* Whether a document has a tree at its current version (no parse pending). */
bool syntax_document_settled(syntax_service *self, const char *document_id);

/* ----- events ----------------------------------------------------------------------------------- */

typedef struct syntax_line_range {
    size_t start_line, end_line; /* inclusive */
} syntax_line_range;

typedef struct syntax_listener {
    /* The tokens of these lines of document_id (at `version`) may have
     * changed: a parse landed or the theme changed. */
    void (*on_tokens)(void *ctx, const char *document_id, uint64_t version, const syntax_line_range *ranges,
                      size_t count);
} syntax_listener;

void syntax_subscribe(syntax_service *self, const syntax_listener *listener, void *ctx);
void syntax_unsubscribe(syntax_service *self, const syntax_listener *listener, void *ctx);

#endif
