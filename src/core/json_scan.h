/* SPDX-License-Identifier: MIT */
/* json_scan.h -- byte-level helpers for JSON that was already validated: find the raw
 * span of a top-level member's value so the fast path can rewrite "model" by splicing
 * bytes instead of re-serializing the document. */
#ifndef BSC_CORE_JSON_SCAN_H
#define BSC_CORE_JSON_SCAN_H

#include <stdbool.h>

#include "core/str.h"

/* Finds the value of member <key> of the top-level object in <doc> and sets *<value> to its raw bytes (quotes included for strings). Returns
 * false when <doc> is not an object, has no such member, or has it more than once
 * (parsers disagree on which duplicate wins, so the gateway refuses to guess). Keys with escapes are
 * compared in their raw form. Bounded by <doc>; never reads past it. */
bool bsc_json_member_span(struct bsc_str doc, struct bsc_str key, struct bsc_str *value);

#endif
