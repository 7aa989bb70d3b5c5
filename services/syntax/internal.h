/* internal: what the syntax service's own files share.
 *
 * grammar.c knows the languages (ids, extensions, grammars and their query
 * files) and compiles a grammar's highlight query once, on whichever thread
 * first needs it. highlight.c turns a tree and its text into tokens: it runs
 * the query over a byte range, evaluates the predicates the runtime
 * leaves to its caller, lets the last pattern win on a node and an inner
 * node win over the node around it, and cuts the result into lines.
 * local.c follows documents, their parses and the theme; texts.c
 * highlights texts handed to the service and keeps them as sessions.
 */
#ifndef ECPD_SYNTAX_INTERNAL_H
#define ECPD_SYNTAX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <tree_sitter/api.h>
#include <uv.h>

#include "interface.h"

/* ----- grammars ---------------------------------------------------------------------------- */

/* One compiled predicate of one pattern. */
typedef enum predicate_kind { PRED_EQ_STRING, PRED_EQ_CAPTURE, PRED_MATCH, PRED_ANY_OF } predicate_kind;

typedef struct predicate {
    predicate_kind kind;
    bool negated;
    uint32_t capture;
    uint32_t other_capture;   /* PRED_EQ_CAPTURE */
    const char *text;         /* PRED_EQ_STRING; owned by the query */
    uint32_t text_len;
    pcre2_code *regex;        /* PRED_MATCH */
    const char **choices;     /* PRED_ANY_OF; the strings are owned by the query */
    uint32_t *choice_lens;
    size_t choice_count;
} predicate;

typedef struct pattern_predicates {
    predicate *items;
    size_t count;
} pattern_predicates;

/* A grammar and its highlight query, compiled on first use. */
typedef struct syntax_grammar {
    const char *name;                   /* "c", "tsx" */
    const TSLanguage *(*language)(void); /* NULL when the grammar was not built */
    const char *query_files[4];         /* relative to the grammar directory, concatenated in order */
    const char *injection_file;         /* injections.scm, or NULL */
    uv_mutex_t lock;                    /* guards the loading below */
    bool loaded;                        /* tried: query (or failed) is final */
    bool failed;
    TSQuery *query;
    pattern_predicates *predicates;     /* per pattern */
    const char **capture_scopes;        /* per capture: the scope its tokens carry (see syntax_scope_of) */
    bool *capture_hidden;               /* per capture: names starting with '_' */
    TSQuery *injections;                /* NULL: nothing is injected into this language */
    const char **injection_language;    /* per injection pattern: its #set! injection.language, or NULL */
    uint32_t injection_language_capture, injection_content_capture; /* UINT32_MAX when absent */
    const char **capture_colors;        /* per capture, loop only: the current theme's colour (cache) */
    bool *capture_color_known;
} syntax_grammar;

typedef struct syntax_grammars syntax_grammars;

syntax_grammars *syntax_grammars_new(const char *query_dir, ecp_logger *log);
void syntax_grammars_free(syntax_grammars *self);
ecp_logger *syntax_grammars_log(syntax_grammars *self);

/* The grammar of a language id ("typescriptreact" is tsx), NULL when the id
 * has none here. */
syntax_grammar *syntax_grammars_find(syntax_grammars *self, const char *language_id);

/* The grammar an injection names: a fence's info string ("py", "c++"), an
 * html <script>'s "javascript", markdown's "markdown_inline". */
syntax_grammar *syntax_grammars_find_injected(syntax_grammars *self, const char *name);

/* Any thread: compiles the query once; false (and a log line, once) when the
 * grammar or its query cannot be used, which turns that language off only. */
bool syntax_grammar_ready(syntax_grammars *self, syntax_grammar *g);

/* Loop: empties every grammar's colour cache (the theme changed). */
void syntax_grammars_forget_colors(syntax_grammars *self);

/* The language ids the catalogue names, and which of them have a grammar. */
const char *const *syntax_catalogue_languages(size_t *count);

/* ----- highlighting -------------------------------------------------------------------------- */

/* A highlighted piece of one line: bytes [start, end) of the line, a
 * capture of grammar's query. */
typedef struct raw_token {
    uint32_t start, end;
    uint32_t capture;
    const syntax_grammar *grammar;
} raw_token;

typedef struct raw_line {
    raw_token *tokens;
    uint32_t count;
} raw_line;

/* Text with its line starts: line i is bytes [starts[i], starts[i+1] - 1). */
typedef struct line_index {
    size_t *starts; /* count + 1 entries; the last is len + 1 */
    size_t count;
} line_index;

void line_index_build(line_index *out, const char *text, size_t len);
void line_index_free(line_index *self);
/* The line holding byte offset. */
size_t line_index_line_of(const line_index *self, size_t offset);
/* Applies one replacement (bytes [offset, offset + deleted) of the old text
 * became `inserted` bytes of new_text), in O(lines after it). */
void line_index_replace(line_index *self, const char *new_text, size_t new_len, size_t offset, size_t deleted,
                        size_t inserted);

/* The tokens of lines [first, first + count) of text under tree, each line
 * up to SYNTAX_LINE_BYTES. out has count entries; free each with
 * free(out[i].tokens). Reads the tree only: any thread that owns the tree
 * (or a copy of it). */
void syntax_highlight_lines(const syntax_grammar *g, const TSTree *tree, const char *text, size_t len,
                            const line_index *lines, size_t first, size_t count, raw_line *out);

/* Bytes of a line to columns of enc, for tokens sorted by start. */
void syntax_tokens_to_columns(const char *line, size_t len, const raw_token *in, size_t count,
                              ecp_position_encoding enc, size_t *starts, size_t *ends);

/* How much of one line is highlighted: tokens are computed on the loop for
 * the lines asked, and a minified line of megabytes would hold it for
 * seconds (and answer with millions of tokens). Past this many bytes a line
 * has no tokens. */
#define SYNTAX_LINE_BYTES ((size_t)16 << 10)
/* The largest text parsed; larger documents stay plain text. */
#define SYNTAX_MAX_BYTES ((size_t)16 << 20)
/* How long one parse may take before the text stays plain. */
#define SYNTAX_PARSE_TIMEOUT_US 10000000ull

/* Parses text (old: the previous tree, edited, or NULL), or only bytes
 * [range->start_byte, range->end_byte) of it when range is not NULL. NULL,
 * with *why (may be NULL) saying so, when the parse takes longer than
 * SYNTAX_PARSE_TIMEOUT_US. */
TSTree *syntax_parse(const syntax_grammar *g, const TSTree *old, const char *text, size_t len,
                     const TSRange *range, const char **why);

/* ----- injections ------------------------------------------------------------------------------ */

/* Text of another language inside a document (a markdown code fence, an
 * html <script>): parsed on its own over its bytes only (included ranges),
 * so its positions are the document's. */
typedef struct syntax_layer {
    syntax_grammar *grammar;
    TSTree *tree;
    uint32_t start, end; /* the bytes it covers */
    bool edited;         /* an edit touched it since it was parsed */
} syntax_layer;

typedef struct syntax_layers {
    syntax_layer *items; /* sorted by start */
    size_t count;
} syntax_layers;

/* Any thread: the layers host's injection query finds in tree, and the
 * layers inside those (a fence of html holding a <script>), parsed.
 * previous (may be NULL): the layers of the last parse, edited to match
 * text; a layer in the same place that no edit touched keeps its tree, an
 * edited one is reparsed from it. */
void syntax_layers_build(syntax_grammars *grammars, const syntax_grammar *host, const TSTree *tree, const char *text,
                         size_t len, const syntax_layers *previous, syntax_layers *out);
/* A copy sharing the trees (ts_tree_copy), for a parse off the loop. */
void syntax_layers_copy(const syntax_layers *from, syntax_layers *to);
void syntax_layers_free(syntax_layers *self);
/* Applies an edit of the text to every layer: trees and ranges shift with it. */
void syntax_layers_edit(syntax_layers *self, const TSInputEdit *edit);

/* syntax_highlight_lines with the layers' tokens merged in: inside a
 * layer's bytes its tokens win over the host's. */
void syntax_highlight_layered(const syntax_grammar *g, const TSTree *tree, const syntax_layers *layers,
                              const char *text, size_t len, const line_index *lines, size_t first, size_t count,
                              raw_line *out);

/* ----- highlighted texts: one-shot highlights and syntax sessions (texts.c) ------------------ */

/* A text with its tokens, made in full on a pool thread. */
struct syntax_text {
    const syntax_grammar *grammar; /* NULL: plain text */
    char *text;
    size_t len;
    line_index lines;
    raw_line *raw; /* lines.count entries (NULL for plain text) */
    double parse_ms;
};

/* Where the colour of a capture comes from: the loop's cache of the current
 * theme (syntax_capture_color, ctx the service), or a job's own. */
typedef const char *(*syntax_color_fn)(void *ctx, const syntax_grammar *g, uint32_t capture);

/* Any thread: takes text (malloc'd) and highlights all of it. g NULL, a
 * query that does not load, a text over SYNTAX_MAX_BYTES or a parse that
 * times out give plain text. */
syntax_text *syntax_text_build(syntax_grammars *grammars, syntax_grammar *g, char *text, size_t len);
void syntax_text_free(syntax_text *self);

/* One line's raw tokens as tokens in enc with color's colours
 * (out->tokens malloc'd; NULL when there are none). */
void syntax_render_line(syntax_color_fn color, void *color_ctx, const char *line, size_t len, const raw_line *raw,
                        ecp_position_encoding enc, syntax_line *out);

typedef struct syntax_session {
    char *id;
    char *document_id;
    char *language_id;
    uint64_t version;
    syntax_text *text;
} syntax_session;

/* The sessions, searched by id in a list: a client keeps a few. */
typedef struct syntax_sessions {
    syntax_session **items;
    size_t count, cap;
    uint64_t serial;
} syntax_sessions;

void syntax_sessions_free(syntax_sessions *self);

syntax_metrics *syntax_service_metrics(syntax_service *self);
ecp_job_set *syntax_service_jobs(syntax_service *self);
syntax_grammars *syntax_service_grammars(syntax_service *self);
syntax_sessions *syntax_service_sessions(syntax_service *self);

/* Loop: the current theme's colour of a capture (cached per grammar). */
const char *syntax_capture_color(syntax_service *self, const syntax_grammar *g, uint32_t capture);
/* The same as a syntax_color_fn, ctx the service. */
const char *syntax_loop_color(void *ctx, const syntax_grammar *g, uint32_t capture);
/* Loop: the current theme (static data), NULL without a session service. */
const struct session_theme *syntax_service_theme(syntax_service *self);

/* ----- structure (structure.c): what it reads of a followed document ---------------------------- */

/* A followed document as it stands on the loop: its tree, edited to match
 * its text. Valid until the loop hears of the next change. */
typedef struct syntax_doc_view {
    const syntax_grammar *grammar; /* NULL: no grammar */
    const TSTree *tree;            /* NULL: plain text, or its first parse has not landed */
    const char *text;              /* with tree only */
    size_t len;
    const line_index *lines;
} syntax_doc_view;

/* ECP_ENOTFOUND ("Document not found: <id>") when the service does not follow it. */
int syntax_document_view(syntax_service *self, const char *document_id, syntax_doc_view *out, ecp_error *err);
struct document_service *syntax_service_documents(syntax_service *self);
/* Where the grammars' query files are. */
const char *syntax_grammars_dir(syntax_grammars *self);
/* The scope a capture's tokens carry: markup's two families of capture
 * names become the markup.* scopes; any other name is its own scope. */
const char *syntax_scope_of(const char *capture);

#endif
