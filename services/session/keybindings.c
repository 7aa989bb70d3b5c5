/* keybindings: the bindings, their canonical keys, `when` clauses, and
 * their persistence (the whole list is rewritten on every change: it is a
 * few hundred rows at most, and one transaction keeps it whole).
 *
 * `when` grammar, loosest first:
 *     or      := and ('||' and)*
 *     and     := unary ('&&' unary)*
 *     unary   := '!' unary | primary
 *     primary := '(' or ')' | name (('==' | '!=') value)?
 *     value   := name | 'quoted' | "quoted"
 * A name is letters, digits and `_ . : -`; `true` and `false` are literals.
 * '(' and '!' nest at most WHEN_MAX_DEPTH deep together: the parser descends
 * once per '(', and a clause may come from any client or from the store.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "map.h"

/* ----- canonical keys ------------------------------------------------------------------------------ */

static bool part_is(const char *p, size_t n, const char *word)
{
    return strlen(word) == n && strncasecmp(p, word, n) == 0;
}

int session_key_canonical(const char *key, char **out, ecp_error *err)
{
    bool ctrl = false, alt = false, shift = false, meta = false;
    const char *base = NULL;
    size_t base_len = 0;
    const char *p = key ? key : "";
    size_t len = strlen(p);
    size_t i = 0;
    while (i < len) {
        /* a part ends at '+', except that a '+' standing alone is the key */
        size_t j = i;
        if (p[j] == '+')
            j++;
        while (j < len && p[j] != '+')
            j++;
        const char *part = p + i;
        size_t n = j - i;
        bool last = j >= len;
        if (!last && (part_is(part, n, "ctrl") || part_is(part, n, "control")))
            ctrl = true;
        else if (!last && (part_is(part, n, "alt") || part_is(part, n, "option")))
            alt = true;
        else if (!last && part_is(part, n, "shift"))
            shift = true;
        else if (!last && (part_is(part, n, "meta") || part_is(part, n, "cmd") || part_is(part, n, "super")))
            meta = true;
        else if (last)
            base = part, base_len = n;
        else
            return ecp_error_set(err, ECP_EINVAL, "key '%s': '%.*s' is not a modifier", p, (int)n, part);
        i = j < len ? j + 1 : j;
    }
    if (!base || base_len == 0)
        return ecp_error_set(err, ECP_EINVAL, "key '%s': no key after the modifiers", p);
    buf b = BUF_INIT;
    if (ctrl)
        buf_append_str(&b, "ctrl+");
    if (alt)
        buf_append_str(&b, "alt+");
    if (shift)
        buf_append_str(&b, "shift+");
    if (meta)
        buf_append_str(&b, "meta+");
    for (size_t k = 0; k < base_len; k++)
        buf_push(&b, (char)tolower((unsigned char)base[k]));
    *out = buf_detach(&b);
    return 0;
}

/* ----- when clauses ------------------------------------------------------------------------------------ */

#define WHEN_MAX_DEPTH 64
#define WHEN_MAX_DEPTH_TEXT "64"

typedef struct when_parser {
    const char *s;
    size_t pos;
    size_t depth; /* '(' and '!' open around pos */
    const session_context_value *ctx; /* NULL: only check the syntax */
    size_t ctx_count;
    ecp_error *err;
    int status;
} when_parser;

static void skip_space(when_parser *p)
{
    while (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')
        p->pos++;
}

static bool fail(when_parser *p, const char *what)
{
    /* a long clause is cut short, so the message still says what is wrong */
    if (!p->status)
        p->status = ecp_error_set(p->err, ECP_EINVAL, "when '%.60s%s': %s at offset %zu", p->s,
                                  strlen(p->s) > 60 ? "..." : "", what, p->pos);
    return false;
}

static bool name_char(char c) { return isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '-'; }

/* Reads a name or a quoted value into [*start, *start + *len). */
static bool read_atom(when_parser *p, const char **start, size_t *len, bool *quoted)
{
    skip_space(p);
    char c = p->s[p->pos];
    *quoted = c == '\'' || c == '"';
    if (*quoted) {
        size_t j = p->pos + 1;
        while (p->s[j] && p->s[j] != c)
            j++;
        if (!p->s[j])
            return fail(p, "unterminated string");
        *start = p->s + p->pos + 1;
        *len = j - p->pos - 1;
        p->pos = j + 1;
        return true;
    }
    size_t j = p->pos;
    while (name_char(p->s[j]))
        j++;
    if (j == p->pos)
        return fail(p, p->s[j] ? "expected a name" : "unexpected end");
    *start = p->s + p->pos;
    *len = j - p->pos;
    p->pos = j;
    return true;
}

static const session_context_value *lookup(when_parser *p, const char *name, size_t len)
{
    for (size_t i = 0; i < p->ctx_count; i++)
        if (strlen(p->ctx[i].name) == len && strncmp(p->ctx[i].name, name, len) == 0)
            return &p->ctx[i];
    return NULL;
}

static bool parse_or(when_parser *p, bool *value);

static bool descend(when_parser *p)
{
    if (++p->depth > WHEN_MAX_DEPTH)
        return fail(p, "the clause nests deeper than " WHEN_MAX_DEPTH_TEXT " ('(' and '!' together)");
    return true;
}

/* *unknown is set when the condition names a key the client did not send:
 * such a condition counts as true, negated or not, as the reference's
 * unknown conditions do. */
static bool parse_primary(when_parser *p, bool *value, bool *unknown)
{
    *unknown = false;
    skip_space(p);
    if (p->s[p->pos] == '(') {
        if (!descend(p))
            return false;
        p->pos++;
        if (!parse_or(p, value))
            return false;
        skip_space(p);
        if (p->s[p->pos] != ')')
            return fail(p, "expected ')'");
        p->pos++;
        p->depth--;
        return true;
    }
    const char *name;
    size_t len;
    bool quoted;
    if (!read_atom(p, &name, &len, &quoted))
        return false;
    if (quoted)
        return fail(p, "a quoted value needs a name and '==' before it");
    skip_space(p);
    bool eq = strncmp(p->s + p->pos, "==", 2) == 0, ne = strncmp(p->s + p->pos, "!=", 2) == 0;
    if (!eq && !ne) {
        if (part_is(name, len, "true") || part_is(name, len, "false")) {
            *value = part_is(name, len, "true");
            return true;
        }
        const session_context_value *v = lookup(p, name, len);
        *unknown = !v && p->ctx;
        *value = !v || (v->string ? v->string[0] != '\0' : v->boolean);
        return true;
    }
    p->pos += 2;
    const char *rhs;
    size_t rlen;
    if (!read_atom(p, &rhs, &rlen, &quoted))
        return false;
    const session_context_value *v = lookup(p, name, len);
    if (!v) {
        *unknown = p->ctx != NULL;
        *value = true;
        return true;
    }
    bool equal = false;
    if (v->string)
        equal = strlen(v->string) == rlen && strncmp(v->string, rhs, rlen) == 0;
    else if (!quoted)
        equal = part_is(rhs, rlen, v->boolean ? "true" : "false");
    *value = eq ? equal : !equal;
    return true;
}

/* Negations are counted, not descended into: only '(' costs a stack frame. */
static bool parse_unary(when_parser *p, bool *value, bool *unknown)
{
    size_t negations = 0;
    for (;;) {
        skip_space(p);
        if (p->s[p->pos] != '!' || p->s[p->pos + 1] == '=')
            break;
        if (!descend(p))
            return false;
        p->pos++;
        negations++;
    }
    if (!parse_primary(p, value, unknown))
        return false;
    p->depth -= negations;
    if (!*unknown && negations % 2)
        *value = !*value;
    return true;
}

/* Takes the two-character operator op when it comes next (after spaces). */
static bool take_operator(when_parser *p, const char *op)
{
    skip_space(p);
    if (strncmp(p->s + p->pos, op, 2) != 0)
        return false;
    p->pos += 2;
    return true;
}

static bool parse_and(when_parser *p, bool *value)
{
    bool unknown;
    if (!parse_unary(p, value, &unknown))
        return false;
    while (take_operator(p, "&&")) {
        bool rhs;
        if (!parse_unary(p, &rhs, &unknown))
            return false;
        *value = *value && rhs;
    }
    return true;
}

static bool parse_or(when_parser *p, bool *value)
{
    if (!parse_and(p, value))
        return false;
    while (take_operator(p, "||")) {
        bool rhs;
        if (!parse_and(p, &rhs))
            return false;
        *value = *value || rhs;
    }
    return true;
}

/* Evaluates (or with ctx NULL, only checks) a clause. */
static int when_eval(const char *when, const session_context_value *ctx, size_t ctx_count, bool *value, ecp_error *err)
{
    when_parser p = {.s = when, .ctx = ctx, .ctx_count = ctx_count, .err = err};
    bool v = false;
    if (parse_or(&p, &v)) {
        skip_space(&p);
        if (p.s[p.pos])
            fail(&p, "unexpected text");
    }
    if (p.status)
        return p.status;
    *value = v;
    return 0;
}

int session__when_eval(const char *when, const session_context_value *ctx, size_t ctx_count, bool *value,
                       ecp_error *err)
{
    return when_eval(when, ctx, ctx_count, value, err);
}

int session_when_check(const char *when, ecp_error *err)
{
    bool v;
    if (!when || !*when)
        return 0;
    return when_eval(when, NULL, 0, &v, err);
}

/* ----- the list ----------------------------------------------------------------------------------------------- */

static void entry_free(keybinding_entry *e)
{
    free_each((char *)e->view.key, (char *)e->view.command, (char *)e->view.when, (char *)e->view.args_json,
              e->canonical);
}

static int entry_make(const session_keybinding *b, keybinding_entry *out, ecp_error *err)
{
    if (!b->key || !*b->key)
        return ecp_error_set(err, ECP_EINVAL, "key: required non-empty string");
    if (!b->command || !*b->command)
        return ecp_error_set(err, ECP_EINVAL, "command: required non-empty string");
    char *canonical;
    int status = session_key_canonical(b->key, &canonical, err);
    if (status < 0)
        return status;
    if ((status = session_when_check(b->when, err)) < 0) {
        free(canonical);
        return status;
    }
    out->canonical = canonical;
    out->view.key = xstrdup(b->key);
    out->view.command = xstrdup(b->command);
    out->view.when = b->when && *b->when ? xstrdup(b->when) : NULL;
    out->view.args_json = b->args_json ? xstrdup(b->args_json) : NULL;
    return 0;
}

const session_keybinding *session_keybindings(session_service *self, size_t *count)
{
    *count = self->binding_count;
    return self->binding_views;
}

static void rebuild_views(session_service *self)
{
    free(self->binding_views);
    self->binding_views = xcalloc(self->binding_count ? self->binding_count : 1, sizeof *self->binding_views);
    for (size_t i = 0; i < self->binding_count; i++)
        self->binding_views[i] = self->bindings[i].view;
    /* Each key press looks its key up: by key, then back through that key's
     * bindings, last first, as the `when` clauses are tried. */
    ecp_map_free(self->binding_last);
    free(self->binding_prev);
    self->binding_last = ecp_map_new();
    self->binding_prev = xcalloc(self->binding_count ? self->binding_count : 1, sizeof *self->binding_prev);
    for (size_t i = 0; i < self->binding_count; i++) {
        void *last = NULL;
        ecp_map_set(self->binding_last, self->bindings[i].canonical, (void *)(uintptr_t)(i + 1), &last);
        self->binding_prev[i] = (size_t)(uintptr_t)last;
    }
}

typedef struct save_op {
    session_keybinding *list; /* owned copies */
    size_t count;
} save_op;

static int save_work(sqlite3 *db, void *data, ecp_error *err)
{
    save_op *op = data;
    int status = store_exec(db, "DELETE FROM keybindings", err);
    if (status < 0)
        return status;
    sqlite3_stmt *st;
    if ((status = store_prepare(db, "INSERT INTO keybindings (position, key, command, when_clause, args) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5)",
                                &st, err)) < 0)
        return status;
    for (size_t i = 0; i < op->count && status == 0; i++) {
        const session_keybinding *b = &op->list[i];
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (sqlite3_int64)i);
        sqlite3_bind_text(st, 2, b->key, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, b->command, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, b->when, -1, SQLITE_STATIC); /* NULL binds null */
        sqlite3_bind_text(st, 5, b->args_json, -1, SQLITE_STATIC);
        int rc = sqlite3_step(st);
        if (rc != SQLITE_DONE)
            status = store_error(db, rc, err, "saving the key bindings");
    }
    sqlite3_finalize(st);
    return status;
}

static void save_free(void *data)
{
    save_op *op = data;
    for (size_t i = 0; i < op->count; i++) {
        free_each((char *)op->list[i].key, (char *)op->list[i].command, (char *)op->list[i].when,
                  (char *)op->list[i].args_json);
    }
    free(op->list);
    free(op);
}

static const store_op_type save_type = {
    .name = "keybindings.save", .transaction = true, .work = save_work, .free_data = save_free,
};

static void persist(session_service *self)
{
    save_op *op = xcalloc(1, sizeof *op);
    op->count = self->binding_count;
    op->list = xcalloc(op->count ? op->count : 1, sizeof *op->list);
    for (size_t i = 0; i < op->count; i++) {
        const session_keybinding *b = &self->bindings[i].view;
        op->list[i].key = xstrdup(b->key);
        op->list[i].command = xstrdup(b->command);
        op->list[i].when = b->when ? xstrdup(b->when) : NULL;
        op->list[i].args_json = b->args_json ? xstrdup(b->args_json) : NULL;
    }
    store_submit(self->store, &save_type, op);
}

static void replace_all(session_service *self, keybinding_entry *entries, size_t count)
{
    for (size_t i = 0; i < self->binding_count; i++)
        entry_free(&self->bindings[i]);
    free(self->bindings);
    self->bindings = entries;
    self->binding_count = count;
    rebuild_views(self);
}

int session_keybindings_set(session_service *self, const session_keybinding *list, size_t count, size_t *bad_index,
                            ecp_error *err)
{
    keybinding_entry *entries = xcalloc(count ? count : 1, sizeof *entries);
    for (size_t i = 0; i < count; i++) {
        int status = entry_make(&list[i], &entries[i], err);
        if (status < 0) {
            for (size_t k = 0; k < i; k++)
                entry_free(&entries[k]);
            free(entries);
            if (bad_index)
                *bad_index = i;
            return status;
        }
    }
    replace_all(self, entries, count);
    persist(self);
    return 0;
}

int session_keybinding_add(session_service *self, const session_keybinding *binding, ecp_error *err)
{
    keybinding_entry fresh = {0};
    int status = entry_make(binding, &fresh, err);
    if (status < 0)
        return status;
    /* Replaces every binding of the same key, in place of the first. */
    size_t n = 0;
    bool placed = false;
    keybinding_entry *entries = xcalloc(self->binding_count + 1, sizeof *entries);
    for (size_t i = 0; i < self->binding_count; i++) {
        keybinding_entry *e = &self->bindings[i];
        if (strcmp(e->canonical, fresh.canonical) == 0) {
            if (!placed)
                entries[n++] = fresh, placed = true;
            entry_free(e);
        } else {
            entries[n++] = *e;
        }
    }
    if (!placed)
        entries[n++] = fresh;
    free(self->bindings);
    self->bindings = NULL;
    self->binding_count = 0;
    replace_all(self, entries, n);
    persist(self);
    return 0;
}

int session_keybinding_remove(session_service *self, const char *key, bool *removed, ecp_error *err)
{
    char *canonical;
    int status = session_key_canonical(key, &canonical, err);
    if (status < 0)
        return status;
    size_t n = 0;
    bool any = false;
    for (size_t i = 0; i < self->binding_count; i++) {
        if (strcmp(self->bindings[i].canonical, canonical) == 0) {
            entry_free(&self->bindings[i]);
            any = true;
        } else {
            self->bindings[n++] = self->bindings[i];
        }
    }
    free(canonical);
    self->binding_count = n;
    rebuild_views(self);
    if (any)
        persist(self);
    if (removed)
        *removed = any;
    return 0;
}

const session_keybinding *session_keybinding_resolve(session_service *self, const session_keypress *press,
                                                     const session_context_value *context, size_t context_count)
{
    buf key = BUF_INIT;
    if (press->ctrl)
        buf_append_str(&key, "ctrl+");
    if (press->alt)
        buf_append_str(&key, "alt+");
    if (press->shift)
        buf_append_str(&key, "shift+");
    if (press->meta)
        buf_append_str(&key, "meta+");
    for (const char *c = press->key ? press->key : ""; *c; c++)
        buf_push(&key, (char)tolower((unsigned char)*c));
    const session_keybinding *found = NULL;
    size_t at = key.data ? (size_t)(uintptr_t)ecp_map_get(self->binding_last, key.data) : 0;
    for (; at && !found; at = self->binding_prev[at - 1]) {
        size_t i = at - 1;
        keybinding_entry *e = &self->bindings[i];
        bool holds = true;
        if (e->view.when && when_eval(e->view.when, context, context_count, &holds, NULL) < 0)
            holds = false;
        if (holds)
            found = &self->binding_views[i];
    }
    buf_free(&key);
    return found;
}

/* ----- loading ---------------------------------------------------------------------------------------------- */

typedef struct load_op {
    session_service *svc;
    buf skipped; /* why each binding that no longer checks was left out, each ending in '\0' */
} load_op;

static int load_work(sqlite3 *db, void *data, ecp_error *err)
{
    load_op *op = data;
    session_service *self = op->svc; /* not serving yet: its list is ours to fill */
    sqlite3_stmt *st;
    int status = store_prepare(db, "SELECT key, command, when_clause, args FROM keybindings ORDER BY position", &st, err);
    if (status < 0)
        return status;
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        session_keybinding b = {
            .key = (const char *)sqlite3_column_text(st, 0),
            .command = (const char *)sqlite3_column_text(st, 1),
            .when = (const char *)sqlite3_column_text(st, 2),
            .args_json = (const char *)sqlite3_column_text(st, 3),
        };
        keybinding_entry e = {0};
        ecp_error why;
        if (entry_make(&b, &e, &why) < 0) {
            buf_append(&op->skipped, why.message, strlen(why.message) + 1);
            continue;
        }
        if (self->binding_count == cap) {
            cap = cap ? cap * 2 : 16;
            self->bindings = xrealloc(self->bindings, cap * sizeof *self->bindings);
        }
        self->bindings[self->binding_count++] = e;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : store_error(db, rc, err, "reading the key bindings");
}

/* On the loop: a saved binding that no longer checks is left out, and said so, rather than stop the start. */
static void load_done(void *data, int status, const ecp_error *err)
{
    load_op *op = data;
    if (status < 0)
        ecp_log(op->svc->log, ECP_LOG_ERROR, "keybindings: %s", err->message);
    for (size_t at = 0; at < op->skipped.len; at += strlen(op->skipped.data + at) + 1) {
        ecp_log(op->svc->log, ECP_LOG_WARN, "keybindings: a saved binding was left out: %s", op->skipped.data + at);
        session__emit_message(op->svc, SESSION_MESSAGE_WARNING, "A saved key binding was left out: %s",
                              op->skipped.data + at);
    }
}

static void load_free(void *data)
{
    load_op *op = data;
    buf_free(&op->skipped);
    free(op);
}

static const store_op_type load_type = {
    .name = "keybindings.load", .work = load_work, .done = load_done, .free_data = load_free,
};

int session__keybindings_init(session_service *self, ecp_error *err)
{
    load_op *op = xcalloc(1, sizeof *op);
    op->svc = self;
    store_submit(self->store, &load_type, op);
    store_flush(self->store);
    rebuild_views(self);
    (void)err;
    return 0;
}

void session__keybindings_free(session_service *self)
{
    for (size_t i = 0; i < self->binding_count; i++)
        entry_free(&self->bindings[i]);
    free(self->bindings);
    free(self->binding_views);
    ecp_map_free(self->binding_last);
    free(self->binding_prev);
    self->bindings = NULL;
    self->binding_views = NULL;
    self->binding_last = NULL;
    self->binding_prev = NULL;
    self->binding_count = 0;
}
