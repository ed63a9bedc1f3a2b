/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Unexpected messages: every rank sends every other rank a set of messages (0 B up to -m,
 * default 4 MiB, so both eager and rendezvous sizes) on MPI_COMM_WORLD and on a duplicate of it,
 * with the same tags on both, before any receive is posted anywhere. Each receiver then waits
 * with MPI_Iprobe until every one of those messages is visible (so all of them sit in the
 * unexpected queue), and only then posts its receives: in reverse tag order, the duplicate
 * communicator first. A run of messages sharing one tag checks that the unexpected queue keeps
 * their order. Repeated -i times (default 2).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SAME_TAG 1000
#define NSAME 4
#define PROBE_LIMIT_S 120.0

static size_t *tag_sizes;
static int ntags;
static size_t same_sizes[NSAME];

static void build_sizes(void)
{
    const size_t max = test_opt.max_size;
    const size_t cand[] = {0, 1, 7, 100, 4095, 4096, 12345, 65536, 65537, 300001, max / 2 + 3, max};

    tag_sizes = xmalloc(sizeof(cand));
    for (size_t i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
        if (cand[i] <= max) {
            tag_sizes[ntags++] = cand[i];
        }
    }
    same_sizes[0] = 5 > max ? max : 5;
    same_sizes[1] = max > 0 ? max - 1 : 0;
    same_sizes[2] = 17 > max ? max : 17;
    same_sizes[3] = 70000 > max ? max : 70000;
}

/* message index: iteration, communicator (0 world, 1 dup), tag slot */
static uint64_t msg_idx(int it, int comm, int slot)
{
    return ((uint64_t)it << 32) | ((uint64_t)comm << 16) | (uint64_t)slot;
}

int main(int argc, char **argv)
{
    MPI_Comm dup;
    MPI_Comm comms[2];
    int npeers, per_peer, nreq;
    MPI_Request *sreq, *rreq;
    MPI_Status *rst;
    uint8_t **sbuf, **rbuf;
    size_t *rlen;
    int *rsrc, *rtag, *rcomm;
    uint64_t *ridx;
    unsigned long long msgs = 0, bytes = 0;
    double t0;

    test_init(&argc, &argv, "unexpected", (size_t)4 << 20, 2, NULL, NULL, NULL);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    build_sizes();
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    comms[0] = MPI_COMM_WORLD;
    comms[1] = dup;
    npeers = test_size - 1;
    per_peer = 2 * ntags + NSAME;
    nreq = npeers * per_peer;
    sreq = xmalloc(sizeof(*sreq) * (size_t)nreq);
    rreq = xmalloc(sizeof(*rreq) * (size_t)nreq);
    rst = xmalloc(sizeof(*rst) * (size_t)nreq);
    sbuf = xmalloc(sizeof(*sbuf) * (size_t)nreq);
    rbuf = xmalloc(sizeof(*rbuf) * (size_t)nreq);
    rlen = xmalloc(sizeof(*rlen) * (size_t)nreq);
    rsrc = xmalloc(sizeof(*rsrc) * (size_t)nreq);
    rtag = xmalloc(sizeof(*rtag) * (size_t)nreq);
    rcomm = xmalloc(sizeof(*rcomm) * (size_t)nreq);
    ridx = xmalloc(sizeof(*ridx) * (size_t)nreq);
    t0 = MPI_Wtime();

    for (int it = 0; it < test_opt.iters; it++) {
        int ns = 0, nr = 0;

        /* 1. all sends, nothing posted yet */
        for (int pi = 0; pi < npeers; pi++) {
            int peer = (test_rank + 1 + pi) % test_size;
            for (int c = 0; c < 2; c++) {
                for (int t = 0; t < ntags; t++) {
                    size_t len = tag_sizes[t];
                    sbuf[ns] = xmalloc(len);
                    pat_fill(sbuf[ns], len, test_rank, peer, msg_idx(it, c, t), 0);
                    MPI_Isend(sbuf[ns], (int)len, MPI_BYTE, peer, t, comms[c], &sreq[ns]);
                    ns++;
                }
            }
            for (int k = 0; k < NSAME; k++) {
                size_t len = same_sizes[k];
                sbuf[ns] = xmalloc(len);
                pat_fill(sbuf[ns], len, test_rank, peer, msg_idx(it, 2, k), 0);
                MPI_Isend(sbuf[ns], (int)len, MPI_BYTE, peer, SAME_TAG, MPI_COMM_WORLD, &sreq[ns]);
                ns++;
            }
        }
        MPI_Barrier(MPI_COMM_WORLD);

        /* 2. wait until every message (the first of the same-tag run) is visible */
        for (int pi = 0; pi < npeers; pi++) {
            int peer = (test_rank + 1 + pi) % test_size;
            for (int c = 0; c < 3; c++) {
                int n = c < 2 ? ntags : 1;
                for (int t = 0; t < n; t++) {
                    int flag = 0;
                    double start = MPI_Wtime();
                    MPI_Status st;
                    while (!flag) {
                        MPI_Iprobe(peer, c < 2 ? t : SAME_TAG, comms[c < 2 ? c : 0], &flag, &st);
                        if (!flag && MPI_Wtime() - start > PROBE_LIMIT_S) {
                            test_die("message from rank %d tag %d (comm %d) not visible after "
                                     "%.0f s", peer, c < 2 ? t : SAME_TAG, c, PROBE_LIMIT_S);
                        }
                    }
                }
            }
        }

        /* 3. post the receives: dup comm in reverse tag order, then world in reverse, then the
         * same-tag run in order */
        for (int pi = 0; pi < npeers; pi++) {
            int peer = (test_rank + 1 + pi) % test_size;
            for (int c = 1; c >= 0; c--) {
                for (int t = ntags - 1; t >= 0; t--) {
                    rlen[nr] = tag_sizes[t];
                    rsrc[nr] = peer;
                    rtag[nr] = t;
                    rcomm[nr] = c;
                    ridx[nr] = msg_idx(it, c, t);
                    nr++;
                }
            }
            for (int k = 0; k < NSAME; k++) {
                rlen[nr] = same_sizes[k];
                rsrc[nr] = peer;
                rtag[nr] = SAME_TAG;
                rcomm[nr] = 0;
                ridx[nr] = msg_idx(it, 2, k);
                nr++;
            }
        }
        for (int r = 0; r < nr; r++) {
            rbuf[r] = xmalloc(rlen[r]);
            MPI_Irecv(rbuf[r], (int)rlen[r], MPI_BYTE, rsrc[r], rtag[r], comms[rcomm[r]],
                      &rreq[r]);
        }
        MPI_Waitall(nr, rreq, rst);
        MPI_Waitall(ns, sreq, MPI_STATUSES_IGNORE);

        for (int r = 0; r < nr; r++) {
            int count = -1;
            char desc[256];
            snprintf(desc, sizeof(desc), "unexpected message tag %d on %s (%zu bytes)", rtag[r],
                     rcomm[r] ? "dup comm" : "world", rlen[r]);
            MPI_Get_count(&rst[r], MPI_BYTE, &count);
            if (count < 0 || (size_t)count != rlen[r]) {
                test_die("%s from rank %d: MPI_Get_count = %d", desc, rsrc[r], count);
            }
            pat_check(rbuf[r], rlen[r], rsrc[r], test_rank, ridx[r], 0, desc);
            msgs++;
            bytes += rlen[r];
            free(rbuf[r]);
        }
        for (int s = 0; s < ns; s++) {
            free(sbuf[s]);
        }
        test_note("iteration %d: %d messages per rank received after they arrived", it, nr);
    }

    {
        unsigned long long mine[2] = {msgs, bytes}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        msgs = all[0];
        bytes = all[1];
    }
    MPI_Comm_free(&dup);
    free(sreq);
    free(rreq);
    free(rst);
    free(sbuf);
    free(rbuf);
    free(rlen);
    free(rsrc);
    free(rtag);
    free(rcomm);
    free(ridx);
    free(tag_sizes);
    return test_finish("%llu messages received after arriving unexpected (0..%zu B, 2 "
                       "communicators, same-tag order), %.1f MiB checked in %.2f s", msgs,
                       test_opt.max_size, (double)bytes / 1048576.0, MPI_Wtime() - t0);
}
