/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The endpoint: one TCP connection to one peer through one module. This file holds its
 * life (construction, failure, shutdown), the send queue, completions, and the dispatch
 * of its socket's events. Connecting and the handshake are btl_devmem_conn.c's, get and
 * put btl_devmem_rdma.c's.
 *
 * Sending: fragments queue in wire order; one sendmsg gathers the iovecs of as many
 * queued fragments as fit, so a burst of small messages costs one syscall.
 *
 * Receiving: the framing (read-ahead, large payloads straight to their destination) is
 * btl_devmem_rxframe.c's; this file reads the socket and says, per frame, whether it is
 * admitted, where its payload goes and what delivering it means.
 *
 * Failure: EOF or an error without a prior FIN means the peer is gone: queued work fails
 * with OPAL_ERR_UNREACH and the PML's error callback ends the job with the peer's name.
 */
#include "opal_config.h"

#include <assert.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "opal/runtime/opal_progress.h"
#include "opal/util/proc.h"

#include "base/btl_devmem_activity.h"
#include "sockets/btl_devmem_pollset.h"
#include "connections/btl_devmem_conn.h"
#include "connections/btl_devmem_endpoint.h"


static void ep_cb(int sd, short flags, void *arg);
static const struct mca_btl_devmem_rxframe_ops rx_ops;

static void ep_construct(mca_btl_devmem_endpoint_t *ep)
{
    ep->module = NULL;
    ep->peer = NULL;
    ep->state = MCA_BTL_DEVMEM_EP_CLOSED; /* where every endpoint starts: no trace */
    ep->sd = -1;
    ep->conn_counted = false;
    mca_btl_devmem_pollset_init(&ep->watch, -1, ep_cb, ep);
    OBJ_CONSTRUCT(&ep->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&ep->send_queue, opal_list_t);
    OBJ_CONSTRUCT(&ep->pending_gets, opal_list_t);
    mca_btl_devmem_conn_init(ep);
    mca_btl_devmem_rxframe_init(&ep->rx, &rx_ops, ep);
    ep->in_recv = false;
    ep->tx_corked = ep->tx_cork_queued = ep->tx_window = false;
    ep->fail_pending = false;
    ep->reply_got = 0;
    ep->above = NULL; /* mca_btl_devmem_endpoint_new */
}

/* The layers' per-peer state: a few registrations, laid end to end in one block. */
#define STATE_SLOTS 4
static struct {
    size_t *handle;
    size_t size;
    mca_btl_devmem_state_fn construct, destruct;
} states[STATE_SLOTS];
static int nstates;
static size_t above_size;

int mca_btl_devmem_endpoint_state_register(size_t *handle, size_t size,
                                           mca_btl_devmem_state_fn construct,
                                           mca_btl_devmem_state_fn destruct)
{
    const size_t align = 16; /* calloc's on 64-bit Linux: enough for any state of ours */

    for (int i = 0; i < nstates; i++) {
        if (states[i].handle == handle) {
            return OPAL_SUCCESS;
        }
    }
    if (STATE_SLOTS == nstates) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    *handle = above_size;
    states[nstates].handle = handle;
    states[nstates].size = size;
    states[nstates].construct = construct;
    states[nstates].destruct = destruct;
    nstates++;
    above_size += (size + align - 1) / align * align;
    return OPAL_SUCCESS;
}

mca_btl_devmem_endpoint_t *mca_btl_devmem_endpoint_new(void)
{
    mca_btl_devmem_endpoint_t *ep = OBJ_NEW(mca_btl_devmem_endpoint_t);

    if (NULL != ep && NULL == (ep->above = calloc(1, above_size ? above_size : 1))) {
        OBJ_RELEASE(ep);
        return NULL;
    }
    for (int i = 0; NULL != ep && i < nstates; i++) {
        if (NULL != states[i].construct) {
            states[i].construct(mca_btl_devmem_endpoint_state(ep, *states[i].handle));
        }
    }
    return ep;
}

struct mca_btl_devmem_endpoint_hooks mca_btl_devmem_endpoint_hooks;
static int live_conns;

void mca_btl_devmem_endpoint_set_hooks(const struct mca_btl_devmem_endpoint_hooks *hooks)
{
    mca_btl_devmem_endpoint_hooks = *hooks;
}

int mca_btl_devmem_endpoint_live(void)
{
    return __atomic_load_n(&live_conns, __ATOMIC_RELAXED);
}

static void ep_destruct(mca_btl_devmem_endpoint_t *ep)
{
    if (NULL != ep->above) { /* made whole by endpoint_new */
        mca_btl_devmem_endpoint_hooks.destructing(ep);
        for (int i = nstates - 1; i >= 0; i--) {
            if (NULL != states[i].destruct) {
                states[i].destruct(mca_btl_devmem_endpoint_state(ep, *states[i].handle));
            }
        }
        free(ep->above);
    }
    mca_btl_devmem_conn_fini(ep);
    if (ep->sd >= 0) {
        close(ep->sd);
    }
    mca_btl_devmem_rxframe_fini(&ep->rx);
    OBJ_DESTRUCT(&ep->lock);
    OBJ_DESTRUCT(&ep->send_queue);
    OBJ_DESTRUCT(&ep->pending_gets);
}

OBJ_CLASS_INSTANCE(mca_btl_devmem_endpoint_t, opal_list_item_t, ep_construct, ep_destruct);

const char *mca_btl_devmem_endpoint_peer_host(const mca_btl_devmem_endpoint_t *ep)
{
    const char *h = opal_get_proc_hostname(ep->peer->proc);
    return NULL != h ? h : "unknown host";
}

/* ---------------------------------------------------------------- events */

void mca_btl_devmem_endpoint_attach(mca_btl_devmem_endpoint_t *ep, int sd)
{
    ep->sd = sd;
    mca_btl_devmem_pollset_init(&ep->watch, sd, ep_cb, ep);
    if (!ep->conn_counted) {
        (void) __atomic_fetch_add(&live_conns, 1, __ATOMIC_RELAXED);
        ep->conn_counted = true;
    }
}

/* 0, or -errno when the socket cannot be watched (the caller fails the endpoint once it
 * has dropped the lock: a connection nobody watches would hang the job). */
static int send_event_set(mca_btl_devmem_endpoint_t *ep, bool on)
{
    return on ? mca_btl_devmem_pollset_add(&ep->watch, OPAL_EV_WRITE)
              : mca_btl_devmem_pollset_del(&ep->watch, OPAL_EV_WRITE);
}

/* Drop the socket and its events; the state is the caller's to set. */
void mca_btl_devmem_endpoint_detach(mca_btl_devmem_endpoint_t *ep)
{
    (void) mca_btl_devmem_pollset_set(&ep->watch, 0);
    if (ep->tx_window) {
        ep->tx_window = false;
        mca_btl_devmem_progress_writer(false);
    }
    if (ep->conn_counted) {
        (void) __atomic_fetch_sub(&live_conns, 1, __ATOMIC_RELAXED);
        ep->conn_counted = false;
    }
    if (ep->sd >= 0) {
        close(ep->sd);
        ep->sd = -1;
    }
    mca_btl_devmem_rxframe_reset(&ep->rx);
    mca_btl_devmem_endpoint_hooks.detached(ep);
    ep->reply_got = 0;
}

/* ---------------------------------------------------------------- completion */

/* A fragment's owner completes it (its done function); PML descriptors are the endpoint's */
static void complete_frag(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag, int status)
{
    int owned;

    if (NULL != frag->done) {
        frag->done(ep, frag, status);
        return;
    }
    owned = frag->base.des_flags & MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    if (OPAL_SUCCESS == status) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_host, frag->payload);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_frags, 1);
    }
    /* queued fragments always call back; those of sendi have nobody to call */
    if ((frag->base.des_flags & MCA_BTL_DES_SEND_ALWAYS_CALLBACK) && NULL != frag->base.des_cbfunc) {
        frag->base.des_cbfunc(&ep->module->super, ep, &frag->base, status);
    }
    if (owned) {
        mca_btl_devmem_frag_return(frag);
    }
}

static void complete_list(mca_btl_devmem_endpoint_t *ep, opal_list_t *done, int status)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(done))) {
        complete_frag(ep, (mca_btl_devmem_frag_t *) item, status);
    }
}

/* ---------------------------------------------------------------- failure */

/*
 * The peer is gone (or misbehaved): fail everything queued for it and tell the PML,
 * which ends the job with our message. `why` says what happened, `err` is an errno or 0.
 * `ours` marks a fault this rank found in what the peer sent: it is said here, before the
 * socket closes, since the peer then fails too and Open MPI 5 shows only the first abort's
 * words, which would be the peer's "connection lost" instead of the reason.
 */
static void ep_fail_locked(mca_btl_devmem_endpoint_t *ep, const char *why, int err, bool ours);

/*
 * The socket, the receive state and the device flows are the dispatch lock's. A thread that
 * does not hold it and cannot take it at once (a send that found the connection broken while
 * another thread dispatches) never waits for it: waiting would deadlock with a callback of
 * ours that waits for a lock the PML holds across its call to us. It leaves the failure to
 * the dispatcher instead: the endpoint's watch asks for writability, which a broken socket
 * reports at once, and ep_cb finishes the failure on the dispatcher's next turn. No later
 * send gets through meanwhile: the state is FAILED-to-be for endpoint_send (fail_pending).
 */
static void ep_fail(mca_btl_devmem_endpoint_t *ep, const char *why, int err, bool ours)
{
    bool took = false;

    if (!mca_btl_devmem_dispatch_held() && !(took = mca_btl_devmem_dispatch_trylock())) {
        OPAL_THREAD_LOCK(&ep->lock);
        if (ep->sd >= 0 && MCA_BTL_DEVMEM_EP_FAILED != ep->state && !ep->fail_pending) {
            ep->fail_ours = ours;
            ep->fail_err = err;
            (void) snprintf(ep->fail_why, sizeof(ep->fail_why), "%s", why);
            __atomic_store_n(&ep->fail_pending, true, __ATOMIC_RELEASE);
            if (0 == mca_btl_devmem_pollset_add(&ep->watch, OPAL_EV_WRITE)) {
                OPAL_THREAD_UNLOCK(&ep->lock);
                return;
            }
            /* not watched: nobody would finish it, do it now */
            __atomic_store_n(&ep->fail_pending, false, __ATOMIC_RELAXED);
        } else if (ep->fail_pending || MCA_BTL_DEVMEM_EP_FAILED == ep->state) {
            OPAL_THREAD_UNLOCK(&ep->lock);
            return;
        }
        OPAL_THREAD_UNLOCK(&ep->lock);
        /* no socket (or none watched): nothing the dispatcher owns is in use; wait for it */
        mca_btl_devmem_dispatch_lock();
        took = true;
    }
    ep_fail_locked(ep, why, err, ours);
    if (took) {
        mca_btl_devmem_dispatch_unlock();
    }
}

static void ep_fail_locked(mca_btl_devmem_endpoint_t *ep, const char *why, int err, bool ours)
{
    opal_list_t doomed;
    char msg[512];

    OBJ_CONSTRUCT(&doomed, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    __atomic_store_n(&ep->fail_pending, false, __ATOMIC_RELAXED);
    if (MCA_BTL_DEVMEM_EP_FAILED == ep->state) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        OBJ_DESTRUCT(&doomed);
        return;
    }
    mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_FAILED, why);
    snprintf(msg, sizeof(msg),
             "btl_devmem: lost the connection to %s on host %s (interface %s): %s%s%s",
             OPAL_NAME_PRINT(ep->peer->name), mca_btl_devmem_endpoint_peer_host(ep),
             ep->module->itf.name, why,
             err ? ": " : "", err ? strerror(err) : "");
    /* the PML ends the job with msg as its words; say it ourselves without one (and at
     * verbosity 1, for a PML that carries on without printing), or first when it is ours */
    if (NULL == ep->module->error_cb || ours) {
        opal_output(0, "%s", msg);
    } else {
        DEVMEM_VERBOSE(1, "%s", msg);
    }
    mca_btl_devmem_endpoint_detach(ep);
    opal_list_join(&doomed, opal_list_get_end(&doomed), &ep->send_queue);
    mca_btl_devmem_endpoint_pending_take_all(ep, &doomed);
    OPAL_THREAD_UNLOCK(&ep->lock);

    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.conn_failed, 1);
    /* The PML hears of the loss before its operations fail: a failed get makes ob1 end the
     * job at once ("Out of resource" from pml_ob1_recvreq.c, with no peer named), so told
     * after, it never said our words. A PML that carries on (ULFM) marks the peer failed
     * first, and the failures then read as that. */
    if (NULL != ep->module->error_cb) {
        ep->module->error_cb(&ep->module->super, MCA_BTL_ERROR_FLAGS_FATAL, ep->peer->proc, msg);
    }
    complete_list(ep, &doomed, OPAL_ERR_UNREACH);
    OBJ_DESTRUCT(&doomed);
    mca_btl_devmem_endpoint_hooks.closing(ep, false);
}

void mca_btl_devmem_endpoint_fail(mca_btl_devmem_endpoint_t *ep, const char *why, int err)
{
    ep_fail(ep, why, err, false);
}

void mca_btl_devmem_endpoint_abort(mca_btl_devmem_endpoint_t *ep, const char *why)
{
    ep_fail(ep, why, 0, true);
}

void mca_btl_devmem_endpoint_proto_error(mca_btl_devmem_endpoint_t *ep, const char *what)
{
    char why[256];

    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.proto_errors, 1);
    snprintf(why, sizeof(why), "protocol error (%s); connection closed", what);
    ep_fail(ep, why, 0, true);
}

void mca_btl_devmem_endpoint_complete(mca_btl_devmem_endpoint_t *ep,
                                      mca_btl_devmem_frag_t *frag, int status)
{
    complete_frag(ep, frag, status);
}

static void proto_error(mca_btl_devmem_endpoint_t *ep, const char *what,
                        const struct mca_btl_devmem_hdr *h)
{
    char why[256];

    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.proto_errors, 1);
    snprintf(why, sizeof(why),
             "malformed fragment (%s; type %u, tag %u, size %u); connection closed", what,
             h->type, h->tag, h->size);
    ep_fail(ep, why, 0, true);
}

/* ---------------------------------------------------------------- sending */

/*
 * Write as much of the queue as the socket takes. Called with ep->lock held; finished
 * fragments move to `done` for completion after the lock is dropped.
 * Returns 0, or -errno when the socket failed.
 */
static int send_progress_locked(mca_btl_devmem_endpoint_t *ep, opal_list_t *done)
{
    bool blocked = false, window;
    int rc = mca_btl_devmem_frag_queue_write(ep->sd, &ep->send_queue, &ep->module->write,
                                             done, &blocked);

    if (0 == rc) {
        rc = send_event_set(ep, blocked);
    }
    window = blocked && opal_list_get_size(&ep->send_queue) > 1;
    if (window != ep->tx_window) {
        ep->tx_window = window;
        mca_btl_devmem_progress_writer(window);
    }
    return rc;
}

/* Flush the queue now (connected endpoints only) and complete what was written. */
static void send_progress(mca_btl_devmem_endpoint_t *ep)
{
    opal_list_t done;
    int rc = 0;

    OBJ_CONSTRUCT(&done, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    if (MCA_BTL_DEVMEM_EP_CONNECTED == ep->state || MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state) {
        rc = send_progress_locked(ep, &done);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    complete_list(ep, &done, OPAL_SUCCESS);
    OBJ_DESTRUCT(&done);
    if (rc < 0) {
        ep_fail(ep, "send failed", -rc, false);
    }
}

int mca_btl_devmem_endpoint_flush_unlock(mca_btl_devmem_endpoint_t *ep)
{
    opal_list_t done;
    int rc;

    OBJ_CONSTRUCT(&done, opal_list_t);
    rc = send_progress_locked(ep, &done);
    OPAL_THREAD_UNLOCK(&ep->lock);
    complete_list(ep, &done, OPAL_SUCCESS);
    OBJ_DESTRUCT(&done);
    return rc;
}

/* Behind what is queued already: the fragment, then the push it announces. */
static void queue_locked(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag,
                         mca_btl_devmem_frag_t *push)
{
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    opal_list_append(&ep->send_queue, &frag->base.super.super);
    if (NULL != push) {
        opal_list_append(&ep->send_queue, &push->base.super.super);
    }
}

/*
 * Write frag, then the push it announces, on a connected endpoint whose queue is empty and
 * not corked: queued first, so that what the socket does not take leaves from the send
 * event. Called with ep->lock held; returns with it dropped:
 *   1                       frag written whole and completed (the PML's own flags decide
 *                           about a callback);
 *   OPAL_SUCCESS            some of it is still queued: it completes from the send event,
 *                           with a callback;
 *   OPAL_ERR_RESOURCE_BUSY  (only when `or_nothing`, and with no push) the socket took none
 *                           of it: frag is the caller's again, as it was;
 *   OPAL_ERR_UNREACH        the write failed: frag is the caller's again, ep is failed.
 */
static int write_now_unlock(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag,
                            mca_btl_devmem_frag_t *push, bool or_nothing)
{
    /* should it stay queued, its completion needs a callback: flag it before it is visible */
    uint32_t pml_flags = frag->base.des_flags;
    opal_list_t done;
    int rc;

    mca_btl_devmem_progress_activity(); /* what we send may need the kernel's time */
    frag->base.des_flags |= MCA_BTL_DES_SEND_ALWAYS_CALLBACK;
    OBJ_CONSTRUCT(&done, opal_list_t);
    opal_list_append(&ep->send_queue, &frag->base.super.super);
    rc = send_progress_locked(ep, &done);
    if (0 == rc && or_nothing && NULL == push && opal_list_is_empty(&done)
        && mca_btl_devmem_frag_unwritten(frag)) {
        opal_list_remove_item(&ep->send_queue, &frag->base.super.super);
        frag->base.des_flags = pml_flags;
        rc = send_event_set(ep, false);
        OPAL_THREAD_UNLOCK(&ep->lock);
        OBJ_DESTRUCT(&done);
        if (rc < 0) {
            ep_fail(ep, "send failed", -rc, false);
            return OPAL_ERR_UNREACH;
        }
        return OPAL_ERR_RESOURCE_BUSY;
    }
    if (NULL != push) {
        /* a call of its own: the header reaches the peer, whose get request then crosses
         * the pushed bytes, instead of waiting for their copy */
        opal_list_append(&ep->send_queue, &push->base.super.super);
        if (0 == rc && !opal_list_is_empty(&done)) {
            rc = send_progress_locked(ep, &done);
        }
    }
    if (rc < 0) {
        /* the PML still owns the descriptor: take it back out and say so */
        if (opal_list_is_empty(&done)) {
            opal_list_remove_item(&ep->send_queue, &frag->base.super.super);
        } else {
            opal_list_remove_first(&done);
        }
        frag->base.des_flags = pml_flags;
        OPAL_THREAD_UNLOCK(&ep->lock);
        complete_list(ep, &done, OPAL_SUCCESS); /* its push, if written */
        OBJ_DESTRUCT(&done);
        ep_fail(ep, "send failed", -rc, false);
        return OPAL_ERR_UNREACH;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (opal_list_is_empty(&done)) {
        /* not all of it went out: the rest completes from the send event, with a callback */
        OBJ_DESTRUCT(&done);
        return OPAL_SUCCESS;
    }
    /* written whole: the PML's own flags decide about a callback */
    opal_list_remove_first(&done);
    complete_list(ep, &done, OPAL_SUCCESS); /* its push, if written too */
    OBJ_DESTRUCT(&done);
    frag->base.des_flags = pml_flags;
    complete_frag(ep, frag, OPAL_SUCCESS);
    return 1;
}

int mca_btl_devmem_endpoint_send(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag)
{
    return mca_btl_devmem_endpoint_send_placed(ep, frag, NULL, NULL);
}

/* The frame to follow frag on the wire (the push of an RGET header), or NULL. */
static mca_btl_devmem_frag_t *placing_locked(mca_btl_devmem_endpoint_t *ep,
                                             mca_btl_devmem_frag_t *frag)
{
    return NULL == frag->done ? mca_btl_devmem_endpoint_hooks.placing_send(ep, frag) : NULL;
}

int mca_btl_devmem_endpoint_send_placed(mca_btl_devmem_endpoint_t *ep,
                                        mca_btl_devmem_frag_t *frag,
                                        mca_btl_devmem_placed_fn placed, void *arg)
{
    mca_btl_devmem_frag_t *push;
    int rc = OPAL_SUCCESS;

    frag->endpoint = ep;
    OPAL_THREAD_LOCK(&ep->lock);
    if (ep->fail_pending /* failing: the dispatcher completes it (ep_fail) */
        || MCA_BTL_DEVMEM_EP_FAILED == ep->state || MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return OPAL_ERR_UNREACH;
    }
    /* every branch below queues it in this same hold of the lock: its place on the wire */
    if (NULL != placed && OPAL_SUCCESS != (rc = placed(ep, frag, arg))) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return rc;
    }
    /* an RGET header brings the first bytes of its data right behind it */
    push = placing_locked(ep, frag);
    switch (ep->state) {
    case MCA_BTL_DEVMEM_EP_CONNECTED:
        if (opal_list_is_empty(&ep->send_queue) && !ep->tx_corked) {
            /* inline: the common case, and the fastest; 1 tells the PML its descriptor is
             * done (PML descriptors only; frag may be reused once written) */
            bool pml_desc = NULL == frag->done;

            rc = write_now_unlock(ep, frag, push, false);
            return 1 == rc && !pml_desc ? OPAL_SUCCESS : rc;
        }
        mca_btl_devmem_progress_activity();
        ep->tx_cork_queued |= ep->tx_corked;
        queue_locked(ep, frag, push);
        break;
    case MCA_BTL_DEVMEM_EP_CLOSED:
        queue_locked(ep, frag, push);
        rc = mca_btl_devmem_conn_start(ep);
        break;
    default: /* connecting: queued until the handshake completes */
        queue_locked(ep, frag, push);
        break;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (OPAL_SUCCESS != rc) {
        ep_fail(ep, "cannot connect", -rc > 0 ? -rc : 0, false);
        return OPAL_SUCCESS; /* the frag was completed with an error by ep_fail */
    }
    return OPAL_SUCCESS;
}

int mca_btl_devmem_endpoint_send_now(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag)
{
    frag->endpoint = ep;
    OPAL_THREAD_LOCK(&ep->lock);
    if (ep->fail_pending || MCA_BTL_DEVMEM_EP_FAILED == ep->state
        || MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return OPAL_ERR_UNREACH;
    }
    if (MCA_BTL_DEVMEM_EP_CONNECTED != ep->state || !opal_list_is_empty(&ep->send_queue)
        || ep->tx_corked) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return OPAL_ERR_RESOURCE_BUSY;
    }
    return write_now_unlock(ep, frag, placing_locked(ep, frag), true);
}

/* ---------------------------------------------------------------- receiving */

static void deliver(mca_btl_devmem_endpoint_t *ep, uint8_t tag, void *payload, size_t len)
{
    mca_btl_active_message_callback_t *reg = mca_btl_base_active_message_trigger + tag;
    mca_btl_base_segment_t seg;

    seg.seg_addr.pval = payload;
    seg.seg_len = len;
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_host, len);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_frags, 1);
#if BTL_VERSION >= 330
    mca_btl_base_receive_descriptor_t desc = {.endpoint = ep,
                                              .des_segments = &seg,
                                              .des_segment_count = 1,
                                              .tag = tag,
                                              .cbdata = reg->cbdata};
    reg->cbfunc(&ep->module->super, &desc);
#else
    mca_btl_base_descriptor_t desc;
    memset(&desc, 0, sizeof(desc));
    desc.des_segments = &seg;
    desc.des_segment_count = 1;
    reg->cbfunc(&ep->module->super, tag, &desc, reg->cbdata);
#endif
}

/*
 * The checks a frame needs beyond the header codec, done once per frame before any payload
 * is placed: pushes come where they were announced (btl_devmem_push.h), somebody must listen
 * on a SEND's tag, a PUT needs an address, a GET_RESP must answer a pending get of exactly
 * its size, and nothing follows a FIN.
 * Returns 0, or -1 when the endpoint failed.
 */
static int rx_admit(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h)
{
    char why[128];
    int rc;

    if (MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state) {
        proto_error(ep, "traffic after FIN", h);
        return -1;
    }
    if (0 != (rc = mca_btl_devmem_endpoint_hooks.admit_any(ep, h, why, sizeof(why)))) {
        if (-2 == rc) {
            mca_btl_devmem_endpoint_abort(ep, why);
        } else {
            proto_error(ep, why, h);
        }
        return -1;
    }
    switch (h->type) {
    case MCA_BTL_DEVMEM_HDR_SEND:
        if (NULL == mca_btl_base_active_message_trigger[h->tag].cbfunc) {
            proto_error(ep, "no receiver registered for this tag", h);
            return -1;
        }
        break;
    case MCA_BTL_DEVMEM_HDR_PUT:
        if (0 == h->addr) {
            proto_error(ep, "put to a null address", h);
            return -1;
        }
        if (mca_btl_devmem_endpoint_hooks.is_device((const void *) (uintptr_t) h->addr)) {
            /* we never advertise PUT: no PML of ours sends one into device memory */
            proto_error(ep, "put into device memory", h);
            return -1;
        }
        break;
    case MCA_BTL_DEVMEM_HDR_GET_RESP:
        if (!mca_btl_devmem_endpoint_hooks.resp_admit(ep, h)) {
            proto_error(ep, "get response matches no request", h);
            return -1;
        }
        break;
    }
    return 0;
}

/* Where an admitted PUT or GET_RESP payload goes; SEND payloads stay where they land. */
static char *rx_dest(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h)
{
    if (MCA_BTL_DEVMEM_HDR_PUT == h->type) {
        return (char *) (uintptr_t) h->addr;
    }
    if (MCA_BTL_DEVMEM_HDR_PUSH == h->type) {
        return mca_btl_devmem_endpoint_hooks.push_dest(ep);
    }
    return mca_btl_devmem_endpoint_hooks.resp_dest(ep);
}

/* Every payload byte of an admitted frame is in place (a SEND's at `body`). */
static void rx_complete(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h,
                        char *body)
{
    switch (h->type) {
    case MCA_BTL_DEVMEM_HDR_SEND:
        deliver(ep, h->tag, body, h->size);
        break;
    case MCA_BTL_DEVMEM_HDR_PUT:
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_host, h->size);
        break;
    case MCA_BTL_DEVMEM_HDR_GET_REQ:
        mca_btl_devmem_endpoint_hooks.get_req(ep, h);
        break;
    case MCA_BTL_DEVMEM_HDR_DEVFLOW:
    case MCA_BTL_DEVMEM_HDR_LANES:
        mca_btl_devmem_endpoint_hooks.devflow(ep, h);
        break;
    case MCA_BTL_DEVMEM_HDR_GET_RESP:
        mca_btl_devmem_endpoint_hooks.resp_done(ep);
        break;
    case MCA_BTL_DEVMEM_HDR_PUSH:
        mca_btl_devmem_endpoint_hooks.push_in_done(ep);
        break;
    case MCA_BTL_DEVMEM_HDR_FIN:
        OPAL_THREAD_LOCK(&ep->lock);
        mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_SHUTDOWN, "the peer said FIN");
        OPAL_THREAD_UNLOCK(&ep->lock);
        break;
    }
}

static int rx_admit_cb(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    return rx_admit(ctx, h);
}

static char *rx_dest_cb(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    return rx_dest(ctx, h);
}

static int rx_complete_cb(void *ctx, const struct mca_btl_devmem_hdr *h, char *body)
{
    mca_btl_devmem_endpoint_t *ep = ctx;

    rx_complete(ep, h, body);
    return MCA_BTL_DEVMEM_EP_FAILED == ep->state ? -1 : 0;
}

static void rx_malformed_cb(void *ctx, const struct mca_btl_devmem_hdr *h,
                            enum mca_btl_devmem_check chk)
{
    proto_error(ctx, mca_btl_devmem_check_str(chk), h);
}

static const struct mca_btl_devmem_rxframe_ops rx_ops = {
    .admit = rx_admit_cb,
    .dest = rx_dest_cb,
    .complete = rx_complete_cb,
    .malformed = rx_malformed_cb,
};

static void rx_eof(mca_btl_devmem_endpoint_t *ep, int err)
{
    if (MCA_BTL_DEVMEM_EP_SHUTDOWN == ep->state && 0 == err) {
        OPAL_THREAD_LOCK(&ep->lock);
        mca_btl_devmem_endpoint_detach(ep);
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    if (0 == err && (mca_btl_devmem_rxframe_partial(&ep->rx) > 0 || ep->rx.in_body)) {
        /* the stream ended inside a frame: say so, the bytes we had are not a message */
        char why[128];

        if (!ep->rx.in_body) {
            snprintf(why, sizeof(why), "the peer closed the connection in the middle of a "
                     "frame (%zu bytes of it received)", mca_btl_devmem_rxframe_partial(&ep->rx));
        } else {
            snprintf(why, sizeof(why), "the peer closed the connection in the middle of a "
                     "frame's payload");
        }
        ep_fail(ep, why, 0, true);
        return;
    }
    ep_fail(ep, 0 == err ? "the peer closed the connection without saying goodbye"
                         : "receive failed", err, false);
}

/*
 * The sends that PML callbacks make while the frames of one read are dispatched (get
 * requests, the answers to a batch of them, the PML's FINs) wait in the queue and leave
 * together when the read's frames are done, in as few sendmsg calls as write_chunk allows,
 * instead of one each. What the callbacks send waits at most for the dispatch of frames
 * already read, never for another read. Uncorked, a sender of 128 KiB windows on loopback
 * answers each get in its own call; what that costs is in doc/tuning.md, "Cork".
 */
static __thread mca_btl_devmem_endpoint_t *corked_ep;

static void tx_cork(mca_btl_devmem_endpoint_t *ep)
{
    assert(NULL == corked_ep); /* one read at a time per thread: recv_cb and the dispatch
                                * refuse to nest */
    OPAL_THREAD_LOCK(&ep->lock);
    ep->tx_corked = true;
    OPAL_THREAD_UNLOCK(&ep->lock);
    corked_ep = ep;
}

/* Only what the cork held back is written here: a queue that waits for room already has
 * the send event armed, and another call would only meet a full socket. */
static void tx_uncork(mca_btl_devmem_endpoint_t *ep)
{
    bool held;

    corked_ep = NULL;
    OPAL_THREAD_LOCK(&ep->lock);
    held = ep->tx_cork_queued;
    ep->tx_corked = ep->tx_cork_queued = false;
    OPAL_THREAD_UNLOCK(&ep->lock);
    if (held) {
        send_progress(ep);
    }
}

void mca_btl_devmem_endpoint_uncork_current(void)
{
    if (NULL != corked_ep) {
        tx_uncork(corked_ep);
    }
}

static void rx_progress(mca_btl_devmem_endpoint_t *ep)
{
    /* Bounded, so one busy peer cannot starve the others. A read that comes back short has
     * emptied the socket: stop there rather than pay a syscall for EAGAIN; the event is
     * level-triggered and calls again when more arrives. */
    for (int round = 0; round < 64; round++) {
        struct iovec iov[2];
        int cnt, rc;
        size_t want;
        ssize_t n;

        if (MCA_BTL_DEVMEM_EP_CONNECTED != ep->state && MCA_BTL_DEVMEM_EP_SHUTDOWN != ep->state) {
            return;
        }
        /* one more small read per frame while a large answer is due, against a copy of
         * up to recv_buffer bytes of its payload out of the read-ahead */
        ep->rx.hdr_first = mca_btl_devmem_endpoint_hooks.header_first(ep);
        cnt = mca_btl_devmem_rxframe_iov(&ep->rx, iov);
        want = iov[0].iov_len + (2 == cnt ? iov[1].iov_len : 0);
        n = 1 == cnt ? recv(ep->sd, iov[0].iov_base, want, 0) : readv(ep->sd, iov, cnt);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.recv_calls, 1);
        if (n > 0) {
            tx_cork(ep);
            rc = mca_btl_devmem_rxframe_got(&ep->rx, (size_t) n);
            tx_uncork(ep);
            if (-ENOMEM == rc) {
                ep_fail(ep, "out of memory for a large fragment", ENOMEM, false);
            }
            if (rc < 0 || (size_t) n < want) {
                return;
            }
            continue;
        }
        if (0 == n) {
            rx_eof(ep, 0);
            return;
        }
        if (EINTR == errno) {
            continue;
        }
        if (EAGAIN == errno || EWOULDBLOCK == errno) {
            return;
        }
        rx_eof(ep, errno);
        return;
    }
}

static void recv_cb(mca_btl_devmem_endpoint_t *ep)
{
    if (ep->in_recv) {
        return; /* a callback re-entered progress: the outer loop carries on */
    }
    ep->in_recv = true;
    switch (ep->state) {
    case MCA_BTL_DEVMEM_EP_CONNECT_ACK:
        mca_btl_devmem_conn_read_reply(ep);
        if (MCA_BTL_DEVMEM_EP_CONNECTED == ep->state) {
            rx_progress(ep); /* data may already follow the reply */
        }
        break;
    case MCA_BTL_DEVMEM_EP_CONNECTED:
    case MCA_BTL_DEVMEM_EP_SHUTDOWN:
        rx_progress(ep);
        break;
    default:
        break;
    }
    ep->in_recv = false;
}

static void send_cb(mca_btl_devmem_endpoint_t *ep)
{
    if (MCA_BTL_DEVMEM_EP_CONNECTING == ep->state) {
        mca_btl_devmem_conn_connect_done(ep);
        return;
    }
    send_progress(ep);
}

static void ep_cb(int sd, short flags, void *arg)
{
    mca_btl_devmem_endpoint_t *ep = arg;

    mca_btl_devmem_progress_activity();
    OBJ_RETAIN(ep);
    if (__atomic_load_n(&ep->fail_pending, __ATOMIC_ACQUIRE)) { /* found broken (ep_fail) */
        char why[sizeof(ep->fail_why)];
        bool ours;
        int err;

        OPAL_THREAD_LOCK(&ep->lock);
        memcpy(why, ep->fail_why, sizeof(why));
        ours = ep->fail_ours;
        err = ep->fail_err;
        OPAL_THREAD_UNLOCK(&ep->lock);
        ep_fail_locked(ep, why, err, ours);
        OBJ_RELEASE(ep);
        return;
    }
    if (flags & OPAL_EV_WRITE) {
        send_cb(ep);
    }
    if ((flags & OPAL_EV_READ) && ep->sd == sd) {
        recv_cb(ep);
    }
    OBJ_RELEASE(ep);
}

/* ---------------------------------------------------------------- shutdown */

void mca_btl_devmem_endpoint_shutdown(mca_btl_devmem_endpoint_t *ep)
{
    opal_list_t leftover;
    mca_btl_devmem_frag_t *fin;

    OBJ_CONSTRUCT(&leftover, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    if (MCA_BTL_DEVMEM_EP_CONNECTED == ep->state
        && NULL != (fin = mca_btl_devmem_frag_alloc(0))) {
        fin->done = mca_btl_devmem_frag_done_return;
        fin->hdr.type = MCA_BTL_DEVMEM_HDR_FIN;
        mca_btl_devmem_frag_prepare_write(fin);
        opal_list_append(&ep->send_queue, &fin->base.super.super);
        /* the peer reads what is queued in its own finalize */
        (void) mca_btl_devmem_frag_queue_drain(ep->sd, &ep->send_queue, &leftover);
        (void) shutdown(ep->sd, SHUT_WR);
    }
    mca_btl_devmem_conn_set_state(ep, MCA_BTL_DEVMEM_EP_SHUTDOWN, "closing down");
    mca_btl_devmem_endpoint_detach(ep);
    opal_list_join(&leftover, opal_list_get_end(&leftover), &ep->send_queue);
    OPAL_THREAD_UNLOCK(&ep->lock);
    mca_btl_devmem_endpoint_hooks.closing(ep, true);
    /* written frags complete normally; anything never written fails quietly (finalize) */
    while (!opal_list_is_empty(&leftover)) {
        mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) opal_list_remove_first(&leftover);
        bool written = frag->iov_idx == frag->iov_cnt;
        complete_frag(ep, frag, written ? OPAL_SUCCESS : OPAL_ERR_UNREACH);
    }
    OBJ_DESTRUCT(&leftover);
}
