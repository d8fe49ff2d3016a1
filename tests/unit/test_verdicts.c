/* SPDX-License-Identifier: MIT */
/* test_verdicts.c -- health/verdicts.h: the recent-request table (claim once, 404 for
 * unknown, expired or another client's requests, bounded count and age) and the
 * per-target windows of attempt outcomes and task verdicts. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "health/verdicts.h"

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

static void test_windows(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;

    (void)state;
    verdicts_rates(vs, "t1", &r);
    assert_int_equal(r.attempts + r.attempts_ok + r.tasks + r.tasks_ok, 0);
    for (int i = 0; i < 10; i++)
        verdicts_attempt(vs, "t1", i % 2 == 0);
    verdicts_task(vs, "t1", false);
    verdicts_task(vs, "t2", true);
    verdicts_rates(vs, "t1", &r);
    assert_int_equal(r.attempts, 10);
    assert_int_equal(r.attempts_ok, 5);
    assert_int_equal(r.tasks, 1);
    assert_int_equal(r.tasks_ok, 0);
    verdicts_rates(vs, "t2", &r);
    assert_int_equal(r.attempts, 0);
    assert_int_equal(r.tasks_ok, 1);
    verdicts_free(vs);
}

/* The window holds the last VERDICTS_WINDOW outcomes: old successes roll out. */
static void test_window_slides(void **state)
{
    struct verdicts *vs = verdicts_new(4, 1000);
    struct vd_rates r;

    (void)state;
    for (unsigned i = 0; i < VERDICTS_WINDOW; i++)
        verdicts_task(vs, "t", true);
    for (unsigned i = 0; i < 30; i++)
        verdicts_task(vs, "t", false);
    verdicts_rates(vs, "t", &r);
    assert_int_equal(r.tasks, VERDICTS_WINDOW);
    assert_int_equal(r.tasks_ok, VERDICTS_WINDOW - 30);
    for (unsigned i = 0; i < 3 * VERDICTS_WINDOW; i++)
        verdicts_task(vs, "t", false);
    verdicts_rates(vs, "t", &r);
    assert_int_equal(r.tasks_ok, 0);
    for (unsigned i = 0; i < 7; i++)
        verdicts_task(vs, "t", true);
    verdicts_rates(vs, "t", &r);
    assert_int_equal(r.tasks_ok, 7);
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
    verdicts_rates(vs, "t0", &r);
    assert_int_equal(r.attempts, 1);
    snprintf(id, sizeof(id), "t%u", VERDICTS_MAX_TARGETS + 5);
    verdicts_rates(vs, id, &r);
    assert_int_equal(r.attempts, 0);
    verdicts_attempt(vs, "t0", false);
    verdicts_rates(vs, "t0", &r);
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
        verdicts_task(a->vs, "shared", true);
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
    verdicts_rates(vs, "shared", &r);
    assert_int_equal(r.attempts, VERDICTS_WINDOW);
    assert_int_equal(r.tasks_ok, VERDICTS_WINDOW);
    verdicts_free(vs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_claim_once),   cmocka_unit_test(test_scope),
        cmocka_unit_test(test_expiry),       cmocka_unit_test(test_count_bound),
        cmocka_unit_test(test_reused_id),    cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_windows),      cmocka_unit_test(test_window_slides),
        cmocka_unit_test(test_target_bound), cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_long_records),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
