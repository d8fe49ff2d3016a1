/* SPDX-License-Identifier: MIT */
/* semantic.c -- the semantic cache's index (semantic.h): a chained hash table of context
 * groups, each with its entries' unit vectors side by side (dim floats each) for the scan;
 * every entry on one list for the whole index and one for its route, most recently used
 * first; one mutex for every worker. */
#include "cache/semantic.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct sroute;
struct sgroup;

struct sentry {
    struct sgroup *g; /* the group holding its vector, at <slot> */
    size_t slot;
    struct sentry *prev, *next;   /* the index's list: head is the most recent */
    struct sentry *rprev, *rnext; /* its route's list */
    struct sroute *rt;
    char *body; /* owned */
    size_t body_len;
    uint64_t expires_ms;
    struct cache_meta meta;
};

struct sroute {
    char *name; /* owned */
    size_t len, n;
    struct sentry *head, *tail;
    struct sroute *next;
};

struct sgroup {
    struct cache_key key;
    struct sgroup *hnext; /* bucket chain */
    size_t dim, n, cap;
    float *vecs;          /* owned: cap * dim floats, the first n * dim in use */
    struct sentry **ents; /* owned: cap, the first n in use; ents[i]->slot == i */
};

struct cache_sem {
    pthread_mutex_t mu;
    struct sgroup **buckets;
    size_t n_buckets, n_groups, n;
    struct sroute *routes;
    struct sentry *head, *tail;
    uint64_t bytes, evicted;
};

static const uint64_t group_charge = sizeof(struct sgroup) + sizeof(struct sgroup *);

uint64_t cache_sem_charge(size_t route_len, size_t body_len, size_t dim)
{
    /* The route's name is counted with each entry, as in lru.c: an upper bound. */
    return sizeof(struct sentry) + sizeof(struct sentry *) + route_len + 1 + body_len +
           dim * sizeof(float);
}

static uint64_t charge_of(const struct sentry *e)
{
    return cache_sem_charge(e->rt->len, e->body_len, e->g->dim);
}

bool cache_sem_normalize(float *v, size_t dim)
{
    double sum = 0;

    for (size_t i = 0; i < dim; i++) {
        if (!isfinite(v[i]))
            return false;
        sum += (double)v[i] * (double)v[i];
    }
    if (!(sum > 0) || !isfinite(sum))
        return false;
    sum = sqrt(sum);
    for (size_t i = 0; i < dim; i++)
        v[i] = (float)((double)v[i] / sum);
    return true;
}

/* Eight running sums: without -ffast-math the compiler may not reorder one float sum, so
 * a single accumulator is a chain of dependent adds; eight independent ones vectorise
 * (8 floats: one AVX or two SSE registers). Floats: unit vectors keep them well within. */
double cache_sem_dot(const float *a, const float *b, size_t dim)
{
    float acc[8] = {0};
    size_t i = 0;

    for (; i + 8 <= dim; i += 8)
        for (size_t k = 0; k < 8; k++)
            acc[k] += a[i + k] * b[i + k];
    for (; i < dim; i++)
        acc[0] += a[i] * b[i];
    return (double)((acc[0] + acc[1]) + (acc[2] + acc[3])) +
           (double)((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

struct cache_sem *cache_sem_new(void)
{
    struct cache_sem *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    s->n_buckets = 256;
    s->buckets = calloc(s->n_buckets, sizeof(*s->buckets));
    if (!s->buckets || pthread_mutex_init(&s->mu, NULL) != 0) {
        free(s->buckets);
        free(s);
        return NULL;
    }
    return s;
}

static void group_free(struct sgroup *g)
{
    free(g->vecs);
    free(g->ents);
    free(g);
}

void cache_sem_free(struct cache_sem *s)
{
    if (!s)
        return;
    for (struct sentry *e = s->head, *next; e; e = next) {
        next = e->next;
        free(e->body);
        free(e);
    }
    for (size_t i = 0; i < s->n_buckets; i++)
        for (struct sgroup *g = s->buckets[i], *next; g; g = next) {
            next = g->hnext;
            group_free(g);
        }
    for (struct sroute *rt = s->routes, *next; rt; rt = next) {
        next = rt->next;
        free(rt->name);
        free(rt);
    }
    pthread_mutex_destroy(&s->mu);
    free(s->buckets);
    free(s);
}

/* ---- groups ---- */

static size_t bucket_of(size_t n_buckets, const struct cache_key *k)
{
    uint64_t h;

    memcpy(&h, k->d, sizeof(h)); /* a SHA-256: any 8 bytes are uniform */
    return (size_t)(h & (n_buckets - 1));
}

static struct sgroup **group_slot(struct cache_sem *s, const struct cache_key *k)
{
    struct sgroup **at = &s->buckets[bucket_of(s->n_buckets, k)];

    while (*at && memcmp((*at)->key.d, k->d, sizeof(k->d)) != 0)
        at = &(*at)->hnext;
    return at;
}

/* Doubles the table once it holds more groups than buckets; a failure keeps it as is. */
static void maybe_grow(struct cache_sem *s)
{
    size_t n = s->n_buckets * 2;
    struct sgroup **b;

    if (s->n_groups <= s->n_buckets || !(b = calloc(n, sizeof(*b))))
        return;
    for (size_t i = 0; i < s->n_buckets; i++)
        for (struct sgroup *g = s->buckets[i], *next; g; g = next) {
            next = g->hnext;
            g->hnext = b[bucket_of(n, &g->key)];
            b[bucket_of(n, &g->key)] = g;
        }
    free(s->buckets);
    s->buckets = b;
    s->n_buckets = n;
}

static struct sgroup *group_new(struct cache_sem *s, const struct cache_key *k, size_t dim)
{
    struct sgroup *g = calloc(1, sizeof(*g)), **slot;

    if (!g)
        return NULL;
    g->key = *k;
    g->dim = dim;
    slot = &s->buckets[bucket_of(s->n_buckets, k)];
    g->hnext = *slot;
    *slot = g;
    s->n_groups++;
    s->bytes += group_charge;
    maybe_grow(s);
    return g;
}

static void group_drop(struct cache_sem *s, struct sgroup *g)
{
    *group_slot(s, &g->key) = g->hnext;
    s->n_groups--;
    s->bytes -= group_charge;
    group_free(g);
}

/* Room for one more entry in <g>: false when the arrays could not grow. */
static bool group_reserve(struct sgroup *g)
{
    size_t cap = g->cap ? g->cap * 2 : 4;
    float *v;
    struct sentry **e;

    if (g->n < g->cap)
        return true;
    if (!(v = realloc(g->vecs, cap * g->dim * sizeof(*v))))
        return false;
    g->vecs = v;
    if (!(e = realloc(g->ents, cap * sizeof(*e))))
        return false;
    g->ents = e;
    g->cap = cap;
    return true;
}

/* ---- routes ---- */

static struct sroute *route_find(struct cache_sem *s, struct bsc_str name)
{
    for (struct sroute *rt = s->routes; rt; rt = rt->next)
        if (bsc_str_eq(bsc_str_make(rt->name, rt->len), name))
            return rt;
    return NULL;
}

static struct sroute *route_get(struct cache_sem *s, struct bsc_str name)
{
    struct sroute *rt = route_find(s, name);

    if (rt)
        return rt;
    if (!(rt = calloc(1, sizeof(*rt))) || !(rt->name = malloc(name.len + 1))) {
        free(rt);
        return NULL;
    }
    memcpy(rt->name, name.p, name.len);
    rt->name[name.len] = '\0';
    rt->len = name.len;
    rt->next = s->routes;
    s->routes = rt;
    return rt;
}

static void route_drop(struct cache_sem *s, struct sroute *rt)
{
    struct sroute **at = &s->routes;

    while (*at != rt)
        at = &(*at)->next;
    *at = rt->next;
    free(rt->name);
    free(rt);
}

/* ---- entries ---- */

static void lists_push_front(struct cache_sem *s, struct sentry *e)
{
    struct sroute *rt = e->rt;

    e->prev = NULL;
    e->next = s->head;
    if (s->head)
        s->head->prev = e;
    s->head = e;
    if (!s->tail)
        s->tail = e;
    e->rprev = NULL;
    e->rnext = rt->head;
    if (rt->head)
        rt->head->rprev = e;
    rt->head = e;
    if (!rt->tail)
        rt->tail = e;
}

static void lists_unlink(struct cache_sem *s, struct sentry *e)
{
    struct sroute *rt = e->rt;

    if (e->prev)
        e->prev->next = e->next;
    else
        s->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        s->tail = e->prev;
    if (e->rprev)
        e->rprev->rnext = e->rnext;
    else
        rt->head = e->rnext;
    if (e->rnext)
        e->rnext->rprev = e->rprev;
    else
        rt->tail = e->rprev;
    e->prev = e->next = e->rprev = e->rnext = NULL;
}

/* Removes <e> everywhere: the last of its group takes its slot; an empty group or route
 * goes too. */
static void entry_remove(struct cache_sem *s, struct sentry *e)
{
    struct sgroup *g = e->g;
    struct sroute *rt = e->rt;
    size_t last = g->n - 1;

    s->bytes -= charge_of(e);
    if (e->slot != last) {
        memcpy(g->vecs + e->slot * g->dim, g->vecs + last * g->dim, g->dim * sizeof(float));
        g->ents[e->slot] = g->ents[last];
        g->ents[e->slot]->slot = e->slot;
    }
    g->n--;
    lists_unlink(s, e);
    rt->n--;
    s->n--;
    free(e->body);
    free(e);
    if (!g->n)
        group_drop(s, g);
    if (!rt->n)
        route_drop(s, rt);
}

/* The live entry of <g> closest to <vec>, at least <min_sim>, or NULL. Entries found
 * expired are removed (the scan runs downwards: a removal moves an entry already seen). */
static struct sentry *scan(struct cache_sem *s, struct sgroup *g, const float *vec, double min_sim,
                           uint64_t now_ms, double *sim)
{
    struct sentry *best = NULL;
    double best_sim = min_sim;
    size_t dim = g->dim;

    for (size_t i = g->n; i-- > 0;) {
        double d = cache_sem_dot(g->vecs + i * dim, vec, dim);
        if (d < best_sim)
            continue;
        if (now_ms >= g->ents[i]->expires_ms) {
            bool last = g->n == 1;
            entry_remove(s, g->ents[i]);
            if (last)
                return NULL; /* the group went with it */
            continue;
        }
        best = g->ents[i];
        best_sim = d;
    }
    *sim = best_sim;
    return best;
}

bool cache_sem_get(struct cache_sem *s, const struct cache_key *ctx, const float *vec, size_t dim,
                   double min_sim, uint64_t now_ms, struct bsc_buf *body, struct cache_meta *meta,
                   double *sim)
{
    struct sgroup *g;
    struct sentry *e = NULL;
    bool ok = false;

    pthread_mutex_lock(&s->mu);
    g = *group_slot(s, ctx);
    if (g && g->dim == dim)
        e = scan(s, g, vec, min_sim, now_ms, sim);
    if (e && bsc_buf_append(body, e->body, e->body_len) == BSC_OK) {
        *meta = e->meta;
        lists_unlink(s, e);
        lists_push_front(s, e);
        ok = true;
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

static struct sentry *entry_new(struct bsc_str body, const struct cache_meta *meta,
                                uint64_t expires_ms)
{
    struct sentry *e = calloc(1, sizeof(*e));

    if (!e || !(e->body = malloc(body.len ? body.len : 1))) {
        free(e);
        return NULL;
    }
    if (body.len)
        memcpy(e->body, body.p, body.len);
    e->body_len = body.len;
    e->meta = *meta;
    e->expires_ms = expires_ms;
    return e;
}

/* Makes room for an entry of <charge> bytes of route <route> in the group of <ctx>. */
static void make_room(struct cache_sem *s, const struct cache_key *ctx, struct bsc_str route,
                      uint64_t charge, const struct cache_sem_bounds *b)
{
    struct sroute *rt = route_find(s, route);

    while (rt && rt->n >= b->max_entries && rt->tail) {
        bool last = rt->n == 1;
        entry_remove(s, rt->tail);
        s->evicted++;
        if (last)
            break; /* the route went with it */
    }
    while (s->tail &&
           s->bytes + charge + (*group_slot(s, ctx) ? 0 : group_charge) > b->limit_bytes) {
        entry_remove(s, s->tail);
        s->evicted++;
    }
}

/* Puts <e> (its vector <vec>) in the group of <ctx> and on the lists; under the lock. */
static enum bsc_err insert(struct cache_sem *s, struct sentry *e, const struct cache_key *ctx,
                           struct bsc_str route, const float *vec, size_t dim)
{
    struct sgroup *g = *group_slot(s, ctx);
    bool fresh = !g;

    if (!(e->rt = route_get(s, route)))
        return BSC_ENOMEM;
    if (fresh && !(g = group_new(s, ctx, dim)))
        goto oom;
    if (!group_reserve(g))
        goto oom;
    memcpy(g->vecs + g->n * dim, vec, dim * sizeof(float));
    g->ents[g->n] = e;
    e->g = g;
    e->slot = g->n++;
    lists_push_front(s, e);
    e->rt->n++;
    s->n++;
    s->bytes += charge_of(e);
    return BSC_OK;
oom:
    if (fresh && g)
        group_drop(s, g);
    if (!e->rt->n)
        route_drop(s, e->rt);
    return BSC_ENOMEM;
}

enum bsc_err cache_sem_put(struct cache_sem *s, const struct cache_key *ctx, struct bsc_str route,
                           const float *vec, size_t dim, struct bsc_str body,
                           const struct cache_meta *meta, uint64_t ttl_ms, uint64_t now_ms,
                           const struct cache_sem_bounds *b)
{
    uint64_t charge = cache_sem_charge(route.len, body.len, dim);
    struct sentry *e;
    struct sgroup *g;
    enum bsc_err err;

    if (dim == 0 || dim > CACHE_SEM_MAX_DIM)
        return BSC_EINVAL;
    if (charge + group_charge > b->limit_bytes || b->max_entries == 0)
        return BSC_ELIMIT;
    if (!(e = entry_new(body, meta, now_ms + ttl_ms)))
        return BSC_ENOMEM;
    pthread_mutex_lock(&s->mu);
    g = *group_slot(s, ctx);
    if (g && g->dim != dim) {
        err = BSC_EINVAL;
        goto out;
    }
    make_room(s, ctx, route, charge, b);
    err = insert(s, e, ctx, route, vec, dim);
out:
    pthread_mutex_unlock(&s->mu);
    if (err) {
        free(e->body);
        free(e);
    }
    return err;
}

size_t cache_sem_drop_route(struct cache_sem *s, struct bsc_str route)
{
    size_t n = 0;

    pthread_mutex_lock(&s->mu);
    for (struct sentry *e = s->head, *next; e; e = next) {
        next = e->next;
        if (route.len && !bsc_str_eq(bsc_str_make(e->rt->name, e->rt->len), route))
            continue;
        entry_remove(s, e);
        n++;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

void cache_sem_usage(struct cache_sem *s, size_t *entries, uint64_t *bytes, uint64_t *evicted)
{
    pthread_mutex_lock(&s->mu);
    *entries = s->n;
    *bytes = s->bytes;
    *evicted = s->evicted;
    pthread_mutex_unlock(&s->mu);
}
