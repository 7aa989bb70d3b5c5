/* adapter_internal.h: what the document adapter's files share (adapter.c,
 * adapter_text.c, adapter_cursor.c); included by no other file. */
#ifndef ECPD_DOCUMENT_ADAPTER_INTERNAL_H
#define ECPD_DOCUMENT_ADAPTER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "adapter.h"
#include "interface.h"
#include "rpc.h"

struct pending;

typedef struct doc_adapter {
    document_service *svc;
    ecp_bus *bus;
    struct pending *running; /* requests the service has not answered yet */
    struct set_content_job *contents; /* large setContents being made on the pool */
    ecp_job_set *jobs;       /* big answers written off the loop */
    document_viewport_part parts[DOCUMENT_VIEWPORT_PARTS]; /* what viewport's include may name */
    size_t part_count;
} doc_adapter;

/* A document/content answer for a text larger than this is written on the
 * thread pool from a snapshot, and a setContent of a text this large (as it
 * stands in the message) is unescaped and built into a tree there, so the
 * loop goes on serving everyone else. */
#define CONTENT_OFF_LOOP_BYTES ((size_t)1 << 20)

/* ----- writing, errors and params (adapter.c) ----- */

void doc_adapter_write_chunk(void *ctx, const char *p, size_t len);
void doc_adapter_write_snapshot_text(json_writer *w, const document_snapshot *snap, size_t offset, size_t len);
void doc_adapter_write_position(json_writer *w, size_t line, size_t column);
/* {start: Position, end: Position} */
void doc_adapter_write_range(json_writer *w, size_t start_line, size_t start_column, size_t end_line,
                             size_t end_column);
void doc_adapter_write_cursors(json_writer *w, const document_cursor *list, size_t count);
void doc_adapter_reply_error(ecp_call *call, int status, const ecp_error *err);
void doc_adapter_reply_edit(ecp_call *call, int status, uint64_t version, const ecp_error *err);
/* The same, left open for more members: NULL when the call was answered
 * with an error instead; otherwise close the object and finish the call. */
json_writer *doc_adapter_edit_result_begin(ecp_call *call, int status, uint64_t version, const ecp_error *err);
/* "cursors": the caller's cursors in document id, in its encoding. */
void doc_adapter_write_caller_cursors(doc_adapter *ad, ecp_call *call, json_writer *w, const char *id);
bool doc_adapter_arg_doc(ecp_call *call, ecp_str *id);
bool doc_adapter_arg_doc_info(doc_adapter *ad, ecp_call *call, ecp_str *id, document_info *info);
bool doc_adapter_arg_position(ecp_call *call, json_ref obj, const char *name, document_position *out);
bool doc_adapter_arg_range(ecp_call *call, json_ref obj, const char *name, document_range *out);
unsigned doc_adapter_group_flag(ecp_call *call, bool *ok);
/* The array param `key` (edits, cursors), which must not be empty: its first
 * item and its length; false when the call was answered -32602. */
bool doc_adapter_arg_list(ecp_call *call, const char *key, json_ref *first, size_t *count);
/* Item i of that list as a client names it ("edits[2]"), in the call's arena;
 * NULL when the item is not an object (the call answered -32602). */
const char *doc_adapter_list_item(ecp_call *call, const char *key, size_t i, json_ref item);

/* adapter_text.c: the message's own JSON string for a large setContent's text. */
bool doc_adapter_content_as_sent(const doc_adapter *ad, const document_change *c, const char **json, size_t *len,
                                 ecp_shared **owner);

/* ----- method handlers (adapter_text.c, adapter_cursor.c) ----- */

void doc_method_content(void *ctx, ecp_call *call);
void doc_method_line(void *ctx, ecp_call *call);
void doc_method_lines(void *ctx, ecp_call *call);
void doc_method_viewport(void *ctx, ecp_call *call);
void doc_method_text_in_range(void *ctx, ecp_call *call);
void doc_method_version(void *ctx, ecp_call *call);
void doc_method_insert(void *ctx, ecp_call *call);
void doc_method_delete(void *ctx, ecp_call *call);
void doc_method_replace(void *ctx, ecp_call *call);
void doc_method_set_content(void *ctx, ecp_call *call);
void doc_method_edit(void *ctx, ecp_call *call);
void doc_method_type(void *ctx, ecp_call *call);
void doc_method_undo(void *ctx, ecp_call *call);
void doc_method_redo(void *ctx, ecp_call *call);
void doc_method_can_undo(void *ctx, ecp_call *call);
void doc_method_can_redo(void *ctx, ecp_call *call);
void doc_method_is_dirty(void *ctx, ecp_call *call);
void doc_method_mark_clean(void *ctx, ecp_call *call);
void doc_method_position_to_offset(void *ctx, ecp_call *call);
void doc_method_offset_to_position(void *ctx, ecp_call *call);
void doc_method_word_at_position(void *ctx, ecp_call *call);
void doc_method_cursors(void *ctx, ecp_call *call);
void doc_method_set_cursors(void *ctx, ecp_call *call);
void doc_method_set_cursor(void *ctx, ecp_call *call);
void doc_method_add_cursor(void *ctx, ecp_call *call);
void doc_method_move_cursors(void *ctx, ecp_call *call);
void doc_method_select_all(void *ctx, ecp_call *call);
void doc_method_clear_selections(void *ctx, ecp_call *call);
void doc_method_selections(void *ctx, ecp_call *call);

/* ----- editing commands (adapter_editing.c) ----- */

void doc_method_indent(void *ctx, ecp_call *call);
void doc_method_outdent(void *ctx, ecp_call *call);
void doc_method_newline(void *ctx, ecp_call *call);
void doc_method_duplicate_lines(void *ctx, ecp_call *call);
void doc_method_move_lines(void *ctx, ecp_call *call);
void doc_method_delete_word(void *ctx, ecp_call *call);
void doc_method_toggle_comment(void *ctx, ecp_call *call);
void doc_method_find(void *ctx, ecp_call *call);
void doc_method_replace_matches(void *ctx, ecp_call *call);

#endif
