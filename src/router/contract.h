/* SPDX-License-Identifier: MIT */
/* contract.h -- structured-output, tool-call and output checks of answers (contract.c);
 * router-private. */
#ifndef BSC_ROUTER_CONTRACT_H
#define BSC_ROUTER_CONTRACT_H

#include <stdbool.h>

#include "core/str.h"
#include "fail/taxonomy.h"

struct request;

/* The request has something to check: a json_schema response format, or tools. */
bool contract_wanted(const struct request *r);
/* contract_wanted, or the route has output checks (`checks:`) for this answer. */
bool contract_active(const struct request *r);
/* Checks a complete OpenAI chat.completion; false with *<fail> a contract_failure. */
bool contract_check_answer(struct request *r, struct bsc_str answer, struct fail_info *fail);
/* Buffered streams: accumulates the deltas of OpenAI frames ("data: {...}\n\n" ...). */
void contract_feed_frames(struct request *r, struct bsc_str frames);
/* Checks what was accumulated; false with *<fail> a contract_failure. */
bool contract_check_stream(struct request *r, struct fail_info *fail);
/* Every stream mode: accumulates what the route's output checks read of the OpenAI frames
 * about to be delivered (deliver_convert). */
void contract_feed_checks(struct request *r, struct bsc_str frames);
/* A pass-through stream that ended well: evaluates the checks on what was sent and records
 * the result (metric, log) only. contract_check_stream calls it for such a stream. */
void contract_record_stream(struct request *r);
/* Forgets the accumulated stream (a new attempt). */
void contract_reset_stream(struct request *r);
void contract_cleanup(struct request *r);

#endif
