#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# More ranks than CPUs, not bound (as Open MPI leaves oversubscribed ranks): 3 ranks kept on
# 2 CPUs by taskset. Rank 0 computes for a second while the two others wait for it in
# MPI_Recv; every byte of the late messages and of the answers is checked. A waiting rank
# that the scheduler may move spins like btl/tcp at first, then, while another task wants its
# CPU, hands it over (counted in idle_yields): spinning on would take the CPU that rank 0
# computes on. The time is printed, never asserted.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs latewait
limit=$DEVMEM_MPI_LIMIT
stats=()
[ "$DEVMEM_BTL_NAME" = devmem ] && stats=(--mca btl_devmem_stats 1)
if devmem_run_checked "latewait np=3 on 2 CPUs, not bound" latewait 3 "$limit" \
    devmem_mpirun "$limit" -np 3 --bind-to none "${DEVMEM_MCA_ARGS[@]}" "${stats[@]}" \
    taskset -c 0,1 "$DEVMEM_MPI_BIN/latewait" -s 1 -m 1M; then
    if [ "$DEVMEM_BTL_NAME" = devmem ]; then
        # the scheduler puts one waiting rank beside rank 0, or both beside each other: the
        # rank (or ranks) with a neighbour must have handed over; one alone may spin on
        y1=$(devmem_stat "$DEVMEM_LAST_OUT" 1 idle_yields) || y1=
        y2=$(devmem_stat "$DEVMEM_LAST_OUT" 2 idle_yields) || y2=
        if [[ "$y1" =~ ^[0-9]+$ && "$y2" =~ ^[0-9]+$ ]] && [ $((y1 + y2)) -gt 0 ]; then
            devmem_step_ok "the waiting ranks handed their CPU over (idle_yields $y1 and $y2)"
        else
            devmem_step_fail "the waiting ranks never handed their CPU over (idle_yields" \
                "'$y1' and '$y2'): they spun on the CPUs rank 0 computes on"
        fi
    fi
fi
devmem_finish
