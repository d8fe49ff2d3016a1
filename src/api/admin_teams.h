/* SPDX-License-Identifier: MIT */
/* admin_teams.h -- /admin/teams[/{id}] (admin_teams.c). */
#ifndef BSC_API_ADMIN_TEAMS_H
#define BSC_API_ADMIN_TEAMS_H

#include <stdbool.h>

#include "core/str.h"

struct worker;
struct srv_req;
struct cfg;

/* /admin/teams[/{id}] (<rest> is the path after /admin/; the role already checked). False
 * when nothing answered. */
bool api__admin_teams(struct worker *w, struct srv_req *req, struct cfg *cfg,
                      struct bsc_str rest, const char *admin);

#endif
