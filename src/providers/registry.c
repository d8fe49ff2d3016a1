/* SPDX-License-Identifier: MIT */
/* registry.c -- provider kind -> adapter. */
#include "providers/provider.h"

extern const struct prov_ops prov_openai;
extern const struct prov_ops prov_anthropic;

const struct prov_ops *prov_ops_for(enum cfg_provider_kind kind)
{
    switch (kind) {
    case CFG_PROV_OPENAI:
    case CFG_PROV_OPENAI_COMPATIBLE:
        return &prov_openai;
    case CFG_PROV_ANTHROPIC: return &prov_anthropic;
    default:
        return &prov_openai; /* adapters of the other kinds register here */
    }
}
