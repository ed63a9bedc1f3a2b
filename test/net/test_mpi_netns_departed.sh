#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# test_mpi_departed.sh across two namespaced "hosts" (test_mpi_netns.sh), 2+2 ranks: a message
# whose MPI_Send has returned reaches its receiver while the sender computes. Every ordered
# pair, 0 B to 1 MiB, first talks included, then 4000 messages of 200 B into the full 64 KiB
# socket of a rank across the veth that computes; every SEND frame of rank 1 written in two
# parts (btl_devmem_testing fault=short-write); the emulated device path. btl/tcp
# (DEVMEM_TEST_BTL=tcp,self) runs the first.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_programs departed
netns_setup
limit=$DEVMEM_MPI_LIMIT

run() { # LABEL PROG-ARGS...
    local label=$1
    shift
    devmem_run_checked "departed 2+2 ranks, $label" departed 4 "$limit" \
        netns_mpirun "$limit" 2 2 "$DEVMEM_MPI_BIN/departed" "$@"
}
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_stats 1)
    small=(--mca btl_devmem_sockbuf 65536)
else
    small=(--mca "btl_${DEVMEM_BTL_NAME}_sndbuf" 65536 --mca "btl_${DEVMEM_BTL_NAME}_rcvbuf" 65536)
fi
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=("${small[@]}")
run "64 KiB socket buffers" -s 1 -F 4000
DEVMEM_MCA_ARGS=("${saved[@]}")
[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_finish

DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing fault=short-write,fault_rank=1,fault_after=0)
run "rank 1 writes every frame in two parts" -s 1 &&
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 sendi_waited -gt 0
DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_kernel emulated --mca btl_devmem_mode require)
run "emulated device path" -s 1 &&
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
devmem_finish
