/* SPDX-License-Identifier: MIT */
/* test_verdicts.c -- health/verdicts.h: the recent-request table (claim once, 404 for
 * unknown, expired or another client's requests, bounded count and age, an id reused by
 * another scope) and the per-target attempt windows and task tallies (ageing, the cap per
 * scope, own and shared verdicts). */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "health/verdicts.h"

/* cmocka 1.1 has no assert_double_equal: |a - b| <= eps, both values printed. */
#define assert_near(a, b, eps)                                                               \
    do {                                                                                     \
        double a_ = (a), b_ = (b);                                                           \
        if (!(fabs(a_ - b_) <= (eps)))                                                       \
            fail_msg("%s = %.12g, expected %.12g", #a, a_, b_);                              \
    } while (0)

static struct vd_request rq(const char *id, const char *scope, uint64_t at)
{
    return (struct vd_request){.id = id, .route = "chat", .target = "t1", .scope = scope,
                               .workflow = 3, .finish_ms = at};
}

static void put(struct verdicts *vs, const char *id, const char *scope, uint64_t at)
{
    struct vd_request r = rq(id, scope, at);

    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
}

static void test_claim_once(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);
    struct vd_claim c;

    (void)state;
    put(vs, "req_1", "anonymous", 100);
    assert_int_equal(verdicts_claim(vs, "req_1", "anonymous", 150, &c), BSC_OK);
    assert_string_equal(c.route, "chat");
    assert_string_equal(c.target, "t1");
    assert_int_equal(c.workflow, 3);
    /* The second verdict is a conflict, whoever sends it from the same scope. */
    assert_int_equal(verdicts_claim(vs, "req_1", "anonymous", 160, &c), BSC_EEXIST);
    assert_int_equal(verdicts_claim(vs, "req_2", "anonymous", 160, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, NULL, "anonymous", 160, &c), BSC_ENOTFOUND);
    verdicts_free(vs);
}

/* Records whose strings do not fit a slab slot live on the heap; both kinds are found,
 * evicted in ring order and freed (ASan checks the heap ones are freed exactly once). */
static void test_long_records(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    char id[VERDICTS_ID_MAX + 1], route[VERDICTS_ID_MAX + 1];
    struct vd_request big;
    struct vd_claim c;

    (void)state;
    memset(id, 'i', VERDICTS_ID_MAX);
    id[VERDICTS_ID_MAX] = '\0';
    memset(route, 'r', VERDICTS_ID_MAX);
    route[VERDICTS_ID_MAX] = '\0';
    big = (struct vd_request){.id = id, .route = route, .target = route, .scope = "anonymous",
                              .workflow = 1, .finish_ms = 100};
    assert_int_equal(verdicts_finished(vs, &big), BSC_OK);
    put(vs, "req_small", "anonymous", 101);
    assert_int_equal(verdicts_claim(vs, id, "anonymous", 110, &c), BSC_OK);
    assert_string_equal(c.route, route);
    assert_int_equal(verdicts_claim(vs, "req_small", "anonymous", 110, &c), BSC_OK);
    for (int i = 0; i < 6; i++) { /* push both out of the 4-slot ring, reusing their slots */
        char other[16];

        snprintf(other, sizeof(other), "req_%d", i);
        put(vs, other, "anonymous", 120);
    }
    assert_int_equal(verdicts_claim(vs, id, "anonymous", 130, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "req_5", "anonymous", 130, &c), BSC_OK);
    verdicts_free(vs);
}

static void test_scope(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);
    struct vd_claim c;

    (void)state;
    put(vs, "req_1", "auth:aaaa", 100);
    /* Another client learns nothing, not even that the id exists: 404, and the owner's
     * claim is still open afterwards. */
    assert_int_equal(verdicts_claim(vs, "req_1", "auth:bbbb", 110, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "req_1", "anonymous", 110, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "req_1", "auth:aaaa", 110, &c), BSC_OK);
    assert_int_equal(verdicts_claim(vs, "req_1", "auth:bbbb", 110, &c), BSC_ENOTFOUND);
    verdicts_free(vs);
}

static void test_expiry(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);
    struct vd_claim c;

    (void)state;
    put(vs, "old", "s", 100);
    put(vs, "new", "s", 900);
    assert_int_equal(verdicts_claim(vs, "old", "s", 1100, &c), BSC_OK); /* exactly the age */
    put(vs, "old2", "s", 100);
    assert_int_equal(verdicts_claim(vs, "old2", "s", 1101, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "new", "s", 1101, &c), BSC_OK);
    /* A finish time ahead of the reader's clock (another worker) is not expired. */
    put(vs, "ahead", "s", 5000);
    assert_int_equal(verdicts_claim(vs, "ahead", "s", 4000, &c), BSC_OK);
    verdicts_free(vs);
}

static void test_count_bound(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000000);
    struct vd_claim c;
    char id[32];

    (void)state;
    for (int i = 0; i < 10; i++) {
        snprintf(id, sizeof(id), "req_%d", i);
        put(vs, id, "s", 100 + (uint64_t)i);
    }
    /* The 4 newest are kept, the oldest went first. */
    for (int i = 0; i < 6; i++) {
        snprintf(id, sizeof(id), "req_%d", i);
        assert_int_equal(verdicts_claim(vs, id, "s", 200, &c), BSC_ENOTFOUND);
    }
    for (int i = 6; i < 10; i++) {
        snprintf(id, sizeof(id), "req_%d", i);
        assert_int_equal(verdicts_claim(vs, id, "s", 200, &c), BSC_OK);
    }
    verdicts_free(vs);
}

/* A client's own x-request-id reused: the newest request is the one judged. */
static void test_reused_id(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_request r = rq("same", "s", 100);
    struct vd_claim c;

    (void)state;
    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
    r.target = "t2";
    r.finish_ms = 200;
    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
    assert_int_equal(verdicts_claim(vs, "same", "s", 250, &c), BSC_OK);
    assert_string_equal(c.target, "t2");
    verdicts_free(vs);
}

/* A model of the table: the last <cap> requests in finish order, each claimable once. */
struct model_rec {
    char id[8], scope[4], target[16];
    bool claimed;
};

/* Against the model, with a table small enough that every index run wraps, collides and is
 * shortened by evictions: each claim finds exactly the newest live request of its id and
 * scope (its target names it), refuses a second claim, and finds nothing once evicted. */
static void test_index_matches_model(void **state)
{
    enum { CAP = 8, OPS = 40000 };
    struct model_rec ring[CAP];
    size_t head = 0, count = 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    struct verdicts *vs = verdicts_new(CAP, 1u << 30);

    (void)state;
    memset(ring, 0, sizeof(ring));
    for (unsigned op = 0; op < OPS; op++) {
        char id[8], scope[4];
        unsigned r;

        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        r = (unsigned)(x >> 32);
        snprintf(id, sizeof(id), "r%u", r % 11);
        snprintf(scope, sizeof(scope), "s%u", (r >> 8) % 2);
        if ((r >> 16) % 3) {
            struct model_rec *m = &ring[head];
            struct vd_request q = rq(id, scope, 100);

            snprintf(m->id, sizeof(m->id), "%s", id);
            snprintf(m->scope, sizeof(m->scope), "%s", scope);
            snprintf(m->target, sizeof(m->target), "t%u", op);
            m->claimed = false;
            q.target = m->target;
            assert_int_equal(verdicts_finished(vs, &q), BSC_OK);
            head = (head + 1) % CAP;
            count += count < CAP;
        } else {
            struct model_rec *want = NULL;
            struct vd_claim c;
            enum bsc_err err = verdicts_claim(vs, id, scope, 100, &c);

            for (size_t back = 1; back <= count && !want; back++) {
                struct model_rec *m = &ring[(head + CAP - back) % CAP];
                if (strcmp(m->id, id) == 0 && strcmp(m->scope, scope) == 0)
                    want = m;
            }
            if (!want) {
                assert_int_equal(err, BSC_ENOTFOUND);
            } else if (want->claimed) {
                assert_int_equal(err, BSC_EEXIST);
            } else {
                assert_int_equal(err, BSC_OK);
                assert_string_equal(c.target, want->target);
                want->claimed = true;
            }
        }
    }
    verdicts_free(vs);
}

static void test_bad_input(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_request r = rq("x", "s", 1);
    char long_id[VERDICTS_ID_MAX + 2];

    (void)state;
    assert_null(verdicts_new(0, 1000));
    memset(long_id, 'a', sizeof(long_id) - 1);
    long_id[sizeof(long_id) - 1] = '\0';
    r.id = long_id;
    assert_int_equal(verdicts_finished(vs, &r), BSC_EINVAL);
    r.id = "";
    assert_int_equal(verdicts_finished(vs, &r), BSC_EINVAL);
    r.id = "x";
    r.target = NULL;
    assert_int_equal(verdicts_finished(vs, &r), BSC_EINVAL);
    verdicts_free(vs);
    verdicts_free(NULL);
}

static const struct vd_policy POLICY = {.half_life_ms = 1000, .max_weight = 10.0};

static void task(struct verdicts *vs, const char *target, const char *scope, bool shared,
                 bool ok, uint64_t at)
{
    struct vd_verdict v = {.target = target, .scope = scope, .ok = ok, .shared = shared,
                           .at_ms = at};

    verdicts_task(vs, &v, &POLICY);
}

static void rates(struct verdicts *vs, const char *target, const char *scope, uint64_t at,
                  struct vd_rates *r)
{
    verdicts_rates(vs, target, scope, at, &POLICY, r);
}

/* Ids, scopes and targets of every length across the hash's 8-byte steps, each a prefix of
 * the next (so only the length tells them apart): each is found as itself and only so,
 * and an id and scope split at another byte are another request. */
static void test_lengths_at_word_edges(void **state)
{
    struct verdicts *vs = verdicts_new(128, 1000);
    char a[41], t[41], target_of[41][8];
    struct vd_request r;
    struct vd_claim c;

    (void)state;
    memset(a, 'a', sizeof(a));
    memset(t, 't', sizeof(t));
    for (size_t n = 1; n <= 40; n++) {
        char id[41], scope[41];

        memcpy(id, a, n);
        id[n] = '\0';
        memcpy(scope, a, n);
        scope[n] = '\0';
        snprintf(target_of[n], sizeof(target_of[n]), "t%zu", n);
        r = rq(id, scope, 100);
        r.target = target_of[n];
        assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
        t[n] = '\0'; /* target "t..t", n bytes: n outcomes, every other one ok */
        for (size_t k = 0; k < n; k++)
            verdicts_attempt(vs, t, k % 2 == 0);
        t[n] = 't';
    }
    for (size_t n = 1; n <= 40; n++) {
        char id[41], scope[42];
        struct vd_rates rr;

        memcpy(id, a, n);
        id[n] = '\0';
        memcpy(scope, a, n + 1);
        scope[n + 1] = '\0'; /* one byte more: another scope */
        assert_int_equal(verdicts_claim(vs, id, scope, 110, &c), BSC_ENOTFOUND);
        scope[n] = '\0';
        assert_int_equal(verdicts_claim(vs, id, scope, 110, &c), BSC_OK);
        assert_string_equal(c.target, target_of[n]);
        t[n] = '\0';
        rates(vs, t, NULL, 110, &rr);
        t[n] = 't';
        assert_int_equal(rr.attempts, n);
        assert_int_equal(rr.attempts_ok, (n + 1) / 2);
    }
    /* id "ab" of scope "c" is not id "a" of scope "bc" */
    put(vs, "ab", "c", 100);
    assert_int_equal(verdicts_claim(vs, "a", "bc", 110, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "ab", "c", 110, &c), BSC_OK);
    verdicts_free(vs);
}

/* A scope of VERDICTS_SCOPE_MAX bytes is kept, one byte more is not; a target id of
 * VERDICTS_ID_MAX bytes gets a window, one byte more does not. */
static void test_length_bounds(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);
    char scope[VERDICTS_SCOPE_MAX + 2], target[VERDICTS_ID_MAX + 2];
    struct vd_rates rr;
    struct vd_claim c;

    (void)state;
    memset(scope, 's', sizeof(scope) - 1);
    scope[VERDICTS_SCOPE_MAX + 1] = '\0';
    assert_int_equal(verdicts_finished(vs, &(struct vd_request){.id = "x", .route = "r",
                                                                .target = "t",
                                                                .scope = scope}),
                     BSC_EINVAL);
    scope[VERDICTS_SCOPE_MAX] = '\0';
    put(vs, "x", scope, 100);
    assert_int_equal(verdicts_claim(vs, "x", scope, 110, &c), BSC_OK);
    memset(target, 'g', sizeof(target) - 1);
    target[VERDICTS_ID_MAX + 1] = '\0';
    verdicts_attempt(vs, target, true);
    rates(vs, target, NULL, 110, &rr);
    assert_int_equal(rr.attempts, 0);
    target[VERDICTS_ID_MAX] = '\0';
    verdicts_attempt(vs, target, true);
    verdicts_attempt(vs, target, false);
    rates(vs, target, NULL, 110, &rr);
    assert_int_equal(rr.attempts, 2);
    assert_int_equal(rr.attempts_ok, 1);
    verdicts_free(vs);
}

/* A full target table (half its slots, long probe runs) of ids in pairs where one is the
 * other plus a byte: each keeps a window of its own. */
static void test_target_prefixes(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);

    (void)state;
    for (unsigned i = 0; i < VERDICTS_MAX_TARGETS / 2; i++) {
        char id[16];

        snprintf(id, sizeof(id), "g%u", i);
        verdicts_attempt(vs, id, true);
        snprintf(id, sizeof(id), "g%u_", i);
        verdicts_attempt(vs, id, false);
        verdicts_attempt(vs, id, false);
    }
    for (unsigned i = 0; i < VERDICTS_MAX_TARGETS / 2; i++) {
        struct vd_rates rr;
        char id[16];

        snprintf(id, sizeof(id), "g%u", i);
        rates(vs, id, NULL, 0, &rr);
        assert_int_equal(rr.attempts, 1);
        assert_int_equal(rr.attempts_ok, 1);
        snprintf(id, sizeof(id), "g%u_", i);
        rates(vs, id, NULL, 0, &rr);
        assert_int_equal(rr.attempts, 2);
        assert_int_equal(rr.attempts_ok, 0);
    }
    verdicts_free(vs);
}

/* Another scope reusing a request's id (a client may choose its X-Request-Id) neither
 * claims nor hides it: each scope finds its own request under the id. */
static void test_reused_id_other_scope(void **state)
{
    struct verdicts *vs = verdicts_new(8, 1000);
    struct vd_request r = rq("shared-id", "client:alice", 100);
    struct vd_claim c;

    (void)state;
    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
    r = rq("shared-id", "client:bob", 200); /* newer, same id */
    r.target = "t-bob";
    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
    assert_int_equal(verdicts_claim(vs, "shared-id", "client:alice", 250, &c), BSC_OK);
    assert_string_equal(c.target, "t1");
    assert_int_equal(verdicts_claim(vs, "shared-id", "client:bob", 250, &c), BSC_OK);
    assert_string_equal(c.target, "t-bob");
    assert_int_equal(verdicts_claim(vs, "shared-id", "client:alice", 260, &c), BSC_EEXIST);
    verdicts_free(vs);
}

static void test_windows(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;

    (void)state;
    rates(vs, "t1", NULL, 0, &r);
    assert_int_equal(r.attempts + r.attempts_ok, 0);
    assert_true(r.tasks == 0.0 && r.tasks_ok == 0.0);
    for (int i = 0; i < 10; i++)
        verdicts_attempt(vs, "t1", i % 2 == 0);
    task(vs, "t1", "a", true, false, 100);
    task(vs, "t2", "a", true, true, 100);
    rates(vs, "t1", NULL, 100, &r);
    assert_int_equal(r.attempts, 10);
    assert_int_equal(r.attempts_ok, 5);
    assert_true(r.tasks == 1.0 && r.tasks_ok == 0.0);
    rates(vs, "t2", NULL, 100, &r);
    assert_int_equal(r.attempts, 0);
    assert_true(r.tasks == 1.0 && r.tasks_ok == 1.0);
    verdicts_free(vs);
}

/* A verdict's weight halves every half-life; under VERDICTS_MIN_WEIGHT it is forgotten (a
 * lone verdict after four half-lives); a clock read behind the tally's ages nothing. */
static void test_tally_ages(void **state)
{
    struct vd_tally t = {0};

    (void)state;
    vd_tally_add(&t, false, 1000, &POLICY);
    vd_tally_add(&t, true, 1000, &POLICY);
    assert_true(t.n == 2.0 && t.ok == 1.0);
    vd_tally_age(&t, 2000, 1000); /* one half-life */
    assert_near(t.n, 1.0, 1e-12);
    assert_near(t.ok, 0.5, 1e-12);
    vd_tally_age(&t, 1500, 1000); /* behind: unchanged */
    assert_near(t.n, 1.0, 1e-12);
    vd_tally_age(&t, 5000, 1000); /* three more: 1/8, still counted */
    assert_near(t.n, 0.125, 1e-12);
    vd_tally_age(&t, 6000, 1000); /* 1/16 is the bound, still counted */
    assert_near(t.n, VERDICTS_MIN_WEIGHT, 1e-12);
    vd_tally_age(&t, 6001, 1000); /* just under it: forgotten */
    assert_true(t.n == 0.0 && t.ok == 0.0);
    /* Half-life 0: no ageing. */
    t = (struct vd_tally){.ok = 1.0, .n = 3.0, .at_ms = 10};
    vd_tally_age(&t, 1000000000, 0);
    assert_true(t.n == 3.0 && t.ok == 1.0);
}

/* One scope's weight is capped: past max_weight each verdict scales the sums back, so its
 * rate follows its verdicts but its weight against other scopes stays bounded. */
static void test_tally_cap(void **state)
{
    struct vd_policy p = {.half_life_ms = 0, .max_weight = 4.0};
    struct vd_tally t = {0};

    (void)state;
    for (int i = 0; i < 4; i++)
        vd_tally_add(&t, true, 100, &p);
    assert_true(t.n == 4.0 && t.ok == 4.0);
    vd_tally_add(&t, false, 100, &p); /* 5 verdicts, 4 ok -> weight 4, rate 4/5 */
    assert_near(t.n, 4.0, 1e-12);
    assert_near(t.ok, 3.2, 1e-12);
    for (int i = 0; i < 1000; i++)
        vd_tally_add(&t, false, 100, &p);
    assert_near(t.n, 4.0, 1e-12);
    assert_true(t.ok < 1e-9);
    /* A cap under 1 counts as 1: a verdict always weighs in. */
    p.max_weight = 0.0;
    t = (struct vd_tally){0};
    vd_tally_add(&t, true, 100, &p);
    vd_tally_add(&t, false, 100, &p);
    assert_near(t.n, 1.0, 1e-12);
    assert_near(t.ok, 0.5, 1e-12);
}

/* Shared tallies count for everyone; an own scope's only for itself. 1000 failures from
 * one trusted scope weigh as much as max_weight, against another's 10 successes. */
static void test_own_and_shared(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;

    (void)state;
    task(vs, "t", "alice", false, false, 100); /* own */
    rates(vs, "t", "bob", 100, &r);
    assert_true(r.tasks == 0.0);
    rates(vs, "t", NULL, 100, &r);
    assert_true(r.tasks == 0.0);
    rates(vs, "t", "alice", 100, &r);
    assert_true(r.tasks == 1.0 && r.tasks_ok == 0.0);
    for (int i = 0; i < 1000; i++)
        task(vs, "t", "carol", true, false, 100); /* trusted, capped at 10 */
    for (int i = 0; i < 10; i++)
        task(vs, "t", "dave", true, true, 100);
    rates(vs, "t", "bob", 100, &r);
    assert_near(r.tasks, 20.0, 1e-9);
    assert_near(r.tasks_ok, 10.0, 1e-9);
    rates(vs, "t", "alice", 100, &r); /* the shared ones and her own */
    assert_near(r.tasks, 21.0, 1e-9);
    /* Each tally is forgotten once under 1/16: a capped one (10) after eight half-lives. */
    rates(vs, "t", "alice", 100 + 4 * 1000 + 1, &r);
    assert_near(r.tasks, 20.0 * exp2(-4.001), 1e-9); /* the lone verdict is gone */
    rates(vs, "t", "alice", 100 + 8 * 1000 + 1, &r);
    assert_near(r.tasks, 0.0, 1e-12);
    /* A scope changed to trusted: its tally is shared from its next verdict. */
    task(vs, "t", "alice", true, false, 10000);
    rates(vs, "t", "bob", 10000, &r);
    assert_near(r.tasks, 1.0, 1e-12);
    verdicts_free(vs);
}

/* At most VERDICTS_SCOPES tallies per target: a new scope takes the lightest one's slot. */
static void test_scope_slots(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;
    char scope[16];

    (void)state;
    for (unsigned i = 0; i < VERDICTS_SCOPES; i++) {
        snprintf(scope, sizeof(scope), "s%u", i);
        task(vs, "t", scope, true, true, 100);
        if (i != 3)
            task(vs, "t", scope, true, true, 100); /* s3 is the lightest */
    }
    rates(vs, "t", NULL, 100, &r);
    assert_near(r.tasks, 2.0 * VERDICTS_SCOPES - 1, 1e-9);
    task(vs, "t", "newcomer", true, false, 100);
    rates(vs, "t", NULL, 100, &r);
    assert_near(r.tasks, 2.0 * VERDICTS_SCOPES - 1, 1e-9); /* s3's 1 -> newcomer's 1 */
    assert_near(r.tasks_ok, 2.0 * VERDICTS_SCOPES - 2, 1e-9);
    verdicts_free(vs);
}

/* Past VERDICTS_MAX_TARGETS ids, new targets are not tracked; known ones still are. */
static void test_target_bound(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;
    char id[32];

    (void)state;
    for (unsigned i = 0; i < VERDICTS_MAX_TARGETS + 10; i++) {
        snprintf(id, sizeof(id), "t%u", i);
        verdicts_attempt(vs, id, true);
    }
    rates(vs, "t0", NULL, 0, &r);
    assert_int_equal(r.attempts, 1);
    snprintf(id, sizeof(id), "t%u", VERDICTS_MAX_TARGETS + 5);
    rates(vs, id, NULL, 0, &r);
    assert_int_equal(r.attempts, 0);
    verdicts_attempt(vs, "t0", false);
    rates(vs, "t0", NULL, 0, &r);
    assert_int_equal(r.attempts, 2);
    verdicts_free(vs);
}

/* Workers record and claim at once: every claim of a thread's own ids succeeds exactly once
 * (run under TSan by make test-tsan). */
#define CONC_THREADS 4
#define CONC_PER_THREAD 500

struct conc_arg {
    struct verdicts *vs;
    int idx, claimed;
};

static void *conc_worker(void *p)
{
    struct conc_arg *a = p;
    struct vd_claim c;
    char id[32], scope[16];

    snprintf(scope, sizeof(scope), "s%d", a->idx);
    for (int i = 0; i < CONC_PER_THREAD; i++) {
        struct vd_request r;

        snprintf(id, sizeof(id), "w%d-%d", a->idx, i);
        r = rq(id, scope, 100);
        if (verdicts_finished(a->vs, &r) != BSC_OK)
            continue;
        verdicts_attempt(a->vs, "shared", i % 2 == 0);
        a->claimed += verdicts_claim(a->vs, id, scope, 100, &c) == BSC_OK;
        a->claimed -= verdicts_claim(a->vs, id, scope, 100, &c) == BSC_OK; /* never twice */
        task(a->vs, "shared", scope, true, true, 100);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    struct verdicts *vs = verdicts_new(CONC_THREADS * CONC_PER_THREAD, 1000);
    struct conc_arg args[CONC_THREADS];
    pthread_t th[CONC_THREADS];
    struct vd_rates r;

    (void)state;
    for (int i = 0; i < CONC_THREADS; i++) {
        args[i] = (struct conc_arg){.vs = vs, .idx = i};
        assert_int_equal(pthread_create(&th[i], NULL, conc_worker, &args[i]), 0);
    }
    for (int i = 0; i < CONC_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].claimed, CONC_PER_THREAD);
    }
    rates(vs, "shared", NULL, 100, &r);
    assert_int_equal(r.attempts, VERDICTS_WINDOW);
    assert_near(r.tasks_ok, CONC_THREADS * POLICY.max_weight, 1e-9);
    verdicts_free(vs);
}

/* ---- shards: one per worker, a claim searches them all ---- */

static void put_on(struct verdicts *vs, unsigned shard, const char *id, const char *route,
                   const char *scope, uint64_t at)
{
    struct vd_request r = rq(id, scope, at);

    r.route = route;
    r.shard = shard;
    assert_int_equal(verdicts_finished(vs, &r), BSC_OK);
}

/* A request finished on one worker's shard is claimed from any; once only. */
static void test_shard_claim_elsewhere(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(8, 1000, 2);
    struct vd_claim c;

    (void)state;
    put_on(vs, 1, "req_1", "chat", "s", 100);
    put_on(vs, 2, "req_2", "chat", "s", 100); /* shard numbers wrap: 2 is shard 0 */
    assert_int_equal(verdicts_claim(vs, "req_1", "s", 150, &c), BSC_OK);
    assert_string_equal(c.route, "chat");
    assert_int_equal(verdicts_claim(vs, "req_1", "s", 150, &c), BSC_EEXIST);
    assert_int_equal(verdicts_claim(vs, "req_2", "s", 150, &c), BSC_OK);
    assert_int_equal(verdicts_claim(vs, "req_3", "s", 150, &c), BSC_ENOTFOUND);
    verdicts_free(vs);
}

/* One id finished on two shards: the later finish is the one claimed, whichever shard holds
 * it, and the claim closes the id (the older one is not claimed after it). */
static void test_shard_newest_wins(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(8, 1000, 2);
    struct vd_claim c;

    (void)state;
    put_on(vs, 1, "dup", "newer", "s", 200);
    put_on(vs, 0, "dup", "older", "s", 100);
    put_on(vs, 0, "dup2", "older", "s", 100);
    put_on(vs, 1, "dup2", "newer", "s", 200);
    assert_int_equal(verdicts_claim(vs, "dup", "s", 250, &c), BSC_OK);
    assert_string_equal(c.route, "newer");
    assert_int_equal(verdicts_claim(vs, "dup", "s", 250, &c), BSC_EEXIST);
    assert_int_equal(verdicts_claim(vs, "dup2", "s", 250, &c), BSC_OK);
    assert_string_equal(c.route, "newer");
    verdicts_free(vs);
}

/* The age bound holds on every shard, however idle: a record past it is gone at the claim,
 * one finished ahead of the reader's clock is not. */
static void test_shard_expiry(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(8, 1000, 3);
    struct vd_claim c;

    (void)state;
    put_on(vs, 2, "old", "chat", "s", 100);
    put_on(vs, 1, "edge", "chat", "s", 100);
    put_on(vs, 0, "fresh", "chat", "s", 900);
    assert_int_equal(verdicts_claim(vs, "edge", "s", 1100, &c), BSC_OK); /* exactly the age */
    assert_int_equal(verdicts_claim(vs, "old", "s", 1101, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "fresh", "s", 1101, &c), BSC_OK);
    put_on(vs, 2, "ahead", "chat", "s", 5000);
    assert_int_equal(verdicts_claim(vs, "ahead", "s", 4000, &c), BSC_OK);
    verdicts_free(vs);
}

/* Another scope's request is found on no shard, and does not hide the owner's. */
static void test_shard_scope(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(8, 1000, 2);
    struct vd_claim c;

    (void)state;
    put_on(vs, 1, "req_1", "mine", "auth:aaaa", 100);
    put_on(vs, 0, "req_1", "theirs", "auth:bbbb", 200);
    assert_int_equal(verdicts_claim(vs, "req_1", "anonymous", 210, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "req_1", "auth:aaaa", 210, &c), BSC_OK);
    assert_string_equal(c.route, "mine");
    assert_int_equal(verdicts_claim(vs, "req_1", "auth:bbbb", 210, &c), BSC_OK);
    assert_string_equal(c.route, "theirs");
    verdicts_free(vs);
}

/* Each shard keeps max_requests / shards (rounded up): filling one evicts its own oldest,
 * never another shard's; the count is fixed at creation and 0 or more than the requests
 * is refused. */
static void test_shard_bound(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(5, 1000, 2); /* 3 a shard */
    struct vd_claim c;

    (void)state;
    assert_null(verdicts_new_sharded(4, 1000, 0));
    assert_null(verdicts_new_sharded(4, 1000, 5));
    put_on(vs, 0, "keep", "chat", "s", 100);
    put_on(vs, 1, "a", "chat", "s", 100);
    put_on(vs, 1, "b", "chat", "s", 100);
    put_on(vs, 1, "c", "chat", "s", 100);
    put_on(vs, 1, "d", "chat", "s", 100); /* evicts a */
    assert_int_equal(verdicts_claim(vs, "a", "s", 100, &c), BSC_ENOTFOUND);
    assert_int_equal(verdicts_claim(vs, "b", "s", 100, &c), BSC_OK);
    assert_int_equal(verdicts_claim(vs, "keep", "s", 100, &c), BSC_OK);
    verdicts_free(vs);
}

/* Workers each on their own shard while claims search all of them (under TSan too): every
 * claim succeeds exactly once, wherever the request was recorded. */
static void *shard_worker(void *p)
{
    struct conc_arg *a = p;
    char id[32];

    for (int i = 0; i < CONC_PER_THREAD; i++) {
        snprintf(id, sizeof(id), "w%d-%d", a->idx, i);
        put_on(a->vs, (unsigned)a->idx, id, "chat", "s", 100);
    }
    return NULL;
}

static void test_shard_concurrent(void **state)
{
    struct verdicts *vs = verdicts_new_sharded(CONC_THREADS * CONC_PER_THREAD, 1000, CONC_THREADS);
    struct conc_arg args[CONC_THREADS];
    pthread_t th[CONC_THREADS];
    struct vd_claim c;
    char id[32];
    int claimed = 0;

    (void)state;
    for (int i = 0; i < CONC_THREADS; i++) {
        args[i] = (struct conc_arg){.vs = vs, .idx = i};
        assert_int_equal(pthread_create(&th[i], NULL, shard_worker, &args[i]), 0);
    }
    for (int i = 0; i < CONC_PER_THREAD; i++) { /* claims racing the recording: some miss */
        snprintf(id, sizeof(id), "w%d-%d", i % CONC_THREADS, i);
        claimed += verdicts_claim(vs, id, "s", 100, &c) == BSC_OK;
    }
    for (int i = 0; i < CONC_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < CONC_PER_THREAD; i++) {
        snprintf(id, sizeof(id), "w%d-%d", i % CONC_THREADS, i);
        claimed += verdicts_claim(vs, id, "s", 100, &c) == BSC_OK;
    }
    assert_int_equal(claimed, CONC_PER_THREAD);
    verdicts_free(vs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_once),
        cmocka_unit_test(test_scope),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_count_bound),
        cmocka_unit_test(test_reused_id),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_windows),
        cmocka_unit_test(test_tally_ages),
        cmocka_unit_test(test_tally_cap),
        cmocka_unit_test(test_own_and_shared),
        cmocka_unit_test(test_scope_slots),
        cmocka_unit_test(test_reused_id_other_scope),
        cmocka_unit_test(test_target_bound),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_long_records),
        cmocka_unit_test(test_index_matches_model),
        cmocka_unit_test(test_shard_claim_elsewhere),
        cmocka_unit_test(test_shard_newest_wins),
        cmocka_unit_test(test_shard_expiry),
        cmocka_unit_test(test_shard_scope),
        cmocka_unit_test(test_shard_bound),
        cmocka_unit_test(test_shard_concurrent),
        cmocka_unit_test(test_lengths_at_word_edges),
        cmocka_unit_test(test_length_bounds),
        cmocka_unit_test(test_target_prefixes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
