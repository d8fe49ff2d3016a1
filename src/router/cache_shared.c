/* SPDX-License-Identifier: MIT */
/* cache_shared.c -- the response cache in the state store (cache_shared.h), as values of
 * the route's generation group (store_gen_*): DELETE /admin/cache bumps the route's
 * generation and every instance misses its older answers at once. A value is one line
 * "bsc-cache-1 <stream 0|1> <cost_usd> <stored_ms>\n", then the answer's bytes.
 * A lookup's context is its own allocation: the request may end (its client gone) before
 * the store answers, and the request's memory is reused; shcache_detach cuts the link
 * and the callback frees the context. */
#include "router/cache_shared.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/sha256.h"
#include "router/internal.h"
#include "router/req_wake.h"
#include "store/store.h"

#define VALUE_TAG "bsc-cache-1 "

struct shared_get {
    struct request *r; /* NULL once the request ended */
};

/* The key in hex: the store keeps it in the route's group. */
static struct bsc_str entry_key(const struct cache_key *k, char buf[BSC_SHA256_HEX_LEN + 1])
{
    bsc_sha256_hex(k->d, buf);
    return bsc_str_make(buf, BSC_SHA256_HEX_LEN);
}

/* Reads a stored value into r->c.hit and r->c.hit_meta; false when it is not one of ours. */
static bool parse_value(struct request *r, struct bsc_str v)
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
    r->c.hit_meta = (struct cache_meta){.stream = stream == 1, .cost_usd = cost,
                                        .stored_ms = stored};
    bsc_buf_reset(&r->c.hit);
    return bsc_buf_append(&r->c.hit, nl + 1, v.len - n - 1) == BSC_OK;
}

static void on_get(enum bsc_err err, uint64_t gen, struct bsc_str value, void *ud)
{
    struct shared_get *g = ud;
    struct request *r = g->r;

    free(g);
    if (!r)
        return; /* the request ended meanwhile */
    r->c.shared = NULL;
    r->c.waiting = false;
    r->c.gen_read = err == BSC_OK || err == BSC_ENOTFOUND;
    r->c.gen = gen;
    r->c.found = err == BSC_OK && parse_value(r, value);
    if (err && err != BSC_ENOTFOUND)
        LOG_DEBUG("%s: cache lookup in the store failed (%s): a miss", r->ident.id, bsc_err_str(err));
    req_wake_run(r);
}

bool shcache_get(struct request *r)
{
    char buf[BSC_SHA256_HEX_LEN + 1];
    struct shared_get *g = calloc(1, sizeof(*g));

    if (!g || !r->gw->store)
        return free(g), false;
    g->r = r;
    r->c.asked = true;
    r->c.waiting = true; /* before the call: the store answers from the loop, never inside */
    r->c.shared = g;
    if (store_gen_get(r->gw->store, &r->w->loop, bsc_str_cstr(r->route->id),
                      entry_key(&r->c.key, buf), on_get, g) != BSC_OK) {
        free(g);
        r->c.asked = r->c.waiting = false;
        r->c.shared = NULL;
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

void shcache_put(struct request *r, struct bsc_str body, const struct cache_meta *meta)
{
    char buf[BSC_SHA256_HEX_LEN + 1];
    struct bsc_buf v;
    enum bsc_err err;

    if (!r->gw->store)
        return;
    bsc_buf_init(&v, body.len + 128);
    err = bsc_buf_appendf(&v, VALUE_TAG "%d %.17g %llu\n", meta->stream ? 1 : 0, meta->cost_usd,
                          (unsigned long long)meta->stored_ms);
    if (!err)
        err = bsc_buf_append(&v, body.p, body.len);
    if (!err)
        err = store_gen_put(r->gw->store, &r->w->loop, bsc_str_cstr(r->route->id),
                            entry_key(&r->c.key, buf), bsc_buf_str(&v),
                            (uint64_t)r->route->cache.ttl_s * 1000,
                            r->c.gen_read ? r->c.gen : STORE_GEN_ANY, on_put, NULL);
    if (err)
        on_put(err, NULL);
    bsc_buf_cleanup(&v);
}

void shcache_detach(struct request *r)
{
    if (r->c.shared)
        ((struct shared_get *)r->c.shared)->r = NULL;
    r->c.shared = NULL;
}
