/* SPDX-License-Identifier: MIT */
/* models.h -- what bascule-sim knows per model: its spec and script cursor, its counters
 * and the log of its last requests; plus the "*" spec that models without one share.
 * This is the whole mutable state of the simulator, owned by the app object; every call
 * runs on the one loop thread, so there are no locks. Pure: no I/O, no clock.
 * See docs/internals/sim.md. */
#ifndef BSC_SIM_MODELS_H
#define BSC_SIM_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arrivals.h"
#include "script.h"

#include "core/buf.h"
#include "core/err.h"
#include "core/str.h"

#define SIM_LOG_MAX          32u           /* requests remembered per model (and overall) */
#define SIM_MODELS_MAX       1024u         /* models tracked; later ones are served untracked */
#define SIM_MODEL_NAME_MAX   256u          /* bytes of a model name */
#define SIM_LOG_BODY_MAX     (256u * 1024u) /* body bytes kept per logged request */
#define SIM_STAR             "*"

struct sim_stats {
    uint64_t calls;     /* requests naming the model, whatever became of them */
    uint64_t ok;        /* answered by the normal path (no step, "ok" or "delay") */
    uint64_t faults;    /* any other step, and requests rejected (401, 400) */
    uint64_t completed; /* responses the sim ended itself (incl. reset, cut, errors) */
    uint64_t cancelled; /* the client went away before the response ended */
    uint64_t max_in_flight; /* the most calls in flight at once (limit tests read it) */
    uint64_t held;      /* responses waiting now for their client to read (back-pressure) */
};

struct sim_logent {
    char *method;       /* owned */
    char *path;         /* owned */
    char *query;        /* owned */
    char *headers_json; /* owned: {"lower-case-name":"value",...} */
    char *body;         /* owned, <body_len> bytes (NUL-terminated) */
    size_t body_len;
    bool body_truncated;
    char *model;        /* owned; "" when the request named none */
    const char *outcome; /* static: an action name, "unauthorized" or "bad_request" */
    uint64_t seq;        /* the sim-wide request number */
};

struct sim_reqlog {
    struct sim_logent ents[SIM_LOG_MAX]; /* a ring; <head> is the oldest */
    size_t head;
    size_t count;
};

struct sim_model {
    char *name;          /* owned */
    bool has_spec;
    struct sim_spec spec; /* owned when <has_spec> */
    char *spec_json;     /* owned: the text it was set from, for GET */
    struct sim_cursor cur;
    struct sim_stats stats;
    struct sim_reqlog log;
    struct sim_arrivals arrivals; /* when each call arrived (GET /_sim/arrivals) */
    struct sim_model *next; /* owned: the rest of the list */
};

struct sim_models {
    struct sim_model *head; /* owned list, in order of first sight */
    size_t count;
    struct sim_reqlog all;  /* the last requests of every model together */
    uint64_t total;         /* requests to API endpoints since the last reset */
    uint64_t gen;           /* bumped by reset: calls begun before it are not counted */
};

/* What one call is to get, decided when it arrives. */
struct sim_plan {
    struct sim_step step;   /* owned copy (sim_plan_cleanup) */
    uint32_t tokens;        /* completion tokens before max_tokens caps them */
    int32_t token_delay_ms; /* -1: the CLI default */
    bool prefill_refuse;    /* the spec's "prefill": "refuse" */
    uint64_t gen;           /* pass back to sim_models_end */
};

/* Cannot fail; allocates nothing. */
void sim_models_init(struct sim_models *m);
void sim_models_cleanup(struct sim_models *m);
/* Forgets every spec, counter and log (POST /_sim/reset). */
void sim_models_reset(struct sim_models *m);

/* The model named <name>, or NULL. With <create>, makes it when missing (NULL on
 * ENOMEM, past SIM_MODELS_MAX, or for a name that is empty or too long). */
struct sim_model *sim_models_get(struct sim_models *m, struct bsc_str name, bool create);

/* Parses <json> (sim_spec_parse) and makes it <name>'s spec, the script starting over.
 * On error the old spec stays and <errbuf> says why (BSC_EPARSE, BSC_EINVAL, BSC_ELIMIT
 * for too many models or a bad name, BSC_ENOMEM). */
enum bsc_err sim_models_set_spec(struct sim_models *m, struct bsc_str name, struct bsc_str json,
                                 char *errbuf, size_t errlen);
/* Removes <name>'s spec; false when it had none. */
bool sim_models_del_spec(struct sim_models *m, struct bsc_str name);

/* Counts a call to <name> and decides it: the next step of its own script, or of the
 * "*" script when it has no spec, or "ok" when the script is exhausted. *<plan> is owned
 * by the caller afterwards. BSC_ENOMEM: nothing counted, *<plan> empty. */
enum bsc_err sim_models_begin(struct sim_models *m, struct bsc_str name, struct sim_plan *plan);
void sim_plan_cleanup(struct sim_plan *plan);
/* Ends a call begun at <gen>: completed, or <cancelled> when the client left first.
 * Ignored when a reset happened in between. */
void sim_models_end(struct sim_models *m, struct bsc_str name, uint64_t gen, bool cancelled);
/* A response of a call begun at <gen> starts (<held>) or stops waiting for its client to
 * read what is queued. Ignored when a reset happened in between. */
void sim_models_held(struct sim_models *m, struct bsc_str name, uint64_t gen, bool held);
/* Counts a call to <name> that was rejected before the script (bad key, bad request):
 * calls, faults and completed all go up by one. */
void sim_models_reject(struct sim_models *m, struct bsc_str name);

/* Notes that a call naming <name> arrived at <now_ms> (monotonic), begun or rejected:
 * one entry per call counted in <calls>. */
void sim_models_arrived(struct sim_models *m, struct bsc_str name, uint64_t now_ms);

/* Appends <in> to the overall log and, when it names a model, to that model's log,
 * copying every field (the body is cut at SIM_LOG_BODY_MAX). Best effort: on ENOMEM the
 * entry is dropped. */
void sim_models_log(struct sim_models *m, const struct sim_logent *in);

/* Appends to <out> the headers given as <n> name/value pairs as one JSON object with
 * lower-cased names; repeated names are joined with ", ". */
enum bsc_err sim_headers_json(const struct bsc_str *names, const struct bsc_str *values,
                              size_t n, struct bsc_buf *out);

/* GET /_sim/stats: {"total":N,"models":{"m":{"calls",...,"in_flight"}}}. */
enum bsc_err sim_models_stats_json(const struct sim_models *m, struct bsc_buf *out);
/* GET /_sim/requests: the log of <name> (or the overall log when <name> is empty) as a
 * JSON array, oldest first; bodies that parse as JSON are embedded as JSON. */
enum bsc_err sim_models_requests_json(const struct sim_models *m, struct bsc_str name,
                                      struct bsc_buf *out);
/* GET /_sim/arrivals?model=<name>: {"model","arrivals_ms":[...],"dropped":N}, every
 * call's arrival in order. BSC_ENOTFOUND when the model is unknown. */
enum bsc_err sim_models_arrivals_json(const struct sim_models *m, struct bsc_str name,
                                      struct bsc_buf *out);
/* GET /_sim/models/{name}: {"model","spec":<as set>,"cursor":{"step","used"},"stats":{}}.
 * BSC_ENOTFOUND when the model is unknown. */
enum bsc_err sim_models_model_json(const struct sim_models *m, struct bsc_str name,
                                   struct bsc_buf *out);

#endif
