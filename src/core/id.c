/* SPDX-License-Identifier: MIT */
/* id.c -- per-thread xorshift generator, seeded from the clock, the thread and
 * getrandom(); request ids in Crockford base32. Not for secrets. */
#include "core/id.h"

#include <pthread.h>
#include <sys/random.h>

#include "core/clock.h"
#include "core/compat.h"

static _Thread_local uint64_t rng_state;

static void seed(void)
{
    uint64_t s = 0;

    if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s))
        s = 0;
    s ^= bsc_now_us() ^ ((uint64_t)(uintptr_t)pthread_self() << 17);
    rng_state = s ? s : 0x9e3779b97f4a7c15ull;
}

uint64_t bsc_rand64(void)
{
    uint64_t x;

    if (BSC_UNLIKELY(rng_state == 0))
        seed();
    x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    rng_state = x;
    return x * 0x2545f4914f6cdd1dull;
}

double bsc_rand01(void)
{
    return (double)(bsc_rand64() >> 11) * (1.0 / 9007199254740992.0);
}

void bsc_req_id(char out[BSC_REQ_ID_LEN + 1])
{
    static const char alphabet[] = "0123456789abcdefghjkmnpqrstvwxyz";
    uint64_t a = bsc_rand64(), b = bsc_rand64();

    out[0] = 'r';
    out[1] = 'e';
    out[2] = 'q';
    out[3] = '_';
    for (int i = 0; i < 10; i++, a >>= 5)
        out[4 + i] = alphabet[a & 31];
    for (int i = 0; i < 10; i++, b >>= 5)
        out[14 + i] = alphabet[b & 31];
    out[BSC_REQ_ID_LEN] = '\0';
}
