/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The BTL function table: what the PML calls. Data-path functions hand fragments to the
 * endpoint; nothing here touches a socket. Put and get are btl_devmem_rdma.c's.
 */
#include "opal_config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "opal/datatype/opal_convertor.h"
#include "opal/util/proc.h"

#include "base/btl_devmem.h"
#include "base/btl_devmem_frag.h"
#include "device/btl_devmem_dev.h"
#include "connections/btl_devmem_endpoint.h"
#include "connections/btl_devmem_proc.h"
#include "rdma/btl_devmem_rdma.h"
#include "rdma/btl_devmem_reg.h"
#include "devflow/btl_devmem_devflow.h"
#include "devflow/btl_devmem_rxthread.h"
#include "btl_devmem_pml.h"
#include "btl_devmem_progress.h"

int mca_btl_devmem_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                             struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                             opal_bitmap_t *reachable)
{
    mca_btl_devmem_module_t *m = (mca_btl_devmem_module_t *) btl;
    const opal_proc_t *me = opal_proc_local_get();

    mca_btl_devmem_pml_check_used();
    for (size_t i = 0; i < nprocs; i++) {
        mca_btl_devmem_proc_t *peer;
        int rc;

        peers[i] = NULL;
        if (procs[i] == me) {
            continue; /* btl/self carries messages to ourselves */
        }
        if (OPAL_PROC_ON_LOCAL_HOST(procs[i]->proc_flags)
            && __atomic_load_n(&mca_btl_devmem_component.rx_threads_running, __ATOMIC_RELAXED)) {
            char *cpus = mca_btl_devmem_proc_cpus(procs[i]);

            /* where a rank of this node computes, our receiving threads should not */
            if (NULL != cpus) {
                mca_btl_devmem_rxthreads_avoid(cpus);
                free(cpus);
            }
        }
        if (NULL == (peer = mca_btl_devmem_proc_create(procs[i]))) {
            continue;
        }
        rc = mca_btl_devmem_proc_endpoint(peer, m, &peers[i]);
        if (OPAL_SUCCESS != rc) {
            return rc;
        }
        if (NULL != peers[i] && NULL != reachable) {
            opal_bitmap_set_bit(reachable, (int) i);
        }
    }
    return OPAL_SUCCESS;
}

/* Under the dispatch lock: the endpoint's socket leaves the set (btl_devmem_pollset.h). */
static void endpoint_release(mca_btl_devmem_module_t *m, mca_btl_devmem_endpoint_t *ep)
{
    mca_btl_devmem_dispatch_lock();
    mca_btl_devmem_endpoint_shutdown(ep);
    OPAL_THREAD_LOCK(&ep->peer->lock);
    if (ep->peer->endpoints[m->index] == ep) {
        ep->peer->endpoints[m->index] = NULL;
    }
    OPAL_THREAD_UNLOCK(&ep->peer->lock);
    OPAL_THREAD_LOCK(&m->lock);
    opal_list_remove_item(&m->endpoints, &ep->super);
    OPAL_THREAD_UNLOCK(&m->lock);
    OBJ_RELEASE(ep);
    mca_btl_devmem_dispatch_unlock();
}

int mca_btl_devmem_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                             struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers)
{
    mca_btl_devmem_module_t *m = (mca_btl_devmem_module_t *) btl;

    for (size_t i = 0; i < nprocs; i++) {
        if (NULL != peers[i]) {
            endpoint_release(m, peers[i]);
        }
    }
    return OPAL_SUCCESS;
}

int mca_btl_devmem_finalize(struct mca_btl_base_module_t *btl)
{
    mca_btl_devmem_module_t *m = (mca_btl_devmem_module_t *) btl;
    opal_list_item_t *item;

    while (NULL != (item = opal_list_get_first(&m->endpoints))
           && item != opal_list_get_end(&m->endpoints)) {
        endpoint_release(m, (mca_btl_devmem_endpoint_t *) item);
    }
    return OPAL_SUCCESS;
}

static int register_error(struct mca_btl_base_module_t *btl,
                          mca_btl_base_module_error_cb_fn_t cbfunc)
{
    ((mca_btl_devmem_module_t *) btl)->error_cb = cbfunc;
    return OPAL_SUCCESS;
}

static mca_btl_base_descriptor_t *btl_alloc(struct mca_btl_base_module_t *btl,
                                            struct mca_btl_base_endpoint_t *ep, uint8_t order,
                                            size_t size, uint32_t flags)
{
    mca_btl_devmem_frag_t *frag;

    if (size > btl->btl_max_send_size || NULL == (frag = mca_btl_devmem_frag_alloc(size))) {
        return NULL;
    }
    frag->segments[0].seg_addr.pval = mca_btl_devmem_frag_data(frag);
    frag->segments[0].seg_len = size;
    frag->base.des_segment_count = 1;
    frag->base.des_flags = flags;
    frag->base.order = MCA_BTL_NO_ORDER;
    return &frag->base;
}

static int btl_free(struct mca_btl_base_module_t *btl, mca_btl_base_descriptor_t *des)
{
    mca_btl_devmem_frag_return((mca_btl_devmem_frag_t *) des);
    return OPAL_SUCCESS;
}

/* Contiguous device memory: the CPU cannot pack it or send it where it lies, so the GPU
 * copies it into the fragment behind the PML header. */
static mca_btl_base_descriptor_t *prepare_device_src(struct opal_convertor_t *convertor,
                                                     void *src, int ordinal, size_t reserve,
                                                     size_t *size, size_t max_data,
                                                     uint32_t flags)
{
    mca_btl_devmem_frag_t *frag = mca_btl_devmem_frag_alloc(reserve + max_data);
    size_t pos = convertor->bConverted + max_data;
    char why[DEVMEM_ERR_MSG_MAX + 64] = "the convertor refused to advance";

    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    if (0 != mca_btl_devmem_mem_copy((char *) mca_btl_devmem_frag_data(frag) + reserve, src,
                                     max_data, ordinal, why, sizeof(why))
        || OPAL_SUCCESS != opal_convertor_set_position(convertor, &pos)) {
        opal_output(0, "btl:devmem: sending from device memory: %s", why);
        mca_btl_devmem_frag_return(frag);
        return NULL;
    }
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.dev_staged, max_data);
    frag->segments[0].seg_addr.pval = mca_btl_devmem_frag_data(frag);
    frag->segments[0].seg_len = reserve + max_data;
    frag->base.des_segment_count = 1;
    frag->base.des_flags = flags;
    frag->base.order = MCA_BTL_NO_ORDER;
    *size = max_data;
    return &frag->base;
}

/*
 * Describe `*size` bytes of the convertor's data behind `reserve` bytes of PML header.
 * Contiguous host data is sent where it lies (a second segment pointing at the user
 * buffer), contiguous device data is copied in by the GPU (prepare_device_src), anything
 * else is packed into the fragment.
 */
static mca_btl_base_descriptor_t *btl_prepare_src(struct mca_btl_base_module_t *btl,
                                                  struct mca_btl_base_endpoint_t *ep,
                                                  struct opal_convertor_t *convertor,
                                                  uint8_t order, size_t reserve, size_t *size,
                                                  uint32_t flags)
{
    mca_btl_devmem_frag_t *frag;
    struct iovec iov;
    uint32_t iov_count = 1;
    size_t max_data = *size;
    bool in_place = !opal_convertor_need_buffers(convertor);
    void *src = NULL;
    int ordinal = -1;

    if (reserve + max_data > btl->btl_max_send_size) {
        max_data = btl->btl_max_send_size - reserve;
    }
    if (in_place && max_data > 0) {
        opal_convertor_get_current_pointer(convertor, &src);
        if (mca_btl_devmem_convertor_is_device(convertor, src, &ordinal)) {
            return prepare_device_src(convertor, src, ordinal, reserve, size, max_data, flags);
        }
        /* device memory we cannot read (Open MPI 5 says "no buffers needed" for it): the
         * convertor packs it, with its accelerator's copies */
        if (mca_btl_devmem_mem_is_foreign(src)) {
            in_place = false;
        }
    }
    frag = mca_btl_devmem_frag_alloc(in_place ? reserve : reserve + max_data);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return NULL;
    }
    frag->segments[0].seg_addr.pval = mca_btl_devmem_frag_data(frag);
    frag->segments[0].seg_len = reserve;
    frag->base.des_segment_count = 1;
    if (in_place) {
        iov.iov_base = NULL;
        iov.iov_len = max_data;
        if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
            mca_btl_devmem_frag_return(frag);
            return NULL;
        }
        frag->segments[1].seg_addr.pval = iov.iov_base;
        frag->segments[1].seg_len = max_data;
        frag->base.des_segment_count = 2;
    } else {
        iov.iov_base = (char *) mca_btl_devmem_frag_data(frag) + reserve;
        iov.iov_len = max_data;
        if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0) {
            mca_btl_devmem_frag_return(frag);
            return NULL;
        }
        frag->segments[0].seg_len += max_data;
    }
    frag->base.des_flags = flags;
    frag->base.order = MCA_BTL_NO_ORDER;
    *size = max_data;
    return &frag->base;
}

static int btl_send(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                    struct mca_btl_base_descriptor_t *des, mca_btl_base_tag_t tag)
{
    mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) des;

    frag->done = NULL; /* a PML descriptor: the endpoint completes it */
    mca_btl_devmem_frag_prepare_write(frag);
    frag->hdr.type = MCA_BTL_DEVMEM_HDR_SEND;
    frag->hdr.tag = tag;
    frag->hdr.flags = 0; /* a push it carries is announced as it is queued */
    frag->hdr.id = frag->hdr.addr = 0;
    return mca_btl_devmem_endpoint_send(ep, frag);
}

/* How an inline send whose socket took part of its frame ends: written, or the status. */
enum { SENDI_PENDING = INT32_MIN };

static void sendi_sent(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                       struct mca_btl_base_descriptor_t *des, int status)
{
    __atomic_store_n((int *) des->des_cbdata, status, __ATOMIC_RELEASE);
}

/* Not now: the PML's ordinary send takes the message, and waits for its completion; Open
 * MPI's ob1 sends it in the descriptor given back (without one it would park the send until
 * some other completion). */
static int sendi_decline(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                         size_t total, uint32_t flags, mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.sendi_declined, 1);
    if (NULL != descriptor) {
        *descriptor = btl_alloc(btl, ep, MCA_BTL_NO_ORDER, total, flags);
    }
    return OPAL_ERR_RESOURCE_BUSY;
}

/*
 * Immediate send of a small message: header and payload are copied into one fragment, which
 * leaves in this call, so that the PML may call the send done and reuse its buffers at once.
 * Done must mean gone: a frame left in our queue would wait for this rank's next call into
 * MPI, which an application computing after MPI_Send may not make for a long time. So the
 * send is declined where it could not start at once (no connection yet, frames queued before
 * it, a read of its connection being dispatched, a full socket), and where a callback of our
 * progress sends (the part a full socket left could then only wait for a later call). When
 * the socket takes part of the frame, this call progresses until the rest is written, as the
 * PML's wait for the ordinary send would.
 */
static int btl_sendi(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     struct opal_convertor_t *convertor, void *header, size_t header_size,
                     size_t payload_size, uint8_t order, uint32_t flags, mca_btl_base_tag_t tag,
                     mca_btl_base_descriptor_t **descriptor)
{
    mca_btl_devmem_frag_t *frag;
    size_t total = header_size + payload_size, position = 0;
    int rc, sent = SENDI_PENDING;

    if (NULL != descriptor) {
        *descriptor = NULL;
    }
    if (total > btl->btl_eager_limit) {
        return OPAL_ERR_RESOURCE_BUSY;
    }
    if (payload_size > 0) {
        void *p = NULL;

        /* the PML's pack would read device memory with the CPU: let prepare_src do it */
        opal_convertor_get_current_pointer(convertor, &p);
        if (mca_btl_devmem_convertor_is_device(convertor, p, NULL)) {
            return OPAL_ERR_RESOURCE_BUSY;
        }
    }
    if (mca_btl_devmem_dispatch_held()) {
        return sendi_decline(btl, ep, total, flags, descriptor);
    }
    frag = mca_btl_devmem_frag_alloc(total);
    if (OPAL_UNLIKELY(NULL == frag)) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(mca_btl_devmem_frag_data(frag), header, header_size);
    if (payload_size > 0) {
        struct iovec iov = {(char *) mca_btl_devmem_frag_data(frag) + header_size, payload_size};
        uint32_t iov_count = 1;
        size_t max_data = payload_size;

        position = convertor->bConverted; /* where a decline takes it back to */
        if (opal_convertor_pack(convertor, &iov, &iov_count, &max_data) < 0
            || max_data != payload_size) {
            mca_btl_devmem_frag_return(frag);
            return OPAL_ERROR;
        }
    }
    frag->segments[0].seg_addr.pval = mca_btl_devmem_frag_data(frag);
    frag->segments[0].seg_len = total;
    frag->base.des_segment_count = 1;
    frag->base.des_flags = MCA_BTL_DES_FLAGS_BTL_OWNERSHIP;
    frag->base.des_cbfunc = sendi_sent; /* only where the socket takes part of it */
    frag->base.des_cbdata = &sent;
    frag->done = NULL; /* a PML descriptor: the endpoint completes it */
    mca_btl_devmem_frag_prepare_write(frag);
    frag->hdr.type = MCA_BTL_DEVMEM_HDR_SEND;
    frag->hdr.tag = tag;
    frag->hdr.flags = 0;
    frag->hdr.id = frag->hdr.addr = 0;
    rc = mca_btl_devmem_endpoint_send_now(ep, frag);
    if (1 == rc) {
        return OPAL_SUCCESS;
    }
    if (OPAL_SUCCESS == rc) {
        /* the socket took part of it: write the rest before the PML calls it done. Our
         * progress reads too, so two ranks flooding each other both get through. */
        mca_btl_devmem_stats_add(&mca_btl_devmem_component.stats.sendi_waited, 1);
        while (SENDI_PENDING == (rc = __atomic_load_n(&sent, __ATOMIC_ACQUIRE))) {
            (void) mca_btl_devmem_progress();
        }
        return rc; /* the fragment went back to its list when it completed */
    }
    /* not taken: the PML packs it again for its ordinary send, from where we started */
    if (payload_size > 0) {
        (void) opal_convertor_set_position(convertor, &position);
    }
    mca_btl_devmem_frag_return(frag);
    return OPAL_ERR_RESOURCE_BUSY == rc ? sendi_decline(btl, ep, total, flags, descriptor) : rc;
}

static void btl_dump(struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep,
                     int verbose)
{
    mca_btl_devmem_module_t *m = (mca_btl_devmem_module_t *) btl;

    opal_output(0, "btl:devmem: module %u on %s port %u", m->index, m->itf.name,
                (unsigned) m->listener.port);
    if (NULL != ep) {
        opal_output(0, "btl:devmem:   peer %s: %s, %zu queued, %zu gets pending, %zu bytes "
                    "owed on the device flow",
                    OPAL_NAME_PRINT(ep->peer->name), mca_btl_devmem_endpoint_state_str(ep->state),
                    opal_list_get_size(&ep->send_queue), opal_list_get_size(&ep->pending_gets),
                    mca_btl_devmem_devflow_pending(ep));
    }
}

/* An Open MPI built with CUDA (4.x) or accelerator (5.x) support hands device buffers to
 * the RGET protocol only on BTLs that say they can get from them; this one can (register_mem
 * tells device memory apart and the device flow carries it). Debian's has neither: there the
 * parameter set in contrib/devmem-device-buffers.conf routes device buffers instead. On 5.x
 * the flag stays only where the accelerator is CUDA's (create_modules): it would also bring
 * ROCm or Level Zero buffers, and osc/rdma windows in them, to a path that carries CUDA's. */
#if BTL_VERSION >= 330
#define DEVMEM_FLAGS_DEVICE_GET MCA_BTL_FLAGS_ACCELERATOR_GET
#elif OPAL_CUDA_SUPPORT
#define DEVMEM_FLAGS_DEVICE_GET MCA_BTL_FLAGS_CUDA_GET
#else
#define DEVMEM_FLAGS_DEVICE_GET 0
#endif

mca_btl_devmem_module_t mca_btl_devmem_module_template = {
    .super = {
        .btl_component = &mca_btl_devmem_component.super,
        .btl_exclusivity = MCA_BTL_EXCLUSIVITY_LOW + 100,
        /* twice the TCP BTL's: a 64 KiB message goes in one frame instead of a rendezvous
         * (a third less time on loopback); the read-ahead per connection grows to match */
        .btl_eager_limit = 128 * 1024,
        .btl_rndv_eager_limit = 128 * 1024,
        .btl_max_send_size = 128 * 1024,
        .btl_rdma_pipeline_send_length = 128 * 1024,
        .btl_rdma_pipeline_frag_size = 2 * 1024 * 1024,
        .btl_min_rdma_pipeline_size = 0,
        /* GET without PUT: with register_mem, ob1 takes a PUT BTL off the RGET protocol
         * (unless leave_pinned), and RGET is the one path device buffers can take */
        .btl_flags = MCA_BTL_FLAGS_SEND | MCA_BTL_FLAGS_SEND_INPLACE | MCA_BTL_FLAGS_GET
                     | DEVMEM_FLAGS_DEVICE_GET,
        .btl_registration_handle_size = sizeof(mca_btl_base_registration_handle_t),
        .btl_get_limit = 16 * 1024 * 1024,
        .btl_put_limit = 16 * 1024 * 1024,
        .btl_latency = 100,
        .btl_bandwidth = 10000,
        .btl_add_procs = mca_btl_devmem_add_procs,
        .btl_del_procs = mca_btl_devmem_del_procs,
        .btl_finalize = mca_btl_devmem_finalize,
        .btl_alloc = btl_alloc,
        .btl_free = btl_free,
        .btl_prepare_src = btl_prepare_src,
        .btl_send = btl_send,
        .btl_sendi = btl_sendi,
        .btl_put = mca_btl_devmem_put,
        .btl_get = mca_btl_devmem_get,
        .btl_register_mem = mca_btl_devmem_register_mem,
        .btl_deregister_mem = mca_btl_devmem_deregister_mem,
        .btl_dump = btl_dump,
        .btl_register_error = register_error,
    },
};
