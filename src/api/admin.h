/* SPDX-License-Identifier: MIT */
/* admin.h -- the admin API's entry (admin.c): the operator key and role, then the surface. */
#ifndef BSC_API_ADMIN_H
#define BSC_API_ADMIN_H

#include "core/str.h"

struct worker;
struct srv_req;

/* <rest> is the path after "/admin/". */
void api__admin(struct worker *w, struct srv_req *req, struct bsc_str rest);

#endif
