/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Get and put; see btl_devmem_rdma.h. A put is a PUT frame whose payload the receiver
 * writes at the address in its header. A get registers itself on the endpoint's
 * pending_gets, then sends a GET_REQ; the peer streams the bytes back in place as a
 * GET_RESP (or on the device flow), which the receive path lands at the get's destination.
 * When the peer pushed the first bytes behind its RGET (btl_devmem_push.h), the get asks
 * only for the rest and completes once both parts are in place.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/btl_devmem_activity.h"
#include "rdma/btl_devmem_push.h"
#include "rdma/btl_devmem_rdma.h"
#include "rdma/btl_devmem_reg.h"

/* A get is done once its answer is in place, a put once written (or either failed): the
 * caller hears it. */
static void get_done(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag, int status)
{
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(frag);

    g->rdma_cb(&ep->module->super, ep, g->local_address, g->local_handle, g->cbcontext,
               g->cbdata, status);
    mca_btl_devmem_frag_return(frag);
}

static void put_done(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *frag, int status)
{
    if (OPAL_SUCCESS == status) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_host, frag->payload);
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.put_host, frag->payload);
    }
    get_done(ep, frag, status);
}

void mca_btl_devmem_rdma_resp_sent(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *resp,
                                   int status)
{
    (void) ep;
    if (OPAL_SUCCESS == status) {
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.tx_host, resp->payload);
    }
    mca_btl_devmem_frag_return(resp);
}

/* What put and get fragments both carry: the local side and whom to tell. */
static void rdma_frag_init(mca_btl_devmem_frag_t *frag, mca_btl_devmem_frag_done_fn done,
                           void *local_address,
                           mca_btl_base_registration_handle_t *local_handle,
                           mca_btl_base_rdma_completion_fn_t cbfunc, void *cbcontext,
                           void *cbdata)
{
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(frag);

    frag->done = done;
    g->local_address = local_address;
    g->local_handle = local_handle;
    g->rdma_cb = cbfunc;
    g->cbcontext = cbcontext;
    g->cbdata = cbdata;
}

/* ---------------------------------------------------------------- put */

int mca_btl_devmem_put(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata)
{
    mca_btl_devmem_frag_t *frag;

    if (size > btl->btl_put_limit || size > UINT32_MAX) {
        return OPAL_ERR_BAD_PARAM;
    }
    if (NULL == (frag = mca_btl_devmem_frag_alloc_user())) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rdma_frag_init(frag, put_done, local_address, local_handle, cbfunc,
                   cbcontext, cbdata);
    frag->segments[0].seg_addr.pval = local_address;
    frag->segments[0].seg_len = size;
    frag->base.des_segment_count = 1;
    mca_btl_devmem_frag_prepare_write(frag);
    frag->hdr.type = MCA_BTL_DEVMEM_HDR_PUT;
    frag->hdr.addr = remote_address;
    if (mca_btl_devmem_endpoint_send(ep, frag) < 0) {
        mca_btl_devmem_frag_return(frag);
        return OPAL_ERR_UNREACH;
    }
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------------- get: asking */

/*
 * The request's place on the wire is fixed (under the endpoint's lock): register the get
 * now, so that the answer always finds it, and in the same order as the requests, which is
 * the order in which a device flow answers them. Several threads asking at once would
 * otherwise have their gets land in one another's buffers.
 */
struct get_ask {
    mca_btl_devmem_frag_t *get;
    const mca_btl_base_registration_handle_t *remote; /* the peer's handle (its push) */
    struct mca_btl_devmem_stripe stripe; /* its chunks, if it is cut over several lanes */
    bool placed; /* the get is registered: it will complete, even if the send fails */
    int parked;  /* it waits for lanes (MCA_BTL_DEVMEM_GET_PARKED...), req unsent */
    bool replay; /* it waited already: placed now, wherever it can go */
};

static struct mca_btl_devmem_rdma_lanes lanes;

_Static_assert(sizeof(mca_btl_base_registration_handle_t)
                   <= sizeof(((struct mca_btl_devmem_getput *) 0)->remote_handle),
               "a parked get keeps a copy of the peer's registration handle");

/* What get and put keep of each peer, on its endpoint (mca_btl_devmem_endpoint_state): the
 * last get id given out (under the endpoint's lock), and the get whose GET_RESP body is being
 * read (the dispatcher's alone). */
struct rdma_peer {
    uint64_t last_get_id;
    mca_btl_devmem_frag_t *rget;
};
static size_t peer_handle;

static struct rdma_peer *peer_of(const mca_btl_devmem_endpoint_t *ep)
{
    return mca_btl_devmem_endpoint_state(ep, peer_handle);
}

size_t mca_btl_devmem_getput_handle;

static void getput_release(void *state)
{
    struct mca_btl_devmem_getput *g = state;

    free(g->stage);
    g->stage = NULL;
}

int mca_btl_devmem_rdma_init(const struct mca_btl_devmem_rdma_lanes *l)
{
    int rc;

    lanes = *l;
    rc = mca_btl_devmem_frag_state_register(&mca_btl_devmem_getput_handle,
                                            sizeof(struct mca_btl_devmem_getput), getput_release);
    if (OPAL_SUCCESS != rc) {
        return rc;
    }
    return mca_btl_devmem_endpoint_state_register(&peer_handle, sizeof(struct rdma_peer), NULL,
                                                  NULL);
}

void mca_btl_devmem_rdma_detached(mca_btl_devmem_endpoint_t *ep)
{
    peer_of(ep)->rget = NULL; /* it is on pending_gets too: failed from there */
}

static int get_placed(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *req, void *arg)
{
    struct get_ask *ask = arg;
    mca_btl_devmem_frag_t *get = ask->get;
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);
    bool host_stays = lanes.host_stays(ep, get);

    if (!host_stays && !ask->replay && 0 != (ask->parked = lanes.park(ep, get))) {
        /* the first get for lanes not yet open: it waits for them, asked later */
        g->remote_address = req->hdr.addr;
        g->has_remote_handle = NULL != ask->remote;
        if (g->has_remote_handle) {
            memcpy(g->remote_handle, ask->remote, sizeof(*ask->remote));
        }
        ask->placed = true;
        return MCA_BTL_DEVMEM_GET_PARKED;
    }
    get->hdr.id = req->hdr.id = ++peer_of(ep)->last_get_id;
    if (!host_stays && lanes.take(ep, get, req, &ask->stripe)) {
        /* req now asks for it on the device flows */
    } else if (g->dst_dev && NULL == (g->stage = malloc(get->hdr.size))) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    } else {
        /* the control connection lands it in host memory: staged when it is for the GPU.
         * Its first bytes may be pushed to us already: then ask only for the rest. */
        uint32_t pushed = mca_btl_devmem_push_claim_locked(ep, get, ask->remote, req->hdr.addr,
                                                           get->hdr.size);

        g->push_len = pushed;
        get->hdr.size -= pushed;
        req->hdr.addr += pushed;
        req->hdr.size -= pushed;
        mca_btl_devmem_endpoint_pending_add(ep, get);
        if (host_stays) {
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.host_gets_control, 1);
        } else if (NULL != ep->module->devpath.dev) {
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.fallbacks, 1);
        }
    }
    ask->placed = true;
    return OPAL_SUCCESS;
}

static int send_get_req(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get,
                        mca_btl_devmem_frag_t *req, uint64_t remote_address, struct get_ask *ask);

/*
 * A real get: ask the peer for the bytes; they come back as a GET_RESP fragment that the
 * receive path writes straight into local_address before the callback runs.
 */
int mca_btl_devmem_get(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata)
{
    mca_btl_devmem_frag_t *get, *req;
    struct mca_btl_devmem_getput *g;
    struct get_ask ask;

    if (size > btl->btl_get_limit || size > UINT32_MAX) {
        return OPAL_ERR_BAD_PARAM;
    }
    ask.get = NULL;
    ask.remote = remote_handle;
    ask.placed = false;
    ask.parked = 0;
    ask.replay = false;
    get = mca_btl_devmem_frag_alloc_user();
    req = mca_btl_devmem_frag_alloc(lanes.prepare(ep, size, &ask.stripe));
    if (NULL == get || NULL == req) {
        lanes.release(&ask.stripe);
        if (NULL != get) {
            mca_btl_devmem_frag_return(get);
        }
        if (NULL != req) {
            mca_btl_devmem_frag_return(req);
        }
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    rdma_frag_init(get, get_done, local_address, local_handle, cbfunc,
                   cbcontext, cbdata);
    get->endpoint = ep;
    get->hdr.size = (uint32_t) size;
    ask.get = get;
    g = mca_btl_devmem_getput(get);
    g->ordinal = -1;
    if (NULL != local_handle) {
        g->dst_dev = MCA_BTL_DEVMEM_MEM_DEVICE == local_handle->kind;
        g->ordinal = local_handle->ordinal;
    } else {
        g->dst_dev = mca_btl_devmem_mem_is_device(local_address, &g->ordinal);
    }
    return send_get_req(ep, get, req, remote_address, &ask);
}

/* Ask the peer for get with req (taken with lanes.prepare's inline space, in ask->stripe):
 * what btl_get returns. */
static int send_get_req(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get,
                        mca_btl_devmem_frag_t *req, uint64_t remote_address, struct get_ask *ask)
{
    int rc;

    req->done = mca_btl_devmem_frag_done_return;
    mca_btl_devmem_frag_prepare_write(req);
    req->hdr.type = MCA_BTL_DEVMEM_HDR_GET_REQ;
    req->hdr.addr = remote_address;
    req->hdr.size = get->hdr.size; /* what is asked for; the request itself has no payload */

    rc = mca_btl_devmem_endpoint_send_placed(ep, req, get_placed, ask);
    lanes.release(&ask->stripe); /* the chunks it did not take */
    if (0 != ask->parked) {
        mca_btl_devmem_frag_return(req);
        if (MCA_BTL_DEVMEM_GET_PARKED_ASK == ask->parked) {
            lanes.ask(ep);
        }
        return OPAL_SUCCESS;
    }
    if (OPAL_SUCCESS != rc && !ask->placed && ask->replay) {
        /* it waited for lanes, and now cannot be asked: it ends with the failure */
        mca_btl_devmem_frag_return(req);
        mca_btl_devmem_endpoint_complete(ep, get, rc);
        return rc;
    }
    if (OPAL_SUCCESS != rc && !ask->placed) {
        /* never asked: the PML still owns the get */
        mca_btl_devmem_frag_return(get);
        mca_btl_devmem_frag_return(req);
        return rc;
    }
    if (rc < 0) {
        /* asked, then the connection failed under us: the get completes with the error */
        mca_btl_devmem_frag_return(req);
    }
    return OPAL_SUCCESS;
}

void mca_btl_devmem_rdma_unpark(mca_btl_devmem_endpoint_t *ep, opal_list_t *gets)
{
    opal_list_item_t *item;

    while (NULL != (item = opal_list_remove_first(gets))) {
        mca_btl_devmem_frag_t *get = (mca_btl_devmem_frag_t *) item, *req;
        struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);
        struct get_ask ask = {.get = get, .replay = true,
                              .remote = g->has_remote_handle
                                            ? (const mca_btl_base_registration_handle_t *)
                                                  g->remote_handle
                                            : NULL};

        req = mca_btl_devmem_frag_alloc(lanes.prepare(ep, get->hdr.size, &ask.stripe));
        if (NULL == req) {
            lanes.release(&ask.stripe);
            mca_btl_devmem_endpoint_complete(ep, get, OPAL_ERR_OUT_OF_RESOURCE);
            continue;
        }
        (void) send_get_req(ep, get, req, g->remote_address, &ask);
    }
}

/* ---------------------------------------------------------------- get: answering */

mca_btl_devmem_frag_t *mca_btl_devmem_rdma_get_resp(const struct mca_btl_devmem_hdr *h,
                                                    char *why, size_t whylen)
{
    mca_btl_devmem_frag_t *resp = mca_btl_devmem_frag_alloc_user();
    int ordinal = -1;

    if (NULL == resp) {
        snprintf(why, whylen, "out of fragments answering a get");
        return NULL;
    }
    resp->done = mca_btl_devmem_rdma_resp_sent;
    resp->hdr.type = MCA_BTL_DEVMEM_HDR_GET_RESP;
    resp->hdr.id = h->id;
    resp->segments[0].seg_addr.lval = h->addr;
    resp->segments[0].seg_len = h->size;
    resp->base.des_segment_count = 1;
    if (mca_btl_devmem_mem_is_device((const void *) (uintptr_t) h->addr, &ordinal)) {
        /* the socket cannot read device memory: the GPU copies it out first */
        void *stage = mca_btl_devmem_getput(resp)->stage = malloc(h->size);

        if (NULL == stage) {
            snprintf(why, whylen, "out of memory staging a %u-byte get from device memory",
                     h->size);
            mca_btl_devmem_frag_return(resp);
            return NULL;
        }
        if (0 != mca_btl_devmem_mem_copy(stage, (const void *) (uintptr_t) h->addr, h->size,
                                         ordinal, why, whylen)) {
            mca_btl_devmem_frag_return(resp);
            return NULL;
        }
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.dev_staged, h->size);
        resp->segments[0].seg_addr.pval = stage;
    }
    mca_btl_devmem_frag_prepare_write(resp);
    return resp;
}

int mca_btl_devmem_rdma_answer(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h)
{
    char why[DEVMEM_ERR_MSG_MAX + 64];
    mca_btl_devmem_frag_t *resp = mca_btl_devmem_rdma_get_resp(h, why, sizeof(why));

    if (NULL == resp) {
        mca_btl_devmem_endpoint_abort(ep, why);
        return -1;
    }
    if (mca_btl_devmem_endpoint_send(ep, resp) < 0) {
        mca_btl_devmem_frag_return(resp); /* the endpoint failed and said so */
    }
    return 0;
}

/* ---------------------------------------------------------------- get: the answer arrives */

static mca_btl_devmem_frag_t *find_get(mca_btl_devmem_endpoint_t *ep, uint64_t id)
{
    mca_btl_devmem_frag_t *found = NULL, *frag;

    OPAL_THREAD_LOCK(&ep->lock);
    OPAL_LIST_FOREACH (frag, &ep->pending_gets, mca_btl_devmem_frag_t) {
        if (frag->hdr.id == id) {
            found = frag;
            break;
        }
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return found;
}

/* From this size on, copying an answer's first read-ahead's worth out of the buffer (up to
 * recv_buffer bytes) costs more than one more small read. */
#define LARGE_ANSWER (32 * 1024)

bool mca_btl_devmem_rdma_large_answer_due(mca_btl_devmem_endpoint_t *ep)
{
    bool due = false;

    OPAL_THREAD_LOCK(&ep->lock);
    if (!opal_list_is_empty(&ep->pending_gets)) {
        mca_btl_devmem_frag_t *oldest = (mca_btl_devmem_frag_t *) opal_list_get_first(
            &ep->pending_gets);

        /* one whose answer is in and waits for its push answers nothing more */
        if (mca_btl_devmem_getput(oldest)->resp_done
            && oldest != (mca_btl_devmem_frag_t *) opal_list_get_last(&ep->pending_gets)) {
            oldest = (mca_btl_devmem_frag_t *) opal_list_get_next(&oldest->base.super.super);
        }
        due = !mca_btl_devmem_getput(oldest)->resp_done && oldest->hdr.size >= LARGE_ANSWER;
    }
    OPAL_THREAD_UNLOCK(&ep->lock);
    return due;
}

bool mca_btl_devmem_rdma_resp_admit(mca_btl_devmem_endpoint_t *ep,
                                    const struct mca_btl_devmem_hdr *h)
{
    struct rdma_peer *rp = peer_of(ep);

    rp->rget = find_get(ep, h->id);
    if (NULL == rp->rget || rp->rget->hdr.size != h->size
        || mca_btl_devmem_getput(rp->rget)->resp_done) {
        rp->rget = NULL;
        return false;
    }
    return true;
}

char *mca_btl_devmem_rdma_resp_dest(mca_btl_devmem_endpoint_t *ep)
{
    const struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(peer_of(ep)->rget);

    /* past the bytes a push brings */
    return (NULL != g->stage ? (char *) g->stage : (char *) g->local_address) + g->push_len;
}

void mca_btl_devmem_rdma_resp_done(mca_btl_devmem_endpoint_t *ep)
{
    mca_btl_devmem_frag_t *get = peer_of(ep)->rget;
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);

    peer_of(ep)->rget = NULL;
    OPAL_THREAD_LOCK(&ep->lock);
    if (g->push_pending) {
        g->resp_done = true; /* the push's arrival completes it (push_rx_done) */
        OPAL_THREAD_UNLOCK(&ep->lock);
        return;
    }
    mca_btl_devmem_endpoint_pending_remove(ep, get);
    OPAL_THREAD_UNLOCK(&ep->lock);
    mca_btl_devmem_rdma_get_finish(ep, get);
}

void mca_btl_devmem_rdma_get_finish(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get)
{
    struct mca_btl_devmem_getput *g = mca_btl_devmem_getput(get);
    char why[DEVMEM_ERR_MSG_MAX + 64];
    int status = OPAL_SUCCESS;

    if (NULL != g->stage) {
        /* landed in host memory for a device destination: the GPU takes it from there */
        if (0 != mca_btl_devmem_mem_copy(g->local_address, g->stage, get->hdr.size, g->ordinal,
                                         why, sizeof(why))) {
            opal_output(0, "btl:devmem: completing a get from %s: %s",
                        OPAL_NAME_PRINT(ep->peer->name), why);
            status = OPAL_ERROR;
        } else {
            mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.dev_staged, get->hdr.size);
        }
    }
    /* a push counts its own */
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.rx_host, get->hdr.size);
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.get_host,
                             get->hdr.size + g->push_len);
    mca_btl_devmem_endpoint_complete(ep, get, status);
}
