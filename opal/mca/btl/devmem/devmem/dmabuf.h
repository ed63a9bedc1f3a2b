/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory providers: where the memory behind a devmem binding comes from.
 *
 * One small operations table per provider (our own, in the spirit of the memory-provider
 * table of the kernel's ncdevmem selftest): probe whether it can work here (and why not),
 * allocate or export a region as a dmabuf fd, copy bytes in and out of it by offset, release.
 *
 *   host     memfd + mmap; no dmabuf fd. The emulated kernel ABI lands data here; a view
 *            of existing host memory stands in for device memory in its TX tests.
 *   udmabuf  sealed memfd turned into a dmabuf with UDMABUF_CREATE on /dev/udmabuf.
 *   cuda     device memory from libcuda.so.1 (dlopen at run time, no build dependency),
 *            exported with cuMemGetHandleForAddressRange(DMA_BUF_FD).
 *   drm      a GEM dumb buffer on /dev/dri/cardN, exported with libdrm's drmPrimeHandleToFD.
 *
 * Every function returns 0 or -errno and fills err (may be NULL) with the reason.
 * Not thread-safe: one caller at a time (the cuda provider loads libcuda on first use).
 */
#ifndef DEVMEM_DMABUF_H
#define DEVMEM_DMABUF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct devmem_provider;

/* One region of provider memory. Sizes are rounded up to whole pages. */
struct devmem_region {
    const struct devmem_provider *provider;
    size_t size;       /* bytes, page multiple */
    int dmabuf_fd;     /* dmabuf to bind, -1 when the provider has none (host) */
    void *map;         /* host-visible mapping of the whole region, NULL for device memory */
    uint64_t dev_addr; /* provider address: CUdeviceptr (cuda), GEM handle (drm), 0 otherwise */
    int owned;         /* 1: allocated here and freed on release; 0: exported user memory */
    int priv_fd;       /* backing fd (memfd, drm device), -1 when none */
    uint64_t priv_u64; /* provider scratch: drm mmap offset */
};

struct devmem_provider {
    const char *name;
    /* 0 when the provider can allocate here; else -errno with the reason in err. */
    int (*probe)(struct devmem_err *err);
    /* Allocate size bytes (rounded up to pages) on device `device` (cuda ordinal, drm card
     * index; ignored by host and udmabuf). */
    int (*alloc)(struct devmem_region *r, size_t size, int device, struct devmem_err *err);
    /* Export existing provider memory [addr, addr+len) as a region (cuda; host as a view
     * without a dmabuf; the others return -EOPNOTSUPP). addr and len must be page-aligned.
     * The memory stays the caller's. */
    int (*export_range)(struct devmem_region *r, uint64_t addr, size_t len,
                        struct devmem_err *err);
    /* Copy len bytes host -> region at offset off, and region -> host. */
    int (*copy_in)(struct devmem_region *r, size_t off, const void *src, size_t len,
                   struct devmem_err *err);
    int (*copy_out)(struct devmem_region *r, size_t off, void *dst, size_t len,
                    struct devmem_err *err);
    /* Give everything back; the region is zeroed (dmabuf_fd -1). Safe on a released region. */
    void (*release)(struct devmem_region *r);
};

extern const struct devmem_provider devmem_provider_host;
extern const struct devmem_provider devmem_provider_udmabuf;
extern const struct devmem_provider devmem_provider_cuda;
extern const struct devmem_provider devmem_provider_drm;

/* The provider called name ("host", "udmabuf", "cuda", "drm"), or NULL. */
const struct devmem_provider *devmem_provider_find(const char *name);

/* Convenience wrappers that check bounds (off + len <= size) before calling the provider. */
int devmem_region_alloc(struct devmem_region *r, const struct devmem_provider *p, size_t size,
                        int device, struct devmem_err *err);
int devmem_region_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                           struct devmem_err *err);
void devmem_region_release(struct devmem_region *r);

/* The system page size (the granule of regions and of the kernel's net_iovs). */
size_t devmem_page_size(void);

#endif /* DEVMEM_DMABUF_H */
