/* SPDX-License-Identifier: MIT */
/* breaker.h -- one circuit breaker: closed / open / half-open, plus a slow-start ramp after
 * it closes again (docs/design.md §8). Pure decision code: no I/O, no clock reads (time moves only
 * through the <now_ms> arguments), no allocation, no globals, never calls back. It does not
 * classify failures (the caller maps its error kinds to enum brk_outcome) and does not know
 * what it guards (the caller keys breakers by provider/model/region/key).
 * A struct brk is not thread-safe: one per worker, or the caller serialises access.
 * Design notes: docs/internals/breaker.md. */
#ifndef BSC_HEALTH_BREAKER_H
#define BSC_HEALTH_BREAKER_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"

/* Buckets of the sliding failure-rate window; each covers window_ms / BRK_BUCKETS. */
#define BRK_BUCKETS 10
/* The share of traffic a target gets at the start of its ramp; it grows linearly to 1. */
#define BRK_RAMP_FLOOR 0.1

enum brk_state {
    BRK_CLOSED = 0, /* traffic flows; failures are counted (possibly ramping) */
    BRK_OPEN,       /* all traffic denied until open_ms has passed */
    BRK_HALF_OPEN,  /* only half_open_probes concurrent probes are let through */
    BRK_STATE_COUNT
};

enum brk_decision {
    BRK_ALLOW = 0,   /* send it; report the outcome with was_probe = false */
    BRK_ALLOW_PROBE, /* send it as a probe; the outcome MUST be reported with was_probe = true */
    BRK_DENY,        /* open, or half-open with every probe slot taken */
    BRK_DENY_RAMP,   /* closed but ramping and this draw fell outside the admitted share:
                        skip the candidate for this request; not an error */
    BRK_DECISION_COUNT
};

enum brk_outcome {
    BRK_SUCCESS = 0, /* the target answered properly */
    BRK_FAILURE,     /* an infrastructure failure (connect, timeout, 5xx, overloaded, ...) */
    BRK_NEUTRAL,     /* says nothing about the target's health (client error, rate limit,
                        cancellation): frees a probe slot, counts nowhere */
    BRK_OUTCOME_COUNT
};

/* Why the breaker last opened; for the attempt log and the status page. */
enum brk_trigger {
    BRK_TRIG_NONE = 0,    /* never opened */
    BRK_TRIG_CONSECUTIVE, /* consecutive_failures failures in a row */
    BRK_TRIG_RATE,        /* failure rate over the window, with min_requests seen */
    BRK_TRIG_PROBE,       /* a half-open probe failed */
    BRK_TRIG_FORCED,      /* brk_force_open() */
    BRK_TRIG_COUNT
};

/* Monotonic counters for metrics (bascule_breaker_transitions_total and friends). */
struct brk_counters {
    uint64_t opened;      /* transitions into BRK_OPEN (from closed or half-open) */
    uint64_t half_opened; /* open -> half-open */
    uint64_t closed;      /* half-open -> closed, and forced closes of a non-closed breaker */
    uint64_t probes;      /* BRK_ALLOW_PROBE decisions */
    uint64_t denied;      /* BRK_DENY decisions */
    uint64_t ramp_denied; /* BRK_DENY_RAMP decisions */
    uint64_t panics;      /* brk_allow_panic() admissions (a probe before open_ms, or a
                             ramp-refused request let through) */
};

struct brk_bucket {
    uint64_t epoch;    /* now_ms / bucket width when this bucket was last reset */
    uint32_t requests; /* successes + failures; neutral outcomes are not requests here */
    uint32_t failures;
};

/* The layout is public so a breaker can be embedded in per-target state; the fields are
 * private to breaker.c: use the functions below. */
struct brk {
    struct cfg_breaker p; /* a sanitised copy: a breaker outlives config snapshots */
    enum brk_state state;
    enum brk_trigger trigger;
    uint64_t state_since_ms; /* when the current state was entered */
    uint64_t open_until_ms;  /* BRK_OPEN: when half-open may begin */
    uint64_t opened_ms;      /* when it last opened (0: never) */
    uint32_t opens;          /* openings since the last recovery (close): the open time's
                                exponent */
    uint64_t ramp_start_ms;  /* BRK_CLOSED: start of the ramp, when ramping */
    bool ramping;
    uint32_t consecutive;     /* failures in a row while closed */
    uint32_t probes_inflight; /* BRK_HALF_OPEN */
    uint32_t probe_successes; /* BRK_HALF_OPEN */
    uint64_t bucket_ms;       /* width of one bucket, >= 1 */
    struct brk_bucket buckets[BRK_BUCKETS];
    struct brk_counters counters;
};

/* Initialises <b> closed, with no ramp and empty windows, from a copy of <params> (not
 * kept). Out-of-range parameters are sanitised rather than rejected (config validation
 * rejects them first): half_open_probes, success_threshold and min_requests of 0 become 1,
 * consecutive_failures of 0 disables that trigger, failure_rate outside (0, 1] disables the
 * rate trigger. Cannot fail. */
void brk_init(struct brk *b, const struct cfg_breaker *params);

/* Replaces the parameters after a config reload, keeping the state. The failure-rate
 * window is emptied when its width changes. Cannot fail. */
void brk_set_params(struct brk *b, const struct cfg_breaker *params);

/* Asks whether one request may go to the guarded target at <now_ms>. <rand01> is a uniform
 * draw in [0, 1) used only while ramping: the request is admitted when
 * <rand01> < brk_ramp_fraction(). A caller that already applied the ramp itself (weighted
 * balancing) passes 0.0, which always passes the ramp gate. May move open -> half-open.
 * Each BRK_ALLOW_PROBE takes a probe slot until brk_record(..., was_probe = true). */
enum brk_decision brk_allow(struct brk *b, uint64_t now_ms, double rand01);

/* Reports the outcome of a request that brk_allow() admitted. <was_probe> must be true
 * exactly when the decision was BRK_ALLOW_PROBE. Closed: counts toward the consecutive and
 * failure-rate triggers (neutral counts nowhere) and may open. Half-open: a probe success
 * counts toward success_threshold and may close (starting the ramp); a probe failure
 * reopens for open_ms; a neutral probe only frees its slot. Outcomes of non-probe requests
 * that finish while open or half-open were admitted before the circuit opened and are
 * ignored. */
void brk_record(struct brk *b, uint64_t now_ms, enum brk_outcome outcome, bool was_probe);

/* Admission when every candidate of a request is kept out by its breaker (breaker.panic):
 * closed but ramping: BRK_ALLOW whatever the ramp says; open, even before open_ms has
 * passed: half-open at once, then as half-open; half-open: a probe while a slot is free,
 * else BRK_DENY. A BRK_ALLOW_PROBE is reported like any probe: its success counts toward
 * success_threshold, its failure reopens with the next, longer open time. */
enum brk_decision brk_allow_panic(struct brk *b, uint64_t now_ms);

/* breaker.mode: adaptive -- the SRE book's client-side throttling. While closed (it only
 * leaves closed when forced open) brk_allow() refuses a request with probability
 * brk_reject_probability(): max(0, (requests - K x accepts) / (requests + 1)) over the
 * window (requests: successes, failures and the requests it refused; accepts: successes;
 * K: adaptive_k). A request is refused when <rand01> < that probability, and the refusal
 * is counted as a request not accepted. No trigger opens it and there is no panic: the
 * throttle always lets a share through. */
double brk_throttle_p(uint64_t requests, uint64_t accepts, double k);
/* The probability brk_allow() refuses a request at <now_ms>: 0 in circuit mode or when not
 * closed. Pure. */
double brk_reject_probability(const struct brk *b, uint64_t now_ms);

/* The open time of the next opening: open_ms * open_backoff^opens (opens = openings since
 * the last recovery), at most max(max_open_ms, open_ms). Pure. */
uint64_t brk_next_open_ms(const struct brk *b);

/* The length of the current (or last) open period, and the openings since the last
 * recovery: what a shared backend announces with an opening. Pure. */
uint64_t brk_open_len_ms(const struct brk *b);
uint32_t brk_opens(const struct brk *b);

/* When the circuit last opened (0: never); for the panic pick, which tries the circuit
 * open longest first. Pure. */
uint64_t brk_opened_ms(const struct brk *b);

/* Applies transitions that only depend on time (open -> half-open once open_ms has passed,
 * the end of the ramp). brk_allow() and brk_record() do this themselves; call it before
 * reading brk_state() for display. */
void brk_advance(struct brk *b, uint64_t now_ms);

/* The stored state; see brk_advance(). */
enum brk_state brk_state(const struct brk *b);

/* "closed", "open", "half_open"; "unknown" for a value out of range. Never NULL. */
const char *brk_state_name(enum brk_state state);
const char *brk_decision_name(enum brk_decision decision);
const char *brk_trigger_name(enum brk_trigger trigger);

/* The share of traffic the breaker admits at <now_ms>, in [0, 1]: 1 when closed and not
 * ramping; during the ramp BRK_RAMP_FLOOR growing linearly to 1 over ramp_ms; BRK_RAMP_FLOOR
 * when half-open (or open with open_ms passed), so that a weighted pick still sends probes;
 * 0 while open. Pure: does not change <b>. */
double brk_ramp_fraction(const struct brk *b, uint64_t now_ms);

/* True while closed and within ramp_ms of closing. Pure. */
bool brk_is_ramping(const struct brk *b, uint64_t now_ms);

/* True when a request at <now_ms> would certainly be denied (open, open_ms not passed). */
bool brk_is_open(const struct brk *b, uint64_t now_ms);

/* Milliseconds until an open breaker may admit a probe (0 when not open or already due);
 * for retry_after_ms in the typed "nothing eligible" error. Pure. */
uint64_t brk_retry_after_ms(const struct brk *b, uint64_t now_ms);

/* Why the breaker last opened. */
enum brk_trigger brk_last_trigger(const struct brk *b);

/* Successes and failures currently in the sliding window at <now_ms>. Pure. */
void brk_window(const struct brk *b, uint64_t now_ms, uint32_t *requests, uint32_t *failures);

/* The transition and decision counters; borrowed from <b>. */
const struct brk_counters *brk_counters(const struct brk *b);

/* Admin overrides. brk_force_open() opens for open_ms from <now_ms> whatever the state;
 * brk_force_close() closes at once, without a ramp, and empties the windows (a recovery:
 * the next opening is open_ms again). */
void brk_force_open(struct brk *b, uint64_t now_ms);
void brk_force_close(struct brk *b, uint64_t now_ms);

/* An opening another gateway process announced: open for <open_ms> from <now_ms>
 * (0: the next open time here), with its count of <opens> since the last recovery when it
 * is higher than this breaker's own. */
void brk_force_open_for(struct brk *b, uint64_t now_ms, uint64_t open_ms, uint32_t opens);

#endif
