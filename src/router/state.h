/* SPDX-License-Identifier: MIT */
/* state.h -- the routing state that outlives a request and is shared by every worker:
 * per target a circuit breaker, latency/TTFT stats, in-flight count, health and the
 * admin kill switch; per provider its key pool (rotation and cooldowns); and the
 * gateway-wide retry budget. Keyed by id, so it survives config reloads. This is the
 * store interface the router talks to: the in-process implementation is here; a shared
 * one (Redis) implements the same calls. Every call is thread-safe, takes <now> from the
 * caller and never blocks for long (one mutex held for a few hundred instructions).
 * See docs/internals/breaker.md. */
#ifndef BSC_ROUTER_STATE_H
#define BSC_ROUTER_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "health/breaker.h"
#include "health/keys.h"

struct hstate;

enum target_health { HEALTH_UNKNOWN = 0, HEALTH_UP, HEALTH_DOWN, HEALTH_COUNT };

/* A copy of one target's state, for pick, admin and the status page. */
struct target_view {
    enum brk_state state;
    bool ramping;
    double ramp_fraction;
    uint64_t retry_after_ms; /* open: until a probe may go */
    double ewma_latency_ms, ewma_ttft_ms; /* < 0: unmeasured */
    uint32_t inflight;
    uint64_t successes, failures;
    const char *last_error; /* static string or NULL */
    uint64_t last_error_wall_ms;
    enum target_health health;
    bool admin_disabled;
    bool misconfigured;
    struct brk_counters counters;
};

/* What one finished attempt tells the state. */
struct attempt_report {
    enum brk_outcome outcome;
    bool was_probe;
    double latency_ms; /* < 0: not measured (failure before an answer) */
    double ttft_ms;    /* < 0: not a stream, or no first token */
    const char *error; /* static kind name, NULL on success */
    bool misconfigured;
};

/* Transition reported by hstate_record for metrics/logs. */
struct brk_change {
    bool changed;
    enum brk_state from, to;
};

struct hstate *hstate_new(void);
void hstate_free(struct hstate *hs);

/* Makes sure every provider and target of <cfg> has state and applies its breaker
 * parameters (target override, else provider override, else the top level). Call after
 * each successful load or reload. BSC_ENOMEM leaves older entries intact. Also sizes the
 * retry budget from cfg->retry. */
enum bsc_err hstate_sync(struct hstate *hs, const struct cfg *cfg, uint64_t now_ms);

/* Breaker admission for <t>. */
enum brk_decision hstate_admit(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                               double rand01);
/* Records a finished attempt on <t>; *<change> (may be NULL) tells if the breaker moved. */
void hstate_record(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                   const struct attempt_report *rep, struct brk_change *change);
void hstate_inflight(struct hstate *hs, const struct cfg_target *t, int delta);
/* A copy of <t>'s state (zeroed when unknown). */
void hstate_view(struct hstate *hs, const char *target_id, uint64_t now_ms,
                 struct target_view *out);

/* Keys: the index of the next usable key of <p> (round-robin, skipping cooling keys), or
 * -1 when all cool down (then *<soonest_ms> is when the first comes back). With no keys
 * configured returns -2 (send no Authorization). */
int hstate_key_next(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms,
                    uint64_t *soonest_ms);
/* Cools key <idx> of <p> for the reason (0 rate limited, 1 quota, 2 auth: enum key_reason)
 * with the provider's <retry_after_ms> hint (-1 none). */
void hstate_key_cooldown(struct hstate *hs, const struct cfg_provider *p, int idx, int reason,
                         int64_t retry_after_ms, uint64_t now_ms);
/* Re-verification of refused keys (health/keys.h): the index of a key of <p> due for its
 * authenticated probe, marked running, or -1; then its verdict. Scheduled by
 * hstate_key_cooldown() for a refusal when <p>'s health.key_reverify_ms is not 0. */
int hstate_key_verify_take(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
void hstate_key_verify_done(struct hstate *hs, const struct cfg_provider *p, int idx,
                            enum key_verdict verdict, uint64_t now_ms);
/* When <p> next has a usable key: <now_ms> (or earlier) when one is usable now. */
uint64_t hstate_keys_ready_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
/* Like hstate_keys_ready_at(), but counting a refused key's next re-verification as a
 * possible return: for the Retry-After a client is told, not for the gateway's waits. */
uint64_t hstate_keys_hint_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);
/* Keys of <p> usable now. */
size_t hstate_keys_available(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms);

/* The retry budget (docs/design.md §3): count a first attempt; try to take one retry/failover. */
void hstate_budget_first(struct hstate *hs, uint64_t now_ms);
bool hstate_budget_take(struct hstate *hs, uint64_t now_ms);

/* Run-time kill switch. Returns BSC_ENOTFOUND for an unknown id. */
enum bsc_err hstate_set_disabled(struct hstate *hs, const char *target_id, bool disabled);
bool hstate_is_disabled(struct hstate *hs, const char *target_id);

/* Active health-check results. A failed probe counts as an infrastructure failure. */
void hstate_health(struct hstate *hs, const char *target_id, bool up, uint64_t now_ms,
                   struct brk_change *change);

const char *target_health_name(enum target_health h);

#endif
