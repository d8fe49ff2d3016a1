/* SPDX-License-Identifier: MIT */
/* models.h -- GET /v1/models[/{id}] (models.c). */
#ifndef BSC_API_MODELS_H
#define BSC_API_MODELS_H

#include "core/str.h"

struct worker;
struct srv_req;

/* <id> is the path after /v1/models/ (empty: the list). */
void api__models(struct worker *w, struct srv_req *req, struct bsc_str id);

#endif
