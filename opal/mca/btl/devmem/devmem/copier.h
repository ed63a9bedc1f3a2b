/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A copier: the pieces of a gather, each from wherever it landed (an RX pool, a linear
 * buffer) to wherever it belongs (host or device memory). Host-to-host pieces are copied at
 * once; pieces that touch device memory are queued and launched together on submit: one
 * kernel launch for every device-to-device piece, async copies for the rest.
 *
 * Pipelined: submit returns a ticket and does not wait, so the caller can receive the next
 * bytes while the GPU gathers the last ones; it gives the pool tokens of a receive back
 * once that receive's ticket is done. Tickets are done in the order they were given (one
 * stream per device; a later ticket is never reported done before an earlier one), and up
 * to DEVMEM_COPIER_INFLIGHT gathers are in flight (a submit beyond that waits for the
 * oldest). A submit that launched nothing returns ticket 0, done at once.
 *
 * Failures: a submit that cannot launch fails there, with nothing of it left running or
 * queued. A gather that fails on the GPU is reported once, to the first test or wait of a
 * ticket at or past it; callers that test their tickets in the order they got them (each
 * submit's gathers under its own ticket) thus hear of exactly their own failure.
 *
 * Free of Open MPI types; functions return 0 or -errno with err filled.
 */
#ifndef DEVMEM_COPIER_H
#define DEVMEM_COPIER_H

#include <stddef.h>
#include <stdint.h>

#include "cudrv.h"
#include "err.h"

#define DEVMEM_COPIER_INFLIGHT 64

struct devmem_copier_stats {
    uint64_t host_bytes;   /* copied by the CPU */
    uint64_t device_bytes; /* copied by the GPU (either side in device memory) */
    uint64_t pieces;       /* device pieces */
    uint64_t flushes;      /* submits that launched device pieces */
    uint64_t kernels;      /* gather kernel launches */
    uint64_t inflight_max; /* most gathers submitted and not yet known done */
    uint64_t waits;        /* waits for a ticket that was not done yet */
};

/* One submitted gather: what it reads and writes stays here until it is done. */
struct devmem_copier_slot {
    uint64_t ticket;
    int ordinal;                 /* its device; -1: host pieces held back (defer_polls) */
    void *fence;                 /* passed once its device pieces are in place */
    struct devmem_copy *pieces;  /* device-to-device ones first */
    size_t n_d2d, npieces, cap;
    unsigned int polls;          /* held host pieces: tests seen */
    void **owned;                /* copies of transient sources it reads, freed when done */
    size_t n_owned, cap_owned;
};

struct devmem_copier {
    struct devmem_copy *d2d, *other, *held; /* queued: device-to-device, other device
                                             * pieces, host pieces held back */
    size_t n_d2d, n_other, n_held, cap_d2d, cap_other, cap_held;
    int ordinal;                             /* device of the queued pieces, -1 when none */
    void **owned;                            /* copies of the queued pieces' transient sources */
    size_t n_owned, cap_owned;
    /* Tests and the emulated device path: with n > 0, host-to-host pieces are held back
     * and copied only when their ticket has been tested n times (or waited for), as a GPU
     * would finish them later; 0: copied at once. */
    unsigned int defer_polls;
    struct devmem_copier_slot slot[DEVMEM_COPIER_INFLIGHT]; /* a ring, oldest at head */
    size_t head, inflight;
    uint64_t last_ticket; /* of the latest gather submitted */
    uint64_t done_ticket; /* every ticket up to this one is done */
    uint64_t failed_ticket; /* a gather that failed, not yet reported; 0: none */
    struct devmem_err failure;
    struct devmem_copier_stats stats;
};

void devmem_copier_init(struct devmem_copier *c);
/* Waits for every gather in flight, then frees. */
void devmem_copier_fini(struct devmem_copier *c);

/* One piece: len bytes from src to dst; *_dev says which side is device memory, ordinal is
 * the device they belong to (ignored for host-to-host). Pieces of another device run the
 * queue first, and wait for it. src and dst must stay as they are until the piece's
 * ticket is done. */
int devmem_copier_add(struct devmem_copier *c, void *dst, int dst_dev, const void *src,
                      int src_dev, size_t len, int ordinal, struct devmem_err *err);

/* The same for a src the caller reuses as soon as add returns (a receive's linear buffer):
 * copied at once into host memory, or into a copy of its own that the device piece reads
 * (linear bytes are few: what header split left in host memory). */
int devmem_copier_add_transient(struct devmem_copier *c, void *dst, int dst_dev,
                                const void *src, int src_dev, size_t len, int ordinal,
                                struct devmem_err *err);

/* Launch the queued pieces; *ticket is done once they (and every earlier gather) are in
 * place; 0 when nothing was launched. The queue is empty afterwards; on failure nothing of
 * it runs any more. */
int devmem_copier_submit(struct devmem_copier *c, uint64_t *ticket, struct devmem_err *err);

/* Drop the queued pieces, launching nothing (the caller gives up on them). */
void devmem_copier_discard(struct devmem_copier *c);

/* 1 when ticket is done, 0 when not yet; -errno when a gather at or before it failed and
 * this is the first to hear of it. Never blocks. */
int devmem_copier_test(struct devmem_copier *c, uint64_t ticket, struct devmem_err *err);

/* Block until ticket is done: 0, or -errno as test. */
int devmem_copier_wait(struct devmem_copier *c, uint64_t ticket, struct devmem_err *err);

#endif /* DEVMEM_COPIER_H */
