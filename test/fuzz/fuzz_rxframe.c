/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the receive framing of a control connection (btl_devmem_rxframe.c), fed
 * what a broken or hostile peer could send, in reads of sizes the input chooses too, with a
 * read-ahead of a size the input chooses.
 *
 * Besides memory errors (the sanitizers: every destination is a buffer of exactly the
 * frame's size), it checks the promises the endpoint relies on: every frame is admitted
 * once before any of its payload is placed, completes once after, in order, only with a
 * header that passed the codec check; no read is offered an empty iovec; and after a stop
 * nothing more is delivered.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "base/btl_devmem_rxframe.h"

struct state {
    int admitted, completed;
    struct mca_btl_devmem_hdr cur; /* the admitted frame */
    char *dest;                    /* its destination, h->size bytes */
    uint8_t refuse;                /* admit refuses headers whose tag is this (nonzero) */
    bool stopped;
};

static int admit(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    struct state *st = ctx;
    struct mca_btl_devmem_limits any = {UINT32_MAX, UINT64_MAX};

    FUZZ_MUST(!st->stopped, "nothing is admitted after a stop");
    FUZZ_MUST(st->admitted == st->completed, "a frame is admitted once, after the last one");
    FUZZ_MUST(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(h, &any),
              "only checked headers are admitted");
    st->admitted++;
    st->cur = *h;
    if (0 != st->refuse && h->tag == st->refuse) {
        st->stopped = true;
        return -1;
    }
    return 0;
}

static char *dest(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    struct state *st = ctx;

    FUZZ_MUST(st->admitted == st->completed + 1, "dest is asked for an admitted frame");
    FUZZ_MUST(0 == memcmp(h, &st->cur, sizeof(*h)), "dest is asked for the admitted header");
    FUZZ_MUST(MCA_BTL_DEVMEM_HDR_PUT == h->type || MCA_BTL_DEVMEM_HDR_GET_RESP == h->type
                  || MCA_BTL_DEVMEM_HDR_PUSH == h->type,
              "only PUT, GET_RESP and PUSH payloads have a destination");
    FUZZ_MUST(NULL == st->dest, "dest is asked once per frame");
    st->dest = malloc(h->size > 0 ? h->size : 1);
    return st->dest;
}

static int complete(void *ctx, const struct mca_btl_devmem_hdr *h, char *body)
{
    struct state *st = ctx;
    uint32_t p = mca_btl_devmem_hdr_payload(h);
    volatile char sink = 0;

    FUZZ_MUST(!st->stopped, "nothing completes after a stop");
    FUZZ_MUST(st->admitted == st->completed + 1, "a frame completes once, after its admit");
    FUZZ_MUST(0 == memcmp(h, &st->cur, sizeof(*h)), "the admitted header completes");
    if (MCA_BTL_DEVMEM_HDR_SEND == h->type && p > 0) {
        /* touch every byte of the body: ASan catches one outside the buffers */
        for (uint32_t i = 0; i < p; i += 97) {
            sink ^= body[i];
        }
        sink ^= body[p - 1];
    }
    (void) sink;
    free(st->dest);
    st->dest = NULL;
    st->completed++;
    return 0;
}

static void malformed(void *ctx, const struct mca_btl_devmem_hdr *h,
                      enum mca_btl_devmem_check chk)
{
    struct state *st = ctx;

    FUZZ_MUST(MCA_BTL_DEVMEM_CHECK_OK != chk, "a malformed header failed a check");
    FUZZ_MUST(NULL != mca_btl_devmem_check_str(chk), "every verdict has words");
    st->stopped = true;
}

static const struct mca_btl_devmem_rxframe_ops ops = {admit, dest, complete, malformed};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mca_btl_devmem_rxframe rf;
    struct state st = {0};
    uint16_t cap, seed;
    uint32_t frag_limit, put_limit;
    size_t off = 0;

    if (size < 12) {
        return 0;
    }
    /* the setting comes from the input: read-ahead size, limits, chunking, a refused tag;
     * limits stay below 1 MiB so one input cannot ask for gigabytes */
    memcpy(&cap, data, 2);
    memcpy(&frag_limit, data + 2, 4);
    memcpy(&put_limit, data + 6, 4);
    memcpy(&seed, data + 10, 2);
    data += 12;
    size -= 12;
    st.refuse = (uint8_t) (seed >> 8);
    mca_btl_devmem_rxframe_init(&rf, &ops, &st);
    rf.limits.frag_limit = frag_limit % (1u << 20);
    rf.limits.put_limit = put_limit % (1u << 20);
    if (0 != mca_btl_devmem_rxframe_start(&rf, sizeof(struct mca_btl_devmem_hdr) + cap % 8192)) {
        return 0;
    }
    while (off < size && !st.stopped) {
        struct iovec iov[2];
        int cnt;
        size_t chunk, n = 0;
        int rc;

        rf.hdr_first = 0 != (seed & 0x10); /* an owner expecting a large answer, or not */
        cnt = mca_btl_devmem_rxframe_iov(&rf, iov);
        FUZZ_MUST(rf.in_body || ((char *) iov[0].iov_base >= rf.buf
                                 && (char *) iov[0].iov_base + iov[0].iov_len <= rf.buf + rf.cap),
                  "a read between frames stays inside the read-ahead");

        /* reads of 1, of a few, of many bytes, or of all that is left */
        switch (seed & 3) {
        case 0: chunk = 1; break;
        case 1: chunk = 1 + (data[off] % 61); break;
        case 2: chunk = 1 + data[off] * 37u; break;
        default: chunk = size; break;
        }
        seed = (uint16_t) (seed * 31 + 7);
        for (int i = 0; i < cnt && off + n < size && n < chunk; i++) {
            size_t k = iov[i].iov_len;

            FUZZ_MUST(k > 0, "no read is offered an empty iovec");
            if (k > size - off - n) {
                k = size - off - n;
            }
            if (k > chunk - n) {
                k = chunk - n;
            }
            memcpy(iov[i].iov_base, data + off + n, k);
            n += k;
            if (k < iov[i].iov_len) {
                break;
            }
        }
        off += n;
        rc = mca_btl_devmem_rxframe_got(&rf, n);
        if (rc < 0) {
            FUZZ_MUST(st.stopped || -ENOMEM == rc, "a stop has a reason");
            break;
        }
    }
    free(st.dest);
    mca_btl_devmem_rxframe_fini(&rf);
    return 0;
}
