/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated NIC's RX queues (see emul.h): which queues an RX binding covers, RSS
 * contexts over some of them, steering rules into a context, and the bytes each queue
 * received. What it mirrors:
 *  - bind-rx takes a queue list (netdev_nl_bind_rx_doit): each queue at most once, and a
 *    queue already bound to a live binding is refused (-EEXIST), as 6.18's
 *    __net_mp_open_rxq refuses a queue that has a memory provider already.
 *  - an RSS context (ethtool_set_rxfh with ETH_RXFH_CONTEXT_ALLOC): an id >= 1 and an
 *    indirection table over its queues; an ntuple rule with `context` sends its flows
 *    there, each flow to one queue, and a context a rule still points at cannot go.
 *  - a flow's bytes land in the binding of the queue it arrives on, or are plain data when
 *    that queue is bound to nothing.
 * What it does not: the Toeplitz hash. Flows are spread by arrival (the k-th flow steered
 * into a context takes its queue k mod n), so that a test sees every queue of a context in
 * use; a real NIC spreads flows only statistically, and two flows may share a queue while
 * another idles.
 */
#include "emul_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static struct emul_ctx *ctx_find(struct devmem_emul *e, uint32_t id)
{
    for (size_t i = 0; i < e->nctx; i++) {
        if (e->ctxs[i].id == id) {
            return &e->ctxs[i];
        }
    }
    return NULL;
}

/* The live RX binding whose queue list holds queue q of interface ifindex, or NULL. */
static struct emul_binding *queue_owner(struct devmem_emul *e, unsigned int ifindex,
                                        unsigned int q)
{
    for (size_t i = 0; i < e->nbind; i++) {
        struct emul_binding *b = e->bind[i];

        if (!b->alive || !b->is_rx || b->ifindex != ifindex) {
            continue;
        }
        for (size_t j = 0; j < b->nqueues; j++) {
            if (b->queues[j] == q) {
                return b;
            }
        }
    }
    return NULL;
}

/* A queue list as bind-rx and RSS contexts take it: 1..EMUL_BIND_QUEUES queues that exist,
 * none twice. 0 or -errno with err. */
static int check_queues(const unsigned int *queues, size_t n, const char *what,
                        struct devmem_err *err)
{
    if (0 == n || n > EMUL_BIND_QUEUES || NULL == queues) {
        return devmem_err_set(err, EINVAL, "emul: %s takes 1 to %d queues, not %zu", what,
                              EMUL_BIND_QUEUES, n);
    }
    for (size_t i = 0; i < n; i++) {
        if (queues[i] >= EMUL_QUEUES) {
            return devmem_err_set(err, EINVAL, "emul: %s: RX queue %u does not exist (the "
                                  "emulated NIC has %d)", what, queues[i], EMUL_QUEUES);
        }
        for (size_t j = 0; j < i; j++) {
            if (queues[j] == queues[i]) {
                return devmem_err_set(err, EINVAL, "emul: %s names RX queue %u twice", what,
                                      queues[i]);
            }
        }
    }
    return 0;
}

int devmem_emul_bind_rx_queues(struct devmem_emul *e, struct devmem_region *region,
                               unsigned int ifindex, const unsigned int *queues, size_t n,
                               uint32_t *id, struct devmem_err *err)
{
    struct emul_binding *b;
    int rc;

    if (0 == n) {
        return devmem_emul_bind_rx(e, region, id, err);
    }
    if (0 != (rc = check_queues(queues, n, "bind-rx", err))) {
        return rc;
    }
    for (size_t i = 0; i < n; i++) {
        if (NULL != (b = queue_owner(e, ifindex, queues[i]))) {
            return devmem_err_set(err, EEXIST, "emul: bind-rx: RX queue %u is bound already "
                                  "(binding %u)", queues[i], b->id);
        }
    }
    if (0 != (rc = devmem_emul_bind_rx(e, region, id, err))) {
        return rc;
    }
    b = devmem_emul_binding_find(e, *id);
    b->ifindex = ifindex;
    memcpy(b->queues, queues, n * sizeof(*queues));
    b->nqueues = n;
    return 0;
}

int devmem_emul_rss_ctx_create(struct devmem_emul *e, unsigned int ifindex,
                               const unsigned int *queues, size_t n, uint32_t *ctx,
                               struct devmem_err *err)
{
    struct emul_ctx *c;
    int rc;

    *ctx = 0;
    if (0 != (rc = check_queues(queues, n, "an RSS context", err))) {
        return rc;
    }
    if (0 != devmem_emul_grow((void **) &e->ctxs, &e->ctx_cap, e->nctx + 1, sizeof(*e->ctxs))) {
        return devmem_err_set(err, ENOMEM, "emul: out of memory");
    }
    c = &e->ctxs[e->nctx++];
    memset(c, 0, sizeof(*c));
    do { /* ids from 1, never 0 (the default context) nor one in use */
        c->id = ++e->next_ctx;
    } while (0 == c->id || ctx_find(e, c->id) != c);
    c->ifindex = ifindex;
    memcpy(c->queues, queues, n * sizeof(*queues));
    c->nqueues = n;
    *ctx = c->id;
    return 0;
}

int devmem_emul_rss_ctx_delete(struct devmem_emul *e, uint32_t ctx, struct devmem_err *err)
{
    struct emul_ctx *c = ctx_find(e, ctx);

    if (NULL == c) {
        return devmem_err_set(err, ENOENT, "emul: no RSS context %u", ctx);
    }
    for (size_t i = 0; i < e->nrules; i++) {
        if (e->rules[i].ctx == ctx) {
            return devmem_err_set(err, EBUSY, "emul: RSS context %u: the rule for port %u "
                                  "still steers into it", ctx, e->rules[i].port);
        }
    }
    *c = e->ctxs[--e->nctx];
    return 0;
}

int devmem_emul_steer_ctx(struct devmem_emul *e, uint16_t port, uint32_t ctx,
                          struct devmem_err *err)
{
    size_t i;

    if (NULL == ctx_find(e, ctx)) {
        return devmem_err_set(err, EINVAL, "emul: steer port %u into RSS context %u: no such "
                              "context", port, ctx);
    }
    for (i = 0; i < e->nrules && e->rules[i].port != port; i++) {
    }
    if (i == e->nrules) {
        if (0 != devmem_emul_grow((void **) &e->rules, &e->rules_cap, e->nrules + 1,
                                  sizeof(*e->rules))) {
            return devmem_err_set(err, ENOMEM, "emul: out of memory");
        }
        e->nrules++;
    }
    e->rules[i].port = port;
    e->rules[i].id = 0;
    e->rules[i].ctx = ctx;
    return 0;
}

struct emul_binding *devmem_emul_rule_target(struct devmem_emul *e, const struct emul_rule *r,
                                             struct emul_sock *s)
{
    if (0 == r->ctx) {
        struct emul_binding *b = devmem_emul_binding_find(e, r->id);

        if (NULL == b || !b->alive) {
            return NULL;
        }
        if (!s->has_queue) {
            s->queue = b->nqueues > 0 ? b->queues[0] : 0;
            s->ifindex = b->ifindex;
            s->has_queue = 1;
        }
        return b;
    }
    if (!s->has_queue) {
        struct emul_ctx *c = ctx_find(e, r->ctx);

        if (NULL == c) {
            return NULL;
        }
        s->queue = c->queues[c->flows++ % c->nqueues];
        s->ifindex = c->ifindex;
        s->has_queue = 1;
    }
    return queue_owner(e, s->ifindex, s->queue);
}

int devmem_emul_sock_queue(struct devmem_emul *e, int fd, unsigned int *queue)
{
    struct emul_sock *s = devmem_emul_sock_get(e, fd, 0);

    if (NULL == s || !s->has_queue) {
        return -ENOENT;
    }
    *queue = s->queue;
    return 0;
}

void devmem_emul_ctx_fini(struct devmem_emul *e)
{
    free(e->ctxs);
    e->ctxs = NULL;
    e->nctx = e->ctx_cap = 0;
}
