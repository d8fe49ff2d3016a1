/* SPDX-License-Identifier: MIT */
/* limits_fleet.c -- a limit set's share of the fleet's limits (store.kind: redis). Tokens
 * and concurrency slots come from buckets and leases shared by every gateway process; a set
 * keeps what it was granted and spends it without asking again. A grant is a slice: one
 * token or slot when the limit is small (exact: nothing is held that another process could
 * have used), capacity / (instances x LIM_SLICES) when it is large (at most one slice per
 * process taken early: the precision given up). Spare slots beyond a slice go back at
 * release (local or not), and at the second renewal that finds them unused. No answer within store.timeout_ms, or a share that is down: the set decides on
 * its own counters, with the caps divided by store.instances. See docs/internals/redis.md. */
#include "limits/limits_fleet.h"

#include <inttypes.h>
#include <math.h>

#include "core/log.h"

#define LIM_SLICES 16            /* a large limit is taken in this many slices per process */
#define LIM_LOCAL_MS 1000        /* after a failed or overdue ask: local caps this long */
#define LIM_FULL_POLL_MS 25      /* a full lease is asked again after this */

static uint64_t slice(const struct lim_set *s, uint32_t cap)
{
    uint64_t n = cap / ((uint64_t)(s->share->instances ? s->share->instances : 1) * LIM_SLICES);

    return n ? n : 1;
}

bool lim__fleet_on(struct lim_set *s, uint64_t now_ms)
{
    struct lim_fleet *f = &s->fl;

    if (!s->share || !atomic_load_explicit(&s->share->up, memory_order_relaxed) ||
        now_ms < f->local_until)
        return false;
    for (int k = LIM_RPM; k < LIM_KIND_COUNT; k++) {
        /* <now_ms> was read before the lock: it may be a little before an ask another
         * worker just made, and that ask is not overdue (no wrap-around). */
        if ((f->asking & (1u << k)) && now_ms > f->asked_at[k] &&
            now_ms - f->asked_at[k] >= s->share->timeout_ms) {
            f->asking = 0; /* a late answer still adds what was granted */
            f->local_until = now_ms + LIM_LOCAL_MS;
            LOG_WARN("shared limits: %c:%s decided locally for %d ms (caps divided by "
                     "store.instances): Redis did not answer an ask within %" PRIu32 " ms",
                     s->subject, s->id ? s->id : "", LIM_LOCAL_MS, s->share->timeout_ms);
            return false;
        }
    }
    return true;
}

static uint32_t divided(uint32_t cap, uint32_t n)
{
    return !cap ? 0 : cap / n ? cap / n : 1;
}

struct lim_caps lim__local_caps(const struct lim_set *s, struct lim_caps c)
{
    uint32_t n = s->share && s->share->instances ? s->share->instances : 1;

    return (struct lim_caps){divided(c.rpm, n), divided(c.tpm, n),
                             c.conc_own ? c.conc : divided(c.conc, n), c.conc_own,
                             divided(lim_burst(c.rpm, c.rpm_burst), n),
                             divided(lim_burst(c.tpm, c.tpm_burst), n)};
}

enum room { ROOM_HAVE, ROOM_ASK, ROOM_WAIT };

/* Whether <have> covers <need> of a rate, or when the bucket has room again (<wait>). */
static enum room rate_room(double have, uint64_t empty_until, uint64_t need, uint64_t now_ms,
                           int64_t *wait)
{
    if (have >= (double)need)
        return ROOM_HAVE;
    if (now_ms < empty_until) {
        *wait = (int64_t)(empty_until - now_ms);
        return ROOM_WAIT;
    }
    return ROOM_ASK;
}

static void ask(struct lim_set *s, struct lim__asks *asks, enum lim_kind kind, double missing,
                uint32_t cap, uint32_t burst, uint64_t now_ms)
{
    uint64_t need = (uint64_t)ceil(missing), want = slice(s, cap);

    if (kind != LIM_CONC && want > lim_burst(cap, burst))
        want = lim_burst(cap, burst); /* never more than the rate admits at once */
    if (s->fl.asking & (1u << kind))
        return; /* one ask per limit at a time: its answer wakes every waiter */
    s->fl.asking |= 1u << kind;
    s->fl.asked_at[kind] = now_ms;
    asks->a[asks->n].kind = kind;
    asks->a[asks->n].need = need ? need : 1;
    asks->a[asks->n].want = want > need ? want : need;
    asks->a[asks->n].burst = burst;
    asks->a[asks->n++].cap = cap;
}

/* The longest known wait wins, as in the local check: room returns when every limit has. */
static void worse(struct lim_verdict *v, enum lim_kind k, int64_t wait)
{
    if (v->kind == LIM_NONE || v->wait_ms == LIM_WAIT_FLEET || wait > v->wait_ms)
        *v = (struct lim_verdict){k, wait, v->enforced};
}

struct lim_verdict lim__fleet_check(struct lim_set *s, struct lim_caps c, uint64_t tokens,
                                    uint64_t now_ms, struct lim__asks *asks)
{
    struct lim_verdict v = {LIM_NONE, 0, 0};
    struct lim_fleet *f = &s->fl;
    uint64_t tneed = tokens < c.tpm ? tokens : c.tpm;
    enum room rr = ROOM_HAVE, tr = ROOM_HAVE, cr = ROOM_HAVE;
    int64_t w = 0;

    v.enforced = (c.rpm ? 1u << LIM_RPM : 0) | (c.tpm ? 1u << LIM_TPM : 0) |
                 (c.conc ? 1u << LIM_CONC : 0);
    if (c.rpm && (rr = rate_room(f->req, f->req_empty_until, 1, now_ms, &w)) == ROOM_WAIT)
        worse(&v, LIM_RPM, w);
    if (c.tpm && tneed &&
        (tr = rate_room(f->tok, f->tok_empty_until, tneed, now_ms, &w)) == ROOM_WAIT)
        worse(&v, LIM_TPM, w);
    if (c.conc && c.conc_own && s->inflight >= c.conc)
        worse(&v, LIM_CONC, -1); /* this process's own cap: as a local limit */
    else if (c.conc && !c.conc_own && s->inflight >= f->slots)
        cr = now_ms < f->conc_full_until ? ROOM_WAIT : ROOM_ASK;
    if (cr == ROOM_WAIT)
        worse(&v, LIM_CONC, (int64_t)(f->conc_full_until - now_ms));
    if (v.kind != LIM_NONE || !asks)
        return v; /* out of room, or a peek: what is not granted yet is presumed there */
    if (rr == ROOM_ASK)
        ask(s, asks, LIM_RPM, 1.0 - f->req, c.rpm, c.rpm_burst, now_ms);
    if (tr == ROOM_ASK)
        ask(s, asks, LIM_TPM, (double)tneed - f->tok, c.tpm, c.tpm_burst, now_ms);
    if (cr == ROOM_ASK)
        ask(s, asks, LIM_CONC, (double)(s->inflight + 1 - f->slots), c.conc, 0, now_ms);
    if (rr == ROOM_ASK || tr == ROOM_ASK || cr == ROOM_ASK)
        v = (struct lim_verdict){rr == ROOM_ASK ? LIM_RPM : tr == ROOM_ASK ? LIM_TPM : LIM_CONC,
                                 LIM_WAIT_FLEET, v.enforced};
    return v;
}

void lim__fleet_take(struct lim_set *s, struct lim_caps c, uint64_t tokens)
{
    if (c.rpm)
        s->fl.req -= 1.0;
    if (c.tpm)
        s->fl.tok -= (double)(tokens < c.tpm ? tokens : c.tpm);
}

void lim__fleet_untake(struct lim_set *s, struct lim_caps c, uint64_t tokens)
{
    if (c.rpm)
        s->fl.req += 1.0;
    if (c.tpm)
        s->fl.tok += (double)(tokens < c.tpm ? tokens : c.tpm);
}

uint32_t lim__fleet_settle(struct lim_set *s, struct lim_caps c, uint64_t estimated,
                           uint64_t used)
{
    struct lim_fleet *f = &s->fl;

    if (c.tpm && used != estimated) {
        f->tok += (double)(estimated < c.tpm ? estimated : c.tpm) - (double)used;
        if (f->tok < -(double)c.tpm)
            f->tok = -(double)c.tpm; /* a debt the next asks pay */
    }
    return lim__fleet_spare(s, c);
}

/* The slots held beyond those in flight and the slice of spare ones a set may keep. */
static uint32_t excess(const struct lim_set *s, struct lim_caps c)
{
    uint64_t keep = c.conc && !c.conc_own ? slice(s, c.conc) - 1 : 0;

    return s->fl.slots > s->inflight + keep ? (uint32_t)(s->fl.slots - s->inflight - keep) : 0;
}

/* Takes <n> slots off the set; the fleet counts them until their give is sent. */
static uint32_t take_off(struct lim_set *s, uint32_t n)
{
    s->fl.slots -= n;
    s->fl.giving += n;
    return n;
}

uint32_t lim__fleet_spare(struct lim_set *s, struct lim_caps c)
{
    return take_off(s, excess(s, c));
}

uint32_t lim__fleet_idle(struct lim_set *s, struct lim_caps c)
{
    uint32_t n = excess(s, c);

    if (!n || !s->fl.spare_seen) {
        s->fl.spare_seen = n > 0; /* maybe a grant its waiters have not used yet */
        return 0;
    }
    s->fl.spare_seen = false;
    return take_off(s, n);
}

void lim__fleet_send(struct lim_set *s, const struct lim__asks *asks, uint32_t slots)
{
    for (unsigned i = 0; asks && i < asks->n; i++)
        s->share->ask(s->share, s, asks->a[i].kind, asks->a[i].need, asks->a[i].want,
                      asks->a[i].cap, asks->a[i].burst);
    if (slots)
        s->share->give(s->share, s, slots);
}

/* ---- the answers, on the share's thread ---- */

static void wake_waiters(struct lim_set *s)
{
    uint64_t w = s->waiters;

    s->waiters = 0;
    pthread_mutex_unlock(&s->mu);
    if (w && s->share->wake)
        s->share->wake(s->share->wake_ctx, w);
}

void lim_fleet_granted(struct lim_set *s, enum lim_kind kind, uint64_t grant, int64_t wait_ms,
                       uint64_t now_ms)
{
    struct lim_fleet *f = &s->fl;
    uint64_t until = now_ms + (uint64_t)(wait_ms > 0 ? wait_ms : 1);

    pthread_mutex_lock(&s->mu);
    f->asking &= ~(1u << kind);
    if (kind == LIM_RPM && grant)
        f->req += (double)grant;
    else if (kind == LIM_RPM)
        f->req_empty_until = until;
    else if (kind == LIM_TPM && grant)
        f->tok += (double)grant;
    else if (kind == LIM_TPM)
        f->tok_empty_until = until;
    else if (kind == LIM_CONC && grant)
        f->slots += (uint32_t)grant;
    else if (kind == LIM_CONC)
        f->conc_full_until = now_ms + LIM_FULL_POLL_MS;
    wake_waiters(s);
}

void lim_fleet_failed(struct lim_set *s, enum lim_kind kind, uint64_t now_ms)
{
    pthread_mutex_lock(&s->mu);
    s->fl.asking &= ~(1u << kind);
    s->fl.local_until = now_ms + LIM_LOCAL_MS;
    wake_waiters(s);
}

uint32_t lim_fleet_held(struct lim_set *s, bool *exact)
{
    uint32_t n;

    pthread_mutex_lock(&s->mu);
    n = s->fl.slots + s->fl.giving;
    *exact = s->fl.taking == 0;
    pthread_mutex_unlock(&s->mu);
    return n;
}

void lim_fleet_gave(struct lim_set *s, uint32_t slots)
{
    pthread_mutex_lock(&s->mu);
    s->fl.giving -= slots < s->fl.giving ? slots : s->fl.giving;
    pthread_mutex_unlock(&s->mu);
}
