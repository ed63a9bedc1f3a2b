/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devmem receive path: control-message parser, token ranges, token ledger, real recvmsg.
 * Kernel facts (net/ipv4/tcp.c tcp_recvmsg_dmabuf, net/core/sock.c sock_devmem_dontneed):
 * linear bytes are copied into the iovec in order and announced with SCM_DEVMEM_LINEAR
 * (only frag_size set); every dmabuf frag gets one SCM_DEVMEM_DMABUF cmsg; the return value
 * counts both; DONTNEED returns the number of frags it freed.
 */
#include "rx.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- parser ------------------------------------------------------------------------------ */

static int frag_push(struct devmem_frag *frags, size_t max, size_t *n,
                     const struct devmem_frag *f, struct devmem_err *err)
{
    if (*n >= max) {
        return devmem_err_set(err, ENOSPC, "rx: more than %zu pieces in one receive", max);
    }
    frags[(*n)++] = *f;
    return 0;
}

int devmem_rx_parse(const struct msghdr *msg, size_t ret, size_t iov_cap,
                    struct devmem_frag *frags, size_t max_frags, size_t *nfrags,
                    struct devmem_err *err)
{
    const unsigned char *ctrl = (const unsigned char *) msg->msg_control;
    size_t clen = (NULL != ctrl) ? msg->msg_controllen : 0;
    size_t off = 0, sum = 0, linear = 0, ndevmem = 0;
    const size_t want = CMSG_LEN(sizeof(struct devmem_dmabuf_cmsg));
    int rc = 0;

    *nfrags = 0;
    if (msg->msg_flags & MSG_CTRUNC) {
        rc = devmem_err_set(err, EMSGSIZE, "rx: control messages truncated (MSG_CTRUNC): the "
                            "control buffer is too small for this receive");
        goto cleanup;
    }
    /* Walk by offsets so that a bad cmsg_len can never take us outside ctrl[0..clen). */
    while (clen - off >= sizeof(struct cmsghdr)) {
        struct cmsghdr hdr;
        struct devmem_dmabuf_cmsg dc;
        struct devmem_frag f;
        size_t step;

        memcpy(&hdr, ctrl + off, sizeof(hdr));
        if (hdr.cmsg_len < sizeof(struct cmsghdr) || hdr.cmsg_len > clen - off) {
            rc = devmem_err_set(err, EPROTO, "rx: control message at byte %zu has length %zu, "
                                "outside the %zu-byte control buffer", off,
                                (size_t) hdr.cmsg_len, clen);
            goto cleanup;
        }
        if (SOL_SOCKET != hdr.cmsg_level ||
            (SCM_DEVMEM_LINEAR != hdr.cmsg_type && SCM_DEVMEM_DMABUF != hdr.cmsg_type)) {
            rc = devmem_err_set(err, EPROTO, "rx: unexpected control message level %d type %d "
                                "at byte %zu", hdr.cmsg_level, hdr.cmsg_type, off);
            goto cleanup;
        }
        if (hdr.cmsg_len != want) {
            rc = devmem_err_set(err, EPROTO, "rx: devmem control message of %zu bytes, "
                                "expected %zu", (size_t) hdr.cmsg_len, want);
            goto cleanup;
        }
        memcpy(&dc, ctrl + off + CMSG_LEN(0), sizeof(dc));
        if (0 == dc.frag_size) {
            rc = devmem_err_set(err, EPROTO, "rx: devmem frag of 0 bytes");
            goto cleanup;
        }
        memset(&f, 0, sizeof(f));
        f.len = dc.frag_size;
        if (SCM_DEVMEM_LINEAR == hdr.cmsg_type) {
            f.kind = DEVMEM_FRAG_LINEAR;
            f.offset = linear;
            if (dc.frag_size > iov_cap - linear) {
                rc = devmem_err_set(err, EOVERFLOW, "rx: %zu linear bytes announced, the "
                                    "buffer holds %zu", linear + dc.frag_size, iov_cap);
                goto cleanup;
            }
            linear += dc.frag_size;
        } else {
            f.kind = DEVMEM_FRAG_DMABUF;
            f.offset = dc.frag_offset;
            f.token = dc.frag_token;
            f.dmabuf_id = dc.dmabuf_id;
        }
        rc = frag_push(frags, max_frags, nfrags, &f, err);
        if (0 != rc) {
            goto cleanup;
        }
        sum += dc.frag_size;
        ndevmem++;
        /* The kernel advances by CMSG_SPACE; the last one may be cut to what is left. */
        step = CMSG_ALIGN(hdr.cmsg_len);
        off = (step > clen - off) ? clen : off + step;
    }
    if (0 == ndevmem) {
        /* Plain TCP data from an unbound queue: all of it is in the caller's buffer. */
        if (ret > iov_cap) {
            rc = devmem_err_set(err, EOVERFLOW, "rx: %zu bytes returned, buffer holds %zu", ret,
                                iov_cap);
            goto cleanup;
        }
        if (ret > 0) {
            struct devmem_frag f = {.kind = DEVMEM_FRAG_LINEAR, .len = (uint32_t) ret};

            if (ret > UINT32_MAX) {
                rc = devmem_err_set(err, EOVERFLOW, "rx: %zu bytes in one piece", ret);
                goto cleanup;
            }
            rc = frag_push(frags, max_frags, nfrags, &f, err);
        }
        goto cleanup;
    }
    if (sum != ret) {
        rc = devmem_err_set(err, EPROTO, "rx: devmem frags sum to %zu bytes, recvmsg returned "
                            "%zu", sum, ret);
    }
cleanup:
    return rc;
}

/* ---- token ranges ------------------------------------------------------------------------ */

size_t devmem_tokens_to_ranges(const uint32_t *tokens, size_t n,
                               struct devmem_dmabuf_token *ranges, size_t max_ranges,
                               size_t max_frags, size_t *consumed)
{
    size_t nr = 0, used = 0;

    while (used < n && used < max_frags) {
        if (nr > 0 && ranges[nr - 1].token_start + ranges[nr - 1].token_count == tokens[used] &&
            ranges[nr - 1].token_count < UINT32_MAX) {
            ranges[nr - 1].token_count++;
        } else if (nr < max_ranges) {
            ranges[nr].token_start = tokens[used];
            ranges[nr].token_count = 1;
            nr++;
        } else {
            break;
        }
        used++;
    }
    *consumed = used;
    return nr;
}

/* ---- token ledger ------------------------------------------------------------------------ */

/* A hash set of u32 tokens with linear probing; the kernel never hands out token 0. */
static size_t set_slot(uint32_t t, size_t cap)
{
    return (size_t) ((t * 2654435761u) & (cap - 1));
}

static int set_grow(struct devmem_ledger *l, struct devmem_err *err)
{
    size_t ncap = l->set_cap ? l->set_cap * 2 : 1024, i;
    uint32_t *nset = calloc(ncap, sizeof(*nset));

    if (NULL == nset) {
        return devmem_err_set(err, ENOMEM, "rx ledger: out of memory for %zu tokens", ncap);
    }
    for (i = 0; i < l->set_cap; i++) {
        if (0 != l->set[i]) {
            size_t s = set_slot(l->set[i], ncap);

            while (0 != nset[s]) {
                s = (s + 1) & (ncap - 1);
            }
            nset[s] = l->set[i];
        }
    }
    free(l->set);
    l->set = nset;
    l->set_cap = ncap;
    return 0;
}

/* 1 inserted, 0 already present, -errno. */
static int set_insert(struct devmem_ledger *l, uint32_t t, struct devmem_err *err)
{
    size_t s;
    int rc;

    if ((l->outstanding + 1) * 2 > l->set_cap) {
        rc = set_grow(l, err);
        if (0 != rc) {
            return rc;
        }
    }
    for (s = set_slot(t, l->set_cap); 0 != l->set[s]; s = (s + 1) & (l->set_cap - 1)) {
        if (t == l->set[s]) {
            return 0;
        }
    }
    l->set[s] = t;
    l->outstanding++;
    return 1;
}

/* 1 removed, 0 absent. Backward-shift deletion keeps probe chains intact. */
static int set_remove(struct devmem_ledger *l, uint32_t t)
{
    size_t s, j, mask = l->set_cap - 1;

    if (0 == l->set_cap) {
        return 0;
    }
    for (s = set_slot(t, l->set_cap); l->set[s] != t; s = (s + 1) & mask) {
        if (0 == l->set[s]) {
            return 0;
        }
    }
    l->set[s] = 0;
    for (j = (s + 1) & mask; 0 != l->set[j]; j = (j + 1) & mask) {
        size_t home = set_slot(l->set[j], l->set_cap);

        /* move j back into the hole when its home is not in (s, j] (cyclically) */
        if (((j - home) & mask) >= ((j - s) & mask)) {
            l->set[s] = l->set[j];
            l->set[j] = 0;
            s = j;
        }
    }
    l->outstanding--;
    return 1;
}

int devmem_ledger_init(struct devmem_ledger *l, int fd, devmem_dontneed_fn fn, void *ctx,
                       struct devmem_err *err)
{
    memset(l, 0, sizeof(*l));
    l->fd = fd;
    l->dontneed = fn;
    l->ctx = ctx;
    if (NULL == fn) {
        return devmem_err_set(err, EINVAL, "rx ledger: no dontneed function");
    }
    return set_grow(l, err);
}

int devmem_ledger_add(struct devmem_ledger *l, const struct devmem_frag *frags, size_t n,
                      struct devmem_err *err)
{
    size_t i;
    int rc = 0;

    for (i = 0; i < n; i++) {
        if (DEVMEM_FRAG_LINEAR == frags[i].kind) {
            l->stats.bytes_linear += frags[i].len;
            continue;
        }
        l->stats.bytes_dmabuf += frags[i].len;
        rc = set_insert(l, frags[i].token, err);
        if (rc < 0) {
            goto cleanup;
        }
        if (0 == rc || 0 == frags[i].token) {
            rc = devmem_err_set(err, EPROTO, "rx ledger: kernel handed out token %u while it is "
                                "still outstanding (or token 0)", frags[i].token);
            goto cleanup;
        }
        rc = 0;
        l->stats.tokens_received++;
    }
cleanup:
    return rc;
}

int devmem_ledger_release(struct devmem_ledger *l, uint32_t token, struct devmem_err *err)
{
    if (!set_remove(l, token)) {
        return devmem_err_set(err, ENOENT, "rx ledger: token %u is not outstanding (unknown or "
                              "released twice)", token);
    }
    if (l->npending == l->pending_cap) {
        size_t ncap = l->pending_cap ? l->pending_cap * 2 : 1024;
        uint32_t *np = realloc(l->pending, ncap * sizeof(*np));

        if (NULL == np) {
            set_insert(l, token, NULL); /* undo: the token stays outstanding */
            return devmem_err_set(err, ENOMEM, "rx ledger: out of memory");
        }
        l->pending = np;
        l->pending_cap = ncap;
    }
    l->pending[l->npending++] = token;
    return 0;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;

    return (x > y) - (x < y);
}

int devmem_ledger_flush(struct devmem_ledger *l, struct devmem_err *err)
{
    struct devmem_dmabuf_token ranges[DEVMEM_MAX_DONTNEED_TOKENS];
    size_t done = 0, consumed, nr;
    int rc = 0, freed;

    if (0 == l->npending) {
        goto cleanup;
    }
    /* Sorted, consecutive tokens merge into ranges (the kernel hands them out lowest-free). */
    qsort(l->pending, l->npending, sizeof(uint32_t), cmp_u32);
    while (done < l->npending) {
        nr = devmem_tokens_to_ranges(l->pending + done, l->npending - done, ranges,
                                     DEVMEM_MAX_DONTNEED_TOKENS, DEVMEM_MAX_DONTNEED_FRAGS,
                                     &consumed);
        do {
            freed = l->dontneed(l->ctx, l->fd, ranges, nr, err);
        } while (-EINTR == freed);
        l->stats.dontneed_calls++;
        if (freed < 0) {
            rc = freed;
            goto cleanup;
        }
        l->stats.tokens_returned += (uint64_t) freed;
        done += consumed;
        if ((size_t) freed != consumed) {
            size_t lost = (size_t) freed < consumed ? consumed - (size_t) freed : 0;

            l->stats.tokens_lost += lost;
            rc = devmem_err_set(err, EIO, "rx ledger: SO_DEVMEM_DONTNEED freed %d of %zu frags "
                                "(%zu ranges): tokens were not the socket's", freed, consumed,
                                nr);
            goto cleanup;
        }
    }
cleanup:
    /* Drop what was handed to the kernel; keep the rest for the next flush. */
    if (done > 0) {
        memmove(l->pending, l->pending + done, (l->npending - done) * sizeof(uint32_t));
        l->npending -= done;
    }
    return rc;
}

int devmem_ledger_close(struct devmem_ledger *l, struct devmem_err *err)
{
    size_t i;
    int rc = 0, rc2;

    /* Everything still outstanding goes back: the socket is closing. */
    if (l->npending + l->outstanding > l->pending_cap) {
        size_t ncap = l->npending + l->outstanding;
        uint32_t *np = realloc(l->pending, ncap * sizeof(*np));

        if (NULL == np) {
            rc = devmem_err_set(err, ENOMEM, "rx ledger: out of memory returning %zu tokens",
                                l->outstanding);
        } else {
            l->pending = np;
            l->pending_cap = ncap;
        }
    }
    for (i = 0; 0 == rc && i < l->set_cap; i++) {
        if (0 != l->set[i]) {
            l->pending[l->npending++] = l->set[i];
            l->set[i] = 0;
        }
    }
    if (0 == rc) {
        l->outstanding = 0;
    }
    /* Flush until empty or a call fails outright; a short count is reported but we go on. */
    while (l->npending > 0) {
        size_t before = l->npending;

        rc2 = devmem_ledger_flush(l, 0 == rc ? err : NULL);
        if (0 != rc2 && 0 == rc) {
            rc = rc2;
        }
        if (l->npending == before) {
            break;
        }
    }
    free(l->set);
    free(l->pending);
    l->set = NULL;
    l->pending = NULL;
    l->set_cap = l->pending_cap = l->npending = l->outstanding = 0;
    return rc;
}

/* ---- one receive ------------------------------------------------------------------------- */

int devmem_rx_batch_init(struct devmem_rx_batch *b, size_t len, size_t max_frags,
                         struct devmem_err *err)
{
    memset(b, 0, sizeof(*b));
    if (0 == len || 0 == max_frags) {
        return devmem_err_set(err, EINVAL, "rx: batch of 0 bytes or 0 frags");
    }
    b->len = len;
    b->max_frags = max_frags + 1; /* room for one plain-data piece */
    b->ctrl_len = DEVMEM_RX_CTRL_SIZE(max_frags);
    b->linear = malloc(len);
    b->ctrl = calloc(1, b->ctrl_len);
    b->frags = calloc(b->max_frags, sizeof(*b->frags));
    if (NULL == b->linear || NULL == b->ctrl || NULL == b->frags) {
        devmem_rx_batch_fini(b);
        return devmem_err_set(err, ENOMEM, "rx: out of memory for a %zu-byte batch", len);
    }
    return 0;
}

void devmem_rx_batch_fini(struct devmem_rx_batch *b)
{
    free(b->linear);
    free(b->ctrl);
    free(b->frags);
    memset(b, 0, sizeof(*b));
}

void devmem_rx_batch_msghdr(struct devmem_rx_batch *b, struct msghdr *msg, struct iovec *iov)
{
    memset(msg, 0, sizeof(*msg));
    iov->iov_base = b->linear;
    iov->iov_len = b->len;
    msg->msg_iov = iov;
    msg->msg_iovlen = 1;
    msg->msg_control = b->ctrl;
    msg->msg_controllen = b->ctrl_len;
    b->nfrags = 0;
    b->bytes = 0;
}

ssize_t devmem_rx_batch_finish(struct devmem_rx_batch *b, const struct msghdr *msg,
                               ssize_t ret, struct devmem_err *err)
{
    int rc = 0, rc2;

    b->nfrags = 0;
    b->bytes = 0;
    b->plain = ret > 0 && (NULL == msg->msg_control || 0 == msg->msg_controllen);
    if (ret < 0) {
        switch (-ret) {
        case EAGAIN:
            return devmem_err_set(err, EAGAIN, "rx: no data");
        case ETOOSMALL:
            return devmem_err_set(err, ETOOSMALL, "rx: control buffer (%zu bytes) too small for "
                                  "one devmem cmsg", b->ctrl_len);
        case EFAULT:
            return devmem_err_set(err, EFAULT, "rx: devmem data read without MSG_SOCK_DEVMEM, or "
                                  "a bad buffer");
        case ENODEV:
            return devmem_err_set(err, ENODEV, "rx: kernel found inconsistent frag types");
        default:
            return devmem_err_set(err, (int) -ret, "rx: recvmsg: %s", strerror((int) -ret));
        }
    }
    if (0 == ret) {
        return 0; /* end of stream: no pieces, whatever the control area still holds */
    }
    rc = devmem_rx_parse(msg, (size_t) ret, b->len, b->frags, b->max_frags, &b->nfrags, err);
    /* Tokens parsed before an error still pin the pool: record them so they go back. */
    if (NULL != b->ledger) {
        rc2 = devmem_ledger_add(b->ledger, b->frags, b->nfrags, 0 == rc ? err : NULL);
        if (0 == rc) {
            rc = rc2;
        }
        if (0 == rc && ret > 0) {
            b->ledger->stats.recv_calls++;
        }
    }
    if (0 != rc) {
        return rc;
    }
    b->bytes = (size_t) ret;
    return ret;
}

ssize_t devmem_rx_recv(int fd, struct devmem_rx_batch *b, int flags, struct devmem_err *err)
{
    struct msghdr msg;
    struct iovec iov;
    ssize_t ret;

    devmem_rx_batch_msghdr(b, &msg, &iov);
    ret = recvmsg(fd, &msg, flags | MSG_SOCK_DEVMEM);
    if (ret < 0) {
        ret = -errno;
    }
    return devmem_rx_batch_finish(b, &msg, ret, err);
}

int devmem_rx_dontneed(void *ctx, int fd, const struct devmem_dmabuf_token *ranges,
                       size_t nranges, struct devmem_err *err)
{
    int ret = setsockopt(fd, SOL_SOCKET, SO_DEVMEM_DONTNEED, ranges,
                         (socklen_t) (nranges * sizeof(*ranges)));

    if (ret < 0) {
        return devmem_err_set(err, errno, "rx: SO_DEVMEM_DONTNEED (%zu ranges): %s", nranges,
                              strerror(errno));
    }
    return ret;
}
