/* SPDX-License-Identifier: MIT */
/* decide.h -- which target next, or stop (docs/design.md §3), as a pure function: the caller
 * copies everything a decision reads into a decide_in (the failure's policy row, the attempts
 * so far, the envelope, the time, random draws, each candidate's health view and key
 * availability read once, whether the retry budget has room) and carries out the decide_out
 * (metrics, store, error body, breaker admission). No clock, no RNG, no locks, no writes:
 * tests/unit/test_decide.c drives it with a table of scenarios. */
#ifndef BSC_POLICY_DECIDE_H
#define BSC_POLICY_DECIDE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "health/hstate.h"
#include "policy/attempt.h"
#include "policy/envelope.h"
#include "policy/outlook.h"
#include "policy/score.h"
#include "fail/taxonomy.h"

#define DECIDE_MAX_CANDS 64 /* per tier; later targets of a longer tier are not considered */

enum tier { TIER_PRIMARY = 0, TIER_EQUIVALENT, TIER_FALLBACK, TIER_COUNT };

enum decision {
    DECIDE_GO,    /* out: target, tier, workflow, delay */
    DECIDE_STOP,  /* out: stop and its fields */
    DECIDE_ADMIT, /* ask out->target's breaker, write the answer to the candidate, decide again
                     (out->panic: its panic admission, to the candidate's <panic>) */
};

/* A breaker's answer for a candidate, asked by the caller when a decision needs it (asking
 * is not pure: a half-open circuit hands out its probe slots). */
enum decide_admit { ADMIT_UNASKED = 0, ADMIT_ALLOWED, ADMIT_PROBE, ADMIT_DENIED };

/* One target as the decision sees it. */
/* The ranked candidates a decision reports (the attempt log shows the first ones). */
#define DECIDE_RANK_MAX 8

struct decide_cand {
    const struct cfg_target *t;
    bool excluded;         /* the request rules it out: a capability, a parameter, its size */
    bool off;              /* a kill switch: config, provider or the admin's */
    size_t keys_available; /* its provider's keys usable now */
    uint64_t keys_ready_at; /* when one is usable again (<= now when one is) */
    double canary_draw;    /* [0, 1): its share of a fallback canary */
    enum decide_admit admit;
    enum decide_admit panic; /* its breaker's answer to a panic probe (breaker.panic) */
    /* Its room under the local limits (router/limit.c), target's and provider's: NULL when
     * it has room now, else the limit in the way ("target_rpm", "provider_concurrency", ...)
     * and when room returns (room_in_ms; -1 when a request in flight must finish first). */
    const char *limited_by;
    int64_t room_in_ms;
    struct target_view v;  /* copied once per decision */
    struct score_cand sc;  /* balance: score: its recent results (eligible is decided here) */
};

struct decide_tier {
    size_t n; /* min(the route tier's n, DECIDE_MAX_CANDS), 0 when not allowed */
    struct decide_cand c[DECIDE_MAX_CANDS];
};

struct decide_in {
    const struct cfg_route *route;
    const struct envelope *env;
    const struct cfg_retry *retry;
    const struct fail_info *fail; /* the last failure (decide_next) */
    const struct attempt *attempts;
    unsigned n_attempts;
    enum tier tier;               /* of the failed attempt */
    uint64_t now_ms, now_us, time_left_ms;
    uint64_t est_tokens, est_out_tokens; /* the request's estimate, for the cost budget */
    double draw_pick, draw_jitter;       /* [0, 1) */
    bool budget_ok;                      /* the gateway's retry budget has room */
    struct decide_cand failed;           /* the target that failed (decide_next) */
    struct decide_tier tiers[TIER_COUNT];
};

enum decide_stop {
    DECIDE_STOP_NONE = 0,
    DECIDE_STOP_NONE_ELIGIBLE,  /* decide_first: no target may take the first attempt */
    DECIDE_STOP_PROVIDER_ERROR, /* the upstream's own error, as classified */
    DECIDE_STOP_UNCERTAIN,      /* WORKFLOW_3: it may have acted: reconcile_required */
    DECIDE_STOP_TYPED,          /* a typed failure: reason, outlook, wait_ms, msg */
    DECIDE_STOP_CAPACITY,       /* only local limits are in the way: a typed 429
                                   rate_limited (limited_by, limited, queue_ms, wait_ms) */
};

struct decide_out {
    const struct cfg_target *target; /* GO, ADMIT */
    enum tier tier;
    size_t cand;                     /* ADMIT: the index in in->tiers[tier] */
    enum attempt_workflow wf;
    bool admitted, probe;            /* GO after an admission; a half-open probe */
    bool panic;                      /* GO, ADMIT: every candidate was kept out by its
                                        breaker and this one is tried anyway (panic) */
    uint32_t delay_ms;               /* before the next attempt */
    const char *delay_why;           /* static, NULL when no delay */
    const char *why;                 /* static: for the attempt log */
    const char *recovery;            /* decide_first: "primary_unavailable" or NULL */
    enum decide_stop stop;
    const char *reason;              /* STOP_TYPED: the failure's reason code */
    enum outlook outlook;
    int64_t wait_ms;
    int status;                      /* 0: the reason's own status */
    /* balance: score: how the chosen tier was ranked (best first), for the attempt log */
    bool by_score;                   /* false: too few samples, priority order */
    size_t n_ranked;
    size_t ranked[DECIDE_RANK_MAX];  /* indices in in->tiers[tier] */
    double scores[DECIDE_RANK_MAX];
    bool budget_rejected;            /* the retry budget said no */
    /* STOP_CAPACITY: the limit in the way and its target, and how long the request may
     * wait for room (the longest queue_ms of the candidates in the way, within the time
     * left; 0: no wait) */
    const char *limited_by;
    const struct cfg_target *limited;
    uint32_t queue_ms;
    char msg[320];
};

/* After the failure in in->fail: go (same target again, an equivalent, a fallback) or stop. */
enum decision decide_next(const struct decide_in *in, struct decide_out *out);
/* The first attempt: the best primary, else (all unavailable) the next allowed tier. */
enum decision decide_first(const struct decide_in *in, struct decide_out *out);
/* Whether a tier after <tier> may still be tried. */
bool decide_later_tier(const struct cfg_route *route, const struct envelope *env,
                       enum tier tier);
/* The estimated cost of one attempt on <t> (the prompt at the input price, and unless it
 * <failed> the output budget, or 1/4 of the prompt, at the output price). */
double decide_attempt_cost(uint64_t est_tokens, uint64_t est_out_tokens,
                           const struct cfg_target *t, bool failed);

#endif
