/* SPDX-License-Identifier: MIT */
/* build_info.h -- what this binary is: the release (the VERSION file) and the source
 * revision it was built from (git, or "unknown" outside a checkout), set by the Makefile. */
#ifndef BSC_CORE_BUILD_INFO_H
#define BSC_CORE_BUILD_INFO_H

extern const char bsc_build_version[];
extern const char bsc_build_revision[];

#endif
