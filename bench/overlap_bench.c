/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Whether a receiving rank that computes outside MPI still receives: rank 0 sends one
 * message of each size to rank 1, which posts its receive, computes for as long as the
 * plain transfer took (no MPI call meanwhile), then waits. With receiving threads
 * (btl_devmem_rx_threads) the device-flow lanes drain while it computes and the wait is
 * short; without them, nothing moves until the wait.
 *
 * The sender's request to send reaches rank 1 before it posts (a barrier after the send is
 * started), so that posting the receive starts the transfer at once, as an application that
 * posts late sees it; what happens after that is up to the transport.
 *
 *   overlap SIZE usec=T compute_usec=C wait_usec=W overlapped=F
 *
 * T: median time of the plain transfer (post to completion); C: the computing (= T x -c);
 * W: median time the wait still took after it; F = 1 - W / T, clamped to 0..1 (1: the whole
 * transfer was hidden behind the computing). Every byte of every message is checked.
 */
#include "bench_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define DATA_TAG 3
#define REPS_MAX 101

static int rank;

static void die(const char *what)
{
    fprintf(stderr, "overlap_bench[%d]: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

/* Work the CPU for `secs` without an MPI call: what an application's compute phase is to
 * the transport. The sum keeps the compiler from dropping the loop. */
static volatile double compute_sink;
static void compute_for(double secs)
{
    double end = bench_now() + secs, acc = 1.0;
    while (bench_now() < end) {
        for (int i = 0; i < 2048; i++) {
            acc = acc * 1.0000001 + 1e-9;
        }
    }
    compute_sink = acc;
}

/*
 * One transfer of message `idx`. Rank 1 returns how long the wait took after computing for
 * `compute` seconds (0: the plain transfer, timed from the post).
 */
static double transfer(char *buf, size_t size, uint64_t idx, double compute)
{
    MPI_Request req;
    double t0, t1;

    if (0 == rank) {
        bench_pat_fill(buf, size, idx);
        MPI_Isend(buf, (int) size, MPI_BYTE, 1, DATA_TAG, MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD); /* rank 1 has the request to send when it posts */
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        MPI_Barrier(MPI_COMM_WORLD);
        return 0.0;
    }
    memset(buf, 0, size);
    MPI_Barrier(MPI_COMM_WORLD);
    t0 = bench_now();
    MPI_Irecv(buf, (int) size, MPI_BYTE, 0, DATA_TAG, MPI_COMM_WORLD, &req);
    if (compute > 0.0) {
        compute_for(compute);
    }
    t1 = bench_now();
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    t1 = bench_now() - (compute > 0.0 ? t1 : t0);
    {
        long bad = bench_pat_find_error(buf, size, idx);
        if (bad >= 0) {
            char what[160];
            snprintf(what, sizeof(what), "message %llu of %zu bytes: byte %ld is wrong",
                     (unsigned long long) idx, size, bad);
            die(what);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return t1;
}

static void usage(void)
{
    fprintf(stderr, "usage: overlap_bench [-s SIZES] [-r REPS] [-c FACTOR]\n"
                    "  -s SIZES   a list (1m,16m, the default) or a range of powers of two\n"
                    "  -r REPS    transfers of each kind per size, medians taken (default 9)\n"
                    "  -c FACTOR  rank 1 computes FACTOR x the plain transfer time (default 1)\n"
                    "Output, one line per size: overlap SIZE usec=.. compute_usec=.. "
                    "wait_usec=.. overlapped=..\n");
}

int main(int argc, char **argv)
{
    struct bench_sizes sizes;
    char err[128];
    int reps = 9, nranks, opt;
    double factor = 1.0;
    const char *size_arg = "1m,16m";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    while (-1 != (opt = getopt(argc, argv, "s:r:c:h"))) {
        switch (opt) {
        case 's': size_arg = optarg; break;
        case 'r': reps = atoi(optarg); break;
        case 'c': factor = atof(optarg); break;
        default:
            if (0 == rank) {
                usage();
            }
            MPI_Finalize();
            return 'h' == opt ? 0 : 2;
        }
    }
    if (2 != nranks) {
        die("runs on exactly 2 ranks");
    }
    if (reps < 1 || reps > REPS_MAX || !(factor > 0.0)) {
        die("-r wants 1..101 and -c a positive factor");
    }
    if (0 != bench_sizes_parse(size_arg, &sizes, err, sizeof(err))) {
        die(err);
    }
    if (0 == rank) {
        printf("# overlap_bench reps=%d compute=%gx the plain transfer\n", reps, factor);
    }
    for (int s = 0; s < sizes.count; s++) {
        size_t size = sizes.size[s];
        double plain[REPS_MAX], wait[REPS_MAX], t = 0.0, w;
        char *buf = NULL;

        if (size > (size_t) 1 << 30 || 0 != posix_memalign((void **) &buf, 4096, size ? size : 1)) {
            die("a size above 1 GiB, or out of memory");
        }
        transfer(buf, size, 0, 0.0); /* untimed: connections and lanes open */
        for (int i = 0; i < reps; i++) {
            plain[i] = transfer(buf, size, (uint64_t) i + 1, 0.0);
        }
        if (1 == rank) {
            t = bench_median(plain, reps);
        }
        MPI_Bcast(&t, 1, MPI_DOUBLE, 1, MPI_COMM_WORLD);
        for (int i = 0; i < reps; i++) {
            wait[i] = transfer(buf, size, (uint64_t) (reps + i) + 1, t * factor);
        }
        if (1 == rank) {
            double f;
            w = bench_median(wait, reps);
            f = t > 0.0 ? 1.0 - w / t : 0.0;
            f = f < 0.0 ? 0.0 : f > 1.0 ? 1.0 : f;
            printf("overlap %zu usec=%.1f compute_usec=%.1f wait_usec=%.1f overlapped=%.2f\n",
                   size, t * 1e6, t * factor * 1e6, w * 1e6, f);
            fflush(stdout);
        }
        free(buf);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
