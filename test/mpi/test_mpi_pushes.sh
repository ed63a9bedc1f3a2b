#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The first bytes of a rendezvous pushed behind its header (btl_devmem_push): received
# posted (read in place), unexpected (kept, then copied) and into a strided datatype (never
# claimed), every byte checked (test/mpi/pushes.c). The counters must balance over the job:
# every push sent was read in place, copied or left unclaimed, and each way happened (with
# btl_devmem_testing push_min=0, so that every size pushes); with the default fewer
# pushes, still balanced. With btl_devmem_push 0 nothing is pushed and the same traffic
# still checks. Then a peer that
# dies between a header announcing a push and the push (btl_devmem_testing fault=push-cut, in the
# posted phase: the receiver's get is waiting for those bytes): the job must end, naming
# the lost peer and why, never hang.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

devmem_require_programs pushes
if [ "$DEVMEM_BTL_NAME" != devmem ]; then
    devmem_mpi_test pushes 2
    devmem_finish
fi

limit=$DEVMEM_MPI_LIMIT

# the last run's push counters summed over its ranks: sent, inplace, copied, unclaimed
# (empty where a stats line lacks one)
read_push_counters() {
    sent=$(devmem_stat_sum "$DEVMEM_LAST_OUT" push_sent) || sent=
    inplace=$(devmem_stat_sum "$DEVMEM_LAST_OUT" push_in_place) || inplace=
    copied=$(devmem_stat_sum "$DEVMEM_LAST_OUT" push_copied) || copied=
    unclaimed=$(devmem_stat_sum "$DEVMEM_LAST_OUT" push_unclaimed) || unclaimed=
}

# every rendezvous pushes (btl_devmem_testing push_min=0), so that the first sizes past the eager
# limit, where a receive meets its push in each of the three ways, take part
all_sent=
if devmem_run_checked "pushes np=2, pushes on at every size" pushes 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_stats 1 \
    --mca btl_devmem_testing push_min=0 "$DEVMEM_MPI_BIN/pushes"; then
    read_push_counters
    errors=$(devmem_stat_sum "$DEVMEM_LAST_OUT" proto_errors) || errors=
    if [[ ! "$sent$inplace$copied$unclaimed$errors" =~ ^[0-9]+$ ]]; then
        devmem_step_fail "push counters missing from the stats lines"
    else
        all_sent=$sent
        if [ "$sent" -gt 0 ] && [ "$sent" -eq $((inplace + copied + unclaimed)) ]; then
            devmem_step_ok "pushes balance: $sent sent = $inplace in place + $copied copied" \
                "+ $unclaimed unclaimed"
        else
            devmem_step_fail "pushes do not balance: $sent sent, $inplace in place, $copied" \
                "copied, $unclaimed unclaimed"
        fi
        if [ "$inplace" -gt 0 ] && [ "$copied" -gt 0 ] && [ "$unclaimed" -gt 0 ]; then
            devmem_step_ok "each way of meeting a receive happened"
        else
            devmem_step_fail "a way of meeting a receive never happened: $inplace in place," \
                "$copied copied, $unclaimed unclaimed"
        fi
        if [ "$errors" -eq 0 ]; then
            devmem_step_ok "no protocol error"
        else
            devmem_step_fail "$errors protocol errors"
        fi
    fi
fi

# the default (pushes from 512 KiB on): only the sizes from 1 MiB push, and they balance
if devmem_run_checked "pushes np=2, pushes from 512 KiB (the default)" pushes 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_stats 1 \
    "$DEVMEM_MPI_BIN/pushes"; then
    read_push_counters
    if [[ ! "$sent$inplace$copied$unclaimed$all_sent" =~ ^[0-9]+$ ]]; then
        devmem_step_fail "push counters missing (default, or the run before)"
    elif [ "$sent" -gt 0 ] && [ "$sent" -lt "$all_sent" ] &&
        [ "$sent" -eq $((inplace + copied + unclaimed)) ]; then
        devmem_step_ok "default: $sent pushes (every size: $all_sent), balanced"
    else
        devmem_step_fail "default: $sent pushes against $all_sent at every size," \
            "$inplace in place, $copied copied, $unclaimed unclaimed"
    fi
fi

if devmem_run_checked "pushes np=2, btl_devmem_push 0" pushes 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_stats 1 \
    --mca btl_devmem_push 0 "$DEVMEM_MPI_BIN/pushes"; then
    sent=$(devmem_stat_sum "$DEVMEM_LAST_OUT" push_sent) || sent=
    if [ "$sent" = 0 ]; then
        devmem_step_ok "btl_devmem_push 0: nothing pushed"
    else
        devmem_step_fail "btl_devmem_push 0: push_sent is '$sent'"
    fi
fi
if devmem_expect_failure "push announced, then the connection cut" \
    "lost the connection to \[\[[0-9]+,[0-9]+\],0\] on host [^ ]+ \(interface lo\): the peer closed the connection" \
    "$limit" devmem_mpirun "$limit" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo \
    --mca btl_devmem_testing fault=push-cut,fault_after=2 "$DEVMEM_MPI_BIN/pushes"; then
    devmem_expect_line "$DEVMEM_LAST_OUT" "fault injection: a header announcing a push, then the connection shut" \
        "the cut came between a push's announcement and the push"
fi
# 3 ranks: the pushes of one pair beside a rank that only joins the barriers
devmem_mpi_test pushes 3 -- -n 3
devmem_finish
