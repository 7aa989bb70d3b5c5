/* adapter_cursor.c: the document methods of cursors and selections. */
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "error.h"
#include "job.h"

/* ----- cursors ---------------------------------------------------------------------------------- */

/* cursors and selections: the documentId read and the caller's cursors in
 * it, in enc (a list to free); false when the call was answered. */
static bool caller_cursors(doc_adapter *ad, ecp_call *call, ecp_position_encoding enc, ecp_str *id,
                           document_cursor **list, size_t *count)
{
    ecp_error err;
    if (!doc_adapter_arg_doc(call, id))
        return false;
    int rc = document_get_cursors(ad->svc, id->ptr, ecp_call_client(call), enc, list, count, &err);
    if (rc != 0)
        doc_adapter_reply_error(call, rc, &err);
    return rc == 0;
}

void doc_method_cursors(void *ctx, ecp_call *call)
{
    ecp_str id;
    document_cursor *list;
    size_t count;
    if (!caller_cursors(ctx, call, ecp_call_encoding(call), &id, &list, &count))
        return;
    json_writer *w = ecp_call_result_key(call, "cursors");
    doc_adapter_write_cursors(w, list, count);
    ecp_call_finish_key(call, w);
    free(list);
}

/* {success} for cursor changes: an unknown document is success:false, a
 * position past the end is InvalidPosition. */
static void reply_cursor_change(ecp_call *call, int rc, const ecp_error *err)
{
    if (rc == 0 || rc == ECP_ENOTFOUND)
        ecp_call_reply_success(call, rc == 0);
    else
        doc_adapter_reply_error(call, rc, err);
}

/* A Cursor object: {position, selection?: {anchor, active}, desiredColumn?}. */
static bool arg_cursor(ecp_call *call, json_ref obj, const char *name, document_cursor *out)
{
    arena *a = ecp_call_arena(call);
    json_ref sel;
    int64_t desired;
    if (!doc_adapter_arg_position(call, obj, arena_sprintf(a, "%s.position", name), &out->active) ||
        !ecp_arg_object_opt(call, obj, arena_sprintf(a, "%s.selection", name), &sel) ||
        !ecp_arg_int_opt(call, obj, arena_sprintf(a, "%s.desiredColumn", name), -1, &desired))
        return false;
    out->anchor = out->active;
    if (sel != JSON_NO_REF) {
        const char *sname = arena_sprintf(a, "%s.selection", name);
        if (!doc_adapter_arg_position(call, sel, arena_sprintf(a, "%s.anchor", sname), &out->anchor) ||
            !doc_adapter_arg_position(call, sel, arena_sprintf(a, "%s.active", sname), &out->active))
            return false;
    }
    out->has_desired_column = desired >= 0;
    out->desired_column = desired >= 0 ? (size_t)desired : 0;
    return true;
}

void doc_method_set_cursors(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    const json_doc *jd = ecp_call_doc(call);
    ecp_str id;
    json_ref first;
    size_t count;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_list(call, "cursors", &first, &count))
        return;
    document_cursor *list = arena_alloc(ecp_call_arena(call), count * sizeof *list);
    size_t i = 0;
    for (json_ref e = first; e != JSON_NO_REF; e = json_next(jd, e), i++) {
        const char *name = doc_adapter_list_item(call, "cursors", i, e);
        if (!name || !arg_cursor(call, e, name, &list[i]))
            return;
    }
    ecp_error err;
    int rc = document_set_cursors(ad->svc, id.ptr, ecp_call_client(call), list, count, ecp_call_encoding(call), &err);
    reply_cursor_change(call, rc, &err);
}

void doc_method_set_cursor(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), sel;
    ecp_str id;
    document_cursor c = {0};
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_position(call, params, "position", &c.active) ||
        !ecp_arg_object_opt(call, params, "selection", &sel))
        return;
    c.anchor = c.active;
    if (sel != JSON_NO_REF &&
        (!doc_adapter_arg_position(call, sel, "selection.anchor", &c.anchor) || !doc_adapter_arg_position(call, sel, "selection.active", &c.active)))
        return;
    ecp_error err;
    int rc = document_set_cursors(ad->svc, id.ptr, ecp_call_client(call), &c, 1, ecp_call_encoding(call), &err);
    reply_cursor_change(call, rc, &err);
}

void doc_method_add_cursor(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    ecp_error err;
    int rc = document_add_cursor(ad->svc, id.ptr, ecp_call_client(call), &pos, ecp_call_encoding(call), &err);
    reply_cursor_change(call, rc, &err);
}

void doc_method_move_cursors(void *ctx, ecp_call *call)
{
    static const char *const directions[] = {"up", "down", "left", "right"};
    static const char *const units[] = {"character", "word", "line", "page", "document"};
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id, dir_s, unit_s;
    bool select;
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_string(call, params, "direction", &dir_s) ||
        !ecp_arg_string_opt(call, params, "unit", &unit_s) || !ecp_arg_bool_opt(call, params, "select", false, &select))
        return;
    size_t dir = 0, unit = 0;
    while (dir < 4 && strcmp(dir_s.ptr, directions[dir]) != 0)
        dir++;
    if (dir == 4) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "direction: must be up, down, left or right, got \"%s\"",
                       dir_s.ptr);
        return;
    }
    if (unit_s.ptr) {
        while (unit < 5 && strcmp(unit_s.ptr, units[unit]) != 0)
            unit++;
        if (unit == 5) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS,
                           "unit: must be character, word, line, page or document, got \"%s\"", unit_s.ptr);
            return;
        }
    }
    ecp_error err;
    int rc = document_move_cursors(ad->svc, id.ptr, ecp_call_client(call), (document_direction)dir, (document_unit)unit,
                                   select, &err);
    reply_cursor_change(call, rc, &err);
}

/* selectAll and clearSelections: a change of the caller's cursors that reads
 * nothing but the document. */
static void change_own_cursors(void *ctx, ecp_call *call,
                               int (*change)(document_service *, const char *, uint64_t, ecp_error *))
{
    doc_adapter *ad = ctx;
    ecp_str id;
    ecp_error err;
    if (doc_adapter_arg_doc(call, &id))
        reply_cursor_change(call, change(ad->svc, id.ptr, ecp_call_client(call), &err), &err);
}

void doc_method_select_all(void *ctx, ecp_call *call)
{
    change_own_cursors(ctx, call, document_select_all);
}

void doc_method_clear_selections(void *ctx, ecp_call *call)
{
    change_own_cursors(ctx, call, document_clear_selections);
}

void doc_method_selections(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_cursor *list;
    size_t count;
    if (!caller_cursors(ad, call, ECP_ENCODING_UTF8, &id, &list, &count))
        return;
    free(list); /* only their number: each selection's text is read below */
    json_writer *w = ecp_call_result_list(call, "selections");
    for (size_t i = 0; i < count; i++) {
        jw_string_begin(w);
        document_read_selection(ad->svc, id.ptr, ecp_call_client(call), i, doc_adapter_write_chunk, w, NULL);
        jw_string_end(w);
    }
    ecp_call_finish_list(call, w);
}

