/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The GPU code of the gathers, as PTX text: building needs no CUDA compiler, and the driver
 * compiles it for the GPU at hand on first use (cudrv.c loads it).
 */
#ifndef DEVMEM_CUDRV_PTX_H
#define DEVMEM_CUDRV_PTX_H

/* devmem_gather(ops, n): one launch per gather, block b copies piece b of an array of
 * {dst, src, len} (struct devmem_copy's layout). */
extern const char devmem_gather_ptx[];

#endif /* DEVMEM_CUDRV_PTX_H */
