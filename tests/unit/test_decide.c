/* SPDX-License-Identifier: MIT */
/* test_decide.c -- the pure routing decision (policy/decide.h) driven by a table of
 * scenarios: every workflow (the same target again with backoff or the next key, failover
 * to an equivalent, fallback with its capability and window checks, an uncertain side
 * effect), the retry budget, Retry-After against the deadline, breaker states, cooling
 * keys, a fallback canary, the envelope's attempt limits and a client fault. The clock and
 * the random draws are fields of the input, so each scenario is exact. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "policy/decide.h"

#define NOW 1000000u /* ms */

/* Route "r": primary A, B (provider p1, two keys); equivalent E (p2); fallback F (p2, a
 * larger window). Attempt 1 failed on A. */
struct fx {
    struct cfg_provider p1, p2;
    struct cfg_target a, b, e, f;
    struct cfg_target *prim[2], *equiv[1], *fall[1];
    struct cfg_route route;
    struct cfg_retry retry;
    struct envelope env;
    struct fail_info fail;
    struct attempt attempts[8];
    struct decide_in in;
};

static char *keys2[] = {"k1", "k2"};
static char *keys1[] = {"k1"};

static void cand(struct decide_cand *c, const struct cfg_target *t)
{
    memset(c, 0, sizeof(*c));
    c->t = t;
    c->keys_available = 1;
    c->keys_ready_at = NOW;
    c->canary_draw = 0.5;
    c->admit = ADMIT_ALLOWED;
    c->v.state = BRK_CLOSED;
    c->v.ramp_fraction = 1.0;
    c->v.ewma_latency_ms = c->v.ewma_ttft_ms = -1;
}

static void target(struct cfg_target *t, const char *id, struct cfg_provider *p, uint64_t win)
{
    t->id = (char *)id;
    t->provider = p;
    t->model = (char *)id;
    t->context_window = win;
    t->canary_percent = 100;
    t->capabilities = 0xff;
}

static void fx_init(struct fx *x, enum fail_kind kind)
{
    memset(x, 0, sizeof(*x));
    x->p1 = (struct cfg_provider){.id = "p1", .keys = keys2, .n_keys = 2};
    x->p2 = (struct cfg_provider){.id = "p2", .keys = keys1, .n_keys = 1};
    target(&x->a, "A", &x->p1, 8000);
    target(&x->b, "B", &x->p1, 8000);
    target(&x->e, "E", &x->p2, 8000);
    target(&x->f, "F", &x->p2, 128000);
    x->prim[0] = &x->a, x->prim[1] = &x->b, x->equiv[0] = &x->e, x->fall[0] = &x->f;
    x->route.id = "r";
    x->route.primary = (struct cfg_tier){.targets = x->prim, .n = 1};
    x->route.equivalent = (struct cfg_tier){.targets = x->equiv, .n = 1};
    x->route.fallback = (struct cfg_tier){.targets = x->fall, .n = 1};
    x->route.balance = CFG_BALANCE_PRIORITY;
    x->retry = (struct cfg_retry){.base_ms = 250, .max_ms = 4000, .jitter = 0};
    x->env = (struct envelope){.start_ms = NOW - 500, .deadline_ms = NOW + 30000,
                               .max_attempts = 4, .max_same_target_attempts = 2,
                               .max_cost_usd = -1, .allow_equivalent = true,
                               .allow_fallback = true, .side_effects = CFG_SE_NONE};
    fail_info_init(&x->fail);
    x->fail.kind = kind;
    x->attempts[0] = (struct attempt){.target = &x->a, .start_us = (NOW - 400) * 1000ull,
                                      .end_us = (NOW - 100) * 1000ull};
    x->in = (struct decide_in){.route = &x->route, .env = &x->env, .retry = &x->retry,
                               .fail = &x->fail, .attempts = x->attempts, .n_attempts = 1,
                               .tier = TIER_PRIMARY, .now_ms = NOW, .now_us = NOW * 1000ull,
                               .time_left_ms = 30000, .est_tokens = 1000, .draw_pick = 0.5,
                               .draw_jitter = 0.5, .budget_ok = true};
    cand(&x->in.failed, &x->a);
    x->in.tiers[TIER_PRIMARY].n = 1;
    cand(&x->in.tiers[TIER_PRIMARY].c[0], &x->a);
    x->in.tiers[TIER_EQUIVALENT].n = 1;
    cand(&x->in.tiers[TIER_EQUIVALENT].c[0], &x->e);
    x->in.tiers[TIER_FALLBACK].n = 1;
    cand(&x->in.tiers[TIER_FALLBACK].c[0], &x->f);
}

/* Primary has B too (a second candidate of the same tier). */
static void with_b(struct fx *x)
{
    x->route.primary.n = 2;
    x->in.tiers[TIER_PRIMARY].n = 2;
    cand(&x->in.tiers[TIER_PRIMARY].c[1], &x->b);
}

/* A second attempt on A already failed too. */
static void two_on_a(struct fx *x)
{
    x->attempts[1] = x->attempts[0];
    x->in.n_attempts = 2;
}

/* ---- the scenarios ---- */

static void s_server_error(struct fx *x) { fx_init(x, FAIL_SERVER_ERROR); }
static void s_retry_after(struct fx *x)
{
    fx_init(x, FAIL_OVERLOADED);
    x->fail.retry_after_ms = 1200;
}
static void s_next_key(struct fx *x) { fx_init(x, FAIL_RATE_LIMITED); }
static void s_same_target_cap(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    two_on_a(x);
}
static void s_equiv_in_primary(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    two_on_a(x);
    with_b(x);
}
static void s_timeout_moves_on(struct fx *x) { fx_init(x, FAIL_TIMEOUT); }
static void s_not_found_fallback_only(struct fx *x)
{
    fx_init(x, FAIL_NOT_FOUND);
    x->env.allow_equivalent = false;
}
static void s_fallback_lacks_window(struct fx *x)
{
    fx_init(x, FAIL_CONTEXT_OVERFLOW);
    x->f.context_window = 8000; /* not larger than A's */
}
static void s_context_overflow(struct fx *x) { fx_init(x, FAIL_CONTEXT_OVERFLOW); }
static void s_fallback_excluded(struct fx *x)
{
    fx_init(x, FAIL_NOT_FOUND);
    x->in.tiers[TIER_EQUIVALENT].c[0].excluded = true; /* lacks a capability asked for */
    x->in.tiers[TIER_FALLBACK].c[0].excluded = true;
}
static void s_uncertain(struct fx *x)
{
    fx_init(x, FAIL_TIMEOUT);
    x->env.side_effects = CFG_SE_WRITE_POSSIBLE;
    x->fail.request_sent = true;
    x->fail.transport = FT_TIMEOUT;
}
static void s_uncertain_answered(struct fx *x)
{
    s_uncertain(x);
    x->fail.transport = FT_OK; /* an answer came: it says what happened */
    x->fail.status = 500;
}
static void s_budget_spent(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    x->in.budget_ok = false;
}
static void s_wait_exceeds_deadline(struct fx *x)
{
    fx_init(x, FAIL_OVERLOADED);
    x->fail.retry_after_ms = 60000;
    x->env.allow_equivalent = x->env.allow_fallback = false;
}
static void s_wait_exceeds_goes_on(struct fx *x)
{
    fx_init(x, FAIL_OVERLOADED);
    x->fail.retry_after_ms = 60000;
}
static void s_deadline_passed(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    x->in.time_left_ms = 0;
}
static void s_max_attempts(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    x->env.max_attempts = 1;
}
static void s_client_fault(struct fx *x) { fx_init(x, FAIL_INVALID_REQUEST); }
static void s_contract_failure(struct fx *x)
{
    fx_init(x, FAIL_CONTRACT_FAILURE);
    x->env.allow_fallback = false;
    snprintf(x->fail.message, sizeof(x->fail.message), "missing field");
}
static void s_breaker_open(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    two_on_a(x);
    with_b(x);
    x->in.tiers[TIER_PRIMARY].c[1].v.state = BRK_OPEN;
}
static void s_half_open_unasked(struct fx *x)
{
    s_breaker_open(x);
    x->in.tiers[TIER_PRIMARY].c[1].v.state = BRK_HALF_OPEN;
    x->in.tiers[TIER_PRIMARY].c[1].admit = ADMIT_UNASKED;
}
static void s_half_open_probe(struct fx *x)
{
    s_half_open_unasked(x);
    x->in.tiers[TIER_PRIMARY].c[1].admit = ADMIT_PROBE;
}
static void s_half_open_denied(struct fx *x)
{
    s_half_open_unasked(x);
    x->in.tiers[TIER_PRIMARY].c[1].admit = ADMIT_DENIED;
}
static void s_keys_cooling(struct fx *x)
{
    fx_init(x, FAIL_RATE_LIMITED);
    x->in.failed.keys_available = 0;
    x->in.failed.keys_ready_at = NOW + 3000; /* the soonest key back */
    x->in.tiers[TIER_EQUIVALENT].c[0].keys_available = 0;
    x->in.tiers[TIER_FALLBACK].c[0].keys_available = 0;
}
static void s_keys_cooling_too_long(struct fx *x)
{
    s_keys_cooling(x);
    x->in.failed.keys_ready_at = NOW + 45000;
}
static void s_canary_out(struct fx *x)
{
    s_not_found_fallback_only(x);
    x->f.canary_percent = 10;
    x->in.tiers[TIER_FALLBACK].c[0].canary_draw = 0.5;
}
static void s_canary_in(struct fx *x)
{
    s_canary_out(x);
    x->in.tiers[TIER_FALLBACK].c[0].canary_draw = 0.05;
}
static void s_latency_budget(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    x->env.max_added_latency_ms = 200; /* 100 ms passed, a 250 ms backoff would follow */
}
static void s_cost_budget(struct fx *x)
{
    fx_init(x, FAIL_NOT_FOUND);
    x->e.price.input_per_mtok = 1000;
    x->env.max_cost_usd = 0.5;
    x->env.allow_fallback = false;
}

/* Local limits (router/limit.c): a candidate without room is skipped as a 429 would be. */
static void no_room(struct decide_cand *c, const char *by, int64_t room_in_ms)
{
    c->limited_by = by;
    c->room_in_ms = room_in_ms;
}
static void s_no_room_equiv(struct fx *x)
{
    fx_init(x, FAIL_SERVER_ERROR);
    two_on_a(x);
    no_room(&x->in.tiers[TIER_EQUIVALENT].c[0], "target_rpm", 2000);
}
static void s_no_room_anywhere(struct fx *x)
{
    s_no_room_equiv(x);
    no_room(&x->in.tiers[TIER_FALLBACK].c[0], "provider_concurrency", -1);
}
static void s_no_room_next_key(struct fx *x)
{
    fx_init(x, FAIL_RATE_LIMITED);
    no_room(&x->in.failed, "target_concurrency", -1);
}
static void s_no_room_same_only(struct fx *x)
{
    fx_init(x, FAIL_OVERLOADED);
    x->fail.retry_after_ms = 100;
    x->env.allow_equivalent = x->env.allow_fallback = false;
    x->in.tiers[TIER_EQUIVALENT].n = x->in.tiers[TIER_FALLBACK].n = 0;
    no_room(&x->in.failed, "target_tpm", 700);
}

struct scenario {
    const char *name;
    void (*setup)(struct fx *);
    enum decision want;
    const char *target;    /* GO, ADMIT */
    enum attempt_workflow wf;
    uint32_t delay_ms;
    const char *why;
    enum decide_stop stop; /* STOP */
    const char *reason;    /* STOP_TYPED */
    int64_t wait_ms;
};

#define GO(n, s, t, w, d, y) {n, s, DECIDE_GO, t, ATTEMPT_WF_##w, d, y, DECIDE_STOP_NONE, NULL, 0}
#define STOP(n, s, y, k, r, wait) {n, s, DECIDE_STOP, NULL, 0, 0, y, DECIDE_STOP_##k, r, wait}

static const struct scenario scenarios[] = {
    GO("WORKFLOW_1: server error -> same target after backoff", s_server_error, "A", RETRY,
       250, "backoff"),
    GO("WORKFLOW_1: Retry-After honoured", s_retry_after, "A", RETRY, 1200, "retry_after"),
    GO("WORKFLOW_1: rate limit -> the provider's next key at once", s_next_key, "A", RETRY, 0,
       "next_key"),
    GO("max_same_target_attempts reached -> equivalent", s_same_target_cap, "E",
       EQUIVALENT_FAILOVER, 0, "server_error"),
    GO("failover to another primary first", s_equiv_in_primary, "B", EQUIVALENT_FAILOVER, 0,
       "server_error"),
    GO("timeout: the reserve goes to the next tier", s_timeout_moves_on, "E",
       EQUIVALENT_FAILOVER, 0, "timeout"),
    GO("WORKFLOW_2: fallback", s_not_found_fallback_only, "F", CROSS_MODEL_FALLBACK, 0,
       "not_found"),
    GO("WORKFLOW_2: context overflow -> a larger window", s_context_overflow, "F",
       CROSS_MODEL_FALLBACK, 0, "context_overflow"),
    STOP("WORKFLOW_2: no larger window", s_fallback_lacks_window, "no_larger_window",
         PROVIDER_ERROR, NULL, 0),
    STOP("WORKFLOW_2: capability check excludes every other", s_fallback_excluded,
         "no_eligible_fallback", TYPED, "no_eligible_fallback", -1),
    STOP("WORKFLOW_3: uncertain side effect", s_uncertain, "side_effect_uncertain", UNCERTAIN,
         NULL, 0),
    GO("WORKFLOW_3 not when an answer came", s_uncertain_answered, "E", EQUIVALENT_FAILOVER, 0,
       "timeout"),
    STOP("retry budget spent", s_budget_spent, "retry_budget_exhausted", TYPED,
         "retry_budget_exhausted", OUTLOOK_DEFAULT_RETRY_MS),
    STOP("Retry-After past the deadline", s_wait_exceeds_deadline, "wait_exceeds_deadline",
         TYPED, "deadline_exhausted", 60000),
    GO("Retry-After past the deadline, another target", s_wait_exceeds_goes_on, "E",
       EQUIVALENT_FAILOVER, 0, "overloaded"),
    STOP("deadline passed", s_deadline_passed, "deadline_exhausted", TYPED,
         "deadline_exhausted", -1),
    STOP("max_attempts", s_max_attempts, "max_attempts", TYPED, "attempts_exhausted", -1),
    STOP("client fault stops at once", s_client_fault, "client_error", PROVIDER_ERROR, NULL, 0),
    STOP("contract failure, no fallback", s_contract_failure, "contract_failure", TYPED,
         "contract_failure", -1),
    GO("open breaker skipped", s_breaker_open, "E", EQUIVALENT_FAILOVER, 0, "server_error"),
    {"half-open: its breaker is asked", s_half_open_unasked, DECIDE_ADMIT, "B", 0, 0, NULL,
     DECIDE_STOP_NONE, NULL, 0},
    GO("half-open: admitted as a probe", s_half_open_probe, "B", EQUIVALENT_FAILOVER, 0,
       "server_error"),
    GO("half-open: refused -> next tier", s_half_open_denied, "E", EQUIVALENT_FAILOVER, 0,
       "server_error"),
    GO("all keys cooling: the backoff lasts until the soonest", s_keys_cooling, "A", RETRY,
       3000, "backoff"),
    STOP("all keys cooling past the deadline", s_keys_cooling_too_long, "wait_exceeds_deadline",
         TYPED, "deadline_exhausted", 45000),
    STOP("canary share not drawn", s_canary_out, "no_eligible_fallback", TYPED,
         "no_eligible_fallback", -1),
    GO("canary share drawn", s_canary_in, "F", CROSS_MODEL_FALLBACK, 0, "not_found"),
    STOP("max_added_latency_ms", s_latency_budget, "latency_budget_exhausted", TYPED,
         "latency_budget_exhausted", -1),
    STOP("max_cost_usd", s_cost_budget, "cost_budget_exhausted", TYPED,
         "cost_budget_exhausted", -1),
    GO("no room on the equivalent: the fallback", s_no_room_equiv, "F", CROSS_MODEL_FALLBACK, 0,
       "server_error"),
    STOP("no room anywhere: 429 with the soonest room", s_no_room_anywhere, "no_capacity",
         CAPACITY, "rate_limited", 2000),
    GO("rate limit, no room for the next key: equivalent", s_no_room_next_key, "E",
       EQUIVALENT_FAILOVER, 0, "rate_limited"),
    STOP("the same target only, without room", s_no_room_same_only, "no_capacity", CAPACITY,
         "rate_limited", 700),
};

static void check(const struct scenario *s, enum decision d, const struct decide_out *out)
{
    print_message("scenario: %s\n", s->name);
    assert_int_equal(d, s->want);
    if (s->target)
        assert_string_equal(out->target->id, s->target);
    if (d == DECIDE_GO) {
        assert_int_equal(out->wf, s->wf);
        assert_int_equal(out->delay_ms, s->delay_ms);
    }
    if (s->why)
        assert_string_equal(out->why, s->why);
    assert_int_equal(out->stop, s->stop);
    if (s->reason) {
        assert_string_equal(out->reason, s->reason);
        assert_int_equal(out->wait_ms, s->wait_ms);
        assert_true(out->msg[0] != '\0');
    }
}

static void test_scenarios(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++) {
        struct fx x;
        struct decide_out out;
        s_server_error(&x);
        scenarios[i].setup(&x);
        check(&scenarios[i], decide_next(&x.in, &out), &out);
    }
}

/* Pure: the same input gives the same answer, and the input is not written. */
static void test_pure(void **state)
{
    struct fx x;
    struct decide_in copy;
    struct decide_out o1, o2;

    (void)state;
    s_retry_after(&x);
    copy = x.in;
    assert_int_equal(decide_next(&x.in, &o1), decide_next(&x.in, &o2));
    assert_memory_equal(&copy, &x.in, sizeof(copy));
    assert_int_equal(o1.delay_ms, o2.delay_ms);
    assert_string_equal(o1.why, o2.why);
}

/* The half-open probe is marked, and a contract failure stops with 502. */
static void test_probe_and_status(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_half_open_probe(&x);
    assert_int_equal(decide_next(&x.in, &out), DECIDE_GO);
    assert_true(out.admitted && out.probe);
    assert_int_equal(out.tier, TIER_PRIMARY);
    s_contract_failure(&x);
    assert_int_equal(decide_next(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.status, 502);
    assert_string_equal(out.msg, "missing field");
}

/* The first attempt: the primary, else the next allowed tier, else none eligible. */
static void test_first(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_server_error(&x);
    x.in.n_attempts = 0;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_GO);
    assert_string_equal(out.target->id, "A");
    assert_int_equal(out.wf, ATTEMPT_WF_PRIMARY);
    assert_null(out.recovery);
    x.in.tiers[TIER_PRIMARY].c[0].off = true;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_GO);
    assert_string_equal(out.target->id, "E");
    assert_int_equal(out.wf, ATTEMPT_WF_EQUIVALENT_FAILOVER);
    assert_string_equal(out.recovery, "primary_unavailable");
    x.in.tiers[TIER_EQUIVALENT].c[0].v.state = BRK_OPEN;
    x.in.tiers[TIER_FALLBACK].c[0].keys_available = 0;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_NONE_ELIGIBLE);
    /* Too dear from the start: never retryable. */
    s_server_error(&x);
    x.in.n_attempts = 0;
    x.a.price.input_per_mtok = 1000;
    x.env.max_cost_usd = 0.5;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_string_equal(out.reason, "cost_budget_exhausted");
    assert_int_equal(out.outlook, OUTLOOK_NEVER);
}

/* ---- panic (breaker.panic) ---- */

/* Every candidate open, each opened at NOW minus <ago> ms, panic allowed on each. */
static void all_open(struct fx *x, uint64_t a_ago, uint64_t e_ago, uint64_t f_ago)
{
    struct decide_cand *a = &x->in.tiers[TIER_PRIMARY].c[0];
    struct decide_cand *e = &x->in.tiers[TIER_EQUIVALENT].c[0];
    struct decide_cand *f = &x->in.tiers[TIER_FALLBACK].c[0];

    x->a.breaker.panic = x->e.breaker.panic = x->f.breaker.panic = true;
    a->v.state = e->v.state = f->v.state = BRK_OPEN;
    a->v.opened_ms = NOW - a_ago;
    e->v.opened_ms = NOW - e_ago;
    f->v.opened_ms = NOW - f_ago;
    a->admit = e->admit = f->admit = ADMIT_UNASKED;
}

/* The first attempt with every circuit open: the one open longest is asked in panic, then
 * the next when it says no; a probe it admits goes with recovery "breaker_panic"; nothing
 * left, or panic off, is today's none-eligible. */
static void test_panic_first(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_true(out.panic);
    assert_string_equal(out.target->id, "E");
    assert_int_equal(out.tier, TIER_EQUIVALENT);
    x.in.tiers[TIER_EQUIVALENT].c[0].panic = ADMIT_PROBE;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_GO);
    assert_string_equal(out.target->id, "E");
    assert_true(out.panic && out.admitted && out.probe);
    assert_string_equal(out.recovery, "breaker_panic");
    assert_int_equal(out.wf, ATTEMPT_WF_EQUIVALENT_FAILOVER);
    x.in.tiers[TIER_EQUIVALENT].c[0].panic = ADMIT_DENIED;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "F");
    x.in.tiers[TIER_FALLBACK].c[0].panic = ADMIT_DENIED;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "A");
    x.in.tiers[TIER_PRIMARY].c[0].panic = ADMIT_DENIED;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_NONE_ELIGIBLE);

    /* breaker.panic: false keeps today's fail-fast. */
    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    x.a.breaker.panic = x.e.breaker.panic = x.f.breaker.panic = false;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_NONE_ELIGIBLE);
    /* Only the tiers the request may use; never past the deadline. */
    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    x.env.allow_equivalent = false;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "F");
    x.in.time_left_ms = 0;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
}

/* What the panic pick skips and prefers: a closed circuit the ramp refused goes before open
 * ones; a target whose keys all cool down, one switched off, or one the request cannot use
 * is never tried in panic. */
static void test_panic_pick(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    x.in.tiers[TIER_PRIMARY].c[0].v.state = BRK_CLOSED; /* ramping, and the draw said no */
    x.in.tiers[TIER_PRIMARY].c[0].admit = ADMIT_DENIED;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "A");
    x.in.tiers[TIER_PRIMARY].c[0].panic = ADMIT_ALLOWED;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_GO);
    assert_true(out.panic && !out.probe);
    assert_int_equal(out.wf, ATTEMPT_WF_PRIMARY);

    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    x.in.tiers[TIER_EQUIVALENT].c[0].keys_available = 0; /* cooling after rate limits */
    x.in.tiers[TIER_FALLBACK].c[0].off = true;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "A");
    x.in.tiers[TIER_PRIMARY].c[0].excluded = true;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_NONE_ELIGIBLE);

    /* breaker.mode: adaptive -- its throttle already lets a share through: no panic. */
    s_server_error(&x);
    x.in.n_attempts = 0;
    all_open(&x, 3000, 9000, 5000);
    x.in.tiers[TIER_EQUIVALENT].c[0].v.state = BRK_CLOSED; /* throttled */
    x.in.tiers[TIER_EQUIVALENT].c[0].admit = ADMIT_DENIED;
    x.e.breaker.mode = CFG_BRK_MODE_ADAPTIVE;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_ADMIT);
    assert_string_equal(out.target->id, "F");
}

/* After a failure on A with every other circuit open: a failover in panic to the one open
 * longest, never A itself, and only within the retry budget. */
static void test_panic_next(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_server_error(&x);
    two_on_a(&x); /* no more attempts on A */
    all_open(&x, 60000, 9000, 5000);
    assert_int_equal(decide_next(&x.in, &out), DECIDE_ADMIT);
    assert_true(out.panic);
    assert_string_equal(out.target->id, "E");
    x.in.tiers[TIER_EQUIVALENT].c[0].panic = ADMIT_PROBE;
    assert_int_equal(decide_next(&x.in, &out), DECIDE_GO);
    assert_string_equal(out.target->id, "E");
    assert_true(out.probe);
    assert_int_equal(out.wf, ATTEMPT_WF_EQUIVALENT_FAILOVER);
    assert_string_equal(out.why, "breaker_panic");
    x.in.budget_ok = false;
    assert_int_equal(decide_next(&x.in, &out), DECIDE_STOP);
    assert_string_equal(out.reason, "retry_budget_exhausted");
    /* Panic off: today's answer. */
    x.in.budget_ok = true;
    x.e.breaker.panic = x.f.breaker.panic = false;
    assert_int_equal(decide_next(&x.in, &out), DECIDE_STOP);
    assert_string_equal(out.reason, "no_eligible_fallback");
}

/* Capacity: the first attempt moves on past a target without room (no retry budget asked:
 * nothing was sent), and with none left says which limit, when room returns and how long the
 * request may wait (the longest queue_ms, within the time left). */
static void test_capacity(void **state)
{
    struct fx x;
    struct decide_out out;

    (void)state;
    s_server_error(&x);
    x.in.n_attempts = 0;
    x.in.budget_ok = false;
    no_room(&x.in.tiers[TIER_PRIMARY].c[0], "target_rpm", 3000);
    assert_int_equal(decide_first(&x.in, &out), DECIDE_GO);
    assert_string_equal(out.target->id, "E");
    assert_string_equal(out.recovery, "primary_unavailable");
    x.a.queue_ms = 500;
    x.e.queue_ms = 60000;
    no_room(&x.in.tiers[TIER_EQUIVALENT].c[0], "provider_concurrency", -1);
    x.env.allow_fallback = false;
    x.in.tiers[TIER_FALLBACK].n = 0;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_CAPACITY);
    assert_string_equal(out.limited_by, "target_rpm"); /* the soonest back */
    assert_ptr_equal(out.limited, &x.a);
    assert_int_equal(out.wait_ms, 3000);
    assert_int_equal(out.queue_ms, 30000); /* 60000 capped by the time left */
    assert_int_equal(out.status, 429);
    assert_int_equal(out.outlook, OUTLOOK_TIME);
    /* Kept out for another reason too: not a capacity stop. */
    x.in.tiers[TIER_PRIMARY].c[0].off = true;
    x.in.tiers[TIER_EQUIVALENT].c[0].v.state = BRK_OPEN;
    assert_int_equal(decide_first(&x.in, &out), DECIDE_STOP);
    assert_int_equal(out.stop, DECIDE_STOP_NONE_ELIGIBLE);
}

static void test_later_tier(void **state)
{
    struct fx x;

    (void)state;
    s_server_error(&x);
    assert_true(decide_later_tier(&x.route, &x.env, TIER_PRIMARY));
    assert_true(decide_later_tier(&x.route, &x.env, TIER_EQUIVALENT));
    assert_false(decide_later_tier(&x.route, &x.env, TIER_FALLBACK));
    x.route.fallback.disabled = true;
    assert_false(decide_later_tier(&x.route, &x.env, TIER_EQUIVALENT));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scenarios),
        cmocka_unit_test(test_pure),
        cmocka_unit_test(test_probe_and_status),
        cmocka_unit_test(test_first),
        cmocka_unit_test(test_panic_first),
        cmocka_unit_test(test_panic_pick),
        cmocka_unit_test(test_panic_next),
        cmocka_unit_test(test_later_tier),
        cmocka_unit_test(test_capacity),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
