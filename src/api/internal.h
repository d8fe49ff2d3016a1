/* SPDX-License-Identifier: MIT */
/* internal.h -- handlers shared inside api/ only. */
#ifndef BSC_API_INTERNAL_H
#define BSC_API_INTERNAL_H

#include <stdint.h>

#include <json-c/json.h>

#include "core/buf.h"

#include "router/worker.h"
#include "server/server.h"

void api__chat_completions(struct worker *w, struct srv_req *req);
void api__anthropic_messages(struct worker *w, struct srv_req *req);
void api__models(struct worker *w, struct srv_req *req, struct bsc_str id);
void api__health_live(struct worker *w, struct srv_req *req);
void api__health_ready(struct worker *w, struct srv_req *req);
void api__metrics(struct worker *w, struct srv_req *req);
void api__embeddings(struct worker *w, struct srv_req *req);
/* Parses a JSON request body strictly (UTF-8 checked, depth-bounded, nothing after it).
 * Returns a new object, or NULL with a client-facing message in <msg>. */
struct json_object *api__parse_json(struct bsc_str body, char *msg, size_t msglen);
/* Appends the live state of <t> as a JSON object (admin API, status page). */
void api__put_target(struct bsc_buf *b, struct worker *w, const struct cfg_target *t,
                     uint64_t now);
void api__status_page(struct worker *w, struct srv_req *req);
void api__status_json(struct worker *w, struct srv_req *req);
/* <rest> is the path after "/admin/". */
void api__admin(struct worker *w, struct srv_req *req, struct bsc_str rest);
/* GET|PUT /v1/ledger/{<op_id>}: the tool side-effect ledger (api/ledger.c). */
void api__ledger(struct worker *w, struct srv_req *req, struct bsc_str op_id);
/* Answers 400 with an OpenAI-shaped error; <param> may be NULL. */
void api__bad_request(struct srv_req *req, const char *code, const char *param,
                      const char *message);

#endif
