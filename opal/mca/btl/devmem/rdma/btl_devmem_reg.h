/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory registration: what register_mem hands the PML, and the cache of device memory
 * that device-flow gets are sent from.
 *
 * A registration handle says what kind of memory a range is (host or device, and which
 * device); the PML copies the sender's handle into its RGET, and passes the getter's own
 * handle to get, so each side knows without asking the driver again.
 *
 * Device memory (and, with btl_devmem_testing tx_host=1 under the emulated kernel, host
 * memory standing in for it) is also entered in a cache, one entry per allocation: its dmabuf,
 * exported once, and a TX binding per module, made when the first get is answered from it.
 * An entry lives while registrations or sends hold it; unheld entries stay cached up to a
 * limit. An allocation freed and reallocated at the same address gets a new CUDA buffer id,
 * which retires the old entry at the next registration.
 */
#ifndef MCA_BTL_DEVMEM_REG_H
#define MCA_BTL_DEVMEM_REG_H

#include "base/btl_devmem.h"
#include "connections/btl_devmem_module.h"

#include "devmem/dmabuf.h"

BEGIN_C_DECLS

enum mca_btl_devmem_mem_kind {
    MCA_BTL_DEVMEM_MEM_HOST = 1,
    MCA_BTL_DEVMEM_MEM_DEVICE = 2,
};

/* What travels to the peer inside the PML's RGET. */
struct mca_btl_base_registration_handle_t {
    uint32_t kind;     /* enum mca_btl_devmem_mem_kind */
    int32_t ordinal;   /* device, -1 for host memory */
    uint64_t base;     /* start of the registered range */
    uint64_t push_id;  /* its first push_len bytes are pushed with id (push.h); 0: none */
    uint32_t push_len;
    uint32_t reserved;
};

/* One allocation that gets may be answered from with devmem TX. */
struct mca_btl_devmem_txmem {
    opal_list_item_t super;
    uint64_t base;             /* page-aligned start of what region covers */
    size_t size;               /* page multiple */
    uint64_t buffer_id;        /* CUDA's id of the allocation, 0 for host memory */
    int ordinal;               /* device, -1 for host memory */
    int refs;                  /* registrations and sends that hold it */
    bool retired;              /* out of the lookup list; freed at refs 0 */
    struct devmem_region region; /* its dmabuf (device) or a view of it (host) */
    uint32_t *tx_id;           /* per module index: TX binding, 0 none yet */
    bool *tx_failed;           /* per module index: binding refused, send staged */
};

/* Whether [ptr, ptr+len) is device memory; *ordinal set when it is. Cheap when the process
 * does not use CUDA. */
bool mca_btl_devmem_mem_is_device(const void *ptr, int *ordinal);

/* The same for the data a convertor is at (ptr, its current pointer), asking the driver
 * only where Open MPI has not: Open MPI 5 with CUDA as its accelerator marks each message's
 * device buffers when it prepares the convertor, so an unmarked one is host memory. */
struct opal_convertor_t;
bool mca_btl_devmem_convertor_is_device(const struct opal_convertor_t *convertor,
                                        const void *ptr, int *ordinal);

/* Device memory that Open MPI 5's accelerator framework knows and the device path cannot
 * carry (not CUDA: ROCm, Level Zero). Said once at verbosity 1. Always false on 4.1. */
bool mca_btl_devmem_mem_is_foreign(const void *ptr);

/* Copy between any two pointers, either in device memory (ordinal: that device). 0 or -1
 * with why filled. */
int mca_btl_devmem_mem_copy(void *dst, const void *src, size_t len, int ordinal, char *why,
                            size_t whylen);

/* The module functions. */
mca_btl_base_registration_handle_t *mca_btl_devmem_register_mem(
    struct mca_btl_base_module_t *btl, struct mca_btl_base_endpoint_t *ep, void *base,
    size_t size, uint32_t flags);
int mca_btl_devmem_deregister_mem(struct mca_btl_base_module_t *btl,
                                  mca_btl_base_registration_handle_t *handle);

/* The cache entry [addr, addr+len) lies in, held (drop with _put); NULL when the range is
 * host memory that devmem TX does not serve. A device range not registered yet is entered
 * now. */
struct mca_btl_devmem_txmem *mca_btl_devmem_txmem_get(uint64_t addr, size_t len);
void mca_btl_devmem_txmem_put(struct mca_btl_devmem_txmem *t);

/* Bind t for devmem TX on module m's interface (the first call only; later ones return that
 * binding): the binding's id; 0 when devmem TX cannot serve it there (the reason is printed
 * once, at verbosity 1), and the send must be staged. */
uint32_t mca_btl_devmem_txmem_bind(struct mca_btl_devmem_txmem *t, mca_btl_devmem_module_t *m);
/* A devmem TX send from binding id of t on module m failed: the kernel no longer knows it
 * (gone: the netlink socket that made it closed, devmem-helperd restarted) or refuses it (a
 * binding still there is released with t). Gets from t on m are staged from now on; said once
 * a binding, at verbosity 1. */
void mca_btl_devmem_txmem_lost(struct mca_btl_devmem_txmem *t, mca_btl_devmem_module_t *m,
                               uint32_t id, bool gone, const char *err);

/* Drop every cache entry (finalize, after the device flows are closed). */
void mca_btl_devmem_reg_fini(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_REG_H */
