/* SPDX-License-Identifier: MIT */
/* spend_hold.c -- the arithmetic of budget holds (spend_hold.h): a request's estimate, the
 * room a budget leaves, a hold given back. Pure; router/spend.c keeps the holds in its book
 * and, with a shared store, in the fleet's spend record. docs/internals/spend.md, "Holds". */
#include "router/spend_hold.h"

#include "policy/decide.h"

static double dearest(const struct cfg_tier *t, uint64_t est_tokens, uint64_t est_out_tokens,
                      double max)
{
    for (size_t i = 0; i < t->n; i++) {
        double c = decide_attempt_cost(est_tokens, est_out_tokens, t->targets[i], false);

        if (c > max)
            max = c;
    }
    return max;
}

double spend_hold_estimate(const struct cfg_route *route, uint64_t est_tokens,
                           uint64_t est_out_tokens)
{
    double max = 0;

    if (est_out_tokens > est_tokens) /* not a valid estimate: the output is part of it */
        est_out_tokens = est_tokens;
    max = dearest(&route->primary, est_tokens, est_out_tokens, max);
    max = dearest(&route->equivalent, est_tokens, est_out_tokens, max);
    return dearest(&route->fallback, est_tokens, est_out_tokens, max);
}

bool spend_hold_room(double spent_usd, double held_usd, double budget_usd)
{
    return spent_usd + held_usd < budget_usd;
}

double spend_hold_covered(double hold_usd, double cost_usd)
{
    if (!(hold_usd > 0) || !(cost_usd > 0))
        return 0;
    return cost_usd < hold_usd ? cost_usd : hold_usd;
}

double spend_hold_release(double held_usd, double hold_usd)
{
    double left = held_usd - hold_usd;

    return left > 1e-12 ? left : 0.0;
}
