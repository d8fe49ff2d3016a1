/* SPDX-License-Identifier: MIT */
/* req_balance.h -- balance: score's state for the request (types only; feedback.c).
 * Router-private. */
#ifndef BSC_ROUTER_REQ_BALANCE_H
#define BSC_ROUTER_REQ_BALANCE_H

struct req_balance {
    char ranking[160]; /* score's order for the next attempt, or "" */
};

#endif
