/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Readiness of our sockets, polled straight from the component's progress function.
 *
 * Open MPI drives libevent (its poll backend) at every opal_progress only while some
 * component counts itself an event user; the TCP BTL does, so a waiting rank pays libevent's
 * poll() and dispatch on each turn of the progress loop. Ours polls every socket it owns
 * (listen sockets, handshakes, connections, device flows) itself and hands a message to its
 * callback without libevent in between.
 *
 * Two backends behind one set. Up to 16 sockets (btl_devmem_testing poll_max= for tests): poll()
 * with a zero timeout, which leaves no wait-queue entry on the sockets (a standing epoll
 * registration makes the sender pay a wake-up for every packet: 5-10 % of the small-message
 * bandwidth on loopback, measured). Beyond that, for good: one epoll set, whose idle turn costs
 * one epoll_wait whatever the number of peers. A libevent timer serves the set where our
 * progress function does not poll it: before the BML registers it, and while no connection
 * of ours is open (listen sockets and handshakes then wait for Open MPI's 10 ms tick, as
 * they did in libevent, and ranks that talk only over shared memory pay nothing).
 *
 * Timers stay in libevent: none of ours needs better than its 10 ms tick.
 * Level-triggered, like libevent's descriptors: a callback may stop before EAGAIN.
 *
 * Threads: the dispatch lock. Callbacks run only in the thread that holds it, so everything
 * they own (receive state, handshakes, device flows) has one thread at a time without locks
 * of its own. Progress takes it with a try-lock (another thread dispatching means the work
 * is being done); timers and failure paths that touch what callbacks own take it blocking.
 * It is recursive per thread. A separate leaf lock guards the set: any thread may add a
 * watch or change what it wants, but a watch leaves the set, and its memory goes, only
 * under the dispatch lock; so a dispatch never fires a watch that another thread freed.
 */
#ifndef MCA_BTL_DEVMEM_POLLSET_H
#define MCA_BTL_DEVMEM_POLLSET_H

#include "opal_config.h"

#include <stdbool.h>

#include "base/btl_devmem_ompi_compat.h"

BEGIN_C_DECLS

/* flags: OPAL_EV_READ and/or OPAL_EV_WRITE, as with libevent (an error or hangup on the
 * socket reports both, restricted to what the watch asked for) */
typedef void (*mca_btl_devmem_polled_cb_t)(int fd, short flags, void *arg);

typedef struct mca_btl_devmem_polled {
    int fd;
    short want; /* OPAL_EV_READ | OPAL_EV_WRITE now in the set; 0: not in it */
    int slot;   /* its place in the set, -1: none */
    mca_btl_devmem_polled_cb_t cb;
    void *arg;
} mca_btl_devmem_polled_t;

/* The set itself, for the component's open and close; poll_max: sockets polled with poll()
 * before the set moves to epoll (0: epoll from the start). 0 or -errno. */
int mca_btl_devmem_pollset_open(int poll_max);
void mca_btl_devmem_pollset_close(void);

/* A watch for fd, not yet in the set (never re-initialize one that is in it). */
void mca_btl_devmem_pollset_init(mca_btl_devmem_polled_t *w, int fd, mca_btl_devmem_polled_cb_t cb,
                                 void *arg);

/* What to be told about from now on (0: nothing, the watch leaves the set; call that before
 * closing fd or freeing w). 0 or -errno. */
int mca_btl_devmem_pollset_set(mca_btl_devmem_polled_t *w, short want);

static inline int mca_btl_devmem_pollset_add(mca_btl_devmem_polled_t *w, short flags)
{
    return mca_btl_devmem_pollset_set(w, (short) (w->want | flags));
}

static inline int mca_btl_devmem_pollset_del(mca_btl_devmem_polled_t *w, short flags)
{
    return mca_btl_devmem_pollset_set(w, (short) (w->want & ~flags));
}

/* The dispatch lock (above). trylock fails where another thread holds it, and where this
 * one does further up its stack (no dispatch inside a callback). */
void mca_btl_devmem_dispatch_lock(void);
bool mca_btl_devmem_dispatch_trylock(void);
void mca_btl_devmem_dispatch_unlock(void);
bool mca_btl_devmem_dispatch_held(void);

/* Run the callbacks of the ready watches, sleeping up to timeout_us (0: not at all) for
 * one to become ready; the number run. The caller holds the dispatch lock. */
int mca_btl_devmem_pollset_dispatch(int timeout_us);

/* The same without sleeping, taking the dispatch lock with a try-lock: 0 where it is held. */
int mca_btl_devmem_pollset_poll(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_POLLSET_H */
