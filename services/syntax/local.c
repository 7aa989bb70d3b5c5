/* local: the syntax service: documents followed, the theme followed.
 *
 * Each followed document keeps, on the loop, a contiguous copy of its text
 * (kept current from the change events) and its latest tree, edited with
 * every change so that its positions match the text. At most one parse per
 * document runs at a time; changes that arrive meanwhile are applied to the
 * loop's tree and text and queued as edits, which are applied to the new tree
 * when it lands before the next reparse starts from it.
 */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "map.h"
#include "session/interface.h"
#include "share_dir.h"

#ifndef ECPD_SYNTAX_QUERY_DIR
#define ECPD_SYNTAX_QUERY_DIR "third_party/grammars"
#endif

typedef struct syntax_doc {
    char *id;
    syntax_grammar *grammar; /* NULL: plain text */
    bool plain;              /* fell back to plain text (size, timeout) */
    uint64_t version;        /* of the document, as last heard */
    char *text;              /* NULL until the first parse lands */
    size_t len, cap;
    line_index lines;
    TSTree *tree;            /* edited to match text */
    syntax_layers layers;    /* injected languages, edited to match text */
    ecp_job *job;            /* the parse in flight, if any */
    TSInputEdit *pending;    /* edits since the job in flight took its snapshot */
    size_t pending_count, pending_cap;
    syntax_line_range *touched; /* lines edited since the last parse started */
    size_t touched_count, touched_cap;
} syntax_doc;

struct syntax_service {
    ecp_pool *pool;
    ecp_logger *log;
    document_service *documents;
    session_service *session;
    ecp_job_set *jobs;
    syntax_grammars *grammars;
    ecp_listeners listeners;
    ecp_map *docs; /* syntax_doc by document id, in the order they opened */
    syntax_sessions sessions;
    syntax_metrics metrics;
};

/* ----- documents ----------------------------------------------------------------------------- */

static syntax_doc *doc_find(syntax_service *self, const char *id) { return ecp_map_get(self->docs, id); }

static void doc_drop_state(syntax_doc *doc)
{
    if (doc->tree)
        ts_tree_delete(doc->tree);
    doc->tree = NULL;
    syntax_layers_free(&doc->layers);
    free(doc->text);
    doc->text = NULL;
    doc->len = doc->cap = 0;
    line_index_free(&doc->lines);
    doc->pending_count = 0;
    doc->touched_count = 0;
}

static void doc_free(syntax_doc *doc)
{
    if (doc->job)
        ecp_job_cancel(doc->job);
    doc_drop_state(doc);
    free_each(doc->pending, doc->touched, doc->id, doc);
}

static void emit_tokens(syntax_service *self, syntax_doc *doc, const syntax_line_range *ranges, size_t count)
{
    if (count)
        ECP_EMIT(&self->listeners, syntax_listener, on_tokens, doc->id, doc->version, ranges, count);
}

static void emit_all(syntax_service *self, syntax_doc *doc)
{
    size_t lines = doc->text ? doc->lines.count : 0;
    if (!lines) {
        document_info info;
        if (document_get_info(self->documents, doc->id, &info, NULL) == 0)
            lines = info.line_count;
    }
    syntax_line_range all = {0, lines ? lines - 1 : 0};
    emit_tokens(self, doc, &all, 1);
}

static void add_range(syntax_line_range **items, size_t *count, size_t *cap, size_t start, size_t end)
{
    /* Merge with the last range when they touch: edits at the caret do. */
    if (*count) {
        syntax_line_range *last = &(*items)[*count - 1];
        if (start <= last->end_line + 1 && end + 1 >= last->start_line) {
            last->start_line = start < last->start_line ? start : last->start_line;
            last->end_line = end > last->end_line ? end : last->end_line;
            return;
        }
    }
    if (*count == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *items = xrealloc(*items, *cap * sizeof **items);
    }
    (*items)[(*count)++] = (syntax_line_range){start, end};
}

/* ----- parsing jobs --------------------------------------------------------------------------- */

typedef struct parse_job {
    syntax_service *svc;
    char *doc_id;
    syntax_grammar *grammar;
    document_snapshot *snap;
    uint64_t version;
    bool full;            /* a first parse: the text comes back to the loop */
    TSTree *old;          /* incremental: the edited tree it starts from */
    char *text;
    size_t len;
    TSTree *tree;         /* the result; NULL on failure */
    syntax_layers layers; /* the languages injected into it */
    syntax_layers old_layers; /* incremental: the document's layers, edited, when it started */
    const char *failure;  /* why the document stays plain */
    syntax_line_range *ranges; /* the lines to report */
    size_t range_count, range_cap;
    double parse_ms;
} parse_job;

static void copy_chunk(void *ctx, const char *chunk, size_t len)
{
    buf *b = ctx;
    buf_append(b, chunk, len);
}

static double now_ms(void) { return (double)uv_hrtime() / 1e6; }

static void parse_work(ecp_job *job, unsigned item)
{
    parse_job *j = ecp_job_data(job);
    if (ecp_job_cancelled(job))
        return;
    if (!syntax_grammar_ready(j->svc->grammars, j->grammar)) {
        j->failure = "its grammar did not load";
        return;
    }
    size_t len = document_snapshot_length(j->snap);
    if (len > SYNTAX_MAX_BYTES) {
        j->failure = "it is larger than the 16 MiB the highlighter parses";
        return;
    }
    buf text = BUF_INIT;
    buf_reserve(&text, len + 1);
    document_snapshot_read(j->snap, 0, len, copy_chunk, &text, NULL);
    j->len = text.len;
    j->text = buf_detach(&text);
    if (!j->text)
        j->text = xstrdup("");
    double t0 = now_ms();
    j->tree = syntax_parse(j->grammar, j->old, j->text, j->len, NULL, &j->failure);
    j->parse_ms = now_ms() - t0;
    if (!j->tree)
        return;
    /* Injections are found again over the whole text (a fence opened or
     * closed moves every layer after it); the layers no edit touched keep
     * their trees, the edited ones are reparsed from theirs. */
    syntax_layers_build(j->svc->grammars, j->grammar, j->tree, j->text, j->len, &j->old_layers, &j->layers);
    if (j->old) {
        uint32_t n = 0;
        TSRange *changed = ts_tree_get_changed_ranges(j->old, j->tree, &n);
        for (uint32_t i = 0; i < n; i++)
            add_range(&j->ranges, &j->range_count, &j->range_cap, changed[i].start_point.row,
                      changed[i].end_point.row);
        free(changed);
    }
    if (!j->full) {
        free(j->text);
        j->text = NULL;
    }
}

static void start_parse(syntax_service *self, syntax_doc *doc, bool full);

static bool same_layer(const syntax_layer *a, const syntax_layer *b)
{
    return a->grammar == b->grammar && a->start == b->start && a->end == b->end;
}

/* The lines of layers that came or went (a fence opened, closed, or its
 * language changed) join the lines to report; edits inside a layer are
 * among the edited lines already. Both lists are sorted by start. */
static void report_layer_changes(syntax_doc *doc, const syntax_layers *now, parse_job *j)
{
    const syntax_layers *was = &doc->layers;
    size_t a = 0, b = 0;
    while (a < was->count || b < now->count) {
        const syntax_layer *l;
        if (a < was->count && b < now->count && same_layer(&was->items[a], &now->items[b])) {
            a++;
            b++;
            continue;
        }
        if (b >= now->count || (a < was->count && was->items[a].start <= now->items[b].start))
            l = &was->items[a++];
        else
            l = &now->items[b++];
        size_t end = l->end < doc->len ? l->end : doc->len;
        add_range(&j->ranges, &j->range_count, &j->range_cap, line_index_line_of(&doc->lines, l->start),
                  line_index_line_of(&doc->lines, end));
    }
}

static void parse_done(ecp_job *job)
{
    parse_job *j = ecp_job_data(job);
    syntax_service *self = j->svc;
    syntax_doc *doc = doc_find(self, j->doc_id);
    if (!doc || doc->job != job)
        return;
    doc->job = NULL;
    if (ecp_job_cancelled(job))
        return;
    self->metrics.parse_count++;
    self->metrics.cache_misses++;
    self->metrics.parse_ms_total += j->parse_ms;
    if (j->failure) {
        ecp_log(self->log, ECP_LOG_WARN, "syntax: document %s stays plain text: %s", doc->id, j->failure);
        doc->plain = true;
        doc_drop_state(doc);
        emit_all(self, doc);
        return;
    }
    if (j->full) {
        if (doc->version != j->version) {
            /* Edited while its first parse ran, before the loop had its text:
             * start over from the text as it is now. */
            start_parse(self, doc, true);
            return;
        }
        doc_drop_state(doc);
        doc->text = j->text;
        doc->len = doc->cap = j->len;
        j->text = NULL;
        line_index_build(&doc->lines, doc->text, doc->len);
        doc->tree = j->tree;
        j->tree = NULL;
        doc->layers = j->layers;
        j->layers = (syntax_layers){0};
        emit_all(self, doc);
        return;
    }
    if (!doc->text) {
        /* The loop's copy was dropped meanwhile: start over. */
        start_parse(self, doc, true);
        return;
    }
    /* The new tree matches the snapshot; bring it up to the text as it is now. */
    for (size_t i = 0; i < doc->pending_count; i++) {
        ts_tree_edit(j->tree, &doc->pending[i]);
        syntax_layers_edit(&j->layers, &doc->pending[i]);
    }
    bool more = doc->pending_count > 0;
    doc->pending_count = 0;
    if (doc->tree)
        ts_tree_delete(doc->tree);
    doc->tree = j->tree;
    j->tree = NULL;
    report_layer_changes(doc, &j->layers, j);
    syntax_layers_free(&doc->layers);
    doc->layers = j->layers;
    j->layers = (syntax_layers){0};
    size_t last = doc->lines.count ? doc->lines.count - 1 : 0;
    for (size_t i = 0; i < j->range_count; i++) {
        if (j->ranges[i].start_line > last)
            j->ranges[i].start_line = last;
        if (j->ranges[i].end_line > last)
            j->ranges[i].end_line = last;
    }
    emit_tokens(self, doc, j->ranges, j->range_count);
    if (more)
        start_parse(self, doc, false);
}

static void parse_free(void *data)
{
    parse_job *j = data;
    document_snapshot_release(j->snap);
    if (j->old)
        ts_tree_delete(j->old);
    if (j->tree)
        ts_tree_delete(j->tree);
    syntax_layers_free(&j->layers);
    syntax_layers_free(&j->old_layers);
    free_each(j->text, j->ranges, j->doc_id, j);
}

static const ecp_job_type parse_full_type = {"syntax.parse", ECP_LANE_LONG, false, parse_work, parse_done,
                                             parse_free};
/* A reparse after an edit takes milliseconds: it must not queue behind greps. */
static const ecp_job_type parse_edit_type = {"syntax.reparse", ECP_LANE_SHORT, false, parse_work, parse_done,
                                             parse_free};

static void start_parse(syntax_service *self, syntax_doc *doc, bool full)
{
    ecp_error err = {0};
    document_snapshot *snap = document_snapshot_take(self->documents, doc->id, &err);
    if (!snap)
        return;
    parse_job *j = xcalloc(1, sizeof *j);
    j->svc = self;
    j->doc_id = xstrdup(doc->id);
    j->grammar = doc->grammar;
    j->snap = snap;
    j->version = document_snapshot_version(snap);
    j->full = full || !doc->tree;
    if (!j->full) {
        j->old = ts_tree_copy(doc->tree);
        syntax_layers_copy(&doc->layers, &j->old_layers);
        j->ranges = doc->touched;
        j->range_count = doc->touched_count;
        j->range_cap = doc->touched_cap;
        doc->touched = NULL;
        doc->touched_count = doc->touched_cap = 0;
    }
    doc->version = j->version;
    doc->job = ecp_job_new(self->jobs, j->full ? &parse_full_type : &parse_edit_type, j);
    ecp_job_start(doc->job, 1);
}

/* ----- following documents --------------------------------------------------------------------- */

static void on_open(void *ctx, const document_info *info)
{
    syntax_service *self = ctx;
    if (doc_find(self, info->document_id))
        return;
    syntax_doc *doc = xcalloc(1, sizeof *doc);
    doc->id = xstrdup(info->document_id);
    doc->version = info->version;
    doc->grammar = syntax_grammars_find(self->grammars, info->language_id);
    ecp_map_set(self->docs, doc->id, doc, NULL);
    if (doc->grammar)
        start_parse(self, doc, true);
}

static TSPoint point_after(TSPoint start, const char *text, size_t len)
{
    TSPoint p = start;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') {
            p.row++;
            p.column = 0;
        } else {
            p.column++;
        }
    }
    return p;
}

static void apply_change(syntax_doc *doc, const document_change *c)
{
    size_t new_len = doc->len - c->deleted_len + c->text_len;
    if (new_len + 1 > doc->cap) {
        doc->cap = (new_len + 1) * 3 / 2;
        doc->text = xrealloc(doc->text, doc->cap);
    }
    memmove(doc->text + c->offset + c->text_len, doc->text + c->offset + c->deleted_len,
            doc->len - c->offset - c->deleted_len);
    if (c->text_len)
        memcpy(doc->text + c->offset, c->text, c->text_len);
    doc->len = new_len;
    line_index_replace(&doc->lines, doc->text, doc->len, c->offset, c->deleted_len, c->text_len);

    TSInputEdit edit = {
        .start_byte = (uint32_t)c->offset,
        .old_end_byte = (uint32_t)(c->offset + c->deleted_len),
        .new_end_byte = (uint32_t)(c->offset + c->text_len),
        .start_point = {(uint32_t)c->start.line, (uint32_t)c->start.column[ECP_ENCODING_UTF8]},
        .old_end_point = {(uint32_t)c->end.line, (uint32_t)c->end.column[ECP_ENCODING_UTF8]},
    };
    edit.new_end_point = point_after(edit.start_point, c->text, c->text_len);
    ts_tree_edit(doc->tree, &edit);
    syntax_layers_edit(&doc->layers, &edit);
    if (doc->job) {
        if (doc->pending_count == doc->pending_cap) {
            doc->pending_cap = doc->pending_cap ? doc->pending_cap * 2 : 8;
            doc->pending = xrealloc(doc->pending, doc->pending_cap * sizeof *doc->pending);
        }
        doc->pending[doc->pending_count++] = edit;
    }
    add_range(&doc->touched, &doc->touched_count, &doc->touched_cap, edit.start_point.row, edit.new_end_point.row);
}

static void on_change(void *ctx, const document_change_event *event)
{
    syntax_service *self = ctx;
    syntax_doc *doc = doc_find(self, event->document_id);
    if (!doc)
        return;
    doc->version = event->version;
    if (!doc->grammar || doc->plain || !doc->text || !doc->tree)
        return; /* plain, or the first parse is still running and will start over */
    for (size_t i = 0; i < event->count; i++) {
        const document_change *c = &event->changes[i];
        if (c->offset + c->deleted_len > doc->len) {
            /* The loop's copy lost step: parse from scratch rather than guess. */
            doc_drop_state(doc);
            if (!doc->job)
                start_parse(self, doc, true);
            return;
        }
        apply_change(doc, c);
    }
    if (!doc->job)
        start_parse(self, doc, false);
}

static void on_close(void *ctx, const char *document_id, const char *uri)
{
    syntax_service *self = ctx;
    void *doc;
    if (ecp_map_remove(self->docs, document_id, &doc))
        doc_free(doc);
}

static const document_listener doc_listener = {.on_open = on_open, .on_change = on_change, .on_close = on_close};

static void collect_open(void *ctx, const document_info *info) { on_open(ctx, info); }

/* ----- themes ----------------------------------------------------------------------------------- */

const char *syntax_capture_color(syntax_service *self, const syntax_grammar *g, uint32_t capture)
{
    syntax_grammar *mg = (syntax_grammar *)g; /* the colour cache is the loop's part of a grammar */
    if (!self->session)
        return NULL;
    if (!mg->capture_color_known[capture]) {
        const session_token_color *c = session_theme_token_color(self->session, g->capture_scopes[capture]);
        mg->capture_colors[capture] = c ? c->foreground : NULL;
        mg->capture_color_known[capture] = true;
    }
    return mg->capture_colors[capture];
}

const char *syntax_loop_color(void *ctx, const syntax_grammar *g, uint32_t capture)
{
    return syntax_capture_color(ctx, g, capture);
}

const session_theme *syntax_service_theme(syntax_service *self)
{
    return self->session ? session_theme_current(self->session) : NULL;
}

static void on_theme(void *ctx, const char *theme_id)
{
    syntax_service *self = ctx;
    syntax_grammars_forget_colors(self->grammars);
    void *doc;
    for (ecp_map_iter it = ECP_MAP_ITER_INIT; ecp_map_next(self->docs, &it, NULL, &doc);)
        if (((syntax_doc *)doc)->tree)
            emit_all(self, doc);
}

static const session_listener theme_listener = {.on_theme = on_theme};

int syntax_theme_set(syntax_service *self, const char *theme_id, ecp_error *err)
{
    if (!self->session || !session_theme_find(theme_id))
        return ecp_error_set(err, ECP_ENOTFOUND, "Theme not found: %s", theme_id);
    return session_theme_set(self->session, theme_id, err);
}

const char *syntax_theme_current(syntax_service *self)
{
    return self->session ? session_theme_current(self->session)->id : "one-dark";
}

/* ----- lifetime ---------------------------------------------------------------------------------- */

syntax_service *syntax_service_new(ecp_pool *pool, ecp_logger *log, document_service *documents,
                                   session_service *session, const char *query_dir)
{
    syntax_service *self = xcalloc(1, sizeof *self);
    self->pool = pool;
    self->log = log;
    self->documents = documents;
    self->session = session;
    self->jobs = ecp_job_set_new(pool);
    self->docs = ecp_map_new();
    /* installed: <prefix>/share/ecpd/grammars; from the build tree: the directory the build found */
    char *dir = query_dir ? xstrdup(query_dir) : ecp_share_path("grammars", ECPD_SYNTAX_QUERY_DIR);
    self->grammars = syntax_grammars_new(dir, log);
    free(dir);
    document_subscribe(documents, &doc_listener, self);
    if (session)
        session_subscribe(session, &theme_listener, self);
    document_list(documents, collect_open, self);
    return self;
}

void syntax_service_free(syntax_service *self)
{
    if (!self)
        return;
    document_unsubscribe(self->documents, &doc_listener, self);
    if (self->session)
        session_unsubscribe(self->session, &theme_listener, self);
    ecp_job_set_close(self->jobs);
    void *doc;
    for (ecp_map_iter it = ECP_MAP_ITER_INIT; ecp_map_next(self->docs, &it, NULL, &doc);) {
        ((syntax_doc *)doc)->job = NULL; /* closed with the set */
        doc_free(doc);
    }
    ecp_map_free(self->docs);
    syntax_sessions_free(&self->sessions);
    ecp_listeners_free(&self->listeners);
    syntax_grammars_free(self->grammars);
    free(self);
}

void syntax_subscribe(syntax_service *self, const syntax_listener *listener, void *ctx)
{
    ecp_listeners_add(&self->listeners, listener, ctx);
}

void syntax_unsubscribe(syntax_service *self, const syntax_listener *listener, void *ctx)
{
    ecp_listeners_remove(&self->listeners, listener, ctx);
}

syntax_metrics *syntax_service_metrics(syntax_service *self) { return &self->metrics; }
ecp_job_set *syntax_service_jobs(syntax_service *self) { return self->jobs; }
syntax_grammars *syntax_service_grammars(syntax_service *self) { return self->grammars; }
syntax_sessions *syntax_service_sessions(syntax_service *self) { return &self->sessions; }

void syntax_metrics_get(syntax_service *self, syntax_metrics *out) { *out = self->metrics; }
void syntax_metrics_reset(syntax_service *self) { memset(&self->metrics, 0, sizeof self->metrics); }

/* ----- languages --------------------------------------------------------------------------------- */

bool syntax_language_supported(syntax_service *self, const char *language_id)
{
    syntax_grammar *g = syntax_grammars_find(self->grammars, language_id);
    if (!g)
        return false;
    /* A grammar whose query has been tried and failed is off. A parse may be
     * loading it on a pool thread right now: read under its lock. */
    uv_mutex_lock(&g->lock);
    bool off = g->loaded && g->failed;
    uv_mutex_unlock(&g->lock);
    return !off;
}

void syntax_languages(syntax_service *self, void (*fn)(void *ctx, const char *language_id), void *ctx)
{
    size_t count;
    const char *const *ids = syntax_catalogue_languages(&count);
    for (size_t i = 0; i < count; i++)
        if (syntax_language_supported(self, ids[i]))
            fn(ctx, ids[i]);
}

static const struct {
    const char *ext;
    const char *language;
} extensions[] = {
    {"ts", "typescript"}, {"mts", "typescript"}, {"cts", "typescript"}, {"tsx", "typescriptreact"},
    {"js", "javascript"}, {"mjs", "javascript"}, {"cjs", "javascript"}, {"jsx", "javascriptreact"},
    {"json", "json"}, {"jsonc", "jsonc"}, {"py", "python"}, {"rs", "rust"}, {"go", "go"}, {"c", "c"},
    {"h", "c"}, {"cpp", "cpp"}, {"cc", "cpp"}, {"cxx", "cpp"}, {"hpp", "cpp"}, {"hh", "cpp"},
    {"html", "html"}, {"htm", "html"}, {"css", "css"}, {"scss", "scss"}, {"less", "less"},
    {"md", "markdown"}, {"yaml", "yaml"}, {"yml", "yaml"}, {"toml", "toml"}, {"sh", "bash"},
    {"bash", "bash"}, {"zsh", "bash"}, {"rb", "ruby"}, {"java", "java"}, {"kt", "kotlin"},
    {"swift", "swift"}, {"php", "php"}, {"sql", "sql"}, {"pgsql", "sql"}, {"psql", "sql"},
    {"graphql", "graphql"}, {"gql", "graphql"},
    {"lua", "lua"}, {"pl", "perl"}, {"r", "r"}, {"scala", "scala"}, {"ex", "elixir"}, {"exs", "elixir"},
    {"erl", "erlang"}, {"hs", "haskell"}, {"clj", "clojure"}, {"vim", "vim"}, {"xml", "xml"}, {"svg", "svg"},
    {"kts", "kotlin"}, {"cs", "csharp"}, {"zig", "zig"}, {"mk", "makefile"}, {"rake", "ruby"}, {"gemspec", "ruby"},
};

/* Files known by their whole name, not an extension. */
static const struct {
    const char *name;
    const char *language;
} file_names[] = {
    {"Makefile", "makefile"}, {"makefile", "makefile"}, {"GNUmakefile", "makefile"},
    {"Gemfile", "ruby"},      {"Rakefile", "ruby"},     {"Dockerfile", "dockerfile"},
};

const char *syntax_language_detect(const char *path)
{
    if (!path)
        return NULL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    for (size_t i = 0; i < sizeof file_names / sizeof file_names[0]; i++)
        if (strcmp(file_names[i].name, base) == 0)
            return file_names[i].language;
    const char *dot = strrchr(base, '.');
    if (!dot || dot == base)
        return NULL;
    char ext[16];
    size_t n = strlen(dot + 1);
    if (n == 0 || n >= sizeof ext)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        ext[i] = (char)((dot[1 + i] >= 'A' && dot[1 + i] <= 'Z') ? dot[1 + i] - 'A' + 'a' : dot[1 + i]);
    for (size_t i = 0; i < sizeof extensions / sizeof extensions[0]; i++)
        if (strcmp(extensions[i].ext, ext) == 0)
            return extensions[i].language;
    return NULL;
}

/* ----- tokens ------------------------------------------------------------------------------------- */

void syntax_lines_free(syntax_line *lines, size_t count)
{
    for (size_t i = 0; lines && i < count; i++)
        free(lines[i].tokens);
    free(lines);
}

int syntax_document_tokens(syntax_service *self, const char *document_id, size_t first, size_t count,
                           ecp_position_encoding enc, syntax_line **out, size_t *out_count, ecp_error *err)
{
    *out = NULL;
    *out_count = 0;
    syntax_doc *doc = doc_find(self, document_id);
    if (!doc)
        return ecp_error_set(err, ECP_ENOTFOUND, "Document not found: %s", document_id);
    size_t lines;
    if (doc->text && doc->tree && !doc->plain) {
        lines = doc->lines.count;
    } else {
        document_info info;
        int status = document_get_info(self->documents, document_id, &info, err);
        if (status)
            return status;
        lines = info.line_count;
    }
    if (first >= lines)
        return 0;
    if (count > lines - first)
        count = lines - first;
    syntax_line *result = xcalloc(count ? count : 1, sizeof *result);
    if (doc->text && doc->tree && !doc->plain) {
        raw_line *raw = xcalloc(count ? count : 1, sizeof *raw);
        syntax_highlight_layered(doc->grammar, doc->tree, &doc->layers, doc->text, doc->len, &doc->lines, first,
                                 count, raw);
        for (size_t i = 0; i < count; i++) {
            size_t ls = doc->lines.starts[first + i], le = doc->lines.starts[first + i + 1] - 1;
            syntax_render_line(syntax_loop_color, self, doc->text + ls, le - ls, &raw[i], enc, &result[i]);
            free(raw[i].tokens);
        }
        free(raw);
        self->metrics.cache_hits++;
    }
    *out = result;
    *out_count = count;
    return 0;
}

bool syntax_document_settled(syntax_service *self, const char *document_id)
{
    syntax_doc *doc = doc_find(self, document_id);
    if (!doc)
        return false;
    if (!doc->grammar || doc->plain)
        return !doc->job;
    return doc->tree && !doc->job;
}

/* ----- structure: a followed document's tree, for structure.c ------------------------------------ */

int syntax_document_view(syntax_service *self, const char *document_id, syntax_doc_view *out, ecp_error *err)
{
    memset(out, 0, sizeof *out);
    syntax_doc *doc = doc_find(self, document_id);
    if (!doc)
        return ecp_error_set(err, ECP_ENOTFOUND, "Document not found: %s", document_id);
    out->grammar = doc->grammar;
    if (doc->grammar && !doc->plain && doc->text && doc->tree) {
        out->tree = doc->tree;
        out->text = doc->text;
        out->len = doc->len;
        out->lines = &doc->lines;
    }
    return 0;
}

struct document_service *syntax_service_documents(syntax_service *self) { return self->documents; }
