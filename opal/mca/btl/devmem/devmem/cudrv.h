/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA driver, loaded at run time (dlopen of libcuda.so.1): building needs no CUDA
 * headers or libraries, and a process without an NVIDIA driver never notices.
 *
 * What the devmem layer needs from it: device memory for RX pools and its dmabuf export,
 * whether an application pointer is device memory (and which allocation it belongs to),
 * copies in any direction, and the gather of many pool fragments into one destination with
 * a small kernel (PTX in cudrv_ptx.c, JIT-compiled by the driver on first use).
 *
 * Every call that touches a context pushes the device's primary context and pops it after,
 * so the caller's current context is left as it was. Not thread-safe: one caller at a time.
 * Functions return 0 or -errno with err filled (err may be NULL).
 */
#ifndef DEVMEM_CUDRV_H
#define DEVMEM_CUDRV_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* Load the driver and initialise it (once; later calls return the first outcome).
 * -ENODEV with the reason when there is no driver or no device. */
int devmem_cuda_load(struct devmem_err *err);

/* 1 when this process already has the driver loaded (the application uses CUDA), which is
 * the only way one of its pointers can be device memory. Never loads the driver itself. */
int devmem_cuda_in_process(void);

/* Number of visible devices (loads the driver). */
int devmem_cuda_device_count(int *n, struct devmem_err *err);

/* -EOPNOTSUPP with the reason when device `ordinal` cannot export dmabufs. */
int devmem_cuda_dmabuf_supported(int ordinal, struct devmem_err *err);

/* The PCI address of device `ordinal`, "dddd:bb:dd.f" (for NIC locality). */
int devmem_cuda_pci_bus_id(int ordinal, char *buf, size_t len, struct devmem_err *err);

/* The device of the context current in the calling thread (the one an application chose
 * with cudaSetDevice); -ENOENT when no context is current. */
int devmem_cuda_current_device(int *ordinal, struct devmem_err *err);

/* What a pointer is. */
struct devmem_cuda_ptr {
    int ordinal;        /* device that owns it */
    uint64_t base;      /* start of the allocation it lies in */
    size_t size;        /* bytes of that allocation */
    uint64_t buffer_id; /* unique per allocation: a freed and reused range gets a new one */
};

/* 1 when ptr is device memory (info filled), 0 when it is host memory (pageable, pinned or
 * managed: the CPU can touch it), -errno on a driver failure. Never starts the driver: 0
 * without loading anything where the process has no libcuda, and 0 while nothing in it has
 * called cuInit (there is no device memory yet). */
int devmem_cuda_ptr_query(const void *ptr, struct devmem_cuda_ptr *info, struct devmem_err *err);

/* Device memory on device `ordinal`, and its release. */
int devmem_cuda_alloc(int ordinal, size_t size, uint64_t *addr, struct devmem_err *err);
void devmem_cuda_free(int ordinal, uint64_t addr);

/* A dmabuf fd for [addr, addr+len) of device `ordinal`'s memory (page-aligned). */
int devmem_cuda_export_dmabuf(int ordinal, uint64_t addr, size_t len, int *fd,
                              struct devmem_err *err);

/* Copy len bytes in device `ordinal`'s context; either side may be host or device memory
 * (unified addressing). */
int devmem_cuda_copy(int ordinal, void *dst, const void *src, size_t len,
                     struct devmem_err *err);

/* One piece of a gather. */
struct devmem_copy {
    void *dst;
    const void *src;
    size_t len;
};

/* Run n copies on device `ordinal` and wait for all of them. dev_to_dev: every src and dst
 * is device memory, and one kernel launch moves them all (devmem_cuda_way); otherwise each
 * is an async copy on our stream (any direction) and one synchronisation ends the batch. */
int devmem_cuda_copy_batch(int ordinal, const struct devmem_copy *ops, size_t n,
                           int dev_to_dev, struct devmem_err *err);

/* The same without waiting: the pieces are queued on device `ordinal`'s stream, in order
 * after every earlier gather. The ops array, every src and every dst must stay as they are
 * until a fence recorded after them has passed (a copy from pageable memory may still be
 * reading it: the driver promises no more). */
int devmem_cuda_copy_start(int ordinal, const struct devmem_copy *ops, size_t n,
                           int dev_to_dev, struct devmem_err *err);

/* Wait for everything queued on device `ordinal`'s stream. */
int devmem_cuda_sync(int ordinal, struct devmem_err *err);

/* A fence (a CUDA event) on device `ordinal`'s stream, after everything queued there. */
int devmem_cuda_fence(int ordinal, void **fence, struct devmem_err *err);

/* Has the fence passed? 1: yes, and the fence is spent (never test it again); 0: not yet
 * (wait: block until it has, never 0); -EIO: the work before it failed, the fence is spent. */
int devmem_cuda_fence_test(int ordinal, void *fence, int wait, struct devmem_err *err);

/* How a device-to-device gather of more than one piece is launched (one piece is always a
 * cuMemcpyAsync). The kernel costs the launching thread least (bench/gather_bench; the
 * figures, and the ways measured and not kept, are in doc/cost-model.md). A device where
 * the kernel cannot run copies piece by piece instead: a driver without its PTX compiler
 * (libnvidia-ptxjitcompiler absent from a container, the JIT switched off) or without mapped
 * host memory for the piece array. Process-wide, for the tests and the benchmark: set it
 * before gathering, not while another thread gathers. */
enum devmem_cuda_way {
    DEVMEM_CUDA_WAY_KERNEL, /* one launch; the kernel reads the piece array from pinned host
                             * memory mapped for the device (default) */
    DEVMEM_CUDA_WAY_MEMCPY, /* a cuMemcpyAsync per piece */
    DEVMEM_CUDA_WAYS
};
#define DEVMEM_CUDA_WAY_DEFAULT DEVMEM_CUDA_WAY_KERNEL
int devmem_cuda_set_way(int way, struct devmem_err *err);
int devmem_cuda_way_by_name(const char *name); /* -1: none of that name */

/* Make device `ordinal`'s gathers ready now rather than at the first one: 0 when its
 * multi-piece device-to-device gathers launch the kernel; -EOPNOTSUPP with the reason when
 * they copy piece by piece (still correct, slower); another -errno when the device fails. */
int devmem_cuda_gather_prepare(int ordinal, struct devmem_err *err);

#endif /* DEVMEM_CUDRV_H */
