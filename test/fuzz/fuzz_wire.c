/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libFuzzer target: the wire protocol's checks (btl_devmem_hdr.h), fed what a stranger or a
 * broken peer could put on a control connection: a hello, then fragment headers.
 *
 * Besides memory errors (the sanitizers), it checks the promise the endpoint relies on: a
 * header that passes carries no more payload than the limits it was checked against, so the
 * reader never sizes a buffer from an unchecked field.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#include "base/btl_devmem_hdr.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mca_btl_devmem_hello hello;
    struct mca_btl_devmem_limits lim;
    enum mca_btl_devmem_check c;

    if (size < sizeof(hello) + 12) {
        return 0;
    }
    /* the receiver's limits come from the input too: any a peer could have announced */
    memcpy(&lim.frag_limit, data, 4);
    memcpy(&lim.put_limit, data + 4, 8);
    data += 12;
    size -= 12;
    lim.frag_limit %= MCA_BTL_DEVMEM_MAX_FRAG_LIMIT + 1;

    memcpy(&hello, data, sizeof(hello));
    for (int request = 0; request < 2; request++) {
        c = mca_btl_devmem_hello_check(&hello, request, hello.secret ^ (uint64_t) request);
        FUZZ_MUST(NULL != mca_btl_devmem_check_str(c), "every hello verdict has words");
        if (MCA_BTL_DEVMEM_CHECK_OK == c) {
            FUZZ_MUST(0 != hello.frag_limit && hello.frag_limit <= MCA_BTL_DEVMEM_MAX_FRAG_LIMIT,
                 "an accepted hello announces a sane fragment limit");
            FUZZ_MUST(sizeof(struct mca_btl_devmem_hdr) == hello.hdr_size,
                 "an accepted hello agrees on the header size");
        }
    }
    data += sizeof(hello);
    size -= sizeof(hello);

    while (size >= sizeof(struct mca_btl_devmem_hdr)) {
        struct mca_btl_devmem_hdr h;

        memcpy(&h, data, sizeof(h));
        c = mca_btl_devmem_hdr_check(&h, &lim);
        FUZZ_MUST(NULL != mca_btl_devmem_check_str(c), "every header verdict has words");
        if (MCA_BTL_DEVMEM_CHECK_OK == c) {
            uint32_t payload = mca_btl_devmem_hdr_payload(&h);

            FUZZ_MUST(h.type >= MCA_BTL_DEVMEM_HDR_SEND && h.type <= MCA_BTL_DEVMEM_HDR_TYPE_MAX,
                 "an accepted header has a known type");
            FUZZ_MUST(MCA_BTL_DEVMEM_HDR_SEND != h.type || payload <= lim.frag_limit,
                 "a SEND payload is within the announced fragment limit");
            FUZZ_MUST(payload <= lim.put_limit
                          || (MCA_BTL_DEVMEM_HDR_SEND == h.type && payload <= lim.frag_limit)
                          || (MCA_BTL_DEVMEM_HDR_PUSH == h.type
                              && payload <= MCA_BTL_DEVMEM_PUSH_MAX),
                 "a PUT or GET payload is within the put limit");
            FUZZ_MUST(MCA_BTL_DEVMEM_HDR_GET_REQ != h.type || 0 == payload,
                 "a GET request carries no payload");
            FUZZ_MUST(MCA_BTL_DEVMEM_HDR_PUSH != h.type
                          || (payload > 0 && payload <= MCA_BTL_DEVMEM_PUSH_MAX && 0 != h.id),
                 "a push names itself and is at most what a receiver keeps");
            if (payload > 0 && payload <= size - sizeof(h)) {
                data += payload; /* skip it, as the reader does */
                size -= payload;
            }
        }
        data += sizeof(h);
        size -= sizeof(h);
    }
    return 0;
}
