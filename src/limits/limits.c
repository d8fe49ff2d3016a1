/* SPDX-License-Identifier: MIT */
/* limits.c -- rates (GCRA: a rate plus a burst) and concurrency counters for client, target
 * and provider limits (limits.h). Each set is locked on its own for a few dozen instructions;
 * a set without caps is never locked. A rate admits its burst at once, then one every
 * interval, 60 s / (cap - burst + 1): so no 60 s window ever holds more than cap, and no
 * window shorter than an interval more than the burst. */
#include "limits/limits.h"
#include "limits/limits_fleet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/str.h"

#define LIM_MINUTE_NS 60000000000ull
#define LIM_NS_PER_MS 1000000ull

uint32_t lim_burst(uint32_t cap, uint32_t burst)
{
    if (burst)
        return burst < cap ? burst : cap;
    return cap / 12 ? cap / 12 : 1;
}

uint64_t lim_rate_interval_ns(uint32_t cap, uint32_t burst)
{
    uint64_t rate = cap ? (uint64_t)cap - lim_burst(cap, burst) + 1 : 0;

    if (!rate)
        return 0;
    return (LIM_MINUTE_NS + rate - 1) / rate;
}

/* a x b, saturated (a debt or a burst far beyond any clock). */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / 4 / b ? UINT64_MAX / 4 : a * b;
}

int64_t lim_rate_wait_ms(const struct lim_rate *r, uint32_t cap, uint32_t burst, uint64_t n,
                         uint64_t now_ms)
{
    uint64_t now = now_ms * LIM_NS_PER_MS, t = lim_rate_interval_ns(cap, burst);
    uint64_t b = lim_burst(cap, burst), start = r->tat_ns > now ? r->tat_ns : now, need, room;

    if (!cap || !n)
        return 0;
    n = n < cap ? n : cap; /* a request above the minute's limit counts as the whole minute */
    if (n > b) /* larger than the burst: alone, once the rate is idle */
        need = start, room = now;
    else
        need = start + mul_sat(n, t), room = now + mul_sat(b, t);
    return need <= room ? 0 : (int64_t)((need - room + LIM_NS_PER_MS - 1) / LIM_NS_PER_MS);
}

void lim_rate_take(struct lim_rate *r, uint32_t cap, uint32_t burst, uint64_t n,
                   uint64_t now_ms)
{
    uint64_t now = now_ms * LIM_NS_PER_MS;

    if (!cap)
        return;
    n = n < cap ? n : cap;
    r->tat_ns = (r->tat_ns > now ? r->tat_ns : now) + mul_sat(n, lim_rate_interval_ns(cap, burst));
}

void lim_rate_correct(struct lim_rate *r, uint32_t cap, uint32_t burst, int64_t delta,
                      uint64_t now_ms)
{
    uint64_t now = now_ms * LIM_NS_PER_MS, t = lim_rate_interval_ns(cap, burst), d;

    if (!cap || !delta)
        return;
    d = mul_sat(delta > 0 ? (uint64_t)delta : (uint64_t)-delta, t);
    if (delta > 0) {
        r->tat_ns = (r->tat_ns > now ? r->tat_ns : now) + d;
        if (r->tat_ns > now + LIM_MINUTE_NS)
            r->tat_ns = now + LIM_MINUTE_NS; /* a debt at most a minute deep */
    } else {
        r->tat_ns = r->tat_ns > now + d ? r->tat_ns - d : now;
    }
}

static uint32_t scaled(uint32_t cap, double factor)
{
    double v = floor(cap * factor);

    return !cap ? 0 : v < 1 ? 1 : (uint32_t)v;
}

static struct lim_caps effective(const struct lim_set *s)
{
    struct lim_caps c = s->caps;
    uint32_t burst = lim_burst(c.rpm, c.rpm_burst);

    c.rpm = scaled(c.rpm, s->factor);
    c.rpm_burst = s->factor < 1.0 && c.rpm ? lim_burst(c.rpm, scaled(burst, s->factor))
                                            : c.rpm_burst;
    c.conc = scaled(c.conc, s->factor);
    return c;
}

void lim_set_init(struct lim_set *s, struct lim_caps caps)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->caps = caps;
    s->factor = 1.0;
    atomic_init(&s->active, caps.rpm || caps.tpm || caps.conc);
}

void lim_set_destroy(struct lim_set *s)
{
    lim_fair_free(s);
    pthread_mutex_destroy(&s->mu);
}

void lim_set_configure(struct lim_set *s, struct lim_caps caps)
{
    pthread_mutex_lock(&s->mu);
    s->caps = caps;
    atomic_store_explicit(&s->active, caps.rpm || caps.tpm || caps.conc, memory_order_relaxed);
    pthread_mutex_unlock(&s->mu);
}

void lim_set_factor(struct lim_set *s, double factor)
{
    factor = factor < 0.01 ? 0.01 : factor > 1.0 ? 1.0 : factor;
    pthread_mutex_lock(&s->mu);
    s->factor = factor;
    pthread_mutex_unlock(&s->mu);
}

struct lim_caps lim_set_effective(struct lim_set *s)
{
    struct lim_caps c;

    pthread_mutex_lock(&s->mu);
    c = effective(s);
    pthread_mutex_unlock(&s->mu);
    return c;
}

bool lim_set_active(const struct lim_set *s)
{
    return s && atomic_load_explicit(&((struct lim_set *)s)->active, memory_order_relaxed);
}

/* The caps the set enforces now, and whether on the fleet's grants (<fleet>). */
static struct lim_caps mode(struct lim_set *s, uint64_t now_ms, bool *fleet)
{
    struct lim_caps c = effective(s);

    *fleet = s->share && lim__fleet_on(s, now_ms);
    return s->share && !*fleet ? lim__local_caps(s, c) : c;
}

/* The limit in the way, the caller holding the lock; buckets brought to <now_ms>. The
 * reported wait is the longest: capacity returns when every limit has room. */
static struct lim_verdict check_local(struct lim_set *s, struct lim_caps c, uint64_t tokens,
                                      uint64_t now_ms)
{
    struct lim_verdict v = {LIM_NONE, 0, 0};
    unsigned enforced = (c.rpm ? 1u << LIM_RPM : 0) | (c.tpm ? 1u << LIM_TPM : 0) |
                        (c.conc ? 1u << LIM_CONC : 0);
    int64_t w;

    if (c.rpm && (w = lim_rate_wait_ms(&s->req, c.rpm, c.rpm_burst, 1, now_ms)) > 0)
        v = (struct lim_verdict){LIM_RPM, w};
    if (c.tpm && tokens && (w = lim_rate_wait_ms(&s->tok, c.tpm, c.tpm_burst, tokens, now_ms)) > 0 &&
        w > v.wait_ms)
        v = (struct lim_verdict){LIM_TPM, w};
    if (c.conc && s->inflight >= c.conc && v.kind == LIM_NONE)
        v = (struct lim_verdict){LIM_CONC, -1, 0};
    v.enforced = enforced;
    return v;
}

/* lim_peek's verdict, the caller holding the lock. */
static struct lim_verdict peek_locked(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    bool fleet;
    struct lim_caps c = mode(s, now_ms, &fleet);

    return fleet ? lim__fleet_check(s, c, tokens, now_ms, NULL) : check_local(s, c, tokens, now_ms);
}

struct lim_verdict lim_peek(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    struct lim_verdict v;

    if (!lim_set_active(s))
        return (struct lim_verdict){LIM_NONE, 0, 0};
    pthread_mutex_lock(&s->mu);
    v = peek_locked(s, tokens, now_ms);
    pthread_mutex_unlock(&s->mu);
    return v;
}

static void take_local(struct lim_set *s, struct lim_caps c, uint64_t tokens, uint64_t now_ms)
{
    lim_rate_take(&s->req, c.rpm, c.rpm_burst, 1, now_ms);
    if (tokens)
        lim_rate_take(&s->tok, c.tpm, c.tpm_burst, tokens, now_ms);
}

/* lim_acquire's check and take, the caller holding the lock; the fleet asks to send once
 * it is released go to <asks>. */
static struct lim_verdict acquire_locked(struct lim_set *s, uint64_t tokens, uint64_t now_ms,
                                         struct lim__asks *asks)
{
    struct lim_verdict v;
    struct lim_caps c;
    bool fleet;

    c = mode(s, now_ms, &fleet);
    v = fleet ? lim__fleet_check(s, c, tokens, now_ms, asks) : check_local(s, c, tokens, now_ms);
    if (v.kind == LIM_NONE) {
        if (fleet)
            lim__fleet_take(s, c, tokens);
        else
            take_local(s, c, tokens, now_ms);
        s->inflight++;
    }
    return v;
}

struct lim_verdict lim_acquire(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    struct lim__asks asks = {0};
    struct lim_verdict v;

    if (!lim_set_active(s))
        return (struct lim_verdict){LIM_NONE, 0, 0};
    pthread_mutex_lock(&s->mu);
    v = acquire_locked(s, tokens, now_ms, &asks);
    pthread_mutex_unlock(&s->mu);
    if (asks.n)
        lim__fleet_send(s, &asks, 0);
    return v;
}

struct lim_verdict lim_fair_acquire(struct lim_set *s, const void *who, bool turn, uint64_t tokens,
                                    uint64_t now_ms, enum lim_kind *behind)
{
    struct lim__asks asks = {0};
    struct lim_verdict v;

    *behind = LIM_NONE;
    if (!lim_set_active(s))
        return (struct lim_verdict){LIM_NONE, 0, 0};
    pthread_mutex_lock(&s->mu);
    if (turn && (*behind = lim__fair_turn_locked(s, who)) != LIM_NONE)
        v = peek_locked(s, tokens, now_ms);
    else
        v = acquire_locked(s, tokens, now_ms, &asks);
    pthread_mutex_unlock(&s->mu);
    if (asks.n)
        lim__fleet_send(s, &asks, 0);
    return v;
}

static uint64_t take_waiters(struct lim_set *s)
{
    uint64_t w = s->waiters;

    s->waiters = 0;
    return w;
}

uint32_t lim_fleet_idle(struct lim_set *s)
{
    uint32_t give;

    pthread_mutex_lock(&s->mu);
    give = lim__fleet_idle(s, effective(s));
    pthread_mutex_unlock(&s->mu);
    return give;
}

bool lim_wait_on(struct lim_set *s, unsigned worker)
{
    bool asking;

    if (!lim_set_active(s))
        return false;
    pthread_mutex_lock(&s->mu);
    s->waiters |= 1ull << (worker % 64);
    asking = s->fl.asking != 0;
    pthread_mutex_unlock(&s->mu);
    return asking;
}

/* What returning a slot does to the buckets, the set's lock held: <c> the caps it enforces
 * now, <fleet> whether on the fleet's grants. Returns the concurrency slots to give back to
 * the fleet (the local buckets: 0). */
typedef uint32_t bucket_return_fn(struct lim_set *s, struct lim_caps c, bool fleet,
                                  uint64_t estimated, uint64_t used, uint64_t now_ms);

/* A finished request: its tokens counted as <used> instead of the <estimated> taken. */
static uint32_t correct_tokens(struct lim_set *s, struct lim_caps c, bool fleet,
                               uint64_t estimated, uint64_t used, uint64_t now_ms)
{
    if (fleet)
        return lim__fleet_settle(s, c, estimated, used);
    if (c.tpm && used != estimated)
        lim_rate_correct(&s->tok, c.tpm, c.tpm_burst, (int64_t)used - (int64_t)estimated,
                         now_ms);
    return 0;
}

/* An attempt that never started: its request and its <tokens> given back whole. */
static uint32_t untake_all(struct lim_set *s, struct lim_caps c, bool fleet, uint64_t tokens,
                           uint64_t used, uint64_t now_ms)
{
    if (fleet) {
        lim__fleet_untake(s, c, tokens);
        return lim__fleet_settle(s, c, tokens, used);
    }
    lim_rate_correct(&s->req, c.rpm, c.rpm_burst, -1, now_ms);
    if (tokens)
        lim_rate_correct(&s->tok, c.tpm, c.tpm_burst, -(int64_t)tokens, now_ms);
    return 0;
}

/* Returns the concurrency slot lim_acquire took, lets <bucket_return> correct the buckets,
 * passes spare leased slots back to the fleet, and takes the waiters to wake. */
static uint64_t return_slot(struct lim_set *s, bucket_return_fn *bucket_return,
                            uint64_t estimated, uint64_t used, uint64_t now_ms)
{
    uint32_t give;
    struct lim_caps c;
    uint64_t w;
    bool fleet;

    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    if (s->inflight)
        s->inflight--;
    c = mode(s, now_ms, &fleet);
    give = bucket_return(s, c, fleet, estimated, used, now_ms);
    if (!fleet && s->share)
        give = lim__fleet_spare(s, effective(s));
    w = take_waiters(s);
    pthread_mutex_unlock(&s->mu);
    if (give)
        lim__fleet_send(s, NULL, give);
    return w;
}

uint64_t lim_release(struct lim_set *s, uint64_t estimated, uint64_t used, uint64_t now_ms)
{
    return return_slot(s, correct_tokens, estimated, used, now_ms);
}

uint64_t lim_undo(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    return return_slot(s, untake_all, tokens, tokens, now_ms);
}

void lim_queued(struct lim_set *s, int delta)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    if (delta > 0 || s->queued >= (uint32_t)-delta)
        s->queued += (uint32_t)delta;
    pthread_mutex_unlock(&s->mu);
}

void lim_snapshot(struct lim_set *s, struct lim_snapshot *out)
{
    memset(out, 0, sizeof(*out));
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    out->caps = s->caps;
    out->effective = effective(s);
    out->inflight = s->inflight;
    out->queued = s->queued;
    pthread_mutex_unlock(&s->mu);
}

const char *lim_kind_name(enum lim_kind k)
{
    static const char *const names[] = {"none", "rpm", "tpm", "concurrency"};

    return (unsigned)k < LIM_KIND_COUNT ? names[k] : "none";
}

const char *lim_limit_name(enum lim_subject subj, enum lim_kind kind)
{
    static const char *const names[LIM_SUBJ_COUNT][LIM_KIND_COUNT] = {
        [LIM_SUBJ_CLIENT] = {NULL, "client_rpm", "client_tpm", "client_concurrency"},
        [LIM_SUBJ_TARGET] = {NULL, "target_rpm", "target_tpm", "target_concurrency"},
        [LIM_SUBJ_PROVIDER] = {NULL, "provider_rpm", "provider_tpm", "provider_concurrency"},
        [LIM_SUBJ_TEAM] = {NULL, "team_rpm", "team_tpm", "team_concurrency"},
    };

    if ((unsigned)subj >= LIM_SUBJ_COUNT || (unsigned)kind >= LIM_KIND_COUNT)
        return NULL;
    return names[subj][kind];
}
