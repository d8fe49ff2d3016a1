/* SPDX-License-Identifier: MIT */
/* clock.h -- the two clocks. Decision code never reads them: it takes <now> as an
 * argument so tests can pass a fake one. */
#ifndef BSC_CORE_CLOCK_H
#define BSC_CORE_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds, for deadlines and durations. */
uint64_t bsc_now_ms(void);
/* Monotonic microseconds. */
uint64_t bsc_now_us(void);
/* Wall-clock milliseconds since the epoch, for logs and HTTP dates. */
uint64_t bsc_wall_ms(void);

#endif
