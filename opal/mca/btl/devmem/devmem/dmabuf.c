/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory providers behind one table (see dmabuf.h). Every provider says why it cannot work
 * here rather than failing later with a bare errno.
 */
#include "build_config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "dmabuf.h"
#include "cudrv.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/dma-buf.h>
#include <linux/udmabuf.h>

#ifdef HAVE_LIBDRM
#include <drm.h>
#include <drm_mode.h>
#include <xf86drm.h>
#endif

size_t devmem_page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);

    return ps > 0 ? (size_t) ps : 4096;
}

static size_t round_pages(size_t size)
{
    size_t ps = devmem_page_size();

    return (size + ps - 1) / ps * ps;
}

static void region_reset(struct devmem_region *r)
{
    memset(r, 0, sizeof(*r));
    r->dmabuf_fd = -1;
    r->priv_fd = -1;
}

/* ---- host: memfd + mmap ------------------------------------------------------------------ */

static int host_probe(struct devmem_err *err)
{
    devmem_err_clear(err);
    return 0;
}

/* A shared memfd mapping: what the emulation uses as its "dmabuf". sealing optional. */
static int memfd_map(struct devmem_region *r, size_t size, unsigned int mfd_flags,
                     const char *name, struct devmem_err *err)
{
    int rc = 0;

    r->priv_fd = memfd_create(name, MFD_CLOEXEC | mfd_flags);
    if (r->priv_fd < 0) {
        rc = devmem_err_set(err, errno, "%s: memfd_create: %s", name, strerror(errno));
        goto cleanup;
    }
    if (0 != ftruncate(r->priv_fd, (off_t) size)) {
        rc = devmem_err_set(err, errno, "%s: ftruncate(%zu): %s", name, size, strerror(errno));
        goto cleanup;
    }
    r->size = size;
cleanup:
    return rc;
}

static int host_alloc(struct devmem_region *r, size_t size, int device, struct devmem_err *err)
{
    int rc;

    region_reset(r);
    size = round_pages(size);
    rc = memfd_map(r, size, 0, "devmem-host", err);
    if (0 != rc) {
        goto cleanup;
    }
    r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->priv_fd, 0);
    if (MAP_FAILED == r->map) {
        r->map = NULL;
        rc = devmem_err_set(err, errno, "host: mmap(%zu): %s", size, strerror(errno));
        goto cleanup;
    }
    r->provider = &devmem_provider_host;
    r->owned = 1;
cleanup:
    if (0 != rc && r->priv_fd >= 0) {
        close(r->priv_fd);
        region_reset(r);
    }
    return rc;
}

static int no_export(struct devmem_region *r, uint64_t addr, size_t len, struct devmem_err *err)
{
    return devmem_err_set(err, EOPNOTSUPP, "this provider cannot export existing memory");
}

/* A view of existing host memory, for the emulated kernel's TX (no dmabuf: nothing real can
 * bind it). The memory stays the caller's. */
static int host_export_range(struct devmem_region *r, uint64_t addr, size_t len,
                             struct devmem_err *err)
{
    size_t ps = devmem_page_size();

    region_reset(r);
    if (0 == addr || 0 != addr % ps || 0 != len % ps || 0 == len) {
        return devmem_err_set(err, EINVAL, "host: export range [0x%llx, +%zu) is not "
                              "page-aligned", (unsigned long long) addr, len);
    }
    r->map = (void *) (uintptr_t) addr;
    r->size = len;
    r->owned = 0;
    r->provider = &devmem_provider_host;
    return 0;
}

static int host_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                        struct devmem_err *err)
{
    memcpy((char *) r->map + off, src, len);
    return 0;
}

static int host_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                         struct devmem_err *err)
{
    memcpy(dst, (const char *) r->map + off, len);
    return 0;
}

static void host_release(struct devmem_region *r)
{
    if (NULL != r->map && r->owned) {
        munmap(r->map, r->size);
    }
    if (r->priv_fd >= 0) {
        close(r->priv_fd);
    }
    if (r->dmabuf_fd >= 0) {
        close(r->dmabuf_fd);
    }
    region_reset(r);
}

const struct devmem_provider devmem_provider_host = {
    .name = "host",
    .probe = host_probe,
    .alloc = host_alloc,
    .export_range = host_export_range,
    .copy_in = host_copy_in,
    .copy_out = host_copy_out,
    .release = host_release,
};

/* ---- udmabuf: sealed memfd -> dmabuf --------------------------------------------------- */

#define UDMABUF_DEV "/dev/udmabuf"

static int udmabuf_probe(struct devmem_err *err)
{
    if (0 != access(UDMABUF_DEV, R_OK | W_OK)) {
        int e = errno;

        if (ENOENT == e) {
            return devmem_err_set(err, ENODEV,
                                  "udmabuf: " UDMABUF_DEV " does not exist (kernel built without "
                                  "CONFIG_UDMABUF, or the udmabuf module is not loaded)");
        }
        return devmem_err_set(err, e, "udmabuf: cannot open " UDMABUF_DEV ": %s", strerror(e));
    }
    devmem_err_clear(err);
    return 0;
}

/* Host CPU access to a dmabuf is bracketed by DMA_BUF_IOCTL_SYNC start/end. */
static int dmabuf_sync(int fd, uint64_t flags, struct devmem_err *err)
{
    struct dma_buf_sync sync = {.flags = flags};

    while (0 != ioctl(fd, DMA_BUF_IOCTL_SYNC, &sync)) {
        if (EINTR != errno && EAGAIN != errno) {
            return devmem_err_set(err, errno, "DMA_BUF_IOCTL_SYNC: %s", strerror(errno));
        }
    }
    return 0;
}

static int udmabuf_alloc(struct devmem_region *r, size_t size, int device,
                         struct devmem_err *err)
{
    struct udmabuf_create create;
    int devfd = -1, rc;

    region_reset(r);
    rc = udmabuf_probe(err);
    if (0 != rc) {
        goto cleanup;
    }
    size = round_pages(size);
    rc = memfd_map(r, size, MFD_ALLOW_SEALING, "devmem-udmabuf", err);
    if (0 != rc) {
        goto cleanup;
    }
    /* udmabuf refuses a memfd that could shrink under it (and one with a write seal). */
    if (0 != fcntl(r->priv_fd, F_ADD_SEALS, F_SEAL_SHRINK)) {
        rc = devmem_err_set(err, errno, "udmabuf: F_SEAL_SHRINK: %s", strerror(errno));
        goto cleanup;
    }
    devfd = open(UDMABUF_DEV, O_RDWR | O_CLOEXEC);
    if (devfd < 0) {
        rc = devmem_err_set(err, errno, "udmabuf: open " UDMABUF_DEV ": %s", strerror(errno));
        goto cleanup;
    }
    memset(&create, 0, sizeof(create));
    create.memfd = (uint32_t) r->priv_fd;
    create.flags = UDMABUF_FLAGS_CLOEXEC;
    create.offset = 0;
    create.size = size;
    r->dmabuf_fd = ioctl(devfd, UDMABUF_CREATE, &create);
    if (r->dmabuf_fd < 0) {
        rc = devmem_err_set(err, errno,
                            "udmabuf: UDMABUF_CREATE(%zu bytes): %s (the module caps a buffer at "
                            "/sys/module/udmabuf/parameters/size_limit_mb, default 64)",
                            size, strerror(errno));
        r->dmabuf_fd = -1;
        goto cleanup;
    }
    r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, r->dmabuf_fd, 0);
    if (MAP_FAILED == r->map) {
        r->map = NULL;
        rc = devmem_err_set(err, errno, "udmabuf: mmap dmabuf: %s", strerror(errno));
        goto cleanup;
    }
    r->provider = &devmem_provider_udmabuf;
    r->owned = 1;
cleanup:
    if (devfd >= 0) {
        close(devfd);
    }
    if (0 != rc) {
        host_release(r);
    }
    return rc;
}

static int udmabuf_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                           struct devmem_err *err)
{
    int rc = dmabuf_sync(r->dmabuf_fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_WRITE, err);

    if (0 == rc) {
        memcpy((char *) r->map + off, src, len);
        rc = dmabuf_sync(r->dmabuf_fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_WRITE, err);
    }
    return rc;
}

static int udmabuf_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                            struct devmem_err *err)
{
    int rc = dmabuf_sync(r->dmabuf_fd, DMA_BUF_SYNC_START | DMA_BUF_SYNC_READ, err);

    if (0 == rc) {
        memcpy(dst, (const char *) r->map + off, len);
        rc = dmabuf_sync(r->dmabuf_fd, DMA_BUF_SYNC_END | DMA_BUF_SYNC_READ, err);
    }
    return rc;
}

const struct devmem_provider devmem_provider_udmabuf = {
    .name = "udmabuf",
    .probe = udmabuf_probe,
    .alloc = udmabuf_alloc,
    .export_range = no_export,
    .copy_in = udmabuf_copy_in,
    .copy_out = udmabuf_copy_out,
    .release = host_release,
};

/* ---- cuda: device memory through the driver loaded at run time (cudrv.h) ---------------- */

static int cuda_probe(struct devmem_err *err)
{
    int rc = devmem_cuda_dmabuf_supported(0, err);

    if (0 == rc) {
        devmem_err_clear(err);
    }
    return rc;
}

static int cuda_alloc(struct devmem_region *r, size_t size, int device, struct devmem_err *err)
{
    uint64_t ptr = 0;
    int rc;

    region_reset(r);
    size = round_pages(size);
    rc = devmem_cuda_dmabuf_supported(device, err);
    if (0 == rc) {
        rc = devmem_cuda_alloc(device, size, &ptr, err);
    }
    if (0 != rc) {
        goto cleanup;
    }
    r->dev_addr = ptr;
    r->size = size;
    r->owned = 1;
    r->priv_u64 = (uint64_t) device;
    if (0 != (ptr % devmem_page_size())) {
        rc = devmem_err_set(err, EINVAL, "cuda: cuMemAlloc returned an address that is not "
                            "page-aligned; dmabuf export needs page alignment");
        goto cleanup;
    }
    rc = devmem_cuda_export_dmabuf(device, ptr, size, &r->dmabuf_fd, err);
    if (0 == rc) {
        r->provider = &devmem_provider_cuda;
    }
cleanup:
    if (0 != rc) {
        if (0 != ptr) {
            devmem_cuda_free(device, ptr);
        }
        region_reset(r);
    }
    return rc;
}

static int cuda_export_range(struct devmem_region *r, uint64_t addr, size_t len,
                             struct devmem_err *err)
{
    size_t ps = devmem_page_size();
    struct devmem_cuda_ptr info;
    int rc;

    region_reset(r);
    if (0 != addr % ps || 0 != len % ps || 0 == len) {
        return devmem_err_set(err, EINVAL, "cuda: export range [0x%llx, +%zu) is not "
                              "page-aligned", (unsigned long long) addr, len);
    }
    rc = devmem_cuda_ptr_query((const void *) (uintptr_t) addr, &info, err);
    if (1 != rc) {
        return rc < 0 ? rc : devmem_err_set(err, EINVAL, "cuda: 0x%llx is not device memory",
                                            (unsigned long long) addr);
    }
    r->dev_addr = addr;
    r->size = len;
    r->owned = 0;
    r->priv_u64 = (uint64_t) info.ordinal;
    rc = devmem_cuda_export_dmabuf(info.ordinal, addr, len, &r->dmabuf_fd, err);
    if (0 == rc) {
        r->provider = &devmem_provider_cuda;
    } else {
        region_reset(r);
    }
    return rc;
}

static int cuda_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                        struct devmem_err *err)
{
    return devmem_cuda_copy((int) r->priv_u64, (void *) (uintptr_t) (r->dev_addr + off), src, len,
                            err);
}

static int cuda_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                         struct devmem_err *err)
{
    return devmem_cuda_copy((int) r->priv_u64, dst, (const void *) (uintptr_t) (r->dev_addr + off),
                            len, err);
}

static void cuda_release(struct devmem_region *r)
{
    if (r->dmabuf_fd >= 0) {
        close(r->dmabuf_fd);
    }
    if (r->owned && 0 != r->dev_addr) {
        devmem_cuda_free((int) r->priv_u64, r->dev_addr);
    }
    region_reset(r);
}

const struct devmem_provider devmem_provider_cuda = {
    .name = "cuda",
    .probe = cuda_probe,
    .alloc = cuda_alloc,
    .export_range = cuda_export_range,
    .copy_in = cuda_copy_in,
    .copy_out = cuda_copy_out,
    .release = cuda_release,
};

/* ---- drm: GEM dumb buffer exported with PRIME ------------------------------------------- */

#define DRI_DIR "/dev/dri"

#ifdef HAVE_LIBDRM
static int drm_has_render_node(void)
{
    DIR *d = opendir(DRI_DIR);
    struct dirent *e;
    int found = 0;

    if (NULL == d) {
        return 0;
    }
    while (NULL != (e = readdir(d))) {
        if (0 == strncmp(e->d_name, "renderD", 7)) {
            found = 1;
            break;
        }
    }
    closedir(d);
    return found;
}
#endif

static int drm_probe(struct devmem_err *err)
{
#ifndef HAVE_LIBDRM
    return devmem_err_set(err, EOPNOTSUPP, "drm: built without libdrm (install libdrm-dev and "
                          "reconfigure)");
#else
    if (!drm_has_render_node()) {
        return devmem_err_set(err, ENODEV, "drm: no render node under " DRI_DIR
                              " (no GPU with a DRM driver on this machine)");
    }
    devmem_err_clear(err);
    return 0;
#endif
}

#ifdef HAVE_LIBDRM
static int drm_alloc(struct devmem_region *r, size_t size, int device, struct devmem_err *err)
{
    struct drm_mode_create_dumb create;
    struct drm_mode_map_dumb map;
    char path[64];
    int rc, fd = -1;
    size_t ps = devmem_page_size();

    region_reset(r);
    rc = drm_probe(err);
    if (0 != rc) {
        goto cleanup;
    }
    size = round_pages(size);
    /* Dumb buffers (the one driver-neutral GEM allocation) live on the primary node. */
    snprintf(path, sizeof(path), DRI_DIR "/card%d", device < 0 ? 0 : device);
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        rc = devmem_err_set(err, errno, "drm: open %s: %s", path, strerror(errno));
        goto cleanup;
    }
    r->priv_fd = fd;
    memset(&create, 0, sizeof(create));
    create.width = (uint32_t) (ps / 4);
    create.bpp = 32;
    create.height = (uint32_t) (size / ps);
    if (0 != drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &create)) {
        rc = devmem_err_set(err, errno, "drm: %s: DRM_IOCTL_MODE_CREATE_DUMB(%zu bytes): %s",
                            path, size, strerror(errno));
        goto cleanup;
    }
    r->dev_addr = create.handle;
    r->size = size;
    r->owned = 1;
    if (0 != drmPrimeHandleToFD(fd, create.handle, DRM_CLOEXEC | DRM_RDWR, &r->dmabuf_fd)) {
        rc = devmem_err_set(err, errno, "drm: drmPrimeHandleToFD: %s", strerror(errno));
        r->dmabuf_fd = -1;
        goto cleanup;
    }
    memset(&map, 0, sizeof(map));
    map.handle = create.handle;
    if (0 != drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &map)) {
        rc = devmem_err_set(err, errno, "drm: DRM_IOCTL_MODE_MAP_DUMB: %s", strerror(errno));
        goto cleanup;
    }
    r->map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t) map.offset);
    if (MAP_FAILED == r->map) {
        r->map = NULL;
        rc = devmem_err_set(err, errno, "drm: mmap dumb buffer: %s", strerror(errno));
        goto cleanup;
    }
    r->provider = &devmem_provider_drm;
cleanup:
    if (0 != rc) {
        devmem_provider_drm.release(r);
    }
    return rc;
}

static void drm_release(struct devmem_region *r)
{
    if (NULL != r->map) {
        munmap(r->map, r->size);
    }
    if (r->dmabuf_fd >= 0) {
        close(r->dmabuf_fd);
    }
    if (r->priv_fd >= 0) {
        if (0 != r->dev_addr) {
            struct drm_mode_destroy_dumb destroy = {.handle = (uint32_t) r->dev_addr};

            (void) drmIoctl(r->priv_fd, DRM_IOCTL_MODE_DESTROY_DUMB, &destroy);
        }
        close(r->priv_fd);
    }
    region_reset(r);
}
#else
static int drm_alloc(struct devmem_region *r, size_t size, int device, struct devmem_err *err)
{
    region_reset(r);
    return drm_probe(err);
}

static void drm_release(struct devmem_region *r)
{
    region_reset(r);
}
#endif

const struct devmem_provider devmem_provider_drm = {
    .name = "drm",
    .probe = drm_probe,
    .alloc = drm_alloc,
    .export_range = no_export,
    .copy_in = host_copy_in, /* dumb buffers are CPU-mapped */
    .copy_out = host_copy_out,
    .release = drm_release,
};

/* ---- table and bounds-checked wrappers --------------------------------------------------- */

const struct devmem_provider *devmem_provider_find(const char *name)
{
    static const struct devmem_provider *const all[] = {
        &devmem_provider_host, &devmem_provider_udmabuf, &devmem_provider_cuda,
        &devmem_provider_drm,
    };
    size_t i;

    for (i = 0; NULL != name && i < sizeof(all) / sizeof(all[0]); i++) {
        if (0 == strcmp(all[i]->name, name)) {
            return all[i];
        }
    }
    return NULL;
}

int devmem_region_alloc(struct devmem_region *r, const struct devmem_provider *p, size_t size,
                        int device, struct devmem_err *err)
{
    if (NULL == p || 0 == size) {
        region_reset(r);
        return devmem_err_set(err, EINVAL, "region: no provider or zero size");
    }
    return p->alloc(r, size, device, err);
}

static int region_check(const struct devmem_region *r, size_t off, size_t len,
                        struct devmem_err *err)
{
    if (NULL == r->provider) {
        return devmem_err_set(err, EINVAL, "region: not allocated");
    }
    if (off > r->size || len > r->size - off) {
        return devmem_err_set(err, ERANGE, "region: [%zu, +%zu) outside a %zu-byte %s region",
                              off, len, r->size, r->provider->name);
    }
    return 0;
}

int devmem_region_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                           struct devmem_err *err)
{
    int rc = region_check(r, off, len, err);

    return 0 != rc ? rc : r->provider->copy_out(r, off, dst, len, err);
}

void devmem_region_release(struct devmem_region *r)
{
    if (NULL != r->provider) {
        r->provider->release(r);
    } else {
        region_reset(r);
    }
}
