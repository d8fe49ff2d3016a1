/* SPDX-License-Identifier: MIT */
/* verdicts.c -- the recent-request table and the per-target outcome windows of verdicts.h.
 * Requests live in a ring in finish order (the oldest is evicted first, so count and age
 * stay bounded without a sweep) and in an open-addressed index for lookup: each entry a
 * ring slot and its request's hash, so evicting a record touches neither the record nor a
 * chain, only the index line its hash names, which the previous request prefetched (at
 * 40,000 requests a second the table turns over every two seconds and every eviction's
 * record and chain were cache misses: the top of a time profile of the request path). Each ring slot owns a
 * fixed record in one slab allocated at start, so recording a request allocates nothing:
 * a malloc per request kept for up to an hour interleaved long-lived chunks with every
 * request's short-lived ones and slowed the allocator on the whole request path (only a
 * record whose strings do not fit goes to the heap). A request is found by its id and the
 * scope that made it together: another scope reusing the id neither finds nor hides it.
 * Target windows are a fixed open-addressed table that never deletes: target ids survive
 * config reloads. Task verdicts are tallied per target and per scope, aged by a half-life
 * and capped per scope (docs/internals/feedback.md). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/spin.h"
#include "health/verdicts.h"

struct vrec {
    uint64_t finish_ms;
    int workflow;
    bool claimed;
    bool heap;         /* its strings did not fit its slab slot: malloc'd */
    uint16_t off_route, off_target, off_scope; /* into s[] */
    char s[];                                  /* id, route, target, scope, NUL-separated */
};

/* A bit window of the last VERDICTS_WINDOW outcomes. */
struct vwin {
    uint8_t bits[(VERDICTS_WINDOW + 7) / 8];
    uint32_t n, ok, pos;
};

/* One scope's task verdicts on one target. */
struct vscope {
    char scope[VERDICTS_SCOPE_MAX + 1]; /* "" = free slot */
    bool shared;                        /* the last verdict's: it moves every ranking */
    struct vd_tally tally;
};

struct vtarget {
    char id[VERDICTS_ID_MAX + 1]; /* "" = free slot */
    struct vwin attempts;
    struct vscope tasks[VERDICTS_SCOPES];
};

#define VT_SLOTS (2 * VERDICTS_MAX_TARGETS) /* a power of two, half full at most */

/* A slab slot: a record and the usual id, route, target and scope lengths. */
#define VREC_SLOT 192u

/* An index entry: a ring slot (plus one; 0 is a free entry) and its request's hash. */
struct vidx {
    uint32_t hash;
    uint32_t slot1;
};

/* A ring's lock: its worker takes it on every request, uncontended (only a claim, rare,
 * takes every ring's): a spin lock (core/spin.h). The targets' lock, which every worker
 * takes, stays a mutex. */
/* One shard of the recent-request table: a ring in finish order, its records and its index.
 * Each worker finishes requests into its own shard, so the ring's head, index and lock
 * stay in that worker's cache instead of moving between cores on every request; a claim
 * (rare) searches every shard. Aligned so two shards never share a cache line. */
struct vring {
    _Alignas(64) struct bsc_spin mu;
    struct vrec **ring;
    uint32_t *ring_hash; /* each ring slot's request hash (valid while ring[i] is set) */
    struct vidx *index;  /* open addressing, linear probing, at most half full */
    char *slab; /* cap x VREC_SLOT: ring slot i's record, when it fits */
    size_t cap, head, count, mask; /* mask: of the index */
    uint64_t max_age_ms;
};

struct verdicts {
    pthread_mutex_t mu; /* the target windows and tallies */
    struct vring *rings;
    size_t n_rings;
    struct vtarget *targets; /* VT_SLOTS */
    size_t n_targets;
};

/* Eight bytes a step, each mixed by a multiply and a shift, the tail zero-padded and its
 * length folded in: a request's id and scope and its target's id are hashed on every
 * request, where a byte-at-a-time hash cost about 600 instructions a request. Equality is
 * always checked on the strings themselves. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
    uint64_t w;

    for (; n >= 8; s += 8, n -= 8) {
        memcpy(&w, s, 8);
        h = mix(h, w);
    }
    w = 0;
    memcpy(&w, s, n);
    return mix(h, w ^ ((uint64_t)n << 56));
}

/* The hash of <s>, <len> bytes long. */
static uint64_t hash(const char *s, size_t len)
{
    return hash_bytes(0xcbf29ce484222325ull, s, len);
}

/* A request's hash: its id and its scope (<li> and <ls> bytes long), so one scope's ids
 * never shadow another's. */
static uint32_t hash_req(const char *id, size_t li, const char *scope, size_t ls)
{
    uint64_t h = hash_bytes(hash(id, li), scope, ls);

    return (uint32_t)(h ^ (h >> 32));
}

static void ring_cleanup(struct vring *vr)
{
    for (size_t i = 0; vr->ring && i < vr->cap; i++)
        if (vr->ring[i] && vr->ring[i]->heap)
            free(vr->ring[i]);
    free(vr->slab);
    free(vr->ring);
    free(vr->ring_hash);
    free(vr->index);
}

/* A shard of <cap> requests (cap >= 1); false when out of memory (cleaned up). */
static bool ring_init(struct vring *vr, size_t cap, uint64_t max_age_ms)
{
    size_t nb = 16;

    while (nb < 2 * cap)
        nb <<= 1;
    vr->ring = calloc(cap, sizeof(*vr->ring));
    vr->ring_hash = calloc(cap, sizeof(*vr->ring_hash));
    vr->index = calloc(nb, sizeof(*vr->index));
    vr->slab = malloc(cap * VREC_SLOT); /* pages are touched as the ring fills */
    bsc_spin_init(&vr->mu);
    vr->cap = cap;
    vr->mask = nb - 1;
    vr->max_age_ms = max_age_ms;
    if (!vr->ring || !vr->ring_hash || !vr->index || !vr->slab) {
        ring_cleanup(vr);
        return false;
    }
    return true;
}

struct verdicts *verdicts_new_sharded(size_t max_requests, uint64_t max_age_ms, size_t shards)
{
    struct verdicts *vs;
    size_t per;

    if (max_requests == 0 || max_requests >= UINT32_MAX / 2 || shards == 0 || shards > max_requests)
        return NULL;
    per = (max_requests + shards - 1) / shards;
    vs = calloc(1, sizeof(*vs));
    if (!vs)
        return NULL;
    vs->targets = calloc(VT_SLOTS, sizeof(*vs->targets));
    vs->rings = aligned_alloc(_Alignof(struct vring), shards * sizeof(*vs->rings));
    if (!vs->targets || !vs->rings || pthread_mutex_init(&vs->mu, NULL)) {
        free(vs->rings);
        free(vs->targets);
        free(vs);
        return NULL;
    }
    for (; vs->n_rings < shards; vs->n_rings++) {
        memset(&vs->rings[vs->n_rings], 0, sizeof(vs->rings[0]));
        if (!ring_init(&vs->rings[vs->n_rings], per, max_age_ms)) {
            verdicts_free(vs);
            return NULL;
        }
    }
    return vs;
}

struct verdicts *verdicts_new(size_t max_requests, uint64_t max_age_ms)
{
    return verdicts_new_sharded(max_requests, max_age_ms, 1);
}

void verdicts_free(struct verdicts *vs)
{
    if (!vs)
        return;
    for (size_t i = 0; i < vs->n_rings; i++)
        ring_cleanup(&vs->rings[i]);
    free(vs->rings);
    free(vs->targets);
    pthread_mutex_destroy(&vs->mu);
    free(vs);
}

/* Drops the entry in ring slot <slot> (locked). */
static void index_add(struct vring *vr, uint32_t hash, size_t slot)
{
    size_t i = hash & vr->mask;

    while (vr->index[i].slot1)
        i = (i + 1) & vr->mask;
    vr->index[i] = (struct vidx){hash, (uint32_t)slot + 1};
}

/* Whether an entry whose home is <home> may move back to the hole at <hole> from <at>: the
 * hole lies in its probe run, between its home and where it stands (cyclically). */
static bool may_fill(size_t home, size_t hole, size_t at)
{
    return hole <= at ? home <= hole || home > at : home <= hole && home > at;
}

/* Removes ring slot <slot>'s entry (it is there) and closes the gap by moving back the
 * entries of the run behind it, so every entry stays reachable from its home. */
static void index_remove(struct vring *vr, uint32_t hash, size_t slot)
{
    size_t hole = hash & vr->mask, at;

    while (vr->index[hole].slot1 != (uint32_t)slot + 1)
        hole = (hole + 1) & vr->mask;
    for (at = (hole + 1) & vr->mask; vr->index[at].slot1; at = (at + 1) & vr->mask)
        if (may_fill(vr->index[at].hash & vr->mask, hole, at)) {
            vr->index[hole] = vr->index[at];
            hole = at;
        }
    vr->index[hole] = (struct vidx){0, 0};
}

static bool in_slab(const struct vring *vr, size_t slot, const struct vrec *e)
{
    return (const char *)e == vr->slab + slot * VREC_SLOT;
}

static void evict(struct vring *vr, size_t slot)
{
    struct vrec *e = vr->ring[slot];

    if (!e)
        return;
    index_remove(vr, vr->ring_hash[slot], slot);
    if (!in_slab(vr, slot, e))
        free(e);
    vr->ring[slot] = NULL;
    vr->count--;
}

/* A finish time ahead of <now_ms> (another worker's clock read) is not expired. */
static bool expired(const struct vring *vr, const struct vrec *e, uint64_t now_ms)
{
    return e->finish_ms < now_ms && now_ms - e->finish_ms > vr->max_age_ms;
}

/* Evicts the oldest entries while they are past the age bound (locked). */
static void expire(struct vring *vr, uint64_t now_ms)
{
    while (vr->count) {
        size_t oldest = (vr->head + vr->cap - vr->count) % vr->cap;
        const struct vrec *e = vr->ring[oldest];

        if (!e || !expired(vr, e, now_ms))
            return;
        evict(vr, oldest);
    }
}

/* The length of <s> when it is a string of 1 to <max> bytes; 0 when it is NULL, empty or
 * longer. */
static size_t len_ok(const char *s, size_t max)
{
    size_t n = s ? strnlen(s, max + 1) : 0;

    return n <= max ? n : 0;
}

static bool str_ok(const char *s, size_t max)
{
    return len_ok(s, max) != 0;
}

/* The lengths of a request's strings, measured once. */
struct rq_lens {
    size_t id, route, target, scope;
};

/* The record of <rq> in ring slot <slot> (its slab slot, or the heap when too long). */
static struct vrec *rec_new(struct vring *vr, size_t slot, const struct vd_request *rq,
                            const struct rq_lens *n)
{
    size_t size = sizeof(struct vrec) + n->id + n->route + n->target + n->scope + 4;
    bool heap = size > VREC_SLOT;
    struct vrec *e = heap ? malloc(size) : (struct vrec *)(void *)(vr->slab + slot * VREC_SLOT);

    if (!e)
        return NULL;
    *e = (struct vrec){.finish_ms = rq->finish_ms, .workflow = rq->workflow, .heap = heap};
    e->off_route = (uint16_t)(n->id + 1);
    e->off_target = (uint16_t)(e->off_route + n->route + 1);
    e->off_scope = (uint16_t)(e->off_target + n->target + 1);
    memcpy(e->s, rq->id, n->id + 1);
    memcpy(e->s + e->off_route, rq->route, n->route + 1);
    memcpy(e->s + e->off_target, rq->target, n->target + 1);
    memcpy(e->s + e->off_scope, rq->scope, n->scope + 1);
    return e;
}

enum bsc_err verdicts_finished(struct verdicts *vs, const struct vd_request *rq)
{
    struct vring *vr = &vs->rings[rq->shard % vs->n_rings];
    struct rq_lens n = {
        .id = len_ok(rq->id, VERDICTS_ID_MAX),
        .route = len_ok(rq->route, VERDICTS_ID_MAX),
        .target = len_ok(rq->target, VERDICTS_ID_MAX),
        .scope = len_ok(rq->scope, VERDICTS_SCOPE_MAX),
    };
    struct vrec *e;
    uint32_t h;

    if (!n.id || !n.route || !n.target || !n.scope)
        return BSC_EINVAL;
    h = hash_req(rq->id, n.id, rq->scope, n.scope);
    bsc_spin_lock(&vr->mu);
    expire(vr, rq->finish_ms);
    evict(vr, vr->head); /* the oldest when full: its slot is the new record's */
    e = rec_new(vr, vr->head, rq, &n);
    if (!e) {
        bsc_spin_unlock(&vr->mu);
        return BSC_ENOMEM;
    }
    index_add(vr, h, vr->head);
    vr->ring_hash[vr->head] = h;
    vr->ring[vr->head] = e;
    vr->head = (vr->head + 1) % vr->cap;
    vr->count++;
    /* The next request's eviction: the oldest record (read for its age) and its index line,
     * fetched while this request's answer is written rather than waited for then. */
    if (vr->ring[vr->head]) {
        __builtin_prefetch(vr->ring[vr->head]);
        __builtin_prefetch(&vr->index[vr->ring_hash[vr->head] & vr->mask], 1);
    }
    bsc_spin_unlock(&vr->mu);
    return BSC_OK;
}

/* The newest request <id> of <scope> (locked): another scope's request with the same id
 * (a client may choose its X-Request-Id) is neither found nor in the way. The probe run
 * may hold several requests with this id (a client reusing one): the newest is the one
 * fewest ring slots behind the head. */
static struct vrec *lookup(struct vring *vr, const char *id, const char *scope)
{
    uint32_t h = hash_req(id, strlen(id), scope, strlen(scope));
    struct vrec *best = NULL;
    size_t best_age = SIZE_MAX;

    for (size_t i = h & vr->mask; vr->index[i].slot1; i = (i + 1) & vr->mask) {
        size_t slot = vr->index[i].slot1 - 1, age;
        struct vrec *e = vr->ring[slot];

        if (vr->index[i].hash != h || strcmp(e->s, id) != 0 ||
            strcmp(e->s + e->off_scope, scope) != 0)
            continue;
        age = (vr->head + vr->cap - 1 - slot) % vr->cap;
        if (age < best_age) {
            best = e;
            best_age = age;
        }
    }
    return best;
}

/* The newest request <id> of <scope> over every shard (all locked): the latest finish time,
 * the first shard's on a tie; within a shard, lookup()'s newest. */
static struct vrec *lookup_all(struct verdicts *vs, const char *id, const char *scope)
{
    struct vrec *best = NULL;

    for (size_t i = 0; i < vs->n_rings; i++) {
        struct vrec *e = lookup(&vs->rings[i], id, scope);

        if (e && (!best || e->finish_ms > best->finish_ms))
            best = e;
    }
    return best;
}

enum bsc_err verdicts_claim(struct verdicts *vs, const char *id, const char *scope,
                            uint64_t now_ms, struct vd_claim *out)
{
    enum bsc_err err = BSC_OK;
    struct vrec *e;

    if (!id || !scope)
        return BSC_ENOTFOUND;
    /* Every shard, in index order (the only place more than one is held): the claim of a
     * request is decided once even when another worker finishes the same id meanwhile. */
    for (size_t i = 0; i < vs->n_rings; i++) {
        bsc_spin_lock(&vs->rings[i].mu);
        expire(&vs->rings[i], now_ms);
    }
    e = lookup_all(vs, id, scope);
    /* Entries are evicted in insertion order, so one finished out of order (a slower
     * worker's clock) can outlive its age: check it here too. */
    if (!e || expired(&vs->rings[0], e, now_ms)) {
        err = BSC_ENOTFOUND;
    } else if (e->claimed) {
        err = BSC_EEXIST;
    } else {
        e->claimed = true;
        snprintf(out->route, sizeof(out->route), "%s", e->s + e->off_route);
        snprintf(out->target, sizeof(out->target), "%s", e->s + e->off_target);
        out->workflow = e->workflow;
    }
    for (size_t i = vs->n_rings; i-- > 0;)
        bsc_spin_unlock(&vs->rings[i].mu);
    return err;
}

/* The slot of <id>, created when <create> and there is room; NULL otherwise (locked). */
static struct vtarget *target_slot(struct verdicts *vs, const char *id, bool create)
{
    size_t len = len_ok(id, VERDICTS_ID_MAX), i;

    if (!len)
        return NULL;
    i = hash(id, len) & (VT_SLOTS - 1);
    for (size_t probes = 0; probes < VT_SLOTS; probes++, i = (i + 1) & (VT_SLOTS - 1)) {
        struct vtarget *t = &vs->targets[i];

        if (t->id[0] && memcmp(t->id, id, len + 1) == 0)
            return t;
        if (!t->id[0]) {
            if (!create || vs->n_targets >= VERDICTS_MAX_TARGETS)
                return NULL;
            memcpy(t->id, id, len + 1);
            vs->n_targets++;
            return t;
        }
    }
    return NULL;
}

static void win_add(struct vwin *w, bool ok)
{
    uint8_t *byte = &w->bits[w->pos / 8], bit = (uint8_t)(1u << (w->pos % 8));

    if (w->n == VERDICTS_WINDOW)
        w->ok -= (*byte & bit) ? 1 : 0; /* the outcome this one replaces */
    else
        w->n++;
    *byte = ok ? (uint8_t)(*byte | bit) : (uint8_t)(*byte & ~bit);
    w->ok += ok ? 1 : 0;
    w->pos = (w->pos + 1) % VERDICTS_WINDOW;
}

void verdicts_attempt(struct verdicts *vs, const char *target_id, bool ok)
{
    struct vtarget *t;

    pthread_mutex_lock(&vs->mu);
    t = target_slot(vs, target_id, true);
    if (t)
        win_add(&t->attempts, ok);
    pthread_mutex_unlock(&vs->mu);
}

/* ---- task tallies ---- */

void vd_tally_age(struct vd_tally *t, uint64_t now_ms, uint64_t half_life_ms)
{
    double f;

    if (now_ms <= t->at_ms)
        return; /* another worker's earlier clock read: nothing to age */
    f = half_life_ms ? exp2(-(double)(now_ms - t->at_ms) / (double)half_life_ms) : 1.0;
    t->ok *= f;
    t->n *= f;
    t->at_ms = now_ms;
    if (t->n < VERDICTS_MIN_WEIGHT)
        t->ok = t->n = 0.0;
}

void vd_tally_add(struct vd_tally *t, bool ok, uint64_t now_ms, const struct vd_policy *p)
{
    double cap = p->max_weight >= 1.0 ? p->max_weight : 1.0;

    vd_tally_age(t, now_ms, p->half_life_ms);
    t->n += 1.0;
    t->ok += ok ? 1.0 : 0.0;
    if (t->n > cap) { /* the same rate, at the bounded weight */
        t->ok *= cap / t->n;
        t->n = cap;
    }
}

/* <scope>'s tally slot on <t>, or the one to take for it: a free slot, else the one with
 * the least weight left at <now_ms> (locked). */
static struct vscope *scope_slot(struct vtarget *t, const char *scope, uint64_t now_ms,
                                 const struct vd_policy *p)
{
    struct vscope *best = NULL;

    for (size_t i = 0; i < VERDICTS_SCOPES; i++) {
        struct vscope *s = &t->tasks[i];

        if (strcmp(s->scope, scope) == 0)
            return s;
        vd_tally_age(&s->tally, now_ms, p->half_life_ms);
        if (!best || (best->scope[0] && (!s->scope[0] || s->tally.n < best->tally.n)))
            best = s;
    }
    *best = (struct vscope){.tally = {.at_ms = now_ms}};
    snprintf(best->scope, sizeof(best->scope), "%s", scope);
    return best;
}

void verdicts_task(struct verdicts *vs, const struct vd_verdict *v, const struct vd_policy *p)
{
    struct vtarget *t;
    struct vscope *s;

    if (!str_ok(v->scope, VERDICTS_SCOPE_MAX))
        return;
    pthread_mutex_lock(&vs->mu);
    t = target_slot(vs, v->target, true);
    if (t) {
        s = scope_slot(t, v->scope, v->at_ms, p);
        s->shared = v->shared;
        vd_tally_add(&s->tally, v->ok, v->at_ms, p);
    }
    pthread_mutex_unlock(&vs->mu);
}

void verdicts_rates(struct verdicts *vs, const char *target_id, const char *scope,
                    uint64_t now_ms, const struct vd_policy *p, struct vd_rates *out)
{
    struct vtarget *t;

    *out = (struct vd_rates){0};
    pthread_mutex_lock(&vs->mu);
    t = target_slot(vs, target_id, false);
    for (size_t i = 0; t && i < VERDICTS_SCOPES; i++) {
        struct vscope *s = &t->tasks[i];

        if (!s->scope[0] || !(s->shared || (scope && strcmp(s->scope, scope) == 0)))
            continue;
        vd_tally_age(&s->tally, now_ms, p->half_life_ms);
        out->tasks += s->tally.n;
        out->tasks_ok += s->tally.ok;
    }
    if (t) {
        out->attempts = t->attempts.n;
        out->attempts_ok = t->attempts.ok;
    }
    pthread_mutex_unlock(&vs->mu);
}
