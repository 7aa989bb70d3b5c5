/* The SQLite engine alone, below the service: a page never holds more than
 * its byte cap however wide or many the rows, the row held back by the cap
 * opens the next page, and 100,000 rows of 1 KB go through pages of 64 KiB. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static db_handle *open_memory(void)
{
    database_config config = {.name = "m", .type = DATABASE_SQLITE, .path = ":memory:"};
    db_handle *h = NULL;
    database_failure f;
    assert_int_equal(db_sqlite_engine.open(&config, NULL, &h, &f), 0);
    return h;
}

static void test_byte_cap_bounds_every_page(void **state)
{
    (void)state;
    db_handle *h = open_memory();
    const char *sql = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000)"
                      " SELECT x, printf('%.1000c', 'w') AS wide FROM c";
    db_run run = {.page_size = 100000, .max_bytes = 64 * 1024};
    database_result r;
    memset(&r, 0, sizeof r);
    db_result_free(&r);
    database_failure f;
    assert_int_equal(db_sqlite_engine.execute(h, sql, NULL, 0, 0, true, &run, &r, &f), 0);
    size_t total = r.row_count, pages = 1;
    assert_true(r.rows.len <= run.max_bytes);
    assert_true(r.truncated);
    assert_false(r.done);
    int64_t expect_next = (int64_t)r.row_count + 1;
    while (!r.done) {
        db_result_free(&r);
        assert_int_equal(db_sqlite_engine.next_page(h, &run, &r, &f), 0);
        assert_true(r.rows.len <= run.max_bytes);
        /* The first row of a page is the one the last page held back. */
        char head[32];
        snprintf(head, sizeof head, "{\"x\":%lld,", (long long)expect_next);
        if (r.row_count)
            assert_memory_equal(r.rows.data, head, strlen(head));
        expect_next += (int64_t)r.row_count;
        total += r.row_count;
        pages++;
    }
    assert_int_equal(total, 100000);
    assert_true(pages > 1000);
    db_result_free(&r);
    db_sqlite_engine.close(h);
}

static void test_a_row_above_the_cap_fails(void **state)
{
    (void)state;
    db_handle *h = open_memory();
    db_run run = {.page_size = 10, .max_bytes = 100};
    database_result r;
    memset(&r, 0, sizeof r);
    db_result_free(&r);
    database_failure f;
    assert_int_equal(db_sqlite_engine.execute(h, "SELECT printf('%.500c', 'w') AS wide", NULL, 0, 0, true, &run, &r, &f),
                     ECP_ETOOBIG);
    assert_non_null(strstr(f.message, "maxResultBytes"));
    db_result_free(&r);
    db_sqlite_engine.close(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_byte_cap_bounds_every_page),
        cmocka_unit_test(test_a_row_above_the_cap_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
