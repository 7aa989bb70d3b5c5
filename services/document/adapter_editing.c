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
    json_writer *w = doc_adapter_edit_result_begin(call, status, version, err);
    if (!w)
        return;
    if (status == 0)
        doc_adapter_write_caller_cursors(ad, call, w, id);
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

/* ----- find and replace ----------------------------------------------------------------- */

/* The find options every search and replace reads; false once answered. */
static bool arg_find_options(ecp_call *call, document_find_options *o)
{
    json_ref params = ecp_call_params(call), from = JSON_NO_REF, range = JSON_NO_REF;
    ecp_str query;
    memset(o, 0, sizeof *o);
    if (!ecp_arg_string(call, params, "query", &query) || !ecp_arg_bool_opt(call, params, "regex", false, &o->regex) ||
        !ecp_arg_bool_opt(call, params, "caseSensitive", false, &o->case_sensitive) ||
        !ecp_arg_bool_opt(call, params, "wholeWord", false, &o->whole_word) ||
        !ecp_arg_object_opt(call, params, "from", &from) || !ecp_arg_object_opt(call, params, "range", &range))
        return false;
    o->query = query.ptr;
    o->query_len = query.len;
    if (from != JSON_NO_REF) {
        if (!doc_adapter_arg_position(call, params, "from", &o->from))
            return false;
        o->has_from = true;
    }
    if (range != JSON_NO_REF) {
        if (!doc_adapter_arg_range(call, params, "range", &o->range))
            return false;
        o->has_range = true;
    }
    return true;
}

static void write_search(json_writer *w, const document_search *s)
{
    bool complete;
    size_t total = document_search_total(s, &complete);
    jw_object_begin(w);
    jw_key(w, "matches");
    jw_array_begin(w);
    for (size_t i = 0; i < document_search_count(s); i++) {
        const document_range *r = document_search_match(s, i);
        doc_adapter_write_range(w, r->start.line, r->start.column, r->end.line, r->end.column);
    }
    jw_array_end(w);
    jw_key_int(w, "total", (int64_t)total);
    if (!complete)
        jw_key_bool(w, "totalCapped", true);
    size_t current;
    if (document_search_current(s, &current))
        jw_key_int(w, "current", (int64_t)current);
    jw_object_end(w);
}

static void reply_search(ecp_call *call, document_search *s, int status, const ecp_error *err)
{
    if (status != 0) {
        doc_adapter_reply_error(call, status, err);
        return;
    }
    write_search(ecp_call_result(call), s);
    ecp_call_finish(call);
}

typedef struct find_job {
    document_search *search;
    int status;
    ecp_error err;
} find_job;

static void find_work(ecp_job *job, unsigned item)
{
    (void)item;
    find_job *t = ecp_job_data(job);
    if (!ecp_job_cancelled(job))
        t->status = document_search_run(t->search, &t->err);
}

static void find_done(ecp_job *job)
{
    find_job *t = ecp_job_data(job);
    if (!ecp_job_cancelled(job))
        reply_search(ecp_job_call(job), t->search, t->status, &t->err);
}

static void find_free(void *data)
{
    find_job *t = data;
    document_search_free(t->search);
    free(t);
}

static const ecp_job_type find_job_type = {
    .name = "document.find", .lane = ECP_LANE_LONG,
    .work = find_work, .done = find_done, .free_data = find_free,
};

void doc_method_find(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id;
    document_find_options o;
    size_t limit;
    if (!doc_adapter_arg_doc(call, &id) || !arg_find_options(call, &o) ||
        !ecp_arg_bool_opt(call, params, "backwards", false, &o.backwards) ||
        !ecp_arg_index_opt(call, params, "limit", DOCUMENT_FIND_LIMIT, &limit))
        return;
    if (limit == 0 || limit > DOCUMENT_FIND_TOTAL_MAX) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "limit: must be between 1 and %zu, got %zu",
                       (size_t)DOCUMENT_FIND_TOTAL_MAX, limit);
        return;
    }
    o.limit = limit;
    ecp_error err;
    document_search *s = document_search_begin(ad->svc, id.ptr, &o, ecp_call_encoding(call), &err);
    if (!s) {
        doc_adapter_reply_error(call, err.status, &err);
        return;
    }
    if (document_search_length(s) > DOCUMENT_FIND_OFF_LOOP_BYTES) {
        /* a large text is searched from its snapshot on the pool, as saves write it */
        find_job *t = xcalloc(1, sizeof *t);
        t->search = s;
        ecp_job *job = ecp_job_new(ad->jobs, &find_job_type, t);
        ecp_job_serve(job, call);
        ecp_job_start(job, 1);
        return;
    }
    int rc = document_search_run(s, &err);
    reply_search(call, s, rc, &err);
    document_search_free(s);
}

/* document/replace with a query: find and replace. Without one it is the
 * catalogue's replacement of a range (adapter_text.c). */
void doc_method_replace_matches(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id, replacement;
    document_find_options o;
    bool all;
    if (!doc_adapter_arg_doc(call, &id) || !arg_find_options(call, &o) ||
        !ecp_arg_string(call, params, "replacement", &replacement) ||
        !ecp_arg_bool_opt(call, params, "all", false, &all))
        return;
    ecp_error err;
    uint64_t version = 0;
    size_t replaced = 0;
    int rc = document_replace_matches(ad->svc, id.ptr, ecp_call_client(call), &o, replacement.ptr, replacement.len, all,
                                      ecp_call_encoding(call), &version, &replaced, &err);
    json_writer *w = doc_adapter_edit_result_begin(call, rc, version, &err);
    if (!w)
        return;
    if (rc == 0) {
        jw_key_int(w, "replaced", (int64_t)replaced);
        doc_adapter_write_caller_cursors(ad, call, w, id.ptr);
    }
    jw_object_end(w);
    ecp_call_finish(call);
}
