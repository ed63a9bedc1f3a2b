/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-check's measurements between ranks 0 and 1: validated transfers (host and CUDA
 * buffers), and the table of this job's transport beside raw TCP over the same interface,
 * which the check opens itself (Open MPI's ob1 drives one BTL per peer, the one of highest
 * exclusivity, so btl/tcp cannot run beside btl_devmem in one job; raw TCP is what btl/tcp
 * is built on, and its ceiling).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "cudrv.h"

/* ---------------------------------------------------------------- MPI_T */

static const char *const counter_names[CNT_N] = {
    "btl_devmem_rx_dmabuf", "btl_devmem_tx_devmem", "btl_devmem_tokens_received",
    "btl_devmem_tokens_returned", "btl_devmem_proto_errors", "btl_devmem_rx_threads",
    "btl_devmem_tx_host"};
static MPI_T_pvar_session session;
static MPI_T_pvar_handle handles[CNT_N];
static int counters_on;

int counters_open(void)
{
    int n, found = 0;

    if (MPI_SUCCESS != MPI_T_pvar_get_num(&n)
        || MPI_SUCCESS != MPI_T_pvar_session_create(&session)) {
        return -1;
    }
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verbosity, cls, bind, ro, cont, atomic;
        MPI_Datatype type;
        MPI_T_enum et;

        if (MPI_SUCCESS != MPI_T_pvar_get_info(i, name, &nlen, &verbosity, &cls, &type, &et,
                                               desc, &dlen, &bind, &ro, &cont, &atomic)) {
            continue;
        }
        for (int k = 0; k < CNT_N; k++) {
            int count;

            if (0 == strcmp(name, counter_names[k])
                && MPI_SUCCESS == MPI_T_pvar_handle_alloc(session, i, NULL, &handles[k], &count)) {
                found++;
            }
        }
    }
    counters_on = CNT_N == found;
    return counters_on ? 0 : -1;
}

void counters_read(unsigned long long v[CNT_N])
{
    for (int k = 0; k < CNT_N; k++) {
        v[k] = 0;
        if (counters_on) {
            (void) MPI_T_pvar_read(session, handles[k], &v[k]);
        }
    }
}

void counters_close(void)
{
    if (counters_on) {
        for (int k = 0; k < CNT_N; k++) {
            (void) MPI_T_pvar_handle_free(session, &handles[k]);
        }
    }
    (void) MPI_T_pvar_session_free(&session);
    counters_on = 0;
}

char *cvar_text(const char *want)
{
    int n;

    if (MPI_SUCCESS != MPI_T_cvar_get_num(&n)) {
        return NULL;
    }
    for (int i = 0; i < n; i++) {
        char name[256], desc[1024];
        int nlen = sizeof(name), dlen = sizeof(desc), verbosity, bind, scope, count;
        MPI_Datatype type;
        MPI_T_enum et;
        MPI_T_cvar_handle h;
        char *value;

        if (MPI_SUCCESS != MPI_T_cvar_get_info(i, name, &nlen, &verbosity, &type, &et, desc,
                                               &dlen, &bind, &scope)
            || 0 != strcmp(name, want)
            || MPI_SUCCESS != MPI_T_cvar_handle_alloc(i, NULL, &h, &count)) {
            continue;
        }
        /* Open MPI copies a whole string whatever count says: room for the component's
         * longest (btl_devmem_device_paths, at most 4 KiB) */
        value = calloc(1, (size_t) (count > 8192 ? count : 8192) + 1);
        if (NULL != value && MPI_SUCCESS != MPI_T_cvar_read(h, value)) {
            free(value);
            value = NULL;
        } else if (NULL != value && MPI_CHAR != type) {
            union {
                int i;
                unsigned u;
                long l;
                unsigned long ul;
                unsigned long long ull;
            } v;

            memcpy(&v, value, sizeof(v));
            if (MPI_INT == type) {
                snprintf(value, 64, "%d", v.i);
            } else if (MPI_UNSIGNED == type) {
                snprintf(value, 64, "%u", v.u);
            } else if (MPI_LONG == type) {
                snprintf(value, 64, "%ld", v.l);
            } else if (MPI_UNSIGNED_LONG == type) {
                snprintf(value, 64, "%lu", v.ul);
            } else if (MPI_UNSIGNED_LONG_LONG == type) {
                snprintf(value, 64, "%llu", v.ull);
            } else {
                snprintf(value, 64, "?");
            }
        }
        (void) MPI_T_cvar_handle_free(&h);
        return value;
    }
    return NULL;
}

/* ---------------------------------------------------------------- buffers */

int check_gpu_usable(char *why, size_t len)
{
    struct devmem_err e;
    int n = 0;

    if (0 != devmem_cuda_device_count(&n, &e)) {
        snprintf(why, len, "%s", e.msg);
        return -1;
    }
    if (n < 1) {
        snprintf(why, len, "CUDA sees no GPU");
        return -1;
    }
    return 0;
}

static void *buf_alloc(char kind, size_t len)
{
    struct devmem_err e;
    uint64_t addr;

    if ('H' == kind) {
        return malloc(len > 0 ? len : 1);
    }
    return 0 == devmem_cuda_alloc(0, len > 0 ? len : 1, &addr, &e) ? (void *) (uintptr_t) addr
                                                                  : NULL;
}

static void buf_free(char kind, void *p)
{
    if ('H' == kind) {
        free(p);
    } else if (NULL != p) {
        devmem_cuda_free(0, (uint64_t) (uintptr_t) p);
    }
}

/* Host bytes into a buffer of its kind, or back out (through the CUDA driver for 'D'). */
static int buf_copy(char kind, void *dst, const void *src, size_t len)
{
    struct devmem_err e;

    if ('H' == kind || 0 == len) {
        memmove(dst, src, len);
        return 0;
    }
    return devmem_cuda_copy(0, dst, src, len, &e);
}

/* The expected byte at offset off of message id from rank src. */
static unsigned char pattern(size_t off, int id, int src)
{
    return (unsigned char) (off * 131u + (off >> 9) + (unsigned) id * 7u + (unsigned) src * 29u);
}

/* ---------------------------------------------------------------- transfers */

int check_transfers(char a, char b, size_t max, char *why, size_t len)
{
    static const size_t sizes[] = {1, 100, 4096, 65536, 128 * 1024 + 1, 1u << 20,
                                   (16u << 20) + 3, 64u << 20};
    char mine = 0 == my_rank ? a : b;
    unsigned char *host = malloc(max > 0 ? max : 1);
    void *buf = buf_alloc(mine, max);
    char local[256] = "";
    int bad = NULL == host || NULL == buf, any;

    if (bad) {
        snprintf(local, sizeof(local), "rank %d: no %s buffer of %zu bytes", my_rank,
                 'H' == mine ? "host" : "GPU", max);
    }
    for (size_t i = 0; !bad && i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        size_t n = sizes[i] < max ? sizes[i] : max;

        for (int dir = 0; dir < 2 && !bad; dir++) {
            int src = dir, id = (int) i * 2 + dir;

            if (my_rank == src) {
                for (size_t o = 0; o < n; o++) {
                    host[o] = pattern(o, id, src);
                }
                bad = 0 != buf_copy(mine, buf, host, n);
                MPI_Send(buf, (int) n, MPI_BYTE, 1 - src, id, MPI_COMM_WORLD);
            } else {
                memset(host, 0xee, n);
                bad = 0 != buf_copy(mine, buf, host, n);
                MPI_Recv(buf, (int) n, MPI_BYTE, src, id, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                bad |= 0 != buf_copy(mine, host, buf, n);
                for (size_t o = 0; !bad && o < n; o++) {
                    if (host[o] != pattern(o, id, src)) {
                        snprintf(local, sizeof(local),
                                 "rank %d: %zu-byte message from rank %d wrong at byte %zu "
                                 "(0x%02x, want 0x%02x)", my_rank, n, src, o, host[o],
                                 pattern(o, id, src));
                        bad = 1;
                    }
                }
            }
            if (bad && '\0' == local[0]) {
                snprintf(local, sizeof(local), "rank %d: a CUDA copy failed", my_rank);
            }
        }
        /* both ranks stop at the same size */
        MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        bad = any;
    }
    buf_free(mine, buf);
    free(host);
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (!any) {
        return 0;
    }
    /* rank 0 reports the first rank's words */
    if (1 == my_rank) {
        MPI_Send(local, sizeof(local), MPI_CHAR, 0, 99, MPI_COMM_WORLD);
    } else {
        char theirs[256];

        MPI_Recv(theirs, sizeof(theirs), MPI_CHAR, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        snprintf(why, len, "%s", '\0' != local[0] ? local : theirs);
    }
    return -1;
}

/* ---------------------------------------------------------------- raw TCP */

/* All of n bytes, or -1. A few tries without waiting, then poll: the reference must not
 * spin, or where the two ranks share cores (two small VMs, namespaces on one host) it measures
 * the scheduler, not TCP. A peer silent for 30 s counts as broken. */
static int full_io(int sd, void *p, size_t n, int out)
{
    struct pollfd pfd = {.fd = sd, .events = out ? POLLOUT : POLLIN};
    char *c = p;
    int tries = 0;

    while (n > 0) {
        ssize_t k = out ? send(sd, c, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                        : recv(sd, c, n, MSG_DONTWAIT);

        if (k > 0) {
            c += k;
            n -= (size_t) k;
            tries = 0;
            continue;
        }
        if (0 == k || (EINTR != errno && EAGAIN != errno && EWOULDBLOCK != errno)) {
            return -1;
        }
        if (++tries > 16) {
            int r = poll(&pfd, 1, 30000);

            if (0 == r || (r < 0 && EINTR != errno)) {
                return -1;
            }
        }
    }
    return 0;
}

/* A TCP connection between ranks 0 and 1, rank 1 listening on peer_addr's family. */
static int tcp_pair(const char *peer_addr)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST}, *ai = NULL;
    int port = -1, sd = -1, one = 1;

    if (1 == my_rank) {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof(ss);
        int ls = socket(AF_INET6, SOCK_STREAM, 0); /* dual-stack: v4 and v6 peers alike */

        if (ls < 0) { /* IPv6 off in this kernel */
            ls = socket(AF_INET, SOCK_STREAM, 0);
        }

        if (ls >= 0 && 0 == listen(ls, 1) && 0 == getsockname(ls, (struct sockaddr *) &ss, &sl)) {
            port = AF_INET6 == ss.ss_family ? ntohs(((struct sockaddr_in6 *) &ss)->sin6_port)
                                            : ntohs(((struct sockaddr_in *) &ss)->sin_port);
        }
        int connected = 0;

        MPI_Send(&port, 1, MPI_INT, 0, 98, MPI_COMM_WORLD);
        /* accept only a connect that rank 0 says it made (it waits in the backlog) */
        MPI_Recv(&connected, 1, MPI_INT, 0, 97, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (connected) {
            sd = accept(ls, NULL, NULL);
        }
        if (ls >= 0) {
            close(ls);
        }
    } else {
        char serv[16];

        MPI_Recv(&port, 1, MPI_INT, 1, 98, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        snprintf(serv, sizeof(serv), "%d", port);
        if (port > 0 && NULL != peer_addr && 0 == getaddrinfo(peer_addr, serv, &hints, &ai)) {
            sd = socket(ai->ai_family, SOCK_STREAM, 0);
            if (sd >= 0 && 0 != connect(sd, ai->ai_addr, ai->ai_addrlen)) {
                close(sd);
                sd = -1;
            }
            freeaddrinfo(ai);
        }
        int connected = sd >= 0;
        MPI_Send(&connected, 1, MPI_INT, 1, 97, MPI_COMM_WORLD);
    }
    if (sd >= 0) {
        (void) setsockopt(sd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return sd;
}

/* ---------------------------------------------------------------- the table */

enum { WINDOW_BYTES = 64 << 20, ACK = 4 };

/* Seconds for iters ping-pongs (lat) or iters windows of w messages and an ack (bw). */
static double run_mpi(int bw, size_t size, int iters, int w, char *buf, char *ack)
{
    MPI_Request req[64];
    double t0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; it < iters; it++) {
        if (!bw) {
            if (0 == my_rank) {
                MPI_Send(buf, (int) size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
                MPI_Recv(buf, (int) size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(buf, (int) size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, (int) size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
            }
            continue;
        }
        for (int k = 0; k < w; k++) {
            if (0 == my_rank) {
                MPI_Isend(buf + (size_t) k * size, (int) size, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                          &req[k]);
            } else {
                MPI_Irecv(buf + (size_t) k * size, (int) size, MPI_BYTE, 0, 2, MPI_COMM_WORLD,
                          &req[k]);
            }
        }
        MPI_Waitall(w, req, MPI_STATUSES_IGNORE);
        if (0 == my_rank) {
            MPI_Recv(ack, ACK, MPI_BYTE, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(ack, ACK, MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* The same over the raw connection; negative when it broke. */
static double run_tcp(int sd, int bw, size_t size, int iters, int w, char *buf, char *ack)
{
    double t0;
    int rc = 0;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (int it = 0; 0 == rc && it < iters; it++) {
        if (!bw) {
            rc = 0 == my_rank ? full_io(sd, buf, size, 1) | full_io(sd, buf, size, 0)
                              : full_io(sd, buf, size, 0) | full_io(sd, buf, size, 1);
        } else if (0 == my_rank) {
            rc = full_io(sd, buf, size * (size_t) w, 1) | full_io(sd, ack, ACK, 0);
        } else {
            rc = full_io(sd, buf, size * (size_t) w, 0) | full_io(sd, ack, ACK, 1);
        }
    }
    return 0 == rc ? MPI_Wtime() - t0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *) a, y = *(const double *) b;

    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t) n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

const size_t check_lat_sizes[CHECK_LAT_N] = {8, 64, 1024, 8192, 65536};
const size_t check_bw_sizes[CHECK_BW_N] = {65536, 1u << 20, 8u << 20, 64u << 20};

void check_size_name(size_t s, char *out, size_t len)
{
    if (s >= (1u << 20)) {
        snprintf(out, len, "%zu MiB", s >> 20);
    } else if (s >= 1024) {
        snprintf(out, len, "%zu KiB", s >> 10);
    } else {
        snprintf(out, len, "%zu B", s);
    }
}

/* A figure for check_compare: printed, not kept for the report (rank 0). */
static void row(int rows, const char *kind, size_t size, double job, double raw)
{
    if (rows && 0 == my_rank) {
        printf(CHECK_ROW "%s %zu %.3f %.3f\n", kind, size, job, raw);
        fflush(stdout);
    }
}

void check_table(const char *peer_addr, int reps, int quick, int rows)
{
    char *buf = calloc(1, WINDOW_BYTES), ack[ACK] = {0};
    int raw, sd = -1, ok, both;
    double m[16], t[16];

    /* raw TCP where rank 0 has rank 1's address (the same on both ranks) */
    raw = NULL != peer_addr;
    MPI_Bcast(&raw, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (raw) {
        sd = tcp_pair(0 == my_rank ? peer_addr : NULL);
    }
    ok = sd >= 0;
    MPI_Allreduce(&ok, &both, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (NULL == buf) {
        say("table: no memory for the buffers");
        if (sd >= 0) {
            close(sd);
        }
        return;
    }
    say("%-10s %8s  %12s  %12s  %s", "latency", "size", "this job us", "raw TCP us",
        "job/TCP");
    for (size_t i = 0; i < CHECK_LAT_N; i++) {
        int iters = quick ? 100 : 1000;
        char name[32];

        for (int r = 0; r < reps; r++) {
            (void) run_mpi(0, check_lat_sizes[i], 10, 1, buf, ack); /* warm-up */
            m[r] = run_mpi(0, check_lat_sizes[i], iters, 1, buf, ack) / iters / 2 * 1e6;
            t[r] = both ? run_tcp(sd, 0, check_lat_sizes[i], iters, 1, buf, ack) / iters / 2 * 1e6
                        : -1;
        }
        check_size_name(check_lat_sizes[i], name, sizeof(name));
        if (both && t[0] > 0) {
            double mm = median(m, reps), tm = median(t, reps);
            say("%-10s %8s  %12.2f  %12.2f  %.2f", "", name, mm, tm, mm / tm);
            row(rows, "lat", check_lat_sizes[i], mm, tm);
        } else {
            double mm = median(m, reps);
            say("%-10s %8s  %12.2f  %12s", "", name, mm, "n/a");
            row(rows, "lat", check_lat_sizes[i], mm, -1);
        }
    }
    say("%-10s %8s  %12s  %12s  %s", "bandwidth", "size", "this job MB/s", "raw TCP MB/s",
        "job/TCP");
    for (size_t i = 0; i < CHECK_BW_N; i++) {
        size_t s = check_bw_sizes[i];
        int w = (int) (WINDOW_BYTES / s > 16 ? 16 : WINDOW_BYTES / s);
        size_t per = s * (size_t) w;
        int iters = (int) (((quick ? 64u : 512u) << 20) / per);
        char name[32];

        iters = iters < 2 ? 2 : iters;
        for (int r = 0; r < reps; r++) {
            (void) run_mpi(1, s, 1, w, buf, ack);
            m[r] = per * (double) iters / run_mpi(1, s, iters, w, buf, ack) / 1e6;
            t[r] = both ? per * (double) iters / run_tcp(sd, 1, s, iters, w, buf, ack) / 1e6
                        : -1;
        }
        check_size_name(s, name, sizeof(name));
        if (both && t[0] > 0) {
            double mm = median(m, reps), tm = median(t, reps);
            say("%-10s %8s  %12.0f  %12.0f  %.2f", "", name, mm, tm, mm / tm);
            row(rows, "bw", s, mm, tm);
        } else {
            double mm = median(m, reps);
            say("%-10s %8s  %12.0f  %12s", "", name, mm, "n/a");
            row(rows, "bw", s, mm, -1);
        }
    }
    if (raw && !both) {
        say("(raw TCP: no connection to %s between the two ranks)", peer_addr);
    }
    if (sd >= 0) {
        close(sd);
    }
    free(buf);
}
