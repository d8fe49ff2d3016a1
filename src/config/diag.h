/* SPDX-License-Identifier: MIT */
/* diag.h -- the diagnostic sink of one load (diag.c): problems collected, sorted, and the
 * closest known word for "did you mean". */
#ifndef BSC_CONFIG_DIAG_H
#define BSC_CONFIG_DIAG_H

#include <stdbool.h>
#include <stddef.h>

#include "config/internal.h"
#include "config/types.h"
#include "core/compat.h"

/* Cannot fail. */
void cfg__sink_init(struct cfg__sink *s, struct cfg_diags *out, const char *file);
/* Appends one problem at <line>:<column> (1-based; 0 = no place). Never fails: on ENOMEM it
 * sets s->oom, and an error is still counted so the load cannot succeed. */
void cfg__diag(struct cfg__sink *s, bool warning, unsigned line, unsigned column,
               const char *fmt, ...) BSC_PRINTF(5, 6);
/* Sorts this load's diagnostics by position (stable; unplaced ones first). */
void cfg__sink_finish(struct cfg__sink *s);

/* Returns the candidate closest to <word> by edit distance when it is close enough to be a
 * likely typo, else NULL. The result is one of <cands>. */
const char *cfg__closest(const char *word, const char *const *cands, size_t n);

/* Formats each diagnostic as "file:line:column: error: message" on its own line to <f>. */
void cfg_diags_print(const struct cfg_diags *diags, void *file /* FILE * */);
void cfg_diags_cleanup(struct cfg_diags *diags);

#endif
