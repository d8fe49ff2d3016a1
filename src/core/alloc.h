/* SPDX-License-Identifier: MIT */
/* alloc.h -- boot-time allocation that aborts on failure. Runtime code uses plain
 * malloc and fails only the request that asked. */
#ifndef BSC_CORE_ALLOC_H
#define BSC_CORE_ALLOC_H

#include <stddef.h>

void *bsc_xmalloc(size_t n);
void *bsc_xcalloc(size_t n, size_t size);
char *bsc_xstrdup(const char *s);

#endif
