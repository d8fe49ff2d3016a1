/* SPDX-License-Identifier: MIT */
/* state.c -- the in-process routing state: two small tables keyed by id (targets and
 * providers) and the retry budget, behind one mutex. Entries are never removed while
 * the process runs (a reload that drops a target leaves its small entry behind), so a
 * request holding an older snapshot always finds its targets. */
#include "router/state.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "health/keys.h"
#include "health/tstats.h"
#include "router/retry.h"

#define HSTATE_MAX 1024

/* One circuit, shared by every target whose breaker.key dimensions agree. */
struct brk_entry {
    char *key; /* owned: "provider|model|region|deployment" as the dimensions select */
    struct brk brk;
};

struct tgt_state {
    char *id; /* owned */
    struct brk_entry *b; /* borrowed from hstate.brks */
    struct tstats ts;
    enum target_health health;
    bool admin_disabled;
    bool misconfigured;
    const char *last_error;
    uint64_t last_error_wall_ms;
};

struct prov_state {
    char *id; /* owned */
    struct keypool keys;
};

struct hstate {
    pthread_mutex_t lock;
    struct tgt_state *tgts[HSTATE_MAX];
    size_t n_tgts;
    struct prov_state *provs[HSTATE_MAX];
    size_t n_provs;
    struct brk_entry *brks[HSTATE_MAX];
    size_t n_brks;
    struct retry_budget budget;
};

struct hstate *hstate_new(void)
{
    struct hstate *hs = calloc(1, sizeof(*hs));

    if (!hs)
        return NULL;
    pthread_mutex_init(&hs->lock, NULL);
    retry_budget_init(&hs->budget, 0.2, 10, 10000);
    return hs;
}

void hstate_free(struct hstate *hs)
{
    if (!hs)
        return;
    for (size_t i = 0; i < hs->n_tgts; i++) {
        free(hs->tgts[i]->id);
        free(hs->tgts[i]);
    }
    for (size_t i = 0; i < hs->n_provs; i++) {
        free(hs->provs[i]->id);
        free(hs->provs[i]);
    }
    for (size_t i = 0; i < hs->n_brks; i++) {
        free(hs->brks[i]->key);
        free(hs->brks[i]);
    }
    pthread_mutex_destroy(&hs->lock);
    free(hs);
}

/* Lookups: lock held. */
static struct tgt_state *tgt_find(struct hstate *hs, const char *id)
{
    for (size_t i = 0; i < hs->n_tgts; i++)
        if (strcmp(hs->tgts[i]->id, id) == 0)
            return hs->tgts[i];
    return NULL;
}

static struct prov_state *prov_find(struct hstate *hs, const char *id)
{
    for (size_t i = 0; i < hs->n_provs; i++)
        if (strcmp(hs->provs[i]->id, id) == 0)
            return hs->provs[i];
    return NULL;
}

/* The config resolves overrides (top level -> provider -> target) into target->breaker. */
static const struct cfg_breaker *breaker_params(const struct cfg *cfg, const struct cfg_target *t)
{
    (void)cfg;
    return &t->breaker;
}

/* The breaker identity of <t> from its breaker.key dimensions. The key dimension is not
 * part of it: a failing key (rate limit, quota, auth) cools down on its own instead of
 * opening a circuit. No dimension at all: one circuit per target. */
static void breaker_key(const struct cfg_target *t, char *out, size_t len)
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

static struct brk_entry *brk_slot(struct hstate *hs, const char *key,
                                  const struct cfg_breaker *params)
{
    struct brk_entry *b;

    for (size_t i = 0; i < hs->n_brks; i++) {
        if (strcmp(hs->brks[i]->key, key) == 0) {
            brk_set_params(&hs->brks[i]->brk, params);
            return hs->brks[i];
        }
    }
    if (hs->n_brks == HSTATE_MAX)
        return NULL;
    b = calloc(1, sizeof(*b));
    if (!b || !(b->key = strdup(key))) {
        free(b);
        return NULL;
    }
    brk_init(&b->brk, params);
    hs->brks[hs->n_brks++] = b;
    return b;
}

static enum bsc_err sync_target(struct hstate *hs, const struct cfg *cfg,
                                const struct cfg_target *t)
{
    struct tgt_state *ts = tgt_find(hs, t->id);
    struct brk_entry *b;
    char key[512];

    breaker_key(t, key, sizeof(key));
    b = brk_slot(hs, key, breaker_params(cfg, t));
    if (!b)
        return BSC_ENOMEM;
    if (ts) {
        ts->b = b;
        return BSC_OK;
    }
    if (hs->n_tgts == HSTATE_MAX)
        return BSC_ELIMIT;
    ts = calloc(1, sizeof(*ts));
    if (!ts || !(ts->id = strdup(t->id))) {
        free(ts);
        return BSC_ENOMEM;
    }
    ts->b = b;
    tstats_init(&ts->ts);
    hs->tgts[hs->n_tgts++] = ts;
    return BSC_OK;
}

static enum bsc_err sync_provider(struct hstate *hs, const struct cfg_provider *p)
{
    struct prov_state *ps = prov_find(hs, p->id);

    if (ps) {
        if (keys_count(&ps->keys) != (p->n_keys > KEYS_MAX ? KEYS_MAX : p->n_keys))
            keys_init(&ps->keys, p->n_keys); /* the key list changed: start afresh */
        return BSC_OK;
    }
    if (hs->n_provs == HSTATE_MAX)
        return BSC_ELIMIT;
    ps = calloc(1, sizeof(*ps));
    if (!ps || !(ps->id = strdup(p->id))) {
        free(ps);
        return BSC_ENOMEM;
    }
    keys_init(&ps->keys, p->n_keys);
    hs->provs[hs->n_provs++] = ps;
    return BSC_OK;
}

enum bsc_err hstate_sync(struct hstate *hs, const struct cfg *cfg, uint64_t now_ms)
{
    enum bsc_err err = BSC_OK;

    (void)now_ms;
    pthread_mutex_lock(&hs->lock);
    for (size_t i = 0; !err && i < cfg->n_providers; i++)
        err = sync_provider(hs, &cfg->providers[i]);
    for (size_t i = 0; !err && i < cfg->n_targets; i++)
        err = sync_target(hs, cfg, &cfg->targets[i]);
    hs->budget.ratio = cfg->retry.budget_ratio;
    hs->budget.floor = (double)cfg->retry.budget_min_per_s * cfg->retry.budget_window_ms / 1000.0;
    /* Only a new bucket width restarts the window; a reload keeps the counts. */
    if (hs->budget.bucket_ms != retry_budget_bucket_ms(cfg->retry.budget_window_ms))
        retry_budget_init(&hs->budget, cfg->retry.budget_ratio, cfg->retry.budget_min_per_s,
                          cfg->retry.budget_window_ms);
    pthread_mutex_unlock(&hs->lock);
    return err;
}

enum brk_decision hstate_admit(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                               double rand01)
{
    struct tgt_state *ts;
    enum brk_decision d = BRK_ALLOW;

    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, t->id);
    if (ts)
        d = brk_allow(&ts->b->brk, now_ms, rand01);
    pthread_mutex_unlock(&hs->lock);
    return d;
}

static void record_locked(struct tgt_state *ts, uint64_t now_ms, const struct attempt_report *rep,
                          struct brk_change *change)
{
    enum brk_state before = brk_state(&ts->b->brk);

    brk_record(&ts->b->brk, now_ms, rep->outcome, rep->was_probe);
    if (rep->latency_ms >= 0)
        tstats_latency(&ts->ts, rep->latency_ms);
    if (rep->ttft_ms >= 0)
        tstats_ttft(&ts->ts, rep->ttft_ms);
    if (rep->error) {
        tstats_failure(&ts->ts, 1, now_ms);
        ts->last_error = rep->error;
        ts->last_error_wall_ms = bsc_wall_ms();
    } else {
        tstats_success(&ts->ts);
    }
    if (rep->misconfigured)
        ts->misconfigured = true;
    else if (!rep->error)
        ts->misconfigured = false;
    if (change) {
        change->from = before;
        change->to = brk_state(&ts->b->brk);
        change->changed = change->from != change->to;
    }
}

void hstate_record(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms,
                   const struct attempt_report *rep, struct brk_change *change)
{
    struct tgt_state *ts;

    if (change)
        *change = (struct brk_change){0};
    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, t->id);
    if (ts)
        record_locked(ts, now_ms, rep, change);
    pthread_mutex_unlock(&hs->lock);
}

void hstate_inflight(struct hstate *hs, const struct cfg_target *t, int delta)
{
    struct tgt_state *ts;

    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, t->id);
    if (ts) {
        if (delta > 0)
            tstats_inflight_inc(&ts->ts);
        else
            tstats_inflight_dec(&ts->ts);
    }
    pthread_mutex_unlock(&hs->lock);
}

void hstate_view(struct hstate *hs, const char *target_id, uint64_t now_ms,
                 struct target_view *out)
{
    struct tgt_state *ts;

    memset(out, 0, sizeof(*out));
    out->ewma_latency_ms = out->ewma_ttft_ms = -1;
    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, target_id);
    if (ts) {
        brk_advance(&ts->b->brk, now_ms);
        out->state = brk_state(&ts->b->brk);
        out->ramping = brk_is_ramping(&ts->b->brk, now_ms);
        out->ramp_fraction = brk_ramp_fraction(&ts->b->brk, now_ms);
        out->retry_after_ms = brk_retry_after_ms(&ts->b->brk, now_ms);
        out->ewma_latency_ms = tstats_latency_ms(&ts->ts);
        out->ewma_ttft_ms = tstats_ttft_ms(&ts->ts);
        out->inflight = tstats_inflight(&ts->ts);
        out->successes = ts->ts.successes;
        out->failures = ts->ts.failures;
        out->last_error = ts->last_error;
        out->last_error_wall_ms = ts->last_error_wall_ms;
        out->health = ts->health;
        out->admin_disabled = ts->admin_disabled;
        out->misconfigured = ts->misconfigured;
        out->counters = *brk_counters(&ts->b->brk);
    }
    pthread_mutex_unlock(&hs->lock);
}

int hstate_key_next(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms,
                    uint64_t *soonest_ms)
{
    struct prov_state *ps;
    int idx = -1;

    if (p->n_keys == 0)
        return -2;
    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps) {
        idx = keys_next(&ps->keys, now_ms);
        if (idx < 0 && soonest_ms)
            *soonest_ms = keys_soonest_ms(&ps->keys);
    } else {
        idx = 0;
    }
    pthread_mutex_unlock(&hs->lock);
    return idx;
}

void hstate_key_cooldown(struct hstate *hs, const struct cfg_provider *p, int idx, int reason,
                         int64_t retry_after_ms, uint64_t now_ms)
{
    struct prov_state *ps;
    uint64_t until = keys_cooldown_until(now_ms, (enum key_reason)reason,
                                         retry_after_ms > 0 ? (uint64_t)retry_after_ms : 0);

    if (idx < 0)
        return;
    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps && keys_cooldown(&ps->keys, idx, until, (enum key_reason)reason) == BSC_OK &&
        reason == KEY_AUTH && p->health.key_reverify_ms)
        keys_verify_schedule(&ps->keys, idx, now_ms + p->health.key_reverify_ms);
    pthread_mutex_unlock(&hs->lock);
}

int hstate_key_verify_take(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct prov_state *ps;
    int idx = -1;

    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps)
        idx = keys_verify_take(&ps->keys, now_ms);
    pthread_mutex_unlock(&hs->lock);
    return idx;
}

void hstate_key_verify_done(struct hstate *hs, const struct cfg_provider *p, int idx,
                            enum key_verdict verdict, uint64_t now_ms)
{
    struct prov_state *ps;

    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps)
        keys_verify_done(&ps->keys, idx, verdict, now_ms, p->health.key_reverify_ms);
    pthread_mutex_unlock(&hs->lock);
}

size_t hstate_keys_available(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct prov_state *ps;
    size_t n = p->n_keys ? 0 : 1;

    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps && p->n_keys)
        n = keys_available(&ps->keys, now_ms);
    pthread_mutex_unlock(&hs->lock);
    return n;
}

uint64_t hstate_keys_ready_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct prov_state *ps;
    uint64_t at = now_ms;

    if (p->n_keys == 0)
        return now_ms;
    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps && keys_available(&ps->keys, now_ms) == 0)
        at = keys_soonest_ms(&ps->keys);
    pthread_mutex_unlock(&hs->lock);
    return at;
}

uint64_t hstate_keys_hint_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct prov_state *ps;
    uint64_t at = now_ms;

    if (p->n_keys == 0)
        return now_ms;
    pthread_mutex_lock(&hs->lock);
    ps = prov_find(hs, p->id);
    if (ps && keys_available(&ps->keys, now_ms) == 0)
        at = keys_soonest_hint_ms(&ps->keys, now_ms);
    pthread_mutex_unlock(&hs->lock);
    return at;
}

void hstate_budget_first(struct hstate *hs, uint64_t now_ms)
{
    pthread_mutex_lock(&hs->lock);
    retry_budget_note_first(&hs->budget, now_ms);
    pthread_mutex_unlock(&hs->lock);
}

bool hstate_budget_take(struct hstate *hs, uint64_t now_ms)
{
    bool ok;

    pthread_mutex_lock(&hs->lock);
    ok = retry_budget_try_take(&hs->budget, now_ms);
    pthread_mutex_unlock(&hs->lock);
    return ok;
}

enum bsc_err hstate_set_disabled(struct hstate *hs, const char *target_id, bool disabled)
{
    struct tgt_state *ts;

    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, target_id);
    if (ts)
        ts->admin_disabled = disabled;
    pthread_mutex_unlock(&hs->lock);
    return ts ? BSC_OK : BSC_ENOTFOUND;
}

bool hstate_is_disabled(struct hstate *hs, const char *target_id)
{
    struct tgt_state *ts;
    bool d = false;

    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, target_id);
    if (ts)
        d = ts->admin_disabled;
    pthread_mutex_unlock(&hs->lock);
    return d;
}

void hstate_health(struct hstate *hs, const char *target_id, bool up, uint64_t now_ms,
                   struct brk_change *change)
{
    struct tgt_state *ts;

    if (change)
        change->changed = false;
    pthread_mutex_lock(&hs->lock);
    ts = tgt_find(hs, target_id);
    if (ts) {
        enum brk_state before = brk_state(&ts->b->brk);
        ts->health = up ? HEALTH_UP : HEALTH_DOWN;
        /* A failed probe is an infrastructure failure; a good one says the endpoint
         * answers, which is not proof the model works: it only refreshes health. */
        if (!up && before == BRK_CLOSED)
            brk_record(&ts->b->brk, now_ms, BRK_FAILURE, false);
        if (change) {
            change->from = before;
            change->to = brk_state(&ts->b->brk);
            change->changed = change->from != change->to;
        }
    }
    pthread_mutex_unlock(&hs->lock);
}

const char *target_health_name(enum target_health h)
{
    static const char *const names[HEALTH_COUNT] = {"unknown", "up", "down"};

    return (unsigned)h < HEALTH_COUNT ? names[h] : "unknown";
}
