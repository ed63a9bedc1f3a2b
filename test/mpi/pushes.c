/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rendezvous whose first bytes may come pushed behind their header (btl_devmem_push), in
 * the three ways such bytes can meet their receive, between ranks 0 and 1 (others only
 * join the barriers):
 *   posted       a ping-pong: the receive waits when the header comes (read in place)
 *   unexpected   the receiver probes until the message is there, then receives it (the
 *                pushed bytes wait for it, then are copied)
 *   strided      the receive's datatype has gaps: Open MPI takes another protocol than the
 *                get, and the pushed bytes are never claimed (more messages than a
 *                connection keeps: the oldest are dropped for room)
 * Sizes straddle the eager limit (128 KiB: the first rendezvous size is the first that
 * pushes) up to 3 MiB. Every byte is checked, and the gaps of the strided receives must
 * stay untouched.
 *
 * Options (besides the common ones): -n N messages per size and way (default 6).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define STRIDE_BLOCK 1000
#define STRIDE_GAP 24
#define GAP_FILL 0x5a

static int per_size = 6;

static int extra(int opt, const char *arg)
{
    if ('n' == opt) {
        per_size = atoi(arg);
        return per_size > 0 ? 0 : -1;
    }
    return -1;
}

static const size_t sizes[] = {65537, 131073, 139264, 196608, 262144, 262147, 1048576,
                               3 * 1048576 + 7};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* there and back: each side's receive is posted before the other sends */
static void posted_one(char *buf, size_t len, uint64_t idx)
{
    if (0 == test_rank) {
        pat_fill(buf, len, 0, 1, idx, 0);
        MPI_Send(buf, (int) len, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(buf, (int) len, MPI_BYTE, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pat_check(buf, len, 1, 0, idx, 0, "posted, answer");
    } else {
        MPI_Recv(buf, (int) len, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pat_check(buf, len, 0, 1, idx, 0, "posted");
        pat_fill(buf, len, 1, 0, idx, 0);
        MPI_Send(buf, (int) len, MPI_BYTE, 0, 2, MPI_COMM_WORLD);
    }
}

static void unexpected_one(char *buf, size_t len, uint64_t idx)
{
    if (0 == test_rank) {
        pat_fill(buf, len, 0, 1, idx, 0);
        MPI_Send(buf, (int) len, MPI_BYTE, 1, 3, MPI_COMM_WORLD);
    } else {
        int there = 0;

        /* progress without a receive: the header (and its push) arrive unexpected */
        memset(buf, 0, len);
        while (!there) {
            MPI_Iprobe(0, 3, MPI_COMM_WORLD, &there, MPI_STATUS_IGNORE);
        }
        MPI_Recv(buf, (int) len, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pat_check(buf, len, 0, 1, idx, 0, "unexpected");
    }
}

/* per_size messages of every size up to -m, one way */
static void each_message(void (*one)(char *buf, size_t len, uint64_t idx), char *buf,
                         uint64_t *idx)
{
    for (size_t s = 0; s < NSIZES; s++) {
        if (sizes[s] > test_opt.max_size) {
            continue;
        }
        for (int i = 0; i < per_size; i++, (*idx)++) {
            one(buf, sizes[s], *idx);
        }
    }
}

static void strided(char *buf, char *wide, uint64_t *idx)
{
    for (size_t s = 0; s < NSIZES; s++) {
        size_t blocks = sizes[s] / STRIDE_BLOCK, len = blocks * STRIDE_BLOCK;
        size_t span = blocks * (STRIDE_BLOCK + STRIDE_GAP);
        MPI_Datatype vec;

        if (sizes[s] > test_opt.max_size) {
            continue;
        }
        MPI_Type_vector((int) blocks, STRIDE_BLOCK, STRIDE_BLOCK + STRIDE_GAP, MPI_BYTE, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < per_size; i++, (*idx)++) {
            if (0 == test_rank) {
                pat_fill(buf, len, 0, 1, *idx, 0);
                MPI_Send(buf, (int) len, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
            } else {
                memset(wide, GAP_FILL, span);
                MPI_Recv(wide, 1, vec, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                for (size_t b = 0; b < blocks; b++) {
                    const char *at = wide + b * (STRIDE_BLOCK + STRIDE_GAP);
                    pat_check(at, STRIDE_BLOCK, 0, 1, *idx, b * STRIDE_BLOCK, "strided");
                    fill_check(at + STRIDE_BLOCK, STRIDE_GAP, GAP_FILL,
                               (size_t) (at + STRIDE_BLOCK - wide), "strided receive's gap");
                }
            }
        }
        MPI_Type_free(&vec);
    }
}

int main(int argc, char **argv)
{
    size_t span;
    uint64_t idx = 0;
    char *buf, *wide;

    test_init(&argc, &argv, "pushes", 4 * 1048576, 1, "n:",
              "  -n N   messages per size and way (default 6)\n", extra);
    span = (test_opt.max_size / STRIDE_BLOCK + 1) * (STRIDE_BLOCK + STRIDE_GAP);
    buf = xmalloc(test_opt.max_size);
    wide = xmalloc(span);
    if (test_rank < 2) {
        each_message(posted_one, buf, &idx);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank < 2) {
        each_message(unexpected_one, buf, &idx);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (test_rank < 2) {
        strided(buf, wide, &idx);
    }
    free(buf);
    free(wide);
    return test_finish("%zu sizes, %d messages per size posted, unexpected and strided, "
                       "%llu messages checked", NSIZES, per_size,
                       (unsigned long long) idx);
}
