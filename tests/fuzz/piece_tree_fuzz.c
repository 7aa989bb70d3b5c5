/* Differential fuzzing of the piece tree against a plain byte array.
 *
 * The input is a program: an initial document, then operations (insert,
 * delete, typing, backspace, undo, redo). Every edit goes on an undo journal
 * that keeps the bytes a delete removed, so undo and redo replay real editor
 * traffic: the same ranges deleted and re-inserted, over and over. After each
 * step the content, length, line count and every line are compared with the
 * model and the tree checks its own invariants; every few steps, the line of
 * every offset too.
 *
 * Built with tiny original pieces and add blocks (see piece_tree.cmake), so
 * that a few bytes of input already span many pieces and blocks. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "piece_tree.h"

#define MAX_DOC 1024
#define MAX_JOURNAL 256

#define REQUIRE(cond)          \
    do {                       \
        if (!(cond))           \
            __builtin_trap();  \
    } while (0)

typedef struct {
    const uint8_t *data;
    size_t size;
    size_t at;
} input;

static uint8_t next_byte(input *in)
{
    return in->at < in->size ? in->data[in->at++] : 0;
}

static size_t next_u16(input *in)
{
    size_t hi = next_byte(in);
    return hi << 8 | next_byte(in);
}

/* Text from the input, leaning towards '\n' so that lines are short. */
static size_t next_text(input *in, char *out, size_t len)
{
    size_t n = 0;
    while (n < len && in->at < in->size) {
        uint8_t b = next_byte(in);
        out[n++] = (b & 3) == 0 ? '\n' : (char)b;
    }
    return n;
}

typedef struct {
    bool insert; /* false: delete */
    size_t at;
    char *bytes; /* what was inserted, or what the delete removed */
    size_t len;
} edit;

typedef struct {
    piece_tree *tree;
    char model[MAX_DOC];
    size_t len;
    edit undo[MAX_JOURNAL];
    size_t undo_len;
    edit redo[MAX_JOURNAL];
    size_t redo_len;
    size_t cursor; /* where typing goes on */
    bool forgot;   /* the undo journal dropped its oldest edit */
    size_t steps;
} session;

/* The line of every offset, forwards and backwards (the lookup cache must
 * give the same answers in either order). Costlier than the rest of a
 * comparison, so it runs every few steps. */
static void compare_offsets(const session *s)
{
    const piece_tree *t = s->tree;
    size_t line = 0;
    for (size_t i = 0; i <= s->len; i++) {
        REQUIRE(piece_tree_line_of_offset(t, i) == line);
        if (i < s->len) {
            REQUIRE(piece_tree_byte_at(t, i) == s->model[i]);
            line += s->model[i] == '\n';
        }
    }
    for (size_t i = s->len + 1; i-- > 0;) {
        if (i < s->len && s->model[i] == '\n')
            line--;
        REQUIRE(piece_tree_line_of_offset(t, i) == line);
    }
}

/* Content, length, line count and every line, plus the tree's own check. */
static void compare(session *s)
{
    const piece_tree *t = s->tree;
    REQUIRE(piece_tree_check(t));
    REQUIRE(piece_tree_length(t) == s->len);

    static char copy[MAX_DOC];
    REQUIRE(piece_tree_copy(t, 0, s->len, copy) == s->len);
    REQUIRE(memcmp(copy, s->model, s->len) == 0);

    size_t line = 0, start = 0;
    for (size_t i = 0; i <= s->len; i++) {
        if (i == s->len || s->model[i] == '\n') {
            REQUIRE(piece_tree_line_start(t, line) == start);
            REQUIRE(piece_tree_line_length(t, line) == i - start);
            line++;
            start = i + 1;
        }
    }
    REQUIRE(piece_tree_line_count(t) == line);

    /* Lines once more, last to first, each through the reader. */
    for (size_t l = line; l-- > 0;) {
        size_t ls = piece_tree_line_start(t, l), ll = piece_tree_line_length(t, l), got = 0;
        REQUIRE(ls + ll <= s->len);
        REQUIRE(ls == 0 || s->model[ls - 1] == '\n');
        REQUIRE(ls + ll == s->len || s->model[ls + ll] == '\n');
        piece_tree_reader r;
        const char *chunk;
        size_t n;
        piece_tree_reader_init(&r, t, ls, ll);
        while (piece_tree_reader_next(&r, &chunk, &n)) {
            REQUIRE(n > 0 && got + n <= ll);
            REQUIRE(memcmp(chunk, s->model + ls + got, n) == 0);
            got += n;
        }
        REQUIRE(got == ll);
    }
    if (++s->steps % 8 == 0)
        compare_offsets(s);
}

static bool journal_push(edit *stack, size_t *len, edit e)
{
    bool dropped = *len == MAX_JOURNAL;
    if (dropped) {
        free(stack[0].bytes);
        memmove(stack, stack + 1, (MAX_JOURNAL - 1) * sizeof *stack);
        (*len)--;
    }
    stack[(*len)++] = e;
    return dropped;
}

static void journal_clear(edit *stack, size_t *len)
{
    while (*len > 0)
        free(stack[--*len].bytes);
}

/* Applies e to both sides. For a delete, fills e->bytes from the model and
 * checks that the tree had the same bytes there. */
static void apply(session *s, edit *e)
{
    if (e->insert) {
        REQUIRE(piece_tree_insert(s->tree, e->at, e->bytes, e->len) == 0);
        memmove(s->model + e->at + e->len, s->model + e->at, s->len - e->at);
        memcpy(s->model + e->at, e->bytes, e->len);
        s->len += e->len;
        s->cursor = e->at + e->len;
    } else {
        if (e->bytes == NULL) {
            e->bytes = malloc(e->len ? e->len : 1);
            REQUIRE(e->bytes != NULL);
            memcpy(e->bytes, s->model + e->at, e->len);
        }
        static char removed[MAX_DOC];
        REQUIRE(piece_tree_copy(s->tree, e->at, e->len, removed) == e->len);
        REQUIRE(memcmp(removed, e->bytes, e->len) == 0);
        REQUIRE(piece_tree_delete(s->tree, e->at, e->len) == 0);
        memmove(s->model + e->at, s->model + e->at + e->len, s->len - e->at - e->len);
        s->len -= e->len;
        s->cursor = e->at;
    }
}

/* A new edit: applied, journaled, and the redo stack forgotten. */
static void edit_new(session *s, bool insert, size_t at, const char *text, size_t len)
{
    if (len == 0 || (insert && s->len + len > MAX_DOC))
        return;
    edit e = {.insert = insert, .at = at, .bytes = NULL, .len = len};
    if (insert) {
        e.bytes = malloc(len);
        REQUIRE(e.bytes != NULL);
        memcpy(e.bytes, text, len);
    }
    apply(s, &e);
    s->forgot |= journal_push(s->undo, &s->undo_len, e);
    journal_clear(s->redo, &s->redo_len);
}

static void undo(session *s)
{
    if (s->undo_len == 0)
        return;
    edit e = s->undo[--s->undo_len];
    edit inverse = {.insert = !e.insert, .at = e.at, .bytes = e.bytes, .len = e.len};
    apply(s, &inverse);
    journal_push(s->redo, &s->redo_len, e);
}

static void redo(session *s)
{
    if (s->redo_len == 0)
        return;
    edit e = s->redo[--s->redo_len];
    apply(s, &e);
    s->forgot |= journal_push(s->undo, &s->undo_len, e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    input in = {data, size, 0};
    static session s;
    memset(&s, 0, sizeof s);

    size_t initial = next_byte(&in) % 64;
    char *original = malloc(initial ? initial : 1);
    REQUIRE(original != NULL);
    initial = next_text(&in, original, initial);
    memcpy(s.model, original, initial);
    static char first[64];
    memcpy(first, original, initial);
    s.len = initial;
    s.tree = piece_tree_new_owning(original, initial);
    REQUIRE(s.tree != NULL);
    compare(&s);

    char text[256];
    while (in.at < in.size) {
        uint8_t op = next_byte(&in);
        switch (op % 8) {
        case 0:
        case 1: { /* short insert */
            size_t at = next_u16(&in) % (s.len + 1);
            size_t len = next_text(&in, text, 1 + next_byte(&in) % 12);
            edit_new(&s, true, at, text, len);
            break;
        }
        case 2: { /* long insert: a paste, bigger than an add block */
            size_t at = next_u16(&in) % (s.len + 1);
            size_t len = next_text(&in, text, next_byte(&in));
            edit_new(&s, true, at, text, len);
            break;
        }
        case 3: { /* delete, now and then a large range */
            if (s.len == 0)
                break;
            size_t at = next_u16(&in) % s.len;
            uint8_t b = next_byte(&in);
            size_t len = b & 0x80 ? (size_t)b % (s.len - at + 1) : 1 + (size_t)b % 8;
            if (len > s.len - at)
                len = s.len - at;
            edit_new(&s, false, at, NULL, len);
            break;
        }
        case 4: { /* typing at the cursor, one keystroke per edit */
            size_t n = 1 + next_byte(&in) % 16;
            for (size_t i = 0; i < n && in.at < in.size; i++) {
                if (s.cursor > s.len)
                    s.cursor = s.len;
                char c;
                next_text(&in, &c, 1);
                edit_new(&s, true, s.cursor, &c, 1);
                compare(&s);
            }
            break;
        }
        case 5: { /* backspace at the cursor */
            size_t n = 1 + next_byte(&in) % 8;
            for (size_t i = 0; i < n; i++) {
                if (s.cursor > s.len)
                    s.cursor = s.len;
                if (s.cursor == 0)
                    break;
                edit_new(&s, false, s.cursor - 1, NULL, 1);
                compare(&s);
            }
            break;
        }
        case 6: {
            size_t n = 1 + next_byte(&in) % 8;
            for (size_t i = 0; i < n; i++) {
                undo(&s);
                compare(&s);
            }
            break;
        }
        case 7: {
            size_t n = 1 + next_byte(&in) % 8;
            for (size_t i = 0; i < n; i++) {
                redo(&s);
                compare(&s);
            }
            break;
        }
        }
        compare(&s);
    }

    /* Undoing the whole journal gives back the initial document, unless the
     * journal had to forget its oldest edits. */
    while (s.undo_len > 0)
        undo(&s);
    compare(&s);
    compare_offsets(&s);
    if (!s.forgot)
        REQUIRE(s.len == initial && memcmp(s.model, first, initial) == 0);

    journal_clear(s.undo, &s.undo_len);
    journal_clear(s.redo, &s.redo_len);
    piece_tree_free(s.tree);
    return 0;
}
