/* SPDX-License-Identifier: MIT */
/* keys.c -- API key rotation and cooldown for one provider. Round-robin over the keys that
 * are not cooling down; a failing key rests for a time that depends on why it failed. It
 * does not classify errors (the caller maps them to enum key_reason) and never sees the
 * secrets. See docs/internals/breaker.md. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "health/keys.h"

static bool valid_idx(const struct keypool *pool, int idx)
{
    return idx >= 0 && (uint32_t)idx < pool->n;
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
    for (uint32_t i = 0; i < pool->n; i++) {
        uint32_t idx = (pool->next + i) % pool->n;
        struct key_slot *k = &pool->keys[idx];

        if (k->cool_until_ms > now_ms)
            continue;
        pool->next = (idx + 1) % pool->n;
        k->stats.picks++;
        return (int)idx;
    }
    return -1;
}

enum bsc_err keys_cooldown(struct keypool *pool, int idx, uint64_t until_ms, enum key_reason reason)
{
    struct key_slot *k;

    if (!valid_idx(pool, idx) || (unsigned)reason >= KEY_REASON_COUNT)
        return BSC_EINVAL;
    k = &pool->keys[idx];
    k->stats.cooldowns[reason]++;
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

uint64_t keys_soonest_ms(const struct keypool *pool)
{
    uint64_t soonest = UINT64_MAX;

    for (uint32_t i = 0; i < pool->n; i++) {
        if (pool->keys[i].cool_until_ms < soonest)
            soonest = pool->keys[i].cool_until_ms;
    }
    return soonest;
}

bool keys_is_cooling(const struct keypool *pool, int idx, uint64_t now_ms)
{
    return valid_idx(pool, idx) && pool->keys[idx].cool_until_ms > now_ms;
}

size_t keys_available(const struct keypool *pool, uint64_t now_ms)
{
    size_t n = 0;

    for (uint32_t i = 0; i < pool->n; i++) {
        if (pool->keys[i].cool_until_ms <= now_ms)
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

const char *keys_reason_name(enum key_reason reason)
{
    return (unsigned)reason < KEY_REASON_COUNT ? reason_names[reason] : "unknown";
}
