/* SPDX-License-Identifier: MIT */
/* internal.h -- handlers shared inside api/ only. */
#ifndef BSC_API_INTERNAL_H
#define BSC_API_INTERNAL_H

#include "router/worker.h"
#include "server/server.h"

void api__chat_completions(struct worker *w, struct srv_req *req);
void api__models(struct worker *w, struct srv_req *req, struct bsc_str id);
void api__health_live(struct worker *w, struct srv_req *req);
void api__health_ready(struct worker *w, struct srv_req *req);
void api__metrics(struct worker *w, struct srv_req *req);
/* <rest> is the path after "/admin/". */
void api__admin(struct worker *w, struct srv_req *req, struct bsc_str rest);
/* Answers 400 with an OpenAI-shaped error; <param> may be NULL. */
void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message);

#endif
