/* SPDX-License-Identifier: MIT */
/* inspect.h -- what the router needs to know of a request, found in its body (inspect.c). */
#ifndef BSC_API_INSPECT_H
#define BSC_API_INSPECT_H

#include <stdbool.h>

#include "core/str.h"

/* The OpenAI-shaped members of a chat body its reader already found (api__chat_read). */
struct api_scan {
    struct bsc_str messages, tools, response_format, max_tokens, max_completion_tokens;
    bool no_images; /* the messages were seen not to spell "image_url": no image scan */
};

struct chat_in;
/* Fills what the router needs to know of <in>'s request (need_caps, has_tools, est_tokens,
 * est_out_tokens, scan_body, messages) from in->body with <spans> (NULL: found here), or
 * from in->json serialised when in->body is empty. Call it last before req_chat_start:
 * the serialised text belongs to in->json. in->op and in->stream must be set. */
void api__inspect(struct chat_in *in, const struct api_scan *spans);

#endif
