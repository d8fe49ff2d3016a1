/* SPDX-License-Identifier: MIT */
/* sha256.c -- SHA-256 as FIPS 180-4 §6.2 describes it: 64-byte blocks, big-endian words,
 * the 64 round constants. Written for clarity over speed; a fingerprint hashes one
 * request body, so the few hundred MB/s this reaches are plenty. */
#include <string.h>

#include "core/sha256.h"

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

static uint32_t ror(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32 - n));
}

static uint32_t load_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void store_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static void compress(uint32_t h[8], const uint8_t blk[64])
{
    uint32_t w[64], a, b, c, d, e, f, g, k, t1, t2;
    unsigned i;

    for (i = 0; i < 16; i++)
        w[i] = load_be32(blk + 4 * i);
    for (i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (i = 0; i < 64; i++) {
        t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void bsc_sha256_init(struct bsc_sha256 *c)
{
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

    memcpy(c->h, iv, sizeof(iv));
    c->total = 0;
    c->used = 0;
}

void bsc_sha256_update(struct bsc_sha256 *c, const void *p, size_t len)
{
    const uint8_t *in = p;

    if (!len)
        return;
    c->total += len;
    if (c->used) {
        size_t take = 64 - c->used < len ? 64 - c->used : len;
        memcpy(c->blk + c->used, in, take);
        c->used += take, in += take, len -= take;
        if (c->used < 64)
            return;
        compress(c->h, c->blk);
        c->used = 0;
    }
    for (; len >= 64; in += 64, len -= 64)
        compress(c->h, in);
    if (len)
        memcpy(c->blk, in, len);
    c->used = len;
}

void bsc_sha256_final(struct bsc_sha256 *c, uint8_t out[BSC_SHA256_LEN])
{
    uint64_t bits = c->total * 8;
    unsigned i;

    /* Padding: 0x80, zeros up to 56 mod 64, then the bit length as a big-endian u64. */
    c->blk[c->used++] = 0x80;
    if (c->used > 56) {
        memset(c->blk + c->used, 0, 64 - c->used);
        compress(c->h, c->blk);
        c->used = 0;
    }
    memset(c->blk + c->used, 0, 56 - c->used);
    store_be32(c->blk + 56, (uint32_t)(bits >> 32));
    store_be32(c->blk + 60, (uint32_t)bits);
    compress(c->h, c->blk);
    for (i = 0; i < 8; i++)
        store_be32(out + 4 * i, c->h[i]);
    memset(c, 0, sizeof(*c));
}

void bsc_sha256(const void *p, size_t len, uint8_t out[BSC_SHA256_LEN])
{
    struct bsc_sha256 c;

    bsc_sha256_init(&c);
    bsc_sha256_update(&c, p, len);
    bsc_sha256_final(&c, out);
}

void bsc_sha256_hex(const uint8_t d[BSC_SHA256_LEN], char out[BSC_SHA256_HEX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";

    for (unsigned i = 0; i < BSC_SHA256_LEN; i++) {
        out[2 * i] = hex[d[i] >> 4];
        out[2 * i + 1] = hex[d[i] & 15];
    }
    out[BSC_SHA256_HEX_LEN] = '\0';
}
