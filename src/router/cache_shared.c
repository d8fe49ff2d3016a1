/* SPDX-License-Identifier: MIT */
/* cache_shared.c -- the response cache in the state store (cache_shared.h), as values of
 * the route's generation group (store_gen_*): DELETE /admin/cache bumps the route's
 * generation and every instance misses its older answers at once. A value is one line
 * "bsc-cache-1 <stream 0|1> <cost_usd> <stored_ms>\n", then the answer's bytes.
 * A lookup's context is its own allocation: the request may end (its client gone) before
 * the store answers, and the request's memory is reused; shcache_detach cuts the link
 * and the callback frees the context. It works on the request's struct reqcache alone; the
 * caller's <done> hands the request back to the machine. */
#include "router/cache_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/sha256.h"
#include "config/config.h"
#include "router/cache_req_types.h"
#include "store/store.h"

#define VALUE_TAG "bsc-cache-1 "

struct shared_get {
    struct reqcache *c; /* NULL once the request ended */
    shcache_done_fn *done;
    void *arg;
};

/* The key in hex: the store keeps it in the route's group. */
static struct bsc_str entry_key(const struct cache_key *k, char buf[BSC_SHA256_HEX_LEN + 1])
{
    bsc_sha256_hex(k->d, buf);
    return bsc_str_make(buf, BSC_SHA256_HEX_LEN);
}

/* Reads a stored value into c->hit and c->hit_meta; false when it is not one of ours. */
static bool parse_value(struct reqcache *c, struct bsc_str v)
{
    const char *nl = memchr(v.p, '\n', v.len);
    char head[96];
    int stream;
    double cost;
    unsigned long long stored;
    size_t n;

    if (!nl || (size_t)(nl - v.p) >= sizeof(head) || v.len < sizeof(VALUE_TAG) - 1 ||
        memcmp(v.p, VALUE_TAG, sizeof(VALUE_TAG) - 1) != 0)
        return false;
    n = (size_t)(nl - v.p);
    memcpy(head, v.p, n);
    head[n] = '\0';
    if (sscanf(head + sizeof(VALUE_TAG) - 1, "%d %lf %llu", &stream, &cost, &stored) != 3)
        return false;
    c->hit_meta = (struct cache_meta){.stream = stream == 1, .cost_usd = cost,
                                      .stored_ms = stored};
    bsc_buf_reset(&c->hit);
    return bsc_buf_append(&c->hit, nl + 1, v.len - n - 1) == BSC_OK;
}

static void on_get(enum bsc_err err, uint64_t gen, struct bsc_str value, void *ud)
{
    struct shared_get *g = ud;
    struct reqcache *c = g->c;
    shcache_done_fn *done = g->done;
    void *arg = g->arg;

    free(g);
    if (!c)
        return; /* the request ended meanwhile */
    c->shared = NULL;
    c->waiting = false;
    c->gen_read = err == BSC_OK || err == BSC_ENOTFOUND;
    c->gen = gen;
    c->found = err == BSC_OK && parse_value(c, value);
    done(arg, err);
}

bool shcache_get(struct reqcache *c, struct store *st, uv_loop_t *loop,
                 const struct cfg_route *route, shcache_done_fn *done, void *arg)
{
    char buf[BSC_SHA256_HEX_LEN + 1];
    struct shared_get *g = calloc(1, sizeof(*g));

    if (!g || !st)
        return free(g), false;
    *g = (struct shared_get){.c = c, .done = done, .arg = arg};
    c->asked = true;
    c->waiting = true; /* before the call: the store answers from the loop, never inside */
    c->shared = g;
    if (store_gen_get(st, loop, bsc_str_cstr(route->id), entry_key(&c->key, buf), on_get, g) !=
        BSC_OK) {
        free(g);
        c->asked = c->waiting = false;
        c->shared = NULL;
        return false;
    }
    return true;
}

static void on_put(enum bsc_err err, void *ud)
{
    (void)ud;
    if (err == BSC_ESTATE)
        LOG_DEBUG("response cache: an answer made before DELETE /admin/cache was not stored");
    else if (err)
        LOG_DEBUG("response cache: an answer was not stored (%s)", bsc_err_str(err));
}

void shcache_put(const struct reqcache *c, struct store *st, uv_loop_t *loop,
                 const struct cfg_route *route, struct bsc_str body,
                 const struct cache_meta *meta)
{
    char buf[BSC_SHA256_HEX_LEN + 1];
    struct bsc_buf v;
    enum bsc_err err;

    if (!st)
        return;
    bsc_buf_init(&v, body.len + 128);
    err = bsc_buf_appendf(&v, VALUE_TAG "%d %.17g %llu\n", meta->stream ? 1 : 0, meta->cost_usd,
                          (unsigned long long)meta->stored_ms);
    if (!err)
        err = bsc_buf_append(&v, body.p, body.len);
    if (!err)
        err = store_gen_put(st, loop, bsc_str_cstr(route->id), entry_key(&c->key, buf),
                            bsc_buf_str(&v), (uint64_t)route->cache.ttl_s * 1000,
                            c->gen_read ? c->gen : STORE_GEN_ANY, on_put, NULL);
    if (err)
        on_put(err, NULL);
    bsc_buf_cleanup(&v);
}

void shcache_detach(struct reqcache *c)
{
    if (c->shared)
        ((struct shared_get *)c->shared)->c = NULL;
    c->shared = NULL;
}
