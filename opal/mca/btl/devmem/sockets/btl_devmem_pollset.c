/* SPDX-License-Identifier: BSD-3-Clause */
/* Our sockets' readiness, polled from our progress function: see btl_devmem_pollset.h. */
#include "sockets/btl_devmem_pollset.h"

#include <assert.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#define EPOLL_BATCH 32
#define TICK_US 1000 /* the libevent fallback's period (libevent itself runs every 10 ms) */

/* The dispatch lock (btl_devmem_pollset.h): a mutex, and per thread how deep it holds it. */
static pthread_mutex_t dispatch_mutex = PTHREAD_MUTEX_INITIALIZER;
static __thread int dispatch_depth;

/* The set's own lock, a leaf: membership and the arrays below. Any thread may add a watch
 * or change what it wants (a send that connects, a blocked write); only the dispatch lock's
 * holder removes one, so entries do not move while it dispatches. */
static pthread_mutex_t set_mutex = PTHREAD_MUTEX_INITIALIZER;

/* Every watch in the set, and for the poll backend its pollfd at the same index. A watch
 * that leaves the set while a dispatch runs leaves a hole (NULL, fd -1) that is closed
 * once the dispatch is over, so that a callback may close another connection (and free its
 * watch) that is also ready. */
static mca_btl_devmem_polled_t **watches;
static struct pollfd *pfds;
static int count, cap, holes;
static int poll_max_sockets = 16;
static int ep_fd = -1; /* the epoll backend, once more than poll_max_sockets are watched */
static bool opened;
/* the dispatcher's own (dispatch lock): what it polls and what came back */
static struct pollfd *polled;
static int polled_cap;
static struct epoll_event batch[EPOLL_BATCH];
static int batch_len, batch_next;
static bool dispatching;
static opal_event_t tick; /* serves the set where our progress function is not called */

void mca_btl_devmem_dispatch_lock(void)
{
    if (0 == dispatch_depth++) {
        (void) pthread_mutex_lock(&dispatch_mutex);
    }
}

bool mca_btl_devmem_dispatch_trylock(void)
{
    if (dispatch_depth > 0 || 0 != pthread_mutex_trylock(&dispatch_mutex)) {
        return false; /* another thread dispatches, or this one, further up its stack */
    }
    dispatch_depth = 1;
    return true;
}

void mca_btl_devmem_dispatch_unlock(void)
{
    assert(dispatch_depth > 0);
    if (0 == --dispatch_depth) {
        (void) pthread_mutex_unlock(&dispatch_mutex);
    }
}

bool mca_btl_devmem_dispatch_held(void)
{
    return dispatch_depth > 0;
}

static short poll_events(short want)
{
    return (short) (((want & OPAL_EV_READ) ? POLLIN : 0) | ((want & OPAL_EV_WRITE) ? POLLOUT : 0));
}

static int epoll_add(mca_btl_devmem_polled_t *w, int op)
{
    struct epoll_event ev = {0};

    ev.events = ((w->want & OPAL_EV_READ) ? EPOLLIN : 0)
                | ((w->want & OPAL_EV_WRITE) ? EPOLLOUT : 0);
    ev.data.ptr = w;
    return 0 == epoll_ctl(ep_fd, op, w->fd, &ev) ? 0 : -errno;
}

/* Past poll_max sockets a poll() over all of them costs more per turn than epoll's wake-up
 * per packet: move everything into an epoll set, for good. */
static int switch_to_epoll(void)
{
    int rc = 0;

    ep_fd = epoll_create1(EPOLL_CLOEXEC);
    if (ep_fd < 0) {
        return -errno;
    }
    for (int i = 0; i < count && 0 == rc; i++) {
        if (NULL != watches[i]) {
            rc = epoll_add(watches[i], EPOLL_CTL_ADD);
        }
    }
    if (0 != rc) {
        close(ep_fd);
        ep_fd = -1;
    }
    return rc;
}

static void close_holes(void)
{
    int j = 0;

    for (int i = 0; i < count; i++) {
        if (NULL != watches[i]) {
            watches[j] = watches[i];
            pfds[j] = pfds[i];
            watches[j]->slot = j;
            j++;
        }
    }
    count = j;
    holes = 0;
}

static void tick_cb(int fd, short flags, void *arg)
{
    (void) mca_btl_devmem_pollset_poll();
}

int mca_btl_devmem_pollset_open(int poll_max)
{
    struct timeval every = {0, TICK_US};

    poll_max_sockets = poll_max;
    if (poll_max_sockets <= 0) {
        int rc = switch_to_epoll();
        if (0 != rc) {
            return rc;
        }
    }
    opal_event_set(opal_sync_event_base, &tick, -1, OPAL_EV_PERSIST, tick_cb, NULL);
    opal_event_add(&tick, &every);
    opened = true;
    return 0;
}

void mca_btl_devmem_pollset_close(void)
{
    if (opened) {
        opal_event_del(&tick);
        opened = false;
    }
    if (ep_fd >= 0) {
        close(ep_fd);
        ep_fd = -1;
    }
    free(watches);
    free(pfds);
    free(polled);
    watches = NULL;
    pfds = NULL;
    polled = NULL;
    count = cap = holes = polled_cap = 0;
}

void mca_btl_devmem_pollset_init(mca_btl_devmem_polled_t *w, int fd, mca_btl_devmem_polled_cb_t cb,
                                 void *arg)
{
    w->fd = fd;
    w->want = 0;
    w->slot = -1;
    w->cb = cb;
    w->arg = arg;
}

static int join(mca_btl_devmem_polled_t *w)
{
    if (count == cap) {
        int ncap = cap > 0 ? 2 * cap : 16;
        void *nw = realloc(watches, ncap * sizeof(*watches)), *np;

        if (NULL == nw) {
            return -ENOMEM;
        }
        watches = nw;
        if (NULL == (np = realloc(pfds, ncap * sizeof(*pfds)))) {
            return -ENOMEM;
        }
        pfds = np;
        cap = ncap;
    }
    w->slot = count;
    watches[count] = w;
    pfds[count].fd = w->fd;
    pfds[count].events = poll_events(w->want);
    pfds[count].revents = 0;
    count++;
    return 0;
}

/* Under set_mutex, by the dispatch lock's holder (see set_mutex). */
static void leave(mca_btl_devmem_polled_t *w)
{
    int i = w->slot;

    assert(mca_btl_devmem_dispatch_held() || !opened);
    w->slot = -1;
    watches[i] = NULL;
    pfds[i].fd = -1;
    holes++;
    if (!dispatching) {
        close_holes();
    }
    for (int b = batch_next; b < batch_len; b++) {
        if (batch[b].data.ptr == w) {
            batch[b].data.ptr = NULL;
        }
    }
}

static int set_locked(mca_btl_devmem_polled_t *w, short want)
{
    short had = w->want;
    int rc = 0;

    if (want == had) {
        return 0;
    }
    if (!opened) { /* the set is gone (component closed): nothing left to leave */
        w->want = 0;
        w->slot = -1;
        return 0 == want ? 0 : -EBADF;
    }
    w->want = want;
    if (0 == want) {
        if (ep_fd >= 0) {
            (void) epoll_ctl(ep_fd, EPOLL_CTL_DEL, w->fd, NULL); /* a closed fd left by itself */
        }
        leave(w);
        return 0;
    }
    if (0 == had) {
        rc = join(w);
    } else {
        pfds[w->slot].events = poll_events(want);
    }
    if (0 == rc && ep_fd >= 0) {
        rc = epoll_add(w, 0 == had ? EPOLL_CTL_ADD : EPOLL_CTL_MOD);
    } else if (0 == rc && ep_fd < 0 && count - holes > poll_max_sockets) {
        /* without a descriptor for the epoll set (a stranger holding them all: EMFILE) poll()
         * goes on serving every socket, only dearer; the next socket to join tries again */
        (void) switch_to_epoll();
    }
    if (0 != rc) {
        if (w->slot >= 0) {
            leave(w);
        }
        w->want = 0;
    }
    return rc;
}

int mca_btl_devmem_pollset_set(mca_btl_devmem_polled_t *w, short want)
{
    int rc;

    (void) pthread_mutex_lock(&set_mutex);
    rc = set_locked(w, want);
    (void) pthread_mutex_unlock(&set_mutex);
    return rc;
}

/* One ready watch: its callback, told what it asked for (an error or a hangup wakes both
 * directions, as libevent does). Returns 1 when the callback ran. The watch cannot leave
 * the set, nor its memory go, but through this thread: the dispatch lock is ours. */
static int fire(mca_btl_devmem_polled_t *w, bool in, bool out, bool err)
{
    short flags = (short) (((in || err) ? OPAL_EV_READ : 0) | ((out || err) ? OPAL_EV_WRITE : 0));

    (void) pthread_mutex_lock(&set_mutex);
    flags &= w->want;
    (void) pthread_mutex_unlock(&set_mutex);
    if (0 == flags) {
        return 0;
    }
    w->cb(w->fd, flags, w->arg);
    return 1;
}

static int dispatch_epoll(int timeout_us)
{
    int n = -1, ran = 0;

#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 35)
    static bool no_pwait2; /* kernel < 5.11 (or valgrind < 3.20, which lacks it) */

    if (timeout_us > 0 && !no_pwait2) {
        struct timespec ts = {timeout_us / 1000000, (long) (timeout_us % 1000000) * 1000};

        n = epoll_pwait2(ep_fd, batch, EPOLL_BATCH, &ts, NULL);
        no_pwait2 = n < 0 && ENOSYS == errno;
    }
    if (timeout_us <= 0 || no_pwait2)
#endif
    {
        /* whole milliseconds, rounded up */
        n = epoll_wait(ep_fd, batch, EPOLL_BATCH, (timeout_us + 999) / 1000);
    }
    (void) pthread_mutex_lock(&set_mutex);
    batch_len = n > 0 ? n : 0;
    for (batch_next = 0; batch_next < batch_len;) {
        struct epoll_event ev = batch[batch_next++];

        (void) pthread_mutex_unlock(&set_mutex);
        if (NULL != ev.data.ptr) { /* NULL: left the set while this batch ran */
            ran += fire(ev.data.ptr, ev.events & (EPOLLIN | EPOLLRDHUP), ev.events & EPOLLOUT,
                        ev.events & (EPOLLERR | EPOLLHUP));
        }
        (void) pthread_mutex_lock(&set_mutex);
    }
    batch_len = batch_next = 0;
    (void) pthread_mutex_unlock(&set_mutex);
    return ran;
}

/* poll() on a copy of the set, so that other threads may add to it (and grow its arrays)
 * meanwhile; the watches polled keep their places until the dispatch is over (holes). */
static int dispatch_poll(int timeout_us)
{
    struct timespec ts = {timeout_us / 1000000, (long) (timeout_us % 1000000) * 1000};
    int n, ran = 0;

    (void) pthread_mutex_lock(&set_mutex);
    n = count;
    if (n > polled_cap) {
        struct pollfd *np = realloc(polled, (size_t) cap * sizeof(*polled));

        if (NULL == np) {
            (void) pthread_mutex_unlock(&set_mutex);
            return 0;
        }
        polled = np;
        polled_cap = cap;
    }
    memcpy(polled, pfds, (size_t) n * sizeof(*polled));
    (void) pthread_mutex_unlock(&set_mutex);

    /* a zero timeout registers no wait-queue entry: the sender's wake-up per packet, which a
     * standing epoll registration costs, is paid only while we really sleep */
    if (ppoll(polled, (nfds_t) n, &ts, NULL) <= 0) {
        return 0;
    }
    for (int i = 0; i < n; i++) {
        short re = polled[i].revents;
        mca_btl_devmem_polled_t *w;

        if (0 == re) {
            continue;
        }
        (void) pthread_mutex_lock(&set_mutex);
        w = watches[i];
        (void) pthread_mutex_unlock(&set_mutex);
        if (NULL != w) {
            ran += fire(w, re & (POLLIN | POLLRDHUP), re & POLLOUT,
                        re & (POLLERR | POLLHUP | POLLNVAL));
        }
    }
    return ran;
}

static void set_dispatching(bool on)
{
    (void) pthread_mutex_lock(&set_mutex);
    dispatching = on;
    if (!on && holes > 0) {
        close_holes();
    }
    (void) pthread_mutex_unlock(&set_mutex);
}

int mca_btl_devmem_pollset_dispatch(int timeout_us)
{
    int ran, epoll_on;

    assert(mca_btl_devmem_dispatch_held());
    if (!opened || dispatching) { /* dispatching: a callback further up this thread's stack */
        return 0;
    }
    set_dispatching(true);
    (void) pthread_mutex_lock(&set_mutex);
    epoll_on = ep_fd >= 0;
    (void) pthread_mutex_unlock(&set_mutex);
    ran = epoll_on ? dispatch_epoll(timeout_us) : dispatch_poll(timeout_us);
    set_dispatching(false);
    return ran;
}

int mca_btl_devmem_pollset_poll(void)
{
    int ran;

    if (!mca_btl_devmem_dispatch_trylock()) {
        return 0;
    }
    ran = mca_btl_devmem_pollset_dispatch(0);
    mca_btl_devmem_dispatch_unlock();
    return ran;
}
