/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A computing application's stand-in, for measuring what a transport costs the work beside
 * it (bench/rx_threads.sh): one process that does a fixed arithmetic step over and over for
 * -t seconds and prints how many steps it made per second. Several copies beside a transfer,
 * against the same copies alone, give the share of the CPUs the transfer took.
 *
 *   cpu_work steps=N secs=S rate=R     (R = N / S, steps per second)
 */
#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile double sink;

int main(int argc, char **argv)
{
    double secs = 5.0, start, now, acc = 1.0;
    unsigned long long steps = 0;
    int opt;

    while (-1 != (opt = getopt(argc, argv, "t:h"))) {
        switch (opt) {
        case 't': secs = atof(optarg); break;
        default:
            fprintf(stderr, "usage: cpu_work [-t SECONDS]  (default 5)\n");
            return 'h' == opt ? 0 : 2;
        }
    }
    if (!(secs > 0.0)) {
        fprintf(stderr, "cpu_work: -t wants a positive number of seconds\n");
        return 2;
    }
    start = now = bench_now();
    while (now - start < secs) {
        for (int i = 0; i < 4096; i++) { /* one step: a few microseconds of floating point */
            acc = acc * 1.0000001 + 1e-9;
        }
        steps++;
        now = bench_now();
    }
    sink = acc;
    printf("cpu_work steps=%llu secs=%.3f rate=%.0f\n", steps, now - start,
           (double) steps / (now - start));
    return 0;
}
