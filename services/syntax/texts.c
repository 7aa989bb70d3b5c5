/* texts: texts handed to the syntax service, highlighted whole off the loop.
 *
 * A one-shot highlight and a session's text are the same work: a job of the
 * service's set copies the text, parses it, finds its injected languages and
 * computes every line's raw tokens on a pool thread; the loop then hands the
 * text to the caller's callback, or keeps it as a session. Colours and
 * columns are added line by line when tokens are read: on the loop from the
 * current theme (the grammars' colour caches are the loop's), or, for a
 * one-shot highlight whose answer is written on the pool, from the theme
 * that was current when it was asked, with a cache of the job's own.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "session/interface.h"

static double now_ms(void) { return (double)uv_hrtime() / 1e6; }

/* ----- texts ---------------------------------------------------------------------------------- */

syntax_text *syntax_text_build(syntax_grammars *grammars, syntax_grammar *g, char *text, size_t len)
{
    syntax_text *t = xcalloc(1, sizeof *t);
    t->text = text;
    t->len = len;
    line_index_build(&t->lines, text, len);
    if (!g || len > SYNTAX_MAX_BYTES || !syntax_grammar_ready(grammars, g))
        return t;
    double t0 = now_ms();
    const char *why = NULL;
    TSTree *tree = syntax_parse(g, NULL, text, len, NULL, &why);
    if (!tree) {
        ecp_log(syntax_grammars_log(grammars), ECP_LOG_WARN, "syntax: a %s text of %zu bytes stays plain text: %s",
                g->name, len, why);
        return t;
    }
    t->raw = xcalloc(t->lines.count, sizeof *t->raw);
    syntax_layers layers;
    syntax_layers_build(grammars, g, tree, text, len, NULL, &layers);
    syntax_highlight_layered(g, tree, &layers, text, len, &t->lines, 0, t->lines.count, t->raw);
    syntax_layers_free(&layers);
    t->parse_ms = now_ms() - t0;
    ts_tree_delete(tree);
    t->grammar = g;
    return t;
}

void syntax_text_free(syntax_text *self)
{
    if (!self)
        return;
    if (self->raw)
        for (size_t i = 0; i < self->lines.count; i++)
            free(self->raw[i].tokens);
    free(self->raw);
    line_index_free(&self->lines);
    free(self->text);
    free(self);
}

void syntax_render_line(syntax_color_fn color, void *color_ctx, const char *line, size_t len, const raw_line *raw,
                        ecp_position_encoding enc, syntax_line *out)
{
    out->count = raw->count;
    out->tokens = raw->count ? xcalloc(raw->count, sizeof *out->tokens) : NULL;
    if (!raw->count)
        return;
    size_t *starts = xmalloc(2 * raw->count * sizeof *starts), *ends = starts + raw->count;
    syntax_tokens_to_columns(line, len, raw->tokens, raw->count, enc, starts, ends);
    for (size_t i = 0; i < raw->count; i++) {
        const syntax_grammar *g = raw->tokens[i].grammar;
        out->tokens[i] = (syntax_token){starts[i], ends[i], g->capture_scopes[raw->tokens[i].capture],
                                        color(color_ctx, g, raw->tokens[i].capture)};
    }
    free(starts);
}

size_t syntax_text_line_count(const syntax_text *t) { return t ? t->lines.count : 0; }

static void text_line_tokens(syntax_color_fn color, void *color_ctx, const syntax_text *t, size_t line,
                             ecp_position_encoding enc, syntax_line *out)
{
    out->tokens = NULL;
    out->count = 0;
    if (!t || !t->grammar || !t->raw || line >= t->lines.count)
        return;
    size_t ls = t->lines.starts[line], le = t->lines.starts[line + 1] - 1;
    syntax_render_line(color, color_ctx, t->text + ls, le - ls, &t->raw[line], enc, out);
}

void syntax_text_line_tokens(syntax_service *self, const syntax_text *t, size_t line, ecp_position_encoding enc,
                             syntax_line *out)
{
    text_line_tokens(syntax_loop_color, self, t, line, enc, out);
}

/* ----- a highlight's own colours ------------------------------------------------------------ */

typedef struct grammar_colors {
    const syntax_grammar *grammar;
    const char **color; /* per capture */
    bool *known;
} grammar_colors;

/* The colours of one highlight: its job's pool thread, then its callback on
 * the loop, use them in turn, never at once. */
typedef struct text_colors {
    const session_theme *theme; /* static data; NULL: no colours */
    grammar_colors *items;
    size_t count;
} text_colors;

static void text_colors_free(text_colors *c)
{
    for (size_t i = 0; i < c->count; i++) {
        free(c->items[i].color);
        free(c->items[i].known);
    }
    free(c->items);
}

/* The colour the session service's session_theme_token_color gives a
 * capture, from theme rather than the current one: the longest listed
 * prefix of "a.b.c" ("a.b", then "a"). */
static const char *theme_color(const session_theme *theme, const char *capture)
{
    size_t len = strlen(capture);
    for (;;) {
        for (size_t i = 0; i < theme->token_color_count; i++) {
            const session_token_color *c = &theme->token_colors[i];
            if (strlen(c->capture) == len && strncmp(c->capture, capture, len) == 0)
                return c->foreground;
        }
        const char *dot = memrchr(capture, '.', len);
        if (!dot)
            return NULL;
        len = (size_t)(dot - capture);
    }
}

static const char *job_color(void *ctx, const syntax_grammar *g, uint32_t capture)
{
    text_colors *c = ctx;
    if (!c->theme)
        return NULL;
    grammar_colors *gc = NULL;
    for (size_t i = 0; i < c->count && !gc; i++)
        if (c->items[i].grammar == g)
            gc = &c->items[i];
    if (!gc) {
        uint32_t n = ts_query_capture_count(g->query);
        c->items = xrealloc(c->items, (c->count + 1) * sizeof *c->items);
        gc = &c->items[c->count++];
        *gc = (grammar_colors){g, xcalloc(n ? n : 1, sizeof *gc->color), xcalloc(n ? n : 1, sizeof *gc->known)};
    }
    if (!gc->known[capture]) {
        gc->color[capture] = theme_color(c->theme, g->capture_scopes[capture]);
        gc->known[capture] = true;
    }
    return gc->color[capture];
}

/* What syntax_highlight_start's callback and format are handed. */
typedef struct highlight_result {
    syntax_highlight_result pub; /* first: the caller sees this part */
    text_colors *colors;
} highlight_result;

void syntax_highlight_line_tokens(const syntax_highlight_result *result, size_t line, ecp_position_encoding enc,
                                  syntax_line *out)
{
    const highlight_result *r = (const highlight_result *)result;
    text_line_tokens(job_color, r->colors, r->pub.text, line, enc, out);
}

/* ----- sessions -------------------------------------------------------------------------------- */

static syntax_session *session_find(syntax_sessions *sessions, const char *id, size_t *index)
{
    for (size_t i = 0; id && i < sessions->count; i++)
        if (strcmp(sessions->items[i]->id, id) == 0) {
            if (index)
                *index = i;
            return sessions->items[i];
        }
    return NULL;
}

static void session_free(syntax_session *s)
{
    syntax_text_free(s->text);
    free_each(s->id, s->document_id, s->language_id, s);
}

void syntax_sessions_free(syntax_sessions *self)
{
    for (size_t i = 0; i < self->count; i++)
        session_free(self->items[i]);
    free(self->items);
    *self = (syntax_sessions){0};
}

/* Takes text and returns the new session. */
static syntax_session *session_add(syntax_sessions *sessions, const char *document_id, const char *language_id,
                                   syntax_text *text)
{
    syntax_session *s = xcalloc(1, sizeof *s);
    char id[64];
    snprintf(id, sizeof id, "syntax-%llu-%llu", (unsigned long long)++sessions->serial,
             (unsigned long long)(uv_hrtime() / 1000000u));
    s->id = xstrdup(id);
    s->document_id = xstrdup(document_id);
    s->language_id = xstrdup(language_id);
    s->version = 1;
    s->text = text;
    if (sessions->count == sessions->cap) {
        sessions->cap = sessions->cap ? sessions->cap * 2 : 8;
        sessions->items = xrealloc(sessions->items, sessions->cap * sizeof *sessions->items);
    }
    sessions->items[sessions->count++] = s;
    return s;
}

static syntax_session_info session_info(const syntax_session *s)
{
    return (syntax_session_info){s->id, s->document_id, s->language_id, s->version};
}

static int session_not_found(ecp_error *err, const char *id)
{
    return ecp_error_set(err, ECP_ENOTFOUND, "Session not found: %s", id);
}

int syntax_session_get(syntax_service *self, const char *session_id, syntax_session_info *out, ecp_error *err)
{
    syntax_session *s = session_find(syntax_service_sessions(self), session_id, NULL);
    if (!s)
        return session_not_found(err, session_id);
    *out = session_info(s);
    return 0;
}

const syntax_text *syntax_session_read(syntax_service *self, const char *session_id)
{
    syntax_session *s = session_find(syntax_service_sessions(self), session_id, NULL);
    if (!s)
        return NULL;
    syntax_service_metrics(self)->cache_hits++;
    return s->text;
}

void syntax_session_dispose(syntax_service *self, const char *session_id)
{
    syntax_sessions *sessions = syntax_service_sessions(self);
    size_t i;
    syntax_session *s = session_find(sessions, session_id, &i);
    if (!s)
        return;
    sessions->items[i] = sessions->items[--sessions->count];
    session_free(s);
}

/* ----- jobs ---------------------------------------------------------------------------------------- */

typedef enum text_op { OP_HIGHLIGHT, OP_SESSION_CREATE, OP_SESSION_UPDATE } text_op;

typedef struct text_job {
    /* Jobs end before the service: its set is closed first. */
    syntax_service *svc;
    text_op op;
    syntax_grammar *grammar; /* NULL: plain text */
    char *content;           /* until the work takes it */
    size_t len;
    char *language_id;
    char *document_id;
    char *session_id;
    bool session_missing;    /* an update of an unknown session: nothing to do */
    syntax_text *result;
    text_colors colors;      /* a highlight's */
    void (*format)(void *fctx, const syntax_highlight_result *result, buf *out);
    void *fctx;
    bool formatted;          /* format has written answer */
    buf answer;
    syntax_highlight_cb highlight_cb;
    syntax_session_cb session_cb;
    void *ctx;
} text_job;

/* The bytes asked for, NULs included (a JSON string may hold \u0000). */
static char *copy_bytes(const char *s, size_t n)
{
    char *out = xmalloc(n + 1);
    if (n)
        memcpy(out, s, n);
    out[n] = 0;
    return out;
}

static highlight_result highlight_result_of(text_job *j)
{
    return (highlight_result){{j->result, j->result->grammar ? j->language_id : "plaintext", j->result->parse_ms},
                              &j->colors};
}

static int text_work(ecp_job *job, void *payload, ecp_error *err)
{
    text_job *j = payload;
    if (j->session_missing)
        return session_not_found(err, j->session_id);
    j->result = syntax_text_build(syntax_service_grammars(j->svc), j->grammar, j->content, j->len);
    j->content = NULL; /* the result owns it */
    if (ecp_job_cancelled(job))
        return ecp_error_set(err, ECP_ECANCELED, "Request cancelled");
    if (j->format) {
        highlight_result r = highlight_result_of(j);
        j->format(j->fctx, &r.pub, &j->answer);
        j->formatted = true;
    }
    return 0;
}

static void text_fail(text_job *j, int status, const ecp_error *err)
{
    if (j->op == OP_HIGHLIGHT)
        j->highlight_cb(j->ctx, status, err, NULL, NULL);
    else
        j->session_cb(j->ctx, status, err, NULL);
}

static void text_done(void *payload, int status, const ecp_error *error)
{
    text_job *j = payload;
    syntax_service *self = j->svc;
    ecp_error err = {0};
    if (status) {
        text_fail(j, status, error);
        return;
    }
    syntax_metrics *m = syntax_service_metrics(self);
    m->parse_count++;
    m->cache_misses++;
    m->parse_ms_total += j->result->parse_ms;
    syntax_sessions *sessions = syntax_service_sessions(self);
    switch (j->op) {
    case OP_HIGHLIGHT: {
        highlight_result r = highlight_result_of(j);
        ecp_shared *answer = NULL;
        if (j->formatted) {
            size_t len = j->answer.len;
            answer = ecp_shared_adopt(buf_detach(&j->answer), len);
        }
        j->highlight_cb(j->ctx, 0, NULL, &r.pub, answer);
        ecp_shared_unref(answer);
        break;
    }
    case OP_SESSION_CREATE: {
        syntax_session *s = session_add(sessions, j->document_id, j->language_id, j->result);
        j->result = NULL;
        syntax_session_info info = session_info(s);
        j->session_cb(j->ctx, 0, NULL, &info);
        break;
    }
    case OP_SESSION_UPDATE: {
        syntax_session *s = session_find(sessions, j->session_id, NULL);
        if (!s) {
            text_fail(j, session_not_found(&err, j->session_id), &err);
            return;
        }
        syntax_text_free(s->text);
        s->text = j->result;
        j->result = NULL;
        s->version++;
        syntax_session_info info = session_info(s);
        j->session_cb(j->ctx, 0, NULL, &info);
        break;
    }
    }
}

static void text_release(void *payload)
{
    text_job *j = payload;
    syntax_text_free(j->result);
    text_colors_free(&j->colors);
    buf_free(&j->answer);
    free_each(j->content, j->language_id, j->document_id, j->session_id);
}

static const ecp_job_kind text_kind =
    ECP_JOB_KIND("syntax.highlight", ECP_LANE_LONG, false, text_work, text_done, text_release);

/* The grammar a text of language_id is parsed with; NULL (plain text) for a
 * language without one or whose query failed to load. */
static syntax_grammar *text_grammar(syntax_service *self, const char *language_id)
{
    if (!syntax_language_supported(self, language_id))
        return NULL;
    return syntax_grammars_find(syntax_service_grammars(self), language_id);
}

/* Copies what every text job parses (language_id: the grammar's, NULL for
 * none) and starts it. */
static ecp_job *text_start(syntax_service *self, text_job j, const char *language_id, const char *content,
                           size_t content_len, ecp_call *call)
{
    j.svc = self;
    if (language_id) {
        j.grammar = text_grammar(self, language_id);
        j.len = content ? content_len : 0;
        j.content = copy_bytes(content, j.len);
    }
    return ecp_job_run(syntax_service_jobs(self), &text_kind, &j, sizeof j, call);
}

ecp_job *syntax_highlight_start(syntax_service *self, const syntax_highlight_args *args, syntax_highlight_cb cb,
                                void *ctx)
{
    text_job j = {.op = OP_HIGHLIGHT, .language_id = xstrdup(args->language_id),
                  .colors.theme = syntax_service_theme(self), .format = args->format, .fctx = args->fctx,
                  .highlight_cb = cb, .ctx = ctx};
    return text_start(self, j, args->language_id, args->content, args->content_len, args->call);
}

ecp_job *syntax_session_create_start(syntax_service *self, const syntax_session_create_args *args,
                                     syntax_session_cb cb, void *ctx)
{
    text_job j = {.op = OP_SESSION_CREATE, .language_id = xstrdup(args->language_id),
                  .document_id = xstrdup(args->document_id), .session_cb = cb, .ctx = ctx};
    return text_start(self, j, args->language_id, args->content, args->content_len, args->call);
}

ecp_job *syntax_session_update_start(syntax_service *self, const syntax_session_update_args *args,
                                     syntax_session_cb cb, void *ctx)
{
    syntax_session *s = session_find(syntax_service_sessions(self), args->session_id, NULL);
    text_job j = {.op = OP_SESSION_UPDATE, .session_id = xstrdup(args->session_id), .session_missing = !s,
                  .session_cb = cb, .ctx = ctx};
    return text_start(self, j, s ? s->language_id : NULL, args->content, args->content_len, args->call);
}
