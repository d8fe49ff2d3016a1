/* SPDX-License-Identifier: MIT */
/* resp_owner.h -- whose a Responses answer passed through from an OpenAI-kind upstream is.
 * Every client reaches the upstream with the gateway's own key, so the upstream would
 * continue any stored response for anyone who names it: the gateway records which
 * credential scope each upstream response id was returned to, and api/responses.c refuses
 * another scope's previous_response_id before anything is sent. See
 * docs/internals/responses.md §7. */
#ifndef BSC_ROUTER_RESP_OWNER_H
#define BSC_ROUTER_RESP_OWNER_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "core/str.h"

struct store;

/* The store key saying that upstream response <id> was returned to <scope>
 * ("responses-up:<scope>:<id>", written into <buf> of <len> bytes). A key holds the scope,
 * so another scope's lookup of the same id finds nothing. */
struct bsc_str resp_owner_key(const char *scope, const char *id, char *buf, size_t len);

/* Records that upstream response <id> (of a delivered pass-through Responses answer) was
 * returned to <scope>, for <ttl_ms>. Called before the answer's last bytes go out: the
 * store runs jobs in order, so a next turn sent the moment the client has the answer finds
 * it. A failure is logged and costs only that next turn (refused as not found). Never
 * calls back. */
void resp_owner_note(struct store *st, uv_loop_t *loop, uint64_t ttl_ms, const char *scope,
                     const char *id);

#endif
