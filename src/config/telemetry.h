/* SPDX-License-Identifier: MIT */
/* telemetry.h -- the `telemetry:` map (telemetry.c): its table, its defaults, and what it
 * owns freed. */
#ifndef BSC_CONFIG_TELEMETRY_H
#define BSC_CONFIG_TELEMETRY_H

#include <stdbool.h>

#include "config/internal.h"

struct cfg_telemetry;

#define CFG__N_TELEMETRY_FIELDS 4
extern const struct cfg__field cfg__telemetry_fields[CFG__N_TELEMETRY_FIELDS];
bool cfg__telemetry_defaults(struct cfg_telemetry *t);
void cfg__telemetry_cleanup(struct cfg_telemetry *t);

#endif
