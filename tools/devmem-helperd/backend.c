/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the helper does to a NIC, behind one table (helperd.h):
 *   real      netdev netlink for bindings (one socket per binding: closing it unbinds),
 *             ethtool for header split, RSS, ntuple and steering rules (devmem/nic.h);
 *   emulated  the same bookkeeping with no kernel call, for CI: ids and rules are counted
 *             here, while the ranks' emulated kernel (devmem/emul.c) carries the data.
 */
#include "config.h"

#include "helperd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "netlink.h"
#include "nic.h"

/*
 * What a passed descriptor is, without touching the file itself: a client may pass a file of
 * a FUSE mount it serves, and any call into that file system (fstat, lseek, read) could block
 * the helper for good. /proc/self/fdinfo is written by the kernel from the open file alone;
 * a dmabuf adds its exporter and size there (dma_buf_show_fdinfo), which no other file can
 * imitate. The /proc/self/fd link, which any file system can make read "/dmabuf:x", is only
 * used to say what the descriptor was when it is refused.
 */
/* 0 and the size when fd is a dmabuf, -EBADF when it is not. The dmabuf's lines come in
 * the order size, count, exp_name, then its name, which the exporter's user may set to any
 * text, newlines included: so the first size line counts, it must come before exp_name, and
 * nothing after exp_name is read. */
static int dmabuf_size(int fd, const char *name, uint64_t *bytes)
{
    char path[64], text[4096], *line, *save = NULL;
    unsigned long long size = 0;
    bool sized = false;
    ssize_t n;
    int pfd;

    /* only a file the kernel names a dmabuf: another's fdinfo can be long (an epoll's lists
     * every watch) */
    if (0 != strncmp(name, "/dmabuf:", 8) && 0 != strncmp(name, "anon_inode:dmabuf", 17)) {
        return -EBADF;
    }
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    if ((pfd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        return -EBADF;
    }
    n = read(pfd, text, sizeof(text) - 1);
    close(pfd);
    if (n <= 0) {
        return -EBADF;
    }
    text[n] = '\0';
    for (line = strtok_r(text, "\n", &save); NULL != line; line = strtok_r(NULL, "\n", &save)) {
        if (!sized && 1 == sscanf(line, "size: %llu", &size)) {
            sized = true;
        } else if (0 == strncmp(line, "exp_name:", 9)) {
            if (!sized || 0 == size) {
                return -EBADF;
            }
            *bytes = (uint64_t) size;
            return 0;
        }
    }
    return -EBADF;
}

/* 0 and the size when fd is a memfd: F_GET_SEALS answers for shmem files only, and their
 * fstat never leaves the kernel. */
static int memfd_size(int fd, const char *name, uint64_t *bytes)
{
    struct stat st;

    if (0 != strncmp(name, "/memfd:", 7) || fcntl(fd, F_GET_SEALS) < 0 || 0 != fstat(fd, &st)
        || st.st_size <= 0) {
        return -EBADF;
    }
    *bytes = (uint64_t) st.st_size;
    return 0;
}

/* ------------------------------------------------------------------ real */

static int real_rx_queues(struct hd_iface *itf, unsigned int *n, struct devmem_err *err)
{
    struct devmem_nl_queues *q = calloc(1, sizeof(*q));
    struct devmem_nl *nl = NULL;
    int rc;

    if (NULL == q) {
        return devmem_err_set(err, ENOMEM, "out of memory");
    }
    rc = devmem_nl_open(&nl, err);
    if (0 == rc) {
        rc = devmem_nl_queue_get(nl, itf->ifindex, q, err);
    }
    *n = q->n_rx;
    devmem_nl_close(nl);
    free(q);
    return rc;
}

static int real_probe_rx(struct hd_iface *itf, struct devmem_err *err)
{
    unsigned int queue = itf->pol->qlo;
    struct devmem_nl *nl = NULL;
    struct devmem_err e;
    uint32_t id = 0;
    int fd = memfd_create("devmem-helperd-probe", MFD_CLOEXEC), rc;

    if (fd < 0 || 0 != ftruncate(fd, 1 << 20)) {
        rc = devmem_err_set(err, errno, "memfd for the device probe: %s", strerror(errno));
    } else if (0 != (rc = devmem_nl_open(&nl, &e))) {
        rc = devmem_err_set(err, -rc, "%s", e.msg);
    } else if (0 == (rc = devmem_nl_bind_rx(nl, itf->ifindex, fd, &queue, 1, &id, &e))) {
        rc = 0; /* a memfd bound: closing nl below unbinds it */
    } else if (EINVAL == e.code || EBADF == e.code) {
        rc = 0; /* the device passed; the fd did not, as it should */
    } else {
        rc = devmem_err_set(err, e.code, "the kernel refuses bind-rx on %s (RX queue %u): %s",
                            itf->name, queue, e.msg);
    }
    devmem_nl_close(nl);
    if (fd >= 0) {
        close(fd);
    }
    return rc;
}

static int real_check_dmabuf(int fd, const char *name, uint64_t *bytes,
                             struct devmem_err *err)
{
    if (0 != dmabuf_size(fd, name, bytes)) {
        return devmem_err_set(err, EBADF, "the descriptor passed as a dmabuf is not one (it is "
                              "%s)", name);
    }
    return 0;
}

static void note(struct hd_iface *itf, const char *what, const char *why)
{
    size_t used = strlen(itf->nic_note);

    if (NULL == strstr(itf->nic_note, what)) {
        snprintf(itf->nic_note + used, sizeof(itf->nic_note) - used, "%s%s: %s",
                 used ? "; " : "", what, why);
    }
}

/* The policy's rx-buf-len could not be had: the queues keep the driver's length. Said once
 * per interface, at start or at the first setup, whichever finds it. */
static void rx_buf_refused(struct hd_iface *itf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void rx_buf_refused(struct hd_iface *itf, const char *fmt, ...)
{
    char why[DEVMEM_ERR_MSG_MAX + 64];
    va_list ap;

    itf->rxbuf_refused = true;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    hd_log(LOG_WARNING, "%s: rx-buf-len %u (policy line %d) not set, its queues keep the "
           "driver's RX buffer length: %s", itf->name, (unsigned) itf->pol->rx_buf_len,
           itf->pol->at.line, why);
}

/*
 * The policy's rx-buf-len on itf (device-wide: Linux 6.18 has no per-queue length). apply
 * false changes nothing: a rings-set of the length in use is a no-op in the kernel, which
 * still refuses it where the driver cannot set the length at all. Only a length the driver
 * reports is changed, since only that can be put back.
 */
static void real_rx_buf(struct hd_iface *itf, bool apply)
{
    uint32_t want = itf->pol->rx_buf_len, in_use = 0;
    struct devmem_nic_rings rings;
    struct devmem_err e;
    int rc;

    if (0 == want || itf->rxbuf_refused) {
        return;
    }
    if (0 != (rc = devmem_nic_get_rings(itf->name, &rings, &e))) {
        rx_buf_refused(itf, "cannot read its ring parameters: %s", e.msg);
        return;
    }
    if (!rings.has_rx_buf_len || 0 == rings.rx_buf_len) {
        rx_buf_refused(itf, "the driver does not report its RX buffer length, so it could not "
                       "be put back");
        return;
    }
    itf->rxbuf_in_use = rings.rx_buf_len;
    if (rings.rx_buf_len == want) {
        return;
    }
    rc = devmem_nic_set_rx_buf_len(itf->name, apply ? want : rings.rx_buf_len, &in_use, &e);
    if (0 != rc) {
        rx_buf_refused(itf, "%s", e.msg);
        return;
    }
    if (!apply) {
        return;
    }
    if (!itf->rxbuf_set) {
        itf->rxbuf_was = rings.rx_buf_len;
    }
    itf->rxbuf_set = true;
    itf->rxbuf_in_use = in_use;
    hd_log(LOG_INFO, "%s: rx-buf-len %u (was %u; the driver reports %u)", itf->name,
           (unsigned) want, (unsigned) itf->rxbuf_was, (unsigned) in_use);
}

static void real_check_iface(struct hd_iface *itf)
{
    real_rx_buf(itf, false);
}

static int real_prepare_rx(struct hd_iface *itf, struct devmem_err *err)
{
    struct devmem_nic_rings rings;
    struct devmem_nic_rss rss;
    struct devmem_err e;
    int rc;

    rc = devmem_nic_get_rings(itf->name, &rings, &e);
    if (-EOPNOTSUPP == rc) {
        note(itf, "header split", "not reported by the driver");
    } else if (0 != rc) {
        return devmem_err_set(err, -rc, "reading header split on %s: %s", itf->name, e.msg);
    } else if (DEVMEM_NIC_HDS_ON != rings.tcp_data_split
               || (rings.has_hds_thresh && 0 != rings.hds_thresh)) {
        if (!itf->hds_set) {
            itf->hds_was = (int) rings.tcp_data_split;
            itf->hds_thresh_was = rings.hds_thresh;
            itf->hds_thresh_known = rings.has_hds_thresh;
        }
        rc = devmem_nic_set_header_split(itf->name, DEVMEM_NIC_HDS_ON, rings.has_hds_thresh, 0,
                                         &e);
        if (0 != rc) {
            return devmem_err_set(err, -rc, "turning header split on (hds-thresh 0) on %s: %s",
                                  itf->name, e.msg);
        }
        itf->hds_set = true;
        hd_log(LOG_INFO, "%s: header split on, hds-thresh 0", itf->name);
    }
    rc = devmem_nic_get_rss(itf->name, &rss, &e);
    if (0 != rc) {
        /* unverified, RSS could hash any user's flow into the bound queues */
        return devmem_err_set(err, -rc, "cannot read the RSS table of %s, so other flows could "
                              "hash into queues %u-%u: %s", itf->name, itf->pol->qlo,
                              itf->pol->qhi, e.msg);
    } else if (rss.spread > itf->pol->qlo) {
        if (0 == itf->pol->qlo) {
            return devmem_err_set(err, EINVAL, "the queue range of %s starts at 0, where RSS "
                                  "always sends traffic: start it above the RSS queues",
                                  itf->name);
        }
        rc = devmem_nic_set_rss_equal(itf->name, itf->pol->qlo, &e);
        if (0 != rc) {
            return devmem_err_set(err, -rc, "keeping RSS on queues 0-%u of %s: %s",
                                  itf->pol->qlo - 1, itf->name, e.msg);
        }
        itf->rss_set = true;
        hd_log(LOG_INFO, "%s: RSS spread over queues 0-%u only", itf->name, itf->pol->qlo - 1);
    }
    real_rx_buf(itf, true); /* last: most drivers restart every queue to change it */
    return 0;
}

static int real_bind(struct hd_iface *itf, int fd, bool rx, unsigned int first, unsigned int n,
                     uint32_t *id, void **kstate, struct devmem_err *err)
{
    unsigned int queues[HD_QUEUES_MAX];
    struct devmem_nl *nl = NULL;
    int rc;

    for (unsigned int i = 0; i < n && i < HD_QUEUES_MAX; i++) {
        queues[i] = first + i;
    }
    rc = devmem_nl_open(&nl, err);
    if (0 == rc) {
        rc = rx ? devmem_nl_bind_rx(nl, itf->ifindex, fd, queues, n, id, err)
                : devmem_nl_bind_tx(nl, itf->ifindex, fd, id, err);
    }
    if (0 != rc) {
        devmem_nl_close(nl);
        return rc;
    }
    *kstate = nl;
    return 0;
}

static int real_bind_rx(struct hd_iface *itf, int fd, unsigned int first, unsigned int n,
                        uint32_t *id, void **kstate, struct devmem_err *err)
{
    struct devmem_err e;
    int rc = real_bind(itf, fd, true, first, n, id, kstate, err);

    /* The devmem memory provider takes page-size buffers only (mp_dmabuf_devmem_init refuses
     * a page pool of a higher order with E2BIG, Linux 6.12 to 6.18): a driver that met the
     * larger rx-buf-len with larger pages cannot bind. Its own length back, and once more. */
    if (-E2BIG == rc && itf->rxbuf_set) {
        if (0 != devmem_nic_set_rx_buf_len(itf->name, itf->rxbuf_was, NULL, &e)) {
            hd_log(LOG_ERR, "%s: could not put rx-buf-len %u back: %s", itf->name,
                   (unsigned) itf->rxbuf_was, e.msg);
            return rc;
        }
        itf->rxbuf_set = false;
        itf->rxbuf_in_use = itf->rxbuf_was;
        rx_buf_refused(itf, "bind-rx failed with it (%s): this kernel's devmem takes page-size "
                       "buffers only; put back to %u", err->msg, (unsigned) itf->rxbuf_was);
        rc = real_bind(itf, fd, true, first, n, id, kstate, err);
    }
    return rc;
}

static int real_bind_tx(struct hd_iface *itf, int fd, uint32_t *id, void **kstate,
                        struct devmem_err *err)
{
    return real_bind(itf, fd, false, 0, 0, id, kstate, err);
}

static void real_unbind(struct hd_iface *itf, void *kstate)
{
    (void) itf;
    devmem_nl_close(kstate);
}

static int real_rule_add(struct hd_iface *itf, const struct devmem_nic_flow *flow,
                         uint32_t *rule, struct devmem_err *err)
{
    struct devmem_err e;
    int on = 0, rc;

    rc = devmem_nic_get_ntuple(itf->name, &on, &e);
    if (0 == rc && !on) {
        rc = devmem_nic_set_ntuple(itf->name, 1, &e);
        if (0 == rc) {
            itf->ntuple_set = true;
            hd_log(LOG_INFO, "%s: ntuple filters on", itf->name);
        }
    }
    if (0 != rc) {
        return devmem_err_set(err, -rc, "turning ntuple filters on on %s: %s", itf->name,
                              e.msg);
    }
    return devmem_nic_flow_add(itf->name, flow, rule, err);
}

static int real_ctx_add(struct hd_iface *itf, unsigned int first, unsigned int n,
                        uint32_t *ctx, struct devmem_err *err)
{
    return devmem_nic_rss_ctx_create(itf->name, first, n, ctx, err);
}

static int real_ctx_del(struct hd_iface *itf, uint32_t ctx)
{
    struct devmem_err e;
    int rc = devmem_nic_rss_ctx_delete(itf->name, ctx, &e);

    if (0 != rc) {
        hd_log(LOG_ERR, "%s: could not delete RSS context %u: %s", itf->name, ctx, e.msg);
    }
    return rc;
}

static int real_ctx_queues(struct hd_iface *itf, uint32_t ctx, uint64_t *mask,
                           struct devmem_err *err)
{
    return devmem_nic_rss_ctx_queues(itf->name, ctx, itf->pol->qlo, mask, err);
}

static int real_rules(struct hd_iface *itf, struct devmem_nic_rule *rules, size_t cap,
                      size_t *n, struct devmem_err *err)
{
    int rc = devmem_nic_flow_list(itf->name, rules, cap, n, err);

    if (-EOPNOTSUPP == rc) { /* no ntuple table: no rule can point anywhere */
        *n = 0;
        return 0;
    }
    return rc;
}

static int real_rule_del(struct hd_iface *itf, uint32_t rule)
{
    struct devmem_err e;
    int rc = devmem_nic_flow_del(itf->name, rule, &e);

    if (0 != rc) {
        hd_log(LOG_ERR, "%s: could not remove steering rule %u: %s", itf->name, rule, e.msg);
    }
    return rc;
}

static void real_restore(struct hd_iface *itf)
{
    struct devmem_err e;

    if (itf->ntuple_set && 0 != devmem_nic_set_ntuple(itf->name, 0, &e)) {
        hd_log(LOG_ERR, "%s: could not turn ntuple filters back off: %s", itf->name, e.msg);
    }
    if (itf->rss_set && 0 != devmem_nic_reset_rss(itf->name, &e)) {
        hd_log(LOG_ERR, "%s: could not give RSS back to the driver's default: %s", itf->name,
               e.msg);
    }
    if (itf->hds_set
        && 0 != devmem_nic_set_header_split(itf->name, (enum devmem_nic_hds) itf->hds_was,
                                            itf->hds_thresh_known, itf->hds_thresh_was, &e)) {
        hd_log(LOG_ERR, "%s: could not put header split back: %s", itf->name, e.msg);
    }
    if (itf->rxbuf_set) {
        if (0 != devmem_nic_set_rx_buf_len(itf->name, itf->rxbuf_was, NULL, &e)) {
            hd_log(LOG_ERR, "%s: could not put rx-buf-len %u back: %s", itf->name,
                   (unsigned) itf->rxbuf_was, e.msg);
        } else {
            itf->rxbuf_in_use = itf->rxbuf_was;
        }
    }
}

const struct hd_backend_ops hd_backend_real = {
    .name = "real",
    .rx_queues = real_rx_queues,
    .probe_rx = real_probe_rx,
    .check_dmabuf = real_check_dmabuf,
    .prepare_rx = real_prepare_rx,
    .check_iface = real_check_iface,
    .bind_rx = real_bind_rx,
    .bind_tx = real_bind_tx,
    .unbind = real_unbind,
    .ctx_add = real_ctx_add,
    .ctx_del = real_ctx_del,
    .ctx_queues = real_ctx_queues,
    .rule_add = real_rule_add,
    .rules = real_rules,
    .rule_del = real_rule_del,
    .restore = real_restore,
};

/* ------------------------------------------------------------------ emulated */

/* Binding ids are shared by RX and TX and never reused, as in the kernel (xa_alloc_cyclic). */
static uint32_t emul_next_id = 1, emul_next_rule = 1;

/*
 * The emulated NICs' steering rules and RSS contexts: those the helper makes, and strays that
 * a killed helper or an administrator would have left, given in DEVMEM_HELPERD_EMUL_STRAYS
 * (for tests): space-separated IFNAME:QUEUE (a rule into a queue) or IFNAME:ctx:FIRST-LAST
 * (a rule into a context over those queues), read at the first use.
 */
#define EMUL_MAX 64
static struct emul_rule {
    char ifname[DEVMEM_HELPER_IFNAME];
    uint32_t location, queue, ctx;
} emul_rule_tab[EMUL_MAX];
static struct emul_ctx {
    char ifname[DEVMEM_HELPER_IFNAME];
    uint32_t id;
    unsigned int first, n;
} emul_ctx_tab[EMUL_MAX];
static size_t emul_nrules, emul_nctx;
/* Context ids, like the kernel's, from 1 and per device; here one counter serves all. */
static uint32_t emul_next_ctx = 1;

static int emul_ctx_new(const char *ifname, unsigned int first, unsigned int n, uint32_t *ctx)
{
    if (emul_nctx == EMUL_MAX) {
        return -ENOSPC;
    }
    snprintf(emul_ctx_tab[emul_nctx].ifname, sizeof(emul_ctx_tab[0].ifname), "%s", ifname);
    emul_ctx_tab[emul_nctx].first = first;
    emul_ctx_tab[emul_nctx].n = n;
    *ctx = emul_ctx_tab[emul_nctx++].id = emul_next_ctx++;
    return 0;
}

static int emul_rule_new(const char *ifname, uint32_t queue, uint32_t ctx, uint32_t *location)
{
    if (emul_nrules == EMUL_MAX) {
        return -ENOSPC;
    }
    snprintf(emul_rule_tab[emul_nrules].ifname, sizeof(emul_rule_tab[0].ifname), "%s", ifname);
    emul_rule_tab[emul_nrules].queue = queue;
    emul_rule_tab[emul_nrules].ctx = ctx;
    *location = emul_rule_tab[emul_nrules++].location = emul_next_rule++;
    return 0;
}

static void emul_strays(void)
{
    static bool read;
    const char *env = getenv("DEVMEM_HELPERD_EMUL_STRAYS");
    char *copy, *tok, *save = NULL;

    if (read) {
        return;
    }
    read = true;
    if (NULL == env || NULL == (copy = strdup(env))) {
        return;
    }
    for (tok = strtok_r(copy, " ", &save); NULL != tok; tok = strtok_r(NULL, " ", &save)) {
        char ifname[DEVMEM_HELPER_IFNAME];
        unsigned int a, b;
        uint32_t ctx, loc;

        if (3 == sscanf(tok, "%15[^:]:ctx:%u-%u", ifname, &a, &b) && b >= a
            && 0 == emul_ctx_new(ifname, a, b - a + 1, &ctx)
            && 0 == emul_rule_new(ifname, 0, ctx, &loc)) {
            hd_log(LOG_INFO, "emulated %s: a stray rule %u into RSS context %u (queues %u-%u)",
                   ifname, loc, ctx, a, b);
        } else if (2 == sscanf(tok, "%15[^:]:%u", ifname, &a) && NULL == strstr(tok, ":ctx:")
                   && 0 == emul_rule_new(ifname, a, 0, &loc)) {
            hd_log(LOG_INFO, "emulated %s: a stray rule %u into queue %u", ifname, loc, a);
        } else {
            hd_log(LOG_ERR, "DEVMEM_HELPERD_EMUL_STRAYS: '%s' is neither IFNAME:QUEUE nor "
                   "IFNAME:ctx:FIRST-LAST; ignored", tok);
        }
    }
    free(copy);
}

static int emul_rx_queues(struct hd_iface *itf, unsigned int *n, struct devmem_err *err)
{
    (void) err;
    *n = itf->pol->qhi + 1; /* the emulated NIC has the queues the policy names */
    return 0;
}

/* The ranks' emulated kernel lands data in host memory (a memfd); a real dmabuf is taken too. */
static int emul_probe_rx(struct hd_iface *itf, struct devmem_err *err)
{
    (void) itf, (void) err;
    return 0;
}

static int emul_check_dmabuf(int fd, const char *name, uint64_t *bytes,
                             struct devmem_err *err)
{
    if (0 != dmabuf_size(fd, name, bytes) && 0 != memfd_size(fd, name, bytes)) {
        return devmem_err_set(err, EBADF, "the descriptor passed as a dmabuf is not one, nor "
                              "the memfd the emulated kernel takes (it is %s)", name);
    }
    return 0;
}

/* The emulated NIC reports no RX buffer length: the policy's is refused there, as by most
 * drivers, and said once. */
static void emul_check_iface(struct hd_iface *itf)
{
    if (0 != itf->pol->rx_buf_len && !itf->rxbuf_refused) {
        rx_buf_refused(itf, "the emulated kernel has no RX buffers to size");
    }
}

static int emul_prepare_rx(struct hd_iface *itf, struct devmem_err *err)
{
    if (0 == itf->pol->qlo) { /* as on a real NIC, whose RSS always uses queue 0 */
        return devmem_err_set(err, EINVAL, "the queue range of %s starts at 0, where RSS "
                              "always sends traffic: start it above the RSS queues", itf->name);
    }
    if (!itf->hds_set) {
        itf->hds_was = DEVMEM_NIC_HDS_OFF;
        itf->hds_set = true;
    }
    itf->rss_set = true; /* the range starts above 0: RSS is "kept below" it */
    emul_check_iface(itf);
    note(itf, "emulated", "no NIC was changed");
    return 0;
}

static int emul_bind_rx(struct hd_iface *itf, int fd, unsigned int first, unsigned int n,
                        uint32_t *id, void **kstate, struct devmem_err *err)
{
    (void) itf, (void) fd, (void) first, (void) n, (void) err;
    *id = emul_next_id++;
    *kstate = NULL;
    return 0;
}

static int emul_bind_tx(struct hd_iface *itf, int fd, uint32_t *id, void **kstate,
                        struct devmem_err *err)
{
    return emul_bind_rx(itf, fd, 0, 0, id, kstate, err);
}

static void emul_unbind(struct hd_iface *itf, void *kstate)
{
    (void) itf, (void) kstate;
}

static int emul_rule_add(struct hd_iface *itf, const struct devmem_nic_flow *flow,
                         uint32_t *rule, struct devmem_err *err)
{
    emul_strays();
    itf->ntuple_set = true;
    if (0 != emul_rule_new(itf->name, flow->queue, flow->rss_context, rule)) {
        return devmem_err_set(err, ENOSPC, "the emulated %s holds %d rules, its most",
                              itf->name, EMUL_MAX);
    }
    return 0;
}

static int emul_ctx_add(struct hd_iface *itf, unsigned int first, unsigned int n,
                        uint32_t *ctx, struct devmem_err *err)
{
    emul_strays();
    if (0 != emul_ctx_new(itf->name, first, n, ctx)) {
        return devmem_err_set(err, ENOSPC, "the emulated %s holds %d RSS contexts, its most",
                              itf->name, EMUL_MAX);
    }
    return 0;
}

static int emul_ctx_del(struct hd_iface *itf, uint32_t ctx)
{
    for (size_t i = 0; i < emul_nctx; i++) {
        if (emul_ctx_tab[i].id == ctx && 0 == strcmp(emul_ctx_tab[i].ifname, itf->name)) {
            emul_ctx_tab[i] = emul_ctx_tab[--emul_nctx];
            return 0;
        }
    }
    return -ENOENT;
}

static int emul_ctx_queues(struct hd_iface *itf, uint32_t ctx, uint64_t *mask,
                           struct devmem_err *err)
{
    *mask = 0;
    for (size_t i = 0; i < emul_nctx; i++) {
        const struct emul_ctx *x = &emul_ctx_tab[i];

        if (x->id != ctx || 0 != strcmp(x->ifname, itf->name)) {
            continue;
        }
        for (unsigned int q = x->first; q < x->first + x->n; q++) {
            if (q >= itf->pol->qlo && q - itf->pol->qlo < 64) {
                *mask |= 1ull << (q - itf->pol->qlo);
            }
        }
        return 0;
    }
    return devmem_err_set(err, ENOENT, "the emulated %s has no RSS context %u", itf->name, ctx);
}

static int emul_rules(struct hd_iface *itf, struct devmem_nic_rule *rules, size_t cap,
                      size_t *n, struct devmem_err *err)
{
    (void) err;
    emul_strays();
    *n = 0;
    for (size_t i = 0; i < emul_nrules; i++) {
        if (0 != strcmp(emul_rule_tab[i].ifname, itf->name)) {
            continue;
        }
        if (*n < cap) {
            rules[*n].location = emul_rule_tab[i].location;
            rules[*n].queue = emul_rule_tab[i].queue;
            rules[*n].rss_ctx = emul_rule_tab[i].ctx;
            rules[*n].drop = 0;
        }
        (*n)++;
    }
    return 0;
}

static int emul_rule_del(struct hd_iface *itf, uint32_t rule)
{
    for (size_t i = 0; i < emul_nrules; i++) {
        if (emul_rule_tab[i].location == rule && 0 == strcmp(emul_rule_tab[i].ifname, itf->name)) {
            emul_rule_tab[i] = emul_rule_tab[--emul_nrules];
            return 0;
        }
    }
    return -ENOENT;
}

static void emul_restore(struct hd_iface *itf)
{
    (void) itf;
}

const struct hd_backend_ops hd_backend_emulated = {
    .name = "emulated",
    .rx_queues = emul_rx_queues,
    .probe_rx = emul_probe_rx,
    .check_dmabuf = emul_check_dmabuf,
    .prepare_rx = emul_prepare_rx,
    .check_iface = emul_check_iface,
    .bind_rx = emul_bind_rx,
    .bind_tx = emul_bind_tx,
    .unbind = emul_unbind,
    .ctx_add = emul_ctx_add,
    .ctx_del = emul_ctx_del,
    .ctx_queues = emul_ctx_queues,
    .rule_add = emul_rule_add,
    .rules = emul_rules,
    .rule_del = emul_rule_del,
    .restore = emul_restore,
};
