/* SPDX-License-Identifier: MIT */
/* targets_json.h -- a target's live state as JSON (targets_json.c). */
#ifndef BSC_API_TARGETS_JSON_H
#define BSC_API_TARGETS_JSON_H

#include <stdint.h>

#include "core/buf.h"

struct worker;
struct cfg_target;

/* Appends the live state of <t> as a JSON object (admin API, status page). */
void api__put_target(struct bsc_buf *b, struct worker *w, const struct cfg_target *t,
                     uint64_t now);

#endif
