/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The component's counters, defined once, and how every layer adds to them.
 * MCA_BTL_DEVMEM_STATS lists every key in the order of the btl_devmem_stats line; from it
 * come the counting struct, the line, and the MPI_T performance variables (btl_devmem_<key>)
 * that tools read during a run (the last two: btl_devmem_stats.h, at the top). A key added
 * here appears in all three; test/build/test_stats_keys.sh then asks for its row in
 * doc/user-guide.md.
 *
 * X(key, kind, meaning), kind one of:
 *   COUNTER    a field the component adds to (class COUNTER)
 *   HIGHWATER  a field holding the largest value seen (class HIGHWATERMARK;
 *              mca_btl_devmem_stats_max)
 *   DERIVED    no field: computed when read (how many modules have a device path, what only
 *              the emulated kernel counts)
 * Fields are atomics: application threads count their sends while the progress thread
 * counts its receives (btl_devmem.h: Threads); every layer adds with mca_btl_devmem_stats_add.
 */
#ifndef MCA_BTL_DEVMEM_COUNTERS_H
#define MCA_BTL_DEVMEM_COUNTERS_H

#include <stdatomic.h>
#include <stdint.h>

#define MCA_BTL_DEVMEM_STATS(X)                                                              \
    X(tx_host, COUNTER, "payload bytes written from host memory")                            \
    X(rx_host, COUNTER, "payload bytes read into host memory")                               \
    X(tx_frags, COUNTER, "fragments sent on control connections")                            \
    X(sendi_declined, COUNTER, "inline sends left to the PML's ordinary send: not connected yet, frames queued, a read being dispatched, or no room in the socket") \
    X(sendi_waited, COUNTER, "inline sends whose socket took part of the frame: the rest was sent before the call returned") \
    X(rx_frags, COUNTER, "fragments received on control connections")                        \
    X(get_host, COUNTER, "bytes moved by get through host memory")                           \
    X(put_host, COUNTER, "bytes moved by put")                                               \
    X(conn_made, COUNTER, "connections that completed the handshake")                        \
    X(conn_refused, COUNTER, "incoming connections of strangers dropped: a bad hello, silence, too many waiting") \
    X(conn_races, COUNTER, "incoming connections closed before a byte of hello (lost connect races)") \
    X(accept_pauses, COUNTER, "times accepting paused: no descriptor to accept with")      \
    X(conn_failed, COUNTER, "connections lost without an orderly close")                     \
    X(proto_errors, COUNTER, "connections closed for a malformed fragment")                  \
    X(writev_calls, COUNTER, "sendmsg calls on control connections")                         \
    X(recv_calls, COUNTER, "receive calls, control connections and device flows")            \
    X(devmem_modules, DERIVED, "modules (interfaces) whose device path is on")               \
    X(rx_queues, DERIVED, "RX queues bound to this rank's pools (all modules)")             \
    X(rx_threads, DERIVED, "receiving threads serving device-flow lanes (0: the progress thread)") \
    X(tx_devmem, COUNTER, "payload bytes sent with devmem TX from a dmabuf")                 \
    X(rx_dmabuf, COUNTER, "device-flow bytes that landed in an RX pool (dmabuf fragments)")  \
    X(rx_linear, COUNTER, "device-flow bytes the kernel delivered linear")                   \
    X(tokens_received, COUNTER, "dmabuf fragments (tokens) handed to us by the kernel")      \
    X(tokens_returned, COUNTER, "tokens the kernel confirmed freed (SO_DEVMEM_DONTNEED)")    \
    X(dontneed_calls, COUNTER, "SO_DEVMEM_DONTNEED calls")                                   \
    X(fallbacks, COUNTER, "gets that took the control connection while the device path was on") \
    X(push_sent, COUNTER, "first bytes of rendezvous sent behind their header unasked (pushes)") \
    X(push_in_place, COUNTER, "pushes read straight to the destination of their get")      \
    X(push_copied, COUNTER, "pushes kept until their get came, then copied")                 \
    X(push_unclaimed, COUNTER, "pushes no get took (another protocol, dropped, closed)")     \
    X(host_gets_control, COUNTER, "gets into host memory kept on the control connection: the RX pool is device memory") \
    X(bindings_lost, COUNTER, "RX bindings found gone under the job (their netlink socket closed, the device went away): that interface's device path is off from then on") \
    X(tx_bindings_lost, COUNTER, "devmem TX bindings whose sends the kernel refused under the job (gone with the netlink socket that made them): their gets are staged from then on") \
    X(devflows, COUNTER, "device-flow connections adopted (receiving side)")                 \
    X(devflow_gets, COUNTER, "gets this rank answered on a device flow")                     \
    X(devflow_fallbacks, COUNTER, "device-flow lanes given up for the control connection (either side)") \
    X(devflow_lanes, HIGHWATER, "most device-flow lanes open from one peer (receiving side)") \
    X(devflow_retires, COUNTER, "times this rank had a peer close its lanes toward it, unused for btl_devmem_devflows' idle=S") \
    X(devflow_fds_max, HIGHWATER, "most device-flow descriptors open at once (both directions and those not yet claimed)") \
    X(devflow_chunks, COUNTER, "gets and chunks of gets asked on device-flow lanes")        \
    X(chunks_inflight_max, HIGHWATER, "most gets and chunks outstanding on one peer's lanes") \
    X(rx_pool_full, COUNTER, "device-flow receives refused because the RX pool was full")   \
    X(emul_pool_limited, DERIVED, "emulated kernel only: receives the RX pool cut short")    \
    X(emul_linger_bytes, DERIVED, "emulated kernel only: bytes queued when their RX binding went, read as its dmabuf fragments") \
    X(get_dmabuf, COUNTER, "get bytes that arrived as dmabuf fragments")                     \
    X(gather_calls, COUNTER, "receives whose fragments the GPU gathered")                    \
    X(gather_batches, COUNTER, "gathers of device-flow receives, one per batch (any pool)")  \
    X(gathers_inflight_max, HIGHWATER, "most gathers (batches of receives) in flight at once") \
    X(gather_waits, COUNTER, "times a receive waited for an earlier one's gather")          \
    X(dev_staged, COUNTER, "device-memory bytes copied through host memory")                 \
    X(gets_inflight_max, HIGHWATER, "most gets or chunks outstanding on one device-flow lane") \
    X(idle_yields, COUNTER, "times a waiting rank gave its core away (sched_yield)")         \
    X(idle_blocks, COUNTER, "sleeps of a waiting rank on its sockets (shared core, window)") \
    X(idle_waits_timed, COUNTER, "waits timed on a contended core, to choose the way to wait") \
    X(idle_way_tries, COUNTER, "epochs of waits that tried the other way (spin or hand over)") \
    X(idle_way_switches, COUNTER, "tries that won: the waiting rank changed its way to wait") \
    X(window_gets, DERIVED, "gets asked and not yet answered, now (0 once all are)")        \
    X(window_writers, DERIVED, "connections whose full socket holds more than a frame, now")

/* key indices, in the line's order */
enum {
#define MCA_BTL_DEVMEM_STAT_INDEX(key, kind, meaning) MCA_BTL_DEVMEM_STAT_##key,
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_INDEX)
#undef MCA_BTL_DEVMEM_STAT_INDEX
    MCA_BTL_DEVMEM_STAT_COUNT
};

#define MCA_BTL_DEVMEM_STAT_FIELD_COUNTER(key) _Atomic uint64_t key;
#define MCA_BTL_DEVMEM_STAT_FIELD_HIGHWATER(key) _Atomic uint64_t key;
#define MCA_BTL_DEVMEM_STAT_FIELD_DERIVED(key)
#define MCA_BTL_DEVMEM_STAT_FIELD(key, kind, meaning) MCA_BTL_DEVMEM_STAT_FIELD_##kind(key)

struct mca_btl_devmem_stats {
    MCA_BTL_DEVMEM_STATS(MCA_BTL_DEVMEM_STAT_FIELD)
};

/* *field += n from any thread. Relaxed: a count orders nothing (a plain ++ on an _Atomic field
 * would be a sequentially consistent one, a full barrier on weakly ordered CPUs). */
static inline void mca_btl_devmem_stats_add(_Atomic uint64_t *field, uint64_t n)
{
    (void) atomic_fetch_add_explicit(field, n, memory_order_relaxed);
}

/* *field = max(*field, v), whichever threads race to raise it. */
static inline void mca_btl_devmem_stats_max(_Atomic uint64_t *field, uint64_t v)
{
    uint64_t seen = atomic_load_explicit(field, memory_order_relaxed);

    while (v > seen && !atomic_compare_exchange_weak_explicit(field, &seen, v,
                                                              memory_order_relaxed,
                                                              memory_order_relaxed)) {
    }
}

#endif /* MCA_BTL_DEVMEM_COUNTERS_H */
