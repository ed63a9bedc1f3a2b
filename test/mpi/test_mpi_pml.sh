#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A job that names btl devmem but whose PML drives no BTL (pml ucx, which outranks ob1 on a
# node with a ConnectX NIC) must say so once, during MPI_Init, with the fix; with pml ob1,
# and where btl devmem was not named, nothing is said; devmem-check fails naming the PML. pml ucx is forced onto this machine's
# interfaces (pml_ucx_tls any, pml_ucx_devices any), as a ConnectX NIC would have it chosen.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the PML check is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
ompi_info 2>/dev/null | grep -q "MCA pml: ucx" || devmem_skip "this Open MPI has no pml ucx"
limit=$DEVMEM_MPI_LIMIT
pp=$DEVMEM_MPI_BIN/pingpong
ucx=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any)
said="btl_devmem carries nothing in this job: its point-to-point messages go"

if devmem_run_checked "pml ucx with --mca btl devmem,self" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${ucx[@]}" --mca btl devmem,self --mca btl_devmem_stats 1 \
    "$pp" -m 1M; then
    n=$(grep -c "$said" "$DEVMEM_LAST_OUT")
    [ "$n" -eq 1 ] && grep -q "through pml ucx, which uses no BTL" "$DEVMEM_LAST_OUT" &&
        grep -q "mpirun --mca pml ob1 --mca btl devmem,self" "$DEVMEM_LAST_OUT" &&
        devmem_step_ok "said once, naming pml ucx and the fix (--mca pml ob1)" ||
        devmem_step_fail "said $n time(s), expected once naming pml ucx and the fix"
    # 4.1 initializes the component, which carries nothing; 5.0 does not even initialize it
    grep -Eq "btl_devmem stats: rank=[01] tx_host=[1-9]" "$DEVMEM_LAST_OUT" &&
        devmem_step_fail "btl_devmem carried bytes under pml ucx" ||
        devmem_step_ok "btl_devmem carried nothing under pml ucx"
fi
if devmem_run_checked "pml ob1 with --mca btl devmem,self" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 --mca pml ob1 --mca btl devmem,self --mca btl_devmem_stats 1 \
    "$pp" -m 1M; then
    grep -q "$said" "$DEVMEM_LAST_OUT" &&
        devmem_step_fail "pml ob1 drives btl_devmem, yet the job was told it does not" ||
        devmem_step_ok "pml ob1: nothing said"
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 tx_host -gt 0
fi
# btl devmem not named (every BTL but a few): silence is no surprise there
if devmem_run_checked "pml ucx, btl devmem not named" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${ucx[@]}" --mca btl ^openib,uct,usnic "$pp" -m 1M; then
    grep -q "$said" "$DEVMEM_LAST_OUT" &&
        devmem_step_fail "told although the job never named btl devmem" ||
        devmem_step_ok "btl devmem not named: nothing said"
fi
# devmem-check fails, naming the PML, where the launch command forces one that uses no BTL
check=$DEVMEM_PREFIX/bin/devmem-check
if [ -x "$check" ]; then
    devmem_expect_failure "devmem-check under pml ucx" \
        "devmem-check: FAIL btl_devmem carried none of the check's messages: the job runs on pml ucx, which uses no BTL; run it with --mca pml ob1" \
        "$limit" devmem_mpirun "$limit" -np 2 "${ucx[@]}" --mca btl_devmem_kernel emulated \
        "$check" --quick
else
    devmem_step_fail "devmem-check is not installed at $check"
fi
devmem_finish
