/* SPDX-License-Identifier: MIT */
/* test_store.c -- the state store, every test run against the memory and the SQLite
 * backend: begin / complete / replay / mismatch / in-flight, claims, abandon, expiry and
 * the in-flight lease under a fake clock, ledger put/get through the transition rules,
 * the libuv callback contract (never synchronous, never after a refused call), bounds,
 * and calls from two loops on two threads at once (callbacks on the caller's thread,
 * exactly one winner per key). SQLite only: durability across reopen, the orphaned
 * in_flight cleanup, the periodic purge. Memory only: its size limits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>
#include <uv.h>

#include "store/store.h"

/* ---- fixture ---------------------------------------------------------------------------- */

struct fx {
    enum cfg_store_kind kind;
    char dir[64];
    char path[128];
    atomic_ullong now; /* the fake wall clock */
    struct store_opts opts;
    struct store *st;
    uv_loop_t loop;
};

static uint64_t fake_clock(void *ud)
{
    struct fx *f = ud;

    return atomic_load(&f->now);
}

static void advance(struct fx *f, uint64_t ms)
{
    atomic_fetch_add(&f->now, ms);
}

static void open_store(struct fx *f)
{
    struct cfg_store cfg = {f->kind, f->kind == CFG_STORE_SQLITE ? f->path : NULL, NULL};
    char err[256] = "";

    if (store_open_opts(&cfg, &f->opts, &f->st, err, sizeof(err)) != BSC_OK)
        fail_msg("store_open: %s", err);
}

static int setup(void **state, enum cfg_store_kind kind)
{
    struct fx *f = calloc(1, sizeof(*f));

    assert_non_null(f);
    f->kind = kind;
    snprintf(f->dir, sizeof(f->dir), "/tmp/bsc-store-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof(f->path), "%s/state.db", f->dir);
    atomic_init(&f->now, 1700000000000ull);
    store_opts_default(&f->opts);
    f->opts.clock = fake_clock;
    f->opts.clock_ud = f;
    f->opts.default_ttl_ms = 10000;
    f->opts.inflight_lease_ms = 500;
    assert_int_equal(uv_loop_init(&f->loop), 0);
    open_store(f);
    *state = f;
    return 0;
}

static int setup_mem(void **state)
{
    return setup(state, CFG_STORE_MEMORY);
}

static int setup_sqlite(void **state)
{
    return setup(state, CFG_STORE_SQLITE);
}

static void remove_files(struct fx *f)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[160];

    for (size_t i = 0; i < BSC_ARRAY_LEN(suffix); i++) {
        snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
        unlink(p);
    }
    rmdir(f->dir);
}

static int teardown(void **state)
{
    struct fx *f = *state;

    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    store_close(f->st);
    remove_files(f);
    free(f);
    return 0;
}

/* ---- calls and their results ------------------------------------------------------------ */

struct res {
    bool returned; /* the call that started it had returned when the callback ran */
    int calls;
    enum bsc_err err;
    enum idem_decision decision;
    uint64_t claim;
    bool has_answer;
    int status;
    bool stream;
    char headers[256];
    char body[256];
    size_t body_len;
    bool has_entry;
    struct ledger_entry entry;
    enum ledger_outcome outcome;
};

static void on_idem(enum bsc_err err, const struct store_idem_result *res, void *ud)
{
    struct res *r = ud;

    assert_true(r->returned);
    r->calls++;
    r->err = err;
    if (err) {
        assert_null(res);
        return;
    }
    r->decision = res->decision;
    r->claim = res->claim;
    r->has_answer = res->answer != NULL;
    if (res->answer) {
        assert_true(res->answer->body.len <= sizeof(r->body));
        r->status = res->answer->status;
        r->stream = res->answer->stream;
        snprintf(r->headers, sizeof(r->headers), "%.*s", BSC_STR_FMT(res->answer->headers));
        if (res->answer->body.len)
            memcpy(r->body, res->answer->body.p, res->answer->body.len);
        r->body_len = res->answer->body.len;
    }
}

static void on_done(enum bsc_err err, void *ud)
{
    struct res *r = ud;

    assert_true(r->returned);
    r->calls++;
    r->err = err;
}

static void on_ledger(enum bsc_err err, const struct ledger_entry *e, enum ledger_outcome o,
                      void *ud)
{
    struct res *r = ud;

    assert_true(r->returned);
    r->calls++;
    r->err = err;
    r->has_entry = e != NULL;
    if (e)
        r->entry = *e;
    r->outcome = o;
}

/* Waits for <r>'s callback (the loop ends when its last job handle closed). */
static void wait_for(struct fx *f, struct res *r)
{
    r->returned = true;
    uv_run(&f->loop, UV_RUN_DEFAULT);
    assert_int_equal(r->calls, 1);
}

static struct idem_fp fp(const char *body)
{
    struct idem_fp x;

    assert_int_equal(idem_fingerprint(BSC_STR("POST /v1/chat/completions"), bsc_str_cstr(body),
                                      &x),
                     BSC_OK);
    return x;
}

static struct res begin_in(struct fx *f, const char *scope, const char *key, const char *body,
                           uint64_t ttl)
{
    struct res r = {0};
    struct idem_fp x = fp(body);

    assert_int_equal(store_idem_begin(f->st, &f->loop, bsc_str_cstr(scope), bsc_str_cstr(key),
                                      &x, ttl, on_idem, &r),
                     BSC_OK);
    assert_int_equal(r.calls, 0); /* never synchronous */
    wait_for(f, &r);
    return r;
}

static struct res begin(struct fx *f, const char *key, const char *body, uint64_t ttl)
{
    return begin_in(f, "vk-1", key, body, ttl);
}

static const struct idem_answer ANSWER = {
    201, true, {"{\"content-type\":\"text/event-stream\"}", 37}, {"data: a\n\n\0data: b\n\n", 20}};

static enum bsc_err complete(struct fx *f, const char *key, uint64_t claim)
{
    struct res r = {0};

    assert_int_equal(store_idem_complete(f->st, &f->loop, BSC_STR("vk-1"), bsc_str_cstr(key),
                                         claim, &ANSWER, on_done, &r),
                     BSC_OK);
    assert_int_equal(r.calls, 0);
    wait_for(f, &r);
    return r.err;
}

static enum bsc_err abandon(struct fx *f, const char *key, uint64_t claim)
{
    struct res r = {0};

    assert_int_equal(store_idem_abandon(f->st, &f->loop, BSC_STR("vk-1"), bsc_str_cstr(key),
                                        claim, on_done, &r),
                     BSC_OK);
    wait_for(f, &r);
    return r.err;
}

static struct ledger_update upd(const char *tool, enum ledger_state s, const char *ref)
{
    struct ledger_update u;

    memset(&u, 0, sizeof(u));
    snprintf(u.tool_name, sizeof(u.tool_name), "%s", tool);
    snprintf(u.external_reference, sizeof(u.external_reference), "%s", ref ? ref : "");
    u.state = s;
    return u;
}

static struct res put(struct fx *f, const char *op, enum ledger_state s, const char *ref)
{
    struct res r = {0};
    struct ledger_update u = upd("send_email", s, ref);

    assert_int_equal(store_ledger_put(f->st, &f->loop, bsc_str_cstr(op), &u, on_ledger, &r),
                     BSC_OK);
    assert_int_equal(r.calls, 0);
    wait_for(f, &r);
    return r;
}

static struct res get(struct fx *f, const char *op)
{
    struct res r = {0};

    assert_int_equal(store_ledger_get(f->st, &f->loop, bsc_str_cstr(op), on_ledger, &r), BSC_OK);
    assert_int_equal(r.calls, 0);
    wait_for(f, &r);
    return r;
}

/* ---- idempotency ------------------------------------------------------------------------ */

static void test_begin_complete_replay(void **state)
{
    struct fx *f = *state;
    struct res r = begin(f, "key-1", "{\"a\":1}", 0), r2;

    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.decision, IDEM_MISS);
    assert_true(r.claim != 0);
    assert_false(r.has_answer);

    r2 = begin(f, "key-1", "{ \"a\" : 1 }", 0); /* same request, other spelling */
    assert_int_equal(r2.decision, IDEM_IN_FLIGHT);
    assert_int_equal(r2.claim, 0);
    assert_int_equal(begin(f, "key-1", "{\"a\":2}", 0).decision, IDEM_MISMATCH);

    assert_int_equal(complete(f, "key-1", r.claim), BSC_OK);
    r2 = begin(f, "key-1", "{\"a\":1}", 0);
    assert_int_equal(r2.decision, IDEM_REPLAY);
    assert_true(r2.has_answer);
    assert_int_equal(r2.status, 201);
    assert_true(r2.stream);
    assert_string_equal(r2.headers, "{\"content-type\":\"text/event-stream\"}");
    assert_int_equal(r2.body_len, ANSWER.body.len);
    assert_memory_equal(r2.body, ANSWER.body.p, ANSWER.body.len); /* NUL bytes included */
    assert_int_equal(begin(f, "key-1", "{\"a\":2}", 0).decision, IDEM_MISMATCH);

    /* scopes are separate name spaces; so are keys */
    assert_int_equal(begin_in(f, "vk-2", "key-1", "{\"a\":2}", 0).decision, IDEM_MISS);
    assert_int_equal(begin_in(f, "", "key-1", "{\"a\":1}", 0).decision, IDEM_MISS);
    assert_int_equal(begin(f, "key-2", "{\"a\":1}", 0).decision, IDEM_MISS);
}

static void test_empty_answer(void **state)
{
    struct fx *f = *state;
    struct res r = begin(f, "k", "x", 0), r2 = {0};
    struct idem_answer a = {204, false, BSC_STR_NULL, BSC_STR_NULL};

    assert_int_equal(store_idem_complete(f->st, &f->loop, BSC_STR("vk-1"), BSC_STR("k"), r.claim,
                                         &a, on_done, &r2),
                     BSC_OK);
    wait_for(f, &r2);
    assert_int_equal(r2.err, BSC_OK);
    r2 = begin(f, "k", "x", 0);
    assert_int_equal(r2.decision, IDEM_REPLAY);
    assert_int_equal(r2.status, 204);
    assert_false(r2.stream);
    assert_int_equal(r2.body_len, 0);
    assert_string_equal(r2.headers, "");
}

static void test_claims_and_abandon(void **state)
{
    struct fx *f = *state;
    struct res r = begin(f, "k", "{}", 0), r2;

    assert_int_equal(complete(f, "k", r.claim + 1), BSC_ESTATE);
    assert_int_equal(abandon(f, "k", r.claim + 1), BSC_ESTATE);
    assert_int_equal(complete(f, "nope", r.claim), BSC_ENOTFOUND);
    assert_int_equal(abandon(f, "nope", r.claim), BSC_ENOTFOUND);

    assert_int_equal(abandon(f, "k", r.claim), BSC_OK);
    assert_int_equal(abandon(f, "k", r.claim), BSC_ENOTFOUND);
    r2 = begin(f, "k", "{\"other\":1}", 0); /* abandoned: the key is free again */
    assert_int_equal(r2.decision, IDEM_MISS);
    assert_true(r2.claim != r.claim);
    assert_int_equal(complete(f, "k", r.claim), BSC_ESTATE);
    assert_int_equal(complete(f, "k", r2.claim), BSC_OK);
    assert_int_equal(complete(f, "k", r2.claim), BSC_ESTATE); /* already complete */
    assert_int_equal(abandon(f, "k", r2.claim), BSC_ESTATE);
    assert_int_equal(begin(f, "k", "{\"other\":1}", 0).decision, IDEM_REPLAY);
}

static void test_expiry(void **state)
{
    struct fx *f = *state;
    struct res r = begin(f, "k", "{}", 1000), r2;

    assert_int_equal(complete(f, "k", r.claim), BSC_OK);
    advance(f, 999);
    assert_int_equal(begin(f, "k", "{}", 1000).decision, IDEM_REPLAY);
    assert_int_equal(begin(f, "k", "{\"x\":1}", 1000).decision, IDEM_MISMATCH);
    advance(f, 1); /* ttl counts from the completion */
    r2 = begin(f, "k", "{\"x\":1}", 1000);
    assert_int_equal(r2.decision, IDEM_MISS);

    /* the default ttl (10 s in this fixture) */
    r = begin(f, "d", "{}", 0);
    assert_int_equal(complete(f, "d", r.claim), BSC_OK);
    advance(f, 9999);
    assert_int_equal(begin(f, "d", "{}", 0).decision, IDEM_REPLAY);
    advance(f, 1);
    assert_int_equal(begin(f, "d", "{}", 0).decision, IDEM_MISS);
}

static void test_inflight_lease(void **state)
{
    struct fx *f = *state;
    struct res r = begin(f, "k", "{}", 0), r2;

    advance(f, 499);
    assert_int_equal(begin(f, "k", "{}", 0).decision, IDEM_IN_FLIGHT);
    advance(f, 1); /* lease over: the record is an orphan, the key is taken over */
    r2 = begin(f, "k", "{}", 0);
    assert_int_equal(r2.decision, IDEM_MISS);
    assert_int_equal(complete(f, "k", r.claim), BSC_ESTATE);

    /* past its lease but not taken over: its owner may still complete it */
    advance(f, 600);
    assert_int_equal(complete(f, "k", r2.claim), BSC_OK);
    assert_int_equal(begin(f, "k", "{}", 0).decision, IDEM_REPLAY);

    /* a ttl shorter than the lease bounds the in_flight record too */
    r = begin(f, "short", "{}", 100);
    advance(f, 100);
    assert_int_equal(begin(f, "short", "{}", 100).decision, IDEM_MISS);
}

/* ---- the ledger ------------------------------------------------------------------------- */

static void test_ledger(void **state)
{
    struct fx *f = *state;
    struct res r = get(f, "op-1");

    assert_int_equal(r.err, BSC_ENOTFOUND);
    assert_false(r.has_entry);

    r = put(f, "op-1", LEDGER_ST_PLANNED, NULL);
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.outcome, LEDGER_CREATED);
    assert_int_equal(r.entry.version, 1);
    assert_int_equal(r.entry.created_ms, 1700000000000ull);

    advance(f, 5);
    r = put(f, "op-1", LEDGER_ST_STARTED, "msg-9");
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.outcome, LEDGER_UPDATED);
    assert_int_equal(r.entry.version, 2);
    assert_int_equal(r.entry.updated_ms, 1700000000005ull);

    r = put(f, "op-1", LEDGER_ST_STARTED, NULL);
    assert_int_equal(r.outcome, LEDGER_UNCHANGED);
    assert_int_equal(r.entry.version, 2);

    r = put(f, "op-1", LEDGER_ST_PLANNED, NULL);
    assert_int_equal(r.err, BSC_ESTATE);
    assert_true(r.has_entry); /* the stored entry, for the 409 message */
    assert_int_equal(r.entry.state, LEDGER_ST_STARTED);

    r = put(f, "op-1", LEDGER_ST_UNKNOWN, NULL);
    assert_int_equal(r.outcome, LEDGER_UPDATED);
    r = put(f, "op-1", LEDGER_ST_SUCCEEDED, NULL);
    assert_int_equal(r.entry.state, LEDGER_ST_SUCCEEDED);
    assert_int_equal(put(f, "op-1", LEDGER_ST_FAILED, NULL).err, BSC_ESTATE);

    r = get(f, "op-1");
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.outcome, LEDGER_UNCHANGED);
    assert_string_equal(r.entry.op_id, "op-1");
    assert_string_equal(r.entry.tool_name, "send_email");
    assert_string_equal(r.entry.external_reference, "msg-9");
    assert_int_equal(r.entry.state, LEDGER_ST_SUCCEEDED);
    assert_int_equal(r.entry.version, 4);
    assert_int_equal(r.entry.created_ms, 1700000000000ull);

    /* creating in a terminal state is refused, and nothing is stored */
    r = put(f, "op-2", LEDGER_ST_SUCCEEDED, NULL);
    assert_int_equal(r.err, BSC_ESTATE);
    assert_false(r.has_entry);
    assert_int_equal(get(f, "op-2").err, BSC_ENOTFOUND);
}

/* ---- the contract ----------------------------------------------------------------------- */

static void never_called_idem(enum bsc_err err, const struct store_idem_result *res, void *ud)
{
    (void)err, (void)res, (void)ud;
    fail_msg("callback of a refused call");
}

static void never_called_ledger(enum bsc_err err, const struct ledger_entry *e,
                                enum ledger_outcome o, void *ud)
{
    (void)err, (void)e, (void)o, (void)ud;
    fail_msg("callback of a refused call");
}

static void never_called_done(enum bsc_err err, void *ud)
{
    (void)err, (void)ud;
    fail_msg("callback of a refused call");
}

static void test_refused_calls(void **state)
{
    struct fx *f = *state;
    struct idem_fp x = fp("{}");
    struct ledger_update u = upd("t", LEDGER_ST_PLANNED, NULL);
    char big_scope[IDEM_SCOPE_MAX + 2];
    struct idem_answer a = ANSWER;
    struct store *st = f->st;
    uv_loop_t *l = &f->loop;

    memset(big_scope, 's', sizeof(big_scope));
    assert_int_equal(store_idem_begin(st, l, BSC_STR("s"), BSC_STR(""), &x, 0, never_called_idem,
                                      NULL),
                     BSC_EINVAL);
    assert_int_equal(store_idem_begin(st, l, BSC_STR("s"), BSC_STR("a\nb"), &x, 0,
                                      never_called_idem, NULL),
                     BSC_EINVAL);
    assert_int_equal(store_idem_begin(st, l, bsc_str_make(big_scope, IDEM_SCOPE_MAX + 1),
                                      BSC_STR("k"), &x, 0, never_called_idem, NULL),
                     BSC_EINVAL);
    a.status = 99;
    assert_int_equal(store_idem_complete(st, l, BSC_STR("s"), BSC_STR("k"), 1, &a,
                                         never_called_done, NULL),
                     BSC_EINVAL);
    a.status = 200;
    a.body.len = f->opts.max_answer_bytes - a.headers.len + 1; /* one byte too many */
    assert_int_equal(store_idem_complete(st, l, BSC_STR("s"), BSC_STR("k"), 1, &a,
                                         never_called_done, NULL),
                     BSC_ELIMIT);
    assert_int_equal(store_ledger_put(st, l, BSC_STR("a/b"), &u, never_called_ledger, NULL),
                     BSC_EINVAL);
    assert_int_equal(store_ledger_get(st, l, BSC_STR(""), never_called_ledger, NULL),
                     BSC_EINVAL);
    u.state = LEDGER_ST_COUNT;
    assert_int_equal(store_ledger_put(st, l, BSC_STR("a"), &u, never_called_ledger, NULL),
                     BSC_EINVAL);
    uv_run(l, UV_RUN_DEFAULT); /* nothing pending: returns at once, no callback */
}

static void test_max_pending(void **state)
{
    struct fx *f = *state;
    struct res r[4] = {{0}};

    store_close(f->st);
    f->opts.max_pending = 3;
    open_store(f);
    for (int i = 0; i < 3; i++) {
        r[i].returned = true;
        assert_int_equal(store_ledger_get(f->st, &f->loop, BSC_STR("x"), on_ledger, &r[i]),
                         BSC_OK);
    }
    assert_int_equal(store_ledger_get(f->st, &f->loop, BSC_STR("x"), never_called_ledger, NULL),
                     BSC_ELIMIT);
    uv_run(&f->loop, UV_RUN_DEFAULT);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i].calls, 1);
        assert_int_equal(r[i].err, BSC_ENOTFOUND);
    }
    /* room again once the callbacks ran */
    assert_int_equal(get(f, "x").err, BSC_ENOTFOUND);
}

/* ---- two loops on two threads ----------------------------------------------------------- */

#define RACE_KEYS 64

struct racer {
    struct fx *f;
    uv_barrier_t *start;
    uv_thread_t thread;
    uv_loop_t loop;
    struct res idem[RACE_KEYS], led[RACE_KEYS];
    atomic_int wrong_thread;
};

/* The racer whose thread is running: a callback run on the other thread would see the
 * other racer here and be counted as wrong. */
static _Thread_local struct racer *current_racer;

static void race_idem_cb(enum bsc_err err, const struct store_idem_result *res, void *ud)
{
    struct res *r = ud;

    r->calls++;
    r->err = err;
    r->decision = err ? IDEM_DECISION_COUNT : res->decision;
}

static void race_ledger_cb(enum bsc_err err, const struct ledger_entry *e, enum ledger_outcome o,
                           void *ud)
{
    struct res *r = ud;

    (void)e;
    r->calls++;
    r->err = err;
    r->outcome = o;
}

/* Checks that a callback's <r> belongs to the racer of the running thread. */
static bool mine(const struct racer *rc, const struct res *r)
{
    return (r >= rc->idem && r < rc->idem + RACE_KEYS) || (r >= rc->led && r < rc->led + RACE_KEYS);
}

static void race_idem_checked(enum bsc_err err, const struct store_idem_result *res, void *ud)
{
    if (!mine(current_racer, ud))
        atomic_fetch_add(&current_racer->wrong_thread, 1);
    race_idem_cb(err, res, ud);
}

static void race_ledger_checked(enum bsc_err err, const struct ledger_entry *e,
                                enum ledger_outcome o, void *ud)
{
    if (!mine(current_racer, ud))
        atomic_fetch_add(&current_racer->wrong_thread, 1);
    race_ledger_cb(err, e, o, ud);
}

static void racer_main(void *arg)
{
    struct racer *rc = arg;
    struct idem_fp x = fp("{\"same\":true}");
    struct ledger_update u = upd("deploy", LEDGER_ST_STARTED, NULL);
    char key[32];

    current_racer = rc;
    uv_loop_init(&rc->loop);
    uv_barrier_wait(rc->start);
    for (int i = 0; i < RACE_KEYS; i++) {
        snprintf(key, sizeof(key), "race-%d", i);
        if (store_idem_begin(rc->f->st, &rc->loop, BSC_STR("s"), bsc_str_cstr(key), &x, 0,
                             race_idem_checked, &rc->idem[i]) ||
            store_ledger_put(rc->f->st, &rc->loop, bsc_str_cstr(key), &u, race_ledger_checked,
                             &rc->led[i]))
            atomic_fetch_add(&rc->wrong_thread, 1000);
    }
    uv_run(&rc->loop, UV_RUN_DEFAULT);
    uv_loop_close(&rc->loop);
}

static void test_two_loops(void **state)
{
    struct fx *f = *state;
    struct racer *rc = calloc(2, sizeof(*rc));
    uv_barrier_t start;

    assert_non_null(rc);
    uv_barrier_init(&start, 2);
    for (int t = 0; t < 2; t++) {
        rc[t].f = f;
        rc[t].start = &start;
        atomic_init(&rc[t].wrong_thread, 0);
        assert_int_equal(uv_thread_create(&rc[t].thread, racer_main, &rc[t]), 0);
    }
    for (int t = 0; t < 2; t++)
        uv_thread_join(&rc[t].thread);
    uv_barrier_destroy(&start);
    for (int t = 0; t < 2; t++)
        assert_int_equal(atomic_load(&rc[t].wrong_thread), 0);
    for (int i = 0; i < RACE_KEYS; i++) {
        int miss = 0, inflight = 0, created = 0, unchanged = 0;
        for (int t = 0; t < 2; t++) {
            assert_int_equal(rc[t].idem[i].calls, 1);
            assert_int_equal(rc[t].idem[i].err, BSC_OK);
            miss += rc[t].idem[i].decision == IDEM_MISS;
            inflight += rc[t].idem[i].decision == IDEM_IN_FLIGHT;
            assert_int_equal(rc[t].led[i].calls, 1);
            assert_int_equal(rc[t].led[i].err, BSC_OK);
            created += rc[t].led[i].outcome == LEDGER_CREATED;
            unchanged += rc[t].led[i].outcome == LEDGER_UNCHANGED;
        }
        /* exactly one winner per key, whatever the interleaving */
        assert_int_equal(miss, 1);
        assert_int_equal(inflight, 1);
        assert_int_equal(created, 1);
        assert_int_equal(unchanged, 1);
    }
    free(rc);
}

/* ---- SQLite only ------------------------------------------------------------------------ */

static void reopen(struct fx *f)
{
    uv_run(&f->loop, UV_RUN_DEFAULT);
    store_close(f->st);
    f->st = NULL;
    open_store(f);
}

static void test_sqlite_reopen(void **state)
{
    struct fx *f = *state;
    struct res done = begin(f, "done", "{}", 0), running = begin(f, "running", "{}", 0);
    struct res r;

    assert_int_equal(complete(f, "done", done.claim), BSC_OK);
    assert_int_equal(put(f, "op-a", LEDGER_ST_STARTED, "ref-a").err, BSC_OK);
    assert_int_equal(put(f, "op-a", LEDGER_ST_UNKNOWN, NULL).err, BSC_OK);
    (void)running;
    reopen(f);

    r = get(f, "op-a");
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.entry.state, LEDGER_ST_UNKNOWN);
    assert_int_equal(r.entry.version, 2);
    assert_string_equal(r.entry.external_reference, "ref-a");
    r = begin(f, "done", "{}", 0);
    assert_int_equal(r.decision, IDEM_REPLAY);
    assert_memory_equal(r.body, ANSWER.body.p, ANSWER.body.len);
    /* the in_flight record of the previous process is an orphan: dropped at open */
    assert_int_equal(begin(f, "running", "{}", 0).decision, IDEM_MISS);
}

static long long count_rows(const char *path)
{
    sqlite3 *db;
    sqlite3_stmt *s;
    long long n = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        return -1;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM idem", -1, &s, NULL) == SQLITE_OK) {
        if (sqlite3_step(s) == SQLITE_ROW)
            n = sqlite3_column_int64(s, 0);
        sqlite3_finalize(s);
    }
    sqlite3_close(db);
    return n;
}

static void test_sqlite_purge(void **state)
{
    struct fx *f = *state;
    long long n = 0;

    store_close(f->st);
    f->opts.purge_interval_ms = 20;
    open_store(f);
    for (int i = 0; i < 5; i++) {
        char key[16];
        snprintf(key, sizeof(key), "p%d", i);
        struct res r = begin(f, key, "{}", 1000);
        assert_int_equal(complete(f, key, r.claim), BSC_OK);
    }
    struct res live = begin(f, "live", "{}", 100000);
    assert_int_equal(complete(f, "live", live.claim), BSC_OK);
    assert_int_equal(count_rows(f->path), 6);
    advance(f, 1000); /* the five expire; the writer purges them within a few intervals */
    for (int i = 0; i < 200 && (n = count_rows(f->path)) != 1; i++)
        usleep(10000);
    assert_int_equal(n, 1);
}

static void test_sqlite_bad_path(void **state)
{
    struct fx *f = *state;
    struct cfg_store cfg = {CFG_STORE_SQLITE, "/nonexistent-dir/x/state.db", NULL};
    struct cfg_store none = {CFG_STORE_SQLITE, NULL, NULL};
    /* redis is built in now (store_redis.c); a TLS URL is what it still refuses */
    struct cfg_store redis = {CFG_STORE_REDIS, NULL, "rediss://127.0.0.1"};
    struct store *st = (struct store *)1;
    char err[256] = "";

    assert_int_equal(store_open(&cfg, &st, err, sizeof(err)), BSC_EIO);
    assert_null(st);
    assert_non_null(strstr(err, "/nonexistent-dir/x/state.db"));
    assert_int_equal(store_open(&none, &st, err, sizeof(err)), BSC_EINVAL);
    {
        /* a file that is not a database: refused at boot, with the path in the message */
        char junk[160];
        FILE *fp;
        snprintf(junk, sizeof(junk), "%s/junk.db", f->dir);
        fp = fopen(junk, "w");
        assert_non_null(fp);
        for (int i = 0; i < 256; i++)
            fputs("this is not an SQLite database\n", fp);
        fclose(fp);
        cfg.path = junk;
        assert_int_equal(store_open(&cfg, &st, err, sizeof(err)), BSC_EIO);
        assert_non_null(strstr(err, "junk.db"));
        unlink(junk);
    }
    assert_int_equal(store_open(&redis, &st, err, sizeof(err)), BSC_EINVAL);
    assert_non_null(strstr(err, "TLS"));
}

/* The database file moved away, then back: every operation fails with BSC_EIO meanwhile
 * (nothing is acknowledged that a restart would not find), and the store resumes once the
 * path names the open file again. The WAL file is watched the same way. */
static void test_sqlite_file_moved(void **state)
{
    struct fx *f = *state;
    char away[160], wal[160], wal_away[160];
    struct res r;

    snprintf(away, sizeof(away), "%s.away", f->path);
    snprintf(wal, sizeof(wal), "%s-wal", f->path);
    snprintf(wal_away, sizeof(wal_away), "%s-wal.away", f->path);
    assert_int_equal(put(f, "op-1", LEDGER_ST_PLANNED, NULL).err, BSC_OK);

    assert_int_equal(rename(f->path, away), 0);
    assert_int_equal(put(f, "op-2", LEDGER_ST_PLANNED, NULL).err, BSC_EIO);
    r = put(f, "op-1", LEDGER_ST_STARTED, NULL);
    assert_int_equal(r.err, BSC_EIO);
    assert_false(r.has_entry);
    assert_int_equal(get(f, "op-1").err, BSC_EIO);
    r = begin(f, "key-1", "{}", 0);
    assert_int_equal(r.err, BSC_EIO);
    assert_int_equal(rename(away, f->path), 0);

    assert_int_equal(put(f, "op-1", LEDGER_ST_STARTED, NULL).err, BSC_OK);
    assert_int_equal(begin(f, "key-1", "{}", 0).decision, IDEM_MISS);

    assert_int_equal(rename(wal, wal_away), 0);
    assert_int_equal(put(f, "op-3", LEDGER_ST_PLANNED, NULL).err, BSC_EIO);
    assert_int_equal(rename(wal_away, wal), 0);
    assert_int_equal(put(f, "op-3", LEDGER_ST_PLANNED, NULL).err, BSC_OK);

    reopen(f); /* what was acknowledged is in the file */
    r = get(f, "op-1");
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.entry.state, LEDGER_ST_STARTED);
    assert_int_equal(get(f, "op-2").err, BSC_ENOTFOUND);
    assert_int_equal(get(f, "op-3").err, BSC_OK);
}

/* Deleted, then another file at the path: the store never adopts it. */
static void test_sqlite_file_deleted(void **state)
{
    struct fx *f = *state;
    FILE *fp;

    assert_int_equal(put(f, "op-1", LEDGER_ST_PLANNED, NULL).err, BSC_OK);
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(put(f, "op-2", LEDGER_ST_PLANNED, NULL).err, BSC_EIO);
    fp = fopen(f->path, "w");
    assert_non_null(fp);
    fclose(fp);
    assert_int_equal(put(f, "op-2", LEDGER_ST_PLANNED, NULL).err, BSC_EIO);
    assert_int_equal(begin(f, "key-1", "{}", 0).err, BSC_EIO);
}

/* A full database (PRAGMA max_page_count, as a full disk): the operation that does not fit
 * fails with BSC_EIO, never a success that was not written; what fits still works. */
static void test_sqlite_full(void **state)
{
    struct fx *f = *state;
    static char big[64 * 1024];
    struct idem_answer a = {200, false, BSC_STR("{}"), {big, sizeof(big)}};
    char scope[IDEM_SCOPE_MAX + 1], key[IDEM_KEY_MAX + 1];
    struct res r = {0}, miss;
    int i;

    store_close(f->st);
    f->opts.sqlite_max_pages = 8; /* the schema takes 6 */
    open_store(f);
    memset(big, 'b', sizeof(big));
    miss = begin(f, "k-big", "{}", 0);
    assert_int_equal(miss.decision, IDEM_MISS);
    assert_int_equal(store_idem_complete(f->st, &f->loop, BSC_STR("vk-1"), BSC_STR("k-big"),
                                         miss.claim, &a, on_done, &r),
                     BSC_OK);
    wait_for(f, &r);
    assert_int_equal(r.err, BSC_EIO);
    /* New records until the file is full: the one that does not fit is refused. */
    memset(scope, 's', IDEM_SCOPE_MAX);
    scope[IDEM_SCOPE_MAX] = '\0';
    for (i = 0; i < 1000; i++) {
        snprintf(key, sizeof(key), "%d-", i);
        memset(key + strlen(key), 'k', IDEM_KEY_MAX - strlen(key));
        key[IDEM_KEY_MAX] = '\0';
        r = begin_in(f, scope, key, "{}", 0);
        if (r.err)
            break;
        assert_int_equal(r.decision, IDEM_MISS);
    }
    assert_true(i > 0 && i < 1000);
    assert_int_equal(r.err, BSC_EIO);
    /* Reads still work, and a repeat of a record that fitted is answered. */
    snprintf(key, sizeof(key), "0-");
    memset(key + 2, 'k', IDEM_KEY_MAX - 2);
    key[IDEM_KEY_MAX] = '\0';
    assert_int_equal(begin_in(f, scope, key, "{}", 0).decision, IDEM_IN_FLIGHT);
}

/* ---- memory only ------------------------------------------------------------------------ */

static void test_mem_limits(void **state)
{
    struct fx *f = *state;
    struct res r;

    store_close(f->st);
    f->opts.mem_max_idem = 3;
    f->opts.mem_max_ledger = 2;
    f->opts.mem_max_idem_bytes = ANSWER.headers.len + ANSWER.body.len; /* one answer */
    open_store(f);
    assert_string_equal(store_kind_name(f->st), "memory");

    r = begin(f, "a", "{}", 1000);
    assert_int_equal(complete(f, "a", r.claim), BSC_OK);
    r = begin(f, "b", "{}", 1000);
    assert_int_equal(complete(f, "b", r.claim), BSC_ELIMIT); /* answer bytes */
    assert_int_equal(abandon(f, "b", r.claim), BSC_OK);
    (void)begin(f, "c", "{}", 1000);
    (void)begin(f, "d", "{}", 1000);
    r = begin(f, "e", "{}", 1000); /* a, c, d held: full */
    assert_int_equal(r.err, BSC_ELIMIT);
    advance(f, 1000); /* all expired */
    r = begin(f, "a", "{}", 1000); /* the stale "a" goes at once, and its bytes with it */
    assert_int_equal(r.decision, IDEM_MISS);
    assert_int_equal(complete(f, "a", r.claim), BSC_OK);
    r = begin(f, "e", "{}", 1000); /* "c" and "d" are swept to make room */
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.decision, IDEM_MISS);

    assert_int_equal(put(f, "l1", LEDGER_ST_PLANNED, NULL).err, BSC_OK);
    assert_int_equal(put(f, "l2", LEDGER_ST_PLANNED, NULL).err, BSC_OK);
    r = put(f, "l3", LEDGER_ST_PLANNED, NULL);
    assert_int_equal(r.err, BSC_ELIMIT);
    assert_false(r.has_entry);
    assert_int_equal(put(f, "l1", LEDGER_ST_STARTED, NULL).err, BSC_OK); /* updates still fit */
}

/* Many keys: the table grows and every record stays findable. */
static void test_many_keys(void **state)
{
    struct fx *f = *state;
    char key[32];

    for (int i = 0; i < 600; i++) {
        snprintf(key, sizeof(key), "many-%d", i);
        assert_int_equal(begin(f, key, "{}", 0).decision, IDEM_MISS);
    }
    for (int i = 0; i < 600; i++) {
        snprintf(key, sizeof(key), "many-%d", i);
        assert_int_equal(begin(f, key, "{}", 0).decision, IDEM_IN_FLIGHT);
    }
}

/* ---- blobs (the Responses API's conversations) ---- */

static void on_blob(enum bsc_err err, struct bsc_str value, void *ud)
{
    struct res *r = ud;

    assert_true(r->returned);
    r->calls++;
    r->err = err;
    assert_true(value.len <= sizeof(r->body));
    if (value.len)
        memcpy(r->body, value.p, value.len);
    r->body_len = value.len;
}

static enum bsc_err blob_put(struct fx *f, const char *key, const char *value, uint64_t ttl)
{
    struct res r = {0};

    assert_int_equal(store_blob_put(f->st, &f->loop, bsc_str_cstr(key), bsc_str_cstr(value), ttl,
                                    on_done, &r),
                     BSC_OK);
    wait_for(f, &r);
    return r.err;
}

static struct res blob_get(struct fx *f, const char *key)
{
    struct res r = {0};

    assert_int_equal(store_blob_get(f->st, &f->loop, bsc_str_cstr(key), on_blob, &r), BSC_OK);
    wait_for(f, &r);
    return r;
}

static void test_blobs(void **state)
{
    struct fx *f = *state;
    struct res r = {0};
    char *big = malloc(f->opts.max_answer_bytes + 1);

    assert_int_equal(blob_get(f, "responses:none").err, BSC_ENOTFOUND);
    assert_int_equal(blob_put(f, "responses:a", "{\"m\":1}", 1000), BSC_OK);
    r = blob_get(f, "responses:a");
    assert_int_equal(r.err, BSC_OK);
    assert_int_equal(r.body_len, 7);
    assert_memory_equal(r.body, "{\"m\":1}", 7);
    assert_int_equal(blob_put(f, "responses:a", "two", 1000), BSC_OK); /* replaced */
    r = blob_get(f, "responses:a");
    assert_int_equal(r.body_len, 3);
    assert_memory_equal(r.body, "two", 3);
    advance(f, 999);
    assert_int_equal(blob_get(f, "responses:a").err, BSC_OK);
    advance(f, 1); /* ttl counts from the put */
    assert_int_equal(blob_get(f, "responses:a").err, BSC_ENOTFOUND);
    assert_int_equal(blob_put(f, "responses:e", "", 1000), BSC_OK); /* an empty value */
    assert_int_equal(blob_get(f, "responses:e").body_len, 0);
    /* refused at once: no key, no ttl, a value past max_answer_bytes */
    assert_int_equal(store_blob_put(f->st, &f->loop, BSC_STR(""), BSC_STR("x"), 1, on_done, &r),
                     BSC_EINVAL);
    assert_int_equal(store_blob_put(f->st, &f->loop, BSC_STR("k"), BSC_STR("x"), 0, on_done, &r),
                     BSC_EINVAL);
    assert_int_equal(store_blob_get(f->st, &f->loop, BSC_STR(""), on_blob, &r), BSC_EINVAL);
    assert_non_null(big);
    memset(big, 'x', f->opts.max_answer_bytes + 1);
    assert_int_equal(store_blob_put(f->st, &f->loop, BSC_STR("k"),
                                    bsc_str_make(big, f->opts.max_answer_bytes + 1), 1, on_done,
                                    &r),
                     BSC_ELIMIT);
    free(big);
}

static void on_gen(enum bsc_err err, uint64_t gen, struct bsc_str value, void *ud)
{
    (void)err, (void)gen, (void)value, (void)ud;
    fail_msg("a refused call's callback ran");
}

/* Generations are Redis's alone (the shared response cache needs store.kind: redis): the
 * local backends refuse them at the call, and no callback runs. */
static void test_gen_refused_locally(void **state)
{
    struct fx *f = *state;
    struct res r = {0};

    assert_int_equal(store_gen_get(f->st, &f->loop, BSC_STR("chat"), BSC_STR("ab"), on_gen, NULL),
                     BSC_EINVAL);
    assert_int_equal(store_gen_put(f->st, &f->loop, BSC_STR("chat"), BSC_STR("ab"), BSC_STR("v"),
                                   1000, STORE_GEN_ANY, on_done, &r),
                     BSC_EINVAL);
    assert_int_equal(store_gen_bump(f->st, &f->loop, BSC_STR("chat"), on_gen, NULL), BSC_EINVAL);
    uv_run(&f->loop, UV_RUN_NOWAIT);
}

#define BOTH(fn)                                                                           \
    cmocka_unit_test_setup_teardown(fn, setup_mem, teardown),                              \
        cmocka_unit_test_setup_teardown(fn, setup_sqlite, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_begin_complete_replay),
        BOTH(test_empty_answer),
        BOTH(test_claims_and_abandon),
        BOTH(test_expiry),
        BOTH(test_inflight_lease),
        BOTH(test_ledger),
        BOTH(test_refused_calls),
        BOTH(test_max_pending),
        BOTH(test_two_loops),
        BOTH(test_many_keys),
        BOTH(test_blobs),
        BOTH(test_gen_refused_locally),
        cmocka_unit_test_setup_teardown(test_sqlite_reopen, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_purge, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_bad_path, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_file_moved, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_file_deleted, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_sqlite_full, setup_sqlite, teardown),
        cmocka_unit_test_setup_teardown(test_mem_limits, setup_mem, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
