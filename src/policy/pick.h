/* SPDX-License-Identifier: MIT */
/* pick.h -- choose the next target among the candidates of one tier, by the route's
 * `balance` mode (docs/configuration.md). Pure: the caller fills one struct pick_cand per target
 * (eligibility from breaker, capability contract, kill switches, already-tried; signals from
 * health/tstats.h and health/breaker.h) and passes a uniform draw; the same inputs always
 * give the same answer. No I/O, no clock, no allocation, never calls back.
 * See docs/internals/breaker.md for how the ramp and the breaker interact with picking. */
#ifndef BSC_POLICY_PICK_H
#define BSC_POLICY_PICK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* least_latency: each request already in flight on a candidate adds this share of its base
 * latency to its score (see pick_score()). */
#define PICK_INFLIGHT_PENALTY 1.0
/* least_latency: scores use at least this base, so the in-flight penalty still separates
 * candidates whose measured latency is (close to) zero. */
#define PICK_MIN_BASE_MS 1.0

struct pick_cand {
    bool eligible;          /* false: never chosen */
    uint32_t weight;        /* weighted: the configured weight (default 1) */
    double ewma_latency_ms; /* least_latency: < 0 (or NaN) = unmeasured */
    double ewma_ttft_ms;    /* least_latency: < 0 (or NaN) = unmeasured */
    uint32_t inflight;      /* least_latency: attempts now in flight on this target */
    double price_per_mtok;  /* cheapest: blended price, see pick_blend_price() */
    double ramp_fraction;   /* weighted: brk_ramp_fraction(), clipped to [0, 1] */
};

/* Returns the index in <c>[0..<n>) of the candidate to try next, or -1 when none is
 * eligible. <rand01> is a uniform draw in [0, 1), used only by CFG_BALANCE_WEIGHTED
 * (clipped into range when it is not).
 *  - priority: the first eligible candidate, in tier order.
 *  - weighted: random in proportion to weight x ramp_fraction; when every eligible
 *    candidate's product is 0, the first eligible one (so a tier of ramping or zero-weight
 *    targets still serves).
 *  - least_latency: an eligible unmeasured candidate first (the one with the fewest in
 *    flight, then tier order), so every target gets measured; otherwise the lowest
 *    pick_score(), ties to tier order.
 *  - cheapest: the lowest price_per_mtok, ties to tier order.
 * An out-of-range <balance> behaves as priority. */
int pick_next(const struct pick_cand *c, size_t n, enum cfg_balance balance, double rand01);

/* The least_latency score of a measured candidate, lower is better:
 *   base  = ewma_latency_ms, or the mean of ewma_latency_ms and ewma_ttft_ms when TTFT is
 *           measured (streaming callers care about the first token), at least
 *           PICK_MIN_BASE_MS;
 *   score = base x (1 + PICK_INFLIGHT_PENALTY x inflight).
 * Multiplying by the queue in front of a request estimates its wait as well as its service
 * time, so a fast target that is already busy stops attracting every request. A negative
 * value means unmeasured. */
double pick_score(const struct pick_cand *c);

/* The blended price per million tokens that `cheapest` compares: (3 x input + output) / 4,
 * the usual 3:1 input:output mix of chat traffic. A price of 0 (unknown in config) blends to
 * 0 and so sorts as cheapest; validation should warn about cheapest routes with unpriced
 * targets. */
double pick_blend_price(const struct cfg_price *price);

#endif
