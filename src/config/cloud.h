/* SPDX-License-Identifier: MIT */
/* cloud.h -- the provider kinds bedrock and vertex at load (cloud.c): default base_url,
 * credentials, an AWS shared credentials file. */
#ifndef BSC_CONFIG_CLOUD_H
#define BSC_CONFIG_CLOUD_H

#include <stdbool.h>

#include "config/internal.h"
#include "config/types.h"
#include "core/str.h"

bool cfg__is_cloud_kind(enum cfg_provider_kind k);
/* Resolves what <p> leaves to the load (default base_url, credentials; reports what is
 * missing) and, for every other kind, that base_url is set. */
void cfg__resolve_cloud(struct cfg__v *v, struct cfg_provider *p, const struct cfg__prov_src *src,
                        const char *where);
/* Reads the keys of [<profile>] of an AWS shared credentials file's text <s> into <aws>
 * (only those it lacks). */
void cfg__aws_ini_read(struct cfg__v *v, struct bsc_str s, const char *profile,
                       struct cfg_aws *aws);
/* True when <t> serves a Claude model (its id has "claude") through bedrock or vertex. */
bool cfg__is_cloud_claude(const struct cfg_target *t);

#endif
