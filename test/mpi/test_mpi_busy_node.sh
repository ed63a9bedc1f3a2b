#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two ranks the scheduler may move (2 CPUs, not bound), and on each CPU an unrelated busy
# process (a monitoring agent, a compile), started and stopped by PID. A rank that waits
# inside a window of transfers (many messages in flight, gets asked and not yet answered)
# sleeps on its sockets (idle_blocks) instead of spinning against the busy process for
# whole time slices. With a shared-memory BTL in the job's list a sleep could leave its
# messages waiting, so there no rank sleeps: shared memory is made to lose both peers to
# ours, whose traffic must still flow. Every byte is checked (nonblocking: 200 messages of
# mixed sizes up to 1 MiB in flight each way); the time is printed, never asserted.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "checks btl/devmem's idle policy (btl $DEVMEM_TEST_BTL)"
devmem_require_programs nonblocking
[ "$(nproc)" -ge 2 ] || devmem_skip "needs 2 CPUs, this machine has $(nproc)"
shm=$(ompi_info 2>/dev/null | sed -n 's/.*MCA btl: \(vader\|sm\) .*/\1/p' | head -1)

hogs=()
stop_hogs() {
    [ ${#hogs[@]} -gt 0 ] && kill "${hogs[@]}" 2>/dev/null && wait "${hogs[@]}" 2>/dev/null
    hogs=()
    devmem_testlib_cleanup
}
trap stop_hogs EXIT
for cpu in 0 1; do
    taskset -c "$cpu" sh -c 'while :; do :; done' &
    hogs+=($!)
done
echo "busy processes on CPUs 0 and 1: ${hogs[*]}"

limit=$DEVMEM_MPI_LIMIT
# the test's MCA arguments less its BTL list, which each run names itself
mca=()
for ((i = 0; i < ${#DEVMEM_MCA_ARGS[@]}; i++)); do
    if [ "${DEVMEM_MCA_ARGS[i]}" = --mca ] && [ "${DEVMEM_MCA_ARGS[i + 1]:-}" = btl ]; then
        i=$((i + 2))
        continue
    fi
    mca+=("${DEVMEM_MCA_ARGS[i]}")
done
run_window() { # LABEL BTL-LIST [MCA...]
    local label=$1 btls=$2
    shift 2
    devmem_run_checked "$label" nonblocking 2 "$limit" \
        devmem_mpirun "$limit" -np 2 --bind-to none "${mca[@]}" --mca btl "$btls" \
        --mca btl_devmem_stats 1 "$@" taskset -c 0,1 "$DEVMEM_MPI_BIN/nonblocking" -n 200 \
        -m 1M -i 4
}

sum() { devmem_stat_sum "$DEVMEM_LAST_OUT" "$1" || echo missing; }

# the window's counts come back to 0 once every transfer is done (a leak would make every
# later wait look like one inside a window)
expect_window_closed() {
    local gets writers
    gets=$(sum window_gets) writers=$(sum window_writers)
    if [ "$gets" = 0 ] && [ "$writers" = 0 ]; then
        devmem_step_ok "$1: the window closed (window_gets 0, window_writers 0 at the end)"
    else
        devmem_step_fail "$1: window_gets $gets, window_writers $writers at the end (want 0)"
    fi
}

if run_window "messages in flight beside busy processes, devmem,self" devmem,self; then
    blocks=$(sum idle_blocks)
    if [[ "$blocks" =~ ^[0-9]+$ ]] && [ "$blocks" -gt 0 ]; then
        devmem_step_ok "waiting ranks slept on their sockets (idle_blocks $blocks)"
    else
        devmem_step_fail "waiting ranks never slept on their sockets beside busy processes" \
            "(idle_blocks $blocks)"
    fi
    expect_window_closed "devmem,self"
fi

if [ -z "$shm" ]; then
    devmem_step_ok "no shared-memory BTL in this Open MPI: its case does not arise"
elif run_window "messages in flight beside busy processes, devmem,$shm,self ($shm loses both peers)" \
    "devmem,$shm,self" --mca "btl_${shm}_exclusivity" 0; then
    blocks=$(sum idle_blocks) frags=$(sum tx_frags)
    if [ "$blocks" = 0 ] && [[ "$frags" =~ ^[0-9]+$ ]] && [ "$frags" -gt 0 ]; then
        devmem_step_ok "with $shm in the list no rank slept (idle_blocks 0; tx_frags $frags)"
    else
        devmem_step_fail "with $shm in the list: idle_blocks $blocks (want 0), tx_frags $frags" \
            "(want > 0: the traffic must be ours)"
    fi
    expect_window_closed "devmem,$shm,self"
fi
devmem_finish
