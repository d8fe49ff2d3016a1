/* SPDX-License-Identifier: MIT */
/* score.c -- the balance: score ranking of score.h: a weighted sum per candidate and a
 * stable insertion sort (tiers hold a handful of targets). */
#include <math.h>

#include "policy/score.h"

static double or_zero(double x)
{
    return x >= 0.0 && isfinite(x) ? x : 0.0; /* NaN, negatives and infinities count 0 */
}

double score_of(const struct cfg_score *w, const struct score_cand *c)
{
    double contract = or_zero(c->contract_rate);
    double task = c->task_rate >= 0.0 ? or_zero(c->task_rate) : contract;

    return w->contract * contract + w->task * task - w->latency_ms * or_zero(c->latency_ms) -
           w->cost_usd * or_zero(c->cost_usd);
}

size_t score_rank(const struct cfg_score *w, const struct score_cand *c, size_t n,
                  size_t *order, double *scores, bool *by_score)
{
    size_t m = 0;

    *by_score = true;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].eligible)
            continue;
        if (c[i].samples < SCORE_MIN_SAMPLES)
            *by_score = false;
        order[m] = i;
        scores[m++] = score_of(w, &c[i]);
    }
    if (!*by_score)
        return m;
    for (size_t i = 1; i < m; i++) { /* strictly greater moves up: ties keep tier order */
        size_t oi = order[i], j = i;
        double si = scores[i];

        for (; j > 0 && si > scores[j - 1]; j--) {
            order[j] = order[j - 1];
            scores[j] = scores[j - 1];
        }
        order[j] = oi;
        scores[j] = si;
    }
    return m;
}
