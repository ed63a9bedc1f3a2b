#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI_THREAD_MULTIPLE on one host: 4 threads per rank sending and receiving concurrently to
# every other rank, connections first made by one thread while others move data (threads.c),
# every byte checked; on the host path at 2, 3 and 4 ranks, then on the emulated device path
# (gets on device flows from several threads at once, tokens balanced). The program's own
# alarm (-X: one spoiled byte in a rendezvous-size message) must fail the job.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs threads
limit=$DEVMEM_MPI_LIMIT
devmem_mpi_test threads 2 -- -t 4 -i 200 -m 1M
devmem_mpi_test threads 3 -- -t 4 -i 100 -m 512k
devmem_mpi_test threads 4 -- -t 3 -i 60 -m 256k

pattern='DATA MISMATCH rank=[0-9]+ .* offset=[0-9]+ expected=0x[0-9a-f]{2} got=0x[0-9a-f]{2}'
devmem_expect_failure "threads -X 256k np=2" "$pattern" "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/threads" -X 256k -m 1M

if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
        --mca btl_devmem_stats 1)
    devmem_mpi_test threads 2 -- -t 4 -i 100 -m 4M &&
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    devmem_mpi_test threads 3 -- -t 3 -i 60 -m 1M &&
        devmem_expect_device_path "$DEVMEM_LAST_OUT" 3 1
fi
devmem_finish
