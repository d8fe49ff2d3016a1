/* SPDX-License-Identifier: MIT */
/* resolve.h -- the second pass of a load (resolve.c): references between sections, breaker
 * overrides, warnings. */
#ifndef BSC_CONFIG_RESOLVE_H
#define BSC_CONFIG_RESOLVE_H

#include "config/internal.h"

/* Why <model> cannot be a Gemini model id (it goes into the URL path), or NULL when it can
 * (resolve.c). */
const char *cfg__gemini_model_problem(const char *model);

/* The second pass: breaker overrides, references between sections, warnings. */
void cfg__resolve(struct cfg__v *v);

#endif
