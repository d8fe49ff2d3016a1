/* SPDX-License-Identifier: MIT */
/* attempt.h -- the record of one upstream attempt: which target, why (workflow), how it
 * ended and how long it took. Attempt log lines and metrics are built from these. */
#ifndef BSC_POLICY_ATTEMPT_H
#define BSC_POLICY_ATTEMPT_H

#include <stdint.h>

#include "config/config.h"

#define ATTEMPT_MAX 16 /* hard bound whatever the envelope says */
/* Records a request holds in place: most take one attempt, a failover two. A request that
 * goes further moves its records to the heap (request.c, attempt_slot), so a held stream
 * does not carry room for sixteen. */
#define ATTEMPT_INLINE 2

enum attempt_workflow {
    ATTEMPT_WF_PRIMARY = 0,
    ATTEMPT_WF_RETRY,
    ATTEMPT_WF_EQUIVALENT_FAILOVER,
    ATTEMPT_WF_CROSS_MODEL_FALLBACK,
    ATTEMPT_WF_COUNT
};

enum attempt_outcome {
    ATTEMPT_RUNNING = 0,
    ATTEMPT_OK,        /* a complete answer that was delivered */
    ATTEMPT_COMMITTED, /* a stream whose first byte went to the client */
    ATTEMPT_FAILED,
    ATTEMPT_PARTIAL,   /* a committed stream that broke */
    ATTEMPT_CANCELLED,
    ATTEMPT_OUTCOME_COUNT
};

struct attempt {
    const struct cfg_target *target; /* borrowed from the request's config snapshot */
    enum attempt_workflow workflow;
    enum attempt_outcome outcome;
    const char *kind;   /* static string: the normalized failure kind, or NULL */
    int status;         /* upstream HTTP status, 0 when none */
    uint32_t delay_ms;  /* wait before this attempt */
    const char *delay_why; /* static: "backoff", "retry_after" or NULL */
    uint64_t start_us, end_us;
    const char *circuit; /* static: the target's circuit after the attempt; NULL before */
    char ranking[160]; /* balance: score: the order and scores that chose it, or "" */
    const char *continued_how; /* static: "prefill" | "replay" when it continues a broken
                                  stream (on_stream_failure: continue), else NULL */
    uint64_t continued_bytes;  /* ... the client bytes already sent at its seam */
};

void attempt_begin(struct attempt *a, const struct cfg_target *t, enum attempt_workflow wf,
                   uint64_t now_us);
/* <kind> must be a static string or NULL. */
void attempt_end(struct attempt *a, uint64_t now_us, enum attempt_outcome outcome,
                 const char *kind);
const char *attempt_workflow_name(enum attempt_workflow wf);
const char *attempt_outcome_name(enum attempt_outcome o);

#endif
