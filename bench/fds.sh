#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Descriptors a rank holds, per job size: the most open at once in each rank of a run of the
# collectives test program (every byte checked), sampled from /proc every 20 ms, for
# btl/devmem (emulated device path, so that lanes open) and btl/tcp side by side. Not part of
# the test suite; prints a table, asserts nothing.
#
#   bench/fds.sh [--build DIR] [--ranks "2 4 8 16"] [--sizes "4k 1M"] [--iters N] [--label NAME]
#
# A size of 4k moves eager messages only (no get, so no lane need open); 1M moves every
# block by get (lanes toward every peer). --build: a configured build tree with the
# component installed (default: build); its test/mpi/collectives runs the job. One host,
# loopback, ranks oversubscribed.
set -u
build=build
ranks="2 4 8 16"
sizes="4k 1M"
label=devmem
iters=10
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift ;;
    --ranks) ranks=$2; shift ;;
    --sizes) sizes=$2; shift ;;
    --label) label=$2; shift ;;
    --iters) iters=$2; shift ;;
    *) echo "usage: $0 [--build DIR] [--ranks LIST] [--sizes LIST] [--iters N] [--label NAME]" >&2; exit 2 ;;
    esac
    shift
done
prog=$build/test/mpi/collectives
[ -x "$prog" ] || { echo "no $prog (make -C $build check TESTS=)" >&2; exit 1; }
prefix=$(sed -n 's/^prefix = //p' "$build/Makefile")
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_mca_base_component_path="$prefix/lib/openmpi:$(ompi_info --path pkglibdir --parsable 2>/dev/null | sed -n 's/^path:pkglibdir://p')"

# the most descriptors any process running prog held, per pid, while it ran
sample() {
    local out=$1 pid n
    declare -A most=()
    while [ -e "$out.running" ]; do
        for pid in $(pgrep -f "^$prog"); do
            n=$(ls "/proc/$pid/fd" 2>/dev/null | wc -l)
            [ "${most[$pid]:-0}" -lt "$n" ] && most[$pid]=$n
        done
        sleep 0.02
    done
    for pid in "${!most[@]}"; do echo "${most[$pid]}"; done | sort -n >"$out"
}

printf '%-8s %-6s %5s  %s\n' btl size ranks "descriptors per rank (min / median / max)"
for np in $ranks; do
    for size in $sizes; do
        for btl in devmem tcp; do
            args=(--mca btl "$btl,self")
            [ "$btl" = devmem ] && args+=(--mca btl_devmem_kernel emulated --mca btl_devmem_if_include lo)
            [ "$btl" = tcp ] && args+=(--mca btl_tcp_if_include lo --mca mpi_yield_when_idle 1)
            tmp=$(mktemp)
            touch "$tmp.running"
            sample "$tmp" &
            sampler=$!
            if ! timeout 300 mpirun --oversubscribe -np "$np" "${args[@]}" "$prog" -m "$size" -i "$iters" \
                >"$tmp.job" 2>&1; then
                echo "$btl np=$np -m $size failed:" >&2
                tail -5 "$tmp.job" >&2
            fi
            rm -f "$tmp.running"
            wait "$sampler"
            name=$([ "$btl" = devmem ] && echo "$label" || echo tcp)
            awk -v b="$name" -v s="$size" -v np="$np" '{ v[NR] = $1 }
                END { if (NR) printf "%-8s %-6s %5d  %d / %d / %d\n", b, s, np, v[1], v[int((NR + 1) / 2)], v[NR] }' "$tmp"
            rm -f "$tmp" "$tmp.job"
        done
    done
done
