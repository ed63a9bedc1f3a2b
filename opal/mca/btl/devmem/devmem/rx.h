/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devmem receive: recvmsg(MSG_SOCK_DEVMEM), its control messages turned into a fragment
 * vector in stream order, and the token ledger that gives frags back with
 * SO_DEVMEM_DONTNEED in batches.
 *
 * The parser is a pure function over a struct msghdr, so the real kernel's replies, the
 * emulation's (emul.c writes the same cmsgs) and unit tests' synthetic buffers all go
 * through the same code. All functions return 0 (or a count) or -errno, with err filled.
 */
#ifndef DEVMEM_RX_H
#define DEVMEM_RX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "err.h"
#include "uapi.h"

enum devmem_frag_kind {
    DEVMEM_FRAG_LINEAR = 0, /* bytes the kernel copied into the caller's buffer */
    DEVMEM_FRAG_DMABUF = 1, /* bytes that stayed in the bound dmabuf */
};

/* One piece of the stream. Pieces come in stream order. */
struct devmem_frag {
    uint32_t kind;      /* enum devmem_frag_kind */
    uint32_t len;       /* bytes */
    uint64_t offset;    /* LINEAR: offset in the caller's buffer; DMABUF: offset in the dmabuf */
    uint32_t token;     /* DMABUF: token for SO_DEVMEM_DONTNEED; LINEAR: 0 */
    uint32_t dmabuf_id; /* DMABUF: binding id; LINEAR: 0 */
};

/* Bytes of control buffer that hold n devmem cmsgs. */
#define DEVMEM_RX_CTRL_SIZE(n) ((n) * CMSG_SPACE(sizeof(struct devmem_dmabuf_cmsg)))

/* Parse the control messages of one recvmsg(MSG_SOCK_DEVMEM) that returned `ret` bytes.
 * frags[0..max_frags) receives the pieces; *nfrags says how many, also on error (the dmabuf
 * pieces parsed before the error carry tokens that must still be returned).
 *   - no devmem cmsg at all: plain data, one LINEAR frag of ret bytes (none when ret is 0);
 *   - SCM_DEVMEM_LINEAR: a LINEAR frag at the next offset of the caller's buffer;
 *   - SCM_DEVMEM_DMABUF: a DMABUF frag.
 * Errors: -EMSGSIZE (MSG_CTRUNC: the control buffer was too small), -EPROTO (a cmsg that runs
 * past the buffer, has the wrong length, an unknown level/type, a zero-sized frag, or sizes
 * that do not sum to ret), -ENOSPC (more pieces than max_frags), -EOVERFLOW (linear bytes
 * beyond iov_cap, the caller's buffer size). Never reads outside msg_control. */
int devmem_rx_parse(const struct msghdr *msg, size_t ret, size_t iov_cap,
                    struct devmem_frag *frags, size_t max_frags, size_t *nfrags,
                    struct devmem_err *err);

/* ---- token ranges ----------------------------------------------------------------------- */

/* Merge tokens[0..n) (ascending, no duplicates) into at most max_ranges ranges of
 * consecutive tokens covering at most max_frags tokens. Returns the number of ranges written;
 * *consumed is the number of tokens they cover (a prefix of tokens[]). */
size_t devmem_tokens_to_ranges(const uint32_t *tokens, size_t n,
                               struct devmem_dmabuf_token *ranges, size_t max_ranges,
                               size_t max_frags, size_t *consumed);

/* ---- token ledger ----------------------------------------------------------------------- */

/* Give tokens back: SO_DEVMEM_DONTNEED or the emulation. Returns the number of frags freed
 * or -errno (err filled). */
typedef int (*devmem_dontneed_fn)(void *ctx, int fd, const struct devmem_dmabuf_token *ranges,
                                  size_t nranges, struct devmem_err *err);

struct devmem_rx_stats {
    uint64_t recv_calls;      /* successful receives that delivered bytes */
    uint64_t tokens_received; /* dmabuf frags recorded */
    uint64_t tokens_returned; /* frags the kernel said it freed */
    uint64_t tokens_lost;     /* frags sent back that the kernel did not free */
    uint64_t dontneed_calls;  /* SO_DEVMEM_DONTNEED calls */
    uint64_t bytes_dmabuf;
    uint64_t bytes_linear;
};

struct devmem_ledger {
    int fd;
    devmem_dontneed_fn dontneed;
    void *ctx;
    uint32_t *set;     /* open-addressing hash set of outstanding tokens (0 = empty) */
    size_t set_cap;    /* power of two */
    size_t outstanding;
    uint32_t *pending; /* released by the user, not yet returned to the kernel */
    size_t npending, pending_cap;
    struct devmem_rx_stats stats;
};

int devmem_ledger_init(struct devmem_ledger *l, int fd, devmem_dontneed_fn fn, void *ctx,
                       struct devmem_err *err);
/* Record the pieces of one receive: tokens of DMABUF frags become outstanding; byte
 * counters grow. A token already outstanding is a kernel contract violation: -EPROTO. */
int devmem_ledger_add(struct devmem_ledger *l, const struct devmem_frag *frags, size_t n,
                      struct devmem_err *err);
/* The user is done with token: it moves to the return list. -ENOENT when it is not
 * outstanding (unknown, or released twice). */
int devmem_ledger_release(struct devmem_ledger *l, uint32_t token, struct devmem_err *err);
/* Return the released tokens in batches (<= 128 ranges, <= 1024 frags per call), checking
 * the count freed. A short count drops those tokens (they cannot be retried safely), counts
 * them in tokens_lost and fails with -EIO; a failed call keeps them for the next flush. */
int devmem_ledger_flush(struct devmem_ledger *l, struct devmem_err *err);
/* Release every outstanding token, flush, and free the ledger. Returns the first error. */
int devmem_ledger_close(struct devmem_ledger *l, struct devmem_err *err);

/* ---- one receive ------------------------------------------------------------------------ */

/* Buffers for one receive, allocated once per socket. */
struct devmem_rx_batch {
    void *linear;      /* caller's buffer for linear bytes, len bytes */
    size_t len;        /* most stream bytes one receive may consume */
    void *ctrl;        /* control buffer */
    size_t ctrl_len;
    struct devmem_frag *frags;
    size_t max_frags;
    struct devmem_ledger *ledger; /* if set, every receive records its tokens here */
    /* results of the last receive */
    size_t nfrags;
    size_t bytes;
    int plain; /* it carried no devmem control message: plain data (an unsteered flow, or
                * one whose binding is gone) */
};

/* Allocate buffers for receives of up to len bytes and max_frags cmsgs. */
int devmem_rx_batch_init(struct devmem_rx_batch *b, size_t len, size_t max_frags,
                         struct devmem_err *err);
void devmem_rx_batch_fini(struct devmem_rx_batch *b);
/* Point msg at the batch's buffers (iov is the one iovec msg uses). */
void devmem_rx_batch_msghdr(struct devmem_rx_batch *b, struct msghdr *msg, struct iovec *iov);
/* Parse what a recvmsg returned (ret bytes, or -errno) into b->frags and record the tokens
 * in b->ledger. Returns ret (>= 0: 0 is end of stream) or -errno with err filled:
 * -EAGAIN, -ETOOSMALL (control buffer holds not even one cmsg), -EFAULT (devmem data read
 * without MSG_SOCK_DEVMEM), -ENODEV (frag types inconsistent) and the parser's errors. */
ssize_t devmem_rx_batch_finish(struct devmem_rx_batch *b, const struct msghdr *msg,
                               ssize_t ret, struct devmem_err *err);

/* The real receive: recvmsg(fd, flags | MSG_SOCK_DEVMEM) into b, then finish. */
ssize_t devmem_rx_recv(int fd, struct devmem_rx_batch *b, int flags, struct devmem_err *err);

/* The real SO_DEVMEM_DONTNEED (a devmem_dontneed_fn; ctx unused). */
int devmem_rx_dontneed(void *ctx, int fd, const struct devmem_dmabuf_token *ranges,
                       size_t nranges, struct devmem_err *err);

#endif /* DEVMEM_RX_H */
