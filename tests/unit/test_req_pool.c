/* SPDX-License-Identifier: MIT */
/* test_req_pool.c -- the worker's pool of request objects (router/request.c req__alloc,
 * req__release): a pooled request keeps its exchange's buffers' storage for the next one
 * (the same storage, no growth; a buffer grown past XCHG_KEEP_BYTES is freed), and carries
 * nothing else of the request before it. That is a tenant-isolation property: the check
 * compares every byte of the reused request with a fresh one, so a field the reuse forgets
 * to clear fails it, whatever the field. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/asan.h"
#include "core/buf.h"
#include "router/exchange.h"
#include "router/internal.h"
#include "router/machine.h"
#include "router/request.h"
#include "router/worker.h"

#ifdef BSC_ASAN
#define POISONED(p) __asan_address_is_poisoned(p)
#else
#define POISONED(p) true
#endif

/* The exchange's kept buffers, in xchg_store's order (exchange.c kept_bufs). */
static void bufs_of(struct xchg *x, struct bsc_buf *out[XCHG_KEPT_BUFS])
{
    struct bsc_buf *all[XCHG_KEPT_BUFS] = {
        &x->http.url, &x->http.headers, &x->http.body, &x->resp, &x->answer, &x->conv, &x->up_head,
    };

    memcpy(out, all, sizeof(all));
}

/* A request as a finished one leaves it: every byte set (a stand-in for every field the
 * last tenant's request wrote: its headers, body, usage, ids...), its exchange's buffers
 * holding that tenant's text, the big one (<big_at>, or none: -1) grown past the bound. */
static struct request *used_request(struct worker *w, int big_at, char *storage[XCHG_KEPT_BUFS])
{
    struct request *r = req__alloc(w);
    struct bsc_buf *b[XCHG_KEPT_BUFS], saved[XCHG_KEPT_BUFS];

    assert_non_null(r);
    bufs_of(&r->x, b);
    for (int i = 0; i < XCHG_KEPT_BUFS; i++) {
        bsc_buf_init(b[i], 1u << 20);
        assert_int_equal(BSC_BUF_APPEND_LIT(b[i], "tenant A: secret prompt and answer"), BSC_OK);
        if (i == big_at)
            assert_int_equal(bsc_buf_reserve(b[i], XCHG_KEEP_BYTES + 1), BSC_OK);
        storage[i] = b[i]->p;
        saved[i] = *b[i];
    }
    memset(r, 0xa5, sizeof(*r));
    for (int i = 0; i < XCHG_KEPT_BUFS; i++)
        *b[i] = saved[i];
    r->w = w;
    r->att.recs = r->att.inline_recs; /* req__release frees a grown attempt array */
    xchg_park(&r->x);                 /* as st_done's xchg_cleanup does */
    return r;
}

/* Every byte of <r> is a fresh request's (req__alloc from an empty pool), but for the kept
 * buffers' storage and bounds. */
static void assert_fresh(struct request *r)
{
    struct worker w0 = {0};
    struct request *fresh = req__alloc(&w0);
    struct bsc_buf *b[XCHG_KEPT_BUFS], *f[XCHG_KEPT_BUFS];

    assert_non_null(fresh);
    bufs_of(&r->x, b);
    bufs_of(&fresh->x, f);
    for (int i = 0; i < XCHG_KEPT_BUFS; i++) {
        assert_int_equal(b[i]->len, 0);
        if (b[i]->p)
            assert_string_equal(b[i]->p, ""); /* nothing of the text before */
        *f[i] = *b[i];
    }
    fresh->att.recs = r->att.inline_recs; /* points into its own object */
    assert_memory_equal(r, fresh, sizeof(*r));
    fresh->att.recs = fresh->att.inline_recs;
    bufs_of(&fresh->x, f);
    for (int i = 0; i < XCHG_KEPT_BUFS; i++)
        bsc_buf_init(f[i], 0); /* the storage is r's */
    free(fresh);
}

/* The second request on a pooled object sees nothing of the first, and its exchange's
 * buffers are the first's storage, empty, poisoned while pooled. */
static void test_reused_request_is_fresh(void **state)
{
    struct worker w = {0};
    char *storage[XCHG_KEPT_BUFS];
    struct request *r = used_request(&w, -1, storage), *again;
    struct bsc_buf *b[XCHG_KEPT_BUFS];

    (void)state;
    req__release(r);
    assert_int_equal(w.n_req_pool, 1);
    for (int i = 0; i < XCHG_KEPT_BUFS; i++)
        assert_true(POISONED(storage[i])); /* a use while pooled is still reported */
    again = req__alloc(&w);
    assert_ptr_equal(again, r);
    bufs_of(&again->x, b);
    for (int i = 0; i < XCHG_KEPT_BUFS; i++)
        assert_ptr_equal(b[i]->p, storage[i]);
    assert_fresh(again);
    xchg_init(&again->x); /* what req_chat_start does next: the storage stays */
    for (int i = 0; i < XCHG_KEPT_BUFS; i++)
        assert_ptr_equal(b[i]->p, storage[i]);
    assert_int_equal(BSC_BUF_APPEND_LIT(&again->x.resp, "tenant B"), BSC_OK);
    assert_ptr_equal(again->x.resp.p, storage[3]); /* no growth */
    req__release(again);
    req_pool_drain(&w); /* frees the kept storage: LeakSanitizer checks it */
}

/* A buffer that grew past XCHG_KEEP_BYTES is freed when the request ends, not kept. */
static void test_oversized_buffer_not_kept(void **state)
{
    struct worker w = {0};
    char *storage[XCHG_KEPT_BUFS];
    struct request *r = used_request(&w, 2, storage), *again;

    (void)state;
    assert_null(r->x.http.body.p);
    req__release(r);
    again = req__alloc(&w);
    assert_null(again->x.http.body.p);
    assert_ptr_equal(again->x.http.url.p, storage[0]);
    assert_fresh(again);
    req__release(again);
    req_pool_drain(&w);
}

/* A request the full pool cannot take is freed with its kept storage (LeakSanitizer). */
static void test_full_pool_frees_storage(void **state)
{
    struct worker w = {0};
    char *storage[XCHG_KEPT_BUFS];
    struct request *r[WORKER_REQ_POOL + 1];

    (void)state;
    for (size_t i = 0; i < BSC_ARRAY_LEN(r); i++)
        r[i] = used_request(&w, -1, storage);
    for (size_t i = 0; i < BSC_ARRAY_LEN(r); i++)
        req__release(r[i]);
    assert_int_equal(w.n_req_pool, WORKER_REQ_POOL);
    req_pool_drain(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reused_request_is_fresh),
        cmocka_unit_test(test_oversized_buffer_not_kept),
        cmocka_unit_test(test_full_pool_frees_storage),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
