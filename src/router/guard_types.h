/* SPDX-License-Identifier: MIT */
/* guard_types.h -- struct guard, struct request's member <g> (guard.c writes it); types only:
 * the functions are in guard.h. Router-private. */
#ifndef BSC_ROUTER_GUARD_TYPES_H
#define BSC_ROUTER_GUARD_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "ledger/idempotency.h"

/* What guard.c keeps per request: the idempotency record, the operation id and what its
 * ledger entry says, and the store calls still running. guard.c alone writes it. */
struct guard {
    unsigned store_ops;          /* store calls whose callback is still due */
    bool zombie;                 /* done while a store call was running: freed by it */
    bool waiting_store;          /* a lookup runs: the request waits for its callback */
    char idem_key[256], idem_scope[40];
    uint64_t idem_claim;
    bool idem_known;             /* the lookup answered: idem_err / idem_decision hold it */
    enum bsc_err idem_err;
    enum idem_decision idem_decision;
    const struct idem_answer *idem_replay; /* borrowed from the store, during its callback */
    bool idem_active, idem_overflow;
    bool idem_settling;          /* a complete answer waits for its record to be stored */
    struct bsc_buf idem_copy;    /* owned: the bytes sent, for the idempotency record */
    char op_id[129];             /* X-Bascule-Operation-Id, or "" */
    unsigned ledger_checked;     /* n_attempts when the ledger was last read */
    const char *ledger_blocked;  /* static: why a replay is refused, or NULL */
    char uncertain_id[160];      /* the WORKFLOW_3 ledger entry being written */
};

#endif
