/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * call_costs: what the receive path's calls cost on this machine, for the cost model
 * (bench/costmodel.sh, doc/cost-model.md). CPU time of the calling thread
 * (CLOCK_THREAD_CPUTIME_ID), so that the sender's work on the other core is not counted:
 *
 *   recv_call_ns, recv_byte_ns   a plain recvmsg on loopback TCP: fixed cost per call and
 *                                cost per byte copied (two sizes, a line through them)
 *   dontneed_call_ns,            SO_DEVMEM_DONTNEED on a TCP socket of the real kernel, with
 *   dontneed_token_ns            1 token and with 1024 (its per-call cap): the tokens name no
 *                                frag here (no devmem NIC), so this is the kernel's lookup
 *                                path, a lower bound on returning real tokens
 *   emul_frag_ns                 the emulated devmem recvmsg per fragment (the emulation's
 *                                own cost: what CI's device path pays, not the kernel's)
 *   gather_byte_ns               copying 4 KiB pieces scattered over a 64 MiB pool into one
 *                                buffer: the host gather of a host-memory pool
 *   zc_send_ns, zc_notif_ns      a 4 KiB sendmsg(MSG_ZEROCOPY) on loopback TCP, and reading
 *                                one zerocopy notification from the error queue: the
 *                                call and completion costs devmem TX shares (loopback copies
 *                                the 4 KiB; a devmem send would not)
 *
 * One line, key=value, for costmodel.sh; -r RUNS (default 5) takes the median of each.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "emul.h"
#include "rx.h"
#include "tx.h"
#include "uapi.h"

static double cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A connected loopback pair on one listening socket (kept in *lsd for more flows). */
static int pair(int *snd, int *rcv, int *lsd)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);

    *lsd = socket(AF_INET, SOCK_STREAM, 0);
    if (*lsd < 0 || 0 != bind(*lsd, (struct sockaddr *) &a, sizeof(a)) || 0 != listen(*lsd, 4)
        || 0 != getsockname(*lsd, (struct sockaddr *) &a, &len)) {
        return -1;
    }
    *snd = socket(AF_INET, SOCK_STREAM, 0);
    if (*snd < 0 || 0 != connect(*snd, (struct sockaddr *) &a, sizeof(a))
        || (*rcv = accept(*lsd, NULL, NULL)) < 0) {
        return -1;
    }
    return 0;
}

struct feeder {
    int sd;
    volatile int stop;
};

/* Keep the receiver's socket full until told to stop. */
static void *feed(void *arg)
{
    struct feeder *f = arg;
    static char buf[1 << 20];

    while (!f->stop) {
        if (write(f->sd, buf, sizeof(buf)) < 0) {
            break;
        }
    }
    return NULL;
}

/* CPU ns per recv of `size` bytes (full reads only), over `bytes` in all. */
static double recv_cost(int rcv, size_t size, size_t bytes)
{
    static char buf[1 << 20];
    size_t got = 0, calls = 0;
    double t0 = cpu_now();

    while (got < bytes) {
        ssize_t n = recv(rcv, buf, size, MSG_WAITALL);

        if (n <= 0) {
            return -1;
        }
        got += (size_t) n;
        calls++;
    }
    return (cpu_now() - t0) * 1e9 / (double) calls;
}

/* CPU ns per SO_DEVMEM_DONTNEED call naming `tokens` tokens. */
static double dontneed_cost(int sd, uint32_t tokens, int calls, int *ret)
{
    struct devmem_dmabuf_token t = {1, tokens};
    double t0 = cpu_now();

    for (int i = 0; i < calls; i++) {
        *ret = setsockopt(sd, SOL_SOCKET, SO_DEVMEM_DONTNEED, &t, sizeof(t));
        if (*ret < 0) {
            *ret = -errno;
            return -1;
        }
    }
    return (cpu_now() - t0) * 1e9 / calls;
}

/* CPU ns per fragment of the emulated devmem recvmsg (tokens returned outside the timing). */
static double emul_cost(size_t bytes)
{
    struct devmem_emul_config cfg;
    struct devmem_emul *e = NULL;
    struct devmem_region pool;
    static struct devmem_frag frags[2048];
    static char lin[1 << 20];
    union {
        char b[CMSG_SPACE(24) * 1100];
        struct cmsghdr align;
    } ctrl;
    struct feeder f = {0};
    pthread_t th;
    int snd, rcv, lsd;
    uint32_t id;
    size_t got = 0, nfrags = 0;
    double spent = 0;

    devmem_emul_config_default(&cfg);
    if (0 != devmem_emul_open(&e, &cfg, NULL)
        || 0 != devmem_region_alloc(&pool, &devmem_provider_host, 64u << 20, 0, NULL)
        || 0 != devmem_emul_bind_rx(e, &pool, &id, NULL) || 0 != pair(&snd, &rcv, &lsd)) {
        return -1;
    }
    {
        struct sockaddr_in a;
        socklen_t len = sizeof(a);

        getsockname(rcv, (struct sockaddr *) &a, &len);
        devmem_emul_steer(e, ntohs(a.sin_port), id, NULL);
    }
    f.sd = snd;
    pthread_create(&th, NULL, feed, &f);
    while (got < bytes) {
        struct msghdr m = {0};
        struct iovec iov = {lin, sizeof(lin)};
        size_t nf = 0;
        ssize_t n;
        double t0 = cpu_now();

        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = ctrl.b;
        m.msg_controllen = sizeof(ctrl.b);
        n = devmem_emul_recvmsg(e, rcv, &m, MSG_SOCK_DEVMEM);
        if (n <= 0) {
            break;
        }
        if (0 != m.msg_controllen) {
            (void) devmem_rx_parse(&m, (size_t) n, sizeof(lin), frags, 2048, &nf, NULL);
        }
        spent += cpu_now() - t0;
        for (size_t i = 0; i < nf; i++) {
            if (DEVMEM_FRAG_DMABUF == frags[i].kind) {
                struct devmem_dmabuf_token t = {frags[i].token, 1};

                (void) devmem_emul_dontneed(e, rcv, &t, sizeof(t));
            }
        }
        got += (size_t) n;
        nfrags += nf;
    }
    f.stop = 1;
    shutdown(rcv, SHUT_RDWR);
    pthread_join(th, NULL);
    devmem_emul_sock_close(e, rcv);
    close(snd);
    close(rcv);
    close(lsd);
    devmem_emul_close(e);
    devmem_region_release(&pool);
    return nfrags ? spent * 1e9 / (double) nfrags : -1;
}

/* CPU ns per byte gathering 4 KiB pieces from random places of a 64 MiB pool. */
static double gather_cost(void)
{
    const size_t pool_bytes = 64u << 20, piece = 4096, total = 16u << 20;
    char *pool = malloc(pool_bytes), *dst = malloc(total);
    double t0;

    if (NULL == pool || NULL == dst) {
        return -1;
    }
    memset(pool, 7, pool_bytes);
    memset(dst, 0, total);
    t0 = cpu_now();
    for (size_t off = 0, r = 12345; off < total; off += piece) {
        r = r * 6364136223846793005ull + 1442695040888963407ull;
        memcpy(dst + off, pool + (r >> 20) % (pool_bytes / piece) * piece, piece);
    }
    t0 = cpu_now() - t0;
    free(pool);
    free(dst);
    return t0 * 1e9 / (double) total;
}

/* CPU ns per 4 KiB MSG_ZEROCOPY send, and per notification read (*notif). */
static double zc_cost(double *notif)
{
    static char buf[4096], sink[1 << 20];
    const int sends = 20000;
    struct devmem_tx_completion c;
    int snd, rcv, lsd, reads = 0;
    double t0, spent = 0;

    *notif = -1;
    if (0 != pair(&snd, &rcv, &lsd) || 0 != devmem_tx_socket_setup(snd, NULL, NULL)) {
        return -1;
    }
    t0 = cpu_now();
    for (int i = 0; i < sends; i++) {
        if (send(snd, buf, sizeof(buf), MSG_ZEROCOPY) < 0) {
            return -1;
        }
        if (i % 64 == 63) { /* keep the receiver's buffer from filling (outside the timing) */
            spent += cpu_now() - t0;
            while (recv(rcv, sink, sizeof(sink), MSG_DONTWAIT) > 0) {
            }
            t0 = cpu_now();
        }
    }
    spent += cpu_now() - t0;
    t0 = cpu_now();
    while (0 == devmem_tx_read_completion(snd, &c, NULL)) {
        reads++;
    }
    *notif = reads > 0 ? (cpu_now() - t0) * 1e9 / reads : -1;
    close(snd);
    close(rcv);
    close(lsd);
    return spent * 1e9 / sends;
}

int main(int argc, char **argv)
{
    int runs = 5, snd, rcv, lsd, ret = 0;
    double small[32], large[32], d1[32], dmax[32], fr[32], ga[32], zs[32], zn[32];
    struct feeder f = {0};
    pthread_t th;
    const size_t a = 4096, b = 1 << 20;

    if (3 == argc && 0 == strcmp(argv[1], "-r")) {
        runs = atoi(argv[2]);
    }
    if (runs < 1 || runs > 32) {
        fprintf(stderr, "usage: call_costs [-r RUNS (1-32)]\n");
        return 2;
    }
    if (0 != pair(&snd, &rcv, &lsd)) {
        perror("call_costs: loopback pair");
        return 1;
    }
    f.sd = snd;
    pthread_create(&th, NULL, feed, &f);
    for (int r = 0; r < runs; r++) {
        small[r] = recv_cost(rcv, a, 64u << 20);
        large[r] = recv_cost(rcv, b, 256u << 20);
    }
    f.stop = 1;
    shutdown(rcv, SHUT_RDWR);
    pthread_join(th, NULL);
    close(snd);
    close(rcv);
    close(lsd);
    if (0 != pair(&snd, &rcv, &lsd)) {
        perror("call_costs: loopback pair");
        return 1;
    }
    for (int r = 0; r < runs; r++) {
        d1[r] = dontneed_cost(rcv, 1, 20000, &ret);
        dmax[r] = dontneed_cost(rcv, 1024, 2000, &ret);
        fr[r] = emul_cost(64u << 20);
        ga[r] = gather_cost();
        zs[r] = zc_cost(&zn[r]);
    }
    {
        double s = bench_median(small, runs), l = bench_median(large, runs);
        double per_byte = (l - s) / (double) (b - a), per_call = s - per_byte * (double) a;
        double c1 = bench_median(d1, runs), cm = bench_median(dmax, runs);

        printf("costs recv_call_ns=%.0f recv_byte_ns=%.4f dontneed_call_ns=%.0f "
               "dontneed_token_ns=%.2f dontneed_ret=%d emul_frag_ns=%.0f gather_byte_ns=%.4f "
               "zc_send_ns=%.0f zc_notif_ns=%.0f runs=%d\n",
               per_call, per_byte, c1, (cm - c1) / 1023.0, ret, bench_median(fr, runs),
               bench_median(ga, runs), bench_median(zs, runs), bench_median(zn, runs), runs);
    }
    close(snd);
    close(rcv);
    close(lsd);
    return 0;
}
