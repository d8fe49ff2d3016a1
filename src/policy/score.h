/* SPDX-License-Identifier: MIT */
/* score.h -- balance: score: orders the eligible targets of a tier by a score of their
 * recent results (contract and task success rates, latency, estimated cost), with the
 * route's weights (docs/configuration.md). Pure: no I/O, no clock, no allocation; the
 * caller fills one struct score_cand per target. See docs/internals/feedback.md. */
#ifndef BSC_POLICY_SCORE_H
#define BSC_POLICY_SCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"

/* Attempts a candidate needs in its window before its score is trusted; with fewer on any
 * eligible candidate the tier keeps priority order. */
#define SCORE_MIN_SAMPLES 10u

struct score_cand {
    bool eligible;
    uint32_t samples;     /* attempts in the window */
    double contract_rate; /* usable answers / attempts, in [0, 1] */
    double task_rate;     /* task successes / verdicts; < 0 (or NaN): no feedback yet */
    double latency_ms;    /* EWMA (TTFT for streams); < 0 (or NaN): unmeasured, counts 0 */
    double cost_usd;      /* estimated cost of this request on the candidate */
};

/* The score of <c>, higher is better:
 *   w.contract x contract_rate + w.task x task_rate - w.latency_ms x latency_ms
 *     - w.cost_usd x cost_usd
 * where task_rate, without feedback, is the contract rate (an answer that passed its
 * contract is presumed to do its task until told otherwise, so feedback on one candidate
 * does not penalise another that has none). */
double score_of(const struct cfg_score *w, const struct score_cand *c);

/* Writes the indices of the eligible candidates of <c>[0..<n>) to <order>, best first, and
 * their scores to <scores> (same positions); returns how many. Ties keep tier order. When
 * an eligible candidate has fewer than SCORE_MIN_SAMPLES samples the order is the tier's
 * (priority) and *<by_score> is false. */
size_t score_rank(const struct cfg_score *w, const struct score_cand *c, size_t n,
                  size_t *order, double *scores, bool *by_score);

#endif
