/* The params of the methods fuzz target's calls: which strings may be sent,
 * reading the input, and building each call's params from its bytes and the
 * learned shape (see methods_fuzz.c for the input's layout). */
#include "methods_fuzz.h"

/* ----- which strings may be sent ---------------------------------------------------- */

static bool under_root(const char *path, const char *root)
{
    size_t n = strlen(root);
    return strncmp(path, root, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool has_dotdot(const char *s, size_t len)
{
    for (size_t i = 0; i + 1 < len; i++)
        if (s[i] == '.' && s[i + 1] == '.' && (i == 0 || s[i - 1] == '/' || s[i - 1] == '\\') &&
            (i + 2 == len || s[i + 2] == '/' || s[i + 2] == '\\'))
            return true;
    return false;
}

/* An absolute path names a place in the workspace: lexically, and as the
 * kernel resolves what exists of it. (Not the whole private directory: the
 * workspace is made anew for each input, the rest is not.) */
static bool path_is_private(const char *path, size_t len)
{
    buf norm = BUF_INIT;
    /* lexical: "." and ".." resolved, never above "/" */
    buf_push(&norm, '/');
    for (size_t i = 0; i < len;) {
        while (i < len && path[i] == '/')
            i++;
        size_t j = i;
        while (j < len && path[j] != '/')
            j++;
        size_t n = j - i;
        if (n == 2 && path[i] == '.' && path[i + 1] == '.') {
            while (norm.len > 1 && norm.data[norm.len - 1] != '/')
                norm.len--;
            if (norm.len > 1)
                norm.len--;
            norm.data[norm.len] = '\0';
        } else if (n && !(n == 1 && path[i] == '.')) {
            if (norm.len > 1)
                buf_push(&norm, '/');
            buf_append(&norm, path + i, n);
        }
        i = j;
    }
    bool ok = under_root(norm.data, G.ws) || under_root(norm.data, G.ws_real);
    buf_free(&norm);
    if (!ok)
        return false;
    /* resolved: the longest prefix that exists, through its symlinks; what
     * does not exist yet may not climb */
    char *copy = xstrndup(path, len);
    size_t cut = len;
    ok = false;
    for (;;) {
        char saved = copy[cut];
        copy[cut] = '\0';
        char *real = realpath(cut ? copy : "/", NULL);
        copy[cut] = saved;
        if (real) {
            ok = under_root(real, G.ws_real) && !has_dotdot(copy + cut, len - cut);
            free(real);
            break;
        }
        while (cut > 0 && copy[cut - 1] != '/')
            cut--;
        if (cut == 0)
            break;
        cut--;
    }
    free(copy);
    return ok;
}

static bool string_is_safe_part(const char *s, size_t len)
{
    if (len && s[0] == '~')
        return false;
    if (has_dotdot(s, len))
        return false;
    buf decoded = BUF_INIT;
    uri_percent_decode(&decoded, s, len);
    bool ok = !has_dotdot(decoded.data ? decoded.data : "", decoded.len) &&
              !(decoded.len && decoded.data[0] == '~');
    buf_free(&decoded);
    if (!ok)
        return false;
    buf path = BUF_INIT;
    if (uri_to_path(s, len, &path, NULL) == 0)
        ok = path_is_private(path.data ? path.data : "/", path.len);
    else if (len && s[0] == '/')
        ok = path_is_private(s, len);
    buf_free(&path);
    return ok;
}

/* What the server will decode the string to must name nothing outside the
 * private directory, read whole or up to a NUL byte. */
static bool string_is_safe(const char *s, size_t len)
{
    const char *nul = memchr(s, '\0', len);
    return string_is_safe_part(s, len) && (!nul || string_is_safe_part(s, (size_t)(nul - s)));
}

/* ----- reading the input ------------------------------------------------------------ */


uint8_t take_u8(input *in) { return in->at < in->size ? in->data[in->at++] : 0; }

uint16_t take_u16(input *in)
{
    uint16_t lo = take_u8(in);
    return (uint16_t)(lo | (uint16_t)take_u8(in) << 8);
}

uint32_t take_u32(input *in)
{
    uint32_t lo = take_u16(in);
    return lo | (uint32_t)take_u16(in) << 16;
}

uint64_t take_u64(input *in)
{
    uint64_t lo = take_u32(in);
    return lo | (uint64_t)take_u32(in) << 32;
}

/* Up to n bytes, fewer at the end of the input. */
size_t take_bytes(input *in, size_t n, const uint8_t **out)
{
    size_t left = in->size - in->at;
    if (n > left)
        n = left;
    *out = in->data + in->at;
    in->at += n;
    return n;
}

/* ----- building params ---------------------------------------------------------------- */

static bool key_contains(const char *key, const char *part)
{
    return key && strcasestr(key, part) != NULL;
}

static const pooled *pool_find(const session *s, const char *key, bool is_string)
{
    for (size_t k = 0; k < s->pool_count; k++) {
        const pooled *p = &s->pool[(s->pool_next + MAX_POOL - 1 - k) % MAX_POOL]; /* newest first */
        if (p->is_string == is_string && key && strcmp(p->key, key) == 0)
            return p;
    }
    return NULL;
}

static void workspace_path(buf *out, const char *name)
{
    buf_append_str(out, G.ws);
    if (name[0]) {
        buf_push(out, '/');
        buf_append_str(out, name);
    }
}

static void workspace_uri(buf *out, const char *name)
{
    buf path = BUF_INIT;
    workspace_path(&path, name);
    uri_from_path(out, path.data, path.len);
    buf_free(&path);
}

/* The string a field gets when the input says nothing: a value a result gave
 * for a key of that name, else a workspace file for what looks like a URI or
 * a path, else "a". */
static void placeholder_string(const session *s, const char *key, buf *out)
{
    const pooled *p = pool_find(s, key, true);
    if (p)
        buf_append(out, p->text, p->len);
    else if (key_contains(key, "uri"))
        workspace_uri(out, "a.txt");
    else if (key_contains(key, "path") || key_contains(key, "dir") || key_contains(key, "root") ||
             key_contains(key, "folder"))
        workspace_path(out, "a.txt");
    else
        buf_append_str(out, "a");
}

typedef struct odd_string {
    const char *text;
    size_t len;
} odd_string;
#define ODD(s) {s, sizeof s - 1}

static const odd_string odd_strings[] = {
    ODD("\xf0\x9f\x98\x80"), ODD("\r\n"), ODD("\r"), ODD("\n\n\n"), ODD("\xed\xa0\x80"), ODD("\xc3\x28"),
    ODD("a\0b"), ODD("\t"), ODD("\xef\xbb\xbf"), ODD("\xe2\x80\xa8"), ODD("e\xcc\x81"), ODD("\xf4\x8f\xbf\xbf"),
    ODD("*"), ODD("**/*"), ODD("["), ODD("("), ODD("\\"), ODD("%"), ODD("%zz"), ODD("?"), ODD("{a,b}"), ODD(".*"),
    ODD("untitled:1"), ODD("memory://x"), ODD("file:"), ODD("file://"), ODD("file:///"), ODD("file://host/x"),
    ODD("http://127.0.0.1:9/"), ODD("0"), ODD("-1"), ODD("true"), ODD("null"), ODD(" "), ODD("utf-8"),
    ODD("utf-16"), ODD("utf-32"), ODD("up"), ODD("down"), ODD("left"), ODD("right"), ODD("word"), ODD("line"),
    ODD("character"), ODD("page"), ODD("document"),
};
#define ODD_STRINGS (sizeof odd_strings / sizeof odd_strings[0])

static void gen_string(session *s, input *in, const char *key, uint8_t op, json_writer *w)
{
    buf v = BUF_INIT;
    const uint8_t *bytes;
    size_t n;
    switch (op & 0x0f) {
    case 0:
        placeholder_string(s, key, &v);
        break;
    case 1: {
        if (s->pool_count) {
            const pooled *p = &s->pool[take_u8(in) % s->pool_count];
            buf_append(&v, p->text, p->len);
        }
        break;
    }
    case 2:
        workspace_uri(&v, workspace_names[take_u8(in) % WORKSPACE_NAMES]);
        break;
    case 3:
        workspace_path(&v, workspace_names[take_u8(in) % WORKSPACE_NAMES]);
        break;
    case 4: { /* a workspace URI with a name from the input */
        buf name = BUF_INIT;
        n = take_bytes(in, take_u8(in) % 32, &bytes);
        buf_append_str(&name, workspace_names[take_u8(in) % WORKSPACE_NAMES]);
        buf_push(&name, '/');
        buf_append(&name, (const char *)bytes, n);
        workspace_uri(&v, name.data);
        buf_free(&name);
        break;
    }
    case 5:
        break; /* "" */
    case 6: {
        const odd_string *odd = &odd_strings[take_u8(in) % ODD_STRINGS];
        buf_append(&v, odd->text, odd->len);
        break;
    }
    case 7:
        buf_appendf(&v, "%d", (int)(int16_t)take_u16(in));
        break;
    case 8: { /* long: a piece of the input, repeated */
        n = take_bytes(in, take_u8(in) % 16 + 1, &bytes);
        size_t times = (size_t)take_u8(in) * 64 + 1;
        for (size_t i = 0; i < times && n; i++)
            buf_append(&v, (const char *)bytes, n);
        break;
    }
    default: /* bytes of the input */
        n = take_bytes(in, take_u8(in), &bytes);
        buf_append(&v, (const char *)bytes, n);
        break;
    }
    /* the text the server will decode: the writer replaces invalid UTF-8 */
    buf written = BUF_INIT, decoded = BUF_INIT;
    json_writer tmp;
    jw_init(&tmp, &written);
    jw_string_n(&tmp, v.data ? v.data : "", v.len);
    REQUIRE(json_unescape(written.data + 1, written.len - 2, &decoded));
    if (string_is_safe(decoded.data ? decoded.data : "", decoded.len)) {
        jw_raw(w, written.data, written.len);
    } else {
        buf safe = BUF_INIT;
        if (key_contains(key, "uri") || (v.len > 5 && strncasecmp(v.data, "file:", 5) == 0))
            workspace_uri(&safe, "a.txt");
        else
            workspace_path(&safe, "a.txt");
        jw_string_n(w, safe.data, safe.len);
        buf_free(&safe);
    }
    buf_free(&written);
    buf_free(&decoded);
    buf_free(&v);
}

static void gen_number(session *s, input *in, const char *key, uint8_t op, bool integer, json_writer *w)
{
    static const int64_t edges[] = {0, 1, -1, 2, 7, 8, 9, 15, 16, 17, 100, 255, 256, 65535, 65536, INT32_MAX,
                                    INT32_MIN, UINT32_MAX, (int64_t)1 << 53, INT64_MAX, INT64_MIN, INT64_MAX - 1};
    switch (op & 0x07) {
    case 0: {
        const pooled *p = pool_find(s, key, false);
        if (p)
            jw_raw(w, p->text, p->len);
        else
            jw_int(w, 0);
        return;
    }
    case 1:
        jw_int(w, take_u8(in) % 8);
        return;
    case 2:
        jw_int(w, edges[take_u8(in) % (sizeof edges / sizeof edges[0])]);
        return;
    case 3:
        jw_int(w, (int64_t)take_u64(in));
        return;
    case 4:
        if (!integer) {
            jw_double(w, (double)(int16_t)take_u16(in) / 7.0);
            return;
        }
        jw_double(w, (double)take_u8(in) + 0.5); /* not an integer */
        return;
    case 5: {
        static const char *const odd[] = {"1e3", "-0", "1.0", "1e400", "-1e400", "18446744073709551616",
                                          "0.0000001", "9007199254740993", "1E-2", "-9223372036854775809"};
        const char *t = odd[take_u8(in) % (sizeof odd / sizeof odd[0])];
        jw_raw(w, t, strlen(t));
        return;
    }
    default:
        jw_int(w, (int16_t)take_u16(in));
        return;
    }
}

void gen_any(session *s, input *in, int depth, json_writer *w);

static void gen_key(input *in, json_writer *w)
{
    uint8_t k = take_u8(in);
    if (k < 0xe0 && G.vocabulary_count) {
        jw_key(w, G.vocabulary[k % G.vocabulary_count]);
        return;
    }
    const uint8_t *bytes;
    size_t n = take_bytes(in, take_u8(in) % 24, &bytes);
    jw_key_n(w, (const char *)bytes, n);
}

void gen_value(session *s, input *in, const shape *sh, const char *key, int depth, json_writer *w);

static void gen_object(session *s, input *in, const shape *sh, int depth, uint8_t op, json_writer *w)
{
    jw_object_begin(w);
    for (size_t i = 0; sh && i < sh->field_count; i++) {
        const shape *f = &sh->fields[i];
        uint8_t presence = take_u8(in);
        if (presence == 0xff)
            continue; /* left out */
        jw_key(w, f->key);
        if (presence == 0xfe)
            jw_null(w);
        else
            gen_value(s, in, f, f->key, depth + 1, w);
    }
    for (unsigned extra = op & 0x03; extra > 0 && depth < MAX_DEPTH; extra--) {
        gen_key(in, w);
        gen_any(s, in, depth + 1, w);
    }
    jw_object_end(w);
}

static void gen_array(session *s, input *in, const shape *sh, const char *key, int depth, uint8_t op,
                      json_writer *w)
{
    const shape *element = sh ? sh->element : NULL;
    size_t count = op & 0x07;
    if (count == 0)
        count = element ? 1 : 0;
    else if (op & 0x08)
        count *= 37;
    if (depth >= MAX_DEPTH)
        count = 0;
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        if (element)
            gen_value(s, in, element, key, depth + 1, w);
        else
            gen_any(s, in, depth + 1, w);
    }
    jw_array_end(w);
}

/* Any JSON value, as deep as MAX_DEPTH. */
void gen_any(session *s, input *in, int depth, json_writer *w)
{
    uint8_t op = take_u8(in);
    switch (depth >= MAX_DEPTH ? op % 5 : op % 8) {
    case 0: jw_null(w); break;
    case 1: jw_bool(w, op & 0x10); break;
    case 2: gen_number(s, in, NULL, (uint8_t)(op >> 3), false, w); break;
    case 3:
    case 4: gen_string(s, in, NULL, (uint8_t)((op >> 3) | 0x08), w); break;
    case 5: gen_object(s, in, NULL, depth, (uint8_t)(op >> 3), w); break;
    case 6: gen_array(s, in, NULL, NULL, depth, (uint8_t)(op >> 3), w); break;
    default: { /* deep nesting */
        size_t n = take_u8(in) % 64;
        for (size_t i = 0; i < n; i++)
            jw_array_begin(w);
        jw_int(w, 1);
        for (size_t i = 0; i < n; i++)
            jw_array_end(w);
        break;
    }
    }
}

/* A value for a field of the learned shape. op 0 is the placeholder; high
 * values give another type. */
void gen_value(session *s, input *in, const shape *sh, const char *key, int depth, json_writer *w)
{
    uint8_t op = take_u8(in);
    if (op >= 0xf0 || sh->type == T_ANY) {
        gen_any(s, in, depth, w);
        return;
    }
    switch (sh->type) {
    case T_STRING: gen_string(s, in, key, op, w); break;
    case T_INTEGER: gen_number(s, in, key, op, true, w); break;
    case T_NUMBER: gen_number(s, in, key, op, false, w); break;
    case T_BOOLEAN: jw_bool(w, op & 1); break;
    case T_OBJECT: gen_object(s, in, sh, depth, op, w); break;
    case T_ARRAY: gen_array(s, in, sh, key, depth, op, w); break;
    case T_ANY: break;
    }
}
