/* SPDX-License-Identifier: MIT */
/* sha256.h -- SHA-256 (FIPS 180-4), streaming and one-shot, for idempotency fingerprints.
 * Not a MAC and not constant-time with respect to anything secret: it hashes request
 * bodies, which the client already knows. No OpenSSL: the gateway does not link
 * libcrypto, and a fingerprint needs nothing more. See docs/internals/store.md. */
#ifndef BSC_CORE_SHA256_H
#define BSC_CORE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/compat.h"

#define BSC_SHA256_LEN 32
#define BSC_SHA256_HEX_LEN 64

struct bsc_sha256 {
    uint32_t h[8];
    uint64_t total;   /* bytes hashed so far */
    uint8_t blk[64];  /* the partial block */
    size_t used;      /* bytes in <blk> */
};

/* Cannot fail. */
void bsc_sha256_init(struct bsc_sha256 *c);
/* Hashes <len> bytes at <p> (<p> may be NULL when <len> is 0). */
void bsc_sha256_update(struct bsc_sha256 *c, const void *p, size_t len);
/* Writes the digest to <out>; <c> must be initialised again before reuse. */
void bsc_sha256_final(struct bsc_sha256 *c, uint8_t out[BSC_SHA256_LEN]);
/* One-shot digest of <len> bytes at <p>. */
void bsc_sha256(const void *p, size_t len, uint8_t out[BSC_SHA256_LEN]);
/* Writes <d> as 64 lowercase hex digits and a NUL into <out>. */
void bsc_sha256_hex(const uint8_t d[BSC_SHA256_LEN], char out[BSC_SHA256_HEX_LEN + 1]);

#endif
