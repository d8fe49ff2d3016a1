/* SPDX-License-Identifier: MIT */
/* snapshot.c -- the life of a loaded snapshot: refcount (C11 atomics), free, and the
 * process-wide current pointer that a reload swaps. The current pointer is one
 * of the three commented globals (docs/design.md §13.6); a mutex makes get-and-ref atomic against a
 * concurrent swap-and-unref, taken only when a thread first gets the snapshot after a swap:
 * each thread keeps a ref on the one it last got, checked by a generation counter. See
 * docs/internals/config.md. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/admin_keys.h"
#include "config/clients.h"
#include "config/route_select.h"
#include "config/snapshot.h"
#include "config/telemetry.h"
#include "config/types.h"
#include "core/compat.h"
#include "core/redact.h"
#include "core/str.h"

/* ---- free ----------------------------------------------------------------------------- */

void cfg__provider_cleanup(struct cfg_provider *p)
{
    BSC_FREE(p->id);
    BSC_FREE(p->base_url);
    for (size_t i = 0; i < p->n_keys; i++)
        free(p->keys[i]);
    BSC_FREE(p->keys);
    p->n_keys = 0;
    BSC_FREE(p->region);
    BSC_FREE(p->api_version);
    BSC_FREE(p->project);
    BSC_FREE(p->aws.access_key_id);
    BSC_FREE(p->aws.secret_access_key);
    BSC_FREE(p->aws.session_token);
    BSC_FREE(p->aws.profile);
    BSC_FREE(p->vertex.credentials_file);
    BSC_FREE(p->vertex.token_file);
    BSC_FREE(p->vertex.token_url);
    BSC_FREE(p->tls_ca_file);
    for (size_t i = 0; i < p->n_headers; i++) {
        free(p->headers[i].name);
        free(p->headers[i].value);
    }
    BSC_FREE(p->headers);
    p->n_headers = 0;
}

void cfg__target_cleanup(struct cfg_target *t)
{
    BSC_FREE(t->id);
    BSC_FREE(t->model);
    BSC_FREE(t->deployment);
    BSC_FREE(t->publisher);
    t->provider = NULL;
}

static void tier_cleanup(struct cfg_tier *t)
{
    BSC_FREE(t->targets);
    BSC_FREE(t->weights);
    t->n = 0;
}

void cfg__route_cleanup(struct cfg_route *r)
{
    BSC_FREE(r->id);
    cfg__select_cleanup(r);
    tier_cleanup(&r->primary);
    tier_cleanup(&r->equivalent);
    tier_cleanup(&r->fallback);
    tier_cleanup(&r->shadow.targets);
    chk_cleanup(&r->checks);
    BSC_FREE(r->cache.embeddings_target);
}

static void strs_cleanup(struct cfg_strs *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->items[i]);
    BSC_FREE(l->items);
    l->n = 0;
}

void cfg__free(struct cfg *cfg)
{
    if (!cfg)
        return;
    for (size_t i = 0; i < cfg->n_providers; i++)
        cfg__provider_cleanup(&cfg->providers[i]);
    free(cfg->providers);
    for (size_t i = 0; i < cfg->n_targets; i++)
        cfg__target_cleanup(&cfg->targets[i]);
    free(cfg->targets);
    for (size_t i = 0; i < cfg->n_routes; i++)
        cfg__route_cleanup(&cfg->routes[i]);
    free(cfg->routes);
    free(cfg->file);
    free(cfg->listen_host);
    free(cfg->admin_key);
    free(cfg->admin_listen_host);
    free(cfg->metrics_key);
    cfg__clients_free(cfg);
    cfg__admin_keys_free(cfg);
    free(cfg->store.path);
    free(cfg->store.url);
    free(cfg->store.prefix);
    bsc_redact_free(cfg->secrets);
    strs_cleanup(&cfg->cors.allowed_origins);
    strs_cleanup(&cfg->allowed_hosts);
    cfg__telemetry_cleanup(&cfg->telemetry);
    free(cfg);
}

/* ---- refcount ------------------------------------------------------------------------- */

struct cfg *cfg_ref(struct cfg *cfg)
{
    /* Relaxed is enough to take a ref: the caller already holds one, so the object is
     * alive and nothing is published by the increment. */
    if (cfg)
        atomic_fetch_add_explicit(&cfg->refs, 1, memory_order_relaxed);
    return cfg;
}

void cfg_unref(struct cfg *cfg)
{
    int before;

    if (!cfg)
        return;
    /* Release on every drop, acquire on the last, so every thread's reads of the snapshot
     * happen before it is freed. acq_rel on the decrement rather than release plus an
     * acquire fence: the same on x86, and ThreadSanitizer understands it. */
    before = atomic_fetch_sub_explicit(&cfg->refs, 1, memory_order_acq_rel);
    BSC_BUG_ON(before <= 0);
    if (before == 1)
        cfg__free(cfg);
}

/* ---- the current snapshot ------------------------------------------------------------- */

/* Global by design (docs/design.md §13.6): the snapshot new requests start from. The lock covers
 * the pointer read plus the ref increment, and the pointer write with the generation bump;
 * the old snapshot is unreffed outside it. */
static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cfg *current;
static atomic_uint_fast64_t current_gen = 1; /* bumped by every swap, under the lock */

/* Each thread's ref on the snapshot that was current at generation <cached_gen> (0: none),
 * so a get while no reload happened takes no lock: one read of the generation, which
 * stays in every core's cache, and the ref increment. The ref is dropped when the thread
 * next finds a new generation, swaps itself, or exits (the key's destructor). */
static _Thread_local struct cfg *cached;
static _Thread_local uint_fast64_t cached_gen;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static bool cache_key_ok;

static void cache_drop_at_exit(void *cfg)
{
    cfg_unref(cfg);
}

static void cache_key_make(void)
{
    cache_key_ok = pthread_key_create(&cache_key, cache_drop_at_exit) == 0;
}

/* Drops the calling thread's cached ref. */
static void cache_forget(void)
{
    struct cfg *old = cached;

    if (!cached_gen)
        return;
    cached = NULL;
    cached_gen = 0;
    if (old)
        pthread_setspecific(cache_key, NULL);
    cfg_unref(old);
}

/* The slow path: a ref on the current snapshot under the lock, and one more cached for the
 * thread when it can be dropped at the thread's exit. */
static struct cfg *current_refresh(void)
{
    uint_fast64_t gen;
    struct cfg *c;
    bool keep;

    pthread_once(&cache_once, cache_key_make);
    cache_forget();
    pthread_mutex_lock(&current_lock);
    c = cfg_ref(current);
    gen = atomic_load_explicit(&current_gen, memory_order_relaxed);
    pthread_mutex_unlock(&current_lock);
    keep = cache_key_ok && (!c || pthread_setspecific(cache_key, c) == 0);
    if (keep) {
        cached = cfg_ref(c); /* c is alive: the caller's ref */
        cached_gen = gen;
    }
    return c;
}

struct cfg *cfg_current_get(void)
{
    /* Acquire pairs with the swap's release: a thread that sees its cached generation saw
     * no swap after it, so its snapshot is still the current one. */
    if (cached_gen && cached_gen == atomic_load_explicit(&current_gen, memory_order_acquire))
        return cfg_ref(cached);
    return current_refresh();
}

void cfg_current_swap(struct cfg *next)
{
    struct cfg *old;

    pthread_mutex_lock(&current_lock);
    old = current;
    current = next;
    atomic_fetch_add_explicit(&current_gen, 1, memory_order_release);
    pthread_mutex_unlock(&current_lock);
    cfg_unref(old);
    cache_forget(); /* the swapping thread's own (at exit, the last refs but the workers') */
}
