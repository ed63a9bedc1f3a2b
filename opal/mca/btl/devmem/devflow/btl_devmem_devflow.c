/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows: the connections themselves, until and after the endpoint owns them. An
 * accepted connection waits, unread, until a control connection claims it by port for one
 * of its lanes (its address is the one that control connection comes from), its peer closes
 * it, or the handshake timeout drops it; then it is adopted for receiving on that lane. See
 * btl_devmem_devflow.h; the two directions live in btl_devmem_devflow_tx.c and _rx.c.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdma/btl_devmem_reg.h"
#include "devflow/btl_devmem_devflow_int.h"

/* Connections held unread until a control connection names them (each listener caps its
 * own: mca_btl_devmem_held_new). Made at init, before any thread; the dispatch lock's. */
static opal_list_t unclaimed;
static bool unclaimed_ready;

/* Descriptors the lanes' sockets hold now, both directions: changed under the dispatch lock,
 * read from any thread (a get that asks for lanes). */
static unsigned int lane_fds;

/* ---------------------------------------------------------------- states */

/* `timed`: a state that waits for the peer, left by handshake_timeout at the latest */
static const struct {
    const char *name;
    bool timed;
} tx_states[] = {
    /* entered: the flow's making, or the peer retired the lane (its RETIRE closed it, and
     * it may open again). left: devflow_start connects (CONNECTING); no descriptor
     * to spare (CLOSED, a fallback); the endpoint fails or closes first (CLOSED) */
    [MCA_BTL_DEVMEM_DF_TX_NONE] = {"none", false},
    /* entered: a connect started. Its timer is the attempt's: handshake_timeout, doubled
     * for each attempt after the first. left: the connect completes, and the lane is named
     * on the control connection (OPEN); the timer with attempts left connects again (here);
     * a connect error, or the last attempt's timer, falls back (CLOSED) or, with mode
     * require, fails the endpoint */
    [MCA_BTL_DEVMEM_DF_TX_CONNECTING] = {"connecting", true},
    /* entered: connected and named on the control connection. Its waits (room to send,
     * zerocopy completions) are the kernel's: the liveness check (btl_devmem_peer_timeout)
     * notices a peer that stops acknowledging; a timer here would also end a correct job
     * whose receiver is merely slow. left: the peer closes it with nothing owed (CLOSED,
     * quietly: it gave the lane up, or finalizes); the endpoint fails or closes (CLOSED) */
    [MCA_BTL_DEVMEM_DF_TX_OPEN] = {"open", false},
    /* entered: from any, on failure, fallback, at finalize, or as the peer retires the
     * lane. left: only that retirement (NONE, in the same step); otherwise final */
    [MCA_BTL_DEVMEM_DF_TX_CLOSED] = {"closed", false},
};

static const struct {
    const char *name;
    bool timed;
} rx_states[] = {
    /* entered: the flow's making, or the peer's RETIRED (the lane may open again). left:
     * the peer's claim (CLAIMED, or OPEN when its connection is already held); the endpoint
     * fails or closes (CLOSED) */
    [MCA_BTL_DEVMEM_DF_RX_NONE] = {"none", false},
    /* entered: a claim named a connection not yet accepted. left: that connection arrives
     * (OPEN); the timeout: the lane falls back to the control connection (CLOSED) or, with
     * mode require, the endpoint fails naming the peer */
    [MCA_BTL_DEVMEM_DF_RX_CLAIMED] = {"claimed", true},
    /* entered: adopted, its ledger open. Waits for gets' bytes only while gets are owed:
     * the peer's liveness covers that. left: the peer's orderly close with nothing owed, a
     * failure, finalize (CLOSED) */
    [MCA_BTL_DEVMEM_DF_RX_OPEN] = {"open", false},
    /* entered: from any state, on close or failure. left: the peer's RETIRED (NONE);
     * otherwise final */
    [MCA_BTL_DEVMEM_DF_RX_CLOSED] = {"closed", false},
};

static void devflow_timeout(int fd, short flags, void *arg)
{
    struct mca_btl_devmem_devflow *df = arg;
    char why[160];

    mca_btl_devmem_dispatch_lock(); /* a libevent timer: out of the callbacks' way */
    df->timer_armed = false;
    if (MCA_BTL_DEVMEM_DF_RX_CLAIMED == df->rx_state) {
        snprintf(why, sizeof(why), "the connection it named (port %u) did not arrive within "
                 "%d s (btl_devmem_handshake_timeout)", (unsigned) df->claim_port,
                 mca_btl_devmem_component.handshake_timeout);
        if (mca_btl_devmem_devflow_fall_back(df, false, why)) {
            mca_btl_devmem_devflow_rx_state(df, MCA_BTL_DEVMEM_DF_RX_CLOSED, why);
            mca_btl_devmem_devflow_settle(df->ep, "a lane it named never came");
        }
    }
    if (MCA_BTL_DEVMEM_DF_TX_CONNECTING == df->tx_state) {
        mca_btl_devmem_devflow_tx_timeout(df);
    }
    mca_btl_devmem_dispatch_unlock();
}

/* Arm the timer when either side is in a timed state, disarm it otherwise. A connecting
 * sending side waits twice as long at each attempt. */
static void rearm(struct mca_btl_devmem_devflow *df)
{
    bool timed = tx_states[df->tx_state].timed || rx_states[df->rx_state].timed;

    if (df->timer_armed && !timed) {
        opal_event_del(&df->timer);
        df->timer_armed = false;
    } else if (!df->timer_armed && timed) {
        int secs = mca_btl_devmem_component.handshake_timeout;
        unsigned int shift = MCA_BTL_DEVMEM_DF_TX_CONNECTING == df->tx_state
                             && df->tx_attempts > 1 ? df->tx_attempts - 1 : 0;
        struct timeval tv = {(secs > 0 ? secs : 1) << (shift < 4 ? shift : 4), 0};

        opal_event_evtimer_add(&df->timer, &tv);
        df->timer_armed = true;
    }
}

/* Re-arm: the timer of a state entered again (a new connect attempt) starts over. */
static void rearm_anew(struct mca_btl_devmem_devflow *df)
{
    if (df->timer_armed) {
        opal_event_del(&df->timer);
        df->timer_armed = false;
    }
    rearm(df);
}

bool mca_btl_devmem_devflow_fall_back(struct mca_btl_devmem_devflow *df, bool sending,
                                      const char *why)
{
    static bool said;
    char msg[320];

    snprintf(msg, sizeof(msg), "device-flow lane %u %s %s: %s", df->lane,
             sending ? "to" : "from", OPAL_NAME_PRINT(df->ep->peer->name), why);
    if (mca_btl_devmem_dev_required()) {
        char fatal[400];

        snprintf(fatal, sizeof(fatal), "%s; btl_devmem_mode require asks for the device path",
                 msg);
        mca_btl_devmem_endpoint_fail(df->ep, fatal, 0);
        return false;
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.devflow_fallbacks, 1);
    if (!said) {
        said = true;
        DEVMEM_VERBOSE(1, "%s; its gets take the control connection (said once: "
                       "devflow_fallbacks counts them)", msg);
    } else {
        DEVMEM_VERBOSE(10, "%s; its gets take the control connection", msg);
    }
    return true;
}

unsigned long mca_btl_devmem_devflow_fd_budget(void)
{
    unsigned long free_at_init = (unsigned long) mca_btl_devmem_nofile_free_at_init();
    unsigned long asked = mca_btl_devmem_component.devflow_fds;
    /* what the user asks for, but never the descriptors control connections need: an
     * eighth of the free ones, 64 at least, stays theirs */
    unsigned long keep = free_at_init / 8 > 64 ? free_at_init / 8 : 64;
    unsigned long most = free_at_init > keep ? free_at_init - keep : 0;

    return 0 == asked ? free_at_init / 2 : asked < most ? asked : most;
}

/* Lane descriptors and the unclaimed connections held (dispatch lock). */
static size_t fds_held(void)
{
    return __atomic_load_n(&lane_fds, __ATOMIC_RELAXED) + opal_list_get_size(&unclaimed);
}

bool mca_btl_devmem_devflow_fd_spare(void)
{
    return fds_held() < mca_btl_devmem_devflow_fd_budget();
}

bool mca_btl_devmem_devflow_fd_spare_lanes(void)
{
    return __atomic_load_n(&lane_fds, __ATOMIC_RELAXED) < mca_btl_devmem_devflow_fd_budget();
}

void mca_btl_devmem_devflow_fd_count(int delta)
{
    (void) __atomic_add_fetch(&lane_fds, (unsigned int) delta, __ATOMIC_RELAXED);
    if (delta > 0) {
        mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.devflow_fds_max, fds_held());
    }
}

void mca_btl_devmem_devflow_tx_state(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_devflow_tx_state s, const char *why)
{
    DEVMEM_VERBOSE(20, "device flow %u to %s: sending side %s -> %s (%s)", df->lane,
                   OPAL_NAME_PRINT(df->ep->peer->name), tx_states[df->tx_state].name,
                   tx_states[s].name, why);
    df->tx_state = s;
    rearm_anew(df);
}

void mca_btl_devmem_devflow_rx_state(struct mca_btl_devmem_devflow *df,
                                     enum mca_btl_devmem_devflow_rx_state s, const char *why)
{
    DEVMEM_VERBOSE(20, "device flow %u from %s: receiving side %s -> %s (%s)", df->lane,
                   OPAL_NAME_PRINT(df->ep->peer->name), rx_states[df->rx_state].name,
                   rx_states[s].name, why);
    OPAL_THREAD_LOCK(&df->ep->lock);
    df->rx_state = s;
    OPAL_THREAD_UNLOCK(&df->ep->lock);
    rearm(df);
}

struct mca_btl_devmem_devflow *mca_btl_devmem_devflow_of(mca_btl_devmem_endpoint_t *ep,
                                                         unsigned int lane)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    struct mca_btl_devmem_devflows *set = dp->devflows;
    struct mca_btl_devmem_devflow *df;

    if (lane >= MCA_BTL_DEVMEM_DEVFLOWS_MAX) {
        return NULL;
    }
    if (NULL == set) {
        if (NULL == (set = calloc(1, sizeof(*set)))) {
            return NULL;
        }
        /* published whole: btl_get looks at it from other threads (devflow_place_get) */
        __atomic_store_n(&dp->devflows, set, __ATOMIC_RELEASE);
    }
    if (NULL == (df = set->lane[lane]) && NULL != (df = calloc(1, sizeof(*df)))) {
        df->ep = ep;
        df->lane = lane;
        df->tx_state = MCA_BTL_DEVMEM_DF_TX_NONE;
        df->rx_state = MCA_BTL_DEVMEM_DF_RX_NONE;
        df->tx_sd = df->rx_sd = -1;
        df->rx_qpos = -1;
        OBJ_CONSTRUCT(&df->tx_queue, opal_list_t);
        OBJ_CONSTRUCT(&df->tx_wait, opal_list_t);
        OBJ_CONSTRUCT(&df->gets, opal_list_t);
        opal_event_evtimer_set(opal_sync_event_base, &df->timer, devflow_timeout, df);
        OPAL_THREAD_LOCK(&ep->lock); /* devflow_place_get walks the lanes under it */
        __atomic_store_n(&set->lane[lane], df, __ATOMIC_RELEASE);
        OPAL_THREAD_UNLOCK(&ep->lock);
    }
    return df;
}

static void unclaimed_init(void)
{
    if (!unclaimed_ready) {
        OBJ_CONSTRUCT(&unclaimed, opal_list_t);
        unclaimed_ready = true;
    }
}

/* ---------------------------------------------------------------- adopting */

static int adopt(struct mca_btl_devmem_devflow *df, struct mca_btl_devmem_dev *dev, int sd)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_err e;
    char why[DEVMEM_ERR_MSG_MAX + 64];
    int rc, open_lanes = 0;

    if (NULL == k) {
        close(sd);
        mca_btl_devmem_endpoint_fail(ep, "cannot take the device flow", ENOMEM);
        return -1;
    }
    if (MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state || MCA_BTL_DEVMEM_DF_RX_CLOSED == df->rx_state) {
        close(sd);
        mca_btl_devmem_endpoint_proto_error(ep, "a second device flow on one lane");
        return -1;
    }
    if (0 != devmem_kernel_ledger_init(k, sd, &df->ledger, &e)) {
        snprintf(why, sizeof(why), "device flow: %s", e.msg);
        k->ops->sock_close(k, sd);
        close(sd);
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        return -1;
    }
    memset(&df->counted, 0, sizeof(df->counted));
    OPAL_THREAD_LOCK(&ep->lock);
    df->rx_sd = sd;
    OPAL_THREAD_UNLOCK(&ep->lock);
    mca_btl_devmem_devflow_fd_count(1);
    df->rx_dev = dev;
    mca_btl_devmem_devflow_rx_state(df, MCA_BTL_DEVMEM_DF_RX_OPEN, "adopted");
    mca_btl_devmem_tune_socket(sd);
    mca_btl_devmem_pollset_init(&df->rx_watch, sd, mca_btl_devmem_devflow_rx_cb, df);
    if (0 != (rc = mca_btl_devmem_devflow_rx_serve_lane(df))) {
        mca_btl_devmem_endpoint_fail(ep, "cannot watch the device flow", -rc);
        return -1;
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.devflows, 1);
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *l = mca_btl_devmem_devflow_lane(ep, i);

        open_lanes += NULL != l && MCA_BTL_DEVMEM_DF_RX_OPEN == l->rx_state;
    }
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.devflow_lanes,
                             (uint64_t) open_lanes);
    DEVMEM_VERBOSE(10, "device flow %u from %s adopted on %s (RX binding %u)", df->lane,
                   OPAL_NAME_PRINT(ep->peer->name), dev->part->itf->name, dev->rx_id);
    mca_btl_devmem_devflow_idle_watch();
    mca_btl_devmem_devflow_settle(ep, "a lane opened");
    return 0;
}

/* An unclaimed connection became readable. Closed (a lane the peer retired while it
 * connected, or a stranger's connect and close): its descriptor goes back now, counted as a
 * race. Bytes sent unasked: left unread and unwatched until a claim or the timeout. Peeked,
 * never read: on the device path a payload byte is in device memory. */
static void unclaimed_read(mca_btl_devmem_held_t *h)
{
    char byte;
    ssize_t n = recv(h->sd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n < 0 && (EAGAIN == errno || EINTR == errno)) {
        return;
    }
    if (0 == n) {
        mca_btl_devmem_held_drop(h, MCA_BTL_DEVMEM_HELD_RACE,
                                 "closed by its peer before a control connection named it");
        return;
    }
    (void) mca_btl_devmem_pollset_set(&h->watch, 0);
}

void mca_btl_devmem_devflow_accepted(struct mca_btl_devmem_dev *dev, int sd,
                                     const struct mca_btl_devmem_ip *addr, uint16_t port)
{
    /* the claim may have come first */
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_endpoint_t *ep;
        OPAL_LIST_FOREACH (ep, &mca_btl_devmem_modules[i]->endpoints, mca_btl_devmem_endpoint_t) {
            for (unsigned int lane = 0; lane < MCA_BTL_DEVMEM_DEVFLOWS_MAX; lane++) {
                struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, lane);

                if (NULL != df && MCA_BTL_DEVMEM_DF_RX_CLAIMED == df->rx_state
                    && mca_btl_devmem_ip_equal(&df->claim_addr, addr)
                    && df->claim_port == port) {
                    (void) adopt(df, dev, sd);
                    return;
                }
            }
        }
    }
    if (!mca_btl_devmem_devflow_fd_spare()) {
        /* the claim that names it times out, and that lane falls back */
        DEVMEM_VERBOSE(10, "refused a device-flow connection on %s: the device flows hold "
                       "their share of the descriptors", dev->part->itf->name);
        close(sd);
        return;
    }
    /* held unread (peeked at for its closing only): its bytes are the peer's payload, which may
     * land in device memory */
    (void) mca_btl_devmem_held_new(&unclaimed, sd, addr, port, dev, &dev->listener,
                                   dev->part->itf->name, "device-flow connection",
                                   "no control connection named it before the handshake "
                                   "timeout",
                                   unclaimed_read);
    mca_btl_devmem_stats_max(&mca_btl_devmem_component.stats.devflow_fds_max, fds_held());
}

int mca_btl_devmem_devflow_claim(mca_btl_devmem_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_of(ep, h->tag);
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    struct mca_btl_devmem_ip addr;
    uint16_t port = (uint16_t) h->id;
    mca_btl_devmem_held_t *u;

    if (NULL == df) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory for a device flow", ENOMEM);
        return -1;
    }
    /* the device flow comes from the address our control connection comes from */
    if (0 != getpeername(ep->sd, (struct sockaddr *) &ss, &len)
        || 0 != mca_btl_devmem_ip_from_sockaddr((struct sockaddr *) &ss, &addr, NULL)) {
        mca_btl_devmem_endpoint_fail(ep, "cannot name the control connection's peer", errno);
        return -1;
    }
    if (MCA_BTL_DEVMEM_DF_RX_NONE != df->rx_state) {
        mca_btl_devmem_endpoint_proto_error(ep, "a second device-flow claim for one lane");
        return -1;
    }
    OPAL_LIST_FOREACH (u, &unclaimed, mca_btl_devmem_held_t) {
        if (mca_btl_devmem_ip_equal(&u->addr, &addr) && u->port == port) {
            struct mca_btl_devmem_dev *dev = u->owner;
            return adopt(df, dev, mca_btl_devmem_held_take(u));
        }
    }
    df->claim_addr = addr;
    df->claim_port = port;
    mca_btl_devmem_devflow_rx_state(df, MCA_BTL_DEVMEM_DF_RX_CLAIMED,
                                    "named before its connection arrived");
    return 0;
}

/* ---------------------------------------------------------------- closing */

void mca_btl_devmem_devflow_close(mca_btl_devmem_endpoint_t *ep, bool orderly)
{
    mca_btl_devmem_devflow_parked_fail(ep);
    for (unsigned int lane = 0; lane < MCA_BTL_DEVMEM_DEVFLOWS_MAX; lane++) {
        struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, lane);

        if (NULL != df) {
            mca_btl_devmem_devflow_tx_close(df, orderly, NULL);
            mca_btl_devmem_devflow_rx_close(df);
        }
    }
}

void mca_btl_devmem_devflow_free(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    struct mca_btl_devmem_devflows *set = dp->devflows;

    if (NULL == set) {
        return;
    }
    mca_btl_devmem_devflow_close(ep, false);
    for (unsigned int lane = 0; lane < MCA_BTL_DEVMEM_DEVFLOWS_MAX; lane++) {
        struct mca_btl_devmem_devflow *df = set->lane[lane];

        if (NULL == df) {
            continue;
        }
        if (df->timer_armed) {
            opal_event_del(&df->timer);
        }
        OBJ_DESTRUCT(&df->tx_queue);
        OBJ_DESTRUCT(&df->tx_wait);
        OBJ_DESTRUCT(&df->gets);
        free(df);
    }
    free(set);
    dp->devflows = NULL;
}

size_t mca_btl_devmem_devflow_peer_handle;

static void peer_construct(void *state)
{
    struct mca_btl_devmem_devflow_peer *dp = state;

    OBJ_CONSTRUCT(&dp->gets_parked, opal_list_t);
}

static void peer_destruct(void *state)
{
    struct mca_btl_devmem_devflow_peer *dp = state;

    OBJ_DESTRUCT(&dp->gets_parked);
}

size_t mca_btl_devmem_devflow_frag_handle;

static void frag_release(void *state)
{
    struct mca_btl_devmem_devflow_frag *d = state;

    if (NULL != d->txmem) {
        mca_btl_devmem_txmem_put(d->txmem);
        d->txmem = NULL;
    }
}

int mca_btl_devmem_devflow_init(void)
{
    int rc = mca_btl_devmem_frag_state_register(&mca_btl_devmem_devflow_frag_handle,
                                                sizeof(struct mca_btl_devmem_devflow_frag),
                                                frag_release);

    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    unclaimed_init();
    return mca_btl_devmem_endpoint_state_register(&mca_btl_devmem_devflow_peer_handle,
                                                  sizeof(struct mca_btl_devmem_devflow_peer),
                                                  peer_construct, peer_destruct);
}

void mca_btl_devmem_devflow_fini(void)
{
    mca_btl_devmem_devflow_rx_fini();
    if (!unclaimed_ready) {
        return;
    }
    mca_btl_devmem_held_drop_all(&unclaimed);
    OBJ_DESTRUCT(&unclaimed);
    unclaimed_ready = false;
}
