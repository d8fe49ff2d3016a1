/* SPDX-License-Identifier: MIT */
/* admin_keys.h -- /admin/keys... and GET /admin/audit, and the admin writes of the keyring
 * that keys and teams share (admin_keys.c). */
#ifndef BSC_API_ADMIN_KEYS_H
#define BSC_API_ADMIN_KEYS_H

#include <stdbool.h>

#include <json-c/json.h>

#include "core/str.h"

struct worker;
struct srv_req;
struct cfg;

/* /admin/keys... and GET /admin/audit (<admin> names the operator key for the audit trail;
 * the role already checked). False when <rest> is neither; /admin/teams is admin.c's to
 * send to admin_teams.h. */
bool api__admin_keys(struct worker *w, struct srv_req *req, struct cfg *cfg,
                     struct bsc_str rest, const char *admin);

/* Shared by the admin writes of the keyring (keys, teams). */
struct json_object *api__admin_body(struct srv_req *req, bool may_be_empty);
bool api__routes_ok(const struct cfg *cfg, struct json_object *v);
bool api__limit_ok(struct json_object *v);
struct json_object *api__budget_norm(struct json_object *v);
struct json_object *api__budgets_norm(const struct cfg *cfg, struct json_object *v);
/* The fields keys and teams share (routes, rpm, tpm, max_concurrency, budget, budgets,
 * metadata): <name>'s value <v> checked and copied onto <out>. 1 applied, 0 not one of them,
 * -1 refused (*<why> says why). */
int api__apply_grant_field(const struct cfg *cfg, const char *name, struct json_object *v,
                           struct json_object *out, const char **why);
void api__keyring_unsynced(struct srv_req *req);
/* A deep copy of <v> (NULL stays NULL): what goes into or comes out of the keyring never
 * shares a json-c object with anything else. json-c's reference counts and the text it
 * caches on an object are not guarded: an answer or a request body that shared a child with
 * the keyring would touch it outside the keyring's lock, from another thread. */
struct json_object *api__json_copy(struct json_object *v);
/* With the keyring locked and changed (<saved>: the document before, taken): commits the
 * change with <audit> (taken), unlocks, rebuilds the snapshot and answers <status> with
 * <answer> (taken) once the store has it. */
void api__keyring_commit(struct worker *w, struct srv_req *req, struct json_object *saved,
                         struct json_object *audit, int status, struct json_object *answer,
                         const char *detail);

#endif
