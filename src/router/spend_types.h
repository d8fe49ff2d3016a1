/* SPDX-License-Identifier: MIT */
/* spend_types.h -- struct spend_req, struct request's member <spend> (spend.c writes it),
 * and the records it embeds; types only: the functions are in spend.h. Router-private. */
#ifndef BSC_ROUTER_SPEND_TYPES_H
#define BSC_ROUTER_SPEND_TYPES_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

struct spend_entry;

/* A store call on a book entry with a shared store: which answer is newer, and what this
 * process added after the call, so the answer can refresh the book (spend.c). */
struct spend_mark {
    uint64_t period_ms, gen, seq;
    double sent_at; /* the entry's <sent> once the call was made */
};

/* The budgets one request is judged against, in order: its client's, its team's, then
 * each `budgets` entry of either that applies to its route (router/spend.c lines_of). */
#define SPEND_LINES_MAX (2 + 2 * CFG_BUDGETS_MAX)

/* A request's hold on one of those budgets: its estimate reserved until DONE. */
struct spend_hold_on {
    double usd;         /* > 0: held, given back by spend_release */
    uint64_t period_ms; /* the period it is held in */
    bool stored;        /* a shared store: added to the fleet's record too */
};

/* What one request keeps of the budget check (struct request's <spend>). The lines are
 * judged one after the other; the fields up to <hold_total> are the current line's. */
struct spend_req {
    bool counted;        /* counted in its client's in-flight number: released at DONE */
    unsigned line;       /* the line ADMIT judges now: those before it passed and hold */
    bool reading;        /* a store read of the spend is running */
    bool read_done;      /* ... and answered: <read_usd> (< 0: the store failed) */
    uint64_t loader_gen; /* non-zero: this read (re)loads the book's entry <load> */
    struct spend_entry *load;
    double read_usd;
    struct spend_entry *entry; /* shared store: the entry the read is for */
    struct spend_mark mark;    /* ... and the read's place among the entry's calls */
    bool holding;              /* a shared store: ADMIT waits for the hold's add */
    bool hold_done;            /* ... answered: <hold_total> (< 0: the store failed) */
    double hold_total;
    struct spend_hold_on holds[SPEND_LINES_MAX]; /* per line (spend_hold.h) */
};

#endif
