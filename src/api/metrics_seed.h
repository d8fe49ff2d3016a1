/* SPDX-License-Identifier: MIT */
/* metrics_seed.h -- the series a config names, present before they count (metrics_seed.c). */
#ifndef BSC_API_METRICS_SEED_H
#define BSC_API_METRICS_SEED_H

struct metrics;
struct cfg;

/* Makes every series <cfg> knows present (at zero) in <m>. */
void api__metrics_seed(struct metrics *m, const struct cfg *cfg);

#endif
