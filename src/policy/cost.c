/* SPDX-License-Identifier: MIT */
/* cost.c -- the cost formula (cost.h). Prices are per million tokens: the token counts are
 * weighted first and divided once, so a cost is as exact as a double sum of integers
 * times prices allows. */
#include "policy/cost.h"

static double count(int64_t n)
{
    return n > 0 ? (double)n : 0.0;
}

/* <want> tokens out of <*left>, which shrinks by what was taken. */
static double take(double want, double *left)
{
    double got = want < *left ? want : *left;

    *left -= got;
    return got;
}

double cost_of_usage(const struct cfg_price *p, const struct prov_usage *u)
{
    double left = count(u->input_tokens);
    double cached = take(count(u->cached_tokens), &left);
    double write_5m = take(count(u->cache_write_tokens), &left);
    double write_1h = take(count(u->cache_write_1h_tokens), &left);

    return (left * p->input_per_mtok + cached * p->cached_input_per_mtok +
            write_5m * p->cache_write_per_mtok + write_1h * p->cache_write_1h_per_mtok +
            count(u->output_tokens) * p->output_per_mtok) /
           1e6;
}

double cost_estimate(const struct cfg_price *p, uint64_t in, uint64_t out)
{
    return ((double)in * p->input_per_mtok + (double)out * p->output_per_mtok) / 1e6;
}

size_t cost_token_counts(const struct prov_usage *u, struct cost_tokens out[COST_TOKEN_TYPES])
{
    const struct cost_tokens all[COST_TOKEN_TYPES] = {
        {"input", count(u->input_tokens)},
        {"output", count(u->output_tokens)},
        {"cached_input", count(u->cached_tokens)},
        {"cache_write", count(u->cache_write_tokens) + count(u->cache_write_1h_tokens)},
        {"reasoning", count(u->reasoning_tokens)},
    };
    size_t n = 0;

    for (size_t i = 0; i < COST_TOKEN_TYPES; i++)
        if (all[i].n > 0)
            out[n++] = all[i];
    return n;
}
