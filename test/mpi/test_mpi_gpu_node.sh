#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A host job on a node with the NVIDIA driver: btl_devmem must not start the driver when no
# NIC can carry the device path. Once started (cuInit), every pointer check of the process
# costs a driver lookup, Open MPI's for each message included: 8 B latency went from 5.5 to
# 7.7 us on an H200 node. Each rank loads a stand-in libcuda.so.1 (test/unit/fake_cuda.c),
# as Open MPI built with CUDA or the application would load the real one, and the stand-in
# writes what it was asked at exit:
#   real kernel (no NIC here takes a binding): cuInit never called; pointers still asked
#       about (the sends' checks), every byte of the ping-pong checked;
#   the same with two NICs (two veth pairs between two namespaces), where choosing the
#       NIC nearest the rank's GPU would ask the driver for that GPU: asked only once some
#       NIC passes the kernel's probe, so never here;
#   emulated kernel with the RX pool asked in GPU memory (btl_devmem_rx_provider cuda): the
#       driver is started for the pool (the stand-in has no device, so the job goes on over
#       host TCP), so the first run's zero is not a stand-in that counts nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../net/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the CUDA driver's start is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
fake=$DEVMEM_BUILD/test/unit/fakecuda/libcuda.so.1
[ -f "$fake" ] || devmem_skip "the stand-in driver is not built ($fake: make check)"
# an Open MPI built with CUDA links the real driver itself, which the stand-in cannot replace
ompi_info --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true' &&
    devmem_skip "this Open MPI is built with CUDA and loads the real driver itself"
# every step's prerequisites before the first runs: a skip must not hide a failure
netns_setup
second=dmg$$
second=${second:0:15}
netns_add_link "$second" 192.0.2.101 192.0.2.102
limit=$DEVMEM_MPI_LIMIT
pp=$DEVMEM_MPI_BIN/pingpong

# the stand-in's lines of one run: "pid cuInit=N cuPointerGetAttributes=M", one per rank.
# WANT: unstarted (cuInit 0 and pointers asked about in each rank) or started (cuInit > 0).
expect_log() { # LOG WANT LABEL
    local log=$1 want=$2 what=$3 ranks inits queries
    ranks=$(grep -c 'cuInit=' "$log" 2>/dev/null)
    inits=$(grep -o 'cuInit=[0-9]*' "$log" 2>/dev/null | cut -d= -f2 | tr '\n' ' ')
    queries=$(grep -o 'cuPointerGetAttributes=[0-9]*' "$log" 2>/dev/null | cut -d= -f2 | tr '\n' ' ')
    if [ "${ranks:-0}" -ne 2 ]; then
        devmem_step_fail "$what: the stand-in driver reported from ${ranks:-0} of 2 ranks"
    elif [ "$want" = unstarted ] && [ -z "$(echo $inits | tr -d ' 0')" ] &&
        ! echo " $queries " | grep -q ' 0 '; then
        devmem_step_ok "$what: cuInit $inits, pointer queries $queries"
    elif [ "$want" = started ] && ! echo " $inits " | grep -q ' 0 '; then
        devmem_step_ok "$what: cuInit $inits"
    else
        devmem_step_fail "$what: cuInit $inits, pointer queries $queries (want the driver $want)"
    fi
}

log=$DEVMEM_TEST_TMP/fakecuda-real.log
if devmem_run_checked "real kernel, stand-in driver loaded" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_kernel real \
    --mca btl_devmem_mode auto -x LD_PRELOAD="$fake" -x FAKE_CUDA_LOG="$log" "$pp" -m 1M; then
    expect_log "$log" unstarted "no NIC for the device path: driver never started"
fi

NETNS_BTL_IF=$NETNS_LINK,$second
log=$DEVMEM_TEST_TMP/fakecuda-two.log
if devmem_run_checked "real kernel, two NICs, stand-in driver loaded" pingpong 2 "$limit" \
    netns_mpirun "$limit" 1 1 --mca btl_devmem_kernel real --mca btl_devmem_mode auto \
    --mca btl_devmem_verbose 1 -x LD_PRELOAD="$fake" -x FAKE_CUDA_LOG="$log" "$pp" -m 1M; then
    why_off=bind-rx
    [ "$DEVMEM_HAVE_LIBMNL" = 1 ] || why_off="built without libmnl"
    devmem_expect_line "$DEVMEM_LAST_OUT" "device path off on $second \(real kernel\): .*$why_off" \
        "the second NIC says the kernel's reason"
    expect_log "$log" unstarted "two NICs, none for the device path: driver never started"
fi

log=$DEVMEM_TEST_TMP/fakecuda-emul.log
if devmem_run_checked "emulated kernel, GPU pool, stand-in driver loaded" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_kernel emulated \
    --mca btl_devmem_mode auto --mca btl_devmem_rx_provider cuda -x LD_PRELOAD="$fake" \
    -x FAKE_CUDA_LOG="$log" "$pp" -m 1M; then
    expect_log "$log" started "a GPU pool asked for: driver started"
fi
devmem_finish
