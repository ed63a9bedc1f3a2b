/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devmem kernel ABI end to end over loopback TCP: a known pattern sent with the
 * emulated TX from a memfd region, received with the emulated RX into a scattered pool,
 * gathered and compared byte for byte; tokens and completions balanced; backpressure with a
 * tiny pool; a device-memory pool without a host mapping; and the kernel's error contract
 * (EFAULT without the flag, ETOOSMALL, DONTNEED limits, unknown tokens, TX checks).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "emul_int.h" /* the emulator's state: pools and sockets */
#include "kernel.h"

#include "check.h"
#include "tcp_pair.h"

#define STALL_S 20

/* Pages of an RX binding's pool: total and free. -ENOENT for an unknown id. */
static int pool_pages(struct devmem_emul *e, uint32_t id, size_t *total, size_t *nfree)
{
    struct emul_binding *b = devmem_emul_binding_find(e, id);

    if (NULL == b || !b->is_rx) {
        return -ENOENT;
    }
    *total = b->npages;
    *nfree = b->nfree;
    return 0;
}

/* Tokens the socket holds (the kernel's sk_user_frags), 0 for an unknown socket. */
static size_t sock_tokens(const struct devmem_emul *e, int fd)
{
    if (fd < 0 || (size_t) fd >= e->socks_cap || !e->socks[fd].used) {
        return 0;
    }
    return e->socks[fd].ntok;
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned char pattern(size_t i)
{
    return (unsigned char) ((i * 131u + (i >> 9) * 7u + 17u) & 0xff);
}

/* A connected loopback pair; *port is the receiver's local port (the listen port). */
/* A "device" provider: host memory reachable only through copies (map hidden), like a GPU
 * pool, so that the emulation's bounce path runs without a GPU. */
static int dev_copy_in(struct devmem_region *r, size_t off, const void *src, size_t len,
                       struct devmem_err *err)
{
    return (ssize_t) len == pwrite(r->priv_fd, src, len, (off_t) off) ? 0 : -EIO;
}

static int dev_copy_out(struct devmem_region *r, size_t off, void *dst, size_t len,
                        struct devmem_err *err)
{
    return (ssize_t) len == pread(r->priv_fd, dst, len, (off_t) off) ? 0 : -EIO;
}

static struct devmem_provider fakedev;

/* Give back every token the ledger holds (a receiver that kept them all). */
static void release_all(struct devmem_ledger *l)
{
    uint32_t *t = malloc((l->outstanding + 1) * sizeof(*t));
    size_t s, n = 0;

    for (s = 0; NULL != t && s < l->set_cap; s++) {
        if (0 != l->set[s]) {
            t[n++] = l->set[s];
        }
    }
    for (s = 0; s < n; s++) {
        devmem_ledger_release(l, t[s], NULL);
    }
    free(t);
}

struct xfer {
    const char *name;
    size_t total;
    size_t pool_bytes;
    int hold_until_full; /* keep tokens until the pool is full (backpressure) */
    int device_pool;     /* pool without a host mapping */
    struct devmem_emul_config cfg;
    /* results */
    size_t linear_pieces, dmabuf_pieces, subpage_pieces, backwards, pool_full, plain_recvs;
    size_t partial_sends;
};

struct release_ctx {
    size_t bytes, calls;
    uint64_t next_cookie;
    int order_ok;
};

static void on_release(void *ctx, uint64_t cookie, size_t bytes)
{
    struct release_ctx *rc = ctx;

    if (cookie != rc->next_cookie) {
        rc->order_ok = 0;
    }
    rc->next_cookie++;
    rc->bytes += bytes;
    rc->calls++;
}

static void run_xfer(struct xfer *x)
{
    struct devmem_kernel *k = NULL;
    struct devmem_region txr, pool, hidden;
    struct devmem_bind_req req;
    struct devmem_rx_batch b;
    struct devmem_ledger l;
    struct devmem_tx_tracker t;
    struct devmem_err err;
    struct release_ctx rel = {0, 0, 0, 1};
    struct devmem_emul_stats es;
    unsigned char *out = NULL, *ref = NULL;
    size_t sent = 0, got = 0, i, total_pages = 0, free_pages = 0;
    uint32_t tx_id = 0, rx_id = 0;
    uint64_t cookie = 0, last_off = 0;
    int snd = -1, rcv = -1, rc;
    size_t moved = 0;       /* sent + received + completions: what counts as progress */
    double stalled_since = now_s();
    uint16_t port;

    printf("-- %s: %zu bytes, pool %zu bytes%s%s\n", x->name, x->total, x->pool_bytes,
           x->hold_until_full ? ", tokens held until the pool is full" : "",
           x->device_pool ? ", device pool (no host mapping)" : "");
    memset(&hidden, 0, sizeof(hidden));
    rc = devmem_kernel_open(&k, DEVMEM_KERNEL_EMULATED, &x->cfg, &err);
    CHECK(0 == rc && 0 == strcmp(k->ops->name, "emulated"), "%s: emulated kernel opened",
          x->name);
    if (0 != rc) {
        return;
    }
    rc = devmem_region_alloc(&txr, &devmem_provider_host, x->total, 0, &err);
    rc |= devmem_region_alloc(&pool, &devmem_provider_host, x->pool_bytes, 0, &err);
    CHECK(0 == rc && -1 == txr.dmabuf_fd, "%s: host regions (memfd, no dmabuf fd)", x->name);
    ref = malloc(x->total);
    out = calloc(1, x->total);
    for (i = 0; i < x->total; i++) {
        ref[i] = pattern(i);
    }
    rc = 0 != rc ? rc : txr.provider->copy_in(&txr, 0, ref, x->total, &err);
    if (x->device_pool) {
        /* hide the mapping: the emulation must use the provider's copies */
        fakedev = devmem_provider_host;
        fakedev.name = "fakedev";
        fakedev.copy_in = dev_copy_in;
        fakedev.copy_out = dev_copy_out;
        hidden = pool;
        pool.map = NULL;
        pool.provider = &fakedev;
    }
    memset(&req, 0, sizeof(req));
    req.region = &txr;
    rc |= k->ops->bind_tx(k, &req, &tx_id, &err);
    req.region = &pool;
    rc |= k->ops->bind_rx(k, &req, &rx_id, &err);
    CHECK(0 == rc && tx_id >= 1 && rx_id >= 1 && tx_id != rx_id,
          "%s: bind-tx id %u, bind-rx id %u", x->name, tx_id, rx_id);
    rc = tcp_pair(&snd, &rcv, &port, TCP_PAIR_ZEROCOPY | TCP_PAIR_NONBLOCK);
    CHECK(0 == rc, "%s: loopback TCP pair, receiver port %u", x->name, port);
    {
        int sb = 32768; /* a small send buffer, so that sends come back short */

        setsockopt(snd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof(sb));
    }
    rc = k->ops->steer(k, port, rx_id, &err);
    CHECK(0 == rc, "%s: port %u steered to binding %u", x->name, port, rx_id);
    devmem_kernel_ledger_init(k, rcv, &l, &err);
    devmem_rx_batch_init(&b, 256 * 1024, 256, &err);
    b.ledger = &l;
    devmem_tx_tracker_init(&t, &err);

    /* gives up only when nothing has moved for STALL_S: how many turns a transfer takes
     * depends on the kernel's pacing of a small send buffer, not on correctness */
    while (got < x->total || devmem_tx_inflight(&t) > 0) {
        struct devmem_tx_completion c;
        ssize_t n;

        if (sent + got + (size_t) rel.next_cookie != moved) {
            moved = sent + got + (size_t) rel.next_cookie;
            stalled_since = now_s();
        } else if (now_s() - stalled_since > STALL_S) {
            CHECK(0, "%s: nothing moved for %d s", x->name, STALL_S);
            break;
        }
        if (sent < x->total) {
            struct devmem_tx_iov iov[2];
            size_t want = 1 + (size_t) (rand() % 200000), n1;

            if (want > x->total - sent) {
                want = x->total - sent;
            }
            /* two iovs to exercise the vector path */
            n1 = want / 2 ? want / 2 : want;
            iov[0].offset = sent;
            iov[0].len = n1;
            iov[1].offset = sent + n1;
            iov[1].len = want - n1;
            n = k->ops->send(k, snd, tx_id, iov, want - n1 ? 2 : 1, 0, &err);
            if (n > 0) {
                devmem_tx_track(&t, (size_t) n, want, cookie++, NULL);
                sent += (size_t) n; /* resume from the returned count */
            } else if (-EAGAIN != n) {
                CHECK(0, "%s: send failed: %s", x->name, err.msg);
                break;
            }
        }
        while (0 == k->ops->read_completion(k, snd, &c, &err)) {
            if (0 != devmem_tx_complete(&t, &c, on_release, &rel, &err)) {
                CHECK(0, "%s: completion: %s", x->name, err.msg);
            }
        }
        n = k->ops->recv(k, rcv, &b, 0, &err);
        if (-ENOBUFS == n) {
            x->pool_full++;
            release_all(&l);
            rc = devmem_ledger_flush(&l, &err);
            if (0 != rc) {
                CHECK(0, "%s: flush: %s", x->name, err.msg);
                break;
            }
            continue;
        }
        if (n < 0) {
            if (-EAGAIN != n) {
                CHECK(0, "%s: recv failed: %s", x->name, err.msg);
                break;
            }
            continue;
        }
        if (0 == n) {
            CHECK(0, "%s: unexpected end of stream", x->name);
            break;
        }
        if (1 == b.nfrags && DEVMEM_FRAG_LINEAR == b.frags[0].kind && b.frags[0].len == n) {
            x->plain_recvs++;
        }
        for (i = 0; i < b.nfrags; i++) {
            const struct devmem_frag *f = &b.frags[i];

            if (got + f->len > x->total) {
                CHECK(0, "%s: more bytes than sent", x->name);
                break;
            }
            if (DEVMEM_FRAG_LINEAR == f->kind) {
                memcpy(out + got, (unsigned char *) b.linear + f->offset, f->len);
                x->linear_pieces++;
            } else {
                if (f->dmabuf_id != rx_id) {
                    CHECK(0, "%s: frag from binding %u", x->name, f->dmabuf_id);
                }
                devmem_region_copy_out(&pool, f->offset, out + got, f->len, NULL);
                x->dmabuf_pieces++;
                x->subpage_pieces += f->len < devmem_page_size();
                x->backwards += f->offset < last_off;
                last_off = f->offset;
                if (!x->hold_until_full) {
                    devmem_ledger_release(&l, f->token, NULL);
                }
            }
            got += f->len;
        }
        if (l.npending >= 64) {
            if (0 != devmem_ledger_flush(&l, &err)) {
                CHECK(0, "%s: flush: %s", x->name, err.msg);
            }
        }
    }
    if (x->hold_until_full) {
        release_all(&l); /* the receiver is done with what it still holds */
    }
    rc = devmem_ledger_flush(&l, &err);
    CHECK(got == x->total && sent == x->total, "%s: sent %zu, received %zu of %zu bytes",
          x->name, sent, got, x->total);
    CHECK(0 == memcmp(out, ref, x->total), "%s: every byte matches the pattern", x->name);
    CHECK(x->dmabuf_pieces > 0 && (0 == x->cfg.linear_pct || x->linear_pieces > 0),
          "%s: %zu dmabuf pieces, %zu linear pieces, %zu plain receives", x->name,
          x->dmabuf_pieces, x->linear_pieces, x->plain_recvs);
    CHECK(x->subpage_pieces > 0 && x->backwards > 0,
          "%s: scattered placement (%zu sub-page pieces, %zu offsets going backwards)",
          x->name, x->subpage_pieces, x->backwards);
    CHECK(0 == rc && l.stats.tokens_received == l.stats.tokens_returned &&
              0 == l.outstanding && 0 == l.stats.tokens_lost,
          "%s: tokens balanced (received %llu, returned %llu, %llu DONTNEED calls)", x->name,
          (unsigned long long) l.stats.tokens_received,
          (unsigned long long) l.stats.tokens_returned,
          (unsigned long long) l.stats.dontneed_calls);
    CHECK(l.stats.bytes_dmabuf + l.stats.bytes_linear == x->total,
          "%s: ledger bytes dmabuf %llu + linear %llu == total", x->name,
          (unsigned long long) l.stats.bytes_dmabuf, (unsigned long long) l.stats.bytes_linear);
    devmem_emul_get_stats(k->emul, &es);
    rc = pool_pages(k->emul, rx_id, &total_pages, &free_pages);
    CHECK(0 == rc && total_pages > 0 && total_pages == free_pages && es.frags_landed == es.tokens_freed &&
              es.frags_landed == l.stats.tokens_received && 0 == es.tokens_unknown,
          "%s: pool whole again (%zu/%zu pages free), emul landed %llu == freed %llu", x->name,
          free_pages, total_pages, (unsigned long long) es.frags_landed,
          (unsigned long long) es.tokens_freed);
    CHECK(rel.order_ok && rel.bytes == x->total && t.stats.sends == t.stats.sends_completed &&
              0 == devmem_tx_inflight(&t) && es.tx_sends == t.stats.sends,
          "%s: tx %llu sends (%llu partial) completed in order via %llu notifications",
          x->name, (unsigned long long) t.stats.sends, (unsigned long long) t.stats.partial_sends,
          (unsigned long long) t.stats.notifications);
    if (x->hold_until_full) {
        CHECK(x->pool_full > 0 && es.recv_pool_full == x->pool_full,
              "%s: pool ran full %zu times, nothing lost", x->name, x->pool_full);
        CHECK(es.recv_pool_limited > 0, "%s: %llu receives were cut short by the pool",
              x->name, (unsigned long long) es.recv_pool_limited);
    }
    x->partial_sends = (size_t) t.stats.partial_sends;
    devmem_ledger_close(&l, NULL);
    k->ops->sock_close(k, rcv);
    k->ops->sock_close(k, snd);
    close(snd);
    close(rcv);
    devmem_rx_batch_fini(&b);
    devmem_tx_tracker_fini(&t);
    devmem_kernel_close(k);
    if (x->device_pool) {
        pool = hidden;
    }
    devmem_region_release(&pool);
    devmem_region_release(&txr);
    free(out);
    free(ref);
}

/* The kernel's error contract, on one steered connection. */
static void contract(void)
{
    struct devmem_emul_config cfg;
    struct devmem_emul *e = NULL;
    struct devmem_region pool, txr;
    struct devmem_emul_stats es;
    struct devmem_dmabuf_token tk[DEVMEM_MAX_DONTNEED_TOKENS + 1];
    static unsigned char buf[65536], chk[65536];
    static union {
        char b[DEVMEM_RX_CTRL_SIZE(4096)];
        struct cmsghdr a;
    } ctrl;
    static struct devmem_frag frags[4200];
    struct msghdr m;
    struct iovec iov;
    size_t nf, i, total, nfree;
    uint32_t rx_id, tx_id, rx2;
    ssize_t n;
    int snd, rcv, rc, ux[2];
    uint16_t port;

    printf("-- contract\n");
    devmem_emul_config_default(&cfg);
    cfg.max_frag = 64; /* many small frags, so that 1024+ tokens are easy to hold */
    cfg.readable_pct = 0;
    cfg.linear_pct = 0;
    devmem_emul_open(&e, &cfg, NULL);
    devmem_region_alloc(&pool, &devmem_provider_host, 4096 * 4096, 0, NULL);
    devmem_region_alloc(&txr, &devmem_provider_host, 1 << 20, 0, NULL);
    devmem_emul_bind_rx(e, &pool, &rx_id, NULL);
    devmem_emul_bind_tx(e, &txr, &tx_id, NULL);
    tcp_pair(&snd, &rcv, &port, TCP_PAIR_NONBLOCK);
    devmem_emul_steer(e, port, rx_id, NULL);
    for (i = 0; i < sizeof(buf); i++) {
        buf[i] = pattern(i + 5);
    }
    n = write(snd, buf, sizeof(buf));
    CHECK(n == (ssize_t) sizeof(buf), "contract: 64 KiB of plain TCP sent by the peer");
    usleep(20000);

    /* no flag -> EFAULT, and nothing consumed */
    memset(&m, 0, sizeof(m));
    iov.iov_base = chk;
    iov.iov_len = sizeof(chk);
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    n = devmem_emul_recvmsg(e, rcv, &m, MSG_DONTWAIT);
    CHECK(-EFAULT == n, "contract: recvmsg without MSG_SOCK_DEVMEM on devmem data: -EFAULT");

    /* a control buffer too small for one cmsg -> ETOOSMALL, nothing consumed */
    m.msg_control = ctrl.b;
    m.msg_controllen = CMSG_LEN(24) - 1;
    n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
    CHECK(-ETOOSMALL == n, "contract: control buffer < CMSG_LEN(24): -ETOOSMALL");

    /* room for exactly 3 cmsgs -> a short read of 3 frags */
    m.msg_controllen = 2 * CMSG_SPACE(24) + CMSG_LEN(24);
    n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
    rc = devmem_rx_parse(&m, n > 0 ? (size_t) n : 0, sizeof(chk), frags, 4200, &nf, NULL);
    CHECK(n > 0 && 0 == rc && 3 == nf && m.msg_controllen == 2 * CMSG_SPACE(24) + CMSG_LEN(24),
          "contract: control room for 3 cmsgs gives a short read of 3 frags (%zd bytes)", n);
    total = (size_t) n;
    /* read the rest in one go (plenty of control room): >1024 frags of <= 256 bytes */
    {
        size_t off = 0;

        for (i = 0; i < nf; i++) {
            memcpy(chk + off, (char *) pool.map + frags[i].offset, frags[i].len);
            off += frags[i].len;
        }
        while (total < sizeof(buf)) {
            size_t nf2;

            m.msg_control = ctrl.b;
            m.msg_controllen = sizeof(ctrl.b);
            iov.iov_base = chk + total; /* linear bytes would land here; there are none */
            iov.iov_len = sizeof(chk) - total;
            n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
            if (n <= 0) {
                break;
            }
            rc = devmem_rx_parse(&m, (size_t) n, iov.iov_len, frags + nf, 4200 - nf, &nf2,
                                 NULL);
            if (0 != rc) {
                break;
            }
            for (i = nf; i < nf + nf2; i++) {
                memcpy(chk + off, (char *) pool.map + frags[i].offset, frags[i].len);
                off += frags[i].len;
            }
            nf += nf2;
            total += (size_t) n;
        }
        CHECK(total == sizeof(buf) && 0 == memcmp(chk, buf, sizeof(buf)) && nf > 1024,
              "contract: all 64 KiB received in %zu frags, bytes match", nf);
    }
    CHECK(sock_tokens(e, rcv) == nf, "contract: socket holds %zu tokens", nf);

    /* DONTNEED limits */
    rc = devmem_emul_dontneed(e, rcv, tk, 7);
    CHECK(-EINVAL == rc, "contract: optlen not a multiple of 8: -EINVAL");
    for (i = 0; i <= DEVMEM_MAX_DONTNEED_TOKENS; i++) {
        tk[i].token_start = (uint32_t) (5000 + i);
        tk[i].token_count = 1;
    }
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk));
    CHECK(-EINVAL == rc, "contract: 129 ranges: -EINVAL");
    socketpair(AF_UNIX, SOCK_STREAM, 0, ux);
    rc = devmem_emul_dontneed(e, ux[0], tk, sizeof(tk[0]));
    CHECK(-EBADF == rc, "contract: DONTNEED on a unix socket: -EBADF");
    close(ux[0]);
    close(ux[1]);
    tk[0].token_start = 1000000;
    tk[0].token_count = 3;
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk[0]));
    CHECK(0 == rc, "contract: unknown tokens are skipped: 0 freed");
    tk[0].token_start = 1;
    tk[0].token_count = 5000;
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk[0]));
    CHECK(DEVMEM_MAX_DONTNEED_FRAGS == rc, "contract: one range of 5000: only %d (1024) freed",
          rc);
    /* the kernel counts returned tokens towards the cap too: 1..1024 are gone, so the same
     * range looks at 1024 unknown tokens and frees none */
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk[0]));
    CHECK(0 == rc, "contract: the same range again frees 0 (the cap counts unknown tokens)");
    tk[0].token_start = DEVMEM_MAX_DONTNEED_FRAGS + 1;
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk[0]));
    CHECK((int) (nf - DEVMEM_MAX_DONTNEED_FRAGS) == rc, "contract: a range from 1025 frees "
          "the remaining %d", rc);
    tk[0].token_start = 1;
    rc = devmem_emul_dontneed(e, rcv, tk, sizeof(tk[0]));
    CHECK(0 == rc, "contract: returning them twice frees nothing");
    CHECK(0 == pool_pages(e, rx_id, &total, &nfree) && total > 0 && total == nfree
              && 0 == sock_tokens(e, rcv), "contract: pool whole");

    /* socket close gives the tokens back; unbind keeps the pool until then */
    n = write(snd, buf, 8192);
    usleep(20000);
    m.msg_control = ctrl.b;
    m.msg_controllen = sizeof(ctrl.b);
    iov.iov_base = chk;
    iov.iov_len = sizeof(chk);
    n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
    CHECK(8192 == n && sock_tokens(e, rcv) > 0, "contract: 8 KiB held in %zu tokens",
          sock_tokens(e, rcv));
    CHECK(1 == devmem_emul_bound(e, rx_id), "contract: binding %u is bound", rx_id);
    /* 3000 bytes queued when the binding goes: 6.18 built them of its net_iovs */
    n = write(snd, buf + 8192, 3000);
    usleep(20000);
    CHECK(3000 == devmem_emul_queued(e, rx_id), "contract: 3000 bytes queued for binding %u "
          "(%zu)", rx_id, devmem_emul_queued(e, rx_id));
    rc = devmem_emul_unbind(e, rx_id, NULL);
    CHECK(0 == rc && 0 == pool_pages(e, rx_id, &total, &nfree) && nfree < total,
          "contract: unbound pool lives on while tokens are out");
    CHECK(0 == devmem_emul_bound(e, rx_id) && 0 == devmem_emul_bound(e, 999999)
              && 0 == devmem_emul_queued(e, rx_id),
          "contract: an undone binding, and one that never was, are not bound; none queued");
    n = write(snd, buf, 1000);
    usleep(20000);
    {
        size_t got = 0, nf2 = 0, old_id = 0, calls = 0;

        /* a buffer for 4000: the 3000 come, never mixed with the 1000 after them */
        while (got < 3000 && calls++ < 100) {
            m.msg_control = ctrl.b;
            m.msg_controllen = sizeof(ctrl.b);
            iov.iov_base = chk;
            iov.iov_len = 4000;
            n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
            if (n <= 0 || 0 != devmem_rx_parse(&m, (size_t) n, iov.iov_len, frags, 4200, &nf2,
                                                NULL)) {
                break;
            }
            for (i = 0; i < nf2; i++) {
                old_id += DEVMEM_FRAG_DMABUF == frags[i].kind && frags[i].dmabuf_id == rx_id;
                memcpy(chk + 8192 + got, (char *) pool.map + frags[i].offset, frags[i].len);
                got += frags[i].len;
            }
        }
        CHECK(3000 == got && 0 == memcmp(chk + 8192, buf + 8192, 3000) && old_id > 0,
              "contract: the 3000 bytes queued at the unbind come as dmabuf frags of binding "
              "%u (%zu of them), bytes match, and stop there (%zu bytes)", rx_id, old_id, got);
    }
    m.msg_control = ctrl.b;
    m.msg_controllen = sizeof(ctrl.b);
    iov.iov_base = chk;
    iov.iov_len = sizeof(chk);
    n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
    CHECK(1000 == n && 0 == m.msg_controllen && 0 == memcmp(chk, buf, 1000),
          "contract: the bytes that came after the unbind are plain data, no cmsg");
    devmem_emul_get_stats(e, &es);
    CHECK(3000 == es.linger_bytes, "contract: the emulation counts %llu bytes read from the "
          "unbound binding", (unsigned long long) es.linger_bytes);
    devmem_emul_sock_close(e, rcv);
    CHECK(-ENOENT == pool_pages(e, rx_id, &total, &nfree),
          "contract: socket close returned the tokens and the unbound pool went away");

    /* TX checks */
    {
        union {
            char b[DEVMEM_TX_CBUF_SIZE];
            struct cmsghdr a;
        } cb;
        struct devmem_tx_iov ti = {.offset = 0, .len = 100};
        struct iovec tiov[1];
        struct msghdr tm;
        int zs, zr, one = 1;

        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EINVAL == n, "tx: socket without SO_ZEROCOPY: -EINVAL");
        setsockopt(snd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one));
        n = devmem_emul_sendmsg(e, snd, &tm, 0);
        CHECK(-EINVAL == n, "tx: no MSG_ZEROCOPY: -EINVAL");
        rc = devmem_emul_bind_rx(e, &pool, &rx2, NULL);
        devmem_tx_build_msg(&tm, tiov, cb.b, rx2, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EINVAL == n, "tx: an RX binding id: -EINVAL");
        devmem_tx_build_msg(&tm, tiov, cb.b, 4242, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EINVAL == n, "tx: unknown binding id: -EINVAL");
        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        ((struct cmsghdr *) cb.b)->cmsg_len = CMSG_LEN(8);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EINVAL == n, "tx: cmsg_len != CMSG_LEN(4): -EINVAL");
        ti.offset = txr.size;
        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EFAULT == n, "tx: offset at the dmabuf's end: -EFAULT");
        ti.offset = txr.size - 10;
        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(10 == n, "tx: a range crossing the end stops short there (10 bytes)");
        ti.offset = 0;
        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        zs = (100 == devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY));
        zr = (100 == devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY));
        {
            struct devmem_tx_completion c;
            union {
                char b[CMSG_SPACE(64)];
                struct cmsghdr a;
            } eb;

            memset(&tm, 0, sizeof(tm));
            tm.msg_control = eb.b;
            tm.msg_controllen = sizeof(eb.b);
            n = devmem_emul_recvmsg(e, snd, &tm, MSG_ERRQUEUE);
            rc = devmem_tx_parse_completion(&tm, &c, NULL);
            CHECK(zs && zr && 0 == n && (tm.msg_flags & MSG_ERRQUEUE) && 0 == rc && 0 == c.lo &&
                      2 == c.hi && !c.copied,
                  "tx: three sends coalesce into one notification [0, 2] (got [%u, %u])", c.lo,
                  c.hi);
            memset(&tm, 0, sizeof(tm));
            tm.msg_control = eb.b;
            tm.msg_controllen = sizeof(eb.b);
            n = devmem_emul_recvmsg(e, snd, &tm, MSG_ERRQUEUE | MSG_DONTWAIT);
            CHECK(-EAGAIN == n, "tx: empty error queue: -EAGAIN");
        }
        /* the netlink socket that made the TX binding closes: sends from it are refused */
        CHECK(1 == devmem_emul_unbind_tx_all(e) && 0 == devmem_emul_bound(e, tx_id)
                  && 1 == devmem_emul_bound(e, rx2),
              "tx: the TX bindings undone together (1), RX bindings left alone");
        devmem_tx_build_msg(&tm, tiov, cb.b, tx_id, &ti, 1, NULL);
        n = devmem_emul_sendmsg(e, snd, &tm, MSG_ZEROCOPY);
        CHECK(-EINVAL == n, "tx: a send from an undone TX binding: -EINVAL, as 6.18");
    }
    /* end of stream on a steered flow: 0 bytes and an empty control area, as the kernel's
     * recvmsg writes back; a caller that kept its control length must not reparse old cmsgs */
    {
        int s2, r2;
        uint16_t p2;

        tcp_pair(&s2, &r2, &p2, TCP_PAIR_NONBLOCK);
        devmem_emul_steer(e, p2, rx2, NULL); /* rx_id was unbound above */
        n = write(s2, buf, 4096);
        usleep(20000);
        memset(&m, 0, sizeof(m));
        iov.iov_base = chk;
        iov.iov_len = sizeof(chk);
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl.b;
        m.msg_controllen = sizeof(ctrl.b);
        n = devmem_emul_recvmsg(e, r2, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
        CHECK(4096 == n && m.msg_controllen > 0, "eof: 4 KiB landed first (%zd bytes, controllen %zu)", n, (size_t) m.msg_controllen);
        close(s2);
        usleep(20000);
        m.msg_controllen = sizeof(ctrl.b); /* as a caller reusing its msghdr would */
        n = devmem_emul_recvmsg(e, r2, &m, MSG_SOCK_DEVMEM | MSG_DONTWAIT);
        CHECK(0 == n && 0 == m.msg_controllen,
              "eof: end of stream gives 0 bytes and an empty control area (controllen %zu)",
              (size_t) m.msg_controllen);
        devmem_emul_steer(e, p2, 0, NULL);
        devmem_emul_sock_close(e, r2);
        close(r2);
    }

    devmem_emul_get_stats(e, &es);
    CHECK(1 == es.recv_efault && 1 == es.recv_toosmall && es.tokens_unknown >= 3,
          "contract: emul counted efault %llu, toosmall %llu, unknown tokens %llu",
          (unsigned long long) es.recv_efault, (unsigned long long) es.recv_toosmall,
          (unsigned long long) es.tokens_unknown);
    close(snd);
    close(rcv);
    devmem_emul_close(e);
    devmem_region_release(&pool);
    devmem_region_release(&txr);
}

int main(void)
{
    struct xfer x;
    enum devmem_kernel_kind kind;

    srand(7);
    devmem_kernel_use_emulated(&devmem_emulated); /* linked in, not looked for */
    CHECK(-EINVAL == devmem_kernel_kind_parse("auto", &kind, NULL) &&
              0 == devmem_kernel_kind_parse("emulated", &kind, NULL) &&
              DEVMEM_KERNEL_EMULATED == kind,
          "kernel kind must be named: \"auto\" refused, \"emulated\" accepted");

    memset(&x, 0, sizeof(x));
    x.name = "stream";
    x.total = 8u << 20;
    x.pool_bytes = 4u << 20;
    devmem_emul_config_default(&x.cfg);
    x.cfg.seed = 42;
    x.cfg.linear_pct = 20;
    x.cfg.readable_pct = 5;
    run_xfer(&x);
    CHECK(x.plain_recvs > 0, "stream: some receives were plain data (%zu)", x.plain_recvs);
    CHECK(x.partial_sends > 0, "stream: %zu sends came back short and were resumed",
          x.partial_sends);

    memset(&x, 0, sizeof(x));
    x.name = "backpressure";
    x.total = 1u << 20;
    x.pool_bytes = 4 * 4096;
    x.hold_until_full = 1;
    devmem_emul_config_default(&x.cfg);
    x.cfg.seed = 9;
    run_xfer(&x);

    memset(&x, 0, sizeof(x));
    x.name = "device-pool";
    x.total = 2u << 20;
    x.pool_bytes = 1u << 20;
    x.device_pool = 1;
    devmem_emul_config_default(&x.cfg);
    x.cfg.seed = 3;
    run_xfer(&x);

    contract();

    return check_finish();
}
