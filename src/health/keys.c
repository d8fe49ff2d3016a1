/* SPDX-License-Identifier: MIT */
/* keys.c -- API key rotation and cooldown for one provider. Round-robin over the keys that
 * are not cooling down; a failing key rests for a time that depends on why it failed. It
 * does not classify errors (the caller maps them to enum key_reason) and never sees the
 * secrets. See docs/internals/breaker.md. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "health/keys.h"

static bool valid_idx(const struct keypool *pool, int idx)
{
    return idx >= 0 && (uint32_t)idx < pool->n;
}

static bool valid_model(int model)
{
    return model >= 0 && model < KEYS_MODELS_MAX;
}

/* When <k> is usable again for model slot <model>: the later of its key-wide cooldown and
 * that model's rate limit. */
static uint64_t slot_until(const struct key_slot *k, int model)
{
    uint64_t at = k->cool_until_ms;

    if (valid_model(model) && k->model_until_ms[model] > at)
        at = k->model_until_ms[model];
    return at;
}

void keys_init(struct keypool *pool, size_t n)
{
    memset(pool, 0, sizeof(*pool));
    pool->n = (uint32_t)(n > KEYS_MAX ? KEYS_MAX : n);
}

size_t keys_count(const struct keypool *pool)
{
    return pool->n;
}

int keys_next(struct keypool *pool, uint64_t now_ms)
{
    return keys_next_model(pool, -1, now_ms);
}

int keys_next_model(struct keypool *pool, int model, uint64_t now_ms)
{
    for (uint32_t i = 0; i < pool->n; i++) {
        uint32_t idx = (pool->next + i) % pool->n;
        struct key_slot *k = &pool->keys[idx];

        if (slot_until(k, model) > now_ms)
            continue;
        pool->next = (idx + 1) % pool->n;
        k->stats.picks++;
        return (int)idx;
    }
    return -1;
}

enum bsc_err keys_cooldown(struct keypool *pool, int idx, uint64_t until_ms, enum key_reason reason)
{
    return keys_cooldown_model(pool, idx, -1, until_ms, reason);
}

enum bsc_err keys_cooldown_model(struct keypool *pool, int idx, int model, uint64_t until_ms,
                                 enum key_reason reason)
{
    struct key_slot *k;

    if (!valid_idx(pool, idx) || (unsigned)reason >= KEY_REASON_COUNT)
        return BSC_EINVAL;
    k = &pool->keys[idx];
    k->stats.cooldowns[reason]++;
    if (reason == KEY_RATE_LIMITED && valid_model(model)) {
        if (until_ms > k->model_until_ms[model])
            k->model_until_ms[model] = until_ms;
        return BSC_OK;
    }
    if (until_ms > k->cool_until_ms) {
        k->cool_until_ms = until_ms;
        k->reason = reason;
    }
    return BSC_OK;
}

uint64_t keys_cooldown_until(uint64_t now_ms, enum key_reason reason, uint64_t retry_after_ms)
{
    uint64_t delay;

    switch (reason) {
    case KEY_RATE_LIMITED:
        delay = retry_after_ms > 0 ? retry_after_ms : KEYS_RATE_LIMIT_DEFAULT_MS;
        break;
    case KEY_QUOTA:
        delay = retry_after_ms > KEYS_QUOTA_COOLDOWN_MS ? retry_after_ms : KEYS_QUOTA_COOLDOWN_MS;
        break;
    case KEY_AUTH:
    default:
        delay = KEYS_AUTH_COOLDOWN_MS;
        break;
    }
    if (delay > KEYS_MAX_COOLDOWN_MS)
        delay = KEYS_MAX_COOLDOWN_MS;
    return now_ms > UINT64_MAX - delay ? UINT64_MAX : now_ms + delay;
}

void keys_verify_schedule(struct keypool *pool, int idx, uint64_t at_ms)
{
    struct key_slot *k;

    if (!valid_idx(pool, idx))
        return;
    k = &pool->keys[idx];
    if (k->reason != KEY_AUTH || k->verifying || k->verify_at_ms)
        return;
    k->verify_at_ms = at_ms ? at_ms : 1;
}

uint64_t keys_verify_due_ms(const struct keypool *pool, int idx, int model, uint64_t now_ms,
                            uint32_t base_ms)
{
    const struct key_slot *k;

    if (!valid_idx(pool, idx))
        return now_ms + base_ms;
    k = &pool->keys[idx];
    if (keys_available_model(pool, model, now_ms) > 0)
        return now_ms + base_ms; /* another key serves meanwhile: no hurry */
    if (k->restored_ms && now_ms - k->restored_ms < base_ms)
        return now_ms + base_ms; /* put back a moment ago and refused again: the usual wait */
    return now_ms;
}

int keys_verify_take(struct keypool *pool, uint64_t now_ms)
{
    for (uint32_t i = 0; i < pool->n; i++) {
        struct key_slot *k = &pool->keys[i];

        if (k->verifying || !k->verify_at_ms || k->verify_at_ms > now_ms)
            continue;
        k->verify_at_ms = 0;
        if (k->reason != KEY_AUTH || k->cool_until_ms <= now_ms)
            continue; /* back already, or cooling for another reason now */
        k->verifying = true;
        return (int)i;
    }
    return -1;
}

/* The wait before the next re-verification after <fails> refusals in a row. */
static uint64_t verify_backoff_ms(uint32_t base_ms, uint32_t fails)
{
    uint64_t d = base_ms ? base_ms : 1;

    for (uint32_t i = 0; i < fails && d < KEYS_AUTH_COOLDOWN_MS; i++)
        d *= 2;
    return d < KEYS_AUTH_COOLDOWN_MS ? d : KEYS_AUTH_COOLDOWN_MS;
}

void keys_verify_done(struct keypool *pool, int idx, enum key_verdict verdict, uint64_t now_ms,
                      uint32_t base_ms)
{
    struct key_slot *k;
    uint64_t next;

    if (!valid_idx(pool, idx))
        return;
    k = &pool->keys[idx];
    k->verifying = false;
    if (k->reason != KEY_AUTH)
        return; /* cooled for another reason meanwhile: that cooldown stands */
    if (verdict == KEY_VERIFY_OK) {
        k->cool_until_ms = now_ms < k->cool_until_ms ? now_ms : k->cool_until_ms;
        k->verify_fails = 0;
        k->restored_ms = now_ms ? now_ms : 1;
        return;
    }
    if (verdict == KEY_VERIFY_REFUSED && k->verify_fails < 32)
        k->verify_fails++;
    next = now_ms + verify_backoff_ms(base_ms, k->verify_fails);
    /* Refused: out until a look finds it works; should the looks stop (the provider is
     * disabled, re-verification switched off), the key still comes back one full auth
     * cooldown after the look that was due. */
    if (verdict == KEY_VERIFY_REFUSED && k->cool_until_ms < next + KEYS_AUTH_COOLDOWN_MS)
        k->cool_until_ms = next + KEYS_AUTH_COOLDOWN_MS;
    if (k->cool_until_ms > now_ms)
        k->verify_at_ms = next;
}

uint64_t keys_soonest_ms(const struct keypool *pool)
{
    return keys_soonest_model_ms(pool, -1);
}

uint64_t keys_soonest_model_ms(const struct keypool *pool, int model)
{
    uint64_t soonest = UINT64_MAX;

    for (uint32_t i = 0; i < pool->n; i++) {
        uint64_t at = slot_until(&pool->keys[i], model);

        if (at < soonest)
            soonest = at;
    }
    return soonest;
}

uint64_t keys_soonest_hint_ms(const struct keypool *pool, uint64_t now_ms)
{
    return keys_soonest_hint_model_ms(pool, -1, now_ms);
}

uint64_t keys_soonest_hint_model_ms(const struct keypool *pool, int model, uint64_t now_ms)
{
    uint64_t soonest = UINT64_MAX;

    for (uint32_t i = 0; i < pool->n; i++) {
        const struct key_slot *k = &pool->keys[i];
        uint64_t at = k->cool_until_ms;

        /* A re-verification may bring back a refused key early, never a rate limit. */
        if (k->verifying && now_ms < at)
            at = now_ms;
        else if (k->verify_at_ms && k->verify_at_ms < at)
            at = k->verify_at_ms;
        if (valid_model(model) && k->model_until_ms[model] > at)
            at = k->model_until_ms[model];
        if (at < soonest)
            soonest = at;
    }
    return soonest;
}

bool keys_is_cooling(const struct keypool *pool, int idx, uint64_t now_ms)
{
    return valid_idx(pool, idx) && pool->keys[idx].cool_until_ms > now_ms;
}

size_t keys_available(const struct keypool *pool, uint64_t now_ms)
{
    return keys_available_model(pool, -1, now_ms);
}

size_t keys_available_model(const struct keypool *pool, int model, uint64_t now_ms)
{
    size_t n = 0;

    for (uint32_t i = 0; i < pool->n; i++) {
        if (slot_until(&pool->keys[i], model) <= now_ms)
            n++;
    }
    return n;
}

enum key_reason keys_reason(const struct keypool *pool, int idx)
{
    return valid_idx(pool, idx) ? pool->keys[idx].reason : KEY_RATE_LIMITED;
}

const struct key_stats *keys_stats(const struct keypool *pool, int idx)
{
    return valid_idx(pool, idx) ? &pool->keys[idx].stats : NULL;
}

static const char *const reason_names[KEY_REASON_COUNT] = {
    [KEY_RATE_LIMITED] = "rate_limited",
    [KEY_QUOTA] = "quota",
    [KEY_AUTH] = "auth",
};

unsigned keys_cooling_reasons(const struct keypool *pool, int model, uint64_t now_ms)
{
    unsigned bits = 0;

    for (uint32_t i = 0; i < pool->n; i++) {
        const struct key_slot *k = &pool->keys[i];

        if (k->cool_until_ms > now_ms)
            bits |= 1u << k->reason;
        else if (valid_model(model) && k->model_until_ms[model] > now_ms)
            bits |= 1u << KEY_RATE_LIMITED;
    }
    return bits;
}

const char *keys_reasons_text(unsigned bits, char *buf, size_t len)
{
    static const char *const client_names[KEY_REASON_COUNT] = {
        [KEY_RATE_LIMITED] = "rate_limited",
        [KEY_QUOTA] = "quota_exhausted",
        [KEY_AUTH] = "auth_failed",
    };
    size_t at = 0;

    if (!len)
        return buf;
    buf[0] = '\0';
    for (unsigned r = 0; r < KEY_REASON_COUNT; r++) {
        int n;

        if (!(bits & (1u << r)))
            continue;
        n = snprintf(buf + at, len - at, "%s%s", at ? ", " : "", client_names[r]);
        if (n < 0 || (size_t)n >= len - at) {
            buf[at] = '\0'; /* whole names only */
            break;
        }
        at += (size_t)n;
    }
    return buf;
}

const char *keys_reason_name(enum key_reason reason)
{
    return (unsigned)reason < KEY_REASON_COUNT ? reason_names[reason] : "unknown";
}

const char *keys_verdict_name(enum key_verdict verdict)
{
    static const char *const names[KEY_VERIFY_COUNT] = {
        [KEY_VERIFY_OK] = "restored",
        [KEY_VERIFY_REFUSED] = "refused",
        [KEY_VERIFY_INCONCLUSIVE] = "inconclusive",
    };

    return (unsigned)verdict < KEY_VERIFY_COUNT ? names[verdict] : "unknown";
}
