/* SPDX-License-Identifier: MIT */
/* build_info.c -- the two strings of build_info.h, defined on this file's command line by
 * the Makefile (mk/package.mk); a compile without them says so rather than failing. */
#include "core/build_info.h"

#ifndef BASCULE_VERSION
#define BASCULE_VERSION "0.0.0-unversioned"
#endif
#ifndef BASCULE_REVISION
#define BASCULE_REVISION "unknown"
#endif

const char bsc_build_version[] = BASCULE_VERSION;
const char bsc_build_revision[] = BASCULE_REVISION;
