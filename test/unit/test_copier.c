/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The copier without a GPU: host-to-host pieces copied by the CPU and checked byte for byte;
 * the pipeline with host copies held back as a GPU would finish them (defer_polls): tickets
 * done in order and only then, waits that finish up to their ticket and no further, pieces
 * the caller reuses copied at once, a submit of nothing done at once, more gathers than the
 * ring holds, a ticket never given refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "copier.h"

#include "check.h"

/* Submit the queued pieces and wait for them. */
static int flush(struct devmem_copier *c, struct devmem_err *err)
{
    uint64_t ticket;
    int rc = devmem_copier_submit(c, &ticket, err);

    return 0 != rc ? rc : devmem_copier_wait(c, ticket, err);
}

static void host_copier(void)
{
    struct devmem_copier c;
    struct devmem_err err;
    unsigned char src[5000], dst[5000];

    for (size_t i = 0; i < sizeof(src); i++) {
        src[i] = (unsigned char) (i * 13 + 1);
    }
    memset(dst, 0, sizeof(dst));
    devmem_copier_init(&c);
    CHECK(0 == devmem_copier_add(&c, dst + 3000, 0, src, 0, 2000, -1, &err) &&
              0 == devmem_copier_add(&c, dst, 0, src + 2000, 0, 3000, -1, &err) &&
              0 == flush(&c, &err),
          "copier: two host pieces");
    CHECK(0 == memcmp(dst + 3000, src, 2000) && 0 == memcmp(dst, src + 2000, 3000) &&
              5000 == c.stats.host_bytes && 0 == c.stats.flushes,
          "copier: host pieces land at once, by the CPU (%llu bytes)",
          (unsigned long long) c.stats.host_bytes);
    devmem_copier_fini(&c);
}

static int all_zero(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (0 != p[i]) {
            return 0;
        }
    }
    return 1;
}

/* The pipeline as the receive path uses it, with host copies held back like a GPU's. */
static void host_pipeline(void)
{
    enum { N = 4, LEN = 1000, MANY = DEVMEM_COPIER_INFLIGHT + 6 };
    static unsigned char src[N][LEN], dst[N][LEN], big[MANY][64];
    unsigned char lin[100], lin_dst[100];
    struct devmem_copier c;
    struct devmem_err err;
    uint64_t t[N], t_more, prev = 0;
    int rc = 0, order = 1;

    for (size_t i = 0; i < N; i++) {
        memset(src[i], (int) (i + 1), LEN);
    }
    memset(dst, 0, sizeof(dst));
    devmem_copier_init(&c);
    c.defer_polls = 2;
    for (size_t i = 0; i < N && 0 == rc; i++) {
        rc = devmem_copier_add(&c, dst[i], 0, src[i], 0, LEN, -1, &err);
        rc = 0 == rc ? devmem_copier_submit(&c, &t[i], &err) : rc;
        order &= t[i] > prev;
        prev = t[i];
    }
    CHECK(0 == rc && order && N == c.inflight && all_zero(dst[0], sizeof(dst)),
          "pipeline: %d gathers submitted under rising tickets, none copied yet", N);
    rc = devmem_copier_test(&c, t[N - 1], &err);
    rc |= devmem_copier_test(&c, t[N - 1], &err);
    CHECK(0 == rc && all_zero(dst[0], sizeof(dst)), "pipeline: not done after 2 looks");
    rc = devmem_copier_test(&c, t[N - 1], &err);
    CHECK(0 == rc && 1 == devmem_copier_test(&c, t[0], &err) && 0 == memcmp(dst[0], src[0], LEN)
              && all_zero(dst[1], (N - 1) * LEN),
          "pipeline: the 3rd look finishes the oldest only");
    rc = devmem_copier_wait(&c, t[2], &err);
    CHECK(0 == rc && 0 == memcmp(dst[1], src[1], LEN) && 0 == memcmp(dst[2], src[2], LEN)
              && all_zero(dst[3], LEN) && c.stats.waits >= 1,
          "pipeline: a wait finishes every gather up to its ticket, no further");

    /* a piece from memory the caller reuses (a receive's linear buffer) lands at once */
    memset(lin, 0x77, sizeof(lin));
    memset(lin_dst, 0, sizeof(lin_dst));
    rc = devmem_copier_add_transient(&c, lin_dst, 0, lin, 0, sizeof(lin), -1, &err);
    CHECK(0 == rc && 0 == memcmp(lin, lin_dst, sizeof(lin)),
          "pipeline: a transient host piece is copied before add returns");
    rc = devmem_copier_submit(&c, &t_more, &err);
    CHECK(0 == rc && 0 == t_more && 1 == devmem_copier_test(&c, t_more, &err),
          "pipeline: nothing launched, ticket 0, done at once (%llu)",
          (unsigned long long) t_more);
    CHECK(0 == devmem_copier_wait(&c, t[N - 1], &err) && 0 == memcmp(dst[3], src[3], LEN) &&
              0 == c.inflight,
          "pipeline: all done, nothing in flight");

    /* more gathers than the ring holds: a submit waits for the oldest, none is lost */
    c.defer_polls = 1000;
    memset(big, 0, sizeof(big));
    for (size_t i = 0; i < MANY && 0 == rc; i++) {
        rc = devmem_copier_add(&c, big[i], 0, src[i % N], 0, sizeof(big[i]), -1, &err);
        rc = 0 == rc ? devmem_copier_submit(&c, &t_more, &err) : rc;
    }
    CHECK(0 == rc && DEVMEM_COPIER_INFLIGHT == c.inflight &&
              0 == memcmp(big[0], src[0], sizeof(big[0])) && all_zero(big[MANY - 1], 64),
          "pipeline: %d gathers, at most %d in flight, the oldest done to make room", MANY,
          DEVMEM_COPIER_INFLIGHT);
    CHECK(-EINVAL == devmem_copier_test(&c, c.last_ticket + 1, &err),
          "pipeline: a ticket never given is refused (%s)", err.msg);
    devmem_copier_fini(&c);
    for (size_t i = 0; i < MANY; i++) {
        order &= 0 == memcmp(big[i], src[i % N], sizeof(big[i]));
    }
    CHECK(order && c.stats.inflight_max == 0, "pipeline: fini finished every one of them");
}

int main(void)
{
    host_copier();
    host_pipeline();
    return check_finish();
}
