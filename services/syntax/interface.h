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
 *   (16 MiB), or a parse that takes longer than 10 s stays plain text (no
 *   tokens), with a log line; a grammar whose query fails to load turns off
 *   that language only.
 * - A theme change (the session service's current theme, the
 *   workbench.colorTheme setting, which the service follows itself)
 *   recolours every document: on_tokens reports all of its lines.
 * - A text handed to it (a one-shot highlight, a session's text) is
 *   highlighted whole on the pool, as a job the service owns: the call
 *   returns the job at once and its callback runs once, on the loop, with
 *   the tokens. A one-shot highlight's answer may be written on the pool
 *   too (a format), coloured by the theme current when it was asked.
 *   Sessions keep such a text and its tokens until disposed, coloured by
 *   the current theme when read.
 *
 * Threads: every function runs on the loop thread.
 */
#ifndef ECPD_SYNTAX_INTERFACE_H
#define ECPD_SYNTAX_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "error.h"
#include "job.h"
#include "log.h"
#include "shared.h"
#include "utf.h"

struct document_service;
struct session_service;

typedef struct syntax_service syntax_service;

/* Follows every document of `documents` (open now and later) and takes its
 * colours from `session`'s current theme. All three of pool, documents and
 * session (and log, may be NULL) are borrowed and must outlive the service.
 * query_dir holds the grammars' query files; NULL uses <prefix>/share/ecpd/grammars
 * when the program is installed, else the directory the build found. */
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

/* ----- highlighting texts ---------------------------------------------------------------------- */

/* A text highlighted whole: its bytes, its lines and their tokens. Owned by
 * the service (a callback's result, or a session's text). */
typedef struct syntax_text syntax_text;

/* The lines of t (a text of n '\n' has n + 1). */
size_t syntax_text_line_count(const syntax_text *t);

/* Line `line` of t as tokens, coloured by the current theme: out->tokens is
 * malloc'd (free it), empty for plain text and past the last line. */
void syntax_text_line_tokens(syntax_service *self, const syntax_text *t, size_t line, ecp_position_encoding enc,
                             syntax_line *out);

/* Every start below takes a copy of what its args point at before it
 * returns. `call` (may be NULL) is a request the job serves (ecp_job_serve,
 * which must come before the job starts, hence here): $/cancelRequest and a
 * disconnect cancel the job, the callback answers the call, and if the
 * service is freed first the job set answers it instead. The job belongs to
 * the service; the caller may ecp_job_cancel() it until its callback has
 * run, after which the pointer is gone. Each callback runs once, on the
 * loop, with status 0 or a negative ECP_* (ECP_ECANCELED when cancelled), or
 * never when the service is freed first; what it is handed is valid during
 * the call only. */

typedef struct syntax_highlight_result {
    const syntax_text *text;
    const char *language_id; /* as asked, or "plaintext" when it stayed plain text */
    double parse_ms;         /* parse and highlight */
} syntax_highlight_result;

typedef struct syntax_highlight_args {
    const char *language_id; /* a catalogue id; one without a grammar gives plain text */
    const char *content;     /* content_len bytes, NULs included; NULL is empty */
    size_t content_len;
    ecp_call *call;          /* may be NULL; see above */
    /* Optional: writes the answer for the result into out, on the pool
     * thread at the end of the job, so that the tokens of a big text are not
     * rendered on the loop; the callback then gets those bytes. It may read
     * the result through syntax_highlight_line_tokens only. fctx is the
     * caller's and must live until the callback (or the service's end). */
    void (*format)(void *fctx, const syntax_highlight_result *result, buf *out);
    void *fctx;
} syntax_highlight_args;

/* result and formatted are NULL unless status is 0. formatted: what
 * args->format wrote (NULL without one); a reference the callback borrows
 * (ecp_shared_ref to keep it). */
typedef void (*syntax_highlight_cb)(void *ctx, int status, const ecp_error *err,
                                    const syntax_highlight_result *result, ecp_shared *formatted);

/* Highlights a text whole, off the loop (counted in the metrics as a parse). */
ecp_job *syntax_highlight_start(syntax_service *self, const syntax_highlight_args *args, syntax_highlight_cb cb,
                                void *ctx);

/* Line `line` of a highlight's result as tokens (as syntax_text_line_tokens),
 * coloured by the theme that was current when it was asked for. In a
 * format (its pool thread) or the callback only. */
void syntax_highlight_line_tokens(const syntax_highlight_result *result, size_t line, ecp_position_encoding enc,
                                  syntax_line *out);

/* ----- sessions: highlighted texts kept by id ---------------------------------------------------- */

typedef struct syntax_session_info {
    const char *session_id;  /* "syntax-<n>-<ms>" */
    const char *document_id; /* as the creator named it; not checked against the documents */
    const char *language_id;
    uint64_t version;        /* 1, and one more for every update */
} syntax_session_info;

/* result NULL unless status is 0. */
typedef void (*syntax_session_cb)(void *ctx, int status, const ecp_error *err, const syntax_session_info *result);

typedef struct syntax_session_create_args {
    const char *document_id;
    const char *language_id;
    const char *content; /* content_len bytes */
    size_t content_len;
    ecp_call *call;      /* may be NULL; see above */
} syntax_session_create_args;

/* Highlights content off the loop and keeps it as a new session. */
ecp_job *syntax_session_create_start(syntax_service *self, const syntax_session_create_args *args,
                                     syntax_session_cb cb, void *ctx);

typedef struct syntax_session_update_args {
    const char *session_id;
    const char *content; /* content_len bytes */
    size_t content_len;
    ecp_call *call;      /* may be NULL; see above */
} syntax_session_update_args;

/* Highlights content off the loop, in the session's language, and makes it
 * the session's text. ECP_ENOTFOUND ("Session not found: <id>") when the
 * session is unknown or disposed before the text lands. */
ecp_job *syntax_session_update_start(syntax_service *self, const syntax_session_update_args *args,
                                     syntax_session_cb cb, void *ctx);

/* A session's ids, language and version (*out's strings valid until the
 * session is updated or disposed); ECP_ENOTFOUND when unknown. */
int syntax_session_get(syntax_service *self, const char *session_id, syntax_session_info *out, ecp_error *err);

/* A session's text for reading its tokens, counted as a token read in the
 * metrics; NULL when unknown. Valid until the session is updated or
 * disposed. */
const syntax_text *syntax_session_read(syntax_service *self, const char *session_id);

/* Forgets a session (an unknown id is no error). Its update in flight then
 * ends with ECP_ENOTFOUND. */
void syntax_session_dispose(syntax_service *self, const char *session_id);

/* ----- structure: folds, selection ranges, indent, symbols (structure.c) -------------------------- */

/* What editors build on a followed document's latest tree (never waiting for
 * a parse: between an edit and its reparse, the edited old tree). Folds,
 * selection ranges and symbols are computed on the pool over a copy of the
 * tree and its text, each bounded; the indent reads a few lines on the loop.
 * ECP_ENOTFOUND ("Document not found: <id>") when the service does not
 * follow the document. A document without a tree (no grammar, plain text,
 * first parse not landed) has no folds, selection ranges or symbols; its
 * indent comes from its lines. */

typedef struct syntax_fold {
    size_t start_line, end_line; /* end_line > start_line */
    bool comment;
} syntax_fold;

/* At most this many folds, the first in document order. */
#define SYNTAX_MAX_FOLDS 5000

typedef struct syntax_position {
    size_t line, column; /* column in the caller's encoding */
} syntax_position;

typedef struct syntax_range {
    syntax_position start, end; /* end exclusive */
} syntax_range;

/* A position's enclosing nodes, innermost first, the whole document last;
 * nodes of equal range appear once. */
typedef struct syntax_selection {
    syntax_range *ranges;
    size_t count;
} syntax_selection;

#define SYNTAX_MAX_SELECTION_POSITIONS 1000
/* The innermost nodes a chain holds (then the whole document): a tree as
 * deep as the parser allows would answer megabytes for one position. */
#define SYNTAX_MAX_SELECTION_DEPTH 128

typedef struct syntax_symbol {
    char *name;
    const char *tag;  /* the tags query's definition kind ("function", "class"); static data */
    int kind;         /* the LSP SymbolKind */
    syntax_range range, selection_range;
    size_t parent;    /* index of the symbol that holds it, SIZE_MAX at the top */
} syntax_symbol;

/* At most this many symbols, and nested at most this deep (deeper ones
 * join the deepest). */
#define SYNTAX_MAX_SYMBOLS 10000
#define SYNTAX_MAX_SYMBOL_DEPTH 32

/* What a request answers (the part it asked for; the rest empty). */
typedef struct syntax_structure {
    /* One fold per start line, from the innermost named node of more than
     * one line that starts there (no grammar ships a folds.scm): it ends on
     * the line before its closing line when it ends with a closing token (a
     * brace, a bracket, `end`) that starts that line's content, else on its
     * last line. Sorted by start line. */
    syntax_fold *folds;
    size_t fold_count;
    /* One selection per position asked. */
    syntax_selection *selections;
    size_t selection_count;
    /* The definitions the grammar's tags.scm finds (none for a grammar
     * without one), in document order, each after the symbol that holds it. */
    syntax_symbol *symbols;
    size_t symbol_count;
} syntax_structure;

/* result NULL unless status is 0; valid during the call only. */
typedef void (*syntax_structure_cb)(void *ctx, int status, const ecp_error *err, const syntax_structure *result);

/* Each either answers at once, calling cb before it returns NULL (an
 * unknown document, a refusal, a document without a tree), or starts a job
 * on the pool as syntax_highlight_start does (call, cancelling, the callback
 * once on the loop). */
ecp_job *syntax_document_folds_start(syntax_service *self, const char *document_id, ecp_call *call,
                                     syntax_structure_cb cb, void *ctx);
/* ECP_EINVAL for more than SYNTAX_MAX_SELECTION_POSITIONS positions, at
 * once; ECP_ERANGE ("Invalid position: ...") for one past the end of its
 * line or of the document ({line: lineCount, column: 0} is its end). */
ecp_job *syntax_document_selection_ranges_start(syntax_service *self, const char *document_id,
                                                const syntax_position *positions, size_t count,
                                                ecp_position_encoding enc, ecp_call *call, syntax_structure_cb cb,
                                                void *ctx);
ecp_job *syntax_document_symbols_start(syntax_service *self, const char *document_id, ecp_position_encoding enc,
                                       ecp_call *call, syntax_structure_cb cb, void *ctx);

void syntax_selections_free(syntax_selection *selections, size_t count);
void syntax_symbols_free(syntax_symbol *symbols, size_t count);

/* The indent (malloc'd: spaces or tabs) of a new line inserted after `line`:
 * the previous non-blank line's (at most 1,000 lines up), plus one level
 * when that line ends with `{`, `[` or `(` (or `:` in python and yaml). A
 * level is the document's own: tabs or spaces and their width, from its
 * first 1,000 lines; 4 spaces (a tab for go) when they say nothing. No
 * grammar ships an indents.scm, so this is every language's rule.
 * ECP_ERANGE when line is past the last line. */
int syntax_document_indent(syntax_service *self, const char *document_id, size_t line, char **out, ecp_error *err);

/* A document_indent_fn (ctx the service) for the document service's
 * document/newline: syntax_document_indent's answer, where the document has
 * a grammar and its tree has been parsed (1); 0 elsewhere, so that the
 * document service's own rule applies. */
int syntax_newline_indent(void *ctx, const char *document_id, size_t line, char **out);

/* ----- themes ------------------------------------------------------------------------------------ */

/* Makes theme_id the current theme (the session service's: every client's).
 * ECP_ENOTFOUND for an unknown theme, or when the service has no session
 * service to keep one. */
int syntax_theme_set(syntax_service *self, const char *theme_id, ecp_error *err);

/* The current theme's id (static data); "one-dark" without a session service. */
const char *syntax_theme_current(syntax_service *self);

/* ----- metrics ----------------------------------------------------------------------------------- */

typedef struct syntax_metrics {
    uint64_t parse_count;  /* parses of documents and texts */
    uint64_t cache_hits;   /* token reads from a kept tree or session */
    uint64_t cache_misses; /* parses */
    double parse_ms_total;
} syntax_metrics;

void syntax_metrics_get(syntax_service *self, syntax_metrics *out);
void syntax_metrics_reset(syntax_service *self);

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
