#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI_THREAD_MULTIPLE across two namespaced "hosts" (see test_mpi_netns.sh): threads.c with
# several threads per rank, each talking to every other rank at once over the veth; on the
# host path (1+1 and 2+2 ranks), then on the emulated device path (btl_devmem_mode require,
# tokens balanced on every rank).
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

devmem_require_programs threads
netns_setup
limit=$DEVMEM_MPI_LIMIT

run() { # NA NB PROG-ARGS...
    local na=$1 nb=$2
    shift 2
    devmem_run_checked "threads $na+$nb ranks $*" threads $((na + nb)) "$limit" \
        netns_mpirun "$limit" "$na" "$nb" "$DEVMEM_MPI_BIN/threads" "$@"
}
run 1 1 -t 4 -i 200 -m 1M
run 2 2 -t 3 -i 60 -m 256k
if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
        --mca btl_devmem_stats 1)
    run 1 1 -t 4 -i 100 -m 4M && devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    run 2 2 -t 3 -i 60 -m 1M && devmem_expect_device_path "$DEVMEM_LAST_OUT" 4 1
fi
devmem_finish
