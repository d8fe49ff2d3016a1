/* SPDX-License-Identifier: MIT */
/* env.h -- ${VAR} expansion of scalar values (env.c). */
#ifndef BSC_CONFIG_ENV_H
#define BSC_CONFIG_ENV_H

#include <stdbool.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

/* Called once per problem in one scalar: an unset variable, a bad reference. */
typedef void cfg__env_err_fn(void *ctx, const char *msg);

/* Appends <in> to <out> with ${NAME} and ${NAME:-default} replaced from the environment and
 * $${ written as a literal ${. Returns BSC_OK, BSC_EINVAL after reporting each problem
 * through <on_err>, BSC_ELIMIT when <out>'s bound is passed, or BSC_ENOMEM. */
enum bsc_err cfg__env_expand(struct bsc_str in, struct bsc_buf *out, cfg__env_err_fn *on_err,
                             void *ctx);

/* True when <s> holds something cfg__env_expand would change. */
bool cfg__env_has_ref(struct bsc_str s);

#endif
