#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# devmem-check where its page does not go (test/doc/test_doc_commands.sh runs first-run.md's
# commands, the PASS between two hosts and --launch, and checks what they print): a launch
# command that sets what the --launch columns vary gets those columns flagged and no ratio; on
# loopback with the real kernel the check must FAIL, naming the kernel's refusal and what to
# do, and exit 1.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "devmem-check checks btl_devmem (btl: $DEVMEM_TEST_BTL)"
check=$DEVMEM_PREFIX/bin/devmem-check
[ -x "$check" ] || { devmem_step_fail "$check is not installed (make install)"; devmem_finish; }
[ -x "$DEVMEM_PREFIX/bin/devmem-probe" ] || devmem_step_fail "devmem-probe is not installed beside it"
limit=$DEVMEM_MPI_LIMIT

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

# 1. --launch with a launch command that sets btl and the lanes itself (its --mca outranks
# the OMPI_MCA_ variables of the columns): the columns it overrides are flagged and no
# devmem/tcp ratio is drawn; loopback, emulated kernel
out=$DEVMEM_TEST_TMP/override.out
echo "---- devmem-check --launch, the launch command sets btl and btl_devmem_devflows"
launch="timeout --kill-after=10 $limit mpirun --oversubscribe -np 2 --mca btl devmem,self
    --mca btl_devmem_kernel emulated --mca btl_devmem_if_include lo --mca btl_devmem_devflows 2"
launch_passes "--launch, overridden columns (the check itself)" "$out"
devmem_expect_line "$out" "^  btl/tcp +btl=devmem,self .*: NOT btl=tcp,self: the launch command sets it" \
    "--launch: the btl/tcp column that ran btl_devmem is flagged"
devmem_expect_line "$out" "^  1 lane +.*devflows=2 .*: NOT devflows=1: " "--launch: the 1-lane column that ran 2 is flagged"
if [ "$(grep -Ec "^  (devmem|0 threads|1 thread) +btl=devmem,self devflows=2 " "$out")" = 3 ] &&
    ! grep -Eq "^  (devmem|0 threads|1 thread) .*: NOT " "$out"; then
    devmem_step_ok "--launch: the columns that ran as titled are not flagged"
else
    devmem_step_fail "--launch: the devmem, 0 and 1 thread columns missing or flagged"
fi
devmem_expect_line "$out" "^  no devmem/tcp ratio: " "--launch: says why there is no ratio"
devmem_expect_line "$out" "^ +8 B( +[0-9]+\\.[0-9]+){6} +-$" "--launch: the 8 B row has no ratio"

# 2. loopback, real kernel: FAIL with the kernel's words
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
