/* adapter_text.c: the document methods that read and change the text
 * (content, lines, viewport, edits, setContent, history, positions). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapter_internal.h"
#include "error.h"
#include "job.h"

/* ----- text ------------------------------------------------------------------------------------ */

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
    doc_adapter_write_snapshot_text(&w, t->snap, 0, document_snapshot_length(t->snap));
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

void doc_method_content(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!doc_adapter_arg_doc_info(ad, call, &id, &info))
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
    document_read(ad->svc, id.ptr, NULL, ECP_ENCODING_UTF8, doc_adapter_write_chunk, w, NULL);
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
    document_read_line(ad->svc, id, line, doc_adapter_write_chunk, w, NULL);
    jw_string_end(w);
    jw_object_end(w);
}

void doc_method_line(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    size_t line;
    ecp_error err;
    document_info info;
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_index(call, ecp_call_params(call), "lineNumber", &line))
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

static const document_line_reader line_writer = {line_begin, doc_adapter_write_chunk, line_end};

/* Consecutive lines: read walking the text, not looked up one by one. */
static void write_lines(doc_adapter *ad, json_writer *w, const char *id, size_t start, size_t end)
{
    jw_array_begin(w);
    document_read_lines(ad->svc, id, start, end, &line_writer, w, NULL);
    jw_array_end(w);
}

void doc_method_lines(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id;
    size_t start, end;
    document_info info;
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_index(call, params, "startLine", &start) ||
        !ecp_arg_index(call, params, "endLine", &end))
        return;
    if (document_get_info(ad->svc, id.ptr, &info, NULL) != 0)
        info.line_count = 0; /* the catalogue: an unknown document has no lines */
    if (end > info.line_count)
        end = info.line_count;
    if (start > end)
        start = end;
    json_writer *w = ecp_call_result_key(call, "lines");
    write_lines(ad, w, id.ptr, start, end);
    ecp_call_finish_key(call, w);
}

void doc_method_viewport(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    json_ref params = ecp_call_params(call);
    ecp_str id;
    size_t start, count;
    json_ref include;
    ecp_error err;
    document_info info;
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_index(call, params, "startLine", &start) ||
        !ecp_arg_index(call, params, "lineCount", &count) || !ecp_arg_array_opt(call, params, "include", &include))
        return;
    int rc = document_get_info(ad->svc, id.ptr, &info, &err);
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
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

void doc_method_text_in_range(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_range range;
    ecp_error err;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_range(call, ecp_call_params(call), "range", &range))
        return;
    text_reply t = {.call = call};
    int rc = document_read(ad->svc, id.ptr, &range, ecp_call_encoding(call), text_reply_chunk, &t, &err);
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
        return;
    }
    if (!t.w)
        text_reply_start(&t);
    jw_string_end(t.w);
    jw_object_end(t.w);
    ecp_call_finish(call);
}

void doc_method_version(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!doc_adapter_arg_doc_info(ad, call, &id, &info))
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
    int rc = document_apply_edits(ad->svc, id, ecp_call_client(call), &e, 1, ecp_call_encoding(call), flags, &version,
                                  &err);
    doc_adapter_reply_edit(call, rc, version, &err);
}

void doc_method_insert(void *ctx, ecp_call *call)
{
    ecp_str id, text;
    document_range range;
    bool ok;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_position(call, ecp_call_params(call), "position", &range.start) ||
        !ecp_arg_string(call, ecp_call_params(call), "text", &text))
        return;
    unsigned flags = doc_adapter_group_flag(call, &ok);
    if (!ok)
        return;
    range.end = range.start;
    edit_one(ctx, call, id.ptr, &range, &text, flags | DOCUMENT_EDIT_MOVE_CURSOR);
}

void doc_method_delete(void *ctx, ecp_call *call)
{
    ecp_str id, text = {"", 0};
    document_range range;
    bool ok;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_range(call, ecp_call_params(call), "range", &range))
        return;
    unsigned flags = doc_adapter_group_flag(call, &ok);
    if (ok)
        edit_one(ctx, call, id.ptr, &range, &text, flags);
}

void doc_method_replace(void *ctx, ecp_call *call)
{
    /* with a query it finds and replaces */
    if (json_get(ecp_call_doc(call), ecp_call_params(call), "query") != JSON_NO_REF) {
        doc_method_replace_matches(ctx, call);
        return;
    }
    ecp_str id, text;
    document_range range;
    bool ok;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_range(call, ecp_call_params(call), "range", &range) ||
        !ecp_arg_string(call, ecp_call_params(call), "text", &text))
        return;
    unsigned flags = doc_adapter_group_flag(call, &ok);
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
bool doc_adapter_content_as_sent(const doc_adapter *ad, const document_change *c, const char **json, size_t *len,
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
    doc_adapter_reply_edit(call, rc, version, &t->err);
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

void doc_method_set_content(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id, content;
    ecp_error err;
    uint64_t version;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    const json_doc *jd = ecp_call_doc(call);
    json_ref ref = json_get(jd, ecp_call_params(call), "content");
    size_t raw_len = 0;
    const char *raw = json_type_of(jd, ref) == JSON_STRING ? json_raw(jd, ref, &raw_len) : NULL;
    if (raw && raw_len >= CONTENT_OFF_LOOP_BYTES) {
        document_replacement *r = document_replacement_begin(ad->svc, id.ptr, ecp_call_client(call), &err);
        if (!r) {
            uint64_t now = 0;
            document_info info;
            if (document_get_info(ad->svc, id.ptr, &info, NULL) == 0)
                now = info.version;
            doc_adapter_reply_edit(call, err.status, now, &err);
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
    int rc = document_set_content(ad->svc, id.ptr, ecp_call_client(call), content.ptr, content.len, &version, &err);
    doc_adapter_reply_edit(call, rc, version, &err);
}

void doc_method_edit(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    const json_doc *jd = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    ecp_str id;
    json_ref first;
    size_t count;
    bool ok;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_list(call, "edits", &first, &count))
        return;
    unsigned flags = doc_adapter_group_flag(call, &ok);
    if (!ok)
        return;
    document_edit *list = arena_alloc(a, count * sizeof *list);
    size_t i = 0;
    for (json_ref e = first; e != JSON_NO_REF; e = json_next(jd, e), i++) {
        const char *name = doc_adapter_list_item(call, "edits", i, e);
        if (!name)
            return;
        /* the readers use a field's name only while they run: a replace-all
         * of 670,000 edits does not keep 1.3 million of them in the arena */
        char range_name[64], text_name[64];
        snprintf(range_name, sizeof range_name, "%s.range", name);
        snprintf(text_name, sizeof text_name, "%s.text", name);
        ecp_str text;
        if (!doc_adapter_arg_range(call, e, range_name, &list[i].range) || !ecp_arg_string(call, e, text_name, &text))
            return;
        list[i].text = text.ptr;
        list[i].len = text.len;
    }
    ecp_error err;
    uint64_t version;
    int rc = document_apply_edits(ad->svc, id.ptr, ecp_call_client(call), list, count, ecp_call_encoding(call), flags,
                                  &version, &err);
    doc_adapter_reply_edit(call, rc, version, &err);
}

/* `text` at every cursor, or `texts`, one for each cursor in document order
 * (a paste of as many lines as there are cursors): exactly one of the two. */
void doc_method_type(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    const json_doc *jd = ecp_call_doc(call);
    json_ref params = ecp_call_params(call);
    bool has_text = json_get(jd, params, "text") != JSON_NO_REF;
    bool has_texts = json_get(jd, params, "texts") != JSON_NO_REF;
    ecp_str id, text;
    bool ok;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    if (has_text && has_texts) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "text and texts: give one of them, not both");
        return;
    }
    unsigned flags = doc_adapter_group_flag(call, &ok);
    if (!ok)
        return;
    ecp_error err;
    uint64_t version;
    int rc;
    if (!has_texts) {
        if (!ecp_arg_string(call, params, "text", &text))
            return;
        rc = document_type(ad->svc, id.ptr, ecp_call_client(call), text.ptr, text.len, flags, &version, &err);
    } else {
        json_ref first;
        size_t count;
        if (!doc_adapter_arg_list(call, "texts", &first, &count))
            return;
        document_text *texts = arena_alloc(ecp_call_arena(call), count * sizeof *texts);
        size_t i = 0;
        for (json_ref t = first; t != JSON_NO_REF; t = json_next(jd, t), i++)
            if (!json_string(jd, t, ecp_call_arena(call), &texts[i].text, &texts[i].len)) {
                ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "texts[%zu]: expected string", i);
                return;
            }
        rc = document_type_each(ad->svc, id.ptr, ecp_call_client(call), texts, count, flags, &version, &err);
    }
    doc_adapter_reply_edit(call, rc, version, &err);
}

/* ----- history ----------------------------------------------------------------------------------- */

static void undo_redo(doc_adapter *ad, ecp_call *call, bool redo)
{
    ecp_str id;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    uint64_t version = 0;
    bool can_undo = false, can_redo = false;
    uint64_t client = ecp_call_client(call);
    int rc = redo ? document_redo(ad->svc, id.ptr, client, &version, NULL)
                  : document_undo(ad->svc, id.ptr, client, &version, NULL);
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

void doc_method_undo(void *ctx, ecp_call *call) { undo_redo(ctx, call, false); }
void doc_method_redo(void *ctx, ecp_call *call) { undo_redo(ctx, call, true); }

static void can(doc_adapter *ad, ecp_call *call, bool redo)
{
    ecp_str id;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    bool can_undo, can_redo;
    document_history(ad->svc, id.ptr, &can_undo, &can_redo, NULL);
    ecp_call_reply_bool(call, redo ? "canRedo" : "canUndo", redo ? can_redo : can_undo);
}

void doc_method_can_undo(void *ctx, ecp_call *call) { can(ctx, call, false); }
void doc_method_can_redo(void *ctx, ecp_call *call) { can(ctx, call, true); }

void doc_method_is_dirty(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_info info;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    bool dirty = document_get_info(ad->svc, id.ptr, &info, NULL) == 0 && info.is_dirty;
    ecp_call_reply_bool(call, "isDirty", dirty);
}

void doc_method_mark_clean(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    if (!doc_adapter_arg_doc(call, &id))
        return;
    /* The catalogue answers true even for an unknown document. */
    document_mark_clean(ad->svc, id.ptr, NULL);
    ecp_call_reply_success(call, true);
}

/* ----- positions ------------------------------------------------------------------------------------ */

void doc_method_position_to_offset(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    ecp_error err;
    uint64_t offset;
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    int rc = document_position_to_offset(ad->svc, id.ptr, &pos, ecp_call_encoding(call), &offset, &err);
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
        return;
    }
    ecp_call_reply_int(call, "offset", (int64_t)offset);
}

void doc_method_offset_to_position(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    size_t offset;
    ecp_error err;
    document_position pos;
    if (!doc_adapter_arg_doc(call, &id) || !ecp_arg_index(call, ecp_call_params(call), "offset", &offset))
        return;
    int rc = document_offset_to_position(ad->svc, id.ptr, offset, ecp_call_encoding(call), &pos, &err);
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
        return;
    }
    json_writer *w = ecp_call_result_key(call, "position");
    doc_adapter_write_position(w, pos.line, pos.column);
    ecp_call_finish_key(call, w);
}

void doc_method_word_at_position(void *ctx, ecp_call *call)
{
    doc_adapter *ad = ctx;
    ecp_str id;
    document_position pos;
    document_range range;
    ecp_error err;
    bool found;
    ecp_position_encoding enc = ecp_call_encoding(call);
    if (!doc_adapter_arg_doc(call, &id) || !doc_adapter_arg_position(call, ecp_call_params(call), "position", &pos))
        return;
    int rc = document_word_at(ad->svc, id.ptr, &pos, enc, &range, &found, &err);
    if (rc == ECP_ENOTFOUND || (rc == 0 && !found)) {
        ecp_call_reply_null(call);
        return;
    }
    if (rc != 0) {
        doc_adapter_reply_error(call, rc, &err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key(w, "range");
    doc_adapter_write_range(w, range.start.line, range.start.column, range.end.line, range.end.column);
    jw_key(w, "text");
    jw_string_begin(w);
    document_read(ad->svc, id.ptr, &range, enc, doc_adapter_write_chunk, w, NULL);
    jw_string_end(w);
    jw_object_end(w);
    ecp_call_finish(call);
}

