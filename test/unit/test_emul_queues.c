/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated NIC's RX queues and RSS contexts (devmem/emul_queues.c), over loopback TCP:
 * two RX bindings over queues {3, 4} and {5}, an RSS context over {3, 4, 5}, and six flows
 * to one listening port steered into it. Each flow must take the context's next queue,
 * land in the binding that owns that queue (its cmsgs name that dmabuf) with every byte
 * intact, and the per-queue counters must add up; then the kernel's refusals: a queue bound
 * twice, a queue named twice, a context that a rule still uses; and a context over a queue
 * that no binding covers, whose flows stay plain data.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emul.h"
#include "emul_int.h" /* the emulator's state: bytes per queue */
#include "rx.h"

#include "check.h"

#define FLOWS 6
#define FLOW_BYTES (48 * 1024)

static unsigned char pattern(int flow, size_t i)
{
    return (unsigned char) ((i * 29u + (size_t) flow * 101u + 3u) & 0xff);
}

/* A listener on 127.0.0.1 and n connections to it: snd[i] -> rcv[i]. 0 or -1. */
static int connect_flows(int n, int *snd, int *rcv, uint16_t *port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    int l = socket(AF_INET, SOCK_STREAM, 0);

    if (l < 0 || 0 != bind(l, (struct sockaddr *) &a, sizeof(a)) || 0 != listen(l, n)
        || 0 != getsockname(l, (struct sockaddr *) &a, &len)) {
        return -1;
    }
    *port = ntohs(a.sin_port);
    for (int i = 0; i < n; i++) {
        snd[i] = socket(AF_INET, SOCK_STREAM, 0);
        if (snd[i] < 0 || 0 != connect(snd[i], (struct sockaddr *) &a, sizeof(a))
            || (rcv[i] = accept(l, NULL, NULL)) < 0) {
            return -1;
        }
    }
    close(l);
    return 0;
}

/* Receive flow f's FLOW_BYTES with devmem receives, check them against the pattern from the
 * pool (or the linear part), and return the tokens. The dmabuf id every fragment named goes
 * to *dmabuf (0: none did, -1: several). Bytes received, or -1. */
static long receive_flow(struct devmem_emul *e, int fd, int f, struct devmem_region *pools[],
                         const uint32_t ids[], int npools, long *dmabuf)
{
    static unsigned char lin[FLOW_BYTES];
    static struct devmem_frag frags[2048];
    union {
        char b[CMSG_SPACE(24) * 1100];
        struct cmsghdr align;
    } ctrl;
    size_t got = 0;

    *dmabuf = 0;
    while (got < FLOW_BYTES) {
        struct msghdr m = {0};
        struct iovec iov = {lin, sizeof(lin)};
        size_t nf = 0;
        ssize_t n;

        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl.b;
        m.msg_controllen = sizeof(ctrl.b);
        n = devmem_emul_recvmsg(e, fd, &m, MSG_SOCK_DEVMEM);
        if (n <= 0) {
            return -1;
        }
        if (0 == m.msg_controllen) { /* plain data */
            for (ssize_t i = 0; i < n; i++) {
                if (lin[i] != pattern(f, got + (size_t) i)) {
                    return -1;
                }
            }
            got += (size_t) n;
            continue;
        }
        if (0 != devmem_rx_parse(&m, (size_t) n, sizeof(lin), frags, 2048, &nf, NULL)) {
            return -1;
        }
        for (size_t i = 0; i < nf; i++) {
            const unsigned char *src;
            struct devmem_dmabuf_token t = {0, 1};

            if (DEVMEM_FRAG_DMABUF != frags[i].kind) {
                src = lin + frags[i].offset; /* linear: the offset is into our buffer */
            } else {
                int p = 0;

                while (p < npools && ids[p] != frags[i].dmabuf_id) {
                    p++;
                }
                if (p == npools) {
                    return -1;
                }
                *dmabuf = 0 == *dmabuf || *dmabuf == (long) ids[p] ? (long) ids[p] : -1;
                src = (const unsigned char *) pools[p]->map + frags[i].offset;
                t.token_start = frags[i].token;
            }
            for (size_t j = 0; j < frags[i].len; j++) {
                if (src[j] != pattern(f, got + j)) {
                    return -1;
                }
            }
            if (0 != t.token_start) { /* checked: the page may go back */
                (void) devmem_emul_dontneed(e, fd, &t, sizeof(t));
            }
            got += frags[i].len;
        }
    }
    return (long) got;
}

int main(void)
{
    struct devmem_emul_config cfg;
    struct devmem_emul *e = NULL;
    struct devmem_region a, b;
    struct devmem_region *pools[2] = {&a, &b};
    static unsigned char buf[FLOW_BYTES];
    const unsigned int qa[] = {3, 4}, qb[] = {5}, ctxq[] = {3, 4, 5}, twice[] = {6, 6};
    const unsigned int lonely[] = {7};
    uint32_t ids[2], ctx = 0, ctx2 = 0, extra = 0;
    struct devmem_err err;
    int snd[FLOWS], rcv[FLOWS], ok = 1;
    uint16_t port;
    uint64_t qsum = 0;

    devmem_emul_config_default(&cfg);
    cfg.seed = 11;
    cfg.readable_pct = 0;
    CHECK(0 == devmem_emul_open(&e, &cfg, NULL), "emulated kernel opened");
    devmem_region_alloc(&a, &devmem_provider_host, 256 * 4096, 0, NULL);
    devmem_region_alloc(&b, &devmem_provider_host, 256 * 4096, 0, NULL);

    CHECK(0 == devmem_emul_bind_rx_queues(e, &a, 1, qa, 2, &ids[0], &err)
              && 0 == devmem_emul_bind_rx_queues(e, &b, 1, qb, 1, &ids[1], &err),
          "bind-rx of pool A over queues 3-4 and of pool B over queue 5: bindings %u, %u",
          ids[0], ids[1]);
    CHECK(-EEXIST == devmem_emul_bind_rx_queues(e, &b, 1, qb, 1, &extra, &err),
          "bind-rx over a queue bound already: -EEXIST, as 6.18 (%s)", err.msg);
    CHECK(-EINVAL == devmem_emul_bind_rx_queues(e, &b, 1, twice, 2, &extra, &err),
          "bind-rx naming a queue twice: -EINVAL (%s)", err.msg);
    CHECK(0 == devmem_emul_bind_rx_queues(e, &b, 2, qb, 1, &extra, &err)
              && 0 == devmem_emul_unbind(e, extra, &err),
          "queue 5 of another interface binds (and unbinds) alongside");
    CHECK(0 == devmem_emul_rss_ctx_create(e, 1, ctxq, 3, &ctx, &err) && ctx >= 1,
          "an RSS context over queues 3-5: context %u", ctx);
    CHECK(0 == connect_flows(FLOWS, snd, rcv, &port), "%d loopback flows to one port", FLOWS);
    CHECK(0 == devmem_emul_steer_ctx(e, port, ctx, &err), "port %u steered into context %u",
          (unsigned) port, ctx);

    for (int f = 0; f < FLOWS; f++) {
        for (size_t i = 0; i < sizeof(buf); i++) {
            buf[i] = pattern(f, i);
        }
        ok &= (ssize_t) sizeof(buf) == write(snd[f], buf, sizeof(buf));
    }
    CHECK(ok, "%d KiB sent on each flow", FLOW_BYTES / 1024);

    for (int f = 0; f < FLOWS; f++) {
        unsigned int q = 99, want = ctxq[f % 3];
        long dmabuf = 0, got = receive_flow(e, rcv[f], f, pools, ids, 2, &dmabuf);
        uint32_t owner = want == 5 ? ids[1] : ids[0];

        CHECK(got == FLOW_BYTES && 0 == devmem_emul_sock_queue(e, rcv[f], &q) && q == want
                  && dmabuf == (long) owner,
              "flow %d: every byte checked, on queue %u (want %u), in binding %ld (want %u)",
              f, q, want, dmabuf, owner);
    }
    for (unsigned int q = 3; q <= 5; q++) {
        qsum += e->queue_bytes[q];
        CHECK(2 * FLOW_BYTES == e->queue_bytes[q],
              "queue %u received %llu bytes (two flows)", q,
              (unsigned long long) e->queue_bytes[q]);
    }
    CHECK(qsum == FLOWS * FLOW_BYTES && 0 == e->queue_bytes[6],
          "the queues' counters add up to what was sent, and queue 6 saw nothing");

    CHECK(-EBUSY == devmem_emul_rss_ctx_delete(e, ctx, &err),
          "deleting a context a rule still steers into: -EBUSY (%s)", err.msg);
    CHECK(0 == devmem_emul_steer(e, port, 0, &err) && 0 == devmem_emul_rss_ctx_delete(e, ctx, &err)
              && -ENOENT == devmem_emul_rss_ctx_delete(e, ctx, &err),
          "rule removed, then the context: deleted once, -ENOENT after");
    CHECK(-EINVAL == devmem_emul_steer_ctx(e, port, ctx, &err),
          "steering into a deleted context: -EINVAL");

    /* a context over a queue no binding covers: the flow is ordinary TCP data */
    for (int f = 0; f < FLOWS; f++) {
        close(snd[f]);
        devmem_emul_sock_close(e, rcv[f]);
        close(rcv[f]);
    }
    CHECK(0 == devmem_emul_rss_ctx_create(e, 1, lonely, 1, &ctx2, &err) && ctx2 != ctx
              && 0 == connect_flows(1, snd, rcv, &port)
              && 0 == devmem_emul_steer_ctx(e, port, ctx2, &err),
          "a new context (%u) over queue 7, bound to nothing, and a flow into it", ctx2);
    for (size_t i = 0; i < sizeof(buf); i++) {
        buf[i] = pattern(0, i);
    }
    if ((ssize_t) sizeof(buf) == write(snd[0], buf, sizeof(buf))) {
        long dmabuf = 0, got = receive_flow(e, rcv[0], 0, pools, ids, 2, &dmabuf);

        CHECK(got == FLOW_BYTES && 0 == dmabuf && FLOW_BYTES == e->queue_bytes[7],
              "its bytes arrive as plain data on queue 7 (%ld bytes, dmabuf %ld)", got, dmabuf);
    } else {
        CHECK(0, "sending on the flow into queue 7");
    }
    close(snd[0]);
    devmem_emul_sock_close(e, rcv[0]);
    close(rcv[0]);
    devmem_emul_close(e);
    devmem_region_release(&a);
    devmem_region_release(&b);
    return check_finish();
}
