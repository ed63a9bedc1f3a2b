/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * departed: a message whose MPI_Send has returned reaches its receiver while the sender
 * computes, without waiting for the sender's next MPI call.
 *
 * Pairs: for every ordered pair of ranks (disjoint pairs at once), the sender sends its
 * messages, then computes for -s seconds without calling MPI, then sends a marker; the
 * receiver waits in MPI_Recv and notes when each message and the marker arrive. A message
 * held back until the sender's next call arrives with the marker; one sent on its way arrives
 * about -s seconds before it. Every message must arrive at least half of -s before the
 * marker. The ranks meet through rank 0 only (no barrier), so two ranks other than rank 0
 * first talk in their first turn: then the sender sends one small message alone (0, 64, 256
 * or 1 B, in turn: inline sends, of ob1's two kinds), the case of a connection still to be
 * made when MPI_Send returns. Every other turn sends -m bytes down to 0 (odd sizes around
 * the eager limit), largest first, so that small messages follow a rendezvous.
 *
 * Full socket (-F N): the last rank sends N messages of 200 B to rank 1 while rank 1 computes
 * for -s seconds, so that the connection's socket fills and a send must wait for room; then
 * the sender computes for -s seconds and sends a marker. Every message must again arrive at
 * least half of -s before the marker, and the sender must have waited (its N sends took at
 * least a quarter of -s: else the socket never filled, raise N or lower the socket buffers).
 *
 * Every byte is checked.
 *
 *   departed [-m SIZE] [-s SECONDS] [-F N] [-v]
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

enum { TAG_SYNC = 1, TAG_MSG = 2, TAG_MARK = 3, FLOOD_SIZE = 200 };

static double compute_s = 1.0;
static long flood_n;

static int opt_cb(int opt, const char *arg)
{
    char *end;

    if ('s' == opt) {
        compute_s = strtod(arg, &end);
        return '\0' == *end && compute_s > 0 ? 0 : -1;
    }
    if ('F' == opt) {
        flood_n = strtol(arg, &end, 10);
        return '\0' == *end && flood_n >= 0 ? 0 : -1;
    }
    return -1;
}

/* Everyone in, then everyone out, through rank 0 alone: connects each rank to rank 0 and no
 * other pair. */
static void meet(void)
{
    if (0 == test_rank) {
        for (int r = 1; r < test_size; r++) {
            MPI_Recv(NULL, 0, MPI_BYTE, r, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        for (int r = 1; r < test_size; r++) {
            MPI_Send(NULL, 0, MPI_BYTE, r, TAG_SYNC, MPI_COMM_WORLD);
        }
    } else {
        MPI_Send(NULL, 0, MPI_BYTE, 0, TAG_SYNC, MPI_COMM_WORLD);
        MPI_Recv(NULL, 0, MPI_BYTE, 0, TAG_SYNC, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* The messages of a turn: one small message where the two ranks have not talked yet; else
 * -m bytes down to 0, largest first. */
static size_t sizes_of(bool first_talk, int first_talks, size_t *sizes)
{
    static const size_t firsts[] = {0, 64, 256, 1};
    const size_t all[] = {1024 * 1024, 128 * 1024 + 1, 128 * 1024 - 64, 16 * 1024, 1024, 256,
                          200, 64, 1, 0};
    size_t n = 0;

    if (first_talk) {
        sizes[n++] = firsts[first_talks % 4];
        return n;
    }
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
        if (all[i] <= test_opt.max_size) {
            sizes[n++] = all[i];
        }
    }
    return n;
}

/* The receiving side of a test: n messages of sizes[] from src, then the marker. Dies unless
 * each came at least half the sender's compute time before the marker. */
static void receive_and_time(int src, uint64_t idx0, const size_t *sizes, size_t n, char *buf,
                             double *arrived, const char *what)
{
    double mark, worst = 1e9;
    size_t worst_i = 0;

    for (size_t i = 0; i < n; i++) {
        int got;
        MPI_Status st;

        MPI_Recv(buf, (int) sizes[i], MPI_BYTE, src, TAG_MSG, MPI_COMM_WORLD, &st);
        arrived[i] = MPI_Wtime();
        MPI_Get_count(&st, MPI_BYTE, &got);
        if ((size_t) got != sizes[i]) {
            test_die("%s from rank %d, message %zu: %d bytes, want %zu", what, src, i, got,
                     sizes[i]);
        }
        pat_check(buf, sizes[i], src, test_rank, idx0 + i, 0, what);
    }
    MPI_Recv(NULL, 0, MPI_BYTE, src, TAG_MARK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    mark = MPI_Wtime();
    for (size_t i = 0; i < n; i++) {
        if (mark - arrived[i] < worst) {
            worst = mark - arrived[i];
            worst_i = i;
        }
    }
    if (worst < compute_s / 2) {
        test_die("%s from rank %d: message %zu of %zu (%zu B) arrived %.3f s before the "
                 "sender's next MPI call, want at least %.3f s: it waited for the sender, "
                 "who computed for %.1f s after its MPI_Send returned",
                 what, src, worst_i, n, sizes[worst_i], worst, compute_s / 2, compute_s);
    }
    test_note("%s from rank %d: %zu messages, the last %.3f s before the marker", what, src,
              n, worst);
}

static void send_then_compute(int dst, uint64_t idx0, const size_t *sizes, size_t n, char *buf)
{
    for (size_t i = 0; i < n; i++) {
        pat_fill(buf, sizes[i], test_rank, dst, idx0 + i, 0);
        MPI_Send(buf, (int) sizes[i], MPI_BYTE, dst, TAG_MSG, MPI_COMM_WORLD);
    }
    (void) test_compute(compute_s);
    MPI_Send(NULL, 0, MPI_BYTE, dst, TAG_MARK, MPI_COMM_WORLD);
}

/* Rounds of disjoint ordered pairs until every ordered pair had its turn. */
static int pairs(char *buf, double *arrived, size_t *sizes, int *first_talks)
{
    int np = test_size, npairs = np * (np - 1), done = 0, rounds = 0;
    char *taken = xmalloc((size_t) npairs), *talked = xmalloc((size_t) (np * np));
    char *busy = xmalloc((size_t) np);

    memset(taken, 0, (size_t) npairs);
    memset(talked, 0, (size_t) (np * np));
    for (int r = 0; r < np; r++) {
        talked[r] = talked[r * np] = 1; /* meet() connects every rank to rank 0 */
    }
    *first_talks = 0;
    while (done < npairs) {
        int role = 0, peer = -1, pair_no = -1;
        size_t n = 0;

        memset(busy, 0, (size_t) np);
        /* every rank picks the same pairs: the first free ones in order */
        for (int p = 0; p < npairs; p++) {
            int s = p / (np - 1), r = p % (np - 1);
            bool first;

            r += r >= s;
            if (taken[p] || busy[s] || busy[r]) {
                continue;
            }
            taken[p] = 1;
            busy[s] = busy[r] = 1;
            done++;
            first = !talked[s * np + r];
            talked[s * np + r] = talked[r * np + s] = 1;
            if (s == test_rank || r == test_rank) {
                role = s == test_rank ? 1 : 2;
                peer = s == test_rank ? r : s;
                pair_no = p;
                n = sizes_of(first, *first_talks, sizes);
            }
            *first_talks += first;
        }
        meet();
        if (1 == role) {
            send_then_compute(peer, (uint64_t) pair_no * 100, sizes, n, buf);
        } else if (2 == role) {
            receive_and_time(peer, (uint64_t) pair_no * 100, sizes, n, buf, arrived,
                             n > 1 ? "pairs" : "first talk");
        }
        rounds++;
    }
    free(busy);
    free(talked);
    free(taken);
    return rounds;
}

/* The last rank floods rank 1 (which computes meanwhile) with flood_n messages. */
static void full_socket(char *buf, double *arrived, size_t *sizes)
{
    int src = test_size - 1, dst = 1;
    uint64_t idx0 = 1u << 20;
    double t0, took = 0, longest = 0;

    for (long i = 0; i < flood_n; i++) {
        sizes[i] = FLOOD_SIZE;
    }
    meet();
    if (test_rank == dst) {
        (void) test_compute(compute_s);
        receive_and_time(src, idx0, sizes, (size_t) flood_n, buf, arrived, "full socket");
    } else if (test_rank == src) {
        t0 = MPI_Wtime();
        for (long i = 0; i < flood_n; i++) {
            pat_fill(buf, FLOOD_SIZE, test_rank, dst, idx0 + (uint64_t) i, 0);
            MPI_Send(buf, FLOOD_SIZE, MPI_BYTE, dst, TAG_MSG, MPI_COMM_WORLD);
        }
        took = MPI_Wtime() - t0;
        (void) test_compute(compute_s);
        MPI_Send(NULL, 0, MPI_BYTE, dst, TAG_MARK, MPI_COMM_WORLD);
    }
    MPI_Reduce(&took, &longest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (0 == test_rank && longest < compute_s / 4) {
        test_die("full socket: rank %d's %ld sends took %.3f s while rank %d computed for "
                 "%.1f s: the socket never filled (raise -F or lower the socket buffers)",
                 src, flood_n, longest, dst, compute_s);
    }
    test_note("full socket: %ld sends of %d B took %.3f s", flood_n, FLOOD_SIZE, longest);
}

int main(int argc, char **argv)
{
    size_t cap, nmax;
    char *buf;
    double *arrived;
    size_t *sizes;
    int rounds, first_talks;

    test_init(&argc, &argv, "departed", 1024 * 1024, 1, "s:F:",
              "  -s SECONDS  how long a sender computes after its sends (default 1)\n"
              "  -F N        then N messages of 200 B into a full socket (default 0: none)\n",
              opt_cb);
    if (test_size < 2 || (flood_n > 0 && test_size < 3)) {
        test_die("needs 2 ranks (3 with -F)");
    }
    cap = test_opt.max_size > FLOOD_SIZE ? test_opt.max_size : FLOOD_SIZE;
    nmax = (size_t) flood_n > 16 ? (size_t) flood_n : 16;
    buf = xmalloc(cap);
    arrived = xmalloc(nmax * sizeof(*arrived));
    sizes = xmalloc(nmax * sizeof(*sizes));
    rounds = pairs(buf, arrived, sizes, &first_talks);
    if (flood_n > 0) {
        full_socket(buf, arrived, sizes);
    }
    free(sizes);
    free(arrived);
    free(buf);
    return test_finish("%d ordered pairs in %d rounds (%d first talks), up to %zu B, %ld "
                       "messages into a full socket; every message arrived while its sender "
                       "computed %.1f s",
                       test_size * (test_size - 1), rounds, first_talks, test_opt.max_size,
                       flood_n, compute_s);
}
