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

/* This thread's loop clock (bsc_clock_follow), or NULL: read the system's. */
static _Thread_local uint64_t (*loop_ms)(void *arg);
static _Thread_local void *loop_arg;
/* The wall clock read at loop millisecond <wall_at> (UINT64_MAX: none yet). */
static _Thread_local uint64_t wall_at = UINT64_MAX, wall_then;

void bsc_clock_follow(uint64_t (*ms)(void *arg), void *arg)
{
    loop_ms = ms;
    loop_arg = arg;
    wall_at = UINT64_MAX;
}

uint64_t bsc_now_ms(void)
{
    return loop_ms ? loop_ms(loop_arg) : bsc_now_us() / 1000u;
}

static uint64_t read_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t bsc_wall_ms(void)
{
    uint64_t at;

    if (!loop_ms)
        return read_wall_ms();
    at = loop_ms(loop_arg);
    if (at != wall_at) {
        wall_at = at;
        wall_then = read_wall_ms();
    }
    return wall_then;
}
