#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# devmem-check, as an admin runs it on two nodes: across two namespaced "hosts" over the
# emulated kernel it must PASS (both hosts' facts, validated transfers through the RX pools,
# tokens balanced, the table with both columns, the report written); on loopback with the real
# kernel it must FAIL, naming the kernel's refusal and what to do, and exit 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "devmem-check checks btl_devmem (btl: $DEVMEM_TEST_BTL)"
check=$DEVMEM_PREFIX/bin/devmem-check
[ -x "$check" ] || { devmem_step_fail "$check is not installed (make install)"; devmem_finish; }
[ -x "$DEVMEM_PREFIX/bin/devmem-probe" ] || devmem_step_fail "devmem-probe is not installed beside it"
limit=$DEVMEM_MPI_LIMIT
report=$DEVMEM_TEST_TMP/report.txt

expect_in() { # FILE ERE WHAT
    if grep -Eq -- "$2" "$1"; then
        devmem_step_ok "$3"
    else
        devmem_step_fail "$3: no line matches '$2' in $1"
    fi
}

# launch_passes WHAT OUT [ARG...]: devmem-check --quick --launch "$launch" ARG... into OUT,
# which must end in PASS with exit 0
launch_passes() {
    local what=$1 out=$2 rc
    shift 2
    _devmem_run_bg timeout $((limit * 3)) "$check" --quick --launch "$(echo $launch)" "$@" \
        >"$out" 2>&1
    rc=$?
    cat "$out"
    if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$out" | cut -c1-20)" = "devmem-check: PASS: " ]; then
        devmem_step_ok "$what: PASS, exit 0"
    else
        devmem_step_fail "$what: want exit 0 and a last line 'devmem-check: PASS: ...' (exit $rc)"
    fi
}

# 1. two hosts, emulated kernel: PASS
netns_setup
out=$DEVMEM_TEST_TMP/pass.out
echo "---- devmem-check 1+1 ranks, emulated kernel"
_devmem_run_bg netns_mpirun "$limit" 1 1 --mca btl_devmem_kernel emulated \
    "$check" --quick --report "$report" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$out" | cut -c1-20)" = "devmem-check: PASS: " ]; then
    devmem_step_ok "PASS, exit 0: $(tail -n 1 "$out" | cut -c1-160)"
else
    devmem_step_fail "want exit 0 and a last line 'devmem-check: PASS: ...' (exit $rc)"
fi
if [ -s "$report" ]; then
    expect_in "$report" "^host $NETNS_HOST_A \\(rank 0\\)" "the report has host A's facts"
    expect_in "$report" "^host $NETNS_HOST_B \\(rank 1\\)" "the report has host B's facts"
    expect_in "$report" "^$NETNS_LINK on: emulated kernel" "the device path is on over the veth"
    expect_in "$report" "^$NETNS_LINK \\(ifindex [0-9]+\\)" "devmem-probe's section of the veth"
    expect_in "$report" "^this job: .*receiving threads started: [0-9]+ on rank 0, [0-9]+ on rank 1\\)" \
        "the threads each host started"
    expect_in "$report" "^transfers host to host, .*: every byte checked" "host transfers checked"
    expect_in "$report" "^ +64 MiB +[0-9]+ +[0-9]+ +[0-9.]+$" "the table has both columns"
    expect_in "$report" "^device path: [1-9][0-9]* bytes landed in RX pools" "bytes landed in RX pools"
    expect_in "$report" "^devmem-check: PASS" "the report ends with the verdict"
else
    devmem_step_fail "no report at $report"
fi

# 2. the same two hosts, devmem-check --launch: the check, then its table from jobs of
# btl/tcp, 1 and 4 lanes, 0 and 1 receiving thread, each of which says it ran so; the
# verdict last, the report with all of it
out=$DEVMEM_TEST_TMP/launch.out report2=$DEVMEM_TEST_TMP/report2.txt
launch="ip netns exec $NETNS_A unshare --uts -- $NETNS_AGENT --enter $NETNS_HOST_A mpirun
    --oversubscribe -np 2 --host $NETNS_HOST_A:1,$NETNS_HOST_B:1 --mca plm_rsh_agent $NETNS_AGENT
    --mca plm_rsh_no_tree_spawn 1 --mca oob_tcp_if_include $NETNS_LINK --bind-to none
    --mca btl_devmem_if_include $NETNS_LINK --mca btl_devmem_kernel emulated"
echo "---- devmem-check --launch (the check and 8 more jobs)"
launch_passes "--launch" "$out" --report "$report2"
expect_in "$out" "^  btl/tcp +btl=tcp,self .*path=host" "--launch: the btl/tcp job ran btl/tcp"
expect_in "$out" "^  1 lane +btl=devmem,self devflows=1 .*path=device" "--launch: the 1-lane job ran 1 lane"
expect_in "$out" "^  4 lanes +btl=devmem,self devflows=4 .*path=device" "--launch: the 4-lane job ran 4 lanes"
expect_in "$out" "^  0 threads +.* threads=0 path=device" "--launch: the job without receiving threads"
expect_in "$out" "^  1 thread +.* threads=1 path=device" "--launch: the job with one receiving thread"
expect_in "$out" "^ +8 B( +[0-9]+\\.[0-9]+){7}$" "--launch: the 8 B latency row has every column and the ratio"
expect_in "$out" "^ +64 MiB( +[0-9.]+){7}$" "--launch: the 64 MiB bandwidth row has every column and the ratio"
n=$(grep -c "^devmem-check: the table again, devmem " "$out")
m=$(grep -c "^devmem-check: the table again, btl/tcp " "$out")
if [ "$n" = 2 ] && [ "$m" = 2 ]; then
    devmem_step_ok "--launch: two jobs each for the devmem and btl/tcp columns"
else
    devmem_step_fail "--launch: $n devmem and $m btl/tcp jobs (want 2 each, one near each end)"
fi
if [ -s "$report2" ] && grep -q "^side by side: " "$report2" &&
    [ "$(tail -n 1 "$report2" | cut -c1-20)" = "devmem-check: PASS: " ]; then
    devmem_step_ok "--launch: the report has the side-by-side table and ends with the verdict"
else
    devmem_step_fail "--launch: the report $report2 lacks the table or the verdict"
fi

# 3. --launch with a launch command that sets btl and the lanes itself (its --mca outranks
# the OMPI_MCA_ variables of the columns): the columns it overrides are flagged and no
# devmem/tcp ratio is drawn; loopback, emulated kernel
out=$DEVMEM_TEST_TMP/override.out
echo "---- devmem-check --launch, the launch command sets btl and btl_devmem_devflows"
launch="timeout --kill-after=10 $limit mpirun --oversubscribe -np 2 --mca btl devmem,self
    --mca btl_devmem_kernel emulated --mca btl_devmem_if_include lo --mca btl_devmem_devflows 2"
launch_passes "--launch, overridden columns (the check itself)" "$out"
expect_in "$out" "^  btl/tcp +btl=devmem,self .*: NOT btl=tcp,self: the launch command sets it" \
    "--launch: the btl/tcp column that ran btl_devmem is flagged"
expect_in "$out" "^  1 lane +.*devflows=2 .*: NOT devflows=1: " "--launch: the 1-lane column that ran 2 is flagged"
if [ "$(grep -Ec "^  (devmem|0 threads|1 thread) +btl=devmem,self devflows=2 " "$out")" = 3 ] &&
    ! grep -Eq "^  (devmem|0 threads|1 thread) .*: NOT " "$out"; then
    devmem_step_ok "--launch: the columns that ran as titled are not flagged"
else
    devmem_step_fail "--launch: the devmem, 0 and 1 thread columns missing or flagged"
fi
expect_in "$out" "^  no devmem/tcp ratio: " "--launch: says why there is no ratio"
expect_in "$out" "^ +8 B( +[0-9]+\\.[0-9]+){6} +-$" "--launch: the 8 B row has no ratio"

# 4. loopback, real kernel: FAIL with the kernel's words
out=$DEVMEM_TEST_TMP/fail.out
echo "---- devmem-check 2 ranks on loopback, real kernel"
_devmem_run_bg devmem_mpirun "$limit" -np 2 --mca btl_devmem_if_include lo "$check" --quick \
    >"$out" 2>&1
rc=$?
cat "$out"
verdict=$(grep '^devmem-check: ' "$out" | tail -n 1)
if [ "$DEVMEM_HAVE_LIBMNL" = 0 ]; then
    want='^devmem-check: FAIL device path off on .* lo: built without libmnl'
else
    want='^devmem-check: FAIL device path off on .* lo:.*bind-rx.*Operation not supported.*; .*btl_devmem_if_include'
fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [[ "$verdict" =~ $want ]]; then
    devmem_step_ok "FAIL, exit $rc: $(echo "$verdict" | cut -c1-160)"
else
    devmem_step_fail "want a non-zero exit and a verdict matching /$want/ (exit $rc)"
fi
devmem_finish
