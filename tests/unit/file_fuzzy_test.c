/* The fuzzy file-name scorer of file/search: scores and matched ranges. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "file/interface.h"

typedef struct scored {
    int score;
    file_search_range r[8];
    size_t n;
} scored;

static scored score(const char *pattern, const char *name)
{
    scored s;
    s.score = file_fuzzy_score(pattern, strlen(pattern), name, strlen(name), s.r, 8, &s.n);
    return s;
}

static void test_prefix(void **state)
{
    scored s = score("main", "main.c");
    assert_int_equal(s.score, 100);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].start, 0);
    assert_int_equal(s.r[0].end, 4);
    /* case does not matter */
    assert_int_equal(score("MAIN", "main.c").score, 100);
    assert_int_equal(score("read", "README.md").score, 100);
}

static void test_substring(void **state)
{
    scored s = score("util", "string_utils.c");
    assert_int_equal(s.score, 50);
    assert_int_equal(s.n, 1);
    assert_int_equal(s.r[0].start, 7);
    assert_int_equal(s.r[0].end, 11);
}

static void test_subsequence(void **state)
{
    scored s = score("pts", "piece_tree_search.c");
    assert_int_equal(s.score, 25);
    assert_int_equal(s.n, 3);
    assert_int_equal(s.r[0].start, 0); /* p */
    assert_int_equal(s.r[0].end, 1);
    assert_int_equal(s.r[1].start, 6); /* t of tree */
    assert_int_equal(s.r[1].end, 7);
    assert_int_equal(s.r[2].start, 11); /* s of _search: the first s after t */
    assert_int_equal(s.r[2].end, 12);
    /* consecutive characters merge into one range */
    s = score("abxy", "abcxy");
    assert_int_equal(s.score, 25);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.r[0].start, 0);
    assert_int_equal(s.r[0].end, 2);
    assert_int_equal(s.r[1].start, 3);
    assert_int_equal(s.r[1].end, 5);
}

static void test_no_match(void **state)
{
    scored s = score("xyz", "main.c");
    assert_int_equal(s.score, 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(score("mainc.", "main.c").score, 0);
    assert_int_equal(score("main.cc", "main.c").score, 0);
}

static void test_non_ascii(void **state)
{
    /* byte ranges: é is two bytes */
    scored s = score("caf\xc3\xa9", "caf\xc3\xa9-menu.txt");
    assert_int_equal(s.score, 100);
    assert_int_equal(s.r[0].end, 5);
    s = score("\xc3\xa9m", "caf\xc3\xa9-menu.txt");
    assert_int_equal(s.score, 25);
    assert_int_equal(s.r[0].start, 3);
    assert_int_equal(s.r[0].end, 5);
    assert_int_equal(s.r[1].start, 6);
}

static void test_ordering_of_scores(void **state)
{
    assert_true(score("doc", "document.c").score > score("doc", "mydoc.c").score);
    assert_true(score("doc", "mydoc.c").score > score("doc", "d_o_c.c").score);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prefix),
        cmocka_unit_test(test_substring),
        cmocka_unit_test(test_subsequence),
        cmocka_unit_test(test_no_match),
        cmocka_unit_test(test_non_ascii),
        cmocka_unit_test(test_ordering_of_scores),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
