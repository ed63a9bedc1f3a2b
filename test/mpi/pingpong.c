/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ping-pong between every pair of ranks over sizes from 0 B to -m (default 64 MiB), including odd
 * sizes around every power of two, with each received byte checked.
 *
 * Pairs are scheduled round-robin (round k pairs r with (k - r) mod n), so with 4 ranks two
 * pairs run at the same time. Each size is repeated -i times (default 2; once above 1 MiB), and
 * every repetition is a new message index, so stale data from an earlier message is caught.
 * The receive buffer is larger than the message: the received count must be exact and the bytes
 * past it must stay untouched.
 */
#include "common.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GUARD 64
#define GUARD_FILL 0xc3
#define TAG_PING 11
#define TAG_PONG 12

static size_t *sizes;
static int nsizes;

static void add_size(size_t s)
{
    if (s > test_opt.max_size) {
        return;
    }
    for (int i = 0; i < nsizes; i++) {
        if (sizes[i] == s) {
            return;
        }
    }
    sizes[nsizes++] = s;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

static void build_sizes(void)
{
    static const size_t extra[] = {
        3, 7, 13, 100, 1000, 1400, 1500, 9000, 12293, 65000,
        (1u << 20) + 1, (4u << 20) + 3, (16u << 20) - 7, 64u << 20,
    };

    sizes = xmalloc(sizeof(*sizes) * 128);
    add_size(0);
    for (int k = 0; k <= 20; k++) {
        add_size(((size_t)1 << k) - 1);
        add_size((size_t)1 << k);
        add_size(((size_t)1 << k) + 1);
    }
    for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++) {
        add_size(extra[i]);
    }
    add_size(test_opt.max_size);
    qsort(sizes, (size_t)nsizes, sizeof(*sizes), cmp_size);
}

static void check_recv(const uint8_t *buf, size_t len, const MPI_Status *st, int src, int dst,
                       uint64_t idx, const char *what)
{
    int count = -1;
    char desc[256];

    MPI_Get_count(st, MPI_BYTE, &count);
    snprintf(desc, sizeof(desc), "%s of %zu bytes", what, len);
    if (count < 0 || (size_t)count != len) {
        test_die("%s from rank %d: MPI_Get_count says %d bytes, expected %zu", desc, src, count,
                 len);
    }
    if (st->MPI_SOURCE != src) {
        test_die("%s: status says source %d, expected %d", desc, st->MPI_SOURCE, src);
    }
    pat_check(buf, len, src, dst, idx, 0, desc);
    fill_check(buf + len, GUARD, GUARD_FILL, len, "guard bytes after the message");
}

/* -p SECONDS: a second pass after every rank waited this long in MPI, its connections (and
 * lanes) idle; -1: one pass */
static int pause_secs = -1;

static int pingpong_opt(int opt, const char *arg)
{
    if ('p' != opt || NULL == arg || !isdigit((unsigned char)arg[0])) {
        return -1;
    }
    pause_secs = atoi(arg);
    return 0;
}

/* Idle, but inside MPI (as a rank waiting for others): the progress engine keeps running. */
static void idle_in_mpi(int secs)
{
    double until = MPI_Wtime() + secs;
    int flag;

    MPI_Barrier(MPI_COMM_WORLD);
    test_note("idle for %d s before the next pass", secs);
    while (MPI_Wtime() < until) {
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        usleep(20000);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Every pair of ranks ping-pongs every size, each byte checked; each pass has patterns of
 * its own, so that bytes a pass left in a buffer never pass for the next one's. */
static void one_pass(int pass, uint8_t *sbuf, uint8_t *rbuf, unsigned long long *msgs,
                     unsigned long long *bytes)
{
    for (int round = 0; round < test_size; round++) {
        int peer = ((round - test_rank) % test_size + test_size) % test_size;
        int first = test_rank < peer;

        if (peer == test_rank) {
            continue; /* sits this round out */
        }
        for (int si = 0; si < nsizes; si++) {
            size_t len = sizes[si];
            int reps = len > ((size_t)1 << 20) ? 1 : test_opt.iters;

            if (first) {
                test_note("round %d: %d <-> %d, %zu bytes x %d", round, test_rank, peer, len,
                          reps);
            }
            for (int it = 0; it < reps; it++) {
                uint64_t idx = (uint64_t)pass * 1000000u + (uint64_t)si * 1000u + (uint64_t)it;
                MPI_Status st;

                memset(rbuf + len, GUARD_FILL, GUARD);
                if (first) {
                    pat_fill(sbuf, len, test_rank, peer, idx, 0);
                    MPI_Send(sbuf, (int)len, MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD);
                    MPI_Recv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD,
                             &st);
                    check_recv(rbuf, len, &st, peer, test_rank, idx, "pong");
                } else {
                    MPI_Recv(rbuf, (int)(len + GUARD), MPI_BYTE, peer, TAG_PING, MPI_COMM_WORLD,
                             &st);
                    check_recv(rbuf, len, &st, peer, test_rank, idx, "ping");
                    pat_fill(sbuf, len, test_rank, peer, idx, 0);
                    MPI_Send(sbuf, (int)len, MPI_BYTE, peer, TAG_PONG, MPI_COMM_WORLD);
                }
                *msgs += 2;
                *bytes += 2 * (unsigned long long)len;
            }
        }
    }
}

int main(int argc, char **argv)
{
    uint8_t *sbuf, *rbuf;
    unsigned long long msgs = 0, bytes = 0;
    double t0;

    test_init(&argc, &argv, "pingpong", (size_t)64 << 20, 2, "p:",
              "  -p SECS  wait SECS seconds in MPI after the pass, then run it again\n",
              pingpong_opt);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    build_sizes();

    sbuf = xmalloc(test_opt.max_size);
    rbuf = xmalloc(test_opt.max_size + GUARD);
    t0 = MPI_Wtime();

    for (int pass = 0; pass < (pause_secs < 0 ? 1 : 2); pass++) {
        if (pass > 0) {
            idle_in_mpi(pause_secs);
        }
        one_pass(pass, sbuf, rbuf, &msgs, &bytes);
    }

    {
        unsigned long long mine[2] = {msgs, bytes}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        msgs = all[0] / 2; /* each exchange was counted by both partners */
        bytes = all[1] / 2;
    }
    free(sbuf);
    free(rbuf);
    return test_finish("%d sizes 0..%zu B, %llu messages, %.1f MiB checked in %.2f s", nsizes,
                       sizes[nsizes - 1], msgs, (double)bytes / 1048576.0, MPI_Wtime() - t0);
}
