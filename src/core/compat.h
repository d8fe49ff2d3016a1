/* SPDX-License-Identifier: MIT */
/* compat.h -- compiler helpers shared by every file, and the banned-function list.
 * Every header of ours includes it first. */
#ifndef BSC_CORE_COMPAT_H
#define BSC_CORE_COMPAT_H

/* The headers that declare the banned functions come first, so the poison below only
 * bites uses, never libc's own declarations. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define BSC_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define BSC_UNUSED            __attribute__((unused))
#define BSC_LIKELY(x)         __builtin_expect(!!(x), 1)
#define BSC_UNLIKELY(x)       __builtin_expect(!!(x), 0)
#define BSC_ARRAY_LEN(a)      (sizeof(a) / sizeof((a)[0]))

/* Functions that are file-local in release builds but visible to unit tests. */
#ifdef BSC_UNIT_TEST
#define BSC_TESTABLE
#else
#define BSC_TESTABLE static
#endif

/* Active in every build: only for states that cannot happen. Never for input checks. */
#define BSC_BUG_ON(cond)                                                                   \
    do {                                                                                   \
        if (BSC_UNLIKELY(cond))                                                            \
            bsc_bug(__FILE__, __LINE__, #cond);                                            \
    } while (0)

_Noreturn void bsc_bug(const char *file, int line, const char *what);

#define BSC_FREE(p)                                                                        \
    do {                                                                                   \
        free(p);                                                                           \
        (p) = NULL;                                                                        \
    } while (0)

#ifndef BSC_NO_POISON
#pragma GCC poison sprintf strcpy strcat strncpy gets strtok atoi
#endif

#endif
