/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The helper protocol's codec: every message type round-trips; every way a hostile or
 * broken client can get a field wrong is refused with a reason; a message that has not
 * fully arrived is waited for, never guessed at.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "helper_proto.h"

#include "check.h"

static unsigned char buf[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX + 64];

/* Build type/body, spoil one byte at off (if off >= 0) and parse with nfds. */
static ssize_t spoiled(uint16_t type, const void *body, size_t len, long off, unsigned char v,
                       size_t nfds, struct devmem_err *e)
{
    struct devmem_helper_msg m;
    ssize_t n = devmem_helper_build(buf, sizeof(buf), type, 7, body, len);

    if (n <= 0) {
        return -1000;
    }
    if (off >= 0) {
        buf[off] = v;
    }
    memset(e, 0, sizeof(*e));
    return devmem_helper_parse(buf, (size_t) n, nfds, &m, e);
}

int main(void)
{
    const size_t H = sizeof(struct devmem_helper_hdr);
    struct devmem_helper_hello hello = {1, 1, 0};
    struct devmem_helper_bind_rx rx = {"eth0", 1, 0};
    struct devmem_helper_bind_tx tx = {"ens1f0np0"};
    struct devmem_helper_release rel = {42, 0};
    struct devmem_helper_reply rep = {1, 42, 15, 1, 7, 0};
    struct devmem_helper_error er = {EOPNOTSUPP, 0, "bind-rx on eth0: Operation not supported "
                                                   "(kernel: device does not support devmem)"};
    const char status[] = "clients=1 bindings=2 rules=1\neth0: queues 14-15 bound\n";
    struct devmem_helper_msg m;
    struct devmem_err e;
    ssize_t n;

    /* round trips */
    n = devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_BIND_RX, 9, &rx, sizeof(rx));
    CHECK(n == (ssize_t) (H + sizeof(rx)), "bind-rx builds to %zd bytes", n);
    CHECK(n == devmem_helper_parse(buf, (size_t) n, 2, &m, &e) && DEVMEM_HELPER_BIND_RX == m.type
          && 9 == m.seq && 0 == strcmp("eth0", m.body.bind_rx.ifname) && 1 == m.body.bind_rx.nqueues,
          "bind-rx parses back with 2 descriptors");
    for (size_t cut = 0; cut < (size_t) n; cut++) {
        if (0 != devmem_helper_parse(buf, cut, 2, &m, &e)) {
            CHECK(0, "the first %zu bytes of bind-rx: wait for more", cut);
            break;
        }
    }
    CHECK(1, "every proper prefix of a message waits for more");
    n = devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_ERROR, 3, &er, sizeof(er));
    CHECK(n > 0 && n == devmem_helper_parse(buf, (size_t) n, 0, &m, &e)
          && 0 == strcmp(er.msg, m.body.error.msg) && EOPNOTSUPP == m.body.error.code,
          "an error carries its errno and the kernel's words");
    n = devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_STATUS_TEXT, 4, status, sizeof(status));
    CHECK(n > 0 && n == devmem_helper_parse(buf, (size_t) n, 0, &m, &e)
          && 0 == strcmp(status, m.body.text), "a status text round-trips");
    CHECK(devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_HELLO, 1, &hello, sizeof(hello)) > 0
          && devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_BIND_TX, 1, &tx, sizeof(tx)) > 0
          && devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_RELEASE, 1, &rel, sizeof(rel)) > 0
          && devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_REPLY, 1, &rep, sizeof(rep)) > 0
          && devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_STATUS, 1, NULL, 0) > 0,
          "hello, bind-tx, release, reply and status build");

    /* the header */
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS, NULL, 0, 0, 'X', 0, &e)
          && NULL != strstr(e.msg, "magic"), "bad magic: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS, NULL, 0, 4, 9, 0, &e)
          && NULL != strstr(e.msg, "version 9"), "another version: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS, NULL, 0, 6, 99, 0, &e)
          && NULL != strstr(e.msg, "unknown message type 99"), "unknown type: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_RELEASE, &rel, sizeof(rel), 12, 9, 0, &e),
          "a body of the wrong size: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS_TEXT, status, sizeof(status), 14, 0x7f, 0, &e),
          "a status text longer than any: \"%s\"", e.msg);

    /* descriptors */
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), -1, 0, 1, &e)
          && NULL != strstr(e.msg, "1 file descriptors, it takes 2"), "bind-rx without its "
          "listen socket: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS, NULL, 0, -1, 0, 1, &e),
          "a descriptor nobody asked for: \"%s\"", e.msg);

    /* bodies */
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 6, 'x', 2, &e)
          && NULL != strstr(e.msg, "after the interface"), "bytes after the name's NUL: \"%s\"",
          e.msg);
    memset(rx.ifname, 'a', sizeof(rx.ifname));
    CHECK(-1000 == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), -1, 0, 2, &e),
          "an unterminated name is never built");
    memset(rx.ifname, 0, sizeof(rx.ifname));
    strcpy(rx.ifname, "eth0");
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 15, 'x', 2, &e),
          "a byte in the last place of the name field: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 1, '/', 2, &e)
          && NULL != strstr(e.msg, "0x2f"), "a '/' in the name: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 0, 0, 2, &e)
          && NULL != strstr(e.msg, "empty"), "an empty name: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 16, 200, 2, &e)
          && NULL != strstr(e.msg, "200 queues"), "too many queues: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 22, 0x80, 2, &e)
              && NULL != strstr(e.msg, "flags 0x80"), "an unknown bind-rx flag: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_BIND_RX, &rx, sizeof(rx), H + 21, 0x20, 2, &e)
              && NULL != strstr(e.msg, "8192 sharers"),
          "more sharers than a host has: \"%s\"", e.msg);
    memset(tx.ifname, 0, sizeof(tx.ifname));
    strcpy(tx.ifname, "..");
    CHECK(-1000 == spoiled(DEVMEM_HELPER_BIND_TX, &tx, sizeof(tx), -1, 0, 1, &e),
          "the name \"..\" is never built");
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_REPLY, &rep, sizeof(rep), H + 12, 200, 0, &e)
          && NULL != strstr(e.msg, "queues"), "a reply with 200 queues: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_RELEASE, &rel, sizeof(rel), H + 0, 0, 0, &e)
          && NULL != strstr(e.msg, "binding 0"), "release of binding 0: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_HELLO, &hello, sizeof(hello), H + 0, 5, 0, &e),
          "a hello whose versions run backwards: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_ERROR, &er, sizeof(er), H + 8 + 255, 'x', 0, &e)
          && NULL != strstr(e.msg, "after the end of the error text"), "a byte after the error "
          "text's end: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_ERROR, &er, sizeof(er), H + 0, 0, 0, &e),
          "error code 0: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS_TEXT, status, sizeof(status), H + 3, 0, 0, &e),
          "a status text with a NUL inside: \"%s\"", e.msg);
    CHECK(-EPROTO == spoiled(DEVMEM_HELPER_STATUS_TEXT, status, sizeof(status), H + 3, 27, 0, &e)
          && NULL != strstr(e.msg, "0x1b"), "an escape character in the status: \"%s\"", e.msg);
    CHECK(-EINVAL == devmem_helper_build(buf, sizeof(buf), DEVMEM_HELPER_RELEASE, 1, &rel, 4),
          "build refuses a body of the wrong size");
    CHECK(-ENOBUFS == devmem_helper_build(buf, 20, DEVMEM_HELPER_RELEASE, 1, &rel, sizeof(rel)),
          "build refuses a buffer too small");
    return check_finish();
}
