/* A step of many edits close together (a replace-all) is made as a splice:
 * the text rebuilt in one buffer and the step keeping the replaced bytes
 * packed. What a client and the other services see must not tell the two
 * ways apart: the same text, the same change events in every encoding, the
 * same cursors, through edit, undo and redo. And it must cost what it is
 * for: a handful of pieces, not a few per edit. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "document/interface.h"
#include "internal.h"

#define LINES 3000
#define FACE "\xf0\x9f\x98\x80"

typedef struct fx {
    uv_loop_t loop;
    ecp_pool *pool;
    document_service *svc;
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    uv_loop_init(&f->loop);
    f->pool = ecp_pool_new(&f->loop, NULL);
    f->svc = document_service_new(f->pool, NULL);
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
    free(f);
    return 0;
}

static void on_opened(void *ctx, int status, const ecp_error *err, const char *id, bool already)
{
    (void)err;
    (void)already;
    assert_int_equal(status, 0);
    snprintf(ctx, 64, "%s", id);
}

static void open_text(fx *f, const char *uri, const char *text, char id[64])
{
    id[0] = '\0';
    document_open_options opt = {.uri = uri, .content = text, .content_len = strlen(text)};
    assert_null(document_open(f->svc, &opt, on_opened, id));
    assert_true(id[0] != '\0');
}

static char *text_of(fx *f, const char *id)
{
    buf out = BUF_INIT;
    assert_int_equal(document_get_text(f->svc, id, NULL, ECP_ENCODING_UTF8, &out, NULL), 0);
    return buf_detach(&out);
}

/* ----- every change event, copied ---------------------------------------------------- */

typedef struct recorded {
    document_change change; /* text points into texts below */
    size_t text_at;
} recorded;

typedef struct recorder {
    recorded *items;
    size_t count, cap;
    buf texts;
    size_t events;
} recorder;

static void rec_change(void *ctx, const document_change_event *ev)
{
    recorder *r = ctx;
    r->events++;
    for (size_t i = 0; i < ev->count; i++) {
        if (r->count == r->cap) {
            r->cap = r->cap ? r->cap * 2 : 1024;
            r->items = realloc(r->items, r->cap * sizeof *r->items);
        }
        recorded *it = &r->items[r->count++];
        it->change = ev->changes[i];
        it->text_at = r->texts.len;
        buf_append(&r->texts, ev->changes[i].text, ev->changes[i].text_len);
    }
}

static const document_listener rec_listener = {.on_change = rec_change};

static void rec_clear(recorder *r)
{
    r->count = 0;
    r->events = 0;
    buf_clear(&r->texts);
}

static void rec_free(recorder *r)
{
    free(r->items);
    buf_free(&r->texts);
}

/* The same events, field by field and byte for byte. */
static void assert_same_events(const recorder *a, const recorder *b)
{
    assert_int_equal(a->events, b->events);
    assert_int_equal(a->count, b->count);
    for (size_t i = 0; i < a->count; i++) {
        const document_change *x = &a->items[i].change, *y = &b->items[i].change;
        assert_int_equal(x->offset, y->offset);
        assert_int_equal(x->deleted_len, y->deleted_len);
        assert_int_equal(x->start.line, y->start.line);
        assert_int_equal(x->end.line, y->end.line);
        for (int e = 0; e < 3; e++) {
            assert_int_equal(x->start.column[e], y->start.column[e]);
            assert_int_equal(x->end.column[e], y->end.column[e]);
            assert_int_equal(x->range_length[e], y->range_length[e]);
        }
        assert_int_equal(x->text_len, y->text_len);
        assert_memory_equal(a->texts.data + a->items[i].text_at, b->texts.data + b->items[i].text_at, x->text_len);
    }
}

/* ----- the text and its edits -------------------------------------------------------- */

static char *make_text(void)
{
    buf b = BUF_INIT;
    char line[128];
    for (int i = 0; i < LINES; i++) {
        /* é, ö (two bytes, one UTF-16 unit) and an emoji (four bytes, two units) */
        int n = snprintf(line, sizeof line, "h\xc3\xa9llo w\xc3\xb6rld " FACE " value_%d = value + %d;\n", i, i);
        buf_append(&b, line, (size_t)n);
    }
    buf_append(&b, "", 1);
    return buf_detach(&b);
}

typedef struct edit_list {
    document_edit *items;
    size_t count;
} edit_list;

static void push(edit_list *l, size_t line, size_t from, size_t end_line, size_t to, const char *text)
{
    l->items[l->count++] = (document_edit){{{line, from}, {end_line, to}}, text, strlen(text)};
}

/* Every kind of edit, in byte columns: replacements longer and shorter,
 * deletions, inserts (two at one point, one at a replacement's end), new
 * line ends and joined lines. */
static edit_list make_edits(const char *text)
{
    edit_list l = {calloc(LINES * 3, sizeof(document_edit)), 0};
    const char *line = text;
    for (size_t i = 0; i < LINES; i++) {
        const char *end = strchr(line, '\n');
        size_t value = (size_t)(strstr(line, "value +") - line), face = (size_t)(strstr(line, FACE) - line);
        switch (i % 6) {
        case 0: push(&l, i, value, i, value + 5, "amount"); break;
        case 1: push(&l, i, value, i, value + 5, ""); break;
        case 2:
            push(&l, i, 0, i, 0, "// ");
            push(&l, i, 0, i, 0, "\xce\xa9 ");
            break;
        case 3:
            push(&l, i, 1, i, 3, "e\n");          /* the two bytes of é */
            push(&l, i, 3, i, 3, "[after]");      /* at the end of the one before */
            break;
        case 4: push(&l, i, face, i + 1, 1, "\xe2\x86\x92"); break; /* up to the next line's é */
        default: push(&l, i, face, i, face + 4, "x"); break;
        }
        line = end + 1;
    }
    return l;
}

/* The text once the edits (sorted, in the text's coordinates) are made. */
static char *apply_to(const char *text, const edit_list *l)
{
    size_t *line_start = malloc((LINES + 1) * sizeof *line_start);
    size_t n = 0;
    line_start[n++] = 0;
    for (const char *p = text; (p = strchr(p, '\n')); p++)
        if (n <= LINES)
            line_start[n++] = (size_t)(p + 1 - text);
    buf out = BUF_INIT;
    size_t at = 0;
    for (size_t k = 0; k < l->count; k++) {
        const document_edit *e = &l->items[k];
        size_t from = line_start[e->range.start.line] + e->range.start.column;
        size_t to = line_start[e->range.end.line] + e->range.end.column;
        buf_append(&out, text + at, from - at);
        buf_append(&out, e->text, e->len);
        at = to;
    }
    buf_append(&out, text + at, strlen(text) - at + 1);
    free(line_start);
    return buf_detach(&out);
}

/* A second client's cursors: carets and selections around the edits. */
static void place_others(document *doc)
{
    doc_cursor_set *set = document__cursors_of(doc, 7);
    size_t length = piece_tree_length(doc->tree);
    document__cursors_reset(set, 3, 3);
    for (size_t at = 40; at + 30 < length; at += length / 50)
        document__cursors_push(set, at, at + 25, DOC_NO_DESIRED);
    document__cursors_normalize(set, length);
}

static void assert_same_cursors_of(document *a, document *b, uint64_t owner)
{
    const doc_cursor_set *x = document__cursors_of(a, owner), *y = document__cursors_of(b, owner);
    assert_int_equal(x->count, y->count);
    for (size_t i = 0; i < x->count; i++) {
        assert_int_equal(x->items[i].anchor, y->items[i].anchor);
        assert_int_equal(x->items[i].active, y->items[i].active);
    }
}

static void assert_same_cursors(document *a, document *b) { assert_same_cursors_of(a, b, 7); }

/* ----- tests ------------------------------------------------------------------------- */

static void test_splice_sends_what_edit_by_edit_sends(void **state)
{
    fx *f = *state;
    char *text = make_text();
    edit_list l = make_edits(text);
    char *expected = apply_to(text, &l);
    char by_edit[64], by_splice[64];
    open_text(f, "untitled:by-edit", text, by_edit);
    open_text(f, "untitled:by-splice", text, by_splice);
    document *a = document__find(f->svc, by_edit, NULL), *b = document__find(f->svc, by_splice, NULL);
    place_others(a);
    place_others(b);
    recorder ra = {0}, rb = {0};

    assert_int_equal(document_subscribe(f->svc, &rec_listener, &ra), 0);
    f->svc->splice_min_edits = SIZE_MAX; /* edit by edit */
    assert_int_equal(document_apply_edits(f->svc, by_edit, 1, l.items, l.count, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    document_unsubscribe(f->svc, &rec_listener, &ra);
    assert_int_equal(document_subscribe(f->svc, &rec_listener, &rb), 0);
    f->svc->splice_min_edits = DOC_SPLICE_MIN_EDITS;
    assert_int_equal(document_apply_edits(f->svc, by_splice, 1, l.items, l.count, ECP_ENCODING_UTF8, 0, NULL, NULL),
                     0);
    document_unsubscribe(f->svc, &rec_listener, &rb);

    char *got = text_of(f, by_splice);
    assert_string_equal(got, expected);
    free(got);
    assert_same_events(&ra, &rb);
    assert_same_cursors(a, b);
    /* what it is for: the edits left no trace in the tree, and the history
     * holds a few bytes an edit, where edit by edit keeps two pieces and two
     * copies each */
    assert_true(piece_tree_check(b->tree));
    assert_true(piece_tree_piece_count(b->tree) < l.count / 16);
    assert_true(piece_tree_piece_count(a->tree) > l.count);
    assert_true(b->history.bytes < l.count * 32);
    assert_true(b->history.bytes * 3 < a->history.bytes);

    /* undo, redo and undo again: the same events both ways */
    for (int round = 0; round < 3; round++) {
        rec_clear(&ra);
        rec_clear(&rb);
        bool redo = round == 1;
        assert_int_equal(document_subscribe(f->svc, &rec_listener, &ra), 0);
        assert_int_equal((redo ? document_redo : document_undo)(f->svc, by_edit, 1, NULL, NULL), 0);
        document_unsubscribe(f->svc, &rec_listener, &ra);
        assert_int_equal(document_subscribe(f->svc, &rec_listener, &rb), 0);
        assert_int_equal((redo ? document_redo : document_undo)(f->svc, by_splice, 1, NULL, NULL), 0);
        document_unsubscribe(f->svc, &rec_listener, &rb);
        got = text_of(f, by_splice);
        assert_string_equal(got, redo ? expected : text);
        free(got);
        assert_same_events(&ra, &rb);
        assert_same_cursors(a, b);
        assert_true(piece_tree_check(b->tree));
    }
    rec_free(&ra);
    rec_free(&rb);
    free(l.items);
    free(expected);
    free(text);
}

/* The events of a splice show the caller's texts, which outlive the step:
 * a history too small to keep it drops it before the events go out. */
static void test_splice_dropped_by_the_history_at_once(void **state)
{
    fx *f = *state;
    char *text = make_text();
    edit_list l = make_edits(text);
    char *expected = apply_to(text, &l);
    char id[64];
    open_text(f, "untitled:small-history", text, id);
    document_service_set_undo_limit(f->svc, 0);
    recorder r = {0};
    assert_int_equal(document_subscribe(f->svc, &rec_listener, &r), 0);
    assert_int_equal(document_apply_edits(f->svc, id, 1, l.items, l.count, ECP_ENCODING_UTF8, 0, NULL, NULL), 0);
    document_unsubscribe(f->svc, &rec_listener, &r);
    assert_int_equal(r.count, l.count);
    /* the first event is the last edit's */
    assert_memory_equal(r.texts.data + r.items[0].text_at, l.items[l.count - 1].text, l.items[l.count - 1].len);
    bool can_undo, can_redo;
    assert_int_equal(document_history(f->svc, id, &can_undo, &can_redo, NULL), 0);
    assert_false(can_undo);
    char *got = text_of(f, id);
    assert_string_equal(got, expected);
    free(got);
    rec_free(&r);
    free(l.items);
    free(expected);
    free(text);
}

/* Typing at thousands of cursors: each keystroke is a splice, and quick
 * keystrokes still join one undo step, which undo takes back whole. */
static void test_typing_at_many_cursors(void **state)
{
    fx *f = *state;
    enum { CURSORS = 2000 };
    buf b = BUF_INIT;
    for (int i = 0; i < CURSORS; i++)
        buf_append(&b, "abc\n", 4);
    buf_append(&b, "", 1);
    char *text = buf_detach(&b);
    char by_edit[64], by_splice[64];
    open_text(f, "untitled:typed-by-edit", text, by_edit);
    open_text(f, "untitled:typed-by-splice", text, by_splice);
    document *docs[2] = {document__find(f->svc, by_edit, NULL), document__find(f->svc, by_splice, NULL)};
    for (int d = 0; d < 2; d++) {
        doc_cursor_set *set = document__cursors_of(docs[d], 1);
        document__cursors_reset(set, 0, 0);
        for (size_t i = 1; i < CURSORS; i++)
            document__cursors_push(set, 4 * i, 4 * i, DOC_NO_DESIRED);
        place_others(docs[d]);
    }
    recorder r[2] = {{0}, {0}};
    const char *ids[2] = {by_edit, by_splice};
    for (int d = 0; d < 2; d++) {
        f->svc->splice_min_edits = d == 0 ? SIZE_MAX : DOC_SPLICE_MIN_EDITS;
        assert_int_equal(document_subscribe(f->svc, &rec_listener, &r[d]), 0);
        assert_int_equal(document_type(f->svc, ids[d], 1, "x", 1, 0, NULL, NULL), 0);
        assert_int_equal(document_type(f->svc, ids[d], 1, "\xc3\xa9", 2, 0, NULL, NULL), 0);
        document_unsubscribe(f->svc, &rec_listener, &r[d]);
    }
    assert_same_events(&r[0], &r[1]);
    assert_same_cursors_of(docs[0], docs[1], 1);
    assert_same_cursors(docs[0], docs[1]);
    char *got = text_of(f, by_splice);
    assert_int_equal(strlen(got), (size_t)CURSORS * 7);
    assert_memory_equal(got, "x\xc3\xa9" "abc\nx\xc3\xa9" "abc\n", 14);
    free(got);
    assert_true(piece_tree_piece_count(docs[1]->tree) < 16); /* rebuilt, not cut at every cursor */
    assert_true(piece_tree_piece_count(docs[0]->tree) > CURSORS);
    assert_int_equal(docs[1]->history.count, 1); /* the two keystrokes are one step */
    for (int d = 0; d < 2; d++) {
        rec_clear(&r[d]);
        assert_int_equal(document_subscribe(f->svc, &rec_listener, &r[d]), 0);
        assert_int_equal(document_undo(f->svc, ids[d], 1, NULL, NULL), 0);
        document_unsubscribe(f->svc, &rec_listener, &r[d]);
    }
    assert_same_events(&r[0], &r[1]);
    assert_same_cursors_of(docs[0], docs[1], 1);
    assert_same_cursors(docs[0], docs[1]);
    got = text_of(f, by_splice);
    assert_string_equal(got, text);
    free(got);
    bool can_undo, can_redo;
    assert_int_equal(document_history(f->svc, by_splice, &can_undo, &can_redo, NULL), 0);
    assert_false(can_undo);
    rec_free(&r[0]);
    rec_free(&r[1]);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_splice_sends_what_edit_by_edit_sends, setup, teardown),
        cmocka_unit_test_setup_teardown(test_splice_dropped_by_the_history_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_typing_at_many_cursors, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
