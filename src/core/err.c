/* SPDX-License-Identifier: MIT */
/* err.c -- names for enum bsc_err. */
#include "core/err.h"

#include "core/compat.h"

static const char *const err_names[BSC_ERR_COUNT] = {
    [BSC_OK] = "ok",
    [BSC_ENOMEM] = "out of memory",
    [BSC_EINVAL] = "invalid argument",
    [BSC_ELIMIT] = "limit exceeded",
    [BSC_EIO] = "i/o error",
    [BSC_ETIMEDOUT] = "timed out",
    [BSC_ENOTFOUND] = "not found",
    [BSC_EPARSE] = "parse error",
    [BSC_ECANCELED] = "cancelled",
    [BSC_EEXIST] = "already exists",
    [BSC_ESTATE] = "invalid state",
};

const char *bsc_err_str(enum bsc_err err)
{
    if ((unsigned)err >= BSC_ERR_COUNT)
        return "unknown error";
    return err_names[err];
}
