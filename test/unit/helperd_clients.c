/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Clients of a running devmem-helperd, good and hostile: run by test/helper/test_helperd.sh
 * against a helper started with --kernel emulated and the policy that script writes
 * (interface lo queues 1-4; max-bindings 3, max-rules 3, max-bytes 64M per user;
 * max-clients-per-user 20; allow-group root nogroup; socket-group nogroup).
 *
 * usage: helperd_clients SOCKET [refused-user | kernel-refuses IFNAME [ADDR] | foreign-netns
 *                               | strays | share]
 *   every scenario below, in order; "refused-user" instead checks that a uid outside
 *   allow-group is turned away at hello, and that allow-tx no refuses TX bindings (the
 *   script runs a second helper for it);
 *   "kernel-refuses IFNAME" that a helper running the real kernel relays the kernel's
 *   refusal of IFNAME (EOPNOTSUPP and its extack), word for word, and holds nothing after;
 *   "foreign-netns", run in another network namespace than the helper, that a socket from
 *   there is refused (it proves nothing about the ports of the helper's namespace);
 *   "strays", against a helper (lo queues 1-8) whose emulated NIC already holds a rule into
 *   queue 3 and one into an RSS context over queues 5-6 (DEVMEM_HELPERD_EMUL_STRAYS), that
 *   its bindings get queues 1-2, 4 and 7-8 and then none;
 *   "share", against a helper with lo queues 1-4 and room for 5 bindings, that ranks wishing
 *   for 4 queues each get their share of the range among the sharers they name, the one
 *   past the range is refused naming the holders, and the status shows who holds what.
 *
 * Every hostile client must get an answer that names what was wrong (or, for a message that
 * never completes, be dropped) while a good client, connected all along, keeps being served
 * and keeps its binding. Exit 0 pass, 1 fail.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_client.h"
#include "helper_proto.h"

#include "check.h"
#include "helperd_test.h"

#define NOBODY 65534
static const char *sock_path;

static int raw_connect(void)
{
    return hdtest_raw_connect(sock_path);
}

static void raw_send(int fd, const void *buf, size_t len, const int *fds, size_t nfds)
{
    if ((ssize_t) len != devmem_helper_sendmsg(fd, buf, len, fds, nfds, 0)) {
        perror("sendmsg");
    }
}

/* Build and send one message as is (no check that it parses). */
static void send_msg(int fd, uint16_t version, uint16_t type, uint32_t length, const void *body,
                     size_t body_len, const int *fds, size_t nfds)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + 8192];
    struct devmem_helper_hdr h = {DEVMEM_HELPER_MAGIC, version, type, 99, length};

    memcpy(buf, &h, sizeof(h));
    if (body_len > 0) {
        memcpy(buf + sizeof(h), body, body_len);
    }
    raw_send(fd, buf, sizeof(h) + body_len, fds, nfds);
}

static void send_hello(int fd)
{
    struct devmem_helper_hello hello = {1, 1, 0};
    send_msg(fd, 1, DEVMEM_HELPER_HELLO, sizeof(hello), &hello, sizeof(hello), NULL, 0);
}

/* The next answer on fd: 1 with *m filled, 0 when the helper closed, -1 on timeout. */
static int read_answer(int fd, struct devmem_helper_msg *m, int timeout_ms)
{
    unsigned char buf[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];
    size_t have = 0;

    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        struct devmem_err e;
        ssize_t n = devmem_helper_parse(buf, have, 0, m, &e);

        if (n > 0) {
            return 1;
        }
        if (n < 0) {
            printf("      (unparsable answer: %s)\n", e.msg);
            return 0;
        }
        if (poll(&p, 1, timeout_ms) <= 0) {
            return -1;
        }
        n = recv(fd, buf + have, sizeof(buf) - have, 0);
        if (n <= 0) {
            return 0;
        }
        have += (size_t) n;
    }
}

/* The next answer is an ERROR with code and words containing want. */
static int refused_within(int fd, int code, const char *want, int ms)
{
    struct devmem_helper_msg m;
    int r = read_answer(fd, &m, ms);

    if (1 != r || DEVMEM_HELPER_ERROR != m.type) {
        printf("      (answer: %s)\n", 1 != r ? (0 == r ? "closed" : "none") : "not an error");
        return 0;
    }
    printf("      helper said: [%s] %s\n", strerror(m.body.error.code), m.body.error.msg);
    return m.body.error.code == code && NULL != strstr(m.body.error.msg, want);
}

static int refused_with(int fd, int code, const char *want)
{
    return refused_within(fd, code, want, 5000);
}

/* The helper closes the connection (after its answer). */
static int closed(int fd)
{
    struct devmem_helper_msg m;
    return 0 == read_answer(fd, &m, 8000);
}

static int tcp_socket_at(int type, int do_listen, uint32_t addr)
{
    return hdtest_socket(type, do_listen, addr, false);
}

static int tcp_socket(int type, int do_listen)
{
    return tcp_socket_at(type, do_listen, INADDR_LOOPBACK);
}

static struct devmem_helper_client *client(void)
{
    return hdtest_client(sock_path);
}

static void status(struct devmem_helper_client *c, char *text, size_t len)
{
    struct devmem_err e;

    if (0 != devmem_helper_status(c, text, len, &e)) {
        snprintf(text, len, "(status failed: %s)", e.msg);
    }
}

/* bind-rx asks: exactly one queue, as most cases here; exactly n */
static const struct devmem_helper_rx_ask one_queue = {1, 0, false};

static int bind_rx_ask(struct devmem_helper_client *c, size_t bytes,
                       const struct devmem_helper_rx_ask *ask, struct devmem_helper_reply *r,
                       struct devmem_err *e)
{
    int buf = hdtest_memfd(bytes), lsd = tcp_socket(SOCK_STREAM, 1);
    int rc;

    devmem_err_clear(e);
    rc = devmem_helper_bind_rx(c, "lo", ask, buf, lsd, r, e);

    close(buf);
    close(lsd);
    return rc;
}

static int bind_rx_queues(struct devmem_helper_client *c, size_t bytes, unsigned int nqueues,
                          struct devmem_helper_reply *r, struct devmem_err *e)
{
    struct devmem_helper_rx_ask ask = {nqueues, 0, false};

    return bind_rx_ask(c, bytes, &ask, r, e);
}

static int bind_rx(struct devmem_helper_client *c, size_t bytes, struct devmem_helper_reply *r,
                   struct devmem_err *e)
{
    return bind_rx_queues(c, bytes, 1, r, e);
}

/* Run fn in a child under uid/gid; its exit status is the number of failures. */
static int as_user(uid_t uid, gid_t gid, int (*fn)(void))
{
    pid_t pid = fork();
    int st = 0;

    if (0 == pid) {
        if (0 != setgroups(0, NULL) || 0 != setgid(gid) || 0 != setuid(uid)) {
            perror("drop privileges");
            _exit(1);
        }
        fflush(stdout);
        _exit(fn() ? 0 : 1);
    }
    waitpid(pid, &st, 0);
    return WIFEXITED(st) && 0 == WEXITSTATUS(st);
}

/* nobody's TX binding beside root's RX bindings is granted (an RX binding sends nothing);
 * a second user's TX binding beside it is refused while nobody holds it, and granted after */
/* A TX binding on lo, on a connection of its own (left in *c): its result, said as who. */
static int bind_tx_as(const char *who, struct devmem_helper_client **c, struct devmem_err *e)
{
    uint32_t id = 0;
    int buf = hdtest_memfd(1 << 20), rc;

    *c = client();
    devmem_err_clear(e);
    rc = devmem_helper_bind_tx(*c, "lo", buf, &id, e);
    close(buf);
    printf("      %s: %s\n", who, 0 == rc ? "granted" : e->msg);
    fflush(stdout);
    return rc;
}

static int nobody_tx_beside_rx(void)
{
    struct devmem_helper_client *c;
    struct devmem_err e;

    if (0 != bind_tx_as("nobody's bind-tx beside root's RX bindings", &c, &e)) {
        return 0;
    }
    /* hold it while the parent checks that another user is refused, then let go */
    printf("holding\n");
    fflush(stdout);
    (void) getchar();
    devmem_helper_close(c);
    return 1;
}

static int outsider_refused(void)
{
    int fd = raw_connect();
    int ok;

    send_hello(fd);
    ok = refused_with(fd, EACCES, "allow-group") && closed(fd);
    fflush(stdout);
    return ok;
}

static int second_user_tx_refused(void)
{
    struct devmem_helper_client *c;
    struct devmem_err e;
    int rc = bind_tx_as("uid 12346's bind-tx beside nobody's", &c, &e);

    devmem_helper_close(c);
    return EBUSY == -rc && NULL != strstr(e.msg, "tx-shared no")
           && NULL != strstr(e.msg, "uid 65534 holds a TX binding");
}

static int tx_sharing(void)
{
    int to_child[2], from_child[2], ok = 1;
    char line[64] = "";
    struct devmem_helper_client *root = NULL;
    struct devmem_err e;
    pid_t pid;
    FILE *in;

    if (0 != pipe(to_child) || 0 != pipe(from_child)) {
        return 0;
    }
    if (0 == (pid = fork())) {
        dup2(to_child[0], 0);
        dup2(from_child[1], 1);
        close(to_child[1]); /* so that the parent's close is the end of input */
        close(from_child[0]);
        if (0 != setgroups(0, NULL) || 0 != setgid(NOBODY) || 0 != setuid(NOBODY)) {
            _exit(1);
        }
        _exit(nobody_tx_beside_rx() ? 0 : 1);
    }
    close(to_child[0]);
    close(from_child[1]);
    in = fdopen(from_child[0], "r");
    while (NULL != fgets(line, sizeof(line), in) && 0 != strcmp(line, "holding\n")) {
        fputs(line, stdout);
    }
    if (0 != strcmp(line, "holding\n")) {
        ok = 0;
    } else {
        ok &= as_user(12346, NOBODY, second_user_tx_refused);
        ok &= 0 == bind_tx_as("root's bind-tx beside nobody's", &root, &e);
    }
    close(to_child[1]);
    waitpid(pid, NULL, 0);
    fclose(in);
    devmem_helper_close(root);
    return ok;
}

int main(int argc, char **argv)
{
    struct devmem_helper_client *good, *other;
    struct devmem_helper_reply r, r2;
    struct devmem_err e;
    char text[DEVMEM_HELPER_BODY_MAX];
    int fd, buf, lsd, fds[3];

    if (argc < 2) {
        fprintf(stderr, "usage: helperd_clients SOCKET [refused-user | kernel-refuses IFNAME [ADDR] | foreign-netns | strays | share]\n");
        return 2;
    }
    sock_path = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc > 3 && 0 == strcmp(argv[2], "kernel-refuses")) {
        struct in_addr at = {htonl(INADDR_LOOPBACK)};
        if (argc > 4 && 1 != inet_pton(AF_INET, argv[4], &at)) {
            fprintf(stderr, "bad address %s\n", argv[4]);
            return 2;
        }
        good = client();
        buf = hdtest_memfd(1 << 20);
        lsd = tcp_socket_at(SOCK_STREAM, 1, ntohl(at.s_addr)); /* on IFNAME's address */
        devmem_err_clear(&e);
        CHECK(-EOPNOTSUPP == devmem_helper_bind_rx(good, argv[3], &one_queue, buf, lsd, &r, &e)
                  && NULL != strstr(e.msg, "the kernel refuses bind-rx on ")
                  && NULL != strstr(e.msg, "(kernel"),
              "bind-rx on %s: the kernel's refusal comes back: %s", argv[3], e.msg);
        printf("kernel-said: %s\n", e.msg);
        status(good, text, sizeof(text));
        CHECK(0 == strncmp(text, "clients=1 bindings=0 rules=0 ", 29),
              "and the helper holds nothing for it: %.60s", text);
        devmem_helper_close(good);
        return check_finish();
    }
    if (argc > 2 && 0 == strcmp(argv[2], "foreign-netns")) {
        good = client();
        buf = hdtest_memfd(1 << 20);
        lsd = tcp_socket(SOCK_STREAM, 1);
        devmem_err_clear(&e);
        CHECK(-EXDEV == devmem_helper_bind_rx(good, "lo", &one_queue, buf, lsd, &r, &e),
              "a listening socket of another network namespace is refused: %s", e.msg);
        devmem_helper_close(good);
        return check_finish();
    }
    if (argc > 2 && 0 == strcmp(argv[2], "strays")) {
        static const struct {
            unsigned int n, first; /* first 0: refused, no queue left */
        } want[] = {{2, 1}, {1, 4}, {2, 7}, {1, 0}};

        good = client();
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
            int rc = bind_rx_queues(good, 1 << 20, want[i].n, &r, &e);

            if (0 == want[i].first) {
                CHECK(-EBUSY == rc, "%u queue(s) more: refused, the strays' queues stay free "
                      "(%s)", want[i].n, 0 == rc ? "granted" : e.msg);
            } else {
                CHECK(0 == rc && want[i].first == r.first_queue && want[i].n == r.nqueues,
                      "%u queue(s): %u-%u, around the strays' 3 and 5-6 (%s)", want[i].n,
                      r.first_queue, r.first_queue + r.nqueues - 1, 0 == rc ? "granted" : e.msg);
            }
        }
        devmem_helper_close(good);
        return check_finish();
    }
    if (argc > 2 && 0 == strcmp(argv[2], "share")) { /* a helper with lo queues 1-4 */
        struct devmem_helper_client *rank[5];
        struct devmem_helper_rx_ask wish = {4, 4, true}, exact = {4, 2, false};
        char want[64];
        int rc;

        /* four ranks of a node each wish for 4 queues: each gets its share, one */
        for (int i = 0; i < 4; i++) {
            rank[i] = client();
            CHECK(2 == devmem_helper_version(rank[i]), "version 2 agreed (%u)",
                  devmem_helper_version(rank[i]));
            rc = bind_rx_ask(rank[i], 1 << 20, &wish, &r, &e);
            CHECK(0 == rc && 1 == r.nqueues && (unsigned int) i + 1 == r.first_queue,
                  "rank %d of 4 sharers wishing for 4: queue %u (%u granted; %s)", i,
                  r.first_queue, 0 == rc ? r.nqueues : 0, 0 == rc ? "granted" : e.msg);
        }
        /* a fifth finds none, and hears who holds them */
        rank[4] = client();
        snprintf(want, sizeof(want), "(1-4 pid %d)", (int) getpid());
        rc = bind_rx_ask(rank[4], 1 << 20, &wish, &r, &e);
        CHECK(-EBUSY == rc && NULL != strstr(e.msg, want),
              "a fifth rank is refused, naming the holders %s: %s", want,
              0 == rc ? "granted" : e.msg);
        status(rank[4], text, sizeof(text));
        CHECK(NULL != strstr(text, "interface lo: queues 1-4, 4 bound (1-4 pid "),
              "the status shows who holds the queues: %.120s",
              NULL != strstr(text, "interface lo") ? strstr(text, "interface lo") : text);
        devmem_helper_close(rank[2]);
        devmem_helper_close(rank[3]);
        usleep(200 * 1000); /* the helper undoes a closed connection's bindings */
        status(rank[4], text, sizeof(text));
        snprintf(want, sizeof(want), "2 bound (1-2 pid %d, 3-4 free)", (int) getpid());
        CHECK(NULL != strstr(text, want), "two ranks gone: %s", want);
        /* exact counts keep their meaning: 4 asked, 2 free, refused */
        rc = bind_rx_ask(rank[4], 1 << 20, &exact, &r, &e);
        CHECK(-EBUSY == rc && NULL != strstr(e.msg, "no 4 free"),
              "an exact ask for 4 with 2 free is refused: %s", 0 == rc ? "granted" : e.msg);
        devmem_helper_close(rank[0]);
        devmem_helper_close(rank[1]);
        usleep(200 * 1000);
        /* two sharers: 2 each */
        wish.sharers = 2;
        rank[0] = client();
        rank[1] = client();
        for (int i = 0; i < 2; i++) {
            rc = bind_rx_ask(rank[i], 1 << 20, &wish, &r, &e);
            CHECK(0 == rc && 2 == r.nqueues && (unsigned int) (1 + 2 * i) == r.first_queue,
                  "rank %d of 2 sharers: queues %u-%u (%s)", i, r.first_queue,
                  r.first_queue + r.nqueues - 1, 0 == rc ? "granted" : e.msg);
        }
        /* one rank alone (sharers unknown) takes what is free, fewer than it wished */
        devmem_helper_close(rank[1]);
        usleep(200 * 1000);
        wish.sharers = 0;
        rc = bind_rx_ask(rank[4], 1 << 20, &wish, &r, &e);
        CHECK(0 == rc && 2 == r.nqueues && 3 == r.first_queue,
              "a wish for 4 with 2 free gets those 2: %u-%u (%s)", r.first_queue,
              r.first_queue + r.nqueues - 1, 0 == rc ? "granted" : e.msg);
        devmem_helper_close(rank[0]);
        devmem_helper_close(rank[4]);
        return check_finish();
    }
    if (argc > 2 && 0 == strcmp(argv[2], "refused-user")) {
        CHECK(as_user(12345, NOBODY, outsider_refused),
              "a uid in none of the allowed groups is refused at hello, naming allow-group");
        good = client(); /* that helper also says allow-tx no */
        buf = hdtest_memfd(1 << 20);
        devmem_err_clear(&e);
        CHECK(-EACCES == devmem_helper_bind_tx(good, "lo", buf, &r.binding_id, &e)
                  && NULL != strstr(e.msg, "allow-tx no"),
              "allow-tx no: no TX binding, not even for root: %s", e.msg);
        devmem_helper_close(good);
        return check_finish();
    }

    /* a good client, connected throughout */
    good = client();
    CHECK(0 == bind_rx(good, 8 << 20, &r, &e) && r.binding_id > 0 && r.first_queue >= 1
              && r.first_queue <= 4 && 1 == r.nqueues && r.rule_id > 0,
          "a good client binds 8 MiB to lo, queue %u, rule %u (%s)", r.first_queue, r.rule_id,
          e.msg);

    /* garbage */
    fd = raw_connect();
    raw_send(fd, "GET / HTTP/1.0\r\n\r\n", 18, NULL, 0);
    CHECK(refused_with(fd, EPROTO, "bad magic") && closed(fd),
          "garbage is answered with the reason and the connection closed");
    close(fd);

    /* a wrong protocol version in the header, and in hello */
    fd = raw_connect();
    {
        struct devmem_helper_hello hello = {1, 1, 0};
        send_msg(fd, 2, DEVMEM_HELPER_HELLO, sizeof(hello), &hello, sizeof(hello), NULL, 0);
    }
    CHECK(refused_with(fd, EPROTO, "version 2") && closed(fd), "a version-2 header is refused");
    close(fd);
    fd = raw_connect();
    {
        struct devmem_helper_hello hello = {3, 4, 0};
        send_msg(fd, 1, DEVMEM_HELPER_HELLO, sizeof(hello), &hello, sizeof(hello), NULL, 0);
    }
    CHECK(refused_with(fd, EPROTO, "versions 3-4") && closed(fd),
          "a hello offering only versions 3-4 is refused");
    close(fd);
    /* a client of version 1 (before sharers) is still served, in version 1 */
    fd = raw_connect();
    send_hello(fd);
    {
        struct devmem_helper_msg m;
        int got = read_answer(fd, &m, 5000);

        CHECK(1 == got && DEVMEM_HELPER_REPLY == m.type && 1 == m.body.reply.version,
              "a hello offering version 1 only is answered with version 1 (%s, version %u)",
              1 == got ? "answered" : "no answer", 1 == got ? m.body.reply.version : 0);
    }
    close(fd);

    /* a request before hello */
    fd = raw_connect();
    send_msg(fd, 1, DEVMEM_HELPER_STATUS, 0, NULL, 0, NULL, 0);
    CHECK(refused_with(fd, EPROTO, "must be hello") && closed(fd), "no request before hello");
    close(fd);

    /* oversized: a body beyond its type's size, and beyond any size */
    fd = raw_connect();
    send_hello(fd);
    CHECK(1 == read_answer(fd, &(struct devmem_helper_msg){0}, 5000), "hello answered");
    {
        static char big[8192];
        send_msg(fd, 1, DEVMEM_HELPER_RELEASE, sizeof(big), big, sizeof(big), NULL, 0);
    }
    CHECK(refused_with(fd, EPROTO, "body of 8192 bytes") && closed(fd),
          "an oversized release is refused without reading its body");
    close(fd);
    fd = raw_connect();
    send_msg(fd, 1, DEVMEM_HELPER_STATUS_TEXT, 1u << 30, "x", 1, NULL, 0);
    CHECK(refused_with(fd, EPROTO, "1073741824 bytes") && closed(fd),
          "a 1 GiB length is refused at the header");
    close(fd);

    /* truncated: half a message, then nothing: dropped at the message deadline, told why */
    fd = raw_connect();
    raw_send(fd, "\x44\x4d\x48\x50\x01\x00", 6, NULL, 0);
    CHECK(refused_with(fd, ETIMEDOUT, "left unfinished") && closed(fd),
          "half a header and silence: dropped at the message deadline, told why");
    close(fd);
    /* nothing at all: dropped at the hello deadline, told why */
    fd = raw_connect();
    CHECK(refused_within(fd, ETIMEDOUT, "no hello within", 8000) && closed(fd),
          "a connection that says nothing: dropped at the hello deadline, told why");
    close(fd);
    /* truncated: half a message, then the client hangs up: nothing left behind */
    fd = raw_connect();
    send_hello(fd);
    (void) read_answer(fd, &(struct devmem_helper_msg){0}, 5000);
    buf = hdtest_memfd(1 << 20);
    lsd = tcp_socket(SOCK_STREAM, 1);
    fds[0] = buf;
    fds[1] = lsd;
    {
        struct devmem_helper_bind_rx req = {"lo", 1, 0};
        send_msg(fd, 1, DEVMEM_HELPER_BIND_RX, sizeof(req), &req, 8, fds, 2);
    }
    close(fd);

    /* a reply type sent as a request; wrong descriptor counts */
    fd = raw_connect();
    send_hello(fd);
    (void) read_answer(fd, &(struct devmem_helper_msg){0}, 5000);
    {
        struct devmem_helper_reply rep = {0};
        send_msg(fd, 1, DEVMEM_HELPER_REPLY, sizeof(rep), &rep, sizeof(rep), NULL, 0);
    }
    CHECK(refused_with(fd, EPROTO, "not a request") && closed(fd), "a reply is not a request");
    close(fd);
    fd = raw_connect();
    send_hello(fd);
    (void) read_answer(fd, &(struct devmem_helper_msg){0}, 5000);
    {
        struct devmem_helper_bind_rx req = {"lo", 1, 0};
        send_msg(fd, 1, DEVMEM_HELPER_BIND_RX, sizeof(req), &req, sizeof(req), fds, 1);
    }
    CHECK(refused_with(fd, EPROTO, "it takes 2") && closed(fd),
          "bind-rx with one descriptor is refused");
    close(fd);
    fd = raw_connect();
    fds[2] = buf;
    {
        struct devmem_helper_hello hello = {1, 1, 0};
        send_msg(fd, 1, DEVMEM_HELPER_HELLO, sizeof(hello), &hello, sizeof(hello), fds, 3);
    }
    CHECK(refused_with(fd, EPROTO, "more than 2 descriptors") && closed(fd),
          "three descriptors with one message are refused");
    close(fd);

    /* requests that parse but are not allowed: the connection stays */
    other = client();
    {
        int pipefd[2];
        if (0 != pipe2(pipefd, O_CLOEXEC)) {
            return 1;
        }
        CHECK(-EBADF == devmem_helper_bind_rx(other, "lo", &one_queue, pipefd[0], lsd, &r2, &e)
                  && NULL != strstr(e.msg, "not one"),
              "a pipe passed as the dmabuf is refused: %s", e.msg);
        close(pipefd[0]);
        close(pipefd[1]);
    }
    {
        int udp = tcp_socket(SOCK_DGRAM, 0), idle = tcp_socket(SOCK_STREAM, 0);
        CHECK(-ENOTSOCK == devmem_helper_bind_rx(other, "lo", &one_queue, buf, udp, &r2, &e),
              "a UDP socket is no device-flow socket: %s", e.msg);
        CHECK(-EINVAL == devmem_helper_bind_rx(other, "lo", &one_queue, buf, idle, &r2, &e)
                  && NULL != strstr(e.msg, "not listening"),
              "a bound socket that does not listen has no port to steer: %s", e.msg);
        CHECK(-ENOTSOCK == devmem_helper_bind_rx(other, "lo", &one_queue, buf, buf, &r2, &e),
              "a memfd passed as the socket: %s", e.msg);
        close(udp);
        close(idle);
    }
    {
        int any = tcp_socket_at(SOCK_STREAM, 1, INADDR_ANY);
        int elsewhere = tcp_socket_at(SOCK_STREAM, 1, INADDR_LOOPBACK + 1); /* 127.0.0.2 */
        int file = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
        CHECK(-EINVAL == devmem_helper_bind_rx(other, "lo", &one_queue, buf, any, &r2, &e)
                  && NULL != strstr(e.msg, "wildcard"),
              "a socket on the wildcard address (port for every address): %s", e.msg);
        CHECK(-EADDRNOTAVAIL == devmem_helper_bind_rx(other, "lo", &one_queue, buf, elsewhere, &r2, &e),
              "a socket on an address lo does not have: %s", e.msg);
        CHECK(-EBADF == devmem_helper_bind_rx(other, "lo", &one_queue, file, lsd, &r2, &e),
              "a plain file passed as the dmabuf: %s", e.msg);
        {
            int picked = hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, true), reuse = tcp_socket(
                SOCK_STREAM, 0), on = 1;
            CHECK(-EINVAL == devmem_helper_bind_rx(other, "lo", &one_queue, buf, picked, &r2, &e)
                      && NULL != strstr(e.msg, "ephemeral range"),
                  "a port the kernel picked (shutdown() would give it back): %s", e.msg);
            setsockopt(reuse, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
            listen(reuse, 4);
            CHECK(-EINVAL == devmem_helper_bind_rx(other, "lo", &one_queue, buf, reuse, &r2, &e)
                      && NULL != strstr(e.msg, "SO_REUSEADDR"),
                  "a socket with SO_REUSEADDR (its port could be shared): %s", e.msg);
            close(picked);
            close(reuse);
        }
        close(any);
        close(elsewhere);
        close(file);
    }
    CHECK(-EACCES == devmem_helper_bind_rx(other, "eth0", &one_queue, buf, lsd, &r2, &e)
              && NULL != strstr(e.msg, "refused by policy (interface"),
          "an interface outside the policy: %s", e.msg);
    CHECK(-ENOENT == devmem_helper_release(other, r.binding_id, &e),
          "another connection's binding %u cannot be released: %s", r.binding_id, e.msg);
    CHECK(-ENOENT == devmem_helper_release(other, 0x7fffffff, &e),
          "an unknown binding id: %s", e.msg);
    CHECK(-EDQUOT == bind_rx(other, 128 << 20, &r2, &e) && NULL != strstr(e.msg, "max-bytes"),
          "128 MiB is over max-bytes: %s", e.msg);
    CHECK(0 == bind_rx(other, 1 << 20, &r2, &e), "a second binding (%s)", e.msg);
    CHECK(0 == bind_rx(other, 1 << 20, &r2, &e), "a third binding (%s)", e.msg);
    CHECK(-EDQUOT == bind_rx(other, 1 << 20, &r2, &e) && NULL != strstr(e.msg, "max-bindings 3"),
          "a fourth binding for the same user: %s", e.msg);
    CHECK((devmem_err_clear(&e), 0 == devmem_helper_release(other, r2.binding_id, &e)),
          "release one of them (%s)", e.msg);
    CHECK(0 == bind_rx(other, 1 << 20, &r2, &e), "and bind again (%s)", e.msg);
    /* TX: beside another user's RX bindings, granted; beside another user's TX binding,
     * refused, except to root */
    devmem_helper_close(other);
    usleep(200 * 1000); /* the helper undoes a closed connection's bindings */
    CHECK(tx_sharing(), "TX bindings: granted beside another user's RX bindings, refused beside "
          "another user's TX binding, never to root");

    /* the port must stay the client's: shutting its listening socket down ends the rule */
    {
        int held = tcp_socket(SOCK_STREAM, 1), mine = hdtest_memfd(1 << 20);
        char want[64];
        devmem_err_clear(&e);
        CHECK(0 == devmem_helper_bind_rx(good, "lo", &one_queue, mine, held, &r2, &e),
              "a second binding for the good client (%s)", e.msg);
        shutdown(held, SHUT_RDWR);
        usleep(300 * 1000);
        status(good, text, sizeof(text));
        snprintf(want, sizeof(want), "binding %u:", r2.binding_id);
        CHECK(NULL == strstr(text, want) && 0 == strncmp(text, "clients=", 8),
              "shut down its listening socket: binding %u and its rule are gone",
              r2.binding_id);
        close(held);
        /* SO_REUSEADDR set after the binding: the once-a-second recheck drops it */
        held = tcp_socket(SOCK_STREAM, 1);
        CHECK(0 == devmem_helper_bind_rx(good, "lo", &one_queue, mine, held, &r2, &e),
              "a third binding for the good client (%s)", e.msg);
        {
            int one = 1;
            setsockopt(held, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        }
        usleep(1500 * 1000);
        status(good, text, sizeof(text));
        snprintf(want, sizeof(want), "binding %u:", r2.binding_id);
        CHECK(NULL == strstr(text, want) && 0 == strncmp(text, "clients=", 8),
              "SO_REUSEADDR set on a held socket: binding %u is gone within 1.5 s",
              r2.binding_id);
        close(held);
        close(mine);
    }
    /* half a message that holds descriptors, after hello: dropped at its deadline */
    fd = raw_connect();
    send_hello(fd);
    (void) read_answer(fd, &(struct devmem_helper_msg){0}, 5000);
    fds[0] = buf;
    fds[1] = lsd;
    raw_send(fd, "\x44", 1, fds, 2);
    CHECK(refused_with(fd, ETIMEDOUT, "left unfinished") && closed(fd),
          "one byte of a message with two descriptors, then silence: dropped, told why");
    close(fd);

    /* a flood of connections from one user */
    {
        int flood[40], refused = 0;
        for (int i = 0; i < 40; i++) {
            flood[i] = raw_connect();
        }
        for (int i = 0; i < 40; i++) {
            struct devmem_helper_msg m;
            struct pollfd p = {flood[i], POLLIN, 0};
            if (1 == poll(&p, 1, 50) && 1 == read_answer(flood[i], &m, 50)
                && DEVMEM_HELPER_ERROR == m.type
                && NULL != strstr(m.body.error.msg, "max-clients-per-user")) {
                refused++;
            }
        }
        /* the good client holds one connection, status asks on it: 19 more fit */
        CHECK(21 == refused, "a flood of 40 connections: %d refused by max-clients-per-user",
              refused);
        for (int i = 0; i < 40; i++) {
            close(flood[i]);
        }
    }

    /* the good client is still served, and still has its binding */
    usleep(200 * 1000);
    status(good, text, sizeof(text));
    printf("%s", text);
    CHECK(0 == strncmp(text, "clients=1 bindings=1 rules=1 ", 29),
          "after all of it: only the good client and its one binding remain");
    {
        char want[64];
        snprintf(want, sizeof(want), "binding %u: RX on lo", r.binding_id);
        CHECK(NULL != strstr(text, want), "the good client's binding %u is intact", r.binding_id);
    }
    CHECK((devmem_err_clear(&e), 0 == devmem_helper_release(good, r.binding_id, &e)),
          "the good client releases it (%s)", e.msg);
    status(good, text, sizeof(text));
    CHECK(0 == strncmp(text, "clients=1 bindings=0 rules=0 ", 29), "nothing is left bound");
    devmem_helper_close(good);
    close(buf);
    close(lsd);
    return check_finish();
}
