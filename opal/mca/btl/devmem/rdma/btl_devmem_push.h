/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Push: the first bytes of a rendezvous travel behind its RGET header, unasked.
 *
 * A get costs the receiver one small-message latency before the first byte moves: its
 * GET_REQ must reach the sender first. btl/tcp instead sends 64 KiB with its rendezvous
 * header. So when the PML registers host memory as the source of a get (the RGET protocol),
 * the registration arms a push of its first btl_devmem_push bytes, and the handle says so
 * (push_id, push_len). The SEND frame that carries that handle (the RGET header) announces
 * the push in its own header (FLAG_PUSH_NEXT) and the PUSH frame follows it at once, in the
 * same write. The receiver's get, called from the RGET's callback, asks only for the rest
 * while the pushed bytes arrive, and they land in place.
 *
 * The rules that keep it safe:
 * - The receiver waits for a push only after it has read its announcement on the same
 *   connection; the PUSH frame is then the next frame, so it always comes. A get that finds
 *   no announcement (the RGET came on another module, the push was never sent) gets all.
 * - Pushed bytes that arrive before their get (an unexpected message) are kept, a few per
 *   connection; the get copies them. Kept bytes nobody claims (the PML took another
 *   protocol) are dropped when newer ones need the room, or with the connection.
 * - The PUSH frame points at the user's buffer. Should the registration end before the
 *   frame is written (the receiver did not need it), its unwritten bytes are copied first.
 * - Device memory takes no part: neither a device source nor a device destination. Nor
 *   does a peer with a device-flow port: its gets of host memory may ask for lanes.
 * - Only where the connection would idle through the get's round trip: one push armed or
 *   in flight per connection. A window of rendezvous each pushing put 4 MiB
 *   unasked ahead of the answers, filled a loopback receiver's window to zero and halved
 *   the bandwidth at 256 KiB.
 * - Only from MCA_BTL_DEVMEM_PUSH_MIN bytes (512 KiB; tests: btl_devmem_testing push_min=):
 *   below, the push's own send call and receive cost as much as the round trip it hides.
 *
 * Counters: push_sent = push_in_place + push_copied + push_unclaimed over the job.
 */
#ifndef MCA_BTL_DEVMEM_PUSH_H
#define MCA_BTL_DEVMEM_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/btl_devmem_hdr.h"

struct mca_btl_base_endpoint_t;
struct mca_btl_devmem_frag_t;
struct mca_btl_base_registration_handle_t;

/* Pushed bytes a connection keeps for gets not yet called. */
#define MCA_BTL_DEVMEM_PUSH_KEPT 4

/* Smallest rendezvous that pushes: from 128 to 256 KiB a push made a ping-pong 5-12 %
 * slower on loopback and over a veth (one more send call and receive for a transfer about as
 * long as the round trip it hides). */
#define MCA_BTL_DEVMEM_PUSH_MIN ((size_t) 512 * 1024)

/* Sending side: one push, owned by its registration; its endpoint's until the
 * registration ends (one per endpoint at a time). */
struct mca_btl_devmem_push_out {
    struct mca_btl_base_endpoint_t *ep;     /* NULL once the endpoint is gone */
    const struct mca_btl_base_registration_handle_t *handle; /* what the RGET carries */
    uint64_t id;
    uint64_t base;
    uint32_t len;
    bool armed;                             /* not sent yet */
    struct mca_btl_devmem_frag_t *data;     /* its PUSH frame, until written */
};

/* Receiving side: pushed bytes of one announced push. */
struct mca_btl_devmem_push_slot {
    uint64_t id;                        /* 0: empty */
    uint64_t base;                      /* the sender's address of its first byte */
    uint32_t len;                       /* 0 until the PUSH header is read */
    char *buf;                          /* kept here when no get claimed them in time */
    struct mca_btl_devmem_frag_t *get;  /* the get they belong to, once claimed */
    bool in_place;                      /* being read to the get's destination */
};

/* Per connection, receiving side (under the endpoint's lock). */
struct mca_btl_devmem_push_in {
    struct mca_btl_devmem_push_slot next; /* announced: its PUSH is the next frame */
    struct mca_btl_devmem_push_slot cur;  /* its PUSH frame's payload is being read */
    struct mca_btl_devmem_push_slot kept[MCA_BTL_DEVMEM_PUSH_KEPT]; /* oldest first */
};

/* Register what the pushes keep of each peer with the endpoint (at init). */
int mca_btl_devmem_push_init(void);

/* ---- sending side */

/* register_mem of [base, base+size) as a get source on ep, with the PML's flags: arm a push
 * and fill the handle's push fields when this registration is one (the RGET protocol's,
 * host memory, larger than a push). NULL when not. */
struct mca_btl_devmem_push_out *
mca_btl_devmem_push_arm(struct mca_btl_base_endpoint_t *ep,
                        struct mca_btl_base_registration_handle_t *handle, size_t size,
                        uint32_t flags);

/* deregister_mem: the user's buffer is theirs again. A PUSH frame still to be written has
 * its unwritten bytes copied (out of memory: the connection is closed instead). Frees po. */
void mca_btl_devmem_push_release(struct mca_btl_devmem_push_out *po);

/* The endpoint is being destroyed: its push (if any) forgets it. */
void mca_btl_devmem_push_forget(struct mca_btl_base_endpoint_t *ep);

/* Called with ep->lock held as SEND frame `frag` takes its place on the wire: when it carries
 * the handle of an armed push, announce the push in its header and return the PUSH frame to
 * queue right behind it. NULL otherwise (or out of fragments: then no push). */
struct mca_btl_devmem_frag_t *mca_btl_devmem_push_emit_locked(struct mca_btl_base_endpoint_t *ep,
                                                              struct mca_btl_devmem_frag_t *frag);

/* ---- receiving side; h is a header the codec passed. 0, or -1 with why filled: a
 * protocol error (or out of memory) that ends the connection. */

/* Every frame, before its payload: the order announcement -> PUSH holds, announcements
 * are taken, a PUSH finds where it goes. */
int mca_btl_devmem_push_rx_admit(struct mca_btl_base_endpoint_t *ep,
                                 const struct mca_btl_devmem_hdr *h, char *why, size_t whylen);

/* Where the admitted PUSH's payload goes. */
char *mca_btl_devmem_push_rx_dest(struct mca_btl_base_endpoint_t *ep);

/* The admitted PUSH's payload is in place: the get it completes, if it was the get's last
 * part (the caller completes it), or NULL. */
struct mca_btl_devmem_frag_t *mca_btl_devmem_push_rx_done(struct mca_btl_base_endpoint_t *ep);

/* Called with ep->lock held by a get into host memory from remote_address with the peer's
 * handle: take the push that covers its first bytes, if there is one on ep. Returns the
 * bytes it covers (0: none; the get asks for everything). Bytes already here are copied
 * now; otherwise get->push_pending is set and push_rx_done completes that part. */
uint32_t mca_btl_devmem_push_claim_locked(struct mca_btl_base_endpoint_t *ep,
                                          struct mca_btl_devmem_frag_t *get,
                                          const struct mca_btl_base_registration_handle_t *remote,
                                          uint64_t remote_address, size_t size);

/* The connection is gone (called with ep->lock held): drop what is kept and every claim
 * (the claiming gets fail from the pending list). */
void mca_btl_devmem_push_in_reset(struct mca_btl_base_endpoint_t *ep);

#endif /* MCA_BTL_DEVMEM_PUSH_H */
