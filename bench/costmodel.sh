#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The device path's cost model (doc/cost-model.md): from per-call costs measured on this
# machine (bench/call_costs) and the calls per MiB the receive path makes (a lanes run of
# bench/run.sh, its calls.csv), predict for NICs of the given line rates how much of the line
# rate 1-8 device flows (each on its own RX queue) received by 1-4 receiving threads can
# reach, what limits them, with the gathers waited for and pipelined, and how many cores it
# takes. Never asserts anything; prints its inputs with the table.
#
#   bench/costmodel.sh [--costs FILE] [--calls calls.csv] [--rates 200,400] [--flows 1,2,4,8]
#                      [--threads 1,2,4] [--mtu 4096] [--rx-buf 4096] [--softirq-pkt-ns 700]
#                      [--gather-flush-us 21] [--gather-cpu-us 6.5] [--tx-send-kib 64]
#                      [--pool gpu|host]
#
#   --costs     call_costs' line (default: run $DEVMEM_BUILD/bench/call_costs -r 5 now)
#   --calls     calls.csv of bench/run.sh with an -dfN setting: receive calls, DONTNEED calls
#               and gathers per MiB on the device path, bandwidth runs, most lanes (default:
#               5.27, 1.75 and 1.74, this VM's ns-df4 figures of 2026-11-27, batched gathers)
#   --threads   receiving threads (btl_devmem_rx_threads; a flow is one thread's, so at most
#               as many threads as flows take part)
#   --mtu       the NIC's MTU: the payload per packet follows
#   --rx-buf    bytes of an RX buffer: a packet's payload takes a token per buffer it spans.
#               4096: the devmem memory provider takes page-size buffers only up to Linux 6.18
#               (mp_dmabuf_devmem_init refuses higher orders), whatever the NIC's rx-buf-len
#   --softirq-pkt-ns  CPU of one queue's softirq per received packet (NAPI, GRO, TCP, header
#               split): not measurable without a devmem NIC; 700 ns is about 1.4 Mpps a core
#   --gather-flush-us  GPU pool: the thread's wait per gather (launch and synchronise),
#               gather depth 1: 21 us for a batch of about 512 KiB (a chunk), between
#               bench/gather_bench's 256 KiB and 1 MiB receive rows on an H200 (2026-11-27)
#   --gather-cpu-us  GPU pool: what a gather still costs the thread when gathers are
#               pipelined (launch, fence; the piece array read from mapped host memory),
#               4 in flight: 6.5 us a 512 KiB batch of packets, gather_bench's launch-way
#               rows on an H200 (5.9 and 7.0 in two runs, 2026-11-27)
#   --tx-send-kib  bytes one devmem sendmsg takes (what the socket buffer admits)
#   --pool      gpu (the gather runs on the GPU, the CPU waits) or host (the CPU copies)
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=${DEVMEM_BUILD:-$src/build}
costs= calls= rates=200,400 flows=1,2,4,8 threads=1,2,4 mtu=4096 rx_buf=4096 pkt_ns=700 flush_us=21 cpu_us=6.5 tx_kib=64 pool=gpu
while [ $# -gt 0 ]; do
    case "$1" in
        --costs) costs=$2; shift ;;
        --calls) calls=$2; shift ;;
        --rates) rates=$2; shift ;;
        --flows) flows=$2; shift ;;
        --threads) threads=$2; shift ;;
        --mtu) mtu=$2; shift ;;
        --rx-buf) rx_buf=$2; shift ;;
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
recv_per_mib=5.27 dn_per_mib=1.75 gathers_per_mib=1.74 calls_from="default (ns-df4, 2026-11-27)"
if [ -n "$calls" ]; then
    # device-path bandwidth rows of the setting with the most lanes: medians of the reps (a
    # run from before batched gathers, no gather column, gathered once per receive)
    read -r recv_per_mib dn_per_mib gathers_per_mib calls_from < <(awk -F, '
        NR > 1 && $3 == "bw" && $8 > $9 && $1 ~ /-df[0-9]+$/ {
            n = $1; sub(/.*-df/, "", n); n += 0
            if (n < best) next
            if (n > best) { best = n; k = 0; set = $1 }
            mib = ($8 + $9) / 1048576; r[++k] = $5 / mib; d[k] = $6 / mib
            g[k] = ($10 == "" || $10 == 0 ? $5 : $10) / mib
        }
        function med(a, n,    i, j, t) {
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        }
        END { if (k) printf "%.2f %.2f %.2f %s\n", med(r, k), med(d, k), med(g, k), set }' "$calls")
    [ -n "$recv_per_mib" ] || { echo "costmodel.sh: no device-path bandwidth rows in $calls" >&2; exit 1; }
fi

echo "$line" | awk -v rates="$rates" -v flows="$flows" -v threads="$threads" -v mtu="$mtu" -v rx_buf="$rx_buf" \
    -v pkt_ns="$pkt_ns" -v flush_us="$flush_us" -v cpu_us="$cpu_us" -v tx_kib="$tx_kib" -v pool="$pool" \
    -v rpm="$recv_per_mib" -v dpm="$dn_per_mib" -v gpm="$gathers_per_mib" -v from="$calls_from" '
{
    for (i = 2; i <= NF; i++) { split($i, kv, "="); c[kv[1]] = kv[2] + 0 }
    MiB = 1048576
    payload = mtu - 52                  # IPv4 20 + TCP 20 + timestamps 12
    wire = mtu + 38                     # Ethernet header, FCS, preamble, gap
    # header split: a packet'"'"'s payload fills RX buffers from the start of one, a dmabuf frag
    # (a token) each
    tokens = MiB / payload * int((payload + rx_buf - 1) / rx_buf)
    q_gbps = payload * 8 / pkt_ns       # one queue: one softirq core
    # a receiving thread, per MiB: its receives (syscall and a cmsg with a token per frag:
    # taken as twice the kernel'"'"'s token lookup), its DONTNEED calls and tokens, its gathers
    frag_ns = 2 * c["dontneed_token_ns"]
    rx_ns = rpm * c["recv_call_ns"] + tokens * frag_ns + dpm * c["dontneed_call_ns"] \
            + tokens * c["dontneed_token_ns"]
    gather_ns = pool == "gpu" ? gpm * flush_us * 1000 : MiB * c["gather_byte_ns"]
    thr_gbps = MiB * 8 / (rx_ns + gather_ns)
    # gathers pipelined: the GPU gathers one batch while the thread takes the next; launching
    # it still costs the thread its share
    ovl_gbps = MiB * 8 / (rx_ns + (pool == "gpu" ? gpm * cpu_us * 1000 : gather_ns))
    # the sending rank: devmem sendmsg calls and one zerocopy notification read per send.
    # Measured on loopback, where a send also runs the receiver'"'"'s TCP processing and copies:
    # an upper bound, reported but not taken as a limit
    sends = 1024 / tx_kib
    tx_ns = sends * (c["zc_send_ns"] + c["zc_notif_ns"])
    tx_gbps = MiB * 8 / tx_ns

    printf "inputs (measured here: %s)\n", $0
    printf "  per MiB: recv calls %.2f, DONTNEED calls %.2f, gathers %.2f (%s); MTU %d: %d " \
           "payload bytes a packet in %d-byte RX buffers, %.0f tokens/MiB\n", rpm, dpm, gpm, from, mtu, payload, rx_buf, tokens
    printf "  assumed: softirq %d ns a packet (one queue: %.1f Gbit/s); %s pool%s; %d KiB a " \
           "devmem send\n", pkt_ns, q_gbps, pool,
           pool == "gpu" ? sprintf(", gather %g us waited for (%g us pipelined)", flush_us,
                                   cpu_us) : "", tx_kib
    printf "per MiB received: receive calls %.0f us, tokens in cmsgs %.0f us, DONTNEED %.0f " \
           "us, gathers %.0f us (%.0f pipelined): one receiving thread takes %.1f Gbit/s, " \
           "%.1f pipelined\n",
           rpm * c["recv_call_ns"] / 1000, tokens * frag_ns / 1000,
           (dpm * c["dontneed_call_ns"] + tokens * c["dontneed_token_ns"]) / 1000,
           gather_ns / 1000, (pool == "gpu" ? gpm * cpu_us : gather_ns / 1000), thr_gbps, ovl_gbps
    printf "per MiB sent: %d devmem sends and notifications %.0f us (loopback: an upper bound, " \
           "not a limit below): %.1f Gbit/s a thread or more\n\n", sends, tx_ns / 1000, tx_gbps
    printf "%6s %5s %7s %12s %8s  %-26s %10s %8s  %s\n", "Gbit/s", "flows", "threads",
           "reach Gbit/s", "of line", "limited by", "pipelined", "of line",
           "cores for the line (softirq + threads, pipelined)"
    nr = split(rates, R, ","); nf = split(flows, F, ","); nt = split(threads, T, ",")
    for (i = 1; i <= nr; i++) {
        goodput = R[i] * payload / wire
        for (j = 1; j <= nf; j++) {
            for (t = 1; t <= nt; t++) {
                busy = T[t] < F[j] ? T[t] : F[j] # each flow is served by one thread
                nic = F[j] * q_gbps
                reach = goodput; why = "the line (headers)"
                if (nic < reach) { reach = nic; why = sprintf("%d softirq core(s)", F[j]) }
                ovl = reach
                if (busy * thr_gbps < reach) {
                    reach = busy * thr_gbps; why = sprintf("%d receiving thread(s)", busy)
                }
                if (busy * ovl_gbps < ovl) { ovl = busy * ovl_gbps }
                cores = sprintf("%d + %d", int(goodput / q_gbps + 0.999),
                                int(goodput / ovl_gbps + 0.999))
                printf "%6d %5d %7d %12.1f %7.1f%%  %-26s %10.1f %7.1f%%  %s\n", R[i], F[j],
                       T[t], reach, 100 * reach / R[i], why, ovl, 100 * ovl / R[i], cores
            }
        }
        # where the assumed softirq cost decides the pipelined target at 4 flows
        need = (R[i] == 200 ? 0.95 : 0.90) * R[i]
        printf "  target at %d Gbit/s: %.0f%% of the line with 4 flows needs a softirq of at most %.0f ns " \
               "a packet (assumed %d) and a thread of %.1f Gbit/s pipelined with 2 threads " \
               "(%.1f here)\n", R[i], 100 * need / R[i], 4 * payload * 8 / need, pkt_ns,
               need / 2, ovl_gbps
    }
    printf "\n(flows: each on its own RX queue; threads: at most one per flow takes part; " \
           "cores: what the line rate needs at these costs)\n"
}'
