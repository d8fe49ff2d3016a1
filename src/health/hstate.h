/* SPDX-License-Identifier: MIT */
/* hstate.h -- the routing state that outlives a request and is shared by every worker:
 * per target a health object (circuit breaker, latency/TTFT stats, in-flight count, health,
 * the admin kill switch), per provider its key pool, and the gateway-wide retry budget.
 * Objects are keyed by id, so they survive config reloads, and hstate_sync() resolves each
 * target and provider of a snapshot to its object (cfg_target.hs, cfg_provider.hs): the
 * request path does no name lookup. The calls go through a small backend vtable: the
 * in-process backend (hstate_local.c), and the Redis-shared one for several gateway
 * processes (hstate_redis.c), which decides on a local mirror. Every call is thread-safe,
 * takes <now> from the caller and holds at most one object's lock for a few hundred
 * instructions. See docs/internals/breaker.md. */
#ifndef BSC_HEALTH_HSTATE_H
#define BSC_HEALTH_HSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "health/adaptive.h"
#include "health/breaker.h"
#include "health/keys.h"

enum target_health { HEALTH_UNKNOWN = 0, HEALTH_UP, HEALTH_DOWN, HEALTH_COUNT };

/* A copy of one target's state, for pick, admin and the status page. */
struct target_view {
    enum brk_state state;
    bool ramping;
    double ramp_fraction;
    uint64_t retry_after_ms; /* open: until a probe may go */
    uint64_t opened_ms;      /* when the circuit last opened (0: never) */
    double ewma_latency_ms, ewma_ttft_ms; /* < 0: unmeasured */
    uint32_t inflight;
    uint64_t successes, failures;
    const char *last_error; /* static string or NULL */
    uint64_t last_error_wall_ms;
    enum target_health health;
    bool admin_disabled;
    bool misconfigured;
    struct brk_counters counters;
    struct adaptive_eff eff; /* the AIMD controller's effective limits (0: none) */
};

/* What an answer tells the target's AIMD controller (health/adaptive.h). */
enum adapt_signal {
    ADAPT_NONE = 0, /* nothing: no answer, a failure of another kind, adaptive off */
    ADAPT_LIMITED,  /* the provider said 429, or its headers said nothing is left */
    ADAPT_OK,       /* a successful answer */
};

/* What one finished attempt tells the state. */
struct attempt_report {
    enum brk_outcome outcome;
    bool was_probe;
    double latency_ms; /* < 0: not measured (failure before an answer) */
    double ttft_ms;    /* < 0: not a stream, or no first token */
    const char *error; /* static kind name, NULL on success */
    bool misconfigured;
    enum adapt_signal adapt; /* for targets with `adaptive: true` */
    uint64_t started_ms;     /* when the attempt began (a 429 older than a cut is stale) */
};

/* Transition reported by hstate_record for metrics/logs. */
struct brk_change {
    bool changed;
    enum brk_state from, to;
    uint64_t open_ms; /* to BRK_OPEN: for how long (the open time grows, breaker.h) */
    uint32_t opens;   /* to BRK_OPEN: openings since the last recovery */
};

struct hstate;

/* One backend. A target or provider not resolved by sync (its hs slot NULL) reads as
 * unknown: admitted, zero view, one key (index 0), not disabled. */
/* A provider's keys at one moment (hstate ops keys()). */
struct hstate_keys {
    size_t available;  /* keys usable now */
    uint64_t ready_at; /* when one is usable again, for the gateway's waits (<= now: now) */
    uint64_t hint_at;  /* the same for what a client is told: counts a refused key's next
                          re-verification as a possible return */
    unsigned reasons;  /* why the cooling keys cool: bits 1 << enum key_reason (keys.h) */
};

struct hstate_ops {
    void (*destroy)(struct hstate *hs);
    enum bsc_err (*sync)(struct hstate *hs, struct cfg *cfg, uint64_t now_ms);
    enum brk_decision (*admit)(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                               double rand01);
    enum brk_decision (*admit_panic)(struct hstate *hs, const struct cfg_target *t,
                                     uint64_t now_ms);
    void (*record)(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                   const struct attempt_report *rep, struct brk_change *change);
    void (*inflight)(struct hstate *hs, const struct cfg_target *t, int delta);
    void (*view)(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                 struct target_view *out);
    void (*health)(struct hstate *hs, const struct cfg_target *t, bool up, uint64_t now_ms,
                   struct brk_change *change);
    enum bsc_err (*set_disabled)(struct hstate *hs, const struct cfg_target *t, bool disabled);
    bool (*is_disabled)(struct hstate *hs, const struct cfg_target *t);
    /* The key calls take the target <t> whose model they are about (a rate limit is per
     * key and model), or NULL for the key-wide view (probes, shadows). */
    int (*key_next)(struct hstate *hs, const struct cfg_provider *p, const struct cfg_target *t,
                    uint64_t now_ms, uint64_t *soonest_ms);
    void (*key_cooldown)(struct hstate *hs, const struct cfg_provider *p,
                         const struct cfg_target *t, int idx, int reason, int64_t retry_after_ms,
                         uint64_t now_ms);
    int (*key_verify_take)(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
    void (*key_verify_done)(struct hstate *hs, const struct cfg_provider *p, int idx,
                            enum key_verdict verdict, uint64_t now_ms);
    /* Key availability of <p> at <now_ms> as seen by <t>'s model (NULL: key-wide), in
     * *<out> (struct hstate_keys). */
    void (*keys)(struct hstate *hs, const struct cfg_provider *p, const struct cfg_target *t,
                 uint64_t now_ms, struct hstate_keys *out);
    void (*adaptive)(struct hstate *hs, const struct cfg_target *t, struct adaptive_eff *eff,
                     uint32_t *inflight);
    void (*budget_first)(struct hstate *hs, uint64_t now_ms);
    bool (*budget_available)(struct hstate *hs, uint64_t now_ms);
    bool (*budget_take)(struct hstate *hs, uint64_t now_ms);
    /* Shared state only (NULL in a backend that has no other instances): tells the other
     * instances that the gateway's shared records changed (the run-time keyring), and sets
     * the function called -- on the backend's thread -- when another instance says so, or
     * when this one (re)connects and may have missed what was said meanwhile. */
    void (*notify)(struct hstate *hs);
    void (*on_notify)(struct hstate *hs, void (*fn)(void *ud), void *ud);
};

/* Every backend's object starts with this. */
struct hstate {
    const struct hstate_ops *ops;
};

/* The in-process backend. NULL when out of memory. */
struct hstate *hstate_new(void);
void hstate_free(struct hstate *hs);

/* Makes sure every provider and target of <cfg> has a state object, points cfg's
 * targets[i].hs / providers[i].hs at them, and applies each target's breaker parameters.
 * Call after each load or reload, before the snapshot is published. BSC_ENOMEM or
 * BSC_ELIMIT leave the unresolved ones NULL (read as unknown). Also sizes the retry budget. */
static inline enum bsc_err hstate_sync(struct hstate *hs, struct cfg *cfg, uint64_t now_ms)
{
    return hs->ops->sync(hs, cfg, now_ms);
}

/* Breaker admission for <t>. */
static inline enum brk_decision hstate_admit(struct hstate *hs, const struct cfg_target *t,
                                             uint64_t now_ms, double rand01)
{
    return hs->ops->admit(hs, t, now_ms, rand01);
}

/* Breaker admission for <t> when every candidate of a request is kept out by its breaker
 * (brk_allow_panic(): a probe even before open_ms has passed). */
static inline enum brk_decision hstate_admit_panic(struct hstate *hs, const struct cfg_target *t,
                                                   uint64_t now_ms)
{
    return hs->ops->admit_panic(hs, t, now_ms);
}

/* Records a finished attempt on <t>; *<change> (may be NULL) tells if the breaker moved. */
static inline void hstate_record(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                                 const struct attempt_report *rep, struct brk_change *change)
{
    hs->ops->record(hs, t, now_ms, rep, change);
}

static inline void hstate_inflight(struct hstate *hs, const struct cfg_target *t, int delta)
{
    hs->ops->inflight(hs, t, delta);
}

/* A copy of <t>'s state (zeroed when unknown). */
static inline void hstate_view(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                               struct target_view *out)
{
    hs->ops->view(hs, t, now_ms, out);
}

/* Keys: the index of the next usable key of <p> (round-robin, skipping cooling keys), or
 * -1 when all cool down (then *<soonest_ms> is when the first comes back). With no keys
 * configured returns -2 (send no Authorization). */
static inline int hstate_key_next(struct hstate *hs, const struct cfg_provider *p,
                                  uint64_t now_ms, uint64_t *soonest_ms)
{
    return hs->ops->key_next(hs, p, NULL, now_ms, soonest_ms);
}

/* hstate_key_next() for an attempt on <t>: also skips the keys rate-limited for <t>'s
 * model (a 429, or rate-limit headers saying nothing is left until a reset). */
static inline int hstate_tkey_next(struct hstate *hs, const struct cfg_target *t,
                                   uint64_t now_ms, uint64_t *soonest_ms)
{
    return hs->ops->key_next(hs, t->provider, t, now_ms, soonest_ms);
}

/* Cools key <idx> of <p> for the reason (0 rate limited, 1 quota, 2 auth: enum key_reason)
 * with the provider's <retry_after_ms> hint (-1 none). */
static inline void hstate_key_cooldown(struct hstate *hs, const struct cfg_provider *p, int idx,
                                       int reason, int64_t retry_after_ms, uint64_t now_ms)
{
    hs->ops->key_cooldown(hs, p, NULL, idx, reason, retry_after_ms, now_ms);
}

/* hstate_key_cooldown() after an attempt on <t>: a rate limit cools key <idx> for <t>'s
 * model only; quota exhaustion and refused credentials for every model. */
static inline void hstate_tkey_cooldown(struct hstate *hs, const struct cfg_target *t, int idx,
                                        int reason, int64_t retry_after_ms, uint64_t now_ms)
{
    hs->ops->key_cooldown(hs, t->provider, t, idx, reason, retry_after_ms, now_ms);
}

/* Re-verification of refused keys (health/keys.h): the index of a key of <p> due for its
 * authenticated probe, marked running, or -1; then its verdict. Scheduled by
 * hstate_key_cooldown() for a refusal when <p>'s health.key_reverify_ms is not 0. */
static inline int hstate_key_verify_take(struct hstate *hs, const struct cfg_provider *p,
                                         uint64_t now_ms)
{
    return hs->ops->key_verify_take(hs, p, now_ms);
}

static inline void hstate_key_verify_done(struct hstate *hs, const struct cfg_provider *p,
                                          int idx, enum key_verdict verdict, uint64_t now_ms)
{
    hs->ops->key_verify_done(hs, p, idx, verdict, now_ms);
}

/* The effective limits of <t>'s AIMD controller (0: none) and its attempts in flight: what
 * the limiter enforces. Lock-light: one target lock. */
static inline void hstate_adaptive(struct hstate *hs, const struct cfg_target *t,
                                   struct adaptive_eff *eff, uint32_t *inflight)
{
    hs->ops->adaptive(hs, t, eff, inflight);
}

/* Keys of <p> usable now. */
size_t hstate_keys_available(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
/* When <p> next has a usable key: <now_ms> (or earlier) when one is usable now. */
uint64_t hstate_keys_ready_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
/* Like hstate_keys_ready_at(), but counting a refused key's next re-verification as a
 * possible return: for the Retry-After a client is told, not for the gateway's waits. */
uint64_t hstate_keys_hint_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
/* The two above as seen by <t>'s model (its rate limits counted). */
uint64_t hstate_tkeys_ready_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms);
uint64_t hstate_tkeys_hint_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms);
/* Why the keys of <t>'s provider that cool for <t>'s model cool: bits 1 << enum key_reason
 * (keys_reasons_text() words them), 0 when none cools. */
unsigned hstate_tkeys_reasons(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms);

/* The retry budget (docs/design.md §3): count a first attempt; whether a retry would be
 * allowed now; try to take one retry/failover. */
static inline void hstate_budget_first(struct hstate *hs, uint64_t now_ms)
{
    hs->ops->budget_first(hs, now_ms);
}

static inline bool hstate_budget_available(struct hstate *hs, uint64_t now_ms)
{
    return hs->ops->budget_available(hs, now_ms);
}

static inline bool hstate_budget_take(struct hstate *hs, uint64_t now_ms)
{
    return hs->ops->budget_take(hs, now_ms);
}

/* Run-time kill switch, lock-free. BSC_ENOTFOUND when <t> has no state object. */
static inline enum bsc_err hstate_set_disabled(struct hstate *hs, const struct cfg_target *t,
                                               bool disabled)
{
    return hs->ops->set_disabled(hs, t, disabled);
}

static inline bool hstate_is_disabled(struct hstate *hs, const struct cfg_target *t)
{
    return hs->ops->is_disabled(hs, t);
}

/* Active health-check results. A failed probe counts as an infrastructure failure. */
static inline void hstate_health(struct hstate *hs, const struct cfg_target *t, bool up,
                                 uint64_t now_ms, struct brk_change *change)
{
    hs->ops->health(hs, t, up, now_ms, change);
}

const char *target_health_name(enum target_health h);

/* See hstate_ops notify / on_notify; nothing to do without other instances. */
static inline void hstate_notify(struct hstate *hs)
{
    if (hs->ops->notify)
        hs->ops->notify(hs);
}

static inline void hstate_on_notify(struct hstate *hs, void (*fn)(void *ud), void *ud)
{
    if (hs->ops->on_notify)
        hs->ops->on_notify(hs, fn, ud);
}

#endif
