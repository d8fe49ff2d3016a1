/* SPDX-License-Identifier: MIT */
/* bursts.h -- a burst checked against its rate (bursts.c). */
#ifndef BSC_CONFIG_BURSTS_H
#define BSC_CONFIG_BURSTS_H

#include <stdint.h>

#include "config/internal.h"

/* A map's rates and their bursts (0: unset), as decoded. */
struct cfg__bursts {
    uint32_t rpm, rpm_burst, tpm, tpm_burst;
};
/* A burst without its rate, or above it, is an error at the burst's place. */
void cfg__burst_check(struct cfg__v *v, const struct cfg__node *map, const char *where,
                      const struct cfg__bursts *b);

#endif
