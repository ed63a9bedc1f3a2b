/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Get and put: the module's entry points, the GET_REQ a get sends, the GET_RESP that answers
 * one (with the staging copy out of device memory), and the receiving end of a GET_RESP on
 * the control connection (finding its get, where its bytes go, completing it). Gets on a
 * device flow take btl_devmem_devflow*.c's path after the request.
 */
#ifndef MCA_BTL_DEVMEM_RDMA_H
#define MCA_BTL_DEVMEM_RDMA_H

#include "btl_devmem_endpoint.h"
#include "btl_devmem_progress.h"

BEGIN_C_DECLS

/* ep->pending_gets, the gets asked and not yet answered, changes only through these (under
 * ep->lock), which keep the count the idle policy reads (mca_btl_devmem_progress_gets) in
 * step with the list. */
static inline void mca_btl_devmem_rdma_pending_add(mca_btl_devmem_endpoint_t *ep,
                                                   mca_btl_devmem_frag_t *get)
{
    opal_list_append(&ep->pending_gets, &get->base.super.super);
    mca_btl_devmem_progress_gets(1);
}

static inline void mca_btl_devmem_rdma_pending_remove(mca_btl_devmem_endpoint_t *ep,
                                                      mca_btl_devmem_frag_t *get)
{
    opal_list_remove_item(&ep->pending_gets, &get->base.super.super);
    mca_btl_devmem_progress_gets(-1);
}

/* All of them, moved to the end of into (a failed connection's). */
static inline void mca_btl_devmem_rdma_pending_take_all(mca_btl_devmem_endpoint_t *ep,
                                                        opal_list_t *into)
{
    mca_btl_devmem_progress_gets(-(int) opal_list_get_size(&ep->pending_gets));
    opal_list_join(into, opal_list_get_end(into), &ep->pending_gets);
}

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
 * it in ep->rget until its payload is in place. false: it answers nothing of ours. */
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
