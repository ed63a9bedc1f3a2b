/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lanes on demand: a peer's device-flow lanes open only once this rank has a get for them.
 * A rank that talks to a thousand peers, but moves device data with a few, holds lanes to
 * those few (doc/scale.md).
 *
 *   asking side    the first get that could take lanes (not a host destination kept on the
 *                  control connection) waits on the peer's gets_parked, and a LANES WANT frame
 *                  asks the peer to open its lanes to us. The gets are asked for once one
 *                  lane is adopted, or once none can come: the peer says NONE, or the lane
 *                  it named never arrived (the claim's timeout). Then, settled, gets go
 *                  where they can go, as before, and none waits again. A rank without a
 *                  descriptor to spare asks nothing: its get takes the control connection,
 *                  and the next get looks again.
 *   answering side a WANT opens the lanes (btl_devmem_devflow_tx.c); where none can be
 *                  opened, or every one gave up before it opened, NONE says so, once.
 *
 * Lanes unused for long close again (btl_devmem_devflows' idle=S), so that descriptors
 * follow the peers that move device data now. Only the asking side knows whether a get is
 * about to name a lane, so it decides:
 *
 *   asking side    a timer finds a peer whose lanes no get took for S seconds and on which
 *                  no byte is owed; RETIRE asks it to close them, and gets wait meanwhile
 *                  as before the first WANT.
 *   answering side RETIRE closes the lanes (no answer may be queued on them: the asker owes
 *                  none) and makes them openable again; RETIRED says so.
 *   asking side    RETIRED: every claim the peer sent before it is behind us, so the lanes
 *                  close here too and may open again; the gets that waited meanwhile ask
 *                  with a new WANT.
 *
 * A connection that fails or closes fails its parked gets (devflow_close, the endpoint's
 * closing hook).
 */
#include "opal_config.h"

#include <stdlib.h>

#include "devflow/btl_devmem_devflow_int.h"

enum mca_btl_devmem_lanes_ask {
    LANES_NOT_ASKED = 0,
    LANES_ASKED,   /* WANT said, gets wait */
    LANES_SETTLED, /* a lane came, or none will: gets are placed at once */
    LANES_RETIRING, /* RETIRE said, gets wait for RETIRED (then WANT) */
};

/* Whether this rank can take a lane from the peer now: it has a device-flow port whose
 * binding is not lost, and a descriptor to spare (a lane it would refuse would hold its gets
 * until the claim's timeout). */
static bool can_receive_lanes(const mca_btl_devmem_endpoint_t *ep)
{
    const struct mca_btl_devmem_dev *d = ep->module->devpath.dev;

    return NULL != d && 0 != d->listener.port && !__atomic_load_n(&d->lost, __ATOMIC_ACQUIRE)
           && mca_btl_devmem_dev_enabled() && mca_btl_devmem_devflow_fd_spare_lanes();
}

int mca_btl_devmem_devflow_park(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);

    switch (dp->lanes_ask) {
    case LANES_NOT_ASKED:
        if (!can_receive_lanes(ep)) {
            return 0; /* asked again by the next get: descriptors free up as lanes retire */
        }
        dp->lanes_ask = LANES_ASKED;
        opal_list_append(&dp->gets_parked, &get->base.super.super);
        return MCA_BTL_DEVMEM_GET_PARKED_ASK;
    case LANES_ASKED:
    case LANES_RETIRING:
        opal_list_append(&dp->gets_parked, &get->base.super.super);
        return MCA_BTL_DEVMEM_GET_PARKED;
    default:
        return 0;
    }
}

/* A LANES frame to ep's peer; a failed endpoint has said why already. */
static void say(mca_btl_devmem_endpoint_t *ep, enum mca_btl_devmem_lanes_say what)
{
    mca_btl_devmem_frag_t *frag = mca_btl_devmem_frag_alloc(0);

    if (NULL == frag) {
        mca_btl_devmem_endpoint_fail(ep, "out of memory asking for device-flow lanes", ENOMEM);
        return;
    }
    frag->done = mca_btl_devmem_frag_done_return;
    mca_btl_devmem_frag_prepare_write(frag);
    frag->hdr.type = MCA_BTL_DEVMEM_HDR_LANES;
    frag->hdr.id = what;
    if (mca_btl_devmem_endpoint_send(ep, frag) < 0) {
        mca_btl_devmem_frag_return(frag);
    }
}

void mca_btl_devmem_devflow_ask(mca_btl_devmem_endpoint_t *ep)
{
    DEVMEM_VERBOSE(20, "asking %s for its device-flow lanes", OPAL_NAME_PRINT(ep->peer->name));
    say(ep, MCA_BTL_DEVMEM_LANES_WANT);
}

/* The parked gets, taken out under ep's lock (gets constructed here), asked for now with
 * the lock dropped: wherever they can go, none waits again. */
static void take_parked_locked(mca_btl_devmem_endpoint_t *ep, opal_list_t *gets)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);

    OBJ_CONSTRUCT(gets, opal_list_t);
    opal_list_join(gets, opal_list_get_end(gets), &dp->gets_parked);
}

static void ask_parked(mca_btl_devmem_endpoint_t *ep, opal_list_t *gets, const char *why)
{
    DEVMEM_VERBOSE(20, "device-flow lanes from %s: %s; %zu waiting get(s) asked for now",
                   OPAL_NAME_PRINT(ep->peer->name), why, opal_list_get_size(gets));
    mca_btl_devmem_rdma_unpark(ep, gets);
    OBJ_DESTRUCT(gets);
}

void mca_btl_devmem_devflow_settle(mca_btl_devmem_endpoint_t *ep, const char *why)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    opal_list_t gets;

    OPAL_THREAD_LOCK(&ep->lock);
    /* retiring: a lane the peer named before it saw RETIRE closes with the rest */
    if (LANES_SETTLED == dp->lanes_ask || LANES_RETIRING == dp->lanes_ask) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    dp->lanes_ask = LANES_SETTLED;
    dp->lanes_used = mca_btl_devmem_devflow_clock();
    take_parked_locked(ep, &gets);
    OPAL_THREAD_UNLOCK(&ep->lock);
    ask_parked(ep, &gets, why);
}

void mca_btl_devmem_devflow_parked_fail(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    opal_list_t gets;
    opal_list_item_t *item;

    OBJ_CONSTRUCT(&gets, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    dp->lanes_ask = LANES_SETTLED;
    opal_list_join(&gets, opal_list_get_end(&gets), &dp->gets_parked);
    OPAL_THREAD_UNLOCK(&ep->lock);
    while (NULL != (item = opal_list_remove_first(&gets))) {
        mca_btl_devmem_endpoint_complete(ep, (mca_btl_devmem_frag_t *) item, OPAL_ERR_UNREACH);
    }
    OBJ_DESTRUCT(&gets);
}

/* Whether any lane toward ep's peer is still coming or open. */
static bool lanes_live(const mca_btl_devmem_endpoint_t *ep)
{
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        const struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, i);

        if (NULL != df && (MCA_BTL_DEVMEM_DF_TX_CONNECTING == df->tx_state
                           || MCA_BTL_DEVMEM_DF_TX_OPEN == df->tx_state)) {
            return true;
        }
    }
    return false;
}

void mca_btl_devmem_devflow_gave_up(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);

    if (dp->lanes_started && !dp->lanes_none_said && !lanes_live(ep)
        && MCA_BTL_DEVMEM_EP_CONNECTED == ep->state) {
        dp->lanes_none_said = true;
        say(ep, MCA_BTL_DEVMEM_LANES_NONE);
    }
}

/* ---------------------------------------------------------------- retiring idle lanes */

static opal_event_t idle_tick;
static bool idle_ticking;

/* Whether ep's peer's lanes toward us may close now (ep->lock held): settled with one open
 * at least, none being claimed, no get took one for idle seconds, and no byte owed. */
static bool lanes_idle(mca_btl_devmem_endpoint_t *ep, uint32_t now, uint32_t idle)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    bool open = false;

    if (MCA_BTL_DEVMEM_EP_CONNECTED != ep->state || LANES_SETTLED != dp->lanes_ask
        || !opal_list_is_empty(&dp->gets_parked) || now - dp->lanes_used < idle) {
        return false;
    }
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, i);

        if (NULL == df) {
            continue;
        }
        if (MCA_BTL_DEVMEM_DF_RX_CLAIMED == df->rx_state || 0 != df->expected
            || !opal_list_is_empty(&df->gets)) {
            return false;
        }
        open = open || MCA_BTL_DEVMEM_DF_RX_OPEN == df->rx_state;
    }
    return open;
}

/* A libevent timer (dispatch lock taken): mark the idle peers retiring under their locks,
 * then say RETIRE to each with no module lock held, as the liveness check fails its. The
 * answer has no timeout, as a get's has none: a peer busy computing answers both when it
 * next enters MPI, and one that is gone is the liveness check's. */
static void idle_check(int fd, short flags, void *arg)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    uint32_t now = mca_btl_devmem_devflow_clock(), idle = (uint32_t) c->devflow_idle;

    mca_btl_devmem_dispatch_lock();
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];
        mca_btl_devmem_endpoint_t *ep, **retiring = NULL;
        size_t n = 0, cap = 0;

        OPAL_THREAD_LOCK(&m->lock);
        OPAL_LIST_FOREACH (ep, &m->endpoints, mca_btl_devmem_endpoint_t) {
            if (n == cap) {
                void *more = realloc(retiring, (cap ? 2 * cap : 16) * sizeof(*retiring));

                if (NULL == more) {
                    break; /* the rest at the next tick */
                }
                retiring = more;
                cap = cap ? 2 * cap : 16;
            }
            OPAL_THREAD_LOCK(&ep->lock);
            if (lanes_idle(ep, now, idle)) {
                mca_btl_devmem_devflow_peer(ep)->lanes_ask = LANES_RETIRING;
                OBJ_RETAIN(ep);
                retiring[n++] = ep;
            }
            OPAL_THREAD_UNLOCK(&ep->lock);
        }
        OPAL_THREAD_UNLOCK(&m->lock);
        for (size_t j = 0; j < n; j++) {
            DEVMEM_VERBOSE(10, "device-flow lanes from %s unused for %u s or more: asking it "
                           "to close them", OPAL_NAME_PRINT(retiring[j]->peer->name), idle);
            mca_btl_devmem_stats_add(&c->stats.devflow_retires, 1);
            say(retiring[j], MCA_BTL_DEVMEM_LANES_RETIRE);
            OBJ_RELEASE(retiring[j]);
        }
        free(retiring);
    }
    mca_btl_devmem_dispatch_unlock();
}

void mca_btl_devmem_devflow_idle_watch(void)
{
    int idle = mca_btl_devmem_component.devflow_idle;
    /* a peer is seen idle between S and S + S/4 seconds after its last get */
    struct timeval every = {idle >= 4 ? idle / 4 : 1, 0};

    if (idle_ticking || idle <= 0) {
        return;
    }
    opal_event_set(opal_sync_event_base, &idle_tick, -1, OPAL_EV_PERSIST, idle_check, NULL);
    opal_event_add(&idle_tick, &every);
    idle_ticking = true;
}

void mca_btl_devmem_devflow_idle_stop(void)
{
    if (idle_ticking) {
        opal_event_del(&idle_tick);
        idle_ticking = false;
    }
}

/* Answering side: the peer retires our lanes toward it. It owes nothing on them, so
 * nothing may be queued to send; they close and may open with its next WANT. */
static void retire(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);

    if (!dp->lanes_started) {
        mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes retired that were never "
                                            "asked for");
        return;
    }
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, i);

        if (NULL != df && !opal_list_is_empty(&df->tx_queue)) {
            mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes retired with answers "
                                                "still to send on them");
            return;
        }
    }
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, i);

        if (NULL == df || MCA_BTL_DEVMEM_DF_TX_NONE == df->tx_state) {
            continue;
        }
        mca_btl_devmem_devflow_tx_close(df, true, "the peer retired it");
        df->tx_attempts = 0;
        mca_btl_devmem_devflow_tx_state(df, MCA_BTL_DEVMEM_DF_TX_NONE, "may open again");
    }
    dp->lanes_started = false;
    dp->lanes_none_said = false;
    say(ep, MCA_BTL_DEVMEM_LANES_RETIRED);
}

/* Asking side: the peer closed its lanes toward us; close ours and ask again if gets wait. */
static void retired(mca_btl_devmem_endpoint_t *ep)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);
    opal_list_t gets;
    bool ask, waiting;

    if (LANES_RETIRING != dp->lanes_ask) { /* read alone: only this changes it now */
        mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes said retired unasked");
        return;
    }
    for (unsigned int i = 0; i < MCA_BTL_DEVMEM_DEVFLOWS_MAX; i++) {
        struct mca_btl_devmem_devflow *df = mca_btl_devmem_devflow_lane(ep, i);

        if (NULL == df || MCA_BTL_DEVMEM_DF_RX_NONE == df->rx_state) {
            continue;
        }
        if (MCA_BTL_DEVMEM_DF_RX_CLOSED != df->rx_state) {
            mca_btl_devmem_devflow_rx_close(df);
        }
        if (MCA_BTL_DEVMEM_EP_CONNECTED != ep->state) {
            return; /* closing it failed the endpoint, which fails the parked gets */
        }
        df->rx_qpos = -1;
        mca_btl_devmem_devflow_rx_state(df, MCA_BTL_DEVMEM_DF_RX_NONE, "retired: may open "
                                        "again");
    }
    /* as park does for the first get: ask only for lanes this rank can take; without a
     * descriptor to spare the waiting gets take the control connection, and a later get
     * asks again */
    OPAL_THREAD_LOCK(&ep->lock);
    waiting = !opal_list_is_empty(&dp->gets_parked);
    ask = waiting && can_receive_lanes(ep);
    dp->lanes_ask = ask ? LANES_ASKED : LANES_NOT_ASKED;
    if (waiting && !ask) {
        take_parked_locked(ep, &gets);
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    DEVMEM_VERBOSE(10, "device-flow lanes from %s closed while unused%s",
                   OPAL_NAME_PRINT(ep->peer->name), ask ? "; gets wait: asking again" : "");
    if (ask) {
        mca_btl_devmem_devflow_ask(ep);
    } else if (waiting) {
        ask_parked(ep, &gets, "no descriptor to spare");
    }
}

void mca_btl_devmem_devflow_lanes(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h)
{
    struct mca_btl_devmem_devflow_peer *dp = mca_btl_devmem_devflow_peer(ep);

    switch (h->id) {
    case MCA_BTL_DEVMEM_LANES_NONE:
        if (LANES_NOT_ASKED == dp->lanes_ask) { /* read alone: only settle changes it now */
            mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes refused unasked");
            return;
        }
        mca_btl_devmem_devflow_settle(ep, "the peer opens none");
        return;
    case MCA_BTL_DEVMEM_LANES_RETIRE:
        retire(ep);
        return;
    case MCA_BTL_DEVMEM_LANES_RETIRED:
        retired(ep);
        return;
    default:
        break;
    }
    if (dp->lanes_started) {
        mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes asked for twice");
        return;
    }
    dp->lanes_started = true;
    /* a lane that gives up while the later ones are not made yet must not say NONE */
    dp->lanes_none_said = true;
    mca_btl_devmem_devflow_start(ep);
    dp->lanes_none_said = false;
    mca_btl_devmem_devflow_gave_up(ep); /* none started, or all gave up at once */
}
