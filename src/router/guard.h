/* SPDX-License-Identifier: MIT */
/* guard.h -- idempotency keys, the tool-ledger gate and WORKFLOW_3 records (guard.c);
 * router-private: included by the router's own files only. */
#ifndef BSC_ROUTER_GUARD_H
#define BSC_ROUTER_GUARD_H

#include <stdbool.h>
#include <stddef.h>

struct request;

enum guard_start {
    GUARD_PROCEED = 0, /* nothing to wait for */
    GUARD_WAIT,        /* a store call is running: the request waits in PICK */
    GUARD_STOP         /* answer r->err */
};

/* Idempotency-Key: looks the key up (async). REPLAY, IN_FLIGHT and MISMATCH end the
 * request from the callback; MISS lets it run and marks the record for completion. */
enum guard_start guard_idem_start(struct request *r);
/* Keeps a copy of the bytes sent to the client, for the record. */
void guard_idem_record(struct request *r, const void *p, size_t len);
/* Settles the record once: stores a 2xx answer, or abandons it so a repeat runs again.
 * Delivery calls it before the last byte leaves (r->status and r->termination set);
 * st_done calls it again for requests that ended without a delivery (a no-op otherwise). */
void guard_idem_finish(struct request *r);

/* Before any replay of a write_possible operation: reads its ledger entry (async) and
 * sets r->ledger_blocked when it is started or unknown. */
enum guard_start guard_ledger_check(struct request *r);
/* A partial-output or side-effect-uncertain stop: a log line, a metric and, when the
 * operation id is known, a ledger entry in state unknown for reconciliation. */
void guard_record_uncertain(struct request *r, const char *what);

/* False when a store callback is still due: the request becomes a zombie and the last
 * callback frees it. */
bool guard_can_free(struct request *r);

#endif
