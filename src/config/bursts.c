/* SPDX-License-Identifier: MIT */
/* bursts.c -- the bursts beside a client's, target's or provider's rates: `rpm_burst` and
 * `tpm_burst` are counts admitted at once (limits/limits.h, GCRA), meaningful only beside
 * their rate and never above it. */
#include <stdio.h>

#include "config/bursts.h"
#include "config/diag.h"
#include "config/internal.h"
#include "config/schema.h"

/* One burst against its rate: an error at the burst's place. */
static void check_one(struct cfg__v *v, const struct cfg__node *map, const char *where,
                      const char *key, const char *rate_key, uint32_t rate, uint32_t burst)
{
    const struct cfg__entry *e = cfg__map_find(map, key);
    char kr[320];

    if (!e || !burst)
        return;
    cfg__keyref(kr, sizeof(kr), where, key);
    if (!rate)
        cfg__diag(v->s, false, e->value->line, e->value->column,
                  "%s: a burst needs '%s' beside it", kr, rate_key);
    else if (burst > rate)
        cfg__diag(v->s, false, e->value->line, e->value->column,
                  "%s: %u is above %s (%u): at most the minute's limit may pass at once", kr,
                  burst, rate_key, rate);
}

void cfg__burst_check(struct cfg__v *v, const struct cfg__node *map, const char *where,
                      const struct cfg__bursts *b)
{
    if (!map || map->kind != CFG__MAP)
        return;
    check_one(v, map, where, "rpm_burst", "rpm", b->rpm, b->rpm_burst);
    check_one(v, map, where, "tpm_burst", "tpm", b->tpm, b->tpm_burst);
}
