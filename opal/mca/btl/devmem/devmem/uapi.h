/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Linux device-memory TCP user API: the constants and structures that the system
 * headers of Debian 12 (Linux 6.1 uapi) lack. Where the system headers define one, theirs
 * wins; values are those of include/uapi/asm-generic/socket.h, include/uapi/linux/uio.h
 * and include/uapi/linux/netdev.h in Linux 6.12+ (RX) and 6.16+ (TX).
 */
#ifndef DEVMEM_UAPI_H
#define DEVMEM_UAPI_H

#include <stdint.h>
#include <sys/socket.h>
#include <linux/types.h>

/* recvmsg() flag: accept unreadable (device memory) frags as control messages.
 * Kernel-internal in include/linux/socket.h, so user space must carry it. */
#ifndef MSG_SOCK_DEVMEM
#define MSG_SOCK_DEVMEM 0x2000000
#endif

/* Socket options and control-message types (asm-generic numbering: x86, arm64, ...). */
#if defined(__hppa__)
#define DEVMEM_SO_BASE_LINEAR 0x404E
#else
#define DEVMEM_SO_BASE_LINEAR 78
#endif
#ifndef SO_DEVMEM_LINEAR
#define SO_DEVMEM_LINEAR   (DEVMEM_SO_BASE_LINEAR)
#endif
#ifndef SO_DEVMEM_DMABUF
#define SO_DEVMEM_DMABUF   (DEVMEM_SO_BASE_LINEAR + 1)
#endif
#ifndef SO_DEVMEM_DONTNEED
#define SO_DEVMEM_DONTNEED (DEVMEM_SO_BASE_LINEAR + 2)
#endif
#ifndef SCM_DEVMEM_LINEAR
#define SCM_DEVMEM_LINEAR  SO_DEVMEM_LINEAR
#endif
#ifndef SCM_DEVMEM_DMABUF
#define SCM_DEVMEM_DMABUF  SO_DEVMEM_DMABUF
#endif

/* SO_DEVMEM_DONTNEED accepts at most this many token ranges per call ... */
#define DEVMEM_MAX_DONTNEED_TOKENS 128
/* ... and frees at most this many frags per call; the rest are ignored. */
#define DEVMEM_MAX_DONTNEED_FRAGS 1024

/* Control message payload for SCM_DEVMEM_DMABUF / SCM_DEVMEM_LINEAR (uio.h).
 * Defined under our own name so it never clashes with a newer system header. */
struct devmem_dmabuf_cmsg {
    uint64_t frag_offset; /* byte offset of the frag inside the dmabuf */
    uint32_t frag_size;   /* bytes in the frag (LINEAR: bytes copied to the iovec) */
    uint32_t frag_token;  /* token to return with SO_DEVMEM_DONTNEED */
    uint32_t dmabuf_id;   /* binding id from NETDEV_CMD_BIND_RX */
    uint32_t flags;       /* reserved, 0 */
};
_Static_assert(sizeof(struct devmem_dmabuf_cmsg) == 24, "struct dmabuf_cmsg is 24 bytes");

/* One range of tokens for SO_DEVMEM_DONTNEED (uio.h struct dmabuf_token). */
struct devmem_dmabuf_token {
    uint32_t token_start;
    uint32_t token_count;
};
_Static_assert(sizeof(struct devmem_dmabuf_token) == 8, "struct dmabuf_token is 8 bytes");

/* Zero-copy completions on the error queue (linux/errqueue.h has these since 4.14;
 * kept here so the layer does not depend on that header's age). */
#ifndef SO_EE_ORIGIN_ZEROCOPY
#define SO_EE_ORIGIN_ZEROCOPY 5
#endif
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

/* Kernel errno that is not in glibc: control buffer too small for the next cmsg (6.14+). */
#ifndef ETOOSMALL
#define ETOOSMALL 525
#endif

/* Generic netlink family "netdev", version 1 (include/uapi/linux/netdev.h). */
#define DEVMEM_NETDEV_FAMILY_NAME "netdev"
#define DEVMEM_NETDEV_FAMILY_VERSION 1

enum devmem_netdev_cmd {
    DEVMEM_NETDEV_CMD_DEV_GET = 1,
    DEVMEM_NETDEV_CMD_QUEUE_GET = 10,
    DEVMEM_NETDEV_CMD_BIND_RX = 13,
    DEVMEM_NETDEV_CMD_NAPI_SET = 14,
    DEVMEM_NETDEV_CMD_BIND_TX = 15,
};

/* NETDEV_A_DEV_* (dev-get). */
enum devmem_netdev_a_dev {
    DEVMEM_NETDEV_A_DEV_IFINDEX = 1,
    DEVMEM_NETDEV_A_DEV_PAD = 2,
    DEVMEM_NETDEV_A_DEV_XDP_FEATURES = 3,
    DEVMEM_NETDEV_A_DEV_XDP_ZC_MAX_SEGS = 4,
    DEVMEM_NETDEV_A_DEV_XDP_RX_METADATA_FEATURES = 5,
    DEVMEM_NETDEV_A_DEV_XSK_FEATURES = 6,
};

/* NETDEV_A_QUEUE_* (queue-get, and the queue nests of bind-rx). */
enum devmem_netdev_a_queue {
    DEVMEM_NETDEV_A_QUEUE_ID = 1,
    DEVMEM_NETDEV_A_QUEUE_IFINDEX = 2,
    DEVMEM_NETDEV_A_QUEUE_TYPE = 3,
    DEVMEM_NETDEV_A_QUEUE_NAPI_ID = 4,
    DEVMEM_NETDEV_A_QUEUE_DMABUF = 5,
};

enum devmem_netdev_queue_type {
    DEVMEM_NETDEV_QUEUE_TYPE_RX = 0,
    DEVMEM_NETDEV_QUEUE_TYPE_TX = 1,
};

/* NETDEV_A_DMABUF_* (bind-rx, bind-tx). */
enum devmem_netdev_a_dmabuf {
    DEVMEM_NETDEV_A_DMABUF_IFINDEX = 1, /* u32, min 1 */
    DEVMEM_NETDEV_A_DMABUF_QUEUES = 2,  /* nest, once per queue (rx only) */
    DEVMEM_NETDEV_A_DMABUF_FD = 3,      /* u32 */
    DEVMEM_NETDEV_A_DMABUF_ID = 4,      /* u32, reply only */
};

#endif /* DEVMEM_UAPI_H */
