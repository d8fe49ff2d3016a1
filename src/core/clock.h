/* SPDX-License-Identifier: MIT */
/* clock.h -- the two clocks. Decision code never reads them: it takes <now> as an
 * argument so tests can pass a fake one. */
#ifndef BSC_CORE_CLOCK_H
#define BSC_CORE_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds, for deadlines and durations. On a thread that follows its event
 * loop's clock, the loop's (read once a pass, after the poll: as stale as the pass is long,
 * which is what a timer of that loop sees too). */
uint64_t bsc_now_ms(void);
/* Monotonic microseconds, read from the system every time (latencies, overhead). */
uint64_t bsc_now_us(void);
/* Wall-clock milliseconds since the epoch, for logs and HTTP dates. On a thread that follows
 * its loop's clock, read once per loop millisecond. */
uint64_t bsc_wall_ms(void);

/* Makes this thread's millisecond clocks follow <ms>(<arg>) (an event loop's time, in the
 * monotonic clock's milliseconds: uv_now), or the system's again with NULL. A proxied
 * request read the clock about 31 times, 16 of them for milliseconds; each read is a vDSO
 * call that costs tens of nanoseconds on a virtual machine's clock source. */
void bsc_clock_follow(uint64_t (*ms)(void *arg), void *arg);

#endif
