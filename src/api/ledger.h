/* SPDX-License-Identifier: MIT */
/* ledger.h -- GET|PUT /v1/ledger/{op_id}: the tool side-effect ledger (ledger.c). */
#ifndef BSC_API_LEDGER_H
#define BSC_API_LEDGER_H

#include "core/str.h"

struct worker;
struct srv_req;

/* <op_id> is the path after /v1/ledger/. */
void api__ledger(struct worker *w, struct srv_req *req, struct bsc_str op_id);

#endif
