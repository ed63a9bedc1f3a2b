/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl_devmem wire protocol: the connection handshake and the per-fragment header.
 *
 * Plain C (no Open MPI types) so the codec and its checks are unit-tested alone.
 * Everything on the wire is little-endian host order: Open MPI's heterogeneous support
 * is not a goal, and a peer of another byte order fails the magic check cleanly.
 *
 * A connection starts with one hello from the connecting side and one reply from the
 * accepting side, both fixed-size. The connector proves it belongs to the job by
 * echoing the acceptor's secret (read from the acceptor's modex record); the reply
 * echoes the connector's secret back. After that, the stream is a sequence of
 * fragments: a fixed header followed by exactly `size` payload bytes.
 */
#ifndef MCA_BTL_DEVMEM_HDR_H
#define MCA_BTL_DEVMEM_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define MCA_BTL_DEVMEM_MAGIC 0x4d444d42u /* "BMDM" in memory on little-endian */
#define MCA_BTL_DEVMEM_PROTO_VERSION 6

/* Largest payload a peer may ever announce as its fragment limit: the peer's own
 * announcement is the bound that counts, this only caps what we agree to. */
#define MCA_BTL_DEVMEM_MAX_FRAG_LIMIT (64u * 1024u * 1024u)

enum mca_btl_devmem_hello_status {
    MCA_BTL_DEVMEM_HELLO_REQUEST = 0, /* connector -> acceptor */
    MCA_BTL_DEVMEM_HELLO_ACCEPT = 1,  /* the connection is the peer's link now */
    MCA_BTL_DEVMEM_HELLO_DEFER = 2,   /* simultaneous connect: the acceptor's own wins */
};

struct mca_btl_devmem_hello {
    uint32_t magic;
    uint16_t version;
    uint16_t status;     /* enum mca_btl_devmem_hello_status */
    uint32_t jobid;      /* sender's process name */
    uint32_t vpid;
    uint64_t secret;     /* request: the acceptor's secret; reply: the connector's */
    uint32_t link;       /* the module (interface x link) index the connector targets */
    uint32_t frag_limit; /* largest payload the sender will put in one fragment */
    uint32_t hdr_size;   /* sizeof(struct mca_btl_devmem_hdr) of the sender */
    uint32_t reserved;
};
_Static_assert(sizeof(struct mca_btl_devmem_hello) == 40, "hello is 40 bytes on the wire");

enum mca_btl_devmem_hdr_type {
    MCA_BTL_DEVMEM_HDR_SEND = 1,     /* active message: payload goes to tag's callback */
    MCA_BTL_DEVMEM_HDR_PUT = 2,      /* payload is written at addr in the receiver */
    MCA_BTL_DEVMEM_HDR_GET_REQ = 3,  /* please send `size` bytes from your addr, id = request */
    MCA_BTL_DEVMEM_HDR_GET_RESP = 4, /* payload answers GET_REQ `id` */
    MCA_BTL_DEVMEM_HDR_FIN = 5,      /* orderly close: the next EOF is not a failure */
    MCA_BTL_DEVMEM_HDR_DEVFLOW = 6,  /* "my device-flow connection to you comes from port id" */
    MCA_BTL_DEVMEM_HDR_PUSH = 7,     /* payload: the first bytes of registration `id` at addr */
    MCA_BTL_DEVMEM_HDR_LANES = 8,    /* device-flow lanes: id is enum mca_btl_devmem_lanes_say */
    MCA_BTL_DEVMEM_HDR_TYPE_MAX = MCA_BTL_DEVMEM_HDR_LANES,
};

/* What a LANES frame says. Lanes open only toward a peer that asks for device traffic. */
enum mca_btl_devmem_lanes_say {
    MCA_BTL_DEVMEM_LANES_WANT = 1, /* "open your lanes to me: gets wait for them" */
    MCA_BTL_DEVMEM_LANES_NONE = 2, /* "none will come: ask on the control connection" */
    /* "your lanes to me have been unused long, and none of my gets owes a byte: close them"
     * (gets wait meanwhile) */
    MCA_BTL_DEVMEM_LANES_RETIRE = 3,
    MCA_BTL_DEVMEM_LANES_RETIRED = 4, /* "closed: ask again when you need them" */
};

/* GET_REQ flag: answer with raw bytes on your device-flow connection to me numbered `tag`
 * (its lane), in the order of the requests for that lane, instead of a GET_RESP fragment
 * here. No other flag exists; other types carry 0. */
#define MCA_BTL_DEVMEM_FLAG_DEVFLOW 0x1u

/* SEND flag: the next frame on this connection is PUSH `id` of the registration at `addr`
 * (version 4, btl_devmem_push.h). SEND frames carry id and addr 0 without it. */
#define MCA_BTL_DEVMEM_FLAG_PUSH_NEXT 0x2u

/* Largest PUSH payload: what a receiver may have to keep until the get that claims it. */
#define MCA_BTL_DEVMEM_PUSH_MAX (1024u * 1024u)

/* Device-flow connections (lanes) one peer may open to another: lane numbers on the wire
 * are below this. */
#define MCA_BTL_DEVMEM_DEVFLOWS_MAX 16u

/*
 * Device flows. A device-flow connection carries payload bytes only: on a devmem NIC they
 * land in device memory, where the CPU cannot parse headers. So the connector sends nothing
 * on it to identify itself; it names the connection's source port in a DEVFLOW fragment on
 * the already authenticated control connection (id: port in host order; addr: 0, reserved),
 * and the acceptor adopts the accepted socket from that port and from the address the
 * control connection comes from (the connector binds both to its module's address), which
 * works alike for IPv4 and IPv6. Version 1 sent the IPv4 source address in addr.
 *
 * Lanes (version 3). A peer may open up to MCA_BTL_DEVMEM_DEVFLOWS_MAX device flows, each
 * named with its lane number in the DEVFLOW fragment's tag. The receiver of the data cuts a
 * large get into chunks and asks for each with its own GET_REQ naming the lane to answer on
 * (tag); the answering side needs to know nothing of the striping. Several such requests
 * may travel in one write: a GET_REQ has no payload, so they are consecutive frames.
 */

struct mca_btl_devmem_hdr {
    uint8_t type; /* enum mca_btl_devmem_hdr_type */
    uint8_t tag;  /* SEND: the BTL tag */
    uint16_t flags;
    uint32_t size; /* payload bytes that follow the header */
    uint64_t addr; /* PUT: destination; GET_REQ: source in the receiver of the request */
    uint64_t id;   /* GET_REQ / GET_RESP: request id chosen by the requester */
};
_Static_assert(sizeof(struct mca_btl_devmem_hdr) == 24, "header is 24 bytes on the wire");

/* What a receiver holds a peer to: negotiated in the handshake. */
struct mca_btl_devmem_limits {
    uint32_t frag_limit; /* peer's announced SEND payload limit */
    uint64_t put_limit;  /* largest PUT / GET payload we accept */
};

enum mca_btl_devmem_check {
    MCA_BTL_DEVMEM_CHECK_OK = 0,
    MCA_BTL_DEVMEM_CHECK_BAD_MAGIC,
    MCA_BTL_DEVMEM_CHECK_BAD_VERSION,
    MCA_BTL_DEVMEM_CHECK_BAD_STATUS,
    MCA_BTL_DEVMEM_CHECK_BAD_SECRET,
    MCA_BTL_DEVMEM_CHECK_BAD_HDR_SIZE,
    MCA_BTL_DEVMEM_CHECK_BAD_LIMIT,
    MCA_BTL_DEVMEM_CHECK_BAD_TYPE,
    MCA_BTL_DEVMEM_CHECK_TOO_LONG,
    MCA_BTL_DEVMEM_CHECK_BAD_FIELD,
};

static inline const char *mca_btl_devmem_check_str(enum mca_btl_devmem_check c)
{
    switch (c) {
    case MCA_BTL_DEVMEM_CHECK_OK: return "ok";
    case MCA_BTL_DEVMEM_CHECK_BAD_MAGIC: return "bad magic (not a btl_devmem peer)";
    case MCA_BTL_DEVMEM_CHECK_BAD_VERSION: return "unsupported protocol version";
    case MCA_BTL_DEVMEM_CHECK_BAD_STATUS: return "unexpected handshake status";
    case MCA_BTL_DEVMEM_CHECK_BAD_SECRET: return "wrong job secret";
    case MCA_BTL_DEVMEM_CHECK_BAD_HDR_SIZE: return "fragment header size differs";
    case MCA_BTL_DEVMEM_CHECK_BAD_LIMIT: return "fragment limit out of range";
    case MCA_BTL_DEVMEM_CHECK_BAD_TYPE: return "unknown fragment type";
    case MCA_BTL_DEVMEM_CHECK_TOO_LONG: return "fragment longer than negotiated";
    case MCA_BTL_DEVMEM_CHECK_BAD_FIELD: return "field not allowed for this fragment type";
    }
    return "unknown check";
}

static inline void mca_btl_devmem_hello_init(struct mca_btl_devmem_hello *h, uint16_t status,
                                             uint32_t jobid, uint32_t vpid, uint64_t secret,
                                             uint32_t link, uint32_t frag_limit)
{
    memset(h, 0, sizeof(*h));
    h->magic = MCA_BTL_DEVMEM_MAGIC;
    h->version = MCA_BTL_DEVMEM_PROTO_VERSION;
    h->status = status;
    h->jobid = jobid;
    h->vpid = vpid;
    h->secret = secret;
    h->link = link;
    h->frag_limit = frag_limit;
    h->hdr_size = sizeof(struct mca_btl_devmem_hdr);
}

/*
 * Check a hello received from the network. `expect_request` selects which statuses are
 * legal; `secret` is the value the sender must have echoed (ours).
 */
static inline enum mca_btl_devmem_check
mca_btl_devmem_hello_check(const struct mca_btl_devmem_hello *h, bool expect_request,
                           uint64_t secret)
{
    if (MCA_BTL_DEVMEM_MAGIC != h->magic) {
        return MCA_BTL_DEVMEM_CHECK_BAD_MAGIC;
    }
    if (MCA_BTL_DEVMEM_PROTO_VERSION != h->version) {
        return MCA_BTL_DEVMEM_CHECK_BAD_VERSION;
    }
    if (expect_request ? MCA_BTL_DEVMEM_HELLO_REQUEST != h->status
                       : (MCA_BTL_DEVMEM_HELLO_ACCEPT != h->status
                          && MCA_BTL_DEVMEM_HELLO_DEFER != h->status)) {
        return MCA_BTL_DEVMEM_CHECK_BAD_STATUS;
    }
    if (secret != h->secret) {
        return MCA_BTL_DEVMEM_CHECK_BAD_SECRET;
    }
    if (sizeof(struct mca_btl_devmem_hdr) != h->hdr_size) {
        return MCA_BTL_DEVMEM_CHECK_BAD_HDR_SIZE;
    }
    if (0 == h->frag_limit || h->frag_limit > MCA_BTL_DEVMEM_MAX_FRAG_LIMIT) {
        return MCA_BTL_DEVMEM_CHECK_BAD_LIMIT;
    }
    return MCA_BTL_DEVMEM_CHECK_OK;
}

/* Check a fragment header before a single payload byte is read. */
static inline enum mca_btl_devmem_check
mca_btl_devmem_hdr_check(const struct mca_btl_devmem_hdr *hdr,
                         const struct mca_btl_devmem_limits *lim)
{
    if (0 != (hdr->flags & ~(MCA_BTL_DEVMEM_HDR_GET_REQ == hdr->type ? MCA_BTL_DEVMEM_FLAG_DEVFLOW
                             : MCA_BTL_DEVMEM_HDR_SEND == hdr->type ? MCA_BTL_DEVMEM_FLAG_PUSH_NEXT
                                                                     : 0u))) {
        return hdr->type >= MCA_BTL_DEVMEM_HDR_SEND && hdr->type <= MCA_BTL_DEVMEM_HDR_TYPE_MAX
                   ? MCA_BTL_DEVMEM_CHECK_BAD_FIELD
                   : MCA_BTL_DEVMEM_CHECK_BAD_TYPE;
    }
    switch (hdr->type) {
    case MCA_BTL_DEVMEM_HDR_SEND:
        if ((hdr->flags & MCA_BTL_DEVMEM_FLAG_PUSH_NEXT) ? 0 == hdr->id || 0 == hdr->addr
                                                          : 0 != hdr->id || 0 != hdr->addr) {
            return MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
        }
        if (hdr->size > lim->frag_limit) {
            return MCA_BTL_DEVMEM_CHECK_TOO_LONG;
        }
        return MCA_BTL_DEVMEM_CHECK_OK;
    case MCA_BTL_DEVMEM_HDR_PUT:
    case MCA_BTL_DEVMEM_HDR_GET_RESP:
        if (hdr->size > lim->put_limit) {
            return MCA_BTL_DEVMEM_CHECK_TOO_LONG;
        }
        return MCA_BTL_DEVMEM_CHECK_OK;
    case MCA_BTL_DEVMEM_HDR_GET_REQ:
        /* the request carries no payload; `size` is what is asked for; tag: the lane of a
         * device-flow answer, 0 otherwise */
        if ((hdr->flags & MCA_BTL_DEVMEM_FLAG_DEVFLOW) ? hdr->tag >= MCA_BTL_DEVMEM_DEVFLOWS_MAX
                                                       : 0 != hdr->tag) {
            return MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
        }
        if (hdr->size > lim->put_limit) {
            return MCA_BTL_DEVMEM_CHECK_TOO_LONG;
        }
        return MCA_BTL_DEVMEM_CHECK_OK;
    case MCA_BTL_DEVMEM_HDR_FIN:
        return 0 == hdr->size ? MCA_BTL_DEVMEM_CHECK_OK : MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
    case MCA_BTL_DEVMEM_HDR_DEVFLOW:
        return 0 == hdr->size && hdr->tag < MCA_BTL_DEVMEM_DEVFLOWS_MAX && 0 == hdr->addr
                       && 0 != hdr->id
                       && hdr->id <= UINT16_MAX
                   ? MCA_BTL_DEVMEM_CHECK_OK
                   : MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
    case MCA_BTL_DEVMEM_HDR_LANES:
        return 0 == hdr->size && 0 == hdr->tag && 0 == hdr->addr
                       && hdr->id >= MCA_BTL_DEVMEM_LANES_WANT
                       && hdr->id <= MCA_BTL_DEVMEM_LANES_RETIRED
                   ? MCA_BTL_DEVMEM_CHECK_OK
                   : MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
    case MCA_BTL_DEVMEM_HDR_PUSH:
        if (0 != hdr->tag || 0 == hdr->id || 0 == hdr->addr || 0 == hdr->size) {
            return MCA_BTL_DEVMEM_CHECK_BAD_FIELD;
        }
        /* bounded by what a receiver keeps, not by its put limit, which the sender of a
         * push does not know */
        return hdr->size > MCA_BTL_DEVMEM_PUSH_MAX ? MCA_BTL_DEVMEM_CHECK_TOO_LONG
                                                   : MCA_BTL_DEVMEM_CHECK_OK;
    default:
        return MCA_BTL_DEVMEM_CHECK_BAD_TYPE;
    }
}

/* Payload bytes that follow a (checked) header on the stream. */
static inline uint32_t mca_btl_devmem_hdr_payload(const struct mca_btl_devmem_hdr *hdr)
{
    return MCA_BTL_DEVMEM_HDR_GET_REQ == hdr->type ? 0 : hdr->size;
}

#endif /* MCA_BTL_DEVMEM_HDR_H */
