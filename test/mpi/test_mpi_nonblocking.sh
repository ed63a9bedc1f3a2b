#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Hundreds of MPI_Isend/MPI_Irecv of mixed sizes (0 B to 1 MiB) in flight between all ranks,
# completed by MPI_Waitall, at 2, 3 and 4 ranks on this host. The rendezvous among them
# are answered in batches while sends from callbacks are corked (doc/tuning.md, Cork).
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs nonblocking
devmem_mpi_test nonblocking 2 -- -n 200 -m 1M
devmem_mpi_test nonblocking 3 -- -n 100 -m 1M
devmem_mpi_test nonblocking 4 -- -n 100 -m 512k
devmem_finish
