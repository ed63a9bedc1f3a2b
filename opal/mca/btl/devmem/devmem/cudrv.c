/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA driver at run time (see cudrv.h).
 */
#include "build_config.h"

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "cudrv.h"
#include "cudrv_ptx.h"

#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The few driver API types and entry points we use, declared here so that building needs no
 * CUDA headers. The _v2 symbols are the 64-bit ABI that cuda.h maps the plain names to. */
typedef int cu_result;
typedef int cu_device;
typedef struct cu_ctx_st *cu_context;
typedef struct cu_mod_st *cu_module;
typedef struct cu_func_st *cu_function;
typedef struct cu_stream_st *cu_stream;
typedef struct cu_event_st *cu_event;
typedef unsigned long long cu_deviceptr;

#define CU_SUCCESS 0
#define CU_ERROR_NOT_INITIALIZED 3
#define CU_ERROR_NOT_READY 600
#define CU_EVENT_DISABLE_TIMING 2
#define CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED 124
#define CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD 1
#define CU_STREAM_NON_BLOCKING 1
#define CU_MEMORYTYPE_DEVICE 2
#define CU_POINTER_ATTRIBUTE_MEMORY_TYPE 2
#define CU_POINTER_ATTRIBUTE_BUFFER_ID 7
#define CU_POINTER_ATTRIBUTE_IS_MANAGED 8
#define CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL 9
#define CU_POINTER_ATTRIBUTE_RANGE_START_ADDR 11
#define CU_POINTER_ATTRIBUTE_RANGE_SIZE 12
#define DEVMEM_CUDA_MAX_DEVICES 64
/* Passed fences kept for reuse per device (cuEventCreate is not free). */
#define FENCES_KEPT 64
#define CU_MEMHOSTALLOC_PORTABLE 1
#define CU_MEMHOSTALLOC_DEVICEMAP 2
#define CU_JIT_ERROR_LOG_BUFFER 5
#define CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES 6
/* Piece arrays in mapped host memory, one per launch in flight. */
#define MAPPED_SLOTS 16

/* A piece array in pinned host memory the GPU reads over the bus; reusable once `done`,
 * recorded after the launch that reads it, has passed. */
struct mapped_slot {
    struct devmem_copy *host;
    cu_deviceptr dev;
    size_t cap;
    cu_event done; /* NULL: never launched */
};

#define GATHER_THREADS 256

/* Per device: what the gather needs, made on first use. */
struct cuda_dev {
    cu_context ctx;    /* retained primary context */
    int dmabuf_ok;     /* 0 unknown, 1 yes, -1 no */
    cu_module module;  /* the gather kernel */
    cu_function gather;
    cu_stream stream;
    cu_event spare[FENCES_KEPT]; /* passed fences, for the next ones */
    size_t nspare;
    struct mapped_slot mapped[MAPPED_SLOTS]; /* the kernel's piece arrays */
    size_t mapped_next;
    /* why this device's gathers copy piece by piece, when the kernel cannot run here */
    char kernel_off[DEVMEM_ERR_MSG_MAX];
};

static struct {
    int opened; /* the library and its entry points: 0 not tried, 1 done, -errno failed */
    int state;  /* the driver started (cuInit, a device): 0 not tried, 1 done, -errno failed */
    char why[DEVMEM_ERR_MSG_MAX];
    void *lib;
    int ndev;
    cu_result (*init)(unsigned int);
    cu_result (*device_get_count)(int *);
    cu_result (*device_get)(cu_device *, int);
    cu_result (*device_get_attribute)(int *, int, cu_device);
    cu_result (*device_get_pci_bus_id)(char *, int, cu_device);
    cu_result (*primary_ctx_retain)(cu_context *, cu_device);
    cu_result (*ctx_push)(cu_context);
    cu_result (*ctx_pop)(cu_context *);
    cu_result (*ctx_get_device)(cu_device *);
    cu_result (*mem_alloc)(cu_deviceptr *, size_t);
    cu_result (*mem_free)(cu_deviceptr);
    cu_result (*memcpy_async)(cu_deviceptr, cu_deviceptr, size_t, cu_stream);
    cu_result (*stream_create)(cu_stream *, unsigned int);
    cu_result (*stream_sync)(cu_stream);
    cu_result (*event_create)(cu_event *, unsigned int);
    cu_result (*event_record)(cu_event, cu_stream);
    cu_result (*event_query)(cu_event);
    cu_result (*event_sync)(cu_event);
    cu_result (*event_destroy)(cu_event);
    cu_result (*module_load_data)(cu_module *, const void *);
    cu_result (*module_get_function)(cu_function *, cu_module, const char *);
    cu_result (*launch_kernel)(cu_function, unsigned int, unsigned int, unsigned int,
                               unsigned int, unsigned int, unsigned int, unsigned int,
                               cu_stream, void **, void **);
    cu_result (*pointer_get_attributes)(unsigned int, int *, void **, cu_deviceptr);
    cu_result (*get_handle)(void *, cu_deviceptr, size_t, int, unsigned long long);
    cu_result (*get_error_string)(cu_result, const char **);
    /* optional: the compiler's log, and the mapped piece arrays (without them a gather
     * copies piece by piece) */
    cu_result (*module_load_data_ex)(cu_module *, const void *, unsigned int, int *, void **);
    cu_result (*mem_host_alloc)(void **, size_t, unsigned int);
    cu_result (*mem_free_host)(void *);
    cu_result (*mem_host_get_device_pointer)(cu_deviceptr *, void *, unsigned int);
    struct cuda_dev dev[DEVMEM_CUDA_MAX_DEVICES];
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

static int cuda_sym(void **fn, const char *name, bool optional)
{
    *fn = dlsym(cuda.lib, name);
    if (NULL == *fn && !optional) {
        snprintf(cuda.why, sizeof(cuda.why), "cuda: libcuda.so.1 lacks %s (driver too old?)",
                 name);
        return -ENOSYS;
    }
    return 0;
}

static int cuda_syms(void)
{
    static const struct {
        size_t off;
        const char *name;
        bool optional;
    } syms[] = {
#define SYM(field, name) { offsetof(__typeof__(cuda), field), name, false }
        SYM(init, "cuInit"),
        SYM(device_get_count, "cuDeviceGetCount"),
        SYM(device_get, "cuDeviceGet"),
        SYM(device_get_attribute, "cuDeviceGetAttribute"),
        SYM(device_get_pci_bus_id, "cuDeviceGetPCIBusId"),
        SYM(primary_ctx_retain, "cuDevicePrimaryCtxRetain"),
        SYM(ctx_push, "cuCtxPushCurrent_v2"),
        SYM(ctx_pop, "cuCtxPopCurrent_v2"),
        SYM(ctx_get_device, "cuCtxGetDevice"),
        SYM(mem_alloc, "cuMemAlloc_v2"),
        SYM(mem_free, "cuMemFree_v2"),
        SYM(memcpy_async, "cuMemcpyAsync"),
        SYM(stream_create, "cuStreamCreate"),
        SYM(stream_sync, "cuStreamSynchronize"),
        SYM(event_create, "cuEventCreate"),
        SYM(event_record, "cuEventRecord"),
        SYM(event_query, "cuEventQuery"),
        SYM(event_sync, "cuEventSynchronize"),
        SYM(event_destroy, "cuEventDestroy_v2"),
        SYM(module_load_data, "cuModuleLoadData"),
        SYM(module_get_function, "cuModuleGetFunction"),
        SYM(launch_kernel, "cuLaunchKernel"),
        SYM(pointer_get_attributes, "cuPointerGetAttributes"),
        SYM(get_error_string, "cuGetErrorString"),
        /* CUDA 11.7 on: without it there is no device path, but pointers must still be
         * told apart, or device buffers would be read as host memory */
        { offsetof(__typeof__(cuda), get_handle), "cuMemGetHandleForAddressRange", true },
#define OPT(field, name) { offsetof(__typeof__(cuda), field), name, true }
        OPT(module_load_data_ex, "cuModuleLoadDataEx"),
        OPT(mem_host_alloc, "cuMemHostAlloc"),
        OPT(mem_free_host, "cuMemFreeHost"),
        OPT(mem_host_get_device_pointer, "cuMemHostGetDevicePointer_v2"),
#undef OPT
#undef SYM
    };

    /* Every required entry point must be there before we call any. */
    for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
        int rc = cuda_sym((void **) ((char *) &cuda + syms[i].off), syms[i].name,
                          syms[i].optional);
        if (0 != rc) {
            return rc;
        }
    }
    return 0;
}

/* Both steps once per process, whichever thread comes first. */
static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;

/* dlopen and the entry points, starting nothing: enough to ask about a pointer. */
static int cuda_open_locked(void)
{
    if (0 != cuda.opened) {
        return cuda.opened < 0 ? cuda.opened : 0;
    }
    cuda.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (NULL == cuda.lib) {
        const char *dl = dlerror();

        snprintf(cuda.why, sizeof(cuda.why),
                 "cuda: cannot load libcuda.so.1 (no NVIDIA driver installed here): %s",
                 NULL != dl ? dl : "dlopen failed");
        __atomic_store_n(&cuda.opened, -ENODEV, __ATOMIC_RELEASE);
        return -ENODEV;
    }
    int rc = cuda_syms();
    if (0 != rc) {
        dlclose(cuda.lib);
        cuda.lib = NULL;
    }
    __atomic_store_n(&cuda.opened, 0 != rc ? rc : 1, __ATOMIC_RELEASE);
    return rc;
}

static int cuda_open(struct devmem_err *err)
{
    int rc;

    if (1 == __atomic_load_n(&cuda.opened, __ATOMIC_ACQUIRE)) {
        return 0;
    }
    (void) pthread_mutex_lock(&load_lock);
    rc = cuda_open_locked();
    (void) pthread_mutex_unlock(&load_lock);
    return 0 != rc ? devmem_err_set(err, -rc, "%s", cuda.why) : 0;
}

int devmem_cuda_load(struct devmem_err *err)
{
    cu_result res;
    int state;

    if (1 == (state = __atomic_load_n(&cuda.state, __ATOMIC_ACQUIRE))) {
        return 0;
    }
    (void) pthread_mutex_lock(&load_lock);
    if (0 == (state = cuda.state)) {
        if (0 != (state = cuda_open_locked())) {
            goto out;
        }
        res = cuda.init(0);
        if (CU_SUCCESS != res) {
            snprintf(cuda.why, sizeof(cuda.why), "cuda: cuInit: %s (error %d)", cu_str(res),
                     res);
            state = -ENODEV;
            goto out;
        }
        res = cuda.device_get_count(&cuda.ndev);
        if (CU_SUCCESS != res || cuda.ndev < 1) {
            snprintf(cuda.why, sizeof(cuda.why), "cuda: no CUDA device visible");
            state = -ENODEV;
            goto out;
        }
        if (cuda.ndev > DEVMEM_CUDA_MAX_DEVICES) {
            cuda.ndev = DEVMEM_CUDA_MAX_DEVICES;
        }
        state = 1;
    out:
        __atomic_store_n(&cuda.state, state, __ATOMIC_RELEASE);
    }
    (void) pthread_mutex_unlock(&load_lock);
    return state < 0 ? devmem_err_set(err, -state, "%s", cuda.why) : 0;
}

/* dl_iterate_phdr callbacks: the first reports the loader's count of objects ever added,
 * the second looks for the driver among those loaded now. */
static int loader_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
    *(unsigned long long *) arg = info->dlpi_adds;
    return 1;
}

static int is_libcuda(struct dl_phdr_info *info, size_t size, void *arg)
{
    const char *base = NULL != info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;

    base = NULL != base ? base + 1 : info->dlpi_name;
    return NULL != base && 0 == strncmp(base, "libcuda.so", 10);
}

int devmem_cuda_in_process(void)
{
    /* On every send path, so it must be cheap: look at the loaded objects again only when
     * the loader added some since the last look (a dlopen with RTLD_NOLOAD of a library
     * that is absent searches the file system: tens of microseconds). The loader's count
     * and the answer for it live in one word, so that threads asking at once each see a
     * matching pair. */
    static uint64_t memo = UINT64_MAX; /* adds << 1 | seen; all ones: never looked */
    unsigned long long adds = 0;
    uint64_t m;

    if (1 == __atomic_load_n(&cuda.state, __ATOMIC_RELAXED)) {
        return 1;
    }
    (void) dl_iterate_phdr(loader_adds, &adds);
    m = __atomic_load_n(&memo, __ATOMIC_RELAXED);
    if (UINT64_MAX == m || m >> 1 != (uint64_t) adds) {
        m = (uint64_t) adds << 1 | (0 != dl_iterate_phdr(is_libcuda, NULL));
        __atomic_store_n(&memo, m, __ATOMIC_RELAXED);
    }
    return (int) (m & 1);
}

int devmem_cuda_device_count(int *n, struct devmem_err *err)
{
    int rc = devmem_cuda_load(err);

    *n = 0 == rc ? cuda.ndev : 0;
    return rc;
}

/* Push device `ordinal`'s primary context (retained on first use); pop with ctx_leave. */
static int ctx_enter(int ordinal, struct devmem_err *err)
{
    struct cuda_dev *d;
    cu_device dev;
    cu_result res;
    int rc = devmem_cuda_load(err);

    if (0 != rc) {
        return rc;
    }
    if (ordinal < 0 || ordinal >= cuda.ndev) {
        return devmem_err_set(err, EINVAL, "cuda: device %d does not exist (%d visible)",
                              ordinal, cuda.ndev);
    }
    d = &cuda.dev[ordinal];
    if (NULL == d->ctx) {
        res = cuda.device_get(&dev, ordinal);
        if (CU_SUCCESS == res) {
            res = cuda.primary_ctx_retain(&d->ctx, dev);
        }
        if (CU_SUCCESS != res) {
            d->ctx = NULL;
            return devmem_err_set(err, ENODEV, "cuda: primary context of device %d: %s",
                                  ordinal, cu_str(res));
        }
    }
    res = cuda.ctx_push(d->ctx);
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, EIO, "cuda: cuCtxPushCurrent: %s", cu_str(res));
    }
    return 0;
}

static void ctx_leave(void)
{
    cu_context old;

    (void) cuda.ctx_pop(&old);
}

int devmem_cuda_dmabuf_supported(int ordinal, struct devmem_err *err)
{
    cu_device dev;
    int supported = 0, rc = devmem_cuda_load(err);

    if (0 != rc) {
        return rc;
    }
    if (ordinal < 0 || ordinal >= cuda.ndev) {
        return devmem_err_set(err, EINVAL, "cuda: device %d does not exist (%d visible)",
                              ordinal, cuda.ndev);
    }
    if (NULL == cuda.get_handle) {
        return devmem_err_set(err, EOPNOTSUPP,
                              "cuda: this NVIDIA driver cannot export dmabufs (libcuda.so.1 "
                              "lacks cuMemGetHandleForAddressRange: needs a driver for CUDA "
                              "11.7 or later)");
    }
    if (0 == cuda.dev[ordinal].dmabuf_ok) {
        cuda.dev[ordinal].dmabuf_ok = -1;
        if (CU_SUCCESS == cuda.device_get(&dev, ordinal)
            && CU_SUCCESS == cuda.device_get_attribute(
                                 &supported, CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, dev)
            && supported) {
            cuda.dev[ordinal].dmabuf_ok = 1;
        }
    }
    if (1 != cuda.dev[ordinal].dmabuf_ok) {
        return devmem_err_set(err, EOPNOTSUPP,
                              "cuda: device %d does not support dmabuf export "
                              "(CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0; needs CUDA 11.7+ "
                              "and, in practice, the open GPU kernel modules)", ordinal);
    }
    return 0;
}

int devmem_cuda_pci_bus_id(int ordinal, char *buf, size_t len, struct devmem_err *err)
{
    cu_device dev;
    cu_result res;
    int rc = devmem_cuda_load(err);

    if (0 != rc) {
        return rc;
    }
    res = cuda.device_get(&dev, ordinal);
    if (CU_SUCCESS == res) {
        res = cuda.device_get_pci_bus_id(buf, (int) len, dev);
    }
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, ENODEV, "cuda: PCI address of device %d: %s", ordinal,
                              cu_str(res));
    }
    return 0;
}

int devmem_cuda_current_device(int *ordinal, struct devmem_err *err)
{
    cu_device dev;
    cu_result res;
    int rc = devmem_cuda_load(err);

    if (0 != rc) {
        return rc;
    }
    res = cuda.ctx_get_device(&dev);
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, ENOENT, "cuda: no context is current in this thread: %s",
                              cu_str(res));
    }
    *ordinal = (int) dev; /* the driver's device handles are the ordinals */
    return 0;
}

int devmem_cuda_ptr_query(const void *ptr, struct devmem_cuda_ptr *info, struct devmem_err *err)
{
    int attrs[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE,       CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,    CU_POINTER_ATTRIBUTE_BUFFER_ID,
        CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,  CU_POINTER_ATTRIBUTE_RANGE_SIZE,
    };
    /* every attribute is at most 8 bytes; zeroed so that narrower ones read right */
    uint64_t val[6] = {0};
    void *data[6];
    cu_result res;
    int rc;

    /* no driver in the process, or one that failed to start here (no device visible):
     * either way no device memory can exist */
    if (!devmem_cuda_in_process() || __atomic_load_n(&cuda.state, __ATOMIC_ACQUIRE) < 0) {
        return 0;
    }
    /* Never cuInit here: once the driver is started, every pointer question, Open MPI's
     * for each message included, costs it a lookup (8 B latency 1.4x on an H200 node). */
    if (0 != (rc = cuda_open(err))) {
        return rc;
    }
    for (int i = 0; i < 6; i++) {
        data[i] = &val[i];
    }
    /* unlike cuPointerGetAttribute, a pointer CUDA does not know is not an error here */
    res = cuda.pointer_get_attributes(6, attrs, data, (cu_deviceptr) (uintptr_t) ptr);
    if (CU_ERROR_NOT_INITIALIZED == res) {
        return 0; /* nothing in this process started the driver: no device memory exists */
    }
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, EIO, "cuda: cuPointerGetAttributes(%p): %s", ptr,
                              cu_str(res));
    }
    if (CU_MEMORYTYPE_DEVICE != (uint32_t) val[0] || 0 != (uint32_t) val[1]) {
        return 0; /* host, pinned host or managed: the CPU can touch it */
    }
    if (NULL != info) {
        info->ordinal = (int) (uint32_t) val[2];
        info->buffer_id = val[3];
        info->base = val[4];
        info->size = (size_t) val[5];
    }
    return 1;
}

int devmem_cuda_alloc(int ordinal, size_t size, uint64_t *addr, struct devmem_err *err)
{
    cu_deviceptr p = 0;
    cu_result res;
    int rc = ctx_enter(ordinal, err);

    if (0 != rc) {
        return rc;
    }
    res = cuda.mem_alloc(&p, size);
    ctx_leave();
    if (CU_SUCCESS != res) {
        return devmem_err_set(err, ENOMEM, "cuda: cuMemAlloc(%zu) on device %d: %s", size,
                              ordinal, cu_str(res));
    }
    *addr = p;
    return 0;
}

void devmem_cuda_free(int ordinal, uint64_t addr)
{
    if (1 == __atomic_load_n(&cuda.state, __ATOMIC_ACQUIRE) && 0 == ctx_enter(ordinal, NULL)) {
        (void) cuda.mem_free((cu_deviceptr) addr);
        ctx_leave();
    }
}

int devmem_cuda_export_dmabuf(int ordinal, uint64_t addr, size_t len, int *fd,
                              struct devmem_err *err)
{
    cu_result res;
    int rc;

    *fd = -1;
    if (NULL == cuda.get_handle) {
        return devmem_err_set(err, EOPNOTSUPP, "cuda: libcuda.so.1 lacks "
                              "cuMemGetHandleForAddressRange (needs CUDA 11.7 or later)");
    }
    if (0 != (rc = ctx_enter(ordinal, err))) {
        return rc;
    }
    res = cuda.get_handle(fd, (cu_deviceptr) addr, len, CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD, 0);
    ctx_leave();
    if (CU_SUCCESS != res || *fd < 0) {
        *fd = -1;
        return devmem_err_set(err, EIO, "cuda: cuMemGetHandleForAddressRange(DMA_BUF_FD, "
                              "0x%llx, %zu bytes): %s", (unsigned long long) addr, len,
                              cu_str(res));
    }
    return 0;
}

int devmem_cuda_copy(int ordinal, void *dst, const void *src, size_t len,
                     struct devmem_err *err)
{
    struct devmem_copy op = {dst, src, len};

    /* On our stream, waited for: a plain cuMemcpy from pageable memory may return before
     * the bytes are in device memory, and our later copies would not be ordered after it. */
    return devmem_cuda_copy_batch(ordinal, &op, 1, 0, err);
}

/* A device's stream, its piece arrays and its spare fences are shared by every thread that
 * gathers (the progress thread and the receiving threads): a gather's piece array is taken
 * and its launch goes into the stream, and the kernel is loaded, under this lock. */
static pthread_mutex_t stream_lock = PTHREAD_MUTEX_INITIALIZER;

/* The way device-to-device gathers of more than one piece go (devmem_cuda_set_way). */
static int gather_way = DEVMEM_CUDA_WAY_DEFAULT;

static const char *const way_names[DEVMEM_CUDA_WAYS] = {
    [DEVMEM_CUDA_WAY_KERNEL] = "kernel",
    [DEVMEM_CUDA_WAY_MEMCPY] = "memcpy",
};

int devmem_cuda_way_by_name(const char *name)
{
    for (int w = 0; w < DEVMEM_CUDA_WAYS; w++) {
        if (0 == strcmp(name, way_names[w])) {
            return w;
        }
    }
    return -1;
}

int devmem_cuda_set_way(int way, struct devmem_err *err)
{
    int rc = devmem_cuda_load(err);

    if (0 != rc) {
        return rc;
    }
    if (way < 0 || way >= DEVMEM_CUDA_WAYS) {
        return devmem_err_set(err, EINVAL, "cuda: no gather way %d", way);
    }
    __atomic_store_n(&gather_way, way, __ATOMIC_RELAXED);
    return 0;
}

/* Load a PTX module; what the driver's compiler said goes into err when it refuses. */
static int load_module(cu_module *module, cu_function *fn, const char *ptx, const char *name,
                       struct devmem_err *err)
{
    char log[1024] = "";
    int opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[] = {log, (void *) (uintptr_t) sizeof(log)};
    cu_result res;

    res = NULL != cuda.module_load_data_ex
              ? cuda.module_load_data_ex(module, ptx, 2, opts, vals)
              : cuda.module_load_data(module, ptx);
    if (CU_SUCCESS == res) {
        res = cuda.module_get_function(fn, *module, name);
    }
    if (CU_SUCCESS != res) {
        *fn = NULL;
        log[sizeof(log) - 1] = '\0';
        return devmem_err_set(err, EIO, "cuda: loading the %s kernel: %s%s%s", name,
                              cu_str(res), log[0] ? ": " : "", log);
    }
    return 0;
}

/* From now on device d's gathers copy piece by piece, because of why. */
static void kernel_off(struct cuda_dev *d, const char *why)
{
    snprintf(d->kernel_off, sizeof(d->kernel_off), "%s", why);
}

/* Do d's multi-piece device-to-device gathers launch the kernel? */
static bool kernel_way(const struct cuda_dev *d)
{
    return DEVMEM_CUDA_WAY_KERNEL == __atomic_load_n(&gather_way, __ATOMIC_RELAXED)
           && '\0' == d->kernel_off[0];
}

/* The stream of device `ordinal`, and the kernel when a device-to-device gather of n pieces
 * will launch it. A kernel that cannot be had here (no PTX compiler in the driver, the JIT
 * switched off, no mapped host memory) is no error: the device copies piece by piece. */
static int gather_ready(int ordinal, size_t n, int dev_to_dev, struct devmem_err *err)
{
    struct cuda_dev *d = &cuda.dev[ordinal];
    struct devmem_err load;
    cu_result res;

    if (NULL == d->stream) {
        res = cuda.stream_create(&d->stream, CU_STREAM_NON_BLOCKING);
        if (CU_SUCCESS != res) {
            d->stream = NULL;
            return devmem_err_set(err, EIO, "cuda: cuStreamCreate: %s", cu_str(res));
        }
    }
    if (!dev_to_dev || n < 2 || !kernel_way(d) || NULL != d->gather) {
        return 0;
    }
    if (NULL == cuda.mem_host_alloc || NULL == cuda.mem_host_get_device_pointer
        || NULL == cuda.mem_free_host) {
        kernel_off(d, "cuda: the driver lacks cuMemHostAlloc, cuMemFreeHost or "
                      "cuMemHostGetDevicePointer (no mapped piece array)");
    } else if (0 != load_module(&d->module, &d->gather, devmem_gather_ptx, "devmem_gather",
                                &load)) {
        kernel_off(d, load.msg);
    }
    return 0;
}

/* The next mapped piece array, with room for n pieces, once the launch that last read it
 * is over (MAPPED_SLOTS launches ago: normally long since). *grown_res: the driver's answer
 * when no room could be had (the launch can still go piece by piece), else CU_SUCCESS. */
static cu_result mapped_slot(struct cuda_dev *d, size_t n, struct mapped_slot **slot,
                             cu_result *grown_res)
{
    struct mapped_slot *m = &d->mapped[d->mapped_next];
    cu_result res = CU_SUCCESS;

    *slot = NULL;
    *grown_res = CU_SUCCESS;
    if (NULL != m->done) {
        res = cuda.event_sync(m->done);
    } else {
        res = cuda.event_create(&m->done, CU_EVENT_DISABLE_TIMING);
        if (CU_SUCCESS != res) {
            m->done = NULL;
        }
    }
    if (CU_SUCCESS != res) {
        return res;
    }
    if (m->cap < n) {
        size_t cap = m->cap ? m->cap : 256;
        void *host = NULL;
        cu_result g;

        while (cap < n) {
            cap *= 2;
        }
        if (NULL != m->host) {
            (void) cuda.mem_free_host(m->host);
            m->host = NULL;
            m->cap = 0;
        }
        g = cuda.mem_host_alloc(&host, cap * sizeof(*m->host),
                                CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP);
        if (CU_SUCCESS == g && CU_SUCCESS != (g = cuda.mem_host_get_device_pointer(&m->dev,
                                                                                  host, 0))) {
            (void) cuda.mem_free_host(host);
        }
        if (CU_SUCCESS != g) {
            *grown_res = g;
            return CU_SUCCESS;
        }
        m->host = host;
        m->cap = cap;
    }
    d->mapped_next = (d->mapped_next + 1) % MAPPED_SLOTS;
    *slot = m;
    return CU_SUCCESS;
}

/* One launch of the gather kernel over n pieces (more than one, all device memory), the
 * piece array written to pinned host memory that the kernel reads across the bus: no
 * upload, no staging copy. *launched false: no room for a larger array now (pinned memory
 * short for a moment), nothing enqueued: this batch goes piece by piece, the next tries
 * again. A device that can have no array at all is found by gather_prepare. */
static cu_result enqueue_kernel(struct cuda_dev *d, const struct devmem_copy *ops, size_t n,
                                bool *launched, const char **what)
{
    /* the piece array has the kernel's layout already: {dst, src, len} as 3 x u64 */
    _Static_assert(sizeof(struct devmem_copy) == 3 * sizeof(uint64_t),
                   "struct devmem_copy is the kernel's piece layout");
    unsigned int count = (unsigned int) n;
    struct mapped_slot *m;
    cu_deviceptr array;
    void *params[] = {&array, &count};
    cu_result res, grown;

    *launched = false;
    *what = "mapped piece array";
    if (CU_SUCCESS != (res = mapped_slot(d, n, &m, &grown)) || NULL == m) {
        return res;
    }
    memcpy(m->host, ops, n * sizeof(*ops));
    array = m->dev;
    *launched = true;
    *what = "cuLaunchKernel";
    res = cuda.launch_kernel(d->gather, count, 1, 1, GATHER_THREADS, 1, 1, 0, d->stream,
                             params, NULL);
    if (CU_SUCCESS == res) {
        *what = "cuEventRecord";
        res = cuda.event_record(m->done, d->stream);
    }
    return res;
}

/* Enqueue the pieces on d's stream (context entered, gather_ready done). */
static cu_result enqueue(struct cuda_dev *d, const struct devmem_copy *ops, size_t n,
                         int dev_to_dev, const char **what)
{
    cu_result res = CU_SUCCESS;
    bool launched = false;

    /* the way is read again here: a kernel not loaded is no kernel (set_way meanwhile) */
    if (dev_to_dev && n > 1 && kernel_way(d) && NULL != d->gather) {
        res = enqueue_kernel(d, ops, n, &launched, what);
        if (launched || CU_SUCCESS != res) {
            return res;
        }
    }
    *what = "cuMemcpyAsync";
    for (size_t i = 0; i < n && CU_SUCCESS == res; i++) {
        res = cuda.memcpy_async((cu_deviceptr) (uintptr_t) ops[i].dst,
                                (cu_deviceptr) (uintptr_t) ops[i].src, ops[i].len, d->stream);
    }
    return res;
}

/* Take stream_lock, enter ordinal's context and make its stream and gather ready for n
 * pieces; on failure nothing is held. stream_leave undoes it. */
static int stream_enter(int ordinal, size_t n, int dev_to_dev, struct devmem_err *err)
{
    int rc;

    (void) pthread_mutex_lock(&stream_lock);
    if (0 == (rc = ctx_enter(ordinal, err)) && 0 != (rc = gather_ready(ordinal, n, dev_to_dev,
                                                                       err))) {
        ctx_leave();
    }
    if (0 != rc) {
        (void) pthread_mutex_unlock(&stream_lock);
    }
    return rc;
}

static void stream_leave(void)
{
    ctx_leave();
    (void) pthread_mutex_unlock(&stream_lock);
}

int devmem_cuda_copy_start(int ordinal, const struct devmem_copy *ops, size_t n,
                           int dev_to_dev, struct devmem_err *err)
{
    cu_result res;
    const char *what;
    int rc;

    if (0 == n) {
        return 0;
    }
    if (0 != (rc = stream_enter(ordinal, n, dev_to_dev, err))) {
        return rc;
    }
    res = enqueue(&cuda.dev[ordinal], ops, n, dev_to_dev, &what);
    if (CU_SUCCESS != res) {
        /* what was queued before the failure may still read the pieces */
        (void) cuda.stream_sync(cuda.dev[ordinal].stream);
        rc = devmem_err_set(err, EIO, "cuda: gather of %zu pieces: %s: %s", n, what,
                            cu_str(res));
    }
    stream_leave();
    return rc;
}

int devmem_cuda_gather_prepare(int ordinal, struct devmem_err *err)
{
    struct cuda_dev *d;
    struct mapped_slot *m = NULL;
    const char *what = "";
    cu_result res = CU_SUCCESS, grown = CU_SUCCESS;
    int rc;

    if (0 != (rc = stream_enter(ordinal, 2, 1, err))) {
        return rc;
    }
    d = &cuda.dev[ordinal];
    if (kernel_way(d)) {
        /* the first piece array now: a driver that maps no host memory says so here */
        what = "a mapped piece array";
        if (CU_SUCCESS == (res = mapped_slot(d, 1, &m, &grown)) && NULL == m) {
            char why[DEVMEM_ERR_MSG_MAX];

            snprintf(why, sizeof(why), "cuda: mapped host memory for gather pieces: %s",
                     cu_str(grown));
            kernel_off(d, why);
        }
    }
    if (CU_SUCCESS != res) {
        rc = devmem_err_set(err, EIO, "cuda: %s: %s", what, cu_str(res));
    } else if (!kernel_way(d)) {
        rc = devmem_err_set(err, EOPNOTSUPP, "%s", '\0' != d->kernel_off[0]
                                                       ? d->kernel_off
                                                       : "cuda: gather way memcpy chosen");
    }
    stream_leave();
    return rc;
}

int devmem_cuda_sync(int ordinal, struct devmem_err *err)
{
    cu_result res;
    int rc;

    if (0 != (rc = stream_enter(ordinal, 0, 0, err))) {
        return rc;
    }
    (void) pthread_mutex_unlock(&stream_lock); /* the wait needs only the context */
    res = cuda.stream_sync(cuda.dev[ordinal].stream);
    if (CU_SUCCESS != res) {
        rc = devmem_err_set(err, EIO, "cuda: cuStreamSynchronize: %s", cu_str(res));
    }
    ctx_leave();
    return rc;
}

int devmem_cuda_copy_batch(int ordinal, const struct devmem_copy *ops, size_t n,
                           int dev_to_dev, struct devmem_err *err)
{
    int rc = devmem_cuda_copy_start(ordinal, ops, n, dev_to_dev, err);

    /* a failed start has waited for what it queued already */
    return 0 != rc || 0 == n ? rc : devmem_cuda_sync(ordinal, err);
}

int devmem_cuda_fence(int ordinal, void **fence, struct devmem_err *err)
{
    struct cuda_dev *d;
    cu_event ev = NULL;
    cu_result res = CU_SUCCESS;
    int rc;

    *fence = NULL;
    if (0 != (rc = stream_enter(ordinal, 0, 0, err))) {
        return rc;
    }
    d = &cuda.dev[ordinal];
    if (d->nspare > 0) {
        ev = d->spare[--d->nspare];
    } else {
        res = cuda.event_create(&ev, CU_EVENT_DISABLE_TIMING);
    }
    if (CU_SUCCESS == res) {
        res = cuda.event_record(ev, d->stream);
        if (CU_SUCCESS != res) {
            (void) cuda.event_destroy(ev);
        }
    }
    if (CU_SUCCESS != res) {
        rc = devmem_err_set(err, EIO, "cuda: a fence after the gather: %s", cu_str(res));
    } else {
        *fence = ev;
    }
    stream_leave();
    return rc;
}

int devmem_cuda_fence_test(int ordinal, void *fence, int wait, struct devmem_err *err)
{
    struct cuda_dev *d;
    cu_event ev = fence;
    cu_result res;
    int rc;

    if (0 != (rc = ctx_enter(ordinal, err))) {
        (void) cuda.event_destroy(ev); /* spent, as promised */
        return rc;
    }
    d = &cuda.dev[ordinal];
    res = wait ? cuda.event_sync(ev) : cuda.event_query(ev);
    if (CU_ERROR_NOT_READY == res) {
        ctx_leave();
        return 0;
    }
    (void) pthread_mutex_lock(&stream_lock);
    if (CU_SUCCESS == res && d->nspare < FENCES_KEPT) {
        d->spare[d->nspare++] = ev;
        ev = NULL;
    }
    (void) pthread_mutex_unlock(&stream_lock);
    if (NULL != ev) {
        (void) cuda.event_destroy(ev);
    }
    rc = CU_SUCCESS == res ? 1
                           : devmem_err_set(err, EIO, "cuda: the gather before a fence "
                                            "failed: %s", cu_str(res));
    ctx_leave();
    return rc;
}
