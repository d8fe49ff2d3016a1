/* SPDX-License-Identifier: MIT */
/* hstate_redis.c -- the health backend shared by several gateway processes through Redis.
 * Every decision is made on a local mirror (the in-process backend): the request path never
 * waits on Redis. Circuit transitions (opened, closed) and key cooldowns are written to
 * Redis and published on <prefix>events from this backend's own thread; the other
 * instances apply what they hear to their mirrors, and read the live keys back when they
 * (re)connect. Half-open probes are limited across instances by a probe lease (SET NX PX)
 * taken just before a circuit's open period ends. See docs/internals/redis.md. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wshadow"
#include <hiredis/adapters/libuv.h>
#pragma GCC diagnostic pop

#include "core/clock.h"
#include "core/id.h"
#include "core/log.h"
#include "core/redis_keys.h"
#include "health/hstate_mirror.h"
#include "health/hstate_redis.h"
#include "health/hstate_redis_int.h"
#include "health/hstate_redis_wire.h"

/* Reads a key's value and remaining life in one round trip. */
static const char LUA_PEEK[] =
    "return {redis.call('GET',KEYS[1]) or '', redis.call('PTTL',KEYS[1])}";

static struct hs_redis *hr(struct hstate *hs)
{
    return (struct hs_redis *)hs;
}

/* ---- the worker side: decide locally, queue what others must hear ----------------------- */

void hr__enqueue(struct hs_redis *h, struct hr_event *ev)
{
    uv_mutex_lock(&h->mu);
    if (h->queued >= HR_MAX_QUEUED) {
        uv_mutex_unlock(&h->mu);
        free(ev); /* Redis far behind: this instance decides on its own state (an ask of a
                     limit is overdue after timeout_ms and its set turns local) */
        return;
    }
    if (h->tail)
        h->tail->next = ev;
    else
        h->head = ev;
    h->tail = ev;
    h->queued++;
    uv_mutex_unlock(&h->mu);
    uv_async_send(&h->wake);
}

static void enqueue(struct hs_redis *h, char kind, const char *id, uint64_t ms, int reason,
                    int idx)
{
    struct hr_event *ev = calloc(1, sizeof(*ev));

    if (!ev)
        return;
    ev->kind = kind;
    ev->ms = ms;
    ev->reason = reason;
    ev->idx = idx;
    snprintf(ev->id, sizeof(ev->id), "%s", id);
    hr__enqueue(h, ev);
}

/* A local transition to open or to closed is announced; half-open stays local (the probe
 * lease decides who probes). An opening carries its length and the openings since the
 * circuit's last recovery, so that every instance keeps the same growing open time. */
static void announce(struct hs_redis *h, const struct cfg_target *t, const struct brk_change *c)
{
    char key[256];

    if (!c->changed || c->to == BRK_HALF_OPEN)
        return;
    hstate__breaker_key(t, key, sizeof(key));
    if (c->to == BRK_OPEN)
        enqueue(h, 'o', key, c->open_ms ? c->open_ms : t->breaker.open_ms,
                c->opens > INT32_MAX ? INT32_MAX : (int)c->opens, 0);
    else
        enqueue(h, 'c', key, t->breaker.open_ms, 0, 0);
}

static void r_record(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                     const struct attempt_report *rep, struct brk_change *change)
{
    struct hs_redis *h = hr(hs);
    struct brk_change c = {0};

    hstate_record(h->local, t, now_ms, rep, &c);
    announce(h, t, &c);
    if (change)
        *change = c;
}

static void r_health(struct hstate *hs, const struct cfg_target *t, bool up, uint64_t now_ms,
                     struct brk_change *change)
{
    struct hs_redis *h = hr(hs);
    struct brk_change c = {0};

    hstate_health(h->local, t, up, now_ms, &c);
    announce(h, t, &c);
    if (change)
        *change = c;
}

/* A rate limit on <t> cools the key for <t>'s model only: that is announced as 'm' (provider
 * and model, the pub/sub message alone: such cooldowns are short); a quota or a refusal cools
 * the key for every model: 'k', also kept in Redis for an instance that connects later. */
static void r_key_cooldown(struct hstate *hs, const struct cfg_provider *p,
                           const struct cfg_target *t, int idx, int reason,
                           int64_t retry_after_ms, uint64_t now_ms)
{
    struct hs_redis *h = hr(hs);
    uint64_t until = keys_cooldown_until(now_ms, (enum key_reason)reason,
                                         retry_after_ms > 0 ? (uint64_t)retry_after_ms : 0);
    char id[256];

    h->local->ops->key_cooldown(h->local, p, t, idx, reason, retry_after_ms, now_ms);
    if (idx < 0 || until <= now_ms)
        return;
    if (t && reason == KEY_RATE_LIMITED) {
        snprintf(id, sizeof(id), "%s\t%s", p->id, t->model);
        enqueue(h, 'm', id, until - now_ms, reason, idx);
    } else {
        enqueue(h, 'k', p->id, until - now_ms, reason, idx);
    }
}

/* ---- everything else is the mirror's ----------------------------------------------------- */

static enum brk_decision r_admit(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                                 double rand01)
{
    return hstate_admit(hr(hs)->local, t, now_ms, rand01);
}

/* A panic probe is this instance's own, within its own retry budget: it does not wait for
 * the probe lease (an outcome that closes or reopens the circuit is announced as usual). */
static enum brk_decision r_admit_panic(struct hstate *hs, const struct cfg_target *t,
                                       uint64_t now_ms)
{
    return hstate_admit_panic(hr(hs)->local, t, now_ms);
}

static void r_inflight(struct hstate *hs, const struct cfg_target *t, int delta)
{
    hstate_inflight(hr(hs)->local, t, delta);
}

static void r_view(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                   struct target_view *out)
{
    hstate_view(hr(hs)->local, t, now_ms, out);
}

static enum bsc_err r_set_disabled(struct hstate *hs, const struct cfg_target *t, bool disabled)
{
    return hstate_set_disabled(hr(hs)->local, t, disabled);
}

static bool r_is_disabled(struct hstate *hs, const struct cfg_target *t)
{
    return hstate_is_disabled(hr(hs)->local, t);
}

static int r_key_next(struct hstate *hs, const struct cfg_provider *p,
                      const struct cfg_target *t, uint64_t now_ms, uint64_t *soonest_ms)
{
    struct hstate *l = hr(hs)->local;

    return l->ops->key_next(l, p, t, now_ms, soonest_ms);
}

/* Adaptive limits are learnt per instance: each one sees its own 429s and successes. */
static void r_adaptive(struct hstate *hs, const struct cfg_target *t, struct adaptive_eff *eff,
                       uint32_t *inflight)
{
    struct hstate *l = hr(hs)->local;

    l->ops->adaptive(l, t, eff, inflight);
}

static int r_key_verify_take(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    return hstate_key_verify_take(hr(hs)->local, p, now_ms);
}

static void r_key_verify_done(struct hstate *hs, const struct cfg_provider *p, int idx,
                              enum key_verdict verdict, uint64_t now_ms)
{
    hstate_key_verify_done(hr(hs)->local, p, idx, verdict, now_ms);
}

static void r_keys(struct hstate *hs, const struct cfg_provider *p, const struct cfg_target *t,
                   uint64_t now_ms, struct hstate_keys *out)
{
    struct hstate *l = hr(hs)->local;

    l->ops->keys(l, p, t, now_ms, out);
}

/* The retry budget stays per instance: it bounds the retries this process adds on top of
 * its own first attempts, a ratio that holds per instance as it does in sum. */
static void r_budget_first(struct hstate *hs, uint64_t now_ms)
{
    hstate_budget_first(hr(hs)->local, now_ms);
}

static bool r_budget_available(struct hstate *hs, uint64_t now_ms)
{
    return hstate_budget_available(hr(hs)->local, now_ms);
}

static bool r_budget_take(struct hstate *hs, uint64_t now_ms)
{
    return hstate_budget_take(hr(hs)->local, now_ms);
}

/* ---- sync: the circuits and providers the store thread must know by name ---------------- */

static struct hr_circuit *circ_find(struct hs_redis *h, const char *key)
{
    for (size_t i = 0; i < h->n_circ; i++)
        if (strcmp(h->circ[i]->key, key) == 0)
            return h->circ[i];
    return NULL;
}

static void note_circuit(struct hs_redis *h, const struct cfg_target *t)
{
    char key[256];
    struct hr_circuit *c;

    hstate__breaker_key(t, key, sizeof(key));
    if ((c = circ_find(h, key))) {
        c->open_ms = t->breaker.open_ms;
        return;
    }
    if (h->n_circ == HR_MAX || !(c = calloc(1, sizeof(*c))))
        return;
    snprintf(c->key, sizeof(c->key), "%s", key);
    c->open_ms = t->breaker.open_ms;
    c->h = h;
    h->circ[h->n_circ++] = c;
}

static void note_provider(struct hs_redis *h, const struct cfg_provider *p)
{
    for (size_t i = 0; i < h->n_prov; i++) {
        if (strcmp(h->prov[i].id, p->id) == 0) {
            h->prov[i].n_keys = p->n_keys;
            return;
        }
    }
    if (h->n_prov == HR_MAX)
        return;
    snprintf(h->prov[h->n_prov].id, sizeof(h->prov[0].id), "%s", p->id);
    h->prov[h->n_prov++].n_keys = p->n_keys;
}

static enum bsc_err r_sync(struct hstate *hs, struct cfg *cfg, uint64_t now_ms)
{
    struct hs_redis *h = hr(hs);
    enum bsc_err err = hstate_sync(h->local, cfg, now_ms);

    uv_mutex_lock(&h->mu);
    for (size_t i = 0; i < cfg->n_targets; i++)
        note_circuit(h, &cfg->targets[i]);
    for (size_t i = 0; i < cfg->n_providers; i++)
        note_provider(h, &cfg->providers[i]);
    uv_mutex_unlock(&h->mu);
    return err;
}

/* ---- the store thread: commands --------------------------------------------------------- */

bool hr__cmd(struct hs_redis *h, redisCallbackFn *fn, void *priv, int argc, const char **argv)
{
    size_t lens[16];

    if (!h->cmd.up || !h->cmd.ac)
        return false; /* not connected: the mirror stays local until the next connect */
    for (int i = 0; i < argc; i++)
        lens[i] = strlen(argv[i]);
    return redisAsyncCommandArgv(h->cmd.ac, fn, priv, argc, argv, lens) == REDIS_OK;
}

static void circuit_rkey(struct hs_redis *h, const char *key, char *out, bool probe)
{
    size_t n = rkey_entity(out, RKEY_MAX, h->prefix, "circuit", (struct bsc_str){key, strlen(key)});

    if (n && probe && n + 7 < RKEY_MAX)
        memcpy(out + n, ":probe", 7); /* same hash tag, so the same slot */
}

static void claim_fire(uv_timer_t *t);

/* Asks for the probe lease <ms> from now, less a margin, so that the answer is known when
 * the mirror's open period ends. */
static void arm_claim(struct hr_circuit *c, uint64_t ms)
{
    struct hs_redis *h = c->h;

    if (!c->armed) {
        uv_timer_init(&h->loop, &c->claim);
        c->claim.data = c;
        c->armed = true;
    }
    uv_timer_start(&c->claim, claim_fire, ms > 2 * HR_CLAIM_MARGIN_MS ? ms - HR_CLAIM_MARGIN_MS
                                                                         : ms / 2, 0);
}

static void claim_reply(redisAsyncContext *ac, void *r, void *priv)
{
    struct hr_circuit *c = priv;
    redisReply *reply = r;
    uint32_t open_ms;

    (void)ac;
    if (!reply || reply->type != REDIS_REPLY_NIL || c->h->closing)
        return; /* won the lease (or Redis is gone): our own half-open probes go */
    uv_mutex_lock(&c->h->mu);
    open_ms = c->open_ms;
    uv_mutex_unlock(&c->h->mu);
    /* Another instance probes: stay open here, and ask again when that would end. */
    hstate__force(c->h->local, c->key, true, bsc_now_ms(), open_ms, 0);
    arm_claim(c, open_ms);
}

static void claim_fire(uv_timer_t *t)
{
    struct hr_circuit *c = t->data;
    struct hs_redis *h = c->h;
    char key[RKEY_MAX], px[24];
    const char *argv[6] = {"SET", key, h->instance, "NX", "PX", px};

    uv_mutex_lock(&h->mu);
    snprintf(px, sizeof(px), "%" PRIu32, c->open_ms ? c->open_ms : 1);
    uv_mutex_unlock(&h->mu);
    circuit_rkey(h, c->key, key, true);
    hr__cmd(h, claim_reply, c, 6, argv);
}

/* Writes one local transition to Redis and tells the other instances. */
static void publish(struct hs_redis *h, const struct hr_event *ev)
{
    char key[RKEY_MAX], probe[RKEY_MAX], id[300], ms[24], reason[8], msg[512];
    struct hr_msg m = {.kind = ev->kind, .ms = ev->ms ? ev->ms : 1, .reason = ev->reason,
                       .idx = ev->idx, .id = ev->id};
    struct hr_circuit *c;

    if (ev->kind == 'L' || ev->kind == 'G') {
        hr__limits_run(h, ev); /* the fleet's limits: not announced */
        return;
    }
    if (ev->kind == 'K') { /* the shared records changed: said, nothing kept */
        snprintf(m.inst, sizeof(m.inst), "%s", h->instance);
        hr__msg_format(&m, msg, sizeof(msg));
        hr__cmd(h, NULL, NULL, 3, (const char *[]){"PUBLISH", h->channel, msg});
        return;
    }
    snprintf(ms, sizeof(ms), "%" PRIu64, m.ms);
    snprintf(reason, sizeof(reason), "%d", ev->reason);
    snprintf(m.inst, sizeof(m.inst), "%s", h->instance);
    hr__msg_format(&m, msg, sizeof(msg));
    if (ev->kind == 'm') {
        /* One model's cooldown, kept for an instance that connects later unless the key
         * already has a record (a quota or refusal for every model wins). */
        char val[300];
        const char *tab = strchr(ev->id, '\t');
        int plen = tab ? (int)(tab - ev->id) : (int)strlen(ev->id);

        snprintf(id, sizeof(id), "%.*s:%d", plen, ev->id, ev->idx);
        snprintf(val, sizeof(val), "%d\t%s", ev->reason, tab ? tab + 1 : "");
        rkey_entity(key, RKEY_MAX, h->prefix, "cool", (struct bsc_str){id, strlen(id)});
        hr__cmd(h, NULL, NULL, 6, (const char *[]){"SET", key, val, "PX", ms, "NX"});
    } else if (ev->kind == 'k') {
        snprintf(id, sizeof(id), "%s:%d", ev->id, ev->idx);
        rkey_entity(key, RKEY_MAX, h->prefix, "cool", (struct bsc_str){id, strlen(id)});
        hr__cmd(h, NULL, NULL, 5, (const char *[]){"SET", key, reason, "PX", ms});
    } else {
        circuit_rkey(h, ev->id, key, false);
        circuit_rkey(h, ev->id, probe, true);
        uv_mutex_lock(&h->mu);
        c = circ_find(h, ev->id);
        uv_mutex_unlock(&h->mu);
        if (ev->kind == 'o') {
            char val[24];

            /* "open <openings since the last recovery>", for an instance that connects
             * while it is open. */
            snprintf(val, sizeof(val), "open %d", ev->reason);
            hr__cmd(h, NULL, NULL, 5, (const char *[]){"SET", key, val, "PX", ms});
            if (c)
                arm_claim(c, ev->ms);
        } else {
            hr__cmd(h, NULL, NULL, 3, (const char *[]){"DEL", key, probe});
            if (c && c->armed)
                uv_timer_stop(&c->claim);
        }
    }
    hr__cmd(h, NULL, NULL, 3, (const char *[]){"PUBLISH", h->channel, msg});
}

/* ---- the store thread: what the other instances say ------------------------------------ */

/* Calls the function hstate_on_notify() set, if any (the store thread), under the mutex: once
 * on_notify(NULL) returned it is never called again (its handle may be closing). */
static void notify_local(struct hs_redis *h)
{
    uv_mutex_lock(&h->mu);
    if (h->notify_fn)
        h->notify_fn(h->notify_ud);
    uv_mutex_unlock(&h->mu);
}

static void apply(struct hs_redis *h, const char *text)
{
    struct hr_msg m;
    uint64_t now = bsc_now_ms();
    struct hr_circuit *c;

    if (!hr__msg_parse(text, &m) || strcmp(m.inst, h->instance) == 0)
        return;
    if (m.kind == 'K') {
        notify_local(h);
        return;
    }
    const char *msg = m.id;
    char kind = m.kind;
    uint64_t ms = m.ms;
    int reason = m.reason, idx = m.idx;

    if (kind == 'k') {
        LOG_INFO("shared state: key %d of provider %s cools down for %" PRIu64 " ms (another "
                 "instance)", idx, msg, ms);
        hstate__key_cool(h->local, msg, NULL, idx, reason, now + ms);
        return;
    }
    if (kind == 'm') {
        char prov[256], *tab;

        snprintf(prov, sizeof(prov), "%s", msg);
        if (!(tab = strchr(prov, '\t')))
            return;
        *tab = '\0';
        LOG_INFO("shared state: key %d of provider %s cools down for model %s for %" PRIu64
                 " ms (another instance)", idx, prov, tab + 1, ms);
        hstate__key_cool(h->local, prov, tab + 1, idx, reason, now + ms);
        return;
    }
    if (hstate__force(h->local, msg, kind == 'o', now, ms, reason > 0 ? (uint32_t)reason : 0))
        LOG_INFO("shared state: circuit %s %s (another instance)", msg,
                 kind == 'o' ? "opened" : "closed");
    uv_mutex_lock(&h->mu);
    c = circ_find(h, msg);
    uv_mutex_unlock(&h->mu);
    if (c && kind == 'o')
        arm_claim(c, ms);
    else if (c && c->armed)
        uv_timer_stop(&c->claim);
}

static void on_message(redisAsyncContext *ac, void *r, void *priv)
{
    redisReply *reply = r;

    (void)ac;
    if (!reply || reply->type != REDIS_REPLY_ARRAY || reply->elements != 3 ||
        reply->element[0]->type != REDIS_REPLY_STRING)
        return;
    /* (Re)subscribed: what was said while this instance was away is not repeated. */
    if (strcmp(reply->element[0]->str, "subscribe") == 0) {
        notify_local(priv);
        return;
    }
    if (strcmp(reply->element[0]->str, "message") != 0 ||
        reply->element[2]->type != REDIS_REPLY_STRING)
        return;
    apply(priv, reply->element[2]->str);
}

/* What a (re)connected instance learns: circuits still open, keys still cooling. */
static void peek_circuit(redisAsyncContext *ac, void *r, void *priv)
{
    struct hr_circuit *c = priv;
    uint64_t left_ms;
    uint32_t opens;

    (void)ac;
    if (!hr__circuit_read(r, &left_ms, &opens) || c->h->closing)
        return;
    hstate__force(c->h->local, c->key, true, bsc_now_ms(), left_ms, opens);
    arm_claim(c, left_ms);
}

static void peek_cool(redisAsyncContext *ac, void *r, void *priv)
{
    struct hs_redis *h = ac->data ? ((struct hr_conn *)ac->data)->h : NULL;
    struct hr_cool cool;
    char *id = priv, *colon;

    if (h && hr__cool_read(r, &cool) && (colon = strrchr(id, ':'))) {
        *colon = '\0';
        hstate__key_cool(h->local, id, cool.model, (int)strtol(colon + 1, NULL, 10),
                         cool.reason, bsc_now_ms() + cool.left_ms);
    }
    free(id);
}

static void resync(struct hs_redis *h)
{
    char key[RKEY_MAX], id[160];
    const char *argv[4] = {"EVAL", LUA_PEEK, "1", key};

    uv_mutex_lock(&h->mu);
    for (size_t i = 0; i < h->n_circ; i++) {
        circuit_rkey(h, h->circ[i]->key, key, false);
        hr__cmd(h, peek_circuit, h->circ[i], 4, argv);
    }
    for (size_t i = 0; i < h->n_prov; i++) {
        for (size_t k = 0; k < h->prov[i].n_keys && k < KEYS_MAX; k++) {
            char *dup;
            snprintf(id, sizeof(id), "%s:%zu", h->prov[i].id, k);
            rkey_entity(key, RKEY_MAX, h->prefix, "cool", (struct bsc_str){id, strlen(id)});
            if ((dup = strdup(id)) && !hr__cmd(h, peek_cool, dup, 4, argv))
                free(dup);
        }
    }
    uv_mutex_unlock(&h->mu);
}

/* ---- the store thread: two connections (commands; the subscription) ------------------- */

static void conn_start(struct hr_conn *c);

static void retry_fire(uv_timer_t *t)
{
    conn_start(t->data);
}

static void conn_lost(struct hr_conn *c)
{
    c->ac = NULL;
    c->up = false;
    if (!c->sub)
        hr__limits_connected(c->h, false);
    if (c->h->closing)
        return;
    uv_timer_start(&c->retry, retry_fire, c->backoff_ms, 0);
    c->backoff_ms = c->backoff_ms * 2 > HR_BACKOFF_MAX_MS ? HR_BACKOFF_MAX_MS : c->backoff_ms * 2;
}

static void on_connect(const redisAsyncContext *ac, int status)
{
    struct hr_conn *c = ac->data;

    if (status != REDIS_OK) {
        conn_lost(c); /* hiredis frees the context */
        return;
    }
    uv_timer_stop(&c->watchdog);
    c->up = true;
    c->backoff_ms = HR_BACKOFF_MIN_MS;
    if (!c->sub) {
        resync(c->h);
        hr__limits_connected(c->h, true);
    }
}

static void on_disconnect(const redisAsyncContext *ac, int status)
{
    (void)status;
    conn_lost(ac->data);
}

/* hiredis's libuv adapter drops poll errors: a refused connect would never call back. */
static void watchdog_fire(uv_timer_t *t)
{
    struct hr_conn *c = t->data;

    if (c->up || !c->ac)
        return;
    redisAsyncFree(c->ac); /* not connected: no callback runs */
    conn_lost(c);
}

static void conn_start(struct hr_conn *c)
{
    struct hs_redis *h = c->h;
    redisAsyncContext *ac = h->url.path[0] ? redisAsyncConnectUnix(h->url.path)
                                           : redisAsyncConnect(h->url.host, h->url.port);

    if (!ac || ac->err) {
        if (ac)
            redisAsyncFree(ac);
        conn_lost(c);
        return;
    }
    ac->data = c;
    c->ac = ac;
    redisLibuvAttach(ac, &h->loop);
    redisAsyncSetConnectCallback(ac, on_connect);
    redisAsyncSetDisconnectCallback(ac, on_disconnect);
    if (h->url.password[0])
        redisAsyncCommand(ac, NULL, NULL, "AUTH %s", h->url.password);
    if (c->sub)
        redisAsyncCommand(ac, on_message, h, "SUBSCRIBE %s", h->channel);
    else if (h->url.db)
        redisAsyncCommand(ac, NULL, NULL, "SELECT %d", h->url.db);
    uv_timer_start(&c->watchdog, watchdog_fire, HR_CONNECT_MS, 0);
}

static void ping_reply(redisAsyncContext *ac, void *r, void *priv)
{
    (void)ac;
    struct hs_redis *h = priv;

    if (h->ping_local && h->cmd.up && r)
        hr__limits_connected(h, true);
    h->ping_out = false;
    h->ping_local = false;
}

/* How late a PING may be before the limits decide locally: a ping period, or store.timeout_ms
 * when that is longer -- a Redis slower than the operator allows, never merely slower than
 * the ping's own period (a loaded host answers a PING late without being away). */
static uint64_t ping_grace_ms(const struct hs_redis *h)
{
    return h->share.timeout_ms > HR_PING_MS ? h->share.timeout_ms : HR_PING_MS;
}

/* libuv reports a socket error (a reset) by stopping the poll, which hiredis's adapter
 * ignores: a dead connection could look alive forever. A PING unanswered for the grace
 * turns the limits local; for twice the grace it drops both connections, which then
 * reconnect (and resynchronise). */
static void ping_fire(uv_timer_t *t)
{
    struct hs_redis *h = t->data;
    uint64_t now = bsc_now_ms(), late;

    if (!h->cmd.up || !h->cmd.ac)
        return;
    if (h->ping_out) {
        late = now - h->ping_sent_ms;
        if (late >= 2 * ping_grace_ms(h)) {
            redisAsyncFree(h->cmd.ac); /* on_disconnect: conn_lost, reconnect */
            if (h->sub.ac && h->sub.up)
                redisAsyncFree(h->sub.ac);
        } else if (late >= ping_grace_ms(h) && !h->ping_local) {
            h->ping_local = true;
            hr__limits_connected(h, false); /* no answer in time: limits decide locally */
        }
        return;
    }
    if (redisAsyncCommand(h->cmd.ac, ping_reply, h, "PING") == REDIS_OK) {
        h->ping_out = true;
        h->ping_sent_ms = now;
    }
}

static void conn_init(struct hs_redis *h, struct hr_conn *c, bool sub)
{
    c->h = h;
    c->sub = sub;
    c->backoff_ms = HR_BACKOFF_MIN_MS;
    uv_timer_init(&h->loop, &c->retry);
    uv_timer_init(&h->loop, &c->watchdog);
    c->retry.data = c->watchdog.data = c;
}

static void conn_close(struct hr_conn *c)
{
    if (c->ac)
        redisAsyncFree(c->ac);
    c->ac = NULL;
    c->up = false;
    uv_close((uv_handle_t *)&c->retry, NULL);
    uv_close((uv_handle_t *)&c->watchdog, NULL);
}

static void close_all(struct hs_redis *h)
{
    h->closing = true;
    conn_close(&h->cmd);
    conn_close(&h->sub);
    for (size_t i = 0; i < h->n_circ; i++)
        if (h->circ[i]->armed)
            uv_close((uv_handle_t *)&h->circ[i]->claim, NULL);
    uv_close((uv_handle_t *)&h->ping, NULL);
    hr__limits_close(h);
    uv_close((uv_handle_t *)&h->wake, NULL);
}

static void on_wake(uv_async_t *a)
{
    struct hs_redis *h = a->data;
    struct hr_event *ev, *next;
    bool stop;

    uv_mutex_lock(&h->mu);
    ev = h->head;
    h->head = h->tail = NULL;
    h->queued = 0;
    stop = h->stopping;
    uv_mutex_unlock(&h->mu);
    for (; ev; ev = next) {
        next = ev->next;
        if (!h->closing)
            publish(h, ev);
        free(ev);
    }
    if (stop && !h->closing)
        close_all(h);
}

static void hr_main(void *arg)
{
    struct hs_redis *h = arg;

    conn_start(&h->cmd);
    conn_start(&h->sub);
    uv_run(&h->loop, UV_RUN_DEFAULT);
}

/* ---- life ----------------------------------------------------------------------------- */

static void r_destroy(struct hstate *hs)
{
    struct hs_redis *h = hr(hs);

    uv_mutex_lock(&h->mu);
    h->stopping = true;
    uv_mutex_unlock(&h->mu);
    uv_async_send(&h->wake);
    uv_thread_join(&h->thread);
    uv_loop_close(&h->loop);
    uv_mutex_destroy(&h->mu);
    for (size_t i = 0; i < h->n_circ; i++)
        free(h->circ[i]);
    hr__limits_free(h);
    hstate_free(h->local);
    free(h);
}

static void r_notify(struct hstate *hs)
{
    enqueue((struct hs_redis *)hs, 'K', "records", 1, 0, 0);
}

static void r_on_notify(struct hstate *hs, void (*fn)(void *ud), void *ud)
{
    struct hs_redis *h = (struct hs_redis *)hs;

    uv_mutex_lock(&h->mu);
    h->notify_fn = fn;
    h->notify_ud = ud;
    uv_mutex_unlock(&h->mu);
}

static const struct hstate_ops redis_ops = {
    .destroy = r_destroy,
    .sync = r_sync,
    .admit = r_admit,
    .admit_panic = r_admit_panic,
    .record = r_record,
    .inflight = r_inflight,
    .view = r_view,
    .health = r_health,
    .set_disabled = r_set_disabled,
    .is_disabled = r_is_disabled,
    .key_next = r_key_next,
    .key_cooldown = r_key_cooldown,
    .key_verify_take = r_key_verify_take,
    .key_verify_done = r_key_verify_done,
    .keys = r_keys,
    .adaptive = r_adaptive,
    .budget_first = r_budget_first,
    .budget_available = r_budget_available,
    .budget_take = r_budget_take,
    .notify = r_notify,
    .on_notify = r_on_notify,
};

static bool hr_start(struct hs_redis *h)
{
    if (uv_loop_init(&h->loop))
        return false;
    if (uv_mutex_init(&h->mu)) {
        uv_loop_close(&h->loop);
        return false;
    }
    uv_async_init(&h->loop, &h->wake, on_wake);
    h->wake.data = h;
    conn_init(h, &h->cmd, false);
    conn_init(h, &h->sub, true);
    uv_timer_init(&h->loop, &h->ping);
    h->ping.data = h;
    uv_timer_start(&h->ping, ping_fire, HR_PING_MS, HR_PING_MS);
    hr__limits_start(h);
    return uv_thread_create(&h->thread, hr_main, h) == 0;
}

struct lim_share *hstate_redis_share(struct hstate *hs)
{
    return &hr(hs)->share;
}

struct hstate *hstate_redis_new(const struct cfg_store *st, char *err, size_t errlen)
{
    struct hs_redis *h = calloc(1, sizeof(*h));

    if (!h || !(h->local = hstate_new())) {
        snprintf(err, errlen, "out of memory");
        free(h);
        return NULL;
    }
    h->base.ops = &redis_ops;
    if (redis_url_parse(st->url, &h->url, err, errlen) != BSC_OK) {
        hstate_free(h->local);
        free(h);
        return NULL;
    }
    snprintf(h->prefix, sizeof(h->prefix), "%s", st->prefix ? st->prefix : RKEY_DEFAULT_PREFIX);
    snprintf(h->channel, sizeof(h->channel), "%sevents", h->prefix);
    snprintf(h->instance, sizeof(h->instance), "%016" PRIx64, bsc_rand64());
    hr__limits_init(h, st);
    if (!hr_start(h)) {
        snprintf(err, errlen, "cannot start the health state's Redis thread");
        return NULL; /* the process exits on this error */
    }
    return &h->base;
}
