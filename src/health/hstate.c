/* SPDX-License-Identifier: MIT */
/* hstate.c -- what every health backend shares: key availability read through the backend's
 * one keys() call, and the names of health values. */
#include "health/hstate.h"

size_t hstate_keys_available(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, p, NULL, now_ms, &k);
    return k.available;
}

uint64_t hstate_keys_ready_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, p, NULL, now_ms, &k);
    return k.ready_at;
}

uint64_t hstate_keys_hint_at(struct hstate *hs, const struct cfg_provider *p, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, p, NULL, now_ms, &k);
    return k.hint_at;
}

uint64_t hstate_tkeys_ready_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, t->provider, t, now_ms, &k);
    return k.ready_at;
}

uint64_t hstate_tkeys_hint_at(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, t->provider, t, now_ms, &k);
    return k.hint_at;
}

unsigned hstate_tkeys_reasons(struct hstate *hs, const struct cfg_target *t, uint64_t now_ms)
{
    struct hstate_keys k;

    hs->ops->keys(hs, t->provider, t, now_ms, &k);
    return k.reasons;
}

const char *target_health_name(enum target_health h)
{
    static const char *const names[HEALTH_COUNT] = {"unknown", "up", "down"};

    return (unsigned)h < HEALTH_COUNT ? names[h] : "unknown";
}
