/* SPDX-License-Identifier: MIT */
/* lru.c -- the in-memory response cache (lru.h): a chained hash table of entries on one
 * doubly linked list, most recently used first; one mutex for every worker. */
#include "cache/lru.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct entry {
    struct cache_key key;
    struct entry *hnext;       /* bucket chain */
    struct entry *prev, *next; /* LRU list: head is the most recent */
    char *route;               /* owned */
    char *body;                /* owned */
    size_t route_len, body_len;
    uint64_t expires_ms;
    struct cache_meta meta;
};

struct cache_mem {
    pthread_mutex_t mu;
    struct entry **buckets;
    size_t n_buckets, n;
    struct entry *head, *tail;
    uint64_t bytes, evicted;
};

uint64_t cache_mem_charge(size_t route_len, size_t body_len)
{
    return sizeof(struct entry) + sizeof(struct entry *) + route_len + 1 + body_len;
}

static uint64_t charge_of(const struct entry *e)
{
    return cache_mem_charge(e->route_len, e->body_len);
}

static size_t bucket_of(const struct cache_mem *m, const struct cache_key *k)
{
    uint64_t h;

    memcpy(&h, k->d, sizeof(h)); /* a SHA-256: any 8 bytes are uniform */
    return (size_t)(h & (m->n_buckets - 1));
}

struct cache_mem *cache_mem_new(void)
{
    struct cache_mem *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    m->n_buckets = 1024;
    m->buckets = calloc(m->n_buckets, sizeof(*m->buckets));
    if (!m->buckets || pthread_mutex_init(&m->mu, NULL) != 0) {
        free(m->buckets);
        free(m);
        return NULL;
    }
    return m;
}

static void entry_free(struct entry *e)
{
    free(e->route);
    free(e->body);
    free(e);
}

void cache_mem_free(struct cache_mem *m)
{
    struct entry *e, *next;

    if (!m)
        return;
    for (e = m->head; e; e = next) {
        next = e->next;
        entry_free(e);
    }
    pthread_mutex_destroy(&m->mu);
    free(m->buckets);
    free(m);
}

static struct entry **find_slot(struct cache_mem *m, const struct cache_key *k)
{
    struct entry **at = &m->buckets[bucket_of(m, k)];

    while (*at && memcmp((*at)->key.d, k->d, sizeof(k->d)) != 0)
        at = &(*at)->hnext;
    return at;
}

static void list_unlink(struct cache_mem *m, struct entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        m->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        m->tail = e->prev;
    e->prev = e->next = NULL;
}

static void list_push_front(struct cache_mem *m, struct entry *e)
{
    e->prev = NULL;
    e->next = m->head;
    if (m->head)
        m->head->prev = e;
    m->head = e;
    if (!m->tail)
        m->tail = e;
}

/* Removes <e>, found at <slot> in its bucket chain. */
static void remove_at(struct cache_mem *m, struct entry **slot)
{
    struct entry *e = *slot;

    *slot = e->hnext;
    list_unlink(m, e);
    m->bytes -= charge_of(e);
    m->n--;
    entry_free(e);
}

static void remove_entry(struct cache_mem *m, struct entry *e)
{
    remove_at(m, find_slot(m, &e->key));
}

/* Doubles the table once it holds more entries than buckets; a failure keeps it as is. */
static void maybe_grow(struct cache_mem *m)
{
    size_t n = m->n_buckets * 2;
    struct entry **b;

    if (m->n <= m->n_buckets || !(b = calloc(n, sizeof(*b))))
        return;
    free(m->buckets);
    m->buckets = b;
    m->n_buckets = n;
    for (struct entry *e = m->head; e; e = e->next) {
        struct entry **slot = &m->buckets[bucket_of(m, &e->key)];
        e->hnext = *slot;
        *slot = e;
    }
}

bool cache_mem_get(struct cache_mem *m, const struct cache_key *key, uint64_t now_ms,
                   struct bsc_buf *body, struct cache_meta *meta)
{
    struct entry **slot, *e;
    bool ok = false;

    pthread_mutex_lock(&m->mu);
    slot = find_slot(m, key);
    e = *slot;
    if (e && now_ms >= e->expires_ms) {
        remove_at(m, slot);
    } else if (e && bsc_buf_append(body, e->body, e->body_len) == BSC_OK) {
        *meta = e->meta;
        list_unlink(m, e);
        list_push_front(m, e);
        ok = true;
    }
    pthread_mutex_unlock(&m->mu);
    return ok;
}

static struct entry *entry_new(const struct cache_key *key, struct bsc_str route,
                               struct bsc_str body, const struct cache_meta *meta,
                               uint64_t expires_ms)
{
    struct entry *e = calloc(1, sizeof(*e));

    if (!e)
        return NULL;
    e->key = *key;
    e->route = malloc(route.len + 1);
    e->body = malloc(body.len ? body.len : 1);
    if (!e->route || !e->body) {
        entry_free(e);
        return NULL;
    }
    memcpy(e->route, route.p, route.len);
    e->route[route.len] = '\0';
    if (body.len)
        memcpy(e->body, body.p, body.len);
    e->route_len = route.len;
    e->body_len = body.len;
    e->meta = *meta;
    e->expires_ms = expires_ms;
    return e;
}

enum bsc_err cache_mem_put(struct cache_mem *m, const struct cache_key *key,
                           struct bsc_str route, struct bsc_str body,
                           const struct cache_meta *meta, uint64_t ttl_ms, uint64_t now_ms,
                           uint64_t limit_bytes)
{
    struct entry *e, **slot;

    if (cache_mem_charge(route.len, body.len) > limit_bytes)
        return BSC_ELIMIT;
    if (!(e = entry_new(key, route, body, meta, now_ms + ttl_ms)))
        return BSC_ENOMEM;
    pthread_mutex_lock(&m->mu);
    slot = find_slot(m, key);
    if (*slot)
        remove_at(m, slot);
    while (m->tail && m->bytes + charge_of(e) > limit_bytes) {
        remove_entry(m, m->tail);
        m->evicted++;
    }
    slot = &m->buckets[bucket_of(m, key)];
    e->hnext = *slot;
    *slot = e;
    list_push_front(m, e);
    m->bytes += charge_of(e);
    m->n++;
    maybe_grow(m);
    pthread_mutex_unlock(&m->mu);
    return BSC_OK;
}

size_t cache_mem_drop_route(struct cache_mem *m, struct bsc_str route)
{
    struct entry *e, *next;
    size_t n = 0;

    pthread_mutex_lock(&m->mu);
    for (e = m->head; e; e = next) {
        next = e->next;
        if (route.len && !bsc_str_eq(bsc_str_make(e->route, e->route_len), route))
            continue;
        remove_entry(m, e);
        n++;
    }
    pthread_mutex_unlock(&m->mu);
    return n;
}

void cache_mem_usage(struct cache_mem *m, size_t *entries, uint64_t *bytes, uint64_t *evicted)
{
    pthread_mutex_lock(&m->mu);
    *entries = m->n;
    *bytes = m->bytes;
    *evicted = m->evicted;
    pthread_mutex_unlock(&m->mu);
}
