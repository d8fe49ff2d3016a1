/* SPDX-License-Identifier: MIT */
/* registry.c -- provider kind -> adapter; a target -> the dialect it speaks. */
#include "providers/provider.h"

extern const struct prov_ops prov_openai;
extern const struct prov_ops prov_dashscope;
extern const struct prov_ops prov_azure;
extern const struct prov_ops prov_anthropic;
extern const struct prov_ops prov_gemini;
extern const struct prov_ops prov_bedrock;
extern const struct prov_ops prov_vertex;

const struct prov_ops *prov_ops_for(enum cfg_provider_kind kind)
{
    switch (kind) {
    case CFG_PROV_OPENAI:
    case CFG_PROV_OPENAI_COMPATIBLE:
        return &prov_openai;
    case CFG_PROV_ANTHROPIC: return &prov_anthropic;
    case CFG_PROV_GEMINI: return &prov_gemini;
    case CFG_PROV_DASHSCOPE: return &prov_dashscope;
    case CFG_PROV_AZURE: return &prov_azure;
    case CFG_PROV_BEDROCK: return &prov_bedrock;
    case CFG_PROV_VERTEX: return &prov_vertex;
    default:
        return &prov_openai; /* adapters of the other kinds register here */
    }
}

enum cfg_provider_kind prov_target_dialect(const struct cfg_target *t)
{
    const struct prov_ops *ops = prov_ops_for(t->provider->kind);

    return ops->dialect ? ops->dialect(t) : t->provider->kind;
}
