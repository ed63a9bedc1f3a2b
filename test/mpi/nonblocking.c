/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Many non-blocking messages in flight: every rank sends -n messages (default 100) of mixed sizes
 * (mostly small, some medium, a few up to -m, default 1 MiB) to every other rank with MPI_Isend,
 * and receives as many from each with MPI_Irecv, all completed by one MPI_Waitall. The first
 * half of the receives is posted before the sends and the second half after them, so both
 * expected and unexpected arrivals occur. Tags cycle over 3 values, so MPI's non-overtaking rule decides which message
 * each receive gets; the pattern (which includes the message index) checks that it was the right
 * one. Repeated -i times (default 2) with fresh message indices.
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NTAGS 3

static int nmsgs = 100;

static int extra_opt(int opt, const char *arg)
{
    if (opt == 'n') {
        nmsgs = atoi(arg);
        return nmsgs >= 1 ? 0 : -1;
    }
    return -1;
}

/* Size of message i from src to dst in iteration it: 0..max, skewed towards small. */
static size_t msg_size(int src, int dst, int it, int i)
{
    uint64_t h = test_hash((uint64_t)src << 32 | (uint32_t)dst, (uint64_t)it, (uint64_t)i);
    unsigned kind = (unsigned)(h % 100);
    size_t max = test_opt.max_size;
    size_t s;

    h >>= 8;
    if (kind < 5) {
        s = 0;
    } else if (kind < 60) {
        s = h % 257;                    /* 0 .. 256 */
    } else if (kind < 92) {
        s = 257 + h % (64 * 1024);      /* up to 64 KiB + 256 */
    } else {
        s = max / 2 + h % (max / 2 + 1); /* max/2 .. max */
    }
    return s > max ? max : s;
}

static uint64_t msg_idx(int it, int i)
{
    return (uint64_t)it * 1000000u + (uint64_t)i;
}

int main(int argc, char **argv)
{
    int npeers, nreq;
    MPI_Request *req;
    MPI_Status *st;
    uint8_t **sbuf, **rbuf;
    unsigned long long msgs = 0, bytes = 0;
    double t0;

    test_init(&argc, &argv, "nonblocking", (size_t)1 << 20, 2, "n:",
              "  -n N  messages per peer and direction per iteration (default 100)\n", extra_opt);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    npeers = test_size - 1;
    nreq = 2 * npeers * nmsgs;
    req = xmalloc(sizeof(*req) * (size_t)nreq);
    st = xmalloc(sizeof(*st) * (size_t)nreq);
    sbuf = xmalloc(sizeof(*sbuf) * (size_t)(npeers * nmsgs));
    rbuf = xmalloc(sizeof(*rbuf) * (size_t)(npeers * nmsgs));
    t0 = MPI_Wtime();

    for (int it = 0; it < test_opt.iters; it++) {
        /* Request slots: receive from (peer index pi, message i) at pi * nmsgs + i, the
         * matching send at npeers * nmsgs + pi * nmsgs + i. Receives of one (source, tag) are
         * posted in index order (the first half before the sends, the rest after them), which
         * is the order the sender sends them in, so matching is fully determined. */
        for (int pass = 0; pass < 3; pass++) {
            for (int pi = 0; pi < npeers; pi++) {
                int peer = (test_rank + 1 + pi) % test_size;
                for (int i = 0; i < nmsgs; i++) {
                    int slot = pi * nmsgs + i;
                    int early = i < nmsgs / 2;
                    if ((pass == 0 && early) || (pass == 2 && !early)) {
                        size_t len = msg_size(peer, test_rank, it, i);
                        rbuf[slot] = xmalloc(len);
                        MPI_Irecv(rbuf[slot], (int)len, MPI_BYTE, peer, i % NTAGS,
                                  MPI_COMM_WORLD, &req[slot]);
                    } else if (pass == 1) {
                        size_t len = msg_size(test_rank, peer, it, i);
                        sbuf[slot] = xmalloc(len);
                        pat_fill(sbuf[slot], len, test_rank, peer, msg_idx(it, i), 0);
                        MPI_Isend(sbuf[slot], (int)len, MPI_BYTE, peer, i % NTAGS,
                                  MPI_COMM_WORLD, &req[npeers * nmsgs + slot]);
                    }
                }
            }
        }
        MPI_Waitall(nreq, req, st);

        for (int pi = 0; pi < npeers; pi++) {
            int peer = (test_rank + 1 + pi) % test_size;
            for (int i = 0; i < nmsgs; i++) {
                int slot = pi * nmsgs + i;
                size_t len = msg_size(peer, test_rank, it, i);
                int count = -1;
                char desc[256];

                MPI_Get_count(&st[slot], MPI_BYTE, &count);
                snprintf(desc, sizeof(desc), "iteration %d message %d (%zu bytes, tag %d)", it, i,
                         len, i % NTAGS);
                if (count < 0 || (size_t)count != len || st[slot].MPI_SOURCE != peer ||
                    st[slot].MPI_TAG != i % NTAGS) {
                    test_die("%s from rank %d: status says %d bytes from rank %d tag %d", desc,
                             peer, count, st[slot].MPI_SOURCE, st[slot].MPI_TAG);
                }
                pat_check(rbuf[slot], len, peer, test_rank, msg_idx(it, i), 0, desc);
                free(rbuf[slot]);
                free(sbuf[slot]);
                msgs++;
                bytes += len;
            }
        }
    }

    {
        unsigned long long mine[2] = {msgs, bytes}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        msgs = all[0];
        bytes = all[1];
    }
    free(req);
    free(st);
    free(sbuf);
    free(rbuf);
    return test_finish("%d iterations x %d in flight per rank, %llu messages, %.1f MiB checked "
                       "in %.2f s", test_opt.iters, nreq, msgs, (double)bytes / 1048576.0,
                       MPI_Wtime() - t0);
}
