#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# btl_devmem_mode and btl_devmem_kernel decide, per interface, whether the device path is used,
# and say why not. On this machine the real kernel refuses bind-rx on every interface (no
# devmem-capable NIC), so:
#   real + require    the job must fail, quoting the kernel's refusal for lo;
#   real + auto       the job runs on host TCP and says why at verbosity 1;
#   emulated + off    no device path, no device flow;
#   a bad value       a clear error naming the parameter;
#   mixed             a rank with the device path and a rank without interoperate: with the
#                     host-only rank at mode off, the other's gets fall back (counted); with
#                     it at auto, it still feeds the other's device flow. Data checked.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "btl_devmem_mode is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong
limit=$DEVMEM_MPI_LIMIT
pp=$DEVMEM_MPI_BIN/pingpong
base=("${DEVMEM_MCA_ARGS[@]}" --mca btl_devmem_stats 1)
# the kernel's refusal, or why it was not asked (a build without libmnl)
refusal="the kernel refuses bind-rx on lo .*(Operation not supported|Invalid argument|Permission)"
why_off=bind-rx
if [ "$DEVMEM_HAVE_LIBMNL" = 0 ]; then
    refusal="built without libmnl" why_off="built without libmnl"
fi

devmem_expect_failure "real kernel, mode require" "lo: $refusal" \
    "$limit" devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_kernel real \
    --mca btl_devmem_mode require "$pp" -m 1M

if devmem_run_checked "real kernel, mode auto" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_kernel real \
    --mca btl_devmem_mode auto --mca btl_devmem_verbose 1 "$pp" -m 4M; then
    devmem_expect_line "$DEVMEM_LAST_OUT" "device path off on lo \(real kernel\): .*$why_off" \
        "auto says why lo stays on host TCP"
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 devmem_modules -eq 0
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 devflows -eq 0
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 get_host -gt 0
fi

if devmem_run_checked "emulated kernel, mode off" pingpong 2 "$limit" \
    devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_kernel emulated \
    --mca btl_devmem_mode off --mca btl_devmem_verbose 1 "$pp" -m 4M; then
    devmem_expect_line "$DEVMEM_LAST_OUT" "device path off \(btl_devmem_mode off\)" "off says so"
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devmem_modules -eq 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflows -eq 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" tokens_received -eq 0
    done
fi

devmem_expect_failure "mode 'sometimes'" 'btl_devmem_mode is "sometimes", which btl_devmem does not know' \
    "$limit" devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_mode sometimes "$pp" -m 1M
devmem_expect_failure "kernel 'fake'" 'btl_devmem_kernel is "fake", which btl_devmem does not know' \
    "$limit" devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_kernel fake "$pp" -m 1M
devmem_expect_failure "devflows '4,idle=-1'" 'btl_devmem_devflows is "4,idle=-1", which btl_devmem does not know' \
    "$limit" devmem_mpirun "$limit" -np 2 "${base[@]}" --mca btl_devmem_devflows 4,idle=-1 "$pp" -m 1M

# rank 0 host-only, rank 1 with the emulated device path (one environment each)
by_rank=$DEVMEM_SRC/test/lib/by-rank.sh
if devmem_run_checked "mixed: rank 0 off, rank 1 emulated" pingpong 2 "$limit" \
    devmem_mpirun "$limit" "${base[@]}" --mca btl_devmem_kernel emulated -np 2 "$by_rank" \
    OMPI_MCA_btl_devmem_mode=off OMPI_MCA_btl_devmem_mode=require -- "$pp" -m 16M; then
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 devmem_modules -eq 0
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 devmem_modules -gt 0
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 fallbacks -gt 0
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 tokens_received -eq 0
fi

# rank 0 on the real kernel (no device path here, but it takes part: it sends into its peers'
# device flows), rank 1 emulated: rank 1's gets land in its pool although rank 0 has none
if devmem_run_checked "mixed: rank 0 real/auto, rank 1 emulated" pingpong 2 "$limit" \
    devmem_mpirun "$limit" "${base[@]}" -np 2 "$by_rank" \
    "OMPI_MCA_btl_devmem_kernel=real OMPI_MCA_btl_devmem_mode=auto" \
    "OMPI_MCA_btl_devmem_kernel=emulated OMPI_MCA_btl_devmem_mode=require" -- "$pp" -m 16M; then
    devmem_expect_stat "$DEVMEM_LAST_OUT" 0 devmem_modules -eq 0
    # rank 0 opens btl_devmem_devflows' default of 4 lanes into rank 1's pool
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 devflows -eq 4
    devmem_expect_spread "$DEVMEM_LAST_OUT" 1 lanes 4
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 rx_dmabuf -gt 0
    got=$(devmem_stat "$DEVMEM_LAST_OUT" 1 tokens_received)
    devmem_expect_stat "$DEVMEM_LAST_OUT" 1 tokens_returned -eq "${got:--1}"
fi
devmem_finish
