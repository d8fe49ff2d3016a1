/* SPDX-License-Identifier: MIT */
/* json_check_ref.h -- the reference request checks (token by token) that the differential
 * fuzz target and unit tests compare src/core/json_check.c with; see json_check_ref.c. Same
 * contracts as bsc_json_check, bsc_json_check_members and bsc_json_check_request. */
#ifndef BSC_TESTS_JSON_CHECK_REF_H
#define BSC_TESTS_JSON_CHECK_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/json_check.h"

bool json_check_ref(struct bsc_str doc, unsigned max_depth, struct bsc_json_error *err);
int json_check_ref_members(struct bsc_str doc, unsigned max_depth, const struct bsc_str *keys,
                           size_t n_keys, struct bsc_str *vals, struct bsc_json_error *err);
enum bsc_json_verdict json_check_ref_request(struct bsc_str doc, unsigned max_depth,
                                             const struct bsc_str *keys, size_t n_keys,
                                             uint32_t objects, struct bsc_str *vals,
                                             struct bsc_json_error *err);

#endif
