/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lanes on demand: a peer's device-flow lanes open only once this rank has a get for them.
 * A rank that talks to a thousand peers, but moves device data with a few, holds lanes to
 * those few (doc/scale.md).
 *
 *   asking side    the first get that could take lanes (not a host destination kept on the
 *                  control connection) waits on ep->gets_parked, and a LANES WANT frame
 *                  asks the peer to open its lanes to us. The gets are asked for once one
 *                  lane is adopted, or once none can come: the peer says NONE, or the lane
 *                  it named never arrived (the claim's timeout). Then, settled, gets go
 *                  where they can go, as before, and none waits again.
 *   answering side a WANT opens the lanes (btl_devmem_devflow_tx.c); where none can be
 *                  opened, or every one gave up before it opened, NONE says so, once.
 *
 * A failed endpoint fails its parked gets with the rest (btl_devmem_endpoint.c).
 */
#include "opal_config.h"

#include "btl_devmem_devflow_int.h"

enum mca_btl_devmem_lanes_ask {
    LANES_NOT_ASKED = 0,
    LANES_ASKED,   /* WANT said, gets wait */
    LANES_SETTLED, /* a lane came, or none will: gets are placed at once */
};

/* Whether this rank can take a lane from the peer now: it has a device-flow port, and a
 * descriptor to spare (a lane it would refuse would hold its gets until the claim's
 * timeout). */
static bool can_receive_lanes(const mca_btl_devmem_endpoint_t *ep)
{
    return NULL != ep->module->dev && 0 != ep->module->dev->listener.port
           && mca_btl_devmem_dev_enabled() && mca_btl_devmem_devflow_fd_spare();
}

int mca_btl_devmem_devflow_park(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get)
{
    switch (ep->lanes_ask) {
    case LANES_NOT_ASKED:
        if (!can_receive_lanes(ep)) {
            ep->lanes_ask = LANES_SETTLED;
            return 0;
        }
        ep->lanes_ask = LANES_ASKED;
        opal_list_append(&ep->gets_parked, &get->base.super.super);
        return MCA_BTL_DEVMEM_GET_PARKED_ASK;
    case LANES_ASKED:
        opal_list_append(&ep->gets_parked, &get->base.super.super);
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
    frag->kind = MCA_BTL_DEVMEM_FRAG_CTRL;
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

void mca_btl_devmem_devflow_settle(mca_btl_devmem_endpoint_t *ep, const char *why)
{
    opal_list_t gets;

    OPAL_THREAD_LOCK(&ep->lock);
    if (LANES_SETTLED == ep->lanes_ask) {
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    ep->lanes_ask = LANES_SETTLED;
    OBJ_CONSTRUCT(&gets, opal_list_t);
    opal_list_join(&gets, opal_list_get_end(&gets), &ep->gets_parked);
    OPAL_THREAD_UNLOCK(&ep->lock);
    DEVMEM_VERBOSE(20, "device-flow lanes from %s: %s; %zu waiting get(s) asked for now",
                   OPAL_NAME_PRINT(ep->peer->name), why, opal_list_get_size(&gets));
    mca_btl_devmem_rdma_unpark(ep, &gets);
    OBJ_DESTRUCT(&gets);
}

void mca_btl_devmem_devflow_parked_fail(mca_btl_devmem_endpoint_t *ep)
{
    opal_list_t gets;
    opal_list_item_t *item;

    OBJ_CONSTRUCT(&gets, opal_list_t);
    OPAL_THREAD_LOCK(&ep->lock);
    ep->lanes_ask = LANES_SETTLED;
    opal_list_join(&gets, opal_list_get_end(&gets), &ep->gets_parked);
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
    if (ep->lanes_started && !ep->lanes_none_said && !lanes_live(ep)
        && MCA_BTL_DEVMEM_EP_CONNECTED == ep->state) {
        ep->lanes_none_said = true;
        say(ep, MCA_BTL_DEVMEM_LANES_NONE);
    }
}

void mca_btl_devmem_devflow_lanes(mca_btl_devmem_endpoint_t *ep,
                                  const struct mca_btl_devmem_hdr *h)
{
    if (MCA_BTL_DEVMEM_LANES_NONE == h->id) {
        if (LANES_NOT_ASKED == ep->lanes_ask) { /* read alone: only settle changes it now */
            mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes refused unasked");
            return;
        }
        mca_btl_devmem_devflow_settle(ep, "the peer opens none");
        return;
    }
    if (ep->lanes_started) {
        mca_btl_devmem_endpoint_proto_error(ep, "device-flow lanes asked for twice");
        return;
    }
    ep->lanes_started = true;
    /* a lane that gives up while the later ones are not made yet must not say NONE */
    ep->lanes_none_said = true;
    mca_btl_devmem_devflow_start(ep);
    ep->lanes_none_said = false;
    mca_btl_devmem_devflow_gave_up(ep); /* none started, or all gave up at once */
}
