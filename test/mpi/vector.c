/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Strided derived datatypes (MPI_Type_vector): a small and a large message, plus one with many
 * tiny blocks, between every pair of ranks (round-robin pairs, both directions), as
 *   strided -> strided, contiguous -> strided, strided -> contiguous, and 2 x strided -> strided.
 * The sender fills the gaps of its strided buffer with 0xEE (they must not travel); the receiver
 * fills its whole buffer with 0xA5 first and checks afterwards that every block holds the
 * pattern of its position in the packed stream and that every gap and the guard zone after the
 * buffer still hold 0xA5.
 * -m sets the data size of the large case (default 2 MiB).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SEND_GAP 0xee
#define RECV_FILL 0xa5
#define GUARD 256

struct vcase {
    const char *name;
    MPI_Datatype base;
    size_t esize;   /* bytes per base element */
    int count;      /* blocks */
    int blocklen;   /* elements per block */
    int stride;     /* elements from block start to block start */
};

static size_t extent_of(const struct vcase *c)
{
    return ((size_t)(c->count - 1) * (size_t)c->stride + (size_t)c->blocklen) * c->esize;
}

static size_t data_of(const struct vcase *c)
{
    return (size_t)c->count * (size_t)c->blocklen * c->esize;
}

/* Fill (sender) the blocks of ncopies consecutive vectors with the pattern, gaps with SEND_GAP. */
static void strided_fill(uint8_t *buf, const struct vcase *c, int ncopies, int src, int dst,
                         uint64_t idx)
{
    size_t ext = extent_of(c), blk = (size_t)c->blocklen * c->esize;

    memset(buf, SEND_GAP, ext * (size_t)ncopies);
    for (int k = 0; k < ncopies; k++) {
        for (int j = 0; j < c->count; j++) {
            size_t at = (size_t)k * ext + (size_t)j * (size_t)c->stride * c->esize;
            size_t packed = ((size_t)k * (size_t)c->count + (size_t)j) * blk;
            pat_fill(buf + at, blk, src, dst, idx, packed);
        }
    }
}

/* Check (receiver): blocks hold the pattern, gaps and guard still hold RECV_FILL. */
static void strided_check(const uint8_t *buf, const struct vcase *c, int ncopies, int src,
                          int dst, uint64_t idx, const char *what)
{
    size_t ext = extent_of(c), blk = (size_t)c->blocklen * c->esize;
    size_t pos = 0;
    char desc[320];

    for (int k = 0; k < ncopies; k++) {
        for (int j = 0; j < c->count; j++) {
            size_t at = (size_t)k * ext + (size_t)j * (size_t)c->stride * c->esize;
            size_t packed = ((size_t)k * (size_t)c->count + (size_t)j) * blk;
            snprintf(desc, sizeof(desc), "%s: gap before block %d of copy %d", what, j, k);
            fill_check(buf + pos, at - pos, RECV_FILL, pos, desc);
            snprintf(desc, sizeof(desc), "%s: block %d of copy %d", what, j, k);
            pat_check(buf + at, blk, src, dst, idx, packed, desc);
            pos = at + blk;
        }
    }
    snprintf(desc, sizeof(desc), "%s: guard after the buffer", what);
    fill_check(buf + pos, GUARD, RECV_FILL, pos, desc);
}

static void check_count(const MPI_Status *st, MPI_Datatype dt, int want, const char *what)
{
    int got = -1;
    MPI_Get_count(st, dt, &got);
    if (got != want) {
        test_die("%s: MPI_Get_count = %d, expected %d", what, got, want);
    }
}

int main(int argc, char **argv)
{
    struct vcase cases[3];
    unsigned long long msgs = 0, bytes = 0;
    size_t bufsize = 0;
    uint8_t *sbuf, *rbuf;
    double t0;

    test_init(&argc, &argv, "vector", (size_t)2 << 20, 1, NULL, NULL, NULL);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }

    /* small: 5 blocks of 3 ints every 7 ints (60 bytes of data) */
    cases[0] = (struct vcase){"small", MPI_INT, sizeof(int), 5, 3, 7};
    /* large: blocks of 1001 ints every 1537 ints, -m bytes of data or a bit less */
    cases[1] = (struct vcase){"large", MPI_INT, sizeof(int), 1, 1001, 1537};
    cases[1].count = (int)(test_opt.max_size / (1001 * sizeof(int)));
    if (cases[1].count < 1) {
        cases[1].count = 1;
    }
    /* many tiny blocks: 3 bytes every 5 bytes, about max/8 bytes of data */
    cases[2] = (struct vcase){"tiny-blocks", MPI_BYTE, 1, 1, 3, 5};
    cases[2].count = (int)(test_opt.max_size / 24);
    if (cases[2].count < 1) {
        cases[2].count = 1;
    }
    for (int ci = 0; ci < 3; ci++) {
        size_t need = 2 * extent_of(&cases[ci]) + GUARD;
        if (need > bufsize) {
            bufsize = need;
        }
    }
    sbuf = xmalloc(bufsize);
    rbuf = xmalloc(bufsize);
    t0 = MPI_Wtime();

    for (int it = 0; it < test_opt.iters; it++) {
        for (int round = 0; round < test_size; round++) {
            int peer = ((round - test_rank) % test_size + test_size) % test_size;
            if (peer == test_rank) {
                continue;
            }
            for (int ci = 0; ci < 3; ci++) {
                const struct vcase *c = &cases[ci];
                int nelem = c->count * c->blocklen;
                MPI_Datatype vt;

                MPI_Type_vector(c->count, c->blocklen, c->stride, c->base, &vt);
                MPI_Type_commit(&vt);
                /* variant 0: strided->strided, 1: contiguous->strided, 2: strided->contiguous,
                 * 3: 2 x strided -> 2 x strided; each direction of the pair in turn */
                for (int var = 0; var < 4; var++) {
                    for (int dir = 0; dir < 2; dir++) {
                        int src = dir == 0 ? (test_rank < peer ? test_rank : peer)
                                           : (test_rank < peer ? peer : test_rank);
                        int dst = src == test_rank ? peer : test_rank;
                        int ncopies = var == 3 ? 2 : 1;
                        uint64_t idx = ((uint64_t)it << 32) | (uint64_t)(ci * 16 + var * 2 + dir);
                        char what[128];

                        snprintf(what, sizeof(what), "%s vector, variant %d, %d -> %d", c->name,
                                 var, src, dst);
                        if (src == test_rank) {
                            if (var == 1) {
                                pat_fill(sbuf, data_of(c), src, dst, idx, 0);
                                MPI_Send(sbuf, nelem, c->base, dst, 21, MPI_COMM_WORLD);
                            } else {
                                strided_fill(sbuf, c, ncopies, src, dst, idx);
                                MPI_Send(sbuf, ncopies, vt, dst, 21, MPI_COMM_WORLD);
                            }
                        } else {
                            MPI_Status st;
                            memset(rbuf, RECV_FILL, bufsize);
                            if (var == 2) {
                                MPI_Recv(rbuf, nelem, c->base, src, 21, MPI_COMM_WORLD, &st);
                                check_count(&st, c->base, nelem, what);
                                pat_check(rbuf, data_of(c), src, dst, idx, 0, what);
                                fill_check(rbuf + data_of(c), GUARD, RECV_FILL, data_of(c),
                                           "guard after the contiguous buffer");
                            } else {
                                MPI_Recv(rbuf, ncopies, vt, src, 21, MPI_COMM_WORLD, &st);
                                check_count(&st, vt, ncopies, what);
                                check_count(&st, c->base, ncopies * nelem, what);
                                strided_check(rbuf, c, ncopies, src, dst, idx, what);
                            }
                            msgs++;
                            bytes += (unsigned long long)ncopies * data_of(c);
                        }
                    }
                }
                MPI_Type_free(&vt);
            }
        }
    }

    {
        unsigned long long mine[2] = {msgs, bytes}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        msgs = all[0];
        bytes = all[1];
    }
    free(sbuf);
    free(rbuf);
    return test_finish("%llu strided messages (60 B, %zu B in %d blocks, %zu B in 3-byte blocks), "
                       "%.1f MiB checked, gaps intact, in %.2f s", msgs, data_of(&cases[1]),
                       cases[1].count, data_of(&cases[2]), (double)bytes / 1048576.0,
                       MPI_Wtime() - t0);
}
