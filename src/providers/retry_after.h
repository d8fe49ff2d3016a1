/* SPDX-License-Identifier: MIT */
/* retry_after.h -- the provider's "wait this long" hints (docs/providers.md §6.6): the
 * retry-after-ms and Retry-After headers, Go-style durations (x-ratelimit-reset-*), and
 * "try again in 1.5s" in error messages. Pure parsers: no clock (the caller passes the wall
 * time), no allocation. Every parser ignores bogus input rather than guessing. */
#ifndef BSC_PROVIDERS_RETRY_AFTER_H
#define BSC_PROVIDERS_RETRY_AFTER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/compat.h"
#include "core/str.h"

/* Every hint is capped here: longer waits are quota resets, not retries. */
#define PROV_RETRY_AFTER_CAP_MS (24LL * 60 * 60 * 1000)

/* The delay the provider asked for, in ms, from the raw header values (empty = absent).
 * <retry_after_ms> (a non-negative decimal number of milliseconds, fraction allowed) wins
 * when valid; otherwise <retry_after> as delta-seconds (fraction allowed) or an HTTP-date
 * (IMF-fixdate only), measured against <now_wall_ms> and clamped at 0. Fractions round up
 * (a hint is never shortened); results are capped at PROV_RETRY_AFTER_CAP_MS. Signs,
 * exponents, garbage and the obsolete RFC 850/asctime date forms are ignored. Returns -1
 * when there is no valid hint. */
int64_t prov_parse_retry_after(struct bsc_str retry_after, struct bsc_str retry_after_ms,
                               uint64_t now_wall_ms);

/* Parses an IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT", RFC 9110 §5.6.7), surrounding
 * blanks allowed, into milliseconds since the epoch in *<out_ms>. Dates before 1970 give a
 * negative value. Returns false, *<out_ms> untouched, on anything else. */
bool prov_parse_http_date(struct bsc_str s, int64_t *out_ms);

/* Parses a Go-style duration ("20ms", "1s", "6m0s", "1h2m3.5s") that fills all of <s>
 * (blanks around it allowed) into ms, rounded up and capped. Returns -1 when invalid. */
int64_t prov_parse_duration(struct bsc_str s);

/* Looks for a wait in an error message: "try again in 1.2s", "retry in 36.4s", "retry after
 * 5 seconds", "try again in 6m0s" (case-insensitive; units ms, s, sec, second(s), m, min,
 * minute(s), h, hour(s); a number without a unit is ignored). Returns the first match in
 * ms, rounded up and capped, or -1. */
int64_t prov_parse_retry_hint_text(struct bsc_str message);

#endif
