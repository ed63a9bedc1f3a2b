/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Hostile local users against a running devmem-helperd, one attack a run: run by
 * test/helper/test_helperd.sh as nobody (and the victim's part as a user the script creates)
 * against a helper on the emulated kernel whose policy allows lo queues 1-16 to group nogroup.
 * The script checks around each run that another user is served within 1 s and that the
 * helper's descriptors, threads and memory come back to what they were.
 *
 * usage: helperd_attacks SOCKET ATTACK [ARG]
 *   freeze         messages carrying descriptors whose last close waits: a TCP socket with
 *                  SO_LINGER and a send queue its peer never reads, inside a unix socket so
 *                  that the helper holds the last reference: with more descriptors than a
 *                  message takes, behind a malformed message, and with its own peer; prints
 *                  "sent", then holds the peers unread for HOLD_S seconds
 *   fd-flood       3000 hellos carrying 8 descriptors each, over connections one after another;
 *                  then 80 connections at once (past max-clients-per-user), each carrying 2
 *   many-bindings  12 RX bindings on one connection, then the connection closes
 *   epoll          an epoll file with up to 100000 watches (as many as RLIMIT_NOFILE allows)
 *                  passed as the dmabuf and as the socket: refused by its name
 *   request-flood  60 connections with 16 bind requests each queued at once; prints "sent",
 *                  then checks every one is answered
 *   log-flood      refused binds for 3 s; prints "refusals N"
 *   fuse FILE      80 descriptors of a FUSE file whose flush never ends (test/unit/fuse_stall):
 *                  this user must be turned away while its closes pile up; prints "sent",
 *                  and its exit waits until the FUSE server stops
 *   victim PORT    (the other user) binds a queue and holds a connection on 127.0.0.1:PORT
 *                  and one on [::ffff:127.0.0.1]:PORT+1 whose listeners are gone; prints
 *                  "ready", then holds them until its input closes
 *   steal PORT     asks for rules on the victim's ports, each socket bound with SO_REUSEADDR
 *                  which it then clears; then more queues than its share while the victim
 *                  holds one
 * Exit 0 when the helper refused or survived as it must, 1 otherwise.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "helper_client.h"
#include "helper_proto.h"

#include "check.h"
#include "helperd_test.h"

#define HOLD_S 4
static const char *sock_path;

static int raw_connect(void)
{
    return hdtest_raw_connect(sock_path);
}

/* One message: a hello (or garbage when bad), with nfds descriptors. */
static int send_with(int fd, bool bad, const int *fds, size_t nfds)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + sizeof(struct devmem_helper_hello)];
    struct devmem_helper_hello hello = {1, 2, 0};
    ssize_t n = devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_HELLO, 1, &hello,
                                    sizeof(hello));

    if (bad) {
        memset(buf, 'x', sizeof(buf));
    }
    return n == devmem_helper_sendmsg(fd, buf, (size_t) n, fds, nfds, 0) ? 0 : -1;
}

/* A TCP socket whose close waits: SO_LINGER for an hour, a send queue full, and its peer
 * (returned in *peer) never reading. */
static int lingering(int *peer)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(sin);
    struct linger lg = {1, 3600};
    int small = 4096, l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    static char junk[65536];

    setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    if (0 != bind(l, (struct sockaddr *) &sin, sizeof(sin)) || 0 != listen(l, 1)
        || 0 != getsockname(l, (struct sockaddr *) &sin, &len)
        || 0 != connect(c, (struct sockaddr *) &sin, sizeof(sin))
        || (*peer = accept(l, NULL, NULL)) < 0) {
        perror("lingering socket");
        exit(1);
    }
    close(l);
    setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    fcntl(c, F_SETFL, O_NONBLOCK);
    while (send(c, junk, sizeof(junk), 0) > 0) {
    }
    return c;
}

static void hold_then_exit(int seconds)
{
    printf("sent\n");
    fflush(stdout);
    sleep((unsigned) seconds);
}

/* A unix socket whose receive queue holds fds (theirs in flight): whoever drops the last
 * reference to it drops the last ones to them, in its own thread. */
static int wrapped(const int *fds, size_t nfds)
{
    int sv[2];
    char byte = 'w';

    if (0 != socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv)
        || 1 != devmem_helper_sendmsg(sv[0], &byte, 1, fds, nfds, 0)) {
        perror("wrapped");
        exit(1);
    }
    close(sv[0]);
    for (size_t i = 0; i < nfds; i++) {
        close(fds[i]); /* the only reference left is the one in flight */
    }
    return sv[1];
}

static void alarmed(int sig)
{
    (void) sig; /* interrupts a close of ours that lingers */
}

/* Close our copy of a descriptor the helper also holds; false when ours was the last (the
 * helper had let go already, and the close lingered here until the alarm). */
static bool helper_holds_last(int fd)
{
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    alarm(1);
    close(fd);
    alarm(0);
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec - t0.tv_sec + (t.tv_nsec - t0.tv_nsec) / 1e9 < 0.5;
}

/* One way to hand the helper a lingering socket (peer: its unread end, kept by the caller,
 * or -1 to send it along); true when the helper ended up with the last reference. */
static bool hand_over(int how, int sock, int peer)
{
    int fds[10], n = 0, fd = raw_connect();
    bool armed;

    if (0 == how) {
        /* ten descriptors, the last holding it: past what a reader with room for 8 takes,
         * the kernel closes it in the reader's own thread */
        for (n = 0; n < 9; n++) {
            fds[n] = hdtest_memfd(4096);
        }
        fds[n++] = wrapped(&sock, 1);
        armed = 0 == send_with(fd, false, fds, 10);
    } else if (1 == how) {
        /* behind a malformed message: the connection's close frees it */
        fds[n++] = wrapped(&sock, 1);
        armed = 0 == send_with(fd, true, NULL, 0) && 0 == send_with(fd, false, fds, 1);
    } else {
        /* with its own peer, so that only the helper holds both; the wrapper goes last, as
         * in the other ways: only the last is closed under the alarm, and a close of ours
         * that turns out to be the last one lingers until interrupted */
        int both[2] = {sock, peer};
        fds[n++] = hdtest_memfd(4096);
        fds[n++] = wrapped(both, 2);
        armed = 0 == send_with(fd, false, fds, 2);
    }
    for (int i = 0; i < n - 1; i++) {
        close(fds[i]);
    }
    armed = helper_holds_last(fds[n - 1]) && armed;
    close(fd);
    return armed;
}

static int attack_freeze(void)
{
    static const char *const ways[] = {"in the tenth descriptor of a message",
                                       "behind a malformed message",
                                       "with its own peer"};
    struct sigaction sa = {.sa_handler = alarmed};
    int peers[3];

    sigaction(SIGALRM, &sa, NULL); /* no SA_RESTART */
    for (int how = 0; how < 3; how++) {
        int tries = 0;
        bool armed = false;

        /* the helper may let go of its copy before ours: then ours was the last, and the
         * hand-over is tried again with a new socket */
        while (!armed && tries++ < 10) {
            int sock = lingering(&peers[how]);

            armed = hand_over(how, sock, 2 == how ? peers[how] : -1);
            if (!armed && 2 != how) {
                close(peers[how]);
            }
        }
        CHECK(armed, "a lingering socket handed over %s, the helper holding its last reference "
              "(%d tries)", ways[how], tries);
    }
    hold_then_exit(HOLD_S); /* peers 0 and 1 stay open and unread meanwhile */
    close(peers[0]);
    close(peers[1]);
    return check_finish();
}

static int attack_fd_flood(void)
{
    int fds[8], sent = 0, burst[80];

    for (int i = 0; i < 8; i++) {
        fds[i] = hdtest_memfd(4096);
    }
    for (int i = 0; i < 3000; i++) {
        int fd = raw_connect();
        char answer[512];

        sent += 0 == send_with(fd, false, fds, 8);
        (void) recv(fd, answer, sizeof(answer), 0); /* the refusal, then the close */
        close(fd);
    }
    /* a user whose closes pile up is turned away until they drain: some sends find the
     * connection closed */
    CHECK(sent > 1000, "3000 hellos carrying 8 descriptors each: %d sent, %d turned away",
          sent, 3000 - sent);
    /* past max-clients-per-user at once, each connection carrying descriptors before the
     * helper accepts it: those refused at accept hold them in their queue */
    sent = 0;
    for (int i = 0; i < 80; i++) {
        burst[i] = raw_connect();
        sent += 0 == send_with(burst[i], false, fds, 2);
    }
    for (int i = 0; i < 80; i++) {
        close(burst[i]);
    }
    CHECK(sent > 64, "80 connections at once, past max-clients-per-user 64, each with 2 "
          "descriptors: %d sent", sent);
    return check_finish();
}

static int attack_many_bindings(void)
{
    struct devmem_helper_client *c;
    struct devmem_helper_rx_ask one = {1, 0, false};
    struct devmem_helper_reply r;
    struct devmem_err e;
    int granted = 0, buf = hdtest_memfd(1 << 20);

    c = hdtest_client(sock_path);
    for (int i = 0; i < 12; i++) {
        int lsd = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false);

        devmem_err_clear(&e);
        granted += 0 == devmem_helper_bind_rx(c, "lo", &one, buf, lsd, &r, &e);
        close(lsd);
    }
    CHECK(12 == granted, "12 RX bindings on one connection: %d granted (%s)", granted, e.msg);
    devmem_helper_close(c); /* all 12 go at once */
    return check_finish();
}

static int attack_epoll(void)
{
    struct devmem_helper_client *c;
    struct devmem_helper_rx_ask one = {1, 0, false};
    struct devmem_helper_reply r;
    struct devmem_err e;
    struct rlimit rl;
    int ep = epoll_create1(EPOLL_CLOEXEC), ev = eventfd(0, EFD_CLOEXEC), watches = 0;
    int lsd = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false), rc;

    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max; /* room for the watches' descriptors */
    setrlimit(RLIMIT_NOFILE, &rl);
    for (int i = 0; i < 100000 && (rlim_t) i + 64 < rl.rlim_cur; i++) {
        struct epoll_event x = {EPOLLIN, {0}};
        int d = dup(ev);

        if (d < 0 || 0 != epoll_ctl(ep, EPOLL_CTL_ADD, d, &x)) {
            break;
        }
        watches++;
    }
    printf("      epoll with %d watches (RLIMIT_NOFILE %llu)\n", watches,
           (unsigned long long) rl.rlim_cur);
    c = hdtest_client(sock_path);
    devmem_err_clear(&e);
    rc = devmem_helper_bind_rx(c, "lo", &one, ep, lsd, &r, &e);
    CHECK(-EBADF == rc && NULL != strstr(e.msg, "anon_inode:[eventpoll]"),
          "an epoll file passed as the dmabuf is refused by its name: %s", e.msg);
    devmem_err_clear(&e);
    rc = devmem_helper_bind_rx(c, "lo", &one, hdtest_memfd(1 << 20), ep, &r, &e);
    CHECK(-ENOTSOCK == rc && NULL != strstr(e.msg, "eventpoll"),
          "and passed as the listening socket: %s", e.msg);
    devmem_helper_close(c);
    return check_finish();
}

/* 60 connections, each with 16 bind requests queued at once (a pipe for the dmabuf, so that
 * each costs the helper its checks and then a refusal): prints "sent", then reads every
 * answer. */
static int attack_request_flood(void)
{
    enum { CONNS = 60, EACH = 16 };
    struct devmem_helper_bind_rx req = {"lo", 1, 0, 0};
    unsigned char msg[sizeof(struct devmem_helper_hdr) + sizeof(req)];
    int conn[CONNS], sent[CONNS], pipefd[2], fds[2], answered = 0, total = 0;
    ssize_t n = devmem_helper_build(msg, sizeof(msg), DEVMEM_HELPER_BIND_RX, 1, &req,
                                    sizeof(req));
    struct rlimit rl;

    /* descriptors in flight count against the sender's RLIMIT_NOFILE (ETOOMANYREFS) */
    getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
    if (n <= 0 || 0 != pipe2(pipefd, O_CLOEXEC)) {
        return 1;
    }
    fds[0] = pipefd[0];
    fds[1] = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false);
    for (int i = 0; i < CONNS; i++) {
        conn[i] = raw_connect();
        (void) send_with(conn[i], false, NULL, 0); /* hello */
        sent[i] = 0;
        for (int k = 0; k < EACH; k++) {
            sent[i] += n == devmem_helper_sendmsg(conn[i], msg, (size_t) n, fds, 2, 0);
        }
        total += sent[i];
    }
    hold_then_exit(0);
    for (int i = 0; i < CONNS; i++) {
        struct devmem_helper_msg m;
        unsigned char buf[4096];
        size_t have = 0;
        struct devmem_err e;

        /* the hello's answer, then one refusal per request */
        for (int got = 0; got < 1 + sent[i];) {
            ssize_t used = devmem_helper_parse(buf, have, 0, &m, &e), r;

            if (used > 0) {
                memmove(buf, buf + used, have - (size_t) used);
                have -= (size_t) used;
                answered += DEVMEM_HELPER_ERROR == m.type;
                got++;
                continue;
            }
            if (used < 0 || (r = recv(conn[i], buf + have, sizeof(buf) - have, 0)) <= 0) {
                break;
            }
            have += (size_t) r;
        }
        close(conn[i]);
    }
    CHECK(CONNS * EACH == total && total == answered, "%d bind requests over %d connections, "
          "%d sent: %d refused, each answered", CONNS * EACH, CONNS, total, answered);
    return check_finish();
}

static int attack_log_flood(void)
{
    struct devmem_helper_client *c;
    struct devmem_helper_rx_ask one = {1, 0, false};
    struct devmem_helper_reply r;
    struct devmem_err e;
    struct timespec t0, t;
    int pipefd[2], lsd = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false), n = 0;

    if (0 != pipe2(pipefd, O_CLOEXEC)) {
        return 1;
    }
    c = hdtest_client(sock_path);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        n += -EBADF == devmem_helper_bind_rx(c, "lo", &one, pipefd[0], lsd, &r, &e);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while (t.tv_sec - t0.tv_sec < 3);
    printf("refusals %d\n", n);
    /* a flood only when it outruns the log's budget (100 lines, then 10 a second: 130 in
     * 3 s); on a loaded machine a few hundred, on an idle one thousands */
    CHECK(n > 150, "%d refused binds in 3 s, more than the log takes", n);
    devmem_helper_close(c);
    return check_finish();
}

/* Descriptors whose close no signal ends (a FUSE file whose server never answers a flush),
 * 80 of them: this user's closing threads stall and its closes pile up; it must be turned
 * away until they drain, while the helper serves everyone else. Prints "sent", then exits,
 * which waits until the script stops the FUSE server. */
static int attack_fuse(const char *file)
{
    int fds[80], turned_away = 0;

    for (int i = 0; i < 80; i++) {
        if ((fds[i] = open(file, O_RDONLY | O_CLOEXEC)) < 0) {
            printf("FAIL open %s: %s\n", file, strerror(errno));
            return 1;
        }
    }
    /* a hello takes none: refused and closed, until the closes pile up: then the helper
     * reads no more of ours, and turns a connection away once it has waited HD_BACKLOG_MS */
    for (int i = 0; i < 80 && 0 == turned_away; i += 2) {
        int fd = raw_connect();
        struct devmem_helper_msg m;
        struct devmem_err e;
        unsigned char answer[512];
        ssize_t n;

        (void) send_with(fd, false, &fds[i], 2);
        n = recv(fd, answer, sizeof(answer), 0);
        if (n > 0 && devmem_helper_parse(answer, (size_t) n, 0, &m, &e) > 0
            && DEVMEM_HELPER_ERROR == m.type
            && NULL != strstr(m.body.error.msg, "still being closed")) {
            turned_away = 1;
            printf("      connection %d: %s\n", i / 2 + 1, m.body.error.msg);
        }
        close(fd);
    }
    sleep(1); /* the helper queues the closes it cannot run */
    for (int i = 0; i < 5 && 0 == turned_away; i++) {
        struct devmem_helper_client *c;
        struct devmem_err e;

        if (0 != devmem_helper_connect(&c, sock_path, 5000, &e)) {
            turned_away = NULL != strstr(e.msg, "still being closed");
            printf("      a new connection: %s\n", e.msg);
        } else {
            devmem_helper_close(c);
            usleep(200 * 1000);
        }
    }
    CHECK(turned_away, "with 80 FUSE files whose flush never ends queued for closing, this user "
          "is turned away");
    hold_then_exit(0);
    return check_finish(); /* our own copies' closes wait for the FUSE server too */
}

/* A connection on addr:port whose listener, bound with SO_REUSEADDR, is gone: a server's
 * after a restart. Returns the server's end. */
static int orphan_connection(int family, unsigned int port)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1, l = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s;
    struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};

    memset(&ss, 0, sizeof(ss));
    if (AF_INET == family) {
        ss.ss_family = AF_INET;
        ((struct sockaddr_in *) &ss)->sin_port = htons((uint16_t) port);
        ((struct sockaddr_in *) &ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        len = sizeof(struct sockaddr_in);
    } else { /* the IPv6 wildcard, dual stack: takes 127.0.0.1 too */
        ss.ss_family = AF_INET6;
        ((struct sockaddr_in6 *) &ss)->sin6_port = htons((uint16_t) port);
        len = sizeof(struct sockaddr_in6);
    }
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (0 != bind(l, (struct sockaddr *) &ss, len) || 0 != listen(l, 1)
        || 0 != connect(c, (struct sockaddr *) &to, sizeof(to))
        || (s = accept(l, NULL, NULL)) < 0) {
        perror("victim's connection");
        exit(1);
    }
    close(l);
    return s;
}

static int victim(unsigned int port)
{
    struct devmem_helper_client *c;
    struct devmem_helper_rx_ask one = {1, 0, false};
    struct devmem_helper_reply r;
    struct devmem_err e;
    int lsd = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false), buf = hdtest_memfd(1 << 20);
    char line[8];

    (void) orphan_connection(AF_INET, port);
    (void) orphan_connection(AF_INET6, port + 1);
    c = hdtest_client(sock_path);
    if (0 != devmem_helper_bind_rx(c, "lo", &one, buf, lsd, &r, &e)) {
        printf("FAIL the victim's binding: %s\n", e.msg);
        return 1;
    }
    printf("ready\n");
    fflush(stdout);
    (void) read(0, line, sizeof(line)); /* until the script closes our input */
    devmem_helper_close(c);
    return 0;
}

/* A socket on 127.0.0.1:port that shares it through SO_REUSEADDR, then clears the option. */
static int shared_listener(unsigned int port)
{
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t) port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int one = 1, zero = 0, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (0 != bind(fd, (struct sockaddr *) &sin, sizeof(sin)) || 0 != listen(fd, 4)) {
        printf("      (bind to %u with SO_REUSEADDR: %s)\n", port, strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &zero, sizeof(zero));
    return fd;
}

static int steal(unsigned int port)
{
    struct devmem_helper_client *c;
    struct devmem_helper_rx_ask one = {1, 0, false}, exact = {12, 0, false}, wish = {16, 1, true};
    struct devmem_helper_reply r;
    struct devmem_err e;
    int buf = hdtest_memfd(1 << 20), rc;

    c = hdtest_client(sock_path);
    for (unsigned int p = port; p <= port + 1; p++) {
        int lsd = shared_listener(p);

        devmem_err_clear(&e);
        rc = lsd < 0 ? -1 : devmem_helper_bind_rx(c, "lo", &one, buf, lsd, &r, &e);
        CHECK(-EADDRINUSE == rc && NULL != strstr(e.msg, "ESTABLISHED"),
              "a rule for port %u, where another user's connection lives (%s): %s", p,
              p == port ? "127.0.0.1" : "::ffff:127.0.0.1", 0 == rc ? "GRANTED" : e.msg);
        if (lsd >= 0) {
            close(lsd);
        }
    }
    /* user-share: queues 1-16, the victim holds one: 8 is this user's share */
    {
        int lsd = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false);

        devmem_err_clear(&e);
        rc = devmem_helper_bind_rx(c, "lo", &exact, buf, lsd, &r, &e);
        CHECK(-EDQUOT == rc && NULL != strstr(e.msg, "user-share 50%"),
              "12 of 16 queues while another user holds one: %s", 0 == rc ? "GRANTED" : e.msg);
        devmem_err_clear(&e);
        rc = devmem_helper_bind_rx(c, "lo", &wish, buf, lsd, &r, &e);
        CHECK(0 == rc && 8 == r.nqueues, "a wish for 16: its share, %u queues (%s)",
              0 == rc ? r.nqueues : 0, 0 == rc ? "granted" : e.msg);
        close(lsd);
    }
    devmem_helper_close(c);
    return check_finish();
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: helperd_attacks SOCKET ATTACK [PORT]\n");
        return 2;
    }
    sock_path = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (0 == strcmp(argv[2], "freeze")) {
        return attack_freeze();
    } else if (0 == strcmp(argv[2], "fd-flood")) {
        return attack_fd_flood();
    } else if (0 == strcmp(argv[2], "many-bindings")) {
        return attack_many_bindings();
    } else if (0 == strcmp(argv[2], "epoll")) {
        return attack_epoll();
    } else if (0 == strcmp(argv[2], "request-flood")) {
        return attack_request_flood();
    } else if (0 == strcmp(argv[2], "log-flood")) {
        return attack_log_flood();
    } else if (argc > 3 && 0 == strcmp(argv[2], "fuse")) {
        return attack_fuse(argv[3]);
    } else if (argc > 3 && 0 == strcmp(argv[2], "victim")) {
        return victim((unsigned int) atoi(argv[3]));
    } else if (argc > 3 && 0 == strcmp(argv[2], "steal")) {
        return steal((unsigned int) atoi(argv[3]));
    }
    fprintf(stderr, "helperd_attacks: unknown attack %s\n", argv[2]);
    return 2;
}
