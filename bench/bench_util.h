/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the MPI benchmark (mpi_bench) and the raw TCP ceiling (tcp_bench) share, so that
 * their figures are taken the same way and printed in one format that bench/run.sh reads:
 * the size list, how many iterations and how large a window each size gets, the data
 * pattern for validation, and the result line.
 */
#ifndef DEVMEM_BENCH_UTIL_H
#define DEVMEM_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#define BENCH_MAX_SIZES 64

/* The benchmark kinds, named as on the command line and in the result lines. */
enum bench_kind { BENCH_LAT, BENCH_BW, BENCH_BIBW, BENCH_RATE };

struct bench_sizes {
    size_t size[BENCH_MAX_SIZES];
    int count;
};

/* "lat", "bw", "bibw", "rate" -> kind; -1 when unknown. */
int bench_kind_parse(const char *s);
const char *bench_kind_name(enum bench_kind k);

/* "123", "4k", "64M", "1g" (powers of 1024). Returns 0 and sets *out, or -1. */
int bench_parse_size(const char *s, size_t *out);

/* A comma-separated list ("8,1k,64k") or a range "MIN-MAX" (every power of two from MIN to
 * MAX, MIN itself rounded to one). Returns 0, or -1 with a message in err. */
int bench_sizes_parse(const char *s, struct bench_sizes *out, char *err, size_t errlen);

/*
 * How much to do at one size, scaled by `scale` (1.0: about a quarter of a second per size at a
 * few GB/s; smaller for a quick look). window: messages in flight per iteration (bandwidth,
 * rate); iters: timed iterations; warmup: untimed ones before them.
 */
struct bench_plan {
    int window;
    int iters;
    int warmup;
};
struct bench_plan bench_plan_for(enum bench_kind k, size_t size, double scale);

/*
 * Timed iterations that fit in `limit` seconds, given that `warmup` untimed ones took
 * `warm_secs`: never more than planned, never fewer than 3. The first warmup iteration
 * (connection setup, validation) is part of warm_secs, so this errs on the short side.
 */
int bench_iters_within(int planned, int warmup, double warm_secs, double limit);

/* Monotonic seconds. */
double bench_now(void);

/* The median of n values (sorts v in place; n >= 1). */
double bench_median(double *v, int n);

/* Validation pattern: byte `off` of message `idx` of the given size (depends on all three). */
uint8_t bench_pat_byte(uint64_t idx, size_t size, size_t off);
void bench_pat_fill(void *buf, size_t len, uint64_t idx);
/* Index of the first wrong byte, or -1 when all len bytes match. */
long bench_pat_find_error(const void *buf, size_t len, uint64_t idx);

/*
 * The result line, one per size:
 *   KIND SIZE usec=U MBps=B Gbps=G msgps=M
 * usec: one-way latency (lat) or time per message; MBps: 10^6 bytes/s of payload (both
 * directions for bibw, all pairs for rate). A "#" line before them says what was run.
 */
void bench_print_result(enum bench_kind k, size_t size, double usec, double bytes_per_s,
                        double msgs_per_s);

#endif
