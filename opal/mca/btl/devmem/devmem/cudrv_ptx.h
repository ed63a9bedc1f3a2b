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

/* devmem_gather_ring(ring, ctl, mask): the persistent gather, one block that stays on one
 * SM and copies the pieces the host posts into a ring of {dst, src, len} in mapped host
 * memory. ctl, also mapped host memory, is three u64: [0] pieces posted (host), [1] pieces
 * done (GPU, after a system-wide fence), [2] stop (host; the kernel returns once it has
 * done every piece posted before). The ring has mask + 1 entries, a power of two. */
extern const char devmem_gather_ring_ptx[];

#endif /* DEVMEM_CUDRV_PTX_H */
