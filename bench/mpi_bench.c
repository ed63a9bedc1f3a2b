/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * MPI point-to-point benchmarks in the style of the OSU micro-benchmarks, so that btl/devmem
 * and btl/tcp are measured by the same code in the same run (bench/run.sh):
 *
 *   lat    ping-pong between ranks 0 and 1; one-way latency = round trip / 2
 *   bw     rank 0 sends a window of messages to rank 1, which answers with 4 bytes
 *   bibw   ranks 0 and 1 send windows to each other at once
 *   rate   ranks r < np/2 each send windows to r + np/2 (message rate of np/2 pairs)
 *
 * Before the timed iterations of every size, one warmup iteration fills each message with a
 * pattern that depends on the message and the size, and the receivers check every byte
 * (-n turns this off); the job aborts on the first wrong byte.
 */
#include "bench_util.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ACK_TAG 99
#define DATA_TAG 1
#define BUF_BYTES_MAX ((size_t) 256 << 20) /* per direction: distinct buffers per window slot */

static int rank, nranks;
static int validate = 1;
static int spoil;                 /* -X: rank 0 spoils its first checked payload (self-test) */
static double time_limit = 2.0; /* -T: seconds of timed iterations per size */

static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "mpi_bench[%d]: ", rank);
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    MPI_Abort(MPI_COMM_WORLD, 2);
    exit(2);
}

static void *alloc_or_die(size_t len)
{
    void *p = NULL;
    if (0 != posix_memalign(&p, 4096, len > 0 ? len : 1)) {
        die("out of memory (%s)", "buffers");
    }
    memset(p, 0, len);
    return p;
}

/* Fill a payload that the receiver checks; with -X, rank 0 spoils the first one's last byte. */
static void fill(char *buf, size_t size, uint64_t idx)
{
    bench_pat_fill(buf, size, idx);
    if (spoil && 0 == rank && size > 0) {
        buf[size - 1] ^= 0x5a;
        spoil = 0;
    }
}

static void check(const void *buf, size_t size, uint64_t idx, int from)
{
    long bad = bench_pat_find_error(buf, size, idx);
    if (bad >= 0) {
        char what[160];
        snprintf(what, sizeof(what), "message %llu of %zu bytes from rank %d: byte %ld is 0x%02x, want 0x%02x",
                 (unsigned long long) idx, size, from, bad, ((const uint8_t *) buf)[bad],
                 bench_pat_byte(idx, size, (size_t) bad));
        die("data check failed: %s", what);
    }
}

/* Slot j of a buffer area: one message each, up to BUF_BYTES_MAX in total, then reused. */
struct area {
    char *base;
    int slots;
};

static int distinct_slots(size_t size, int window)
{
    size_t per = size > 0 ? size : 1;
    if ((size_t) window * per <= BUF_BYTES_MAX) {
        return window;
    }
    return BUF_BYTES_MAX / per > 0 ? (int) (BUF_BYTES_MAX / per) : 1;
}

static struct area area_make(size_t size, int window)
{
    struct area a;
    a.slots = distinct_slots(size, window);
    a.base = alloc_or_die((size_t) a.slots * (size > 0 ? size : 1));
    return a;
}

static char *slot(const struct area *a, size_t size, int j)
{
    return a->base + (size_t) (j % a->slots) * size;
}

/* One iteration of lat; check: fill and check the payloads (warmup only). */
static void lat_iter(char *sbuf, char *rbuf, size_t size, uint64_t idx, int check_data)
{
    if (0 == rank) {
        if (check_data) {
            fill(sbuf, size, idx);
        }
        MPI_Send(sbuf, (int) size, MPI_BYTE, 1, DATA_TAG, MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int) size, MPI_BYTE, 1, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (check_data) {
            check(rbuf, size, idx + 1, 1);
        }
    } else if (1 == rank) {
        MPI_Recv(rbuf, (int) size, MPI_BYTE, 0, DATA_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (check_data) {
            check(rbuf, size, idx, 0);
            fill(sbuf, size, idx + 1);
        }
        MPI_Send(sbuf, (int) size, MPI_BYTE, 0, DATA_TAG, MPI_COMM_WORLD);
    }
}

/*
 * One window between this rank and `peer`: send (if sending) and receive (if receiving)
 * `window` messages, then the receiver acknowledges with 4 bytes. With check_data the
 * window is cut to the distinct slots, so that no two messages share a buffer.
 */
static void window_iter(struct area *s, struct area *r, size_t size, int window, int peer,
                        int sending, int receiving, uint64_t idx0, int check_data,
                        MPI_Request *reqs)
{
    int n = 0, ack = 0;

    if (check_data) {
        window = distinct_slots(size, window); /* the same on both sides */
    }
    if (receiving) {
        for (int j = 0; j < window; j++) {
            MPI_Irecv(slot(r, size, j), (int) size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD,
                      &reqs[n++]);
        }
    }
    if (sending) {
        for (int j = 0; j < window; j++) {
            if (check_data) {
                fill(slot(s, size, j), size, idx0 + (uint64_t) j);
            }
            MPI_Isend(slot(s, size, j), (int) size, MPI_BYTE, peer, DATA_TAG, MPI_COMM_WORLD,
                      &reqs[n++]);
        }
    }
    MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE);
    if (receiving && check_data) {
        for (int j = 0; j < window; j++) {
            check(slot(r, size, j), size, idx0 + (uint64_t) j, peer);
        }
    }
    /* the receiver says it has everything; with both sides sending, both say it */
    if (receiving && !sending) {
        MPI_Send(&ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD);
    } else if (sending && !receiving) {
        MPI_Recv(&ack, 1, MPI_INT, peer, ACK_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Sendrecv(&ack, 1, MPI_INT, peer, ACK_TAG, &n, 1, MPI_INT, peer, ACK_TAG,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
}

/* Rank 0 fits the timed iterations into -T seconds from its warmup time; everybody uses its
 * count, and the barrier lines the ranks up before the clock starts. */
static int agree_iters(struct bench_plan plan, double warm_secs)
{
    int iters = bench_iters_within(plan.iters, plan.warmup, warm_secs, time_limit);
    MPI_Bcast(&iters, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    return iters;
}

static void run_size(enum bench_kind kind, size_t size, double scale)
{
    struct bench_plan plan = bench_plan_for(kind, size, scale);
    int pairs = BENCH_RATE == kind ? nranks / 2 : 1;
    int peer = -1, sending = 0, receiving = 0;
    double t0, elapsed, slowest;
    MPI_Request *reqs = calloc(2 * (size_t) plan.window, sizeof(*reqs));

    if (NULL == reqs) {
        die("out of memory (%s)", "requests");
    }
    if (BENCH_LAT == kind) {
        struct area s = area_make(size, 1), r = area_make(size, 1);
        t0 = bench_now();
        for (int i = 0; i < plan.warmup; i++) {
            lat_iter(s.base, r.base, size, (uint64_t) i * 2, validate && 0 == i);
        }
        plan.iters = agree_iters(plan, bench_now() - t0);
        t0 = bench_now();
        for (int i = 0; i < plan.iters; i++) {
            lat_iter(s.base, r.base, size, 0, 0);
        }
        elapsed = bench_now() - t0;
        if (0 == rank) {
            double usec = elapsed * 1e6 / (2.0 * plan.iters);
            bench_print_result(kind, size, usec, (double) size / (usec * 1e-6), 1e6 / usec);
        }
        free(s.base);
        free(r.base);
        free(reqs);
        MPI_Barrier(MPI_COMM_WORLD);
        return;
    }

    /* bw, bibw, rate: who talks to whom */
    if (BENCH_RATE == kind) {
        if (rank < 2 * pairs) {
            peer = rank < pairs ? rank + pairs : rank - pairs;
            sending = rank < pairs;
            receiving = !sending;
        }
    } else if (rank < 2) {
        peer = 1 - rank;
        sending = 0 == rank || BENCH_BIBW == kind;
        receiving = 1 == rank || BENCH_BIBW == kind;
    }
    {
        struct area s = area_make(size, sending ? plan.window : 1);
        struct area r = area_make(size, receiving ? plan.window : 1);
        t0 = bench_now();
        if (peer >= 0) {
            for (int i = 0; i < plan.warmup; i++) {
                window_iter(&s, &r, size, plan.window, peer, sending, receiving,
                            (uint64_t) i * (uint64_t) plan.window, validate && 0 == i, reqs);
            }
        }
        plan.iters = agree_iters(plan, bench_now() - t0);
        t0 = bench_now();
        if (peer >= 0) {
            for (int i = 0; i < plan.iters; i++) {
                window_iter(&s, &r, size, plan.window, peer, sending, receiving, 0, 0, reqs);
            }
        }
        elapsed = peer >= 0 ? bench_now() - t0 : 0.0;
        free(s.base);
        free(r.base);
    }
    MPI_Reduce(&elapsed, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (0 == rank) {
        double msgs = (double) pairs * plan.window * plan.iters * (BENCH_BIBW == kind ? 2 : 1);
        bench_print_result(kind, size, slowest * 1e6 / msgs, msgs * (double) size / slowest,
                           msgs / slowest);
    }
    free(reqs);
    MPI_Barrier(MPI_COMM_WORLD);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: mpi_bench -t lat|bw|bibw|rate [-s SIZES] [-x SCALE] [-T SECS] [-n] [-X]\n"
            "  -t KIND   lat: ping-pong of ranks 0 and 1; bw / bibw: windows 0 -> 1 / both ways;\n"
            "            rate: np/2 pairs (r -> r + np/2), np even\n"
            "  -s SIZES  a list (8,1k,64k) or a range of powers of two (1-64m, the default)\n"
            "  -x SCALE  iterations per size relative to the default (0.1: a quick look)\n"
            "  -T SECS   at most about this long timed per size (default 2; 0: no limit)\n"
            "  -n        no data validation (by default one warmup iteration per size checks\n"
            "            every byte it receives)\n"
            "  -X        self-test: rank 0 spoils one byte of its first checked message, so the\n"
            "            check must fail and the job abort\n"
            "Output, one line per size: KIND SIZE usec=.. MBps=.. Gbps=.. msgps=..\n");
}

int main(int argc, char **argv)
{
    struct bench_sizes sizes;
    char err[128];
    int kind = -1, opt;
    double scale = 1.0;
    const char *size_arg = "1-64m";

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    while (-1 != (opt = getopt(argc, argv, "t:s:x:T:nXh"))) {
        switch (opt) {
        case 't': kind = bench_kind_parse(optarg); break;
        case 's': size_arg = optarg; break;
        case 'x': scale = atof(optarg); break;
        case 'T': time_limit = atof(optarg); break;
        case 'n': validate = 0; break;
        case 'X': spoil = 1; break;
        default:
            if (0 == rank) {
                usage();
            }
            MPI_Finalize();
            return 'h' == opt ? 0 : 2;
        }
    }
    if (kind < 0) {
        if (0 == rank) {
            usage();
        }
        die("%s", "-t KIND is required (lat, bw, bibw or rate)");
    }
    if (0 != bench_sizes_parse(size_arg, &sizes, err, sizeof(err))) {
        die("%s", err);
    }
    if (!(scale > 0.0)) {
        die("-x wants a positive scale, not '%s'", "0");
    }
    if (nranks < 2 || (BENCH_RATE == kind && 0 != nranks % 2)) {
        die("%s", "needs at least 2 ranks (an even number for rate)");
    }
    if (0 == rank) {
        printf("# mpi_bench %s np=%d scale=%g limit=%gs validation=%s\n", bench_kind_name(kind),
               nranks, scale, time_limit, validate ? "first warmup iteration" : "off");
    }
    for (int i = 0; i < sizes.count; i++) {
        if (sizes.size[i] > (size_t) 1 << 30) {
            die("%s", "sizes above 1 GiB are not supported");
        }
        run_size(kind, sizes.size[i], scale);
    }
    MPI_Finalize();
    return 0;
}
