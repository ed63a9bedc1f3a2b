/* SPDX-License-Identifier: BSD-3-Clause */
/* How the layers are joined: btl_devmem_wiring.h */
#include "opal_config.h"

#include "base/btl_devmem_frag.h"
#include "connections/btl_devmem_endpoint.h"
#include "rdma/btl_devmem_push.h"
#include "rdma/btl_devmem_rdma.h"
#include "rdma/btl_devmem_reg.h"
#include "devflow/btl_devmem_devflow.h"
#include "btl_devmem_wiring.h"

/* The endpoint's hooks (btl_devmem_endpoint.h): what the layers above it do with its
 * connections. */
static void ep_closing(mca_btl_devmem_endpoint_t *ep, bool orderly)
{
    mca_btl_devmem_devflow_close(ep, orderly);
}

static void ep_detached(mca_btl_devmem_endpoint_t *ep)
{
    mca_btl_devmem_rdma_detached(ep);
    mca_btl_devmem_push_in_reset(ep); /* pushes kept for that connection are gone with it */
}

static void ep_destructing(mca_btl_devmem_endpoint_t *ep)
{
    mca_btl_devmem_push_forget(ep);
    mca_btl_devmem_devflow_free(ep);
    mca_btl_devmem_push_in_reset(ep);
}

/* A PUSH's bytes are in place: a get that waited for them may be done. */
static void ep_push_in_done(mca_btl_devmem_endpoint_t *ep)
{
    mca_btl_devmem_frag_t *get = mca_btl_devmem_push_rx_done(ep);

    if (NULL != get) {
        mca_btl_devmem_rdma_get_finish(ep, get);
    }
}

/* A get request: answered on a device flow where the peer asked for one. */
static void ep_get_req(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h)
{
    if (h->flags & MCA_BTL_DEVMEM_FLAG_DEVFLOW) {
        (void) mca_btl_devmem_devflow_answer(ep, h);
    } else {
        (void) mca_btl_devmem_rdma_answer(ep, h);
    }
}

static void ep_devflow(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h)
{
    if (MCA_BTL_DEVMEM_HDR_LANES == h->type) {
        mca_btl_devmem_devflow_lanes(ep, h);
    } else {
        (void) mca_btl_devmem_devflow_claim(ep, h);
    }
}

static bool ep_is_device(const void *addr)
{
    return mca_btl_devmem_mem_is_device(addr, NULL);
}

static const struct mca_btl_devmem_endpoint_hooks ep_hooks = {
    .closing = ep_closing,
    .detached = ep_detached,
    .destructing = ep_destructing,
    .placing_send = mca_btl_devmem_push_emit_locked,
    .admit_any = mca_btl_devmem_push_rx_admit,
    .resp_admit = mca_btl_devmem_rdma_resp_admit,
    .resp_dest = mca_btl_devmem_rdma_resp_dest,
    .resp_done = mca_btl_devmem_rdma_resp_done,
    .push_dest = mca_btl_devmem_push_rx_dest,
    .push_in_done = ep_push_in_done,
    .get_req = ep_get_req,
    .devflow = ep_devflow,
    .header_first = mca_btl_devmem_rdma_large_answer_due,
    .is_device = ep_is_device,
};

/* Where gets may go besides the control connections: the device flows' lanes. */
static const struct mca_btl_devmem_rdma_lanes rdma_lanes = {
    .prepare = mca_btl_devmem_devflow_stripe_prepare,
    .host_stays = mca_btl_devmem_devflow_host_stays,
    .take = mca_btl_devmem_devflow_place_get,
    .release = mca_btl_devmem_devflow_stripe_release,
    .park = mca_btl_devmem_devflow_park,
    .ask = mca_btl_devmem_devflow_ask,
};

int mca_btl_devmem_wiring_init(void)
{
    int rc;

    mca_btl_devmem_endpoint_set_hooks(&ep_hooks);
    if (OPAL_SUCCESS != (rc = mca_btl_devmem_rdma_init(&rdma_lanes))
        || OPAL_SUCCESS != (rc = mca_btl_devmem_push_init())
        || OPAL_SUCCESS != (rc = mca_btl_devmem_devflow_init())) {
        return rc;
    }
    return OPAL_SUCCESS;
}
