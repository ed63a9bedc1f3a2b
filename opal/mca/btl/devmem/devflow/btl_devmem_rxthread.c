/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receiving threads: see btl_devmem_rxthread.h.
 *
 * A thread's state is its own but for lane membership, which the progress thread changes
 * under the thread's lock (taking a lane as it opens, giving it back before it closes): the
 * thread holds that lock for each turn, from the moment epoll_wait returns to the next wait,
 * so the progress thread only ever finds it between turns or asleep. epoll names a lane by
 * its slot in the thread's table and the slot's generation, never by pointer: a lane given
 * back between a wait and the lock is recognised as gone without touching it.
 *
 * What a thread finishes goes to the progress thread through the hand-over queue (its own
 * leaf lock): gets whose bytes are in place, and lanes that ended (in order, or failed).
 * An eventfd in the progress thread's watch set says the queue has something.
 */
#include "opal_config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_endpoint.h"
#include "devflow/btl_devmem_devflow_int.h"
#include "devflow/btl_devmem_rxthread.h"

#include "devmem/locality.h"

#define RX_EVENTS 16
#define SLOT_BITS 24 /* epoll data: generation << SLOT_BITS | slot */

struct rxthread {
    unsigned int index;
    pthread_t tid;
    bool running;
    int epfd;
    int wake_fd;          /* eventfd: stop */
    pthread_mutex_t lock; /* the thread's for a turn; the progress thread's to change lanes */
    bool stop;
    /* lanes served, by slot (NULL: free) and each slot's generation */
    struct mca_btl_devmem_devflow **lanes;
    uint32_t *gen;
    size_t nslots, nlanes;
    struct mca_btl_devmem_gather_pipe pipe;
    struct devmem_rx_batch batch;
    bool batch_ready;
};

/* One thing handed to the progress thread. */
struct handed {
    mca_btl_devmem_endpoint_t *ep;
    mca_btl_devmem_frag_t *frag;     /* a get or chunk in place; NULL: an event */
    struct mca_btl_devmem_devflow *df; /* an ended lane (how), or NULL: fail ep (why) */
    enum mca_btl_devmem_rx_step how;
    int err;
    char *why; /* events only: malloc'd */
};

static struct {
    struct rxthread *t;
    int n;
    int notify_fd;
    mca_btl_devmem_polled_t notify_watch;
    pthread_mutex_t out_lock; /* leaf: the queue below */
    struct handed *q;
    size_t qn, qcap;
    struct handed *spare; /* the array the last delivery emptied, for the next swap */
    size_t spare_cap;
    bool oom; /* a hand-over could not be queued: said once */
} rxt = {.notify_fd = -1, .out_lock = PTHREAD_MUTEX_INITIALIZER};

/* ---------------------------------------------------------------- the hand-over queue */

static void hand(const struct handed *h)
{
    bool first;

    for (;;) {
        (void) pthread_mutex_lock(&rxt.out_lock);
        if (rxt.qn < rxt.qcap) {
            break;
        }
        size_t ncap = rxt.qcap ? 2 * rxt.qcap : 256;
        struct handed *nq = realloc(rxt.q, ncap * sizeof(*nq));

        if (NULL != nq) {
            rxt.q = nq;
            rxt.qcap = ncap;
            break;
        }
        /* nothing to do but wait for memory: the get is not lost, only late */
        (void) pthread_mutex_unlock(&rxt.out_lock);
        if (!__atomic_exchange_n(&rxt.oom, true, __ATOMIC_RELAXED)) {
            opal_output(0, "btl:devmem: receiving thread: no memory to hand over a finished "
                           "get; retrying");
        }
        usleep(1000);
    }
    first = 0 == rxt.qn;
    rxt.q[rxt.qn++] = *h;
    (void) pthread_mutex_unlock(&rxt.out_lock);
    if (first) {
        uint64_t one = 1;

        (void) !write(rxt.notify_fd, &one, sizeof(one));
    }
}

static void sink_complete(void *ctx, mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag)
{
    struct handed h = {.ep = ep, .frag = frag};

    hand(&h);
}

/* The lane receives no more (df->rx_failed: turn detaches it); its endpoint fails on the
 * progress thread. */
static void sink_fail(void *ctx, struct mca_btl_devmem_devflow *df, const char *why)
{
    struct handed h = {.ep = df->ep, .how = MCA_BTL_DEVMEM_RX_FAILED, .why = strdup(why)};

    hand(&h);
}

static const struct mca_btl_devmem_gather_sink thread_sink = {sink_complete, sink_fail};

/* What the threads handed over, done on the progress thread (dispatch lock held). Taken out
 * whole first, the threads given the spare array to fill meanwhile: a completion may call
 * progress, which delivers too (and then finds no spare, and allocates). */
static int deliver(void)
{
    struct handed *q;
    size_t n, cap;

    (void) pthread_mutex_lock(&rxt.out_lock);
    q = rxt.q;
    n = rxt.qn;
    cap = rxt.qcap;
    rxt.q = rxt.spare;
    rxt.qcap = rxt.spare_cap;
    rxt.qn = 0;
    rxt.spare = NULL;
    rxt.spare_cap = 0;
    (void) pthread_mutex_unlock(&rxt.out_lock);
    for (size_t i = 0; i < n; i++) {
        struct handed *h = &q[i];

        if (NULL != h->frag) {
            mca_btl_devmem_endpoint_complete(h->ep, h->frag, OPAL_SUCCESS);
        } else if (NULL != h->df) {
            mca_btl_devmem_devflow_rx_ended(h->df, h->how, NULL == h->why ? "" : h->why,
                                            h->err);
        } else {
            mca_btl_devmem_endpoint_fail(h->ep, NULL == h->why ? "receiving thread" : h->why,
                                         0);
        }
        free(h->why);
    }
    (void) pthread_mutex_lock(&rxt.out_lock);
    if (NULL == rxt.spare) {
        rxt.spare = q;
        rxt.spare_cap = cap;
        q = NULL;
    }
    (void) pthread_mutex_unlock(&rxt.out_lock);
    free(q);
    return (int) n;
}

static void notify_cb(int fd, short flags, void *arg)
{
    uint64_t v;

    (void) !read(fd, &v, sizeof(v));
    (void) deliver();
}

/* ---------------------------------------------------------------- lanes of a thread */

static uint64_t cookie(const struct rxthread *t, size_t slot)
{
    return ((uint64_t) t->gen[slot] << SLOT_BITS) | slot;
}

/* Out of t's table and epoll set (t's lock held): t looks at the lane no more. */
static void detach(struct rxthread *t, size_t slot)
{
    struct mca_btl_devmem_devflow *df = t->lanes[slot];

    (void) epoll_ctl(t->epfd, EPOLL_CTL_DEL, df->rx_sd, NULL);
    t->lanes[slot] = NULL;
    t->gen[slot]++;
    t->nlanes--;
}

static size_t slot_of(const struct rxthread *t, const struct mca_btl_devmem_devflow *df)
{
    for (size_t i = 0; i < t->nslots; i++) {
        if (t->lanes[i] == df) {
            return i;
        }
    }
    return SIZE_MAX;
}

/* One turn on the lane in slot: receive and gather; an end is handed over, the lane's
 * receives finished first so that it leaves nothing in this thread's pipe. */
static bool turn(struct rxthread *t, size_t slot)
{
    struct mca_btl_devmem_devflow *df = t->lanes[slot];
    struct mca_btl_devmem_rx_tally tally = {0, 0};
    char why[DEVMEM_ERR_MSG_MAX + 96];
    int err = 0;
    enum mca_btl_devmem_rx_step how;

    how = mca_btl_devmem_devflow_rx_step(df, &t->batch, why, sizeof(why), &err, &tally);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.rxthread_receives[t->index], tally.receives);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.rxthread_bytes[t->index], tally.bytes);
    if (MCA_BTL_DEVMEM_RX_EOF == how || MCA_BTL_DEVMEM_RX_FAILED == how) {
        struct handed h = {.ep = df->ep, .df = df, .how = how, .err = err,
                           .why = MCA_BTL_DEVMEM_RX_FAILED == how ? strdup(why) : NULL};

        mca_btl_devmem_devflow_gather_settle(df);
        detach(t, slot);
        hand(&h);
    } else if (df->rx_failed) {
        /* a gather of the lane failed (its endpoint's failure is handed over already) */
        mca_btl_devmem_devflow_gather_settle(df);
        detach(t, slot);
    }
    return MCA_BTL_DEVMEM_RX_STARVED == how;
}

static void *serve(void *arg)
{
    struct rxthread *t = arg;
    struct epoll_event ev[RX_EVENTS];

    for (;;) {
        bool busy, starved = false;
        int n;

        /* asleep while its lanes are idle; a batch still gathering is looked at again */
        (void) pthread_mutex_lock(&t->lock);
        busy = mca_btl_devmem_devflow_gather_busy(&t->pipe);
        (void) pthread_mutex_unlock(&t->lock);
        n = epoll_wait(t->epfd, ev, RX_EVENTS, busy ? 0 : -1);
        (void) pthread_mutex_lock(&t->lock);
        if (t->stop) {
            (void) pthread_mutex_unlock(&t->lock);
            break;
        }
        for (int i = 0; i < n; i++) {
            uint64_t c = ev[i].data.u64;
            size_t slot = (size_t) (c & ((1u << SLOT_BITS) - 1));

            if (UINT64_MAX == c) {
                uint64_t v;

                (void) !read(t->wake_fd, &v, sizeof(v));
            } else if (slot < t->nslots && NULL != t->lanes[slot] && cookie(t, slot) == c) {
                starved |= turn(t, slot);
            }
        }
        (void) mca_btl_devmem_devflow_gather_progress(&t->pipe);
        (void) pthread_mutex_unlock(&t->lock);
        if (starved) {
            /* the pool is full of other threads' receives: let them finish */
            sched_yield();
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- the server */

static int take(void *ctx, struct mca_btl_devmem_devflow *df)
{
    struct rxthread *t = NULL;
    struct epoll_event ev = {.events = EPOLLIN};
    size_t slot, fewest = SIZE_MAX;
    int rc = 0;

    /* the thread with the fewest lanes (a thread drops the lanes that end by itself) */
    for (int i = 0; i < rxt.n; i++) {
        (void) pthread_mutex_lock(&rxt.t[i].lock);
        if (rxt.t[i].nlanes < fewest) {
            fewest = rxt.t[i].nlanes;
            t = &rxt.t[i];
        }
        (void) pthread_mutex_unlock(&rxt.t[i].lock);
    }
    (void) pthread_mutex_lock(&t->lock);
    if (SIZE_MAX == (slot = slot_of(t, NULL))) {
        size_t ncap = t->nslots ? 2 * t->nslots : 8;
        struct mca_btl_devmem_devflow **nl = NULL;
        uint32_t *ng = NULL;

        if (ncap < (1u << SLOT_BITS) && NULL != (nl = realloc(t->lanes, ncap * sizeof(*nl)))) {
            t->lanes = nl;
            if (NULL != (ng = realloc(t->gen, ncap * sizeof(*ng)))) {
                t->gen = ng;
            }
        }
        if (NULL == nl || NULL == ng) {
            (void) pthread_mutex_unlock(&t->lock);
            return -ENOMEM;
        }
        for (size_t i = t->nslots; i < ncap; i++) {
            t->lanes[i] = NULL;
            t->gen[i] = 0;
        }
        slot = t->nslots;
        t->nslots = ncap;
    }
    t->lanes[slot] = df;
    ev.data.u64 = cookie(t, slot);
    if (0 != epoll_ctl(t->epfd, EPOLL_CTL_ADD, df->rx_sd, &ev)) {
        rc = -errno;
        t->lanes[slot] = NULL;
    } else {
        t->nlanes++;
        df->pipe = &t->pipe;
        df->rx_server_data = t;
    }
    (void) pthread_mutex_unlock(&t->lock);
    if (0 == rc) {
        DEVMEM_VERBOSE(20, "device flow %u from %s: receiving thread %u", df->lane,
                       OPAL_NAME_PRINT(df->ep->peer->name), t->index);
    }
    return rc;
}

static void give_back(void *ctx, struct mca_btl_devmem_devflow *df)
{
    struct rxthread *t = df->rx_server_data;
    size_t slot;

    (void) pthread_mutex_lock(&t->lock);
    if (SIZE_MAX != (slot = slot_of(t, df))) {
        /* its receives finish here, with the thread between turns */
        mca_btl_devmem_devflow_gather_settle(df);
        detach(t, slot);
    }
    (void) pthread_mutex_unlock(&t->lock);
    (void) deliver();
}

static const struct mca_btl_devmem_devflow_rx_server server = {take, give_back, NULL};

/* ---------------------------------------------------------------- placement */

/* The CPUs this node's other ranks are bound to (mca_btl_devmem_rxthreads_avoid), which
 * the threads keep off as they keep off their own rank's; known: at least one said. */
static cpu_set_t others;
static bool others_known;

/* The CPUs near the device path's NIC, read from the topology once per start of the threads
 * (placing them again for each local rank add_procs names must not load hwloc's topology
 * each time): 0 not read yet, 1 read, -1 unknown. */
static cpu_set_t nic_near;
static int nic_near_state;

/* The CPUs near nic (within all) into *near; false when the topology does not say. */
static bool nic_cpus(const char *nic, const cpu_set_t *all, cpu_set_t *near)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const char *xml = NULL != c->topology && '\0' != c->topology[0] ? c->topology : NULL;
    struct devmem_topo *topo = NULL;
    struct devmem_err e;
    int cpus[CPU_SETSIZE];
    size_t n = 0;

    if (0 == nic_near_state) {
        CPU_ZERO(&nic_near);
        nic_near_state = -1;
        if (0 == devmem_topo_open(&topo, xml, &e)
            && 0 == devmem_topo_nic_cpus(topo, nic, cpus, CPU_SETSIZE, &n, &e)) {
            for (size_t i = 0; i < n; i++) {
                CPU_SET(cpus[i], &nic_near);
            }
            CPU_AND(&nic_near, &nic_near, all);
            nic_near_state = CPU_COUNT(&nic_near) > 0 ? 1 : -1;
        }
        devmem_topo_close(topo);
    }
    *near = nic_near;
    return 1 == nic_near_state;
}

/* where = from less busy, when that leaves a CPU. */
static bool take_less(cpu_set_t *where, const cpu_set_t *from, const cpu_set_t *busy)
{
    CPU_XOR(where, from, busy);
    CPU_AND(where, where, from);
    return CPU_COUNT(where) > 0;
}

/* Where the threads run. Near the NIC of the device path (hwloc: its NUMA node or package)
 * and off the CPUs this node's ranks are bound to, where they compute: this rank's and, once
 * add_procs has told them, the other local ranks'. In order, the first that leaves a CPU:
 * the NIC's CPUs less every rank's, every CPU less every rank's, the NIC's less this rank's,
 * every CPU less this rank's. A rank bound nowhere (all CPUs) has its threads on the NIC's
 * CPUs less the other ranks' (or all of the NIC's) when they are known. Otherwise, or when
 * nothing is left, the threads run where the rank does. false: leave them so; said tells
 * why, or where. */
static bool place(cpu_set_t *where, char *said, size_t len)
{
    const char *nic = NULL, *whose = others_known ? "this node's ranks'" : "this rank's";
    cpu_set_t own, near, all, busy;
    bool bound, known = false;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);

    CPU_ZERO(&all);
    CPU_ZERO(&near);
    for (long i = 0; i < ncpu && i < CPU_SETSIZE; i++) {
        CPU_SET(i, &all);
    }
    if (0 != sched_getaffinity(0, sizeof(own), &own)) {
        snprintf(said, len, "where the rank runs (its binding unknown: %s)", strerror(errno));
        return false;
    }
    CPU_AND(&own, &own, &all);
    bound = !CPU_EQUAL(&own, &all);
    CPU_ZERO(&busy);
    if (bound) {
        CPU_OR(&busy, &busy, &own);
    }
    CPU_OR(&busy, &busy, &others);
    CPU_AND(&busy, &busy, &all);
    for (int i = 0; i < mca_btl_devmem_num_modules && NULL == nic; i++) {
        const mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];

        if (NULL != m->devpath.dev && !m->itf.loopback) {
            nic = m->itf.name;
        }
    }
    if (NULL != nic) {
        known = nic_cpus(nic, &all, &near);
    }
    if (!bound) {
        if (!known) {
            snprintf(said, len, "where the rank runs (unbound; %s)",
                     NULL == nic ? "no NIC carries the device path" : "its NIC's CPUs unknown");
            return false;
        }
        if (!take_less(where, &near, &busy)) {
            *where = near;
        }
        snprintf(said, len, "near %s%s", nic,
                 others_known ? ", off the other ranks' CPUs where it could" : "");
        return true;
    }
    if (known && take_less(where, &near, &busy)) {
        snprintf(said, len, "near %s, off %s CPUs", nic, whose);
    } else if (take_less(where, &all, &busy)) {
        snprintf(said, len, "off %s CPUs; %s", whose,
                 NULL == nic ? "no NIC carries the device path"
                 : known ? "none spare near its NIC" : "its NIC's CPUs unknown");
    } else if (known && take_less(where, &near, &own)) {
        snprintf(said, len, "near %s, off this rank's CPUs; none spare beside the other ranks'",
                 nic);
    } else if (take_less(where, &all, &own)) {
        snprintf(said, len, "off this rank's CPUs; none spare beside the other ranks'");
    } else {
        snprintf(said, len, "where the rank runs (no CPU to spare beside its binding)");
        return false;
    }
    return true;
}

/* "0-3,8" for messages */
static void cpus_str(const cpu_set_t *set, char *buf, size_t len)
{
    size_t used = 0;

    buf[0] = '\0';
    for (int i = 0; i < CPU_SETSIZE && used < len; i++) {
        int j = i;

        if (!CPU_ISSET(i, set)) {
            continue;
        }
        while (j + 1 < CPU_SETSIZE && CPU_ISSET(j + 1, set)) {
            j++;
        }
        used += (size_t) snprintf(buf + used, len - used, i == j ? "%s%d" : "%s%d-%d",
                                  used ? "," : "", i, j);
        i = j;
    }
}

/* ---------------------------------------------------------------- how many, by default */

/* CPUs a node must have to spare, beyond those its ranks compute on, before a rank starts a
 * receiving thread by itself: a thread takes a CPU only while its lanes receive, but on a
 * node with none to spare it takes it from a rank or the application (the 2-core VM, 2 ranks
 * in two namespaces: 1 thread cost 5 % (4 lanes) to 11 % (1 lane) of the 16 MiB bandwidth,
 * medians of 5, bench/rx_threads.sh); where there are, it lets a rank that computes outside
 * MPI go on receiving (all of a 16 MiB transfer hidden behind the computing, against 8-18 %
 * without). */
#define RX_THREADS_AUTO_SPARE 4

int mca_btl_devmem_rxthreads_auto(char *said, size_t len)
{
    int local = (int) opal_process_info.num_local_peers + 1, cpus, width, spare, want;
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t own;

    /* The CPUs the node's ranks share: this rank's set where it may run on several (not
     * bound, or bound widely: what a batch system's cpuset leaves the job, or a package);
     * the node's where it is bound to one CPU, each local rank then taking one. */
    width = 0 == sched_getaffinity(0, sizeof(own), &own) ? CPU_COUNT(&own) : 1;
    cpus = width > 1 ? width : (int) online;
    if (mca_btl_devmem_component.testing_cpus > 0) {
        cpus = mca_btl_devmem_component.testing_cpus;
    }
    spare = cpus - local;
    want = local > RX_THREADS_AUTO_SPARE ? local : RX_THREADS_AUTO_SPARE;
    snprintf(said, len, "%d CPU(s) spare beside %d local rank(s)%s", spare > 0 ? spare : 0,
             local, spare >= want ? "" : ", too few");
    return spare >= want ? 1 : 0;
}

/* ---------------------------------------------------------------- start, stop */

static int thread_open(struct rxthread *t, unsigned int index, const cpu_set_t *where)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
    struct devmem_err e;
    char name[32];
    int rc;

    memset(t, 0, sizeof(*t));
    t->index = index;
    t->epfd = t->wake_fd = -1;
    (void) pthread_mutex_init(&t->lock, NULL);
    mca_btl_devmem_gather_pipe_init(&t->pipe, &thread_sink, t);
    if (0 != mca_btl_devmem_dev_batch_init(&t->batch, &e)) {
        opal_output(0, "btl:devmem: receiving thread %u: %s", index, e.msg);
        return -ENOMEM;
    }
    t->batch_ready = true;
    if ((t->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0
        || (t->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0
        || 0 != epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->wake_fd, &ev)) {
        return -errno;
    }
    if (0 != (rc = pthread_create(&t->tid, NULL, serve, t))) {
        return -rc;
    }
    t->running = true;
    if (NULL != where) {
        (void) pthread_setaffinity_np(t->tid, sizeof(*where), where);
    }
    snprintf(name, sizeof(name), "devmem-rx%u", index);
    name[15] = '\0'; /* the kernel's limit */
    (void) pthread_setname_np(t->tid, name); /* top -H, ps -L */
    return 0;
}

static void thread_close(struct rxthread *t)
{
    if (t->running) {
        uint64_t one = 1;

        (void) pthread_mutex_lock(&t->lock);
        t->stop = true;
        (void) pthread_mutex_unlock(&t->lock);
        (void) !write(t->wake_fd, &one, sizeof(one));
        (void) pthread_join(t->tid, NULL);
        t->running = false;
    }
    /* every lane was given back as it closed: the pipe is empty */
    mca_btl_devmem_devflow_gather_fini(&t->pipe);
    if (t->batch_ready) {
        devmem_rx_batch_fini(&t->batch);
    }
    if (t->wake_fd >= 0) {
        close(t->wake_fd);
    }
    if (t->epfd >= 0) {
        close(t->epfd);
    }
    free(t->lanes);
    free(t->gen);
    (void) pthread_mutex_destroy(&t->lock);
}

int mca_btl_devmem_rxthreads_start(int n)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    cpu_set_t where;
    char said[128], list[256];
    bool pinned;
    int rc = 0;

    if (n <= 0) {
        return 0;
    }
    pinned = place(&where, said, sizeof(said));
    if (NULL == (rxt.t = calloc((size_t) n, sizeof(*rxt.t)))) {
        return -ENOMEM;
    }
    if ((rxt.notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
        rc = -errno;
    } else {
        mca_btl_devmem_pollset_init(&rxt.notify_watch, rxt.notify_fd, notify_cb, NULL);
        rc = mca_btl_devmem_pollset_set(&rxt.notify_watch, OPAL_EV_READ);
    }
    for (int i = 0; i < n && 0 == rc; i++) {
        rxt.n = i + 1;
        rc = thread_open(&rxt.t[i], (unsigned int) i, pinned ? &where : NULL);
    }
    if (0 != rc) {
        mca_btl_devmem_rxthreads_stop();
        return rc;
    }
    for (int i = 0; i < MCA_BTL_DEVMEM_RX_THREADS_MAX; i++) {
        c->rxthread_receives[i] = 0;
        c->rxthread_bytes[i] = 0;
    }
    __atomic_store_n(&c->rx_threads_running, n, __ATOMIC_RELAXED);
    mca_btl_devmem_devflow_rx_serve(&server);
    if (pinned) {
        cpus_str(&where, list, sizeof(list));
        DEVMEM_VERBOSE(10, "%d receiving thread(s) serve the device flows, on CPUs %s (%s)", n,
                       list, said);
    } else {
        DEVMEM_VERBOSE(10, "%d receiving thread(s) serve the device flows, %s", n, said);
    }
    return 0;
}

void mca_btl_devmem_rxthreads_avoid(const char *cpulist)
{
    int cpus[CPU_SETSIZE];
    cpu_set_t where, before = others;
    struct devmem_err e;
    char said[128], list[256];
    size_t n = 0;

    if (0 == rxt.n) {
        return; /* no threads: nothing to place */
    }
    if (0 != devmem_cpulist_parse(cpulist, CPU_SETSIZE, cpus, CPU_SETSIZE, &n, &e)) {
        DEVMEM_VERBOSE(10, "a local rank's binding: %s", e.msg);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        CPU_SET(cpus[i], &others);
    }
    others_known = true;
    if (CPU_EQUAL(&before, &others) || !place(&where, said, sizeof(said))) {
        return;
    }
    for (int i = 0; i < rxt.n; i++) {
        (void) pthread_setaffinity_np(rxt.t[i].tid, sizeof(where), &where);
    }
    cpus_str(&where, list, sizeof(list));
    DEVMEM_VERBOSE(10, "%d receiving thread(s) moved to CPUs %s (%s)", rxt.n, list, said);
}

void mca_btl_devmem_rxthreads_stop(void)
{
    mca_btl_devmem_devflow_rx_serve(NULL);
    for (int i = 0; i < rxt.n; i++) {
        thread_close(&rxt.t[i]);
    }
    (void) deliver(); /* nothing is left to hand over: lanes end before the threads */
    free(rxt.q);
    free(rxt.spare);
    rxt.q = rxt.spare = NULL;
    rxt.qn = rxt.qcap = rxt.spare_cap = 0;
    if (rxt.notify_fd >= 0) {
        (void) mca_btl_devmem_pollset_set(&rxt.notify_watch, 0);
        close(rxt.notify_fd);
        rxt.notify_fd = -1;
    }
    free(rxt.t);
    rxt.t = NULL;
    rxt.n = 0;
    CPU_ZERO(&others);
    others_known = false;
    nic_near_state = 0;
    __atomic_store_n(&mca_btl_devmem_component.rx_threads_running, 0, __ATOMIC_RELAXED);
}
