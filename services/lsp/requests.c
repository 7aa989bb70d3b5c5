/* Requests: those a client sends to a server and their results, those a
 * server sends to the client (configuration, applyEdit, workspace folders),
 * and the conversion of positions between encodings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "session/interface.h"
#include "uri.h"
#include "utf.h"

/* The value at a dotted section of the server's configured settings, else
 * the editor setting of that name ("lsp.hover.enabled"), else null. */
static void configuration_item(lsp_server *s, const json_doc *doc, json_ref item, json_writer *w)
{
    arena a;
    arena_init(&a);
    const char *section = NULL;
    size_t len = 0;
    if (!json_string(doc, json_get(doc, item, "section"), &a, &section, &len))
        section = NULL;
    lsp_server_config config;
    json_doc settings = {0};
    json_ref at = JSON_NO_REF;
    if (lsp_config_get(s->svc, s->language_id, &config) && config.settings &&
        json_doc_parse(&settings, config.settings, strlen(config.settings), NULL) == 0) {
        at = json_root(&settings);
        if (section && *section) {
            char *path = xstrdup(section);
            char *save = NULL;
            for (char *part = strtok_r(path, ".", &save); part && at != JSON_NO_REF; part = strtok_r(NULL, ".", &save))
                at = json_get(&settings, at, part);
            free(path);
        }
    }
    const char *editor = NULL;
    if (at != JSON_NO_REF)
        json_write_value(w, &settings, at);
    else if (section && s->svc->session && (editor = session_setting_json(s->svc->session, section)))
        jw_raw(w, editor, strlen(editor));
    else
        jw_null(w);
    json_doc_free(&settings);
    arena_free(&a);
}

/* workspace/applyEdit: every document's edits as one undoable step. */
static bool apply_text_edits(lsp_server *s, const json_doc *doc, const char *uri, json_ref edits, buf *why)
{
    lsp_service *svc = s->svc;
    lsp_doc *d = lsp_doc_find(svc, uri);
    if (!d || !d->document_id || !svc->documents) {
        buf_appendf(why, "%s is not open in the editor", uri);
        return false;
    }
    size_t n = json_length(doc, edits);
    document_edit *list = xcalloc(n ? n : 1, sizeof *list);
    arena a;
    arena_init(&a);
    size_t i = 0;
    for (json_ref e = json_first(doc, edits); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        json_ref r = json_get(doc, e, "range");
        json_ref st = json_get(doc, r, "start"), en = json_get(doc, r, "end");
        list[i].range.start.line = lsp_json_size(doc, json_get(doc, st, "line"));
        list[i].range.start.column = lsp_json_size(doc, json_get(doc, st, "character"));
        list[i].range.end.line = lsp_json_size(doc, json_get(doc, en, "line"));
        list[i].range.end.column = lsp_json_size(doc, json_get(doc, en, "character"));
        if (!json_string(doc, json_get(doc, e, "newText"), &a, &list[i].text, &list[i].len)) {
            list[i].text = "";
            list[i].len = 0;
        }
    }
    ecp_error err = {0};
    int rc = document_apply_edits(svc->documents, d->document_id, 0, list, n, s->enc, 0, NULL, &err);
    if (rc)
        buf_appendf(why, "%s: %s", uri, err.message);
    arena_free(&a);
    free(list);
    return rc == 0;
}

static void apply_edit(lsp_server *s, ecp_peer_request *request, const json_doc *doc, json_ref params)
{
    json_ref edit = json_get(doc, params, "edit");
    buf why;
    buf_init(&why);
    bool ok = true;
    arena a;
    arena_init(&a);
    json_ref changes = json_get(doc, edit, "changes");
    for (json_ref k = json_first(doc, changes); k != JSON_NO_REF && ok; k = json_next(doc, k)) {
        const char *uri;
        size_t len;
        if (json_string(doc, k, &a, &uri, &len))
            ok = apply_text_edits(s, doc, uri, k + 1, &why);
    }
    json_ref dc = json_get(doc, edit, "documentChanges");
    for (json_ref c = json_first(doc, dc); c != JSON_NO_REF && ok; c = json_next(doc, c)) {
        const char *uri;
        size_t len;
        if (json_get(doc, c, "kind") != JSON_NO_REF) {
            buf_append_str(&why, "file operations are not supported");
            ok = false;
        } else if (json_string(doc, json_get(doc, json_get(doc, c, "textDocument"), "uri"), &a, &uri, &len)) {
            ok = apply_text_edits(s, doc, uri, json_get(doc, c, "edits"), &why);
        }
    }
    buf result;
    buf_init(&result);
    buf_appendf(&result, "{\"applied\":%s", ok ? "true" : "false");
    if (!ok) {
        buf_append_str(&result, ",\"failureReason\":\"");
        json_escape_into(&result, why.data ? why.data : "", why.len);
        buf_push(&result, '"');
    }
    buf_push(&result, '}');
    ecp_peer_respond(request, result.data);
    buf_free(&result);
    buf_free(&why);
    arena_free(&a);
}

void lsp_server_request_in(lsp_server *s, ecp_peer_request *request, const json_doc *doc, json_ref method,
                           json_ref params)
{
    if (json_string_eq(doc, method, "workspace/configuration")) {
        buf out;
        buf_init(&out);
        json_writer w;
        jw_init(&w, &out);
        jw_array_begin(&w);
        for (json_ref item = json_first(doc, json_get(doc, params, "items")); item != JSON_NO_REF;
             item = json_next(doc, item))
            configuration_item(s, doc, item, &w);
        jw_array_end(&w);
        ecp_peer_respond(request, out.data);
        buf_free(&out);
    } else if (json_string_eq(doc, method, "client/registerCapability") ||
               json_string_eq(doc, method, "client/unregisterCapability") ||
               json_string_eq(doc, method, "window/workDoneProgress/create")) {
        ecp_peer_respond(request, "null");
    } else if (json_string_eq(doc, method, "window/showMessageRequest")) {
        size_t len;
        const char *raw = json_raw(doc, params, &len);
        char *copy = xstrndup(raw ? raw : "{}", raw ? len : 2);
        ECP_EMIT(&s->svc->listeners, lsp_listener, on_message, s->language_id, copy);
        free(copy);
        ecp_peer_respond(request, "null");
    } else if (json_string_eq(doc, method, "workspace/applyEdit")) {
        apply_edit(s, request, doc, params);
    } else if (json_string_eq(doc, method, "workspace/workspaceFolders")) {
        buf out;
        buf_init(&out);
        if (s->root_uri) {
            buf_append_str(&out, "[{\"uri\":\"");
            json_escape_into(&out, s->root_uri, strlen(s->root_uri));
            buf_append_str(&out, "\",\"name\":\"workspace\"}]");
        } else {
            buf_append_str(&out, "null");
        }
        ecp_peer_respond(request, out.data);
        buf_free(&out);
    } else {
        size_t len;
        const char *raw = json_raw(doc, method, &len);
        ecp_log(s->svc->log, ECP_LOG_WARN, "lsp %s: unknown request %.*s from the server", s->language_id,
                (int)(raw ? len : 0), raw ? raw : "");
        ecp_peer_respond_error(request, -32601, "Method not found");
    }
}

/* ----- positions ------------------------------------------------------------------------------ */

static void append_chunk(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

/* The text of one line of uri, when the service follows that document. */
static bool line_text(lsp_service *self, const char *uri, size_t line, buf *out)
{
    lsp_doc *d = lsp_doc_find(self, uri);
    if (!d)
        return false;
    buf_clear(out);
    if (d->document_id)
        return self->documents &&
               document_read_line(self->documents, d->document_id, line, append_chunk, out, NULL) == 0;
    const char *p = d->text ? d->text : "", *end = p + d->len;
    for (size_t l = 0; l < line; l++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        p = nl + 1;
    }
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    buf_append(out, p, nl ? (size_t)(nl - p) : (size_t)(end - p));
    return true;
}

static size_t column_in(const buf *text, size_t column, ecp_position_encoding from, ecp_position_encoding to)
{
    const char *s = text->data ? text->data : "";
    size_t byte;
    if (utf_column_to_byte(s, text->len, column, from, &byte))
        return utf_byte_to_column(s, text->len, byte, to);
    /* past the end of the line (a range that ends after it): keep the excess */
    return utf_column_count(s, text->len, to) + (column - utf_column_count(s, text->len, from));
}

size_t lsp_column_convert(lsp_service *self, const char *uri, size_t line, size_t column, ecp_position_encoding from,
                          ecp_position_encoding to)
{
    if (from == to || !uri)
        return column;
    buf text;
    buf_init(&text);
    size_t out = line_text(self, uri, line, &text) ? column_in(&text, column, from, to) : column;
    buf_free(&text);
    return out;
}

ecp_position_encoding lsp_encoding_of(lsp_service *self, const char *uri)
{
    lsp_doc *d = lsp_doc_find(self, uri);
    lsp_server *s = d ? lsp_server_find(self, d->language_id) : NULL;
    return s ? s->enc : ECP_ENCODING_UTF16;
}

typedef struct converter {
    lsp_service *svc;
    const json_doc *doc;
    ecp_position_encoding from, to;
    arena *strings;
    buf line;          /* the text of cached_line of cached_uri */
    const char *cached_uri;
    size_t cached_line;
    bool cached_ok;
} converter;

static bool is_position(const json_doc *d, json_ref obj, int64_t *line, int64_t *character)
{
    return json_length(d, obj) == 2 && json_int64(d, json_get(d, obj, "line"), line) &&
           json_int64(d, json_get(d, obj, "character"), character) && *line >= 0 && *character >= 0;
}

static void convert_value(converter *c, json_ref ref, const char *uri, json_writer *w);

/* A column of a line of uri in the other encoding; lines are looked up once
 * for a run of positions on the same line. */
static size_t converted_column(converter *c, const char *uri, size_t line, size_t column)
{
    if (!uri || c->from == c->to)
        return column;
    if (!c->cached_uri || strcmp(c->cached_uri, uri) != 0 || c->cached_line != line) {
        c->cached_uri = uri;
        c->cached_line = line;
        c->cached_ok = line_text(c->svc, uri, line, &c->line);
    }
    return c->cached_ok ? column_in(&c->line, column, c->from, c->to) : column;
}

static const char *string_of(converter *c, json_ref ref)
{
    const char *s;
    size_t len;
    return json_string(c->doc, ref, c->strings, &s, &len) ? s : NULL;
}

static void convert_object(converter *c, json_ref obj, const char *uri, json_writer *w)
{
    const json_doc *d = c->doc;
    int64_t line, character;
    if (is_position(d, obj, &line, &character)) {
        size_t column = converted_column(c, uri, (size_t)line, (size_t)character);
        jw_object_begin(w);
        jw_key_int(w, "line", line);
        jw_key_int(w, "character", (int64_t)column);
        jw_object_end(w);
        return;
    }
    const char *own = string_of(c, json_get(d, obj, "uri"));
    if (!own)
        own = string_of(c, json_get(d, obj, "targetUri"));
    if (!own)
        own = string_of(c, json_get(d, json_get(d, obj, "textDocument"), "uri"));
    if (own)
        uri = own;
    jw_object_begin(w);
    for (json_ref k = json_first(d, obj); k != JSON_NO_REF; k = json_next(d, k)) {
        const char *key = string_of(c, k);
        if (!key)
            continue;
        jw_key(w, key);
        if (strcmp(key, "changes") == 0 && json_type_of(d, k + 1) == JSON_OBJECT) {
            /* WorkspaceEdit.changes: each key is the uri of its edits */
            jw_object_begin(w);
            for (json_ref u = json_first(d, k + 1); u != JSON_NO_REF; u = json_next(d, u)) {
                const char *edits_uri = string_of(c, u);
                if (!edits_uri)
                    continue;
                jw_key(w, edits_uri);
                convert_value(c, u + 1, edits_uri, w);
            }
            jw_object_end(w);
        } else {
            convert_value(c, k + 1, uri, w);
        }
    }
    jw_object_end(w);
}

static void convert_value(converter *c, json_ref ref, const char *uri, json_writer *w)
{
    switch (json_type_of(c->doc, ref)) {
    case JSON_OBJECT:
        convert_object(c, ref, uri, w);
        break;
    case JSON_ARRAY:
        jw_array_begin(w);
        for (json_ref e = json_first(c->doc, ref); e != JSON_NO_REF; e = json_next(c->doc, e))
            convert_value(c, e, uri, w);
        jw_array_end(w);
        break;
    default:
        json_write_value(w, c->doc, ref);
        break;
    }
}

char *lsp_json_convert(lsp_service *self, const char *default_uri, const char *json, size_t len,
                       ecp_position_encoding from, ecp_position_encoding to, size_t *out_len)
{
    json_doc doc = {0};
    if (json_doc_parse(&doc, json, len, NULL) != 0) {
        json_doc_free(&doc);
        return NULL;
    }
    buf out;
    buf_init(&out);
    json_writer w;
    jw_init(&w, &out);
    if (from == to) {
        json_write_value(&w, &doc, json_root(&doc));
    } else {
        arena strings;
        arena_init(&strings);
        converter c = {.svc = self, .doc = &doc, .from = from, .to = to, .strings = &strings};
        buf_init(&c.line);
        convert_value(&c, json_root(&doc), default_uri, &w);
        buf_free(&c.line);
        arena_free(&strings);
    }
    json_doc_free(&doc);
    if (out_len)
        *out_len = out.len;
    if (!out.data)
        buf_append(&out, "", 0);
    return buf_detach(&out);
}

/* ----- results ------------------------------------------------------------------------------- */

static void location_of(converter *c, json_ref loc, lsp_location *out)
{
    const json_doc *d = c->doc;
    json_ref target = json_get(d, loc, "targetUri");
    json_ref range = target != JSON_NO_REF ? json_get(d, loc, "targetSelectionRange") : json_get(d, loc, "range");
    if (range == JSON_NO_REF)
        range = json_get(d, loc, "targetRange");
    out->uri = string_of(c, target != JSON_NO_REF ? target : json_get(d, loc, "uri"));
    int64_t start_line, start_character, end_line, end_character;
    out->has_range = is_position(d, json_get(d, range, "start"), &start_line, &start_character) &&
                     is_position(d, json_get(d, range, "end"), &end_line, &end_character);
    if (!out->has_range)
        return;
    out->start_line = (size_t)start_line;
    out->start_character = converted_column(c, out->uri, (size_t)start_line, (size_t)start_character);
    out->end_line = (size_t)end_line;
    out->end_character = converted_column(c, out->uri, (size_t)end_line, (size_t)end_character);
}

/* Whether a server's JSON text can be quoted as it is: valid UTF-8, and no
 * line break between its tokens (a pretty-printed answer), which would end a
 * message early on a transport that frames messages by lines. */
static bool quotable(const char *raw, size_t len)
{
    return raw && !memchr(raw, '\n', len) && !memchr(raw, '\r', len) && utf8_is_valid(raw, len);
}

/* The value's JSON text as the requester is to get it: the server's own bytes
 * when they can be quoted and no position changes units, else written once
 * from the message already parsed. */
static void value_text(converter *c, json_ref value, const char *uri, buf *scratch, lsp_result *out)
{
    size_t len = 0;
    const char *raw = json_raw(c->doc, value, &len);
    if (c->from == c->to && quotable(raw, len)) {
        out->json = raw;
        out->len = len;
        return;
    }
    json_writer w;
    jw_init(&w, scratch);
    if (c->from == c->to)
        json_write_value(&w, c->doc, value);
    else
        convert_value(c, value, uri, &w);
    out->json = scratch->data ? scratch->data : "null";
    out->len = scratch->data ? scratch->len : 4;
}

/* A request's result, read from the message it came in. */
static void request_answered(lsp_request *r, const json_doc *doc, json_ref result)
{
    arena strings;
    arena_init(&strings);
    converter c = {.svc = r->svc, .doc = doc, .from = r->server->enc, .to = r->enc, .strings = &strings};
    buf_init(&c.line);
    buf scratch;
    buf_init(&scratch);
    lsp_location *locations = NULL;
    lsp_result out = {.json = "null", .len = 4};
    json_type type = json_type_of(doc, result);
    if (r->kind == LSP_RESULT_ITEMS && type == JSON_OBJECT) {
        result = json_get(doc, result, "items");
        type = json_type_of(doc, result) == JSON_ARRAY ? JSON_ARRAY : JSON_NULL;
    }
    out.is_null = type == JSON_NULL || type == JSON_ABSENT;
    if (out.is_null) {
        /* nothing to read */
    } else if (r->kind == LSP_RESULT_LOCATIONS) {
        out.json = NULL;
        out.len = 0;
        size_t n = type == JSON_ARRAY ? json_length(doc, result) : type == JSON_OBJECT;
        locations = xcalloc(n ? n : 1, sizeof *locations);
        if (type == JSON_ARRAY)
            for (json_ref e = json_first(doc, result); e != JSON_NO_REF; e = json_next(doc, e))
                location_of(&c, e, &locations[out.location_count++]);
        else if (type == JSON_OBJECT)
            location_of(&c, result, &locations[out.location_count++]);
        out.locations = locations;
    } else {
        value_text(&c, result, r->uri, &scratch, &out);
    }
    lsp_request_finish(r, 0, NULL, &out);
    free(locations);
    buf_free(&scratch);
    buf_free(&c.line);
    arena_free(&strings);
}

void lsp_request_answer_in(lsp_request *r, const json_doc *doc, json_ref result, json_ref error)
{
    lsp_server *s = r->server;
    if (error != JSON_NO_REF) {
        arena a;
        arena_init(&a);
        const char *msg = NULL;
        size_t len;
        int64_t code = 0;
        json_int64(doc, json_get(doc, error, "code"), &code);
        ecp_error err;
        if (!json_string(doc, json_get(doc, error, "message"), &a, &msg, &len))
            msg = "no message";
        /* MethodNotFound: the server does not do this at all, which is not a failure of this request */
        int status = code == -32601 ? ECP_ENOTSUP : ECP_EIO;
        if (status == ECP_ENOTSUP)
            ecp_error_set(&err, status, "The %s server does not support %s: %s", s->language_id, r->method, msg);
        else
            ecp_error_set(&err, status, "The %s server failed %s: %s (%lld)", s->language_id, r->method, msg,
                          (long long)code);
        arena_free(&a);
        lsp_request_finish(r, status, &err, NULL);
        return;
    }
    request_answered(r, doc, result);
}

/* ----- requests ------------------------------------------------------------------------------- */

lsp_request *lsp_request_send(lsp_service *self, const char *uri, const char *method, const char *params,
                              lsp_result_kind kind, ecp_position_encoding enc, lsp_result_cb cb, void *ctx)
{
    ecp_error err = {0};
    lsp_doc *d = lsp_doc_find(self, uri);
    lsp_server *s = d ? lsp_server_find(self, d->language_id) : NULL;
    if (!s || s->status == LSP_STOPPED) {
        ecp_error_set(&err, ECP_ENOTFOUND, "No language server has %s open", uri);
        cb(ctx, ECP_ENOTFOUND, &err, NULL);
        return NULL;
    }
    if (s->status == LSP_ERROR) {
        ecp_error_set(&err, ECP_ESTATE, "The %s server is not running: %s", s->language_id,
                      s->error ? s->error : "it failed");
        cb(ctx, ECP_ESTATE, &err, NULL);
        return NULL;
    }
    lsp_request *r = lsp_server_request(s, method, params, cb, ctx);
    r->kind = kind;
    r->enc = enc;
    r->uri = xstrdup(uri);
    return r;
}

void lsp_request_cancel(lsp_service *self, lsp_request *req)
{
    (void)self;
    lsp_request_withdraw(req);
}

