/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer process: its published addresses and secret (from the modex), and one endpoint
 * per local module that can reach it.
 */
#ifndef MCA_BTL_DEVMEM_PROC_H
#define MCA_BTL_DEVMEM_PROC_H

#include "base/btl_devmem.h"
#include "connections/btl_devmem_module.h"

BEGIN_C_DECLS

typedef struct mca_btl_devmem_proc_t {
    opal_object_t super;
    opal_proc_t *proc;
    opal_process_name_t name;
    uint64_t secret;                               /* the peer's: echoed in our hello */
    struct mca_btl_devmem_modex_addr *addrs;
    int naddrs;
    struct mca_btl_base_endpoint_t **endpoints;    /* indexed by local module index */
    opal_mutex_t lock;
} mca_btl_devmem_proc_t;

OBJ_CLASS_DECLARATION(mca_btl_devmem_proc_t);

/* Read and check the modex record process `name` published (one malformed or of another
 * btl_devmem version is refused, and said): its secret, its machine (the kernel's boot id,
 * when machine is not NULL), and its addresses in a new array (*addrs, NULL when it has
 * none). OPAL_SUCCESS, or an error and nothing set. The peers' records (waited for), and our
 * own from an earlier life of the component (btl_devmem_component.c: `own`, only what is
 * there already; PMIx waits for a key nobody has put, 2 s under Open MPI 5). */
int mca_btl_devmem_proc_read_modex(const opal_process_name_t *name, bool own, uint64_t *secret,
                                   uint8_t machine[16], struct mca_btl_devmem_modex_addr **addrs,
                                   int *naddrs);

/* Find or create the peer for an opal proc (reads and checks its modex record). */
mca_btl_devmem_proc_t *mca_btl_devmem_proc_create(opal_proc_t *proc);

/* Find a known peer by name; NULL if none. */
mca_btl_devmem_proc_t *mca_btl_devmem_proc_lookup(const opal_process_name_t *name);

/* Find a peer by name, adding it (as the PML would) if it connected to us before we
 * asked for it: Open MPI adds procs lazily. Its endpoints are made by
 * mca_btl_devmem_proc_endpoint, module by module. NULL if the name is not in the job. */
mca_btl_devmem_proc_t *mca_btl_devmem_proc_lookup_or_add(const opal_process_name_t *name);

/* The peer's endpoint on module m, made (and listed on m) the first time: what add_procs
 * and a peer that connects before being added both need. *out is NULL when m cannot reach
 * the peer. OPAL_SUCCESS, or OPAL_ERR_OUT_OF_RESOURCE. */
int mca_btl_devmem_proc_endpoint(mca_btl_devmem_proc_t *peer, mca_btl_devmem_module_t *m,
                                 struct mca_btl_base_endpoint_t **out);

/* Which of the peer's addresses module `m` should connect to; NULL if it cannot reach it. */
const struct mca_btl_devmem_modex_addr *
mca_btl_devmem_proc_pick_addr(const mca_btl_devmem_proc_t *peer,
                              const mca_btl_devmem_module_t *m);

/* Drop every peer (finalize). */
void mca_btl_devmem_proc_release_all(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_PROC_H */
