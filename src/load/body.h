/* SPDX-License-Identifier: MIT */
/* body.h -- the request body `bascule load` sends: a small default chat request, or the
 * JSON object of --body FILE, with "model" set to the route and "stream" (and
 * stream_options.include_usage) set or removed to match --stream. docs/load.md. */
#ifndef BSC_LOAD_BODY_H
#define BSC_LOAD_BODY_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
#include "core/str.h"

/* Builds the body. <base> is the --body file's text, or an empty slice for the default.
 * Returns BSC_OK with *<out> (malloc'd, NUL-terminated, caller frees) and *<out_len>;
 * BSC_EPARSE when <base> is not one JSON object (<why> says what is wrong), BSC_ENOMEM. */
enum bsc_err load_body_build(struct bsc_str base, const char *model, bool stream, char **out,
                             size_t *out_len, const char **why);

#endif
