/* SPDX-License-Identifier: MIT */
/* feedback.h -- POST /v1/feedback: a task verdict on an answered request (feedback.c). */
#ifndef BSC_API_FEEDBACK_H
#define BSC_API_FEEDBACK_H

struct worker;
struct srv_req;

void api__feedback(struct worker *w, struct srv_req *req);

#endif
