/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The btl_devmem wire protocol: hello and fragment-header checks, including everything a
 * stranger or a broken peer could send. Exit 0 pass, 1 fail.
 */
#include "base/btl_devmem_hdr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static const uint64_t SECRET = 0x1122334455667788ull;

static struct mca_btl_devmem_hello good_request(void)
{
    struct mca_btl_devmem_hello h;
    mca_btl_devmem_hello_init(&h, MCA_BTL_DEVMEM_HELLO_REQUEST, 7, 3, SECRET, 2, 131072);
    return h;
}

static void test_hello(void)
{
    struct mca_btl_devmem_hello h = good_request(), r;

    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hello_check(&h, true, SECRET),
          "a well-formed request passes");
    CHECK(7 == h.jobid && 3 == h.vpid && 2 == h.link && 131072 == h.frag_limit
              && sizeof(struct mca_btl_devmem_hdr) == h.hdr_size,
          "init fills name, link, limit and header size");
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_STATUS == mca_btl_devmem_hello_check(&h, false, SECRET),
          "a request is not accepted where a reply is expected");

    r = h;
    r.magic ^= 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_MAGIC == mca_btl_devmem_hello_check(&r, true, SECRET),
          "wrong magic is refused");
    r = h;
    r.version = MCA_BTL_DEVMEM_PROTO_VERSION + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_VERSION == mca_btl_devmem_hello_check(&r, true, SECRET),
          "another protocol version is refused");
    r = h;
    r.secret = SECRET + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_SECRET == mca_btl_devmem_hello_check(&r, true, SECRET),
          "a wrong secret is refused");
    r = h;
    r.hdr_size = 16;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_HDR_SIZE == mca_btl_devmem_hello_check(&r, true, SECRET),
          "a different header size is refused");
    r = h;
    r.frag_limit = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_LIMIT == mca_btl_devmem_hello_check(&r, true, SECRET),
          "a zero fragment limit is refused");
    r = h;
    r.frag_limit = MCA_BTL_DEVMEM_MAX_FRAG_LIMIT + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_LIMIT == mca_btl_devmem_hello_check(&r, true, SECRET),
          "a fragment limit above the cap is refused");
    r = h;
    r.status = 9;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_STATUS == mca_btl_devmem_hello_check(&r, true, SECRET),
          "an unknown status is refused");

    mca_btl_devmem_hello_init(&r, MCA_BTL_DEVMEM_HELLO_DEFER, 7, 4, SECRET, 0, 65536);
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hello_check(&r, false, SECRET),
          "a DEFER reply is a valid reply");
    mca_btl_devmem_hello_init(&r, MCA_BTL_DEVMEM_HELLO_ACCEPT, 7, 4, SECRET, 0, 65536);
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hello_check(&r, false, SECRET),
          "an ACCEPT reply is a valid reply");

    /* garbage: every byte pattern of a zeroed, all-ones and random hello is refused */
    memset(&r, 0, sizeof(r));
    CHECK(MCA_BTL_DEVMEM_CHECK_OK != mca_btl_devmem_hello_check(&r, true, SECRET),
          "an all-zero hello is refused");
    memset(&r, 0xff, sizeof(r));
    CHECK(MCA_BTL_DEVMEM_CHECK_OK != mca_btl_devmem_hello_check(&r, true, SECRET),
          "an all-ones hello is refused");
    srand(42);
    int accepted = 0;
    for (int i = 0; i < 100000; i++) {
        unsigned char *p = (unsigned char *) &r;
        for (size_t j = 0; j < sizeof(r); j++) {
            p[j] = (unsigned char) rand();
        }
        accepted += MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hello_check(&r, true, SECRET);
    }
    CHECK(0 == accepted, "100000 random hellos: %d accepted", accepted);

    /* a valid hello with one byte flipped anywhere that matters is refused */
    int flips_ok = 0;
    for (size_t j = 0; j < offsetof(struct mca_btl_devmem_hello, link); j++) {
        struct mca_btl_devmem_hello f = h;
        ((unsigned char *) &f)[j] ^= 0x5a;
        if (j >= offsetof(struct mca_btl_devmem_hello, jobid)
            && j < offsetof(struct mca_btl_devmem_hello, secret)) {
            continue; /* the name is checked against the modex by the caller */
        }
        flips_ok += MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hello_check(&f, true, SECRET);
    }
    CHECK(0 == flips_ok, "a flipped byte in magic, version, status or secret is refused");
}

static void test_hdr(void)
{
    struct mca_btl_devmem_limits lim = {.frag_limit = 131072, .put_limit = 1u << 24};
    struct mca_btl_devmem_hdr h;

    memset(&h, 0, sizeof(h));
    h.type = MCA_BTL_DEVMEM_HDR_SEND;
    h.size = 131072;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND at the negotiated limit passes");
    CHECK(131072 == mca_btl_devmem_hdr_payload(&h), "SEND carries its size as payload");
    h.size = 131073;
    CHECK(MCA_BTL_DEVMEM_CHECK_TOO_LONG == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND one byte over the limit is refused before any payload is read");
    h.size = UINT32_MAX;
    CHECK(MCA_BTL_DEVMEM_CHECK_TOO_LONG == mca_btl_devmem_hdr_check(&h, &lim),
          "a huge SEND length is refused");

    /* a SEND announcing a push names it; one without names nothing */
    h.size = 100;
    h.flags = MCA_BTL_DEVMEM_FLAG_PUSH_NEXT;
    h.id = 7;
    h.addr = 0x7f0000001000ull;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND announcing push 7 of an address passes");
    h.id = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND announcing push id 0 is refused");
    h.id = 7;
    h.addr = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND announcing a push of address 0 is refused");
    h.flags = 0;
    h.addr = 0x7f0000001000ull;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "SEND with an id or address but no announcement is refused");
    h.id = h.addr = 0;

    h.type = MCA_BTL_DEVMEM_HDR_PUSH;
    h.id = 7;
    h.addr = 0x7f0000001000ull;
    h.size = MCA_BTL_DEVMEM_PUSH_MAX;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)
              && MCA_BTL_DEVMEM_PUSH_MAX == mca_btl_devmem_hdr_payload(&h),
          "PUSH of the largest size passes and carries it as payload");
    h.size = MCA_BTL_DEVMEM_PUSH_MAX + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_TOO_LONG == mca_btl_devmem_hdr_check(&h, &lim),
          "PUSH over 1 MiB is refused: a receiver may have to keep it");
    {
        struct mca_btl_devmem_limits small = {.frag_limit = 4096, .put_limit = 4096};
        h.size = 65536;
        CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &small),
              "PUSH beyond the receiver's put limit passes: its sender cannot know that");
    }
    h.size = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "an empty PUSH is refused");
    h.size = 4096;
    h.id = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "PUSH id 0 is refused");
    h.id = 7;
    h.tag = 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "PUSH with a tag is refused");
    h.tag = 0;
    h.addr = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "PUSH of address 0 is refused");
    h.id = 0;
    h.type = MCA_BTL_DEVMEM_HDR_SEND;

    h.type = MCA_BTL_DEVMEM_HDR_PUT;
    h.size = 1u << 24;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim), "PUT at the limit passes");
    h.size = (1u << 24) + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_TOO_LONG == mca_btl_devmem_hdr_check(&h, &lim),
          "PUT over the put limit is refused");

    h.type = MCA_BTL_DEVMEM_HDR_GET_REQ;
    h.size = 4096;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)
              && 0 == mca_btl_devmem_hdr_payload(&h),
          "GET_REQ asks for bytes but carries no payload");
    h.size = (1u << 24) + 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_TOO_LONG == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ for more than the limit is refused");

    h.type = MCA_BTL_DEVMEM_HDR_GET_RESP;
    h.size = 4096;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)
              && 4096 == mca_btl_devmem_hdr_payload(&h),
          "GET_RESP carries its size as payload");

    h.type = MCA_BTL_DEVMEM_HDR_FIN;
    h.size = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim), "FIN passes");
    h.size = 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "FIN with a payload is refused");

    h.type = MCA_BTL_DEVMEM_HDR_DEVFLOW;
    h.size = 0;
    h.addr = 0;
    h.id = 40000;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)
              && 0 == mca_btl_devmem_hdr_payload(&h),
          "DEVFLOW naming a port passes and has no payload");
    h.id = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW with port 0 is refused");
    h.id = 65536;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW with a port beyond 16 bits is refused");
    h.id = 40000;
    h.addr = 0x0201a8c0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW with the reserved address field set (protocol 1's IPv4 address) is refused");
    h.addr = 0;
    h.size = 8;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW with a payload is refused");
    h.size = 0;
    h.tag = MCA_BTL_DEVMEM_DEVFLOWS_MAX - 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW naming the last lane passes");
    h.tag = MCA_BTL_DEVMEM_DEVFLOWS_MAX;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "DEVFLOW naming a lane beyond the limit is refused");
    h.tag = 0;

    h.type = MCA_BTL_DEVMEM_HDR_LANES;
    h.id = MCA_BTL_DEVMEM_LANES_WANT;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)
              && 0 == mca_btl_devmem_hdr_payload(&h),
          "LANES asking for lanes passes and has no payload");
    h.id = MCA_BTL_DEVMEM_LANES_NONE;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES saying none will come passes");
    h.id = MCA_BTL_DEVMEM_LANES_RETIRE;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES retiring idle lanes passes");
    h.id = MCA_BTL_DEVMEM_LANES_RETIRED;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES saying they are retired passes");
    h.id = 0;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES saying nothing is refused");
    h.id = 5;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES saying something unknown is refused");
    h.id = MCA_BTL_DEVMEM_LANES_WANT;
    h.tag = 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES naming a lane is refused");
    h.tag = 0;
    h.size = 4;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES with a payload is refused");
    h.size = 0;
    h.addr = 4096;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "LANES with an address is refused");
    h.addr = 0;

    /* flags: only GET_REQ (DEVFLOW) and SEND (PUSH_NEXT) may carry one */
    h.size = 0;
    h.type = MCA_BTL_DEVMEM_HDR_GET_REQ;
    h.flags = MCA_BTL_DEVMEM_FLAG_DEVFLOW;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ asking for the device flow passes");
    h.tag = MCA_BTL_DEVMEM_DEVFLOWS_MAX - 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ asking for the last device-flow lane passes");
    h.tag = MCA_BTL_DEVMEM_DEVFLOWS_MAX;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ asking for a lane beyond the limit is refused");
    h.flags = 0;
    h.tag = 1;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ on the control connection naming a lane is refused");
    h.tag = 0;
    h.flags = MCA_BTL_DEVMEM_FLAG_DEVFLOW;
    h.flags = 0x2;
    CHECK(MCA_BTL_DEVMEM_CHECK_BAD_FIELD == mca_btl_devmem_hdr_check(&h, &lim),
          "GET_REQ with an unknown flag is refused");
    int flagged = 0;
    for (int t = MCA_BTL_DEVMEM_HDR_SEND; t <= MCA_BTL_DEVMEM_HDR_TYPE_MAX; t++) {
        h.type = (uint8_t) t;
        h.flags = MCA_BTL_DEVMEM_HDR_GET_REQ == t ? 0x8000
                  : MCA_BTL_DEVMEM_HDR_SEND == t  ? MCA_BTL_DEVMEM_FLAG_DEVFLOW
                                                  : MCA_BTL_DEVMEM_FLAG_PUSH_NEXT;
        flagged += MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim);
    }
    CHECK(0 == flagged, "a flag on any other type (or a foreign one on GET_REQ) is refused");
    h.flags = 0;

    int bad_types = 0;
    for (int t = 0; t < 256; t++) {
        h.type = (uint8_t) t;
        h.size = 0;
        h.id = h.addr = 0;
        if (MCA_BTL_DEVMEM_HDR_DEVFLOW == t) { /* the types that must name something */
            h.id = 40000;
        } else if (MCA_BTL_DEVMEM_HDR_LANES == t) {
            h.id = MCA_BTL_DEVMEM_LANES_WANT;
        } else if (MCA_BTL_DEVMEM_HDR_PUSH == t) {
            h.size = 1;
            h.id = 1;
            h.addr = 4096;
        }
        bool known = t >= MCA_BTL_DEVMEM_HDR_SEND && t <= MCA_BTL_DEVMEM_HDR_TYPE_MAX;
        bad_types += known != (MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim));
    }
    CHECK(0 == bad_types, "exactly the 8 known types pass, the other 248 are refused");

    /* truncated input: a header is only checked once all 24 bytes are in; a random
     * 24-byte header either passes with a length within the limits or is refused */
    srand(7);
    int unsafe = 0;
    for (int i = 0; i < 100000; i++) {
        unsigned char *p = (unsigned char *) &h;
        for (size_t j = 0; j < sizeof(h); j++) {
            p[j] = (unsigned char) rand();
        }
        if (MCA_BTL_DEVMEM_CHECK_OK == mca_btl_devmem_hdr_check(&h, &lim)) {
            uint32_t pay = mca_btl_devmem_hdr_payload(&h);
            unsafe += pay > lim.put_limit && pay > lim.frag_limit;
        }
    }
    CHECK(0 == unsafe, "100000 random headers: none passes with a payload beyond the limits");
}

int main(void)
{
    test_hello();
    test_hdr();
    return check_finish();
}
