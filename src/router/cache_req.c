/* SPDX-License-Identifier: MIT */
/* cache_req.c -- the response cache around one request (cache_req.h): its key (route, the
 * client's dialect, the answer's shape, the scope, the canonical body), the lookup and the
 * replay of a hit in ADMIT, and the store once the answer is whole. */
#include "router/cache_parts.h"
#include "router/cache_req.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "cache/canon.h"
#include "cache/lru.h"
#include "cache/semantic.h"
#include "core/clock.h"
#include "core/log.h"
#include "metrics/metrics.h"
#include "router/cache_embed.h"
#include "router/cache_shared.h"
#include "router/contract.h"
#include "router/deliver_note.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/req_wake.h"

/* Top-level members that never change the answer: how it is carried (stream, its options,
 * whose shape is the key's <shape>) and who asked (user, ids the client keeps). */
static const char *const ignored[] = {"stream", "stream_options", "user", "request_id"};

#define CANON_MAX_BYTES (16u << 20)

static bool shared(const struct request *r)
{
    return r->cfg->cache.store == CFG_CACHE_REDIS;
}

/* mode: semantic keeps its index in this process's memory, whatever cache.store says
 * (docs/internals/cache.md). */
static bool semantic(const struct request *r)
{
    return r->route->cache.mode == CFG_CACHE_SEMANTIC;
}

static bool cache_on(const struct request *r)
{
    if (semantic(r))
        return r->gw->sem != NULL;
    return r->route->cache.mode == CFG_CACHE_EXACT &&
           (shared(r) ? r->gw->store != NULL : r->gw->cache != NULL);
}

/* Whether the comma-separated Cache-Control value <v> has the directive <d>. */
static bool has_directive(struct bsc_str v, const char *d)
{
    size_t n = strlen(d);
    const char *p = v.p, *end = v.p + v.len;

    while (p && p < end) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        struct bsc_str tok = bsc_str_trim(bsc_str_make(p, (size_t)((comma ? comma : end) - p)));
        if (tok.len == n && strncasecmp(tok.p, d, n) == 0)
            return true;
        p = comma ? comma + 1 : end;
    }
    return false;
}

/* r->c.key from the request; false when the body cannot be canonicalised (a name twice in
 * one object, a lone surrogate, ...): such a request is neither looked up nor stored. */
static bool make_key(struct request *r)
{
    struct bsc_buf canon;
    char scope[REQCACHE_SCOPE_MAX];
    enum canon_result res;
    struct cache_key_parts parts;

    reqcache_parts(r->route, &r->ident, r->input.stream, r->input.include_usage, scope,
                   &parts);
    bsc_buf_init(&canon, CANON_MAX_BYTES);
    res = canon_request(srv_req_body(r->sreq), ignored, BSC_ARRAY_LEN(ignored), &canon);
    if (res == CANON_OK) {
        parts.canonical = bsc_buf_str(&canon);
        cache_key_make(&parts, &r->c.key);
        r->c.keyed = true;
    }
    bsc_buf_cleanup(&canon);
    return res == CANON_OK;
}

static void count(struct request *r, const char *result)
{
    r->c.result = result;
    metrics_inc(req__metrics(r), r->w->idx, METRIC_CACHE_REQUESTS, r->route->id, result, 1);
}

/* The stored answer, as it was first sent, with this request's own route headers. */
static void reply_hit(struct request *r, struct bsc_str body, const struct cache_meta *meta)
{
    struct srv_header h[12];
    char attempts[BSC_NUM_TEXT_MAX], age[24], cost[32] = "0";
    uint64_t now = bsc_wall_ms();
    size_t n = 0;

    if (meta->stream) {
        h[n++] = (struct srv_header){BSC_STR("Content-Type"),
                                     BSC_STR("text/event-stream; charset=utf-8")};
        h[n++] = (struct srv_header){BSC_STR("Cache-Control"), BSC_STR("no-cache")};
    } else {
        h[n++] = (struct srv_header){BSC_STR("Content-Type"), BSC_STR("application/json")};
    }
    snprintf(age, sizeof(age), "%llu",
             (unsigned long long)(now > meta->stored_ms ? (now - meta->stored_ms) / 1000 : 0));
    h[n++] = (struct srv_header){BSC_STR("Age"), bsc_str_cstr(age)};
    if (r->cost.usd > 0) /* a semantic lookup's embedding, at its target's price */
        snprintf(cost, sizeof(cost), "%.8g", r->cost.usd);
    h[n++] = (struct srv_header){BSC_STR("x-bascule-cost-usd"), bsc_str_cstr(cost)};
    n += deliver_route_headers(r, h + n, attempts); /* with x-bascule-cache: hit */
    deliver_whole_begin(r, 200, "ok");
    guard_idem_record(r, body.p, body.len); /* an Idempotency-Key gets this answer too */
    guard_idem_finish(r);
    srv_resp_send(r->sreq, 200, NULL, h, n, body.p, body.len);
    deliver_whole_sent(r, body.len, true);
    if (meta->cost_usd > 0)
        metrics_inc(req__metrics(r), r->w->idx, METRIC_CACHE_SAVED, NULL, NULL, meta->cost_usd);
}

/* A shared lookup came back: a hit is answered, anything else is a miss. */
static enum reqcache_verdict shared_answer(struct request *r)
{
    r->c.asked = false;
    count(r, r->c.found ? "hit" : "miss");
    if (!r->c.found)
        return REQCACHE_PASS;
    reply_hit(r, bsc_buf_str(&r->c.hit), &r->c.hit_meta);
    return REQCACHE_ANSWERED;
}

/* The embedding came back: the closest answer of the same context, if close enough. No
 * vector (the embedding failed or timed out) is a miss. */
static enum reqcache_verdict semantic_answer(struct request *r)
{
    struct bsc_buf body;
    struct cache_meta meta;
    bool hit = false;

    r->c.asked = false;
    bsc_buf_init(&body, r->route->cache.max_entry_bytes);
    if (r->c.vec)
        hit = cache_sem_get(r->gw->sem, &r->c.key, r->c.vec, r->c.dim,
                            r->route->cache.min_similarity, bsc_wall_ms(), &body, &meta,
                            &r->c.similarity);
    count(r, hit ? "hit" : "miss");
    if (hit)
        reply_hit(r, bsc_buf_str(&body), &meta);
    bsc_buf_cleanup(&body);
    return hit ? REQCACHE_ANSWERED : REQCACHE_PASS;
}

/* The shared store answered the lookup (recorded in r->c): the machine goes on. */
static void on_shared_answer(void *arg, enum bsc_err err)
{
    struct request *r = arg;

    if (err && err != BSC_ENOTFOUND)
        LOG_DEBUG("%s: cache lookup in the store failed (%s): a miss", r->ident.id,
                  bsc_err_str(err));
    req_wake_run(r);
}

/* A semantic lookup: keyed by context, then the question embedded (REQCACHE_WAIT until it
 * comes back). With no-cache the answer may still be stored: it is embedded all the same. */
static enum reqcache_verdict semantic_lookup(struct request *r, bool no_cache)
{
    if (!reqcache_embed_key(r)) {
        count(r, "bypass");
        return REQCACHE_PASS;
    }
    if (no_cache) {
        count(r, "bypass");
        if (r->c.no_store || !reqcache_embed_start(r))
            r->c.keyed = false; /* nothing to store it under */
        else
            return REQCACHE_WAIT;
        return REQCACHE_PASS;
    }
    if (reqcache_embed_start(r))
        return REQCACHE_WAIT;
    count(r, "miss"); /* the embedding could not start: a miss, never an error */
    r->c.keyed = false;
    return REQCACHE_PASS;
}

static enum reqcache_verdict memory_lookup(struct request *r)
{
    struct bsc_buf body;
    struct cache_meta meta;
    bool hit;

    bsc_buf_init(&body, r->route->cache.max_entry_bytes);
    hit = cache_mem_get(r->gw->cache, &r->c.key, bsc_wall_ms(), &body, &meta);
    count(r, hit ? "hit" : "miss");
    if (hit)
        reply_hit(r, bsc_buf_str(&body), &meta);
    bsc_buf_cleanup(&body);
    return hit ? REQCACHE_ANSWERED : REQCACHE_PASS;
}

enum reqcache_verdict reqcache_lookup(struct request *r)
{
    struct bsc_str cc;

    if (!cache_on(r))
        return REQCACHE_PASS;
    if (r->c.waiting)
        return REQCACHE_WAIT;
    if (r->c.asked && semantic(r) && r->c.result)
        return (r->c.asked = false), REQCACHE_PASS; /* no-cache: embedded for the store only */
    if (r->c.asked)
        return semantic(r) ? semantic_answer(r) : shared_answer(r);
    if (r->c.result)
        return REQCACHE_PASS; /* decided before */
    cc = srv_req_header(r->sreq, BSC_STR("cache-control"));
    r->c.no_store = cc.p && has_directive(cc, "no-store");
    bsc_buf_init(&r->c.copy, r->route->cache.max_entry_bytes);
    bsc_buf_init(&r->c.hit, r->route->cache.max_entry_bytes);
    if (semantic(r))
        return semantic_lookup(r, cc.p && has_directive(cc, "no-cache"));
    if (cc.p && has_directive(cc, "no-cache")) {
        count(r, "bypass");
        make_key(r); /* no lookup, but the answer may still be stored */
        return REQCACHE_PASS;
    }
    if (!make_key(r)) {
        count(r, "bypass");
        return REQCACHE_PASS;
    }
    if (!shared(r))
        return memory_lookup(r);
    if (shcache_get(&r->c, r->gw->store, &r->w->loop, r->route, on_shared_answer, r))
        return REQCACHE_WAIT;
    count(r, "miss"); /* the store could not take the lookup: a miss, never an error */
    return REQCACHE_PASS;
}

void reqcache_record(struct request *r, const void *p, size_t len)
{
    if (r->c.keyed && !r->c.overflow && bsc_buf_append(&r->c.copy, p, len) != BSC_OK)
        r->c.overflow = true;
}

/* Whole and successful: a 200 that ended "ok", not cut, not a stream whose checks could
 * only be recorded while it passed (a pass-through stream with a contract). */
static bool storable(const struct request *r)
{
    return r->c.keyed && !r->c.no_store && !r->c.overflow && strcmp(r->c.result, "hit") != 0 &&
           r->d.status == 200 && r->d.termination && strcmp(r->d.termination, "ok") == 0 &&
           !r->d.limit_cut && !(r->input.stream && r->x.stream_failed) &&
           !(r->input.stream && !r->buffering && contract_active(r)) && r->c.copy.len > 0;
}

/* Under the context key with the question's vector; none (the embedding failed): not
 * stored. */
static void store_semantic(struct request *r, const struct cache_meta *meta)
{
    struct cache_sem_bounds b = {
        .limit_bytes = (uint64_t)(r->cfg->cache.memory_mb * 1048576.0),
        .max_entries = r->route->cache.max_entries,
    };

    if (!r->c.vec)
        return;
    if (cache_sem_put(r->gw->sem, &r->c.key, bsc_str_cstr(r->route->id), r->c.vec, r->c.dim,
                      bsc_buf_str(&r->c.copy), meta, (uint64_t)r->route->cache.ttl_s * 1000,
                      meta->stored_ms, &b) != BSC_OK)
        LOG_DEBUG("%s: answer not cached (semantic index bound)", r->ident.id);
}

void reqcache_store(struct request *r)
{
    struct cache_meta meta = {.stream = r->input.stream,
                              .cost_usd = r->cost.usd - r->c.embed_cost_usd, /* the answer's */
                              .stored_ms = bsc_wall_ms()};
    uint64_t limit = (uint64_t)(r->cfg->cache.memory_mb * 1048576.0);

    if (!r->c.result || !storable(r))
        return;
    if (semantic(r))
        store_semantic(r, &meta);
    else if (shared(r))
        shcache_put(&r->c, r->gw->store, &r->w->loop, r->route, bsc_buf_str(&r->c.copy),
                    &meta);
    else if (cache_mem_put(r->gw->cache, &r->c.key, bsc_str_cstr(r->route->id),
                           bsc_buf_str(&r->c.copy), &meta, (uint64_t)r->route->cache.ttl_s * 1000,
                           meta.stored_ms, limit) != BSC_OK)
        LOG_DEBUG("%s: answer not cached (larger than cache.memory_mb)", r->ident.id);
    r->c.keyed = false; /* stored once */
}

void reqcache_finish(struct request *r)
{
    shcache_detach(&r->c);
    reqcache_embed_finish(r);
    bsc_buf_cleanup(&r->c.copy);
    bsc_buf_cleanup(&r->c.hit);
}
