/* Diagnostics: what each server last published for each document, kept as
 * plain structs so that reading them (a viewport, a summary, a
 * notification) never parses JSON. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "utf.h"

/* A member of a Diagnostic that has no field of its own (relatedInformation,
 * tags, data, codeDescription, or a known one of an unexpected type), as the
 * server sent it, written again so that it is valid UTF-8. */
typedef struct lsp_diag_member {
    char *key;
    char *json;
    size_t json_len;
} lsp_diag_member;

struct lsp_diag {
    bool has_range, has_severity;
    size_t start_line, start_character, end_line, end_character; /* in the server's encoding */
    int severity;
    char *code;    /* JSON text of the code (a number or a string), or NULL */
    char *source;  /* NULL when absent */
    char *message; /* NULL when absent */
    size_t message_len, source_len;
    lsp_diag_member *members;
    size_t member_count;
    char *element; /* an element of the array that is not an object, as JSON text; then nothing else is set */
};

static void diag_free_items(lsp_diag *items, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        lsp_diag *d = &items[i];
        free(d->code);
        free(d->source);
        free(d->message);
        free(d->element);
        for (size_t m = 0; m < d->member_count; m++) {
            free(d->members[m].key);
            free(d->members[m].json);
        }
        free(d->members);
    }
    free(items);
}

/* Text with every invalid UTF-8 sequence replaced by U+FFFD, as the JSON writer would write it. */
static void utf8_sanitize_into(buf *out, const char *s, size_t len)
{
    if (utf8_is_valid(s, len)) {
        buf_append(out, s, len);
        return;
    }
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        char enc[4];
        buf_append(out, enc, utf8_encode(cp, enc));
        i += n ? n : 1;
    }
}

static char *value_json(const json_doc *doc, json_ref ref, size_t *len)
{
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    json_write_value(&w, doc, ref);
    *len = out.len;
    return buf_detach(&out);
}

static bool position_of(const json_doc *doc, json_ref pos, size_t *line, size_t *character)
{
    int64_t l, c;
    if (json_length(doc, pos) != 2 || !json_int64(doc, json_get(doc, pos, "line"), &l) || !json_int64(doc, json_get(doc, pos, "character"), &c) ||
        l < 0 || c < 0)
        return false;
    *line = (size_t)l;
    *character = (size_t)c;
    return true;
}

static bool string_member(const json_doc *doc, json_ref ref, char **out, size_t *out_len)
{
    if (json_type_of(doc, ref) != JSON_STRING)
        return false;
    arena a;
    arena_init(&a);
    const char *s;
    size_t len;
    bool ok = json_string(doc, ref, &a, &s, &len);
    if (ok) {
        /* what reaches clients is valid UTF-8 whatever the server sent */
        buf clean = BUF_INIT;
        utf8_sanitize_into(&clean, s, len);
        *out_len = clean.len;
        *out = clean.data ? buf_detach(&clean) : xstrdup("");
    }
    arena_free(&a);
    return ok;
}

static void diag_read(const json_doc *doc, json_ref obj, lsp_diag *out)
{
    if (json_type_of(doc, obj) != JSON_OBJECT) {
        size_t len;
        out->element = value_json(doc, obj, &len);
        return;
    }
    size_t cap = json_length(doc, obj);
    out->members = xcalloc(cap ? cap : 1, sizeof *out->members);
    for (json_ref k = json_first(doc, obj); k != JSON_NO_REF; k = json_next(doc, k)) {
        json_ref v = k + 1;
        int64_t severity;
        if (json_string_eq(doc, k, "range") && !out->has_range &&
            position_of(doc, json_get(doc, v, "start"), &out->start_line, &out->start_character) &&
            position_of(doc, json_get(doc, v, "end"), &out->end_line, &out->end_character) && json_length(doc, v) == 2) {
            out->has_range = true;
        } else if (json_string_eq(doc, k, "severity") && !out->has_severity && json_int64(doc, v, &severity) &&
                   severity >= INT32_MIN && severity <= INT32_MAX) {
            out->has_severity = true;
            out->severity = (int)severity;
        } else if (json_string_eq(doc, k, "code") && !out->code &&
                   (json_type_of(doc, v) == JSON_STRING || json_type_of(doc, v) == JSON_NUMBER)) {
            size_t len;
            out->code = value_json(doc, v, &len);
        } else if (json_string_eq(doc, k, "source") && !out->source &&
                   string_member(doc, v, &out->source, &out->source_len)) {
        } else if (json_string_eq(doc, k, "message") && !out->message &&
                   string_member(doc, v, &out->message, &out->message_len)) {
        } else {
            arena a;
            arena_init(&a);
            const char *key;
            size_t key_len;
            if (json_string(doc, k, &a, &key, &key_len)) {
                lsp_diag_member *m = &out->members[out->member_count++];
                buf clean = BUF_INIT;
                utf8_sanitize_into(&clean, key, key_len);
                m->key = clean.data ? buf_detach(&clean) : xstrdup("");
                m->json = value_json(doc, v, &m->json_len);
            }
            arena_free(&a);
        }
    }
}

/* One Diagnostic as JSON, its positions counted in enc. */
static void diag_write(lsp_service *self, const char *uri, const lsp_diag *d, ecp_position_encoding from,
                       ecp_position_encoding to, json_writer *w)
{
    if (d->element) {
        jw_raw(w, d->element, strlen(d->element));
        return;
    }
    jw_object_begin(w);
    if (d->has_range) {
        jw_key(w, "range");
        jw_object_begin(w);
        jw_key(w, "start");
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)d->start_line);
        jw_key_int(w, "character", (int64_t)lsp_column_convert(self, uri, d->start_line, d->start_character, from, to));
        jw_object_end(w);
        jw_key(w, "end");
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)d->end_line);
        jw_key_int(w, "character", (int64_t)lsp_column_convert(self, uri, d->end_line, d->end_character, from, to));
        jw_object_end(w);
        jw_object_end(w);
    }
    if (d->has_severity)
        jw_key_int(w, "severity", d->severity);
    if (d->code) {
        jw_key(w, "code");
        jw_raw(w, d->code, strlen(d->code));
    }
    if (d->source)
        jw_key_string_n(w, "source", d->source, d->source_len);
    if (d->message)
        jw_key_string_n(w, "message", d->message, d->message_len);
    for (size_t i = 0; i < d->member_count; i++) {
        const lsp_diag_member *m = &d->members[i];
        jw_key(w, m->key);
        char *converted = NULL;
        size_t len = m->json_len;
        /* relatedInformation and the like carry positions of their own */
        if (from != to && memchr(m->json, '{', m->json_len))
            converted = lsp_json_convert(self, uri, m->json, m->json_len, from, to, &len);
        jw_raw(w, converted ? converted : m->json, converted ? len : m->json_len);
        free(converted);
    }
    jw_object_end(w);
}

static lsp_diag_entry *diag_find(lsp_service *self, const char *uri)
{
    char *want = lsp_doc_uri(uri);
    lsp_diag_entry *e = ecp_map_get(self->diags, want);
    free(want);
    return e;
}

static void diag_entry_free(lsp_diag_entry *e)
{
    free(e->uri);
    diag_free_items(e->items, e->count);
    free(e->language_id);
    free(e);
}

void lsp_diag_publish(lsp_service *self, const lsp_server *from, const char *uri, const json_doc *doc,
                      json_ref diagnostics)
{
    size_t n = json_length(doc, diagnostics);
    lsp_diag *items = xcalloc(n ? n : 1, sizeof *items);
    size_t count = 0;
    for (json_ref e = json_first(doc, diagnostics); e != JSON_NO_REF && count < n; e = json_next(doc, e))
        diag_read(doc, e, &items[count++]);
    char *want = lsp_doc_uri(uri);
    lsp_diag_entry *e = ecp_map_get(self->diags, want);
    if (!e) {
        e = xcalloc(1, sizeof *e);
        e->uri = want;
        want = NULL;
        ecp_map_set(self->diags, e->uri, e, NULL);
    }
    free(want);
    diag_free_items(e->items, e->count);
    free(e->language_id);
    e->items = items;
    e->count = count;
    e->language_id = xstrdup(from->language_id);
    e->enc = from->enc;
    ECP_EMIT(&self->listeners, lsp_listener, on_diagnostics, uri);
}

void lsp_diag_free_all(lsp_service *self)
{
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    while (ecp_map_next(self->diags, &it, NULL, NULL))
        diag_entry_free(ecp_map_iter_remove(self->diags, &it));
    ecp_map_free(self->diags);
    self->diags = NULL;
}

void lsp_diag_clear(lsp_service *self, const char *uri)
{
    char *want = lsp_doc_uri(uri);
    void *e;
    if (ecp_map_remove(self->diags, want, &e))
        diag_entry_free(e);
    free(want);
}

/* A server that stops or dies takes its diagnostics with it: they describe
 * what it last saw, and a restarted server publishes them anew. Clients hear
 * an empty list for each file, as LSP clients clear a stopped server's. */
void lsp_diag_clear_server(lsp_service *self, const char *language_id)
{
    for (;;) {
        /* from the start each time: a listener may have published meanwhile */
        ecp_map_iter it = ECP_MAP_ITER_INIT;
        lsp_diag_entry *e = NULL;
        for (void *v; !e && ecp_map_next(self->diags, &it, NULL, &v);)
            if (strcmp(((lsp_diag_entry *)v)->language_id, language_id) == 0)
                e = v;
        if (!e)
            return;
        char *uri = xstrdup(e->uri);
        diag_entry_free(ecp_map_iter_remove(self->diags, &it));
        ECP_EMIT(&self->listeners, lsp_listener, on_diagnostics, uri);
        free(uri);
    }
}

char *lsp_diagnostics_get(lsp_service *self, const char *uri, ecp_position_encoding enc)
{
    lsp_diag_entry *e = diag_find(self, uri);
    buf out = BUF_INIT;
    json_writer w;
    jw_init(&w, &out);
    jw_array_begin(&w);
    for (size_t i = 0; e && i < e->count; i++)
        diag_write(self, uri, &e->items[i], e->enc, enc, &w);
    jw_array_end(&w);
    return buf_detach(&out);
}

void lsp_diagnostics_each(lsp_service *self, void (*fn)(void *ctx, const char *uri), void *ctx)
{
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    const char *uri;
    while (ecp_map_next(self->diags, &it, &uri, NULL))
        fn(ctx, uri);
}

size_t lsp_json_size(const json_doc *doc, json_ref ref)
{
    int64_t v = 0;
    return json_int64(doc, ref, &v) && v > 0 ? (size_t)v : 0;
}

size_t lsp_diagnostics_in_lines(lsp_service *self, const char *uri, size_t first_line, size_t last_line,
                                ecp_position_encoding enc, void (*fn)(void *ctx, const lsp_diagnostic *diagnostic),
                                void *ctx)
{
    lsp_diag_entry *e = diag_find(self, uri);
    size_t found = 0;
    buf json = BUF_INIT;
    for (size_t i = 0; e && i < e->count; i++) {
        const lsp_diag *d = &e->items[i];
        /* a diagnostic without a range is at the start of the document */
        size_t start_line = d->has_range ? d->start_line : 0, end_line = d->has_range ? d->end_line : 0;
        if (end_line < first_line || start_line > last_line)
            continue;
        found++;
        if (!fn)
            continue;
        buf_clear(&json);
        json_writer w;
        jw_init(&w, &json);
        diag_write(self, uri, d, e->enc, enc, &w);
        lsp_diagnostic out = {
            .start_line = start_line,
            .start_column = d->has_range ? lsp_column_convert(self, uri, d->start_line, d->start_character, e->enc, enc) : 0,
            .end_line = end_line,
            .end_column = d->has_range ? lsp_column_convert(self, uri, d->end_line, d->end_character, e->enc, enc) : 0,
            .severity = d->has_severity && d->severity > 0 ? d->severity : 0,
            .message = d->message ? d->message : "",
            .source = d->source,
            .json = json.data,
            .json_len = json.len,
        };
        fn(ctx, &out);
    }
    buf_free(&json);
    return found;
}

void lsp_diagnostics_summary(lsp_service *self, size_t *errors, size_t *warnings)
{
    *errors = *warnings = 0;
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    void *v;
    while (ecp_map_next(self->diags, &it, NULL, &v)) {
        const lsp_diag_entry *e = v;
        for (size_t i = 0; i < e->count; i++) {
            const lsp_diag *d = &e->items[i];
            *errors += d->has_severity && d->severity == 1;
            *warnings += d->has_severity && d->severity == 2;
        }
    }
}
