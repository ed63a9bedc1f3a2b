#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What receiving threads (btl_devmem_rx_threads) buy and cost, across two namespaced hosts
# over a veth pair, on the emulated device path: for each lane count and thread count,
#   overlap  how much of a transfer a receiving rank that computes outside MPI still gets
#            (bench/overlap_bench: 1 MiB and 16 MiB, 1 = all of it hidden behind the work);
#   bw       16 MiB bandwidth (bench/mpi_bench) while a computing application runs beside
#            it: K copies of bench/cpu_work, K = CPUs - 2 by default;
#   work     how much that application did meanwhile, as a share of what the same copies do
#            alone (measured in every repetition): 1.00 = the transfer cost it nothing.
# Repetitions interleave the variants; the summary gives medians and [min-max]. Not part of
# the test suite; never asserts a timing. Needs root (namespaces) and a build with
# `make install` done (DEVMEM_BUILD, default <repo>/build).
#
#   bench/rx_threads.sh [--lanes 1,4] [--threads 0,1,2] [--reps 3] [--workers K]
#                       [--secs S] [--out DIR]
set -u
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../test/lib/testlib.sh
. "$here/../test/lib/testlib.sh"

lanes_list=1,4 threads_list=0,1,2 reps=3 workers=$(($(nproc) - 2)) secs=2.5 out=
while [ $# -gt 0 ]; do
    case "$1" in
        --lanes) lanes_list=$2; shift ;;
        --threads) threads_list=$2; shift ;;
        --reps) reps=$2; shift ;;
        --workers) workers=$2; shift ;;
        --secs) secs=$2; shift ;;
        --out) out=$2; shift ;;
        -h | --help) sed -n '2,/^set -u/p' "$0" | sed -e '/SPDX-License-Identifier/d' -e 's/^# \{0,1\}//' -e '/^set -u/d'; exit 0 ;;
        *) echo "rx_threads.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
[ "$workers" -ge 1 ] || workers=1
out=${out:-$DEVMEM_SRC/bench/results/rxthreads-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" || exit 1
csv=$out/results.csv log=$out/log.txt
echo "lanes,threads,rep,metric,size,value" >"$csv"
for p in overlap_bench mpi_bench cpu_work; do
    [ -x "$DEVMEM_BUILD/bench/$p" ] || { echo "rx_threads.sh: $DEVMEM_BUILD/bench/$p not built" >&2; exit 1; }
done
OVB=$DEVMEM_BUILD/bench/overlap_bench MPIB=$DEVMEM_BUILD/bench/mpi_bench WORK=$DEVMEM_BUILD/bench/cpu_work

. "$DEVMEM_SRC/test/net/netns.sh"
netns_setup >>"$log"
echo "rx_threads: $(nproc) CPUs, $workers computing processes beside, lanes $lanes_list," \
    "threads $threads_list, $reps repetitions, $out" | tee -a "$log"

# work_run SECS: K copies of cpu_work at once; prints their summed rate
work_run() {
    local i pids=() f=$DEVMEM_TEST_TMP/work
    for i in $(seq "$workers"); do
        "$WORK" -t "$1" >"$f.$i" 2>&1 &
        pids+=($!)
    done
    wait "${pids[@]}"
    cat "$f".* | awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^rate=/) s += substr($i, 6) } END { printf "%.0f\n", s }'
    rm -f "$f".*
}

job_args() { # LANES THREADS
    # shellcheck disable=SC2054 # devmem,self is one word
    DEVMEM_MCA_ARGS=(--mca pml ob1 --mca btl devmem,self --mca btl_devmem_kernel emulated
        --mca btl_devmem_mode require --mca btl_devmem_devflows "$1"
        --mca btl_devmem_rx_threads "$2" --mca btl_devmem_stats 1)
}

for rep in $(seq "$reps"); do
    alone=$(work_run "$secs")
    echo "rx_threads: rep $rep: $workers computing processes alone: $alone steps/s" | tee -a "$log"
    echo "0,0,$rep,work_alone,0,$alone" >>"$csv"
    # every variant once per repetition, starting one further on each time
    variants=()
    for l in ${lanes_list//,/ }; do
        for t in ${threads_list//,/ }; do variants+=("$l $t"); done
    done
    n=${#variants[@]}
    for i in $(seq 0 $((n - 1))); do
        read -r l t <<<"${variants[$(((i + rep) % n))]}"
        job_args "$l" "$t"
        f=$DEVMEM_TEST_TMP/ovl.out
        DEVMEM_BTL_NAME=devmem netns_mpirun 300 1 1 "$OVB" -s 1m,16m -r 7 >"$f" 2>&1
        rc=$?
        cat "$f" >>"$log"
        [ "$rc" -eq 0 ] || echo "rx_threads: overlap lanes=$l threads=$t failed (exit $rc), see $log"
        awk -v pre="$l,$t,$rep" '$1 == "overlap" { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print pre ",overlap," $2 "," v["overlapped"]; print pre ",wait_usec," $2 "," v["wait_usec"]
            print pre ",plain_usec," $2 "," v["usec"] }' "$f" >>"$csv"

        # the bandwidth run and, once it has begun (its header line), the application beside it
        f=$DEVMEM_TEST_TMP/bw.out
        rm -f "$f"
        DEVMEM_BTL_NAME=devmem netns_mpirun 300 1 1 "$MPIB" -t bw -s 16m -x 50 -T "$(awk -v s="$secs" 'BEGIN { print s + 1.5 }')" >"$f" 2>&1 &
        job=$!
        for _ in $(seq 300); do
            grep -q '^# mpi_bench' "$f" 2>/dev/null && break
            sleep 0.05
        done
        beside=$(work_run "$secs")
        wait "$job"
        rc=$?
        cat "$f" >>"$log"
        [ "$rc" -eq 0 ] || echo "rx_threads: bw lanes=$l threads=$t failed (exit $rc), see $log"
        awk -v pre="$l,$t,$rep" '$1 == "bw" { for (i = 3; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
            print pre ",bw_MBps," $2 "," v["MBps"] }' "$f" >>"$csv"
        echo "$l,$t,$rep,work_share,0,$(awk -v a="$alone" -v b="$beside" 'BEGIN { printf "%.3f", (a > 0 ? b / a : 0) }')" >>"$csv"
        echo "rx_threads: rep $rep lanes=$l threads=$t: $(grep '^overlap' "$DEVMEM_TEST_TMP/ovl.out" | awk '{ printf "%s %s; ", $2, $6 }')bw $(awk '$1 == "bw" { print $4 }' "$f"), work beside $beside" | tee -a "$log"
    done
done

# medians and ranges per variant
{
    echo "# rx_threads.sh $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $workers computing processes, $reps repetitions"
    echo "# overlap: share of the transfer hidden behind the receiver's computing (1 = all);"
    echo "# work: what the computing processes did beside the 16 MiB bandwidth run, / alone"
    printf '%-6s %-8s %-18s %-18s %-22s %-18s\n' lanes threads "overlap 1MiB" "overlap 16MiB" "bw 16MiB MB/s" "work beside"
    awk -F, 'NR > 1 && $1 > 0 { k = $1 " " $2; key = k SUBSEP $4 SUBSEP $5; v[key] = v[key] " " $6; seen[k] = 1 }
        function stat(list,   a, n, i, j, t, m) {
            n = split(list, a, " ")
            if (n == 0) return "-"
            for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
            m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
            return sprintf("%.2f [%.2f-%.2f]", m, a[1], a[n])
        }
        END {
            for (k in seen) {
                split(k, lt, " ")
                printf "%-6s %-8s %-18s %-18s %-22s %-18s\n", lt[1], lt[2],
                    stat(v[k, "overlap", 1048576]), stat(v[k, "overlap", 16777216]),
                    stat(v[k, "bw_MBps", 16777216]), stat(v[k, "work_share", 0])
            }
        }' "$csv" | sort -n -k1,1 -k2,2
} | tee "$out/summary.txt"
