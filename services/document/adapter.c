/* adapter: the document methods of the wire (document/open, ...) over the service.
 *
 * Params are read with core's ecp_arg_* readers (they answer -32602 naming the
 * field), service statuses are mapped to the catalogue's codes here and only
 * here, and service events become notifications through a subscription made
 * at init. Because the service fires its events before the function that
 * caused them returns, every notification a request causes is on the bus
 * before that request's response.
 *
 * The text methods are in adapter_text.c, the cursor methods in
 * adapter_cursor.c; what they share with this file is in adapter_internal.h.
 *
 * Text leaves the buffer straight into the JSON writer, chunk by chunk, so a
 * read of a large range costs one copy (the escaped output), not two.
 */
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "error.h"
#include "job.h"

/* ----- writing ------------------------------------------------------------------- */

/* document_read's chunk callback: ctx is the writer of an open string. */
void doc_adapter_write_chunk(void *ctx, const char *p, size_t len) { jw_string_chunk(ctx, p, len); }

/* [offset, offset + len) of a snapshot as one JSON string (any thread). */
void doc_adapter_write_snapshot_text(json_writer *w, const document_snapshot *snap, size_t offset, size_t len)
{
    jw_string_begin(w);
    document_snapshot_read(snap, offset, len, doc_adapter_write_chunk, w, NULL);
    jw_string_end(w);
}

void doc_adapter_write_position(json_writer *w, size_t line, size_t column)
{
    jw_object_begin(w);
    jw_key_int(w, "line", (int64_t)line);
    jw_key_int(w, "column", (int64_t)column);
    jw_object_end(w);
}

void doc_adapter_write_range(json_writer *w, size_t start_line, size_t start_column, size_t end_line, size_t end_column)
{
    jw_object_begin(w);
    jw_key(w, "start");
    doc_adapter_write_position(w, start_line, start_column);
    jw_key(w, "end");
    doc_adapter_write_position(w, end_line, end_column);
    jw_object_end(w);
}

static void write_info_fields(json_writer *w, const document_info *info)
{
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
}

/* w: the json_writer; the shape document_list calls back with. */
static void write_info(void *w, const document_info *info)
{
    jw_object_begin(w);
    write_info_fields(w, info);
    jw_object_end(w);
}

void doc_adapter_write_cursors(json_writer *w, const document_cursor *list, size_t count)
{
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        const document_cursor *c = &list[i];
        jw_object_begin(w);
        jw_key(w, "position");
        doc_adapter_write_position(w, c->active.line, c->active.column);
        if (c->anchor.line != c->active.line || c->anchor.column != c->active.column) {
            jw_key(w, "selection");
            jw_object_begin(w);
            jw_key(w, "anchor");
            doc_adapter_write_position(w, c->anchor.line, c->anchor.column);
            jw_key(w, "active");
            doc_adapter_write_position(w, c->active.line, c->active.column);
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

void doc_adapter_reply_error(ecp_call *call, int status, const ecp_error *err)
{
    ecp_call_reply_status(call, wire_codes, ECP_WIRE_MAP_COUNT(wire_codes), status, err, NULL);
}

/* EditResult: a document-level refusal is a result, not an error; bad
 * positions and bad params are errors. */
json_writer *doc_adapter_edit_result_begin(ecp_call *call, int status, uint64_t version, const ecp_error *err)
{
    if (status == ECP_ERANGE || status == ECP_EINVAL) {
        doc_adapter_reply_error(call, status, err);
        return NULL;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "success", status == 0);
    jw_key_int(w, "version", (int64_t)version);
    if (status != 0)
        jw_key_string(w, "error", err->message);
    return w;
}

void doc_adapter_reply_edit(ecp_call *call, int status, uint64_t version, const ecp_error *err)
{
    json_writer *w = doc_adapter_edit_result_begin(call, status, version, err);
    if (!w)
        return;
    jw_object_end(w);
    ecp_call_finish(call);
}

void doc_adapter_write_caller_cursors(doc_adapter *ad, ecp_call *call, json_writer *w, const char *id)
{
    document_cursor *list = NULL;
    size_t count = 0;
    jw_key(w, "cursors");
    if (document_get_cursors(ad->svc, id, ecp_call_client(call), ecp_call_encoding(call), &list, &count, NULL) == 0)
        doc_adapter_write_cursors(w, list, count);
    else
        doc_adapter_write_cursors(w, NULL, 0);
    free(list);
}

/* ----- params --------------------------------------------------------------------------- */

bool doc_adapter_arg_doc(ecp_call *call, ecp_str *id)
{
    return ecp_arg_string(call, ecp_call_params(call), "documentId", id);
}

bool doc_adapter_arg_list(ecp_call *call, const char *key, json_ref *first, size_t *count)
{
    json_ref items;
    if (!ecp_arg_array(call, ecp_call_params(call), key, &items))
        return false;
    const json_doc *jd = ecp_call_doc(call);
    *count = json_length(jd, items);
    if (*count == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must not be empty", key);
        return false;
    }
    *first = json_first(jd, items);
    return true;
}

const char *doc_adapter_list_item(ecp_call *call, const char *key, size_t i, json_ref item)
{
    const char *name = arena_sprintf(ecp_call_arena(call), "%s[%zu]", key, i);
    json_type type = json_type_of(ecp_call_doc(call), item);
    if (type == JSON_OBJECT)
        return name;
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: expected object, got %s", name, json_type_name(type));
    return NULL;
}

/* Reads documentId and the document's info; answers the error (unknown
 * document: -32001) and returns false when there is none. */
bool doc_adapter_arg_doc_info(doc_adapter *ad, ecp_call *call, ecp_str *id, document_info *info)
{
    ecp_error err;
    if (!doc_adapter_arg_doc(call, id))
        return false;
    int rc = document_get_info(ad->svc, id->ptr, info, &err);
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
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

bool doc_adapter_arg_position(ecp_call *call, json_ref obj, const char *name, document_position *out)
{
    json_ref p;
    char path[FIELD_PATH_MAX];
    return ecp_arg_object(call, obj, name, &p) &&
           ecp_arg_index(call, p, field_path(path, sizeof path, name, "line"), &out->line) &&
           ecp_arg_index(call, p, field_path(path, sizeof path, name, "column"), &out->column);
}

bool doc_adapter_arg_range(ecp_call *call, json_ref obj, const char *name, document_range *out)
{
    json_ref r;
    char path[FIELD_PATH_MAX];
    if (!ecp_arg_object(call, obj, name, &r) ||
        !doc_adapter_arg_position(call, r, field_path(path, sizeof path, name, "start"), &out->start) ||
        !doc_adapter_arg_position(call, r, field_path(path, sizeof path, name, "end"), &out->end))
        return false;
    const document_position *s = &out->start, *e = &out->end;
    if (e->line < s->line || (e->line == s->line && e->column < s->column)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: end (%zu:%zu) precedes start (%zu:%zu)", name, e->line,
                       e->column, s->line, s->column);
        return false;
    }
    return true;
}

unsigned doc_adapter_group_flag(ecp_call *call, bool *ok)
{
    bool group;
    *ok = ecp_arg_bool_opt(call, ecp_call_params(call), "groupWithPrevious", false, &group);
    return group ? DOCUMENT_EDIT_GROUP : 0;
}

/* ----- notifications -------------------------------------------------------------------- */

typedef struct cursors_note {
    doc_adapter *ad;
    const char *id;
    uint64_t owner;
} cursors_note;

static void on_open(void *ctx, const document_info *info)
{
    doc_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "document/didOpen", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("documentId", info->document_id), ECP_STRING_FIELD("uri", info->uri),
                              ECP_STRING_FIELD("languageId", info->language_id)));
}

typedef struct change_note {
    doc_adapter *ad;
    const document_change_event *ev;
    ecp_shared *text; /* the change's text as JSON, escaped on the pool; NULL: written in place */
} change_note;

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
        doc_adapter_write_range(w, c->start.line, c->start.column[enc], c->end.line, c->end.column[enc]);
        jw_key_int(w, "rangeLength", (int64_t)c->range_length[enc]);
        const char *json;
        size_t json_len;
        ecp_shared *owner;
        if (doc_adapter_content_as_sent(note->ad, c, &json, &json_len, &owner)) {
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
    doc_adapter_write_snapshot_text(&w, t->snap, t->offset, t->len);
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
    jw_key_int(w, "clientId", (int64_t)note->owner);
    jw_key(w, "cursors");
    if (document_get_cursors(note->ad->svc, note->id, note->owner, enc, &list, &count, NULL) == 0)
        doc_adapter_write_cursors(w, list, count);
    else
        doc_adapter_write_cursors(w, NULL, 0);
    jw_object_end(w);
    free(list);
}

static void on_cursors(void *ctx, const char *document_id, uint64_t owner)
{
    cursors_note note = {ctx, document_id, owner};
    ecp_bus_notify(note.ad->bus, "document/didChangeCursors", render_cursors, &note);
}

/* document/didClose and document/didChangeOnDisk: which document, and its file. */
static void notify_document(doc_adapter *ad, const char *method, const char *document_id, const char *uri)
{
    ecp_bus_notify(ad->bus, method, ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("documentId", document_id), ECP_STRING_FIELD("uri", uri)));
}

static void on_close(void *ctx, const char *document_id, const char *uri)
{
    notify_document(ctx, "document/didClose", document_id, uri);
}

/* Whoever saved, everyone sharing the document learns it is clean now. */
static void on_save(void *ctx, const char *document_id, const char *uri, uint64_t version)
{
    doc_adapter *ad = ctx;
    ecp_bus_notify(ad->bus, "document/didSave", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("documentId", document_id), ECP_STRING_FIELD("uri", uri),
                              ECP_INT_FIELD("version", version)));
}

static const document_listener listener = {
    .on_open = on_open,
    .on_change = on_change,
    .on_cursors = on_cursors,
    .on_close = on_close,
    .on_save = on_save,
};

static void on_disk_change(void *ctx, const char *document_id, const char *uri)
{
    notify_document(ctx, "document/didChangeOnDisk", document_id, uri);
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
    struct pending *next, **link; /* in ad->running while req is set; link: what points at it */
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
        p->next->link = &p->next;
    p->ad->running = p;
    p->link = &p->ad->running;
    ecp_call_on_abandon(p->call, abandon, p);
}

/* Every answer starts here: the service owes this request nothing more. */
static void settle(pending *p)
{
    if (!p->req)
        return;
    *p->link = p->next;
    if (p->next)
        p->next->link = p->link;
    p->next = NULL;
    p->link = NULL;
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
    /* a client gone meanwhile never holds it: a hold nobody can release */
    if (!ecp_call_abandoned(call))
        document_hold(p->ad->svc, document_id, ecp_call_client(call), NULL);
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
    jw_key_string_opt(w, "uri", uri);
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
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_string_opt(call, params, "uri", &uri) ||
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
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_bool_opt(call, ecp_call_params(call), "force", false, &force))
        return;
    pending *p = pending_new(ctx, call);
    watch(p, document_reload(p->ad->svc, id.ptr, force, reloaded, p));
}

/* ----- documents and text ------------------------------------------------------------------ */

static void m_close(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    /* the caller lets go; the document closes when nobody else holds it */
    ecp_call_reply_success(call, document_release(ad->svc, id.ptr, ecp_call_client(call), false, NULL, NULL) == 0);
}

typedef struct clients_list {
    doc_adapter *ad;
    json_writer *w;
} clients_list;

static void write_client(void *ctx, uint64_t owner, const document_cursor *cursors, size_t count)
{
    clients_list *l = ctx;
    const char *name = owner ? ecp_bus_client_name(l->ad->bus, owner) : "ecpd";
    jw_object_begin(l->w);
    jw_key_int(l->w, "clientId", (int64_t)owner);
    jw_key_string(l->w, "name", name ? name : "");
    jw_key(l->w, "cursors");
    doc_adapter_write_cursors(l->w, cursors, count);
    jw_object_end(l->w);
}

/* Presence: who has the document open, and where their cursors are. */
static void m_clients(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!doc_adapter_arg_doc_info(ad, call, &id, &info))
        return;
    clients_list l = {ad, ecp_call_result_list(call, "clients")};
    document_holders(ad->svc, id.ptr, ecp_call_encoding(call), write_client, &l, NULL);
    ecp_call_finish_list(call, l.w);
}

static void client_closed(void *ctx, uint64_t client_id)
{
    doc_adapter *ad = ctx;
    document_release_all(ad->svc, client_id);
}

static void m_info(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!doc_adapter_arg_doc_info(ad, call, &id, &info))
        return;
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    write_info_fields(w, &info);
    /* only here: working it out reads the document's lines, which a list of
     * every document should not */
    document_indent indent;
    if (document_indent_of(ad->svc, id.ptr, &indent, NULL) == 0) {
        jw_key(w, "indent");
        jw_object_begin(w);
        jw_key_string(w, "style", indent.tabs ? "tabs" : "spaces");
        jw_key_int(w, "size", (int64_t)indent.size);
        jw_object_end(w);
    }
    /* the rest of what its .editorconfig says, each only when it says it */
    document_format format;
    if (document_format_of(ad->svc, id.ptr, &format, NULL) == 0) {
        if (format.end_of_line[0])
            jw_key_string(w, "endOfLine", format.end_of_line);
        if (format.charset[0])
            jw_key_string(w, "charset", format.charset);
        if (format.insert_final_newline >= 0)
            jw_key_bool(w, "insertFinalNewline", format.insert_final_newline == 1);
        if (format.trim_trailing_whitespace >= 0)
            jw_key_bool(w, "trimTrailingWhitespace", format.trim_trailing_whitespace == 1);
    }
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_list(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_writer *w = ecp_call_result_list(call, "documents");
    document_list(ad->svc, write_info, w);
    ecp_call_finish_list(call, w);
}
/* ----- the table ----------------------------------------------------------------------------------------- */

static const ecp_method methods[] = {
    {"document/open", m_open, "1.0",
     "Open a document: content if given, else a file:// uri's file; an open uri gives its document",
     "{uri: string, content?: string, languageId?: string, readOnly?: boolean}"},
    {"document/close", m_close, "1.0",
     "Let go of a document; it closes once no client holds it (success is false for an unknown id)",
     "{documentId: string}"},
    {"document/clients", m_clients, "1.0",
     "The clients that hold the document open, with their names and cursors",
     "{documentId: string}"},
    {"document/info", m_info, "1.0",
     "The document's DocumentInfo, with its indent unit",
     "{documentId: string}"},
    {"document/list", m_list, "1.0",
     "The DocumentInfo of every open document, in the order they were opened",
     "{}"},
    {"document/content", doc_method_content, "1.0",
     "The whole text, with its version and line count",
     "{documentId: string}"},
    {"document/line", doc_method_line, "1.0",
     "One line's text, without its line end",
     "{documentId: string, lineNumber: integer >= 0}"},
    {"document/lines", doc_method_lines, "1.0",
     "The lines from startLine up to endLine (exclusive), clamped to the document",
     "{documentId: string, startLine: integer >= 0, endLine: integer >= 0}"},
    {"document/textInRange", doc_method_text_in_range, "1.0",
     "The text of a range",
     "{documentId: string, range: Range}"},
    {"document/version", doc_method_version, "1.0",
     "The document's version",
     "{documentId: string}"},
    {"document/insert", doc_method_insert, "1.0",
     "Insert text at a position and put the primary cursor after it; one undo step",
     "{documentId: string, position: Position, text: string, groupWithPrevious?: boolean}"},
    {"document/delete", doc_method_delete, "1.0",
     "Delete a range; one undo step",
     "{documentId: string, range: Range, groupWithPrevious?: boolean}"},
    {"document/replace", doc_method_replace, "1.0",
     "Replace a range with text; with query, replace the next match from the caller's primary cursor, "
     "or every match; one undo step",
     "{documentId: string, range?: Range, text?: string, groupWithPrevious?: boolean, query?: string, "
     "replacement?: string, regex?: boolean, caseSensitive?: boolean, wholeWord?: boolean, all?: boolean}"},
    {"document/setContent", doc_method_set_content, "1.0",
     "Replace the whole text; one undo step, the cursor goes to the end",
     "{documentId: string, content: string}"},
    {"document/cursors", doc_method_cursors, "1.0",
     "Every cursor, primary first",
     "{documentId: string}"},
    {"document/setCursors", doc_method_set_cursors, "1.0",
     "Replace every cursor (the first is primary); overlapping cursors merge",
     "{documentId: string, cursors: Cursor[]}"},
    {"document/setCursor", doc_method_set_cursor, "1.0",
     "Leave one cursor, at a position, with an optional selection",
     "{documentId: string, position: Position, selection?: {anchor: Position, active: Position}}"},
    {"document/addCursor", doc_method_add_cursor, "1.0",
     "Add a cursor at a position",
     "{documentId: string, position: Position}"},
    {"document/moveCursors", doc_method_move_cursors, "1.0",
     "Move every cursor by a unit (character by default), extending selections when select is true",
     "{documentId: string, direction: \"up\"|\"down\"|\"left\"|\"right\", "
     "unit?: \"character\"|\"word\"|\"line\"|\"page\"|\"document\", select?: boolean}"},
    {"document/selectAll", doc_method_select_all, "1.0",
     "One cursor that selects the whole document",
     "{documentId: string}"},
    {"document/clearSelections", doc_method_clear_selections, "1.0",
     "Drop every selection, keeping the carets",
     "{documentId: string}"},
    {"document/selections", doc_method_selections, "1.0",
     "The selected text of every cursor, primary first (\"\" for a cursor without a selection)",
     "{documentId: string}"},
    {"document/undo", doc_method_undo, "1.0",
     "Undo the last step and put the cursors back where they were before it",
     "{documentId: string}"},
    {"document/redo", doc_method_redo, "1.0",
     "Redo the last undone step",
     "{documentId: string}"},
    {"document/canUndo", doc_method_can_undo, "1.0",
     "Whether there is a step to undo",
     "{documentId: string}"},
    {"document/canRedo", doc_method_can_redo, "1.0",
     "Whether there is a step to redo",
     "{documentId: string}"},
    {"document/isDirty", doc_method_is_dirty, "1.0",
     "Whether the text differs from what was last read or saved",
     "{documentId: string}"},
    {"document/markClean", doc_method_mark_clean, "1.0",
     "Declare the current text to be what is on disk",
     "{documentId: string}"},
    {"document/positionToOffset", doc_method_position_to_offset, "1.0",
     "The offset of a position, in units of the connection's encoding",
     "{documentId: string, position: Position}"},
    {"document/offsetToPosition", doc_method_offset_to_position, "1.0",
     "The position of an offset, in units of the connection's encoding",
     "{documentId: string, offset: integer >= 0}"},
    {"document/wordAtPosition", doc_method_word_at_position, "1.0",
     "The word ([A-Za-z0-9_]+) under a position with its range, or null",
     "{documentId: string, position: Position}"},
    {"document/save", m_save, "1.0",
     "Write the document to its file, or to uri (save as), atomically and keeping the file's mode; "
     "a file changed on disk is a conflict unless force",
     "{documentId: string, uri?: string, force?: boolean}"},
    {"document/reload", m_reload, "1.0",
     "Read the file again as one undoable edit; unsaved edits are refused unless force",
     "{documentId: string, force?: boolean}"},
    {"document/edit", doc_method_edit, "1.0",
     "Apply several non-overlapping edits, in the coordinates before any of them, as one undo step",
     "{documentId: string, edits: {range: Range, text: string}[], groupWithPrevious?: boolean}"},
    {"document/type", doc_method_type, "1.0",
     "Type text at every cursor, or one of texts at each cursor in document order, replacing its selection",
     "{documentId: string, text?: string, texts?: string[], groupWithPrevious?: boolean}"},
    {"document/viewport", doc_method_viewport, "1.0",
     "The lines of one screen with the document's version and line count, and the tokens or diagnostics "
     "that include names",
     "{documentId: string, startLine: integer >= 0, lineCount: integer >= 0, include?: string[]}"},
    {"document/indent", doc_method_indent, "1.0",
     "Indent every line the caller's cursors touch by one unit; one undo step; answers version and cursors",
     "{documentId: string}"},
    {"document/outdent", doc_method_outdent, "1.0",
     "Take one indent unit off every line the caller's cursors touch; one undo step",
     "{documentId: string}"},
    {"document/newline", doc_method_newline, "1.0",
     "Replace each of the caller's selections by a line end and the current line's indent "
     "(one unit more after {, [, ( or :); one undo step",
     "{documentId: string}"},
    {"document/duplicateLines", doc_method_duplicate_lines, "1.0",
     "Copy the lines the caller's cursors touch; the cursors stay on the lower copy; one undo step",
     "{documentId: string}"},
    {"document/moveLines", doc_method_move_lines, "1.0",
     "Move the lines the caller's cursors touch one line up or down, cursors with them; one undo step",
     "{documentId: string, direction: \"up\"|\"down\"}"},
    {"document/deleteWord", doc_method_delete_word, "1.0",
     "Delete each selection, or from each caret to the word boundary a move by word reaches; one undo step",
     "{documentId: string, direction: \"left\"|\"right\"}"},
    {"document/find", doc_method_find, "1.0",
     "Find a literal or a PCRE2 pattern: the matches (up to limit, around the current one), their total and "
     "the current match's index",
     "{documentId: string, query: string, regex?: boolean, caseSensitive?: boolean, wholeWord?: boolean, "
     "from?: Position, backwards?: boolean, limit?: integer >= 0, range?: Range}"},
    {"document/toggleComment", doc_method_toggle_comment, "1.0",
     "Comment the lines the caller's cursors touch with the language's line comment, or uncomment them "
     "when all are; one undo step",
     "{documentId: string}"},
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
    "document/didChangeOnDisk", "document/didSave", NULL,
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
    out->client_closed = client_closed;
    out->notifications = notifications;
}
