/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * devmem-probe: what this host offers for Linux device-memory TCP, interface by interface,
 * with the kernel's own words for every refusal, and a one-line verdict per interface.
 *
 * The bind checks need a dmabuf fd. Where no dmabuf exporter works (no /dev/udmabuf, no
 * GPU), a memfd stands in: the kernel refuses a device without devmem support before it
 * looks at the fd, so the answer for such devices is the real one; a capable device gets
 * as far as the fd and refuses the memfd, which the probe reports as such.
 */
#define _GNU_SOURCE
#include "config.h"

#include "err.h"
#include "helper_client.h"
#include "netlink.h"
#include "netlink_dev.h"
#include "nic.h"
#include "nic_admin.h"
#include "uapi.h"

/* The memory providers: what can export a dmabuf here. */
#include "cudrv.h"
#include "drivers.h"
#include "dmabuf.h"
#include "locality.h"

#include <errno.h>
#include <glob.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <unistd.h>

/* Small enough for any exporter's limit (udmabuf caps at 64 MiB by default). */
#define PROBE_DMABUF_SIZE (2u << 20)

struct probe_opts {
    const char *ifname; /* NULL: every interface */
    int verbose;
    int bind;           /* 0: skip the bind checks */
    const char *helper; /* devmem-helperd's socket */
};

/* The fd the bind checks pass to the kernel. */
struct probe_fd {
    int fd;
    int is_memfd;
    char source[256]; /* how it was made, for the report */
    struct devmem_region region;
    int have_region;
};

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: devmem-probe [-i IFNAME] [-n] [-v] [--helper PATH] [--help]\n"
            "Report what this host offers for Linux device-memory TCP (devmem): per network\n"
            "interface the driver, queues, header split, RSS and flow steering, and what the\n"
            "kernel answers to bind-rx and bind-tx, with a one-line verdict; and the GPUs.\n"
            "\n"
            "  -i IFNAME  probe this interface only\n"
            "  -n         skip the bind-rx/bind-tx checks\n"
            "  -v         more detail\n"
            "  --helper PATH  ask the devmem-helperd listening there (default %s)\n"
            "  --help     this text\n"
            "\n"
            "bind-rx and bind-tx need CAP_NET_ADMIN (bind-tx may not on some kernels). They use\n"
            "a real dmabuf when an exporter works here and otherwise a memfd, and say which.\n"
            "On a devmem-capable NIC with a real dmabuf, bind-rx binds the last RX queue for a\n"
            "moment (the kernel restarts that queue) and the probe unbinds it at once.\n"
            "Exit status: 0 when the probe ran (whatever it found), 2 on bad usage.\n",
            DEVMEM_HELPER_SOCKET_DEFAULT);
}

/* ---- GPUs and dmabuf exporters ------------------------------------------------------------ */

static int count_glob(const char *pattern, char *list, size_t size)
{
    glob_t g;
    size_t used = 0;
    int n = 0;

    if (0 != glob(pattern, 0, NULL, &g)) {
        return 0;
    }
    for (size_t i = 0; i < g.gl_pathc; i++) {
        int w = snprintf(list + used, size - used, "%s%s", used ? " " : "", g.gl_pathv[i]);

        if (w > 0 && (size_t) w < size - used) {
            used += (size_t) w;
        }
        n++;
    }
    globfree(&g);
    return n;
}

static void report_gpus(void)
{
    char nv[256] = "", dri[256] = "", kfd[64] = "";
    int n_nv = count_glob("/dev/nvidia[0-9]*", nv, sizeof(nv));
    int n_dri = count_glob("/dev/dri/renderD*", dri, sizeof(dri));
    int n_kfd = count_glob("/dev/kfd", kfd, sizeof(kfd));

    if (0 == n_nv + n_dri + n_kfd) {
        printf("GPUs: none found (no /dev/nvidia*, /dev/dri/renderD*, /dev/kfd)\n");
    } else {
        printf("GPUs: %s%s%s%s%s\n", nv, n_nv && (n_dri || n_kfd) ? " " : "", dri,
               n_dri && n_kfd ? " " : "", kfd);
    }
    {
        static const char *const names[] = {"cuda", "drm", "udmabuf"};

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            const struct devmem_provider *p = devmem_provider_find(names[i]);
            struct devmem_err e;

            devmem_err_clear(&e);
            if (NULL == p) {
                continue;
            }
            /* the provider's reason names the provider itself */
            if (0 == p->probe(&e)) {
                printf("  dmabuf provider %s: usable\n", names[i]);
            } else {
                printf("  dmabuf provider unavailable: %s\n", e.msg);
            }
        }
    }
}

/* Per GPU, how far each interface is on the PCI topology: where several could carry devmem,
 * the component gives the device path to the nearest (btl_devmem_near). */
static void report_locality(const char *only)
{
    struct if_nameindex *ifs = NULL;
    struct devmem_topo *topo = NULL;
    struct devmem_err e;
    int n = 0;

    if (0 != devmem_cuda_device_count(&n, &e)) {
        return; /* report_gpus said why */
    }
    if (0 != devmem_topo_open(&topo, NULL, &e) || NULL == (ifs = if_nameindex())) {
        printf("NIC locality: unknown (%s)\n", NULL == topo ? e.msg : strerror(errno));
        devmem_topo_close(topo);
        return;
    }
    for (int g = 0; g < n; g++) {
        char busid[32];

        if (0 != devmem_cuda_pci_bus_id(g, busid, sizeof(busid), &e)) {
            printf("NIC locality of GPU %d: unknown (%s)\n", g, e.msg);
            continue;
        }
        printf("NIC locality of GPU %d (%s), nearest class wins:", g, busid);
        for (struct if_nameindex *it = ifs; 0 != it->if_index; it++) {
            enum devmem_path p;

            if (NULL != only && 0 != strcmp(only, it->if_name)) {
                continue;
            }
            if (0 != devmem_topo_path(topo, busid, it->if_name, &p, &e)) {
                printf(" (%s)", e.msg);
                break;
            }
            printf(" %s=%s", it->if_name, devmem_path_name(p));
        }
        printf("\n");
    }
    if_freenameindex(ifs);
    devmem_topo_close(topo);
}

/* A real dmabuf where an exporter works, else a memfd. */
static void make_fd(struct probe_fd *pf)
{
    char why[128] = "";

    memset(pf, 0, sizeof(*pf));
    pf->fd = -1;
    {
        static const char *const names[] = {"udmabuf", "cuda", "drm"};
        size_t used = 0;

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
            const struct devmem_provider *p = devmem_provider_find(names[i]);
            struct devmem_err e;

            devmem_err_clear(&e);
            if (NULL == p || 0 != p->probe(&e)
                || 0 != devmem_region_alloc(&pf->region, p, PROBE_DMABUF_SIZE, 0, &e)) {
                int w = snprintf(why + used, sizeof(why) - used, "%s%s", used ? ", " : "",
                                 names[i]);

                if (w > 0 && (size_t) w < sizeof(why) - used) {
                    used += (size_t) w;
                }
                continue;
            }
            if (pf->region.dmabuf_fd < 0) {
                devmem_region_release(&pf->region);
                continue;
            }
            pf->have_region = 1;
            pf->fd = pf->region.dmabuf_fd;
            snprintf(pf->source, sizeof(pf->source), "a %u KiB %s dmabuf",
                     PROBE_DMABUF_SIZE >> 10, names[i]);
            return;
        }
    }
    pf->fd = memfd_create("devmem-probe", MFD_CLOEXEC);
    if (pf->fd >= 0 && 0 != ftruncate(pf->fd, PROBE_DMABUF_SIZE)) {
        close(pf->fd);
        pf->fd = -1;
    }
    if (pf->fd < 0) {
        snprintf(pf->source, sizeof(pf->source), "none (memfd_create: %s)", strerror(errno));
        return;
    }
    pf->is_memfd = 1;
    snprintf(pf->source, sizeof(pf->source), "a memfd standing in for a dmabuf (no exporter "
             "works here: %s)", why);
}

static void release_fd(struct probe_fd *pf)
{
    if (pf->have_region) {
        devmem_region_release(&pf->region);
        pf->fd = -1;
    }
    if (pf->fd >= 0) {
        close(pf->fd);
    }
}

/* ---- one interface ------------------------------------------------------------------------ */

/* The RX buffer length in use, and whether the driver lets devmem-helperd change it: a
 * rings-set of the length in use is a no-op in the kernel, which still refuses it where the
 * driver cannot set the length (Linux 6.18 advertises no maximum). */
static void print_rx_buf_len(const char *ifname, uint32_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uint32_t frag = page > 0 && (uint32_t) page < len ? (uint32_t) page : len;
    struct devmem_err e;
    int rc;

    /* the devmem provider of Linux 6.12-6.18 hands out page-size buffers only */
    printf("  RX buffers:    rx-buf-len %u bytes in use (a token covers at most one buffer",
           (unsigned) len);
    if (frag < len) {
        printf(", and with devmem on Linux up to 6.18 one %u-byte page", (unsigned) frag);
    }
    printf(": at least %u tokens a MiB)\n", (unsigned) ((1u << 20) / frag));
    rc = devmem_nic_set_rx_buf_len(ifname, len, NULL, &e);
    if (0 == rc) {
        printf("                 the driver can set it: devmem-helperd's policy line "
               "\"interface %s queues LO-HI rx-buf-len SIZE\" raises it\n", ifname);
    } else if (-EPERM == rc) {
        printf("                 whether the driver can set it: needs CAP_NET_ADMIN to ask\n");
    } else {
        printf("                 the driver cannot set it (%s)\n", e.msg);
    }
}

static const char *hds_name(enum devmem_nic_hds h)
{
    switch (h) {
    case DEVMEM_NIC_HDS_ON:
        return "on";
    case DEVMEM_NIC_HDS_OFF:
        return "off";
    default:
        return "not reported";
    }
}

/* The part of an error message after "netlink: bind-rx on IF: ": errno text and kernel words. */
static const char *words(const struct devmem_err *e)
{
    const char *p = strstr(e->msg, ": ");

    p = NULL == p ? NULL : strstr(p + 2, ": ");
    return NULL == p ? e->msg : p + 2;
}

/* Describe a bind result for the verdict: what the kernel's refusal means. */
static void bind_verdict(char *out, size_t size, const char *op, int rc,
                         const struct devmem_err *e, const struct probe_fd *pf,
                         const char *driver)
{
    char advice[160];

    switch (-rc) {
    case 0:
        snprintf(out, size, "%s works", op);
        break;
    case EPERM:
        snprintf(out, size, "%s unknown without CAP_NET_ADMIN", op);
        break;
    case EOPNOTSUPP:
        /* on a kernel older than the driver's devmem, name the kernel that has it */
        devmem_driver_advice(driver, 'T' == op[0], advice, sizeof(advice));
        snprintf(out, size, "%s: %s%s%s", op, words(e), advice[0] ? "; " : "", advice);
        break;
    case EINVAL:
    case EBADF:
        if (pf->is_memfd) {
            snprintf(out, size, "%s: the device passed the kernel's checks and only the memfd "
                     "stand-in was refused (%s); a real dmabuf is needed to finish the check",
                     op, words(e));
            break;
        }
        /* fall through */
    default:
        snprintf(out, size, "%s: %s", op, words(e));
        break;
    }
}

/* The driver's line in the table of drivers with devmem TCP. */
static void driver_support(const char *driver)
{
    const struct devmem_driver *d = devmem_driver_find(driver);
    char all[256];

    if (NULL == d) {
        devmem_driver_list(all, sizeof(all));
        printf("  devmem TCP:    not in this driver in any kernel this probe knows (devmem RX "
               "since Linux: %s)\n", all);
        return;
    }
    printf("  devmem TCP:    RX since Linux %d.%d, TX since %d.%d%s%s\n", d->rx[0], d->rx[1],
           d->tx[0], d->tx[1], NULL != d->needs ? "; needs " : "",
           NULL != d->needs ? d->needs : "");
}

static void probe_if(const char *ifname, unsigned int ifindex, struct devmem_nl **nlp,
                     const struct probe_fd *pf, const struct probe_opts *o)
{
    struct devmem_nl *nl = *nlp;
    static struct devmem_nl_queues qs; /* 4 KiB: keep it off the stack */
    struct devmem_nic_drvinfo drv;
    struct devmem_nic_channels ch;
    struct devmem_nic_rings rings;
    struct devmem_nic_rss rss;
    struct devmem_err e;
    char rx_v[512] = "", tx_v[512] = "";
    int have_queues = 0, have_rings = 0, rx_rc = 1, tx_rc = 1, tx_absent = 0;
    int ntuple = 0;
    int rc;

    printf("\n%s (ifindex %u)\n", ifname, ifindex);

    rc = devmem_nic_drvinfo(ifname, &drv, &e);
    if (0 == rc) {
        printf("  driver:        %s%s%s\n", drv.driver, drv.bus_info[0] ? ", bus " : "",
               drv.bus_info);
        driver_support(drv.driver);
    } else {
        printf("  driver:        unknown (%s)\n", e.msg);
        drv.driver[0] = '\0';
    }

    if (NULL != nl) {
        rc = devmem_nl_queue_get(nl, ifindex, &qs, &e);
        if (0 == rc) {
            have_queues = 1;
            printf("  queues:        %u RX (%u bound to a dmabuf), %u TX\n", qs.n_rx,
                   qs.n_rx_bound, qs.n_tx);
            if (o->verbose) {
                for (unsigned int q = 0; q < qs.n_rx && q < DEVMEM_NL_MAX_QUEUES; q++) {
                    if (0 != qs.rx_dmabuf[q]) {
                        printf("                 RX queue %u: dmabuf binding %u\n", q,
                               qs.rx_dmabuf[q]);
                    }
                }
            }
        } else {
            printf("  queues:        unknown (%s)\n", e.msg);
        }
        if (o->verbose) {
            struct devmem_nl_dev dev;

            if (0 == devmem_nl_dev_get(nl, ifindex, &dev, &e)) {
                printf("  netdev:        xdp-features 0x%llx, xsk-features 0x%llx\n",
                       (unsigned long long) dev.xdp_features,
                       (unsigned long long) dev.xsk_features);
            } else {
                printf("  netdev:        %s\n", e.msg);
            }
        }
    }

    rc = devmem_nic_get_channels(ifname, &ch, &e);
    if (0 == rc) {
        printf("  channels:      rx %u, tx %u, combined %u (max rx %u, tx %u, combined %u)\n",
               ch.rx, ch.tx, ch.combined, ch.max_rx, ch.max_tx, ch.max_combined);
    } else {
        printf("  channels:      unknown (%s)\n", e.msg);
    }

    rc = devmem_nic_get_rings(ifname, &rings, &e);
    if (0 == rc) {
        have_rings = 1;
        printf("  header split:  tcp-data-split %s", hds_name(rings.tcp_data_split));
        if (rings.has_hds_thresh) {
            printf(", hds-thresh %u (max %u)", rings.hds_thresh, rings.hds_thresh_max);
        } else {
            printf(", hds-thresh not reported");
        }
        printf("\n");
        /* a devmem fragment (a token to give back) holds at most one RX buffer */
        if (rings.has_rx_buf_len && rings.rx_buf_len > 0) {
            print_rx_buf_len(ifname, rings.rx_buf_len);
        } else {
            printf("  RX buffers:    rx-buf-len not reported (the driver's own, a page or a "
                   "packet: a token per packet)\n");
        }
        if (o->verbose) {
            printf("  rings:         rx %u/%u, tx %u/%u\n", rings.rx, rings.rx_max, rings.tx,
                   rings.tx_max);
        }
    } else {
        printf("  header split:  unknown (%s)\n", e.msg);
    }

    rc = devmem_nic_get_rss(ifname, &rss, &e);
    if (0 == rc) {
        printf("  RSS:           %u RX rings, table of %u spreads over queues 0..%u\n",
               rss.rx_rings, rss.table_size, rss.spread ? rss.spread - 1 : 0);
    } else {
        printf("  RSS:           unknown (%s)\n", e.msg);
    }

    rc = devmem_nic_get_ntuple(ifname, &ntuple, &e);
    if (0 == rc) {
        uint32_t n_rules = 0, table = 0;

        printf("  flow steering: ntuple %s; ", ntuple ? "on" : "off");
        /* the rule count tells whether rules can be added, without adding one */
        if (0 == devmem_nic_flow_rules(ifname, &n_rules, &table, &e)) {
            printf("%u rules in use of %u\n", n_rules, table);
        } else {
            printf("rules unavailable (%s)\n", e.msg);
        }
    } else {
        printf("  flow steering: unknown (%s)\n", e.msg);
    }

    if (o->bind && NULL != nl && pf->fd >= 0) {
        /* the last RX queue: the one a devmem setup would take, away from RSS's queue 0 */
        unsigned int queue = have_queues && qs.n_rx > 0 ? qs.n_rx - 1 : 0;
        uint32_t id = 0;

        rx_rc = devmem_nl_bind_rx(nl, ifindex, pf->fd, &queue, 1, &id, &e);
        if (0 == rx_rc) {
            printf("  bind-rx:       ok on RX queue %u, binding %u (undone below)\n", queue, id);
        } else {
            printf("  bind-rx:       refused: %s\n", e.msg);
        }
        bind_verdict(rx_v, sizeof(rx_v), "RX", rx_rc, &e, pf, drv.driver);

        if (devmem_nl_has_cmd(nl, DEVMEM_NETDEV_CMD_BIND_TX)) {
            tx_rc = devmem_nl_bind_tx(nl, ifindex, pf->fd, &id, &e);
            if (0 == tx_rc) {
                printf("  bind-tx:       ok, binding %u (undone below)\n", id);
            } else {
                printf("  bind-tx:       refused: %s\n", e.msg);
            }
            bind_verdict(tx_v, sizeof(tx_v), "TX", tx_rc, &e, pf, drv.driver);
        } else {
            printf("  bind-tx:       this kernel has no bind-tx (Linux 6.16+)\n");
            snprintf(tx_v, sizeof(tx_v), "TX unsupported by this kernel (no bind-tx)");
            tx_absent = 1;
        }
    } else if (!o->bind) {
        printf("  bind-rx/tx:    skipped (-n)\n");
    } else {
        printf("  bind-rx/tx:    not checked (%s)\n",
               NULL == nl ? "netdev netlink unavailable" : "no fd to bind");
    }

    /* A binding lives as long as its netlink socket: close it to unbind, then start anew. */
    if ((0 == rx_rc || 0 == tx_rc)) {
        devmem_nl_close(*nlp);
        *nlp = NULL;
        if (devmem_nl_open(nlp, &e) < 0) {
            printf("  (netlink could not be reopened: %s)\n", e.msg);
            *nlp = NULL;
        }
    }

    /* One line: what a user needs to know. */
    printf("  verdict:       %s: ", ifname);
    if (0 == rx_rc || 0 == tx_rc) {
        printf("devmem %s works", 0 == rx_rc && 0 == tx_rc ? "RX and TX" : (0 == rx_rc ? "RX"
                                                                                  : "TX"));
        if (0 == rx_rc && have_rings
            && (DEVMEM_NIC_HDS_ON != rings.tcp_data_split
                || (rings.has_hds_thresh && 0 != rings.hds_thresh))) {
            printf("; for RX turn header split on with hds-thresh 0");
        }
        if (0 == rx_rc && !ntuple) {
            printf("; turn ntuple on to steer flows");
        }
        /* and the one that failed, in the kernel's words */
        printf("%s%s\n", 0 != tx_rc || 0 != rx_rc ? "; " : "",
               0 != tx_rc ? tx_v : (0 != rx_rc ? rx_v : ""));
    } else if (1 == rx_rc) {
        printf("devmem not checked (the bind checks did not run)\n");
    } else if (-EOPNOTSUPP == rx_rc && (-EOPNOTSUPP == tx_rc || tx_absent)) {
        printf("devmem unsupported: %s; %s\n", rx_v, tx_v);
    } else if (-EOPNOTSUPP == rx_rc) {
        printf("devmem RX unsupported: %s; %s\n", rx_v, tx_v);
    } else {
        printf("devmem undecided: %s; %s\n", rx_v, tx_v);
    }
}

/* Whether a helper answers, what it holds and what it allows this user. */
static void report_helper(const char *path)
{
    struct devmem_helper_client *c = NULL;
    static char text[DEVMEM_HELPER_BODY_MAX];
    struct devmem_err e;

    if (0 != devmem_helper_connect(&c, path, 3000, &e)
        || 0 != devmem_helper_status(c, text, sizeof(text), &e)) {
        printf("helper: %s%s\n", e.msg, 0 == geteuid() ? ""
               : " (without it, ranks of this user cannot bind on a real NIC)");
        devmem_helper_close(c);
        return;
    }
    devmem_helper_close(c);
    printf("helper: devmem-helperd answers at %s\n", path);
    for (char *line = strtok(text, "\n"); NULL != line; line = strtok(NULL, "\n")) {
        printf("  %s\n", line);
    }
    printf("  (a TX binding id is global: the kernel lets any local process whose socket\n"
           "   leaves through the bound device send from that memory, whoever made the\n"
           "   binding; with tx-shared no the helper refuses TX bindings on a device that\n"
           "   other users hold bindings on, but it cannot see users that never ask it)\n");
}

int main(int argc, char **argv)
{
    struct probe_opts o = {.ifname = NULL, .verbose = 0, .bind = 1,
                           .helper = DEVMEM_HELPER_SOCKET_DEFAULT};
    struct if_nameindex *ifs = NULL;
    struct devmem_nl *nl = NULL;
    struct probe_fd pf;
    struct utsname un;
    struct devmem_err e;
    int found = 0;
    int rc = 0;

    memset(&pf, 0, sizeof(pf));
    pf.fd = -1;
    for (int i = 1; i < argc; i++) {
        if (0 == strcmp(argv[i], "--help") || 0 == strcmp(argv[i], "-h")) {
            usage(stdout);
            goto cleanup;
        } else if (0 == strcmp(argv[i], "-v")) {
            o.verbose = 1;
        } else if (0 == strcmp(argv[i], "-n")) {
            o.bind = 0;
        } else if (0 == strcmp(argv[i], "--helper") && i + 1 < argc) {
            o.helper = argv[++i];
        } else if (0 == strcmp(argv[i], "-i") && i + 1 < argc) {
            o.ifname = argv[++i];
        } else {
            fprintf(stderr, "devmem-probe: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            rc = 2;
            goto cleanup;
        }
    }
    if (NULL != o.ifname && 0 == if_nametoindex(o.ifname)) {
        fprintf(stderr, "devmem-probe: no interface '%s' in this network namespace\n",
                o.ifname);
        rc = 2;
        goto cleanup;
    }

    printf("devmem-probe %s\n", PACKAGE_VERSION);
    if (0 == uname(&un)) {
        printf("kernel: %s %s\n", un.sysname, un.release);
    }
    printf("privilege: %s\n", 0 == geteuid() ? "root" : "not root (bind-rx and NIC setup need "
                                                        "CAP_NET_ADMIN)");
    if (devmem_nl_open(&nl, &e) < 0) {
        printf("netdev netlink: unavailable (%s)\n", e.msg);
        nl = NULL;
    } else {
        printf("netdev netlink: bind-rx %s, bind-tx %s\n",
               devmem_nl_has_cmd(nl, DEVMEM_NETDEV_CMD_BIND_RX) ? "present" : "absent (6.12+)",
               devmem_nl_has_cmd(nl, DEVMEM_NETDEV_CMD_BIND_TX) ? "present" : "absent (6.16+)");
    }
    report_helper(o.helper);
    report_gpus();
    report_locality(o.ifname);
    if (o.bind) {
        make_fd(&pf);
        printf("bind checks use: %s\n", pf.source);
        if (pf.is_memfd) {
            printf("  (the kernel refuses a device without devmem support before it looks at "
                   "the fd; a capable device refuses the memfd instead)\n");
        }
    }

    ifs = if_nameindex();
    if (NULL == ifs) {
        printf("interfaces: cannot list them (%s)\n", strerror(errno));
        goto cleanup;
    }
    for (struct if_nameindex *it = ifs; 0 != it->if_index; it++) {
        if (NULL != o.ifname && 0 != strcmp(o.ifname, it->if_name)) {
            continue;
        }
        found++;
        probe_if(it->if_name, it->if_index, &nl, &pf, &o);
    }
    if (0 == found) {
        printf("\nno interfaces found\n");
    }
cleanup:
    if (NULL != ifs) {
        if_freenameindex(ifs);
    }
    release_fd(&pf);
    devmem_nl_close(nl); /* unbinds anything bound */
    return rc;
}
