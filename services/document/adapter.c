/* adapter: the document methods of the wire (document/open, ...) over the service.
 *
 * Params are read with core's ecp_arg_* readers (they answer -32602 naming the
 * field), service statuses are mapped to the catalogue's codes here and only
 * here, and service events become notifications through a subscription made
 * at init. Because the service fires its events before the function that
 * caused them returns, every notification a request causes is on the bus
 * before that request's response.
 *
 * Text leaves the buffer straight into the JSON writer, chunk by chunk, so a
 * read of a large range costs one copy (the escaped output), not two.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter.h"
#include "error.h"
#include "interface.h"
#include "job.h"
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

/* ----- writing ------------------------------------------------------------------- */

/* document_read's chunk callback: ctx is the writer of an open string. */
static void write_chunk(void *ctx, const char *p, size_t len) { jw_string_chunk(ctx, p, len); }

/* [offset, offset + len) of a snapshot as one JSON string (any thread). */
static void write_snapshot_text(json_writer *w, const document_snapshot *snap, size_t offset, size_t len)
{
    jw_string_begin(w);
    document_snapshot_read(snap, offset, len, write_chunk, w, NULL);
    jw_string_end(w);
}

static void write_position(json_writer *w, size_t line, size_t column)
{
    jw_object_begin(w);
    jw_key_int(w, "line", (int64_t)line);
    jw_key_int(w, "column", (int64_t)column);
    jw_object_end(w);
}

static void write_info(json_writer *w, const document_info *info)
{
    jw_object_begin(w);
    jw_key_string(w, "documentId", info->document_id);
    jw_key_string(w, "uri", info->uri);
    jw_key_string(w, "languageId", info->language_id);
    jw_key_int(w, "version", (int64_t)info->version);
    jw_key_bool(w, "isDirty", info->is_dirty);
    jw_key_bool(w, "isReadOnly", info->is_read_only);
    jw_key_int(w, "lineCount", (int64_t)info->line_count);
    /* Only when it is so: the catalogue's DocumentInfo has no such field. */
    if (info->changed_on_disk)
        jw_key_bool(w, "changedOnDisk", true);
    jw_object_end(w);
}

static void write_cursors(json_writer *w, const document_cursor *list, size_t count)
{
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        const document_cursor *c = &list[i];
        jw_object_begin(w);
        jw_key(w, "position");
        write_position(w, c->active.line, c->active.column);
        if (c->anchor.line != c->active.line || c->anchor.column != c->active.column) {
            jw_key(w, "selection");
            jw_object_begin(w);
            jw_key(w, "anchor");
            write_position(w, c->anchor.line, c->anchor.column);
            jw_key(w, "active");
            write_position(w, c->active.line, c->active.column);
            jw_object_end(w);
        }
        if (c->has_desired_column)
            jw_key_int(w, "desiredColumn", (int64_t)c->desired_column);
        jw_object_end(w);
    }
    jw_array_end(w);
}

/* ----- errors ------------------------------------------------------------------------- */

/* The catalogue's document codes; any other status is an internal error. */
static const ecp_wire_map wire_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_DOCUMENT_NOT_FOUND},
    {ECP_ERANGE, ECP_WIRE_INVALID_POSITION},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
    {ECP_EREADONLY, ECP_WIRE_DOCUMENT_READ_ONLY},
};

static void reply_error(ecp_call *call, int status, const ecp_error *err)
{
    ecp_call_reply_status(call, wire_codes, ECP_WIRE_MAP_COUNT(wire_codes), status, err, NULL);
}

/* EditResult: a document-level refusal is a result, not an error; bad
 * positions and bad params are errors. */
static void reply_edit(ecp_call *call, int status, uint64_t version, const ecp_error *err)
{
    if (status == ECP_ERANGE || status == ECP_EINVAL) {
        reply_error(call, status, err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    jw_key_int(w, "version", (int64_t)version);
    if (status != 0)
        jw_key_string(w, "error", err->message);
    jw_object_end(w);
    ecp_call_finish(call);
}

/* ----- params --------------------------------------------------------------------------- */

static bool arg_doc(ecp_call *call, ecp_str *id)
{
    return ecp_arg_string(call, ecp_call_params(call), "documentId", id);
}

/* Reads documentId and the document's info; answers the error (unknown
 * document: -32001) and returns false when there is none. */
static bool arg_doc_info(doc_adapter *ad, ecp_call *call, ecp_str *id, document_info *info)
{
    ecp_error err;
    if (!arg_doc(call, id))
        return false;
    int rc = document_get_info(ad->svc, id->ptr, info, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return false;
    }
    return true;
}

/* "parent.child" in dst, for the field paths error messages name. Every
 * edit reads a position or a range, so this avoids printf on that path;
 * the readers use the path only while they run, so a stack buffer does. */
static const char *field_path(char *dst, size_t cap, const char *parent, const char *child)
{
    size_t p = strlen(parent), c = strlen(child); /* child is a short literal */
    if (p + 1 + c + 1 > cap)
        p = cap - c - 2; /* shorten the parent, keep the child: it names the field */
    memcpy(dst, parent, p);
    dst[p] = '.';
    memcpy(dst + p + 1, child, c + 1);
    return dst;
}

#define FIELD_PATH_MAX 160

static bool arg_position(ecp_call *call, json_ref obj, const char *name, document_position *out)
{
    json_ref p;
    char path[FIELD_PATH_MAX];
    return ecp_arg_object(call, obj, name, &p) &&
           ecp_arg_index(call, p, field_path(path, sizeof path, name, "line"), &out->line) &&
           ecp_arg_index(call, p, field_path(path, sizeof path, name, "column"), &out->column);
}

static bool arg_range(ecp_call *call, json_ref obj, const char *name, document_range *out)
{
    json_ref r;
    char path[FIELD_PATH_MAX];
    if (!ecp_arg_object(call, obj, name, &r) ||
        !arg_position(call, r, field_path(path, sizeof path, name, "start"), &out->start) ||
        !arg_position(call, r, field_path(path, sizeof path, name, "end"), &out->end))
        return false;
    const document_position *s = &out->start, *e = &out->end;
    if (e->line < s->line || (e->line == s->line && e->column < s->column)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: end (%zu:%zu) precedes start (%zu:%zu)", name, e->line,
                       e->column, s->line, s->column);
        return false;
    }
    return true;
}

static unsigned group_flag(ecp_call *call, bool *ok)
{
    bool group;
    *ok = ecp_arg_bool_opt(call, ecp_call_params(call), "groupWithPrevious", false, &group);
    return group ? DOCUMENT_EDIT_GROUP : 0;
}

/* ----- notifications -------------------------------------------------------------------- */

typedef struct cursors_note {
    doc_adapter *ad;
    const char *id;
} cursors_note;

static void render_open(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const document_info *info = ctx;
    jw_object_begin(w);
    jw_key_string(w, "documentId", info->document_id);
    jw_key_string(w, "uri", info->uri);
    jw_key_string(w, "languageId", info->language_id);
    jw_object_end(w);
}

static void on_open(void *ctx, const document_info *info)
{
    doc_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "document/didOpen", render_open, (void *)info);
}

typedef struct change_note {
    doc_adapter *ad;
    const document_change_event *ev;
    ecp_shared *text; /* the change's text as JSON, escaped on the pool; NULL: written in place */
} change_note;

static bool content_as_sent(const doc_adapter *ad, const document_change *c, const char **json, size_t *len,
                            ecp_shared **owner);

static void render_change(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    change_note *note = ctx;
    const document_change_event *ev = note->ev;
    jw_object_begin(w);
    jw_key_string(w, "documentId", ev->document_id);
    jw_key_string(w, "uri", ev->uri);
    jw_key_int(w, "version", (int64_t)ev->version);
    jw_key(w, "changes");
    jw_array_begin(w);
    for (size_t i = 0; i < ev->count; i++) {
        const document_change *c = &ev->changes[i];
        jw_object_begin(w);
        jw_key(w, "range");
        jw_object_begin(w);
        jw_key(w, "start");
        write_position(w, c->start.line, c->start.column[enc]);
        jw_key(w, "end");
        write_position(w, c->end.line, c->end.column[enc]);
        jw_object_end(w);
        jw_key_int(w, "rangeLength", (int64_t)c->range_length[enc]);
        const char *json;
        size_t json_len;
        ecp_shared *owner;
        if (content_as_sent(note->ad, c, &json, &json_len, &owner)) {
            /* quoted from the message in place: a 100 MB text is neither
             * escaped again nor copied on the loop */
            jw_key(w, "text");
            jw_raw_shared(w, json, json_len, owner);
        } else if (c->text_len >= CONTENT_OFF_LOOP_BYTES && ev->count == 1 && jw_splicing(w)) {
            /* escaping 100 MB (a redo of a huge setContent) would stall
             * everyone: it is done on the pool, once for every encoding,
             * and the notification waits for it in each client's order */
            if (!note->text)
                note->text = ecp_shared_pending();
            jw_key(w, "text");
            jw_raw_pending(w, note->text);
        } else {
            jw_key_string_n(w, "text", c->text ? c->text : "", c->text_len);
        }
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
}

/* A change's text, escaped as a JSON string on the pool from a snapshot
 * of the document it is in. */
typedef struct change_text_job {
    document_snapshot *snap;
    size_t offset, len;
    ecp_shared *json; /* pending until done */
    buf out;
} change_text_job;

static void change_text_work(ecp_job *job, unsigned item)
{
    (void)item;
    change_text_job *t = ecp_job_data(job);
    json_writer w;
    jw_init(&w, &t->out);
    write_snapshot_text(&w, t->snap, t->offset, t->len);
}

static void change_text_fill(change_text_job *t, bool whole)
{
    if (!t->json || ecp_shared_ready(t->json))
        return;
    if (!whole) { /* never made (teardown): the clients waiting get an empty text rather than nothing */
        buf_clear(&t->out);
        buf_append(&t->out, "\"\"", 2);
    }
    size_t len = t->out.len;
    ecp_shared_fill(t->json, buf_detach(&t->out), len);
}

static void change_text_done(ecp_job *job)
{
    change_text_job *t = ecp_job_data(job);
    change_text_fill(t, !ecp_job_cancelled(job));
}

static void change_text_free(void *data)
{
    change_text_job *t = data;
    change_text_fill(t, false);
    ecp_shared_unref(t->json);
    document_snapshot_release(t->snap);
    buf_free(&t->out);
    free(t);
}

static const ecp_job_type change_text_job_type = {
    .name = "document.changeText", .lane = ECP_LANE_SHORT,
    .work = change_text_work, .done = change_text_done, .free_data = change_text_free,
};

static void on_change(void *ctx, const document_change_event *ev)
{
    change_note note = {ctx, ev, NULL};
    ecp_bus_notify(note.ad->bus, "document/didChange", render_change, &note);
    if (!note.text)
        return;
    change_text_job *t = xcalloc(1, sizeof *t);
    t->json = note.text;
    t->offset = ev->changes[0].offset;
    t->len = ev->changes[0].text_len;
    t->snap = document_snapshot_take(note.ad->svc, ev->document_id, NULL);
    if (!t->snap) { /* cannot happen: the document is there, it just changed */
        json_writer w;
        jw_init(&w, &t->out);
        jw_string_n(&w, ev->changes[0].text, ev->changes[0].text_len);
        change_text_fill(t, true);
        change_text_free(t);
        return;
    }
    ecp_job_start(ecp_job_new(note.ad->jobs, &change_text_job_type, t), 1);
}

static void render_cursors(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const cursors_note *note = ctx;
    document_cursor *list = NULL;
    size_t count = 0;
    jw_object_begin(w);
    jw_key_string(w, "documentId", note->id);
    jw_key(w, "cursors");
    if (document_get_cursors(note->ad->svc, note->id, enc, &list, &count, NULL) == 0)
        write_cursors(w, list, count);
    else
        write_cursors(w, NULL, 0);
    jw_object_end(w);
    free(list);
}

static void on_cursors(void *ctx, const char *document_id)
{
    cursors_note note = {ctx, document_id};
    ecp_bus_notify(note.ad->bus, "document/didChangeCursors", render_cursors, &note);
}

typedef struct close_note {
    const char *id;
    const char *uri;
} close_note;

static void render_close(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const close_note *note = ctx;
    jw_object_begin(w);
    jw_key_string(w, "documentId", note->id);
    jw_key_string(w, "uri", note->uri);
    jw_object_end(w);
}

static void on_close(void *ctx, const char *document_id, const char *uri)
{
    doc_adapter *ad = ctx;
    close_note note = {document_id, uri};
    ecp_bus_notify(ad->bus, "document/didClose", render_close, &note);
}

static const document_listener listener = {
    .on_open = on_open,
    .on_change = on_change,
    .on_cursors = on_cursors,
    .on_close = on_close,
};

static void on_disk_change(void *ctx, const char *document_id, const char *uri)
{
    doc_adapter *ad = ctx;
    close_note note = {document_id, uri};
    ecp_bus_notify(ad->bus, "document/didChangeOnDisk", render_close, &note);
}

static const document_disk_listener disk_listener = {
    .on_disk_change = on_disk_change,
};

/* ----- open, save, reload (may finish on the thread pool) ---------------------------------- */

/* A request that may finish later lives in its call's arena (the call stays
 * alive until it is answered) and, while the service still owes it an
 * answer, in the adapter's list: the adapter goes before the service at
 * teardown and cancels what is left, so no answer arrives after it. */
typedef struct pending {
    doc_adapter *ad;
    ecp_call *call;
    document_request *req;
    struct pending *prev, *next; /* in ad->running while req is set */
} pending;

static void abandon(void *ctx)
{
    pending *p = ctx;
    document_request_cancel(p->ad->svc, p->req);
}

/* Hooks cancellation up when the request is still running. */
static void watch(pending *p, document_request *req)
{
    if (!req)
        return;
    p->req = req;
    p->next = p->ad->running;
    if (p->next)
        p->next->prev = p;
    p->ad->running = p;
    ecp_call_on_abandon(p->call, abandon, p);
}

/* Every answer starts here: the service owes this request nothing more. */
static void settle(pending *p)
{
    if (!p->req)
        return;
    if (p->prev)
        p->prev->next = p->next;
    else
        p->ad->running = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->prev = p->next = NULL;
    p->req = NULL;
    ecp_call_on_abandon(p->call, NULL, NULL);
}

static pending *pending_new(doc_adapter *ad, ecp_call *call)
{
    pending *p = arena_calloc(ecp_call_arena(call), sizeof *p);
    p->ad = ad;
    p->call = ecp_call_defer(call);
    return p;
}

static void opened(void *ctx, int status, const ecp_error *err, const char *document_id, bool already_open)
{
    pending *p = ctx;
    ecp_call *call = p->call;
    settle(p);
    if (status != 0) {
        ecp_call_error(call, status == ECP_EBADURI ? ECP_WIRE_INVALID_PARAMS : ECP_WIRE_INTERNAL_ERROR, "%s%s",
                       status == ECP_EBADURI ? "uri: " : "", err->message);
        return;
    }
    document_info info;
    document_get_info(p->ad->svc, document_id, &info, NULL);
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_string(w, "documentId", document_id);
    jw_key(w, "info");
    write_info(w, &info);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_open(void *ctx, ecp_call *call)
{
    json_ref params = ecp_call_params(call);
    ecp_str uri, content, language;
    bool read_only;
    if (!ecp_arg_string(call, params, "uri", &uri) || !ecp_arg_string_opt(call, params, "content", &content) ||
        !ecp_arg_string_opt(call, params, "languageId", &language) ||
        !ecp_arg_bool_opt(call, params, "readOnly", false, &read_only))
        return;
    if (uri.len == 0 || memchr(uri.ptr, '\0', uri.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", uri.len ? "contains a NUL byte" : "must not be empty");
        return;
    }
    document_open_options options = {
        .uri = uri.ptr,
        .content = content.ptr,
        .content_len = content.len,
        .language_id = language.ptr,
        .read_only = read_only,
    };
    pending *p = pending_new(ctx, call);
    watch(p, document_open(p->ad->svc, &options, opened, p));
}

static void saved(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri)
{
    pending *p = ctx;
    settle(p);
    json_writer *w = ecp_call_result(p->call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    if (status == ECP_ECONFLICT)
        jw_key_bool(w, "conflict", true);
    jw_key_int(w, "version", (int64_t)version);
    if (uri)
        jw_key_string(w, "uri", uri);
    if (status != 0)
        jw_key_string(w, "error", err->message);
    jw_object_end(w);
    ecp_call_finish(p->call);
}

static void m_save(void *ctx, ecp_call *call)
{
    json_ref params = ecp_call_params(call);
    ecp_str id, uri;
    bool force;
    if (!arg_doc(call, &id) || !ecp_arg_string_opt(call, params, "uri", &uri) ||
        !ecp_arg_bool_opt(call, params, "force", false, &force))
        return;
    if (uri.ptr && (uri.len == 0 || memchr(uri.ptr, '\0', uri.len))) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", uri.len ? "contains a NUL byte" : "must not be empty");
        return;
    }
    pending *p = pending_new(ctx, call);
    document_save_options options = {.uri = uri.ptr, .force = force};
    watch(p, document_save_with(p->ad->svc, id.ptr, &options, saved, p));
}

static void reloaded(void *ctx, int status, const ecp_error *err, uint64_t version)
{
    pending *p = ctx;
    settle(p);
    json_writer *w = ecp_call_result(p->call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    jw_key_int(w, "version", (int64_t)version);
    if (status != 0)
        jw_key_string(w, "error", err->message);
    jw_object_end(w);
    ecp_call_finish(p->call);
}

static void m_reload(void *ctx, ecp_call *call)
{
    ecp_str id;
    bool force;
    if (!arg_doc(call, &id) || !ecp_arg_bool_opt(call, ecp_call_params(call), "force", false, &force))
        return;
    pending *p = pending_new(ctx, call);
    watch(p, document_reload(p->ad->svc, id.ptr, force, reloaded, p));
}

/* ----- documents and text ------------------------------------------------------------------ */

static void m_close(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    if (!arg_doc(call, &id))
        return;
    ecp_call_reply_success(call, document_close(ad->svc, id.ptr, NULL) == 0);
}

static void m_info(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!arg_doc_info(ad, call, &id, &info))
        return;
    write_info(ecp_call_result(call), &info);
    ecp_call_finish(call);
}

static void list_one(void *ctx, const document_info *info) { write_info(ctx, info); }

static void m_list(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "documents");
    jw_array_begin(w);
    document_list(ad->svc, list_one, w);
    jw_array_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

typedef struct content_job {
    document_snapshot *snap;
    buf out;
} content_job;

static void content_work(ecp_job *job, unsigned item)
{
    (void)item;
    content_job *t = ecp_job_data(job);
    json_writer w;
    jw_init(&w, &t->out);
    jw_object_begin(&w);
    jw_key(&w, "content");
    write_snapshot_text(&w, t->snap, 0, document_snapshot_length(t->snap));
    jw_key_int(&w, "version", (int64_t)document_snapshot_version(t->snap));
    jw_key_int(&w, "lineCount", (int64_t)document_snapshot_line_count(t->snap));
    jw_object_end(&w);
}

static void content_done(ecp_job *job)
{
    content_job *t = ecp_job_data(job);
    if (ecp_job_cancelled(job))
        return;
    /* written to the peer from where it lies: a copy of a 64 MB answer
     * (and the page faults of a fresh one) would stall the loop */
    size_t len = t->out.len;
    ecp_shared *answer = ecp_shared_adopt(buf_detach(&t->out), len);
    ecp_call_reply_shared(ecp_job_call(job), answer);
    ecp_shared_unref(answer);
}

static void content_free(void *data)
{
    content_job *t = data;
    document_snapshot_release(t->snap);
    buf_free(&t->out);
    free(t);
}

static const ecp_job_type content_job_type = {
    .name = "document.content", .lane = ECP_LANE_LONG,
    .work = content_work, .done = content_done, .free_data = content_free,
};

static void m_content(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!arg_doc_info(ad, call, &id, &info))
        return;
    document_snapshot *snap = document_snapshot_take(ad->svc, id.ptr, NULL);
    if (snap && document_snapshot_length(snap) > CONTENT_OFF_LOOP_BYTES) {
        content_job *t = xcalloc(1, sizeof *t);
        t->snap = snap;
        ecp_job *job = ecp_job_new(ad->jobs, &content_job_type, t);
        ecp_job_serve(job, call);
        ecp_job_start(job, 1);
        return;
    }
    document_snapshot_release(snap);
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "content");
    jw_string_begin(w);
    document_read(ad->svc, id.ptr, NULL, ECP_ENCODING_UTF8, write_chunk, w, NULL);
    jw_string_end(w);
    jw_key_int(w, "version", (int64_t)info.version);
    jw_key_int(w, "lineCount", (int64_t)info.line_count);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void write_line(doc_adapter *ad, json_writer *w, const char *id, size_t line)
{
    jw_object_begin(w);
    jw_key_int(w, "lineNumber", (int64_t)line);
    jw_key(w, "text");
    jw_string_begin(w);
    document_read_line(ad->svc, id, line, write_chunk, w, NULL);
    jw_string_end(w);
    jw_object_end(w);
}

static void m_line(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    size_t line;
    ecp_error err;
    document_info info;
    if (!arg_doc(call, &id) || !ecp_arg_index(call, ecp_call_params(call), "lineNumber", &line))
        return;
    if (document_get_info(ad->svc, id.ptr, &info, &err) != 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_POSITION, "%s", err.message);
        return;
    }
    if (line >= info.line_count) {
        ecp_call_error(call, ECP_WIRE_INVALID_POSITION, "Invalid position: line %zu is past the end (%zu line%s)",
                       line, info.line_count, info.line_count == 1 ? "" : "s");
        return;
    }
    write_line(ad, ecp_call_result(call), id.ptr, line);
    ecp_call_finish(call);
}

static void line_begin(void *ctx, size_t line)
{
    json_writer *w = ctx;
    jw_object_begin(w);
    jw_key_int(w, "lineNumber", (int64_t)line);
    jw_key(w, "text");
    jw_string_begin(w);
}

static void line_end(void *ctx, size_t line)
{
    (void)line;
    json_writer *w = ctx;
    jw_string_end(w);
    jw_object_end(w);
}

static const document_line_reader line_writer = {line_begin, write_chunk, line_end};

/* Consecutive lines: read walking the text, not looked up one by one. */
static void write_lines(doc_adapter *ad, json_writer *w, const char *id, size_t start, size_t end)
{
    jw_array_begin(w);
    document_read_lines(ad->svc, id, start, end, &line_writer, w, NULL);
    jw_array_end(w);
}

static void m_lines(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id;
    size_t start, end;
    document_info info;
    if (!arg_doc(call, &id) || !ecp_arg_index(call, params, "startLine", &start) ||
        !ecp_arg_index(call, params, "endLine", &end))
        return;
    if (document_get_info(ad->svc, id.ptr, &info, NULL) != 0)
        info.line_count = 0; /* the catalogue: an unknown document has no lines */
    if (end > info.line_count)
        end = info.line_count;
    if (start > end)
        start = end;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "lines");
    write_lines(ad, w, id.ptr, start, end);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_viewport(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id;
    size_t start, count;
    json_ref include;
    ecp_error err;
    document_info info;
    if (!arg_doc(call, &id) || !ecp_arg_index(call, params, "startLine", &start) ||
        !ecp_arg_index(call, params, "lineCount", &count) || !ecp_arg_array_opt(call, params, "include", &include))
        return;
    int rc = document_get_info(ad->svc, id.ptr, &info, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    size_t first = start < info.line_count ? start : info.line_count;
    size_t last = count < info.line_count - first ? first + count : info.line_count;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_string(w, "documentId", info.document_id);
    jw_key_int(w, "version", (int64_t)info.version);
    jw_key_int(w, "startLine", (int64_t)start);
    jw_key_int(w, "lineCount", (int64_t)info.line_count);
    jw_key(w, "lines");
    write_lines(ad, w, id.ptr, first, last);
    /* Each part named in include, once, in the adapter's order; a name no
     * part has adds nothing. */
    const json_doc *doc = ecp_call_doc(call);
    for (size_t i = 0; include != JSON_NO_REF && i < ad->part_count; i++) {
        const document_viewport_part *part = &ad->parts[i];
        for (json_ref e = json_first(doc, include); e != JSON_NO_REF; e = json_next(doc, e)) {
            if (json_type_of(doc, e) == JSON_STRING && json_string_eq(doc, e, part->name)) {
                jw_key(w, part->name);
                part->write(part->ctx, info.document_id, info.uri, first, last, ecp_call_encoding(call), w);
                break;
            }
        }
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

/* {text} written as the text arrives: the result starts with the first
 * chunk, which comes only once the range is known to be valid. */
typedef struct text_reply {
    ecp_call *call;
    json_writer *w;
} text_reply;

static void text_reply_start(text_reply *t)
{
    t->w = ecp_call_result(t->call);
    jw_object_begin(t->w);
    jw_key(t->w, "text");
    jw_string_begin(t->w);
}

static void text_reply_chunk(void *ctx, const char *p, size_t len)
{
    text_reply *t = ctx;
    if (!t->w)
        text_reply_start(t);
    jw_string_chunk(t->w, p, len);
}

static void m_text_in_range(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_range range;
    ecp_error err;
    if (!arg_doc(call, &id) || !arg_range(call, ecp_call_params(call), "range", &range))
        return;
    text_reply t = {.call = call};
    int rc = document_read(ad->svc, id.ptr, &range, ecp_call_encoding(call), text_reply_chunk, &t, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    if (!t.w)
        text_reply_start(&t);
    jw_string_end(t.w);
    jw_object_end(t.w);
    ecp_call_finish(call);
}

static void m_version(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!arg_doc_info(ad, call, &id, &info))
        return;
    ecp_call_reply_int(call, "version", (int64_t)info.version);
}

/* ----- edits --------------------------------------------------------------------------------- */

static void edit_one(doc_adapter *ad, ecp_call *call, const char *id, const document_range *range, const ecp_str *text,
                     unsigned flags)
{
    document_edit e = {*range, text->ptr ? text->ptr : "", text->len};
    ecp_error err;
    uint64_t version;
    int rc = document_apply_edits(ad->svc, id, &e, 1, ecp_call_encoding(call), flags, &version, &err);
    reply_edit(call, rc, version, &err);
}

static void m_insert(void *ctx, ecp_call *call)
{
    ecp_str id, text;
    document_range range;
    bool ok;
    if (!arg_doc(call, &id) || !arg_position(call, ecp_call_params(call), "position", &range.start) ||
        !ecp_arg_string(call, ecp_call_params(call), "text", &text))
        return;
    unsigned flags = group_flag(call, &ok);
    if (!ok)
        return;
    range.end = range.start;
    edit_one(ctx, call, id.ptr, &range, &text, flags | DOCUMENT_EDIT_MOVE_CURSOR);
}

static void m_delete(void *ctx, ecp_call *call)
{
    ecp_str id, text = {"", 0};
    document_range range;
    bool ok;
    if (!arg_doc(call, &id) || !arg_range(call, ecp_call_params(call), "range", &range))
        return;
    unsigned flags = group_flag(call, &ok);
    if (ok)
        edit_one(ctx, call, id.ptr, &range, &text, flags);
}

static void m_replace(void *ctx, ecp_call *call)
{
    ecp_str id, text;
    document_range range;
    bool ok;
    if (!arg_doc(call, &id) || !arg_range(call, ecp_call_params(call), "range", &range) ||
        !ecp_arg_string(call, ecp_call_params(call), "text", &text))
        return;
    unsigned flags = group_flag(call, &ok);
    if (ok)
        edit_one(ctx, call, id.ptr, &range, &text, flags);
}

/* A large setContent: its job serves the call, so the message (which raw
 * points into) lives until the job ends. made and raw_reusable are set on
 * the pool and read in done, which the job's end orders after them. */
typedef struct set_content_job {
    doc_adapter *ad;
    document_replacement *r;
    const char *raw; /* the JSON string's contents, escapes and all, inside the call's message */
    size_t raw_len;
    ecp_shared *message; /* the call's message, which raw lies in (the call's reference) */
    const char *made;  /* the text made from it (the service's), or NULL */
    bool raw_reusable; /* raw, quoted, is a JSON string of exactly `made`, fit to send as it is */
    int status;
    ecp_error err;
    struct set_content_job *next; /* in ad->contents while finishing */
} set_content_job;

/* Whether a JSON string's contents decode, in any client, to exactly what
 * the server keeps: valid UTF-8 with no raw control characters (escapes
 * are fine; json_unescape refuses lone surrogates). */
static bool raw_string_reusable(const char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20)
            return false;
        if (c < 0x80) {
            i++;
            continue;
        }
        uint32_t cp;
        size_t k = utf8_decode(s + i, n - i, &cp);
        if (cp == 0xFFFD && k == 1)
            return false;
        i += k;
    }
    return true;
}

static void set_content_work(ecp_job *job, unsigned item)
{
    (void)item;
    set_content_job *t = ecp_job_data(job);
    if (ecp_job_cancelled(job))
        return;
    buf text = BUF_INIT;
    if (!json_unescape(t->raw, t->raw_len, &text)) {
        buf_free(&text);
        t->status = ecp_error_set(&t->err, ECP_EINVAL, "content: not a valid JSON string");
        return;
    }
    if (!text.data)
        buf_reserve(&text, 1);
    size_t len = text.len;
    /* The change event carries this text to every client: the message
     * already holds it as a JSON string, and copying that costs the loop
     * far less than escaping the text again. */
    t->raw_reusable = raw_string_reusable(t->raw, t->raw_len);
    t->made = text.data;
    t->status = document_replacement_build(t->r, buf_detach(&text), len, &t->err);
}

static void contents_unlink(doc_adapter *ad, set_content_job *t)
{
    for (set_content_job **p = &ad->contents; *p; p = &(*p)->next) {
        if (*p == t) {
            *p = t->next;
            return;
        }
    }
}

/* The message's own JSON string (quoted) for a change's text, and the
 * message that holds it, when one is at hand. */
static bool content_as_sent(const doc_adapter *ad, const document_change *c, const char **json, size_t *len,
                            ecp_shared **owner)
{
    for (const set_content_job *t = ad->contents; t; t = t->next) {
        if (t->made && t->made == c->text && t->raw_reusable) {
            *json = t->raw - 1;
            *len = t->raw_len + 2;
            *owner = t->message;
            return true;
        }
    }
    return false;
}

static void set_content_done(ecp_job *job)
{
    set_content_job *t = ecp_job_data(job);
    ecp_call *call = ecp_job_call(job);
    if (ecp_job_cancelled(job))
        return; /* answered for us, and discarded */
    if (t->status == ECP_EINVAL) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s", t->err.message);
        return;
    }
    uint64_t version = 0;
    int rc = t->status;
    if (rc == 0) {
        t->next = t->ad->contents;
        t->ad->contents = t;
        rc = document_replacement_finish(t->ad->svc, t->r, &version, &t->err);
        t->r = NULL;
        contents_unlink(t->ad, t);
    } else {
        document_info info; /* the version it stays at */
        if (document_get_info(t->ad->svc, document_replacement_document(t->r), &info, NULL) == 0)
            version = info.version;
    }
    reply_edit(call, rc, version, &t->err);
}

static void set_content_free(void *data)
{
    set_content_job *t = data;
    document_replacement_free(t->r);
    free(t);
}

static const ecp_job_type set_content_job_type = {
    .name = "document.setContent", .lane = ECP_LANE_LONG,
    .work = set_content_work, .done = set_content_done, .free_data = set_content_free,
};

static void m_set_content(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id, content;
    ecp_error err;
    uint64_t version;
    if (!arg_doc(call, &id))
        return;
    const json_doc *jd = ecp_call_doc(call);
    json_ref ref = json_get(jd, ecp_call_params(call), "content");
    size_t raw_len = 0;
    const char *raw = json_type_of(jd, ref) == JSON_STRING ? json_raw(jd, ref, &raw_len) : NULL;
    if (raw && raw_len >= CONTENT_OFF_LOOP_BYTES) {
        document_replacement *r = document_replacement_begin(ad->svc, id.ptr, &err);
        if (!r) {
            uint64_t now = 0;
            document_info info;
            if (document_get_info(ad->svc, id.ptr, &info, NULL) == 0)
                now = info.version;
            reply_edit(call, err.status, now, &err);
            return;
        }
        set_content_job *t = xcalloc(1, sizeof *t);
        t->ad = ad;
        t->r = r;
        t->raw = raw + 1; /* inside the quotes */
        t->raw_len = raw_len - 2;
        t->message = ecp_call_text(call);
        ecp_job *job = ecp_job_new(ad->jobs, &set_content_job_type, t);
        ecp_job_serve(job, call);
        /* the client's next edit must land on the new text, as it would after
         * a small setContent answered at once */
        ecp_call_hold_client(call);
        ecp_job_start(job, 1);
        return;
    }
    if (!ecp_arg_string(call, ecp_call_params(call), "content", &content))
        return;
    int rc = document_set_content(ad->svc, id.ptr, content.ptr, content.len, &version, &err);
    reply_edit(call, rc, version, &err);
}

static void m_edit(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), edits;
    const json_doc *jd = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    ecp_str id;
    bool ok;
    if (!arg_doc(call, &id) || !ecp_arg_array(call, params, "edits", &edits))
        return;
    unsigned flags = group_flag(call, &ok);
    if (!ok)
        return;
    size_t count = json_length(jd, edits);
    if (count == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "edits: must not be empty");
        return;
    }
    document_edit *list = arena_alloc(a, count * sizeof *list);
    size_t i = 0;
    for (json_ref e = json_first(jd, edits); e != JSON_NO_REF; e = json_next(jd, e), i++) {
        const char *name = arena_sprintf(a, "edits[%zu]", i);
        if (json_type_of(jd, e) != JSON_OBJECT) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: expected object, got %s", name,
                           json_type_name(json_type_of(jd, e)));
            return;
        }
        ecp_str text;
        if (!arg_range(call, e, arena_sprintf(a, "%s.range", name), &list[i].range) ||
            !ecp_arg_string(call, e, arena_sprintf(a, "%s.text", name), &text))
            return;
        list[i].text = text.ptr;
        list[i].len = text.len;
    }
    ecp_error err;
    uint64_t version;
    int rc = document_apply_edits(ad->svc, id.ptr, list, count, ecp_call_encoding(call), flags, &version, &err);
    reply_edit(call, rc, version, &err);
}

static void m_type(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id, text;
    bool ok;
    if (!arg_doc(call, &id) || !ecp_arg_string(call, ecp_call_params(call), "text", &text))
        return;
    unsigned flags = group_flag(call, &ok);
    if (!ok)
        return;
    ecp_error err;
    uint64_t version;
    int rc = document_type(ad->svc, id.ptr, text.ptr, text.len, flags, &version, &err);
    reply_edit(call, rc, version, &err);
}

/* ----- cursors ---------------------------------------------------------------------------------- */

static void m_cursors(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    ecp_error err;
    document_cursor *list;
    size_t count;
    if (!arg_doc(call, &id))
        return;
    int rc = document_get_cursors(ad->svc, id.ptr, ecp_call_encoding(call), &list, &count, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "cursors");
    write_cursors(w, list, count);
    jw_object_end(w);
    ecp_call_finish(call);
    free(list);
}

/* {success} for cursor changes: an unknown document is success:false, a
 * position past the end is InvalidPosition. */
static void reply_cursor_change(ecp_call *call, int rc, const ecp_error *err)
{
    if (rc == 0 || rc == ECP_ENOTFOUND)
        ecp_call_reply_success(call, rc == 0);
    else
        reply_error(call, rc, err);
}

/* A Cursor object: {position, selection?: {anchor, active}, desiredColumn?}. */
static bool arg_cursor(ecp_call *call, json_ref obj, const char *name, document_cursor *out)
{
    arena *a = ecp_call_arena(call);
    json_ref sel;
    int64_t desired;
    if (!arg_position(call, obj, arena_sprintf(a, "%s.position", name), &out->active) ||
        !ecp_arg_object_opt(call, obj, arena_sprintf(a, "%s.selection", name), &sel) ||
        !ecp_arg_int_opt(call, obj, arena_sprintf(a, "%s.desiredColumn", name), -1, &desired))
        return false;
    out->anchor = out->active;
    if (sel != JSON_NO_REF) {
        const char *sname = arena_sprintf(a, "%s.selection", name);
        if (!arg_position(call, sel, arena_sprintf(a, "%s.anchor", sname), &out->anchor) ||
            !arg_position(call, sel, arena_sprintf(a, "%s.active", sname), &out->active))
            return false;
    }
    out->has_desired_column = desired >= 0;
    out->desired_column = desired >= 0 ? (size_t)desired : 0;
    return true;
}

static void m_set_cursors(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    const json_doc *jd = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    ecp_str id;
    json_ref items;
    if (!arg_doc(call, &id) || !ecp_arg_array(call, ecp_call_params(call), "cursors", &items))
        return;
    size_t count = json_length(jd, items);
    if (count == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "cursors: must not be empty");
        return;
    }
    document_cursor *list = arena_alloc(a, count * sizeof *list);
    size_t i = 0;
    for (json_ref e = json_first(jd, items); e != JSON_NO_REF; e = json_next(jd, e), i++) {
        const char *name = arena_sprintf(a, "cursors[%zu]", i);
        if (json_type_of(jd, e) != JSON_OBJECT) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: expected object, got %s", name,
                           json_type_name(json_type_of(jd, e)));
            return;
        }
        if (!arg_cursor(call, e, name, &list[i]))
            return;
    }
    ecp_error err;
    reply_cursor_change(call, document_set_cursors(ad->svc, id.ptr, list, count, ecp_call_encoding(call), &err), &err);
}

static void m_set_cursor(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call), sel;
    ecp_str id;
    document_cursor c = {0};
    if (!arg_doc(call, &id) || !arg_position(call, params, "position", &c.active) ||
        !ecp_arg_object_opt(call, params, "selection", &sel))
        return;
    c.anchor = c.active;
    if (sel != JSON_NO_REF &&
        (!arg_position(call, sel, "selection.anchor", &c.anchor) || !arg_position(call, sel, "selection.active", &c.active)))
        return;
    ecp_error err;
    reply_cursor_change(call, document_set_cursors(ad->svc, id.ptr, &c, 1, ecp_call_encoding(call), &err), &err);
}

static void m_add_cursor(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    if (!arg_doc(call, &id) || !arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    ecp_error err;
    reply_cursor_change(call, document_add_cursor(ad->svc, id.ptr, &pos, ecp_call_encoding(call), &err), &err);
}

static void m_move_cursors(void *ctx, ecp_call *call)
{
    static const char *const directions[] = {"up", "down", "left", "right"};
    static const char *const units[] = {"character", "word", "line", "page", "document"};
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id, dir_s, unit_s;
    bool select;
    if (!arg_doc(call, &id) || !ecp_arg_string(call, params, "direction", &dir_s) ||
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
    int rc = document_move_cursors(ad->svc, id.ptr, (document_direction)dir, (document_unit)unit, select, &err);
    reply_cursor_change(call, rc, &err);
}

static void m_select_all(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    ecp_error err;
    if (arg_doc(call, &id))
        reply_cursor_change(call, document_select_all(ad->svc, id.ptr, &err), &err);
}

static void m_clear_selections(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    ecp_error err;
    if (arg_doc(call, &id))
        reply_cursor_change(call, document_clear_selections(ad->svc, id.ptr, &err), &err);
}

static void m_selections(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    ecp_error err;
    document_cursor *list;
    size_t count;
    if (!arg_doc(call, &id))
        return;
    int rc = document_get_cursors(ad->svc, id.ptr, ECP_ENCODING_UTF8, &list, &count, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    free(list);
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "selections");
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_string_begin(w);
        document_read_selection(ad->svc, id.ptr, i, write_chunk, w, NULL);
        jw_string_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

/* ----- history ----------------------------------------------------------------------------------- */

static void undo_redo(doc_adapter *ad, ecp_call *call, bool redo)
{
    ecp_str id;
    if (!arg_doc(call, &id))
        return;
    uint64_t version = 0;
    bool can_undo = false, can_redo = false;
    int rc = redo ? document_redo(ad->svc, id.ptr, &version, NULL) : document_undo(ad->svc, id.ptr, &version, NULL);
    document_history(ad->svc, id.ptr, &can_undo, &can_redo, NULL);
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", rc == 0);
    jw_key_int(w, "version", (int64_t)version);
    jw_key_bool(w, "canUndo", can_undo);
    jw_key_bool(w, "canRedo", can_redo);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_undo(void *ctx, ecp_call *call) { undo_redo(ctx, call, false); }
static void m_redo(void *ctx, ecp_call *call) { undo_redo(ctx, call, true); }

static void can(doc_adapter *ad, ecp_call *call, bool redo)
{
    ecp_str id;
    if (!arg_doc(call, &id))
        return;
    bool can_undo, can_redo;
    document_history(ad->svc, id.ptr, &can_undo, &can_redo, NULL);
    ecp_call_reply_bool(call, redo ? "canRedo" : "canUndo", redo ? can_redo : can_undo);
}

static void m_can_undo(void *ctx, ecp_call *call) { can(ctx, call, false); }
static void m_can_redo(void *ctx, ecp_call *call) { can(ctx, call, true); }

static void m_is_dirty(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!arg_doc(call, &id))
        return;
    bool dirty = document_get_info(ad->svc, id.ptr, &info, NULL) == 0 && info.is_dirty;
    ecp_call_reply_bool(call, "isDirty", dirty);
}

static void m_mark_clean(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    if (!arg_doc(call, &id))
        return;
    /* The catalogue answers true even for an unknown document. */
    document_mark_clean(ad->svc, id.ptr, NULL);
    ecp_call_reply_success(call, true);
}

/* ----- positions ------------------------------------------------------------------------------------ */

static void m_position_to_offset(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    ecp_error err;
    uint64_t offset;
    if (!arg_doc(call, &id) || !arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    int rc = document_position_to_offset(ad->svc, id.ptr, &pos, ecp_call_encoding(call), &offset, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    ecp_call_reply_int(call, "offset", (int64_t)offset);
}

static void m_offset_to_position(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    size_t offset;
    ecp_error err;
    document_position pos;
    if (!arg_doc(call, &id) || !ecp_arg_index(call, ecp_call_params(call), "offset", &offset))
        return;
    int rc = document_offset_to_position(ad->svc, id.ptr, offset, ecp_call_encoding(call), &pos, &err);
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "position");
    write_position(w, pos.line, pos.column);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_word_at_position(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    document_range range;
    ecp_error err;
    bool found;
    ecp_position_encoding enc = ecp_call_encoding(call);
    if (!arg_doc(call, &id) || !arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    int rc = document_word_at(ad->svc, id.ptr, &pos, enc, &range, &found, &err);
    if (rc == ECP_ENOTFOUND || (rc == 0 && !found)) {
        ecp_call_reply_null(call);
        return;
    }
    if (rc != 0) {
        reply_error(call, rc, &err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "range");
    jw_object_begin(w);
    jw_key(w, "start");
    write_position(w, range.start.line, range.start.column);
    jw_key(w, "end");
    write_position(w, range.end.line, range.end.column);
    jw_object_end(w);
    jw_key(w, "text");
    jw_string_begin(w);
    document_read(ad->svc, id.ptr, &range, enc, write_chunk, w, NULL);
    jw_string_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

/* ----- the table ----------------------------------------------------------------------------------------- */

static const ecp_method methods[] = {
    {"document/open", m_open, "1.0",
     "Open a document: content if given, else a file:// uri's file; an open uri gives its document",
     "{uri: string, content?: string, languageId?: string, readOnly?: boolean}"},
    {"document/close", m_close, "1.0",
     "Close a document for every client; success is false for an unknown id",
     "{documentId: string}"},
    {"document/info", m_info, "1.0",
     "The document's DocumentInfo",
     "{documentId: string}"},
    {"document/list", m_list, "1.0",
     "The DocumentInfo of every open document, in the order they were opened",
     "{}"},
    {"document/content", m_content, "1.0",
     "The whole text, with its version and line count",
     "{documentId: string}"},
    {"document/line", m_line, "1.0",
     "One line's text, without its line end",
     "{documentId: string, lineNumber: integer >= 0}"},
    {"document/lines", m_lines, "1.0",
     "The lines from startLine up to endLine (exclusive), clamped to the document",
     "{documentId: string, startLine: integer >= 0, endLine: integer >= 0}"},
    {"document/textInRange", m_text_in_range, "1.0",
     "The text of a range",
     "{documentId: string, range: Range}"},
    {"document/version", m_version, "1.0",
     "The document's version",
     "{documentId: string}"},
    {"document/insert", m_insert, "1.0",
     "Insert text at a position and put the primary cursor after it; one undo step",
     "{documentId: string, position: Position, text: string, groupWithPrevious?: boolean}"},
    {"document/delete", m_delete, "1.0",
     "Delete a range; one undo step",
     "{documentId: string, range: Range, groupWithPrevious?: boolean}"},
    {"document/replace", m_replace, "1.0",
     "Replace a range with text; one undo step",
     "{documentId: string, range: Range, text: string, groupWithPrevious?: boolean}"},
    {"document/setContent", m_set_content, "1.0",
     "Replace the whole text; one undo step, the cursor goes to the end",
     "{documentId: string, content: string}"},
    {"document/cursors", m_cursors, "1.0",
     "Every cursor, primary first",
     "{documentId: string}"},
    {"document/setCursors", m_set_cursors, "1.0",
     "Replace every cursor (the first is primary); overlapping cursors merge",
     "{documentId: string, cursors: Cursor[]}"},
    {"document/setCursor", m_set_cursor, "1.0",
     "Leave one cursor, at a position, with an optional selection",
     "{documentId: string, position: Position, selection?: {anchor: Position, active: Position}}"},
    {"document/addCursor", m_add_cursor, "1.0",
     "Add a cursor at a position",
     "{documentId: string, position: Position}"},
    {"document/moveCursors", m_move_cursors, "1.0",
     "Move every cursor by a unit (character by default), extending selections when select is true",
     "{documentId: string, direction: \"up\"|\"down\"|\"left\"|\"right\", "
     "unit?: \"character\"|\"word\"|\"line\"|\"page\"|\"document\", select?: boolean}"},
    {"document/selectAll", m_select_all, "1.0",
     "One cursor that selects the whole document",
     "{documentId: string}"},
    {"document/clearSelections", m_clear_selections, "1.0",
     "Drop every selection, keeping the carets",
     "{documentId: string}"},
    {"document/selections", m_selections, "1.0",
     "The selected text of every cursor, primary first (\"\" for a cursor without a selection)",
     "{documentId: string}"},
    {"document/undo", m_undo, "1.0",
     "Undo the last step and put the cursors back where they were before it",
     "{documentId: string}"},
    {"document/redo", m_redo, "1.0",
     "Redo the last undone step",
     "{documentId: string}"},
    {"document/canUndo", m_can_undo, "1.0",
     "Whether there is a step to undo",
     "{documentId: string}"},
    {"document/canRedo", m_can_redo, "1.0",
     "Whether there is a step to redo",
     "{documentId: string}"},
    {"document/isDirty", m_is_dirty, "1.0",
     "Whether the text differs from what was last read or saved",
     "{documentId: string}"},
    {"document/markClean", m_mark_clean, "1.0",
     "Declare the current text to be what is on disk",
     "{documentId: string}"},
    {"document/positionToOffset", m_position_to_offset, "1.0",
     "The offset of a position, in units of the connection's encoding",
     "{documentId: string, position: Position}"},
    {"document/offsetToPosition", m_offset_to_position, "1.0",
     "The position of an offset, in units of the connection's encoding",
     "{documentId: string, offset: integer >= 0}"},
    {"document/wordAtPosition", m_word_at_position, "1.0",
     "The word ([A-Za-z0-9_]+) under a position with its range, or null",
     "{documentId: string, position: Position}"},
    {"document/save", m_save, "1.0",
     "Write the document to its file, or to uri (save as), atomically and keeping the file's mode; "
     "a file changed on disk is a conflict unless force",
     "{documentId: string, uri?: string, force?: boolean}"},
    {"document/reload", m_reload, "1.0",
     "Read the file again as one undoable edit; unsaved edits are refused unless force",
     "{documentId: string, force?: boolean}"},
    {"document/edit", m_edit, "1.0",
     "Apply several non-overlapping edits, in the coordinates before any of them, as one undo step",
     "{documentId: string, edits: {range: Range, text: string}[], groupWithPrevious?: boolean}"},
    {"document/type", m_type, "1.0",
     "Type text at every cursor, replacing its selection",
     "{documentId: string, text: string, groupWithPrevious?: boolean}"},
    {"document/viewport", m_viewport, "1.0",
     "The lines of one screen with the document's version and line count, and the tokens or diagnostics "
     "that include names",
     "{documentId: string, startLine: integer >= 0, lineCount: integer >= 0, include?: string[]}"},
};

static void adapter_destroy(void *ctx)
{
    doc_adapter *ad = ctx;
    ecp_job_set_close(ad->jobs); /* answers the calls still waiting for their content */
    /* Each cancel answers its call and takes it off the list. */
    while (ad->running)
        document_request_cancel(ad->svc, ad->running->req);
    document_unsubscribe(ad->svc, &listener, ad);
    document_unsubscribe_disk(ad->svc, &disk_listener, ad);
    free(ad);
}

static const char *const notifications[] = {
    "document/didOpen", "document/didClose", "document/didChange", "document/didChangeCursors",
    "document/didChangeOnDisk", NULL,
};

bool document_adapter_add_viewport_part(const ecp_adapter *adapter, const document_viewport_part *part)
{
    doc_adapter *ad = adapter->ctx;
    if (ad->part_count == DOCUMENT_VIEWPORT_PARTS)
        return false;
    for (size_t i = 0; i < ad->part_count; i++)
        if (strcmp(ad->parts[i].name, part->name) == 0)
            return false;
    ad->parts[ad->part_count++] = *part;
    return true;
}

void document_adapter_init(ecp_adapter *out, document_service *svc, ecp_bus *bus)
{
    doc_adapter *ad = xcalloc(1, sizeof *ad);
    ad->svc = svc;
    ad->bus = bus;
    ad->jobs = ecp_job_set_new(document_service_pool(svc));
    document_subscribe(svc, &listener, ad);
    document_subscribe_disk(svc, &disk_listener, ad);
    memset(out, 0, sizeof *out);
    out->ns = "document";
    out->methods = methods;
    out->method_count = sizeof methods / sizeof methods[0];
    out->ctx = ad;
    out->destroy = adapter_destroy;
    out->notifications = notifications;
}
