/* SPDX-License-Identifier: MIT */
/* test_keyring.c -- run-time keys merged into a snapshot (config/keyring.c): live keys become
 * clients with their routes, limits and budget; revoked, malformed and id-taking keys are
 * skipped; a rotated key's old secret works until its grace ends; an expired key is refused;
 * a gateway whose keyring held a key is not open. admin.keys roles (config/admin_keys.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/clock.h"
#include "core/sha256.h"
#include "core/str.h"

static const char yaml[] =
    "listen: \"127.0.0.1:8080\"\n"
    "admin:\n"
    "  key: \"admin-key-0123456789abcdef\"\n"
    "  keys:\n"
    "    - { id: reader, key: \"reader-key-0123456789abcdef\", role: read }\n"
    "    - { id: ops, key: \"ops-key-0123456789abcdef\", role: admin }\n"
    "providers:\n"
    "  p: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [\"sk\"] }\n"
    "targets:\n"
    "  t: { provider: p, model: m }\n"
    "routes:\n"
    "  chat: { primary: [t] }\n"
    "  other: { primary: [t] }\n"
    "clients:\n"
    "  filed: { key: \"filed-key-0123456789\", routes: [chat] }\n";

static struct cfg *load(void)
{
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;

    assert_int_equal(cfg_load_string("gateway.yaml", yaml, strlen(yaml), &cfg, &d), BSC_OK);
    cfg_diags_cleanup(&d);
    return cfg;
}

static void hexhash(const char *secret, char *out)
{
    uint8_t h[32];

    bsc_sha256(secret, strlen(secret), h);
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", h[i]);
}

static char *doc(const char *fmt, ...)
{
    static char buf[8192];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return buf;
}

static void test_merge(void **state)
{
    struct cfg *cfg = load();
    char h1[65], h2[65], h3[65], warn[1024] = "";
    const char *d;
    const struct cfg_client *c;

    (void)state;
    hexhash("bsk_one", h1);
    hexhash("bsk_two", h2);
    hexhash("bsk_three", h3);
    d = doc("{\"rev\":3,\"keys\":["
            "{\"id\":\"key_a\",\"hash\":\"%s\",\"routes\":[\"chat\",\"gone\"],\"rpm\":7,"
            "\"budget\":{\"usd\":5,\"period\":\"day\"}},"
            "{\"id\":\"key_b\",\"hash\":\"%s\",\"routes\":[\"*\"],\"revoked_ms\":1},"
            "{\"id\":\"filed\",\"hash\":\"%s\",\"routes\":[\"*\"]},"
            "{\"id\":\"key_c\",\"hash\":\"nothex\",\"routes\":[\"*\"]}]}",
            h1, h2, h3);
    assert_int_equal(cfg_keyring_merge(cfg, d, strlen(d), warn, sizeof(warn)), BSC_OK);
    assert_int_equal(cfg->n_clients, 2); /* filed + key_a */
    assert_non_null(strstr(warn, "key 'key_a': names a route the config does not have"));
    assert_non_null(strstr(warn, "key 'filed': has the id of a client of the config file"));
    assert_non_null(strstr(warn, "key 'key_c': has no valid hash"));
    c = cfg_client_by_key(cfg, BSC_STR("bsk_one"));
    assert_non_null(c);
    assert_string_equal(c->id, "key_a");
    assert_true(c->runtime);
    assert_int_equal(c->rpm, 7);
    assert_true(c->budget.usd == 5.0 && c->budget.period == CFG_PERIOD_DAY);
    assert_true(cfg_client_allows(c, cfg_route_find(cfg, BSC_STR("chat"))));
    assert_false(cfg_client_allows(c, cfg_route_find(cfg, BSC_STR("other"))));
    assert_null(cfg_client_by_key(cfg, BSC_STR("bsk_two"))); /* revoked */
    assert_null(cfg_client_by_key(cfg, BSC_STR("bsk_three"))); /* took a file id */
    assert_string_equal(cfg_client_by_key(cfg, BSC_STR("filed-key-0123456789"))->id, "filed");
    assert_int_equal(cfg_keyring_merge(cfg, "[1]", 3, NULL, 0), BSC_EPARSE);
    cfg_unref(cfg);
}

/* Teams merge before keys: a key points at its team, whose routes bound its own; a key of a
 * team the document lacks is skipped; `budgets` keep their routes; a team without routes
 * bounds nothing. */
static void test_teams(void **state)
{
    struct cfg *cfg = load();
    char h1[65], h2[65], h3[65], warn[1024] = "";
    const struct cfg_route *chat, *other;
    const struct cfg_client *c;
    const char *d;

    (void)state;
    hexhash("bsk_one", h1);
    hexhash("bsk_two", h2);
    hexhash("bsk_three", h3);
    d = doc("{\"rev\":1,\"teams\":["
            "{\"id\":\"sup\",\"routes\":[\"chat\"],\"rpm\":9,\"budget\":{\"usd\":7,\"period\":\"month\"},"
            "\"budgets\":[{\"usd\":1,\"period\":\"day\",\"route\":\"chat\"},"
            "{\"usd\":2,\"route\":\"nope\"}]},"
            "{\"id\":\"open\"}],\"keys\":["
            "{\"id\":\"key_a\",\"hash\":\"%s\",\"routes\":[\"*\"],\"team\":\"sup\","
            "\"budgets\":[{\"usd\":3,\"period\":\"total\",\"route\":\"other\"}]},"
            "{\"id\":\"key_b\",\"hash\":\"%s\",\"routes\":[\"*\"],\"team\":\"ghost\"},"
            "{\"id\":\"key_c\",\"hash\":\"%s\",\"routes\":[\"other\"],\"team\":\"open\"}]}",
            h1, h2, h3);
    assert_int_equal(cfg_keyring_merge(cfg, d, strlen(d), warn, sizeof(warn)), BSC_OK);
    chat = cfg_route_find(cfg, BSC_STR("chat"));
    other = cfg_route_find(cfg, BSC_STR("other"));
    assert_int_equal(cfg->n_teams, 2);
    assert_int_equal(cfg->teams[0].rpm, 9);
    assert_true(cfg->teams[0].budget.usd == 7.0);
    assert_int_equal(cfg->teams[0].n_budgets, 1); /* the one on an unknown route skipped */
    assert_true(cfg->teams[0].budgets[0].route == chat);
    assert_non_null(strstr(warn, "team 'sup': has a budget on a route the config does not have"));
    c = cfg_client_by_key(cfg, BSC_STR("bsk_one"));
    assert_non_null(c);
    assert_true(c->team == &cfg->teams[0]);
    assert_int_equal(c->n_budgets, 1);
    assert_true(c->budgets[0].route == other && c->budgets[0].budget.period == CFG_PERIOD_TOTAL);
    assert_true(cfg_client_allows(c, chat));
    assert_false(cfg_client_allows(c, other)); /* the team's list bounds the key's "*" */
    assert_null(cfg_client_by_key(cfg, BSC_STR("bsk_two")));
    assert_non_null(strstr(warn, "key 'key_b': names a team the keyring does not have"));
    c = cfg_client_by_key(cfg, BSC_STR("bsk_three"));
    assert_true(cfg_client_allows(c, other)); /* a team without routes bounds nothing */
    assert_false(cfg_client_allows(c, chat));
    assert_true(cfg_team_find(cfg, BSC_STR("open")) == &cfg->teams[1]);
    cfg_unref(cfg);
}

static void test_grace_and_expiry(void **state)
{
    struct cfg *cfg = load();
    char hnew[65], hold[65], hexp[65], hsnew[65], hsold[65];
    unsigned long long now = (unsigned long long)bsc_wall_ms();
    const char *d;

    (void)state;
    hexhash("bsk_new", hnew);
    hexhash("bsk_old", hold);
    hexhash("bsk_exp", hexp);
    hexhash("bsk_s_new", hsnew);
    hexhash("bsk_s_old", hsold);
    d = doc("{\"rev\":1,\"keys\":["
            "{\"id\":\"key_r\",\"hash\":\"%s\",\"old_hash\":\"%s\",\"old_until_ms\":%llu,"
            "\"routes\":[\"chat\"]},"
            "{\"id\":\"key_s\",\"hash\":\"%s\",\"old_hash\":\"%s\",\"old_until_ms\":%llu,"
            "\"routes\":[\"chat\"]},"
            "{\"id\":\"key_e\",\"hash\":\"%s\",\"expires_ms\":%llu,\"routes\":[\"chat\"]}]}",
            hnew, hold, now + 60000, hsnew, hsold, now - 1, hexp, now - 1);
    assert_int_equal(cfg_keyring_merge(cfg, d, strlen(d), NULL, 0), BSC_OK);
    assert_string_equal(cfg_client_by_key(cfg, BSC_STR("bsk_new"))->id, "key_r");
    assert_string_equal(cfg_client_by_key(cfg, BSC_STR("bsk_old"))->id, "key_r"); /* grace */
    assert_string_equal(cfg_client_by_key(cfg, BSC_STR("bsk_s_new"))->id, "key_s");
    assert_null(cfg_client_by_key(cfg, BSC_STR("bsk_s_old"))); /* its grace is over */
    assert_null(cfg_client_by_key(cfg, BSC_STR("bsk_exp")));   /* key_e expired */
    cfg_unref(cfg);
}

static void test_open_gateway(void **state)
{
    static const char open_yaml[] =
        "listen: \"127.0.0.1:8080\"\n"
        "providers:\n"
        "  p: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [\"sk\"] }\n"
        "targets:\n"
        "  t: { provider: p, model: m }\n"
        "routes:\n"
        "  chat: { primary: [t] }\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    const char *only_revoked = "{\"rev\":2,\"keys\":[{\"id\":\"key_x\",\"hash\":\"00\",\"revoked_ms\":5}]}";

    (void)state;
    assert_int_equal(cfg_load_string("g.yaml", open_yaml, strlen(open_yaml), &cfg, &d), BSC_OK);
    cfg_diags_cleanup(&d);
    assert_true(cfg_open(cfg));
    assert_int_equal(cfg_keyring_merge(cfg, "{\"rev\":0,\"keys\":[]}", 20, NULL, 0), BSC_OK);
    assert_true(cfg_open(cfg));
    assert_int_equal(cfg_keyring_merge(cfg, only_revoked, strlen(only_revoked), NULL, 0), BSC_OK);
    assert_int_equal(cfg->n_clients, 0);
    assert_false(cfg_open(cfg)); /* revoking the last key does not open the gateway */
    cfg_unref(cfg);
}

static void test_roles(void **state)
{
    struct cfg *cfg = load();
    const char *id = NULL;

    (void)state;
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR("admin-key-0123456789abcdef"), &id),
                     CFG_ADMIN_ROLE_ADMIN);
    assert_string_equal(id, "admin");
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR("reader-key-0123456789abcdef"), &id),
                     CFG_ADMIN_ROLE_READ);
    assert_string_equal(id, "reader");
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR("ops-key-0123456789abcdef"), &id),
                     CFG_ADMIN_ROLE_ADMIN);
    assert_string_equal(id, "ops");
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR("reader-key-0123456789abcde"), &id),
                     CFG_ADMIN_ROLE_NONE);
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR("filed-key-0123456789"), NULL),
                     CFG_ADMIN_ROLE_NONE);
    assert_int_equal(cfg_admin_role_of(cfg, BSC_STR(""), NULL), CFG_ADMIN_ROLE_NONE);
    cfg_unref(cfg);
}

static void test_role_errors(void **state)
{
    static const char bad[] =
        "listen: \"127.0.0.1:8080\"\n"
        "admin:\n"
        "  keys:\n"
        "    - { id: a, key: \"k-0123456789abcdef\", role: boss }\n"
        "    - { id: a, key: \"k-0123456789abcdeX\", role: read }\n"
        "providers:\n"
        "  p: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [\"sk\"] }\n"
        "targets:\n"
        "  t: { provider: p, model: m }\n"
        "routes:\n"
        "  chat: { primary: [t] }\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    bool dup = false, role = false;

    (void)state;
    assert_int_equal(cfg_load_string("g.yaml", bad, strlen(bad), &cfg, &d), BSC_EINVAL);
    for (size_t i = 0; i < d.n; i++) {
        dup |= strstr(d.items[i].message, "is used twice") != NULL;
        role |= strstr(d.items[i].message, "role") != NULL;
    }
    assert_true(dup);
    assert_true(role);
    cfg_diags_cleanup(&d);
}

static void test_admin_key_is_client_key(void **state)
{
    static const char bad[] =
        "listen: \"127.0.0.1:8080\"\n"
        "admin:\n"
        "  keys: [{ id: ops, key: \"shared-key-0123456789\", role: admin }]\n"
        "providers:\n"
        "  p: { kind: openai, base_url: \"http://127.0.0.1:9/v1\", keys: [\"sk\"] }\n"
        "targets:\n"
        "  t: { provider: p, model: m }\n"
        "routes:\n"
        "  chat: { primary: [t] }\n"
        "clients:\n"
        "  alice: { key: \"shared-key-0123456789\", routes: [chat] }\n";
    struct cfg_diags d = {0};
    struct cfg *cfg = NULL;
    bool found = false;

    (void)state;
    assert_int_equal(cfg_load_string("g.yaml", bad, strlen(bad), &cfg, &d), BSC_EINVAL);
    for (size_t i = 0; i < d.n; i++) {
        found |= strstr(d.items[i].message, "admin.keys 'ops': is the key of client 'alice'") != NULL;
        assert_null(strstr(d.items[i].message, "shared-key"));
    }
    assert_true(found);
    cfg_diags_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_teams),
        cmocka_unit_test(test_grace_and_expiry),
        cmocka_unit_test(test_open_gateway),
        cmocka_unit_test(test_roles),
        cmocka_unit_test(test_role_errors),
        cmocka_unit_test(test_admin_key_is_client_key),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
