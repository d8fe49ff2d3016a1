/* SPDX-License-Identifier: MIT */
/* build_info.c -- the two strings of build_info.h, from the Makefile's generated header
 * (a build without it, e.g. a lone compile, says so rather than failing). */
#include "core/build_info.h"

#if defined(__has_include)
#if __has_include("bascule_build_gen.h")
#include "bascule_build_gen.h"
#endif
#endif

#ifndef BASCULE_VERSION
#define BASCULE_VERSION "0.0.0-unversioned"
#endif
#ifndef BASCULE_REVISION
#define BASCULE_REVISION "unknown"
#endif

const char bsc_build_version[] = BASCULE_VERSION;
const char bsc_build_revision[] = BASCULE_REVISION;
