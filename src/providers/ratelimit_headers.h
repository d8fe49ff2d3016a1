/* SPDX-License-Identifier: MIT */
/* ratelimit_headers.h -- the rate-limit headers providers send on every answer, read before
 * any 429: OpenAI's (also Azure, Qianfan, Ark) x-ratelimit-remaining/reset-requests|tokens
 * with Go-style durations ("1s", "6m0s", "20ms", "1h2m3.5s"), and Anthropic's
 * anthropic-ratelimit-requests|tokens-remaining|reset with RFC 3339 times. Pure parsers: no
 * clock (the wall time comes in), no allocation. See docs/internals/adaptive.md. */
#ifndef BSC_PROVIDERS_RATELIMIT_HEADERS_H
#define BSC_PROVIDERS_RATELIMIT_HEADERS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/str.h"
#include "providers/openai_errors.h"

/* What an answer's headers said about its key's limits; -1 where they said nothing. */
struct rl_headers {
    int64_t remaining_requests;
    int64_t remaining_tokens;
    int64_t reset_requests_ms; /* from now until the request window resets */
    int64_t reset_tokens_ms;   /* from now until the token window resets */
};

/* The longest wait a header may ask for: a wrong or hostile value must not take a key out
 * of rotation for long (the same bound as a Retry-After, keys.h). */
#define RL_MAX_RESET_MS (60LL * 60 * 1000)

/* Parses a Go-style duration: one or more <number><unit> with units h, m, s, ms (also us,
 * µs, ns, rounded up to a millisecond), decimals allowed ("3.5s"); a bare number is seconds.
 * Returns milliseconds (rounded up), or -1 for anything else (empty, negative, a unit
 * missing, overflow). */
int64_t rl_parse_duration_ms(struct bsc_str s);

/* Parses an RFC 3339 time ("2026-12-02T00:40:03Z", fractions and a +hh:mm / -hh:mm offset
 * allowed) into Unix milliseconds; -1 when it is not one. */
int64_t rl_parse_rfc3339_ms(struct bsc_str s);

/* Reads OpenAI-style headers through <in>'s header accessor into *<out> (all -1 without an
 * accessor or headers). */
void rl_read_openai(const struct prov_err_input *in, struct rl_headers *out);

/* Reads Anthropic's headers into *<out>; a reset time becomes a wait from in->now_wall_ms
 * (0 when already past). */
void rl_read_anthropic(const struct prov_err_input *in, struct rl_headers *out);

/* How long the key must rest because a window has nothing left: the reset of every window
 * whose remaining is 0 (the longest), clipped to RL_MAX_RESET_MS; a window with nothing left
 * and no reset rests one second (one already past: none). 0 when something remains or
 * nothing was said. */
int64_t rl_exhausted_ms(const struct rl_headers *h);

#endif
