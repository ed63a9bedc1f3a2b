/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * btl_devmem: an Open MPI BTL over TCP sockets that moves payloads between the NIC and
 * device memory with Linux device-memory TCP where the kernel and NIC allow it.
 *
 * This header holds the component type, its MCA parameters (the counters are
 * btl_devmem_counters.h's) and the modex record. The module, one per selected interface
 * address x link, is connections/btl_devmem_module.h's.
 *
 * Threads (any MPI thread level; MPI_THREAD_MULTIPLE is tested by test/mpi/threads.c, under
 * ThreadSanitizer too):
 *   - The dispatch lock (btl_devmem_pollset.h) is the progress path's: every socket callback
 *     (receive framing, handshakes, accepts, device flows, the gather and its copier) runs
 *     in the one thread that holds it, so their state has no lock of its own. Progress takes
 *     it with a try-lock (the others return at once: the work is being done); libevent
 *     timers, failing an endpoint, init and teardown take it blocking. Recursive per thread.
 *   - The endpoint's lock: its state, socket, send queue, pending gets and its device flow's
 *     list of gets. Application threads send, put and get under it alone; they write what
 *     the socket takes at once (unless a read from that peer is being dispatched, below)
 *     and never wait for the dispatch lock.
 *   - Leaf locks, held for a few instructions and never while taking another: the watch
 *     set's, the TX cache's (btl_devmem_reg.c), the component's (proc table).
 *   - Order: dispatch lock, then a receiving thread's lock, then a proc's lock, then a
 *     module's, then an endpoint's, then a leaf. Callbacks into the PML run without an
 *     endpoint lock held.
 *   - While the dispatcher delivers the frames of one read from an endpoint, sends to it
 *     (the callbacks', and any other thread's) are queued and leave together when those
 *     frames are done (btl_devmem_endpoint.c, tx_cork): another thread's send waits at most
 *     for frames already read, as its receives wait for the dispatcher anyway. A callback
 *     that re-enters progress flushes them first.
 *   - Counters are relaxed atomics; the idle policy's state is the dispatch lock's.
 *   - Receiving threads (btl_devmem_rx_threads, btl_devmem_rxthread.c) serve whole
 *     device-flow lanes, receiving side, without the dispatch lock: a lane's socket, ledger,
 *     gets in flight and its thread's gather pipe are that thread's while it serves the
 *     lane. Each thread holds its own lock for a turn (from epoll's wake-up to the next
 *     wait); the progress thread takes it to hand a lane over as it opens and to take it
 *     back before it closes, so it finds the thread between turns. Gets are taken off a
 *     lane's list under the endpoint's lock, as btl_get appends them. What a thread
 *     finishes (gets in place, lanes that ended) goes to the progress thread through a
 *     queue under a leaf lock; an eventfd in the watch set says it is there, and the
 *     progress thread completes the gets into the PML and acts on the ends (dispatch lock
 *     held). The emulated kernel is one state: a lock in devmem/kernel.c serialises calls
 *     into it.
 */
#ifndef MCA_BTL_DEVMEM_H
#define MCA_BTL_DEVMEM_H

#include "opal_config.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/mca/btl/base/base.h"
#include "opal/mca/btl/btl.h"
#include "base/btl_devmem_ompi_compat.h"
#include "opal/util/output.h"
#include "opal/util/proc.h"

#include "base/btl_devmem_counters.h"
#include "base/btl_devmem_hdr.h"

BEGIN_C_DECLS

struct mca_btl_devmem_proc_t;

/* What each process publishes in the modex: a header, then one record per module. */
/* Device-flow lanes per peer by default: one TCP flow is one core's softirq, at some 50
 * Gbit/s with devmem RX (no copy to pay for); four keep a 200 Gbit/s NIC's queues busy
 * and cost a host-memory job nothing (lanes open only where the device path is on). */
#define MCA_BTL_DEVMEM_DEVFLOWS_DEFAULT_SPEC "4"
/* Seconds a peer's lanes toward us may stay unused before they close */
#define MCA_BTL_DEVMEM_DEVFLOW_IDLE_DEFAULT 60

/* RX queues one pool may be bound to (the helper's protocol allows as many). */
#define MCA_BTL_DEVMEM_RX_QUEUES_MAX 64

/* Receiving threads a rank may run (btl_devmem_rx_threads): a thread serves whole lanes, and
 * a peer has at most MCA_BTL_DEVMEM_DEVFLOWS_MAX. */
#define MCA_BTL_DEVMEM_RX_THREADS_MAX 16

/* Read-ahead buffer of a connection: frames up to this size (and every eager frame, which may
 * be larger) are delivered from it without another copy. */
#define MCA_BTL_DEVMEM_RECV_BUFFER (128u * 1024u)

#define MCA_BTL_DEVMEM_MODEX_MAGIC 0x584d4442u
#define MCA_BTL_DEVMEM_MODEX_VERSION 4

struct mca_btl_devmem_modex_hdr {
    uint32_t magic;
    uint16_t version;
    uint16_t naddrs;
    uint64_t secret;     /* a connector must echo this to be accepted */
    uint8_t machine[16]; /* the kernel's boot id; all zero: unknown */
};

#define MCA_BTL_DEVMEM_ADDR_LOOPBACK 0x1

struct mca_btl_devmem_modex_addr {
    uint8_t family;  /* MCA_BTL_DEVMEM_MODEX_IPV4 or _IPV6 (not AF_*: those are per-OS) */
    uint8_t prefix;  /* netmask length of the interface */
    uint8_t flags;   /* MCA_BTL_DEVMEM_ADDR_* */
    uint8_t reserved;
    uint8_t addr[16]; /* network byte order; IPv4 in the first 4 bytes */
    uint16_t port;   /* network byte order */
    uint16_t devflow_port; /* network byte order; 0: this module receives no device flows */
    uint32_t module; /* the publisher's module index: sent back in the hello */
    uint32_t link;   /* link number on that interface (0 .. links-1) */
};
_Static_assert(sizeof(struct mca_btl_devmem_modex_addr) == 32, "modex record is 32 bytes");

#define MCA_BTL_DEVMEM_MODEX_IPV4 4
#define MCA_BTL_DEVMEM_MODEX_IPV6 6


/* btl_devmem_idle (btl_devmem_progress.h) */
enum mca_btl_devmem_idle_mode {
    MCA_BTL_DEVMEM_IDLE_ADAPTIVE, /* hand over, sleep or spin, as measured */
    MCA_BTL_DEVMEM_IDLE_YIELD,    /* hand over by sched_yield only */
    MCA_BTL_DEVMEM_IDLE_SPIN,     /* never hand over (Open MPI's yield_when_idle decides) */
};

typedef struct mca_btl_devmem_component_t {
    mca_btl_base_component_3_0_0_t super;

    /* MCA parameters */
    char *if_include;
    char *if_exclude;
    char *family;           /* auto | ipv4 | ipv6 */
    int links;
    int sockbuf;            /* SO_SNDBUF and SO_RCVBUF, 0: the kernel's autotuning */
    char *ports;            /* "LOW-HIGH": where listen sockets go, empty: anywhere */
    uint16_t port_lo, port_hi; /* parsed from ports, 0: no range */
    int handshake_timeout;  /* seconds a stranger may take to say hello */
    int peer_timeout;       /* seconds before a silent peer counts as lost, 0: no check */
    int verbose;
    bool stats_enabled;
    char *mode;             /* auto | require | off */
    char *kernel;           /* real | emulated */
    char *helper;           /* auto | off | the devmem-helperd socket path */
    char *rx_provider;      /* auto | cuda | udmabuf | drm | host */
    size_t rx_pool_size;    /* bytes of RX pool per module */
    int rx_queues;          /* RX queues per pool, -1: as many as devflows where there are */
    char *devflows_spec;    /* "LANES[,fds=N][,idle=S]", parsed into the three below */
    int devflows;           /* device-flow lanes opened to each peer that asks for them */
    unsigned long devflow_fds; /* descriptors all lanes may hold, 0: half of those free */
    int devflow_idle;       /* seconds unused before a peer's lanes close, 0: never */
    size_t devflow_chunk;   /* bytes per chunk of a get cut over several lanes */
    int gather_depth;       /* gathers (batches of receives) that may run at once */
    int rx_threads;         /* receiving threads serving device-flow lanes, 0: progress,
                             * -1: one where the node has CPUs to spare */
    bool sendi;             /* offer immediate sends */
    /* Open MPI 5's accelerator is not CUDA's (ROCm, Level Zero): only then can a buffer be
     * device memory that the device path cannot carry (mca_btl_devmem_mem_is_foreign) */
    bool accel_foreign;
    /* Open MPI 5's accelerator is CUDA's: it marks device buffers in their convertors
     * (mca_btl_devmem_convertor_is_device) */
    bool accel_cuda;
    char *idle;             /* adaptive | yield | spin: how a waiting rank shares its core */
    enum mca_btl_devmem_idle_mode idle_mode; /* the same, parsed */
    int push;               /* bytes of an RGET pushed behind its header, 0: off (push.h) */
    int gpu;                /* the rank's CUDA device, -1: current context or local rank */
    char *near;             /* PCI address to be near, "none", or empty: the GPU's */
    char *testing;          /* tests: key=value settings, parsed into the fields below */
    char *device_paths;     /* read-only, for MPI_T readers (devmem-check): one line per
                             * interface, "NAME on|off: what" (mca_btl_devmem_params_status) */

    /* From btl_devmem_testing (btl_devmem_params.c), for tests only */
    char *fault;            /* a frame to spoil (btl_devmem_fault.c), empty: none */
    char *topology;         /* hwloc XML to read instead of this machine's, empty: none */
    char *gather_way;       /* how GPU gathers launch (devmem_cuda_way_by_name), empty: the
                             * kernel layer's default */
    int fault_rank;         /* the rank that spoils it */
    int fault_after;        /* SEND frames that go out intact first */
    int emul_linear_pct;    /* emulated: % of skbs whose first bytes stay linear */
    int emul_seed;          /* emulated: layout seed, 0: from the rank */
    bool tx_host;           /* emulated: answer gets from host memory with devmem TX too */
    int emul_gather_lag;    /* progress polls before a host gather is done */
    long unbind_after;      /* undo this rank's RX bindings once this many bytes landed in
                             * its pools, as when their netlink socket closes; 0: never */
    int poll_max;           /* sockets polled with poll() before an epoll set (pollset.c) */
    int write_chunk;        /* most bytes per sendmsg, 0: no limit, -1: by interface */
    int push_min;           /* smallest rendezvous that pushes */
    int testing_cpus;       /* CPUs btl_devmem_rx_threads -1 counts, 0: this node's */

    /* state */
    int output;                                  /* opal_output stream for verbose messages */
    opal_proc_table_t procs;                     /* opal name -> mca_btl_devmem_proc_t */
    opal_mutex_t lock;
    uint64_t secret;                             /* ours; published in the modex */
    uint8_t machine[16];                         /* our kernel's boot id (modex); 0: unknown */
    int machine_peers;                           /* peers met that share it (atomic) */
    struct mca_btl_devmem_modex_addr *prev;      /* during init: the records an earlier life
                                                  * of the component published here */
    int prev_n;
    opal_list_t pending_accepts;                 /* sockets still in the handshake */
    uint64_t activity;                           /* events on our sockets (progress.c) */
    int window_gets;                             /* gets waiting for their answer */
    int window_writers;                          /* connections blocked on several frames */

    opal_free_list_t frags_eager; /* payload up to eager_limit */
    opal_free_list_t frags_max;   /* payload up to max_send_size */
    opal_free_list_t frags_user;  /* no payload: points at caller memory */

    struct mca_btl_devmem_stats stats;
    /* device-flow bytes received per lane number, all peers together (the stats' lanes
     * line): whether the striping spreads */
    _Atomic uint64_t lane_rx_bytes[MCA_BTL_DEVMEM_DEVFLOWS_MAX];
    /* device-flow bytes received per RX queue, by the queue's place in its module's set (the
     * stats' queues line): whether the RSS context spreads the lanes */
    _Atomic uint64_t queue_rx_bytes[MCA_BTL_DEVMEM_RX_QUEUES_MAX];
    /* receiving threads running (btl_devmem_rxthread.c), and per thread the receives and
     * bytes it took (the stats' rxthreads line) */
    int rx_threads_running;
    _Atomic uint64_t rxthread_receives[MCA_BTL_DEVMEM_RX_THREADS_MAX];
    _Atomic uint64_t rxthread_bytes[MCA_BTL_DEVMEM_RX_THREADS_MAX];
} mca_btl_devmem_component_t;

MCA_BTL_DEVMEM_EXPORT extern mca_btl_devmem_component_t mca_btl_devmem_component;

/* How a connection's queue of frames is cut into send calls (mca_btl_devmem_frag_queue_write),
 * per interface (btl_devmem_component.c, write_shape_for). */
struct mca_btl_devmem_write_shape {
    size_t chunk; /* most bytes per sendmsg; SIZE_MAX: no limit */
    size_t whole; /* a lone frame, none of it written, of up to this many bytes goes in one
                   * sendmsg whatever chunk says; 0: none */
};


#define DEVMEM_VERBOSE(level, ...) \
    opal_output_verbose((level), mca_btl_devmem_component.output, "btl:devmem: " __VA_ARGS__)

/* Nanoseconds on the monotonic clock (the progress policy's waits, the binding watch). */
static inline uint64_t mca_btl_devmem_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

/* module functions (btl_devmem_module.c) */
int mca_btl_devmem_add_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                             struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers,
                             opal_bitmap_t *reachable);
int mca_btl_devmem_del_procs(struct mca_btl_base_module_t *btl, size_t nprocs,
                             struct opal_proc_t **procs, struct mca_btl_base_endpoint_t **peers);
int mca_btl_devmem_finalize(struct mca_btl_base_module_t *btl);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_H */
