/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wire protocol between ranks and devmem-helperd, the privileged helper that binds NIC
 * queues and installs steering rules for ranks without CAP_NET_ADMIN.
 *
 * A unix stream socket carries length-prefixed messages: a 16-byte header (magic, version,
 * type, request sequence number, body length), then a body whose size is fixed per type (a
 * status text is the one variable body). File descriptors travel with a message's first
 * bytes (SCM_RIGHTS): a dmabuf, and for BIND_RX the rank's device-flow listen socket, whose
 * port is the one the helper may steer. Both ends run on one host: fields are in host byte
 * order. Every field is checked before use; reserved fields must be zero, so that a later
 * version can give them meaning.
 *
 * This file is the codec only: pure functions over buffers, for the helper, the component's
 * client, the unit test and the fuzzer.
 */
#ifndef DEVMEM_HELPER_PROTO_H
#define DEVMEM_HELPER_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

#define DEVMEM_HELPER_MAGIC 0x50484d44u /* "DMHP" in memory on little-endian */
#define DEVMEM_HELPER_FRAMING 1         /* the header's version: its layout, the bodies' sizes */
#define DEVMEM_HELPER_VERSION 2         /* agreed at hello; 2: bind-rx names its sharers */
#define DEVMEM_HELPER_VERSION_MIN 1     /* the oldest this side still speaks */
#define DEVMEM_HELPER_BODY_MAX 4096     /* the longest body (a status text) */
#define DEVMEM_HELPER_FDS_MAX 2
#define DEVMEM_HELPER_IFNAME 16         /* IFNAMSIZ */
#define DEVMEM_HELPER_TEXT 256          /* an error's words, NUL-terminated */

enum devmem_helper_type {
    /* rank -> helper */
    DEVMEM_HELPER_HELLO = 1,   /* the versions the client speaks; first message */
    DEVMEM_HELPER_BIND_RX = 2, /* fds: dmabuf, listen socket. Bind queues, steer its port */
    DEVMEM_HELPER_BIND_TX = 3, /* fd: dmabuf. A TX binding on the interface */
    DEVMEM_HELPER_RELEASE = 4, /* undo one of this client's bindings */
    DEVMEM_HELPER_STATUS = 5,  /* what the helper holds, as text */
    /* helper -> rank */
    DEVMEM_HELPER_REPLY = 64,       /* the request succeeded */
    DEVMEM_HELPER_ERROR = 65,       /* it was refused: errno and the reason, word for word */
    DEVMEM_HELPER_STATUS_TEXT = 66, /* the answer to STATUS */
};

struct devmem_helper_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t type;   /* enum devmem_helper_type */
    uint32_t seq;    /* chosen by the client; the answer repeats it */
    uint32_t length; /* bytes of body that follow */
};
_Static_assert(sizeof(struct devmem_helper_hdr) == 16, "helper header is 16 bytes");

struct devmem_helper_hello {
    uint16_t min_version;
    uint16_t max_version;
    uint32_t reserved;
};

struct devmem_helper_bind_rx {
    char ifname[DEVMEM_HELPER_IFNAME];
    uint32_t nqueues; /* RX queues wanted, 1..DEVMEM_HELPER_QUEUES_MAX */
    /* version 2 (zero in version 1): the ranks of the asker's job on this host that will
     * ask for queues on ifname, itself included (0: not known, taken as 1) */
    uint16_t sharers;
    uint16_t flags;   /* DEVMEM_HELPER_RX_* */
};
#define DEVMEM_HELPER_QUEUES_MAX 64
#define DEVMEM_HELPER_SHARERS_MAX 4096
/* nqueues is a wish: grant fewer (at least one) rather than refuse; the fair share of the
 * sharers and the policy's max-queues bound it */
#define DEVMEM_HELPER_RX_FEWER 0x1
#define DEVMEM_HELPER_RX_FLAGS DEVMEM_HELPER_RX_FEWER

struct devmem_helper_bind_tx {
    char ifname[DEVMEM_HELPER_IFNAME];
};

struct devmem_helper_release {
    uint32_t binding_id;
    uint32_t reserved;
};

/* What a successful request got; fields a request does not produce are zero. */
struct devmem_helper_reply {
    uint32_t version;     /* HELLO: the version both speak */
    uint32_t binding_id;  /* BIND_RX, BIND_TX */
    uint32_t first_queue; /* BIND_RX: the queues bound, first_queue .. + nqueues - 1 */
    uint32_t nqueues;
    uint32_t rule_id;     /* BIND_RX: the steering rule for the listen socket's port */
    uint32_t reserved;
};

struct devmem_helper_error {
    int32_t code;                   /* positive errno */
    uint32_t reserved;
    char msg[DEVMEM_HELPER_TEXT];   /* which rule or call refused, and the kernel's words */
};

/* One parsed message. */
struct devmem_helper_msg {
    uint16_t type;
    uint32_t seq;
    union {
        struct devmem_helper_hello hello;
        struct devmem_helper_bind_rx bind_rx;
        struct devmem_helper_bind_tx bind_tx;
        struct devmem_helper_release release;
        struct devmem_helper_reply reply;
        struct devmem_helper_error error;
        char text[DEVMEM_HELPER_BODY_MAX]; /* STATUS_TEXT, NUL-terminated */
    } body;
};

/* The file descriptors a message of this type must arrive with. */
size_t devmem_helper_fds(uint16_t type);

/*
 * Parse the message at the start of buf[0..len), which arrived with nfds descriptors.
 * Returns the bytes it took (> 0), 0 when the message is not complete yet, or -EPROTO with
 * the reason in err: bad magic or version, unknown type, a body of the wrong size, too
 * many or too few descriptors, a reserved field set, a string not terminated or with bytes
 * an interface name cannot have, a count out of range.
 */
ssize_t devmem_helper_parse(const void *buf, size_t len, size_t nfds,
                            struct devmem_helper_msg *out, struct devmem_err *err);

/* Write a message into buf[0..cap): returns its length, -ENOBUFS when it does not fit,
 * -EINVAL when body_len is wrong for type or the body would not parse. */
ssize_t devmem_helper_build(void *buf, size_t cap, uint16_t type, uint32_t seq,
                            const void *body, size_t body_len);

#endif /* DEVMEM_HELPER_PROTO_H */
