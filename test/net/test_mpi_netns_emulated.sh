#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path across two namespaced "hosts" (see test_mpi_netns.sh) through the emulated
# kernel ABI: device flows cross the veth, each receiver steers its device-flow port into its
# own RX pool, and every rank returns every token. btl_devmem_mode require, so a rank that
# fell back to host TCP fails the run. One run answers gets with devmem TX from host memory
# (btl_devmem_testing tx_host=1); the last shapes the veth with tbf at 1 Gbit/s.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the device path is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong nonblocking unexpected vector collectives
netns_setup
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_stats 1)
limit=$DEVMEM_MPI_LIMIT

run() { # DMABUF PROG NA NB PROG-ARGS...
    local dmabuf=$1 prog=$2 na=$3 nb=$4
    shift 4
    devmem_run_checked "$prog $na+$nb ranks${*:+ $*}" "$prog" $((na + nb)) "$limit" \
        netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/$prog" "$@" &&
        devmem_expect_device_path "$DEVMEM_LAST_OUT" $((na + nb)) "$dmabuf"
}
before=$(netns_link_bytes)
run 1 pingpong 1 1 -m 16M
run 1 nonblocking 2 2 -n 100 -m 256k
run 1 unexpected 2 2 -m 2M
run 0 vector 2 2 -m 1M
run 1 collectives 2 2 -m 2M
after=$(netns_link_bytes)
crossed=$((after - before))
if [ "$crossed" -gt $((32 << 20)) ]; then
    devmem_step_ok "$((crossed >> 20)) MiB crossed the veth"
else
    devmem_step_fail "only $crossed bytes crossed the veth (want > 32 MiB)"
fi

# devmem TX across the link: host memory standing in for GPU memory (btl_devmem_testing tx_host=1), every
# get answered from a TX binding of the registered buffer, several gets in flight at once
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing tx_host=1)
if run 1 pingpong 1 1 -m 64M; then
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" tx_devmem -gt $((64 << 20))
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gets_inflight_max -gt 1
    done
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

if command -v tc >/dev/null 2>&1; then
    netns_shape root tbf rate 1gbit burst 128kb latency 20ms
    run 1 pingpong 1 1 -m 4M
else
    devmem_step_fail "'tc' not found (iproute2): the shaped run could not run"
fi
devmem_finish
