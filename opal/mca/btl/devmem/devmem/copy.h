/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A copier: the pieces of a gather, each from wherever it landed (an RX pool, a linear
 * buffer) to wherever it belongs (host or device memory). Host-to-host pieces are copied at
 * once; pieces that touch device memory are queued and run together on flush: one kernel
 * launch for every device-to-device piece, async copies for the rest, one wait. The caller
 * returns pool tokens only after flush, when every byte is in place.
 *
 * Free of Open MPI types; functions return 0 or -errno with err filled.
 */
#ifndef DEVMEM_COPY_H
#define DEVMEM_COPY_H

#include <stddef.h>
#include <stdint.h>

#include "cudrv.h"
#include "err.h"

struct devmem_copier_stats {
    uint64_t host_bytes;   /* copied by the CPU */
    uint64_t device_bytes; /* copied by the GPU (either side in device memory) */
    uint64_t pieces;       /* device pieces */
    uint64_t flushes;      /* flushes that ran device pieces */
    uint64_t kernels;      /* gather kernel launches */
};

struct devmem_copier {
    struct devmem_copy *d2d, *other; /* queued device pieces, by kind */
    size_t n_d2d, n_other, cap_d2d, cap_other;
    int ordinal;                     /* device of the queued pieces, -1 when none */
    struct devmem_copier_stats stats;
};

void devmem_copier_init(struct devmem_copier *c);
void devmem_copier_fini(struct devmem_copier *c);

/* One piece: len bytes from src to dst; *_dev says which side is device memory, ordinal is
 * the device they belong to (ignored for host-to-host). Pieces of another device flush the
 * queue first. */
int devmem_copier_add(struct devmem_copier *c, void *dst, int dst_dev, const void *src,
                      int src_dev, size_t len, int ordinal, struct devmem_err *err);

/* Run the queued device pieces and wait for them. The queue is empty afterwards, also when
 * it fails. */
int devmem_copier_flush(struct devmem_copier *c, struct devmem_err *err);

#endif /* DEVMEM_COPY_H */
