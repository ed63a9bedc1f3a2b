/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slowreader: a peer busy outside MPI is not a dead peer.
 *
 * Rank 0 sends -i messages of -m bytes (eager-sized, so they are pushed onto the connection
 * at once) to rank 1, which first stays away from MPI for -s seconds (sleeping), so that its
 * receive window closes and rank 0's data waits in flight. Then rank 1 receives and checks
 * every byte. Run with a btl_devmem_peer_timeout shorter than the sleep: the job must still
 * succeed.
 *
 *   slowreader [-m SIZE] [-i COUNT] [-s SECONDS]
 */
#include <stdlib.h>
#include <unistd.h>

#include "common.h"

static int sleep_s = 8;

static int opt_cb(int opt, const char *arg)
{
    char *end;

    if ('s' == opt) {
        sleep_s = (int) strtol(arg, &end, 10);
        return '\0' == *end && sleep_s >= 0 ? 0 : -1;
    }
    return -1;
}

int main(int argc, char **argv)
{
    MPI_Request *req;
    char *buf;
    size_t len;
    int n;

    test_init(&argc, &argv, "slowreader", 64 * 1024, 1024, "s:",
              "  -s SECONDS  how long rank 1 stays out of MPI before it receives (default 8)\n",
              opt_cb);
    if (test_size < 2) {
        test_die("needs 2 ranks");
    }
    len = test_opt.max_size;
    n = test_opt.iters;
    buf = xmalloc(len * (size_t) n);
    req = xmalloc(sizeof(*req) * (size_t) n);
    if (0 == test_rank) {
        for (int i = 0; i < n; i++) {
            pat_fill(buf + (size_t) i * len, len, 0, 1, (uint64_t) i, 0);
            MPI_Isend(buf + (size_t) i * len, (int) len, MPI_BYTE, 1, i, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
    } else if (1 == test_rank) {
        sleep((unsigned int) sleep_s); /* away from MPI: nothing reads the socket */
        for (int i = 0; i < n; i++) {
            MPI_Irecv(buf + (size_t) i * len, (int) len, MPI_BYTE, 0, i, MPI_COMM_WORLD, &req[i]);
        }
        MPI_Waitall(n, req, MPI_STATUSES_IGNORE);
        for (int i = 0; i < n; i++) {
            pat_check(buf + (size_t) i * len, len, 0, 1, (uint64_t) i, 0, "a delayed message");
        }
    }
    free(req);
    free(buf);
    return test_finish("%d messages of %zu B waited %d s for a busy receiver, every byte checked",
                       n, len, sleep_s);
}
