/* SPDX-License-Identifier: BSD-3-Clause */
/* Give the core away when our connections are quiet and it is shared: btl_devmem_progress.h */
#include "btl_devmem_progress.h"
#include "btl_devmem_watch.h"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include "opal/runtime/opal_progress.h"

/* The idle policy's state below is the dispatch lock's (btl_devmem_watch.h); live_conns and
 * the activity count change in any thread: atomics. */
static uint64_t seen_activity;
static uint64_t quiet_since_ns; /* 0: there was activity at the last call */
static int live_conns;

/*
 * Whether another task wants our core. The kernel counts the times it took the CPU from us
 * while we could still run (ru_nivcsw): a tick preempting us for another task, or one of our
 * own yields that did hand the core over. While that count moves, we yield when quiet; once
 * it has stood still for CONTENDED_NS, nobody is waiting for our core and we spin, since
 * yielding there only invites the scheduler to pack two ranks on one core.
 */
#define CHECK_EVERY_NS 1000000ull  /* getrusage at most every millisecond of quiet */
#define CONTENDED_NS 200000000ull  /* a preemption keeps us yielding this long */
static uint64_t last_check_ns, contended_until_ns;
static long last_nivcsw = -1;

static bool core_contended(uint64_t now)
{
    struct rusage ru;

    if (now - last_check_ns >= CHECK_EVERY_NS && 0 == getrusage(RUSAGE_THREAD, &ru)) {
        last_check_ns = now;
        if (last_nivcsw >= 0 && ru.ru_nivcsw > last_nivcsw) {
            contended_until_ns = now + CONTENDED_NS;
        }
        last_nivcsw = ru.ru_nivcsw;
    }
    return now < contended_until_ns;
}

void mca_btl_devmem_progress_conn_up(void)
{
    (void) __atomic_fetch_add(&live_conns, 1, __ATOMIC_RELAXED);
}

void mca_btl_devmem_progress_conn_down(void)
{
    (void) __atomic_fetch_sub(&live_conns, 1, __ATOMIC_RELAXED);
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/*
 * Whether our core is shared with a task that runs: a yield of ours that kept us off the core
 * for HANDED_OVER_NS or more let somebody else run there (a no-op yield takes well under a
 * microsecond). Typically the peer we wait for, pinned to our core: then every microsecond we
 * spin, or hold the core between yields, delays the answer. Such a rank sleeps on its sockets
 * instead, which hands over the core at once and wakes us when one of them is ready. It
 * expires after SHARED_NS; the yields that follow renew it while the sharing lasts.
 */
#define HANDED_OVER_NS 20000ull
#define SHARED_NS 200000000ull
#define HANDOVERS_SHARED 2
static uint64_t shared_until_ns;
static int handovers; /* yields in a row that handed the core over */
/* the last quiet call: a wait loop calls back to back, MPI_Test between computations not */
#define BACK_TO_BACK_NS 10000ull
static uint64_t last_quiet_call_ns;

/* A rank the scheduler may move elsewhere shares a core only until it does: there, a sleep
 * costs the wake-up (twice the latency, measured) and spinning wins. */
static bool bound_to_one_cpu(void)
{
    cpu_set_t set;

    return 0 == sched_getaffinity(0, sizeof(set), &set) && 1 == CPU_COUNT(&set);
}

static int idle(mca_btl_devmem_component_t *c, uint64_t now)
{
    bool in_wait_loop = now - last_quiet_call_ns < BACK_TO_BACK_NS;
    int ran = 0;

    last_quiet_call_ns = now;
    if (now < shared_until_ns && c->idle_block_us > 0) {
        if (in_wait_loop) {
            ran = mca_btl_devmem_watch_dispatch(c->idle_block_us);
            c->stats.idle_blocks++;
            last_quiet_call_ns = now_ns(); /* the next call is back to back again */
        }
        return ran;
    }
    if (now - quiet_since_ns >= (uint64_t) c->idle_yield_us * 1000u && core_contended(now)) {
        uint64_t back;

        (void) sched_yield();
        c->stats.idle_yields++;
        back = now_ns();
        handovers = back - now >= HANDED_OVER_NS ? handovers + 1 : 0;
        if (handovers >= HANDOVERS_SHARED && bound_to_one_cpu()) {
            shared_until_ns = back + SHARED_NS;
        }
        last_quiet_call_ns = back;
    }
    return ran;
}

int mca_btl_devmem_progress(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    uint64_t now, activity;
    int ran;

    /* with no connection of ours (say every peer on shared memory), a syscall per progress
     * call would only slow the others: the 10 ms tick serves listen sockets, as libevent did.
     * Another thread in here (or this one, from a callback) is doing the work already. */
    if (__atomic_load_n(&live_conns, __ATOMIC_RELAXED) <= 0
        || !mca_btl_devmem_dispatch_trylock()) {
        return 0;
    }
    ran = mca_btl_devmem_watch_dispatch(0);
    /* nothing of ours to wait for, or Open MPI yields on every idle call already */
    if (c->idle_yield_us < 0 || opal_progress_yield_when_idle) {
        goto out;
    }
    activity = __atomic_load_n(&c->activity, __ATOMIC_RELAXED);
    if (activity != seen_activity) {
        seen_activity = activity;
        quiet_since_ns = 0;
        goto out;
    }
    now = now_ns();
    if (0 == quiet_since_ns) {
        quiet_since_ns = now;
    }
    ran += idle(c, now);
out:
    mca_btl_devmem_dispatch_unlock();
    return ran;
}
