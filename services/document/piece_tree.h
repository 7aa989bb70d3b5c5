/* piece_tree: the text buffer behind every document.
 *
 * A piece tree holds a document's bytes as a balanced tree of pieces, each a
 * (buffer, start, length) slice of either the original file contents or an
 * append-only "add" buffer that receives every inserted byte. Each node also
 * records the byte length and the number of '\n' bytes in its subtree, so that
 * inserting, deleting, and finding where a line starts all cost O(log n) in the
 * number of pieces, and nothing is ever stored per line.
 *
 * The tree knows bytes and '\n' only: a line is the bytes between two '\n'
 * (the '\n' is not part of the line's text), so a buffer of N newlines has N+1
 * lines. It never interprets encodings: any byte sequence, valid UTF-8 or not,
 * is stored and returned unchanged. CRLF handling belongs to the caller.
 *
 * Offsets are byte offsets from the start of the buffer. Functions that take an
 * offset or line assert it is in range: range checks are the caller's job, and
 * the caller has line_count/length to make them.
 *
 * Threads: a tree belongs to one thread, its owner's, and every function
 * that takes a piece_tree must be called there, readers included: the const
 * lookups update a private cache of the last piece visited (it makes reading
 * lines in order cost one memchr each). What may cross threads is a
 * snapshot (below): the owner takes it, and from then on any thread, or
 * several at once, may read it while the owner keeps editing the tree, and
 * after the owner has freed the tree. Releasing a snapshot is safe from any
 * thread, once nobody reads it any more.
 */
#ifndef ECPD_PIECE_TREE_H
#define ECPD_PIECE_TREE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct piece_tree piece_tree;

/* Creates an empty buffer. Returns NULL only when out of memory. */
piece_tree *piece_tree_new(void);

/* Creates a buffer over `original`, which the tree takes ownership of (it must
 * come from malloc; the tree frees it). No copy is made: a 100 MB file costs
 * 100 MB plus the tree's own bookkeeping. `original` may be NULL when len is 0.
 * Returns NULL when out of memory; `original` then still belongs to the
 * caller. */
piece_tree *piece_tree_new_owning(char *original, size_t len);

void piece_tree_free(piece_tree *self);

/* The whole text as one run of bytes, when the tree holds it so: a tree
 * made by piece_tree_new_owning and never edited since (its original, as it
 * was handed over). NULL otherwise. Valid while the tree lives. */
const char *piece_tree_flat(const piece_tree *self);

/* Total bytes, and lines (number of '\n' plus one). */
size_t piece_tree_length(const piece_tree *self);
size_t piece_tree_line_count(const piece_tree *self);

/* Inserts len bytes at offset (0 <= offset <= length). The bytes are copied.
 * Returns 0, or -1 when out of memory (the buffer is then unchanged). */
int piece_tree_insert(piece_tree *self, size_t offset, const char *text, size_t len);

/* Deletes len bytes starting at offset (offset + len <= length). Returns 0 or
 * -1 when out of memory (unchanged). */
int piece_tree_delete(piece_tree *self, size_t offset, size_t len);

/* Byte offset where line `line` starts (line < line_count). */
size_t piece_tree_line_start(const piece_tree *self, size_t line);

/* Byte length of line `line`, not counting its '\n'. */
size_t piece_tree_line_length(const piece_tree *self, size_t line);

/* Where line `line` starts and its length without its '\n': line_start and
 * line_length in one call, for reading lines in order. */
void piece_tree_line_range(const piece_tree *self, size_t line, size_t *start, size_t *len);

/* The line that contains byte `offset` (offset <= length; the offset of a '\n'
 * belongs to the line that the '\n' ends). */
size_t piece_tree_line_of_offset(const piece_tree *self, size_t offset);

/* Copies len bytes starting at offset into out (which has room for len bytes).
 * Returns len. */
size_t piece_tree_copy(const piece_tree *self, size_t offset, size_t len, char *out);

/* Returns the byte at offset (offset < length). */
char piece_tree_byte_at(const piece_tree *self, size_t offset);

/* Reads a range without copying it: walks the pieces that cover
 * [offset, offset+len) in order. Usage:
 *
 *     piece_tree_reader r;
 *     piece_tree_reader_init(&r, tree, offset, len);
 *     const char *chunk; size_t n;
 *     while (piece_tree_reader_next(&r, &chunk, &n)) consume(chunk, n);
 *
 * The chunks point into the tree's buffers and stay valid until the next
 * insert or delete. The reader holds no heap memory; a finished or abandoned
 * reader needs no cleanup. */
typedef struct piece_tree_reader {
    const piece_tree *tree;
    const void *node;   /* the node whose piece is read next; NULL when done */
    size_t skip;        /* bytes of that piece already consumed */
    size_t remaining;   /* bytes still to deliver */
} piece_tree_reader;

void piece_tree_reader_init(piece_tree_reader *r, const piece_tree *self, size_t offset, size_t len);
bool piece_tree_reader_next(piece_tree_reader *r, const char **chunk, size_t *len);

/* ---- snapshots ------------------------------------------------------------
 *
 * An immutable view of the text at the moment it was taken. Taking one costs
 * O(pieces) time and pieces * 24 bytes (the pieces' pointers and prefix sums
 * of their lengths and '\n' counts) and copies no text: the snapshot shares
 * the tree's bytes, which are reference counted and outlive the tree while a
 * snapshot needs them. Lookups cost O(log pieces) plus a scan inside one
 * piece. Offsets and lines follow the same rules as the tree's.
 *
 * What it costs the tree: while a snapshot is alive, backspacing over bytes
 * typed before it was taken no longer hands them back to the add buffer (the
 * snapshot may show them; typing would overwrite them), so the next
 * keystroke starts a new piece. See the design notes in piece_tree.c. */
typedef struct piece_tree_snapshot piece_tree_snapshot;

/* On the tree's thread. Returns NULL when out of memory. The caller owns the
 * snapshot and releases it. */
piece_tree_snapshot *piece_tree_snapshot_take(piece_tree *self);

/* From any thread, once no thread reads the snapshot. NULL is ignored. */
void piece_tree_snapshot_release(piece_tree_snapshot *snap);

/* The rest read a snapshot: any thread, any number at once. */
size_t piece_tree_snapshot_length(const piece_tree_snapshot *snap);
size_t piece_tree_snapshot_line_count(const piece_tree_snapshot *snap);
size_t piece_tree_snapshot_line_start(const piece_tree_snapshot *snap, size_t line);
void piece_tree_snapshot_line_range(const piece_tree_snapshot *snap, size_t line, size_t *start, size_t *len);
size_t piece_tree_snapshot_copy(const piece_tree_snapshot *snap, size_t offset, size_t len, char *out);
/* Memory the snapshot holds of its own (not the shared text). */
size_t piece_tree_snapshot_bytes(const piece_tree_snapshot *snap);

/* Like piece_tree_reader; the chunks stay valid until the snapshot is
 * released. */
typedef struct piece_tree_snapshot_reader {
    const piece_tree_snapshot *snap;
    size_t piece;     /* the piece read next */
    size_t skip;      /* bytes of it already consumed */
    size_t remaining; /* bytes still to deliver */
} piece_tree_snapshot_reader;

void piece_tree_snapshot_reader_init(piece_tree_snapshot_reader *r, const piece_tree_snapshot *snap, size_t offset,
                                     size_t len);
bool piece_tree_snapshot_reader_next(piece_tree_snapshot_reader *r, const char **chunk, size_t *len);

/* ---- lines in order --------------------------------------------------------
 *
 * Reads lines in order without a lookup per line: one descent to the first
 * line, then the pieces are walked leaf by leaf and cut at each '\n'.
 * Usage:
 *
 *     piece_tree_lines it;
 *     piece_tree_lines_init(&it, tree, first, count);
 *     const char *chunk; size_t n; bool ends;
 *     while (piece_tree_lines_next(&it, &chunk, &n, &ends))
 *         consume(chunk, n), ends ? finish_line() : 0;
 *
 * Each of the `count` lines from `first` (first + count <= line_count) comes
 * as one or more chunks (a line that spans pieces comes in several; an empty
 * line as one empty chunk), the last with `ends` set; the '\n' is never part
 * of a chunk. Chunks point into the tree's buffers and stay valid until the
 * next insert or delete (of a snapshot: until it is released); nothing
 * needs freeing. */
typedef struct piece_tree_lines {
    piece_tree_reader tree_reader;
    piece_tree_snapshot_reader snap_reader;
    bool snapshot;     /* snap_reader is the one in use */
    const char *at;    /* the rest of the current chunk */
    size_t left;       /* its length */
    size_t lines_left; /* lines not yet ended */
} piece_tree_lines;

void piece_tree_lines_init(piece_tree_lines *it, const piece_tree *self, size_t first, size_t count);
void piece_tree_snapshot_lines_init(piece_tree_lines *it, const piece_tree_snapshot *snap, size_t first, size_t count);
bool piece_tree_lines_next(piece_tree_lines *it, const char **chunk, size_t *len, bool *ends);

/* The next line whole, copied into out (cap bytes; a longer line is cut to
 * cap, and *len is still its full length): finding its end and copying it
 * are one pass, so this is the fastest way to read lines into a buffer.
 * Bytes of out past the line may be overwritten too (up to cap). Returns
 * false when every line has been read. Do not mix with lines_next on one
 * iterator in the middle of a line. */
bool piece_tree_lines_copy(piece_tree_lines *it, char *out, size_t cap, size_t *len);

/* Number of pieces (for tests and benchmarks that watch fragmentation). */
size_t piece_tree_piece_count(const piece_tree *self);

/* Checks every invariant (balance, subtree sums, '\n' counts against the real
 * bytes). Returns true when the tree is sound. O(n): tests only. */
bool piece_tree_check(const piece_tree *self);

#endif
