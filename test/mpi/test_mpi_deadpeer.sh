#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A rank killed with SIGKILL in the middle of a 4-rank ping-pong: mpirun must exit non-zero
# within 30 s, and a survivor must name the lost peer. Never a hang. Once on the host path,
# once with device flows (emulated kernel). Loopback only.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the lost-peer message is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong

# Open MPI 5's runtime (PRRTE) ends the other ranks the moment it sees rank 1 die, on a busy
# machine before any survivor has noticed the loss: with --enable-recovery it leaves them
# running, so that the job ends because our component saw the loss and said so. ORTE (4.1)
# exits 0 with that option although the job aborted, and Open MPI 6's PRRTE then keeps the
# ranks that did not abort running (the job outlives the 120 s limit), so both run without it.
recovery=()
case $(mpirun --version 2>&1) in
*"Open MPI) 4."* | *"Open MPI) 6."*) ;;
*) recovery=(--enable-recovery) ;;
esac

job=
cleanup() { [ -n "$job" ] && kill -9 "$job" 2>/dev/null; devmem_testlib_cleanup; }
trap cleanup EXIT

kill_run() { # LABEL EXTRA-MCA-ARGS...
    local label=$1 p victim start rc elapsed
    shift
    out=$DEVMEM_TEST_TMP/job-${label// /-}.out
    # this job's ranks carry DEVMEM_DEADPEER_JOB: another job's pingpong on the machine (a
    # second test run) is never the victim
    DEVMEM_DEADPEER_JOB=$$-$RANDOM devmem_mpirun 120 -np 4 -x DEVMEM_DEADPEER_JOB "${recovery[@]}" \
        "${DEVMEM_MCA_ARGS[@]}" "$@" --mca btl_devmem_if_include lo \
        "$DEVMEM_MPI_BIN/pingpong" -v -m 4M -i 100000 >"$out" 2>&1 &
    job=$!

    # rank 1's process: the pingpong of this job whose environment says OMPI_COMM_WORLD_RANK=1
    victim=
    for _ in $(seq 100); do
        for p in $(pgrep -x pingpong); do
            if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" &&
                tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -q "^DEVMEM_DEADPEER_JOB=$$-"; then
                victim=$p
            fi
        done
        [ -n "$victim" ] && break
        sleep 0.1
    done
    if [ -z "$victim" ]; then
        devmem_step_fail "$label: found rank 1's process"
        kill -9 "$job" 2>/dev/null
        wait "$job" 2>/dev/null
        job=
        cat "$out"
        return
    fi
    # well into the ping-pong: MPI_Init over on every rank (a rank killed before cannot be
    # noticed by our component, only by the runtime), rank 0 pinging rank 1
    for _ in $(seq 600); do
        grep -aq 'round 1: 0 <-> 1,' "$out" && break
        sleep 0.1
    done
    sleep 1
    if ! kill -0 "$job" 2>/dev/null; then
        devmem_step_fail "$label: the job ended before the kill (it must run for minutes)"
        job=
        cat "$out"
        return
    fi
    start=$EPOCHREALTIME
    kill -9 "$victim"
    wait "$job"
    rc=$?
    elapsed=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
    job=
    cat "$out"
    # mpirun passes on the victim's status (137 = SIGKILL), so a hang shows in the time taken,
    # not in the status: the 120 s limit would have stopped it
    if [ "$rc" -eq 0 ]; then
        devmem_step_fail "$label: mpirun exited 0 although rank 1 was killed"
    elif awk -v e="$elapsed" 'BEGIN { exit !(e < 30) }'; then
        devmem_step_ok "$label: mpirun exited $rc ${elapsed}s after rank 1 was killed"
    else
        devmem_step_fail "$label: mpirun took ${elapsed}s to exit after the kill (want < 30 s)"
    fi
    devmem_expect_line "$out" 'lost the connection to \[\[[0-9]+,[0-9]+\],1\]' \
        "$label: a survivor names the lost peer"
}

kill_run "host path"
kill_run "emulated device path" --mca btl_devmem_kernel emulated --mca btl_devmem_mode require
devmem_finish
