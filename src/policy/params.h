/* SPDX-License-Identifier: MIT */
/* params.h -- the request parameters a target may be unable to honour (the PROV_PARAMS of
 * providers/provider.h): which ones a request sets, read from its values decoded as every
 * parser reads them, and which of those a target's adapter declares it cannot honour. The
 * router makes such a target ineligible, as for a missing capability; when none is left
 * the client gets a 400 naming the parameter. Pure: no I/O. */
#ifndef BSC_POLICY_PARAMS_H
#define BSC_POLICY_PARAMS_H

#include <stdint.h>

#include <json-c/json.h>

#include "core/str.h"
#include "providers/provider.h"

/* The parameters one request sets. */
struct req_params {
    uint32_t used;   /* PROV_P bits, PROV_PARAM_N aside */
    uint64_t n;      /* choices asked for: 1 when absent or null, UINT64_MAX when `n` is
                        not a positive integer (no adapter with a limit may take it) */
};

/* Reads the parameters of the OpenAI chat request <req> (a parse tree). */
void params_of_json(struct json_object *req, struct req_params *out);

/* The same from the raw OpenAI body <body> (validated JSON, names already checked for
 * repetition): members found with their names decoded, their values read by json-c. */
void params_of_body(struct bsc_str body, struct req_params *out);

/* The parameters of <p> that <ops> cannot honour (PROV_P bits; PROV_P(N) for too many
 * choices). 0 when it can take the request. */
uint32_t params_unhonoured(const struct req_params *p, const struct prov_ops *ops);

/* The client-facing name of the lowest parameter bit in <bits> ("n", "logprobs"), or NULL
 * when <bits> is 0. */
const char *params_first_name(uint32_t bits);

#endif
