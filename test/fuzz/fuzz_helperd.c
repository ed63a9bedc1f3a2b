/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: devmem-helperd's request handling, as a hostile local client reaches it
 * (serve.c, requests.c, inspect.c and closer.c on the emulated kernel, policy "interface lo
 * queues 1-8"). Each input is a connection: a series of writes, each with descriptors of
 * the kinds a client can pass (a memfd, a listening TCP socket on 127.0.0.1, a pipe, an
 * eventfd, an epoll file, a unix socket, a plain file), then the hang-up.
 *
 * Input: chunks of [op byte][kinds byte][length byte][length bytes]. The op says what the
 * bytes become: themselves, or a well-formed hello, bind-rx on lo, bind-tx, release or status
 * whose fields they fill (so that inputs reach past the parser). The kinds byte's low 3 bits
 * are how many descriptors come with the chunk (up to 7: more than a message takes), its
 * high bits which kinds.
 *
 * Promises: after the hang-up the helper holds no client, binding or rule, and once its
 * closes have run, not one descriptor more than before the input (every passed descriptor
 * closed, on every path).
 */
#include "config.h"

#include "helperd.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz.h"
#include "helperd_test.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

static struct helperd hd;

static int open_fds(void)
{
    int n = 0;

    for (int fd = 0; fd < 4096; fd++) {
        n += fcntl(fd, F_GETFD) >= 0;
    }
    return n;
}

static void setup(void)
{
    char path[] = "/tmp/fuzz_helperd.XXXXXX";
    int fd = mkstemp(path), s;
    static const char policy[] = "interface lo queues 1-8\nmax-bindings 4\nmax-rules 4\n";
    struct devmem_err e;
    socklen_t len = sizeof(hd.netns_cookie);

    FUZZ_MUST(fd >= 0 && (ssize_t) strlen(policy) == write(fd, policy, strlen(policy)),
              "the policy file is written");
    close(fd);
    FUZZ_MUST(0 == hd_policy_load(&hd.policy, path, &e), "the policy loads");
    unlink(path);
    hd.be = &hd_backend_emulated;
    s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    FUZZ_MUST(0 == getsockopt(s, SOL_SOCKET, SO_NETNS_COOKIE, &hd.netns_cookie, &len),
              "the network namespace has a cookie");
    close(s);
    hd_log_setup(true, false);
    (void) hd_closer_init();
}

static int make_fd(unsigned int kind)
{
    int fd = -1, pair[2];

    switch (kind % 7) {
    case 0:
        fd = memfd_create("fuzz", MFD_CLOEXEC);
        if (fd >= 0 && 0 != ftruncate(fd, 1 << 20)) {
            close(fd);
            fd = -1;
        }
        return fd;
    case 1: return hdtest_socket(SOCK_STREAM, true, INADDR_LOOPBACK, false);
    case 2:
        if (0 != pipe2(pair, O_CLOEXEC)) {
            return -1;
        }
        close(pair[1]);
        return pair[0];
    case 3: return eventfd(0, EFD_CLOEXEC);
    case 4: return epoll_create1(EPOLL_CLOEXEC);
    case 5:
        if (0 != socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)) {
            return -1;
        }
        close(pair[1]);
        return pair[0];
    default: return open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
}

static void send_chunk(int fd, const uint8_t *data, size_t len, unsigned int kinds)
{
    int fds[7];
    size_t nfds = 0;

    for (unsigned int i = 0; i < (kinds & 7); i++) {
        int f = make_fd((kinds >> 3) + i);
        if (f >= 0) {
            fds[nfds++] = f;
        }
    }
    (void) devmem_helper_sendmsg(fd, data, len, fds, nfds, 0);
    for (size_t i = 0; i < nfds; i++) {
        close(fds[i]);
    }
}

/* The message op asks for, its fields taken from data: its length, or 0 for raw bytes. */
static ssize_t well_formed(uint8_t op, const uint8_t *data, size_t len, unsigned char *out,
                           size_t cap)
{
    union {
        struct devmem_helper_hello hello;
        struct devmem_helper_bind_rx rx;
        struct devmem_helper_bind_tx tx;
        struct devmem_helper_release release;
        unsigned char bytes[64];
    } body;
    static const uint16_t types[] = {DEVMEM_HELPER_HELLO, DEVMEM_HELPER_BIND_RX,
                                     DEVMEM_HELPER_BIND_TX, DEVMEM_HELPER_RELEASE,
                                     DEVMEM_HELPER_STATUS};
    size_t blen[] = {sizeof(body.hello), sizeof(body.rx), sizeof(body.tx),
                     sizeof(body.release), 0};
    unsigned int i = op % 8;

    if (i >= sizeof(types) / sizeof(types[0])) {
        return 0;
    }
    /* the fields after the interface name come from data; the name is lo */
    size_t at = DEVMEM_HELPER_BIND_RX == types[i] || DEVMEM_HELPER_BIND_TX == types[i]
                    ? DEVMEM_HELPER_IFNAME : 0;

    memset(&body, 0, sizeof(body));
    memcpy(body.bytes + at, data, len < blen[i] - at ? len : blen[i] - at);
    if (0 != at) {
        memcpy(body.bytes, "lo", 3);
    }
    if (DEVMEM_HELPER_HELLO == types[i]) {
        body.hello.reserved = 0;
    } else if (DEVMEM_HELPER_RELEASE == types[i]) {
        body.release.reserved = 0;
    }
    return devmem_helper_build(out, cap, types[i], 1, &body, blen[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    struct hd_client *c;
    int sv[2], before, turn;
    unsigned int bindings, rules, contexts;
    char drain[8192];

    if (!ready) {
        setup();
        ready = true;
    }
    before = open_fds();
    FUZZ_MUST(0 == socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
              "a connection");
    hd_client_accept(&hd, sv[1]);
    c = hd.clients;
    FUZZ_MUST(NULL != c && c->fd == sv[1], "the connection is served");
    while (size >= 3 && NULL != c) {
        size_t len = data[2] < size - 3 ? data[2] : size - 3;
        unsigned char msg[sizeof(struct devmem_helper_hdr) + 256];
        ssize_t n = well_formed(data[0], data + 3, len, msg, sizeof(msg));

        if (n > 0) {
            send_chunk(sv[0], msg, (size_t) n, data[1]);
        } else {
            send_chunk(sv[0], data + 3, len, data[1]);
        }
        data += 3 + len;
        size -= 3 + len;
        turn = HD_MSGS_PER_USER;
        if (0 != hd_client_readable(&hd, c, &turn)) {
            hd_client_drop(&hd, c, "refused");
            c = NULL;
        }
        while (recv(sv[0], drain, sizeof(drain), MSG_DONTWAIT) > 0) {
        }
    }
    if (NULL != c) {
        hd_client_drop(&hd, c, "closed by the client");
    }
    close(sv[0]);
    hd_closer_drain(5000);
    hd_status_counts(&hd, &bindings, &rules, &contexts);
    FUZZ_MUST(NULL == hd.clients && 0 == hd.nclients && 0 == bindings && 0 == rules
                  && 0 == contexts, "the hang-up undoes everything");
    FUZZ_MUST(open_fds() == before, "every passed descriptor is closed");
    return 0;
}
