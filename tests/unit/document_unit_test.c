/* The document service through its C API, as the LSP and syntax services
 * use it: change events in every encoding, listeners, offsets in units over
 * checkpoints, the undo limit, file reading and writing corner cases, and a
 * random differential run against a plain string model. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "document/interface.h"
#include "internal.h"

typedef struct fx {
    uv_loop_t loop;
    ecp_pool *pool;
    document_service *svc;
    char dir[64];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->pool = ecp_pool_new(&f->loop, NULL);
    f->svc = document_service_new(f->pool, NULL);
    strcpy(f->dir, "/tmp/ecpd-doc-unit-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    document_service_free(f->svc);
    ecp_pool_free(f->pool);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
    if (system(cmd) != 0)
        return -1;
    free(f);
    return 0;
}

typedef struct opened {
    int status;
    char id[64];
    bool done;
} opened;

static void on_opened(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    opened *o = ctx;
    o->status = status;
    o->done = true;
    if (id)
        snprintf(o->id, sizeof o->id, "%s", id);
}

static void open_text(fx *f, const char *uri, const char *text, char id[64])
{
    opened o = {0};
    document_open_options opt = {.uri = uri, .content = text, .content_len = strlen(text)};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    assert_true(o.done);
    assert_int_equal(o.status, 0);
    strcpy(id, o.id);
}

static char *text_of(fx *f, const char *id)
{
    buf out = BUF_INIT;
    assert_int_equal(document_get_text(f->svc, id, NULL, ECP_ENCODING_UTF8, &out, NULL), 0);
    return buf_detach(&out);
}

/* ----- events ------------------------------------------------------------------- */

typedef struct recorder {
    int opens, changes, cursors, closes, saves;
    document_change last[4];
    size_t last_count;
    char text[64];
    uint64_t version;
    document_service *svc;
    const document_listener *self;
    bool leave_on_change;
} recorder;

static void rec_open(void *ctx, const document_info *info) { ((recorder *)ctx)->opens++; }
static void rec_cursors(void *ctx, const char *id, uint64_t owner) { ((recorder *)ctx)->cursors++; }
static void rec_close(void *ctx, const char *id, const char *uri) { ((recorder *)ctx)->closes++; }
static void rec_save(void *ctx, const char *id, const char *uri, uint64_t v) { ((recorder *)ctx)->saves++; }

static void rec_change(void *ctx, const document_change_event *ev)
{
    recorder *r = ctx;
    r->changes++;
    r->version = ev->version;
    r->last_count = ev->count < 4 ? ev->count : 4;
    memcpy(r->last, ev->changes, r->last_count * sizeof *ev->changes);
    snprintf(r->text, sizeof r->text, "%.*s", (int)ev->changes[0].text_len, ev->changes[0].text);
    if (r->leave_on_change)
        document_unsubscribe(r->svc, r->self, r);
}

static const document_listener rec_listener = {rec_open, rec_change, rec_cursors, rec_close, rec_save};

static void test_change_event_in_every_encoding(void **state)
{
    fx *f = *state;
    recorder rec = {0};
    document_subscribe(f->svc, &rec_listener, &rec);
    char id[64];
    /* line 1: x U+1F600 y U+4E2D z */
    open_text(f, "memory://e", "first\nx\xF0\x9F\x98\x80y\xE4\xB8\xADz\nlast", id);
    assert_int_equal(rec.opens, 1);
    /* Replace from after the emoji (line 1) to the start of "last". */
    document_edit e = {{{1, 3}, {2, 0}}, "NEW", 3};
    uint64_t version;
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF16, 0, &version, NULL), 0);
    assert_int_equal(version, 2);
    assert_int_equal(rec.changes, 1);
    assert_int_equal(rec.version, 2);
    const document_change *c = &rec.last[0];
    assert_int_equal(c->offset, 6 + 5);
    assert_int_equal(c->deleted_len, 1 + 3 + 1 + 1);
    assert_int_equal(c->start.line, 1);
    assert_int_equal(c->start.column[ECP_ENCODING_UTF8], 5);
    assert_int_equal(c->start.column[ECP_ENCODING_UTF16], 3);
    assert_int_equal(c->start.column[ECP_ENCODING_UTF32], 2);
    assert_int_equal(c->end.line, 2);
    assert_int_equal(c->end.column[ECP_ENCODING_UTF8], 0);
    assert_int_equal(c->range_length[ECP_ENCODING_UTF8], 6);
    assert_int_equal(c->range_length[ECP_ENCODING_UTF16], 4);
    assert_int_equal(c->range_length[ECP_ENCODING_UTF32], 4);
    assert_string_equal(rec.text, "NEW");
    char *t = text_of(f, id);
    assert_string_equal(t, "first\nx\xF0\x9F\x98\x80NEWlast");
    free(t);

    /* Cursor events come from the cursor functions only. */
    document_position at = {0, 2};
    assert_int_equal(document_add_cursor(f->svc, id, 0, &at, ECP_ENCODING_UTF16, NULL), 0);
    assert_int_equal(rec.cursors, 1);
    assert_int_equal(rec.changes, 1);

    /* A listener may leave from inside its own callback. */
    rec.svc = f->svc;
    rec.self = &rec_listener;
    rec.leave_on_change = true;
    assert_int_equal(document_set_content(f->svc, id, 0, "z", 1, NULL, NULL), 0);
    assert_int_equal(rec.changes, 2);
    assert_int_equal(document_set_content(f->svc, id, 0, "zz", 2, NULL, NULL), 0);
    assert_int_equal(rec.changes, 2);
    assert_int_equal(document_close(f->svc, id, NULL), 0);
    assert_int_equal(rec.closes, 0);
}

/* Subscriptions changed by a listener during an event, as event.h promises:
 * one removed is not called after its removal, one added is called from the
 * next event on. */
typedef struct juggler {
    document_service *svc;
    char name;
    char *journal;
    struct juggler *remove, *add;
    bool leave;
} juggler;

static void juggle_change(void *ctx, const document_change_event *ev);
static const document_listener juggle_listener = {.on_change = juggle_change};

static void juggle_change(void *ctx, const document_change_event *ev)
{
    juggler *j = ctx;
    strncat(j->journal, &j->name, 1);
    if (j->leave)
        document_unsubscribe(j->svc, &juggle_listener, j);
    if (j->remove)
        document_unsubscribe(j->svc, &juggle_listener, j->remove);
    if (j->add)
        document_subscribe(j->svc, &juggle_listener, j->add);
    j->leave = false;
    j->remove = j->add = NULL;
}

static void test_listeners_change_during_an_event(void **state)
{
    fx *f = *state;
    char journal[32] = "";
    juggler a = {.svc = f->svc, .name = 'a', .journal = journal}, b = {.svc = f->svc, .name = 'b', .journal = journal}, c = {.svc = f->svc, .name = 'c', .journal = journal};
    juggler d = {.svc = f->svc, .name = 'd', .journal = journal};
    a.leave = true;
    a.remove = &c;
    a.add = &d;
    document_subscribe(f->svc, &juggle_listener, &a);
    document_subscribe(f->svc, &juggle_listener, &b);
    document_subscribe(f->svc, &juggle_listener, &c);
    char id[64];
    open_text(f, "memory://j", "text", id);
    assert_int_equal(document_set_content(f->svc, id, 0, "one", 3, NULL, NULL), 0);
    assert_string_equal(journal, "ab");
    journal[0] = '\0';
    assert_int_equal(document_set_content(f->svc, id, 0, "two", 3, NULL, NULL), 0);
    assert_string_equal(journal, "bd");
    document_unsubscribe(f->svc, &juggle_listener, &b);
    document_unsubscribe(f->svc, &juggle_listener, &d);
}

static void saved_cb(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri)
{
    int *out = ctx;
    *out = status;
}

static void test_cancelled_save_still_writes(void **state)
{
    fx *f = *state;
    recorder rec = {0};
    document_subscribe(f->svc, &rec_listener, &rec);
    char id[64], uri[160], path[128];
    snprintf(path, sizeof path, "%s/kept.txt", f->dir);
    snprintf(uri, sizeof uri, "file://%s", path);
    open_text(f, "memory://s", "data", id);
    int status = 1;
    document_request *req = document_save(f->svc, id, uri, saved_cb, &status);
    assert_non_null(req);
    document_request_cancel(f->svc, req);
    assert_int_equal(status, ECP_ECANCELED);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    FILE *in = fopen(path, "rb");
    assert_non_null(in);
    char got[16] = {0};
    assert_int_equal(fread(got, 1, sizeof got, in), 4);
    fclose(in);
    assert_string_equal(got, "data");
    document_info info;
    assert_int_equal(document_get_info(f->svc, id, &info, NULL), 0);
    assert_false(info.is_dirty);
    assert_string_equal(info.uri, uri);
    assert_int_equal(rec.saves, 1);
}

/* Freeing the service answers what is still pending, once each, with
 * ECP_ECANCELED, and a save already asked for still reaches the disk. */
typedef struct answers {
    int opens, saves, reloads;
    int open_status, save_status, reload_status;
} answers;

static void count_open(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    answers *a = ctx;
    a->opens++;
    a->open_status = status;
}

static void count_save(void *ctx, int status, const ecp_error *err, uint64_t version, const char *uri)
{
    answers *a = ctx;
    a->saves++;
    a->save_status = status;
}

static void count_reload(void *ctx, int status, const ecp_error *err, uint64_t version)
{
    answers *a = ctx;
    a->reloads++;
    a->reload_status = status;
}

static void copy_id(void *ctx, const document_info *info) { snprintf(ctx, 64, "%s", info->document_id); }

static void write_large(const char *path, size_t lines)
{
    FILE *out = fopen(path, "wb");
    assert_non_null(out);
    for (size_t i = 0; i < lines; i++)
        fprintf(out, "line %08zu of a file larger than one mebibyte\n", i);
    fclose(out);
}

static void test_free_answers_pending_requests(void **state)
{
    fx *f = *state;
    char big[128], other[128], saved[128], uri[192];
    snprintf(big, sizeof big, "%s/big.txt", f->dir);
    snprintf(other, sizeof other, "%s/other.txt", f->dir);
    snprintf(saved, sizeof saved, "%s/saved.txt", f->dir);
    write_large(big, 100000);
    write_large(other, 100000);

    /* A document to reload and to save. */
    snprintf(uri, sizeof uri, "file://%s", other);
    document_open_options opt = {.uri = uri};
    answers first = {0};
    assert_non_null(document_open(f->svc, &opt, count_open, &first));
    while (first.opens == 0)
        uv_run(&f->loop, UV_RUN_ONCE);
    assert_int_equal(first.open_status, 0);
    char id[64] = "";
    document_list(f->svc, copy_id, id); /* the only open document */
    assert_true(id[0] != '\0');
    document_edit e = {{{0, 0}, {0, 0}}, "edited\n", 7};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);

    answers a = {0};
    snprintf(uri, sizeof uri, "file://%s", big);
    opt.uri = uri;
    assert_non_null(document_open(f->svc, &opt, count_open, &a));
    assert_non_null(document_open(f->svc, &opt, count_open, &a)); /* joins the first read */
    assert_non_null(document_reload(f->svc, id, true, count_reload, &a));
    char save_uri[192];
    snprintf(save_uri, sizeof save_uri, "file://%s", saved);
    assert_non_null(document_save(f->svc, id, save_uri, count_save, &a));
    assert_int_equal(a.opens + a.saves + a.reloads, 0);

    document_service_free(f->svc);
    f->svc = NULL;
    assert_int_equal(a.opens, 2);
    assert_int_equal(a.open_status, ECP_ECANCELED);
    assert_int_equal(a.reloads, 1);
    assert_int_equal(a.reload_status, ECP_ECANCELED);
    assert_int_equal(a.saves, 1);
    assert_int_equal(a.save_status, ECP_ECANCELED);
    /* The save was written before the service went. */
    FILE *in = fopen(saved, "rb");
    assert_non_null(in);
    char head[8] = {0};
    assert_int_equal(fread(head, 1, 7, in), 7);
    fclose(in);
    assert_string_equal(head, "edited\n");
    struct stat st_saved, st_other;
    assert_int_equal(stat(saved, &st_saved), 0);
    assert_int_equal(stat(other, &st_other), 0);
    assert_int_equal(st_saved.st_size, st_other.st_size + 7);
}

/* A cancelled reload changes nothing, even when its read got to the end. */
static void test_cancelled_reload_changes_nothing(void **state)
{
    fx *f = *state;
    char path[128], uri[192];
    snprintf(path, sizeof path, "%s/reload.txt", f->dir);
    write_large(path, 50000);
    snprintf(uri, sizeof uri, "file://%s", path);
    document_open_options opt = {.uri = uri};
    answers a = {0};
    assert_non_null(document_open(f->svc, &opt, count_open, &a));
    while (a.opens == 0)
        uv_run(&f->loop, UV_RUN_ONCE);
    char id[64] = "";
    document_list(f->svc, copy_id, id);
    recorder rec = {0};
    document_subscribe(f->svc, &rec_listener, &rec);
    document_request *req = document_reload(f->svc, id, true, count_reload, &a);
    assert_non_null(req);
    /* The loop does not run: the read finishes on the pool and its result
     * waits for the loop, and then the request is cancelled. */
    usleep(300 * 1000);
    document_request_cancel(f->svc, req);
    assert_int_equal(a.reloads, 1);
    assert_int_equal(a.reload_status, ECP_ECANCELED);
    uv_run(&f->loop, UV_RUN_DEFAULT); /* the job comes back */
    assert_int_equal(a.reloads, 1);
    assert_int_equal(rec.changes, 0);
    document_info info;
    assert_int_equal(document_get_info(f->svc, id, &info, NULL), 0);
    assert_int_equal(info.version, 1);
    document_unsubscribe(f->svc, &rec_listener, &rec);
}

/* ----- offsets over checkpoints ------------------------------------------------- */

/* The model: units of the first n bytes of s, decoded from the start. */
static size_t model_units(const char *s, size_t n, ecp_position_encoding enc)
{
    return utf_column_count(s, n, enc);
}

static void test_offsets_over_checkpoints(void **state)
{
    fx *f = *state;
    /* ~3.5 MB of mixed text: every offset conversion crosses checkpoints. */
    static const char *const pieces[] = {"ascii text ", "\xE4\xB8\xAD\xE6\x96\x87", "\xF0\x9F\x98\x80", "\n",
                                         "caf\xC3\xA9 ", "\xFF"};
    buf text = BUF_INIT;
    unsigned seed = 7;
    while (text.len < 3500000) {
        seed = seed * 1103515245u + 12345u;
        buf_append_str(&text, pieces[(seed >> 16) % 6]);
    }
    opened o = {0};
    document_open_options opt = {.uri = "memory://big", .content = text.data, .content_len = text.len};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    const char *id = o.id;
    document *doc = document__find(f->svc, id, NULL);
    assert_non_null(doc);
    ecp_position_encoding encs[] = {ECP_ENCODING_UTF16, ECP_ENCODING_UTF32, ECP_ENCODING_UTF8};
    size_t probes[] = {0, 1, 1000, 1500001, 2700000, 3400000, text.len};
    for (int round = 0; round < 2; round++) {
        for (size_t e = 0; e < 3; e++) {
            for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
                /* Land on a character boundary the way a column would. */
                document_position pos;
                document__position_of(doc, probes[i], encs[e], &pos);
                size_t snapped;
                assert_int_equal(document__offset_of(doc, &pos, encs[e], &snapped, NULL), 0);
                document__position_of(doc, snapped, encs[e], &pos);
                uint64_t units;
                assert_int_equal(document_position_to_offset(f->svc, id, &pos, encs[e], &units, NULL), 0);
                assert_int_equal(units, model_units(text.data, snapped, encs[e]));
                document_position back;
                assert_int_equal(document_offset_to_position(f->svc, id, units, encs[e], &back, NULL), 0);
                assert_int_equal(back.line, pos.line);
                assert_int_equal(back.column, pos.column);
            }
        }
        assert_true(doc->checkpoint_count >= 3);
        /* An edit early on invalidates what follows it, and only that. */
        document_edit ed = {{{0, 0}, {0, 0}}, "\xF0\x9F\x98\x80", 4};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &ed, 1, ECP_ENCODING_UTF16, 0, NULL, NULL), 0);
        assert_int_equal(doc->checkpoint_count, 0);
        buf fresh = BUF_INIT;
        buf_append(&fresh, "\xF0\x9F\x98\x80", 4);
        buf_append(&fresh, text.data, text.len);
        buf_free(&text);
        text = fresh;
        probes[sizeof probes / sizeof probes[0] - 1] = text.len;
    }
    /* Past the end. */
    document_position pos;
    uint64_t total = model_units(text.data, text.len, ECP_ENCODING_UTF16);
    assert_int_equal(document_offset_to_position(f->svc, id, total, ECP_ENCODING_UTF16, &pos, NULL), 0);
    ecp_error err;
    assert_int_equal(document_offset_to_position(f->svc, id, total + 1, ECP_ENCODING_UTF16, &pos, &err), ECP_ERANGE);
    buf_free(&text);
}

/* ----- history -------------------------------------------------------------------- */

static void test_undo_limit(void **state)
{
    fx *f = *state;
    char id[64];
    open_text(f, "memory://limit", "", id);
    /* Newlines never group: 1100 steps, of which the last 1000 (the
     * default limit, DOCUMENT_UNDO_MAX_STEPS) are kept. */
    for (int i = 0; i < 1100; i++) {
        document_edit e = {{{(size_t)i, 0}, {(size_t)i, 0}}, "\n", 1};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    }
    int undone = 0;
    while (document_undo(f->svc, id, 0, NULL, NULL) == 0)
        undone++;
    assert_int_equal(undone, 1000);
    document_info info;
    document_get_info(f->svc, id, &info, NULL);
    assert_int_equal(info.line_count, 1101 - 1000);
    /* The oldest steps are gone, so the opened state is out of reach: dirty. */
    assert_true(info.is_dirty);
    int redone = 0;
    while (document_redo(f->svc, id, 0, NULL, NULL) == 0)
        redone++;
    assert_int_equal(redone, 1000);
    document_get_info(f->svc, id, &info, NULL);
    assert_int_equal(info.line_count, 1101);
}

/* A small step limit: the history is moved back into place while full
 * (dropped slots at the front, then a push), and every kept step still undoes
 * to the text it should. */
static void test_undo_step_limit(void **state)
{
    fx *f = *state;
    char id[64];
    open_text(f, "memory://steps", "", id);
    document_service_set_undo_steps(f->svc, 16);
    assert_int_equal(document_service_undo_steps(f->svc), 16);
    for (int i = 0; i < 200; i++) {
        document_edit e = {{{(size_t)i, 0}, {(size_t)i, 0}}, "\n", 1};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    }
    document_info info;
    int undone = 0;
    while (document_undo(f->svc, id, 0, NULL, NULL) == 0) {
        undone++;
        document_get_info(f->svc, id, &info, NULL);
        assert_int_equal(info.line_count, 201 - undone);
    }
    assert_int_equal(undone, 16);
    /* lowering the limit trims an open document at once, redo steps included */
    document_service_set_undo_steps(f->svc, 4);
    int redone = 0;
    while (document_redo(f->svc, id, 0, NULL, NULL) == 0)
        redone++;
    assert_int_equal(redone, 4);
    document_service_set_undo_steps(f->svc, DOCUMENT_UNDO_MAX_STEPS);
}

/* Random edits, undos and redos against a string model. */
static void test_random_edits_against_model(void **state)
{
    fx *f = *state;
    char id[64];
    open_text(f, "memory://model", "seed\ntext\n", id);
    typedef struct snap {
        char *text;
    } snap;
    /* states[i] is the text after i applied steps; typing grouping is avoided
     * by making every edit carry a newline or a deletion. */
    snap states[400];
    size_t applied = 0, count = 1;
    states[0].text = strdup("seed\ntext\n");
    unsigned seed = 12345;
#define RND() (seed = seed * 1103515245u + 12345u, (seed >> 16) & 0x7fff)
    static const char *const inserts[] = {"\n", "ab\n", "\xC3\xA9\n", "\xF0\x9F\x98\x80\nx", "", "\r\n"};
    for (int iter = 0; iter < 300; iter++) {
        int op = RND() % 10;
        char *cur = states[applied].text;
        size_t len = strlen(cur);
        if (op < 7 || applied == 0) {
            /* Pick byte offsets on character boundaries (the model is UTF-8 valid). */
            size_t a = len ? RND() % (len + 1) : 0, b = len ? RND() % (len + 1) : 0;
            if (a > b) {
                size_t t = a;
                a = b;
                b = t;
            }
            while (a > 0 && ((unsigned char)cur[a] & 0xC0) == 0x80)
                a--;
            while (b < len && ((unsigned char)cur[b] & 0xC0) == 0x80)
                b++;
            const char *ins = inserts[RND() % 6];
            if (a == b && !*ins)
                ins = "\n";
            document *doc = document__find(f->svc, id, NULL);
            document_range r;
            document__position_of(doc, a, ECP_ENCODING_UTF16, &r.start);
            document__position_of(doc, b, ECP_ENCODING_UTF16, &r.end);
            document_edit e = {r, ins, strlen(ins)};
            assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF16, 0, NULL, NULL), 0);
            char *next = malloc(len - (b - a) + strlen(ins) + 1);
            memcpy(next, cur, a);
            strcpy(next + a, ins);
            strcat(next, cur + b);
            for (size_t i = applied + 1; i < count; i++)
                free(states[i].text);
            states[++applied].text = next;
            count = applied + 1;
        } else if (op < 9) {
            assert_int_equal(document_undo(f->svc, id, 0, NULL, NULL), 0);
            applied--;
        } else if (applied + 1 < count) {
            assert_int_equal(document_redo(f->svc, id, 0, NULL, NULL), 0);
            applied++;
        }
        char *t = text_of(f, id);
        assert_string_equal(t, states[applied].text);
        free(t);
        document *doc = document__find(f->svc, id, NULL);
        assert_true(piece_tree_check(doc->tree));
        size_t lines = 1;
        for (const char *p = states[applied].text; *p; p++)
            lines += *p == '\n';
        assert_int_equal(piece_tree_line_count(doc->tree), lines);
    }
    for (size_t i = 0; i < count; i++)
        free(states[i].text);
#undef RND
}

/* ----- files ------------------------------------------------------------------------- */

static void test_read_file_cases(void **state)
{
    fx *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/r.txt", f->dir);
    FILE *out = fopen(path, "wb");
    fputs("a\r\nb\rc\r\n\r\n", out);
    fclose(out);
    char *data;
    size_t len;
    bool crlf;
    ecp_error err;
    assert_int_equal(document__read_file(path, NULL, &data, &len, &crlf, &err), 0);
    assert_true(crlf);
    assert_int_equal(len, 7);
    assert_memory_equal(data, "a\nb\rc\n\n", 7); /* a bare '\r' stays */
    free(data);

    atomic_bool cancel;
    atomic_init(&cancel, true);
    assert_int_equal(document__read_file(path, &cancel, &data, &len, &crlf, &err), ECP_ECANCELED);

    assert_int_equal(document__read_file(f->dir, NULL, &data, &len, &crlf, &err), ECP_EISDIR);
    assert_int_equal(document__read_file("/dev/null", NULL, &data, &len, &crlf, &err), ECP_EINVAL);
    assert_non_null(strstr(err.message, "not a regular file"));

    char text[] = "x\r\ny";
    bool c2;
    assert_int_equal(document__normalize_eol(text, 4, &c2), 3);
    assert_true(c2);
    assert_memory_equal(text, "x\ny", 3);
    char plain[] = "x\ny\r\n";
    assert_int_equal(document__normalize_eol(plain, 5, &c2), 5);
    assert_false(c2);
}

static void test_write_file_follows_symlink(void **state)
{
    fx *f = *state;
    char real[128], link[128];
    snprintf(real, sizeof real, "%s/real.txt", f->dir);
    snprintf(link, sizeof link, "%s/link.txt", f->dir);
    FILE *out = fopen(real, "wb");
    fputs("old", out);
    fclose(out);
    chmod(real, 0604);
    assert_int_equal(symlink(real, link), 0);
    ecp_error err;
    assert_int_equal(document__write_file(link, "new", 3, &err), 0);
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));
    assert_int_equal(stat(real, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0604);
    assert_int_equal(st.st_size, 3);
}

/* ----- snapshots ------------------------------------------------------------------ */

static void append_to(void *ctx, const char *chunk, size_t len) { buf_append(ctx, chunk, len); }

static char *snapshot_line(const document_snapshot *snap, size_t line)
{
    buf out = BUF_INIT;
    assert_int_equal(document_snapshot_read_line(snap, line, append_to, &out, NULL), 0);
    buf_push(&out, '\0');
    return buf_detach(&out);
}

static void test_snapshot_api(void **state)
{
    fx *f = *state;
    char id[64];
    ecp_error err;
    assert_null(document_snapshot_take(f->svc, "doc_none", &err));
    assert_int_equal(err.status, ECP_ENOTFOUND);

    document_open_options opt = {.uri = "memory://snap.py", .content = "one\r\ntwo\r\nthree", .content_len = 15};
    opened o = {0};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    strcpy(id, o.id);
    document_snapshot *snap = document_snapshot_take(f->svc, id, &err);
    assert_non_null(snap);
    /* The document goes on changing; the snapshot does not. */
    document_edit e = {{{1, 0}, {2, 2}}, "X\nY\nZ", 5};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_int_equal(document_type(f->svc, id, 0, "typed", 5, 0, NULL, NULL), 0);
    document_snapshot *later = document_snapshot_take(f->svc, id, &err);
    assert_non_null(later);

    assert_string_equal(document_snapshot_id(snap), id);
    assert_string_equal(document_snapshot_uri(snap), "memory://snap.py");
    assert_string_equal(document_snapshot_language_id(snap), "python");
    assert_true(document_snapshot_crlf(snap));
    assert_int_equal(document_snapshot_version(snap), 1);
    assert_int_equal(document_snapshot_version(later), 3);
    assert_int_equal(document_snapshot_length(snap), 13);
    assert_int_equal(document_snapshot_line_count(snap), 3);
    char *line = snapshot_line(snap, 1);
    assert_string_equal(line, "two");
    free(line);
    line = snapshot_line(snap, 2);
    assert_string_equal(line, "three");
    free(line);
    buf out = BUF_INIT;
    assert_int_equal(document_snapshot_read(snap, 2, 7, append_to, &out, NULL), 0);
    assert_int_equal(out.len, 7);
    assert_memory_equal(out.data, "e\ntwo\nt", 7);
    buf_clear(&out);
    /* Out of range: refused, nothing read. */
    assert_int_equal(document_snapshot_read_line(snap, 3, append_to, &out, &err), ECP_ERANGE);
    assert_string_equal(err.message, "Invalid position: line 3 is past the end (3 lines)");
    assert_int_equal(document_snapshot_read(snap, 10, 4, append_to, &out, &err), ECP_ERANGE);
    assert_int_equal(document_snapshot_read(snap, 14, 0, append_to, &out, NULL), ECP_ERANGE);
    assert_int_equal(document_snapshot_read(snap, 13, 0, append_to, &out, NULL), 0);
    assert_int_equal(out.len, 0);

    /* Closing the document and freeing the service leave snapshots readable. */
    assert_int_equal(document_close(f->svc, id, NULL), 0);
    document_service_free(f->svc);
    f->svc = NULL;
    assert_int_equal(document_snapshot_read(later, 0, document_snapshot_length(later), append_to, &out, NULL), 0);
    buf_push(&out, '\0');
    assert_string_equal(out.data, "typedone\nX\nY\nZree"); /* typed at the caret, still at the start */
    buf_free(&out);
    assert_int_equal(document_snapshot_line_count(later), 4);
    line = snapshot_line(snap, 0);
    assert_string_equal(line, "one");
    free(line);
    document_snapshot_release(snap);
    document_snapshot_release(later);
    document_snapshot_release(NULL);
}

/* The bytes of a save arrive in pieces of any size; CRLF is added on the way,
 * also when a '\n' starts or ends a piece. */
typedef struct pieces {
    const char *const *parts;
    const size_t *lens;
    size_t count, next;
} pieces;

static bool next_part(void *ctx, const char **chunk, size_t *len)
{
    pieces *p = ctx;
    if (p->next == p->count)
        return false;
    *chunk = p->parts[p->next];
    *len = p->lens[p->next++];
    return true;
}

static void test_write_stream(void **state)
{
    fx *f = *state;
    char path[128];
    snprintf(path, sizeof path, "%s/stream.txt", f->dir);
    /* Three MiB in one part (written without gathering), then small parts. */
    size_t big = 3u << 20;
    char *large = malloc(big);
    assert_non_null(large);
    for (size_t i = 0; i < big; i++)
        large[i] = i % 64 == 63 ? '\n' : 'a' + (char)(i % 26);
    const char *parts[] = {large, "\n", "x", "", "\ny\n", "\n\n", "z"};
    size_t lens[] = {big, 1, 1, 0, 3, 2, 1};
    for (int crlf = 0; crlf < 2; crlf++) {
        pieces p = {parts, lens, 7, 0};
        ecp_error err;
        assert_int_equal(document__write_stream(path, next_part, &p, crlf, &err), 0);
        FILE *in = fopen(path, "rb");
        assert_non_null(in);
        size_t lines = big / 64, want_len = big + 8 + (crlf ? lines + 5 : 0);
        char *got = malloc(want_len + 1);
        assert_int_equal(fread(got, 1, want_len + 1, in), want_len);
        fclose(in);
        size_t at = 0;
        for (size_t i = 0; i < big; i++) {
            if (crlf && large[i] == '\n')
                assert_int_equal(got[at++], '\r');
            assert_int_equal(got[at++], large[i]);
        }
        const char *tail = crlf ? "\r\nx\r\ny\r\n\r\n\r\nz" : "\nx\ny\n\n\nz";
        assert_memory_equal(got + at, tail, strlen(tail));
        assert_int_equal(at + strlen(tail), want_len);
        free(got);
    }
    free(large);
    /* A failure leaves nothing behind. */
    char missing[160];
    snprintf(missing, sizeof missing, "%s/no/such/dir.txt", f->dir);
    pieces p = {parts + 1, lens + 1, 6, 0};
    ecp_error err;
    assert_int_equal(document__write_stream(missing, next_part, &p, true, &err), ECP_ENOTFOUND);
    assert_non_null(strstr(err.message, "cannot create a file in its directory"));
}

/* ----- columns on long lines, and the encodings events carry ---------------------------- */

static uint64_t test_rng = 88172645463325252ull;

static size_t rnd(size_t n)
{
    test_rng ^= test_rng << 13;
    test_rng ^= test_rng >> 7;
    test_rng ^= test_rng << 17;
    return (size_t)(test_rng % n);
}

/* Characters of one to four bytes, now and then a stray byte. */
static size_t random_chars(char *out, size_t n)
{
    static const char *const pick[] = {"a", "b", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", " ", "\x80", "\xE2\x82"};
    size_t at = 0;
    while (at < n) {
        size_t k = rnd(100);
        const char *c = pick[k < 60 ? k % 2 : k < 70 ? 2 : k < 80 ? 3 : k < 90 ? 4 : k < 97 ? 5 : k < 99 ? 6 : 7];
        size_t len = strlen(c);
        if (at + len > n)
            break;
        memcpy(out + at, c, len);
        at += len;
    }
    return at;
}

static double now_s(void) { return (double)uv_hrtime() / 1e9; }

/* Every conversion on line 0 of doc agrees with decoding the model's line
 * from its start. */
static void check_columns(document *doc, const char *model, size_t line_len, size_t samples)
{
    for (size_t k = 0; k < samples; k++) {
        size_t at = k == 0 ? line_len : rnd(line_len + 1);
        for (int e = 0; e < 3; e++) {
            ecp_position_encoding enc = (ecp_position_encoding)e;
            document_position pos;
            document__position_of(doc, at, enc, &pos);
            assert_int_equal(pos.line, 0);
            assert_int_equal(pos.column, utf_column_count(model, at, enc));
            /* and back, from a character's start */
            if (at < line_len && (model[at] & 0xC0) == 0x80)
                continue;
            size_t back;
            assert_int_equal(document__offset_of(doc, &pos, enc, &back, NULL), 0);
            if (back != at) {
                /* at may follow a stray byte that decoding joined to nothing: still a start */
                assert_int_equal(utf_column_count(model, back, enc), pos.column);
            }
        }
    }
}

static document *open_chars(fx *f, const char *uri, char *model, size_t want, size_t *len, char id[64])
{
    *len = random_chars(model, want);
    opened o = {0};
    document_open_options opt = {.uri = uri, .content = model, .content_len = *len};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    assert_int_equal(o.status, 0);
    strcpy(id, o.id);
    return document__find(f->svc, id, NULL);
}

static void test_columns_on_a_long_line(void **state)
{
    fx *f = *state;
    /* Correctness on a 2 MB line (marks every 8 KiB), against decoding the
     * whole line each time. */
    size_t cap = (30u << 20) + 4096;
    char *model = malloc(cap);
    size_t len;
    char id[64];
    document *doc = open_chars(f, "memory://long", model, 2u << 20, &len, id);
    check_columns(doc, model, len, 20);
    /* Edits anywhere in the line, clean and not (a stray continuation byte
     * at either end), then the same conversions against the model. */
    for (int round = 0; round < 40; round++) {
        char ins[64];
        size_t n = random_chars(ins, 1 + rnd(40));
        if (round % 7 == 3)
            ins[0] = (char)0x80;
        size_t at = rnd(len + 1), del = rnd(3) == 0 ? rnd(20) : 0;
        if (at + del > len)
            del = len - at;
        document_edit e = {{{0, at}, {0, at + del}}, ins, n};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
        /* a column inside a character snaps back: take the text as it is */
        char *text = text_of(f, id);
        len = strlen(text);
        assert_true(len < cap);
        memcpy(model, text, len);
        free(text);
        check_columns(doc, model, len, 4);
    }

    /* Typing at the end of a 30 MB line, converting the end each time: no
     * longer a scan of the whole line per keystroke (~12 ms each here). */
    doc = open_chars(f, "memory://longer", model, 30u << 20, &len, id);
    document_position last;
    document__position_of(doc, len, ECP_ENCODING_UTF16, &last);
    double t = now_s();
    for (int i = 0; i < 1000; i++) {
        document_edit e = {{{0, len}, {0, len}}, "\xC3\xA9", 2};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
        memcpy(model + len, "\xC3\xA9", 2);
        len += 2;
        document__position_of(doc, len, ECP_ENCODING_UTF16, &last);
    }
    double took = now_s() - t;
    assert_int_equal(last.column, utf_column_count(model, len, ECP_ENCODING_UTF16));
    /* And typing at the start of the line, converting its end. */
    t = now_s();
    for (int i = 0; i < 1000; i++) {
        document_edit e = {{{0, 0}, {0, 0}}, "x", 1};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
        len++;
        document__position_of(doc, len, ECP_ENCODING_UTF32, &last);
    }
    double took_start = now_s() - t;
    assert_int_equal(last.column, utf_column_count(model, len - 1000, ECP_ENCODING_UTF32) + 1000);
    print_message("1000 keystrokes with a conversion at the end of a 30 MB line: %.1f ms typed at its end, %.1f ms "
                  "typed at its start\n", took * 1000, took_start * 1000);
    assert_true(took < 2.0); /* scanning from the line's start each time: ~12 s */
    assert_true(took_start < 2.0);
    free(model);
}

typedef struct last_change {
    document_change c;
    int count;
} last_change;

static void keep_change(void *ctx, const document_change_event *ev)
{
    last_change *l = ctx;
    l->c = ev->changes[0];
    l->count++;
}

static const document_listener keep_listener = {.on_change = keep_change};

static void test_events_carry_the_encodings_in_use(void **state)
{
    fx *f = *state;
    last_change l = {0};
    document_subscribe(f->svc, &keep_listener, &l);
    char id[64];
    open_text(f, "memory://enc", "\xF0\x9F\x98\x80\xC3\xA9x", id); /* U+1F600 U+00E9 x */
    /* Until told otherwise, every encoding. */
    document_edit e = {{{0, 6}, {0, 7}}, "y", 1};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF8], 6);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF16], 3);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF32], 2);
    /* Bytes only: nothing is decoded, and the other columns are the byte ones. */
    int client_side, server_side; /* two readers' keys */
    document_service_set_encodings(f->svc, &client_side, 1u << ECP_ENCODING_UTF8);
    e = (document_edit){{{0, 4}, {0, 7}}, "z", 1};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF8], 4);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF16], 4);
    assert_int_equal(l.c.range_length[ECP_ENCODING_UTF8], 3);
    assert_int_equal(l.c.range_length[ECP_ENCODING_UTF32], 3);
    /* UTF-16 in use again, by another reader: its columns are real. */
    document_service_set_encodings(f->svc, &server_side, 1u << ECP_ENCODING_UTF16);
    e = (document_edit){{{0, 4}, {0, 5}}, "", 0};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF8], 4);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF16], 2);
    assert_int_equal(l.c.end.column[ECP_ENCODING_UTF16], 3);
    /* That reader gone, the other still reading bytes only: bytes again. */
    document_service_set_encodings(f->svc, &server_side, 0);
    e = (document_edit){{{0, 4}, {0, 4}}, "w", 1};
    assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    assert_int_equal(l.c.start.column[ECP_ENCODING_UTF16], 4);
    assert_int_equal(l.count, 4);
    document_unsubscribe(f->svc, &keep_listener, &l);
}

typedef struct lines_seen {
    buf text; /* each line followed by '|' */
    size_t next, begun, ended;
} lines_seen;

static void seen_begin(void *ctx, size_t line)
{
    lines_seen *s = ctx;
    assert_int_equal(line, s->next);
    assert_int_equal(s->begun, s->ended);
    s->begun++;
}

static void seen_chunk(void *ctx, const char *p, size_t len)
{
    lines_seen *s = ctx;
    assert_true(len > 0);
    assert_null(memchr(p, '\n', len));
    buf_append(&s->text, p, len);
}

static void seen_end(void *ctx, size_t line)
{
    lines_seen *s = ctx;
    assert_int_equal(line, s->next);
    s->next++;
    s->ended++;
    buf_push(&s->text, '|');
}

static const document_line_reader seen_reader = {seen_begin, seen_chunk, seen_end};

static void one_line(void *ctx, const char *p, size_t len) { buf_append(ctx, p, len); }

static void test_read_lines(void **state)
{
    fx *f = *state;
    char id[64];
    open_text(f, "memory://lines", "", id);
    /* Lines over many pieces: inserts at random places, some of newlines alone. */
    for (int i = 0; i < 3000; i++) {
        document_info info;
        assert_int_equal(document_get_info(f->svc, id, &info, NULL), 0);
        size_t line = rnd(info.line_count);
        const char *texts[] = {"\n", "ab", "c\nd", "\n\n", "\xC3\xA9xyz\n"};
        const char *t = texts[rnd(5)];
        document_edit e = {{{line, 0}, {line, 0}}, t, strlen(t)};
        assert_int_equal(document_apply_edits(f->svc, id, 0, &e, 1, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    }
    document_info info;
    assert_int_equal(document_get_info(f->svc, id, &info, NULL), 0);
    document_snapshot *snap = document_snapshot_take(f->svc, id, NULL);
    assert_non_null(snap);
    for (int k = 0; k < 40; k++) {
        size_t first = k == 0 ? 0 : rnd(info.line_count + 2), end = k == 0 ? info.line_count : first + rnd(300);
        buf want = BUF_INIT;
        size_t stop = end < info.line_count ? end : info.line_count;
        for (size_t l = first; l < stop; l++) {
            assert_int_equal(document_read_line(f->svc, id, l, one_line, &want, NULL), 0);
            buf_push(&want, '|');
        }
        for (int from_snapshot = 0; from_snapshot < 2; from_snapshot++) {
            lines_seen seen = {BUF_INIT, first, 0, 0};
            if (from_snapshot)
                assert_int_equal(document_snapshot_read_lines(snap, first, end, &seen_reader, &seen, NULL), 0);
            else
                assert_int_equal(document_read_lines(f->svc, id, first, end, &seen_reader, &seen, NULL), 0);
            assert_int_equal(seen.ended, first < stop ? stop - first : 0);
            assert_int_equal(seen.text.len, want.len);
            if (want.len)
                assert_memory_equal(seen.text.data, want.data, want.len);
            buf_free(&seen.text);
        }
        buf_free(&want);
    }
    document_snapshot_release(snap);
    assert_int_equal(document_read_lines(f->svc, "nope", 0, 1, &seen_reader, NULL, NULL), ECP_ENOTFOUND);
}

/* Up and down keep the code-point column between long lines, through
 * their marks. */
static void test_vertical_moves_on_long_lines(void **state)
{
    fx *f = *state;
    size_t each = 300000;
    char *text = malloc(3 * each + 3);
    size_t a = random_chars(text, each);
    text[a] = '\n';
    size_t b = random_chars(text + a + 1, each);
    text[a + 1 + b] = '\n';
    size_t c = random_chars(text + a + 2 + b, each);
    size_t len = a + 2 + b + c;
    char id[64];
    opened o = {0};
    document_open_options opt = {.uri = "memory://vertical", .content = text, .content_len = len};
    assert_null(document_open(f->svc, &opt, on_opened, &o));
    strcpy(id, o.id);
    const char *lines[3] = {text, text + a + 1, text + a + 2 + b};
    size_t lens[3] = {a, b, c};
    for (int k = 0; k < 30; k++) {
        /* a caret at a character's start on line 0, by its UTF-16 column */
        size_t at = rnd(a);
        while (at > 0 && (lines[0][at] & 0xC0) == 0x80)
            at--;
        size_t col16 = utf_column_count(lines[0], at, ECP_ENCODING_UTF16);
        size_t want32 = utf_column_count(lines[0], at, ECP_ENCODING_UTF32);
        document_position pos = {0, col16};
        document_cursor cur = {pos, pos, false, 0};
        assert_int_equal(document_set_cursors(f->svc, id, 0, &cur, 1, ECP_ENCODING_UTF16, NULL), 0);
        for (size_t line = 1; line < 3; line++) {
            assert_int_equal(document_move_cursors(f->svc, id, 0, DOCUMENT_DOWN, DOCUMENT_BY_LINE, false, NULL), 0);
            document_cursor *list;
            size_t count;
            assert_int_equal(document_get_cursors(f->svc, id, 0, ECP_ENCODING_UTF32, &list, &count, NULL), 0);
            size_t total32 = utf_column_count(lines[line], lens[line], ECP_ENCODING_UTF32);
            assert_int_equal(list[0].active.line, line);
            assert_int_equal(list[0].active.column, want32 < total32 ? want32 : total32);
            free(list);
        }
    }
    free(text);
}

/* ----- the registry: finding documents by id and by file ------------------------ */

typedef struct listed {
    char ids[4096][40];
    size_t n;
} listed;

static void list_into(void *ctx, const document_info *info)
{
    listed *l = ctx;
    if (l->n < 4096)
        snprintf(l->ids[l->n++], sizeof l->ids[0], "%s", info->document_id);
}

/* Opening a uri that is open gives its document back; the id of a closed one
 * is gone and its uri opens a new document; the list keeps the open order. */
static void test_registry_open_close_many(void **state)
{
    fx *f = *state;
    enum { N = 3000 };
    char (*ids)[64] = calloc(N, sizeof *ids);
    char uri[64];
    for (size_t i = 0; i < N; i++) {
        snprintf(uri, sizeof uri, "memory://many/%zu", i);
        open_text(f, uri, "x", ids[i]);
    }
    for (size_t i = 0; i < N; i += 2)
        assert_int_equal(document_close(f->svc, ids[i], NULL), 0);
    for (size_t i = 0; i < N; i++) {
        document_info info;
        ecp_error err;
        int rc = document_get_info(f->svc, ids[i], &info, &err);
        snprintf(uri, sizeof uri, "memory://many/%zu", i);
        if (i % 2 == 0) {
            assert_int_equal(rc, ECP_ENOTFOUND);
            assert_int_equal(document_close(f->svc, ids[i], NULL), ECP_ENOTFOUND);
        } else {
            assert_int_equal(rc, 0);
            assert_string_equal(info.uri, uri);
        }
        opened o = {0};
        document_open_options opt = {.uri = uri, .content = "y", .content_len = 1};
        assert_null(document_open(f->svc, &opt, on_opened, &o));
        assert_int_equal(o.status, 0);
        if (i % 2 == 0)
            assert_string_not_equal(o.id, ids[i]);
        else
            assert_string_equal(o.id, ids[i]);
    }
    listed *l = calloc(1, sizeof *l);
    document_list(f->svc, list_into, l);
    assert_int_equal(l->n, N);
    for (size_t k = 0; k < N / 2; k++)
        assert_string_equal(l->ids[k], ids[2 * k + 1]);
    free(l);
    free(ids);
}

static void open_uri(fx *f, const char *uri, const char *text, opened *o)
{
    document_open_options opt = {.uri = uri, .content = text, .content_len = strlen(text)};
    memset(o, 0, sizeof *o);
    assert_null(document_open(f->svc, &opt, on_opened, o));
    assert_int_equal(o->status, 0);
}

/* A document saved under a new name is found by it, and no longer by the
 * old. When a save-as lands on a file opened meanwhile, two documents share
 * the file: the one opened first is found, then, once it closes, the other. */
static void test_registry_follows_save_as(void **state)
{
    fx *f = *state;
    char moved[64], first[64], y_uri[160], x_uri[160];
    snprintf(x_uri, sizeof x_uri, "file://%s/x.txt", f->dir);
    snprintf(y_uri, sizeof y_uri, "file://%s/y.txt", f->dir);
    open_text(f, "memory://moved", "moved", moved);
    int status = 1;
    assert_non_null(document_save(f->svc, moved, x_uri, saved_cb, &status));
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(status, 0);
    opened o;
    open_uri(f, x_uri, "", &o);
    assert_string_equal(o.id, moved);
    open_uri(f, "memory://moved", "new", &o);
    assert_string_not_equal(o.id, moved);

    open_text(f, "memory://first", "first", first);
    status = 1;
    assert_non_null(document_save(f->svc, first, y_uri, saved_cb, &status));
    opened second;
    open_uri(f, y_uri, "second", &second); /* before the save lands */
    assert_string_not_equal(second.id, first);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(status, 0);
    open_uri(f, y_uri, "", &o);
    assert_string_equal(o.id, first);
    assert_int_equal(document_close(f->svc, first, NULL), 0);
    open_uri(f, y_uri, "", &o);
    assert_string_equal(o.id, second.id);
    assert_int_equal(document_close(f->svc, second.id, NULL), 0);
    open_uri(f, y_uri, "", &o);
    assert_string_not_equal(o.id, second.id);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_change_event_in_every_encoding),
        T(test_listeners_change_during_an_event),
        T(test_cancelled_save_still_writes),
        T(test_free_answers_pending_requests),
        T(test_cancelled_reload_changes_nothing),
        T(test_offsets_over_checkpoints),
        T(test_undo_limit),
        T(test_undo_step_limit),
        T(test_random_edits_against_model),
        T(test_read_file_cases),
        T(test_write_file_follows_symlink),
        T(test_snapshot_api),
        T(test_write_stream),
        T(test_columns_on_a_long_line),
        T(test_events_carry_the_encodings_in_use),
        T(test_read_lines),
        T(test_vertical_moves_on_long_lines),
        T(test_registry_open_close_many),
        T(test_registry_follows_save_as),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
