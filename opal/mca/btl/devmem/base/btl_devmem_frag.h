/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fragments: the unit the endpoint queues and writes. A fragment is a BTL descriptor
 * (what the PML sees) plus the wire header and an iovec cursor (what writev sees). What the
 * layers above keep on one (get and put, device flows) follows the struct, each layer's
 * state registered at init, and then the payload space, if any, in the same free-list
 * element.
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
    size_t capacity;                             /* payload bytes after the states */
    uint32_t payload;                            /* payload bytes on the wire */

    /* then each layer's state (mca_btl_devmem_frag_state), then the payload space */
} mca_btl_devmem_frag_t;

OBJ_CLASS_DECLARATION(mca_btl_devmem_frag_t);

/* Take a fragment with at least `payload` bytes of inline space (0: none needed). */
mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc(size_t payload);

/* Take a fragment with no inline space, for data that stays in the caller's memory. */
mca_btl_devmem_frag_t *mca_btl_devmem_frag_alloc_user(void);

/* Per-fragment state of the layers above (get and put, device flows): each registers its
 * struct at init, before the free lists are made, and finds it on every fragment through the
 * handle. A fragment is taken with every state zeroed; returning one runs each layer's
 * release first (what its state holds: a staging copy, TX memory), which may be NULL.
 * Registering the same handle again (a second init) keeps the first. OPAL_SUCCESS, or
 * OPAL_ERR_OUT_OF_RESOURCE past the few slots there are, or OPAL_ERR_BAD_PARAM once the
 * free lists exist. */
typedef void (*mca_btl_devmem_frag_release_fn)(void *state);
int mca_btl_devmem_frag_state_register(size_t *handle, size_t size,
                                       mca_btl_devmem_frag_release_fn release);

/* Bytes of the layers' states between the struct and the payload space. */
extern size_t mca_btl_devmem_frag_states_size;

static inline void *mca_btl_devmem_frag_state(const mca_btl_devmem_frag_t *frag, size_t handle)
{
    return (char *) (frag + 1) + handle;
}

/* Back to its free list, each layer's state released first. */
void mca_btl_devmem_frag_return(mca_btl_devmem_frag_t *frag);

/* The done function of a fragment that only has to go back once written or failed (a
 * control frame: GET_REQ, FIN, DEVFLOW, LANES). */
void mca_btl_devmem_frag_done_return(struct mca_btl_base_endpoint_t *ep,
                                     mca_btl_devmem_frag_t *frag, int status);

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
    return (char *) (frag + 1) + mca_btl_devmem_frag_states_size;
}

/* Set up the free lists once the module limits are known; tear them down. */
int mca_btl_devmem_frag_lists_init(size_t eager_limit, size_t max_send_size);
void mca_btl_devmem_frag_lists_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_FRAG_H */
