/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point with GPU buffers: rank 0's buffers live in memory of kind -a, rank 1's in
 * memory of kind -b (D: CUDA device memory, H: host memory); rank 0 sends every size to
 * rank 1, which checks every byte and sends it back, and rank 0 checks again. Device data is
 * written and read through the CUDA driver (loaded at run time), never by the CPU.
 *
 * Open MPI without CUDA support needs contrib/devmem-device-buffers.conf (every non-empty
 * message through RGET). Exits 77 on every rank when a D side has no GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "cudrv.h"

static char kind[2] = {'D', 'D'};

static int opt_cb(int opt, const char *arg)
{
    if (('a' != opt && 'b' != opt) || NULL == arg || ('D' != arg[0] && 'H' != arg[0])
        || '\0' != arg[1]) {
        return -1;
    }
    kind[opt - 'a'] = arg[0];
    return 0;
}

/* A buffer of len bytes in memory of kind k. */
static void *buf_alloc(char k, size_t len)
{
    struct devmem_err e;
    uint64_t addr;

    if ('H' == k) {
        return xmalloc(len);
    }
    if (0 != devmem_cuda_alloc(0, len, &addr, &e)) {
        test_die("%s", e.msg);
    }
    return (void *) (uintptr_t) addr;
}

/* Copy between host memory and a buffer of kind k. */
static void to_buf(char k, void *dst, const void *src, size_t len)
{
    struct devmem_err e;

    if ('H' == k) {
        memcpy(dst, src, len);
    } else if (len > 0 && 0 != devmem_cuda_copy(0, dst, src, len, &e)) {
        test_die("%s", e.msg);
    }
}

static void from_buf(char k, void *dst, const void *src, size_t len)
{
    to_buf(k, dst, src, len);
}

int main(int argc, char **argv)
{
    static const size_t base[] = {0, 1, 7, 100, 4096, 65536 + 3, (1u << 20) + 1,
                                  (4u << 20) - 5, (16u << 20) + 9};
    struct devmem_err e;
    size_t sizes[16], nsizes = 0, total = 0;
    unsigned char *host;
    void *buf;
    char mine;
    int ngpu = 0, have, all;

    test_init(&argc, &argv, "gpubuf", (size_t) 64 << 20, 1, "a:b:",
              "  -a D|H   rank 0's buffers (default D)\n  -b D|H   rank 1's buffers (default D)\n",
              opt_cb);
    if (2 != test_size) {
        test_die("needs exactly 2 ranks");
    }
    mine = kind[test_rank];
    have = 'H' == mine || 0 == devmem_cuda_device_count(&ngpu, &e);
    MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (!have) {
            printf("gpubuf: SKIP: rank %d: %s\n", test_rank, e.msg);
        }
        MPI_Finalize();
        return 77;
    }
    for (size_t i = 0; i < sizeof(base) / sizeof(base[0]); i++) {
        if (base[i] <= test_opt.max_size) {
            sizes[nsizes++] = base[i];
        }
    }
    sizes[nsizes++] = test_opt.max_size;
    host = xmalloc(test_opt.max_size);
    buf = buf_alloc(mine, test_opt.max_size);
    for (size_t i = 0; i < nsizes; i++) {
        size_t len = sizes[i];

        if (0 == test_rank) {
            pat_fill(host, len, 0, 1, i, 0);
            to_buf(mine, buf, host, len);
            MPI_Send(buf, (int) len, MPI_BYTE, 1, (int) i, MPI_COMM_WORLD);
            memset(host, 0xee, len);
            to_buf(mine, buf, host, len); /* the echo must overwrite all of it */
            MPI_Recv(buf, (int) len, MPI_BYTE, 1, (int) i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            from_buf(mine, host, buf, len);
            pat_check(host, len, 0, 1, i, 0, "echo from rank 1");
        } else {
            memset(host, 0xee, len);
            to_buf(mine, buf, host, len);
            MPI_Recv(buf, (int) len, MPI_BYTE, 0, (int) i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            from_buf(mine, host, buf, len);
            pat_check(host, len, 0, 1, i, 0, "message from rank 0");
            MPI_Send(buf, (int) len, MPI_BYTE, 0, (int) i, MPI_COMM_WORLD);
        }
        total += 2 * len;
    }
    if ('D' == mine) {
        devmem_cuda_free(0, (uint64_t) (uintptr_t) buf);
    } else {
        free(buf);
    }
    free(host);
    return test_finish("buffers %c %c, %zu sizes 0..%zu B, %.1f MiB checked", kind[0], kind[1],
                       nsizes, test_opt.max_size, (double) total / (1 << 20));
}
