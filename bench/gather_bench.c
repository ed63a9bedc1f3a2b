/*
 * gather_bench: how fast the receive path moves fragments out of a GPU RX pool.
 *
 * A devmem receive leaves a message in pieces scattered over the RX pool; the component
 * gathers them into the destination before it returns the tokens. This measures that
 * gather alone on one GPU, for fragment sizes from 1 to 64 KiB at random places in a
 * 256 MiB pool, three ways, each moving the same bytes:
 *   kernel   the copier's one-launch gather kernel (what the component uses)
 *   memcpy   one cuMemcpyAsync per fragment, one wait (the obvious alternative)
 *   plain    a single contiguous device-to-device copy of the same total (the ceiling)
 * and reports GB/s (bytes moved / time, read or written counted once), median of the runs.
 * Every gather is checked against a CPU reference once per fragment size.
 *
 *   gather_bench [-t TOTAL_MIB] [-r RUNS] [-u]     -u: unaligned pieces (offsets and lengths
 *                                                    not multiples of 16)
 * Exits 77 without a GPU.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "copy.h"
#include "cudrv.h"

#define POOL ((size_t) 256 << 20)

static uint64_t rng = 88172645463325252ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return x < y ? -1 : x > y;
}

/* Pieces of `size` bytes (unaligned: odd lengths from 3/4 of size up) filling total bytes of
 * the destination, their sources at random places in the pool. */
static size_t make_pieces(struct devmem_copy *ops, size_t max, uint64_t pool, uint64_t dst,
                          size_t size, size_t total, int unaligned)
{
    size_t n = 0, at = 0;

    while (n < max && at < total) {
        size_t len = size, off;

        if (unaligned) {
            len = (size - next() % (size / 4 + 1)) | 1; /* odd lengths */
            if (len > size) {
                len -= 2;
            }
        }
        if (len > total - at) {
            len = total - at;
        }
        off = (next() % (POOL / size - 1)) * size;
        if (unaligned) {
            off += 1 + next() % 15;
        }
        ops[n].dst = (void *) (uintptr_t) (dst + at);
        ops[n].src = (const void *) (uintptr_t) (pool + off);
        ops[n].len = len;
        at += len;
        n++;
    }
    return n;
}

static double median_gbps(double *t, int runs, size_t bytes)
{
    qsort(t, (size_t) runs, sizeof(*t), cmp_double);
    return (double) bytes / t[runs / 2] / 1e9;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1024, 4096, 16384, 65536};
    struct devmem_err err;
    size_t total = (size_t) 64 << 20;
    int runs = 11, unaligned = 0, opt, n = 0, failed = 0;
    uint64_t pool = 0, dst = 0;
    unsigned char *pool_host, *want, *got;

    while (-1 != (opt = getopt(argc, argv, "t:r:u"))) {
        switch (opt) {
        case 't': total = (size_t) strtoul(optarg, NULL, 10) << 20; break;
        case 'r': runs = atoi(optarg); break;
        case 'u': unaligned = 1; break;
        default:
            fprintf(stderr, "usage: %s [-t TOTAL_MIB] [-r RUNS] [-u]\n", argv[0]);
            return 2;
        }
    }
    if (runs < 1 || runs > 1000 || total < (1u << 20) || total > POOL / 2) {
        fprintf(stderr, "gather_bench: runs 1..1000, total 1..%zu MiB\n", POOL / 2 >> 20);
        return 2;
    }
    if (0 != devmem_cuda_device_count(&n, &err)) {
        printf("gather_bench: SKIP: %s\n", err.msg);
        return 77;
    }
    if (0 != devmem_cuda_alloc(0, POOL, &pool, &err) ||
        0 != devmem_cuda_alloc(0, total, &dst, &err)) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return 1;
    }
    pool_host = malloc(POOL);
    want = malloc(total);
    got = malloc(total);
    for (size_t i = 0; i < POOL; i++) {
        pool_host[i] = (unsigned char) (next() >> 40);
    }
    if (0 != devmem_cuda_copy(0, (void *) (uintptr_t) pool, pool_host, POOL, &err)) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return 1;
    }
    printf("# gather of %zu MiB from a %zu MiB GPU pool, %s pieces, median of %d runs\n",
           total >> 20, POOL >> 20, unaligned ? "unaligned" : "16-byte aligned", runs);
    printf("%-8s %8s %12s %12s %12s %10s\n", "frag", "pieces", "kernel_GB/s", "memcpy_GB/s",
           "plain_GB/s", "kernel/plain");
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !failed; s++) {
        size_t max = total / (sizes[s] / 2) + 1, np;
        struct devmem_copy *ops = malloc(max * sizeof(*ops)), whole;
        double *tk = malloc(sizeof(double) * (size_t) runs), *tm = malloc(sizeof(double) * (size_t) runs);
        double *tp = malloc(sizeof(double) * (size_t) runs);
        size_t bytes = 0;

        np = make_pieces(ops, max, pool, dst, sizes[s], total, unaligned);
        for (size_t i = 0; i < np; i++) {
            memcpy(want + bytes, pool_host + ((uintptr_t) ops[i].src - pool), ops[i].len);
            bytes += ops[i].len;
        }
        whole.dst = (void *) (uintptr_t) dst;
        whole.src = (const void *) (uintptr_t) pool;
        whole.len = bytes;
        /* warm up (loads the kernel), then check the result */
        if (0 != devmem_cuda_memset(0, dst, 0, total, &err) ||
            0 != devmem_cuda_copy_batch(0, ops, np, 1, &err) ||
            0 != devmem_cuda_copy(0, got, (const void *) (uintptr_t) dst, bytes, &err)) {
            fprintf(stderr, "gather_bench: %s\n", err.msg);
            failed = 1;
            break;
        }
        if (0 != memcmp(want, got, bytes)) {
            fprintf(stderr, "gather_bench: the gather of %zu-byte pieces is WRONG\n", sizes[s]);
            failed = 1;
            break;
        }
        for (int r = 0; r < runs && !failed; r++) {
            double t0 = now();
            failed |= 0 != devmem_cuda_copy_batch(0, ops, np, 1, &err);
            tk[r] = now() - t0;
            t0 = now();
            failed |= 0 != devmem_cuda_copy_batch(0, ops, np, 0, &err);
            tm[r] = now() - t0;
            t0 = now();
            failed |= 0 != devmem_cuda_copy_batch(0, &whole, 1, 0, &err);
            tp[r] = now() - t0;
        }
        if (failed) {
            fprintf(stderr, "gather_bench: %s\n", err.msg);
            break;
        }
        {
            double k = median_gbps(tk, runs, bytes), m = median_gbps(tm, runs, bytes);
            double p = median_gbps(tp, runs, bytes);

            printf("%-8zu %8zu %12.1f %12.1f %12.1f %10.2f\n", sizes[s], np, k, m, p, k / p);
        }
        free(ops);
        free(tk);
        free(tm);
        free(tp);
    }
    devmem_cuda_free(0, pool);
    devmem_cuda_free(0, dst);
    free(pool_host);
    free(want);
    free(got);
    return failed;
}
