/* SPDX-License-Identifier: BSD-3-Clause */
/* Shared helpers for the btl/devmem MPI test programs (see common.h). */
#include "common.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int test_rank = -1;
int test_size = 0;
const char *test_name = "test";
struct test_opts test_opt;
int test_thread_level = MPI_THREAD_SINGLE;
MPI_Comm test_abort_comm = MPI_COMM_WORLD;

static int corrupt_done;

static uint64_t mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

static uint64_t pat_seed(int src, int dst, uint64_t idx)
{
    return mix64(((uint64_t)(uint32_t)src << 40) ^ ((uint64_t)(uint32_t)dst << 20) ^
                 mix64(idx + 0x9e3779b97f4a7c15ULL));
}

static inline uint64_t pat_word(uint64_t seed, uint64_t q)
{
    return mix64(seed + q * 0x9e3779b97f4a7c15ULL);
}

uint64_t test_hash(uint64_t a, uint64_t b, uint64_t c)
{
    return mix64(mix64(mix64(a + 0x1234567ULL) ^ b) ^ c);
}

uint64_t test_compute(double secs)
{
    double until = MPI_Wtime() + secs;
    uint64_t h = 0, i = 0;

    while (MPI_Wtime() < until) {
        for (int k = 0; k < 4096; k++, i++) {
            h = test_hash(h, i, 7);
        }
    }
    return h;
}

uint8_t pat_byte(int src, int dst, uint64_t idx, uint64_t off)
{
    uint64_t w = pat_word(pat_seed(src, dst, idx), off >> 3);
    return (uint8_t)(w >> (8 * (off & 7)));
}

void pat_fill(void *buf, size_t len, int src, int dst, uint64_t idx, uint64_t off0)
{
    uint8_t *p = buf;
    uint64_t seed = pat_seed(src, dst, idx);
    size_t i = 0;

    /* head up to an 8-byte boundary of the stream offset */
    while (i < len && ((off0 + i) & 7) != 0) {
        p[i] = (uint8_t)(pat_word(seed, (off0 + i) >> 3) >> (8 * ((off0 + i) & 7)));
        i++;
    }
    for (; i + 8 <= len; i += 8) {
        uint64_t w = pat_word(seed, (off0 + i) >> 3);
        for (int b = 0; b < 8; b++) {
            p[i + b] = (uint8_t)(w >> (8 * b));
        }
    }
    for (; i < len; i++) {
        p[i] = (uint8_t)(pat_word(seed, (off0 + i) >> 3) >> (8 * ((off0 + i) & 7)));
    }
    /* -x / -X: rank 0 spoils one byte of the first non-empty payload (of at least -X bytes) it
     * sends, so the receiver's check must fire after the data went through the transport. */
    /* an exchange: threads of one rank may fill at once (threads.c) */
    if (test_opt.corrupt && test_rank == 0 && len > 0 && len >= test_opt.corrupt_min &&
        0 == __atomic_exchange_n(&corrupt_done, 1, __ATOMIC_RELAXED)) {
        p[len / 2] ^= 0x5a;
        fprintf(stderr, "%s: rank 0: -x: corrupted the byte at offset %llu of message %llu to "
                "rank %d on purpose\n", test_name, (unsigned long long)(off0 + len / 2),
                (unsigned long long)idx, dst);
    }
}

static void report_mismatch(const char *what, int src, int dst, uint64_t idx, uint64_t off,
                            uint8_t want, uint8_t got)
{
    fprintf(stderr,
            "%s: DATA MISMATCH rank=%d %s (src=%d dst=%d msg=%llu) offset=%llu expected=0x%02x "
            "got=0x%02x\n",
            test_name, test_rank, what, src, dst, (unsigned long long)idx,
            (unsigned long long)off, want, got);
    fflush(stderr);
}

void pat_check(const void *buf, size_t len, int src, int dst, uint64_t idx, uint64_t off0,
               const char *what)
{
    const uint8_t *p = buf;
    uint64_t seed = pat_seed(src, dst, idx);

    for (size_t i = 0; i < len; i++) {
        uint64_t off = off0 + i;
        uint8_t want = (uint8_t)(pat_word(seed, off >> 3) >> (8 * (off & 7)));
        if (p[i] != want) {
            size_t bad = 0;
            for (size_t j = i; j < len; j++) {
                uint64_t o = off0 + j;
                bad += p[j] != (uint8_t)(pat_word(seed, o >> 3) >> (8 * (o & 7)));
            }
            report_mismatch(what, src, dst, idx, off, want, p[i]);
            fprintf(stderr, "%s: rank=%d %zu of the %zu bytes from offset %llu on are wrong\n",
                    test_name, test_rank, bad, len - i, (unsigned long long)off);
            MPI_Abort(test_abort_comm, 3);
            exit(3);
        }
    }
}

void fill_check(const void *buf, size_t len, uint8_t fill, size_t report_base, const char *what)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != fill) {
            fprintf(stderr,
                    "%s: GAP OVERWRITTEN rank=%d %s offset=%zu expected=0x%02x got=0x%02x\n",
                    test_name, test_rank, what, report_base + i, fill, p[i]);
            fflush(stderr);
            MPI_Abort(test_abort_comm, 3);
            exit(3);
        }
    }
}

int parse_size(const char *s, size_t *out)
{
    char *end = NULL;
    unsigned long long v;

    if (s == NULL || !isdigit((unsigned char)*s)) {
        return -1;
    }
    v = strtoull(s, &end, 10);
    switch (tolower((unsigned char)*end)) {
    case 'g':
        v <<= 10;
        /* fall through */
    case 'm':
        v <<= 10;
        /* fall through */
    case 'k':
        v <<= 10;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'b' || *end == 'B') {
        end++;
    }
    if (*end != '\0') {
        return -1;
    }
    *out = (size_t)v;
    return 0;
}

void *xmalloc(size_t len)
{
    void *p = malloc(len ? len : 1);
    if (p == NULL) {
        test_die("out of memory allocating %zu bytes", len);
    }
    return p;
}

void test_die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: rank %d: ", test_name, test_rank);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    MPI_Abort(test_abort_comm, 2);
    exit(2);
}

void test_note(const char *fmt, ...)
{
    va_list ap;
    if (!test_opt.verbose || test_rank != 0) {
        return;
    }
    printf("%s: ", test_name);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static const char *extra_usage_text;

static void usage(void)
{
    if (test_rank == 0) {
        fprintf(stderr,
                "usage: %s [-m MAXSIZE] [-i ITERS] [-x | -X SIZE] [-v] [program options]\n"
                "  -m  largest message (bytes; k/m/g suffixes)\n"
                "  -i  iterations\n"
                "  -x  rank 0 corrupts one byte it sends, on purpose (the job must fail)\n"
                "  -X SIZE  the same in the first payload of at least SIZE bytes\n"
                "  -v  verbose\n%s",
                test_name, extra_usage_text ? extra_usage_text : "");
    }
}

void test_init(int *argc, char ***argv, const char *name, size_t default_max, int default_iters,
               const char *extra_opts, const char *extra_usage,
               int (*extra_cb)(int opt, const char *arg))
{
    char optstring[64];
    int c;

    test_name = name;
    extra_usage_text = extra_usage;
    int provided;

    MPI_Init_thread(argc, argv, test_thread_level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &test_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &test_size);
    if (provided < test_thread_level) {
        test_die("MPI_Init_thread gave thread level %d, the test needs %d", provided,
                 test_thread_level);
    }
    /* Errors from MPI calls must stop the test with a message, not go unnoticed. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);

    test_opt.max_size = default_max;
    test_opt.iters = default_iters;
    test_opt.corrupt = 0;
    test_opt.corrupt_min = 0;
    test_opt.verbose = 0;

    snprintf(optstring, sizeof(optstring), "m:i:xX:vh%s", extra_opts ? extra_opts : "");
    opterr = 0;
    while ((c = getopt(*argc, *argv, optstring)) != -1) {
        switch (c) {
        case 'm':
            if (parse_size(optarg, &test_opt.max_size) != 0) {
                usage();
                test_die("bad size for -m: '%s'", optarg);
            }
            if (test_opt.max_size > ((size_t)1 << 30)) {
                test_die("-m %s: at most 1 GiB (MPI counts are int)", optarg);
            }
            break;
        case 'i':
            test_opt.iters = atoi(optarg);
            if (test_opt.iters < 1) {
                test_die("bad iteration count for -i: '%s'", optarg);
            }
            break;
        case 'x':
            test_opt.corrupt = 1;
            break;
        case 'X':
            test_opt.corrupt = 1;
            if (parse_size(optarg, &test_opt.corrupt_min) != 0) {
                usage();
                test_die("bad size for -X: '%s'", optarg);
            }
            break;
        case 'v':
            test_opt.verbose = 1;
            break;
        case 'h':
            usage();
            MPI_Finalize();
            exit(0);
        default:
            if (c != '?' && extra_cb != NULL && extra_cb(c, optarg) == 0) {
                break;
            }
            usage();
            test_die("unknown or incomplete option '-%c'", optopt ? optopt : c);
        }
    }
    if (optind != *argc) {
        usage();
        test_die("unexpected argument '%s'", (*argv)[optind]);
    }
}

int test_finish(const char *fmt, ...)
{
    va_list ap;

    MPI_Barrier(MPI_COMM_WORLD);
    if (test_opt.corrupt) {
        /* -x must never end in success: if the check did not fire, say so and fail. */
        test_die("-x given but no corrupted byte was detected (was anything received?)");
    }
    if (test_rank == 0) {
        printf("%s: OK np=%d ", test_name, test_size);
        va_start(ap, fmt);
        vprintf(fmt, ap);
        va_end(ap);
        putchar('\n');
        fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
