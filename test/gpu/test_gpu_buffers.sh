#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# MPI point-to-point with CUDA buffers (D D, D H, H D) through btl_devmem, with the Open MPI
# parameter set for GPU buffers (contrib/devmem-device-buffers.conf: every non-empty
# message by RGET), the emulated kernel ABI, and the RX pool in GPU memory (a real CUDA
# allocation exported as a dmabuf). Device sources are registered, exported as dmabufs and
# sent with (emulated) devmem TX; the RX pool's fragments are gathered into the destination
# on the GPU before their tokens go back.
# Checked per rank: every byte of every message and echo (in gpubuf), the device path on,
# tokens balanced; on a device-memory side get bytes through dmabuf fragments, GPU gathers,
# and devmem TX to a device-memory peer (staged through host memory to a host-memory one);
# on a host-memory side gets on the control connection (a GPU pool would cost it a device
# copy per packet). Then D D over 1 and 4 device-flow lanes, with the pipelined gather
# at depth 1 (every receive waits for its gather) and 4 (several gathers on the stream at
# once, each receive's tokens back when its event has passed), and each other way to launch
# a gather (btl_devmem_testing gather_way). Skips without an NVIDIA GPU and driver.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "GPU buffers take btl_devmem's RGET path (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs gpubuf
devmem_require_gpu
DEVMEM_MCA_ARGS+=(--tune "$DEVMEM_PREFIX/share/btl_devmem/devmem-device-buffers.conf"
    --mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_rx_provider cuda --mca btl_devmem_stats 1)

for pair in "D D" "D H" "H D"; do
    read -r a b <<<"$pair"
    devmem_mpi_test gpubuf 2 -- -a "$a" -b "$b" -m 64M || continue
    # every rank: its device path up, tokens balanced (a host-memory side may have none)
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 0
    kinds=("$a" "$b")
    for r in 0 1; do
        if [ "${kinds[$r]}" = D ]; then
            # into device memory: through the GPU pool, gathered by the GPU
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" get_dmabuf -gt 0
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gather_calls -gt 0
            # what it sends: devmem TX to a device-memory peer; to a host-memory peer,
            # whose gets take the control connection, staged through host memory
            if [ "${kinds[$((1 - r))]}" = D ]; then
                devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" tx_devmem -gt 0
            else
                devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" dev_staged -gt 0
            fi
        else
            # into host memory: the control connection, never a copy per packet out of
            # the GPU pool
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" get_dmabuf -eq 0
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" host_gets_control -gt 0
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" get_host -gt 0
        fi
    done
done
# several lanes, the gather pipelined or not, served by the progress thread or by 2
# receiving threads (each with its own copier on the device's one stream)
saved=("${DEVMEM_MCA_ARGS[@]}")
for setting in "1 1 0" "4 1 0" "4 4 0" "4 4 2"; do
    read -r lanes depth threads <<<"$setting"
    DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_devflows "$lanes"
        --mca btl_devmem_gather_depth "$depth" --mca btl_devmem_rx_threads "$threads")
    devmem_mpi_test gpubuf 2 -- -a D -b D -m 64M || continue
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflow_lanes -eq "$lanes"
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_threads -eq "$threads"
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gather_calls -gt 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gather_batches -gt 0
        if [ "$depth" -gt 1 ]; then
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gathers_inflight_max -ge 2
        else
            devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gathers_inflight_max -eq 1
        fi
    done
    [ "$lanes" -gt 1 ] && devmem_expect_spread "$DEVMEM_LAST_OUT" 0 lanes "$lanes"
done
# the other way to launch a gather (the default, one kernel reading its pieces from
# mapped host memory, ran above): a copy per piece, as on a GPU whose driver cannot load the
# kernel, through the component: 4 lanes, depth 4, 2 receiving threads
for way in memcpy; do
    DEVMEM_MCA_ARGS=("${saved[@]}" --mca btl_devmem_devflows 4 --mca btl_devmem_gather_depth 4
        --mca btl_devmem_rx_threads 2 --mca btl_devmem_testing "gather_way=$way")
    devmem_mpi_test gpubuf 2 -- -a D -b D -m 64M || continue
    devmem_expect_device_path "$DEVMEM_LAST_OUT" 2 1
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gather_batches -gt 0
    done
done
DEVMEM_MCA_ARGS=("${saved[@]}")
devmem_finish
