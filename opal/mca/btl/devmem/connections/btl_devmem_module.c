/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The modules' list, and each module's parts set up and taken down in layer order
 * (btl_devmem_module.h).
 */
#include "opal_config.h"

#include <stdlib.h>

#include "connections/btl_devmem_conn.h"
#include "connections/btl_devmem_module.h"

int mca_btl_devmem_num_modules;
mca_btl_devmem_module_t **mca_btl_devmem_modules;

int mca_btl_devmem_module_add(mca_btl_devmem_module_t *m, const struct mca_btl_devmem_if *itf,
                              uint32_t link, struct mca_btl_devmem_write_shape write)
{
    mca_btl_devmem_module_t **all = realloc(mca_btl_devmem_modules,
                                            (mca_btl_devmem_num_modules + 1) * sizeof(*all));

    if (NULL == all) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    mca_btl_devmem_modules = all;
    m->itf = *itf;
    m->link = link;
    m->index = (uint32_t) mca_btl_devmem_num_modules;
    m->write = write;
    mca_btl_devmem_conn_listener_init(m);
    /* the device layer's part, and its place in that layer's list */
    m->devpath = (struct mca_btl_devmem_devpath){.itf = &m->itf};
    if (m->index > 0) {
        all[m->index - 1]->devpath.next = &m->devpath;
    }
    OBJ_CONSTRUCT(&m->endpoints, opal_list_t);
    OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
    m->error_cb = NULL;
    all[mca_btl_devmem_num_modules++] = m;
    return OPAL_SUCCESS;
}

void mca_btl_devmem_modules_free(void)
{
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];

        mca_btl_devmem_listener_close(&m->listener);
        OBJ_DESTRUCT(&m->endpoints);
        OBJ_DESTRUCT(&m->lock);
        free(m);
    }
    free(mca_btl_devmem_modules);
    mca_btl_devmem_modules = NULL;
    mca_btl_devmem_num_modules = 0;
}
