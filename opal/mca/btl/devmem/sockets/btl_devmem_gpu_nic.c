/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's GPU and the interfaces nearest to it (see btl_devmem_gpu_nic.h).
 */
#include "opal_config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "opal/util/proc.h"

#include "sockets/btl_devmem_gpu_nic.h"

#include "devmem/cudrv.h"

int mca_btl_devmem_gpu(void)
{
    static int gpu = -2; /* not chosen yet */
    int want = mca_btl_devmem_component.gpu, n = 0, local;
    struct devmem_err e;

    if (-2 != gpu) {
        return gpu;
    }
    gpu = -1;
    if (0 != devmem_cuda_device_count(&n, &e)) {
        DEVMEM_VERBOSE(10, "no GPU for this rank: %s", e.msg);
        return gpu;
    }
    if (want >= 0) {
        if (want < n) {
            gpu = want;
        } else {
            opal_output(0, "btl:devmem: btl_devmem_gpu is %d but %d CUDA device(s) are "
                        "visible here; no GPU for the device path", want, n);
        }
        return gpu;
    }
    if (0 == devmem_cuda_current_device(&gpu, &e) && gpu < n) {
        DEVMEM_VERBOSE(10, "GPU %d: the device of the current CUDA context", gpu);
        return gpu;
    }
    local = opal_process_info.my_local_rank > 0 ? opal_process_info.my_local_rank : 0;
    gpu = local % n;
    DEVMEM_VERBOSE(10, "GPU %d: local rank %d modulo %d device(s) (no CUDA context current)", gpu,
                   local, n);
    return gpu;
}

/* The PCI address to be near and its description; 0, or -1 when there is none. */
static int near_device(char *busid, size_t idlen, char *near, size_t len)
{
    const char *want = mca_btl_devmem_component.near;
    struct devmem_err e;
    int gpu;

    if (NULL != want && '\0' != want[0]) {
        if (0 == strcasecmp(want, "none")) {
            return -1;
        }
        snprintf(busid, idlen, "%s", want);
        snprintf(near, len, "PCI device %s (btl_devmem_near)", want);
        return 0;
    }
    if ((gpu = mca_btl_devmem_gpu()) < 0) {
        DEVMEM_VERBOSE(1, "NIC locality: no GPU in this rank; every interface may carry the "
                       "device path");
        return -1;
    }
    if (0 != devmem_cuda_pci_bus_id(gpu, busid, idlen, &e)) {
        DEVMEM_VERBOSE(1, "NIC locality: %s", e.msg);
        return -1;
    }
    snprintf(near, len, "GPU %d (%s)", gpu, busid);
    return 0;
}

void mca_btl_devmem_gpu_nic_paths(const struct mca_btl_devmem_if *const *itfs, int n,
                                  enum devmem_path *paths, char *near, size_t len)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const char *xml = NULL != c->topology && '\0' != c->topology[0] ? c->topology : NULL;
    struct devmem_topo *topo = NULL;
    struct devmem_err e;
    bool several = false;
    char busid[32];

    near[0] = '\0';
    for (int i = 0; i < n; i++) {
        paths[i] = DEVMEM_PATH_UNKNOWN;
    }
    /* one NIC (however many links) leaves nothing to choose; loopback serves only the
     * peers on this host, which no NIC does, so it is never a choice */
    for (int i = 0, first = -1; i < n && !several; i++) {
        const struct mca_btl_devmem_if *itf = itfs[i];

        if (itf->loopback) {
            continue;
        }
        several = first >= 0 && (int) itf->ifindex != first;
        if (first < 0) {
            first = (int) itf->ifindex;
        }
    }
    if (!several || 0 != near_device(busid, sizeof(busid), near, len)) {
        return;
    }
    if (0 != devmem_topo_open(&topo, xml, &e)) {
        opal_output(0, "btl:devmem: NIC locality unknown, every interface may carry the device "
                    "path: %s", e.msg);
        near[0] = '\0';
        return;
    }
    for (int i = 0; i < n; i++) {
        if (0 != devmem_topo_path(topo, busid, itfs[i]->name, &paths[i], &e)) {
            opal_output(0, "btl:devmem: NIC locality unknown, every interface may carry the "
                        "device path: %s", e.msg);
            near[0] = '\0';
            for (int j = 0; j < n; j++) {
                paths[j] = DEVMEM_PATH_UNKNOWN;
            }
            break;
        }
        DEVMEM_VERBOSE(10, "%s is %s from %s", itfs[i]->name,
                       devmem_path_name(paths[i]), near);
    }
    devmem_topo_close(topo);
}
