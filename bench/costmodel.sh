#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path's cost model (doc/cost-model.md): from per-call costs measured on this
# machine (bench/call_costs) and the calls per MiB the receive path makes (a lanes run of
# bench/run.sh, its calls.csv), predict for NICs of the given line rates how much of the line
# rate 1, 2, 4, 8 device flows (each on its own RX queue) can reach, what limits them, what a
# pipelined receiver (gather overlapped) would reach, and how many cores it takes. Never
# asserts anything; prints its inputs with the table.
#
#   bench/costmodel.sh [--costs FILE] [--calls calls.csv] [--rates 200,400] [--flows 1,2,4,8]
#                      [--mtu 4096] [--softirq-pkt-ns 700] [--gather-flush-us 21]
#                      [--gather-cpu-us 11] [--tx-send-kib 64] [--pool gpu|host]
#
#   --costs     call_costs' line (default: run $DEVMEM_BUILD/bench/call_costs -r 5 now)
#   --calls     calls.csv of bench/run.sh with an -dfN setting: receive and DONTNEED calls
#               per MiB on the device path, bandwidth runs, most lanes (default: 4.7 and 3.9,
#               this VM's ns-df4 figures of 2026-11-25)
#   --mtu       the NIC's MTU: the payload per packet, and so per token, follows
#   --softirq-pkt-ns  CPU of one queue's softirq per received packet (NAPI, GRO, TCP, header
#               split): not measurable without a devmem NIC; 700 ns is about 1.4 Mpps a core
#   --gather-flush-us  GPU pool: the rank's wait per receive for its gather (launch and
#               synchronise), gather depth 1: 21 us, bench/gather_bench's 256 KiB receives
#               on an H200 (2026-11-26)
#   --gather-cpu-us  GPU pool: what a receive's gather still costs the thread when gathers
#               are pipelined (launch, piece array, fence), gather depth 4: 11 us, the same
#   --tx-send-kib  bytes one devmem sendmsg takes (what the socket buffer admits)
#   --pool      gpu (the gather runs on the GPU, the CPU waits) or host (the CPU copies)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${DEVMEM_BUILD:-$src/build}
costs= calls= rates=200,400 flows=1,2,4,8 mtu=4096 pkt_ns=700 flush_us=21 cpu_us=11 tx_kib=64 pool=gpu
while [ $# -gt 0 ]; do
    case "$1" in
        --costs) costs=$2; shift ;;
        --calls) calls=$2; shift ;;
        --rates) rates=$2; shift ;;
        --flows) flows=$2; shift ;;
        --mtu) mtu=$2; shift ;;
        --softirq-pkt-ns) pkt_ns=$2; shift ;;
        --gather-flush-us) flush_us=$2; shift ;;
        --gather-cpu-us) cpu_us=$2; shift ;;
        --tx-send-kib) tx_kib=$2; shift ;;
        --pool) pool=$2; shift ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 0 ;;
        *) echo "costmodel.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
case "$pool" in gpu | host) ;; *) echo "costmodel.sh: --pool gpu or host" >&2; exit 2 ;; esac
if [ -n "$costs" ]; then
    line=$(grep -m1 '^costs ' "$costs") || { echo "costmodel.sh: no 'costs ...' line in $costs" >&2; exit 1; }
else
    [ -x "$build/bench/call_costs" ] || { echo "costmodel.sh: $build/bench/call_costs not built" >&2; exit 1; }
    line=$("$build/bench/call_costs" -r 5) || exit 1
fi
recv_per_mib=4.7 dn_per_mib=3.9 calls_from="default (ns-df4, 2026-11-25)"
if [ -n "$calls" ]; then
    # device-path bandwidth rows of the setting with the most lanes: medians of the reps
    read -r recv_per_mib dn_per_mib calls_from < <(awk -F, '
        NR > 1 && $3 == "bw" && $8 > $9 && $1 ~ /-df[0-9]+$/ {
            n = $1; sub(/.*-df/, "", n); n += 0
            if (n < best) next
            if (n > best) { best = n; k = 0; set = $1 }
            mib = ($8 + $9) / 1048576; r[++k] = $5 / mib; d[k] = $6 / mib
        }
        function med(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END { if (k) printf "%.2f %.2f %s\n", med(r, k), med(d, k), set }' "$calls")
    [ -n "$recv_per_mib" ] || { echo "costmodel.sh: no device-path bandwidth rows in $calls" >&2; exit 1; }
fi

echo "$line" | awk -v rates="$rates" -v flows="$flows" -v mtu="$mtu" -v pkt_ns="$pkt_ns" \
    -v flush_us="$flush_us" -v cpu_us="$cpu_us" -v tx_kib="$tx_kib" -v pool="$pool" -v rpm="$recv_per_mib" \
    -v dpm="$dn_per_mib" -v from="$calls_from" '
{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); c[kv[1]] = kv[2] + 0 }
    MiB = 1048576
    payload = mtu - 52                  # IPv4 20 + TCP 20 + timestamps 12
    wire = mtu + 38                     # Ethernet header, FCS, preamble, gap
    tokens = MiB / payload              # header split: one dmabuf frag (token) a packet
    q_gbps = payload * 8 / pkt_ns       # one queue: one softirq core
    # the receiving rank, per MiB: its receives (syscall and a cmsg with a token per frag:
    # taken as twice the kernel'"'"'s token lookup), its DONTNEED calls and tokens, its gather
    frag_ns = 2 * c["dontneed_token_ns"]
    rx_ns = rpm * c["recv_call_ns"] + tokens * frag_ns + dpm * c["dontneed_call_ns"] \
            + tokens * c["dontneed_token_ns"]
    gather_ns = pool == "gpu" ? rpm * flush_us * 1000 : MiB * c["gather_byte_ns"]
    app_ns = rx_ns + gather_ns
    app_gbps = MiB * 8 / app_ns
    # a pipelined receiver: the GPU gathers one receive while the thread takes the next;
    # launching it still costs the thread its share
    ovl_gbps = MiB * 8 / (pool == "gpu" ? rx_ns + rpm * cpu_us * 1000 : app_ns)
    # the sending rank: devmem sendmsg calls and one zerocopy notification read per send.
    # Measured on loopback, where a send also runs the receiver'"'"'s TCP processing and copies:
    # an upper bound, reported but not taken as a limit
    sends = 1024 / tx_kib
    tx_ns = sends * (c["zc_send_ns"] + c["zc_notif_ns"])
    tx_gbps = MiB * 8 / tx_ns

    printf "inputs (measured here: %s)\n", $0
    printf "  recv calls/MiB %.2f, DONTNEED calls/MiB %.2f (%s); MTU %d: %d payload bytes a " \
           "packet, %.0f tokens/MiB\n", rpm, dpm, from, mtu, payload, tokens
    printf "  assumed: softirq %d ns a packet (one queue: %.1f Gbit/s); %s pool%s; %d KiB a " \
           "devmem send\n", pkt_ns, q_gbps, pool,
           pool == "gpu" ? sprintf(", gather %g us a receive (%g us pipelined)", flush_us,
                                   cpu_us) : "", tx_kib
    printf "per MiB received: receive calls %.0f us, tokens in cmsgs %.0f us, DONTNEED %.0f " \
           "us, gather %.0f us: one progress thread takes %.1f Gbit/s\n",
           rpm * c["recv_call_ns"] / 1000, tokens * frag_ns / 1000,
           (dpm * c["dontneed_call_ns"] + tokens * c["dontneed_token_ns"]) / 1000,
           gather_ns / 1000, app_gbps
    printf "  (with the gather overlapped, as a pipelined receiver would: %.1f Gbit/s)\n",
           ovl_gbps
    printf "per MiB sent: %d devmem sends and notifications %.0f us (loopback: an upper bound, " \
           "not a limit below): %.1f Gbit/s a thread or more\n\n", sends, tx_ns / 1000, tx_gbps
    printf "%6s %6s %12s %9s  %-24s %12s %9s  %s\n", "Gbit/s", "flows", "reach Gbit/s",
           "of line", "limited by", "overlapped", "of line", "cores (softirq + RX rank)"
    nr = split(rates, R, ","); nf = split(flows, F, ",")
    for (i = 1; i <= nr; i++) {
        goodput = R[i] * payload / wire
        for (j = 1; j <= nf; j++) {
            nic = F[j] * q_gbps
            reach = goodput; why = "the line (headers)"
            if (nic < reach) { reach = nic; why = sprintf("%d softirq core(s)", F[j]) }
            ovl = reach
            if (app_gbps < reach) { reach = app_gbps; why = "the receiving rank" }
            if (ovl_gbps < ovl) { ovl = ovl_gbps }
            cores = sprintf("%d + %d", int(goodput / q_gbps + 0.999),
                            int(goodput / app_gbps + 0.999))
            printf "%6d %6d %12.1f %8.1f%%  %-24s %12.1f %8.1f%%  %s\n", R[i], F[j], reach,
                   100 * reach / R[i], why, ovl, 100 * ovl / R[i], cores
        }
    }
    printf "\n(flows: each on its own RX queue; cores: what the line rate needs at these costs)\n"
}'
