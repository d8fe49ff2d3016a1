/* SPDX-License-Identifier: MIT */
/* status_outcomes.c -- the three successes on the status page: per target and per workflow,
 * how many attempts came back (transport), passed their contract, and were judged to have
 * done their task (POST /v1/feedback), so an operator sees a fallback that "recovers"
 * requests which then fail their task. Totals come from the outcome metrics, the recent
 * windows that balance: score reads from health/verdicts.h. */
#include <stdlib.h>
#include <string.h>

#include "api/status_outcomes.h"
#include "core/clock.h"
#include "health/verdicts.h"
#include "metrics/metrics.h"
#include "policy/attempt.h"
#include "router/feedback.h"
#include "router/gateway.h"

enum { L_TRANSPORT, L_CONTRACT, L_TASK, L_COUNT };
static const char *const layers[L_COUNT] = {"transport", "contract", "task"};

struct orow {
    const char *name; /* borrowed: a target id of the snapshot's config, or a workflow */
    double ok[L_COUNT], failed[L_COUNT];
};

/* Adds one outcome sample to the row named by its first label, when there is one. */
static void add(struct orow *rows, size_t n, const struct metrics_sample *m)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(rows[i].name, m->labels[0]) != 0)
            continue;
        for (int l = 0; l < L_COUNT; l++) {
            if (strcmp(m->labels[1], layers[l]) != 0)
                continue;
            if (strcmp(m->labels[2], "ok") == 0)
                rows[i].ok[l] += m->value;
            else
                rows[i].failed[l] += m->value;
        }
        return;
    }
}

static void collect(struct worker *w, struct orow *tg, size_t n_tg, struct orow *wf)
{
    struct metrics_snapshot snap = {0};

    if (metrics_snapshot_take(w->gw->metrics, &snap) != BSC_OK)
        return;
    for (size_t i = 0; i < snap.n; i++) {
        if (snap.samples[i].id == METRIC_TARGET_OUTCOMES)
            add(tg, n_tg, &snap.samples[i]);
        else if (snap.samples[i].id == METRIC_WORKFLOW_OUTCOMES)
            add(wf, ATTEMPT_WF_COUNT, &snap.samples[i]);
    }
    metrics_snapshot_cleanup(&snap);
}

/* "transport":{"ok":N,"failed":N},"contract":...,"task":... */
static void put_layers(struct bsc_buf *b, const struct orow *r)
{
    for (int l = 0; l < L_COUNT; l++)
        bsc_buf_appendf(b, ",\"%s\":{\"ok\":%.0f,\"failed\":%.0f}", layers[l], r->ok[l],
                        r->failed[l]);
}

static void put_window(struct bsc_buf *b, struct worker *w, const struct cfg *cfg,
                       const char *target)
{
    struct vd_rates v = {0};
    struct vd_policy p;

    feedback_policy(cfg, &p);
    if (w->gw->verdicts) /* the shared verdicts: no client's own ones */
        verdicts_rates(w->gw->verdicts, target, NULL, bsc_now_ms(), &p, &v);
    bsc_buf_appendf(b, ",\"recent\":{\"attempts\":%u,\"attempts_ok\":%u,\"tasks\":%.2f,"
                       "\"tasks_ok\":%.2f}}",
                    v.attempts, v.attempts_ok, v.tasks, v.tasks_ok);
}

void api__put_outcomes(struct bsc_buf *b, struct worker *w, const struct cfg *cfg)
{
    struct orow *tg = calloc(cfg->n_targets ? cfg->n_targets : 1, sizeof(*tg)); /* owned */
    struct orow wf[ATTEMPT_WF_COUNT] = {0};

    for (int i = 0; i < ATTEMPT_WF_COUNT; i++)
        wf[i].name = attempt_workflow_name((enum attempt_workflow)i);
    for (size_t i = 0; tg && i < cfg->n_targets; i++)
        tg[i].name = cfg->targets[i].id;
    collect(w, tg, tg ? cfg->n_targets : 0, wf);
    bsc_buf_append_cstr(b, ",\"outcomes\":{\"targets\":[");
    for (size_t i = 0; tg && i < cfg->n_targets; i++) {
        bsc_buf_append_cstr(b, i ? ",{\"target\":" : "{\"target\":");
        bsc_buf_append_json_str(b, bsc_str_cstr(tg[i].name));
        put_layers(b, &tg[i]);
        put_window(b, w, cfg, tg[i].name);
    }
    bsc_buf_append_cstr(b, "],\"workflows\":[");
    for (int i = 0; i < ATTEMPT_WF_COUNT; i++) {
        bsc_buf_appendf(b, "%s{\"workflow\":\"%s\"", i ? "," : "", wf[i].name);
        put_layers(b, &wf[i]);
        bsc_buf_append_char(b, '}');
    }
    bsc_buf_append_cstr(b, "]}");
    free(tg);
}
