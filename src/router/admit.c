/* SPDX-License-Identifier: MIT */
/* admit.c -- ADMIT, the one place that decides whether a request may start: an ordered list
 * of checks, each answering now (an error, or a replayed answer), waiting for an event, or
 * passing. Traffic governance (client keys, limits, budgets, queues) is added here as more
 * checks. After a failed attempt the request comes back through ADMIT with the replay list
 * (the tool ledger) before PICK decides anything. Checks may be called again after a wait,
 * so each one is safe to repeat. See docs/internals/request-lifecycle.md. */
#include "router/admit.h"

#include <stdio.h>

#include "core/clock.h"
#include "core/log.h"
#include "ledger/ledger.h"
#include "router/cache_req.h"
#include "router/deliver_note.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/limit.h"
#include "router/req_error.h"
#include "router/spend.h"
#include "health/hstate.h"
#include "store/store.h"

typedef enum admit_verdict admit_check_fn(struct request *r);

struct admit_check {
    const char *name; /* for the debug log */
    admit_check_fn *check;
};

/* A select route none of whose rules took the request (req_chat_start kept it). */
static enum admit_verdict check_route_selected(struct request *r)
{
    if (!r->route->n_select)
        return ADMIT_PASS;
    req__set_error(r, 400, "invalid_request_error", "no_route_selected",
                   "no rule of route '%s' takes this request", r->route->id);
    return ADMIT_REFUSE;
}

/* X-Bascule-Operation-Id ties the call to an operation of the tool ledger. */
static enum admit_verdict check_operation_id(struct request *r)
{
    struct bsc_str id = srv_req_header(r->sreq, BSC_STR("x-bascule-operation-id"));

    if (!id.p)
        return ADMIT_PASS;
    if (!ledger_op_id_valid(id)) {
        req__set_error(r, 400, "invalid_request_error", "invalid_operation_id",
                       "X-Bascule-Operation-Id must be 1..%d characters of [A-Za-z0-9._:~-]",
                       LEDGER_OP_ID_MAX);
        return ADMIT_REFUSE;
    }
    guard_set_op_id(r, id);
    return ADMIT_PASS;
}

/* The client's budget (clients.<id>.budget): spent, 429 budget_exceeded; the book may
 * first need the period's figure from the store (router/spend.c). */
static enum admit_verdict check_budget(struct request *r)
{
    switch (spend_admit(r)) {
    case 1: return ADMIT_WAIT;
    case 2: return ADMIT_REFUSE;
    default: return ADMIT_PASS;
    }
}

/* store.on_unavailable: reject. While the shared store cannot be reached, nothing is served
 * on local state alone: limits and circuits would no longer hold across the instances. */
static enum admit_verdict check_store_available(struct request *r)
{
    const char *why = NULL;

    if (r->cfg->store.kind != CFG_STORE_REDIS || r->cfg->store.on_unavailable != CFG_STORE_REJECT ||
        store_is_up(r->gw->store, &why))
        return ADMIT_PASS;
    req__set_error(r, 503, "server_error", "store_unavailable",
                   "the shared state store is unavailable (%s) and store.on_unavailable is "
                   "reject; nothing was sent upstream and it is safe to retry",
                   why ? why : "unreachable");
    req__set_retry(r, OUTLOOK_TIME, OUTLOOK_DEFAULT_RETRY_MS);
    deliver_set_termination(r, "store_unavailable");
    return ADMIT_REFUSE;
}

/* The client's rpm, tpm and max_concurrency (limit.c): a 429 before anything is looked up
 * or sent upstream. */
static enum admit_verdict check_client_limits(struct request *r)
{
    switch (reqlim_admit_client(r)) {
    case REQLIM_ADMIT_WAIT: return ADMIT_WAIT;
    case REQLIM_ADMIT_REFUSE: return ADMIT_REFUSE;
    default: return ADMIT_PASS;
    }
}

/* Starts the Idempotency-Key lookup; check_idempotency acts on its answer. Refuses a key
 * that is not valid, or a store that cannot take the lookup. */
static enum admit_verdict check_idempotency_lookup(struct request *r)
{
    return guard_idem_start(r) == GUARD_STOP ? ADMIT_REFUSE : ADMIT_PASS;
}

/* The request counts towards the retry budget once it was not refused for its headers. */
static enum admit_verdict check_retry_budget(struct request *r)
{
    hstate_budget_first(r->gw->hs, bsc_now_ms());
    return ADMIT_PASS;
}

static enum admit_verdict check_idempotency(struct request *r)
{
    switch (guard_idem_verdict(r)) {
    case GUARD_WAIT: return ADMIT_WAIT;
    case GUARD_STOP: return ADMIT_REFUSE;
    case GUARD_ANSWERED: return ADMIT_ANSWERED;
    case GUARD_PROCEED: break;
    }
    return ADMIT_PASS;
}

/* The response cache (routes.<r>.cache): last, once the request is admitted and any
 * Idempotency-Key settled; a hit is answered here and nothing goes upstream. */
static enum admit_verdict check_cache(struct request *r)
{
    switch (reqcache_lookup(r)) {
    case REQCACHE_WAIT: return ADMIT_WAIT;
    case REQCACHE_ANSWERED: return ADMIT_ANSWERED;
    default: return ADMIT_PASS;
    }
}

/* Before any replay of a write_possible operation: its ledger entry must not say it may
 * already have acted. */
static enum admit_verdict check_ledger(struct request *r)
{
    if (guard_ledger_check(r) == GUARD_WAIT)
        return ADMIT_WAIT;
    if (!r->g.ledger_blocked)
        return ADMIT_PASS;
    req__set_error(r, 409, "invalid_request_error", "reconcile_required",
                   "operation '%s' may already have acted (its ledger entry is %s): "
                   "reconcile it before retrying; the gateway will not replay it",
                   r->g.op_id, r->g.ledger_blocked);
    deliver_set_termination(r, "reconcile_required");
    guard_record_uncertain(r, "side_effect_uncertain");
    return ADMIT_REFUSE;
}

/* In order: the checks on the request's own headers answer at once, before anything is
 * counted or looked up in the store. */
static const struct admit_check admit_start[] = {
    {"route_selected", check_route_selected},
    {"operation_id", check_operation_id},
    {"store_available", check_store_available},
    {"client_limits", check_client_limits},
    {"budget", check_budget},
    {"idempotency_lookup", check_idempotency_lookup},
    {"retry_budget", check_retry_budget},
    {"idempotency", check_idempotency},
    {"cache", check_cache},
};

static const struct admit_check admit_replay[] = {
    {"ledger", check_ledger},
};

enum admit_verdict admit_run(struct request *r, unsigned *at)
{
    const struct admit_check *list = r->att.n ? admit_replay : admit_start;
    unsigned n = r->att.n ? BSC_ARRAY_LEN(admit_replay) : BSC_ARRAY_LEN(admit_start);

    for (; *at < n; ++*at) {
        enum admit_verdict v = list[*at].check(r);

        if (v != ADMIT_PASS) {
            LOG_DEBUG("%s: admission check %s: %s", r->ident.id, list[*at].name,
                      v == ADMIT_WAIT ? "waits" : "answers");
            return v;
        }
    }
    return ADMIT_PASS;
}
