/* SPDX-License-Identifier: MIT */
/* clock.c -- monotonic and wall clocks. */
#include "core/clock.h"

#include <time.h>

#include "core/compat.h"

uint64_t bsc_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

uint64_t bsc_now_ms(void)
{
    return bsc_now_us() / 1000u;
}

uint64_t bsc_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}
