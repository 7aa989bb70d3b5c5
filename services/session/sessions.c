/* sessions: saving, loading, listing and deleting sessions, and reopening
 * documents (for session/restore and for recovery).
 *
 * A session is stored as the SessionState JSON that session/load answers,
 * beside a few columns (name, type, time, document count) that session/list
 * reads without parsing it. Cursors inside it count UTF-16 units, whatever
 * the encoding of the client that saved it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "internal.h"

/* ----- ids ------------------------------------------------------------------------------------- */

static char *named_id(const char *name)
{
    buf id = BUF_INIT;
    buf_append_str(&id, "named-");
    size_t start = id.len, n = 0;
    for (const char *c = name; *c && n < 50; c++) {
        char ch = *c >= 'A' && *c <= 'Z' ? (char)(*c + 32) : *c;
        bool keep = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-';
        if (!keep)
            ch = '-';
        if (ch == '-' && id.len > start && id.data[id.len - 1] == '-')
            continue;
        buf_push(&id, ch);
        n++;
    }
    return buf_detach(&id);
}

static char *workspace_id(const char *workspace)
{
    unsigned char hash[crypto_hash_sha256_BYTES];
    crypto_hash_sha256(hash, (const unsigned char *)workspace, strlen(workspace));
    buf id = BUF_INIT;
    buf_append_str(&id, "workspace-");
    for (int i = 0; i < 8; i++)
        buf_appendf(&id, "%02x", hash[i]);
    return buf_detach(&id);
}

/* ----- capturing the open documents --------------------------------------------------------------- */

/* What a save needs of one document, gathered on the loop. The unsaved text
 * is a snapshot: the state is written out on the store's thread, so a large
 * dirty document costs the loop no copy. */
typedef struct captured_doc {
    char *uri;
    char *path;
    char *language_id;
    bool is_dirty;
    char *cursors_json;            /* NULL when cursors are not kept */
    size_t cursor_line, cursor_column;
    document_snapshot *unsaved;    /* NULL when the text is not kept */
} captured_doc;

/* Everything a SessionState holds, gathered on the loop. */
typedef struct capture {
    session_service *svc;
    uint64_t client; /* whose cursors are kept */
    bool keep_cursors, keep_unsaved;
    captured_doc *docs;
    size_t count, cap;
    char *instance_id, *workspace, *name, *client_state;
    int64_t timestamp;
    bool sidebar_visible, minimap;
    double sidebar_width, terminal_height, ai_width;
} capture;

static char *cursors_json(const document_cursor *list, size_t count)
{
    buf b = BUF_INIT;
    json_writer w;
    jw_init(&w, &b);
    jw_array_begin(&w);
    for (size_t i = 0; i < count; i++) {
        const document_position *anchor = &list[i].anchor, *active = &list[i].active;
        jw_object_begin(&w);
        jw_key_position(&w, "position", active->line, active->column);
        if (anchor->line != active->line || anchor->column != active->column) {
            jw_key(&w, "selection");
            jw_object_begin(&w);
            jw_key_position(&w, "anchor", anchor->line, anchor->column);
            jw_key_position(&w, "active", active->line, active->column);
            jw_object_end(&w);
        }
        jw_object_end(&w);
    }
    jw_array_end(&w);
    return buf_detach(&b);
}

static void capture_document(void *ctx, const document_info *info)
{
    capture *c = ctx;
    if (c->count == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 8;
        c->docs = xrealloc(c->docs, c->cap * sizeof *c->docs);
    }
    captured_doc *d = &c->docs[c->count++];
    memset(d, 0, sizeof *d);
    d->uri = xstrdup(info->uri);
    buf path = BUF_INIT;
    if (file_path_from_uri(info->uri, strlen(info->uri), &path, NULL) == 0)
        d->path = buf_detach(&path);
    else
        d->path = xstrdup(info->uri);
    buf_free(&path);
    d->language_id = xstrdup(info->language_id);
    d->is_dirty = info->is_dirty;
    document_cursor *cursors = NULL;
    size_t count = 0;
    if (c->keep_cursors &&
        document_get_cursors(c->svc->docs, info->document_id, c->client, ECP_ENCODING_UTF16, &cursors, &count, NULL) == 0 &&
        count) {
        d->cursors_json = cursors_json(cursors, count);
        d->cursor_line = cursors[0].active.line;
        d->cursor_column = cursors[0].active.column;
    }
    free(cursors);
    if (c->keep_unsaved && info->is_dirty)
        d->unsaved = document_snapshot_take(c->svc->docs, info->document_id, NULL);
}

static capture *capture_now(session_service *self, uint64_t client, const char *name, const char *client_state)
{
    capture *c = xcalloc(1, sizeof *c);
    c->svc = self;
    c->client = client;
    c->keep_cursors = session_setting_bool(self, "session.save.cursorPositions", true);
    c->keep_unsaved = session_setting_bool(self, "session.save.unsavedContent", true);
    if (session_setting_bool(self, "session.save.openFiles", true))
        document_list(self->docs, capture_document, c);
    c->svc = NULL; /* the rest runs on the store's thread */
    c->instance_id = xstrdup(self->instance_id);
    c->workspace = self->workspace ? xstrdup(self->workspace) : NULL;
    c->name = name ? xstrdup(name) : NULL;
    c->client_state = client_state ? xstrdup(client_state) : NULL;
    c->timestamp = session__now_ms();
    c->sidebar_visible = session_setting_bool(self, "tui.sidebar.visible", true);
    c->sidebar_width = session_setting_number(self, "tui.sidebar.width", 36);
    c->terminal_height = session_setting_number(self, "tui.terminal.height", 10);
    c->minimap = session_setting_bool(self, "editor.minimap.enabled", true);
    c->ai_width = session_setting_number(self, "ai.panel.defaultWidth", 80);
    return c;
}

static void capture_free(capture *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->count; i++) {
        free_each(c->docs[i].uri, c->docs[i].path, c->docs[i].language_id, c->docs[i].cursors_json);
        document_snapshot_release(c->docs[i].unsaved);
    }
    free_each(c->docs, c->instance_id, c->workspace, c->name, c->client_state, c);
}

static void write_chunk(void *ctx, const char *p, size_t len) { jw_string_chunk(ctx, p, len); }

/* Writes the SessionState (any thread: it reads only the capture). */
static void write_state(const capture *c, buf *out)
{
    json_writer w;
    jw_init(&w, out);
    jw_object_begin(&w);
    jw_key_int(&w, "version", 1);
    char when[32];
    session_time_iso(when, c->timestamp);
    jw_key_string(&w, "timestamp", when);
    jw_key_string(&w, "instanceId", c->instance_id);
    jw_key_string(&w, "workspaceRoot", c->workspace);
    if (c->name)
        jw_key_string(&w, "sessionName", c->name);
    jw_key(&w, "documents");
    jw_array_begin(&w);
    for (size_t i = 0; i < c->count; i++) {
        const captured_doc *d = &c->docs[i];
        jw_object_begin(&w);
        jw_key_string(&w, "uri", d->uri);
        jw_key_string(&w, "filePath", d->path);
        jw_key_string(&w, "languageId", d->language_id);
        jw_key_bool(&w, "isDirty", d->is_dirty);
        jw_key_int(&w, "tabOrder", (int64_t)i);
        jw_key_bool(&w, "isActive", i + 1 == c->count);
        jw_key_string(&w, "paneId", "main");
        jw_key_int(&w, "scrollTop", 0);
        jw_key_int(&w, "scrollLeft", 0);
        jw_key(&w, "foldedRegions");
        jw_array_begin(&w);
        jw_array_end(&w);
        if (d->cursors_json) {
            jw_key_int(&w, "cursorLine", (int64_t)d->cursor_line);
            jw_key_int(&w, "cursorColumn", (int64_t)d->cursor_column);
            jw_key(&w, "cursors");
            jw_raw(&w, d->cursors_json, strlen(d->cursors_json));
        }
        if (d->unsaved) {
            jw_key(&w, "unsavedContent");
            jw_string_begin(&w);
            document_snapshot_read(d->unsaved, 0, document_snapshot_length(d->unsaved), write_chunk, &w, NULL);
            jw_string_end(&w);
        }
        jw_object_end(&w);
    }
    jw_array_end(&w);
    jw_key_string(&w, "activeDocumentPath", c->count ? c->docs[c->count - 1].path : NULL);
    jw_key_string(&w, "activePaneId", "main");
    jw_key(&w, "layout");
    jw_object_begin(&w);
    jw_key_string(&w, "type", "leaf");
    jw_key_string(&w, "paneId", "main");
    jw_object_end(&w);
    jw_key(&w, "ui");
    jw_object_begin(&w);
    jw_key_bool(&w, "sidebarVisible", c->sidebar_visible);
    jw_key_double(&w, "sidebarWidth", c->sidebar_width);
    jw_key_bool(&w, "terminalVisible", false);
    jw_key_double(&w, "terminalHeight", c->terminal_height);
    jw_key_bool(&w, "gitPanelVisible", false);
    jw_key_double(&w, "gitPanelWidth", c->sidebar_width);
    jw_key_string(&w, "activeSidebarPanel", "files");
    jw_key_bool(&w, "minimapEnabled", c->minimap);
    jw_key_bool(&w, "aiPanelVisible", false);
    jw_key_double(&w, "aiPanelWidth", c->ai_width);
    jw_object_end(&w);
    if (c->client_state) {
        jw_key(&w, "state");
        jw_raw(&w, c->client_state, strlen(c->client_state));
    }
    jw_object_end(&w);
}

/* ----- store operations ------------------------------------------------------------------------------ */

typedef enum session_action {
    SESSION_PUT,
    SESSION_GET,
    SESSION_LIST,
    SESSION_DELETE,
} session_action;

typedef struct session_op {
    session_action action;
    session_service *svc;
    char *id;
    char *name;
    char *workspace;
    char *state;
    capture *capture; /* SESSION_PUT: rendered into state on the store's thread */
    int64_t saved_at;
    int64_t document_count;
    bool found;
    session_summary *list;
    size_t list_count;
    session_save_cb save_cb;
    session_load_cb load_cb;
    session_list_cb list_cb;
    session_status_cb status_cb;
    void *ctx;
} session_op;

static char *column_text(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? xstrdup(s) : NULL;
}

static int session_work(sqlite3 *db, void *data, ecp_error *err)
{
    session_op *op = data;
    sqlite3_stmt *st;
    static const char *const sql[] = {
        [SESSION_PUT] = "INSERT OR REPLACE INTO sessions (id, name, type, workspace_root, saved_at, document_count, state) "
                        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        [SESSION_GET] = "SELECT state FROM sessions WHERE id = ?1",
        [SESSION_LIST] = "SELECT id, name, type, workspace_root, saved_at, document_count FROM sessions "
                         "ORDER BY saved_at DESC, id",
        [SESSION_DELETE] = "DELETE FROM sessions WHERE id = ?1",
    };
    if (op->action == SESSION_PUT) {
        buf state = BUF_INIT;
        write_state(op->capture, &state);
        op->state = buf_detach(&state);
    }
    int status = store_prepare(db, sql[op->action], &st, err);
    if (status < 0)
        return status;
    if (op->action != SESSION_LIST)
        sqlite3_bind_text(st, 1, op->id, -1, SQLITE_STATIC);
    if (op->action == SESSION_PUT) {
        sqlite3_bind_text(st, 2, op->name, -1, SQLITE_STATIC); /* NULL binds null */
        sqlite3_bind_text(st, 3, op->name ? "named" : "workspace", -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 4, op->workspace, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, op->saved_at);
        sqlite3_bind_int64(st, 6, op->document_count);
        sqlite3_bind_text(st, 7, op->state, -1, SQLITE_STATIC);
    }
    int rc;
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (op->action == SESSION_GET) {
            free(op->state);
            op->state = column_text(st, 0);
            op->found = op->state != NULL;
            continue;
        }
        if (op->list_count == cap) {
            cap = cap ? cap * 2 : 16;
            op->list = xrealloc(op->list, cap * sizeof *op->list);
        }
        op->list[op->list_count++] = (session_summary){
            .id = column_text(st, 0), .name = column_text(st, 1), .type = column_text(st, 2),
            .workspace_root = column_text(st, 3), .last_modified = sqlite3_column_int64(st, 4),
            .document_count = sqlite3_column_int64(st, 5),
        };
    }
    if (rc != SQLITE_DONE)
        status = store_error(db, rc, err, "sessions");
    else if (op->action == SESSION_DELETE)
        op->found = sqlite3_changes(db) > 0;
    sqlite3_finalize(st);
    return status;
}

static void set_current(session_service *self, const char *id, const char *state)
{
    free(self->current_id);
    free(self->current_state);
    self->current_id = id ? xstrdup(id) : NULL;
    self->current_state = state ? xstrdup(state) : NULL;
}

static void session_done(void *data, int status, const ecp_error *err)
{
    session_op *op = data;
    ecp_error missing;
    if (status == 0 && (op->action == SESSION_GET || op->action == SESSION_DELETE) && !op->found) {
        status = ecp_error_set(&missing, ECP_ENOTFOUND, "Session not found: %s", op->id);
        err = &missing;
    }
    switch (op->action) {
    case SESSION_PUT:
        if (status == 0)
            set_current(op->svc, op->id, op->state);
        op->save_cb(op->ctx, status, err, op->id);
        break;
    case SESSION_GET:
        if (status == 0)
            set_current(op->svc, op->id, op->state);
        op->load_cb(op->ctx, status, err, status == 0 ? op->state : NULL);
        break;
    case SESSION_LIST: op->list_cb(op->ctx, status, err, op->list, op->list_count); break;
    case SESSION_DELETE:
        if (status == 0 && op->svc->current_id && strcmp(op->svc->current_id, op->id) == 0)
            set_current(op->svc, NULL, NULL);
        op->status_cb(op->ctx, status, err);
        break;
    }
}

static void session_free(void *data)
{
    session_op *op = data;
    for (size_t i = 0; i < op->list_count; i++) {
        free_each((char *)op->list[i].id, (char *)op->list[i].name, (char *)op->list[i].type,
                  (char *)op->list[i].workspace_root);
    }
    free_each(op->list, op->id, op->name, op->workspace, op->state);
    capture_free(op->capture);
    free(op);
}

static const store_op_type session_type = {
    .name = "sessions", .transaction = true, .work = session_work, .done = session_done, .free_data = session_free,
};

static session_op *new_op(session_service *self, session_action action, const char *id, void *ctx)
{
    session_op *op = xcalloc(1, sizeof *op);
    op->action = action;
    op->svc = self;
    op->id = id ? xstrdup(id) : NULL;
    op->ctx = ctx;
    return op;
}

/* ----- the API ------------------------------------------------------------------------------------------- */

void session_save(session_service *self, uint64_t client, const char *name, const char *client_state_json,
                  session_save_cb cb, void *ctx)
{
    if (!name && !self->workspace) {
        ecp_error err;
        ecp_error_set(&err, ECP_ESTATE, "No workspace to save a session for: give the session a name, or start the "
                                        "server with --workspace");
        cb(ctx, err.status, &err, NULL);
        return;
    }
    char *id = name ? named_id(name) : workspace_id(self->workspace);
    session_op *op = new_op(self, SESSION_PUT, id, ctx);
    free(id);
    op->name = name ? xstrdup(name) : NULL;
    op->workspace = self->workspace ? xstrdup(self->workspace) : NULL;
    op->capture = capture_now(self, client, name, client_state_json);
    op->saved_at = op->capture->timestamp;
    op->document_count = (int64_t)op->capture->count;
    op->save_cb = cb;
    store_submit(self->store, &session_type, op);
}

void session_load(session_service *self, const char *id, session_load_cb cb, void *ctx)
{
    if (self->current_id && strcmp(self->current_id, id) == 0) {
        cb(ctx, 0, NULL, self->current_state);
        return;
    }
    session_op *op = new_op(self, SESSION_GET, id, ctx);
    op->load_cb = cb;
    store_submit(self->store, &session_type, op);
}

const char *session_current(session_service *self) { return self->current_state; }

void session_list(session_service *self, session_list_cb cb, void *ctx)
{
    session_op *op = new_op(self, SESSION_LIST, NULL, ctx);
    op->list_cb = cb;
    store_submit(self->store, &session_type, op);
}

void session_delete(session_service *self, const char *id, session_status_cb cb, void *ctx)
{
    session_op *op = new_op(self, SESSION_DELETE, id, ctx);
    op->status_cb = cb;
    store_submit(self->store, &session_type, op);
}

void session__sessions_free(session_service *self) { set_current(self, NULL, NULL); }

/* ----- reopening documents ---------------------------------------------------------------------------------- */

typedef struct reopen_run {
    session_service *svc;
    uint64_t client; /* whose cursors the saved ones become */
    reopen_item *items;
    size_t count, next;
    char **ids;
    size_t id_count;
    char **missing;
    size_t missing_count;
    bool waiting;  /* a document_open is out */
    bool stepping; /* inside step(): a synchronous callback must not recurse */
    reopen_item_cb each; /* may be NULL */
    session_reopen_cb cb;
    void *ctx;
} reopen_run;

static void step(reopen_run *run);

static bool same_text(session_service *self, const char *id, const char *text, size_t len)
{
    buf now = BUF_INIT;
    document_get_text(self->docs, id, NULL, ECP_ENCODING_UTF8, &now, NULL);
    bool same = now.len == len && (len == 0 || memcmp(now.data, text, len) == 0);
    buf_free(&now);
    return same;
}

static void apply_cursors(session_service *self, uint64_t client, const char *id, const char *json)
{
    json_doc doc = {0};
    if (!json || json_doc_parse(&doc, json, strlen(json), NULL) < 0) {
        json_doc_free(&doc);
        return;
    }
    json_ref list = json_root(&doc);
    size_t n = json_length(&doc, list), k = 0;
    document_cursor *cursors = xcalloc(n ? n : 1, sizeof *cursors);
    for (json_ref c = json_first(&doc, list); c != JSON_NO_REF; c = json_next(&doc, c)) {
        int64_t line, col;
        json_ref pos = json_get(&doc, c, "position");
        if (!json_int64(&doc, json_get(&doc, pos, "line"), &line) ||
            !json_int64(&doc, json_get(&doc, pos, "column"), &col) || line < 0 || col < 0)
            continue;
        document_cursor *cur = &cursors[k++];
        cur->active = (document_position){(size_t)line, (size_t)col};
        cur->anchor = cur->active;
        json_ref anchor = json_get(&doc, json_get(&doc, c, "selection"), "anchor");
        int64_t al, ac;
        if (json_int64(&doc, json_get(&doc, anchor, "line"), &al) && json_int64(&doc, json_get(&doc, anchor, "column"), &ac) &&
            al >= 0 && ac >= 0)
            cur->anchor = (document_position){(size_t)al, (size_t)ac};
    }
    if (k)
        /* stale positions: left as they are */
        document_set_cursors(self->docs, id, client, cursors, k, ECP_ENCODING_UTF16, NULL);
    free(cursors);
    json_doc_free(&doc);
}

static void push(char ***list, size_t *count, const char *s)
{
    *list = xrealloc(*list, (*count + 1) * sizeof **list);
    (*list)[(*count)++] = xstrdup(s);
}

static void opened(void *ctx, int status, const ecp_error *err, const char *document_id, bool already_open)
{
    reopen_run *run = ctx;
    reopen_item *item = &run->items[run->next - 1];
    session_service *self = run->svc;
    run->waiting = false;
    if (status == 0) {
        if (item->has_content && !same_text(self, document_id, item->content, item->content_len))
            document_set_content(self->docs, document_id, 0, item->content, item->content_len, NULL, NULL);
        apply_cursors(self, run->client, document_id, item->cursors_json);
        push(&run->ids, &run->id_count, document_id);
    } else {
        ecp_log(self->log, ECP_LOG_WARN, "session: cannot reopen %s: %s", item->uri, err ? err->message : "?");
        push(&run->missing, &run->missing_count, item->uri);
    }
    if (run->each)
        run->each(self, item, status == 0 ? document_id : NULL);
    if (!run->stepping)
        step(run);
}

static void finish(reopen_run *run)
{
    session_reopened result = {
        .document_ids = (const char *const *)run->ids, .document_count = run->id_count,
        .missing = (const char *const *)run->missing, .missing_count = run->missing_count,
    };
    run->cb(run->ctx, 0, NULL, &result);
    for (size_t i = 0; i < run->id_count; i++)
        free(run->ids[i]);
    for (size_t i = 0; i < run->missing_count; i++)
        free(run->missing[i]);
    for (size_t i = 0; i < run->count; i++) {
        free_each(run->items[i].uri, run->items[i].language_id, run->items[i].content, run->items[i].cursors_json);
    }
    free_each(run->ids, run->missing, run->items, run);
}

static void step(reopen_run *run)
{
    session_service *self = run->svc;
    run->stepping = true;
    while (!run->waiting && run->next < run->count) {
        reopen_item *item = &run->items[run->next++];
        buf path = BUF_INIT;
        file_info info = {0};
        bool is_file = file_path_from_uri(item->uri, strlen(item->uri), &path, NULL) == 0;
        bool exists = !is_file || (file_stat(path.data, &info, NULL) == 0 && info.exists);
        buf_free(&path);
        if (!exists)
            push(&run->missing, &run->missing_count, item->uri);
        if (!exists && !item->has_content)
            continue;
        document_open_options o = {.uri = item->uri, .language_id = item->language_id};
        if (!exists)
            o.content = "", o.content_len = 0; /* the file is gone: its text comes from what was kept */
        run->waiting = true;
        document_open(self->docs, &o, opened, run);
    }
    run->stepping = false;
    if (!run->waiting && run->next >= run->count)
        finish(run);
}

void session__reopen(session_service *self, uint64_t client, reopen_item *items, size_t count, reopen_item_cb each,
                     session_reopen_cb cb, void *ctx)
{
    reopen_run *run = xmalloc(sizeof *run);
    *run = (reopen_run){
        .svc = self, .client = client, .items = items, .count = count, .each = each, .cb = cb, .ctx = ctx,
    };
    step(run);
}

/* ----- restore ------------------------------------------------------------------------------------------------ */

typedef struct restore_ctx {
    session_service *svc;
    uint64_t client;
    session_reopen_cb cb;
    void *ctx;
} restore_ctx;

static void restore_loaded(void *ctx, int status, const ecp_error *err, const char *state)
{
    restore_ctx *r = ctx;
    if (status < 0) {
        r->cb(r->ctx, status, err, NULL);
        free(r);
        return;
    }
    json_doc doc = {0};
    reopen_item *items = NULL;
    size_t n = 0;
    if (json_doc_parse(&doc, state, strlen(state), NULL) == 0) {
        json_ref docs = json_get(&doc, json_root(&doc), "documents");
        items = xcalloc(json_length(&doc, docs) + 1, sizeof *items);
        arena a = ARENA_INIT;
        for (json_ref d = json_first(&doc, docs); d != JSON_NO_REF; d = json_next(&doc, d)) {
            const char *uri, *lang, *content;
            size_t len;
            if (!json_string(&doc, json_get(&doc, d, "uri"), &a, &uri, NULL))
                continue;
            reopen_item *it = &items[n++];
            it->uri = xstrdup(uri);
            if (json_string(&doc, json_get(&doc, d, "languageId"), &a, &lang, NULL))
                it->language_id = xstrdup(lang);
            if (json_string(&doc, json_get(&doc, d, "unsavedContent"), &a, &content, &len)) {
                it->content = xstrndup(content, len);
                it->content_len = len;
                it->has_content = true;
            }
            json_ref cursors = json_get(&doc, d, "cursors");
            if (cursors != JSON_NO_REF) {
                size_t clen;
                const char *raw = json_raw(&doc, cursors, &clen);
                it->cursors_json = xstrndup(raw, clen);
            }
        }
        arena_free(&a);
    }
    json_doc_free(&doc);
    session__reopen(r->svc, r->client, items, n, NULL, r->cb, r->ctx);
    free(r);
}

void session_restore(session_service *self, uint64_t client, const char *id, session_reopen_cb cb, void *ctx)
{
    restore_ctx *r = xcalloc(1, sizeof *r);
    r->svc = self;
    r->client = client;
    r->cb = cb;
    r->ctx = ctx;
    session_load(self, id, restore_loaded, r);
}
