/* SPDX-License-Identifier: MIT */
/* test_limits_fair.c -- the fair queue of a limit set (limits/limits_fair.c): requests
 * waiting for a shared limit are served round-robin across clients, by weight; a client's
 * forty waiting requests let another client's single one through after at most one of
 * theirs; leaving without being served moves nobody's turn. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "limits/limits.h"

static int noisy, quiet, heavy; /* client identities */

/* Serves the set's queue once: the request in turn among <reqs> leaves, served. */
static int serve(struct lim_set *s, int *reqs, int n)
{
    for (int i = 0; i < n; i++) {
        if (reqs[i] >= 0 && lim_fair_turn(s, &reqs[i]) == LIM_NONE) {
            int who = reqs[i];

            lim_fair_leave(s, &reqs[i], true);
            reqs[i] = -1;
            return who;
        }
    }
    fail_msg("nobody in turn");
    return -1;
}

static void test_quiet_client_not_behind_noisy(void **state)
{
    struct lim_set s;
    int reqs[41];

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60, .rpm_burst = 1});
    for (int i = 0; i < 40; i++) {
        reqs[i] = i;
        assert_true(lim_fair_enter(&s, &reqs[i], &noisy, 1, LIM_RPM));
    }
    assert_int_equal(lim_fair_turn(&s, &reqs[1]), LIM_RPM); /* the first is in turn */
    assert_int_equal(serve(&s, reqs, 40), 0);
    assert_int_equal(serve(&s, reqs, 40), 1);
    reqs[40] = 40; /* the quiet client's one request arrives */
    assert_true(lim_fair_enter(&s, &reqs[40], &quiet, 1, LIM_RPM));
    assert_true(lim_fair_enter(&s, &reqs[40], &quiet, 1, LIM_RPM)); /* again: kept */
    /* At most one more of the noisy client's before it. */
    int a = serve(&s, reqs, 41), b = serve(&s, reqs, 41);

    assert_true(a == 40 || b == 40);
    /* A request arriving without a place waits while others are queued. */
    assert_int_equal(lim_fair_turn(&s, &quiet), LIM_RPM);
    lim_set_destroy(&s);
}

/* Weight 3 against weight 1: three served for one while both wait. */
static void test_weights(void **state)
{
    struct lim_set s;
    int reqs[16], heavy_served = 0;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60});
    for (int i = 0; i < 16; i++) {
        reqs[i] = i;
        assert_true(lim_fair_enter(&s, &reqs[i], i < 8 ? (void *)&heavy : (void *)&quiet,
                                   i < 8 ? 3 : 1, LIM_RPM));
    }
    for (int k = 0; k < 8; k++)
        heavy_served += serve(&s, reqs, 16) < 8;
    assert_int_equal(heavy_served, 6);
    lim_set_destroy(&s);
}

/* Leaving unserved (a timeout, a cancel) hands the turn on and moves no tag. */
static void test_leave_unserved(void **state)
{
    struct lim_set s;
    int r1 = 1, r2 = 2, r3 = 3;

    (void)state;
    lim_set_init(&s, (struct lim_caps){.rpm = 60});
    assert_true(lim_fair_enter(&s, &r1, &noisy, 1, LIM_RPM));
    assert_true(lim_fair_enter(&s, &r2, &noisy, 1, LIM_RPM));
    lim_wait_on(&s, 5);
    assert_int_equal(lim_fair_leave(&s, &r1, false), 1ull << 5);
    assert_int_equal(lim_fair_turn(&s, &r2), LIM_NONE);
    assert_int_equal(lim_fair_leave(&s, &r3, false), 0); /* never there */
    assert_true(s.fair.vt == 0.0);
    lim_fair_leave(&s, &r2, true);
    assert_int_equal(lim_fair_turn(&s, &r3), LIM_NONE); /* nobody waits */
    lim_set_destroy(&s);
}

/* ---- lim_fair_acquire: the turn and the take in one hold of the lock ---- */

static void verdicts_equal(struct lim_verdict a, struct lim_verdict b, int step)
{
    if (a.kind != b.kind || a.wait_ms != b.wait_ms || a.enforced != b.enforced)
        fail_msg("step %d: combined %d/%lld/%u, steps %d/%lld/%u", step, (int)a.kind,
                 (long long)a.wait_ms, a.enforced, (int)b.kind, (long long)b.wait_ms, b.enforced);
}

/* On twin sets driven alike through a pseudo-random mix of queue entries, leaves, takes,
 * releases and passing time, lim_fair_acquire answers as lim_fair_turn followed by
 * lim_peek (not in turn) or lim_acquire (in turn, or no turn asked) and leaves the same
 * state. */
static void test_fair_acquire_matches_steps(void **state)
{
    const struct lim_caps caps = {.rpm = 120, .tpm = 6000, .conc = 3, .rpm_burst = 2};
    struct lim_set a, b;
    int reqs[8], clients[3];
    uint64_t held[64], now = 1000;
    size_t n_held = 0;
    uint32_t x = 2463534242u;
    int combined_taken = 0, combined_behind = 0;

    (void)state;
    lim_set_init(&a, caps);
    lim_set_init(&b, caps);
    for (int step = 0; step < 4000; step++) {
        int *who, op;
        uint64_t tokens;
        struct lim_snapshot sa, sb;

        x ^= x << 13, x ^= x >> 17, x ^= x << 5; /* xorshift32 */
        op = (int)(x % 7);
        who = &reqs[(x >> 3) % 8];
        tokens = (x >> 8) % 400;
        if (op == 0) {
            const int *client = &clients[(x >> 12) % 3];
            uint32_t weight = 1 + (x >> 14) % 3;
            enum lim_kind kind = (enum lim_kind)((x >> 16) % 3);

            assert_int_equal(lim_fair_enter(&a, who, client, weight, kind),
                             lim_fair_enter(&b, who, client, weight, kind));
        } else if (op == 1) {
            assert_int_equal(lim_fair_leave(&a, who, x & 1u << 20),
                             lim_fair_leave(&b, who, x & 1u << 20));
        } else if (op <= 3) {
            bool turn = (x >> 21) % 4 != 0;
            enum lim_kind behind, kb = turn ? lim_fair_turn(&b, who) : LIM_NONE;
            struct lim_verdict va = lim_fair_acquire(&a, who, turn, tokens, now, &behind);
            struct lim_verdict vb = kb != LIM_NONE ? lim_peek(&b, tokens, now)
                                                   : lim_acquire(&b, tokens, now);

            assert_int_equal(behind, kb);
            verdicts_equal(va, vb, step);
            combined_behind += behind != LIM_NONE;
            if (behind == LIM_NONE && va.kind == LIM_NONE) {
                combined_taken++;
                if (n_held < 64)
                    held[n_held++] = tokens;
                else /* keep the bookkeeping bounded: give it straight back */
                    assert_int_equal(lim_undo(&a, tokens, now), lim_undo(&b, tokens, now));
            }
        } else if (op == 4 && n_held) {
            uint64_t est = held[--n_held], used = (x >> 9) % 500;

            assert_int_equal(lim_release(&a, est, used, now), lim_release(&b, est, used, now));
        } else {
            now += (x >> 10) % 900;
        }
        lim_snapshot(&a, &sa);
        lim_snapshot(&b, &sb);
        assert_int_equal(sa.inflight, sb.inflight);
        assert_int_equal(sa.queued, sb.queued);
    }
    /* Both outcomes were exercised, not only one. */
    assert_true(combined_taken > 100);
    assert_true(combined_behind > 100);
    lim_set_destroy(&a);
    lim_set_destroy(&b);
}

/* A set without limits takes nothing and has no turn, without its lock. */
static void test_fair_acquire_inactive(void **state)
{
    struct lim_set s;
    struct lim_verdict v;
    enum lim_kind behind = LIM_RPM;
    int who;

    (void)state;
    lim_set_init(&s, (struct lim_caps){0});
    v = lim_fair_acquire(&s, &who, true, 10, 1000, &behind);
    assert_int_equal(behind, LIM_NONE);
    assert_int_equal(v.kind, LIM_NONE);
    assert_int_equal(v.enforced, 0);
    lim_set_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quiet_client_not_behind_noisy),
        cmocka_unit_test(test_weights),
        cmocka_unit_test(test_leave_unserved),
        cmocka_unit_test(test_fair_acquire_matches_steps),
        cmocka_unit_test(test_fair_acquire_inactive),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
