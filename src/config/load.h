/* SPDX-License-Identifier: MIT */
/* load.h -- the YAML text parsed into the node tree of config/internal.h (load.c). */
#ifndef BSC_CONFIG_LOAD_H
#define BSC_CONFIG_LOAD_H

#include <stddef.h>

#include "config/internal.h"
#include "core/err.h"

/* Parses <len> bytes of YAML into <doc> (which it initializes), expanding ${VAR} in scalar
 * values. Syntax errors and expansion errors go to <s>. Returns BSC_OK when a tree was
 * built (there may still be errors in <s>), BSC_EPARSE when the input is not usable YAML,
 * BSC_ENOMEM. The caller always calls cfg__doc_cleanup(). */
enum bsc_err cfg__parse(struct cfg__sink *s, const char *yaml, size_t len, struct cfg__doc *doc);
void cfg__doc_cleanup(struct cfg__doc *doc);

#endif
