/* SPDX-License-Identifier: MIT */
/* spend.c -- client budgets. The book holds, per client, the spend of its current UTC
 * period and its requests in flight, under one mutex shared by every worker, so ADMIT
 * reads memory, not SQLite. The store is read when the book has no figure for the period
 * (first request after start, a new period, a reload that changed the period): that
 * request waits for the read; a request meeting a load already running reads too and
 * decides on its own figure. Every cost is added to the book and to the store (an atomic
 * add, not awaited). The store runs operations in call order and adds are called under the
 * book's mutex, so a load sees every add called before it and the book adds those after.
 * Each admitted request holds its estimate (spend_hold.c) until its cost replaces it and
 * DONE gives back the rest, and is admitted only while spend + holds is under the budget:
 * the requests in flight pass it by at most one estimate. With a shared store (Redis)
 * other processes add too: every answer of the store (the total an add returns, a read)
 * refreshes the book, and a figure older than SPEND_FRESH_MS is read again before a
 * check; a hold is an add to the fleet's record, and the record before it decides
 * (docs/internals/redis.md, docs/internals/spend.md "Holds"). */
#include "router/req_error.h"
#include "router/req_wake.h"
#include "router/spend.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/log.h"
#include "router/gateway.h"
#include "router/guard.h"
#include "router/internal.h"
#include "router/spend_hold.h"

#define BOOK_BUCKETS 1024u
#define MS_PER_DAY 86400000ull

enum entry_state { ENTRY_NONE = 0, ENTRY_LOADING, ENTRY_READY };

struct spend_entry {
    struct spend_entry *next;
    char id[CFG_SPEND_ID_MAX + 1];
    enum cfg_period kind;   /* the period kind <period_ms> is of */
    uint64_t period_ms;
    enum entry_state st;
    double usd;             /* READY: the period's spend */
    double pending;         /* LOADING: added since the load was called */
    uint64_t gen;           /* the load that may fill the entry */
    uint32_t inflight;
    uint64_t last_used_ms;  /* wall time of the last request judged on it (0: none yet) */
    double held;            /* the holds of this process's requests in flight, this period */
    /* a shared store only: the store's answers refresh <usd> (entry_apply) */
    uint64_t seq;           /* store calls made on the entry */
    uint64_t applied;       /* the <seq> of the last answer applied */
    uint64_t refresh_seq;   /* non-zero: the refresh read running */
    double sent;            /* this process's adds, ever */
    uint64_t fresh_ms;      /* bsc_now_ms() the figure last came from the store */
};

struct spend_book {
    uv_mutex_t mu;
    struct spend_entry *b[BOOK_BUCKETS];
};

/* ---- periods (pure) ------------------------------------------------------------------- */

/* Days since 1970-01-01 of the civil date y-m-d (H. Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
    int64_t era;
    unsigned yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = (unsigned)(y - era * 400);
    doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

/* The civil year and month of day <z> since the epoch (civil_from_days). */
static void civil_month(int64_t z, int64_t *y, unsigned *m)
{
    int64_t era;
    unsigned doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (unsigned)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

uint64_t spend_period_start(enum cfg_period p, uint64_t now_ms)
{
    int64_t y;
    unsigned m;

    switch (p) {
    case CFG_PERIOD_DAY: return now_ms / MS_PER_DAY * MS_PER_DAY;
    case CFG_PERIOD_MONTH:
        civil_month((int64_t)(now_ms / MS_PER_DAY), &y, &m);
        return (uint64_t)days_from_civil(y, m, 1) * MS_PER_DAY;
    default: return 0;
    }
}

uint64_t spend_period_ttl_ms(enum cfg_period p)
{
    switch (p) {
    case CFG_PERIOD_DAY: return 2 * MS_PER_DAY;
    case CFG_PERIOD_MONTH: return 32 * MS_PER_DAY;
    default: return 0;
    }
}

/* ---- the book --------------------------------------------------------------------------- */

struct spend_book *spend_book_new(void)
{
    struct spend_book *b = calloc(1, sizeof(*b));

    if (b && uv_mutex_init(&b->mu) != 0) {
        free(b);
        return NULL;
    }
    return b;
}

void spend_book_free(struct spend_book *b)
{
    if (!b)
        return;
    for (size_t i = 0; i < BOOK_BUCKETS; i++) {
        struct spend_entry *e = b->b[i], *next;

        for (; e; e = next) {
            next = e->next;
            free(e);
        }
    }
    uv_mutex_destroy(&b->mu);
    free(b);
}

static size_t bucket_of(const char *id)
{
    uint32_t h = 2166136261u; /* FNV-1a */

    for (; *id; id++)
        h = (h ^ (unsigned char)*id) * 16777619u;
    return h % BOOK_BUCKETS;
}

/* The entry of <id>, made when absent (NULL only when out of memory). Under the mutex. */
static struct spend_entry *entry_get(struct spend_book *b, const char *id)
{
    size_t i = bucket_of(id);
    struct spend_entry *e;

    for (e = b->b[i]; e; e = e->next)
        if (strcmp(e->id, id) == 0)
            return e;
    e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    snprintf(e->id, sizeof(e->id), "%s", id);
    e->next = b->b[i];
    b->b[i] = e;
    return e;
}

/* Moves <e> to the period of kind <p> at <now_ms>: a new period is not loaded yet. */
static void entry_roll(struct spend_entry *e, enum cfg_period p, uint64_t now_ms)
{
    uint64_t start = spend_period_start(p, now_ms);

    if (e->kind == p && e->period_ms == start && e->st != ENTRY_NONE)
        return;
    e->kind = p;
    e->period_ms = start;
    e->st = ENTRY_NONE;
    e->usd = e->pending = 0;
    e->held = 0; /* the requests holding in the old period give back nothing here */
    e->refresh_seq = 0;
    e->fresh_ms = 0;
}

/* <usd> into the book's figure of <e> (a load running: into what it adds on arrival). */
static void book_add(struct spend_entry *e, double usd)
{
    if (e->st == ENTRY_READY)
        e->usd += usd;
    else if (e->st == ENTRY_LOADING)
        e->pending += usd;
}

/* ---- a shared store: the fleet's figure -------------------------------------------------- */

static bool is_shared(const struct request *r)
{
    return store_is_shared(r->gw->store);
}

/* Notes a store call on <e> that adds <usd> (0: a read). Under the mutex. */
static struct spend_mark mark_take(struct spend_entry *e, double usd)
{
    e->sent += usd;
    return (struct spend_mark){e->period_ms, e->gen, ++e->seq, e->sent};
}

/* The store answered <total> to the call <m>: the fleet's figure then, plus what this
 * process added after the call. Answers reach the worker loops in any order: an older one
 * than the last applied, one from before a load or a reset (another gen), or for another
 * period changes nothing. Under the mutex. */
static void entry_apply(struct spend_entry *e, const struct spend_mark *m, double total)
{
    if (e->st != ENTRY_READY || e->gen != m->gen || e->period_ms != m->period_ms ||
        m->seq <= e->applied)
        return;
    e->usd = total + (e->sent - m->sent_at);
    e->applied = m->seq;
    e->fresh_ms = bsc_now_ms();
}

void spend_peek(struct spend_book *b, const char *id, enum cfg_period p, uint64_t now_ms,
                struct spend_view *out)
{
    struct spend_entry *e;

    *out = (struct spend_view){0};
    uv_mutex_lock(&b->mu);
    e = entry_get(b, id);
    if (e) {
        entry_roll(e, p, now_ms);
        out->known = e->st == ENTRY_READY;
        out->usd = e->usd;
        out->inflight = e->inflight;
        out->last_used_ms = e->last_used_ms;
    }
    uv_mutex_unlock(&b->mu);
}

static void on_reset_noop(enum bsc_err err, double usd, void *ud)
{
    (void)usd, (void)ud;
    if (err)
        LOG_WARN("spend: a spend record was not stored: %s", bsc_err_str(err));
}

enum bsc_err spend_reset(struct spend_book *b, struct store *st, uv_loop_t *loop,
                         const char *id, enum cfg_period p, uint64_t now_ms,
                         store_spend_cb *cb, void *ud)
{
    struct spend_entry *e;
    enum bsc_err err = BSC_OK;
    double keep = 0;

    uv_mutex_lock(&b->mu);
    e = entry_get(b, id);
    if (e) {
        entry_roll(e, p, now_ms);
        /* A shared record holds the holds of the requests in flight: this process's stay
         * (their release takes them out again); other instances' are lost (spend.md). */
        keep = st && store_is_shared(st) ? e->held : 0;
        e->st = ENTRY_READY;
        e->usd = keep;
        e->pending = 0;
        e->gen++; /* a load still running must not fill it, nor an answer from before */
        e->refresh_seq = 0;
        e->fresh_ms = bsc_now_ms();
    }
    if (st)
        err = store_spend_set(st, loop, bsc_str_cstr(id), spend_period_start(p, now_ms),
                              spend_period_ttl_ms(p), keep, cb ? cb : on_reset_noop, ud);
    uv_mutex_unlock(&b->mu);
    return e ? err : BSC_ENOMEM;
}

/* ---- the request's budgets ------------------------------------------------------------- */

/* One budget a request is judged against (or, usd < 0, only charged to): a spend record. */
struct spend_line {
    char id[CFG_SPEND_ID_MAX + 1];
    char what[CFG_SPEND_ID_MAX + 48]; /* for the refusal: "team 'support'" */
    struct cfg_budget budget;
};

static const char *const period_names[] = {"day", "month", "total"};

static bool line_set(struct spend_line *l, const char *subject, const char *kind,
                     const char *id, const struct cfg_budget_line *bl, const struct cfg_budget *b)
{
    int n;

    if (!bl) {
        n = snprintf(l->id, sizeof(l->id), "%s%s", subject, id);
        snprintf(l->what, sizeof(l->what), "%s '%s'", kind, id);
        l->budget = *b;
    } else {
        const char *route = bl->route ? bl->route->id : "*";

        n = snprintf(l->id, sizeof(l->id), "%s%s@%s/%s", subject, id, route,
                     period_names[bl->budget.period]);
        snprintf(l->what, sizeof(l->what), "%s '%s' on %s%s%s", kind, id,
                 bl->route ? "route '" : "every route", bl->route ? route : "",
                 bl->route ? "'" : "");
        l->budget = bl->budget;
    }
    return n > 0 && (size_t)n < sizeof(l->id);
}

/* <r>'s budgets in the order they are judged: its client's (always: its spend is kept),
 * its team's (always, when it has one), then every `budgets` entry of either whose route is
 * <r>'s or none. The list depends only on the request's snapshot and route, so every call
 * for one request gives the same list. */
static size_t lines_of(const struct request *r, struct spend_line *out)
{
    const struct cfg_client *c = r->ident.client;
    const struct cfg_team *t = c->team;
    size_t n = 0;

    line_set(&out[n++], "", "client", c->id, NULL, &c->budget);
    if (t && line_set(&out[n], "team:", "team", t->id, NULL, &t->budget))
        n++;
    for (size_t i = 0; i < c->n_budgets; i++)
        if ((!c->budgets[i].route || c->budgets[i].route == r->route) &&
            line_set(&out[n], "", "client", c->id, &c->budgets[i], NULL))
            n++;
    for (size_t i = 0; t && i < t->n_budgets; i++)
        if ((!t->budgets[i].route || t->budgets[i].route == r->route) &&
            line_set(&out[n], "team:", "team", t->id, &t->budgets[i], NULL))
            n++;
    return n;
}

/* ---- the request's side ----------------------------------------------------------------- */

/* The store answered a read ADMIT waits for. The request may have ended meanwhile (its
 * client left): guard.c's zombie rule, the last store callback frees it. */
static void on_read(enum bsc_err err, double usd, void *ud)
{
    struct request *r = ud;
    struct spend_book *b = r->gw->spend;
    struct spend_entry *e;

    /* The book takes the figure even when the request is gone (its client left while the
     * read ran): a load left LOADING would make every later request of the period read
     * on its own, and the client's spend would stay unknown. */
    uv_mutex_lock(&b->mu);
    if ((e = r->spend.load) && e->st == ENTRY_LOADING && e->gen == r->spend.loader_gen) {
        e->st = err ? ENTRY_NONE : ENTRY_READY;
        e->usd = err ? 0 : usd + e->pending;
        e->pending = 0;
    }
    if (!err && r->spend.entry)
        entry_apply(r->spend.entry, &r->spend.mark, usd);
    uv_mutex_unlock(&b->mu);
    if (!guard_op_end(r))
        return;
    if (err)
        LOG_WARN("%s: the spend record %s could not be read: %s (admitted)", r->ident.id,
                 r->spend.load ? r->spend.load->id : "-", bsc_err_str(err));
    r->spend.reading = false;
    r->spend.read_done = true;
    r->spend.read_usd = err ? -1.0 : usd;
    if (!r->m.finished)
        req_wake_run(r);
}

/* Starts the store read of <e>'s period (under the mutex: ordered with the adds). */
static int start_read(struct request *r, struct spend_entry *e)
{
    enum bsc_err err;

    r->spend.loader_gen = 0;
    r->spend.load = e;
    if (e->st == ENTRY_NONE) {
        e->st = ENTRY_LOADING;
        e->pending = 0;
        r->spend.loader_gen = ++e->gen;
    }
    if (is_shared(r)) {
        r->spend.entry = e;
        r->spend.mark = mark_take(e, 0);
    }
    err = store_spend_add(r->gw->store, &r->w->loop, bsc_str_cstr(e->id), e->period_ms, 0, 0,
                          on_read, r);
    if (err) {
        if (r->spend.loader_gen)
            e->st = ENTRY_NONE;
        LOG_WARN("%s: the spend record %s could not be read: %s (admitted)", r->ident.id, e->id,
                 bsc_err_str(err));
        return 0;
    }
    guard_op_begin(r);
    r->spend.reading = true;
    return 1;
}

/* The figure to judge by: the book's when it has one, else the request's own read. -1
 * when neither (a read must start). */
static double spent_now(const struct request *r, const struct spend_entry *e)
{
    if (e->st == ENTRY_READY)
        return e->usd;
    if (r->spend.read_done)
        return r->spend.read_usd < 0 ? 0 : r->spend.read_usd;
    return -1;
}

/* A shared store answered the refresh read of a figure gone stale. Unlike a load, the book
 * had a figure: a failed read leaves it, and the request is judged on it. */
static void on_refresh(enum bsc_err err, double usd, void *ud)
{
    struct request *r = ud;
    struct spend_book *b = r->gw->spend;
    struct spend_entry *e = r->spend.entry;

    uv_mutex_lock(&b->mu);
    if (e->refresh_seq == r->spend.mark.seq)
        e->refresh_seq = 0;
    if (!err)
        entry_apply(e, &r->spend.mark, usd);
    uv_mutex_unlock(&b->mu);
    if (!guard_op_end(r))
        return;
    if (err)
        LOG_WARN("%s: the spend record %s could not be read again: %s (judged on this "
                 "process's figure)", r->ident.id, e->id, bsc_err_str(err));
    r->spend.reading = false;
    r->spend.read_done = true;
    r->spend.read_usd = err ? -1.0 : usd;
    if (!r->m.finished)
        req_wake_run(r);
}

/* A shared store's figure older than SPEND_FRESH_MS is read again before the check, by one
 * request at a time (the others judge by the book meanwhile); never while the store is away
 * (the book is all there is then), never twice for one request. */
static bool is_stale(const struct request *r, const struct spend_entry *e)
{
    return is_shared(r) && e->st == ENTRY_READY && !r->spend.read_done && !e->refresh_seq &&
           bsc_now_ms() - e->fresh_ms >= SPEND_FRESH_MS && store_is_up(r->gw->store, NULL);
}

/* Starts that read (under the mutex: ordered with the adds). 1 when the request waits. */
static int start_refresh(struct request *r, struct spend_entry *e)
{
    struct spend_mark m = mark_take(e, 0);

    e->fresh_ms = bsc_now_ms(); /* one try per period, also when this one fails */
    if (store_spend_add(r->gw->store, &r->w->loop, bsc_str_cstr(e->id), e->period_ms, 0, 0,
                        on_refresh, r) != BSC_OK)
        return 0;
    e->refresh_seq = m.seq;
    r->spend.entry = e;
    r->spend.mark = m;
    guard_op_begin(r);
    r->spend.reading = true;
    return 1;
}

static void refuse(struct request *r, const struct spend_line *l, double spent, double held)
{
    const struct cfg_budget *bu = &l->budget;
    char in_flight[96] = "";

    if (held > 0)
        snprintf(in_flight, sizeof(in_flight), " and its requests in flight hold $%.6f",
                 held);
    /* A typed failure, so the body says "retryable": false; waiting a little will not help,
     * the period's end or an operator will (OUTLOOK_NEVER: no Retry-After). */
    req__set_typed_failure(r, "budget_exceeded", OUTLOOK_NEVER, -1,
                           "%s has spent $%.6f of its $%.6f budget for this %s%s; no "
                           "request is sent until %s", l->what, spent, bu->usd,
                           period_names[bu->period], in_flight,
                           bu->period == CFG_PERIOD_TOTAL ? "an operator resets it"
                                                          : "the period ends (UTC)");
    req__set_error_status(r, 429, "rate_limit_error");
    req__set_error_limited_by(r, "budget");
}

/* The check of <r> against <e>, under the mutex: 0 passes, 1 waits for a read, 2 refuses
 * (*<spent> is the figure, *<held> what the requests in flight hold besides). With a shared
 * store the holds are in the figure itself (the fleet's record); else the book has them. */
static int judge(struct request *r, struct spend_entry *e, const struct cfg_budget *bu,
                 double *spent, double *held)
{
    entry_roll(e, bu->period, bsc_wall_ms());
    *spent = spent_now(r, e);
    /* Nothing to load: the book is all there is. A shared store away counts as nothing: its
     * figure is read once it is back (fresh_ms 0 is stale), what was spent meanwhile kept. */
    if (*spent < 0 && (!r->gw->store || (is_shared(r) && !store_is_up(r->gw->store, NULL)))) {
        e->st = ENTRY_READY; /* a load running (LOADING) will not fill it now */
        e->usd += e->pending;
        e->pending = 0;
        *spent = e->usd;
    }
    if (*spent < 0)
        return start_read(r, e);
    if (is_stale(r, e) && start_refresh(r, e))
        return 1;
    *held = is_shared(r) ? 0 : e->held;
    return spend_hold_room(*spent, *held, bu->usd) ? 0 : 2;
}

static void on_add(enum bsc_err err, double usd, void *ud)
{
    (void)usd, (void)ud;
    if (err)
        LOG_WARN("spend: a request's cost was not added to the store: %s", bsc_err_str(err));
}

/* A cost added to a shared store: its answer (the fleet's total) refreshes the book. */
struct spend_add {
    struct spend_book *b;
    struct spend_entry *e;
    struct spend_mark m;
};

static void on_shared_add(enum bsc_err err, double usd, void *ud)
{
    struct spend_add *a = ud;

    if (err) { /* the store keeps it and adds it when Redis answers again (store.h) */
        LOG_DEBUG("spend: a cost on client %s is not confirmed yet: %s", a->e->id,
                  bsc_err_str(err));
    } else {
        uv_mutex_lock(&a->b->mu);
        entry_apply(a->e, &a->m, usd);
        uv_mutex_unlock(&a->b->mu);
    }
    free(a);
}

/* Calls the store's add of <usd> (negative: a hold given back) to <e>'s record of
 * <period_ms> (under the mutex: ordered with the reads). A shared store's answer refreshes
 * the book when the record is still the book's. */
static enum bsc_err add_cost(struct request *r, struct spend_entry *e, uint64_t period_ms,
                             double usd)
{
    struct store *st = r->gw->store;
    struct bsc_str id = bsc_str_cstr(e->id);
    uint64_t ttl = spend_period_ttl_ms(e->kind);
    struct spend_add *a;
    enum bsc_err err;

    if (!is_shared(r) || period_ms != e->period_ms || !(a = malloc(sizeof(*a))))
        return store_spend_add(st, &r->w->loop, id, period_ms, ttl, usd, on_add, NULL);
    *a = (struct spend_add){r->gw->spend, e, mark_take(e, usd)};
    err = store_spend_add(st, &r->w->loop, id, period_ms, ttl, usd, on_shared_add, a);
    if (err)
        free(a);
    return err;
}

/* A cost of <usd> replaces what it covers of <r>'s hold (in the hold's period): that part
 * leaves the holds. Returns what the figure must add: the cost, less the covered part when
 * the hold is already in it (a shared record). Under the mutex. */
static double replace_hold(struct spend_hold_on *h, struct spend_entry *e, double usd)
{
    double covered = e->period_ms == h->period_ms ? spend_hold_covered(h->usd, usd) : 0;

    h->usd -= covered;
    e->held = spend_hold_release(e->held, covered);
    return h->stored ? usd - covered : usd;
}

void spend_record(struct request *r, double usd)
{
    struct spend_book *b = r->gw->spend;
    struct spend_line lines[SPEND_LINES_MAX];
    size_t n;

    if (!r->ident.client || !b || !(usd > 0))
        return;
    n = lines_of(r, lines);
    uv_mutex_lock(&b->mu);
    for (size_t k = 0; k < n; k++) {
        struct spend_entry *e = entry_get(b, lines[k].id);
        enum bsc_err err = BSC_OK;
        double add;

        if (!e)
            continue;
        entry_roll(e, lines[k].budget.period, bsc_wall_ms());
        add = replace_hold(&r->spend.holds[k], e, usd);
        book_add(e, add);
        if (r->gw->store && add != 0)
            err = add_cost(r, e, e->period_ms, add);
        if (err)
            LOG_WARN("%s: a cost on spend record %s was not added to the store: %s", r->ident.id,
                     e->id, bsc_err_str(err));
    }
    uv_mutex_unlock(&b->mu);
}

/* ---- holds: the estimate of each admitted request, reserved until it ends --------------- */

/* Gives back hold <h> of <r> on <e> (under the mutex). In the period it was taken in only: a
 * new period starts with nothing held. A shared record gets the matching negative add. */
static void give_back(struct request *r, struct spend_entry *e, struct spend_hold_on *h)
{
    double usd = h->usd;
    enum bsc_err err = BSC_OK;

    h->usd = 0;
    if (e->period_ms == h->period_ms) {
        e->held = spend_hold_release(e->held, usd);
        if (h->stored)
            book_add(e, -usd);
    }
    if (h->stored)
        err = add_cost(r, e, h->period_ms, -usd);
    h->stored = false;
    if (err)
        LOG_WARN("%s: a hold on spend record %s was not given back in the store: %s", r->ident.id,
                 e->id, bsc_err_str(err));
}

/* Gives back every hold <r> has on lines <lines>[0..n) (under the mutex). */
static void give_back_all(struct request *r, const struct spend_line *lines, size_t n)
{
    struct spend_book *b = r->gw->spend;

    for (size_t k = 0; k < n; k++) {
        struct spend_entry *e;

        if (r->spend.holds[k].usd > 0 && (e = entry_get(b, lines[k].id)))
            give_back(r, e, &r->spend.holds[k]);
    }
}

/* The store answered the add of a hold ADMIT waits for (the fleet's record with the hold
 * in it). The request may have ended meanwhile: its release gave the hold back already. */
static void on_hold(enum bsc_err err, double usd, void *ud)
{
    struct request *r = ud;
    struct spend_book *b = r->gw->spend;

    uv_mutex_lock(&b->mu);
    if (!err)
        entry_apply(r->spend.entry, &r->spend.mark, usd);
    uv_mutex_unlock(&b->mu);
    if (!guard_op_end(r))
        return;
    if (err)
        LOG_WARN("%s: a hold on spend record %s was not confirmed: %s (judged on this "
                 "process's figure)", r->ident.id, r->spend.entry->id, bsc_err_str(err));
    r->spend.holding = false;
    r->spend.hold_done = true;
    r->spend.hold_total = err ? -1.0 : usd;
    if (!r->m.finished)
        req_wake_run(r);
}

/* Takes <r>'s hold <h> on <e>, after the book's check passed (under the mutex). 1 when
 * ADMIT waits for a shared store to answer the add (the fleet decides, on_hold), else 0. */
static int take_hold(struct request *r, struct spend_entry *e, struct spend_hold_on *h)
{
    double usd = spend_hold_estimate(r->route, r->input.est_tokens, r->input.est_out_tokens);
    bool wait;

    if (!(usd > 0))
        return 0;
    h->usd = usd;
    h->period_ms = e->period_ms;
    e->held += usd;
    if (!r->gw->store || !is_shared(r))
        return 0;
    /* Into the fleet's record, as a cost is: the add answers the total with every
     * instance's holds, so the fleet admits at most one request past the budget. With
     * Redis away the store keeps the add and the book judges (fail open, as reads do). */
    wait = store_is_up(r->gw->store, NULL);
    r->spend.entry = e;
    r->spend.mark = mark_take(e, usd);
    if (store_spend_add(r->gw->store, &r->w->loop, bsc_str_cstr(e->id), e->period_ms,
                        spend_period_ttl_ms(e->kind), usd, wait ? on_hold : on_add,
                        wait ? r : NULL) != BSC_OK) {
        e->sent -= usd; /* never sent: the mark's arithmetic must not count it */
        return 0;
    }
    book_add(e, usd);
    h->stored = true;
    if (!wait)
        return 0;
    guard_op_begin(r);
    r->spend.holding = true;
    return 1;
}

/* The fleet's answer to hold <h>: the record before it was under <bu>, or the hold is given
 * back and the request refused (under the mutex). 0 passes, 2 refuses. */
static int hold_verdict(struct request *r, struct spend_entry *e, const struct cfg_budget *bu,
                        struct spend_hold_on *h, double *spent)
{
    r->spend.hold_done = false;
    *spent = r->spend.hold_total - h->usd;
    if (r->spend.hold_total < 0 || spend_hold_room(*spent, 0, bu->usd))
        return 0;
    give_back(r, e, h);
    return 2;
}

/* Line <k> of <r> (under the mutex): 0 passes, 1 waits for the store, 2 refuses. */
static int admit_line(struct request *r, const struct spend_line *l, struct spend_hold_on *h,
                      double *spent, double *held)
{
    struct spend_entry *e = entry_get(r->gw->spend, l->id);
    int v;

    if (!e)
        return 0;
    if (r->spend.hold_done)
        return hold_verdict(r, e, &l->budget, h, spent);
    if (!(l->budget.usd >= 0))
        return 0;
    v = judge(r, e, &l->budget, spent, held);
    return v == 0 ? take_hold(r, e, h) : v;
}

/* The next line starts with nothing read for it. */
static void line_next(struct request *r)
{
    r->spend.line++;
    r->spend.read_done = false;
    r->spend.hold_done = false;
    r->spend.loader_gen = 0;
    r->spend.load = NULL;
    r->spend.entry = NULL;
}

int spend_admit(struct request *r)
{
    struct spend_book *b = r->gw->spend;
    struct spend_line lines[SPEND_LINES_MAX];
    struct spend_entry *e = NULL;
    double spent = -1, held = 0;
    size_t n;
    int v = 0;

    if (!r->ident.client || !b)
        return 0;
    if (r->spend.reading || r->spend.holding)
        return 1;
    n = lines_of(r, lines);
    uv_mutex_lock(&b->mu);
    while (v == 0 && r->spend.line < n) {
        v = admit_line(r, &lines[r->spend.line], &r->spend.holds[r->spend.line], &spent,
                       &held);
        if (v == 0)
            line_next(r);
    }
    if (v == 2) /* refused by one: the holds the lines before it took go back */
        give_back_all(r, lines, r->spend.line);
    if (v != 1 && (e = entry_get(b, lines[0].id)))
        e->last_used_ms = bsc_wall_ms();
    if (v == 0 && e) {
        e->inflight++;
        r->spend.counted = true;
    }
    uv_mutex_unlock(&b->mu);
    if (v == 2)
        refuse(r, &lines[r->spend.line], spent, held);
    return v;
}

static bool holds_any(const struct request *r)
{
    for (size_t k = 0; k < SPEND_LINES_MAX; k++)
        if (r->spend.holds[k].usd > 0)
            return true;
    return false;
}

void spend_settle(struct request *r)
{
    struct spend_book *b = r->gw->spend;
    struct spend_line lines[SPEND_LINES_MAX];
    size_t n;

    if (!b || !r->ident.client || !holds_any(r))
        return;
    n = lines_of(r, lines);
    uv_mutex_lock(&b->mu);
    give_back_all(r, lines, n);
    uv_mutex_unlock(&b->mu);
}

void spend_release(struct request *r)
{
    struct spend_book *b = r->gw->spend;
    struct spend_line lines[SPEND_LINES_MAX];
    struct spend_entry *e;
    size_t n;

    if ((!r->spend.counted && !holds_any(r)) || !b || !r->ident.client)
        return;
    n = lines_of(r, lines);
    uv_mutex_lock(&b->mu);
    e = entry_get(b, lines[0].id);
    if (e && r->spend.counted && e->inflight)
        e->inflight--;
    give_back_all(r, lines, n);
    r->spend.counted = false;
    uv_mutex_unlock(&b->mu);
}
