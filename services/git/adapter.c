/* adapter: the git service's JSON-RPC methods (the `git` namespace).
 *
 * Each method reads its params, starts the service's operation with a job
 * that serves the call (so $/cancelRequest and a disconnect cancel it) and
 * renders what the callback hands back. Big answers (status, diff, log,
 * blame) are rendered by the formatters below on the job's pool thread and
 * answered as shared bytes. Failures are -32208 with data {gitErrorCode,
 * uri}; a cancel is -32800.
 */
#include "adapter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file/interface.h"
#include "git/interface.h"
#include "rpc.h"

typedef struct git_adapter {
    gitsvc *svc;
    ecp_bus *bus;
} git_adapter;

/* ----- errors ------------------------------------------------------------------------- */

static const ecp_wire_map wire_codes[] = {
    {ECP_ECANCELED, ECP_WIRE_REQUEST_CANCELLED},
};

static void reply_error(ecp_call *call, int status, const gitsvc_error *err)
{
    int code = ecp_wire_code(wire_codes, sizeof wire_codes / sizeof wire_codes[0], status, ECP_WIRE_GIT_COMMAND_FAILED);
    if (code == ECP_WIRE_REQUEST_CANCELLED) {
        ecp_call_error(call, code, "Request cancelled");
        return;
    }
    /* the uri as the client wrote it: the call's params live as long as the call */
    const json_doc *doc = ecp_call_doc(call);
    const char *uri;
    size_t uri_len;
    if (!json_string(doc, json_get(doc, ecp_call_params(call), "uri"), ecp_call_arena(call), &uri, &uri_len)) {
        uri = "";
        uri_len = 0;
    }
    ecp_error_data d;
    json_writer *w = ecp_error_data_begin(&d);
    jw_key_string(w, "gitErrorCode", gitsvc_code_name(err ? err->code : GITSVC_COMMAND_FAILED));
    jw_key_string_n(w, "uri", uri, uri_len);
    ecp_call_error_with(call, code, &d, "%s", err && err->message[0] ? err->message : ecp_status_text(status));
}

/* ----- rendering ------------------------------------------------------------------------ */

static void write_strings(json_writer *w, const char *key, const char *const *items, size_t count)
{
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++)
        jw_string(w, items[i]);
    jw_array_end(w);
}

static const char *change_type_name(gitsvc_change_type t)
{
    switch (t) {
    case GITSVC_LINE_CHANGE_ADDED: return "added";
    case GITSVC_LINE_CHANGE_DELETED: return "deleted";
    default: return "modified";
    }
}

static void write_change_array(json_writer *w, const gitsvc_line_change *changes, size_t count)
{
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        jw_object_begin(w);
        jw_key_int(w, "line", (int64_t)changes[i].line);
        jw_key_string(w, "type", change_type_name(changes[i].type));
        jw_object_end(w);
    }
    jw_array_end(w);
}

void git_adapter_write_viewport_changes(void *svc, const char *document_id, const char *uri, size_t first,
                                        size_t last, ecp_position_encoding enc, json_writer *w)
{
    (void)uri;
    (void)enc; /* lines only */
    const gitsvc_line_change *changes = NULL;
    size_t count = last > first ? gitsvc_document_cached_changes(svc, document_id, first, last, &changes) : 0;
    write_change_array(w, changes, count);
}

static void write_entries(json_writer *w, const char *key, const gitsvc_status_entry *e, size_t count)
{
    jw_key(w, key);
    jw_array_begin(w);
    for (size_t i = 0; i < count; i++) {
        char status[2] = {e[i].status, '\0'};
        jw_object_begin(w);
        jw_key_string(w, "path", e[i].path);
        jw_key_string(w, "status", status);
        jw_key_string_opt(w, "oldPath", e[i].old_path);
        jw_object_end(w);
    }
    jw_array_end(w);
}

/* The formatters run on a pool thread: they touch only the result and out. */

/* A formatter's answer that is one list, {"<key>": [...]}: the items are
 * written between list_begin and list_end. */
static void list_begin(json_writer *w, buf *out, const char *key)
{
    jw_init(w, out);
    jw_object_begin(w);
    jw_key(w, key);
    jw_array_begin(w);
}

static void list_end(json_writer *w)
{
    jw_array_end(w);
    jw_object_end(w);
}

static void format_status(void *fctx, const gitsvc_status *st, buf *out)
{
    (void)fctx;
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_string(&w, "branch", st->branch);
    jw_key_int(&w, "ahead", (int64_t)st->ahead);
    jw_key_int(&w, "behind", (int64_t)st->behind);
    write_entries(&w, "staged", st->staged, st->staged_count);
    write_entries(&w, "unstaged", st->unstaged, st->unstaged_count);
    write_strings(&w, "untracked", st->untracked, st->untracked_count);
    jw_object_end(&w);
}

static const char *line_type_name(gitsvc_line_type t)
{
    switch (t) {
    case GITSVC_LINE_ADDED: return "added";
    case GITSVC_LINE_DELETED: return "deleted";
    default: return "context";
    }
}

static void format_diff(void *fctx, const gitsvc_diff_result *r, buf *out)
{
    (void)fctx;
    json_writer w;
    list_begin(&w, out, "hunks");
    for (size_t i = 0; i < r->count; i++) {
        const gitsvc_hunk *h = &r->hunks[i];
        jw_object_begin(&w);
        jw_key_int(&w, "oldStart", (int64_t)h->old_start);
        jw_key_int(&w, "oldCount", (int64_t)h->old_count);
        jw_key_int(&w, "newStart", (int64_t)h->new_start);
        jw_key_int(&w, "newCount", (int64_t)h->new_count);
        jw_key(&w, "lines");
        jw_array_begin(&w);
        for (size_t k = 0; k < h->line_count; k++) {
            const gitsvc_diff_line *l = &h->lines[k];
            jw_object_begin(&w);
            jw_key_string(&w, "type", line_type_name(l->type));
            jw_key_string(&w, "content", l->content);
            if (l->old_line)
                jw_key_int(&w, "oldLineNum", (int64_t)l->old_line);
            if (l->new_line)
                jw_key_int(&w, "newLineNum", (int64_t)l->new_line);
            jw_object_end(&w);
        }
        jw_array_end(&w);
        jw_object_end(&w);
    }
    list_end(&w);
}

static void format_log(void *fctx, const gitsvc_log_result *r, buf *out)
{
    (void)fctx;
    json_writer w;
    list_begin(&w, out, "commits");
    for (size_t i = 0; i < r->count; i++) {
        const gitsvc_commit_info *c = &r->commits[i];
        jw_object_begin(&w);
        jw_key_string(&w, "hash", c->hash);
        jw_key_string(&w, "shortHash", c->short_hash);
        jw_key_string(&w, "message", c->subject);
        jw_key_string(&w, "author", c->author);
        jw_key_string(&w, "email", c->email);
        jw_key_string(&w, "date", c->date);
        jw_object_end(&w);
    }
    list_end(&w);
}

static void format_blame(void *fctx, const gitsvc_blame_result *r, buf *out)
{
    (void)fctx;
    json_writer w;
    list_begin(&w, out, "lines");
    for (size_t i = 0; i < r->count; i++) {
        const gitsvc_blame_line *l = &r->lines[i];
        jw_object_begin(&w);
        jw_key_string(&w, "commit", l->commit);
        jw_key_string(&w, "author", l->author);
        jw_key_string(&w, "date", l->date);
        jw_key_int(&w, "line", (int64_t)l->line);
        jw_key_string(&w, "content", l->content);
        jw_object_end(&w);
    }
    list_end(&w);
}

/* ----- answers (the loop; ctx is the call, which the job keeps alive) ------------------------------------ */

/* Answers a failure, or opens the result object the caller fills and
 * answer_end closes: NULL when the call is answered. */
static json_writer *answer_object(ecp_call *call, int status, const gitsvc_error *err)
{
    if (status) {
        reply_error(call, status, err);
        return NULL;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    return w;
}

static void answer_end(ecp_call *call, json_writer *w)
{
    jw_object_end(w);
    ecp_call_finish(call);
}

static void answer_shared(void *ctx, int status, const gitsvc_error *err, ecp_shared *json)
{
    if (status)
        reply_error(ctx, status, err);
    else
        ecp_call_reply_shared(ctx, json);
}

static void answer_success(void *ctx, int status, const gitsvc_error *err)
{
    if (status)
        reply_error(ctx, status, err);
    else
        ecp_call_reply_success(ctx, true);
}

static void answer_is_repo(void *ctx, int status, const gitsvc_error *err, const char *root)
{
    ecp_call *call = ctx;
    if (status && err && err->code == GITSVC_NOT_A_REPO) {
        ecp_call_reply_raw(call, "{\"isRepo\":false}", 16);
        return;
    }
    if (status) {
        reply_error(call, status, err);
        return;
    }
    json_writer *w = ecp_call_result(call);
    jw_object_begin(w);
    jw_key_bool(w, "isRepo", true);
    jw_key_string(w, "rootUri", root);
    jw_object_end(w);
    ecp_call_finish(call);
}

static void answer_head(void *ctx, int status, const gitsvc_error *err, const gitsvc_status *head)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key_string(w, "branch", head->branch);
    jw_key_string_opt(w, "tracking", head->tracking);
    jw_key_int(w, "ahead", (int64_t)head->ahead);
    jw_key_int(w, "behind", (int64_t)head->behind);
    answer_end(ctx, w);
}

static void answer_status(void *ctx, int status, const gitsvc_error *err, const char *root, const gitsvc_status *st,
                          ecp_shared *json)
{
    (void)root;
    (void)st;
    answer_shared(ctx, status, err, json);
}

static void answer_diff(void *ctx, int status, const gitsvc_error *err, const gitsvc_diff_result *r, ecp_shared *json)
{
    (void)r;
    answer_shared(ctx, status, err, json);
}

static void answer_log(void *ctx, int status, const gitsvc_error *err, const gitsvc_log_result *r, ecp_shared *json)
{
    (void)r;
    answer_shared(ctx, status, err, json);
}

static void answer_blame(void *ctx, int status, const gitsvc_error *err, const gitsvc_blame_result *r,
                         ecp_shared *json)
{
    (void)r;
    answer_shared(ctx, status, err, json);
}

static void answer_changes(void *ctx, int status, const gitsvc_error *err, const gitsvc_line_change *changes,
                           size_t count)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key(w, "changes");
    write_change_array(w, changes, count);
    answer_end(ctx, w);
}

static void answer_commit(void *ctx, int status, const gitsvc_error *err, const gitsvc_commit_result *r)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key_bool(w, "success", r->success);
    if (r->success)
        jw_key_string(w, "hash", r->hash);
    else
        jw_key_string(w, "error", r->error);
    answer_end(ctx, w);
}

static void answer_branches(void *ctx, int status, const gitsvc_error *err, const gitsvc_branches_result *r)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key(w, "branches");
    jw_array_begin(w);
    for (size_t i = 0; i < r->count; i++) {
        const gitsvc_branch *b = &r->items[i];
        jw_object_begin(w);
        jw_key_string(w, "name", b->name);
        jw_key_bool(w, "current", b->current);
        jw_key_string_opt(w, "tracking", b->tracking);
        if (b->commit[0])
            jw_key_string(w, "commit", b->commit);
        jw_object_end(w);
    }
    jw_array_end(w);
    jw_key_string(w, "current", r->current);
    answer_end(ctx, w);
}

static void answer_remotes(void *ctx, int status, const gitsvc_error *err, const gitsvc_remotes_result *r)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key(w, "remotes");
    jw_array_begin(w);
    for (size_t i = 0; i < r->count; i++) {
        jw_object_begin(w);
        jw_key_string(w, "name", r->items[i].name);
        jw_key_string(w, "fetchUrl", r->items[i].fetch_url);
        jw_key_string(w, "pushUrl", r->items[i].push_url);
        jw_object_end(w);
    }
    jw_array_end(w);
    answer_end(ctx, w);
}

static void answer_stashes(void *ctx, int status, const gitsvc_error *err, const gitsvc_stashes_result *r)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key(w, "stashes");
    jw_array_begin(w);
    for (size_t i = 0; i < r->count; i++) {
        const gitsvc_stash *s = &r->items[i];
        char id[48];
        snprintf(id, sizeof id, "stash@{%zu}", s->index);
        jw_object_begin(w);
        jw_key_string(w, "id", id);
        jw_key_int(w, "index", (int64_t)s->index);
        jw_key_string(w, "branch", s->branch);
        jw_key_string(w, "message", s->message);
        jw_object_end(w);
    }
    jw_array_end(w);
    answer_end(ctx, w);
}

static void answer_conflicts(void *ctx, int status, const gitsvc_error *err, const char *const *paths, size_t count)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    write_strings(w, "files", paths, count);
    answer_end(ctx, w);
}

static void answer_merge(void *ctx, int status, const gitsvc_error *err, const gitsvc_merge_result *r)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key_bool(w, "success", r->success);
    write_strings(w, "conflicts", r->conflicts, r->conflict_count);
    jw_key_string(w, "message", r->message ? r->message : "");
    answer_end(ctx, w);
}

static void answer_sync(ecp_call *call, int status, const gitsvc_error *err, const gitsvc_sync_result *r, bool pull)
{
    json_writer *w = answer_object(call, status, err);
    if (!w)
        return;
    jw_key_bool(w, "success", r->success);
    if (pull && r->success)
        jw_key_bool(w, "changed", r->changed);
    if (r->conflicts) {
        jw_key_bool(w, "conflicts", true);
        write_strings(w, "conflictFiles", r->conflict_files, r->conflict_count);
    }
    if (!r->success && r->error)
        jw_key_string(w, "error", r->error);
    answer_end(call, w);
}

static void answer_push(void *ctx, int status, const gitsvc_error *err, const gitsvc_sync_result *r)
{
    answer_sync(ctx, status, err, r, false);
}

static void answer_pull(void *ctx, int status, const gitsvc_error *err, const gitsvc_sync_result *r)
{
    answer_sync(ctx, status, err, r, true);
}

static void answer_fetch(void *ctx, int status, const gitsvc_error *err, const gitsvc_sync_result *r)
{
    (void)r;
    answer_success(ctx, status, err);
}

static void answer_stash_saved(void *ctx, int status, const gitsvc_error *err)
{
    if (status) {
        reply_error(ctx, status, err);
        return;
    }
    ecp_call_reply_raw(ctx, "{\"success\":true,\"stashId\":\"stash@{0}\"}", 38);
}

static void answer_show(void *ctx, int status, const gitsvc_error *err, const char *content, size_t len)
{
    json_writer *w = answer_object(ctx, status, err);
    if (!w)
        return;
    jw_key_string_n(w, "content", content, len);
    answer_end(ctx, w);
}

/* ----- params ----------------------------------------------------------------------------------- */

/* `uri` as a path, for where; false when the call was answered. */
static bool arg_where(ecp_call *call, gitsvc_where *where, bool is_repo)
{
    ecp_str uri;
    if (!ecp_arg_string(call, ecp_call_params(call), "uri", &uri))
        return false;
    buf path = BUF_INIT;
    ecp_error e;
    if (file_path_from_uri(uri.ptr, uri.len, &path, &e) != 0) {
        buf_free(&path);
        if (is_repo)
            ecp_call_reply_bool(call, "isRepo", false);
        else
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "uri: %s", e.message);
        return false;
    }
    where->path = arena_strndup(ecp_call_arena(call), path.data, path.len);
    where->serve = call;
    buf_free(&path);
    return true;
}

static bool arg_text(ecp_call *call, const char *name, bool required, const char **out)
{
    ecp_str s;
    json_ref p = ecp_call_params(call);
    if (required ? !ecp_arg_string(call, p, name, &s) : !ecp_arg_string_opt(call, p, name, &s))
        return false;
    if (s.ptr && memchr(s.ptr, '\0', s.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must not contain a NUL character", name);
        return false;
    }
    *out = s.ptr ? arena_strndup(ecp_call_arena(call), s.ptr, s.len) : NULL;
    return true;
}

static bool arg_bool(ecp_call *call, const char *name, bool def, bool *out)
{
    return ecp_arg_bool_opt(call, ecp_call_params(call), name, def, out);
}

static bool arg_paths(ecp_call *call, gitsvc_paths_args *args)
{
    const json_doc *doc = ecp_call_doc(call);
    arena *mem = ecp_call_arena(call);
    json_ref arr;
    if (!ecp_arg_array(call, ecp_call_params(call), "paths", &arr))
        return false;
    size_t n = 0;
    for (json_ref e = json_first(doc, arr); e != JSON_NO_REF; e = json_next(doc, e))
        n++;
    if (n == 0) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths: must name at least one path");
        return false;
    }
    const char **paths = arena_alloc(mem, n * sizeof *paths);
    size_t i = 0;
    for (json_ref e = json_first(doc, arr); e != JSON_NO_REF; e = json_next(doc, e), i++) {
        const char *s;
        size_t len;
        if (!json_string(doc, e, mem, &s, &len) || memchr(s, '\0', len) || !len) {
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths[%zu]: must be a non-empty string", i);
            return false;
        }
        if (s[0] == '/' || !strncmp(s, "file:", 5)) {
            buf p = BUF_INIT;
            ecp_error e2;
            if (file_path_from_uri(s, len, &p, &e2) != 0) {
                buf_free(&p);
                ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "paths[%zu]: %s", i, e2.message);
                return false;
            }
            paths[i] = arena_strndup(mem, p.data, p.len);
            buf_free(&p);
        } else {
            paths[i] = arena_strndup(mem, s, len);
        }
    }
    args->paths = paths;
    args->count = n;
    return true;
}

/* A path param: relative to the root, absolute, or a file:// URI. */
static bool arg_file(ecp_call *call, const char *name, const char **out)
{
    ecp_str s;
    if (!ecp_arg_string(call, ecp_call_params(call), name, &s))
        return false;
    if (!s.len || memchr(s.ptr, '\0', s.len)) {
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: must be a non-empty path", name);
        return false;
    }
    arena *mem = ecp_call_arena(call);
    if (!strncmp(s.ptr, "file:", 5)) {
        buf p = BUF_INIT;
        ecp_error e;
        if (file_path_from_uri(s.ptr, s.len, &p, &e) != 0) {
            buf_free(&p);
            ecp_call_error(call, ECP_WIRE_INVALID_PARAMS, "%s: %s", name, e.message);
            return false;
        }
        *out = arena_strndup(mem, p.data, p.len);
        buf_free(&p);
    } else {
        *out = arena_strndup(mem, s.ptr, s.len);
    }
    return true;
}

/* "stash@{2}" or "2". */
static bool arg_stash(ecp_call *call, bool required, size_t *index)
{
    ecp_str s;
    json_ref p = ecp_call_params(call);
    if (required ? !ecp_arg_string(call, p, "stashId", &s) : !ecp_arg_string_opt(call, p, "stashId", &s))
        return false;
    *index = 0;
    if (!s.ptr)
        return true;
    const char *d = s.ptr;
    size_t len = s.len;
    if (len > 8 && !strncmp(d, "stash@{", 7) && d[len - 1] == '}') {
        d += 7;
        len -= 8;
    }
    size_t n = 0;
    bool ok = len > 0 && len < 10;
    for (size_t i = 0; ok && i < len; i++) {
        ok = d[i] >= '0' && d[i] <= '9';
        n = n * 10 + (size_t)(d[i] - '0');
    }
    if (!ok) {
        gitsvc_error err = {.status = ECP_ENOTFOUND, .code = GITSVC_STASH_NOT_FOUND};
        snprintf(err.message, sizeof err.message, "%.*s is not a valid stash reference", (int)s.len, s.ptr);
        reply_error(call, err.status, &err);
        return false;
    }
    *index = n;
    return true;
}

/* ----- the methods ------------------------------------------------------------------------------- */

static void m_is_repo(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, true))
        gitsvc_is_repo_start(ad->svc, &where, answer_is_repo, call);
}

static void m_status(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_status_args a = {.format = format_status};
    ecp_str uri; /* its type, then forceRefresh's, then the path it names: the order the checks have always had */
    if (ecp_arg_string(call, ecp_call_params(call), "uri", &uri) && arg_bool(call, "forceRefresh", false, &a.force) &&
        arg_where(call, &a.where, false))
        gitsvc_status_start(ad->svc, &a, answer_status, call);
}

static void m_branch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_head_start(ad->svc, &where, answer_head, call);
}

/* stage, unstage and discard: the same params, each its own operation. */
typedef ecp_job *(*paths_start_fn)(gitsvc *svc, const gitsvc_paths_args *args, gitsvc_done_cb cb, void *ctx);

static void paths_op(git_adapter *ad, ecp_call *call, paths_start_fn start)
{
    gitsvc_paths_args a = {0};
    if (arg_where(call, &a.where, false) && arg_paths(call, &a))
        start(ad->svc, &a, answer_success, call);
}

static void m_stage(void *ctx, ecp_call *call)
{
    paths_op(ctx, call, gitsvc_stage_start);
}

static void m_stage_all(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_paths_args a = {0};
    if (arg_where(call, &a.where, false))
        gitsvc_stage_start(ad->svc, &a, answer_success, call);
}

static void m_unstage(void *ctx, ecp_call *call)
{
    paths_op(ctx, call, gitsvc_unstage_start);
}

static void m_discard(void *ctx, ecp_call *call)
{
    paths_op(ctx, call, gitsvc_discard_start);
}

static void m_diff(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_diff_args a = {.format = format_diff};
    if (arg_where(call, &a.where, false) && arg_file(call, "path", &a.file) &&
        arg_bool(call, "staged", false, &a.staged))
        gitsvc_diff_start(ad->svc, &a, answer_diff, call);
}

static void m_diff_lines(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_file_args a = {0};
    if (arg_where(call, &a.where, false) && arg_file(call, "path", &a.file))
        gitsvc_diff_lines_start(ad->svc, &a, answer_changes, call);
}

static void m_diff_buffer(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_diff_text_args a = {0};
    json_ref p = ecp_call_params(call);
    ecp_str content, doc_id;
    if (!arg_where(call, &a.where, false) || !arg_file(call, "path", &a.file) ||
        !ecp_arg_string_opt(call, p, "content", &content) || !ecp_arg_string_opt(call, p, "documentId", &doc_id))
        return;
    a.text = content.ptr;
    a.len = content.len;
    if (doc_id.ptr)
        a.document_id = arena_strndup(ecp_call_arena(call), doc_id.ptr, doc_id.len);
    gitsvc_error err;
    if (!gitsvc_diff_text_start(ad->svc, &a, answer_changes, call, &err))
        ecp_call_error(call, ECP_WIRE_INVALID_PARAMS,
                       "content: required string (or documentId, or the absolute path of an open document)");
}

static void m_commit(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_commit_args a = {0};
    if (arg_where(call, &a.where, false) && arg_text(call, "message", true, &a.message))
        gitsvc_commit_start(ad->svc, &a, answer_commit, call);
}

static void m_amend(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_commit_args a = {.amend = true};
    if (arg_where(call, &a.where, false) && arg_text(call, "message", false, &a.message))
        gitsvc_commit_start(ad->svc, &a, answer_commit, call);
}

static void m_log(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_log_args a = {.format = format_log};
    json_ref p = ecp_call_params(call);
    size_t max_count;
    if (arg_where(call, &a.where, false) && ecp_arg_index_opt(call, p, "maxCount", 50, &max_count) &&
        ecp_arg_index_opt(call, p, "count", max_count, &a.max))
        gitsvc_log_start(ad->svc, &a, answer_log, call);
}

static void m_branches(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_branches_start(ad->svc, &where, answer_branches, call);
}

static void m_create_branch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_branch_args a = {.op = GITSVC_BRANCH_CREATE};
    if (arg_where(call, &a.where, false) && arg_text(call, "name", true, &a.name) &&
        arg_bool(call, "checkout", true, &a.checkout))
        gitsvc_branch_start(ad->svc, &a, answer_success, call);
}

static void m_switch_branch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_branch_args a = {.op = GITSVC_BRANCH_SWITCH};
    if (arg_where(call, &a.where, false) && arg_text(call, "name", true, &a.name))
        gitsvc_branch_start(ad->svc, &a, answer_success, call);
}

static void m_delete_branch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_branch_args a = {.op = GITSVC_BRANCH_DELETE};
    if (arg_where(call, &a.where, false) && arg_text(call, "name", true, &a.name) &&
        arg_bool(call, "force", false, &a.force))
        gitsvc_branch_start(ad->svc, &a, answer_success, call);
}

static void m_rename_branch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_branch_args a = {.op = GITSVC_BRANCH_RENAME};
    if (arg_where(call, &a.where, false) && arg_text(call, "newName", true, &a.name))
        gitsvc_branch_start(ad->svc, &a, answer_success, call);
}

static void m_push(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_transfer_args a = {.op = GITSVC_PUSH};
    if (arg_where(call, &a.where, false) && arg_text(call, "remote", false, &a.remote) &&
        arg_bool(call, "force", false, &a.force) && arg_bool(call, "setUpstream", false, &a.set_upstream))
        gitsvc_transfer_start(ad->svc, &a, answer_push, call);
}

static void m_pull(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_transfer_args a = {.op = GITSVC_PULL};
    if (arg_where(call, &a.where, false) && arg_text(call, "remote", false, &a.remote))
        gitsvc_transfer_start(ad->svc, &a, answer_pull, call);
}

static void m_fetch(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_transfer_args a = {.op = GITSVC_FETCH};
    if (arg_where(call, &a.where, false) && arg_text(call, "remote", false, &a.remote))
        gitsvc_transfer_start(ad->svc, &a, answer_fetch, call);
}

static void m_remotes(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_remotes_start(ad->svc, &where, answer_remotes, call);
}

static void m_merge(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_merge_args a = {0};
    if (arg_where(call, &a.where, false) && arg_text(call, "branch", true, &a.branch))
        gitsvc_merge_start(ad->svc, &a, answer_merge, call);
}

static void m_merge_abort(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_merge_abort_start(ad->svc, &where, answer_success, call);
}

static void m_conflicts(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_conflicts_start(ad->svc, &where, answer_conflicts, call);
}

static void m_stash(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_stash_args a = {.op = GITSVC_STASH_SAVE};
    if (arg_where(call, &a.where, false) && arg_text(call, "message", false, &a.message))
        gitsvc_stash_start(ad->svc, &a, answer_stash_saved, call);
}

static void stash_op(git_adapter *ad, ecp_call *call, gitsvc_stash_op op, bool id_required)
{
    gitsvc_stash_args a = {.op = op};
    if (arg_where(call, &a.where, false) && arg_stash(call, id_required, &a.index))
        gitsvc_stash_start(ad->svc, &a, answer_success, call);
}

static void m_stash_pop(void *ctx, ecp_call *call)
{
    stash_op(ctx, call, GITSVC_STASH_POP, false);
}

static void m_stash_drop(void *ctx, ecp_call *call)
{
    stash_op(ctx, call, GITSVC_STASH_DROP, true);
}

static void m_stash_apply(void *ctx, ecp_call *call)
{
    stash_op(ctx, call, GITSVC_STASH_APPLY, false);
}

static void m_stash_list(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_where where;
    if (arg_where(call, &where, false))
        gitsvc_stashes_start(ad->svc, &where, answer_stashes, call);
}

static void m_blame(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_blame_args a = {.format = format_blame};
    if (arg_where(call, &a.where, false) && arg_file(call, "path", &a.file))
        gitsvc_blame_start(ad->svc, &a, answer_blame, call);
}

static void m_show(void *ctx, ecp_call *call)
{
    git_adapter *ad = ctx;
    gitsvc_show_args a = {0};
    if (arg_where(call, &a.where, false) && arg_file(call, "path", &a.file) && arg_text(call, "ref", true, &a.ref))
        gitsvc_show_start(ad->svc, &a, answer_show, call);
}

/* ----- notifications ---------------------------------------------------------------------------------- */

static void on_change(void *ctx, const gitsvc_change *change)
{
    git_adapter *ad = ctx;
    buf u = BUF_INIT;
    file_uri_from_path(&u, change->path);
    ecp_bus_notify(ad->bus, "git/didChange", ecp_render_fields,
                   ECP_FIELDS(ECP_STRING_FIELD("uri", u.data), ECP_STRING_FIELD("rootUri", change->root),
                              ECP_STRING_FIELD("kind", gitsvc_change_kind_name(change->kind))));
    buf_free(&u);
}

static const gitsvc_listener listener = {on_change};

/* ----- the adapter -------------------------------------------------------------------------------------- */

#define URI "uri: string"
static const ecp_method methods[] = {
    {"git/isRepo", m_is_repo, "1.0", "Whether a path is inside a git work tree, and its root (a plain path)",
     "{" URI "}"},
    {"git/status", m_status, "1.0",
     "Branch, ahead/behind, staged, unstaged and untracked files; cached until a watch sees a change",
     "{" URI ", forceRefresh?: boolean}"},
    {"git/branch", m_branch, "1.0", "The current branch, its upstream and how far ahead and behind it is",
     "{" URI "}"},
    {"git/stage", m_stage, "1.0", "Stage files or directories (deletions too)", "{" URI ", paths: string[]}"},
    {"git/stageAll", m_stage_all, "1.0", "Stage every change of the work tree, as `git add -A`", "{" URI "}"},
    {"git/unstage", m_unstage, "1.0", "Put paths' index entries back to HEAD's", "{" URI ", paths: string[]}"},
    {"git/discard", m_discard, "1.0", "Put paths back to HEAD in the index and the work tree",
     "{" URI ", paths: string[]}"},
    {"git/diff", m_diff, "1.0", "Hunks of one file: work tree against the index, or staged: index against HEAD",
     "{" URI ", path: string, staged?: boolean}"},
    {"git/diffLines", m_diff_lines, "1.0", "Changed lines (1-based) of one file, work tree against the index",
     "{" URI ", path: string}"},
    {"git/diffBuffer", m_diff_buffer, "1.0",
     "Changed lines of unsaved text against HEAD: content, or an open document's snapshot",
     "{" URI ", path: string, content?: string, documentId?: string}"},
    {"git/commit", m_commit, "1.0", "Commit the index with the configured author; nothing staged is success:false",
     "{" URI ", message: string}"},
    {"git/amend", m_amend, "1.0", "Replace HEAD's commit with the index's tree; no message keeps HEAD's",
     "{" URI ", message?: string}"},
    {"git/log", m_log, "1.0", "Commits from HEAD, newest first (count, or maxCount; default 50)",
     "{" URI ", count?: integer >= 0, maxCount?: integer >= 0}"},
    {"git/branches", m_branches, "1.0", "Local branches with their upstreams and tips, and the current one",
     "{" URI "}"},
    {"git/createBranch", m_create_branch, "1.0", "Create a branch at HEAD and (by default) switch to it",
     "{" URI ", name: string, checkout?: boolean}"},
    {"git/switchBranch", m_switch_branch, "1.0", "Check out a local branch, keeping local changes that do not conflict",
     "{" URI ", name: string}"},
    {"git/deleteBranch", m_delete_branch, "1.0", "Delete a local branch; one not merged into HEAD needs force",
     "{" URI ", name: string, force?: boolean}"},
    {"git/renameBranch", m_rename_branch, "1.0", "Rename the current branch", "{" URI ", newName: string}"},
    {"git/push", m_push, "1.0", "Push the current branch; failures come back as success:false",
     "{" URI ", remote?: string, force?: boolean, setUpstream?: boolean}"},
    {"git/pull", m_pull, "1.0", "Fetch, then merge the upstream into the current branch",
     "{" URI ", remote?: string}"},
    {"git/fetch", m_fetch, "1.0", "Fetch a remote (default origin)", "{" URI ", remote?: string}"},
    {"git/remotes", m_remotes, "1.0", "The remotes with their fetch and push URLs", "{" URI "}"},
    {"git/merge", m_merge, "1.0", "Merge a branch into HEAD; conflicts are listed and left to resolve",
     "{" URI ", branch: string}"},
    {"git/mergeAbort", m_merge_abort, "1.0", "Abandon the merge in progress, keeping unrelated local changes",
     "{" URI "}"},
    {"git/conflicts", m_conflicts, "1.0", "Paths with unresolved conflicts", "{" URI "}"},
    {"git/stash", m_stash, "1.0", "Stash the local changes as stash@{0}", "{" URI ", message?: string}"},
    {"git/stashPop", m_stash_pop, "1.0", "Apply a stash (default stash@{0}) and drop it", "{" URI ", stashId?: string}"},
    {"git/stashList", m_stash_list, "1.0", "The stashes, newest first", "{" URI "}"},
    {"git/stashDrop", m_stash_drop, "1.0", "Drop a stash", "{" URI ", stashId: string}"},
    {"git/stashApply", m_stash_apply, "1.0", "Apply a stash (default stash@{0}) and keep it",
     "{" URI ", stashId?: string}"},
    {"git/blame", m_blame, "1.0", "Who last changed each line of a file as it is in the work tree",
     "{" URI ", path: string}"},
    {"git/show", m_show, "1.0", "A file's content at a ref", "{" URI ", path: string, ref: string}"},
};
#undef URI

static void adapter_destroy(void *ctx)
{
    git_adapter *ad = ctx;
    gitsvc_unsubscribe(ad->svc, &listener, ad);
    free(ad);
}

static const char *const notifications[] = {"git/didChange", NULL};

void git_adapter_init(ecp_adapter *out, gitsvc *svc, ecp_bus *bus)
{
    git_adapter *ad = xcalloc(1, sizeof *ad);
    ad->svc = svc;
    ad->bus = bus;
    gitsvc_subscribe(svc, &listener, ad);
    *out = (ecp_adapter){.ns = "git", .methods = methods, .method_count = sizeof methods / sizeof methods[0],
                         .ctx = ad, .destroy = adapter_destroy, .notifications = notifications};
}
