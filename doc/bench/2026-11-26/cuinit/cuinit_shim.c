/* Starts the CUDA driver before main, as a GPU application would (cudaSetDevice). */
#include <dlfcn.h>
#include <stdio.h>
__attribute__((constructor)) static void start(void)
{
    void *l = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    int (*init)(unsigned) = l ? (int (*)(unsigned)) dlsym(l, "cuInit") : NULL;
    int (*get)(int *, int) = l ? (int (*)(int *, int)) dlsym(l, "cuDeviceGet") : NULL;
    int (*retain)(void **, int) = l ? (int (*)(void **, int)) dlsym(l, "cuDevicePrimaryCtxRetain") : NULL;
    int (*push)(void *) = l ? (int (*)(void *)) dlsym(l, "cuCtxPushCurrent_v2") : NULL;
    int dev = 0; void *ctx = NULL;
    if (!init || init(0) || get(&dev, 0) || retain(&ctx, dev) || push(ctx))
        fprintf(stderr, "cuinit_shim: could not start CUDA\n");
}
