/* SPDX-License-Identifier: MIT */
/* test_spend_defer.c -- the spend a remote store keeps while it cannot add it (spend_defer.c):
 * one sum per record key, a reset forgets a key's sum, every row comes out once, and the
 * table is bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store/internal.h"

static enum bsc_err add(struct store__defer *d, const char *key, double usd, uint64_t ttl)
{
    return store__defer_add(d, key, strlen(key), usd, ttl);
}

static void test_one_sum_per_key(void **state)
{
    struct store__defer d = {0};
    struct store__defer_row row;
    double a = 0, b = 0;

    (void)state;
    assert_int_equal(add(&d, "p:{spend:a:0}", 1.5, 0), BSC_OK);
    assert_int_equal(add(&d, "p:{spend:b:5}", 2, 100), BSC_OK);
    assert_int_equal(add(&d, "p:{spend:a:0}", 0.25, 0), BSC_OK);
    assert_int_equal(d.n, 2);
    for (int i = 0; i < 2; i++) {
        assert_true(store__defer_pop(&d, &row));
        if (strcmp(row.key, "p:{spend:a:0}") == 0)
            a = row.usd;
        else if (strcmp(row.key, "p:{spend:b:5}") == 0 && row.ttl_ms == 100)
            b = row.usd;
        free(row.key);
    }
    assert_false(store__defer_pop(&d, &row));
    assert_true(a == 1.75 && b == 2);
    store__defer_free(&d);
}

static void test_drop(void **state)
{
    struct store__defer d = {0};
    struct store__defer_row row;

    (void)state;
    add(&d, "k1", 1, 0);
    add(&d, "k2", 2, 0);
    add(&d, "k3", 3, 0);
    store__defer_drop(&d, "k1", 2);
    store__defer_drop(&d, "nope", 4);
    assert_int_equal(d.n, 2);
    assert_true(store__defer_pop(&d, &row));
    assert_string_not_equal(row.key, "k1");
    free(row.key);
    add(&d, "k1", 4, 0); /* after a reset: a new sum from 0 */
    store__defer_drop(&d, "k2", 2);
    store__defer_drop(&d, "k3", 2);
    assert_int_equal(d.n, 1);
    assert_true(store__defer_pop(&d, &row));
    assert_string_equal(row.key, "k1");
    assert_true(row.usd == 4);
    free(row.key);
    store__defer_free(&d);
}

static void test_bounded(void **state)
{
    struct store__defer d = {0};
    char key[32];

    (void)state;
    for (int i = 0; i < STORE__DEFER_MAX; i++) {
        snprintf(key, sizeof(key), "k%d", i);
        assert_int_equal(add(&d, key, 1, 0), BSC_OK);
    }
    assert_int_equal(add(&d, "one-more", 1, 0), BSC_ELIMIT);
    assert_int_equal(add(&d, "k7", 1, 0), BSC_OK); /* a kept key still sums */
    assert_int_equal(d.n, STORE__DEFER_MAX);
    store__defer_free(&d);
    assert_int_equal(d.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_sum_per_key),
        cmocka_unit_test(test_drop),
        cmocka_unit_test(test_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
