#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI across two "hosts": two network namespaces joined by a veth pair (test/net/netns.sh), mpirun
# in the first, the second host's daemon started through our launch agent. Checks that the ranks
# really run on two differently named nodes, runs the MPI test programs with checked data at
# 2+2 ranks (ping-pong also 1+1), and that the payload really crossed the veth.
# BTL: ${DEVMEM_TEST_BTL:-devmem,self}, restricted to the veth; extra arguments: $DEVMEM_TEST_MCA.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_programs pingpong nonblocking anysource vector unexpected collectives
netns_setup
limit=$DEVMEM_MPI_LIMIT

# 1. two nodes: each rank prints the node it runs on
out=$DEVMEM_TEST_TMP/hosts.out
if _devmem_run_bg netns_mpirun 60 2 2 hostname >"$out" 2>&1; then
    na=$(grep -cx "$NETNS_HOST_A" "$out")
    nb=$(grep -cx "$NETNS_HOST_B" "$out")
    if [ "$na" -eq 2 ] && [ "$nb" -eq 2 ]; then
        devmem_step_ok "4 ranks on two nodes: 2 on $NETNS_HOST_A, 2 on $NETNS_HOST_B"
    else
        cat "$out"
        devmem_step_fail "ranks per node: $na on $NETNS_HOST_A, $nb on $NETNS_HOST_B (want 2 and 2)"
    fi
else
    cat "$out"
    devmem_step_fail "mpirun across the namespaces could not start 'hostname'"
fi

# 2. the MPI programs, with checked data
before=$(netns_link_bytes)
run() { # PROG NA NB PROG-ARGS...; $tag, when set, ends the step's name
    local prog=$1 na=$2 nb=$3
    shift 3
    devmem_run_checked "$prog $na+$nb ranks${*:+ $*}${tag:+, $tag}" "$prog" $((na + nb)) "$limit" \
        netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/$prog" "$@"
}
run pingpong 1 1 -m 16M
run pingpong 2 2 -m 4M
run nonblocking 2 2 -n 100 -m 256k
run anysource 2 2 -m 256k
run unexpected 2 2 -m 2M
run vector 2 2 -m 1M
run collectives 2 2 -m 2M
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    # the same across hosts with the epoll backend of the socket set (btl_devmem_testing poll_max=0)
    mca_saved=("${DEVMEM_MCA_ARGS[@]}")
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing poll_max=0)
    tag=epoll run collectives 2 2 -m 2M
    # send calls of 128 KiB, which then end inside frames (btl_devmem_testing write_chunk=)
    DEVMEM_MCA_ARGS=("${mca_saved[@]}" --mca btl_devmem_testing write_chunk=131072)
    tag="128 KiB send calls" run pingpong 1 1 -m 4M
    tag="128 KiB send calls" run nonblocking 2 2 -n 100 -m 256k
    DEVMEM_MCA_ARGS=("${mca_saved[@]}")
fi
after=$(netns_link_bytes)

# 3. Both ranks bound to core 0, as Open MPI 4.1's own binding puts each host's first rank
# (taskset, since Open MPI 5 maps the two hosts' ranks apart). Without mpi_yield_when_idle,
# spinning ranks then take turns of a whole time slice per message; btl/devmem must get
# through by yielding when its connections are quiet (a validated run within the time limit,
# the yields counted), and, once its yields show the core shared, by sleeping on its sockets
# (the default, btl_devmem_idle adaptive: the sleeps counted) or by yielding at once (yield:
# none).
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    for idle in adaptive yield; do
        if NETNS_YIELD=0 devmem_run_checked \
            "pingpong 1+1 ranks on one core, no mpi_yield_when_idle, btl_devmem_idle $idle" \
            pingpong 2 "$limit" netns_mpirun "$limit" 1 1 --mca btl_devmem_stats 1 \
            --mca btl_devmem_idle "$idle" taskset -c 0 "$DEVMEM_MPI_BIN/pingpong" -m 1M; then
            devmem_expect_stat "$DEVMEM_LAST_OUT" 0 idle_yields -gt 0
            devmem_expect_stat "$DEVMEM_LAST_OUT" 1 idle_yields -gt 0
            if [ "$idle" = adaptive ]; then
                # which rank's waits show no-op yields or a window depends on what else the
                # core runs (beside a third busy task only the one that waits longer sleeps)
                blocks=$(devmem_stat_sum "$DEVMEM_LAST_OUT" idle_blocks) || blocks=missing
                if [ "$blocks" != missing ] && [ "$blocks" -gt 0 ]; then
                    devmem_step_ok "the ranks slept on their sockets $blocks times"
                else
                    devmem_step_fail "idle_blocks summed over the ranks: $blocks, want > 0"
                fi
            else
                devmem_expect_stat "$DEVMEM_LAST_OUT" 0 idle_blocks -eq 0
                devmem_expect_stat "$DEVMEM_LAST_OUT" 1 idle_blocks -eq 0
            fi
        fi
    done
fi

# 4. Both hosts are namespaces of this one machine: each rank learns from the modex (the
# kernel's boot id) which peers share its CPUs, though Open MPI places them on another node.
# With 2+2 ranks on fewer than 4 CPUs that is oversubscription: every rank hands over at each
# quiet call and never times a spin against the other host's ranks (no idle_way_tries), which
# halved the small-message rate of osu_mbw_mr 2+2 (doc/benchmarks.md).
if [ "$DEVMEM_BTL_NAME" = devmem ] &&
    devmem_run_checked "nonblocking 2+2 ranks, the other host's ranks seen on this machine" \
        nonblocking 4 "$limit" netns_mpirun "$limit" 2 2 --mca btl_devmem_stats 1 \
        --mca btl_devmem_verbose 10 "$DEVMEM_MPI_BIN/nonblocking" -n 50 -m 64k; then
    seen=$(grep -c "runs on this machine (same kernel boot id) though Open MPI places it" \
        "$DEVMEM_LAST_OUT")
    if [ "$seen" -ge 4 ]; then
        devmem_step_ok "the ranks saw the other host's ranks on this machine $seen times"
    else
        devmem_step_fail "the ranks saw the other host's ranks on this machine $seen times (want 4 or more: each of 4 ranks meets 2)"
    fi
    if [ "$(nproc)" -lt 4 ]; then
        for r in 0 1 2 3; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" idle_way_tries -eq 0
        done
    fi
fi

# 5. the ping-pong alone moves 2 x 2 x (1+16+...) MiB between the hosts: far more than 32 MiB
crossed=$((after - before))
if [ "$crossed" -gt $((32 << 20)) ]; then
    devmem_step_ok "$((crossed >> 20)) MiB crossed the veth"
else
    devmem_step_fail "only $crossed bytes crossed the veth (want > 32 MiB): did the BTL use it?"
fi
devmem_finish
