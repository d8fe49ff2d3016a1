/* SPDX-License-Identifier: MIT */
/* spin.h -- a lock for data its owner takes on every request and others rarely: a flag
 * taken with one atomic exchange and given back with one release store. Uncontended, that
 * is a fraction of a pthread mutex's lock and unlock (about 60 instructions a pair on the
 * request path). A waiter spins briefly, then yields; so a holder must never sleep or do
 * I/O under it, and where every worker takes a lock often a mutex stays the right choice.
 * Used by the metrics shards (docs/internals/metrics.md) and the feedback table's request
 * shards (docs/internals/feedback.md). */
#ifndef BSC_CORE_SPIN_H
#define BSC_CORE_SPIN_H
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>

struct bsc_spin {
    atomic_bool busy;
};

static inline void bsc_spin_init(struct bsc_spin *l)
{
    atomic_init(&l->busy, false);
}

/* The wait, kept out of line: the taking below is one exchange, inlined. */
static __attribute__((noinline, unused)) void bsc_spin_wait(struct bsc_spin *l)
{
    unsigned spins = 0;

    do
        while (atomic_load_explicit(&l->busy, memory_order_relaxed))
            if (++spins % 128 == 0)
                sched_yield();
    while (atomic_exchange_explicit(&l->busy, true, memory_order_acquire));
}

static inline void bsc_spin_lock(struct bsc_spin *l)
{
    if (atomic_exchange_explicit(&l->busy, true, memory_order_acquire))
        bsc_spin_wait(l);
}

static inline void bsc_spin_unlock(struct bsc_spin *l)
{
    atomic_store_explicit(&l->busy, false, memory_order_release);
}
#endif
