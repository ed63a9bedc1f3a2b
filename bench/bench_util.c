/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared by mpi_bench and tcp_bench: see bench_util.h. */
#include "bench_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const kind_names[] = {"lat", "bw", "bibw", "rate"};

int bench_kind_parse(const char *s)
{
    for (int k = 0; k < (int) (sizeof(kind_names) / sizeof(kind_names[0])); k++) {
        if (0 == strcmp(s, kind_names[k])) {
            return k;
        }
    }
    return -1;
}

const char *bench_kind_name(enum bench_kind k)
{
    return kind_names[k];
}

int bench_parse_size(const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull(s, &end, 10);
    if (end == s || 0 != errno) {
        return -1;
    }
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if ('\0' != *end && ',' != *end && '-' != *end) {
        return -1;
    }
    *out = (size_t) v;
    return 0;
}

int bench_sizes_parse(const char *s, struct bench_sizes *out, char *err, size_t errlen)
{
    const char *dash = strchr(s, '-');

    out->count = 0;
    if (NULL != dash && NULL == strchr(s, ',')) {
        size_t lo, hi;
        if (0 != bench_parse_size(s, &lo) || 0 != bench_parse_size(dash + 1, &hi) || hi < lo) {
            snprintf(err, errlen, "bad size range '%s' (want MIN-MAX, e.g. 1-64m)", s);
            return -1;
        }
        for (size_t v = lo > 0 ? lo : 1; v <= hi && out->count < BENCH_MAX_SIZES; v *= 2) {
            out->size[out->count++] = v;
        }
        return 0;
    }
    while ('\0' != *s) {
        size_t v;
        if (out->count == BENCH_MAX_SIZES) {
            snprintf(err, errlen, "more than %d sizes", BENCH_MAX_SIZES);
            return -1;
        }
        if (0 != bench_parse_size(s, &v)) {
            snprintf(err, errlen, "bad size in list near '%s'", s);
            return -1;
        }
        out->size[out->count++] = v;
        s += strcspn(s, ",");
        if (',' == *s) {
            s++;
        }
    }
    if (0 == out->count) {
        snprintf(err, errlen, "empty size list");
        return -1;
    }
    return 0;
}

static int clamp_int(double v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : (int) v;
}

struct bench_plan bench_plan_for(enum bench_kind k, size_t size, double scale)
{
    struct bench_plan p;
    double bytes = (double) (size > 0 ? size : 1);

    if (BENCH_LAT == k) {
        /* a round trip moves 2 * size: about 512 MiB at scale 1, at least 10 round trips */
        p.window = 1;
        p.iters = clamp_int(scale * 256.0 * (1 << 20) / bytes, 10, (int) (scale * 20000) + 10);
    } else {
        /* a window of up to 64 messages, at most 256 MiB of them in flight, like osu_bw's */
        p.window = clamp_int(256.0 * (1 << 20) / bytes, 1, 64);
        p.iters = clamp_int(scale * 1024.0 * (1 << 20) / (bytes * p.window), 3,
                            (int) (scale * 2000) + 3);
    }
    /* enough to connect, validate and time one iteration; bounded, since a starved link
     * (busy ranks on 2 cores) can take milliseconds per message */
    p.warmup = clamp_int(p.iters / 20.0, 2, 20);
    return p;
}

int bench_iters_within(int planned, int warmup, double warm_secs, double limit)
{
    double per = warmup > 0 ? warm_secs / warmup : 0.0;
    if (limit <= 0.0 || per <= 0.0 || per * planned <= limit) {
        return planned;
    }
    return limit / per < 3.0 ? 3 : (int) (limit / per);
}

double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

uint8_t bench_pat_byte(uint64_t idx, size_t size, size_t off)
{
    uint64_t x = (idx * 0x9E3779B97F4A7C15ull) ^ ((uint64_t) size << 7) ^ (off / 8);

    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    x ^= x >> 32;
    return (uint8_t) (x >> (8 * (off % 8)));
}

void bench_pat_fill(void *buf, size_t len, uint64_t idx)
{
    uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        p[i] = bench_pat_byte(idx, len, i);
    }
}

long bench_pat_find_error(const void *buf, size_t len, uint64_t idx)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != bench_pat_byte(idx, len, i)) {
            return (long) i;
        }
    }
    return -1;
}

void bench_print_result(enum bench_kind k, size_t size, double usec, double bytes_per_s,
                        double msgs_per_s)
{
    printf("%-4s %10zu usec=%.3f MBps=%.2f Gbps=%.3f msgps=%.0f\n", bench_kind_name(k), size,
           usec, bytes_per_s / 1e6, bytes_per_s * 8 / 1e9, msgs_per_s);
    fflush(stdout);
}
