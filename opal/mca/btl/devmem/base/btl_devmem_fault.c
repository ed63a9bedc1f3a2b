/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Fault injection for the tests (see btl_devmem_fault.h).
 */
#include "opal_config.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/util/proc.h"

#include "base/btl_devmem_fault.h"

enum fault_kind {
    FAULT_NONE,
    FAULT_BAD_TYPE,
    FAULT_TOO_LONG,
    FAULT_TRUNCATED,
    FAULT_PUSH_CUT,
    FAULT_SHORT_WRITE
};

static struct {
    enum fault_kind kind;
    int countdown; /* SEND frames (push-cut: announcing a push) still to go out intact */
} fault;

int mca_btl_devmem_fault_init(void)
{
    static const struct {
        const char *name;
        enum fault_kind kind;
    } kinds[] = {{"bad-type", FAULT_BAD_TYPE}, {"too-long", FAULT_TOO_LONG},
                 {"truncated", FAULT_TRUNCATED}, {"push-cut", FAULT_PUSH_CUT},
                 {"short-write", FAULT_SHORT_WRITE}};
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    fault.kind = FAULT_NONE;
    mca_btl_devmem_fault_armed = false;
    if (NULL == c->fault || '\0' == c->fault[0]) {
        return OPAL_SUCCESS;
    }
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (0 == strcasecmp(c->fault, kinds[i].name)) {
            if ((int) opal_proc_local_get()->proc_name.vpid == c->fault_rank) {
                fault.kind = kinds[i].kind;
                fault.countdown = c->fault_after > 0 ? c->fault_after : 0;
                mca_btl_devmem_fault_armed = true;
                opal_output(0, "btl:devmem: fault injection armed: %s after %d %ssends",
                            kinds[i].name, fault.countdown,
                            FAULT_PUSH_CUT == kinds[i].kind ? "push-announcing " : "");
            }
            return OPAL_SUCCESS;
        }
    }
    opal_output(0, "btl:devmem: btl_devmem_testing fault=%s is none of bad-type, too-long, "
                "truncated, push-cut, short-write", c->fault);
    return OPAL_ERR_BAD_PARAM;
}

bool mca_btl_devmem_fault_armed;

int mca_btl_devmem_fault_frame(int sd, opal_list_t *queue)
{
    mca_btl_devmem_frag_t *frag = (mca_btl_devmem_frag_t *) opal_list_get_first(queue);

    /* only a SEND frame not started yet: a spoiled header must be the next thing on the wire */
    if (0 != frag->iov_idx || 0 == frag->iov_cnt || frag->iov[0].iov_base != &frag->hdr
        || MCA_BTL_DEVMEM_HDR_SEND != frag->hdr.type
        || (FAULT_PUSH_CUT == fault.kind && !(frag->hdr.flags & MCA_BTL_DEVMEM_FLAG_PUSH_NEXT))
        || fault.countdown-- > 0) {
        return 0;
    }
    if (FAULT_SHORT_WRITE == fault.kind) {
        /* no harm to the peer, and from then on at every SEND frame: half its header now,
         * then the writer is told the socket is full, as a full socket leaves a frame. The
         * rest goes at the next writable event. */
        ssize_t n = send(sd, frag->iov[0].iov_base, frag->iov[0].iov_len / 2,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0) {
            return EAGAIN == errno || EWOULDBLOCK == errno ? 1 : -errno;
        }
        frag->iov[0].iov_base = (char *) frag->iov[0].iov_base + n;
        frag->iov[0].iov_len -= (size_t) n;
        return 1;
    }
    mca_btl_devmem_fault_armed = false;
    switch (fault.kind) {
    case FAULT_PUSH_CUT: {
        /* a rendezvous header announcing its push, whole, then the end of the connection
         * where the push should follow: the peer's get waits for bytes that never come */
        struct msghdr msg = {.msg_iov = frag->iov, .msg_iovlen = frag->iov_cnt};

        (void) sendmsg(sd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) shutdown(sd, SHUT_RDWR);
        opal_output(0, "btl:devmem: fault injection: a header announcing a push, then the "
                    "connection shut");
        sleep(3);
        return -EPIPE;
    }
    case FAULT_BAD_TYPE:
        frag->hdr.type = 0x7f;
        break;
    case FAULT_TOO_LONG:
        frag->hdr.size = UINT32_MAX;
        break;
    case FAULT_TRUNCATED:
        /* part of a header, then nothing: the peer must not wait for the rest. Our own
         * side fails too (broken pipe); held back a little, so that the peer's verdict is
         * the one that ends the job and the test can read it */
        (void) send(sd, &frag->hdr, sizeof(frag->hdr) / 2, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void) shutdown(sd, SHUT_RDWR);
        sleep(3);
        return -EPIPE;
    case FAULT_NONE:
    case FAULT_SHORT_WRITE:
        break;
    }
    opal_output(0, "btl:devmem: fault injection: sent a spoiled header (type %u, size %u)",
                (unsigned) frag->hdr.type, frag->hdr.size);
    return 0;
}
