/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Get and put: the module's entry points, the GET_REQ a get sends, the GET_RESP that answers
 * one (with the staging copy out of device memory), and the receiving end of a GET_RESP on
 * the control connection (finding its get, where its bytes go, completing it). Gets on a
 * device flow take btl_devmem_devflow*.c's path after the request.
 */
#ifndef MCA_BTL_DEVMEM_RDMA_H
#define MCA_BTL_DEVMEM_RDMA_H

#include "base/btl_devmem_activity.h"
#include "connections/btl_devmem_endpoint.h"

BEGIN_C_DECLS

/* What get and put keep on a fragment (mca_btl_devmem_frag_state): a put or get's local side
 * and whom to tell; a get waiting for lanes (parked), the peer's address and handle (a copy:
 * the caller's may go once btl_get returns); device memory; pushes (btl_devmem_push.h): a
 * GET's first push_len bytes come by push, the rest by GET_RESP, and it completes when both
 * are in place. */
struct mca_btl_devmem_getput {
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t rdma_cb;
    void *cbcontext;
    void *cbdata;
    uint64_t remote_address;
    uint64_t remote_handle[4]; /* a mca_btl_base_registration_handle_t (btl_devmem_reg.h) */
    bool has_remote_handle;
    bool dst_dev; /* GET: local_address is device memory */
    int ordinal;  /* ... of this device; valid only with dst_dev */
    void *stage;  /* host copy of device bytes; freed on return */
    uint32_t push_len;
    bool push_pending; /* GET: the pushed bytes are not in place yet */
    bool resp_done;    /* GET: the GET_RESP part is */
};

extern size_t mca_btl_devmem_getput_handle;

static inline struct mca_btl_devmem_getput *mca_btl_devmem_getput(const mca_btl_devmem_frag_t *f)
{
    return (struct mca_btl_devmem_getput *) mca_btl_devmem_frag_state(f,
                                                                      mca_btl_devmem_getput_handle);
}

/* Most chunks one get is cut into; a larger get takes larger chunks. */
#define MCA_BTL_DEVMEM_STRIPE_MAX 64

/* What striping one get needs, taken before its request's place on the wire is decided
 * (the allocations cannot fail under the endpoint's lock). */
struct mca_btl_devmem_stripe {
    unsigned int nchunks; /* chunks if several lanes are open at placement; 0: not cut */
    size_t chunk;         /* bytes of each chunk but the last */
    mca_btl_devmem_frag_t *chunks[MCA_BTL_DEVMEM_STRIPE_MAX]; /* chunk records, unused
                                                               * ones freed by stripe_release */
    unsigned int used;    /* records the placement took */
};

/* Where a get may go besides the control connection: the device flows' lanes, a layer above
 * (doc/design.md, Layers), registered by the component at init. prepare: before asking for
 * a get of size bytes from ep, how it would be cut (the inline bytes its GET_REQ needs for
 * the further chunks' requests, 0: not cut); host_stays: whether get belongs on the control
 * connection whatever the lanes; take: under ep's lock as the GET_REQ req is placed, take
 * get onto the lanes (req then asks for it there), or false; release: give back what
 * stripe holds and the placement did not take. */
struct mca_btl_devmem_rdma_lanes {
    size_t (*prepare)(mca_btl_devmem_endpoint_t *ep, size_t size,
                      struct mca_btl_devmem_stripe *stripe);
    bool (*host_stays)(const mca_btl_devmem_endpoint_t *ep, const mca_btl_devmem_frag_t *get);
    bool (*take)(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get,
                 mca_btl_devmem_frag_t *req, struct mca_btl_devmem_stripe *stripe);
    void (*release)(struct mca_btl_devmem_stripe *stripe);
    /* under ep->lock, for a get that could take lanes: whether it waits for lanes asked
     * of the peer (MCA_BTL_DEVMEM_GET_PARKED: on the peer's list of them; ..._ASK: and the asking
     * is the caller's, after the lock) or is placed now (0) */
    int (*park)(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get);
    void (*ask)(mca_btl_devmem_endpoint_t *ep);
};
#define MCA_BTL_DEVMEM_GET_PARKED 1
#define MCA_BTL_DEVMEM_GET_PARKED_ASK 2
/* At init: where gets may go besides the control connections, and what get and put keep of
 * each peer and on each fragment registered with the endpoint and the fragment. */
int mca_btl_devmem_rdma_init(const struct mca_btl_devmem_rdma_lanes *lanes);

/* The connection dropped its socket: a GET_RESP half read is gone with it. */
void mca_btl_devmem_rdma_detached(mca_btl_devmem_endpoint_t *ep);

/* The gets that waited for lanes (moved to gets by the caller): asked for now,
 * on the lanes that opened or on the control connection. */
void mca_btl_devmem_rdma_unpark(mca_btl_devmem_endpoint_t *ep, opal_list_t *gets);

/* btl_put and btl_get of the module table. */
int mca_btl_devmem_put(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata);
int mca_btl_devmem_get(mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       void *local_address, uint64_t remote_address,
                       mca_btl_base_registration_handle_t *local_handle,
                       mca_btl_base_registration_handle_t *remote_handle, size_t size,
                       int flags, int order, mca_btl_base_rdma_completion_fn_t cbfunc,
                       void *cbcontext, void *cbdata);

/* The done function of a GET_RESP, sent or failed (the devmem TX answers of the device
 * flows too). */
void mca_btl_devmem_rdma_resp_sent(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *resp,
                                   int status);

/* The answer to GET_REQ h: a GET_RESP fragment whose payload is h->size bytes at h->addr in
 * our memory, in place (device memory: copied to host memory first, the copy freed with the
 * fragment), ready to queue; it returns to its free list once written. NULL with why filled
 * when out of memory or the copy failed. */
mca_btl_devmem_frag_t *mca_btl_devmem_rdma_get_resp(const struct mca_btl_devmem_hdr *h,
                                                    char *why, size_t whylen);

/* The peer asks for h->size bytes at h->addr on the control connection: queue the answer.
 * 0, or -1 when ep failed. */
int mca_btl_devmem_rdma_answer(mca_btl_devmem_endpoint_t *ep, const struct mca_btl_devmem_hdr *h);

/* Is the next answer due on the control connection a large one (its payload worth reading
 * straight to its destination rather than through the read-ahead)? Answers come in the order
 * of the requests. */
bool mca_btl_devmem_rdma_large_answer_due(mca_btl_devmem_endpoint_t *ep);

/* A GET_RESP header arrived: find the pending get of its id and exactly its size, and keep
 * it until its payload is in place. false: it answers nothing of ours. */
bool mca_btl_devmem_rdma_resp_admit(mca_btl_devmem_endpoint_t *ep,
                                    const struct mca_btl_devmem_hdr *h);

/* Where the admitted GET_RESP's payload goes: the get's destination, or its host stage. */
char *mca_btl_devmem_rdma_resp_dest(mca_btl_devmem_endpoint_t *ep);

/* Every byte of the admitted GET_RESP is in place: complete its get (once its push, if
 * it has one, is in place too). */
void mca_btl_devmem_rdma_resp_done(mca_btl_devmem_endpoint_t *ep);

/* Every part of get is in place and it is off the pending list: complete it. */
void mca_btl_devmem_rdma_get_finish(mca_btl_devmem_endpoint_t *ep, mca_btl_devmem_frag_t *get);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_RDMA_H */
