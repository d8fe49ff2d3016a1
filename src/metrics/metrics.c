/* SPDX-License-Identifier: MIT */
/* metrics.c -- the registry: the family table, one series hash table per shard, the update
 * path, and the snapshot that sums the shards for a scrape. Text formatting lives in
 * prom.c; nothing here does I/O or reads a clock. See docs/internals/metrics.md. */
#include "metrics/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/compat.h"
#include "core/spin.h"

/* ---- the family table ------------------------------------------------------------------- */

static const struct metrics_family families[METRIC_COUNT] = {
#define X(ID, TYPE, BUCKETS, NAME, LABELS, HELP)                                               \
    [METRIC_##ID] = {NAME, HELP, METRIC_##TYPE, LABELS, METRIC_BUCKETS_##BUCKETS},
    METRICS_FAMILIES(X)
#undef X
};

/* LLM latency spans milliseconds (a cached refusal) to minutes (a long reasoning answer):
 * fine steps below a second, coarse ones up to the longest deadline we expect. */
static const double latency_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                                        1,     2.5,  5,     10,   30,  60,   120};

/* The gateway's own time per request: tens of microseconds when all is well, milliseconds
 * when a worker is busy, up to a second when something is badly wrong. */
static const double overhead_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                         0.01,   0.025,   0.05,   0.1,   0.25,   1};

static const struct {
    const double *bounds;
    size_t n;
} bucket_sets[METRIC_BUCKETS_COUNT] = {
    [METRIC_BUCKETS_NONE] = {NULL, 0},
    [METRIC_BUCKETS_LATENCY] = {latency_bounds, BSC_ARRAY_LEN(latency_bounds)},
    [METRIC_BUCKETS_OVERHEAD] = {overhead_bounds, BSC_ARRAY_LEN(overhead_bounds)},
};

_Static_assert(BSC_ARRAY_LEN(latency_bounds) <= METRICS_MAX_BUCKETS, "too many buckets");
_Static_assert(BSC_ARRAY_LEN(overhead_bounds) <= METRICS_MAX_BUCKETS, "too many buckets");
_Static_assert(METRICS_LABEL_MAX <= UINT16_MAX, "label lengths are stored in 16 bits");

const struct metrics_family *metrics_family(enum metric_id id)
{
    return (unsigned)id < METRIC_COUNT ? &families[id] : NULL;
}

const double *metrics_bucket_bounds(enum metric_id id, size_t *n)
{
    const struct metrics_family *f = metrics_family(id);

    *n = 0;
    if (!f || f->type != METRIC_HISTOGRAM)
        return NULL;
    *n = bucket_sets[f->buckets].n;
    return bucket_sets[f->buckets].bounds;
}

const char *metrics_type_name(enum metric_type type)
{
    static const char *const names[METRIC_TYPE_COUNT] = {
        [METRIC_COUNTER] = "counter",
        [METRIC_GAUGE] = "gauge",
        [METRIC_HISTOGRAM] = "histogram",
    };

    return (unsigned)type < METRIC_TYPE_COUNT ? names[type] : "untyped";
}

/* Finite bounds plus the +Inf bucket; 0 for counters and gauges. */
static size_t slot_count(const struct metrics_family *f)
{
    return f->type == METRIC_HISTOGRAM ? bucket_sets[f->buckets].n + 1 : 0;
}

/* ---- shards and series ------------------------------------------------------------------ */

/* One (family, label values) pair in one shard. Allocated once, never moved or freed before
 * metrics_free(), and its labels never change: a snapshot may keep pointers to them after
 * the shard's lock is released. */
struct series {
    uint64_t hash;
    enum metric_id id;
    const char *label[METRICS_MAX_LABELS]; /* into this allocation; NULL past n_labels */
    uint16_t len[METRICS_MAX_LABELS];
    double value;       /* counter, gauge; histogram: sum of observations */
    uint64_t count;     /* histogram: observations */
    uint64_t buckets[]; /* histogram: slot_count() non-cumulative counts; label bytes follow */
};

/* A per-worker shard. Its lock is taken by the owning worker on every update, where it is
 * uncontended, and by a scrape for the time of one copy (the last shard, shared by the
 * threads that are not workers, may see a second writer). So it is a flag taken with one
 * atomic exchange and given back with one release store: about a tenth of an uncontended
 * pthread mutex's instructions, which with 17 updates a proxied request was 2 % of its cost
 * (docs/internals/request-cost.md). A waiter spins briefly, then yields: no holder sleeps
 * or does I/O under it. A lock-free scheme would still need a lock, or RCU, to insert into
 * the hash table. The alignment keeps two workers' shards off the same cache line. */
/* The front of a shard's table: the series last updated through each combination of
 * label pointers, in sets of two ways (the set picked by the pointers and the family). An
 * unscoped hit is confirmed on the labels' bytes, so an address reused by another string
 * after a reload is a miss, never a wrong series; a scoped one (metrics_inc_scoped) on the
 * pointers and the scope they were seen under, which no other storage ever has. Two ways:
 * with one, two of a request's sixteen series sharing a slot (a one-in-three chance at
 * 256 slots, and so it was in the bench) evicted each other on every request, two full
 * lookups a request; now it takes three in one set. */
#define FRONT_SETS 128
#define FRONT_WAYS 2
struct front {
    const char *label[METRICS_MAX_LABELS];
    uint64_t scope; /* 0: the labels' bytes were not vouched for */
    struct series *series;
};

struct shard {
    _Alignas(64) struct bsc_spin lock;         /* core/spin.h: uncontended but in a scrape */
    struct front front[FRONT_SETS][FRONT_WAYS]; /* way 0: the more recently filled */
    struct series **slots; /* owned, and so is every series in it; open addressing */
    size_t cap;            /* slots: a power of two, or 0 before the first series */
    size_t n;              /* series held, at most METRICS_MAX_SERIES */
    size_t n_hist;         /* of which histograms */
    uint64_t dropped;      /* updates not recorded */
    uint64_t lookups;      /* updates the front did not serve (metrics__lookups) */
};

struct metrics {
    struct shard *shards; /* owned: n_shards + 1, the last one shared by non-workers */
    unsigned n_shards;
};

static inline void shard_lock(struct shard *sh)
{
    bsc_spin_lock(&sh->lock);
}

static inline void shard_unlock(struct shard *sh)
{
    bsc_spin_unlock(&sh->lock);
}

/* The lookup key of an update: label values borrowed from the caller. */
struct key {
    uint64_t hash;
    enum metric_id id;
    unsigned n;
    const char *p[METRICS_MAX_LABELS];
    uint16_t len[METRICS_MAX_LABELS];
};

enum op { OP_INC = 0, OP_ADD, OP_SET, OP_OBSERVE, OP_TOUCH };

/* Length of label value <s>, cut to METRICS_LABEL_MAX bytes without splitting a UTF-8
 * character: the cut moves back while the first dropped byte is a continuation byte. */
static uint16_t label_len(const char *s)
{
    size_t n = strnlen(s, METRICS_LABEL_MAX + 1);

    if (n > METRICS_LABEL_MAX) {
        n = METRICS_LABEL_MAX;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
            n--;
    }
    return (uint16_t)n;
}

/* Eight bytes a step, each mixed by a multiply and a shift (the tail zero-padded, its
 * length folded in): label values are ids of 10-40 bytes hashed several times a request,
 * where a byte-at-a-time hash showed in profiles. Equality is still checked in full. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t w;

    for (; n >= 8; c += 8, n -= 8) {
        memcpy(&w, c, 8);
        h = mix(h, w);
    }
    w = 0;
    memcpy(&w, c, n);
    return mix(h, w ^ ((uint64_t)n << 56));
}

static void key_make(struct key *k, enum metric_id id, const char *const l[METRICS_MAX_LABELS])
{
    uint64_t h = 0xcbf29ce484222325ull;

    k->id = id;
    k->n = families[id].n_labels;
    h = mix(h, (uint64_t)k->id);
    for (unsigned i = 0; i < k->n; i++) {
        k->p[i] = l[i] ? l[i] : "";
        k->len[i] = label_len(k->p[i]);
        /* The length goes in first so ("ab", "") and ("a", "b") differ. */
        h = mix(h, k->len[i]);
        h = hash_bytes(h, k->p[i], k->len[i]);
    }
    k->hash = h;
}

static bool key_eq(const struct series *s, const struct key *k)
{
    if (s->hash != k->hash || s->id != k->id)
        return false;
    for (unsigned i = 0; i < k->n; i++)
        if (s->len[i] != k->len[i] || memcmp(s->label[i], k->p[i], k->len[i]) != 0)
            return false;
    return true;
}

/* Returns a new series for <k> with zero values (caller owns), or NULL on ENOMEM. */
static struct series *series_new(const struct key *k)
{
    size_t slots = slot_count(&families[k->id]);
    size_t size = sizeof(struct series) + slots * sizeof(uint64_t);
    struct series *s;
    char *tail;

    for (unsigned i = 0; i < k->n; i++)
        size += (size_t)k->len[i] + 1;
    s = calloc(1, size);
    if (!s)
        return NULL;
    s->hash = k->hash;
    s->id = k->id;
    tail = (char *)(s->buckets + slots);
    for (unsigned i = 0; i < k->n; i++) {
        memcpy(tail, k->p[i], k->len[i]);
        tail[k->len[i]] = '\0';
        s->label[i] = tail;
        s->len[i] = k->len[i];
        tail += k->len[i] + 1;
    }
    return s;
}

/* Puts <s> in the first free slot of its probe sequence. The table has a free slot. */
static void place(struct series **slots, size_t cap, struct series *s)
{
    size_t i = s->hash & (cap - 1);

    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = s;
}

/* Doubles the table (64 slots the first time). BSC_ENOMEM leaves it as it was. */
static enum bsc_err grow(struct shard *sh)
{
    size_t cap = sh->cap ? sh->cap * 2 : 64;
    struct series **slots = calloc(cap, sizeof(*slots));

    if (!slots)
        return BSC_ENOMEM;
    for (size_t i = 0; i < sh->cap; i++)
        if (sh->slots[i])
            place(slots, cap, sh->slots[i]);
    free(sh->slots);
    sh->slots = slots;
    sh->cap = cap;
    return BSC_OK;
}

/* Finds the series for <k> in <sh>, creating it when the shard holds fewer than <cap> series
 * (at most METRICS_MAX_SERIES). NULL when it is full or memory is short. The caller holds
 * the shard's lock. */
static struct series *lookup(struct shard *sh, const struct key *k, size_t cap)
{
    struct series *s;

    if (sh->cap) {
        size_t mask = sh->cap - 1;

        for (size_t i = k->hash & mask; (s = sh->slots[i]); i = (i + 1) & mask)
            if (key_eq(s, k))
                return s;
    }
    if (sh->n >= cap || sh->n >= METRICS_MAX_SERIES)
        return NULL;
    /* The load factor stays at or under 1/2, so probe sequences stay short. */
    if ((sh->n + 1) * 2 > sh->cap && grow(sh) != BSC_OK)
        return NULL;
    s = series_new(k);
    if (!s)
        return NULL;
    place(sh->slots, sh->cap, s);
    sh->n++;
    if (families[k->id].type == METRIC_HISTOGRAM)
        sh->n_hist++;
    return s;
}

/* The ops a family takes, a bit per op, and NEG_INC when its OP_INC may step down (a
 * gauge's; a counter only goes up): one table indexed by family, so the check of an update
 * is one load and a few tests. */
#define NEG_INC       (OP_TOUCH + 1)
#define OPS_COUNTER   (1u << OP_INC | 1u << OP_TOUCH)
#define OPS_GAUGE     (1u << OP_INC | 1u << OP_ADD | 1u << OP_SET | 1u << OP_TOUCH | 1u << NEG_INC)
#define OPS_HISTOGRAM (1u << OP_OBSERVE | 1u << OP_TOUCH)
static const unsigned char ops_of_family[METRIC_COUNT] = {
#define X(ID, TYPE, BUCKETS, NAME, LABELS, HELP) [METRIC_##ID] = OPS_##TYPE,
    METRICS_FAMILIES(X)
#undef X
};

/* Whether <op> with <v> is a valid update of family <id> (in range): a finite value, an op
 * of its type, and no negative step of a counter. */
static inline bool update_ok(enum metric_id id, enum op op, double v)
{
    unsigned ops = ops_of_family[id];

    return isfinite(v) && (ops >> op & 1) && !(op == OP_INC && v < 0 && !(ops >> NEG_INC & 1));
}

/* Counts <v> in the first bucket whose bound is >= <v> (the +Inf one past the bounds). */
static void observe(struct series *s, double v)
{
    const struct metrics_family *f = &families[s->id];
    const double *bounds = bucket_sets[f->buckets].bounds;
    size_t n = bucket_sets[f->buckets].n, i = 0;

    while (i < n && v > bounds[i])
        i++;
    s->buckets[i]++; /* i == n is the +Inf bucket */
    s->count++;
    s->value += v;
}

static inline void apply(struct series *s, enum op op, double v)
{
    switch (op) {
    case OP_INC:
    case OP_ADD:
        s->value += v;
        break;
    case OP_SET:
        s->value = v;
        break;
    case OP_TOUCH:
        break;
    case OP_OBSERVE:
        observe(s, v);
        break;
    }
}

static inline struct shard *shard_at(struct metrics *m, unsigned shard)
{
    return &m->shards[shard < m->n_shards ? shard : m->n_shards];
}

/* An update's label pointers, passed by value: on the hit path they stay in registers
 * (an array whose address went to the out-of-line miss was reloaded after the lock's
 * atomic exchange); only the miss and the byte compare see them in memory. */
struct labels {
    const char *p[METRICS_MAX_LABELS];
};

/* One multiply over the sum of the pointers, each weighted apart so that swapped labels
 * land apart; the top bits pick the set. A collision only costs a lookup. */
static inline unsigned front_set_of(enum metric_id id, struct labels l)
{
    uint64_t h = (uint64_t)id + (uint64_t)(uintptr_t)l.p[0] + 3 * (uint64_t)(uintptr_t)l.p[1] +
                 5 * (uint64_t)(uintptr_t)l.p[2] + 7 * (uint64_t)(uintptr_t)l.p[3];

    return (unsigned)((h * 0x9e3779b97f4a7c15ull) >> (64 - 7));
}

_Static_assert(FRONT_SETS == 1u << 7, "front_set_of takes the top 7 bits");

/* Whether way <f> was filled for <id> and these label pointers: the series it names is
 * theirs if its scope or its bytes say so (front_confirms). */
static inline bool front_names(const struct front *f, enum metric_id id, struct labels l)
{
    return f->series && f->series->id == id && f->label[0] == l.p[0] &&
           f->label[1] == l.p[1] && f->label[2] == l.p[2] && f->label[3] == l.p[3];
}

/* Whether the labels' bytes are those of <s>, a series of family <id>. */
static __attribute__((noinline)) bool same_bytes(const struct series *s, enum metric_id id,
                                                 struct labels l)
{
    for (unsigned i = 0; i < families[id].n_labels; i++) {
        const char *p = l.p[i] ? l.p[i] : "";
        if (memcmp(s->label[i], p, s->len[i]) != 0 || p[s->len[i]])
            return false;
    }
    return true;
}

/* Whether the series of way <f>, which names these pointers, is theirs: for a scope the
 * way saw them under, the same pointers are enough; otherwise their bytes are compared
 * too (and a scoped caller's scope is then recorded). */
static inline bool front_confirms(struct front *f, enum metric_id id, struct labels l,
                                  uint64_t scope)
{
    if (scope && f->scope == scope)
        return true;
    if (!same_bytes(f->series, id, l))
        return false;
    f->scope = scope;
    return true;
}

/* The series the front holds for <id> and <l>, or NULL. A set never holds two ways that
 * name the same pointers (front_way_to_fill), so the first that names them decides. */
static inline __attribute__((always_inline)) struct series *
front_hit(struct front *set, enum metric_id id, struct labels l, uint64_t scope)
{
    for (unsigned w = 0; w < FRONT_WAYS; w++)
        if (front_names(&set[w], id, l))
            return front_confirms(&set[w], id, l, scope) ? set[w].series : NULL;
    return NULL;
}

/* The way to fill for <id> and <l>: the one that names these pointers already (its series
 * was not theirs any more), else way 0, its old entry moved to way 1 (dropping way 1's). */
static struct front *front_way_to_fill(struct front *set, enum metric_id id,
                                       struct labels l)
{
    if (front_names(&set[1], id, l))
        return &set[1];
    if (!front_names(&set[0], id, l))
        set[1] = set[0];
    return &set[0];
}

/* The front's miss, out of line: hashes the labels' bytes, finds or creates the series in
 * the table (within <cap>, see lookup()) and fills a way of <set> with it. NULL when the
 * series cannot be had. The caller holds the shard's lock. */
static __attribute__((noinline)) struct series *
front_miss(struct shard *sh, struct front *set, enum metric_id id, struct labels l,
           size_t cap, uint64_t scope)
{
    struct series *s;
    struct front *f;
    struct key k;

    sh->lookups++;
    key_make(&k, id, l.p);
    s = lookup(sh, &k, cap);
    if (s) {
        f = front_way_to_fill(set, id, l);
        memcpy(f->label, l.p, sizeof(f->label));
        f->scope = scope;
        f->series = s;
    }
    return s;
}

/* An update that cannot be recorded (see update_ok), counted: out of line. */
static __attribute__((noinline)) void drop(struct shard *sh)
{
    shard_lock(sh);
    sh->dropped++;
    shard_unlock(sh);
}

/* Applies <op> to the series of <id> and <l> in <shard>. A series is created only while the
 * shard holds fewer than <cap> series; below METRICS_MAX_SERIES that is the caller's own
 * bound (metrics_touch_within), and a series it leaves out is not a drop. <scope>: see
 * metrics_inc_scoped(). Inlined into each entry point, so that <op> and <cap> are
 * constants there and the front's hit is the whole of the path a request takes. */
static inline __attribute__((always_inline)) void
update_within(struct metrics *m, unsigned shard, enum metric_id id, struct labels l, enum op op,
              double v, size_t cap, uint64_t scope)
{
    struct shard *sh;
    struct front *set;
    struct series *s;

    if (!m)
        return;
    sh = shard_at(m, shard);
    if ((unsigned)id >= METRIC_COUNT || !update_ok(id, op, v)) {
        drop(sh);
        return;
    }
    shard_lock(sh);
    set = sh->front[front_set_of(id, l)];
    s = front_hit(set, id, l, scope);
    if (!s)
        s = front_miss(sh, set, id, l, cap, scope);
    if (s)
        apply(s, op, v);
    else if (cap >= METRICS_MAX_SERIES || sh->n < cap)
        sh->dropped++; /* out of memory, or the registry's own bound */
    shard_unlock(sh);
}

static inline __attribute__((always_inline)) void
update(struct metrics *m, unsigned shard, enum metric_id id, struct labels l, enum op op,
       double v)
{
    update_within(m, shard, id, l, op, v, METRICS_MAX_SERIES, 0);
}

#ifdef BSC_UNIT_TEST
unsigned metrics__front_set(enum metric_id id, const char *const l[METRICS_MAX_LABELS])
{
    return front_set_of(id, (struct labels){{l[0], l[1], l[2], l[3]}});
}

uint64_t metrics__lookups(struct metrics *m, unsigned shard)
{
    struct shard *sh = shard_at(m, shard);
    uint64_t n;

    shard_lock(sh);
    n = sh->lookups;
    shard_unlock(sh);
    return n;
}
#endif

void metrics_inc(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                 const char *l2, double v)
{
    struct labels l = {{l1, l2, NULL}};

    update(m, shard, id, l, OP_INC, v);
}

void metrics_inc3(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                  const char *l2, const char *l3, double v)
{
    struct labels l = {{l1, l2, l3}};

    update(m, shard, id, l, OP_INC, v);
}

void metrics_inc4(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                  const char *l2, const char *l3, const char *l4, double v)
{
    struct labels l = {{l1, l2, l3, l4}};

    update(m, shard, id, l, OP_INC, v);
}

void metrics_gauge_set(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                       const char *l2, double v)
{
    struct labels l = {{l1, l2, NULL}};

    update(m, shard, id, l, OP_SET, v);
}

void metrics_gauge_add(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                       const char *l2, double v)
{
    struct labels l = {{l1, l2, NULL}};

    update(m, shard, id, l, OP_ADD, v);
}

void metrics_observe(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                     const char *l2, double value)
{
    struct labels l = {{l1, l2, NULL}};

    update(m, shard, id, l, OP_OBSERVE, value);
}

void metrics_touch(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                   const char *l2, const char *l3)
{
    struct labels l = {{l1, l2, l3}};

    update(m, shard, id, l, OP_TOUCH, 0);
}

void metrics_touch4(struct metrics *m, unsigned shard, enum metric_id id, const char *l1,
                    const char *l2, const char *l3, const char *l4)
{
    struct labels l = {{l1, l2, l3, l4}};

    update(m, shard, id, l, OP_TOUCH, 0);
}

void metrics_touch_within(struct metrics *m, unsigned shard, size_t max_series,
                          enum metric_id id, const char *l1, const char *l2, const char *l3,
                          const char *l4)
{
    struct labels l = {{l1, l2, l3, l4}};

    update_within(m, shard, id, l, OP_TOUCH, 0, max_series, 0);
}

void metrics_inc_scoped(struct metrics *m, unsigned shard, uint64_t scope, enum metric_id id,
                        const char *l1, const char *l2, const char *l3, double v)
{
    struct labels l = {{l1, l2, l3}};

    update_within(m, shard, id, l, OP_INC, v, METRICS_MAX_SERIES, scope);
}

void metrics_observe_scoped(struct metrics *m, unsigned shard, uint64_t scope,
                            enum metric_id id, const char *l1, double value)
{
    struct labels l = {{l1}};

    update_within(m, shard, id, l, OP_OBSERVE, value, METRICS_MAX_SERIES, scope);
}

/* ---- lifetime --------------------------------------------------------------------------- */

static void shard_cleanup(struct shard *sh)
{
    for (size_t i = 0; i < sh->cap; i++)
        free(sh->slots[i]);
    BSC_FREE(sh->slots);
}

struct metrics *metrics_new(unsigned n_shards)
{
    struct metrics *m = calloc(1, sizeof(*m));
    size_t count = (size_t)n_shards + 1;

    if (!m)
        return NULL;
    /* aligned_alloc wants a multiple of the alignment; sizeof(struct shard) is one. */
    m->shards = aligned_alloc(_Alignof(struct shard), count * sizeof(struct shard));
    if (!m->shards) {
        free(m);
        return NULL;
    }
    memset(m->shards, 0, count * sizeof(struct shard));
    for (size_t i = 0; i < count; i++)
        bsc_spin_init(&m->shards[i].lock);
    m->n_shards = n_shards;
    return m;
}

void metrics_free(struct metrics *m)
{
    if (!m)
        return;
    for (unsigned i = 0; i <= m->n_shards; i++)
        shard_cleanup(&m->shards[i]);
    free(m->shards);
    free(m);
}

unsigned metrics_shared_shard(const struct metrics *m)
{
    return m ? m->n_shards : 0;
}

/* ---- snapshot --------------------------------------------------------------------------- */

/* Makes room for <more> samples and <more_slots> bucket counters. */
static enum bsc_err snap_reserve(struct metrics_snapshot *snap, size_t *cap, size_t *bcap,
                                 size_t *blen, size_t more, size_t more_slots)
{
    if (snap->n + more > *cap) {
        size_t ncap = snap->n + more;
        struct metrics_sample *v = realloc(snap->samples, ncap * sizeof(*v));

        if (!v)
            return BSC_ENOMEM;
        snap->samples = v;
        *cap = ncap;
    }
    if (*blen + more_slots > *bcap) {
        size_t ncap = *blen + more_slots;
        uint64_t *b = realloc(snap->bucket_store, ncap * sizeof(*b));

        if (!b)
            return BSC_ENOMEM;
        snap->bucket_store = b;
        *bcap = ncap;
    }
    return BSC_OK;
}

/* Appends a copy of <s> from shard <idx>; its counters go to the bucket store at *<blen>. */
static void snap_add(struct metrics_snapshot *snap, size_t *blen, const struct series *s,
                     unsigned idx)
{
    struct metrics_sample *out = &snap->samples[snap->n++];
    size_t slots = slot_count(&families[s->id]);

    memset(out, 0, sizeof(*out));
    out->id = s->id;
    for (unsigned i = 0; i < families[s->id].n_labels; i++)
        out->labels[i] = s->label[i];
    out->value = s->value;
    out->count = s->count;
    out->shard = idx;
    out->bucket_off = *blen;
    if (slots)
        memcpy(snap->bucket_store + *blen, s->buckets, slots * sizeof(uint64_t));
    *blen += slots;
}

/* Copies shard <idx> into <snap> under its lock and adds its drop count to *<dropped>. */
static enum bsc_err snap_shard(struct metrics *m, unsigned idx, struct metrics_snapshot *snap,
                               size_t *cap, size_t *bcap, size_t *blen, uint64_t *dropped)
{
    struct shard *sh = &m->shards[idx];
    enum bsc_err err;

    shard_lock(sh);
    err = snap_reserve(snap, cap, bcap, blen, sh->n, sh->n_hist * (METRICS_MAX_BUCKETS + 1));
    if (!err) {
        for (size_t i = 0; i < sh->cap; i++)
            if (sh->slots[i])
                snap_add(snap, blen, sh->slots[i], idx);
        *dropped += sh->dropped;
    }
    shard_unlock(sh);
    return err;
}

/* Family order, then label values bytewise, then shard so that float sums always add in
 * the same order. */
static int sample_cmp(const void *pa, const void *pb)
{
    const struct metrics_sample *a = pa, *b = pb;

    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    for (unsigned i = 0; i < families[a->id].n_labels; i++) {
        int c = strcmp(a->labels[i], b->labels[i]);

        if (c)
            return c;
    }
    return a->shard < b->shard ? -1 : a->shard > b->shard;
}

static bool same_series(const struct metrics_sample *a, const struct metrics_sample *b)
{
    if (a->id != b->id)
        return false;
    for (unsigned i = 0; i < families[a->id].n_labels; i++)
        if (strcmp(a->labels[i], b->labels[i]) != 0)
            return false;
    return true;
}

/* Sums runs of the same series (adjacent once sorted) into their first sample, then points
 * each histogram at its counters. */
static void snap_merge(struct metrics_snapshot *snap)
{
    size_t w = 0;

    for (size_t r = 0; r < snap->n; r++) {
        const struct metrics_sample *src = &snap->samples[r];
        struct metrics_sample *dst = w > 0 ? &snap->samples[w - 1] : NULL;
        size_t slots = slot_count(&families[src->id]);

        if (!dst || !same_series(dst, src)) {
            snap->samples[w++] = *src;
            continue;
        }
        dst->value += src->value;
        dst->count += src->count;
        for (size_t i = 0; i < slots; i++)
            snap->bucket_store[dst->bucket_off + i] += snap->bucket_store[src->bucket_off + i];
    }
    snap->n = w;
    for (size_t i = 0; i < snap->n; i++)
        if (slot_count(&families[snap->samples[i].id]))
            snap->samples[i].buckets = snap->bucket_store + snap->samples[i].bucket_off;
}

enum bsc_err metrics_snapshot_take(struct metrics *m, struct metrics_snapshot *snap)
{
    size_t cap = 0, bcap = 0, blen = 0;
    uint64_t dropped = 0;
    enum bsc_err err = BSC_OK;

    memset(snap, 0, sizeof(*snap));
    for (unsigned i = 0; !err && i <= m->n_shards; i++)
        err = snap_shard(m, i, snap, &cap, &bcap, &blen, &dropped);
    if (!err)
        err = snap_reserve(snap, &cap, &bcap, &blen, 1, 0);
    if (err) {
        metrics_snapshot_cleanup(snap);
        return err;
    }
    /* The drop count is a sample like the others, so it merges with (and sorts among) any
     * series a caller created for the family. */
    snap->samples[snap->n++] = (struct metrics_sample){
        .id = METRIC_METRICS_DROPPED,
        .value = (double)dropped,
        .shard = m->n_shards + 1,
    };
    qsort(snap->samples, snap->n, sizeof(*snap->samples), sample_cmp);
    snap_merge(snap);
    return BSC_OK;
}

void metrics_snapshot_cleanup(struct metrics_snapshot *snap)
{
    BSC_FREE(snap->samples);
    BSC_FREE(snap->bucket_store);
    snap->n = 0;
}
