/* SPDX-License-Identifier: MIT */
/* test_spend.c -- client budgets: the UTC period starts of day, month and total at injected
 * times (midnight, month and year ends, a leap day), and the store's spend records against
 * the memory and the SQLite backend: atomic adds (a negative one gives a hold back), reads
 * (an add of 0), a reset, separate clients and periods, argument errors, and (SQLite) a
 * total that survives a reopen. */
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "router/spend.h"
#include "store/store.h"

/* ---- periods ------------------------------------------------------------------------- */

#define DEC02_0028 1796171294000ull /* 2026-12-02T00:28:14Z */
#define DEC02 1796169600000ull      /* 2026-12-02T00:00:00Z */
#define DEC01 1796083200000ull      /* 2026-12-01T00:00:00Z */
#define DEC31_LAST 1798761599999ull /* 2026-12-31T23:59:59.999Z */
#define JAN01_2027 1798761600000ull /* 2027-01-01T00:00:00Z */
#define LEAP_NOON 1709208000000ull  /* 2024-02-29T12:00:00Z */
#define LEAP_DAY 1709164800000ull   /* 2024-02-29T00:00:00Z */
#define FEB01_2024 1706745600000ull /* 2024-02-01T00:00:00Z */

static void test_period_day(void **state)
{
    (void)state;
    assert_int_equal(spend_period_start(CFG_PERIOD_DAY, DEC02_0028), DEC02);
    assert_int_equal(spend_period_start(CFG_PERIOD_DAY, DEC02), DEC02);
    assert_int_equal(spend_period_start(CFG_PERIOD_DAY, DEC02 - 1), DEC02 - 86400000ull);
    assert_int_equal(spend_period_start(CFG_PERIOD_DAY, LEAP_NOON), LEAP_DAY);
    assert_int_equal(spend_period_start(CFG_PERIOD_DAY, DEC31_LAST), JAN01_2027 - 86400000ull);
}

static void test_period_month(void **state)
{
    (void)state;
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, DEC02_0028), DEC01);
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, DEC01), DEC01);
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, DEC31_LAST), DEC01);
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, JAN01_2027), JAN01_2027);
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, LEAP_NOON), FEB01_2024);
    assert_int_equal(spend_period_start(CFG_PERIOD_MONTH, DEC01 - 1), 1793491200000ull);
}

static void test_period_total(void **state)
{
    (void)state;
    assert_int_equal(spend_period_start(CFG_PERIOD_TOTAL, DEC02_0028), 0);
    assert_int_equal(spend_period_start(CFG_PERIOD_TOTAL, 0), 0);
}

/* A shared store (Redis) drops a record a day after its period can end. */
static void test_period_ttl(void **state)
{
    (void)state;
    assert_int_equal(spend_period_ttl_ms(CFG_PERIOD_DAY), 2 * 86400000ull);
    assert_int_equal(spend_period_ttl_ms(CFG_PERIOD_MONTH), 32 * 86400000ull);
    assert_int_equal(spend_period_ttl_ms(CFG_PERIOD_TOTAL), 0); /* kept */
}

/* ---- store records ------------------------------------------------------------------- */

struct fx {
    enum cfg_store_kind kind;
    char dir[64], path[128];
    uv_loop_t loop;
    struct store *st;
};

struct got {
    int calls;
    enum bsc_err err;
    double usd;
};

static void on_spend(enum bsc_err err, double usd, void *ud)
{
    struct got *g = ud;

    g->calls++;
    g->err = err;
    g->usd = usd;
}

static void fx_open(struct fx *f)
{
    struct cfg_store cfg = {f->kind, f->kind == CFG_STORE_SQLITE ? f->path : NULL, NULL};
    char err[256];

    assert_int_equal(store_open(&cfg, &f->st, err, sizeof(err)), BSC_OK);
}

static int setup(void **state, enum cfg_store_kind kind)
{
    struct fx *f = calloc(1, sizeof(*f));

    f->kind = kind;
    snprintf(f->dir, sizeof(f->dir), "/tmp/bsc-spend-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    fx_open(f);
    *state = f;
    return 0;
}

static int setup_mem(void **state)
{
    return setup(state, CFG_STORE_MEMORY);
}

static int setup_sqlite(void **state)
{
    return setup(state, CFG_STORE_SQLITE);
}

static int teardown(void **state)
{
    struct fx *f = *state;
    char cmd[160];

    store_close(f->st);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

/* One operation, run to its callback: the total it answered. */
static double op(struct fx *f, bool set, const char *client, uint64_t period, double usd)
{
    struct got g = {0};
    struct bsc_str id = bsc_str_cstr(client);
    enum bsc_err err = set ? store_spend_set(f->st, &f->loop, id, period, 0, usd, on_spend, &g)
                           : store_spend_add(f->st, &f->loop, id, period, 0, usd, on_spend, &g);

    assert_int_equal(err, BSC_OK);
    assert_int_equal(g.calls, 0); /* never from inside the call */
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(g.calls, 1);
    assert_int_equal(g.err, BSC_OK);
    return g.usd;
}

static void test_records(void **state)
{
    struct fx *f = *state;

    assert_true(op(f, false, "alpha", DEC02, 0) == 0); /* nothing yet */
    assert_true(op(f, false, "alpha", DEC02, 1.5) == 1.5);
    assert_true(op(f, false, "alpha", DEC02, 2.25) == 3.75);
    assert_true(op(f, false, "alpha", DEC02, 0) == 3.75);
    assert_true(op(f, false, "alpha", DEC01, 0) == 0);  /* another period */
    assert_true(op(f, false, "alpha2", DEC02, 0) == 0); /* another client */
    assert_true(op(f, true, "alpha", DEC02, 0) == 0);   /* reset */
    assert_true(op(f, false, "alpha", DEC02, 0.5) == 0.5);
    assert_true(op(f, false, "alpha", DEC02, 1.25) == 1.75); /* a hold taken */
    assert_true(op(f, false, "alpha", DEC02, -1.25) == 0.5); /* ... and given back */
}

static void test_ordered(void **state)
{
    struct fx *f = *state;
    struct got g[4] = {{0}};

    /* Adds and a read called one after the other, not awaited: the read sees both. */
    assert_int_equal(store_spend_add(f->st, &f->loop, BSC_STR("c"), 0, 0, 1, on_spend, &g[0]), 0);
    assert_int_equal(store_spend_add(f->st, &f->loop, BSC_STR("c"), 0, 0, 2, on_spend, &g[1]), 0);
    assert_int_equal(store_spend_add(f->st, &f->loop, BSC_STR("c"), 0, 0, 0, on_spend, &g[2]), 0);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_true(g[2].calls == 1 && g[2].usd == 3);
}

static void test_invalid(void **state)
{
    struct fx *f = *state;
    struct got g = {0};
    char long_id[CFG_SPEND_ID_MAX + 2];

    memset(long_id, 'a', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    assert_int_equal(store_spend_add(f->st, &f->loop, BSC_STR(""), 0, 0, 1, on_spend, &g),
                     BSC_EINVAL);
    assert_int_equal(
        store_spend_add(f->st, &f->loop, bsc_str_cstr(long_id), 0, 0, 1, on_spend, &g),
        BSC_EINVAL);
    assert_int_equal(store_spend_set(f->st, &f->loop, BSC_STR("a"), 0, 0, -1, on_spend, &g),
                     BSC_EINVAL);
    assert_int_equal(store_spend_add(f->st, &f->loop, BSC_STR("a"), 0, 0, NAN, on_spend, &g),
                     BSC_EINVAL);
    assert_int_equal(store_spend_set(f->st, &f->loop, BSC_STR("a"), 0, 0, 1, NULL, NULL),
                     BSC_EINVAL);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(g.calls, 0);
}

static void test_sqlite_reopen(void **state)
{
    struct fx *f = *state;

    assert_true(op(f, false, "alpha", DEC02, 4) == 4);
    store_close(f->st);
    fx_open(f);
    assert_true(op(f, false, "alpha", DEC02, 0) == 4);
    assert_true(op(f, false, "alpha", DEC02, 1) == 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_period_day),
        cmocka_unit_test(test_period_month),
        cmocka_unit_test(test_period_total),
        cmocka_unit_test(test_period_ttl),
        cmocka_unit_test_setup_teardown(test_records, setup_mem, teardown),
        cmocka_unit_test_setup_teardown(test_records, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_ordered, setup_mem, teardown),
        cmocka_unit_test_setup_teardown(test_ordered, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_invalid, setup_mem, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_reopen, setup_sqlite, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
