/* SPDX-License-Identifier: MIT */
/* checks.h -- a route's `checks:` map (checks.c). */
#ifndef BSC_CONFIG_CHECKS_H
#define BSC_CONFIG_CHECKS_H

#include "config/internal.h"

void cfg__checks_fn(struct cfg__v *v, const struct cfg__field *f, const struct cfg__entry *e,
                    void *base, const char *where);

#endif
