/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the netlink reply parsers (family lookup, bind, dev-get, queue dump,
 * and the attribute walker under them), fed replies a misbehaving or newer kernel could
 * send. The first byte picks the parser and whether the rest is taken as it stands or as
 * records that build netlink messages with the right sequence number and sane lengths
 * (then the attributes inside are the fuzzer's), so the attribute code is reached without a
 * seed corpus. The buffer is a heap block of exactly its length.
 */
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "netlink.h"
#include "netlink_dev.h"

#define SEQ 0x5eed

/* Records: type selector (1), payload length (1), then that many payload bytes. */
static size_t build(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    static const uint16_t types[] = {NLMSG_ERROR, NLMSG_DONE, GENL_ID_CTRL, 0x20, NLMSG_NOOP};
    size_t used = 0;

    while (n >= 2) {
        size_t plen = in[1], msglen;
        struct nlmsghdr h;

        if (plen > n - 2) {
            plen = n - 2;
        }
        msglen = NLMSG_HDRLEN + plen;
        if (used + NLMSG_ALIGN(msglen) > cap) {
            break;
        }
        memset(&h, 0, sizeof(h));
        h.nlmsg_len = (uint32_t) msglen;
        h.nlmsg_type = types[in[0] % (sizeof(types) / sizeof(types[0]))];
        h.nlmsg_flags = (in[0] & 0x80) ? NLM_F_MULTI : 0;
        h.nlmsg_seq = (in[0] & 0x40) ? in[0] : SEQ;
        memcpy(out + used, &h, sizeof(h));
        memcpy(out + used + NLMSG_HDRLEN, in + 2, plen);
        memset(out + used + msglen, 0, NLMSG_ALIGN(msglen) - msglen);
        used += NLMSG_ALIGN(msglen);
        in += 2 + plen;
        n -= 2 + plen;
    }
    return used;
}

static int count_attr(uint16_t type, const void *payload, size_t len, void *arg)
{
    (void) type;
    (void) payload;
    (void) len;
    ++*(size_t *) arg;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct devmem_nl_queues q;
    struct devmem_nl_status st;
    struct devmem_nl_dev dev;
    struct devmem_err err;
    uint64_t cmds = 0;
    uint32_t binding = 0;
    uint16_t family = 0;
    size_t len, attrs = 0;
    uint8_t mode, *buf;
    int rc = 0;

    if (size < 1) {
        return 0;
    }
    mode = data[0];
    data++;
    size--;
    buf = malloc(size > 0 ? 2 * size + 64 : 1);
    if (NULL == buf) {
        return 0;
    }
    len = (mode & 0x80) ? build(data, size, buf, 2 * size + 64) : size;
    if (!(mode & 0x80)) {
        memcpy(buf, data, size);
    }
    buf = realloc(buf, len > 0 ? len : 1); /* exactly len bytes: overreads are reported */
    if (NULL == buf) {
        return 0;
    }
    memset(&st, 0, sizeof(st));
    devmem_err_clear(&err);
    switch (mode % 5) {
    case 0: rc = devmem_nl_parse_family(buf, len, SEQ, &family, &cmds, &st, &err); break;
    case 1: rc = devmem_nl_parse_bind(buf, len, SEQ, &binding, &st, &err); break;
    case 2: rc = devmem_nl_parse_dev(buf, len, SEQ, &dev, &st, &err); break;
    case 3:
        memset(&q, 0, sizeof(q));
        rc = devmem_nl_parse_queues(buf, len, SEQ, &q, &st, &err);
        break;
    default: rc = devmem_nl_attrs_walk(buf, len, count_attr, &attrs); break;
    }
    FUZZ_MUST(rc >= -4095 && rc <= 1, "the parsers return 1, 0 or -errno");
    if (rc < 0 && mode % 5 != 4) {
        FUZZ_MUST('\0' != err.msg[0], "a malformed reply is described");
    }
    if (1 == rc) {
        FUZZ_MUST(st.error >= 0, "the kernel's errno is kept positive");
        FUZZ_MUST(memchr(st.msg, '\0', sizeof(st.msg)) != NULL, "the extack text is terminated");
    }
    free(buf);
    return 0;
}
