/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Token ranges and the token ledger against a fake kernel that enforces the
 * SO_DEVMEM_DONTNEED contract (<= 128 ranges, <= 1024 frags looked at, unknown tokens
 * skipped, count returned).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rx.h"

#include "check.h"

#define NTOK 100000

/* The fake kernel: which tokens the socket holds, and what each call looked like. */
static struct {
    unsigned char held[NTOK];
    size_t calls, max_ranges_seen, max_frags_seen, violations;
    int fail_next; /* -errno for the next call */
} k;

static int fake_dontneed(void *ctx, int fd, const struct devmem_dmabuf_token *r, size_t n,
                         struct devmem_err *err)
{
    size_t i, frags = 0;
    uint32_t j;
    int freed = 0;

    k.calls++;
    if (0 != k.fail_next) {
        int e = k.fail_next;

        k.fail_next = 0;
        return devmem_err_set(err, -e, "fake: failing as asked");
    }
    if (n > DEVMEM_MAX_DONTNEED_TOKENS) {
        k.violations++;
        return devmem_err_set(err, EINVAL, "fake: %zu ranges", n);
    }
    if (n > k.max_ranges_seen) {
        k.max_ranges_seen = n;
    }
    for (i = 0; i < n; i++) {
        frags += r[i].token_count;
        for (j = 0; j < r[i].token_count && frags <= DEVMEM_MAX_DONTNEED_FRAGS; j++) {
            uint32_t t = r[i].token_start + j;

            if (t < NTOK && k.held[t]) {
                k.held[t] = 0;
                freed++;
            }
        }
    }
    if (frags > DEVMEM_MAX_DONTNEED_FRAGS) {
        k.violations++;
    }
    if (frags > k.max_frags_seen) {
        k.max_frags_seen = frags;
    }
    return freed;
}

static void hand_out(struct devmem_ledger *l, const uint32_t *tok, size_t n)
{
    struct devmem_frag f;
    size_t i;

    for (i = 0; i < n; i++) {
        memset(&f, 0, sizeof(f));
        f.kind = DEVMEM_FRAG_DMABUF;
        f.len = 4096;
        f.token = tok[i];
        f.dmabuf_id = 1;
        k.held[tok[i]] = 1;
        if (0 != devmem_ledger_add(l, &f, 1, NULL)) {
            failures++;
            printf("FAIL add token %u\n", tok[i]);
        }
    }
}

static size_t held_count(void)
{
    size_t i, c = 0;

    for (i = 0; i < NTOK; i++) {
        c += k.held[i];
    }
    return c;
}

int main(void)
{
    struct devmem_dmabuf_token r[8];
    static uint32_t tok[NTOK];
    struct devmem_ledger l;
    struct devmem_err err;
    size_t nr, used, i;
    int rc;

    /* merging */
    {
        const uint32_t t[] = {1, 2, 3, 5, 6, 9};

        nr = devmem_tokens_to_ranges(t, 6, r, 8, 1024, &used);
        CHECK(3 == nr && 6 == used && 1 == r[0].token_start && 3 == r[0].token_count &&
                  5 == r[1].token_start && 2 == r[1].token_count && 9 == r[2].token_start &&
                  1 == r[2].token_count, "merge: {1,2,3,5,6,9} -> [1+3] [5+2] [9+1]");
        nr = devmem_tokens_to_ranges(t, 6, r, 2, 1024, &used);
        CHECK(2 == nr && 5 == used, "merge: 2-range cap covers 5 tokens");
        nr = devmem_tokens_to_ranges(t, 6, r, 8, 4, &used);
        CHECK(2 == nr && 4 == used && 1 == r[1].token_count,
              "merge: 4-frag cap splits a range mid-way");
    }

    /* 300 scattered tokens -> 128 + 128 + 44 ranges */
    memset(&k, 0, sizeof(k));
    devmem_ledger_init(&l, 3, fake_dontneed, NULL, &err);
    for (i = 0; i < 300; i++) {
        tok[i] = (uint32_t) (2 * i + 2);
    }
    hand_out(&l, tok, 300);
    CHECK(300 == l.outstanding && 300 == l.stats.tokens_received,
          "ledger: 300 tokens outstanding");
    for (i = 0; i < 300; i++) {
        rc = devmem_ledger_release(&l, tok[299 - i], &err); /* out of order on purpose */
        if (0 != rc) {
            break;
        }
    }
    CHECK(300 == i && 300 == l.npending, "ledger: all 300 released");
    rc = devmem_ledger_flush(&l, &err);
    CHECK(0 == rc && 3 == k.calls && 128 == k.max_ranges_seen && 0 == k.violations,
          "ledger: 300 scattered tokens go back in 3 calls of <= 128 ranges (calls %zu)",
          k.calls);
    CHECK(300 == l.stats.tokens_returned && 3 == l.stats.dontneed_calls && 0 == held_count(),
          "ledger: kernel freed all 300, counters agree");

    /* 2000 consecutive tokens -> 1024 + 976 */
    memset(&k, 0, sizeof(k));
    for (i = 0; i < 2000; i++) {
        tok[i] = (uint32_t) (i + 1);
    }
    hand_out(&l, tok, 2000);
    for (i = 0; i < 2000; i++) {
        devmem_ledger_release(&l, tok[i], NULL);
    }
    rc = devmem_ledger_flush(&l, &err);
    CHECK(0 == rc && 2 == k.calls && 1024 == k.max_frags_seen && 0 == k.violations,
          "ledger: 2000 consecutive tokens go back in 2 calls, <= 1024 frags each");
    CHECK(2300 == l.stats.tokens_returned && 2300 == l.stats.tokens_received,
          "ledger: received == returned (2300)");

    /* count check: the kernel does not know some tokens */
    memset(&k, 0, sizeof(k));
    for (i = 0; i < 10; i++) {
        tok[i] = (uint32_t) (100 + i);
    }
    hand_out(&l, tok, 10);
    k.held[103] = 0;
    k.held[107] = 0;
    for (i = 0; i < 10; i++) {
        devmem_ledger_release(&l, tok[i], NULL);
    }
    rc = devmem_ledger_flush(&l, &err);
    CHECK(-EIO == rc && 2 == l.stats.tokens_lost && 0 == l.npending,
          "ledger: short count -> -EIO, 2 tokens lost (%s)", err.msg);

    /* a failed call keeps the tokens for the next flush */
    memset(&k, 0, sizeof(k));
    tok[0] = 500;
    hand_out(&l, tok, 1);
    devmem_ledger_release(&l, 500, NULL);
    k.fail_next = -ENOMEM;
    rc = devmem_ledger_flush(&l, &err);
    CHECK(-ENOMEM == rc && 1 == l.npending, "ledger: failed call keeps tokens");
    rc = devmem_ledger_flush(&l, &err);
    CHECK(0 == rc && 0 == l.npending && 0 == k.held[500],
          "ledger: retried flush returns them");

    /* contract violations */
    tok[0] = 600;
    hand_out(&l, tok, 1);
    {
        struct devmem_frag f = {.kind = DEVMEM_FRAG_DMABUF, .len = 1, .token = 600};

        rc = devmem_ledger_add(&l, &f, 1, &err);
        CHECK(-EPROTO == rc, "ledger: a token handed out twice is -EPROTO (%s)", err.msg);
    }
    CHECK(0 == devmem_ledger_release(&l, 600, NULL) &&
              -ENOENT == devmem_ledger_release(&l, 600, &err),
          "ledger: double release is -ENOENT (%s)", err.msg);
    CHECK(-ENOENT == devmem_ledger_release(&l, 77777, NULL), "ledger: unknown token -ENOENT");
    devmem_ledger_flush(&l, NULL);

    /* hash set against a reference under random add/release/flush; as in the kernel, a
     * token is handed out again only after it came back (ref: 0 free, 1 out, 2 released) */
    {
        static unsigned char ref[NTOK];
        size_t bad = 0, out = 0, j;
        unsigned int seed = 12345;

        memset(&k, 0, sizeof(k));
        for (i = 0; i < 200000; i++) {
            uint32_t t = 1 + (uint32_t) (rand_r(&seed) % 20000);

            if (1 == ref[t]) {
                bad += (0 != devmem_ledger_release(&l, t, NULL));
                ref[t] = 2;
                out--;
            } else if (0 == ref[t]) {
                struct devmem_frag f = {.kind = DEVMEM_FRAG_DMABUF, .len = 1, .token = t};

                k.held[t] = 1;
                bad += (0 != devmem_ledger_add(&l, &f, 1, NULL));
                ref[t] = 1;
                out++;
            }
            if (0 == i % 1000) {
                bad += (0 != devmem_ledger_flush(&l, NULL));
                for (j = 0; j < NTOK; j++) {
                    ref[j] = (2 == ref[j]) ? 0 : ref[j];
                }
            }
        }
        CHECK(0 == bad && out == l.outstanding,
              "ledger: 200000 random add/release agree with a reference (%zu outstanding, "
              "%zu errors)", out, bad);

        /* return-all on close */
        rc = devmem_ledger_close(&l, &err);
        CHECK(0 == rc && 0 == held_count(), "ledger: close returns every outstanding token");
        CHECK(l.stats.tokens_received == l.stats.tokens_returned + l.stats.tokens_lost,
              "ledger: received %llu == returned %llu + lost %llu",
              (unsigned long long) l.stats.tokens_received,
              (unsigned long long) l.stats.tokens_returned,
              (unsigned long long) l.stats.tokens_lost);
    }

    return check_finish();
}
