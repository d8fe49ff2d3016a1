/* SPDX-License-Identifier: MIT */
/* keys.h -- round-robin rotation over one provider's API keys, with per-key cooldowns
 * (docs/design.md §4, §7). A key that's rate-limited, out of quota or refused cools down on its own
 * instead of opening the provider's circuit. Pure: no I/O, no clock reads, no allocation,
 * never calls back. Keys are named by index only; the secrets themselves live in the config
 * snapshot and never pass through here. Not thread-safe: one pool per worker, or the caller
 * serialises access. See docs/internals/breaker.md. */
#ifndef BSC_HEALTH_KEYS_H
#define BSC_HEALTH_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

/* The most keys one provider may have; config validation must reject more. */
#define KEYS_MAX 64
/* The most models one pool tracks rate limits for. A model past these (no slot, -1) cools
 * its key for every model, as a rate limit did before models had slots. */
#define KEYS_MODELS_MAX 16

/* Cooldowns when the caller has no better figure (keys_cooldown_until()). A rate limit is
 * short-lived, so a missing Retry-After means "try again in a second". Quota exhaustion and
 * refused credentials need a human or a billing cycle: probing them every second would only
 * burn requests, so they rest for minutes. */
#define KEYS_RATE_LIMIT_DEFAULT_MS 1000u
#define KEYS_QUOTA_COOLDOWN_MS     (5u * 60u * 1000u)
#define KEYS_AUTH_COOLDOWN_MS      (10u * 60u * 1000u)
/* A Retry-After longer than this is clipped: a buggy or hostile header must not take a key
 * out of rotation for days. */
#define KEYS_MAX_COOLDOWN_MS (60u * 60u * 1000u)

enum key_reason {
    KEY_RATE_LIMITED = 0, /* 429 or a throttling code: comes back after Retry-After */
    KEY_QUOTA,            /* billing quota exhausted */
    KEY_AUTH,             /* the provider refused the key (401/403) */
    KEY_REASON_COUNT
};

/* Monotonic per-key counters for metrics (label: provider and key index). */
struct key_stats {
    uint64_t picks;                       /* times keys_next() returned this key */
    uint64_t cooldowns[KEY_REASON_COUNT]; /* keys_cooldown() calls, by reason */
};

struct key_slot {
    uint64_t cool_until_ms; /* available again at this time; 0 = never cooled */
    enum key_reason reason; /* of the latest cooldown */
    struct key_stats stats;
    uint64_t verify_at_ms;  /* a refused key: when to re-verify it; 0 = nothing due */
    uint32_t verify_fails;  /* re-verifications refused in a row (the backoff) */
    bool verifying;         /* a re-verification is running */
    uint64_t restored_ms;   /* when a re-verification last put it back; 0 = never */
    /* A rate limit is the provider's per model: the key stays usable for the other models
     * (<cool_until_ms> above is for every model: quota, auth, a model without a slot). */
    uint64_t model_until_ms[KEYS_MODELS_MAX];
};

/* What a re-verification of a refused key found (keys_verify_done()). */
enum key_verdict {
    KEY_VERIFY_OK = 0,       /* the provider accepted the key: back in rotation */
    KEY_VERIFY_REFUSED,      /* refused again (401/403): stays out, next try later */
    KEY_VERIFY_INCONCLUSIVE, /* no answer about the key (transport, 5xx, 404): try later */
    KEY_VERIFY_COUNT
};

/* Public layout for embedding; fields are private to keys.c. */
struct keypool {
    uint32_t n;    /* keys in use, <= KEYS_MAX */
    uint32_t next; /* where the next round-robin scan starts */
    struct key_slot keys[KEYS_MAX];
};

/* Initialises <pool> for <n> keys, all available, counters zero. A <n> above KEYS_MAX is
 * clipped to KEYS_MAX (config validation rejects it first); keys_count() tells the result.
 * <n> = 0 is a valid empty pool (a provider without keys). Cannot fail. */
void keys_init(struct keypool *pool, size_t n);

/* The number of keys in the pool. */
size_t keys_count(const struct keypool *pool);

/* Returns the index of the next key, in round-robin order, that is not cooling down at
 * <now_ms>, and advances the rotation past it; -1 when the pool is empty or every key is
 * cooling (see keys_soonest_ms()). */
int keys_next(struct keypool *pool, uint64_t now_ms);

/* keys_next() for model slot <model> (0..KEYS_MODELS_MAX-1; -1: any model): also skips the
 * keys rate-limited for that model. */
int keys_next_model(struct keypool *pool, int model, uint64_t now_ms);

/* keys_cooldown() scoped to model slot <model>: a KEY_RATE_LIMITED cooldown with a model
 * slot cools the key for that model only; every other reason, or <model> -1, cools it for
 * every model. Same returns as keys_cooldown(). */
enum bsc_err keys_cooldown_model(struct keypool *pool, int idx, int model, uint64_t until_ms,
                                 enum key_reason reason);

/* keys_available(), keys_soonest_ms() and keys_soonest_hint_ms() as seen by model slot
 * <model> (-1: the key-wide cooldowns only). */
size_t keys_available_model(const struct keypool *pool, int model, uint64_t now_ms);
uint64_t keys_soonest_model_ms(const struct keypool *pool, int model);
uint64_t keys_soonest_hint_model_ms(const struct keypool *pool, int model, uint64_t now_ms);

/* Takes key <idx> out of rotation until <until_ms> for <reason>. A cooldown never shortens
 * an existing one (a key refused for auth stays out even if it is later rate-limited).
 * Returns BSC_OK, or BSC_EINVAL for an index out of range (nothing changes). */
enum bsc_err keys_cooldown(struct keypool *pool, int idx, uint64_t until_ms,
                           enum key_reason reason);

/* The time at which a key failing at <now_ms> for <reason> should come back.
 * <retry_after_ms> is the provider's Retry-After (0 when absent). Rate limit: Retry-After or
 * KEYS_RATE_LIMIT_DEFAULT_MS. Quota: the longer of Retry-After and KEYS_QUOTA_COOLDOWN_MS.
 * Auth: KEYS_AUTH_COOLDOWN_MS (a Retry-After on a refusal means nothing). Every delay is
 * clipped to KEYS_MAX_COOLDOWN_MS. */
uint64_t keys_cooldown_until(uint64_t now_ms, enum key_reason reason, uint64_t retry_after_ms);

/* Re-verification of refused keys. A key cooled for KEY_AUTH (a 401/403 that may have been
 * about one model, or a key fixed meanwhile) need not rest the whole
 * KEYS_AUTH_COOLDOWN_MS: the caller schedules a cheap authenticated probe with
 * keys_verify_schedule(), takes due ones with keys_verify_take() and reports with
 * keys_verify_done(). The wait after the n-th refusal in a row is <base_ms> << n, at most
 * KEYS_AUTH_COOLDOWN_MS; while the probes are refused the key stays cooled (until one full
 * KEYS_AUTH_COOLDOWN_MS past the next look, so it still comes back if the looks stop). */

/* Schedules the re-verification of key <idx> at <at_ms> if it cools for KEY_AUTH and none is
 * scheduled or running. */
void keys_verify_schedule(struct keypool *pool, int idx, uint64_t at_ms);

/* When a refusal of key <idx> at <now_ms> should be re-verified, for model slot <model>
 * (-1: any): at once (<now_ms>) when no key of the pool is usable for that model any more --
 * the last usable key was refused, so every request fails until it is looked at -- unless a
 * re-verification put this key back less than <base_ms> ago (a key refused for one model only
 * would otherwise be restored and refused again in a loop); else <now_ms> + <base_ms>. Call
 * it after the cooldown of the refusal was applied. Pure. */
uint64_t keys_verify_due_ms(const struct keypool *pool, int idx, int model, uint64_t now_ms,
                            uint32_t base_ms);

/* A key whose re-verification is due at <now_ms>, marked as running; -1 when none. */
int keys_verify_take(struct keypool *pool, uint64_t now_ms);

/* Ends the running re-verification of key <idx> with <verdict>; the next one, if any, is
 * due after the backoff from <base_ms>. */
void keys_verify_done(struct keypool *pool, int idx, enum key_verdict verdict, uint64_t now_ms,
                      uint32_t base_ms);

/* Like keys_soonest_ms(), but a refused key whose re-verification is scheduled or running
 * may be back at that look (<now_ms> while it runs): the hint for a client's Retry-After,
 * never for the gateway's own waits. */
uint64_t keys_soonest_hint_ms(const struct keypool *pool, uint64_t now_ms);

/* The earliest time any key of the pool is available: <= now when one already is;
 * UINT64_MAX for an empty pool. */
uint64_t keys_soonest_ms(const struct keypool *pool);

/* True when key <idx> is cooling at <now_ms>; false for an index out of range. */
bool keys_is_cooling(const struct keypool *pool, int idx, uint64_t now_ms);

/* The number of keys not cooling at <now_ms>; for a gauge. */
size_t keys_available(const struct keypool *pool, uint64_t now_ms);

/* The reason of key <idx>'s latest cooldown; meaningful only while it is cooling. */
enum key_reason keys_reason(const struct keypool *pool, int idx);

/* The counters of key <idx>, borrowed from <pool>; NULL for an index out of range. */
const struct key_stats *keys_stats(const struct keypool *pool, int idx);

/* The reasons (bit 1 << enum key_reason) of the keys cooling at <now_ms> for model slot
 * <model> (-1: the key-wide cooldowns only): a key cooled for every model counts with its own
 * reason, a key rate-limited for <model> only as KEY_RATE_LIMITED. 0 when none cools. */
unsigned keys_cooling_reasons(const struct keypool *pool, int model, uint64_t now_ms);

/* Writes the reasons <bits> (keys_cooling_reasons()) as a client reads them, in <buf> of
 * <len> bytes: "rate_limited", "quota_exhausted", "auth_failed", comma-separated in that
 * order; "" for none. Returns <buf>. */
const char *keys_reasons_text(unsigned bits, char *buf, size_t len);

/* "rate_limited", "quota", "auth"; "unknown" out of range. Never NULL. */
const char *keys_reason_name(enum key_reason reason);

/* "restored", "refused", "inconclusive" (the result label of
 * bascule_key_reverifications_total); "unknown" out of range. Never NULL. */
const char *keys_verdict_name(enum key_verdict verdict);

#endif
