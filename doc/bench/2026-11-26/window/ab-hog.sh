#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# ab-hog.sh ROUNDS KIND SIZES HOGS VARIANT...: interleaved mpi_bench runs over a veth between
# two namespaces (or, with WHERE=lo, over loopback) while HOGS busy processes run, started
# and stopped by PID (HOGPIN=0,1: pinned to those CPUs). Ranks not bound (ns). Prints
# "round variant size usec MBps" per run and size.
# VARIANT: name=btl:ARGS, ARGS separated by ';', each an MCA "name value" or a "-x VAR=value":
#   "new=devmem:" "spin=devmem:btl_devmem_idle_yield_us -1" "tcp=tcp:"
#   "old=devmem:mca_base_component_path OTHER-BUILD/install/lib/openmpi:OMPI-PKGLIBDIR"
# Env: SCALE, LIMIT (mpi_bench -x, -T), YIELD (mpi_yield_when_idle), DEBUG=1 (output kept in
# $DEBUG_OUT), LOBIND (--bind-to for WHERE=lo), BIND (--bind-to for ns; core: the pinned setting),
# SHAPE=tbf (the veth shaped as bench/run.sh's tbf setting). Needs root (namespaces).
set -u
cd "$(dirname "$0")/../../../.."
export DEVMEM_BUILD=${DEVMEM_BUILD:-$PWD/build}
. test/lib/testlib.sh
. test/net/netns.sh
rounds=$1 kind=$2 sizes=$3 hogs=$4; shift 4
netns_setup >/dev/null
[ "${SHAPE:-}" = tbf ] && netns_shape root tbf rate 10gbit burst 4mb latency 10ms >/dev/null
pids=()
IFS=, read -r -a hogcpu <<<"${HOGPIN:-}"
for i in $(seq "$hogs"); do
  if [ -n "${hogcpu[$((i-1))]:-}" ]; then taskset -c "${hogcpu[$((i-1))]}" sh -c 'while :; do :; done' & else sh -c 'while :; do :; done' & fi
  pids+=($!); done
trap 'kill ${pids[*]} 2>/dev/null; netns_cleanup; devmem_testlib_cleanup' EXIT
MPIB=$DEVMEM_BUILD/bench/mpi_bench
for r in $(seq "$rounds"); do
  for v in "$@"; do
    name=${v%%=*}; rest=${v#*=}; btl=${rest%%:*}; extra=${rest#*:}
    DEVMEM_MCA_ARGS=(--mca pml ob1 --mca btl "$btl,self" --mca "btl_${btl}_if_include" "$NETNS_LINK")
    IFS=';' read -r -a kv <<<"$extra"
    for p in "${kv[@]}"; do case "$p" in "") ;; -x*) DEVMEM_MCA_ARGS+=(${p});; *) DEVMEM_MCA_ARGS+=(--mca ${p});; esac; done
    if [ "${WHERE:-ns}" = lo ]; then
      DEVMEM_MCA_ARGS=("${DEVMEM_MCA_ARGS[@]/$NETNS_LINK/lo}")
      out=$(timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 ${LOBIND:+--bind-to $LOBIND} --mca mpi_yield_when_idle ${YIELD:-0} "${DEVMEM_MCA_ARGS[@]}" "$MPIB" -t "$kind" -s "$sizes" -x ${SCALE:-1} -T ${LIMIT:-1} 2>&1)
    else
    out=$(DEVMEM_BTL_NAME= NETNS_YIELD=${YIELD:-0} NETNS_BIND=${BIND:-none} netns_mpirun 300 1 1 "$MPIB" -t "$kind" -s "$sizes" -x ${SCALE:-1} -T ${LIMIT:-1} 2>&1); fi; [ -n "${DEBUG:-}" ] && echo "$out" | grep -v "^#" >> ${DEBUG_OUT:-/tmp/ab-hog-debug.out}
    echo "$out" | awk -v n="$name" -v r="$r" '$1 ~ /^(lat|bw|bibw|rate)$/ {split($3,u,"="); split($4,b,"="); print r, n, $2, u[2], b[2]}'
  done
done
