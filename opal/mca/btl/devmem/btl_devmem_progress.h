/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How a rank that waits in MPI shares its core.
 *
 * A rank that waits for a message spins in opal_progress. Where two such ranks share a core
 * (more ranks than cores; or two "hosts" on one machine, whose first ranks Open MPI both binds
 * to core 0) the spinning one keeps the core for its whole time slice while the other holds the
 * answer: 4 ms per message. Open MPI's cure, mpi_yield_when_idle, yields on every idle progress
 * call and costs latency everywhere.
 *
 * Ours (btl_devmem_idle adaptive, the default): every event on one of our connections counts as
 * activity. Once our connections have been quiet for 10 us, and only while another task wants
 * our core (the kernel's count of involuntary switches, ru_nivcsw, moved within the last 200
 * ms: a tick took the core from us, or one of our yields did hand it over), each progress call
 * gives the core away (sched_yield). A rank alone on its core never yields: yielding there let
 * the scheduler pack two ranks on one core now and then, and doubled the latency of 64-256 KiB
 * messages for the rest of the run.
 *
 * A rank bound to one CPU whose yields keep handing the core over (two in a row that kept it
 * away 20 us or more) shares that core with a task that runs: most likely the peer it waits
 * for. For the next 200 ms it hands the core over as soon as it is quiet instead of after 10
 * us. It yields, which costs no wake-up and lets a peer that streams small messages write its
 * whole window before we read it; once this wait's yields come straight back for 20 us (the
 * scheduler will not run the peer yet), or when the wait began inside a window of transfers
 * (below), it sleeps on its sockets (poll or epoll) for at most 1 ms, so that the peer gets the
 * core at once and the answer wakes us. With btl_devmem_idle yield it only yields. It only
 * sleeps inside a wait loop (back-to-back progress calls), never in a lone MPI_Test between
 * computations.
 *
 * Ranks of an oversubscribed node (more of the job's ranks than the CPUs a rank may run on,
 * counting the peers on this machine that Open MPI places on other nodes: namespaces and
 * containers, told by the kernel's boot id in the modex) hand over at their first quiet call.
 *
 * A rank the scheduler may move, on a node with a CPU for each of its ranks, and with no BTL
 * but ours and self, sleeps on its sockets too, after 10 us of quiet, while another task wants
 * its core and the wait began inside a window of transfers (several gets asked and not yet
 * answered, or a full socket with frames queued behind it). That task is not the peer (the load
 * balancer parts tasks that both run), and spinning against it shares the core in whole time
 * slices: beside busy processes over a veth the sleeper's bandwidth is 1.5-2 times the
 * spinner's. Waits between single messages (a ping-pong) stay as chosen below, where a wake-up
 * would cost more than it saves. With another BTL (shared memory) in the job, which delivers
 * unseen by our poll, such a rank yields or spins as chosen below.
 *
 * All of that is right when the task beside us is the peer, and wrong when it is a busy process
 * of no concern to us: a yield gives it a whole slice, a sleep costs a wake-up, and the answer
 * comes from another core anyway. So (adaptive, not yield) the waits on a contended core of a
 * rank that does not sleep for it are timed and btl_devmem_idle_choice.h picks the faster way: hand
 * over as above, or spin (a rank bound to one CPU for at most 500 us, then hand over all the
 * same; one the scheduler may move for as long as it waits).
 *
 * Open MPI's mpi_yield_when_idle yields after every progress call that reports no event, beside
 * a busy process a whole slice each time. Unless btl_devmem_idle is spin, while we have
 * connections, this policy decides instead and our progress reports an event so that
 * opal_progress does not yield after it.
 */
#ifndef MCA_BTL_DEVMEM_PROGRESS_H
#define MCA_BTL_DEVMEM_PROGRESS_H

#include "base/btl_devmem.h"

BEGIN_C_DECLS

/* The component's btl_progress: registered by the BML, run at every opal_progress. Polls
 * our sockets (btl_devmem_pollset.h), then yields or sleeps as above; in one thread at a time
 * (the dispatch lock, taken with a try-lock: the others return at once). */
int mca_btl_devmem_progress(void);

END_C_DECLS

#endif /* MCA_BTL_DEVMEM_PROGRESS_H */
