/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive framing (btl_devmem_rxframe.c): a stream of valid frames of every type and many
 * sizes, around the read-ahead's capacity and far beyond it, fed in 1-byte reads, reads of
 * random sizes and one whole read, with read-ahead buffers of several sizes. Every frame
 * must arrive once, in order, with its header and every payload byte intact, and a PUT's or
 * GET_RESP's payload where dest said; also when the receiver of every SEND writes over the
 * MCA_BTL_DEVMEM_RX_SLACK bytes past its payload, as Open MPI 5's ob1 does past a CID
 * header. Exit 0 pass, 1 fail.
 */
#include "base/btl_devmem_rxframe.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define NFRAMES 400

struct frame {
    struct mca_btl_devmem_hdr h;
    unsigned char *payload; /* mca_btl_devmem_hdr_payload(&h) bytes */
    char *dest;             /* PUT / GET_RESP: where dest put it */
};

struct harness {
    struct frame *frames;
    int n;
    int admitted, completed; /* frames so far */
    int errors;              /* wrong header, bytes or order */
    char first_error[160];
};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

/* complete() writes over the slack past every SEND payload */
static int scribble;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t) rng;
}

static void bad(struct harness *t, const char *what)
{
    if (0 == t->errors++) {
        snprintf(t->first_error, sizeof(t->first_error), "frame %d: %s", t->completed, what);
    }
}

static int admit(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    struct harness *t = ctx;

    if (t->admitted != t->completed) {
        bad(t, "admitted twice or before the previous frame completed");
    } else if (t->admitted >= t->n || 0 != memcmp(h, &t->frames[t->admitted].h, sizeof(*h))) {
        bad(t, "admit saw another header than was sent");
    }
    t->admitted++;
    return 0;
}

static char *dest(void *ctx, const struct mca_btl_devmem_hdr *h)
{
    struct harness *t = ctx;
    struct frame *f = &t->frames[t->admitted - 1];

    if (MCA_BTL_DEVMEM_HDR_PUT != h->type && MCA_BTL_DEVMEM_HDR_GET_RESP != h->type
        && MCA_BTL_DEVMEM_HDR_PUSH != h->type) {
        bad(t, "dest asked for a frame that stays in the read-ahead");
        return NULL;
    }
    if (NULL != f->dest) {
        bad(t, "dest asked twice");
    }
    free(f->dest);
    f->dest = malloc(h->size); /* exactly its size: ASan sees any overrun */
    memset(f->dest, 0xee, h->size);
    return f->dest;
}

static int complete(void *ctx, const struct mca_btl_devmem_hdr *h, char *body)
{
    struct harness *t = ctx;
    struct frame *f;
    uint32_t p = mca_btl_devmem_hdr_payload(h);

    if (t->completed >= t->n || t->admitted != t->completed + 1) {
        bad(t, "completed without being admitted");
        t->completed++;
        return 0;
    }
    f = &t->frames[t->completed];
    if (0 != memcmp(h, &f->h, sizeof(*h))) {
        bad(t, "complete saw another header than was sent");
    } else if (MCA_BTL_DEVMEM_HDR_SEND == h->type) {
        if (p > 0 && (NULL == body || 0 != memcmp(body, f->payload, p))) {
            bad(t, "a SEND payload differs");
        } else if (scribble && NULL != body) {
            memset(body + p, 0x5a, MCA_BTL_DEVMEM_RX_SLACK);
        }
    } else if (p > 0 && (NULL == f->dest || 0 != memcmp(f->dest, f->payload, p))) {
        bad(t, "a PUT, GET_RESP or PUSH payload differs at its destination");
    }
    free(f->dest);
    f->dest = NULL;
    t->completed++;
    return 0;
}

static void malformed(void *ctx, const struct mca_btl_devmem_hdr *h,
                      enum mca_btl_devmem_check chk)
{
    bad(ctx, mca_btl_devmem_check_str(chk));
}

static const struct mca_btl_devmem_rxframe_ops ops = {admit, dest, complete, malformed};

static const struct mca_btl_devmem_limits limits = {.frag_limit = 256 * 1024,
                                                    .put_limit = 1024 * 1024};

/* A payload size: mostly small, some near `cap`, a few far beyond it. */
static uint32_t pick_size(size_t cap, uint32_t max)
{
    uint32_t s;

    switch (rnd() % 8) {
    case 0: s = 0; break;
    case 1: s = rnd() % 16; break;
    case 2: case 3: s = rnd() % 512; break;
    case 4: s = (uint32_t) cap - 40 + rnd() % 80; break; /* around the read-ahead */
    case 5: s = (uint32_t) cap * 2 + rnd() % 4096; break;
    default: s = rnd() % (64 * 1024); break;
    }
    return s > max ? max : s;
}

static unsigned char *build_stream(struct frame *frames, int n, size_t cap, size_t *len)
{
    size_t total = 0, off = 0;
    unsigned char *s;

    for (int i = 0; i < n; i++) {
        struct mca_btl_devmem_hdr *h = &frames[i].h;
        uint32_t p;

        memset(h, 0, sizeof(*h));
        h->type = (uint8_t) (1 + rnd() % MCA_BTL_DEVMEM_HDR_TYPE_MAX);
        switch (h->type) {
        case MCA_BTL_DEVMEM_HDR_SEND:
            h->tag = (uint8_t) rnd();
            h->size = pick_size(cap, limits.frag_limit);
            if (0 == rnd() % 4) { /* announcing a push */
                h->flags = MCA_BTL_DEVMEM_FLAG_PUSH_NEXT;
                h->id = i + 1;
                h->addr = 4096 + rnd();
            }
            break;
        case MCA_BTL_DEVMEM_HDR_PUSH:
            h->size = 1 + pick_size(cap, MCA_BTL_DEVMEM_PUSH_MAX - 1);
            h->id = i + 1;
            h->addr = 4096 + rnd();
            break;
        case MCA_BTL_DEVMEM_HDR_PUT:
        case MCA_BTL_DEVMEM_HDR_GET_RESP:
            h->size = pick_size(cap, (uint32_t) limits.put_limit);
            h->addr = rnd();
            h->id = rnd();
            break;
        case MCA_BTL_DEVMEM_HDR_GET_REQ:
            h->size = rnd() % (uint32_t) limits.put_limit; /* asked for; carries none */
            h->addr = ((uint64_t) rnd() << 32) | rnd();
            h->id = i + 1;
            h->flags = rnd() % 2 ? MCA_BTL_DEVMEM_FLAG_DEVFLOW : 0;
            break;
        case MCA_BTL_DEVMEM_HDR_FIN:
            break;
        case MCA_BTL_DEVMEM_HDR_DEVFLOW:
            h->id = 1 + rnd() % UINT16_MAX;
            break;
        case MCA_BTL_DEVMEM_HDR_LANES:
            h->id = rnd() % 2 ? MCA_BTL_DEVMEM_LANES_WANT : MCA_BTL_DEVMEM_LANES_NONE;
            break;
        }
        p = mca_btl_devmem_hdr_payload(h);
        frames[i].payload = malloc(p > 0 ? p : 1);
        for (uint32_t b = 0; b < p; b++) {
            frames[i].payload[b] = (unsigned char) rnd();
        }
        frames[i].dest = NULL;
        total += sizeof(*h) + p;
    }
    s = malloc(total);
    for (int i = 0; i < n; i++) {
        uint32_t p = mca_btl_devmem_hdr_payload(&frames[i].h);
        memcpy(s + off, &frames[i].h, sizeof(frames[i].h));
        memcpy(s + off + sizeof(frames[i].h), frames[i].payload, p);
        off += sizeof(frames[i].h) + p;
    }
    *len = total;
    return s;
}

enum chunking { ONE_BYTE, RANDOM, WHOLE, HDR_FIRST };
static const char *const chunking_name[] = {"1-byte reads", "random reads", "whole reads",
                                            "random reads, headers alone at random"};

/* Feed the stream as a socket would: each read fills the iovecs with up to `chunk` bytes. */
static int feed(struct mca_btl_devmem_rxframe *rf, const unsigned char *s, size_t len,
                enum chunking how)
{
    size_t off = 0;

    while (off < len) {
        struct iovec iov[2];
        int cnt;
        size_t chunk = ONE_BYTE == how ? 1 : WHOLE == how ? len : 1 + rnd() % 70000;

        /* as the owner does when it expects a large answer, or not */
        rf->hdr_first = HDR_FIRST == how && 0 == rnd() % 2;
        cnt = mca_btl_devmem_rxframe_iov(rf, iov);
        size_t n = 0;
        int rc;

        for (int i = 0; i < cnt && off + n < len && n < chunk; i++) {
            size_t k = iov[i].iov_len;
            if (0 == k) {
                return -100; /* an empty iovec would read nothing forever */
            }
            if (k > len - off - n) {
                k = len - off - n;
            }
            if (k > chunk - n) {
                k = chunk - n;
            }
            memcpy(iov[i].iov_base, s + off + n, k);
            n += k;
            if (k < iov[i].iov_len) {
                break; /* a short read fills the iovecs in order */
            }
        }
        off += n;
        rc = mca_btl_devmem_rxframe_got(rf, n);
        if (rc < 0) {
            return rc;
        }
    }
    return 0;
}

static void run(size_t cap, enum chunking how)
{
    const char *what = scribble ? ", the slack past each SEND written over" : "";
    struct frame frames[NFRAMES];
    struct harness t = {.frames = frames, .n = NFRAMES};
    struct mca_btl_devmem_rxframe rf;
    size_t len;
    unsigned char *s = build_stream(frames, NFRAMES, cap, &len);
    int rc;

    mca_btl_devmem_rxframe_init(&rf, &ops, &t);
    rf.limits = limits;
    CHECK(0 == mca_btl_devmem_rxframe_start(&rf, cap), "read-ahead of %zu bytes", cap);
    rc = feed(&rf, s, len, how);
    CHECK(0 == rc && 0 == t.errors && NFRAMES == t.completed && NFRAMES == t.admitted,
          "%zu-byte read-ahead, %s%s: %d of %d frames (%zu bytes) delivered intact%s%s (rc %d)",
          cap, chunking_name[how], what, t.completed, NFRAMES, len, t.errors ? "; " : "",
          t.first_error, rc);
    CHECK(!rf.in_body && 0 == mca_btl_devmem_rxframe_partial(&rf),
          "%zu-byte read-ahead, %s: the stream ends between frames", cap, chunking_name[how]);
    for (int i = 0; i < NFRAMES; i++) {
        free(frames[i].payload);
        free(frames[i].dest);
    }
    mca_btl_devmem_rxframe_fini(&rf);
    free(s);
}

/* With hdr_first, a large GET_RESP after a SEND is read header by header: the read-ahead
 * takes no more than one header at a time between frames, and the answer's payload lands
 * in place with its first byte, none of it copied out of the read-ahead. */
static void test_hdr_first(void)
{
    const size_t hs = sizeof(struct mca_btl_devmem_hdr), cap = 4096;
    struct frame frames[2];
    struct harness t = {.frames = frames, .n = 2};
    struct mca_btl_devmem_rxframe rf;
    struct iovec iov[2];
    unsigned char *s;
    size_t off = 0, len;
    int cnt, ok = 1, in_place = 0;

    memset(frames, 0, sizeof(frames));
    frames[0].h.type = MCA_BTL_DEVMEM_HDR_SEND;
    frames[0].h.size = 100;
    frames[1].h.type = MCA_BTL_DEVMEM_HDR_GET_RESP;
    frames[1].h.size = 3 * cap;
    frames[1].h.id = 7;
    len = 2 * hs + frames[0].h.size + frames[1].h.size;
    s = malloc(len);
    for (int i = 0; i < 2; i++) {
        frames[i].payload = malloc(frames[i].h.size);
        for (uint32_t b = 0; b < frames[i].h.size; b++) {
            frames[i].payload[b] = (unsigned char) rnd();
        }
        memcpy(s + off, &frames[i].h, hs);
        memcpy(s + off + hs, frames[i].payload, frames[i].h.size);
        off += hs + frames[i].h.size;
    }
    mca_btl_devmem_rxframe_init(&rf, &ops, &t);
    rf.limits = limits;
    (void) mca_btl_devmem_rxframe_start(&rf, cap);
    off = 0;
    while (off < len && ok) {
        size_t n = 0;

        rf.hdr_first = true;
        cnt = mca_btl_devmem_rxframe_iov(&rf, iov);
        if (0 == t.completed && !rf.in_body) {
            /* the SEND's header, then its payload and the next header, no further */
            size_t have = mca_btl_devmem_rxframe_partial(&rf);
            ok &= 1 == cnt
                  && (have < hs ? hs - have : 2 * hs + frames[0].h.size - have)
                         == iov[0].iov_len;
        }
        if (2 == t.admitted && 1 == t.completed && rf.in_body) {
            /* the answer's header is in: its first payload byte goes to its destination */
            ok &= frames[1].dest == iov[0].iov_base && frames[1].h.size == iov[0].iov_len;
            in_place++;
        }
        for (int i = 0; i < cnt && off + n < len; i++) {
            size_t k = iov[i].iov_len < len - off - n ? iov[i].iov_len : len - off - n;
            memcpy(iov[i].iov_base, s + off + n, k);
            n += k;
        }
        off += n;
        ok &= 0 == mca_btl_devmem_rxframe_got(&rf, n);
    }
    CHECK(ok && 1 == in_place && 0 == t.errors && 2 == t.completed,
          "headers first: between frames only a header is read, and a large answer's payload "
          "is read straight to its destination (%d of 2 delivered%s%s)", t.completed,
          t.errors ? "; " : "", t.first_error);
    for (int i = 0; i < 2; i++) {
        free(frames[i].payload);
        free(frames[i].dest);
    }
    mca_btl_devmem_rxframe_fini(&rf);
    free(s);
}

/* A malformed header stops the stream at once, and nothing after it is delivered. */
static void test_malformed(void)
{
    struct frame frames[3];
    struct harness t = {.frames = frames, .n = 3};
    struct mca_btl_devmem_rxframe rf;
    unsigned char s[3 * sizeof(struct mca_btl_devmem_hdr)];
    int rc;

    memset(frames, 0, sizeof(frames));
    frames[0].h.type = MCA_BTL_DEVMEM_HDR_FIN;
    frames[1].h.type = 99;
    frames[2].h.type = MCA_BTL_DEVMEM_HDR_FIN;
    for (int i = 0; i < 3; i++) {
        memcpy(s + i * sizeof(frames[i].h), &frames[i].h, sizeof(frames[i].h));
    }
    mca_btl_devmem_rxframe_init(&rf, &ops, &t);
    rf.limits = limits;
    (void) mca_btl_devmem_rxframe_start(&rf, 1024);
    rc = feed(&rf, s, sizeof(s), WHOLE);
    CHECK(-1 == rc && 1 == t.completed && 1 == t.errors,
          "an unknown frame type stops the stream after the frame before it (rc %d, %d "
          "delivered)", rc, t.completed);
    mca_btl_devmem_rxframe_fini(&rf);
}

int main(void)
{
    static const size_t caps[] = {sizeof(struct mca_btl_devmem_hdr) + 1, 4096, 128 * 1024 + 24};

    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        run(caps[c], ONE_BYTE);
        run(caps[c], RANDOM);
        run(caps[c], WHOLE);
        run(caps[c], HDR_FIRST);
    }
    scribble = 1;
    for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
        run(caps[c], RANDOM);
        run(caps[c], WHOLE);
    }
    scribble = 0;
    test_hdr_first();
    test_malformed();
    return check_finish();
}
