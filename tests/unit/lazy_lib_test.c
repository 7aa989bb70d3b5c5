/* lazy_lib: a library opened at first use into a typed table, once, by
 * whichever thread asks first; a library or a function that is missing is
 * refused by name, and the refusal stays. */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "lazy_lib.h"

typedef struct m_api {
    double (*cos)(double);
    double (*sqrt)(double);
} m_api;

static const ecp_lazy_symbol m_symbols[] = {
    {"cos", offsetof(m_api, cos)},
    {"sqrt", offsetof(m_api, sqrt)},
};

static void test_a_library_is_opened_into_its_table(void **state)
{
    (void)state;
    static m_api api;
    static ecp_lazy_lib lib = ECP_LAZY_LIB_INIT("libm", "libm.so.6", m_symbols, &api);
    ecp_error err = {0};
    assert_int_equal(ecp_lazy_lib_load(&lib, &err), 0);
    const m_api *m = ecp_lazy_lib_table(&lib);
    assert_ptr_equal(m, &api);
    assert_true(m->sqrt(81.0) == 9.0);
    assert_true(m->cos(0.0) == 1.0);
    assert_int_equal(ecp_lazy_lib_load(&lib, &err), 0); /* once loaded, loaded */
}

static void test_a_missing_library_is_refused_by_name_and_stays_refused(void **state)
{
    (void)state;
    static m_api api;
    static ecp_lazy_lib lib = ECP_LAZY_LIB_INIT("libnowhere", "libecpd-nowhere.so.7", m_symbols, &api);
    ecp_error err = {0};
    assert_int_equal(ecp_lazy_lib_load(&lib, &err), ECP_EIO);
    assert_int_equal(err.status, ECP_EIO);
    assert_non_null(strstr(err.message, "libnowhere (libecpd-nowhere.so.7) cannot be loaded: "));
    assert_non_null(strstr(err.message, "libecpd-nowhere.so.7"));
    char first[sizeof err.message];
    memcpy(first, err.message, sizeof first);
    ecp_error again = {0};
    assert_int_equal(ecp_lazy_lib_load(&lib, &again), ECP_EIO);
    assert_string_equal(again.message, first);
    assert_int_equal(ecp_lazy_lib_load(&lib, NULL), ECP_EIO); /* err may be NULL */
}

typedef struct broken_api {
    double (*cos)(double);
    int (*missing)(void);
} broken_api;

static void test_a_missing_function_is_refused_by_name(void **state)
{
    (void)state;
    static const ecp_lazy_symbol symbols[] = {
        {"cos", offsetof(broken_api, cos)},
        {"ecpd_no_such_function", offsetof(broken_api, missing)},
    };
    static broken_api api;
    static ecp_lazy_lib lib = ECP_LAZY_LIB_INIT("libm", "libm.so.6", symbols, &api);
    ecp_error err = {0};
    assert_int_equal(ecp_lazy_lib_load(&lib, &err), ECP_EIO);
    assert_non_null(strstr(err.message, "libm (libm.so.6) cannot be loaded: "));
    assert_non_null(strstr(err.message, "ecpd_no_such_function"));
}

/* The first load races from many threads: one opens, all see the table. */
static m_api race_api;
static ecp_lazy_lib race_lib = ECP_LAZY_LIB_INIT("libm", "libm.so.6", m_symbols, &race_api);

static void *load_and_call(void *arg)
{
    double *out = arg;
    if (ecp_lazy_lib_load(&race_lib, NULL) == 0) {
        const m_api *m = ecp_lazy_lib_table(&race_lib);
        *out = m->sqrt(16.0);
    }
    return NULL;
}

static void test_the_first_load_may_race(void **state)
{
    (void)state;
    enum { THREADS = 8 };
    pthread_t threads[THREADS];
    double results[THREADS] = {0};
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, load_and_call, &results[i]), 0);
    for (int i = 0; i < THREADS; i++) {
        pthread_join(threads[i], NULL);
        assert_true(results[i] == 4.0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_library_is_opened_into_its_table),
        cmocka_unit_test(test_a_missing_library_is_refused_by_name_and_stays_refused),
        cmocka_unit_test(test_a_missing_function_is_refused_by_name),
        cmocka_unit_test(test_the_first_load_may_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
