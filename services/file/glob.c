#include "glob.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "interface.h"
#include "utf.h"

/* Brace expansion multiplies patterns; past this many, the pattern is an
 * attack or a mistake, not a file selection. */
#define MAX_ALTERNATIVES 1024

enum seg_kind { SEG_LITERAL, SEG_WILD, SEG_GLOBSTAR };

typedef struct seg {
    enum seg_kind kind;
    char *text; /* literal: unescaped bytes; wild: the pattern with escapes */
    size_t len;
} seg;

typedef struct alt {
    seg *segs;
    size_t n;
} alt;

struct file__glob {
    alt *alts;
    size_t n;
    unsigned flags;
};

/* ----- validation and brace expansion --------------------------------------- */

/* Offset just past the ']' that closes the class opening at p, or 0 if it is
 * never closed within the segment. */
static size_t class_end(const char *s, size_t p, size_t len)
{
    size_t i = p + 1;
    if (i < len && (s[i] == '!' || s[i] == '^'))
        i++;
    if (i < len && s[i] == ']')
        i++; /* a ']' first in the set is literal */
    for (; i < len; i++) {
        if (s[i] == '\\' && i + 1 < len) {
            i++;
            continue;
        }
        if (s[i] == '/')
            return 0;
        if (s[i] == ']')
            return i + 1;
    }
    return 0;
}

static int validate(const char *s, size_t len, ecp_error *err)
{
    size_t depth = 0, open_at = 0, groups = 0, segments = 1;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (c == '\\') {
            if (i + 1 == len)
                return ecp_error_set(err, ECP_EINVAL, "trailing backslash at offset %zu", i);
            i++;
        } else if (c == '[') {
            size_t end = class_end(s, i, len);
            if (!end)
                return ecp_error_set(err, ECP_EINVAL, "unclosed '[' at offset %zu", i);
            i = end - 1;
        } else if (c == '{') {
            if (depth++ == 0)
                open_at = i;
            if (depth > FILE__GLOB_MAX_BRACE_DEPTH)
                return ecp_error_set(err, ECP_EINVAL, "pattern nests braces deeper than %d (offset %zu)",
                                     FILE__GLOB_MAX_BRACE_DEPTH, i);
            if (++groups > FILE__GLOB_MAX_BRACE_GROUPS)
                return ecp_error_set(err, ECP_EINVAL, "pattern has more than %d brace groups (offset %zu)",
                                     FILE__GLOB_MAX_BRACE_GROUPS, i);
        } else if (c == '}' && depth > 0) {
            depth--;
        } else if (c == '/' && ++segments > FILE__GLOB_MAX_SEGMENTS) {
            return ecp_error_set(err, ECP_EINVAL, "pattern has more than %d path segments (offset %zu)",
                                 FILE__GLOB_MAX_SEGMENTS, i);
        }
    }
    if (depth)
        return ecp_error_set(err, ECP_EINVAL, "unclosed '{' at offset %zu", open_at);
    return 0;
}

void file__strlist_push(file__strlist *l, char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->items = xrealloc(l->items, l->cap * sizeof *l->items);
    }
    l->items[l->n++] = s;
}

void file__strlist_free(file__strlist *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

/* The offset of the first top-level '{' of s (validated), or len. */
static size_t first_group(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\\')
            i++;
        else if (s[i] == '[')
            i = class_end(s, i, len) - 1;
        else if (s[i] == '{')
            return i;
    }
    return len;
}

/* Expands every brace group of pattern (validated) into out, in order. The
 * strings still holding groups wait on a stack, not in the call chain, so a
 * long chain of groups costs heap, not stack; the bytes written on the way are
 * bounded too, so an expansion that would take long fails early instead. */
static int expand(const char *pattern, size_t plen, file__strlist *out, ecp_error *err)
{
    file__strlist pending = {0};
    size_t produced = 0;
    file__strlist_push(&pending, xstrndup(pattern, plen));
    size_t starts[MAX_ALTERNATIVES + 1];
    int rc = 0;
    while (pending.n && rc == 0) {
        char *s = pending.items[--pending.n];
        size_t len = strlen(s);
        size_t open = first_group(s, len);
        if (open == len) {
            if (out->n >= MAX_ALTERNATIVES)
                rc = ecp_error_set(err, ECP_EINVAL, "pattern expands to more than %d alternatives", MAX_ALTERNATIVES);
            else
                file__strlist_push(out, s), s = NULL;
            free(s);
            continue;
        }
        /* the matching '}' and the top-level commas in between */
        size_t depth = 0, close = len, nalts = 0;
        starts[nalts++] = open + 1;
        for (size_t i = open + 1; i < len && rc == 0; i++) {
            if (s[i] == '\\') {
                i++;
            } else if (s[i] == '[') {
                i = class_end(s, i, len) - 1;
            } else if (s[i] == '{') {
                depth++;
            } else if (s[i] == '}') {
                if (depth == 0) {
                    close = i;
                    break;
                }
                depth--;
            } else if (s[i] == ',' && depth == 0) {
                if (nalts == MAX_ALTERNATIVES)
                    rc = ecp_error_set(err, ECP_EINVAL, "pattern expands to more than %d alternatives",
                                       MAX_ALTERNATIVES);
                else
                    starts[nalts++] = i + 1;
            }
        }
        /* pushed last first, so the first alternative comes out first */
        for (size_t a = nalts; a-- > 0 && rc == 0;) {
            size_t end = a + 1 < nalts ? starts[a + 1] - 1 : close;
            size_t n = open + (end - starts[a]) + (len - close - 1);
            produced += n;
            if (produced > FILE__GLOB_MAX_EXPANSION) {
                rc = ecp_error_set(err, ECP_EINVAL, "pattern expands to more than %d bytes", FILE__GLOB_MAX_EXPANSION);
                break;
            }
            buf b = BUF_INIT;
            buf_reserve(&b, n + 1);
            buf_append(&b, s, open);
            buf_append(&b, s + starts[a], end - starts[a]);
            buf_append(&b, s + close + 1, len - close - 1);
            file__strlist_push(&pending, b.data ? buf_detach(&b) : xstrdup(""));
        }
        free(s);
    }
    file__strlist_free(&pending);
    return rc;
}

/* ----- compiling ---------------------------------------------------------- */

static bool has_meta(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (strchr("*?[\\", s[i]) && s[i] != '\0')
            return true;
    return false;
}

bool file__glob_is_literal(const char *pattern)
{
    return strpbrk(pattern, "*?[{\\") == NULL;
}

static void compile_alt(const char *s, unsigned flags, alt *out)
{
    size_t cap = 4;
    out->segs = xmalloc(cap * sizeof *out->segs);
    out->n = 0;
    bool has_slash = memchr(s, '/', strlen(s)) != NULL;
    if ((flags & FILE__GLOB_BASENAME) && !has_slash) {
        out->segs[out->n++] = (seg){SEG_GLOBSTAR, NULL, 0};
    }
    const char *p = s;
    while (*p) {
        const char *slash = strchr(p, '/');
        size_t len = slash ? (size_t)(slash - p) : strlen(p);
        bool skip = len == 0 || (len == 1 && p[0] == '.');
        if (!skip) {
            if (out->n == cap) {
                cap *= 2;
                out->segs = xrealloc(out->segs, cap * sizeof *out->segs);
            }
            seg sg;
            if (len == 2 && p[0] == '*' && p[1] == '*') {
                sg = (seg){SEG_GLOBSTAR, NULL, 0};
                /* consecutive globstars mean the same as one */
                if (out->n && out->segs[out->n - 1].kind == SEG_GLOBSTAR)
                    goto next;
            } else if (!has_meta(p, len)) {
                sg = (seg){SEG_LITERAL, xstrndup(p, len), len};
            } else if (!strpbrk(p, "*?[") || (size_t)(strpbrk(p, "*?[") - p) >= len) {
                /* only escapes: unescape into a literal */
                char *t = xmalloc(len + 1);
                size_t n = 0;
                for (size_t i = 0; i < len; i++) {
                    if (p[i] == '\\' && i + 1 < len)
                        i++;
                    t[n++] = p[i];
                }
                t[n] = '\0';
                sg = (seg){SEG_LITERAL, t, n};
            } else {
                sg = (seg){SEG_WILD, xstrndup(p, len), len};
            }
            out->segs[out->n++] = sg;
        }
    next:
        if (!slash)
            break;
        p = slash + 1;
    }
}

int file__glob_compile(const char *pattern, unsigned flags, file__glob **out, ecp_error *err)
{
    *out = NULL;
    size_t len = strlen(pattern);
    int rc = validate(pattern, len, err);
    if (rc)
        return rc;
    file__strlist alts = {0};
    rc = expand(pattern, len, &alts, err);
    if (rc) {
        file__strlist_free(&alts);
        return rc;
    }
    file__glob *g = xcalloc(1, sizeof *g);
    g->flags = flags;
    g->n = alts.n;
    g->alts = xcalloc(alts.n ? alts.n : 1, sizeof *g->alts);
    for (size_t i = 0; i < alts.n; i++)
        compile_alt(alts.items[i], flags, &g->alts[i]);
    file__strlist_free(&alts);
    *out = g;
    return 0;
}

int file_glob_check(const char *pattern, ecp_error *err)
{
    file__glob *g;
    int rc = file__glob_compile(pattern, FILE__GLOB_BASENAME | FILE__GLOB_DOT, &g, err);
    file__glob_free(g);
    return rc;
}

void file__glob_free(file__glob *self)
{
    if (!self)
        return;
    for (size_t i = 0; i < self->n; i++) {
        for (size_t j = 0; j < self->alts[i].n; j++)
            free(self->alts[i].segs[j].text);
        free(self->alts[i].segs);
    }
    free(self->alts);
    free(self);
}

/* ----- matching one segment -------------------------------------------------- */

static size_t cp_len(const char *s, size_t n)
{
    uint32_t cp;
    return utf8_decode(s, n, &cp);
}

/* Reads one class member character at p (an escape or a UTF-8 code point). */
static size_t class_char(const char *pat, size_t p, size_t plen, uint32_t *cp)
{
    if (pat[p] == '\\' && p + 1 < plen)
        return 1 + utf8_decode(pat + p + 1, plen - p - 1, cp);
    return utf8_decode(pat + p, plen - p, cp);
}

/* Tests code point c against the class that opens at pat[p]; *end receives
 * the offset just past its ']'. The class was validated as closed. */
static bool class_match(const char *pat, size_t p, size_t plen, uint32_t c, size_t *end)
{
    size_t i = p + 1;
    bool negate = false, hit = false;
    if (i < plen && (pat[i] == '!' || pat[i] == '^')) {
        negate = true;
        i++;
    }
    bool first = true;
    while (i < plen && (pat[i] != ']' || first)) {
        first = false;
        uint32_t lo, hi;
        i += class_char(pat, i, plen, &lo);
        hi = lo;
        if (i + 1 < plen && pat[i] == '-' && pat[i + 1] != ']') {
            i++;
            i += class_char(pat, i, plen, &hi);
        }
        if (c >= lo && c <= hi)
            hit = true;
    }
    *end = i < plen ? i + 1 : plen;
    return hit != negate;
}

bool file__glob_match_segment(const char *pat, size_t plen, const char *name, size_t nlen, bool dot)
{
    if (!dot && nlen > 0 && name[0] == '.') {
        bool literal_dot = (plen > 0 && pat[0] == '.') || (plen > 1 && pat[0] == '\\' && pat[1] == '.');
        if (!literal_dot)
            return false;
    }
    size_t p = 0, n = 0;
    size_t star_p = SIZE_MAX, star_n = 0;
    while (n < nlen) {
        if (p < plen) {
            char c = pat[p];
            if (c == '*') {
                while (p < plen && pat[p] == '*')
                    p++;
                star_p = p;
                star_n = n;
                continue;
            }
            if (c == '?') {
                p++;
                n += cp_len(name + n, nlen - n);
                continue;
            }
            if (c == '[') {
                uint32_t cp;
                size_t cl = utf8_decode(name + n, nlen - n, &cp);
                size_t end;
                if (class_match(pat, p, plen, cp, &end)) {
                    p = end;
                    n += cl;
                    continue;
                }
            } else {
                if (c == '\\' && p + 1 < plen)
                    c = pat[++p];
                if (c == name[n]) {
                    p++;
                    n++;
                    continue;
                }
            }
        }
        if (star_p == SIZE_MAX)
            return false;
        star_n += cp_len(name + star_n, nlen - star_n);
        n = star_n;
        p = star_p;
    }
    while (p < plen && pat[p] == '*')
        p++;
    return p == plen;
}

/* ----- matching paths ------------------------------------------------------- */

typedef struct span {
    const char *s;
    size_t len;
} span;

typedef struct matcher {
    const alt *a;
    const span *names;
    size_t m;
    bool dot;
    bool partial;      /* "could something below match" instead of "does it match" */
    unsigned char *memo; /* (n+1)*(m+1) cells: 1 once a state is known to fail */
} matcher;

static bool seg_match(const seg *sg, const span *name, bool dot)
{
    if (sg->kind == SEG_LITERAL)
        return sg->len == name->len && memcmp(sg->text, name->s, name->len) == 0;
    return file__glob_match_segment(sg->text, sg->len, name->s, name->len, dot);
}

static bool match_from(matcher *mt, size_t si, size_t ni)
{
    size_t n = mt->a->n, m = mt->m;
    unsigned char *cell = &mt->memo[si * (m + 1) + ni];
    if (*cell)
        return false;
    bool ok;
    if (si == n) {
        ok = !mt->partial && ni == m;
    } else if (mt->a->segs[si].kind == SEG_GLOBSTAR) {
        ok = false;
        if (mt->partial && ni == m) {
            ok = true;
        } else if (match_from(mt, si + 1, ni)) {
            ok = true;
        } else {
            for (size_t k = ni; k < m; k++) {
                if (!mt->dot && mt->names[k].len && mt->names[k].s[0] == '.')
                    break;
                /* having taken every name, the globstar still takes what lies below */
                if (mt->partial && k + 1 == m) {
                    ok = true;
                    break;
                }
                if (match_from(mt, si + 1, k + 1)) {
                    ok = true;
                    break;
                }
            }
        }
    } else if (ni == m) {
        ok = mt->partial;
    } else {
        ok = seg_match(&mt->a->segs[si], &mt->names[ni], mt->dot) && match_from(mt, si + 1, ni + 1);
    }
    if (!ok)
        *cell = 1;
    return ok;
}

static bool match_path(const file__glob *self, const char *path, size_t len, bool partial)
{
    span local_names[64];
    span *names = local_names;
    size_t m = 0, cap = 64;
    size_t i = 0;
    while (i < len) {
        while (i < len && path[i] == '/')
            i++;
        if (i == len)
            break;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        if (m == cap) {
            cap *= 2;
            if (names == local_names) {
                names = xmalloc(cap * sizeof *names);
                memcpy(names, local_names, sizeof local_names);
            } else {
                names = xrealloc(names, cap * sizeof *names);
            }
        }
        names[m++] = (span){path + i, j - i};
        i = j;
    }
    bool result = false;
    unsigned char local_memo[1024];
    for (size_t a = 0; a < self->n && !result; a++) {
        const alt *al = &self->alts[a];
        size_t cells = (al->n + 1) * (m + 1);
        unsigned char *memo = cells <= sizeof local_memo ? local_memo : xmalloc(cells);
        memset(memo, 0, cells);
        matcher mt = {al, names, m, (self->flags & FILE__GLOB_DOT) != 0, partial, memo};
        result = match_from(&mt, 0, 0);
        if (memo != local_memo)
            free(memo);
    }
    if (names != local_names)
        free(names);
    return result;
}

bool file__glob_match(const file__glob *self, const char *path, size_t len)
{
    return match_path(self, path, len, false);
}

bool file__glob_could_match_below(const file__glob *self, const char *dir, size_t len)
{
    return match_path(self, dir, len, true);
}
