/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * soak: random traffic for a given time, every byte checked.
 *
 * Round r: every rank computes the same random permutation and message plan from (seed, r),
 * so each rank knows whom it sends to, whom it receives from, the size (0..-m, biased to
 * small and to the eager/rendezvous boundaries) and the tag, without a word exchanged. A
 * rank posts its receives first (one to four messages from its partner, any order of
 * arrival through distinct tags, some from MPI_ANY_TAG), then its sends, blocking or not,
 * and checks every byte against the pattern. Every 64 rounds the ranks agree (Allreduce)
 * whether the time (-t seconds) is up, and every 10 s each rank prints a progress line with
 * the bytes moved and its resident memory, so a soak script can see that it stays flat.
 *
 *   soak [-m SIZE] [-t SECONDS] [-s SEED]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define MSGS_MAX 4

static double seconds = 60;
static uint64_t seed = 1;

static int opt_cb(int opt, const char *arg)
{
    char *end;

    if ('t' == opt) {
        seconds = strtod(arg, &end);
        return '\0' == *end && seconds > 0 ? 0 : -1;
    }
    if ('s' == opt) {
        seed = strtoull(arg, &end, 0);
        return '\0' == *end ? 0 : -1;
    }
    return -1;
}

/* A size from the plan: mostly small, often near the protocol boundaries, up to max. */
static size_t plan_size(uint64_t h, size_t max)
{
    static const size_t edges[] = {0, 1, 4096, 65536, 131072, 131073, 1 << 20};
    size_t s;

    switch (h % 8) {
    case 0: case 1: case 2: s = (h >> 8) % 4097; break;
    case 3: case 4: s = (h >> 8) % (256 * 1024 + 1); break;
    case 5: s = edges[(h >> 8) % (sizeof(edges) / sizeof(edges[0]))]; break;
    default: s = (h >> 8) % (max + 1); break;
    }
    return s > max ? max : s;
}

static long rss_kib(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long pages = 0, rss = 0;

    if (NULL != f) {
        if (2 != fscanf(f, "%ld %ld", &pages, &rss)) {
            rss = 0;
        }
        fclose(f);
    }
    return rss * 4;
}

int main(int argc, char **argv)
{
    int *perm;
    char *sbuf[MSGS_MAX], *rbuf[MSGS_MAX];
    uint64_t round = 0, msgs = 0, bytes = 0;
    double t0, last_print;
    int done = 0;

    test_init(&argc, &argv, "soak", 4 << 20, 0, "t:s:",
              "  -t SECONDS  how long to run (default 60)\n"
              "  -s SEED     plan seed; every rank must be given the same (default 1)\n",
              opt_cb);
    perm = xmalloc(sizeof(int) * (size_t) test_size);
    for (int i = 0; i < MSGS_MAX; i++) {
        sbuf[i] = xmalloc(test_opt.max_size);
        rbuf[i] = xmalloc(test_opt.max_size);
    }
    t0 = last_print = MPI_Wtime();
    while (!done) {
        MPI_Request req[2 * MSGS_MAX];
        size_t size[MSGS_MAX];
        int tag[MSGS_MAX], nreq = 0, to, from, n;
        uint64_t h = test_hash(seed, round, 0);

        /* a permutation of the ranks: i sends to perm[i] */
        for (int i = 0; i < test_size; i++) {
            perm[i] = i;
        }
        for (int i = test_size - 1; i > 0; i--) {
            int j = (int) (test_hash(seed, round, (uint64_t) i + 1) % (uint64_t) (i + 1)), t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        to = perm[test_rank];
        for (from = 0; perm[from] != test_rank; from++) {
        }
        n = 1 + (int) (h % MSGS_MAX);
        /* the plan of the messages from `from` to me, then of mine to `to`: same function */
        for (int k = 0; k < n; k++) {
            uint64_t hk = test_hash(seed, round, 1000 + (uint64_t) from * MSGS_MAX + (uint64_t) k);
            size[k] = plan_size(hk, test_opt.max_size);
            tag[k] = (int) (hk % 30000);
            tag[k] = tag[k] * MSGS_MAX + k; /* distinct per message of the round */
            MPI_Irecv(rbuf[k], (int) size[k], MPI_BYTE, from, (hk & 16) ? MPI_ANY_TAG : tag[k],
                      MPI_COMM_WORLD, &req[nreq++]);
        }
        for (int k = 0; k < n; k++) {
            uint64_t hk = test_hash(seed, round, 1000 + (uint64_t) test_rank * MSGS_MAX + (uint64_t) k);
            size_t s = plan_size(hk, test_opt.max_size);
            int t = (int) (hk % 30000) * MSGS_MAX + k;

            pat_fill(sbuf[k], s, test_rank, to, round * MSGS_MAX + (uint64_t) k, 0);
            if (hk & 32) {
                MPI_Send(sbuf[k], (int) s, MPI_BYTE, to, t, MPI_COMM_WORLD);
            } else {
                MPI_Isend(sbuf[k], (int) s, MPI_BYTE, to, t, MPI_COMM_WORLD, &req[nreq++]);
            }
            msgs++;
            bytes += s;
        }
        MPI_Waitall(nreq, req, MPI_STATUSES_IGNORE);
        for (int k = 0; k < n; k++) {
            char what[96];

            snprintf(what, sizeof(what), "round %llu message %d (%zu B, tag %d) from rank %d",
                     (unsigned long long) round, k, size[k], tag[k], from);
            pat_check(rbuf[k], size[k], from, test_rank, round * MSGS_MAX + (uint64_t) k, 0, what);
        }
        round++;
        if (0 == round % 64) {
            int up = MPI_Wtime() - t0 >= seconds;

            MPI_Allreduce(MPI_IN_PLACE, &up, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            done = up;
            if (done || MPI_Wtime() - last_print >= 10) {
                last_print = MPI_Wtime();
                printf("soak: rank %d round %llu: %llu messages, %llu bytes sent, rss %ld KiB\n",
                       test_rank, (unsigned long long) round, (unsigned long long) msgs,
                       (unsigned long long) bytes, rss_kib());
                fflush(stdout);
            }
        }
    }
    for (int i = 0; i < MSGS_MAX; i++) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    free(perm);
    return test_finish("%llu rounds, %llu messages, %llu bytes checked in %.0f s",
                       (unsigned long long) round, (unsigned long long) msgs,
                       (unsigned long long) bytes, MPI_Wtime() - t0);
}
