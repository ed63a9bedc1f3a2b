/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A driver older than CUDA 11.7 has no cuMemGetHandleForAddressRange, so no GPU memory can
 * be handed to a NIC; but it still tells device pointers from host ones, and the component
 * must keep asking it. Were the driver refused whole, every device buffer an application
 * passes would be taken for host memory and read by the CPU. Against the stand-in driver
 * (fake_cuda.c) built without that entry point.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cudrv.h"

#include "check.h"

int main(void)
{
    void *drv = dlopen(DEVMEM_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);
    void (*device_range)(const void *, size_t);
    void (*devices)(int);
    int (*app_init)(unsigned int);
    struct devmem_cuda_ptr info;
    struct devmem_err e;
    static char device_mem[4096];
    int host = 1, n = -1, fd = 7, rc;

    if (NULL == drv) {
        printf("FAIL cannot load the stand-in driver %s: %s\n", DEVMEM_FAKE_CUDA, dlerror());
        return 1;
    }
    device_range = (void (*)(const void *, size_t)) dlsym(drv, "fake_cuda_device_range");
    devices = (void (*)(int)) dlsym(drv, "fake_cuda_devices");
    app_init = (int (*)(unsigned int)) dlsym(drv, "cuInit");
    if (NULL == device_range || NULL == devices || NULL == app_init) {
        printf("FAIL the stand-in driver lacks its test entry points\n");
        return 1;
    }
    if (NULL != dlsym(drv, "cuMemGetHandleForAddressRange")) {
        printf("FAIL the stand-in driver is not the pre-11.7 build\n");
        return 1;
    }
    device_range(device_mem, sizeof(device_mem));
    devices(1);
    CHECK(0 == app_init(0), "the application starts the driver");

    rc = devmem_cuda_ptr_query(device_mem, &info, &e);
    CHECK(1 == rc && 0 == info.ordinal, "device memory is found as device memory (rc %d%s%s)",
          rc, rc < 0 ? ": " : "", rc < 0 ? e.msg : "");
    CHECK(0 == devmem_cuda_ptr_query(&host, &info, &e), "a host pointer is host memory");

    CHECK(0 == devmem_cuda_device_count(&n, &e) && 1 == n, "the device is counted (%d)", n);
    rc = devmem_cuda_dmabuf_supported(0, &e);
    CHECK(-EOPNOTSUPP == rc && NULL != strstr(e.msg, "cuMemGetHandleForAddressRange"),
          "the device path is refused, naming what the driver lacks: %s", e.msg);
    rc = devmem_cuda_export_dmabuf(0, (uint64_t) (uintptr_t) device_mem, sizeof(device_mem),
                                   &fd, &e);
    CHECK(-EOPNOTSUPP == rc && -1 == fd, "an export is refused, not attempted (rc %d): %s", rc,
          e.msg);
    return check_finish();
}
