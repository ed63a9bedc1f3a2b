/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The raw TCP ceiling for bench/run.sh: the same ping-pong (lat) and windowed streaming (bw)
 * patterns as mpi_bench, on one plain TCP connection, with the same size list, iteration counts
 * and result lines, so that every MPI figure can be given as a share of what TCP itself does.
 *
 *   tcp_bench -l [-a ADDR] [-p PORT]            serve one client, then exit
 *   tcp_bench -c ADDR [-p PORT] -t lat|bw [-s SIZES] [-x SCALE] [-T SECS] [-m busy|block] [-n]
 *
 * busy: non-blocking socket, spin on EAGAIN (what an MPI rank does); block: blocking calls,
 * the kernel wakes us. TCP_NODELAY on both ends. The client drives: before each size it sends
 * a small request saying what to run, and the server follows.
 */
#include "bench_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQ_MAGIC 0x54434242u /* "TCBB" */
#define CHUNK_MAX ((size_t) 4 << 20)

struct request {
    uint32_t magic;
    int32_t kind; /* enum bench_kind, or -1: done */
    uint64_t size;
    int32_t window, iters, warmup, busy, validate, pad;
};

static int busy = 1;
static double time_limit = 2.0; /* -T, client side */

static void fail(const char *what)
{
    fprintf(stderr, "tcp_bench: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void set_nonblocking(int sd, int on)
{
    int fl = fcntl(sd, F_GETFL);
    if (fl < 0 || fcntl(sd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0) {
        fail("fcntl");
    }
}

static void send_all(int sd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = send(sd, p, len, MSG_NOSIGNAL);
        if (n > 0) {
            p += n;
            len -= (size_t) n;
        } else if (n < 0 && (EAGAIN == errno || EINTR == errno)) {
            continue; /* busy mode spins; blocking mode only sees EINTR */
        } else {
            fail("send");
        }
    }
}

static void recv_all(int sd, void *buf, size_t len)
{
    char *p = buf;
    while (len > 0) {
        ssize_t n = recv(sd, p, len, 0);
        if (n > 0) {
            p += n;
            len -= (size_t) n;
        } else if (0 == n) {
            errno = ECONNRESET;
            fail("recv: the peer closed the connection");
        } else if (EAGAIN != errno && EINTR != errno) {
            fail("recv");
        }
    }
}

static void check(const char *buf, size_t size, uint64_t idx)
{
    long bad = bench_pat_find_error(buf, size, idx);
    if (bad >= 0) {
        fprintf(stderr, "tcp_bench: data check failed: message %llu of %zu bytes, byte %ld\n",
                (unsigned long long) idx, size, bad);
        exit(1);
    }
}

/* One iteration; `client` says which side we are. */
static void iterate(int sd, const struct request *rq, char *sbuf, char *rbuf, int client,
                    uint64_t idx, int check_data)
{
    size_t size = rq->size;
    uint32_t ack = 0;

    if (BENCH_LAT == rq->kind) {
        if (client) {
            if (check_data) {
                bench_pat_fill(sbuf, size, idx);
            }
            send_all(sd, sbuf, size);
            recv_all(sd, rbuf, size);
            if (check_data) {
                check(rbuf, size, idx + 1);
            }
        } else {
            recv_all(sd, rbuf, size);
            if (check_data) {
                check(rbuf, size, idx);
                bench_pat_fill(sbuf, size, idx + 1);
            }
            send_all(sd, sbuf, size);
        }
        return;
    }
    /* bw: the client streams `window` messages of `size`, one send each; the server reads
     * them (a message at a time when checking, else in chunks) and acknowledges */
    if (client) {
        for (int j = 0; j < rq->window; j++) {
            if (check_data) {
                bench_pat_fill(sbuf, size, idx + (uint64_t) j);
            }
            send_all(sd, sbuf, size);
        }
        recv_all(sd, &ack, sizeof(ack));
    } else {
        size_t left = size * (size_t) rq->window;
        for (int j = 0; check_data && j < rq->window; j++) {
            recv_all(sd, rbuf, size);
            check(rbuf, size, idx + (uint64_t) j);
            left -= size;
        }
        while (left > 0) {
            size_t n = left < CHUNK_MAX ? left : CHUNK_MAX;
            recv_all(sd, rbuf, n);
            left -= n;
        }
        send_all(sd, &ack, sizeof(ack));
    }
}

static void *buffer(size_t len)
{
    void *p = NULL;
    if (0 != posix_memalign(&p, 4096, len > 0 ? len : 1)) {
        errno = ENOMEM;
        fail("buffers");
    }
    memset(p, 0, len);
    return p;
}

static void run(int sd, const struct request *rq, int client)
{
    size_t rlen = BENCH_BW == rq->kind && rq->size < CHUNK_MAX ? CHUNK_MAX : rq->size;
    char *sbuf = buffer(rq->size), *rbuf = buffer(rlen);
    double t0, elapsed;

    int32_t iters;

    set_nonblocking(sd, rq->busy);
    t0 = bench_now();
    for (int i = 0; i < rq->warmup; i++) {
        iterate(sd, rq, sbuf, rbuf, client, (uint64_t) i * 1000003u, rq->validate && 0 == i);
    }
    /* the client fits the timed part into -T and tells the server how many iterations */
    if (client) {
        iters = bench_iters_within(rq->iters, rq->warmup, bench_now() - t0, time_limit);
        send_all(sd, &iters, sizeof(iters));
    } else {
        recv_all(sd, &iters, sizeof(iters));
        if (iters < 0 || iters > rq->iters) {
            fprintf(stderr, "tcp_bench: bad iteration count from the client\n");
            exit(1);
        }
    }
    t0 = bench_now();
    for (int i = 0; i < iters; i++) {
        iterate(sd, rq, sbuf, rbuf, client, 0, 0);
    }
    elapsed = bench_now() - t0;
    if (client) {
        double msgs = BENCH_LAT == rq->kind ? 2.0 * iters : (double) rq->window * iters;
        double usec = elapsed * 1e6 / msgs;
        bench_print_result((enum bench_kind) rq->kind, rq->size, usec,
                           (double) rq->size * msgs / elapsed, msgs / elapsed);
    }
    free(sbuf);
    free(rbuf);
}

static int serve(const char *addr, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
    int one = 1, ls, sd;
    socklen_t len = sizeof(sa);
    struct request rq;

    if (1 != inet_pton(AF_INET, addr, &sa.sin_addr)) {
        fprintf(stderr, "tcp_bench: bad address '%s'\n", addr);
        return 2;
    }
    if ((ls = socket(AF_INET, SOCK_STREAM, 0)) < 0) {
        fail("socket");
    }
    (void) setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(ls, (struct sockaddr *) &sa, sizeof(sa)) < 0 || listen(ls, 1) < 0
        || getsockname(ls, (struct sockaddr *) &sa, &len) < 0) {
        fail("bind/listen");
    }
    printf("tcp_bench: listening on %s port %d\n", addr, ntohs(sa.sin_port));
    fflush(stdout);
    if ((sd = accept(ls, NULL, NULL)) < 0) {
        fail("accept");
    }
    close(ls);
    (void) setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    for (;;) {
        set_nonblocking(sd, 0);
        recv_all(sd, &rq, sizeof(rq));
        if (REQ_MAGIC != rq.magic || rq.kind < -1 || rq.kind > BENCH_BW
            || rq.size > ((uint64_t) 1 << 30) || rq.window < 1 || rq.window > 4096
            || rq.iters < 0 || rq.warmup < 0) {
            fprintf(stderr, "tcp_bench: bad request from the client\n");
            return 1;
        }
        if (rq.kind < 0) {
            break;
        }
        run(sd, &rq, 0);
    }
    close(sd);
    return 0;
}

static int drive(const char *addr, int port, enum bench_kind kind, const struct bench_sizes *sz,
                 double scale, int validate)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port)};
    struct request rq = {.magic = REQ_MAGIC, .kind = -1};
    int one = 1, sd;

    if (1 != inet_pton(AF_INET, addr, &sa.sin_addr)) {
        fprintf(stderr, "tcp_bench: bad address '%s'\n", addr);
        return 2;
    }
    if ((sd = socket(AF_INET, SOCK_STREAM, 0)) < 0) {
        fail("socket");
    }
    if (connect(sd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
        fail("connect");
    }
    (void) setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    printf("# tcp_bench %s mode=%s scale=%g validation=%s\n", bench_kind_name(kind),
           busy ? "busy" : "block", scale, validate ? "first warmup iteration" : "off");
    for (int i = 0; i < sz->count; i++) {
        struct bench_plan plan = bench_plan_for(kind, sz->size[i], scale);
        rq.kind = kind;
        rq.size = sz->size[i];
        rq.window = plan.window;
        rq.iters = plan.iters;
        rq.warmup = plan.warmup;
        rq.busy = busy;
        rq.validate = validate;
        set_nonblocking(sd, 0);
        send_all(sd, &rq, sizeof(rq));
        run(sd, &rq, 1);
    }
    rq.kind = -1;
    set_nonblocking(sd, 0);
    send_all(sd, &rq, sizeof(rq));
    close(sd);
    return 0;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: tcp_bench -l [-a ADDR] [-p PORT]       serve one client (port 0: any)\n"
            "       tcp_bench -c ADDR [-p PORT] -t lat|bw [-s SIZES] [-x SCALE] [-T SECS]\n"
            "                 [-m busy|block] [-n]\n"
            "  -s SIZES  a list (8,1k,64k) or a range of powers of two (1-64m, the default)\n"
            "  -x SCALE  iterations per size relative to the default\n"
            "  -T SECS   at most about this long timed per size (default 2; 0: no limit)\n"
            "  -m MODE   busy: spin on a non-blocking socket (default); block: blocking calls\n"
            "  -n        no data validation\n");
}

int main(int argc, char **argv)
{
    const char *addr = NULL, *size_arg = "1-64m";
    int listen_mode = 0, port = 18515, kind = -1, validate = 1, opt;
    double scale = 1.0;
    struct bench_sizes sizes;
    char err[128];

    while (-1 != (opt = getopt(argc, argv, "la:c:p:t:s:x:T:m:nh"))) {
        switch (opt) {
        case 'l': listen_mode = 1; break;
        case 'a': addr = optarg; break;
        case 'c': addr = optarg; break;
        case 'p': port = atoi(optarg); break;
        case 't': kind = bench_kind_parse(optarg); break;
        case 's': size_arg = optarg; break;
        case 'x': scale = atof(optarg); break;
        case 'm':
            if (0 != strcmp(optarg, "busy") && 0 != strcmp(optarg, "block")) {
                usage();
                return 2;
            }
            busy = 0 == strcmp(optarg, "busy");
            break;
        case 'T': time_limit = atof(optarg); break;
        case 'n': validate = 0; break;
        default: usage(); return 'h' == opt ? 0 : 2;
        }
    }
    if (listen_mode) {
        return serve(NULL != addr ? addr : "127.0.0.1", port);
    }
    if (NULL == addr || (BENCH_LAT != kind && BENCH_BW != kind) || !(scale > 0.0)) {
        usage();
        return 2;
    }
    if (0 != bench_sizes_parse(size_arg, &sizes, err, sizeof(err))) {
        fprintf(stderr, "tcp_bench: %s\n", err);
        return 2;
    }
    return drive(addr, port, (enum bench_kind) kind, &sizes, scale, validate);
}
