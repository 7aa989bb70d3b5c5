/* internal: what the files of the document service share and nobody else sees.
 *
 * A document keeps its text in a piece tree (bytes, '\n' lines) and everything
 * else as byte offsets into it: cursors, undo records, the unit checkpoints.
 * Client columns (UTF-16 units, bytes or code points) exist only at the edges:
 * they are converted to offsets when a request arrives and back when a result
 * or an event is written, always by decoding the one line concerned.
 *
 * Ownership: the service owns its documents; a document owns every pointer it
 * holds (strings, tree, cursor arrays, undo steps and their texts).
 */
#ifndef ECPD_DOCUMENT_INTERNAL_H
#define ECPD_DOCUMENT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include <uv.h>

#include "buf.h"
#include "error.h"
#include "event.h"
#include "interface.h"
#include "job.h"
#include "log.h"
#include "map.h"
#include "piece_tree.h"
#include "utf.h"

/* No desired column: the cursor was last moved horizontally or set. */
#define DOC_NO_DESIRED SIZE_MAX
/* The most cursors one client has in a document (VS Code's default
 * multiCursorLimit): every edit at N cursors moves every cursor, so typing
 * costs N squared on the loop, over a minute at 100,000. */
#define DOC_MAX_CURSORS ((size_t)10000)
/* The most text one request inserts where the request does not carry it
 * all (typing at every cursor, a replacement with groups at every match):
 * the largest message there may be. */
#define DOC_MAX_INSERT_BYTES ((size_t)256 << 20)

typedef struct doc_cursor {
    size_t anchor;  /* byte offset where the selection started */
    size_t active;  /* byte offset of the caret */
    size_t desired; /* code-point column kept across up/down, or DOC_NO_DESIRED */
} doc_cursor;

typedef struct doc_cursor_set {
    doc_cursor *items; /* items[0] is the primary cursor; never empty */
    size_t count;
    size_t cap;
} doc_cursor_set;

/* One client's part in a document: its own cursors, and whether it holds the
 * document open. A client that only moved cursors in a document it never
 * opened has cursors and no hold. Owner 0 is the server itself. */
typedef struct doc_party {
    uint64_t owner;
    bool holds;
    doc_cursor_set cursors;
} doc_party;

/* One primitive replacement, in the coordinates of the text just before it. */
typedef struct doc_undo_change {
    size_t offset;
    char *deleted; /* owned; NULL when nothing was deleted */
    size_t deleted_len;
    char *inserted; /* owned; NULL when nothing was inserted */
    size_t inserted_len;
    /* A replacement of the whole text keeps no copies: `deleted` and
     * `inserted` stay NULL and this holds whichever of the two texts is not
     * the document's now (the old one while the step is applied, the new one
     * while it is undone); undoing or redoing swaps it with the document's
     * tree. NULL for every other change. Owned. */
    piece_tree *other;
    /* With other: what the two texts span, [0] the one the last swap put in
     * place, [1] other, once known, so that undoing and redoing a huge
     * replacement measure nothing on the loop. Owned; NULL: not known. */
    struct doc_swap_measure *measures;
    /* Many replacements made at once (a replace-all), packed: what each took
     * and put, and where (edit.c). `deleted`, `inserted` and `other` then
     * stay NULL; `offset` is where the first one starts. Owned. */
    struct doc_splice *splice;
} doc_undo_change;

/* One undo step: the changes in the order they were applied, and the cursors
 * around them. `id` names the text state right after the step; it changes
 * whenever the step grows, so a saved marker can never match a state that
 * differs from what was saved. */
typedef struct doc_undo_step {
    uint64_t id;
    doc_undo_change *changes;
    size_t count;
    size_t cap;
    doc_cursor_set before; /* the cursors of the client that made the step */
    doc_cursor_set after;
    uint64_t owner;        /* that client: another's edit never joins the step */
    /* Typing grouping: a step made only of one-character inserts remembers
     * where each of them ended, so the next keystroke can join it. */
    bool typing;
    size_t *typing_ends; /* sorted ascending, `count_ends` entries */
    size_t count_ends;
    uint64_t last_ns;    /* when the step last grew */
    size_t bytes;        /* memory the step holds: its texts and its bookkeeping */
} doc_undo_step;

typedef struct doc_history {
    doc_undo_step *steps; /* steps[0, applied) are done, steps[applied, count) can be redone */
    size_t dropped;       /* slots before steps[0] that dropped steps left, reused when compacted */
    size_t count;
    size_t cap;
    size_t applied;
    uint64_t base_id;     /* the state below steps[0] */
    bool fresh;           /* the top step is the last thing that happened: typing may join it */
    size_t bytes;         /* the sum of every step's bytes */
} doc_history;

/* Units before a byte offset, remembered so that offset queries in the
 * client's encoding do not rescan the document from its start each time. */
typedef struct doc_checkpoint {
    size_t byte;
    size_t u16;
    size_t u32;
} doc_checkpoint;

/* A file as it was on disk at one moment: two that differ mean the file was
 * changed (or replaced, or deleted) in between. The change time is kept as
 * well as the modification time: a rewrite can put the modification time (and
 * the size) back, but nobody without root can set the change time. */
typedef struct doc_disk {
    bool exists;
    uint64_t dev, ino;
    uint64_t size;
    int64_t mtime_sec;
    long mtime_nsec;
    int64_t ctime_sec;
    long ctime_nsec;
} doc_disk;

typedef struct document {
    document_service *svc; /* the service that holds it */
    char *id;
    char *uri;         /* as it was first opened (or saved as) */
    char *path;        /* NULL for documents that have no file (memory://, untitled:); normalised */
    char *key;         /* what makes two opens the same document: the file's resolved path, else the uri */
    char *language_id;
    piece_tree *tree;
    uint64_t version;
    bool read_only;
    bool crlf;         /* written back with CRLF line ends */
    bool bom;          /* written back with a UTF-8 byte order mark */
    /* The file on disk. `disk` is what it was when the text last matched it
     * (opened, reloaded, saved); until the text has matched it once (a
     * document opened with content) the document does not follow it. */
    bool disk_known;
    doc_disk disk;
    bool has_inode;       /* the file existed when last seen: dev/ino name it too (hard links) */
    bool changed_on_disk; /* the file changed or vanished under the document */
    doc_disk disk_reported; /* the state changed_on_disk was last reported for */
    uint64_t watch_id;    /* the file service's watch on the file, 0 for none */
    unsigned saves_pending; /* saves asked for and not finished */
    bool recheck;         /* a change was heard while saves were pending: look again after them */
    struct doc_task *following; /* a reload started because the file changed, or NULL */
    doc_party **parties; /* in the order they came; each is the document's */
    size_t party_count;
    size_t party_cap;
    doc_history history;
    uint64_t saved_id;    /* the history state the file on disk holds */
    uint64_t snapshot_id; /* the state the latest save in flight is writing */
    doc_checkpoint *checkpoints; /* sorted by byte */
    size_t checkpoint_count;
    size_t checkpoint_cap;
    /* Marks inside long lines (text.c). A pointer, so that conversions,
     * which take a const document, may lay them down. */
    struct doc_columns *columns;
    /* What its .editorconfig says, read on first need (editorconfig.c), on
     * the pool: format_lookup is that lookup while it runs or waits its turn. */
    bool format_known;
    document_format format;
    struct format_lookup *format_lookup;
    /* The indent unit its lines use, as of detected_version (0: never), read
     * from its first detected_lines lines. */
    uint64_t detected_version;
    size_t detected_lines;
    document_indent detected;
} document;

struct document_service {
    ecp_job_set *jobs; /* every open, reload and save on the pool */
    ecp_logger *log;
    struct file_service *files; /* borrowed; NULL: documents do not follow their files */
    size_t undo_max_bytes;      /* per document */
    size_t undo_max_steps;      /* per document */
    size_t splice_min_edits;    /* a step of this many edits or more may be made as a splice (edit.c) */
    unsigned encodings;         /* ECP_ENCODING_* bits whose columns change events carry (UTF-8 always) */
    struct encoding_reader {    /* who reads which columns (document_service_set_encodings) */
        const void *reader;
        unsigned mask;
    } *encoding_readers;
    size_t encoding_reader_count;
    document **docs; /* in the order they were opened */
    size_t doc_count;
    size_t doc_cap;
    ecp_map *by_id;  /* document id -> document: every request names one */
    ecp_map *by_key; /* resolved path (or uri) -> the first document opened with it */
    bool keys_shared; /* two documents have had one key (a save-as racing an open): closing rescans */
    ecp_listeners listeners; /* of document_listener */
    ecp_listeners disk_listeners; /* of document_disk_listener */
    uint64_t rng;           /* xorshift state for document ids */
    uint64_t next_state_id; /* history state ids, unique across the service */
    struct doc_task *opening; /* opens reading on the pool: a second open of the file joins one */
    struct doc_task *saving;  /* saves writing on the pool, each with the saves of its file queued behind it */
    char *workspace;          /* resolved; NULL: no .editorconfig is read */
    /* The one .editorconfig lookup on the pool, and those waiting their turn
     * (editorconfig.c says why one at a time). */
    struct format_lookup *format_running;
    struct format_lookup *format_waiting;
    struct format_lookup *format_waiting_last;
    document_indent_fn indent_provider; /* NULL: newline keeps to its own rule */
    void *indent_provider_ctx;
};

/* ----- text.c: columns, offsets and words --------------------------------- */

/* Units of a byte span, in every encoding at once. */
typedef struct doc_units {
    size_t u8;
    size_t u16;
    size_t u32;
} doc_units;

static inline size_t doc_units_get(const doc_units *u, ecp_position_encoding enc)
{
    return enc == ECP_ENCODING_UTF8 ? u->u8 : enc == ECP_ENCODING_UTF16 ? u->u16 : u->u32;
}

/* Units spanned by [from, from + len) of the tree. */
doc_units document__units(const piece_tree *tree, size_t from, size_t len);
/* The same read from a snapshot: any thread. */
doc_units document__snapshot_units(const piece_tree_snapshot *snap, size_t from, size_t len);
/* The same for contiguous bytes. */
doc_units document__units_of(const char *s, size_t len);

/* The byte offset at `column` units of enc from `from`, looking no further
 * than `limit`. A column inside a code point snaps back to its start. Returns
 * false when the span holds fewer than `column` units. */
bool document__seek(const piece_tree *tree, size_t from, size_t limit, size_t column, ecp_position_encoding enc,
                    size_t *out);

/* Position -> offset with the catalogue's range checks: ECP_ERANGE with a
 * message naming the line or column when the position lies past the end.
 * (line_count, 0) is accepted as the end of the document. */
int document__offset_of(const document *doc, const document_position *pos, ecp_position_encoding enc,
                        size_t *out, ecp_error *err);
void document__position_of(const document *doc, size_t offset, ecp_position_encoding enc, document_position *out);
/* The line of offset and its column in every encoding. */
void document__line_column(const document *doc, size_t offset, size_t *line, doc_units *col);

/* Offsets counted from the start of the document in the client's units
 * (utf-8: bytes), cached through the document's checkpoints. */
size_t document__units_before(document *doc, size_t offset, ecp_position_encoding enc);
/* Returns false when the document holds fewer units than `units`. */
bool document__offset_at_units(document *doc, size_t units, ecp_position_encoding enc, size_t *out);
/* Forgets the checkpoints an edit at `offset` makes wrong. */
void document__checkpoints_invalidate(document *doc, size_t offset);

/* Columns inside long lines. Converting a column scans the line from its
 * start; on a line of megabytes that is milliseconds per keystroke. So the
 * units from a long line's start to points every few KiB inside it are
 * remembered as conversions scan it (for the few lines converted last), and
 * the next conversion scans from the nearest one. An edit moves the marks
 * after it instead of dropping them when it leaves the decoding around it
 * alone (it starts and ends at character boundaries), so typing anywhere in
 * the line keeps them. */
typedef struct doc_columns doc_columns;
doc_columns *document__columns_new(void);
void document__columns_free(doc_columns *cols);
/* Units of [line_start, offset) of the document's tree, line_start being
 * where the line that holds offset starts. */
doc_units document__line_units(const document *doc, size_t line_start, size_t offset);
/* document__seek within the line that starts at line_start and holds len
 * bytes, from its start, through the line's marks. */
bool document__line_seek(const document *doc, size_t line_start, size_t len, size_t column, ecp_position_encoding enc,
                         size_t *out);
/* Before [offset, offset + del_len) is replaced by ins (on the tree as it
 * is before the replacement). */
void document__columns_edit(document *doc, size_t offset, const char *del, size_t del_len, const char *ins,
                            size_t ins_len);
/* The whole text changed. */
void document__columns_clear(doc_columns *cols);

/* The word (ASCII [A-Za-z0-9_]+) around a byte offset, on its line. A run
 * that reaches past DOCUMENT_WORD_MAX bytes on either side of the offset is
 * no word: the scan is bounded. */
#define DOCUMENT_WORD_MAX ((size_t)4096)
bool document__word_at(const document *doc, size_t offset, size_t *start, size_t *end);
bool document__is_word_byte(unsigned char c);

/* ----- fileio.c: whole files, safe to run on a worker thread ------------- */

void document__disk_from_stat(const struct stat *st, doc_disk *out);
/* What is at path now (symlinks followed); a missing file is exists=false
 * and 0. Another failure returns its status. */
int document__disk_stat(const char *path, doc_disk *out);
bool document__disk_same(const doc_disk *a, const doc_disk *b);

/* A file read whole. */
typedef struct doc_file {
    char *data;   /* malloc'd, NUL-terminated; the caller's */
    size_t len;
    bool crlf;    /* CRLF line ends were turned into LF */
    bool bom;     /* a UTF-8 byte order mark was taken off the front */
    doc_disk disk; /* the file as it was opened */
} doc_file;

/* Reads a regular file, turning CRLF into LF when the file's first line end is
 * CRLF (then crlf is set), and taking a leading UTF-8 byte order mark off
 * (then bom is set). A file whose first line end is a bare LF is kept byte
 * for byte, '\r' included, so mixed files survive a round trip. Chunks of
 * the file are read straight into the result and normalised in place; a '\r'
 * ending one chunk is dropped once the next begins with '\n'. The
 * cancellation of job (NULL: nothing cancels) is polled between chunks.
 * Messages read "Failed to open file: <path>: <why>". */
int document__read_file_job(const char *path, const ecp_job *job, doc_file *out, ecp_error *err);
/* The same, with a flag for cancelling (may be NULL) and fewer results. */
int document__read_file(const char *path, atomic_bool *cancel, char **data, size_t *len, bool *crlf,
                        ecp_error *err);

/* Hands out the bytes to write, in order (len may be 0); false once there
 * are no more. */
typedef bool (*document_write_next)(void *ctx, const char **chunk, size_t *len);

/* How to write, and what was written. */
typedef struct doc_write {
    bool crlf;              /* each '\n' written as "\r\n" */
    bool bom;               /* a UTF-8 byte order mark first */
    const doc_disk *expect; /* non-NULL: refuse (ECP_ECONFLICT, "File changed on disk") when the file exists
                               and is not this one any more */
    doc_disk written;       /* out: the file as written, or as put back after a failed write in place */
    bool put_back;          /* out: a write in place failed and the old contents were put back */
} doc_write;

/* Replaces path with the bytes next hands out, never leaving a mix of old
 * and new: a temporary file in the same directory (".<name>.ecpd-<hex>",
 * locked while it exists), written in large writes as the bytes arrive
 * (never gathered whole in memory), fsync'd, given the old file's mode (and
 * owner, when allowed), renamed over the target, and the directory fsync'd.
 * A file with several hard links is written in place instead, after a copy
 * of its contents is on disk, so that every link sees the new contents; a
 * failed write puts the copy back. A symlink is followed, so the link stays
 * a link. Temporary files that saves of this file left behind (a process
 * that died while saving) are removed first. On failure the target is
 * untouched and the temporary file is removed. */
int document__write_stream_as(const char *path, document_write_next next, void *ctx, doc_write *how,
                              ecp_error *err);
/* The same without a byte order mark or a check. */
int document__write_stream(const char *path, document_write_next next, void *ctx, bool crlf, ecp_error *err);

/* The same for bytes already in memory, written as they are. */
int document__write_file(const char *path, const char *data, size_t len, ecp_error *err);

/* Removes the temporary files of path's saves that nobody writes any more
 * (".<name>.ecpd-" and 12 hex digits, regular, ours, and not locked by a
 * save in progress); nothing else. Returns how many. */
size_t document__sweep_temps(const char *path);

/* The same CRLF rule as document__read_file, for text already in memory
 * (data is rewritten in place). Returns the new length. */
size_t document__normalize_eol(char *data, size_t len, bool *crlf);

/* ----- snapshot.c ---------------------------------------------------------- */

/* Hands the lines of an iterator set up at line `first` to reader. */
void document__read_lines(piece_tree_lines *it, size_t first, const document_line_reader *reader, void *ctx);

/* document_snapshot_take for a document at hand. */
document_snapshot *document__snapshot_of(document *doc, ecp_error *err);
/* Writes the snapshot to path through document__write_stream_as, with CRLF
 * line ends for a CRLF document and a byte order mark for a document read
 * with one (how->crlf and how->bom are set here). Any thread. */
int document__snapshot_write(const document_snapshot *snap, const char *path, doc_write *how, ecp_error *err);

/* ----- cursor.c ------------------------------------------------------------ */

void document__cursors_init(doc_cursor_set *set);
void document__cursors_free(doc_cursor_set *set);
void document__cursors_copy(doc_cursor_set *dst, const doc_cursor_set *src);
void document__cursors_reset(doc_cursor_set *set, size_t anchor, size_t active);
void document__cursors_push(doc_cursor_set *set, size_t anchor, size_t active, size_t desired);
/* Moves cursors across a replacement of [offset, offset + deleted) by
 * `inserted` bytes. A caret exactly at an insertion point moves after it. */
void document__cursors_shift(doc_cursor_set *set, size_t offset, size_t deleted, size_t inserted);
/* Clamps to the text length, then merges cursors that overlap or coincide;
 * the primary survives a merge. */
void document__cursors_normalize(doc_cursor_set *set, size_t length);

/* The start of the character (extended grapheme cluster) that holds p; p
 * itself when a character starts there. */
size_t document__snap_to_character(const piece_tree *t, size_t p);

/* Where a move by word from p goes: to the end (start) of the next
 * (previous) word on the line, or across the line end at the line's end
 * (start). */
size_t document__word_right(const piece_tree *t, size_t p);
size_t document__word_left(const piece_tree *t, size_t p);

int document__cursors_move(document *doc, doc_cursor_set *set, document_direction dir, document_unit unit,
                           bool select);

/* The party of owner, or NULL. */
doc_party *document__party(const document *doc, uint64_t owner);
/* The cursors of owner, made (one caret at the start) when it has none yet. */
doc_cursor_set *document__cursors_of(document *doc, uint64_t owner);
/* Forgets owner's part (cursors and hold). */
void document__party_drop(document *doc, uint64_t owner);
void document__parties_free(document *doc);

/* ----- edit.c -------------------------------------------------------------- */

/* A step of at least this many edits, closer together on average than
 * DOC_SPLICE_SPACING bytes, is made as a splice: the text is rebuilt in one
 * pass into one new buffer and the step keeps the replaced and replacing
 * bytes packed, rather than two pieces in the tree and two copies in the
 * history for every edit (a replace-all of 670,000 matches in 50 MB held
 * eight times the file). Each edit costs about 12 bytes and its texts, and
 * the step O(document) time, which a step this dense spends anyway. */
#define DOC_SPLICE_MIN_EDITS ((size_t)1024)
#define DOC_SPLICE_SPACING ((size_t)4096)

/* A replacement in current coordinates, validated and ready to apply. */
typedef struct doc_edit {
    size_t start;
    size_t end;
    const char *text;
    size_t len;
    size_t order; /* index in the caller's list: ties keep the caller's order */
} doc_edit;

/* Applies non-overlapping edits (sorted ascending, start/end in the
 * coordinates before any of them) as one undo step, fires on_change, and
 * returns 0 or ECP_ENOMEM. `cursor_ends` moves each cursor i to the end of
 * edit i's text (typing); `primary_end` moves the primary cursor to the end of
 * edit 0 (insert). Otherwise cursors follow the edits. */
typedef enum doc_cursor_policy {
    DOC_CURSORS_FOLLOW,
    DOC_CURSORS_PRIMARY_END,
    DOC_CURSORS_EACH_END,
    DOC_CURSORS_DOCUMENT_END,
    DOC_CURSORS_KEEP, /* every cursor keeps its offsets, clamped to the new length (a reload) */
} doc_cursor_policy;

/* `owner` made the edit: its cursors are the ones the policy places and the
 * undo step records; everyone else's follow the text. */
int document__apply(document_service *svc, document *doc, uint64_t owner, doc_edit *edits, size_t count, bool group,
                    doc_cursor_policy policy, ecp_error *err);
/* Sorts edits (by start, then order), refuses overlapping ones (ECP_EINVAL),
 * drops those that change nothing and applies the rest as one step (none
 * when nothing is left). *version (may be NULL) gets the version after. */
int document__apply_sorted(document_service *svc, document *doc, uint64_t owner, doc_edit *edits, size_t count,
                           bool group, doc_cursor_policy policy, uint64_t *version, ecp_error *err);
/* After an edit by owner: owner's cursors become `set` (normalised), and
 * the step just made records them as where it leaves them, so that a redo
 * puts them there again. */
void document__place_cursors(document *doc, uint64_t owner, const doc_cursor_set *set);
/* owner's cursors go back to where the step left them; everyone else's
 * follow the text. */
int document__undo(document_service *svc, document *doc, uint64_t owner, bool redo);

/* Makes the text what the file holds (a reload): one undoable step that
 * replaces the whole text (none when the text is the same), after which the
 * document is clean. Returns 0 or ECP_ENOMEM. */
int document__replace_all(document_service *svc, document *doc, const char *text, size_t len, ecp_error *err);

/* What a replacement of the whole text deletes, measured ahead (off the
 * loop, from a snapshot of the text as it was at `version`). */
typedef struct doc_whole_measure {
    uint64_t version;
    doc_units gone; /* the whole old text */
    doc_units tail; /* its last line */
    bool came_known; /* came_gone and came_tail hold the same for the new text */
    doc_units came_gone, came_tail;
} doc_whole_measure;

/* What one text spans in every encoding, known or not. */
typedef struct doc_swap_measure {
    bool known;
    doc_units gone; /* all of it */
    doc_units tail; /* its last line */
} doc_swap_measure;

/* Makes `tree` (taken over, also on failure) the document's text as one
 * undoable step; the old tree is kept by the step, not copied. measure may
 * be NULL, or describe the text at a version that is no longer current:
 * then what is deleted is measured here. */
int document__replace_tree(document_service *svc, document *doc, uint64_t owner, piece_tree *tree,
                           doc_cursor_policy policy,
                           const doc_whole_measure *measure, ecp_error *err);

/* Drops the oldest steps until the history holds no more than the service's
 * limit of bytes; a redo branch goes only when nothing else is left. */
void document__history_trim(document_service *svc, document *doc);

void document__history_init(doc_history *h, uint64_t base_id);
void document__history_free(doc_history *h);
uint64_t document__state_id(const document *doc);
bool document__can_undo(const document *doc);
bool document__can_redo(const document *doc);

/* ----- editing.c ------------------------------------------------------------- */

/* The document's indent unit: its .editorconfig's when it says, else
 * document__detect_indent's. */
document_indent document__indent(document_service *svc, document *doc);
/* The unit the document's own lines use (document_indent_of). */
document_indent document__detect_indent(const document *doc);

/* ----- editorconfig.c ------------------------------------------------------------ */

/* What the .editorconfig files between `workspace` (resolved) and `file`
 * say about file; nothing when either is NULL or file lies outside. */
void document__editorconfig(const char *workspace, const char *file, document_format *out);
/* The document's, read once. */
const document_format *document__format(document_service *svc, document *doc);
/* Before a save to path (the document's own file, or a save as): what
 * trim_trailing_whitespace = true and insert_final_newline = true ask for,
 * as one undoable edit by the server (none when nothing changes, and none
 * for a text over 8 MiB). */
void document__format_for_save(document_service *svc, document *doc, const char *path);
/* At teardown, once the job set is closed: frees the lookups still waiting. */
void document__format_lookups_free(document_service *svc);

/* ----- local.c: shared by the files above ---------------------------------- */

/* The open document with that id, or NULL and ECP_ENOTFOUND "Document not
 * found" in err. */
document *document__find(document_service *svc, const char *id, ecp_error *err);
/* document__find, then ECP_EREADONLY "Document is read-only" for a document
 * that refuses edits. */
document *document__find_writable(document_service *svc, const char *id, ecp_error *err);
/* The same as a status: 0, ECP_ENOTFOUND or ECP_EREADONLY, with the document
 * in *out when it is open and *version (may be NULL) its version, 0 when it
 * is not, so that a refusal can still report it. */
int document__writable(document_service *svc, const char *id, uint64_t *version, document **out, ecp_error *err);
/* Hands [offset, offset + len) of the tree to fn, chunk by chunk. */
void document__read_bytes(const piece_tree *tree, size_t offset, size_t len, document_chunk_fn fn, void *ctx);
uint64_t document__now_ns(void);
uint64_t document__new_state_id(document_service *svc);
void document__emit_change(document_service *svc, document *doc, const document_change *changes, size_t count);
void document__emit_cursors(document_service *svc, document *doc, uint64_t owner);
/* The document as document_info describes it (its strings are the document's). */
void document__fill_info(const document *doc, document_info *out);
/* The file as it is now is what the text is (markClean): recorded, followed,
 * and no longer flagged. Nothing for a document without a file. */
void document__adopt_disk(document_service *svc, document *doc);

#endif
