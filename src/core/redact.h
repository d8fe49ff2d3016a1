/* SPDX-License-Identifier: MIT */
/* redact.h -- a set of secret values (API keys, the admin key, auth header values) and the
 * scrubber that masks them in text an upstream wrote: a provider that quotes the key it was
 * sent ("Incorrect API key provided: sk-...") must not hand it to a client or a log. Built
 * once per config snapshot, then immutable and shared by every thread. Knows nothing of
 * HTTP or providers. See docs/internals/secrets.md. */
#ifndef BSC_CORE_REDACT_H
#define BSC_CORE_REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "core/str.h"

/* Values shorter than this are not secrets worth a scrub: masking every "abc" in every
 * message would garble text and protect nothing a guess would not find. */
#define BSC_REDACT_MIN_LEN 8
/* What a masked value becomes. */
#define BSC_REDACT_MARK "[REDACTED]"
/* At most this many secrets in one set (64 keys per provider, many providers). */
#define BSC_REDACT_MAX 4096

struct bsc_redact;

/* An empty set, or NULL when out of memory. The caller owns it (bsc_redact_free). */
struct bsc_redact *bsc_redact_new(void);

/* Adds a copy of <secret>. A value shorter than BSC_REDACT_MIN_LEN, or already present,
 * is skipped (BSC_OK). BSC_ENOMEM, or BSC_ELIMIT past BSC_REDACT_MAX, leaves the set as it
 * was. Not thread-safe: adds happen while the snapshot is built, before it is shared. */
enum bsc_err bsc_redact_add(struct bsc_redact *rd, struct bsc_str secret);

/* The number of secrets held; 0 for NULL. */
size_t bsc_redact_count(const struct bsc_redact *rd);

/* Masks, in place, every secret of <rd> found in the NUL-terminated <s> (a buffer of <cap>
 * bytes) with BSC_REDACT_MARK. Masked: a whole secret; a prefix of one that is at least
 * BSC_REDACT_MIN_LEN bytes long and runs to the end of <s> (an echo cut short by a length
 * bound); a prefix of at least half of one (an upstream that shortens what it quotes).
 * The result stays NUL-terminated within <cap>; when the marks make it longer than <cap>
 * it is cut, at a UTF-8 character boundary. Returns how many values were masked. A NULL
 * or empty <rd> is a no-op, and so is a text that holds no first byte of any secret (one
 * table lookup per byte). Reads only <rd>: safe from any thread. */
size_t bsc_redact_cstr(const struct bsc_redact *rd, char *s, size_t cap);

/* Frees <rd> and the copies it holds. NULL is fine. */
void bsc_redact_free(struct bsc_redact *rd);

#endif
