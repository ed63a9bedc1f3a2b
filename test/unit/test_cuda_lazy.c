/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Asking about a pointer never starts the CUDA driver. Once started, every pointer check of
 * the process costs a driver lookup, Open MPI's for each message included (8 B latency 1.4x
 * on an H200 node), so a process that has not started it keeps it that way: a pointer is
 * host memory while nothing has called cuInit. Against the stand-in driver (fake_cuda.c),
 * loaded here as the application would load the real one.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "cudrv.h"

#include "check.h"

int main(void)
{
    void *drv = dlopen(DEVMEM_FAKE_CUDA, RTLD_NOW | RTLD_GLOBAL);
    unsigned long (*calls)(const char *);
    void (*device_range)(const void *, size_t);
    int (*app_init)(unsigned int);
    struct devmem_cuda_ptr info;
    struct devmem_err e;
    static char device_mem[4096];
    int host = 1, n = -1;

    if (NULL == drv) {
        printf("FAIL cannot load the stand-in driver %s: %s\n", DEVMEM_FAKE_CUDA, dlerror());
        return 1;
    }
    calls = (unsigned long (*)(const char *)) dlsym(drv, "fake_cuda_calls");
    device_range = (void (*)(const void *, size_t)) dlsym(drv, "fake_cuda_device_range");
    app_init = (int (*)(unsigned int)) dlsym(drv, "cuInit");
    if (NULL == calls || NULL == device_range || NULL == app_init) {
        printf("FAIL the stand-in driver lacks its test entry points\n");
        return 1;
    }
    device_range(device_mem, sizeof(device_mem));

    CHECK(1 == devmem_cuda_in_process(), "the driver counts as loaded once the process has it");
    CHECK(0 == devmem_cuda_ptr_query(&host, &info, &e), "before cuInit: a host pointer is host");
    CHECK(0 == devmem_cuda_ptr_query(device_mem, &info, &e),
          "before cuInit: no pointer is device memory, since none can exist");
    CHECK(2 == calls("cuPointerGetAttributes"), "the driver was asked (%lu queries)",
          calls("cuPointerGetAttributes"));
    CHECK(0 == calls("cuInit"), "and not started by the queries (cuInit %lu times)",
          calls("cuInit"));

    /* the application starts the driver (cudaSetDevice, cudaMalloc...) */
    CHECK(0 == app_init(0), "the application starts the driver");
    CHECK(0 == devmem_cuda_ptr_query(&host, &info, &e), "after cuInit: a host pointer is host");
    info.ordinal = -1;
    CHECK(1 == devmem_cuda_ptr_query(device_mem, &info, &e) && 0 == info.ordinal,
          "after cuInit: device memory is found, on device %d", info.ordinal);
    CHECK(1 == calls("cuInit"), "still only the application's cuInit (%lu)", calls("cuInit"));

    /* the component's own start, for locality or a pool, asks the driver once more */
    CHECK(0 != devmem_cuda_device_count(&n, &e), "no device behind the stand-in: %s", e.msg);
    CHECK(2 == calls("cuInit"), "the component starts it only when it needs a device (%lu)",
          calls("cuInit"));

    /* a driver that found no device here: no pointer of the process can be device memory */
    unsigned long asked = calls("cuPointerGetAttributes");
    CHECK(0 == devmem_cuda_ptr_query(device_mem, &info, &e)
              && asked == calls("cuPointerGetAttributes"),
          "with no device found, a pointer is host memory without asking the driver");
    return check_finish();
}
