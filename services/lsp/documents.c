/* The documents servers follow: opened, changed, saved and closed on their
 * language's server, whether the document service or a client holds them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "document/interface.h"
#include "event.h"
#include "internal.h"
#include "json.h"
#include "json_writer.h"
#include "session/interface.h"
#include "job.h"
#include "shared.h"
#include "uri.h"

/* ----- documents on servers -------------------------------------------------------------- */

/* Language servers know files only by file:// URIs, while a document may
 * have been opened by its plain path: both spellings name the document by its
 * URI here, so a server hears a URI and the client's either form finds it. */
char *lsp_doc_uri(const char *uri)
{
    const char *scheme;
    size_t scheme_len;
    size_t len = strlen(uri);
    if (uri[0] != '/' || uri_scheme(uri, len, &scheme, &scheme_len))
        return xstrdup(uri);
    buf path = BUF_INIT, out = BUF_INIT;
    uri_path_normalize(&path, uri, len);
    uri_from_path(&out, path.data, path.len);
    buf_free(&path);
    return buf_detach(&out);
}

lsp_doc *lsp_doc_find(lsp_service *self, const char *uri)
{
    char *want = lsp_doc_uri(uri);
    lsp_doc *found = ecp_map_get(self->docs_by_uri, want);
    free(want);
    return found;
}

static lsp_doc *doc_find_id(lsp_service *self, const char *document_id)
{
    return ecp_map_get(self->docs_by_id, document_id);
}

/* Points uri at the first doc in the list that has it, or at none. */
static void uri_index_rescan(lsp_service *self, const char *uri)
{
    for (lsp_doc *d = self->docs; d; d = d->next)
        if (strcmp(d->uri, uri) == 0) {
            ecp_map_set(self->docs_by_uri, uri, d, NULL);
            return;
        }
    ecp_map_remove(self->docs_by_uri, uri, NULL);
}

/* d, in the list, has just taken d->uri. Two docs may share a uri for a while
 * (an editor's document saved under the name of one opened by lsp/didOpen);
 * the one found is the first in the list, as before the index existed. */
static void uri_index_add(lsp_service *self, lsp_doc *d)
{
    void *holder = NULL;
    if (!ecp_map_find(self->docs_by_uri, d->uri, &holder)) {
        ecp_map_set(self->docs_by_uri, d->uri, d, NULL);
    } else if (holder != d) {
        self->doc_uris_shared = true;
        uri_index_rescan(self, d->uri);
    }
}

/* d, out of the list or renamed, gives uri up. */
static void uri_index_drop(lsp_service *self, lsp_doc *d, const char *uri)
{
    if (ecp_map_get(self->docs_by_uri, uri) != d)
        return;
    if (self->doc_uris_shared)
        uri_index_rescan(self, uri);
    else
        ecp_map_remove(self->docs_by_uri, uri, NULL);
}

lsp_server *lsp_server_find(lsp_service *self, const char *language_id)
{
    for (lsp_server *s = self->servers; s; s = s->next)
        if (strcmp(s->language_id, language_id) == 0)
            return s;
    return NULL;
}

static void doc_text(lsp_service *self, const lsp_doc *d, buf *out)
{
    if (!d->document_id)
        buf_append(out, d->text ? d->text : "", d->len);
    else if (self->documents)
        document_get_text(self->documents, d->document_id, NULL, ECP_ENCODING_UTF8, out, NULL);
}

/* A server reads the project files beside each document it is sent, so a
 * file from a folder that is not trusted is kept from it even when the
 * server's own root is trusted. Texts with no file (untitled:) have none. */
static bool may_reach_servers(lsp_service *self, const char *uri)
{
    if (strncmp(uri, "file:", 5) != 0)
        return true;
    const char *slash = strrchr(uri, '/');
    char *folder = xstrndup(uri, slash ? (size_t)(slash - uri) : strlen(uri));
    bool trusted = lsp_trust_check(self, folder, NULL) == 0;
    free(folder);
    return trusted;
}

/* Starts the params of a notification about the document at uri, {"textDocument": {"uri": uri, ...: the
 * caller writes what else the document's object holds, then closes it and the params. */
static void text_document_begin(json_writer *w, buf *params, const char *uri)
{
    buf_init(params);
    jw_init(w, params);
    jw_object_begin(w);
    jw_key(w, "textDocument");
    jw_object_begin(w);
    jw_key_string(w, "uri", uri);
}

void lsp_send_did_open(lsp_server *s, const lsp_doc *d)
{
    if (d->withheld)
        return;
    buf text, params;
    buf_init(&text);
    doc_text(s->svc, d, &text);
    json_writer w;
    text_document_begin(&w, &params, d->uri);
    jw_key_string(&w, "languageId", d->language_id);
    jw_key_int(&w, "version", d->version);
    jw_key_string_n(&w, "text", text.data ? text.data : "", text.len);
    jw_object_end(&w);
    jw_object_end(&w);
    lsp_server_notify(s, "textDocument/didOpen", params.data, params.len);
    buf_free(&text);
    buf_free(&params);
}

static void send_did_close(lsp_server *s, const char *uri)
{
    buf params;
    json_writer w;
    text_document_begin(&w, &params, uri);
    jw_object_end(&w);
    jw_object_end(&w);
    lsp_server_notify(s, "textDocument/didClose", params.data, params.len);
    buf_free(&params);
}

/* ----- didChange, made off the loop when it is big ------------------------------------------ */

/* A part of a didChange message: JSON text as it is, or text to write as the
 * body of a JSON string (the snapshot's whole text when text is NULL). */
typedef struct change_piece {
    char *text;
    size_t len;
    bool escape;
} change_piece;

typedef struct change_job {
    document_snapshot *snap; /* the whole text of a full-sync change, or NULL */
    change_piece *pieces;
    size_t count, cap;
    size_t escaped_bytes; /* how much text is to be escaped: what decides whether a job makes it */
    ecp_shared *out;      /* the framed message, pending until the job has made it */
    char *framed;
    size_t framed_len;
} change_job;

static void piece_add(change_job *j, char *text, size_t len, bool escape)
{
    if (j->count == j->cap) {
        j->cap = j->cap ? j->cap * 2 : 4;
        j->pieces = xrealloc(j->pieces, j->cap * sizeof *j->pieces);
    }
    j->pieces[j->count++] = (change_piece){text, len, escape};
    if (escape)
        j->escaped_bytes += text ? len : document_snapshot_length(j->snap);
}

/* Ends the JSON text gathered so far as a piece of its own. */
static void piece_literal(change_job *j, buf *json)
{
    size_t len = json->len;
    piece_add(j, buf_detach(json), len, false);
}

static void append_to(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

/* Any thread: the framed message from its pieces. */
static void change_build(change_job *j)
{
    buf body = BUF_INIT;
    for (size_t i = 0; i < j->count; i++) {
        const change_piece *pc = &j->pieces[i];
        if (!pc->escape) {
            buf_append(&body, pc->text ? pc->text : "", pc->len);
        } else if (pc->text) {
            json_escape_into(&body, pc->text, pc->len);
        } else {
            /* whole, so that no character is cut between two chunks */
            buf text = BUF_INIT;
            document_snapshot_read(j->snap, 0, document_snapshot_length(j->snap), append_to, &text, NULL);
            json_escape_into(&body, text.data ? text.data : "", text.len);
            buf_free(&text);
        }
    }
    buf framed = BUF_INIT;
    lsp_frame(&framed, body.data ? body.data : "", body.len);
    buf_free(&body);
    j->framed_len = framed.len;
    j->framed = framed.data ? buf_detach(&framed) : xstrdup("");
}

static void change_work(ecp_job *job, unsigned item)
{
    (void)item;
    change_build(ecp_job_data(job));
}

static void change_done(ecp_job *job)
{
    change_job *j = ecp_job_data(job);
    if (!j->framed) /* not made: the server is past hearing it */
        j->framed = xstrdup("");
    ecp_shared_fill(j->out, j->framed, j->framed_len);
    j->framed = NULL;
}

static void change_free(void *data)
{
    change_job *j = data;
    for (size_t i = 0; i < j->count; i++)
        free(j->pieces[i].text);
    free(j->pieces);
    free(j->framed);
    document_snapshot_release(j->snap);
    ecp_shared_unref(j->out);
    free(j);
}

static const ecp_job_type change_type = {"lsp.didChange", ECP_LANE_SHORT, false, change_work, change_done, change_free};

/* Sends the didChange: made on the loop when it is small, else by a job, the
 * messages sent to the server after it held until it is made, so that the
 * server hears them in the order they were sent. Takes j. */
static void send_change(lsp_server *s, change_job *j)
{
    lsp_service *svc = s->svc;
    if (svc->jobs && s->proc && j->escaped_bytes >= LSP_OFF_LOOP_TEXT) {
        j->out = ecp_shared_pending();
        lsp_proc_write_shared(s->proc, j->out);
        ecp_job_start(ecp_job_new(svc->jobs, &change_type, j), 1);
        return;
    }
    change_build(j);
    lsp_proc_write(s->proc, j->framed, j->framed_len);
    change_free(j);
}

static void change_head(buf *json, const lsp_doc *d)
{
    buf_append_str(json, "{\"jsonrpc\":\"2.0\",\"method\":\"textDocument/didChange\",\"params\":{\"textDocument\":{\"uri\":\"");
    json_escape_into(json, d->uri, strlen(d->uri));
    buf_appendf(json, "\",\"version\":%lld},\"contentChanges\":[", (long long)d->version);
}

/* A whole-text didChange: of a document the editor holds, from a snapshot of
 * it, escaped off the loop. */
static void send_full_change(lsp_server *s, const lsp_doc *d)
{
    if (d->withheld)
        return;
    change_job *j = xcalloc(1, sizeof *j);
    if (d->document_id && s->svc->documents)
        j->snap = document_snapshot_take(s->svc->documents, d->document_id, NULL);
    buf json = BUF_INIT;
    change_head(&json, d);
    buf_append_str(&json, "{\"text\":\"");
    piece_literal(j, &json);
    if (j->snap) {
        piece_add(j, NULL, 0, true);
    } else {
        buf text = BUF_INIT;
        doc_text(s->svc, d, &text);
        size_t len = text.len;
        piece_add(j, text.data ? buf_detach(&text) : xstrdup(""), len, true);
    }
    buf_append_str(&json, "\"}]}}");
    piece_literal(j, &json);
    send_change(s, j);
}

/* An incremental didChange: a huge text in it is escaped off the loop. */
static void send_incremental_change(lsp_server *s, const lsp_doc *d, const document_change_event *event)
{
    if (d->withheld)
        return;
    change_job *j = xcalloc(1, sizeof *j);
    buf json = BUF_INIT;
    change_head(&json, d);
    for (size_t i = 0; i < event->count; i++) {
        const document_change *c = &event->changes[i];
        buf_appendf(&json,
                    "%s{\"range\":{\"start\":{\"line\":%zu,\"character\":%zu},\"end\":{\"line\":%zu,\"character\":%zu}},"
                    "\"rangeLength\":%zu,\"text\":\"",
                    i ? "," : "", c->start.line, c->start.column[s->enc], c->end.line, c->end.column[s->enc],
                    c->range_length[s->enc]);
        if (c->text_len >= LSP_OFF_LOOP_TEXT) {
            piece_literal(j, &json);
            char *copy = xmalloc(c->text_len + 1);
            memcpy(copy, c->text, c->text_len);
            piece_add(j, copy, c->text_len, true);
        } else {
            json_escape_into(&json, c->text, c->text_len);
        }
        buf_append_str(&json, "\"}");
    }
    buf_append_str(&json, "]}}");
    piece_literal(j, &json);
    send_change(s, j);
}

static void send_did_save(lsp_server *s, const lsp_doc *d)
{
    if (d->withheld)
        return;
    buf text, params;
    buf_init(&text);
    json_writer w;
    text_document_begin(&w, &params, d->uri);
    jw_object_end(&w);
    if (s->save_text) {
        doc_text(s->svc, d, &text);
        jw_key_string_n(&w, "text", text.data ? text.data : "", text.len);
    }
    jw_object_end(&w);
    lsp_server_notify(s, "textDocument/didSave", params.data, params.len);
    buf_free(&text);
    buf_free(&params);
}

/* The server of a document, when it runs or is starting. */
static lsp_server *doc_server(lsp_service *self, const lsp_doc *d)
{
    if (d->withheld)
        return NULL;
    lsp_server *s = lsp_server_find(self, d->language_id);
    return s && (s->status == LSP_READY || s->status == LSP_STARTING) ? s : NULL;
}

/* ----- documents -------------------------------------------------------------------------------- */

static lsp_doc *doc_add(lsp_service *self, const char *uri, const char *language_id, const char *document_id)
{
    lsp_doc *d = xcalloc(1, sizeof *d);
    d->uri = lsp_doc_uri(uri);
    d->language_id = xstrdup(language_id);
    d->document_id = document_id ? xstrdup(document_id) : NULL;
    d->withheld = !may_reach_servers(self, d->uri);
    d->next = self->docs;
    self->docs = d;
    uri_index_add(self, d);
    if (d->document_id)
        ecp_map_set(self->docs_by_id, d->document_id, d, NULL);
    return d;
}

void lsp_doc_remove(lsp_service *self, lsp_doc *d)
{
    for (lsp_doc **pp = &self->docs; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    uri_index_drop(self, d, d->uri);
    if (d->document_id && ecp_map_get(self->docs_by_id, d->document_id) == d)
        ecp_map_remove(self->docs_by_id, d->document_id, NULL);
    free(d->uri);
    free(d->language_id);
    free(d->document_id);
    free(d->text);
    free(d);
}

static void auto_started(void *ctx, int status, const ecp_error *err, const lsp_server_info *info)
{
    (void)ctx, (void)status, (void)err, (void)info; /* reported through on_status */
}

int lsp_document_open(lsp_service *self, const char *uri, const char *language_id, const char *text, size_t len,
                      ecp_error *err)
{
    (void)err;
    lsp_doc *d = lsp_doc_find(self, uri);
    if (d && d->document_id)
        return 0; /* the editor's own document wins: it is already followed */
    bool reopen = d != NULL;
    if (reopen && strcmp(d->language_id, language_id) != 0) {
        lsp_server *old = doc_server(self, d);
        if (old && old->status == LSP_READY)
            send_did_close(old, uri);
        lsp_doc_remove(self, d);
        d = NULL;
        reopen = false;
    }
    if (!d)
        d = doc_add(self, uri, language_id, NULL);
    free(d->text);
    d->text = xmalloc(len + 1);
    memcpy(d->text, text, len);
    d->text[len] = '\0';
    d->len = len;
    d->version = reopen ? d->version + 1 : 1;
    lsp_server *s = lsp_server_find(self, language_id);
    if (s && s->status == LSP_READY) {
        if (reopen)
            send_full_change(s, d);
        else
            lsp_send_did_open(s, d);
    } else if (!s) {
        lsp_autostart_document(self, language_id);
    } else if (s->status != LSP_STARTING) { /* a server that failed is tried again */
        lsp_server_config config;
        if (lsp_config_get(self, language_id, &config))
            lsp_server_start(self, language_id, NULL, auto_started, NULL);
    }
    return 0;
}

int lsp_document_change(lsp_service *self, const char *uri, const char *text, size_t len, int64_t version)
{
    lsp_doc *d = lsp_doc_find(self, uri);
    if (!d || d->document_id)
        return 0;
    free(d->text);
    d->text = xmalloc(len + 1);
    memcpy(d->text, text, len);
    d->text[len] = '\0';
    d->len = len;
    d->version = version > d->version ? version : d->version + 1;
    lsp_server *s = doc_server(self, d);
    if (s && s->status == LSP_READY)
        send_full_change(s, d);
    return 0;
}

int lsp_document_save(lsp_service *self, const char *uri, const char *text, size_t len)
{
    lsp_doc *d = lsp_doc_find(self, uri);
    if (!d)
        return 0;
    if (text && !d->document_id)
        lsp_document_change(self, uri, text, len, d->version + 1);
    lsp_server *s = doc_server(self, d);
    if (s && s->status == LSP_READY)
        send_did_save(s, d);
    return 0;
}

int lsp_document_close(lsp_service *self, const char *uri)
{
    lsp_doc *d = lsp_doc_find(self, uri);
    if (d && !d->document_id) {
        lsp_server *s = doc_server(self, d);
        if (s && s->status == LSP_READY)
            send_did_close(s, uri);
        lsp_doc_remove(self, d);
    }
    lsp_diag_clear(self, uri);
    return 0;
}

/* A folder's trust changed: documents from folders now trusted reach the
 * servers running for them, those from folders no longer trusted are taken
 * back (servers rooted there are stopped by the trust check itself). */
void lsp_documents_trust_changed(lsp_service *self)
{
    for (lsp_doc *d = self->docs; d; d = d->next) {
        bool withheld = !may_reach_servers(self, d->uri);
        if (withheld == d->withheld)
            continue;
        lsp_server *s = lsp_server_find(self, d->language_id);
        bool ready = s && s->status == LSP_READY;
        if (withheld && ready)
            send_did_close(s, d->uri);
        d->withheld = withheld;
        if (!withheld && ready)
            lsp_send_did_open(s, d);
    }
}

/* ----- following the document service ------------------------------------------------------------ */

static void on_doc_open(void *ctx, const document_info *info)
{
    lsp_service *self = ctx;
    lsp_server_config config;
    if (!info->language_id || !lsp_config_get(self, info->language_id, &config))
        return;
    lsp_doc *old = lsp_doc_find(self, info->uri);
    if (old && !old->document_id) {
        lsp_server *s = doc_server(self, old);
        if (s && s->status == LSP_READY)
            send_did_close(s, old->uri);
        lsp_doc_remove(self, old);
    }
    lsp_doc *d = doc_add(self, info->uri, info->language_id, info->document_id);
    d->version = (int64_t)info->version;
    lsp_server *s = lsp_server_find(self, d->language_id);
    if (s && s->status == LSP_READY)
        lsp_send_did_open(s, d);
}

static void on_doc_change(void *ctx, const document_change_event *event)
{
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, event->document_id);
    if (!d)
        return;
    d->version = (int64_t)event->version;
    lsp_server *s = lsp_server_find(self, d->language_id);
    if (!s || s->status != LSP_READY)
        return;
    if (s->sync_kind == 0)
        return;
    if (s->sync_kind == 1) {
        send_full_change(s, d);
        return;
    }
    send_incremental_change(s, d, event);
}

static void on_doc_save(void *ctx, const char *document_id, const char *uri, uint64_t version)
{
    (void)version;
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, document_id);
    if (!d)
        return;
    lsp_server *s = lsp_server_find(self, d->language_id);
    bool ready = s && s->status == LSP_READY;
    if (uri && strcmp(uri, d->uri) != 0) {
        /* saved under another name: the server sees the old one close and the new one open */
        if (ready && !d->withheld)
            send_did_close(s, d->uri);
        lsp_diag_clear(self, d->uri);
        char *old_uri = d->uri;
        d->uri = xstrdup(uri);
        d->withheld = !may_reach_servers(self, d->uri);
        uri_index_drop(self, d, old_uri);
        uri_index_add(self, d);
        free(old_uri);
        if (ready)
            lsp_send_did_open(s, d);
    }
    if (ready)
        send_did_save(s, d);
}

static void on_doc_close(void *ctx, const char *document_id, const char *uri)
{
    lsp_service *self = ctx;
    lsp_doc *d = doc_find_id(self, document_id);
    if (!d)
        return;
    lsp_server *s = lsp_server_find(self, d->language_id);
    if (s && s->status == LSP_READY && !d->withheld)
        send_did_close(s, d->uri);
    lsp_diag_clear(self, uri);
    lsp_doc_remove(self, d);
}

static const document_listener doc_listener = {
    .on_open = on_doc_open, .on_change = on_doc_change, .on_save = on_doc_save, .on_close = on_doc_close,
};

void lsp_documents_follow(lsp_service *self)
{
    document_subscribe(self->documents, &doc_listener, self);
    document_list(self->documents, on_doc_open, self); /* those open before us */
}

void lsp_documents_unfollow(lsp_service *self) { document_unsubscribe(self->documents, &doc_listener, self); }

