/* document: the text documents the server holds open.
 *
 * The document service owns every open document: its text (a piece tree of
 * bytes), its version, its cursors and selections, its undo history and its
 * link to a file on disk. Every client and every other service sees the same
 * documents: an edit made by one is seen by all, through the events below.
 *
 * What it promises:
 * - Every edit (insert, delete, replace, set content, multi-edit, typing) is
 *   one undoable step, bumps the version by one and makes the document dirty;
 *   undoing back to the saved state makes it clean again. Undo puts the
 *   cursors of whoever undoes back where the edit's author had them before.
 * - Many clients share the documents: a document is open while someone
 *   holds it (document_hold), each client has its own cursors in it, and
 *   unsaved edits are never closed because their client went away.
 * - The text is bytes: invalid UTF-8 is kept byte for byte from open to save.
 *   A file whose first line end is CRLF is held with LF and written back with
 *   CRLF; any other file is held exactly as it is on disk. A UTF-8 byte order
 *   mark is not text: it is kept out of the text (and of every position) and
 *   written back.
 * - One file, one document: every URI that names a file (any spelling, a
 *   symlink, another hard link) opens the same document, which keeps the URI
 *   it was first opened with.
 * - Saving never loses an edit: the file on disk is either the old one or the
 *   new one, with the old file's mode, never a mix (a file with several hard
 *   links is written in place, so that every link sees it, with its old
 *   contents kept aside until the new ones are on disk), and a failed save
 *   loses nothing and says why. Saves of one file are written in the order
 *   they were asked for, so the file ends with the last one's text. A save
 *   over a file that someone else changed since the document last matched it
 *   is refused (ECP_ECONFLICT) unless forced.
 * - Documents follow their files (once given a file service): a clean
 *   document whose file changes on disk is reloaded, as an undoable edit; a
 *   document with unsaved edits, or whose file vanished, keeps its text and is
 *   flagged (changed_on_disk, on_disk_change). A reload, asked for or not, is
 *   one undoable step, never a loss of the history.
 * - Undo history is bounded per document, in steps and in bytes
 *   (document_service_set_undo_steps, document_service_set_undo_limit): the
 *   oldest steps go first.
 * - Positions are {line, column}, 0-based; columns count units of the
 *   encoding the caller names (UTF-16 code units, bytes, or code points).
 *   A column inside a character snaps back to its start. A position past the
 *   end of its line or of the document is refused with ECP_ERANGE and a
 *   message naming it; {line: lineCount, column: 0} is accepted and means the
 *   end of the document.
 * - Answers about a part of a document cost what that part costs: nothing
 *   scans the whole text unless it asks for the whole text. The one exception
 *   is converting offsets counted in UTF-16 or UTF-32 units (the only way to
 *   count them is to decode what comes before); checkpoints make repeated
 *   conversions cheap.
 * - Change events carry incremental changes, each in the coordinates of the
 *   text just before it, with columns already computed for every encoding
 *   in use (document_service_set_encodings).
 * - Files larger than 1 MiB are read and every file is written on the thread
 *   pool (a save writes from a snapshot: nothing on the loop copies the
 *   text), and a large new text can be built there (document_replacement);
 *   everything else happens on the loop thread, which is the only
 *   thread that may call these functions, except the reads of a snapshot
 *   (below), which any thread may call.
 *
 * Errors: functions return 0 or a negative ECP_STATUS code and fill `err`
 * (which may be NULL): ECP_ENOTFOUND "Document not found", ECP_EREADONLY
 * "Document is read-only", ECP_ERANGE for positions, ECP_EINVAL for edits
 * that overlap, ECP_ENOMEM when a large allocation fails, ECP_ECONFLICT
 * "File changed on disk" for a save that would lose someone else's change.
 *
 * Strings returned in structs (ids, uris) belong to the service and stay valid
 * until the document is closed or saved under another uri, or until the next
 * call that could do either.
 */
#ifndef ECPD_DOCUMENT_INTERFACE_H
#define ECPD_DOCUMENT_INTERFACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "buf.h"
#include "error.h"
#include "job.h"
#include "log.h"
#include "utf.h"

typedef struct document_service document_service;

/* ----- lifetime ------------------------------------------------------------ */

/* Creates the service; its disk work runs as jobs on `pool`, on the pool's
 * loop. pool and `log` (may be NULL) are borrowed and must outlive the
 * service. Returns NULL when out of memory. */
document_service *document_service_new(ecp_pool *pool, ecp_logger *log);

/* The pool the service was created on, for work its adapter runs itself. */
ecp_pool *document_service_pool(const document_service *self);

/* Lets documents follow their files through `files`' watches (borrowed; it
 * must outlive this service, which removes its watches when freed): those
 * open now and those opened later. Without it no document follows its file
 * (saves still check it). Call it once. */
struct file_service;
void document_service_follow_files(document_service *self, struct file_service *files);

/* The most memory one document's undo history may hold, in bytes (its texts
 * and their bookkeeping); the oldest steps go first when a new one would
 * pass it, and a single step larger than the limit is not kept at all (the
 * history then starts over). Applies to every document at once. */
#define DOCUMENT_UNDO_MAX_BYTES ((size_t)256 << 20)
void document_service_set_undo_limit(document_service *self, size_t max_bytes);
size_t document_service_undo_limit(const document_service *self);

/* The most undo steps one document's history keeps (at least 1); the oldest
 * go first, as with the byte limit. Applies to every document at once. */
#define DOCUMENT_UNDO_MAX_STEPS ((size_t)1000)
void document_service_set_undo_steps(document_service *self, size_t max_steps);
size_t document_service_undo_steps(const document_service *self);

/* The position encodings whose columns change events must carry. Each
 * reader of document_change columns says which it reads, under a key of its
 * own (the server for its connected clients, the LSP service for its
 * language servers), as a mask of (1u << ECP_ENCODING_*) bits, and says it
 * again whenever that changes (0: none any more). The columns computed are
 * those of the union: UTF-8 ones are always there and cost nothing; UTF-16
 * and UTF-32 ones cost decoding the line up to the change, so they are
 * computed only when some reader reads them. Columns of an encoding left out
 * hold the byte counts. Until a first reader speaks, all three are
 * computed. */
#define DOCUMENT_ENCODINGS_ALL                                                                                 \
    ((1u << ECP_ENCODING_UTF8) | (1u << ECP_ENCODING_UTF16) | (1u << ECP_ENCODING_UTF32))
void document_service_set_encodings(document_service *self, const void *reader, unsigned mask);

/* Closes every document (without events) and frees the service. Opens and
 * reloads still running stop; saves already asked for finish writing first
 * (this waits for them). Every request still pending has its callback run
 * once, with ECP_ECANCELED, before this returns; such a callback must not
 * call the service. */
void document_service_free(document_service *self);

/* ----- positions and information ------------------------------------------- */

typedef struct document_position {
    size_t line;
    size_t column;
} document_position;

typedef struct document_range {
    document_position start; /* inclusive */
    document_position end;   /* exclusive; not before start */
} document_range;

typedef struct document_info {
    const char *document_id;
    const char *uri;
    const char *language_id;
    uint64_t version;
    bool is_dirty;        /* unsaved edits, or a file that changed or vanished under the text */
    bool is_read_only;
    size_t line_count;
    bool changed_on_disk; /* the file changed or vanished since the text last matched it */
} document_info;

int document_get_info(document_service *self, const char *document_id, document_info *out, ecp_error *err);

/* Calls fn for every open document, in the order they were opened. */
void document_list(document_service *self, void (*fn)(void *ctx, const document_info *info), void *ctx);

/* The language of a path or uri by its extension, "plaintext" when unknown. */
const char *document_language_of(const char *uri);

/* ----- reading text -------------------------------------------------------- */

/* Receives text in pieces, in order; a piece may end inside a multi-byte
 * sequence. The pointers are valid during the call only. */
typedef void (*document_chunk_fn)(void *ctx, const char *chunk, size_t len);

/* The text of a range (NULL: the whole document), without copying it. The
 * range is checked before fn is first called: on failure fn is never called. */
int document_read(document_service *self, const char *document_id, const document_range *range,
                  ecp_position_encoding enc, document_chunk_fn fn, void *ctx, ecp_error *err);

/* The text of one line, without its '\n'. ECP_ERANGE when line >= line count. */
int document_read_line(document_service *self, const char *document_id, size_t line, document_chunk_fn fn,
                       void *ctx, ecp_error *err);

/* What reads consecutive lines: begin and end (either may be NULL) around
 * each line, chunk with its bytes in between (none for an empty line),
 * never its '\n'. */
typedef struct document_line_reader {
    void (*begin)(void *ctx, size_t line);
    document_chunk_fn chunk;
    void (*end)(void *ctx, size_t line);
} document_line_reader;

/* Lines [first, end), end clamped to the line count (first at or past it:
 * none), in order. One lookup finds the first; the rest are read walking
 * the text, so a range of lines costs its length, not a lookup per line. */
int document_read_lines(document_service *self, const char *document_id, size_t first, size_t end,
                        const document_line_reader *reader, void *ctx, ecp_error *err);

/* The same as document_read, appending to out. */
int document_get_text(document_service *self, const char *document_id, const document_range *range,
                      ecp_position_encoding enc, buf *out, ecp_error *err);

/* Offsets count the document's units in enc from its start ('\n' is one). */
int document_position_to_offset(document_service *self, const char *document_id, const document_position *pos,
                                ecp_position_encoding enc, uint64_t *out, ecp_error *err);
int document_offset_to_position(document_service *self, const char *document_id, uint64_t offset,
                                ecp_position_encoding enc, document_position *out, ecp_error *err);

/* The word ([A-Za-z0-9_]+) that contains pos, with start <= column < end.
 * *found is false (and 0 returned) when there is none. */
int document_word_at(document_service *self, const char *document_id, const document_position *pos,
                     ecp_position_encoding enc, document_range *out, bool *found, ecp_error *err);

/* ----- snapshots: reading from any thread ----------------------------------- */

/* A document as it was at one moment: its text, version, line ends and
 * names, frozen, for work that reads a document off the loop (a save, a
 * parse, a search) while the loop goes on editing it. Only taking one needs
 * the loop; everything else below may be called from any thread, by several
 * threads at once, and a snapshot stays valid after its document is edited,
 * reloaded or closed and after the service is freed.
 *
 * The text is bytes with '\n' line ends (a CRLF document's "\r\n" are
 * written back from document_snapshot_crlf), lines as in document_read_line,
 * offsets in bytes. */
typedef struct document_snapshot document_snapshot;

/* Loop thread. Costs O(pieces) time and about 24 bytes per piece of the
 * text, and copies no text: a file just opened has a piece per 4 KiB or so,
 * each edit adds at most two. The caller owns the snapshot. NULL on failure,
 * with ECP_ENOTFOUND or ECP_ENOMEM in err. */
document_snapshot *document_snapshot_take(document_service *self, const char *document_id, ecp_error *err);

/* Any thread, once no thread reads the snapshot any more. NULL is ignored. */
void document_snapshot_release(document_snapshot *snap);

/* Any thread, O(1). The strings are the snapshot's own copies, valid until it
 * is released. */
const char *document_snapshot_id(const document_snapshot *snap);
const char *document_snapshot_uri(const document_snapshot *snap);
const char *document_snapshot_language_id(const document_snapshot *snap);
uint64_t document_snapshot_version(const document_snapshot *snap);
bool document_snapshot_crlf(const document_snapshot *snap); /* written back with CRLF */
bool document_snapshot_bom(const document_snapshot *snap);  /* written back after a UTF-8 byte order mark */
size_t document_snapshot_length(const document_snapshot *snap); /* bytes */
size_t document_snapshot_line_count(const document_snapshot *snap);

/* Any thread. The text of one line without its '\n', in chunks (pointers
 * valid during the call), for O(log pieces) plus the line's length.
 * ECP_ERANGE when line >= line count (fn is then never called). */
int document_snapshot_read_line(const document_snapshot *snap, size_t line, document_chunk_fn fn, void *ctx,
                                ecp_error *err);

/* Any thread. document_read_lines of the snapshot. */
int document_snapshot_read_lines(const document_snapshot *snap, size_t first, size_t end,
                                 const document_line_reader *reader, void *ctx, ecp_error *err);

/* Any thread. Bytes [offset, offset + len) in chunks, for O(log pieces) plus
 * len. ECP_ERANGE when the range reaches past the end (fn is then never
 * called). */
int document_snapshot_read(const document_snapshot *snap, size_t offset, size_t len, document_chunk_fn fn, void *ctx,
                           ecp_error *err);

/* ----- editing --------------------------------------------------------------- */

typedef struct document_edit {
    document_range range;
    const char *text; /* bytes to put in place of the range; borrowed */
    size_t len;
} document_edit;

enum {
    /* Join the previous undo step instead of starting one. */
    DOCUMENT_EDIT_GROUP = 1 << 0,
    /* Put the primary cursor at the end of the first edit's text (an insert at
     * the caret); other cursors follow the edit. */
    DOCUMENT_EDIT_MOVE_CURSOR = 1 << 1,
};

/* Edits are made by `owner` (see cursors below): its cursors are the ones a
 * flag or a policy places and the ones the undo step records, and an edit
 * never joins a step another owner made.
 *
 * Applies several edits as one step. Ranges are in the coordinates before any
 * of them; all are validated before anything changes, and edits that overlap
 * are refused with ECP_EINVAL (two inserts at one point are fine: they land in
 * the order given). Cursors follow the text unless flags say otherwise.
 * *version (may be NULL) receives the version afterwards, also on failure. */
int document_apply_edits(document_service *self, const char *document_id, uint64_t owner, const document_edit *edits,
                         size_t count, ecp_position_encoding enc, unsigned flags, uint64_t *version, ecp_error *err);

/* Replaces the whole text; the cursor goes to the end. */
int document_set_content(document_service *self, const char *document_id, uint64_t owner, const char *text,
                         size_t len, uint64_t *version, ecp_error *err);

/* document_set_content for a large text, in steps, so that what costs
 * (making the new text's tree, measuring what it replaces) runs on the pool
 * and the loop only swaps trees:
 *   begin (loop): notes the document and what it holds now. Unknown and
 *     read-only documents are refused (NULL, err set).
 *   build (any thread, once): takes `text` (from malloc, len bytes; it is
 *     the service's from then on, also on failure) and makes it a tree.
 *   finish (loop): makes it the document's text as one undoable step (the
 *     old tree is kept for undo; neither text is copied), the cursor at the
 *     end, fires on_change with `text` itself as the change's bytes, and
 *     frees r. Requests served between begin and finish land before it (and
 *     are replaced with the rest): the adapter holds the asking client's
 *     later messages until finish (ecp_call_hold_client), so only other
 *     clients' edits can fall there, ordered as if they came first. *version (may be NULL) as for
 *     document_set_content. Fails as set_content does when the document was
 *     closed meanwhile.
 *   free (loop): drops an r that will not be finished. */
typedef struct document_replacement document_replacement;
document_replacement *document_replacement_begin(document_service *self, const char *document_id, uint64_t owner,
                                                 ecp_error *err);
int document_replacement_build(document_replacement *r, char *text, size_t len, ecp_error *err);
int document_replacement_finish(document_service *self, document_replacement *r, uint64_t *version, ecp_error *err);
void document_replacement_free(document_replacement *r);
/* The id of the document r replaces the text of. */
const char *document_replacement_document(const document_replacement *r);

/* Types text at every cursor, replacing its selection; each cursor ends after
 * its text. One-character typing within 300 ms, adjacent, on one line, joins
 * the previous step. */
int document_type(document_service *self, const char *document_id, uint64_t owner, const char *text, size_t len,
                  unsigned flags, uint64_t *version, ecp_error *err);

/* One text for each of owner's cursors, as a paste of as many lines as there
 * are cursors puts one line at each: texts[k] replaces the selection of the
 * k-th cursor in document order, and each cursor ends after its text. `count`
 * must be owner's number of cursors (ECP_EINVAL otherwise, as for more than
 * the largest insert in all). One undo step, joined to the previous one only
 * with DOCUMENT_EDIT_GROUP. */
typedef struct document_text {
    const char *text; /* borrowed */
    size_t len;
} document_text;
int document_type_each(document_service *self, const char *document_id, uint64_t owner, const document_text *texts,
                       size_t count, unsigned flags, uint64_t *version, ecp_error *err);

/* Editing commands: each acts at owner's cursors, is one undoable step (none
 * when it changes nothing), moves everyone else's cursors as the text moves,
 * and fires on_change like any edit.
 *   INDENT / OUTDENT: every line a cursor touches (a selection that ends at
 *     the start of a line leaves that line out) gains / loses one indent unit
 *     (document_indent_of); selections keep covering the same text.
 *   NEWLINE: each selection becomes a line end plus the indent that
 *     document_newline_indent gives.
 *   DUPLICATE_LINES: the touched lines are copied; the cursors stay on the
 *     lower copy.
 *   MOVE_LINES_UP / _DOWN: the touched lines swap with the line above
 *     (below), the cursors going with them.
 *   DELETE_WORD_LEFT / _RIGHT: each selection, or from the caret to where a
 *     move by word would put it.
 *   TOGGLE_COMMENT: the touched non-blank lines lose their line comment
 *     token when all have it, else gain it (and a space) at their least
 *     indent. ECP_EINVAL naming the language when it has no line comment. */
typedef enum document_command {
    DOCUMENT_INDENT,
    DOCUMENT_OUTDENT,
    DOCUMENT_NEWLINE,
    DOCUMENT_DUPLICATE_LINES,
    DOCUMENT_MOVE_LINES_UP,
    DOCUMENT_MOVE_LINES_DOWN,
    DOCUMENT_DELETE_WORD_LEFT,
    DOCUMENT_DELETE_WORD_RIGHT,
    DOCUMENT_TOGGLE_COMMENT,
} document_command;

int document_run_command(document_service *self, const char *document_id, uint64_t owner, document_command command,
                         uint64_t *version, ecp_error *err);

/* The line comment token of a language ("//", "#", "--"), NULL for none. */
const char *document_line_comment(const char *language_id);

/* How a document indents: tabs or `size` spaces. */
typedef struct document_indent {
    bool tabs;
    size_t size; /* columns of one unit (a tab's width with tabs) */
} document_indent;

/* The unit from the document's .editorconfig (document_format_of) when it
 * says, else detected from the document's own lines: the most common step between the
 * leading spaces of consecutive indented lines, tabs when most indented lines
 * start with a tab; spaces of 4 when nothing tells. Reads at most the first
 * DOCUMENT_INDENT_SCAN_LINES lines. */
#define DOCUMENT_INDENT_SCAN_LINES ((size_t)10000)
int document_indent_of(document_service *self, const char *document_id, document_indent *out, ecp_error *err);

/* What a new line after `before` (the text of the line up to the caret)
 * starts with: before's leading whitespace, plus one unit when before ends
 * (trailing blanks aside) in '{', '[', '(' or ':'. Appends to out. */
void document_newline_indent(const char *before, size_t len, const document_indent *unit, buf *out);

/* What the document's .editorconfig files say (document_service_set_workspace
 * names the workspace: only files inside it are read, none above its root,
 * each bounded in size and sections; a document outside it, or without a
 * file, has none). Unset fields: has_indent false, empty strings, -1. Read
 * once per document (and again after a save as). */
typedef struct document_format {
    bool has_indent;
    document_indent indent;
    char end_of_line[8]; /* "lf", "crlf", "cr" or "" */
    char charset[16];
    int insert_final_newline;     /* 1, 0, or -1 for unset */
    int trim_trailing_whitespace; /* 1, 0, or -1 for unset */
} document_format;

int document_format_of(document_service *self, const char *document_id, document_format *out, ecp_error *err);

/* The workspace root (NULL: none), copied; .editorconfig files are read
 * only inside it. */
void document_service_set_workspace(document_service *self, const char *root);

/* Who knows a language's indent (the syntax service, installed by the
 * composition root): the indent (*out, malloc'd blanks) of a new line
 * inserted after `line`. Returns 1 with *out set, or 0 when it has no
 * answer (no grammar, no current tree), and document/newline falls back to
 * its own rule: the line's indent, plus a level after `{ [ ( :`. */
typedef int (*document_indent_fn)(void *ctx, const char *document_id, size_t line, char **out);
void document_service_set_indent_provider(document_service *self, document_indent_fn fn, void *ctx);

/* ----- find and replace ------------------------------------------------------------ */

/* What to look for: a literal (or a PCRE2 pattern with regex: `^` and `$`
 * match at line ends), ignoring case unless case_sensitive, only where no
 * word character ([A-Za-z0-9_]) runs on across either edge with whole_word;
 * in range when has_range, else everywhere. */
typedef struct document_find_options {
    const char *query;
    size_t query_len;
    bool regex;
    bool case_sensitive;
    bool whole_word;
    bool backwards;       /* the current match is the last before `from` */
    bool has_from;
    document_position from; /* default: the start (the end, backwards) */
    size_t limit;         /* matches returned; 0: DOCUMENT_FIND_LIMIT */
    bool has_range;
    document_range range;
} document_find_options;

#define DOCUMENT_FIND_LIMIT ((size_t)1000)
/* Matches counted (and replaced) at most. */
#define DOCUMENT_FIND_TOTAL_MAX ((size_t)100000)
/* A search of a text larger than this runs on the pool. */
#define DOCUMENT_FIND_OFF_LOOP_BYTES ((size_t)1 << 20)

/* A search: begun on the loop (the query compiled, positions checked, a
 * snapshot taken), run on any thread, read and freed after. Refusals:
 * ECP_ENOTFOUND, ECP_ERANGE for a position past the end, ECP_EINVAL for an
 * empty query ("query: must not be empty") or a bad pattern ("query: invalid
 * regular expression at offset N: <PCRE2's message>"). Running fails with
 * ECP_EINVAL when a match costs too much backtracking. */
typedef struct document_search document_search;
document_search *document_search_begin(document_service *self, const char *document_id,
                                       const document_find_options *options, ecp_position_encoding enc,
                                       ecp_error *err);
size_t document_search_length(const document_search *s); /* bytes to search */
int document_search_run(document_search *s, ecp_error *err);
/* Every match, counted up to DOCUMENT_FIND_TOTAL_MAX (*complete false when
 * there were more). */
size_t document_search_total(const document_search *s, bool *complete);
/* The matches returned: at most `limit`, in document order, a window that
 * starts at the current match (going backwards: ends at it) where the
 * matches allow. */
size_t document_search_count(const document_search *s);
const document_range *document_search_match(const document_search *s, size_t index);
/* The current match's index among those returned; false when none. */
bool document_search_current(const document_search *s, size_t *index);
void document_search_free(document_search *s);

/* Replaces, as one undoable step by owner, every match (all) or the first
 * that starts at or after the start of owner's primary selection (rounding
 * the end), whose caret then goes after the replacement. With regex, `$n`
 * and `${n}` in the replacement are group n and `$$` a dollar. *replaced: how
 * many. Refusals as for a search, and as for an edit. */
int document_replace_matches(document_service *self, const char *document_id, uint64_t owner,
                             const document_find_options *options, const char *replacement, size_t replacement_len,
                             bool all, ecp_position_encoding enc, uint64_t *version, size_t *replaced,
                             ecp_error *err);

/* Undo and redo, asked by owner: its cursors go back to those the step
 * recorded (its author's); everyone else's follow the text. ECP_ESTATE when
 * there is nothing to undo (redo). */
int document_undo(document_service *self, const char *document_id, uint64_t owner, uint64_t *version, ecp_error *err);
int document_redo(document_service *self, const char *document_id, uint64_t owner, uint64_t *version, ecp_error *err);
int document_history(document_service *self, const char *document_id, bool *can_undo, bool *can_redo,
                     ecp_error *err);

/* Declares the current text to be what is on disk. */
int document_mark_clean(document_service *self, const char *document_id, ecp_error *err);

/* ----- cursors ----------------------------------------------------------------- */

typedef struct document_cursor {
    document_position active;   /* the caret */
    document_position anchor;   /* equals active when nothing is selected */
    bool has_desired_column;
    size_t desired_column;      /* kept across up/down moves */
} document_cursor;

typedef enum document_direction {
    DOCUMENT_UP,
    DOCUMENT_DOWN,
    DOCUMENT_LEFT,
    DOCUMENT_RIGHT,
} document_direction;

typedef enum document_unit {
    DOCUMENT_BY_CHARACTER,
    DOCUMENT_BY_WORD,
    DOCUMENT_BY_LINE,
    DOCUMENT_BY_PAGE, /* 20 lines */
    DOCUMENT_BY_DOCUMENT,
} document_unit;

/* Cursors belong to a client: `owner` names it (a connection's id; 0 is the
 * server itself: agent tools, a language server's edits), and each owner has
 * its own cursors in each document, a caret at the start until it moves
 * them. Every edit, whoever makes it, moves every owner's cursors as it moves
 * the text.
 *
 * The cursors, primary first: *out is malloc'd (the caller frees it). */
int document_get_cursors(document_service *self, const char *document_id, uint64_t owner, ecp_position_encoding enc,
                         document_cursor **out, size_t *count, ecp_error *err);

/* Replaces every cursor (count >= 1; the first is primary). Cursors that
 * overlap are merged. Fires on_cursors. */
int document_set_cursors(document_service *self, const char *document_id, uint64_t owner,
                         const document_cursor *cursors, size_t count, ecp_position_encoding enc, ecp_error *err);
int document_add_cursor(document_service *self, const char *document_id, uint64_t owner,
                        const document_position *pos, ecp_position_encoding enc, ecp_error *err);
int document_move_cursors(document_service *self, const char *document_id, uint64_t owner, document_direction dir,
                          document_unit unit, bool select, ecp_error *err);
int document_select_all(document_service *self, const char *document_id, uint64_t owner, ecp_error *err);
int document_clear_selections(document_service *self, const char *document_id, uint64_t owner, ecp_error *err);

/* The selected text of cursor `index` (empty when it selects nothing). */
int document_read_selection(document_service *self, const char *document_id, uint64_t owner, size_t index,
                            document_chunk_fn fn, void *ctx, ecp_error *err);

/* ----- opening, saving, reloading, closing ------------------------------------ */

/* A request that may finish on the thread pool. Its callback runs exactly
 * once, on the loop thread: before the starting function returns when no
 * blocking work is needed (the function then returns NULL), else later (the
 * function returns the request, valid until its callback has run), and at
 * the latest, with ECP_ECANCELED, when the service is freed. */
typedef struct document_request document_request;

/* Withdraws interest in a pending request: its callback runs now with
 * ECP_ECANCELED. An open or reload stops reading and changes nothing; a save
 * still completes (the data is already on its way to disk) and still marks
 * the document clean. */
void document_request_cancel(document_service *self, document_request *req);

typedef struct document_open_options {
    const char *uri;          /* required */
    const char *content;      /* NULL: a file:// uri is read from disk, others start empty */
    size_t content_len;
    const char *language_id;  /* NULL: by the extension */
    bool read_only;
} document_open_options;

/* status 0: document_id is open (already_open when its file was open before,
 * under this uri or any other name of the file, or the uri was: no on_open
 * then, and the document keeps its first uri). Failures: ECP_EBADURI for a file uri that names no
 * absolute path; otherwise the errno-derived code with "Failed to open file:
 * <path>: <reason>". document_id is valid during the callback. */
typedef void (*document_open_cb)(void *ctx, int status, const ecp_error *err, const char *document_id,
                                 bool already_open);
document_request *document_open(document_service *self, const document_open_options *options, document_open_cb cb,
                                void *ctx);

/* Writes the document to its file, or to `uri` (save as: the document takes
 * that uri). On success the document is clean as of the state written. uri is
 * the document's uri afterwards. Saves of one file are queued: each writes
 * the text as it was when it was asked for, in the order asked. A save over
 * a file that changed on disk since the document last matched it fails with
 * ECP_ECONFLICT ("File changed on disk") and writes nothing; a file that
 * vanished is written again. Any other failure leaves the file as it was. */
typedef void (*document_save_cb)(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri);
document_request *document_save(document_service *self, const char *document_id, const char *uri,
                                document_save_cb cb, void *ctx);

typedef struct document_save_options {
    const char *uri; /* NULL: the document's own file */
    bool force;      /* write even over a file that changed on disk */
} document_save_options;

document_request *document_save_with(document_service *self, const char *document_id,
                                     const document_save_options *options, document_save_cb cb, void *ctx);

/* Re-reads the file. A document with unsaved edits is refused with
 * ECP_ESTATE unless force. The new text replaces the old as one undoable
 * step (none when they are the same) and the document is clean afterwards. */
typedef void (*document_reload_cb)(void *ctx, int status, const ecp_error *err, uint64_t version);
document_request *document_reload(document_service *self, const char *document_id, bool force,
                                  document_reload_cb cb, void *ctx);

/* Closes the document whoever holds it. Fires on_close. */
int document_close(document_service *self, const char *document_id, ecp_error *err);

/* ----- holds: who has a document open -------------------------------------------
 *
 * Several clients share one server, so a document is open for as long as
 * someone holds it. Whoever opens a document for someone (a client's
 * document/open, the server's own tools as owner 0) holds it for that owner
 * right after document_open; holding twice is one hold. Releasing the last
 * hold closes the document, except that a release that keeps dirty documents
 * (a client that went away) leaves unsaved edits open, held by nobody, until
 * someone closes them. A document nobody holds (its holders went away and
 * left unsaved edits) is closed by whoever releases it. */
int document_hold(document_service *self, const char *document_id, uint64_t owner, ecp_error *err);
bool document_held_by(document_service *self, const char *document_id, uint64_t owner);

/* Drops owner's hold and cursors, then closes the document when nobody holds
 * it any more (and, with keep_dirty, it has no unsaved edits). A release by
 * an owner that holds nothing while others hold the document changes
 * nothing. *closed (may be NULL) says whether it closed. ECP_ENOTFOUND for
 * an unknown id. */
int document_release(document_service *self, const char *document_id, uint64_t owner, bool keep_dirty, bool *closed,
                     ecp_error *err);

/* The owner is gone: every hold of it is released keeping dirty documents,
 * and its cursors everywhere are forgotten. */
void document_release_all(document_service *self, uint64_t owner);

/* Calls fn for every owner that holds the document, in the order they came,
 * with its cursors in enc (valid during the call). */
int document_holders(document_service *self, const char *document_id, ecp_position_encoding enc,
                     void (*fn)(void *ctx, uint64_t owner, const document_cursor *cursors, size_t count), void *ctx,
                     ecp_error *err);

/* ----- events ------------------------------------------------------------------- */

typedef struct document_change_position {
    size_t line;
    size_t column[3]; /* indexed by ecp_position_encoding; [ECP_ENCODING_UTF8] is the byte column */
} document_change_position;

/* One replacement, in the coordinates of the text just before it. */
typedef struct document_change {
    size_t offset;        /* byte offset of start */
    size_t deleted_len;   /* bytes replaced */
    document_change_position start;
    document_change_position end;
    size_t range_length[3]; /* units replaced, per encoding ('\n' counts one) */
    const char *text;       /* the new bytes */
    size_t text_len;
} document_change;

typedef struct document_change_event {
    const char *document_id;
    const char *uri;
    uint64_t version;               /* after all the changes */
    const document_change *changes; /* apply in order */
    size_t count;
} document_change_event;

/* Every callback is optional and runs on the loop thread, after the state it
 * reports is in place and before the function that caused it returns.
 * Pointers are valid during the call. Listeners are called in the order they
 * subscribed. A listener may query the service, unsubscribe itself or any
 * other (one removed is not called after its removal) and subscribe new ones
 * (called from the next event on); it must not close, edit or save documents
 * from inside a callback (the listeners after it would see a state the event
 * does not describe). */
typedef struct document_listener {
    void (*on_open)(void *ctx, const document_info *info);
    void (*on_change)(void *ctx, const document_change_event *event);
    /* Cursors were set, added or moved through this interface (not the
     * cursor moves that edits make). */
    void (*on_cursors)(void *ctx, const char *document_id, uint64_t owner); /* whose cursors */
    void (*on_close)(void *ctx, const char *document_id, const char *uri);
    void (*on_save)(void *ctx, const char *document_id, const char *uri, uint64_t version);
} document_listener;

/* The listener struct is borrowed (keep it alive, usually static const) until
 * document_unsubscribe with the same pair. Returns 0. */
int document_subscribe(document_service *self, const document_listener *listener, void *ctx);
void document_unsubscribe(document_service *self, const document_listener *listener, void *ctx);

/* What happens to the files under open documents, heard the same way (same
 * rules as above). */
typedef struct document_disk_listener {
    /* The file changed or vanished on disk and the document kept its text (it
     * has unsaved edits, or there is nothing to reload): it is flagged
     * changed_on_disk until it is saved or reloaded. Once per state of the
     * file. (A clean document is reloaded instead, with on_change.) */
    void (*on_disk_change)(void *ctx, const char *document_id, const char *uri);
} document_disk_listener;

int document_subscribe_disk(document_service *self, const document_disk_listener *listener, void *ctx);
void document_unsubscribe_disk(document_service *self, const document_disk_listener *listener, void *ctx);

#endif
