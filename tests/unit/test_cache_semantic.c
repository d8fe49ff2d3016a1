/* SPDX-License-Identifier: MIT */
/* test_cache_semantic.c -- the semantic cache's index (cache/semantic.h): normalisation and
 * cosine, a close vector hits and a far one misses at the threshold (limit-1/limit), the
 * closest of several wins, grouping by context (the same vector in another context misses),
 * the TTL, the per-route entry cap and the byte bound with
 * the least recently used evicted first, a different dimension refused, dropping a route.
 * With BSC_SEM_BENCH=1 it also times lookups among 100,000 entries of one context
 * (docs/internals/cache.md states the figure). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "cache/semantic.h"

#define DIM 16

static struct cache_key ctx_n(unsigned n)
{
    struct cache_key k;
    char text[32];

    snprintf(text, sizeof(text), "ctx-%u", n);
    bsc_sha256(text, strlen(text), k.d);
    return k;
}

static const struct cache_meta META = {.stream = false, .cost_usd = 0.25, .stored_ms = 1000};
static const struct cache_sem_bounds ROOMY = {.limit_bytes = 1u << 24, .max_entries = 1000};

/* The unit vector along axis <a>, tilted towards axis <b> by <t> (0: none). */
static void vec_axis(float *v, size_t a, size_t b, float t)
{
    memset(v, 0, DIM * sizeof(*v));
    v[a] = 1.0f;
    v[b] += t;
    assert_true(cache_sem_normalize(v, DIM));
}

static enum bsc_err put(struct cache_sem *s, unsigned ctx, const char *route, const float *v,
                        const char *body, uint64_t ttl, uint64_t now,
                        const struct cache_sem_bounds *b)
{
    struct cache_key k = ctx_n(ctx);

    return cache_sem_put(s, &k, bsc_str_cstr(route), v, DIM, bsc_str_cstr(body), &META, ttl, now,
                         b);
}

static bool get(struct cache_sem *s, unsigned ctx, const float *v, double min, uint64_t now,
                char *out, size_t len)
{
    struct bsc_buf b;
    struct cache_meta meta;
    struct cache_key k = ctx_n(ctx);
    double sim = 0;
    bool ok;

    bsc_buf_init(&b, 1u << 20);
    ok = cache_sem_get(s, &k, v, DIM, min, now, &b, &meta, &sim);
    if (ok && out)
        snprintf(out, len, "%.*s", (int)b.len, b.p ? b.p : "");
    if (ok)
        assert_true(sim >= min);
    bsc_buf_cleanup(&b);
    return ok;
}

static void test_normalize_and_cosine(void **state)
{
    float a[3] = {3, 4, 0}, z[3] = {0, 0, 0}, bad[3] = {1, NAN, 0}, b[3] = {0, 4, 3};

    (void)state;
    assert_true(cache_sem_normalize(a, 3));
    assert_float_equal(a[0], 0.6, 1e-6);
    assert_float_equal(a[1], 0.8, 1e-6);
    assert_false(cache_sem_normalize(z, 3));
    assert_false(cache_sem_normalize(bad, 3));
    assert_true(cache_sem_normalize(b, 3));
    assert_float_equal(cache_sem_dot(a, a, 3), 1.0, 1e-6);
    assert_float_equal(cache_sem_dot(a, b, 3), 0.64, 1e-6);
}

static void test_threshold(void **state)
{
    struct cache_sem *s = cache_sem_new();
    float stored[DIM], near[DIM], far[DIM];
    char got[64];
    double cos_near;

    (void)state;
    vec_axis(stored, 0, 1, 0);
    vec_axis(near, 0, 1, 0.2f); /* cosine 1/sqrt(1.04) = 0.9806 */
    vec_axis(far, 2, 3, 0);     /* orthogonal */
    cos_near = cache_sem_dot(stored, near, DIM);
    assert_int_equal(put(s, 1, "r", stored, "answer", 1000, 0, &ROOMY), BSC_OK);
    assert_true(get(s, 1, near, cos_near - 1e-6, 10, got, sizeof(got)));
    assert_string_equal(got, "answer");
    assert_false(get(s, 1, near, cos_near + 1e-4, 10, NULL, 0));
    assert_false(get(s, 1, far, 0.5, 10, NULL, 0));
    assert_true(get(s, 1, stored, 1.0 - 1e-6, 10, NULL, 0)); /* min_similarity 1: itself */
    cache_sem_free(s);
}

static void test_closest_wins(void **state)
{
    struct cache_sem *s = cache_sem_new();
    float a[DIM], b[DIM], q[DIM];
    char got[64];

    (void)state;
    vec_axis(a, 0, 1, 0.5f);
    vec_axis(b, 0, 1, 0.1f);
    vec_axis(q, 0, 1, 0.12f);
    assert_int_equal(put(s, 1, "r", a, "A", 1000, 0, &ROOMY), BSC_OK);
    assert_int_equal(put(s, 1, "r", b, "B", 1000, 0, &ROOMY), BSC_OK);
    assert_true(get(s, 1, q, 0.5, 1, got, sizeof(got)));
    assert_string_equal(got, "B");
    cache_sem_free(s);
}

static void test_grouped_by_context(void **state)
{
    struct cache_sem *s = cache_sem_new();
    float v[DIM];
    char got[64];

    (void)state;
    vec_axis(v, 0, 1, 0);
    assert_int_equal(put(s, 1, "r", v, "one", 1000, 0, &ROOMY), BSC_OK);
    assert_false(get(s, 2, v, 0.9, 1, NULL, 0)); /* same question, other context */
    assert_int_equal(put(s, 2, "r", v, "two", 1000, 0, &ROOMY), BSC_OK);
    assert_true(get(s, 1, v, 0.9, 1, got, sizeof(got)));
    assert_string_equal(got, "one");
    assert_true(get(s, 2, v, 0.9, 1, got, sizeof(got)));
    assert_string_equal(got, "two");
    cache_sem_free(s);
}

static void test_ttl(void **state)
{
    struct cache_sem *s = cache_sem_new();
    float v[DIM], w[DIM];
    char got[64];
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    vec_axis(v, 0, 1, 0);
    vec_axis(w, 4, 5, 0);
    assert_int_equal(put(s, 1, "r", v, "short", 1000, 100, &ROOMY), BSC_OK);
    assert_int_equal(put(s, 1, "r", w, "other", 5000, 0, &ROOMY), BSC_OK);
    assert_true(get(s, 1, v, 0.9, 1099, got, sizeof(got)));
    assert_string_equal(got, "short");
    assert_false(get(s, 1, v, 0.9, 1100, NULL, 0)); /* expired: dropped */
    cache_sem_usage(s, &n, &bytes, &ev);
    assert_int_equal(n, 1);
    assert_true(get(s, 1, w, 0.9, 1100, got, sizeof(got)));
    assert_string_equal(got, "other");
    cache_sem_free(s);
}

static void test_route_cap_lru(void **state)
{
    struct cache_sem *s = cache_sem_new();
    struct cache_sem_bounds b = {.limit_bytes = 1u << 24, .max_entries = 3};
    float v[6][DIM];
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    for (size_t i = 0; i < 6; i++)
        vec_axis(v[i], i, i, 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(put(s, 1, "r", v[i], "x", 1000, 0, &b), BSC_OK);
    assert_int_equal(put(s, 9, "other", v[5], "y", 1000, 0, &b), BSC_OK);
    assert_true(get(s, 1, v[0], 0.9, 1, NULL, 0)); /* 0 is now the most recent of r */
    assert_int_equal(put(s, 1, "r", v[3], "x", 1000, 0, &b), BSC_OK); /* cap: 1 goes */
    assert_false(get(s, 1, v[1], 0.9, 1, NULL, 0));
    assert_true(get(s, 1, v[0], 0.9, 1, NULL, 0));
    assert_true(get(s, 1, v[2], 0.9, 1, NULL, 0));
    assert_true(get(s, 1, v[3], 0.9, 1, NULL, 0));
    assert_true(get(s, 9, v[5], 0.9, 1, NULL, 0)); /* another route's entries are its own */
    cache_sem_usage(s, &n, &bytes, &ev);
    assert_int_equal(n, 4);
    assert_int_equal(ev, 1);
    cache_sem_free(s);
}

static void test_byte_bound(void **state)
{
    struct cache_sem *s = cache_sem_new();
    uint64_t one = cache_sem_charge(1, 1000, DIM);
    struct cache_sem_bounds b = {.max_entries = 1000};
    char body[1001];
    float v[4][DIM];
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    memset(body, 'a', 1000);
    body[1000] = '\0';
    for (size_t i = 0; i < 4; i++)
        vec_axis(v[i], i, i, 0);
    /* Room for three entries and their groups (one group each), not four. */
    b.limit_bytes = 3 * (one + 200) + 100;
    assert_int_equal(put(s, 1, "r", v[0], body, 1000, 0, &b), BSC_OK);
    assert_int_equal(put(s, 2, "r", v[1], body, 1000, 0, &b), BSC_OK);
    assert_int_equal(put(s, 3, "r", v[2], body, 1000, 0, &b), BSC_OK);
    assert_true(get(s, 1, v[0], 0.9, 1, NULL, 0));
    assert_int_equal(put(s, 4, "r", v[3], body, 1000, 0, &b), BSC_OK);
    cache_sem_usage(s, &n, &bytes, &ev);
    assert_true(bytes <= b.limit_bytes);
    assert_int_equal(n, 3);
    assert_false(get(s, 2, v[1], 0.9, 1, NULL, 0)); /* the least recently used */
    assert_true(get(s, 1, v[0], 0.9, 1, NULL, 0));
    /* An entry alone larger than the bound is refused. */
    b.limit_bytes = one - 1;
    assert_int_equal(put(s, 5, "r", v[0], body, 1000, 0, &b), BSC_ELIMIT);
    cache_sem_free(s);
}

static void test_dimension_and_drop(void **state)
{
    struct cache_sem *s = cache_sem_new();
    struct cache_key k = ctx_n(1);
    float v[DIM], w[DIM * 2] = {1};
    size_t n;
    uint64_t bytes, ev;

    (void)state;
    vec_axis(v, 0, 0, 0);
    assert_int_equal(put(s, 1, "r", v, "x", 1000, 0, &ROOMY), BSC_OK);
    assert_int_equal(
        cache_sem_put(s, &k, BSC_STR("r"), w, DIM * 2, BSC_STR("y"), &META, 1000, 0, &ROOMY),
        BSC_EINVAL);
    assert_int_equal(cache_sem_put(s, &k, BSC_STR("r"), w, 0, BSC_STR("y"), &META, 1000, 0, &ROOMY),
                     BSC_EINVAL);
    assert_int_equal(put(s, 2, "q", v, "z", 1000, 0, &ROOMY), BSC_OK);
    assert_int_equal(cache_sem_drop_route(s, BSC_STR("r")), 1);
    assert_false(get(s, 1, v, 0.9, 1, NULL, 0));
    assert_true(get(s, 2, v, 0.9, 1, NULL, 0));
    cache_sem_usage(s, &n, &bytes, &ev);
    assert_int_equal(n, 1);
    assert_int_equal(cache_sem_drop_route(s, BSC_STR("")), 1);
    cache_sem_usage(s, &n, &bytes, &ev);
    assert_int_equal(n, 0);
    assert_int_equal(bytes, 0);
    cache_sem_free(s);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* 100,000 random unit vectors of one context; lookups of fresh random queries (a miss
 * scans them all: the worst case). Prints the time per lookup; asserts nothing of it. */
static void bench_dim(size_t dim)
{
    enum { N = 100000, Q = 200 };
    struct cache_sem *s = cache_sem_new();
    struct cache_sem_bounds b = {.limit_bytes = (uint64_t)4 << 30, .max_entries = N};
    struct cache_key k = ctx_n(7);
    float *v = malloc(dim * sizeof(*v));
    struct bsc_buf body;
    struct cache_meta meta;
    double t0, sim;
    size_t hits = 0;

    assert_non_null(v);
    srand(42);
    for (size_t i = 0; i < N; i++) {
        for (size_t d = 0; d < dim; d++)
            v[d] = (float)rand() / (float)RAND_MAX - 0.5f;
        assert_true(cache_sem_normalize(v, dim));
        assert_int_equal(
            cache_sem_put(s, &k, BSC_STR("r"), v, dim, BSC_STR("answer"), &META, 3600000, 0, &b),
            BSC_OK);
    }
    bsc_buf_init(&body, 1024);
    t0 = now_s();
    for (size_t q = 0; q < Q; q++) {
        for (size_t d = 0; d < dim; d++)
            v[d] = (float)rand() / (float)RAND_MAX - 0.5f;
        cache_sem_normalize(v, dim);
        hits += cache_sem_get(s, &k, v, dim, 0.95, 1, &body, &meta, &sim);
    }
    printf("# semantic index: 100000 entries of dim %zu, %.3f ms per lookup (%zu hits)\n", dim,
           (now_s() - t0) * 1e3 / Q, hits);
    bsc_buf_cleanup(&body);
    free(v);
    cache_sem_free(s);
}

static void test_bench_100k(void **state)
{
    const char *on = getenv("BSC_SEM_BENCH");

    (void)state;
    if (!on || strcmp(on, "1") != 0)
        skip();
    bench_dim(256);
    bench_dim(1536);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_normalize_and_cosine),
        cmocka_unit_test(test_threshold),
        cmocka_unit_test(test_closest_wins),
        cmocka_unit_test(test_grouped_by_context),
        cmocka_unit_test(test_ttl),
        cmocka_unit_test(test_route_cap_lru),
        cmocka_unit_test(test_byte_bound),
        cmocka_unit_test(test_dimension_and_drop),
        cmocka_unit_test(test_bench_100k),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
