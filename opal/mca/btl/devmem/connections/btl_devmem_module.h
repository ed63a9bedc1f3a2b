/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The module: Open MPI's object for one selected interface address x link (IPv4 or IPv6,
 * one family per interface: btl_devmem_family). Each has its own listen socket, so an
 * accepted connection already knows its module. It is made of the parts of the layers
 * below, each that layer's own type: the interface and listen socket (sockets/), the
 * device path (device/, handed to it at init); this layer adds the endpoints.
 */
#ifndef MCA_BTL_DEVMEM_MODULE_H
#define MCA_BTL_DEVMEM_MODULE_H

#include "base/btl_devmem.h"
#include "sockets/btl_devmem_if.h"
#include "sockets/btl_devmem_sock.h"
#include "device/btl_devmem_dev.h"

BEGIN_C_DECLS

typedef struct mca_btl_devmem_module_t {
    mca_btl_base_module_t super;
    uint32_t index;                /* position in mca_btl_devmem_modules and in the modex */
    uint32_t link;                 /* link number on this interface */
    struct mca_btl_devmem_if itf;  /* interface and address this module binds to */
    struct mca_btl_devmem_write_shape write; /* how queued frames become send calls */
    struct mca_btl_devmem_listener listener; /* control connections arrive here */
    struct mca_btl_devmem_devpath devpath;   /* the device path, or why there is none */
    opal_list_t endpoints;
    opal_mutex_t lock;
    mca_btl_base_module_error_cb_fn_t error_cb;
} mca_btl_devmem_module_t;

extern mca_btl_devmem_module_t mca_btl_devmem_module_template;

/* The modules of this process, in the order they were added */
extern int mca_btl_devmem_num_modules;
extern mca_btl_devmem_module_t **mca_btl_devmem_modules;

/* Add m (allocated, its super set; the list's from now on) as the module of interface itf
 * and link number link, whose queued frames go out in write's shape: its endpoints, lock,
 * listen socket (not yet listening) and device path part (the device layer's list) made
 * ready. OPAL_SUCCESS or OPAL_ERR_OUT_OF_RESOURCE (m is then still the caller's). */
int mca_btl_devmem_module_add(mca_btl_devmem_module_t *m, const struct mca_btl_devmem_if *itf,
                              uint32_t link, struct mca_btl_devmem_write_shape write);

/* Close every module's listen socket and free the modules and the list. Their device paths
 * must be undone first (mca_btl_devmem_dev_fini). */
void mca_btl_devmem_modules_free(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_MODULE_H */
