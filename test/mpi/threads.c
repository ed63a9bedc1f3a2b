/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Several threads per rank sending to and receiving from every other rank at once
 * (MPI_THREAD_MULTIPLE), every byte checked.
 *
 * Thread t of every rank talks to thread t of every other rank with tag t, so the pairs
 * never steal each other's messages. The threads of one index follow a round-robin
 * tournament: at step j rank r pairs with rank (j - r) mod n, which pairs with r in turn, so
 * no cycle of waits can form. Thread t starts at step t, so the threads of a rank meet their
 * peers in different orders: most connections are first made by one thread while others
 * already move data over the ones they opened, and a thread is busy in a rendezvous with one
 * peer while another thread's eager messages to the same peer pass it. Per round a
 * thread posts its receive, sends (blocking send or isend, alternately), then waits; message
 * sizes run through 0 B .. -m, so eager, rendezvous and (on the device path) gets all occur.
 *
 * Options (besides common.h's): -t THREADS (default 4), -i ROUNDS per peer (default 40).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

static int nthreads = 4;

struct worker {
    pthread_t tid;
    int t;
    size_t checked; /* bytes received and checked */
    int messages;
};

static int extra_opt(int opt, const char *arg)
{
    if ('t' == opt) {
        nthreads = atoi(arg);
        return nthreads >= 1 && nthreads <= 64 ? 0 : -1;
    }
    return -1;
}

/* Round k's size: 0, then growing powers of four up to -m, then a few odd ones between. */
static size_t round_size(int k)
{
    static const size_t odd[] = {1, 7, 4093, 65537, 262145};
    size_t s;

    if (0 == k % 3) {
        s = odd[(k / 3) % (sizeof(odd) / sizeof(odd[0]))];
    } else {
        s = (size_t) 1 << (2 * (k % 12));
        s = 1 == s ? 0 : s;
    }
    return s > test_opt.max_size ? test_opt.max_size : s;
}

/* A message index unique per (thread, peer order, round): the pattern tells them apart. */
static uint64_t msg_index(int t, int k)
{
    return (uint64_t) t * 1000003u + (uint64_t) k;
}

static void *work(void *arg)
{
    struct worker *w = arg;
    char *sbuf = xmalloc(test_opt.max_size), *rbuf = xmalloc(test_opt.max_size);

    for (int s = 0; s < test_size; s++) {
        int step = (w->t + s) % test_size;
        int peer = ((step - test_rank) % test_size + test_size) % test_size;

        if (peer == test_rank) { /* an odd number of ranks: this step sits out */
            continue;
        }
        for (int k = 0; k < test_opt.iters; k++) {
            size_t len = round_size(k);
            MPI_Request req[2];

            memset(rbuf, 0xa5, len);
            MPI_Irecv(rbuf, (int) len, MPI_BYTE, peer, w->t, MPI_COMM_WORLD, &req[0]);
            pat_fill(sbuf, len, test_rank, peer, msg_index(w->t, k), 0);
            if (k & 1) {
                MPI_Send(sbuf, (int) len, MPI_BYTE, peer, w->t, MPI_COMM_WORLD);
                MPI_Wait(&req[0], MPI_STATUS_IGNORE);
            } else {
                MPI_Isend(sbuf, (int) len, MPI_BYTE, peer, w->t, MPI_COMM_WORLD, &req[1]);
                MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
            }
            pat_check(rbuf, len, peer, test_rank, msg_index(w->t, k), 0, "threaded message");
            w->checked += len;
            w->messages++;
        }
        test_note("thread %d done with rank %d", w->t, peer);
    }
    free(sbuf);
    free(rbuf);
    return NULL;
}

int main(int argc, char **argv)
{
    struct worker *w;
    size_t checked = 0, all = 0;
    int messages = 0;

    test_thread_level = MPI_THREAD_MULTIPLE;
    test_init(&argc, &argv, "threads", 1 << 20, 40, "t:", "  -t N   threads per rank (4)\n",
              extra_opt);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    w = calloc((size_t) nthreads, sizeof(*w));
    if (NULL == w) {
        test_die("out of memory");
    }
    for (int t = 0; t < nthreads; t++) {
        w[t].t = t;
        if (0 != pthread_create(&w[t].tid, NULL, work, &w[t])) {
            test_die("pthread_create failed");
        }
    }
    for (int t = 0; t < nthreads; t++) {
        pthread_join(w[t].tid, NULL);
        checked += w[t].checked;
        messages += w[t].messages;
    }
    free(w);
    if (messages != nthreads * (test_size - 1) * test_opt.iters) {
        test_die("%d messages received, %d expected", messages,
                 nthreads * (test_size - 1) * test_opt.iters);
    }
    MPI_Reduce(&checked, &all, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    return test_finish("%d threads x %d peers x %d rounds, %.1f MiB checked",
                       nthreads, test_size - 1, test_opt.iters, (double) all / (1 << 20));
}
