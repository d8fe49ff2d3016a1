/* SPDX-License-Identifier: MIT */
/* dialect.c -- what every dialect shares: the dialect table the router walks, and the
 * neutral call's settle/cleanup helpers. See docs/internals/sim.md. */
#include "dialect.h"

#include <stdarg.h>

#include "content.h"

#include "core/compat.h"

extern const struct sim_dialect sim_dialect_anthropic; /* dialect_anthropic.c */
extern const struct sim_dialect sim_dialect_dashscope; /* dialect_dashscope.c */
extern const struct sim_dialect sim_dialect_azure;     /* dialect_azure.c */
extern const struct sim_dialect sim_dialect_gemini;    /* dialect_gemini.c */
extern const struct sim_dialect sim_dialect_bedrock;   /* dialect_bedrock.c */
extern const struct sim_dialect sim_dialect_vertex;    /* dialect_vertex.c */

/* Walked in order; the first dialect that claims a path serves it. */
static const struct sim_dialect *const dialects[] = {
    &sim_dialect_openai,
    &sim_dialect_anthropic,
    &sim_dialect_dashscope,
    &sim_dialect_azure,
    &sim_dialect_gemini,
    &sim_dialect_bedrock,
    &sim_dialect_vertex,
};

const struct sim_dialect *sim_dialect_route(struct bsc_str method, struct bsc_str path,
                                            enum sim_ep *ep)
{
    for (size_t i = 0; i < BSC_ARRAY_LEN(dialects); i++) {
        enum sim_ep e = dialects[i]->route(method, path);
        if (e != SIM_EP_NONE) {
            *ep = e;
            return dialects[i];
        }
    }
    *ep = SIM_EP_NONE;
    return NULL;
}

void sim_call_settle(struct sim_call *call, uint32_t spec_tokens, uint64_t seq,
                     uint64_t created)
{
    uint32_t n = spec_tokens ? spec_tokens : SIM_TOKENS_DEFAULT;

    call->finish_length = call->max_tokens && call->max_tokens < n;
    call->n_tokens = call->finish_length ? call->max_tokens : n;
    call->seq = seq;
    call->created = created;
}

void sim_call_json_content(struct sim_call *call)
{
    if (call->ep != SIM_EP_CHAT || call->tool_name || call->content.p || !call->json_answer)
        return;
    call->content = bsc_str_cstr(call->json_answer);
    call->n_tokens = sim_content_pieces(call->content);
    call->finish_length = false;
}

void sim_call_cleanup(struct sim_call *call)
{
    BSC_FREE(call->model);
    BSC_FREE(call->tool_name);
    BSC_FREE(call->tool_args);
    BSC_FREE(call->json_answer);
    BSC_FREE(call->prefill);
    BSC_FREE(call->prefill_rest);
    call->content = BSC_STR_NULL; /* it may have borrowed <json_answer> */
    for (size_t i = 0; i < call->n_inputs; i++)
        BSC_FREE(call->inputs[i]);
    BSC_FREE(call->inputs);
    call->n_inputs = 0;
}

void sim_reject_set(struct sim_reject *rej, int status, const char *type, const char *code,
                    const char *fmt, ...)
{
    va_list ap;

    rej->status = status;
    rej->type = type;
    rej->code = code;
    va_start(ap, fmt);
    vsnprintf(rej->message, sizeof(rej->message), fmt, ap);
    va_end(ap);
}
