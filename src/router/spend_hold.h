/* SPDX-License-Identifier: MIT */
/* spend_hold.h -- the arithmetic of budget holds: what a request's admission reserves of its
 * client's budget (the estimate of one attempt on its route's dearest target), whether a
 * figure and the holds already taken leave room for one more, and the release of a hold at
 * settlement. Pure: no lock, no clock, no store (router/spend.c applies them to the book).
 * See docs/internals/spend.md, "Holds". */
#ifndef BSC_ROUTER_SPEND_HOLD_H
#define BSC_ROUTER_SPEND_HOLD_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* The hold of a request on <route> whose estimate is <est_tokens> (prompt + output) of
 * which <est_out_tokens> output: the largest decide_attempt_cost over every target of the
 * route's tiers (the prompt at the input price, the output -- the client's max tokens, else
 * a quarter of the prompt -- at the output price). 0 when no target has a price. */
double spend_hold_estimate(const struct cfg_route *route, uint64_t est_tokens,
                           uint64_t est_out_tokens);
/* Whether a request may be admitted to a budget of <budget_usd> with <spent_usd> spent and
 * <held_usd> held by the requests in flight: while the two together are under the budget.
 * So every admitted request found room, and the spend plus the holds can pass the budget by
 * at most the last hold taken. */
bool spend_hold_room(double spent_usd, double held_usd, double budget_usd);
/* The part of a cost of <cost_usd> that replaces what is left of a hold of <hold_usd>: the
 * smaller of the two. That part moves from the holds to the spend, so the two together do
 * not move while a request costs no more than it held. */
double spend_hold_covered(double hold_usd, double cost_usd);
/* <held_usd> once a hold of <hold_usd> is given back: never below 0 (sums of doubles given
 * back in another order can leave a residue of a few ulps either way). */
double spend_hold_release(double held_usd, double hold_usd);

#endif
