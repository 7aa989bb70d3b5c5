/* ecp_listeners and ECP_EMIT: the order listeners are called in, and what
 * event.h promises when listeners subscribe and unsubscribe from inside an
 * emit, nested emits included. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "event.h"

typedef struct probe_listener {
    void (*on_tick)(void *ctx, int value);
    void (*on_other)(void *ctx, int value);
} probe_listener;

/* What a test's listeners did, in order: one letter per call. */
typedef struct journal {
    char calls[64];
    size_t n;
    int last_value;
} journal;

typedef struct probe {
    char name;
    journal *j;
    ecp_listeners *set;
    /* what to do when called */
    struct probe *remove_other;
    struct probe *add_other;
    bool remove_self;
    bool emit_nested;
    bool done; /* acts once */
} probe;

static void record(probe *p, int value)
{
    assert_true(p->j->n < sizeof p->j->calls - 1);
    p->j->calls[p->j->n++] = p->name;
    p->j->last_value = value;
}

static void on_tick(void *ctx, int value);

static const probe_listener ticker = {.on_tick = on_tick};
static const probe_listener silent = {.on_other = on_tick}; /* has no on_tick */

static void on_tick(void *ctx, int value)
{
    probe *p = ctx;
    record(p, value);
    if (p->done)
        return;
    p->done = true;
    if (p->remove_self)
        assert_true(ecp_listeners_remove(p->set, &ticker, p));
    if (p->remove_other)
        assert_true(ecp_listeners_remove(p->set, &ticker, p->remove_other));
    if (p->add_other)
        ecp_listeners_add(p->set, &ticker, p->add_other);
    if (p->emit_nested)
        ECP_EMIT(p->set, probe_listener, on_tick, value + 100);
}

static void emit(ecp_listeners *set, journal *j, int value)
{
    j->n = 0;
    memset(j->calls, 0, sizeof j->calls);
    ECP_EMIT(set, probe_listener, on_tick, value);
}

static void test_order_and_missing_members(void **state)
{
    (void)state;
    ecp_listeners set = ECP_LISTENERS_INIT;
    journal j = {0};
    probe a = {.name = 'a', .j = &j, .set = &set}, b = {.name = 'b', .j = &j, .set = &set}, c = {.name = 'c', .j = &j, .set = &set};
    emit(&set, &j, 1);
    assert_string_equal(j.calls, "");
    ecp_listeners_add(&set, &ticker, &a);
    ecp_listeners_add(&set, &silent, &b); /* no on_tick: skipped */
    ecp_listeners_add(&set, &ticker, &c);
    ecp_listeners_add(&set, &ticker, &a); /* the same pair twice: called twice */
    assert_int_equal(ecp_listeners_count(&set), 4);
    emit(&set, &j, 7);
    assert_string_equal(j.calls, "aca");
    assert_int_equal(j.last_value, 7);
    /* Removing takes the first live entry of the pair. */
    assert_true(ecp_listeners_remove(&set, &ticker, &a));
    emit(&set, &j, 8);
    assert_string_equal(j.calls, "ca");
    assert_false(ecp_listeners_remove(&set, &ticker, &b)); /* b subscribed another table */
    assert_true(ecp_listeners_remove(&set, &silent, &b));
    assert_int_equal(ecp_listeners_count(&set), 2);
    ecp_listeners_free(&set);
    assert_int_equal(ecp_listeners_count(&set), 0);
}

/* a removes itself and c (which comes after it) and subscribes d: b is still
 * called, c no longer, d not before the next emit. */
static void test_changes_during_an_emit(void **state)
{
    (void)state;
    ecp_listeners set = ECP_LISTENERS_INIT;
    journal j = {0};
    probe a = {.name = 'a', .j = &j, .set = &set}, b = {.name = 'b', .j = &j, .set = &set}, c = {.name = 'c', .j = &j, .set = &set}, d = {.name = 'd', .j = &j, .set = &set};
    a.remove_self = true;
    a.remove_other = &c;
    a.add_other = &d;
    ecp_listeners_add(&set, &ticker, &a);
    ecp_listeners_add(&set, &ticker, &b);
    ecp_listeners_add(&set, &ticker, &c);
    emit(&set, &j, 1);
    assert_string_equal(j.calls, "ab");
    assert_int_equal(ecp_listeners_count(&set), 2);
    emit(&set, &j, 2);
    assert_string_equal(j.calls, "bd");
    /* Removing one that was already called this emit: the rest still run. */
    b.done = false;
    b.remove_self = true;
    d.done = true;
    emit(&set, &j, 3);
    assert_string_equal(j.calls, "bd");
    emit(&set, &j, 4);
    assert_string_equal(j.calls, "d");
    assert_false(ecp_listeners_remove(&set, &ticker, &a));
    ecp_listeners_free(&set);
}

/* Subscribing from inside an emit grows (moves) the array the emit walks:
 * the emit goes on over the entries it began with. */
static void test_growth_during_an_emit(void **state)
{
    (void)state;
    ecp_listeners set = ECP_LISTENERS_INIT;
    journal j = {0};
    probe grower = {.name = 'g', .j = &j, .set = &set}, tail = {.name = 't', .j = &j, .set = &set};
    probe added[40];
    tail.done = true;
    ecp_listeners_add(&set, &ticker, &grower);
    ecp_listeners_add(&set, &ticker, &tail);
    for (int i = 0; i < 40; i++) {
        added[i] = (probe){.name = 'x', .j = &j, .set = &set};
        added[i].done = true;
        grower.done = false;
        grower.add_other = &added[i];
        emit(&set, &j, i);
        /* g, t, and the i added by earlier emits; not the one added now */
        assert_int_equal(j.n, (size_t)(2 + i));
        assert_int_equal(j.calls[0], 'g');
        assert_int_equal(j.calls[1], 't');
    }
    assert_int_equal(ecp_listeners_count(&set), 42);
    ecp_listeners_free(&set);
}

/* A nested emit sees the removals made before it; the outer emit does not
 * call what the nested one's listeners removed, and the entries are dropped
 * only once the outer emit ends. */
static void test_nested_emits(void **state)
{
    (void)state;
    ecp_listeners set = ECP_LISTENERS_INIT;
    journal j = {0};
    probe a = {.name = 'a', .j = &j, .set = &set}, b = {.name = 'b', .j = &j, .set = &set}, c = {.name = 'c', .j = &j, .set = &set}, d = {.name = 'd', .j = &j, .set = &set};
    a.emit_nested = true; /* a emits again from inside: a (done), b, c */
    b.remove_other = &c;  /* b, called inside the nested emit, removes c */
    b.add_other = &d;
    c.done = true;
    ecp_listeners_add(&set, &ticker, &a);
    ecp_listeners_add(&set, &ticker, &b);
    ecp_listeners_add(&set, &ticker, &c);
    emit(&set, &j, 1);
    /* outer a, nested a b (c is gone by then), then outer b; never c or d */
    assert_string_equal(j.calls, "aabb");
    assert_int_equal(j.last_value, 1);
    assert_int_equal(ecp_listeners_count(&set), 3);
    emit(&set, &j, 2);
    assert_string_equal(j.calls, "abd");
    ecp_listeners_free(&set);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_missing_members),
        cmocka_unit_test(test_changes_during_an_emit),
        cmocka_unit_test(test_growth_during_an_emit),
        cmocka_unit_test(test_nested_emits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
