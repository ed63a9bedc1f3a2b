/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives with checked results:
 *   MPI_Bcast from every root, sizes from 1 B to -m (default 4 MiB);
 *   MPI_Allreduce: MPI_SUM over int64 and over doubles holding integers below 2^40 (both
 *     exact, checked against a sum each rank computes itself), MPI_MAX over int, in place and not;
 *   MPI_Alltoallv with irregular byte counts (zeros, odd sizes, some large) and gaps between the
 *     blocks of both buffers (the receive gaps must stay untouched);
 *   MPI_Allgather of pattern blocks, small to -m / ranks;
 *   a ring: every rank sends -m bytes to the next and receives from the one before
 *     (MPI_Sendrecv), each step passing on what it got, until every block has gone round.
 * Repeated -i times (default 2) with fresh message indices.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALL (-1)          /* "receiver" in the pattern of a message meant for every rank */
#define RECV_FILL 0xa5
#define GAP 13            /* bytes between Alltoallv blocks */

static unsigned long long nchecks, nbytes;

static void do_bcast(int it, uint8_t *buf)
{
    size_t sizes[] = {1, 13, 4097, 65537, 1000003, test_opt.max_size};

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t len = sizes[si] > test_opt.max_size ? test_opt.max_size : sizes[si];
        for (int root = 0; root < test_size; root++) {
            uint64_t idx = ((uint64_t)it << 40) | ((uint64_t)1 << 32) | (si << 8) | (uint64_t)root;
            char desc[256];
            if (test_rank == root) {
                pat_fill(buf, len, root, ALL, idx, 0);
            } else {
                memset(buf, RECV_FILL, len);
            }
            MPI_Bcast(buf, (int)len, MPI_BYTE, root, MPI_COMM_WORLD);
            if (test_rank != root) {
                snprintf(desc, sizeof(desc), "Bcast of %zu bytes from root %d", len, root);
                pat_check(buf, len, root, ALL, idx, 0, desc);
                nchecks++;
                nbytes += len;
            }
        }
    }
}

static int64_t contrib_i64(int rank, int it, size_t i)
{
    /* below 2^40, so sums over any realistic rank count stay exact */
    return (int64_t)(test_hash((uint64_t)rank, (uint64_t)it, i) & ((1ULL << 40) - 1)) -
           (int64_t)(1ULL << 39);
}

static void do_allreduce(int it)
{
    size_t counts[] = {1, 7, 1000, test_opt.max_size / 8 / 4};

    for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
        size_t n = counts[ci] ? counts[ci] : 1;
        int64_t *in = xmalloc(n * sizeof(int64_t)), *out = xmalloc(n * sizeof(int64_t));
        double *din = xmalloc(n * sizeof(double)), *dout = xmalloc(n * sizeof(double));
        int *iin = xmalloc(n * sizeof(int)), *iout = xmalloc(n * sizeof(int));

        for (size_t i = 0; i < n; i++) {
            in[i] = contrib_i64(test_rank, it, i);
            din[i] = (double)in[i];
            iin[i] = (int)(test_hash((uint64_t)test_rank, (uint64_t)it + 77, i) & 0x7fffffff);
            out[i] = 0x5555;
        }
        MPI_Allreduce(in, out, (int)n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        memcpy(dout, din, n * sizeof(double));
        MPI_Allreduce(MPI_IN_PLACE, dout, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(iin, iout, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);

        for (size_t i = 0; i < n; i++) {
            int64_t sum = 0;
            int max = 0;
            for (int r = 0; r < test_size; r++) {
                int v = (int)(test_hash((uint64_t)r, (uint64_t)it + 77, i) & 0x7fffffff);
                sum += contrib_i64(r, it, i);
                max = v > max ? v : max;
            }
            if (out[i] != sum) {
                test_die("Allreduce(SUM, int64) of %zu elements: element %zu is %lld, expected "
                         "%lld", n, i, (long long)out[i], (long long)sum);
            }
            if (dout[i] != (double)sum) {
                test_die("Allreduce(SUM, double, in place) of %zu elements: element %zu is %.17g,"
                         " expected %lld", n, i, dout[i], (long long)sum);
            }
            if (iout[i] != max) {
                test_die("Allreduce(MAX, int) of %zu elements: element %zu is %d, expected %d", n,
                         i, iout[i], max);
            }
        }
        nchecks += 3;
        nbytes += n * (2 * sizeof(int64_t) + sizeof(int));
        free(in);
        free(out);
        free(din);
        free(dout);
        free(iin);
        free(iout);
    }
}

/* Bytes rank s sends rank d in Alltoallv round `it`: zeros, odd small sizes and a few large. */
static size_t a2a_count(int s, int d, int it)
{
    uint64_t h = test_hash((uint64_t)s * 1000 + (uint64_t)d, (uint64_t)it, 0xa2a);
    unsigned kind = (unsigned)(h % 8);
    size_t big = test_opt.max_size / (size_t)test_size / 2;

    h >>= 8;
    if (kind == 0) {
        return 0;
    } else if (kind < 5) {
        return 1 + h % 999;
    } else if (kind < 7) {
        size_t s = 1000 + h % 70000;
        return s > big ? big : s;
    }
    return big - h % (big / 2 + 1);
}

static void do_alltoallv(int it)
{
    int *scounts = xmalloc(sizeof(int) * (size_t)test_size);
    int *sdispls = xmalloc(sizeof(int) * (size_t)test_size);
    int *rcounts = xmalloc(sizeof(int) * (size_t)test_size);
    int *rdispls = xmalloc(sizeof(int) * (size_t)test_size);
    size_t stotal = 0, rtotal = 0;
    uint8_t *sbuf, *rbuf;
    uint64_t idx = ((uint64_t)it << 40) | ((uint64_t)3 << 32);

    /* blocks in the send buffer in reverse rank order, in the receive buffer in rank order,
     * each followed by GAP bytes */
    for (int k = test_size - 1; k >= 0; k--) {
        scounts[k] = (int)a2a_count(test_rank, k, it);
        sdispls[k] = (int)stotal;
        stotal += (size_t)scounts[k] + GAP;
    }
    for (int k = 0; k < test_size; k++) {
        rcounts[k] = (int)a2a_count(k, test_rank, it);
        rdispls[k] = (int)rtotal;
        rtotal += (size_t)rcounts[k] + GAP;
    }
    sbuf = xmalloc(stotal);
    rbuf = xmalloc(rtotal);
    memset(sbuf, 0xee, stotal);
    memset(rbuf, RECV_FILL, rtotal);
    for (int k = 0; k < test_size; k++) {
        pat_fill(sbuf + sdispls[k], (size_t)scounts[k], test_rank, k, idx, 0);
    }
    MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls, MPI_BYTE,
                  MPI_COMM_WORLD);
    for (int k = 0; k < test_size; k++) {
        char desc[256];
        snprintf(desc, sizeof(desc), "Alltoallv block of %d bytes from rank %d", rcounts[k], k);
        pat_check(rbuf + rdispls[k], (size_t)rcounts[k], k, test_rank, idx, 0, desc);
        snprintf(desc, sizeof(desc), "Alltoallv gap after the block from rank %d", k);
        fill_check(rbuf + rdispls[k] + rcounts[k], GAP, RECV_FILL,
                   (size_t)rdispls[k] + (size_t)rcounts[k], desc);
        nbytes += (size_t)rcounts[k];
    }
    nchecks++;
    free(sbuf);
    free(rbuf);
    free(scounts);
    free(sdispls);
    free(rcounts);
    free(rdispls);
}

static void do_allgather(int it)
{
    size_t sizes[] = {1, 1003, test_opt.max_size / (size_t)test_size};

    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        size_t len = sizes[si] ? sizes[si] : 1;
        uint64_t idx = ((uint64_t)it << 40) | ((uint64_t)4 << 32) | si;
        uint8_t *mine = xmalloc(len), *all = xmalloc(len * (size_t)test_size);

        pat_fill(mine, len, test_rank, ALL, idx, 0);
        memset(all, RECV_FILL, len * (size_t)test_size);
        MPI_Allgather(mine, (int)len, MPI_BYTE, all, (int)len, MPI_BYTE, MPI_COMM_WORLD);
        for (int k = 0; k < test_size; k++) {
            char desc[256];
            if (k == test_rank) {
                continue; /* our own block was copied locally */
            }
            snprintf(desc, sizeof(desc), "Allgather block of %zu bytes from rank %d", len, k);
            pat_check(all + (size_t)k * len, len, k, ALL, idx, 0, desc);
            nbytes += len;
        }
        nchecks++;
        free(mine);
        free(all);
    }
}

/* Blocks of -m bytes around the ring: at step k each rank holds the block that rank - k
 * made, checks it, and passes it on. */
static void do_ring(int it, uint8_t *buf)
{
    size_t len = test_opt.max_size;
    int next = (test_rank + 1) % test_size, prev = (test_rank + test_size - 1) % test_size;
    uint8_t *out = xmalloc(len);
    uint64_t idx = ((uint64_t)it << 40) | ((uint64_t)5 << 32);

    pat_fill(out, len, test_rank, ALL, idx, 0);
    for (int k = 1; k < test_size; k++) {
        int maker = (test_rank + test_size - k) % test_size;
        char desc[256];

        memset(buf, RECV_FILL, len);
        MPI_Sendrecv(out, (int)len, MPI_BYTE, next, 5, buf, (int)len, MPI_BYTE, prev, 5,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        snprintf(desc, sizeof(desc), "ring step %d: the block of rank %d from rank %d", k, maker,
                 prev);
        pat_check(buf, len, maker, ALL, idx, 0, desc);
        nbytes += len;
        memcpy(out, buf, len);
    }
    nchecks++;
    free(out);
}

int main(int argc, char **argv)
{
    uint8_t *buf;
    double t0;

    test_init(&argc, &argv, "collectives", (size_t)4 << 20, 2, NULL, NULL, NULL);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    buf = xmalloc(test_opt.max_size);
    t0 = MPI_Wtime();
    for (int it = 0; it < test_opt.iters; it++) {
        do_bcast(it, buf);
        test_note("iteration %d: Bcast ok", it);
        do_allreduce(it);
        test_note("iteration %d: Allreduce ok", it);
        do_alltoallv(it);
        test_note("iteration %d: Alltoallv ok", it);
        do_allgather(it);
        test_note("iteration %d: Allgather ok", it);
        do_ring(it, buf);
        test_note("iteration %d: ring ok", it);
    }
    free(buf);
    {
        unsigned long long mine[2] = {nchecks, nbytes}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        nchecks = all[0];
        nbytes = all[1];
    }
    return test_finish("Bcast, Allreduce (exact sums), Alltoallv (irregular), Allgather, ring: %llu "
                       "checked results, %.1f MiB in %.2f s", nchecks,
                       (double)nbytes / 1048576.0, MPI_Wtime() - t0);
}
