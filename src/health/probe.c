/* SPDX-License-Identifier: MIT */
/* probe.c -- the health-check scheduler: one timer ticks every PROBE_TICK_MS, reads the
 * current config snapshot and starts the probes that are due, at most one per provider
 * at a time. A probe is an ordinary upstream transfer with a short timeout. The same tick
 * re-verifies refused keys: a list-models request with the key in question, at most one
 * per provider at a time, whose verdict puts the key back or keeps it out (keys.h). */
#include "health/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/clock.h"
#include "core/log.h"
#include "health/hstate.h"
#include "health/keys.h"
#include "metrics/metrics.h"
#include "providers/provider.h"
#include "upstream/upstream.h"

#define PROBE_TICK_MS    250
#define PROBE_TIMEOUT_MS 5000
#define PROBE_MAX        256

struct probe_slot {
    char *provider_id; /* owned */
    bool verify;       /* re-verifies refused keys, else the health probe */
    int key_idx;       /* the key the running probe sends (verify: the one re-verified) */
    uint64_t due_ms;
    struct up_transfer *xfer; /* running probe, or NULL */
    struct prober *owner;
    struct prov_http http;    /* owned, alive while the transfer runs */
    const char *headers[32];
};

struct prober {
    uv_loop_t *loop;
    struct up_multi *up;
    struct hstate *hs;
    struct metrics *metrics;
    unsigned shard; /* the metrics shard of the loop it runs on */
    uv_timer_t timer;
    struct probe_slot slots[PROBE_MAX];
    size_t n;
};

static struct probe_slot *slot_for(struct prober *pr, const char *id, bool verify)
{
    for (size_t i = 0; i < pr->n; i++)
        if (pr->slots[i].verify == verify && strcmp(pr->slots[i].provider_id, id) == 0)
            return &pr->slots[i];
    if (pr->n == PROBE_MAX)
        return NULL;
    pr->slots[pr->n] = (struct probe_slot){.provider_id = strdup(id), .owner = pr,
                                           .verify = verify, .key_idx = -1};
    if (!pr->slots[pr->n].provider_id)
        return NULL;
    bsc_buf_init(&pr->slots[pr->n].http.url, 8192);
    bsc_buf_init(&pr->slots[pr->n].http.headers, 16384);
    bsc_buf_init(&pr->slots[pr->n].http.body, 16384);
    return &pr->slots[pr->n++];
}

/* Applies a result to every target of the provider in the current snapshot. */
static void apply(struct prober *pr, const char *provider_id, bool up)
{
    struct cfg *cfg = cfg_current_get();
    uint64_t now = bsc_now_ms();

    for (size_t i = 0; cfg && i < cfg->n_targets; i++) {
        struct brk_change c;
        if (strcmp(cfg->targets[i].provider->id, provider_id) != 0)
            continue;
        hstate_health(pr->hs, &cfg->targets[i], up, now, &c);
        if (c.changed)
            LOG_WARN("health probe: circuit of %s %s -> %s", cfg->targets[i].id,
                     brk_state_name(c.from), brk_state_name(c.to));
    }
    cfg_unref(cfg);
}

static void on_head(void *ud, struct up_transfer *t, int status)
{
    (void)ud;
    (void)t;
    (void)status;
}

static bool on_data(void *ud, struct up_transfer *t, const char *p, size_t len)
{
    (void)ud;
    (void)t;
    (void)p;
    (void)len;
    return false; /* the body is not needed */
}

/* The verdict of a key's re-verification: only a 2xx says the key works and only a
 * refusal (401/403) says it does not; anything else says nothing about the key. */
static enum key_verdict verdict_of(enum up_result res, int status)
{
    if (res == UP_OK && status >= 200 && status < 300)
        return KEY_VERIFY_OK;
    if (res == UP_OK && (status == 401 || status == 403))
        return KEY_VERIFY_REFUSED;
    return KEY_VERIFY_INCONCLUSIVE;
}

/* Ends key <s>->key_idx's re-verification with <verdict>. */
static void verified(struct probe_slot *s, enum key_verdict verdict)
{
    struct prober *pr = s->owner;
    struct cfg *cfg = cfg_current_get();

    for (size_t i = 0; cfg && i < cfg->n_providers; i++) {
        if (strcmp(cfg->providers[i].id, s->provider_id) != 0)
            continue;
        hstate_key_verify_done(pr->hs, &cfg->providers[i], s->key_idx, verdict, bsc_now_ms());
        metrics_inc(pr->metrics, pr->shard, METRIC_KEY_REVERIFICATIONS, s->provider_id,
                    keys_verdict_name(verdict), 1);
        if (verdict == KEY_VERIFY_OK)
            LOG_INFO("key %d of %s works again: back in rotation", s->key_idx, s->provider_id);
    }
    cfg_unref(cfg);
    s->key_idx = -1;
}

/* A health probe's 401 is about the key it sent, not about the provider: the key cools as a
 * refused credential (re-verified later when health.key_reverify_ms is set) and the circuits
 * of the provider's targets are left alone, as for a request's 401 (docs/internals/breaker.md). */
static void probe_key_refused(struct probe_slot *s)
{
    struct prober *pr = s->owner;
    struct cfg *cfg = cfg_current_get();

    for (size_t i = 0; cfg && i < cfg->n_providers; i++) {
        const struct cfg_provider *p = &cfg->providers[i];

        if (strcmp(p->id, s->provider_id) != 0 || (size_t)s->key_idx >= p->n_keys)
            continue;
        hstate_key_cooldown(pr->hs, p, s->key_idx, KEY_AUTH, -1, bsc_now_ms());
        metrics_inc(pr->metrics, pr->shard, METRIC_KEY_COOLDOWNS, p->id, "auth", 1);
        LOG_WARN("health probe of %s: key %d refused (401): cooled, circuits unchanged", p->id,
                 s->key_idx);
    }
    cfg_unref(cfg);
}

static void on_done(void *ud, struct up_transfer *t, enum up_result res, const char *detail)
{
    struct probe_slot *s = ud;
    int status = up_status(t);
    bool up = res == UP_OK && status >= 200 && status < 300;

    s->xfer = NULL;
    if (s->verify) {
        verified(s, verdict_of(res, status));
        return;
    }
    if (res == UP_OK && status == 401 && s->key_idx >= 0) {
        probe_key_refused(s);
        return;
    }
    if (!up)
        LOG_INFO("health probe of %s failed: %s %d %s", s->provider_id, up_result_name(res),
                 status, detail ? detail : "");
    apply(s->owner, s->provider_id, up);
}

static const struct up_callbacks probe_cb = {on_head, on_data, on_done};

/* Starts a probe of <p> with <op> and key <key_idx> (-1: none); false when it could not. */
static bool start_probe(struct prober *pr, struct probe_slot *s, const struct cfg *cfg,
                        const struct cfg_provider *p, enum prov_op op, int key_idx)
{
    const struct cfg_target *first = NULL;
    struct prov_call call;
    struct up_request req;
    char why[128];
    size_t n = 0;

    for (size_t i = 0; i < cfg->n_targets && !first; i++)
        if (cfg->targets[i].provider == p)
            first = &cfg->targets[i];
    if (!first)
        return false; /* a provider nothing routes to needs no probing */
    call = (struct prov_call){
        .op = op,
        .provider = p,
        .target = first,
        .key = key_idx >= 0 && (size_t)key_idx < p->n_keys ? p->keys[key_idx] : NULL,
        /* the wall clock: bedrock signs it (x-amz-date), vertex checks its token against it */
        .created = (int64_t)(bsc_wall_ms() / 1000),
    };
    bsc_buf_reset(&s->http.url);
    bsc_buf_reset(&s->http.headers);
    bsc_buf_reset(&s->http.body);
    if (prov_ops_for(p->kind)->build(&call, &s->http, why, sizeof(why)) != BSC_OK)
        return false;
    for (size_t off = 0; off < s->http.headers.len && n < BSC_ARRAY_LEN(s->headers);) {
        s->headers[n++] = s->http.headers.p + off;
        off += strlen(s->http.headers.p + off) + 1;
    }
    s->key_idx = call.key ? key_idx : -1;
    req = (struct up_request){
        .url = s->http.url.p,
        .method = s->http.method,
        .headers = s->headers,
        .n_headers = n,
        .body = s->http.body.p,
        .body_len = s->http.body.len,
        .connect_timeout_ms = p->connect_timeout_ms,
        .ca_file = p->tls_ca_file,
        .timeout_ms = PROBE_TIMEOUT_MS,
    };
    if (up_start(pr->up, &req, &probe_cb, s, &s->xfer) != BSC_OK) {
        s->xfer = NULL;
        return false;
    }
    return true;
}

/* Starts the re-verification of a refused key of <p> when one is due. */
static void reverify_keys(struct prober *pr, const struct cfg *cfg, const struct cfg_provider *p,
                          uint64_t now)
{
    struct probe_slot *s;
    int idx;

    if (p->disabled || p->n_keys == 0 || p->health.key_reverify_ms == 0)
        return;
    s = slot_for(pr, p->id, true);
    if (!s || s->xfer)
        return;
    idx = hstate_key_verify_take(pr->hs, p, now);
    if (idx < 0)
        return;
    s->key_idx = idx;
    if (!start_probe(pr, s, cfg, p, PROV_OP_PROBE_MODELS, idx))
        verified(s, KEY_VERIFY_INCONCLUSIVE);
}

static void on_tick(uv_timer_t *h)
{
    struct prober *pr = h->data;
    struct cfg *cfg = cfg_current_get();
    uint64_t now = bsc_now_ms();

    for (size_t i = 0; cfg && i < cfg->n_providers; i++) {
        const struct cfg_provider *p = &cfg->providers[i];
        struct probe_slot *s;

        reverify_keys(pr, cfg, p, now);
        if (p->disabled || p->health.probe == CFG_PROBE_NONE || p->health.interval_ms == 0)
            continue;
        s = slot_for(pr, p->id, false);
        if (s && s->due_ms == 0)
            s->due_ms = now + p->health.interval_ms;
        if (!s || s->xfer || now < s->due_ms)
            continue;
        s->due_ms = now + p->health.interval_ms;
        start_probe(pr, s, cfg, p,
                    p->health.probe == CFG_PROBE_COMPLETION ? PROV_OP_PROBE_COMPLETION
                                                            : PROV_OP_PROBE_MODELS,
                    p->n_keys ? 0 : -1);
    }
    cfg_unref(cfg);
}

struct prober *prober_start(uv_loop_t *loop, struct up_multi *up, struct hstate *hs,
                             struct metrics *metrics, unsigned shard)
{
    struct prober *pr = calloc(1, sizeof(*pr));

    if (!pr)
        return NULL;
    pr->loop = loop;
    pr->up = up;
    pr->hs = hs;
    pr->metrics = metrics;
    pr->shard = shard;
    uv_timer_init(loop, &pr->timer);
    pr->timer.data = pr;
    /* The first round waits one interval: a fresh gateway has no reason to doubt. */
    uv_timer_start(&pr->timer, on_tick, PROBE_TICK_MS, PROBE_TICK_MS);
    return pr;
}

static void prober_closed(uv_handle_t *h)
{
    struct prober *pr = h->data;

    for (size_t i = 0; i < pr->n; i++) {
        free(pr->slots[i].provider_id);
        bsc_buf_cleanup(&pr->slots[i].http.url);
        bsc_buf_cleanup(&pr->slots[i].http.headers);
        bsc_buf_cleanup(&pr->slots[i].http.body);
    }
    free(pr);
}

void prober_stop(struct prober *pr)
{
    if (!pr)
        return;
    for (size_t i = 0; i < pr->n; i++) {
        if (pr->slots[i].xfer)
            up_cancel(pr->slots[i].xfer);
        pr->slots[i].xfer = NULL;
    }
    uv_timer_stop(&pr->timer);
    uv_close((uv_handle_t *)&pr->timer, prober_closed);
}
