/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's MCA parameters: registration with their help texts, their ranges, and the
 * test-only settings of btl_devmem_testing. Every parameter a user may set is here, so that
 * doc/parameters.md (contrib/param-table.sh) lists them all.
 */
#include "opal_config.h"

#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/util/show_help.h"

#include "devmem/cudrv.h"
#include "base/btl_devmem.h"
#include "connections/btl_devmem_module.h"
#include "sockets/btl_devmem_helper.h"
#include "rdma/btl_devmem_push.h"
#include "btl_devmem_params.h"
#include "btl_devmem_stats.h"

/* Register a read-only parameter of the component; its MCA type follows from storage's (int *,
 * bool *, size_t * or char **: another does not compile). */
#define reg(name, help, level, storage)                                                            \
    (void) mca_base_component_var_register(                                                        \
        &mca_btl_devmem_component.super.btl_version, (name), (help),                               \
        _Generic((storage), int *: MCA_BASE_VAR_TYPE_INT, bool *: MCA_BASE_VAR_TYPE_BOOL,          \
                 size_t *: MCA_BASE_VAR_TYPE_SIZE_T, char **: MCA_BASE_VAR_TYPE_STRING),           \
        NULL, 0, 0, (level), MCA_BASE_VAR_SCOPE_READONLY, (storage))

int mca_btl_devmem_params_register(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    c->if_include = "";
    reg("if_include",
        "Comma-separated interfaces (names, IPv4 networks a.b.c.d/n or IPv6 networks "
        "like 2001:db8::/32) to use, e.g. \"eth0,198.51.100.0/24\"; empty: every "
        "interface that is up. Mutually exclusive with btl_devmem_if_exclude.",
        OPAL_INFO_LVL_1, &c->if_include);
    c->if_exclude = "";
    reg("if_exclude",
        "Comma-separated interfaces (names, IPv4 or IPv6 networks) not to use. Loopback "
        "is only ever used between ranks on the same host. Mutually exclusive with "
        "btl_devmem_if_include.",
        OPAL_INFO_LVL_1, &c->if_exclude);
    c->family = "auto";
    reg("family",
        "Address family per interface: \"auto\" takes an interface's IPv4 addresses "
        "where it has any and its IPv6 ones otherwise (global or unique-local before "
        "link-local), so a dual-stack NIC is one path; \"ipv4\" or \"ipv6\" uses that "
        "family only (like btl_tcp_disable_family 6 or 4). Peers pair addresses of the "
        "same family.",
        OPAL_INFO_LVL_2, &c->family);
    c->links = 1;
    reg("links", "Connections (and modules) per interface and peer; the PML stripes large "
                 "messages across them",
        OPAL_INFO_LVL_4, &c->links);
    c->sockbuf = 0;
    reg("sockbuf",
        "SO_SNDBUF and SO_RCVBUF of every connection in bytes (btl_tcp_sndbuf and "
        "btl_tcp_rcvbuf in one; 0: the kernel's autotuning, which is what reaches the line "
        "rate on a fast NIC)",
        OPAL_INFO_LVL_4, &c->sockbuf);
    c->ports = "";
    reg("ports",
        "Ports the listen sockets take, \"LOW-HIGH\" (e.g. \"41000-41999\"), for "
        "clusters whose firewall opens a range: every control and device-flow listen "
        "socket, IPv4 and IPv6 alike (btl_tcp_port_min_v4/port_range_v4 and their v6 "
        "pair in one). A rank takes the first free ones from a place of its own in the "
        "range, so that a node's ranks seldom try the same; it needs 2 per interface "
        "with the device path on, 1 without. Empty: wherever the kernel puts them",
        OPAL_INFO_LVL_2, &c->ports);
    c->handshake_timeout = 10;
    reg("handshake_timeout",
        "Seconds an incoming connection may take to send a valid hello before it is "
        "dropped (strangers and stuck peers); also how long a connect of ours may take "
        "before it is made again (3 attempts, each waiting twice as long as the one "
        "before; then the peer counts as lost, or a device-flow lane falls back to the "
        "control connection), how long our hello may go unanswered while the peer's host "
        "does not acknowledge it, and how long a peer that deferred ours has for its own "
        "connection before we connect again",
        OPAL_INFO_LVL_5, &c->handshake_timeout);
    c->peer_timeout = 20;
    reg("peer_timeout",
        "Seconds after which a peer that stopped answering counts as lost and the job "
        "ends naming it (a cut link, a dead host). A rank with data in flight notices "
        "when nothing of it has been acknowledged for this long (checked once a "
        "second); a rank that only waits sends TCP keepalive probes after half of it "
        "quiet, five of them a tenth apart. A peer that is busy and not reading still "
        "acknowledges, so it is never taken for dead. Raise it on a lossy network whose "
        "retransmissions stall for seconds; 0: no checks (the kernel's 15 minutes of "
        "retransmission, no keepalive)",
        OPAL_INFO_LVL_4, &c->peer_timeout);
    c->verbose = 0;
    reg("verbose",
        "Verbosity: 1 whether each interface has the device path and why not, 10 "
        "connections and decisions, 20 handshake details, 30 and above "
        "everything",
        OPAL_INFO_LVL_5, &c->verbose);
    c->stats_enabled = false;
    reg("stats",
        "At finalize, print one line per rank: 'btl_devmem stats: rank=R key=value ...' "
        "(bytes by path, connections made and refused, protocol errors, syscalls). The "
        "same counters are MPI_T performance variables btl_devmem_<key> whatever this says",
        OPAL_INFO_LVL_4, &c->stats_enabled);

    c->mode = "auto";
    reg("mode",
        "Device memory TCP: \"auto\" uses it on every interface where the kernel, the "
        "NIC and a dmabuf provider allow it and host TCP elsewhere (the reason is "
        "printed at btl_devmem_verbose 1); \"require\" refuses to start unless every "
        "interface has it, naming the reason; \"off\" is host TCP only",
        OPAL_INFO_LVL_2, &c->mode);
    c->kernel = "real";
    reg("kernel",
        "Kernel interface for devmem: \"real\" (netlink bind-rx, recvmsg with "
        "MSG_SOCK_DEVMEM, SO_DEVMEM_DONTNEED) or \"emulated\" (the same calls "
        "emulated over plain TCP with a host-memory pool, for testing without a "
        "devmem NIC; never chosen automatically)",
        OPAL_INFO_LVL_3, &c->kernel);
    c->helper = "auto";
    reg("helper",
        "Who binds NIC queues and installs steering rules: \"auto\" asks devmem-helperd "
        "at its default socket (" DEVMEM_HELPER_SOCKET_DEFAULT ") when the real kernel "
        "is in use and this process lacks CAP_NET_ADMIN, and binds by itself otherwise; "
        "\"off\" always binds by itself; a path (starting with /) must be a helper's "
        "socket, which is then asked with either kernel",
        OPAL_INFO_LVL_3, &c->helper);
    c->rx_provider = "auto";
    reg("rx_provider",
        "Memory of the RX pool that device flows land in: auto (real kernel: cuda, "
        "then udmabuf, then drm; emulated: host), cuda, udmabuf, drm or host "
        "(emulated only)",
        OPAL_INFO_LVL_4, &c->rx_provider);
    c->rx_pool_size = 64u << 20;
    reg("rx_pool_size",
        "Bytes of RX pool per interface, rounded up to pages. Received device-flow data "
        "waits there until it is copied out; a small pool throttles the sender through "
        "TCP flow control",
        OPAL_INFO_LVL_4, &c->rx_pool_size);
    c->rx_queues = -1;
    reg("rx_queues",
        "RX queues each interface's pool is bound to, 1-64; with more than one, the "
        "device-flow port is steered into an RSS context over them, so that a peer's lanes "
        "arrive on several queues (several softirq cores). -1: as many as "
        "btl_devmem_devflows, fewer where this rank's share of the NIC's queues (or of "
        "the helper's range) among the job's ranks on the host is smaller",
        OPAL_INFO_LVL_4, &c->rx_queues);
    c->devflows_spec = MCA_BTL_DEVMEM_DEVFLOWS_DEFAULT_SPEC;
    reg("devflows",
        "Device-flow connections (lanes) this rank opens to each peer it answers gets "
        "for, 1-16, once that peer asks for them with its first get; then, optionally, "
        "fds=N and idle=S: \"4,fds=2000,idle=60\". The receiver of a get of at least "
        "two chunks (btl_devmem_devflow_chunk) cuts it over every lane its peer opened, "
        "so that several connections, softirq cores and RX queues carry it at once; 1: "
        "one device flow per peer, gets in order. fds=N: descriptors all lanes of the "
        "rank may hold, both directions (a lane holds one on each side); 0 or absent: "
        "half of those free at start; never more than those free less an eighth (64 "
        "at least) kept for control connections. A job with more peers than "
        "the budget gives 1-16 lanes each gets fewer: every peer one before any gets "
        "several, and a peer beyond it even so uses its control connection. idle=S: "
        "a peer's lanes toward this rank close once its gets left them unused for S "
        "seconds, and open again with the next get (60; 0: never). Lower fds to leave "
        "descriptors to other libraries of the application",
        OPAL_INFO_LVL_4, &c->devflows_spec);
    c->devflow_chunk = 512u << 10;
    reg("devflow_chunk",
        "Bytes of one chunk of a get cut over several device-flow lanes (at least 4096; "
        "a get of more than 64 chunks takes larger ones). Gets shorter than two chunks "
        "go whole to the least loaded lane",
        OPAL_INFO_LVL_5, &c->devflow_chunk);
    c->gather_depth = 4;
    reg("gather_depth",
        "Gathers into device memory that may run on the GPU at once, 1-64; each gathers "
        "a batch of device-flow receives (up to a finished chunk or an eighth of the RX "
        "pool), so the lanes receive the next bytes while the GPU places the last ones, "
        "and a batch's RX pool pages go back when it is done. 1: every batch waits for "
        "the one before. Host-memory destinations are copied at once either way",
        OPAL_INFO_LVL_5, &c->gather_depth);
    c->rx_threads = -1;
    reg("rx_threads",
        "Receiving threads that serve this rank's device-flow lanes, -1 to 16: each takes "
        "whole lanes as they open (the least loaded thread), receives, gathers and gives "
        "tokens back, and hands finished gets to the progress thread; it sleeps in epoll "
        "while its lanes are idle, and runs near the NIC, off the CPUs this node's ranks "
        "are bound to where there are others. With threads a rank that computes outside "
        "MPI goes on receiving. 0: the progress thread receives, as for control "
        "connections. -1: one thread where, beside one CPU per local rank, the node has at "
        "least 4 CPUs to spare and one per local rank (an unbound rank counts the CPUs it "
        "may run on), else none. Started only where the device path is on. One thread "
        "takes about 110-165 Gbit/s at MTU 4096 by doc/cost-model.md: 2 for a 200 "
        "Gbit/s NIC",
        OPAL_INFO_LVL_4, &c->rx_threads);
    c->sendi = true;
    reg("sendi",
        "Offer the PML immediate (inline) sends of small messages. Off for GPU buffers "
        "with an Open MPI without CUDA support: an inline message carries its payload, "
        "which the receiver's PML would copy into a device buffer with the CPU",
        OPAL_INFO_LVL_5, &c->sendi);
    c->idle = "adaptive";
    reg("idle",
        "How a rank that waits in MPI shares its core with other tasks. \"adaptive\": "
        "while another task wants the core and our connections have been quiet 10 us, "
        "hand the core over (yield; on a core shared with the peer when yields stop "
        "handing it over or during a window of transfers, and beside unrelated busy "
        "processes during such a window, sleep on the sockets up to 1 ms), timing the "
        "waits and spinning instead where that brings the answer sooner; a rank alone on "
        "its core spins. It decides instead of mpi_yield_when_idle, so that setting is "
        "not needed (and costs nothing). \"yield\": hand over by yielding only, never "
        "sleep nor spin to measure (ranks of one oversubscribed node may prefer it). "
        "\"spin\": never hand over, like btl/tcp; mpi_yield_when_idle then yields as "
        "Open MPI does",
        OPAL_INFO_LVL_5, &c->idle);

    c->push = 64 * 1024;
    reg("push",
        "Bytes of a rendezvous (RGET) of host memory sent behind its header unasked, so "
        "that the receiver's get asks only for the rest while they travel; it saves up "
        "to one small-message round trip at the first sizes past the eager limit. The "
        "receiver keeps up to 4 pushes per connection that arrive before their receive "
        "is posted. 0: off; at most 1048576",
        OPAL_INFO_LVL_5, &c->push);

    c->gpu = -1;
    reg("gpu",
        "The CUDA device of this rank: its memory holds the RX pool (cuda provider), and "
        "where several interfaces could carry the device path, only those nearest to it "
        "on the PCI topology get one. -1: the device of the CUDA context current at "
        "MPI_Init (cudaSetDevice before it), else the local rank modulo the devices",
        OPAL_INFO_LVL_3, &c->gpu);
    c->near = "";
    reg("near",
        "What the device path should be near when several interfaces could carry it: "
        "empty for the rank's GPU (btl_devmem_gpu), a PCI address (dddd:bb:dd.f) for "
        "another device, or \"none\" to give every capable interface a device path. "
        "The nearest class of PCI path wins: one PCIe switch, several switches, the "
        "host bridge, the same NUMA node, across sockets; interfaces that are no PCI "
        "device (veth, lo) rank last",
        OPAL_INFO_LVL_4, &c->near);

    c->testing = "";
    reg("testing",
        "For tests only: comma-separated key=value settings that make rare paths "
        "run on demand. fault=bad-type|too-long|truncated|push-cut: one rank spoils "
        "one of its frames (an unknown frame type, a length beyond every limit, half "
        "a header then the connection shut, a rendezvous header announcing a push "
        "then the connection shut); fault=short-write: one rank writes each of its "
        "SEND frames in two parts, the second at the next writable event, as a full "
        "socket makes it; fault_rank=R: that rank (0); fault_after=N: SEND "
        "frames (push-cut: push announcements) it sends intact first (50); "
        "linear_pct=P: emulated kernel, percent of segments whose first bytes arrive "
        "linear (10); seed=S: emulated kernel, the layout seed (0: from the rank); "
        "tx_host=1: emulated kernel, answer gets from host memory with devmem TX "
        "too; gather_lag=N: hold each host gather back for N looks, as a GPU "
        "finishes later (0-1000); poll_max=N: sockets polled with poll() before an "
        "epoll set (16; 0: epoll from the start); topology=FILE: an hwloc XML file "
        "(lstopo --of xml) to read the PCI topology from instead of this machine's; "
        "write_chunk=N: most bytes per send call (0: no limit; by default 512 KiB on "
        "loopback, no limit elsewhere); push_min=N: smallest rendezvous that pushes "
        "(512 KiB; 0: every one); gather_way=kernel|memcpy: how gathers out of a GPU "
        "pool are launched (kernel; memcpy: one copy a piece, as where the kernel cannot "
        "load); unbind_after=N: undo this rank's RX bindings once N bytes landed in its "
        "pools, as the kernel does when the netlink socket that made them closes (0: "
        "never; emulated kernel: when a flow has bytes queued, by 2N at the latest, and "
        "its TX bindings too); cpus=N: the CPUs btl_devmem_rx_threads -1 counts (0: this node's)",
        OPAL_INFO_LVL_9, &c->testing);

    /* informational: the var system owns its string (freed when replaced, and at close) */
    c->device_paths = NULL;
    (void) mca_base_component_var_register(
        &c->super.btl_version, "device_paths",
        "What the device path is on each of this rank's interfaces, one line each: \"NAME on: "
        "kernel, pool, binding\" or \"NAME off: why\" (set at start-up; read it through "
        "MPI_T, as devmem-check does)",
        MCA_BASE_VAR_TYPE_STRING, NULL, 0, MCA_BASE_VAR_FLAG_DEFAULT_ONLY, OPAL_INFO_LVL_9,
        MCA_BASE_VAR_SCOPE_CONSTANT, &c->device_paths);

    mca_btl_devmem_stats_register();
    return mca_btl_base_param_register(&c->super.btl_version,
                                       &mca_btl_devmem_module_template.super);
}

/* The ranges of the parameters that have one; OPAL_ERR_BAD_PARAM with the user told which. */
static int check_ranges(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const char *name = NULL, *valid = NULL;
    char value[32];

    if (c->devflow_chunk < 4096) {
        name = "btl_devmem_devflow_chunk", valid = "4096 or more";
        snprintf(value, sizeof(value), "%zu", c->devflow_chunk);
    } else if (0 == c->rx_queues || c->rx_queues < -1
               || c->rx_queues > MCA_BTL_DEVMEM_RX_QUEUES_MAX) {
        name = "btl_devmem_rx_queues", valid = "-1, or 1 to 64";
        snprintf(value, sizeof(value), "%d", c->rx_queues);
    } else if (c->gather_depth < 1 || c->gather_depth > 64) {
        name = "btl_devmem_gather_depth", valid = "1 to 64";
        snprintf(value, sizeof(value), "%d", c->gather_depth);
    } else if (c->rx_threads < -1 || c->rx_threads > MCA_BTL_DEVMEM_RX_THREADS_MAX) {
        name = "btl_devmem_rx_threads", valid = "-1 (by the CPUs to spare) or 0 to 16";
        snprintf(value, sizeof(value), "%d", c->rx_threads);
    } else if (c->push < 0 || c->push > (int) MCA_BTL_DEVMEM_PUSH_MAX) {
        name = "btl_devmem_push", valid = "0 to 1048576";
        snprintf(value, sizeof(value), "%d", c->push);
    }
    if (NULL != name) {
        mca_btl_devmem_show_help_local("bad devmem param", name, value, valid);
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

/* btl_devmem_devflows, "LANES[,fds=N][,idle=S]", into devflows, devflow_fds and
 * devflow_idle; OPAL_ERR_BAD_PARAM with the user told. */
static int parse_devflows(mca_btl_devmem_component_t *c)
{
    const char *s = NULL != c->devflows_spec && '\0' != c->devflows_spec[0]
                        ? c->devflows_spec : MCA_BTL_DEVMEM_DEVFLOWS_DEFAULT_SPEC;
    unsigned long lanes, fds = 0, idle = MCA_BTL_DEVMEM_DEVFLOW_IDLE_DEFAULT;
    char *end = (char *) s;

    errno = 0;
    lanes = s[0] >= '0' && s[0] <= '9' ? strtoul(s, &end, 10) : 0;
    if (0 == errno && lanes >= 1 && lanes <= MCA_BTL_DEVMEM_DEVFLOWS_MAX) {
        while (',' == *end) {
            unsigned long *into = 0 == strncmp(end + 1, "fds=", 4)    ? &fds
                                  : 0 == strncmp(end + 1, "idle=", 5) ? &idle
                                                                      : NULL;
            const char *num = NULL == into ? NULL : strchr(end + 1, '=') + 1;

            if (NULL == num || num[0] < '0' || num[0] > '9') {
                break;
            }
            *into = strtoul(num, &end, 10);
            if (0 != errno || *into > (into == &fds ? 1ul << 30 : 86400ul)) {
                break;
            }
        }
    }
    if (0 != errno || lanes < 1 || lanes > MCA_BTL_DEVMEM_DEVFLOWS_MAX || '\0' != *end
        || fds > 1ul << 30 || idle > 86400) {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_devflows", s,
                                       "LANES (1 to 16), then optionally \",fds=N\" "
                                       "(descriptors, 0 to 1073741824) and \",idle=S\" "
                                       "(seconds, 0 to 86400), e.g. \"4,fds=2000,idle=60\"");
        return OPAL_ERR_BAD_PARAM;
    }
    c->devflows = (int) lanes;
    c->devflow_fds = fds;
    c->devflow_idle = (int) idle;
    return OPAL_SUCCESS;
}

/* btl_devmem_ports into port_lo and port_hi; OPAL_ERR_BAD_PARAM with the user told. */
static int parse_ports(mca_btl_devmem_component_t *c)
{
    unsigned long lo = 0, hi = 0;
    char *end = NULL;

    c->port_lo = c->port_hi = 0;
    if (NULL == c->ports || '\0' == c->ports[0]) {
        return OPAL_SUCCESS;
    }
    if (c->ports[0] >= '0' && c->ports[0] <= '9') {
        lo = strtoul(c->ports, &end, 10);
        if ('-' == *end && end[1] >= '0' && end[1] <= '9') {
            hi = strtoul(end + 1, &end, 10);
        } else {
            end = NULL;
        }
    }
    if (NULL == end || '\0' != *end || lo < 1 || hi > 65535 || lo > hi) {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_ports", c->ports,
                                       "LOW-HIGH, 1 <= LOW <= HIGH <= 65535 (e.g. 41000-41999), "
                                       "or empty");
        return OPAL_ERR_BAD_PARAM;
    }
    c->port_lo = (uint16_t) lo;
    c->port_hi = (uint16_t) hi;
    return OPAL_SUCCESS;
}

/* One key=value of btl_devmem_testing into its field; false for an unknown key or a value
 * out of range. */
static bool testing_set(mca_btl_devmem_component_t *c, const char *key, const char *value)
{
    static const struct {
        const char *key;
        long min, max;
        size_t offset;
    } ints[] = {
        {"fault_rank", 0, INT_MAX, offsetof(mca_btl_devmem_component_t, fault_rank)},
        {"fault_after", 0, INT_MAX, offsetof(mca_btl_devmem_component_t, fault_after)},
        {"linear_pct", 0, 100, offsetof(mca_btl_devmem_component_t, emul_linear_pct)},
        {"seed", 0, INT_MAX, offsetof(mca_btl_devmem_component_t, emul_seed)},
        {"gather_lag", 0, 1000, offsetof(mca_btl_devmem_component_t, emul_gather_lag)},
        {"poll_max", 0, 4096, offsetof(mca_btl_devmem_component_t, poll_max)},
        {"write_chunk", 0, INT_MAX, offsetof(mca_btl_devmem_component_t, write_chunk)},
        {"push_min", 0, INT_MAX, offsetof(mca_btl_devmem_component_t, push_min)},
        {"cpus", 0, 1 << 20, offsetof(mca_btl_devmem_component_t, testing_cpus)},
    };
    char *end;
    long v;

    if (0 == strcmp(key, "fault")) {
        c->fault = (char *) value; /* names checked by mca_btl_devmem_fault_init */
        return true;
    }
    if (0 == strcmp(key, "topology")) {
        c->topology = (char *) value;
        return true;
    }
    if (0 == strcmp(key, "gather_way")) {
        c->gather_way = (char *) value;
        return devmem_cuda_way_by_name(value) >= 0;
    }
    errno = 0;
    v = strtol(value, &end, 10);
    if ('\0' == value[0] || '\0' != *end || 0 != errno) {
        return false;
    }
    if (0 == strcmp(key, "unbind_after")) {
        c->unbind_after = v;
        return v >= 0;
    }
    if (0 == strcmp(key, "tx_host")) {
        c->tx_host = 0 != v;
        return 0 == v || 1 == v;
    }
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        if (0 == strcmp(key, ints[i].key)) {
            if (v < ints[i].min || v > ints[i].max) {
                return false;
            }
            *(int *) ((char *) c + ints[i].offset) = (int) v;
            return true;
        }
    }
    return false;
}

/* btl_devmem_testing, cut into key=value strings: c->fault, c->topology and c->gather_way
 * point into it
 * until the next parse or mca_btl_devmem_params_fini. */
static char *testing_copy;

/* btl_devmem_testing into the fields it sets; the defaults where it says nothing. */
static int parse_testing(mca_btl_devmem_component_t *c)
{
    char *save = NULL, *item;

    c->fault = "";
    c->topology = "";
    c->gather_way = "";
    c->fault_rank = 0;
    c->fault_after = 50;
    c->emul_linear_pct = 10;
    c->emul_seed = 0;
    c->emul_gather_lag = 0;
    c->unbind_after = 0;
    c->tx_host = false;
    c->poll_max = 16;
    c->write_chunk = -1;
    c->push_min = (int) MCA_BTL_DEVMEM_PUSH_MIN;
    c->testing_cpus = 0;
    free(testing_copy);
    testing_copy = NULL;
    if (NULL == c->testing || '\0' == c->testing[0]) {
        return OPAL_SUCCESS;
    }
    if (NULL == (testing_copy = strdup(c->testing))) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (item = strtok_r(testing_copy, ",", &save); NULL != item;
         item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');

        if (NULL != eq) {
            *eq = '\0';
        }
        if (NULL == eq || !testing_set(c, item, eq + 1)) {
            mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_testing", c->testing,
                                           "comma-separated key=value: fault=NAME, fault_rank, "
                                           "fault_after, linear_pct (0-100), seed, tx_host (0 or "
                                           "1), gather_lag (0-1000), poll_max (0-4096), "
                                           "topology=FILE, write_chunk, push_min, "
                                           "gather_way=kernel|memcpy");
            return OPAL_ERR_BAD_PARAM;
        }
    }
    return OPAL_SUCCESS;
}

/* btl_devmem_idle into c->idle_mode. */
static int parse_idle(mca_btl_devmem_component_t *c)
{
    if (NULL == c->idle || 0 == strcmp(c->idle, "adaptive")) {
        c->idle_mode = MCA_BTL_DEVMEM_IDLE_ADAPTIVE;
    } else if (0 == strcmp(c->idle, "yield")) {
        c->idle_mode = MCA_BTL_DEVMEM_IDLE_YIELD;
    } else if (0 == strcmp(c->idle, "spin")) {
        c->idle_mode = MCA_BTL_DEVMEM_IDLE_SPIN;
    } else {
        mca_btl_devmem_show_help_local("bad devmem param", "btl_devmem_idle", c->idle,
                                       "adaptive, yield or spin");
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

int mca_btl_devmem_params_check(void)
{
    int rc = check_ranges();

    if (OPAL_SUCCESS == rc) {
        rc = parse_devflows(&mca_btl_devmem_component);
    }
    if (OPAL_SUCCESS == rc) {
        rc = parse_idle(&mca_btl_devmem_component);
    }
    if (OPAL_SUCCESS == rc) {
        rc = parse_ports(&mca_btl_devmem_component);
    }
    return OPAL_SUCCESS == rc ? parse_testing(&mca_btl_devmem_component) : rc;
}

void mca_btl_devmem_params_fini(void)
{
    mca_btl_devmem_component.fault = "";
    mca_btl_devmem_component.topology = "";
    free(testing_copy);
    testing_copy = NULL;
}

void mca_btl_devmem_params_status(const char *text)
{
    char *copy = strdup(text);

    /* The value it replaces is left, not freed: an application thread may be copying it
     * through MPI_T right now. One string per change (start-up, a binding lost). */
    if (NULL != copy) {
        mca_btl_devmem_component.device_paths = copy;
    }
}
