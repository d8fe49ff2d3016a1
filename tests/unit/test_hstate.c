/* SPDX-License-Identifier: MIT */
/* test_hstate.c -- the shared health state (health/hstate.h): sync resolves each target and
 * provider of a snapshot to its object, the objects are keyed by id so a reload (a new
 * snapshot) finds the same breaker, counters, kill switch and key cooldowns, an unresolved
 * target reads as unknown, the retry budget, and the lock-free counters stay exact while
 * several threads update and read them (run under ThreadSanitizer by make test-tsan). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "health/hstate.h"
#include "health/hstate_mirror.h"

#define NOW 1000000u

static char *keys2[] = {"k1", "k2"};

/* One snapshot: provider p (two keys), targets a and b. */
struct snap {
    struct cfg cfg;
    struct cfg_provider p;
    struct cfg_target t[2];
};

static void snap_init(struct snap *s)
{
    struct cfg_breaker brk = {.window_ms = 30000, .min_requests = 20, .failure_rate = 0.5,
                              .consecutive_failures = 2, .open_ms = 60000,
                              .half_open_probes = 1, .success_threshold = 1, .ramp_ms = 0};

    memset(s, 0, sizeof(*s));
    s->p = (struct cfg_provider){.id = "p", .keys = keys2, .n_keys = 2};
    s->t[0] = (struct cfg_target){.id = "a", .provider = &s->p, .model = "m1", .breaker = brk};
    s->t[1] = (struct cfg_target){.id = "b", .provider = &s->p, .model = "m2", .breaker = brk};
    s->cfg.providers = &s->p;
    s->cfg.n_providers = 1;
    s->cfg.targets = s->t;
    s->cfg.n_targets = 2;
    s->cfg.retry = (struct cfg_retry){.budget_ratio = 0, .budget_min_per_s = 1,
                                      .budget_window_ms = 1000};
}

static const struct attempt_report failed = {.outcome = BRK_FAILURE, .latency_ms = -1,
                                             .ttft_ms = -1, .error = "server_error"};
static const struct attempt_report ok = {.outcome = BRK_SUCCESS, .latency_ms = 120,
                                         .ttft_ms = -1};

static void test_sync_resolves(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;

    (void)state;
    snap_init(&s);
    assert_int_equal(hstate_sync(hs, &s.cfg, NOW), BSC_OK);
    assert_non_null(s.t[0].hs);
    assert_non_null(s.t[1].hs);
    assert_ptr_not_equal(s.t[0].hs, s.t[1].hs);
    assert_non_null(s.p.hs);
    hstate_free(hs);
}

/* A reload: a new snapshot with the same ids finds the same objects and their state. */
static void test_reload_keeps_state(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s1, s2;
    struct target_view v;
    struct brk_change c;
    uint64_t soon = 0;

    (void)state;
    snap_init(&s1);
    hstate_sync(hs, &s1.cfg, NOW);
    hstate_record(hs, &s1.t[0], NOW, &ok, NULL);
    hstate_record(hs, &s1.t[0], NOW, &failed, NULL);
    hstate_record(hs, &s1.t[0], NOW, &failed, &c);
    assert_true(c.changed && c.to == BRK_OPEN);
    assert_int_equal(hstate_set_disabled(hs, &s1.t[1], true), BSC_OK);
    hstate_key_cooldown(hs, &s1.p, 0, KEY_RATE_LIMITED, 5000, NOW);

    snap_init(&s2);
    assert_int_equal(hstate_sync(hs, &s2.cfg, NOW + 1), BSC_OK);
    assert_ptr_equal(s2.t[0].hs, s1.t[0].hs);
    hstate_view(hs, &s2.t[0], NOW + 1, &v);
    assert_int_equal(v.state, BRK_OPEN);
    assert_int_equal(v.successes, 1);
    assert_int_equal(v.failures, 2);
    assert_string_equal(v.last_error, "server_error");
    assert_true(v.ewma_latency_ms > 119 && v.ewma_latency_ms < 121);
    assert_true(hstate_is_disabled(hs, &s2.t[1]));
    assert_false(hstate_is_disabled(hs, &s2.t[0]));
    assert_int_equal(hstate_keys_available(hs, &s2.p, NOW + 1), 1);
    assert_int_equal(hstate_key_next(hs, &s2.p, NOW + 1, &soon), 1);
    hstate_free(hs);
}

/* A new key list starts the pool afresh; a target nobody synced reads as unknown. */
static void test_keys_reset_and_unknown(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s1, s2;
    struct cfg_target stray = {.id = "stray", .provider = &s1.p};
    struct target_view v;

    (void)state;
    snap_init(&s1);
    hstate_sync(hs, &s1.cfg, NOW);
    hstate_key_cooldown(hs, &s1.p, 0, KEY_RATE_LIMITED, 5000, NOW);
    hstate_key_cooldown(hs, &s1.p, 1, KEY_RATE_LIMITED, 5000, NOW);
    assert_int_equal(hstate_keys_available(hs, &s1.p, NOW), 0);
    assert_int_equal(hstate_keys_ready_at(hs, &s1.p, NOW), NOW + 5000);
    snap_init(&s2);
    s2.p.n_keys = 1;
    hstate_sync(hs, &s2.cfg, NOW);
    assert_int_equal(hstate_keys_available(hs, &s2.p, NOW), 1);

    hstate_view(hs, &stray, NOW, &v);
    assert_int_equal(v.state, BRK_CLOSED);
    assert_int_equal(v.inflight, 0);
    assert_true(v.ewma_latency_ms < 0);
    assert_int_equal(hstate_admit(hs, &stray, NOW, 0.5), BRK_ALLOW);
    assert_int_equal(hstate_set_disabled(hs, &stray, true), BSC_ENOTFOUND);
    hstate_free(hs);
}

static void test_budget(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;

    (void)state;
    snap_init(&s);
    hstate_sync(hs, &s.cfg, NOW); /* one retry per second, whatever the traffic */
    assert_true(hstate_budget_available(hs, NOW));
    assert_true(hstate_budget_available(hs, NOW)); /* asking takes nothing */
    assert_true(hstate_budget_take(hs, NOW));
    assert_false(hstate_budget_available(hs, NOW));
    assert_false(hstate_budget_take(hs, NOW));
    hstate_free(hs);
}

#define THREADS 4
#define ROUNDS  2000

struct worker_arg {
    struct hstate *hs;
    struct snap *s;
};

static void *hammer(void *p)
{
    struct worker_arg *w = p;
    struct target_view v;

    for (unsigned i = 0; i < ROUNDS; i++) {
        const struct cfg_target *t = &w->s->t[i % 2];
        hstate_inflight(w->hs, t, +1);
        hstate_view(w->hs, t, NOW, &v);
        hstate_record(w->hs, t, NOW, &ok, NULL);
        hstate_inflight(w->hs, t, -1);
        hstate_set_disabled(w->hs, t, i % 3 == 0);
    }
    return NULL;
}

/* Several threads on the same objects: every count arrives, nothing in flight at the end. */
static void test_threads(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    pthread_t th[THREADS];
    struct worker_arg arg;
    struct target_view va, vb;

    (void)state;
    snap_init(&s);
    hstate_sync(hs, &s.cfg, NOW);
    arg = (struct worker_arg){hs, &s};
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hammer, &arg), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    hstate_view(hs, &s.t[0], NOW, &va);
    hstate_view(hs, &s.t[1], NOW, &vb);
    assert_int_equal(va.successes + vb.successes, THREADS * ROUNDS);
    assert_int_equal(va.inflight, 0);
    assert_int_equal(vb.inflight, 0);
    hstate_inflight(hs, &s.t[0], -1); /* at zero it stays at zero */
    hstate_view(hs, &s.t[0], NOW, &va);
    assert_int_equal(va.inflight, 0);
    hstate_free(hs);
}


/* Targets a (model m1) and b (model m2) share p's keys: a rate limit reported for a cools
 * the key for m1 only; a quota for b cools it for both; a third target with a's model
 * shares a's slot. */
static void test_key_rate_limit_per_model(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    uint64_t soon = 0;

    (void)state;
    snap_init(&s);
    s.p.n_keys = 1;
    hstate_sync(hs, &s.cfg, NOW);
    hstate_tkey_cooldown(hs, &s.t[0], 0, KEY_RATE_LIMITED, 5000, NOW);
    assert_int_equal(hstate_tkey_next(hs, &s.t[0], NOW, &soon), -1);
    assert_true(soon == NOW + 5000);
    assert_true(hstate_tkeys_ready_at(hs, &s.t[0], NOW) == NOW + 5000);
    assert_int_equal(hstate_tkey_next(hs, &s.t[1], NOW, &soon), 0);
    assert_true(hstate_tkeys_ready_at(hs, &s.t[1], NOW) == NOW);
    assert_int_equal(hstate_key_next(hs, &s.p, NOW, &soon), 0); /* the key-wide view */
    /* The same model through another target id: the same slot. */
    s.t[1].model = "m1";
    hstate_sync(hs, &s.cfg, NOW);
    assert_int_equal(hstate_tkey_next(hs, &s.t[1], NOW, &soon), -1);
    s.t[1].model = "m2";
    hstate_sync(hs, &s.cfg, NOW);
    hstate_tkey_cooldown(hs, &s.t[1], 0, KEY_QUOTA, -1, NOW);
    assert_int_equal(hstate_tkey_next(hs, &s.t[1], NOW + 6000, &soon), -1);
    assert_int_equal(hstate_tkey_next(hs, &s.t[0], NOW + 6000, &soon), -1);
    hstate_free(hs);
}

/* The AIMD signals of attempt reports reach the target's controller (adaptive on), and
 * its effective limits show in the view; adaptive off, nothing moves. */
static void test_adaptive_signals(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    struct attempt_report limited = {.outcome = BRK_NEUTRAL, .latency_ms = -1, .ttft_ms = -1,
                                     .error = "rate_limited", .adapt = ADAPT_LIMITED,
                                     .started_ms = NOW};
    struct adaptive_eff eff;
    struct target_view v;
    uint32_t inflight;

    (void)state;
    snap_init(&s);
    s.t[0].adaptive = true;
    hstate_sync(hs, &s.cfg, NOW);
    for (int i = 0; i < 6; i++)
        hstate_inflight(hs, &s.t[0], +1);
    hstate_record(hs, &s.t[0], NOW + 10, &limited, NULL);
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 3); /* 6 in flight at the first 429, halved */
    assert_int_equal(inflight, 6);
    hstate_view(hs, &s.t[0], NOW + 10, &v);
    assert_int_equal(v.eff.concurrency, 3);
    hstate_record(hs, &s.t[0], NOW + 11, &limited, NULL); /* begun before the cut: stale */
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 3);
    hstate_record(hs, &s.t[1], NOW + 10, &limited, NULL); /* b: adaptive off */
    hstate_adaptive(hs, &s.t[1], &eff, &inflight);
    assert_int_equal(eff.concurrency, 0);
    hstate_free(hs);
}

/* Adaptive off, or on but never cut, the effective limits are the config's caps (per key,
 * as the limiter counts them), read without the target's lock: the same as the view's
 * (read under it); the first cut shows at once; a target switched off and on again by a
 * reload shows its caps, then its learnt limit. */
static void test_adaptive_off_is_the_config(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    struct attempt_report limited = {.outcome = BRK_NEUTRAL, .latency_ms = -1, .ttft_ms = -1,
                                     .error = "rate_limited", .adapt = ADAPT_LIMITED,
                                     .started_ms = NOW};
    struct adaptive_eff eff;
    struct target_view v;
    uint32_t inflight;

    (void)state;
    snap_init(&s);
    s.t[1].max_concurrency = 10;
    s.t[1].rpm = 120;
    hstate_sync(hs, &s.cfg, NOW);
    hstate_inflight(hs, &s.t[1], +1);
    for (int i = 0; i < 3; i++) {
        hstate_record(hs, &s.t[1], NOW + 10 + (uint64_t)i, &limited, NULL);
        hstate_adaptive(hs, &s.t[1], &eff, &inflight);
        assert_int_equal(eff.concurrency, cfg_per_key(10, 2));
        assert_int_equal(eff.rpm, cfg_per_key(120, 2));
        assert_true(eff.factor == 1.0);
        assert_int_equal(inflight, 1);
        hstate_view(hs, &s.t[1], NOW + 10, &v);
        assert_int_equal(v.eff.concurrency, eff.concurrency);
        assert_int_equal(v.eff.rpm, eff.rpm);
        assert_true(v.eff.factor == eff.factor);
    }
    /* a, adaptive with caps and only successes so far: its caps, as the view says */
    s.t[0].adaptive = true;
    s.t[0].max_concurrency = 12;
    s.t[0].rpm = 60;
    hstate_sync(hs, &s.cfg, NOW);
    for (int i = 0; i < 3; i++) {
        hstate_record(hs, &s.t[0], NOW + 10, &ok, NULL);
        hstate_adaptive(hs, &s.t[0], &eff, &inflight);
        assert_int_equal(eff.concurrency, cfg_per_key(12, 2));
        assert_int_equal(eff.rpm, cfg_per_key(60, 2));
        assert_true(eff.factor == 1.0);
        hstate_view(hs, &s.t[0], NOW + 10, &v);
        assert_int_equal(v.eff.concurrency, eff.concurrency);
        assert_int_equal(v.eff.rpm, eff.rpm);
        assert_true(v.eff.factor == eff.factor);
    }
    /* the first cut shows at once: below the caps, its rate by the same factor */
    hstate_record(hs, &s.t[0], NOW + 20, &limited, NULL);
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    hstate_view(hs, &s.t[0], NOW + 20, &v);
    assert_true(eff.concurrency < cfg_per_key(12, 2));
    assert_int_equal(eff.concurrency, v.eff.concurrency);
    assert_true(eff.rpm < cfg_per_key(60, 2));
    assert_int_equal(eff.rpm, v.eff.rpm);
    assert_true(eff.factor == v.eff.factor && eff.factor < 1.0);
    /* a learns a limit without caps, is switched off (its caps: none), then on (the limit it
     * learnt) */
    s.t[0].max_concurrency = 0;
    s.t[0].rpm = 0;
    hstate_free(hs);
    hs = hstate_new();
    hstate_sync(hs, &s.cfg, NOW);
    for (int i = 0; i < 6; i++)
        hstate_inflight(hs, &s.t[0], +1);
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 0); /* nothing learnt yet */
    hstate_record(hs, &s.t[0], NOW + 10, &limited, NULL);
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 3);
    s.t[0].adaptive = false;
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 0);
    assert_int_equal(eff.rpm, 0);
    assert_true(eff.factor == 1.0);
    assert_int_equal(inflight, 6);
    s.t[0].adaptive = true;
    hstate_adaptive(hs, &s.t[0], &eff, &inflight);
    assert_int_equal(eff.concurrency, 3);
    hstate_free(hs);
}

/* Workers asking for the effective limits of an adaptive and a plain target while others
 * report on both (run under -fsanitize=thread too). */
static void *ask_limits(void *arg)
{
    struct worker_arg *w = arg;
    struct attempt_report limited = {.outcome = BRK_NEUTRAL, .latency_ms = -1, .ttft_ms = -1,
                                     .error = "rate_limited", .adapt = ADAPT_LIMITED,
                                     .started_ms = NOW};
    struct adaptive_eff eff;
    uint32_t inflight;

    for (int i = 0; i < ROUNDS; i++) {
        const struct cfg_target *t = &w->s->t[i & 1];

        hstate_inflight(w->hs, t, +1);
        hstate_adaptive(w->hs, t, &eff, &inflight);
        if (t == &w->s->t[1])
            assert_int_equal(eff.concurrency, cfg_per_key(10, 2));
        hstate_record(w->hs, t, NOW + (uint64_t)i, i % 7 ? &ok : &limited, NULL);
        hstate_inflight(w->hs, t, -1);
    }
    return NULL;
}

static void test_adaptive_threads(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    pthread_t th[THREADS];
    struct worker_arg arg;

    (void)state;
    snap_init(&s);
    s.t[0].adaptive = true;
    s.t[1].max_concurrency = 10;
    hstate_sync(hs, &s.cfg, NOW);
    arg = (struct worker_arg){hs, &s};
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, ask_limits, &arg), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    hstate_free(hs);
}

static struct hstate_keys keys_of(struct hstate *hs, const struct cfg_target *t, uint64_t now)
{
    struct hstate_keys k;

    hs->ops->keys(hs, t->provider, t, now, &k);
    return k;
}

/* A pool none of whose keys ever cooled answers without its lock: every key usable, none
 * cooling, now for both times; a cooldown (for one model, key-wide, through the mirror)
 * ends that until a reload changes the key list, and the answers are then the pool's. */
static void test_keys_calm_pool(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    struct hstate_keys k;

    (void)state;
    snap_init(&s);
    hstate_sync(hs, &s.cfg, NOW);
    for (uint64_t at = NOW; at < NOW + 3; at++) {
        k = keys_of(hs, &s.t[0], at);
        assert_int_equal(k.available, 2);
        assert_int_equal(k.reasons, 0);
        assert_true(k.ready_at == at && k.hint_at == at);
    }
    /* a rate limit of key 0 for m1 (target a): a sees one key, b (m2) both */
    hstate_tkey_cooldown(hs, &s.t[0], 0, KEY_RATE_LIMITED, 5000, NOW);
    k = keys_of(hs, &s.t[0], NOW);
    assert_int_equal(k.available, 1);
    assert_int_equal(k.reasons, 1u << KEY_RATE_LIMITED);
    k = keys_of(hs, &s.t[1], NOW);
    assert_int_equal(k.available, 2);
    assert_int_equal(k.reasons, 0);
    k = keys_of(hs, &s.t[0], NOW + 6000); /* over: both again, from the pool */
    assert_int_equal(k.available, 2);
    /* both keys refused for quota: none left, and when they are back */
    hstate_tkey_cooldown(hs, &s.t[0], 0, KEY_QUOTA, 1000, NOW + 6000);
    hstate_tkey_cooldown(hs, &s.t[0], 1, KEY_QUOTA, 1000, NOW + 6000);
    k = keys_of(hs, &s.t[1], NOW + 6000);
    assert_int_equal(k.available, 0);
    assert_int_equal(k.reasons, 1u << KEY_QUOTA);
    assert_true(k.ready_at > NOW + 6000);
    /* the same key list on a reload keeps the pool; another one starts it calm */
    hstate_sync(hs, &s.cfg, NOW + 6000);
    assert_int_equal(keys_of(hs, &s.t[1], NOW + 6000).available, 0);
    s.p.n_keys = 3;
    hstate_sync(hs, &s.cfg, NOW + 6000);
    k = keys_of(hs, &s.t[1], NOW + 6000);
    assert_int_equal(k.available, 3);
    assert_int_equal(k.reasons, 0);
    /* a cooldown learnt from another instance (the mirror) */
    hstate__key_cool(hs, "p", "m2", 2, KEY_RATE_LIMITED, NOW + 9000);
    k = keys_of(hs, &s.t[1], NOW + 6000);
    assert_int_equal(k.available, 2);
    assert_int_equal(k.reasons, 1u << KEY_RATE_LIMITED);
    assert_int_equal(keys_of(hs, &s.t[0], NOW + 6000).available, 3);
    hstate_free(hs);
}

/* Workers asking for the keys while one of them cools them (run under -fsanitize=thread):
 * the answers stay within the pool. */
static void *ask_keys(void *arg)
{
    struct worker_arg *w = arg;

    for (int i = 0; i < ROUNDS; i++) {
        struct hstate_keys k = keys_of(w->hs, &w->s->t[i & 1], NOW + (uint64_t)i);

        assert_true(k.available <= 2);
        if (i == ROUNDS / 2)
            hstate_tkey_cooldown(w->hs, &w->s->t[0], i & 1, KEY_RATE_LIMITED, 100,
                                 NOW + (uint64_t)i);
    }
    return NULL;
}

static void test_keys_threads(void **state)
{
    struct hstate *hs = hstate_new();
    struct snap s;
    pthread_t th[THREADS];
    struct worker_arg arg;

    (void)state;
    snap_init(&s);
    hstate_sync(hs, &s.cfg, NOW);
    arg = (struct worker_arg){hs, &s};
    for (int i = 0; i < THREADS; i++)
        assert_int_equal(pthread_create(&th[i], NULL, ask_keys, &arg), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(keys_of(hs, &s.t[0], NOW).available, 1); /* the cooldown stayed */
    hstate_free(hs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sync_resolves),
        cmocka_unit_test(test_reload_keeps_state),
        cmocka_unit_test(test_keys_reset_and_unknown),
        cmocka_unit_test(test_budget),
        cmocka_unit_test(test_threads),
        cmocka_unit_test(test_key_rate_limit_per_model),
        cmocka_unit_test(test_adaptive_signals),
        cmocka_unit_test(test_adaptive_off_is_the_config),
        cmocka_unit_test(test_adaptive_threads),
        cmocka_unit_test(test_keys_calm_pool),
        cmocka_unit_test(test_keys_threads),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
