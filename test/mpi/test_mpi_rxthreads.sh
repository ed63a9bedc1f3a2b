#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Receiving threads (btl_devmem_rx_threads 2) where they run and when they sleep: 2 ranks on
# loopback, emulated device path, each rank bound to a core (--bind-to core). latewait -W
# opens rank 0's device flows with a checked hello, then rank 0 computes for 4 s while
# nothing arrives. Read from /proc while it computes:
#   - each rank has its two threads, named devmem-rx0 and devmem-rx1;
#   - they may not run on the CPU their rank is bound to (a node with a CPU to spare);
#   - each rank learned the other's binding (PMIX_CPUSET, at add_procs) and placed its
#     threads again with it (said at btl_devmem_verbose 10);
#   - they sleep while their lanes are idle: under 10 % of a CPU over 2 s together (a
#     thread that spun would take all of its CPU).
# Then every byte checked, every token back, the stats' rx_threads 2.
# The default (btl_devmem_rx_threads -1): on this node's CPUs, and told it has 16 (the test
# hook cpus=16), one thread a rank where 4 CPUs are spare beside the ranks, none where not,
# each rank saying why; the thread serves the lanes (its receives counted). A value out of
# range is refused by name.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "receiving threads are btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs latewait
[ "$(nproc)" -ge 2 ] || devmem_skip "needs 2 CPUs: one rank bound to each, a CPU to spare for the threads"

job=
cleanup() { [ -n "$job" ] && kill -9 "$job" 2>/dev/null; devmem_testlib_cleanup; }
trap cleanup EXIT

out=$DEVMEM_TEST_TMP/latewait.out
tag=$$-$RANDOM
DEVMEM_RXT_JOB=$tag devmem_mpirun 120 -np 2 --bind-to core -x DEVMEM_RXT_JOB \
    "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo --mca btl_devmem_kernel emulated \
    --mca btl_devmem_mode require --mca btl_devmem_stats 1 --mca btl_devmem_rx_threads 2 \
    --mca btl_devmem_verbose 10 "$DEVMEM_MPI_BIN/latewait" -W -v -m 8M -s 4 >"$out" 2>&1 &
job=$!

# rank R's process of this job
rank_pid() {
    local p
    p=$(devmem_tagged_pids latewait "DEVMEM_RXT_JOB=$tag" "OMPI_COMM_WORLD_RANK=$1" | head -n 1)
    [ -n "$p" ] && echo "$p"
}
# the CPU time (clock ticks) of pid's receiving threads, and their names and CPUs
rx_ticks() {
    local t sum=0
    for t in /proc/"$1"/task/*; do
        grep -q '^devmem-rx' "$t/comm" 2>/dev/null || continue
        sum=$((sum + $(awk '{ print $14 + $15 }' "$t/stat")))
    done
    echo "$sum"
}
rx_threads() {
    local t
    for t in /proc/"$1"/task/*; do
        grep -q '^devmem-rx' "$t/comm" 2>/dev/null || continue
        echo "$(cat "$t/comm") $(awk '/^Cpus_allowed_list/ { print $2 }' "$t/status")"
    done
}

if ! devmem_wait_line "$out" 'latewait: computing' "$job"; then
    cat "$out"
    devmem_step_fail "rank 0 never said it computes, or the job ended first"
else
    for r in 0 1; do
        pid=$(rank_pid "$r") || { devmem_step_fail "rank $r's process"; continue; }
        own=$(awk '/^Cpus_allowed_list/ { print $2 }' "/proc/$pid/status")
        threads=$(rx_threads "$pid")
        if [ "$(wc -l <<<"$threads")" -ne 2 ] || ! grep -q '^devmem-rx0 ' <<<"$threads" ||
            ! grep -q '^devmem-rx1 ' <<<"$threads"; then
            devmem_step_fail "rank $r: threads devmem-rx0 and devmem-rx1, found: $(tr '\n' ';' <<<"$threads")"
        elif awk -v own="$own" '{ if ($2 == own || index("," $2 ",", "," own ",")) bad = 1 } END { exit !bad }' <<<"$threads"; then
            devmem_step_fail "rank $r (CPU $own): a receiving thread may run on the rank's CPU: $(tr '\n' ';' <<<"$threads")"
        else
            devmem_step_ok "rank $r on CPU $own, its threads elsewhere: $(tr '\n' ';' <<<"$threads")"
        fi
    done
    if pid=$(rank_pid 0); then
        hz=$(getconf CLK_TCK)
        before=$(rx_ticks "$pid")
        sleep 2
        after=$(rx_ticks "$pid")
        used=$((after - before))
        if [ "$used" -le $((hz / 5)) ]; then
            devmem_step_ok "rank 0 computes, its lanes idle: its threads used $used of ${hz}x2 ticks in 2 s (asleep)"
        else
            devmem_step_fail "rank 0 computes, its lanes idle: its threads used $used ticks in 2 s (want <= $((hz / 5)): they spin)"
        fi
    fi
fi
wait "$job"
rc=$?
job=
grep -a -e 'latewait: OK' -e 'receiving thread' -e 'rxthreads:' "$out" | cut -c1-200
if [ "$rc" -eq 0 ] && grep -aq 'latewait: OK' "$out"; then
    devmem_step_ok "latewait -W: every byte checked ($(grep -a 'latewait: OK' "$out" | cut -c1-120))"
    devmem_expect_device_path "$out" 2 1
    moved=$(grep -ac "receiving thread(s) moved to CPUs .*\(node's ranks'\|beside the other ranks'\)" "$out")
    if [ "$moved" -eq 2 ]; then
        devmem_step_ok "each rank placed its threads again, the other rank's binding known: $(grep -a -m1 'moved to CPUs' "$out" | sed 's/.*btl:devmem: //' | cut -c1-120)"
    else
        devmem_step_fail "each rank places its threads again once it knows the other's binding: $moved such lines, want 2"
    fi
    devmem_expect_stat "$out" 0 rx_threads -eq 2
    devmem_expect_stat "$out" 1 rx_threads -eq 2
else
    cat "$out"
    devmem_step_fail "latewait -W with 2 receiving threads (exit $rc)"
fi
# The default, -1: one thread a rank where the node has CPUs to spare
rxt_default() { # LABEL WANT [MCA...]
    local label=$1 want=$2 saved=("${DEVMEM_MCA_ARGS[@]}") line
    shift 2
    DEVMEM_MCA_ARGS+=(--mca btl_devmem_if_include lo --mca btl_devmem_kernel emulated
        --mca btl_devmem_mode require --mca btl_devmem_stats 1 --mca btl_devmem_verbose 10 "$@")
    if devmem_mpi_test pingpong 2 -- -m 4M; then
        for r in 0 1; do
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_threads -eq "$want"
        done
        line=$(grep -a -m1 'btl_devmem_rx_threads -1: ' "$DEVMEM_LAST_OUT" | sed 's/.*btl:devmem: //')
        case "$want:$line" in
            1:*": 1 receiving thread(s) ("*"spare beside 2 local rank(s))" | \
                0:*": 0 receiving thread(s) ("*"spare beside 2 local rank(s), too few)")
                devmem_step_ok "$label: $line" ;;
            *) devmem_step_fail "$label: want the rank to say $want thread(s) and why, said '$line'" ;;
        esac
        if [ "$want" -gt 0 ]; then
            line=$(grep -a 'btl_devmem rxthreads: rank=' "$DEVMEM_LAST_OUT" | grep -v 'receives=0 ' | head -n 1)
            if [ -n "$line" ]; then
                devmem_step_ok "$label: the thread served the lanes: $(echo "$line" | sed 's/.*btl_devmem //' | cut -c1-100)"
            else
                devmem_step_fail "$label: no receiving thread received anything"
            fi
        fi
    fi
    DEVMEM_MCA_ARGS=("${saved[@]}")
}
spare=$(($(getconf _NPROCESSORS_ONLN) - 2))
if [ "$spare" -lt 4 ]; then
    rxt_default "default, $spare CPU(s) spare" 0
else
    rxt_default "default, $spare CPUs spare" 1
fi
rxt_default "default, told 16 CPUs" 1 --mca btl_devmem_testing cpus=16
rxt_default "default, told 5 CPUs (3 spare)" 0 --mca btl_devmem_testing cpus=5
devmem_expect_failure "btl_devmem_rx_threads -2" 'btl_devmem_rx_threads.*-2' "$DEVMEM_MPI_LIMIT" \
    devmem_mpirun "$DEVMEM_MPI_LIMIT" -np 2 "${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_if_include lo \
    --mca btl_devmem_rx_threads -2 "$DEVMEM_MPI_BIN/pingpong" -m 1k
devmem_finish
