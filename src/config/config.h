/* SPDX-License-Identifier: MIT */
/* config.h -- the validated, immutable, refcounted configuration snapshot (docs/configuration.md).
 * cfg_load() turns one YAML file into a struct cfg or into a list of errors, each with
 * file:line:column. A snapshot never changes after load: a reload builds a new one and
 * swaps the pointer (cfg_current_swap); each request holds a ref to the one it began
 * with. Lookups by id are linear over small arrays; routes are few.
 *
 * The public header of src/config/ for the rest of src/: it declares nothing itself. The
 * types are in config/types.h, each function in the header of the file defining it; no file
 * of src/config/ includes this one (scripts/check-layering, docs/internals/config.md). */
#ifndef BSC_CONFIG_CONFIG_H
#define BSC_CONFIG_CONFIG_H

#include "config/types.h"  /* every type: struct cfg and what it owns, the diagnostics */
#include "config/inline.h" /* cfg_open, cfg_per_key, cfg_profile_name */

#include "config/admin_keys.h" /* cfg_admin_role_of */
#include "config/clients.h"    /* cfg_client_by_key, cfg_client_find, cfg_team_find, ... */
#include "config/diag.h"       /* cfg_diags_print, cfg_diags_cleanup */
#include "config/keyring.h"    /* cfg_keyring_merge */
#include "config/kinds.h"      /* cfg_provider_kind_name */
#include "config/load.h"       /* cfg_load, cfg_load_string */
#include "config/lookup.h"     /* cfg_route_find, cfg_target_find, cfg_provider_find */
#include "config/snapshot.h"   /* cfg_ref, cfg_unref, cfg_current_get/swap */
#include "config/validate.h"   /* cfg_balance_name */

#endif
