/* Unit tests of the piece tree: every public function on hand-made cases, a
 * randomized differential test against a plain byte array, fragmentation
 * under typing, and out-of-memory atomicity. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "piece_tree.h"

/* ---- failing allocations on demand -------------------------------------- */

/* The executable links with --wrap=malloc and --wrap=aligned_alloc, so every
 * such allocation, the tree's included, comes here. When fail_in is n > 0, the n-th call from now fails. */
void *__real_malloc(size_t size);
void *__wrap_malloc(size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);
void *__wrap_aligned_alloc(size_t alignment, size_t size);

static int fail_in;

void *__wrap_malloc(size_t size)
{
    if (fail_in > 0 && --fail_in == 0)
        return NULL;
    return __real_malloc(size);
}

void *__wrap_aligned_alloc(size_t alignment, size_t size)
{
    if (fail_in > 0 && --fail_in == 0)
        return NULL;
    return __real_aligned_alloc(alignment, size);
}

/* ---- a plain model to compare against ----------------------------------- */

typedef struct {
    char *bytes;
    size_t len;
    size_t cap;
} model;

static void model_init(model *m, const char *text, size_t len)
{
    m->cap = len + 64;
    m->bytes = malloc(m->cap);
    assert_non_null(m->bytes);
    if (len > 0)
        memcpy(m->bytes, text, len);
    m->len = len;
}

static void model_insert(model *m, size_t at, const char *text, size_t len)
{
    if (m->len + len > m->cap) {
        m->cap = (m->len + len) * 2;
        m->bytes = realloc(m->bytes, m->cap);
        assert_non_null(m->bytes);
    }
    memmove(m->bytes + at + len, m->bytes + at, m->len - at);
    memcpy(m->bytes + at, text, len);
    m->len += len;
}

static void model_delete(model *m, size_t at, size_t len)
{
    if (at > m->len || len > m->len - at) {
        fail_msg("model_delete(%zu, %zu) past the end (%zu)", at, len, m->len);
        return;
    }
    memmove(m->bytes + at, m->bytes + at + len, m->len - at - len);
    m->len -= len;
}

static size_t model_lines(const model *m)
{
    size_t n = 1;
    for (size_t i = 0; i < m->len; i++)
        n += m->bytes[i] == '\n';
    return n;
}

static char *tree_contents(const piece_tree *t)
{
    size_t len = piece_tree_length(t);
    char *out = malloc(len + 1);
    assert_non_null(out);
    assert_int_equal(piece_tree_copy(t, 0, len, out), len);
    return out;
}

/* Everything a caller can observe, compared with the model: length, bytes,
 * line count, every line's start and length, and the line of every offset. */
static void assert_same(const piece_tree *t, const model *m)
{
    assert_true(piece_tree_check(t));
    assert_int_equal(piece_tree_length(t), m->len);
    char *got = tree_contents(t);
    assert_memory_equal(got, m->bytes, m->len);
    free(got);
    assert_int_equal(piece_tree_line_count(t), model_lines(m));
    size_t line = 0, start = 0;
    for (size_t i = 0; i <= m->len; i++) {
        assert_int_equal(piece_tree_line_of_offset(t, i), line);
        if (i == m->len || m->bytes[i] == '\n') {
            assert_int_equal(piece_tree_line_start(t, line), start);
            assert_int_equal(piece_tree_line_length(t, line), i - start);
            line++;
            start = i + 1;
        }
    }
    for (size_t i = 0; i < m->len; i += 1 + i / 8)
        assert_int_equal(piece_tree_byte_at(t, i), m->bytes[i]);
    assert_true(piece_tree_check(t));
}

/* The cheaper part of assert_same: bytes and every line, no per-offset
 * lookups and no invariant check. */
static void assert_lines(const piece_tree *t, const model *m)
{
    assert_int_equal(piece_tree_length(t), m->len);
    char *got = tree_contents(t);
    assert_memory_equal(got, m->bytes, m->len);
    free(got);
    size_t line = 0, start = 0;
    for (size_t i = 0; i <= m->len; i++) {
        const char *nl = memchr(m->bytes + i, '\n', m->len - i);
        i = nl != NULL ? (size_t)(nl - m->bytes) : m->len;
        assert_int_equal(piece_tree_line_start(t, line), start);
        assert_int_equal(piece_tree_line_length(t, line), i - start);
        line++;
        start = i + 1;
    }
    assert_int_equal(piece_tree_line_count(t), line);
}

static piece_tree *load(const char *text, size_t len)
{
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    if (len > 0)
        memcpy(copy, text, len);
    piece_tree *t = piece_tree_new_owning(copy, len);
    assert_non_null(t);
    return t;
}

static uint64_t rng_state;

static uint64_t rng(void)
{
    /* splitmix64: the tests must replay the same edits on every run. */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(size_t n)
{
    return n == 0 ? 0 : (size_t)(rng() % n);
}

/* Text of short lines, like source code; a line every ~40 bytes. */
static char *make_text(size_t len)
{
    char *s = malloc(len > 0 ? len : 1);
    assert_non_null(s);
    for (size_t i = 0; i < len; i++)
        s[i] = below(40) == 0 ? '\n' : (char)('a' + below(26));
    return s;
}

/* ---- tests -------------------------------------------------------------- */

static void test_empty(void **state)
{
    (void)state;
    piece_tree *t = piece_tree_new();
    assert_non_null(t);
    model m;
    model_init(&m, "", 0);
    assert_int_equal(piece_tree_length(t), 0);
    assert_int_equal(piece_tree_line_count(t), 1);
    assert_int_equal(piece_tree_line_start(t, 0), 0);
    assert_int_equal(piece_tree_line_length(t, 0), 0);
    assert_int_equal(piece_tree_line_of_offset(t, 0), 0);
    assert_int_equal(piece_tree_piece_count(t), 0);
    piece_tree_reader r;
    const char *chunk;
    size_t n;
    piece_tree_reader_init(&r, t, 0, 0);
    assert_false(piece_tree_reader_next(&r, &chunk, &n));
    assert_int_equal(piece_tree_insert(t, 0, "", 0), 0);
    assert_int_equal(piece_tree_delete(t, 0, 0), 0);
    assert_same(t, &m);
    piece_tree_free(t);

    t = piece_tree_new_owning(NULL, 0);
    assert_non_null(t);
    assert_same(t, &m);
    piece_tree_free(t);

    /* An empty original is still owned and freed by the tree. */
    t = piece_tree_new_owning(malloc(16), 0);
    assert_non_null(t);
    assert_same(t, &m);
    piece_tree_free(t);
    piece_tree_free(NULL);
    free(m.bytes);
}

static void test_load(void **state)
{
    (void)state;
    static const char text[] = "first line\nsecond\n\nfourth, no newline";
    piece_tree *t = load(text, sizeof text - 1);
    model m;
    model_init(&m, text, sizeof text - 1);
    assert_same(t, &m);
    assert_int_equal(piece_tree_line_count(t), 4);
    assert_int_equal(piece_tree_line_start(t, 1), 11);
    assert_int_equal(piece_tree_line_length(t, 1), 6);
    assert_int_equal(piece_tree_line_length(t, 2), 0);
    assert_int_equal(piece_tree_line_length(t, 3), 18);
    assert_int_equal(piece_tree_piece_count(t), 1);
    piece_tree_free(t);
    free(m.bytes);
}

static void test_load_large(void **state)
{
    (void)state;
    /* Larger than many original pieces, plus a stretch with no '\n' so that
     * some piece boundaries fall inside a line. */
    size_t len = 300 * 1000;
    rng_state = 1;
    char *text = make_text(len);
    memset(text + 100000, 'x', 50000);
    model m;
    model_init(&m, text, len);
    piece_tree *t = piece_tree_new_owning(text, len);
    assert_non_null(t);
    assert_true(piece_tree_piece_count(t) > 10);
    assert_same(t, &m);
    /* Lines in reverse and random order: the lookup cache must not matter. */
    size_t lines = piece_tree_line_count(t);
    size_t *starts = malloc(lines * sizeof *starts);
    assert_non_null(starts);
    for (size_t l = 0; l < lines; l++)
        starts[l] = piece_tree_line_start(t, l);
    for (size_t l = lines; l-- > 0;)
        assert_int_equal(piece_tree_line_start(t, l), starts[l]);
    for (int i = 0; i < 5000; i++) {
        size_t l = below(lines);
        assert_int_equal(piece_tree_line_start(t, l), starts[l]);
        size_t off = below(len + 1);
        size_t got = piece_tree_line_of_offset(t, off);
        assert_true(starts[got] <= off);
        assert_true(got + 1 == lines || starts[got + 1] > off);
    }
    assert_true(piece_tree_check(t));
    free(starts);
    piece_tree_free(t);
    free(m.bytes);
}

static void test_insert_positions(void **state)
{
    (void)state;
    static const char text[] = "hello\nworld\n";
    piece_tree *t = load(text, sizeof text - 1);
    model m;
    model_init(&m, text, sizeof text - 1);

    assert_int_equal(piece_tree_insert(t, 0, ">> ", 3), 0);
    model_insert(&m, 0, ">> ", 3);
    assert_same(t, &m);

    assert_int_equal(piece_tree_insert(t, 5, "\nmid\n", 5), 0);
    model_insert(&m, 5, "\nmid\n", 5);
    assert_same(t, &m);

    assert_int_equal(piece_tree_insert(t, m.len, "tail", 4), 0);
    model_insert(&m, m.len, "tail", 4);
    assert_same(t, &m);

    /* At every boundary between existing pieces. */
    for (size_t at = 0; at <= m.len; at += 3) {
        assert_int_equal(piece_tree_insert(t, at, "#", 1), 0);
        model_insert(&m, at, "#", 1);
        assert_same(t, &m);
        at++;
    }
    assert_int_equal(piece_tree_line_count(t), 5);
    piece_tree_free(t);
    free(m.bytes);

    /* Into an empty tree, then before the only piece. */
    t = piece_tree_new();
    assert_non_null(t);
    model_init(&m, "", 0);
    assert_int_equal(piece_tree_insert(t, 0, "b\n", 2), 0);
    model_insert(&m, 0, "b\n", 2);
    assert_int_equal(piece_tree_insert(t, 0, "a", 1), 0);
    model_insert(&m, 0, "a", 1);
    assert_same(t, &m);
    piece_tree_free(t);
    free(m.bytes);
}

/* Many small pieces: every other byte inserted separately. */
static piece_tree *fragmented(model *m, size_t pieces)
{
    piece_tree *t = piece_tree_new();
    assert_non_null(t);
    model_init(m, "", 0);
    for (size_t i = 0; i < pieces; i++) {
        char buf[3] = {(char)('a' + i % 26), i % 7 == 0 ? '\n' : 'x', '-'};
        /* Insert at the front so that no insert extends the previous one. */
        assert_int_equal(piece_tree_insert(t, 0, buf, 3), 0);
        model_insert(m, 0, buf, 3);
    }
    assert_int_equal(piece_tree_piece_count(t), pieces);
    return t;
}

static void test_delete_across_pieces(void **state)
{
    (void)state;
    model m;
    piece_tree *t = fragmented(&m, 400);
    assert_same(t, &m);

    /* From the middle of one piece to the middle of another, 100 pieces on. */
    assert_int_equal(piece_tree_delete(t, 31, 300), 0);
    model_delete(&m, 31, 300);
    assert_same(t, &m);
    /* Exactly whole pieces. */
    assert_int_equal(piece_tree_delete(t, 30, 90), 0);
    model_delete(&m, 30, 90);
    assert_same(t, &m);
    /* Inside one piece: splits it. */
    size_t before = piece_tree_piece_count(t);
    assert_int_equal(piece_tree_delete(t, 601, 1), 0);
    model_delete(&m, 601, 1);
    assert_same(t, &m);
    assert_int_equal(piece_tree_piece_count(t), before + 1);
    /* Head and tail of the document. */
    assert_int_equal(piece_tree_delete(t, 0, 10), 0);
    model_delete(&m, 0, 10);
    assert_int_equal(piece_tree_delete(t, m.len - 10, 10), 0);
    model_delete(&m, m.len - 10, 10);
    assert_same(t, &m);
    /* Everything. */
    assert_int_equal(piece_tree_delete(t, 0, m.len), 0);
    model_delete(&m, 0, m.len);
    assert_same(t, &m);
    assert_int_equal(piece_tree_piece_count(t), 0);
    /* And usable afterwards. */
    assert_int_equal(piece_tree_insert(t, 0, "again\n", 6), 0);
    model_insert(&m, 0, "again\n", 6);
    assert_same(t, &m);
    piece_tree_free(t);
    free(m.bytes);

    /* Deleting most of a large loaded document. */
    rng_state = 7;
    size_t len = 200000;
    char *text = make_text(len);
    model_init(&m, text, len);
    t = piece_tree_new_owning(text, len);
    assert_non_null(t);
    assert_int_equal(piece_tree_delete(t, 5, len - 10), 0);
    model_delete(&m, 5, len - 10);
    assert_same(t, &m);
    assert_int_equal(piece_tree_piece_count(t), 2);
    piece_tree_free(t);
    free(m.bytes);
}

static void test_line_boundaries(void **state)
{
    (void)state;
    static const char text[] = "\n\nab\n\ncd\n";
    piece_tree *t = load(text, sizeof text - 1);
    /* Lines: "", "", "ab", "", "cd", "". */
    static const size_t starts[] = {0, 1, 2, 5, 6, 9};
    static const size_t lens[] = {0, 0, 2, 0, 2, 0};
    assert_int_equal(piece_tree_line_count(t), 6);
    for (size_t l = 0; l < 6; l++) {
        assert_int_equal(piece_tree_line_start(t, l), starts[l]);
        assert_int_equal(piece_tree_line_length(t, l), lens[l]);
    }
    /* A '\n' belongs to the line it ends; the end belongs to the last line. */
    static const size_t line_of[] = {0, 1, 2, 2, 2, 3, 4, 4, 4, 5};
    for (size_t off = 0; off <= 9; off++)
        assert_int_equal(piece_tree_line_of_offset(t, off), line_of[off]);

    /* The same lines, each byte its own piece. */
    piece_tree *u = piece_tree_new();
    assert_non_null(u);
    for (size_t i = sizeof text - 1; i-- > 0;)
        assert_int_equal(piece_tree_insert(u, 0, text + i, 1), 0);
    assert_int_equal(piece_tree_piece_count(u), 9);
    for (size_t l = 0; l < 6; l++) {
        assert_int_equal(piece_tree_line_start(u, l), starts[l]);
        assert_int_equal(piece_tree_line_length(u, l), lens[l]);
    }
    for (size_t off = 0; off <= 9; off++)
        assert_int_equal(piece_tree_line_of_offset(u, off), line_of[off]);
    assert_true(piece_tree_check(u));
    piece_tree_free(u);
    piece_tree_free(t);
}

static void test_trailing_newline(void **state)
{
    (void)state;
    piece_tree *t = load("one\ntwo", 7);
    assert_int_equal(piece_tree_line_count(t), 2);
    assert_int_equal(piece_tree_line_start(t, 1), 4);
    assert_int_equal(piece_tree_line_length(t, 1), 3);
    assert_int_equal(piece_tree_line_of_offset(t, 7), 1);
    piece_tree_free(t);

    t = load("one\ntwo\n", 8);
    assert_int_equal(piece_tree_line_count(t), 3);
    assert_int_equal(piece_tree_line_length(t, 1), 3);
    assert_int_equal(piece_tree_line_start(t, 2), 8);
    assert_int_equal(piece_tree_line_length(t, 2), 0);
    assert_int_equal(piece_tree_line_of_offset(t, 7), 1);
    assert_int_equal(piece_tree_line_of_offset(t, 8), 2);
    piece_tree_free(t);

    t = load("\n", 1);
    assert_int_equal(piece_tree_line_count(t), 2);
    assert_int_equal(piece_tree_line_length(t, 0), 0);
    assert_int_equal(piece_tree_line_start(t, 1), 1);
    piece_tree_free(t);
}

static void test_binary_bytes(void **state)
{
    (void)state;
    /* Invalid UTF-8 (a lone continuation, an overlong NUL, a truncated
     * sequence, 0xff) and NUL bytes, both loaded and inserted. */
    static const char text[] = "\x80\xc0\x80\n\0\0\xe2\x82\n\xff\xfe\0";
    size_t len = sizeof text - 1;
    piece_tree *t = load(text, len);
    model m;
    model_init(&m, text, len);
    assert_same(t, &m);
    assert_int_equal(piece_tree_line_count(t), 3);
    assert_int_equal(piece_tree_line_length(t, 1), 4);
    assert_int_equal(piece_tree_insert(t, 5, "\0\xff\n\xc3", 4), 0);
    model_insert(&m, 5, "\0\xff\n\xc3", 4);
    assert_same(t, &m);
    assert_int_equal(piece_tree_byte_at(t, 5), '\0');
    assert_int_equal((unsigned char)piece_tree_byte_at(t, 6), 0xff);
    piece_tree_free(t);
    free(m.bytes);
}

static void test_reader(void **state)
{
    (void)state;
    model m;
    piece_tree *t = fragmented(&m, 30);
    assert_int_equal(piece_tree_insert(t, 40, "a long piece in the middle\n", 27), 0);
    model_insert(&m, 40, "a long piece in the middle\n", 27);
    size_t pieces = piece_tree_piece_count(t);
    char *buf = malloc(m.len + 1);
    assert_non_null(buf);
    for (size_t off = 0; off <= m.len; off++) {
        for (size_t len = 0; off + len <= m.len; len++) {
            piece_tree_reader r;
            const char *chunk;
            size_t n, got = 0, chunks = 0;
            piece_tree_reader_init(&r, t, off, len);
            while (piece_tree_reader_next(&r, &chunk, &n)) {
                assert_true(n > 0);
                assert_true(got + n <= len);
                memcpy(buf + got, chunk, n);
                got += n;
                chunks++;
            }
            assert_int_equal(got, len);
            assert_true(chunks <= pieces);
            if (len > 0)
                assert_memory_equal(buf, m.bytes + off, len);
            /* A finished reader stays finished. */
            assert_false(piece_tree_reader_next(&r, &chunk, &n));
        }
    }
    /* One chunk per piece when reading everything: no copy, no merging. */
    piece_tree_reader r;
    const char *chunk;
    size_t n, chunks = 0;
    piece_tree_reader_init(&r, t, 0, m.len);
    while (piece_tree_reader_next(&r, &chunk, &n))
        chunks++;
    assert_int_equal(chunks, pieces);
    free(buf);
    piece_tree_free(t);
    free(m.bytes);
}

/* Random text for inserts: letters, '\n', and the odd NUL or high byte. */
static size_t random_text(char *buf, size_t max)
{
    size_t len = 1 + below(below(8) == 0 ? max : 8);
    for (size_t i = 0; i < len; i++) {
        size_t k = below(30);
        buf[i] = k < 5 ? '\n' : k == 5 ? '\0' : k == 6 ? (char)0xe9 : (char)('a' + k);
    }
    return len;
}

static void test_differential(void **state)
{
    (void)state;
    rng_state = 42;
    size_t len0 = 40000;
    char *text = make_text(len0);
    model m;
    model_init(&m, text, len0);
    piece_tree *t = piece_tree_new_owning(text, len0);
    assert_non_null(t);
    char buf[300];
    size_t typing_at = 0;
    for (int step = 0; step < 4000; step++) {
        size_t k = below(10);
        if (k < 4 || m.len == 0) {
            size_t at = below(m.len + 1), len = random_text(buf, sizeof buf);
            assert_int_equal(piece_tree_insert(t, at, buf, len), 0);
            model_insert(&m, at, buf, len);
            typing_at = at + len;
        } else if (k < 7) {
            size_t at = below(m.len), len = 1 + below(below(10) == 0 ? m.len - at : 20);
            if (len > m.len - at)
                len = m.len - at;
            assert_int_equal(piece_tree_delete(t, at, len), 0);
            model_delete(&m, at, len);
            typing_at = at;
        } else if (k < 9) {
            /* Typing, sometimes with backspace. */
            if (typing_at > m.len)
                typing_at = m.len;
            for (size_t i = below(12); i > 0; i--) {
                if (below(4) == 0 && typing_at > 0) {
                    assert_int_equal(piece_tree_delete(t, typing_at - 1, 1), 0);
                    model_delete(&m, typing_at - 1, 1);
                    typing_at--;
                } else {
                    char c = below(6) == 0 ? '\n' : (char)('a' + below(26));
                    assert_int_equal(piece_tree_insert(t, typing_at, &c, 1), 0);
                    model_insert(&m, typing_at, &c, 1);
                    typing_at++;
                }
            }
        } else {
            /* Reads only: they move the lookup cache, which check verifies. */
            for (int i = 0; i < 8; i++) {
                size_t l = below(piece_tree_line_count(t));
                piece_tree_line_length(t, l);
                piece_tree_line_of_offset(t, below(m.len + 1));
            }
            assert_true(piece_tree_check(t));
        }
        /* Every step: length, bytes, line count and every line. The line of
         * every offset and the tree's own check cost more and run every few
         * steps (every step once the document is small). */
        assert_lines(t, &m);
        if (m.len < 2000 || step % 50 == 0)
            assert_same(t, &m);
        else if (step % 10 == 0)
            assert_true(piece_tree_check(t));
        /* Shrink now and then so the small-document phase gets its share. */
        if (step == 1500) {
            assert_int_equal(piece_tree_delete(t, 100, m.len - 200), 0);
            model_delete(&m, 100, m.len - 200);
        }
    }
    assert_same(t, &m);
    piece_tree_free(t);
    free(m.bytes);
}

static void test_typing_does_not_fragment(void **state)
{
    (void)state;
    rng_state = 3;
    size_t len = 100000;
    char *text = make_text(len);
    model m;
    model_init(&m, text, len);
    piece_tree *t = piece_tree_new_owning(text, len);
    assert_non_null(t);
    size_t before = piece_tree_piece_count(t);

    /* 10,000 characters typed in the middle of a line: one split, then one
     * piece per add block filled (the blocks are 4, 8, 16 KiB...). */
    size_t at = 54321;
    for (int i = 0; i < 10000; i++) {
        char c = i % 50 == 49 ? '\n' : (char)('a' + i % 26);
        assert_int_equal(piece_tree_insert(t, at, &c, 1), 0);
        model_insert(&m, at, &c, 1);
        at++;
    }
    assert_true(piece_tree_piece_count(t) <= before + 4);
    assert_same(t, &m);

    /* Typing with corrections: backspace takes the byte back. */
    for (int i = 0; i < 3000; i++) {
        if (i % 5 == 4) {
            assert_int_equal(piece_tree_delete(t, at - 1, 1), 0);
            model_delete(&m, at - 1, 1);
            at--;
        } else {
            assert_int_equal(piece_tree_insert(t, at, "z", 1), 0);
            model_insert(&m, at, "z", 1);
            at++;
        }
    }
    assert_true(piece_tree_piece_count(t) <= before + 5);
    assert_same(t, &m);
    piece_tree_free(t);
    free(m.bytes);

    /* Appending to an empty document. */
    t = piece_tree_new();
    assert_non_null(t);
    for (size_t i = 0; i < 10000; i++)
        assert_int_equal(piece_tree_insert(t, i, i % 80 == 79 ? "\n" : "x", 1), 0);
    assert_int_equal(piece_tree_length(t), 10000);
    assert_int_equal(piece_tree_line_count(t), 126);
    /* Add blocks are a few fixed sizes: a handful of pieces at most. */
    assert_true(piece_tree_piece_count(t) <= 4);
    assert_true(piece_tree_check(t));
    piece_tree_free(t);
}

static void test_many_pieces(void **state)
{
    (void)state;
    /* Enough pieces for the node pool to reach its largest slabs, then
     * unlinked again in an order that exercises every rebalancing case. */
    model m;
    piece_tree *t = fragmented(&m, 70000);
    assert_same(t, &m);
    for (int i = 0; i < 1000; i++) {
        size_t at = below(m.len), len = 1 + below(m.len - at < 100 ? m.len - at : 100);
        assert_int_equal(piece_tree_delete(t, at, len), 0);
        model_delete(&m, at, len);
        if (i % 8 == 0) {
            size_t l = below(piece_tree_line_count(t));
            size_t s = piece_tree_line_start(t, l);
            assert_true(s == 0 || m.bytes[s - 1] == '\n');
        }
    }
    assert_same(t, &m);
    while (m.len > 0) {
        size_t at = below(m.len), len = 1 + below(m.len - at < 3000 ? m.len - at : 3000);
        assert_int_equal(piece_tree_delete(t, at, len), 0);
        model_delete(&m, at, len);
        assert_true(piece_tree_check(t));
    }
    assert_same(t, &m);
    assert_int_equal(piece_tree_piece_count(t), 0);
    piece_tree_free(t);
    free(m.bytes);
}

/* Each edit is tried with its 1st, 2nd, ... allocation failing until it goes
 * through; every failure must leave the buffer exactly as it was. */
static void test_out_of_memory(void **state)
{
    (void)state;
    for (int fail = 1;; fail++) {
        char *text = malloc(6);
        assert_non_null(text);
        memcpy(text, "ab\ncd\n", 6);
        fail_in = fail;
        piece_tree *t = piece_tree_new_owning(text, 6);
        fail_in = 0;
        if (t == NULL) {
            /* A failed creation leaves the original with the caller. */
            free(text);
            continue;
        }
        assert_true(fail > 1);
        assert_true(piece_tree_check(t));
        piece_tree_free(t);
        break;
    }
    for (int fail = 1; fail < 10; fail++) {
        fail_in = fail;
        piece_tree *t = piece_tree_new();
        fail_in = 0;
        if (t != NULL)
            piece_tree_free(t);
    }

    rng_state = 11;
    size_t len0 = 50000;
    char *text = make_text(len0);
    model m;
    model_init(&m, text, len0);
    piece_tree *t = piece_tree_new_owning(text, len0);
    assert_non_null(t);
    char buf[300];
    int failures = 0;
    for (int step = 0; step < 3000; step++) {
        bool ins = below(3) != 0 || m.len == 0;
        size_t at = below(m.len + (ins ? 1 : 0)), len;
        if (ins)
            len = random_text(buf, below(20) == 0 ? sizeof buf : 16);
        else
            len = 1 + below(m.len - at < 30 ? m.len - at : 30);
        for (int fail = 1;; fail++) {
            fail_in = fail;
            int rc = ins ? piece_tree_insert(t, at, buf, len) : piece_tree_delete(t, at, len);
            fail_in = 0;
            if (rc == 0)
                break;
            assert_int_equal(rc, -1);
            failures++;
            assert_int_equal(piece_tree_length(t), m.len);
            assert_true(piece_tree_check(t));
            if (step % 100 == 0)
                assert_same(t, &m);
        }
        if (ins)
            model_insert(&m, at, buf, len);
        else
            model_delete(&m, at, len);
    }
    /* The tree allocates in growing batches, yet some edits needed memory. */
    assert_true(failures >= 5);
    assert_same(t, &m);
    piece_tree_free(t);
    free(m.bytes);
}

/* ---- snapshots ---------------------------------------------------------- */

/* Everything a snapshot answers, against the bytes it must show: length,
 * bytes through copy and through the reader at a few cuts, line count, and
 * every line's start and length. */
static void assert_snapshot(const piece_tree_snapshot *snap, const char *bytes, size_t len)
{
    assert_int_equal(piece_tree_snapshot_length(snap), len);
    char *got = malloc(len + 1);
    assert_non_null(got);
    assert_int_equal(piece_tree_snapshot_copy(snap, 0, len, got), len);
    assert_memory_equal(got, bytes, len);
    for (int k = 0; k < 4 && len > 0; k++) {
        size_t at = below(len), n = below(len - at + 1), done = 0;
        piece_tree_snapshot_reader r;
        const char *chunk;
        size_t c;
        piece_tree_snapshot_reader_init(&r, snap, at, n);
        while (piece_tree_snapshot_reader_next(&r, &chunk, &c)) {
            assert_true(c > 0);
            assert_memory_equal(chunk, bytes + at + done, c);
            done += c;
        }
        assert_int_equal(done, n);
    }
    free(got);
    size_t line = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        const char *nl = memchr(bytes + i, '\n', len - i);
        i = nl != NULL ? (size_t)(nl - bytes) : len;
        size_t s, n;
        piece_tree_snapshot_line_range(snap, line, &s, &n);
        assert_int_equal(s, start);
        assert_int_equal(n, i - start);
        assert_int_equal(piece_tree_snapshot_line_start(snap, line), start);
        line++;
        start = i + 1;
    }
    assert_int_equal(piece_tree_snapshot_line_count(snap), line);
}

static void test_snapshot_reads(void **state)
{
    (void)state;
    rng_state = 5;
    piece_tree *t = piece_tree_new();
    assert_non_null(t);
    piece_tree_snapshot *empty = piece_tree_snapshot_take(t);
    assert_non_null(empty);
    assert_snapshot(empty, "", 0);
    piece_tree_reader_init(&(piece_tree_reader){0}, t, 0, 0);
    piece_tree_free(t);

    const char *cases[] = {"\n", "a", "a\n", "\n\nb\n", "one\ntwo\nthree"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        t = load(cases[i], strlen(cases[i]));
        piece_tree_snapshot *snap = piece_tree_snapshot_take(t);
        assert_snapshot(snap, cases[i], strlen(cases[i]));
        piece_tree_snapshot_release(snap);
        piece_tree_free(t);
    }
    /* Many pieces, lines across pieces, lines inside one. */
    model m;
    t = fragmented(&m, 3000);
    piece_tree_snapshot *snap = piece_tree_snapshot_take(t);
    assert_non_null(snap);
    assert_snapshot(snap, m.bytes, m.len);
    assert_int_equal(piece_tree_snapshot_bytes(snap) >= piece_tree_piece_count(t) * 3 * sizeof(size_t), true);
    piece_tree_snapshot_release(snap);
    piece_tree_snapshot_release(empty);
    piece_tree_snapshot_release(NULL);
    piece_tree_free(t);
    free(m.bytes);
}

typedef struct taken {
    piece_tree_snapshot *snap;
    char *bytes; /* the text when it was taken */
    size_t len;
} taken;

static void take(piece_tree *t, const model *m, taken *out)
{
    out->snap = piece_tree_snapshot_take(t);
    assert_non_null(out->snap);
    out->bytes = malloc(m->len + 1);
    assert_non_null(out->bytes);
    memcpy(out->bytes, m->bytes, m->len);
    out->len = m->len;
}

static void drop(taken *x)
{
    piece_tree_snapshot_release(x->snap);
    free(x->bytes);
    x->snap = NULL;
    x->bytes = NULL;
}

/* Typing, then a snapshot, then backspace over what was typed and typing
 * again: the backspace must not hand back bytes the snapshot shows, or the
 * new keystrokes would overwrite them. Once the snapshot is gone, typing is
 * again free of new pieces. */
static void test_snapshot_keeps_typed_bytes(void **state)
{
    (void)state;
    piece_tree *t = load("0123456789\n", 11);
    assert_int_equal(piece_tree_insert(t, 5, "abc", 3), 0);
    assert_int_equal(piece_tree_insert(t, 8, "d", 1), 0);
    piece_tree_snapshot *snap = piece_tree_snapshot_take(t);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(piece_tree_delete(t, 8 - i, 1), 0);
    assert_int_equal(piece_tree_insert(t, 5, "WXYZ", 4), 0);
    assert_int_equal(piece_tree_insert(t, 9, "!", 1), 0);
    assert_true(piece_tree_check(t));
    assert_snapshot(snap, "01234abcd56789\n", 15);
    char now[32];
    assert_int_equal(piece_tree_copy(t, 0, piece_tree_length(t), now), 16);
    assert_memory_equal(now, "01234WXYZ!56789\n", 16);
    piece_tree_snapshot_release(snap);
    piece_tree_free(t);

    /* Backspace then typing over bytes typed before a snapshot: one piece
     * more while the snapshot lives, none once it is released. */
    for (int alive = 0; alive < 2; alive++) {
        t = load("0123456789\n", 11);
        assert_int_equal(piece_tree_insert(t, 5, "abcd", 4), 0);
        size_t pieces = piece_tree_piece_count(t);
        snap = piece_tree_snapshot_take(t);
        if (!alive)
            piece_tree_snapshot_release(snap);
        assert_int_equal(piece_tree_delete(t, 8, 1), 0);
        assert_int_equal(piece_tree_delete(t, 7, 1), 0);
        assert_int_equal(piece_tree_insert(t, 7, "x", 1), 0);
        assert_int_equal(piece_tree_insert(t, 8, "y", 1), 0);
        assert_true(piece_tree_check(t));
        assert_int_equal(piece_tree_copy(t, 0, piece_tree_length(t), now), 15);
        assert_memory_equal(now, "01234abxy56789\n", 15);
        assert_int_equal(piece_tree_piece_count(t), pieces + (size_t)alive);
        if (alive) {
            assert_snapshot(snap, "01234abcd56789\n", 15);
            piece_tree_snapshot_release(snap);
        }
        piece_tree_free(t);
    }
}

/* Snapshots taken along a random edit history each still show the text of
 * their moment, also after the tree that made them is gone. */
static void test_snapshots_survive_edits(void **state)
{
    (void)state;
    rng_state = 77;
    size_t len0 = 30000;
    char *text = make_text(len0);
    model m;
    model_init(&m, text, len0);
    piece_tree *t = piece_tree_new_owning(text, len0);
    assert_non_null(t);
    enum { KEEP = 12 };
    taken kept[KEEP] = {0};
    char buf[300];
    size_t typing_at = 0;
    for (int step = 0; step < 3000; step++) {
        size_t k = below(10);
        if (k < 3 || m.len == 0) {
            size_t at = below(m.len + 1), len = random_text(buf, 1 + below(sizeof buf - 1));
            assert_int_equal(piece_tree_insert(t, at, buf, len), 0);
            model_insert(&m, at, buf, len);
            typing_at = at + len;
        } else if (k < 5) {
            size_t at = below(m.len), len = 1 + below(m.len - at < 40 ? m.len - at : 40);
            assert_int_equal(piece_tree_delete(t, at, len), 0);
            model_delete(&m, at, len);
            typing_at = at;
        } else {
            /* Typing with backspaces, the case that reuses add bytes. */
            if (typing_at > m.len)
                typing_at = m.len;
            for (size_t i = 1 + below(16); i > 0; i--) {
                if (below(3) == 0 && typing_at > 0) {
                    assert_int_equal(piece_tree_delete(t, typing_at - 1, 1), 0);
                    model_delete(&m, typing_at - 1, 1);
                    typing_at--;
                } else {
                    char c = below(8) == 0 ? '\n' : (char)('a' + below(26));
                    assert_int_equal(piece_tree_insert(t, typing_at, &c, 1), 0);
                    model_insert(&m, typing_at, &c, 1);
                    typing_at++;
                }
            }
        }
        if (below(8) == 0) {
            /* Replace one kept snapshot, checking it first. */
            taken *x = &kept[below(KEEP)];
            if (x->snap != NULL) {
                assert_snapshot(x->snap, x->bytes, x->len);
                drop(x);
            }
            take(t, &m, x);
        }
        if (step % 500 == 0)
            assert_true(piece_tree_check(t));
    }
    assert_lines(t, &m);
    assert_true(piece_tree_check(t));
    for (int i = 0; i < KEEP; i++)
        if (kept[i].snap != NULL)
            assert_snapshot(kept[i].snap, kept[i].bytes, kept[i].len);
    /* The tree goes; its snapshots stay readable (ASan watches). */
    taken last;
    take(t, &m, &last);
    piece_tree_free(t);
    free(m.bytes);
    for (int i = 0; i < KEEP; i++) {
        if (kept[i].snap != NULL) {
            assert_snapshot(kept[i].snap, kept[i].bytes, kept[i].len);
            drop(&kept[i]);
        }
    }
    assert_snapshot(last.snap, last.bytes, last.len);
    drop(&last);
}

static void test_snapshot_out_of_memory(void **state)
{
    (void)state;
    piece_tree *t = load("ab\ncd\n", 6);
    assert_int_equal(piece_tree_insert(t, 1, "x", 1), 0);
    fail_in = 1;
    assert_null(piece_tree_snapshot_take(t));
    fail_in = 0;
    /* Nothing changed, not even the floor: backspace still gives back. */
    assert_true(piece_tree_check(t));
    assert_int_equal(piece_tree_delete(t, 1, 1), 0);
    assert_int_equal(piece_tree_insert(t, 1, "y", 1), 0);
    assert_true(piece_tree_check(t));
    piece_tree_snapshot *snap = piece_tree_snapshot_take(t);
    assert_non_null(snap);
    assert_snapshot(snap, "ayb\ncd\n", 7);
    piece_tree_snapshot_release(snap);
    piece_tree_free(t);
}

/* Lines read in order through the iterator are exactly the lines that one
 * lookup each finds, for any first line and count, on a fragmented tree and
 * on a snapshot of it. */
static void check_lines(piece_tree *t, const piece_tree_snapshot *snap, size_t first, size_t count)
{
    piece_tree_lines it;
    if (snap)
        piece_tree_snapshot_lines_init(&it, snap, first, count);
    else
        piece_tree_lines_init(&it, t, first, count);
    size_t line = first, got = 0, cap = 1 << 16;
    char *want = malloc(cap), *have = malloc(cap);
    const char *chunk;
    size_t n;
    bool ends;
    while (piece_tree_lines_next(&it, &chunk, &n, &ends)) {
        assert_true(line < first + count);
        assert_true(got + n <= cap);
        memcpy(have + got, chunk, n);
        got += n;
        if (!ends)
            continue;
        size_t start, len;
        if (snap)
            piece_tree_snapshot_line_range(snap, line, &start, &len);
        else
            piece_tree_line_range(t, line, &start, &len);
        assert_int_equal(got, len);
        if (snap)
            piece_tree_snapshot_copy(snap, start, len, want);
        else
            piece_tree_copy(t, start, len, want);
        assert_memory_equal(have, want, len);
        line++;
        got = 0;
    }
    assert_int_equal(line, first + count);
    /* The same lines copied whole, into room enough and into too little. */
    static const size_t rooms[] = {16, 100, 1 << 16};
    for (size_t ri = 0; ri < 3; ri++) {
        size_t room = rooms[ri];
        if (snap)
            piece_tree_snapshot_lines_init(&it, snap, first, count);
        else
            piece_tree_lines_init(&it, t, first, count);
        line = first;
        size_t len;
        while (piece_tree_lines_copy(&it, have, room, &len)) {
            size_t start, want_len;
            if (snap)
                piece_tree_snapshot_line_range(snap, line, &start, &want_len);
            else
                piece_tree_line_range(t, line, &start, &want_len);
            assert_int_equal(len, want_len);
            if (snap)
                piece_tree_snapshot_copy(snap, start, want_len, want);
            else
                piece_tree_copy(t, start, want_len, want);
            assert_memory_equal(have, want, len < room ? len : room);
            line++;
        }
        assert_int_equal(line, first + count);
    }
    free(want);
    free(have);
}

static void test_lines_in_order(void **state)
{
    (void)state;
    rng_state = 7;
    size_t len0 = 200000;
    char *text = make_text(len0);
    piece_tree *t = piece_tree_new_owning(text, len0);
    assert_non_null(t);
    char buf[300];
    for (int step = 0; step < 3000; step++) {
        size_t len = piece_tree_length(t);
        if (below(3) || len == 0) {
            size_t n = random_text(buf, sizeof buf);
            if (below(5) == 0)
                buf[0] = '\n', buf[n - 1] = '\n'; /* lines that start and end at a piece's edge */
            assert_int_equal(piece_tree_insert(t, below(len + 1), buf, n), 0);
        } else {
            size_t at = below(len);
            assert_int_equal(piece_tree_delete(t, at, 1 + below(len - at < 60 ? len - at : 60)), 0);
        }
    }
    size_t lines = piece_tree_line_count(t);
    check_lines(t, NULL, 0, lines);
    piece_tree_snapshot *snap = piece_tree_snapshot_take(t);
    assert_non_null(snap);
    check_lines(NULL, snap, 0, lines);
    for (int k = 0; k < 200; k++) {
        size_t first = below(lines + 1), count = below(lines - first + 1);
        if (k % 10 == 0)
            count = lines - first; /* to the last line */
        check_lines(t, NULL, first, count);
        check_lines(NULL, snap, first, count);
    }
    piece_tree_snapshot_release(snap);
    /* Long lines (the copy takes 64 bytes a round), split across pieces. */
    piece_tree_free(t);
    size_t long_len = 100000;
    char *longs = malloc(long_len);
    for (size_t i = 0; i < long_len; i++)
        longs[i] = below(200) == 0 ? '\n' : (char)('a' + below(26));
    t = piece_tree_new_owning(longs, long_len);
    for (int step = 0; step < 300; step++)
        assert_int_equal(piece_tree_insert(t, below(piece_tree_length(t) + 1), "xyz\nabc", 1 + below(7)), 0);
    check_lines(t, NULL, 0, piece_tree_line_count(t));
    /* Empty lines only, and an empty tree. */
    piece_tree_free(t);
    char *nls = malloc(5);
    memcpy(nls, "\n\n\n\n\n", 5);
    t = piece_tree_new_owning(nls, 5);
    check_lines(t, NULL, 0, 6);
    check_lines(t, NULL, 5, 1);
    check_lines(t, NULL, 2, 0);
    piece_tree_free(t);
    t = piece_tree_new();
    check_lines(t, NULL, 0, 1);
    piece_tree_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_large),
        cmocka_unit_test(test_insert_positions),
        cmocka_unit_test(test_delete_across_pieces),
        cmocka_unit_test(test_line_boundaries),
        cmocka_unit_test(test_trailing_newline),
        cmocka_unit_test(test_binary_bytes),
        cmocka_unit_test(test_reader),
        cmocka_unit_test(test_differential),
        cmocka_unit_test(test_typing_does_not_fragment),
        cmocka_unit_test(test_many_pieces),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_snapshot_reads),
        cmocka_unit_test(test_snapshot_keeps_typed_bytes),
        cmocka_unit_test(test_snapshots_survive_edits),
        cmocka_unit_test(test_snapshot_out_of_memory),
        cmocka_unit_test(test_lines_in_order),
    };
    return cmocka_run_group_tests_name("piece_tree", tests, NULL, NULL);
}
