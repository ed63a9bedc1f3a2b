/*
 * Memory providers behind one table (see dmabuf.h). Every provider says why it cannot work
 * here rather than failing later with a bare errno.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "dmabuf.h"

#include <dirent.h>
#include <dlfcn.h>
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
    if (NULL != r->map) {
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
    .export_range = no_export,
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

/* ---- cuda: libcuda.so.1 at run time ------------------------------------------------------ */

/* The few driver API types and entry points we use, declared here so that building needs no
 * CUDA headers. The _v2 symbols are the 64-bit ABI that cuda.h maps the plain names to. */
typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef unsigned long long cu_deviceptr;

#define CU_SUCCESS 0
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define DEVMEM_CUDA_MAX_DEVICES 64

static struct {
    int state; /* 0 not tried, 1 loaded, -errno failed */
    char why[DEVMEM_ERR_MSG_MAX];
    void *lib;
    cu_result (*init)(unsigned int);
    cu_result (*device_get_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_get_attribute)(int *, int, cu_device);
    cu_result (*primary_ctx_retain)(cu_context *, cu_device);
    cu_result (*ctx_set_current)(cu_context);
    cu_result (*mem_alloc)(cu_deviceptr *, size_t);
    cu_result (*mem_free)(cu_deviceptr);
    cu_result (*memcpy_htod)(cu_deviceptr, const void *, size_t);
    cu_result (*memcpy_dtoh)(void *, cu_deviceptr, size_t);
    cu_result (*get_handle)(void *, cu_deviceptr, size_t, int, unsigned long long);
    cu_result (*get_error_string)(cu_result, const char **);
    cu_context ctx[DEVMEM_CUDA_MAX_DEVICES];
} cuda;

static const char *cu_str(cu_result res)
{
    const char *s = NULL;

    if (NULL != cuda.get_error_string && CU_SUCCESS == cuda.get_error_string(res, &s) &&
        NULL != s) {
        return s;
    }
    return "unknown CUDA error";
}

static int cuda_sym(void **fn, const char *name)
{
    *fn = dlsym(cuda.lib, name);
    if (NULL == *fn) {
        snprintf(cuda.why, sizeof(cuda.why), "cuda: libcuda.so.1 lacks %s (driver too old?)",
                 name);
        return -ENOSYS;
    }
    return 0;
}

static int cuda_load(struct devmem_err *err)
{
    int rc = 0, ndev = 0;
    cu_result res;

    if (0 != cuda.state) {
        goto cleanup;
    }
    cuda.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (NULL == cuda.lib) {
        const char *dl = dlerror();

        snprintf(cuda.why, sizeof(cuda.why),
                 "cuda: cannot load libcuda.so.1 (no NVIDIA driver installed here): %s",
                 NULL != dl ? dl : "dlopen failed");
        cuda.state = -ENODEV;
        goto cleanup;
    }
    /* Every entry point must be there before we call any. */
    if (0 != (rc = cuda_sym((void **) &cuda.init, "cuInit")) ||
        0 != (rc = cuda_sym((void **) &cuda.device_get_count, "cuDeviceGetCount")) ||
        0 != (rc = cuda_sym((void **) &cuda.device_get, "cuDeviceGet")) ||
        0 != (rc = cuda_sym((void **) &cuda.device_get_attribute, "cuDeviceGetAttribute")) ||
        0 != (rc = cuda_sym((void **) &cuda.primary_ctx_retain, "cuDevicePrimaryCtxRetain")) ||
        0 != (rc = cuda_sym((void **) &cuda.ctx_set_current, "cuCtxSetCurrent")) ||
        0 != (rc = cuda_sym((void **) &cuda.mem_alloc, "cuMemAlloc_v2")) ||
        0 != (rc = cuda_sym((void **) &cuda.mem_free, "cuMemFree_v2")) ||
        0 != (rc = cuda_sym((void **) &cuda.memcpy_htod, "cuMemcpyHtoD_v2")) ||
        0 != (rc = cuda_sym((void **) &cuda.memcpy_dtoh, "cuMemcpyDtoH_v2")) ||
        0 != (rc = cuda_sym((void **) &cuda.get_handle, "cuMemGetHandleForAddressRange")) ||
        0 != (rc = cuda_sym((void **) &cuda.get_error_string, "cuGetErrorString"))) {
        cuda.state = rc;
        goto cleanup;
    }
    res = cuda.init(0);
    if (CU_SUCCESS != res) {
        snprintf(cuda.why, sizeof(cuda.why), "cuda: cuInit: %s (error %d)", cu_str(res), res);
        cuda.state = -ENODEV;
        goto cleanup;
    }
    res = cuda.device_get_count(&ndev);
    if (CU_SUCCESS != res || ndev < 1) {
        snprintf(cuda.why, sizeof(cuda.why), "cuda: no CUDA device visible");
        cuda.state = -ENODEV;
        goto cleanup;
    }
    cuda.state = 1;
cleanup:
    if (cuda.state < 0) {
        if (NULL != cuda.lib) {
            dlclose(cuda.lib);
            cuda.lib = NULL;
        }
        return devmem_err_set(err, -cuda.state, "%s", cuda.why);
    }
    return 0;
}

/* Make device `ordinal`'s primary context current; check dmabuf support on first use. */
static int cuda_use_device(int ordinal, struct devmem_err *err)
{
    cu_device dev;
    cu_result res;
    int supported = 0;

    if (ordinal < 0 || ordinal >= DEVMEM_CUDA_MAX_DEVICES) {
        return devmem_err_set(err, EINVAL, "cuda: device ordinal %d out of range", ordinal);
    }
    if (NULL == cuda.ctx[ordinal]) {
        res = cuda.device_get(&dev, ordinal);
        if (CU_SUCCESS != res) {
            return devmem_err_set(err, ENODEV, "cuda: cuDeviceGet(%d): %s", ordinal,
                                  cu_str(res));
        }
        res = cuda.device_get_attribute(&supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev);
        if (CU_SUCCESS != res || !supported) {
            return devmem_err_set(err, EOPNOTSUPP,
                                  "cuda: device %d does not support dmabuf export "
                                  "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0; needs CUDA 11.7+ "
                                  "and, in practice, the open GPU kernel modules)", ordinal);
        }
        res = cuda.primary_ctx_retain(&cuda.ctx[ordinal], dev);
        if (CU_SUCCESS != res) {
            cuda.ctx[ordinal] = NULL;
            return devmem_err_set(err, ENODEV, "cuda: cuDevicePrimaryCtxRetain(%d): %s",
                                  ordinal, cu_str(res));
        }
    }
    res = cuda.ctx_set_current(cuda.ctx[ordinal]);
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, EIO, "cuda: cuCtxSetCurrent: %s", cu_str(res));
    }
    return 0;
}

static int cuda_probe(struct devmem_err *err)
{
    int rc = cuda_load(err);

    if (0 == rc) {
        rc = cuda_use_device(0, err);
    }
    if (0 == rc) {
        devmem_err_clear(err);
    }
    return rc;
}

static int cuda_export_dmabuf(struct devmem_region *r, struct devmem_err *err)
{
    int fd = -1;
    cu_result res;

    res = cuda.get_handle(&fd, (cu_deviceptr) r->dev_addr, r->size,
                          CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    if (CU_SUCCESS != res || fd < 0) {
        return devmem_err_set(err, EIO, "cuda: cuMemGetHandleForAddressRange(DMA_BUF_FD, %zu "
                              "bytes): %s", r->size, cu_str(res));
    }
    r->dmabuf_fd = fd;
    return 0;
}

static int cuda_alloc(struct devmem_region *r, size_t size, int device, struct devmem_err *err)
{
    cu_deviceptr ptr = 0;
    cu_result res;
    int rc;

    region_reset(r);
    rc = cuda_load(err);
    if (0 == rc) {
        rc = cuda_use_device(device, err);
    }
    if (0 != rc) {
        goto cleanup;
    }
    size = round_pages(size);
    res = cuda.mem_alloc(&ptr, size);
    if (CU_SUCCESS != res) {
        rc = devmem_err_set(err, ENOMEM, "cuda: cuMemAlloc(%zu): %s", size, cu_str(res));
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
    rc = cuda_export_dmabuf(r, err);
    if (0 == rc) {
        r->provider = &devmem_provider_cuda;
    }
cleanup:
    if (0 != rc) {
        if (0 != ptr) {
            cuda.mem_free(ptr);
        }
        region_reset(r);
    }
    return rc;
}

static int cuda_export_range(struct devmem_region *r, uint64_t addr, size_t len,
                             struct devmem_err *err)
{
    size_t ps = devmem_page_size();
    int rc;

    region_reset(r);
    rc = cuda_load(err);
    if (0 != rc) {
        return rc;
    }
    if (0 != addr % ps || 0 != len % ps || 0 == len) {
        return devmem_err_set(err, EINVAL, "cuda: export range [0x%llx, +%zu) is not "
                              "page-aligned", (unsigned long long) addr, len);
    }
    /* The caller's context is current: it allocated the memory. */
    r->dev_addr = addr;
    r->size = len;
    r->owned = 0;
    r->priv_u64 = (uint64_t) -1;
    rc = cuda_export_dmabuf(r, err);
    if (0 == rc) {
        r->provider = &devmem_provider_cuda;
    } else {
        region_reset(r);
    }
    return rc;
}

static int cuda_region_ctx(struct devmem_region *r, struct devmem_err *err)
{
    /* Exported ranges (priv_u64 == -1) run in the caller's current context. */
    if ((uint64_t) -1 == r->priv_u64) {
        return 0;
    }
    return cuda_use_device((int) r->priv_u64, err);
}

static int cuda_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                        struct devmem_err *err)
{
    cu_result res;
    int rc = cuda_region_ctx(r, err);

    if (0 != rc) {
        return rc;
    }
    res = cuda.memcpy_htod((cu_deviceptr) (r->dev_addr + off), src, len);
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, EIO, "cuda: cuMemcpyHtoD: %s", cu_str(res));
    }
    return 0;
}

static int cuda_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                         struct devmem_err *err)
{
    cu_result res;
    int rc = cuda_region_ctx(r, err);

    if (0 != rc) {
        return rc;
    }
    res = cuda.memcpy_dtoh(dst, (cu_deviceptr) (r->dev_addr + off), len);
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, EIO, "cuda: cuMemcpyDtoH: %s", cu_str(res));
    }
    return 0;
}

static void cuda_release(struct devmem_region *r)
{
    if (r->dmabuf_fd >= 0) {
        close(r->dmabuf_fd);
    }
    if (r->owned && 0 != r->dev_addr && 1 == cuda.state) {
        if (0 == cuda_region_ctx(r, NULL)) {
            cuda.mem_free((cu_deviceptr) r->dev_addr);
        }
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

int devmem_region_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                          struct devmem_err *err)
{
    int rc = region_check(r, off, len, err);

    return 0 != rc ? rc : r->provider->copy_in(r, off, src, len, err);
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
