/* SPDX-License-Identifier: MIT */
/* hstate_redis_limits.c -- the fleet's rate buckets and concurrency leases in Redis, behind
 * struct lim_share (limits/limits.h). A rate is one hash per subject holding each rate's
 * theoretical arrival time (GCRA, as limits.c, on Redis's own clock, so hosts' clocks never
 * disagree), taken from by one Lua script: all-or-nothing, exact. A lease is a hash of slots per gateway process and a
 * sorted set of those processes' expiries; a process renews its entry every lease_ttl_ms/3
 * while it holds slots, and the take script drops the entries of processes that stopped
 * renewing, so a crashed gateway's slots come back after the TTL. Answers go back to the
 * sets (lim_fleet_granted), which wake their waiters. See docs/internals/redis.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "health/hstate_redis_int.h"
#include "health/hstate_redis_wire.h"

/* A shared rate, GCRA as limits.c: ARGV: limit per minute, burst, need, want, field prefix.
 * The field holds the theoretical arrival time in microseconds of Redis's clock. Grants the
 * most of <want> that fit now (at least <need>, or none); a need above the burst is granted
 * alone once the rate is idle. Returns {granted, wait_ms}: the wait until <need> fits. */
static const char LUA_BUCKET[] =
    "local cap, burst = tonumber(ARGV[1]), tonumber(ARGV[2])\n"
    "local need, want = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
    "local step = 60000000 / (cap - burst + 1)\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local tat = tonumber(redis.call('HGET', KEYS[1], ARGV[5] .. 'a')) or now\n"
    "if tat < now then tat = now end\n"
    "local fit = math.floor((now - tat) / step + burst)\n"
    "local grant, wait = 0, 0\n"
    "if need <= burst and fit >= need then\n"
    "  grant = math.min(want, fit)\n"
    "elseif need > burst and tat <= now then\n"
    "  grant = need\n"
    "elseif need <= burst then\n"
    "  wait = math.ceil((tat + need * step - burst * step - now) / 1000)\n"
    "else\n"
    "  wait = math.ceil((tat - now) / 1000)\n"
    "end\n"
    "tat = tat + grant * step\n"
    "redis.call('HSET', KEYS[1], ARGV[5] .. 'a', string.format('%.0f', math.ceil(tat)))\n"
    "redis.call('PEXPIRE', KEYS[1], math.ceil((tat - now) / 1000) + 1000)\n"
    "return {grant, wait}\n";

/* Drops the slots of processes whose lease expired. KEYS: slots, expiries. */
#define LUA_EXPIRE                                                                          \
    "local t = redis.call('TIME')\n"                                                        \
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"              \
    "local dead = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', now)\n"                      \
    "for _, p in ipairs(dead) do redis.call('HDEL', KEYS[1], p) end\n"                     \
    "if #dead > 0 then redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now) end\n"

/* ARGV: limit, want, process, ttl_ms. Returns the slots granted. */
static const char LUA_LEASE_TAKE[] =
    LUA_EXPIRE
    "local used = 0\n"
    "for _, n in ipairs(redis.call('HVALS', KEYS[1])) do used = used + tonumber(n) end\n"
    "local grant = math.min(tonumber(ARGV[2]), tonumber(ARGV[1]) - used)\n"
    "if grant <= 0 then return 0 end\n"
    "redis.call('HINCRBY', KEYS[1], ARGV[3], grant)\n"
    "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[4]), ARGV[3])\n"
    "redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[4]))\n"
    "redis.call('PEXPIRE', KEYS[2], 2 * tonumber(ARGV[4]))\n"
    "return grant\n";

/* ARGV: slots held, process, ttl_ms, exact. A renewal: a fresh expiry, and the count written
 * when it is exact (no grant of ours on its way, so it also corrects a give that was lost) or
 * when Redis has none for us (it restarted empty, or expired us while we could not renew). An
 * inexact count never overwrites one Redis has: a take it applied before this, whose answer
 * we have not read, would be undone and the fleet would count fewer slots than are used. */
static const char LUA_LEASE_HOLD[] =
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    "if ARGV[4] == '1' or redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then\n"
    "  redis.call('HSET', KEYS[1], ARGV[2], ARGV[1])\n"
    "end\n"
    "redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[2])\n"
    "redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[3]))\n"
    "redis.call('PEXPIRE', KEYS[2], 2 * tonumber(ARGV[3]))\n"
    "return 1\n";

/* ARGV: slots given back, process. */
static const char LUA_LEASE_GIVE[] =
    "local n = redis.call('HINCRBY', KEYS[1], ARGV[2], -tonumber(ARGV[1]))\n"
    "if n <= 0 then\n"
    "  redis.call('HDEL', KEYS[1], ARGV[2])\n"
    "  redis.call('ZREM', KEYS[2], ARGV[2])\n"
    "end\n"
    "return n\n";

static struct hs_redis *of(struct lim_share *sh)
{
    return (struct hs_redis *)((char *)sh - offsetof(struct hs_redis, share));
}

/* ---- the workers' side: queue the work for the backend's thread ---------------------- */

static void sh_ask(struct lim_share *sh, struct lim_set *s, enum lim_kind kind, uint64_t need,
                   uint64_t want, uint32_t cap, uint32_t burst)
{
    struct hr_event *ev = calloc(1, sizeof(*ev));

    if (!ev)
        return; /* the ask is overdue after timeout_ms: the set turns local */
    ev->kind = 'L';
    ev->set = s;
    ev->idx = (int)kind;
    ev->need = need;
    ev->want = want;
    ev->cap = cap;
    ev->burst = lim_burst(cap, burst);
    hr__enqueue(of(sh), ev);
}

static void sh_give(struct lim_share *sh, struct lim_set *s, uint32_t slots)
{
    struct hr_event *ev = calloc(1, sizeof(*ev));

    if (!ev) {
        lim_fleet_gave(s, slots); /* the next exact renewal writes what is held */
        return;
    }
    ev->kind = 'G';
    ev->set = s;
    ev->want = slots;
    hr__enqueue(of(sh), ev);
}

static void sh_track(struct lim_share *sh, struct lim_set *s)
{
    struct hs_redis *h = of(sh);

    uv_mutex_lock(&h->mu);
    if (h->n_sets == h->cap_sets) {
        size_t cap = h->cap_sets ? h->cap_sets * 2 : 32;
        struct lim_set **p = realloc(h->sets, cap * sizeof(*p));

        if (!p) {
            uv_mutex_unlock(&h->mu);
            return; /* its leases are not renewed: they expire and are asked for again */
        }
        h->sets = p;
        h->cap_sets = cap;
    }
    h->sets[h->n_sets++] = s;
    uv_mutex_unlock(&h->mu);
}

void hr__limits_init(struct hs_redis *h, const struct cfg_store *st)
{
    h->share.ask = sh_ask;
    h->share.give = sh_give;
    h->share.track = sh_track;
    h->share.instances = st->instances ? st->instances : 1;
    h->share.timeout_ms = st->timeout_ms ? st->timeout_ms : 50;
    h->lease_ttl_ms = st->lease_ttl_ms ? st->lease_ttl_ms : 10000;
    atomic_init(&h->share.up, false);
}

/* ---- the backend's thread -------------------------------------------------------------- */

struct ask_ctx {
    struct lim_set *set;
    enum lim_kind kind;
    uint64_t want; /* a grant above it is no answer to this ask */
};

/* <p>{lim:<subject>:<id>}, with <suffix> ("", ":slots", ":exp") inside the same slot. */
static bool set_key(struct hs_redis *h, const struct lim_set *s, const char *suffix, char *out)
{
    char id[300];
    size_t n, sl = strlen(suffix);

    snprintf(id, sizeof(id), "%c:%s", s->subject, s->id ? s->id : "");
    n = rkey_entity(out, RKEY_MAX, h->prefix, "lim", (struct bsc_str){id, strlen(id)});
    if (!n || n + sl >= RKEY_MAX)
        return false;
    memcpy(out + n, suffix, sl + 1);
    return true;
}

static void ask_reply(redisAsyncContext *ac, void *r, void *priv)
{
    struct ask_ctx *a = priv;
    redisReply *reply = r;
    uint64_t now = bsc_now_ms(), grant = 0;
    int64_t wait = 0;
    bool ok = hr__ask_read(reply, a->want, &grant, &wait);

    (void)ac;
    if (reply && reply->type == REDIS_REPLY_ERROR)
        LOG_WARN("shared limits: Redis refused an ask: %s", reply->str);
    if (a->kind == LIM_CONC)
        a->set->fl.taking--; /* only this thread touches it */
    if (!ok)
        lim_fleet_failed(a->set, a->kind, now);
    else
        lim_fleet_granted(a->set, a->kind, grant, wait, now);
    free(a);
}

static bool send_ask(struct hs_redis *h, const struct hr_event *ev, struct ask_ctx *a)
{
    char k1[RKEY_MAX], k2[RKEY_MAX], cap[24], burst[24], need[24], want[24], ttl[24];

    snprintf(cap, sizeof(cap), "%" PRIu32, ev->cap);
    snprintf(burst, sizeof(burst), "%" PRIu32, ev->burst);
    snprintf(need, sizeof(need), "%" PRIu64, ev->need);
    snprintf(want, sizeof(want), "%" PRIu64, ev->want);
    snprintf(ttl, sizeof(ttl), "%" PRIu32, h->lease_ttl_ms);
    if (a->kind != LIM_CONC)
        return set_key(h, a->set, "", k1) &&
               hr__cmd(h, ask_reply, a, 9,
                       (const char *[]){"EVAL", LUA_BUCKET, "1", k1, cap, burst, need, want,
                                        a->kind == LIM_RPM ? "r" : "t"});
    if (!set_key(h, a->set, ":slots", k1) || !set_key(h, a->set, ":exp", k2) ||
        !hr__cmd(h, ask_reply, a, 9,
                 (const char *[]){"EVAL", LUA_LEASE_TAKE, "2", k1, k2, cap, want, h->instance,
                                  ttl}))
        return false;
    a->set->fl.taking++; /* renewals write no count until its answer is read */
    return true;
}

/* Renews the lease of the <slots> <s> holds (periodically, and after a reconnect). */
static void send_hold(struct hs_redis *h, struct lim_set *s, uint32_t slots, bool exact)
{
    char k1[RKEY_MAX], k2[RKEY_MAX], n[16], ttl[24];

    snprintf(n, sizeof(n), "%" PRIu32, slots);
    snprintf(ttl, sizeof(ttl), "%" PRIu32, h->lease_ttl_ms);
    if (set_key(h, s, ":slots", k1) && set_key(h, s, ":exp", k2))
        hr__cmd(h, NULL, NULL, 9,
                (const char *[]){"EVAL", LUA_LEASE_HOLD, "2", k1, k2, n, h->instance, ttl,
                                 exact ? "1" : "0"});
}

/* Gives <slots> of <s> back (taken off its slots and counted as giving already). Not sent:
 * Redis counts them as ours until the next exact renewal (or until the lease expires when
 * we hold none). */
static void send_give(struct hs_redis *h, struct lim_set *s, uint32_t slots)
{
    char k1[RKEY_MAX], k2[RKEY_MAX], n[16];

    snprintf(n, sizeof(n), "%" PRIu32, slots);
    if (set_key(h, s, ":slots", k1) && set_key(h, s, ":exp", k2))
        hr__cmd(h, NULL, NULL, 7,
                (const char *[]){"EVAL", LUA_LEASE_GIVE, "2", k1, k2, n, h->instance});
    lim_fleet_gave(s, slots);
}

void hr__limits_run(struct hs_redis *h, const struct hr_event *ev)
{
    struct ask_ctx *a;

    if (ev->kind == 'G') {
        send_give(h, ev->set, (uint32_t)ev->want);
        return;
    }
    if (!(a = malloc(sizeof(*a)))) {
        lim_fleet_failed(ev->set, (enum lim_kind)ev->idx, bsc_now_ms());
        return;
    }
    a->set = ev->set;
    a->kind = (enum lim_kind)ev->idx;
    a->want = ev->want;
    if (!send_ask(h, ev, a)) {
        free(a);
        lim_fleet_failed(ev->set, (enum lim_kind)ev->idx, bsc_now_ms());
    }
}

/* Every held lease, written again with a fresh expiry; slots unused since the last
 * renewal given back first. */
static void renew_all(struct hs_redis *h)
{
    uint32_t slots;
    bool exact;

    uv_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->n_sets; i++) {
        if ((slots = lim_fleet_idle(h->sets[i])) > 0)
            send_give(h, h->sets[i], slots);
        if ((slots = lim_fleet_held(h->sets[i], &exact)) > 0)
            send_hold(h, h->sets[i], slots, exact);
    }
    uv_mutex_unlock(&h->mu);
}

static void renew_fire(uv_timer_t *t)
{
    renew_all(t->data);
}

void hr__limits_start(struct hs_redis *h)
{
    uint64_t every = h->lease_ttl_ms / 3 ? h->lease_ttl_ms / 3 : 1;

    uv_timer_init(&h->loop, &h->renew);
    h->renew.data = h;
    uv_timer_start(&h->renew, renew_fire, every, every);
}

void hr__limits_connected(struct hs_redis *h, bool up)
{
    bool was = atomic_exchange(&h->share.up, up);

    if (up == was)
        return;
    LOG_INFO("shared limits: %s", up ? "decided with the other instances through Redis"
                                     : "decided locally (caps divided by store.instances)");
    if (up)
        renew_all(h); /* Redis may have restarted empty, or expired us meanwhile */
}

void hr__limits_close(struct hs_redis *h)
{
    uv_close((uv_handle_t *)&h->renew, NULL);
}

void hr__limits_free(struct hs_redis *h)
{
    free(h->sets);
}
