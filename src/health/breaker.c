/* SPDX-License-Identifier: MIT */
/* breaker.c -- the circuit breaker state machine: closed / open / half-open and the
 * slow-start ramp after closing. Every function takes the time as an argument and touches
 * only the struct it is given; transitions happen in the three to_*() helpers and nowhere
 * else. It does not decide which errors are failures: the caller does (enum brk_outcome).
 * See docs/internals/breaker.md. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "health/breaker.h"

/* ---- parameters -------------------------------------------------------------------------- */

static void set_params(struct brk *b, const struct cfg_breaker *params)
{
    b->p = *params;
    if (b->p.half_open_probes == 0)
        b->p.half_open_probes = 1;
    if (b->p.success_threshold == 0)
        b->p.success_threshold = 1;
    if (b->p.min_requests == 0)
        b->p.min_requests = 1;
    /* Round up so that BRK_BUCKETS buckets always cover at least window_ms. */
    b->bucket_ms = ((uint64_t)b->p.window_ms + BRK_BUCKETS - 1) / BRK_BUCKETS;
    if (b->bucket_ms == 0)
        b->bucket_ms = 1;
}

static bool rate_trigger_enabled(const struct brk *b)
{
    /* Written so that NaN disables the trigger too. */
    return b->p.window_ms > 0 && b->p.failure_rate > 0.0 && b->p.failure_rate <= 1.0;
}

/* ---- the sliding window ------------------------------------------------------------------ */

static void window_clear(struct brk *b)
{
    memset(b->buckets, 0, sizeof(b->buckets));
}

/* True when bucket <k> belongs to the window that ends in epoch <epoch>. A bucket stamped in
 * the future (the caller's clock went backwards) is left out rather than trusted. */
static bool bucket_live(const struct brk_bucket *k, uint64_t epoch)
{
    return k->epoch <= epoch && epoch - k->epoch < BRK_BUCKETS;
}

static void window_add(struct brk *b, uint64_t now_ms, bool failure)
{
    uint64_t epoch = now_ms / b->bucket_ms;
    struct brk_bucket *k = &b->buckets[epoch % BRK_BUCKETS];

    if (k->epoch != epoch) {
        k->epoch = epoch;
        k->requests = 0;
        k->failures = 0;
    }
    if (k->requests < UINT32_MAX)
        k->requests++;
    if (failure && k->failures < UINT32_MAX)
        k->failures++;
}

static void window_sum(const struct brk *b, uint64_t now_ms, uint64_t *requests, uint64_t *failures)
{
    uint64_t epoch = now_ms / b->bucket_ms;

    *requests = 0;
    *failures = 0;
    for (size_t i = 0; i < BRK_BUCKETS; i++) {
        if (!bucket_live(&b->buckets[i], epoch))
            continue;
        *requests += b->buckets[i].requests;
        *failures += b->buckets[i].failures;
    }
}

/* ---- transitions: the only places that change b->state ---------------------------------- */

/* Opens for <len_ms>. */
static void to_open(struct brk *b, uint64_t now_ms, enum brk_trigger trigger, uint64_t len_ms)
{
    if (b->state != BRK_OPEN)
        b->counters.opened++;
    b->state = BRK_OPEN;
    b->trigger = trigger;
    b->state_since_ms = now_ms;
    b->opened_ms = now_ms;
    b->open_until_ms = now_ms + len_ms;
    b->ramping = false;
    b->consecutive = 0;
    b->probes_inflight = 0;
    b->probe_successes = 0;
    window_clear(b);
}

static void to_half_open(struct brk *b, uint64_t now_ms)
{
    b->counters.half_opened++;
    b->state = BRK_HALF_OPEN;
    b->state_since_ms = now_ms;
    b->probes_inflight = 0;
    b->probe_successes = 0;
}

/* Closing forgets the failures that opened the circuit: the ramp starts from a clean
 * window, so only new evidence can reopen it. */
static void to_closed(struct brk *b, uint64_t now_ms, bool ramp)
{
    if (b->state != BRK_CLOSED)
        b->counters.closed++;
    b->state = BRK_CLOSED;
    b->state_since_ms = now_ms;
    b->ramping = ramp && b->p.ramp_ms > 0;
    b->ramp_start_ms = now_ms;
    b->consecutive = 0;
    b->probes_inflight = 0;
    b->probe_successes = 0;
    b->opens = 0; /* a recovery: the next opening is open_ms again */
    window_clear(b);
}

/* A trigger fired: open for the next open time, which the opening after it multiplies. */
static void trip(struct brk *b, uint64_t now_ms, enum brk_trigger trigger)
{
    to_open(b, now_ms, trigger, brk_next_open_ms(b));
    if (b->opens < UINT32_MAX)
        b->opens++;
}

/* ---- the open time ----------------------------------------------------------------------- */

uint64_t brk_next_open_ms(const struct brk *b)
{
    double len = (double)b->p.open_ms, cap = (double)b->p.max_open_ms;

    if (cap < len)
        cap = len;
    /* A factor below 1 (or NaN) would shorten it: such a breaker keeps open_ms. */
    for (uint32_t i = 0; i < b->opens && b->p.open_backoff > 1.0 && len < cap; i++)
        len *= b->p.open_backoff;
    return len < cap ? (uint64_t)len : (uint64_t)cap;
}

uint64_t brk_open_len_ms(const struct brk *b)
{
    return b->open_until_ms > b->opened_ms ? b->open_until_ms - b->opened_ms : 0;
}

uint32_t brk_opens(const struct brk *b)
{
    return b->opens;
}

uint64_t brk_opened_ms(const struct brk *b)
{
    return b->opened_ms;
}

/* ---- public API -------------------------------------------------------------------------- */

void brk_init(struct brk *b, const struct cfg_breaker *params)
{
    memset(b, 0, sizeof(*b));
    set_params(b, params);
    b->state = BRK_CLOSED;
    b->trigger = BRK_TRIG_NONE;
}

void brk_set_params(struct brk *b, const struct cfg_breaker *params)
{
    uint64_t old_width = b->bucket_ms;

    set_params(b, params);
    if (b->bucket_ms != old_width)
        window_clear(b);
}

void brk_advance(struct brk *b, uint64_t now_ms)
{
    if (b->state == BRK_OPEN && now_ms >= b->open_until_ms)
        to_half_open(b, now_ms);
    else if (b->state == BRK_CLOSED && b->ramping && !brk_is_ramping(b, now_ms))
        b->ramping = false;
}

double brk_ramp_fraction(const struct brk *b, uint64_t now_ms)
{
    uint64_t elapsed;

    switch (b->state) {
    case BRK_OPEN:
        return now_ms >= b->open_until_ms ? BRK_RAMP_FLOOR : 0.0;
    case BRK_HALF_OPEN:
        return BRK_RAMP_FLOOR;
    case BRK_CLOSED:
    default:
        break;
    }
    if (!b->ramping || b->p.ramp_ms == 0)
        return 1.0;
    elapsed = now_ms > b->ramp_start_ms ? now_ms - b->ramp_start_ms : 0;
    if (elapsed >= b->p.ramp_ms)
        return 1.0;
    return BRK_RAMP_FLOOR + (1.0 - BRK_RAMP_FLOOR) * (double)elapsed / (double)b->p.ramp_ms;
}

bool brk_is_ramping(const struct brk *b, uint64_t now_ms)
{
    return b->state == BRK_CLOSED && brk_ramp_fraction(b, now_ms) < 1.0;
}

bool brk_is_open(const struct brk *b, uint64_t now_ms)
{
    return b->state == BRK_OPEN && now_ms < b->open_until_ms;
}

uint64_t brk_retry_after_ms(const struct brk *b, uint64_t now_ms)
{
    return brk_is_open(b, now_ms) ? b->open_until_ms - now_ms : 0;
}

static enum brk_decision allow_closed(struct brk *b, uint64_t now_ms, double rand01)
{
    double f = brk_ramp_fraction(b, now_ms);

    /* A NaN draw fails "rand01 < f" and is denied while ramping: the safe side. */
    if (f >= 1.0 || rand01 < f)
        return BRK_ALLOW;
    b->counters.ramp_denied++;
    return BRK_DENY_RAMP;
}

static enum brk_decision allow_half_open(struct brk *b)
{
    if (b->probes_inflight >= b->p.half_open_probes) {
        b->counters.denied++;
        return BRK_DENY;
    }
    b->probes_inflight++;
    b->counters.probes++;
    return BRK_ALLOW_PROBE;
}

/* ---- breaker.mode: adaptive (client-side throttling) --------------------------------------- */

static bool adaptive(const struct brk *b)
{
    return b->p.mode == CFG_BRK_MODE_ADAPTIVE;
}

double brk_throttle_p(uint64_t requests, uint64_t accepts, double k)
{
    double p = ((double)requests - k * (double)accepts) / ((double)requests + 1.0);

    return p > 0.0 ? p : 0.0; /* also turns NaN into 0 */
}

double brk_reject_probability(const struct brk *b, uint64_t now_ms)
{
    uint64_t requests, failures;

    if (!adaptive(b) || b->state != BRK_CLOSED)
        return 0.0;
    window_sum(b, now_ms, &requests, &failures);
    return brk_throttle_p(requests, requests - failures, b->p.adaptive_k);
}

/* A refused request is a request the upstream did not accept: counting it keeps the
 * probability up while the upstream stays down, as the SRE book's client does. */
static enum brk_decision allow_adaptive(struct brk *b, uint64_t now_ms, double rand01)
{
    double p = brk_reject_probability(b, now_ms);

    /* Written so that a NaN draw is admitted: the throttle only ever sheds load. */
    if (!(rand01 < p))
        return BRK_ALLOW;
    window_add(b, now_ms, true);
    b->counters.denied++;
    return BRK_DENY;
}

enum brk_decision brk_allow(struct brk *b, uint64_t now_ms, double rand01)
{
    brk_advance(b, now_ms);
    switch (b->state) {
    case BRK_CLOSED:
        if (adaptive(b))
            return allow_adaptive(b, now_ms, rand01);
        return allow_closed(b, now_ms, rand01);
    case BRK_HALF_OPEN:
        return allow_half_open(b);
    case BRK_OPEN:
    default:
        b->counters.denied++;
        return BRK_DENY;
    }
}

enum brk_decision brk_allow_panic(struct brk *b, uint64_t now_ms)
{
    brk_advance(b, now_ms);
    if (adaptive(b) && b->state == BRK_CLOSED) {
        /* Its throttle already lets a share through whatever happens: no panic on top. */
        b->counters.denied++;
        return BRK_DENY;
    }
    switch (b->state) {
    case BRK_CLOSED:
        b->counters.panics++;
        return BRK_ALLOW;
    case BRK_OPEN:
        to_half_open(b, now_ms);
        break;
    case BRK_HALF_OPEN:
    default:
        break;
    }
    if (allow_half_open(b) == BRK_DENY)
        return BRK_DENY;
    b->counters.panics++;
    return BRK_ALLOW_PROBE;
}

static void record_closed(struct brk *b, uint64_t now_ms, enum brk_outcome outcome)
{
    uint64_t requests, failures;

    if (outcome == BRK_NEUTRAL)
        return;
    if (outcome == BRK_SUCCESS) {
        window_add(b, now_ms, false);
        b->consecutive = 0;
        return;
    }
    window_add(b, now_ms, true);
    if (adaptive(b))
        return; /* the window is all the throttle reads: it never opens by itself */
    if (b->consecutive < UINT32_MAX)
        b->consecutive++;
    if (b->p.consecutive_failures > 0 && b->consecutive >= b->p.consecutive_failures) {
        trip(b, now_ms, BRK_TRIG_CONSECUTIVE);
        return;
    }
    if (!rate_trigger_enabled(b))
        return;
    window_sum(b, now_ms, &requests, &failures);
    if (requests >= b->p.min_requests && (double)failures >= b->p.failure_rate * (double)requests)
        trip(b, now_ms, BRK_TRIG_RATE);
}

static void record_probe(struct brk *b, uint64_t now_ms, enum brk_outcome outcome)
{
    if (b->probes_inflight > 0)
        b->probes_inflight--;
    switch (outcome) {
    case BRK_SUCCESS:
        b->probe_successes++;
        if (b->probe_successes >= b->p.success_threshold)
            to_closed(b, now_ms, true);
        break;
    case BRK_FAILURE:
        trip(b, now_ms, BRK_TRIG_PROBE);
        break;
    case BRK_NEUTRAL:
    default:
        break;
    }
}

void brk_record(struct brk *b, uint64_t now_ms, enum brk_outcome outcome, bool was_probe)
{
    brk_advance(b, now_ms);
    switch (b->state) {
    case BRK_CLOSED:
        /* Includes a probe that finishes after its siblings already closed the circuit:
         * it is fresh evidence like any other request. */
        record_closed(b, now_ms, outcome);
        break;
    case BRK_HALF_OPEN:
        /* A non-probe request finishing now was admitted before the circuit opened; its
         * outcome is stale and must neither close nor reopen the circuit. */
        if (was_probe)
            record_probe(b, now_ms, outcome);
        break;
    case BRK_OPEN:
    default:
        /* Stale for the same reason; a late probe of an earlier half-open episode too. */
        break;
    }
}

enum brk_state brk_state(const struct brk *b)
{
    return b->state;
}

enum brk_trigger brk_last_trigger(const struct brk *b)
{
    return b->trigger;
}

void brk_window(const struct brk *b, uint64_t now_ms, uint32_t *requests, uint32_t *failures)
{
    uint64_t r, f;

    window_sum(b, now_ms, &r, &f);
    *requests = r > UINT32_MAX ? UINT32_MAX : (uint32_t)r;
    *failures = f > UINT32_MAX ? UINT32_MAX : (uint32_t)f;
}

const struct brk_counters *brk_counters(const struct brk *b)
{
    return &b->counters;
}

void brk_force_open(struct brk *b, uint64_t now_ms)
{
    to_open(b, now_ms, BRK_TRIG_FORCED, b->p.open_ms);
}

void brk_force_open_for(struct brk *b, uint64_t now_ms, uint64_t open_ms, uint32_t opens)
{
    to_open(b, now_ms, BRK_TRIG_FORCED, open_ms ? open_ms : brk_next_open_ms(b));
    if (opens > b->opens)
        b->opens = opens;
}

void brk_force_close(struct brk *b, uint64_t now_ms)
{
    to_closed(b, now_ms, false);
}

/* ---- names ------------------------------------------------------------------------------- */

static const char *const state_names[BRK_STATE_COUNT] = {
    [BRK_CLOSED] = "closed",
    [BRK_OPEN] = "open",
    [BRK_HALF_OPEN] = "half_open",
};

static const char *const decision_names[BRK_DECISION_COUNT] = {
    [BRK_ALLOW] = "allow",
    [BRK_ALLOW_PROBE] = "allow_probe",
    [BRK_DENY] = "deny",
    [BRK_DENY_RAMP] = "deny_ramp",
};

static const char *const trigger_names[BRK_TRIG_COUNT] = {
    [BRK_TRIG_NONE] = "none",
    [BRK_TRIG_CONSECUTIVE] = "consecutive_failures",
    [BRK_TRIG_RATE] = "failure_rate",
    [BRK_TRIG_PROBE] = "probe_failed",
    [BRK_TRIG_FORCED] = "forced",
};

const char *brk_state_name(enum brk_state state)
{
    return (unsigned)state < BRK_STATE_COUNT ? state_names[state] : "unknown";
}

const char *brk_decision_name(enum brk_decision decision)
{
    return (unsigned)decision < BRK_DECISION_COUNT ? decision_names[decision] : "unknown";
}

const char *brk_trigger_name(enum brk_trigger trigger)
{
    return (unsigned)trigger < BRK_TRIG_COUNT ? trigger_names[trigger] : "unknown";
}
