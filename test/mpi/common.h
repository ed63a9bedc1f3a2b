/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared helpers for the btl/devmem MPI test programs.
 *
 * Every payload byte is a function of (sender, receiver, message index, byte offset), so a byte
 * that arrives at the wrong place, from the wrong message or from the wrong peer is caught. On a
 * mismatch the checker prints rank, message, offset, expected and received byte, and the program
 * aborts the job with a non-zero status.
 *
 * Common options (each program may add its own):
 *   -m SIZE   largest message in bytes (suffixes k, m, g: powers of 1024)
 *   -i N      iterations / repetitions (program specific meaning)
 *   -x        self-test: rank 0 corrupts one byte of the first payload it sends, so a receiver's
 *             check must fire and the job must fail
 *   -X SIZE   the same, in the first payload of at least SIZE bytes (e.g. a rendezvous message)
 *   -v        verbose: one line per step on rank 0
 */
#ifndef DEVMEM_TEST_COMMON_H
#define DEVMEM_TEST_COMMON_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

struct test_opts {
    size_t max_size;    /* -m */
    int iters;          /* -i */
    int corrupt;        /* -x or -X */
    size_t corrupt_min; /* -X: corrupt the first payload of at least this many bytes */
    int verbose;        /* -v */
};

extern int test_rank;
extern int test_size;
extern const char *test_name;
extern struct test_opts test_opt;
/* The thread level test_init asks for (default MPI_THREAD_SINGLE); it dies when it gets
 * less. */
extern int test_thread_level;
/* The communicator the failure paths abort (default MPI_COMM_WORLD): a program without
 * MPI_Init (MPI-4 sessions) points it at a communicator of its own. */
extern MPI_Comm test_abort_comm;

/* MPI_Init, parse the common options (defaults given by the caller), set test_rank/size.
 * extra_opts: additional getopt letters the program handles through extra_cb (may be NULL),
 * extra_usage: their description for -h (lines ending in \n, may be NULL). */
void test_init(int *argc, char ***argv, const char *name, size_t default_max, int default_iters,
               const char *extra_opts, const char *extra_usage,
               int (*extra_cb)(int opt, const char *arg));

/* Print the one-line success summary on rank 0 (after a barrier) and MPI_Finalize. */
int test_finish(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Print a message prefixed with the program name and rank, then MPI_Abort. */
void test_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Rank 0 only, when -v. */
void test_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A well-mixed hash of three numbers (deterministic: every rank computes the same value). */
uint64_t test_hash(uint64_t a, uint64_t b, uint64_t c);

/* Work the optimiser cannot drop, for secs seconds, without a call into MPI but MPI_Wtime:
 * a rank busy outside MPI. Returns what it computed. */
uint64_t test_compute(double secs);

/* The expected byte at offset `off` of message `idx` from `src` to `dst`. */
uint8_t pat_byte(int src, int dst, uint64_t idx, uint64_t off);

/* Fill len bytes with the pattern, starting at stream offset `off0`. With -x, rank 0 spoils
 * one byte of the first non-empty buffer it fills (use pat_fill only for data that is sent). */
void pat_fill(void *buf, size_t len, int src, int dst, uint64_t idx, uint64_t off0);

/* Check len bytes against the pattern starting at stream offset off0. On the first mismatch,
 * print it (what = a short description of the message) and abort. */
void pat_check(const void *buf, size_t len, int src, int dst, uint64_t idx, uint64_t off0,
               const char *what);

/* Check that len bytes at buf all equal `fill` (untouched gaps, guard zones). */
void fill_check(const void *buf, size_t len, uint8_t fill, size_t report_base, const char *what);

/* Parse "123", "4k", "64M", "1g" (powers of 1024); returns 0 and sets *out on success. */
int parse_size(const char *s, size_t *out);

/* malloc that aborts the job on failure; never returns NULL (size 0 gives a 1-byte block). */
void *xmalloc(size_t len);

#endif
