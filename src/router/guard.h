/* SPDX-License-Identifier: MIT */
/* guard.h -- idempotency keys, the tool-ledger gate and WORKFLOW_3 records (guard.c);
 * router-private: included by the router's own files only. */
#ifndef BSC_ROUTER_GUARD_H
#define BSC_ROUTER_GUARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "ledger/idempotency.h"
#include "router/guard_types.h"

struct request;

enum guard_start {
    GUARD_PROCEED = 0, /* nothing to wait for */
    GUARD_WAIT,        /* a store call is running: the request waits in ADMIT */
    GUARD_STOP,        /* answer r->err.reply */
    GUARD_ANSWERED     /* the client has its answer (an idempotent replay): done */
};

/* Idempotency-Key: looks the key up (async); its callback records the answer and runs the
 * machine, which asks guard_idem_verdict. */
enum guard_start guard_idem_start(struct request *r);
/* What the lookup said, once its callback ran: WAIT while it runs, STOP (r->err.reply set: store
 * unavailable, key in flight or reused), ANSWERED (the stored answer was replayed), or
 * PROCEED (no key, or a miss: the request runs and its answer will be recorded). */
enum guard_start guard_idem_verdict(struct request *r);
/* Keeps a copy of the bytes sent to the client, for the record. */
void guard_idem_record(struct request *r, const void *p, size_t len);
/* Settles the record once, without waiting: stores a 2xx answer, or abandons it so a repeat
 * runs again. Delivery calls it before the last byte leaves (r->status and r->termination
 * set) when guard_idem_settle did not; st_done calls it again for requests that ended
 * without a delivery (a no-op otherwise). */
void guard_idem_finish(struct request *r);

/* Settles the record of a complete answer (its bytes recorded, r->status and r->termination
 * set) and waits for the store to act: WAIT while it works (its callback runs the machine),
 * PROCEED once it acknowledged or failed, or when there is no record. The answer goes out
 * after it, so a repeat sent once the client has read it finds the record settled on any
 * instance; a failed or timed-out store call costs the record, never the answer. */
enum guard_start guard_idem_settle(struct request *r);

/* Before any replay of a write_possible operation: reads its ledger entry (async) and
 * sets r->ledger_blocked when it is started or unknown. */
enum guard_start guard_ledger_check(struct request *r);
/* A partial-output or side-effect-uncertain stop: a log line, a metric and, when the
 * operation id is known, a ledger entry in state unknown for reconciliation. */
void guard_record_uncertain(struct request *r, const char *what);

/* False when a store callback is still due: the request becomes a zombie and the last
 * callback frees it. */
bool guard_can_free(struct request *r);
/* The guard's side of a new request (the bounded copy of the bytes sent), and of a request
 * being closed (the copy released). */
void guard_init(struct request *r);
void guard_release_copy(struct request *r);
/* The operation id the client named (X-Bascule-Operation-Id), already checked. */
void guard_set_op_id(struct request *r, struct bsc_str id);
/* The zombie rule's two halves, for every store call a request makes: begin before the
 * call; end first thing in its callback -- false when the client left meanwhile (the last
 * callback freed the request): the callback must return at once. */
void guard_op_begin(struct request *r);
bool guard_op_end(struct request *r);

#endif
