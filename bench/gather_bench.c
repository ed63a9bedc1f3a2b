/* SPDX-License-Identifier: BSD-3-Clause */
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
 * Then what a receiving rank waits for: receives of 4 KiB to 1 MiB made of packet payloads
 * (4044 bytes, MTU 4096 less headers, each at the start of its own 4 KiB page of the pool,
 * as header split leaves them), gathered through the component's copier one receive at a
 * time (depth 1: submit, then wait, the cost model's gather wait per receive) and with up to
 * 4 receives gathering at once (depth 4: btl_devmem_gather_depth's pipelined receiver, where
 * the thread waits only for the oldest). Reported in microseconds per receive, median of
 * the runs; every destination byte is checked after each depth.
 *
 *   gather_bench [-t TOTAL_MIB] [-r RUNS] [-u] [-H]  -u: unaligned pieces (offsets and lengths
 *                                                    not multiples of 16); -H: the receives
 *                                                    into plain host memory (a host buffer's
 *                                                    get landing in a GPU pool)
 * Exits 77 without a GPU.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "copier.h"
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

/* What every measurement shares: the GPU pool (and its host copy, the reference), the
 * destination (and zeros to clear it with), and the run's settings. */
struct bench {
    size_t total;
    int runs, unaligned, host_dst;
    uint64_t pool, dst;
    unsigned char *pool_host, *want, *got, *zeros;
};

static int parse_args(struct bench *b, int argc, char **argv)
{
    int opt;

    b->total = (size_t) 64 << 20;
    b->runs = 11;
    b->unaligned = 0;
    while (-1 != (opt = getopt(argc, argv, "t:r:uH"))) {
        switch (opt) {
        case 't': b->total = (size_t) strtoul(optarg, NULL, 10) << 20; break;
        case 'r': b->runs = atoi(optarg); break;
        case 'u': b->unaligned = 1; break;
        case 'H': b->host_dst = 1; break;
        default:
            fprintf(stderr, "usage: %s [-t TOTAL_MIB] [-r RUNS] [-u] [-H]\n", argv[0]);
            return 2;
        }
    }
    if (b->runs < 1 || b->runs > 1000 || b->total < (1u << 20) || b->total > POOL / 2) {
        fprintf(stderr, "gather_bench: runs 1..1000, total 1..%zu MiB\n", POOL / 2 >> 20);
        return 2;
    }
    return 0;
}

/* The pool on GPU 0 filled with random bytes, kept on the host too as the reference. 0, 77
 * without a GPU, 1 on an error. */
static int setup(struct bench *b)
{
    struct devmem_err err;
    int n = 0;

    if (0 != devmem_cuda_device_count(&n, &err)) {
        printf("gather_bench: SKIP: %s\n", err.msg);
        return 77;
    }
    b->pool_host = malloc(POOL);
    b->want = malloc(b->total);
    b->got = malloc(b->total);
    b->zeros = calloc(1, b->total);
    if (NULL == b->pool_host || NULL == b->want || NULL == b->got || NULL == b->zeros) {
        fprintf(stderr, "gather_bench: out of memory\n");
        return 1;
    }
    if (0 != devmem_cuda_alloc(0, POOL, &b->pool, &err)
        || 0 != devmem_cuda_alloc(0, b->total, &b->dst, &err)) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return 1;
    }
    for (size_t i = 0; i < POOL; i++) {
        b->pool_host[i] = (unsigned char) (next() >> 40);
    }
    if (0 != devmem_cuda_copy(0, (void *) (uintptr_t) b->pool, b->pool_host, POOL, &err)) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* One gather of the pieces after a cleared destination, compared byte for byte with the
 * host reference (the first launch also loads the kernel: a warm-up). 0 or 1. */
static int check_gather(struct bench *b, struct devmem_copy *ops, size_t np, size_t size)
{
    struct devmem_err err;
    size_t bytes = 0;

    for (size_t i = 0; i < np; i++) {
        memcpy(b->want + bytes, b->pool_host + ((uintptr_t) ops[i].src - b->pool), ops[i].len);
        bytes += ops[i].len;
    }
    if (0 != devmem_cuda_copy(0, (void *) (uintptr_t) b->dst, b->zeros, b->total, &err)
        || 0 != devmem_cuda_copy_batch(0, ops, np, 1, &err)
        || 0 != devmem_cuda_copy(0, b->got, (const void *) (uintptr_t) b->dst, bytes, &err)) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return 1;
    }
    if (0 != memcmp(b->want, b->got, bytes)) {
        fprintf(stderr, "gather_bench: the gather of %zu-byte pieces is WRONG\n", size);
        return 1;
    }
    return 0;
}

/* The three ways, interleaved run by run so that a slow moment hits all of them; one
 * printed row of medians. 0 or 1. */
static int measure(struct bench *b, size_t size)
{
    size_t max = b->total / (size / 2) + 1, np = 0, bytes = 0;
    struct devmem_copy *ops = malloc(max * sizeof(*ops)), whole;
    double *tk = malloc(sizeof(double) * (size_t) b->runs);
    double *tm = malloc(sizeof(double) * (size_t) b->runs);
    double *tp = malloc(sizeof(double) * (size_t) b->runs);
    struct devmem_err err;
    int failed = NULL == ops || NULL == tk || NULL == tm || NULL == tp;

    if (!failed) {
        np = make_pieces(ops, max, b->pool, b->dst, size, b->total, b->unaligned);
        for (size_t i = 0; i < np; i++) {
            bytes += ops[i].len;
        }
        whole.dst = (void *) (uintptr_t) b->dst;
        whole.src = (const void *) (uintptr_t) b->pool;
        whole.len = bytes;
        failed = check_gather(b, ops, np, size);
    }
    for (int r = 0; r < b->runs && !failed; r++) {
        double t0 = now();

        failed |= 0 != devmem_cuda_copy_batch(0, ops, np, 1, &err);
        tk[r] = now() - t0;
        t0 = now();
        failed |= 0 != devmem_cuda_copy_batch(0, ops, np, 0, &err);
        tm[r] = now() - t0;
        t0 = now();
        failed |= 0 != devmem_cuda_copy_batch(0, &whole, 1, 0, &err);
        tp[r] = now() - t0;
        if (failed) {
            fprintf(stderr, "gather_bench: %s\n", err.msg);
        }
    }
    if (!failed) {
        double k = median_gbps(tk, b->runs, bytes), m = median_gbps(tm, b->runs, bytes);
        double p = median_gbps(tp, b->runs, bytes);

        printf("%-8zu %8zu %12.1f %12.1f %12.1f %10.2f\n", size, np, k, m, p, k / p);
    }
    free(ops);
    free(tk);
    free(tm);
    free(tp);
    return failed;
}

/* ---------------------------------------------------------------- per receive */

#define PKT_PAYLOAD 4044 /* MTU 4096 less IPv4, TCP and timestamps */
#define PKT_PAGE 4096
#define RECEIVES 64

/* Every receive's packets, from random pages of the pool into dst + i * rsize, contiguous,
 * and the reference (b->want) they must produce; made before the clock starts. */
static struct devmem_copy *make_receives(struct bench *b, size_t rsize, int host_dst,
                                         size_t *per_recv)
{
    uint64_t base = host_dst ? (uint64_t) (uintptr_t) b->got : b->dst;
    size_t np = (rsize + PKT_PAYLOAD - 1) / PKT_PAYLOAD, k = 0;
    struct devmem_copy *ops = malloc((size_t) RECEIVES * np * sizeof(*ops));

    if (NULL == ops) {
        return NULL;
    }
    for (size_t i = 0; i < RECEIVES; i++) {
        for (size_t at = 0; at < rsize; at += PKT_PAYLOAD, k++) {
            size_t len = rsize - at < PKT_PAYLOAD ? rsize - at : PKT_PAYLOAD;
            uint64_t off = (next() % (POOL / PKT_PAGE)) * PKT_PAGE;

            ops[k].dst = (void *) (uintptr_t) (base + i * rsize + at);
            ops[k].src = (const void *) (uintptr_t) (b->pool + off);
            ops[k].len = len;
            memcpy(b->want + i * rsize + at, b->pool_host + off, len);
        }
    }
    *per_recv = np;
    return ops;
}

/* RECEIVES receives of rsize bytes through the copier, at most depth of them gathering at
 * once, into device memory or (host_dst) an application's plain host memory; the time per
 * receive (s), or a negative value on an error or a wrong byte. */
static double receive_run(struct bench *b, size_t rsize, size_t depth, int host_dst)
{
    struct devmem_copier c;
    struct devmem_err err;
    uint64_t tickets[RECEIVES];
    size_t oldest = 0, bytes = (size_t) RECEIVES * rsize, np = 0;
    struct devmem_copy *ops = make_receives(b, rsize, host_dst, &np);
    int failed = NULL == ops;
    double t0, t;

    if (failed) {
        fprintf(stderr, "gather_bench: out of memory\n");
        return -1;
    }
    devmem_copier_init(&c);
    if (host_dst) {
        memset(b->got, 0, bytes);
    } else {
        failed = 0 != devmem_cuda_copy(0, (void *) (uintptr_t) b->dst, b->zeros, bytes, &err);
    }
    t0 = now();
    for (size_t i = 0; i < RECEIVES && !failed; i++) {
        for (size_t k = i * np; k < (i + 1) * np && !failed; k++) {
            failed = 0 != devmem_copier_add(&c, ops[k].dst, !host_dst, ops[k].src, 1,
                                            ops[k].len, 0, &err);
        }
        failed = failed || 0 != devmem_copier_submit(&c, &tickets[i], &err);
        /* the receiver's rule: it takes the next receive only while fewer than depth of
         * its gathers are unfinished (depth 1: it waits for each one) */
        while (!failed && i + 1 - oldest >= depth) {
            failed = 0 != devmem_copier_wait(&c, tickets[oldest++], &err);
        }
    }
    while (!failed && oldest < RECEIVES) {
        failed = 0 != devmem_copier_wait(&c, tickets[oldest++], &err);
    }
    t = now() - t0;
    devmem_copier_fini(&c);
    free(ops);
    if (!failed && !host_dst) {
        failed = 0 != devmem_cuda_copy(0, b->got, (const void *) (uintptr_t) b->dst, bytes, &err);
    }
    if (failed) {
        fprintf(stderr, "gather_bench: %s\n", err.msg);
        return -1;
    }
    if (0 != memcmp(b->want, b->got, bytes)) {
        fprintf(stderr, "gather_bench: receives of %zu bytes at depth %zu gathered WRONG\n",
                rsize, depth);
        return -1;
    }
    return t / RECEIVES;
}

/* One row: a receive size at depth 1 and 4, interleaved run by run. 0 or 1. */
static int measure_receives(struct bench *b, size_t rsize)
{
    double *t1 = malloc(sizeof(double) * (size_t) b->runs);
    double *t4 = malloc(sizeof(double) * (size_t) b->runs);
    int failed = NULL == t1 || NULL == t4;

    failed = failed || receive_run(b, rsize, 1, b->host_dst) < 0; /* warm-up */
    for (int r = 0; r < b->runs && !failed; r++) {
        failed = (t1[r] = receive_run(b, rsize, 1, b->host_dst)) < 0
                 || (t4[r] = receive_run(b, rsize, 4, b->host_dst)) < 0;
    }
    if (!failed) {
        qsort(t1, (size_t) b->runs, sizeof(*t1), cmp_double);
        qsort(t4, (size_t) b->runs, sizeof(*t4), cmp_double);
        printf("%-8zu %8zu %14.1f %14.1f %12.1f %12.1f\n", rsize >> 10,
               (rsize + PKT_PAYLOAD - 1) / PKT_PAYLOAD, t1[b->runs / 2] * 1e6,
               t4[b->runs / 2] * 1e6, (double) rsize / t1[b->runs / 2] / 1e9,
               (double) rsize / t4[b->runs / 2] / 1e9);
    }
    free(t1);
    free(t4);
    return failed;
}

/* ---------------------------------------------------------------- launch ways per MiB */

/* The ways to launch a gather (devmem_cuda_set_way's), compared on what a receiving thread
 * gathers: batches of packet payloads. The ways tried and not kept (the piece array
 * uploaded, cuMemcpyBatchAsync, a persistent kernel polling a ring) and their figures are in
 * doc/cost-model.md. */
#define NWAYS DEVMEM_CUDA_WAYS
#define WAY_DEPTH 4       /* batches in flight, as btl_devmem_gather_depth's default */

/* the names devmem_cuda_way_by_name knows them by */
static const char *const way_name[NWAYS] = {
    [DEVMEM_CUDA_WAY_KERNEL] = "kernel",
    [DEVMEM_CUDA_WAY_MEMCPY] = "memcpy",
};

/* Every packet of b->total bytes: a 4044-byte payload at the start of a random page of the
 * pool, laid end to end in the destination; the reference in b->want. */
static struct devmem_copy *make_packets(struct bench *b, size_t *n)
{
    size_t count = (b->total + PKT_PAYLOAD - 1) / PKT_PAYLOAD, at = 0;
    struct devmem_copy *ops = malloc(count * sizeof(*ops));

    for (size_t i = 0; NULL != ops && i < count; i++, at += PKT_PAYLOAD) {
        size_t len = b->total - at < PKT_PAYLOAD ? b->total - at : PKT_PAYLOAD;
        uint64_t off = (next() % (POOL / PKT_PAGE)) * PKT_PAGE;

        ops[i].dst = (void *) (uintptr_t) (b->dst + at);
        ops[i].src = (const void *) (uintptr_t) (b->pool + off);
        ops[i].len = len;
        memcpy(b->want + at, b->pool_host + off, len);
    }
    *n = count;
    return ops;
}

/* Start one batch: 0 or -errno. */
static int way_start(const struct devmem_copy *ops, size_t n, void **fence,
                     struct devmem_err *err)
{
    int rc = devmem_cuda_copy_start(0, ops, n, 1, err);

    return 0 != rc ? rc : devmem_cuda_fence(0, fence, err);
}

static int way_wait(void *fence, struct devmem_err *err)
{
    return 1 == devmem_cuda_fence_test(0, fence, 1, err) ? 0 : -EIO;
}

/* Every packet through one way in batches of batch_bytes, at most WAY_DEPTH of them in
 * flight; every destination byte checked after. The pass's seconds (*cpu: those spent in
 * the calls that start batches, what a receiving thread pays), or -1. */
static double way_pass(struct bench *b, const struct devmem_copy *ops, size_t n, int way,
                       size_t batch_bytes, double *cpu, size_t *batches)
{
    void *fence[WAY_DEPTH] = {NULL};
    size_t issued = 0, oldest = 0;
    struct devmem_err err = {0};
    double t0, t;
    int rc;

    *cpu = 0;
    rc = devmem_cuda_copy(0, (void *) (uintptr_t) b->dst, b->zeros, b->total, &err);
    if (0 == rc) {
        rc = devmem_cuda_set_way(way, &err);
    }
    t0 = now();
    for (size_t first = 0, last; 0 == rc && first < n; first = last) {
        size_t bytes = 0, slot = issued % WAY_DEPTH;

        for (last = first; last < n && bytes < batch_bytes; last++) {
            bytes += ops[last].len;
        }
        if (issued - oldest == WAY_DEPTH) {
            rc = way_wait(fence[oldest % WAY_DEPTH], &err);
            oldest++;
        }
        if (0 == rc) {
            t = now();
            rc = way_start(ops + first, last - first, &fence[slot], &err);
            *cpu += now() - t;
            issued += 0 == rc;
        }
    }
    while (0 == rc && oldest < issued) {
        rc = way_wait(fence[oldest % WAY_DEPTH], &err);
        oldest++;
    }
    t = now() - t0;
    (void) devmem_cuda_set_way(DEVMEM_CUDA_WAY_DEFAULT, NULL);
    rc = 0 != rc ? rc
                 : devmem_cuda_copy(0, b->got, (const void *) (uintptr_t) b->dst, b->total,
                                    &err);
    if (0 != rc) {
        fprintf(stderr, "gather_bench: way %s: %s\n", way_name[way], err.msg);
        return -1;
    }
    if (0 != memcmp(b->want, b->got, b->total)) {
        fprintf(stderr, "gather_bench: way %s gathered WRONG bytes (batches of %zu KiB)\n",
                way_name[way], batch_bytes >> 10);
        return -1;
    }
    *batches = issued;
    return t;
}

/* Which ways run here: the kernel where this GPU's driver can load it, a copy per piece
 * everywhere. */
static void ways_available(int *ok)
{
    struct devmem_err err;

    for (int w = 0; w < DEVMEM_CUDA_WAYS; w++) {
        ok[w] = 0 == devmem_cuda_set_way(w, &err)
                && (DEVMEM_CUDA_WAY_KERNEL != w || 0 == devmem_cuda_gather_prepare(0, &err));
        if (!ok[w]) {
            printf("# way %s: not measured: %s\n", way_name[w], err.msg);
        }
    }
    (void) devmem_cuda_set_way(DEVMEM_CUDA_WAY_DEFAULT, NULL);
}

/* One block of rows: every way for one batch size, interleaved run by run. 0 or 1. */
static int measure_ways(struct bench *b, const struct devmem_copy *ops, size_t n,
                        const int *ok, size_t batch_bytes)
{
    double cpu[NWAYS][64], wall[NWAYS][64];
    size_t batches[NWAYS] = {0};
    int runs = b->runs < 64 ? b->runs : 64;
    double mib = (double) b->total / (1 << 20);

    for (int r = 0; r < runs; r++) {
        for (int w = 0; w < NWAYS; w++) {
            if (ok[w] && (wall[w][r] = way_pass(b, ops, n, w, batch_bytes, &cpu[w][r],
                                                &batches[w])) < 0) {
                return 1;
            }
        }
    }
    for (int w = 0; w < NWAYS; w++) {
        if (!ok[w]) {
            continue;
        }
        qsort(cpu[w], (size_t) runs, sizeof(double), cmp_double);
        qsort(wall[w], (size_t) runs, sizeof(double), cmp_double);
        printf("%-9zu %-14s %10.2f %12.1f %12.1f %8.1f %10.1f\n", batch_bytes >> 10,
               way_name[w], (double) batches[w] / mib, cpu[w][runs / 2] * 1e6 / mib,
               wall[w][runs / 2] * 1e6 / mib, (double) b->total / wall[w][runs / 2] / 1e9,
               cpu[w][runs / 2] * 1e6 / (double) batches[w]);
    }
    return 0;
}

/* The launch ways for batches of 128 KiB, 512 KiB and 2 MiB (the component's batch cap is
 * an eighth of the pool). 0 or 1. */
static int measure_launch_ways(struct bench *b)
{
    static const size_t batch[] = {128 << 10, 512 << 10, 2 << 20};
    int ok[NWAYS], rc = 0;
    size_t n = 0;
    struct devmem_copy *ops = make_packets(b, &n);

    if (NULL == ops) {
        fprintf(stderr, "gather_bench: out of memory\n");
        return 1;
    }
    ways_available(ok);
    printf("# launch ways: %zu MiB of %d-byte packet payloads (a %d-byte page each), in "
           "batches, %d batches in flight; per MiB: batches, microseconds in the calls that "
           "start them (cpu) and for the whole pass (wall); median of %d runs\n",
           b->total >> 20, PKT_PAYLOAD, PKT_PAGE, WAY_DEPTH, b->runs < 64 ? b->runs : 64);
    printf("%-9s %-14s %10s %12s %12s %8s %10s\n", "batch_KiB", "way", "batches/MiB",
           "cpu_us/MiB", "wall_us/MiB", "GB/s", "cpu_us/batch");
    for (size_t i = 0; i < sizeof(batch) / sizeof(batch[0]) && 0 == rc; i++) {
        rc = measure_ways(b, ops, n, ok, batch[i]);
    }
    free(ops);
    return rc;
}

int main(int argc, char **argv)
{
    static const size_t sizes[] = {1024, 4096, 16384, 65536};
    struct bench b = {0};
    int rc = parse_args(&b, argc, argv);

    setvbuf(stdout, NULL, _IOLBF, 0); /* every line out, even if a timeout kills us */
    if (0 == rc) {
        rc = setup(&b);
    }
    if (0 == rc) {
        printf("# gather of %zu MiB from a %zu MiB GPU pool, %s pieces, median of %d runs\n",
               b.total >> 20, POOL >> 20, b.unaligned ? "unaligned" : "16-byte aligned", b.runs);
        printf("%-8s %8s %12s %12s %12s %10s\n", "frag", "pieces", "kernel_GB/s",
               "memcpy_GB/s", "plain_GB/s", "kernel/plain");
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && 0 == rc; s++) {
            rc = measure(&b, sizes[s]);
        }
    }
    if (0 == rc) {
        static const size_t rsizes[] = {4 << 10, 64 << 10, 256 << 10, 1 << 20};

        printf("# receives of %d-byte packet payloads (4 KiB pages of the pool) into %s memory, "
               "%d receives a run, through the copier; median of %d runs\n", PKT_PAYLOAD,
               b.host_dst ? "plain host" : "device", RECEIVES, b.runs);
        printf("%-8s %8s %14s %14s %12s %12s\n", "recv_KiB", "packets", "depth1_us/recv",
               "depth4_us/recv", "depth1_GB/s", "depth4_GB/s");
        for (size_t s = 0; s < sizeof(rsizes) / sizeof(rsizes[0]) && 0 == rc; s++) {
            if ((size_t) RECEIVES * rsizes[s] > b.total) {
                printf("%-8zu (a run needs -t %zu or more)\n", rsizes[s] >> 10,
                       (size_t) RECEIVES * rsizes[s] >> 20);
                continue;
            }
            rc = measure_receives(&b, rsizes[s]);
        }
    }
    if (0 == rc && !b.host_dst) {
        rc = measure_launch_ways(&b);
    }
    if (0 != b.pool) {
        devmem_cuda_free(0, b.pool);
    }
    if (0 != b.dst) {
        devmem_cuda_free(0, b.dst);
    }
    free(b.pool_host);
    free(b.want);
    free(b.got);
    free(b.zeros);
    return rc;
}
