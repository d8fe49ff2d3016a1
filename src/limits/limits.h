/* SPDX-License-Identifier: MIT */
/* limits.h -- request and token rates and concurrency caps, mirrored from the providers' own
 * limits and applied per client, per target and per provider. One struct lim_set holds the
 * three counters of one subject behind its own lock; every call takes <now> from the caller,
 * so tests/unit/test_limits.c drives them with an injected clock. Rates are GCRA (a rate plus
 * a burst, struct lim_rate): in any 60 s window at most rpm (tpm) are admitted, in any window
 * shorter than one interval at most the burst. The registry
 * (lim_reg) keeps one set per client, target and provider id across config reloads and
 * points each config object at its set (lim_reg_sync). See docs/internals/limits.md. */
#ifndef BSC_LIMITS_LIMITS_H
#define BSC_LIMITS_LIMITS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Which limit said no; the order is the order of the checks. */
enum lim_kind { LIM_NONE = 0, LIM_RPM, LIM_TPM, LIM_CONC, LIM_KIND_COUNT };

/* One rate, GCRA: <tat_ns> is the theoretical arrival time (monotonic ns; 0: never used).
 * With a limit <cap> a minute and a burst <b>, the interval is 60 s / (cap - b + 1) and a
 * request of n is admitted when max(tat, now) + n x interval <= now + b x interval: at most
 * b at once, b + k - 1 within k intervals, so at most cap in any 60 s. */
struct lim_rate {
    uint64_t tat_ns;
};

struct lim_caps {
    uint32_t rpm, tpm, conc; /* 0: unlimited */
    bool conc_own;           /* conc is each process's own, never the fleet's (a default) */
    uint32_t rpm_burst, tpm_burst; /* 0: the default, lim_burst */
};

/* What an acquire found: LIM_NONE (taken), or the limit in the way and when the set may
 * have room again (wait_ms; -1 when it depends on another request finishing;
 * LIM_WAIT_FLEET when the set asked the fleet for room and the answer wakes the waiters). */
#define LIM_WAIT_FLEET (-2)
struct lim_verdict {
    enum lim_kind kind;
    int64_t wait_ms;
    unsigned enforced; /* bit (1 << kind) for each limit the set enforced, for metrics */
};

struct lim_set;

/* The fleet's side of the limits (store.kind: redis): several gateway processes take their
 * tokens and concurrency slots from shared buckets and leases. A backend (hstate_redis_limits.c)
 * fills in the calls; limits_fleet.c decides, per set, when to ask it. The calls queue work
 * and return at once: an answer comes back through lim_fleet_granted/lim_fleet_failed on
 * another thread. NULL share: every limit is per process. */
struct lim_share {
    /* Asks for up to <want> (at least <need>) of <kind> from <s>'s shared bucket or lease
     * of capacity <cap>. */
    void (*ask)(struct lim_share *sh, struct lim_set *s, enum lim_kind kind, uint64_t need,
                uint64_t want, uint32_t cap, uint32_t burst);
    /* Gives <slots> concurrency slots of <s> back to the fleet. */
    void (*give)(struct lim_share *sh, struct lim_set *s, uint32_t slots);
    /* A set was created: the backend keeps its leases alive while they are held. */
    void (*track)(struct lim_share *sh, struct lim_set *s);
    /* Wakes the loops with requests waiting for room (bits as lim_wait_on sets them). */
    void (*wake)(void *ctx, uint64_t waiters);
    void *wake_ctx;
    atomic_bool up;      /* the backend can reach the fleet now */
    uint32_t instances;  /* store.instances: while it cannot, local caps are divided by it */
    uint32_t timeout_ms; /* store.timeout_ms: an ask unanswered this long decides locally */
};

/* A set's part of the fleet's limits; under the set's lock. */
struct lim_fleet {
    double req, tok;              /* tokens the shared buckets granted, not spent yet */
    uint64_t req_empty_until;     /* the shared bucket said no until then */
    uint64_t tok_empty_until;
    uint64_t conc_full_until;     /* the shared lease was full: ask again after this */
    uint32_t slots;               /* concurrency slots leased by this process */
    uint32_t giving;              /* slots taken off <slots>, their give not sent yet */
    uint32_t taking;              /* concurrency asks sent, unanswered (the share's thread) */
    bool spare_seen;              /* the last renewal saw slots beyond those in flight */
    unsigned asking;              /* bit (1 << kind): an ask is out, since asked_at[kind] */
    uint64_t asked_at[LIM_KIND_COUNT];
    uint64_t local_until;         /* an ask failed or timed out: local caps until then */
};

/* A request waiting for a set's room, in the set's fair queue (limits_fair.c). */
struct lim_ticket {
    const void *who;    /* the request */
    const void *client; /* its client's identity (NULL: no clients) */
    double tag;         /* served in order of tags */
    uint64_t seq;       /* equal tags: the oldest first */
    enum lim_kind kind; /* the limit it waits for */
};

struct lim_fair {
    struct lim_ticket *t; /* owned */
    size_t n, cap;
    double vt;    /* the tag last served */
    uint64_t seq;
};

struct lim_set {
    pthread_mutex_t mu;
    atomic_bool active;   /* any cap set: read without the lock (a reload may change it) */
    struct lim_caps caps; /* configured; under <mu> */
    double factor;        /* (0, 1]: scales rpm and conc (the adaptive limiter's effective caps) */
    struct lim_rate req, tok;
    uint32_t inflight;
    uint32_t queued;      /* requests waiting for this set (gauge only) */
    uint64_t waiters;     /* bit (worker index % 64): a loop with requests waiting for room */
    struct lim_share *share; /* the fleet's limits, or NULL (set before first use) */
    char subject;         /* 'c' client, 't' target, 'p' provider */
    const char *id;       /* the subject's id (the registry owns it) */
    struct lim_fleet fl;
    struct lim_fair fair;
};

/* ---- pure rate arithmetic (GCRA) ---- */

/* The burst of a limit <cap>: <burst> when configured (at most cap), else cap / 12 (5 s
 * worth), at least 1. */
uint32_t lim_burst(uint32_t cap, uint32_t burst);
/* The interval between two admissions at the sustained rate, in ns (rounded up):
 * 60 s / (cap - burst + 1), burst as lim_burst. */
uint64_t lim_rate_interval_ns(uint32_t cap, uint32_t burst);
/* Milliseconds (rounded up) until <n> can be admitted; 0 when it can now. n larger than the
 * burst is admitted alone, once the rate is idle (tat <= now): the next ones pay for it. */
int64_t lim_rate_wait_ms(const struct lim_rate *r, uint32_t cap, uint32_t burst, uint64_t n,
                         uint64_t now_ms);
/* Admits <n> (after lim_rate_wait_ms answered 0). */
void lim_rate_take(struct lim_rate *r, uint32_t cap, uint32_t burst, uint64_t n,
                   uint64_t now_ms);
/* Corrects an admission by <delta> (usage above the estimate: a debt the next admissions
 * wait for, at most a minute deep; below: given back, never before now). */
void lim_rate_correct(struct lim_rate *r, uint32_t cap, uint32_t burst, int64_t delta,
                      uint64_t now_ms);

/* ---- sets ---- */

void lim_set_init(struct lim_set *s, struct lim_caps caps);
void lim_set_destroy(struct lim_set *s);
/* Changes the configured caps (a reload); counters stay. */
void lim_set_configure(struct lim_set *s, struct lim_caps caps);
/* The adaptive hook: effective rpm, its burst and concurrency = configured x factor (at
 * least 1), factor clamped to [0.01, 1]. tpm is not scaled. */
void lim_set_factor(struct lim_set *s, double factor);
/* The effective caps now. */
struct lim_caps lim_set_effective(struct lim_set *s);
/* Whether any cap is set (a set without caps is never locked on the request path). */
bool lim_set_active(const struct lim_set *s);

/* Takes one request, <tokens> tokens and one concurrency slot, all or nothing. */
struct lim_verdict lim_acquire(struct lim_set *s, uint64_t tokens, uint64_t now_ms);
/* Only looks: what lim_acquire would answer now. */
struct lim_verdict lim_peek(struct lim_set *s, uint64_t tokens, uint64_t now_ms);
/* Gives back the slot taken by lim_acquire (call it only for an acquire whose verdict
 * enforced something: a reload may have changed the caps since) and corrects the tokens: <used> instead of the
 * <estimated> taken (more used: the bucket goes into debt, down to -capacity). Returns the
 * waiters to wake (bits as lim_wait_on set them), cleared. */
uint64_t lim_release(struct lim_set *s, uint64_t estimated, uint64_t used, uint64_t now_ms);
/* Gives back everything lim_acquire took (the attempt never started); as lim_release. */
uint64_t lim_undo(struct lim_set *s, uint64_t tokens, uint64_t now_ms);
/* Worker <worker> has a request waiting for room in <s>: the next release, or the fleet's
 * next answer, wakes it. True when an ask of the fleet is still out (false: its answer
 * came before the wait began, and will not wake it). */
bool lim_wait_on(struct lim_set *s, unsigned worker);
void lim_queued(struct lim_set *s, int delta);

/* ---- the fair queue of a shared limit (limits_fair.c) ---- */

/* Request <who> of <client> (weight >= 1) waits for <s>'s room (limit <kind>): it takes its
 * place in the fair queue, once (again: kept). False when out of memory (it then goes
 * without a place: first come, first served). */
bool lim_fair_enter(struct lim_set *s, const void *who, const void *client, uint32_t weight,
                    enum lim_kind kind);
/* <who> leaves the queue (<served>: it took the room). Returns the waiters to wake (bits as
 * lim_wait_on set them), cleared, when it was there. */
uint64_t lim_fair_leave(struct lim_set *s, const void *who, bool served);
/* LIM_NONE when <who> may take <s>'s room now (no one waits, or it is next); else the limit
 * the request next in turn waits for. */
enum lim_kind lim_fair_turn(struct lim_set *s, const void *who);
/* lim_fair_turn (only when <turn>) then, when it is <who>'s turn, lim_acquire, under one
 * hold of the lock: the same answers as the two calls one after the other. *<behind> is
 * the limit the request next in turn waits for, and the verdict lim_peek's (nothing taken);
 * or LIM_NONE and lim_acquire's verdict. */
struct lim_verdict lim_fair_acquire(struct lim_set *s, const void *who, bool turn, uint64_t tokens,
                                    uint64_t now_ms, enum lim_kind *behind);
/* lim_fair_turn's answer, the caller holding the set's lock (limits_fair.c). */
enum lim_kind lim__fair_turn_locked(struct lim_set *s, const void *who);
void lim_fair_free(struct lim_set *s);

/* A copy of a set's counters. */
struct lim_snapshot {
    struct lim_caps caps, effective;
    uint32_t inflight, queued;
};
void lim_snapshot(struct lim_set *s, struct lim_snapshot *out);

const char *lim_kind_name(enum lim_kind k); /* "rpm", "tpm", "concurrency", "none" */

/* Whose limits a set holds, as the label of a limit names it (lim_limit_name). */
enum lim_subject {
    LIM_SUBJ_CLIENT = 0,
    LIM_SUBJ_TARGET,
    LIM_SUBJ_PROVIDER,
    LIM_SUBJ_TEAM,
    LIM_SUBJ_COUNT
};

/* The name of limit <kind> of a <subj>'s set, as bascule_limit_decisions_total labels it and
 * the x-bascule-limited-by header says it: "client_rpm", "target_concurrency", ... NULL for
 * LIM_NONE or a value out of range. Static storage. */
const char *lim_limit_name(enum lim_subject subj, enum lim_kind kind);

/* ---- the fleet's answers (limits_fleet.c), from the share's thread ---- */

/* The fleet granted <grant> of <kind> (0: none; the bucket has room again in <wait_ms>).
 * Wakes the set's waiters through the share. */
void lim_fleet_granted(struct lim_set *s, enum lim_kind kind, uint64_t grant, int64_t wait_ms,
                       uint64_t now_ms);
/* The ask got no answer (Redis gone or slow): the set decides on local caps for a while. */
void lim_fleet_failed(struct lim_set *s, enum lim_kind kind, uint64_t now_ms);
/* The concurrency slots the fleet counts for <s> once every command sent so far is applied
 * (for renewals): those leased plus those whose give is not sent yet. <*exact>: no ask is
 * out, so the count may be written as it is; otherwise a grant may be on its way. */
uint32_t lim_fleet_held(struct lim_set *s, bool *exact);
/* At a renewal, before lim_fleet_held: the slots to give back because they sat unused
 * since the renewal before (lim__fleet_idle), counted as giving until lim_fleet_gave. */
uint32_t lim_fleet_idle(struct lim_set *s);
/* The give of <slots> was sent to the fleet (or dropped: the next exact renewal corrects
 * the fleet's count). */
void lim_fleet_gave(struct lim_set *s, uint32_t slots);

/* ---- the registry ---- */

struct lim_reg;

struct lim_reg *lim_reg_new(void);
void lim_reg_free(struct lim_reg *reg);
/* Points every client's, target's and provider's <lim> at its set (created on first sight,
 * kept by id across reloads) and applies the configured caps. BSC_ENOMEM leaves the
 * unresolved ones NULL (unlimited). */
enum bsc_err lim_reg_sync(struct lim_reg *reg, struct cfg *cfg);
/* Shares every set, present and future, with the fleet through <sh> (before the first sync). */
void lim_reg_share(struct lim_reg *reg, struct lim_share *sh);

#endif
