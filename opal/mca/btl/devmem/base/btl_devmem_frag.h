/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragments: the unit the endpoint queues and writes. A fragment is a BTL descriptor
 * (what the PML sees) plus the wire header and an iovec cursor (what writev sees). Its
 * payload space, if any, follows the struct in the same free-list element.
 */
#ifndef MCA_BTL_DEVMEM_FRAG_H
#define MCA_BTL_DEVMEM_FRAG_H

#include "base/btl_devmem.h"

#include <sys/uio.h>

BEGIN_C_DECLS

struct mca_btl_devmem_frag_t;

/* What completing a fragment means is its owner's: the function the layer that made it set
 * (a put's callback, a get's answer in place, a chunk counted against its get, a push
 * handed back), run by whoever completes it (written, answered, failed) with the endpoint
 * and the status. A fragment without one is a PML descriptor: the endpoint completes it as
 * its flags ask (callback, ownership). */
typedef void (*mca_btl_devmem_frag_done_fn)(struct mca_btl_base_endpoint_t *ep,
                                            struct mca_btl_devmem_frag_t *frag, int status);

#define MCA_BTL_DEVMEM_FRAG_IOVS 4

typedef struct mca_btl_devmem_frag_t {
    mca_btl_base_descriptor_t base;
    mca_btl_base_segment_t segments[2];
    struct mca_btl_devmem_hdr hdr;
    struct iovec iov[MCA_BTL_DEVMEM_FRAG_IOVS]; /* header, then the segments */
    int iov_cnt;
    int iov_idx;                                 /* first iovec not yet fully written */
    mca_btl_devmem_frag_done_fn done;             /* NULL: a PML descriptor */
    struct mca_btl_base_endpoint_t *endpoint;
    opal_free_list_t *list;                      /* where it returns */
    size_t capacity;                             /* payload bytes after the struct */
    uint32_t payload;                            /* payload bytes on the wire */

    /* RDMA (PUT and GET) */
    void *local_address;
    struct mca_btl_base_registration_handle_t *local_handle;
    mca_btl_base_rdma_completion_fn_t rdma_cb;
    void *cbcontext;
    void *cbdata;
    /* GET waiting for lanes (parked): the peer's address and handle (a copy: the caller's
     * may go once btl_get returns), asked for later */
    uint64_t remote_address;
    uint64_t remote_handle[4]; /* a mca_btl_base_registration_handle_t (btl_devmem_reg.h) */
    bool has_remote_handle;

    /* device memory */
    bool dst_dev;                      /* GET: local_address is device memory */
    int ordinal;                       /* ... of this device */
    void *stage;                       /* host copy of device bytes; freed on return */
    struct mca_btl_devmem_txmem *txmem; /* GET_RESP sent with devmem TX from it (held) */
    uint64_t tx_off;                   /* ... starting at this offset of its region */
    size_t tx_queued, tx_done;         /* ... bytes the kernel took, and has completed */

    /* pushes (btl_devmem_push.h): a GET's first push_len bytes come by push, the rest by
     * GET_RESP; it completes when both are in place. */
    uint32_t push_len;
    bool push_pending;                 /* GET: the pushed bytes are not in place yet */
    bool resp_done;                    /* GET: the GET_RESP part is */

    /* striped gets: a CHUNK names its get; the get counts its chunks not yet complete and
     * keeps the first failure among them */
    struct mca_btl_devmem_frag_t *parent;
    uint32_t chunks_left;
    int chunk_status;
} mca_btl_devmem_frag_t;

OBJ_CLASS_DECLARATION(mca_btl_devmem_frag_t);

/* Take a fragment with at least `payload` bytes of inline space (0: none needed). */
mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc(size_t payload);

/* Take a fragment with no inline space, for data that stays in the caller's memory. */
mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc_user(void);

/* Back to its free list; TX memory it held goes back through the release function the
 * registration cache set (a layer above: doc/design.md, Layers). */
void mca_btl_devmem_frag_return(mca_btl_devmem_frag_t *frag);

/* The done function of a fragment that only has to go back once written or failed (a
 * control frame: GET_REQ, FIN, DEVFLOW, LANES). */
void mca_btl_devmem_frag_done_return(struct mca_btl_base_endpoint_t *ep,
                                     mca_btl_devmem_frag_t *frag, int status);
void mca_btl_devmem_frag_set_txmem_release(void (*release)(struct mca_btl_devmem_txmem *t));

/* Point the iovec cursor at header + segments and fill in hdr.size. Call before queuing. */
void mca_btl_devmem_frag_prepare_write(mca_btl_devmem_frag_t *frag);

/* Whether frag is untouched since prepare_write: none of it written yet. */
static inline bool mca_btl_devmem_frag_unwritten(const mca_btl_devmem_frag_t *frag)
{
    return 0 == frag->iov_idx && frag->iov[0].iov_base == (const void *) &frag->hdr;
}

/* Write as much of queue (frags, in wire order) to sd as it takes, in batched sendmsg calls
 * cut as shape says (struct mca_btl_devmem_write_shape). Fully written frags move to done;
 * *blocked says the socket is full. 0 or -errno. */
int mca_btl_devmem_frag_queue_write(int sd, opal_list_t *queue,
                                    const struct mca_btl_devmem_write_shape *shape,
                                    opal_list_t *done, bool *blocked);

/* At finalize: give queue a bounded chance (about 2 s) to leave through sd, waiting for
 * room between writes. Written frags move to done. 0, or -errno when sd failed. */
int mca_btl_devmem_frag_queue_drain(int sd, opal_list_t *queue, opal_list_t *done);

/* The most inline payload mca_btl_devmem_frag_alloc can give. */
size_t mca_btl_devmem_frag_max_payload(void);

/* Payload space of a fragment taken with mca_btl_devmem_frag_alloc. */
static inline void *mca_btl_devmem_frag_data(mca_btl_devmem_frag_t *frag)
{
    return (void *) (frag + 1);
}

/* Set up the free lists once the module limits are known; tear them down. */
int mca_btl_devmem_frag_lists_init(size_t eager_limit, size_t max_send_size);
void mca_btl_devmem_frag_lists_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_FRAG_H */
