/* The compiler and checker of rpc_sig.h. Both run without recursion: the
 * compiler keeps its open objects, maps and alternatives on a stack of
 * ECP_SIG_MAX_DEPTH frames, the checker the containers it is inside, so a
 * signature nested too deep is refused when the server starts and a client's
 * params are never walked deeper than their signature goes. */
#include "rpc_sig.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/* ----- named shapes ----------------------------------------------------------- */

/* PROTOCOL.md section 4. Lines and columns are read as sizes, so negative
 * ones are refused. */
static const struct {
    const char *name, *shape;
} named_shapes[] = {
    {"Position", "{line: integer >= 0, column: integer >= 0}"},
    {"Range", "{start: Position, end: Position}"},
    {"Cursor", "{position: Position, selection?: {anchor: Position, active: Position}, desiredColumn?: integer}"},
};
#define NAMED_SHAPES (sizeof named_shapes / sizeof named_shapes[0])

static bool ident_start(char c) { return isalpha((unsigned char)c) || c == '_'; }
static bool ident_char(char c) { return isalnum((unsigned char)c) || c == '_'; }

/* Replaces every named shape by its definition until none is left; the
 * definitions nest two deep, so a few passes end it. */
static char *expand_shapes(const char *text)
{
    char *cur = xstrdup(text);
    for (int pass = 0; pass < 4; pass++) {
        buf out = BUF_INIT;
        bool changed = false;
        for (const char *p = cur; *p;) {
            if (*p == '"') {
                const char *end = strchr(p + 1, '"');
                size_t n = end ? (size_t)(end - p) + 1 : strlen(p);
                buf_append(&out, p, n);
                p += n;
                continue;
            }
            if (!ident_start(*p)) {
                buf_push(&out, *p++);
                continue;
            }
            const char *start = p;
            while (ident_char(*p))
                p++;
            size_t len = (size_t)(p - start), k = 0;
            while (k < NAMED_SHAPES && !(strlen(named_shapes[k].name) == len &&
                                          memcmp(named_shapes[k].name, start, len) == 0))
                k++;
            if (k < NAMED_SHAPES) {
                buf_append_str(&out, named_shapes[k].shape);
                changed = true;
            } else {
                buf_append(&out, start, len);
            }
        }
        buf_push(&out, '\0');
        free(cur);
        cur = out.data;
        if (!changed)
            break;
    }
    return cur;
}

/* ----- lexing ----------------------------------------------------------------- */

typedef enum token_kind { TOK_END, TOK_IDENT, TOK_LITERAL, TOK_NUMBER, TOK_PUNCT, TOK_GE, TOK_LE, TOK_BAD } token_kind;

typedef struct token {
    token_kind kind;
    const char *start;
    size_t len;
    char punct;
} token;

typedef struct parser {
    const char *text; /* expanded */
    size_t pos;
    ecp_sig_node *nodes;
    size_t count, cap;
    size_t *name_at; /* per node: offset in names + 1, 0 for none */
    buf names;
    ecp_error *err;
    const char *original;
} parser;

static token lex(parser *p)
{
    const char *s = p->text + p->pos;
    while (*s == ' ')
        s++;
    token t = {.start = s};
    if (!*s) {
        t.kind = TOK_END;
    } else if (ident_start(*s)) {
        while (ident_char(s[t.len]))
            t.len++;
        t.kind = TOK_IDENT;
    } else if (*s == '"') {
        const char *end = strchr(s + 1, '"');
        t.kind = end && end > s + 1 ? TOK_LITERAL : TOK_BAD;
        t.len = end ? (size_t)(end - s) + 1 : strlen(s);
    } else if (isdigit((unsigned char)*s) || (*s == '-' && isdigit((unsigned char)s[1]))) {
        t.len = 1;
        while (isdigit((unsigned char)s[t.len]))
            t.len++;
        t.kind = TOK_NUMBER;
    } else if ((*s == '>' || *s == '<') && s[1] == '=') {
        t.kind = *s == '>' ? TOK_GE : TOK_LE;
        t.len = 2;
    } else if (strchr("{}[]:,?|", *s)) {
        t.kind = TOK_PUNCT;
        t.punct = *s;
        t.len = 1;
    } else {
        t.kind = TOK_BAD;
        t.len = 1;
    }
    p->pos = (size_t)(t.start + t.len - p->text);
    return t;
}

static token peek(parser *p)
{
    size_t pos = p->pos;
    token t = lex(p);
    p->pos = pos;
    return t;
}

static bool is_punct(token t, char c) { return t.kind == TOK_PUNCT && t.punct == c; }

static bool accept(parser *p, char c)
{
    if (!is_punct(peek(p), c))
        return false;
    lex(p);
    return true;
}

static int refuse(parser *p, token at, const char *what)
{
    return ecp_error_set(p->err, ECP_EINVAL, "params signature \"%s\": %s at \"%.20s\"", p->original, what,
                         at.kind == TOK_END ? "(end)" : at.start);
}

static int expect(parser *p, char c)
{
    token t = lex(p);
    if (is_punct(t, c))
        return 0;
    char what[16];
    snprintf(what, sizeof what, "expected '%c'", c);
    return refuse(p, t, what);
}

static uint32_t new_node(parser *p, ecp_sig_type type)
{
    if (p->count == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 16;
        p->nodes = xrealloc(p->nodes, p->cap * sizeof *p->nodes);
        p->name_at = xrealloc(p->name_at, p->cap * sizeof *p->name_at);
    }
    p->nodes[p->count] = (ecp_sig_node){.type = type, .child = ECP_SIG_NONE, .next = ECP_SIG_NONE,
                                        .parent = ECP_SIG_NONE};
    p->name_at[p->count] = 0;
    return (uint32_t)p->count++;
}

static void set_name(parser *p, uint32_t node, const char *s, size_t len)
{
    p->name_at[node] = p->names.len + 1;
    buf_append(&p->names, s, len);
    buf_push(&p->names, '\0');
}

static void add_child(parser *p, uint32_t parent, uint32_t *last, uint32_t child)
{
    if (*last == ECP_SIG_NONE)
        p->nodes[parent].child = child;
    else
        p->nodes[*last].next = child;
    p->nodes[child].parent = parent;
    *last = child;
}

/* An open object, map or list of alternatives, waiting for its next type. */
typedef struct open_frame {
    ecp_sig_type type;
    uint32_t node, last;
    const char *field; /* an object's field whose type comes next */
    size_t field_len;
    bool optional;
} open_frame;

static int field_header(parser *p, open_frame *f)
{
    token t = lex(p);
    if (t.kind != TOK_IDENT)
        return refuse(p, t, "expected a field name");
    f->field = t.start;
    f->field_len = t.len;
    f->optional = accept(p, '?');
    return expect(p, ':');
}

static int limits(parser *p, uint32_t node)
{
    for (;;) {
        token op = peek(p);
        if (op.kind != TOK_GE && op.kind != TOK_LE)
            return 0;
        lex(p);
        token n = lex(p);
        if (n.kind != TOK_NUMBER || n.len > 18)
            return refuse(p, n, "expected an integer limit");
        int64_t v = strtoll(n.start, NULL, 10);
        if (op.kind == TOK_GE) {
            p->nodes[node].has_min = true;
            p->nodes[node].min = v;
        } else {
            p->nodes[node].has_max = true;
            p->nodes[node].max = v;
        }
    }
}

static const struct {
    const char *word;
    ecp_sig_type type;
} scalar_words[] = {
    {"string", ECP_SIG_STRING}, {"integer", ECP_SIG_INTEGER}, {"number", ECP_SIG_NUMBER},
    {"boolean", ECP_SIG_BOOLEAN}, {"object", ECP_SIG_OBJECT}, {"any", ECP_SIG_ANY},
};

/* Parses the start of one type: a whole one (a scalar, a literal, "{}"), or
 * opens an object or a map on the stack. Returns the node when whole,
 * ECP_SIG_NONE when it opened a frame, and sets *failed on an error. */
static uint32_t type_start(parser *p, open_frame *stack, size_t *depth, bool *failed)
{
    token t = lex(p);
    *failed = true;
    if (t.kind == TOK_LITERAL) {
        uint32_t n = new_node(p, ECP_SIG_LITERAL);
        set_name(p, n, t.start + 1, t.len - 2);
        *failed = false;
        return n;
    }
    if (t.kind == TOK_IDENT) {
        for (size_t k = 0; k < sizeof scalar_words / sizeof scalar_words[0]; k++) {
            if (strlen(scalar_words[k].word) == t.len && memcmp(scalar_words[k].word, t.start, t.len) == 0) {
                ecp_sig_type type = scalar_words[k].type;
                uint32_t n = new_node(p, type);
                if ((type == ECP_SIG_INTEGER || type == ECP_SIG_NUMBER) && limits(p, n) != 0)
                    return ECP_SIG_NONE;
                *failed = false;
                return n;
            }
        }
        refuse(p, t, "unknown type");
        return ECP_SIG_NONE;
    }
    if (!is_punct(t, '{')) {
        refuse(p, t, "expected a type");
        return ECP_SIG_NONE;
    }
    if (accept(p, '}')) {
        *failed = false;
        return new_node(p, ECP_SIG_OBJECT);
    }
    if (*depth == ECP_SIG_MAX_DEPTH) {
        refuse(p, t, "nested too deep");
        return ECP_SIG_NONE;
    }
    open_frame *f = &stack[(*depth)++];
    *f = (open_frame){.last = ECP_SIG_NONE};
    if (accept(p, '[')) {
        token key = lex(p);
        if (key.kind != TOK_IDENT)
            return refuse(p, key, "expected a key name"), ECP_SIG_NONE;
        if (accept(p, ':')) {
            token ty = lex(p);
            if (ty.kind != TOK_IDENT || ty.len != 6 || memcmp(ty.start, "string", 6) != 0)
                return refuse(p, ty, "a key is a string"), ECP_SIG_NONE;
        }
        if (expect(p, ']') != 0 || expect(p, ':') != 0)
            return ECP_SIG_NONE;
        f->type = ECP_SIG_MAP;
        f->node = new_node(p, ECP_SIG_MAP);
    } else {
        f->type = ECP_SIG_OBJECT;
        f->node = new_node(p, ECP_SIG_OBJECT);
        if (field_header(p, f) != 0)
            return ECP_SIG_NONE;
    }
    *failed = false;
    return ECP_SIG_NONE;
}

static size_t depth_of(const parser *p, uint32_t node)
{
    size_t depth = 0;
    for (uint32_t n = node; n != ECP_SIG_NONE; n = p->nodes[n].parent)
        if (p->nodes[n].type == ECP_SIG_OBJECT || p->nodes[n].type == ECP_SIG_MAP || p->nodes[n].type == ECP_SIG_ARRAY)
            depth++;
    return depth;
}

static int parse(parser *p, uint32_t *root)
{
    open_frame stack[ECP_SIG_MAX_DEPTH];
    size_t depth = 0;
    for (;;) {
        bool failed;
        uint32_t done = type_start(p, stack, &depth, &failed);
        if (failed)
            return ECP_EINVAL;
        if (done == ECP_SIG_NONE)
            continue; /* an object or a map opened: its first type comes next */
        for (;;) {
            while (is_punct(peek(p), '[')) {
                lex(p);
                if (expect(p, ']') != 0)
                    return ECP_EINVAL;
                uint32_t array = new_node(p, ECP_SIG_ARRAY), last = ECP_SIG_NONE;
                add_child(p, array, &last, done);
                done = array;
            }
            open_frame *top = depth ? &stack[depth - 1] : NULL;
            if (accept(p, '|')) {
                if (!top || top->type != ECP_SIG_UNION) {
                    if (depth == ECP_SIG_MAX_DEPTH)
                        return refuse(p, peek(p), "nested too deep");
                    top = &stack[depth++];
                    *top = (open_frame){.type = ECP_SIG_UNION, .node = new_node(p, ECP_SIG_UNION),
                                        .last = ECP_SIG_NONE};
                }
                add_child(p, top->node, &top->last, done);
                break; /* the next alternative */
            }
            if (!top) {
                token end = lex(p);
                if (end.kind != TOK_END)
                    return refuse(p, end, "expected the end");
                *root = done;
                return 0;
            }
            if (top->type == ECP_SIG_UNION) {
                add_child(p, top->node, &top->last, done);
                done = top->node;
                depth--;
                continue;
            }
            if (top->type == ECP_SIG_MAP) {
                add_child(p, top->node, &top->last, done);
                if (expect(p, '}') != 0)
                    return ECP_EINVAL;
                done = top->node;
                depth--;
                continue;
            }
            for (uint32_t f = p->nodes[top->node].child; f != ECP_SIG_NONE; f = p->nodes[f].next) {
                const char *name = p->names.data + p->name_at[f] - 1;
                if (strlen(name) == top->field_len && memcmp(name, top->field, top->field_len) == 0)
                    return refuse(p, peek(p), "a field named twice");
            }
            set_name(p, done, top->field, top->field_len);
            p->nodes[done].optional = top->optional;
            add_child(p, top->node, &top->last, done);
            if (accept(p, ',')) {
                if (field_header(p, top) != 0)
                    return ECP_EINVAL;
                break; /* the next field's type */
            }
            if (expect(p, '}') != 0)
                return ECP_EINVAL;
            done = top->node;
            depth--;
        }
    }
}

int ecp_sig_compile(const char *text, ecp_sig *out, ecp_error *err)
{
    memset(out, 0, sizeof *out);
    out->root = ECP_SIG_NONE;
    if (!text)
        return ecp_error_set(err, ECP_EINVAL, "no params signature");
    parser p = {.text = expand_shapes(text), .err = err, .original = text};
    uint32_t root = ECP_SIG_NONE;
    int rc = parse(&p, &root);
    if (rc == 0 && p.nodes[root].type != ECP_SIG_OBJECT && p.nodes[root].type != ECP_SIG_ANY)
        rc = ecp_error_set(err, ECP_EINVAL, "params signature \"%s\": params are an object or any", text);
    for (size_t n = 0; rc == 0 && n < p.count; n++)
        if (depth_of(&p, (uint32_t)n) > ECP_SIG_MAX_DEPTH)
            rc = ecp_error_set(err, ECP_EINVAL, "params signature \"%s\": nested deeper than %d", text,
                               ECP_SIG_MAX_DEPTH);
    free((char *)p.text);
    if (rc != 0) {
        free(p.nodes);
        free(p.name_at);
        buf_free(&p.names);
        return rc;
    }
    out->nodes = p.nodes;
    out->count = p.count;
    out->root = root;
    out->names = p.names.data ? p.names.data : xstrdup("");
    for (size_t n = 0; n < p.count; n++)
        out->nodes[n].name = p.name_at[n] ? out->names + p.name_at[n] - 1 : NULL;
    free(p.name_at);
    return 0;
}

void ecp_sig_free(ecp_sig *sig)
{
    free(sig->nodes);
    free(sig->names);
    memset(sig, 0, sizeof *sig);
    sig->root = ECP_SIG_NONE;
}

/* ----- checking ----------------------------------------------------------------- */

static const char *base_name(ecp_sig_type type)
{
    switch (type) {
    case ECP_SIG_ANY: return "value";
    case ECP_SIG_STRING:
    case ECP_SIG_LITERAL: return "string";
    case ECP_SIG_INTEGER: return "integer";
    case ECP_SIG_NUMBER: return "number";
    case ECP_SIG_BOOLEAN: return "boolean";
    case ECP_SIG_OBJECT:
    case ECP_SIG_MAP: return "object";
    case ECP_SIG_ARRAY: return "array";
    case ECP_SIG_UNION: break;
    }
    return "value";
}

const char *ecp_sig_type_name(const ecp_sig *sig, uint32_t node, char *dst, size_t cap)
{
    const ecp_sig_node *n = &sig->nodes[node];
    if (n->type != ECP_SIG_UNION)
        return base_name(n->type);
    size_t len = 0;
    dst[0] = '\0';
    for (uint32_t a = n->child; a != ECP_SIG_NONE; a = sig->nodes[a].next) {
        const char *name = base_name(sig->nodes[a].type);
        bool seen = false; /* "up"|"down" is one string */
        for (uint32_t b = n->child; b != a; b = sig->nodes[b].next)
            seen = seen || strcmp(base_name(sig->nodes[b].type), name) == 0;
        if (!seen && len < cap)
            len += (size_t)snprintf(dst + len, cap - len, "%s%s", len ? " or " : "", name);
    }
    return dst;
}

/* Whether value is of the node's JSON type and within its limits (the
 * contents of containers aside). */
static bool fits(const ecp_sig_node *n, const json_doc *doc, json_ref value)
{
    json_type type = json_type_of(doc, value);
    int64_t i;
    double d;
    switch (n->type) {
    case ECP_SIG_ANY: return true;
    case ECP_SIG_STRING: return type == JSON_STRING;
    case ECP_SIG_LITERAL: return type == JSON_STRING && json_string_eq(doc, value, n->name);
    case ECP_SIG_INTEGER:
        return json_int64(doc, value, &i) && (!n->has_min || i >= n->min) && (!n->has_max || i <= n->max);
    case ECP_SIG_NUMBER:
        return json_double(doc, value, &d) && (!n->has_min || d >= (double)n->min) &&
               (!n->has_max || d <= (double)n->max);
    case ECP_SIG_BOOLEAN: return type == JSON_BOOL;
    case ECP_SIG_OBJECT:
    case ECP_SIG_MAP: return type == JSON_OBJECT;
    case ECP_SIG_ARRAY: return type == JSON_ARRAY;
    case ECP_SIG_UNION: break;
    }
    return false;
}

typedef struct checker {
    const ecp_sig *sig;
    const json_doc *doc;
    char path[256];
    size_t path_len;
    char *message;
    size_t cap;
} checker;

static void path_append(checker *c, const char *fmt, const char *s, size_t len, size_t index)
{
    size_t room = sizeof c->path - c->path_len;
    int n = s ? snprintf(c->path + c->path_len, room, fmt, (int)len, s) : snprintf(c->path + c->path_len, room, fmt, index);
    c->path_len = n < 0 ? c->path_len : c->path_len + ((size_t)n < room ? (size_t)n : room - 1);
}

/* What path_append(c, ".%.*s" or "%.*s", name, len, 0) writes, without a
 * format to interpret: this runs for every field of every request. */
static void path_append_name(checker *c, const char *name, size_t len)
{
    size_t room = sizeof c->path - c->path_len, dot = c->path_len ? 1 : 0;
    size_t n = dot + len < room ? dot + len : room - 1;
    char *dst = c->path + c->path_len;
    if (n && dot)
        dst[0] = '.';
    if (n > dot)
        memcpy(dst + dot, name, n - dot);
    dst[n] = '\0';
    c->path_len += n;
}

static bool fail_type(checker *c, uint32_t node, json_ref value)
{
    char names[96];
    snprintf(c->message, c->cap, "%s: expected %s, got %s", c->path, ecp_sig_type_name(c->sig, node, names, sizeof names),
             json_type_name(json_type_of(c->doc, value)));
    return false;
}

/* A string among literals that matches none of them: "must be up, down or left, got \"x\"". */
static bool fail_literal(checker *c, uint32_t node, json_ref value)
{
    const ecp_sig_node *n = &c->sig->nodes[node];
    uint32_t first = n->type == ECP_SIG_UNION ? n->child : node;
    buf list = BUF_INIT;
    for (uint32_t a = first; a != ECP_SIG_NONE; a = n->type == ECP_SIG_UNION ? c->sig->nodes[a].next : ECP_SIG_NONE) {
        if (c->sig->nodes[a].type != ECP_SIG_LITERAL)
            continue;
        uint32_t next = a;
        do
            next = n->type == ECP_SIG_UNION ? c->sig->nodes[next].next : ECP_SIG_NONE;
        while (next != ECP_SIG_NONE && c->sig->nodes[next].type != ECP_SIG_LITERAL);
        buf_appendf(&list, "%s%s", list.len == 0 ? "" : next == ECP_SIG_NONE ? " or " : ", ", c->sig->nodes[a].name);
    }
    size_t raw_len;
    const char *raw = json_raw(c->doc, value, &raw_len);
    snprintf(c->message, c->cap, "%s: must be %s, got %.*s", c->path, list.data ? list.data : "",
             (int)(raw_len > 80 ? 80 : raw_len), raw);
    buf_free(&list);
    return false;
}

static bool fail_limit(checker *c, const ecp_sig_node *n, json_ref value)
{
    size_t raw_len;
    const char *raw = json_raw(c->doc, value, &raw_len);
    double d = 0;
    json_double(c->doc, value, &d);
    bool below = n->has_min && d < (double)n->min;
    snprintf(c->message, c->cap, "%s: must be %s %" PRId64 ", got %.*s", c->path, below ? ">=" : "<=",
             below ? n->min : n->max, (int)(raw_len > 40 ? 40 : raw_len), raw);
    return false;
}

/* The node of `node` (itself, or one of its alternatives) that value fits, or
 * ECP_SIG_NONE after writing why none does. */
static uint32_t resolve(checker *c, uint32_t node, json_ref value)
{
    const ecp_sig_node *n = &c->sig->nodes[node];
    json_type type = json_type_of(c->doc, value);
    if (n->type != ECP_SIG_UNION) {
        if (fits(n, c->doc, value))
            return node;
        if (n->type == ECP_SIG_LITERAL && type == JSON_STRING)
            fail_literal(c, node, value);
        else if ((n->type == ECP_SIG_INTEGER || n->type == ECP_SIG_NUMBER) && type == JSON_NUMBER &&
                 (n->type == ECP_SIG_NUMBER || json_int64(c->doc, value, &(int64_t){0})))
            fail_limit(c, n, value);
        else
            fail_type(c, node, value);
        return ECP_SIG_NONE;
    }
    bool literal_string = false;
    for (uint32_t a = n->child; a != ECP_SIG_NONE; a = c->sig->nodes[a].next) {
        if (fits(&c->sig->nodes[a], c->doc, value))
            return a;
        literal_string = literal_string || (c->sig->nodes[a].type == ECP_SIG_LITERAL && type == JSON_STRING);
    }
    if (literal_string)
        fail_literal(c, node, value);
    else
        fail_type(c, node, value);
    return ECP_SIG_NONE;
}

/* A container being walked: its node, its JSON value, where in it the walk is. */
typedef struct walk_frame {
    uint32_t node;
    json_ref value;
    uint32_t field;  /* an object's next field */
    json_ref item;   /* an array's next element, a map's next key */
    size_t index;
    size_t path_len;
} walk_frame;

bool ecp_sig_check(const ecp_sig *sig, const json_doc *doc, json_ref params, char *message, size_t cap)
{
    if (!sig->nodes || sig->root == ECP_SIG_NONE || sig->nodes[sig->root].type != ECP_SIG_OBJECT)
        return true;
    checker c = {.sig = sig, .doc = doc, .message = message, .cap = cap};
    walk_frame stack[ECP_SIG_MAX_DEPTH + 1];
    size_t depth = 0;
    json_ref top_value = params != JSON_NO_REF && json_type_of(doc, params) == JSON_OBJECT ? params : JSON_NO_REF;
    stack[depth++] = (walk_frame){.node = sig->root, .value = top_value, .field = sig->nodes[sig->root].child};
    while (depth > 0) {
        walk_frame *f = &stack[depth - 1];
        const ecp_sig_node *container = &sig->nodes[f->node];
        c.path_len = f->path_len;
        c.path[c.path_len] = '\0';
        uint32_t node;
        json_ref value;
        if (container->type == ECP_SIG_OBJECT) {
            if (f->field == ECP_SIG_NONE) {
                depth--;
                continue;
            }
            node = f->field;
            f->field = sig->nodes[node].next;
            const char *key = sig->nodes[node].name;
            value = f->value == JSON_NO_REF ? JSON_NO_REF : json_get(doc, f->value, key);
            if (json_type_of(doc, value) == JSON_NULL && sig->nodes[node].type != ECP_SIG_ANY)
                value = JSON_NO_REF; /* null is a value only where any value is */
            path_append_name(&c, key, strlen(key));
            if (value == JSON_NO_REF) {
                if (sig->nodes[node].optional)
                    continue;
                char names[96];
                if (sig->nodes[node].type == ECP_SIG_ANY)
                    snprintf(message, cap, "%s: required (any JSON value, null included)", c.path);
                else
                    snprintf(message, cap, "%s: required %s", c.path, ecp_sig_type_name(sig, node, names, sizeof names));
                return false;
            }
        } else {
            if (f->item == JSON_NO_REF) {
                depth--;
                continue;
            }
            node = container->child;
            if (container->type == ECP_SIG_ARRAY) {
                value = f->item;
                path_append(&c, "[%zu]", NULL, 0, f->index++);
            } else {
                size_t key_len;
                const char *key = json_raw(doc, f->item, &key_len); /* with its quotes */
                value = f->item + 1;
                path_append(&c, ".%.*s", key + 1, key_len >= 2 ? key_len - 2 : 0, 0);
            }
            f->item = json_next(doc, f->item);
        }
        uint32_t chosen = resolve(&c, node, value);
        if (chosen == ECP_SIG_NONE)
            return false;
        const ecp_sig_node *n = &sig->nodes[chosen];
        bool walk = (n->type == ECP_SIG_OBJECT && n->child != ECP_SIG_NONE) ||
                    ((n->type == ECP_SIG_ARRAY || n->type == ECP_SIG_MAP) && sig->nodes[n->child].type != ECP_SIG_ANY);
        if (!walk)
            continue;
        if (depth > ECP_SIG_MAX_DEPTH) /* the compiler bounds signatures to less */
            return true;
        stack[depth++] = (walk_frame){.node = chosen, .value = value, .field = n->child,
                                      .item = n->type == ECP_SIG_OBJECT ? JSON_NO_REF : json_first(doc, value),
                                      .path_len = c.path_len};
    }
    return true;
}

/* ----- examples ----------------------------------------------------------------- */

static bool leads_to(const ecp_sig *sig, uint32_t node, uint32_t target)
{
    for (uint32_t n = target; n != ECP_SIG_NONE; n = sig->nodes[n].parent)
        if (n == node)
            return true;
    return false;
}

/* A JSON value of a type the node does not take. */
static void write_mistyped(const ecp_sig *sig, uint32_t node, json_writer *w)
{
    static const char *const candidates[] = {"7", "\"x\"", "true", "[]", "{}", "7.5"};
    json_doc doc;
    for (size_t k = 0; k < sizeof candidates / sizeof candidates[0]; k++) {
        if (json_doc_parse(&doc, candidates[k], strlen(candidates[k]), NULL) != 0)
            continue;
        const ecp_sig_node *n = &sig->nodes[node];
        bool taken = false;
        json_type type = json_type_of(&doc, json_root(&doc));
        for (uint32_t a = n->type == ECP_SIG_UNION ? n->child : node; a != ECP_SIG_NONE;
             a = n->type == ECP_SIG_UNION ? sig->nodes[a].next : ECP_SIG_NONE) {
            ecp_sig_type t = sig->nodes[a].type;
            taken = taken || t == ECP_SIG_ANY || (t == ECP_SIG_LITERAL ? type == JSON_STRING : fits(&(ecp_sig_node){.type = t}, &doc, json_root(&doc)));
        }
        json_doc_free(&doc);
        if (!taken) {
            jw_raw(w, candidates[k], strlen(candidates[k]));
            return;
        }
    }
    jw_null(w);
}

/* Bounded by the signature's depth, which the compiler limits. */
static void write_value(const ecp_sig *sig, uint32_t node, uint32_t target, ecp_sig_flaw flaw, json_writer *w,
                        buf *path, char *out_path, size_t cap)
{
    const ecp_sig_node *n = &sig->nodes[node];
    if (node == target && out_path) {
        snprintf(out_path, cap, "%s", path->data ? path->data : "");
    }
    if (node == target && flaw == ECP_SIG_MISTYPE) {
        write_mistyped(sig, node, w);
        return;
    }
    if (node == target && flaw == ECP_SIG_PAST_LIMIT && n->has_min) {
        jw_int(w, n->min - 1);
        return;
    }
    if (node == target && flaw == ECP_SIG_PAST_LIMIT && n->has_max) {
        jw_int(w, n->max + 1);
        return;
    }
    size_t mark = path->len;
    switch (n->type) {
    case ECP_SIG_ANY: jw_int(w, 1); break;
    case ECP_SIG_STRING: jw_string(w, "x"); break;
    case ECP_SIG_LITERAL: jw_string(w, n->name); break;
    case ECP_SIG_INTEGER:
    case ECP_SIG_NUMBER: jw_int(w, n->has_min ? n->min : n->has_max && n->max < 0 ? n->max : 0); break;
    case ECP_SIG_BOOLEAN: jw_bool(w, false); break;
    case ECP_SIG_UNION: {
        uint32_t pick = n->child;
        for (uint32_t a = n->child; a != ECP_SIG_NONE; a = sig->nodes[a].next)
            if (leads_to(sig, a, target))
                pick = a;
        write_value(sig, pick, target, flaw, w, path, out_path, cap);
        break;
    }
    case ECP_SIG_OBJECT:
        jw_object_begin(w);
        for (uint32_t f = n->child; f != ECP_SIG_NONE; f = sig->nodes[f].next) {
            bool inside = leads_to(sig, f, target);
            if (f == target && out_path)
                snprintf(out_path, cap, "%s%s%s", path->data ? path->data : "", path->len ? "." : "", sig->nodes[f].name);
            if ((f == target && flaw == ECP_SIG_OMIT) || (sig->nodes[f].optional && !inside))
                continue;
            jw_key(w, sig->nodes[f].name);
            buf_appendf(path, "%s%s", path->len ? "." : "", sig->nodes[f].name);
            write_value(sig, f, target, flaw, w, path, out_path, cap);
            path->len = mark;
            if (path->data)
                path->data[mark] = '\0';
        }
        jw_object_end(w);
        break;
    case ECP_SIG_MAP:
        jw_object_begin(w);
        if (leads_to(sig, n->child, target)) {
            jw_key(w, "k");
            buf_appendf(path, ".k");
            write_value(sig, n->child, target, flaw, w, path, out_path, cap);
        }
        jw_object_end(w);
        break;
    case ECP_SIG_ARRAY:
        jw_array_begin(w);
        if (leads_to(sig, n->child, target)) {
            buf_appendf(path, "[0]");
            write_value(sig, n->child, target, flaw, w, path, out_path, cap);
        }
        jw_array_end(w);
        break;
    }
    path->len = mark;
    if (path->data)
        path->data[mark] = '\0';
}

void ecp_sig_write_example(const ecp_sig *sig, uint32_t target, ecp_sig_flaw flaw, json_writer *w, char *path,
                           size_t cap)
{
    buf where = BUF_INIT;
    if (path && cap)
        path[0] = '\0';
    if (!sig->nodes || sig->root == ECP_SIG_NONE || sig->nodes[sig->root].type != ECP_SIG_OBJECT)
        jw_object_begin(w), jw_object_end(w);
    else
        write_value(sig, sig->root, target, flaw, w, &where, path, cap);
    buf_free(&where);
}
