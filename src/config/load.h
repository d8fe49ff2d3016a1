/* SPDX-License-Identifier: MIT */
/* load.h -- cfg_load, and the YAML text parsed into the node tree of config/internal.h
 * (load.c). */
#ifndef BSC_CONFIG_LOAD_H
#define BSC_CONFIG_LOAD_H

#include <stddef.h>

#include "config/internal.h"
#include "config/types.h"
#include "core/err.h"

/* Parses <len> bytes of YAML into <doc> (which it initializes), expanding ${VAR} in scalar
 * values. Syntax errors and expansion errors go to <s>. Returns BSC_OK when a tree was
 * built (there may still be errors in <s>), BSC_EPARSE when the input is not usable YAML,
 * BSC_ENOMEM. The caller always calls cfg__doc_cleanup(). */
enum bsc_err cfg__parse(struct cfg__sink *s, const char *yaml, size_t len, struct cfg__doc *doc);
void cfg__doc_cleanup(struct cfg__doc *doc);

/* Loads and validates <path>. On success returns BSC_OK and *<out> is a snapshot with
 * one ref owned by the caller. On failure returns BSC_EINVAL (or BSC_EIO when the file
 * cannot be read) and *<out> is NULL. In both cases every problem found (all of them,
 * not just the first) is appended to <diags>, which the caller frees with
 * cfg_diags_cleanup(). Never calls back; reads the environment for ${VAR}. */
enum bsc_err cfg_load(const char *path, struct cfg **out, struct cfg_diags *diags);

/* The same from a string, for tests; <name> appears in diagnostics as the file. */
enum bsc_err cfg_load_string(const char *name, const char *yaml, size_t len, struct cfg **out,
                             struct cfg_diags *diags);

#endif
