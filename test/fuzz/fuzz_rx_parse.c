/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the devmem control-message parser (devmem_rx_parse), fed control buffers
 * that a kernel bug, a different kernel version or memory corruption could hand it.
 *
 * The first bytes choose the call's sizes and flags. Then either the rest is the control
 * buffer as it stands, or (first bit set) it is read as records that build well-formed
 * cmsgs with one field each possibly spoiled, so the fuzzer reaches the deep checks without
 * a seed corpus. The buffer is a heap block of exactly its length: a read past it is an
 * AddressSanitizer report. On success the pieces must add up to what recvmsg returned.
 */
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "rx.h"

#define MAX_FRAGS 64

/* Records of 12 bytes: selector, spoil, then offset (2), size (4), token (4). */
static size_t build(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    size_t used = 0;

    for (; n >= 12; in += 12, n -= 12) {
        struct devmem_dmabuf_cmsg dc = {0};
        struct cmsghdr h;
        uint16_t off16;

        if (used + CMSG_SPACE(sizeof(dc)) > cap) {
            break;
        }
        memcpy(&off16, in + 2, 2);
        memcpy(&dc.frag_size, in + 4, 4);
        memcpy(&dc.frag_token, in + 8, 4);
        dc.frag_offset = off16;
        dc.frag_size %= 1u << 16;
        dc.dmabuf_id = in[0] >> 4;
        h.cmsg_len = CMSG_LEN(sizeof(dc));
        h.cmsg_level = SOL_SOCKET;
        h.cmsg_type = (in[0] & 1) ? SCM_DEVMEM_LINEAR : SCM_DEVMEM_DMABUF;
        switch (in[1] & 7) { /* spoil one thing, or nothing */
        case 1: h.cmsg_len = in[1]; break;
        case 2: h.cmsg_level = in[1]; break;
        case 3: h.cmsg_type = in[1] >> 3; break;
        case 4: dc.frag_size = 0; break;
        default: break;
        }
        memcpy(out + used, &h, sizeof(h));
        memcpy(out + used + CMSG_LEN(0), &dc, sizeof(dc));
        used += CMSG_SPACE(sizeof(dc));
    }
    return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct devmem_frag frags[MAX_FRAGS];
    struct msghdr msg;
    struct devmem_err err;
    uint32_t ret, cap;
    size_t nfrags = 0, max_frags, clen, sum = 0;
    uint8_t mode, *ctrl;
    int rc;

    if (size < 10) {
        return 0;
    }
    mode = data[0];
    memcpy(&ret, data + 1, 4);
    memcpy(&cap, data + 5, 4);
    max_frags = 1 + data[9] % MAX_FRAGS;
    ret %= 1u << 22;
    cap %= 1u << 22;
    data += 10;
    size -= 10;

    ctrl = malloc(size > 0 ? size : 1);
    if (NULL == ctrl) {
        return 0;
    }
    clen = (mode & 1) ? build(data, size, ctrl, size) : size;
    if (!(mode & 1)) {
        memcpy(ctrl, data, size);
    }
    memset(&msg, 0, sizeof(msg));
    msg.msg_control = clen > 0 ? ctrl : NULL;
    msg.msg_controllen = clen;
    msg.msg_flags = (mode & 2) ? MSG_CTRUNC : 0;

    rc = devmem_rx_parse(&msg, ret, cap, frags, max_frags, &nfrags, &err);
    FUZZ_MUST(nfrags <= max_frags, "never more pieces than room for them");
    if (0 == rc) {
        size_t linear = 0;

        for (size_t i = 0; i < nfrags; i++) {
            FUZZ_MUST(frags[i].len > 0, "no empty piece");
            if (DEVMEM_FRAG_LINEAR == frags[i].kind) {
                FUZZ_MUST(frags[i].offset == linear, "linear pieces follow each other");
                linear += frags[i].len;
            }
            sum += frags[i].len;
        }
        FUZZ_MUST(sum == ret, "the pieces add up to what recvmsg returned");
        FUZZ_MUST(linear <= cap, "linear pieces fit the caller's buffer");
    } else {
        FUZZ_MUST(rc < 0 && err.code == -rc && '\0' != err.msg[0], "a refusal says why");
    }
    free(ctrl);
    return 0;
}
