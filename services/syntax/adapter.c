/* adapter: the syntax service's JSON-RPC methods (the `syntax` namespace).
 *
 * Params in, the service's calls, results out. Highlighting a text
 * (highlight, highlightLine, createSession, updateSession) is a job of the
 * service that serves the call, and highlight's answer, which may hold
 * hundreds of thousands of tokens, is written by that job on the pool; the
 * rest answers on the loop from what the service holds. Tokens are written as {start, end, scope, color?} in the
 * connection's position encoding, here and in document/viewport's `tokens`.
 */
#include "adapter.h"
#include "interface.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "buf.h"
#include "json_writer.h"
#include "rpc.h"
#include "session/interface.h"

typedef struct syntax_adapter {
    syntax_service *svc;
    ecp_bus *bus;
} syntax_adapter;

/* ----- writing tokens ------------------------------------------------------------------------ */

/* An answer holds a token for every word of a file (380,000 for 2.7 MB of
 * C), and they name few scopes and colours: the part of a token's object
 * after its numbers, `,"scope":"…","color":"…"}`, is escaped once per scope
 * and colour of an answer and copied after that. The names are keyed by
 * their pointers, which stay valid while the answer is written (the
 * query's capture names, the themes' colours: static data). */
#define TAIL_SLOTS 512 /* a power of two; past three quarters full, tokens are written plainly */

typedef struct token_tail {
    const char *scope, *color; /* scope NULL: a free slot */
    size_t at, len;            /* in token_tails.text */
} token_tail;

typedef struct token_tails {
    token_tail slots[TAIL_SLOTS];
    size_t used;
    buf text;
} token_tails;

static void token_tails_init(token_tails *tails)
{
    memset(tails->slots, 0, sizeof tails->slots);
    tails->used = 0;
    buf_init(&tails->text);
}

/* The tail of a token of scope and color, NULL when the table is full. */
static const token_tail *token_tail_of(token_tails *tails, const char *scope, const char *color)
{
    size_t h = ((uintptr_t)scope >> 3) * 31u + ((uintptr_t)color >> 3);
    for (size_t i = h & (TAIL_SLOTS - 1);; i = (i + 1) & (TAIL_SLOTS - 1)) {
        token_tail *t = &tails->slots[i];
        if (t->scope == scope && t->color == color)
            return t;
        if (t->scope)
            continue;
        if (tails->used >= TAIL_SLOTS / 4 * 3)
            return NULL;
        tails->used++;
        t->scope = scope;
        t->color = color;
        t->at = tails->text.len;
        buf_append_str(&tails->text, ",\"scope\":\"");
        json_escape_into(&tails->text, scope, strlen(scope));
        if (color) {
            buf_append_str(&tails->text, "\",\"color\":\"");
            json_escape_into(&tails->text, color, strlen(color));
        }
        buf_append_str(&tails->text, "\"}");
        t->len = tails->text.len - t->at;
        return t;
    }
}

/* Writes v's digits ending at end; returns where they start. */
static char *digits_before(char *end, size_t v)
{
    do {
        *--end = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    return end;
}

static void write_token(json_writer *w, token_tails *tails, const syntax_token *t)
{
    const token_tail *tail = t->scope ? token_tail_of(tails, t->scope, t->color) : NULL;
    if (!tail) {
        jw_object_begin(w);
        jw_key_int(w, "start", (int64_t)t->start);
        jw_key_int(w, "end", (int64_t)t->end);
        jw_key_string(w, "scope", t->scope);
        if (t->color)
            jw_key_string(w, "color", t->color);
        jw_object_end(w);
        return;
    }
    /* {"start":<start>,"end":<end> then the tail, built from its end */
    char head[64], *end = head + sizeof head, *p = digits_before(end, t->end);
    static const char start_key[] = "{\"start\":", end_key[] = ",\"end\":";
    p -= sizeof end_key - 1;
    memcpy(p, end_key, sizeof end_key - 1);
    p = digits_before(p, t->start);
    p -= sizeof start_key - 1;
    memcpy(p, start_key, sizeof start_key - 1);
    jw_raw(w, p, (size_t)(end - p));
    buf_append(w->out, tails->text.data + tail->at, tail->len);
}

static void write_line(json_writer *w, token_tails *tails, const syntax_line *line)
{
    jw_array_begin(w);
    for (size_t i = 0; i < line->count; i++)
        write_token(w, tails, &line->tokens[i]);
    jw_array_end(w);
}

static token_tails *token_tails_new(void)
{
    token_tails *tails = xmalloc(sizeof *tails);
    token_tails_init(tails);
    return tails;
}

static void token_tails_free(token_tails *tails)
{
    buf_free(&tails->text);
    free(tails);
}

/* A highlighted text's lines, from a session's (the loop's colours, the
 * current theme) or a highlight's result (its own colours, in its format
 * on the pool or its callback). */
typedef struct text_lines {
    syntax_service *svc;
    const syntax_text *session_text;
    const syntax_highlight_result *highlight;
} text_lines;

static size_t text_line_count(const text_lines *t)
{
    return syntax_text_line_count(t->highlight ? t->highlight->text : t->session_text);
}

static void write_text_line(json_writer *w, token_tails *tails, const text_lines *t, size_t line,
                            ecp_position_encoding enc)
{
    syntax_line out;
    if (t->highlight)
        syntax_highlight_line_tokens(t->highlight, line, enc, &out);
    else
        syntax_text_line_tokens(t->svc, t->session_text, line, enc, &out);
    write_line(w, tails, &out);
    free(out.tokens);
}

static void write_text_lines(json_writer *w, const text_lines *t, ecp_position_encoding enc)
{
    token_tails *tails = token_tails_new();
    jw_array_begin(w);
    for (size_t i = 0, n = text_line_count(t); i < n; i++)
        write_text_line(w, tails, t, i, enc);
    jw_array_end(w);
    token_tails_free(tails);
}

/* One line as a separate answer. */
static void write_one_text_line(json_writer *w, const text_lines *t, size_t line, ecp_position_encoding enc)
{
    token_tails *tails = token_tails_new();
    write_text_line(w, tails, t, line, enc);
    token_tails_free(tails);
}

static void write_lines(json_writer *w, const syntax_line *lines, size_t count)
{
    token_tails *tails = token_tails_new();
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++)
        write_line(w, tails, &lines[i]);
    jw_array_end(w);
    token_tails_free(tails);
}

/* ----- errors ------------------------------------------------------------------------------------ */

/* The service's statuses as wire codes. What was not found decides the code
 * of ECP_ENOTFOUND, so that one is the caller's: a document (-32001) or a
 * session (-32503); an unknown theme carries data and is answered where it
 * is asked. */
static const ecp_wire_map wire_codes[] = {
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
};

static void reply_error(ecp_call *call, int status, const ecp_error *err, int not_found)
{
    int code = status == ECP_ENOTFOUND ? not_found
                                       : ecp_wire_code(wire_codes, sizeof wire_codes / sizeof wire_codes[0],
                                                       status, ECP_WIRE_INTERNAL_ERROR);
    ecp_call_error(call, code, "%s", err && err->message[0] ? err->message : ecp_status_text(status));
}

/* ----- themes -------------------------------------------------------------------------------------- */

static void theme_not_found(ecp_call *call, const char *theme)
{
    ecp_call_error_keyed(call, ECP_WIRE_SYNTAX_THEME_NOT_FOUND, "themeId", theme, "Theme not found: %s", theme);
}

/* Makes the optional `theme` param current; false when it answered an error. */
static bool apply_theme(syntax_adapter *ad, ecp_call *call, const ecp_str *theme)
{
    if (!theme->ptr)
        return true;
    if (syntax_theme_set(ad->svc, theme->ptr, NULL) < 0) {
        theme_not_found(call, theme->ptr);
        return false;
    }
    return true;
}

/* ----- highlighting texts -------------------------------------------------------------------------- */

/* What a job's callback (and a highlight's format) needs to answer: in
 * the call's arena, so that it goes with the call if the service is freed
 * first (the job set answers the call then). The service, not the adapter:
 * at teardown the adapter goes first. */
typedef struct pending {
    syntax_service *svc;
    ecp_call *call;
    ecp_position_encoding enc; /* read on the pool by a format */
    size_t line;               /* highlightLine's */
} pending;

static pending *pending_new(syntax_adapter *ad, ecp_call *call)
{
    pending *p = arena_calloc(ecp_call_arena(call), sizeof *p);
    p->svc = ad->svc;
    p->call = call;
    p->enc = ecp_call_encoding(call);
    return p;
}

/* On the pool: a highlight's whole answer, so that the tokens of a big
 * text are not written on the loop. */
static void format_highlight(void *fctx, const syntax_highlight_result *r, buf *out)
{
    const pending *p = fctx;
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key(&w, "lines");
    write_text_lines(&w, &(text_lines){.highlight = r}, p->enc);
    jw_key_string(&w, "languageId", r->language_id);
    jw_key_double(&w, "timing", r->parse_ms);
    jw_object_end(&w);
}

static void highlighted(void *ctx, int status, const ecp_error *err, const syntax_highlight_result *r,
                        ecp_shared *answer)
{
    (void)r;
    pending *p = ctx;
    if (status < 0)
        reply_error(p->call, status, err, ECP_WIRE_INTERNAL_ERROR);
    else
        ecp_call_reply_shared(p->call, answer);
}

static void plaintext_answer(ecp_call *call)
{
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "lines");
    jw_array_begin(w);
    jw_array_end(w);
    jw_key_string(w, "languageId", "plaintext");
    jw_key_int(w, "timing", 0);
    ecp_call_finish_object(call, w);
}

static void m_highlight(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str content = {0}, language = {0}, theme = {0};
    if (!ecp_arg_string(call, p, "languageId", &language) || !ecp_arg_string_opt(call, p, "content", &content) ||
        !ecp_arg_string_opt(call, p, "theme", &theme))
        return;
    if (!apply_theme(ad, call, &theme))
        return;
    if (!syntax_language_supported(ad->svc, language.ptr)) {
        plaintext_answer(call);
        return;
    }
    pending *reply = pending_new(ad, call);
    syntax_highlight_args args = {language.ptr, content.ptr, content.len, call, format_highlight, reply};
    syntax_highlight_start(ad->svc, &args, highlighted, reply);
}

static void highlighted_line(void *ctx, int status, const ecp_error *err, const syntax_highlight_result *r,
                             ecp_shared *answer)
{
    (void)answer;
    pending *p = ctx;
    if (status < 0) {
        reply_error(p->call, status, err, ECP_WIRE_INTERNAL_ERROR);
        return;
    }
    json_writer *w = ecp_call_result_key(p->call, "tokens");
    write_one_text_line(w, &(text_lines){.highlight = r}, p->line, p->enc);
    ecp_call_finish_key(p->call, w);
}

static void m_highlight_line(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str content = {0}, language = {0}, theme = {0};
    size_t line;
    if (!ecp_arg_string(call, p, "content", &content) || !ecp_arg_string(call, p, "languageId", &language) ||
        !ecp_arg_index(call, p, "lineNumber", &line) || !ecp_arg_string_opt(call, p, "theme", &theme))
        return;
    if (!apply_theme(ad, call, &theme))
        return;
    pending *reply = pending_new(ad, call);
    reply->line = line;
    syntax_highlight_args args = {language.ptr, content.ptr, content.len, call, NULL, NULL};
    syntax_highlight_start(ad->svc, &args, highlighted_line, reply);
}

/* ----- sessions ---------------------------------------------------------------------------------- */

static void write_session(json_writer *w, const syntax_session_info *s)
{
    jw_object_begin(w);
    jw_key_string(w, "sessionId", s->session_id);
    jw_key_string(w, "documentId", s->document_id);
    jw_key_string(w, "languageId", s->language_id);
    jw_key_int(w, "version", (int64_t)s->version);
    jw_object_end(w);
}

static void session_created(void *ctx, int status, const ecp_error *err, const syntax_session_info *s)
{
    pending *p = ctx;
    if (status < 0) {
        reply_error(p->call, status, err, ECP_WIRE_SYNTAX_SESSION_NOT_FOUND);
        return;
    }
    json_writer *w = ecp_call_result_key(p->call, "session");
    write_session(w, s);
    ecp_call_finish_key(p->call, w);
}

static void m_create_session(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str doc = {0}, language = {0}, content = {0};
    if (!ecp_arg_string(call, p, "documentId", &doc) || !ecp_arg_string(call, p, "languageId", &language) ||
        !ecp_arg_string(call, p, "content", &content))
        return;
    syntax_session_create_args args = {doc.ptr, language.ptr, content.ptr, content.len, call};
    syntax_session_create_start(ad->svc, &args, session_created, pending_new(ad, call));
}

static void session_updated(void *ctx, int status, const ecp_error *err, const syntax_session_info *s)
{
    (void)s;
    pending *p = ctx;
    if (status < 0)
        reply_error(p->call, status, err, ECP_WIRE_SYNTAX_SESSION_NOT_FOUND);
    else
        ecp_call_reply_success(p->call, true);
}

static void m_update_session(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id = {0}, content = {0};
    if (!ecp_arg_string(call, p, "sessionId", &id) || !ecp_arg_string(call, p, "content", &content))
        return;
    syntax_session_info info;
    ecp_error err = {0};
    int status = syntax_session_get(ad->svc, id.ptr, &info, &err);
    if (status < 0) { /* answered at once: nothing to parse */
        reply_error(call, status, &err, ECP_WIRE_SYNTAX_SESSION_NOT_FOUND);
        return;
    }
    syntax_session_update_args args = {id.ptr, content.ptr, content.len, call};
    syntax_session_update_start(ad->svc, &args, session_updated, pending_new(ad, call));
}

static void m_get_session_tokens(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id = {0};
    size_t line;
    if (!ecp_arg_string(call, p, "sessionId", &id) || !ecp_arg_index(call, p, "lineNumber", &line))
        return;
    const syntax_text *t = syntax_session_read(ad->svc, id.ptr);
    json_writer *w = ecp_call_result_key(call, "tokens");
    write_one_text_line(w, &(text_lines){.svc = ad->svc, .session_text = t}, line, ecp_call_encoding(call));
    ecp_call_finish_key(call, w);
}

static void m_get_session_all_tokens(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (!ecp_arg_string(call, ecp_call_params(call), "sessionId", &id))
        return;
    const syntax_text *t = syntax_session_read(ad->svc, id.ptr);
    json_writer *w = ecp_call_result_key(call, "lines");
    write_text_lines(w, &(text_lines){.svc = ad->svc, .session_text = t}, ecp_call_encoding(call));
    ecp_call_finish_key(call, w);
}

static void m_dispose_session(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (!ecp_arg_string(call, ecp_call_params(call), "sessionId", &id))
        return;
    syntax_session_dispose(ad->svc, id.ptr);
    ecp_call_reply_success(call, true);
}

static void m_get_session(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (!ecp_arg_string(call, ecp_call_params(call), "sessionId", &id))
        return;
    syntax_session_info info;
    bool found = syntax_session_get(ad->svc, id.ptr, &info, NULL) == 0;
    json_writer *w = ecp_call_result_key(call, "session");
    if (found)
        write_session(w, &info);
    else
        jw_null(w);
    ecp_call_finish_key(call, w);
}

/* ----- documents (extension) ------------------------------------------------------------------- */

static void m_document_tokens(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id = {0};
    size_t start, end;
    if (!ecp_arg_string(call, p, "documentId", &id) || !ecp_arg_index(call, p, "startLine", &start) ||
        !ecp_arg_index(call, p, "endLine", &end))
        return;
    if (end < start) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "endLine: before startLine");
        return;
    }
    syntax_line *lines;
    size_t count;
    ecp_error err = {0};
    int status = syntax_document_tokens(ad->svc, id.ptr, start, end - start + 1, ecp_call_encoding(call), &lines,
                                        &count, &err);
    if (status < 0) {
        reply_error(call, status, &err, ECP_WIRE_DOCUMENT_NOT_FOUND);
        return;
    }
    json_writer *w = ecp_call_result_object(call);
    jw_key(w, "lines");
    write_lines(w, lines, count);
    jw_key_bool(w, "settled", syntax_document_settled(ad->svc, id.ptr));
    ecp_call_finish_object(call, w);
    syntax_lines_free(lines, count);
}

void syntax_adapter_write_viewport_tokens(void *svc, const char *document_id, const char *uri, size_t first,
                                          size_t last, ecp_position_encoding enc, json_writer *w)
{
    (void)uri;
    syntax_line *lines = NULL;
    size_t count = 0;
    if (syntax_document_tokens(svc, document_id, first, last - first, enc, &lines, &count, NULL) != 0)
        count = 0; /* a document syntax does not follow: no tokens */
    token_tails *tails = token_tails_new();
    static const syntax_line none = {NULL, 0};
    jw_array_begin(w);
    for (size_t i = 0; i < last - first; i++)
        write_line(w, tails, i < count ? &lines[i] : &none);
    jw_array_end(w);
    token_tails_free(tails);
    syntax_lines_free(lines, count);
}

/* ----- structure (extension) ------------------------------------------------------------------ */

/* A structure method's failure: an unknown document (-32001), a position
 * past the end (-32003, as the document methods answer it), too many
 * positions (-32602). */
static void reply_structure_error(ecp_call *call, int status, const ecp_error *err)
{
    if (status == ECP_ERANGE)
        ecp_call_error(call, ECP_WIRE_INVALID_POSITION, "%s", err->message[0] ? err->message : "Invalid position");
    else
        reply_error(call, status, err, ECP_WIRE_DOCUMENT_NOT_FOUND);
}

/* A structure job's answer begun: the list under key to write the items in
 * (then ecp_call_finish_list), or NULL when the failure was answered. */
static json_writer *structure_list(const pending *p, int status, const ecp_error *err, const char *key)
{
    if (status < 0) {
        reply_structure_error(p->call, status, err);
        return NULL;
    }
    return ecp_call_result_list(p->call, key);
}

/* folding ranges and symbols: the documentId they read; false when the call was answered. */
static bool arg_document_id(ecp_call *call, ecp_str *id)
{
    return ecp_arg_string(call, ecp_call_params(call), "documentId", id);
}

static void folds_answered(void *ctx, int status, const ecp_error *err, const syntax_structure *r)
{
    pending *p = ctx;
    json_writer *w = structure_list(p, status, err, "ranges");
    if (!w)
        return;
    for (size_t i = 0; i < r->fold_count; i++) {
        jw_object_begin(w);
        jw_key_int(w, "startLine", (int64_t)r->folds[i].start_line);
        jw_key_int(w, "endLine", (int64_t)r->folds[i].end_line);
        if (r->folds[i].comment)
            jw_key_string(w, "kind", "comment");
        jw_object_end(w);
    }
    ecp_call_finish_list(p->call, w);
}

static void m_folding_ranges(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (arg_document_id(call, &id))
        syntax_document_folds_start(ad->svc, id.ptr, call, folds_answered, pending_new(ad, call));
}

static void write_range(json_writer *w, const char *key, const syntax_range *r)
{
    jw_key(w, key);
    jw_object_begin(w);
    jw_key_position(w, "start", r->start.line, r->start.column);
    jw_key_position(w, "end", r->end.line, r->end.column);
    jw_object_end(w);
}

static void selections_answered(void *ctx, int status, const ecp_error *err, const syntax_structure *r)
{
    pending *p = ctx;
    json_writer *w = structure_list(p, status, err, "ranges");
    if (!w)
        return;
    for (size_t s = 0; s < r->selection_count; s++) {
        /* {range, parent: {range, parent: ...}}, innermost first, written
         * in one pass and closed in another */
        const syntax_selection *sel = &r->selections[s];
        for (size_t i = 0; i < sel->count; i++) {
            if (i)
                jw_key(w, "parent");
            jw_object_begin(w);
            write_range(w, "range", &sel->ranges[i]);
        }
        for (size_t i = 0; i < sel->count; i++)
            jw_object_end(w);
    }
    ecp_call_finish_list(p->call, w);
}

static void m_selection_ranges(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id = {0};
    json_ref list;
    if (!ecp_arg_string(call, p, "documentId", &id) || !ecp_arg_array(call, p, "positions", &list))
        return;
    const json_doc *doc = ecp_call_doc(call);
    size_t count = json_length(doc, list);
    if (count > SYNTAX_MAX_SELECTION_POSITIONS) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "positions: at most %d, got %zu",
                       SYNTAX_MAX_SELECTION_POSITIONS, count);
        return;
    }
    syntax_position *positions = arena_calloc(ecp_call_arena(call), (count ? count : 1) * sizeof *positions);
    size_t i = 0;
    for (json_ref e = json_first(doc, list); e != JSON_NO_REF; e = json_next(doc, e), i++)
        if (!ecp_arg_index(call, e, "positions[].line", &positions[i].line) ||
            !ecp_arg_index(call, e, "positions[].column", &positions[i].column))
            return;
    syntax_document_selection_ranges_start(ad->svc, id.ptr, positions, count, ecp_call_encoding(call), call,
                                           selections_answered, pending_new(ad, call));
}

static void m_indent(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str id = {0};
    size_t line;
    if (!ecp_arg_string(call, p, "documentId", &id) || !ecp_arg_index(call, p, "line", &line))
        return;
    char *indent;
    ecp_error err = {0};
    int status = syntax_document_indent(ad->svc, id.ptr, line, &indent, &err);
    if (status < 0) {
        reply_structure_error(call, status, &err);
        return;
    }
    ecp_call_reply_string(call, "indent", indent);
    free(indent);
}

static void write_symbol_fields(json_writer *w, const syntax_symbol *s)
{
    jw_key_string(w, "name", s->name);
    jw_key_string(w, "detail", s->tag);
    jw_key_int(w, "kind", s->kind);
    write_range(w, "range", &s->range);
    write_range(w, "selectionRange", &s->selection_range);
}

static void symbols_answered(void *ctx, int status, const ecp_error *err, const syntax_structure *r)
{
    pending *p = ctx;
    json_writer *w = structure_list(p, status, err, "symbols");
    if (!w)
        return;
    const syntax_symbol *symbols = r->symbols;
    size_t count = r->symbol_count;
    /* Each symbol comes after its parent: the open ones are a stack, as
     * deep as the service nests them. */
    size_t open[SYNTAX_MAX_SYMBOL_DEPTH], depth = 0;
    for (size_t i = 0; i < count; i++) {
        while (depth && open[depth - 1] != symbols[i].parent) {
            jw_array_end(w);
            jw_object_end(w);
            depth--;
        }
        jw_object_begin(w);
        write_symbol_fields(w, &symbols[i]);
        if (i + 1 < count && symbols[i + 1].parent == i && depth < SYNTAX_MAX_SYMBOL_DEPTH) {
            jw_key(w, "children");
            jw_array_begin(w);
            open[depth++] = i;
        } else {
            jw_object_end(w);
        }
    }
    while (depth--) {
        jw_array_end(w);
        jw_object_end(w);
    }
    ecp_call_finish_list(p->call, w);
}

static void m_symbols(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (arg_document_id(call, &id))
        syntax_document_symbols_start(ad->svc, id.ptr, ecp_call_encoding(call), call, symbols_answered,
                                      pending_new(ad, call));
}

/* ----- languages, themes, metrics --------------------------------------------------------------- */

static void add_language(void *ctx, const char *id) { jw_string(ctx, id); }

static void m_languages(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    json_writer *w = ecp_call_result_list(call, "languages");
    syntax_languages(ad->svc, add_language, w);
    ecp_call_finish_list(call, w);
}

static void m_is_supported(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str id = {0};
    if (ecp_arg_string(call, ecp_call_params(call), "languageId", &id))
        ecp_call_reply_bool(call, "supported", syntax_language_supported(ad->svc, id.ptr));
}

static void m_detect_language(void *ctx, ecp_call *call)
{
    ecp_str path = {0};
    if (ecp_arg_string(call, ecp_call_params(call), "filePath", &path))
        ecp_call_reply_string(call, "languageId", syntax_language_detect(path.ptr));
}

static void m_themes(void *ctx, ecp_call *call)
{
    size_t count;
    const session_theme *themes = session_themes(&count);
    json_writer *w = ecp_call_result_list(call, "themes");
    for (size_t i = 0; i < count; i++)
        jw_string(w, themes[i].id);
    ecp_call_finish_list(call, w);
}

static void m_set_theme(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_str theme = {0};
    if (!ecp_arg_string(call, ecp_call_params(call), "theme", &theme))
        return;
    if (!apply_theme(ad, call, &theme))
        return;
    ecp_call_reply_success(call, true);
}

static void m_get_theme(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    ecp_call_reply_string(call, "theme", syntax_theme_current(ad->svc));
}

static void m_metrics(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    syntax_metrics metrics, *m = &metrics;
    syntax_metrics_get(ad->svc, m);
    json_writer *w = ecp_call_result_key(call, "metrics");
    jw_object_begin(w);
    jw_key_int(w, "parseCount", (int64_t)m->parse_count);
    jw_key_int(w, "cacheHits", (int64_t)m->cache_hits);
    jw_key_int(w, "cacheMisses", (int64_t)m->cache_misses);
    jw_key_double(w, "averageParseTime", m->parse_count ? m->parse_ms_total / (double)m->parse_count : 0.0);
    jw_object_end(w);
    ecp_call_finish_key(call, w);
}

static void m_reset_metrics(void *ctx, ecp_call *call)
{
    syntax_adapter *ad = ctx;
    syntax_metrics_reset(ad->svc);
    ecp_call_reply_success(call, true);
}

/* Grammars are linked in: the service is ready from the start. */
static void m_is_ready(void *ctx, ecp_call *call)
{
    ecp_call_reply_bool(call, "ready", true);
}

/* ----- notifications --------------------------------------------------------------------------------- */

typedef struct did_change {
    const char *document_id;
    uint64_t version;
    const syntax_line_range *ranges;
    size_t count;
} did_change;

static void render_did_change(void *ctx, ecp_position_encoding enc, json_writer *w)
{
    const did_change *d = ctx;
    jw_object_begin(w);
    jw_key_string(w, "documentId", d->document_id);
    jw_key_int(w, "version", (int64_t)d->version);
    jw_key(w, "ranges");
    jw_array_begin(w);
    for (size_t i = 0; i < d->count; i++)
        ecp_write_fields(w, ECP_FIELDS(ECP_INT_FIELD("startLine", d->ranges[i].start_line),
                                       ECP_INT_FIELD("endLine", d->ranges[i].end_line)));
    jw_array_end(w);
    jw_object_end(w);
}

static void on_tokens(void *ctx, const char *document_id, uint64_t version, const syntax_line_range *ranges,
                      size_t count)
{
    syntax_adapter *ad = ctx;
    did_change d = {document_id, version, ranges, count};
    ecp_bus_notify(ad->bus, "syntax/didChange", render_did_change, &d);
}

static const syntax_listener listener = {on_tokens};

/* ----- registration -------------------------------------------------------------------------------- */

static const ecp_method methods[] = {
    {"syntax/highlight", m_highlight, "1.0", "Highlight a text in one language; theme makes a theme current",
     "{languageId: string, content?: string, theme?: string}"},
    {"syntax/highlightLine", m_highlight_line, "1.0", "The tokens of one line of a text, parsed whole",
     "{content: string, languageId: string, lineNumber: integer >= 0, theme?: string}"},
    {"syntax/createSession", m_create_session, "1.0", "Highlight a text and keep its tokens as a session",
     "{documentId: string, languageId: string, content: string}"},
    {"syntax/updateSession", m_update_session, "1.0", "Replace a session's text and highlight it again",
     "{sessionId: string, content: string}"},
    {"syntax/getSessionTokens", m_get_session_tokens, "1.0", "The tokens of one line of a session",
     "{sessionId: string, lineNumber: integer >= 0}"},
    {"syntax/getSessionAllTokens", m_get_session_all_tokens, "1.0", "The tokens of every line of a session",
     "{sessionId: string}"},
    {"syntax/disposeSession", m_dispose_session, "1.0", "Forget a session", "{sessionId: string}"},
    {"syntax/getSession", m_get_session, "1.0", "A session's ids, language and version, or null",
     "{sessionId: string}"},
    {"syntax/languages", m_languages, "1.0", "The language ids highlighted here", "{}"},
    {"syntax/isSupported", m_is_supported, "1.0", "Whether a language id is highlighted here",
     "{languageId: string}"},
    {"syntax/detectLanguage", m_detect_language, "1.0", "The language id of a path by its extension or file name, or null",
     "{filePath: string}"},
    {"syntax/themes", m_themes, "1.0", "The ids of the built-in themes", "{}"},
    {"syntax/setTheme", m_set_theme, "1.0", "Make a theme current (recolours every document)",
     "{theme: string}"},
    {"syntax/getTheme", m_get_theme, "1.0", "The current theme's id", "{}"},
    {"syntax/metrics", m_metrics, "1.0", "Parse counts, token reads and the average parse time", "{}"},
    {"syntax/resetMetrics", m_reset_metrics, "1.0", "Set the metrics back to zero", "{}"},
    {"syntax/isReady", m_is_ready, "1.0", "Whether the highlighter is ready", "{}"},
    {"syntax/waitForReady", m_is_ready, "1.0", "Answers once the highlighter is ready", "{}"},
    {"syntax/documentTokens", m_document_tokens, "1.0",
     "The tokens of lines of an open document from its latest tree, without waiting for a parse",
     "{documentId: string, startLine: integer >= 0, endLine: integer >= 0}"},
    {"syntax/foldingRanges", m_folding_ranges, "1.0",
     "Folding ranges of an open document from its latest tree: one per start line, comments marked",
     "{documentId: string}"},
    {"syntax/selectionRanges", m_selection_ranges, "1.0",
     "For each position, its enclosing nodes from the smallest to the whole document (LSP SelectionRange)",
     "{documentId: string, positions: Position[]}"},
    {"syntax/indent", m_indent, "1.0", "The indent of a new line inserted after a line, in the document's own unit",
     "{documentId: string, line: integer >= 0}"},
    {"syntax/symbols", m_symbols, "1.0",
     "The definitions the grammar's tags query finds, nested (LSP DocumentSymbol)", "{documentId: string}"},
};

static const char *const notifications[] = {"syntax/didChange", NULL};

static void adapter_destroy(void *ctx)
{
    syntax_adapter *ad = ctx;
    syntax_unsubscribe(ad->svc, &listener, ad);
    free(ad);
}

void syntax_adapter_init(ecp_adapter *out, syntax_service *svc, ecp_bus *bus)
{
    syntax_adapter *ad = xmalloc(sizeof *ad);
    *ad = (syntax_adapter){.svc = svc, .bus = bus};
    syntax_subscribe(svc, &listener, ad);
    *out = (ecp_adapter){.ns = "syntax", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = ad, .destroy = adapter_destroy, .notifications = notifications};
}
