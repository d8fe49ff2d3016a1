/* SPDX-License-Identifier: MIT */
/* test_envelope.c -- building a request's envelope: each X-Bascule-* header can only
 * tighten the route's policy, malformed values are EINVAL with a message; remaining time
 * and per-attempt timeouts with a fake clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/err.h"
#include "policy/envelope.h"

#define EXPECT_INT(ctx, got, want)                                                         \
    do {                                                                                   \
        long long g_ = (long long)(got), w_ = (long long)(want);                           \
        if (g_ != w_)                                                                      \
            fail_msg("%s: %s is %lld, want %lld", (ctx), #got, g_, w_);                    \
    } while (0)

#define NOW 1000000ull

static struct cfg_envelope route_default(void)
{
    return (struct cfg_envelope){
        .deadline_ms = 30000,
        .max_attempts = 3,
        .max_same_target_attempts = 2,
        .reserve_for_fallback_ms = 5000,
        .max_added_latency_ms = 10000,
        .max_cost_usd = -1.0,
        .allow_equivalent_failover = true,
        .allow_cross_model_fallback = false,
        .side_effects = CFG_SE_NONE,
        .on_stream_failure = CFG_SF_FAIL,
    };
}

static struct bsc_str s(const char *c)
{
    return bsc_str_cstr(c ? c : "");
}

/* One row: the route's switches, the four headers, and what must come out. */
struct env_row {
    const char *name;
    bool route_fallback;           /* allow_cross_model_fallback on the route */
    enum cfg_side_effects route_se;
    const char *deadline, *attempts, *fallback, *side_effects; /* NULL: absent */
    enum bsc_err err;
    const char *why_has; /* with BSC_EINVAL: a word the message must contain */
    uint64_t deadline_rel;
    uint32_t max_attempts, max_same;
    bool equiv, fb;
    enum cfg_side_effects se;
};

static const struct env_row env_rows[] = {
    {"no headers", false, CFG_SE_NONE, NULL, NULL, NULL, NULL, BSC_OK, NULL, 30000, 3, 2, true,
     false, CFG_SE_NONE},
    /* deadline: only smaller wins */
    {"shorter deadline", false, CFG_SE_NONE, "5000", NULL, NULL, NULL, BSC_OK, NULL, 5000, 3, 2,
     true, false, CFG_SE_NONE},
    {"longer deadline ignored", false, CFG_SE_NONE, "60000", NULL, NULL, NULL, BSC_OK, NULL,
     30000, 3, 2, true, false, CFG_SE_NONE},
    {"equal deadline", false, CFG_SE_NONE, "30000", NULL, NULL, NULL, BSC_OK, NULL, 30000, 3, 2,
     true, false, CFG_SE_NONE},
    {"deadline 1", false, CFG_SE_NONE, "1", NULL, NULL, NULL, BSC_OK, NULL, 1, 3, 2, true, false,
     CFG_SE_NONE},
    {"deadline with blanks", false, CFG_SE_NONE, " 7000\t", NULL, NULL, NULL, BSC_OK, NULL, 7000,
     3, 2, true, false, CFG_SE_NONE},
    {"deadline overflowing u64 is just large", false, CFG_SE_NONE, "99999999999999999999999",
     NULL, NULL, NULL, BSC_OK, NULL, 30000, 3, 2, true, false, CFG_SE_NONE},
    {"deadline 0", false, CFG_SE_NONE, "0", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0, 0, 0,
     false, false, 0},
    {"deadline negative", false, CFG_SE_NONE, "-5", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0,
     0, 0, false, false, 0},
    {"deadline plus sign", false, CFG_SE_NONE, "+5", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0,
     0, 0, false, false, 0},
    {"deadline fraction", false, CFG_SE_NONE, "5.5", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0,
     0, 0, false, false, 0},
    {"deadline words", false, CFG_SE_NONE, "soon", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0, 0,
     0, false, false, 0},
    {"deadline blank", false, CFG_SE_NONE, "   ", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0, 0,
     0, false, false, 0},
    {"deadline hex", false, CFG_SE_NONE, "0x10", NULL, NULL, NULL, BSC_EINVAL, "Deadline", 0, 0,
     0, false, false, 0},
    /* attempts: only fewer wins, same-target follows */
    {"one attempt", false, CFG_SE_NONE, NULL, "1", NULL, NULL, BSC_OK, NULL, 30000, 1, 1, true,
     false, CFG_SE_NONE},
    {"two attempts", false, CFG_SE_NONE, NULL, "2", NULL, NULL, BSC_OK, NULL, 30000, 2, 2, true,
     false, CFG_SE_NONE},
    {"more attempts ignored", false, CFG_SE_NONE, NULL, "10", NULL, NULL, BSC_OK, NULL, 30000, 3,
     2, true, false, CFG_SE_NONE},
    {"attempts 0", false, CFG_SE_NONE, NULL, "0", NULL, NULL, BSC_EINVAL, "Max-Attempts", 0, 0, 0,
     false, false, 0},
    {"attempts words", false, CFG_SE_NONE, NULL, "two", NULL, NULL, BSC_EINVAL, "Max-Attempts", 0,
     0, 0, false, false, 0},
    {"attempts huge", false, CFG_SE_NONE, NULL, "4294967297", NULL, NULL, BSC_OK, NULL, 30000, 3,
     2, true, false, CFG_SE_NONE},
    /* fallback: can only switch things off */
    {"fallback none", true, CFG_SE_NONE, NULL, NULL, "none", NULL, BSC_OK, NULL, 30000, 3, 2,
     false, false, CFG_SE_NONE},
    {"fallback equivalent", true, CFG_SE_NONE, NULL, NULL, "equivalent", NULL, BSC_OK, NULL,
     30000, 3, 2, true, false, CFG_SE_NONE},
    {"cross_model on a route that allows it", true, CFG_SE_NONE, NULL, NULL, "cross_model", NULL,
     BSC_OK, NULL, 30000, 3, 2, true, true, CFG_SE_NONE},
    {"cross_model cannot enable fallback", false, CFG_SE_NONE, NULL, NULL, "cross_model", NULL,
     BSC_OK, NULL, 30000, 3, 2, true, false, CFG_SE_NONE},
    {"fallback token case-insensitive", true, CFG_SE_NONE, NULL, NULL, " EQUIVALENT ", NULL,
     BSC_OK, NULL, 30000, 3, 2, true, false, CFG_SE_NONE},
    {"fallback unknown", true, CFG_SE_NONE, NULL, NULL, "all", NULL, BSC_EINVAL, "Fallback", 0, 0,
     0, false, false, 0},
    {"fallback blank", true, CFG_SE_NONE, NULL, NULL, " ", NULL, BSC_EINVAL, "Fallback", 0, 0, 0,
     false, false, 0},
    /* side effects: only toward write_possible */
    {"raise to read_only", false, CFG_SE_NONE, NULL, NULL, NULL, "read_only", BSC_OK, NULL, 30000,
     3, 2, true, false, CFG_SE_READ_ONLY},
    {"raise to write_possible", false, CFG_SE_NONE, NULL, NULL, NULL, "write_possible", BSC_OK,
     NULL, 30000, 3, 2, true, false, CFG_SE_WRITE_POSSIBLE},
    {"cannot lower write_possible", false, CFG_SE_WRITE_POSSIBLE, NULL, NULL, NULL, "none",
     BSC_OK, NULL, 30000, 3, 2, true, false, CFG_SE_WRITE_POSSIBLE},
    {"cannot lower to read_only", false, CFG_SE_WRITE_POSSIBLE, NULL, NULL, NULL, "read_only",
     BSC_OK, NULL, 30000, 3, 2, true, false, CFG_SE_WRITE_POSSIBLE},
    {"side effects unknown", false, CFG_SE_NONE, NULL, NULL, NULL, "maybe", BSC_EINVAL,
     "Side-Effects", 0, 0, 0, false, false, 0},
    /* all at once */
    {"everything tightened", true, CFG_SE_NONE, "2000", "1", "none", "write_possible", BSC_OK,
     NULL, 2000, 1, 1, false, false, CFG_SE_WRITE_POSSIBLE},
    {"one bad header fails the lot", true, CFG_SE_NONE, "2000", "1", "none", "sometimes",
     BSC_EINVAL, "Side-Effects", 0, 0, 0, false, false, 0},
};

static void test_tightening_table(void **state)
{
    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(env_rows); i++) {
        const struct env_row *r = &env_rows[i];
        struct cfg_envelope route = route_default();
        struct envelope_hdrs h = {
            .deadline_ms = s(r->deadline),
            .max_attempts = s(r->attempts),
            .fallback = s(r->fallback),
            .side_effects = s(r->side_effects),
        };
        struct envelope e, sentinel;
        const char *why = NULL;
        enum bsc_err err;

        route.allow_cross_model_fallback = r->route_fallback;
        route.side_effects = r->route_se;
        memset(&e, 0xa5, sizeof(e));
        sentinel = e;
        err = envelope_build(&route, &h, NOW, &e, &why);
        EXPECT_INT(r->name, err, r->err);
        if (err) {
            assert_non_null(why);
            if (!strstr(why, r->why_has))
                fail_msg("%s: why \"%s\" lacks \"%s\"", r->name, why, r->why_has);
            if (memcmp(&e, &sentinel, sizeof(e)) != 0)
                fail_msg("%s: *out changed on error", r->name);
            continue;
        }
        EXPECT_INT(r->name, e.start_ms, NOW);
        EXPECT_INT(r->name, e.deadline_ms, NOW + r->deadline_rel);
        EXPECT_INT(r->name, e.max_attempts, r->max_attempts);
        EXPECT_INT(r->name, e.max_same_target_attempts, r->max_same);
        EXPECT_INT(r->name, e.allow_equivalent, r->equiv);
        EXPECT_INT(r->name, e.allow_fallback, r->fb);
        EXPECT_INT(r->name, e.side_effects, r->se);
        /* Untouched by any header. */
        EXPECT_INT(r->name, e.reserve_for_fallback_ms, 5000);
        EXPECT_INT(r->name, e.max_added_latency_ms, 10000);
        EXPECT_INT(r->name, e.on_stream_failure, CFG_SF_FAIL);
        assert_true(e.max_cost_usd < 0);
    }
}

/* Property: over every combination of header values, nothing ends up looser than the
 * route, whatever the route allows. */
static void test_never_loosens(void **state)
{
    (void)state;
    static const char *const deadlines[] = {NULL, "1", "29999", "30000", "30001", "1000000"};
    static const char *const attempts[] = {NULL, "1", "2", "3", "4", "100"};
    static const char *const fallbacks[] = {NULL, "none", "equivalent", "cross_model"};
    static const char *const ses[] = {NULL, "none", "read_only", "write_possible"};
    unsigned checked = 0;

    for (int rf = 0; rf < 4; rf++) {
        for (int rse = 0; rse < CFG_SE_COUNT; rse++) {
            struct cfg_envelope route = route_default();

            route.allow_equivalent_failover = rf & 1;
            route.allow_cross_model_fallback = (rf >> 1) & 1;
            route.side_effects = (enum cfg_side_effects)rse;
            for (size_t a = 0; a < BSC_ARRAY_LEN(deadlines); a++)
                for (size_t b = 0; b < BSC_ARRAY_LEN(attempts); b++)
                    for (size_t c = 0; c < BSC_ARRAY_LEN(fallbacks); c++)
                        for (size_t d = 0; d < BSC_ARRAY_LEN(ses); d++) {
                            struct envelope_hdrs h = {s(deadlines[a]), s(attempts[b]),
                                                      s(fallbacks[c]), s(ses[d])};
                            struct envelope e;

                            assert_int_equal(envelope_build(&route, &h, NOW, &e, NULL), BSC_OK);
                            assert_true(e.deadline_ms <= NOW + route.deadline_ms);
                            assert_true(e.max_attempts <= route.max_attempts);
                            assert_true(e.max_same_target_attempts <= e.max_attempts);
                            assert_true(e.max_same_target_attempts >= 1);
                            assert_true(!e.allow_equivalent || route.allow_equivalent_failover);
                            assert_true(!e.allow_fallback || route.allow_cross_model_fallback);
                            assert_true(e.side_effects >= route.side_effects);
                            checked++;
                        }
        }
    }
    assert_int_equal(checked, 4 * 3 * 6 * 6 * 4 * 4);
}

static void test_null_headers_and_why(void **state)
{
    (void)state;
    struct cfg_envelope route = route_default();
    struct envelope_hdrs bad = {.deadline_ms = BSC_STR("x")};
    struct envelope e;

    assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
    assert_int_equal(e.deadline_ms, NOW + 30000);
    /* <why> may be NULL even on failure. */
    assert_int_equal(envelope_build(&route, &bad, NOW, &e, NULL), BSC_EINVAL);
}

static void test_route_edge_values(void **state)
{
    (void)state;
    struct cfg_envelope route = route_default();
    struct envelope e;

    /* A same-target cap above the attempt cap is clipped to it. */
    route.max_same_target_attempts = 5;
    assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
    assert_int_equal(e.max_same_target_attempts, 3);
    /* Zeros from a config that slipped past validation still give a usable envelope. */
    route.max_attempts = 0;
    route.max_same_target_attempts = 0;
    assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
    assert_int_equal(e.max_attempts, 1);
    assert_int_equal(e.max_same_target_attempts, 1);
    /* The deadline saturates instead of wrapping. */
    route = route_default();
    assert_int_equal(envelope_build(&route, NULL, UINT64_MAX - 10, &e, NULL), BSC_OK);
    assert_true(e.deadline_ms == UINT64_MAX);
    /* The route's cost limit and stream mode pass through. */
    route.max_cost_usd = 0.25;
    route.on_stream_failure = CFG_SF_BUFFER;
    assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
    assert_true(e.max_cost_usd == 0.25);
    assert_int_equal(e.on_stream_failure, CFG_SF_BUFFER);
}

static void test_remaining(void **state)
{
    (void)state;
    struct cfg_envelope route = route_default();
    struct envelope e;

    assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
    assert_int_equal(envelope_remaining_ms(&e, NOW), 30000);
    assert_int_equal(envelope_remaining_ms(&e, NOW + 29999), 1);
    assert_int_equal(envelope_remaining_ms(&e, NOW + 30000), 0);
    assert_int_equal(envelope_remaining_ms(&e, NOW + 90000), 0);
    assert_int_equal(envelope_remaining_ms(&e, 0), NOW + 30000); /* clock before start */
}

static void test_attempt_timeout(void **state)
{
    (void)state;
    static const struct {
        uint32_t reserve;
        uint64_t elapsed; /* since NOW, with a 30000 ms deadline */
        bool later;
        uint64_t want;
    } rows[] = {
        {5000, 0, false, 30000},  /* no later tier: everything */
        {5000, 0, true, 25000},   /* keep the reserve */
        {5000, 20000, true, 5000}, /* 10000 left: reserve would leave 5000 = half */
        {5000, 22000, true, 4000}, /* 8000 left: floor of half wins over 3000 */
        {5000, 29000, true, 500},
        {5000, 29999, true, 1},   /* 1 left: half is 0, bounded to 1 */
        {5000, 29999, false, 1},
        {5000, 30000, true, 1},   /* exhausted: still a valid timer value */
        {5000, 40000, false, 1},
        {0, 0, true, 30000},      /* no reserve configured */
        {40000, 0, true, 15000},  /* reserve above the deadline: half */
    };

    for (size_t i = 0; i < BSC_ARRAY_LEN(rows); i++) {
        struct cfg_envelope route = route_default();
        struct envelope e;
        char ctx[64];

        route.reserve_for_fallback_ms = rows[i].reserve;
        assert_int_equal(envelope_build(&route, NULL, NOW, &e, NULL), BSC_OK);
        snprintf(ctx, sizeof(ctx), "row %zu", i);
        EXPECT_INT(ctx, envelope_attempt_timeout_ms(&e, NOW + rows[i].elapsed, rows[i].later),
                   rows[i].want);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tightening_table),
        cmocka_unit_test(test_never_loosens),
        cmocka_unit_test(test_null_headers_and_why),
        cmocka_unit_test(test_route_edge_values),
        cmocka_unit_test(test_remaining),
        cmocka_unit_test(test_attempt_timeout),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
