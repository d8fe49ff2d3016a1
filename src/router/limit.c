/* SPDX-License-Identifier: MIT */
/* limit.c -- the local limits (limits/limits.h) in the request's life: the client's rpm, tpm
 * and max_concurrency in ADMIT (a 429 before anything goes upstream); each candidate's room,
 * its target's and its provider's, copied into the decision (decide.c skips a candidate
 * without room, moving on as a 429 would); the slots an attempt holds from the decision to
 * its report; and the wait in PICK when no candidate has room and queue_ms allows it:
 * a timer for a rate (its room returns at a known time), and for concurrency a wake-up from
 * the release (WORKER_CMD_CAPACITY to every loop that has waiters), whichever comes first,
 * never past the queue_ms or the deadline. See docs/internals/limits.md. */
#include "router/deliver_note.h"
#include "router/limit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "core/clock.h"
#include "limits/limits.h"
#include "metrics/metrics.h"
#include "router/internal.h"
#include "router/req_error.h"
#include "router/req_wake.h"

/* Both labels are static names (lim_limit_name, literals): scoped by the request's
 * snapshot like its other updates (metrics_inc_scoped), they are found on their pointers. */
static void count(struct request *r, const char *limit, const char *outcome)
{
    if (limit)
        metrics_inc_scoped(r->gw->metrics, r->w->idx, r->cfg ? r->cfg->serial : 0,
                           METRIC_LIMIT_DECISIONS, limit, outcome, NULL, 1);
}

/* One "allowed" per limit the set enforced. */
static void count_allowed(struct request *r, const struct lim_verdict *v, enum lim_subject subj)
{
    for (int k = LIM_RPM; k < LIM_KIND_COUNT; k++)
        if (v->enforced & (1u << k))
            count(r, lim_limit_name(subj, k), "allowed");
}

/* A loop's wake-up handle is closed when it stops (main.c): wake-ups from other loops and
 * that close are serialized, and a closed loop is never woken. Taken only when some loop
 * waits for room. */
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;

void reqlim_wake_loops(void *gateway, uint64_t waiters)
{
    struct gateway *gw = gateway;

    if (!waiters)
        return;
    pthread_mutex_lock(&wake_lock);
    for (unsigned i = 0; i < gw->n_workers && gw->workers; i++) {
        struct worker *w = &gw->workers[i];

        if (!(waiters & (1ull << (i % 64))) || w->lim_closed)
            continue;
        atomic_fetch_or(&w->pending, WORKER_CMD_CAPACITY);
        uv_async_send(&w->wake);
    }
    pthread_mutex_unlock(&wake_lock);
}

/* Wakes every loop with a request waiting on a set that just had room given back. */
static void wake(struct request *r, uint64_t waiters)
{
    reqlim_wake_loops(r->gw, waiters);
}

void reqlim_loop_send(struct worker *w, unsigned cmd)
{
    pthread_mutex_lock(&wake_lock);
    if (!w->lim_closed) {
        atomic_fetch_or(&w->pending, cmd);
        uv_async_send(&w->wake);
    }
    pthread_mutex_unlock(&wake_lock);
}

void reqlim_worker_closing(struct worker *w)
{
    pthread_mutex_lock(&wake_lock);
    w->lim_closed = true;
    pthread_mutex_unlock(&wake_lock);
}

/* How long a request waits for the fleet's answer before its set decides locally. */
static uint64_t lim_fleet_timeout_ms(const struct cfg_target *t)
{
    const struct lim_set *s = t->lim && t->lim->share ? t->lim : t->provider->lim;

    return s && s->share ? s->share->timeout_ms : 50;
}

static uint64_t used_tokens(const struct request *r)
{
    int64_t used = 0;

    if (r->x.usage.input_tokens > 0)
        used += r->x.usage.input_tokens;
    if (r->x.usage.output_tokens > 0)
        used += r->x.usage.output_tokens;
    return used > 0 ? (uint64_t)used : r->input.est_tokens;
}

static void park(struct request *r, struct lim_set *a, struct lim_set *b,
                 const struct cfg_target *t, uint64_t delay_ms);

/* Takes a slot of <s> (the client's or its team's, <subj>) for <r>: PASS with *<held> set,
 * WAIT for the fleet's answer, or REFUSE with the 429 set. */
static enum reqlim_admit admit_set(struct request *r, struct lim_set *s, enum lim_subject subj,
                                   bool *held)
{
    struct lim_verdict v;

    if (*held || !lim_set_active(s))
        return REQLIM_ADMIT_PASS;
    v = lim_acquire(s, r->input.est_tokens, bsc_now_ms());
    if (v.kind == LIM_NONE) {
        *held = true;
        count_allowed(r, &v, subj);
        return REQLIM_ADMIT_PASS;
    }
    if (v.wait_ms == LIM_WAIT_FLEET) { /* the fleet's answer, or its timeout, runs it again */
        park(r, s, NULL, NULL, s->share->timeout_ms + 1);
        return REQLIM_ADMIT_WAIT;
    }
    r->lim.limited_by = lim_limit_name(subj, v.kind);
    count(r, r->lim.limited_by, "rejected");
    req__set_error(r, 429, "rate_limit_error", "rate_limited", "%s '%s' reached its %s limit",
                   subj == LIM_SUBJ_TEAM ? "team" : "client",
                   subj == LIM_SUBJ_TEAM ? r->ident.client->team->id : r->ident.client->id,
                   lim_kind_name(v.kind));
    req__set_error_reason(r, "rate_limited");
    req__set_retry(r, OUTLOOK_TIME, v.wait_ms);
    deliver_set_termination(r, "rate_limited");
    return REQLIM_ADMIT_REFUSE;
}

/* The client's limits, then its team's: a request needs room in both. One the team refuses
 * gives the client's slot back, as if it never came. */
enum reqlim_admit reqlim_admit_client(struct request *r)
{
    struct lim_set *s = r->ident.client ? r->ident.client->lim : NULL;
    struct lim_set *ts = r->ident.client && r->ident.client->team ? r->ident.client->team->lim : NULL;
    enum reqlim_admit a;

    reqlim_resume(r);
    a = admit_set(r, s, LIM_SUBJ_CLIENT, &r->lim.client_held);
    if (a != REQLIM_ADMIT_PASS)
        return a;
    a = admit_set(r, ts, LIM_SUBJ_TEAM, &r->lim.team_held);
    if (a == REQLIM_ADMIT_REFUSE && r->lim.client_held) {
        r->lim.client_held = false;
        wake(r, lim_undo(s, r->input.est_tokens, bsc_now_ms()));
    }
    return a;
}

void reqlim_fill(struct request *r, struct decide_cand *c, uint64_t now_ms)
{
    struct lim_set *ts = c->t->lim, *ps = c->t->provider->lim;
    struct lim_verdict v = {LIM_NONE, 0};
    enum lim_subject subj = LIM_SUBJ_TARGET;

    c->limited_by = NULL;
    c->room_in_ms = 0;
    if (lim_set_active(ts))
        v = lim_peek(ts, r->input.est_tokens, now_ms);
    if (v.kind == LIM_NONE && lim_set_active(ps)) {
        v = lim_peek(ps, r->input.est_tokens, now_ms);
        subj = LIM_SUBJ_PROVIDER;
    }
    if (v.kind == LIM_NONE)
        return;
    c->limited_by = lim_limit_name(subj, v.kind);
    c->room_in_ms = v.wait_ms;
}

/* ---- fair sharing of a target's or provider's room ---- */

/* The client's identity in a fair queue: its limit set, kept across reloads. */
static const void *fair_client(const struct request *r)
{
    return r->ident.client ? (r->ident.client->lim ? (const void *)r->ident.client->lim : (const void *)r->ident.client)
                     : NULL;
}

/* Leaves the fair queue it is in (<served>: it took that set's room), waking the next. */
static void fair_leave(struct request *r, bool served)
{
    if (!r->lim.fair_on)
        return;
    wake(r, lim_fair_leave(r->lim.fair_on, r, served));
    r->lim.fair_on = NULL;
}

/* Whether another waiting request is in turn before <r> for <t>'s room: the limit it waits
 * for (and when <t> has room: -1 when it has now, the next waiting request's take or leave
 * then wakes this one), or NULL. A request in one set's queue is checked in that set only,
 * so two requests queued in a target's and its provider's sets never wait for each other. */
static const char *fair_turn(struct request *r, const struct cfg_target *t, uint64_t now,
                             int64_t *wait_ms)
{
    struct lim_set *sets[2] = {t->lim, t->provider->lim};

    for (int i = 0; i < 2; i++) {
        enum lim_kind k;
        struct lim_verdict v;

        if (r->lim.fair_on && r->lim.fair_on != sets[i])
            continue;
        if ((k = lim_fair_turn(sets[i], r)) == LIM_NONE)
            continue;
        v = lim_peek(sets[i], r->input.est_tokens, now);
        *wait_ms = v.kind != LIM_NONE && v.wait_ms > 0 ? v.wait_ms : -1;
        return lim_limit_name(i ? LIM_SUBJ_PROVIDER : LIM_SUBJ_TARGET, k);
    }
    return NULL;
}

/* Takes a place in the fair queue of the set whose limit <by> stopped the request. */
static void fair_enter(struct request *r, const struct cfg_target *t, const char *by)
{
    for (int subj = LIM_SUBJ_TARGET; subj <= LIM_SUBJ_PROVIDER; subj++) {
        struct lim_set *s = subj == LIM_SUBJ_TARGET ? t->lim : t->provider->lim;

        for (int k = LIM_RPM; k < LIM_KIND_COUNT && by; k++) {
            if (strcmp(lim_limit_name(subj, k), by) != 0 || !lim_set_active(s))
                continue;
            if (r->lim.fair_on != s) {
                fair_leave(r, false);
                if (lim_fair_enter(s, r, fair_client(r),
                                   r->ident.client && r->ident.client->weight ? r->ident.client->weight : 1,
                                   (enum lim_kind)k))
                    r->lim.fair_on = s;
            }
            return;
        }
    }
}

/* Both sets of <t> limit: the turn in each, then the target's take, then the provider's
 * (undoing the target's when the provider refuses). */
static const char *take_both(struct request *r, const struct cfg_target *t, uint64_t now,
                             int64_t *wait_ms, struct lim_verdict *v, struct lim_verdict *pv)
{
    struct lim_set *ts = t->lim, *ps = t->provider->lim;
    const char *later = fair_turn(r, t, now, wait_ms);

    if (later)
        return later;
    *v = lim_acquire(ts, r->input.est_tokens, now);
    if (v->kind != LIM_NONE) {
        *wait_ms = v->wait_ms;
        if (v->wait_ms == LIM_WAIT_FLEET)
            r->lim.fleet_wait = t;
        return lim_limit_name(LIM_SUBJ_TARGET, v->kind);
    }
    *pv = lim_acquire(ps, r->input.est_tokens, now);
    if (pv->kind != LIM_NONE) {
        wake(r, lim_undo(ts, r->input.est_tokens, now));
        *wait_ms = pv->wait_ms;
        if (pv->wait_ms == LIM_WAIT_FLEET)
            r->lim.fleet_wait = t;
        return lim_limit_name(LIM_SUBJ_PROVIDER, pv->kind);
    }
    return NULL;
}

/* At most one set of <t> limits (the usual case): the same steps as take_both, whose calls
 * on the set that does not limit take and answer nothing, with the turn and the take in
 * one hold of the limiting set's lock instead of two. */
static const char *take_one(struct request *r, const struct cfg_target *t, uint64_t now,
                            int64_t *wait_ms, struct lim_verdict *v, struct lim_verdict *pv)
{
    bool prov = lim_set_active(t->provider->lim);
    struct lim_set *s = prov ? t->provider->lim : t->lim;
    enum lim_subject subj = prov ? LIM_SUBJ_PROVIDER : LIM_SUBJ_TARGET;
    struct lim_verdict *sv = prov ? pv : v;
    enum lim_kind behind;

    *sv = lim_fair_acquire(s, r, !r->lim.fair_on || r->lim.fair_on == s, r->input.est_tokens, now,
                           &behind);
    if (behind != LIM_NONE) {
        *wait_ms = sv->kind != LIM_NONE && sv->wait_ms > 0 ? sv->wait_ms : -1;
        return lim_limit_name(subj, behind);
    }
    if (sv->kind == LIM_NONE)
        return NULL;
    if (prov) /* as take_both: the target's (empty) take is undone */
        wake(r, lim_undo(t->lim, r->input.est_tokens, now));
    *wait_ms = sv->wait_ms;
    if (sv->wait_ms == LIM_WAIT_FLEET)
        r->lim.fleet_wait = t;
    return lim_limit_name(subj, sv->kind);
}

const char *reqlim_take(struct request *r, const struct cfg_target *t, int64_t *wait_ms)
{
    struct lim_set *ts = t->lim, *ps = t->provider->lim;
    uint64_t now = bsc_now_ms();
    struct lim_verdict v = {LIM_NONE, 0, 0}, pv = {LIM_NONE, 0, 0};
    const char *later = lim_set_active(ts) && lim_set_active(ps)
                            ? take_both(r, t, now, wait_ms, &v, &pv)
                            : take_one(r, t, now, wait_ms, &v, &pv);

    if (later)
        return later;
    fair_leave(r, r->lim.fair_on == ts || r->lim.fair_on == ps);
    r->lim.held = t;
    r->lim.held_t = v.enforced != 0;
    r->lim.held_p = pv.enforced != 0;
    r->lim.held_tokens = r->input.est_tokens;
    count_allowed(r, &v, LIM_SUBJ_TARGET);
    count_allowed(r, &pv, LIM_SUBJ_PROVIDER);
    return NULL;
}

void reqlim_untake(struct request *r)
{
    const struct cfg_target *t = r->lim.held;

    uint64_t now = bsc_now_ms();

    if (!t)
        return;
    r->lim.held = NULL;
    wake(r, (r->lim.held_t ? lim_undo(t->lim, r->lim.held_tokens, now) : 0) |
                (r->lim.held_p ? lim_undo(t->provider->lim, r->lim.held_tokens, now) : 0));
}

void reqlim_note_moved(struct request *r, const struct decide_in *in,
                       const struct cfg_target *chosen)
{
    for (int tier = 0; tier < TIER_COUNT; tier++) {
        for (size_t k = 0; k < in->tiers[tier].n; k++) {
            const struct decide_cand *c = &in->tiers[tier].c[k];

            if (c->limited_by && c->t != chosen) {
                count(r, c->limited_by, "moved_on");
                return;
            }
        }
    }
}

void reqlim_attempt_done(struct request *r)
{
    const struct cfg_target *t = r->lim.held;
    uint64_t used, now;

    if (!t)
        return;
    r->lim.held = NULL;
    if (!r->lim.held_t && !r->lim.held_p)
        return;
    used = used_tokens(r);
    now = bsc_now_ms();
    wake(r, (r->lim.held_t ? lim_release(t->lim, r->lim.held_tokens, used, now) : 0) |
                (r->lim.held_p ? lim_release(t->provider->lim, r->lim.held_tokens, used, now)
                               : 0));
}

/* ---- the wait for room ---- */

static void list_add(struct request *r)
{
    struct request **head = &r->w->lim_waiting;
    struct request *last = *head;

    while (last && last->lim.q_next) /* short: the requests queued on this loop */
        last = last->lim.q_next;
    r->lim.q_prev = last;
    r->lim.q_next = NULL;
    if (last)
        last->lim.q_next = r;
    else
        *head = r;
}

static void list_remove(struct request *r)
{
    if (r->lim.q_prev)
        r->lim.q_prev->lim.q_next = r->lim.q_next;
    else if (r->w->lim_waiting == r)
        r->w->lim_waiting = r->lim.q_next;
    if (r->lim.q_next)
        r->lim.q_next->lim.q_prev = r->lim.q_prev;
    r->lim.q_prev = r->lim.q_next = NULL;
}

/* Waits for room in <a> (and <b>): a release or the fleet's answer wakes the loop, else the
 * timer after <delay_ms>; <t>: the target whose queue the request is counted in, or NULL. */
static void park(struct request *r, struct lim_set *a, struct lim_set *b,
                 const struct cfg_target *t, uint64_t delay_ms)
{
    bool asking = lim_wait_on(a, r->w->idx);

    if (b)
        asking = lim_wait_on(b, r->w->idx) || asking;
    if (!t && !asking)
        delay_ms = 0; /* the fleet answered before the wait began: look again now */
    if (t) {
        lim_queued(t->lim, +1);
        metrics_gauge_add(r->gw->metrics, r->w->idx, METRIC_QUEUE_DEPTH, t->id, NULL, 1);
    }
    r->lim.waiting = true;
    r->lim.waiting_on = t;
    list_add(r);
    req_wake_timer(r, delay_ms);
}

bool reqlim_wait(struct request *r, const struct decide_out *out)
{
    uint64_t now = bsc_now_ms(), delay;
    const struct cfg_target *t = out->limited;

    if (r->lim.fleet_wait) { /* asked the fleet for room: not a queue, the answer is near */
        t = r->lim.fleet_wait;
        r->lim.fleet_wait = NULL;
        park(r, t->lim, t->provider->lim, NULL, lim_fleet_timeout_ms(t) + 1);
        return true;
    }
    if (!out->queue_ms || !t)
        return false;
    if (!r->lim.queue_until_ms) {
        r->lim.queue_start_ms = now;
        r->lim.queue_until_ms = now + out->queue_ms;
        r->lim.queued_for = out->limited_by;
        count(r, out->limited_by, "queued");
    }
    if (now >= r->lim.queue_until_ms)
        return false;
    fair_enter(r, t, out->limited_by);
    delay = r->lim.queue_until_ms - now;
    if (out->wait_ms >= 0 && (uint64_t)out->wait_ms + 1 < delay)
        delay = (uint64_t)out->wait_ms + 1;
    park(r, t->lim, t->provider->lim, t, delay);
    return true;
}

void reqlim_resume(struct request *r)
{
    const struct cfg_target *t = r->lim.waiting_on;

    if (!r->lim.waiting)
        return;
    r->lim.waiting = false;
    r->lim.waiting_on = NULL;
    list_remove(r);
    req_wake_disarm(r);
    if (!t)
        return; /* waited for the fleet's answer, not in a queue */
    r->lim.queued_ms = bsc_now_ms() - r->lim.queue_start_ms;
    lim_queued(t->lim, -1);
    metrics_gauge_add(r->gw->metrics, r->w->idx, METRIC_QUEUE_DEPTH, t->id, NULL, -1);
}

void reqlim_done(struct request *r)
{
    struct lim_set *s = r->ident.client ? r->ident.client->lim : NULL;
    struct lim_set *ts = r->ident.client && r->ident.client->team ? r->ident.client->team->lim : NULL;

    reqlim_resume(r);
    fair_leave(r, false);
    reqlim_attempt_done(r);
    if (r->lim.team_held) {
        r->lim.team_held = false;
        wake(r, lim_release(ts, r->input.est_tokens, used_tokens(r), bsc_now_ms()));
    }
    if (!r->lim.client_held)
        return;
    r->lim.client_held = false;
    wake(r, lim_release(s, r->input.est_tokens, used_tokens(r), bsc_now_ms()));
}

void reqlim_wake(struct worker *w)
{
    struct request *batch = w->lim_waiting;

    /* Oldest first; a request still without room queues again at the new list's end. */
    w->lim_waiting = NULL;
    if (batch)
        batch->lim.q_prev = NULL;
    while (batch) {
        struct request *r = batch;

        batch = r->lim.q_next;
        if (batch)
            batch->lim.q_prev = NULL;
        r->lim.q_prev = r->lim.q_next = NULL;
        if (r->lim.waiting && (r->m.state == REQ_ST_PICK || r->m.state == REQ_ST_ADMIT))
            req_wake_run(r);
    }
}

void reqlim_refused_by(struct request *r, const char *limit)
{
    r->lim.limited_by = limit;
}
