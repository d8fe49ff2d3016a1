/* SPDX-License-Identifier: MIT */
/* hstate_local.c -- the in-process health backend: one object per target, per provider and
 * per circuit, each with its own lock, found by id only when a config is synced (never on the
 * request path) and never removed while the process runs, so a request holding an older
 * snapshot always finds its objects. Counters a request bumps or a status page reads (in
 * flight, successes, failures, health, kill switch) are C11 atomics, read without a lock. */
#include "health/hstate.h"
#include "health/hstate_mirror.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "health/budget.h"
#include "health/tstats.h"

#define HSTATE_MAX 1024

/* One circuit, shared by every target whose breaker.key dimensions agree. */
struct brk_entry {
    char *key; /* owned: "provider|model|region|deployment" as the dimensions select */
    pthread_mutex_t lock;
    struct brk brk;
};

struct hs_target {
    char *id; /* owned */
    _Atomic(struct brk_entry *) b; /* borrowed from hs_local.brks; a reload may move it */
    pthread_mutex_t lock;          /* the EWMAs and the last error */
    struct tstats ts;              /* its EWMAs only: the counters are the atomics below */
    const char *last_error;
    uint64_t last_error_wall_ms;
    atomic_uint inflight;
    atomic_ullong successes, failures;
    atomic_int health; /* enum target_health */
    atomic_bool admin_disabled, misconfigured;
    atomic_int model_slot; /* its model's slot in its provider's key pool; -1: none */
    struct adaptive adapt; /* under <lock> */
    /* Set (under <lock>, never cleared) when <adapt> first cuts: until then its effective
     * limits are the config's caps, which l_adaptive hands out without the lock. */
    atomic_bool adapt_cut;
};

struct hs_provider {
    char *id; /* owned */
    pthread_mutex_t lock;
    struct keypool keys;
    /* The pool's key count while none of its keys has been cooled since the pool was
     * (re)started, when every key is usable for every model; else 0. Written under <lock>;
     * l_keys answers from it without the lock. */
    atomic_uint calm_keys;
    char *models[KEYS_MODELS_MAX]; /* owned: the model of each key-pool model slot */
    int n_models;
};

struct hs_local {
    struct hstate base;
    pthread_mutex_t sync_lock; /* the tables below: only sync adds to them */
    struct hs_target *tgts[HSTATE_MAX];
    size_t n_tgts;
    struct hs_provider *provs[HSTATE_MAX];
    size_t n_provs;
    struct brk_entry *brks[HSTATE_MAX];
    size_t n_brks;
    pthread_mutex_t budget_lock;
    struct rbudget budget;
};

static struct hs_local *local(struct hstate *hs)
{
    return (struct hs_local *)hs;
}

/* ---- sync: the tables, by id ---- */

static struct hs_target *tgt_find(struct hs_local *hl, const char *id)
{
    for (size_t i = 0; i < hl->n_tgts; i++)
        if (strcmp(hl->tgts[i]->id, id) == 0)
            return hl->tgts[i];
    return NULL;
}

static struct hs_provider *prov_find(struct hs_local *hl, const char *id)
{
    for (size_t i = 0; i < hl->n_provs; i++)
        if (strcmp(hl->provs[i]->id, id) == 0)
            return hl->provs[i];
    return NULL;
}

/* The breaker identity of <t> from its breaker.key dimensions. The key dimension is not
 * part of it: a failing key (rate limit, quota, auth) cools down on its own instead of
 * opening a circuit. No dimension at all: one circuit per target. */
void hstate__breaker_key(const struct cfg_target *t, char *out, size_t len)
{
    uint32_t d = t->breaker.key_dims;

    if (!(d & (CFG_BRK_PROVIDER | CFG_BRK_MODEL | CFG_BRK_REGION | CFG_BRK_DEPLOYMENT))) {
        snprintf(out, len, "target:%s", t->id);
        return;
    }
    snprintf(out, len, "%s|%s|%s|%s", d & CFG_BRK_PROVIDER ? t->provider->id : "*",
             d & CFG_BRK_MODEL ? t->model : "*",
             d & CFG_BRK_REGION && t->provider->region ? t->provider->region : "*",
             d & CFG_BRK_DEPLOYMENT && t->deployment ? t->deployment : "*");
}

/* The circuit <key>, created or given the new parameters (the config resolves overrides
 * top level -> provider -> target into target->breaker). */
static struct brk_entry *brk_slot(struct hs_local *hl, const char *key,
                                  const struct cfg_breaker *params)
{
    struct brk_entry *b;

    for (size_t i = 0; i < hl->n_brks; i++) {
        if (strcmp(hl->brks[i]->key, key) == 0) {
            pthread_mutex_lock(&hl->brks[i]->lock);
            brk_set_params(&hl->brks[i]->brk, params);
            pthread_mutex_unlock(&hl->brks[i]->lock);
            return hl->brks[i];
        }
    }
    if (hl->n_brks == HSTATE_MAX)
        return NULL;
    b = calloc(1, sizeof(*b));
    if (!b || !(b->key = strdup(key))) {
        free(b);
        return NULL;
    }
    pthread_mutex_init(&b->lock, NULL);
    brk_init(&b->brk, params);
    hl->brks[hl->n_brks++] = b;
    return b;
}

static struct hs_target *tgt_new(const char *id)
{
    struct hs_target *ts = calloc(1, sizeof(*ts));

    if (!ts || !(ts->id = strdup(id))) {
        free(ts);
        return NULL;
    }
    pthread_mutex_init(&ts->lock, NULL);
    tstats_init(&ts->ts);
    adaptive_init(&ts->adapt);
    atomic_init(&ts->adapt_cut, false);
    atomic_init(&ts->model_slot, -1);
    return ts;
}

/* The slot of <model> in <ps>'s key pool, added when new; -1 when the slots are full (that
 * model's rate limits then cool the key for every model) or out of memory. Sync only. */
static int model_slot(struct hs_provider *ps, const char *model)
{
    int slot = -1;

    if (!ps || !model)
        return -1;
    pthread_mutex_lock(&ps->lock);
    for (int i = 0; i < ps->n_models && slot < 0; i++)
        if (strcmp(ps->models[i], model) == 0)
            slot = i;
    if (slot < 0 && ps->n_models < KEYS_MODELS_MAX && (ps->models[ps->n_models] = strdup(model)))
        slot = ps->n_models++;
    pthread_mutex_unlock(&ps->lock);
    return slot;
}

static enum bsc_err sync_target(struct hs_local *hl, struct cfg_target *t)
{
    struct hs_target *ts = tgt_find(hl, t->id);
    struct brk_entry *b;
    char key[512];

    hstate__breaker_key(t, key, sizeof(key));
    b = brk_slot(hl, key, &t->breaker);
    if (!b)
        return BSC_ENOMEM;
    if (!ts) {
        if (hl->n_tgts == HSTATE_MAX)
            return BSC_ELIMIT;
        if (!(ts = tgt_new(t->id)))
            return BSC_ENOMEM;
        hl->tgts[hl->n_tgts++] = ts;
    }
    atomic_store(&ts->b, b);
    atomic_store(&ts->model_slot, model_slot(t->provider ? t->provider->hs : NULL, t->model));
    t->hs = ts;
    return BSC_OK;
}

static enum bsc_err sync_provider(struct hs_local *hl, struct cfg_provider *p)
{
    struct hs_provider *ps = prov_find(hl, p->id);

    if (ps) {
        pthread_mutex_lock(&ps->lock);
        if (keys_count(&ps->keys) != (p->n_keys > KEYS_MAX ? KEYS_MAX : p->n_keys)) {
            keys_init(&ps->keys, p->n_keys); /* the key list changed: start afresh */
            atomic_store_explicit(&ps->calm_keys, (unsigned)keys_count(&ps->keys),
                                  memory_order_release);
        }
        pthread_mutex_unlock(&ps->lock);
        p->hs = ps;
        return BSC_OK;
    }
    if (hl->n_provs == HSTATE_MAX)
        return BSC_ELIMIT;
    ps = calloc(1, sizeof(*ps));
    if (!ps || !(ps->id = strdup(p->id))) {
        free(ps);
        return BSC_ENOMEM;
    }
    pthread_mutex_init(&ps->lock, NULL);
    keys_init(&ps->keys, p->n_keys);
    atomic_init(&ps->calm_keys, (unsigned)keys_count(&ps->keys));
    hl->provs[hl->n_provs++] = ps;
    p->hs = ps;
    return BSC_OK;
}

static void sync_budget(struct hs_local *hl, const struct cfg_retry *rc)
{
    pthread_mutex_lock(&hl->budget_lock);
    hl->budget.ratio = rc->budget_ratio;
    hl->budget.floor = (double)rc->budget_min_per_s * rc->budget_window_ms / 1000.0;
    /* Only a new bucket width restarts the window; a reload keeps the counts. */
    if (hl->budget.bucket_ms != rbudget_bucket_ms(rc->budget_window_ms))
        rbudget_init(&hl->budget, rc->budget_ratio, rc->budget_min_per_s, rc->budget_window_ms);
    pthread_mutex_unlock(&hl->budget_lock);
}

static enum bsc_err l_sync(struct hstate *hs, struct cfg *cfg, uint64_t now_ms)
{
    struct hs_local *hl = local(hs);
    enum bsc_err err = BSC_OK, e;

    (void)now_ms;
    pthread_mutex_lock(&hl->sync_lock);
    for (size_t i = 0; i < cfg->n_providers; i++)
        if ((e = sync_provider(hl, &cfg->providers[i])) != BSC_OK && !err)
            err = e;
    for (size_t i = 0; i < cfg->n_targets; i++)
        if ((e = sync_target(hl, &cfg->targets[i])) != BSC_OK && !err)
            err = e;
    pthread_mutex_unlock(&hl->sync_lock);
    sync_budget(hl, &cfg->retry);
    return err;
}

/* ---- targets: breaker under its circuit's lock, stats under the target's ---- */

static enum brk_decision l_admit(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                                 double rand01)
{
    struct brk_entry *b;
    enum brk_decision d;

    (void)hs;
    if (!t->hs)
        return BRK_ALLOW;
    b = atomic_load(&t->hs->b);
    pthread_mutex_lock(&b->lock);
    d = brk_allow(&b->brk, now_ms, rand01);
    pthread_mutex_unlock(&b->lock);
    return d;
}

static enum brk_decision l_admit_panic(struct hstate *hs, const struct cfg_target *t,
                                       uint64_t now_ms)
{
    struct brk_entry *b;
    enum brk_decision d;

    (void)hs;
    if (!t->hs)
        return BRK_ALLOW;
    b = atomic_load(&t->hs->b);
    pthread_mutex_lock(&b->lock);
    d = brk_allow_panic(&b->brk, now_ms);
    pthread_mutex_unlock(&b->lock);
    return d;
}

/* Records <outcome> on <t>'s circuit; *<change> tells whether it moved. */
static void brk_report(struct hs_target *ts, uint64_t now_ms, enum brk_outcome outcome,
                       bool was_probe, struct brk_change *change)
{
    struct brk_entry *b = atomic_load(&ts->b);

    pthread_mutex_lock(&b->lock);
    change->from = brk_state(&b->brk);
    brk_record(&b->brk, now_ms, outcome, was_probe);
    change->to = brk_state(&b->brk);
    change->open_ms = brk_open_len_ms(&b->brk);
    change->opens = brk_opens(&b->brk);
    pthread_mutex_unlock(&b->lock);
    change->changed = change->from != change->to;
}

/* The configured caps the AIMD controller of <t> works under: the target's max_concurrency
 * and rpm; without a max_concurrency the cap is learnt (in flight at the first 429,
 * docs/internals/adaptive.md). */
static void adapt_caps(const struct cfg_target *t, uint32_t *conc, uint32_t *rpm)
{
    size_t keys = t->provider ? t->provider->n_keys : 1;

    *conc = cfg_per_key(t->max_concurrency, keys); /* as the limiter counts them */
    *rpm = cfg_per_key(t->rpm, keys);
}

/* Feeds <rep>'s signal to <ts>'s controller; under ts->lock. */
static void adapt_report(struct hs_target *ts, const struct cfg_target *t, uint64_t now_ms,
                         const struct attempt_report *rep)
{
    uint32_t conc, rpm;

    if (!t->adaptive || rep->adapt == ADAPT_NONE)
        return;
    adapt_caps(t, &conc, &rpm);
    if (rep->adapt == ADAPT_LIMITED) {
        if (adaptive_on_limited(&ts->adapt, conc, atomic_load(&ts->inflight), rep->started_ms,
                                now_ms))
            atomic_store_explicit(&ts->adapt_cut, true, memory_order_release);
    } else {
        adaptive_on_success(&ts->adapt, conc);
    }
}

/* adapt_eff() of a target whose controller is off or never cut: the config's caps (what
 * adaptive_effective() gives while its limit is 0), from the config alone. */
static void adapt_caps_eff(const struct cfg_target *t, struct adaptive_eff *eff)
{
    uint32_t conc, rpm;

    adapt_caps(t, &conc, &rpm);
    *eff = (struct adaptive_eff){.concurrency = conc, .rpm = rpm, .factor = 1.0};
}

/* <t>'s effective limits; under ts->lock. The caps alone when adaptive is off. */
static void adapt_eff(struct hs_target *ts, const struct cfg_target *t, struct adaptive_eff *eff)
{
    uint32_t conc, rpm;

    if (!t->adaptive) {
        adapt_caps_eff(t, eff);
        return;
    }
    adapt_caps(t, &conc, &rpm);
    adaptive_effective(&ts->adapt, conc, rpm, eff);
}

static void l_record(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                     const struct attempt_report *rep, struct brk_change *change)
{
    struct hs_target *ts = t->hs;
    struct brk_change c = {0};

    (void)hs;
    if (ts) {
        brk_report(ts, now_ms, rep->outcome, rep->was_probe, &c);
        pthread_mutex_lock(&ts->lock);
        if (rep->latency_ms >= 0)
            tstats_latency(&ts->ts, rep->latency_ms);
        if (rep->ttft_ms >= 0)
            tstats_ttft(&ts->ts, rep->ttft_ms);
        if (rep->error) {
            ts->last_error = rep->error;
            ts->last_error_wall_ms = bsc_wall_ms();
        }
        adapt_report(ts, t, now_ms, rep);
        pthread_mutex_unlock(&ts->lock);
        atomic_fetch_add(rep->error ? &ts->failures : &ts->successes, 1);
        if (rep->misconfigured || !rep->error)
            atomic_store(&ts->misconfigured, rep->misconfigured);
    }
    if (change)
        *change = c;
}

static void l_inflight(struct hstate *hs, const struct cfg_target *t, int delta)
{
    unsigned v;

    (void)hs;
    if (!t->hs)
        return;
    if (delta > 0) {
        atomic_fetch_add(&t->hs->inflight, 1);
        return;
    }
    /* At zero it stays at zero. */
    v = atomic_load(&t->hs->inflight);
    while (v && !atomic_compare_exchange_weak(&t->hs->inflight, &v, v - 1))
        ;
}

static void view_breaker(struct brk_entry *b, uint64_t now_ms, struct target_view *out)
{
    pthread_mutex_lock(&b->lock);
    brk_advance(&b->brk, now_ms);
    out->state = brk_state(&b->brk);
    out->ramping = brk_is_ramping(&b->brk, now_ms);
    out->ramp_fraction = brk_ramp_fraction(&b->brk, now_ms);
    out->retry_after_ms = brk_retry_after_ms(&b->brk, now_ms);
    out->opened_ms = brk_opened_ms(&b->brk);
    out->counters = *brk_counters(&b->brk);
    pthread_mutex_unlock(&b->lock);
}

static void l_view(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                   struct target_view *out)
{
    struct hs_target *ts = t->hs;

    (void)hs;
    memset(out, 0, sizeof(*out));
    out->ewma_latency_ms = out->ewma_ttft_ms = -1;
    out->eff.factor = 1.0;
    if (!ts)
        return;
    view_breaker(atomic_load(&ts->b), now_ms, out);
    pthread_mutex_lock(&ts->lock);
    out->ewma_latency_ms = tstats_latency_ms(&ts->ts);
    out->ewma_ttft_ms = tstats_ttft_ms(&ts->ts);
    out->last_error = ts->last_error;
    out->last_error_wall_ms = ts->last_error_wall_ms;
    adapt_eff(ts, t, &out->eff);
    pthread_mutex_unlock(&ts->lock);
    out->inflight = atomic_load(&ts->inflight);
    out->successes = atomic_load(&ts->successes);
    out->failures = atomic_load(&ts->failures);
    out->health = (enum target_health)atomic_load(&ts->health);
    out->admin_disabled = atomic_load(&ts->admin_disabled);
    out->misconfigured = atomic_load(&ts->misconfigured);
}

static void l_health(struct hstate *hs, const struct cfg_target *t, bool up, uint64_t now_ms,
                     struct brk_change *change)
{
    struct hs_target *ts = t->hs;
    struct brk_entry *b;
    struct brk_change c = {0};

    (void)hs;
    if (ts) {
        b = atomic_load(&ts->b);
        atomic_store(&ts->health, up ? HEALTH_UP : HEALTH_DOWN);
        pthread_mutex_lock(&b->lock);
        c.from = c.to = brk_state(&b->brk);
        /* A failed probe is an infrastructure failure; a good one says the endpoint
         * answers, which is not proof the model works: it only refreshes health. */
        if (!up && c.from == BRK_CLOSED) {
            brk_record(&b->brk, now_ms, BRK_FAILURE, false);
            c.to = brk_state(&b->brk);
            c.open_ms = brk_open_len_ms(&b->brk);
            c.opens = brk_opens(&b->brk);
        }
        pthread_mutex_unlock(&b->lock);
        c.changed = c.from != c.to;
    }
    if (change)
        *change = c;
}

static enum bsc_err l_set_disabled(struct hstate *hs, const struct cfg_target *t, bool disabled)
{
    (void)hs;
    if (!t->hs)
        return BSC_ENOTFOUND;
    atomic_store(&t->hs->admin_disabled, disabled);
    return BSC_OK;
}

static bool l_is_disabled(struct hstate *hs, const struct cfg_target *t)
{
    (void)hs;
    return t->hs && atomic_load(&t->hs->admin_disabled);
}

static void l_adaptive(struct hstate *hs, const struct cfg_target *t, struct adaptive_eff *eff,
                       uint32_t *inflight)
{
    struct hs_target *ts = t->hs;

    (void)hs;
    *eff = (struct adaptive_eff){.factor = 1.0};
    *inflight = 0;
    if (!ts)
        return;
    /* Adaptive off, or its controller never cut: the config's caps, nothing of the state
     * read, so no lock (asked on every request). A cut made meanwhile by another worker is
     * seen by the next request, as if this one had taken the lock first. */
    if (t->adaptive && atomic_load_explicit(&ts->adapt_cut, memory_order_acquire)) {
        pthread_mutex_lock(&ts->lock);
        adapt_eff(ts, t, eff);
        pthread_mutex_unlock(&ts->lock);
    } else {
        adapt_caps_eff(t, eff);
    }
    *inflight = atomic_load(&ts->inflight);
}

/* ---- providers: the key pool under the provider's lock ---- */

/* The key-pool model slot of <t>; -1 (key-wide) for NULL or an unresolved target. */
static int slot_of(const struct cfg_target *t)
{
    return t && t->hs ? atomic_load(&t->hs->model_slot) : -1;
}

static int l_key_next(struct hstate *hs, const struct cfg_provider *p, const struct cfg_target *t,
                      uint64_t now_ms, uint64_t *soonest_ms)
{
    struct hs_provider *ps = p->hs;
    int idx, model = slot_of(t);

    (void)hs;
    if (p->n_keys == 0)
        return -2;
    if (!ps)
        return 0;
    pthread_mutex_lock(&ps->lock);
    idx = keys_next_model(&ps->keys, model, now_ms);
    if (idx < 0 && soonest_ms)
        *soonest_ms = keys_soonest_model_ms(&ps->keys, model);
    pthread_mutex_unlock(&ps->lock);
    return idx;
}

static void l_key_cooldown(struct hstate *hs, const struct cfg_provider *p,
                           const struct cfg_target *t, int idx, int reason, int64_t retry_after_ms,
                           uint64_t now_ms)
{
    struct hs_provider *ps = p->hs;
    uint64_t until = keys_cooldown_until(now_ms, (enum key_reason)reason,
                                         retry_after_ms > 0 ? (uint64_t)retry_after_ms : 0);

    (void)hs;
    if (idx < 0 || !ps)
        return;
    pthread_mutex_lock(&ps->lock);
    atomic_store_explicit(&ps->calm_keys, 0, memory_order_release); /* before the cooldown */
    /* A refusal of the last usable key is looked at once (keys_verify_due_ms): until then
     * every request fails, and one 401 must not cost the provider key_reverify_ms. */
    if (keys_cooldown_model(&ps->keys, idx, slot_of(t), until, (enum key_reason)reason) == BSC_OK &&
        reason == KEY_AUTH && p->health.key_reverify_ms)
        keys_verify_schedule(&ps->keys, idx,
                             keys_verify_due_ms(&ps->keys, idx, slot_of(t), now_ms,
                                                p->health.key_reverify_ms));
    pthread_mutex_unlock(&ps->lock);
}

static int l_key_verify_take(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct hs_provider *ps = p->hs;
    int idx;

    (void)hs;
    if (!ps)
        return -1;
    pthread_mutex_lock(&ps->lock);
    idx = keys_verify_take(&ps->keys, now_ms);
    pthread_mutex_unlock(&ps->lock);
    return idx;
}

static void l_key_verify_done(struct hstate *hs, const struct cfg_provider *p, int idx,
                              enum key_verdict verdict, uint64_t now_ms)
{
    struct hs_provider *ps = p->hs;

    (void)hs;
    if (!ps)
        return;
    pthread_mutex_lock(&ps->lock);
    atomic_store_explicit(&ps->calm_keys, 0, memory_order_release); /* it may cool the key */
    keys_verify_done(&ps->keys, idx, verdict, now_ms, p->health.key_reverify_ms);
    pthread_mutex_unlock(&ps->lock);
}

static void l_keys(struct hstate *hs, const struct cfg_provider *p, const struct cfg_target *t,
                   uint64_t now_ms, struct hstate_keys *out)
{
    struct hs_provider *ps = p->hs;
    int model = slot_of(t);
    unsigned calm;

    (void)hs;
    *out = (struct hstate_keys){.available = 1, .ready_at = now_ms, .hint_at = now_ms};
    if (p->n_keys == 0 || !ps)
        return;
    /* No key ever cooled: all of them usable, none cooling, whatever the model and the time;
     * no lock (asked for every candidate of every request). A cooldown made meanwhile by
     * another worker is seen by the next request, as if this one had taken the lock first. */
    calm = atomic_load_explicit(&ps->calm_keys, memory_order_acquire);
    if (calm) {
        out->available = calm;
        return;
    }
    pthread_mutex_lock(&ps->lock);
    out->available = keys_available_model(&ps->keys, model, now_ms);
    out->reasons = keys_cooling_reasons(&ps->keys, model, now_ms);
    if (out->available == 0) {
        out->ready_at = keys_soonest_model_ms(&ps->keys, model);
        out->hint_at = keys_soonest_hint_model_ms(&ps->keys, model, now_ms);
    }
    pthread_mutex_unlock(&ps->lock);
}

/* ---- the retry budget, under its own lock ---- */

static void l_budget_first(struct hstate *hs, uint64_t now_ms)
{
    struct hs_local *hl = local(hs);

    pthread_mutex_lock(&hl->budget_lock);
    rbudget_note_first(&hl->budget, now_ms);
    pthread_mutex_unlock(&hl->budget_lock);
}

static bool l_budget_available(struct hstate *hs, uint64_t now_ms)
{
    struct hs_local *hl = local(hs);
    bool ok;

    pthread_mutex_lock(&hl->budget_lock);
    ok = rbudget_available(&hl->budget, now_ms);
    pthread_mutex_unlock(&hl->budget_lock);
    return ok;
}

static bool l_budget_take(struct hstate *hs, uint64_t now_ms)
{
    struct hs_local *hl = local(hs);
    bool ok;

    pthread_mutex_lock(&hl->budget_lock);
    ok = rbudget_try_take(&hl->budget, now_ms);
    pthread_mutex_unlock(&hl->budget_lock);
    return ok;
}

/* ---- the mirror of a shared backend (hstate_mirror.h) ---- */

bool hstate__force(struct hstate *hs, const char *key, bool open, uint64_t now_ms,
                   uint64_t open_ms, uint32_t opens)
{
    struct hs_local *hl = local(hs);
    struct brk_entry *b = NULL;

    pthread_mutex_lock(&hl->sync_lock);
    for (size_t i = 0; i < hl->n_brks && !b; i++)
        if (strcmp(hl->brks[i]->key, key) == 0)
            b = hl->brks[i];
    pthread_mutex_unlock(&hl->sync_lock);
    if (!b)
        return false;
    pthread_mutex_lock(&b->lock);
    if (open)
        brk_force_open_for(&b->brk, now_ms, open_ms, opens);
    else if (brk_state(&b->brk) != BRK_CLOSED)
        brk_force_close(&b->brk, now_ms);
    pthread_mutex_unlock(&b->lock);
    return true;
}

void hstate__key_cool(struct hstate *hs, const char *provider_id, const char *model, int idx,
                      int reason, uint64_t until_ms)
{
    struct hs_local *hl = local(hs);
    struct hs_provider *ps;
    int slot;

    pthread_mutex_lock(&hl->sync_lock);
    ps = prov_find(hl, provider_id);
    pthread_mutex_unlock(&hl->sync_lock);
    if (!ps || idx < 0)
        return;
    slot = model ? model_slot(ps, model) : -1; /* a model this instance has not seen is added */
    pthread_mutex_lock(&ps->lock);
    atomic_store_explicit(&ps->calm_keys, 0, memory_order_release);
    keys_cooldown_model(&ps->keys, idx, slot, until_ms, (enum key_reason)reason);
    pthread_mutex_unlock(&ps->lock);
}

/* ---- life ---- */

static void l_destroy(struct hstate *hs)
{
    struct hs_local *hl = local(hs);

    for (size_t i = 0; i < hl->n_tgts; i++) {
        pthread_mutex_destroy(&hl->tgts[i]->lock);
        free(hl->tgts[i]->id);
        free(hl->tgts[i]);
    }
    for (size_t i = 0; i < hl->n_provs; i++) {
        pthread_mutex_destroy(&hl->provs[i]->lock);
        for (int m = 0; m < hl->provs[i]->n_models; m++)
            free(hl->provs[i]->models[m]);
        free(hl->provs[i]->id);
        free(hl->provs[i]);
    }
    for (size_t i = 0; i < hl->n_brks; i++) {
        pthread_mutex_destroy(&hl->brks[i]->lock);
        free(hl->brks[i]->key);
        free(hl->brks[i]);
    }
    pthread_mutex_destroy(&hl->sync_lock);
    pthread_mutex_destroy(&hl->budget_lock);
    free(hl);
}

static const struct hstate_ops local_ops = {
    .destroy = l_destroy,
    .sync = l_sync,
    .admit = l_admit,
    .admit_panic = l_admit_panic,
    .record = l_record,
    .inflight = l_inflight,
    .view = l_view,
    .health = l_health,
    .set_disabled = l_set_disabled,
    .is_disabled = l_is_disabled,
    .key_next = l_key_next,
    .key_cooldown = l_key_cooldown,
    .key_verify_take = l_key_verify_take,
    .key_verify_done = l_key_verify_done,
    .keys = l_keys,
    .adaptive = l_adaptive,
    .budget_first = l_budget_first,
    .budget_available = l_budget_available,
    .budget_take = l_budget_take,
};

struct hstate *hstate_new(void)
{
    struct hs_local *hl = calloc(1, sizeof(*hl));

    if (!hl)
        return NULL;
    hl->base.ops = &local_ops;
    pthread_mutex_init(&hl->sync_lock, NULL);
    pthread_mutex_init(&hl->budget_lock, NULL);
    rbudget_init(&hl->budget, 0.2, 10, 10000);
    return &hl->base;
}

void hstate_free(struct hstate *hs)
{
    if (hs)
        hs->ops->destroy(hs);
}
