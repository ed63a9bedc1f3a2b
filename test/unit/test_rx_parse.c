/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The devmem cmsg parser on synthetic control buffers: valid dmabuf, linear, mixed, none,
 * truncated, MSG_CTRUNC, unknown type, bad lengths, size-sum mismatch; and how a receive's
 * errors and partial parses reach the caller and the ledger.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "rx.h"

#include "check.h"

static union {
    unsigned char b[4096];
    struct cmsghdr align;
} cbuf;
static size_t cused;

static void reset(void)
{
    memset(&cbuf, 0, sizeof(cbuf));
    cused = 0;
}

/* Append one cmsg the way the kernel does; cmsg_len may be overridden (0: the right one). */
static void put(int level, int type, uint64_t off, uint32_t size, uint32_t token, uint32_t id,
                size_t len_override)
{
    struct devmem_dmabuf_cmsg dc = {.frag_offset = off, .frag_size = size, .frag_token = token,
                                    .dmabuf_id = id};
    struct cmsghdr h;

    h.cmsg_len = len_override ? len_override : CMSG_LEN(sizeof(dc));
    h.cmsg_level = level;
    h.cmsg_type = type;
    memcpy(cbuf.b + cused, &h, sizeof(h));
    memcpy(cbuf.b + cused + CMSG_LEN(0), &dc, sizeof(dc));
    cused += CMSG_SPACE(sizeof(dc));
}

static void msg_of(struct msghdr *m, size_t controllen, int flags)
{
    memset(m, 0, sizeof(*m));
    m->msg_control = cbuf.b;
    m->msg_controllen = controllen;
    m->msg_flags = flags;
}

int main(void)
{
    struct devmem_frag f[16];
    struct devmem_err err;
    struct msghdr m;
    size_t n;
    int rc;

    /* valid dmabuf frags */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 8192, 4096, 1, 7, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 4096 * 9 + 128, 100, 2, 7, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 3000, 5, 7, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 7196, 1 << 16, f, 16, &n, &err);
    CHECK(0 == rc && 3 == n, "dmabuf: 3 frags parsed (rc %d, n %zu)", rc, n);
    CHECK(DEVMEM_FRAG_DMABUF == f[0].kind && 8192 == f[0].offset && 4096 == f[0].len &&
              1 == f[0].token && 7 == f[0].dmabuf_id,
          "dmabuf: frag 0 is {8192, 4096, token 1, id 7}");
    CHECK(4096 * 9 + 128 == f[1].offset && 100 == f[1].len && 2 == f[1].token,
          "dmabuf: frag 1 has its sub-page offset");
    CHECK(0 == f[2].offset && 3000 == f[2].len && 5 == f[2].token, "dmabuf: frag 2 in order");

    /* linear only */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 100, 0, 0, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 100, 1024, f, 16, &n, &err);
    CHECK(0 == rc && 1 == n && DEVMEM_FRAG_LINEAR == f[0].kind && 0 == f[0].offset &&
              100 == f[0].len, "linear: one linear frag at buffer offset 0");

    /* mixed, in stream order: linear offsets advance only by linear bytes */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 50, 0, 0, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 4096, 4096, 10, 3, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 65536, 100, 11, 3, 0);
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 20, 0, 0, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 12288, 3000, 12, 3, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 50 + 4096 + 100 + 20 + 3000, 1024, f, 16, &n, &err);
    CHECK(0 == rc && 5 == n, "mixed: 5 pieces (rc %d)", rc);
    CHECK(DEVMEM_FRAG_LINEAR == f[0].kind && 0 == f[0].offset && 50 == f[0].len &&
              DEVMEM_FRAG_DMABUF == f[1].kind && DEVMEM_FRAG_DMABUF == f[2].kind &&
              DEVMEM_FRAG_LINEAR == f[3].kind && 50 == f[3].offset && 20 == f[3].len &&
              DEVMEM_FRAG_DMABUF == f[4].kind && 12 == f[4].token,
          "mixed: kinds in stream order, second linear piece at buffer offset 50");

    /* the last cmsg may end without its padding (controllen cut to what was used) */
    msg_of(&m, cused - (CMSG_SPACE(24) - CMSG_LEN(24)), 0);
    rc = devmem_rx_parse(&m, 50 + 4096 + 100 + 20 + 3000, 1024, f, 16, &n, &err);
    CHECK(0 == rc && 5 == n, "mixed: last cmsg without padding still parses");

    /* none: plain data */
    reset();
    msg_of(&m, 0, 0);
    rc = devmem_rx_parse(&m, 1000, 1000, f, 16, &n, &err);
    CHECK(0 == rc && 1 == n && DEVMEM_FRAG_LINEAR == f[0].kind && 1000 == f[0].len &&
              0 == f[0].offset, "none: plain data is one linear piece of 1000 bytes");
    rc = devmem_rx_parse(&m, 0, 1000, f, 16, &n, &err);
    CHECK(0 == rc && 0 == n, "none: end of stream gives no piece");
    rc = devmem_rx_parse(&m, 2000, 1000, f, 16, &n, &err);
    CHECK(-EOVERFLOW == rc, "none: more plain bytes than the buffer is refused (%d)", rc);

    /* truncated: cmsg_len runs past the buffer; the frag before it is kept for its token */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 4096, 1, 1, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 4096, 4096, 2, 1, 0);
    msg_of(&m, cused - 20, 0);
    rc = devmem_rx_parse(&m, 8192, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc && 1 == n && 1 == f[0].token,
          "truncated: -EPROTO, first frag kept (rc %d, n %zu: %s)", rc, n, err.msg);

    /* a header cut in the middle: fewer bytes than a cmsghdr are left -> ignored, sum fails */
    msg_of(&m, CMSG_SPACE(24) + 8, 0);
    rc = devmem_rx_parse(&m, 8192, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc && 1 == n, "truncated header: sizes do not sum (rc %d)", rc);

    /* MSG_CTRUNC */
    msg_of(&m, cused, MSG_CTRUNC);
    rc = devmem_rx_parse(&m, 8192, 1024, f, 16, &n, &err);
    CHECK(-EMSGSIZE == rc && 0 == n, "MSG_CTRUNC: -EMSGSIZE (%s)", err.msg);

    /* unknown type and level */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, 0);
    put(SOL_SOCKET, 1 /* SCM_RIGHTS */, 0, 100, 1, 1, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 200, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc && 1 == n, "unknown type: -EPROTO (%s)", err.msg);
    reset();
    put(IPPROTO_TCP, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 100, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc && 0 == n, "unknown level: -EPROTO");

    /* wrong cmsg_len, including one shorter than a header (must not loop) */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, CMSG_LEN(16));
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 100, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc, "short cmsg_len: -EPROTO (%s)", err.msg);
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, 0);
    ((struct cmsghdr *) cbuf.b)->cmsg_len = 0;
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 100, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc, "cmsg_len 0: -EPROTO, no endless loop");
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, 1u << 30);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 100, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc, "huge cmsg_len: -EPROTO, no read past the buffer");

    /* size sum mismatch, zero-sized frag, linear beyond the buffer, too many pieces */
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 100, 1, 1, 0);
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 10, 0, 0, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 111, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc && 2 == n, "sum mismatch: -EPROTO (%s)", err.msg);
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 0, 1, 1, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 0, 1024, f, 16, &n, &err);
    CHECK(-EPROTO == rc, "zero-sized frag: -EPROTO");
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 600, 0, 0, 0);
    put(SOL_SOCKET, SCM_DEVMEM_LINEAR, 0, 600, 0, 0, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 1200, 1024, f, 16, &n, &err);
    CHECK(-EOVERFLOW == rc && 1 == n, "linear beyond buffer: -EOVERFLOW");
    reset();
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 0, 10, 1, 1, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 4096, 10, 2, 1, 0);
    put(SOL_SOCKET, SCM_DEVMEM_DMABUF, 8192, 10, 3, 1, 0);
    msg_of(&m, cused, 0);
    rc = devmem_rx_parse(&m, 30, 1024, f, 2, &n, &err);
    CHECK(-ENOSPC == rc && 2 == n && 2 == f[1].token, "too many pieces: -ENOSPC, 2 kept");

    /* a receive's errors, and tokens of a failed parse reaching the ledger */
    {
        struct devmem_rx_batch b;
        struct devmem_ledger l;
        struct msghdr bm;
        struct iovec iov;
        ssize_t r;

        rc = devmem_rx_batch_init(&b, 1 << 16, 8, &err);
        CHECK(0 == rc && b.ctrl_len == DEVMEM_RX_CTRL_SIZE(8), "batch: buffers for 8 cmsgs");
        devmem_ledger_init(&l, -1, devmem_rx_dontneed, NULL, &err);
        b.ledger = &l;
        devmem_rx_batch_msghdr(&b, &bm, &iov);
        r = devmem_rx_batch_finish(&b, &bm, -ETOOSMALL, &err);
        CHECK(-ETOOSMALL == r && ETOOSMALL == err.code, "batch: -ETOOSMALL reported (%s)",
              err.msg);
        r = devmem_rx_batch_finish(&b, &bm, -EFAULT, &err);
        CHECK(-EFAULT == r && NULL != strstr(err.msg, "MSG_SOCK_DEVMEM"),
              "batch: -EFAULT names the missing flag (%s)", err.msg);
        r = devmem_rx_batch_finish(&b, &bm, -EAGAIN, &err);
        CHECK(-EAGAIN == r, "batch: -EAGAIN passes through");
        /* two good frags then garbage: both tokens must be in the ledger */
        devmem_rx_batch_msghdr(&b, &bm, &iov);
        memset(b.ctrl, 0, b.ctrl_len);
        {
            struct devmem_dmabuf_cmsg dc = {.frag_offset = 0, .frag_size = 10, .frag_token = 4,
                                            .dmabuf_id = 1};
            struct cmsghdr h = {.cmsg_len = CMSG_LEN(24), .cmsg_level = SOL_SOCKET,
                                .cmsg_type = SCM_DEVMEM_DMABUF};
            unsigned char *c = b.ctrl;

            memcpy(c, &h, sizeof(h));
            memcpy(c + CMSG_LEN(0), &dc, sizeof(dc));
            dc.frag_token = 5;
            memcpy(c + CMSG_SPACE(24), &h, sizeof(h));
            memcpy(c + CMSG_SPACE(24) + CMSG_LEN(0), &dc, sizeof(dc));
            h.cmsg_type = 99;
            memcpy(c + 2 * CMSG_SPACE(24), &h, sizeof(h));
            bm.msg_controllen = 3 * CMSG_SPACE(24);
        }
        r = devmem_rx_batch_finish(&b, &bm, 20, &err);
        CHECK(-EPROTO == r && 2 == l.outstanding &&
                  2 == l.stats.tokens_received,
              "batch: a failed parse still records its 2 tokens (r %zd)", r);
        CHECK(0 == devmem_ledger_release(&l, 4, &err) && 0 == devmem_ledger_release(&l, 5, &err),
              "batch: the recorded tokens can be released");
        l.npending = 0; /* fd -1: do not call the kernel for these synthetic tokens */
        devmem_ledger_close(&l, NULL);
        devmem_rx_batch_fini(&b);
    }

    return check_finish();
}
