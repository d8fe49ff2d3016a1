/* SPDX-License-Identifier: MIT */
/* route_select.h -- routes that choose a route by the request (route_select.c). */
#ifndef BSC_CONFIG_ROUTE_SELECT_H
#define BSC_CONFIG_ROUTE_SELECT_H

#include <stddef.h>

#include "config/internal.h"

struct cfg_route;

/* Pass 1 of a route whose map has `select`: only `select` may be there; a key of an ordinary
 * route (<route_fields>) is refused as such, any other as unknown. Records the rules' entry in
 * v->cur (a struct cfg__route_src) for cfg__select_resolve. */
void cfg__select_route(struct cfg__v *v, const struct cfg__node *map,
                       const struct cfg__field *route_fields, size_t n_route_fields,
                       const char *where);
/* Pass 2, for every select route: decodes its rules (conditions, patterns compiled) and
 * resolves the routes they name, refusing unknown routes, select routes (no chains) and
 * unreachable rules. */
void cfg__select_resolve(struct cfg__v *v);
/* Frees the rules of <r>. */
void cfg__select_cleanup(struct cfg_route *r);

#endif
