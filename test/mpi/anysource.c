/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI_ANY_SOURCE / MPI_ANY_TAG receives, MPI_Probe and MPI_Iprobe with MPI_Get_count checks.
 *
 * Every rank takes a turn as the collector. The other ranks each send it -n messages (default 30)
 * of mixed sizes (0 B up to -m, default 512 KiB) with tag = message number, three times:
 *   A: the collector calls MPI_Probe(ANY_SOURCE, ANY_TAG), checks the tag is the next one from
 *      that source (non-overtaking), checks MPI_Get_count in bytes and in MPI_INT (MPI_UNDEFINED
 *      when the size is not a multiple of 4), then receives exactly that message;
 *   B: the same with an MPI_Iprobe polling loop;
 *   C: MPI_Recv(ANY_SOURCE, ANY_TAG) into a buffer of the largest size; status is checked.
 * After each turn the collector checks with MPI_Iprobe that no message is left over (a duplicate
 * would be one).
 */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int nmsgs = 30;

static int extra_opt(int opt, const char *arg)
{
    if (opt == 'n') {
        nmsgs = atoi(arg);
        return nmsgs >= 1 ? 0 : -1;
    }
    return -1;
}

static size_t msg_size(int root, int phase, int src, int i)
{
    uint64_t h = test_hash((uint64_t)root << 16 | (uint64_t)phase, (uint64_t)src, (uint64_t)i);
    unsigned kind = (unsigned)(h % 16);
    size_t max = test_opt.max_size, s;

    h >>= 8;
    if (kind == 0) {
        s = 0;
    } else if (kind < 9) {
        s = 1 + h % 300;
    } else if (kind < 14) {
        s = 300 + h % 70000;
    } else {
        s = max - h % (max / 4 + 1);
    }
    return s > max ? max : s;
}

static uint64_t msg_idx(int root, int phase, int i)
{
    return ((uint64_t)root << 32) | ((uint64_t)phase << 24) | (uint64_t)i;
}

static void check_counts(const MPI_Status *st, size_t want, const char *what)
{
    int nbytes = -1, nints = -1;

    MPI_Get_count(st, MPI_BYTE, &nbytes);
    MPI_Get_count(st, MPI_INT, &nints);
    if (nbytes < 0 || (size_t)nbytes != want) {
        test_die("%s from rank %d tag %d: MPI_Get_count(MPI_BYTE) = %d, expected %zu", what,
                 st->MPI_SOURCE, st->MPI_TAG, nbytes, want);
    }
    if (want % sizeof(int) == 0 ? nints != (int)(want / sizeof(int)) : nints != MPI_UNDEFINED) {
        test_die("%s from rank %d tag %d (%zu bytes): MPI_Get_count(MPI_INT) = %d, expected %d",
                 what, st->MPI_SOURCE, st->MPI_TAG, want, nints,
                 want % sizeof(int) == 0 ? (int)(want / sizeof(int)) : MPI_UNDEFINED);
    }
}

int main(int argc, char **argv)
{
    static const char *phase_name[3] = {"Probe", "Iprobe", "Recv(ANY_SOURCE)"};
    uint8_t *sbuf, *rbuf;
    int *next;
    unsigned long long msgs = 0, polls = 0;
    double t0;

    test_init(&argc, &argv, "anysource", (size_t)512 << 10, 1, "n:",
              "  -n N  messages from each sender per phase (default 30)\n", extra_opt);
    if (test_size < 2) {
        test_die("needs at least 2 ranks");
    }
    if (nmsgs > 32767) {
        test_die("-n %d: at most 32767 (tags)", nmsgs);
    }
    sbuf = xmalloc(test_opt.max_size);
    rbuf = xmalloc(test_opt.max_size);
    next = xmalloc(sizeof(*next) * (size_t)test_size);
    t0 = MPI_Wtime();

    for (int it = 0; it < test_opt.iters; it++) {
        for (int root = 0; root < test_size; root++) {
            for (int phase = 0; phase < 3; phase++) {
                if (test_rank != root) {
                    for (int i = 0; i < nmsgs; i++) {
                        size_t len = msg_size(root, phase, test_rank, i);
                        pat_fill(sbuf, len, test_rank, root, msg_idx(root, phase, i), 0);
                        MPI_Send(sbuf, (int)len, MPI_BYTE, root, i, MPI_COMM_WORLD);
                    }
                } else {
                    int total = (test_size - 1) * nmsgs;
                    memset(next, 0, sizeof(*next) * (size_t)test_size);
                    for (int n = 0; n < total; n++) {
                        MPI_Status st;
                        size_t len;
                        int src, tag;
                        char desc[256];

                        if (phase == 0) {
                            MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                        } else if (phase == 1) {
                            int flag = 0;
                            while (!flag) {
                                MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag,
                                           &st);
                                polls++;
                            }
                        } else {
                            MPI_Recv(rbuf, (int)test_opt.max_size, MPI_BYTE, MPI_ANY_SOURCE,
                                     MPI_ANY_TAG, MPI_COMM_WORLD, &st);
                        }
                        src = st.MPI_SOURCE;
                        tag = st.MPI_TAG;
                        if (src < 0 || src >= test_size || src == root) {
                            test_die("%s: status names source %d", phase_name[phase], src);
                        }
                        if (tag != next[src]) {
                            test_die("%s: got tag %d from rank %d, expected %d (message order "
                                     "from one source must be kept)", phase_name[phase], tag, src,
                                     next[src]);
                        }
                        next[src]++;
                        len = msg_size(root, phase, src, tag);
                        snprintf(desc, sizeof(desc), "%s message %d (%zu bytes)",
                                 phase_name[phase], tag, len);
                        check_counts(&st, len, desc);
                        if (phase < 2) {
                            MPI_Status st2;
                            MPI_Recv(rbuf, (int)len, MPI_BYTE, src, tag, MPI_COMM_WORLD, &st2);
                            check_counts(&st2, len, desc);
                        }
                        pat_check(rbuf, len, src, root, msg_idx(root, phase, tag), 0, desc);
                        msgs++;
                    }
                }
                MPI_Barrier(MPI_COMM_WORLD);
            }
            if (test_rank == root) {
                int found = 0;
                MPI_Status st;
                for (int k = 0; k < 100 && !found; k++) {
                    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &found, &st);
                }
                if (found) {
                    test_die("a message nobody sent is waiting: from rank %d tag %d",
                             st.MPI_SOURCE, st.MPI_TAG);
                }
            }
            test_note("collector %d done", root);
        }
    }

    {
        unsigned long long mine[2] = {msgs, polls}, all[2];
        MPI_Reduce(mine, all, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        msgs = all[0];
        polls = all[1];
    }
    free(sbuf);
    free(rbuf);
    free(next);
    return test_finish("%llu messages matched by Probe/Iprobe/ANY_SOURCE (%llu Iprobe polls) in "
                       "%.2f s", msgs, polls, MPI_Wtime() - t0);
}
