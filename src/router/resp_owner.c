/* SPDX-License-Identifier: MIT */
/* resp_owner.c -- the records of resp_owner.h: the upstream id of a delivered pass-through
 * Responses answer (read by xchg_answer_id) kept under a key holding the caller's
 * credential scope. Not the gateway's own kept turns of translated routes
 * (api/responses_down.c). */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "router/resp_owner.h"
#include "store/store.h"

struct bsc_str resp_owner_key(const char *scope, const char *id, char *buf, size_t len)
{
    snprintf(buf, len, "responses-up:%s:%s", scope, id);
    return bsc_str_cstr(buf);
}

static void on_noted(enum bsc_err err, void *ud)
{
    (void)ud;
    if (err)
        bsc_log(BSC_LOG_WARN, "responses: an upstream response's owner could not be kept: %s",
                bsc_err_str(err));
}

void resp_owner_note(struct store *st, uv_loop_t *loop, uint64_t ttl_ms, const char *scope,
                     const char *id)
{
    char key[STORE_BLOB_KEY_MAX + 1];
    enum bsc_err err;

    err = store_blob_put(st, loop, resp_owner_key(scope, id, key, sizeof(key)),
                         bsc_str_cstr(scope), ttl_ms, on_noted, NULL);
    if (err)
        on_noted(err, NULL);
}
