/* SPDX-License-Identifier: MIT */
/* limits.c -- token buckets and concurrency counters for client, target and provider limits
 * (limits.h). Each set is locked on its own for a few dozen instructions; a set without
 * caps is never locked. Buckets start full and refill continuously at capacity per minute,
 * so a burst of rpm requests passes at once and the next one waits 60/rpm seconds. */
#include "health/limits.h"
#include "health/limits_fleet.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/str.h"

#define LIM_MINUTE_MS 60000.0

void lim_bucket_refill(struct lim_bucket *b, uint32_t cap, uint64_t now_ms)
{
    if (!b->at_ms) {
        b->level = cap;
        b->at_ms = now_ms ? now_ms : 1;
        return;
    }
    if (now_ms > b->at_ms) {
        b->level += (double)(now_ms - b->at_ms) * cap / LIM_MINUTE_MS;
        b->at_ms = now_ms;
    }
    if (b->level > cap)
        b->level = cap;
}

int64_t lim_bucket_wait_ms(const struct lim_bucket *b, uint32_t cap, uint64_t n)
{
    double need = (double)(n < cap ? n : cap);

    if (!cap || b->level >= need)
        return 0;
    return (int64_t)ceil((need - b->level) * LIM_MINUTE_MS / cap);
}

static uint32_t scaled(uint32_t cap, double factor)
{
    double v = floor(cap * factor);

    return !cap ? 0 : v < 1 ? 1 : (uint32_t)v;
}

static struct lim_caps effective(const struct lim_set *s)
{
    return (struct lim_caps){scaled(s->caps.rpm, s->factor), s->caps.tpm,
                             scaled(s->caps.conc, s->factor), s->caps.conc_own};
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

    if (c.rpm) {
        lim_bucket_refill(&s->req, c.rpm, now_ms);
        if ((w = lim_bucket_wait_ms(&s->req, c.rpm, 1)) > 0)
            v = (struct lim_verdict){LIM_RPM, w};
    }
    if (c.tpm && tokens) {
        lim_bucket_refill(&s->tok, c.tpm, now_ms);
        if ((w = lim_bucket_wait_ms(&s->tok, c.tpm, tokens)) > 0 && w > v.wait_ms)
            v = (struct lim_verdict){LIM_TPM, w};
    }
    if (c.conc && s->inflight >= c.conc && v.kind == LIM_NONE)
        v = (struct lim_verdict){LIM_CONC, -1, 0};
    v.enforced = enforced;
    return v;
}

struct lim_verdict lim_peek(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    struct lim_verdict v;
    struct lim_caps c;
    bool fleet;

    if (!lim_set_active(s))
        return (struct lim_verdict){LIM_NONE, 0, 0};
    pthread_mutex_lock(&s->mu);
    c = mode(s, now_ms, &fleet);
    v = fleet ? lim__fleet_check(s, c, tokens, now_ms, NULL) : check_local(s, c, tokens, now_ms);
    pthread_mutex_unlock(&s->mu);
    return v;
}

static void take_local(struct lim_set *s, struct lim_caps c, uint64_t tokens)
{
    if (c.rpm)
        s->req.level -= 1.0;
    if (c.tpm)
        s->tok.level -= (double)(tokens < c.tpm ? tokens : c.tpm);
}

struct lim_verdict lim_acquire(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    struct lim__asks asks = {0};
    struct lim_verdict v;
    struct lim_caps c;
    bool fleet;

    if (!lim_set_active(s))
        return (struct lim_verdict){LIM_NONE, 0, 0};
    pthread_mutex_lock(&s->mu);
    c = mode(s, now_ms, &fleet);
    v = fleet ? lim__fleet_check(s, c, tokens, now_ms, &asks) : check_local(s, c, tokens, now_ms);
    if (v.kind == LIM_NONE) {
        if (fleet)
            lim__fleet_take(s, c, tokens);
        else
            take_local(s, c, tokens);
        s->inflight++;
    }
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

uint64_t lim_release(struct lim_set *s, uint64_t estimated, uint64_t used, uint64_t now_ms)
{
    uint32_t give = 0;
    struct lim_caps c;
    uint64_t w;
    bool fleet;

    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    if (s->inflight)
        s->inflight--;
    c = mode(s, now_ms, &fleet);
    if (fleet) {
        give = lim__fleet_settle(s, c, estimated, used);
    } else {
        if (s->caps.tpm && used != estimated) {
            uint64_t est = estimated < s->caps.tpm ? estimated : s->caps.tpm;

            lim_bucket_refill(&s->tok, s->caps.tpm, now_ms);
            s->tok.level += (double)est - (double)used;
            if (s->tok.level < -(double)s->caps.tpm)
                s->tok.level = -(double)s->caps.tpm;
            if (s->tok.level > s->caps.tpm)
                s->tok.level = s->caps.tpm;
        }
        if (s->share)
            give = lim__fleet_spare(s, effective(s));
    }
    w = take_waiters(s);
    pthread_mutex_unlock(&s->mu);
    if (give)
        lim__fleet_send(s, NULL, give);
    return w;
}

uint64_t lim_undo(struct lim_set *s, uint64_t tokens, uint64_t now_ms)
{
    uint32_t give = 0;
    struct lim_caps c;
    uint64_t w;
    bool fleet;

    if (!s)
        return 0;
    pthread_mutex_lock(&s->mu);
    if (s->inflight)
        s->inflight--;
    c = mode(s, now_ms, &fleet);
    if (fleet) {
        lim__fleet_untake(s, c, tokens);
        give = lim__fleet_settle(s, c, tokens, tokens);
    } else {
        if (c.rpm)
            s->req.level += 1.0;
        if (c.tpm)
            s->tok.level += (double)(tokens < c.tpm ? tokens : c.tpm);
        if (s->share)
            give = lim__fleet_spare(s, effective(s));
    }
    w = take_waiters(s);
    pthread_mutex_unlock(&s->mu);
    if (give)
        lim__fleet_send(s, NULL, give);
    return w;
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
