/* adapter: the file service's JSON-RPC methods (the `file` namespace).
 *
 * Params in, result out: each handler reads its params, prepares the
 * service's job for them (interface.h), lets the job serve its call, so the
 * client's $/cancelRequest or disconnect cancels it and the service's
 * teardown answers it, and renders the outcome in the job's callback. The
 * URI helpers answer at once. Watches belong to the client that made them:
 * their notifications go to that client only, and they end when it
 * disconnects.
 */
#include "adapter.h"
#include "file/interface.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "map.h"
#include "rpc.h"
#include "uri.h"
#include "utf.h"

/* file/read refuses files larger than this: the whole content travels in one
 * message. */
#define READ_MAX ((size_t)128 << 20)

typedef struct wire_watch wire_watch;

typedef struct file_adapter {
    file_service *svc;
    ecp_bus *bus;
    wire_watch *watches;
} file_adapter;

/* One path's changes while its client is backed up, folded into what the
 * client needs to be right about the path's end state. */
typedef struct folded_change {
    char *uri;
    bool existed;           /* before the first change held back */
    file_change_type last;
    double timestamp;       /* the last change's */
} folded_change;

struct wire_watch {
    file_adapter *ad;
    uint64_t client;
    uint64_t id; /* the service's */
    char name[48];
    ecp_call *call; /* the file/watch call, until the watch covers its tree */
    /* Changes held back while a connection that receives them is backed
     * up: one entry per path, in the order of their first change. */
    ecp_map *folded_at;          /* uri -> its entry */
    folded_change **folded;
    size_t folded_first, folded_count, folded_cap;
    bool awaiting_drain;
    wire_watch *next;
};

/* ----- errors ------------------------------------------------------------------- */

/* The catalogue's file codes; any other status is an I/O error. */
static const ecp_wire_map wire_codes[] = {
    {ECP_ENOTFOUND, ECP_WIRE_FILE_NOT_FOUND},
    {ECP_EACCES, ECP_WIRE_FILE_ACCESS_DENIED},
    {ECP_EREADONLY, ECP_WIRE_FILE_ACCESS_DENIED},
    {ECP_EISDIR, ECP_WIRE_FILE_IS_DIRECTORY},
    {ECP_ENOTDIR, ECP_WIRE_FILE_NOT_DIRECTORY},
    {ECP_EEXIST, ECP_WIRE_FILE_ALREADY_EXISTS},
    {ECP_ENOTEMPTY, ECP_WIRE_FILE_NOT_EMPTY},
    {ECP_EBADURI, ECP_WIRE_FILE_INVALID_URI},
    {ECP_ENOPROVIDER, ECP_WIRE_FILE_NO_PROVIDER},
    {ECP_ENOTSUP, ECP_WIRE_FILE_NOT_SUPPORTED},
    {ECP_EINVAL, ECP_WIRE_INVALID_PARAMS},
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

static int wire_code(int status)
{
    return ecp_wire_code(wire_codes, sizeof wire_codes / sizeof wire_codes[0], status, ECP_WIRE_FILE_IO_ERROR);
}

static const char *code_name(int wire)
{
    switch (wire) {
    case ECP_WIRE_FILE_NOT_FOUND: return "FILE_NOT_FOUND";
    case ECP_WIRE_FILE_ACCESS_DENIED: return "ACCESS_DENIED";
    case ECP_WIRE_FILE_IS_DIRECTORY: return "IS_DIRECTORY";
    case ECP_WIRE_FILE_NOT_DIRECTORY: return "NOT_DIRECTORY";
    case ECP_WIRE_FILE_ALREADY_EXISTS: return "ALREADY_EXISTS";
    case ECP_WIRE_FILE_NOT_EMPTY: return "NOT_EMPTY";
    case ECP_WIRE_FILE_INVALID_URI: return "INVALID_URI";
    case ECP_WIRE_FILE_NO_PROVIDER: return "NO_PROVIDER";
    case ECP_WIRE_FILE_NOT_SUPPORTED: return "NOT_SUPPORTED";
    case ECP_WIRE_FILE_IO_ERROR: return "IO_ERROR";
    default: return NULL;
    }
}

/* Answers with the wire code of status; file errors carry {uri, code}. */
static void reply_error(ecp_call *call, int status, const char *message, const char *uri)
{
    int code = wire_code(status);
    const char *name = code_name(code);
    if (code == ECP_WIRE_REQUEST_CANCELLED) {
        ecp_call_error(call, code, "Request cancelled");
        return;
    }
    if (!name) {
        ecp_call_error(call, code, "%s", message);
        return;
    }
    ecp_error_data d;
    json_writer *w = ecp_error_data_begin(&d);
    jw_key_string(w, "uri", uri ? uri : "");
    jw_key_string(w, "code", name);
    ecp_call_error_with(call, code, &d, "%s", message);
}

/* ----- params ---------------------------------------------------------------------- */

/* Reads a required URI field and turns it into a path in the call's arena.
 * On failure the call is answered and NULL returned. */
static const char *arg_path(ecp_call *call, json_ref obj, const char *name, ecp_str *uri_out)
{
    const char *path = ecp_arg_file_path(call, obj, name);
    if (!path)
        return NULL;
    if (uri_out) /* for error data: the field as written, which was read once already */
        ecp_arg_string(call, obj, name, uri_out);
    return path;
}

/* An optional base directory URI; the process's working directory when absent. */
static const char *arg_base(ecp_call *call, json_ref obj, const char *name)
{
    ecp_str uri;
    if (!ecp_arg_string_opt(call, obj, name, &uri))
        return NULL;
    if (uri.ptr)
        return arg_path(call, obj, name, NULL);
    char *cwd = getcwd(NULL, 0);
    if (!cwd) {
        ecp_call_error(call, ECP_WIRE_FILE_IO_ERROR, "cannot read the working directory: %s", strerror(errno));
        return NULL;
    }
    char *out = arena_strndup(ecp_call_arena(call), cwd, strlen(cwd));
    free(cwd);
    return out;
}

typedef struct strs {
    const char **items;
    size_t n;
} strs;

static void strs_push(arena *a, strs *s, size_t *cap, const char *v)
{
    if (s->n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 8;
        const char **items = arena_alloc(a, ncap * sizeof *items);
        if (s->n)
            memcpy(items, s->items, s->n * sizeof *items);
        s->items = items;
        *cap = ncap;
    }
    s->items[s->n++] = v;
}

/* An optional list of strings: an array, or (when split_string) one string of
 * comma-separated items, as editors' search boxes write "*.c, *.h". */
static bool arg_strings(ecp_call *call, json_ref obj, const char *name, bool split_string, strs *out)
{
    out->items = NULL;
    out->n = 0;
    const json_doc *doc = ecp_call_doc(call);
    arena *a = ecp_call_arena(call);
    json_ref v = json_get(doc, obj, name);
    json_type t = json_type_of(doc, v);
    size_t cap = 0;
    if (t == JSON_ABSENT || t == JSON_NULL)
        return true;
    if (t == JSON_STRING && split_string) {
        const char *s;
        size_t len;
        json_string(doc, v, a, &s, &len);
        size_t depth = 0, start = 0;
        for (size_t i = 0; i <= len; i++) {
            if (i < len && s[i] == '{')
                depth++;
            else if (i < len && s[i] == '}' && depth)
                depth--;
            if (i == len || (s[i] == ',' && depth == 0)) {
                size_t b = start, e = i;
                while (b < e && s[b] == ' ')
                    b++;
                while (e > b && s[e - 1] == ' ')
                    e--;
                if (e > b)
                    strs_push(a, out, &cap, arena_strndup(a, s + b, e - b));
                start = i + 1;
            }
        }
        return true;
    }
    if (t != JSON_ARRAY) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must be an array of strings", name);
        return false;
    }
    size_t i = 0;
    for (json_ref e = json_first(doc, v); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        const char *s;
        size_t len;
        if (!json_string(doc, e, a, &s, &len)) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s[%zu]: must be a string", name, i);
            return false;
        }
        strs_push(a, out, &cap, s);
    }
    return true;
}

/* ----- single operations: jobs of the service ------------------------------------------ */

/* What an operation's callback needs of its call. It lives in the call's
 * arena, which the job keeps alive until the callback has returned; when the
 * service goes first, the callback never runs and the arena goes with the
 * call. */
typedef struct op_call {
    ecp_call *call;
    const char *path; /* as the service was given it */
    const char *uri, *uri2; /* as the client wrote them, for error data */
    bool base64;      /* read: answer the bytes in base64 */
} op_call;

static op_call *op_call_new(ecp_call *call, const char *path, const ecp_str *uri)
{
    arena *a = ecp_call_arena(call);
    op_call *o = arena_alloc(a, sizeof *o);
    memset(o, 0, sizeof *o);
    o->call = call;
    o->path = path;
    o->uri = arena_strndup(a, uri->ptr, uri->len);
    return o;
}

/* Makes the job serve its call (cancel and disconnect reach it) and starts it. */
static void op_start(ecp_job *job, ecp_call *call)
{
    ecp_job_serve(job, call);
    file_job_start(job);
}

/* Answers a failed operation (status not 0) and returns true: a missing
 * source names the source; anything else the target. 0: false. */
static bool op_failed(const op_call *o, int status, const ecp_error *err)
{
    if (status)
        reply_error(o->call, status, err->message, o->uri2 && status != ECP_ENOTFOUND ? o->uri2 : o->uri);
    return status != 0;
}

static const char *type_name(file_type t)
{
    switch (t) {
    case FILE_TYPE_DIRECTORY: return "directory";
    case FILE_TYPE_SYMLINK: return "symlink";
    default: return "file";
    }
}

static void write_uri(json_writer *w, const char *key, const char *path)
{
    buf u = BUF_INIT;
    file_uri_from_path(&u, path);
    jw_key_string_n(w, key, u.data, u.len);
    buf_free(&u);
}

/* Writes bytes as one base64 string (RFC 4648, padded), a block at a time. */
static void write_base64(json_writer *w, const unsigned char *p, size_t len)
{
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char out[4096];
    size_t used = 0;
    jw_string_begin(w);
    for (size_t i = 0; i < len; i += 3) {
        unsigned v = (unsigned)p[i] << 16;
        if (i + 1 < len)
            v |= (unsigned)p[i + 1] << 8;
        if (i + 2 < len)
            v |= p[i + 2];
        out[used++] = alphabet[v >> 18 & 63];
        out[used++] = alphabet[v >> 12 & 63];
        out[used++] = i + 1 < len ? alphabet[v >> 6 & 63] : '=';
        out[used++] = i + 2 < len ? alphabet[v & 63] : '=';
        if (used == sizeof out) {
            jw_string_chunk(w, out, used);
            used = 0;
        }
    }
    jw_string_chunk(w, out, used);
    jw_string_end(w);
}

/* Operations that answer {success: true}. */
static void success_done(void *ctx, int status, const ecp_error *err)
{
    op_call *o = ctx;
    if (!op_failed(o, status, err))
        ecp_call_reply_success(o->call, true);
}

/* A required `uri`, as a path; NULL when the call was answered. */
static op_call *arg_op(ecp_call *call)
{
    ecp_str uri;
    const char *path = arg_path(call, ecp_call_params(call), "uri", &uri);
    return path ? op_call_new(call, path, &uri) : NULL;
}

/* file/read's result, written on the pool thread that read the file: the
 * content of a big file is escaped there, not on the loop. */
static void format_read(void *fctx, const file_read_result *r, buf *out)
{
    const op_call *o = fctx;
    json_writer jw, *w = &jw;
    jw_init(w, out);
    jw_object_begin(w);
    if (o->base64) {
        jw_key(w, "content");
        write_base64(w, (const unsigned char *)r->data, r->len);
        jw_key_string(w, "encoding", "base64");
    } else {
        jw_key_string_n(w, "content", r->data, r->len);
        jw_key_string(w, "encoding", "utf-8");
        /* Said only when it happened: the text is not the file's bytes. */
        if (r->invalid_utf8)
            jw_key_bool(w, "replaced", true);
    }
    jw_key_double(w, "modTime", r->info.mod_time);
    jw_key_int(w, "size", (int64_t)r->len);
    jw_object_end(w);
}

static void read_done(void *ctx, int status, const ecp_error *err, const file_read_result *r)
{
    op_call *o = ctx;
    if (!op_failed(o, status, err))
        ecp_call_reply_shared(o->call, r->rendered);
}

static void m_read(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str encoding;
    op_call *o = arg_op(call);
    if (!o || !ecp_arg_string_opt(call, p, "encoding", &encoding))
        return;
    bool base64 = encoding.ptr && strcasecmp(encoding.ptr, "base64") == 0;
    if (encoding.ptr && !base64 && strcasecmp(encoding.ptr, "utf-8") && strcasecmp(encoding.ptr, "utf8")) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS,
                       "encoding: unsupported encoding '%s' (\"utf-8\" or \"base64\")", encoding.ptr);
        return;
    }
    o->base64 = base64;
    file_read_args args = {.path = o->path, .max_size = READ_MAX, .check_utf8 = !base64, .format = format_read,
                           .fctx = o};
    op_start(file_read_prepare(ad->svc, &args, read_done, o), call);
}

static void write_done(void *ctx, int status, const ecp_error *err, const file_write_result *r)
{
    op_call *o = ctx;
    if (op_failed(o, status, err))
        return;
    json_writer *w = ecp_call_result(o->call);
    jw_object_begin(w);
    jw_key_bool(w, "success", true);
    jw_key_double(w, "modTime", r->mod_time);
    jw_key_int(w, "bytesWritten", (int64_t)r->bytes_written);
    jw_object_end(w);
    ecp_call_finish(o->call);
}

static void m_write(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str content, encoding;
    bool create_parents, overwrite;
    op_call *o = arg_op(call);
    if (!o || !ecp_arg_string(call, p, "content", &content) || !ecp_arg_string_opt(call, p, "encoding", &encoding) ||
        !ecp_arg_bool_opt(call, p, "createParents", false, &create_parents) ||
        !ecp_arg_bool_opt(call, p, "overwrite", true, &overwrite))
        return;
    if (encoding.ptr && strcasecmp(encoding.ptr, "utf-8") && strcasecmp(encoding.ptr, "utf8")) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "encoding: unsupported encoding '%s' (only \"utf-8\")",
                       encoding.ptr);
        return;
    }
    file_write_args args = {o->path, content.ptr, content.len, {create_parents, overwrite}};
    op_start(file_write_prepare(ad->svc, &args, write_done, o), call);
}

static void stat_done(void *ctx, int status, const ecp_error *err, const file_info *info)
{
    op_call *o = ctx;
    if (op_failed(o, status, err))
        return;
    json_writer *w = ecp_call_result(o->call);
    jw_object_begin(w);
    write_uri(w, "uri", o->path);
    jw_key_bool(w, "exists", info->exists);
    jw_key_bool(w, "isDirectory", info->is_directory);
    jw_key_bool(w, "isFile", info->is_file);
    jw_key_bool(w, "isSymlink", info->is_symlink);
    jw_key_int(w, "size", (int64_t)info->size);
    jw_key_double(w, "modTime", info->mod_time);
    jw_key_double(w, "createTime", info->create_time);
    jw_object_end(w);
    ecp_call_finish(o->call);
}

static void m_stat(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    op_call *o = arg_op(call);
    if (o)
        op_start(file_stat_prepare(ad->svc, o->path, stat_done, o), call);
}

static void exists_done(void *ctx, int status, const ecp_error *err, const file_info *info)
{
    op_call *o = ctx;
    if (op_failed(o, status, err))
        return;
    ecp_call_reply_bool(o->call, "exists", info->exists);
}

static void m_exists(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    op_call *o = arg_op(call);
    if (o)
        op_start(file_stat_prepare(ad->svc, o->path, exists_done, o), call);
}

static void m_delete(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    op_call *o = arg_op(call);
    if (o)
        op_start(file_delete_prepare(ad->svc, o->path, success_done, o), call);
}

static void read_dir_done(void *ctx, int status, const ecp_error *err, const file_read_dir_result *r)
{
    op_call *o = ctx;
    if (op_failed(o, status, err))
        return;
    json_writer *w = ecp_call_result_list(o->call, "entries");
    buf p = BUF_INIT;
    for (size_t i = 0; i < r->count; i++) {
        const file_dir_entry *e = &r->entries[i];
        jw_object_begin(w);
        jw_key_string(w, "name", e->name);
        buf_clear(&p);
        buf_append_str(&p, o->path);
        if (p.len == 0 || p.data[p.len - 1] != '/')
            buf_push(&p, '/');
        buf_append_str(&p, e->name);
        write_uri(w, "uri", p.data);
        jw_key_string(w, "type", type_name(e->type));
        if (e->type == FILE_TYPE_FILE) {
            jw_key_int(w, "size", (int64_t)e->size);
            jw_key_double(w, "modTime", e->mod_time);
        }
        jw_object_end(w);
    }
    buf_free(&p);
    ecp_call_finish_list(o->call, w);
}

static void m_read_dir(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    op_call *o = arg_op(call);
    if (o)
        op_start(file_read_dir_prepare(ad->svc, o->path, read_dir_done, o), call);
}

/* rename and copy: two URIs of the same scheme; NULL when the call was answered. */
static op_call *arg_two_paths(ecp_call *call, const char *from_name, const char *to_name, const char **to)
{
    json_ref p = ecp_call_params(call);
    ecp_str from_uri, to_uri;
    if (!ecp_arg_string(call, p, from_name, &from_uri) || !ecp_arg_string(call, p, to_name, &to_uri))
        return NULL;
    const char *s1, *s2;
    size_t l1 = 4, l2 = 4;
    if (!uri_scheme(from_uri.ptr, from_uri.len, &s1, &l1))
        s1 = "file";
    if (!uri_scheme(to_uri.ptr, to_uri.len, &s2, &l2))
        s2 = "file";
    if (l1 != l2 || strncasecmp(s1, s2, l1)) {
        reply_error(call, ECP_EBADURI, "Cannot move or copy between URI schemes", to_uri.ptr);
        return NULL;
    }
    const char *from = arg_path(call, p, from_name, NULL);
    if (!from || !(*to = arg_path(call, p, to_name, NULL)))
        return NULL;
    op_call *o = op_call_new(call, from, &from_uri);
    o->uri2 = arena_strndup(ecp_call_arena(call), to_uri.ptr, to_uri.len);
    return o;
}

static void m_rename(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    const char *to;
    op_call *o = arg_two_paths(call, "oldUri", "newUri", &to);
    if (o)
        op_start(file_rename_prepare(ad->svc, o->path, to, success_done, o), call);
}

static void m_copy(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    const char *to;
    op_call *o = arg_two_paths(call, "sourceUri", "targetUri", &to);
    if (o)
        op_start(file_copy_prepare(ad->svc, o->path, to, success_done, o), call);
}

/* createDir and deleteDir: a `uri` and an optional `recursive`; NULL when the call was answered. */
static op_call *arg_dir(ecp_call *call, bool *recursive)
{
    op_call *o = arg_op(call);
    if (!o || !ecp_arg_bool_opt(call, ecp_call_params(call), "recursive", false, recursive))
        return NULL;
    return o;
}

static void m_create_dir(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    bool recursive;
    op_call *o = arg_dir(call, &recursive);
    if (o)
        op_start(file_create_dir_prepare(ad->svc, o->path, recursive, success_done, o), call);
}

static void m_delete_dir(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    bool recursive;
    op_call *o = arg_dir(call, &recursive);
    if (o)
        op_start(file_delete_dir_prepare(ad->svc, o->path, recursive, success_done, o), call);
}

/* ----- walks: long jobs ---------------------------------------------------------------------- */

/* What a walk's callback needs of its call. It lives in the call's arena,
 * which the walk's job keeps alive until the callback has returned; when the
 * service goes first, the callback never runs and the arena goes with the
 * call. */
typedef struct walk_call {
    ecp_call *call;
    const char *uri; /* the base, for error data */
} walk_call;

static walk_call *walk_call_new(ecp_call *call, const char *base)
{
    arena *a = ecp_call_arena(call);
    walk_call *w = arena_alloc(a, sizeof *w);
    w->call = call;
    buf u = BUF_INIT;
    file_uri_from_path(&u, base);
    w->uri = arena_strndup(a, u.data, u.len);
    buf_free(&u);
    return w;
}

/* Either answers a failed preparation or starts the walk serving its call;
 * bad_param names the param an ECP_EINVAL is about. */
static void walk_start(walk_call *w, ecp_job *walk, int rc, const ecp_error *err, const char *bad_param)
{
    if (rc == ECP_EINVAL) {
        ecp_call_error(w->call, ECP_WIRE_INVALID_PARAMS, "%s: %s", bad_param, err->message);
        return;
    }
    if (rc) {
        reply_error(w->call, rc, err->message, w->uri);
        return;
    }
    ecp_job_serve(walk, w->call);
    file_walk_start(walk);
}

/* file/glob's result, written where the walk ends, off the loop. */
static void format_glob(void *fctx, const file_glob_result *res, buf *out)
{
    (void)fctx;
    json_writer jw, *w = &jw;
    jw_init(w, out);
    buf u = BUF_INIT;
    jw_object_begin(w);
    jw_key(w, "uris");
    jw_array_begin(w);
    for (size_t i = 0; i < res->count; i++) {
        buf_clear(&u);
        file_uri_from_path(&u, res->paths[i]);
        jw_string_n(w, u.data, u.len);
    }
    jw_array_end(w);
    jw_object_end(w);
    buf_free(&u);
}

/* Where a walk ends, on the loop: the failure, or the result its formatter
 * wrote (a failure has no result, so rendered is NULL then). */
static void walk_done(walk_call *j, int status, const ecp_error *err, ecp_shared *rendered)
{
    if (status)
        reply_error(j->call, status, err->message, j->uri);
    else
        ecp_call_reply_shared(j->call, rendered);
}

static void glob_done(void *ctx, int status, const ecp_error *err, const file_glob_result *res)
{
    walk_done(ctx, status, err, status ? NULL : res->rendered);
}

static void m_glob(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str pattern;
    size_t max;
    bool dirs, follow;
    strs exclude;
    if (!ecp_arg_string(call, p, "pattern", &pattern) || !ecp_arg_index_opt(call, p, "maxResults", 1000, &max) ||
        !ecp_arg_bool_opt(call, p, "includeDirectories", false, &dirs) ||
        !ecp_arg_bool_opt(call, p, "followSymlinks", false, &follow) ||
        !arg_strings(call, p, "excludePatterns", false, &exclude))
        return;
    const char *base = arg_base(call, p, "baseUri");
    if (!base)
        return;
    file_glob_options o = {pattern.ptr, base, max, dirs, follow, exclude.items, exclude.n, format_glob, NULL};
    walk_call *j = walk_call_new(call, base);
    ecp_job *walk = NULL;
    ecp_error err;
    int rc = file_glob_prepare(ad->svc, &o, glob_done, j, &walk, &err);
    walk_start(j, walk, rc, &err, "pattern");
}

/* file/search's result, written where the walk ends, off the loop. */
static void format_search(void *fctx, const file_search_result *res, buf *out)
{
    (void)fctx;
    json_writer jw, *w = &jw;
    jw_init(w, out);
    buf u = BUF_INIT;
    jw_object_begin(w);
    jw_key(w, "results");
    jw_array_begin(w);
    for (size_t i = 0; i < res->count; i++) {
        const file_search_hit *h = &res->hits[i];
        jw_object_begin(w);
        buf_clear(&u);
        file_uri_from_path(&u, h->path);
        jw_key_string_n(w, "uri", u.data, u.len);
        jw_key_string(w, "name", h->name);
        jw_key_int(w, "score", h->score);
        jw_key(w, "matches");
        jw_array_begin(w);
        for (size_t r = 0; r < h->range_count; r++) {
            jw_object_begin(w);
            jw_key_int(w, "start", (int64_t)h->ranges[r].start);
            jw_key_int(w, "end", (int64_t)h->ranges[r].end);
            jw_object_end(w);
        }
        jw_array_end(w);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_object_end(w);
    buf_free(&u);
}

static void search_done(void *ctx, int status, const ecp_error *err, const file_search_result *res)
{
    walk_done(ctx, status, err, status ? NULL : res->rendered);
}

static void m_search(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str pattern;
    size_t max;
    strs include, exclude;
    if (!ecp_arg_string(call, p, "pattern", &pattern) || !ecp_arg_index_opt(call, p, "maxResults", 100, &max) ||
        !arg_strings(call, p, "includePatterns", false, &include) ||
        !arg_strings(call, p, "excludePatterns", false, &exclude))
        return;
    /* as in the reference, the first include pattern is the directory to search */
    const char *base;
    if (include.n) {
        buf b = BUF_INIT;
        ecp_error err;
        int rc = file_path_from_uri(include.items[0], strlen(include.items[0]), &b, &err);
        if (rc) {
            reply_error(call, rc, err.message, include.items[0]);
            buf_free(&b);
            return;
        }
        base = arena_strndup(ecp_call_arena(call), b.data, b.len);
        buf_free(&b);
    } else if (!(base = arg_base(call, JSON_NO_REF, "baseUri"))) {
        return;
    }
    file_search_options o = {pattern.ptr, base, max, exclude.items, exclude.n, ecp_call_encoding(call), format_search,
                             NULL};
    walk_call *j = walk_call_new(call, base);
    ecp_job *walk = NULL;
    ecp_error err;
    int rc = file_search_prepare(ad->svc, &o, search_done, j, &walk, &err);
    walk_start(j, walk, rc, &err, "excludePatterns");
}

/* file/grep's result, written where the grep ends, off the loop. */
static void format_grep(void *fctx, const file_grep_result *res, buf *out)
{
    (void)fctx;
    json_writer jw, *w = &jw;
    jw_init(w, out);
    buf u = BUF_INIT;
    const char *last = NULL;
    jw_object_begin(w);
    jw_key(w, "matches");
    jw_array_begin(w);
    for (size_t i = 0; i < res->count; i++) {
        const file_grep_match *m = &res->matches[i];
        if (!last || strcmp(last, m->path)) {
            buf_clear(&u);
            file_uri_from_path(&u, m->path);
            last = m->path;
        }
        jw_object_begin(w);
        jw_key_string_n(w, "uri", u.data, u.len);
        jw_key_int(w, "line", (int64_t)m->line);
        jw_key_int(w, "column", (int64_t)m->column);
        jw_key_string(w, "text", m->text);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_key_bool(w, "truncated", res->truncated);
    jw_object_end(w);
    buf_free(&u);
}

static void grep_done(void *ctx, int status, const ecp_error *err, const file_grep_result *res)
{
    walk_done(ctx, status, err, status ? NULL : res->rendered);
}

static void m_grep(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str pattern;
    bool regex, case_sensitive;
    size_t max;
    strs include, exclude;
    if (!ecp_arg_string(call, p, "pattern", &pattern) || !ecp_arg_bool_opt(call, p, "regex", false, &regex) ||
        !ecp_arg_bool_opt(call, p, "caseSensitive", true, &case_sensitive) ||
        !ecp_arg_index_opt(call, p, "maxResults", 1000, &max) || !arg_strings(call, p, "include", true, &include) ||
        !arg_strings(call, p, "exclude", true, &exclude))
        return;
    if (memchr(pattern.ptr, '\0', pattern.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "pattern: must not contain a NUL character");
        return;
    }
    const char *base = arg_base(call, p, "baseUri");
    if (!base)
        return;
    file_grep_options o = {0};
    o.pattern = pattern.ptr;
    o.regex = regex;
    o.case_sensitive = case_sensitive;
    o.base = base;
    o.include = include.items;
    o.include_count = include.n;
    o.exclude = exclude.items;
    o.exclude_count = exclude.n;
    o.max_results = max;
    o.encoding = ecp_call_encoding(call);
    o.format = format_grep;
    walk_call *j = walk_call_new(call, base);
    ecp_job *walk = NULL;
    ecp_error err;
    int rc = file_grep_prepare(ad->svc, &o, grep_done, j, &walk, &err);
    bool glob_problem = rc == ECP_EINVAL && !strncmp(err.message, "invalid glob", 12);
    walk_start(j, walk, rc, &err, glob_problem ? "include/exclude" : "pattern");
}

/* ----- watches ------------------------------------------------------------------------------ */

static const char *change_name(file_change_type t)
{
    switch (t) {
    case FILE_CHANGE_CREATED: return "created";
    case FILE_CHANGE_DELETED: return "deleted";
    default: return "changed";
    }
}

static void send_change(wire_watch *ww, const char *uri, const file_change *change)
{
    ecp_bus *bus = ww->ad->bus;
    uint64_t client = ww->client;
    ecp_bus_notify_client(bus, client, "file/didChange", ecp_render_fields,
                          ECP_FIELDS(ECP_STRING_FIELD("uri", uri), ECP_STRING_FIELD("type", change_name(change->type)),
                                     ECP_INT_FIELD("timestamp", change->timestamp)));
    const char *also = change->type == FILE_CHANGE_CREATED   ? "file/didCreate"
                       : change->type == FILE_CHANGE_DELETED ? "file/didDelete"
                                                              : NULL;
    if (also)
        ecp_bus_notify_client(bus, client, also, ecp_render_fields, ECP_FIELDS(ECP_STRING_FIELD("uri", uri)));
}

static void folded_free(folded_change *f)
{
    free(f->uri);
    free(f);
}

/* Sends what was held back while nothing is backed up, oldest first; the
 * rest waits for the next drain. A path that existed before and after is
 * changed, one that appeared is created, one that went is deleted, and one
 * that appeared and went again is not mentioned. */
static void send_folded(void *ctx)
{
    wire_watch *ww = ctx;
    ecp_bus *bus = ww->ad->bus;
    ww->awaiting_drain = false;
    while (ww->folded_first < ww->folded_count) {
        if (ecp_bus_backed_up(bus, "file/didChange")) {
            ww->awaiting_drain = true;
            ecp_bus_when_drained(bus, "file/didChange", send_folded, ww);
            break;
        }
        folded_change *f = ww->folded[ww->folded_first++];
        ecp_map_remove(ww->folded_at, f->uri, NULL);
        bool exists = f->last != FILE_CHANGE_DELETED;
        if (f->existed || exists) {
            file_change c = {.path = NULL,
                             .type = !f->existed ? FILE_CHANGE_CREATED
                                     : exists    ? FILE_CHANGE_CHANGED
                                                 : FILE_CHANGE_DELETED,
                             .timestamp = f->timestamp};
            send_change(ww, f->uri, &c);
        }
        folded_free(f);
    }
    if (ww->folded_first == ww->folded_count) {
        ww->folded_first = ww->folded_count = 0;
    } else if (ww->folded_first > ww->folded_count / 2) {
        size_t left = ww->folded_count - ww->folded_first;
        memmove(ww->folded, ww->folded + ww->folded_first, left * sizeof *ww->folded);
        ww->folded_first = 0;
        ww->folded_count = left;
    }
}

static void fold_change(wire_watch *ww, const char *uri, const file_change *change)
{
    if (!ww->folded_at)
        ww->folded_at = ecp_map_new();
    folded_change *f = ecp_map_get(ww->folded_at, uri);
    if (!f) {
        f = xcalloc(1, sizeof *f);
        f->uri = xstrdup(uri);
        f->existed = change->type != FILE_CHANGE_CREATED;
        ecp_map_set(ww->folded_at, f->uri, f, NULL);
        if (ww->folded_count == ww->folded_cap) {
            ww->folded_cap = ww->folded_cap ? ww->folded_cap * 2 : 64;
            ww->folded = xrealloc(ww->folded, ww->folded_cap * sizeof *ww->folded);
        }
        ww->folded[ww->folded_count++] = f;
    }
    f->last = change->type;
    f->timestamp = change->timestamp;
    if (!ww->awaiting_drain) {
        ww->awaiting_drain = true;
        ecp_bus_when_drained(ww->ad->bus, "file/didChange", send_folded, ww);
    }
}

/* While a connection that receives the watch's changes is backed up, they
 * are folded per path rather than queued one by one (and until what was
 * folded is sent, so each path's changes keep their order). */
static void on_change(void *ctx, const file_change *change)
{
    wire_watch *ww = ctx;
    buf u = BUF_INIT;
    file_uri_from_path(&u, change->path);
    if (ww->folded_first < ww->folded_count || ecp_bus_backed_up(ww->ad->bus, "file/didChange"))
        fold_change(ww, u.data, change);
    else
        send_change(ww, u.data, change);
    buf_free(&u);
}

static void answer_watch(wire_watch *ww)
{
    ecp_call *call = ww->call;
    ww->call = NULL;
    ecp_call_reply_string(call, "watchId", ww->name);
}

/* The answer comes once the watch covers its whole tree, as it did when the
 * tree was covered before the handler returned: a client that changes a file
 * after the answer hears of it. */
static void on_watch_ready(void *ctx, uint64_t id)
{
    (void)id;
    answer_watch(ctx);
}

static void unlink_watch(file_adapter *ad, wire_watch *ww)
{
    for (wire_watch **pp = &ad->watches; *pp; pp = &(*pp)->next) {
        if (*pp == ww) {
            *pp = ww->next;
            return;
        }
    }
}

/* Ends a watch of the wire, answering its file/watch call if it still waits. */
static void end_watch(file_adapter *ad, wire_watch *ww)
{
    file_watch_remove(ad->svc, ww->id);
    if (ww->call) {
        ecp_call *call = ww->call;
        ww->call = NULL;
        ecp_call_error(call, ECP_WIRE_REQUEST_CANCELLED, "Request cancelled");
    }
    if (ww->awaiting_drain)
        ecp_bus_cancel_when_drained(ad->bus, send_folded, ww);
    for (size_t i = ww->folded_first; i < ww->folded_count; i++)
        folded_free(ww->folded[i]);
    free(ww->folded);
    ecp_map_free(ww->folded_at);
    free(ww);
}

/* The client cancelled file/watch or went away while the tree was being
 * covered: the watch it never learned the id of goes. */
static void on_watch_abandoned(void *ctx)
{
    wire_watch *ww = ctx;
    unlink_watch(ww->ad, ww);
    end_watch(ww->ad, ww);
}

static void m_watch(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    json_ref p = ecp_call_params(call);
    ecp_str uri;
    bool recursive;
    const char *path = arg_path(call, p, "uri", &uri);
    if (!path || !ecp_arg_bool_opt(call, p, "recursive", true, &recursive))
        return;
    wire_watch *ww = xcalloc(1, sizeof *ww);
    ww->ad = ad;
    ww->client = ecp_call_client(call);
    ecp_error err;
    file_watch_options options = {.recursive = recursive, .exclude = true, .ready = on_watch_ready};
    int rc = file_watch_start(ad->svc, path, &options, on_change, ww, &ww->id, &err);
    if (rc) {
        free(ww);
        reply_error(call, rc, err.message, uri.ptr);
        return;
    }
    /* watch_<ms>_<9 base-36 characters>, as the reference names them */
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    unsigned char rnd[9];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd)
        memset(rnd, (int)ww->id, sizeof rnd);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char tail[10];
    for (int i = 0; i < 9; i++)
        tail[i] = digits[rnd[i] % 36];
    tail[9] = '\0';
    snprintf(ww->name, sizeof ww->name, "watch_%lld_%s", (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, tail);
    ww->next = ad->watches;
    ad->watches = ww;
    ww->call = ecp_call_defer(call);
    ecp_call_on_abandon(call, on_watch_abandoned, ww);
}

static void m_unwatch(void *ctx, ecp_call *call)
{
    file_adapter *ad = ctx;
    ecp_str id;
    if (!ecp_arg_string(call, ecp_call_params(call), "watchId", &id))
        return;
    uint64_t client = ecp_call_client(call);
    for (wire_watch **pp = &ad->watches; *pp; pp = &(*pp)->next) {
        wire_watch *ww = *pp;
        if (ww->client == client && !strcmp(ww->name, id.ptr)) {
            *pp = ww->next;
            end_watch(ad, ww);
            ecp_call_reply_success(call, true);
            return;
        }
    }
    ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "Unknown watchId: %s", id.ptr);
}

static void drop_watches(file_adapter *ad, bool all, uint64_t client)
{
    for (wire_watch **pp = &ad->watches; *pp;) {
        wire_watch *ww = *pp;
        if (all || ww->client == client) {
            *pp = ww->next;
            end_watch(ad, ww);
        } else {
            pp = &ww->next;
        }
    }
}

/* ----- URI helpers (answered at once) ----------------------------------------------------- */

static void reply_uri(ecp_call *call, const char *key, const char *path)
{
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    write_uri(w, key, path);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void m_path_to_uri(void *ctx, ecp_call *call)
{
    ecp_str path;
    if (!ecp_arg_string(call, ecp_call_params(call), "path", &path))
        return;
    if (memchr(path.ptr, '\0', path.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "path: must not contain a NUL character");
        return;
    }
    buf raw = BUF_INIT, norm = BUF_INIT;
    if (path.len == 0 || path.ptr[0] != '/') {
        char *cwd = getcwd(NULL, 0);
        buf_append_str(&raw, cwd ? cwd : "/");
        free(cwd);
        buf_push(&raw, '/');
    }
    buf_append(&raw, path.ptr, path.len);
    file_path_normalize(&norm, raw.data, raw.len);
    reply_uri(call, "uri", norm.data);
    buf_free(&raw);
    buf_free(&norm);
}

static void m_uri_to_path(void *ctx, ecp_call *call)
{
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return;
    buf path = BUF_INIT;
    ecp_error err;
    int rc = file_path_from_uri(uri.ptr, uri.len, &path, &err);
    if (rc && rc != ECP_ENOPROVIDER) {
        reply_error(call, rc, err.message, uri.ptr);
    } else {
        json_writer *w = ecp_call_result_key(call, "path");
        if (rc)
            jw_null(w);
        else
            jw_string_n(w, path.data, path.len);
        ecp_call_finish_key(call, w);
    }
    buf_free(&path);
}

static void m_get_parent(void *ctx, ecp_call *call)
{
    const char *path = arg_path(call, ecp_call_params(call), "uri", NULL);
    if (!path)
        return;
    buf parent = BUF_INIT;
    const char *slash = strrchr(path, '/');
    if (slash == path)
        buf_append_str(&parent, "/");
    else
        buf_append(&parent, path, (size_t)(slash - path));
    reply_uri(call, "parent", parent.data);
    buf_free(&parent);
}

static void m_get_basename(void *ctx, ecp_call *call)
{
    const char *path = arg_path(call, ecp_call_params(call), "uri", NULL);
    if (!path)
        return;
    ecp_call_reply_string(call, "basename", strrchr(path, '/') + 1);
}

static void m_join(void *ctx, ecp_call *call)
{
    json_ref p = ecp_call_params(call);
    strs parts;
    json_ref arr;
    const char *base = arg_path(call, p, "baseUri", NULL);
    if (!base || !ecp_arg_array(call, p, "paths", &arr) || !arg_strings(call, p, "paths", false, &parts))
        return;
    buf raw = BUF_INIT, norm = BUF_INIT;
    buf_append_str(&raw, base);
    for (size_t i = 0; i < parts.n; i++) {
        buf_push(&raw, '/');
        buf_append_str(&raw, parts.items[i]);
    }
    file_path_normalize(&norm, raw.data, raw.len);
    reply_uri(call, "uri", norm.data);
    buf_free(&raw);
    buf_free(&norm);
}

/* ----- the adapter ----------------------------------------------------------------------------- */

static const ecp_method methods[] = {
    /* The signature stays the catalogue's; encoding?: "utf-8"|"base64" is an
     * extension, named in the summary and in server/PROTOCOL.md. */
    {"file/read", m_read, "1.0",
     "A file's content as UTF-8 text (replaced: true when invalid bytes were replaced), or its exact bytes with "
     "encoding: \"base64\"; with its size and modification time (ms)",
     "{uri: string, encoding?: string}"},
    {"file/write", m_write, "1.0",
     "Write a file atomically, keeping its mode; overwrite:false refuses an existing file",
     "{uri: string, content: string, encoding?: string, createParents?: boolean, overwrite?: boolean}"},
    {"file/stat", m_stat, "1.0",
     "Whether a path exists and what it is; a missing path is exists:false, not an error",
     "{uri: string}"},
    {"file/exists", m_exists, "1.0",
     "Whether a path exists",
     "{uri: string}"},
    {"file/delete", m_delete, "1.0",
     "Delete a file (not a directory)",
     "{uri: string}"},
    {"file/rename", m_rename, "1.0",
     "Move a file or directory, replacing a file at newUri; both URIs have one scheme",
     "{oldUri: string, newUri: string}"},
    {"file/copy", m_copy, "1.0",
     "Copy a file, or a directory recursively (the target must not exist); both URIs have one scheme",
     "{sourceUri: string, targetUri: string}"},
    {"file/readDir", m_read_dir, "1.0",
     "A directory's entries, directories first, with size and modTime for files",
     "{uri: string}"},
    {"file/createDir", m_create_dir, "1.0",
     "Create a directory, with its missing parents when recursive",
     "{uri: string, recursive?: boolean}"},
    {"file/deleteDir", m_delete_dir, "1.0",
     "Delete a directory, with its contents when recursive",
     "{uri: string, recursive?: boolean}"},
    {"file/search", m_search, "1.0",
     "Files whose name holds pattern's characters in order, best first; includePatterns[0] is the directory",
     "{pattern: string, maxResults?: integer >= 0, includePatterns?: string[], excludePatterns?: string[]}"},
    {"file/glob", m_glob, "1.0",
     "Paths under baseUri (default: the server's working directory) that match a glob pattern",
     "{pattern: string, baseUri?: string, maxResults?: integer >= 0, includeDirectories?: boolean, "
     "followSymlinks?: boolean, excludePatterns?: string[]}"},
    {"file/grep", m_grep, "1.0",
     "Lines of the text files under baseUri that contain pattern (a literal, or PCRE2 when regex)",
     "{pattern: string, baseUri?: string, regex?: boolean, caseSensitive?: boolean, "
     "include?: string|string[], exclude?: string|string[], maxResults?: integer >= 0}"},
    {"file/watch", m_watch, "1.0",
     "Watch a path (recursively by default); its changes go to this client only",
     "{uri: string, recursive?: boolean}"},
    {"file/unwatch", m_unwatch, "1.0",
     "End one of this client's watches",
     "{watchId: string}"},
    {"file/pathToUri", m_path_to_uri, "1.0",
     "The file:// URI of a path; a relative path is taken from the server's working directory",
     "{path: string}"},
    {"file/uriToPath", m_uri_to_path, "1.0",
     "The path a file:// URI names; null for another scheme",
     "{uri: string}"},
    {"file/getParent", m_get_parent, "1.0",
     "The URI of the parent directory",
     "{uri: string}"},
    {"file/getBasename", m_get_basename, "1.0",
     "The last component of a URI's path",
     "{uri: string}"},
    {"file/join", m_join, "1.0",
     "A base URI joined with path components, normalised",
     "{baseUri: string, paths: any[]}"},
};

static void adapter_client_closed(void *ctx, uint64_t client_id)
{
    drop_watches(ctx, false, client_id);
}

static void adapter_destroy(void *ctx)
{
    file_adapter *ad = ctx;
    drop_watches(ad, true, 0);
    free(ad);
}

static const char *const notifications[] = {"file/didChange", "file/didCreate", "file/didDelete", NULL};

void file_adapter_init(ecp_adapter *out, file_service *svc, ecp_bus *bus)
{
    file_adapter *ad = xcalloc(1, sizeof *ad);
    ad->svc = svc;
    ad->bus = bus;
    *out = (ecp_adapter){.ns = "file", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = ad, .client_closed = adapter_client_closed, .destroy = adapter_destroy,
                         .notifications = notifications};
}
