/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component: MCA parameters, the Open MPI version check, interface selection, one
 * listen socket per module (what connects to it is btl_devmem_conn.c's), and the modex
 * record.
 */
#include "opal_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "opal/mca/base/mca_base_var.h"
#include "opal/runtime/opal.h"
#include "opal/util/show_help.h"

#include "btl_devmem.h"
#include "btl_devmem_conn.h"
#include "btl_devmem_dev.h"
#include "btl_devmem_devflow.h"
#include "btl_devmem_endpoint.h"
#include "btl_devmem_fault.h"
#include "btl_devmem_helper.h"
#include "btl_devmem_liveness.h"
#include "btl_devmem_frag.h"
#include "btl_devmem_proc.h"
#include "btl_devmem_progress.h"
#include "btl_devmem_reg.h"
#include "btl_devmem_rxthread.h"
#include "btl_devmem_sock.h"
#include "btl_devmem_watch.h"

static int component_open(void);
static int component_close(void);
static int component_register(void);
static mca_btl_base_module_t **component_init(int *num_btls, bool enable_progress_threads,
                                              bool enable_mpi_threads);

mca_btl_devmem_component_t mca_btl_devmem_component = {
    .super = {
        .btl_version = {
            MCA_BTL_DEFAULT_VERSION("devmem"),
            .mca_open_component = component_open,
            .mca_close_component = component_close,
            .mca_register_component_params = component_register,
        },
        .btl_data = {
            .param_field = MCA_BASE_METADATA_PARAM_CHECKPOINT,
        },
        .btl_init = component_init,
        .btl_progress = mca_btl_devmem_progress,
    },
};

/* ---------------------------------------------------------------- parameters */

static void reg_int(const char *name, const char *help, int level, int *storage)
{
    (void) mca_base_component_var_register(&mca_btl_devmem_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_INT, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_bool(const char *name, const char *help, int level, bool *storage)
{
    (void) mca_base_component_var_register(&mca_btl_devmem_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_BOOL, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_size(const char *name, const char *help, int level, size_t *storage)
{
    (void) mca_base_component_var_register(&mca_btl_devmem_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_SIZE_T, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static void reg_string(const char *name, const char *help, int level, char **storage)
{
    (void) mca_base_component_var_register(&mca_btl_devmem_component.super.btl_version, name,
                                           help, MCA_BASE_VAR_TYPE_STRING, NULL, 0, 0, level,
                                           MCA_BASE_VAR_SCOPE_READONLY, storage);
}

static int component_register(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    c->if_include = "";
    reg_string("if_include",
               "Comma-separated interfaces (names, IPv4 networks a.b.c.d/n or IPv6 networks "
               "like 2001:db8::/32) to use, e.g. \"eth0,198.51.100.0/24\"; empty: every "
               "interface that is up. Mutually exclusive with btl_devmem_if_exclude.",
               OPAL_INFO_LVL_1, &c->if_include);
    c->if_exclude = "";
    reg_string("if_exclude",
               "Comma-separated interfaces (names, IPv4 or IPv6 networks) not to use. Loopback "
               "is only ever used between ranks on the same host. Mutually exclusive with "
               "btl_devmem_if_include.",
               OPAL_INFO_LVL_1, &c->if_exclude);
    c->family = "auto";
    reg_string("family",
               "Address family per interface: \"auto\" takes an interface's IPv4 addresses "
               "where it has any and its IPv6 ones otherwise (global or unique-local before "
               "link-local), so a dual-stack NIC is one path; \"ipv4\" or \"ipv6\" uses that "
               "family only (like btl_tcp_disable_family 6 or 4). Peers pair addresses of the "
               "same family.",
               OPAL_INFO_LVL_2, &c->family);
    c->links = 1;
    reg_int("links", "Connections (and modules) per interface and peer; the PML stripes large "
                     "messages across them",
            OPAL_INFO_LVL_4, &c->links);
    c->sndbuf = 0;
    reg_int("sndbuf", "SO_SNDBUF for every connection in bytes (0: the kernel's autotuning)",
            OPAL_INFO_LVL_4, &c->sndbuf);
    c->rcvbuf = 0;
    reg_int("rcvbuf", "SO_RCVBUF for every connection in bytes (0: the kernel's autotuning)",
            OPAL_INFO_LVL_4, &c->rcvbuf);
    c->recv_buffer = 128 * 1024;
    reg_int("recv_buffer",
            "Read-ahead buffer per connection in bytes; frames up to this size are delivered "
            "from it without another copy (raised to at least eager_limit + header)",
            OPAL_INFO_LVL_5, &c->recv_buffer);
    c->free_list_num = 8;
    reg_int("free_list_num", "Fragments allocated initially per free list", OPAL_INFO_LVL_5,
            &c->free_list_num);
    c->free_list_max = -1;
    reg_int("free_list_max", "Maximum fragments per free list (-1: unlimited)", OPAL_INFO_LVL_5,
            &c->free_list_max);
    c->free_list_inc = 32;
    reg_int("free_list_inc", "Fragments added when a free list grows", OPAL_INFO_LVL_5,
            &c->free_list_inc);
    c->handshake_timeout = 10;
    reg_int("handshake_timeout",
            "Seconds an incoming connection may take to send a valid hello before it is "
            "dropped (strangers and stuck peers); also how long a connect of ours may take "
            "before it is made again (3 attempts, each waiting twice as long as the one "
            "before; then the peer counts as lost, or a device-flow lane falls back to the "
            "control connection), how long our hello may go unanswered while the peer's host "
            "does not acknowledge it, and how long a peer that deferred ours has for its own "
            "connection before we connect again",
            OPAL_INFO_LVL_5, &c->handshake_timeout);
    c->keepalive = 10;
    reg_int("keepalive",
            "Seconds a connection may be quiet before TCP keepalive probes check that the "
            "peer is still there; five unanswered probes, one every fifth of this, count it "
            "as lost and end the job naming it (a cut link or a dead node, seen by the rank "
            "that waits). The kernel probes only while nothing is in flight, so a peer that "
            "is busy and not reading is never taken for dead. 0: no probes",
            OPAL_INFO_LVL_4, &c->keepalive);
    c->peer_timeout = 20;
    reg_int("peer_timeout",
            "Seconds a connection may carry data in flight without the peer acknowledging "
            "anything before the peer counts as lost and the job ends naming it (the sending "
            "side of a cut link or a dead host; the waiting side is btl_devmem_keepalive's). "
            "A peer that is busy and not reading still acknowledges window probes, so it is "
            "never taken for dead. Checked once a second. 0: the kernel's 15 minutes of "
            "retransmission",
            OPAL_INFO_LVL_4, &c->peer_timeout);
    c->nodelay = true;
    reg_bool("nodelay", "Set TCP_NODELAY on every connection (disable Nagle)", OPAL_INFO_LVL_5,
             &c->nodelay);
    c->verbose = 0;
    reg_int("verbose",
            "Verbosity: 1 whether each interface has the device path and why not, 10 "
            "connections and decisions, 20 handshake details, 30 and above "
            "everything",
            OPAL_INFO_LVL_5, &c->verbose);
    c->stats_enabled = false;
    reg_bool("stats",
             "At finalize, print one line per rank: 'btl_devmem stats: rank=R key=value ...' "
             "(bytes by path, connections made and refused, protocol errors, syscalls). The "
             "same counters are MPI_T performance variables btl_devmem_<key> whatever this says",
             OPAL_INFO_LVL_4, &c->stats_enabled);

    c->mode = "auto";
    reg_string("mode",
               "Device memory TCP: \"auto\" uses it on every interface where the kernel, the "
               "NIC and a dmabuf provider allow it and host TCP elsewhere (the reason is "
               "printed at btl_devmem_verbose 1); \"require\" refuses to start unless every "
               "interface has it, naming the reason; \"off\" is host TCP only",
               OPAL_INFO_LVL_2, &c->mode);
    c->kernel = "real";
    reg_string("kernel",
               "Kernel interface for devmem: \"real\" (netlink bind-rx, recvmsg with "
               "MSG_SOCK_DEVMEM, SO_DEVMEM_DONTNEED) or \"emulated\" (the same calls "
               "emulated over plain TCP with a host-memory pool, for testing without a "
               "devmem NIC; never chosen automatically)",
               OPAL_INFO_LVL_3, &c->kernel);
    c->helper = "auto";
    reg_string("helper",
               "Who binds NIC queues and installs steering rules: \"auto\" asks devmem-helperd "
               "at its default socket (" DEVMEM_HELPER_SOCKET_DEFAULT ") when the real kernel "
               "is in use and this process lacks CAP_NET_ADMIN, and binds by itself otherwise; "
               "\"off\" always binds by itself; a path (starting with /) must be a helper's "
               "socket, which is then asked with either kernel",
               OPAL_INFO_LVL_3, &c->helper);
    c->rx_provider = "auto";
    reg_string("rx_provider",
               "Memory of the RX pool that device flows land in: auto (real kernel: cuda, "
               "then udmabuf, then drm; emulated: host), cuda, udmabuf, drm or host "
               "(emulated only)",
               OPAL_INFO_LVL_4, &c->rx_provider);
    c->rx_pool_size = 64u << 20;
    reg_size("rx_pool_size",
             "Bytes of RX pool per interface, rounded up to pages. Received device-flow data "
             "waits there until it is copied out; a small pool throttles the sender through "
             "TCP flow control",
             OPAL_INFO_LVL_4, &c->rx_pool_size);
    c->rx_queue = -1;
    reg_int("rx_queue",
            "Real kernel: the NIC RX queue to bind the pool to (-1: the last queue minus the "
            "local rank, so ranks sharing a NIC take distinct queues). RSS must not spread "
            "other flows onto it",
            OPAL_INFO_LVL_5, &c->rx_queue);
    c->rx_queues = -1;
    reg_int("rx_queues",
            "RX queues each interface's pool is bound to, 1-64; with more than one, the "
            "device-flow port is steered into an RSS context over them, so that a peer's lanes "
            "arrive on several queues (several softirq cores). -1: as many as "
            "btl_devmem_devflows, fewer where the NIC (or the helper's policy) has fewer to "
            "spare",
            OPAL_INFO_LVL_4, &c->rx_queues);
    c->rx_batch = 1 << 20;
    reg_int("rx_batch",
            "Most bytes one devmem receive takes (its linear buffer; tokens are returned "
            "after every receive)",
            OPAL_INFO_LVL_5, &c->rx_batch);
    c->devflow_min = 0;
    reg_int("devflow_min",
            "Gets smaller than this many bytes stay on the control connection even when a "
            "device flow is up (0: every get takes the device flow)",
            OPAL_INFO_LVL_5, &c->devflow_min);
    c->devflows = MCA_BTL_DEVMEM_DEVFLOWS_DEFAULT;
    reg_int("devflows",
            "Device-flow connections (lanes) this rank opens to each peer it answers gets for, "
            "1-16. The receiver of a get of at least two chunks (btl_devmem_devflow_chunk) "
            "cuts it over every lane its peer opened, so that several connections, softirq "
            "cores and RX queues carry it at once; 1: one device flow per peer, gets in order",
            OPAL_INFO_LVL_4, &c->devflows);
    c->devflow_chunk = 512u << 10;
    reg_size("devflow_chunk",
             "Bytes of one chunk of a get cut over several device-flow lanes (at least 4096; "
             "a get of more than 64 chunks takes larger ones). Gets shorter than two chunks "
             "go whole to the least loaded lane",
             OPAL_INFO_LVL_5, &c->devflow_chunk);
    c->gather_depth = 4;
    reg_int("gather_depth",
            "Gathers into device memory that may run on the GPU at once, 1-64; each gathers "
            "a batch of device-flow receives (up to a finished chunk or an eighth of the RX "
            "pool), so the lanes receive the next bytes while the GPU places the last ones, "
            "and a batch's RX pool pages go back when it is done. 1: every batch waits for "
            "the one before. Host-memory destinations are copied at once either way",
            OPAL_INFO_LVL_5, &c->gather_depth);
    c->rx_threads = 0;
    reg_int("rx_threads",
            "Receiving threads that serve this rank's device-flow lanes, 0-16: each takes "
            "whole lanes as they open (the least loaded thread), receives, gathers and gives "
            "tokens back, and hands finished gets to the progress thread; it sleeps in epoll "
            "while its lanes are idle, and runs near the NIC, off the CPUs this rank is "
            "bound to where there are others. 0: the progress thread receives, as for "
            "control connections. Started only where the device path is on. One thread "
            "takes about 100-140 Gbit/s at MTU 4096 by doc/cost-model.md: 2 for a 200 "
            "Gbit/s NIC",
            OPAL_INFO_LVL_4, &c->rx_threads);
    c->emul_gather_lag = 0;
    reg_int("emul_gather_lag",
            "For tests only: hold each batch's copies into host memory back until its "
            "gather has been looked at this many times, as a GPU would finish them later, so "
            "that the pipelined gather runs without a GPU (0: copy at once), 0-1000",
            OPAL_INFO_LVL_9, &c->emul_gather_lag);
    c->emul_linear_pct = 10;
    reg_int("emul_linear_pct",
            "Emulated kernel: percent of received segments whose first bytes the emulation "
            "delivers linear (as header split leaves some bytes in host memory), 0-100",
            OPAL_INFO_LVL_6, &c->emul_linear_pct);
    c->emul_seed = 0;
    reg_int("emul_seed",
            "Emulated kernel: seed of the fragment layout (0: from the rank, so every rank "
            "differs)",
            OPAL_INFO_LVL_6, &c->emul_seed);
    c->sendi = true;
    reg_bool("sendi",
             "Offer the PML immediate (inline) sends of small messages. Off for GPU buffers "
             "with an Open MPI without CUDA support: an inline message carries its payload, "
             "which the receiver's PML would copy into a device buffer with the CPU",
             OPAL_INFO_LVL_5, &c->sendi);
    c->tx_host = false;
    reg_bool("tx_host",
             "Emulated kernel: answer device-flow gets from host memory with devmem TX too "
             "(host memory standing in for GPU memory), so that the TX path runs without a GPU",
             OPAL_INFO_LVL_6, &c->tx_host);
    c->cork = true;
    reg_bool("cork",
             "What PML callbacks send while the frames of one read are delivered (get "
             "requests, the answers to a batch of them, FINs) leaves in one send "
             "call when those frames are done, instead of one call per frame; nothing waits "
             "for another read. Measured on loopback: osu_bw at 128 KiB 2.2 times as fast. "
             "false: every frame is written as it is sent",
             OPAL_INFO_LVL_6, &c->cork);
    c->idle_yield_us = 10;
    reg_int("idle_yield_us",
            "A rank waiting in MPI yields the CPU at every progress call once this "
            "component's connections have been quiet for this many microseconds and another "
            "task wants its core (ranks sharing a core otherwise take turns of a whole time "
            "slice, 4 ms per message); a rank alone on its core keeps spinning. Ranks of an "
            "oversubscribed node (more ranks than CPUs) yield at once. 0: yield at "
            "once when quiet, -1: never (spin like the TCP BTL). With mpi_yield_when_idle, Open "
            "MPI's yields decide instead unless btl_devmem_idle_own",
            OPAL_INFO_LVL_5, &c->idle_yield_us);
    c->idle_block_us = 1000;
    reg_int("idle_block_us",
            "Longest sleep of a waiting rank on its sockets, which hands its core over until "
            "one of them is ready (only inside a wait loop). A rank bound to one CPU sleeps "
            "at every quiet progress call once two yields in a row show that another task "
            "runs on its core (typically the peer it waits for); what other components, e.g. "
            "shared memory, deliver meanwhile waits that long at most. A rank the scheduler "
            "may move, with every peer on this BTL or self, sleeps after idle_yield_us of "
            "quiet while an unrelated task wants its core and several transfers are under "
            "way (gets not yet answered, a full socket with frames queued), rather than spin "
            "against that task for whole time slices (beside two busy processes over a veth: "
            "4 MiB bandwidth 2 times as fast). 0: never sleep; yield instead, and let "
            "idle_adapt choose between yielding and spinning for ranks the scheduler may move. "
            "Measured at 1 MiB between "
            "two ranks bound to one CPU: sleeps 1.4 times as fast over a veth, yields 1.4 "
            "times as fast over loopback (oversubscribed ranks of one node: try 0)",
            OPAL_INFO_LVL_5, &c->idle_block_us);
    c->idle_adapt = true;
    reg_bool("idle_adapt",
             "While another task wants the core of a waiting rank that does not sleep on "
             "its sockets for it (see idle_block_us), time its waits and keep "
             "whichever way makes them shorter: handing the core over as above (best when "
             "that task is the peer it waits for) or spinning for up to idle_spin_us first "
             "(best when it is an unrelated busy process, to which a yield gives a whole time "
             "slice and a sleep costs a wake-up). Now and then it tries the other way again "
             "for a few waits. false: always hand over as above",
             OPAL_INFO_LVL_5, &c->idle_adapt);
    c->idle_own = true;
    reg_bool("idle_own",
             "With mpi_yield_when_idle 1 (Open MPI yields after every idle progress call), "
             "this policy decides instead while the rank has connections of ours, as it does "
             "without that setting: it hands the core over where that brings the answer "
             "sooner and spins where a yield would give an unrelated busy process a whole "
             "time slice (beside two busy processes, Open MPI's yields cost 2.7 ms per "
             "8-byte message on loopback; this policy 18 us, measured). false: Open MPI's "
             "yields, and this policy stays out",
             OPAL_INFO_LVL_5, &c->idle_own);
    c->idle_spin_us = 500;
    reg_int("idle_spin_us",
            "Where idle_adapt found spinning better: quiet microseconds a waiting rank bound "
            "to one CPU spins before it hands its core over anyway, which bounds what "
            "spinning costs when the task beside it turns out to be the peer it waits for; a "
            "rank the scheduler may move spins ten times as long, past which the wait is a "
            "peer still computing, maybe on the core the spin takes (more ranks than cores)",
            OPAL_INFO_LVL_6, &c->idle_spin_us);
    c->poll_max = 16;
    reg_int("poll_max",
            "Most sockets the component polls with poll(); past that many (peers, links and "
            "device flows together) it moves them all into an epoll set, whose idle turn costs "
            "the same for any number of sockets but whose standing registration makes every "
            "arriving packet wake it. 0: epoll from the start",
            OPAL_INFO_LVL_9, &c->poll_max);
    c->write_chunk = -1;
    reg_int("write_chunk",
            "Most bytes handed to the kernel in one send call; 0: no limit; -1: 512 KiB on "
            "loopback and where TCP's congestion control is bbr, no limit elsewhere. On "
            "loopback both copies of a payload run on this host, and 512 KiB pieces, copied "
            "out while still in the cache, halved the time of a 4 MiB ping-pong. BBR without "
            "an fq qdisc paces one large write out in steps (a 1 MiB ping-pong over a veth: "
            "0.39 ms in one call, 0.18 ms in 512 KiB calls, 0.26 ms in 128 KiB calls). Under "
            "CUBIC a write leaves at once, and small calls cost 20-40 %",
            OPAL_INFO_LVL_5, &c->write_chunk);
    c->write_ramp = 0;
    reg_int("write_ramp",
            "Bytes of the first send call when a connection starts writing a burst of 64 KiB "
            "to 512 KiB; every next call of the burst writes twice as many, up to write_chunk, "
            "so that the receiver may copy out the first piece while the sender copies in the "
            "next. 0 (the default): none. Over a veth, where the receiver's copy runs on the "
            "sender's CPU, a 64 KiB ramp made 128-512 KiB ping-pongs 1.03-1.15x slower under "
            "BBR and 1.06-1.11x under CUBIC; it may pay between separate hosts",
            OPAL_INFO_LVL_5, &c->write_ramp);
    c->write_whole = -1;
    reg_int("write_whole",
            "Largest frame written in one send call, past write_chunk, when it is the only "
            "one queued and none of it is written yet (a ping-pong's answer; streams keep "
            "write_chunk); 0: none; -1: 1 MiB on loopback, none elsewhere. On loopback a 768 "
            "KiB ping-pong took 113 us in one call against 199 in 512 + 192 KiB calls "
            "(btl/tcp 105); over a veth under BBR one call of 1 MiB was 1.7x slower",
            OPAL_INFO_LVL_5, &c->write_whole);

    c->push = 64 * 1024;
    reg_int("push",
            "Bytes of a rendezvous (RGET) of host memory sent behind its header unasked, so "
            "that the receiver's get asks only for the rest while they travel; it saves up "
            "to one small-message round trip at the first sizes past the eager limit. The "
            "receiver keeps up to 4 pushes per connection that arrive before their receive "
            "is posted. 0: off; at most 1048576",
            OPAL_INFO_LVL_5, &c->push);
    c->push_min = 512 * 1024;
    reg_int("push_min",
            "Smallest rendezvous (bytes) that pushes its first btl_devmem_push bytes. Below "
            "it the get asks for everything: from 128 to 256 KiB a push made a ping-pong "
            "5-12 % slower on loopback and over a veth (one more send call and receive for a "
            "transfer that takes about as long as the round trip it hides), where from 512 KiB "
            "over a veth no push made it up to 1.9x slower. 0: every rendezvous larger than "
            "the push",
            OPAL_INFO_LVL_5, &c->push_min);

    c->gpu = -1;
    reg_int("gpu",
            "The CUDA device of this rank: its memory holds the RX pool (cuda provider), and "
            "where several interfaces could carry the device path, only those nearest to it "
            "on the PCI topology get one. -1: the device of the CUDA context current at "
            "MPI_Init (cudaSetDevice before it), else the local rank modulo the devices",
            OPAL_INFO_LVL_3, &c->gpu);
    c->near = "";
    reg_string("near",
               "What the device path should be near when several interfaces could carry it: "
               "empty for the rank's GPU (btl_devmem_gpu), a PCI address (dddd:bb:dd.f) for "
               "another device, or \"none\" to give every capable interface a device path. "
               "The nearest class of PCI path wins: one PCIe switch, several switches, the "
               "host bridge, the same NUMA node, across sockets; interfaces that are no PCI "
               "device (veth, lo) rank last",
               OPAL_INFO_LVL_4, &c->near);
    c->topology = "";
    reg_string("topology",
               "An hwloc XML file (lstopo --of xml) to read the PCI topology from instead of "
               "discovering this machine's (empty: discover)",
               OPAL_INFO_LVL_6, &c->topology);

    c->fault = "";
    reg_string("fault",
               "For tests only: make one rank spoil one of its frames, to show what a "
               "peer's garbage does to a live connection: bad-type (an unknown frame type), "
               "too-long (a length beyond every limit), truncated (half a header, then the "
               "connection shut) or push-cut (a rendezvous header announcing a push, then the "
               "connection shut where the push should follow); empty: never",
               OPAL_INFO_LVL_9, &c->fault);
    c->fault_rank = 0;
    reg_int("fault_rank", "For tests only: the rank (in MPI_COMM_WORLD) that injects "
            "btl_devmem_fault", OPAL_INFO_LVL_9, &c->fault_rank);
    c->fault_after = 50;
    reg_int("fault_after", "For tests only: SEND frames (push-cut: announcing a push) that "
            "rank sends intact before btl_devmem_fault strikes", OPAL_INFO_LVL_9,
            &c->fault_after);

    mca_btl_devmem_stats_register();
    return mca_btl_base_param_register(&c->super.btl_version,
                                       &mca_btl_devmem_module_template.super);
}

/* The ranges of the parameters that have one; OPAL_ERR_BAD_PARAM with the user told which. */
static int check_param_ranges(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const char *name = NULL, *valid = NULL;
    char value[32];

    if (c->devflows < 1 || c->devflows > (int) MCA_BTL_DEVMEM_DEVFLOWS_MAX) {
        name = "btl_devmem_devflows", valid = "1 to 16";
        snprintf(value, sizeof(value), "%d", c->devflows);
    } else if (c->devflow_chunk < 4096) {
        name = "btl_devmem_devflow_chunk", valid = "4096 or more";
        snprintf(value, sizeof(value), "%zu", c->devflow_chunk);
    } else if (0 == c->rx_queues || c->rx_queues < -1
               || c->rx_queues > MCA_BTL_DEVMEM_RX_QUEUES_MAX) {
        name = "btl_devmem_rx_queues", valid = "-1, or 1 to 64";
        snprintf(value, sizeof(value), "%d", c->rx_queues);
    } else if (c->gather_depth < 1 || c->gather_depth > 64) {
        name = "btl_devmem_gather_depth", valid = "1 to 64";
        snprintf(value, sizeof(value), "%d", c->gather_depth);
    } else if (c->rx_threads < 0 || c->rx_threads > MCA_BTL_DEVMEM_RX_THREADS_MAX) {
        name = "btl_devmem_rx_threads", valid = "0 to 16";
        snprintf(value, sizeof(value), "%d", c->rx_threads);
    } else if (c->push < 0 || c->push > (int) MCA_BTL_DEVMEM_PUSH_MAX) {
        name = "btl_devmem_push", valid = "0 to 1048576";
        snprintf(value, sizeof(value), "%d", c->push);
    } else if (c->push_min < 0) {
        name = "btl_devmem_push_min", valid = "0 or more";
        snprintf(value, sizeof(value), "%d", c->push_min);
    } else if (c->emul_gather_lag < 0 || c->emul_gather_lag > 1000) {
        name = "btl_devmem_emul_gather_lag", valid = "0 to 1000";
        snprintf(value, sizeof(value), "%d", c->emul_gather_lag);
    }
    if (NULL != name) {
        opal_show_help("help-mpi-btl-devmem.txt", "bad devmem param", true, name, value, valid);
        return OPAL_ERR_BAD_PARAM;
    }
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------------- open / close */

static int component_open(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    char built[32];

    /* The MCA loader does not compare versions: a component built for another Open MPI
     * series would load and crash on the first mismatched struct. */
    snprintf(built, sizeof(built), "%d.%d.", OPAL_MAJOR_VERSION, OPAL_MINOR_VERSION);
    if (0 != strncmp(opal_version_string, built, strlen(built))) {
        opal_output(0,
                    "btl:devmem: this component was built for Open MPI %d.%d.%d but is "
                    "loaded into Open MPI %s; rebuild it against this Open MPI (configure "
                    "--with-ompi=...). Not using btl_devmem.",
                    OPAL_MAJOR_VERSION, OPAL_MINOR_VERSION, OPAL_RELEASE_VERSION,
                    opal_version_string);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    c->output = opal_output_open(NULL);
    opal_output_set_verbosity(c->output, c->verbose);
    c->num_modules = 0;
    c->modules = NULL;
    memset(&c->stats, 0, sizeof(c->stats));
    memset(c->lane_rx_bytes, 0, sizeof(c->lane_rx_bytes));
    memset(c->queue_rx_bytes, 0, sizeof(c->queue_rx_bytes));
    OBJ_CONSTRUCT(&c->lock, opal_mutex_t);
    OBJ_CONSTRUCT(&c->procs, opal_proc_table_t);
    opal_proc_table_init(&c->procs, 16, 256);
    OBJ_CONSTRUCT(&c->pending_accepts, opal_list_t);
#ifdef DEVMEM_HELP_DIR /* built outside Open MPI: our help text is not in its directory */
    (void) opal_show_help_add_dir(DEVMEM_HELP_DIR);
#endif
    return OPAL_SUCCESS;
}

static void modules_release(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    mca_btl_devmem_liveness_stop();
    mca_btl_devmem_rxthreads_stop(); /* the lanes they served have closed */
    mca_btl_devmem_devflow_fini();
    mca_btl_devmem_reg_fini(); /* its TX bindings, before the kernel interface goes */
    mca_btl_devmem_dev_fini();
    for (int i = 0; i < c->num_modules; i++) {
        mca_btl_devmem_module_t *m = c->modules[i];
        mca_btl_devmem_listener_close(&m->listener);
        OBJ_DESTRUCT(&m->endpoints);
        OBJ_DESTRUCT(&m->lock);
        free(m);
    }
    free(c->modules);
    c->modules = NULL;
    c->num_modules = 0;
    mca_btl_devmem_watch_close();
}

/* An Open MPI 4.x with CUDA support copies device memory in its convertor (eager sends and
 * receives of device buffers) only once a BTL has started its CUDA support, as the BTLs that
 * handle device memory do. Declared here: common_cuda.h is not among every installation's
 * developer headers. */
#if OPAL_CUDA_SUPPORT && BTL_VERSION < 330
#define DEVMEM_OMPI_COMMON_CUDA 1
int mca_common_cuda_stage_one_init(void);
void mca_common_cuda_fini(void);
static bool common_cuda_started;
#endif

static int component_close(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;

    mca_btl_devmem_dispatch_lock();
    mca_btl_devmem_held_drop_all(&c->pending_accepts);
    if (c->stats_enabled && c->num_modules > 0) {
        mca_btl_devmem_stats_print();
    }
    mca_btl_devmem_proc_release_all();
    modules_release();
    mca_btl_devmem_dispatch_unlock();
    mca_btl_devmem_frag_lists_fini();
    OBJ_DESTRUCT(&c->pending_accepts);
    OBJ_DESTRUCT(&c->procs);
    OBJ_DESTRUCT(&c->lock);
    opal_output_close(c->output);
#ifdef DEVMEM_OMPI_COMMON_CUDA
    if (common_cuda_started) {
        mca_common_cuda_fini();
        common_cuda_started = false;
    }
#endif
    return OPAL_SUCCESS;
}

/* ---------------------------------------------------------------- init */

/*
 * An earlier life of this component in this process (Open MPI 5 closes it when the last
 * session ends and opens it again for the next one) published a modex record, and peers on
 * other hosts keep that one: their PMIx clients do not see it replaced (a key put again
 * after the fence of a new session keeps its first value there; a peer on this host reads
 * the new one). So this life takes that record's secret and listens on its ports again,
 * and the record stays true. Reads it into c->prev; false when there is none.
 */
static bool prev_record_read(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct mca_btl_devmem_modex_hdr hdr;
    uint8_t *blob = NULL;
    size_t size = 0;
    int rc;

    c->prev = NULL;
    c->prev_n = 0;
    if (!MCA_BTL_DEVMEM_REOPENS) {
        return false;
    }
    OPAL_MODEX_RECV(rc, &c->super.btl_version, &opal_proc_local_get()->proc_name,
                    (void **) &blob, &size);
    if (OPAL_SUCCESS != rc || size < sizeof(hdr)) {
        free(blob);
        return false;
    }
    memcpy(&hdr, blob, sizeof(hdr));
    if (MCA_BTL_DEVMEM_MODEX_MAGIC != hdr.magic || MCA_BTL_DEVMEM_MODEX_VERSION != hdr.version
        || size != sizeof(hdr) + (size_t) hdr.naddrs * sizeof(*c->prev)
        || (hdr.naddrs > 0 && NULL == (c->prev = malloc(hdr.naddrs * sizeof(*c->prev))))) {
        free(blob);
        return false;
    }
    memcpy(c->prev, blob + sizeof(hdr), hdr.naddrs * sizeof(*c->prev));
    c->prev_n = hdr.naddrs;
    c->secret = hdr.secret;
    free(blob);
    DEVMEM_VERBOSE(10, "opened again in this process: the secret and ports of its earlier modex "
                   "record, which peers keep");
    return true;
}

uint16_t mca_btl_devmem_prev_port(const mca_btl_devmem_module_t *m, bool devflow)
{
    const mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    const struct mca_btl_devmem_modex_addr *a;
    struct mca_btl_devmem_ip ip;

    if (m->index >= (uint32_t) c->prev_n) {
        return 0;
    }
    a = &c->prev[m->index];
    if (a->module != m->index || a->link != m->link || !mca_btl_devmem_modex_ip(a, &ip)
        || !mca_btl_devmem_ip_equal(&ip, &m->itf.addr)) {
        return 0;
    }
    return ntohs(devflow ? a->devflow_port : a->port);
}

static int create_listener(mca_btl_devmem_module_t *m)
{
    uint16_t want = mca_btl_devmem_prev_port(m, false);
    int rc = mca_btl_devmem_listen_socket(&m->itf, want, &m->listener.fd, &m->listener.port);

    if (0 != rc) {
        return rc;
    }
    if (0 != want && want != m->listener.port) {
        DEVMEM_VERBOSE(1, "%s: port %u, which peers on other hosts know from an earlier "
                       "session, is taken: they cannot connect", m->itf.name, (unsigned) want);
    }
    return mca_btl_devmem_listener_start(&m->listener);
}

static int publish_modex(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    size_t size = sizeof(struct mca_btl_devmem_modex_hdr)
                  + c->num_modules * sizeof(struct mca_btl_devmem_modex_addr);
    uint8_t *blob = calloc(1, size);
    struct mca_btl_devmem_modex_hdr hdr = {MCA_BTL_DEVMEM_MODEX_MAGIC,
                                           MCA_BTL_DEVMEM_MODEX_VERSION,
                                           (uint16_t) c->num_modules, c->secret};
    int rc;

    if (NULL == blob) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    memcpy(blob, &hdr, sizeof(hdr));
    for (int i = 0; i < c->num_modules; i++) {
        const mca_btl_devmem_module_t *m = c->modules[i];
        struct mca_btl_devmem_modex_addr a = {
            .family = AF_INET == m->itf.addr.family ? MCA_BTL_DEVMEM_MODEX_IPV4
                                                    : MCA_BTL_DEVMEM_MODEX_IPV6,
            .port = htons(m->listener.port),
            .prefix = m->itf.prefix,
            .flags = m->itf.loopback ? MCA_BTL_DEVMEM_ADDR_LOOPBACK : 0,
            .module = m->index,
            .link = m->link,
            .devflow_port = NULL != m->dev ? htons(m->dev->listener.port) : 0,
        };
        memcpy(a.addr, m->itf.addr.a.bytes, mca_btl_devmem_ip_len(&m->itf.addr));
        memcpy(blob + sizeof(hdr) + i * sizeof(a), &a, sizeof(a));
    }
    OPAL_MODEX_SEND(rc, MCA_BTL_DEVMEM_MODEX_SCOPE, &c->super.btl_version, blob, size);
    free(blob);
    return rc;
}

/*
 * Most bytes per send call on an interface, for btl_devmem_write_chunk -1 (see the
 * parameter's help for the figures). 512 KiB on loopback, and under BBR, which without an fq
 * qdisc paces a socket's queue itself: one large write then leaves in paced steps. Elsewhere
 * no limit: under CUBIC a write leaves at once.
 */
static size_t write_chunk_for(const mca_btl_devmem_component_t *c,
                              const struct mca_btl_devmem_if *itf)
{
    char cc[16];

    if (c->write_chunk >= 0) {
        return c->write_chunk > 0 ? (size_t) c->write_chunk : SIZE_MAX;
    }
    if (itf->loopback) {
        return 512 * 1024;
    }
    if (mca_btl_devmem_sock_default_cc(itf->addr.family, cc, sizeof(cc))
        && 0 == strcmp(cc, "bbr")) {
        DEVMEM_VERBOSE(5, "%s: congestion control bbr: send calls of at most 512 KiB "
                       "(btl_devmem_write_chunk)", itf->name);
        return 512 * 1024;
    }
    return SIZE_MAX;
}

static int create_modules(void)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    struct mca_btl_devmem_if ifs[MCA_BTL_DEVMEM_IF_MAX];
    char why[256] = "", unmatched[64] = "";
    int n, links = c->links > 0 ? c->links : 1;
    enum mca_btl_devmem_family family;
    const char *accel = mca_btl_devmem_accelerator();
    bool accel_cuda;

    n = mca_btl_devmem_if_discover(ifs, MCA_BTL_DEVMEM_IF_MAX);
    if (n < 0) {
        opal_output(0, "btl:devmem: cannot list network interfaces: %s", strerror(-n));
        return OPAL_ERROR;
    }
    if (0 == strcmp(c->family, "auto")) {
        family = MCA_BTL_DEVMEM_FAMILY_AUTO;
    } else if (0 == strcmp(c->family, "ipv4") || 0 == strcmp(c->family, "4")) {
        family = MCA_BTL_DEVMEM_FAMILY_IPV4;
    } else if (0 == strcmp(c->family, "ipv6") || 0 == strcmp(c->family, "6")) {
        family = MCA_BTL_DEVMEM_FAMILY_IPV6;
    } else {
        opal_show_help("help-mpi-btl-devmem.txt", "bad devmem param", true, "btl_devmem_family",
                       c->family, "auto, ipv4 or ipv6");
        return OPAL_ERR_BAD_PARAM;
    }
    if (OPAL_SUCCESS != check_param_ranges()) {
        return OPAL_ERR_BAD_PARAM;
    }
    n = mca_btl_devmem_if_select(ifs, n, c->if_include, c->if_exclude, why, sizeof(why),
                                 unmatched, sizeof(unmatched));
    if (n < 0) {
        opal_show_help("help-mpi-btl-devmem.txt", "invalid if list", true, why);
        return OPAL_ERR_BAD_PARAM;
    }
    if ('\0' != unmatched[0]) {
        opal_show_help("help-mpi-btl-devmem.txt", "if_include unmatched", true, unmatched);
    }
    n = mca_btl_devmem_if_pick_family(ifs, n, family);
    /* decided once: the send and registration paths only test the flag */
    accel_cuda = 0 == strcmp(accel, "cuda");
    c->accel_foreign = !accel_cuda && 0 != strcmp(accel, "null") && 0 != strcmp(accel, "none");
    c->accel_cuda = accel_cuda;
    DEVMEM_VERBOSE(5, "Open MPI's accelerator: %s; gets from its device memory %s", accel,
                   accel_cuda                   ? "offered to the PML"
                   : 0 == strcmp(accel, "none") ? "as the build allows (Open MPI 4)"
                                                : "not offered (CUDA memory only)");
    if (0 == n) {
        DEVMEM_VERBOSE(5, "no usable interface (if_include='%s', if_exclude='%s', family %s)",
                       c->if_include, c->if_exclude, c->family);
        return OPAL_ERR_NOT_AVAILABLE;
    }
    c->modules = calloc((size_t) n * links, sizeof(*c->modules));
    if (NULL == c->modules) {
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    for (int link = 0; link < links; link++) {
        for (int i = 0; i < n; i++) {
            mca_btl_devmem_module_t *m = malloc(sizeof(*m));
            char addr[MCA_BTL_DEVMEM_IP_STRLEN];
            int rc;

            if (NULL == m) {
                return OPAL_ERR_OUT_OF_RESOURCE;
            }
            memcpy(m, &mca_btl_devmem_module_template, sizeof(*m));
#if BTL_VERSION >= 330
            if (!accel_cuda) {
                m->super.btl_flags &= ~MCA_BTL_FLAGS_ACCELERATOR_GET;
            }
#endif
            if (!c->sendi) {
                m->super.btl_sendi = NULL; /* the PML then packs nothing itself */
            }
            OBJ_CONSTRUCT(&m->endpoints, opal_list_t);
            OBJ_CONSTRUCT(&m->lock, opal_mutex_t);
            m->itf = ifs[i];
            m->write.chunk = write_chunk_for(c, &m->itf);
            m->write.ramp = c->write_ramp > 0 ? (size_t) c->write_ramp : 0;
            if (c->write_whole >= 0) {
                m->write.whole = (size_t) c->write_whole;
            } else {
                m->write.whole = m->itf.loopback ? 1024 * 1024 : 0;
            }
            m->link = (uint32_t) link;
            m->index = (uint32_t) c->num_modules;
            mca_btl_devmem_conn_listener_init(m);
            m->error_cb = NULL;
            m->dev = NULL;
            m->dev_reason[0] = '\0';
            /* each extra link shares the interface: split its bandwidth */
            m->super.btl_bandwidth = mca_btl_devmem_module_template.super.btl_bandwidth / links;
            m->super.btl_latency = mca_btl_devmem_module_template.super.btl_latency * links;
            c->modules[c->num_modules++] = m;
            if (0 != (rc = create_listener(m))) {
                opal_output(0, "btl:devmem: cannot listen on %s (%s): %s", m->itf.name,
                            mca_btl_devmem_ip_str(&m->itf.addr, addr, sizeof(addr)),
                            strerror(-rc));
                return OPAL_ERROR;
            }
            DEVMEM_VERBOSE(10, "module %u: %s %s/%u port %u link %d", m->index, m->itf.name,
                           mca_btl_devmem_ip_str(&m->itf.addr, addr, sizeof(addr)),
                           (unsigned) m->itf.prefix, (unsigned) m->listener.port, link);
        }
    }
    return OPAL_SUCCESS;
}

static mca_btl_base_module_t **init_locked(int *num_btls)
{
    mca_btl_devmem_component_t *c = &mca_btl_devmem_component;
    mca_btl_base_module_t **btls = NULL;
    size_t cap;
    int rc;

    *num_btls = 0;
    mca_btl_devmem_nofile_init();
    if (!prev_record_read()
        && sizeof(c->secret) != getrandom(&c->secret, sizeof(c->secret), 0)) {
        opal_output(0, "btl:devmem: getrandom failed: %s", strerror(errno));
        return NULL;
    }
    rc = mca_btl_devmem_frag_lists_init(mca_btl_devmem_module_template.super.btl_eager_limit,
                                        mca_btl_devmem_module_template.super.btl_max_send_size);
    if (OPAL_SUCCESS == rc) {
        rc = mca_btl_devmem_fault_init();
    }
    if (OPAL_SUCCESS == rc && 0 != (rc = mca_btl_devmem_watch_open(c->poll_max))) {
        opal_output(0, "btl:devmem: cannot watch sockets: %s", strerror(-rc));
        rc = OPAL_ERROR;
    }
    if (OPAL_SUCCESS == rc && OPAL_SUCCESS == (rc = create_modules())
        && OPAL_SUCCESS == (rc = mca_btl_devmem_dev_init())) {
        rc = publish_modex();
    }
    if (OPAL_SUCCESS == rc && c->rx_threads > 0 && NULL != mca_btl_devmem_dev_batch(&cap)) {
        int trc = mca_btl_devmem_rxthreads_start(c->rx_threads);

        if (0 != trc) {
            /* the progress thread serves the lanes, as with btl_devmem_rx_threads 0 */
            opal_output(0, "btl:devmem: cannot start %d receiving thread(s): %s; the progress "
                           "thread receives the device flows", c->rx_threads, strerror(-trc));
        }
    }
    free(c->prev); /* the listeners have their ports */
    c->prev = NULL;
    c->prev_n = 0;
    if (OPAL_SUCCESS != rc) {
        goto fail;
    }
    btls = malloc(c->num_modules * sizeof(*btls));
    if (NULL == btls) {
        goto fail;
    }
    for (int i = 0; i < c->num_modules; i++) {
        btls[i] = &c->modules[i]->super;
    }
    mca_btl_devmem_liveness_start();
#ifdef DEVMEM_OMPI_COMMON_CUDA
    (void) mca_common_cuda_stage_one_init(); /* it says itself when CUDA is unusable */
    common_cuda_started = true;
#endif
    *num_btls = c->num_modules;
    return btls;
fail:
    modules_release();
    return NULL;
}

/* Any thread level: the model is in btl_devmem.h. Init and close hold the dispatch lock, as
 * everything that adds sockets to the set or takes them out does. */
static mca_btl_base_module_t **component_init(int *num_btls, bool enable_progress_threads,
                                              bool enable_mpi_threads)
{
    mca_btl_base_module_t **btls;

    mca_btl_devmem_dispatch_lock();
    btls = init_locked(num_btls);
    mca_btl_devmem_dispatch_unlock();
    DEVMEM_VERBOSE(10, "%d module(s), MPI threads %s, progress threads %s", *num_btls,
                   enable_mpi_threads ? "on" : "off", enable_progress_threads ? "on" : "off");
    return btls;
}
