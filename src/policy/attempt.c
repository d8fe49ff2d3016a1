/* SPDX-License-Identifier: MIT */
/* attempt.c -- attempt records and their names. */
#include "policy/attempt.h"

static const char *const wf_names[ATTEMPT_WF_COUNT] = {
    [ATTEMPT_WF_PRIMARY] = "primary",
    [ATTEMPT_WF_RETRY] = "retry",
    [ATTEMPT_WF_EQUIVALENT_FAILOVER] = "equivalent_failover",
    [ATTEMPT_WF_CROSS_MODEL_FALLBACK] = "cross_model_fallback",
};

static const char *const outcome_names[ATTEMPT_OUTCOME_COUNT] = {
    [ATTEMPT_RUNNING] = "running",   [ATTEMPT_OK] = "ok",
    [ATTEMPT_COMMITTED] = "committed", [ATTEMPT_FAILED] = "failed",
    [ATTEMPT_PARTIAL] = "partial",   [ATTEMPT_CANCELLED] = "cancelled",
};

void attempt_begin(struct attempt *a, const struct cfg_target *t, enum attempt_workflow wf,
                   uint64_t now_us)
{
    *a = (struct attempt){.target = t, .workflow = wf, .start_us = now_us};
}

void attempt_end(struct attempt *a, uint64_t now_us, enum attempt_outcome outcome,
                 const char *kind)
{
    a->end_us = now_us;
    a->outcome = outcome;
    if (kind)
        a->kind = kind;
}

const char *attempt_workflow_name(enum attempt_workflow wf)
{
    return (unsigned)wf < ATTEMPT_WF_COUNT ? wf_names[wf] : "unknown";
}

const char *attempt_outcome_name(enum attempt_outcome o)
{
    return (unsigned)o < ATTEMPT_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}
