#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# devmem-check with GPU buffers, as an admin of a GPU node runs it, across two namespaced
# "hosts" over a veth pair with the emulated kernel ABI and each rank's RX pool in GPU memory
# (a real CUDA allocation exported as a dmabuf), device buffers routed through btl_devmem by
# the shipped parameter set: PASS, and the report has device to device, device to host and
# host to device transfers with every byte checked, bytes landed in the GPU pools and tokens
# balanced (the check fails on an imbalance). Skips without an NVIDIA GPU and driver.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/testlib.sh"
. "$here/../net/netns.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "devmem-check checks btl_devmem (btl: $DEVMEM_TEST_BTL)"
check=$DEVMEM_PREFIX/bin/devmem-check
[ -x "$check" ] || { devmem_step_fail "$check is not installed (make install)"; devmem_finish; }
devmem_require_gpu
report=$DEVMEM_TEST_TMP/report.txt out=$DEVMEM_TEST_TMP/check.out

netns_setup
DEVMEM_MCA_ARGS+=(--tune "$DEVMEM_PREFIX/share/btl_devmem/devmem-device-buffers.conf"
    --mca btl_devmem_kernel emulated --mca btl_devmem_rx_provider cuda)
echo "---- devmem-check 1+1 ranks, emulated kernel, RX pools in GPU memory"
_devmem_run_bg netns_mpirun "$DEVMEM_MPI_LIMIT" 1 1 "$check" --quick --report "$report" >"$out" 2>&1
rc=$?
cat "$out"
if [ "$rc" -eq 0 ] && [ "$(tail -n 1 "$out" | cut -c1-20)" = "devmem-check: PASS: " ]; then
    devmem_step_ok "PASS, exit 0: $(tail -n 1 "$out" | cut -c1-160)"
else
    devmem_step_fail "want exit 0 and a last line 'devmem-check: PASS: ...' (exit $rc)"
fi
if [ -s "$report" ]; then
    for way in "device to device" "device to host" "host to device" "host to host"; do
        if grep -Eq "^transfers $way, .*: every byte checked" "$report"; then
            devmem_step_ok "transfers $way: every byte checked"
        else
            devmem_step_fail "transfers $way: no line saying every byte was checked in $report"
        fi
    done
    if grep -Eq "^device path: [1-9][0-9]* bytes landed in RX pools" "$report"; then
        devmem_step_ok "$(grep -Em1 "^device path: " "$report" | cut -c1-160)"
    else
        devmem_step_fail "no bytes landed in the GPU pools"
    fi
else
    devmem_step_fail "no report at $report"
fi
devmem_finish
