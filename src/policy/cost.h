/* SPDX-License-Identifier: MIT */
/* cost.h -- what an answer cost, from its neutral usage (providers/provider.h) and its
 * target's price: the one formula behind x-bascule-cost-usd, the access line,
 * bascule_cost_usd_total, client spend and the shadow's cost; and the conservative estimate
 * that balance: cheapest, the score and max_cost_usd judge a request by before it is sent.
 * The billing rules it applies: docs/configuration.md "Cost". Pure. */
#ifndef BSC_POLICY_COST_H
#define BSC_POLICY_COST_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "providers/provider.h"

/* US dollars for <u> at <p>: uncached prompt tokens at input_per_mtok, cache reads at
 * cached_input_per_mtok, 5-minute and 1-hour cache writes at cache_write_per_mtok and
 * cache_write_1h_per_mtok, every output token (reasoning included) at output_per_mtok.
 * Unknown counts (-1) are 0; the parts are clamped to the prompt, in that order, so a
 * usage whose parts overrun its prompt is never priced below the prompt it reports. */
double cost_of_usage(const struct cfg_price *p, const struct prov_usage *u);

/* US dollars for <in> prompt and <out> output tokens before the answer: every prompt token
 * at the full input price (the request cannot know what the provider's cache will serve). */
double cost_estimate(const struct cfg_price *p, uint64_t in, uint64_t out);

/* The token counts of <u> by the `type` label of bascule_tokens_total: input (every prompt
 * token), output (every generated one), and their parts cached_input, cache_write (5-minute
 * and 1-hour writes together) and reasoning. Fills <out> with the non-zero ones; returns
 * how many. */
#define COST_TOKEN_TYPES 5
struct cost_tokens {
    const char *type; /* static */
    double n;
};
size_t cost_token_counts(const struct prov_usage *u, struct cost_tokens out[COST_TOKEN_TYPES]);

#endif
