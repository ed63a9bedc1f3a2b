/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The real kernel (6.12+ with CONFIG_NET_DEVMEM): SO_DEVMEM_DONTNEED and
 * recvmsg(MSG_SOCK_DEVMEM) on plain loopback TCP behave as the reference says; a devmem
 * send with an id nobody bound is refused; MSG_ZEROCOPY completions are read from the error
 * queue; the real ops table reports refusals and never falls back to the emulation.
 * Skips (77) on a kernel that does not know the devmem socket options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "build_config.h"
#include "kernel.h"

#include "check.h"
#include "tcp_pair.h"

static void on_release(void *ctx, uint64_t cookie, size_t bytes)
{
    *(size_t *) ctx += bytes;
}

int main(void)
{
    struct devmem_dmabuf_token tk[DEVMEM_MAX_DONTNEED_TOKENS + 1];
    struct devmem_rx_batch b;
    struct devmem_ledger l;
    struct devmem_err err;
    char msg[3000], got[3000];
    int snd, rcv, udp, rc;
    ssize_t n;
    size_t i;

    if (0 != tcp_pair(&snd, &rcv, NULL, 0)) {
        printf("FAIL loopback TCP pair\n");
        return 1;
    }
    tk[0].token_start = 1;
    tk[0].token_count = 8;
    rc = setsockopt(rcv, SOL_SOCKET, SO_DEVMEM_DONTNEED, tk, sizeof(tk[0]));
    if (rc < 0 && ENOPROTOOPT == errno) {
        printf("skip: this kernel has no SO_DEVMEM_DONTNEED (needs Linux 6.12+, "
               "CONFIG_NET_DEVMEM)\n");
        return 77;
    }
    CHECK(0 == rc, "DONTNEED on a plain TCP socket: 0 frags freed (returned %d)", rc);
    rc = devmem_rx_dontneed(NULL, rcv, tk, 1, &err);
    CHECK(0 == rc, "devmem_rx_dontneed: the kernel's count (0) comes back");
    rc = setsockopt(rcv, SOL_SOCKET, SO_DEVMEM_DONTNEED, tk, 12);
    CHECK(rc < 0 && EINVAL == errno, "DONTNEED with optlen 12: EINVAL");
    for (i = 0; i <= DEVMEM_MAX_DONTNEED_TOKENS; i++) {
        tk[i].token_start = (uint32_t) (1 + i);
        tk[i].token_count = 1;
    }
    rc = devmem_rx_dontneed(NULL, rcv, tk, DEVMEM_MAX_DONTNEED_TOKENS + 1, &err);
    CHECK(-EINVAL == rc, "DONTNEED with 129 ranges: EINVAL (%s)", err.msg);
    rc = devmem_rx_dontneed(NULL, rcv, tk, DEVMEM_MAX_DONTNEED_TOKENS, &err);
    CHECK(0 == rc, "DONTNEED with 128 ranges: accepted, 0 freed");
    udp = socket(AF_INET, SOCK_DGRAM, 0);
    rc = devmem_rx_dontneed(NULL, udp, tk, 1, &err);
    CHECK(-EBADF == rc, "DONTNEED on a UDP socket: EBADF (%s)", err.msg);
    close(udp);

    /* plain data under MSG_SOCK_DEVMEM: no cmsg, one linear piece */
    for (i = 0; i < sizeof(msg); i++) {
        msg[i] = (char) (i * 13 + 1);
    }
    n = write(snd, msg, sizeof(msg));
    CHECK(n == (ssize_t) sizeof(msg), "3000 bytes written on loopback");
    devmem_rx_batch_init(&b, 65536, 64, &err);
    devmem_ledger_init(&l, rcv, devmem_rx_dontneed, NULL, &err);
    b.ledger = &l;
    {
        size_t have = 0;

        while (have < sizeof(msg)) {
            n = devmem_rx_recv(rcv, &b, 0, &err);
            if (n <= 0) {
                break;
            }
            CHECK(1 == b.nfrags && DEVMEM_FRAG_LINEAR == b.frags[0].kind &&
                      (size_t) n == b.frags[0].len,
                  "recvmsg(MSG_SOCK_DEVMEM) on plain data: %zd bytes, no devmem cmsg", n);
            memcpy(got + have, b.linear, (size_t) n);
            have += (size_t) n;
        }
        CHECK(have == sizeof(msg) && 0 == memcmp(got, msg, sizeof(msg)),
              "plain data under the flag is intact");
    }
    {
        struct msghdr m;
        struct iovec iov;

        n = write(snd, msg, 100);
        devmem_rx_batch_msghdr(&b, &m, &iov);
        n = recvmsg(rcv, &m, MSG_SOCK_DEVMEM);
        CHECK(100 == n && 0 == m.msg_controllen && 0 == (m.msg_flags & MSG_CTRUNC),
              "raw recvmsg(MSG_SOCK_DEVMEM): 100 bytes, msg_controllen 0");
    }
    rc = devmem_ledger_close(&l, &err);
    CHECK(0 == rc && 0 == l.stats.tokens_received && 3000 == l.stats.bytes_linear,
          "ledger: no tokens on plain data, close makes no call");
    devmem_rx_batch_fini(&b);
    close(snd);
    close(rcv);

    /* devmem send with an id nobody bound; MSG_ZEROCOPY completions */
    if (0 != tcp_pair(&snd, &rcv, NULL, TCP_PAIR_ZEROCOPY)) {
        printf("FAIL loopback TCP pair with SO_ZEROCOPY\n");
        return 1;
    }
    {
        struct devmem_tx_iov ti = {.offset = 0, .len = 100};
        struct devmem_tx_tracker t;
        struct devmem_tx_completion c;
        size_t released = 0;
        struct pollfd p = {.fd = snd, .events = 0};
        int tries;

        n = devmem_tx_send(snd, 0x7ffffff0u, &ti, 1, MSG_DONTWAIT, &err);
        CHECK(n < 0, "devmem send with an unbound id is refused: %zd (%s)", n, err.msg);
        CHECK(-EINVAL == n, "... with EINVAL, as the reference says");
        rc = devmem_tx_read_completion(snd, &c, &err);
        CHECK(-EAGAIN == rc, "no notification for a refused send");

        /* a plain MSG_ZEROCOPY send takes id 0; loopback copies, so COPIED is set */
        devmem_tx_tracker_init(&t, &err);
        n = send(snd, msg, 1000, MSG_ZEROCOPY);
        if (n > 0) {
            devmem_tx_track(&t, (size_t) n, 1000, 1, NULL);
        }
        n = send(snd, msg, 1000, MSG_ZEROCOPY);
        if (n > 0) {
            devmem_tx_track(&t, (size_t) n, 1000, 2, NULL);
        }
        rc = -EAGAIN;
        for (tries = 0; tries < 100 && devmem_tx_inflight(&t) > 0; tries++) {
            poll(&p, 1, 20);
            rc = devmem_tx_read_completion(snd, &c, &err);
            if (0 == rc) {
                devmem_tx_complete(&t, &c, on_release, &released, &err);
            }
        }
        CHECK(0 == devmem_tx_inflight(&t) && 2000 == released && t.stats.notifications >= 1,
              "MSG_ZEROCOPY: both sends completed from the error queue (last [%u, %u]%s)",
              c.lo, c.hi, c.copied ? ", copied" : "");
        devmem_tx_tracker_fini(&t);
    }
    close(snd);
    close(rcv);

    /* the real ops table: refusals reported, never a fallback */
    {
        struct devmem_kernel *k = NULL;
        struct devmem_region host;
        struct devmem_bind_req req;
        unsigned int q = 0;
        uint32_t id = 0;
        int memfd;

        rc = devmem_kernel_open(&k, DEVMEM_KERNEL_REAL, NULL, &err);
        CHECK(0 == rc && 0 == strcmp(k->ops->name, "real") && NULL == k->emul,
              "real kernel ops opened, no emulation behind them");
        devmem_region_alloc(&host, &devmem_provider_host, 4096, 0, NULL);
        memset(&req, 0, sizeof(req));
        req.ifindex = 1;
        req.queues = &q;
        req.nqueues = 1;
        req.region = &host;
        rc = k->ops->bind_rx(k, &req, &id, &err);
        CHECK(-EINVAL == rc && 0 == id, "real bind-rx of host memory: refused (%s)", err.msg);
        /* a memfd is no dmabuf: the kernel (or its permission check) must refuse */
        memfd = memfd_create("not-a-dmabuf", MFD_CLOEXEC);
        (void) ftruncate(memfd, 4096);
        host.dmabuf_fd = memfd;
        rc = k->ops->bind_rx(k, &req, &id, &err);
        CHECK(rc < 0 && 0 == id && '\0' != err.msg[0],
              "real bind-rx of a memfd on lo: refused by the kernel: %d (%s)", rc, err.msg);
        rc = k->ops->bind_tx(k, &req, &id, &err);
        CHECK(rc < 0 && 0 == id, "real bind-tx of a memfd on lo: refused: %d (%s)", rc, err.msg);
        host.dmabuf_fd = -1;
        close(memfd);
        rc = k->ops->steer(k, 1234, 1, &err);
        CHECK(-EOPNOTSUPP == rc, "real steer: not this layer's job (%s)", err.msg);
        {
            unsigned int queues[2] = {1, 2}, q = 0;
            uint32_t ctx = 0;

            rc = k->ops->steer_rss(k, 1234, 1, queues, 2, &ctx, &err);
            CHECK(-EOPNOTSUPP == rc && 0 == ctx, "real steer into an RSS context: not this "
                  "layer's job either (%s)", err.msg);
            rc = k->ops->sock_queue(k, 0, &q, &err);
            CHECK(-EOPNOTSUPP == rc, "real: a flow's RX queue is not asked of the kernel (%s)",
                  err.msg);
        }
        rc = k->ops->unbind(k, 99, &err);
        CHECK(-ENOENT == rc, "real unbind of an unknown id: -ENOENT");
        /* the binding watch asks queue-get: loopback's one RX queue holds no binding */
        rc = k->ops->bound(k, 1, 99, &err);
#ifdef HAVE_LIBMNL
        CHECK(0 == rc, "real: binding 99 holds no queue of lo (queue-get answered %d%s%s)", rc,
              rc < 0 ? ": " : "", rc < 0 ? err.msg : "");
#else
        CHECK(-EOPNOTSUPP == rc && NULL != strstr(err.msg, "libmnl"),
              "real, built without libmnl: queue-get cannot be asked, and says why (%s)",
              err.msg);
#endif
        devmem_region_release(&host);
        devmem_kernel_close(k);
    }

    return check_finish();
}
