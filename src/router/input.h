/* SPDX-License-Identifier: MIT */
/* input.h -- input.c's functions: the canonical request as a parse tree, parsed from the
 * client's bytes on first use (the OpenAI fast path never needs it), and the parameters
 * the request sets. Router-private. */
#ifndef BSC_ROUTER_INPUT_H
#define BSC_ROUTER_INPUT_H

#include <json-c/json.h>

#include "policy/params.h"

struct request;

/* The canonical request as a parse tree; NULL only when out of memory. */
struct json_object *req__json(struct request *r);
/* The parameters the request sets, read from the tree or the raw body on first use. */
const struct req_params *req__params(struct request *r);

#endif
