/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/config/[a-z]*.c src/contract/[a-z]*.c */
/* fuzz_config.c -- libFuzzer target for the config loader (cfg_load_string): YAML parsing,
 * ${VAR} expansion, the schema, references. Beyond "no crash, no leak, no UB" it checks,
 * and aborts when one breaks:
 *   - the load succeeds exactly when no error was reported, and returns a snapshot then;
 *   - the number of diagnostics stays within the bound, each has a message and the file;
 *   - a loaded snapshot is consistent: every target has a provider of the same snapshot,
 *     every tier entry is a target of the snapshot with a weight, every route has a
 *     primary target, base URLs are http(s) without a trailing slash, the port is set;
 *   - loading the same bytes twice gives the same diagnostics.
 * Built and run by scripts/fuzz (tests/fuzz/config.dict, seeds in corpus/config/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config.h"
#include "core/compat.h"

#define MAX_DIAGS 200 /* CFG__MAX_DIAGS */

static void die(const char *what)
{
    fprintf(stderr, "fuzz_config: invariant broken: %s\n", what);
    abort();
}

static bool is_target(const struct cfg *c, const struct cfg_target *t)
{
    return t >= c->targets && t < c->targets + c->n_targets;
}

static void check_tier(const struct cfg *c, const struct cfg_tier *t)
{
    for (size_t i = 0; i < t->n; i++) {
        if (!is_target(c, t->targets[i]))
            die("tier entry outside the snapshot's targets");
        if (t->weights[i] > 1000000)
            die("weight out of range");
    }
}

static void check_snapshot(const struct cfg *c)
{
    if (!c->listen_host || !c->listen_port || !c->admin_key || !c->file)
        die("listen, admin key or file unset");
    if (c->n_providers == 0 || c->n_targets == 0 || c->n_routes == 0)
        die("a required section is empty");
    for (size_t i = 0; i < c->n_providers; i++) {
        const struct cfg_provider *p = &c->providers[i];
        size_t len = p->base_url ? strlen(p->base_url) : 0;

        if (!p->id || len < 8 || (strncasecmp(p->base_url, "http://", 7) != 0 &&
                                  strncasecmp(p->base_url, "https://", 8) != 0))
            die("provider without id or http(s) base_url");
        if (p->base_url[len - 1] == '/')
            die("base_url keeps a trailing slash");
        for (size_t k = 0; k < p->n_keys; k++)
            if (!p->keys[k] || !p->keys[k][0])
                die("empty provider key");
        if (p->breaker.failure_rate <= 0 || p->breaker.failure_rate > 1)
            die("provider breaker failure_rate out of range");
    }
    for (size_t i = 0; i < c->n_targets; i++) {
        const struct cfg_target *t = &c->targets[i];

        if (!t->id || !t->model || !t->model[0])
            die("target without id or model");
        if (t->provider < c->providers || t->provider >= c->providers + c->n_providers)
            die("target provider outside the snapshot");
        if (t->canary_percent > 100)
            die("canary_percent out of range");
    }
    for (size_t i = 0; i < c->n_routes; i++) {
        const struct cfg_route *r = &c->routes[i];

        if (!r->id || (r->primary.n == 0) == (r->n_select == 0))
            die("route without id, or not exactly one of primary and select");
        for (size_t k = 0; k < r->n_select; k++)
            if (!r->select[k].route || r->select[k].route->n_select ||
                r->select[k].route < c->routes || r->select[k].route >= c->routes + c->n_routes)
                die("select rule naming no route, a select route, or one outside the snapshot");
        check_tier(c, &r->primary);
        check_tier(c, &r->equivalent);
        check_tier(c, &r->fallback);
        if (r->envelope.reserve_for_fallback_ms >= r->envelope.deadline_ms)
            die("reserve not below deadline");
        if (cfg_route_find(c, bsc_str_cstr(r->id)) == NULL)
            die("route lookup fails");
    }
    if (c->retry.base_ms > c->retry.max_ms)
        die("backoff base above max");
}

static void check_diags(const struct cfg_diags *d, bool ok)
{
    size_t errors = 0;

    if (d->n > MAX_DIAGS)
        die("too many diagnostics");
    for (size_t i = 0; i < d->n; i++) {
        if (!d->items[i].message || !d->items[i].message[0])
            die("empty diagnostic");
        if (!d->items[i].file || strcmp(d->items[i].file, "fuzz.yaml") != 0)
            die("diagnostic without the file name");
        errors += !d->items[i].warning;
    }
    if (ok != (errors == 0))
        die("success and errors disagree");
}

static bool same_diags(const struct cfg_diags *a, const struct cfg_diags *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (a->items[i].line != b->items[i].line || a->items[i].column != b->items[i].column ||
            a->items[i].warning != b->items[i].warning ||
            strcmp(a->items[i].message, b->items[i].message) != 0)
            return false;
    return true;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    /* Variables the seeds and the dictionary use; FUZZ_UNSET stays unset. */
    setenv("FUZZ_KEY", "sk-fuzz", 1);
    setenv("FUZZ_EMPTY", "", 1);
    setenv("FUZZ_PORT", "8080", 1);
    unsetenv("FUZZ_UNSET");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static FILE *devnull;
    struct cfg_diags d1 = {0}, d2 = {0};
    struct cfg *c1 = NULL, *c2 = NULL;
    enum bsc_err e1, e2;

    if (!devnull)
        devnull = fopen("/dev/null", "w");
    e1 = cfg_load_string("fuzz.yaml", (const char *)data, size, &c1, &d1);
    if (e1 == BSC_ENOMEM)
        goto out; /* libFuzzer's malloc limit, not a bug */
    if ((e1 == BSC_OK) != (c1 != NULL))
        die("return code and snapshot disagree");
    if (e1 != BSC_OK && e1 != BSC_EINVAL)
        die("unexpected return code");
    check_diags(&d1, e1 == BSC_OK);
    if (c1) {
        check_snapshot(c1);
        cfg_unref(cfg_ref(c1));
    }
    if (devnull)
        cfg_diags_print(&d1, devnull);

    e2 = cfg_load_string("fuzz.yaml", (const char *)data, size, &c2, &d2);
    if (e2 != BSC_ENOMEM && (e2 != e1 || !same_diags(&d1, &d2)))
        die("two loads of the same bytes differ");
out:
    cfg_unref(c1);
    cfg_unref(c2);
    cfg_diags_cleanup(&d1);
    cfg_diags_cleanup(&d2);
    return 0;
}
