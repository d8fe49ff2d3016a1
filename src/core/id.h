/* SPDX-License-Identifier: MIT */
/* id.h -- request ids and cheap per-thread randomness (jitter, weighted picks). */
#ifndef BSC_CORE_ID_H
#define BSC_CORE_ID_H

#include <stddef.h>
#include <stdint.h>

#define BSC_REQ_ID_LEN 24 /* "req_" + 20 base32 chars */

/* Writes a fresh NUL-terminated id of BSC_REQ_ID_LEN chars into <out> (size >= len+1). */
void bsc_req_id(char out[BSC_REQ_ID_LEN + 1]);
/* A uniformly distributed 64-bit value from this thread's generator. */
uint64_t bsc_rand64(void);
/* A double in [0, 1). */
double bsc_rand01(void);

#endif
