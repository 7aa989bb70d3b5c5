/* adapter_editing.c: the editing commands (document/indent, newline,
 * moveLines, toggleComment, ...) on the wire. Each answers as document/type
 * does, with the caller's cursors after it. */
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "error.h"

/* {success, version, cursors} (an unknown or read-only document is a
 * result with success false, as for every edit). */
static void reply_command(doc_adapter *ad, ecp_call *call, const char *id, int status, uint64_t version,
                          const ecp_error *err)
{
    if (status == ECP_ERANGE || status == ECP_EINVAL) {
        doc_adapter_reply_error(call, status, err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    jw_key_int(w, "version", (int64_t)version);
    if (status != 0) {
        jw_key_string(w, "error", err->message);
    } else {
        document_cursor *list = NULL;
        size_t count = 0;
        jw_key(w, "cursors");
        if (document_get_cursors(ad->svc, id, ecp_call_client(call), ecp_call_encoding(call), &list, &count, NULL) == 0)
            doc_adapter_write_cursors(w, list, count);
        else
            doc_adapter_write_cursors(w, NULL, 0);
        free(list);
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

static void run(doc_adapter *ad, ecp_call *call, const ecp_str *id, document_command command)
{
    ecp_error err;
    uint64_t version = 0;
    int rc = document_run_command(ad->svc, id->ptr, ecp_call_client(call), command, &version, &err);
    reply_command(ad, call, id->ptr, rc, version, &err);
}

static void simple(void *ctx, ecp_call *call, document_command command)
{
    ecp_str id;
    if (doc_adapter_arg_doc(call, &id))
        run(ctx, call, &id, command);
}

void doc_method_indent(void *ctx, ecp_call *call) { simple(ctx, call, DOCUMENT_INDENT); }
void doc_method_outdent(void *ctx, ecp_call *call) { simple(ctx, call, DOCUMENT_OUTDENT); }
void doc_method_newline(void *ctx, ecp_call *call) { simple(ctx, call, DOCUMENT_NEWLINE); }
void doc_method_duplicate_lines(void *ctx, ecp_call *call) { simple(ctx, call, DOCUMENT_DUPLICATE_LINES); }
void doc_method_toggle_comment(void *ctx, ecp_call *call) { simple(ctx, call, DOCUMENT_TOGGLE_COMMENT); }

/* A two-way direction param: 0 for `a`, 1 for `b`, -1 (answered) for anything else. */
static int direction(ecp_call *call, const char *a, const char *b)
{
    ecp_str dir;
    if (!ecp_arg_string(call, ecp_call_params(call), "direction", &dir))
        return -1;
    if (strcmp(dir.ptr, a) == 0 && strlen(a) == dir.len)
        return 0;
    if (strcmp(dir.ptr, b) == 0 && strlen(b) == dir.len)
        return 1;
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "direction: must be %s or %s, got \"%s\"", a, b, dir.ptr);
    return -1;
}

void doc_method_move_lines(void *ctx, ecp_call *call)
{
    ecp_str id;
    int d;
    if (doc_adapter_arg_doc(call, &id) && (d = direction(call, "up", "down")) >= 0)
        run(ctx, call, &id, d == 0 ? DOCUMENT_MOVE_LINES_UP : DOCUMENT_MOVE_LINES_DOWN);
}

void doc_method_delete_word(void *ctx, ecp_call *call)
{
    ecp_str id;
    int d;
    if (doc_adapter_arg_doc(call, &id) && (d = direction(call, "left", "right")) >= 0)
        run(ctx, call, &id, d == 0 ? DOCUMENT_DELETE_WORD_LEFT : DOCUMENT_DELETE_WORD_RIGHT);
}
