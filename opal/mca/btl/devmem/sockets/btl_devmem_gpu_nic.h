/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The rank's GPU and how near each module's interface is to it: where several interfaces
 * could carry the device path, only the nearest get one, so that payloads cross the least
 * PCIe on their way from the NIC into GPU memory.
 *
 * The GPU is btl_devmem_gpu, else the device of the CUDA context current when MPI starts
 * (cudaSetDevice before MPI_Init), else the local rank modulo the visible devices. The PCI
 * device to be near is that GPU's, or btl_devmem_near when set (a PCI address, or "none"
 * to take every interface); the topology is this machine's, or for tests the hwloc XML file
 * of btl_devmem_testing topology=FILE.
 */
#ifndef MCA_BTL_DEVMEM_GPU_NIC_H
#define MCA_BTL_DEVMEM_GPU_NIC_H

#include "base/btl_devmem.h"
#include "sockets/btl_devmem_if.h"

#include "devmem/locality.h"

BEGIN_C_DECLS

/* The CUDA device of this rank, chosen once; -1 when there is none (no driver, no device,
 * or a bad btl_devmem_gpu, which is said at verbosity 1). Loads the CUDA driver. */
int mca_btl_devmem_gpu(void);

/* The path from the device to be near to each of n interfaces (paths[i] for itfs[i]). All
 * DEVMEM_PATH_UNKNOWN when they are on one NIC, nothing is to be near, or no topology; the
 * reason then goes out at verbosity 1. near names what was used ("GPU 0 (0000:3b:00.0)") or
 * is empty. */
void mca_btl_devmem_gpu_nic_paths(const struct mca_btl_devmem_if *const *itfs, int n,
                                  enum devmem_path *paths, char *near, size_t len);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_GPU_NIC_H */
