#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# by-rank.sh 'VAR=V ...' 'VAR=V ...' ... -- PROGRAM ARGS...
# Runs PROGRAM with the N-th set of variables in rank N of MPI_COMM_WORLD: one environment per
# rank without an MPMD launch (mpirun A : B), which Debian 13's Open MPI 5.0.7 (PRRTE 3.0)
# answers with a segfault.
set -euo pipefail
sets=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
    sets+=("$1")
    shift
done
[ $# -gt 1 ] || { echo "usage: $0 'VAR=V ...' ... -- PROGRAM ARGS..." >&2; exit 2; }
shift
rank=${OMPI_COMM_WORLD_RANK:?"by-rank.sh: not started by mpirun (no OMPI_COMM_WORLD_RANK)"}
[ "$rank" -lt ${#sets[@]} ] || { echo "by-rank.sh: no variables for rank $rank" >&2; exit 2; }
# shellcheck disable=SC2086 # the set is a list of VAR=V words
exec env ${sets[$rank]} "$@"
