/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * latewait: ranks that wait for a rank still computing, with more ranks than cores.
 *
 * Every rank says hello to rank 0 (which connects it; with -W the hello carries -m bytes,
 * checked, so that rank 0's device flows from each rank are open before it computes). Then
 * rank 0 computes for -s seconds
 * without calling MPI while every other rank already waits in MPI_Recv for its message; then rank 0 sends each of them -m bytes, and each answers
 * with as many. Every byte is checked both ways. Run oversubscribed (say 3 ranks on 2 CPUs):
 * a waiting rank that kept spinning would take the CPU that rank 0 computes on.
 *
 *   latewait [-m SIZE] [-s SECONDS] [-W] [-v]  (-v: rank 0 says when it starts computing)
 */
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

static double compute_s = 1.0;
static int warm;

static int opt_cb(int opt, const char *arg)
{
    char *end;

    if ('s' == opt) {
        compute_s = strtod(arg, &end);
        return '\0' == *end && compute_s >= 0 ? 0 : -1;
    }
    if ('W' == opt) {
        warm = 1;
        return 0;
    }
    return -1;
}

int main(int argc, char **argv)
{
    size_t len;
    char *buf;
    double waited = 0, longest = 0;

    test_init(&argc, &argv, "latewait", 1024 * 1024, 1, "s:W",
              "  -s SECONDS  how long rank 0 computes before it sends (default 1)\n"
              "  -W          the hello carries -m bytes (device flows open before the wait)\n",
              opt_cb);
    if (test_size < 2) {
        test_die("needs 2 ranks");
    }
    len = test_opt.max_size;
    buf = xmalloc(len > 0 ? len : 1);
    /* connections are made at the first message: make them now, so that the wait below is
     * a wait on a live connection */
    if (0 == test_rank) {
        for (int r = 1; r < test_size; r++) {
            MPI_Recv(buf, warm ? (int) len : 0, MPI_BYTE, r, 0, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            if (warm) {
                pat_check(buf, len, r, 0, 0xee, 0, "a hello");
            }
        }
    } else {
        if (warm) {
            pat_fill(buf, len, test_rank, 0, 0xee, 0);
        }
        MPI_Send(buf, warm ? (int) len : 0, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
    if (0 == test_rank) {
        uint64_t h;

        test_note("computing for %.1f s", compute_s);
        h = test_compute(compute_s);

        for (int r = 1; r < test_size; r++) {
            pat_fill(buf, len, 0, r, h & 0xff, 0);
            MPI_Send(buf, (int) len, MPI_BYTE, r, 1, MPI_COMM_WORLD);
            MPI_Send(&h, 1, MPI_UINT64_T, r, 2, MPI_COMM_WORLD);
        }
        for (int r = 1; r < test_size; r++) {
            MPI_Recv(buf, (int) len, MPI_BYTE, r, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            pat_check(buf, len, r, 0, h & 0xff, 0, "an answer");
        }
    } else {
        double t0 = MPI_Wtime();
        uint64_t h;

        MPI_Recv(buf, (int) len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        waited = MPI_Wtime() - t0;
        MPI_Recv(&h, 1, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pat_check(buf, len, 0, test_rank, h & 0xff, 0, "the late message");
        pat_fill(buf, len, test_rank, 0, h & 0xff, 0);
        MPI_Send(buf, (int) len, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
    }
    free(buf);
    MPI_Reduce(&waited, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    return test_finish("%d ranks waited up to %.2f s for rank 0's %.1f s of computing, %zu B "
                       "each way checked", test_size - 1, longest, compute_s, len);
}
