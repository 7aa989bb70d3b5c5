/* ecp_map: finds, replaces and removes what was put in, keeps insertion order,
 * grows and shrinks through many keys, survives keys that share a slot, and
 * hashes the same keys differently in two maps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "map.h"

#define MANY 100000

static void *as_value(size_t i) { return (void *)(uintptr_t)(i + 1); }

static void key_of(char *out, size_t size, size_t i) { snprintf(out, size, "file:///src/%zu.c", i); }

static void test_insert_find_remove(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new();
    assert_int_equal(ecp_map_count(m), 0);
    assert_null(ecp_map_get(m, "a"));
    assert_false(ecp_map_remove(m, "a", NULL));

    char key[8] = "a";
    assert_true(ecp_map_set(m, key, as_value(1), NULL));
    key[0] = 'z'; /* the map keeps its own copy */
    assert_ptr_equal(ecp_map_get(m, "a"), as_value(1));
    assert_null(ecp_map_get(m, "z"));
    assert_true(ecp_map_set(m, "", as_value(2), NULL));
    assert_ptr_equal(ecp_map_get(m, ""), as_value(2));

    void *old = NULL;
    assert_false(ecp_map_set(m, "a", as_value(3), &old));
    assert_ptr_equal(old, as_value(1));
    assert_ptr_equal(ecp_map_get(m, "a"), as_value(3));
    assert_int_equal(ecp_map_count(m), 2);

    /* a NULL value is there, not missing */
    assert_true(ecp_map_set(m, "null", NULL, NULL));
    void *value = as_value(9);
    assert_true(ecp_map_find(m, "null", &value));
    assert_null(value);
    assert_false(ecp_map_find(m, "nul", NULL));

    assert_true(ecp_map_remove(m, "a", &value));
    assert_ptr_equal(value, as_value(3));
    assert_null(ecp_map_get(m, "a"));
    assert_false(ecp_map_remove(m, "a", NULL));
    assert_int_equal(ecp_map_count(m), 2);
    ecp_map_free(m);
    ecp_map_free(NULL);
}

static void test_iteration_order(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new();
    const char *keys[] = {"delta", "alpha", "charlie", "bravo", "echo"};
    for (size_t i = 0; i < 5; i++)
        ecp_map_set(m, keys[i], as_value(i), NULL);
    ecp_map_remove(m, "charlie", NULL);
    ecp_map_set(m, "alpha", as_value(7), NULL); /* a replaced key keeps its place */
    ecp_map_set(m, "charlie", as_value(8), NULL); /* a key put back goes last */

    const char *want[] = {"delta", "alpha", "bravo", "echo", "charlie"};
    void *want_values[] = {as_value(0), as_value(7), as_value(3), as_value(4), as_value(8)};
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    const char *key;
    void *value;
    size_t n = 0;
    while (ecp_map_next(m, &it, &key, &value)) {
        assert_true(n < 5);
        assert_string_equal(key, want[n]);
        assert_ptr_equal(value, want_values[n]);
        n++;
    }
    assert_int_equal(n, 5);
    assert_false(ecp_map_next(m, &it, &key, &value)); /* stays at the end */
    ecp_map_free(m);
}

/* Every entry removed while iterating: each key seen once, none skipped. */
static void test_remove_while_iterating(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new();
    char key[32];
    for (size_t i = 0; i < 1000; i++) {
        key_of(key, sizeof key, i);
        ecp_map_set(m, key, as_value(i), NULL);
    }
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    const char *k;
    void *value;
    size_t seen = 0;
    while (ecp_map_next(m, &it, &k, &value)) {
        assert_ptr_equal(value, as_value(seen));
        if (seen % 2 == 0)
            assert_ptr_equal(ecp_map_iter_remove(m, &it), as_value(seen));
        seen++;
    }
    assert_int_equal(seen, 1000);
    assert_int_equal(ecp_map_count(m), 500);
    for (size_t i = 0; i < 1000; i++) {
        key_of(key, sizeof key, i);
        assert_int_equal(ecp_map_find(m, key, NULL), i % 2 == 1);
    }
    /* the space of the removed entries comes back on later inserts */
    for (size_t i = 1000; i < 3000; i++) {
        key_of(key, sizeof key, i);
        ecp_map_set(m, key, as_value(i), NULL);
    }
    assert_int_equal(ecp_map_count(m), 2500);
    it = ECP_MAP_ITER_INIT;
    while (ecp_map_next(m, &it, NULL, NULL))
        ecp_map_iter_remove(m, &it);
    assert_int_equal(ecp_map_count(m), 0);
    ecp_map_set(m, "after", as_value(1), NULL);
    assert_ptr_equal(ecp_map_get(m, "after"), as_value(1));
    ecp_map_free(m);
}

static void test_grow_and_shrink(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new();
    char key[32];
    for (size_t i = 0; i < MANY; i++) {
        key_of(key, sizeof key, i);
        assert_true(ecp_map_set(m, key, as_value(i), NULL));
    }
    assert_int_equal(ecp_map_count(m), MANY);
    for (size_t i = 0; i < MANY; i++) {
        key_of(key, sizeof key, i);
        assert_ptr_equal(ecp_map_get(m, key), as_value(i));
    }
    /* order survives every growth */
    ecp_map_iter it = ECP_MAP_ITER_INIT;
    void *value;
    for (size_t i = 0; i < MANY; i++) {
        assert_true(ecp_map_next(m, &it, NULL, &value));
        assert_ptr_equal(value, as_value(i));
    }
    assert_false(ecp_map_next(m, &it, NULL, NULL));

    /* down to ten, through every shrink, finding the rest each step of the way */
    for (size_t i = 0; i < MANY - 10; i++) {
        key_of(key, sizeof key, i);
        assert_true(ecp_map_remove(m, key, &value));
        assert_ptr_equal(value, as_value(i));
        if (i % 9973 == 0) {
            for (size_t j = i + 1; j < MANY; j += 997) {
                key_of(key, sizeof key, j);
                assert_ptr_equal(ecp_map_get(m, key), as_value(j));
            }
        }
    }
    assert_int_equal(ecp_map_count(m), 10);
    it = ECP_MAP_ITER_INIT;
    for (size_t i = MANY - 10; i < MANY; i++) {
        assert_true(ecp_map_next(m, &it, NULL, &value));
        assert_ptr_equal(value, as_value(i));
    }
    assert_false(ecp_map_next(m, &it, NULL, NULL));
    for (size_t i = 0; i < MANY - 10; i++) {
        key_of(key, sizeof key, i);
        assert_null(ecp_map_get(m, key));
    }
    ecp_map_free(m);
}

/* Up and down many times around the sizes where the map grows and shrinks:
 * each round leaves dead entries and tombstones behind. */
static void test_churn(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new_keyed(1, 2);
    char key[32];
    for (size_t round = 0; round < 200; round++) {
        for (size_t i = 0; i < 40; i++) {
            key_of(key, sizeof key, round * 40 + i);
            ecp_map_set(m, key, as_value(i), NULL);
        }
        for (size_t i = 0; i < 37; i++) {
            key_of(key, sizeof key, round * 40 + i);
            assert_true(ecp_map_remove(m, key, NULL));
        }
    }
    assert_int_equal(ecp_map_count(m), 200 * 3);
    for (size_t round = 0; round < 200; round++)
        for (size_t i = 0; i < 40; i++) {
            key_of(key, sizeof key, round * 40 + i);
            assert_int_equal(ecp_map_find(m, key, NULL), i >= 37);
        }
    ecp_map_free(m);
}

/* Keys that all start at one slot of a 1024-slot table, found by trying keys
 * against this map's hash: they must still all be told apart, and removing
 * one in the middle of the run must not hide those after it. */
static void test_colliding_keys(void **state)
{
    (void)state;
    ecp_map *m = ecp_map_new();
    enum { COLLIDING = 200 };
    char (*keys)[32] = calloc(COLLIDING, sizeof *keys);
    size_t n = 0;
    uint64_t home = ecp_map_hash(m, "k0") & 1023;
    for (size_t i = 0; n < COLLIDING; i++) {
        char key[32];
        snprintf(key, sizeof key, "k%zu", i);
        if ((ecp_map_hash(m, key) & 1023) == home)
            memcpy(keys[n++], key, sizeof key);
    }
    /* 200 keys in a map of 512 entries: the table has 1024 slots, so these
     * share one home slot and form one long run */
    for (size_t i = 0; i < COLLIDING; i++)
        ecp_map_set(m, keys[i], as_value(i), NULL);
    char filler[32];
    for (size_t i = 0; ecp_map_count(m) < 300; i++) {
        snprintf(filler, sizeof filler, "filler%zu", i);
        ecp_map_set(m, filler, NULL, NULL);
    }
    for (size_t i = 0; i < COLLIDING; i++)
        assert_ptr_equal(ecp_map_get(m, keys[i]), as_value(i));
    for (size_t i = 0; i < COLLIDING; i += 3)
        assert_true(ecp_map_remove(m, keys[i], NULL));
    for (size_t i = 0; i < COLLIDING; i++) {
        void *value = NULL;
        bool there = ecp_map_find(m, keys[i], &value);
        assert_int_equal(there, i % 3 != 0);
        if (there)
            assert_ptr_equal(value, as_value(i));
    }
    /* put back: a tombstone in the run must not let a key in twice */
    for (size_t i = 0; i < COLLIDING; i++)
        ecp_map_set(m, keys[i], as_value(i + 1000), NULL);
    assert_int_equal(ecp_map_count(m), 300);
    for (size_t i = 0; i < COLLIDING; i++)
        assert_ptr_equal(ecp_map_get(m, keys[i]), as_value(i + 1000));

    /* a second map, with its own key, does not put them together */
    ecp_map *other = ecp_map_new();
    size_t same = 0;
    uint64_t other_home = ecp_map_hash(other, keys[0]) & 1023;
    for (size_t i = 1; i < COLLIDING; i++)
        same += (ecp_map_hash(other, keys[i]) & 1023) == other_home;
    assert_true(same < 10);
    ecp_map_free(other);
    free(keys);
    ecp_map_free(m);
}

static void test_keyed_hash_is_stable(void **state)
{
    (void)state;
    ecp_map *a = ecp_map_new_keyed(7, 9), *b = ecp_map_new_keyed(7, 9), *c = ecp_map_new_keyed(7, 10);
    assert_true(ecp_map_hash(a, "file:///a.c") == ecp_map_hash(b, "file:///a.c"));
    assert_true(ecp_map_hash(a, "file:///a.c") != ecp_map_hash(c, "file:///a.c"));
    assert_true(ecp_map_hash(a, "file:///a.c") != ecp_map_hash(a, "file:///b.c"));
    ecp_map_free(a);
    ecp_map_free(b);
    ecp_map_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_insert_find_remove),  cmocka_unit_test(test_iteration_order),
        cmocka_unit_test(test_remove_while_iterating), cmocka_unit_test(test_grow_and_shrink),
        cmocka_unit_test(test_churn),               cmocka_unit_test(test_colliding_keys),
        cmocka_unit_test(test_keyed_hash_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
