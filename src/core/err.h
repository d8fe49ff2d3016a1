/* SPDX-License-Identifier: MIT */
/* err.h -- the one error enum every fallible function of ours returns (BSC_OK = 0).
 * Upstream failures are not these: they are classified into enum fail_kind by the
 * provider adapters (fail/taxonomy.h). */
#ifndef BSC_CORE_ERR_H
#define BSC_CORE_ERR_H

enum bsc_err {
    BSC_OK = 0,
    BSC_ENOMEM,    /* allocation failed */
    BSC_EINVAL,    /* bad argument or malformed input */
    BSC_ELIMIT,    /* a configured bound would be passed */
    BSC_EIO,       /* socket or file error */
    BSC_ETIMEDOUT, /* a deadline passed */
    BSC_ENOTFOUND, /* no such object */
    BSC_EPARSE,    /* input could not be parsed */
    BSC_ECANCELED, /* the operation was cancelled */
    BSC_EEXIST,    /* the object already exists */
    BSC_ESTATE,    /* not allowed in the object's current state */
    BSC_ERR_COUNT
};

/* Returns a static, human-readable name for <err>; never NULL. */
const char *bsc_err_str(enum bsc_err err);

#endif
