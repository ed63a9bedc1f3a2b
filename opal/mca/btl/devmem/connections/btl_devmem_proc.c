/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peers: modex records and address choice.
 *
 * Address choice: ranks on the same host talk over loopback when both publish it (the
 * fastest path, and it keeps host-local traffic off the NIC); ranks on different hosts
 * never use loopback. Otherwise a module pairs with a peer address on its own subnet and
 * the same link number; failing that, the first non-loopback module takes the peer's
 * first non-loopback address (a routed path).
 */
#include "opal_config.h"

#include <string.h>

#include "opal/mca/hwloc/hwloc-internal.h"
#include "opal/util/proc.h"

#include "sockets/btl_devmem_sock.h"
#include "connections/btl_devmem_endpoint.h"
#include "connections/btl_devmem_proc.h"

static void proc_construct(mca_btl_devmem_proc_t *p)
{
    p->proc = NULL;
    p->addrs = NULL;
    p->naddrs = 0;
    p->endpoints = NULL;
    p->secret = 0;
    OBJ_CONSTRUCT(&p->lock, opal_mutex_t);
}

static void proc_destruct(mca_btl_devmem_proc_t *p)
{
    free(p->addrs);
    free(p->endpoints);
    OBJ_DESTRUCT(&p->lock);
}

OBJ_CLASS_INSTANCE(mca_btl_devmem_proc_t, opal_object_t, proc_construct, proc_destruct);

int mca_btl_devmem_proc_read_modex(const opal_process_name_t *name, bool own, uint64_t *secret,
                                   uint8_t machine[16], struct mca_btl_devmem_modex_addr **addrs,
                                   int *naddrs)
{
    struct mca_btl_devmem_modex_hdr hdr;
    struct mca_btl_devmem_modex_addr *a = NULL;
    uint8_t *blob = NULL;
    size_t size = 0;
    int rc;

#ifdef OPAL_MODEX_RECV_IMMEDIATE
    if (own) {
        OPAL_MODEX_RECV_IMMEDIATE(rc, &mca_btl_devmem_component.super.btl_version, name,
                                  (void **) &blob, &size);
    } else
#endif
    {
        (void) own; /* Open MPI 4.1 answers at once for a key nobody has put */
        OPAL_MODEX_RECV(rc, &mca_btl_devmem_component.super.btl_version, name, (void **) &blob,
                        &size);
    }
    if (OPAL_SUCCESS != rc) {
        DEVMEM_VERBOSE(10, "no btl_devmem modex record from %s (%d)", OPAL_NAME_PRINT(*name),
                       rc);
        return rc;
    }
    if (size < sizeof(hdr)) {
        rc = OPAL_ERR_BAD_PARAM;
        goto out;
    }
    memcpy(&hdr, blob, sizeof(hdr));
    if (MCA_BTL_DEVMEM_MODEX_MAGIC != hdr.magic || MCA_BTL_DEVMEM_MODEX_VERSION != hdr.version
        || size != sizeof(hdr) + (size_t) hdr.naddrs * sizeof(*a)) {
        opal_output(0, "btl:devmem: the modex record of %s is malformed or from another "
                       "btl_devmem version (%zu bytes); not using it",
                    OPAL_NAME_PRINT(*name), size);
        rc = OPAL_ERR_BAD_PARAM;
        goto out;
    }
    if (hdr.naddrs > 0) {
        a = malloc(hdr.naddrs * sizeof(*a));
        if (NULL == a) {
            rc = OPAL_ERR_OUT_OF_RESOURCE;
            goto out;
        }
        memcpy(a, blob + sizeof(hdr), hdr.naddrs * sizeof(*a));
    }
    *secret = hdr.secret;
    if (NULL != machine) {
        memcpy(machine, hdr.machine, sizeof(hdr.machine));
    }
    *addrs = a;
    *naddrs = hdr.naddrs;
    rc = OPAL_SUCCESS;
out:
    free(blob);
    return rc;
}

mca_btl_devmem_proc_t *mca_btl_devmem_proc_lookup(const opal_process_name_t *name)
{
    mca_btl_devmem_proc_t *peer = NULL;

    OPAL_THREAD_LOCK(&mca_btl_devmem_component.lock);
    opal_proc_table_get_value(&mca_btl_devmem_component.procs, *name, (void **) &peer);
    OPAL_THREAD_UNLOCK(&mca_btl_devmem_component.lock);
    return peer;
}

/* A peer on our machine counts among the ranks sharing its CPUs (the idle policy's
 * oversubscription), also where Open MPI places it on another node: ranks in containers or
 * network namespaces of one machine, each taken for a node of its own. */
static void count_machine(const mca_btl_devmem_proc_t *peer, const uint8_t machine[16])
{
    static const uint8_t unknown[16];
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    if (0 == memcmp(machine, unknown, sizeof(unknown))
        || 0 != memcmp(machine, c->machine, sizeof(c->machine))) {
        return;
    }
    (void) __atomic_fetch_add(&c->machine_peers, 1, __ATOMIC_RELAXED);
    if (!OPAL_PROC_ON_LOCAL_HOST(peer->proc->proc_flags)) {
        DEVMEM_VERBOSE(10, "%s runs on this machine (same kernel boot id) though Open MPI "
                       "places it on another node: a rank sharing our CPUs",
                       OPAL_NAME_PRINT(peer->name));
    }
}

mca_btl_devmem_proc_t *mca_btl_devmem_proc_create(opal_proc_t *proc)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    mca_btl_devmem_proc_t *peer = NULL;
    uint8_t machine[16];

    OPAL_THREAD_LOCK(&c->lock);
    opal_proc_table_get_value(&c->procs, proc->proc_name, (void **) &peer);
    if (NULL != peer) {
        OPAL_THREAD_UNLOCK(&c->lock);
        return peer;
    }
    peer = OBJ_NEW(mca_btl_devmem_proc_t);
    if (NULL == peer) {
        goto fail;
    }
    peer->proc = proc;
    peer->name = proc->proc_name;
    peer->endpoints = calloc(mca_btl_devmem_num_modules, sizeof(*peer->endpoints));
    if (NULL == peer->endpoints
        || OPAL_SUCCESS != mca_btl_devmem_proc_read_modex(&peer->name, false, &peer->secret,
                                                          machine, &peer->addrs,
                                                          &peer->naddrs)) {
        goto fail;
    }
    count_machine(peer, machine);
    opal_proc_table_set_value(&c->procs, proc->proc_name, peer);
    OPAL_THREAD_UNLOCK(&c->lock);
    return peer;
fail:
    OPAL_THREAD_UNLOCK(&c->lock);
    if (NULL != peer) {
        OBJ_RELEASE(peer);
    }
    return NULL;
}

mca_btl_devmem_proc_t *mca_btl_devmem_proc_lookup_or_add(const opal_process_name_t *name)
{
    mca_btl_devmem_proc_t *peer = mca_btl_devmem_proc_lookup(name);
    opal_proc_t *proc;

    if (NULL != peer) {
        return peer;
    }
    proc = opal_proc_for_name(*name);
    if (NULL == proc || proc == opal_proc_local_get()) {
        return NULL; /* not in the job, or ourselves: btl/self's */
    }
    DEVMEM_VERBOSE(20, "adding %s, which connected before the PML asked for it",
                   OPAL_NAME_PRINT(*name));
    return mca_btl_devmem_proc_create(proc);
}

int mca_btl_devmem_proc_endpoint(mca_btl_devmem_proc_t *peer, mca_btl_devmem_module_t *m,
                                 struct mca_btl_base_endpoint_t **out)
{
    const struct mca_btl_devmem_modex_addr *addr;
    mca_btl_devmem_endpoint_t *ep;

    *out = NULL;
    OPAL_THREAD_LOCK(&peer->lock);
    ep = peer->endpoints[m->index];
    if (NULL == ep) {
        if (NULL == (addr = mca_btl_devmem_proc_pick_addr(peer, m))) {
            OPAL_THREAD_UNLOCK(&peer->lock);
            return OPAL_SUCCESS;
        }
        ep = mca_btl_devmem_endpoint_new();
        if (NULL == ep) {
            OPAL_THREAD_UNLOCK(&peer->lock);
            return OPAL_ERR_OUT_OF_RESOURCE;
        }
        ep->module = m;
        ep->peer = peer;
        ep->remote = *addr;
        peer->endpoints[m->index] = ep;
        OPAL_THREAD_LOCK(&m->lock);
        opal_list_append(&m->endpoints, &ep->super);
        OPAL_THREAD_UNLOCK(&m->lock);
    }
    OPAL_THREAD_UNLOCK(&peer->lock);
    *out = ep;
    return OPAL_SUCCESS;
}

static bool on_same_host(const mca_btl_devmem_proc_t *peer)
{
    return OPAL_PROC_ON_LOCAL_HOST(peer->proc->proc_flags);
}

static bool peer_has_loopback(const mca_btl_devmem_proc_t *peer, uint32_t link)
{
    for (int i = 0; i < peer->naddrs; i++) {
        if ((peer->addrs[i].flags & MCA_BTL_DEVMEM_ADDR_LOOPBACK) && peer->addrs[i].link == link) {
            return true;
        }
    }
    return false;
}

static bool we_have_loopback(uint32_t link)
{
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        const mca_btl_devmem_module_t *m = mca_btl_devmem_modules[i];
        if (m->itf.loopback && m->link == link) {
            return true;
        }
    }
    return false;
}

/* Is module `m` the one that takes the routed fallback for this link number? */
static bool first_routable_module(const mca_btl_devmem_module_t *m)
{
    for (int i = 0; i < mca_btl_devmem_num_modules; i++) {
        const mca_btl_devmem_module_t *o = mca_btl_devmem_modules[i];
        if (!o->itf.loopback && o->link == m->link && o->itf.addr.family == m->itf.addr.family) {
            return o == m;
        }
    }
    return false;
}

/* Is the peer's record a's address of m's family and, under the shorter of the two
 * prefixes, on m's network? */
static bool same_net(const struct mca_btl_devmem_modex_addr *a, const mca_btl_devmem_module_t *m)
{
    struct mca_btl_devmem_ip ip;
    uint8_t prefix = a->prefix < m->itf.prefix ? a->prefix : m->itf.prefix;

    return mca_btl_devmem_modex_ip(a, &ip) && mca_btl_devmem_ip_same_net(&ip, &m->itf.addr, prefix);
}

static bool same_family(const struct mca_btl_devmem_modex_addr *a,
                        const mca_btl_devmem_module_t *m)
{
    struct mca_btl_devmem_ip ip;

    return mca_btl_devmem_modex_ip(a, &ip) && ip.family == m->itf.addr.family;
}

const struct mca_btl_devmem_modex_addr *
mca_btl_devmem_proc_pick_addr(const mca_btl_devmem_proc_t *peer, const mca_btl_devmem_module_t *m)
{
    bool local = on_same_host(peer);

    if (local && peer_has_loopback(peer, m->link) && we_have_loopback(m->link)) {
        /* both sides have loopback: it is the only path between them */
        if (!m->itf.loopback) {
            return NULL;
        }
        for (int i = 0; i < peer->naddrs; i++) {
            if ((peer->addrs[i].flags & MCA_BTL_DEVMEM_ADDR_LOOPBACK)
                && peer->addrs[i].link == m->link && same_family(&peer->addrs[i], m)) {
                return &peer->addrs[i];
            }
        }
        return NULL;
    }
    if (m->itf.loopback) {
        return NULL; /* a peer's 127.0.0.1 is not ours unless it shares our host */
    }
    for (int i = 0; i < peer->naddrs; i++) {
        const struct mca_btl_devmem_modex_addr *a = &peer->addrs[i];
        if (!(a->flags & MCA_BTL_DEVMEM_ADDR_LOOPBACK) && a->link == m->link && same_net(a, m)) {
            return a;
        }
    }
    /* No shared subnet with this module: does any of our modules share one? If not, the
     * first routable module takes a routed path. */
    for (int j = 0; j < mca_btl_devmem_num_modules; j++) {
        const mca_btl_devmem_module_t *o = mca_btl_devmem_modules[j];
        if (o->itf.loopback || o->link != m->link) {
            continue;
        }
        for (int i = 0; i < peer->naddrs; i++) {
            const struct mca_btl_devmem_modex_addr *a = &peer->addrs[i];
            if (!(a->flags & MCA_BTL_DEVMEM_ADDR_LOOPBACK) && a->link == o->link
                && same_net(a, o)) {
                return NULL;
            }
        }
    }
    if (!first_routable_module(m)) {
        return NULL;
    }
    /* a routed path: same family, and never to a link-local address, which is no route */
    for (int i = 0; i < peer->naddrs; i++) {
        struct mca_btl_devmem_ip ip;
        if (!(peer->addrs[i].flags & MCA_BTL_DEVMEM_ADDR_LOOPBACK)
            && peer->addrs[i].link == m->link && mca_btl_devmem_modex_ip(&peer->addrs[i], &ip)
            && ip.family == m->itf.addr.family && !mca_btl_devmem_ip_is_link_local(&ip)
            && !mca_btl_devmem_ip_is_link_local(&m->itf.addr)) {
            return &peer->addrs[i];
        }
    }
    return NULL;
}

void mca_btl_devmem_proc_release_all(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    opal_process_name_t name;
    void *value, *node1 = NULL, *node2 = NULL;
    int rc;

    OPAL_THREAD_LOCK(&c->lock);
    rc = opal_proc_table_get_first_key(&c->procs, &name, &value, &node1, &node2);
    while (OPAL_SUCCESS == rc) {
        mca_btl_devmem_proc_t *peer = value;
        OBJ_RELEASE(peer);
        rc = opal_proc_table_get_next_key(&c->procs, &name, &value, node1, &node1, node2, &node2);
    }
    opal_proc_table_remove_all(&c->procs);
    OPAL_THREAD_UNLOCK(&c->lock);
}
