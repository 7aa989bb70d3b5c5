/* find: searching a document for a literal or a PCRE2 pattern, and replacing
 * what is found.
 *
 * A search is prepared on the loop (the pattern compiled, positions turned
 * into offsets, a snapshot taken) and run wherever its caller likes: on the
 * loop for a small document, on the pool for a large one, since it reads
 * only the snapshot. Matches are collected in document order up to a bound,
 * so a pattern that matches everywhere costs bounded memory.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* How much backtracking one match may do: a pattern that would take
 * minutes (nested quantifiers) fails with a message instead. */
#define FIND_MATCH_LIMIT 10000000u
#define FIND_DEPTH_LIMIT 100000u

typedef struct found {
    size_t start, end;
} found;

struct document_search {
    document_snapshot *snap;
    pcre2_code *re;
    bool whole_word;
    bool backwards;
    size_t from;             /* byte offset the current match is found from */
    size_t lo, hi;           /* the bytes searched */
    size_t limit;            /* matches returned at most */
    ecp_position_encoding enc;
    /* results */
    char *text;              /* the snapshot's bytes (run) */
    size_t len;
    found *all;              /* in document order, at most DOCUMENT_FIND_TOTAL_MAX */
    size_t total;
    bool complete;           /* total is every match, not the bound */
    size_t first;            /* the returned matches are all[first, first + count) */
    size_t count;
    bool has_current;
    size_t current;          /* index among the returned ones */
    document_range *ranges;  /* count of them, in enc */
};

/* Interpreted, PCRE2 checks the text for invalid UTF-8 from the start offset
 * on every call (PCRE2_MATCH_INVALID_UTF ignores PCRE2_NO_UTF_CHECK), so a
 * search of many matches costs the text's length squared: minutes on a
 * megabyte. A pattern JIT refuses is refused, unless JIT works for nothing
 * here (then everything runs interpreted, as it must). */
static bool jit_compiled(pcre2_code *re)
{
    size_t size = 0;
    if (pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0 && pcre2_pattern_info(re, PCRE2_INFO_JITSIZE, &size) == 0 &&
        size > 0)
        return true;
    int code;
    PCRE2_SIZE offset;
    pcre2_code *probe = pcre2_compile((PCRE2_SPTR) "x", 1, PCRE2_UTF, &code, &offset, NULL);
    bool jit_works = probe && pcre2_jit_compile(probe, PCRE2_JIT_COMPLETE) == 0 &&
                     pcre2_pattern_info(probe, PCRE2_INFO_JITSIZE, &size) == 0 && size > 0;
    pcre2_code_free(probe);
    return !jit_works;
}

static int compile(const document_find_options *o, pcre2_code **out, ecp_error *err)
{
    uint32_t flags = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF;
    /* \C matches a byte inside a character and runs only interpreted */
    flags |= o->regex ? PCRE2_MULTILINE | PCRE2_NEVER_BACKSLASH_C : PCRE2_LITERAL;
    if (!o->case_sensitive)
        flags |= PCRE2_CASELESS;
    int code;
    PCRE2_SIZE offset;
    *out = pcre2_compile((PCRE2_SPTR)o->query, o->query_len, flags, &code, &offset, NULL);
    if (!*out) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return ecp_error_set(err, ECP_EINVAL, "query: invalid regular expression at offset %zu: %s", (size_t)offset,
                             (const char *)msg);
    }
    if (!jit_compiled(*out)) {
        pcre2_code_free(*out);
        *out = NULL;
        return ecp_error_set(err, ECP_EINVAL, "query: the pattern cannot be compiled for matching ((*NO_JIT), or what "
                                              "PCRE2's JIT does not support)");
    }
    return 0;
}

/* The byte range a search covers: the given range, else the whole text. */
static int search_bounds(const document *doc, const document_find_options *o, ecp_position_encoding enc, size_t *lo,
                         size_t *hi, ecp_error *err)
{
    *lo = 0;
    *hi = piece_tree_length(doc->tree);
    if (!o->has_range)
        return 0;
    int rc;
    if ((rc = document__offset_of(doc, &o->range.start, enc, lo, err)) != 0 ||
        (rc = document__offset_of(doc, &o->range.end, enc, hi, err)) != 0)
        return rc;
    if (*hi < *lo)
        return ecp_error_set(err, ECP_EINVAL, "range: the end precedes the start");
    return 0;
}

static int check_query(const document_find_options *o, ecp_error *err)
{
    if (o->query_len == 0)
        return ecp_error_set(err, ECP_EINVAL, "query: must not be empty");
    return 0;
}

document_search *document_search_begin(document_service *self, const char *document_id,
                                       const document_find_options *o, ecp_position_encoding enc, ecp_error *err)
{
    document *doc = document__find(self, document_id, err);
    if (!doc || check_query(o, err) != 0)
        return NULL;
    document_search *s = xcalloc(1, sizeof *s);
    s->whole_word = o->whole_word;
    s->backwards = o->backwards;
    s->enc = enc;
    s->limit = o->limit ? o->limit : DOCUMENT_FIND_LIMIT;
    if (search_bounds(doc, o, enc, &s->lo, &s->hi, err) != 0)
        goto fail;
    s->from = o->backwards ? s->hi : s->lo;
    if (o->has_from && document__offset_of(doc, &o->from, enc, &s->from, err) != 0)
        goto fail;
    if (compile(o, &s->re, err) != 0)
        goto fail;
    if (!(s->snap = document__snapshot_of(doc, err)))
        goto fail;
    return s;
fail:
    document_search_free(s);
    return NULL;
}

size_t document_search_length(const document_search *s) { return document_snapshot_length(s->snap); }

static void copy_chunk(void *ctx, const char *p, size_t len)
{
    buf *b = ctx;
    buf_append(b, p, len);
}

static bool word_byte(const char *text, size_t len, size_t at)
{
    return at < len && document__is_word_byte((unsigned char)text[at]);
}

/* Whether [start, end) stands alone: no word character runs on across
 * either edge. */
static bool whole_word_at(const char *text, size_t len, size_t start, size_t end)
{
    if (start > 0 && word_byte(text, len, start - 1) && word_byte(text, len, start))
        return false;
    if (end > start && word_byte(text, len, end) && word_byte(text, len, end - 1))
        return false;
    return true;
}

/* Where to look after an empty match at p: past the character there. */
static size_t step_past(const char *text, size_t len, size_t p)
{
    if (p >= len)
        return len + 1;
    uint32_t cp;
    return p + utf8_decode(text + p, len - p, &cp);
}

/* Calls fn for each match in [lo, hi) of text in order, until it returns
 * false. A match is bounded by hi (PCRE2 sees no text after it). */
typedef bool (*match_fn)(void *ctx, size_t start, size_t end, const PCRE2_SIZE *ov, uint32_t pairs);

static int each_match(pcre2_code *re, bool whole_word, const char *text, size_t lo, size_t hi, match_fn fn,
                      void *ctx, ecp_error *err)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    pcre2_match_context *mc = pcre2_match_context_create(NULL);
    if (!md || !mc) {
        pcre2_match_data_free(md);
        pcre2_match_context_free(mc);
        return ecp_error_set(err, ECP_ENOMEM, "Out of memory while searching");
    }
    pcre2_set_match_limit(mc, FIND_MATCH_LIMIT);
    pcre2_set_depth_limit(mc, FIND_DEPTH_LIMIT);
    int rc = 0;
    size_t at = lo;
    while (at <= hi) {
        int n = pcre2_match(re, (PCRE2_SPTR)text, hi, at, 0, md, mc);
        if (n == PCRE2_ERROR_NOMATCH)
            break;
        if (n < 0) {
            PCRE2_UCHAR msg[256];
            pcre2_get_error_message(n, msg, sizeof msg);
            rc = ecp_error_set(err, ECP_EINVAL, "query: %s", (const char *)msg);
            break;
        }
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t start = ov[0], end = ov[1];
        if (end < start) /* \K can put the start after the end */
            end = start;
        bool keep = !whole_word || whole_word_at(text, hi, start, end);
        if (keep && !fn(ctx, start, end, ov, (uint32_t)n))
            break;
        /* past a match, or (an empty one, or one that is part of a longer
         * word, which may hold a match further in) past one character */
        at = keep && end > start ? end : step_past(text, hi, start);
    }
    pcre2_match_data_free(md);
    pcre2_match_context_free(mc);
    return rc;
}

static bool collect(void *ctx, size_t start, size_t end, const PCRE2_SIZE *ov, uint32_t pairs)
{
    (void)ov;
    (void)pairs;
    document_search *s = ctx;
    if (s->total == DOCUMENT_FIND_TOTAL_MAX) {
        s->complete = false;
        return false;
    }
    if ((s->total & (s->total - 1)) == 0) /* grow at powers of two */
        s->all = xrealloc(s->all, (s->total ? s->total * 2 : 1) * sizeof *s->all);
    s->all[s->total++] = (found){start, end};
    return true;
}

/* {line, column in enc} of offsets taken in ascending order. */
typedef struct position_walk {
    const char *text;
    size_t at;         /* scanned up to here */
    size_t line;
    size_t line_start;
} position_walk;

static document_position walk_to(position_walk *w, size_t offset, ecp_position_encoding enc)
{
    while (w->at < offset) {
        const char *nl = memchr(w->text + w->at, '\n', offset - w->at);
        if (!nl) {
            w->at = offset;
            break;
        }
        w->line++;
        w->at = (size_t)(nl - w->text) + 1;
        w->line_start = w->at;
    }
    doc_units u = document__units_of(w->text + w->line_start, offset - w->line_start);
    return (document_position){w->line, doc_units_get(&u, enc)};
}

int document_search_run(document_search *s, ecp_error *err)
{
    buf text = BUF_INIT;
    size_t len = document_snapshot_length(s->snap);
    buf_reserve(&text, len + 1);
    document_snapshot_read(s->snap, 0, len, copy_chunk, &text, NULL);
    s->text = buf_detach(&text);
    s->len = len;
    s->complete = true;
    int rc = each_match(s->re, s->whole_word, s->text, s->lo, s->hi, collect, s, err);
    if (rc != 0)
        return rc;
    if (s->total == 0)
        return 0;
    /* the current match: the first at or after `from`, or going backwards
     * the last that starts before it; round the end when there is none */
    size_t c;
    if (!s->backwards) {
        c = 0;
        while (c < s->total && s->all[c].start < s->from)
            c++;
        if (c == s->total)
            c = 0;
    } else {
        c = s->total;
        while (c > 0 && s->all[c - 1].start >= s->from)
            c--;
        c = c ? c - 1 : s->total - 1;
    }
    s->count = s->total < s->limit ? s->total : s->limit;
    /* the window runs on from the current match the way the search goes */
    if (!s->backwards)
        s->first = c < s->total - s->count ? c : s->total - s->count;
    else
        s->first = c + 1 >= s->count ? c + 1 - s->count : 0;
    s->has_current = true;
    s->current = c - s->first;
    s->ranges = xmalloc(s->count * sizeof *s->ranges);
    position_walk w = {s->text, 0, 0, 0};
    for (size_t i = 0; i < s->count; i++) {
        const found *m = &s->all[s->first + i];
        s->ranges[i].start = walk_to(&w, m->start, s->enc);
        s->ranges[i].end = walk_to(&w, m->end, s->enc);
    }
    return 0;
}

size_t document_search_total(const document_search *s, bool *complete)
{
    if (complete)
        *complete = s->complete;
    return s->total;
}

size_t document_search_count(const document_search *s) { return s->count; }

const document_range *document_search_match(const document_search *s, size_t index) { return &s->ranges[index]; }

bool document_search_current(const document_search *s, size_t *index)
{
    *index = s->current;
    return s->has_current;
}

void document_search_free(document_search *s)
{
    if (!s)
        return;
    document_snapshot_release(s->snap);
    pcre2_code_free(s->re);
    free_each(s->text, s->all, s->ranges, s);
}

/* ----- replace ---------------------------------------------------------------------- */

typedef struct replacing {
    const char *text;
    const char *replacement;
    size_t replacement_len;
    bool expand;   /* $n groups (regex) */
    bool all;
    size_t from;   /* one: the first match at or after it */
    size_t first_seen_start, first_seen_end; /* one: the first match of all (rounding the end) */
    bool first_seen;
    buf texts;
    found *edits;
    size_t *text_at;
    size_t count, cap;
    bool overflow;
    bool too_large; /* the replacements passed DOC_MAX_INSERT_BYTES */
} replacing;

/* Appends to the replacements while they stay within DOC_MAX_INSERT_BYTES. */
static void put(replacing *r, const char *p, size_t n)
{
    if (r->too_large || n > DOC_MAX_INSERT_BYTES - r->texts.len) {
        r->too_large = true;
        return;
    }
    buf_append(&r->texts, p, n);
}

/* Appends the replacement for one match: `$n` and `${n}` are group n (empty
 * when it did not take part), `$$` is a dollar, any other `$` is itself. */
static void expand(replacing *r, const PCRE2_SIZE *ov, uint32_t pairs)
{
    const char *p = r->replacement, *end = p + r->replacement_len;
    while (p < end) {
        const char *dollar = memchr(p, '$', (size_t)(end - p));
        if (!dollar || !r->expand) {
            put(r, p, (size_t)(end - p));
            return;
        }
        put(r, p, (size_t)(dollar - p));
        p = dollar + 1;
        if (p < end && *p == '$') {
            put(r, "$", 1);
            p++;
            continue;
        }
        bool braced = p < end && *p == '{';
        const char *q = braced ? p + 1 : p;
        size_t group = 0, digits = 0;
        while (q < end && *q >= '0' && *q <= '9' && digits < 3) {
            group = group * 10 + (size_t)(*q - '0');
            q++;
            digits++;
        }
        if (digits == 0 || (braced && (q >= end || *q != '}'))) {
            put(r, "$", 1);
            continue;
        }
        p = braced ? q + 1 : q;
        if (group < pairs && ov[2 * group] != PCRE2_UNSET && ov[2 * group + 1] >= ov[2 * group])
            put(r, r->text + ov[2 * group], ov[2 * group + 1] - ov[2 * group]);
    }
}

static bool replace_one(void *ctx, size_t start, size_t end, const PCRE2_SIZE *ov, uint32_t pairs)
{
    replacing *r = ctx;
    if (!r->all) {
        if (!r->first_seen) {
            r->first_seen = true;
            r->first_seen_start = start;
            r->first_seen_end = end;
        }
        if (start < r->from)
            return true;
    }
    if (r->count == DOCUMENT_FIND_TOTAL_MAX) {
        r->overflow = true;
        return false;
    }
    if (r->count == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 16;
        r->edits = xrealloc(r->edits, r->cap * sizeof *r->edits);
        r->text_at = xrealloc(r->text_at, r->cap * sizeof *r->text_at);
    }
    r->text_at[r->count] = r->texts.len;
    expand(r, ov, pairs);
    if (r->too_large)
        return false;
    r->edits[r->count++] = (found){start, end};
    return r->all;
}

int document_replace_matches(document_service *self, const char *document_id, uint64_t owner,
                             const document_find_options *o, const char *replacement, size_t replacement_len, bool all,
                             ecp_position_encoding enc, uint64_t *version, size_t *replaced, ecp_error *err)
{
    *replaced = 0;
    document *doc;
    int rc = document__writable(self, document_id, version, &doc, err);
    if (rc != 0)
        return rc;
    rc = check_query(o, err);
    size_t lo, hi;
    if (rc != 0 || (rc = search_bounds(doc, o, enc, &lo, &hi, err)) != 0)
        return rc;
    pcre2_code *re;
    if ((rc = compile(o, &re, err)) != 0)
        return rc;
    /* The text as one run: the tree's own when it holds it so (a document
     * just read, or rebuilt by a replace-all), else a copy, which goes
     * before the replacements are made: they keep their own texts. */
    size_t len = piece_tree_length(doc->tree);
    const char *text = piece_tree_flat(doc->tree);
    char *copy = NULL;
    if (!text) {
        copy = xmalloc(len + 1);
        piece_tree_copy(doc->tree, 0, len, copy);
        copy[len] = '\0';
        text = copy;
    }
    const doc_cursor *primary = &document__cursors_of(doc, owner)->items[0];
    replacing r = {
        .text = text,
        .replacement = replacement,
        .replacement_len = replacement_len,
        .expand = o->regex,
        .all = all,
        .from = primary->anchor < primary->active ? primary->anchor : primary->active,
    };
    rc = each_match(re, o->whole_word, text, lo, hi, replace_one, &r, err);
    if (rc == 0 && !all && r.count == 0 && r.first_seen) {
        /* none after the cursor: round to the first */
        r.from = 0;
        r.first_seen = false;
        rc = each_match(re, o->whole_word, text, lo, hi, replace_one, &r, err);
    }
    if (rc == 0 && r.too_large)
        rc = ecp_error_set(err, ECP_EINVAL, "replacement: the replaced text would be more than %zu MiB",
                           DOC_MAX_INSERT_BYTES >> 20);
    if (rc == 0 && r.overflow)
        rc = ecp_error_set(err, ECP_EINVAL, "query: more than %zu matches to replace", (size_t)DOCUMENT_FIND_TOTAL_MAX);
    free(copy);
    if (rc == 0 && r.count) {
        doc_edit *edits = xmalloc(r.count * sizeof *edits);
        for (size_t i = 0; i < r.count; i++)
            edits[i] = (doc_edit){r.edits[i].start, r.edits[i].end,
                                  r.texts.data ? r.texts.data + r.text_at[i] : "",
                                  (i + 1 < r.count ? r.text_at[i + 1] : r.texts.len) - r.text_at[i], i};
        /* one: the caret goes after the replacement, where the next search starts */
        rc = document__apply_sorted(self, doc, owner, edits, r.count, false,
                                    all ? DOC_CURSORS_FOLLOW : DOC_CURSORS_PRIMARY_END, version, err);
        if (rc == 0)
            *replaced = r.count;
        free(edits);
    }
    buf_free(&r.texts);
    free(r.edits);
    free(r.text_at);
    pcre2_code_free(re);
    return rc;
}
