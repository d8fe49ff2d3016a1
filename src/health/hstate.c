/* SPDX-License-Identifier: MIT */
/* hstate.c -- what every health backend shares: key availability read through the backend's
 * one keys() call, and the names of health values. */
#include "health/hstate.h"

size_t hstate_keys_available(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    size_t n;
    uint64_t ready, hint;

    hs->ops->keys(hs, p, NULL, now_ms, &n, &ready, &hint);
    return n;
}

uint64_t hstate_keys_ready_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    size_t n;
    uint64_t ready, hint;

    hs->ops->keys(hs, p, NULL, now_ms, &n, &ready, &hint);
    return ready;
}

uint64_t hstate_keys_hint_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    size_t n;
    uint64_t ready, hint;

    hs->ops->keys(hs, p, NULL, now_ms, &n, &ready, &hint);
    return hint;
}

uint64_t hstate_tkeys_ready_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms)
{
    size_t n;
    uint64_t ready, hint;

    hs->ops->keys(hs, t->provider, t, now_ms, &n, &ready, &hint);
    return ready;
}

uint64_t hstate_tkeys_hint_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms)
{
    size_t n;
    uint64_t ready, hint;

    hs->ops->keys(hs, t->provider, t, now_ms, &n, &ready, &hint);
    return hint;
}

const char *target_health_name(enum target_health h)
{
    static const char *const names[HEALTH_COUNT] = {"unknown", "up", "down"};

    return (unsigned)h < HEALTH_COUNT ? names[h] : "unknown";
}
