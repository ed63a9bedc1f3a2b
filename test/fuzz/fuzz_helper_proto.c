/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the helper protocol's parser (devmem_helper_parse), fed what a hostile
 * local client could write to the helper's socket: a stream of messages, with any number of
 * file descriptors said to have come along. The first byte is that number.
 *
 * Promises: the parser consumes a message only whole and never more than it was given; what
 * it accepts builds again to the same bytes (so nothing it lets through is out of range);
 * names and texts it accepts are terminated.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "helper_proto.h"

static unsigned char again[sizeof(struct devmem_helper_hdr) + DEVMEM_HELPER_BODY_MAX];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct devmem_helper_msg m;
    struct devmem_err err;
    size_t nfds;

    if (size < 1) {
        return 0;
    }
    nfds = data[0] % (DEVMEM_HELPER_FDS_MAX + 2);
    data++;
    size--;
    while (size > 0) {
        ssize_t n = devmem_helper_parse(data, size, nfds, &m, &err);

        if (n <= 0) {
            FUZZ_MUST(0 == n || ('\0' != err.msg[0] && EPROTO == err.code),
                      "a refusal says why");
            break;
        }
        FUZZ_MUST((size_t) n <= size && (size_t) n >= sizeof(struct devmem_helper_hdr),
                  "a message is taken whole and within what arrived");
        FUZZ_MUST(devmem_helper_fds(m.type) == nfds, "the descriptors match the type");
        if (DEVMEM_HELPER_BIND_RX == m.type) {
            FUZZ_MUST(NULL != memchr(m.body.bind_rx.ifname, '\0', DEVMEM_HELPER_IFNAME),
                      "an accepted interface name is terminated");
        }
        FUZZ_MUST(devmem_helper_build(again, sizeof(again), m.type, m.seq,
                                      (const char *) data + sizeof(struct devmem_helper_hdr),
                                      (size_t) n - sizeof(struct devmem_helper_hdr)) == n
                      && 0 == memcmp(again, data, (size_t) n),
                  "what the parser accepts builds to the same bytes");
        data += n;
        size -= (size_t) n;
        nfds = 0; /* descriptors come with the first message of a read only */
    }
    return 0;
}
