/* SPDX-License-Identifier: MIT */
/* console.h -- GET /console: the operator console page (console.c). */
#ifndef BSC_API_CONSOLE_H
#define BSC_API_CONSOLE_H

struct worker;
struct srv_req;

void api__console_page(struct worker *w, struct srv_req *req);

#endif
