/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A stand-in NVIDIA driver, built as libcuda.so.1 for the tests, that counts what it is
 * asked. It has every entry point the component looks up and behaves as a driver does
 * before and after cuInit: until then pointer queries fail with CUDA_ERROR_NOT_INITIALIZED;
 * after it, every pointer is host memory except one range a test may declare device memory
 * (fake_cuda_device_range). Everything else fails with CUDA_ERROR_NO_DEVICE.
 *
 * Built with -DFAKE_CUDA_BEFORE_11_7 it is a driver older than CUDA 11.7: no
 * cuMemGetHandleForAddressRange, so no dmabuf export. fake_cuda_devices(n) makes n devices
 * visible after cuInit (none by default).
 *
 * FAKE_CUDA_LOG=FILE: at exit, append "pid cuInit=N cuPointerGetAttributes=M" to FILE (the
 * MPI test reads what each rank asked).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOT_INITIALIZED 3
#define NO_DEVICE 100
#define MEMORYTYPE_DEVICE 2
#define ATTR_MEMORY_TYPE 2
#define ATTR_DEVICE_ORDINAL 9

static int initialised, ndevices;
static unsigned long init_calls, attr_calls;
static uintptr_t dev_base, dev_len;

unsigned long fake_cuda_calls(const char *name)
{
    return 0 == strcmp(name, "cuInit") ? init_calls
           : 0 == strcmp(name, "cuPointerGetAttributes") ? attr_calls : 0;
}

void fake_cuda_device_range(const void *base, size_t len)
{
    dev_base = (uintptr_t) base;
    dev_len = len;
}

void fake_cuda_devices(int n)
{
    ndevices = n;
}

int cuInit(unsigned int flags)
{
    (void) flags;
    init_calls++;
    initialised = 1;
    return 0;
}

int cuDeviceGetCount(int *n)
{
    if (!initialised) {
        return NOT_INITIALIZED;
    }
    *n = ndevices;
    return 0;
}

int cuPointerGetAttributes(unsigned int n, int *attrs, void **data, unsigned long long ptr)
{
    int device = ptr - dev_base < dev_len;

    attr_calls++;
    if (!initialised) {
        return NOT_INITIALIZED;
    }
    for (unsigned int i = 0; i < n; i++) {
        /* every attribute the component asks for fits in 8 bytes and it zeroes them */
        if (ATTR_MEMORY_TYPE == attrs[i]) {
            *(uint32_t *) data[i] = device ? MEMORYTYPE_DEVICE : 0;
        } else if (ATTR_DEVICE_ORDINAL == attrs[i]) {
            *(uint32_t *) data[i] = 0;
        }
    }
    return 0;
}

int cuGetErrorString(int res, const char **s)
{
    *s = NOT_INITIALIZED == res ? "initialization error (stand-in driver)"
                                : "no CUDA-capable device (stand-in driver)";
    return 0;
}

/* the rest: present, and there is no device */
#define NO_DEVICE_FN(name)                                                                 \
    int name(void)                                                                         \
    {                                                                                      \
        return initialised ? NO_DEVICE : NOT_INITIALIZED;                                  \
    }
NO_DEVICE_FN(cuDeviceGet)
NO_DEVICE_FN(cuDeviceGetAttribute)
NO_DEVICE_FN(cuDeviceGetPCIBusId)
NO_DEVICE_FN(cuDevicePrimaryCtxRetain)
NO_DEVICE_FN(cuCtxPushCurrent_v2)
NO_DEVICE_FN(cuCtxPopCurrent_v2)
NO_DEVICE_FN(cuCtxGetDevice)
NO_DEVICE_FN(cuMemAlloc_v2)
NO_DEVICE_FN(cuMemFree_v2)
NO_DEVICE_FN(cuMemcpyAsync)
NO_DEVICE_FN(cuMemcpyHtoDAsync_v2)
NO_DEVICE_FN(cuStreamCreate)
NO_DEVICE_FN(cuStreamSynchronize)
NO_DEVICE_FN(cuEventCreate)
NO_DEVICE_FN(cuEventRecord)
NO_DEVICE_FN(cuEventQuery)
NO_DEVICE_FN(cuEventSynchronize)
NO_DEVICE_FN(cuEventDestroy_v2)
NO_DEVICE_FN(cuModuleLoadData)
NO_DEVICE_FN(cuModuleGetFunction)
NO_DEVICE_FN(cuLaunchKernel)
#ifndef FAKE_CUDA_BEFORE_11_7
NO_DEVICE_FN(cuMemGetHandleForAddressRange)
#endif

__attribute__((destructor)) static void report(void)
{
    const char *path = getenv("FAKE_CUDA_LOG");
    char line[128];
    int fd, n;

    if (NULL == path || '\0' == path[0]) {
        return;
    }
    n = snprintf(line, sizeof(line), "%d cuInit=%lu cuPointerGetAttributes=%lu\n",
                 (int) getpid(), init_calls, attr_calls);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void) !write(fd, line, (size_t) n);
        close(fd);
    }
}
