/* SPDX-License-Identifier: MIT */
/* targets_json.c -- one target's live state as JSON, shared by the admin API and the
 * status page: circuit, ramp, health, latency, load, counters, last error. Never keys. */
#include "api/targets_json.h"
#include "core/buf.h"
#include "health/hstate.h"
#include "limits/limits.h"
#include "router/gateway.h"

/* A latency figure in milliseconds, or null while there is no measurement yet (the state
 * keeps a negative or NaN value for "unmeasured"). */
static void put_ms(struct bsc_buf *b, const char *name, double ms)
{
    bsc_buf_appendf(b, ",\"%s\":", name);
    if (ms >= 0.0)
        bsc_buf_appendf(b, "%.3f", ms);
    else
        bsc_buf_append_cstr(b, "null");
}

/* ",\"limits\":{...}": the configured limits of <t> (0: none) and of its provider, the
 * effective ones (the adaptive factor applied), the slots held and the requests queued. */
static void put_limits(struct bsc_buf *b, const struct cfg_target *t)
{
    struct lim_snapshot s, p;

    lim_snapshot(t->lim, &s);
    lim_snapshot(t->provider->lim, &p);
    bsc_buf_appendf(b,
                    ",\"limits\":{\"rpm\":%u,\"tpm\":%u,\"max_concurrency\":%u,\"queue_ms\":%u,"
                    "\"effective_rpm\":%u,\"effective_max_concurrency\":%u,\"inflight\":%u,"
                    "\"queued\":%u,\"provider\":{\"rpm\":%u,\"tpm\":%u,\"max_concurrency\":%u,"
                    "\"inflight\":%u}}",
                    t->rpm, t->tpm, t->max_concurrency, t->queue_ms, s.effective.rpm,
                    s.effective.conc, s.inflight, s.queued, t->provider->rpm, t->provider->tpm,
                    t->provider->max_concurrency, p.inflight);
}

void api__put_target(struct bsc_buf *b, struct worker *w, const struct cfg_target *t,
                     uint64_t now)
{
    struct target_view v;

    hstate_view(w->gw->hs, t, now, &v);
    bsc_buf_append_cstr(b, "{\"id\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(t->id));
    bsc_buf_append_cstr(b, ",\"provider\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(t->provider->id));
    bsc_buf_append_cstr(b, ",\"model\":");
    bsc_buf_append_json_str(b, bsc_str_cstr(t->model));
    bsc_buf_appendf(b,
                    ",\"disabled\":%s,\"admin_disabled\":%s,\"circuit\":\"%s\",\"ramping\":%s,"
                    "\"ramp_fraction\":%.3f,\"retry_after_ms\":%llu,\"health\":\"%s\"",
                    t->disabled || t->provider->disabled ? "true" : "false",
                    v.admin_disabled ? "true" : "false", brk_state_name(v.state),
                    v.ramping ? "true" : "false", v.ramp_fraction,
                    (unsigned long long)v.retry_after_ms, target_health_name(v.health));
    put_ms(b, "ewma_latency_ms", v.ewma_latency_ms);
    put_ms(b, "ewma_ttft_ms", v.ewma_ttft_ms);
    bsc_buf_appendf(b,
                    ",\"inflight\":%u,"
                    "\"successes\":%llu,\"failures\":%llu,\"misconfigured\":%s,"
                    "\"breaker\":{\"opened\":%llu,\"half_opened\":%llu,\"closed\":%llu,"
                    "\"probes\":%llu,\"denied\":%llu,\"ramp_denied\":%llu},\"last_error\":",
                    v.inflight,
                    (unsigned long long)v.successes, (unsigned long long)v.failures,
                    v.misconfigured ? "true" : "false", (unsigned long long)v.counters.opened,
                    (unsigned long long)v.counters.half_opened,
                    (unsigned long long)v.counters.closed, (unsigned long long)v.counters.probes,
                    (unsigned long long)v.counters.denied,
                    (unsigned long long)v.counters.ramp_denied);
    if (v.last_error)
        bsc_buf_append_json_str(b, bsc_str_cstr(v.last_error));
    else
        bsc_buf_append_cstr(b, "null");
    bsc_buf_appendf(b,
                    ",\"adaptive\":{\"enabled\":%s,\"effective_concurrency\":%u,"
                    "\"effective_rpm\":%u,\"factor\":%.3f}",
                    t->adaptive ? "true" : "false", v.eff.concurrency, v.eff.rpm, v.eff.factor);
    put_limits(b, t);
    bsc_buf_append_char(b, '}');
}

