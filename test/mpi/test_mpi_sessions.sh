#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI-4 sessions instead of MPI_Init (test/mpi/sessions.c): communicators made from the
# mpi://WORLD process set, two sessions alive at once, then a third after both ended (Open MPI
# 5 closes its frameworks, this component too, and opens them again). Checked point-to-point
# between every pair and checked collectives, at 2, 4 and 8 ranks on this host; the host path,
# then the emulated device path (btl_devmem_mode require: tokens balanced, no protocol
# error). Skips where the MPI has no sessions (Open MPI 4.1).
# The program holds PMIx open throughout (-P): MPI and this component still shut down and
# start again, but PMIx does not, for Open MPI 5.0.7 with PMIx 5.0.7 hangs now and then when
# PMIx restarts too, whatever the BTL (see sessions.c: openpmix/openpmix#3931). btl/tcp
# (DEVMEM_TEST_BTL=tcp,self) cannot start again under a held PMIx, it dials the ports of its
# first life, still in PMIx's records; with it MPI stays up instead (-k).
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_sessions
hold=-P
[ "$DEVMEM_BTL_NAME" = devmem ] || hold=-k

devmem_mpi_test sessions 2 -- -m 4M "$hold"
devmem_mpi_test sessions 4 -- -m 4M "$hold"
devmem_mpi_test sessions 8 -- -m 1M "$hold"

# Every stats line of the run, one per rank and life of the component (Open MPI 5 closes it
# when the last session ends and opens it again for the next): two lives in each rank, tokens
# balanced, no protocol error. devmem_expect_device_path reads only each rank's last.
every_life() { # FILE NP
    local n bad want=$((2 * $2))
    n=$(grep -ac 'btl_devmem stats: rank=' "$1")
    bad=$(grep -a 'btl_devmem stats: rank=' "$1" | awk '{
        delete v
        for (i = 1; i <= NF; i++) { if (split($i, kv, "=") == 2) v[kv[1]] = kv[2] }
        if (v["tokens_received"] != v["tokens_returned"] || v["proto_errors"] != 0) n++
    } END { print n + 0 }')
    if [ "$n" -ge "$want" ] && [ "$bad" -eq 0 ]; then
        devmem_step_ok "$n stats lines for $2 ranks (the component closed and opened again):" \
            "tokens balanced, no protocol error in each"
    else
        devmem_step_fail "$n stats lines for $2 ranks (want $want: two lives each), $bad with" \
            "tokens unbalanced or a protocol error"
    fi
}

if [ "$DEVMEM_BTL_NAME" = devmem ]; then
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
        --mca btl_devmem_stats 1)
    for spec in "2 4M" "4 4M" "8 1M"; do
        read -r np max <<<"$spec"
        devmem_mpi_test sessions "$np" -- -m "$max" "$hold" || continue
        devmem_expect_device_path "$DEVMEM_LAST_OUT" "$np" 1
        every_life "$DEVMEM_LAST_OUT" "$np"
    done
fi
devmem_finish
