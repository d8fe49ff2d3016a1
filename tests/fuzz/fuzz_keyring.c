/* SPDX-License-Identifier: MIT */
/* fuzz-sources: src/config/[a-z]*.c src/contract/[a-z]*.c */
/* fuzz_keyring.c -- libFuzzer target for the keyring merged into a snapshot
 * (cfg_keyring_merge): the document comes from the store, which a shared Redis makes as
 * trusted as whoever can write to it. Beyond "no crash, no leak, no UB" it checks, and aborts
 * when one breaks:
 *   - every merged client and team points only into the snapshot: its routes are the
 *     snapshot's routes, a client's team is one of the snapshot's teams;
 *   - a client's and a team's budgets are at most CFG_BUDGETS_MAX, each with a usd >= 0 and
 *     a route of the snapshot or none;
 *   - ids stay within their bounds; a file client keeps its id (no key takes it).
 * Built and run by scripts/fuzz (seeds in corpus/keyring/). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "core/str.h"

static const char yaml[] = "listen: \"127.0.0.1:8080\"\n"
                           "providers:\n"
                           "  p: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [\"sk\"] }\n"
                           "targets:\n"
                           "  t: { provider: p, model: m }\n"
                           "routes:\n"
                           "  chat: { primary: [t] }\n"
                           "  other: { primary: [t] }\n"
                           "clients:\n"
                           "  filed: { key: \"filed-key-0123456789\", routes: [chat] }\n";

static void die(const char *what)
{
    fprintf(stderr, "fuzz_keyring: invariant broken: %s\n", what);
    abort();
}

static void check_routes(const struct cfg *c, const struct cfg_route *const *routes, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (routes[i] < c->routes || routes[i] >= c->routes + c->n_routes)
            die("a route outside the snapshot");
}

static void check_budgets(const struct cfg *c, const struct cfg_budget_line *b, size_t n)
{
    if (n > CFG_BUDGETS_MAX)
        die("too many budgets");
    for (size_t i = 0; i < n; i++) {
        if (!(b[i].budget.usd >= 0) || b[i].budget.period >= CFG_PERIOD_COUNT)
            die("a budget without an amount or period");
        if (b[i].route && (b[i].route < c->routes || b[i].route >= c->routes + c->n_routes))
            die("a budget on a route outside the snapshot");
    }
}

static void check(const struct cfg *c)
{
    for (size_t i = 0; i < c->n_teams; i++) {
        const struct cfg_team *t = &c->teams[i];

        if (!t->id || !*t->id || strlen(t->id) > CFG_TEAM_ID_MAX)
            die("a team id out of bounds");
        check_routes(c, t->routes, t->n_routes);
        check_budgets(c, t->budgets, t->n_budgets);
    }
    if (c->n_clients < 1 || strcmp(c->clients[0].id, "filed") != 0 || c->clients[0].runtime)
        die("the file's client was changed");
    for (size_t i = 0; i < c->n_clients; i++) {
        const struct cfg_client *k = &c->clients[i];

        if (!k->id || !*k->id || strlen(k->id) > CFG_CLIENT_ID_MAX)
            die("a client id out of bounds");
        if (i > 0 && strcmp(k->id, "filed") == 0)
            die("a key took a file client's id");
        if (k->team && (k->team < c->teams || k->team >= c->teams + c->n_teams))
            die("a team outside the snapshot");
        check_routes(c, k->routes, k->n_routes);
        check_budgets(c, k->budgets, k->n_budgets);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cfg_diags d = {0};
    struct cfg *c = NULL;
    char warn[512] = "";
    enum bsc_err err;

    if (cfg_load_string("fuzz.yaml", yaml, sizeof(yaml) - 1, &c, &d) != BSC_OK) {
        cfg_diags_cleanup(&d);
        return 0; /* libFuzzer's malloc limit */
    }
    cfg_diags_cleanup(&d);
    err = cfg_keyring_merge(c, (const char *)data, size, warn, sizeof(warn));
    if (err != BSC_OK && err != BSC_EPARSE && err != BSC_ENOMEM)
        die("unexpected return code");
    if (err == BSC_OK)
        check(c);
    cfg_unref(c);
    return 0;
}
