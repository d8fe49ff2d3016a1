/* SPDX-License-Identifier: MIT */
/* anthropic_down.h -- private to api/: the downstream dialect of POST /v1/messages
 * (anthropic_down.c) turns the router's OpenAI answer, stream and errors into Anthropic's
 * shapes. See docs/internals/anthropic-inbound.md. */
#ifndef BSC_API_ANTHROPIC_DOWN_H
#define BSC_API_ANTHROPIC_DOWN_H

#include "router/downstream.h"

extern const struct down_ops api_anthropic_down;

#endif
