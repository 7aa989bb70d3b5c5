/* Searching: the next occurrence of the selection (Ctrl+D), looked for in
 * the text the tab has and then asked of the server; and find and replace,
 * which run in the document service (document/find, document/replace), so
 * the TUI never reads a whole document to search it: this file asks, counts
 * and steps through the answers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "editor.h"
#include "input.h"

/* ---- the next occurrence of the selection (and the word search it shares) ---- */

/* Finds needle in text from (line, col) on, wrapping once; the match's start and end. */
static bool find_in(const char *text, size_t len, const char *needle, int line, int col, int *sl, int *sc, int *el,
                    int *ec)
{
    size_t nlen = strlen(needle);
    if (!nlen)
        return false;
    /* Byte offset of (line, col). */
    size_t start = 0;
    for (int l = 0; l < line && start < len; start++)
        if (text[start] == '\n')
            l++;
    start += col_to_byte(text + start, len - start, col);
    const char *hit = NULL;
    for (int pass = 0; pass < 2 && !hit; pass++) {
        size_t from = pass == 0 ? start : 0, to = pass == 0 ? len : start + nlen;
        if (to > len)
            to = len;
        hit = from <= to ? memmem(text + from, to - from, needle, nlen) : NULL;
    }
    if (!hit)
        return false;
    int l = 0, c = 0;
    for (const char *p = text; p < hit;) {
        if (*p == '\n') {
            l++, c = 0, p++;
            continue;
        }
        int n;
        utf8_next(p, &n);
        p += n, c++;
    }
    *sl = l, *sc = c;
    for (const char *p = hit; p < hit + nlen;) {
        if (*p == '\n') {
            l++, c = 0, p++;
            continue;
        }
        int n;
        utf8_next(p, &n);
        p += n, c++;
    }
    *el = l, *ec = c;
    return true;
}

enum content_use { FIND_NEXT, NEXT_OCCURRENCE };

typedef struct content_request {
    enum content_use use;
    uint64_t serial;
} content_request;

/* Where a search starts: after the last cursor (next occurrence) or the primary one (find). */
static cursor search_origin(tab *t, enum content_use use)
{
    cursor from = t->cursors[0];
    if (use == NEXT_OCCURRENCE)
        for (int i = 1; i < t->cursor_count; i++)
            if (t->cursors[i].line > from.line || (t->cursors[i].line == from.line && t->cursors[i].col > from.col))
                from = t->cursors[i];
    return from;
}

/* A match found: select it (find) or add a cursor that selects it (next occurrence). Ends the chain. */
static void act_on_match(app *a, tab *t, enum content_use use, int sl, int sc, int el, int ec)
{
    if (use == FIND_NEXT) {
        app_call(a, "document/setCursor", NULL, 0,
                 "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
                 t->doc_id, el, ec, sl, sc, el, ec);
        if (sl < t->top || sl >= t->top + a->rows) {
            /* Far away: the match in the middle of the screen, not at its edge. */
            int top_row, height;
            editor_layout(a, &top_row, &height);
            t->top = sl > height / 2 ? sl - height / 2 : 0;
            tab_request_viewport(a, t);
        }
        chain_finish(a, t);
        return;
    }
    buf cursors = BUF_INIT;
    for (int i = 0; i < t->cursor_count; i++) {
        cursor *k = &t->cursors[i];
        if (k->line == sl && k->col == ec) {
            app_message(a, false, "Every occurrence has a cursor");
            buf_free(&cursors);
            chain_end(a);
            return;
        }
        rpc_format(&cursors, "{\"position\":{\"line\":%d,\"column\":%d}", k->line, k->col);
        if (k->has_selection)
            rpc_format(&cursors, ",\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}",
                       k->anchor_line, k->anchor_col, k->line, k->col);
        buf_append_str(&cursors, "},");
    }
    rpc_format(&cursors, "{\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
               el, ec, sl, sc, el, ec);
    app_call(a, "document/setCursors", NULL, 0, "{\"documentId\":%J,\"cursors\":[%s]}", t->doc_id, cursors.data);
    buf_free(&cursors);
    chain_finish(a, t);
}

/* ---- searching a few lines at a time ----
 * The server has no search of a document's text, so a one-line needle is
 * looked for in the lines after the cursor, fetched in chunks that double in
 * size (document/lines): a match nearby costs a few kilobytes, not the whole
 * text, and a 100 MB file is never one answer. */

#define SCAN_FIRST_CHUNK 512
#define SCAN_MAX_CHUNK 65536

static void scan_request(app *a, tab *t);
static void on_content(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error);

static int cols_before(const char *text, size_t bytes)
{
    int cols = 0;
    for (size_t i = 0; i < bytes;) {
        int n;
        utf8_next(text + i, &n);
        i += (size_t)n;
        cols++;
    }
    return cols;
}

static void on_scan_lines(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    search_scan *s = &a->scan;
    tab *t = tab_by_serial(a, serial);
    json_ref lines = json_get(doc, result, "lines");
    if (!t || !a->last_search || error != JSON_NO_REF || json_length(doc, lines) == 0) {
        if (t && error == JSON_NO_REF)
            app_message(a, true, "Not found: %s", a->last_search ? a->last_search : "");
        chain_end(a);
        return;
    }
    const char *needle = a->last_search;
    size_t nlen = strlen(needle);
    arena ar = ARENA_INIT;
    int line = s->next_line;
    for (json_ref l = json_first(doc, lines); l != JSON_NO_REF; l = json_next(doc, l), line++) {
        const char *text;
        size_t len;
        if (!json_string(doc, json_get(doc, l, "text"), &ar, &text, &len))
            continue;
        bool origin_line = line == s->from_line;
        size_t from = origin_line && !s->wrapped ? col_to_byte(text, len, s->from_col) : 0;
        const char *hit = from <= len ? memmem(text + from, len - from, needle, nlen) : NULL;
        if (hit && s->wrapped && origin_line && (size_t)(hit - text) >= col_to_byte(text, len, s->from_col))
            hit = NULL; /* searched already, before wrapping */
        if (hit) {
            int sc = cols_before(text, (size_t)(hit - text));
            int ec = sc + cols_before(hit, nlen);
            arena_free(&ar);
            if (!t->cursor_count) {
                chain_end(a);
                return;
            }
            act_on_match(a, t, (enum content_use)s->use, line, sc, line, ec);
            return;
        }
        if (s->wrapped && line >= s->from_line)
            break;
    }
    arena_free(&ar);
    int next = s->next_line + (int)json_length(doc, lines);
    if (s->wrapped && next > s->from_line) {
        app_message(a, true, "Not found: %s", needle);
        chain_end(a);
        return;
    }
    if (next >= t->line_count) {
        if (s->wrapped) {
            app_message(a, true, "Not found: %s", needle);
            chain_end(a);
            return;
        }
        s->wrapped = true;
        next = 0;
    }
    s->next_line = next;
    if (s->chunk < SCAN_MAX_CHUNK)
        s->chunk *= 2;
    scan_request(a, t);
}

static void scan_request(app *a, tab *t)
{
    search_scan *s = &a->scan;
    int end = s->next_line + s->chunk;
    if (s->wrapped && end > s->from_line + 1)
        end = s->from_line + 1;
    if (!app_call(a, "document/lines", on_scan_lines, t->serial, "{\"documentId\":%J,\"startLine\":%d,\"endLine\":%d}",
                  t->doc_id, s->next_line, end))
        chain_end(a);
}

/* Inside a chain: looks for last_search from the cursors as they are now, and ends the chain. */
static void search_from_cursors(app *a, tab *t, enum content_use use)
{
    if (!t->cursor_count || !a->last_search || !*a->last_search) {
        chain_end(a);
        return;
    }
    if (strchr(a->last_search, '\n')) {
        /* A needle of several lines: the whole text (rare: a selection that spans lines). */
        if (!app_call(a, "document/content", on_content, (t->serial << 2) | use, "{\"documentId\":%J}", t->doc_id))
            chain_end(a);
        return;
    }
    cursor from = search_origin(t, use);
    a->scan = (search_scan){.use = use, .from_line = from.line, .from_col = from.col, .next_line = from.line,
                            .chunk = SCAN_FIRST_CHUNK};
    scan_request(a, t);
}

static void on_content(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum content_use use = (enum content_use)(tag & 3);
    tab *t = tab_by_serial(a, tag >> 2);
    arena ar = ARENA_INIT;
    const char *text;
    size_t len;
    if (!t || !json_string(doc, json_get(doc, result, "content"), &ar, &text, &len)) {
        arena_free(&ar);
        chain_end(a);
        return;
    }
    if (!t->cursor_count) {
        arena_free(&ar);
        chain_end(a);
        return;
    }
    cursor from = search_origin(t, use);
    int sl, sc, el, ec;
    const char *needle = a->last_search;
    bool found = needle && find_in(text, len, needle, from.line, from.col, &sl, &sc, &el, &ec);
    arena_free(&ar);
    if (!found) {
        app_message(a, true, "Not found: %s", needle ? needle : "");
        chain_end(a);
        return;
    }
    act_on_match(a, t, use, sl, sc, el, ec);
}

static void on_word(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t || json_type_of(doc, result) != JSON_OBJECT) {
        chain_end(a);
        return;
    }
    char *word = json_dup_string(doc, json_get(doc, result, "text"));
    json_ref range = json_get(doc, result, "range");
    int sl, sc, el, ec;
    parse_position(doc, json_get(doc, range, "start"), &sl, &sc);
    parse_position(doc, json_get(doc, range, "end"), &el, &ec);
    if (word) {
        free(a->last_search);
        a->last_search = word;
        app_call(a, "document/setCursor", NULL, 0,
                 "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
                 t->doc_id, el, ec, sl, sc, el, ec);
    }
    chain_finish(a, t);
}

static void on_primary_selection(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    json_ref list = json_get(doc, result, "selections");
    if (list == JSON_NO_REF)
        list = result;
    char *first = json_dup_string(doc, json_array_at(doc, list, 0));
    if (!t || !first || !*first) {
        free(first);
        chain_end(a);
        return;
    }
    free(a->last_search);
    a->last_search = first;
    search_from_cursors(a, t, NEXT_OCCURRENCE);
}

static void on_occurrence_cursors(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = chain_tab(a, serial, doc, result);
    bool sent;
    if (!t || !t->cursor_count)
        sent = false;
    else if (!t->cursors[0].has_selection)
        sent = app_call(a, "document/wordAtPosition", on_word, t->serial,
                        "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}", t->doc_id, t->cursors[0].line,
                        t->cursors[0].col);
    else
        sent = app_call(a, "document/selections", on_primary_selection, t->serial, "{\"documentId\":%J}", t->doc_id);
    if (!sent)
        chain_end(a);
}

void editor_next_occurrence(app *a, tab *t)
{
    chain_with_cursors(a, t, on_occurrence_cursors, t->serial);
}

/* ---- prompts' answers ---- */

/* ---- find and replace through the document service ---- */

static void find_options(app *a, buf *out)
{
    rpc_format(out, "\"query\":%J,\"regex\":%b,\"caseSensitive\":%b,\"wholeWord\":%b", a->last_search, a->find_regex,
               a->find_case, a->find_word);
}

static char *find_label(app *a, const char *what)
{
    buf label = BUF_INIT;
    buf_appendf(&label, "[Alt+R regex: %s, Alt+C case: %s, Alt+W word: %s] %s:", a->find_regex ? "on" : "off",
                a->find_case ? "on" : "off", a->find_word ? "on" : "off", what);
    return buf_detach(&label);
}

void editor_find_toggle(app *a, char which)
{
    if (which == 'r')
        a->find_regex = !a->find_regex;
    else if (which == 'c')
        a->find_case = !a->find_case;
    else if (which == 'w')
        a->find_word = !a->find_word;
    if (!a->prompt.active)
        return;
    bool replacing = strstr(a->prompt.label, "] Replace:") != NULL;
    free(a->prompt.label);
    a->prompt.label = find_label(a, replacing ? "Replace" : "Find");
    a->need_paint = true;
}

enum find_step { FIND_FORWARD, FIND_BACKWARD, FIND_TO_REPLACE };

static void replace_ask(app *a, tab *t);
static void replace_send(app *a, tab *t);

/* Which match of how many: every match counted (the whole text scanned, on the
 * server's thread pool for a large one), then those before the one found. */
static void on_find_rank(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    int before = json_int_or(doc, json_get(doc, result, "total"), 0);
    int total = (int)(tag & 0xFFFFFFFFu);
    bool capped = (tag >> 32) & 1;
    if (error == JSON_NO_REF && !a->prompt.active)
        app_message(a, false, "Match %d of %d%s", before + 1, total, capped ? "+" : "");
}

static void on_find_total(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    if (!t || error != JSON_NO_REF || !a->last_search)
        return;
    int total = json_int_or(doc, json_get(doc, result, "total"), 0);
    bool capped = false;
    json_bool(doc, json_get(doc, result, "totalCapped"), &capped);
    buf options = BUF_INIT;
    find_options(a, &options);
    app_call(a, "document/find", on_find_rank, ((uint64_t)capped << 32) | (uint32_t)total,
             "{\"documentId\":%J,%s,\"limit\":1,\"range\":{\"start\":{\"line\":0,\"column\":0},\"end\":{\"line\":%d,\"column\":%d}}}",
             t->doc_id, options.data, a->find_match_line, a->find_match_col);
    buf_free(&options);
}

static void find_send(app *a, tab *t, enum find_step step, bool nearby, int line, int col);

static void on_found(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum find_step step = (enum find_step)(tag & 3);
    bool nearby = (tag >> 2) & 1;
    tab *t = tab_by_serial(a, tag >> 3);
    if (error != JSON_NO_REF) {
        char *msg = json_dup_string(doc, json_get(doc, error, "message"));
        app_message(a, true, "Find: %s", msg ? msg : "the server refused");
        free(msg);
        chain_end(a);
        return;
    }
    json_ref matches = json_get(doc, result, "matches");
    int current = json_int_or(doc, json_get(doc, result, "current"), -1);
    json_ref match = current >= 0 ? json_array_at(doc, matches, (size_t)current) : JSON_NO_REF;
    if (t && match == JSON_NO_REF && nearby) {
        find_send(a, t, step, false, a->find_from_line, a->find_from_col);
        return;
    }
    if (!t || match == JSON_NO_REF) {
        if (step == FIND_TO_REPLACE && a->replaced > 0)
            app_message(a, false, "Replaced %d occurrence%s", a->replaced, a->replaced == 1 ? "" : "s");
        else
            app_message(a, true, "Not found: %s", a->last_search ? a->last_search : "");
        chain_end(a);
        return;
    }
    int sl, sc, el, ec;
    parse_position(doc, json_get(doc, match, "start"), &sl, &sc);
    parse_position(doc, json_get(doc, match, "end"), &el, &ec);
    if (nearby) {
        /* Only the lines near the caret were searched: a match that came round their end is no answer. */
        bool behind = sl < a->find_from_line || (sl == a->find_from_line && sc < a->find_from_col);
        bool ahead = sl > a->find_from_line || (sl == a->find_from_line && sc >= a->find_from_col);
        if (step == FIND_BACKWARD ? ahead : behind) {
            find_send(a, t, step, false, a->find_from_line, a->find_from_col);
            return;
        }
    }
    if (step == FIND_TO_REPLACE && (sl < a->replace_from_line || (sl == a->replace_from_line && sc < a->replace_from_col))) {
        /* Round the end: replacing goes to the end of the document, never again over what was asked. */
        app_message(a, false, "Replaced %d occurrence%s", a->replaced, a->replaced == 1 ? "" : "s");
        chain_end(a);
        return;
    }
    app_call(a, "document/setCursor", NULL, 0,
             "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d},\"selection\":{\"anchor\":{\"line\":%d,\"column\":%d},\"active\":{\"line\":%d,\"column\":%d}}}",
             t->doc_id, el, ec, sl, sc, el, ec);
    int top_row, height;
    editor_layout(a, &top_row, &height);
    if (sl < t->top || sl >= t->top + height) {
        t->top = sl > height / 2 ? sl - height / 2 : 0;
        tab_request_viewport(a, t);
    }
    a->find_match_line = sl;
    a->find_match_col = sc;
    if (step != FIND_TO_REPLACE) {
        buf options = BUF_INIT;
        find_options(a, &options);
        app_call(a, "document/find", on_find_total, t->serial, "{\"documentId\":%J,%s,\"limit\":1}", t->doc_id,
                 options.data);
        buf_free(&options);
    }
    chain_finish(a, t);
    if (step == FIND_TO_REPLACE) {
        a->replace_end_line = el;
        a->replace_end_col = ec;
        if (a->replace_rest)
            replace_send(a, t);
        else
            replace_ask(a, t);
    }
}

static void on_find_cursors(void *ctx, uint64_t tag, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    enum find_step step = (enum find_step)(tag & 3);
    tab *t = chain_tab(a, tag >> 2, doc, result);
    if (!t || !t->cursor_count || !a->last_search) {
        chain_end(a);
        return;
    }
    cursor *k = &t->cursors[0];
    int line = k->line, col = k->col;
    if (step == FIND_TO_REPLACE) {
        bool anchor_first = k->has_selection && (k->anchor_line < line || (k->anchor_line == line && k->anchor_col < col));
        a->replace_from_line = anchor_first ? k->anchor_line : line;
        a->replace_from_col = anchor_first ? k->anchor_col : col;
    }
    if (step == FIND_TO_REPLACE)
        line = a->replace_from_line, col = a->replace_from_col; /* the match selected now is the first asked about */
    if (step == FIND_BACKWARD && k->has_selection &&
        (k->anchor_line < line || (k->anchor_line == line && k->anchor_col < col)))
        line = k->anchor_line, col = k->anchor_col; /* before the match selected now */
    a->find_from_line = line;
    a->find_from_col = col;
    find_send(a, t, step, true, line, col);
}

/* Lines searched first around the caret: a match nearby is found without the whole text. */
#define FIND_NEARBY_LINES 2048

/* Inside a chain: its answer ends it. nearby: only the lines near the caret (the whole text when it is short). */
static void find_send(app *a, tab *t, enum find_step step, bool nearby, int line, int col)
{
    buf params = BUF_INIT;
    find_options(a, &params);
    int last = t->line_count > 0 ? t->line_count - 1 : 0;
    if (nearby && step == FIND_BACKWARD && line > FIND_NEARBY_LINES)
        rpc_format(&params, ",\"range\":{\"start\":{\"line\":%d,\"column\":0},\"end\":{\"line\":%d,\"column\":%d}}",
                   line - FIND_NEARBY_LINES, line, col);
    else if (nearby && step != FIND_BACKWARD && line + FIND_NEARBY_LINES < last)
        rpc_format(&params, ",\"range\":{\"start\":{\"line\":%d,\"column\":0},\"end\":{\"line\":%d,\"column\":0}}",
                   line, line + FIND_NEARBY_LINES);
    else
        nearby = false;
    bool sent = app_call(a, "document/find", on_found, (t->serial << 3) | ((uint64_t)nearby << 2) | step,
                         "{\"documentId\":%J,%s,\"from\":{\"line\":%d,\"column\":%d},\"backwards\":%b,\"limit\":1}",
                         t->doc_id, params.data, line, col, step == FIND_BACKWARD);
    buf_free(&params);
    if (!sent)
        chain_end(a);
}

static void find_from_caret(app *a, tab *t, enum find_step step)
{
    chain_with_cursors(a, t, on_find_cursors, (t->serial << 2) | step);
}

static void find_answered(app *a, const char *answer)
{
    tab *t = app_tab(a);
    if (!answer || !*answer || !t)
        return;
    free(a->last_search);
    a->last_search = xstrdup(answer);
    find_from_caret(a, t, FIND_FORWARD);
}

void editor_find(app *a, tab *t)
{
    char *label = find_label(a, "Find");
    prompt_ask(a, label, a->last_search ? a->last_search : "", find_answered);
    a->prompt.toggles = true;
    free(label);
}

void editor_find_next(app *a, tab *t)
{
    if (a->last_search)
        find_from_caret(a, t, FIND_FORWARD);
    else
        editor_find(a, t);
}

void editor_find_previous(app *a, tab *t)
{
    if (a->last_search)
        find_from_caret(a, t, FIND_BACKWARD);
    else
        editor_find(a, t);
}

/* Interactive replace: each match from the caret to the end of the document
 * is selected and asked about: y replaces it, n leaves it, a replaces it and
 * every one after it, q stops. */
static void on_replaced(void *ctx, uint64_t serial, const json_doc *doc, json_ref result, json_ref error)
{
    app *a = ctx;
    tab *t = tab_by_serial(a, serial);
    a->replaced += json_int_or(doc, json_get(doc, result, "replaced"), 0);
    if (error != JSON_NO_REF || !t) {
        app_message(a, true, "Not replaced");
        return;
    }
    find_from_caret(a, t, FIND_TO_REPLACE);
}

/* The match selected now: document/replace takes the next match from the selection's start. */
static void replace_send(app *a, tab *t)
{
    buf options = BUF_INIT;
    find_options(a, &options);
    rpc_format(&options, ",\"replacement\":%J", a->replace_with ? a->replace_with : "");
    if (!app_call(a, "document/replace", on_replaced, t->serial, "{\"documentId\":%J,%s}", t->doc_id, options.data))
        app_message(a, true, "Not replaced: the server is gone");
    buf_free(&options);
    tab_follow(a, t);
}

static void replace_chosen(app *a, int key)
{
    tab *t = app_tab(a);
    if (!t)
        return;
    if (key == 'y' || key == 'a') {
        a->replace_rest = key == 'a';
        replace_send(a, t);
    } else if (key == 'n') {
        /* Past this match: the caret after it, then the next. */
        app_call(a, "document/setCursor", NULL, 0, "{\"documentId\":%J,\"position\":{\"line\":%d,\"column\":%d}}",
                 t->doc_id, a->replace_end_line, a->replace_end_col);
        find_from_caret(a, t, FIND_TO_REPLACE);
    } else {
        app_message(a, false, "Replaced %d occurrence%s", a->replaced, a->replaced == 1 ? "" : "s");
    }
}

static void replace_ask(app *a, tab *t)
{
    (void)t;
    prompt_choose(a, "Replace this one? (y)es, (n)o, (a)ll the rest, (q)uit", "ynaq", replace_chosen);
}

static void replace_with_answered(app *a, const char *answer)
{
    tab *t = app_tab(a);
    if (!answer || !t || !a->last_search)
        return;
    free(a->replace_with);
    a->replace_with = xstrdup(answer);
    a->replaced = 0;
    a->replace_rest = false;
    find_from_caret(a, t, FIND_TO_REPLACE);
}

static void replace_answered(app *a, const char *answer)
{
    if (!answer || !*answer)
        return;
    free(a->last_search);
    a->last_search = xstrdup(answer);
    prompt_ask(a, "Replace with:", a->replace_with ? a->replace_with : "", replace_with_answered);
}

void editor_replace(app *a, tab *t)
{
    char *label = find_label(a, "Replace");
    prompt_ask(a, label, a->last_search ? a->last_search : "", replace_answered);
    a->prompt.toggles = true;
    free(label);
}
