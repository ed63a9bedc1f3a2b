/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Device flows, sending side: connect to the peer's device-flow port once per lane and name
 * each connection on the control connection; answer gets on the lane each request names,
 * in request order, with devmem TX
 * from the registered dmabuf where there is one (the buffer held until the kernel's
 * zerocopy completion) and with plain writes otherwise. See btl_devmem_devflow_int.h.
 */
#include "opal_config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/btl_devmem_activity.h"
#include "rdma/btl_devmem_rdma.h"
#include "rdma/btl_devmem_reg.h"
#include "devflow/btl_devmem_devflow_int.h"

static void tx_watch_cb(int sd, short flags, void *arg);

/* What the watch of an open lane asks for: room while blocked; readable while the real
 * kernel owes zerocopy completions, and always on a lane without zerocopy, whose peer
 * closing it (it gave the lane up, or finalizes) frees our descriptor. A zerocopy lane is
 * not watched idle: its error queue may hold stray notices that would keep it readable. */
static short tx_want(struct mca_btl_devmem_devflow *df, bool blocked)
{
    return (short) ((blocked ? OPAL_EV_WRITE : 0)
                    | (!df->tx_zerocopy || !opal_list_is_empty(&df->tx_wait) ? OPAL_EV_READ
                                                                              : 0));
}

/* Close the socket of a connect attempt that failed or took too long. */
static void attempt_close(struct mca_btl_devmem_devflow *df)
{
    if (df->tx_sd >= 0) {
        (void) mca_btl_devmem_pollset_set(&df->tx_watch, 0);
        close(df->tx_sd);
        df->tx_sd = -1;
        mca_btl_devmem_devflow_fd_count(-1);
    }
}

/* The lane cannot be made: it falls back to the control connection, or (mode require) the
 * endpoint fails. */
static void give_up(struct mca_btl_devmem_devflow *df, const char *why)
{
    attempt_close(df);
    if (mca_btl_devmem_devflow_fall_back(df, true, why)) {
        mca_btl_devmem_devflow_tx_state(df, MCA_BTL_DEVMEM_DF_TX_CLOSED, why);
        mca_btl_devmem_devflow_gave_up(df->ep);
    }
}

/* One attempt at connecting lane df: from this module's interface and address, the one the
 * peer knows as our control connection's, so that the claim needs to name only the port.
 * 0 (under way), or -errno. */
static int attempt(struct mca_btl_devmem_devflow *df)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    int sd, rc;

    if (!mca_btl_devmem_devflow_fd_spare()) {
        return -EMFILE;
    }
    sd = mca_btl_devmem_connect_socket(&ep->module->itf, &ep->remote, ep->remote.devflow_port);
    if (sd < 0) {
        return sd;
    }
    df->tx_sd = sd;
    df->tx_attempts++;
    mca_btl_devmem_devflow_fd_count(1);
    mca_btl_devmem_pollset_init(&df->tx_watch, sd, tx_watch_cb, df);
    if (0 != (rc = mca_btl_devmem_pollset_set(&df->tx_watch, OPAL_EV_WRITE))) {
        attempt_close(df);
        return rc;
    }
    mca_btl_devmem_devflow_tx_state(df, MCA_BTL_DEVMEM_DF_TX_CONNECTING,
                                    1 == df->tx_attempts ? "connecting" : "connecting again");
    return 0;
}

/* The connect completed: set devmem TX up and name the lane on the control connection. */
static void connected(struct mca_btl_devmem_devflow *df)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    mca_btl_devmem_frag_t *claim;
    uint16_t port = 0;
    int err = 0, rc;
    socklen_t len = sizeof(err);
    char why[96];

    if (0 != getsockopt(df->tx_sd, SOL_SOCKET, SO_ERROR, &err, &len)) {
        err = errno;
    }
    if (0 == err && 0 != (rc = mca_btl_devmem_local_port(df->tx_sd, &port))) {
        err = -rc;
    }
    if (0 != err) {
        snprintf(why, sizeof(why), "connect failed: %s", strerror(err));
        if (df->tx_attempts >= MCA_BTL_DEVMEM_CONNECT_ATTEMPTS) {
            give_up(df, why);
        } else {
            /* the next attempt when this one's time is up (the lane's timer runs on) */
            DEVMEM_VERBOSE(10, "device flow %u to %s: %s", df->lane,
                           OPAL_NAME_PRINT(ep->peer->name), why);
            attempt_close(df);
        }
        return;
    }
    if (NULL != ep->module->devpath.dev) {
        struct devmem_err e;

        /* devmem TX needs zerocopy sends; without it every answer is a plain send */
        df->tx_zerocopy = 0 == devmem_tx_socket_setup(df->tx_sd, NULL, &e)
                          && 0 == devmem_tx_tracker_init(&df->tracker, &e);
        if (!df->tx_zerocopy) {
            DEVMEM_VERBOSE(1, "devmem TX off on device flow %u to %s: %s", df->lane,
                           OPAL_NAME_PRINT(ep->peer->name), e.msg);
        }
    }
    claim = mca_btl_devmem_frag_alloc(0);
    if (NULL == claim) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory naming the device flow", ENOMEM);
        return;
    }
    claim->done = mca_btl_devmem_frag_done_return;
    mca_btl_devmem_frag_prepare_write(claim);
    claim->hdr.type = MCA_BTL_DEVMEM_HDR_DEVFLOW;
    claim->hdr.tag = (uint8_t) df->lane;
    claim->hdr.addr = 0; /* reserved: the address is the control connection's */
    claim->hdr.id = port;
    mca_btl_devmem_devflow_tx_state(df, MCA_BTL_DEVMEM_DF_TX_OPEN, "connected and named");
    if (0 != (rc = mca_btl_devmem_pollset_set(&df->tx_watch, tx_want(df, false)))) {
        mca_btl_devmem_frag_return(claim);
        mca_btl_devmem_endpoint_fail(ep, "cannot watch the device flow", -rc);
        return;
    }
    if (mca_btl_devmem_endpoint_send(ep, claim) < 0) {
        mca_btl_devmem_frag_return(claim); /* the endpoint failed and said so */
        return;
    }
    DEVMEM_VERBOSE(20, "device flow %u to %s from port %u", df->lane,
                   OPAL_NAME_PRINT(ep->peer->name), (unsigned) port);
}

void mca_btl_devmem_devflow_tx_timeout(struct mca_btl_devmem_devflow *df)
{
    char why[128];
    int rc;

    if (df->tx_attempts >= MCA_BTL_DEVMEM_CONNECT_ATTEMPTS) {
        snprintf(why, sizeof(why), "not connected after %u attempts "
                 "(btl_devmem_handshake_timeout %d s, doubled each time)", df->tx_attempts,
                 mca_btl_devmem_component.handshake_timeout);
        give_up(df, why);
        return;
    }
    DEVMEM_VERBOSE(10, "device flow %u to %s: connect attempt %u %s; trying again", df->lane,
                   OPAL_NAME_PRINT(df->ep->peer->name), df->tx_attempts,
                   df->tx_sd >= 0 ? "timed out" : "failed");
    attempt_close(df);
    if (0 != (rc = attempt(df))) {
        snprintf(why, sizeof(why), "cannot connect: %s", strerror(-rc));
        give_up(df, why);
    }
}

/* Open lane `lane` to ep's peer. 0, 1 when no further lane should be tried (this one fell
 * back for want of descriptors), or -1 when ep failed. */
static int start_lane(mca_btl_devmem_endpoint_t *ep, unsigned int lane)
{
    struct mca_btl_devmem_devflow *df;
    char why[96];
    int rc;

    if (NULL == (df = mca_btl_devmem_devflow_of(ep, lane))) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory for a device flow", ENOMEM);
        return -1;
    }
    if (MCA_BTL_DEVMEM_DF_TX_NONE != df->tx_state) {
        return 0;
    }
    if (0 == (rc = attempt(df))) {
        return 0;
    }
    snprintf(why, sizeof(why), "cannot connect: %s", -EMFILE == rc && 0 == df->tx_attempts
             ? "the device flows hold their share of the descriptors" : strerror(-rc));
    give_up(df, why);
    if (MCA_BTL_DEVMEM_EP_FAILED == ep->state) {
        return -1;
    }
    return -EMFILE == rc || -ENFILE == rc ? 1 : 0;
}

/* Lanes this rank opens to each peer: btl_devmem_devflows, fewer when the job has more peers
 * than the descriptor budget gives that many (each lane holds a descriptor on each side), so
 * that every peer gets one before any gets several; a peer beyond the budget even so falls
 * back to its control connection. The peer decides its own lanes toward us: the side that
 * asks for data stripes over whatever lanes reached it. */
static int lanes_per_peer(void)
{
    static int said = -1;
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    unsigned long budget = mca_btl_devmem_devflow_fd_budget(), per;
    int job = mca_btl_devmem_job_size(), mods = 0, lanes = c->devflows;

    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mods += NULL != mca_btl_devmem_modules[i]->devpath.dev;
    }
    if (job > 1) {
        per = budget / (2ul * (unsigned long) (job - 1) * (unsigned long) (mods > 0 ? mods : 1));
        lanes = per < 1 ? 1 : per < (unsigned long) lanes ? (int) per : lanes;
    }
    if (said != lanes) {
        said = lanes;
        DEVMEM_VERBOSE(10, "%d device-flow lane(s) a peer: %d peers, %d interface(s) with the "
                       "device path, a budget of %lu descriptors", lanes, job - 1, mods, budget);
    }
    return lanes;
}

void mca_btl_devmem_devflow_start(mca_btl_devmem_endpoint_t *ep)
{
    int lanes;

    if (0 == ep->remote.devflow_port || !mca_btl_devmem_dev_enabled()
        || MCA_BTL_DEVMEM_EP_CONNECTED != ep->state) {
        return;
    }
    lanes = lanes_per_peer();
    for (int lane = 0; lane < lanes; lane++) {
        if (0 != start_lane(ep, (unsigned int) lane)) {
            return;
        }
    }
}

/* A devmem TX send completed (in order): count its bytes against the frag it carried. */
static void tx_released(void *ctx, uint64_t cookie, size_t bytes)
{
    mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) (uintptr_t) cookie;

    mca_btl_devmem_devflow_frag(frag)->tx_done += bytes;
}

/* Read every zerocopy notification there is; finished frags move from tx_wait to done.
 * 0, or -1 with why filled. */
static int tx_reap(struct mca_btl_devmem_devflow *df, opal_list_t *done, char *why, size_t len)
{
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct devmem_tx_completion c;
    struct devmem_err e;
    opal_list_item_t *item;
    int rc = -EAGAIN;

    if (df->tx_zerocopy && 0 != devmem_tx_inflight(&df->tracker)) {
        while (0 == (rc = k->ops->read_completion(k, df->tx_sd, &c, &e))) {
            if (0 != devmem_tx_complete(&df->tracker, &c, tx_released, NULL, &e)) {
                rc = -EPROTO;
                break;
            }
        }
    }
    /* sends complete in order, so finished frags are at the head (one cut short by
     * tx_fall_back may have finished before it was) */
    while (NULL != (item = opal_list_get_first(&df->tx_wait))
           && item != opal_list_get_end(&df->tx_wait)
           && mca_btl_devmem_devflow_frag((mca_btl_devmem_frag_t *) item)->tx_done
                  == ((mca_btl_devmem_frag_t *) item)->payload) {
        opal_list_append(done, opal_list_remove_first(&df->tx_wait));
    }
    if (-EAGAIN == rc) {
        return 0;
    }
    snprintf(why, len, "reading devmem TX completions: %s", e.msg);
    return -1;
}

/*
 * A devmem TX send of frag (the head of the queue) failed: its TX binding is gone (the netlink
 * socket that made it closed) or refused. What it had queued completes on its own; the rest
 * goes as a plain answer, staged through host memory, in its place. 0, or -1 (why filled).
 */
static int tx_fall_back(struct mca_btl_devmem_devflow *df, mca_btl_devmem_frag_t *frag,
                        uint32_t id, bool gone, const char *err, char *why, size_t len)
{
    struct mca_btl_devmem_devflow_frag *d = mca_btl_devmem_devflow_frag(frag);
    struct mca_btl_devmem_hdr h = frag->hdr;
    mca_btl_devmem_frag_t *rest;

    mca_btl_devmem_txmem_lost(d->txmem, df->ep->module, id, gone, err);
    h.addr = d->txmem->base + d->tx_off + d->tx_queued;
    h.size = (uint32_t) (frag->payload - d->tx_queued);
    if (NULL == (rest = mca_btl_devmem_rdma_get_resp(&h, why, len))) {
        return -1;
    }
    rest->iov_idx = 1; /* raw, as every answer on a lane */
    opal_list_remove_first(&df->tx_queue);
    opal_list_prepend(&df->tx_queue, &rest->base.super.super);
    if (0 == d->tx_queued) {
        mca_btl_devmem_frag_return(frag);
    } else {
        frag->payload = d->tx_queued;
        opal_list_append(&df->tx_wait, &frag->base.super.super);
    }
    return 0;
}

/* Hand the kernel as much of frag as it takes with devmem TX from its TX binding.
 * 0 all queued, 1 blocked, 2 replaced by a plain answer (tx_fall_back), -1 failed (why
 * filled). */
static int tx_device(struct mca_btl_devmem_devflow *df, mca_btl_devmem_frag_t *frag, char *why,
                     size_t len)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
    struct mca_btl_devmem_devflow_frag *d = mca_btl_devmem_devflow_frag(frag);
    uint32_t id = mca_btl_devmem_txmem_bind(d->txmem, ep->module);
    struct devmem_err e;

    if (0 == id) { /* queued before another send found its binding gone */
        return 0 == tx_fall_back(df, frag, id, false, "", why, len) ? 2 : -1;
    }
    while (d->tx_queued < frag->payload) {
        struct devmem_tx_iov iov = {d->tx_off + d->tx_queued, frag->payload - d->tx_queued};
        ssize_t n = k->ops->send(k, df->tx_sd, id, &iov, 1, MSG_DONTWAIT, &e);

        if (-EAGAIN == n || -EINTR == n) {
            return 1;
        }
        if (-EINVAL == n || -ENODEV == n) {
            /* 6.18: no such TX binding (net_devmem_get_binding: gone), or the route leaves by
             * another device than the binding's; nothing of this call was queued */
            return 0 == tx_fall_back(df, frag, id, -EINVAL == n, e.msg, why, len) ? 2 : -1;
        }
        if (n <= 0) {
            snprintf(why, len, "devmem TX send: %s", n < 0 ? e.msg : "sent nothing");
            return -1;
        }
        if (0 != devmem_tx_track(&df->tracker, (size_t) n, iov.len, (uint64_t) (uintptr_t) frag,
                                 &e)) {
            snprintf(why, len, "tracking a devmem TX send: %s", e.msg);
            return -1;
        }
        d->tx_queued += (size_t) n;
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_devmem, (uint64_t) n);
    }
    return 0;
}

static void tx_progress(struct mca_btl_devmem_devflow *df)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    char why[DEVMEM_ERR_MSG_MAX + 64];
    opal_list_t done, host;
    opal_list_item_t *item;
    bool blocked = false;
    int rc = 0;

    OBJ_CONSTRUCT(&done, opal_list_t);
    OBJ_CONSTRUCT(&host, opal_list_t);
    while (0 == rc && !blocked && !opal_list_is_empty(&df->tx_queue)) {
        mca_btl_devmem_frag_t *head = (mca_btl_devmem_frag_t *) opal_list_get_first(&df->tx_queue);

        if (NULL != mca_btl_devmem_devflow_frag(head)->txmem) {
            rc = tx_device(df, head, why, sizeof(why));
            if (0 == rc) {
                opal_list_remove_first(&df->tx_queue);
                opal_list_append(&df->tx_wait, &head->base.super.super);
            } else if (1 == rc) {
                blocked = true;
                rc = 0;
            } else if (2 == rc) {
                rc = 0; /* a plain answer heads the queue now */
            }
            continue;
        }
        /* the run of plain answers up to the next devmem one, in one batched write */
        while (NULL != (item = opal_list_get_first(&df->tx_queue))
               && item != opal_list_get_end(&df->tx_queue)
               && NULL == mca_btl_devmem_devflow_frag((mca_btl_devmem_frag_t *) item)->txmem) {
            opal_list_append(&host, opal_list_remove_first(&df->tx_queue));
        }
        rc = mca_btl_devmem_frag_queue_write(df->tx_sd, &host, &ep->module->write, &done,
                                             &blocked);
        while (NULL != (item = opal_list_remove_last(&host))) {
            opal_list_prepend(&df->tx_queue, item);
        }
        if (rc < 0) {
            snprintf(why, sizeof(why), "sending failed: %s", strerror(-rc));
            rc = -1;
        }
    }
    if (0 == rc) {
        rc = tx_reap(df, &done, why, sizeof(why));
    }
    if (0 == rc) {
        /* writable while blocked; readable while the real kernel still owes completions */
        rc = mca_btl_devmem_pollset_set(&df->tx_watch, tx_want(df, blocked));
        if (rc < 0) {
            snprintf(why, sizeof(why), "cannot watch it: %s", strerror(-rc));
            rc = -1;
        }
    }
    while (NULL != (item = opal_list_remove_first(&done))) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.devflow_gets, 1);
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_SUCCESS);
    }
    OBJ_DESTRUCT(&done);
    OBJ_DESTRUCT(&host);
    if (rc < 0) {
        /* the lane named, as the receiving side names it: either side may be first to say */
        char said[sizeof(why) + 32];

        snprintf(said, sizeof(said), "device flow %u: %s", df->lane, why);
        mca_btl_devmem_endpoint_fail(ep, said, 0);
    }
}

/* Writable: the connect completed, or room for what is queued. Readable on our sending
 * side: completions on the error queue, or the peer closing. */
static void tx_watch_cb(int sd, short flags, void *arg)
{
    struct mca_btl_devmem_devflow *df = arg;
    mca_btl_devmem_endpoint_t *ep = df->ep;
    size_t before = opal_list_get_size(&df->tx_wait);
    ssize_t n;
    char c;

    mca_btl_devmem_progress_activity();
    if (MCA_BTL_DEVMEM_DF_TX_CONNECTING == df->tx_state) {
        connected(df);
        return;
    }
    tx_progress(df);
    if (!(flags & OPAL_EV_READ) || MCA_BTL_DEVMEM_DF_TX_OPEN != df->tx_state
        || before != opal_list_get_size(&df->tx_wait)) {
        return;
    }
    /* nothing ever comes the other way on a device flow: readable is the peer closing */
    n = recv(df->tx_sd, &c, 1, MSG_DONTWAIT | MSG_PEEK);
    if (n > 0 || (n < 0 && (EAGAIN == errno || EWOULDBLOCK == errno || EINTR == errno))) {
        return;
    }
    if (opal_list_is_empty(&df->tx_queue) && opal_list_is_empty(&df->tx_wait)) {
        mca_btl_devmem_devflow_tx_close(df, false, "the peer closed it");
    } else {
        char why[96];

        snprintf(why, sizeof(why), "device flow %u: the peer closed it with answers not yet "
                 "sent or completed", df->lane);
        mca_btl_devmem_endpoint_fail(ep, why, n < 0 ? errno : 0);
    }
}

int mca_btl_devmem_devflow_answer(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, h->tag);
    struct mca_btl_devmem_txmem *t = NULL;
    mca_btl_devmem_frag_t *resp;
    char why[DEVMEM_ERR_MSG_MAX + 64];

    if (NULL == df || MCA_BTL_DEVMEM_DF_TX_OPEN != df->tx_state || 0 == h->size) {
        mca_btl_devmem_endpoint_proto_error(ep, "a device-flow get on a lane we have no device "
                                            "flow for");
        return -1;
    }
    if (df->tx_zerocopy && NULL != (t = mca_btl_devmem_txmem_get(h->addr, h->size))
        && 0 == mca_btl_devmem_txmem_bind(t, ep->module)) {
        mca_btl_devmem_txmem_put(t); /* no TX binding here: a plain (staged) answer */
        t = NULL;
    }
    if (NULL != t) {
        /* devmem TX: the NIC reads the bytes from the dmabuf; nothing passes the CPU */
        resp = mca_btl_devmem_frag_alloc_user();
        if (NULL != resp) {
            resp->done = mca_btl_devmem_rdma_resp_sent;
            resp->hdr.type = MCA_BTL_DEVMEM_HDR_GET_RESP;
            resp->hdr.id = h->id;
            resp->payload = h->size;
            mca_btl_devmem_devflow_frag(resp)->txmem = t;
            mca_btl_devmem_devflow_frag(resp)->tx_off = h->addr - t->base;
        } else {
            mca_btl_devmem_txmem_put(t);
            snprintf(why, sizeof(why), "out of fragments answering a get");
        }
    } else {
        resp = mca_btl_devmem_rdma_get_resp(h, why, sizeof(why));
        if (NULL != resp) {
            resp->iov_idx = 1; /* raw: the header stays home, the receiver knows the order */
        }
    }
    if (NULL == resp) {
        mca_btl_devmem_endpoint_fail(ep, why, 0);
        return -1;
    }
    opal_list_append(&df->tx_queue, &resp->base.super.super);
    tx_progress(df);
    return 0;
}

void mca_btl_devmem_devflow_tx_close(struct mca_btl_devmem_devflow *df, bool orderly,
                                     const char *why)
{
    mca_btl_devmem_endpoint_t *ep = df->ep;
    opal_list_item_t *item;

    if (df->tx_sd >= 0) {
        if (orderly) {
            opal_list_t done;

            OBJ_CONSTRUCT(&done, opal_list_t);
            (void) mca_btl_devmem_frag_queue_drain(df->tx_sd, &df->tx_queue, &done);
            while (NULL != (item = opal_list_remove_first(&done))) {
                mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item,
                                                 OPAL_SUCCESS);
            }
            OBJ_DESTRUCT(&done);
        }
        (void) mca_btl_devmem_pollset_set(&df->tx_watch, 0);
        if (NULL != mca_btl_devmem_dev_kernel()) {
            struct devmem_kernel *k = mca_btl_devmem_dev_kernel();
            k->ops->sock_close(k, df->tx_sd);
        }
        close(df->tx_sd);
        df->tx_sd = -1;
        mca_btl_devmem_devflow_fd_count(-1);
    }
    while (NULL != (item = opal_list_remove_first(&df->tx_queue))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    /* sent, but the kernel never said it was done with the memory */
    while (NULL != (item = opal_list_remove_first(&df->tx_wait))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    if (df->tx_zerocopy) {
        devmem_tx_tracker_fini(&df->tracker);
        df->tx_zerocopy = false;
    }
    if (MCA_BTL_DEVMEM_DF_TX_CLOSED != df->tx_state) {
        mca_btl_devmem_devflow_tx_state(df, MCA_BTL_DEVMEM_DF_TX_CLOSED,
                                        NULL != why ? why
                                        : orderly   ? "finalize"
                                                    : "the endpoint failed");
    }
}

int mca_btl_devmem_devflow_tx_socket(const mca_btl_devmem_endpoint_t *ep, unsigned int lane)
{
    const struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, lane);

    return NULL == df ? -1 : df->tx_sd;
}
