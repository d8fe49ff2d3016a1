/* SPDX-License-Identifier: MIT */
/* json_parse.h -- a whole text as one JSON value with json-c, strictly: the one way the
 * gateway turns untrusted bytes (a client's Anthropic request, an upstream answer, a
 * ledger record) into a json-c tree. */
#ifndef BSC_CORE_JSON_PARSE_H
#define BSC_CORE_JSON_PARSE_H

#include <json-c/json.h>

#include "core/str.h"

/* Parses <s> as one JSON value (strict mode, at most <depth> levels of nesting) followed
 * by nothing but whitespace. Returns a new reference, or NULL: malformed, something after
 * the value, too deep, longer than json-c can take, or out of memory. */
struct json_object *bsc_json_parse_whole(struct bsc_str s, int depth);

#endif
