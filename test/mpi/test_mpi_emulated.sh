#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path end to end on one host, through the emulated kernel ABI: every large get
# travels on a device flow, lands in the receiver's RX pool in scattered fragments with
# tokens, is copied out into the MPI buffer and its tokens go back with SO_DEVMEM_DONTNEED.
# The validated MPI programs at 2 to 4 ranks with btl_devmem_mode require (so a run that
# fell back to host TCP fails), then a 4-page pool that forces backpressure.
# Checked per rank: device path on, rx_dmabuf > 0 (not for the strided datatypes, which
# take no get), tokens handed out == tokens returned, no protocol error; lanes only toward
# peers with gets.
set -u
. "$(dirname "$0")/../lib/testlib.sh"

[ "$DEVMEM_BTL_NAME" = devmem ] || devmem_skip "the device path is btl_devmem's (btl: $DEVMEM_TEST_BTL)"
devmem_require_programs pingpong nonblocking anysource unexpected vector collectives
DEVMEM_MCA_ARGS+=(--mca btl_devmem_kernel emulated --mca btl_devmem_mode require
    --mca btl_devmem_stats 1)

run() { # NP DMABUF PROG PROG-ARGS...
    local np=$1 dmabuf=$2
    shift 2
    devmem_mpi_test "$1" "$np" -- "${@:2}" && devmem_expect_device_path "$DEVMEM_LAST_OUT" "$np" "$dmabuf"
}
run 2 1 pingpong -m 64M
dontneed=$(devmem_stat_sum "$DEVMEM_LAST_OUT" dontneed_calls)
landed=$(devmem_stat_sum "$DEVMEM_LAST_OUT" rx_dmabuf)
run 4 1 pingpong -m 4M
run 4 1 nonblocking -n 100 -m 256k
run 3 1 anysource -m 256k
run 2 1 unexpected -m 8M
run 2 0 vector -m 1M
run 4 1 collectives -m 4M
# Lanes open on demand: every rank asked each peer for its lanes by its first get (4 lanes a
# peer, 3 peers, a descriptor each way); a job of eager messages only asks for none.
for ((r = 0; r < 4; r++)); do
    devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflows -eq 12
done
if devmem_mpi_test collectives 4 -- -m 4k; then
    for ((r = 0; r < 4; r++)); do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflow_fds_max -eq 0
    done
fi

# Lanes unused for a second close (btl_devmem_devflows idle=1) and open again for the next
# gets, with receiving threads. A budget of 8 descriptors (fds=8) gives each of 3 peers one
# lane, and never more than 8 open; the 3 s in MPI between the passes retire every peer's
# lane, so the second pass opens 3 more: 6 adopted at least, tokens balanced.
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_devflows 4,fds=8,idle=1 --mca btl_devmem_rx_threads 1)
if run 4 1 pingpong -m 1M -p 3; then
    for ((r = 0; r < 4; r++)); do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflow_retires -gt 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflows -ge 6
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" devflow_fds_max -le 8
    done
fi
DEVMEM_MCA_ARGS=("${saved[@]}")

# Backpressure: a pool of 4 pages holds at most 4 fragments, so nearly every receive stops
# when the pool is empty and the rest waits in the socket (TCP flow control holds the sender).
DEVMEM_MCA_ARGS+=(--mca btl_devmem_rx_pool_size 16384)
for spec in "2 pingpong -m 16M" "3 collectives -m 2M"; do
    read -r np prog args <<<"$spec"
    # shellcheck disable=SC2086
    run "$np" 1 "$prog" $args || continue
    for ((r = 0; r < np; r++)); do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" emul_pool_limited -gt 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" rx_dmabuf -gt $((64 * 16384))
    done
done

# The TX side: host memory standing in for GPU memory (btl_devmem_testing tx_host=1), so every get is
# answered with the emulated devmem TX from a TX binding of the registered buffer, sends
# tracked until their zerocopy completions. ob1 cuts a 64 MiB RGET into btl_get_limit pieces
# that are all in flight on the device flow at once.
saved=("${DEVMEM_MCA_ARGS[@]}")
DEVMEM_MCA_ARGS+=(--mca btl_devmem_testing tx_host=1)
if run 2 1 pingpong -m 64M; then
    for r in 0 1; do
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" tx_devmem -gt $((64 << 20))
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" get_dmabuf -gt 0
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" gets_inflight_max -gt 1
        devmem_expect_stat "$DEVMEM_LAST_OUT" "$r" fallbacks -eq 0
    done
fi
# The parameter set for GPU buffers (contrib/devmem-device-buffers.conf) on host buffers:
# every non-empty message by RGET, so the small ones too take the device flow.
DEVMEM_MCA_ARGS+=(--tune "$DEVMEM_PREFIX/share/btl_devmem/devmem-device-buffers.conf")
run 2 1 pingpong -m 1M && devmem_expect_stat "$DEVMEM_LAST_OUT" 0 devflow_gets -gt 40
run 4 1 nonblocking -n 50 -m 64k
DEVMEM_MCA_ARGS=("${saved[@]}")

if [ -n "${dontneed:-}" ] && [ -n "${landed:-}" ] && [ "$landed" -gt 0 ]; then
    echo "SO_DEVMEM_DONTNEED calls per MiB landed in the pool (64 MiB ping-pong, both ranks):" \
        "$(awk -v d="$dontneed" -v b="$landed" 'BEGIN { printf "%.2f", d / (b / 1048576) }')"
fi
devmem_finish
