/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The CUDA driver at run time and the copier.
 *
 * Everywhere: a process that never loaded CUDA sees every pointer as host memory, and a
 * missing driver is reported with a reason (the copier's host side: test_copier.c). With an NVIDIA GPU (exit 77 without one, after the checks above): pointer
 * queries (device, offset into it, host, a freed and reused range), copies in every
 * direction, dmabuf export, and the gather kernel against a CPU reference on scattered
 * aligned and unaligned pieces, mixed with host-to-device and device-to-host pieces, and
 * several gathers in flight on the stream at once, each told done by its own fence; the
 * kernel ready on this GPU (gather_prepare), and the same cases copied piece by piece, the
 * way of a device where the kernel cannot run.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copier.h"
#include "cudrv.h"

#include "check.h"

#define POOL (8u << 20)

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Submit the queued pieces and wait for them. */
static int flush(struct devmem_copier *c, struct devmem_err *err)
{
    uint64_t ticket;
    int rc = devmem_copier_submit(c, &ticket, err);

    return 0 != rc ? rc : devmem_copier_wait(c, ticket, err);
}

/* Gather npieces scattered pool pieces into dst (device), mixed with host<->device pieces
 * when mixed, and compare with the same gather done on the CPU. */
static void gather_case(const char *name, uint64_t pool, const unsigned char *pool_host,
                        uint64_t dst, size_t npieces, size_t maxlen, int aligned, int mixed)
{
    struct devmem_copier c;
    struct devmem_err err;
    unsigned char *want = calloc(1, POOL), *got = calloc(1, POOL), *hsrc = malloc(POOL);
    unsigned char *hdst = calloc(1, POOL), *hwant = calloc(1, POOL);
    size_t at = 0, host_at = 0;
    int rc = 0;

    for (size_t i = 0; i < POOL; i++) {
        hsrc[i] = (unsigned char) (next() >> 24);
    }
    devmem_copier_init(&c);
    /* want is still all zeros */
    CHECK(0 == devmem_cuda_copy(0, (void *) (uintptr_t) dst, want, POOL, &err),
          "%s: destination cleared", name);
    for (size_t i = 0; i < npieces && 0 == rc; i++) {
        size_t len = 1 + next() % maxlen, off = next() % (POOL - len);
        int kind = mixed ? (int) (next() % 4) : 0;

        if (aligned) {
            len = (len + 15) & ~(size_t) 15;
            off &= ~(size_t) 15;
        }
        if (at + len > POOL) {
            break;
        }
        if (kind <= 1) { /* pool -> device */
            rc = devmem_copier_add(&c, (void *) (uintptr_t) (dst + at), 1,
                                   (const void *) (uintptr_t) (pool + off), 1, len, 0, &err);
            memcpy(want + at, pool_host + off, len);
        } else if (2 == kind) { /* host (a linear piece) -> device */
            rc = devmem_copier_add(&c, (void *) (uintptr_t) (dst + at), 1, hsrc + off, 0, len,
                                   0, &err);
            memcpy(want + at, hsrc + off, len);
        } else { /* pool -> host */
            if (host_at + len > POOL) {
                continue;
            }
            rc = devmem_copier_add(&c, hdst + host_at, 0, (const void *) (uintptr_t) (pool + off),
                                   1, len, 0, &err);
            memcpy(hwant + host_at, pool_host + off, len);
            host_at += len;
            continue;
        }
        at += len;
    }
    if (0 == rc) {
        rc = flush(&c, &err);
    }
    CHECK(0 == rc, "%s: gathered %zu pieces, %zu bytes to device (%s)", name, npieces, at,
          0 == rc ? "" : err.msg);
    CHECK(0 == devmem_cuda_copy(0, got, (const void *) (uintptr_t) dst, POOL, &err) &&
              0 == memcmp(want, got, POOL),
          "%s: every byte where the CPU reference puts it", name);
    if (mixed) {
        CHECK(host_at > 0 && 0 == memcmp(hdst, hwant, host_at) && c.stats.kernels >= 1,
              "%s: %zu bytes to host memory as the reference has them, %llu kernel launch(es)",
              name, host_at, (unsigned long long) c.stats.kernels);
    } else {
        CHECK(1 == c.stats.kernels && 1 == c.stats.flushes, "%s: one kernel, one flush", name);
    }
    devmem_copier_fini(&c);
    free(want);
    free(got);
    free(hsrc);
    free(hdst);
    free(hwant);
}

/* Several gathers on the stream at once, as the receive path launches them: each a slice
 * of pool pieces into its own part of dst, submitted back to back, then told done by its
 * fence (polled, never waited for while another is still running). */
static void pipelined_case(uint64_t pool, const unsigned char *pool_host, uint64_t dst)
{
    enum { GATHERS = 8, PIECES = 200 };
    struct devmem_copier c;
    struct devmem_err err;
    unsigned char *want = calloc(1, POOL), *got = malloc(POOL);
    uint64_t t[GATHERS];
    size_t at = 0;
    long polls = 0;
    int rc = 0, done = 0;

    devmem_copier_init(&c);
    /* want is still all zeros */
    CHECK(0 == devmem_cuda_copy(0, (void *) (uintptr_t) dst, want, POOL, &err),
          "pipelined: destination cleared");
    for (size_t g = 0; g < GATHERS && 0 == rc; g++) {
        for (size_t i = 0; i < PIECES && 0 == rc; i++) {
            size_t len = 1 + next() % 4096, off = next() % (POOL - len);

            if (at + len > POOL) {
                break;
            }
            rc = devmem_copier_add(&c, (void *) (uintptr_t) (dst + at), 1,
                                   (const void *) (uintptr_t) (pool + off), 1, len, 0, &err);
            memcpy(want + at, pool_host + off, len);
            at += len;
        }
        rc = 0 == rc ? devmem_copier_submit(&c, &t[g], &err) : rc;
    }
    CHECK(0 == rc && c.stats.inflight_max >= 2, "pipelined: %d gathers submitted, %llu in "
          "flight at most (%s)", GATHERS, (unsigned long long) c.stats.inflight_max,
          0 == rc ? "" : err.msg);
    while (0 == rc && !done && polls < 100000000L) {
        rc = devmem_copier_test(&c, t[GATHERS - 1], &err);
        done = 1 == rc;
        rc = rc < 0 ? rc : 0;
        polls++;
    }
    CHECK(done && 0 == c.inflight, "pipelined: the last ticket done after %ld "
          "looks", polls);
    CHECK(0 == devmem_cuda_copy(0, got, (const void *) (uintptr_t) dst, POOL, &err) &&
              0 == memcmp(want, got, POOL),
          "pipelined: every byte of the %zu where the CPU reference puts it", at);
    devmem_copier_fini(&c);
    free(want);
    free(got);
}

static void device_tests(void)
{
    struct devmem_cuda_ptr info, info2;
    struct devmem_err err;
    uint64_t a = 0, b = 0, pool = 0, dst = 0;
    unsigned char *pool_host = malloc(POOL), buf[4096];
    int fd = -1, rc;

    rc = devmem_cuda_alloc(0, 1 << 21, &a, &err);
    CHECK(0 == rc && 0 != a, "alloc 2 MiB on device 0 (%s)", 0 == rc ? "" : err.msg);
    if (0 != rc) {
        return;
    }
    rc = devmem_cuda_ptr_query((void *) (uintptr_t) (a + 4096 + 5), &info, &err);
    CHECK(1 == rc && a == info.base && (size_t) (1 << 21) == info.size && 0 == info.ordinal &&
              0 != info.buffer_id,
          "a pointer inside it is device memory of the allocation at its base (id %llu)",
          (unsigned long long) info.buffer_id);
    CHECK(0 == devmem_cuda_ptr_query(buf, &info2, &err), "a stack buffer is host memory");
    rc = devmem_cuda_export_dmabuf(0, a, 1 << 21, &fd, &err);
    CHECK(0 == rc && fd >= 0, "dmabuf export of the allocation (fd %d) (%s)", fd,
          0 == rc ? "" : err.msg);
    if (fd >= 0) {
        close(fd);
    }
    devmem_cuda_free(0, a);
    rc = devmem_cuda_alloc(0, 1 << 21, &b, &err);
    rc = 0 == rc ? devmem_cuda_ptr_query((void *) (uintptr_t) b, &info2, &err) : rc;
    CHECK(1 == rc && info2.buffer_id != info.buffer_id,
          "a new allocation (%s address) has a new buffer id", a == b ? "same" : "another");
    devmem_cuda_free(0, b);

    /* copies in every direction */
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = (unsigned char) (i ^ 0x5a);
    }
    rc = devmem_cuda_alloc(0, POOL, &pool, &err);
    rc |= devmem_cuda_alloc(0, POOL, &dst, &err);
    CHECK(0 == rc, "pool and destination allocated");
    if (0 != rc) {
        return;
    }
    {
        unsigned char back[4096];

        rc = devmem_cuda_copy(0, (void *) (uintptr_t) (pool + 7), buf, sizeof(buf), &err);
        rc |= devmem_cuda_copy(0, (void *) (uintptr_t) dst, (void *) (uintptr_t) (pool + 7),
                               sizeof(buf), &err);
        rc |= devmem_cuda_copy(0, back, (void *) (uintptr_t) dst, sizeof(back), &err);
        CHECK(0 == rc && 0 == memcmp(buf, back, sizeof(buf)), "host -> device -> device -> "
              "host round trip");
    }
    for (size_t i = 0; i < POOL; i++) {
        pool_host[i] = (unsigned char) (next() >> 32);
    }
    CHECK(0 == devmem_cuda_copy(0, (void *) (uintptr_t) pool, pool_host, POOL, &err),
          "pool filled with a random pattern");
    gather_case("aligned pieces <= 64 KiB", pool, pool_host, dst, 100, 65536, 1, 0);
    gather_case("unaligned pieces <= 4 KiB", pool, pool_host, dst, 1000, 4096, 0, 0);
    gather_case("1-byte to 100-byte pieces", pool, pool_host, dst, 3000, 100, 0, 0);
    gather_case("mixed directions", pool, pool_host, dst, 500, 9000, 0, 1);
    pipelined_case(pool, pool_host, dst);
    rc = devmem_cuda_gather_prepare(0, &err);
    CHECK(0 == rc, "the gather kernel is ready on this GPU (%s)", 0 == rc ? "" : err.msg);
    rc = devmem_cuda_set_way(DEVMEM_CUDA_WAY_MEMCPY, &err);
    rc = 0 == rc ? devmem_cuda_gather_prepare(0, &err) : rc;
    CHECK(-EOPNOTSUPP == rc && NULL != strstr(err.msg, "memcpy"),
          "way memcpy: gathers say they copy piece by piece (%s)", err.msg);
    gather_case("memcpy, unaligned", pool, pool_host, dst, 1000, 4096, 0, 0);
    gather_case("memcpy, aligned", pool, pool_host, dst, 100, 65536, 1, 0);
    gather_case("memcpy, mixed", pool, pool_host, dst, 500, 9000, 0, 1);
    pipelined_case(pool, pool_host, dst);
    CHECK(0 == devmem_cuda_set_way(DEVMEM_CUDA_WAY_DEFAULT, &err) &&
              0 == devmem_cuda_gather_prepare(0, &err) && -1 == devmem_cuda_way_by_name("batch") &&
              DEVMEM_CUDA_WAY_MEMCPY == devmem_cuda_way_by_name("memcpy"),
          "back to the kernel; ways by name");
    devmem_cuda_free(0, pool);
    devmem_cuda_free(0, dst);
    free(pool_host);
}

int main(void)
{
    struct devmem_err err;
    unsigned char host[64];
    int n = 0, rc;

    setvbuf(stdout, NULL, _IOLBF, 0); /* every line out, even if a timeout kills us */
    if (!devmem_cuda_in_process()) {
        CHECK(0 == devmem_cuda_ptr_query(host, NULL, &err),
              "without CUDA in the process every pointer is host memory");
    }
    rc = devmem_cuda_device_count(&n, &err);
    if (0 != rc) {
        CHECK(-ENODEV == rc && NULL != strstr(err.msg, "cuda"), "no driver: says why (\"%s\")",
              err.msg);
        printf("SKIP the GPU checks: %s\n", err.msg);
        return failures ? check_finish() : 77;
    }
    printf("info %d CUDA device(s)\n", n);
    device_tests();
    return check_finish();
}
