/* SPDX-License-Identifier: MIT */
/* key.c -- the cache key: SHA-256 over a version tag and the length-prefixed parts. */
#include "cache/key.h"

static void part(struct bsc_sha256 *c, struct bsc_str s)
{
    uint8_t len[8];
    uint64_t n = s.len;

    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(n >> (8 * i));
    bsc_sha256_update(c, len, sizeof(len));
    if (s.len)
        bsc_sha256_update(c, s.p, s.len);
}

void cache_key_make(const struct cache_key_parts *p, struct cache_key *out)
{
    struct bsc_sha256 c;

    bsc_sha256_init(&c);
    part(&c, BSC_STR("bascule-cache-v1"));
    part(&c, p->route);
    part(&c, p->dialect);
    part(&c, p->shape);
    part(&c, p->scope);
    part(&c, p->canonical);
    bsc_sha256_final(&c, out->d);
}
