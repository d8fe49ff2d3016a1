/* SPDX-License-Identifier: MIT */
/* validate.h -- the first pass of a load (validate.c): the section tables, and the snapshot
 * built from a document. */
#ifndef BSC_CONFIG_VALIDATE_H
#define BSC_CONFIG_VALIDATE_H

#include <stddef.h>

#include "config/internal.h"
#include "config/types.h"
#include "core/err.h"

/* Builds a snapshot from <doc>. Returns BSC_OK with *<out> set (one ref) when no error was
 * reported, BSC_EINVAL when some were (nothing is returned), BSC_ENOMEM. */
enum bsc_err cfg__build(struct cfg__sink *s, const struct cfg__doc *doc, struct cfg **out);

/* Breaker table (validate.c), reused for overrides by resolve.c. */
extern const struct cfg__field cfg__breaker_fields[];
extern const size_t cfg__n_breaker_fields;
/* Cross-field checks of a breaker map (an empty key list). */
void cfg__breaker_check(struct cfg__v *v, const struct cfg__node *map, void *base,
                        const char *where);

/* Capability names, bit i = names[i] (validate.c). */
extern const char *const cfg__cap_names[];
extern const size_t cfg__n_cap_names;

/* The name of <b> as written in YAML; "?" for a value out of range. */
const char *cfg_balance_name(enum cfg_balance b);

#endif
