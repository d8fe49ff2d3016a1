/* SPDX-License-Identifier: MIT */
/* asan.h -- marking memory kept for reuse as unaddressable under AddressSanitizer, so a
 * recycled object still reports a use after its release; nothing in other builds. */
#ifndef BSC_CORE_ASAN_H
#define BSC_CORE_ASAN_H

#if defined(__SANITIZE_ADDRESS__)
#define BSC_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BSC_ASAN 1
#endif
#endif

#ifdef BSC_ASAN
#include <sanitizer/asan_interface.h>
#define BSC_ASAN_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define BSC_ASAN_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BSC_ASAN_POISON(p, n) ((void)(p), (void)(n))
#define BSC_ASAN_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

#endif
