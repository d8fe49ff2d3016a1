/* SPDX-License-Identifier: MIT */
/* openai_usage_ref.h -- the reference reader of an OpenAI-shaped usage object that the
 * differential fuzz target and unit tests compare prov__openai_usage_read with; see
 * openai_usage_ref.c. Same contract as prov__openai_usage_read. */
#ifndef BSC_TESTS_OPENAI_USAGE_REF_H
#define BSC_TESTS_OPENAI_USAGE_REF_H

#include <stdbool.h>

#include "core/str.h"
#include "providers/provider.h"

void openai_usage_ref_read(struct bsc_str usage, bool responses, struct prov_usage *u);

#endif
