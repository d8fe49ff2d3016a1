/* SPDX-License-Identifier: MIT */
/* kinds.c -- the names of the provider kinds: the `kind` field's table and the name of a kind
 * for messages, apart from validate.c so that the files naming a kind depend on no load. */

#include "config/kinds.h"

#define KIND_NAMES \
    "openai", "anthropic", "gemini", "dashscope", "azure", "openai_compatible", "bedrock", "vertex"

const char *const cfg__kind_names[] = {KIND_NAMES};
/* kinds.h declares the table with CFG_PROV_COUNT entries, so a shorter list would be padded
 * with NULLs: count the list itself. */
_Static_assert(sizeof((const char *const[]){KIND_NAMES}) / sizeof(const char *) == CFG_PROV_COUNT,
               "one name per enum cfg_provider_kind");

const char *cfg_provider_kind_name(enum cfg_provider_kind kind)
{
    return (unsigned)kind < CFG_PROV_COUNT ? cfg__kind_names[kind] : "?";
}
