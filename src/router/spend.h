/* SPDX-License-Identifier: MIT */
/* spend.h -- client budgets (clients.<id>.budget): what each client spent in its current
 * UTC period, kept in an in-process book in front of the store's spend records, the ADMIT
 * check that refuses a client whose budget is spent (429 budget_exceeded), and the
 * accounting of each answer's cost. See docs/internals/spend.md. */
#ifndef BSC_ROUTER_SPEND_H
#define BSC_ROUTER_SPEND_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "config/config.h"
#include "core/err.h"
#include "store/store.h"
#include "router/spend_types.h"

struct request;
struct spend_book;  /* process-wide, shared by every worker; its own mutex */
struct spend_entry; /* one client's line in the book; lives as long as the book */

/* Figures from a shared store (Redis) older than this are read again before a check. */
#define SPEND_FRESH_MS 1000

/* The start of the budget period of kind <p> that holds <now_ms> (ms since the epoch), in
 * UTC: midnight for a day, midnight of the 1st for a month, 0 for a total. Pure. */
uint64_t spend_period_start(enum cfg_period p, uint64_t now_ms);
/* How long the store must keep a record of period kind <p> after its last change: the
 * period's length plus a day (a month: 32 days); 0 (kept) for a total. Pure. */
uint64_t spend_period_ttl_ms(enum cfg_period p);

struct spend_book *spend_book_new(void);
void spend_book_free(struct spend_book *b);

/* ADMIT: 0 passes, 1 waits for the store (the machine runs again on its answer), 2 refuses
 * (r->err.reply is the 429 budget_exceeded). A request without a client always passes. */
int spend_admit(struct request *r);
/* Adds <usd>, what an attempt of <r> cost, to its client's spend (book and store). */
void spend_record(struct request *r, double usd);
/* DONE: the request no longer counts as in flight for its client and its hold is given
 * back (on every path: answered, refused, failed, its client gone). Safe to call twice. */
void spend_release(struct request *r);

/* The answer is delivered and charged: what is left of <r>'s hold is given back now, not at
 * DONE, so that it is in the store's queue before the client can send its next request
 * (spend_release then has only the in-flight count to undo). */
void spend_settle(struct request *r);

/* What the book knows of client <id> for a period of kind <p> at <now_ms>. */
struct spend_view {
    bool known;        /* the period's spend is loaded in the book */
    double usd;        /* when <known> */
    uint32_t inflight; /* the client's requests admitted and not yet done */
    uint64_t last_used_ms; /* wall time of its last request on this instance (0: none) */
};
void spend_peek(struct spend_book *b, const char *id, enum cfg_period p, uint64_t now_ms,
                struct spend_view *out);
/* Sets client <id>'s spend of its current period to 0, in the book at once and in the store
 * (<cb> says when it is durable). Returns the store's error; the book is reset regardless. */
enum bsc_err spend_reset(struct spend_book *b, struct store *st, uv_loop_t *loop,
                         const char *id, enum cfg_period p, uint64_t now_ms,
                         store_spend_cb *cb, void *ud);

#endif
