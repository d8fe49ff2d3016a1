/* SPDX-License-Identifier: MIT */
/* resp_owner.c -- the records of resp_owner.h: the upstream id of a delivered pass-through
 * Responses answer (the body's "id", or the stream's response.completed as the adapter
 * read it) kept under a key holding the caller's credential scope. Not the gateway's own
 * kept turns of translated routes (api/responses_down.c). */
#include <stdio.h>
#include <string.h>

#include "core/json_scan.h"
#include "core/log.h"
#include "providers/provider.h"
#include "router/gateway.h"
#include "router/internal.h"
#include "router/resp_owner.h"
#include "store/store.h"

struct bsc_str resp_owner_key(const char *scope, const char *id, char *buf, size_t len)
{
    snprintf(buf, len, "responses-up:%s:%s", scope, id);
    return bsc_str_cstr(buf);
}

/* The "id" of the Response object <body> into <out>; false when it has none we keep. */
static bool body_id(struct bsc_str body, char *out, size_t len)
{
    struct bsc_str v, raw;

    if (bsc_json_member(body, BSC_STR("id"), &v) != 1 || bsc_json_kind_of(v) != BSC_JSON_STRING)
        return false;
    raw = bsc_json_string_raw(v);
    if (!raw.len || raw.len > PROV_ANSWER_ID_MAX || memchr(raw.p, '\\', raw.len))
        return false;
    snprintf(out, len, "%.*s", (int)raw.len, raw.p);
    return true;
}

/* The upstream id of <r>'s delivered answer into <out>; false without one. */
static bool answer_id(const struct request *r, char *out, size_t len)
{
    out[0] = '\0';
    if (r->x.mode == BODY_SSE) {
        if (r->x.prov_st_live && r->x.ops->stream_answer_id)
            r->x.ops->stream_answer_id(r->x.prov_st, out, len);
        return out[0] != '\0';
    }
    return body_id(r->x.answer.len ? bsc_buf_str(&r->x.answer) : bsc_buf_str(&r->x.resp), out, len);
}

static void on_noted(enum bsc_err err, void *ud)
{
    (void)ud;
    if (err)
        bsc_log(BSC_LOG_WARN, "responses: an upstream response's owner could not be kept: %s",
                bsc_err_str(err));
}

void resp_owner_note(struct request *r)
{
    char id[PROV_ANSWER_ID_MAX + 1], key[STORE_BLOB_KEY_MAX + 1];
    uint64_t ttl_ms = (uint64_t)r->cfg->responses.ttl_s * 1000;
    enum bsc_err err;

    if (r->input.op != PROV_OP_RESPONSES || !r->gw->store || !ttl_ms ||
        !answer_id(r, id, sizeof(id)))
        return;
    err = store_blob_put(r->gw->store, &r->w->loop,
                         resp_owner_key(r->ident.client_scope, id, key, sizeof(key)),
                         bsc_str_cstr(r->ident.client_scope), ttl_ms, on_noted, NULL);
    if (err)
        on_noted(err, NULL);
}
