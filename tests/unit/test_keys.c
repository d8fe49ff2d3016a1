/* SPDX-License-Identifier: MIT */
/* test_keys.c -- key rotation and cooldown with a fake clock: round-robin order, skipping
 * cooling keys, all-cooling -> -1 and the soonest return, cooldown lengths by reason, and
 * the per-key counters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "health/keys.h"

static void test_round_robin_order(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 3);
    assert_int_equal(keys_count(&pool), 3);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 3; i++)
            assert_int_equal(keys_next(&pool, 1000), i);
    }
    assert_int_equal(keys_stats(&pool, 0)->picks, 3);
    assert_int_equal(keys_available(&pool, 1000), 3);
}

static void test_single_key(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 1);
    assert_int_equal(keys_next(&pool, 0), 0);
    assert_int_equal(keys_next(&pool, 0), 0);
}

static void test_empty_pool(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 0);
    assert_int_equal(keys_next(&pool, 0), -1);
    assert_true(keys_soonest_ms(&pool) == UINT64_MAX);
    assert_int_equal(keys_cooldown(&pool, 0, 10, KEY_QUOTA), BSC_EINVAL);
    assert_int_equal(keys_available(&pool, 0), 0);
}

static void test_cooling_key_skipped(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 3);
    assert_int_equal(keys_next(&pool, 0), 0);
    assert_int_equal(keys_cooldown(&pool, 1, 5000, KEY_RATE_LIMITED), BSC_OK);
    assert_true(keys_is_cooling(&pool, 1, 4999));
    assert_false(keys_is_cooling(&pool, 1, 5000));
    assert_int_equal(keys_available(&pool, 100), 2);
    /* Key 1 is skipped while cooling; rotation goes on 2, 0, 2, 0. */
    assert_int_equal(keys_next(&pool, 100), 2);
    assert_int_equal(keys_next(&pool, 100), 0);
    assert_int_equal(keys_next(&pool, 4999), 2);
    assert_int_equal(keys_next(&pool, 4999), 0);
    /* Back at 5000, in its place in the order. */
    assert_int_equal(keys_next(&pool, 5000), 1);
    assert_int_equal(keys_next(&pool, 5000), 2);
    assert_int_equal(keys_stats(&pool, 1)->cooldowns[KEY_RATE_LIMITED], 1);
    assert_int_equal(keys_stats(&pool, 1)->picks, 1);
}

static void test_all_cooling(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 3);
    assert_int_equal(keys_cooldown(&pool, 0, 9000, KEY_QUOTA), BSC_OK);
    assert_int_equal(keys_cooldown(&pool, 1, 7000, KEY_RATE_LIMITED), BSC_OK);
    assert_int_equal(keys_cooldown(&pool, 2, 8000, KEY_AUTH), BSC_OK);
    assert_int_equal(keys_next(&pool, 1000), -1);
    assert_int_equal(keys_next(&pool, 6999), -1);
    assert_true(keys_soonest_ms(&pool) == 7000);
    assert_int_equal(keys_available(&pool, 6999), 0);
    assert_int_equal(keys_next(&pool, 7000), 1);
    assert_int_equal(keys_next(&pool, 7000), 1); /* the only one back */
    assert_int_equal(keys_reason(&pool, 2), KEY_AUTH);
    assert_string_equal(keys_reason_name(keys_reason(&pool, 0)), "quota");
}

static void test_cooldown_never_shortens(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 2);
    assert_int_equal(keys_cooldown(&pool, 0, 600000, KEY_AUTH), BSC_OK);
    assert_int_equal(keys_cooldown(&pool, 0, 2000, KEY_RATE_LIMITED), BSC_OK);
    assert_true(keys_is_cooling(&pool, 0, 599999));
    assert_int_equal(keys_reason(&pool, 0), KEY_AUTH);
    /* Both are counted even though only the longer one holds. */
    assert_int_equal(keys_stats(&pool, 0)->cooldowns[KEY_AUTH], 1);
    assert_int_equal(keys_stats(&pool, 0)->cooldowns[KEY_RATE_LIMITED], 1);
    /* A longer one extends it. */
    assert_int_equal(keys_cooldown(&pool, 0, 700000, KEY_QUOTA), BSC_OK);
    assert_true(keys_is_cooling(&pool, 0, 699999));
    assert_int_equal(keys_reason(&pool, 0), KEY_QUOTA);
}

static void test_bad_index(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 2);
    assert_int_equal(keys_cooldown(&pool, -1, 10, KEY_AUTH), BSC_EINVAL);
    assert_int_equal(keys_cooldown(&pool, 2, 10, KEY_AUTH), BSC_EINVAL);
    assert_int_equal(keys_cooldown(&pool, 0, 10, KEY_REASON_COUNT), BSC_EINVAL);
    assert_false(keys_is_cooling(&pool, 0, 0));
    assert_null(keys_stats(&pool, 2));
    assert_false(keys_is_cooling(&pool, 5, 0));
}

static void test_init_clips_to_max(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, KEYS_MAX + 10);
    assert_int_equal(keys_count(&pool), KEYS_MAX);
    for (int i = 0; i < KEYS_MAX; i++)
        assert_int_equal(keys_next(&pool, 0), i);
    assert_int_equal(keys_next(&pool, 0), 0);
}

static void test_cooldown_lengths(void **state)
{
    uint64_t now = 1000000;

    (void)state;
    /* Rate limited: Retry-After, else the default second. */
    assert_true(keys_cooldown_until(now, KEY_RATE_LIMITED, 0) == now + 1000);
    assert_true(keys_cooldown_until(now, KEY_RATE_LIMITED, 2500) == now + 2500);
    /* Quota: at least five minutes, longer when the provider says so. */
    assert_true(keys_cooldown_until(now, KEY_QUOTA, 0) == now + 300000);
    assert_true(keys_cooldown_until(now, KEY_QUOTA, 1000) == now + 300000);
    assert_true(keys_cooldown_until(now, KEY_QUOTA, 900000) == now + 900000);
    /* Auth: ten minutes whatever the header says. */
    assert_true(keys_cooldown_until(now, KEY_AUTH, 5) == now + 600000);
    /* A huge Retry-After is clipped to an hour. */
    assert_true(keys_cooldown_until(now, KEY_RATE_LIMITED, 86400000) == now + 3600000);
    assert_true(keys_cooldown_until(now, KEY_QUOTA, 86400000) == now + 3600000);
    /* No overflow near the end of time. */
    assert_true(keys_cooldown_until(UINT64_MAX - 10, KEY_AUTH, 0) == UINT64_MAX);
}

static void test_rotation_with_real_cooldowns(void **state)
{
    struct keypool pool;
    uint64_t now = 50000;
    int k;

    (void)state;
    keys_init(&pool, 2);
    k = keys_next(&pool, now);
    assert_int_equal(k, 0);
    assert_int_equal(
        keys_cooldown(&pool, k, keys_cooldown_until(now, KEY_RATE_LIMITED, 0), KEY_RATE_LIMITED),
        BSC_OK);
    k = keys_next(&pool, now);
    assert_int_equal(k, 1);
    assert_int_equal(keys_cooldown(&pool, k, keys_cooldown_until(now, KEY_QUOTA, 0), KEY_QUOTA),
                     BSC_OK);
    assert_int_equal(keys_next(&pool, now + 999), -1);
    assert_true(keys_soonest_ms(&pool) == now + 1000);
    assert_int_equal(keys_next(&pool, now + 1000), 0);
    assert_int_equal(keys_next(&pool, now + 1000), 0);
    assert_int_equal(keys_next(&pool, now + 300000), 1);
}

/* A refused key is re-verified after base_ms; a success puts it back at once. */
static void test_verify_restores(void **state)
{
    struct keypool pool;
    uint64_t now = 1000;

    (void)state;
    keys_init(&pool, 2);
    keys_cooldown(&pool, 0, keys_cooldown_until(now, KEY_AUTH, 0), KEY_AUTH);
    keys_verify_schedule(&pool, 0, now + 30000);
    assert_int_equal(keys_verify_take(&pool, now + 29999), -1);
    assert_int_equal(keys_verify_take(&pool, now + 30000), 0);
    assert_int_equal(keys_verify_take(&pool, now + 30000), -1); /* one at a time */
    keys_verify_schedule(&pool, 0, now + 30001); /* running: nothing new */
    assert_true(keys_is_cooling(&pool, 0, now + 30100));
    keys_verify_done(&pool, 0, KEY_VERIFY_OK, now + 30100, 30000);
    assert_false(keys_is_cooling(&pool, 0, now + 30100));
    assert_int_equal(keys_available(&pool, now + 30100), 2);
    assert_int_equal(keys_verify_take(&pool, UINT64_MAX - 1), -1);
}

/* Refused again: stays out at least until the next look, with a doubling, bounded wait. */
static void test_verify_refused_backs_off(void **state)
{
    struct keypool pool;
    uint64_t now = 100;

    (void)state;
    keys_init(&pool, 1);
    keys_cooldown(&pool, 0, keys_cooldown_until(0, KEY_AUTH, 0), KEY_AUTH);
    keys_verify_schedule(&pool, 0, now);
    for (unsigned round = 0; round < 20; round++) {
        uint64_t wait = 100ull << (round + 1);

        if (wait > KEYS_AUTH_COOLDOWN_MS)
            wait = KEYS_AUTH_COOLDOWN_MS;
        assert_int_equal(keys_verify_take(&pool, now), 0);
        keys_verify_done(&pool, 0, KEY_VERIFY_REFUSED, now, 100);
        assert_int_equal(keys_verify_take(&pool, now + wait - 1), -1);
        assert_true(keys_is_cooling(&pool, 0, now + wait - 1));
        now += wait;
    }
    assert_int_equal(keys_verify_take(&pool, now), 0);
    keys_verify_done(&pool, 0, KEY_VERIFY_OK, now, 100);
    assert_false(keys_is_cooling(&pool, 0, now));
}

/* Inconclusive (no answer about the key): tried again later, the cooldown is not extended. */
static void test_verify_inconclusive(void **state)
{
    struct keypool pool;
    uint64_t until = keys_cooldown_until(0, KEY_AUTH, 0);

    (void)state;
    keys_init(&pool, 1);
    keys_cooldown(&pool, 0, until, KEY_AUTH);
    keys_verify_schedule(&pool, 0, 100);
    assert_int_equal(keys_verify_take(&pool, 100), 0);
    keys_verify_done(&pool, 0, KEY_VERIFY_INCONCLUSIVE, 100, 100);
    assert_false(keys_is_cooling(&pool, 0, until));
    assert_int_equal(keys_verify_take(&pool, 150), -1);
    assert_int_equal(keys_verify_take(&pool, 200), 0);
}

/* The client's hint counts the next look; the gateway's own wait does not. */
static void test_verify_hint(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 1);
    keys_cooldown(&pool, 0, keys_cooldown_until(0, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_soonest_hint_ms(&pool, 0), KEYS_AUTH_COOLDOWN_MS);
    keys_verify_schedule(&pool, 0, 30000);
    assert_int_equal(keys_soonest_hint_ms(&pool, 0), 30000);
    assert_int_equal(keys_soonest_ms(&pool), KEYS_AUTH_COOLDOWN_MS);
    assert_int_equal(keys_verify_take(&pool, 30000), 0);
    assert_int_equal(keys_soonest_hint_ms(&pool, 30010), 30010); /* running: any moment */
}

/* A refusal of the last usable key is looked at once; with another key serving, after
 * base_ms; a key put back by a look less than base_ms ago waits base_ms (no restore-refuse
 * loop for a key refused by one model only). */
static void test_verify_due_last_key(void **state)
{
    struct keypool pool;
    uint64_t now = 5000;

    (void)state;
    keys_init(&pool, 2);
    keys_cooldown(&pool, 0, keys_cooldown_until(now, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_verify_due_ms(&pool, 0, -1, now, 30000), now + 30000); /* key 1 serves */
    keys_cooldown(&pool, 1, keys_cooldown_until(now, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_verify_due_ms(&pool, 1, -1, now, 30000), now); /* the last one */

    keys_init(&pool, 1);
    keys_cooldown(&pool, 0, keys_cooldown_until(now, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_verify_due_ms(&pool, 0, -1, now, 30000), now);
    keys_verify_schedule(&pool, 0, now);
    assert_int_equal(keys_verify_take(&pool, now), 0);
    keys_verify_done(&pool, 0, KEY_VERIFY_OK, now + 40, 30000);
    assert_int_equal(keys_available(&pool, now + 40), 1);
    /* refused again 1 s after the look restored it: the usual wait */
    keys_cooldown(&pool, 0, keys_cooldown_until(now + 1040, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_verify_due_ms(&pool, 0, -1, now + 1040, 30000), now + 31040);
    /* refused again long after: at once */
    assert_int_equal(keys_verify_due_ms(&pool, 0, -1, now + 40 + 30000, 30000), now + 30040);
    /* a model whose own rate limit holds the other key counts that key as not usable */
    keys_init(&pool, 2);
    keys_cooldown_model(&pool, 1, 3, now + 1000, KEY_RATE_LIMITED);
    keys_cooldown(&pool, 0, keys_cooldown_until(now, KEY_AUTH, 0), KEY_AUTH);
    assert_int_equal(keys_verify_due_ms(&pool, 0, 3, now, 30000), now);
    assert_int_equal(keys_verify_due_ms(&pool, 0, 2, now, 30000), now + 30000);
    assert_int_equal(keys_verify_due_ms(&pool, 9, -1, now, 30000), now + 30000); /* bad index */
}

/* Why the keys cool, as a client is told. */
static void test_cooling_reasons(void **state)
{
    struct keypool pool;
    char buf[64];

    (void)state;
    keys_init(&pool, 3);
    assert_int_equal(keys_cooling_reasons(&pool, -1, 0), 0);
    assert_string_equal(keys_reasons_text(0, buf, sizeof(buf)), "");
    keys_cooldown(&pool, 0, 1000, KEY_AUTH);
    assert_int_equal(keys_cooling_reasons(&pool, -1, 0), 1u << KEY_AUTH);
    assert_string_equal(keys_reasons_text(1u << KEY_AUTH, buf, sizeof(buf)), "auth_failed");
    keys_cooldown_model(&pool, 1, 2, 500, KEY_RATE_LIMITED);
    assert_int_equal(keys_cooling_reasons(&pool, -1, 0), 1u << KEY_AUTH); /* another model's */
    assert_int_equal(keys_cooling_reasons(&pool, 2, 0),
                     (1u << KEY_AUTH) | (1u << KEY_RATE_LIMITED));
    keys_cooldown(&pool, 2, 800, KEY_QUOTA);
    assert_string_equal(keys_reasons_text(keys_cooling_reasons(&pool, 2, 0), buf, sizeof(buf)),
                        "rate_limited, quota_exhausted, auth_failed");
    assert_int_equal(keys_cooling_reasons(&pool, 2, 1000), 0); /* all back */
    assert_string_equal(keys_reasons_text(1u << KEY_AUTH | 1u << KEY_QUOTA, buf, 20),
                        "quota_exhausted"); /* cut at a whole name */
}

/* Only a refused key is re-verified: a rate-limited one comes back on its own. */
static void test_verify_only_auth(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 1);
    keys_cooldown(&pool, 0, 5000, KEY_RATE_LIMITED);
    keys_verify_schedule(&pool, 0, 100);
    assert_int_equal(keys_verify_take(&pool, 1000), -1);
    keys_verify_schedule(&pool, 7, 100); /* out of range: ignored */
    keys_verify_done(&pool, 7, KEY_VERIFY_OK, 100, 100);
}


/* A rate limit on model slot 0 leaves the key usable for model slot 1 (issue: a 429 on model A
 * stopped model B on the same key). */
static void test_rate_limit_per_model(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 1);
    assert_int_equal(keys_cooldown_model(&pool, 0, 0, 5000, KEY_RATE_LIMITED), BSC_OK);
    assert_int_equal(keys_next_model(&pool, 0, 100), -1);
    assert_true(keys_soonest_model_ms(&pool, 0) == 5000);
    assert_int_equal(keys_available_model(&pool, 0, 100), 0);
    assert_int_equal(keys_next_model(&pool, 1, 100), 0);
    assert_int_equal(keys_available_model(&pool, 1, 100), 1);
    assert_true(keys_soonest_model_ms(&pool, 1) == 0);
    /* The key-wide view does not count a model's rate limit. */
    assert_int_equal(keys_available(&pool, 100), 1);
    assert_int_equal(keys_next_model(&pool, 0, 5000), 0);
    assert_int_equal(keys_stats(&pool, 0)->cooldowns[KEY_RATE_LIMITED], 1);
}

/* Quota and refused credentials cool the key for every model, whatever slot reported it. */
static void test_quota_auth_every_model(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 2);
    assert_int_equal(keys_cooldown_model(&pool, 0, 3, 9000, KEY_QUOTA), BSC_OK);
    assert_int_equal(keys_cooldown_model(&pool, 1, 3, 7000, KEY_AUTH), BSC_OK);
    for (int m = -1; m < KEYS_MODELS_MAX; m++) {
        assert_int_equal(keys_next_model(&pool, m, 100), -1);
        assert_true(keys_soonest_model_ms(&pool, m) == 7000);
    }
    assert_int_equal(keys_reason(&pool, 0), KEY_QUOTA);
}

/* A model without a slot (-1, or out of range) rate-limits the key for every model. */
static void test_rate_limit_no_slot_key_wide(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 1);
    assert_int_equal(keys_cooldown_model(&pool, 0, -1, 4000, KEY_RATE_LIMITED), BSC_OK);
    assert_int_equal(keys_next_model(&pool, 2, 100), -1);
    keys_init(&pool, 1);
    assert_int_equal(keys_cooldown_model(&pool, 0, KEYS_MODELS_MAX, 4000, KEY_RATE_LIMITED),
                     BSC_OK);
    assert_int_equal(keys_next_model(&pool, 2, 100), -1);
}

/* The later of the key-wide and the model cooldown wins; rotation skips per model. */
static void test_model_and_key_cooldowns_combine(void **state)
{
    struct keypool pool;

    (void)state;
    keys_init(&pool, 2);
    keys_cooldown_model(&pool, 0, 1, 8000, KEY_RATE_LIMITED);
    keys_cooldown_model(&pool, 0, -1, 3000, KEY_RATE_LIMITED);
    assert_true(keys_soonest_model_ms(&pool, 1) == 0); /* key 1 is free */
    assert_int_equal(keys_next_model(&pool, 1, 100), 1);
    assert_int_equal(keys_next_model(&pool, 1, 100), 1);
    assert_int_equal(keys_next_model(&pool, 0, 3000), 0);
    assert_int_equal(keys_next_model(&pool, 1, 3000), 1);
    assert_int_equal(keys_next_model(&pool, 1, 3000), 1);
    keys_cooldown_model(&pool, 1, 1, 6000, KEY_RATE_LIMITED);
    assert_true(keys_soonest_model_ms(&pool, 1) == 6000);
    assert_true(keys_soonest_hint_model_ms(&pool, 1, 3000) == 6000);
    assert_int_equal(keys_available_model(&pool, 1, 6000), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin_order),
        cmocka_unit_test(test_single_key),
        cmocka_unit_test(test_empty_pool),
        cmocka_unit_test(test_cooling_key_skipped),
        cmocka_unit_test(test_all_cooling),
        cmocka_unit_test(test_cooldown_never_shortens),
        cmocka_unit_test(test_bad_index),
        cmocka_unit_test(test_init_clips_to_max),
        cmocka_unit_test(test_cooldown_lengths),
        cmocka_unit_test(test_rotation_with_real_cooldowns),
        cmocka_unit_test(test_verify_restores),
        cmocka_unit_test(test_verify_refused_backs_off),
        cmocka_unit_test(test_verify_inconclusive),
        cmocka_unit_test(test_verify_only_auth),
        cmocka_unit_test(test_verify_hint),
        cmocka_unit_test(test_verify_due_last_key),
        cmocka_unit_test(test_cooling_reasons),
        cmocka_unit_test(test_rate_limit_per_model),
        cmocka_unit_test(test_quota_auth_every_model),
        cmocka_unit_test(test_rate_limit_no_slot_key_wide),
        cmocka_unit_test(test_model_and_key_cooldowns_combine),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
