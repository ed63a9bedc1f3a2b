#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The suite's own alarm: with -x, rank 0 spoils one byte of the first payload it sends (with -X SIZE,
# of the first payload of at least SIZE bytes, i.e. a large, rendezvous-size message), and the
# receiving rank must report the mismatch (rank, offset, expected, got) and the job must fail.
# This proves that the data checks of the other MPI tests can fire, through the BTL under test.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs pingpong unexpected vector
pattern='DATA MISMATCH rank=[0-9]+ .* offset=[0-9]+ expected=0x[0-9a-f]{2} got=0x[0-9a-f]{2}'
limit=$DEVMEM_MPI_LIMIT
devmem_expect_failure "pingpong -x np=2" "$pattern" "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/pingpong" -x -m 64k
devmem_expect_failure "pingpong -X 1M np=2" "$pattern" "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/pingpong" -X 1M -m 2M
devmem_expect_failure "unexpected -x np=3" "$pattern" "$limit" \
    devmem_mpirun "$limit" -np 3 "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/unexpected" -x -m 256k
devmem_expect_failure "vector -x np=2" "$pattern" "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" "$DEVMEM_MPI_BIN/vector" -x -m 64k
devmem_finish
