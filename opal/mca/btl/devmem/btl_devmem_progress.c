/* SPDX-License-Identifier: BSD-3-Clause */
/* Give the core away when our connections are quiet and it is shared: btl_devmem_progress.h */
#include "sockets/btl_devmem_pollset.h"
#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_endpoint.h"
#include "devflow/btl_devmem_devflow.h"
#include "btl_devmem_idle_choice.h"
#include "btl_devmem_params.h"
#include "btl_devmem_progress.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

/* The idle policy's state below is the dispatch lock's (btl_devmem_pollset.h); the activity
 * count and the endpoints' count of live connections change in any thread: atomics. */
static uint64_t seen_activity;
static uint64_t quiet_since_ns; /* 0: there was activity at the last call */
static bool window_wait;        /* the current wait began inside a window of transfers */
static struct mca_btl_devmem_idle_choice way;
static bool way_ready;

/* The policy's times (btl_devmem_idle adaptive): quiet before a contended rank yields, the
 * longest sleep on the sockets, and how long a rank bound to one CPU spins where spinning
 * won. */
#define IDLE_YIELD_NS 10000ull
#define IDLE_BLOCK_US 1000
#define IDLE_SPIN_NS 500000ull

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
 * costs the wake-up (twice the latency, measured) and spinning wins. Asked of the kernel at
 * most every BOUND_CHECK_NS. */
#define BOUND_CHECK_NS 1000000000ull
static bool bound_to_one_cpu(uint64_t now)
{
    static uint64_t checked_ns;
    static bool bound;
    cpu_set_t set;

    if (0 == checked_ns || now - checked_ns >= BOUND_CHECK_NS) {
        checked_ns = now;
        bound = 0 == sched_getaffinity(0, sizeof(set), &set) && 1 == CPU_COUNT(&set);
    }
    return bound;
}

/* More ranks of the job on this machine than CPUs this rank may run on (Open MPI's
 * oversubscribed case, where it asks ranks to yield): whatever shares our CPU is most likely
 * a peer, and the rank hands over at its first quiet call, never trying to spin. Trying cost
 * hpcc, 4 ranks on the 2-core VM, a 200-340 us ring latency against 29 us with handing over
 * only (btl/tcp: 35). The ranks counted are Open MPI's local peers, or, where more, the peers
 * met so far whose modex names our kernel's boot id: ranks in network namespaces or
 * containers of one machine, which Open MPI takes for nodes of their own (2+2 ranks of two
 * namespaced hosts on 2 CPUs spun against each other: doc/benchmarks.md).
 * Only for a rank that may run on several CPUs: one bound to a single CPU (Open MPI's
 * default for a few ranks) counts one CPU whatever the node has, and taking that for
 * oversubscription made two bound ranks beside one busy process hand over at every wait
 * (256 KiB ping-pong 2.9x slower); ranks sharing a bound CPU are the adaptive policy's case.
 * The CPUs are asked once; the peers grow as add_procs meets them. */
static bool node_oversubscribed(void)
{
    static int cpus = -1;
    int local = (int) opal_process_info.num_local_peers; /* the others */
    int machine = __atomic_load_n(&mca_btl_devmem_component.machine_peers, __ATOMIC_RELAXED);
    cpu_set_t set;

    if (cpus < 0) {
        cpus = 0 == sched_getaffinity(0, sizeof(set), &set) ? CPU_COUNT(&set) : 0;
    }
    return cpus > 1 && (machine > local ? machine : local) + 1 > cpus;
}

/* Whether all this rank may wait for arrives on our sockets: no BTL but ours and self (which
 * delivers within the sender's own call) is in use. Shared memory, say, delivers unseen by
 * our poll, and its messages would wait out a sleep. Asked once: the list is made before
 * the first progress call and does not change. */
static bool sockets_see_everything(void)
{
    static int answer = -1;
    mca_btl_base_selected_module_t *sm;

    if (answer < 0) {
        answer = 1;
        OPAL_LIST_FOREACH (sm, &mca_btl_base_modules_initialized,
                           mca_btl_base_selected_module_t) {
            const char *name = sm->btl_component->btl_version.mca_component_name;

            if (0 != strcmp(name, "self") && 0 != strcmp(name, "devmem")) {
                answer = 0;
            }
        }
    }
    return answer > 0;
}

/*
 * A rank the scheduler may move, one CPU or more per rank on the node, every message on our
 * sockets, and a wait that began inside a window of transfers (two gets or more asked and
 * not yet answered, or a full socket with frames queued behind it): whatever contends for its
 * core is a task of no concern to it (the load balancer parts ranks that both run). Such a
 * rank sleeps on its sockets once the wait is quiet: the other task gets the core only while
 * we have nothing to do, and the next segment wakes us ahead of it, as the scheduler favours
 * a task that slept. Spinning shares the core with it in whole time slices. Two busy
 * processes beside two ranks over a veth: 4 MiB bandwidth 1.09 GB/s against 0.50 spinning
 * (btl/tcp 0.74). A ping-pong has no window and keeps the adaptive choice below: sleeping
 * there cost 8 B messages a wake-up (20 us against 5 beside one busy process), and sleeping
 * after every transfer of bulk size turned 256 KiB ping-pongs bimodal (0.2 or 3 ms: a rank
 * that spun between its sleeps wakes behind the busy process's slice).
 */
static bool sleeps_when_contended(const mca_btl_devmem_component_t *c, uint64_t now)
{
    return window_wait && MCA_BTL_DEVMEM_IDLE_ADAPTIVE == c->idle_mode && !bound_to_one_cpu(now)
           && !node_oversubscribed() && sockets_see_everything();
}

/* Where spinning won: whether this wait has been spun long enough. A rank bound to one CPU
 * spins for IDLE_SPIN_NS at most, in case the task beside it is the peer after all. One the
 * scheduler may move spins like btl/tcp for any message in flight (its yields would give an
 * unrelated task a whole slice, and the load balancer parts it from a peer), but not for a
 * peer still computing, whose core the spin may be taking (oversubscribed nodes never spin:
 * node_oversubscribed). Such a rank hands over once it has spun
 * UNBOUND_SPIN_FACTOR times IDLE_SPIN_NS of CPU time past as much wall time: counted in CPU
 * time, a preemption by an unrelated task during a short wait does not end the spin. */
#define UNBOUND_SPIN_FACTOR 10
static uint64_t spin_cpu_mark_ns; /* this wait's CPU time when it passed the wall bound */

static bool spun_enough(uint64_t now)
{
    const uint64_t spin_ns = IDLE_SPIN_NS;
    struct timespec ts;
    uint64_t cpu_ns;

    if (bound_to_one_cpu(now)) {
        return now - quiet_since_ns >= spin_ns;
    }
    if (now - quiet_since_ns < UNBOUND_SPIN_FACTOR * spin_ns
        || 0 != clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts)) {
        return false;
    }
    cpu_ns = (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec + 1; /* never 0 */
    if (0 == spin_cpu_mark_ns) {
        spin_cpu_mark_ns = cpu_ns;
    }
    return cpu_ns - spin_cpu_mark_ns >= UNBOUND_SPIN_FACTOR * spin_ns;
}

/* The first guess of the way to wait: a bound rank's neighbour on its core is likely the
 * peer (ranks pinned to one core); a rank the scheduler may move is parted from its peers
 * by the load balancer, and what it meets on a core is more likely a task of no concern to
 * it. */
static void way_start(uint64_t now)
{
    if (!way_ready) {
        mca_btl_devmem_idle_choice_init(&way, bound_to_one_cpu(now) ? IDLE_CHOICE_HANDOVER
                                                                    : IDLE_CHOICE_SPIN);
        way_ready = true;
    }
}

/* Gives the core away; two yields in a row that kept us off it long enough mark a rank bound
 * to one CPU as sharing it. */
static void yield_core(mca_btl_devmem_component_t *c, uint64_t now)
{
    uint64_t back;

    (void) sched_yield();
    mca_btl_devmem_stats_add(&c->stats.idle_yields, 1);
    back = mca_btl_devmem_now_ns();
    handovers = back - now >= HANDED_OVER_NS ? handovers + 1 : 0;
    if (handovers >= HANDOVERS_SHARED && bound_to_one_cpu(back)) {
        shared_until_ns = back + SHARED_NS;
    }
    last_quiet_call_ns = back;
}

/* Hands the core over until one of our sockets is ready, IDLE_BLOCK_US at most; only in a
 * wait loop, never in a lone MPI_Test between computations. */
static int sleep_on_sockets(mca_btl_devmem_component_t *c, bool in_wait_loop)
{
    int ran;

    if (!in_wait_loop) {
        return 0;
    }
    ran = mca_btl_devmem_pollset_dispatch(IDLE_BLOCK_US);
    mca_btl_devmem_stats_add(&c->stats.idle_blocks, 1);
    last_quiet_call_ns = mca_btl_devmem_now_ns(); /* the next call is back to back again */
    return ran;
}

/*
 * On a core shared with a task that runs (most likely the peer). Inside a window of transfers
 * (gets unanswered, a full socket), sleep on the sockets: the peer gets the core at once and
 * the next segment wakes us. Otherwise yield: that hands the core over without a wake-up, so
 * that a peer sending small messages writes its whole window before we read it in one go,
 * where a sleeper is woken, and takes the core back, at every message. A yield is only a
 * hint: it comes straight back while the task beside us may not run yet (the scheduler's
 * fairness), and a rank that keeps yielding then holds the core the peer needs; once this
 * wait's yields have come straight back for HANDED_OVER_NS, sleep. With btl_devmem_idle
 * yield, only yields. What each way costs: doc/benchmarks.md, "A core shared with the peer".
 */
static uint64_t noop_yields_since_ns; /* the first of this wait's yields that came back at once */

static int shared_core_handover(mca_btl_devmem_component_t *c, uint64_t now, bool in_wait_loop)
{
    bool streak = noop_yields_since_ns >= quiet_since_ns; /* else from an earlier wait */

    if (MCA_BTL_DEVMEM_IDLE_YIELD != c->idle_mode && in_wait_loop
        && (window_wait || (streak && now - noop_yields_since_ns >= HANDED_OVER_NS))) {
        noop_yields_since_ns = 0;
        return sleep_on_sockets(c, true);
    }
    yield_core(c, now);
    if (last_quiet_call_ns - now >= HANDED_OVER_NS) {
        noop_yields_since_ns = 0;
    } else if (!streak) {
        noop_yields_since_ns = now;
    }
    return 0;
}

static int idle(mca_btl_devmem_component_t *c, uint64_t now)
{
    bool in_wait_loop = now - last_quiet_call_ns < BACK_TO_BACK_NS;
    bool contended = core_contended(now);
    int ran = 0;

    last_quiet_call_ns = now;
    if (sleeps_when_contended(c, now)) {
        if (contended && now - quiet_since_ns >= IDLE_YIELD_NS) {
            ran = sleep_on_sockets(c, in_wait_loop);
        }
        return ran;
    }
    way_start(now);
    if (MCA_BTL_DEVMEM_IDLE_ADAPTIVE == c->idle_mode && !node_oversubscribed()
        && IDLE_CHOICE_SPIN == mca_btl_devmem_idle_choice_now(&way) && !spun_enough(now)) {
        return 0; /* measured: the answer comes sooner to a rank that keeps its core */
    }
    if (now < shared_until_ns) {
        /* the core is shared: hand it over at the first quiet call, not after IDLE_YIELD_NS */
        return shared_core_handover(c, now, in_wait_loop);
    }
    /* On an oversubscribed node the task beside us is most likely a peer that waits for
     * the core: hand it over at the first quiet call. hpcc, 4 ranks on 2 CPUs, 3 rounds:
     * randomly ordered ring latency 16-20 us against 25-26 after IDLE_YIELD_NS (btl/tcp
     * 20-21), the slowest ping-pong 10-13 us against 21-24. */
    if ((node_oversubscribed() || now - quiet_since_ns >= IDLE_YIELD_NS)
        && contended) {
        yield_core(c, now);
    }
    return ran;
}

/* A wait ended: while the core is contended (a preemption, or a shared core found by our
 * yields), it tells how well the current way does. */
static void wait_ended(mca_btl_devmem_component_t *c)
{
    uint64_t now, tries, switches;

    if (MCA_BTL_DEVMEM_IDLE_ADAPTIVE != c->idle_mode || node_oversubscribed()
        || 0 == quiet_since_ns) {
        return;
    }
    now = mca_btl_devmem_now_ns();
    if (sleeps_when_contended(c, now)) {
        return; /* not the adaptive choice's wait */
    }
    way_start(now);
    tries = way.tries;
    switches = way.switches;
    if (now >= contended_until_ns && now >= shared_until_ns) {
        mca_btl_devmem_idle_choice_untimed(&way, now); /* nobody else wants the core */
    } else {
        mca_btl_devmem_idle_choice_record(&way, now - quiet_since_ns, now);
        mca_btl_devmem_stats_add(&c->stats.idle_waits_timed, 1);
    }
    if (OPAL_UNLIKELY(way.tries != tries || way.switches != switches)) { /* once an epoch */
        mca_btl_devmem_stats_add(&c->stats.idle_way_tries, way.tries - tries);
        mca_btl_devmem_stats_add(&c->stats.idle_way_switches, way.switches - switches);
    }
}

/* A binding went under the job (btl_devmem_dev.h, the binding watch): the device path of
 * that interface is off from now on, which MPI_T readers see too; with btl_devmem_mode
 * require the job ends, naming it. */
static void binding_watch(mca_btl_devmem_component_t *c)
{
    char why[512], paths[4096], msg[640];

    if (mca_btl_devmem_dev_watch(why, sizeof(why)) <= 0) {
        return;
    }
    mca_btl_devmem_dev_paths(paths, sizeof(paths));
    mca_btl_devmem_params_status(paths);
    if (!mca_btl_devmem_dev_required()) {
        return;
    }
    snprintf(msg, sizeof(msg), "btl_devmem: the device path went off under the job, and "
             "btl_devmem_mode is require: %s", why);
    /* the PML ends the job with msg as its words; without one, say it and end it here */
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];

        if (NULL != m->error_cb) {
            m->error_cb(&m->super, MCA_BTL_ERROR_FLAGS_FATAL, NULL, msg);
            return;
        }
    }
    opal_output(0, "%s", msg);
    abort();
}

int mca_btl_devmem_progress(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    uint64_t now, activity;
    int ran;

    /* with no connection of ours (say every peer on shared memory), a syscall per progress
     * call would only slow the others: the 10 ms tick serves listen sockets, as libevent did.
     * Another thread in here (or this one, from a callback) is doing the work already. */
    if (mca_btl_devmem_endpoint_live() <= 0) {
        return 0;
    }
    if (!mca_btl_devmem_dispatch_trylock()) {
        if (mca_btl_devmem_dispatch_held()) {
            /* a callback of ours waits in progress: what it sent must not wait for it */
            mca_btl_devmem_endpoint_uncork_current();
        }
        return 0;
    }
    ran = mca_btl_devmem_pollset_dispatch(0);
    if (OPAL_UNLIKELY(c->unbind_after > 0)) {
        mca_btl_devmem_dev_testing_unbind(c->stats.rx_dmabuf);
    }
    if (OPAL_UNLIKELY(__atomic_load_n(&mca_btl_devmem_dev_suspects, __ATOMIC_RELAXED) > 0)) {
        binding_watch(c);
    }
    /* receives whose gather was still running: a waiting rank must not sleep on them */
    if (mca_btl_devmem_devflow_rx_busy()) {
        ran += mca_btl_devmem_devflow_rx_progress();
        mca_btl_devmem_progress_activity();
    }
    /* nothing of ours to wait for; or Open MPI yields on every idle call and we leave it */
    if (MCA_BTL_DEVMEM_IDLE_SPIN == c->idle_mode) {
        goto out;
    }
    /* Open MPI yields on every idle call (mpi_yield_when_idle): ours decides instead, and
     * reports an event, so that opal_progress does not yield after it */
    if (opal_progress_yield_when_idle) {
        ran += 0 == ran;
    }
    activity = __atomic_load_n(&c->activity, __ATOMIC_RELAXED);
    if (activity != seen_activity) {
        seen_activity = activity;
        wait_ended(c);
        quiet_since_ns = 0;
        spin_cpu_mark_ns = 0;
        goto out;
    }
    now = mca_btl_devmem_now_ns();
    if (0 == quiet_since_ns) {
        quiet_since_ns = now;
        window_wait = __atomic_load_n(&c->window_gets, __ATOMIC_RELAXED) > 1
                      || __atomic_load_n(&c->window_writers, __ATOMIC_RELAXED) > 0;
    }
    ran += idle(c, now);
out:
    mca_btl_devmem_dispatch_unlock();
    return ran;
}
