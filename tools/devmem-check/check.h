/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-check's parts: the report text both ranks build, what the MPI tool interface tells
 * of the component, and the measurements (check_measure.c).
 */
#ifndef DEVMEM_CHECK_H
#define DEVMEM_CHECK_H

#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

/* A growing text: the report, a rank's facts. */
struct text {
    char *s;
    size_t len, cap;
};

void text_printf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void text_free(struct text *t);

/* Rank 0 prints a line and keeps it for the report. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern struct text report;
extern int my_rank;

/* The component's counters that the check reads (MPI_T performance variables). */
enum check_counter {
    CNT_RX_DMABUF,
    CNT_TX_DEVMEM,
    CNT_TOKENS_RECEIVED,
    CNT_TOKENS_RETURNED,
    CNT_PROTO_ERRORS,
    CNT_RX_THREADS,
    CNT_TX_HOST,
    CNT_N
};
/* Open the counters; 0, or -1 when the component's are not there (another BTL runs). */
int counters_open(void);
void counters_read(unsigned long long v[CNT_N]);
void counters_close(void);

/* An MCA variable's value through MPI_T, as text (malloc'd), or NULL when there is none. */
char *cvar_text(const char *name);

/* Validated transfers between ranks 0 and 1 of every size up to max, buffers of kind a
 * (rank 0) and b (rank 1), 'H' host or 'D' CUDA device memory: each way, every byte
 * checked on arrival. 0, or -1 with why filled in (agreed by both ranks). */
int check_transfers(char a, char b, size_t max, char *why, size_t len);

/* The table: latency and bandwidth of this job's transport beside raw TCP between the same
 * two ranks (peer_addr: rank 1's address for it, rank 0 only; NULL on both: no raw TCP),
 * medians of reps runs. rows: rank 0 also prints each figure as a line for
 * check_compare ("devmem-check-row: lat|bw SIZE JOB RAW", RAW -1 where not measured). */
void check_table(const char *peer_addr, int reps, int quick, int rows);

/* The sizes of the table, in its order, and how it names them ("8 B", "64 KiB", "1 MiB"). */
#define CHECK_LAT_N 5
#define CHECK_BW_N 4
extern const size_t check_lat_sizes[CHECK_LAT_N], check_bw_sizes[CHECK_BW_N];
void check_size_name(size_t s, char *out, size_t len);

/* Prefix of those lines, and of the line a --table-only run says what it ran with. */
#define CHECK_ROW "devmem-check-row: "
#define CHECK_VARIANT "devmem-check-variant: "

/* devmem-check --launch CMD: the whole check, launched with CMD, then the same table from
 * fresh jobs of CMD's settings and of btl/tcp (two each), of 1 and 4 lanes and of 0 and 1
 * receiving thread, side by side.
 * self: this program's path on the nodes. Returns the exit status. */
int check_compare(const char *self, const char *launch, const char *report_path, int quick);

/* The CUDA side of the transfers: whether device buffers can be used here (0), or why not. */
int check_gpu_usable(char *why, size_t len);

#endif /* DEVMEM_CHECK_H */
