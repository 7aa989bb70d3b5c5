/* snapshot: a document frozen at one moment, for reading off the loop.
 *
 * The text is a piece tree snapshot (shared bytes, no copy); the few strings
 * that name the document are copied into the same allocation as the struct,
 * so that taking a snapshot costs two allocations and nothing it holds ever
 * changes: any thread may read it, several at once.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

struct document_snapshot {
    piece_tree_snapshot *text;
    uint64_t version;
    bool crlf;
    bool bom;
    const char *document_id; /* these three point into the same allocation */
    const char *uri;
    const char *language_id;
};

document_snapshot *document__snapshot_of(document *doc, ecp_error *err)
{
    size_t id_len = strlen(doc->id) + 1, uri_len = strlen(doc->uri) + 1, lang_len = strlen(doc->language_id) + 1;
    document_snapshot *snap = malloc(sizeof *snap + id_len + uri_len + lang_len);
    if (!snap)
        goto no_memory;
    snap->text = piece_tree_snapshot_take(doc->tree);
    if (!snap->text) {
        free(snap);
        goto no_memory;
    }
    char *strings = (char *)(snap + 1);
    snap->document_id = memcpy(strings, doc->id, id_len);
    snap->uri = memcpy(strings + id_len, doc->uri, uri_len);
    snap->language_id = memcpy(strings + id_len + uri_len, doc->language_id, lang_len);
    snap->version = doc->version;
    snap->crlf = doc->crlf;
    snap->bom = doc->bom;
    return snap;

no_memory:
    ecp_error_set(err, ECP_ENOMEM, "Not enough memory for a snapshot of %s", doc->uri);
    return NULL;
}

document_snapshot *document_snapshot_take(document_service *self, const char *document_id, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    return doc ? document__snapshot_of(doc, err) : NULL;
}

void document_snapshot_release(document_snapshot *snap)
{
    if (!snap)
        return;
    piece_tree_snapshot_release(snap->text);
    free(snap);
}

const char *document_snapshot_id(const document_snapshot *snap) { return snap->document_id; }
const char *document_snapshot_uri(const document_snapshot *snap) { return snap->uri; }
const char *document_snapshot_language_id(const document_snapshot *snap) { return snap->language_id; }
uint64_t document_snapshot_version(const document_snapshot *snap) { return snap->version; }
bool document_snapshot_crlf(const document_snapshot *snap) { return snap->crlf; }
bool document_snapshot_bom(const document_snapshot *snap) { return snap->bom; }
size_t document_snapshot_length(const document_snapshot *snap) { return piece_tree_snapshot_length(snap->text); }

size_t document_snapshot_line_count(const document_snapshot *snap)
{
    return piece_tree_snapshot_line_count(snap->text);
}

static void read_bytes(const piece_tree_snapshot *text, size_t offset, size_t len, document_chunk_fn fn, void *ctx)
{
    piece_tree_snapshot_reader r;
    piece_tree_snapshot_reader_init(&r, text, offset, len);
    const char *chunk;
    size_t n;
    while (piece_tree_snapshot_reader_next(&r, &chunk, &n))
        fn(ctx, chunk, n);
}

int document_snapshot_read_line(const document_snapshot *snap, size_t line, document_chunk_fn fn, void *ctx,
                                ecp_error *err)
{
    size_t lines = piece_tree_snapshot_line_count(snap->text);
    if (line >= lines)
        return ecp_error_set(err, ECP_ERANGE, "Invalid position: line %zu is past the end (%zu line%s)", line, lines,
                             lines == 1 ? "" : "s");
    size_t start, len;
    piece_tree_snapshot_line_range(snap->text, line, &start, &len);
    read_bytes(snap->text, start, len, fn, ctx);
    return 0;
}

void document__read_lines(piece_tree_lines *it, size_t first, const document_line_reader *reader, void *ctx)
{
    size_t line = first;
    bool begun = false;
    const char *chunk;
    size_t n;
    bool ends;
    while (piece_tree_lines_next(it, &chunk, &n, &ends)) {
        if (!begun && reader->begin)
            reader->begin(ctx, line);
        begun = true;
        if (n)
            reader->chunk(ctx, chunk, n);
        if (ends) {
            if (reader->end)
                reader->end(ctx, line);
            line++;
            begun = false;
        }
    }
}

int document_snapshot_read_lines(const document_snapshot *snap, size_t first, size_t end,
                                 const document_line_reader *reader, void *ctx, ecp_error *err)
{
    (void)err;
    size_t lines = piece_tree_snapshot_line_count(snap->text);
    if (end > lines)
        end = lines;
    if (first >= end)
        return 0;
    piece_tree_lines it;
    piece_tree_snapshot_lines_init(&it, snap->text, first, end - first);
    document__read_lines(&it, first, reader, ctx);
    return 0;
}

int document_snapshot_read(const document_snapshot *snap, size_t offset, size_t len, document_chunk_fn fn, void *ctx,
                           ecp_error *err)
{
    size_t total = piece_tree_snapshot_length(snap->text);
    if (offset > total || len > total - offset)
        return ecp_error_set(err, ECP_ERANGE, "Invalid range: %zu bytes from byte %zu reach past the end (%zu byte%s)",
                             len, offset, total, total == 1 ? "" : "s");
    read_bytes(snap->text, offset, len, fn, ctx);
    return 0;
}

static bool next_chunk(void *ctx, const char **chunk, size_t *len)
{
    return piece_tree_snapshot_reader_next(ctx, chunk, len);
}

int document__snapshot_write(const document_snapshot *snap, const char *path, doc_write *how, ecp_error *err)
{
    piece_tree_snapshot_reader r;
    piece_tree_snapshot_reader_init(&r, snap->text, 0, piece_tree_snapshot_length(snap->text));
    how->crlf = snap->crlf;
    how->bom = snap->bom;
    return document__write_stream_as(path, next_chunk, &r, how, err);
}
